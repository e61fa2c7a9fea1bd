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
    return torch.from_numpy(a.copy()), tp.tensor(a.tolist(), dtype=getattr(tp, str(a.dtype)))


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
        return bool(np.allclose(a[3].astype(float), b[3].astype(float), rtol=1e-6, atol=0,
                                equal_nan=True))
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
            ta, pa = _pair(_array(d))
            yield f"{d} {name} {s!r}", op, (ta, s), (pa, s)
            ta, pa = _pair(_array(d))
            yield f"{s!r} {name} {d}", op, (s, ta), (s, pa)


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
