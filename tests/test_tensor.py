"""``tensorplay.Tensor`` and the factories: the SPEC §2 surface, with torch's semantics."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp

ALL_DTYPES = [tp.float16, tp.float32, tp.float64, tp.int8, tp.int16, tp.int32, tp.int64,
              tp.uint8, tp.bool]


# -- metadata -----------------------------------------------------------------------------------
def test_metadata():
    x = tp.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert x.dtype is tp.float32 and x.device == tp.device("cpu") and x.device.type == "cpu"
    assert x.ndim == 3 and x.dim() == 3 and x.numel() == 24
    assert x.stride() == (12, 4, 1) and x.stride(0) == 12 and x.stride(-1) == 1
    assert x.storage_offset() == 0 and x.is_contiguous()
    assert x.requires_grad is False and x.grad is None and x.grad_fn is None and x.is_leaf
    assert x._version == 0
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(3)
    s = tp.tensor(3.5)
    assert s.shape == () and s.ndim == 0 and s.numel() == 1 and s.stride() == ()


def test_tensor_cannot_be_constructed_directly():
    with pytest.raises(TypeError, match="tensorplay.tensor"):
        tp.Tensor([1, 2])


# -- factories ----------------------------------------------------------------------------------
def test_tensor_infers_dtype_like_torch():
    assert tp.tensor([1, 2]).dtype is tp.int64
    assert tp.tensor([1, 2.5]).dtype is tp.float32
    assert tp.tensor([True, False]).dtype is tp.bool
    assert tp.tensor([[1, 2], [3, 4]]).shape == (2, 2)
    assert tp.tensor(np.zeros(3, dtype=np.int16)).dtype is tp.int16
    assert tp.tensor([1, 2], dtype=tp.float64).dtype is tp.float64
    a = np.arange(3.0)
    t = tp.tensor(a)
    a[0] = 9
    assert t.tolist() == [0.0, 1.0, 2.0], "tensor() copies"


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_factories_for_every_dtype(dt):
    for t in (tp.zeros(2, 3, dtype=dt), tp.ones((2, 3), dtype=dt), tp.empty(2, 3, dtype=dt),
              tp.full((2, 3), 1, dtype=dt)):
        assert t.dtype is dt and t.shape == (2, 3)
    assert tp.ones(2, dtype=dt).tolist() == [1, 1]
    assert tp.zeros(2, dtype=dt).numpy().dtype == np.dtype(dt.name)
    x = tp.ones(3, dtype=dt)
    for f in (tp.zeros_like, tp.ones_like, tp.empty_like):
        assert f(x).dtype is dt and f(x).shape == (3,)
    if dt.is_floating_point:
        assert tp.rand(4, dtype=dt).dtype is dt and tp.randn(4, dtype=dt).dtype is dt


def test_bfloat16_on_cpu_is_a_clear_error():
    import importlib.util   # with ml_dtypes installed the cpu backend has bfloat16 (test_bf16.py)
    if importlib.util.find_spec("ml_dtypes") is not None:
        pytest.skip("ml_dtypes is installed, so the cpu backend has bfloat16 (see test_bf16.py)")
    for make in (lambda: tp.zeros(2, dtype=tp.bfloat16), lambda: tp.tensor([1.0], dtype=tp.bfloat16),
                 lambda: tp.ones(2).to(tp.bfloat16)):
        with pytest.raises(TypeError, match="bfloat16.*float16 or float32"):
            make()
    # fake tensors do not need a backend: bfloat16 works there
    with tp.fake.FakeTensorMode():
        assert tp.zeros(2, dtype=tp.bfloat16).dtype is tp.bfloat16


def test_full_arange_rand_and_like():
    tp.manual_seed(0)
    assert tp.full((2,), 3).dtype is tp.int64 and tp.full((2,), 3.0).dtype is tp.float32
    assert tp.full((2,), True).dtype is tp.bool
    assert tp.arange(5).tolist() == [0, 1, 2, 3, 4] and tp.arange(5).dtype is tp.int64
    assert tp.arange(1, 2, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert tp.arange(5, 0, -2).tolist() == [5, 3, 1]
    with pytest.raises(RuntimeError, match="step"):
        tp.arange(0, 5, 0)
    x = tp.tensor([[1, 2]], dtype=tp.int32)
    assert tp.full_like(x, 7).tolist() == [[7, 7]] and tp.full_like(x, 7).dtype is tp.int32
    assert tp.zeros_like(x, dtype=tp.float64).dtype is tp.float64
    r = tp.rand(1000)
    assert 0.0 <= r.amin().item() and r.amax().item() < 1.0
    n = tp.randn(4000, dtype=tp.float64)
    assert abs(n.mean().item()) < 0.1 and abs(n.std().item() - 1.0) < 0.1
    assert tp.rand_like(tp.zeros(2, 2)).shape == (2, 2) and tp.randn_like(n).dtype is tp.float64


def test_manual_seed_makes_random_reproducible():
    tp.manual_seed(7)
    a, b = tp.rand(5).tolist(), tp.randn(5).tolist()
    tp.manual_seed(7)
    assert tp.rand(5).tolist() == a and tp.randn(5).tolist() == b
    tp.manual_seed(8)
    assert tp.rand(5).tolist() != a


def test_factory_requires_grad():
    x = tp.zeros(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        tp.zeros(2, dtype=tp.int64, requires_grad=True)


# -- numpy / dlpack -----------------------------------------------------------------------------
def test_from_numpy_shares_memory_both_ways():
    a = np.zeros(3, dtype=np.float32)
    t = tp.from_numpy(a)
    assert t.dtype is tp.float32
    t[1] = 5.0
    assert a[1] == 5.0
    a[2] = 7.0
    assert t.tolist() == [0.0, 5.0, 7.0]
    assert t.numpy() is not None and np.shares_memory(t.numpy(), a)


def test_from_numpy_keeps_strides_of_non_contiguous_arrays():
    a = np.arange(12.0).reshape(3, 4)
    t = tp.from_numpy(a[:, 1::2])
    assert t.shape == (3, 2) and t.stride() == (4, 2) and not t.is_contiguous()
    t.t()[1, 2] = -1.0
    assert a[2, 3] == -1.0
    u = tp.from_numpy(a.T)
    assert u.stride() == (1, 4)
    u.add_(1)
    assert a[0, 0] == 1.0
    r = tp.from_numpy(a[::-1])          # negative strides cannot alias: copied
    assert r.tolist() == a[::-1].tolist()
    with pytest.raises(TypeError, match="numpy.ndarray"):
        tp.from_numpy([1, 2])


def test_dlpack_round_trip_with_numpy():
    x = tp.arange(6, dtype=tp.float64).reshape(2, 3)
    a = np.from_dlpack(x)
    assert a.shape == (2, 3) and a.dtype == np.float64
    # NumPy < 2 marks every DLPack import read-only (the protocol had no read-only flag before
    # DLPack 1.0); NumPy >= 2 keeps a writable producer writable.
    assert a.flags.writeable == (np.lib.NumpyVersion(np.__version__) >= "2.0.0")
    x.add_(1.0)
    assert a[1, 2] == 6.0, "np.from_dlpack(tensor) shares memory"
    if a.flags.writeable:
        a[0, 0] = 42.0
        assert x[0, 0].item() == 42.0, "np.from_dlpack(tensor) shares memory both ways"
    b = np.arange(4, dtype=np.int32)
    t = tp.from_dlpack(b)
    assert t.dtype is tp.int32 and t.tolist() == [0, 1, 2, 3]
    b[3] = 9
    assert t[3].item() == 9, "from_dlpack shares memory"
    back = tp.from_dlpack(x)
    assert back.tolist() == x.tolist()
    back[1, 1] = -3.0
    assert x[1, 1].item() == -3.0
    assert x.__dlpack_device__() == (1, 0)


def test_conversions():
    x = tp.tensor([[1.5, 2.5]])
    assert x.tolist() == [[1.5, 2.5]]
    assert tp.tensor(3).item() == 3 and isinstance(tp.tensor(3).item(), int)
    assert x[0, 1].item() == 2.5
    with pytest.raises(RuntimeError, match="2 elements"):
        x.item()
    assert float(tp.tensor(2.0)) == 2.0 and int(tp.tensor(3)) == 3 and bool(tp.tensor(True))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(tp.tensor([1, 2]))
    assert isinstance(x.numpy(), np.ndarray)
    with pytest.raises(RuntimeError, match="requires grad"):
        tp.ones(2, requires_grad=True).numpy()


def test_to_and_cpu():
    x = tp.tensor([1.7, -2.2])
    assert x.to(tp.float32) is x and x.to("cpu") is x and x.cpu() is x
    y = x.to(tp.int32)
    assert y.dtype is tp.int32 and y.tolist() == [1, -2]
    with pytest.raises(TypeError, match="not the string 'float64'"):   # as torch refuses it
        x.to("float64")
    assert x.to(tp.device("cpu"), tp.float64).dtype is tp.float64
    assert x.to(dtype=tp.float16).dtype is tp.float16
    assert x.to(tp.zeros(1, dtype=tp.float64)).dtype is tp.float64
    assert x.to(np.float64).dtype is tp.float64 and x.to(np.int16).dtype is tp.int16
    # Python's float is float64 (as torch: dtype=float means torch.float64)
    assert x.to(float).dtype is tp.float64 and x.to(int).dtype is tp.int64
    assert x.to(bool).dtype is tp.bool and tp.zeros(2, dtype=float).dtype is tp.float64
    c = x.to(tp.float32, copy=True)
    assert c is not x and c._storage is not x._storage
    assert x.double().dtype is tp.float64 and x.half().dtype is tp.float16
    assert x.long().dtype is tp.int64 and x.int().dtype is tp.int32 and x.bool().dtype is tp.bool
    if not tp.plugins.device_status("cuda")[0]:   # on a GPU machine the move simply works
        with pytest.raises(Exception, match="cuda"):
            x.to("cuda")


def test_clone_detach_contiguous():
    x = tp.arange(6.0).reshape(2, 3)
    c = x.clone()
    assert c._storage is not x._storage and c.tolist() == x.tolist()
    d = x.detach()
    assert d._storage is x._storage and not d.requires_grad
    assert x.contiguous() is x
    t = x.t()
    tc = t.contiguous()
    assert not t.is_contiguous() and tc.is_contiguous() and tc.stride() == (2, 1)
    assert tc.tolist() == t.tolist()


def test_new_factories_follow_self():
    x = tp.ones(2, dtype=tp.float64)
    for t in (x.new_zeros(2, 3), x.new_zeros((2, 3)), x.new_ones([2, 3]), x.new_empty(2, 3)):
        assert t.shape == (2, 3) and t.dtype is tp.float64
    assert x.new_zeros(2).tolist() == [0.0, 0.0] and x.new_ones(1).tolist() == [1.0]
    assert x.new_zeros(2, dtype=tp.int8).dtype is tp.int8
    assert x.new_full((2,), 4).tolist() == [4.0, 4.0]
    assert x.new_tensor([1, 2]).dtype is tp.float64


# -- in-place ops and _version ------------------------------------------------------------------
def test_inplace_ops_bump_version_and_return_self():
    x = tp.zeros(3)
    v = x._version
    for call, want in ((lambda: x.fill_(2.0), [2.0] * 3), (lambda: x.add_(1), [3.0] * 3),
                       (lambda: x.mul_(2), [6.0] * 3), (lambda: x.copy_(tp.tensor([1.0, 2, 3])),
                                                        [1.0, 2.0, 3.0]),
                       (lambda: x.add_(tp.tensor([1.0, 1, 1])), [2.0, 3.0, 4.0]),
                       (lambda: x.mul_(tp.tensor(0.5)), [1.0, 1.5, 2.0]),
                       (lambda: x.zero_(), [0.0] * 3)):
        r = call()
        assert r is x and x.tolist() == want
        assert x._version > v
        v = x._version
    x += 1
    x *= 3
    x -= 1
    x /= 2
    assert x.tolist() == [1.0, 1.0, 1.0] and x._version == v + 4


def test_copy_casts_and_broadcasts():
    x = tp.zeros(2, 3, dtype=tp.int32)
    x.copy_(tp.tensor([1.9, 2.1, -3.7]))
    assert x.tolist() == [[1, 2, -3], [1, 2, -3]]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        tp.zeros(3).copy_(tp.zeros(2, 3))


# -- operators ----------------------------------------------------------------------------------
def test_arithmetic_operators_and_reflected_scalars():
    x = tp.tensor([1.0, 2.0, 4.0])
    assert (x + 1).tolist() == [2.0, 3.0, 5.0] and (1 + x).tolist() == [2.0, 3.0, 5.0]
    assert (x - 1).tolist() == [0.0, 1.0, 3.0] and (1 - x).tolist() == [0.0, -1.0, -3.0]
    assert (x * 2).tolist() == [2.0, 4.0, 8.0] and (2 * x).tolist() == [2.0, 4.0, 8.0]
    assert (x / 2).tolist() == [0.5, 1.0, 2.0] and (2 / x).tolist() == [2.0, 1.0, 0.5]
    assert (x ** 2).tolist() == [1.0, 4.0, 16.0] and (2 ** x).tolist() == [2.0, 4.0, 16.0]
    assert (-x).tolist() == [-1.0, -2.0, -4.0] and (+x) is x
    assert abs(tp.tensor([-1, 2])).tolist() == [1, 2]
    assert (x + x).tolist() == [2.0, 4.0, 8.0] and (x - x).tolist() == [0.0] * 3
    assert (x.add(x, alpha=2)).tolist() == [3.0, 6.0, 12.0]
    assert (x.sub(1, alpha=2)).tolist() == [-1.0, 0.0, 2.0]
    assert (1.5 + tp.tensor([1, 2])).dtype is tp.float32


def test_comparison_operators():
    x = tp.tensor([1, 2, 3])
    assert (x == 2).tolist() == [False, True, False] and (x != 2).tolist() == [True, False, True]
    assert (x < 2).tolist() == [True, False, False] and (x <= 2).tolist() == [True, True, False]
    assert (x > 2).tolist() == [False, False, True] and (x >= 2).tolist() == [False, True, True]
    assert (2 > x).tolist() == [True, False, False] and (2 == x).tolist() == [False, True, False]
    assert (x == tp.tensor([1, 0, 3])).tolist() == [True, False, True]
    assert hash(x) == hash(x) and len({x, x}) == 1
    assert (x == None) is False and (x != None) is True  # noqa: E711 - torch's answer
    assert x in [None, "a", x] and [None, x].index(x) == 1


def test_reductions():
    x = tp.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    assert x.sum().item() == 21.0 and x.sum(0).tolist() == [5.0, 7.0, 9.0]
    assert x.sum(1, keepdim=True).shape == (2, 1) and x.sum((0, 1)).item() == 21.0
    assert tp.sum(x, 1).tolist() == [9.0, 12.0] and x.sum(-1).tolist() == [9.0, 12.0]
    assert x.mean().item() == 3.5 and x.mean(1).tolist() == [3.0, 4.0]
    assert x.amax().item() == 6.0 and x.amax(1).tolist() == [5.0, 6.0]
    assert x.amax(0, keepdim=True).shape == (1, 3) and tp.amax(x, 1).tolist() == [5.0, 6.0]
    assert x.max().item() == 6.0
    v, i = x.max(1)
    assert v.tolist() == [5.0, 6.0] and i.tolist() == [1, 2]
    assert tp.tensor([True, True, False]).sum().item() == 2
    assert tp.tensor([1, 2], dtype=tp.int8).sum().dtype is tp.int64
    assert x.sum(dtype=tp.float64).dtype is tp.float64


def test_matmul_and_elementwise_math():
    a = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    v = tp.tensor([1.0, -1.0])
    assert (a @ a).tolist() == [[7.0, 10.0], [15.0, 22.0]]
    assert (a @ v).tolist() == [-1.0, -1.0] and (v @ a).tolist() == [-2.0, -2.0]
    assert (v @ v).item() == 2.0 and a.matmul(v).tolist() == [-1.0, -1.0]
    assert tp.matmul(tp.ones(5, 2, 3), tp.ones(3, 4)).shape == (5, 2, 4)
    x = tp.tensor([-1.0, 0.0, 2.0])
    assert x.relu().tolist() == [0.0, 0.0, 2.0] and x.abs().tolist() == [1.0, 0.0, 2.0]
    np.testing.assert_allclose(x.exp().numpy(), np.exp([-1.0, 0.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(x.tanh().numpy(), np.tanh([-1.0, 0.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(x.sigmoid().numpy(), 1 / (1 + np.exp([1.0, 0.0, -2.0])),
                               rtol=1e-6)
    np.testing.assert_allclose(tp.tensor([4.0]).sqrt().numpy(), [2.0])
    np.testing.assert_allclose(tp.tensor([1.0]).log().numpy(), [0.0])
    assert x.pow(2).tolist() == [1.0, 0.0, 4.0]
    assert tp.pow(x, tp.tensor([2.0, 2.0, 3.0])).tolist() == [1.0, 0.0, 8.0]


def test_where_cat_stack_softmax():
    x = tp.tensor([[1.0, -2.0], [-3.0, 4.0]])
    assert tp.where(x > 0, x, 0.0).tolist() == [[1.0, 0.0], [0.0, 4.0]]
    assert x.where(x > 0, tp.zeros(2)).tolist() == [[1.0, 0.0], [0.0, 4.0]]
    assert tp.cat([x, x]).shape == (4, 2) and tp.cat([x, x], dim=1).shape == (2, 4)
    assert tp.cat((x, tp.ones(1, 2))).tolist()[-1] == [1.0, 1.0]
    assert tp.stack([x, x]).shape == (2, 2, 2) and tp.stack([x, x], -1).shape == (2, 2, 2)
    s = x.softmax(-1)
    np.testing.assert_allclose(s.sum(-1).numpy(), [1.0, 1.0], rtol=1e-6)
    assert tp.softmax(x, 0).shape == (2, 2)
    assert tp.softmax(tp.tensor([1000.0, 1000.0]), 0).tolist() == [0.5, 0.5], "stable"
    with pytest.raises(RuntimeError, match="stack"):
        tp.stack([tp.ones(2), tp.ones(3)])


def test_repr_shows_values_and_dtype():
    assert repr(tp.tensor([1, 2])) == "tensor([1, 2])"
    assert "dtype=tensorplay.float64" in repr(tp.zeros(1, dtype=tp.float64))
    assert "requires_grad=True" in repr(tp.zeros(1, requires_grad=True))
