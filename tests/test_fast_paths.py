"""The fast paths of the training step give the same results as the general ones.

Each fast path (issue 14: kernels' common dtype case, reductions through array methods, in-place
add_/mul_ without a temporary, k=1 matmul through BLAS, relu through maximum and a mask product,
2-D matmul and bias gradients without views, the one-node backward) is checked against NumPy or
against the general path it shortcuts, with its neighbours (NaN, -0.0, float16, views, ints,
multi-output nodes, retained graphs).
"""

import math

import numpy as np
import pytest

import tensorplay as tp


def _np(t):
    return t.detach().numpy()


# -- kernels ----------------------------------------------------------------------------------

def test_binary_dtype_fast_path_keeps_torch_promotion():
    f16 = tp.tensor([1.0, 2.0], dtype=tp.float16)
    assert (f16 * 3.0).dtype is tp.float16          # float array, Python float: array wins
    assert (f16 + 2).dtype is tp.float16
    i = tp.tensor([1, 2])
    assert (i * 2.5).dtype is tp.float32              # int array, Python float: default float
    assert (i / i).dtype is tp.float32                # same dtype, true division: float
    assert (i + i).dtype is tp.int64
    b = tp.tensor([True, False])
    assert (b + b).dtype is tp.bool and (b + b).tolist() == [True, False]
    assert (tp.tensor([1.0]) * tp.tensor([2.0], dtype=tp.float64)).dtype is tp.float64


