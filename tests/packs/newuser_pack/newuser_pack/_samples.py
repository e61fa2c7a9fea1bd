"""Sample inputs of the pack: op name -> function(device) -> list of SampleInput."""

from __future__ import annotations

SAMPLES: dict = {}


def samples(name):
    def inner(fn):
        SAMPLES[name] = fn
        return fn
    return inner


def samples_for(name, device):
    fn = SAMPLES.get(name)
    if fn is None:
        return None
    import tensorplay
    tensorplay.manual_seed(1234)
    return fn(device)
