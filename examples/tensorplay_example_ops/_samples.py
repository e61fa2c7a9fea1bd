"""The pack's sample-input registry: op name -> functions ``(device) -> [SampleInput]``.

Every module of the pack (``ops``, and the optional ``cuda_ops`` / ``triton_ops``) adds its
samples with ``@register_samples("example::op")``; the plugin's ``tensorplay_sample_inputs`` hook
answers from here. Several providers may serve one op (e.g. extra shapes for a CUDA kernel); a
provider returns an empty list for a device it does not want to be checked on.
"""

from __future__ import annotations

import zlib

_PROVIDERS: dict[str, list] = {}


def register_samples(qualname: str):
    """Decorator: ``fn(device) -> list[SampleInput]`` provides sample inputs for ``qualname``
    (``"example::op"``) on ``device`` (a ``tensorplay.device``). Returns ``fn`` unchanged."""
    if "::" not in qualname:
        raise ValueError(f"register_samples({qualname!r}): expected a qualified name 'ns::op'")

    def inner(fn):
        if not callable(fn):
            raise TypeError(f"register_samples({qualname!r}): expected a function, got {fn!r}")
        _PROVIDERS.setdefault(qualname, []).append(fn)
        return fn
    return inner


def provided_ops() -> list[str]:
    """Names of the ops that have at least one sample provider."""
    return sorted(_PROVIDERS)


def samples_for(qualname: str, device) -> list | None:
    """All samples for ``qualname`` on ``device``, or ``None`` when the pack has no provider for
    it (so other plugins' answers stand alone).

    Re-seeds tensorplay's global generator with a seed derived from the op name before calling
    the providers, so ``tensorplay check`` sees the same inputs on every run.
    """
    providers = _PROVIDERS.get(qualname)
    if not providers:
        return None
    import tensorplay
    tensorplay.manual_seed(zlib.crc32(qualname.encode()) & 0x7FFFFFFF)
    out = []
    for fn in providers:
        out.extend(fn(device) or ())
    return out
