"""``sum`` (and ``mean``, which sums) of a floating cpu tensor over small rows, several dims or
all of them gives NumPy's value, shape and dtype: the kernel reduces with ``add.reduce`` itself
(no ``ndarray.sum`` wrapper), which must keep every case ``ndarray.sum`` handled."""

import pytest

import tensorplay as tp

np = pytest.importorskip("numpy")

pytestmark = pytest.mark.usefixtures("cpu")

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (1, 7), (4, 0)]


def _dims(ndim):
    out = [None]
    for d in range(-ndim, ndim):
        out.append(d)
    if ndim >= 2:
        out += [(0, 1), (-1, 0)]
    if ndim >= 3:
        out.append((0, 2))
    return out


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sum_matches_numpy(dtype, shape):
    rng = np.random.default_rng(len(shape))
    ref = rng.standard_normal(shape).astype(str(dtype).split(".")[-1])
    x = tp.tensor(ref)
    for dim in _dims(len(shape)):
        for keepdim in (False, True):
            if dim is None and keepdim:
                continue
            r = x.sum() if dim is None else x.sum(dim, keepdim=keepdim)
            e = ref.sum(axis=dim, keepdims=keepdim)
            assert r.shape == e.shape and r.dtype == dtype, (dim, keepdim)
            np.testing.assert_allclose(r.numpy(), e, rtol=1e-5, atol=1e-6)
            if dim is not None and ref.size:
                m = x.mean(dim, keepdim=keepdim)
                np.testing.assert_allclose(m.numpy(), ref.mean(axis=dim, keepdims=keepdim),
                                           rtol=1e-5, atol=1e-6)


def test_sum_result_owns_its_memory_and_has_no_history():
    x = tp.ones(3, 4)
    r = x.sum(-1)
    assert r.tolist() == [4.0, 4.0, 4.0] and r.is_contiguous() and r._version == 0
    x.add_(1)
    assert r.tolist() == [4.0, 4.0, 4.0]


def test_sum_refuses_a_repeated_dim_as_before():
    with pytest.raises((RuntimeError, ValueError)):
        tp.ones(3, 4).sum((1, 1))
