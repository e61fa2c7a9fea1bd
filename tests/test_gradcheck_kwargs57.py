"""``gradcheck``/``gradgradcheck`` take torch 2.13's full keyword signature (a fresh user's test
suite passes ``fast_mode``, ``nondet_tol``, ``check_undefined_grad``, ...): what tensorplay can
check is checked (fast mode by random projections, reentrancy within ``nondet_tol``, zero and
undefined output gradients, gradient dtypes), what it cannot (forward AD, batched gradients)
is a ``NotImplementedError`` naming the argument, only when it is set to True."""

from __future__ import annotations

import inspect

import pytest

import tensorplay as tp
from tensorplay.autograd import Function, GradcheckError, gradcheck, gradgradcheck


def _x():
    return tp.tensor([0.3, 1.2, -0.5], dtype=tp.float64, requires_grad=True)


class Wrong(Function):
    """x * 2 with the derivative 3."""
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


class Nondet(Function):
    """x * 2 whose backward drifts by 1e-7 per call (an atomics-style nondeterminism)."""
    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        Nondet.calls += 1
        return g * (2 + Nondet.calls * 1e-7)


class NotScaled(Function):
    """x * 2 whose backward ignores an all-zero grad_output."""
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2 if bool((g != 0).any()) else tp.ones_like(g)


def _three_outputs(on_one_missing):
    """x*2, x*3, x*4 whose backward (grads not materialized) runs ``on_one_missing`` when
    exactly one output got no gradient -- the case only check_undefined_grad reaches (the
    Jacobian rows give one gradient, the zero-grad check all three)."""
    class Three(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3, x * 4

        @staticmethod
        def backward(ctx, *gs):
            given = [(g, k) for g, k in zip(gs, (2, 3, 4)) if g is not None]
            if len(given) == 2:
                return on_one_missing(given)
            return sum(g * k for g, k in given)
    return Three.apply


def _raise(given):
    raise RuntimeError("an output gradient is missing")


def _off_by_one(given):
    return sum(g * k for g, k in given) + 1


def test_signatures_are_torchs():
    assert list(inspect.signature(gradcheck).parameters) == [
        "func", "inputs", "eps", "atol", "rtol", "raise_exception", "nondet_tol",
        "check_undefined_grad", "check_grad_dtypes", "check_batched_grad",
        "check_batched_forward_grad", "check_forward_ad", "check_backward_ad", "fast_mode",
        "masked"]
    assert list(inspect.signature(gradgradcheck).parameters)[:16] == [
        "func", "inputs", "grad_outputs", "eps", "atol", "rtol", "gen_non_contig_grad_outputs",
        "raise_exception", "nondet_tol", "check_undefined_grad", "check_grad_dtypes",
        "check_batched_grad", "check_fwd_over_rev", "check_rev_over_rev", "fast_mode", "masked"]


@pytest.mark.parametrize("kw", [{"fast_mode": True}, {"nondet_tol": 1e-6},
                                {"check_undefined_grad": False}, {"check_batched_grad": False},
                                {"check_forward_ad": False}, {"masked": None},
                                {"check_grad_dtypes": True}, {"masked": True}])
def test_gradcheck_accepts_torch_keywords(kw):
    assert gradcheck(tp.sin, (_x(),), **kw) is True


@pytest.mark.parametrize("kw", [{"fast_mode": True}, {"gen_non_contig_grad_outputs": True},
                                {"check_rev_over_rev": True}, {"nondet_tol": 1e-6},
                                {"check_undefined_grad": False}])
def test_gradgradcheck_accepts_torch_keywords(kw):
    assert gradgradcheck(tp.sin, (_x(),), **kw) is True


def test_fast_mode_finds_a_wrong_derivative():
    assert gradcheck(Wrong.apply, (_x(),), fast_mode=True, raise_exception=False) is False
    with pytest.raises(GradcheckError, match=r"v\^T J u .*analytical=.*d out\[0\] / d in\[0\]"):
        gradcheck(Wrong.apply, (_x(),), fast_mode=True)


def test_fast_mode_several_inputs_and_outputs():
    a, b = _x(), tp.tensor([[0.7], [-1.1]], dtype=tp.float64, requires_grad=True)
    assert gradcheck(lambda p, q: (p * q, (p.sin() + q).sum(0)), (a, b), fast_mode=True)
    assert gradgradcheck(lambda p, q: p * q.exp(), (a, b), fast_mode=True)


def test_fast_mode_second_order_finds_a_wrong_double_backward():
    class WrongSecond(Function):   # d/dx x^2 right, its derivative wrong (treats x as constant)
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x.detach()
    assert gradcheck(WrongSecond.apply, (_x(),), fast_mode=True)
    assert gradgradcheck(WrongSecond.apply, (_x(),), fast_mode=True,
                         raise_exception=False) is False


def test_nondeterministic_backward_fails_unless_within_nondet_tol():
    with pytest.raises(GradcheckError, match="Backward is not reentrant.*nondet_tol"):
        gradcheck(Nondet.apply, (_x(),))
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(Nondet.apply, (_x(),), fast_mode=True)
    # 1e-7 per call stays far below 1e-3 over the few hundred backward calls here
    assert gradcheck(Nondet.apply, (_x(),), nondet_tol=1e-3, check_undefined_grad=False)


def test_backward_must_scale_by_grad_output():
    # torch checks it always, check_undefined_grad or not
    for cug in (True, False):
        with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
            gradcheck(NotScaled.apply, (_x(),), check_undefined_grad=cug)


def test_check_undefined_grad():
    raising, nonzero = _three_outputs(_raise), _three_outputs(_off_by_one)
    with pytest.raises(GradcheckError, match="handle undefined output grads.*output 0"):
        gradcheck(raising, (_x(),))
    with pytest.raises(GradcheckError, match="undefined or zero.*input 0.*output 0 undefined"):
        gradcheck(nonzero, (_x(),), fast_mode=True)
    for f in (raising, nonzero):
        assert gradcheck(f, (_x(),), raise_exception=False) is False
        assert gradcheck(f, (_x(),), check_undefined_grad=False) is True
        assert gradcheck(f, (_x(),), check_undefined_grad=False, fast_mode=True) is True


@pytest.mark.parametrize("fn,kw", [
    (gradcheck, "check_forward_ad"), (gradcheck, "check_batched_grad"),
    (gradcheck, "check_batched_forward_grad"),
    (gradgradcheck, "check_fwd_over_rev"), (gradgradcheck, "check_batched_grad")])
def test_unsupported_checks_raise_naming_the_argument(fn, kw):
    with pytest.raises(NotImplementedError, match=f"{kw}=True"):
        fn(tp.sin, (_x(),), **{kw: True})
    # also with raise_exception=False: it is a usage error, not a failed check
    with pytest.raises(NotImplementedError, match=kw):
        fn(tp.sin, (_x(),), raise_exception=False, **{kw: True})


def test_nothing_to_check_is_an_error():
    with pytest.raises(ValueError, match="check_backward_ad"):
        gradcheck(tp.sin, (_x(),), check_backward_ad=False)
    with pytest.raises(ValueError, match="check_rev_over_rev"):
        gradgradcheck(tp.sin, (_x(),), check_rev_over_rev=False)
