"""Custom ops that write their arguments (``mutates_args``, ``triton_op``, ``Tensor(a!)`` schemas)
under autograd.

What torch 2.13 does, measured with ``torch.library.custom_op``/``triton_op``/``Library.define``
(kernels writing through the array, as real kernels do), and what these tests hold TensorPlay to:

* a mutated argument that is a leaf requiring grad, or a view of one, with grad mode on: torch's
  ``custom_op`` writes it silently (its kernel is opaque to autograd); a torch op whose kernel
  autograd sees (a built-in in-place op, a ``CompositeImplicitAutograd`` kernel) refuses with
  ``RuntimeError: a leaf Variable that requires grad is being used in an in-place operation``.
  A TensorPlay custom op without a formula runs its kernel as a CompositeImplicitAutograd op
  (SPEC §2), so before this rule it refused or wrote depending on how the kernel wrote
  (``out.copy_``: refused, naming ``tp::copy_``; ``out.native[...] =`` or a Triton store: wrote).
  It now writes as torch's ``custom_op`` does, whatever the kernel does: when a written argument
  is such a leaf (or a view of one) the kernel runs with grad mode off, the leaf stays a leaf, its
  version is bumped once per call, and a copy of it saved for backward fails backward.
* a mutated non-leaf that requires grad: no error at the call, and its version counter is bumped
  once per call (torch's ``ADInplaceOrView`` kernel does the same), so a tensor saved for backward
  and then written raises at backward with torch's words ("modified by an inplace operation"),
  with grad mode on or off. torch keeps the tensor's old history, so the gradient through it is
  silently wrong; TensorPlay (like its torch bridge) rebases the history of a tensor the kernel
  wrote outside the graph onto a node whose backward raises naming the op and the argument. A
  kernel that writes with tensorplay ops records the write's own (exact) history.
* a mutated argument that does not require grad while other inputs do: written, left without
  history; ``register_autograd`` on a mutating op is refused with torch's ``RuntimeError``.
"""

from __future__ import annotations

import itertools

import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.testing import drop_ops

_count = itertools.count()

KINDS = ("custom_op_native", "custom_op_ops", "triton_op_native", "library_define")
NATIVE = ("custom_op_native", "triton_op_native", "library_define")   # kernels writing the array


@pytest.fixture
def ns(cpu):
    prefix = f"mutag{next(_count)}"
    yield prefix
    drop_ops(prefix)


def _write_native(x, out):
    out.native[...] = x.native * 2


def _make(kind, ns):
    """``op(x, out)``: writes ``2 * x`` into ``out`` (declared mutated); returns nothing."""
    qualname = f"{ns}::twice_into"
    if kind == "custom_op_native":
        @lib.custom_op(qualname, mutates_args=("out",))
        def op(x: tp.Tensor, out: tp.Tensor) -> None:
            _write_native(x, out)
    elif kind == "custom_op_ops":
        @lib.custom_op(qualname, mutates_args=("out",))
        def op(x: tp.Tensor, out: tp.Tensor) -> None:
            out.copy_(x * 2)
    elif kind == "triton_op_native":
        @lib.triton_op(qualname, mutates_args=("out",))
        def op(x: tp.Tensor, out: tp.Tensor) -> None:
            _write_native(x, out)
    else:
        lib.define(f"{qualname}(Tensor x, Tensor(a!) out) -> ()")
        lib.impl(qualname, "cpu", _write_native)
        op = tp.ops.__getattr__(ns).twice_into
    return qualname, op


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


# -- 1. a leaf that requires grad ---------------------------------------------------------------

def test_leaf_requiring_grad_is_written_as_torch_custom_op_writes_it(ns, kind):
    _, op = _make(kind, ns)
    for x_grad in (False, True):
        out = tp.zeros(4, requires_grad=True)
        r = op(tp.ones(4, requires_grad=x_grad), out)
        assert r is None and out.tolist() == [2.0] * 4
        assert out.is_leaf and out.requires_grad and out.grad_fn is None
        # torch: one bump per call (ADInplaceOrView), however the kernel writes
        # (tests/test_custom_op_version.py)
        assert out._version == 1
        # still a leaf that works: its gradient accumulates as before
        (out * 3).sum().backward()
        assert out.grad.tolist() == [3.0] * 4


