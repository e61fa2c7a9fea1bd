"""Per-call cost of the index-taking ops, tensorplay vs torch vs NumPy / CuPy (where importable).

Two sizes, float32, int64 indices, one thread (``OMP_NUM_THREADS=1``,
``torch.set_num_threads(1)``):

* ``small``: a 16-element ``x`` and 3 indices: the per-call Python cost (the work is a few
  elements): ``x[i]``, ``x.index_select(0, i)``, ``x.take(i)``, ``x.gather(0, i)``,
  ``x[i] = 1.0``, ``x.index_add(0, i, v)``, ``x[m]`` (a bool mask), ``x[-i]`` (negative indices,
  which are wrapped);
* ``rows``: a 4096x256 ``x`` and 512 row indices: ``x[i]``, ``x.index_select(0, i)``,
  ``x[i] = 1.0``, ``x.index_add(0, i, v)``.

Every tensorplay index op checks its indices' range (one read of their smallest and largest
value), as torch's do; NumPy's column is the bare array operation (``a[i]``, ``a.take(i)``,
``np.add.at``), which checks too (NumPy raises on an out-of-range index).

Each case is timed interleaved over ``--rounds`` rounds; a round's figure is the best of 3
``timeit`` loops of ``--number`` calls; the table shows the median over rounds in µs per call and
the ratio tensorplay / torch (same process, same run). ``TENSORPLAY_BENCH_CPU_TIME=1`` times
with the process's CPU clock (a machine shared with other work), as ``_harness``.

``--device cuda`` runs the same cases on a GPU: the bare column is CuPy's, and every timed loop
ends with a device synchronisation (µs per call pipelined: the queued work counted); exit 2
without a usable GPU.

Usage: ``python benchmarks/bench_indexing.py [--rounds N] [--number N] [--device cuda]`` from a
venv with torch for torch's column (``nox -s bench``). Writes ``benchmarks/results/indexing.json``
(``indexing_cuda.json`` on cuda; headline rows: ``x[i]`` and ``x.index_select(0, i)`` on the
small tensor).
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

# name -> (tensorplay/torch statement, NumPy statement or None); ``s``/``si``/``sn``/``sm``/``sv``:
# the small tensor, its indices, the negated indices, a mask, 3 values; ``r``/``ri``/``rv``: rows
CASES = {
    "small x[i]": ("s[si]", "s[si]"),
    "small x[-i]": ("s[sn]", "s[sn]"),
    "small x.index_select(0, i)": ("s.index_select(0, si)", "s.take(si, axis=0)"),
    "small x.take(i)": ("s.take(si)", "s.take(si)"),
    "small x.gather(0, i)": ("s.gather(0, si)", "np.take_along_axis(s, si, 0)"),
    "small x[m]": ("s[sm]", "s[sm]"),
    "small x[i] = 1.0": ("s.__setitem__(si, 1.0)", "s.__setitem__(si, 1.0)"),
    "small x.index_add(0, i, v)": ("s.index_add(0, si, sv)", "np.add.at(s.copy(), si, sv)"),
    "rows x[i]": ("r[ri]", "r[ri]"),
    "rows x.index_select(0, i)": ("r.index_select(0, ri)", "r.take(ri, axis=0)"),
    "rows x[i] = 1.0": ("r.__setitem__(ri, 1.0)", "r.__setitem__(ri, 1.0)"),
    "rows x.index_add(0, i, v)": ("r.index_add(0, ri, rv)", "np.add.at(r.copy(), ri, rv)"),
}
HEADLINE = ("small x[i]", "small x.index_select(0, i)")


def _globals(L, np, device="cpu", xp=None):
    """The operands of ``CASES`` in library ``L`` (tensorplay, torch, or the bare array library
    ``xp`` when ``L`` is None: NumPy, or CuPy on cuda), built from the same NumPy values, on
    ``device``."""
    rng = np.random.default_rng(0)
    s = rng.standard_normal(16).astype(np.float32)
    r = rng.standard_normal((4096, 256)).astype(np.float32)
    si = np.array([1, 3, 5], dtype=np.int64)
    ri = rng.integers(0, 4096, 512).astype(np.int64)
    vals = {"s": s, "si": si, "sn": -si, "sm": s > 0, "sv": s[:3].copy(), "r": r, "ri": ri,
            "rv": rng.standard_normal((512, 256)).astype(np.float32)}
    if L is None:
        if xp is None or xp is np:
            return dict(vals, np=np)
        return dict({k: xp.asarray(v) for k, v in vals.items()}, np=xp)
    return {k: L.tensor(v.tolist(), dtype=getattr(L, str(v.dtype)), device=device)
            for k, v in vals.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5 if H.QUICK else 15)
    ap.add_argument("--number", type=int, default=100 if H.QUICK else 400)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = ap.parse_args(argv)

    import numpy as np
    dev = args.device
    clock = time.process_time if H.CPU_TIME else time.perf_counter
    if dev == "cuda":
        cb = H.cuda_setup("bench_indexing")
        if cb is None:
            return 2
        import tensorplay
        libs, torch, why = {"tensorplay": tensorplay}, cb.torch, cb.torch_why
        if torch is not None:
            libs["torch"] = torch
        xp, sync = cb.cupy, cb.sync

        def timer():
            # (read at a loop's start and end: the end's wait counts the loop's queued work)
            sync()
            return clock()
    else:
        libs, torch, why = H.cpu_libs()
        xp, timer = np, clock
    glb = {n: _globals(L, np, dev) for n, L in libs.items()}
    glb["numpy"] = _globals(None, np, dev, xp)

    def host(n, a):
        if n == "numpy":
            return np.asarray(a.get() if xp is not np else a)
        return a.cpu().numpy() if n == "torch" else np.asarray(a.tolist(), dtype=np.float32)
    # each library's result checked against NumPy's once before timing
    for c, (stmt, np_stmt) in CASES.items():
        if "__setitem__" in stmt or "index_add" in stmt:   # (timed only)
            continue
        want = host("numpy", eval(np_stmt, glb["numpy"]))
        for n in libs:
            assert np.array_equal(host(n, eval(stmt, glb[n])), want), (n, c)
    names = list(libs) + ["numpy"]
    out = {(n, c): [] for n in names for c in CASES}
    for _ in range(args.rounds):
        for c, (stmt, np_stmt) in CASES.items():
            for n in names:
                t = timeit.Timer(np_stmt if n == "numpy" else stmt, globals=glb[n], timer=timer)
                out[n, c].append(min(t.repeat(3, args.number)) / args.number * 1e6)
    med = {k: statistics.median(v) for k, v in out.items()}
    rows = []
    for c in CASES:
        a, b, z = med["tensorplay", c], med.get(("torch", c)), med["numpy", c]
        rows.append([c, f"{a:.2f}", "n/a" if b is None else f"{b:.2f}", f"{z:.2f}",
                     "n/a" if b is None else f"{a / b:.2f}"])
    bare = "numpy" if dev == "cpu" else "cupy"
    H.print_table(f"Index ops on {dev}, float32, µs per call (median of {args.rounds} rounds x "
                  f"best of 3 x {args.number}{', pipelined' if dev == 'cuda' else ''})"
                  + ("" if torch is not None else f"; torch: {why}"),
                  ["call", "tensorplay", "torch", bare, "tensorplay / torch"], rows)
    res = {"cases": {c: {n: med[n, c] for n in names} for c in CASES},
           "rounds": args.rounds, "number": args.number,
           "headline": [{"figure": f"{c} (µs per call, cpu)",
                         "tensorplay": round(med["tensorplay", c], 2),
                         "torch": round(med["torch", c], 2) if torch is not None else None,
                         "numpy": round(med["numpy", c], 2), "goal": None} for c in HEADLINE]}
    print(f"\nwrote {H.write_json('indexing', res)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
