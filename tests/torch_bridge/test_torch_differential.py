"""TensorPlay's Python operators and in-place methods against torch itself, as the oracle.

Every binary operator (``+ - * / // % ** & | ^ << >> == < >= @``), unary operator (``- + abs ~``)
and in-place form (``+= -= *= /= //= %= **= &= |= ^=``, ``add_``/``sub_``/``mul_``/``div_``/
``clamp_``/``relu_``/``fill_``/``zero_``) on every pair of float32/float64/int64/int32/int8/uint8/
bool operands, and with Python numbers on either side: the result's dtype, shape and values must
be torch's, or both must raise. This is where the torch session (the only place torch runs in CI)
serves the core's own semantics: such a run found ``int /= int`` writing INT64_MIN,
``float32 -= uint8`` computing ``x + (256 - b)``, ``&``/``|``/``~`` logical on integers and
``x /= 3`` off in the last bit.

``LENIENT`` lists the calls TensorPlay accepts where torch refuses (the answer given is the
obvious one); any other divergence fails, and so does a listed one that stops diverging.
"""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402

DTYPES = ["float32", "float64", "int64", "int32", "int8", "uint8", "bool"]
NUMBERS = [2, -1, 2.5, True, 0]

BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
          "pow": operator.pow, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
          "lshift": operator.lshift, "rshift": operator.rshift, "eq": operator.eq,
          "lt": operator.lt, "ge": operator.ge, "matmul": operator.matmul}
UNARY = {"neg": operator.neg, "pos": operator.pos, "abs": abs, "invert": operator.invert}
IN_PLACE = {"iadd": operator.iadd, "isub": operator.isub, "imul": operator.imul,
            "itruediv": operator.itruediv, "ifloordiv": operator.ifloordiv,
            "imod": operator.imod, "ipow": operator.ipow, "iand": operator.iand,
            "ior": operator.ior, "ixor": operator.ixor}
METHODS = ["add_", "sub_", "mul_", "div_", "clamp_", "relu_", "fill_", "zero_"]

# accepted by TensorPlay, refused by torch (answers: the obvious ones). abs: its eager kernel is
# the array API's own abs; a bool test there would cost every abs call ~0.2 µs
LENIENT = {"abs bool"}


def _array(dtype, shape=(2, 3), seed=0):
    g = np.random.default_rng(seed)
    if dtype == "bool":
        return g.random(shape) > 0.5
    if dtype.startswith("int") or dtype == "uint8":
        return g.integers(-5 if dtype.startswith("int") else 0, 6, shape).astype(dtype)
    return (g.standard_normal(shape) * 2).astype(dtype)


def _pair(a):
    a = np.asarray(a)      # a 0-dim draw is a NumPy scalar; reshape: tolist() of (0, 3) is []
    return torch.from_numpy(a.copy()), tp.tensor(a.tolist(), dtype=getattr(
        tp, str(a.dtype))).reshape(a.shape)


def _summary(r, lib):
    """A comparable picture of a result: ("T", dtype, shape, values) or ("V", value)."""
    if isinstance(r, (tuple, list)):
        return tuple(_summary(x, lib) for x in r)
    if isinstance(r, torch.Tensor if lib == "torch" else tp.Tensor):
        dt = str(r.dtype).split(".")[-1]
        vals = r.detach().numpy() if lib == "torch" else np.asarray(r.tolist())
        return ("T", dt, tuple(r.shape), np.asarray(vals).reshape(tuple(r.shape)))
    return ("V", r)


def _same(a, b):
    if isinstance(a[0], tuple) or isinstance(b[0], tuple):    # several results
        return isinstance(a[0], tuple) and isinstance(b[0], tuple) and len(a) == len(b) and \
            all(_same(x, y) for x, y in zip(a, b))
    if a[0] != b[0] or len(a) != len(b):
        return False
    if a[0] == "V":
        return a[1] == b[1] or (isinstance(a[1], float) and math.isclose(a[1], b[1],
                                                                          rel_tol=1e-6))
    if a[0] == "T":
        if a[1] != b[1] or a[2] != b[2]:
            return False
        if a[1] == "bool" or a[1].startswith(("int", "uint")):
            return bool((a[3] == b[3]).all())
        x, y = a[3].astype(float), b[3].astype(float)
        # zeros compare by sign too (-0.0 is observable: 1 / x, copysign, atan2)
        zeros = (x == 0) & (y == 0)
        return bool(np.allclose(x, y, rtol=1e-6, atol=0, equal_nan=True)
                    and (np.signbit(x[zeros]) == np.signbit(y[zeros])).all())
    return all(_same(x, y) for x, y in zip(a, b))


