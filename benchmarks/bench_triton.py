"""Host-side launch time of a ``triton_op`` call vs a raw ``kernel[grid](...)`` launch (same kernel).

Run on a machine with a CUDA GPU, the cuda and triton plugins and the example pack installed::

    python benchmarks/bench_triton.py [--n 4096] [--iters 2000] [--rounds 15] [--json out.json]

What is timed: the wall time of ``iters`` back-to-back calls on the host (no synchronisation inside
the loop; the GPU work of these tiny kernels, ~2-3 us, is shorter than a launch, so the loop is
host-bound), divided by ``iters``; the median over ``rounds`` interleaved rounds is reported (and
the fastest round). Each case runs 200 untimed calls right before its timed ones.
Cases, all on the same preallocated cuda tensors:

* ``raw kernel[grid] (tensorplay tensors)``: ``fused_add_mul_relu_kernel[grid](x, y, out, scale,
  n, BLOCK_SIZE=1024)`` -- Triton's own launch path (``JITFunction.run``), handed tensorplay tensors
  directly (they have ``data_ptr()`` and ``dtype``);
* ``raw kernel[grid] (prebuilt pointers)``: the same with pointer adapters built once outside the
  loop;
* ``wrap_triton(k)[grid]``: the plugin's launcher (argument checks, then the compiled
  specialisation launched through CuPy), and the same with Triton's launcher called directly;
* ``triton_op out-variant``: ``example::fused_add_mul_relu_out(x, y, scale, out)`` -- dispatch, the
  op body, ``wrap_triton`` and the same kernel; THE comparison (ratio to the raw launch);
* the same with Triton's launcher instead of CuPy's launch, and with the plugin's direct launch
  paths off (``JITFunction.run`` under the op);
* ``triton_op functional``: ``example::fused_add_mul_relu(x, y, scale)`` (also allocates ``out``);
* an autotuned kernel, raw vs in a ``triton_op`` (``Autotuner.run`` on both sides).

PyTorch is made unimportable first (``--allow-torch`` to skip): Triton would otherwise import it at
the first launch, and the point is that nothing here needs it.

``--host`` (also what runs on a machine without a GPU): the plugin's own per-call host path, with
Triton out of the picture -- a ``triton_op`` whose body launches a no-op grid-indexable launcher
through ``wrap_triton`` vs calling that launcher directly (dispatch + ``wrap_triton`` argument pass),
and ``wrap_triton(k, strided=[...])`` vs ``wrap_triton(k)`` look-ups (both cached).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

# TENSORPLAY_BENCH_CPU_TIME=1: the process's CPU clock instead of the wall clock (comparisons on a
# machine busy with other work; not for headline figures), as in benchmarks/_harness.py
_clock = time.process_time if os.environ.get("TENSORPLAY_BENCH_CPU_TIME") else time.perf_counter


def _parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=4096, help="elements per tensor (default 4096)")
    p.add_argument("--iters", type=int, default=2000, help="calls per timed round")
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds (median reported)")
    p.add_argument("--json", default=None, help="also write the results as JSON here")
    p.add_argument("--allow-torch", action="store_true", help="do not block `import torch`")
    p.add_argument("--host", action="store_true",
                   help="measure the plugin's host path only (no GPU needed)")
    return p.parse_args()


def host_path(args) -> int:
    """Per-call host cost of the plugin itself (no Triton launch), on cpu tensors."""
    import tensorplay
    import triton
    import triton.language as tl
    from tensorplay import library

    class NoopLauncher:
        def __getitem__(self, grid):
            def go(*a, **k):
                return None
            return go

    launcher = NoopLauncher()

    @library.triton_op("bench::noop_launch", mutates_args=("out",),
                       schema="(Tensor x, Tensor y, float scale, Tensor(a!) out) -> ()")
    def noop_op(x, y, scale, out):
        library.wrap_triton(launcher)[(1,)](x, y, out, scale, x.numel())

    @triton.jit
    def strided_kernel(x_ptr, out_ptr, s0, s1, n, BLOCK: tl.constexpr):
        pass

    x, y, out = tensorplay.randn(64), tensorplay.randn(64), tensorplay.empty(64)
    w = library.wrap_triton(launcher)
    cases = [
        ("raw launcher[grid](...)", lambda: launcher[(1,)](x, y, out, 1.5, 64)),
        ("wrap_triton(launcher)[grid](...)", lambda: library.wrap_triton(launcher)[(1,)](
            x, y, out, 1.5, 64)),
        ("wrapper[grid](...) (wrapper held)", lambda: w[(1,)](x, y, out, 1.5, 64)),
        ("triton_op call (dispatch + body + wrap_triton)", lambda: noop_op(x, y, 1.5, out)),
        ("wrap_triton(k) look-up", lambda: library.wrap_triton(strided_kernel)),
        ("wrap_triton(k, strided=[...]) look-up",
         lambda: library.wrap_triton(strided_kernel, strided=["x_ptr"])),
    ]
    it = max(1000, args.iters)
    for _, fn in cases:
        for _ in range(200):
            fn()
    times = {name: [] for name, _ in cases}
    for _ in range(args.rounds):
        for name, fn in cases:
            t0 = _clock()
            for _ in range(it):
                fn()
            times[name].append((_clock() - t0) / it * 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"bench_triton --host: plugin host path per call, {it} calls x {args.rounds} rounds "
          f"(median), triton {triton.__version__}, torch imported: {'torch' in sys.modules}")
    for k, _ in cases:
        print(f"{k:48s} {med[k]:9.2f} us")
    print(f"plugin + dispatch cost per triton_op call: "
          f"{med['triton_op call (dispatch + body + wrap_triton)'] - med['raw launcher[grid](...)']:.2f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"mode": "host", "median_us": med, "all_us": times}, f, indent=1)
    return 0


def main() -> int:
    args = _parse()
    os.environ.pop("TRITON_INTERPRET", None)        # compiled kernels: this measures GPU launches
    if not args.allow_torch:
        import tensorplay_triton
        tensorplay_triton.block_torch()

    import tensorplay
    if args.host:
        return host_path(args)
    ok, why = tensorplay.plugins.device_status("cuda")
    if not ok:
        print(f"bench_triton: no CUDA GPU ({why}); measuring the plugin's host path only",
              file=sys.stderr)
        return host_path(args)

    import cupy as cp
    import numpy as np
    import tensorplay_triton
    import triton
    import triton.language as tl
    from tensorplay import library
    from tensorplay_example_ops import triton_ops
    from tensorplay_triton import _adapters, wrap_triton
    if not triton_ops.AVAILABLE:
        print(f"bench_triton: example triton ops unavailable: {triton_ops.UNAVAILABLE_REASON}",
              file=sys.stderr)
        return 2
    E = tensorplay.ops.example
    K = triton_ops._kernels()
    if K.interpreted:
        print("bench_triton: kernels were decorated under TRITON_INTERPRET (interpreted on every "
              "device); nothing to measure", file=sys.stderr)
        return 2
    kern = K.module.fused_add_mul_relu_kernel
    from tensorplay_triton import _wrap

    @triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 512}), triton.Config({"BLOCK_SIZE": 1024})],
                     key=["n_elements"])
    @triton.jit
    def tuned_kernel(x_ptr, y_ptr, out_ptr, scale, n_elements, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        m = offs < n_elements
        r = (tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m)) * scale
        tl.store(out_ptr + offs, tl.maximum(r, 0.0), mask=m)

    @library.triton_op("bench::tuned_out", mutates_args=("out",),
                       schema="(Tensor x, Tensor y, float scale, Tensor(a!) out) -> ()")
    def tuned_out(x, y, scale, out):
        n = x.numel()
        library.wrap_triton(tuned_kernel)[lambda m: (triton.cdiv(n, m["BLOCK_SIZE"]),)](
            x, y, out, scale, n)

    n = args.n
    x = tensorplay.randn(n, device="cuda")
    y = tensorplay.randn(n, device="cuda")
    out = tensorplay.empty(n, device="cuda")
    tensorplay_triton.install_driver()
    px, py, po = _adapters.CudaArg(x), _adapters.CudaArg(y), _adapters.CudaArg(out)
    wk = wrap_triton(kern)
    g = (triton.cdiv(n, 1024),)

    def tgrid(meta):
        return (triton.cdiv(n, meta["BLOCK_SIZE"]),)

    # (name, fn, launch path of wrap_triton: "cupy" = CuPy launch of compiled specialisations,
    # "triton" = direct call of Triton's launcher, "off" = JITFunction.run)
    cases = [
        ("raw kernel[grid] (tensorplay tensors)",
         lambda: kern[g](x, y, out, 1.5, n, BLOCK_SIZE=1024), "cupy"),
        ("raw kernel[grid] (prebuilt pointers)",
         lambda: kern[g](px, py, po, 1.5, n, BLOCK_SIZE=1024), "cupy"),
        ("wrap_triton(k)[grid]", lambda: wk[g](x, y, out, 1.5, n, BLOCK_SIZE=1024), "cupy"),
        ("wrap_triton(k)[grid], Triton's launcher",
         lambda: wk[g](x, y, out, 1.5, n, BLOCK_SIZE=1024), "triton"),
        ("triton_op out-variant", lambda: E.fused_add_mul_relu_out(x, y, 1.5, out), "cupy"),
        ("triton_op out-variant, Triton's launcher",
         lambda: E.fused_add_mul_relu_out(x, y, 1.5, out), "triton"),
        ("triton_op out-variant, direct launch off",
         lambda: E.fused_add_mul_relu_out(x, y, 1.5, out), "off"),
        ("triton_op functional (allocates out)", lambda: E.fused_add_mul_relu(x, y, 1.5), "cupy"),
        ("autotuned: raw kernel[grid]", lambda: tuned_kernel[tgrid](x, y, out, 1.5, n), "cupy"),
        ("autotuned: triton_op out-variant", lambda: tuned_out(x, y, 1.5, out), "cupy"),
    ]

    def set_path(mode):
        _wrap._FAST[0] = mode != "off"
        _wrap._CUPY_LAUNCH[0] = mode == "cupy"

    # warm-up: compile, autotune, first-launch costs; and a correctness check of each path
    ref = np.maximum((x.cpu().numpy() + y.cpu().numpy()) * 1.5, 0)
    for name, fn, mode in cases:
        set_path(mode)
        for _ in range(20):
            r = fn()
        cp.cuda.Device().synchronize()
        got = (r if "functional" in name else out).cpu().numpy()
        if not np.allclose(got, ref, rtol=1e-5, atol=1e-6):
            print(f"bench_triton: wrong result from {name!r}", file=sys.stderr)
            return 1

    times = {name: [] for name, _, _ in cases}
    it = args.iters
    for _ in range(args.rounds):
        for name, fn, mode in cases:
            set_path(mode)
            for _ in range(200):           # settle this case (caches, launch queue) before timing
                fn()
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            for _ in range(it):
                fn()
            t1 = time.perf_counter()
            times[name].append((t1 - t0) / it * 1e6)
    cp.cuda.Device().synchronize()
    set_path("cupy")

    med = {k: statistics.median(v) for k, v in times.items()}
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"bench_triton: host-side launch time per call, n={n} float32, {it} calls x "
          f"{args.rounds} rounds (median), {dev}, triton {triton.__version__}, cupy {cp.__version__}, "
          f"torch imported: {'torch' in sys.modules}")
    print(f"{'case':42s} {'us/call':>9s} {'min':>9s}")
    for k, _, _ in cases:
        print(f"{k:42s} {med[k]:9.2f} {min(times[k]):9.2f}")
    raw = med["raw kernel[grid] (tensorplay tensors)"]
    ratio = med["triton_op out-variant"] / raw
    ratio_off = med["triton_op out-variant, direct launch off"] / raw
    ratio_tl = med["triton_op out-variant, Triton's launcher"] / raw
    ratio_tuned = med["autotuned: triton_op out-variant"] / med["autotuned: raw kernel[grid]"]
    print(f"RATIO triton_op call / raw kernel[grid] launch, same kernel and tensors: {ratio:.3f} "
          f"({'no slower than raw' if ratio <= 1.0 else 'slower than raw'})")
    mins = {k: min(v) for k, v in times.items()}
    ratio_min = mins["triton_op out-variant"] / mins["raw kernel[grid] (tensorplay tensors)"]
    print(f"RATIO of the fastest rounds (min/min): {ratio_min:.3f}")
    print(f"RATIO with Triton's launcher instead of CuPy's launch: {ratio_tl:.3f}")
    print(f"RATIO with the direct launch path off (JITFunction.run): {ratio_off:.3f}")
    print("launch paths of the example kernel's specialisations:",
          {k[-9:] if isinstance(k, tuple) else k: v for k, v in (wk._direct or {}).items()})
    print(f"RATIO autotuned kernel (Autotuner.run on both sides): {ratio_tuned:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": n, "iters": it, "rounds": args.rounds, "device": dev,
                       "triton": triton.__version__, "median_us": med,
                       "all_us": times, "ratio": ratio, "ratio_direct_launch_off": ratio_off,
                       "ratio_tritons_launcher": ratio_tl, "ratio_min": ratio_min,
                       "ratio_autotuned": ratio_tuned}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
