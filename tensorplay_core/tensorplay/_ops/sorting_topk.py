"""``topk``: the ``k`` largest (or smallest) values along a dim and their indices (torch
semantics: NaN counts as the largest value; results come sorted; ``sorted=False`` may return
them sorted too, which torch allows). The array kernel is ``topk`` in ``_kernels/xp.py``."""

from __future__ import annotations

from .. import _dtype
from ._define import defop
from ._shapes import out_like, wrap_dim
from .reduction import _select_back


def topk_size(shape, k, dim, api="topk(): "):
    """The output shape of ``topk`` (``shape`` with ``dim`` of size ``k``); ``RuntimeError``
    when ``k`` is not in ``[0, size of dim]`` (torch's message)."""
    nd = len(shape)
    d = wrap_dim(dim, nd, api)
    n = shape[d] if nd else 1
    if not isinstance(k, int) or k < 0 or k > n:
        raise RuntimeError(f"{api}selected index k out of range (k={k}, size of dim {dim} is "
                           f"{n})")
    return tuple(shape[:d]) + (k,) + tuple(shape[d + 1:]) if nd else ()


def _topk_meta(x, k, dim=-1, largest=True, sorted=True):   # noqa: A002 - torch's name
    shape = topk_size(tuple(x.shape), k, dim)
    return out_like(shape, x.dtype, x), out_like(shape, _dtype.int64, x)


def _topk_setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape
    ctx.dim = inputs[2] if len(inputs) > 2 else -1
    ctx.save_for_backward(output[1])


def _topk_bw(ctx, g, _gi=None):
    # the gradient goes back to the selected positions, zeros elsewhere (as torch)
    idx, = ctx.saved_tensors
    return _select_back(g, ctx.shape, ctx.dim, idx, True), None, None, None, None


defop("topk(Tensor self, SymInt k, SymInt dim=-1, bool largest=True, bool sorted=True) -> "
      "(Tensor values, Tensor indices)", meta=_topk_meta, setup=_topk_setup, backward=_topk_bw)
