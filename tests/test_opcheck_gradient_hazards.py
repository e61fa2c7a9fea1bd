"""``opcheck`` on two backward hazards a finite-difference comparison alone mishandles (fresh56):

* a backward whose result is not finite (NaN, inf) where the op is finite: the failure names
  the input and says the *analytical* gradient is NaN/inf (not "off by nan, tolerance nan"),
  and an infinite one fails (``inf <= r * inf`` passed it before);
* a backward that writes its ``grad_output`` in place (``g.mul_(2); return g``): autograd owns
  that tensor -- ``op(x).sum().backward()`` hands it a broadcast (stride-0) gradient and the
  write raises, and a gradient shared with another branch would be corrupted. torch's opcheck
  fails such an op; ``test_autograd_registration`` now does too, naming the op and the fix.
"""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay import library as lib
from tensorplay.errors import OpCheckError
from tensorplay.testing.opcheck import run_checks

Tensor = tp.Tensor


def _op(name, backward):
    @lib.custom_op(f"gh56::{name}", mutates_args=())
    def op(x: Tensor) -> Tensor:
        return x * 2

    op.register_fake(lambda x: tp.empty_like(x))
    op.register_autograd(backward, setup_context=lambda ctx, inputs, output: None)
    return op


nan_bwd = _op("nan_bwd", lambda ctx, g: g * float("nan"))
inf_bwd = _op("inf_bwd", lambda ctx, g: g * float("inf"))


def _inplace_bwd(ctx, g):
    g.mul_(2)                      # the fresh user's pack (packs/f56bad, f56bad::double)
    return g


inplace_bwd = _op("inplace_bwd", _inplace_bwd)


def _numpy_write_bwd(ctx, g):
    g.numpy()[...] *= 2            # a write autograd's version counter cannot see
    return g


numpy_write_bwd = _op("numpy_write_bwd", _numpy_write_bwd)
good = _op("good", lambda ctx, g: g * 2)


def _x(dtype=tp.float64):
    return tp.randn(4, 5, dtype=dtype)


def test_nan_gradient_fails_and_says_the_analytical_gradient_is_nan():
    with pytest.raises(OpCheckError) as ei:
        lib.opcheck(nan_bwd, (_x().requires_grad_(),))
    msg = str(ei.value)
    assert "test_gradients" in msg
    assert "analytical gradient of input 'x'" in msg and "NaN" in msg
    assert "20 of 20" in msg                         # how much of it
    assert "off by nan" not in msg and "tolerance nan" not in msg


@pytest.mark.parametrize("shape", [(4, 5), (1,)])
def test_infinite_gradient_fails(shape):
    # one element: every projection is +-inf, and |num - inf| <= rtol * inf passed it
    x = tp.randn(*shape, dtype=tp.float64)
    got = run_checks(inf_bwd, (x,), test_utils=["test_gradients"])["test_gradients"]
    assert got.status == "fail", got
    assert "analytical gradient of input 'x'" in got.message and "inf in" in got.message


@pytest.mark.parametrize("op", [inplace_bwd, numpy_write_bwd], ids=["mul_", "numpy"])
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_backward_writing_grad_output_in_place_fails_opcheck(op, dtype):
    # the op's real use, for reference: the broadcast gradient of sum() refuses the write
    if op is inplace_bwd:
        with pytest.raises(RuntimeError, match="clone"):
            op(_x(dtype).requires_grad_()).sum().backward()
    with pytest.raises(OpCheckError) as ei:
        lib.opcheck(op, (_x(dtype),))
    msg = str(ei.value)
    assert "test_autograd_registration" in msg and op.name in msg
    assert "writes its grad_output in place" in msg and "clone" in msg


def test_a_correct_formula_still_passes():
    assert lib.opcheck(good, (_x(),)) == {}
    assert lib.opcheck(good, (_x(tp.float32).requires_grad_(),)) == {}
