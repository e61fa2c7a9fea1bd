"""Eager ``sum``/``mean``/``amax``/``amin`` along dims on cuda as generated Triton kernels
(``tensorplay_cuda.reduce``): the plans, the kernels' values, the per-call launch path.

Without a GPU: the kernels run through Triton's interpreter on NumPy arrays, behind the public
API (``Tensor.sum``, ``tp.amax``...) of a test device whose kernel table ``reduce.accelerate``
wraps as it wraps the cuda table; the per-call path (warm-up, compile, one launch, fallbacks)
runs on CuPy arrays over host memory with a recording compiler. ``@pytest.mark.cuda`` tests run
the compiled kernels through the real direct launch on the GPU.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import types
import warnings

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("triton", reason="triton is not installed")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
pytest.importorskip("tensorplay_cuda")

import tensorplay as tp  # noqa: E402
from tensorplay._kernels import lowp  # noqa: E402
from tensorplay.backends import ArrayBackend  # noqa: E402
from tensorplay.testing.backend import MockBackend  # noqa: E402
from tensorplay_cuda import reduce  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")

DTYPES = ["float16", "bfloat16", "float32", "float64"]
TOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-5, "float64": 1e-12}


# ------------------------------------------------------------------------------------------------
# plans: which calls the generated kernels take, and how

def test_plans_classify_trailing_and_leading_dims_and_give_the_reference_shapes():
    p = reduce.plan("sum", (8, 100), [1], False, "float32")
    assert p.out_shape == (8,) and [q[0] for q in p.passes] == ["inner"]
    assert p.passes[0][4] == (8, 100, 1, 100)                # M, N, ndiv, R (one row block)
    p = reduce.plan("mean", (8, 100), [-1], True, "float32")
    assert p.out_shape == (8, 1) and p.passes[0][4] == (8, 100, 100, 100)
    p = reduce.plan("amax", (4, 5, 6), [2, 1], False, "bfloat16")   # trailing dims, any order
    assert p.out_shape == (4,) and p.passes[0][0] == "inner" and p.passes[0][4][:2] == (4, 30)
    p = reduce.plan("sum", (4, 5, 6), [0, 1], True, "float16")
    assert p.out_shape == (1, 1, 6) and p.passes[0][0] == "outer"
    assert p.passes[0][4][:2] == (20, 6) and p.acc == "float32"
    p = reduce.plan("sum", (4, 5, 6), None, False, "float64")        # every dim: M == 1
    assert p.out_shape == () and p.passes[0][4][:2] == (1, 120) and p.acc == "float64"
    assert reduce.plan("sum", (4, 5, 6), [], True, "float32").out_shape == (1, 1, 1)
    # size-1 dims do not change the layout: a (4, 1, 6) reduced over dim 1 is a copy (N == 1),
    # over dims (0, 1) an "outer" problem
    assert reduce.plan("sum", (4, 1, 6), [1], False, "float32").passes[0][4][:2] == (24, 1)
    assert reduce.plan("sum", (4, 1, 6), [0, 1], False, "float32").passes[0][0] == "outer"


def test_plans_leave_to_the_reference_what_the_kernels_do_not_take():
    P = reduce.plan
    assert P("sum", (4, 5, 6), [1], False, "float32") is None        # a middle dim
    assert P("sum", (4, 5, 6), [0, 2], False, "float32") is None
    assert P("mean", (4, 5), [1], False, "int64") is None             # mean: a float dtype
    assert P("mean", (4, 5), None, False, "bool") is None
    assert P("sum", (), None, False, "float32") is None               # 0-d
    assert P("sum", (0, 5), [1], False, "float32") is None            # empty
    assert P("amax", (4, 0), [1], False, "float32") is None
    assert P("sum", (4, 5), [2], False, "float32") is None            # the reference raises
    assert P("sum", (4, 5), [1, -1], False, "float32") is None
    assert P("sum", (4, 5), [True], False, "float32") is None
    assert P("sum", (4, 2 ** 30), [1], False, "float32") is None      # beyond LIMIT
    assert P("sum", (4, 5), [1], False, "uint16") is None             # not a tensorplay dtype


def test_outer_plans_split_long_columns_into_two_launches():
    p = reduce.plan("mean", (600, 20), [0], False, "bfloat16")
    assert len(p.passes) == 2 and p.scratch[1] == 20
    (l1, op1, f1, t1, i1, g1, c1), (l2, op2, f2, t2, i2, g2, c2) = p.passes
    s = p.scratch[0]
    # pass 1: partial sums (no division) of s row blocks into the scratch array
    assert (op1, f1, t1) == ("sum", False, True) and i1[:3] == (600, 20, 1) and g1 == (1, s)
    assert i1[3] % c1["BLOCK_N"] == 0 and i1[3] * s >= 600 > i1[3] * (s - 1)
    # pass 2: the scratch's s rows into the result, divided by the count
    assert (op2, f2, t2) == ("mean", True, False) and i2[:3] == (s, 20, 600) and g2 == (1, 1)
    assert i2[3] >= s
    assert len(reduce.plan("sum", (100, 20), [0], False, "float32").passes) == 1
    # enough column blocks: one launch
    m = reduce.MAX_BLOCK_M * reduce.TARGET_PROGRAMS
    assert len(reduce.plan("amax", (1000, m), [0], False, "float32").passes) == 1


def test_integer_and_bool_plans_accumulate_and_return_as_torch():
    """sum: int64 for bool and every integer dtype (accumulated in int64); amax/amin: the
    input's dtype (compared in int32 for the narrow types, bool as bytes 0/1)."""
    for dt in ("int8", "uint8", "int16", "int32", "int64", "bool"):
        p = reduce.plan("sum", (4, 5), [1], False, dt)
        assert (p.acc, p.out) == ("int64", "int64") and p.ident == 0, dt
        p = reduce.plan("amax", (4, 5), [0], True, dt)
        assert p.out == dt and p.out_shape == (1, 5) and p.passes[0][0] == "outer", dt
        assert p.acc == ("int64" if dt == "int64" else "int32"), dt
    assert reduce.plan("amax", (3,), None, False, "int8").ident == -128
    assert reduce.plan("amin", (3,), None, False, "uint8").ident == 255
    assert reduce.plan("amax", (3,), None, False, "int64").ident == -2 ** 63
    assert reduce.plan("amin", (3,), None, False, "int64").ident == 2 ** 63 - 1
    assert reduce.plan("amax", (3,), None, False, "bool").ident == 0      # or
    assert reduce.plan("amin", (3,), None, False, "bool").ident == 1      # and
    p = reduce.plan("sum", (4, 5), [1], False, "float16")
    assert (p.acc, p.out, p.ident) == ("float32", "float16", None)


