"""flash-linear-attention corpus cases: sample inputs and float64 NumPy references (ours).

:data:`CASES` are the ``triton_op``s of ops.py (forward and gradient checks, ``opcheck``);
:data:`FUNCTION_CASES` call the released ``autograd.Function``s themselves (``XFunction.apply``,
as fla's ``l2norm`` / ``rms_norm`` / ``swish`` ... do), checked by ``corpus.check.check_function``
and ``check_function_compiled`` as attorch's are. Sizes are small (the interpreter runs every
program); the feature widths cover both of fla's kernel shapes where the host code picks by width
(the blocked kernel for D <= 512, the row kernel above).
"""

from __future__ import annotations

import numpy as np

from .. import gaps
from ..cases import Case
from . import ops, runtime

# fla's own refusal on this machine (runtime.GATED_BWD_REFUSED): the gated simple GLA backward
_GATED_REFUSED = ("chunk_bwd_dqkwg with a gate on a Hopper GPU and Triton >= 3.4.0, < 3.7.1 (fla's #640)"
                  if runtime.GATED_BWD_REFUSED else None)

_f32 = np.float32


def _x(r, *shape):
    return r.standard_normal(shape).astype(_f32)


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def _l2_ref(x, eps=1e-6, *_):
    rstd = 1 / np.sqrt((x * x).sum(-1, keepdims=True) + eps)
    return (x * rstd, rstd[..., 0])


def _norm(x, eps, rms, groups=1):
    xs = x.reshape(*x.shape[:-1], groups, x.shape[-1] // groups)
    mean = 0.0 if rms else xs.mean(-1, keepdims=True)
    xc = xs - mean
    rstd = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + eps)
    return (xc * rstd).reshape(x.shape)


def _ln_ref(x, w, b, eps):
    return (_norm(x, eps, False) * w + b,)


def _rms_res_ref(x, w, res, eps):
    s = x + res
    return (_norm(s, eps, True) * w, s)


def _act(g, activation):
    return g * _sigmoid(g) if activation in ("swish", "silu") else _sigmoid(g)


def _gated_ref(x, g, w, b, activation, eps):
    return (_norm(x, eps, False) * w + b) * _act(g, activation),