def test_leaf_written_after_being_saved_fails_backward(ns, kind):
    _, op = _make(kind, ns)
    w = tp.zeros(4, requires_grad=True)
    y = w.sin()                       # saves w
    op(tp.ones(4), w)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_leaf_requiring_grad_is_written_under_no_grad(ns, kind):
    _, op = _make(kind, ns)
    out = tp.zeros(4, requires_grad=True)
    with tp.no_grad():
        op(tp.ones(4), out)
    assert out.tolist() == [2.0] * 4
    assert out.is_leaf and out.requires_grad and out.grad_fn is None
    assert out._version == 1   # torch: one bump per call (ADInplaceOrView)


def test_example_pack_triton_op_writes_a_leaf_that_requires_grad(cpu):
    """The reported case: the bundled Triton op stores into ``out`` inside its kernel (a strided
    ``out`` through a scratch tensor and ``out.copy_``): written as torch writes it, in either
    layout, the leaf left a leaf."""
    from tensorplay_example_ops import triton_ops
    if not triton_ops.AVAILABLE:
        pytest.skip(triton_ops.UNAVAILABLE_REASON)
    op = tp.ops.example.fused_add_mul_relu_out
    x, y = tp.ones(4), tp.ones(4)
    out = tp.zeros(4, requires_grad=True)
    op(x, y, 2.0, out)
    assert out.tolist() == [4.0] * 4 and out.is_leaf and out._version == 1
    base = tp.zeros(2, 4, requires_grad=True)
    op(tp.ones(4, 2), tp.ones(4, 2), 2.0, base.t())
    assert base.tolist() == [[4.0] * 4] * 2 and base.is_leaf and base.grad_fn is None


# -- 2. a view of such a leaf -------------------------------------------------------------------

def test_view_of_a_leaf_requiring_grad_is_written(ns, kind):
    _, op = _make(kind, ns)
    base = tp.zeros(4, requires_grad=True)
    op(tp.ones(2, requires_grad=True), base[:2])
    assert base.tolist() == [2.0, 2.0, 0.0, 0.0] and base.is_leaf and base.grad_fn is None
    assert base._version == 1
    with tp.no_grad():
        op(tp.ones(2), base[2:])
    assert base.tolist() == [2.0] * 4 and base.is_leaf and base.grad_fn is None


# -- 3. a non-leaf that requires grad -----------------------------------------------------------

@pytest.mark.parametrize("native_kind", NATIVE)
def test_non_leaf_written_outside_the_graph_raises_at_backward(ns, native_kind):
    """No error at the call, one version bump (as torch); the kernel wrote the array, so the old
    history no longer describes the value: backward through it raises naming the op and the
    argument (torch keeps the old history and the gradient is silently wrong)."""
    qualname, op = _make(native_kind, ns)
    msg = rf"^{qualname}: trying to backprop through argument 'out', which the op wrote"
    for x_grad in (False, True):
        a = tp.zeros(4, requires_grad=True)
        out = a * 1
        node = out.grad_fn
        op(tp.ones(4, requires_grad=x_grad), out)
        assert out.tolist() == [2.0] * 4 and out._version == 1 and out.grad_fn is not node
        with pytest.raises(RuntimeError, match=msg):
            out.sum().backward()
    # through a view: the base's history is rebased, the view's follows it
    a = tp.zeros(4, requires_grad=True)
    out = a * 1
    view = out[:2]
    op(tp.ones(2), view)
    assert out.tolist() == [2.0, 2.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match=msg):
        out.sum().backward()
    with pytest.raises(RuntimeError, match=msg):
        view.sum().backward()
    # without grad mode the write is not recorded (as any in-place op under no_grad)
    a = tp.zeros(4, requires_grad=True)
    out = a * 1
    with tp.no_grad():
        op(tp.ones(4), out)
    out.sum().backward()
    assert a.grad.tolist() == [1.0] * 4


