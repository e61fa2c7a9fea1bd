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
        np.testing.assert_array_equal(m, np.add.reduce(a, dim, keepdims=keepdim) / a.shape[dim])
