"""opcheck's gradient checks do not apply to an op that declares it has no derivative -- a
backward raising torch's "derivative for <op> is not implemented", as floor_divide's (``//``)
does now, as torch's: they are skipped with that reason, never failed (the built-in check of
every op failed on floor_divide once its gradient raised) and never passed."""

import tensorplay as tp
from tensorplay.library import custom_op
from tensorplay.testing.opcheck import run_checks


def test_floor_divide_skips_the_gradient_checks_with_the_reason():
    r = run_checks("tp::floor_divide", (tp.randn(3, 1), tp.rand(4) + 0.5))
    for name in ("test_autograd_registration", "test_gradients"):
        assert r[name].status == "skip" and "has no derivative" in r[name].message
    assert all(v.status == "pass" for k, v in r.items()
               if k not in ("test_autograd_registration", "test_gradients"))


def test_a_custom_formula_declaring_no_derivative_is_skipped():
    @custom_op("noderiv57::f", mutates_args=())
    def f(x: tp.Tensor) -> tp.Tensor:
        return x.floor()

    def bw(ctx, g):
        raise RuntimeError("derivative for noderiv57::f is not implemented")

    f.register_autograd(bw)
    r = run_checks(f, (tp.randn(4),))
    assert r["test_autograd_registration"].status == "skip"
    assert r["test_gradients"].status == "skip"


def test_any_other_backward_error_still_fails():
    @custom_op("noderiv57::g", mutates_args=())
    def g(x: tp.Tensor) -> tp.Tensor:
        return x * 2

    def bw(ctx, grad):
        raise RuntimeError("my formula is broken")

    g.register_autograd(bw)
    r = run_checks(g, (tp.randn(4),))
    assert r["test_autograd_registration"].status == "fail"
    assert "my formula is broken" in r["test_autograd_registration"].message
