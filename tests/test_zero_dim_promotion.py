"""Result dtypes of 0-dim tensors with Python numbers do not depend on the NumPy version.

NumPy < 2 (no NEP 50) promotes a 0-dim array with a Python number by category (0-dim float32 *
2.5 -> float64); torch, and NumPy >= 2, keep the number weak (float32). The minimum-versions CI
session runs these on NumPy 1.26."""

import pytest

import tensorplay as tp

OPS = {
    "add": lambda x, s: x + s, "radd": lambda x, s: s + x, "sub": lambda x, s: x - s,
    "rsub": lambda x, s: s - x, "mul": lambda x, s: x * s, "div": lambda x, s: x / s,
    "rdiv": lambda x, s: s / x, "pow": lambda x, s: x ** s, "rpow": lambda x, s: s ** x,
    "remainder": lambda x, s: x % s, "floor_divide": lambda x, s: x // s,
}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("scalar", [2, 2.5])
def test_zero_dim_floating_with_python_number_keeps_its_dtype(op, dtype, scalar):
    dt = getattr(tp, dtype)
    x = tp.tensor(1.5, dtype=dt)
    r = OPS[op](x, scalar)
    assert r.dtype is dt and r.shape == ()
    # the same op on a 1-element vector: the 0-dim result is the same dtype and value
    v = OPS[op](tp.tensor([1.5], dtype=dt), scalar)
    assert v.dtype is dt and r.item() == v[0].item()


@pytest.mark.parametrize("op", ["add", "sub", "mul", "floor_divide", "remainder"])
def test_zero_dim_int32_with_python_int_keeps_int32(op):
    r = OPS[op](tp.tensor(7, dtype=tp.int32), 3)
    assert r.dtype is tp.int32 and r.item() == OPS[op](tp.tensor([7], dtype=tp.int32), 3)[0].item()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_reductions_to_zero_dim_keep_the_dtype(dtype):
    dt = getattr(tp, dtype)
    x = tp.ones(5, 3, dtype=dt)
    for r in [x.mean(), x.mean(-1).mean(), x.sum(-1).mean(), tp.ones(0, dtype=dt).mean(),
              tp.ones(7, dtype=dt).mean(-1), x.sum(), tp.tensor(-1.0, dtype=dt).relu(),
              -(x * 0.5).sum(-1).mean()]:
        assert r.dtype is dt and r.shape == ()


# -- numbers whose value NumPy < 2 lets pick the dtype (value-based casting: float16 + 257 ->
# float32, float32 + 70000 -> float64, int8 + 2.5 -> float64): the result dtype is torch's rule
# on every NumPy version, for dimensioned and 0-dim tensors, eager and compiled ------------------

_CMP = {"eq": lambda x, s: x == s, "lt": lambda x, s: x < s}
_DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64"]


def _torch_dtype(dt, op, s):
    """torch's result dtype for a ``dt`` tensor with the Python number ``s`` (written out)."""
    if op in _CMP:
        return tp.bool
    if dt.is_floating_point:
        return dt
    if isinstance(s, float) or op in ("div", "rdiv"):
        return tp.float32                      # the default dtype
    return dt                                  # an int number keeps an integer tensor's dtype


@pytest.mark.parametrize("s", [3, 257, 70000, -1, 2.5, 1e300])
@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("op", ["add", "radd", "sub", "rsub", "mul", "div", "rdiv", "remainder",
                                "floor_divide", "eq", "lt"])
def test_a_numbers_value_never_picks_the_result_dtype(op, dtype, s):
    dt = getattr(tp, dtype)
    fn = _CMP.get(op) or OPS[op]
    want = _torch_dtype(dt, op, s)
    for shape_values in ([2, 3], 2):
        x = tp.tensor(shape_values, dtype=dt)
        r = fn(x, s)
        assert r.dtype is want and r.shape == x.shape, (op, dtype, s, x.shape, r.dtype)
    c = tp.compile(lambda t, v: fn(t + 0, v))(tp.tensor([2, 3], dtype=dt), s)
    assert c.dtype is want, (op, dtype, s, "compiled", c.dtype)
