"""Time per call of the special functions on cpu (``tp.erf``, ``tp.lgamma``, ``tp.erfc`` ...)
against ``tp.exp`` and NumPy's ``exp`` on the same array, and torch's function where torch is
importable.

Each figure is the median, over ``ROUNDS`` interleaved rounds, of the best-of-``number`` time of
one call (every function is timed once per round, in turn, so a change of the machine's load hits
all of them alike). Prints µs per call for 16 and 2**20 elements, float32 and float64, and the
ratio to ``tp.exp``. Usage: ``python benchmarks/bench_special.py [--rounds N] [--sizes 16,1048576]
[--ops erf,lgamma]``. Not a test; state the load (``uptime``) with any figure quoted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H  # noqa: E402

import tensorplay as tp
import tensorplay.special as S

try:
    if os.environ.get("TENSORPLAY_BENCH_NO_TORCH"):
        raise ImportError
    import torch
except ImportError:
    torch = None

OPS = {
    # name: (tensorplay function, torch function name, input transform on [-1, 1) uniforms)
    "exp": (tp.exp, "exp", lambda u: 3 * u),
    "erf": (tp.erf, "erf", lambda u: 4 * u),
    "erfc": (tp.erfc, "erfc", lambda u: 6 * u),
    "erfinv": (tp.erfinv, "erfinv", lambda u: 0.999 * u),
    "lgamma": (tp.lgamma, "lgamma", lambda u: 20 * u),
    "digamma": (tp.digamma, "digamma", lambda u: 20 * u),
    "i0": (tp.i0, "i0", lambda u: 30 * u),
    "i0e": (S.i0e, "special.i0e", lambda u: 30 * u),
    "i1": (S.i1, "special.i1", lambda u: 30 * u),
    "ndtri": (S.ndtri, "special.ndtri", lambda u: 0.5 + 0.4999 * u),
    "erfcx": (S.erfcx, "special.erfcx", lambda u: 10 * u),
}


def _torch_fn(name):
    obj = torch
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _best(fn, arg, number):
    best = float("inf")
    for _ in range(number):
        t0 = time.perf_counter()
        fn(arg)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3 if H.QUICK else 9)
    ap.add_argument("--sizes", default=f"16,{1 << 20}")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--dtypes", default="float32,float64")
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",")]
    names = a.ops.split(",")
    if "exp" not in names:
        names = ["exp"] + names
    print(f"load: {os.getloadavg()}; torch: {torch.__version__ if torch else 'not imported'}")
    rng = np.random.default_rng(0)
    results = []
    for n in sizes:
        number = 200 if n <= 4096 else 3
        for dt in a.dtypes.split(","):
            u = rng.uniform(-1, 1, n).astype(dt)
            cases = []
            for name in names:
                fn, tname, tr = OPS[name]
                x = tr(u).astype(dt)
                cases.append((f"tp.{name}", fn, tp.tensor(x)))
                if torch is not None:
                    cases.append((f"torch.{tname}", _torch_fn(tname), torch.from_numpy(x)))
            xe = OPS["exp"][2](u).astype(dt)
            cases.append(("np.exp", np.exp, xe))
            for _, fn, arg in cases:        # warm up (tables, caches)
                fn(arg)
            times = {c[0]: [] for c in cases}
            for _ in range(a.rounds):
                for label, fn, arg in cases:
                    times[label].append(_best(fn, arg, number))
            med = {k: statistics.median(v) for k, v in times.items()}
            ref = med["tp.exp"]
            print(f"\n{n} elements, {dt}  (median of {a.rounds} rounds, best of {number})")
            for label, _, _ in cases:
                print(f"  {label:22s} {med[label] * 1e6:12.1f} us   {med[label] / ref:8.1f}x tp.exp")
                results.append({"n": n, "dtype": dt, "fn": label, "us": med[label] * 1e6,
                                "x_tp_exp": med[label] / ref})
    H.write_json("bench_special", {"rounds": a.rounds, "load": os.getloadavg(),
                                   "results": results})


if __name__ == "__main__":
    main()
