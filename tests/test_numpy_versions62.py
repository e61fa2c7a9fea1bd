"""Results that followed the installed NumPy (and ml_dtypes) version, now torch's under both.

CI runs the suite with NumPy 2.4 / ml_dtypes 0.7 and at the declared minimums (NumPy 1.26,
ml_dtypes 0.5). A sweep of the built-in ops over edge values (signed zeros, inf, NaN, dtype
limits, Python numbers out of a dtype's range) under both found these differences:

* ``tensorplay.tensor(300, dtype=tp.int8)``: NumPy 2 raised its own ``OverflowError``, NumPy
  1.26 wrapped to 44 with a ``DeprecationWarning``; torch checks every Python number as
  ``full`` does (``RuntimeError`` "value cannot be converted to type int8 without overflow";
  a negative int into uint8 wraps; a float is refused when its own value is out of range).
* ``bfloat16`` to an integer dtype: ml_dtypes 0.7 gives 0 for NaN/inf/out-of-range values,
  0.5 the C conversion's; torch converts bf16 through float32, as float32 does.
* ``topk``/``searchsorted`` of ``bfloat16`` with NaN: ml_dtypes 0.5's bf16 sort did not order
  NaN (``topk`` missed the largest values).

Every expected value below is torch 2.13's (cpu).
"""

import math

import pytest

import tensorplay as tp

nan, inf = math.nan, math.inf


# -- tensorplay.tensor of Python numbers into integer dtypes: torch's checked conversion ------
@pytest.mark.parametrize("data, dtype", [
    (300, tp.int8), ([300, 1], tp.int8), (-129, tp.int8), ([300, 1], tp.uint8),
    (2**31, tp.int32), ([[1], [2**31]], tp.int32), (2**31, tp.int16), (2**63 - 1, tp.int32),
    (-2**63, tp.uint8), (65504.0, tp.int16), (70000.0, tp.uint8), (127.9, tp.int8),
    (-128.5, tp.int8), (-0.5, tp.uint8), ([1, -1.7], tp.uint8), (255.9, tp.uint8),
    (nan, tp.int32), (inf, tp.int64), ([1.0, -inf], tp.int8), (1e10, tp.int32),
])
def test_tensor_number_out_of_range_refused(data, dtype):
    # torch 2.13: RuntimeError "value cannot be converted to type <dtype> without overflow"
    with pytest.raises(RuntimeError, match="without overflow"):
        tp.tensor(data, dtype=dtype)


@pytest.mark.parametrize("data, dtype, expected", [
    # torch 2.13's values
    (-1, tp.uint8, [255]), ([-129, 1], tp.uint8, [127, 1]), ([-255, 3], tp.uint8, [1, 3]),
    (127, tp.int8, [127]), ([-128, 5], tp.int8, [-128, 5]), (1.7, tp.int8, [1]),
    ([-1.7, 2], tp.int8, [-1, 2]), ([[127.9], [2]], tp.uint8, [127, 2]),
    (-0.5, tp.int8, [0]), (-128.5, tp.int16, [-128]), (65504.0, tp.int32, [65504]),
    (70000.0, tp.int32, [70000]), (1e10, tp.int64, [10000000000]),
    ([2**63 - 1, -2**63], tp.int64, [2**63 - 1, -2**63]), ([True, 2], tp.int8, [1, 2]),
    (2**31 - 1, tp.int32, [2**31 - 1]), ([[1, 2], [3, -4]], tp.int16, [1, 2, 3, -4]),
])
def test_tensor_number_in_range(data, dtype, expected, recwarn):
    t = tp.tensor(data, dtype=dtype)
    assert t.dtype == dtype
    assert t.reshape(-1).tolist() == expected
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


# -- bfloat16 to integer dtypes: through float32, as torch ------------------------------------
BF_VALUES = [nan, inf, -inf, 3e38, -3e38, 1e10, 300.0, -1.0, 255.5, -129.0]
BF_TO_INT = {   # torch 2.13: torch.tensor(BF_VALUES, dtype=torch.bfloat16).to(dtype).tolist()
    "int8": [0, 0, 0, 0, 0, 0, 44, -1, 0, 127],
    "uint8": [0, 0, 0, 0, 0, 0, 44, 255, 0, 127],
    "int16": [0, 0, 0, 0, 0, 0, 300, -1, 256, -129],
    "int32": [-2**31] * 6 + [300, -1, 256, -129],
    "int64": [-2**63] * 5 + [9999220736, 300, -1, 256, -129],
}


