"""``tensorplay.autograd.Function`` beside the documented examples: the other shapes of the
features ``tests/test_torch_autograd_function_docs.py`` found broken (each checked against torch
2.13 running the same code with ``tensorplay`` spelled ``torch``, unless a comment says where
tensorplay differs on purpose).

* ``ctx.needs_input_grad`` is set before a combined ``forward`` runs;
* ``setup_context`` gets ``forward``'s arguments with keywords and defaults bound;
* ``mark_dirty``: the version bump (writes the counter did not see), the written input saved for
  backward, a dirty input not returned, a dirty view (its base's history rebased);
* a user's backward runs even when no gradient reached it (zeros, or None without
  materialized gradients), in ``backward`` and in ``autograd.grad``; built-in formulas do not;
* ``once_differentiable`` with several outputs and outside ``create_graph``;
* ``Tensor.index_add`` / ``index_add_`` (the ``mark_non_differentiable`` example's op).
"""

from __future__ import annotations

import pytest

import tensorplay
from tensorplay.autograd import Function
from tensorplay.autograd.function import once_differentiable


# -- needs_input_grad and setup_context's inputs ------------------------------------------------

def test_needs_input_grad_is_set_before_a_combined_forward():
    seen = []

    class F(Function):
        @staticmethod
        def forward(ctx, x, y, k):
            seen.append(tuple(ctx.needs_input_grad))
            if ctx.needs_input_grad[0]:        # the pattern: save only what backward will use
                ctx.save_for_backward(y)
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y * 2.0, None, None

    x = tensorplay.ones(2, requires_grad=True)
    F.apply(x, tensorplay.full((2,), 3.0), 2.0).sum().backward()
    assert seen == [(True, False, False)]
    assert x.grad.tolist() == [6.0, 6.0]


class _Scale(Function):
    @staticmethod
    def forward(x, scale=2.0):
        return x * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale = inputs
        ctx.scale = scale

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None


class _ScaleShift(_Scale):
    @staticmethod
    def forward(x, scale=2.0, *, shift=0.0):
        return x * scale + shift


