"""Launching an already-compiled Triton kernel through CuPy's driver bindings.

Once Triton has compiled a kernel for one specialisation (and launched it once through its own
launcher), ``wrap_triton`` and the cuda plugin's eager kernels launch that specialisation again
with one ``cuLaunchKernel`` (CuPy's ``driver.launchKernel``): the kernel's cubin is loaded as a
``cupy.cuda.function.Module``, and each launch packs the kernel's parameters into a per-thread
parameter block and hands its function, the grid, ``num_warps * 32`` threads, the dynamic shared
memory Triton reserved (``metadata.shared``), CuPy's current stream and that block to the driver.
Triton's generated C launcher does more per call than such a launch needs (it parses launch hooks
and metadata, and would call ``data_ptr()`` and ``cuPointerGetAttribute`` on every pointer), its
caller ``JITFunction.run`` re-derives the specialisation from every argument on every call, and
CuPy's own ``Function.__call__`` converts every argument to a CuPy ``CPointer`` first: on an H200
host one launch cost 7.9 µs through ``Function.__call__`` and 6.0 µs packed here.

The kernel's parameters are what Triton's launcher passes to ``cuLaunchKernelEx``: the arguments
whose type in the compiled signature is not ``constexpr``, in parameter order -- pointers as 64-bit
addresses (``go`` takes them as ``int``), ``i32``/``i64``/``u64``/``fp32``/``u1`` scalars as those C
types (see ``_SCALARS``) -- then two trailing pointers (global scratch, profile scratch), both
null for kernels that need no scratch memory. The PTX of each kernel is read to confirm that count
and those types before it is used.

Anything else stays on Triton's launcher (``TritonPath`` says why): Triton releases whose launch
convention was not checked on a GPU, scratch memory, more than 48 KiB of shared memory, clusters
(``num_ctas > 1``), cooperative or programmatic-dependent launches, tensor descriptors, tuple
arguments, other scalar types, more than ``MAX_PARAMS`` parameters.
"""

from __future__ import annotations

import ctypes
import re
import struct
import threading

import numpy as np

__all__ = [
    "CUPY",
    "MAX_PARAMS",
    "CupyLaunch",
    "Direct",
    "TritonPath",
    "int_feature",
    "make_direct",
]

# Triton releases whose launch convention (parameters as above) was checked on a GPU.
TESTED_VERSIONS = ("3.6.",)

_SHARED_DEFAULT_MAX = 49152      # above this a kernel needs an opt-in attribute: Triton's launcher
_INT32_MIN, _INT32_MAX, _UINT64_FROM = -0x80000000, 0x7FFFFFFF, 0x8000000000000000


def int_feature(a: int):
    """What Triton's specialisation of an ``int`` argument depends on: equal to 1 (then a
    ``constexpr``), fits in ``i32``, needs ``u64``, divisible by 16. Two ints with the same feature
    get the same specialisation (checked against Triton's own in the tests)."""
    if a == 1:
        return 1
    return (_INT32_MIN <= a <= _INT32_MAX, a >= _UINT64_FROM, not a & 15)