@pytest.mark.parametrize("name", sorted(BF_TO_INT))
def test_bfloat16_to_integer(name):
    x = tp.tensor(BF_VALUES, dtype=tp.bfloat16)
    dtype = getattr(tp, name)
    assert x.to(dtype).tolist() == BF_TO_INT[name]
    # the same values as float32's conversion (bf16 -> float32 is exact)
    assert x.to(dtype).tolist() == x.to(tp.float32).to(dtype).tolist()


def test_bfloat16_to_integer_compiled():
    # the cpu fuser's generated loop (>= 40000 elements) converts as eager does
    x = tp.tensor(BF_VALUES * 4000, dtype=tp.bfloat16)
    f = tp.compile(lambda t: (t * 1).to(tp.int32))
    assert f(x)[:10].tolist() == BF_TO_INT["int32"]


# -- topk / searchsorted of bfloat16 with NaN ------------------------------------------------
def test_bfloat16_topk_nan():
    x = tp.tensor([1.0, nan, 3.0, inf, -1.0, 3e38], dtype=tp.bfloat16)
    v, i = tp.topk(x, 3)
    # torch 2.13: values [nan, inf, 3.0041e+38], indices [1, 3, 5]
    assert math.isnan(v[0].item()) and v[1:].tolist() == [inf, 3.00405527047391e+38]
    assert i.tolist() == [1, 3, 5]
    v, i = tp.topk(x, 2, largest=False)
    assert v.tolist() == [-1.0, 1.0] and i.tolist() == [4, 0]    # torch 2.13


def test_bfloat16_searchsorted_nan():
    s = tp.tensor([-1.0, 0.0, 2.0, inf], dtype=tp.bfloat16)
    v = tp.tensor([nan, inf, -inf, 1.0], dtype=tp.bfloat16)
    assert tp.searchsorted(s, v).tolist() == [4, 3, 0, 2]                 # torch 2.13
    assert tp.searchsorted(s, v, right=True).tolist() == [4, 4, 0, 2]     # torch 2.13


# -- float64 / int64 to bfloat16: through float32 (rounded twice), as torch -------------------
# 1 + 2**-8 + 2**-30 rounds to float32's 1 + 2**-8, a tie that bf16 rounds to even (1.0);
# rounded once it is 1.0078125 (ml_dtypes 0.7's float64 -> bf16 cast). 2**31 + 2**23 + 1 alike.
V = 1 + 2**-8 + 2**-30
IV = 2**31 + 2**23 + 1


def test_python_float_to_bfloat16():
    assert tp.tensor(V, dtype=tp.bfloat16).item() == 1.0                        # torch 2.13
    assert tp.tensor([V, -V, IV], dtype=tp.bfloat16).tolist() == [1.0, -1.0, 2**31]
    # Python ints beyond int64 read as doubles (ml_dtypes 0.5 refused them: TypeError)
    assert tp.tensor([2**64, 2**70], dtype=tp.bfloat16).tolist() == [
        1.8446744073709552e+19, 1.1805916207174113e+21]                            # torch 2.13


def test_float64_and_int64_to_bfloat16():
    assert tp.tensor([V, -V], dtype=tp.float64).to(tp.bfloat16).tolist() == [1.0, -1.0]
    x = tp.tensor([IV, 2**62 + 2**55 + 1], dtype=tp.int64)
    assert x.to(tp.bfloat16).tolist() == [2147483648.0, 4.647714815446352e+18]   # torch 2.13
    # compiled (the cpu fuser's loop, >= 40000 elements)
    f = tp.compile(lambda t: (t * 1.0).to(tp.bfloat16))
    big = tp.tensor([V, -V, 0.5, -0.0] * 10000, dtype=tp.float64)
    assert f(big)[:4].tolist() == [1.0, -1.0, 0.5, -0.0]


def test_fill_and_copy_into_bfloat16():
    x = tp.zeros(2, dtype=tp.bfloat16)
    assert x.fill_(V).tolist() == [1.0, 1.0]                                     # torch 2.13
    assert x.copy_(tp.tensor([V, -V], dtype=tp.float64)).tolist() == [1.0, -1.0]
    x[0] = V
    assert x.tolist() == [1.0, -1.0]


def test_bfloat16_op_with_float64_zero_dim():
    # fmod's operands are converted to the common dtype (bf16) first: V becomes 1.0 (torch 2.13)
    r = tp.fmod(tp.tensor([3.0], dtype=tp.bfloat16), tp.tensor(V, dtype=tp.float64))
    assert r.tolist() == [0.0]
