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
* any other layout (a permuted or sliced view: ``q.transpose(1, 2).contiguous()``) of fewer than
  ``2**31 - 2048`` elements, with Triton: after ``eager.WARMUP_CALLS`` calls of its (shape,
  strides, dtype), one launch of the generated one-step copy (``triton_fusion``'s ``to_dtype`` to
  the array's own dtype, its input loaded through its strides: each element's bits as they are)
  replayed with one driver call per call, from one function generated per layout that
  ``clone`` calls itself (``_strided_call``: the allocation, the packing with the layout's sizes
  and strides as constants, the launch). Why: CuPy's copy kernel's argument handling cost more
  host time than the launch (29.5 µs against torch's 17.3 on an H100 host for a 2x48x64x128
  float32 transpose); and the kept launch through ``Direct.go`` (a key lookup in the copy's
  frame, an argument tuple, ``go``'s frame, the allocation's) was 2.5 µs of the 17.7 µs a
  ``q.transpose(1, 2).contiguous()`` took on an H100 host, against torch's 14.1;
* anything else (and those before their launch is known, or where Triton declines the dtype or
  fails: said once, then CuPy for the process) is one ``cupy.ascontiguousarray`` (one copy kernel,
  row-major result).

Same values, dtype and shape as the reference kernel's result; never an alias of the input.
"""

from __future__ import annotations

import os

from .bcast import copy_broadcast
from .fresh import new_array_for


def accelerate(kernels: dict, cupy, backend=None) -> dict:
    """``kernels`` with ``clone`` replaced by the copy above (kept as is where absent).
    ``backend``: the cuda backend, whose generated kernels copy strided views (None: CuPy's
    copy for them)."""
    ref = kernels.get("clone")
    if ref is None:
        return kernels
    nd = cupy.ndarray
    new = new_array_for(nd)          # nd(shape, dtype), with less host time (fresh.py)
    contiguous = cupy.ascontiguousarray
    strided = _strided_copy(backend, contiguous) if backend is not None else contiguous

    # (shape, strides, dtype, device) -> the generated call of a kept strided copy
    calls = getattr(strided, "calls", {})
    one = getattr(strided, "one", True)
    getdev = cupy.cuda.runtime.getDevice

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
        # a kept strided copy: one generated call (allocation, packing, the driver call)
        c = calls.get((a.shape, a.strides, a.dtype, 0 if one else getdev()))
        if c is not None:
            return c(a)
        if 0 in a.strides:           # a broadcast: the division-free kernel (bcast.py)
            r = new(a.shape, a.dtype)
            if copy_broadcast(cupy, r, a):
                return r
        return strided(a)
    clone.__wrapped__ = ref
    clone.strided = strided                     # (its kept copies, for the tests)
    for attr in ("_tp_quiet",):
        if hasattr(ref, attr):
            setattr(clone, attr, getattr(ref, attr))
    out = dict(kernels)
    out["clone"] = clone
    return out


def _strided_copy(backend, contiguous):
    """``copy(a) -> row-major copy of CuPy array a`` (a view that is neither row-major nor a
    broadcast of ``copy_broadcast``'s form): the generated strided copy described above where
    it applies, else ``contiguous(a)`` (CuPy's copy kernel). Per (shape, strides, dtype, device)
    the first ``eager.WARMUP_CALLS`` calls run ``contiguous`` (a short script compiles nothing);
    the next compiles the copy and launches it through Triton (never inside a CUDA-graph
    capture: ``eager._capturing``); every later call is an allocation and one driver call
    (``_compile``), made by the key's generated call (``copy.calls[key]``, ``_strided_call``),
    which ``clone`` looks up and calls itself, or through ``Direct.go`` here where none could
    be generated. A key whose copy is unavailable (a dtype the generator declines: complex,
    unsigned wider than a byte; another Triton release; a failure, said once) runs
    ``contiguous`` for good. ``copy.keys``: key -> calls so far, the kept launch's tuple, or
    None; ``copy.one``: one visible GPU (the keys' device is then 0, asked of no driver)."""
    from . import eager
    from .triton_fusion import BLOCK, BLOCK_NARROW
    if not eager.triton_available() or not eager._DENSE[0] or \
            os.environ.get("TENSORPLAY_CUDA_EAGER_TRITON", "1") == "0":
        return contiguous
    top = 2 ** 31 - max(BLOCK, BLOCK_NARROW)
    getdev = backend.np.cuda.runtime.getDevice
    one = eager._one_gpu(backend)
    new = new_array_for(backend.np.ndarray)
    # key -> calls so far (an int, below WARMUP_CALLS), then (go, arguments after the two
    # addresses, programs, dtype, ...) or None: CuPy's copy for good
    seen: dict = {}
    calls: dict = {}           # key -> its kept launch as one generated call (_strided_call)
    nd = backend.np.ndarray

    def copy(a):
        n = a.size
        if not 1 < n < top:
            return contiguous(a)
        dev = 0 if one else getdev()
        key = (a.shape, a.strides, a.dtype, dev)
        e = seen.get(key, 0)
        if e.__class__ is int:
            if e < eager.WARMUP_CALLS or eager._capturing(backend) or \
                    a.data.device_id != dev:
                seen[key] = e + 1
                return contiguous(a)
            if len(seen) >= _MAX_KEYS:
                seen.clear()
                calls.clear()
            seen[key] = None
            r, e = _compile(backend, a, dev)
            if e is not None:
                seen[key] = e
                c = _strided_call(e[4], nd, a.shape, e[3], e[5], e[1], e[2])
                if c is not None:
                    calls[key] = c
            return contiguous(a) if r is None else r
        if e is None:
            return contiguous(a)
        go, tail, g, dt = e[:4]
        r = new(a.shape, dt)
        args = (a.data.ptr, r.data.ptr, *tail)
        try:
            go(args, g, 1, 1)
        except Exception:  # noqa: BLE001 - retried once below, else raised
            # a thread whose first CUDA work this is has no current context (as in
            # triton_fusion._Plan): cudaSetDevice makes the device's primary context current
            backend.np.cuda.runtime.setDevice(dev)
            go(args, g, 1, 1)
        return r
    copy.keys = seen
    copy.calls = calls
    copy.one = one
    return copy


def _compile(backend, a, dev):
    """The first generated copy of strided array ``a`` (on device ``dev``, the current one):
    ``(result, launch)``, the result a fresh row-major array copied by the chain's kernel
    through Triton's launcher (None: nothing run, the caller copies), ``launch`` what the
    later calls of this (shape, strides, dtype, device) run: ``(go, arguments after the input's
    and output's addresses, programs, dtype, Direct, fconst)`` (``_cupylaunch.Direct.go``; the
    last two kept alive), or None (CuPy's copy for good).

    The kernel is ``triton_fusion``'s one-step ``to_dtype`` chain to ``a``'s own dtype, its
    input in load mode ``"b"`` (the flat output index split over the output's dims, dotted
    with the input's element strides): a conversion to the same Triton type changes no bit,
    so the copy is exact for every dtype it takes (NaN payloads and -0.0 included). Compiled
    ``general`` (no specialisation on the addresses' alignment, the element count, the sizes
    or the strides): one kernel per (dtype, ndim) serves every layout. Its 32-bit index
    arithmetic needs every element's offset below 2**31 (a view into a larger array may not
    have that: declined); negative strides (CuPy's ``a[::-1]``; a tensor's never are) are
    declined too."""
    from . import eager
    from .triton_fusion import BLOCK, BLOCK_NARROW, _helpers_compile, _launch_cuda
    if eager._FAILED:
        return None, None
    item = a.dtype.itemsize
    strides = [s // item for s in a.strides]
    if any(s % item or s < 0 for s in a.strides) or \
            sum((d - 1) * s for d, s in zip(a.shape, strides)) >= 2 ** 31:
        return None, None
    try:
        dt = backend.dtype_of(a)
        ch = eager._chain("to_dtype", 1, None, dt, backend)
        nd = a.ndim
        k = ch._kernel(((dt,), ("b",), nd, False, False), [dt], ("b",), nd, False, general=True)
    except Exception:  # noqa: BLE001 - a dtype tensorplay or the generator has no form for
        return None, None
    if k is None or not _helpers_compile():
        return None, None
    kern = k[0]
    n = a.size
    out = backend.np.ndarray(a.shape, a.dtype)
    fc = ch._fconst_array([], [a])
    blk = BLOCK_NARROW if item <= 2 else BLOCK
    g = (n + blk - 1) // blk
    args = [a, out, fc, n, 0, *a.shape, *strides]
    try:
        compiled = _launch_cuda(kern, (g,), args, [a], blk)
    except Exception as e:  # noqa: BLE001 - any compiler/driver error: said once, then CuPy
        if eager._capturing(backend):
            raise
        eager._failed(e)
        return None, None
    from tensorplay_triton import _cupylaunch, _wrap
    if not _wrap._direct_setup():
        return out, None
    d = _cupylaunch.make_direct(compiled, dev, kern, len(args), {"BLOCK": blk})
    if not isinstance(d, _cupylaunch.Direct):
        return out, None
    return out, (d.go, (fc.data.ptr, n, 0, *a.shape, *strides), g, a.dtype, d, fc)


def _strided_call(direct, nd, shape, dtype, fconst, tail, grid):
    """``call(a) -> r``: the kept launch of ``_compile`` (``direct``, a ``Direct`` whose kernel
    takes the input's and output's addresses, then ``tail``: the float-constant array's address
    ``fconst.data.ptr``, the element count, 0, the sizes and the element strides; ``grid``
    programs) as one generated function for arrays of exactly that (shape, strides, dtype) on
    that device: a fresh row-major ``nd`` array ``r`` of ``shape`` and ``dtype`` (``fresh``'s
    route where it applies) into which the copy is launched -- the allocation, the packing (the
    key's sizes and strides are constants of the source) and the driver call in one frame, as
    ``triton_fusion._dense_call`` does for the dense ops, where ``copy`` built an argument tuple
    and called ``Direct.go`` through two frames. It launches as ``go`` does (``go``'s own
    namespace: the same function, threads, shared memory, parameter block, packing and
    recovery of a thread without a current context), the stream looked up for the launch's
    device where the look-up takes one. None where ``direct``'s parameters are not the ones
    this layout packs (another Triton, another ``make_direct``): ``copy`` keeps ``go``."""
    from .fresh import dtype_arg, route_for
    from .triton_fusion import _stream_takes_device
    ns = getattr(getattr(direct, "go", None), "__globals__", {})
    need = ("PACK", "BLOCK_OF_THREAD", "LAUNCH", "STREAM", "MAKE_CURRENT", "FN", "THREADS",
            "SHARED", "DEVICE")
    nv = len(tail)
    kinds = ("ptr",) * 3 + ("i32",) * (nv - 1) + ("null", "null")
    if any(k not in ns for k in need) or tuple(getattr(direct, "kinds", ())) != kinds or \
            any(v.__class__ is not int for v in tail) or grid.__class__ is not int:
        return None
    stream = "STREAM(DEVICE)" if _stream_takes_device(ns["STREAM"]) else "STREAM()"
    launch = f"LAUNCH(FN, {grid}, 1, 1, THREADS, 1, 1, SHARED, {stream}.ptr, params, 0)"
    fresh = route_for(nd)
    alloc = ["    r = NEW(ND)", "    INIT(r, SHAPE, DT_ARG, None, None, None)"] if fresh else \
        ["    r = ND(SHAPE, DT)"]
    # (ints as literals: a constant load each, no tuple unpacked per call)
    values = ", ".join(str(int(v)) for v in tail[1:])
    source = "\n".join(["def call(a):", *alloc,
                        "    buf, params, _ = BLOCK_OF_THREAD.block",
                        f"    PACK(buf, 0, a.data.ptr, r.data.ptr, FCP, {values})",
                        "    try:", f"        {launch}", "    except Exception as e:",
                        "        if not MAKE_CURRENT(e, DEVICE):", "            raise",
                        f"        {launch}", "    return r", ""])
    g = {k: ns[k] for k in need}
    g.update(ND=nd, SHAPE=tuple(shape), DT=dtype, FCP=tail[0])
    if fresh:
        g.update(NEW=fresh[0], INIT=fresh[1], DT_ARG=dtype_arg(*fresh, nd, dtype))
    exec(compile(source, f"<tensorplay strided copy of {ns['FN']:#x}>", "exec"), g)  # noqa: S102
    call = g["call"]
    call.direct = direct            # keeps the kernel's module alive (and for the tests)
    call.fconst = fconst            # (its address is packed)
    call.source = source
    return call


_MAX_KEYS = 256          # strided layouts kept (cleared beyond)
