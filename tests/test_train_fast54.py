"""The per-step fast paths of session 54 (issue 32, item 6) keep torch's semantics.

* ``p.sub_(g, alpha=lr)`` / ``p.add_(g, alpha=a)`` under ``no_grad`` (the optimizer step, one
  kernel call): the value of the op-by-op path, one version bump per call, the same after the
  backend's kernels changed (a bfloat16 tensor switches the cpu backend to its bf16 kernels), no
  NumPy warning on overflow, refused as before with grad mode on;
* ops called with grad mode off on tensors that require grad (a custom op's body, a backward
  formula, ``no_grad``) reach the kernel without recording anything, with the values and errors
  of grad mode on; with ``create_graph=True`` a formula's ops still record.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.library import custom_op


def _pair(dt=np.float32, n=33, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt)


# -- the optimizer step ----------------------------------------------------------------------
@pytest.mark.parametrize("method", ["sub_", "add_"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_scaled_update_under_no_grad_is_the_op_by_op_value_and_bumps_the_version(method, dt):
    p0, g0 = _pair(dt)
    p = tp.tensor(p0.copy(), requires_grad=True)
    g = tp.tensor(g0)
    ref = tp.tensor(p0.copy())
    for i in range(3):
        v = p._version
        with tp.no_grad():
            r = getattr(p, method)(g, alpha=0.01)
        assert r is p
        assert p._version == v + 1
        getattr(ref, method)(g * 0.01)            # the op-by-op path (no alpha)
        np.testing.assert_array_equal(p.detach().numpy(), ref.numpy())
    assert p.requires_grad and p.is_leaf and p.grad_fn is None


def test_scaled_update_of_a_view_bumps_its_base_version():
    base = tp.tensor(np.zeros((4, 8), np.float32), requires_grad=True)
    with tp.no_grad():
        row = base[1]
        v = base._version
        row.sub_(tp.ones(8), alpha=0.5)
    assert base._version == v + 1
    assert base.detach().numpy()[1].tolist() == [-0.5] * 8
    assert base.detach().numpy()[[0, 2, 3]].sum() == 0


def test_scaled_update_after_the_backend_switched_kernels():
    p0, g0 = _pair(np.float32, seed=1)
    p = tp.tensor(p0.copy())
    with tp.no_grad():
        p.sub_(tp.tensor(g0), alpha=0.25)
    tp.ones(3, dtype=tp.bfloat16)                  # the cpu backend's bf16 kernels from here on
    with tp.no_grad():
        p.sub_(tp.tensor(g0), alpha=0.25)
    want = (p0 + g0 * np.float32(-0.25)) + g0 * np.float32(-0.25)
    np.testing.assert_array_equal(p.numpy(), want)
    b = tp.tensor(np.ones(4, np.float32)).to(tp.bfloat16)
    b.sub_(tp.ones(4, dtype=tp.bfloat16), alpha=0.5)  # (not the fast path: bf16) still right
    assert b.float().numpy().tolist() == [0.5] * 4


def test_scaled_update_overflow_is_silent_as_torch():
    p = tp.tensor(np.full(4, 3e38, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tp.no_grad():
            p.add_(tp.tensor(np.full(4, 3e38, np.float32)), alpha=2.0)
    assert np.isinf(p.numpy()).all()


def test_scaled_update_of_a_leaf_with_grad_on_is_refused():
    p = tp.tensor(np.ones(3, np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        p.sub_(tp.ones(3), alpha=0.1)
    assert p._version == 0


# -- row sums of small arrays ---------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 256), (1, 10), (2, 255), (511,), (1, 511), (3, 7)])
@pytest.mark.parametrize("dim", [-1, 0])
def test_small_row_sums_and_means_are_numpys_reduction(shape, dim):
    # fewer than 512 elements: NumPy's own reduction (no BLAS product), bit for bit
    a = np.random.default_rng(len(shape) * 100 + shape[-1]).standard_normal(shape).astype(np.float32)
    t = tp.tensor(a)
    for keepdim in (False, True):
        s = t.sum(dim, keepdim=keepdim).numpy()
        np.testing.assert_array_equal(s, np.add.reduce(a, dim, keepdims=keepdim))
        m = t.mean(dim, keepdim=keepdim).numpy()
        # the count as float32: NumPy 1.x promotes a float32 scalar / int to float64
        np.testing.assert_array_equal(m, np.add.reduce(a, dim, keepdims=keepdim) / np.float32(a.shape[dim]))


# -- ops with grad mode off on tensors that require grad --------------------------------------
def _cube_op(name, scale):
    """A custom op ``x * x * x * w`` whose registered formula multiplies the true gradient by
    ``scale``: a gradient that is ``scale`` times the true one proves the body's own ops recorded
    nothing (only the formula did)."""
    def body(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
        return x * x * x * w

    def setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * 3.0 * x * x * w * scale, (g * x * x * x).sum(0) * scale

    op = custom_op(name, body, mutates_args=())
    op.register_autograd(backward, setup_context=setup)
    return op


def _name(node):
    n = node.name
    return n() if callable(n) else n


def test_custom_op_body_with_grad_on_and_off_gives_one_value_and_records_only_the_op():
    op = _cube_op("train54test::cube", 2.0)
    x0 = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    x = tp.tensor(x0, requires_grad=True)
    w = tp.tensor(np.full(4, 0.5, np.float32), requires_grad=True)
    with tp.no_grad():
        off = op(x, w)
    assert off.grad_fn is None and not off.requires_grad
    on = op(x, w)
    np.testing.assert_array_equal(on.detach().numpy(), off.numpy())
    assert on.requires_grad and on.grad_fn is not None
    assert "cube" in _name(on.grad_fn)
    # its inputs' edges lead to the leaves' accumulators, not to nodes of the body's ops
    assert all(e[0] is None or "Accumulate" in _name(e[0]) for e in on.grad_fn.next_functions)
    on.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * 3.0 * x0 * x0 * 0.5, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), 2.0 * (x0 ** 3).sum(0), rtol=1e-6)
    assert x._version == 0 and w._version == 0


def test_backward_formula_ops_record_with_create_graph():
    op = _cube_op("train54test::cube2", 1.0)
    x0 = np.array([[0.5, -1.0, 2.0]], np.float32)
    x = tp.tensor(x0, requires_grad=True)
    w = tp.tensor(np.ones(3, np.float32), requires_grad=True)
    (gx,) = tp.autograd.grad(op(x, w).sum(), (x,), create_graph=True)
    assert gx.requires_grad and gx.grad_fn is not None     # the formula's ops were recorded
    np.testing.assert_allclose(gx.detach().numpy(), 3.0 * x0 * x0, rtol=1e-6)
    (ggx,) = tp.autograd.grad(gx.sum(), (x,))
    np.testing.assert_allclose(ggx.numpy(), 6.0 * x0, rtol=1e-6)
    # without create_graph the same formula records nothing
    (gx2,) = tp.autograd.grad(op(x, w).sum(), (x,))
    assert gx2.grad_fn is None and not gx2.requires_grad


def test_no_grad_ops_on_tensors_that_require_grad_record_nothing_and_name_the_op():
    w = tp.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    with tp.no_grad():
        for r in (w * w, w + 1.0, w - w, w.mean(-1, keepdim=True), tp.rsqrt(w), w @ w.T):
            assert r.grad_fn is None and not r.requires_grad
        with pytest.raises(RuntimeError, match="mul"):
            w * tp.ones((4, 5))
