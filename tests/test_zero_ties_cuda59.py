"""Ties of -0.0 and 0.0 on cuda give torch's cuda zero (session 59).

torch's cuda kernels order -0.0 below 0.0 wherever a maximum or minimum meets two zeros, in every
float dtype and at every size: ``clamp(-0.0, min=0.0)``, ``clamp_min``, ``relu(-0.0)`` and
``fmax``/``maximum`` of -0.0 and 0.0 are 0.0 (either order); ``clamp(0.0, max=-0.0)``, ``fmin``
and ``minimum`` of the two are -0.0 (an H100 with torch 2.11 and CuPy 14, 2026-12-07, at 2, 32
and 40000 elements, float32/float64/float16/bfloat16). Its cpu kernels keep the input's zero
instead (tests/test_signed_zero_ties57.py). TensorPlay's cuda had taken the cpu rule everywhere
(the reference kernels' clamp, fmax/fmin and relu; the generated kernels' relu and maximum/minimum
forms gave the input or the second operand).

The rule belongs to the device (``Backend.signed_zero_order``): the reference kernels follow it on
any backend that declares it (a ``MockBackend`` here, on cpu), the cuda plugin's generated Triton
kernels spell it out (run here through Triton's interpreter), and on a GPU every path is held
to it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.testing.backend import MockBackend

SIZES = (1, 7, 16, 33, 20000)


def _max(sa, sb):
    """The sign bit of the larger of two zeros with sign bits sa, sb (-0.0 below 0.0)."""
    return sa & sb


def _min(sa, sb):
    return sa | sb


# name -> (f(x, y), the expected sign bit from x's and y's); x holds -0.0, 0.0, ... and y the
# opposite zeros
OPS = {
    "clamp(min=0)": (lambda x, y: x.clamp(min=0.0), lambda sx, sy: _max(sx, False)),
    "clamp(min=-0)": (lambda x, y: x.clamp(min=-0.0), lambda sx, sy: _max(sx, True)),
    "clamp(max=0)": (lambda x, y: x.clamp(max=0.0), lambda sx, sy: _min(sx, False)),
    "clamp(max=-0)": (lambda x, y: x.clamp(max=-0.0), lambda sx, sy: _min(sx, True)),
    "clamp(-0,0)": (lambda x, y: x.clamp(-0.0, 0.0), lambda sx, sy: _min(_max(sx, True), False)),
    "clamp_min": (lambda x, y: tp.clamp_min(x, 0.0), lambda sx, sy: _max(sx, False)),
    "clamp_max": (lambda x, y: x.clamp_max(-0.0), lambda sx, sy: _min(sx, True)),
    "clamp_": (lambda x, y: x.clone().clamp_(min=0.0), lambda sx, sy: _max(sx, False)),
    "relu": (lambda x, y: tp.relu(x), lambda sx, sy: _max(sx, False)),
    "fmax": (lambda x, y: tp.fmax(x, y), _max),
    "fmin": (lambda x, y: tp.fmin(x, y), _min),
    "maximum": (lambda x, y: tp.maximum(x, y), _max),
    "minimum": (lambda x, y: tp.minimum(x, y), _min),
    "maximum(y, x)": (lambda x, y: tp.maximum(y, x), _max),
    "minimum(y, x)": (lambda x, y: tp.minimum(y, x), _min),
}


def _zeros(n, dtype, device):
    x = np.tile(np.array([-0.0, 0.0]), n)
    return (tp.tensor(x, dtype=dtype, device=device), tp.tensor(-x, dtype=dtype, device=device),
            np.signbit(x), np.signbit(-x))


def _signbits(t):
    return np.signbit(t.cpu().float().numpy())


def _check_all(n, dtype, device, ops=OPS):
    x, y, sx, sy = _zeros(n, dtype, device)
    bad = []
    for name, (f, rule) in ops.items():
        got = _signbits(f(x, y))
        if not np.array_equal(got, rule(sx, sy)):
            bad.append((name, got[:4].tolist()))
    assert bad == [], (dtype, n, bad)


class OrderedZeros(MockBackend):
    """A test device whose torch kernels would order -0.0 below 0.0 (as cuda's)."""
    signed_zero_order = True


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16])
def test_reference_kernels_follow_a_device_that_orders_zeros(dtype):
    with OrderedZeros("zeroorder59"):
        for n in SIZES:
            _check_all(n, dtype, "zeroorder59")
            # a NaN elsewhere (NumPy's loops change with one) changes no tie
            x, y, sx, sy = _zeros(n, dtype, "zeroorder59")
            xn = tp.cat([x, tp.tensor([math.nan], dtype=dtype, device="zeroorder59")])
            yn = tp.cat([y, tp.tensor([1.0], dtype=dtype, device="zeroorder59")])
            assert np.array_equal(_signbits(tp.fmin(xn, yn))[:-1], sx | sy)
            assert np.array_equal(_signbits(tp.maximum(yn, xn))[:-1], sx & sy)
            assert math.isnan(tp.maximum(xn, yn)[-1].item())
            assert tp.fmin(xn, yn)[-1].item() == 1.0


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16])
def test_a_device_that_does_not_declare_it_keeps_the_cpu_rule(dtype):
    # the default (torch's cpu kernels): the same zeros as the cpu device
    with MockBackend("zerocpu59"):
        for n in (1, 33):
            x, y, _, _ = _zeros(n, dtype, "zerocpu59")
            xc, yc, _, _ = _zeros(n, dtype, "cpu")
            for name, (f, _) in OPS.items():
                assert np.array_equal(_signbits(f(x, y)), _signbits(f(xc, yc))), name


