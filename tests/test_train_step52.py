"""Session 52 (issue 32 item 6): the per-call cuts on the training step's path keep the
behaviour of the code they shortcut.

* ``add_``/``sub_`` with ``alpha`` test the storages inline before ``check_partial_overlap``:
  a partial overlap through the same storage or through a ``.data`` alias (a ``DataStorage``,
  either side) still raises torch's error, nothing written; separate storages update;
* ``sum``/``mean`` methods without ``dtype`` call the op without a keyword argument: the same
  values and dtypes as with ``dtype=`` given;
* the engine's bare-gradient case (a one-input formula returning a tensor, not a tuple) and the
  leaf's ownership test (not inlined on main): gradients and ``.grad`` ownership as before.
"""

import numpy as np
import pytest

import tensorplay as tp


OVERLAP = "refer to a single memory location"


@pytest.mark.parametrize("method", ["add_", "sub_"])
@pytest.mark.parametrize("how", ["same", "data_other", "data_self", "data_both"])
def test_scaled_in_place_partial_overlap_raises(method, how):
    with tp.no_grad():
        x = tp.arange(6, dtype=tp.float32)
        before = x.numpy().copy()
        dst, src = x[1:], x[:-1]
        if how in ("data_self", "data_both"):
            dst = x.data[1:]
        if how in ("data_other", "data_both"):
            src = x.data[:-1]
        with pytest.raises(RuntimeError, match=OVERLAP):
            getattr(dst, method)(src, alpha=2.5)
        np.testing.assert_array_equal(x.numpy(), before)


@pytest.mark.parametrize("method,sign", [("add_", 1.0), ("sub_", -1.0)])
def test_scaled_in_place_full_overlap_and_separate(method, sign):
    with tp.no_grad():
        x = tp.tensor([1.0, 2.0, 3.0])
        getattr(x, method)(x, alpha=0.5)                    # the tensor itself: allowed
        np.testing.assert_allclose(x.numpy(), np.array([1.0, 2.0, 3.0]) * (1 + sign * 0.5))
        d = x.data
        getattr(x, method)(d, alpha=2.0)                    # its .data alias, same range: allowed
        p = tp.tensor([1.0, 2.0])
        g = tp.tensor([10.0, 20.0])
        getattr(p, method)(g, alpha=0.1)
        np.testing.assert_allclose(p.numpy(), np.array([1.0, 2.0]) + sign * np.array([1.0, 2.0]),
                                   rtol=1e-6)
        assert p._version == 1


def test_sgd_update_on_data_alias_of_grad_storage():
    # a gradient on storage of its own, and one seen through .data: the second is checked
    p = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (p * 2.0).sum().backward()
    with tp.no_grad():
        p.sub_(p.grad, alpha=0.5)
        np.testing.assert_allclose(p.detach().numpy(), [0.0, 1.0, 2.0])
        p.data.sub_(p.grad.data, alpha=0.5)
        np.testing.assert_allclose(p.detach().numpy(), [-1.0, 0.0, 1.0])


@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (-1, True), (0, False), ((0, 1), False)])
def test_reduction_methods_with_and_without_dtype(name, dim, keepdim):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = tp.tensor(a)
    r = getattr(t, name)() if dim is None else getattr(t, name)(dim, keepdim)
    r2 = getattr(t, name)(dim, keepdim, dtype=tp.float32)
    np.testing.assert_array_equal(r.numpy(), r2.numpy())
    assert r.dtype is tp.float32 and r.shape == r2.shape
    r64 = getattr(t, name)(dim, keepdim, dtype=tp.float64)
    assert r64.dtype is tp.float64
    np.testing.assert_allclose(r64.numpy(), r.numpy(), rtol=1e-6)


def test_int_sum_promotes_without_dtype():
    assert tp.tensor([1, 2, 3]).sum().dtype is tp.int64


def test_bare_gradient_formulas_through_the_engine():
    x = tp.tensor([[-1.0, 2.0], [3.0, -4.0]], requires_grad=True)
    y = (tp.relu(x).sum(-1) * tp.tensor([1.0, 2.0])).neg().sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, -1.0], [-2.0, 0.0]])
    g = x.grad
    assert g.grad_fn is None and not g.requires_grad


def test_leaf_owns_fresh_gradient_and_copies_shared_one():
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    (w * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])
    a = tp.tensor([1.0, 2.0], requires_grad=True)
    b = tp.tensor([5.0, 6.0], requires_grad=True)
    (a + b).sum().backward()          # one gradient handed to both leaves: not shared memory
    a.grad.add_(1.0)
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0])


def test_backward_of_a_view_root_still_regenerates_history():
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * 2.0).sum().reshape(1)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
