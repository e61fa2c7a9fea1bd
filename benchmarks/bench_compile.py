"""Eager vs ``tensorplay.compile`` on a chain of 8 elementwise ops (2**22 float32 elements), side
by side with NumPy eager, torch eager and ``torch.compile`` in the same run; and the capture cost.

The chain (``mul, add, mul, sub, relu, add, mul, tanh``) runs

* eagerly in tensorplay (8 dispatches, 8 full-size temporaries);
* compiled (one fused chain: on cpu the cpu plugin's single-pass blocked NumPy function, on cuda
  whatever fuser the CUDA backend offers);
* in NumPy as a NumPy user writes it (``np.maximum(a, 0)`` for relu; cpu only), and the same with
  ``out=`` into one preallocated temporary (the best a NumPy user does by hand);
* in torch eager and ``torch.compile`` (inductor, default mode; cpu only) when torch is
  importable;
* and, as the floor the cpu fuser cannot go below while staying bit-equal to eager, NumPy's
  ``tanh`` alone on the same elements (eager's tanh kernel; ``torch.tanh`` alone beside it).

On cpu the whole comparison runs once per entry of ``--threads`` (``1,all`` by default; ``all``:
the cores this process may run on), with ``tensorplay.set_num_threads`` and
``torch.set_num_threads`` both set to it (NumPy's ufuncs stay single-threaded): ratios are taken
within one thread count, from the same interleaved rounds.

All columns are timed interleaved (each repeat times every column once, so they see the same
machine state), after warm-up, on the same input values. Before timing, the compiled result is
checked *bit for bit* against eager on cpu (allclose on cuda). Prints medians (IQR), the ratio
eager/compiled (> 1: compiled is faster) and the ratio of each reference to compiled.

Capture cost: the first call of ``tensorplay.compile`` on chains of 8, 32 and 128 elementwise ops
on 16 elements (capture + fusion planning + code generation), then the second call (where the cpu
fuser compiles its own code for a chain on small arrays; on arrays of 2^15 elements or more it
does so on the first call), in µs per op: linear when the per-op figures stay flat as the chain
grows.

Results go to ``benchmarks/results/compile_<device>.json`` (and ``--json PATH`` if given).

Usage::

    python benchmarks/bench_compile.py [--device cpu|cuda] [--log2n 22] [--repeat 21]
                                       [--threads 1,all] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H


def chain(x, y):
    """8 elementwise ops (tensorplay and torch tensors alike)."""
    a = x * y
    a = a + 1.0
    a = a * 0.5
    a = a - y
    a = a.relu()
    a = a + x
    a = a * 2.0
    return a.tanh()


def numpy_chain(np):
    def f(x, y):
        a = x * y
        a = a + 1.0
        a = a * 0.5
        a = a - y
        a = np.maximum(a, 0)
        a = a + x
        a = a * 2.0
        return np.tanh(a)
    return f


def numpy_out_chain(np):
    def f(x, y):
        a = np.multiply(x, y)
        np.add(a, 1.0, out=a)
        np.multiply(a, 0.5, out=a)
        np.subtract(a, y, out=a)
        np.maximum(a, 0, out=a)
        np.add(a, x, out=a)
        np.multiply(a, 2.0, out=a)
        return np.tanh(a, out=a)
    return f


def _long_chain(length):
    def f(x):
        a = x
        for i in range(length // 2):
            a = a * 1.0001
            a = a + (0.5 if i % 2 else -0.25)
        return a
    return f


def _sync(device):
    from tensorplay import _backend
    _backend.get_backend(device.split(":")[0]).synchronize()


def _columns(cols, device, repeat):
    times = {k: [] for k in cols}
    for _ in range(repeat):
        for k, (fn, args, sync) in cols.items():
            if sync:
                _sync(device)
            t0 = time.perf_counter()
            fn(*args)
            if sync:
                _sync(device)
            times[k].append(time.perf_counter() - t0)
    return times


def capture_cost(tp, device, lengths=(8, 32, 128), rounds=5):
    """µs per op of the first call of ``tensorplay.compile`` and of the second call minus a
    steady-state call (the fuser's own build), medians of ``rounds``: ``({n: first}, {n: build})``."""
    x = tp.randn(16, device=device)
    first, build = {}, {}
    for n in lengths:
        t1, t2 = [], []
        for _ in range(rounds):
            c = tp.compile(_long_chain(n))
            t0 = time.perf_counter()
            c(x)
            t1.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            c(x)
            second = time.perf_counter() - t0
            t0 = time.perf_counter()
            c(x)
            t2.append(second - (time.perf_counter() - t0))
        t1.sort()
        t2.sort()
        first[n] = t1[len(t1) // 2] * 1e6 / n
        build[n] = t2[len(t2) // 2] * 1e6 / n
    return first, build


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--log2n", type=int, default=22, help="log2 of the element count (22)")
    p.add_argument("--repeat", type=int, default=7 if H.QUICK else 21,
                   help="timed runs of each column (median kept)")
    p.add_argument("--threads", default="1,all",
                   help="cpu: comma list of thread counts, each a whole comparison with "
                        "tensorplay.set_num_threads and torch.set_num_threads set to it; 'all': "
                        "the cores this process may run on (default 1,all)")
    p.add_argument("--no-torch", action="store_true", help="leave torch out")
    p.add_argument("--json", default=None, help="also write the JSON here")
    a = p.parse_args(argv)

    import numpy as np
    import tensorplay as tp
    tp.manual_seed(0)
    n = 1 << a.log2n
    cpu = a.device.split(":")[0] == "cpu"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    thread_counts = [1]
    if cpu:
        thread_counts = [cores if t.strip() == "all" else int(t) for t in a.threads.split(",")]
    x = tp.randn(n, device=a.device)
    y = tp.randn(n, device=a.device)
    compiled = tp.compile(chain)

    expected = chain(x, y)
    got = compiled(x, y)
    if cpu:
        if not np.array_equal(got.numpy().view(np.uint32), expected.numpy().view(np.uint32)):
            raise SystemExit("bench_compile: compiled result differs from eager (bits); not timing")
    elif not tp.allclose(got, expected, rtol=1e-6, atol=1e-6):
        raise SystemExit("bench_compile: compiled result differs from eager; not timing")
    fused = len(compiled.graph.groups)
    cols = {"tensorplay eager": (chain, (x, y), True),
            "tensorplay.compile": (compiled, (x, y), True)}
    notes = {}
    torch = None
    if cpu:
        xn, yn = x.numpy(), y.numpy()
        cols["NumPy eager"] = (numpy_chain(np), (xn, yn), False)
        cols["NumPy with out="] = (numpy_out_chain(np), (xn, yn), False)
        # the floor of any chain bit-equal to eager: eager's tanh is NumPy's, and it is most of
        # the chain's time (single-threaded: NumPy's ufuncs never share one call out)
        tanh_out = np.empty_like(xn)
        cols["NumPy tanh alone (floor, 1 thread)"] = (np.tanh, (xn, tanh_out), False)
        if not a.no_torch:
            torch, why = H.try_import_torch()
            if torch is None:
                notes["torch"] = why
            else:
                xt, yt = torch.from_numpy(xn.copy()), torch.from_numpy(yn.copy())
                tc = torch.compile(chain)
                ref = tc(xt, yt)
                diff = float((ref - torch.from_numpy(expected.numpy())).abs().max())
                notes["torch.compile max |diff| vs tensorplay eager"] = diff
                cols["torch eager"] = (chain, (xt, yt), False)
                cols["torch.compile"] = (tc, (xt, yt), False)
                cols["torch tanh alone"] = (torch.tanh, (xt,), False)
    runs = {}
    load = {}
    for t in thread_counts:
        if cpu:
            tp.set_num_threads(t)
            if torch is not None:
                torch.set_num_threads(t)
        if cpu and not np.array_equal(compiled(x, y).numpy().view(np.uint32),
                                      expected.numpy().view(np.uint32)):
            raise SystemExit(f"bench_compile: compiled result on {t} threads differs from eager")
        for _ in range(2):             # warm-up (allocator, caches, kernel compilation, threads)
            for fn, args, _s in cols.values():
                fn(*args)
        load[t] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        times = _columns(cols, a.device, a.repeat)
        runs[t] = {k: H.summary(v, 1e3) for k, v in times.items()}
    stats = runs[thread_counts[0]]
    comp = stats["tensorplay.compile"]["median"]
    cap, build = capture_cost(tp, a.device)
    res = {
        "benchmark": "compile_elementwise_chain",
        "device": a.device,
        "elements": n,
        "dtype": "float32",
        "ops_in_chain": 8,
        "fused_chains": fused,
        "captures": compiled.captures,
        "ms": stats,
        "eager_ms": stats["tensorplay eager"],
        "compiled_ms": stats["tensorplay.compile"],
        "ratio_eager_over_compiled": stats["tensorplay eager"]["median"] / comp,
        "ratio_over_compiled": {k: s["median"] / comp for k, s in stats.items()},
        "threads": {str(t): {"ms": r, "load_average_1min": load[t],
                             "ratio_over_compiled": {k: s["median"] /
                                                     r["tensorplay.compile"]["median"]
                                                     for k, s in r.items()}}
                    for t, r in runs.items()},
        "capture_us_per_op": cap,
        "fuser_build_us_per_op": build,
        "thread_counts": thread_counts,
        "bit_equal_to_eager": cpu,
        "notes": notes,
        "repeat": a.repeat,
    }
    med = {k: round(v["median"], 2) for k, v in stats.items()}
    res["headline"] = [
        {"figure": f"8-op elementwise chain, 2^{a.log2n} float32 on {a.device}: eager (ms)",
         "tensorplay": med["tensorplay eager"], "torch": med.get("torch eager"),
         "numpy": med.get("NumPy eager"), "goal": ""},
        {"figure": "same chain, tensorplay.compile / torch.compile (ms)",
         "tensorplay": med["tensorplay.compile"], "torch": med.get("torch.compile"),
         "numpy": None,
         "goal": ">= 2x faster than eager and faster than NumPy eager (issue 14 goal 3): " +
                 ("met" if med["tensorplay eager"] >= 2 * med["tensorplay.compile"] and
                  med.get("NumPy eager", float("inf")) > med["tensorplay.compile"] else "NOT met")},
        {"figure": f"tensorplay.compile capture cost of a 128-op chain, µs per op (8 ops: "
                   f"{cap[8]:.0f})",
         "tensorplay": round(cap[128], 1), "torch": None, "numpy": None,
         "goal": "linear in the chain length"},
    ]
    for t, r in runs.items():
        if "torch.compile" in r:
            ratio = r["torch.compile"]["median"] / r["tensorplay.compile"]["median"]
            res["headline"].append(
                {"figure": f"same chain on {t} thread(s): tensorplay.compile / torch.compile (ms)",
                 "tensorplay": round(r["tensorplay.compile"]["median"], 2),
                 "torch": round(r["torch.compile"]["median"], 2), "numpy": None,
                 "goal": f">= 1.3x faster than torch.compile (issue 32 item 7): {ratio:.2f}x, " +
                         ("met" if ratio >= 1.3 else "NOT met")})
    print(f"chain of 8 elementwise ops, {n} float32 elements on {a.device} "
          f"(median of {a.repeat} interleaved runs; {cores} cores; torch "
          f"{'present' if torch is not None else 'n/a'})")
    for t, r in runs.items():
        c = r["tensorplay.compile"]["median"]
        H.print_table(f"8-op elementwise chain, {t} thread(s) (tensorplay and torch; load "
                      f"average {load[t]:.2f})" if cpu else "8-op elementwise chain",
                      ["column", "time", "÷ tensorplay.compile"],
                      [[k, H.fmt(s, "ms"), f"{s['median'] / c:.2f}x"] for k, s in r.items()])
    print(f"\ncompiled: {fused} fused chain; result "
          f"{'bit-equal to eager on every thread count' if cpu else 'allclose to eager'}")
    print(f"ratio eager/compiled: {res['ratio_eager_over_compiled']:.2f}x")
    for k, v in notes.items():
        print(f"{k}: {v}")
    print("capture cost (first call: capture + plan + codegen), µs per op: " +
          ", ".join(f"{k} ops {v:.0f}" for k, v in cap.items()))
    print("the backend fuser's build (second call on small arrays), µs per op: " +
          ", ".join(f"{k} ops {v:.0f}" for k, v in build.items()))
    path = H.write_json(f"compile_{a.device.split(':')[0]}", res)
    print(f"written to {path}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(res, machine=H.machine_info()), f, indent=2, default=str)
        print(f"and to {a.json}")
    return res


if __name__ == "__main__":
    main()
