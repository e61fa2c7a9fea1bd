"""Unsloth's Triton kernels, as released: read from PyPI's unsloth 2026.8.19 wheel at run time
(``corpus._upstream``; nothing of Unsloth's code is in this repository).

Upstream: https://github.com/unslothai/unsloth, released as PyPI unsloth==2026.8.19 (the pin and
the wheel's sha256: ``corpus._upstream.PINS``; its unsloth/kernels are those of commit
015bdef0d94a, which ops.py's host code follows). Licence: Apache License 2.0 (LICENSE next to
this file). Each name below is the kernel or constant of that name in
``unsloth/kernels/<module>.py``, with the ``triton.jit`` / ``triton.heuristics`` wrapping the module
applies to it and what it uses, run as released (``triton_tanh`` / ``triton_cast``, which the
modules import from ``.utils``: ``corpus._upstream.SUPPLIED``). unsloth/kernels/rope_embedding.py
is LGPL-3.0: not used. Without the wheel (no cache, no network), importing this module raises
``corpus._upstream.UpstreamUnavailable`` and the Unsloth cases skip with its reason.
"""

from __future__ import annotations

from .._upstream import load

DIST = "unsloth"

KERNELS = {
    "unsloth/kernels/rms_layernorm.py": ["_rms_layernorm_forward", "_rms_layernorm_backward",
                                         "_gemma_rms_layernorm_forward"],
    "unsloth/kernels/layernorm.py": ["layernorm_forward", "layernorm_backward"],
    "unsloth/kernels/swiglu.py": ["BLOCK_SIZE", "INT32_SAFETY_BUFFER", "_fg_kernel", "_DWf_DW_dfg_kernel"],
    "unsloth/kernels/geglu.py": ["_exact_forward_kernel", "_exact_backward_kernel",
                                 "_approx_forward_kernel", "_approx_backward_kernel"],
    "unsloth/kernels/cross_entropy_loss.py": ["_cross_entropy_forward", "_cross_entropy_backward"],
}

globals().update(load(DIST, KERNELS))
