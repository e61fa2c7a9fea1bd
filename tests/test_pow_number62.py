"""``pow`` of a float32/float64/bfloat16 tensor by a Python number follows torch's cpu kernel
(``pow_tensor_scalar``), which does not call ``pow`` for six exponents: ``0.5`` is ``sqrt``,
``-0.5`` is ``1 / sqrt``, ``-1`` is the reciprocal, ``2`` is ``x * x``, ``3`` is ``x * x * x``
(each product rounded) and ``-2`` is ``1 / (x * x)``. The values differ from ``pow``'s in the
sign of a zero (``(-0.0) ** 0.5`` is ``-0.0``, ``(-0.0) ** -0.5`` is ``-inf``), at ``-inf``
(``(-inf) ** 0.5`` is NaN) and in the last bit of cubes (``3.1 ** 3`` in float32).

Found by CI's minimum-versions run: NumPy 2 takes ``sqrt`` for a broadcast exponent of 0.5 by
itself, NumPy 1.26 calls ``pow``, so ``(-0.0) ** 0.5`` had the sign of the installed NumPy.

Every expected value below is torch 2.13's (cpu), computed on these 12 elements. float16 keeps
``pow`` in torch (its kernel reads the exponent as Half and calls ``std::pow``).
"""

import math

import pytest

import tensorplay as tp

VALUES = [3.1, -0.0, -math.inf, 0.0, math.nan, 1e-30, 6.25, 1e20, -2.5, math.inf, 0.1, 1e-40]
EXPONENTS = [0.5, -0.5, -1, 2, 3, -2, -1.0, 2.0]
DTYPES = {"float32": tp.float32, "float64": tp.float64, "bfloat16": tp.bfloat16}
# (the float exponents -1.0 and 2.0 find the entries of -1 and 2: torch gives the same values)
TORCH = {
    ("float32", 0.5):
        "1.7606816291809082 -0.0 nan 0.0 nan 1.0000000036274937e-15 "
        "2.5 10000000000.0 nan inf 0.3162277638912201 9.999973025467516e-21",
    ("float32", -0.5):
        "0.5679618716239929 -inf nan inf nan 999999986991104.0 "
        "0.4000000059604645 1.000000013351432e-10 nan 0.0 3.1622776985168457 1.000002658868784e+20",
    ("float32", -1):
        "0.3225806653499603 -inf -0.0 inf nan 1.0000000150474662e+30 "
        "0.1599999964237213 9.999999682655225e-21 -0.4000000059604645 0.0 10.0 inf",
    ("float32", 2):
        "9.609999656677246 0.0 inf 0.0 nan 0.0 "
        "39.0625 inf 6.25 inf 0.010000000707805157 0.0",
    ("float32", 3):
        "29.790998458862305 -0.0 -inf 0.0 nan 0.0 "
        "244.140625 inf -15.625 inf 0.0010000000474974513 0.0",
    ("float32", -2):
        "0.10405827313661575 inf 0.0 inf nan inf "
        "0.025599999353289604 0.0 0.1599999964237213 0.0 99.99999237060547 inf",
    ("float64", 0.5):
        "1.760681686165901 -0.0 nan 0.0 nan 1e-15 "
        "2.5 10000000000.0 nan inf 0.31622776601683794 1e-20",
    ("float64", -0.5):
        "0.5679618342470648 -inf nan inf nan 999999999999999.9 "
        "0.4 1e-10 nan 0.0 3.162277660168379 1e+20",
    ("float64", -1):
        "0.3225806451612903 -inf -0.0 inf nan 9.999999999999999e+29 "
        "0.16 1e-20 -0.4 0.0 10.0 1e+40",
    ("float64", 2):
        "9.610000000000001 0.0 inf 0.0 nan 1.0000000000000001e-60 "
        "39.0625 1e+40 6.25 inf 0.010000000000000002 9.999999999999998e-81",
    ("float64", 3):
        "29.791000000000004 -0.0 -inf 0.0 nan 1.0000000000000002e-90 "
        "244.140625 1e+60 -15.625 inf 0.0010000000000000002 9.999999999999996e-121",
    ("float64", -2):
        "0.10405827263267428 inf 0.0 inf nan 1e+60 "
        "0.0256 1e-40 0.16 0.0 99.99999999999999 1.0000000000000003e+80",
    ("bfloat16", 0.5):
        "1.7578125 -0.0 nan 0.0 nan 9.992007221626409e-16 "
        "2.5 9999220736.0 nan inf 0.31640625 9.582060215814273e-21",
    ("bfloat16", -0.5):
        "0.5703125 -inf nan inf nan 1002754604531712.0 "
        "0.400390625 1.000444171950221e-10 nan 0.0 3.15625 1.0433939616691965e+20",
    ("bfloat16", -1):
        "0.322265625 -inf -0.0 inf nan 1.0002555517425873e+30 "
        "0.16015625 1.0005576689441423e-20 -0.400390625 0.0 10.0 inf",
    ("bfloat16", 2):
        "9.5625 0.0 inf 0.0 nan 0.0 "
        "39.0 inf 6.25 inf 0.010009765625 0.0",
    ("bfloat16", 3):
        "29.625 -0.0 -inf 0.0 nan 0.0 "
        "244.0 inf -15.625 inf 0.00099945068359375 0.0",
    ("bfloat16", -2):
        "0.1044921875 inf 0.0 inf nan inf "
        "0.025634765625 0.0 0.16015625 0.0 100.0 inf",
}
HALF = {   # torch's float16: pow throughout (+0.0 and inf at -0.0 and -inf for 0.5 / -0.5)
    0.5: "0.0 inf", -0.5: "inf 0.0", -1: "-inf -0.0", 2: "0.0 inf", 3: "-0.0 -inf",
    -2: "inf 0.0",
}


