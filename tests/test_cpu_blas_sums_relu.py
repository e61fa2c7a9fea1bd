"""cpu sums down the first axis of a 2-D float tensor (bias gradients, ``g.sum(0)``) and ``relu``
of float tensors from a few thousand elements take faster NumPy paths (a product with a vector
of ones; ``maximum`` against a shared read-only block of zeros). Whatever path a tensor takes --
row-major, transposed, strided, small or large, float32/float64 or another dtype -- the result
is NumPy's value, shape and dtype, a fresh tensor of its own, and for ``relu`` the same bits as
``numpy.maximum(x, 0)`` (NaN kept, +0 for -0.0)."""

import threading
import warnings

import pytest

import tensorplay as tp

np = pytest.importorskip("numpy")

pytestmark = pytest.mark.usefixtures("cpu")


def _layouts(ref):
    """(name, tensor, the NumPy array it holds) for row-major, transposed and strided views."""
    x = tp.tensor(ref)
    wide = np.concatenate([ref, ref], axis=1)
    tall = np.concatenate([ref, ref], axis=0)
    return [("row-major", x, ref),
            ("transposed", tp.tensor(np.ascontiguousarray(ref.T)).t(), ref),
            ("strided columns", tp.tensor(wide)[:, ::2], wide[:, ::2]),
            ("strided rows", tp.tensor(tall)[::2], tall[::2])]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(64, 256), (64, 10), (4096, 2), (4096, 16), (2, 4096),
                                   (1, 1024), (8, 64), (300, 1), (5000, 3)], ids=str)
def test_first_axis_sum_matches_numpy_in_every_layout(dtype, shape):
    rng = np.random.default_rng(shape[0] * 7 + shape[1])
    ref = rng.standard_normal(shape).astype(dtype)
    tol = dict(rtol=2e-5, atol=2e-5 * shape[0]) if dtype == "float32" else dict(rtol=1e-12)
    for name, x, arr in _layouts(ref):
        exact = arr.astype(np.float64).sum(0)
        for dim in (0, -2):
            for keepdim in (False, True):
                r = x.sum(dim, keepdim=keepdim)
                assert r.shape == ((1, shape[1]) if keepdim else (shape[1],)), (name, dim)
                assert r.dtype == x.dtype and r.is_contiguous(), name
                np.testing.assert_allclose(r.numpy().reshape(-1), exact, **tol, err_msg=name)
                m = x.mean(dim, keepdim=keepdim)
                np.testing.assert_allclose(m.numpy().reshape(-1), exact / shape[0], **tol,
                                           err_msg=name)
        # the last axis (rows) too, in the same layouts
        np.testing.assert_allclose(x.sum(-1).numpy(), arr.astype(np.float64).sum(-1),
                                   rtol=tol["rtol"], atol=2e-5 * shape[1], err_msg=name)


def test_first_axis_sum_owns_its_memory_and_keeps_specials():
    ref = np.ones((64, 256), np.float32)
    ref[3, 5] = np.nan
    ref[:, 7] = np.inf
    ref[:, 9] = -np.inf
    ref[1, 11] = np.inf
    ref[2, 11] = -np.inf
    x = tp.tensor(ref)
    r = x.sum(0)
    with np.errstate(invalid="ignore"):
        e = ref.sum(0)
    np.testing.assert_array_equal(r.numpy(), e)   # NaN, inf, -inf and inf - inf = NaN
    x.add_(1)
    np.testing.assert_array_equal(r.numpy(), e)
    assert r._version == 0 and not r.requires_grad
    r.add_(1)   # the result is writable (not a view of anything shared)
    with np.errstate(invalid="ignore"):
        e1 = (ref + 1).sum(0)
    np.testing.assert_array_equal(x.sum(0).numpy(), e1)


def test_first_axis_sum_gradient_and_other_dtypes():
    rng = np.random.default_rng(3)
    ref = rng.standard_normal((64, 256)).astype(np.float32)
    w = tp.tensor(ref, requires_grad=True)
    g = rng.standard_normal(256).astype(np.float32)
    (w.sum(0) * tp.tensor(g)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.broadcast_to(g, ref.shape))
    # float16 and integers keep their own rules (float32 accumulation; int64 result)
    h = tp.tensor(ref.astype(np.float16)).sum(0)
    assert h.dtype == tp.float16
    np.testing.assert_allclose(h.numpy(), ref.astype(np.float16).astype(np.float32).sum(0),
                               rtol=2e-3, atol=2e-2)
    i = tp.tensor(np.arange(64 * 256, dtype=np.int32).reshape(64, 256)).sum(0)
    assert i.dtype == tp.int64
    np.testing.assert_array_equal(i.numpy(), np.arange(64 * 256).reshape(64, 256).sum(0))


_SPECIALS = np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -1.5, 2.5, 1e-40, -1e-40],
                     np.float64)


