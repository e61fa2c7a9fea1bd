"""``import tensorplay`` with every plugin installed, against ``python -c pass``, in one run.

What it measures (fresh interpreter per sample, the three commands interleaved so that drifts
of the machine hit all of them alike):

* ``python -c pass`` -- the interpreter alone (site, .pth files: the floor of any import);
* ``python -c "import tensorplay"`` with ``TENSORPLAY_PLUGINS=""`` -- the core, no plugin loaded
  (the entry-point scan still runs);
* ``python -c "import tensorplay"`` -- the core with every installed plugin loaded;
* ``import tensorplay`` + the first cpu op (``(tp.ones(3) + 1).tolist()``): time to first result,
  net of ``python -c pass`` (target: within 150 ms); the modules that op imported are listed, and
  ``array_api_compat`` / ``unittest`` / ``numpy.testing`` / ``numpy.f2py`` must not be among them;
* ``python -c "import numpy"`` -- the floor of any cpu op (the cpu backend is NumPy).

Each run's CPU time (user + system of the child, from ``wait4``) is printed beside its wall time:
on a machine loaded by other work the wall time includes waiting for a core, the CPU time does
not; the fastest run of each command is the quiet-moment figure.

Bytecode caching is on for the runs (``.pyc`` files in a temporary ``PYTHONPYCACHEPREFIX``), as
for any installed package, even where the calling environment sets ``PYTHONDONTWRITEBYTECODE``.

It prints medians (IQR), the ratio all-plugins / ``pass`` (ratio of medians, and the median of
per-round ratios), the plugins' share, and a breakdown measured inside one interpreter (scan,
plugin loading per plugin). It also shows that numpy, cupy, triton (and torch) are *not*
imported by ``import tensorplay``.

"Every plugin": the distributions of this repository (``plugins/*/``, ``examples/``). One that
is not pip-installed is made visible for the run only, through a throw-away ``*.dist-info`` on a
temporary ``PYTHONPATH`` entry (its source directory goes on the path too); the JSON says which
were installed and which were provided that way.

Usage: ``python benchmarks/bench_import.py [-n ROUNDS]``; results in
``benchmarks/results/import.json``. ``TENSORPLAY_BENCH_QUICK=1`` runs 7 rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from _harness import QUICK, machine_info, print_table, summary, write_json

HEAVY = ("numpy", "cupy", "triton", "torch", "array_api_compat")

PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
import tensorplay
t1 = time.perf_counter()
m = tensorplay.plugins.manager
print(json.dumps({
    "import_ms": (t1 - t0) * 1e3,
    "scan_ms": m._S.scan_seconds * 1e3,
    "scan_count": m._S.scan_count,
    "plugins_ms": m._S.load_seconds * 1e3,
    "plugins": [{k: p[k] for k in ("distribution", "version", "status", "load_ms", "error")}
                for p in tensorplay.plugins.list()],
    "heavy_imported": {h: h in sys.modules for h in %r},
}))
""".replace("%r", repr(HEAVY))


def _pyproject_plugins():
    """(distribution, version, source dir, {group: {name: value}}) for the repo's plugins."""
    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python < 3.11
        return []
    out = []
    dirs = [os.path.join(REPO, "plugins", d) for d in sorted(os.listdir(os.path.join(REPO, "plugins")))]
    dirs.append(os.path.join(REPO, "examples"))
    for d in dirs:
        pp = os.path.join(d, "pyproject.toml")
        if not os.path.exists(pp):
            continue
        with open(pp, "rb") as f:
            proj = tomllib.load(f).get("project", {})
        eps = {g: dict(v) for g, v in proj.get("entry-points", {}).items()
               if g.startswith("tensorplay.")}
        if eps:
            out.append((proj["name"], proj.get("version", "0"), d, eps))
    return out


def _installed(dist: str) -> bool:
    from importlib.metadata import PackageNotFoundError, distribution
    try:
        distribution(dist)
        return True
    except PackageNotFoundError:
        return False