def test_non_leaf_written_with_tensorplay_ops_gets_the_gradient_of_the_write(ns):
    """A kernel that writes with tensorplay ops (``out.copy_``) is differentiated through its
    body (CompositeImplicitAutograd): the write's history is the copy's, gradients are exact."""
    _, op = _make("custom_op_ops", ns)
    a = tp.zeros(4, requires_grad=True)
    x = tp.ones(4, requires_grad=True)
    out = a * 1
    op(x, out)
    out.sum().backward()
    assert a.grad.tolist() == [0.0] * 4 and x.grad.tolist() == [2.0] * 4
    a = tp.zeros(4, requires_grad=True)
    x = tp.ones(2, requires_grad=True)
    out = a * 1
    op(x, out[:2])
    out.sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 1.0, 1.0] and x.grad.tolist() == [2.0, 2.0]


def test_saved_tensor_modified_by_the_op_raises_at_backward(ns, kind):
    """``x.sin()`` saves ``x``; writing ``x`` (directly, through a view, with grad mode on or
    off) bumps its version, so the backward of ``sin`` raises as torch's does."""
    _, op = _make(kind, ns)
    cases = [lambda x: op(tp.ones(4), x), lambda x: op(tp.ones(2), x[:2])]

    def under_no_grad(x):
        with tp.no_grad():
            op(tp.ones(4), x)
    cases.append(under_no_grad)
    for write in cases:
        a = tp.ones(4, requires_grad=True)
        x = a * 1
        y = x.sin()
        write(x)
        with pytest.raises(RuntimeError, match="one of the variables needed for gradient "
                                               "computation has been modified by an inplace "
                                               "operation"):
            y.sum().backward()


# -- 4. the mutated argument does not require grad, another input does --------------------------

@pytest.mark.parametrize("native_kind", NATIVE)
def test_mutated_arg_without_grad_is_written_and_left_without_history(ns, native_kind):
    _, op = _make(native_kind, ns)
    x = tp.ones(4, requires_grad=True)
    out = tp.zeros(4)
    op(x, out)
    assert out.tolist() == [2.0] * 4 and out._version == 1
    assert not out.requires_grad and out.grad_fn is None


def test_register_autograd_on_a_mutating_op_raises_runtime_error(ns, kind):
    """torch: ``RuntimeError: Cannot register autograd formula for non-functional operator``
    (also a ``ValueError``, the type earlier releases raised)."""
    qualname, op = _make(kind, ns)
    for register in (lambda: lib.register_autograd(qualname, lambda ctx, g: (g, None)),
                     lambda: op.register_autograd(lambda ctx, g: (g, None))
                     if hasattr(op, "register_autograd") else lib.register_autograd(
                         qualname, lambda ctx, g: (g, None))):
        with pytest.raises(RuntimeError, match=r"mutates its inputs \(out\) cannot have an "
                                               r"autograd formula.*functional"):
            register()
        with pytest.raises(ValueError):
            register()


# -- 5. optional and list arguments, keyword-only, "unknown" ------------------------------------