def test_few_long_rows_split_into_row_blocks_and_a_second_pass():
    """A full reduction of 2^20 elements (``M == 1``), or a few rows longer than
    ``INNER_MAX_N``: pass 1 reduces blocks of ``R`` elements of each row into an ``(S, M)``
    scratch array; pass 2 (the ``outer`` kernel) reduces its ``S`` rows."""
    p = reduce.plan("sum", (1 << 20,), None, False, "int64")
    (l1, op1, f1, t1, i1, g1, c1), (l2, op2, f2, t2, i2, g2, c2) = p.passes
    s = p.scratch[0]
    assert p.scratch == (s, 1) and p.out_shape == () and 1 < s <= reduce.TARGET_PROGRAMS
    assert (l1, op1, f1, t1) == ("inner", "sum", False, True) and g1 == (1, s)
    assert i1[:3] == (1, 1 << 20, 1) and i1[3] % c1["BLOCK_N"] == 0
    assert i1[3] * s >= 1 << 20 > i1[3] * (s - 1)
    assert (l2, op2, f2, t2) == ("outer", "sum", True, False) and i2[:3] == (s, 1, 1)
    assert g2 == (1, 1) and i2[3] >= s
    p = reduce.plan("mean", (4, reduce.INNER_MAX_N + 1), [1], True, "float32")
    assert [q[1] for q in p.passes] == ["sum", "mean"] and p.out_shape == (4, 1)
    assert p.passes[1][4][:3] == (p.scratch[0], 4, reduce.INNER_MAX_N + 1)
    # up to INNER_MAX_N, or with enough rows: one program per row block, one launch
    assert len(reduce.plan("sum", (reduce.INNER_MAX_N,), None, False, "float32").passes) == 1
    assert len(reduce.plan("sum", (reduce.TARGET_PROGRAMS, reduce.INNER_MAX_N + 1), [1], False,
                           "float32").passes) == 1


# ------------------------------------------------------------------------------------------------
# the kernels' values, through the public API (Triton's interpreter)

class Reducing(lowp.Bfloat16Dtypes, MockBackend):
    """A NumPy test device whose kernel table ``reduce.accelerate`` wraps, as the cuda
    backend's: its reductions run the generated kernels through Triton's interpreter."""

    def kernels(self):
        if self._kernels is None:
            k = ArrayBackend.kernels(self)
            if self._lowp_enabled:
                k = lowp.wrap_kernels(k, self)
            self._kernels = reduce.accelerate(k, self)
        return self._kernels


@pytest.fixture
def dev(monkeypatch):
    """The test device; ``dev.launches`` counts the generated kernels' launches."""
    pytest.importorskip("ml_dtypes")
    launches = []
    real = reduce._interpret

    def counting(kern, grid, args, ce):
        launches.append(kern.__name__ if hasattr(kern, "__name__") else kern)
        return real(kern, grid, args, ce)
    monkeypatch.setattr(reduce, "_interpret", counting)
    with Reducing("redtest") as be:
        be.launches = launches
        yield be


def _np(t):
    """float64 NumPy copy of tensor ``t``."""
    return t.to(tp.float64).cpu().numpy()


def _want(op, a, dims, keepdim):
    """The float64 NumPy reference of ``op`` over ``a`` (float64)."""
    axis = None if dims is None else tuple(dims)
    f = {"sum": np.sum, "mean": np.mean, "amax": np.max, "amin": np.min}[op]
    return f(a, axis=axis, keepdims=keepdim)


CASES = [((6, 50), (1,), True),        # inner, keepdim
         ((50, 6), (0,), False),       # outer
         ((3, 4, 10), (1, 2), False),  # inner over two dims (a tuple)
         ((5, 3, 4), (0, 1), True),    # outer over two dims
         ((3, 5, 4), None, False)]     # every dim (inner, M == 1)


@pytest.mark.parametrize("dt", DTYPES)
def test_each_op_dtype_and_layout_matches_numpy(dev, dt):
    tp.manual_seed(0)
    d = getattr(tp, dt)
    for shape, dims, keepdim in CASES:
        x = tp.randn(*shape).to(d).to("redtest")
        a = _np(x)
        for op in reduce.OPS:
            n0 = len(dev.launches)
            got = getattr(x, op)(dims, keepdim=keepdim)
            want = _want(op, a, dims, keepdim)
            assert got.dtype is d and tuple(got.shape) == want.shape, (op, shape, dims)
            assert len(dev.launches) == n0 + 1, (op, shape, dims, "not the generated kernel")
            tol = TOL[dt]
            if op in ("amax", "amin"):      # an element of the input: exact
                np.testing.assert_array_equal(_np(got), want, err_msg=f"{op} {shape} {dims}")
            else:
                # the float64 sum rounded to the dtype, within a few of its ulps
                np.testing.assert_allclose(_np(got), want, rtol=tol, atol=tol * 4,
                                           err_msg=f"{op} {shape} {dims}")


