"""Host cost of a built-in op on a 1-element cuda tensor, tensorplay's side only, with the CuPy
call stubbed: runs on any machine with CuPy installed, GPU or not (no kernel is launched).

The tensors are ``cupy.ndarray`` objects over host memory (``UnownedMemory``; never touched by a
kernel), ``cupy.add`` is replaced by a function returning a preallocated array before the cuda
backend binds its kernels, and the backend is told one GPU is visible. Then, interleaved, minimum
over ``--rounds`` rounds of 20000 calls each (minimums: the machine may be shared):

* ``tp.add`` minus the stub: dispatch -> the generated adapter, which on floating operands of
  one dtype calls the ufunc itself (``TENSORPLAY_CUDA_EAGER_LAUNCH=0`` is set here: on a GPU,
  same-shape dense operands take one lean launch of a generated kernel instead) and builds the result tensor from the operand's metadata
  (other cases: -> eager kernel -> ``backend.wrap``);
* the adapter alone (minus the stub), the eager kernel alone (minus the stub), ``backend.wrap``
  alone (every other op's result), and one ``device_guard`` ``with`` block (what the adapters
  skip with one GPU);
* the factories (``tp.empty``, ``empty_like``, ``zeros``, ``zeros_like``, ``new_empty``,
  ``full_like``, and ``ones``, ``full``, ``empty('cuda')``: the device spelled as a string, as
  ``bench_cuda_factories.py`` spells it) on ``cuda:0`` with the CuPy allocation stubbed the same
  way (net of the stub: ``cupy.empty`` and the plugin's ``_new_array``, i.e. ``cupy.ndarray``,
  which its allocations call; ``fill.filled``, the memset / fill-kernel launch): the factory ->
  the op's dispatch -> adapter -> kernel -> allocation -> the result tensor;
* ``custom op``: a ``library.custom_op`` on cuda whose body is ``from_cupy(cupy.add(as_cupy(t),
  1.0))`` (the stub again) called through the op, minus the same body called directly (what
  ``bench_gpu.py`` pairs as "custom op - its body": minimum through the op minus minimum of the
  body); ``body`` is that body net of the stub.

On an H200 host this stubbed figure was about half to two thirds of the paired
``tp.add - cupy.add`` that ``bench_gpu.py`` measures with real launches.

``--launch``: instead, the small dense ops' one-launch path (``tensorplay_cuda.eager._dense``, on
by default on a GPU): ``tp.mul(x, y)``, ``x + 1.0`` and ``tp.relu(x)`` on 2^16-element float32
tensors, each call dispatch -> adapter -> the dense case -> the op's generated kernel launched
with one driver call. What has no GPU here is stood in for: CuPy's allocator hands out host
memory (``cupy.cuda.set_allocator``: the pool's own cost is not in these figures), the current
device is 0, the driver's ``launchKernel`` counts its calls (nothing is launched) and the
current stream is the null stream; the kernels are compiled for real by Triton for an sm_90
target, with the signature Triton's first launch would specialise, and the launch is built
from them as on a GPU (``_cupylaunch.make_direct``). Also ``tp.empty``, ``empty_like`` and
``new_empty`` of that size on ``cuda:0``: the factories that launch nothing, with their
``cupy.ndarray`` built for real over the stubbed allocator (the plain mode's figures leave the
array's construction out). Printed: µs per call (minimum over the rounds) and the stubbed
``launchKernel`` alone. Then the same three ops on 2^22 elements (``eager.THRESHOLD``: the
large arrays' aligned one-launch path). With them ``tp.full``, ``full_like`` and ``ones``: the fill kernel's
launch (``fill.filled``) through the same stubbed ``launchKernel`` (``zeros``' memset has no
stand-in).

``--alloc`` (a GPU needed): what a result array's allocation costs the host, each made and
dropped (back to CuPy's pool) per call, 2^16 float32 elements: ``cupy.ndarray(shape, dtype)``,
``tensorplay_cuda.fresh``'s route (what the eager ops and factories use), ``cupy.empty``, the
pool's ``malloc`` of the bytes alone and ``cupy.cuda.memory.alloc``; and the look-ups around a
launch: ``get_current_stream(0).ptr`` and ``runtime.getDevice()``. What is left of an op's
host time beside the allocation is the stubbed figures above.

``--launch --dtype bfloat16``: the same ops on bfloat16 arrays (the factories stay float32):
every one of them is one launch too (the reference kernel's float32 launches never run).
Session 57 added ``tp.tanh(x)`` and ``1.0 - x`` (``rsub``; small arrays in bfloat16 only) to
the ops.

``--host-code``: the small eager calls of ``bench_cuda_host_code.py`` (the host code around
real kernel libraries' launches) under the same stand-ins, at its sizes: ``target * mask``
(int64 * bool), ``target + target``, ``target != -100``, ``x < out``, ``x > 0.0``,
``mask.float()``, ``q.transpose(1, 2).contiguous()`` and the multiplication and comparison of
``bool((target * mask).max() < 800)`` (the reduction and the read-back have no stand-in), with
the driver launches each call makes; a call whose path runs a CuPy kernel (no stand-in: it
raises) prints ``cupy``. µs per call: the median over the rounds of 5000 calls.

Usage: ``python benchmarks/bench_cuda_host.py [--rounds N] [--launch [--dtype bfloat16] |
--alloc | --host-code]``. Prints one line of µs figures.
``TENSORPLAY_BENCH_CPU_TIME=1`` times with the process's CPU clock (a machine shared with other
work then does not add the time spent waiting for a core; for comparisons, as ``_harness``).
"""

