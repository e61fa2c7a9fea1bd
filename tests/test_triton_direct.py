"""The CuPy launch of compiled Triton specialisations (``tensorplay_triton._cupylaunch``), on cpu.

CI has no GPU: kernels are compiled for real for an sm_90 target (Triton's compiler needs no GPU),
the tensors are cpu tensors dressed as cuda ones (a device and a CuPy-like ``.data.ptr``), and the
cubin loader records the CuPy ``Function`` call that would launch the kernel. The same path runs
for real in ``test_triton.py``'s compiled tests and ``benchmarks/bench_triton.py`` on a GPU.
"""

from __future__ import annotations

import os
import types

import pytest

os.environ.pop("TRITON_INTERPRET", None)
triton = pytest.importorskip("triton", reason="triton is not installed")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")
pytest.importorskip("cupy", reason="cupy is not installed (the CuPy launch needs it)")

import tensorplay
import triton.language as tl
from tensorplay_triton import _cupylaunch, _wrap

direct_path = pytest.mark.skipif(
    not triton.__version__.startswith(_cupylaunch.TESTED_VERSIONS),
    reason=f"the CuPy launch path is off on Triton {triton.__version__}")


@triton.jit
def fused(x_ptr, y_ptr, out_ptr, scale, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    m = offs < n
    r = (tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m)) * scale
    tl.store(out_ptr + offs, tl.maximum(r, 0.0), mask=m)


@triton.jit
def flags(x_ptr, on, big, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n + big
    x = tl.load(x_ptr + offs, mask=m)
    if on:
        x = x * 2
    tl.store(x_ptr + offs, x, mask=m)


def _compile(fn, signature, constexprs):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    return triton.compile(ASTSource(fn, signature=signature, constexprs=constexprs),
                          target=GPUTarget("cuda", 90, 32))


_COMPILED: dict = {}


def _fused_kernel(n_is_one=False):
    key = ("fused", n_is_one)
    if key not in _COMPILED:
        sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "scale": "fp32",
               "n": "constexpr" if n_is_one else "i32", "BLOCK_SIZE": "constexpr"}
        cx = {"BLOCK_SIZE": 1024}
        if n_is_one:
            cx["n"] = 1
        _COMPILED[key] = _compile(fused, sig, cx)
    return _COMPILED[key]


def _cuda_like(t, ptr):
    """A cpu tensor dressed as a cuda tensor at address ``ptr`` (what the launch path reads)."""
    t._device = tensorplay.device("cuda:0")
    t._data = types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr))
    return t


class _Recorder:
    """Stands in for CuPy's loading and launching (``_cupylaunch.CupyLaunch``): loads nothing and
    records each launch, with a copy of the parameter block as the driver would read it."""

    def __init__(self):
        self.calls = []
        self.loads = []
        self.blocks = []                                   # each launch's kernelParams address
        self.current_stream = lambda: types.SimpleNamespace(ptr=0)

    def load(self, cubin, name, idx):
        assert isinstance(cubin, bytes) and cubin
        self.loads.append((name, idx))
        return object(), 0x1000 + len(self.loads)         # (module, function address)

    def launch(self, f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        import ctypes
        assert stream == 0 and extra == 0
        slots = (ctypes.c_void_p * _cupylaunch.MAX_PARAMS).from_address(params)
        raw = [ctypes.string_at(slots[i], 8) for i in range(_cupylaunch.MAX_PARAMS)]
        self.blocks.append(params)
        self.calls.append(((g0, g1, g2), (b0, b1, b2), (f, raw), shared))


_KINDS: dict = {}           # function address -> the Direct's slot kinds (filled by the rig)


@pytest.fixture
def rig(monkeypatch):
    """A wrapper whose first launch of a specialisation "compiles" to the given kernel."""
    rec = _Recorder()
    first = []
    monkeypatch.setattr(_wrap, "_VIA", [rec])
    monkeypatch.setattr(_wrap, "_GETDEV", [lambda: 0])
    monkeypatch.setattr(_wrap, "_CUPY_LAUNCH", [True])
    monkeypatch.setattr(_wrap, "_FAST", [True])
    compiled = {}
    make = _cupylaunch.make_direct

    def make_direct(*a, **k):
        d = make(*a, **k)
        if isinstance(d, _cupylaunch.Direct):
            _KINDS[d.function] = d.kinds
        return d
    monkeypatch.setattr(_cupylaunch, "make_direct", make_direct)

    def call_cuda(self, grid, args, kwargs, dev):     # Triton's launch of checked arguments
        assert dev.type == "cuda"
        first.append((grid, args, dict(kwargs)))
        return compiled["kernel"]
    monkeypatch.setattr(_wrap.TritonKernelWrapper, "_call_cuda", call_cuda)
    return types.SimpleNamespace(rec=rec, first=first, compiled=compiled)


def _tensors(n, ptrs=(4096, 8192, 12288)):
    return [_cuda_like(tensorplay.randn(n), p) for p in ptrs]


def _params(recorded):
    """What each kernel parameter in a recorded launch's parameter block is: ("ptr", address),
    ("int", value) for the integer kinds, ("float32", value), or None (a null pointer)."""
    import struct
    f, raw = recorded
    out = []
    for kind, b in zip(_KINDS[f], raw):
        if kind == "null":
            assert b == bytes(8)
            out.append(None)
        elif kind == "ptr":
            out.append(("ptr", struct.unpack("=Q", b)[0]))
        elif kind == "fp32":
            out.append(("float32", struct.unpack("=f4x", b)[0]))
        else:
            code = {"i32": "=i4x", "i64": "=q", "u64": "=Q", "u1": "=?7x"}[kind]
            out.append(("int", int(struct.unpack(code, b)[0])))
    return out


def _fused_compiled_once(rig):
    """``wrap_triton(fused)`` with no remembered specialisations, launched once through Triton's
    path (which "compiles" it) on three 4096-element tensors: ``(wrapper, x, y, out)``."""
    rig.compiled["kernel"] = _fused_kernel()
    w = _wrap.wrap_triton(fused)
    w._direct.clear()
    x, y, out = _tensors(4096)
    w[(4,)](x, y, out, 1.5, 4096, BLOCK_SIZE=1024)
    return w, x, y, out


def test_int_feature_determines_tritons_int_specialisation():
    from triton.runtime.jit import native_specialize_impl
    kc = fused.device_caches            # a backend for the sm_90 target
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    del kc
    backend = make_backend(GPUTarget("cuda", 90, 32))
    values = [0, 1, 2, 15, 16, 17, 32, -1, -16, -17, 2**31 - 16, 2**31 - 1, 2**31, 2**31 + 16,
              -2**31, -2**31 - 1, -2**31 - 16, 2**62, 2**63 - 1, 2**63, 2**63 + 16, 2**64 - 16]
    seen = {}
    for v in values:
        spec = native_specialize_impl(type(backend), v, False, True, True)
        f = _cupylaunch.int_feature(v)
        assert seen.setdefault(f, spec) == spec, (v, f, spec, seen[f])
    assert len(seen) >= 6


@direct_path
def test_second_launch_of_a_specialisation_goes_through_cupy(rig):
    rig.compiled["kernel"] = k = _fused_kernel()
    w = _wrap.wrap_triton(fused)
    w._direct.clear()
    x, y, out = _tensors(4096)
    assert w[(4,)](x, y, out, 1.5, 4096, BLOCK_SIZE=1024) is k       # compiles: Triton's path
    assert len(rig.first) == 1 and not rig.rec.calls
    assert rig.rec.loads == [("fused", 0)]
    assert w[(4,)](x, y, out, 0.25, 4000, BLOCK_SIZE=1024) is k      # same specialisation
    assert len(rig.first) == 1
    (grid, block, args, shared), = rig.rec.calls
    assert grid == (4, 1, 1)
    assert block == (32 * k.metadata.num_warps, 1, 1) == (128, 1, 1)
    assert shared == k.metadata.shared
    # the kernel's parameters: pointers, fp32 scale, i32 n, then the two null scratch pointers
    assert _params(args) == [("ptr", 4096), ("ptr", 8192), ("ptr", 12288), ("float32", 0.25),
                             ("int", 4000), None, None]
    # the float32 of a float is remembered for the same object only; ints are passed as they come
    w[(4,)](x, y, out, -0.0, -16, BLOCK_SIZE=1024)
    w[(4,)](x, y, out, 0.0, 2**31 - 16, BLOCK_SIZE=1024)
    p1, p2 = (_params(c[2]) for c in rig.rec.calls[-2:])
    assert p1[3:5] == [("float32", -0.0), ("int", -16)] and str(p1[3][1]) == "-0.0"
    assert p2[3:5] == [("float32", 0.0), ("int", 2**31 - 16)] and str(p2[3][1]) == "0.0"
    # a grid function gets every parameter by name, as from Triton's binder
    seen = []

    def grid_fn(meta):
        seen.append(meta)
        return (triton.cdiv(meta["n"], meta["BLOCK_SIZE"]),)
    w[grid_fn](x, y, out, 1.0, 4000, BLOCK_SIZE=1024)
    assert rig.rec.calls[-1][0] == (4, 1, 1)
    assert list(seen[0]) == ["x_ptr", "y_ptr", "out_ptr", "scale", "n", "BLOCK_SIZE"]
    assert seen[0]["x_ptr"] is x and seen[0]["n"] == 4000


@direct_path
def test_each_thread_packs_its_own_parameter_block(rig):
    """CuPy's launchKernel releases the GIL while the driver reads the parameters: a block shared
    between threads could be overwritten mid-launch, so every thread has its own."""
    import threading
    w, x, y, out = _fused_compiled_once(rig)                  # Triton's path: compiles
    w[(4,)](x, y, out, 0.5, 4096, BLOCK_SIZE=1024)
    t = threading.Thread(target=lambda: w[(4,)](x, y, out, 2.5, 4032, BLOCK_SIZE=1024))
    t.start()
    t.join()
    w[(4,)](x, y, out, 3.5, 4096, BLOCK_SIZE=1024)
    main1, other, main2 = rig.rec.blocks
    assert main1 == main2 != other
    assert [_params(c[2])[3:5] for c in rig.rec.calls] == [
        [("float32", 0.5), ("int", 4096)], [("float32", 2.5), ("int", 4032)],
        [("float32", 3.5), ("int", 4096)]]


class _DriverError(Exception):
    """Stands in for CuPy's ``CUDADriverError`` (its ``status`` is the ``CUresult``)."""

    def __init__(self, status):
        super().__init__(f"CUresult {status}")
        self.status = status


@direct_path
def test_a_thread_without_a_cuda_context_gets_one_and_the_same_launch(rig):
    """A thread whose first CUDA work is a direct launch has no current context (CuPy's pool can
    give it memory without a runtime call): cuLaunchKernel fails with CUDA_ERROR_INVALID_CONTEXT.
    The launch asks ``make_current`` to make the device's primary context current and launches
    the same parameters again; any other driver error is raised as it came (device run of
    2026-12-04: eager ops from a worker thread raised)."""
    w, x, y, out = _fused_compiled_once(rig)
    rec = rig.rec
    real = rec.launch
    fail = []
    made = []

    def launch(*a):
        if fail:
            raise _DriverError(fail.pop())
        return real(*a)

    def make_current(exc, device_index):
        made.append((exc.status, device_index))
        return exc.status == 201
    rec.launch = launch
    rec.make_current = make_current
    w._direct.clear()
    w[(4,)](x, y, out, 0.5, 4096, BLOCK_SIZE=1024)       # Triton's path, then the direct entry
    fail.append(201)
    w[(4,)](x, y, out, 2.5, 4032, BLOCK_SIZE=1024)
    assert made == [(201, 0)]
    assert [_params(c[2])[3:5] for c in rec.calls] == [[("float32", 2.5), ("int", 4032)]]
    fail.append(700)                                      # CUDA_ERROR_ILLEGAL_ADDRESS: raised
    with pytest.raises(_DriverError, match="700"):
        w[(4,)](x, y, out, 3.5, 4096, BLOCK_SIZE=1024)
    assert made[-1] == (700, 0) and len(rec.calls) == 1


def test_make_current_leaves_other_failures_alone():
    """``CupyLaunch.make_current`` recovers only CUDA_ERROR_INVALID_CONTEXT (201)."""
    assert _cupylaunch.CUPY.make_current(_DriverError(700), 0) is False
    assert _cupylaunch.CUPY.make_current(ValueError("not a driver error"), 0) is False


@direct_path
def test_an_fp32_argument_out_of_float32_range_is_inf_as_in_tritons_launcher(rig):
    w, x, y, out = _fused_compiled_once(rig)
    with np.errstate(over="ignore"):
        w[(4,)](x, y, out, 1e39, 4096, BLOCK_SIZE=1024)
        w[(4,)](x, y, out, -1e300, 4096, BLOCK_SIZE=1024)
    assert [_params(c[2])[3] for c in rig.rec.calls] == [("float32", float("inf")),
                                                         ("float32", float("-inf"))]


@direct_path
def test_anything_that_changes_tritons_specialisation_is_a_new_entry(rig):
    w, x, y, out = _fused_compiled_once(rig)
    variants = [
        ((x, y, _cuda_like(tensorplay.randn(8), 12296), 1.5, 4096), {"BLOCK_SIZE": 1024}),  # align
        ((x, y, out, 1.5, 4095), {"BLOCK_SIZE": 1024}),                 # n no longer % 16
        ((x, y, out, 1.5, 2**31), {"BLOCK_SIZE": 1024}),                # n needs i64
        ((x, y, out, 1.5, 4096), {"BLOCK_SIZE": 512}),                  # constexpr
        ((x, y, out, 1.5, 4096), {"BLOCK_SIZE": 1024, "num_warps": 8}),  # option
        ((x, y, out, 2, 4096), {"BLOCK_SIZE": 1024}),                   # int, not float
        ((_cuda_like(tensorplay.randn(8, dtype=tensorplay.float16), 4096), y, out, 1.5, 4096),
         {"BLOCK_SIZE": 1024}),                                        # dtype
    ]
    for i, (args, kw) in enumerate(variants):
        w[(4,)](*args, **kw)
        assert len(rig.first) == 2 + i, f"variant {i} reused another specialisation's kernel"
    assert len(w._direct) == 1 + len(variants)


@direct_path
def test_a_value_of_one_is_a_constexpr_and_not_passed(rig):
    rig.compiled["kernel"] = _fused_kernel(n_is_one=True)
    w = _wrap.wrap_triton(fused)
    w._direct.clear()
    x, y, out = _tensors(16)
    w[(1,)](x, y, out, 1.5, 1, BLOCK_SIZE=1024)
    w[(1,)](x, y, out, 1.5, 1, BLOCK_SIZE=1024)
    (_, _, args, _), = rig.rec.calls
    assert _params(args) == [("ptr", 4096), ("ptr", 8192), ("ptr", 12288), ("float32", 1.5), None,
                             None]


@direct_path
def test_bool_and_i64_parameters_and_defaults(rig):
    rig.compiled["kernel"] = _compile(
        flags, {"x_ptr": "*fp32", "on": "u1", "big": "i64", "n": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 64})
    w = _wrap.wrap_triton(flags)
    w._direct.clear()
    (x,) = _tensors(64, ptrs=(4096,))
    for _ in range(2):
        w[(1,)](x, True, 2**33, 64, BLOCK=64)
    (_, _, args, _), = rig.rec.calls
    assert _params(args) == [("ptr", 4096), ("int", 1), ("int", 2**33), ("int", 64), None, None]


@direct_path
def test_launches_that_need_tritons_own_path_do_not_use_cupy(rig, monkeypatch):
    rig.compiled["kernel"] = _fused_kernel()
    w = _wrap.wrap_triton(fused)
    w._direct.clear()
    x, y, out = _tensors(4096)
    go = lambda g=(4,): w[g](x, y, out, 1.5, 4096, BLOCK_SIZE=1024)
    go()
    go()
    assert len(rig.rec.calls) == 1 and len(rig.first) == 1
    chain = triton.knobs.runtime.launch_enter_hook
    hook = lambda md: None
    chain.add(hook)                          # a launch hook: Triton's launcher calls it
    try:
        go()
    finally:
        chain.remove(hook)
    assert len(rig.first) == 2
    fused.pre_run_hooks.append(lambda *a, **k: None)
    try:
        go()
    finally:
        fused.pre_run_hooks.clear()
    assert len(rig.first) == 3
    monkeypatch.setattr(_wrap, "_GETDEV", [lambda: 1])   # another device is current
    go()
    assert len(rig.first) == 4
    monkeypatch.setattr(_wrap, "_GETDEV", [lambda: 0])
    go((0,))                                 # an empty grid: Triton's launcher launches nothing
    assert len(rig.first) == 5 and rig.first[-1][0] == (0, 1, 1)
    monkeypatch.setattr(_wrap, "_CUPY_LAUNCH", [False])
    go()
    assert len(rig.first) == 6
    assert len(rig.rec.calls) == 1           # none of these went through CuPy


@direct_path
def test_make_direct_refuses_what_it_cannot_launch():
    k = _fused_kernel()
    rec = _Recorder()
    ok = _cupylaunch.make_direct(k, 0, fused, 5, {"BLOCK_SIZE": 1024}, rec)
    assert isinstance(ok, _cupylaunch.Direct)

    class Md:                                # the same metadata with one field changed
        def __init__(self, **changes):
            self.__dict__.update(k.metadata._asdict(), **changes)

    for change in ({"global_scratch_size": 64}, {"profile_scratch_size": 8}, {"num_ctas": 2},
                   {"launch_pdl": True}, {"launch_cooperative_grid": True},
                   {"shared": 64 * 1024}):
        fake = types.SimpleNamespace(metadata=Md(**change), asm=k.asm, src=k.src)
        r = _cupylaunch.make_direct(fake, 0, fused, 5, {"BLOCK_SIZE": 1024}, rec)
        assert isinstance(r, _cupylaunch.TritonPath), change
    bad_ptx = dict(k.asm)
    bad_ptx["ptx"] = k.asm["ptx"].replace(".param .f32", ".param .f64")
    fake = types.SimpleNamespace(metadata=k.metadata, asm=bad_ptx, src=k.src)
    r = _cupylaunch.make_direct(fake, 0, fused, 5, {"BLOCK_SIZE": 1024}, rec)
    assert isinstance(r, _cupylaunch.TritonPath) and "PTX" in r.reason
    assert len(rec.loads) == 1               # only the launchable one was loaded


# -- the example pack's out-variant: the cheap combined check keeps every message and its order --

@pytest.mark.parametrize("case, exc, msg", [
    ("shape", ValueError, r"x and y must have the same shape"),
    ("dtype", TypeError, r"x and y must have the same dtype"),
    ("int", TypeError, r"expected floating-point tensors"),
    ("out-shape", ValueError, r"out must have shape \(8,\) and dtype"),
    ("out-dtype", ValueError, r"out must have shape \(8,\) and dtype"),
    ("out-overlap", RuntimeError, r"more than one element of the written-to tensor"),
    ("shape+out", ValueError, r"x and y must have the same shape"),      # first failure wins
])
def test_example_out_variant_checks_keep_their_messages(case, exc, msg):
    from tensorplay_example_ops import triton_ops
    if not triton_ops.AVAILABLE:
        pytest.skip(triton_ops.UNAVAILABLE_REASON)
    f32, f16, i32 = tensorplay.float32, tensorplay.float16, tensorplay.int32
    x, y, out = tensorplay.randn(8), tensorplay.randn(8), tensorplay.empty(8)
    if case == "shape":
        y = tensorplay.randn(9)
    elif case == "dtype":
        y = y.to(f16)
    elif case == "int":
        x, y, out = x.to(i32), y.to(i32), out.to(i32)
    elif case == "out-shape":
        out = tensorplay.empty(9)
    elif case == "out-dtype":
        out = tensorplay.empty(8, dtype=f16)
    elif case == "out-overlap":      # a strided out is fine (written through its strides)
        out = tensorplay.empty(1).expand(8)
    elif case == "shape+out":
        y, out = tensorplay.randn(9), tensorplay.empty(3, dtype=f16)
    assert x.dtype in (f32, i32)
    with pytest.raises(exc, match=msg):
        tensorplay.ops.example.fused_add_mul_relu_out(x, y, 1.5, out)


@direct_path
def test_autotuned_kernel_launches_its_chosen_config_through_cupy(rig):
    """Once @triton.autotune has chosen a config for a key, launches with that key go to the inner
    kernel's CuPy launch with the config's keywords, as Autotuner.run would pass them."""
    rig.compiled["kernel"] = _fused_kernel()
    inner = triton.JITFunction(fused.fn)
    tuned = triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 512}),
                                     triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)],
                            key=["n"])(inner)
    w = _wrap.wrap_triton(tuned)
    x, y, out = _tensors(4096)
    grid = lambda m: (triton.cdiv(m["n"], m["BLOCK_SIZE"]),)
    assert w._tuned_launch(grid, (x, y, out, 1.5, 4096), {}) is _wrap._MISS   # not tuned yet
    assert not rig.first
    best = tuned.configs[1]
    tuned.cache[(4096, "tensorplay.float32", "tensorplay.float32", "tensorplay.float32")] = best
    for scale in (1.5, 2.5):
        w[grid](x, y, out, scale, 4096)
    (_, _, kw), = rig.first                   # the first launch: Triton, with the config's keywords
    assert kw["BLOCK_SIZE"] == 1024 and kw["num_warps"] == 4
    (grid_seen, block, params, _), = rig.rec.calls     # the second: CuPy
    assert grid_seen == (4, 1, 1) and block == (128, 1, 1)
    assert _params(params)[3] == ("float32", 2.5)
    assert tuned.best_config is best
    # a keyword the config also sets: Autotuner.run's own error, not a silent override
    assert w._tuned_launch(grid, (x, y, out, 1.5, 4096), {"BLOCK_SIZE": 64}) is _wrap._MISS
    best.pre_hook = lambda nargs: None        # a config pre-hook: Autotuner.run calls it
    try:
        assert w._tuned_launch(grid, (x, y, out, 1.5, 4096), {}) is _wrap._MISS
    finally:
        best.pre_hook = None
