"""The bridge's contract, op by op: schema kept, DLPack zero-copy both ways (views, strides), dtype
mapping, mutation (and version counters), fakes from the pack's fake, autograd from the pack's
formula (saved tensors, ctx attributes, needs_input_grad, non-differentiable outputs), composite
ops differentiable only where correct, errors naming op, pack and side."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import tensorplay as tp
import tensorplay_torch
import torch
from tensorplay import library
from torch._subclasses.fake_tensor import FakeTensorMode

# -- ops defined here (namespace "bridgetest"), bridged with the packs' -------------------------

SEEN: dict = {}


@library.custom_op("bridgetest::scale", mutates_args=())
def scale(x: tp.Tensor, *, alpha: float = 2.0, shift: float = 0.0) -> tp.Tensor:
    SEEN["x_ptr"], SEEN["x_stride"] = x.data_ptr(), x.stride()
    out = x * alpha + shift
    SEEN["out_ptr"] = out.data_ptr()
    return out


@scale.register_fake
def _(x, *, alpha=2.0, shift=0.0):
    return x.new_empty(x.shape)


def _scale_setup(ctx, inputs, keyword_only_inputs, output):
    ctx.alpha = keyword_only_inputs["alpha"]
    ctx.save_for_backward(inputs[0])


def _scale_backward(ctx, g):
    SEEN["saved"] = len(ctx.saved_tensors)
    SEEN["needs"] = ctx.needs_input_grad
    SEEN["alpha_in_backward"] = ctx.alpha
    return g * ctx.alpha


scale.register_autograd(_scale_backward, setup_context=_scale_setup)


@library.custom_op("bridgetest::ident", mutates_args=())
def ident(x: tp.Tensor) -> tp.Tensor:
    return x.clone()


@library.custom_op("bridgetest::weighted", mutates_args=())
def weighted(xs: list[tp.Tensor], w: tp.Tensor) -> tp.Tensor:
    """Composite (no formula): sum of xs[i] * w[i]; differentiable through its body."""
    out = xs[0] * w[0]
    for i in range(1, len(xs)):
        out = out + xs[i] * w[i]
    return out


@library.custom_op("bridgetest::np_square", mutates_args=(), device_types="cpu")
def np_square(x: tp.Tensor) -> tp.Tensor:
    """A NumPy kernel, no formula, no body: not differentiable."""
    return tp.from_numpy(np.square(x.numpy()))


@np_square.register_fake
def _(x):
    return x.new_empty(x.shape)


@library.custom_op("bridgetest::shadowed", mutates_args=())
def shadowed(x: tp.Tensor) -> tp.Tensor:
    """A body written with tensorplay ops, shadowed on cpu by a NumPy kernel of its own."""
    return x * 3.0


shadowed.register_kernel("cpu", lambda x: tp.from_numpy(x.numpy() * 3.0))


@library.custom_op("bridgetest::boom", mutates_args=())
def boom(x: tp.Tensor) -> tp.Tensor:
    raise ValueError("the kernel refuses")


@boom.register_fake
def _(x):
    return x.new_empty(x.shape)


@library.custom_op("bridgetest::fill_", mutates_args=("out",))
def fill_(out: tp.Tensor, value: float) -> None:
    out.fill_(value)


@library.custom_op("bridgetest::cast", mutates_args=())
def cast(x: tp.Tensor, dtype: tp.dtype, scale: float | None = None) -> tp.Tensor:
    y = x.to(dtype)
    return y * scale if scale is not None else y


@library.custom_op("bridgetest::arange_on", mutates_args=())
def arange_on(n: int, device: tp.device) -> tp.Tensor:
    """No tensor argument: dispatches on ``device`` (torch's BackendSelect)."""
    return tp.arange(n, device=device).to(tp.float32)


@arange_on.register_fake
def _(n, device):
    return tp.empty(n, device=device)


@library.custom_op("bridgetest::affine", mutates_args=())
def affine(x: tp.Tensor, w: tp.Tensor, bias: tp.Tensor | None = None) -> tp.Tensor:
    """An optional tensor after a plain one: it crosses, None stays None (the per-op plan)."""
    SEEN["affine_types"] = (type(x), type(w), type(bias))
    y = x * w
    return y + bias if bias is not None else y


@library.custom_op("bridgetest::kw_mix", mutates_args=())
def kw_mix(x: tp.Tensor, *, w: tp.Tensor, bias: tp.Tensor | None = None,
           alpha: float = 1.0) -> tp.Tensor:
    """Keyword-only tensor arguments with a formula (torch's register_autograd refuses these)."""
    y = x * w * alpha
    return y + bias if bias is not None else y


def _kw_mix_setup(ctx, inputs, keyword_only_inputs, output):
    ctx.save_for_backward(inputs[0], keyword_only_inputs["w"])
    ctx.alpha = keyword_only_inputs["alpha"]
    ctx.has_bias = keyword_only_inputs["bias"] is not None


def _kw_mix_backward(ctx, g):
    x, w = ctx.saved_tensors
    SEEN["kw_mix_needs"] = ctx.needs_input_grad
    return g * w * ctx.alpha, g * x * ctx.alpha, (g if ctx.has_bias else None), None


kw_mix.register_autograd(_kw_mix_backward, setup_context=_kw_mix_setup)


@library.custom_op("bridgetest::axpy", mutates_args=())
def axpy(a: tp.Tensor, x: tp.Tensor, y: tp.Tensor, scale: float = 1.0) -> tp.Tensor:
    """A setup_context that reads some inputs by index only (y never, the output never)."""
    return (a * x + y) * scale


def _axpy_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.scale = inputs[3]


def _axpy_backward(ctx, g):
    a, x = ctx.saved_tensors
    g = g * ctx.scale
    return g * x, g * a, g, None


axpy.register_autograd(_axpy_backward, setup_context=_axpy_setup)


@library.custom_op("bridgetest::kw_sum", mutates_args=())
def kw_sum(x: tp.Tensor, *, others: list[tp.Tensor]) -> tp.Tensor:
    """A keyword-only tensor list, no formula: differentiable through its body."""
    out = x * 1.0
    for o in others:
        out = out + o * o
    return out


@library.custom_op("bridgetest::bmul", mutates_args=())
def bmul(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
    """x (n, k) times w (k,): the formula returns w's gradient unreduced ((n, k)) and x's in
    float32, which the bridge sums to w's shape and casts to x's dtype (torch's engine rule)."""
    return x * w


def _bmul_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _bmul_backward(ctx, g):
    x, w = ctx.saved_tensors
    return (g * w).to(tp.float32), g * x


bmul.register_autograd(_bmul_backward, setup_context=_bmul_setup)


@library.custom_op("bridgetest::half_formula", mutates_args=())
def half_formula(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
    """A formula that returns None for ``w`` even when it requires grad: no gradient."""
    return x * w


def _half_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[1])


half_formula.register_autograd(lambda ctx, g: (g * ctx.saved_tensors[0], None),
                               setup_context=_half_setup)


@library.custom_op("bridgetest::exp_", mutates_args=())
def exp_(x: tp.Tensor) -> tp.Tensor:
    """A setup_context that saves the output (the bridge saves it on torch's side too)."""
    return x.exp()


def _exp_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


exp_.register_autograd(lambda ctx, g: g * ctx.saved_tensors[0], setup_context=_exp_setup)


@library.custom_op("bridgetest::bad_backward", mutates_args=())
def bad_backward(x: tp.Tensor) -> tp.Tensor:
    return x * 1.0


def _refuse(ctx, g):
    raise ValueError("the formula refuses")


bad_backward.register_autograd(_refuse, setup_context=lambda ctx, inputs, output: None)


@library.custom_op("bridgetest::short_backward", mutates_args=())
def short_backward(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
    return x + y


short_backward.register_autograd(lambda ctx, g: g)      # one gradient for two inputs


@library.custom_op("bridgetest::logged", mutates_args=())
def logged(x: tp.Tensor, w: tp.Tensor, k: float = 1.0) -> tp.Tensor:
    """A formula whose setup_context logs what it got and when (the eager direct path)."""
    return x * w * k


def _logged_setup(ctx, inputs, output):
    x, w, k = inputs
    LOG.append(("setup", type(x), type(output), x.data_ptr(), x.stride(), ctx.needs_input_grad))
    ctx.save_for_backward(x, w)
    ctx.k = k


def _logged_backward(ctx, g):
    x, w = ctx.saved_tensors
    LOG.append(("backward", type(g), ctx.k))
    return g * w * ctx.k, g * x * ctx.k, None


logged.register_autograd(_logged_backward, setup_context=_logged_setup)
LOG: list = []


@library.custom_op("bridgetest::bad_setup", mutates_args=())
def bad_setup(x: tp.Tensor) -> tp.Tensor:
    return x * 2.0


def _bad_setup_setup(ctx, inputs, output):
    raise ValueError("the setup_context refuses")


bad_setup.register_autograd(lambda ctx, g: g * 2.0, setup_context=_bad_setup_setup)


@library.custom_op("bridgetest::to_dtype", mutates_args=())
def to_dtype(x: tp.Tensor, dtype: tp.dtype, s: float = 1.0) -> tp.Tensor:
    """A formula op with a dtype argument: its setup_context gets TensorPlay's dtype."""
    return x.to(dtype) * s


def _to_dtype_setup(ctx, inputs, output):
    LOG.append(("to_dtype", inputs[1]))
    ctx.s = inputs[2]


to_dtype.register_autograd(lambda ctx, g: (g * ctx.s, None, None), setup_context=_to_dtype_setup)


tensorplay_torch.register()
T = torch.ops.bridgetest


# -- schema ---------------------------------------------------------------------------------------

def test_every_pack_op_keeps_its_schema(bridged):
    assert {"example::rms_norm", "newuser::layer_norm", "bridgetest::scale"} <= set(bridged)
    for name in bridged:
        ns, opname = name.split("::")
        mine = getattr(getattr(tp.ops, ns), opname).schema
        theirs = getattr(getattr(torch.ops, ns), opname).default._schema
        assert theirs.name == name
        assert len(theirs.arguments) == len(mine.arguments), name
        # torch prints floats its own way (1e-06 as 9.9999999999999995e-07): compare fields
        for t, m in zip(theirs.arguments, mine.arguments):
            assert (t.name, t.kwarg_only) == (m.name, m.kwarg_only), name
            assert ("Tensor" in str(t.type)) == m.type.startswith("Tensor"), (name, t.name)
            assert (t.alias_info is not None and t.alias_info.is_write) == bool(m.is_write), name
            if m.has_default:
                assert t.has_default_value() and t.default_value == m.default, (name, t.name)
        assert len(theirs.returns) == len(mine.returns), name


def test_keyword_only_arguments_and_defaults():
    x = torch.randn(3)
    torch.testing.assert_close(T.scale(x), x * 2.0)
    torch.testing.assert_close(T.scale(x, alpha=3.0, shift=1.0), x * 3.0 + 1.0)
    with pytest.raises((RuntimeError, TypeError)):
        T.scale(x, 3.0)                 # keyword-only, as declared


def test_register_is_idempotent_and_selects():
    assert tensorplay_torch.register(namespace="example") == []
    assert tensorplay_torch.register(plugin="example_ops") == []
    with pytest.raises(tensorplay_torch.BridgeError, match="no TensorPlay op in namespace"):
        tensorplay_torch.register(namespace="no_such_namespace")


# -- DLPack, zero-copy ----------------------------------------------------------------------------

def test_inputs_and_outputs_cross_without_copies_views_and_strides_kept():
    base = torch.randn(6, 8)
    x = base.t()[1:, ::2]                         # a strided view with a storage offset
    y = T.scale(x, alpha=1.0)
    assert SEEN["x_ptr"] == x.data_ptr() and SEEN["x_stride"] == x.stride()
    assert SEEN["out_ptr"] == y.data_ptr()
    torch.testing.assert_close(y, x)


def test_mutation_reaches_torch_memory_and_bumps_the_version():
    base = torch.zeros(4, 6)
    view = base[:, 1:4]
    v = view._version
    T.fill_(view, 5.0)
    assert (base[:, 1:4] == 5).all() and (base[:, 0] == 0).all() and (base[:, 4:] == 0).all()
    assert view._version > v
    x = torch.randn(5, 3).t()
    torch.ops.example.add_relu_(x, torch.ones(5))
    assert (x >= 0).all()


@pytest.mark.parametrize("dt", list(tensorplay_torch.DTYPES), ids=str)
def test_dtypes_map_both_ways(dt):
    x = (torch.arange(6) % 2 == 0) if dt is torch.bool else torch.arange(6).to(dt)
    x = x.reshape(2, 3).t()
    y = T.ident(x)
    assert y.dtype == dt and torch.equal(y, x)
    t = tensorplay_torch.to_tensorplay(x)
    assert t.dtype == tensorplay_torch.DTYPES[dt] and t.stride() == x.stride()
    back = tensorplay_torch.to_torch(t)
    assert back.dtype == dt and back.data_ptr() == x.data_ptr() and back.stride() == x.stride()


def test_a_tensorplay_tensor_requiring_grad_crosses_detached():
    t = tp.arange(6, dtype=tp.float32).reshape(2, 3).t().requires_grad_()
    y = tensorplay_torch.to_torch(t)
    assert not y.requires_grad and y.data_ptr() == t.data_ptr() and y.stride() == t.stride()
    assert y.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_dtype_device_and_optional_arguments_cross():
    x = torch.arange(4, dtype=torch.int32)
    y = T.cast(x, torch.float64)
    assert y.dtype == torch.float64 and y.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert T.cast(x, torch.float16, 0.5).tolist() == [0.0, 0.5, 1.0, 1.5]
    with FakeTensorMode() as mode:
        f = T.cast(mode.from_tensor(x), torch.bfloat16)
        assert f.dtype == torch.bfloat16 and f.shape == (4,)
    z = T.arange_on(3, torch.device("cpu"))
    assert z.tolist() == [0.0, 1.0, 2.0] and z.device.type == "cpu"


def test_optional_tensors_cross_and_none_stays_none():
    x, b, w = torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0]), torch.tensor([3.0, 4.0])
    assert T.affine(x, w, b).tolist() == [13.0, 28.0]
    assert SEEN["affine_types"] == (tp.Tensor, tp.Tensor, tp.Tensor)
    assert T.affine(x, w, None).tolist() == [3.0, 8.0]
    assert SEEN["affine_types"] == (tp.Tensor, tp.Tensor, type(None))
    assert T.affine(x, w).tolist() == [3.0, 8.0]
    assert T.affine(x, w, bias=b).tolist() == [13.0, 28.0]


# -- errors -----------------------------------------------------------------------------------

def test_a_dtype_tensorplay_lacks_is_refused_naming_op_pack_and_side():
    with pytest.raises(tensorplay_torch.BridgeError) as e:
        T.ident(torch.ones(2, dtype=torch.complex64))
    msg = str(e.value)
    assert "bridgetest::ident" in msg and "complex64" in msg and "TensorPlay side" in msg
    assert "pack" in msg
    with pytest.raises(tensorplay_torch.BridgeError) as e:
        torch.ops.example.gelu(torch.ones(2, dtype=torch.complex64))
    assert "example::gelu" in str(e.value) and "tensorplay-example-ops" in str(e.value)


def test_a_kernel_error_keeps_its_type_and_names_the_op():
    with pytest.raises(ValueError, match=r"bridgetest::boom.*TensorPlay kernel raised.*refuses"):
        T.boom(torch.ones(2))


# -- fakes ------------------------------------------------------------------------------------

def test_fake_outputs_have_the_real_outputs_metadata():
    x, w, b = torch.randn(6, 16).t().contiguous().t(), torch.randn(16), torch.randn(16)
    real = torch.ops.newuser.layer_norm(x, w, b)
    with FakeTensorMode() as mode:
        fx, fw, fb = (mode.from_tensor(t) for t in (x, w, b))
        fake = torch.ops.newuser.layer_norm(fx, fw, fb)
    for r, f in zip(real, fake):
        # strides of size-1 dimensions carry no layout (torch's own fake checks skip them too)
        assert (f.shape, f.dtype, f.device) == (r.shape, r.dtype, r.device)
        assert [st for st, n in zip(f.stride(), f.shape) if n > 1] == \
            [st for st, n in zip(r.stride(), r.shape) if n > 1]
    with FakeTensorMode() as mode, \
            pytest.raises(ValueError, match="example::rms_norm.*weight must have shape"):
        torch.ops.example.rms_norm(mode.from_tensor(x), mode.from_tensor(torch.randn(5)))


# -- autograd ---------------------------------------------------------------------------------

def _leaf(*shape, dtype=torch.float64):
    return torch.randn(*shape, dtype=dtype).requires_grad_(True)


def test_formula_gives_torchs_gradients_for_rms_norm_and_layer_norm():
    x, w = _leaf(4, 8), _leaf(8)
    y = torch.ops.example.rms_norm(x, w, 1e-5)
    g = torch.randn_like(y)
    gx, gw = torch.autograd.grad(y, (x, w), g)
    ref = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w
    rx, rw = torch.autograd.grad(ref, (x, w), g)
    torch.testing.assert_close((gx, gw), (rx, rw))

    x, w, b = _leaf(5, 16), _leaf(16), _leaf(16)
    y, mean, rstd = torch.ops.newuser.layer_norm(x, w, b)
    assert y.requires_grad and not mean.requires_grad and not rstd.requires_grad
    g = torch.randn_like(y)
    got = torch.autograd.grad(y, (x, w, b), g)
    want = torch.autograd.grad(torch.nn.functional.layer_norm(x, (16,), w, b, 1e-5), (x, w, b), g)
    torch.testing.assert_close(got, want)


def test_ctx_attributes_saved_tensors_and_needs_input_grad_reach_the_formula():
    x = _leaf(3)
    y = T.scale(x, alpha=4.0)
    (gx,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(gx, torch.full_like(x, 4.0))
    assert SEEN["alpha_in_backward"] == 4.0 and SEEN["needs"][0] is True and SEEN["saved"] == 1
    torch.autograd.gradcheck(lambda t: T.scale(t, alpha=1.5, shift=0.5), (_leaf(4),))


def test_keyword_only_tensor_arguments_get_gradients_from_the_formula():
    """torch's register_autograd refuses keyword-only tensors; the bridge's autograd takes them
    (every tensor argument, positional or keyword-only, gets its gradient)."""
    x, w, b = _leaf(3), _leaf(3), _leaf(3)
    y = T.kw_mix(x, w=w, bias=b, alpha=2.0)
    torch.testing.assert_close(y, x * w * 2.0 + b)
    g = torch.randn(3, dtype=torch.float64)
    got = torch.autograd.grad(y, (x, w, b), g)
    want = torch.autograd.grad(x * w * 2.0 + b, (x, w, b), g)
    torch.testing.assert_close(got, want)
    assert SEEN["kw_mix_needs"] == (True, True, True, False)
    wc = _leaf(3).detach()                      # a keyword-only tensor needing no gradient
    (gx,) = torch.autograd.grad(T.kw_mix(x, w=wc).sum(), x)
    torch.testing.assert_close(gx, wc)
    assert SEEN["kw_mix_needs"] == (True, False, False, False)
    torch.autograd.gradcheck(lambda a, c, d: T.kw_mix(a, w=c, bias=d, alpha=0.5), (x, w, b))
    torch.autograd.gradcheck(lambda a, c: T.kw_sum(a, others=[c, a]), (_leaf(4), _leaf(4)))


def test_a_setup_context_reading_some_inputs_by_index_gets_those():
    a, x, y = _leaf(2, 3), _leaf(2, 3), _leaf(2, 3)
    torch.autograd.gradcheck(lambda p, q, r: T.axpy(p, q, r, 0.5), (a, x, y))
    got = torch.autograd.grad(T.axpy(a, x, y).sum(), (a, x, y))
    torch.testing.assert_close(got, (x, a, torch.ones_like(y)))


@pytest.mark.parametrize("op, kwargs", [
    ("kw_mix", {"w": True, "bias": True, "alpha": 1.5}),
    ("kw_mix", {"w": True}),
    ("kw_sum", {"others": [True, True]}),
], ids=["kw_mix-bias", "kw_mix", "kw_sum"])
def test_keyword_only_tensor_ops_pass_torchs_opcheck(op, kwargs):
    def value(v):
        if v is True:
            return _leaf(2, 3)
        return [value(e) for e in v] if isinstance(v, list) else v
    torch.library.opcheck(getattr(T, op).default, (_leaf(2, 3),),
                          {k: value(v) for k, v in kwargs.items()})


def test_keyword_only_tensor_op_compiles_forward_and_backward():
    torch._dynamo.reset()
    x, w = _leaf(4), _leaf(4)

    def f(a, c):
        return (T.kw_mix(a, w=c, alpha=3.0) ** 2).sum()

    want = torch.autograd.grad(f(x, w), (x, w))
    got = torch.autograd.grad(torch.compile(f, fullgraph=True, backend="aot_eager")(x, w),
                              (x, w))
    torch.testing.assert_close(got, want)


def _eager_and_traced(fn, *inputs, **grad_kwargs):
    """Gradients of ``fn(*inputs).sum()`` in eager mode (the bridge's eager backward) and
    through aot_eager (the backward op, traced and then run): both, to be compared
    (``grad_kwargs``: for ``torch.autograd.grad``)."""
    torch._dynamo.reset()
    eager = torch.autograd.grad(fn(*inputs).sum(), inputs, **grad_kwargs)
    traced = torch.autograd.grad(
        torch.compile(lambda *a: fn(*a).sum(), fullgraph=True, backend="aot_eager")(*inputs),
        inputs, **grad_kwargs)
    return eager, traced


def test_a_broadcast_or_other_dtype_gradient_is_summed_and_cast_as_torchs_engine_does():
    x, w = _leaf(4, 3), _leaf(3)
    want = torch.autograd.grad((x * w).sum(), (x, w))
    for got in _eager_and_traced(T.bmul, x, w):
        assert [g.dtype for g in got] == [torch.float64, torch.float64]
        assert [g.shape for g in got] == [x.shape, w.shape]
        torch.testing.assert_close(got, want)


def test_a_formula_none_for_an_input_requiring_grad_is_no_gradient_as_custom_ops():
    """None from a formula is no gradient, as from a torch.library.custom_op formula: torch's
    autograd.grad gives None (allow_unused=True), zeros (materialize_grads=True), and refuses
    without either. (Before session 43 the bridge handed torch zeros: test_bridge43.py.)"""
    x, w = _leaf(3), _leaf(3)
    for gx, gw in _eager_and_traced(T.half_formula, x, w, allow_unused=True):
        torch.testing.assert_close(gx, w.detach())
        assert gw is None
    for gx, gw in _eager_and_traced(T.half_formula, x, w, materialize_grads=True):
        torch.testing.assert_close(gx, w.detach())
        torch.testing.assert_close(gw, torch.zeros_like(w))
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        torch.autograd.grad(T.half_formula(x, w).sum(), (x, w))


def test_a_setup_context_saving_the_output_gets_it_in_backward():
    x = _leaf(5)
    for (gx,) in _eager_and_traced(T.exp_, x):
        torch.testing.assert_close(gx, x.detach().exp())
    torch.autograd.gradcheck(T.exp_, (_leaf(3),))


def test_a_formula_error_keeps_its_type_and_names_the_op_and_backward():
    y = T.bad_backward(_leaf(3))
    with pytest.raises(ValueError, match=r"bridgetest::bad_backward.*backward.*the formula "
                                         r"refuses"):
        y.sum().backward()
    x, z = _leaf(3), _leaf(3)
    with pytest.raises(tensorplay_torch.BridgeError,
                       match=r"bridgetest::short_backward.*returned 1 gradients"):
        T.short_backward(x, z).sum().backward()


def test_saved_input_modified_in_place_is_caught_by_torch():
    x = _leaf(3)
    xx = x * 1.0
    y = T.scale(xx)
    xx.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_eager_setup_context_runs_once_in_forward_on_tensorplay_tensors():
    """Plain eager calls: the pack's setup_context runs in forward (as TensorPlay's own autograd
    runs it) on the TensorPlay tensors the kernel got (zero-copy: the torch input's memory and
    strides), with needs_input_grad set; backward -- twice under retain_graph -- gets that ctx
    and does not run setup_context again."""
    LOG.clear()
    x = _leaf(4, 6)[:, ::2]                     # a strided view crosses as itself
    w = _leaf(4, 3).detach()                    # needs no gradient
    y = T.logged(x, w, 3.0)
    assert len(LOG) == 1
    what, tx, tout, ptr, stride, needs = LOG[0]
    assert what == "setup" and tx is tp.Tensor and tout is tp.Tensor
    assert ptr == x.data_ptr() and stride == x.stride() and needs == (True, False, False)
    g = torch.randn_like(y)
    for _ in range(2):
        (gx,) = torch.autograd.grad(y, x, g, retain_graph=True)
        torch.testing.assert_close(gx, g * w * 3.0)
    assert [e[0] for e in LOG] == ["setup", "backward", "backward"]
    assert LOG[1][1] is tp.Tensor and LOG[1][2] == 3.0
    torch.autograd.gradcheck(lambda a, b: T.logged(a, b, 0.5), (_leaf(2, 3), _leaf(2, 3)))


def test_a_setup_context_error_is_raised_in_forward_naming_the_op():
    with pytest.raises(ValueError, match=r"bridgetest::bad_setup.*setup_context.*refuses"):
        T.bad_setup(_leaf(3))
    with torch.no_grad():                       # no autograd: no setup_context
        torch.testing.assert_close(T.bad_setup(torch.ones(2)), torch.full((2,), 2.0))


def test_saved_tensor_hooks_values_reach_the_formula_as_torchs_do():
    """Under saved-tensor hooks the formula sees what their unpack returns (torch's rule, as for
    a torch op): here unpack doubles every saved tensor."""
    a, x, y = _leaf(3), _leaf(3), _leaf(3)
    g = torch.randn(3, dtype=torch.float64)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 2):
        got = torch.autograd.grad(T.axpy(a, x, y), (a, x, y), g)
        want = torch.autograd.grad(a * x + y, (a, x, y), g)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got[0], 2 * g * x.detach())


