"""Fill a fresh CuPy array with one value at memset speed (``zeros``, ``ones``, ``full``, ``*_like``).

Why not CuPy: ``cupy.full`` and ``ndarray.fill`` launch CuPy's elementwise copy kernel (one
element per thread, general indexing); on an H200 it filled 64 MB of float32 in 81 µs of GPU
time, where a ``cudaMemsetAsync`` takes 17.8 µs, torch's ``fill_`` 17.1 and the kernel below
17.4 (CUDA events, 2026-12-03; benchmarks/bench_cuda_factories.py has the per-call figures).
A fill does not need the element type at all, only its bit pattern: every element
size (1, 2, 4, 8 bytes) divides 16, so the array is a run of identical 16-byte blocks. Here:

* a positive zero (``0``, ``0.0``, ``False``) is one ``cudaMemsetAsync`` (as ``cupy.zeros``);
  so is any value whose pattern is one byte repeated (``True``, every ``int8``/``uint8``
  value, ``-1`` of every integer dtype: ``ones(dtype=bool)`` masks, ``full(..., -1)``
  indices), with that byte: the same bytes, without a kernel launch's host work;
* any other value, ``-0.0`` and NaN payloads included, is one launch of ``tp_fill16``: each thread
  stores the 16-byte pattern with 128-bit stores (grid-stride), and the first threads write the
  bytes after the last whole block. Fresh arrays from CuPy's pool are 256-byte aligned, so the
  vector stores are aligned.

The pattern is the value converted by NumPy to the array's dtype (``numpy.array(v, dtype)``: the
same rounding as ``cupy.full``; the core has range-checked the value), so results are bit-identical to CuPy's fill.
Nothing here imports CuPy (the caller passes it in).

The launch is one ``cuLaunchKernel`` (CuPy's ``driver.launchKernel``) with the four parameters
packed into a per-thread block, not ``RawKernel.__call__``, which converts every argument to a
CuPy ``CPointer`` first: that call cost ~10 µs of host time per fill on an H200 host (torch's
whole ``fill_`` ~5 µs). The same launcher (``launch_packed``: the per-thread block, the driver
call, a thread's first launch through CuPy, the kernels' function addresses per device) serves
the plugin's other CuPy-compiled kernels (``bcast.copy_broadcast``'s row fill).
"""

from __future__ import annotations

import ctypes
import math
import struct
import threading

import numpy

from .fresh import _FROM_TYPE, dtype_arg, route

_SOURCE = r"""
extern "C" __global__ void tp_fill16(ulonglong2* p, unsigned long long lo, unsigned long long hi,
                                     long long nbytes) {
    const long long n16 = nbytes >> 4;
    const long long step = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long first = i;
    const ulonglong2 v = make_ulonglong2(lo, hi);
    for (; i < n16; i += step) p[i] = v;
    // the bytes after the last whole 16-byte block (at most 15): byte k of the pattern
    const long long t = (n16 << 4) + first;
    if (first < 16 && t < nbytes) {
        const unsigned long long w = (first & 15) < 8 ? lo : hi;
        ((unsigned char*)p)[t] = (unsigned char)(w >> (8 * (first & 7)));
    }
}
"""

_THREADS = 256
_MAX_BLOCKS = 132 * 16          # enough resident blocks for an H200; the loop strides the rest
_BLOCK_BYTES = 16 * _THREADS    # what one block's threads write per pass, 16 bytes each
_kernel = []                    # [cupy.RawKernel], compiled on the first non-zero fill
# the fill kernel's device index -> (its cupy Function, the CUfunction address); other kernels
# launched by ``launch_packed``: (their name, device index) -> the same pair
_functions: dict = {}
_PACK = struct.Struct("=QQQq").pack_into     # p, lo, hi, nbytes: the kernel's parameters
# filled's allocation through fresh.route's two steps: the CuPy module it applies to, its
# ndarray class and the two steps (None until bind, or where fresh.route does not apply)
_CUPY = _ND = _NEW = _INIT = None


def bind(cupy) -> None:
    """Allocate ``filled``'s arrays for ``cupy`` (the module the backend passes it) through
    ``fresh.route``'s two steps where it applies (about 0.6 µs less host time per allocation
    than the constructor), inline in ``filled`` (no ``fresh.new_array_for`` frame: 0.2 µs less
    again on a CPU host); any other module given to ``filled`` keeps its ``ndarray``
    constructor. Called once, on import of the backend."""
    global _CUPY, _ND, _NEW, _INIT
    r = route(cupy)
    if r is not None:
        _ND, (_NEW, _INIT) = cupy.ndarray, r
        _CUPY = cupy


