"""Autograd: backward, grad, grad mode, Function, gradcheck, in-place rules (torch semantics)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import Function, gradcheck

F64 = tp.float64


def _t(values, **kw):
    return tp.tensor(values, dtype=F64, **kw)


def test_backward_accumulates_into_leaves():
    x = _t([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    assert y.grad_fn is not None and not y.is_leaf and x.is_leaf
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0, 9.0], "grads accumulate across backward calls"
    x.grad = None
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_backward_needs_a_gradient_for_non_scalars():
    x = _t([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="scalar outputs"):
        y.backward()
    y.backward(_t([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 20.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        _t([1.0]).sum().backward()


def test_graph_is_freed_unless_retained():
    x = _t([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    g1 = x.grad.tolist()
    y.backward()
    assert np.allclose(x.grad.tolist(), [2 * v for v in g1])


def test_broadcast_gradients_reduce_to_input_shapes():
    a = _t([[1.0], [2.0], [3.0]], requires_grad=True)       # (3, 1)
    b = _t([10.0, 20.0, 30.0, 40.0], requires_grad=True)    # (4,)
    c = _t(2.0, requires_grad=True)                          # 0-dim
    ((a + b) * c).sum().backward()
    assert a.grad.shape == (3, 1) and a.grad.tolist() == [[8.0], [8.0], [8.0]]
    assert b.grad.shape == (4,) and b.grad.tolist() == [6.0] * 4
    assert c.grad.shape == () and c.grad.item() == float((a + b).sum().item())
    w = _t([[1.0, 2.0]], requires_grad=True)
    (tp.ones(5, 3, 2, dtype=F64) * w).sum().backward()
    assert w.grad.tolist() == [[15.0, 15.0]]


def test_grad_of_float32_input_through_float64_op_keeps_input_dtype():
    x = tp.ones(3, requires_grad=True)
    y = (x.to(F64) * _t([1.0, 2.0, 3.0])).sum()
    y.backward()
    assert x.grad.dtype is tp.float32 and x.grad.tolist() == [1.0, 2.0, 3.0]


def test_autograd_grad_and_double_backward():
    x = _t([0.5, -1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    g, = tp.autograd.grad(y, x, create_graph=True)
    assert np.allclose(g.tolist(), [3 * v ** 2 for v in [0.5, -1.0, 2.0]])
    assert g.requires_grad
    gg, = tp.autograd.grad(g.sum(), x)
    assert np.allclose(gg.tolist(), [6 * v for v in [0.5, -1.0, 2.0]])
    assert x.grad is None, "autograd.grad does not touch .grad"
    # double backward through a composite: d/dx (d/dx tanh(x)) = -2 tanh(x) (1 - tanh^2)
    z = x.tanh().sum()
    g1, = tp.autograd.grad(z, x, create_graph=True)
    g1.sum().backward()
    t = np.tanh([0.5, -1.0, 2.0])
    assert np.allclose(x.grad.tolist(), -2 * t * (1 - t * t))


def test_grad_unused_inputs():
    x = _t([1.0], requires_grad=True)
    u = _t([1.0], requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="allow_unused"):
        tp.autograd.grad(y, [x, u], retain_graph=True)
    gx, gu = tp.autograd.grad(y, [x, u], allow_unused=True)
    assert gx.tolist() == [2.0] and gu is None


def test_no_grad_and_enable_grad():
    x = _t([1.0], requires_grad=True)
    with tp.no_grad():
        assert not tp.is_grad_enabled()
        y = x * 2
        with tp.enable_grad():
            z = x * 2
    assert tp.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None

    @tp.no_grad()
    def f(t):
        return t * 3
    assert not f(x).requires_grad
    with tp.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    assert (x + 1).requires_grad


def test_detach_cuts_the_graph():
    x = _t([1.0, 2.0], requires_grad=True)
    d = (x * 2).detach()
    assert not d.requires_grad and d.grad_fn is None
    (d * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_requires_grad_rules():
    x = tp.ones(2)
    x.requires_grad_()
    assert x.requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        tp.ones(2, dtype=tp.int32).requires_grad_()
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False


# -- autograd.Function --------------------------------------------------------------------------
class Cube(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return g * 3 * x * x * ctx.scale, None


class MulPair(Function):
    """forward + separate setup_context (torch 2.x style)."""

    @staticmethod
    def forward(a, b):
        return a * b

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g * b if ctx.needs_input_grad[0] else None,
                g * a if ctx.needs_input_grad[1] else None)


def test_function_forward_backward_and_gradcheck():
    x = _t([0.3, -1.2, 2.0], requires_grad=True)
    y = Cube.apply(x, 2.0)
    assert y.grad_fn is not None and "Cube" in y.grad_fn.name
    y.sum().backward()
    assert np.allclose(x.grad.tolist(), [6 * v * v for v in [0.3, -1.2, 2.0]])
    assert gradcheck(lambda t: Cube.apply(t, 2.0), (x,))
    a = _t([1.0, 2.0], requires_grad=True)
    b = _t([3.0, 4.0])
    MulPair.apply(a, b).sum().backward()
    assert a.grad.tolist() == [3.0, 4.0] and b.grad is None
    assert gradcheck(MulPair.apply, (a, b.requires_grad_()))


def test_function_without_grad_inputs_records_nothing():
    y = Cube.apply(_t([1.0]), 1.0)
    assert not y.requires_grad and y.grad_fn is None
    with tp.no_grad():
        assert Cube.apply(_t([1.0], requires_grad=True), 1.0).grad_fn is None


# -- saved tensors and in-place -----------------------------------------------------------------
def test_modified_saved_tensor_is_detected():
    x = _t([1.0, 2.0], requires_grad=True)
    y = x.exp()              # exp saves its output
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()

    a = _t([1.0, 2.0], requires_grad=True)
    h = a * 1
    z = Cube.apply(h, 1.0)   # saves h
    h.mul_(2)
    with pytest.raises(RuntimeError, match="Cube.*modified by an in-place"):
        z.sum().backward()


class _SavePair(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


class _SaveNoneAndOne(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(None, a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        none, a = ctx.saved_tensors
        assert none is None
        return g * 2 * a


def test_saved_tensors_check_every_tensor_of_one_and_two_saved():
    """The version check covers each saved tensor (first or second of a pair, a lone one, one
    beside a saved None), names its index, and passes unmodified tensors through as saved."""
    for which in (0, 1):
        a = _t([1.0, 2.0], requires_grad=True)
        b = _t([3.0, 4.0], requires_grad=True)
        ha, hb = a * 1, b * 1
        y = _SavePair.apply(ha, hb)
        (ha, hb)[which].mul_(2)
        with pytest.raises(RuntimeError, match=rf"_SavePair.*index {which}.*modified by an "
                                               rf"in-place operation"):
            y.sum().backward()
    a = _t([1.0, 2.0], requires_grad=True)
    b = _t([3.0, 4.0], requires_grad=True)
    _SavePair.apply(a * 1, b * 1).sum().backward()
    assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [1.0, 2.0]

    x = _t([1.0, 3.0], requires_grad=True)
    _SaveNoneAndOne.apply(x * 1).sum().backward()
    assert x.grad.tolist() == [2.0, 6.0]
    h = x * 1
    y = _SaveNoneAndOne.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match=r"_SaveNoneAndOne.*index 1.*modified by an in-place"):
        y.sum().backward()
    h = x * 1
    y = h.exp()              # exp saves one tensor, its output
    y.mul_(1)
    with pytest.raises(RuntimeError, match=r"index 0.*modified by an in-place"):
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad_is_refused():
    w = _t([1.0, 2.0], requires_grad=True)
    for f in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.fill_(0), lambda: w.zero_(),
              lambda: w.copy_(_t([0.0, 0.0]))):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation"):
            f()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w += 1
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        w[0] = 5.0
    assert w.tolist() == [1.0, 2.0] and w._version == 0, "refused before writing"
    with tp.no_grad():
        w.add_(1)                 # parameter update: allowed
        w[0] = 0.0
    assert w.tolist() == [0.0, 3.0]


def test_inplace_on_non_leaf_is_differentiated():
    x = _t([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.add_(x)                 # y = 3x
    y.mul_(x)                 # y = 3x^2 (mul_ by a tensor that requires grad)
    y.sum().backward()
    assert np.allclose(x.grad.tolist(), [6.0, 12.0, 18.0])
    assert y.grad_fn is not None and "mul_" in y.grad_fn.name


def test_inplace_through_views_updates_the_base_history():
    x = _t([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    v = y[1:3]
    v.mul_(10)
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 10.0, 10.0, 1.0]

    x.grad = None
    y = x * 1
    y[0] = 5.0               # setitem: fill_ of a view
    (y * y).sum().backward()
    assert x.grad.tolist() == [0.0, 4.0, 6.0, 8.0]

    x.grad = None
    y = x * 1
    a, b = y[:3], y[2:]
    b.mul_(2)                # overlaps a[2]
    (a * _t([1.0, 1.0, 1.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 2.0, 0.0], "other views see the write too"


def test_writing_graph_tensors_into_a_fresh_buffer():
    x = _t([1.0, 2.0], requires_grad=True)
    buf = tp.zeros(4, dtype=F64)
    buf[1:3] = x * 3
    buf[tp.tensor([0])] = x[:1]
    assert buf.requires_grad and buf.grad_fn is not None
    (buf * _t([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [6.0 + 1.0, 9.0]
    m = tp.zeros(2, 2, dtype=F64)
    s = _t(2.0, requires_grad=True)
    m.masked_fill_(tp.tensor([[True, False], [False, True]]), s)
    m.sum().backward()
    assert s.grad.item() == 2.0


def test_non_contiguous_reshape_result_keeps_its_history():
    x = _t([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = (x * 1).t().reshape(4)     # copies: not a view of anything
    y.mul_(2)
    y.sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_version_counter_is_shared_by_views_for_saved_tensor_check():
    x = _t([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y.sigmoid()            # saves its output z
    z[0:1].mul_(2)             # write through a view of z
    with pytest.raises(RuntimeError, match="modified by an in-place"):
        z.sum().backward()


def test_gradcheck_rejects_inputs_without_requires_grad():
    with pytest.raises(ValueError, match="requires_grad"):
        gradcheck(lambda t: t * 2, (_t([1.0]),))


def test_gradcheck_reports_the_mismatch():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            return g

    x = _t([0.5, 1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Jacobian mismatch.*numerical"):
        gradcheck(Wrong.apply, (x,))


def test_composite_gradients_of_common_expressions():
    rng = np.random.default_rng(0)
    w = tp.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = tp.tensor(rng.standard_normal(4), requires_grad=True)
    x = tp.tensor(rng.standard_normal((5, 3)))
    assert gradcheck(lambda w, b: ((x @ w + b).relu() ** 2).mean(), (w, b))
    assert gradcheck(lambda w: (x @ w).log_softmax(-1).sum(0), (w,))
    assert gradcheck(lambda w: tp.where(w > 0, w.exp(), -w).amax(1), (w,))


def test_retain_grad_keeps_non_leaf_gradients():
    x = _t([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0] and x.grad.tolist() == [18.0, 36.0]
    z = x * 2
    (z * 1).sum().backward()
    assert z.grad is None, "without retain_grad a non-leaf keeps no gradient"
    with pytest.raises(RuntimeError, match="retain_grad"):
        _t([1.0]).retain_grad()


def test_function_returning_its_input_aliases_it():
    class Ident(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = _t([1.0, 2.0], requires_grad=True)
    y = Ident.apply(x)
    assert x.is_leaf and x.grad_fn is None, "the input's history is untouched"
    assert y is not x and y._storage is x._storage and y.grad_fn is not None
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_function_mark_dirty_rebases_the_modified_input():
    class MulTwo_(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = _t([1.0, 3.0], requires_grad=True)
    y = a * 1
    out = MulTwo_.apply(y)
    assert out is y and "MulTwo_" in y.grad_fn.name
    (y * y).sum().backward()
    assert a.grad.tolist() == [8.0, 24.0]        # d/da (2a)^2 = 8a
    with pytest.raises(RuntimeError, match="leaf Variable"):
        MulTwo_.apply(_t([1.0], requires_grad=True))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "matmul"])
def test_mixed_requires_grad_arguments(op):
    """A weight that requires grad with an input that does not, in either order: the node is
    recorded and only the weight gets a gradient (the call takes the common path)."""
    f = getattr(tp, op)
    shape = (2, 2)
    wv = np.array([[1.0, 2.0], [3.0, 4.0]])
    cv = np.array([[0.5, -1.0], [2.0, 0.25]])
    for weight_first in (True, False):
        w = tp.tensor(wv.tolist(), dtype=F64, requires_grad=True)
        c = tp.tensor(cv.tolist(), dtype=F64)
        y = f(w, c) if weight_first else f(c, w)
        assert y.requires_grad and y.grad_fn is not None
        y.sum().backward()
        assert c.grad is None and w.grad.shape == shape
        eps = 1e-6
        num = np.zeros(shape)
        npf = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
               "matmul": np.matmul}[op]
        for idx in np.ndindex(*shape):
            d = np.zeros(shape)
            d[idx] = eps
            hi = npf(wv + d, cv) if weight_first else npf(cv, wv + d)
            lo = npf(wv - d, cv) if weight_first else npf(cv, wv - d)
            num[idx] = (hi.sum() - lo.sum()) / (2 * eps)
        assert np.allclose(w.grad.numpy(), num, atol=1e-5), (op, weight_first)
        with tp.no_grad():
            assert not (f(w, c) if weight_first else f(c, w)).requires_grad


def test_mixed_devices_still_refused_with_requires_grad():
    w = tp.ones(3, requires_grad=True)
    m = tp.empty(3, device="meta")
    with pytest.raises(Exception, match="device"):
        tp.add(w, m)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_implicit_seed_of_one_element_roots(shape):
    x = tp.ones(shape, dtype=F64, requires_grad=True)
    y = (x * 3.0).sum() if shape == () else x * 3.0
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.shape == shape and x.grad.tolist() == (np.full(shape, 6.0)).tolist()
    z = x.exp().sum()
    z.backward()
    with pytest.raises(RuntimeError, match="second time"):
        z.backward()     # the fast path frees the graph too


def test_backward_of_a_view_root_and_a_leaf_root():
    x = _t([1.0, 2.0], requires_grad=True)
    y = x * 5.0
    y[1].backward()          # a one-element view: its history goes through the base
    assert x.grad.tolist() == [0.0, 5.0]
    s = _t([4.0], requires_grad=True)
    s.backward()             # a leaf root: its own gradient is the seed
    assert s.grad.tolist() == [1.0]


def test_gradient_shared_by_two_leaves_is_not_aliased():
    x = _t([1.0], requires_grad=True)
    w = _t([2.0], requires_grad=True)
    tp.add(x, w).backward()          # add's backward hands the same gradient to both inputs
    assert x.grad.tolist() == [1.0] and w.grad.tolist() == [1.0]
    with tp.no_grad():
        x.grad.mul_(10.0)
    assert w.grad.tolist() == [1.0], "each leaf owns its .grad"
    seeds = []
    for _ in range(2):
        x.grad = None
        (x * 1.0).backward()
        seeds.append(x.grad)
    assert seeds[0] is not seeds[1] and seeds[0].tolist() == [1.0]
