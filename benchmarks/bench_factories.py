"""Host cost of the tensor factories (cpu), tensorplay vs NumPy vs torch (where importable).

Each case is timed interleaved over ``--rounds`` rounds of ``--number`` calls; the figure is the
median per call in µs (the machine may be shared). Shapes are small (4096 float32 elements), so
the figures are the per-call Python cost, not memory bandwidth.

Usage: ``python benchmarks/bench_factories.py [--rounds N] [--number N]``; run it from a venv
with torch installed to get torch's column too. ``TENSORPLAY_BENCH_CPU_TIME=1`` times with the
process's CPU clock (as ``_harness``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import timeit

# name -> (tensorplay statement, numpy statement, torch statement)
CASES = {
    "empty(n)": ("tp.empty(4096)", "np.empty(4096, np.float32)", "torch.empty(4096)"),
    "empty(sh, dtype, device)": ("tp.empty(sh, dtype=tdt, device=tdev)",
                                 "np.empty(sh, np.float32)",
                                 "torch.empty(sh, dtype=odt, device=odev)"),
    "empty(x.shape, x.dtype, x.device)": ("tp.empty(x.shape, dtype=x.dtype, device=x.device)",
                                          "np.empty(a.shape, a.dtype)",
                                          "torch.empty(o.shape, dtype=o.dtype, device=o.device)"),
    "zeros(sh)": ("tp.zeros(sh)", "np.zeros(sh, np.float32)", "torch.zeros(sh)"),
    "ones(sh)": ("tp.ones(sh)", "np.ones(sh, np.float32)", "torch.ones(sh)"),
    "full(sh, 2.0)": ("tp.full(sh, 2.0)", "np.full(sh, 2.0, np.float32)",
                      "torch.full(sh, 2.0)"),
    "empty_like(x)": ("tp.empty_like(x)", "np.empty_like(a)", "torch.empty_like(o)"),
    "zeros_like(x)": ("tp.zeros_like(x)", "np.zeros_like(a)", "torch.zeros_like(o)"),
    "ones_like(x)": ("tp.ones_like(x)", "np.ones_like(a)", "torch.ones_like(o)"),
    "full_like(x, 2.0)": ("tp.full_like(x, 2.0)", "np.full_like(a, 2.0)",
                          "torch.full_like(o, 2.0)"),
    "x.new_empty(sh)": ("x.new_empty(sh)", "np.empty(sh, a.dtype)", "o.new_empty(sh)"),
    "x.new_zeros(sh)": ("x.new_zeros(sh)", "np.zeros(sh, a.dtype)", "o.new_zeros(sh)"),
    "x.new_ones(sh)": ("x.new_ones(sh)", "np.ones(sh, a.dtype)", "o.new_ones(sh)"),
    "x.new_full(sh, 2.0)": ("x.new_full(sh, 2.0)", "np.full(sh, 2.0, a.dtype)",
                            "o.new_full(sh, 2.0)"),
    "arange(64)": ("tp.arange(64)", "np.arange(64)", "torch.arange(64)"),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--number", type=int, default=20000)
    args = ap.parse_args(argv)
    import numpy as np

    import tensorplay as tp
    try:
        import torch
    except ImportError:
        torch = None
    sh = (64, 64)
    g = dict(tp=tp, np=np, sh=sh, tdt=tp.float32, tdev=tp.device("cpu"),
             x=tp.empty(sh), a=np.empty(sh, np.float32))
    if torch is not None:
        g.update(torch=torch, o=torch.empty(sh), odt=torch.float32, odev=torch.device("cpu"))
    timer = time.process_time if os.environ.get("TENSORPLAY_BENCH_CPU_TIME") else time.perf_counter
    cols = ["tensorplay", "numpy"] + (["torch"] if torch is not None else [])
    out = {(c, n): [] for n in CASES for c in cols}
    for _ in range(args.rounds):
        for n, stmts in CASES.items():
            for c, s in zip(cols, stmts):
                t = timeit.Timer(s, globals=g, timer=timer).timeit(args.number)
                out[c, n].append(t / args.number * 1e6)
    w = max(map(len, CASES))
    print(f"{'factory':<{w}}  " + "  ".join(f"{c:>10}" for c in cols) + "   (µs per call, median)")
    for n in CASES:
        print(f"{n:<{w}}  " + "  ".join(f"{statistics.median(out[c, n]):10.3f}" for c in cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