def test_a_saved_output_modified_in_place_is_caught_by_torch():
    y = T.exp_(_leaf(3))
    y.add_(1.0)                 # exp_'s setup_context saved its output
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_torchdynamo_never_traces_the_bridges_own_frames():
    """A bridged op called eagerly while TorchDynamo's frame hook is on (a callee it skips,
    ``recursive=False``): Dynamo compiles the user's frames only, never the bridge's kernels,
    autograd kernel or TensorPlay's code (as torch.library.register_kernel's wrapper ensures
    for torch's own custom ops)."""
    from torch._dynamo import convert_frame
    torch._dynamo.reset()
    eager = torch._dynamo.disable(lambda t: T.scale(t, alpha=3.0), recursive=False)
    f = torch.compile(lambda t: eager(t * 2) + 1, backend="eager")
    x = _leaf(3)
    for _ in range(2):
        (gx,) = torch.autograd.grad(f(x).sum(), x)
        torch.testing.assert_close(gx, torch.full_like(x, 6.0))
    with torch.no_grad():
        torch.testing.assert_close(f(x), x * 6 + 1)
    seen = [(c.co_filename, c.co_name) for c in (r() for r in convert_frame.input_codes.seen)
            if c is not None]
    assert seen and not [s for s in seen if "tensorplay" in s[0]], seen