from __future__ import annotations

import argparse
import os
import time
import timeit


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--launch", action="store_true",
                    help="the small dense ops' one-launch path instead (see the docstring)")
    ap.add_argument("--alloc", action="store_true",
                    help="on a GPU: the host cost of a result array's allocation (docstring)")
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                    help="--launch: the ops' dtype (the factories stay float32)")
    ap.add_argument("--host-code", action="store_true",
                    help="the host-code calls of bench_cuda_host_code.py (see the docstring)")
    args = ap.parse_args(argv)
    if args.host_code:
        return host_code_path(args.rounds)
    if args.launch:
        return launch_path(args.rounds, args.dtype)
    if args.alloc:
        return alloc_costs(args.rounds)
    import numpy as np
    try:
        import cupy
    except ImportError as e:
        print(f"bench_cuda_host: needs CuPy installed ({e})")
        return 2
    keep = []

    def host_backed(n=1):
        h = np.zeros(n + 16, np.float32)
        keep.append(h)
        mem = cupy.cuda.UnownedMemory(h.ctypes.data, h.nbytes, h, device_id=0)
        return cupy.ndarray((n,), np.float32, memptr=cupy.cuda.MemoryPointer(mem, 0))

    res_arr = host_backed()

    def stub(a, b):
        return res_arr

    cupy.add = stub                                   # before the cuda kernels bind it
    # the ufunc case: with a GPU, same-shape dense operands launch a generated kernel instead
    # (tensorplay_cuda.eager._dense), which no stub stands in for; bench_gpu.py times that one
    os.environ["TENSORPLAY_CUDA_EAGER_LAUNCH"] = "0"

    def stub_alloc(shape, *args, dtype=None):         # cupy.empty / cupy.full's stand-in
        return res_arr

    cupy.empty = cupy.full = stub_alloc
    # no driver needed: the device's availability check (libcuda loading) is told there is one
    from tensorplay_cuda import _cupy_install
    _cupy_install.setup_problem = lambda: None
    from tensorplay_cuda import fill
    fill.filled = lambda cupy, shape, value, dtype: res_arr    # the memset / fill-kernel stand-in
    from tensorplay_cuda import backend as B
    B._new_array = stub_alloc                         # cupy.ndarray(shape, dtype): empty's call
    B.CUDABackend.is_available = lambda self: (setattr(self, "_count", 1) or (True, ""))
    import tensorplay as tp
    from tensorplay import _backend
    be = _backend.get_backend("cuda")
    dev = tp.device("cuda", 0)
    x, y = be.wrap(host_backed(), dev), be.wrap(host_backed(), dev)
    add = tp.add
    assert add(x, y)._data is res_arr
    import tensorplay_cuda
    from tensorplay import library

    def plus1(t):
        return tensorplay_cuda.from_cupy(cupy.add(tensorplay_cuda.as_cupy(t), 1.0))
    plus1.__annotations__ = {"t": tp.Tensor, "return": tp.Tensor}   # tp is local to main()
    plus1 = library.custom_op("benchcudahost::plus1", plus1, mutates_args=(),
                              device_types="cuda")
    body = library.get_kernel(plus1, "cuda")
    assert plus1(x)._data is res_arr
    assert tp.empty(1, device=dev)._data is res_arr and tp.zeros_like(x)._data is res_arr
    assert tp.ones(1, device="cuda")._data is res_arr
    g = dict(tp=tp, dt=tp.float32, sa=stub_alloc, sh=(1,), add=add, x=x, y=y, a=x._data, b=y._data, stub=stub, k=be.kernels()["add"],
             adapter=tp.ops.tp.add.table["cuda"], wrap=be.wrap, r=res_arr, d=x._device,
             guard=B.CUDABackend.device_guard.__get__(be), plus1=plus1, body=body)
    stmts = {"stub": "stub(a, b)", "tp.add": "add(x, y)", "adapter": "adapter(x, y)",
             "kernel": "k(a, b)", "wrap": "wrap(r, d)", "guard": "with guard(d): pass",
             "body": "body(x)", "custom op": "plus1(x)", "alloc stub": "sa(sh, dtype=dt)",
             "tp.empty": "tp.empty(sh, dtype=dt, device=d)", "empty_like": "tp.empty_like(x)",
             "zeros": "tp.zeros(sh, device=d)", "zeros_like": "tp.zeros_like(x)",
             "new_empty": "x.new_empty(sh)", "full_like": "tp.full_like(x, 2.0)",
             "ones": "tp.ones(sh, device=d)", "full": "tp.full(sh, 2.0, device=d)",
             "empty('cuda')": "tp.empty(sh, device='cuda')"}
    timer = time.process_time if os.environ.get("TENSORPLAY_BENCH_CPU_TIME") else time.perf_counter
    out = {n: [] for n in stmts}
    for _ in range(args.rounds):
        for n, s in stmts.items():
            out[n].append(timeit.Timer(s, globals=g, timer=timer).timeit(20000) / 20000 * 1e6)
    m = {n: min(v) for n, v in out.items()}
    m["custom op"] -= m["body"]     # its overhead: minimum through the op - minimum of the body
    net = {"tp.add", "adapter", "kernel", "body"}
    alloc = {"tp.empty", "empty_like", "zeros", "zeros_like", "new_empty", "full_like", "ones",
             "full", "empty('cuda')"}
    print("  ".join(f"{n} {v - (m['stub'] if n in net else m['alloc stub'] if n in alloc else 0):.3f}"
                    for n, v in m.items() if n != "alloc stub"),
          " (µs per call, minimum; tp.add/adapter/kernel/body net of the stubbed CuPy call, "
          "custom op net of its body, factories net of the stubbed cupy.empty/full)")
    return 0