def _specials(n, dtype):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(dtype)
    a[:len(_SPECIALS)] = _SPECIALS[:n].astype(dtype)
    return a


def _bits(a):
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _torch_relu(a):
    """torch's relu, ``x < 0 ? 0 : x``: NaN (its bits) passes, -0.0 stays -0.0 (session 46)."""
    return np.where(a < 0, a.dtype.type(0), a)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("n", [10, 2047, 2048, 16384, 65536, 65537, 70000])
def test_relu_is_torchs_rule_bit_for_bit(dtype, n):
    a = _specials(n, dtype)
    shapes = [(n,)] + ([(n // 64, 64)] if n % 64 == 0 else [])
    for shape in shapes:
        arr = a.reshape(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("error")    # quiet about NaN, as every kernel
            r = tp.relu(tp.tensor(arr))
        e = _torch_relu(arr)
        assert r.shape == shape and r.dtype == tp.tensor(arr).dtype
        np.testing.assert_array_equal(_bits(r.numpy()), _bits(e))


def test_relu_views_and_the_shared_zeros_stay_zero():
    ref = _specials(64 * 256, np.float32).reshape(64, 256)
    x = tp.tensor(ref)
    for v, e in [(x.t(), ref.T), (x[:, ::2], ref[:, ::2]), (x[::2], ref[::2]), (x[1:], ref[1:])]:
        np.testing.assert_array_equal(_bits(tp.relu(v).numpy()), _bits(_torch_relu(e)))
    # results are fresh, writable tensors: writing one never reaches the zeros the next reads
    r = tp.relu(tp.tensor(-np.ones((64, 256), np.float32)))
    r.add_(5)
    r2 = tp.relu(tp.tensor(-np.ones((64, 256), np.float32)))
    assert float(r2.abs().sum()) == 0.0 and float(r.sum()) == 5 * 64 * 256
    # relu_ (in place) and the autograd path give the same values
    y = tp.tensor(ref.copy())
    y.relu_()
    np.testing.assert_array_equal(_bits(y.numpy()), _bits(_torch_relu(ref)))
    w = tp.tensor(np.where(np.isfinite(ref), ref, 1.0).astype(np.float32), requires_grad=True)
    tp.relu(w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), (w.detach().numpy() > 0).astype(np.float32))


def test_relu_other_dtypes_keep_their_rules():
    i = tp.tensor(np.arange(-5000, 5000, dtype=np.int64))
    r = tp.relu(i)
    assert r.dtype == tp.int64
    np.testing.assert_array_equal(r.numpy(), np.maximum(np.arange(-5000, 5000), 0))
    with pytest.raises(RuntimeError, match="Boolean"):
        tp.relu(tp.tensor(np.zeros(4096, bool)))
    try:
        b = tp.tensor(_specials(4096, np.float32)).to(tp.bfloat16)
    except (ImportError, TypeError, RuntimeError):
        return   # no bfloat16 on this install
    rb = tp.relu(b)
    assert rb.dtype == tp.bfloat16
    np.testing.assert_array_equal(rb.float().numpy(), np.maximum(b.float().numpy(), 0))


def test_relu_and_column_sums_from_threads():
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((64, 256)).astype(dt) for dt in ("float32", "float64") * 2]
    expected = [(np.maximum(a, 0), a.astype(np.float64).sum(0)) for a in arrays]
    errors = []

    def work(k):
        try:
            x = tp.tensor(arrays[k])
            for _ in range(50):
                np.testing.assert_array_equal(tp.relu(x).numpy(), expected[k][0])
                np.testing.assert_allclose(x.sum(0).numpy(), expected[k][1], rtol=1e-4,
                                           atol=1e-3)
        except Exception as e:   # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(arrays))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_last_axis_sum_of_3d_views_matches_numpy(dtype):
    rng = np.random.default_rng(11)
    ref = rng.standard_normal((4, 64, 256)).astype(dtype)
    x = tp.tensor(ref)
    tol = dict(rtol=1e-5, atol=1e-3) if dtype == "float32" else dict(rtol=1e-12, atol=1e-9)
    for v, e in [(x, ref), (x.permute(0, 2, 1), ref.transpose(0, 2, 1)),
                 (x.permute(2, 1, 0), ref.transpose(2, 1, 0)), (x[:, :, ::2], ref[:, :, ::2]),
                 (x[:, ::2], ref[:, ::2])]:
        for keepdim in (False, True):
            r = v.sum(-1, keepdim=keepdim)
            exp = e.astype(np.float64).sum(-1, keepdims=keepdim)
            assert r.shape == exp.shape
            np.testing.assert_allclose(r.numpy(), exp, **tol)
        np.testing.assert_allclose(v.mean(-1).numpy(), e.astype(np.float64).mean(-1), **tol)
