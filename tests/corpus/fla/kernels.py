"""flash-linear-attention's Triton kernels, as released: read from PyPI's fla-core 0.6.0 wheel at
run time (``corpus._upstream``; nothing of flash-linear-attention's code is in this repository).

Upstream: https://github.com/fla-org/flash-linear-attention, released as PyPI fla-core==0.6.0 (the
kernels and host code of ``flash-linear-attention``, package ``fla``; the pin and the wheel's
sha256: ``corpus._upstream.PINS``). Licence: MIT (LICENSE next to this file, from the wheel).
Each name below is the ``@triton.jit`` kernel of that name in ``fla/<module>.py``, with the
``triton.autotune`` / ``triton.heuristics`` / ``fla_cache_autotune`` wrapping it and what it uses,
run as released (the names the modules import from ``fla.utils`` / ``fla.ops.utils``:
``corpus._upstream.SUPPLIED``). Without the wheel (no cache, no network), importing this module
raises ``corpus._upstream.UpstreamUnavailable`` and the fla cases skip with its reason.
"""

from __future__ import annotations

from .._upstream import load

DIST = "fla-core"

KERNELS = {
    "fla/modules/norm/l2norm.py": ["l2norm_fwd_kernel", "l2norm_bwd_kernel",
                                   "l2norm_fwd_kernel_row", "l2norm_bwd_kernel_row"],
    "fla/modules/norm/layernorm.py": ["layer_norm_fwd_kernel", "layer_norm_bwd_kernel",
                                      "layer_norm_fwd_kernel_row", "layer_norm_bwd_kernel_row"],
    "fla/modules/norm/fused_norm_gate.py": ["layer_norm_gated_fwd_kernel", "layer_norm_gated_bwd_kernel",
                                            "layer_norm_gated_fwd_kernel_row",
                                            "layer_norm_gated_bwd_kernel_row"],
    "fla/modules/activations/ops.py": ["sigmoid_fwd_kernel", "sigmoid_bwd_kernel", "swish_fwd_kernel",
                                       "swish_bwd_kernel", "logsigmoid_fwd_kernel", "logsigmoid_bwd_kernel"],
    "fla/ops/utils/cumsum.py": ["chunk_local_cumsum_scalar_kernel", "chunk_local_cumsum_vector_kernel"],
    "fla/ops/utils/logsumexp.py": ["logsumexp_fwd_kernel"],
    "fla/ops/utils/softmax.py": ["softmax_fwd_kernel", "softmax_bwd_kernel"],
    # simple GLA's chunked forward and backward (fla/ops/simple_gla/chunk.py's host code launches
    # these, and chunk_local_cumsum's, through fla.ops.common)
    "fla/ops/common/chunk_h.py": ["chunk_fwd_kernel_h", "chunk_bwd_kernel_dh"],
    "fla/ops/common/chunk_o.py": ["chunk_fwd_kernel_o", "chunk_bwd_kernel_dqkwg", "chunk_bwd_kernel_dv",
                                  "chunk_bwd_kernel_dv_local"],
    "fla/modules/fused_cross_entropy/ops.py": ["cross_entropy_fwd_kernel", "cross_entropy_bwd_kernel"],
    "fla/modules/token_shift.py": ["token_shift_fwd_kernel_short", "token_shift_fwd_kernel_long",
                                   "token_shift_bwd_kernel_short", "token_shift_bwd_kernel_long"],
    # DeltaNet's chunked form (fla/ops/delta_rule/chunk.py): the WY representation, the blocked
    # triangular inverse and the delta-rule state recurrence
    "fla/ops/common/chunk_scaled_dot_kkt.py": ["chunk_scaled_dot_kkt_fwd_kernel"],
    "fla/ops/utils/solve_tril.py": ["solve_tril_16x16_kernel", "merge_16x16_to_32x32_inverse_kernel"],
    "fla/ops/delta_rule/wy_fast.py": ["recompute_w_u_fwd_kernel", "prepare_wy_repr_bwd_kernel"],
    "fla/ops/common/chunk_delta_h.py": ["chunk_gated_delta_rule_fwd_kernel_h_blockdim64",
                                        "chunk_gated_delta_rule_bwd_kernel_dhu_blockdim64"],
    # GLA's chunked form (fla/ops/gla/chunk.py): the intra-chunk attention with per-key gates
    "fla/ops/gla/chunk.py": ["chunk_gla_fwd_A_kernel_intra_sub_inter", "chunk_gla_fwd_A_kernel_intra_sub_intra",
                             "chunk_gla_fwd_kernel_o", "chunk_gla_bwd_kernel_intra", "chunk_gla_bwd_kernel_dA",
                             "chunk_gla_bwd_kernel_dv", "chunk_gla_bwd_kernel_inter"],
}

globals().update(load(DIST, KERNELS))
