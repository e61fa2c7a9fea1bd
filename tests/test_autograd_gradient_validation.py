"""The engine validates the gradients a *user* formula returns, as torch's ``validate_outputs``
(torch/csrc/autograd/engine.cpp, with ``InputMetadata::maybe_reduce``) does for every node:

* a gradient whose shape differs from its input's is summed to it when the input's shape is
  expandable to the gradient's (``at::is_expandable_to(input_shape, grad_shape)``, then
  ``at::sum_to``); otherwise ``RuntimeError: Function <name> returned an invalid gradient at
  index <i> - got [..] but expected shape compatible with [..]``;
* a gradient of another dtype is cast to the input's dtype;
* a gradient on another device is refused (``... - expected device cpu but got meta``);
* None stays None; a gradient for a tensor input that needs none is ignored (no check, as torch
  skips an invalid edge); a gradient for an argument that is not a tensor must be None;
* the number of gradients: a custom op's formula returns one per input (torch's
  ``make_autograd_impl``), an ``autograd.Function`` may add trailing Nones (torch's PyNode).

User formulas are ``register_autograd`` of a custom op and ``tensorplay.autograd.Function``;
built-in ops' formulas are trusted and stay unchecked."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import Tensor, library
from tensorplay.testing import drop_ops

_count = itertools.count()


@pytest.fixture
def ns():
    """A fresh namespace per test; its ops are dropped afterwards."""
    name = f"gradval{next(_count)}"
    yield name
    drop_ops(name)


def _unary(ns, backward, name="f", save=False):
    """``ns::name(x) = x * 2`` whose formula is ``backward(ctx, grad)`` (``ctx.saved_tensors``
    holds ``x`` when ``save``)."""
    @library.custom_op(f"{ns}::{name}", mutates_args=())
    def f(x: Tensor) -> Tensor:
        return x * 2

    @f.register_fake
    def _(x):
        return x.new_empty(x.shape)

    def setup(ctx, inputs, output):
        if save:
            ctx.save_for_backward(inputs[0])

    f.register_autograd(backward, setup_context=setup)
    return f


def _binary(ns, backward, name="h"):
    @library.custom_op(f"{ns}::{name}", mutates_args=())
    def h(x: Tensor, y: Tensor) -> Tensor:
        return x * y

    @h.register_fake
    def _(x, y):
        return x.new_empty(x.shape)

    h.register_autograd(backward, setup_context=lambda ctx, inputs, output: None)
    return h


def _shape_error(ns, name, index, got, want):
    return (rf"^Function {ns}::{name}Backward returned an invalid gradient at index {index} - "
            rf"got \[{got}\] but expected shape compatible with \[{want}\]$")


# -- 1. shapes that cannot be summed to the input's: torch's error ------------------------------
def test_new_user_report_a_slice_of_the_gradient_for_a_leaf_is_refused(ns):
    g2 = _unary(ns, lambda ctx, gr: gr[:1])
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=_shape_error(ns, "f", 0, "1", "3")):
        g2(x).sum().backward()
    assert x.grad is None     # nothing of the wrong shape lands in .grad


def test_a_scalar_gradient_for_a_vector_input_is_refused(ns):
    # torch: [3] is not expandable to [] (the input has more dimensions than the gradient)
    g = _unary(ns, lambda ctx, gr: gr.sum())
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=_shape_error(ns, "f", 0, "", "3")):
        g(x).sum().backward()
    assert x.grad is None


def test_a_wrong_shape_for_an_intermediate_is_refused_before_it_flows_further(ns):
    f = _unary(ns, lambda ctx, gr: gr[:1])
    x = tp.ones(2, 3, requires_grad=True)
    y = x * 3.0            # an intermediate: f's gradient would flow on into mul's backward
    with pytest.raises(RuntimeError, match=_shape_error(ns, "f", 0, "1, 3", "2, 3")):
        f(y).sum().backward()
    assert x.grad is None
    with pytest.raises(RuntimeError, match=_shape_error(ns, "f", 0, "1, 3", "2, 3")):
        tp.autograd.grad(f(y).sum(), y)
    with pytest.raises(RuntimeError, match=_shape_error(ns, "f", 0, "1, 3", "2, 3")):
        tp.autograd.grad(f(y).sum(), x)


def test_the_index_names_the_input_whose_gradient_is_wrong(ns):
    h = _binary(ns, lambda ctx, gr: (gr, gr[:2]))
    x = tp.ones(4, requires_grad=True)
    w = tp.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match=_shape_error(ns, "h", 1, "2", "4")):
        h(x, w).sum().backward()
    assert x.grad is None and w.grad is None


def test_a_gradient_with_more_elements_on_a_non_unit_dim_is_refused(ns):
    # input [2] against gradient [3]: 2 != 3 and 2 != 1 -> not expandable
    f = _unary(ns, lambda ctx, gr: tp.ones(3))
    x = tp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=_shape_error(ns, "f", 0, "3", "2")):
        f(x).sum().backward()


# -- 2. shapes the input's shape expands to: summed to it (torch's sum_to) ----------------------
@pytest.mark.parametrize("in_shape, grad_shape", [
    ((3,), (1, 3)),          # a leading unit dim
    ((3,), (2, 3)),          # a leading dim summed away
    ((1,), (3,)),            # a unit dim of the input summed (keepdim)
    ((), (3,)),              # a 0-d input: everything summed
    ((2, 1), (4, 2, 5)),     # both at once
])
def test_a_gradient_the_input_expands_to_is_summed_to_the_input_shape(ns, in_shape, grad_shape):
    rng = np.random.default_rng(0)
    gval = rng.standard_normal(grad_shape).astype(np.float32)
    f = _unary(ns, lambda ctx, gr: tp.tensor(gval))
    want = gval
    lead = len(grad_shape) - len(in_shape)
    want = want.sum(axis=tuple(range(lead))) if lead else want
    want = want.sum(axis=tuple(i for i, s in enumerate(in_shape) if s == 1), keepdims=True)
    want = want.reshape(in_shape)

    x = tp.ones(*in_shape, requires_grad=True) if in_shape else tp.tensor(1.0, requires_grad=True)
    f(x).sum().backward()
    assert tuple(x.grad.shape) == in_shape
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)

    (gx,) = tp.autograd.grad(f(x).sum(), x)
    assert tuple(gx.shape) == in_shape
    np.testing.assert_allclose(gx.numpy(), want, rtol=1e-6)

    # an intermediate: the summed gradient is what flows on (mul's backward doubles it)
    z = tp.zeros(*in_shape, requires_grad=True) if in_shape else tp.tensor(0.0, requires_grad=True)
    f(z * 2.0).sum().backward()
    assert tuple(z.grad.shape) == in_shape
    np.testing.assert_allclose(z.grad.numpy(), want * 2, rtol=1e-6)


def test_a_hook_on_the_input_sees_the_summed_gradient(ns):
    f = _unary(ns, lambda ctx, gr: gr.unsqueeze(0).expand(2, 3))
    x = tp.ones(3, requires_grad=True)
    y = x * 1.0
    seen = []
    y.register_hook(lambda g: seen.append(tuple(g.shape)))
    f(y).sum().backward()
    assert seen == [(3,)]
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_the_sum_to_is_differentiable_for_double_backward(ns):
    # backward: (g * x) broadcast to (2, 3) for a (3,) input -> summed: 2 * g * x
    def bw(ctx, gr):
        (x,) = ctx.saved_tensors
        return (gr * x).unsqueeze(0).expand(2, 3)
    f = _unary(ns, bw, save=True)
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (gx,) = tp.autograd.grad(f(x).sum(), x, create_graph=True)
    assert tuple(gx.shape) == (3,) and gx.tolist() == [2.0, 4.0, 6.0]
    (ggx,) = tp.autograd.grad(gx.sum(), x)
    assert ggx.tolist() == [2.0, 2.0, 2.0]


# -- 3. dtype: cast to the input's ---------------------------------------------------------------
@pytest.mark.parametrize("gdtype", [tp.float64, tp.float16, tp.int64])
def test_a_gradient_of_another_dtype_is_cast_to_the_input_dtype(ns, gdtype):
    f = _unary(ns, lambda ctx, gr: (gr * 2).to(gdtype))
    x = tp.ones(3, requires_grad=True)            # float32
    y = x * 1.0
    seen_y, seen_x = [], []
    y.register_hook(lambda g: seen_y.append(g.dtype))
    x.register_hook(lambda g: seen_x.append(g.dtype))
    f(y).sum().backward()
    # the hooks run on the gradient the formula's input receives: already in its dtype
    assert seen_y == [tp.float32] and seen_x == [tp.float32]
    assert x.grad.dtype is tp.float32 and x.grad.tolist() == [2.0, 2.0, 2.0]

    x.grad = None
    h = []
    x.register_hook(lambda g: h.append(g.dtype))
    f(x).sum().backward()
    assert h == [tp.float32] and x.grad.dtype is tp.float32


# -- 4. device -----------------------------------------------------------------------------------
def test_a_gradient_on_another_device_is_refused(ns):
    f = _unary(ns, lambda ctx, gr: tp.ones(3, device="meta"))
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"^Function {ns}::fBackward returned an invalid "
                                           r"gradient at index 0 - expected device cpu but got "
                                           r"meta$"):
        f(x).sum().backward()
    assert x.grad is None


# -- 5. None, inputs that need no gradient, arguments that are not tensors ----------------------
def test_none_stays_none(ns):
    h = _binary(ns, lambda ctx, gr: (None, gr * 3))
    x = tp.ones(2, requires_grad=True)
    w = tp.ones(2, requires_grad=True)
    h(x, w).sum().backward()
    assert x.grad is None and w.grad.tolist() == [3.0, 3.0]
    (gx, gw) = tp.autograd.grad(h(x, w).sum(), (x, w), allow_unused=True)
    assert gx is None and gw.tolist() == [3.0, 3.0]


def test_a_gradient_for_an_input_that_needs_none_is_ignored_unchecked(ns):
    # torch skips an edge that leads nowhere: even a wrong shape there is not an error
    h = _binary(ns, lambda ctx, gr: (gr, gr[:1]))
    x = tp.ones(3, requires_grad=True)
    c = tp.ones(3)
    h(x, c).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0] and c.grad is None


def test_a_gradient_for_an_argument_that_is_not_a_tensor_must_be_none(ns):
    @library.custom_op(f"{ns}::scale", mutates_args=())
    def scale(x: Tensor, k: float) -> Tensor:
        return x * k

    scale.register_autograd(lambda ctx, gr: (gr * 2.0, gr),
                            setup_context=lambda ctx, inputs, output: None)
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"function {ns}::scaleBackward returned a gradient "
                                           r"different than None at position 2, but the "
                                           r"corresponding forward input was not a Tensor"):
        scale(x, 2.0).sum().backward()


def test_a_gradient_that_is_not_a_tensor_is_refused(ns):
    f = _unary(ns, lambda ctx, gr: 1.0)
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"^Function {ns}::fBackward returned an invalid "
                                           r"gradient at index 0 - expected a Tensor or None "
                                           r"\(got float\)$"):
        f(x).sum().backward()


# -- 6. the number of gradients ------------------------------------------------------------------
def test_a_custom_op_formula_returning_too_many_gradients_is_refused(ns):
    # torch's make_autograd_impl: the count must be one per input, extra Nones included
    f = _unary(ns, lambda ctx, gr: (gr, None))
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"{ns}::f: the backward formula registered with "
                                           r"register_autograd returned an incorrect number of "
                                           r"gradients \(expected 1, got 2\)"):
        f(x).sum().backward()
    g = _unary(ns, lambda ctx, gr: (gr, gr), name="g")
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 1, got 2\)"):
        g(x).sum().backward()


def test_a_custom_op_formula_returning_too_few_gradients_is_refused(ns):
    h = _binary(ns, lambda ctx, gr: gr)
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"{ns}::h: the backward formula registered with "
                                           r"register_autograd returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\)"):
        h(x, x).sum().backward()


# -- 7. tensorplay.autograd.Function -------------------------------------------------------------
class _Slice(tp.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g[:1]


class _Broadcast(tp.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        return x * k

    @staticmethod
    def backward(ctx, g):
        return (g * 2).unsqueeze(0).expand(4, *g.shape).to(tp.float64), None, None


class _Extra(tp.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g, g


def test_function_wrong_shape_is_refused_with_torchs_message():
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^Function _SliceBackward returned an invalid gradient "
                                           r"at index 0 - got \[1\] but expected shape "
                                           r"compatible with \[3\]$"):
        _Slice.apply(x).sum().backward()
    assert x.grad is None


def test_function_broadcast_gradient_is_summed_and_cast_and_trailing_nones_pass():
    x = tp.ones(2, 3, requires_grad=True)
    _Broadcast.apply(x, 3.0).sum().backward()
    assert x.grad.dtype is tp.float32 and tuple(x.grad.shape) == (2, 3)
    assert x.grad.tolist() == [[8.0] * 3] * 2


def test_function_too_many_gradients_is_refused():
    x = tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"function _ExtraBackward returned an incorrect number "
                                           r"of gradients \(expected 1, got 2\)"):
        _Extra.apply(x).sum().backward()


# -- 8. built-in ops: their formulas' gradients are right by construction (unchanged) -----------
def test_builtin_ops_broadcasting_and_mixed_dtypes_unchanged():
    a = tp.ones(2, 3, requires_grad=True)
    b = tp.ones(3, requires_grad=True)
    c = tp.ones(2, 1, dtype=tp.float64, requires_grad=True)
    ((a * b + c) * 2.0).sum().backward()
    assert tuple(b.grad.shape) == (3,) and b.grad.tolist() == [4.0, 4.0, 4.0]
    assert tuple(c.grad.shape) == (2, 1) and c.grad.dtype is tp.float64
    assert c.grad.tolist() == [[6.0], [6.0]]
    assert a.grad.dtype is tp.float32 and a.grad.tolist() == [[2.0] * 3] * 2


# -- 9. Tensor[] arguments: one gradient per element, each validated ----------------------------
def _pair_sum(ns, backward):
    @library.custom_op(f"{ns}::pair_sum", mutates_args=())
    def pair_sum(xs: list[Tensor]) -> Tensor:
        return xs[0] + xs[1]

    pair_sum.register_autograd(backward, setup_context=lambda ctx, inputs, output: None)
    return pair_sum


def test_a_tensor_list_gradient_of_the_wrong_length_is_refused(ns):
    op = _pair_sum(ns, lambda ctx, g: [g])     # two tensors in, one gradient out
    a, b = tp.ones(3, requires_grad=True), tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"function {ns}::pair_sumBackward returned an invalid "
                                           r"gradient at position 1: the forward input is a list "
                                           r"of 2 tensors"):
        op([a, b]).sum().backward()
    assert a.grad is None and b.grad is None


def test_tensor_list_gradients_are_validated_per_element(ns):
    op = _pair_sum(ns, lambda ctx, g: [g, g[:1]])
    a, b = tp.ones(3, requires_grad=True), tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=_shape_error(ns, "pair_sum", 1, "1", "3")):
        op([a, b]).sum().backward()
    op2 = _pair_sum(f"{ns}x", lambda ctx, g: [g.unsqueeze(0), None])
    try:
        op2([a, b]).sum().backward()
        assert tuple(a.grad.shape) == (3,) and b.grad is None
    finally:
        drop_ops(f"{ns}x")


def test_a_tensor_list_gradient_that_is_not_a_list_is_refused(ns):
    op = _pair_sum(ns, lambda ctx, g: g)     # a bare tensor where a list of two is due
    a, b = tp.ones(3, requires_grad=True), tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"function {ns}::pair_sumBackward returned an invalid "
                                           r"gradient at position 1: the forward input is a list "
                                           r"of 2 tensors, so its gradient is a list of 2 "
                                           r"gradients \(or None\), got Tensor$"):
        op([a, b]).sum().backward()


def _tile(ns, backward, name="tile"):
    """``ns::name(x, reps: list[int]) = x * 2`` whose formula is ``backward(ctx, grad)``: an
    argument that is a list but not of tensors."""
    @library.custom_op(f"{ns}::{name}", mutates_args=())
    def tile(x: Tensor, reps: list[int]) -> Tensor:
        return x * 2

    tile.register_autograd(backward, setup_context=lambda ctx, inputs, output: None)
    return tile


@pytest.mark.parametrize("answer", [None, [None, None], (None,)])
def test_nones_for_a_list_that_is_not_of_tensors_are_accepted(ns, answer):
    op = _tile(ns, lambda ctx, g: (g * 2.0, answer))
    x = tp.ones(3, requires_grad=True)
    op(x, [1, 2]).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_a_value_for_a_list_that_is_not_of_tensors_is_refused(ns):
    # the position named is the first slot that breaks the structure (the second of three)
    @library.custom_op(f"{ns}::tile3", mutates_args=())
    def tile3(x: Tensor, reps: list[int], y: Tensor) -> Tensor:
        return x * 2 + y

    tile3.register_autograd(lambda ctx, g: (g, [None, 1], g),
                            setup_context=lambda ctx, inputs, output: None)
    x, y = tp.ones(3, requires_grad=True), tp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"function {ns}::tile3Backward returned a gradient "
                                           r"different than None at position 2, but the "
                                           r"corresponding forward input was not a Tensor"):
        tile3(x, [1, 2], y).sum().backward()
    assert x.grad is None and y.grad is None
