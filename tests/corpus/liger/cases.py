"""Liger-Kernel corpus cases: sample inputs and float64 NumPy references (ours)."""

from __future__ import annotations

import numpy as np

from .. import gaps
from ..cases import Case
from . import ops

_f32 = np.float32


def _x(r, *shape):
    return r.standard_normal(shape).astype(_f32)


def _rms_ref(x, w, eps, offset=0.0, casting_mode="llama"):
    rstd = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return (x * rstd * (offset + w), rstd[..., 0])


def _ln_ref(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    return ((x - mean) * rstd * w + b, mean[..., 0], rstd[..., 0])


def _silu(a):
    return a / (1 + np.exp(-a))


def _gelu_tanh(a):
    return 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _rope_ref(q, k, cos, sin):
    def rot(t):
        h = t.shape[-1] // 2
        return np.concatenate([-t[..., h:], t[..., :h]], -1)
    c, s = cos[:, None], sin[:, None]          # (1|B, 1, S, D) against (B, H, S, D)
    return (q * c + rot(q) * s, k * c + rot(k) * s)


def _rope_inputs(r, scale):
    B, Hq, Hk, S, D = 2, 4 * scale, 2 * scale, 3 * scale, 8 * scale
    theta = r.random((S, D // 2))
    ang = np.concatenate([theta, theta], -1)[None]
    return (_x(r, B, Hq, S, D), _x(r, B, Hk, S, D), np.cos(ang).astype(_f32), np.sin(ang).astype(_f32))


CASES = [
    Case("liger.rms_norm", ops.rms_norm,
         lambda r, s: (_x(r, 4 * s, 48 * s), r.random(48 * s).astype(_f32) + 0.5, 1e-6, 0.0, "llama"),
         _rms_ref, grad=(0, 1), gaps=(gaps.LIBDEVICE,)),
    Case("liger.layer_norm", ops.layer_norm,
         lambda r, s: (_x(r, 4 * s, 40 * s) - 2, r.random(40 * s).astype(_f32), r.random(40 * s).astype(_f32), 1e-5),
         _ln_ref, grad=(0, 1, 2), gaps=(gaps.LIBDEVICE,)),
    Case("liger.swiglu", ops.swiglu, lambda r, s: (_x(r, 3 * s, 40 * s), _x(r, 3 * s, 40 * s)),
         lambda a, b: (_silu(a) * b,), grad=(0, 1)),
    Case("liger.geglu", ops.geglu, lambda r, s: (_x(r, 3 * s, 40 * s), _x(r, 3 * s, 40 * s)),
         lambda a, b: (_gelu_tanh(a) * b,), grad=(0, 1), gaps=(gaps.LIBDEVICE,)),
    Case("liger.relu_squared", ops.relu_squared, lambda r, s: (_x(r, 3 * s, 40 * s),),
         lambda x: (np.maximum(x, 0) ** 2,)),
    Case("liger.softmax", ops.softmax, lambda r, s: (_x(r, 2, 3 * s, 33 * s),),
         lambda x: (_softmax(x),)),
    Case("liger.rope", ops.rope, _rope_inputs, _rope_ref, grad=(0, 1), n_out=2),
]


def _log_probs(r, *shape):
    x = r.standard_normal(shape)
    return (x - np.log(np.exp(x).sum(-1, keepdims=True))).astype(_f32)


def _kl_ref(y_pred, y_true, reduction="batchmean", log_target=False, eps=1e-10):
    return ((y_true * (np.log(np.maximum(y_true, eps)) - y_pred)).sum() / y_pred.shape[0],)


def _jsd_ref(x, y, shift_labels=None, beta=0.5, ignore_index=-100):
    q, p = np.exp(x), np.exp(y)
    m = beta * p + (1 - beta) * q
    return (((beta * p * y + (1 - beta) * q * x - m * np.log(m)).sum() / x.shape[0]),)


def _tvd_ref(p, q, labels, reduction="batchmean", ignore_index=-100):
    keep = labels != ignore_index
    return ((0.5 * np.abs(p - q)).sum(-1)[keep].sum() / keep.sum(),)


def _tvd_inputs(r, s):
    n, v = 6 * s, 30 * s
    p = np.exp(_log_probs(r, n, v))
    q = np.exp(_log_probs(r, n, v))
    labels = r.integers(0, v, n).astype(np.int64)
    labels[2] = -100
    return (p.astype(_f32), q.astype(_f32), labels, "batchmean", -100)


def _dyt_ref(x, alpha, gamma, beta):
    return (np.tanh(alpha[0] * x) * gamma + beta,)


def _ce_ref(x, target, ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0, reduction="mean", softcap=None):
    m = x.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))[:, 0]
    keep = target != ignore_index
    picked = np.take_along_axis(x, np.where(keep, target, 0)[:, None], -1)[:, 0]
    return (((lse - picked) * keep).sum() / keep.sum(),)


def _ce_inputs(r, s):
    n, v = 6 * s, 50 * s
    target = r.integers(0, v, n).astype(np.int64)
    target[3] = -100
    return (_x(r, n, v), target)


CASES += [
    Case("liger.kl_div", ops.kl_div, lambda r, s: (_log_probs(r, 5 * s, 30 * s), np.exp(_log_probs(r, 5 * s, 30 * s))),
         _kl_ref),
    Case("liger.jsd", ops.jsd, lambda r, s: (_log_probs(r, 5 * s, 30 * s), _log_probs(r, 5 * s, 30 * s)), _jsd_ref),
    Case("liger.tvd", ops.tvd, _tvd_inputs, _tvd_ref),
    Case("liger.dyt", ops.dyt,
         lambda r, s: (_x(r, 4 * s, 40 * s), np.array([0.7], _f32), r.random(40 * s).astype(_f32) + 0.5,
                       r.random(40 * s).astype(_f32)),
         _dyt_ref, grad=(0, 1, 2, 3), gaps=(gaps.LIBDEVICE,)),
    Case("liger.cross_entropy", ops.cross_entropy, _ce_inputs, _ce_ref),
]


def _sparsemax_ref(x, dim=-1):
    z = np.moveaxis(x, dim, -1)
    zs = -np.sort(-z, -1)
    k = np.arange(1, z.shape[-1] + 1)
    css = np.cumsum(zs, -1)
    support = zs * k > css - 1
    kz = support.sum(-1, keepdims=True)
    tau = (np.take_along_axis(css, kz - 1, -1) - 1) / kz
    return (np.moveaxis(np.maximum(z - tau, 0), -1, dim),)


CASES += [
    # dim 1 of 3: the host transposes to the last dim and back (a non-contiguous output)
    Case("liger.sparsemax", ops.sparsemax, lambda r, s: (2 * _x(r, 2, 9 * s, 5 * s), 1), _sparsemax_ref),
]


def _poly_norm_ref(x, w, b, eps=1e-6):
    def norm(u):
        return u / np.sqrt((u * u).mean(-1, keepdims=True) + eps)
    return (w[0] * norm(x ** 3) + w[1] * norm(x * x) + w[2] * norm(x) + b,)


CASES += [
    # 7 rows over one program on cpu (sm_count 1): the backward's row loop runs range(0, min(...))
    Case("liger.poly_norm", ops.poly_norm,
         lambda r, s: (_x(r, 7 * s, 24 * s), np.array([0.5, -0.3, 1.2], _f32), np.array(0.25, _f32), 1e-6),
         _poly_norm_ref, grad=(0, 1, 2), gaps=(gaps.LIBDEVICE,), atol=1e-4, rtol=1e-3),
]


def _fused_add_rms_ref(x, r, w, eps, offset=0.0, casting_mode="llama"):
    s = x + r
    return (s / np.sqrt((s * s).mean(-1, keepdims=True) + eps) * (offset + w), s)


def _fused_add_rms_inputs(r, s):
    return (_x(r, 2, 3 * s, 40 * s), _x(r, 2, 3 * s, 40 * s), r.random(40 * s).astype(_f32) + 0.5, 1e-6, 0.5)


CASES += [
    # both outputs in the loss (the backward adds dS_out into dX, the gradient of X and of R)
    Case("liger.fused_add_rms_norm", ops.fused_add_rms_norm, _fused_add_rms_inputs, _fused_add_rms_ref,
         grad=(0, 1, 2), n_out=2, gaps=(gaps.LIBDEVICE,)),
    # the residual output unused: its gradient reaches the formula as zeros (materialized, as torch's)
    Case("liger.fused_add_rms_norm_y_only", ops.fused_add_rms_norm, _fused_add_rms_inputs, _fused_add_rms_ref,
         grad=(0, 1, 2), n_out=1, gaps=(gaps.LIBDEVICE,)),
]


def _group_norm_ref(x, w, b, num_channels, num_groups, eps):
    g = x.reshape(x.shape[0], num_groups, -1)
    mean = g.mean(-1, keepdims=True)
    y = ((g - mean) / np.sqrt(((g - mean) ** 2).mean(-1, keepdims=True) + eps)).reshape(x.shape)
    return (y * w[:, None] + b[:, None],)


CASES += [
    # (batch, channels, hidden): 6 channels in 3 groups, weight and bias per channel (atomic adds
    # over the batch in the backward)
    Case("liger.group_norm", ops.group_norm,
         lambda r, s: (_x(r, 2, 6, 10 * s), r.random(6).astype(_f32) + 0.5, r.random(6).astype(_f32), 6, 3, 1e-5),
         _group_norm_ref, grad=(0, 1, 2), gaps=(gaps.LIBDEVICE,)),
]


def _mrope_ref(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
    # frequency i of the first half takes its cos/sin from section t, h or w (cos[0], [1], [2])
    half = q.shape[-1] // 2
    which = np.repeat(np.arange(3), mrope_section)                      # (half,)
    c = cos[which, :, :, np.arange(half)].transpose(1, 2, 0)            # (B, S, half)
    s = sin[which, :, :, np.arange(half)].transpose(1, 2, 0)
    c, s = c[:, None], s[:, None]                                       # against (B, H, S, half)

    def rot(t):
        t1, t2 = t[..., :half], t[..., half:]
        return np.concatenate([t1 * c - t2 * s, t2 * c + t1 * s], -1)
    return (rot(q), rot(k))


def _mrope_inputs(r, scale):
    B, Hq, Hk, S, D = 2, 4 * scale, 2 * scale, 3 * scale, 16 * scale
    ang = r.random((3, B, S, D // 2)) * 3
    ang = np.concatenate([ang, ang], -1)
    section = [2 * scale, 3 * scale, 3 * scale]                         # t, h, w: sums to D // 2
    return (_x(r, B, Hq, S, D), _x(r, B, Hk, S, D), np.cos(ang).astype(_f32), np.sin(ang).astype(_f32), section)


CASES += [
    Case("liger.qwen2vl_mrope", ops.qwen2vl_mrope, _mrope_inputs, _mrope_ref, grad=(0, 1), n_out=2),
]
