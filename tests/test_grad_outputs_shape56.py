"""A gradient given to backward / autograd.grad must have its output's shape: torch refuses a
broadcastable one too ("Mismatch in shape: grad_output[0] has a shape of ... and output[0] has a
shape of ..."), where tensorplay used to fail inside expand with a message naming neither
(a fresh user's finding, session 56)."""
import pytest

import tensorplay as tp


@pytest.mark.parametrize("out_fn, g_shape", [
    (lambda x: x * 2, (1,)), (lambda x: x * 2, ()), (lambda x: x * 2, (2,)),
    (lambda x: x.sum(), (1,)),
])
def test_a_gradient_of_another_shape_is_refused_naming_both(out_fn, g_shape):
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = out_fn(x)
    want = (f"Mismatch in shape: grad_output[0] has a shape of {g_shape} and output[0] has a "
            f"shape of {tuple(y.shape)}")
    with pytest.raises(RuntimeError, match=r"^autograd.grad: " + __import__("re").escape(want)):
        tp.autograd.grad(y, x, grad_outputs=tp.ones(g_shape))
    with pytest.raises(RuntimeError, match=__import__("re").escape(want)):
        out_fn(x).backward(gradient=tp.ones(g_shape))
    assert x.grad is None


def test_the_index_named_is_the_output_s():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"grad_output\[1\] has a shape of \(3,\) and "
                                           r"output\[1\] has a shape of \(2,\)"):
        tp.autograd.backward([x * 2, x * 3], [tp.ones(2), tp.ones(3)])
    # the right shapes still run, and another dtype is cast as torch does
    g, = tp.autograd.grad(x * 2, x, grad_outputs=tp.ones(2, dtype=tp.float64))
    assert g.dtype == tp.float32 and g.tolist() == [2.0, 2.0]
