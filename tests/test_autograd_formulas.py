"""Autograd of custom ops, the runtime side: registered formulas that declare outputs or inputs
non-differentiable, the eager safety net for kernels that leave the graph without a formula,
and torch's four-argument ``setup_context`` (same semantics as ``torch.library``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import Tensor, library
from tensorplay.autograd import gradcheck
from tensorplay.testing import drop_ops

F64 = tp.float64
_count = itertools.count()


def _drop_namespace(prefix: str) -> None:
    drop_ops(prefix)   # ops defined by custom_op have no Library to close


@pytest.fixture
def ns():
    """A fresh namespace per test; its ops are dropped afterwards."""
    name = f"tag{next(_count)}"
    yield name
    _drop_namespace(name)


def _np_layer_norm(ns, name="ln"):
    """A layer-norm port written as op-pack authors do: a NumPy kernel returning the statistics
    ``(y, mean, rstd)``, and a formula that marks the statistics non-differentiable."""
    seen = {}

    @library.custom_op(f"{ns}::{name}", mutates_args=())
    def ln(x: Tensor, w: Tensor, eps: float = 1e-5) -> tuple[Tensor, Tensor, Tensor]:
        xn, wn = x.detach().numpy(), w.detach().numpy()
        mean = xn.mean(-1, keepdims=True)
        rstd = 1.0 / np.sqrt(xn.var(-1, keepdims=True) + eps)
        return tp.from_numpy((xn - mean) * rstd * wn), tp.from_numpy(mean), tp.from_numpy(rstd)

    @ln.register_fake
    def _(x, w, eps=1e-5):
        s = tuple(x.shape[:-1]) + (1,)
        return tp.empty_like(x), x.new_empty(s), x.new_empty(s)

    def setup_context(ctx, inputs, output):
        x, w, _ = inputs
        _, mean, rstd = output
        ctx.mark_non_differentiable(mean, rstd)
        ctx.save_for_backward(x, w, mean, rstd)

    def backward(ctx, gy, gmean, grstd):
        seen["grads"] = (gmean, grstd)
        x, w, mean, rstd = ctx.saved_tensors
        xhat = (x - mean) * rstd
        gxhat = gy * w
        gx = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                     - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        return gx, (gy * xhat).sum(0), None

    ln.register_autograd(backward, setup_context=setup_context)
    return ln, seen


# ----------------------------------------------------------------------------------------------
# Declarations in a registered formula (issue: outputs not differentiable by design)

def test_layer_norm_statistics_marked_non_differentiable(ns):
    ln, seen = _np_layer_norm(ns)
    x = tp.randn(4, 5, dtype=F64, requires_grad=True)
    w = tp.randn(5, dtype=F64, requires_grad=True)
    y, mean, rstd = ln(x, w)
    assert y.requires_grad and y.grad_fn is not None
    for s in (mean, rstd):   # torch: marked outputs do not require grad and have no history
        assert not s.requires_grad and s.grad_fn is None and s.is_leaf
    (y * y).sum().backward()
    gmean, grstd = seen["grads"]   # torch materializes zeros for them (set_materialize_grads)
    assert gmean.shape == (4, 1) and grstd.shape == (4, 1)
    assert not gmean.numpy().any() and not grstd.numpy().any()
    assert x.grad.shape == (4, 5) and w.grad.shape == (5,)
    assert gradcheck(lambda a, b: ln(a, b)[0], (x.detach().requires_grad_(),
                                                 w.detach().requires_grad_()))


def test_layer_norm_with_statistics_trains(ns):
    ln, _ = _np_layer_norm(ns)
    rng = np.random.default_rng(0)
    x = tp.from_numpy(rng.standard_normal((8, 6)))
    target = tp.from_numpy(rng.standard_normal((8, 6)))
    w = tp.ones(6, dtype=F64, requires_grad=True)
    losses = []
    for _ in range(30):
        y, mean, rstd = ln(x, w)
        # statistics used in the loss: constants for autograd, as in torch (no gradient, no error)
        loss = ((y - target) ** 2).mean() + (mean * rstd).sum() * 0.0
        losses.append(loss.item())
        w.grad = None
        loss.backward()
        with tp.no_grad():
            w -= 0.5 * w.grad
    assert losses[-1] < 0.9 * losses[0], losses
    # the gradient reaching w is the formula's, checked against finite differences
    x2 = x.clone().requires_grad_()
    assert gradcheck(lambda a, b: ((ln(a, b)[0] - target) ** 2).mean(),
                     (x2, w.detach().requires_grad_()))


def test_materialize_grads_off_passes_none_for_non_differentiable_outputs(ns):
    seen = {}

    @library.custom_op(f"{ns}::stats", mutates_args=())
    def stats(x: Tensor) -> tuple[Tensor, Tensor]:
        return tp.from_numpy(x.detach().numpy() * 2), tp.from_numpy(x.detach().numpy().max(-1))

    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])
        ctx.set_materialize_grads(False)

    def backward(ctx, g, gmax):
        seen["gmax"] = gmax
        return g * 2

    stats.register_autograd(backward, setup_context=setup_context)
    x = tp.randn(2, 3, dtype=F64, requires_grad=True)
    y, m = stats(x)
    assert y.requires_grad and not m.requires_grad
    y.sum().backward()
    assert seen["gmax"] is None
    assert x.grad.tolist() == [[2.0] * 3] * 2


def test_integer_and_bool_outputs_are_never_differentiable(ns):
    seen = {}

    @library.custom_op(f"{ns}::maxi", mutates_args=())
    def maxi(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        xn = x.detach().numpy()
        return tp.from_numpy(xn.max(-1)), tp.from_numpy(xn.argmax(-1)), tp.from_numpy(xn > 0)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output[1])

    def backward(ctx, gv, gi, gb):
        seen["gi"], seen["gb"] = gi, gb
        x, i = ctx.saved_tensors
        onehot = tp.from_numpy(np.eye(x.shape[-1])[i.numpy()])
        return gv.unsqueeze(-1) * onehot

    maxi.register_autograd(backward, setup_context=setup_context)
    x = tp.tensor([[1.0, 3.0, 2.0], [-4.0, -5.0, -1.0]], dtype=F64, requires_grad=True)
    v, i, b = maxi(x)
    assert v.requires_grad
    assert not i.requires_grad and i.grad_fn is None and not b.requires_grad and b.grad_fn is None
    v.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert seen["gi"].dtype == tp.int64 and not seen["gi"].numpy().any()   # zeros, as torch
    assert seen["gb"].dtype == tp.bool


def test_formula_returning_none_for_a_floating_input_is_a_declaration(ns):
    @library.custom_op(f"{ns}::rotary", mutates_args=())
    def rotary(x: Tensor, cos: Tensor) -> Tensor:
        return tp.from_numpy(x.detach().numpy() * cos.detach().numpy())

    rotary.register_fake(lambda x, cos: tp.empty_like(x))
    rotary.register_autograd(lambda ctx, g: (g * ctx.cos, None),
                             setup_context=lambda ctx, inputs, out: setattr(ctx, "cos", inputs[1]))
    x = tp.randn(3, dtype=F64, requires_grad=True)
    cos = tp.randn(3, dtype=F64, requires_grad=True)   # a table: no gradient, by declaration
    (rotary(x, cos) * 2).sum().backward()
    assert np.allclose(x.grad.numpy(), 2 * cos.detach().numpy())
    assert cos.grad is None
    gx, gc = tp.autograd.grad(rotary(x, cos).sum(), [x, cos], allow_unused=True)
    assert gc is None and np.allclose(gx.numpy(), cos.detach().numpy())


@pytest.mark.parametrize("how", ["marked", "none_grads"])
def test_op_not_differentiable_on_purpose(ns, how):
    """A quantiser: declared non-differentiable (outputs marked, or None gradients); backward
    through it gives no gradient through the op and raises nothing."""
    @library.custom_op(f"{ns}::quant", mutates_args=())
    def quant(x: Tensor) -> Tensor:
        return tp.from_numpy(np.round(x.detach().numpy() * 4) / 4)

    quant.register_fake(lambda x: tp.empty_like(x))
    if how == "marked":
        quant.register_autograd(lambda ctx, g: None,
                                setup_context=lambda ctx, inputs, out: ctx.mark_non_differentiable(out))
    else:
        quant.register_autograd(lambda ctx, g: None)
    w = tp.tensor([0.3, -1.2, 2.6], dtype=F64, requires_grad=True)
    q = quant(w)
    assert q.requires_grad == (how == "none_grads")
    (q * w).sum().backward()        # d/dw (q(w) * w) with q a constant: q(w)
    assert w.grad.tolist() == [0.25, -1.25, 2.5]
    w.grad = None
    (w * 3 + quant(w)).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0, 3.0]


# ----------------------------------------------------------------------------------------------
# Eager safety net: no formula, and the kernel leaves the graph

def _numpy_double(ns):
    @library.custom_op(f"{ns}::np_double", mutates_args=())
    def np_double(x: Tensor) -> Tensor:
        return tp.from_numpy(x.detach().numpy() * 2)

    np_double.register_fake(lambda x: tp.empty_like(x))
    return np_double


def test_kernel_leaving_the_graph_raises_on_backward(ns):
    op = _numpy_double(ns)
    w = tp.randn(3, dtype=F64, requires_grad=True)
    y = op(w)                      # the forward itself is fine
    assert y.requires_grad and y.grad_fn is not None
    with pytest.raises(RuntimeError, match=rf"{ns}::np_double.*register_autograd") as ei:
        (y * w).sum().backward()   # without the net: a gradient missing the op's term
    # the kernel called .numpy() with grad on: torch's words for an op without a formula
    assert "no autograd formula was registered" in str(ei.value)
    assert "output 0" in str(ei.value)
    assert w.grad is None
    with pytest.raises(RuntimeError, match=rf"{ns}::np_double"):
        tp.autograd.grad(op(w).sum(), w)


def test_safety_net_fresh_output_buffer(ns):
    """The Triton/CuPy pattern: allocate the output, write it through the raw array."""
    @library.custom_op(f"{ns}::launch", mutates_args=())
    def launch(x: Tensor, y: Tensor) -> Tensor:
        out = tp.empty_like(x)
        np.add(x.detach().numpy(), y.detach().numpy(), out=out.numpy())
        return out

    launch.register_fake(lambda x, y: tp.empty_like(x))
    x = tp.randn(4, dtype=F64)
    w = tp.randn(4, dtype=F64, requires_grad=True)   # only the second input requires grad
    out = launch(x, w)
    with pytest.raises(RuntimeError, match=rf"{ns}::launch.*register_autograd"):
        out.sum().backward()


def test_safety_net_only_when_it_matters(ns):
    op = _numpy_double(ns)
    w = tp.randn(3, dtype=F64, requires_grad=True)
    with tp.no_grad():
        y = op(w)
    assert not y.requires_grad and y.grad_fn is None
    y = op(w.detach())
    assert not y.requires_grad
    # an output that is not differentiated through never raises
    unused = op(w)
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0] * 3 and unused.requires_grad


def test_safety_net_leaves_integer_outputs_and_history_alone(ns):
    @library.custom_op(f"{ns}::mixed", mutates_args=())
    def mixed(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        xn = x.detach().numpy()
        return x * 3, tp.from_numpy(xn * 2), tp.from_numpy(xn.argmax(-1))

    x = tp.randn(2, 3, dtype=F64, requires_grad=True)
    a, b, i = mixed(x)
    assert i.grad_fn is None and not i.requires_grad
    # the kernel called .numpy() with grad on: every floating output refuses backward (which
    # of its outputs the NumPy part reached cannot be told; torch's custom ops refuse them all)
    assert a.grad_fn is not None and b.grad_fn is not None
    with pytest.raises(RuntimeError, match=rf"{ns}::mixed.*output 0"):
        a.sum().backward()
    with pytest.raises(RuntimeError, match=rf"{ns}::mixed.*output 1"):
        b.sum().backward()
    assert x.grad is None
    # without grad the same kernel runs as it is: nothing to refuse
    with tp.no_grad():
        a, b, i = mixed(x)
    assert a.grad_fn is None and b.grad_fn is None


def test_composite_kernel_without_formula_keeps_working(ns):
    @library.custom_op(f"{ns}::double", mutates_args=())
    def double(x: Tensor, w: Tensor) -> Tensor:
        return x * 2 + w.sum()

    x = tp.randn(3, dtype=F64, requires_grad=True)
    w = tp.randn(2, dtype=F64, requires_grad=True)
    y = double(x, w)
    (y * x).sum().backward()
    assert np.allclose(x.grad.numpy(), (4 * x + w.sum()).detach().numpy())
    assert np.allclose(w.grad.numpy(), [x.sum().item()] * 2)


# ----------------------------------------------------------------------------------------------
# torch's four-argument setup_context (keyword-only inputs)

@pytest.fixture
def mylib():
    """The namespace torch's documentation uses; emptied afterwards."""
    yield
    _drop_namespace("mylib")


