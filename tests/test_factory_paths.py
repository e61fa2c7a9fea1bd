"""The factories' fast paths (canonical dtype/device/size arguments) and their neighbours: other
spellings of the same arguments, fake and capture modes, meta, default dtype changes,
requires_grad and a backend with several devices give the same results as before."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import fake
from tensorplay.testing.backend import MockBackend

F32 = tp.float32


def _check(t, shape, dtype, device="cpu", value=None):
    assert tuple(t.shape) == tuple(shape)
    assert t.dtype is dtype
    assert t.device == tp.device(device)
    if value is not None:
        np.testing.assert_array_equal(t.numpy(), np.full(shape, value))


@pytest.mark.parametrize("size", [(2, 3), ([2, 3],), ((2, 3),), (np.int64(2), 3),
                                  ([np.int32(2), np.int64(3)],)])
def test_sizes_spelled_every_way(size):
    _check(tp.empty(*size), (2, 3), F32)
    _check(tp.zeros(*size), (2, 3), F32, value=0)
    _check(tp.ones(*size), (2, 3), F32, value=1)


def test_single_int_and_zero_dim():
    _check(tp.empty(5), (5,), F32)
    _check(tp.zeros(()), (), F32, value=0)
    _check(tp.full([], 3.5), (), F32, value=3.5)
    _check(tp.full((4,), 2), (4,), tp.int64, value=2)
    with pytest.raises(TypeError, match=r"full\(\): argument 'size' \(position 1\) must be tuple "
                                        r"of ints, not int"):
        tp.full(4, 2)          # as torch: full's size is a sequence, never a bare int


def test_non_int_sizes_are_refused():
    with pytest.raises(TypeError):
        tp.empty(2.0, 3)
    with pytest.raises(TypeError):
        tp.zeros([2, "3"])


@pytest.mark.parametrize("dtype", [tp.float64, float, np.dtype("float64")])
def test_dtype_spellings(dtype):
    for f in (tp.empty, tp.zeros, tp.ones):
        _check(f(2, dtype=dtype), (2,), tp.float64)
    _check(tp.full((2,), 1, dtype=dtype), (2,), tp.float64, value=1)
    x = tp.zeros(2)
    _check(tp.zeros_like(x, dtype=dtype), (2,), tp.float64, value=0)
    _check(x.new_ones(3, dtype=dtype), (3,), tp.float64, value=1)


def test_string_dtype_refused_as_before():
    with pytest.raises(TypeError):
        tp.empty(2, dtype="float32")
    with pytest.raises(TypeError):
        tp.zeros_like(tp.zeros(2), dtype="float32")


@pytest.mark.parametrize("device", ["cpu", tp.device("cpu"), "meta", tp.device("meta")])
def test_device_spellings(device):
    want = tp.device(device)
    for t in (tp.empty(2, device=device), tp.zeros(2, device=device),
              tp.full((2,), 1.0, device=device), tp.ones_like(tp.zeros(2), device=device)):
        assert t.device == want


def test_bad_device_refused():
    with pytest.raises(ValueError):
        tp.empty(2, device="tpu")
    with pytest.raises(ValueError):
        tp.zeros_like(tp.zeros(2), device="cuda:x")


def test_default_dtype_followed():
    prev = tp.get_default_dtype()
    tp.set_default_dtype(tp.float64)
    try:
        for t in (tp.empty(2), tp.zeros(2), tp.ones(2), tp.full((2,), 1.5)):
            assert t.dtype is tp.float64
    finally:
        tp.set_default_dtype(prev)
    assert tp.empty(2).dtype is prev


def test_like_and_new_keep_dtype_and_device():
    x = tp.zeros(2, 3, dtype=tp.int32)
    for t, v in ((tp.empty_like(x), None), (tp.zeros_like(x), 0), (tp.ones_like(x), 1),
                 (tp.full_like(x, 7), 7), (x.new_zeros(2, 3), 0), (x.new_ones((2, 3)), 1),
                 (x.new_full((2, 3), 7), 7), (x.new_empty([2, 3]), None)):
        _check(t, (2, 3), tp.int32, value=v)


@pytest.mark.parametrize("dt", [tp.float32, tp.float64, tp.float16, tp.bfloat16, tp.int64,
                                tp.int8, tp.uint8, tp.bool])
def test_zeros_and_full_every_dtype(dt):
    z = tp.zeros(3, dtype=dt)
    assert z.dtype is dt and not z.to(tp.float32).numpy().any()
    o = tp.full((3,), 1, dtype=dt)
    np.testing.assert_array_equal(o.to(tp.float32).numpy(), [1, 1, 1])
    assert tp.zeros_like(o).to(tp.float32).numpy().tolist() == [0, 0, 0]


def test_full_negative_zero_keeps_its_sign():
    t = tp.full((2,), -0.0)
    assert np.signbit(t.numpy()).all()


def test_requires_grad():
    for t in (tp.empty(2, requires_grad=True), tp.zeros(2, requires_grad=True),
              tp.ones(2, requires_grad=True), tp.full((2,), 1.0, requires_grad=True),
              tp.zeros_like(tp.zeros(2), requires_grad=True),
              tp.zeros(2).new_ones(2, requires_grad=True)):
        assert t.requires_grad and t.is_leaf
    assert not tp.zeros(2).requires_grad and not tp.empty_like(tp.zeros(2)).requires_grad


def test_fake_mode():
    with fake.FakeTensorMode():
        for t in (tp.empty(2, 3), tp.zeros(2, 3), tp.full((2, 3), 1.0)):
            assert t._data is None and tuple(t.shape) == (2, 3)
        f = tp.zeros(4)
        for t in (tp.empty_like(f), tp.ones_like(f), f.new_zeros(5)):
            assert t._data is None
    fr = fake.from_real(tp.zeros(2))
    assert tp.zeros_like(fr)._data is None and fr.new_empty(3)._data is None


def test_capture_records_factories():
    def f(x):
        return x + tp.ones_like(x) + x.new_zeros(x.shape) + tp.zeros(3)
    cf = tp.compile(f)
    x = tp.ones(3)
    np.testing.assert_array_equal(cf(x).numpy(), f(x).numpy())
    np.testing.assert_array_equal(cf(tp.full((3,), 2.0)).numpy(), [3.0, 3.0, 3.0])


def test_several_devices_take_the_given_index():
    with MockBackend("simf", device_count=2) as be:
        for d in (tp.device("simf", 1), "simf:1"):
            t = tp.empty(2, device=d)
            assert t.device == tp.device("simf", 1)
            z = tp.zeros_like(t)
            assert z.device == tp.device("simf", 1)
            assert t.new_ones(3).device == tp.device("simf", 1)
        assert be.allocations


@pytest.mark.parametrize("dt", [tp.float32, tp.bfloat16, tp.int64, tp.bool])
def test_fresh_results_are_ordinary_tensors(dt):
    """The allocation's result tensor (built without ``wrap`` on the common path) behaves as
    every other: row-major strides, own storage, views write through, in-place ops count."""
    for _ in range(2):   # the first call of a dtype may take wrap, the second the inline build
        for t in (tp.empty(2, 3, dtype=dt), tp.zeros(2, 3, dtype=dt),
                  tp.full((2, 3), 1, dtype=dt), tp.ones_like(tp.zeros(2, 3), dtype=dt)):
            assert t.stride() == (3, 1) and t.storage_offset() == 0 and t.is_contiguous()
            assert not t.requires_grad and t.grad_fn is None and t.is_leaf
            v0 = t._version
            t[0].fill_(1)
            assert t._version > v0
            assert t.to(tp.float32).numpy()[0].tolist() == [1, 1, 1]


def test_backend_with_its_own_allocation_is_wrapped():
    """A backend overriding ``empty``/``full`` (here returning Fortran-ordered arrays) gets its
    results through its ``wrap`` (made row-major), not the core's inline build."""
    class Fortran(MockBackend):
        def empty(self, shape, dtype, device):
            return self.np.empty(shape, dtype=self.native_dtype(dtype), order="F")

        def full(self, shape, value, dtype, device):
            return self.np.full(shape, value, dtype=self.native_dtype(dtype), order="F")

    with Fortran("fortf"):
        for _ in range(2):
            t = tp.zeros(2, 3, device="fortf")
            assert t.stride() == (3, 1)
            e = tp.empty(2, 3, device="fortf")
            assert e.stride() == (3, 1) and e.is_contiguous()
            f = tp.full((2, 3), 4.0, device="fortf")
            assert f.cpu().numpy().tolist() == [[4.0] * 3] * 2


