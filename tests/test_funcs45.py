"""torch's module-level functions over the Tensor methods (session 45, h-funcs45), and advanced
indices whose broadcast result is empty (torch checks nothing then). Torch-free; the torch
differential is tests/torch_bridge/test_funcs_differential45.py."""

from __future__ import annotations

import math

import pytest

import tensorplay as tp
from tensorplay.autograd import gradcheck


def _x(*shape, grad=False, dtype=tp.float64):
    n = math.prod(shape)
    x = (tp.arange(n, dtype=dtype) - n / 3).reshape(list(shape)).clone()
    return x.requires_grad_() if grad else x


# -- empty broadcast index: nothing read, nothing checked -------------------------------------
def test_empty_broadcast_result_checks_no_index():
    x = _x(2, 3, 4)
    e = tp.tensor([], dtype=tp.int64)
    # each result equals the same index with the bad values replaced by good ones
    for bad, good in [((tp.tensor([5]), e), (tp.tensor([1]), e)),
                      ((e, tp.tensor([9])), (e, tp.tensor([2]))),
                      ((tp.tensor([5]), tp.zeros(0, 1, dtype=tp.int64)),
                       (tp.tensor([0]), tp.zeros(0, 1, dtype=tp.int64))),
                      ((tp.tensor([[5]]), slice(None), e), (tp.tensor([[0]]), slice(None), e)),
                      ((slice(None), tp.tensor([7]), e), (slice(None), tp.tensor([0]), e))]:
        r = x[bad]
        assert r.shape == x[good].shape and r.numel() == 0 and r.dtype is x.dtype
    # the dims left empty: no element read either
    z = tp.zeros(2, 3, 0)
    assert z[tp.tensor([5]), tp.tensor([1])].shape == z[tp.tensor([0]), tp.tensor([1])].shape
    m = tp.zeros(2, dtype=tp.bool)
    assert tp.zeros(2, 3)[m, tp.tensor([7])].shape == (0,)


def test_empty_broadcast_result_gradient_and_write():
    x = _x(2, 3, grad=True)
    x[tp.tensor([5]), tp.tensor([], dtype=tp.int64)].sum().backward()
    assert x.grad.tolist() == tp.zeros_like(x).tolist()
    y = _x(2, 3)
    before = y.tolist()
    y[tp.tensor([5]), tp.tensor([], dtype=tp.int64)] = 1.0
    y[tp.tensor([], dtype=tp.int64), tp.tensor([9])] = tp.ones(0, dtype=tp.float64)
    assert y.tolist() == before
    # torch checks index_put_'s dtypes before anything is written, an empty write too
    with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
        y[tp.tensor([], dtype=tp.int64), tp.tensor([9])] = tp.ones(0)


def test_nonempty_result_still_checks_every_index_first_bad_dim_named():
    x = _x(2, 3)
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 2"):
        x[tp.tensor([9]), tp.tensor([7])]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 1 with size 3"):
        x[tp.tensor([1]), tp.tensor([-4])]
    with pytest.raises(IndexError, match="out of bounds"):
        x[tp.tensor([9]), tp.tensor([1])] = 2.0
    assert x.tolist() == _x(2, 3).tolist()


# -- the module-level functions ------------------------------------------------------------------
def test_views_are_views_of_the_input():
    x = _x(2, 3, 4)
    for y in [tp.movedim(x, 0, 2), tp.moveaxis(x, (0, 1), (2, 0)), tp.swapdims(x, 0, 2),
              tp.adjoint(x), tp.diagonal(x, 1, 1, 2), tp.ravel(x), tp.atleast_2d(x[0, 0]),
              tp.atleast_3d(x[0]), *tp.tensor_split(x, 3, 2), *tp.hsplit(x, 3),
              *tp.vsplit(x, [1]), *tp.dsplit(x, 2)]:
        assert y._base is x
        v = x._version
        y.add_(0)
        assert x._version > v
    for f in (tp.conj, tp.resolve_conj, tp.resolve_neg, tp.real, tp.positive, tp.conj_physical,
              tp.atleast_1d, tp.atleast_2d, tp.atleast_3d):
        assert f(x) is x
    t = x.transpose(0, 2)
    r = tp.ravel(t)
    assert r._base is None and r.tolist() == t.reshape(-1).tolist()


