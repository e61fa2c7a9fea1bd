"""Cut Cross-Entropy corpus cases: sample inputs and float64 NumPy references (ours).

:data:`CASES` are the ops of ops.py (``opcheck``); :data:`FUNCTION_CASES` call the library's entry
point, the released ``cce_linear_cross_entropy`` (``LinearCrossEntropyFunction.apply`` on the
valid positions), checked by ``corpus.check.check_function`` and ``check_function_compiled``.

The library's backward requires float16/bfloat16 embeddings (``cce_backward_kernel`` asserts
it): ``e`` is float16 (bfloat16 in the ``_bf16`` cases), the classifier ``c`` float32 holding
values of ``e``'s dtype (the kernels read it as ``e``'s dtype), so the float64 reference sees the operands the kernels multiply; the
gradient's rounding to float16 (the kernel writes ``dE`` / ``dC`` in ``e``'s dtype) sets the
tolerances. Sizes are small (the interpreter runs every program: one 256 x 128 tile here).

With a softcap the vocabulary is a whole number of the forward's 128-wide tiles (``BLOCK_V``): an
upstream bug (25.1.1, the same under torch on a GPU) counts the columns that pad the last tile
in the log-sum-exp. ``_cce_lse_forward_kernel`` sets them to ``-inf``, then softcaps them to
``tanh(-inf) * softcap = -softcap``: each adds ``exp(-softcap)`` to the sum (with softcap 2 and
40 classes, the lse is 0.17 too high; with Gemma 2's softcap 30 it is below float32's rounding).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .. import gaps
from ..cases import Case
from . import ops

_IGNORE = -100      # cut_cross_entropy.constants.IGNORE_INDEX


_BF16 = ml_dtypes.bfloat16


def _e(r, *shape, dtype=np.float16):
    return (0.5 * r.standard_normal(shape)).astype(dtype)


def _c(r, v, d, dtype=np.float16):
    return (0.5 * r.standard_normal((v, d))).astype(dtype).astype(np.float32)


def _cap(x, softcap):
    return x if softcap is None else np.tanh(x / softcap) * softcap


def _logits(e, c, softcap=None):
    return _cap(e.reshape(-1, e.shape[-1]) @ c.T, softcap)


def _lse(x):
    m = x.max(-1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))[..., 0]


def _lse_ref(e, c, softcap=None):
    return (_lse(_logits(e, c, softcap)),)


def _nll(e, c, targets, softcap=None):
    x = _logits(e, c, softcap)
    t = targets.reshape(-1)
    return _lse(x) - x[np.arange(t.size), t]


def _reduce(nll, reduction):
    return nll.mean() if reduction == "mean" else nll.sum() if reduction == "sum" else nll


def _lce_ref(e, c, targets, softcap=None, reduction="mean", *_):
    return (_reduce(_nll(e, c, targets, softcap), reduction), _lse(_logits(e, c, softcap)))


def _fn_ref(e, c, targets, ignore_index=_IGNORE, softcap=None, reduction="mean", shift=False, *_):
    """torch.nn.functional.cross_entropy((e @ c.T), targets, ignore_index, reduction) with the
    library's ``shift`` (e[..., :-1, :] against targets[..., 1:]) and softcap."""
    if shift:
        e, t = e[..., :-1, :], targets[..., 1:]
    else:
        t = targets
    keep = t.reshape(-1) != ignore_index
    x = _logits(e, c, softcap)
    tt = np.where(keep, t.reshape(-1), 0)
    nll = np.where(keep, _lse(x) - x[np.arange(tt.size), tt], 0.0)
    if reduction == "none":
        return (nll.reshape(t.shape),)
    return (nll.sum() / (keep.sum() if reduction == "mean" else 1),)


def _targets(r, v, *shape, ignored=0):
    t = r.integers(0, v, shape)
    flat = t.reshape(-1)
    flat[r.permutation(flat.size)[:ignored]] = _IGNORE
    return t


_TOL = dict(atol=2e-3, rtol=2e-3)       # gradients: 10x (check.py), float16's rounding

