"""k64: the cpu reduction kernels' per-call trims keep their values bit for bit.

* ``mean`` divides a NumPy sum by a cached 0-d array of its dtype holding the count (not the
  Python int): the result must equal the sum divided by the int, bit for bit, whatever the
  dims, layout, dtype and specials, and never share or expose the cached divisor;
* ``softmax``/``log_softmax`` call ``maximum.reduce``/``add.reduce`` instead of
  ``ndarray.max``/``.sum`` (the same reduction): the values of the formula written with the
  methods, bit for bit.
"""

import numpy as np
import pytest

import tensorplay as tp

SHAPES_DIMS = [
    ((1, 256), -1), ((64, 256), -1), ((64, 256), 1), ((64, 10), -1), ((64, 10), 0),
    ((3,), 0), ((7, 5, 3), -1), ((7, 5, 3), 1), ((7, 5, 3), 0), ((4096, 3), 0), ((2, 3000), -1),
]


def _count(dtype, n):
    """The element count in the data's dtype: NumPy 1.x (the declared minimum) promotes a
    float32 0-d result divided by a Python int to float64, NumPy 2 keeps float32."""
    return np.dtype(dtype).type(n)


def _data(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_mean_equals_sum_over_count(dtype, shape, dim, keepdim):
    a = _data(shape, dtype)
    t = tp.tensor(a)
    got = t.mean(dim, keepdim=keepdim).numpy()
    want = t.sum(dim, keepdim=keepdim).numpy() / _count(dtype, shape[dim])
    assert got.dtype == want.dtype == a.dtype
    assert got.shape == want.shape
    assert np.array_equal(got.view(f"u{a.itemsize}"), want.view(f"u{a.itemsize}"))
    assert np.allclose(got, a.mean(dim, keepdims=keepdim), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mean_several_dims_views_and_all(dtype):
    a = _data((6, 8, 10), dtype, 1)
    t = tp.tensor(a)
    for dims in ([0, 2], [1, 2], [0, 1, 2], [-1, -3]):
        got = t.mean(dims, keepdim=True).numpy()
        n = int(np.prod([a.shape[d] for d in dims]))
        want = t.sum(dims, keepdim=True).numpy() / _count(dtype, n)
        assert np.array_equal(got, want)
    # strided and transposed views
    for v in (t[:, ::2], t.transpose(0, 2), t[1:, :, 3:]):
        for d in (0, -1):
            assert np.array_equal(v.mean(d).numpy(), v.sum(d).numpy() / _count(dtype, v.shape[d]))
    # all elements (a NumPy scalar sum: the int path)
    assert np.array_equal(t.mean().numpy(), t.sum().numpy() / _count(dtype, a.size))


def test_mean_specials_empty_and_odd_counts():
    a = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 2.0], [-np.inf, np.inf, 0.0],
                  [3.4028235e38, 3.4028235e38, 0.0]], np.float32)
    t = tp.tensor(a)
    got = t.mean(-1).numpy()
    want = t.sum(-1).numpy() / 3
    assert np.array_equal(got, want, equal_nan=True)
    assert np.isnan(got[0]) and got[1] == np.inf and np.isnan(got[2]) and got[3] == np.inf
    for n in (1, 3, 7, 11, 13, 255, 257):
        x = tp.tensor(_data((5, n), np.float32, n))
        assert np.array_equal(x.mean(1).numpy(), x.sum(1).numpy() / n)
    e = tp.zeros(0, 4).mean(0)
    assert e.shape == (4,) and np.isnan(e.numpy()).all()
    assert tp.tensor(2.5).mean().item() == 2.5
    assert tp.tensor(2.5, dtype=tp.float64).mean(0).item() == 2.5


def test_mean_results_are_fresh_and_writable():
    t = tp.tensor(_data((64, 256), np.float32))
    m1 = t.mean(-1, keepdim=True)
    m2 = t.mean(-1, keepdim=True)
    assert np.array_equal(m1.numpy(), m2.numpy())
    m1.add_(1.0)                       # the result owns its memory (not the cached divisor)
    assert np.array_equal(m1.numpy(), m2.numpy() + np.float32(1.0))
    m3 = t.mean(-1, keepdim=True)      # the divisor is unchanged
    assert np.array_equal(m3.numpy(), m2.numpy())
    out = tp.empty(64, 1)
    tp.mean(t, -1, keepdim=True, out=out)
    assert np.array_equal(out.numpy(), m2.numpy())


