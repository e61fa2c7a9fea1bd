"""Session 46 (h-ops46), torch-free: divergences from torch a user could meet and torch functions
that were missing. Companion of tests/torch_bridge/test_ops_differential46.py (against torch).

1. ``relu``: torch's ``x < 0 ? 0 : x`` (``relu(-0.0)`` is ``-0.0``, NaN passes) on every path
   (the cpu kernel at every size and layout, float16/32/64, the compiled chain), and its backward
   torch's ``threshold_backward`` (``g`` where the output is not ``<= 0``, else exactly 0: an
   infinite or NaN gradient at a zero output gives 0, not NaN), eager and with ``create_graph``.
"""

from __future__ import annotations

import math
import warnings

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
        # values as on cpu; the zeros' signs by torch's cuda rule, an order with -0.0 below 0.0
        # (relu(-0.0) is 0.0 there, where torch's cpu keeps -0.0: test_zero_ties_cuda59)
        assert np.array_equal(np.asarray(yc.cpu().tolist()), np.asarray(tp.relu(x).tolist()),
                              equal_nan=True)
        assert _signbits(yc.cpu()) == [s and v != 0 for s, v in
                                       zip(_signbits(tp.relu(x)), tp.relu(x).tolist())]
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


# -- 4. torch functions that were missing (NumPy's as the reference) ---------------------------
def _a(t):
    return t.detach().numpy()


def test_logspace_values_dtypes_and_out():
    np.testing.assert_allclose(_a(tp.logspace(-1.5, 3.25, 7)), np.logspace(-1.5, 3.25, 7),
                               rtol=1e-6)
    np.testing.assert_allclose(_a(tp.logspace(0, 3, 4, base=2.0, dtype=tp.float64)),
                               [1, 2, 4, 8], rtol=0)
    assert tp.logspace(0, 2, 3, dtype=tp.int64).tolist() == [1, 10, 100]
    assert tp.logspace(0, 2, 0).shape == (0,) and tp.logspace(2, 5, 1).tolist() == [100.0]
    assert tp.logspace(0, 1, 3, requires_grad=True).requires_grad
    o = tp.empty(0, dtype=tp.float64)
    assert tp.logspace(0, 1, 2, out=o) is o and o.tolist() == [1.0, 10.0]
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        tp.logspace(0, 1, -1)


def test_isin_against_numpy():
    rng = np.random.default_rng(8)
    a = rng.integers(0, 20, (4, 6))
    b = rng.integers(0, 20, 9)
    assert tp.isin(tp.tensor(a), tp.tensor(b)).tolist() == np.isin(a, b).tolist()
    assert tp.isin(tp.tensor(a), tp.tensor(b), invert=True).tolist() == \
        np.isin(a, b, invert=True).tolist()
    f = tp.tensor([1.0, NAN, 2.5, -0.0])
    assert tp.isin(f, tp.tensor([NAN, 2.5, 0.0])).tolist() == [False, False, True, True]
    assert tp.isin(tp.tensor([1, 2, 3]), tp.tensor([1.5, 2.0])).tolist() == [False, True, False]
    assert tp.isin(2, tp.tensor([1, 2])).item() is True
    assert tp.isin(tp.tensor([1, 2]), 2).tolist() == [False, True]
    assert tp.isin(tp.tensor([1, 2]), tp.tensor([], dtype=tp.int64)).tolist() == [False, False]
    with pytest.raises(TypeError):
        tp.isin(1, 2)
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        tp.isin(tp.tensor([True]), tp.tensor([1]))


