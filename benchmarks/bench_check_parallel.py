"""``tensorplay check -j N``: wall time of a whole check, serial vs N worker processes (issue 32,
item 8: check time scales with cores, results identical to a serial run).

Each run is the command a user types, in a fresh process::

    tensorplay check --plugin PLUGIN --device DEVICE -j N --quiet --json PATH

for every PLUGIN (default: the example pack ``tensorplay-example-ops`` and the built-in ops of
``tensorplay-cpu``) and every N of ``--jobs`` (default ``1,2,4,auto``; ``auto`` = one per cpu,
counted once when it equals another N). Rounds are interleaved (a round runs every N once) so a
drift of a shared machine spreads over all of them. Per (plugin, N): median wall time (and its
range over the rounds), the speedup over ``-j 1`` from the same rounds, the CPU time of the
command and its workers (``RUSAGE_CHILDREN``: what the workers' own imports cost), and whether
every run gave the serial run's JSON (timings left out) and exit status -- ``identical: no`` is a
bug, and the script then exits 1.

    python benchmarks/bench_check_parallel.py                      # cpu, -j 1,2,4,auto, 3 rounds
    python benchmarks/bench_check_parallel.py --device cuda --jobs 1,4,8,auto
    python benchmarks/bench_check_parallel.py --plugin all --device all    # bare `tensorplay check`
    python benchmarks/bench_check_parallel.py --workers spawn,default  # fresh interpreters vs forks

``--plugin all`` / ``--device all`` leave the flag out (every op pack; every available device);
``--workers`` sets ``TENSORPLAY_CHECK_WORKERS`` for the ``-j > 1`` runs (``default``: what the
command picks -- forks of the loaded command where that is safe).

Writes ``benchmarks/results/check_parallel.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H


def _untimed(obj):
    """The check's JSON without its timings (``ms``, ``check_ms``)."""
    if isinstance(obj, dict):
        return {k: _untimed(v) for k, v in obj.items() if k not in ("ms", "check_ms")}
    if isinstance(obj, list):
        return [_untimed(v) for v in obj]
    return obj


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _run(plugin, device, jobs, path, workers=None):
    """(wall s, cpu s of the command and its workers, exit status, untimed JSON)."""
    cmd = [sys.executable, "-m", "tensorplay.cli", "check", "-j", str(jobs), "--quiet",
           "--json", path]
    cmd += [] if plugin == "all" else ["--plugin", plugin]
    cmd += [] if device == "all" else ["--device", device]
    env = dict(os.environ)
    env.pop("TENSORPLAY_CHECK_WORKERS", None)
    if workers:
        env["TENSORPLAY_CHECK_WORKERS"] = workers
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = None
    if data is None:
        print(f"  {plugin} -j {jobs}: no JSON (exit {p.returncode}): {p.stderr[-2000:]}",
              file=sys.stderr)
    return wall, cpu, p.returncode, data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plugin", action="append",
                    help="plugin to check (repeatable; default: tensorplay-example-ops and "
                         "tensorplay-cpu); 'all': no --plugin, every op pack")
    ap.add_argument("--device", default="cpu", help="device to check; 'all': no --device")
    ap.add_argument("--jobs", default="1,2,4,auto", help="comma list of -j values (1 first)")
    ap.add_argument("--workers", default="default",
                    help="comma list of worker kinds for -j > 1: default (what the command "
                         "picks), fork, spawn (TENSORPLAY_CHECK_WORKERS); e.g. spawn,default "
                         "times fresh interpreters against forks in the same rounds")
    ap.add_argument("--rounds", type=int, default=1 if H.QUICK else 3)
    args = ap.parse_args(argv)
    plugins = args.plugin or ["tensorplay-example-ops", "tensorplay-cpu"]
    cpus = _cpus()
    jobs, seen = [], set()
    kinds = [k.strip() for k in args.workers.split(",") if k.strip()]
    for j in ["1"] + [x.strip() for x in args.jobs.split(",") if x.strip() != "1"]:
        n = cpus if j in ("auto", "0") else int(j)
        if n in seen:
            continue
        seen.add(n)
        label = f"auto ({n})" if j in ("auto", "0") else str(n)
        for k in (kinds if n > 1 else ["default"]):
            jobs.append((label + ("" if k == "default" else f" {k}"), n,
                         None if k == "default" else k))
    load0 = os.getloadavg()
    print(f"tensorplay check -j N on {args.device}: {cpus} cpus, load {load0[0]:.2f} "
          f"(1 min) at the start, {args.rounds} interleaved rounds")
    rows, out, bad = [], {}, False
    with tempfile.TemporaryDirectory() as tmp:
        for plugin in plugins:
            runs = {label: [] for label, _, _ in jobs}
            ref = None
            for r in range(args.rounds):
                for label, n, kind in jobs:
                    wall, cpu, rc, data = _run(plugin, args.device, n,
                                               os.path.join(tmp, f"{n}.json"), kind)
                    untimed = _untimed(data) if data is not None else None
                    if ref is None and n == 1:
                        ref = (rc, untimed)
                    same = data is not None and (rc, untimed) == ref
                    runs[label].append({"wall_s": wall, "cpu_s": cpu, "exit": rc,
                                        "identical": same,
                                        "samples": (data or {}).get("samples_checked")})
                    print(f"  round {r + 1} {plugin} -j {label}: {wall:.2f} s wall, "
                          f"{cpu:.2f} s cpu, exit {rc}{'' if same else ', NOT IDENTICAL'}",
                          flush=True)
            serial = statistics.median(x["wall_s"] for x in runs["1"])
            for label, _, _ in jobs:
                xs = runs[label]
                walls = [x["wall_s"] for x in xs]
                med = statistics.median(walls)
                same = all(x["identical"] for x in xs)
                bad |= not same
                rows.append([plugin, label, xs[0]["samples"],
                             f"{med:.2f} ({min(walls):.2f}-{max(walls):.2f})",
                             f"{serial / med:.2f}x",
                             f"{statistics.median(x['cpu_s'] for x in xs):.1f}",
                             "yes" if same else "NO"])
            out[plugin] = runs
    load1 = os.getloadavg()
    H.print_table(f"tensorplay check -j N, {args.device}, {cpus} cpus, load {load0[0]:.2f} -> "
                  f"{load1[0]:.2f}",
                  ["plugin", "-j", "samples", "wall s median (range)", "speedup vs -j 1",
                   "cpu s", "identical to -j 1"], rows)
    print(H.write_json("check_parallel", {"device": args.device, "cpus": cpus,
                                          "rounds": args.rounds, "runs": out,
                                          "load_start_end": [load0, load1]}))
    if bad:
        print("a parallel run did not give the serial run's results: a bug", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
