"""Multi-output formulas get one gradient per output (torch's engine), and a formula's gradient
is cast to the dtype of the input it flows to (issue 26, section 1).

torch's contract for ``register_autograd`` / ``autograd.Function``: ``backward`` is called with
exactly one gradient per forward output, whichever outputs the loss used, whether ``backward()``
was seeded or not, and whichever outputs were marked non-differentiable: a zero tensor of the
output's shape and dtype for a tensor output that received no gradient (``None`` with
``ctx.set_materialize_grads(False)``), and ``None`` for an output that is ``None``.
"""

from __future__ import annotations

from typing import Optional

import pytest

import tensorplay as tp
from tensorplay import library
from tensorplay.autograd import Function

SEEN: dict = {}


# --- the repro: (loss, optional, grad_input) with the last marked non-differentiable ---

@library.custom_op("hag_mo::three", mutates_args=())
def three(x: tp.Tensor, flag: bool = False) -> tuple[tp.Tensor, Optional[tp.Tensor], tp.Tensor]:
    return (x * 2).sum(), (x * 3 if flag else None), x * 4


three.register_fake(lambda x, flag=False: (x.new_empty(()), tp.empty_like(x) if flag else None,
                                           tp.empty_like(x)))


def _three_setup(ctx, inputs, output):
    ctx.save_for_backward(output[2])
    ctx.mark_non_differentiable(output[2])


def _three_bwd(ctx, g1, g2, g3):
    SEEN["three"] = (g1, g2, g3)
    (saved,) = ctx.saved_tensors
    return g1 * 2 * tp.ones_like(saved), None


three.register_autograd(_three_bwd, setup_context=_three_setup)


def _check_three(flag, g1_value=1.0):
    g1, g2, g3 = SEEN.pop("three")
    assert g1.shape == () and g1.item() == g1_value
    if flag:
        assert g2 is not None and g2.shape == (3,) and g2.tolist() == [0.0, 0.0, 0.0]
    else:
        assert g2 is None, "a None output gets None as its gradient (torch)"
    assert g3.shape == (3,) and g3.dtype == tp.float32 and g3.tolist() == [0.0, 0.0, 0.0], \
        "a non-differentiable output gets a zero gradient (torch materializes it)"


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("how", ["unseeded", "seeded", "autograd.grad", "sum_of_two"])
def test_repro_one_gradient_per_output(flag, how):
    x = tp.randn(3, requires_grad=True)
    out = three(x, flag)
    assert out[2].grad_fn is None and not out[2].requires_grad
    if how == "unseeded":
        out[0].backward()
        got = x.grad
    elif how == "seeded":
        out[0].backward(tp.ones(()) * 2)
        got = x.grad / 2
    elif how == "autograd.grad":
        (got,) = tp.autograd.grad(out[0], x)
    else:   # two roots through the general walk: the loss and a second use of output 0
        (out[0] + out[0] * 0).backward()
        got = x.grad
    _check_three(flag, 2.0 if how == "seeded" else 1.0)
    assert got.tolist() == [2.0, 2.0, 2.0]


# --- two differentiable outputs: the loss uses one, the other gets zeros -----------------------

@library.custom_op("hag_mo::two_out", mutates_args=())
def two_out(x: tp.Tensor) -> tuple[tp.Tensor, tp.Tensor]:
    return (x * 2).sum(), x * 5


two_out.register_fake(lambda x: (x.new_empty(()), tp.empty_like(x)))


def _two_bwd(ctx, ga, gb):
    SEEN["two"] = (ga, gb)
    return ga * 2 + gb * 5


two_out.register_autograd(_two_bwd)


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("seeded", [False, True])
def test_two_outputs_loss_on_either(which, seeded):
    x = tp.ones(3, requires_grad=True)
    out = two_out(x)
    loss = out[which] if which == 0 else out[which].sum()
    if seeded:
        loss.backward(tp.ones(()))
    else:
        loss.backward()
    ga, gb = SEEN.pop("two")
    assert ga.shape == () and gb.shape == (3,)
    if which == 0:
        assert ga.item() == 1.0 and gb.tolist() == [0.0, 0.0, 0.0]
        assert x.grad.tolist() == [2.0, 2.0, 2.0]
    else:
        assert ga.item() == 0.0 and gb.tolist() == [1.0, 1.0, 1.0]
        assert x.grad.tolist() == [5.0, 5.0, 5.0]


