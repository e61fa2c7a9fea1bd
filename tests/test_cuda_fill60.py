"""``tensorplay_cuda.fill.filled``'s two paths, checked without a GPU: a value whose bytes are one
byte repeated (positive zeros, ``True``, every int8/uint8 value, -1 of every integer dtype) is
one ``cudaMemsetAsync`` of that byte, any other value one launch of the pattern kernel with
NumPy's bytes of the value -- the same bytes either way, as NumPy (and ``cupy.full``) convert.

A stand-in CuPy module records the memset and the launch (its arrays are no device memory; the
launch goes to a recording ``launchKernel``, the parameter block is read back).
"""

from __future__ import annotations

import math
import struct
import warnings

import numpy as np
import pytest

F = pytest.importorskip("tensorplay_cuda.fill")


class _Ptr:
    device_id = 0
    ptr = 0x7F0000001000

    def __init__(self, log):
        self.log = log

    def memset_async(self, value, size):
        self.log.append(("memset", value, size))


class _Array:
    def __init__(self, shape, native, log):
        self.nbytes = int(np.prod(shape, dtype=np.int64)) * native.itemsize
        self.data = _Ptr(log)


class _Stream:
    ptr = 0


class _Cuda:
    @staticmethod
    def get_current_stream(device_id=-1):
        return _Stream


class _CuPy:
    """What ``filled`` uses of CuPy: ``ndarray(shape, dtype)`` and the current stream."""

    cuda = _Cuda

    def __init__(self):
        self.log = []

    def ndarray(self, shape, native):
        return _Array(shape, native, self.log)


@pytest.fixture
def cp(monkeypatch):
    cp = _CuPy()

    def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        buf = F._PARAMS.block[0]
        cp.log.append(("launch", f, struct.unpack_from("=QQQq", buf.raw)))
    monkeypatch.setattr(F, "_launch", [launch])
    monkeypatch.setattr(F, "_functions", {0: (None, 0x1000)})
    monkeypatch.setattr(F, "_patterns", {})
    monkeypatch.setattr(F, "_LAST", (None, None, 0, 0, -1))
    F._PARAMS.ready.add(0)      # (this thread's first launch would go through CuPy's call)
    return cp


_NATIVES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float32,
            np.float64]
_VALUES = [True, False, 1, -1, 2, 255, 0x0101, 0x01010101, -0x01010102, 0.5, -0.0, 0.0, 0,
           math.nan, math.inf, -math.inf, 1.0]


@pytest.mark.parametrize("native", _NATIVES)
def test_a_repeated_byte_is_a_memset_of_it_and_any_other_value_the_kernel_with_numpys_bytes(
        cp, native):
    dt = np.dtype(native)
    for v in _VALUES * 2:          # twice: the memo and the last value's identity test too
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                b = np.array(v, dtype=dt).tobytes()
            except (OverflowError, ValueError, RuntimeWarning, DeprecationWarning):
                # nan into int, 255 into int8...: the core refuses those first (NumPy 1.x
                # warns, DeprecationWarning, where 2.x raises OverflowError)
                continue
        del cp.log[:]
        F.filled(cp, (3, 5), v, dt)
        nbytes = 15 * dt.itemsize
        if len(set(b)) == 1:
            assert cp.log == [("memset", b[0], nbytes)], (v, dt)
        else:
            full = b * (16 // len(b))
            want = (_Ptr.ptr, int.from_bytes(full[:8], "little"),
                    int.from_bytes(full[8:], "little"), nbytes)
            assert cp.log == [("launch", 0x1000, want)], (v, dt)


def test_an_empty_array_is_neither_filled_nor_launched(cp):
    for v in (0, 1, -1, 2.5):
        F.filled(cp, (0, 4), v, np.dtype(np.float32))
    assert cp.log == []