def _minimums(stmts: dict, g: dict, rounds: int) -> dict:
    """name -> µs per call of its statement (``stmts``, run in namespace ``g``): the minimum over
    ``rounds`` interleaved rounds of 20000 calls each (``TENSORPLAY_BENCH_CPU_TIME=1``: process
    CPU time)."""
    timer = time.process_time if os.environ.get("TENSORPLAY_BENCH_CPU_TIME") else time.perf_counter
    out = {n: [] for n in stmts}
    for _ in range(rounds):
        for n, st in stmts.items():
            out[n].append(timeit.Timer(st, globals=g, timer=timer).timeit(20000) / 20000 * 1e6)
    return {n: min(v) for n, v in out.items()}


def alloc_costs(rounds: int) -> int:
    """``--alloc``: the host cost of allocating a result array on a GPU (module docstring)."""
    import numpy as np
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - no CuPy, no driver, no GPU: said, not raised
        print(f"bench_cuda_host --alloc: needs CuPy and a GPU ({e})")
        return 2
    from tensorplay_cuda import fresh
    f32, shape = np.dtype(np.float32), (1 << 16,)
    pool = cupy.get_default_memory_pool()
    g = dict(cupy=cupy, f32=f32, sh=shape, nb=4 << 16, new=fresh.new_array_for(cupy.ndarray),
             malloc=pool.malloc, alloc=cupy.cuda.memory.alloc,
             stream=cupy.cuda.get_current_stream, getdev=cupy.cuda.runtime.getDevice)
    stmts = {"cupy.ndarray": "cupy.ndarray(sh, f32)", "fresh route": "new(sh, f32)",
             "cupy.empty": "cupy.empty(sh, f32)", "pool.malloc": "malloc(nb)",
             "memory.alloc": "alloc(nb)", "stream(0).ptr": "stream(0).ptr",
             "getDevice": "getdev()"}
    for st in stmts.values():
        eval(st, g)                                     # noqa: S307
    print("  ".join(f"{n} {v:.3f}" for n, v in _minimums(stmts, g, rounds).items()),
          f" (µs per call, minimum; made and dropped; fresh route applies: "
          f"{fresh.route(cupy) is not None})")
    return 0


