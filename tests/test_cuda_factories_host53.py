"""The host path of the factories (issue 32 item 3): the factories' inline dispatch of tp::empty
and tp::full, the device spelled as a string, the cuda plugin's allocation kernels with one GPU
and the fill pattern's memo.

No GPU needed: the cuda kernels are called with the CuPy allocation and the fill replaced by
recorders (as tests/test_cuda_host_path.py does for the ufuncs); the factories' dispatch is
checked on cpu, fake, capture and a backend registered (and removed) after the first call.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import _factories, fake
from tensorplay._device import canonical
from tensorplay.errors import DeviceUnavailableError
from tensorplay.testing.backend import MockBackend


# -- the factories' dispatch, inline --------------------------------------------------------------

def _factories_on(device):
    x = tp.zeros(2, 3, device=device)
    return [tp.empty(2, 3, device=device), tp.zeros(2, 3, device=device),
            tp.ones((2, 3), device=device), tp.full((2, 3), 2.5, device=device),
            tp.empty_like(x), tp.zeros_like(x), tp.ones_like(x), tp.full_like(x, 2.5),
            x.new_empty((2, 3)), x.new_zeros((2, 3)), x.new_ones((2, 3))]


def test_a_backend_registered_later_is_reached_and_its_removal_refused_as_before():
    """The factories read the op's table themselves: a device first used after import (a table
    miss: the op's own path loads it) is then served from the table; once its backend is gone
    the call is refused by the op, as before."""
    with MockBackend("fact53", device_arrays=True) as be:
        for _ in range(2):     # a miss (first use), then the table
            for t in _factories_on("fact53"):
                assert t.device == tp.device("fact53") and tuple(t.shape) == (2, 3)
        assert be.allocations
    for f in (lambda: tp.empty(2, device="fact53"), lambda: tp.zeros(2, device="fact53"),
              lambda: tp.full((2,), 1.0, device="fact53")):
        with pytest.raises((ValueError, DeviceUnavailableError, tp.errors.DispatchError)):
            f()


def test_the_mode_is_read_per_call_and_per_thread():
    """Fake mode is the calling thread's: another thread's factories stay real meanwhile."""
    seen = {}

    def other():
        seen["real"] = [t._data is not None for t in _factories_on("cpu")]

    with fake.FakeTensorMode():
        assert all(t._data is None for t in _factories_on("cpu")[:4])
        th = threading.Thread(target=other)
        th.start()
        th.join()
    assert seen["real"] == [True] * 11
    assert all(t._data is not None for t in _factories_on("cpu"))


def test_capture_records_the_factories_of_the_inline_dispatch():
    def f(x):
        return x + tp.zeros(3) + tp.full((3,), 2.0) + tp.empty_like(x).fill_(1.0) + tp.ones(3)
    cf = tp.compile(f)
    x = tp.ones(3)
    np.testing.assert_array_equal(cf(x).numpy(), [5.0, 5.0, 5.0])
    np.testing.assert_array_equal(cf(tp.full((3,), 2.0)).numpy(), [6.0, 6.0, 6.0])


@pytest.mark.parametrize("spelling", ["cpu", "cpu:0", "cpu:1", "meta", "cuda", "cuda:1"])
def test_a_string_device_is_the_device_canonical_gives(spelling):
    tp.device(spelling)          # seen once: Device's cache holds it
    for _ in range(2):
        assert _factories._dev(spelling) is canonical(spelling)


@pytest.mark.parametrize("spelling", [" CPU ", "tpu", "cuda:x", "", 3.5])
def test_bad_device_strings_keep_their_errors(spelling):
    def err(f):
        with pytest.raises(Exception) as e:
            f()
        return type(e.value), str(e.value)
    want = err(lambda: canonical(spelling))
    for _ in range(2):
        assert err(lambda: _factories._dev(spelling)) == want
        assert err(lambda: tp.empty(2, device=spelling)) == want
        assert err(lambda: tp.zeros(2, device=spelling)) == want
        assert err(lambda: tp.full((2,), 1.0, device=spelling)) == want


def test_full_sizes_keep_their_spellings_and_errors():
    for size in ((2, 3), [2, 3], (np.int64(2), 3), ()):
        want = (2, 3) if size != () else ()
        assert tuple(tp.full(size, 1.5).shape) == want
    for size in ((2, 3.0), (2, None), [True, 2], 4):     # 4: a bare int, refused as torch
        with pytest.raises(TypeError, match="full"):
            tp.full(size, 1.5)
    with pytest.raises(TypeError, match="requires_grad"):
        tp.full((2,), 1.5, requires_grad=1)
    assert tp.full((2,), 1.5, requires_grad=True).requires_grad


def test_like_factories_keep_their_rules_beside_the_common_call():
    """The common call (row-major real tensor, nothing else given) and its neighbours: a
    transposed or sliced input keeps preserve_format's layout, requires_grad is honoured and
    checked, a non-tensor is refused in torch's words, values are right."""
    x = tp.arange(6, dtype=tp.float32).reshape(2, 3)
    for f, v in ((tp.zeros_like, 0), (tp.ones_like, 1), (lambda t, **k: tp.full_like(t, 2.5, **k),
                                                         2.5), (tp.empty_like, None)):
        r = f(x)
        assert r.stride() == (3, 1) and r.dtype is tp.float32 and not r.requires_grad
        if v is not None:
            assert r.numpy().tolist() == [[v] * 3] * 2
        assert f(x.t()).stride() == x.t().stride()
        assert f(x[:, ::2]).stride() == (2, 1)
        assert f(x, requires_grad=True).requires_grad
        assert f(x, dtype=tp.float64).dtype is tp.float64
        with pytest.raises(TypeError, match="requires_grad"):
            f(x, requires_grad=1)
        with pytest.raises(TypeError, match="must be Tensor"):
            f([1.0, 2.0])


