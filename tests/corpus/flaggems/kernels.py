"""FlagGems' Triton kernels, as released: read from PyPI's flag-gems 5.0.2 wheel at run time
(``corpus._upstream``; nothing of FlagGems' code is in this repository).

Upstream: https://github.com/FlagOpen/FlagGems, released as PyPI flag-gems==5.0.2 (the pin and the
wheel's sha256: ``corpus._upstream.PINS``). Licence: Apache License 2.0 (LICENSE next to this
file). Each name below is the kernel of that name in ``flag_gems/ops/<module>.py``, decorators
included (``libentry``, ``triton.heuristics`` / ``triton.autotune`` with FlagGems' runtime
configs), with the helpers it uses, run as released. What the loader supplies for FlagGems'
``runtime``, ``libentry``, ``tle`` and ``tl_extra_shim``: ``corpus._upstream.SUPPLIED`` (and
flaggems/runtime.py). Group norm's kernels: groupnorm_kernels.py (its ``weight_bias_backward_kernel``
has the name of layer norm's). Without the wheel (no cache, no network), importing this module
raises ``corpus._upstream.UpstreamUnavailable`` and the FlagGems cases skip with its reason.
"""

from __future__ import annotations

from .._upstream import load

DIST = "flag-gems"

KERNELS = {
    "flag_gems/ops/rms_norm.py": ["rms_norm_kernel", "rms_norm_grad_dx_kernel", "rms_norm_grad_dw_kernel"],
    "flag_gems/ops/softmax.py": ["softmax_kernel_non_inner", "softmax_kernel_inner",
                                 "softmax_backward_kernel_non_inner", "softmax_backward_kernel_inner"],
    "flag_gems/ops/log_softmax.py": ["log_softmax_kernel", "log_softmax_backward_kernel"],
    "flag_gems/ops/layernorm.py": ["layer_norm_persistent_kernel", "layer_norm_persistent_kernel_multiline",
                                   "layer_norm_loop_kernel", "layer_norm_backward_kernel",
                                   "weight_bias_backward_kernel"],
}

globals().update(load(DIST, KERNELS))