def test_moved_dims_match_permute():
    x = _x(2, 3, 4, 5)
    assert tp.movedim(x, (0, 3), (1, 0)).shape == x.permute(3, 0, 1, 2).shape
    assert tp.movedim(x, (0, 3), (1, 0)).tolist() == x.permute(3, 0, 1, 2).tolist()
    assert tp.movedim(input=x, source=-1, destination=0).tolist() == \
        x.permute(3, 0, 1, 2).tolist()
    with pytest.raises(RuntimeError):
        tp.movedim(x, (0, 1), (2,))
    with pytest.raises(RuntimeError):
        tp.movedim(x, (0, 0), (1, 2))
    with pytest.raises(IndexError):
        tp.movedim(x, 4, 0)


def test_atleast_forms():
    s, v, m = tp.tensor(1.0), tp.ones(3), tp.ones(2, 3)
    assert tp.atleast_1d(s).shape == (1,) and tp.atleast_2d(s).shape == (1, 1)
    assert tp.atleast_2d(v).shape == (1, 3) and tp.atleast_3d(v).shape == (1, 3, 1)
    assert tp.atleast_3d(m).shape == (2, 3, 1)
    many = tp.atleast_2d(s, v, m)
    assert isinstance(many, tuple) and [t.shape for t in many] == [(1, 1), (1, 3), (2, 3)]
    assert [t.shape for t in tp.atleast_3d([s, v])] == [(1, 1, 1), (1, 3, 1)]
    assert isinstance(tp.atleast_1d([s]), tuple) and tp.atleast_1d() == ()
    with pytest.raises(TypeError):
        tp.atleast_1d(1.0)


def test_stacks_compose_cat():
    a, b = _x(3, grad=True), _x(3, 2, grad=True)
    out = tp.column_stack([a, b])
    assert out.tolist() == tp.cat([a.reshape(3, 1), b], 1).tolist()
    assert tp.hstack([a, a]).tolist() == tp.cat([a, a]).tolist()
    assert tp.vstack([a, a]).shape == (2, 3) and tp.row_stack is tp.vstack
    assert tp.hstack([tp.tensor(1), tp.ones(2)]).dtype is tp.float32
    assert gradcheck(lambda a, b: tp.column_stack([a, b]), (a, b))
    assert gradcheck(lambda a: tp.vstack([a, a * 2]), (a,))
    for f in (tp.hstack, tp.vstack, tp.column_stack):
        with pytest.raises(RuntimeError):
            f([])
        with pytest.raises(TypeError):
            f(a)
    o = tp.empty(0, dtype=tp.float64)
    assert tp.hstack([a.detach(), a.detach()], out=o) is o and o.shape == (6,)


def test_reductions_and_gradients():
    m = _x(3, 4, grad=True)
    assert tp.trace(m).item() == sum(m[i, i].item() for i in range(3))
    assert gradcheck(tp.trace, (m,))
    with pytest.raises(RuntimeError):
        tp.trace(_x(2, 2, 2))
    assert tp.trace(tp.ones(2, 2, dtype=tp.int32)).dtype is tp.int64
    n = tp.tensor([[1.0, float("nan")], [2.0, 3.0]], requires_grad=True)
    assert tp.nansum(n).item() == 6.0 and tp.nansum(n, 1).tolist() == [1.0, 5.0]
    assert tp.nanmean(n).item() == 2.0 and tp.nanmean(n, 0, True).tolist() == [[1.5, 3.0]]
    assert tp.count_nonzero(tp.tensor([[0, 1], [2, 0]]), 0).tolist() == [1, 1]
    assert tp.cumprod(_x(2, 3), 1).tolist() == _x(2, 3).cumprod(1).tolist()
    assert gradcheck(lambda t: tp.cumprod(t, 0), (_x(4, grad=True),))
    with pytest.raises(RuntimeError):
        tp.nanmean(tp.tensor([1, 2]))