@pytest.mark.parametrize("dt", [tp.float16, tp.float32, tp.float64, tp.int8, tp.int32,
                                tp.int64, tp.uint8])
@pytest.mark.parametrize("value", [0, 1, -1, 255, 300, 2**31, 2**63 - 1, 0.0, -0.0, 1.5, -2.7,
                                   65520.0, 1e40, float("inf"), float("-inf"), float("nan"),
                                   True, np.float32(2.5)])
def test_full_matches_numpy_full(dt, value):
    """``full``'s values are NumPy's ``full`` of the native dtype for every value the dtype can
    hold (edge values too); values it cannot hold are torch's ``RuntimeError`` ("value cannot be
    converted to type int8 without overflow"), not NumPy's wrap/garbage; negative ints into
    uint8 wrap as in torch."""
    nd = np.dtype(str(dt).split(".")[-1])
    v = value.item() if isinstance(value, np.generic) else value
    if nd.kind == "f":
        fits = not (v == v and abs(v) != float("inf")) or abs(v) <= float(np.finfo(nd).max)
    else:
        info = np.iinfo(nd)
        fits = v == v and abs(v) != float("inf") and info.min <= int(v) <= info.max
        if nd == np.uint8 and isinstance(v, int) and -255 <= v < 0:
            fits, v = True, v & 255
    if not fits:
        with pytest.raises(RuntimeError, match=f"{dt.name} without overflow"):
            tp.full((3,), value, dtype=dt)
        return
    with np.errstate(all="ignore"):
        want = np.full((3,), v, nd)
    got = tp.full((3,), value, dtype=dt).numpy()
    assert got.dtype == nd and got.tobytes() == want.tobytes()
