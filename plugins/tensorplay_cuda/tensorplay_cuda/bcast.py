"""Materialising a broadcast on cuda at copy speed: ``expand(...).contiguous()``, ``.clone()`` of
a broadcast, ``copy_`` from one, and the autograd engine's copy of a broadcast gradient into
``.grad`` (the backward of ``sum(dim)`` hands on ``g.unsqueeze(dim).expand(...)``).

Why not CuPy: its copy kernel stores one element per thread step; for a broadcast, which reads
almost nothing, the stores are the whole cost, and 4-byte stores write well below the memory's
bandwidth. On an H100 (2026-12-06, CUDA events): a 4096x4096 float32 output from a (4096, 1)
column took 84-92 µs in CuPy's copy (a kernel of ours with 4-byte stores: 91) and 36 µs here
(float16 90 -> 23, float64 91 -> 65, uint8 90 -> 19); ``expand(...).contiguous()`` of that shape
123 -> 56 µs of GPU time (torch 56); the backward of ``x.sum(1).mean()`` went from 1.03x torch's
time (forward + backward) to 0.87x in the same runs.

Here: a source whose layout collapses to two dims ``(R, C)`` with element strides ``(sr, 0)``
-- each output row one value -- and rows a whole number of 16-byte blocks is written by
``tp_rowfill``: one grid row of blocks per output row (``blockIdx.y``, strided past 65535
rows), each thread storing the row's value repeated in 16 bytes (128-bit stores). It moves raw
bits of the element's size (1, 2, 4 or 8 bytes), so it serves every dtype; the values are
exactly CuPy's copy. Every other layout keeps CuPy's copy (measured no faster here).
Nothing here imports CuPy (the caller passes it in).

The launch is ``fill.launch_packed``'s: the five parameters packed into the thread's parameter
block and one ``cuLaunchKernel``, not CuPy's ``Function.__call__`` (which converts each argument to
a CuPy ``CPointer`` first: ~10 µs of host time per call on an H200 host, against a 4096x4096
float32 ``.grad`` of the backward of ``x.sum(1).mean()`` whose whole step is host-bound).
"""

from __future__ import annotations

import struct

import numpy

from . import fill

_SOURCE = r"""
// each output row one value (sc == 0), a row a whole number of 16-byte blocks: 128-bit stores
#define TP_ROWFILL(NAME, T, PAT)                                                             \
extern "C" __global__ void NAME(uint4* out, const T* src, long long R, long long n16,         \
                                long long sr) {                                              \
    const long long step = (long long)gridDim.x * blockDim.x;                                \
    const long long c0 = (long long)blockIdx.x * blockDim.x + threadIdx.x;                   \
    for (long long r = blockIdx.y; r < R; r += gridDim.y) {                                  \
        const unsigned long long v = (unsigned long long)src[r * sr];                        \
        const uint4 p = PAT;                                                                 \
        uint4* o = out + r * n16;                                                            \
        for (long long c = c0; c < n16; c += step) o[c] = p;                                 \
    }                                                                                        \
}
#define W1 ((unsigned int)(v * 0x01010101ull))
#define W2 ((unsigned int)(v | (v << 16)))
#define W4 ((unsigned int)v)
TP_ROWFILL(tp_rowfill_1, unsigned char, make_uint4(W1, W1, W1, W1))
TP_ROWFILL(tp_rowfill_2, unsigned short, make_uint4(W2, W2, W2, W2))
TP_ROWFILL(tp_rowfill_4, unsigned int, make_uint4(W4, W4, W4, W4))
TP_ROWFILL(tp_rowfill_8, unsigned long long,
           make_uint4((unsigned int)v, (unsigned int)(v >> 32), (unsigned int)v,
                      (unsigned int)(v >> 32)))
"""

MIN_ELEMENTS = 1 << 16      # below this CuPy's copy is as fast (the launch is the cost)
_THREADS = 256
_module: list = []          # [cupy.RawModule], compiled on first use
_PACK = struct.Struct("=QQqqq").pack_into     # out, src, R, n16, sr: the kernel's parameters
_NAMES = {k: f"tp_rowfill_{k}" for k in (1, 2, 4, 8)}


