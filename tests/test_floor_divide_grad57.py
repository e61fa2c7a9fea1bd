"""``floor_divide`` (``//``) has no derivative, as torch 2.13's: its output requires grad and
backward through it raises "derivative for aten::floor_divide is not implemented" (TensorPlay
gave zeros). ``div(..., rounding_mode='floor'/'trunc')`` keeps its gradient of zeros (torch's
div.Tensor_mode formula), and remainder's gradient of ``other`` goes through it, so remainder
stays twice differentiable. Measured with torch 2.13.0+cpu (session 57, fresh56/11 a)."""

from __future__ import annotations

import pytest

import tensorplay as tp

NO_DERIV = "derivative for aten::floor_divide is not implemented"


def _z():
    return tp.tensor([0.5, 3.0], requires_grad=True)


@pytest.mark.parametrize("how", ["//", "rfloordiv", "tensor_other", "function", "method",
                                 "in_place", "ifloordiv"])
def test_floor_divide_backward_raises(how):
    z = _z()
    w = tp.tensor([2.0, 2.0], requires_grad=True)
    y = {"//": lambda: z // 2, "rfloordiv": lambda: 2 // z, "tensor_other": lambda: z // w,
         "function": lambda: tp.floor_divide(z, 2), "method": lambda: z.floor_divide(2),
         "in_place": lambda: (z * 1).floor_divide_(2),
         "ifloordiv": lambda: (z * 1).__ifloordiv__(2)}[how]()
    assert y.requires_grad
    with pytest.raises(RuntimeError, match=NO_DERIV):
        tp.autograd.grad(y.sum(), z)
    # a loss that only multiplies it by 0 raises too (torch's node raises whatever it gets)
    with pytest.raises(RuntimeError, match=NO_DERIV):
        (y.sum() * 0 + z.sum()).backward()


def test_floor_divide_without_grad_is_fine():
    z = _z()
    with tp.no_grad():
        assert (z // 2).tolist() == [0.0, 1.0] and not (z // 2).requires_grad
    assert (z.detach() // 2).tolist() == [0.0, 1.0]
    assert (tp.tensor([5, 7]) // 2).tolist() == [2, 3]


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_rounding_mode_gradient_is_zeros(mode):
    z = tp.tensor([0.5, -3.5], requires_grad=True)
    w = tp.tensor([2.0, 2.0], requires_grad=True)
    y = tp.div(z, w, rounding_mode=mode)
    ga, gb = tp.autograd.grad(y.sum(), (z, w))
    assert ga.tolist() == [0.0, 0.0] and gb.tolist() == [0.0, 0.0]
    assert z.div(2, rounding_mode=mode).requires_grad


def test_remainder_twice_differentiable():
    a = tp.tensor([5.5, -3.5], dtype=tp.float64, requires_grad=True)
    b = tp.tensor([2.0, 2.0], dtype=tp.float64, requires_grad=True)
    ga, gb = tp.autograd.grad(tp.remainder(a, b).sum(), (a, b), create_graph=True)
    assert ga.tolist() == [1.0, 1.0] and gb.tolist() == [-2.0, 2.0]
    h, = tp.autograd.grad(gb.sum(), a, allow_unused=True)
    assert h is None or h.tolist() == [0.0, 0.0]
