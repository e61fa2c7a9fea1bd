"""Custom-op kernels without a formula that go through NumPy (``.numpy()``) with grad mode on.

A TensorPlay custom op without ``register_autograd`` is differentiated through the tensorplay ops
of its kernel (CompositeImplicitAutograd, SPEC §2). A kernel that computes part of its math in
NumPy (``x * from_numpy(cos(x.detach().numpy()))``, torch's custom-ops tutorial style) left the
graph for that part, so the gradient its tensorplay ops recorded is wrong. torch 2.13's custom
ops are opaque (the kernel runs with grad mode off): backward through such an op raises
"Trying to backward through ns.op.default but no autograd formula was registered. Please use
register_autograd to add one.", and ``x.numpy()`` on an input that requires grad works inside
the kernel. TensorPlay now does the same for a kernel that called ``.numpy()`` with grad mode on
(it marks the call, ``autograd.function.KERNEL_MARK``); a kernel written only with tensorplay
ops keeps its exact composite gradient.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library as lib
from tensorplay import Tensor

NO_FORMULA = ("Trying to backward through knp56::{} but no autograd formula was registered. "
              "Please use register_autograd to add one.")


@lib.custom_op("knp56::x_cos_x", mutates_args=())
def x_cos_x(x: Tensor) -> Tensor:
    return x * tp.from_numpy(np.cos(x.detach().numpy()))


@lib.custom_op("knp56::np_sin", mutates_args=())
def np_sin(x: Tensor) -> Tensor:
    return tp.from_numpy(np.sin(x.detach().numpy()))


@lib.custom_op("knp56::np_sin_no_detach", mutates_args=())
def np_sin_no_detach(x: Tensor) -> Tensor:
    return tp.from_numpy(np.sin(x.numpy()))


@lib.custom_op("knp56::np_sin_", mutates_args={"out"})
def np_sin_(x: Tensor, out: Tensor) -> None:
    np.sin(x.numpy(), out=out.numpy())


@lib.custom_op("knp56::np_cos_formula", mutates_args=())
def np_cos_formula(x: Tensor) -> Tensor:
    return tp.from_numpy(np.cos(x.numpy()))


np_cos_formula.register_autograd(
    lambda ctx, g: -g * ctx.x.sin(),
    setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]))


@lib.custom_op("knp56::softmax", mutates_args=())
def softmax(x: Tensor) -> Tensor:
    # a detach() that stops a gradient on purpose (the shift cancels): still composite
    e = (x - x.max().detach()).exp()
    return e / e.sum()


@lib.custom_op("knp56::calls_formula_op", mutates_args=())
def calls_formula_op(x: Tensor) -> Tensor:
    # the inner op's NumPy kernel runs below autograd (it has a formula): exact gradient
    return np_cos_formula(x) * 2


@lib.custom_op("knp56::fails", mutates_args=())
def fails(x: Tensor) -> Tensor:
    x.detach().numpy()
    raise ValueError("kernel error")


def _x(*vals):
    return tp.tensor(list(vals), dtype=tp.float64, requires_grad=True)


class TestKernelViaNumpy:
    def test_partial_numpy_kernel_raises_torchs_message_instead_of_a_wrong_gradient(self):
        x = _x(0.5, 1.0, 2.0)
        y = x_cos_x(x)
        assert y.requires_grad
        assert y.tolist() == pytest.approx([v * math.cos(v) for v in (0.5, 1.0, 2.0)])
        with pytest.raises(RuntimeError, match=NO_FORMULA.format("x_cos_x")) as e:
            y.sum().backward()
        assert "register_autograd('knp56::x_cos_x'" in str(e.value)
        assert x.grad is None

    def test_numpy_only_kernel_raises_torchs_message(self):
        x = _x(0.5, 1.0)
        y = np_sin(x)
        assert y.requires_grad
        with pytest.raises(RuntimeError, match=NO_FORMULA.format("np_sin")):
            (y + x * 10).sum().backward()

    def test_numpy_of_an_input_that_requires_grad_works_inside_the_kernel(self):
        x = _x(0.5, 1.0)
        y = np_sin_no_detach(x)
        assert y.tolist() == pytest.approx([math.sin(0.5), math.sin(1.0)])
        with pytest.raises(RuntimeError, match=NO_FORMULA.format("np_sin_no_detach")):
            y.sum().backward()

    def test_mutating_numpy_kernel_with_an_input_that_requires_grad(self):
        # torch's custom-ops tutorial: numpy_sin_(x, out), register_autograd refused there
        x = _x(0.5, 1.0)
        out = tp.empty(2, dtype=tp.float64)
        v = out._version
        np_sin_(x, out)
        assert out.tolist() == pytest.approx([math.sin(0.5), math.sin(1.0)])
        assert not out.requires_grad and out.grad_fn is None
        assert out._version == v + 1

    def test_formula_op_with_numpy_kernel_keeps_its_gradient(self):
        x = _x(0.5, 1.0)
        np_cos_formula(x).sum().backward()
        assert x.grad.tolist() == pytest.approx([-math.sin(0.5), -math.sin(1.0)])

    def test_formula_op_inside_a_composite_kernel_keeps_its_gradient(self):
        x = _x(0.5, 1.0)
        calls_formula_op(x).sum().backward()
        assert x.grad.tolist() == pytest.approx([-2 * math.sin(0.5), -2 * math.sin(1.0)])

    def test_composite_kernel_of_tensorplay_ops_keeps_its_exact_gradient(self):
        x = _x(0.5, 1.0, 2.0)
        y = softmax(x)
        (y * tp.tensor([1.0, 2.0, 3.0], dtype=tp.float64)).sum().backward()
        s = [math.exp(v) for v in (0.5, 1.0, 2.0)]
        s = [v / sum(s) for v in s]
        w = [1.0, 2.0, 3.0]
        mean = sum(a * b for a, b in zip(s, w))
        assert x.grad.tolist() == pytest.approx([si * (wi - mean) for si, wi in zip(s, w)])

    def test_no_grad_call_returns_a_plain_tensor(self):
        x = _x(0.5, 1.0)
        with tp.no_grad():
            y = x_cos_x(x)
        assert not y.requires_grad and y.grad_fn is None

    def test_numpy_outside_a_kernel_keeps_torchs_rule(self):
        x = _x(0.5)
        with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
            x.numpy()
        with tp.no_grad():
            assert x.numpy().tolist() == [0.5]

    def test_kernel_error_leaves_no_mark_behind(self):
        x = _x(0.5)
        with pytest.raises(ValueError, match="kernel error"):
            fails(x)
        with pytest.raises(RuntimeError, match="Can't call numpy"):
            x.numpy()
        # and the next composite call starts clean
        x2 = _x(0.5, 1.0, 2.0)
        softmax(x2).sum().backward()
        assert x2.grad is not None

    def test_the_mark_is_per_thread(self):
        # a kernel running in one thread does not let another thread's numpy() through
        started, release = threading.Event(), threading.Event()
        seen = []

        @lib.custom_op("knp56::waits", mutates_args=())
        def waits(x: Tensor) -> Tensor:
            started.set()
            release.wait(10)
            return x * 2

        t = threading.Thread(target=lambda: waits(_x(1.0)))
        t.start()
        started.wait(10)
        try:
            _x(1.0).numpy()
        except RuntimeError as e:
            seen.append(str(e))
        release.set()
        t.join(10)
        assert seen and "Can't call numpy" in seen[0]

    def test_generic_entry_path(self):
        # a keyword-only argument named by a Python keyword: the op's autograd entry is the
        # generic one, not the generated one. A Library.define op has torch's autograd fallback
        # there too (session 57): its kernel runs with grad mode on, so .numpy() of an input
        # that requires grad raises at the call; a detached read is the kernel's own business
        # (torch: the composite's gradient, the NumPy part left out)
        with lib.Library("knp56g", "DEF") as L:
            L.define("op(Tensor x, *, float lambda=1.0) -> Tensor")

            def kernel(x, **kw):
                return x * tp.from_numpy(np.cos(x.numpy())) * kw.get("lambda", 1.0)
            L.impl("op", kernel, "CompositeImplicitAutograd")
            x = _x(0.5, 1.0)
            with pytest.raises(RuntimeError, match="Can't call numpy"):
                tp.ops.knp56g.op(x, **{"lambda": 2.0})
            with tp.no_grad():
                y = tp.ops.knp56g.op(x, **{"lambda": 2.0})
            assert y.tolist() == pytest.approx([2 * v * math.cos(v) for v in (0.5, 1.0)])