def test_mean_matches_numpy_all_dtypes_and_dims():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x = tp.tensor(a)
    np.testing.assert_allclose(_np(x.mean()), a.mean(), rtol=1e-6)
    np.testing.assert_allclose(_np(x.mean(-1, keepdim=True)), a.mean(-1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(_np(x.mean((0, 2))), a.mean((0, 2)), rtol=1e-6)
    h = tp.tensor(a, dtype=tp.float16)
    m = h.mean(1)
    assert m.dtype is tp.float16
    np.testing.assert_allclose(_np(m).astype(np.float32),
                               a.astype(np.float16).astype(np.float32).mean(1), rtol=2e-3)
    s = tp.tensor(2.5).mean()
    assert s.shape == () and s.item() == 2.5
    assert math.isnan(tp.tensor([], dtype=tp.float32).mean().item())


def test_sum_amax_softmax_match_numpy():
    a = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    x = tp.tensor(a)
    np.testing.assert_allclose(_np(x.sum(0)), a.sum(0), rtol=1e-6)
    assert x.sum().shape == ()
    assert tp.tensor([1, 2, 3], dtype=tp.int32).sum().dtype is tp.int64
    np.testing.assert_allclose(_np(x.amax(1)), a.max(1))
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(_np(tp.softmax(x, 1)), e / e.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(_np(tp.log_softmax(x, 1)),
                               np.log(e / e.sum(1, keepdims=True)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("m,n", [(256, 256), (64, 100), (3, 4)])
def test_outer_product_matmul_exact(m, n):
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, 1)).astype(np.float32)
    b = rng.standard_normal((1, n)).astype(np.float32)
    r = tp.tensor(a) @ tp.tensor(b)
    assert r.shape == (m, n) and r.dtype is tp.float32 and r.is_contiguous()
    np.testing.assert_array_equal(_np(r), a * b)      # one product per element: exact


def test_inplace_add_mul_write_through_views_and_refuse_promotion():
    base = tp.zeros(3, 4)
    col = base[:, 1]                                   # a non-contiguous view
    col.add_(tp.tensor([1.0, 2.0, 3.0]))
    col.mul_(2.0)
    assert base[:, 1].tolist() == [2.0, 4.0, 6.0] and base.sum().item() == 12.0
    v0 = base._version
    base.add_(1)
    assert base._version > v0
    i = tp.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(0.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.mul_(tp.tensor([1.5, 2.0]))
    assert i.tolist() == [1, 2]
    h = tp.tensor([1.0, 2.0], dtype=tp.float16)
    h.add_(tp.tensor([1.0, 1.0]))                      # float32 other into float16: allowed
    assert h.dtype is tp.float16 and h.tolist() == [2.0, 3.0]
    p = tp.tensor([1.0, 2.0], requires_grad=True)
    with tp.no_grad():
        p.sub_(tp.tensor([10.0, 10.0]), alpha=0.1)
    assert p.tolist() == pytest.approx([0.0, 1.0]) and p.grad_fn is None


def test_inline_constructor_source_builds_what_new_tensor_builds():
    # the built-in ops' adapters build results from new_tensor_source's lines (no frame); they
    # must set every field new_tensor sets, to the same values
    from tensorplay import _tensor_base as B
    from tensorplay.backends import Storage
    x = tp.tensor([1.0, 2.0])
    st, arr, be = x.storage_ref, x.native, x.backend
    ref = B.new_tensor(st, arr, (2,), (1,), 0, tp.float32, x.device, be)
    ns = {"__new": object.__new__, "__T": B.instance_class(), "st": st, "arr": arr, "be": be,
          "dev": x.device, "dt": tp.float32}
    exec("\n".join(B.new_tensor_source("t", "st", "arr", "(2,)", "(1,)", "dt", "dev", "be")), ns)
    got = ns["t"]
    assert type(got) is type(ref) is tp.Tensor and isinstance(st, Storage)
    for name in B.SLOTS:
        g, w = getattr(got, name), getattr(ref, name)
        assert g is w if name in ("_data", "_storage", "_backend") else (
            g == w and type(g) is type(w)), name


def test_kernel_results_have_every_tensor_field():
    y = tp.tensor([1.0, 2.0]) * 2.0
    # Tensor's fields are the slots of its base class (tensorplay/_tensor_base.py)
    names = [n for c in type(y).__mro__ for n in getattr(c, "__slots__", ()) if n != "__weakref__"]
    assert "_data" in names and "grad_fn" in names, names
    for name in names:
        getattr(y, name)                               # unset slot: AttributeError
    assert y.is_contiguous() and y._version == 0 and y.grad is None and y.is_leaf


# -- backward formulas ------------------------------------------------------------------------

def test_relu_forward_and_backward_like_torch():
    x = tp.tensor([-1.0, -0.0, 0.0, 2.0, float("nan")], requires_grad=True)
    y = x.relu()
    r = _np(y)
    assert r[:4].tolist() == [0.0, 0.0, 0.0, 2.0]
    assert np.signbit(r[:4]).tolist() == [False, True, False, False]   # relu(-0.0) is -0.0 (torch)
    assert math.isnan(r[4])
    y.sum().backward()
    assert x.grad.tolist()[:4] == [0.0, 0.0, 0.0, 1.0]
    assert x.grad.tolist()[4] == 1.0                   # NaN output passes the gradient (torch)
    assert x.grad.dtype is tp.float32
    assert tp.tensor([-3, 4], dtype=tp.int8).relu().tolist() == [0, 4]


def test_linear_layer_gradients_batch_one_and_many():
    rng = np.random.default_rng(3)
    for batch in (1, 5):
        a = rng.standard_normal((batch, 7)).astype(np.float32)
        w = rng.standard_normal((7, 3)).astype(np.float32)
        bias = rng.standard_normal(3).astype(np.float32)
        x, W, B = tp.tensor(a), tp.tensor(w, requires_grad=True), tp.tensor(bias, requires_grad=True)
        (x @ W + B).sum().backward()
        np.testing.assert_allclose(_np(W.grad), a.T @ np.ones((batch, 3), np.float32), rtol=1e-6)
        np.testing.assert_allclose(_np(B.grad), np.full(3, batch, np.float32))
        assert W.grad.shape == (7, 3) and B.grad.shape == (3,)
        assert W.grad.is_contiguous() and B.grad.is_contiguous()
        # .grad owns its memory: writing it changes nothing else
        W.grad.zero_()
        assert W.tolist() == w.tolist()


def test_matmul_gradients_batched_and_vector_still_reduce():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    A, W = tp.tensor(a, requires_grad=True), tp.tensor(w, requires_grad=True)
    (A @ W).sum().backward()
    np.testing.assert_allclose(_np(W.grad), a.reshape(-1, 4).T @ np.ones((6, 5), np.float32),
                               rtol=1e-5)
    v = tp.tensor(w[:, 0], requires_grad=True)
    (W.detach() @ tp.tensor(np.ones(5, np.float32)) @ v).backward()
    np.testing.assert_allclose(_np(v.grad), w.sum(1), rtol=1e-5)


def test_sum_to_size_shapes():
    g = tp.ones(2, 3, 4)
    assert g.sum_to_size((3, 4)).tolist() == (np.ones((3, 4)) * 2).tolist()
    assert g.sum_to_size(3, 1).tolist() == [[8.0]] * 3
    assert g.sum_to_size((2, 3, 4)) is g
    assert g.sum_to_size(1, 3, 1).shape == (1, 3, 1)


# -- the one-node backward --------------------------------------------------------------------

def test_one_node_backward_accumulates_and_owns_its_gradient():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    (x * 3.0).sum().backward()
    y = (x * 3.0)[0]
    y.backward()
    assert x.grad.tolist() == [6.0, 3.0]
    x.grad = None
    z = x * 3.0
    z.retain_grad()
    z.backward(tp.ones(2), retain_graph=True)
    z.backward(tp.ones(2))
    assert x.grad.tolist() == [6.0, 6.0] and z.grad.tolist() == [2.0, 2.0]
    x.grad = None
    s = tp.tensor([2.0], requires_grad=True)
    out = s * 4.0
    out.backward()
    g = s.grad
    g.mul_(0)                                          # the leaf's own gradient, not shared
    (s * 4.0).backward()
    assert s.grad.tolist() == [4.0]


def test_one_node_backward_of_a_second_output():
    x = tp.tensor([[1.0, 5.0], [7.0, 2.0]], requires_grad=True)
    vals, idx = x.max(1)
    vals.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    x.grad = None
    vals, _ = x.max(1)
    vals[1].backward()
    assert x.grad.tolist() == [[0.0, 0.0], [1.0, 0.0]]


def test_one_node_backward_frees_saved_tensors_and_reports_reuse():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    z = x.exp().sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(_np(x.grad), 2 * np.array([1.0, 2.0]) + 2 * np.exp([1.0, 2.0]),
                               rtol=1e-6)


def test_two_leaf_backward_shares_no_gradient_memory():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    w = tp.tensor([3.0, 4.0], requires_grad=True)
    tp.add(x, w).sum().backward()
    (x + w)[1].backward()
    assert x.grad.tolist() == [1.0, 2.0] and w.grad.tolist() == [1.0, 2.0]
    x.grad = w.grad = None
    s = tp.tensor([1.0], requires_grad=True)
    t = tp.tensor([5.0], requires_grad=True)
    tp.add(s, t).backward()
    s.grad.add_(1.0)                                    # each leaf owns its gradient
    assert s.grad.tolist() == [2.0] and t.grad.tolist() == [1.0]
    c = tp.tensor([3.0])
    tp.add(t, c).backward()                             # a weight and an input
    assert t.grad.tolist() == [2.0] and c.grad is None
    q = tp.tensor([2.0], requires_grad=True)
    (q * q).backward()                                  # both inputs the same leaf: summed
    assert q.grad.tolist() == [4.0]
    (q * t).backward()
    assert q.grad.tolist() == [9.0] and t.grad.tolist() == [4.0]


# -- issue 14, second round: adapter fast path, fused backward kernels, scaled in-place add --------

@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_adapter_ufunc_fast_path_equals_numpy_and_keeps_promotion(op):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32) + 3.0
    uf = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    f = getattr(tp, op) if hasattr(tp, op) else getattr(tp.Tensor, op)
    x, y = tp.tensor(a), tp.tensor(b)
    for other, ref in ((y, uf(a, b)), (2.5, uf(a, np.float32(2.5))), (3, uf(a, np.float32(3))),
                       (tp.tensor(b[0]), uf(a, b[0]))):      # broadcasting row
        r = f(x, other)
        assert r.dtype is tp.float32 and np.array_equal(_np(r), ref, equal_nan=True)
    # the neighbours take the kernel's promotion, not the fast path
    assert f(x, tp.tensor(b, dtype=tp.float64)).dtype is tp.float64
    assert f(tp.tensor([1, 2]), 2.5).dtype is tp.float32
    assert f(tp.tensor([1.0, 2.0], dtype=tp.float16), 2.0).dtype is tp.float16
    assert f(tp.tensor([4, 2]), tp.tensor([2, 1])).dtype is (tp.float32 if op == "div" else tp.int64)
    # NaN and division by zero stay silent (the quiet error state covers the fast path too)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = f(tp.tensor([0.0, float("nan")]), 0.0)
    with np.errstate(all="ignore"):
        ref = uf(np.array([0.0, np.nan], np.float32), np.float32(0.0))
    assert np.array_equal(_np(r), ref, equal_nan=True)


def _grads_fused_and_composite(fn, a):
    """``fn``'s input gradient by a plain backward (fused kernels) and with create_graph=True
    (grad mode on inside the formula: the op-by-op path)."""
    x = tp.tensor(a, requires_grad=True)
    w = tp.tensor(np.linspace(-1, 2, a.size).reshape(a.shape).astype(a.dtype))
    (fn(x) * w).sum().backward()
    fused = _np(x.grad)
    x2 = tp.tensor(a, requires_grad=True)
    g, = tp.autograd.grad((fn(x2) * w).sum(), [x2], create_graph=True)
    return fused, _np(g)


@pytest.mark.parametrize("name", ["log_softmax", "softmax", "relu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_backward_kernels_equal_the_op_by_op_formula(name, dtype):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 7)).astype(dtype)
    a[0, 0] = 0.0
    a[1, 1] = -0.0
    fn = {"log_softmax": lambda t: tp.log_softmax(t, -1), "softmax": lambda t: tp.softmax(t, 0),
          "relu": tp.relu}[name]
    fused, composite = _grads_fused_and_composite(fn, a)
    assert fused.dtype == dtype
    assert np.array_equal(fused, composite)      # same array steps: bit for bit
    # against NumPy by hand
    w = np.linspace(-1, 2, a.size).reshape(a.shape).astype(dtype)
    if name == "relu":
        ref = w * (np.maximum(a, 0) != 0)
    elif name == "log_softmax":
        z = a - a.max(-1, keepdims=True)
        y = z - np.log(np.exp(z).sum(-1, keepdims=True))
        ref = w - np.exp(y) * w.sum(-1, keepdims=True)
    else:
        e = np.exp(a - a.max(0, keepdims=True))
        y = e / e.sum(0, keepdims=True)
        ref = y * (w - (w * y).sum(0, keepdims=True))
    np.testing.assert_allclose(fused, ref, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


def test_fused_backward_keeps_nan_and_double_backward():
    x = tp.tensor([[float("nan"), 1.0, -2.0]], requires_grad=True)
    tp.relu(x).sum().backward()
    assert _np(x.grad).tolist() == [[1.0, 1.0, 0.0]]    # a NaN output passes g (torch)
    # create_graph: the formula records ops, so a second derivative exists
    x = tp.tensor([[0.5, 1.0, -2.0]], requires_grad=True)
    g, = tp.autograd.grad(tp.log_softmax(x, -1)[0, 0], [x], create_graph=True)
    assert g.requires_grad
    g.sum().backward()
    assert x.grad is not None and np.all(np.isfinite(_np(x.grad)))
    # float16: the op-by-op path (no fused kernel below float32)
    h = tp.tensor([[0.5, 1.0, -2.0]], dtype=tp.float16, requires_grad=True)
    tp.log_softmax(h, -1).sum().backward()
    assert h.grad.dtype is tp.float16


@pytest.mark.parametrize("alpha", [0.01, 1, 2, -0.5])
def test_sub_add_with_alpha_in_one_pass_equal_the_general_path(alpha):
    rng = np.random.default_rng(7)
    p0 = rng.standard_normal((8, 6)).astype(np.float32)
    g0 = rng.standard_normal((8, 6)).astype(np.float32)
    p, g = tp.tensor(p0, requires_grad=True), tp.tensor(g0)
    v = p._version
    with tp.no_grad():
        r = p.sub_(g, alpha=alpha)
    assert r is p and p._version == v + 1 and p.requires_grad and p.grad_fn is None
    assert np.array_equal(_np(p), p0 + g0 * np.float32(-alpha) if alpha != 1 else p0 + (-g0))
    q = tp.tensor(p0)
    q.add_(g, alpha=alpha)
    assert np.array_equal(_np(q), p0 + g0 * np.float32(alpha) if alpha != 1 else p0 + g0)
    # a view is written through to its base
    base = tp.tensor(p0.copy())
    row = base[2]
    row.sub_(tp.tensor(g0[2]), alpha=alpha)
    assert np.array_equal(_np(base)[2], p0[2] + g0[2] * np.float32(-alpha) if alpha != 1
                          else p0[2] + (-g0[2]))


def test_scaled_add_neighbours_take_the_general_path():
    p = tp.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        p.sub_(tp.tensor([1.0, 1.0]), alpha=0.5)           # grad mode on: torch's error
    x = tp.tensor([1.0, 2.0])
    x.sub_(tp.tensor([1.0, 1.0], dtype=tp.float64), alpha=0.5)   # another dtype: promotion rules
    assert x.dtype is tp.float32 and x.tolist() == [0.5, 1.5]
    x.add_(tp.tensor([2.0]), alpha=2)                       # broadcasting
    assert x.tolist() == [4.5, 5.5]
    with pytest.raises(RuntimeError, match="memory location"):
        tp.tensor([1.0]).expand(3).sub_(tp.ones(3), alpha=2)
    i = tp.tensor([1, 2])
    with pytest.raises(RuntimeError):
        i.add_(tp.tensor([1.0, 1.0]), alpha=2)             # int <- float: refused, as torch
    # a graph through the in-place op (grad mode on, non-leaf): recorded, gradient alpha * g
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    y = w * 1.0
    y.sub_(w, alpha=3.0)
    y.sum().backward()
    assert w.grad.tolist() == [-2.0, -2.0]


@pytest.mark.parametrize("m,k,n", [(1, 64, 80), (5, 3, 4), (64, 1, 70)])
@pytest.mark.parametrize("need", ["both", "a", "b"])
def test_fused_matmul_backward_equals_the_op_by_op_formula(m, k, n, need):
    """2-D matmul's gradients by one kernel call (g @ b.T, a.T @ g, through the matmul kernel,
    the batch-of-one outer product included) equal the transpose-and-matmul ops bit for bit."""
    rng = np.random.default_rng(11)
    a0 = rng.standard_normal((m, k)).astype(np.float32)
    b0 = rng.standard_normal((k, n)).astype(np.float32)
    w = tp.tensor(rng.standard_normal((m, n)).astype(np.float32))

    def grads(create_graph):
        a = tp.tensor(a0, requires_grad=need in ("both", "a"))
        b = tp.tensor(b0, requires_grad=need in ("both", "b"))
        leaves = [t for t in (a, b) if t.requires_grad]
        return [_np(g) for g in tp.autograd.grad(((a @ b) * w).sum(), leaves,
                                                 create_graph=create_graph)]
    fused, composite = grads(False), grads(True)
    assert len(fused) == (2 if need == "both" else 1)
    for f, c in zip(fused, composite):
        assert f.dtype == np.float32 and np.array_equal(f, c)
    ref = {"a": _np(w) @ b0.T, "b": a0.T @ _np(w)}
    for f, which in zip(fused, ["a", "b"] if need == "both" else [need]):
        np.testing.assert_allclose(f, ref[which], rtol=1e-5, atol=1e-5)


def _assert_rounded_sums(got, a, *, mean=False):
    """``got`` holds the sums (or means) of ``a``'s rows to within the rounding any summation
    order may make: |s - exact| <= n * eps * sum|x| (the classic bound for recursive summation,
    with room for the final division of a mean), the exact row sums taken with ``math.fsum``.
    BLAS kernels sum in an order of their own (SIMD width, blocking: it differs from CPU to CPU),
    so agreement with NumPy's pairwise sum to a fixed tolerance is not a property of either."""
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    rows = np.asarray(a, dtype=np.float64).reshape(-1, a.shape[-1])
    n = rows.shape[1]
    eps = float(np.finfo(a.dtype).eps)
    exact = np.array([math.fsum(r) for r in rows])
    bound = (n + 2) * eps * np.abs(rows).sum(axis=1)
    if mean:
        exact, bound = exact / n, bound / n + eps * np.abs(exact / n)
    assert got.shape == exact.shape
    err = np.abs(got - exact)
    assert (err <= bound).all(), (f"row {int(np.argmax(err - bound))}: error "
                                  f"{float(np.max(err)):.3g} beyond the rounding bound")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_last_axis_sums_through_blas_are_correctly_rounded(dtype):
    """sum/mean over the last axis of float32/float64 rows run as a product with ones (one BLAS
    call): within the rounding bound of the exact sums (as NumPy's own values are), every shape
    and keepdim, NaN/inf propagated; other axes, dtypes and long rows keep NumPy's reduction."""
    rng = np.random.default_rng(9)
    for shape in [(64, 256), (1, 256), (3, 4, 5), (7,), (2, 1), (5, 4097), (4096,), (2, 64, 40)]:
        a = rng.standard_normal(shape).astype(dtype)
        x = tp.tensor(a)
        _assert_rounded_sums(a.sum(-1), a)                # the bound holds for NumPy's order too
        for keep in (False, True):
            s, m = x.sum(-1, keepdim=keep), x.mean(-1, keepdim=keep)
            assert s.shape == a.sum(-1, keepdims=keep).shape == m.shape
            assert s.dtype is m.dtype is x.dtype
            _assert_rounded_sums(_np(s), a)
            _assert_rounded_sums(_np(m), a, mean=True)
        _assert_rounded_sums(_np(x.sum(len(shape) - 1)), a)
    a = np.ones((2048, 3), dtype)
    a[0, 1], a[1, 0], a[2, :2] = np.nan, np.inf, (np.inf, -np.inf)
    with np.errstate(invalid="ignore"):
        ref = a.sum(-1)
    assert np.array_equal(_np(tp.tensor(a).sum(-1)), ref, equal_nan=True)
    # a view with strides (a column slice) and a transposed tensor
    b = rng.standard_normal((64, 80)).astype(dtype)
    _assert_rounded_sums(_np(tp.tensor(b)[:, 2:75].sum(-1)), b[:, 2:75])
    _assert_rounded_sums(_np(tp.tensor(b).t().mean(-1)), b.T, mean=True)
    # the gradient of a mean over rows is unchanged
    w = tp.tensor(b, requires_grad=True)
    w.mean(-1).sum().backward()
    assert np.array_equal(_np(w.grad), np.full(b.shape, 1 / 80, dtype))


def test_sums_outside_the_blas_case_are_numpy_s():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert tp.tensor(a).sum(-1).tolist() == a.sum(-1).tolist()
    h = np.linspace(-1, 1, 12).astype(np.float16).reshape(3, 4)
    assert tp.tensor(h).sum(-1).dtype is tp.float16
    assert np.array_equal(_np(tp.tensor(h).sum(-1)), h.sum(-1))
    f = np.linspace(-1, 1, 12).astype(np.float32).reshape(3, 4)
    assert np.array_equal(_np(tp.tensor(f).sum(0)), f.sum(0))            # other axes: NumPy's
    assert tp.tensor(np.zeros((2, 0), np.float32)).sum(-1).tolist() == [0.0, 0.0]


def test_bias_gradient_of_a_broadcast_add_equals_sum_to_size():
    rng = np.random.default_rng(13)
    h0 = rng.standard_normal((5, 3, 4)).astype(np.float32)
    for bshape in [(4,), (3, 4), (1, 4), (3, 1), ()]:
        b0 = rng.standard_normal(bshape).astype(np.float32)
        h, b = tp.tensor(h0, requires_grad=True), tp.tensor(b0, requires_grad=True)
        w = tp.tensor(rng.standard_normal((5, 3, 4)).astype(np.float32))
        ((h + b) * w).sum().backward()
        assert b.grad.shape == b.shape and b.grad.dtype is tp.float32
        assert np.array_equal(_np(b.grad), _np(w.sum_to_size(bshape)))
        assert np.array_equal(_np(h.grad), _np(w))