class TritonPath:
    """A specialisation that launches through Triton's launcher, and why."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"<Triton's launcher: {self.reason}>"


class Direct:
    """A compiled specialisation launched through CuPy: ``go(values, g0, g1, g2)``, ``values`` the
    kernel's positional arguments with each pointer as its address (an ``int``); the launch goes
    to the current CuPy stream of the current device (which must be the one it was loaded on).
    ``kinds``: what each slot of the parameter block holds (``"ptr"``, ``"i32"``, ``"i64"``,
    ``"u64"``, ``"fp32"``, ``"u1"``, ``"null"``), in order."""

    __slots__ = ("function", "go", "kernel", "kinds", "module", "names_defaults", "source")

    def __init__(self, kernel, go, module, function, source, names_defaults, kinds=()):
        self.kernel = kernel
        self.go = go
        self.module = module                 # keeps the loaded module alive
        self.function = function             # the CUfunction's address
        self.source = source
        self.names_defaults = names_defaults
        self.kinds = kinds

    def meta(self, args, kwargs) -> dict:
        """The bound arguments Triton hands a grid function: every parameter by name."""
        names, defaults = self.names_defaults
        m = dict(zip(names, args))
        for name in names[len(args):]:
            m[name] = kwargs[name] if name in kwargs else defaults.get(name)
        return m

    def __repr__(self) -> str:
        return f"<CuPy launch of {self.kernel.name}: {self.source.strip()}>"


# signature type -> (its slot in the parameter block, PTX parameter types it may have). Every
# parameter gets an 8-byte slot (the driver reads from each slot as many bytes as the kernel's
# parameter has): a pointer or u64 as an unsigned 64-bit integer, i64 as a signed one, i32 as a
# 4-byte int, fp32 as a 4-byte float (through NumPy's float32, which rounds out-of-range values to
# inf as Triton's launcher does, where struct would refuse them), u1 as one byte.
_SCALARS = {
    "i32": ("i4x", ("u32", "s32", "b32")),
    "i64": ("q", ("u64", "s64", "b64")),
    "u64": ("Q", ("u64", "b64")),
    "fp32": ("f4x", ("f32", "b32")),
    "u1": ("?7x", ("u8", "s8", "b8")),
}
_PTR_PTX = ("u64", "b64")
_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.DOTALL)
_PARAM = re.compile(r"\.param\s+\.(\w+)")

MAX_PARAMS = 128          # kernels with more parameters keep Triton's launcher


class _Block(threading.local):
    """This thread's parameter block: ``MAX_PARAMS`` 8-byte slots and the array of their addresses
    that ``cuLaunchKernel`` takes as ``kernelParams``. The driver has copied the parameters when the
    call returns, so one block serves every launch of the thread; one per thread because CuPy's
    ``launchKernel`` releases the GIL while the driver reads it."""

    def __init__(self):
        buf = ctypes.create_string_buffer(8 * MAX_PARAMS)
        base = ctypes.addressof(buf)
        slots = (ctypes.c_void_p * MAX_PARAMS)(*range(base, base + 8 * MAX_PARAMS, 8))
        self.block = (buf, ctypes.addressof(slots), slots)


class CupyLaunch:
    """How a ``Direct`` loads and launches, through CuPy: ``load(cubin, name, device_index)`` gives
    ``(module, function address)``; ``launch`` is ``cuLaunchKernel`` (CuPy's
    ``driver.launchKernel``); ``current_stream()`` is CuPy's current stream (its ``.ptr``). Tests
    put a recorder with the same three members in its place."""

    def load(self, cubin: bytes, name: str, device_index: int):
        import cupy
        from cupy.cuda.function import Module
        with cupy.cuda.Device(device_index):
            module = Module()
            module.load(cubin)
            return module, module.get_function(name).ptr

    @property
    def launch(self):
        from cupy_backends.cuda.api.driver import launchKernel
        return launchKernel

    @property
    def current_stream(self):
        import cupy
        return cupy.cuda.get_current_stream

    @staticmethod
    def make_current(exc, device_index: int) -> bool:
        """After ``launch`` raised ``exc``: True, once device ``device_index``'s primary context
        is made current, when the cause was that the calling thread has no current CUDA context
        (``CUDA_ERROR_INVALID_CONTEXT`` and ``cuCtxGetCurrent`` null); False for any other
        failure, which the caller re-raises.

        Why: a thread whose first CUDA work is a launch here has no current context. CuPy's
        memory pool can hand it a cached block without a runtime call, and only runtime calls
        make the primary context current (``cudaSetDevice`` does), so ``cuLaunchKernel`` alone
        fails -- eager ops, reductions, compiled chains and ``wrap_triton`` launches from a
        worker thread all raised ``CUDA_ERROR_INVALID_CONTEXT`` (device run of 2026-12-04)."""
        from cupy_backends.cuda.api import driver
        if getattr(exc, "status", None) != _INVALID_CONTEXT or driver.ctxGetCurrent() != 0:
            return False
        from cupy.cuda import runtime
        runtime.setDevice(device_index)
        return True


_INVALID_CONTEXT = 201          # CUresult CUDA_ERROR_INVALID_CONTEXT


def _not_recoverable(exc, device_index: int) -> bool:
    """``make_current`` of a ``via`` that has none (test stand-ins): nothing to recover."""
    return False


CUPY = CupyLaunch()


def ptx_params(ptx: str, name: str):
    """The PTX types of kernel ``name``'s parameters, or ``None`` when not found."""
    for m in _ENTRY.finditer(ptx):
        if m.group(1) == name:
            return _PARAM.findall(m.group(2))
    return None


