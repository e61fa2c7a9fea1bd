"""Liger-Kernel's Triton kernels, as released: read from PyPI's liger-kernel 0.8.5 wheel at run time
(``corpus._upstream``; nothing of Liger-Kernel's code is in this repository).

Upstream: https://github.com/linkedin/Liger-Kernel, released as PyPI liger-kernel==0.8.5
(the pin and the wheel's sha256: ``corpus._upstream.PINS``). Licence: BSD 2-Clause (LICENSE
next to this file). Each name below is the ``@triton.jit`` function or constant of that name in
``liger_kernel/ops/<module>.py``, with the helpers, constants and libdevice imports it uses, run
as released (what the loader leaves out or supplies: ``corpus._upstream.DROPPED_IMPORTS`` and
``SUPPLIED``). When the wheel can be had neither from the cache nor from PyPI, importing this
module raises ``corpus._upstream.UpstreamUnavailable`` and the Liger cases skip with its reason.
"""

from __future__ import annotations

from .._upstream import load

DIST = "liger-kernel"

KERNELS = {
    "liger_kernel/ops/rms_norm.py": ["_CASTING_MODE_NONE", "_CASTING_MODE_LLAMA", "_CASTING_MODE_GEMMA",
                                     "_rms_norm_forward_kernel", "_rms_norm_backward_kernel"],
    "liger_kernel/ops/layer_norm.py": ["_layer_norm_forward_kernel", "_layer_norm_backward_kernel"],
    "liger_kernel/ops/swiglu.py": ["silu", "_swiglu_forward_kernel", "_swiglu_backward_kernel"],
    "liger_kernel/ops/geglu.py": ["_geglu_tanh_forward_kernel", "_geglu_tanh_backward_kernel"],
    "liger_kernel/ops/relu_squared.py": ["_relu_squared_forward_kernel", "_relu_squared_backward_kernel"],
    "liger_kernel/ops/softmax.py": ["_softmax_single_block_forward_kernel", "_softmax_multi_block_forward_kernel",
                                    "_softmax_single_block_backward_kernel", "_softmax_multi_block_backward_kernel"],
    "liger_kernel/ops/rope.py": ["_triton_rope"],
    "liger_kernel/ops/kl_div.py": ["_REDUCTION_MODE_NONE", "_REDUCTION_MODE_SUM", "_REDUCTION_MODE_MEAN",
                                   "_REDUCTION_MODE_BATCHMEAN", "_kldiv_kernel_forward", "_kldiv_kernel_backward"],
    "liger_kernel/ops/jsd.py": ["_jsd_kernel"],
    # tvd.py's own _REDUCTION_MODE_* constants (the same values as kl_div.py's) stay in its namespace
    "liger_kernel/ops/tvd.py": ["_tv_distance_kernel"],
    "liger_kernel/ops/dyt.py": ["_dyt_fwd_kernel", "_dyt_bwd_kernel"],
    "liger_kernel/ops/cross_entropy.py": ["liger_cross_entropy_kernel"],
    "liger_kernel/ops/utils.py": ["element_mul_kernel"],
    "liger_kernel/ops/sparsemax.py": ["_sparsemax_forward_kernel", "_sparsemax_backward_kernel"],
    "liger_kernel/ops/poly_norm.py": ["_poly_norm_forward_kernel", "_poly_norm_backward_kernel"],
    "liger_kernel/ops/fused_add_rms_norm.py": ["_fused_add_rms_norm_forward_kernel",
                                               "_fused_add_rms_norm_backward_kernel"],
    "liger_kernel/ops/group_norm.py": ["_group_norm_forward_kernel", "_group_norm_backward_kernel"],
    "liger_kernel/ops/qwen2vl_mrope.py": ["_triton_qwen2vl_mrope"],
}

globals().update(load(DIST, KERNELS))
