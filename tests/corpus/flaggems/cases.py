"""FlagGems corpus cases: sample inputs and float64 NumPy references (ours)."""

from __future__ import annotations

import numpy as np

from .. import gaps
from ..cases import Case
from . import ops

_f32 = np.float32
# FlagGems writes masks as `row_mask and col_mask` on tensors (gaps.BOOLOP): under the interpreter
# the kernels then read and write out of bounds, which corrupts the heap of the process: these
# cases run in their own process (isolate=True)


def _x(r, *shape):
    return r.standard_normal(shape).astype(_f32)


def _softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return (e / e.sum(dim, keepdims=True),)


def _log_softmax(x, dim):
    m = x.max(dim, keepdims=True)
    return (x - m - np.log(np.exp(x - m).sum(dim, keepdims=True)),)


def _rms_ref(x, normalized_shape, w, eps):
    rstd = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return (x * rstd * w, rstd[..., 0])


def _ln_ref(x, normalized_shape, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    return ((x - mean) * rstd * w + b, mean[..., 0], rstd[..., 0])


def _gn_ref(x, w, b, group, eps):
    n, c = x.shape[:2]
    g = x.reshape(n, group, -1)
    mean = g.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((g - mean) ** 2).mean(-1, keepdims=True) + eps)
    y = ((g - mean) * rstd).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return (y * w.reshape(shape) + b.reshape(shape), mean[..., 0], rstd[..., 0])


def _ln_inputs(n):
    return lambda r, s: (_x(r, 2, 3 * s, n * s) + 1, [n * s], r.random(n * s).astype(_f32),
                         r.random(n * s).astype(_f32), 1e-5)


CASES = [
    Case("flaggems.softmax", ops.softmax, lambda r, s: (_x(r, 4 * s, 40 * s), -1), _softmax),
    Case("flaggems.softmax_dim0", ops.softmax, lambda r, s: (_x(r, 12 * s, 5, 6 * s), 0), _softmax),
    Case("flaggems.log_softmax", ops.log_softmax, lambda r, s: (_x(r, 4 * s, 40 * s), 1), _log_softmax,
         gaps=(gaps.BOOLOP,), isolate=True),
    Case("flaggems.log_softmax_dim1", ops.log_softmax, lambda r, s: (_x(r, 3, 10 * s, 4 * s), 1), _log_softmax,
         gaps=(gaps.BOOLOP,), isolate=True),
    Case("flaggems.rms_norm", ops.rms_norm,
         lambda r, s: (_x(r, 2, 3 * s, 48 * s), [48 * s], r.random(48 * s).astype(_f32) + 0.5, 1e-6),
         _rms_ref, grad=(0, 2)),
    Case("flaggems.layer_norm", ops.layer_norm, _ln_inputs(160), _ln_ref, grad=(0, 2, 3),
         gaps=(gaps.BOOLOP,), isolate=True),
    Case("flaggems.layer_norm_multiline", ops.layer_norm, _ln_inputs(40), _ln_ref, grad=(0, 2, 3),
         gaps=(gaps.BOOLOP,), isolate=True),
    Case("flaggems.group_norm", ops.group_norm,
         lambda r, s: (_x(r, 2, 6 * s, 3, 4), r.random(6 * s).astype(_f32) + 0.5, r.random(6 * s).astype(_f32), 3, 1e-5),
         _gn_ref, grad=(0, 1, 2), gaps=(gaps.LIBDEVICE, gaps.BOOLOP), isolate=True),
]