def make_direct(kernel, device_index: int, jf, nargs: int, kwargs, via=CUPY):
    """A ``Direct`` launch for ``kernel`` (a Triton ``CompiledKernel`` Triton has just launched with
    ``nargs`` positional arguments and ``kwargs``), or a ``TritonPath`` saying why not.
    ``via``: how to load and launch (``CupyLaunch``)."""
    md = getattr(kernel, "metadata", None)
    asm = getattr(kernel, "asm", None)
    if md is None or asm is None or "cubin" not in asm or "ptx" not in asm:
        return TritonPath("not a compiled CUDA kernel (no cubin/ptx)")
    for field, ok in (("num_ctas", 1), ("launch_cooperative_grid", False), ("launch_pdl", False),
                      ("global_scratch_size", 0), ("profile_scratch_size", 0)):
        if getattr(md, field, ok) != ok:
            return TritonPath(f"{field}={getattr(md, field)!r}")
    if getattr(md, "tensordesc_meta", None):
        return TritonPath("tensor descriptors")
    if md.shared > _SHARED_DEFAULT_MAX:
        return TritonPath(f"{md.shared} bytes of shared memory (> 48 KiB needs an opt-in)")
    src = getattr(kernel, "src", None)
    sig = getattr(src, "signature", None)
    names = list(jf.arg_names)
    if not isinstance(sig, dict) or list(sig) != names:
        return TritonPath("signature does not name the kernel's parameters")
    defaults = {p.name: p.default for p in jf.params if p.has_default}
    exprs, want, kinds, fmt, consts, body = [], [], [], [], {}, []
    for j, (name, ty) in enumerate(sig.items()):
        if ty == "constexpr":
            continue
        if not isinstance(ty, str):
            return TritonPath(f"parameter {name!r} has type {ty!r}")
        if j < nargs:
            ref = f"v[{j}]"
        elif name in kwargs:
            return TritonPath(f"parameter {name!r} given by keyword")
        elif name in defaults:
            ref = f"c{j}"
            consts[ref] = defaults[name]
        else:
            return TritonPath(f"parameter {name!r} missing")
        if ty[0] == "*":
            exprs.append(ref)                 # the address, an int
            want.append(_PTR_PTX)
            fmt.append("Q")
            kinds.append("ptr")
        elif ty in _SCALARS:
            slot, ptx_types = _SCALARS[ty]
            if ty == "fp32":                  # the last value's float32, if the same object again
                consts[f"m{j}"] = [(None, None)]
                body += [f"    s{j} = {ref}", f"    k{j} = m{j}[0]",
                         f"    if k{j}[0] is not s{j}:",
                         f"        k{j} = (s{j}, F32(s{j}))", f"        m{j}[0] = k{j}"]
                exprs.append(f"k{j}[1]")
            else:
                exprs.append(ref)
            want.append(ptx_types)
            fmt.append(slot)
            kinds.append(ty)
        else:
            return TritonPath(f"parameter {name!r} has type {ty!r}")
    want += [_PTR_PTX, _PTR_PTX]             # global scratch, profile scratch: null
    fmt.append("16x")
    kinds += ["null", "null"]
    if len(want) > MAX_PARAMS:
        return TritonPath(f"{len(want)} kernel parameters (more than {MAX_PARAMS})")
    got = ptx_params(asm["ptx"], md.name)
    if got is None or len(got) != len(want) or any(g not in w for g, w in zip(got, want)):
        return TritonPath(f"PTX parameters {got} are not the expected {[w[0] for w in want]}")
    module, fptr = via.load(bytes(asm["cubin"]), md.name, device_index)
    warp = getattr(md, "warp_size", 32) or 32
    # go packs the values in parameter order (names made up here: v[j], c<j>, k<j>; no value is
    # source text) into this thread's block, then launches; a thread with no current CUDA
    # context yet gets its device's primary context and the same launch again (make_current)
    launch = "LAUNCH(FN, g0, g1, g2, THREADS, 1, 1, SHARED, STREAM().ptr, params, 0)"
    source = "\n".join(["def go(v, g0, g1, g2):", *body,
                        "    buf, params, _ = BLOCK_OF_THREAD.block",
                        f"    PACK(buf, 0{''.join(', ' + e for e in exprs)})",
                        "    try:",
                        f"        {launch}",
                        "    except Exception as e:",
                        "        if not MAKE_CURRENT(e, DEVICE):",
                        "            raise",
                        f"        {launch}",
                        ""])
    ns = {"FN": fptr, "THREADS": warp * md.num_warps, "SHARED": md.shared,
          "PACK": struct.Struct("=" + "".join(fmt)).pack_into, "BLOCK_OF_THREAD": _BLOCK,
          "LAUNCH": via.launch, "STREAM": via.current_stream, "F32": np.float32,
          "MAKE_CURRENT": getattr(via, "make_current", _not_recoverable),
          "DEVICE": device_index}
    ns.update(consts)
    exec(compile(source, f"<tensorplay_triton launch of {md.name}>", "exec"), ns)  # noqa: S102
    return Direct(kernel, ns["go"], module, fptr, source, (tuple(names), defaults), tuple(kinds))


_BLOCK = _Block()