def test_optional_list_and_keyword_only_mutated_args(ns):
    lib.define(f"{ns}::maybe(Tensor x, Tensor(a!)? out) -> ()")
    lib.impl(f"{ns}::maybe", "cpu", lambda x, out: None if out is None else _write_native(x, out))
    lib.define(f"{ns}::many(Tensor x, Tensor(a!)[] outs) -> ()")

    def many(x, outs):
        for o in outs:
            _write_native(x, o)
    lib.impl(f"{ns}::many", "cpu", many)

    @lib.custom_op(f"{ns}::kw", mutates_args=("out",))
    def kw(x: tp.Tensor, *, out: tp.Tensor) -> None:
        _write_native(x, out)

    ops = tp.ops.__getattr__(ns)
    x = tp.ones(4, requires_grad=True)
    leaf = tp.zeros(4, requires_grad=True)
    ops.maybe(x, None)
    ops.maybe(x, leaf)
    assert leaf.tolist() == [2.0] * 4 and leaf.is_leaf and leaf._version == 1
    first = tp.zeros(4)
    ops.many(x, [first, leaf])
    assert first.tolist() == [2.0] * 4 and leaf._version == 2 and leaf.is_leaf
    kw(x * 2, out=leaf)
    assert leaf.tolist() == [4.0] * 4 and leaf._version == 3 and leaf.grad_fn is None
    # a non-leaf element written outside the graph: its history is rebased (raises at backward)
    plain, nonleaf = tp.zeros(4), leaf * 1
    ops.many(x, [plain, nonleaf])
    assert plain.tolist() == [2.0] * 4 and plain._version == 1
    with pytest.raises(RuntimeError, match=rf"^{ns}::many: trying to backprop through argument "
                                           r"'outs'"):
        nonleaf.sum().backward()


def test_unknown_mutates_every_tensor_argument(ns):
    """``mutates_args="unknown"`` declares every tensor parameter written: a leaf that requires
    grad passed in any of them is written as torch writes it (one version bump, still a leaf)."""
    @lib.custom_op(f"{ns}::opaque", mutates_args="unknown")
    def opaque(x: tp.Tensor, y: tp.Tensor) -> None:
        pass

    w = tp.ones(2, requires_grad=True)
    opaque(w, tp.ones(2))
    assert w._version == 1 and w.is_leaf
    with tp.no_grad():
        opaque(w, tp.ones(2))
    assert w._version == 2 and w.is_leaf


def test_schema_without_a_python_signature_takes_the_same_rule(ns):
    """``(Tensor? x=None, Tensor(a!) out)`` has no Python signature (a required parameter after
    a default): its calls take the generic autograd entry, with the same rule."""
    lib.define(f"{ns}::gap(Tensor? x=None, Tensor(a!) out) -> ()")
    lib.impl(f"{ns}::gap", "cpu", lambda x, out: _write_native(x, out))
    op = tp.ops.__getattr__(ns).gap
    leaf = tp.zeros(4, requires_grad=True)
    op(tp.ones(4, requires_grad=True), leaf)
    assert leaf.tolist() == [2.0] * 4 and leaf.is_leaf and leaf._version == 1
    op(x=tp.ones(4, requires_grad=True) * 2, out=leaf)
    assert leaf.tolist() == [4.0] * 4 and leaf.is_leaf and leaf._version == 2
    a = tp.zeros(4, requires_grad=True)
    out = a * 1
    op(tp.ones(4), out)
    assert out.tolist() == [2.0] * 4 and out._version == 1
    with pytest.raises(RuntimeError, match=rf"^{ns}::gap: trying to backprop through argument "
                                           r"'out'"):
        out.sum().backward()


def test_example_pack_triton_op_non_leaf_out_raises_at_backward_in_any_layout(cpu):
    """The contiguous ``out`` is stored into by the launch, a strided one through a scratch
    tensor and ``out.copy_``: both are written outside the graph, so backward through ``out``
    raises naming the op (the strided one got a copy's history with no path to ``x``, ``y``:
    silently zero gradients)."""
    from tensorplay_example_ops import triton_ops
    if not triton_ops.AVAILABLE:
        pytest.skip(triton_ops.UNAVAILABLE_REASON)
    op = tp.ops.example.fused_add_mul_relu_out
    msg = r"^example::fused_add_mul_relu_out: trying to backprop through argument 'out'"
    for shape, layout in (((4, 2), lambda t: t), ((2, 4), lambda t: t.t())):
        x = tp.ones(4, 2, requires_grad=True)
        a = tp.zeros(*shape, requires_grad=True)
        out = layout(a * 1)
        op(x, tp.ones(4, 2), 2.0, out)
        assert out.tolist() == [[4.0, 4.0]] * 4
        with pytest.raises(RuntimeError, match=msg):
            out.sum().backward()