def test_torch_numpy_mul_example_runs_verbatim(mylib):
    torch = tp
    # --- torch.library.register_autograd's docstring, "Example with a keyword-only arg" ---
    @torch.library.custom_op("mylib::numpy_mul", mutates_args=())
    def numpy_mul(x: Tensor, *, val: float) -> Tensor:
        x_np = x.cpu().numpy()
        y_np = x_np * val
        return torch.from_numpy(y_np).to(device=x.device)

    def setup_context(ctx, inputs, keyword_only_inputs, output) -> Tensor:
        ctx.val = keyword_only_inputs["val"]

    def backward(ctx, grad):
        return grad * ctx.val

    torch.library.register_autograd("mylib::numpy_mul", backward, setup_context=setup_context)

    x = torch.randn(3, requires_grad=True)
    y = numpy_mul(x, val=3.14)
    grad_x, = torch.autograd.grad(y, x, torch.ones_like(y))
    assert torch.allclose(grad_x, torch.full_like(x, 3.14))


def test_four_argument_setup_context_gets_positional_and_keyword_inputs(ns):
    seen = {}

    @library.custom_op(f"{ns}::axpy", mutates_args=())
    def axpy(x: Tensor, y: Tensor, *, alpha: float = 2.0, tag: str = "t") -> Tensor:
        return x * alpha + y

    def setup_context(ctx, inputs, keyword_only_inputs, output):
        seen["inputs"], seen["kw"] = inputs, keyword_only_inputs
        ctx.alpha = keyword_only_inputs["alpha"]

    # gradients for the positional inputs only (torch's rule for keyword-only arguments)
    axpy.register_autograd(lambda ctx, g: (g * ctx.alpha, g), setup_context=setup_context)
    x = tp.randn(3, dtype=F64, requires_grad=True)
    y = tp.randn(3, dtype=F64, requires_grad=True)
    axpy(x, y).sum().backward()
    assert len(seen["inputs"]) == 2 and seen["inputs"][0] is x and seen["inputs"][1] is y
    assert seen["kw"] == {"alpha": 2.0, "tag": "t"}     # defaults filled in, as torch does
    assert x.grad.tolist() == [2.0] * 3 and y.grad.tolist() == [1.0] * 3
    x.grad = y.grad = None
    axpy(x, y, alpha=-1.0, tag="u").sum().backward()
    assert seen["kw"] == {"alpha": -1.0, "tag": "u"} and x.grad.tolist() == [-1.0] * 3
    # a formula may still return one gradient per argument, keyword-only ones included
    axpy.register_autograd(lambda ctx, g: (g * ctx.alpha, g, None, None),
                           setup_context=setup_context)
    x.grad = None
    axpy(x, y, alpha=5.0).sum().backward()
    assert x.grad.tolist() == [5.0] * 3


