"""Session 46 (h-ops46), torch-free: divergences from torch a user could meet and torch functions
that were missing. Companion of tests/torch_bridge/test_ops_differential46.py (against torch).

1. ``relu``: torch's ``x < 0 ? 0 : x`` (``relu(-0.0)`` is ``-0.0``, NaN passes) on every path
   (the cpu kernel at every size and layout, float16/32/64, the compiled chain), and its backward
   torch's ``threshold_backward`` (``g`` where the output is not ``<= 0``, else exactly 0: an
   infinite or NaN gradient at a zero output gives 0, not NaN), eager and with ``create_graph``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay as tp

INF, NAN = math.inf, math.nan


def _signbits(t):
    return np.signbit(t.detach().float().numpy() if t.dtype is tp.float16 else
                      t.detach().numpy()).tolist()


# -- 1. relu ----------------------------------------------------------------------------------
_RELU_IN = [-0.0, 0.0, -1.0, NAN, 2.0, -INF, INF, -3.5]
_RELU_OUT_SIGN = [True, False, False, None, False, False, False, False]   # None: NaN


@pytest.mark.parametrize("dtype", [tp.float16, tp.float32, tp.float64])
@pytest.mark.parametrize("reps", [1, 3, 600, 9000])   # sizes 8 .. 72000: each cpu kernel path
@pytest.mark.parametrize("layout", ["contiguous", "strided", "2d"])
def test_relu_signed_zero_and_nan(dtype, reps, layout):
    vals = _RELU_IN * reps
    if layout == "strided":
        x = tp.tensor([v for v in vals for _ in (0, 1)], dtype=dtype)[::2]
    elif layout == "2d":
        x = tp.tensor(vals, dtype=dtype).reshape(-1, 8).t()
    else:
        x = tp.tensor(vals, dtype=dtype)
    y = tp.relu(x)
    assert y.dtype is dtype and y.shape == x.shape
    flat = y.reshape(-1) if layout != "2d" else y.t().reshape(-1)
    got = flat.tolist()
    signs = np.signbit(np.asarray(got, dtype=np.float64)).tolist()
    for i, v in enumerate(vals):
        if math.isnan(v):
            assert math.isnan(got[i])
        else:
            assert got[i] == max(v, 0.0)
            assert signs[i] == _RELU_OUT_SIGN[i % 8], (i, v, got[i])
    # the method, the in-place form and the module-level function agree
    assert _signbits(x.relu()) == _signbits(y)
    z = x.clone()
    z.relu_()
    assert _signbits(z) == _signbits(y)


def test_relu_zero_dim_and_ints():
    assert _signbits(tp.relu(tp.tensor(-0.0))) is True
    assert tp.relu(tp.tensor(-0.0)).dtype is tp.float32
    assert tp.relu(tp.tensor([-2, 0, 3])).tolist() == [0, 0, 3]
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        tp.relu(tp.tensor([True]))


def test_relu_compiled_keeps_negative_zero():
    @tp.compile
    def f(x, y):
        return (x * y).relu() + 0.0 * x

    @tp.compile
    def g(x):
        return (x * 1.0).relu()

    x = tp.tensor([-0.0, 0.0, -1.0, NAN, 2.0] * 1000)
    r = g(x)
    assert _signbits(r)[:3] == [True, False, False]
    assert math.isnan(r[3].item()) and r[4].item() == 2.0
    assert _signbits(g(x))[:3] == [True, False, False]     # (the cached, fused run)
    a = tp.tensor([1.0, -1.0, 2.0] * 100)
    b = tp.tensor([-0.0, 0.0, -3.0] * 100)
    r = f(a, b)            # 1 * -0.0 = -0.0 -> relu -> -0.0; + (0 * 1 = 0): -0.0 + 0.0 = +0.0
    assert r[:3].tolist() == [0.0, 0.0, 0.0]


def _relu_grad(x, g, create_graph=False):
    x = x.detach().requires_grad_()
    y = tp.relu(x)
    (gx,) = tp.autograd.grad(y, [x], g, create_graph=create_graph)
    return gx


@pytest.mark.parametrize("dtype", [tp.float16, tp.float32, tp.float64])
@pytest.mark.parametrize("reps", [1, 600, 9000])
@pytest.mark.parametrize("create_graph", [False, True])
def test_relu_backward_is_threshold_backward(dtype, reps, create_graph):
    # output 0 (x <= 0) -> gradient exactly 0 whatever g is (inf, -inf, NaN); output > 0 or NaN
    # -> g passes (inf, NaN included)
    xs = [0.0, -1.0, -0.0, 0.0, 2.0, NAN, 3.0, -INF]
    gs = [INF, -INF, NAN, 1.0, INF, 5.0, NAN, NAN]
    want = [0.0, 0.0, 0.0, 0.0, INF, 5.0, NAN, 0.0]
    x = tp.tensor(xs * reps, dtype=dtype)
    g = tp.tensor(gs * reps, dtype=dtype)
    gx = _relu_grad(x, g, create_graph)
    assert gx.dtype is dtype
    got = gx.tolist()
    for i, w in enumerate(want * reps):
        if math.isnan(w):
            assert math.isnan(got[i]), i
        else:
            assert got[i] == w and not np.signbit(got[i]), (i, got[i], w)


def test_relu_backward_broadcast_gradient():
    # sum's gradient is a broadcast (stride-0) tensor; an inf there must still give 0 at zeros
    x = tp.tensor([[-1.0, 2.0], [0.0, -0.0]], requires_grad=True)
    (tp.relu(x) * INF).sum().backward()
    # d/dy of (y * inf) is inf everywhere; relu's backward zeroes it where the output is 0
    assert x.grad.tolist() == [[0.0, INF], [0.0, 0.0]]


def test_relu_double_backward():
    x = tp.tensor([-1.0, 2.0, 0.0], requires_grad=True)
    y = tp.relu(x)
    (gx,) = tp.autograd.grad(y.sum(), [x], create_graph=True)
    assert gx.tolist() == [0.0, 1.0, 0.0]
    assert gx.requires_grad is False or gx.grad_fn is not None


def _need_cuda():
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")


@pytest.mark.cuda
@pytest.mark.parametrize("reps", [1, 600, 300000])   # the CuPy kernel and the large (Triton) path
def test_relu_cuda_matches_cpu(reps):
    _need_cuda()
    xs = [0.0, -1.0, -0.0, 0.0, 2.0, NAN, 3.0, -INF]
    gs = [INF, -INF, NAN, 1.0, INF, 5.0, NAN, NAN]
    for dtype in (tp.float16, tp.float32, tp.float64):
        x = tp.tensor(xs * reps, dtype=dtype)
        g = tp.tensor(gs * reps, dtype=dtype)
        yc = tp.relu(x.to("cuda"))
        assert _signbits(yc.cpu()) == _signbits(tp.relu(x))
        a = np.asarray(_relu_grad(x.to("cuda"), g.to("cuda")).cpu().tolist())
        b = np.asarray(_relu_grad(x, g).tolist())
        assert np.array_equal(a, b, equal_nan=True)


# -- 3. searchsorted / bucketize: a binary search (tp::searchsorted) --------------------------
def _count_search(seq, vals, right):
    """torch's answer for a sorted row: the count of elements e with !(e >= v) (right: !(e > v))."""
    return sum(1 for e in seq if not (e > vals if right else e >= vals))


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.int64, tp.int32])
def test_searchsorted_matches_the_count(right, dtype):
    rng = np.random.default_rng(5)
    seq = np.sort(rng.integers(-20, 20, 37)).astype(np.float64)
    vals = rng.integers(-25, 25, (4, 9)).astype(np.float64)
    if dtype.is_floating_point:
        vals[0, :3] = [np.nan, np.inf, -np.inf]
    s, v = tp.tensor(seq, dtype=dtype), tp.tensor(vals, dtype=dtype)
    r = tp.searchsorted(s, v, right=right)
    assert r.dtype is tp.int64 and r.shape == (4, 9)
    want = [[_count_search(s.tolist(), x, right) for x in row] for row in v.tolist()]
    assert r.tolist() == want
    assert tp.searchsorted(s, v, side="right" if right else "left").tolist() == want
    assert tp.searchsorted(s, v, right=right, out_int32=True).dtype is tp.int32
    # rows: each row of a 2-D sequence searched for its own values
    seq2 = np.sort(rng.integers(-20, 20, (4, 11)), axis=1).astype(np.float64)
    s2 = tp.tensor(seq2, dtype=dtype)
    r2 = tp.searchsorted(s2, v, right=right)
    want2 = [[_count_search(srow, x, right) for x in row]
             for srow, row in zip(s2.tolist(), v.tolist())]
    assert r2.tolist() == want2
    # sorter: the order of an unsorted sequence
    perm = rng.permutation(37)
    unsorted = tp.tensor(seq[perm], dtype=dtype)
    sorter = tp.argsort(unsorted, stable=True)
    assert tp.searchsorted(unsorted, v, right=right, sorter=sorter).tolist() == want
    # bucketize is searchsorted with the operands swapped
    assert tp.bucketize(v, s, right=right).tolist() == want


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 8, 9, 64, 1000])
def test_searchsorted_rows_every_length(n):
    seq = tp.sort(tp.tensor(np.random.default_rng(n).integers(0, 50, (3, n)).astype(np.float32)),
                  -1).values
    v = tp.tensor(np.arange(-1.0, 52.0, 2.5, dtype=np.float32)).expand(3, -1).contiguous()
    for right in (False, True):
        got = tp.searchsorted(seq, v, right=right).tolist()
        want = [[_count_search(srow, x, right) for x in row]
                for srow, row in zip(seq.tolist(), v.tolist())]
        assert got == want


