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

A second table times the autograd work that grows with the number ``k`` of views (a 4x4
float32 base with history): a chain of ``k`` views of views, forward and backward; one in-place
write to a base that has ``k`` live views without history of their own (each gets the base's
new history: linear in ``k``, quadratic before session 45); ``k`` in-place writes, one to each of
``k`` live views, then backward (a view's history is regenerated when read after its base
was written, as torch's ``grad_fn`` getter: linear in ``k`` since session 46, quadratic before).
Each figure: the best of 5 runs (garbage collection off during the
runs, as ``timeit``), median over ``--rounds // 3`` (at least 3) rounds, total µs.

Usage: ``python benchmarks/bench_views.py [--rounds N] [--number N] [--no-growth]`` from a venv
with torch for torch's column (``nox -s bench``). Writes ``benchmarks/results/views.json``
(headline rows: ``x[0]`` and ``x.view(-1)``).
"""

from __future__ import annotations

import argparse
import gc
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


def _growth_cases(L):
    """name -> (k, function timed once) for the second table."""
    leaf = L.ones(4, 4, requires_grad=True)
    w = L.ones(4, requires_grad=True)
    cases = {}
    for k in (1, 8, 64):
        def chain(k=k):
            v = leaf * 1
            for i in range(k):
                v = v.view(16) if i % 2 == 0 else v.view(4, 4)
            v.sum().backward()
        cases[f"chain of {k} views, fwd+bw"] = chain
    for k in (16, 256, 1024):
        def one_write(k=k):
            buf = L.zeros(k, 4)
            rows = [buf[i] for i in range(k)]
            t0 = time.perf_counter()
            buf.add_(w)
            return time.perf_counter() - t0, rows
        cases[f"1 write, {k} history-less views"] = one_write
    for k in (8, 64, 256):
        def writes(k=k):
            y = leaf * 1
            vs = [y.view(16) if i % 2 == 0 else y.view(4, 4) for i in range(k)]
            for v in vs:
                v.mul_(1.0)
            vs[-1].sum().backward()
        cases[f"{k} writes to {k} live views + bw"] = writes
    return cases


def _growth(libs, rounds):
    out = {}
    for _ in range(rounds):
        for n, L in libs.items():
            for c, f in _growth_cases(L).items():
                best = None
                gc.collect()
                gc.disable()        # (as timeit: a collection inside a run is noise)
                try:
                    for _ in range(5):
                        t0 = time.perf_counter()
                        r = f()
                        t = r[0] if r is not None else time.perf_counter() - t0
                        best = t if best is None else min(best, t)
                finally:
                    gc.enable()
                out.setdefault((n, c), []).append(best * 1e6)
    return {k: statistics.median(v) for k, v in out.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5 if H.QUICK else 15)
    ap.add_argument("--number", type=int, default=500 if H.QUICK else 2000)
    ap.add_argument("--no-growth", action="store_true", help="skip the second table")
    args = ap.parse_args(argv)

    libs, torch, why = H.cpu_libs()
    tp = libs["tensorplay"]
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
    if not args.no_growth:
        g = _growth(libs, max(3, args.rounds // 3))
        names = list(_growth_cases(tp))
        rows = [[c, f"{g['tensorplay', c]:.1f}",
                 f"{g['torch', c]:.1f}" if torch is not None else "n/a"] for c in names]
        H.print_table("Views with autograd as the number k of views grows, total µs (best of 5, "
                      "median over rounds)", ["case", "tensorplay", "torch"], rows)
        res["growth"] = {c: {n: g[n, c] for n in libs} for c in names}
    print(f"\nwrote {H.write_json('views', res)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
