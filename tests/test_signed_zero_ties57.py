"""Ties of -0.0 and 0.0 in fmax/fmin and in clamp by a number give torch 2.13's zero at every
size and on every path (session 57, fresh56b/06).

torch (cpu, measured with 2.13.0+cpu at 2..40000 elements, with a NaN elsewhere, broadcast,
transposed): ``fmax``/``fmin`` return ``input`` on such a tie in float32/float64/float16 and
``other`` in bfloat16; ``clamp`` by a number (``min=``/``max=``/both, ``clamp_``,
``clamp_min``/``clamp_max``) returns ``input``. TensorPlay's kernels called NumPy's fmax/fmin,
which return either zero depending on the loop (the size, a NaN elsewhere), and clamp's
``maximum(x, number)`` returned the bound. ``maximum``/``minimum`` of two tensors (and clamp by
tensor bounds) have no single torch answer (its vectorized blocks return ``other``, the scalar
tail ``input``): TensorPlay keeps ``other`` at every size, which the last test holds.

These are the cpu's rules; torch's cuda kernels order -0.0 below 0.0 instead
(tests/test_zero_ties_cuda59.py).
"""

from __future__ import annotations

import math

import pytest

import tensorplay as tp

SIZES = (1, 7, 16, 33, 20000)
FLOATS = (tp.float32, tp.float64, tp.float16)


def _pair(n, dtype):
    a = tp.tensor([-0.0, 0.0] * n, dtype=dtype)
    return a, tp.tensor([0.0, -0.0] * n, dtype=dtype)


def _signs(t):
    return tp.signbit(t).tolist()


@pytest.mark.parametrize("name", ["fmax", "fmin"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_fmax_fmin_tie_gives_input_at_every_size(name, dtype):
    f = getattr(tp, name)
    for n in SIZES:
        a, b = _pair(n, dtype)
        assert _signs(f(a, b)) == _signs(a), n
        an = a.clone()
        an[-1] = math.nan                 # a NaN elsewhere took NumPy's other loop
        r = f(an, b)
        assert _signs(r[:-1]) == _signs(a[:-1]) and r[-1].item() == 0.0, n
        # broadcast and transposed operands
        r = f(a.reshape(-1, 2), b[:2])
        assert _signs(r.reshape(-1)) == _signs(a), n
        r = f(a.reshape(-1, 2).t(), b.reshape(-1, 2).t())
        assert _signs(r.t().reshape(-1)) == _signs(a), n


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_bfloat16_tie_gives_other_as_torch(name):
    f = getattr(tp, name)
    for n in SIZES:
        a, b = _pair(n, tp.bfloat16)
        assert _signs(f(a, b)) == _signs(b), n


def test_fmax_fmin_nan_rule_kept():
    nan = math.nan
    a = tp.tensor([nan, 1.0, nan, -0.0, 2.0])
    b = tp.tensor([3.0, nan, nan, -0.0, 1.0])
    for f, want in ((tp.fmax, [3.0, 1.0, nan, -0.0, 2.0]), (tp.fmin, [3.0, 1.0, nan, -0.0, 1.0])):
        r = f(a, b).tolist()
        assert [v if v == v else "nan" for v in r] == [v if v == v else "nan" for v in want]


CLAMPS = {
    "min=0": lambda x: x.clamp(min=0.0), "min=-0": lambda x: x.clamp(min=-0.0),
    "max=0": lambda x: x.clamp(max=0.0), "max=-0": lambda x: x.clamp(max=-0.0),
    "both": lambda x: x.clamp(-0.0, 0.0), "clamp_min": lambda x: tp.clamp_min(x, 0.0),
    "clamp_max": lambda x: x.clamp_max(-0.0), "clip": lambda x: tp.clip(x, 0.0, 6.0),
    "clamp_": lambda x: x.clone().clamp_(min=0.0),
}


@pytest.mark.parametrize("how", sorted(CLAMPS))
@pytest.mark.parametrize("dtype", FLOATS + (tp.bfloat16,))
def test_clamp_by_a_number_keeps_the_input_zero(how, dtype):
    for n in SIZES:
        a, _ = _pair(n, dtype)
        assert _signs(CLAMPS[how](a)) == _signs(a), (how, n)
    # a bound that is no tie is unchanged: the bound, or the input
    x = tp.tensor([-2.0, -0.0, 0.5, 3.0], dtype=dtype)
    assert x.clamp(min=0.0).tolist() == [0.0, 0.0, 0.5, 3.0]
    assert _signs(x.clamp(min=0.0)) == [False, True, False, False]
    assert x.clamp(max=1.0).tolist() == [-2.0, 0.0, 0.5, 1.0]


def test_clamp_nan_rule_kept():
    x = tp.tensor([math.nan, -1.0, 2.0])
    r = x.clamp(min=0.0, max=1.0).tolist()
    assert math.isnan(r[0]) and r[1:] == [0.0, 1.0]
    assert all(math.isnan(v) for v in x.clamp(min=math.nan).tolist())


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16])
def test_compiled_clamp_chain_gives_eager_zero(dtype):
    # the cpu fuser's maximum/minimum with a constant operand: the tensor wins the tie there too
    def f(x):
        return ((x * 1.0).clamp(min=0.0) * 1.0).clamp(max=0.0) * 1.0
    cf = tp.compile(f)
    for n in (1, 2500, 150000):
        a, _ = _pair(n, dtype)
        want = _signs(a)
        assert _signs(f(a)) == want
        assert _signs(cf(a)) == want and _signs(cf(a)) == want, n


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.bfloat16])
def test_maximum_minimum_of_two_tensors_are_one_rule_at_every_size(dtype):
    # regression guard (no single torch answer): ``other`` at every size, a NaN elsewhere too
    for n in SIZES:
        a, b = _pair(n, dtype)
        for f in (tp.maximum, tp.minimum):
            assert _signs(f(a, b)) == _signs(b), n
            an = a.clone()
            an[-1] = math.nan
            assert _signs(f(an, b)[:-1]) == _signs(b[:-1]), n