# -- the cuda plugin's allocation kernels ---------------------------------------------------------

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
tensorplay_cuda = pytest.importorskip("tensorplay_cuda")
from tensorplay_cuda import backend as B  # noqa: E402
from tensorplay_cuda import fill as F  # noqa: E402


def _kernels(monkeypatch, n_gpus=1):
    calls = []
    monkeypatch.setattr(B, "_new_array", lambda shape, dt: calls.append(("new", shape, dt)) or
                        "array")
    monkeypatch.setattr(F, "filled", lambda cp, shape, value, dt:
                        calls.append(("filled", shape, value, dt)) or "filled")
    be = B.CUDABackend()
    be._count = n_gpus
    return be, be._allocation_kernels(), calls


def test_one_gpu_allocates_in_the_kernel(monkeypatch):
    be, k, calls = _kernels(monkeypatch)
    d0 = tp.device("cuda", 0)
    nd = be.native_dtype(tp.float32)       # (cached from now on)
    assert k["empty"]([2, 3], dtype=tp.float32, device=d0) == "array"
    assert k["full"]([4], 0, dtype=tp.float32, device=d0) == "filled"
    assert k["full"]([], -0.0, dtype=tp.float32, device=d0) == "filled"
    assert calls == [("new", [2, 3], nd), ("filled", [4], 0, nd), ("filled", [], -0.0, nd)]
    assert k["empty"]._tp_fp_free     # (the reference kernel's mark: an allocation)
    # the backend's kernels are these (in place of the reference ones)
    bound = be.kernels()
    assert bound["empty"].__code__ is k["empty"].__code__
    assert bound["full"].__code__ is k["full"].__code__
    # the backend's own methods allocate the same way (autograd's seeds, other callers)
    calls.clear()
    assert be.empty((2,), tp.float32, d0) == "array" and be.full((2,), 1, tp.float32, d0) == \
        "filled"
    assert calls == [("new", (2,), nd), ("filled", (2,), 1, nd)]


def test_an_index_this_machine_lacks_is_refused_as_before(monkeypatch):
    be, k, calls = _kernels(monkeypatch)
    be.native_dtype(tp.float32)
    for f in (lambda: k["empty"]([2], dtype=tp.float32, device=tp.device("cuda", 1)),
              lambda: k["full"]([2], 1.0, dtype=tp.float32, device=tp.device("cuda", 1))):
        with pytest.raises(DeviceUnavailableError, match="cuda:1"):
            f()
    assert calls == []


def test_an_uncached_dtype_goes_to_the_backend_method(monkeypatch):
    be, k, calls = _kernels(monkeypatch)
    seen = []
    monkeypatch.setattr(be, "empty", lambda *a: seen.append(a) or "e")
    monkeypatch.setattr(be, "full", lambda *a: seen.append(a) or "f")
    k = be._allocation_kernels()           # bound after the methods are replaced
    be._native_cache.pop(tp.float64, None)
    d0 = tp.device("cuda", 0)
    assert k["empty"]([2, 3], dtype=tp.float64, device=d0) == "e"
    assert k["full"]([2], 7, dtype=tp.float64, device=d0) == "f"
    assert seen == [((2, 3), tp.float64, d0), ((2,), 7, tp.float64, d0)] and calls == []


def test_several_gpus_keep_the_reference_kernels(monkeypatch):
    be, k, _ = _kernels(monkeypatch, n_gpus=2)
    assert k is None


# -- the fill pattern's memo ----------------------------------------------------------------------

@pytest.mark.parametrize("native", [np.float16, np.float32, np.float64, np.int8, np.uint8,
                                    np.int32, np.int64, np.bool_])
def test_the_pattern_is_numpys_bytes_whatever_was_asked_before(native):
    F._patterns.clear()
    values = [1, 1.0, True, -0.0, 0.0, 0, False, 2, 2.5, -1, 3.0, 255, 0.5]
    for order in (values, values[::-1]):
        F._patterns.clear()
        for v in order:
            try:
                b = np.array(v, dtype=native).tobytes()
            except OverflowError:      # (NumPy 2: -1 into uint8...; the core refuses it first)
                continue
            b = b * (16 // len(b))
            want = (int.from_bytes(b[:8], "little"), int.from_bytes(b[8:], "little"))
            assert F._pattern(v, np.dtype(native))[:2] == want, (v, native)
