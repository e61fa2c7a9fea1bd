"""Session 46 (h-ops46) against torch itself. Companion of tests/test_ops46.py (torch-free).

Each case builds its inputs with the library it is given (``L`` is ``torch`` or ``tensorplay``)
and both must agree: the same shapes, dtypes and values (floats to a few ulps, NaN where torch
has NaN; signed zeros compared), the same gradients, or both raise (the error classes compared).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402


def _np(L, t):
    return t.detach().cpu().numpy() if L is torch else t.detach().numpy()


def _desc(L, v):
    if isinstance(v, L.Tensor):
        a = _np(L, v)
        return ("T", tuple(v.shape), str(v.dtype).rsplit(".", 1)[-1], a)
    if isinstance(v, (tuple, list)):
        return ("seq", [_desc(L, e) for e in v])
    return ("V", v)


def _run(L, fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", _desc(L, fn(L)))
    except (RuntimeError, IndexError, TypeError, ValueError, NotImplementedError) as e:
        return ("raise", type(e).__name__)


def _same(a, b, rtol=2e-6, atol=0.0, signs=True):
    if a[0] != b[0]:
        return False
    if a[0] in ("raise", "V"):
        return a == b
    if a[0] == "ok":
        return _same(a[1], b[1], rtol, atol, signs)
    if a[0] == "seq":
        return len(a[1]) == len(b[1]) and all(_same(x, y, rtol, atol, signs)
                                              for x, y in zip(a[1], b[1]))
    _, sa, da, va = a
    _, sb, db, vb = b
    if sa != sb or da != db:
        return False
    if va.dtype.kind in "biu":
        return np.array_equal(va, vb)
    if not np.allclose(va, vb, rtol=rtol, atol=atol, equal_nan=True):
        return False
    return not signs or np.array_equal(np.signbit(va[va == 0]), np.signbit(vb[vb == 0]))


def check(fn, **kw):
    a, b = _run(torch, fn), _run(tp, fn)
    assert _same(a, b, **kw), (a, b)


# -- 1. relu ------------------------------------------------------------------------------------
_X = [-0.0, 0.0, -1.0, float("nan"), 2.0, float("-inf"), float("inf"), 3.0]
_G = [float("inf"), float("-inf"), float("nan"), 1.0, float("inf"), 5.0, float("nan"), 2.0]


@pytest.mark.parametrize("reps", [1, 600, 9000])
@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
def test_relu_and_its_gradient(reps, dt):
    def fwd(L):
        return L.relu(L.tensor(_X * reps, dtype=getattr(L, dt)))

    def grad(L):
        x = L.tensor(_X * reps, dtype=getattr(L, dt), requires_grad=True)
        (g,) = L.autograd.grad(L.relu(x), [x], L.tensor(_G * reps, dtype=getattr(L, dt)))
        return g

    def grad2(L):   # create_graph: the op-by-op formula
        x = L.tensor(_X * reps, dtype=getattr(L, dt), requires_grad=True)
        (g,) = L.autograd.grad(L.relu(x), [x], L.tensor(_G * reps, dtype=getattr(L, dt)),
                               create_graph=True)
        return g
    for f in (fwd, grad, grad2):
        check(f)


# -- 2. refusals -------------------------------------------------------------------------------
@pytest.mark.parametrize("api", ["cumsum", "cumprod"])
@pytest.mark.parametrize("src", ["float", "bool", "int"])
def test_cumulative_bool_dtype(api, src):
    vals = {"float": [1.0, 2.0], "bool": [True, False], "int": [1, 0]}[src]
    check(lambda L: getattr(L, api)(L.tensor(vals), 0, dtype=L.bool))
    check(lambda L: getattr(L, api)(L.tensor(vals), 0))


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_backward_refused(reduce):
    def f(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = L.tensor([4.0, 5.0], requires_grad=True)
        r = x.scatter(0, L.tensor([0, 1]), s, reduce=reduce)
        out = [r.requires_grad]
        r.sum().backward()
        return out
    check(f)
    check(lambda L: L.zeros(3).scatter(0, L.tensor([0, 2]), L.tensor([4.0, 5.0]),
                                       reduce=reduce))


@pytest.mark.parametrize("api", ["sum", "prod", "median", "nanmedian", "mean", "amax"])
def test_full_reduction_out(api):
    check(lambda L: getattr(L, api)(L.tensor([1.0, 2.0, 4.0]), out=L.empty(())))
    if api == "sum":
        check(lambda L: L.sum(L.tensor([1.0, 2.0, 4.0]), None, out=L.empty(())))


# -- 3. searchsorted / bucketize ------------------------------------------------------------------
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(right):
    rng = np.random.default_rng(0)
    seq = np.sort(rng.integers(-10, 10, 40)).astype(np.float32)
    seq2 = np.sort(rng.integers(-10, 10, (3, 17)), 1).astype(np.float32)
    vals = rng.integers(-12, 12, (3, 9)).astype(np.float32)
    vals[0, :3] = [np.nan, np.inf, -np.inf]
    check(lambda L: L.searchsorted(L.tensor(seq), L.tensor(vals), right=right))
    check(lambda L: L.searchsorted(L.tensor(seq2), L.tensor(vals), right=right, out_int32=True))
    check(lambda L: L.searchsorted(L.tensor(seq).long(), L.tensor(vals), right=right))
    check(lambda L: L.searchsorted(L.tensor(seq), 3, side="right" if right else "left"))
    perm = rng.permutation(40)
    check(lambda L: L.searchsorted(L.tensor(seq[perm]), L.tensor(vals), right=right,
                                   sorter=L.argsort(L.tensor(seq[perm]), stable=True)))
    check(lambda L: L.bucketize(L.tensor(vals), L.tensor(seq), right=right))
    check(lambda L: L.searchsorted(L.tensor(seq), L.tensor(vals), sorter=L.tensor([0, 1])))
    check(lambda L: L.searchsorted(L.tensor(seq2), L.tensor(vals[:2])))


# -- 4. functions that were missing -------------------------------------------------------------
@pytest.mark.parametrize("args", [(0, 2, 5), (-1.5, 3.25, 7), (2, 2, 1), (0, 3, 0), (1, 10, 10),
                                  (0.1, 0.7, 33)])
@pytest.mark.parametrize("dtype", [None, "float64", "int64", "float16", "int32"])
@pytest.mark.parametrize("base", [10.0, 2.0, 0.5])
def test_logspace(args, dtype, base):
    check(lambda L: L.logspace(*args, base=base,
                               dtype=getattr(L, dtype) if dtype else None), rtol=1e-6)


def test_isin():
    a = [[1, 2, 3], [4, 5, 6]]
    check(lambda L: L.isin(L.tensor(a), L.tensor([2, 5, 9])))
    check(lambda L: L.isin(L.tensor(a), L.tensor([2, 5, 9]), invert=True))
    check(lambda L: L.isin(L.tensor([1.0, float("nan"), 2.5]), L.tensor([float("nan"), 2.5])))
    check(lambda L: L.isin(L.tensor([1, 2, 3]), L.tensor([1.5, 2.0])))
    check(lambda L: L.isin(2, L.tensor([1, 2])))
    check(lambda L: L.isin(L.tensor([1, 2]), 2))
    check(lambda L: L.isin(L.tensor([1, 2]), L.tensor([], dtype=L.int64)))
    check(lambda L: L.isin(L.tensor([True]), L.tensor([1])))


@pytest.mark.parametrize("N", [None, 0, 1, 4])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander(N, increasing):
    check(lambda L: L.vander(L.tensor([1, 2, 3], dtype=L.int32), N=N, increasing=increasing))
    check(lambda L: L.vander(L.tensor([True, False]), N=N, increasing=increasing))

    # (torch 2.13's vander backward raises "modified by an inplace operation" -- its cumprod_out
    # into a view of its result: a torch bug, not followed; tests/test_ops46.py checks ours)
    check(lambda L: L.vander(L.tensor([0.5, -2.0, 3.0]), N=N, increasing=increasing))
    check(lambda L: L.vander(L.ones(2, 2)))
    check(lambda L: L.vander(L.ones(2), N=-1))


_H = [0.5, 1.0, 1.0, 2.5, 3.0, -1.0, 7.25, 3.0, 2.0, 0.0, 4.0, float("nan")]


@pytest.mark.parametrize("kw", [dict(bins=4), dict(bins=5, min=0, max=4), dict(bins=3, min=1, max=1),
                                dict(bins=7, min=-1, max=7.25), dict(bins=0), dict(bins=3, min=3, max=1)])
def test_histc(kw):
    check(lambda L: L.histc(L.tensor(_H[:-1]), **kw))
    check(lambda L: L.histc(L.tensor(_H), **kw))
    check(lambda L: L.histc(L.tensor(_H[:-1], dtype=L.float64), **kw))
    check(lambda L: L.tensor(_H[:-1]).histc(**kw))
    check(lambda L: L.histc(L.tensor([], dtype=L.float32), **kw))
    check(lambda L: L.histc(L.tensor([1, 2]), **kw))
    rng = np.random.default_rng(2)
    r = rng.standard_normal(1000).astype(np.float32)
    check(lambda L: L.histc(L.tensor(r), **kw))


@pytest.mark.parametrize("kw", [dict(bins=4), dict(bins=5, range=(0.0, 4.0)),
                                dict(bins=3, density=True), dict(bins=6, range=(-1.0, 7.25)),
                                dict(bins=4, range=(1.0, 1.0))])
def test_histogram(kw):
    check(lambda L: L.histogram(L.tensor(_H[:-1]), **kw))
    check(lambda L: L.histogram(L.tensor(_H[:-1]), weight=L.tensor(_H[:-1]) * 0 + 2, **kw))
    check(lambda L: L.tensor(_H[:-1]).reshape(1, -1).histogram(**kw))
    rng = np.random.default_rng(3)
    r = rng.standard_normal(1000).astype(np.float32)
    check(lambda L: L.histogram(L.tensor(r), **kw))
    check(lambda L: L.histogram(L.tensor(r).double(), **kw))


def test_histogram_edges_tensor_and_errors():
    check(lambda L: L.histogram(L.tensor(_H[:-1]), bins=L.tensor([0.0, 1.0, 2.5, 7.25])))
    check(lambda L: L.histogram(L.tensor(_H[:-1]), bins=L.tensor([0.0, 1.0, 2.5]),
                                density=True))
    check(lambda L: L.histogram(L.tensor([]), bins=2))
    check(lambda L: L.histogram(L.tensor([1, 2]), bins=2))
    check(lambda L: L.histogram(L.tensor([1.0, 2.0]), bins=2, range=(3.0, 1.0)))
    check(lambda L: L.histogram(L.tensor(_H), bins=2))


def _cov_input(L, dt="float32"):
    rng = np.random.default_rng(4)
    return L.tensor(rng.standard_normal((3, 7)), dtype=getattr(L, dt))


@pytest.mark.parametrize("correction", [0, 1, 2, 9])
def test_cov_and_corrcoef(correction):
    check(lambda L: L.cov(_cov_input(L), correction=correction), rtol=1e-5, atol=1e-6)
    check(lambda L: L.cov(_cov_input(L, "float64")[0], correction=correction), rtol=1e-12)
    fw = [1, 2, 0, 3, 1, 1, 2]
    aw = [0.5, 1.0, 2.0, 0.25, 1.0, 3.0, 1.5]
    check(lambda L: L.cov(_cov_input(L, "float64"), correction=correction,
                          fweights=L.tensor(fw), aweights=L.tensor(aw, dtype=L.float64)),
          rtol=1e-10)
    check(lambda L: L.cov(L.tensor([[1, 2, 4], [3, 1, 0]]), correction=correction), rtol=1e-6)

    def g(L):
        x = _cov_input(L, "float64").requires_grad_()
        c = L.corrcoef(x)
        (c * L.arange(9.0, dtype=L.float64).reshape(3, 3)).sum().backward()
        return c, x.grad
    check(g, rtol=1e-9, atol=1e-12)
    check(lambda L: L.corrcoef(L.tensor([1.0, 2.0, 4.0])))
    check(lambda L: L.corrcoef(L.tensor([1.0, 1.0, 1.0])))
    check(lambda L: _cov_input(L).cov(), rtol=1e-5, atol=1e-6)
    check(lambda L: _cov_input(L).corrcoef(), rtol=1e-5, atol=1e-6)


def test_cov_errors():
    check(lambda L: L.cov(L.ones(2, 2, 2)))
    check(lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1.0, 2, 1])))
    check(lambda L: L.cov(L.ones(2, 3), aweights=L.tensor([1, 2, 1])))
    check(lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1, 2])))
    check(lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1, -2, 1])))
    check(lambda L: L.cov(L.ones(2, 3), aweights=L.tensor([0.0, 0.0, 0.0])))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("api", ["quantile", "nanquantile"])
def test_quantile(interpolation, api):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4, 5))
    a[0, 1, 2] = np.nan
    a[2, :, 1] = np.nan
    for q in (0.0, 0.3, 0.5, 1.0, [0.1, 0.5, 0.9], [0.25]):
        for dim, keepdim in ((None, False), (None, True), (1, False), (-1, True), (0, False)):
            def f(L, q=q, dim=dim, keepdim=keepdim):
                x = L.tensor(a, requires_grad=True)
                qq = L.tensor(q, dtype=L.float64) if isinstance(q, list) else q
                r = getattr(L, api)(x, qq, dim=dim, keepdim=keepdim,
                                    interpolation=interpolation)
                (r * 1.5).nan_to_num().sum().backward()
                return r, x.grad
            check(f, rtol=1e-12)
    check(lambda L: getattr(L, api)(L.tensor(a, dtype=L.float32), 0.4, 1), rtol=1e-6)
    check(lambda L: getattr(L.tensor(a), api)(0.4, 2, True), rtol=1e-12)


def test_quantile_errors():
    for f in (lambda L: L.quantile(L.tensor([1, 2]), 0.5),
              lambda L: L.quantile(L.tensor([1.0, 2]), 1.5),
              lambda L: L.quantile(L.tensor([1.0, 2]), L.tensor([0.5], dtype=L.float64)),
              lambda L: L.quantile(L.tensor([1.0, 2]), L.tensor([1.5])),
              lambda L: L.quantile(L.tensor([]), 0.5),
              lambda L: L.quantile(L.tensor([1.0, 2]), 0.5, interpolation="foo"),
              lambda L: L.quantile(L.ones(2, 3), L.tensor([[0.5]])),
              lambda L: L.nanquantile(L.tensor([float("nan")] * 3), 0.5),
              lambda L: L.quantile(L.tensor([1.0, 2], dtype=L.float16), 0.5)):
        check(f)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(edge_order):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 5))
    check(lambda L: L.gradient(L.tensor(a), edge_order=edge_order), rtol=1e-12)
    check(lambda L: L.gradient(L.tensor(a), spacing=2.0, dim=1, edge_order=edge_order),
          rtol=1e-12)
    check(lambda L: L.gradient(L.tensor(a), spacing=[0.5, 3], edge_order=edge_order),
          rtol=1e-12)
    check(lambda L: L.gradient(L.tensor(a), spacing=(L.tensor([0.0, 1, 3, 3.5, 6]),), dim=1,
                               edge_order=edge_order), rtol=1e-12)
    check(lambda L: L.gradient(L.tensor(a), spacing=(L.tensor([0.0, 1, 3, 3.5]),
                                                      L.tensor([0.0, 0.5, 1, 3, 6])),
                               edge_order=edge_order), rtol=1e-12)
    check(lambda L: L.gradient(L.tensor([1, 2, 4, 8]), edge_order=edge_order), rtol=1e-6)
    check(lambda L: L.gradient(L.tensor([1, 2, 4, 8], dtype=L.float32), dim=[0],
                               edge_order=edge_order), rtol=1e-6)

    def g(L):
        x = L.tensor(a, requires_grad=True)
        r = L.gradient(x, dim=0, edge_order=edge_order)[0]
        (r * L.arange(20.0, dtype=L.float64).reshape(4, 5)).sum().backward()
        return x.grad
    check(g, rtol=1e-12)


def test_gradient_errors():
    for f in (lambda L: L.gradient(L.tensor([1, 2, 4], dtype=L.uint8)),
              lambda L: L.gradient(L.tensor([1.0, 2]), edge_order=2),
              lambda L: L.gradient(L.tensor([1.0, 2, 4]), spacing=[1.0, 2.0]),
              lambda L: L.gradient(L.tensor([1.0, 2, 4]), edge_order=3),
              lambda L: L.gradient(L.ones(3, 3), spacing=[1.0], dim=[0, 1])):
        check(f)


@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf")])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_renorm(p, dim):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4, 2)) * 2

    def f(L):
        x = L.tensor(a, dtype=L.float32, requires_grad=True)
        r = L.renorm(x, p, dim, 1.5)
        (r * L.arange(24.0).reshape(3, 4, 2)).sum().backward()
        return r, x.grad
    check(f, rtol=2e-5, atol=1e-6)
    check(lambda L: L.tensor(a).renorm(p, dim, 0.0), rtol=1e-12)
    check(lambda L: L.tensor(a).clone().renorm_(p, dim, 2.0), rtol=1e-12)
    check(lambda L: L.renorm(L.tensor(a, dtype=L.float16), p, dim, 1.5), rtol=2e-3)


def test_renorm_errors():
    for f in (lambda L: L.renorm(L.ones(3), 2, 0, 1),
              lambda L: L.renorm(L.ones(3, 2, dtype=L.int64), 2, 0, 1),
              lambda L: L.renorm(L.ones(3, 2), 0, 0, 1),
              lambda L: L.renorm(L.ones(3, 2), 2, 0, -1)):
        check(f)