def test_two_outputs_both_used():
    x = tp.ones(2, requires_grad=True)
    a, b = two_out(x)
    (a + b.sum()).backward()
    ga, gb = SEEN.pop("two")
    assert ga.item() == 1.0 and gb.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [7.0, 7.0]


# --- an integer output (never differentiable) and set_materialize_grads(False) ----------------

@library.custom_op("hag_mo::with_index", mutates_args=())
def with_index(x: tp.Tensor, w: tp.Tensor) -> tuple[tp.Tensor, tp.Tensor, tp.Tensor]:
    return (x * w).sum(), tp.zeros((2,), dtype=tp.int64), x * 1.0


with_index.register_fake(lambda x, w: (x.new_empty(()), x.new_empty((2,), dtype=tp.int64),
                                       tp.empty_like(x)))

MATERIALIZE = {"value": True}


def _index_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)
    ctx.set_materialize_grads(MATERIALIZE["value"])


def _index_bwd(ctx, g, gi, gz):
    SEEN["index"] = (g, gi, gz)
    x, w = ctx.saved_tensors
    return g * w, g * x


with_index.register_autograd(_index_bwd, setup_context=_index_setup)


@pytest.mark.parametrize("materialize", [True, False])
@pytest.mark.parametrize("seeded", [False, True])
def test_integer_and_unused_outputs(materialize, seeded):
    MATERIALIZE["value"] = materialize
    try:
        x = tp.tensor([1.0, 2.0], requires_grad=True)
        w = tp.tensor([3.0, 4.0], requires_grad=True)
        loss, idx, _ = with_index(x, w)
        assert not idx.requires_grad and idx.dtype == tp.int64
        loss.backward(tp.ones(())) if seeded else loss.backward()
        g, gi, gz = SEEN.pop("index")
        assert g.item() == 1.0
        if materialize:
            assert gi.dtype == tp.int64 and gi.tolist() == [0, 0], \
                "torch materializes zeros with the output's own dtype"
            assert gz.dtype == tp.float32 and gz.tolist() == [0.0, 0.0]
        else:
            assert gi is None and gz is None, "set_materialize_grads(False): None, as torch"
        assert x.grad.tolist() == [3.0, 4.0] and w.grad.tolist() == [1.0, 2.0]
    finally:
        MATERIALIZE["value"] = True


# --- autograd.Function: the same rules ---------------------------------------------------------

class Split(Function):
    materialize = True

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(Split.materialize)
        stats = x * 0.5
        ctx.mark_non_differentiable(stats)
        return (x * 2).sum(), None, stats, x.to(tp.int64)

    @staticmethod
    def backward(ctx, g0, g1, g2, g3):
        SEEN["split"] = (g0, g1, g2, g3)
        return g0 * tp.ones((3,)) * 2


@pytest.mark.parametrize("materialize", [True, False])
@pytest.mark.parametrize("seeded", [False, True])
def test_function_one_gradient_per_output(materialize, seeded):
    Split.materialize = materialize
    try:
        x = tp.ones(3, requires_grad=True)
        loss, none, stats, ints = Split.apply(x)
        assert none is None and not stats.requires_grad and not ints.requires_grad
        loss.backward(tp.ones(())) if seeded else loss.backward()
        g0, g1, g2, g3 = SEEN.pop("split")
        assert g0.item() == 1.0 and g1 is None
        if materialize:
            assert g2.tolist() == [0.0] * 3 and g3.dtype == tp.int64 and g3.tolist() == [0] * 3
        else:
            assert g2 is None and g3 is None
        assert x.grad.tolist() == [2.0, 2.0, 2.0]
    finally:
        Split.materialize = True


# --- a formula's gradient takes its input's dtype ----------------------------------------------