def test_mean_other_dtypes_keep_their_rules():
    h = tp.tensor(_data((8, 300), np.float16))
    got = h.mean(-1)
    assert got.dtype == tp.float16
    want = (h.numpy().sum(-1, dtype=np.float32) / 300).astype(np.float16)
    assert np.array_equal(got.numpy(), want)
    i = tp.arange(12).reshape(3, 4)
    with pytest.raises(RuntimeError):
        i.mean(1)
    got = i.mean(1, dtype=tp.float64).numpy()
    assert got.dtype == np.float64 and np.array_equal(got, np.arange(12.).reshape(3, 4).mean(1))
    b = tp.tensor(_data((4, 6), np.float32)).to(tp.bfloat16)
    assert b.mean(1).dtype == tp.bfloat16


def test_mean_gradient():
    x = tp.tensor(_data((64, 256), np.float32), requires_grad=True)
    x.mean(-1, keepdim=True).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.full((64, 256), 1 / 256, np.float32))


# -- softmax / log_softmax ---------------------------------------------------------------------

def _np_log_softmax(x, d):
    z = x - x.max(axis=d, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=d, keepdims=True))


def _np_softmax(x, d):
    e = np.exp(x - x.max(axis=d, keepdims=True))
    return e / e.sum(axis=d, keepdims=True)


def _bits_equal(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
        a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS)
def test_softmaxes_equal_the_method_formula(dtype, shape, dim):
    a = _data(shape, dtype, 2) * 4
    t = tp.tensor(a)
    assert _bits_equal(tp.log_softmax(t, dim).numpy(), _np_log_softmax(a, dim))
    assert _bits_equal(tp.softmax(t, dim).numpy(), _np_softmax(a, dim))
    assert _bits_equal(t.log_softmax(dim).numpy(), _np_log_softmax(a, dim))


def test_softmaxes_specials_views_and_0d():
    a = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf],
                  [-np.inf, 0.0, 1.0], [1e30, -1e30, 0.0]], np.float32)
    t = tp.tensor(a)
    with np.errstate(all="ignore"):
        for d in (0, 1, -1):
            assert np.array_equal(tp.log_softmax(t, d).numpy(), _np_log_softmax(a, d),
                                  equal_nan=True)
            assert np.array_equal(tp.softmax(t, d).numpy(), _np_softmax(a, d), equal_nan=True)
    b = _data((10, 12), np.float32, 3)
    tb = tp.tensor(b)
    for v, vb in ((tb[:, ::2], b[:, ::2]), (tb.t(), b.T), (tb[2:7], b[2:7])):
        for d in (0, 1):
            assert _bits_equal(tp.log_softmax(v, d).numpy(), _np_log_softmax(vb, d))
            assert _bits_equal(tp.softmax(v, d).numpy(), _np_softmax(vb, d))
    z = tp.tensor(1.5)
    assert tp.softmax(z, 0).item() == 1.0 and tp.log_softmax(z, -1).item() == 0.0
    assert tp.log_softmax(tp.zeros(0, 3), 1).shape == (0, 3)
    h = tp.tensor(_data((4, 9), np.float16, 4))
    assert tp.log_softmax(h, 1).dtype == tp.float16
    want = _np_log_softmax(h.numpy().astype(np.float32), 1).astype(np.float16)
    assert np.array_equal(tp.log_softmax(h, 1).numpy(), want)
    with pytest.raises(RuntimeError):
        tp.softmax(tp.arange(4), 0)


def test_log_softmax_gradient():
    a = _data((64, 10), np.float32, 5)
    x = tp.tensor(a, requires_grad=True)
    g = _data((64, 10), np.float32, 6)
    tp.log_softmax(x, -1).backward(tp.tensor(g))
    y = _np_log_softmax(a, -1)
    want = g - np.exp(y) * g.sum(-1, keepdims=True)
    assert np.allclose(x.grad.numpy(), want, rtol=1e-5, atol=1e-6)
