"""Per-call cost of the common view ops on cpu, tensorplay vs torch (where importable).

The views of an 8x16 float32 tensor (``x``, contiguous) and of its transpose (``xt``, the
general path): ``view``/``reshape``, ``x[int]``, ``x[slice]``, ``x[int, slice]``, ``t``,
``transpose``, ``permute``, ``unsqueeze``, ``squeeze``, ``expand``, ``narrow``, ``select``, and
``x * y`` as a non-view reference. Small shapes: the figures are the per-call Python cost (the
work is metadata). One thread (``OMP_NUM_THREADS=1``, ``torch.set_num_threads(1)``).

Each case is timed interleaved over ``--rounds`` rounds; a round's figure is the best of 3
``timeit`` loops of ``--number`` calls; the table shows the median over rounds in µs per call and
the ratio tensorplay / torch (same process, same run). ``TENSORPLAY_BENCH_CPU_TIME=1`` times
with the process's CPU clock (a machine shared with other work), as ``_harness``.

Usage: ``python benchmarks/bench_views.py [--rounds N] [--number N]`` from a venv with torch for
torch's column (``nox -s bench``). Writes ``benchmarks/results/views.json`` (headline rows:
``x[0]`` and ``x.view(-1)``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import timeit

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H  # noqa: E402

# name -> statement (the same text runs on both libraries: ``L`` is the library)
CASES = {
    "x.view(-1)": "x.view(-1)",
    "x.view(2, 64)": "x.view(2, 64)",
    "x.reshape(-1)": "x.reshape(-1)",
    "xt.reshape(-1) (copy)": "xt.reshape(-1)",
    "x[0]": "x[0]",
    "x[1:5]": "x[1:5]",
    "x[0, 2:]": "x[0, 2:]",
    "x[:, 0]": "x[:, 0]",
    "x[None]": "x[None]",
    "x.t()": "x.t()",
    "x.transpose(0, 1)": "x.transpose(0, 1)",
    "x.permute(1, 0)": "x.permute(1, 0)",
    "x.unsqueeze(0)": "x.unsqueeze(0)",
    "x1.squeeze(0)": "x1.squeeze(0)",
    "xt.unsqueeze(1)": "xt.unsqueeze(1)",
    "x1.expand(4, 16)": "x1.expand(4, 16)",
    "x.narrow(1, 2, 4)": "x.narrow(1, 2, 4)",
    "x.select(1, 3)": "x.select(1, 3)",
    "x * y (not a view)": "x * y",
}
HEADLINE = ("x[0]", "x.view(-1)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5 if H.QUICK else 15)
    ap.add_argument("--number", type=int, default=500 if H.QUICK else 2000)
    args = ap.parse_args(argv)

    import tensorplay as tp
    libs = {"tensorplay": tp}
    torch, why = H.try_import_torch()
    if torch is not None:
        torch.set_num_threads(1)
        libs["torch"] = torch
    glb = {}
    for name, L in libs.items():
        x = L.ones(8, 16)
        glb[name] = {"L": L, "x": x, "y": L.ones(8, 16), "xt": x.t(), "x1": L.ones(1, 16)}
    timer = time.process_time if H.CPU_TIME else time.perf_counter
    out = {(n, c): [] for n in libs for c in CASES}
    for _ in range(args.rounds):
        for c, stmt in CASES.items():
            for n in libs:
                t = timeit.Timer(stmt, globals=glb[n], timer=timer)
                out[n, c].append(min(t.repeat(3, args.number)) / args.number * 1e6)
    med = {k: statistics.median(v) for k, v in out.items()}
    rows = []
    for c in CASES:
        a = med["tensorplay", c]
        b = med.get(("torch", c))
        rows.append([c, f"{a:.3f}", "n/a" if b is None else f"{b:.3f}",
                     "n/a" if b is None else f"{a / b:.2f}"])
    H.print_table(f"Views on cpu, 8x16 float32, µs per call (median of {args.rounds} rounds x best "
                  f"of 3 x {args.number})" + ("" if torch is not None else f"; torch: {why}"),
                  ["call", "tensorplay", "torch", "tensorplay / torch"], rows)
    res = {"cases": {c: {n: med[n, c] for n in libs} for c in CASES},
           "rounds": args.rounds, "number": args.number,
           "headline": [{"figure": f"{c} on a contiguous 8x16 cpu tensor (µs per call)",
                         "tensorplay": round(med["tensorplay", c], 2),
                         "torch": round(med["torch", c], 2) if torch is not None else None,
                         "numpy": None, "goal": "<= 2 (h-viewspeed44)"} for c in HEADLINE]}
    print(f"\nwrote {H.write_json('views', res)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