def _run(lib, fn, args):
    try:
        return "ok", _summary(fn(*args), lib)
    except Exception as e:     # noqa: BLE001 - a refusal of either side is an outcome
        return "raised", f"{type(e).__name__}: {e}"


def _diverges(label, fn, targs, pargs):
    t, p = _run("torch", fn, targs), _run("tp", fn, pargs)
    if t[0] == "raised" and p[0] == "raised":
        return None
    if t[0] == "ok" and p[0] == "ok" and _same(t[1], p[1]):
        return None
    return f"{label}: torch {t[0]} {str(t[1])[:120]!r}, tensorplay {p[0]} {str(p[1])[:120]!r}"


def _check(cases):
    wrong, lenient_seen = [], set()
    for label, fn, targs, pargs in cases:
        d = _diverges(label, fn, targs, pargs)
        if d is None:
            continue
        if label in LENIENT:
            lenient_seen.add(label)
        else:
            wrong.append(d)
    return wrong, lenient_seen


def _binary_cases(name, op):
    for d1, d2 in itertools.product(DTYPES, DTYPES):
        a, b = _array(d1), _array(d2, (3, 2) if name == "matmul" else (2, 3), seed=1)
        (ta, pa), (tb, pb) = _pair(a), _pair(b)
        yield f"{d1} {name} {d2}", op, (ta, tb), (pa, pb)
    for d in DTYPES:
        for s in NUMBERS:
            # a 0-dim tensor promotes as one with dimensions against a number (7 // 0-dim int8
            # tensor is int8)
            for shape in ((2, 3), ()):
                if name == "matmul" and not shape:
                    continue
                shown = d if shape else f"0-d {d}"
                ta, pa = _pair(_array(d, shape))
                yield f"{shown} {name} {s!r}", op, (ta, s), (pa, s)
                ta, pa = _pair(_array(d, shape))
                yield f"{s!r} {name} {shown}", op, (s, ta), (s, pa)


@pytest.mark.parametrize("name", sorted(BINARY) + sorted(IN_PLACE))
def test_binary_operators_match_torch(name):
    op = BINARY.get(name) or IN_PLACE[name]
    wrong, seen = _check(_binary_cases(name, op))
    assert not wrong, "\n".join(wrong)
    assert seen == {x for x in LENIENT if f" {name} " in x}, seen


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_operators_match_torch(name):
    cases = []
    for d in DTYPES:
        ta, pa = _pair(_array(d))
        cases.append((f"{name} {d}", UNARY[name], (ta,), (pa,)))
    wrong, seen = _check(cases)
    assert not wrong, "\n".join(wrong)
    assert seen == {x for x in LENIENT if x.startswith(f"{name} ")}, seen


@pytest.mark.parametrize("method", METHODS)
def test_in_place_methods_match_torch(method):
    def call(t, *args):
        r = getattr(t, method)(*args)
        return r is t, t

    cases = []
    for d in DTYPES:
        variants = [()] if method in ("relu_", "zero_") else [(2,), (-1,), (2.5,), (True,)] + [
            ("T", d2) for d2 in ("same", "float32", "int64", "uint8", "bool")]
        for v in variants:
            ta, pa = _pair(_array(d))
            if v and v[0] == "T":
                (tb, pb) = _pair(_array(d if v[1] == "same" else v[1], seed=3))
                if method == "fill_":
                    tb, pb = tb[0, 0], pb[0, 0]
                targs, pargs, shown = (ta, tb), (pa, pb), f"T:{v[1]}"
            else:
                targs, pargs, shown = (ta, *v), (pa, *v), ", ".join(map(repr, v))
            cases.append((f"{d}.{method}({shown})", call, targs, pargs))
    wrong, seen = _check(cases)
    assert not wrong, "\n".join(wrong)
    assert seen == {x for x in LENIENT if f".{method}(" in x}, seen


# -- functions: a number first, the reductions torch types specially, the composites -------------