def test_setup_context_gets_defaults_bound():
    x = tensorplay.ones(2, requires_grad=True)
    y = _Scale.apply(x)
    assert y.tolist() == [2.0, 2.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_setup_context_gets_keywords_bound():
    x = tensorplay.ones(2, requires_grad=True)
    y = _Scale.apply(x, scale=3.0)
    assert y.tolist() == [3.0, 3.0]
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_setup_context_forward_keyword_only_argument_is_passed():
    # torch 2.13 raises TypeError here (its bind_default_args keeps the positional values only,
    # then passes the keywords again); tensorplay hands keyword-only arguments to forward as
    # keywords and setup_context's inputs hold the positional ones
    x = tensorplay.ones(2, requires_grad=True)
    y = _ScaleShift.apply(x, shift=1.0)
    assert y.tolist() == [3.0, 3.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_combined_forward_takes_keywords():
    class K(Function):
        @staticmethod
        def forward(ctx, x, scale=2.0):
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale, None

    x = tensorplay.ones(2, requires_grad=True)
    K.apply(x, scale=3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


# -- mark_dirty ---------------------------------------------------------------------------------

class _Double(Function):
    """Doubles its input in place (marked dirty) and returns it."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


class _NumpyAddOne(Function):
    """The FunctionCtx.mark_dirty docstring's Inplace: a write the version counter cannot see."""

    @staticmethod
    def forward(ctx, x):
        x_npy = x.numpy()
        x_npy += 1
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_mark_dirty_bumps_the_version_without_grad():
    x = tensorplay.ones(3)
    v0 = x._version
    y = _NumpyAddOne.apply(x)
    assert y is x and x.tolist() == [2.0, 2.0, 2.0]
    assert x._version > v0


def test_mark_dirty_history_is_rebased_on_the_function():
    x = tensorplay.ones(3, requires_grad=True)
    a = x.clone()
    y = _Double.apply(a)
    assert y is a and "_DoubleBackward" in repr(a.grad_fn)
    (a * tensorplay.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_mark_dirty_saved_after_the_write_stays_valid():
    class AddOneSave(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)       # the written input, saved after the write
            return x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x

    w = tensorplay.ones(2, requires_grad=True)
    a = w.clone()
    AddOneSave.apply(a).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


def test_mark_dirty_input_must_be_returned():
    class NotReturned(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = tensorplay.ones(3, requires_grad=True).clone()
    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not "
                                           "returned as output"):
        NotReturned.apply(a)


def test_mark_dirty_leaf_that_requires_grad_is_refused():
    x = tensorplay.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        _Double.apply(x)


def test_mark_dirty_view_rebases_its_base():
    x = tensorplay.ones(3, requires_grad=True)
    base = x.clone()
    v = base[0:2]
    r = _Double.apply(v)
    assert r is v and base.tolist() == [2.0, 2.0, 1.0]
    base.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 1.0]     # before: [1, 1, 1] (the base missed the write)


def test_mark_dirty_view_gradient_through_the_view():
    x = tensorplay.ones(3, requires_grad=True)
    base = x.clone()
    v = base[1:3]
    r = _Double.apply(v)
    (r * tensorplay.tensor([1.0, 10.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 20.0]


def test_mark_dirty_view_as_second_argument():
    class AddInto(Function):
        """``dst += 3 * src`` in place; ``dst`` (second) marked dirty."""

        @staticmethod
        def forward(ctx, src, dst):
            dst.add_(src * 3)
            ctx.mark_dirty(dst)
            return dst

        @staticmethod
        def backward(ctx, g):
            return g * 3, g

    s = tensorplay.ones(2, requires_grad=True)
    x = tensorplay.ones(4, requires_grad=True)
    base = x.clone()
    AddInto.apply(s, base[1:3])
    assert base.tolist() == [1.0, 4.0, 4.0, 1.0]
    (base * tensorplay.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    # the derivative of sum(w * base) (the write adds 3 * s to base[1:3]): w for x, 3 * w[1:3]
    # for s. torch 2.13 gives x.grad [1, 8, 12, 4] and s.grad None here: its CopySlices takes
    # the Function's first gradient as the view's (the dirty view must be the first argument)
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert s.grad.tolist() == [6.0, 9.0]


class _AddIntoFirst(Function):
    """``dst += 3 * src`` in place, ``dst`` first and marked dirty."""

    @staticmethod
    def forward(ctx, dst, src):
        dst.add_(src * 3)
        ctx.mark_dirty(dst)
        return dst

    @staticmethod
    def backward(ctx, g):
        return g, g * 3


def test_mark_dirty_buffer_without_grad_gets_history():
    s = tensorplay.ones(2, requires_grad=True)
    buf = tensorplay.zeros(2)
    r = _AddIntoFirst.apply(buf, s)
    assert r is buf and buf.requires_grad and buf.grad_fn is not None
    (buf * tensorplay.tensor([1.0, 2.0])).sum().backward()
    assert s.grad.tolist() == [3.0, 6.0]


def test_mark_dirty_view_of_a_base_without_grad():
    s = tensorplay.ones(2, requires_grad=True)
    base = tensorplay.zeros(4)
    _AddIntoFirst.apply(base[1:3], s)
    assert base.requires_grad and "CopySlices" in repr(base.grad_fn)
    (base * tensorplay.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert s.grad.tolist() == [6.0, 9.0]


def test_mark_dirty_view_other_views_see_the_write():
    x = tensorplay.ones(4, requires_grad=True)
    base = x.clone()
    v, w = base[0:2], base[1:3]
    _AddIntoFirst.apply(v, tensorplay.ones(2))
    (w * tensorplay.tensor([5.0, 7.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 5.0, 7.0, 0.0]


def test_mark_dirty_view_with_two_outputs_is_refused():
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 6

    base = tensorplay.ones(3, requires_grad=True).clone()
    with pytest.raises(RuntimeError, match="cannot return more than one Tensor"):
        Two.apply(base[0:2])


# -- a user's backward runs when no gradient reached it -----------------------------------------

class _Stop(Function):
    """Its backward returns None: the function before it gets no gradient."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return None


class _Twice(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        _Twice.calls.append((g1.tolist(), g2.tolist()))
        return g1 * 2 + g2 * 3


def test_user_backward_runs_with_zeros_when_no_gradient_reached_it():
    _Twice.calls = []
    x = tensorplay.ones(2, requires_grad=True)
    a, b = _Twice.apply(x)
    (_Stop.apply(a) + _Stop.apply(b)).sum().backward()
    assert _Twice.calls == [([0.0, 0.0], [0.0, 0.0])]
    assert x.grad.tolist() == [0.0, 0.0]


def test_user_backward_runs_with_zeros_in_autograd_grad():
    _Twice.calls = []
    x = tensorplay.ones(2, requires_grad=True)
    a, _ = _Twice.apply(x)
    gx, = tensorplay.autograd.grad(_Stop.apply(a).sum(), x)
    assert gx.tolist() == [0.0, 0.0]
    assert _Twice.calls == [([0.0, 0.0], [0.0, 0.0])]


def test_user_backward_gets_none_without_materialized_grads():
    got = []

    class M(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            got.append((g1, g2))
            return None

    x = tensorplay.ones(2, requires_grad=True)
    a, b = M.apply(x)
    (_Stop.apply(a) + _Stop.apply(b)).sum().backward()
    assert got == [(None, None)]
    assert x.grad is None


def test_builtin_formula_gets_no_call_when_no_gradient_reached_it():
    # torch: a built-in formula turns undefined gradients into undefined ones; the leaf's
    # .grad stays None (not zeros)
    x = tensorplay.ones(2, requires_grad=True)
    _Stop.apply(x * 2).sum().backward()
    assert x.grad is None


def test_custom_op_formula_runs_with_zeros_when_no_gradient_reached_it():
    from tensorplay.library import custom_op
    calls = []

    @custom_op("agdocs_nb::scale3", mutates_args=())
    def scale3(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 3

    def backward(ctx, g):
        calls.append(g.tolist())
        return g * 3

    scale3.register_autograd(backward)
    try:
        x = tensorplay.ones(2, requires_grad=True)
        _Stop.apply(scale3(x)).sum().backward()
        assert calls == [[0.0, 0.0]]
        assert x.grad.tolist() == [0.0, 0.0]
    finally:
        tensorplay.testing.drop_ops("agdocs_nb")


# -- once_differentiable ------------------------------------------------------------------------

class _TwoOut(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x


def test_once_differentiable_first_backward_unchanged():
    x = tensorplay.tensor([1.0, 2.0], requires_grad=True)
    y = tensorplay.tensor([3.0, 4.0], requires_grad=True)
    _TwoOut.apply(x, y).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0] and y.grad.tolist() == [1.0, 2.0]
    assert tensorplay.autograd.gradcheck(_TwoOut.apply, (x.double().detach().requires_grad_(),
                                                         y.double().detach().requires_grad_()))


def test_once_differentiable_double_backward_raises_for_every_output():
    x = tensorplay.tensor([1.0, 2.0], requires_grad=True)
    y = tensorplay.tensor([3.0, 4.0], requires_grad=True)
    v = tensorplay.ones(2, requires_grad=True)
    gx, gy = tensorplay.autograd.grad(_TwoOut.apply(x, y), (x, y), v, create_graph=True)
    assert gx.tolist() == [3.0, 4.0] and gx.requires_grad and gy.requires_grad
    for g in (gx, gy):
        with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
            g.sum().backward(retain_graph=True)


def test_once_differentiable_output_has_no_graph_without_create_graph():
    x = tensorplay.tensor([1.0, 2.0], requires_grad=True)
    y = tensorplay.tensor([3.0, 4.0], requires_grad=True)
    v = tensorplay.ones(2, requires_grad=True)
    gx, _ = tensorplay.autograd.grad(_TwoOut.apply(x, y), (x, y), v)
    assert not gx.requires_grad


# -- Tensor.index_add / index_add_ ---------------------------------------------------------------

def test_index_add_dim0_repeated_indices():
    x = tensorplay.zeros(3, 2)
    src = tensorplay.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    idx = tensorplay.tensor([0, 2, 0])
    assert x.index_add(0, idx, src).tolist() == [[6.0, 8.0], [0.0, 0.0], [3.0, 4.0]]
    assert x.tolist() == [[0.0, 0.0]] * 3                      # out of place
    r = x.index_add_(0, idx, src, alpha=2)
    assert r is x and x.tolist() == [[12.0, 16.0], [0.0, 0.0], [6.0, 8.0]]


def test_index_add_dim1():
    x = tensorplay.ones(2, 3)
    x.index_add_(1, tensorplay.tensor([2]), tensorplay.tensor([[5.0], [7.0]]))
    assert x.tolist() == [[1.0, 1.0, 6.0], [1.0, 1.0, 8.0]]


def test_index_add_inplace_gradients():
    w = tensorplay.ones(3, requires_grad=True)
    src = tensorplay.tensor([1.0, 2.0], requires_grad=True)
    a = w.clone()
    a.index_add_(0, tensorplay.tensor([2, 0]), src, alpha=3)
    (a * tensorplay.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert w.grad.tolist() == [1.0, 10.0, 100.0]
    assert src.grad.tolist() == [300.0, 3.0]


def test_index_add_inplace_on_a_leaf_that_requires_grad_is_refused():
    w = tensorplay.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.index_add_(0, tensorplay.tensor([0]), tensorplay.ones(1))


# -- vjp (the page's "backward (or vjp)") and save_for_backward's argument check ----------------

def test_vjp_instead_of_backward():
    class V(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 2

    x = tensorplay.ones(2, requires_grad=True)
    V.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_vjp_and_backward_both_refused():
    class Both(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 2

    x = tensorplay.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp'"):
        Both.apply(x).sum().backward()


def test_neither_vjp_nor_backward():
    class NoBw(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = tensorplay.ones(2, requires_grad=True)
    y = NoBw.apply(x)
    with pytest.raises(NotImplementedError, match="implement either the backward or vjp"):
        y.sum().backward()


@pytest.mark.parametrize("saved", [(3,), ("x", 3), (1, 2, 3)], ids=["one", "two", "three"])
def test_save_for_backward_of_a_non_tensor_is_a_type_error(saved):
    class S(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(*[x if s == "x" else s for s in saved])
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but "
                                        "argument [0-9] is of type int"):
        S.apply(tensorplay.ones(2, requires_grad=True))


# -- an input returned as-is after ctx.mark_non_differentiable (fresh56 #05) -------------------

class _PassNonDiff(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.mark_non_differentiable(y)
        return x * 2, y

    @staticmethod
    def backward(ctx, g, gy):
        return g * 2, None


def test_input_returned_as_is_and_marked_non_differentiable_is_a_detached_alias():
    # torch 2.13: requires_grad=False, grad_fn None, the same values and memory (a detached
    # alias, not the input itself); the input keeps its own state
    a = tensorplay.ones(2, requires_grad=True)
    b = tensorplay.ones(2, requires_grad=True)
    o, yy = _PassNonDiff.apply(a, b)
    assert yy is not b
    assert not yy.requires_grad and yy.grad_fn is None
    assert b.requires_grad and b.is_leaf
    yy_np = yy.numpy()        # allowed: yy does not require grad
    b.detach().add_(1)
    assert yy_np.tolist() == [2.0, 2.0]       # shares b's memory
    (o.sum() + (yy * 3).sum()).backward()
    assert a.grad.tolist() == [2.0, 2.0] and b.grad is None


def test_input_returned_as_is_unmarked_keeps_the_functions_history():
    class Pass(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    a = tensorplay.ones(2, requires_grad=True)
    y = Pass.apply(a)
    assert y is not a and y.requires_grad and y.grad_fn is not None
    y.sum().backward()
    assert a.grad.tolist() == [5.0, 5.0]


# -- in-place writes to a view returned by a Function (fresh56 #11d) ----------------------------

_CUSTOM_VIEW_MSG = ("is a view and is being modified inplace. This view was created inside a "
                    "custom Function (or because an input was returned as-is) and the autograd "
                    "logic to handle view+inplace would override the custom backward associated "
                    "with the custom Function, leading to incorrect gradients. This behavior is "
                    "forbidden. You can fix this by cloning the output of the custom Function.")


class _ViewRet(Function):
    @staticmethod
    def forward(ctx, x):
        return x.view(-1)

    @staticmethod
    def backward(ctx, g):
        return g.view(2, 2) * 3


class _Same(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_in_place_write_to_a_view_returned_by_forward_is_refused():
    # torch 2.13: RuntimeError (CreationMeta::IN_CUSTOM_FUNCTION); the write's view+inplace
    # history would replace the Function's backward (here: gradient 2 instead of 3 * 2)
    a = tensorplay.ones(2, 2, requires_grad=True)
    y = _ViewRet.apply(a.clone())
    with pytest.raises(RuntimeError, match="Output 0 of _ViewRet " + _CUSTOM_VIEW_MSG[:40]):
        y.mul_(2)
    y = _Same.apply(a.clone())      # an input returned as-is: its alias, the same rule
    with pytest.raises(RuntimeError, match="Output 0 of _Same is a view and is being modified"):
        y.mul_(2)
    w = _ViewRet.apply(a.clone())[0:2]     # a view of such a view
    with pytest.raises(RuntimeError, match="This view was created inside a custom Function"):
        w.mul_(2)


def test_view_returned_by_forward_used_after_its_base_was_written_is_refused():
    a = tensorplay.ones(2, 2, requires_grad=True)
    b = a.clone()
    y = _ViewRet.apply(b)
    b.mul_(2)
    with pytest.raises(RuntimeError, match="Output 0 of _ViewRet is a view and its base or "
                                           "another view of its base has been modified inplace"):
        y.sum().backward()


def test_view_returned_by_forward_without_writes_or_under_no_grad():
    a = tensorplay.ones(2, 2, requires_grad=True)
    y = _ViewRet.apply(a.clone())
    y.sum().backward()
    assert a.grad.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    with tensorplay.no_grad():
        y = _ViewRet.apply(a.clone())
        y.mul_(2)                     # nothing records: allowed, as in torch
    assert y.tolist() == [2.0] * 4
    y = _ViewRet.apply(a.clone()).clone()
    y.mul_(2)                         # the fix torch's message suggests
    assert y.requires_grad


def test_a_function_returning_its_input_under_no_grad_gives_a_detached_alias():
    x = tensorplay.ones(2, requires_grad=True)
    with tensorplay.no_grad():
        o = _Same.apply(x)
    # torch: a new alias without grad; a later backward through it raises (a second fresh
    # user, session 56)
    assert o is not x and not o.requires_grad and o.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        (o * 3).sum().backward()
    assert x.grad is None
    o.add_(1)                                    # an alias: it shares x's memory
    assert x.tolist() == [2.0, 2.0]