_SLOTS = 8      # 8-byte parameter slots per block: the most any kernel launched here takes


class _Params(threading.local):
    """This thread's parameter block: ``_SLOTS`` 8-byte slots and the array of their addresses
    that ``cuLaunchKernel`` takes (one per thread: ``launchKernel`` releases the GIL while the
    driver reads it; the driver reads as many slots as the kernel has parameters)."""

    def __init__(self):
        buf = ctypes.create_string_buffer(8 * _SLOTS)
        base = ctypes.addressof(buf)
        slots = (ctypes.c_void_p * _SLOTS)(*range(base, base + 8 * _SLOTS, 8))
        # devices this thread has launched a fill on through CuPy: a new thread has no current
        # CUDA context until a runtime call (CuPy's launch is one) makes the device's primary
        # context current; cuLaunchKernel alone would fail with CUDA_ERROR_INVALID_CONTEXT
        self.ready: set = set()
        # (the set in the block too: filled reads one attribute of the thread-local per call)
        self.block = (buf, ctypes.addressof(slots), slots, self.ready)


_PARAMS = _Params()


_patterns: dict = {}    # (native, value) or (native, value, sign) -> _pattern's (lo, hi, byte)
# the last non-zero fill's (native, value, lo, hi, byte): a loop fills with the same number
# object (a literal, ``1`` of ``ones``), found by two identity tests instead of hashing a tuple
# with a dtype in it (0.1 µs on a CPU host); an identical object holds identical bits, so it is
# exact
_LAST: tuple = (None, None, 0, 0, -1)
_BYTES = 0x0101010101010101     # one byte repeated over 8: (b * _BYTES) for byte b