def _show(t):
    return " ".join(repr(v) for v in t.tolist())


def _eager_forms(x, e):
    """Every public spelling of ``pow(tensor, number)`` on ``x``."""
    y = x.clone()
    y.pow_(e)
    z = x.clone()
    z **= e
    return {"**": x ** e, "tp.pow": tp.pow(x, e), "Tensor.pow": x.pow(e), "pow_": y, "**=": z}


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("e", EXPONENTS)
def test_eager_takes_torchs_special_cases(name, e):
    x = tp.tensor(VALUES, dtype=DTYPES[name])
    for form, r in _eager_forms(x, e).items():
        assert r.dtype is DTYPES[name]
        assert _show(r) == TORCH[(name, e)], form


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("e", EXPONENTS)
@pytest.mark.parametrize("n", [1, 4096])
def test_compiled_takes_them_too(name, e, n):
    # n = 4096: 49152 elements, where the cpu fuser runs its own generated loop (blocks of the
    # chain, the power between two other steps); the cube reads its operand after writing
    x = tp.tensor(VALUES * n, dtype=DTYPES[name])
    want = " ".join([TORCH[(name, e)]] * n)

    def alone(t):
        return t ** e

    def fused(t):
        return (t * 1.0) ** e * 1.0

    def operand_dies_here(t):
        u = t * 1.0
        return u ** e - 0.0      # u's buffer is free once the power has read it

    def operand_lives_on(t):
        u = t * 1.0
        return u ** e + u * 0.0

    for f in (alone, fused, operand_dies_here):
        cf = tp.compile(f)
        for _ in range(2):      # the fuser builds its loop at the first call or the second
            assert _show(cf(x)) == want, f.__name__
    r = tp.compile(operand_lives_on)(x)
    assert _show(r) == _show(x ** e + x * 0.0)     # (NaNs: tp.equal is False there)


@pytest.mark.parametrize("e", sorted(HALF))
def test_float16_keeps_pow(e):
    x = tp.tensor([-0.0, -math.inf], dtype=tp.float16)
    assert _show(x ** e) == HALF[e]
    assert _show(tp.compile(lambda t: (t * 1.0) ** e * 1.0)(x)) == HALF[e]


def test_integer_exponent_of_an_integer_tensor_unchanged():
    # the special cases are the floating kernel's: an integer tensor keeps its exact powers
    x = tp.tensor([-3, 0, 5, 7], dtype=tp.int64)
    assert (x ** 2).tolist() == [9, 0, 25, 49] and (x ** 3).tolist() == [-27, 0, 125, 343]
    assert (x ** 0.5).dtype is tp.float32     # a float exponent promotes, then sqrt
    assert _show(x ** 0.5) == "nan 0.0 2.2360680103302 2.6457512378692627"


@pytest.mark.parametrize("name", DTYPES)
def test_no_warning_at_zero_below_or_past_the_range(name, recwarn):
    # (bfloat16's cube overflowing its float32 intermediate warned)
    x = tp.tensor([-0.0, 0.0, -1.0, 1e-30, 1e20, -math.inf], dtype=DTYPES[name])
    for e in EXPONENTS:
        x ** e
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_grad_unchanged():
    # the backward formula is pow's own (e * x ** (e - 1)), whichever kernel ran forward
    x = tp.tensor([4.0, 0.25], requires_grad=True)
    (x ** 0.5).sum().backward()
    assert x.grad.tolist() == [0.25, 1.0]
    x.grad = None
    (x ** 3).sum().backward()
    assert x.grad.tolist() == [48.0, 0.1875]