def _logsigmoid(x, t):
    return (np.minimum(0, x) - np.log1p(np.exp(-np.abs(x)))) / t


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _lse_ref(x, scale=None):
    z = x * (1.0 if scale is None else scale)
    m = z.max(-1, keepdims=True)
    return ((m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[..., 0],)


def _cumsum_ref(g, chunk, reverse=False, scale=None):
    out = np.zeros_like(g)
    for t0 in range(0, g.shape[1], chunk):
        c = g[:, t0:t0 + chunk]
        out[:, t0:t0 + chunk] = (np.flip(np.cumsum(np.flip(c, 1), 1), 1) if reverse
                                 else np.cumsum(c, 1))
    return (out * (1.0 if scale is None else scale),)


def _w(r, d):
    return r.random(d).astype(_f32) + 0.5


CASES = [
    Case("fla.l2norm", ops.l2norm, lambda r, s: (_x(r, 2, 3 * s, 24 * s), 1e-6), _l2_ref),
    # D > 512: the row kernels (one program per row)
    Case("fla.l2norm_wide", ops.l2norm, lambda r, s: (_x(r, 3 * s, 600 * s), 1e-6), _l2_ref, atol=2e-6),
    Case("fla.layer_norm", ops.layer_norm,
         lambda r, s: (_x(r, 2, 3 * s, 40 * s) + 1, _w(r, 40 * s), _x(r, 40 * s), 1e-5),
         _ln_ref, grad=(0, 1, 2)),
    Case("fla.layer_norm_wide", ops.layer_norm,
         lambda r, s: (_x(r, 3 * s, 520 * s), _w(r, 520 * s), _x(r, 520 * s), 1e-5),
         _ln_ref, grad=(0, 1, 2), atol=2e-5),
    Case("fla.rms_norm_residual", ops.rms_norm_residual,
         lambda r, s: (_x(r, 4 * s, 48 * s), _w(r, 48 * s), _x(r, 4 * s, 48 * s), 1e-5),
         _rms_res_ref, grad=(0, 1, 2), n_out=2),
    Case("fla.layer_norm_gated_swish", ops.layer_norm_gated,
         lambda r, s: (_x(r, 4 * s, 32 * s), _x(r, 4 * s, 32 * s), _w(r, 32 * s), _x(r, 32 * s), "swish", 1e-5),
         _gated_ref, grad=(0, 1, 2, 3)),
    Case("fla.layer_norm_gated_sigmoid", ops.layer_norm_gated,
         lambda r, s: (_x(r, 4 * s, 32 * s), _x(r, 4 * s, 32 * s), _w(r, 32 * s), _x(r, 32 * s), "sigmoid", 1e-5),
         _gated_ref, grad=(0, 1, 2, 3)),
    Case("fla.sigmoid", ops.sigmoid, lambda r, s: (_x(r, 3 * s, 37 * s), 1.0), lambda x, t: (_sigmoid(x),)),
    Case("fla.swish", ops.swish, lambda r, s: (_x(r, 3 * s, 37 * s), 1.0), lambda x, t: (x * _sigmoid(x),)),
    Case("fla.logsigmoid", ops.logsigmoid, lambda r, s: (_x(r, 3 * s, 37 * s), 2.0),
         lambda x, t: (_logsigmoid(x, t),)),
    Case("fla.softmax", ops.softmax, lambda r, s: (_x(r, 2, 3 * s, 20 * s),), lambda x: (_softmax(x),)),
    Case("fla.logsumexp", ops.logsumexp, lambda r, s: (_x(r, 5 * s, 30 * s), None), _lse_ref),
    Case("fla.logsumexp_scaled", ops.logsumexp, lambda r, s: (_x(r, 5 * s, 30 * s), 0.5), _lse_ref),
    # T = 20 with chunks of 8: the last chunk is partial (masked)
    Case("fla.chunk_local_cumsum", ops.chunk_local_cumsum_op,
         lambda r, s: (_x(r, 2, 20 * s, 3), 8, False, None), _cumsum_ref),
    Case("fla.chunk_local_cumsum_reverse_scaled", ops.chunk_local_cumsum_op,
         lambda r, s: (_x(r, 2, 20 * s, 3), 8, True, 0.5), _cumsum_ref),
    # [B, T, H, S]: the vector kernel
    Case("fla.chunk_local_cumsum_vector", ops.chunk_local_cumsum_op,
         lambda r, s: (_x(r, 1, 20 * s, 2, 5), 8, False, None), _cumsum_ref),
]


def _sgla_inputs(r, s):
    B, T, H, K, V = 1, 18 * s, 2, 16, 16         # two chunks of 16, the second partial
    return (_x(r, B, T, H, K), _x(r, B, T, H, K), _x(r, B, T, H, V),
            (-0.1 * np.abs(r.standard_normal((B, T, H)))).astype(_f32), _x(r, B, H, K, V), K ** -0.5, 16)


def _sgla_fn_inputs(r, s):
    q, k, v, g, h0, scale, chunk_size = _sgla_inputs(r, s)
    return (q, k, v, g, None, scale, h0, True, False, None, None, chunk_size)


def _retention_inputs(r, s):
    # fla.ops.retention.chunk_retention's call of chunk_simple_gla: no gate, the head-wise
    # decays g_gamma = log(1 - 2^(-5 - h)); this case calls the Function directly, so its one line
    # of host code is repeated here (chunk_retention itself, `@torch.compiler.disable`d as
    # released, runs in tests/test_compiler_disable47.py)
    q, k, v, _, h0, scale, chunk_size = _sgla_inputs(r, s)
    g_gamma = np.log(1 - 2.0 ** (-5.0 - np.arange(q.shape[2]))).astype(_f32)
    return (q, k, v, None, g_gamma, scale, h0, True, False, None, None, chunk_size)


def _retention_ref(q, k, v, g, g_gamma, scale, h0, *_):
    return _sgla_ref(q, k, v, np.broadcast_to(g_gamma, q.shape[:-1]), h0, scale)


def _sgla_ref(q, k, v, g, h0, scale, *_):
    """The recurrence itself (fla's naive_recurrent_simple_gla), in float64."""
    S = h0.copy()
    o = np.zeros((*q.shape[:-1], v.shape[-1]))
    for t in range(q.shape[1]):
        S = S * np.exp(g[:, t])[..., None, None] + k[:, t, :, :, None] * v[:, t, :, None, :]
        o[:, t] = np.einsum("bhk,bhkv->bhv", q[:, t] * scale, S)
    return o, S


CASES += [
    Case("fla.chunk_simple_gla", ops.chunk_simple_gla, _sgla_inputs, _sgla_ref, grad=(0, 1, 2, 3, 4),
         n_out=2, atol=2e-5, gaps=(gaps.LOOP_VAR,), tf32=True, refused=_GATED_REFUSED),
]


def _ce_inputs(label_smoothing=0.0, logit_scale=1.0, lse_square_scale=0.0, softcap=None):
    def make(r, s):
        target = r.integers(0, 50 * s, 6 * s).astype(np.int64)
        target[2] = -100                      # ignore_index
        return (_x(r, 6 * s, 50 * s), target, label_smoothing, logit_scale, lse_square_scale, softcap, -100,
                False, None)
    return make


def _ce_ref(x, target, ls, scale, lse_sq, softcap, ignore, *_):
    """fla.modules.fused_cross_entropy's unreduced loss: (1 - ls) * (lse - z_target) +
    ls * (lse - mean(z)) + lse_square_scale * lse^2 on z = softcap(scale * x), 0 where ignored."""
    z = x * scale
    if softcap is not None:
        z = softcap * np.tanh(z / softcap)
    m = z.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[:, 0]
    zt = np.take_along_axis(z, np.maximum(target, 0)[:, None], -1)[:, 0]
    loss = (1 - ls) * (lse - zt) + ls * (lse - z.mean(-1)) + lse_sq * lse * lse
    return (np.where(target == ignore, 0.0, loss),)


def _shift_inputs(T):
    def make(r, s):
        return (_x(r, 2, T * s, 24), None, _x(r, 2, 24), True, None)
    return make


def _shift_ref(x, cu_seqlens, cache, output_cache, *_):
    """fla.modules.token_shift.token_shift_ref with a cache: x_{t-1} - x_t, x_{-1} = cache; the
    last token is the next cache."""
    shifted = np.concatenate([cache[:, None], x[:, :-1]], 1)
    return (shifted - x, x[:, -1])


def _delta_inputs(l2norm, chunk_size=16):
    def make(r, s):
        B, T, H, K, V = 1, 18 * s, 2, 16, 16
        k = _x(r, B, T, H, K)
        if not l2norm:      # DeltaNet's keys are unit vectors (fla normalises them before the op)
            k = (k / np.linalg.norm(k, axis=-1, keepdims=True)).astype(_f32)
        beta = (1 / (1 + np.exp(-_x(r, B, T, H)))).astype(_f32)
        return (_x(r, B, T, H, K), k, _x(r, B, T, H, V), beta, K ** -0.5, _x(r, B, H, K, V), True, l2norm,
                None, None, chunk_size)
    return make


def _delta_ref(q, k, v, beta, scale, h0, final, l2norm, *_):
    """The delta rule's recurrence (fla's delta_rule_recurrence), float64: v_t' = beta_t (v_t -
    k_t S), S += k_t^T v_t', o_t = scale q_t S; q and k l2-normalised first when asked."""
    if l2norm:
        q, k = (a / np.sqrt((a * a).sum(-1, keepdims=True) + 1e-6) for a in (q, k))
    S = h0.copy()
    o = np.zeros((*q.shape[:-1], v.shape[-1]))
    for t in range(q.shape[1]):
        u = (v[:, t] - np.einsum("bhk,bhkv->bhv", k[:, t], S)) * beta[:, t, :, None]
        S = S + k[:, t, :, :, None] * u[:, :, None, :]
        o[:, t] = np.einsum("bhk,bhkv->bhv", q[:, t] * scale, S)
    return o, S


def _gla_inputs(r, s):
    # GLA: gates per key dimension, g [B, T, H, K] (log decays)
    q, k, v, _, h0, scale, _ = _sgla_inputs(r, s)
    g = (-0.1 * np.abs(r.standard_normal(q.shape))).astype(_f32)
    return (q, k, v, g, scale, h0, True, False, None, None)


def _gla_ref(q, k, v, g, scale, h0, *_):
    """GLA's recurrence (fla's naive_recurrent_gla), float64: S = diag(exp(g_t)) S + k_t^T v_t."""
    S = h0.copy()
    o = np.zeros((*q.shape[:-1], v.shape[-1]))
    for t in range(q.shape[1]):
        S = S * np.exp(g[:, t])[..., None] + k[:, t, :, :, None] * v[:, t, :, None, :]
        o[:, t] = np.einsum("bhk,bhkv->bhv", q[:, t] * scale, S)
    return o, S


# --- the released autograd.Functions themselves ------------------------------------------------

_L2 = ops.L2NormFunction.apply
_LN = ops.LayerNormFunction.apply
_LNG = ops.LayerNormGatedFunction.apply


def _group_ref(x, w, b, res, eps, prenorm, fp32, rms, groups):
    return (_norm(x, eps, rms, groups) * w + b,)


FUNCTION_CASES = [
    Case("fla.fn_l2norm", _L2, lambda r, s: (_x(r, 2, 3 * s, 24 * s), 1e-6, None), _l2_ref),
    # fla.modules.layernorm.layer_norm / rms_norm / group_norm: LayerNormFunction.apply(x, weight,
    # bias, residual, eps, prenorm, residual_in_fp32, is_rms_norm, num_groups)
    Case("fla.fn_layer_norm", _LN,
         lambda r, s: (_x(r, 2, 3 * s, 40 * s) + 1, _w(r, 40 * s), _x(r, 40 * s), None, 1e-5, False, False,
                       False, 1),
         lambda x, w, b, *a: _ln_ref(x, w, b, 1e-5), grad=(0, 1, 2)),
    Case("fla.fn_group_norm", _LN,
         lambda r, s: (_x(r, 5 * s, 2 * 16 * s), _w(r, 2 * 16 * s), _x(r, 2 * 16 * s), None, 1e-5, False, False,
                       False, 2),
         _group_ref, grad=(0, 1, 2)),
    Case("fla.fn_rms_norm_residual_prenorm", _LN,
         lambda r, s: (_x(r, 4 * s, 48 * s), _w(r, 48 * s), None, _x(r, 4 * s, 48 * s), 1e-5, True, False,
                       True, 1),
         lambda x, w, b, res, eps, *a: _rms_res_ref(x, w, res, eps), grad=(0, 1, 3), n_out=2),
    # fla.modules.fused_norm_gate.layer_norm_gated / rms_norm_gated: LayerNormGatedFunction.apply(x, g,
    # weight, bias, activation, residual, eps, prenorm, residual_in_fp32, is_rms_norm)
    Case("fla.fn_layer_norm_gated", _LNG,
         lambda r, s: (_x(r, 4 * s, 32 * s), _x(r, 4 * s, 32 * s), _w(r, 32 * s), _x(r, 32 * s), "swish", None,
                       1e-5, False, False, False),
         lambda x, g, w, b, act, res, eps, *a: _gated_ref(x, g, w, b, act, eps), grad=(0, 1, 2, 3)),
    Case("fla.fn_rms_norm_gated", _LNG,
         lambda r, s: (_x(r, 4 * s, 32 * s), _x(r, 4 * s, 32 * s), _w(r, 32 * s), None, "sigmoid", None,
                       1e-5, False, False, True),
         lambda x, g, w, b, act, res, eps, *a: ((_norm(x, eps, True) * w) * _act(g, act),), grad=(0, 1, 2)),
    Case("fla.fn_sigmoid", ops.SigmoidFunction.apply, lambda r, s: (_x(r, 3 * s, 37 * s),),
         lambda x: (_sigmoid(x),)),
    Case("fla.fn_swish", ops.SwishFunction.apply, lambda r, s: (_x(r, 3 * s, 37 * s),),
         lambda x: (x * _sigmoid(x),)),
    Case("fla.fn_logsigmoid", ops.LogSigmoidFunction.apply, lambda r, s: (_x(r, 3 * s, 37 * s), 2.0),
         lambda x, t: (_logsigmoid(x, t),)),
    # fla.ops.simple_gla.chunk_simple_gla: ChunkSimpleGLAFunction.apply(q, k, v, g, g_gamma, scale,
    # initial_state, output_final_state, state_v_first, cu_seqlens, cu_seqlens_cpu, chunk_size)
    Case("fla.fn_chunk_simple_gla", ops.ChunkSimpleGLAFunction.apply,
         _sgla_fn_inputs,
         lambda q, k, v, g, gg, scale, h0, *_: _sgla_ref(q, k, v, g, h0, scale),
         grad=(0, 1, 2, 3, 6), n_out=2, atol=2e-5, gaps=(gaps.LOOP_VAR,), tf32=True, refused=_GATED_REFUSED),
    Case("fla.fn_chunk_retention", ops.ChunkSimpleGLAFunction.apply, _retention_inputs, _retention_ref,
         grad=(0, 1, 2, 6), n_out=2, atol=2e-5, gaps=(gaps.LOOP_VAR,), tf32=True),
    # fla.modules.fused_cross_entropy.cross_entropy_loss: FusedCrossEntropyFunction.apply(logits, target,
    # label_smoothing, logit_scale, lse_square_scale, logit_softcapping, ignore_index, inplace_backward,
    # process_group); the loss per row (its z-loss output is for logging, not compared)
    Case("fla.fn_cross_entropy_smoothed_zloss", ops.FusedCrossEntropyFunction.apply,
         _ce_inputs(label_smoothing=0.1, lse_square_scale=1e-3), _ce_ref),
    Case("fla.fn_cross_entropy_scaled_softcap", ops.FusedCrossEntropyFunction.apply,
         _ce_inputs(logit_scale=0.5, softcap=3.0), _ce_ref),
    # fla.modules.token_shift: TokenShift.apply(x, cu_seqlens, cache, output_cache, chunk_indices) ->
    # (x_{t-1} - x_t, the last token), with the cache of the previous segment
    Case("fla.fn_token_shift", ops.TokenShift.apply, _shift_inputs(10), _shift_ref, grad=(0, 2), n_out=2),
    # fla.ops.delta_rule.chunk_delta_rule: ChunkDeltaRuleFunction.apply(q, k, v, beta, scale, initial_state,
    # output_final_state, use_qk_l2norm_in_kernel, cu_seqlens, cu_seqlens_cpu, chunk_size)
    Case("fla.fn_chunk_delta_rule", ops.ChunkDeltaRuleFunction.apply, _delta_inputs(False), _delta_ref,
         grad=(0, 1, 2, 3, 5), n_out=2, atol=2e-5, gaps=(gaps.LOOP_VAR,), tf32=True),
    # chunks of 32: the 16x16 inverses merged into a 32x32 one (merge_16x16_to_32x32_inverse_kernel)
    Case("fla.fn_chunk_delta_rule_qk_l2norm", ops.ChunkDeltaRuleFunction.apply, _delta_inputs(True, 32), _delta_ref,
         grad=(0, 1, 2, 3), n_out=2, atol=2e-5, gaps=(gaps.LOOP_VAR,), tf32=True),
    # fla.ops.gla.chunk_gla: ChunkGLAFunction.apply(q, k, v, g, scale, initial_state, output_final_state,
    # state_v_first, cu_seqlens, cu_seqlens_cpu) (chunks of 64, one partial chunk here)
    Case("fla.fn_chunk_gla", ops.ChunkGLAFunction.apply, _gla_inputs, _gla_ref, grad=(0, 1, 2, 3, 5), n_out=2,
         atol=2e-5, gaps=(gaps.LOOP_VAR,), tf32=True),
]
