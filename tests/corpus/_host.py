"""Host-side helpers shared by the corpus's host code (ours, not upstream).

Every kernel library sizes its persistent backward grids with
``torch.cuda.get_device_properties(dev).multi_processor_count``; tensorplay has no ``tensorplay.cuda``
yet (issue 26 section 4), so the host code asks Triton's driver, cached per device as torch caches
it. On cpu (the interpreter) the libraries' own fallback is used: one program.
"""

from __future__ import annotations

import functools


@functools.cache
def _cuda_sm_count(index: int) -> int:
    import triton
    props = triton.runtime.driver.active.utils.get_device_properties(index)
    return int(props["multiprocessor_count"])


def sm_count(device) -> int:
    """``multi_processor_count`` of a cuda device; 1 elsewhere (what the libraries use off-GPU)."""
    if device.type == "cuda":
        return _cuda_sm_count(device.index or 0)
    return 1


def current_sm_count() -> int:
    """``multi_processor_count`` of the current cuda device, or 1 with no usable cuda device
    (FlagGems' heuristics ask torch for the current device's; on cpu the interpreter runs)."""
    import tensorplay
    ok, _ = tensorplay.plugins.device_status("cuda")
    return _cuda_sm_count(0) if ok else 1
