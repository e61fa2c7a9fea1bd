"""Tensor factories on cuda at memset / fill-kernel speed (issue 32, item 3).

For ``zeros``, ``ones``, ``full`` (value 0.5), ``zeros_like``, ``ones_like``, ``full_like`` and
``empty`` of float32 at 2^10, 2^20 and 4096x4096 (2^24, 64 MB) elements, prints the time per
call until the result is ready on the GPU (each call followed by a device synchronisation), in
µs, median and IQR of ``--repeat`` interleaved rounds, next to:

* the floor: a ``cudaMemsetAsync`` of an already allocated array of the same size (CuPy
  ``a.data.memset_async``) for the zero-filled factories, CuPy's fill kernel on an allocated
  array (``a.fill(v)``) for the others, each plus the same synchronisation;
* torch's factory of the same size in the same process (the ratio column), when torch imports.

A factory "at memset speed" is within a few µs of the floor: what it adds is the allocation
(CuPy's memory pool: the same 64 MB block is reused every round) and the call's host path.
Needs a CUDA GPU; exits 2 with a message without one (``run_all.py``'s "not available").

Usage: ``python benchmarks/bench_cuda_factories.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H  # noqa: E402


SIZES = {"2^10": (1024,), "2^20": (1024, 1024), "4096x4096": (4096, 4096)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=31)
    a = ap.parse_args(argv)
    import tensorplay as tp
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        print(f"bench_cuda_factories: no usable CUDA GPU ({why}); nothing to measure", file=sys.stderr)
        return 2
    import cupy
    torch, no_torch = H.try_import_torch()
    if torch is not None and not torch.cuda.is_available():
        torch, no_torch = None, "torch has no CUDA here"
    print("load average (1, 5, 15 min) at start:", os.getloadavg())
    sync = cupy.cuda.runtime.deviceSynchronize
    results, rows = {}, []
    for label, shape in SIZES.items():
        x = tp.empty(shape, device="cuda")
        buf = cupy.empty(shape, dtype=cupy.float32)
        g = {"tp": tp, "x": x, "shape": shape, "buf": buf, "sync": sync, "cupy": cupy}
        # factory -> (tensorplay statement, floor statement, torch statement)
        cases = {
            "zeros": ("tp.zeros(shape, device='cuda')", "buf.data.memset_async(0, buf.nbytes)",
                      "torch.zeros(shape, device='cuda')"),
            "zeros_like": ("tp.zeros_like(x)", "buf.data.memset_async(0, buf.nbytes)",
                           "torch.zeros_like(tx)"),
            "ones": ("tp.ones(shape, device='cuda')", "buf.fill(1.0)",
                     "torch.ones(shape, device='cuda')"),
            "ones_like": ("tp.ones_like(x)", "buf.fill(1.0)", "torch.ones_like(tx)"),
            "full": ("tp.full(shape, 0.5, device='cuda')", "buf.fill(0.5)",
                     "torch.full(shape, 0.5, device='cuda')"),
            "full_like": ("tp.full_like(x, 0.5)", "buf.fill(0.5)", "torch.full_like(tx, 0.5)"),
            "empty": ("tp.empty(shape, device='cuda')", "cupy.empty(shape, dtype=cupy.float32)",
                      "torch.empty(shape, device='cuda')"),
        }
        if torch is not None:
            g["torch"] = torch
            g["tx"] = torch.empty(shape, device="cuda")
        for name, (s_tp, s_floor, s_torch) in cases.items():
            stmts = {"tp": s_tp + "; sync()", "floor": s_floor + "; sync()"}
            if torch is not None:
                stmts["torch"] = s_torch + "; sync()"
            r = {k: H.us(v) for k, v in H.paired(stmts, g, repeat=a.repeat).items()}
            results[f"{name} {label}"] = r
            ratio = (f"{r['tp']['median'] / r['torch']['median']:.3f}x"
                     if "torch" in r else "n/a")
            rows.append([f"{name} {label}", H.fmt(r["tp"]), H.fmt(r["floor"]),
                         f"{r['tp']['median'] - r['floor']['median']:+.2f} µs",
                         H.fmt(r.get("torch")), ratio])
    H.print_table("cuda factories, float32, µs per call until ready (call + device sync)",
                  ["factory size", "tensorplay", "floor (memset / fill on allocated)",
                   "tp - floor", "torch", "tp / torch"], rows)
    if torch is None:
        print("torch reference:", no_torch)
    print("load average (1, 5, 15 min) at end:", os.getloadavg())
    print("wrote", H.write_json("cuda_factories", {"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
