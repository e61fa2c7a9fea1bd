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


def run_report_write(name: str, run, report) -> dict:
    """The ``main`` of a script that measures in one go: ``res = run()``, ``report(res)``
    prints it, then ``res`` goes to ``benchmarks/results/<name>.json`` (the path printed);
    returns ``res``."""
    res = run()
    report(res)
    path = write_json(name, res)
    print(f"\nwrote {path}")
    return res


def print_targets(title: str, targets: dict) -> None:
    """The ``target | verdict`` table of a script's goals: ``holds`` (True), ``MISSED`` (False)
    or ``n/a`` (None: not measurable in this run, e.g. without torch); nothing when there are
    none."""
    rows = [[k, {True: "holds", False: "MISSED", None: "n/a"}[v]] for k, v in targets.items()]
    if rows:
        print_table(title, ["target", "verdict"], rows)


def try_import_torch():
    """``(torch, None)`` or ``(None, reason)``: PyTorch is a benchmark-only reference."""
    try:
        import torch
        return torch, None
    except Exception as e:  # noqa: BLE001 - any import failure means: no reference, say why
        return None, f"torch not importable ({type(e).__name__}: {e})"


def cpu_libs():
    """``(libs, torch, why)`` for a one-thread cpu comparison: ``libs`` maps ``"tensorplay"``
    (and ``"torch"`` where importable, set to one thread) to the module; ``why`` says why torch
    is missing (``try_import_torch``)."""
    import tensorplay as tp
    libs = {"tensorplay": tp}
    torch, why = try_import_torch()
    if torch is not None:
        torch.set_num_threads(1)
        libs["torch"] = torch
    return libs, torch, why


class CudaBench:
    """What a cuda benchmark script needs once cuda is known to work (``cuda_setup``).

    * ``cupy``: the module;
    * ``torch``: the reference module, or None; ``torch_why``: why it is None ("" otherwise);
    * ``dev_sync()``: waits for the current cuda device (CuPy);
    * ``sync()``: ``dev_sync`` then, with torch, ``torch.cuda.synchronize``: what a timed loop
      calls so that every engine's queued work is counted;
    * ``versions``: ``"CuPy <v>; torch: <v or why not>"``, the line the scripts print first.
    """

    def __init__(self, cupy, torch, torch_why):
        self.cupy, self.torch, self.torch_why = cupy, torch, torch_why
        self.dev_sync = dev_sync = cupy.cuda.Device().synchronize
        if torch is None:
            self.sync = dev_sync
        else:
            tsync = torch.cuda.synchronize

            def sync():
                dev_sync()
                tsync()
            self.sync = sync
        self.versions = f"CuPy {cupy.__version__}; torch: {torch.__version__ if torch else torch_why}"


def gpu_seconds(cupy, fn, iters: int, repeat: int, warmup: int = 1) -> list:
    """GPU seconds per call of ``fn``, one figure per repeat: CUDA events recorded on CuPy's
    current stream around ``iters`` calls, after ``warmup`` calls and a device synchronisation
    (so that a repeat times only its own calls)."""
    for _ in range(warmup):
        fn()
    cupy.cuda.Device().synchronize()
    out = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        out.append(cupy.cuda.get_elapsed_time(start, end) / 1e3 / iters)
    return out


def add_cuda_timing_args(ap) -> None:
    """The options of the scripts that time engines side by side on cuda with ``pipelined_us``
    (bench_compile_cuda.py): ``--rounds`` (interleaved rounds, the figure is their median),
    ``--iters`` (calls per pipelined measurement) and ``--no-torch`` (for ``cuda_setup``)."""
    ap.add_argument("--rounds", type=int, default=3 if QUICK else 7)
    ap.add_argument("--iters", type=int, default=50 if QUICK else 200)
    ap.add_argument("--no-torch", action="store_true")


def cuda_setup(script: str, *, no_torch=False):
    """The common start of a cuda benchmark: a ``CudaBench``, or None after printing
    ``<script>: cuda unavailable: <why>`` to stderr (the script then exits 2, the "not
    available" status ``run_all.py`` expects). ``TRITON_INTERPRET`` is dropped from the
    environment (these scripts time compiled kernels). With ``no_torch`` (a script's
    ``--no-torch``, or a script without a torch column) torch is not imported and ``torch_why``
    is ``"--no-torch"``."""
    import tensorplay
    ok, why = tensorplay.plugins.device_status("cuda")
    if not ok:
        print(f"{script}: cuda unavailable: {why}", file=sys.stderr)
        return None
    os.environ.pop("TRITON_INTERPRET", None)
    import cupy
    torch, torch_why = (None, "--no-torch") if no_torch else try_import_torch()
    return CudaBench(cupy, torch, torch_why)


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