def prepare_env(tmp: str) -> tuple[dict, list]:
    """Environment for the runs, and how each repo plugin is made visible."""
    extra, how = [], []
    for dist, version, src, eps in _pyproject_plugins():
        if _installed(dist):
            how.append({"distribution": dist, "how": "installed"})
            continue
        info = os.path.join(tmp, f"{dist.replace('-', '_')}-{version}.dist-info")
        os.makedirs(info, exist_ok=True)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        with open(os.path.join(info, "entry_points.txt"), "w") as f:
            f.writelines(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()) for group, entries in eps.items())
        extra.append(src)
        how.append({"distribution": dist, "how": "throw-away dist-info for this run"})
    env = dict(os.environ)
    # Measure what users get: bytecode cached (this sandbox sets PYTHONDONTWRITEBYTECODE=1, which
    # would recompile every module on every import). Caches go to the temp dir, not the tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
    for k in ("TENSORPLAY_PLUGINS", "TENSORPLAY_DISABLE_PLUGINS", "TENSORPLAY_STRICT_PLUGINS",
              "TENSORPLAY_TRACE_PLUGINS"):
        env.pop(k, None)
    if extra:
        env["PYTHONPATH"] = os.pathsep.join([tmp] + extra + [p for p in
                                                            [env.get("PYTHONPATH")] if p])
    return env, how


FIRST_OP = "import tensorplay as tp; (tp.ones(3) + 1).tolist()"
NUMPY = "import numpy"
FIRST_OP_PROBE = FIRST_OP + r"""
import json, sys
print(json.dumps({m: m in sys.modules for m in ("array_api_compat", "unittest", "numpy.testing",
                                                   "numpy.f2py", "ml_dtypes", "cupy", "triton")}))
"""


CPU = {}   # code -> [CPU seconds (user + system) of each run's process]


