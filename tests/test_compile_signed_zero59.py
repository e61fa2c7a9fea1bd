"""``tensorplay.compile`` tells a float argument 0.0 from -0.0 (session 59).

A graph bakes a Python number in, and 0.0 == -0.0 with one hash: the guard key had made one entry
of both, so ``f(x, -0.0)`` after ``f(x, 0.0)`` replayed the 0.0 graph (``x * -0.0`` gave 0.0).
torch.compile gives eager's zero. Every way an argument reaches the key: positional (the fast
path), keyword and inside a container (the full lookup), complex parts.
"""

from __future__ import annotations

import pytest

import tensorplay as tp


def _signs(t):
    return tp.signbit(t).tolist()


@pytest.mark.parametrize("how", ["positional", "keyword", "tuple", "dict"])
def test_a_compiled_function_tells_zero_from_minus_zero(how):
    wrap = {"tuple": lambda b: (b,), "dict": lambda b: {"b": b}}.get(how, lambda b: b)
    unpack = {"tuple": lambda b: b[0], "dict": lambda b: b["b"]}.get(how, lambda b: b)

    def body(x, b):
        return (x * unpack(b)) * 2.0

    f = tp.compile(body)
    x = tp.ones(3)
    for b in (0.0, -0.0, 0.0, -0.0, 1.5):
        arg = wrap(b)
        got = f(x, b=arg) if how == "keyword" else f(x, arg)
        want = body(x, arg)
        assert _signs(got) == _signs(want), b
        assert got.tolist() == want.tolist()


def test_complex_zero_parts_are_told_apart():
    f = tp.compile(lambda x, c: (x * c.real) * 2.0)
    x = tp.ones(2)
    for c in (complex(0.0, 1.0), complex(-0.0, 1.0), complex(0.0, 1.0)):
        assert _signs(f(x, c)) == _signs((x * c.real) * 2.0), c


def test_equal_nonzero_numbers_and_same_signed_zeros_share_a_graph():
    f = tp.compile(lambda x, b: x * b)
    x = tp.ones(2)
    f(x, 2.5)
    f(x, -0.0)
    n = f.cache_size
    f(x, 2.5)
    f(x, -0.0)
    f(x, float("-0.0"))
    assert f.cache_size == n == 2


@pytest.mark.parametrize("kind", ["float64", "float32"])
def test_numpy_float_zeros_are_told_apart(kind):
    # NumPy's scalars reach the full lookup's key (np.float64 is a float subclass, np.float32
    # a number of its own); their zeros hash alike too (a fresh user, session 59)
    np = pytest.importorskip("numpy")
    import math
    make = getattr(np, kind)
    f = tp.compile(lambda t, s: t * math.copysign(1.0, s))
    x = tp.tensor([1.0, 2.0])
    for v in (0.0, -0.0, 0.0, -0.0):
        assert f(x, make(v)).tolist() == [math.copysign(1.0, v), math.copysign(2.0, v)], v