def collapse(shape, strides_elems):
    """``[(size, stride), ...]``: the dims of ``shape`` with element ``strides_elems`` merged
    where one walk covers both (``stride[k] == stride[k + 1] * size[k + 1]``, zeros with zeros),
    size-1 dims dropped; ``[]`` for a one-element or empty layout."""
    dims = [(n, s) for n, s in zip(shape, strides_elems) if n != 1]
    out: list = []
    for n, s in reversed(dims):
        if out and out[-1][1] * out[-1][0] == s:
            m, t = out[-1]
            out[-1] = (m * n, t)
        else:
            out.append((n, s))
    return out[::-1]


def copy_broadcast(cupy, dst, src) -> bool:
    """Copy ``src`` into ``dst`` (row-major, same shape, dtype and device, ``MIN_ELEMENTS`` or
    more) with ``tp_rowfill`` when ``src`` is a broadcast that collapses to ``(R, C)`` with
    strides ``(sr, 0)`` and rows of whole 16-byte blocks; True when done, False (nothing
    written) for anything else, which the caller copies as before."""
    n = dst.size
    item = dst.itemsize
    sd = src.dtype
    # (one dtype object on both sides, the usual case: an identity test, no NumPy comparison)
    if n < MIN_ELEMENTS or item not in (1, 2, 4, 8) or (sd is not dst.dtype and sd != dst.dtype):
        return False
    strides = src.strides
    shape = src.shape
    if len(strides) == 2 and strides[1] == 0 and strides[0] > 0 and not strides[0] % item \
            and shape[0] != 1 and shape[1] != 1:
        # the row broadcast of sum(dim)'s gradient, ``g.unsqueeze(1).expand(R, C)``: what collapse
        # gives for it, without its lists
        r, c = shape
        sr = strides[0] // item
    else:
        if any(s % item for s in strides) or 0 not in strides:
            return False
        dims = collapse(shape, [s // item for s in strides])
        if len(dims) == 1:
            dims = [(1, 0)] + dims
        if len(dims) != 2 or dims[0][1] < 0 or dims[1][1] < 0:
            return False
        (r, sr), (c, sc) = dims
        if sc != 0:
            return False
    if (c * item) & 15:
        return False
    out = dst.data.ptr
    dev = dst.data.device_id
    if out & 15 or dev != cupy.cuda.runtime.getDevice():
        return False            # (the launch goes to the current device's stream)
    name = _NAMES[item]
    f = fill._functions.get((name, dev))
    if f is None:
        f = fill.function(name, dev, lambda: _rawmodule(cupy).get_function(name))
    n16 = c * item // 16
    gx = (n16 + _THREADS - 1) // _THREADS
    gx = 64 if gx > 64 else gx                  # (n16 >= 1: a row is a whole 16-byte block)
    gy = 65535 if r > 65535 else r
    buf, params, _, ready = fill._PARAMS.block
    if dev in ready:
        # fill.launch_packed's packed launch inline (its frame, the argument tuple and the
        # first-launch closure: ~0.4 µs of a backward's .grad row fill on a CPU host)
        _PACK(buf, 0, out, src.data.ptr, r, n16, sr)
        fill._launch[0](f[1], gx, gy, 1, _THREADS, 1, 1, 0,
                        cupy.cuda.get_current_stream(dev).ptr, params, 0)
        return True
    fill.launch_packed(cupy, f, dev, gx, gy, _THREADS, _PACK,
                       (out, src.data.ptr, r, n16, sr),
                       lambda: (dst, src, numpy.int64(r), numpy.int64(n16), numpy.int64(sr)))
    return True


def _rawmodule(cupy):
    """The kernels' CuPy ``RawModule`` (compiled on first use; CuPy loads it per device)."""
    if not _module:
        _module.append(cupy.RawModule(code=_SOURCE))
    return _module[0]
