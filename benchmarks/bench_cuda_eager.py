"""Eager elementwise ops on cuda across sizes: time per op of ``tensorplay`` against ``torch``
and ``cupy`` (issue 32 item 2), float32 and bfloat16, 2^10 .. 2^26 elements (``--log2n``).

Ops: ``mul(x, y)``, ``add(x, 1.0)``, ``relu(x)``, ``tanh(x)`` (``--ops``). One figure per op,
engine, dtype and size, µs per op, the median of ``--rounds`` interleaved rounds (each round times
every engine once, so all see the same machine state):

* **pipelined**: wall time of ``--iters`` calls back to back, then one device synchronisation,
  divided by ``--iters``: the larger of the host's time per op and the GPU's, what an eager
  training or inference loop feels.

Each engine's result is checked against tensorplay's once before timing. Ratios are
tensorplay / torch from the same run (< 1: tensorplay faster). CuPy has no bfloat16 ufuncs, so
its column is float32 only. The script prints a table and writes
``benchmarks/results/cuda_eager.json``.

Usage (GPU machine): ``python benchmarks/bench_cuda_eager.py [--log2n 10,16,20,22,24,26]
[--dtypes float32,bfloat16] [--rounds 7] [--iters 200] [--no-torch]``. Exits 2 when cuda is
unavailable.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H  # noqa: E402
import tensorplay as tp  # noqa: E402
from bench_compile_cuda import pipelined_us  # noqa: E402


def _ops(lib):
    """name -> f(x, y) for one library (tensorplay, torch and cupy spell relu differently)."""
    relu = (lambda x, y: lib.maximum(x, 0)) if lib.__name__ == "cupy" else (lambda x, y: x.relu())
    return {"mul": lambda x, y: x * y, "add": lambda x, y: x + 1.0, "relu": relu,
            "tanh": (lambda x, y: lib.tanh(x))}


def one_case(lg, dtype, ops, cupy, torch, sync, args):
    n = 1 << lg
    tp.manual_seed(0)
    x = tp.randn(n, device="cuda").to(getattr(tp, dtype))
    y = tp.randn(n, device="cuda").to(getattr(tp, dtype))
    engines = {"tensorplay": (_ops(tp), x, y)}
    if torch is not None:
        engines["torch"] = (_ops(torch), torch.from_dlpack(x._data), torch.from_dlpack(y._data))
    if dtype == "float32":
        engines["cupy"] = (_ops(cupy), x._data, y._data)
    out = {}
    for op in ops:
        ref = engines["tensorplay"][0][op](x, y)
        ref = cupy.asarray(ref._data).astype(cupy.float32)
        for name, (table, a, b) in engines.items():
            r = table[op](a, b)
            r = r._data if hasattr(r, "_data") else cupy.from_dlpack(r)
            if not bool(cupy.allclose(r.astype(cupy.float32), ref, rtol=1e-2, atol=1e-2)):
                print(f"WARNING 2^{lg} {dtype} {op}: {name} disagrees with tensorplay",
                      file=sys.stderr)
        times = {name: [] for name in engines}
        for _ in range(args.rounds):
            for name, (table, a, b) in engines.items():
                f = table[op]
                times[name].append(pipelined_us(lambda f=f, a=a, b=b: f(a, b), sync, args.iters))
        out[op] = {k: statistics.median(v) for k, v in times.items()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", default="10,16,20,22,24,26")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--ops", default="mul,add,relu,tanh")
    H.add_cuda_timing_args(ap)
    args = ap.parse_args(argv)
    cu = H.cuda_setup("bench_cuda_eager", no_torch=args.no_torch)
    if cu is None:
        return 2
    cupy, torch, sync = cu.cupy, cu.torch, cu.sync
    print(cu.versions)
    ops = args.ops.split(",")
    data = {"machine": H.machine_info(), "cases": {}}
    rows = []
    worst = {}
    for dtype in args.dtypes.split(","):
        for lg in [int(s) for s in args.log2n.split(",")]:
            res = one_case(lg, dtype, ops, cupy, torch, sync, args)
            data["cases"][f"{dtype} 2^{lg}"] = res
            for op, t in res.items():
                ratio = t["tensorplay"] / t["torch"] if "torch" in t else float("nan")
                worst[dtype, lg] = max(worst.get((dtype, lg), 0.0), ratio)
                rows.append([dtype, f"2^{lg}", op, f"{t['tensorplay']:.2f}",
                             f"{t['torch']:.2f}" if "torch" in t else "-",
                             f"{t['cupy']:.2f}" if "cupy" in t else "-", f"{ratio:.2f}"])
            print(f"{dtype} 2^{lg} done", flush=True)
    H.print_table("eager op on cuda (µs per op, pipelined; median of rounds)",
                  ["dtype", "elements", "op", "tensorplay", "torch", "cupy", "tp / torch"], rows)
    if torch is not None:
        print("RATIO worst tp/torch per size: " + ", ".join(
            f"{d} 2^{lg} {r:.2f}" for (d, lg), r in worst.items()))
    print("wrote", H.write_json("cuda_eager", data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
