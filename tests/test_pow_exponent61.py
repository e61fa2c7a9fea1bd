"""``pow`` of a floating tensor by a large Python-number exponent keeps the exponent's parity as
torch does (a fresh user's report): ``tensor([-1.0]) ** 16777217`` gave 1.0 because the exponent
was converted to float32 (2^24 + 1 rounds to the even 2^24) before the power.

torch 2.13 (cpu), each value computed there on these small tensors:

* float32 / float64: torch's scalar kernel takes the exponent as a double (``Scalar::to<double>``),
  so an odd integer up to 2^53 stays odd and the values follow from math:
  (-1) ** odd = -1, (-2) ** (2^31 - 1) = -inf, (-0.0) ** odd = -0.0, (-0.5) ** odd = -0.0, and a
  negative odd exponent: (-1) ** -odd = -1, (-0.0) ** -odd = -inf. 2^53 + 1 is not a double (it
  rounds to the even 2^53): +1, +inf, 0.0 there, in torch too. (torch's *vectorized* float32 loop,
  64 elements and more, reads the exponent at float32 and gives 1.0 -- shape-dependent; the
  scalar loop's double exponent, the mathematical value, is the one followed here.)
* float16: torch converts the exponent to Half, checked: a finite exponent beyond +-65504
  raises ``RuntimeError: value cannot be converted to type c10::Half without overflow``
  (65505, 65537, 2^24 + 1, -65505); +-inf and nan pass; 2049 becomes the even 2048 (+1.0) and
  257 stays odd (-1.0).
* bfloat16: torch converts the exponent to bfloat16 (no overflow there): 257, 65537 and
  2^24 + 1 become even (256, 65536, 2^24): (-1) ** them = 1.0 -- torch's values, kept.
"""

import math

import pytest

import tensorplay as tp

BASES = [-1.0, -2.0, -0.0, -0.5, 3.0]
ODD = ["-1.0", "-inf", "-0.0", "-0.0", "inf"]      # the odd power of BASES, from math
EVEN = ["1.0", "inf", "0.0", "0.0", "inf"]


def _show(values):
    """Values as strings keeping the sign of zeros (``-0.0 == 0.0`` would hide the bug)."""
    return [repr(v) for v in values]


def _eager_forms(x, e):
    """Every public spelling of ``pow(tensor, number)``, with its result's values."""
    y = x.clone()
    y.pow_(e)
    z = x.clone()
    z **= e
    return {"**": (x ** e).tolist(), "tp.pow": tp.pow(x, e).tolist(), "Tensor.pow": x.pow(e).tolist(),
            "pow_": y.tolist(), "**=": z.tolist()}


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
@pytest.mark.parametrize("e", [16777217, 2**31 - 1, 2**24 + 3, 16777217.0, 65537])
def test_odd_integer_exponent_keeps_the_sign(dtype, e):
    x = tp.tensor(BASES, dtype=dtype)
    for name, r in _eager_forms(x, e).items():
        assert _show(r) == ODD, (name, r)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_negative_odd_exponent(dtype):
    x = tp.tensor([-1.0, -0.0, 2.0], dtype=dtype)
    assert _show((x ** -16777217).tolist()) == ["-1.0", "-inf", "0.0"]


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_exponent_beyond_a_double_rounds_as_torch(dtype):
    # 2^53 + 1 has no double: it is 2^53 (even) in torch's kernel too
    x = tp.tensor(BASES, dtype=dtype)
    assert _show((x ** (2**53 + 1)).tolist()) == EVEN


def test_float32_large_exponent_result_is_float32():
    r = tp.tensor([-1.0, 1.0000001]) ** 16777217
    assert r.dtype is tp.float32
    # 1.0000001 is 1 + 2^-23 in float32; (1 + 2^-23) ** (2^24 + 1) is e^2 in float32
    assert r.tolist()[0] == -1.0 and math.isclose(r.tolist()[1], 7.389056, rel_tol=1e-6)


@pytest.mark.parametrize("e", [65505, 65537, 16777217, 16777217.0, -65505, 2**31 - 1, 65504.5])
def test_float16_exponent_beyond_half_is_refused(e):
    x = tp.tensor([-1.0, 2.0], dtype=tp.float16)
    msg = "value cannot be converted to type c10::Half without overflow"
    with pytest.raises(RuntimeError, match=msg):
        x ** e
    with pytest.raises(RuntimeError, match=msg):
        tp.pow(x, e)
    y = x.clone()
    with pytest.raises(RuntimeError, match=msg):
        y.pow_(e)
    assert y.tolist() == [-1.0, 2.0]     # untouched