def _pattern(value, native) -> tuple:
    """``(lo, hi, byte)``: 16 bytes holding ``value`` as ``native`` repeated, as two
    little-endian unsigned 64-bit ``int`` (the kernel's argument types), and the byte they
    repeat when they are one byte 16 times (``True``, any ``int8``/``uint8``, ``-1`` of every
    integer dtype: ``filled`` makes those a ``cudaMemsetAsync``), else -1. Remembered per value:
    building it through NumPy took 1.9 µs of a 17 µs call on an H200 host.

    The key is ``(native, value)``: Python numbers that compare equal (``1``, ``1.0``, ``True``;
    an int and a float only when the float is that exact integer) convert to the same element
    of any dtype, so their class need not be part of it. Zeros alone differ in what they
    hold (``-0.0 == 0.0`` hash alike): their key carries the sign (the only zero ``filled``
    sends here is ``-0.0``: positive zeros are a memset)."""
    key = (native, value) if value else \
        (native, value, math.copysign(1.0, value) if value.__class__ is float else 0)
    r = _patterns.get(key)
    if r is None:
        b = numpy.array(value, dtype=native).tobytes()
        b = b * (16 // len(b))
        lo, hi = int.from_bytes(b[:8], "little"), int.from_bytes(b[8:], "little")
        r = (lo, hi, lo & 0xFF if lo == hi == (lo & 0xFF) * _BYTES else -1)
        if len(_patterns) >= 256:      # a bounded memo: values seen once do not pile up
            _patterns.clear()
        _patterns[key] = r
    return r


def filled(cupy, shape, value, native):
    """A fresh C-contiguous ``cupy.ndarray`` of ``shape`` and dtype ``native`` (a NumPy dtype
    object) holding ``value`` (a Python bool, int or float the caller has range-checked for the
    dtype). Errors: CuPy's, as ``cupy.ndarray(shape, native)`` raises them."""
    global _LAST
    if cupy is _CUPY:
        # cupy.ndarray(shape, native) through fresh.route's two steps (fresh.new_array_for's
        # body: the dtype as its scalar type where CuPy makes this very dtype from it)
        a = _NEW(_ND)
        t = native.type
        _INIT(a, shape, t if _FROM_TYPE.get(t) is native else dtype_arg(_NEW, _INIT, _ND, native),
              None, None, None)
    else:                             # (cupy.empty(shape, native)'s own call, one frame less)
        a = cupy.ndarray(shape, native)
    nbytes = a.nbytes
    if nbytes == 0:
        return a
    if value == 0 and (value.__class__ is not float or math.copysign(1.0, value) > 0.0):
        a.data.memset_async(0, nbytes)
        return a
    last = _LAST
    if last[1] is value and last[0] is native:
        lo, hi, byte = last[2], last[3], last[4]
    else:
        # (_pattern's memo read inline for a non-zero value: its key is (native, value) then)
        lh = _patterns.get((native, value)) if value else None
        lo, hi, byte = lh if lh is not None else _pattern(value, native)
        _LAST = (native, value, lo, hi, byte)   # (one tuple swapped in: a racing thread reads
                                                # either)
    d = a.data
    if byte >= 0:                     # one byte repeated: a memset, as the zeros
        d.memset_async(byte, nbytes)
        return a
    dev = d.device_id                 # the current device: cupy.empty allocated there
    f = _functions.get(dev)
    if f is None:
        f = _function(cupy, dev)
    # min(_MAX_BLOCKS, ceil(nbytes / (16 * _THREADS))), at least 1 as nbytes > 0, without the two
    # builtin calls (0.2 µs on a CPU host)
    blocks = (nbytes + _BLOCK_BYTES - 1) // _BLOCK_BYTES
    if blocks > _MAX_BLOCKS:
        blocks = _MAX_BLOCKS
    buf, params, _, ready = _PARAMS.block
    if dev not in ready:            # this thread's first fill on dev: CuPy's launch
        _kernel[0]((blocks,), (_THREADS,), (a, numpy.uint64(lo), numpy.uint64(hi),
                                            numpy.int64(nbytes)))
        ready.add(dev)
        return a
    _PACK(buf, 0, d.ptr, lo, hi, nbytes)
    # the current stream looked up for dev, the current device (CuPy then skips its getDevice)
    _launch[0](f[1], blocks, 1, 1, _THREADS, 1, 1, 0, cupy.cuda.get_current_stream(dev).ptr,
               params, 0)
    return a


_launch: list = []                # [the driver's cuLaunchKernel], loaded with the first function


def _function(cupy, dev):
    """The fill kernel compiled and loaded for device ``dev`` (the current one)."""
    if not _kernel:
        _kernel.append(cupy.RawKernel(_SOURCE, "tp_fill16"))
    _load_launch()
    fn = _kernel[0].kernel            # compiled for the current device, cached by CuPy
    f = _functions[dev] = (fn, fn.ptr)
    return f


def _load_launch() -> None:
    if not _launch:
        from cupy_backends.cuda.api.driver import launchKernel
        _launch.append(launchKernel)


def function(key, dev, get):
    """``(cupy Function, CUfunction address)`` of kernel ``key`` (its name) on device ``dev``, the
    current one: ``get()`` gives the CuPy ``Function`` (compiled and loaded for the current
    device: ``RawModule.get_function``, ``RawKernel.kernel``) the first time, kept per device
    after. For ``launch_packed``."""
    f = _functions.get((key, dev))
    if f is None:
        _load_launch()
        fn = get()
        if not hasattr(fn, "ptr"):
            # a RawKernel (CuPy 13+'s RawModule.get_function gives one): its Function, compiled
            # for the current device, has the CUfunction address and the (grid, block, args) call
            fn = fn.kernel
        f = _functions[key, dev] = (fn, fn.ptr)
    return f


def launch_packed(cupy, f, dev, gx, gy, threads, pack, values, first_args):
    """Launch CuPy-compiled kernel ``f`` (``function``'s pair) on device ``dev`` (the current
    one), on its current stream, as ``filled`` launches the fill kernel: grid ``(gx, gy)`` of
    ``threads``-thread blocks, ``values`` (its parameters, at most ``_SLOTS`` of 8 bytes) packed
    by ``pack`` (a ``struct.Struct(...).pack_into``) into this thread's parameter block, one
    ``cuLaunchKernel``. A thread's first launch on ``dev`` goes through CuPy's ``Function`` call
    with ``first_args()`` (CuPy's argument forms: arrays, NumPy scalars) instead: it makes the
    device's context current, which a bare driver call does not (see ``_Params``)."""
    buf, params, _, ready = _PARAMS.block
    if dev not in ready:
        f[0]((gx, gy), (threads,), first_args())
        ready.add(dev)
        return
    pack(buf, 0, *values)
    _launch[0](f[1], gx, gy, 1, threads, 1, 1, 0, cupy.cuda.get_current_stream(dev).ptr,
               params, 0)