def _run(code: str, env: dict) -> float:
    """Wall seconds of one fresh interpreter running ``code``; its CPU seconds (user + system,
    from ``wait4``) go to ``CPU[code]``: on a machine loaded by other work, the CPU time is what
    the process itself costs, without the time it waited for a core."""
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise subprocess.CalledProcessError(p.returncode, code)
    CPU.setdefault(code, []).append(ru.ru_utime + ru.ru_stime)
    return dt


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", "--rounds", type=int, default=7 if QUICK else 31)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        env, how = prepare_env(tmp)
        core_env = dict(env, TENSORPLAY_PLUGINS="")
        for _ in range(2):                           # warm the OS file and bytecode caches
            _run("pass", env), _run("import tensorplay", env), _run("import tensorplay", core_env)
        probe = json.loads(subprocess.run([sys.executable, "-c", PROBE], env=env, check=True,
                                          capture_output=True, text=True).stdout)
        first_mods = json.loads(subprocess.run(
            [sys.executable, "-c", FIRST_OP_PROBE], env=env, check=True, capture_output=True,
            text=True).stdout.strip().splitlines()[-1])
        _run(FIRST_OP, env)
        _run(NUMPY, env)
        CPU.clear()
        runs = {"pass": [], "core": [], "all": [], "first_op": [], "numpy": []}
        for _ in range(args.rounds):
            runs["pass"].append(_run("pass", env))
            runs["core"].append(_run("import tensorplay", core_env))
            runs["all"].append(_run("import tensorplay", env))
            runs["first_op"].append(_run(FIRST_OP, env))
            runs["numpy"].append(_run(NUMPY, env))
    s = {k: summary(v, 1e3) for k, v in runs.items()}
    code_of = {"pass": "pass", "all": "import tensorplay", "first_op": FIRST_OP, "numpy": NUMPY}
    cpu = {k: CPU[c] for k, c in code_of.items()}
    cpu["core"] = CPU["import tensorplay"][0::2]      # core_env and env runs alternate
    cpu["all"] = CPU["import tensorplay"][1::2]
    cs = {k: summary(v, 1e3) for k, v in cpu.items()}
    ratio = s["all"]["median"] / s["pass"]["median"]
    per_round = statistics.median(a / p for a, p in zip(runs["all"], runs["pass"]))
    plugin_cost = statistics.median(a - c for a, c in zip(runs["all"], runs["core"])) * 1e3
    fmt = lambda x: f"{x['median']:.1f} ms (IQR {x['iqr']:.1f})"
    print_table(f"import time, fresh interpreter, median of {args.rounds} interleaved rounds",
                ["command", "wall time", "CPU time (user + sys)", "fastest run (wall)"],
                [[label, fmt(s[k]), fmt(cs[k]), f"{s[k]['min']:.1f} ms"] for label, k in (
                    ("python -c pass", "pass"),
                    ("python -c 'import numpy' (reference)", "numpy"),
                    ("import tensorplay (TENSORPLAY_PLUGINS='': no plugin loaded)", "core"),
                    ("import tensorplay (all plugins)", "all"),
                    ("import tensorplay + first cpu op", "first_op"))])
    first_net = statistics.median(f - p for f, p in zip(runs["first_op"], runs["pass"])) * 1e3
    first_cpu = statistics.median(f - p for f, p in zip(cpu["first_op"], cpu["pass"])) * 1e3
    first_min = s["first_op"]["min"] - s["pass"]["min"]
    over_np = statistics.median(f - n for f, n in zip(runs["first_op"], runs["numpy"])) * 1e3
    over_np_cpu = statistics.median(f - n for f, n in zip(cpu["first_op"], cpu["numpy"])) * 1e3
    print(f"\ntime to first result (import + first cpu op), net of python -c pass (paired "
          f"median): {first_net:.1f} ms wall (target <= 150 ms: "
          f"{'met' if first_net <= 150 else 'NOT met'}); {first_cpu:.1f} ms CPU "
          f"({'met' if first_cpu <= 150 else 'NOT met'} on CPU time); fastest runs: "
          f"{first_min:.1f} ms")
    print(f"of which numpy's own import (python -c 'import numpy', net of pass): "
          f"{statistics.median(n - p for n, p in zip(runs['numpy'], runs['pass'])) * 1e3:.1f} ms "
          f"wall, {statistics.median(n - p for n, p in zip(cpu['numpy'], cpu['pass'])) * 1e3:.1f} "
          f"ms CPU; tensorplay on top of numpy: {over_np:.1f} ms wall, {over_np_cpu:.1f} ms CPU")
    print("imported by the first cpu op: " + ", ".join(
        f"{k}={'YES' if v else 'no'}" for k, v in first_mods.items()))
    ratio_min = s["all"]["min"] / s["pass"]["min"]
    print(f"\nratio import tensorplay (all plugins) / python -c pass: {ratio:.2f}x "
          f"(median of per-round ratios {per_round:.2f}x; ratio of the fastest runs "
          f"{ratio_min:.2f}x: {s['all']['min']:.1f} / {s['pass']['min']:.1f} ms)")
    print(f"cost of loading the plugins (paired, all - none): {plugin_cost:.1f} ms")
    print(f"\ninside one interpreter: import {probe['import_ms']:.1f} ms, of which entry-point "
          f"scan {probe['scan_ms']:.1f} ms (scans: {probe['scan_count']}), loading the plugins "
          f"{probe['plugins_ms'] - probe['scan_ms']:.1f} ms")
    print_table("plugins", ["distribution", "version", "status", "load ms", "visible as"],
                [[p["distribution"], p["version"], p["status"], f"{p['load_ms']:.2f}",
                  next((h["how"] for h in how if h["distribution"] == p["distribution"]),
                       "installed (not in this repo)")] for p in probe["plugins"]])
    heavy = probe["heavy_imported"]
    print("\nimported by `import tensorplay`: " + ", ".join(
        f"{k}={'YES' if v else 'no'}" for k, v in heavy.items()))
    data = {"rounds": args.rounds, "bytecode_cache": "on (PYTHONPYCACHEPREFIX in a temp dir)",
            "environment_had_PYTHONDONTWRITEBYTECODE": bool(os.environ.get(
                "PYTHONDONTWRITEBYTECODE")), "ms": s, "ratio_all_over_pass": ratio,
            "ratio_per_round_median": per_round, "ratio_of_minimums": ratio_min,
            "plugin_cost_ms": plugin_cost, "first_op_net_ms": first_net,
            "first_op_net_cpu_ms": first_cpu, "first_op_net_fastest_ms": first_min,
            "first_op_over_numpy_ms": over_np, "first_op_over_numpy_cpu_ms": over_np_cpu,
            "cpu_ms": cs,
            "first_op_imported": first_mods,
            "probe": probe, "plugins_visible_as": how, "machine": machine_info(),
            "headline": [
                {"figure": "import tensorplay + first cpu op, net of python -c pass (ms wall)",
                 "tensorplay": round(first_net, 1), "torch": None,
                 "numpy": round(statistics.median(n - p for n, p in zip(runs["numpy"],
                                                                       runs["pass"])) * 1e3, 1),
                 "goal": "<= 150 (issue 14 goal 4; numpy column: python -c 'import numpy')"},
                {"figure": "same, CPU time of the process (ms; the machine's load left out)",
                 "tensorplay": round(first_cpu, 1), "torch": None,
                 "numpy": round(statistics.median(n - p for n, p in zip(cpu["numpy"],
                                                                       cpu["pass"])) * 1e3, 1),
                 "goal": "<= 150"}]}
    path = write_json("import", data)
    print(f"\nwrote {os.path.relpath(path, REPO)}")
    if any(heavy[k] for k in ("numpy", "cupy", "triton", "torch")):
        print("FAIL: import tensorplay imported an array library", file=sys.stderr)
        raise SystemExit(1)
    return data


if __name__ == "__main__":
    main()
