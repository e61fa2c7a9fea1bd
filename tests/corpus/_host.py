"""Host-side helpers shared by the corpus's host code (ours, not upstream).

Every kernel library sizes its persistent backward grids with
``torch.cuda.get_device_properties(dev).multi_processor_count``; the host code asks
``tensorplay.cuda`` the same question, in the same words (cached per device there, as torch
caches it). On cpu (the interpreter) the libraries' own fallback is used: one program.
"""

from __future__ import annotations


def sm_count(device) -> int:
    """``multi_processor_count`` of a cuda device; 1 elsewhere (what the libraries use off-GPU)."""
    if device.type == "cuda":
        import tensorplay
        # by index: the same host code runs on torch's side of benchmarks/bench_corpus.py,
        # whose device is a torch.device (which tensorplay.device does not take)
        idx = device.index
        return tensorplay.cuda.get_device_properties(
            tensorplay.cuda.current_device() if idx is None else idx).multi_processor_count
    return 1


def current_sm_count() -> int:
    """``multi_processor_count`` of the current cuda device, or 1 with no usable cuda device
    (FlagGems' heuristics ask torch for the current device's; on cpu the interpreter runs).
    Upstream's words: ``torch.cuda.get_device_properties(torch.cuda.current_device())``."""
    import tensorplay
    if not tensorplay.cuda.is_available():
        return 1
    return tensorplay.cuda.get_device_properties(
        tensorplay.cuda.current_device()).multi_processor_count


class Ctx:
    """The ``ctx`` a ``torch.autograd.Function``'s forward / backward is handed, for calling a
    library's released ``Function.forward`` / ``backward`` inside an op body (Unsloth's
    ``Fast_*``, fla's ``*Function``): ``save_for_backward`` records the tensors,
    ``saved_tensors`` hands them back, other attributes are plain."""

    def __init__(self, saved=(), **attrs):
        self.saved_tensors = tuple(saved)
        self.__dict__.update(attrs)

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors
