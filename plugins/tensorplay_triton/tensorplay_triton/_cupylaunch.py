"""Launching an already-compiled Triton kernel through CuPy (``cupy.cuda.function``).

Once Triton has compiled a kernel for one specialisation (and launched it once through its own
launcher), ``wrap_triton`` launches that specialisation through CuPy's launch path: the kernel's
cubin is loaded as a ``cupy.cuda.function.Module`` and its ``Function`` is called with the
grid, ``num_warps * 32`` threads, the dynamic shared memory Triton reserved (``metadata.shared``)
and the kernel's parameters, on CuPy's current stream. Triton's generated C launcher does more per
call than such a launch needs (it parses launch hooks and metadata, and would call ``data_ptr()`` and
``cuPointerGetAttribute`` on every pointer), and its caller ``JITFunction.run`` re-derives the
specialisation from every argument on every call.

The kernel's parameters are what Triton's launcher passes to ``cuLaunchKernelEx``: the arguments
whose type in the compiled signature is not ``constexpr``, in parameter order -- pointers as 64-bit
addresses (the tensors' CuPy ``MemoryPointer``), ``i32``/``i64``/``u64``/``fp32``/``u1`` scalars as
those C types (see ``_SCALARS``) -- then two trailing
pointers (global scratch, profile scratch), both null for kernels that need no scratch memory. The
PTX of each kernel is read to confirm that count and those types before it is used.

Anything else stays on Triton's launcher (``TritonPath`` says why): Triton releases whose launch
convention was not checked on a GPU, scratch memory, more than 48 KiB of shared memory, clusters
(``num_ctas > 1``), cooperative or programmatic-dependent launches, tensor descriptors, tuple
arguments, other scalar types.
"""

from __future__ import annotations

import re
import sys

import numpy as np

__all__ = ["Direct", "TritonPath", "int_feature", "make_direct"]

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
    """A compiled specialisation launched through CuPy: ``go(values, g0, g1, g2)``."""

    __slots__ = ("function", "go", "kernel", "module", "names_defaults", "source")

    def __init__(self, kernel, go, module, function, source, names_defaults):
        self.kernel = kernel
        self.go = go
        self.module = module                 # keeps the loaded module alive
        self.function = function
        self.source = source
        self.names_defaults = names_defaults

    def meta(self, args, kwargs) -> dict:
        """The bound arguments Triton hands a grid function: every parameter by name."""
        names, defaults = self.names_defaults
        m = dict(zip(names, args))
        for name in names[len(args):]:
            m[name] = kwargs[name] if name in kwargs else defaults.get(name)
        return m

    def __repr__(self) -> str:
        return f"<CuPy launch of {self.kernel.name}: {self.source.strip()}>"


# signature type -> (how the value is passed, PTX parameter types it may have). CuPy passes each
# parameter as a pointer to its value and the driver copies as many bytes as the kernel's parameter
# has: integers go as a CuPy ``CIntptr`` (a 64-bit integer; on a little-endian host its first 4
# bytes or 1 byte are the i32 or i1 value), which is cheaper to make than a NumPy scalar; floats
# as NumPy float32 (remembered for the last value seen, as kernels are often launched with the same
# Python float object); u64 (values >= 2**63) as NumPy uint64.
_LITTLE = sys.byteorder == "little"
_SCALARS = {
    "i32": ("I" if _LITTLE else "I32", ("u32", "s32", "b32")),
    "i64": ("I", ("u64", "s64", "b64")),
    "u64": ("U64", ("u64", "b64")),
    "fp32": ("F32", ("f32", "b32")),
    "u1": ("I" if _LITTLE else "B1", ("u8", "s8", "b8")),
}
_PTR_PTX = ("u64", "b64")
_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.DOTALL)
_PARAM = re.compile(r"\.param\s+\.(\w+)")


def ptx_params(ptx: str, name: str):
    """The PTX types of kernel ``name``'s parameters, or ``None`` when not found."""
    for m in _ENTRY.finditer(ptx):
        if m.group(1) == name:
            return _PARAM.findall(m.group(2))
    return None


def cupy_load(cubin: bytes, name: str, device_index: int):
    """Load ``cubin`` on device ``device_index`` with CuPy: ``(module, function)``."""
    import cupy
    from cupy.cuda.function import Module
    with cupy.cuda.Device(device_index):
        module = Module()
        module.load(cubin)
        return module, module.get_function(name)


def make_direct(kernel, device_index: int, jf, nargs: int, kwargs, load=cupy_load):
    """A ``Direct`` launch for ``kernel`` (a Triton ``CompiledKernel`` Triton has just launched with
    ``nargs`` positional arguments and ``kwargs``), or a ``TritonPath`` saying why not.
    ``load(cubin, name, device_index)`` gives ``(module, function)``."""
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
    exprs, want, consts, body = [], [], {}, []
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
            exprs.append(ref)                 # the tensor's CuPy MemoryPointer: CuPy passes .ptr
            want.append(_PTR_PTX)
        elif ty in _SCALARS:
            conv, ptx_types = _SCALARS[ty]
            if conv == "F32":                 # the last value's float32, if the same object again
                consts[f"m{j}"] = [(None, None)]
                body += [f"    s{j} = {ref}", f"    k{j} = m{j}[0]",
                         f"    if k{j}[0] is not s{j}:",
                         f"        k{j} = (s{j}, F32(s{j}))", f"        m{j}[0] = k{j}"]
                exprs.append(f"k{j}[1]")
            else:
                exprs.append(f"{conv}({ref})")
            want.append(ptx_types)
        else:
            return TritonPath(f"parameter {name!r} has type {ty!r}")
    exprs += ["None", "None"]                # global scratch, profile scratch: null
    want += [_PTR_PTX, _PTR_PTX]
    got = ptx_params(asm["ptx"], md.name)
    if got is None or len(got) != len(want) or any(g not in w for g, w in zip(got, want)):
        return TritonPath(f"PTX parameters {got} are not the expected {[w[0] for w in want]}")
    from cupy.cuda.function import CIntptr
    module, function = load(bytes(asm["cubin"]), md.name, device_index)
    warp = getattr(md, "warp_size", 32) or 32
    source = "\n".join(["def go(v, g0, g1, g2):", *body,
                        f"    fn((g0, g1, g2), BLOCK, ({', '.join(exprs)},), SHARED)", ""])
    ns = {"fn": function, "BLOCK": (warp * md.num_warps, 1, 1), "SHARED": md.shared, "I": CIntptr,
          "I32": np.int32, "U64": np.uint64, "F32": np.float32, "B1": np.bool_}
    ns.update(consts)
    exec(compile(source, f"<tensorplay_triton launch of {md.name}>", "exec"), ns)  # noqa: S102
    return Direct(kernel, ns["go"], module, function, source, (tuple(names), defaults))