# NumPy dtype name -> Triton's pointer element type (what the eager kernels take)
_TRITON_TYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
                 "bool": "i1", "int8": "i8", "uint8": "u8", "int16": "i16", "int32": "i32",
                 "int64": "i64"}


def launch_stand_ins(setattr, launch_kernel, nbytes):
    """Install what the one-launch path needs of a GPU, on a machine without one, with
    ``setattr`` (the builtin, or a test's ``monkeypatch.setattr``): CuPy's allocator hands out one
    host block of ``nbytes`` (512-byte aligned, as CuPy's pool; every array over it), the
    current device is 0, the current stream the null stream, the driver's ``launchKernel`` is
    ``launch_kernel`` (same parameters) and loading a cubin gives function address 0x1000; a
    chain's first launch (``triton_fusion._launch_cuda``) compiles the kernel for an sm_90 target
    with the signature Triton's first launch would specialise (the dense case's kernels
    specialise nothing: pointers, i32 ints, fp32 floats) and launches nothing; the dense case
    compiles on its first call (no warm-up: that would run CuPy's ufunc) and never sees a
    capture. The Triton release is taken as one whose launch convention was checked (its host
    side is the same code). Returns the allocator to restore (``cupy.cuda.set_allocator``)."""
    import tensorplay
    if tensorplay.plugins.device_status("cuda")[0]:
        # host memory handed out as device memory: a real kernel writing there is an illegal
        # address that poisons the process's CUDA context for every later test
        raise RuntimeError("launch_stand_ins: a GPU is present; the stand-ins are for machines "
                           "without one (skip the caller there)")
    import numpy as np
    import cupy
    import triton
    from tensorplay_cuda import eager, triton_fusion
    from tensorplay_triton import _cupylaunch, _wrap
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    heap = np.zeros(nbytes + 512, np.uint8)
    base = -heap.ctypes.data % 512
    mem = cupy.cuda.UnownedMemory(heap.ctypes.data + base, nbytes, heap, device_id=0)
    block = cupy.cuda.MemoryPointer(mem, 0)
    previous = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(lambda size: block)
    setattr(cupy.cuda.runtime, "getDevice", lambda: 0)
    setattr(_cupylaunch, "TESTED_VERSIONS", (triton.__version__,))
    for name in ("_RT", "_COMP", "_HOOKCHAIN"):         # (_direct_setup's cache of the check)
        setattr(_wrap, name, [None])
    null = cupy.cuda.Stream.null

    def current_stream(device_id=-1):
        return null
    setattr(_cupylaunch.CupyLaunch, "load", lambda self, cubin, name, idx: (None, 0x1000))
    setattr(_cupylaunch.CupyLaunch, "launch", property(lambda self: launch_kernel))
    setattr(_cupylaunch.CupyLaunch, "current_stream", property(lambda self: current_stream))
    setattr(eager, "_capturing", lambda backend: False)
    setattr(eager, "WARMUP_CALLS", 0)
    fconst = cupy.ndarray((1,), np.float64)             # (the chain copies it to the GPU)
    setattr(triton_fusion.TritonChain, "_fconst_array", lambda self, fconsts, arrays: fconst)

    def compile_only(kern, grid, args, arrays, blk=None, num_warps=triton_fusion.NUM_WARPS):
        sig = {}
        for name, v in zip(kern.arg_names, args):
            if isinstance(v, cupy.ndarray):
                sig[name] = "*" + _TRITON_TYPES[v.dtype.name]
            else:
                sig[name] = "fp32" if isinstance(v, float) else "i32"
        sig["BLOCK"] = "constexpr"
        return triton.compile(ASTSource(kern, signature=sig, constexprs={"BLOCK": blk}),
                              target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})
    setattr(triton_fusion, "_launch_cuda", compile_only)
    return previous


