"""Shared timing helpers for the benchmark scripts (no third-party imports).

Rules every script follows:

* a figure is the median of ``repeat`` runs, each run timing ``number`` calls with ``timeit``
  (``number`` is calibrated so that one run lasts about ``target_s``); the spread is the
  interquartile range (IQR) of the runs;
* a *net overhead* is measured **paired**: each repeat times the op call and the reference
  (the same body called directly) back to back, and the overhead of that repeat is their
  difference; the reported figure is the median (and IQR) of those differences, so slow drifts of
  the machine cancel;
* ratios are taken between figures measured in the same process, in the same run.

Results go to ``benchmarks/results/<name>.json`` (git-ignored) together with the machine they
came from (``machine_info()``).
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import sys
import time
import timeit

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

QUICK = bool(os.environ.get("TENSORPLAY_BENCH_QUICK"))


def _quantiles(xs):
    xs = sorted(xs)
    if len(xs) < 2:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[1], q[2]


def summary(xs, scale=1.0) -> dict:
    """median / q1 / q3 / iqr / min / max of ``xs`` (multiplied by ``scale``)."""
    q1, med, q3 = _quantiles(xs)
    return {"median": med * scale, "q1": q1 * scale, "q3": q3 * scale,
            "iqr": (q3 - q1) * scale, "min": min(xs) * scale, "max": max(xs) * scale,
            "runs": len(xs)}


# TENSORPLAY_BENCH_CPU_TIME=1: time with the process's CPU clock instead of the wall clock, so a
# machine shared with other work (load above its core count) does not add the time this
# process spent waiting for a core; for comparisons on busy machines, not for headline figures.
CPU_TIME = bool(os.environ.get("TENSORPLAY_BENCH_CPU_TIME"))


def _timer(stmt, setup="pass", glb=None):
    if CPU_TIME:
        return timeit.Timer(stmt, setup=setup, globals=glb, timer=time.process_time)
    return timeit.Timer(stmt, setup=setup, globals=glb)


def calibrate(timer, target_s) -> int:
    """Loops per run so that one run of ``timer`` lasts about ``target_s`` seconds."""
    n = 1
    while True:
        t = timer.timeit(n)
        if t >= target_s / 5 or n >= 1 << 24:
            return max(1, int(n * target_s / max(t, 1e-9)))
        n *= 4


def time_per_call(stmt, glb, *, repeat=None, target_s=None, setup="pass") -> list:
    """Seconds per execution of ``stmt`` for each of ``repeat`` runs."""
    repeat = repeat or (5 if QUICK else 21)
    target_s = target_s or (0.02 if QUICK else 0.05)
    timer = _timer(stmt, setup, glb)
    n = calibrate(timer, target_s)
    out = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            out.append(timer.timeit(n) / n)
    finally:
        if gc_was:
            gc.enable()
    return out


def paired(stmts: dict, glb, *, repeat=None, target_s=None) -> dict:
    """Time several statements interleaved: ``{label: [seconds per call, one per repeat]}``.

    Every repeat times each statement once, in the given order, so that statements compared
    with each other saw the same machine state.
    """
    # many short runs: on a shared machine a short run is more often left uninterrupted, so the
    # median of many short runs drifts less than that of a few long ones
    repeat = repeat or (9 if QUICK else 41)
    target_s = target_s or (0.005 if QUICK else 0.01)
    timers = {k: _timer(s, "pass", glb) for k, s in stmts.items()}
    # calibration doubles as warm-up (caches, specialisation of the interpreter)
    loops = {k: calibrate(t, target_s) for k, t in timers.items()}
    out = {k: [] for k in stmts}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            for k, t in timers.items():
                out[k].append(t.timeit(loops[k]) / loops[k])
    finally:
        if gc_was:
            gc.enable()
    return out


def diff(a: list, b: list) -> list:
    """Per-repeat difference ``a[i] - b[i]`` (paired runs)."""
    return [x - y for x, y in zip(a, b)]


def us(xs) -> dict:
    """``summary`` in microseconds."""
    return summary(xs, 1e6)


def fmt(s: dict, unit="µs", digits=2) -> str:
    """``median ± IQR/2`` style cell: ``1.23 µs (IQR 0.04)``."""
    if s is None:
        return "n/a"
    return f"{s['median']:.{digits}f} {unit} (IQR {s['iqr']:.{digits}f})"


def machine_info() -> dict:
    """Where the figures came from: CPU model, cores, Python, library versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    info = {"cpu": cpu, "nproc": os.cpu_count(), "python": platform.python_version(),
            "loadavg_1_5_15min": load, "clock": "process CPU time" if CPU_TIME else "wall",
            "implementation": platform.python_implementation(), "platform": platform.platform(),
            "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for mod in ("tensorplay", "torch", "numpy"):
        m = sys.modules.get(mod)
        info[mod] = getattr(m, "__version__", None) if m is not None else None
    return info


def write_json(name: str, data: dict) -> str:
    """Write ``data`` (plus ``machine``) to ``benchmarks/results/<name>.json``; returns the path."""
    os.makedirs(RESULTS, exist_ok=True)
    data = dict(data)
    data.setdefault("machine", machine_info())
    path = os.path.join(RESULTS, f"{name}.json")
    with open(path, "w") as f:
        json.dump(data, f, indent=2, default=str)
    return path


def print_table(title: str, header: list, rows: list) -> None:
    """Plain-text table (markdown-compatible)."""
    cols = [header] + [[str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cols) for i in range(len(header))]
    print(f"\n### {title}\n")
    print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(header)) + " |")
    print("|" + "|".join("-" * (w[i] + 2) for i in range(len(header))) + "|")
    for r in cols[1:]:
        print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |")
    sys.stdout.flush()


def try_import_torch():
    """``(torch, None)`` or ``(None, reason)``: PyTorch is a benchmark-only reference."""
    try:
        import torch
        return torch, None
    except Exception as e:  # noqa: BLE001 - any import failure means: no reference, say why
        return None, f"torch not importable ({type(e).__name__}: {e})"


def triton_device_or_exit_code(script: str, device: str):
    """None when ``device`` can run Triton kernels here ("cpu": the interpreter; "cuda": a usable
    GPU) and ``triton``/``tensorplay-triton`` import; else prints why (naming ``script``) and
    returns 2, the "not available" exit status ``run_all.py`` expects."""
    import sys
    import tensorplay
    ok, why = (True, "") if device == "cpu" else tensorplay.plugins.device_status("cuda")
    if not ok:
        print(f"{script}: no CUDA GPU ({why}); nothing to measure", file=sys.stderr)
        return 2
    try:
        import tensorplay_triton  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        print(f"{script}: needs triton and tensorplay-triton: {e}", file=sys.stderr)
        return 2
    return None
