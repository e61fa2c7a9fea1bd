"""Liger-Kernel corpus cases: sample inputs and float64 NumPy references (ours)."""

from __future__ import annotations

import numpy as np

from ..cases import Case
from . import ops

_f32 = np.float32
_GAP_LIBDEVICE = "gap: names imported from triton.language.extra.libdevice are None, fixed on h-triton"


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
         _rms_ref, grad=(0, 1), xfail=_GAP_LIBDEVICE),
    Case("liger.layer_norm", ops.layer_norm,
         lambda r, s: (_x(r, 4 * s, 40 * s) - 2, r.random(40 * s).astype(_f32), r.random(40 * s).astype(_f32), 1e-5),
         _ln_ref, grad=(0, 1, 2), xfail=_GAP_LIBDEVICE),
    Case("liger.swiglu", ops.swiglu, lambda r, s: (_x(r, 3 * s, 40 * s), _x(r, 3 * s, 40 * s)),
         lambda a, b: (_silu(a) * b,), grad=(0, 1)),
    Case("liger.geglu", ops.geglu, lambda r, s: (_x(r, 3 * s, 40 * s), _x(r, 3 * s, 40 * s)),
         lambda a, b: (_gelu_tanh(a) * b,), grad=(0, 1), xfail=_GAP_LIBDEVICE),
    Case("liger.relu_squared", ops.relu_squared, lambda r, s: (_x(r, 3 * s, 40 * s),),
         lambda x: (np.maximum(x, 0) ** 2,)),
    Case("liger.softmax", ops.softmax, lambda r, s: (_x(r, 2, 3 * s, 33 * s),),
         lambda x: (_softmax(x),)),
    Case("liger.rope", ops.rope, _rope_inputs, _rope_ref, grad=(0, 1), n_out=2),
]