def test_double_backward_is_refused_naming_the_op_first_order_under_create_graph_kept():
    """The formula runs in TensorPlay, outside torch's graph: its gradients are right under
    create_graph=True, and differentiating them again raises naming the op (never a silently
    missing second-order term)."""
    x = _leaf(3)
    y = T.scale(x, alpha=3.0)
    (gx,) = torch.autograd.grad((y * y).sum(), x, create_graph=True)
    torch.testing.assert_close(gx, 18 * x.detach())
    with pytest.raises(RuntimeError, match=r"bridgetest::scale.*double backward is not supported"):
        torch.autograd.grad(gx.sum(), x)
    (gx,) = torch.autograd.grad(T.exp_(x).sum(), x, create_graph=True)   # setup saved output
    torch.testing.assert_close(gx, x.detach().exp())
    with pytest.raises(RuntimeError, match=r"bridgetest::exp_.*double backward"):
        (gx * x).sum().backward()


def test_a_dtype_argument_reaches_setup_context_as_tensorplays_on_every_path():
    """Eager (setup_context in forward), under saved-tensor hooks (in backward) and traced by
    aot_eager (the backward op): setup_context gets tensorplay.float32, as the kernel does."""
    x = _leaf(3)
    for run in (lambda: torch.autograd.grad(T.to_dtype(x, torch.float32, 2.0).sum(), x),
                lambda: _with_hooks(lambda: torch.autograd.grad(
                    T.to_dtype(x, torch.float32, 2.0).sum(), x))):
        LOG.clear()
        (gx,) = run()
        assert gx.dtype == torch.float64
        torch.testing.assert_close(gx, torch.full_like(x, 2.0))
        # (a first call on the generic path also runs it once on fakes: the marks probe)
        assert LOG and all(e == ("to_dtype", tp.float32) for e in LOG), LOG
    LOG.clear()
    _, (gx,) = _eager_and_traced(lambda a: T.to_dtype(a, torch.float32, 2.0), x)
    torch.testing.assert_close(gx, torch.full_like(x, 2.0))
    assert LOG and all(e == ("to_dtype", tp.float32) for e in LOG), LOG