def test_logcumsumexp_stable_and_differentiable():
    x = tp.tensor([-1000.0, 0.0, 3.0, -2000.0, float("-inf"), 50.0, 49.0], dtype=tp.float64)
    y = tp.logcumsumexp(x, 0).tolist()
    ref, acc = [], float("-inf")           # a running log-add-exp in Python floats
    for v in x.tolist():
        hi, lo = max(acc, v), min(acc, v)
        acc = hi if lo == float("-inf") else hi + math.log1p(math.exp(lo - hi))
        ref.append(acc)
    assert y == pytest.approx(ref, rel=1e-12)
    t = _x(3, 5, grad=True) / 3
    assert tp.allclose(tp.logcumsumexp(t, 1), tp.log(tp.cumsum(tp.exp(t), 1)), rtol=1e-12)
    assert t.logcumsumexp(-1).tolist() == tp.logcumsumexp(t, -1).tolist()
    assert gradcheck(lambda a: tp.logcumsumexp(a, 1), (_x(2, 6, grad=True) / 4,))
    assert tp.logcumsumexp(tp.tensor(2.0), 0).item() == 2.0
    assert tp.logcumsumexp(tp.zeros(2, 0), 1).shape == (2, 0)
    with pytest.raises(NotImplementedError):
        tp.logcumsumexp(tp.tensor([1, 2]), 0)
    with pytest.raises(IndexError):
        tp.logcumsumexp(t, 2)


def test_take_diag_and_aliases():
    x = _x(2, 3, grad=True)
    assert tp.take(x, tp.tensor([[0, -1]])).tolist() == [[x[0, 0].item(), x[1, 2].item()]]
    assert gradcheck(lambda a: tp.take(a, tp.tensor([0, 0, 5])), (x,))
    assert tp.take_along_dim(x, tp.tensor([[2], [0]]), 1).tolist() == \
        tp.gather(x, 1, tp.tensor([[2], [0]])).tolist()
    assert tp.diag_embed(_x(2, 3)).shape == (2, 3, 3)
    assert tp.diagonal(tp.diag_embed(_x(2, 3)), 0, -2, -1).tolist() == _x(2, 3).tolist()
    assert tp.multiply is tp.mul and tp.subtract is tp.sub and tp.divide is tp.div
    assert tp.negative is tp.neg and tp.absolute is tp.abs and tp.fix is tp.trunc
    assert tp.rsub(x, 1.0, alpha=2).tolist() == (1.0 - 2 * x).tolist()
    assert tp.true_divide(tp.tensor([3, 4]), 2).tolist() == [1.5, 2.0]
    assert not tp.is_conj(x) and not tp.is_complex(x) and tp.isreal(x).all().item()
    assert tp.is_nonzero(tp.tensor([2.0])) is True
    with pytest.raises(RuntimeError, match="non-complex"):
        tp.imag(x)
    with pytest.raises(RuntimeError):
        tp.adjoint(tp.ones(3))
    for f in (tp.ravel, tp.trace, tp.take, tp.positive, tp.conj, tp.sgn, tp.lerp):
        with pytest.raises(TypeError, match="must be Tensor"):
            f([1.0, 2.0], *([tp.tensor([0])] if f is tp.take else
                            [tp.ones(2), 0.5] if f is tp.lerp else []))


def test_fake_shapes():
    from tensorplay.fake import FakeTensorMode
    with FakeTensorMode() as mode:
        x = mode.from_tensor(tp.ones(2, 3, 4)) if hasattr(mode, "from_tensor") else \
            tp.empty(2, 3, 4)
        assert tp.movedim(x, 0, -1).shape == (3, 4, 2)
        assert tp.diagonal(x, 0, 1, 2).shape == (2, 3)
        assert tp.hstack([x, x]).shape == (2, 6, 4)
        assert tp.logcumsumexp(x, 1).shape == (2, 3, 4)


def test_module_inplace_forms_are_the_methods():
    for name, args in [("clamp_", (0.0, 1.0)), ("clamp_min_", (0.5,)), ("clamp_max_", (0.5,)),
                       ("clip_", (None, 0.5)), ("zero_", ()), ("fill_", (3.0,)),
                       ("sqrt_", ()), ("relu_", ()), ("nan_to_num_", ())]:
        a, b = tp.tensor([0.25, 2.0, -1.0]), tp.tensor([0.25, 2.0, -1.0])
        va = a._version
        r = getattr(tp, name)(a, *args)
        getattr(b, name)(*args)
        assert r is a and a._version > va
        assert a.isnan().tolist() == b.isnan().tolist()
        assert tp.nan_to_num(a).tolist() == tp.nan_to_num(b).tolist(), name
    leaf = tp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        tp.clamp_(leaf, 0, 1)
    with pytest.raises(RuntimeError):
        tp.clamp_(tp.tensor([1, 2]), 0.5)            # a float bound into an int tensor
    with pytest.raises(TypeError, match="must be Tensor"):
        tp.zero_([1.0])


