"""Regression tests for defects found by a user tester (each checks torch's behaviour)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library as lib
from tensorplay.autograd import Function

pytestmark = pytest.mark.usefixtures("cpu")

_FREED = "Trying to backward through the graph a second time"


# -- 1. Tensor.numpy() under no_grad ------------------------------------------------------------
def test_numpy_refused_only_while_grad_mode_is_on():
    x = tp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        x.numpy()
    with tp.no_grad():
        assert x.numpy().tolist() == [1.0, 1.0]
    assert x.detach().numpy().tolist() == [1.0, 1.0]


def test_numpy_kernel_with_register_autograd_runs_below_autograd():
    @lib.custom_op("user_reports::numpy_sin", mutates_args=())
    def numpy_sin(x: tp.Tensor) -> tp.Tensor:
        return tp.from_numpy(np.sin(x.numpy()))

    @numpy_sin.register_fake
    def _(x):
        return tp.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    x = tp.tensor([0.5, 1.0], dtype=tp.float64, requires_grad=True)
    y = numpy_sin(x)
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_allclose(x.grad.tolist(), np.cos([0.5, 1.0]))
    lib.opcheck(numpy_sin, (tp.randn(3),))


def test_opcheck_still_explains_a_numpy_kernel_without_formula():
    @lib.custom_op("user_reports::numpy_cos", mutates_args=())
    def numpy_cos(x: tp.Tensor) -> tp.Tensor:
        return tp.from_numpy(np.cos(x.numpy()))

    @numpy_cos.register_fake
    def _(x):
        return tp.empty_like(x)

    with pytest.raises(Exception, match="register_autograd"):
        lib.opcheck(numpy_cos, (tp.randn(3, requires_grad=True),))


# -- 2. backward twice --------------------------------------------------------------------------
def test_second_backward_through_freed_saved_tensors_raises_torch_error():
    a = tp.ones(3, requires_grad=True)
    y = (a * a).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=_FREED):
        y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        tp.autograd.grad(y, [a])


@pytest.mark.parametrize("f", [lambda a: (a * a).exp().sum(), lambda a: (a ** 2).sum(),
                               lambda a: (2.0 ** a).sum(), lambda a: a.pow(a).sum(),
                               lambda a: (a / a).sum(), lambda a: a.sin().sum(),
                               lambda a: a.softmax(0).sum(), lambda a: a.amax().sum()])
def test_every_builtin_with_saved_values_gives_the_torch_error(f):
    a = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = f(a)
    y.backward()
    with pytest.raises(RuntimeError, match=_FREED):
        y.backward()


def test_graphs_without_saved_tensors_run_again_as_in_torch():
    # torch saves no tensor for sum, add/sub (of anything) and mul/div by a Python number
    for f, per in [(lambda a: a.sum(), 1.0), (lambda a: (a + 1).sum(), 1.0),
                   (lambda a: (a - a).sum(), 0.0), (lambda a: (a * 2).sum(), 2.0),
                   (lambda a: (a / 4).sum(), 0.25), (lambda a: (3 - a).sum(), -1.0)]:
        a = tp.ones(3, requires_grad=True)
        y = f(a)
        y.backward()
        y.backward()
        assert a.grad.tolist() == [2 * per] * 3


def test_retain_graph_allows_a_second_backward():
    a = tp.ones(3, requires_grad=True)
    y = (a * a).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert a.grad.tolist() == [4.0, 4.0, 4.0]


def test_function_saved_tensors_are_freed_after_backward():
    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    a = tp.tensor([3.0], requires_grad=True)
    y = Sq.apply(a).sum()
    y.backward()
    assert a.grad.tolist() == [6.0]
    with pytest.raises(RuntimeError, match=_FREED):
        y.backward()


def test_compiled_function_second_backward_raises_torch_error():
    cf = tp.compile(lambda a: (a.sin() * a).sum())
    a = tp.tensor([1.0, 2.0], requires_grad=True)
    y = cf(a)
    y.backward()
    with pytest.raises(RuntimeError, match=_FREED):
        y.backward()


def test_add_and_scalar_mul_do_not_save_their_input():
    # nothing saved (torch): an in-place change of the input afterwards is not an error
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    y = ((h + 1) * 3).sum()
    with tp.no_grad():
        h.mul_(5)
    y.backward()
    assert x.grad.tolist() == [3.0, 3.0]


# -- 3. wrong number of gradients --------------------------------------------------------------
def test_function_backward_with_too_few_gradients_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    a = tp.tensor([3.0], requires_grad=True)
    b = tp.tensor([4.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number "
                                           r"of gradients \(expected 2, got 1\)"):
        Bad.apply(a, b).sum().backward()


def test_function_backward_with_extra_gradients():
    class Extra(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None          # trailing None: accepted (torch too)

    class TooMany(Extra):
        @staticmethod
        def backward(ctx, g):
            return g * 2, g

    a = tp.tensor([1.0], requires_grad=True)
    Extra.apply(a).sum().backward()
    assert a.grad.tolist() == [2.0]
    with pytest.raises(RuntimeError, match=r"TooManyBackward returned an incorrect number of "
                                           r"gradients \(expected 1, got 2\)"):
        TooMany.apply(a).sum().backward()


def test_function_with_non_tensor_argument_needs_its_none():
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    a = tp.tensor([1.0], requires_grad=True)
    Scale.apply(a, 3.0).sum().backward()
    assert a.grad.tolist() == [3.0]


def test_custom_op_backward_with_wrong_gradient_count_names_the_op():
    @lib.custom_op("user_reports::mul2", mutates_args=())
    def mul2(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
        return x * y

    @mul2.register_fake
    def _(x, y):
        return tp.empty_like(x)

    mul2.register_autograd(lambda ctx, g: g * ctx.saved_tensors[1],
                           setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs))
    a = tp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"user_reports::mul2.*incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        mul2(a, tp.ones(2)).sum().backward()

    # one gradient per input is fine; a single-input op may return a bare gradient
    mul2.register_autograd(lambda ctx, g: (g * ctx.saved_tensors[1], None),
                           setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs))
    b = tp.ones(2, requires_grad=True)
    mul2(b, tp.full((2,), 3.0)).sum().backward()
    assert b.grad.tolist() == [3.0, 3.0]


# -- 4. to("meta") ------------------------------------------------------------------------------
def test_to_meta_gives_a_meta_tensor():
    for dev in ("meta", tp.device("meta")):
        m = tp.ones(2, 3, dtype=tp.int64).to(dev)
        assert m.device.type == "meta" and tuple(m.shape) == (2, 3) and m.dtype is tp.int64
    a = tp.ones(2, requires_grad=True)
    m = a.to("meta")
    assert m.device.type == "meta" and m.requires_grad


def test_to_meta_from_fake_tensor():
    from tensorplay.fake import FakeTensorMode
    with FakeTensorMode():
        f = tp.ones(2)
        m = f.to("meta")
    assert m.device.type == "meta" and tuple(m.shape) == (2,)


def test_copy_out_of_meta_is_refused():
    m = tp.empty(2, device="meta")
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        m.to("cpu")
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        m.cpu()
    assert m.to("meta") is m


# -- 5. torch-like errors -----------------------------------------------------------------------
def test_negating_a_bool_tensor():
    with pytest.raises(RuntimeError, match=r"Negation, the `-` operator, on a bool tensor is not "
                                           r"supported.*`~` or `logical_not\(\)`"):
        -tp.tensor([True])
    from tensorplay.fake import FakeTensorMode
    with FakeTensorMode(), pytest.raises(RuntimeError, match="Negation"):
        -tp.tensor([True, False])
    assert (-tp.tensor([1, 2])).tolist() == [-1, -2]


def test_amax_amin_of_empty_tensor():
    for name in ("amax", "amin"):
        with pytest.raises(RuntimeError, match=rf"{name}\(\): Expected reduction dim to be "
                                               rf"specified for input.numel\(\) == 0"):
            getattr(tp.ones(0), name)()
        with pytest.raises(IndexError, match=rf"{name}\(\): Expected reduction dim 0 to have "
                                               rf"non-zero size"):
            getattr(tp.ones(0, 3), name)(0)
        assert tuple(getattr(tp.ones(0, 3), name)(1).shape) == (0,)


def test_ragged_nested_sequence():
    with pytest.raises(ValueError, match=r"ragged.*expected sequence of length 2 at dim 1 "
                                         r"\(got 1"):
        tp.tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match="ragged"):
        tp.tensor([[1, 2], 3])
    with pytest.raises(ValueError, match="ragged"):
        tp.tensor([1, [2]])
    from tensorplay.fake import FakeTensorMode
    with FakeTensorMode(), pytest.raises(ValueError, match="ragged"):
        tp.tensor([[1, 2], [3]])


def test_cat_stack_of_empty_list():
    with pytest.raises(RuntimeError, match=r"cat\(\): expected a non-empty list of Tensors"):
        tp.cat([])
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        tp.stack(())
    assert tp.cat((tp.ones(1), tp.zeros(1))).tolist() == [1.0, 0.0]


def test_random_factories_need_a_floating_dtype():
    for f in (lambda: tp.rand(2, dtype=tp.int64), lambda: tp.randn(2, dtype=tp.int64),
              lambda: tp.rand(2, dtype=tp.bool),
              lambda: tp.rand_like(tp.ones(2, dtype=tp.int64)),
              lambda: tp.randn_like(tp.ones(2), dtype=tp.int32)):
        with pytest.raises(RuntimeError, match="floating point dtype"):
            f()
    assert tp.rand(2, dtype=tp.float64).dtype is tp.float64
    assert tp.randn_like(tp.ones(2)).dtype is tp.float32


def test_softmax_of_integer_tensor():
    x = tp.tensor([1, 2])
    for f in (lambda: x.softmax(0), lambda: tp.softmax(x, 0), lambda: x.log_softmax(0)):
        with pytest.raises(RuntimeError, match="floating point"):
            f()
    from tensorplay.fake import FakeTensorMode
    with FakeTensorMode(), pytest.raises(RuntimeError, match="floating point"):
        tp.tensor([1, 2]).softmax(0)
    np.testing.assert_allclose(x.float().softmax(0).tolist(), [0.26894142, 0.73105858], rtol=1e-6)