@pytest.mark.parametrize("N", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander_values_and_gradient(N, increasing):
    x = np.array([0.5, -2.0, 3.0, 1.25])
    v = tp.vander(tp.tensor(x), N=N, increasing=increasing)
    np.testing.assert_allclose(_a(v), np.vander(x, N, increasing), rtol=1e-15)
    assert tp.vander(tp.tensor([1, 2], dtype=tp.int32), N=N).dtype is tp.int64
    # d/dx x**k = k x**(k-1): summed over the columns
    t = tp.tensor(x, requires_grad=True)
    n = len(x) if N is None else N
    r = tp.vander(t, N=N, increasing=increasing)
    assert r.requires_grad is (n > 1)      # all ones for N <= 1: no history (torch's too)
    if n > 1:
        r.sum().backward()
        want = sum(k * x ** (k - 1) for k in range(1, n))
        np.testing.assert_allclose(_a(t.grad), want, rtol=1e-14)


def test_vander_errors():
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor"):
        tp.vander(tp.ones(2, 2))
    with pytest.raises(RuntimeError, match="N must be non-negative"):
        tp.vander(tp.ones(2), N=-1)


def test_histc_and_histogram_against_numpy():
    rng = np.random.default_rng(9)
    r = rng.standard_normal(5000)
    for bins, rng_ in ((10, None), (7, (-1.0, 2.0)), (1, (0.0, 1.0))):
        h, e = np.histogram(r, bins, range=rng_)
        got = tp.histogram(tp.tensor(r), bins, range=rng_)
        assert isinstance(got, tp.return_types.histogram)
        np.testing.assert_allclose(_a(got.bin_edges), e, rtol=1e-12)
        assert _a(got.hist).tolist() == h.astype(float).tolist()
        hd, _ = np.histogram(r, bins, range=rng_, density=True)
        np.testing.assert_allclose(_a(tp.histogram(tp.tensor(r), bins, range=rng_,
                                                   density=True).hist), hd, rtol=1e-12)
        w = rng.random(5000)
        hw, _ = np.histogram(r, bins, range=rng_, weights=w)
        np.testing.assert_allclose(_a(tp.tensor(r).histogram(bins, range=rng_,
                                                             weight=tp.tensor(w)).hist), hw,
                                   rtol=1e-12)
        lo, hi = rng_ or (0, 0)
        hc = tp.histc(tp.tensor(r), bins, lo, hi)
        assert _a(hc).tolist() == h.astype(float).tolist() and hc.dtype is tp.float64
    edges = np.array([-3.0, -0.5, 0.0, 0.25, 4.0])
    h, _ = np.histogram(r, edges)
    assert _a(tp.histogram(tp.tensor(r), tp.tensor(edges)).hist).tolist() == h.tolist()
    # ends: the data's range (histc: min == max), widened when all equal; NaN not counted
    assert tp.histc(tp.tensor([1.0, 1.0]), bins=4).tolist() == [0.0, 0.0, 2.0, 0.0]
    assert tp.histc(tp.tensor([1.0, 2, NAN]), 4, 0, 3).tolist() == [0.0, 1.0, 1.0, 0.0]
    assert tp.histogram(tp.tensor([]), 2).bin_edges.tolist() == [0.0, 0.5, 1.0]


def test_histc_histogram_errors():
    with pytest.raises(RuntimeError, match="is not finite"):
        tp.histc(tp.tensor([1.0, NAN]))
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        tp.histc(tp.tensor([1.0]), 3, 3, 1)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        tp.histc(tp.tensor([1.0]), 0)
    with pytest.raises(NotImplementedError, match="'Long'"):
        tp.histc(tp.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="min should not exceed max"):
        tp.histogram(tp.tensor([1.0]), 2, range=(3.0, 1.0))
    with pytest.raises(RuntimeError, match="same dtype"):
        tp.histogram(tp.tensor([1.0]), tp.tensor([0.0, 1.0], dtype=tp.float64))


def test_cov_corrcoef_against_numpy():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 8))
    fw = rng.integers(0, 4, 8)
    aw = rng.random(8)
    for corr in (0, 1, 2):
        np.testing.assert_allclose(_a(tp.cov(tp.tensor(x), correction=corr)),
                                   np.cov(x, ddof=corr), rtol=1e-12)
        np.testing.assert_allclose(
            _a(tp.cov(tp.tensor(x), correction=corr, fweights=tp.tensor(fw),
                      aweights=tp.tensor(aw))),
            np.cov(x, ddof=corr, fweights=fw, aweights=aw), rtol=1e-12)
    np.testing.assert_allclose(_a(tp.tensor(x).corrcoef()), np.corrcoef(x), rtol=1e-12)
    assert tp.cov(tp.tensor([1, 2, 4])).dtype is tp.float32
    assert tp.cov(tp.tensor(x[0])).shape == ()
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert math.isinf(tp.cov(tp.tensor([[1.0, 2, 4]]), correction=5).item())
    t = tp.tensor(x, requires_grad=True)
    tp.corrcoef(t).sum().backward()
    assert t.grad.shape == (3, 8) and np.isfinite(_a(t.grad)).all()


_NP_METHOD = {"linear": "linear", "lower": "lower", "higher": "higher", "midpoint": "midpoint",
              "nearest": "nearest"}