@library.custom_op("hag_mo::scale_f32_grad", mutates_args=())
def scale_f32_grad(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
    return x * w


scale_f32_grad.register_fake(lambda x, w: tp.empty_like(x))


def _f32_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _f32_bwd(ctx, g):
    x, w = ctx.saved_tensors
    # a norm kernel's habit: accumulate the weight's gradient in float32
    return (g * w).float(), (g.float() * x.float())


scale_f32_grad.register_autograd(_f32_bwd, setup_context=_f32_setup)


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16])
def test_formula_gradient_cast_to_input_dtype(dtype):
    x = tp.tensor([1.0, 2.0], dtype=dtype, requires_grad=True)
    w = tp.tensor([3.0, 4.0], dtype=dtype, requires_grad=True)
    scale_f32_grad(x, w).sum().backward()
    assert x.grad.dtype == dtype and w.grad.dtype == dtype
    assert x.grad.tolist() == [3.0, 4.0] and w.grad.tolist() == [1.0, 2.0]
    # through a non-leaf: the gradient reaching h's formula is cast to h's dtype first
    x.grad = w.grad = None
    h = x * 1
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            seen["dtype"] = g.dtype
            return g

    Probe.apply(scale_f32_grad(h, w)).sum().backward()
    assert x.grad.dtype == dtype and w.grad.dtype == dtype
    (gx,) = tp.autograd.grad(scale_f32_grad(h, w).sum(), h)
    assert gx.dtype == dtype, "autograd.grad returns the input's dtype"


def test_function_gradient_cast_and_single_leaf_fast_path():
    class ToF32Grad(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g.float() * 2

    x = tp.tensor([1.0, 2.0], dtype=tp.float16, requires_grad=True)
    ToF32Grad.apply(x).sum().backward()
    assert x.grad.dtype == tp.float16 and x.grad.tolist() == [2.0, 2.0]
    y = ToF32Grad.apply(x).sum()
    y.backward()   # accumulates into an existing float16 .grad
    assert x.grad.dtype == tp.float16 and x.grad.tolist() == [4.0, 4.0]
    one = tp.tensor([1.5], dtype=tp.float16, requires_grad=True)
    ToF32Grad.apply(one).backward()   # one node, one leaf: the engine's one-root fast path
    assert one.grad.dtype == tp.float16 and one.grad.tolist() == [2.0]


# --- Tensor[] outputs: a sole list's elements, a list beside other outputs ---------------------

@library.custom_op("hag_mo::halves", mutates_args=())
def halves(x: tp.Tensor) -> list[tp.Tensor]:
    n = x.shape[0] // 2
    return [x[:n] * 2, x[n:] * 3]


def _halves_bwd(ctx, *grads):
    SEEN["halves"] = [tuple(g.shape) for g in grads]
    return tp.cat([grads[0] * 2, grads[1] * 3])


halves.register_autograd(_halves_bwd)


def test_sole_list_output_gets_one_gradient_per_element_zeros_where_unused():
    x = tp.randn(4, requires_grad=True)
    SEEN.clear()
    halves(x)[1].sum().backward()
    assert SEEN["halves"] == [(2,), (2,)]
    assert x.grad.tolist() == [0.0, 0.0, 3.0, 3.0]


@library.custom_op("hag_mo::list_and_tensor", mutates_args=())
def list_and_tensor(x: tp.Tensor) -> tuple[list[tp.Tensor], tp.Tensor]:
    return [x * 2, x * 3], x * 4


def _list_and_tensor_setup(ctx, inputs, output):
    SEEN["lt_output"] = (type(output[0]).__name__, len(output[0]))


def _list_and_tensor_bwd(ctx, glist, g):
    SEEN["lt"] = (type(glist).__name__, len(glist))
    return glist[0] * 2 + glist[1] * 3 + g * 4


list_and_tensor.register_autograd(_list_and_tensor_bwd, setup_context=_list_and_tensor_setup)


@pytest.mark.parametrize("use", ["first", "second", "tensor", "all"])
def test_list_beside_a_tensor_output_is_differentiable_and_gets_a_gradient_list(use):
    # the list's elements used to get no history (gradients through them silently missing)
    x = tp.randn(3, requires_grad=True)
    SEEN.clear()
    lst, t = list_and_tensor(x)
    assert all(e.requires_grad for e in lst) and t.requires_grad
    assert SEEN["lt_output"] == ("list", 2)
    loss = {"first": lst[0].sum(), "second": lst[1].sum(), "tensor": t.sum(),
            "all": lst[0].sum() + lst[1].sum() + t.sum()}[use]
    loss.backward()
    assert SEEN["lt"] == ("list", 2)
    want = {"first": 2.0, "second": 3.0, "tensor": 4.0, "all": 9.0}[use]
    assert x.grad.tolist() == [want] * 3
    assert library.opcheck(list_and_tensor, (tp.randn(3, requires_grad=True),)) == {}