CASES = [
    Case("cce.lse", ops.lse, lambda r, s: (_e(r, 6 * s, 24 * s), _c(r, 40 * s, 24 * s), None),
         _lse_ref, grad=(0, 1), **_TOL),
    Case("cce.lse_softcap", ops.lse, lambda r, s: (_e(r, 6 * s, 24 * s), _c(r, 128 * s, 24 * s), 2.0),
         _lse_ref, grad=(0, 1), **_TOL),
    Case("cce.linear_cross_entropy", ops.linear_cross_entropy,
         lambda r, s: (_e(r, 6 * s, 24 * s), _c(r, 40 * s, 24 * s), _targets(r, 40 * s, 6 * s), None, "mean"),
         _lce_ref, grad=(0, 1), **_TOL),
    Case("cce.linear_cross_entropy_softcap_sum", ops.linear_cross_entropy,
         lambda r, s: (_e(r, 6 * s, 24 * s), _c(r, 128 * s, 24 * s), _targets(r, 128 * s, 6 * s), 2.0, "sum"),
         _lce_ref, grad=(0, 1), **_TOL),
    # bfloat16 embeddings, the library's usual training dtype
    Case("cce.linear_cross_entropy_bf16", ops.linear_cross_entropy,
         lambda r, s: (_e(r, 6 * s, 24 * s, dtype=_BF16), _c(r, 40 * s, 24 * s, _BF16), _targets(r, 40 * s, 6 * s),
                       None, "mean"),
         _lce_ref, grad=(0, 1), atol=1e-3, rtol=2e-3),
]

_F = ops.cce_linear_cross_entropy

# every call of cce_linear_cross_entropy builds its valid positions with nonzero() and reads their
# count (utils._build_flat_valids): inside tensorplay.compile that is gaps.COMPILE_GRAPH_BREAK

# cce_linear_cross_entropy(e, c, targets, ignore_index, softcap, reduction, shift, filter_eps)
FUNCTION_CASES = [
    Case("cce.fn_linear_cross_entropy", _F,
         lambda r, s: (_e(r, 7 * s, 24 * s), _c(r, 40 * s, 24 * s), _targets(r, 40 * s, 7 * s), _IGNORE,
                       None, "mean", False, None),
         _fn_ref, grad=(0, 1), gaps=(gaps.COMPILE_GRAPH_BREAK,), **_TOL),
    # the library's defaults: filter_eps "auto" (the forward also averages the logits over the
    # batch, the backward visits the vocabulary in that order: its sort_logit_avg under
    # torch.compile); a batch of sequences, shifted for next-token prediction, some targets ignored
    Case("cce.fn_linear_cross_entropy_shift_ignore", _F,
         lambda r, s: (_e(r, 2, 5 * s, 24 * s), _c(r, 40 * s, 24 * s), _targets(r, 40 * s, 2, 5 * s, ignored=3),
                       _IGNORE, None, "mean", True, "auto"),
         _fn_ref, grad=(0, 1), gaps=(gaps.COMPILE_GRAPH_BREAK,), **_TOL),
    Case("cce.fn_linear_cross_entropy_softcap_sum", _F,
         lambda r, s: (_e(r, 7 * s, 24 * s), _c(r, 128 * s, 24 * s), _targets(r, 128 * s, 7 * s), _IGNORE,
                       2.0, "sum", False, "auto"),
         _fn_ref, grad=(0, 1), gaps=(gaps.COMPILE_GRAPH_BREAK,), **_TOL),
    Case("cce.fn_linear_cross_entropy_bf16_shift_ignore", _F,
         lambda r, s: (_e(r, 2, 5 * s, 24 * s, dtype=_BF16), _c(r, 40 * s, 24 * s, _BF16),
                       _targets(r, 40 * s, 2, 5 * s, ignored=3), _IGNORE, None, "mean", True, "auto"),
         _fn_ref, grad=(0, 1), gaps=(gaps.COMPILE_GRAPH_BREAK,), atol=1e-3, rtol=2e-3),
    # reduction="none" with ignored targets: the per-position loss scattered back to the batch's
    # shape (utils.handle_reduction_none: `loss.new_zeros((batch_shape.numel(),))`)
    Case("cce.fn_linear_cross_entropy_none_ignore", _F,
         lambda r, s: (_e(r, 2, 4 * s, 24 * s), _c(r, 40 * s, 24 * s), _targets(r, 40 * s, 2, 4 * s, ignored=2),
                       _IGNORE, None, "none", False, None),
         _fn_ref, grad=(0, 1), gaps=(gaps.TORCH_SIZE, gaps.COMPILE_GRAPH_BREAK), **_TOL),
]