def test_float16_exponents_within_half():
    x = tp.tensor([-1.0], dtype=tp.float16)
    assert (x ** 257).tolist() == [-1.0]        # odd, exact in float16
    assert (x ** 2049).tolist() == [1.0]        # float16(2049) = 2048, as torch
    assert (x ** 65504).tolist() == [1.0]
    assert (x ** -65504).tolist() == [1.0]
    assert (x ** float("inf")).tolist() == [1.0]
    assert (x ** float("-inf")).tolist() == [1.0]
    assert math.isnan((x ** float("nan")).tolist()[0])


@pytest.mark.parametrize("e", [257, 65537, 16777217])
def test_bfloat16_reads_the_exponent_at_bfloat16(e):
    x = tp.tensor([-1.0, -2.0, -0.0], dtype=tp.bfloat16)
    assert _show((x ** e).tolist()) == ["1.0", "inf", "0.0"]
    assert _show((x ** 3).tolist()) == ["-1.0", "-8.0", "-0.0"]


def test_float_power_keeps_the_parity():
    x = tp.tensor([-1.0, -2.0, -0.0])
    r = tp.float_power(x, 16777217)
    assert r.dtype is tp.float64 and _show(r.tolist()) == ["-1.0", "-inf", "-0.0"]
    assert tp.float_power(tp.tensor([-1.0]), 2**53 + 1).tolist() == [1.0]
    assert tp.float_power(tp.tensor([-1.0], dtype=tp.float16), 65537).tolist() == [-1.0]


# torch's values for x = [-2.0, 0.5, 4.0, -0.0]: x ** 2, x ** 3, x ** 0.5, x ** -1
SMALL = {2: ["4.0", "0.25", "16.0", "0.0"], 3: ["-8.0", "0.125", "64.0", "-0.0"],
         -1: ["-0.5", "2.0", "0.25", "-inf"]}
SQRT_HALF = {tp.float32: 0.7071067690849304, tp.float64: 0.7071067811865476,
             tp.float16: 0.70703125, tp.bfloat16: 0.70703125}
# pow(-0.0, 0.5): torch's float32/float64/bfloat16 kernels take sqrt (-0.0), its float16 one
# std::pow (+0.0)
SQRT_ZERO = {tp.float32: "-0.0", tp.float64: "-0.0", tp.float16: "0.0", tp.bfloat16: "-0.0"}
DTYPES = [tp.float32, tp.float64, tp.float16, tp.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_exponents_unchanged(dtype):
    x = tp.tensor([-2.0, 0.5, 4.0, -0.0], dtype=dtype)
    for e, want in SMALL.items():
        r = x ** e
        assert r.dtype is dtype and _show(r.tolist()) == want, e
    r = (x ** 0.5).tolist()
    assert math.isnan(r[0]) and r[1:3] == [SQRT_HALF[dtype], 2.0]
    assert repr(r[3]) == SQRT_ZERO[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("e", [16777217, 2**31 - 1, 65537, 257, 2049, 3, 2, -1, 16777217.0])
@pytest.mark.parametrize("n", [1, 8192])
def test_compiled_matches_eager(dtype, e, n):
    # n = 8192: 40960 elements, where the cpu fuser generates a loop of its own for the graph
    # (its constants are NumPy scalars of the step's dtype)
    x = tp.tensor(BASES * n, dtype=dtype)

    def alone(t):
        return t ** e

    def fused(t):
        return (t * 1.0) ** e * 1.0      # the power between two steps of one fused loop

    def inplace(t):
        u = t * 1.0
        u.pow_(e)
        return u

    for f in (alone, fused, inplace):
        try:
            w = f(x)
            want = _show(w[:5].tolist() + w[-5:].tolist())
        except RuntimeError as err:     # float16 beyond +-65504: torch refuses, compiled too
            assert dtype is tp.float16 and "c10::Half" in str(err)
            with pytest.raises(RuntimeError, match="c10::Half"):
                tp.compile(f)(x)
            continue
        cf = tp.compile(f)
        for _ in range(2):      # the fuser compiles a signature's loop on its first call or two
            r = cf(x)
            assert _show(r[:5].tolist() + r[-5:].tolist()) == want, f.__name__
            assert tp.equal(r, w)
    if dtype in (tp.float32, tp.float64) and e in (16777217, 2**31 - 1, 65537, 16777217.0):
        assert _show(tp.compile(alone)(x)[:5].tolist()) == ODD


def test_compiled_float16_number_past_its_range():
    # the cpu fuser's number conversion raised OverflowError (int(inf)) on a float16 step with an
    # int constant past 65504; it now leaves that step to the reference kernel, as eager
    x = tp.tensor([-1.0, 2.0] * 20000, dtype=tp.float16)

    def f(t):
        return tp.maximum(t * 1.0, 70000) - 1.0

    cf = tp.compile(f)
    for _ in range(2):
        assert tp.equal(cf(x), f(x))
