"""Divergences from torch 2.13 a fresh user found in session 56 (small ones, one test each)."""
import numpy as np
import pytest

import tensorplay as tp


@pytest.mark.parametrize("call, api", [
    (lambda: tp.empty(0).max(), "max()"), (lambda: tp.empty(0).min(), "min()"),
    (lambda: tp.max(tp.empty(0)), "max()"), (lambda: tp.min(tp.empty(2, 0)), "min()"),
    (lambda: tp.empty(0, requires_grad=True).max(), "max()"),
    (lambda: tp.empty(0).amin(), "amin()"),
])
def test_an_empty_reduction_error_names_the_function_called(call, api):
    # torch: "max(): Expected reduction dim to be specified for input.numel() == 0. ..."
    with pytest.raises(RuntimeError) as e:
        call()
    assert str(e.value).startswith(api + ": Expected reduction dim to be specified"), e.value


@pytest.mark.parametrize("body", [
    lambda x: x * tp.tensor(np.cos(x.tolist())),
    lambda x: x * float(np.cos(x[0].item())),
    lambda x: x * tp.tensor([float(np.cos(float(v))) for v in x]),
])
def test_a_kernel_reading_values_as_python_numbers_refuses_backward(body):
    # a custom op without a formula whose kernel leaves the graph through .tolist()/.item()/
    # float() (not .numpy()): the gradient its tensorplay ops recorded misses the NumPy part;
    # torch raises "no autograd formula was registered" at backward (it returned a wrong one)
    name = f"fu56::xcos{abs(hash(body.__code__.co_firstlineno))}"
    op = tp.library.custom_op(name, body, mutates_args=())
    x = tp.tensor([0.5, 1.0, 2.0], requires_grad=True)
    y = op(x)
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        y.sum().backward()
    assert x.grad is None
    with tp.no_grad():                      # the values themselves are right
        assert np.allclose(op(x).numpy(), body(x.detach()).numpy())


def test_control_flow_on_values_that_need_no_grad_keeps_the_composite_gradient():
    @tp.library.custom_op("fu56::clipped", mutates_args=())
    def clipped(x: tp.Tensor) -> tp.Tensor:
        if bool((x > 0).all()):             # a bool tensor: no grad, nothing leaves the graph
            return x * 2
        return x * 3
    x = tp.tensor([0.5, 1.0], requires_grad=True)
    clipped(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
