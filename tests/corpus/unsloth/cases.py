"""Unsloth corpus cases: sample inputs and float64 NumPy references (ours)."""

from __future__ import annotations

from math import erf

import numpy as np

from .. import gaps
from ..cases import Case
from . import ops

_f32 = np.float32
_erf = np.vectorize(erf)


def _x(r, *shape):
    return r.standard_normal(shape).astype(_f32)


def _rms_ref(x, w, eps, gemma=False):
    rstd = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return (x * rstd * (w + 1.0 if gemma else w), rstd[..., 0])


def _ln_ref(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    return ((x - mean) * rstd * w + b, rstd[..., 0], mean[..., 0])


def _silu(a):
    return a / (1 + np.exp(-a))


def _gelu(a):
    return 0.5 * a * (1 + _erf(a / np.sqrt(2)))


def _gelu_tanh(a):
    return 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))


def _ce_ref(logits, labels, softcap=0, scale=0):
    z = logits
    if scale:
        z = scale * z
    if softcap:
        z = softcap * np.tanh(z / softcap)
    m = z.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[:, 0]
    picked = np.take_along_axis(z, np.maximum(labels, 0)[:, None].astype(np.int64), -1)[:, 0]
    return (np.where(labels == -100, 0.0, lse - picked), lse)


def _ce_inputs(softcap=0, scale=0, vocab=50):
    def make(r, s):
        n, v = 6 * s, vocab * s
        labels = r.integers(0, v, n).astype(np.int64)
        labels[1] = -100
        return (_x(r, n, v), labels, softcap, scale)
    return make


def _gated(r, s):
    return (_x(r, 2, 3 * s, 40 * s), _x(r, 2, 3 * s, 40 * s))


CASES = [
    Case("unsloth.rms_layernorm", ops.rms_layernorm,
         lambda r, s: (_x(r, 4 * s, 48 * s), r.random(48 * s).astype(_f32) + 0.5, 1e-6, False), _rms_ref),
    Case("unsloth.rms_layernorm_gemma", ops.rms_layernorm,
         lambda r, s: (_x(r, 4 * s, 48 * s), r.random(48 * s).astype(_f32), 1e-6, True), _rms_ref),
    Case("unsloth.layernorm", ops.layernorm,
         lambda r, s: (_x(r, 4 * s, 40 * s) + 1, r.random(40 * s).astype(_f32), r.random(40 * s).astype(_f32), 1e-5),
         _ln_ref),
    Case("unsloth.swiglu", ops.swiglu, _gated, lambda e, g: (_silu(e) * g,), grad=(0, 1)),
    Case("unsloth.geglu_exact", ops.geglu_exact, _gated, lambda e, g: (_gelu(e) * g,), grad=(0, 1)),
    Case("unsloth.geglu_approx", ops.geglu_approx, _gated, lambda e, g: (_gelu_tanh(e) * g,), grad=(0, 1),
         gaps=(gaps.LIBDEVICE,)),
    Case("unsloth.cross_entropy", ops.cross_entropy, _ce_inputs(), _ce_ref, gaps=(gaps.TL_ALIAS,)),
    # a power-of-two vocab: upstream's softcapping maps the -inf of masked lanes to -SOFTCAP
    # (SOFTCAP * tanh(-inf)), so padding lanes add exp(-SOFTCAP - max) to the sum when the vocab
    # is not a power of two (an upstream bug, on GPUs too; not ours to fix)
    Case("unsloth.cross_entropy_softcap", ops.cross_entropy, _ce_inputs(softcap=3.0, vocab=64), _ce_ref,
         gaps=(gaps.TL_ALIAS,)),
    Case("unsloth.cross_entropy_scaled", ops.cross_entropy, _ce_inputs(scale=0.5), _ce_ref, gaps=(gaps.TL_ALIAS,)),
]