def test_four_argument_setup_context_on_an_op_without_keyword_arguments(ns):
    @library.custom_op(f"{ns}::sq", mutates_args=())
    def sq(x: Tensor) -> Tensor:
        return tp.from_numpy(x.detach().numpy() ** 2)

    def setup_context(ctx, inputs, keyword_only_inputs, output):
        assert keyword_only_inputs == {}
        ctx.save_for_backward(inputs[0])

    sq.register_autograd(lambda ctx, g: g * 2 * ctx.saved_tensors[0], setup_context=setup_context)
    x = tp.tensor([1.0, 3.0], dtype=F64, requires_grad=True)
    sq(x).sum().backward()
    assert x.grad.tolist() == [2.0, 6.0]


def test_missing_gradient_for_a_positional_input_is_still_an_error(ns):
    @library.custom_op(f"{ns}::mul2", mutates_args=())
    def mul2(x: Tensor, y: Tensor, *, val: float) -> Tensor:
        return x * y * val

    mul2.register_autograd(lambda ctx, g: g,
                           setup_context=lambda ctx, inputs, kw, output: None)
    x = tp.randn(3, dtype=F64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 2, got 1\)"):
        mul2(x, x, val=2.0).sum().backward()


def test_setup_context_arity_error_names_both_forms(ns):
    @library.custom_op(f"{ns}::idn", mutates_args=())
    def idn(x: Tensor) -> Tensor:
        return x * 1

    with pytest.raises(ValueError, match=r"must take \(ctx, inputs, output\) or "
                                         r"\(ctx, inputs, keyword_only_inputs, output\)"):
        idn.register_autograd(lambda ctx, g: g, setup_context=lambda ctx, a, b, c, d: None)


def test_mean_gradient_is_contiguous_as_torchs():
    # torch's mean_backward expands, then divides: a full contiguous tensor, which user backward
    # code (Triton kernels reading it as contiguous) relies on; sum's stays a broadcast view
    import tensorplay as tp
    for dims, keepdim in (((), False), ((1,), False), ((0,), True), ((0, 1), False)):
        x = tp.randn(3, 4, requires_grad=True)
        seen = []
        y = x * 2.0
        y.register_hook(lambda g: seen.append(g))
        (y.mean(dims, keepdim=keepdim) if dims else y.mean()).sum().backward()
        (g,) = seen
        n = 12 if dims in ((), (0, 1)) else (4 if dims == (1,) else 3)
        assert g.is_contiguous() and g.stride() == (4, 1), (dims, g.stride())
        assert tp.allclose(g, tp.full((3, 4), 1.0 / n))
        assert tp.allclose(x.grad, tp.full((3, 4), 2.0 / n))
