"""``clone`` (and so ``Tensor.contiguous``) on cuda at memcpy speed.

Why not the reference kernel: it is ``xp.asarray(x, copy=True)``, i.e. ``cupy.array``, whose host
cost on an H200 was 17 µs per call (26.8 µs for a whole ``clone`` against torch's 12.6), and which
keeps a non-contiguous array's layout, so the backend's ``wrap`` copied it a second time to make
it row-major (``x.transpose(1, 2).contiguous()``: two CuPy copy kernels, 54 µs against torch's
17.7). Here:

* a row-major array is one ``cudaMemcpyAsync`` of its bytes (device to device, on CuPy's current
  stream, the adapters' device current) into a fresh array from CuPy's pool;
* a broadcast (a 0 stride) that collapses to two dims: ``bcast.copy_broadcast`` (no index
  arithmetic per element);
* any other layout is one ``cupy.ascontiguousarray`` (one copy kernel, row-major result).

Same values, dtype and shape as the reference kernel's result; never an alias of the input.
"""

from __future__ import annotations

from .bcast import copy_broadcast
from .fresh import new_array_for


def accelerate(kernels: dict, cupy) -> dict:
    """``kernels`` with ``clone`` replaced by the copy above (kept as is where absent)."""
    ref = kernels.get("clone")
    if ref is None:
        return kernels
    nd = cupy.ndarray
    new = new_array_for(nd)          # nd(shape, dtype), with less host time (fresh.py)
    contiguous = cupy.ascontiguousarray

    def clone(a):
        if a.__class__ is not nd:
            return ref(a)
        # (CuPy's _c_contiguous, not flags.c_contiguous, which builds a Flags object per call)
        if a._c_contiguous:
            r = new(a.shape, a.dtype)
            n = a.nbytes
            if n:
                r.data.copy_from_device_async(a.data, n)
            return r
        if 0 in a.strides:           # a broadcast: the division-free kernel (bcast.py)
            r = new(a.shape, a.dtype)
            if copy_broadcast(cupy, r, a):
                return r
        return contiguous(a)
    clone.__wrapped__ = ref
    for attr in ("_tp_quiet",):
        if hasattr(ref, attr):
            setattr(clone, attr, getattr(ref, attr))
    out = dict(kernels)
    out["clone"] = clone
    return out