NUMBER_FIRST = ["add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "bitwise_and",
                "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]


@pytest.mark.parametrize("fname", NUMBER_FIRST)
def test_functions_with_a_number_on_either_side_match_torch(fname):
    cases = []
    for d in DTYPES:
        for s in NUMBERS:
            for shape in ((2, 3), ()):
                shown = d if shape else f"0-d {d}"
                ta, pa = _pair(_array(d, shape))
                cases.append((f"{fname}({s!r}, {shown})", lambda lib, x, s=s: getattr(lib, fname)(
                    s, x), ("torch", ta), ("tp", pa)))
                cases.append((f"{fname}({shown}, {s!r})", lambda lib, x, s=s: getattr(lib, fname)(
                    x, s), ("torch", ta), ("tp", pa)))
    wrong = [d for d in (_diverges(label, lambda name, x, f=f: f(torch if name == "torch" else tp, x),
                                   t, p) for label, f, t, p in cases) if d is not None]
    assert not wrong, "\n".join(wrong)


def test_remainder_signs_of_zero_match_torch():
    a = np.array([4.0, -4.0, 0.0, -0.0, 3.0, -3.0, 5.5, -5.5, np.inf, np.nan], dtype="float32")
    cases = []
    for b in (-2.0, 2.0, 3.0, -1.5, np.inf, -np.inf):
        (ta, pa) = _pair(a)
        cases.append((f"float32 % {b}", operator.mod, (ta, b), (pa, b)))
        cases.append((f"{b} % float32", operator.mod, (b, ta), (b, pa)))
        (tb, pb) = _pair(np.full(a.shape, b, dtype="float64"))
        cases.append((f"float32 % float64({b})", operator.mod, (ta, tb), (pa, pb)))
    wrong, _ = _check(cases)
    assert not wrong, "\n".join(wrong)


def test_reductions_and_composites_match_torch():
    cases = []
    for d in DTYPES:
        for shape in ((2, 3), (), (0, 3)):
            for args in [(), (0,), (-1, True), ((0, 1),), ((0, 0),)]:
                if not shape and args and args[0] not in (0, -1):
                    continue
                for f in ("all", "any"):
                    ta, pa = _pair(_array(d, shape))
                    cases.append((f"{f}({d}{shape}, {args})",
                                  lambda x, *a, f=f: getattr(x, f)(*a), (ta, *args), (pa, *args)))
        for f in ("var_mean", "std_mean"):
            for args, kw in [((), {}), ((1,), {}), ((1, True), {}), ((True,), {}),
                             ((False,), {}), ((1, False, True), {}), ((-1,), {"correction": 2}),
                             ((), {"dim": 0, "correction": 0, "keepdim": True}),
                             (([0, 1],), {"unbiased": False}), ((None,), {"keepdim": True}),
                             ((1, True), {"correction": 1}), ((2,), {})]:
                ta, pa = _pair(_array(d))
                cases.append((f"{f}({d}, {args}, {kw})",
                              lambda x, *a, f=f, kw=kw: (torch if isinstance(x, torch.Tensor)
                                                         else tp).__dict__[f](x, *a, **kw),
                              (ta, *args), (pa, *args)))
        for f in ("clamp_min", "clamp_max", "clip"):
            for b in (2, 2.5, -1, 300, True):
                ta, pa = _pair(_array(d))
                cases.append((f"{d}.{f}({b!r})", lambda x, b, f=f: getattr(x, f)(b),
                              (ta, b), (pa, b)))
                ta, pa = _pair(_array(d))
                cases.append((f"{d}.{f}_({b!r})",
                              lambda x, b, f=f: (getattr(x, f + "_")(b) is x, x), (ta, b), (pa, b)))
        for f in ("logical_and", "logical_or", "logical_xor"):
            for d2 in DTYPES:
                (ta, pa), (tb, pb) = _pair(_array(d)), _pair(_array(d2, seed=1))
                cases.append((f"{d}.{f}({d2})", lambda x, y, f=f: (
                    getattr(x, f)(y), getattr(x.clone(), f + "_")(y)), (ta, tb), (pa, pb)))
        ta, pa = _pair(_array(d))
        cases.append((f"{d}.logical_not", lambda x: (x.logical_not(), x.clone().logical_not_()),
                      (ta,), (pa,)))
    wrong, _ = _check(cases)
    assert not wrong, "\n".join(wrong)
