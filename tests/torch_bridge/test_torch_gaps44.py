"""Session 44's additions against torch itself: atan2/arctan2, hypot, fmod, copysign, nextafter,
asinh/acosh/atanh (and the arc* aliases), the functions logaddexp(2)/xlogy/float_power, and the
named-tuple reductions aminmax, median, nanmedian, kthvalue, mode, cummax, cummin.

For each call: the same outcome (both raise, or neither), dtype, shape and values
(``_compare.values_match``), the named tuple's type name and fields, and, for differentiable
calls, the gradients of every input that requires grad (the sum of the output times a fixed
weight, backpropagated on both sides).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402
from _compare import values_match  # noqa: E402

NAN = float("nan")
# inputs (numpy values, dtype name): floats with ties, signed zeros and NaN; integers; bools
F = np.array([[1.5, -2.0, 0.0, -0.0, 3.25], [0.5, 0.5, -1.0, 2.0, 0.5]])
G = np.array([[2.0, 3.0, -0.0, 1.0, -1.5], [0.25, -0.5, 4.0, -2.0, 0.5]])
I = np.array([[7, -7, 3, 0, 2], [5, 5, -1, 2, 5]])
FN = np.array([[3.0, 1.0, 2.0, 1.0, 3.0], [NAN, 1.0, NAN, 0.0, 5.0], [2.0, 2.0, 2.0, 2.0, 2.0]])
U = np.array([0.9, 1.5, 2.0, 4.0, 1.1])        # acosh's domain
A = np.array([-0.9, -0.2, 0.0, 0.3, 0.75])     # atanh's domain


def _t(lib, v, dt, grad=False):
    t = lib.tensor(v.tolist(), dtype=getattr(lib, dt))
    return t.requires_grad_(True) if grad else t


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x.detach().numpy(force=True))


def _dtname(x):
    return str(x.dtype).split(".")[-1]


def _compare(r_torch, r_tp, what):
    if isinstance(r_torch, tuple):
        assert type(r_tp).__name__ == type(r_torch).__name__, what
        names = ("values", "indices", "min", "max")
        assert [n for n in names if hasattr(r_tp, n)] == [n for n in names if hasattr(r_torch, n)]
        assert all(getattr(r_tp, n) is r_tp[i] for i, n in enumerate(r_tp._fields)), what
        assert len(r_tp) == len(r_torch), what
        for a, b in zip(r_torch, r_tp):
            _compare(a, b, what)
        return
    assert _dtname(r_tp) == _dtname(r_torch), (what, r_tp.dtype, r_torch.dtype)
    assert tuple(r_tp.shape) == tuple(r_torch.shape), (what, r_tp.shape, r_torch.shape)
    assert values_match(_dtname(r_torch), _np(r_tp), _np(r_torch)), (what, _np(r_tp),
                                                                     _np(r_torch))


def _run(lib, call, inputs):
    try:
        ts = [_t(lib, *i) if isinstance(i, tuple) else i for i in inputs]
        return ts, call(lib, *ts)
    except (RuntimeError, TypeError, IndexError, NotImplementedError, ValueError) as e:
        return None, e


def _check(call, inputs, grad=True):
    tts, rt = _run(torch, call, inputs)
    pts, rp = _run(tp, call, inputs)
    if isinstance(rt, Exception):
        assert isinstance(rp, Exception), ("torch raises", rt, "tensorplay gives", rp)
        return
    assert not isinstance(rp, Exception), ("tensorplay raises", rp, "torch gives", rt)
    _compare(rt, rp, inputs)
    if not grad:
        return
    outs_t = rt if isinstance(rt, tuple) else (rt,)
    outs_p = rp if isinstance(rp, tuple) else (rp,)
    diff = [i for i, o in enumerate(outs_t) if o.requires_grad]
    assert [i for i, o in enumerate(outs_p) if o.requires_grad] == diff
    if not diff:
        return
    lt = sum((o * _t(torch, np.linspace(0.5, 1.5, o.numel()).reshape(tuple(o.shape)),
                     _dtname(o))).sum() for o in (outs_t[i] for i in diff))
    lp = sum((o * _t(tp, np.linspace(0.5, 1.5, o.numel()).reshape(tuple(o.shape)),
                     _dtname(o))).sum() for o in (outs_p[i] for i in diff))
    lt.backward()
    lp.backward()
    for a, b in zip(tts, pts):
        if isinstance(a, torch.Tensor) and a.requires_grad:
            assert b.grad is not None, ("no gradient", inputs)
            _compare(a.grad, b.grad, ("grad", inputs))


BINARY = ["atan2", "arctan2", "hypot", "fmod", "copysign", "nextafter", "logaddexp",
          "logaddexp2", "xlogy", "float_power", "remainder"]
OPERANDS = [
    ((F, "float64", True), (G, "float64", True)),
    ((F, "float32", True), (G[0], "float32", True)),          # broadcast
    ((F, "float32", False), (G, "float64", False)),           # promotion
    ((F, "float16", False), (G, "float16", False)),
    ((I, "int64", False), (I[::-1].copy(), "int64", False)),  # integer rules (and 0 divisors)
    ((I, "int32", False), (np.array([3, -2, 1, 4, 5]), "int64", False)),
    ((np.abs(I), "uint8", False), (np.array([3, 2, 1, 4, 5]), "uint8", False)),
    ((I > 0, "bool", False), (I < 3, "bool", False)),
    ((F, "float64", True), 2.5), ((F, "float32", False), -1), ((I, "int64", False), 3),
    ((I, "int64", False), 2.5), (2, (G, "float32", False)),
]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("k", range(len(OPERANDS)))
def test_binary_function_matches_torch(name, k):
    a, b = OPERANDS[k]
    _check(lambda lib, x, y: getattr(lib, name)(x, y), [a, b])


@pytest.mark.parametrize("name", ["atan2", "hypot", "fmod", "copysign", "nextafter", "xlogy"])
def test_keyword_and_method_spellings_match_torch(name):
    a, b = (F, "float32", False), (G, "float32", False)
    _check(lambda lib, x, y: getattr(lib, name)(input=x, other=y), [a, b], grad=False)
    _check(lambda lib, x, y: getattr(x, name)(other=y), [a, b], grad=False)


@pytest.mark.parametrize("name", ["atan2", "arctan2", "hypot", "fmod", "copysign", "nextafter",
                                  "xlogy", "remainder"])
@pytest.mark.parametrize("dts", [("float32", "float64"), ("float64", "float32"),
                                 ("int64", "float32"), ("float32", "int64")])
def test_in_place_methods_match_torch(name, dts):
    def call(lib, x, y):
        v = x._version
        r = getattr(x, name + "_")(y)
        assert r is x and x._version == v + 1
        return r
    _check(call, [(F, dts[0], False), (G, dts[1], False)], grad=False)


UNARY = ["asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("inp", [(F, "float64", True), (U, "float64", True), (A, "float32", True),
                                 (F, "float16", False), (I, "int64", False),
                                 (I > 0, "bool", False)])
def test_unary_function_matches_torch(name, inp):
    _check(lambda lib, x: getattr(lib, name)(x), [inp])
    _check(lambda lib, x: getattr(lib, name)(input=x), [inp], grad=False)
    _check(lambda lib, x: getattr(x.clone() if x.dtype.is_floating_point else x,
                                  name + "_")(), [inp], grad=False)


REDUCTIONS = {
    "aminmax": lambda lib, x: lib.aminmax(x),
    "aminmax(dim=1)": lambda lib, x: lib.aminmax(x, dim=1),
    "aminmax(dim=0, keepdim)": lambda lib, x: x.aminmax(dim=0, keepdim=True),
    "median": lambda lib, x: lib.median(x),
    "median(1)": lambda lib, x: lib.median(x, 1),
    "median(0, keepdim)": lambda lib, x: x.median(0, keepdim=True),
    "median(-1) row": lambda lib, x: x[0].median(-1),
    "nanmedian": lambda lib, x: lib.nanmedian(x),
    "nanmedian(1)": lambda lib, x: lib.nanmedian(x, 1),
    "kthvalue(1)": lambda lib, x: lib.kthvalue(x, 1),
    "kthvalue(5, 1)": lambda lib, x: lib.kthvalue(x, 5, 1),
    "kthvalue(2, 0, True)": lambda lib, x: x.kthvalue(2, 0, True),
    "kthvalue(0)": lambda lib, x: x.kthvalue(0),
    "kthvalue(6)": lambda lib, x: x.kthvalue(6),
    "mode": lambda lib, x: lib.mode(x),
    "mode(0, keepdim)": lambda lib, x: x.mode(0, keepdim=True),
    "cummax(1)": lambda lib, x: lib.cummax(x, 1),
    "cummax(0)": lambda lib, x: x.cummax(0),
    "cummin(1)": lambda lib, x: lib.cummin(x, 1),
    "cummin(-2)": lambda lib, x: x.cummin(-2),
    "cummax 0-dim": lambda lib, x: x[0, 0].cummax(0),
    "median 0-dim": lambda lib, x: x[0, 0].median(0),
}
# inputs whose ties torch's selection kernels break unspecified ways are left out of the
# index comparison (kthvalue/median's quickselect; mode with NaN): distinct-valued rows here
DISTINCT = np.array([[0.5, -1.25, 3.0, 2.0, -0.75], [4.0, 1.0, -2.0, 0.25, 1.5]])
REDUCTION_INPUTS = [(DISTINCT, "float64", True), (DISTINCT, "float32", True),
                    (np.array([[3, 1, 2, 9, 4], [5, 0, 7, 6, 8]]), "int64", False)]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("k", range(len(REDUCTION_INPUTS)))
def test_value_index_reductions_match_torch(name, k):
    _check(REDUCTIONS[name], [REDUCTION_INPUTS[k]])


@pytest.mark.parametrize("name", ["median", "median(1)", "aminmax", "aminmax(dim=1)",
                                  "cummax(1)", "cummin(1)", "cummax(0)", "mode",
                                  "nanmedian", "nanmedian(1)"])
def test_ties_and_nan_match_torch(name):
    # ties: cummax/cummin (last index reaching the extremum, as torch's `>=`), mode (the
    # smallest most frequent value, its last index), median (the lower median; the first NaN)
    inp = (FN, "float64", True) if not name.startswith("mode") else (FN[[0, 2]], "float64",
                                                                      True)
    _check(REDUCTIONS[name], [inp])


def test_median_all_splits_the_gradient_among_ties_as_torch():
    _check(lambda lib, x: lib.median(x), [(np.array([1.0, 2.0, 2.0, 5.0, 2.0]), "float64", True)])


@pytest.mark.parametrize("call", [
    lambda lib: lib.median(lib.zeros(2, 0), 1), lambda lib: lib.mode(lib.zeros(0)),
    lambda lib: lib.aminmax(lib.zeros(0)), lambda lib: lib.median(lib.tensor([True])),
    lambda lib: lib.kthvalue(lib.tensor([True, False]), 1),
    lambda lib: lib.median(lib.zeros(0)), lambda lib: lib.cummax(lib.zeros(0), 0),
    lambda lib: lib.cummax(lib.tensor([True, False, True]), 0),
    lambda lib: lib.mode(lib.tensor([True, False, False]), 0),
    lambda lib: lib.aminmax(lib.tensor([True, False])),
    lambda lib: lib.cummin(lib.tensor([[3, 1], [1, 4]], dtype=lib.uint8), 0),
])
def test_edge_cases_match_torch(call):
    _check(lambda lib: call(lib), [], grad=False)


# -- scatter_reduce prod/amax/amin (and sum/mean through the same op), scatter(reduce=) -----------
SELF = np.array([[1.5, 0.0, -2.0, 3.0], [2.0, 2.0, 0.5, -1.0], [0.0, 4.0, 1.0, 2.0]])
# ties with self and among src (amax/amin), zeros in self and src, one and two zeros reaching
# one position (prod)
SRC = np.array([[2.0, 0.0, 2.0, 3.0], [1.5, 2.0, 0.0, 0.0], [-2.0, 4.0, 4.0, 1.0]])
IDX = np.array([[0, 1, 0, 0], [0, 1, 2, 1], [2, 2, 1, 2]])


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin", "sum", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("dt", ["float64", "float32"])
def test_scatter_reduce_matches_torch_with_gradients(reduce, include_self, dim, dt):
    _check(lambda lib, x, s: x.scatter_reduce(dim, lib.tensor(IDX.tolist()), s, reduce,
                                              include_self=include_self),
           [(SELF, dt, True), (SRC, dt, True)])


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin", "sum", "mean"])
@pytest.mark.parametrize("dt", ["int64", "uint8", "bool", "float16"])
def test_scatter_reduce_dtypes_match_torch(reduce, dt):
    self_v = np.abs(SELF) if dt == "uint8" else SELF
    src_v = np.abs(SRC) if dt == "uint8" else SRC
    for inc in (True, False):
        _check(lambda lib, x, s: x.scatter_reduce(1, lib.tensor(IDX.tolist()), s, reduce,
                                                  include_self=inc),
               [(self_v, dt, False), (src_v, dt, False)], grad=False)


@pytest.mark.parametrize("call", [
    lambda lib, x, s: x.scatter_reduce(0, lib.tensor([[0, 1]]), s, "amax"),   # smaller index
    lambda lib, x, s: x.scatter_reduce_(1, lib.tensor(IDX.tolist()), s, "prod"),
    lambda lib, x, s: x.scatter(1, lib.tensor(IDX.tolist()), s, reduce="multiply"),
    lambda lib, x, s: x.scatter(1, lib.tensor(IDX.tolist()), 1.5, reduce="multiply"),
    lambda lib, x, s: x.scatter_(1, lib.tensor(IDX.tolist()), s, reduce="add"),
    lambda lib, x, s: x.scatter(1, lib.tensor(IDX.tolist()), s, reduce="max"),
    lambda lib, x, s: x.scatter_reduce(1, lib.tensor(IDX.tolist()), s, "max"),
    lambda lib, x, s: x.scatter_reduce(1, lib.tensor(IDX.tolist()), s.double(), "amax"),
    lambda lib, x, s: x.scatter_reduce(1, lib.tensor([[4]]), s, "amin"),
])
def test_scatter_reduce_forms_and_errors_match_torch(call):
    _check(call, [(SELF, "float32", False), (SRC, "float32", False)], grad=False)


def test_xlogy_edges_and_gradients_match_torch():
    x = np.array([0.0, 0.0, 1.5, 0.0, 2.0, 0.0, 1.5, -0.0])
    y = np.array([2.0, 0.0, 0.0, NAN, np.inf, -1.0, -1.0, 3.0])
    for dt in ("float64", "float32"):
        _check(lambda lib, a, b: lib.xlogy(a, b), [(x, dt, True), (y, dt, True)])
        _check(lambda lib, a: lib.xlogy(a, 0.0), [(x, dt, True)])
        _check(lambda lib, a: lib.xlogy(a, -2), [(x, dt, True)])
        _check(lambda lib, b: lib.xlogy(0, b), [(y, dt, True)])
    _check(lambda lib, a, b: lib.xlogy(a, b), [(x, "float16", False), (y, "float16", False)])
    _check(lambda lib, a, b: lib.xlogy(a, b), [(x, "float32", True), (y, "float64", True)])