def test_module_method_forms():
    m = tp.tensor([[1.0, 2.0, 3.0], [4.0, -5.0, 6.0]], requires_grad=True)
    assert tp.msort(m).tolist() == m.msort().tolist()
    assert tp.diff(m, 1, 1).tolist() == (m[:, 1:] - m[:, :-1]).tolist()
    assert tp.inner(m, m).tolist() == (m @ m.t()).tolist()
    assert gradcheck(lambda a: tp.addcmul(a, a, a, value=0.5), (_x(3, grad=True),))
    assert gradcheck(lambda a: tp.cross(a, a.flip(0) * 2, dim=0), (_x(3, 2, grad=True),))
    assert tp.bincount(tp.tensor([0, 2, 2])).tolist() == [1, 0, 2]
    assert tp.greater is tp.gt and tp.less_equal is tp.le and tp.not_equal is tp.ne
    assert tp.arccos is tp.acos and tp.ger is tp.outer
    assert tp.is_same_size(m, tp.ones(2, 3)) and tp.is_signed(m) and not tp.is_neg(m)
    o = tp.empty(0)
    assert tp.mv(m.detach(), tp.ones(3), out=o) is o and o.tolist() == [6.0, 5.0]
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        tp.mv(m, tp.ones(3), out=tp.empty(0))


def test_scatter_functions_copy_and_differentiate():
    x, s = _x(3, 4, grad=True), _x(4, grad=True)
    y = tp.select_scatter(x, s, 0, 1)
    assert y[1].tolist() == s.tolist() and y[0].tolist() == x[0].tolist()
    assert x.tolist() == _x(3, 4).tolist()                   # the input is not written
    assert gradcheck(lambda a, b: tp.select_scatter(a, b, 0, 1), (x, s))
    d = _x(3, grad=True)
    assert tp.diagonal_scatter(x, d).diagonal().tolist() == d.tolist()
    assert gradcheck(lambda a, b: tp.diagonal_scatter(a, b), (x, d))
    w = _x(3, 2, grad=True)
    assert tp.slice_scatter(x, w, 1, 0, None, 2)[:, ::2].tolist() == w.tolist()
    assert gradcheck(lambda a, b: tp.slice_scatter(a, b, 1, 0, None, 2), (x, w))
    with pytest.raises(RuntimeError, match="src size = \\[3\\], slice size = \\[4\\]"):
        tp.select_scatter(x, d, 0, 0)


def test_broadcast_shapes_result_type_can_cast():
    assert tp.broadcast_shapes(2, (3, 1)) == tp.broadcast_tensors(tp.ones(2),
                                                                  tp.ones(3, 1))[0].shape
    assert tp.broadcast_shapes() == ()
    with pytest.raises(RuntimeError):
        tp.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError):
        tp.broadcast_shapes((-1,))
    assert tp.result_type(tp.tensor([1, 2]), 1.5) == (tp.tensor([1, 2]) + 1.5).dtype
    assert tp.result_type(tp.tensor([1], dtype=tp.int8), tp.tensor(3)) is tp.int8
    assert tp.result_type(1, 2.0) == tp.get_default_dtype()
    assert tp.can_cast(tp.int32, tp.float16) and not tp.can_cast(tp.float32, tp.int64)
    assert tp.can_cast(tp.bool, tp.uint8)
    with pytest.raises(TypeError):
        tp.can_cast("bool", tp.uint8)            # strings are not dtypes, as in torch