def _with_hooks(fn):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return fn()


def test_a_backward_under_a_dispatch_mode_after_an_eager_forward_sees_the_backward_op():
    """Forward eager (setup_context in forward), backward under a TorchDispatchMode: the mode
    sees the bridge's backward op, which rebuilds the ctx from the tensors torch saved."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x, w = _leaf(2, 3), _leaf(2, 3)
    LOG.clear()
    y = T.logged(x, w, 2.0)
    with Log():
        got = torch.autograd.grad(y, (x, w), torch.ones_like(y))
    torch.testing.assert_close(got, (2 * w.detach(), 2 * x.detach()))
    assert any("tensorplay_bridge" in s and "logged" in s for s in seen), seen
    assert [e[0] for e in LOG] == ["setup", "setup", "backward"]


def test_composite_ops_differentiate_through_their_body():
    x = _leaf(4, 5)
    torch.testing.assert_close(torch.autograd.grad(torch.ops.example.gelu(x).sum(), x)[0],
                               torch.autograd.grad(torch.nn.functional.gelu(
                                   x, approximate="tanh").sum(), x)[0])
    xs, w = [_leaf(3), _leaf(3)], _leaf(2)
    torch.autograd.gradcheck(lambda a, b, c: T.weighted([a, b], c), (*xs, w))


def test_ops_whose_running_kernel_has_no_gradient_refuse_backward_naming_the_op():
    x = _leaf(3)
    y = T.np_square(x)                       # forward works
    with pytest.raises(RuntimeError, match="bridgetest::np_square.*no autograd formula"):
        y.sum().backward()
    y = T.shadowed(x)                        # the body is not what ran on cpu
    with pytest.raises(RuntimeError, match="bridgetest::shadowed"):
        y.sum().backward()
    with torch.no_grad():
        torch.testing.assert_close(T.shadowed(x), x * 3.0)


# -- import cost and opt-in autoload ----------------------------------------------------------

def _run(code, **env):
    e = {k: v for k, v in os.environ.items() if k != "TENSORPLAY_TORCH_AUTOLOAD"}
    e.update(env)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_importing_the_bridge_is_cheap_and_import_tensorplay_never_imports_it():
    assert _run("import sys, tensorplay_torch; "
                "print([m for m in ('torch', 'tensorplay') if m in sys.modules])") == "[]"
    assert _run("import sys, tensorplay; print('tensorplay_torch' in sys.modules, "
                "'torch' in sys.modules)") == "False False"


def test_autoload_at_import_torch_is_off_by_default_and_opt_in():
    code = ("import sys, torch; print('tensorplay' in sys.modules, "
            "hasattr(torch.ops.example, 'rms_norm'))")
    assert _run(code) == "False False"
    assert _run(code, TENSORPLAY_TORCH_AUTOLOAD="0") == "False False"
    assert _run(code, TENSORPLAY_TORCH_AUTOLOAD="example") == "True True"
    assert _run(code + "; print(hasattr(torch.ops.newuser, 'layer_norm'))",
                TENSORPLAY_TORCH_AUTOLOAD="1").splitlines()[-1] == "True"


# -- cuda (the GPU machine; skipped elsewhere) -------------------------------------------------

def _cuda_or_skip():
    if not torch.cuda.is_available():
        pytest.skip("torch has no cuda device here")
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"TensorPlay's cuda device is unavailable: {why}")


def test_cuda_kernels_zero_copy_on_torchs_current_stream():
    _cuda_or_skip()
    x = torch.randn(64, 96, device="cuda")[:, :64]
    w = torch.randn(64, device="cuda")
    want = torch.ops.example.rms_norm(x.cpu(), w.cpu())
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = torch.ops.example.rms_norm(x, w)
        s = T.scale(x, alpha=1.0)
    assert SEEN["x_ptr"] == x.data_ptr() and SEEN["x_stride"] == x.stride()
    assert SEEN["out_ptr"] == s.data_ptr() and y.device == x.device
    side.synchronize()
    torch.testing.assert_close(y.cpu(), want, rtol=1e-5, atol=1e-5)
    xg = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(torch.ops.example.rms_norm(xg, w).sum(), xg)
    xc = x.detach().cpu().requires_grad_(True)
    (gc,) = torch.autograd.grad(torch.ops.example.rms_norm(xc, w.cpu()).sum(), xc)
    torch.testing.assert_close(g.cpu(), gc, rtol=1e-4, atol=1e-5)
    # the eager direct path (setup_context in forward) and its backward, on the side stream
    LOG.clear()
    with torch.cuda.stream(side):
        yl = T.logged(xg, w, 2.0)
        assert [e[0] for e in LOG] == ["setup"]     # in forward: the direct path ran
        (gl,) = torch.autograd.grad(yl.sum(), xg)
        with torch.no_grad():
            yn = T.logged(x, w, 2.0)
    side.synchronize()
    assert LOG[0][0] == "setup" and LOG[0][3] == xg.data_ptr() and LOG[0][4] == xg.stride()
    assert [e[0] for e in LOG] == ["setup", "backward"]
    torch.testing.assert_close(gl, (w * 2.0).expand_as(xg))
    torch.testing.assert_close(yn, yl.detach())


def test_cuda_results_cross_back_without_cupys_deprecation_warning():
    """Results and gradients return to torch through DLPack without CuPy's deprecated
    ``toDlpack()`` (its "This function is deprecated ... cupy.from_dlpack()" warning), on
    torch's current stream: correct values with no synchronisation but the final one."""
    _cuda_or_skip()
    x = torch.randn(8, 16, device="cuda", requires_grad=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with torch.cuda.stream(side):
            y = T.scale(x, alpha=3.0)
            (g,) = torch.autograd.grad(y.sum(), x)
            yn = T.scale(x.detach(), alpha=3.0)
        side.synchronize()
    assert [str(w.message) for w in seen
            if "deprecated" in str(w.message) and "dlpack" in str(w.message).lower()] == []
    torch.testing.assert_close(y.detach(), x.detach() * 3.0)
    torch.testing.assert_close(yn, x.detach() * 3.0)
    torch.testing.assert_close(g, torch.full_like(x, 3.0))
