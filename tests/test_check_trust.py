"""opcheck / ``tensorplay check`` you can trust on real op packs: no false failures on correct
ops, no false passes on the classic kernel faults, the kernel that ran named in every result."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library as lib
from tensorplay.plugins import SampleInput
import importlib

_opcheck = importlib.import_module("tensorplay.testing.opcheck")   # the module (the package's
# ``opcheck`` attribute is the function)
from tensorplay.testing import plugin_check as _plugin_check
from tensorplay.testing.opcheck import run_checks

from _plugin_dists import BROKEN_IMPORT, PluginEnv

Tensor = tp.Tensor


def status(res, name):
    return res[name].status, res[name].message


# ------------------------------------------------------------------ 1. no false failures

@lib.custom_op("trust::double", mutates_args=())
def double(x: Tensor) -> Tensor:
    return x * 2


@double.register_fake
def _(x):
    return tp.empty_like(x)


@pytest.mark.parametrize("make", [
    lambda: tp.randn(4, 6)[:, :4],                  # column slice (the report)
    lambda: tp.randn(6, 4).t(),                     # transposed
    lambda: tp.randn(30)[3:27].reshape(4, 6),       # storage offset
    lambda: tp.randn(1, 6).expand(4, 6),            # expanded
], ids=["column-slice", "transposed", "offset", "expanded"])
def test_second_shape_keeps_the_samples_layout_kind(make):
    res = run_checks(double, (make(),), test_utils="test_aot_dispatch_dynamic")
    assert status(res, "test_aot_dispatch_dynamic") == ("pass", "")


@lib.custom_op("trust::layer_norm", mutates_args=(), device_types="cpu")
def layer_norm(x: Tensor, weight: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    xn = x.detach().numpy()
    mean = xn.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(xn.var(-1, keepdims=True) + 1e-5)
    return (tp.from_numpy(((xn - mean) * rstd * weight.detach().numpy()).astype(xn.dtype)),
            tp.from_numpy(mean.astype(xn.dtype)), tp.from_numpy(rstd.astype(xn.dtype)))


@layer_norm.register_fake
def _(x, weight):
    s = tuple(x.shape[:-1]) + (1,)
    return x.new_empty(x.shape), x.new_empty(s), x.new_empty(s)


def _ln_setup(ctx, inputs, output):
    x, w = inputs
    y, mean, rstd = output
    ctx.mark_non_differentiable(mean, rstd)
    ctx.save_for_backward(x, w, mean, rstd)


def _ln_backward(ctx, gy, gmean, grstd):
    x, w, mean, rstd = ctx.saved_tensors
    xhat = (x - mean) * rstd
    g = gy * w
    dx = rstd * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
    return dx, (gy * xhat).reshape(-1, x.shape[-1]).sum(0)


layer_norm.register_autograd(_ln_backward, setup_context=_ln_setup)


def test_outputs_the_formula_marks_non_differentiable_are_exempt():
    res = run_checks(layer_norm, (tp.randn(5, 8), tp.randn(8)))
    for name, r in res.items():
        assert r.status == "pass", (name, r.message)


@lib.custom_op("trust::with_argmax", mutates_args=())
def with_argmax(x: Tensor) -> tuple[Tensor, Tensor]:
    return x * 3, x.argmax(-1)


@with_argmax.register_fake
def _(x):
    return x.new_empty(x.shape), x.new_empty(x.shape[:-1], dtype=tp.int64)


def test_integer_outputs_are_exempt():
    res = run_checks(with_argmax, (tp.randn(4, 5, requires_grad=True),),
                     test_utils="test_autograd_registration")
    assert status(res, "test_autograd_registration") == ("pass", "")


@lib.custom_op("trust::rotary", mutates_args=(), device_types="cpu")
def rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    xn = x.detach().numpy()
    h = xn.shape[-1] // 2
    rot = np.concatenate([-xn[..., h:], xn[..., :h]], -1)
    return tp.from_numpy((xn * cos.detach().numpy() + rot * sin.detach().numpy())
                         .astype(xn.dtype))


@rotary.register_fake
def _(x, cos, sin):
    return x.new_empty(x.shape)


def _rot_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[1], inputs[2])


def _rot_backward(ctx, g):
    cos, sin = ctx.saved_tensors
    h = g.shape[-1] // 2
    gs = g * sin
    return g * cos + tp.cat([gs[..., h:], -gs[..., :h]], -1), None, None


rotary.register_autograd(_rot_backward, setup_context=_rot_setup)


def test_a_formula_returning_none_for_a_floating_input_is_a_declaration():
    res = run_checks(rotary, (tp.randn(3, 8), tp.randn(3, 8), tp.randn(3, 8)))
    for name, r in res.items():
        assert r.status == "pass", (name, r.message)


# "not differentiable on purpose", the torch ways: outputs marked non-differentiable, or a
# formula returning None for every input

@lib.custom_op("trust::quantize", mutates_args=(), device_types="cpu")
def quantize(x: Tensor) -> Tensor:
    xn = x.detach().numpy()
    return tp.from_numpy((np.round(xn * 4) / 4).astype(xn.dtype))


@quantize.register_fake
def _(x):
    return x.new_empty(x.shape)


quantize.register_autograd(lambda ctx, g: None,
                           setup_context=lambda ctx, inputs, output:
                           ctx.mark_non_differentiable(output))


@lib.custom_op("trust::round_none", mutates_args=(), device_types="cpu")
def round_none(x: Tensor) -> Tensor:
    xn = x.detach().numpy()
    return tp.from_numpy(np.round(xn).astype(xn.dtype))


@round_none.register_fake
def _(x):
    return x.new_empty(x.shape)


round_none.register_autograd(lambda ctx, g: None)


@pytest.mark.parametrize("op", [quantize, round_none], ids=["marked", "none-gradient"])
def test_not_differentiable_on_purpose_passes_and_gives_no_gradient_through_it(op):
    res = run_checks(op, (tp.randn(4, 6),))
    for name, r in res.items():
        assert r.status in ("pass", "skip"), (name, r.message)
    assert res["test_autograd_registration"].status == "pass"
    w = tp.randn(4, 6, requires_grad=True)
    (op(w) * w).sum().backward()
    # only the direct term: d/dw (q * w) with q treated as a constant is q
    np.testing.assert_allclose(w.grad.numpy(), op(w.detach()).numpy())


@lib.custom_op("trust::leaves_graph", mutates_args=(), device_types="cpu")
def leaves_graph(x: Tensor) -> Tensor:
    return tp.from_numpy(np.tanh(x.detach().numpy()))


@leaves_graph.register_fake
def _(x):
    return x.new_empty(x.shape)


def test_a_kernel_leaving_the_graph_without_a_formula_still_fails():
    res = run_checks(leaves_graph, (tp.randn(4, 6, requires_grad=True),),
                     test_utils="test_autograd_registration")
    st, msg = status(res, "test_autograd_registration")
    assert st == "fail"
    assert "trust::leaves_graph" in msg and "register_autograd" in msg
    assert "kernel cpu: test_check_trust:leaves_graph (user code)" in msg


# ------------------------------------------------------------------ 2. no false passes

def _raw_read(a):
    """numel() elements read in memory order from the first element's address (what a naive
    raw kernel does), staying inside the allocation (zeros past its end)."""
    import numpy as np
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    off = (a.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // a.itemsize
    flat = root.reshape(-1).view(a.dtype)[off:off + a.size]
    if flat.size < a.size:
        flat = np.concatenate([flat, np.zeros(a.size - flat.size, a.dtype)])
    return flat.reshape(a.shape)


def _naive_np(x):
    """Reads numel() elements from the data pointer (ignores strides and padding)."""
    return _raw_read(x.detach().numpy())


@lib.custom_op("trust::naive_scale", mutates_args=(), device_types="cpu")
def naive_scale(x: Tensor) -> Tensor:
    return tp.from_numpy(np.ascontiguousarray(_naive_np(x) * 2.0))


@naive_scale.register_fake
def _(x):
    return x.new_empty(x.shape)


naive_scale.register_autograd(lambda ctx, g: g * 2)

OLD_FOUR = ["test_schema", "test_autograd_registration", "test_faketensor",
            "test_aot_dispatch_dynamic"]


@pytest.mark.parametrize("make", [lambda: tp.randn(4, 6), lambda: tp.randn(6, 4).t()],
                         ids=["contiguous", "transposed"])
def test_layouts_catches_a_kernel_that_ignores_strides(make):
    x = make()
    res = run_checks(naive_scale, (x,), test_utils=OLD_FOUR + ["test_layouts"])
    assert all(res[n].status == "pass" for n in OLD_FOUR), res     # the old checks miss it
    st, msg = status(res, "test_layouts")
    assert st == "fail"
    assert "trust::naive_scale" in msg and "transposed" in msg and "padded slice" in msg
    assert "kernel cpu: test_check_trust:naive_scale (user code)" in msg


@lib.custom_op("trust::naive_add_", mutates_args=("x",), device_types="cpu")
def naive_add_(x: Tensor, y: Tensor) -> None:
    out = x.detach().numpy()
    out[...] = out + _naive_np(y)


@naive_add_.register_fake
def _(x, y):
    return None


def test_layouts_compares_mutated_inputs_too():
    res = run_checks(naive_add_, (tp.randn(4, 6), tp.randn(4, 6)), test_utils="test_layouts")
    st, msg = status(res, "test_layouts")
    assert st == "fail" and "mutated input" in msg


def test_layouts_passes_correct_ops_in_every_layout():
    for op, args in [(double, (tp.randn(4, 6),)), (layer_norm, (tp.randn(5, 8), tp.randn(8))),
                     (with_argmax, (tp.randn(4, 5),))]:
        res = run_checks(op, args, test_utils="test_layouts")
        assert status(res, "test_layouts") == ("pass", ""), op


@lib.custom_op("trust::refuses", mutates_args=(), device_types="cpu")
def refuses(x: Tensor) -> Tensor:
    if not x.is_contiguous():
        raise ValueError("trust::refuses: x must be contiguous")
    return tp.from_numpy(np.ascontiguousarray(_naive_np(x) + 1.0))


@refuses.register_fake
def _(x):
    return x.new_empty(x.shape)


def test_an_explicit_refusal_of_a_layout_is_not_a_wrong_result():
    # transposed/padded inputs are refused with a clear error; the storage-offset layout is
    # still checked (and passes: the kernel reads from the first element)
    res = run_checks(refuses, (tp.randn(4, 6),), test_utils="test_layouts")
    assert res["test_layouts"].status == "pass", res["test_layouts"].message


@lib.custom_op("trust::ravel_alias", mutates_args=(), device_types="cpu")
def ravel_alias(x: Tensor) -> Tensor:
    return tp.from_numpy(np.ravel(x.numpy()))


@ravel_alias.register_fake
def _(x):
    return x.new_empty((x.numel(),))


def test_schema_catches_memory_shared_through_another_array_library():
    res = run_checks(ravel_alias, (tp.randn(3, 4),), test_utils="test_schema")
    st, msg = status(res, "test_schema")
    assert st == "fail" and "output 0 shares memory with" in msg and "input 'x'" in msg


@lib.custom_op("trust::two_kernels", mutates_args=())
def two_kernels(x: Tensor) -> Tensor:
    """The device-agnostic kernel: ignores strides (the bug a cpu kernel hides)."""
    return tp.from_numpy(np.ascontiguousarray(_naive_np(x) + 1.0))


@two_kernels.register_kernel("cpu")
def _two_kernels_cpu(x):
    return x + 1.0


@two_kernels.register_fake
def _(x):
    return x.new_empty(x.shape)


def test_the_default_kernel_hidden_behind_a_device_kernel_is_checked_and_named():
    x = tp.randn(4, 6)
    ok = run_checks(two_kernels, (x,), test_utils="test_layouts")          # the cpu kernel
    assert ok["test_layouts"].status == "pass"
    bad = run_checks(two_kernels, (x,), test_utils="test_layouts", kernel="default")
    st, msg = status(bad, "test_layouts")
    assert st == "fail" and "kernel default: test_check_trust:two_kernels (user code)" in msg
    # the device kernel is back after the check
    assert np.allclose(two_kernels(x.t()).numpy(), x.t().numpy() + 1.0)
    assert _opcheck.describe_kernel(two_kernels, "cpu").startswith("cpu: test_check_trust:_two_kernels")
    with pytest.raises(ValueError, match="no such kernel"):
        run_checks(double, (x,), kernel="cpu")


@lib.custom_op("trust::no_empty", mutates_args=())
def no_empty(x: Tensor) -> Tensor:
    return x * 2


@no_empty.register_fake
def _(x):
    if x.shape[0] == 0:
        raise ValueError("trust::no_empty: needs at least one row")
    return x.new_empty(x.shape)


def test_a_zero_size_sample_is_derived_when_the_fake_accepts_it():
    s = [SampleInput((tp.randn(4, 3), tp.randn(3)), name="4x3")]
    z = _plugin_check.derive_zero_size(layer_norm, s)
    assert z is not None and tuple(z.args[0].shape) == (0, 3) and tuple(z.args[1].shape) == (3,)
    assert z.name == "derived: leading dim 0 (from 4x3)"
    assert _plugin_check.derive_zero_size(no_empty, [SampleInput((tp.randn(4, 3),), name="a")]) is None
    # a pack that ships an empty sample: nothing derived
    assert _plugin_check.derive_zero_size(double, [SampleInput((tp.randn(0, 3),), name="e")]) is None


def test_opcheck_of_an_op_whose_plugin_failed_names_plugin_error_and_fix(tmp_path):
    env = PluginEnv(tmp_path)
    env.dist("brokenpkg", plugins={"brokenns": "brokenmod"}, modules={"brokenmod": BROKEN_IMPORT})
    r = env.run('''
import tensorplay as tp
from tensorplay.library import opcheck
result(raises(opcheck, "brokenns::op", (tp.randn(3),)))
''')
    kind, msg, cause, cause_msg = r.data
    assert kind == "LookupError"
    assert "brokenns::op" in msg and "brokenpkg" in msg and "libbroken.so" in msg
    assert "Fix:" in msg and cause == "ImportError"


@lib.custom_op("trust::raising_backward", mutates_args=(), device_types="cpu")
def raising_backward(x: Tensor) -> Tensor:
    return tp.from_numpy(np.tanh(x.detach().numpy()))


@raising_backward.register_fake
def _(x):
    return x.new_empty(x.shape)


def _raise(ctx, g):
    # what the eager safety net's node does for a kernel that left the graph
    raise RuntimeError("trust::raising_backward: this op has no derivative formula; register "
                       "one with register_autograd")


raising_backward.register_autograd(_raise)


def test_a_backward_that_raises_fails_the_autograd_check_with_its_message():
    res = run_checks(raising_backward, (tp.randn(3, 4),), test_utils="test_autograd_registration")
    st, msg = status(res, "test_autograd_registration")
    assert st == "fail" and "backward raised RuntimeError" in msg
    assert "no derivative formula" in msg and "trust::raising_backward" in msg