def test_the_ordering_is_declared_by_the_cuda_backend_not_cpu():
    cuda = pytest.importorskip("tensorplay_cuda.backend", reason="tensorplay-cuda not installed")
    assert cuda.CUDABackend.signed_zero_order is True
    assert tp.backends.get("cpu").signed_zero_order is False


# -- the cuda plugin's generated kernels, through Triton's interpreter -----------------------------

@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16])
@pytest.mark.parametrize("case", ["max0", "max-0", "min0", "min-0", "maxxy", "maxyx", "minxy",
                                  "minyx", "relu"])
def test_generated_triton_kernels_order_zeros(case, dtype):
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    tf = pytest.importorskip("tensorplay_cuda.triton_fusion")
    from tensorplay.backends import ElementwiseExpr, Step
    x, y, sx, sy = _zeros(20, dtype, "cpu")
    x[3] = math.nan
    op = {"max": "maximum", "min": "minimum", "rel": "relu"}[case[:3]]
    rest = case[3:]
    if case == "relu":
        args, want = (("in", 0),), np.zeros_like(sx)          # relu(-0.0) is 0.0
    elif rest in ("0", "-0"):
        bound = float(rest)
        args = (("in", 0), ("const", bound))
        want = (_max if op == "maximum" else _min)(sx, math.copysign(1.0, bound) < 0)
    else:
        args = (("in", 0), ("in", 1)) if rest == "xy" else (("in", 1), ("in", 0))
        want = (_max if op == "maximum" else _min)(sx, sy)
    expr = ElementwiseExpr(2 if rest in ("xy", "yx") else 1, (Step(op, args),), (0,),
                           (dtype,) * (2 if rest in ("xy", "yx") else 1), tp.device("cpu"))
    ins = [x.numpy(), y.numpy()][:expr.n_inputs]
    got, = tf.TritonChain(expr, tp.backends.get("cpu")).run(ins)
    got = np.asarray(got)
    keep = np.arange(got.size) != 3
    assert np.array_equal(np.signbit(got)[keep], want[keep])
    assert np.isnan(got[3])                      # NaN propagates (relu's too)


# -- on a GPU: every path ---------------------------------------------------------------------------

def _cuda_or_skip():
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16, tp.bfloat16])
def test_cuda_eager_orders_zeros_at_every_size(dtype):
    _cuda_or_skip()
    # 1..20000 pairs: CuPy's kernels and the dense generated ones; 2^21 + 8 pairs: the large
    # arrays' launch (2^22 + 16 elements), run past the eager warm-up
    for n in SIZES + ((1 << 21) + 8,):
        for _ in range(10 if n > 20000 else 1):
            _check_all(n, dtype, "cuda")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16, tp.bfloat16])
def test_cuda_compiled_chains_order_zeros(dtype):
    _cuda_or_skip()
    # x * 1.0 keeps each zero's sign and puts the op into a fused chain
    chains = {name: (tp.compile(lambda x, y, f=f: f(x * 1.0, y * 1.0)), rule)
              for name, (f, rule) in OPS.items() if name != "clamp_"}
    for n in (16, 20000, (1 << 21) + 8):
        for _ in range(3):
            _check_all(n, dtype, "cuda", chains)


def test_a_chain_run_with_minus_zero_after_zero_reads_minus_zero():
    # the chain's float constants live in a small array kept per value tuple; 0.0 == -0.0 had
    # made one key of both, so clamp(x, max=-0.0) after max=0.0 read 0.0 (a GPU's float64
    # clamp, 2026-12-07; here through Triton's interpreter)
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    tf = pytest.importorskip("tensorplay_cuda.triton_fusion")
    from tensorplay.backends import ElementwiseExpr, Step
    x, _, sx, _ = _zeros(8, tp.float64, "cpu")
    expr = ElementwiseExpr(1, (Step("minimum", (("in", 0), ("const", 1.0))),), (0,),
                           (tp.float64,), tp.device("cpu"))
    ch = tf.TritonChain(expr, tp.backends.get("cpu"))
    for bound in (0.0, -0.0, 0.0, -0.0):
        got, = ch.run([x.numpy()], [bound])
        want = sx | (math.copysign(1.0, bound) < 0)
        assert np.array_equal(np.signbit(np.asarray(got)), want), bound


class _ZeroByMemset:
    """An array namespace that makes a scalar zero as CuPy does, by a memset: ``asarray(-0.0)``
    is 0.0 (what made -0.0 numbers 0.0 in cuda's reference kernels; an H100, 2026-12-07)."""

    def __init__(self, xp):
        self._xp = xp

    def __getattr__(self, name):
        return getattr(self._xp, name)

    def asarray(self, obj, *args, **kw):
        if obj.__class__ is float and obj == 0.0:
            obj = 0.0
        return self._xp.asarray(obj, *args, **kw)


class MemsetZeros(OrderedZeros):
    def __init__(self, name):
        super().__init__(name)
        self.xp = _ZeroByMemset(self.xp)


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_a_minus_zero_number_survives_a_library_that_memsets_zeros(dtype):
    with MemsetZeros("zeromemset59"):
        x, y, sx, sy = _zeros(3, dtype, "zeromemset59")
        one = tp.ones(6, dtype=dtype, device="zeromemset59")
        assert np.array_equal(_signbits(x.clamp(max=-0.0)), np.ones(6, bool))
        assert np.array_equal(_signbits(tp.minimum(x, -0.0)), np.ones(6, bool))
        assert np.array_equal(_signbits(tp.where(one > 5, one, -0.0)), np.ones(6, bool))
        assert np.array_equal(_signbits(one.masked_fill(one > 0, -0.0)), np.ones(6, bool))
        assert np.array_equal(_signbits(tp.copysign(one, -0.0)), np.ones(6, bool))
        _check_all(3, dtype, "zeromemset59")