def host_code_path(rounds: int) -> int:
    """``--host-code`` (module docstring)."""
    import statistics
    import numpy as np
    try:
        import cupy
    except ImportError as e:
        print(f"bench_cuda_host: needs CuPy installed ({e})")
        return 2
    launched = [0]

    def launch_kernel(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        launched[0] += 1
    launch_stand_ins(setattr, launch_kernel, 1 << 24)
    from tensorplay_cuda import _cupy_install
    _cupy_install.setup_problem = lambda: None
    from tensorplay_cuda import backend as B
    B.CUDABackend.is_available = lambda self: (setattr(self, "_count", 1) or (True, ""))
    import tensorplay as tp
    from tensorplay import _backend
    be = _backend.get_backend("cuda")
    dev = tp.device("cuda", 0)

    def new(shape, dt):
        return be.wrap(cupy.ndarray(shape, np.dtype(dt)), dev)
    g = dict(q=new((2, 64, 48, 128), np.float32), x=new((96, 800), np.float32),
             out=new((96, 800), np.float32), t=new((96,), np.int64), m=new((96,), np.bool_),
             mx=new((), np.int64))
    stmts = {"target * mask": "t * m", "target + target": "t + t", "target != -100": "t != -100",
             "x < out": "x < out", "x > 0.0": "x > 0.0", "mask.float()": "m.float()",
             "q.transpose(1, 2).contiguous()": "q.transpose(1, 2).contiguous()",
             "q.transpose(1, 2)": "q.transpose(1, 2)", "max() < 800 (0-d int64)": "mx < 800"}
    timer = time.process_time if os.environ.get("TENSORPLAY_BENCH_CPU_TIME") else time.perf_counter
    ok, launches = {}, {}
    for n, st in stmts.items():
        try:
            for _ in range(12):                         # past the warm-up, compiled
                eval(st, g)                             # noqa: S307
            before = launched[0]
            eval(st, g)                                 # noqa: S307
            launches[n] = launched[0] - before
            ok[n] = st
        except Exception:  # noqa: BLE001 - a CuPy kernel: no driver here
            pass
    out = {n: [] for n in ok}
    for _ in range(rounds):
        for n, st in ok.items():
            out[n].append(timeit.Timer(st, globals=g, timer=timer).timeit(5000) / 5000 * 1e6)
    print("  ".join(f"{n}: {statistics.median(out[n]):.2f} ({launches[n]} launch)" if n in ok
                    else f"{n}: cupy" for n in stmts),
          " (µs per call, median; launches per call)")
    return 0


def launch_path(rounds: int, dtype: str = "float32") -> int:
    """``--launch``: the host cost of the small dense ops' one-launch path (module docstring),
    the ops on ``dtype`` arrays (``bfloat16``: ml_dtypes' dtype, as the cuda backend stores it)."""
    import numpy as np
    try:
        import cupy
        import triton  # noqa: F401
    except ImportError as e:
        print(f"bench_cuda_host --launch: needs CuPy and Triton installed ({e})")
        return 2
    n = 1 << 16
    launched = [0]

    def launch_kernel(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        launched[0] += 1

    launch_stand_ins(setattr, launch_kernel, 4 * n)
    from tensorplay_cuda import _cupy_install
    _cupy_install.setup_problem = lambda: None
    from tensorplay_cuda import backend as B
    B.CUDABackend.is_available = lambda self: (setattr(self, "_count", 1) or (True, ""))
    from tensorplay_triton import _cupylaunch
    import tensorplay as tp
    from tensorplay import _backend
    be = _backend.get_backend("cuda")
    dev = tp.device("cuda", 0)
    if dtype == "bfloat16":
        import ml_dtypes
        nat = np.dtype(ml_dtypes.bfloat16)
        be.native_dtype(tp.bfloat16)             # bf16 in use: the kernels bf16-correct
    else:
        nat = np.dtype(np.float32)
    x = be.wrap(cupy.ndarray((n,), nat), dev)
    y = be.wrap(cupy.ndarray((n,), nat), dev)
    g = dict(tp=tp, x=x, y=y, launch=launch_kernel)
    stmts = {"tp.mul(x, y)": "tp.mul(x, y)", "x + 1.0": "x + 1.0", "tp.relu(x)": "tp.relu(x)",
             "tp.tanh(x)": "tp.tanh(x)"}
    if dtype == "bfloat16":          # (float32's small rsub is CuPy's ufunc: no stand-in here)
        stmts["1.0 - x"] = "1.0 - x"
    for s in stmts.values():
        eval(s, g)                                      # compiles the op's kernel  # noqa: S307
        before = launched[0]
        r = eval(s, g)                                  # noqa: S307
        assert launched[0] == before + 1 and r.shape == (n,), f"{s}: not one launch"
    # the large arrays' case (eager.THRESHOLD elements: the aligned one-launch path, its arrays
    # over the same stubbed allocator, never touched)
    from tensorplay_cuda import eager
    big = eager.THRESHOLD
    g.update(X=be.wrap(cupy.ndarray((big,), nat), dev),
             Y=be.wrap(cupy.ndarray((big,), nat), dev))
    e2 = f"2^{big.bit_length() - 1}"
    large = {f"tp.mul(X, Y) {e2}": "tp.mul(X, Y)", f"X + 1.0 {e2}": "X + 1.0",
             f"tp.relu(X) {e2}": "tp.relu(X)", f"1.0 - X {e2}": "1.0 - X"}
    for s in large.values():
        eval(s, g)                                      # compiles the aligned kernel  # noqa: S307
        before = launched[0]
        r = eval(s, g)                                  # noqa: S307
        assert launched[0] == before + 1 and r.shape == (big,), f"{s}: not one launch"
    stmts.update(large)
    for op, key in (("mul", (nat, 0)), ("add", (nat, 0, float)), ("relu", (nat, 0))):
        e = be.kernels()[op]._tp_dense_ufunc.launches.get(key)
        assert isinstance(getattr(e, "direct", None), _cupylaunch.Direct), f"{op}: {e!r}"
    # the factories, their allocation made for real (CuPy's ndarray over the stubbed allocator:
    # what the plain mode's stub leaves out); full's fill kernel (fill.filled) launched through
    # the same stubbed launchKernel, as loaded on this thread, on the null stream (the zero
    # fills' memset has no stand-in: zeros is not timed here)
    from tensorplay_cuda import fill
    fill._launch[:] = [launch_kernel]
    fill._functions[0] = (None, 0x1000)
    fill._PARAMS.ready.add(0)
    null = cupy.cuda.Stream.null
    cupy.cuda.get_current_stream = lambda device_id=-1: null
    g.update(dev=dev, sh=(n,))
    stmts.update({"tp.empty": "tp.empty(sh, device=dev)", "empty_like": "tp.empty_like(x)",
                  "new_empty": "x.new_empty(sh)", "tp.full": "tp.full(sh, 2.0, device=dev)",
                  "full_like": "tp.full_like(x, 2.0)", "ones": "tp.ones(sh, device=dev)"})
    for s in ("tp.empty", "empty_like", "new_empty", "tp.full", "full_like", "ones"):
        before = launched[0]
        r = eval(stmts[s], g)                           # noqa: S307
        assert r.shape == (n,) and r._data.__class__ is cupy.ndarray, s
        assert launched[0] == before + (s in ("tp.full", "full_like", "ones")), s
    stmts["launchKernel stub"] = "launch(0, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0)"
    print("  ".join(f"{name} {v:.3f}" for name, v in _minimums(stmts, g, rounds).items()),
          " (µs per call, minimum; the one-launch path, launchKernel stubbed; the factories "
          "with CuPy's allocator stubbed)")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