def test_index_factories_searching_kron_block_diag():
    r, c = tp.tril_indices(3, 4, 1).tolist()
    assert all(j - i <= 1 for i, j in zip(r, c)) and len(r) == 9
    assert tp.tril_indices(3, 4, 1).shape[1] + tp.triu_indices(3, 4, 2).shape[1] == 12
    assert tp.triu_indices(0, 0).shape == (2, 0)
    seq, v = tp.tensor([1.0, 3.0, 3.0, 5.0]), tp.tensor([3.0, 0.0, 9.0])
    assert tp.searchsorted(seq, v).tolist() == [sum(s < x for s in seq.tolist()) for x in
                                                v.tolist()]
    assert tp.searchsorted(seq, v, side="right").tolist() == \
        [sum(s <= x for s in seq.tolist()) for x in v.tolist()]
    assert tp.bucketize(v, seq).tolist() == tp.searchsorted(seq, v).tolist()
    assert tp.searchsorted(seq, v, out_int32=True).dtype is tp.int32
    with pytest.raises(RuntimeError):
        tp.searchsorted(seq, v, right=True, side="left")
    a, b = _x(2, 2, grad=True), _x(1, 3, grad=True)
    k = tp.kron(a, b)
    assert k.shape == (2, 6) and k[1, 4].item() == a[1, 1].item() * b[0, 1].item()
    assert gradcheck(tp.kron, (a, b))
    bd = tp.block_diag(a, b, tp.tensor(2.0, dtype=tp.float64))
    assert bd.shape == (4, 6) and bd[2:3, 2:5].tolist() == b.tolist() and bd[3, 5].item() == 2.0
    assert bd.sum().item() == pytest.approx(a.sum().item() + b.sum().item() + 2.0)
    assert gradcheck(lambda p, q: tp.block_diag(p, q), (a, b))
    with pytest.raises(RuntimeError, match="2 or fewer"):
        tp.block_diag(tp.ones(1, 1, 1))


def test_signbit_unique_consecutive_movedim_0d():
    x = tp.tensor([-0.0, 0.0, -2.0, 3.0, -float("inf")])
    assert tp.signbit(x).tolist() == [math.copysign(1.0, v) < 0 for v in x.tolist()]
    assert tp.signbit(tp.tensor([-1, 0, 2])).tolist() == [True, False, False]
    assert tp.signbit(tp.tensor([True])).dtype is tp.bool
    v = tp.tensor([1, 1, 2, 2, 3, 1, 1])
    vals, inv, counts = tp.unique_consecutive(v, return_inverse=True, return_counts=True)
    assert vals[inv].tolist() == v.tolist()                  # the inverse maps back
    assert counts.sum().item() == v.numel() and counts.tolist() == [2, 2, 1, 2]
    assert all(a != b for a, b in zip(vals.tolist(), vals.tolist()[1:]))
    m = tp.tensor([[1, 2], [1, 2], [3, 4]])
    u, i, c = tp.unique_consecutive(m, True, True, dim=0)
    assert u.index_select(0, i).tolist() == m.tolist() and c.tolist() == [2, 1]
    assert tp.unique_consecutive(v).tolist() == vals.tolist()
    s = tp.tensor(5.0)
    assert tp.movedim(s, 0, -1)._base is s and tp.movedim(s, 0, 0).item() == 5.0
    with pytest.raises(IndexError):
        tp.movedim(s, 1, 0)


def test_combinations_and_new_methods():
    import itertools
    x = _x(4, grad=True)
    c = tp.combinations(x, 3)
    assert c.tolist() == [list(t) for t in itertools.combinations(x.tolist(), 3)]
    assert gradcheck(lambda a: tp.combinations(a, 2, True), (x,))
    assert tp.combinations(x, 0).shape == (0,) and tp.combinations(x, 5).shape == (0, 5)
    with pytest.raises(RuntimeError, match="1D"):
        tp.combinations(tp.ones(2, 2))
    m = _x(2, 3)
    assert m.signbit().tolist() == tp.signbit(m).tolist()
    assert m.kron(m).tolist() == tp.kron(m, m).tolist()
    assert m.select_scatter(tp.ones(3, dtype=tp.float64), 0, 1).tolist() == \
        tp.select_scatter(m, tp.ones(3, dtype=tp.float64), 0, 1).tolist()
    assert m.diagonal_scatter(tp.ones(2, dtype=tp.float64)).diagonal().tolist() == [1.0, 1.0]
    assert m.slice_scatter(tp.ones(2, 1, dtype=tp.float64), 1, 2)[:, 2].tolist() == [1.0, 1.0]
    assert m.unique_consecutive(dim=1).tolist() == m.tolist()
