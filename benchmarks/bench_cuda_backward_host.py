"""Host time of the backward of ``bench_cuda_backward.py``'s reduction graphs on cuda, on a machine
without a GPU: ``x.sum(1).mean()`` and ``x.exp().sum(1).log().mean()`` on a 4096x4096 float32
``x`` (issue 32 item 5: on an H100 both backwards were host-bound, 55-61 µs above torch's).

What has no GPU here is stood in for (``bench_cuda_host.launch_stand_ins``: CuPy's allocator hands
out host memory, the driver's ``launchKernel`` counts its calls, Triton compiles for an sm_90
target and launches nothing), and also: the fill kernel's and ``bcast``'s row-fill kernel's
function addresses (``fill.launch_packed``), ``cupy.cuda.Device`` (a no-op block: the chain's first
call enters it), and what CuPy launches itself, which cannot run without a driver -- the
forward's kernels (``sum``, ``mean``, ``exp``, ``log``: a fresh array of the result's shape; only
the backward is timed) and ``cupy.divide`` (recorded where called: before session 60 the mean's
gradient, ``g.expand(n) / n``, a 0-stride operand, ran CuPy's ufunc, stubbed by a fresh array, so
its own host time, ~10 µs on an H200 host, was not in these figures; since, it is the generated
kernel's one launch, timed here). No array is read or written.

Printed per graph: µs of host time per ``loss.backward()`` (median and minimum over ``--rounds``
interleaved rounds of ``--iters`` backwards, each after its own untimed forward), the driver
launches and stubbed CuPy calls of one backward; ``--profile``: cProfile's top entries.
``TENSORPLAY_BENCH_CPU_TIME=1``: the process's CPU clock.

Usage: ``python benchmarks/bench_cuda_backward_host.py [--rounds N] [--iters N] [--profile]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

N = 4096
GRAPHS = {"sum_mean": lambda x: x.sum(1).mean(),
          "lse_mean": lambda x: x.exp().sum(1).log().mean()}


def setup(setattr_=setattr, n=N, handles=None):
    """Install the stand-ins (module docstring) with ``setattr_`` and return
    ``(backend, x, launched, stubbed)``: the cuda backend, ``x`` (n x n float32, requiring grad),
    the recorded driver launches ``(function, grid, block)`` and stubbed CuPy calls. The backend
    is a fresh ``CUDABackend`` made the ``cuda`` device's with ``tensorplay.backends.register``
    (a machine without a GPU has none loaded); its handle is appended to ``handles`` when given,
    whose ``destroy()`` forgets it again (a test's teardown: otherwise every later test of the
    process would find a ``cuda`` device)."""
    import numpy as np
    import cupy
    import bench_cuda_host
    launched, stubbed = [], []

    def launch_kernel(f, g0, g1, g2, b0, b1, b2, shared, stream, params, extra):
        launched.append((f, (g0, g1, g2), (b0, b1, b2)))
    bench_cuda_host.launch_stand_ins(setattr_, launch_kernel, 4 * n * n + 4096)

    def divide(a, b):
        stubbed.append(("cupy.divide", a.shape, a.strides))
        return cupy.ndarray(a.shape, a.dtype)
    setattr_(cupy, "divide", divide)                 # before the kernels bind it

    class _Device:                                   # (cupy.cuda.Device: a no-op block)
        def __init__(self, i=0):
            self.id = i

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
    setattr_(cupy.cuda, "Device", _Device)
    null = cupy.cuda.Stream.null
    setattr_(cupy.cuda, "get_current_stream", lambda device_id=-1: null)
    from tensorplay_cuda import _cupy_install, bcast, fill
    from tensorplay_cuda import backend as B
    setattr_(_cupy_install, "setup_problem", lambda: None)
    setattr_(fill, "_launch", [launch_kernel])
    functions = {0: (None, 0x1000)}
    if hasattr(fill, "launch_packed"):
        functions.update({(f"tp_rowfill_{k}", 0): (None, 0x2000 + k) for k in (1, 2, 4, 8)})
    else:                                            # (before: CuPy's RawModule, its call stubbed)
        class _Module:
            def get_function(self, name):
                return lambda grid, block, args: stubbed.append(("RawKernel", name, grid))
        setattr_(bcast, "_module", [_Module()])
    setattr_(fill, "_functions", functions)
    # (this thread has launched on device 0: no first launch through CuPy)
    setattr_(fill._PARAMS, "block", fill._PARAMS.block[:3] + (fill._PARAMS.block[3] | {0},))

    def fwd(name):
        def k(x, *a, **kw):
            if name in ("sum", "mean"):
                return cupy.ndarray((x.shape[0],) if (a[0] if a else kw.get("dim")) else (),
                                    x.dtype)
            return cupy.ndarray(x.shape, x.dtype)
        return k
    kernels = B.CUDABackend.kernels

    def with_forward_stubs(self):
        first = self._kernels is None
        k = kernels(self)
        if first:
            for name in ("sum", "mean", "exp", "log"):
                k[name] = fwd(name)
        return k
    setattr_(B.CUDABackend, "kernels", with_forward_stubs)
    import tensorplay as tp
    be = B.CUDABackend()
    be._count = 1                                    # (one GPU, asked of no driver)
    handle = tp.backends.register(be)
    if handles is not None:
        handles.append(handle)
    x = be.wrap(cupy.ndarray((n, n), np.float32), tp.device("cuda", 0)).requires_grad_()
    for f in GRAPHS.values():                        # compiles the chains, keeps their plans
        for _ in range(12):
            x.grad = None
            f(x).backward()
    return be, x, launched, stubbed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    try:
        import cupy  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        print(f"bench_cuda_backward_host: needs CuPy and Triton installed ({e})")
        return 2
    _, x, launched, stubbed = setup()
    clock = time.process_time if os.environ.get("TENSORPLAY_BENCH_CPU_TIME") else time.perf_counter
    seen = {}
    for name, f in GRAPHS.items():
        x.grad = None
        loss = f(x)
        launched.clear()
        stubbed.clear()
        loss.backward()
        seen[name] = (list(launched), list(stubbed))
    times = {name: [] for name in GRAPHS}
    for _ in range(args.rounds):
        for name, f in GRAPHS.items():
            tot = 0.0
            for _ in range(args.iters):
                x.grad = None
                loss = f(x)
                t0 = clock()
                loss.backward()
                tot += clock() - t0
            times[name].append(tot / args.iters * 1e6)
        launched.clear()
        stubbed.clear()
    print(f"bench_cuda_backward_host: {N}x{N} float32, load {os.getloadavg()}")
    for name, v in times.items():
        la, st = seen[name]
        print(f"  {name}: median {statistics.median(v):.2f} µs, min {min(v):.2f} µs per backward; "
              f"launches {[(hex(f), g) for f, g, _ in la]}; stubbed {st}")
    if args.profile:
        import cProfile
        import pstats
        for name, f in GRAPHS.items():
            pr = cProfile.Profile()
            for _ in range(2000):
                x.grad = None
                loss = f(x)
                pr.enable()
                loss.backward()
                pr.disable()
            print(f"===== {name} (cProfile, 2000 backwards)")
            pstats.Stats(pr).sort_stats("tottime").print_stats(20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
