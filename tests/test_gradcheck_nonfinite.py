"""``gradcheck``/``gradgradcheck`` compare with ``torch.allclose`` semantics (``equal_nan=False``):
a NaN on either side, or an infinity against a finite value, is a mismatch, never a pass (the
old ``abs(num - ana) > tol`` test is False for NaN, so a NaN backward passed). Failures raise
``GradcheckError`` (a ``RuntimeError``, torch's name) with digits enough to tell the two values
apart."""

from __future__ import annotations

import math
import sys

import pytest

import tensorplay as tp
from tensorplay.autograd import Function, GradcheckError, gradcheck, gradgradcheck


def _x(vals=(1.0, 2.0)):
    return tp.tensor(list(vals), dtype=tp.float64, requires_grad=True)


def _doubling_with_backward_times(factor):
    """``x * 2`` whose backward returns ``g * factor`` (NaN/inf: a broken formula)."""
    class Broken(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * factor
    return Broken.apply


nan_grad = _doubling_with_backward_times(float("nan"))
inf_grad = _doubling_with_backward_times(float("inf"))


class NanSecond(Function):
    """First derivative right, second derivative NaN (0 * NaN in the backward's graph)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 2 * x * g + 0 * tp.sqrt(-x.abs() - 1)


def test_nan_analytical_gradient_fails_gradcheck():
    assert gradcheck(nan_grad, (_x(),), raise_exception=False) is False
    with pytest.raises(GradcheckError, match=r"analytical=nan"):
        gradcheck(nan_grad, (_x(),))


def test_infinite_analytical_gradient_against_a_finite_one_fails():
    assert gradcheck(inf_grad, (_x(),), raise_exception=False) is False


def test_infinite_numerical_gradient_against_a_finite_one_fails():
    # exp overflows just right of x: numerical inf, analytical ~1.8e308 (torch: False; the old
    # test, inf > atol + rtol * inf, was False and passed it)
    x = tp.tensor([math.log(sys.float_info.max) - 1e-7], dtype=tp.float64, requires_grad=True)
    assert gradcheck(tp.exp, (x,), raise_exception=False) is False


def test_nan_numerical_gradient_fails_like_torch():
    # sqrt just left of 0 is NaN: the numerical side is NaN, the analytical one finite
    # (torch.allclose(equal_nan=False) fails it too)
    class Fake(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sqrt()

        @staticmethod
        def backward(ctx, g):
            return g
    x = tp.tensor([0.0], dtype=tp.float64, requires_grad=True)
    assert gradcheck(Fake.apply, (x,), raise_exception=False) is False


def test_nan_on_both_sides_fails_as_in_torch():
    # torch.allclose(equal_nan=False): NaN == NaN is not close
    x = tp.tensor([-1.0], dtype=tp.float64, requires_grad=True)
    assert gradcheck(lambda t: t.sqrt(), (x,), raise_exception=False) is False


def test_nan_in_the_backwards_graph_fails_gradcheck_and_gradgradcheck():
    # 0 * NaN is NaN: the first derivative is NaN too (torch: False for both)
    x = _x()
    assert gradcheck(NanSecond.apply, (x,), raise_exception=False) is False
    assert gradgradcheck(NanSecond.apply, (x,), raise_exception=False) is False
    with pytest.raises(GradcheckError):
        gradgradcheck(NanSecond.apply, (x,))


def test_correct_gradients_still_pass():
    assert gradcheck(lambda t: (t * t).exp(), (_x(),))
    m = tp.tensor([[2.0, 1.0], [0.5, 3.0]], dtype=tp.float64, requires_grad=True)
    assert gradgradcheck(tp.det, (m,))
    # overflow everywhere: numerical (inf - inf) / 2 eps is NaN, analytical inf -- torch: False
    big = tp.tensor([800.0], dtype=tp.float64, requires_grad=True)
    assert gradcheck(tp.exp, (big,), raise_exception=False) is False


def test_gradcheck_error_is_a_runtime_error_named_like_torchs():
    assert issubclass(GradcheckError, RuntimeError)
    assert tp.autograd.GradcheckError is GradcheckError


def test_mismatch_message_tells_the_two_values_apart():
    # a 2e-7 relative mismatch (eps=1e-3 truncation error) with rtol=0: the printed values
    # must differ (6 significant digits showed 1.34986 twice)
    x = tp.tensor([0.3], dtype=tp.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as ei:
        gradcheck(tp.exp, (x,), eps=1e-3, atol=1e-8, rtol=0)
    msg = str(ei.value)
    num = float(msg.split("numerical=")[1].split()[0])
    ana = float(msg.split("analytical=")[1].split()[0])
    assert num != ana and math.isclose(ana, math.exp(0.3), rel_tol=1e-12)