def test_searchsorted_mixed_dtypes_scalars_and_errors():
    assert tp.searchsorted(tp.tensor([1, 2, 3]), tp.tensor([1.5])).tolist() == [1]
    assert tp.searchsorted(tp.tensor([1.0, 2, 3]), tp.tensor([1])).tolist() == [0]
    r = tp.searchsorted(tp.tensor([1.0, 2, 3]), 2, right=True)
    assert r.shape == () and r.item() == 2
    assert tp.searchsorted(tp.tensor([]), tp.tensor([1.0])).tolist() == [0]
    assert tp.bucketize(tp.tensor([1, 5]), tp.tensor([1.5, 3.0])).tolist() == [0, 2]
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype"):
        tp.searchsorted(tp.tensor([1.0, 2]), tp.tensor([1.0]), sorter=tp.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
        tp.searchsorted(tp.tensor([1.0, 2, 3]), tp.tensor([1.0]), sorter=tp.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        tp.searchsorted(tp.tensor([1.0, 2, 3]), tp.tensor([1.0]), sorter=tp.tensor([0, 1, 5]))
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        tp.searchsorted(tp.ones(2, 3), tp.ones(3, 1))
    with pytest.raises(RuntimeError, match="positive dimension"):
        tp.searchsorted(tp.tensor(1.0), tp.ones(3))
    with pytest.raises(RuntimeError, match="can't be set to opposites"):
        tp.searchsorted(tp.ones(3), tp.ones(1), right=True, side="left")
    o = tp.empty(0, dtype=tp.int64)
    assert tp.searchsorted(tp.tensor([1.0, 2]), tp.tensor([1.5, 3]), out=o) is o
    assert o.tolist() == [1, 2]


def test_searchsorted_is_a_fake_traceable_op():
    from tensorplay.fake import FakeTensorMode
    assert hasattr(tp.ops.tp, "searchsorted")
    with FakeTensorMode():
        r = tp.searchsorted(tp.empty(3, 4), tp.empty(3, 5), out_int32=True)
        assert r.shape == (3, 5) and r.dtype is tp.int32

    @tp.compile
    def f(s, v):
        return tp.searchsorted(s, v * 1.0)
    s = tp.tensor([1.0, 2, 3])
    assert f(s, tp.tensor([0.5, 2.5])).tolist() == [0, 2]


@pytest.mark.cuda
def test_searchsorted_cuda_matches_cpu():
    _need_cuda()
    rng = np.random.default_rng(1)
    s = tp.tensor(np.sort(rng.standard_normal(100)).astype(np.float32))
    s2 = tp.sort(tp.tensor(rng.standard_normal((4, 50)).astype(np.float32)), -1).values
    v = tp.tensor(rng.standard_normal((4, 30)).astype(np.float32))
    for right in (False, True):
        assert tp.searchsorted(s.cuda(), v.cuda(), right=right).cpu().tolist() == \
            tp.searchsorted(s, v, right=right).tolist()
        assert tp.searchsorted(s2.cuda(), v.cuda(), right=right).cpu().tolist() == \
            tp.searchsorted(s2, v, right=right).tolist()


# -- 2. refusals torch makes ------------------------------------------------------------------
@pytest.mark.parametrize("api", ["cumsum", "cumprod"])
def test_cumulative_ops_refuse_bool_dtype(api):
    for x in (tp.tensor([1.0, 2.0]), tp.tensor([True, False]), tp.tensor([[1, 0], [2, 3]])):
        with pytest.raises(NotImplementedError, match=f'"{api}_out_cpu" not implemented for '
                                                      f"'Bool'.*integer dtype"):
            getattr(tp, api)(x, 0, dtype=tp.bool)
        with pytest.raises(NotImplementedError, match="'Bool'"):
            getattr(x, api)(-1, dtype=tp.bool)
        with pytest.raises(NotImplementedError, match="'Bool'"):
            getattr(tp, api)(x, 0, dtype=tp.bool, out=tp.empty(0, dtype=tp.bool))
    # the neighbours torch allows: bool input summed to int64, an explicit integer dtype
    assert getattr(tp, api)(tp.tensor([True, True]), 0).tolist() == \
        ([1, 2] if api == "cumsum" else [1, 1])
    assert getattr(tp, api)(tp.tensor([True, True]), 0, dtype=tp.int32).dtype is tp.int32


def test_cumsum_bool_dtype_refused_under_fake():
    from tensorplay.fake import FakeTensorMode
    with FakeTensorMode():
        with pytest.raises(NotImplementedError, match="'Bool'"):
            tp.ops.tp.cumsum(tp.empty(3), 0, dtype=tp.bool)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("src_kind", ["tensor", "number", "value"])
def test_scatter_with_reduce_has_no_derivative(reduce, src_kind):
    idx = tp.tensor([0, 1])
    x = tp.randn(3, requires_grad=True)
    s = tp.randn(2, requires_grad=True)
    kw = {"value": 2.0} if src_kind == "value" else {}
    args = (s,) if src_kind == "tensor" else ((2.0,) if src_kind == "number" else ())
    r = x.scatter(0, idx, *args, **kw, reduce=reduce)
    assert r.requires_grad and r.grad_fn is not None
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented.*"
                                           "scatter_add|derivative for aten::scatter"):
        r.sum().backward()
    # the values are still the reduction's; without grad nothing is recorded
    base = tp.zeros(3)
    v = base.scatter(0, idx, tp.tensor([2.0, 3.0]), reduce=reduce)
    assert v.tolist() == ([2.0, 3.0, 0.0] if reduce == "add" else [0.0, 0.0, 0.0])
    assert not v.requires_grad
    with tp.no_grad():
        assert not x.scatter(0, idx, 2.0, reduce=reduce).requires_grad
    # the differentiable spellings keep their gradients
    y = x.scatter_add(0, idx, s)
    y.sum().backward()
    assert s.grad.tolist() == [1.0, 1.0]


def test_scatter_in_place_with_reduce_has_no_derivative():
    x = tp.randn(3, requires_grad=True)
    y = x * 1.0
    y.scatter_(0, tp.tensor([0]), 2.0, reduce="multiply")
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        y.sum().backward()


@pytest.mark.parametrize("api", ["sum", "prod", "median", "nanmedian"])
def test_full_reduction_takes_no_out(api):
    x = tp.tensor([1.0, 2.0, 4.0])
    o = tp.empty(())
    with pytest.raises(TypeError, match=f"{api}\\(\\) received an invalid combination.*give dim"):
        getattr(tp, api)(x, out=o)
    # with a dim, out= works (sum also with dim=None, as torch)
    r = getattr(tp, api)(x, 0, out=tp.empty(0) if api in ("sum", "prod") else
                         (tp.empty(0), tp.empty(0, dtype=tp.int64)))
    assert (r if api in ("sum", "prod") else r[0]).tolist() == \
        {"sum": 7.0, "prod": 8.0, "median": 2.0, "nanmedian": 2.0}[api]
    if api == "sum":
        assert tp.sum(x, None, out=o) is o and o.item() == 7.0
        assert tp.sum(x).item() == 7.0 and tp.sum(x, dtype=tp.float64).dtype is tp.float64
    if api == "prod":
        with pytest.raises(TypeError):
            tp.prod(x, None, out=o)
