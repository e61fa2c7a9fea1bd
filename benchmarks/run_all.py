"""Run every ``benchmarks/bench_*.py`` present, one fresh process each, and collect their JSON.

Usage::

    python benchmarks/run_all.py [--quick] [-k SUBSTRING ...] [--timeout SECONDS]

(``nox -s bench`` does this in a venv with ``torch==2.13.0`` installed as the reference; PyTorch
is never a dependency of the project.) Each script prints its own tables; at the end this prints
a summary (script, status, seconds, JSON files written) and writes
``benchmarks/results/summary.json`` with the machine, every script's status and the content of
every JSON file the scripts wrote during this run. A script that exits 2 is "not available"
(e.g. ``bench_cuda.py`` without a GPU) and does not fail the run; any other non-zero exit does
(exit status 1).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _harness as H


def _scripts(patterns):
    found = sorted(glob.glob(os.path.join(HERE, "bench_*.py")))
    if patterns:
        found = [p for p in found if any(k in os.path.basename(p) for k in patterns)]
    return found


def _mtimes() -> dict:
    return {p: os.path.getmtime(p) for p in glob.glob(os.path.join(H.RESULTS, "*.json"))
            if os.path.basename(p) != "summary.json"}


def _new_json(before: dict) -> list:
    """JSON files created or rewritten since the snapshot ``before``."""
    return sorted(p for p, t in _mtimes().items() if before.get(p) != t)


def _print_headline(scripts: dict) -> None:
    """One table of every script's headline figures (the ``headline`` rows of its JSON:
    tensorplay, torch and NumPy measured in that script's one process)."""
    rows = []

    def cell(v):
        return "n/a" if v is None else f"{v:g}"
    for name, info in scripts.items():
        for data in info["results"].values():
            for h in data.get("headline", ()) if isinstance(data, dict) else ():
                rows.append([h.get("figure", "?"), cell(h.get("tensorplay")),
                             cell(h.get("torch")), cell(h.get("numpy")), h.get("goal", ""),
                             name])
    if rows:
        H.print_table("Headline figures (each row from one process; n/a: not measured or "
                      "not importable)", ["figure", "tensorplay", "torch", "numpy", "goal",
                                          "script"], rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (TENSORPLAY_BENCH_QUICK=1)")
    ap.add_argument("-k", action="append", default=[], help="run scripts whose name contains this")
    ap.add_argument("--timeout", type=float, default=1800, help="per script, seconds")
    a = ap.parse_args(argv)
    env = dict(os.environ)
    if a.quick:
        env["TENSORPLAY_BENCH_QUICK"] = "1"
    torch, why = H.try_import_torch()
    info = H.machine_info()
    print(f"machine: {info['cpu']}, {info['nproc']} cpu, Python {info['python']} "
          f"({info['platform']})")
    print(f"torch (reference only): {torch.__version__ if torch else why}")
    load = info.get("loadavg_1_5_15min")
    if load and load[0] > 0.5 * (info["nproc"] or 1):
        print(f"WARNING: load average {load[0]} on {info['nproc']} cpu: other work shares the "
              f"machine; medians will wander (see the 'fastest runs' figures and the IQRs)")
    os.makedirs(H.RESULTS, exist_ok=True)
    rows, scripts = [], {}
    failed = False
    for path in _scripts(a.k):
        name = os.path.basename(path)
        print(f"\n{'=' * 100}\n== {name}\n{'=' * 100}", flush=True)
        t0 = time.time()
        before = _mtimes()
        try:
            rc = subprocess.run([sys.executable, path], env=env, timeout=a.timeout,
                                check=False).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        dt = time.time() - t0
        files = _new_json(before)
        status = {0: "ok", 2: "not available (exit 2)"}.get(rc, f"FAILED ({rc})")
        if not str(status).startswith(("ok", "not available")):
            failed = True
        data = {}
        for f in files:
            try:
                with open(f) as fh:
                    data[os.path.basename(f)] = json.load(fh)
            except (OSError, ValueError) as e:
                data[os.path.basename(f)] = {"unreadable": str(e)}
        scripts[name] = {"status": status, "seconds": round(dt, 1), "results": data}
        rows.append([name, status, f"{dt:.0f}", ", ".join(os.path.basename(f) for f in files)])
    H.print_table("run_all summary", ["script", "status", "seconds", "JSON written"], rows)
    _print_headline(scripts)
    path = H.write_json("summary", {"machine": info, "quick": a.quick, "scripts": scripts})
    print(f"\nwrote {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