@pytest.mark.parametrize("interpolation", list(_NP_METHOD))
def test_quantile_against_numpy(interpolation):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 7, 3))
    q = [0.0, 0.1, 0.5, 0.77, 1.0]
    m = _NP_METHOD[interpolation]
    for dim in (None, 0, 1, -1):
        for keepdim in (False, True):
            got = tp.quantile(tp.tensor(a), tp.tensor(q, dtype=tp.float64), dim, keepdim,
                              interpolation=interpolation)
            want = np.quantile(a, q, axis=dim, keepdims=keepdim, method=m)
            np.testing.assert_allclose(_a(got), want, rtol=1e-12)
            got1 = tp.tensor(a).quantile(0.3, dim, keepdim, interpolation=interpolation)
            np.testing.assert_allclose(_a(got1), np.quantile(a, 0.3, axis=dim,
                                                             keepdims=keepdim, method=m),
                                       rtol=1e-12)
    b = a.copy()
    b[0, 0, :] = np.nan     # (an all-NaN slice: NumPy warns, NaN either way)
    b[1, 2, 1] = np.nan
    for dim in (None, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.nanquantile(b, q, axis=dim, method=m)
        np.testing.assert_allclose(
            _a(tp.nanquantile(tp.tensor(b), tp.tensor(q, dtype=tp.float64), dim,
                              interpolation=interpolation)), want, rtol=1e-12)
        np.testing.assert_allclose(
            _a(tp.quantile(tp.tensor(b), 0.5, dim, interpolation=interpolation)),
            np.quantile(b, 0.5, axis=dim, method=m), rtol=1e-12)


def test_quantile_gradient_and_errors():
    x = tp.tensor([3.0, 1.0, 2.0, 4.0], requires_grad=True)
    tp.quantile(x, 0.5).backward()          # the mean of 2 and 3
    assert x.grad.tolist() == [0.5, 0.0, 0.5, 0.0]
    with pytest.raises(RuntimeError, match="input tensor must be either float or double"):
        tp.quantile(tp.tensor([1, 2]), 0.5)
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.5"):
        tp.quantile(tp.tensor([1.0, 2.0]), 1.5)
    with pytest.raises(RuntimeError, match="q tensor must be same dtype"):
        tp.quantile(tp.tensor([1.0, 2.0]), tp.tensor([0.5], dtype=tp.float64))
    with pytest.raises(RuntimeError, match="interpolation must be one of"):
        tp.nanquantile(tp.tensor([1.0, 2.0]), 0.5, interpolation="foo")
    with pytest.raises(RuntimeError, match="input tensor must be non-empty"):
        tp.quantile(tp.tensor([]), 0.5)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_against_numpy(edge_order):
    rng = np.random.default_rng(12)
    a = rng.standard_normal((5, 6))
    for got, want in zip(tp.gradient(tp.tensor(a), edge_order=edge_order),
                         np.gradient(a, edge_order=edge_order)):
        np.testing.assert_allclose(_a(got), want, rtol=1e-12, atol=1e-14)
    (g1,) = tp.gradient(tp.tensor(a), spacing=2.5, dim=1, edge_order=edge_order)
    np.testing.assert_allclose(_a(g1), np.gradient(a, 2.5, axis=1, edge_order=edge_order),
                               rtol=1e-12, atol=1e-14)
    c0, c1 = np.array([0.0, 1, 3, 3.5, 6]), np.array([0.0, 0.5, 1, 3, 6, 6.5])
    got = tp.gradient(tp.tensor(a), spacing=(tp.tensor(c0), tp.tensor(c1)),
                      edge_order=edge_order)
    for g, w in zip(got, np.gradient(a, c0, c1, edge_order=edge_order)):
        np.testing.assert_allclose(_a(g), w, rtol=1e-12, atol=1e-13)
    assert tp.gradient(tp.tensor([1, 2, 4]))[0].dtype is tp.float32
    with pytest.raises(RuntimeError, match="does not support uint8"):
        tp.gradient(tp.tensor([1, 2, 3], dtype=tp.uint8))
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        tp.gradient(tp.tensor([1.0, 2.0]), edge_order=2)


@pytest.mark.parametrize("p", [1, 2, 3.0, math.inf])
def test_renorm_against_numpy(p):
    rng = np.random.default_rng(13)
    a = rng.standard_normal((4, 3, 2)) * 2
    for dim in (0, 1, 2):
        axes = tuple(i for i in range(3) if i != dim)
        norm = (np.abs(a).max(axis=axes, keepdims=True) if p == math.inf else
                (np.abs(a) ** p).sum(axis=axes, keepdims=True) ** (1 / p))
        want = a * np.where(norm > 1.5, 1.5 / (norm + 1e-7), 1.0)
        np.testing.assert_allclose(_a(tp.renorm(tp.tensor(a), p, dim, 1.5)), want,
                                   rtol=1e-12)
        t = tp.tensor(a)
        assert t.renorm_(p, dim, 1.5) is t
        np.testing.assert_allclose(_a(t), want, rtol=1e-12)
    x = tp.tensor(a, requires_grad=True)
    tp.renorm(x, p, 0, 1.5).sum().backward()
    assert np.isfinite(_a(x.grad)).all()
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tp.renorm(tp.ones(3), p, 0, 1.0)
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        tp.renorm(tp.ones(3, 2), 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="maxnorm to be >= 0"):
        tp.renorm(tp.ones(3, 2), p, 0, -1.0)


def test_new_functions_are_exported_with_methods():
    for n in ("logspace", "isin", "vander", "histc", "histogram", "cov", "corrcoef",
              "quantile", "nanquantile", "gradient", "renorm"):
        assert n in tp.__all__ and callable(getattr(tp, n))
        assert "Same as ``torch." in getattr(tp, n).__doc__
    for n in ("histc", "histogram", "cov", "corrcoef", "quantile", "nanquantile", "renorm",
              "renorm_"):
        assert callable(getattr(tp.Tensor, n))
