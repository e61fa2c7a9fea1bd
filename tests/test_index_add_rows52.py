"""``index_add`` of long slices (``x[i]``'s gradient, an embedding's) on cpu: added in the
index's order, exactly as a sequential loop (torch's cpu ``index_add_``, NumPy's ``add.at``), for
distinct indices, a few repeats, many repeats of one index, along any dim, on any layout."""

import numpy as np
import pytest

import tensorplay as tp


def _reference(base, dim, idx, src):
    """``base.index_add(dim, idx, src)`` by a Python loop over ``idx`` (one slice at a time)."""
    out = np.array(base, copy=True)
    o, s = np.moveaxis(out, dim, 0), np.moveaxis(src, dim, 0)
    for j, i in enumerate(idx.tolist()):
        o[i] = o[i] + s[j]
    return out


def _case(rng, shape, dim, m, distinct, dtype):
    n = shape[dim]
    base = rng.standard_normal(shape).astype(dtype)
    idx = rng.integers(0, distinct, m) * (n // distinct)
    sshape = list(shape)
    sshape[dim] = m
    # values of mixed magnitude: a different summation order would round differently
    src = (rng.standard_normal(sshape) * 10.0 ** rng.integers(-4, 5, sshape)).astype(dtype)
    return base, idx, src


@pytest.mark.parametrize("distinct", [4096, 64, 7, 1], ids=lambda d: f"distinct{d}")
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_index_add_of_rows_adds_in_index_order(distinct, dim, dtype):
    rng = np.random.default_rng(distinct + dim)
    shape = (4096, 64) if dim == 0 else (32, 4096)
    base, idx, src = _case(rng, shape, dim, 300, distinct, dtype)
    got = tp.tensor(base).index_add(dim, tp.tensor(idx), tp.tensor(src))
    assert np.array_equal(np.asarray(got.tolist(), dtype=dtype), _reference(base, dim, idx, src))


def test_index_add_of_rows_into_a_transposed_view_and_in_place():
    rng = np.random.default_rng(3)
    base, idx, src = _case(rng, (64, 512), 1, 100, 16, np.float32)
    x = tp.tensor(base.T.copy()).t()          # (64, 512) with strides (1, 64)
    x.index_add_(1, tp.tensor(idx), tp.tensor(src))
    assert np.array_equal(np.asarray(x.tolist(), dtype=np.float32),
                          _reference(base, 1, idx, src))


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_index_add_of_rows_of_integers_and_bools(dtype):
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2, (100, 32)).astype(dtype)
    idx = rng.integers(0, 100, 150)
    src = rng.integers(0, 2, (150, 32)).astype(dtype)
    got = tp.tensor(base).index_add(0, tp.tensor(idx), tp.tensor(src))
    want = _reference(base, 0, idx, src)
    assert np.array_equal(np.asarray(got.tolist(), dtype=dtype), want)


def test_gradient_of_row_lookup_sums_repeated_rows_in_order():
    # x[i].backward: the gradient of each row is the sum of the output gradients that read it
    rng = np.random.default_rng(7)
    w = tp.tensor(rng.standard_normal((50, 32)).astype(np.float32), requires_grad=True)
    idx = rng.integers(0, 50, 400)
    g = (rng.standard_normal((400, 32)) * 10.0 ** rng.integers(-3, 4, (400, 32))).astype(
        np.float32)
    w[tp.tensor(idx)].backward(tp.tensor(g))
    want = _reference(np.zeros((50, 32), np.float32), 0, idx, g)
    assert np.array_equal(np.asarray(w.grad.tolist(), dtype=np.float32), want)


def test_index_add_of_rows_still_refuses_out_of_range():
    x = tp.zeros(8, 32)
    with pytest.raises(RuntimeError, match="out of bounds"):     # (torch's class for 2-D)
        x.index_add(0, tp.tensor([1, 8, 1]), tp.ones(3, 32))
    assert float(x.abs().sum()) == 0.0