def test_the_functional_spellings_take_the_same_kernels(dev):
    tp.manual_seed(1)
    x = tp.randn(4, 33).to("redtest")
    a = _np(x)
    n0 = len(dev.launches)
    np.testing.assert_allclose(_np(tp.sum(x, -1)), a.sum(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(tp.mean(x, dim=[0], keepdim=True)), a.mean(0, keepdims=True),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(_np(tp.amax(x, 1)), a.max(1))
    np.testing.assert_array_equal(_np(tp.amin(x)), a.min())
    np.testing.assert_allclose(_np(x.sum()), a.sum(), rtol=1e-5)
    assert len(dev.launches) == n0 + 5


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
def test_a_split_outer_reduction_adds_partial_results(dev, monkeypatch, dt):
    """Long columns run as two launches: partial results per row block, then their reduction
    (mean divides once, at the end)."""
    monkeypatch.setattr(reduce, "MIN_SPLIT_ROWS", 32)
    tp.manual_seed(2)
    x = tp.randn(300, 20).to(getattr(tp, dt)).to("redtest")
    a = _np(x)
    assert len(reduce.plan("mean", (300, 20), [0], False, dt).passes) == 2
    for op in reduce.OPS:
        n0 = len(dev.launches)
        got = getattr(x, op)(0)
        assert len(dev.launches) == n0 + 2, op
        want = _want(op, a, (0,), False)
        if op in ("amax", "amin"):
            np.testing.assert_array_equal(_np(got), want)
        else:
            np.testing.assert_allclose(_np(got), want, rtol=TOL[dt], atol=TOL[dt] * 4)


def test_bfloat16_results_round_to_nearest_even(dev):
    """256 + 3 = 259 lies halfway between the bfloat16 values 258 and 260: round to nearest
    even gives 260 (truncation, Triton's interpreter's own conversion, would give 258); 257
    gives 256. The float32 sum is exact here, so the result is fixed."""
    x = tp.tensor([[256.0, 3.0], [256.0, 1.0]], dtype=tp.bfloat16).to("redtest")
    assert _np(x.sum(1)).tolist() == [260.0, 256.0]
    assert _np(x.t().contiguous().sum(0)).tolist() == [260.0, 256.0]      # outer
    assert _np(x.float().sum(1)).tolist() == [259.0, 257.0]


@pytest.mark.parametrize("dt", ["float32", "float16", "float64"])
def test_nan_inf_and_signed_zeros(dev, dt):
    d = getattr(tp, dt)
    nan, inf = math.nan, math.inf
    rows = [[1.0, nan, 3.0, -inf], [-0.0, -0.0, -0.0, -0.0], [inf, 1.0, -inf, 2.0],
            [-inf, -inf, -inf, -inf], [2.0, -5.0, nan, nan]]
    x = tp.tensor(rows, dtype=d).to("redtest")
    n0 = len(dev.launches)
    amax, amin, s = _np(x.amax(1)), _np(x.amin(1)), _np(x.sum(1))
    assert len(dev.launches) == n0 + 3
    assert np.isnan(amax[0]) and np.isnan(amin[0]) and np.isnan(amax[4]) and np.isnan(amin[4])
    assert amax[1] == 0 and np.signbit(amax[1]) and np.signbit(amin[1])     # -0.0 kept
    assert amax[2] == inf and amin[2] == -inf and amax[3] == -inf and amin[3] == -inf
    assert np.isnan(s[0]) and s[1] == 0 and np.isnan(s[2]) and s[3] == -inf
    # the same columns in the outer layout
    xt = x.t().contiguous()
    np.testing.assert_array_equal(_np(xt.amax(0)), amax)
    np.testing.assert_array_equal(_np(xt.amin(0)), amin)
    np.testing.assert_array_equal(_np(xt.sum(0)), s)
    np.testing.assert_array_equal(_np(xt.mean(0)), s / 4)


INTS = ["int8", "uint8", "int16", "int32", "int64", "bool"]


def _ints(shape, dt, seed):
    """A NumPy array of ``dt`` over its whole range (bool: about half true)."""
    g = np.random.default_rng(seed)
    if dt == "bool":
        return g.random(shape) < 0.5
    i = np.iinfo(dt)
    return g.integers(i.min, i.max, size=shape, dtype=dt, endpoint=True)


def _want_int(op, a, dims, keepdim):
    """torch's result: sum -> int64 (wrapping as int64), amax/amin -> the input's dtype."""
    axis = None if dims is None else tuple(dims)
    if op == "sum":
        return a.sum(axis=axis, keepdims=keepdim, dtype=np.int64)
    return (a.max if op == "amax" else a.min)(axis=axis, keepdims=keepdim)


@pytest.mark.parametrize("dt", INTS)
def test_integer_and_bool_reductions_are_exact_with_torchs_dtypes(dev, dt):
    d = getattr(tp, dt)
    for i, (shape, dims, keepdim) in enumerate(CASES + [((37,), None, True), ((3, 1, 9), (1,),
                                                                               False)]):
        a = _ints(shape, dt, i)
        x = tp.from_numpy(a).to("redtest")
        assert x.dtype is d
        for op in ("sum", "amax", "amin"):
            n0 = len(dev.launches)
            got = getattr(x, op)(dims, keepdim=keepdim)
            assert len(dev.launches) == n0 + 1, (op, shape, dims, "not the generated kernel")
            ref = getattr(x.cpu(), op)(dims, keepdim=keepdim)
            assert got.dtype is ref.dtype is (tp.int64 if op == "sum" else d), (op, shape)
            want = _want_int(op, a, dims, keepdim)
            g = got.cpu().numpy()
            assert g.dtype == want.dtype and g.shape == want.shape, (op, shape, dims)
            np.testing.assert_array_equal(g, want, err_msg=f"{op} {shape} {dims}")
            np.testing.assert_array_equal(ref.numpy(), want)
    # Tensor.max()/min() with no dim: amax/amin over every dim
    x = tp.from_numpy(_ints((7, 9), dt, 99)).to("redtest")
    n0 = len(dev.launches)
    assert x.max().item() == x.cpu().max().item() and x.min().item() == x.cpu().min().item()
    assert len(dev.launches) == n0 + 2


@pytest.mark.parametrize("dt", INTS)
def test_integer_mean_raises_the_references_error(dev, dt):
    x = tp.from_numpy(_ints((4, 6), dt, 0)).to("redtest")
    n0 = len(dev.launches)
    for f in (lambda t: t.mean(1), lambda t: t.mean()):
        with pytest.raises(RuntimeError) as here:
            f(x)
        with pytest.raises(RuntimeError) as cpu:
            f(x.cpu())
        assert str(here.value) == str(cpu.value) and "floating point" in str(here.value)
    assert len(dev.launches) == n0


def test_integer_sums_accumulate_in_int64(dev):
    """int32 (and narrower) sums do not overflow: int64 accumulation; an int64 sum wraps as
    torch's (and NumPy's) does; both layouts and a full reduction."""
    big = np.full((3, 70), 2 ** 31 - 1, np.int32)
    big[1] = -2 ** 31
    x = tp.from_numpy(big).to("redtest")
    assert x.sum(1).cpu().numpy().tolist() == [70 * (2 ** 31 - 1), -70 * 2 ** 31,
                                               70 * (2 ** 31 - 1)]
    assert x.t().contiguous().sum(0).cpu().numpy().tolist() == x.sum(1).cpu().numpy().tolist()
    assert x.sum().item() == 140 * (2 ** 31 - 1) - 70 * 2 ** 31
    u = tp.from_numpy(np.full((2, 300), 255, np.uint8)).to("redtest")
    assert u.sum(1).cpu().numpy().tolist() == [76500, 76500] and u.sum().item() == 153000
    w = tp.from_numpy(np.array([[2 ** 63 - 1, 1], [-2 ** 63, -1]], np.int64)).to("redtest")
    assert w.sum(1).cpu().numpy().tolist() == [-2 ** 63, 2 ** 63 - 1]         # wraps
    assert w.sum(0).cpu().numpy().tolist() == [-1, 0]
    assert w.sum(1).cpu().numpy().tolist() == w.cpu().sum(1).numpy().tolist()


def test_int64_extremes_and_bool_all_any(dev):
    lo, hi = -2 ** 63, 2 ** 63 - 1
    a = np.array([[lo, hi, 0], [lo, lo, lo], [hi, hi, hi], [-1, 0, 1]], np.int64)
    x = tp.from_numpy(a).to("redtest")
    n0 = len(dev.launches)
    assert x.amax(1).cpu().numpy().tolist() == [hi, lo, hi, 1]
    assert x.amin(1).cpu().numpy().tolist() == [lo, lo, hi, -1]
    xt = x.t().contiguous()                                             # outer layout
    assert xt.amax(0).cpu().numpy().tolist() == [hi, lo, hi, 1]
    assert xt.amin(0).cpu().numpy().tolist() == [lo, lo, hi, -1]
    assert x.amax().item() == hi and x.amin().item() == lo
    assert len(dev.launches) == n0 + 6
    b = np.array([[False] * 5, [True] * 5, [False, True, False, False, False]])
    x = tp.from_numpy(b).to("redtest")
    for t, ax in ((x, 1), (x.t().contiguous(), 0)):
        mx, mn, s = t.amax(ax), t.amin(ax), t.sum(ax)
        assert mx.dtype is tp.bool and mn.dtype is tp.bool and s.dtype is tp.int64
        assert mx.cpu().numpy().tolist() == [False, True, True]
        assert mn.cpu().numpy().tolist() == [False, True, False]
        assert s.cpu().numpy().tolist() == [0, 5, 1]
    assert x.sum().item() == 6 and x.amax().item() is True and x.amin().item() is False


@pytest.mark.parametrize("dt", ["int64", "bool", "float32"])
def test_a_split_full_reduction_adds_partial_results(dev, monkeypatch, dt):
    """Rows longer than ``INNER_MAX_N`` with few rows (a full reduction of 2^20 elements) run
    as two launches: partial results per block of each row, then their reduction (here with
    small limits: the interpreter is slow)."""
    monkeypatch.setattr(reduce, "INNER_MAX_N", 256)
    monkeypatch.setattr(reduce, "TILE", 64)
    monkeypatch.setattr(reduce, "MIN_SPLIT_COLS", 128)
    if dt == "float32":
        a = np.random.default_rng(7).standard_normal((3, 1000)).astype(np.float32)
    else:
        a = _ints((3, 1000), dt, 7)
    x = tp.from_numpy(a).to("redtest")
    assert len(reduce.plan("sum", (3000,), None, False, dt).passes) == 2
    for op in ("sum", "amax", "amin") + (("mean",) if dt == "float32" else ()):
        for dims, keepdim in ((None, False), ((1,), True), ((0, 1), True)):
            n0 = len(dev.launches)
            got = getattr(x, op)(dims, keepdim=keepdim)
            assert len(dev.launches) == n0 + 2, (op, dims)
            ref = getattr(x.cpu(), op)(dims, keepdim=keepdim)
            assert got.dtype is ref.dtype and tuple(got.shape) == tuple(ref.shape)
            if dt == "float32" and op in ("sum", "mean"):
                np.testing.assert_allclose(got.cpu().numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
            else:
                np.testing.assert_array_equal(got.cpu().numpy(), ref.numpy())


def test_a_full_reduction_of_2_20_elements_with_the_real_constants(dev):
    """``x.sum()``/``x.amax()`` of 2^20 int64 values (Liger-Kernel's target checks at scale):
    the split plan of the shipped constants, exact (the int64 sum wraps as NumPy's)."""
    a = np.random.default_rng(3).integers(-2 ** 62, 2 ** 62, 1 << 20)
    x = tp.from_numpy(a).to("redtest")
    n0 = len(dev.launches)
    s, mx = x.sum(), x.amax()
    assert len(dev.launches) == n0 + 4
    assert s.dtype is tp.int64 and s.item() == int(a.sum()) and mx.item() == int(a.max())


def test_empty_and_0d_integer_reductions_run_the_reference(dev):
    n0 = len(dev.launches)
    e = tp.zeros(0, 3, dtype=tp.int64).to("redtest")
    assert e.sum(0).cpu().numpy().tolist() == [0, 0, 0] and e.sum().dtype is tp.int64
    with pytest.raises(IndexError):
        e.amax(0)
    z = tp.tensor(5, dtype=tp.int32).to("redtest")
    assert z.sum().item() == 5 and z.sum().dtype is tp.int64 and z.amax().item() == 5
    b = tp.tensor(True).to("redtest")
    assert b.sum().item() == 1 and b.amin().item() is True
    assert len(dev.launches) == n0


def test_what_the_kernels_do_not_take_runs_the_reference_with_its_results(dev):
    tp.manual_seed(3)
    x = tp.randn(3, 4, 5).to("redtest")
    a = _np(x)
    n0 = len(dev.launches)
    np.testing.assert_allclose(_np(x.sum(1)), a.sum(1), rtol=1e-5, atol=1e-6)   # middle dim
    np.testing.assert_array_equal(_np(x.amax((0, 2))), a.max((0, 2)))
    t = x.transpose(0, 2)                                                       # not row-major
    np.testing.assert_allclose(_np(t.sum(0)), a.transpose(2, 1, 0).sum(0), rtol=1e-5, atol=1e-6)
    r = x.sum(2, dtype=tp.float64)                                              # dtype=
    assert r.dtype is tp.float64
    np.testing.assert_allclose(_np(r), a.sum(2), rtol=1e-6)
    i = tp.arange(60).reshape(3, 4, 5).to("redtest")                           # integers:
    assert i.sum(1).dtype is tp.int64 and i.sum(1).cpu().numpy().tolist() == \
        np.arange(60).reshape(3, 4, 5).sum(1).tolist()                          # middle dim
    e = tp.zeros(0, 3).to("redtest")                                            # empty
    assert tuple(e.sum(0).shape) == (3,) and _np(e.sum(0)).tolist() == [0.0] * 3
    # errors: the reference kernel's, as on the cpu device (a dim named twice: torch's
    # RuntimeError, from the fake rule the adapter falls back to)
    for t, f in [(e, lambda t: t.amax(0)), (x, lambda t: t.sum(3)), (x, lambda t: t.sum([0, 0])),
                 (x, lambda t: t.mean([1, -2]))]:
        with pytest.raises((IndexError, ValueError, RuntimeError)) as here:
            f(t)
        with pytest.raises(type(here.value)) as cpu:
            f(t.cpu())
        assert str(here.value) == str(cpu.value)
    assert len(dev.launches) == n0


def test_compiled_graphs_run_their_reductions_on_the_generated_kernels(dev):
    """``tensorplay.compile`` calls the device's kernel table for the reductions of a row
    softmax (the elementwise groups around them are fused): both take the generated kernels."""
    def f(a):
        e = (a - a.amax(1, keepdim=True)).exp()
        return e / e.sum(1, keepdim=True)
    tp.manual_seed(5)
    a = tp.randn(8, 40).to("redtest")
    cf = tp.compile(f)
    n0 = len(dev.launches)
    for _ in range(2):
        got = cf(a)
    assert len(dev.launches) == n0 + 4
    x = _np(a)
    want = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(_np(got), want / want.sum(1, keepdims=True), rtol=1e-6, atol=1e-7)


def test_autograd_through_the_generated_reductions(dev):
    tp.manual_seed(4)
    x = tp.randn(5, 8).to("redtest").requires_grad_()
    (x.sum(1) * 2).sum().backward()
    np.testing.assert_allclose(_np(x.grad), np.full((5, 8), 2.0))
    x.grad = None
    x.amax(1).sum().backward()
    g = _np(x.grad)
    assert (g.sum(1) == 1).all() and ((g == 0) | (g == 1)).all()


# ------------------------------------------------------------------------------------------------
# the per-call path on CuPy arrays: warm-up, compile, one launch, fallbacks (no GPU: host memory)

cupy = None
try:
    import cupy
except ImportError:
    pass
needs_cupy = pytest.mark.skipif(cupy is None, reason="CuPy is not installed")

_KEEP = []


def _host(shape, dtype=np.float32, offset=0, device_id=0):
    """A row-major ``HostArray`` (a cupy.ndarray over host memory), ``offset`` bytes past a
    16-byte boundary."""
    n = int(np.prod(shape)) if shape else 1
    h = np.zeros(n * 8 + 64, np.uint8)
    _KEEP.append(h)
    base = (-h.ctypes.data) % 16 + offset
    mem = cupy.cuda.UnownedMemory(h.ctypes.data, h.nbytes, h, device_id=device_id)
    return HostArray.__new__(HostArray, shape, dtype, memptr=cupy.cuda.MemoryPointer(mem, base))


if cupy is not None:
    class HostArray(cupy.ndarray):
        """The stand-in backend's array class: allocations land in host memory, 16-byte
        aligned (as CuPy's pool)."""

        def __new__(cls, shape, dtype=np.float32, memptr=None):
            if memptr is None:
                return _host(shape, dtype)
            return cupy.ndarray.__new__(cls, shape, dtype, memptr=memptr)


class Recorder:
    """The compiler's stand-in: ``compile_pass`` notes the pass and hands back a ``go`` that
    records its launches (or what ``result`` says: None, an exception)."""

    def __init__(self, result="go"):
        self.compiled, self.launched, self.result = [], [], result

    def compile_pass(self, p, i, arrays):
        self.compiled.append((p.passes[i][1], p.passes[i][0], i, arrays[0].dtype,
                              arrays[1].shape, arrays[1].dtype))
        if isinstance(self.result, Exception):
            raise self.result
        if self.result is None:
            return None
        tag = i

        def go(values, g0, g1, g2):
            if self.result == "launch fails":
                raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED")
            if self.result == "fails once":
                self.result = "go"
                raise RuntimeError("CUDA_ERROR_INVALID_CONTEXT")
            self.launched.append((tag, values, (g0, g1, g2)))
        return go


def _stand_in(compiler, capturing=False):
    """What ``reduce._cupy_kernel`` uses of a backend: its array class, dtypes, the current
    device (0), CuPy's current stream (``capturing``: recording a graph) and the compiler."""
    stream = types.SimpleNamespace(is_capturing=lambda: capturing)
    return types.SimpleNamespace(
        np=types.SimpleNamespace(
            __name__="cupy", ndarray=HostArray, dtype=np.dtype,
            cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0),
                                       get_current_stream=lambda: stream)),
        _tp_reduce_compiler=compiler)


class Reference:
    def __init__(self):
        self.calls = []

    def __call__(self, x, dim=None, keepdim=False, **kw):
        self.calls.append((x.shape, dim, keepdim, kw))
        return "reference"


@needs_cupy
def test_a_signature_runs_the_reference_then_compiles_once_then_launches(monkeypatch):
    monkeypatch.setattr(reduce, "_FAILED", [])
    comp, ref = Recorder(), Reference()
    k = reduce._cupy_kernel("mean", ref, _stand_in(comp))
    x = _host((8, 100))
    for _ in range(reduce.WARMUP_CALLS):
        assert k(x, [1], True) == "reference"
    assert len(ref.calls) == reduce.WARMUP_CALLS and comp.compiled == []
    r = k(x, [1], True)                           # compiles (and launches through Triton)
    assert comp.compiled == [("mean", "inner", 0, np.float32, (8, 1), np.float32)]
    assert r.__class__ is HostArray and r.shape == (8, 1) and r.dtype == np.float32
    r = k(x, [1], True)                           # one launch into a fresh array
    assert len(comp.compiled) == 1 and len(ref.calls) == reduce.WARMUP_CALLS
    (tag, values, grid), = comp.launched
    assert values == (x.data.ptr, r.data.ptr, 8, 100, 100, 100) and grid == (1, 1, 1)
    assert r.shape == (8, 1)
    # keepdim False is another signature (its own warm-up); dim=None/[] reduce every dim
    for _ in range(reduce.WARMUP_CALLS + 2):
        r = k(x, [], False)
    assert r.shape == () and comp.launched[-1][1][2:] == (1, 800, 800, 800)
    # an explicit dtype: the reference, always
    k(x, [1], True, dtype=tp.float64)
    assert ref.calls[-1][-1] == {"dtype": tp.float64}


@needs_cupy
def test_a_misaligned_input_is_its_own_specialisation(monkeypatch):
    monkeypatch.setattr(reduce, "_FAILED", [])
    comp, ref = Recorder(), Reference()
    k = reduce._cupy_kernel("sum", ref, _stand_in(comp))
    a, m = _host((4, 32)), _host((4, 32), offset=4)
    assert not a.data.ptr & 15 and m.data.ptr & 15
    for _ in range(reduce.WARMUP_CALLS + 1):
        k(a, [1], False)
    assert len(comp.compiled) == 1
    assert k(m, [1], False) == "reference"        # its own warm-up, then its own compile
    for _ in range(reduce.WARMUP_CALLS):
        k(m, [1], False)
    assert len(comp.compiled) == 2
    k(m, [1], False)
    k(a, [1], False)
    assert [v[1][0] for v in comp.launched] == [m.data.ptr, a.data.ptr]


@needs_cupy
def test_a_split_reduction_launches_both_passes_through_a_scratch_array(monkeypatch):
    monkeypatch.setattr(reduce, "_FAILED", [])
    comp, ref = Recorder(), Reference()
    k = reduce._cupy_kernel("mean", ref, _stand_in(comp))
    pytest.importorskip("ml_dtypes")
    import ml_dtypes
    bf = np.dtype(ml_dtypes.bfloat16)
    x = _host((600, 20), bf)
    p = reduce.plan("mean", (600, 20), [0], False, "bfloat16")
    for _ in range(reduce.WARMUP_CALLS + 1):
        k(x, [0], False)
    s = p.scratch[0]
    assert comp.compiled == [("sum", "outer", 0, bf, (s, 20), np.float32),
                             ("mean", "outer", 1, np.float32, (20,), bf)]
    r = k(x, [0], False)
    (t1, v1, g1), (t2, v2, g2) = comp.launched
    assert (t1, t2) == (0, 1) and v1[0] == x.data.ptr and v2[0] == v1[1] and v2[1] == r.data.ptr
    assert v1[2:] == p.passes[0][4] and v2[2:] == p.passes[1][4]
    assert g1 == (1, s, 1) and g2 == (1, 1, 1) and r.dtype == bf and r.shape == (20,)


@needs_cupy
def test_integer_and_bool_signatures_launch_into_torchs_result_dtypes(monkeypatch):
    """int32 sum -> an int64 result, bool amax -> a bool result, int64 amin -> int64; integer
    mean: the reference (which raises), without compiling."""
    monkeypatch.setattr(reduce, "_FAILED", [])
    comp = Recorder()
    be = _stand_in(comp)
    for op, dt, want in (("sum", np.int32, np.int64), ("amax", np.bool_, np.bool_),
                         ("amin", np.int64, np.int64), ("sum", np.bool_, np.int64)):
        ref = Reference()
        k = reduce._cupy_kernel(op, ref, be)
        x = _host((6, 40), dt)
        for _ in range(reduce.WARMUP_CALLS):
            assert k(x, [1], False) == "reference"
        n = len(comp.compiled)
        r = k(x, [1], False)
        assert comp.compiled[n:] == [(op, "inner", 0, np.dtype(dt), (6,), np.dtype(want))], op
        r = k(x, [1], False)
        assert r.__class__ is HostArray and r.dtype == want and r.shape == (6,)
        assert comp.launched[-1][1] == (x.data.ptr, r.data.ptr, 6, 40, 1, 40)
        assert len(ref.calls) == reduce.WARMUP_CALLS
    ref = Reference()
    k = reduce._cupy_kernel("mean", ref, be)
    n = len(comp.compiled)
    for _ in range(reduce.WARMUP_CALLS + 2):
        assert k(_host((6, 40), np.int64), [1], False) == "reference"
    assert len(comp.compiled) == n


@needs_cupy
def test_a_split_full_reduction_launches_both_passes_through_a_scratch_array(monkeypatch):
    """``x.sum()`` of 2^20 bools: partial int64 sums of row blocks into a scratch array, then
    the outer kernel's sum of them into the 0-d int64 result."""
    monkeypatch.setattr(reduce, "_FAILED", [])
    comp, ref = Recorder(), Reference()
    k = reduce._cupy_kernel("sum", ref, _stand_in(comp))
    x = _host((1 << 20,), np.bool_)
    p = reduce.plan("sum", (1 << 20,), None, False, "bool")
    s = p.scratch[0]
    for _ in range(reduce.WARMUP_CALLS + 1):
        k(x, None, False)
    assert comp.compiled == [("sum", "inner", 0, np.bool_, (s, 1), np.int64),
                             ("sum", "outer", 1, np.int64, (), np.int64)]
    r = k(x, None, False)
    (t1, v1, g1), (t2, v2, g2) = comp.launched
    assert (t1, t2) == (0, 1) and v1[0] == x.data.ptr and v2[0] == v1[1] and v2[1] == r.data.ptr
    assert v1[2:] == p.passes[0][4] and v2[2:] == p.passes[1][4]
    assert g1 == (1, s, 1) and g2 == (1, 1, 1) and r.dtype == np.int64 and r.shape == ()


@needs_cupy
def test_the_compiler_hands_bool_arrays_to_triton_as_bytes(monkeypatch):
    """Triton would read a bool pointer as ``i1``: the kernels take bool arrays as uint8."""
    from tensorplay_triton import _wrap

    from tensorplay_cuda import triton_fusion
    seen = []

    class FakeKernel:
        def __getitem__(self, grid):
            def run(*args, **kw):
                seen.append([str(a.dtype) for a in args[:2]])
            return run
    monkeypatch.setattr(reduce, "kernel", lambda *a: FakeKernel())
    monkeypatch.setattr(_wrap, "_direct_setup", lambda: False)
    monkeypatch.setattr(triton_fusion, "_DRIVER", ["installed"])
    monkeypatch.setattr(triton_fusion, "_helpers_compile", lambda: True)
    comp = reduce.Compiler(_stand_in(None))
    p = reduce.plan("amax", (8, 64), [1], False, "bool")
    comp.compile_pass(p, 0, (_host((8, 64), np.bool_), _host((8,), np.bool_)))
    p = reduce.plan("sum", (8, 64), [1], False, "bool")
    comp.compile_pass(p, 0, (_host((8, 64), np.bool_), _host((8,), np.int64)))
    assert seen == [["uint8", "uint8"], ["uint8", "int64"]]


@needs_cupy
@pytest.mark.parametrize("result", [RuntimeError("ptxas failed"), None, "launch fails"])
def test_a_failure_sends_that_signature_to_the_reference_for_good(monkeypatch, result):
    """A compile error (warned once), a kernel the direct launch does not take (its first call
    ran through Triton), a launch the driver refuses (warned): no crash, and from then on the
    reference kernel for that signature, without asking the compiler again."""
    monkeypatch.setattr(reduce, "_FAILED", [])
    comp, ref = Recorder(result), Reference()
    k = reduce._cupy_kernel("amax", ref, _stand_in(comp))
    x = _host((4, 32))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(reduce.WARMUP_CALLS):
            k(x, [1], False)
        first = k(x, [1], False)
        if result == "launch fails":
            assert first.__class__ is HostArray          # compiled fine: its Triton launch
            assert k(x, [1], False) == "reference"       # the direct launch fails: reference
        elif result is None:
            assert first.__class__ is HostArray
        else:
            assert first == "reference"
        n = len(ref.calls)
        for _ in range(3):
            assert k(x, [1], False) == "reference"
    assert len(ref.calls) == n + 3 and len(comp.compiled) == 1
    assert bool(w) is (result is not None)
    # other signatures still compile
    comp.result = "go"
    for _ in range(reduce.WARMUP_CALLS + 1):
        k(x, [0], False)
    assert len(comp.compiled) == 2


@needs_cupy
def test_a_launch_refused_once_is_retried_after_making_the_device_current(monkeypatch):
    """A thread whose first CUDA work is the launch has no current context: the driver refuses
    it until ``cudaSetDevice``; then the same launch goes through and the path stays on."""
    monkeypatch.setattr(reduce, "_FAILED", [])
    comp, ref = Recorder(), Reference()
    be = _stand_in(comp)
    made_current = []
    be.np.cuda.runtime.setDevice = made_current.append
    k = reduce._cupy_kernel("sum", ref, be)
    x = _host((4, 32))
    for _ in range(reduce.WARMUP_CALLS + 1):
        k(x, [1], False)
    comp.result = "fails once"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = k(x, [1], False)
    assert r.__class__ is HostArray and made_current == [0] and reduce._FAILED == []
    assert k(x, [1], False).__class__ is HostArray and len(ref.calls) == reduce.WARMUP_CALLS


@needs_cupy
def test_the_per_call_path_leaves_other_arrays_and_dims_to_the_reference(monkeypatch):
    monkeypatch.setattr(reduce, "_FAILED", [])
    comp, ref = Recorder(), Reference()
    k = reduce._cupy_kernel("sum", ref, _stand_in(comp))
    x = _host((4, 6, 8))
    calls = [(x, [1], False), (x[:, :, ::2], [2], False), (x.transpose(2, 1, 0), [0], False),
             (_host((4, 8), np.uint16), [1], False),
             (_host((4, 8), device_id=1), [1], False), (x, [3], False), (x, [0, 0], False),
             (_host((0, 8)), [1], False), (np.zeros((4, 8), np.float32), [1], False)]
    for _ in range(reduce.WARMUP_CALLS + 2):
        for a, d, kd in calls:
            assert k(a, d, kd) == "reference"
    assert comp.compiled == [] and len(ref.calls) == len(calls) * (reduce.WARMUP_CALLS + 2)


@needs_cupy
def test_the_compiler_loads_one_direct_launch_per_specialisation(monkeypatch):
    """``reduce.Compiler``: the first pass of a specialisation -- kernel, dtypes, constexprs,
    Triton's features of the integer arguments, the input's 16-byte alignment, device -- runs
    through Triton's launcher (compiling) and loads its direct launch; another plan of the same
    specialisation launches that one directly; a kernel the direct launch does not take runs
    through Triton's launcher every time and hands back None."""
    from tensorplay_triton import _cupylaunch, _wrap

    from tensorplay_cuda import triton_fusion
    triton_launches, made, direct = [], [], []

    class FakeKernel:
        def __init__(self, name):
            self.name = name

        def __getitem__(self, grid):
            def run(*args, **kw):
                triton_launches.append((self.name, grid, [getattr(a, "_p", a) for a in args], kw))
                return ("compiled", self.name)
            return run

    def make_direct(compiled, dev, kern, nargs, kw):
        made.append((compiled, dev, nargs, kw))
        if direct and direct[0] == "refuse":
            return _cupylaunch.TritonPath("not this one")
        return _cupylaunch.Direct(kern, lambda v, g0, g1, g2: direct.append((v, g0, g1, g2)),
                                  None, 0, "", ((), {}))
    monkeypatch.setattr(reduce, "kernel",
                        lambda layout, op, acc, bf, ident: FakeKernel(f"{layout}-{op}"))
    monkeypatch.setattr(_wrap, "_direct_setup", lambda: True)
    monkeypatch.setattr(_cupylaunch, "make_direct", make_direct)
    monkeypatch.setattr(triton_fusion, "_DRIVER", ["installed"])
    monkeypatch.setattr(triton_fusion, "_helpers_compile", lambda: True)
    comp = reduce.Compiler(_stand_in(None))
    p1 = reduce.plan("sum", (8, 64), [1], False, "float32")
    p2 = reduce.plan("sum", (24, 64), [1], False, "float32")     # same features as 8 rows
    x1, o1, x2, o2 = _host((8, 64)), _host((8,)), _host((24, 64)), _host((24,))
    go = comp.compile_pass(p1, 0, (x1, o1))
    assert go is not None and len(triton_launches) == 1 and len(made) == 1
    name, grid, args, kw = triton_launches[0]
    assert name == "inner-sum" and grid == p1.passes[0][5]
    assert args == [x1.data.ptr, o1.data.ptr, 8, 64, 1, 64]
    assert kw == dict(p1.passes[0][6], num_warps=reduce.NUM_WARPS)
    assert made[0][2:] == (6, p1.passes[0][6])
    assert comp.compile_pass(p2, 0, (x2, o2)) is go          # launched directly, not compiled
    assert len(triton_launches) == 1 and direct == [((x2.data.ptr, o2.data.ptr, 24, 64, 1, 64),
                                                     *p2.passes[0][5], 1)]
    # a misaligned input, another int feature (M == 1): new specialisations
    comp.compile_pass(p1, 0, (_host((8, 64), offset=4), o1))
    comp.compile_pass(reduce.plan("sum", (1, 64), [1], False, "float32"), 0, (x1, o1))
    assert len(triton_launches) == 3 and len(made) == 3
    # a kernel the direct launch does not take: Triton's launcher each time, None
    direct[:] = ["refuse"]
    p3 = reduce.plan("amax", (8, 64), [0], False, "float32")
    assert comp.compile_pass(p3, 0, (x1, _host((64,)))) is None
    assert comp.compile_pass(p3, 0, (x1, _host((64,)))) is None
    assert len(triton_launches) == 5 and len(made) == 4


@needs_cupy
def test_nothing_compiles_inside_a_graph_capture(monkeypatch):
    monkeypatch.setattr(reduce, "_FAILED", [])
    comp, ref = Recorder(), Reference()
    k = reduce._cupy_kernel("sum", ref, _stand_in(comp, capturing=True))
    x = _host((4, 32))
    for _ in range(reduce.WARMUP_CALLS + 3):
        assert k(x, [1], False) == "reference"
    assert comp.compiled == []


@needs_cupy
def test_the_cuda_table_wraps_the_reductions_unless_switched_off(monkeypatch):
    from tensorplay_cuda.backend import CUDABackend
    be = CUDABackend()
    be._count = 1
    k = be.kernels()
    for op in reduce.OPS:
        assert hasattr(k[op], "plans") and k[op].__wrapped__ is not None, op
    assert not hasattr(k["prod"], "plans") and not hasattr(k["max_dim"], "plans")
    for var in ("TENSORPLAY_CUDA_EAGER_REDUCE", "TENSORPLAY_CUDA_EAGER_TRITON"):
        monkeypatch.setenv(var, "0")
        off = CUDABackend()
        off._count = 1
        assert not any(hasattr(off.kernels()[op], "plans") for op in reduce.OPS), var
        monkeypatch.delenv(var)


# ------------------------------------------------------------------------------------------------
# ahead-of-time compile for the H200 (no GPU needed)

_AOT = r'''
import re
from tensorplay_cuda import reduce as R
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from tensorplay_triton import _cupylaunch
class Via:
    def load(self, cubin, name, dev): return None, 1
    launch = staticmethod(lambda *a: None)
    current_stream = staticmethod(lambda: None)
T = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32", "float64": "*fp64",
     "int8": "*i8", "int32": "*i32", "int64": "*i64", "bool": "*u8"}
for shape, dims, op, dt in [((64, 1024), [1], "sum", "bfloat16"), ((64, 4096), [1], "amax", "float64"),
                            ((4096, 4096), [0], "mean", "float16"), ((64, 48), [0], "amin", "float32"),
                            ((64, 1024), [1], "sum", "int64"), ((64, 1024), [1], "amax", "bool"),
                            ((1024, 64), [0], "amin", "int8"), ((1 << 20,), None, "sum", "bool")]:
    p = R.plan(op, shape, dims, False, dt)
    for i, (layout, op1, from_s, to_s, vals, _, ce) in enumerate(p.passes):
        fn = R.kernel(layout, op1, p.acc, False, p.ident)
        ints = ("M", "N", "ndiv", "R")
        x = T[p.acc if from_s else dt]
        out = T[p.acc if to_s else p.out]
        sig = {a: x if a == "x" else out if a == "out" else "i32" if a in ints else "constexpr"
               for a in fn.arg_names}
        # Triton's specialisation of the aligned input and of the integers divisible by 16
        div = {(j,): [["tt.divisibility", 16]] for j in [0] + [2 + j for j, v in enumerate(vals)
                                                               if v % 16 == 0]}
        k = triton.compile(ASTSource(fn, sig, constexprs=ce, attrs=div),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": R.NUM_WARPS})
        d = _cupylaunch.make_direct(k, 0, fn, len(sig) - len(ce), ce, via=Via())
        print(f"pass{i}", layout, op, dt, type(d).__name__,
              sorted(set(re.findall(r"ld\.global[.:\w]*", k.asm["ptx"]))))
'''


def test_the_kernels_compile_for_the_h200_and_the_direct_launch_takes_them():
    """Ahead-of-time compile (sm_90): code the interpreter accepts but the compiler would not
    fails here; the loads are 16-byte vectors on aligned rows, and ``make_direct`` accepts the
    compiled kernels' parameters (what the per-call launch packs)."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    r = subprocess.run([sys.executable, "-c", _AOT], capture_output=True, text=True, env=env,
                       timeout=600, check=False)
    if r.returncode and "ptxas" in r.stderr and "not found" in r.stderr.lower():
        pytest.skip("Triton's bundled ptxas is missing on this machine")
    assert r.returncode == 0, r.stderr[-4000:]
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 11 and all(" Direct " in x for x in lines), r.stdout
    # the input's loads (a split's second pass reads a (S, 1) scratch column: not vectors)
    first = [x for x in lines if x.startswith("pass0")]
    assert len(first) == 8 and all("v4.b32" in x or "v2.b64" in x for x in first), r.stdout


# ------------------------------------------------------------------------------------------------
# on the GPU: the compiled kernels through the real direct launch

def _launched(op, x, dims, keepdim):
    """The plan of this call on the cuda table, asserting its launch is the direct one."""
    k = tp.backends.get("cuda").kernels()[op]
    key = (tuple(x.shape), x._data.dtype, tuple(dims) if dims else None, keepdim,
           x.device.index or 0)
    p = k.plans.get(key)
    assert p is not None, (op, key, list(k.plans))
    al = 0 if x._data.data.ptr & 15 else 1
    assert callable(p.slots[al]), (op, key, p.slots, reduce._FAILED)
    return p


GPU_CASES = [((64, 1000), (1,), False), ((64, 1000), (-1,), True), ((1000, 48), (0,), False),
             ((4096, 33), (0,), True), ((8, 3, 257), (1, 2), False), ((3, 5, 7), None, False),
             ((300, 2048), (1,), False), ((1 << 20,), None, False),   # split rows:
             ((3, 100000), (1,), True)]                               # two launches


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("dt", DTYPES)
def test_cuda_reductions_launch_directly_and_match_numpy_and_cupy(dt):
    if dt == "bfloat16":
        pytest.importorskip("ml_dtypes")
    d = getattr(tp, dt)
    tp.manual_seed(5)
    for shape, dims, keepdim in GPU_CASES:
        x = tp.randn(*shape, device="cuda").to(d)
        a = _np(x)
        args = [dims]  # (None too: torch takes keepdim only with dim)
        for op in reduce.OPS:
            ref = tp.backends.get("cuda").kernels()[op].__wrapped__(x._data, dims, keepdim)
            for _ in range(reduce.WARMUP_CALLS + 2):
                got = getattr(x, op)(*args, keepdim=keepdim)
            _launched(op, x, dims, keepdim)
            want = _want(op, a, dims, keepdim)
            assert got.dtype is d and tuple(got.shape) == want.shape == ref.shape
            if op in ("amax", "amin"):
                np.testing.assert_array_equal(_np(got), want)
            else:
                tol = TOL[dt] * (10 if dt == "float32" else 1)
                np.testing.assert_allclose(_np(got), want, rtol=tol, atol=tol * 4,
                                           err_msg=f"{op} {shape} {dims}")
    assert not reduce._FAILED, reduce._FAILED


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("dt", INTS)
def test_cuda_integer_reductions_launch_directly_and_match_numpy_and_cupy(dt):
    d = getattr(tp, dt)
    for i, (shape, dims, keepdim) in enumerate(GPU_CASES + [((1 << 20,), (0,), True)]):
        a = _ints(shape, dt, i)
        x = tp.from_numpy(a).to("cuda")
        args = [dims]  # (None too: torch takes keepdim only with dim)
        for op in ("sum", "amax", "amin"):
            ref = tp.backends.get("cuda").kernels()[op].__wrapped__(x._data, dims, keepdim)
            for _ in range(reduce.WARMUP_CALLS + 2):
                got = getattr(x, op)(*args, keepdim=keepdim)
            _launched(op, x, dims, keepdim)
            want = _want_int(op, a, dims, keepdim)
            assert got.dtype is (tp.int64 if op == "sum" else d), (op, shape)
            g = got.cpu().numpy()
            assert g.dtype == want.dtype == ref.dtype and g.shape == want.shape == ref.shape
            np.testing.assert_array_equal(g, want, err_msg=f"{op} {shape} {dims}")
            np.testing.assert_array_equal(cupy.asnumpy(ref), want)
        with pytest.raises(RuntimeError, match="floating point"):
            x.mean(*args)
    assert not reduce._FAILED, reduce._FAILED


@pytest.mark.cuda
@needs_cuda
def test_cuda_liger_cross_entropy_checks_take_the_direct_reductions():
    """Liger-Kernel's cross_entropy forward, before its kernel: the count of non-ignored
    targets (a bool sum) and the range checks (int64 max/min over every element)."""
    g = np.random.default_rng(0)
    t = g.integers(0, 32000, size=8192, dtype=np.int64)
    t[::7] = -100
    target = tp.from_numpy(t).to("cuda")
    for _ in range(reduce.WARMUP_CALLS + 2):
        mask = target != -100
        n = mask.sum().item()
        mx, mn = (target * mask).max().item(), (target * mask).min().item()
    assert n == int((t != -100).sum()) and mx == int((t * (t != -100)).max()) and mn == 0
    _launched("sum", mask, None, False)
    _launched("amax", target * mask, None, False)
    _launched("amin", target * mask, None, False)
    big = tp.from_numpy(np.ones(1 << 20, np.bool_)).to("cuda")
    for _ in range(reduce.WARMUP_CALLS + 2):
        s = big.sum()
    _launched("sum", big, None, False)
    assert s.item() == 1 << 20 and s.dtype is tp.int64
    assert not reduce._FAILED, reduce._FAILED


@pytest.mark.cuda
@needs_cuda
def test_cuda_nan_and_signed_zero_and_a_misaligned_view():
    nan, inf = math.nan, math.inf
    x = tp.tensor([[1.0, nan, 3.0, -inf] * 8, [-0.0] * 32, [inf, -inf] * 16], device="cuda")
    for _ in range(reduce.WARMUP_CALLS + 2):
        mx, mn, s = x.amax(1), x.amin(1), x.sum(1)
    _launched("amax", x, (1,), False)
    mx, mn, s = _np(mx), _np(mn), _np(s)
    assert np.isnan(mx[0]) and np.isnan(mn[0]) and np.isnan(s[0]) and np.isnan(s[2])
    assert mx[1] == 0 and np.signbit(mx[1]) and s[1] == 0 and mx[2] == inf and mn[2] == -inf
    big = tp.randn(65, 64, device="cuda")
    v = big.reshape(-1)[1:4096].reshape(63, 65)      # row-major, 4 bytes past 16
    assert v._data.data.ptr & 15
    for _ in range(reduce.WARMUP_CALLS + 2):
        got = v.sum(1)
    _launched("sum", v, (1,), False)
    np.testing.assert_allclose(_np(got), _np(v).sum(1), rtol=1e-4, atol=1e-4)


@pytest.mark.cuda
@needs_cuda
def test_cuda_compiled_softmax_takes_the_direct_reductions(monkeypatch):
    # the unfused graph (its reductions between two fused chains): what runs when the row
    # kernel is off or declines a call
    monkeypatch.setenv("TENSORPLAY_CUDA_FUSE_ROWS", "0")

    def f(a):
        e = (a - a.amax(1, keepdim=True)).exp()
        return e / e.sum(1, keepdim=True)
    tp.manual_seed(6)
    a = tp.randn(256, 512, device="cuda")
    cf = tp.compile(f)
    for _ in range(reduce.WARMUP_CALLS + 3):
        got = cf(a)
    want = np.exp(_np(a) - _np(a).max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(_np(got), want, rtol=1e-5, atol=1e-7)
    _launched("amax", a, (1,), True)
    assert not reduce._FAILED, reduce._FAILED
