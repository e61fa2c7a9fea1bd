"""Per-call host overhead of ``tensorplay.compile`` on tiny tensors (cpu by default): a compiled
function against the same function called eagerly, where the arrays are so small (16 float32
elements) that the time is almost all Python.

Functions (one tensor argument, ``x`` of 16 elements; ``softmax_rows`` views it as 2 x 8):

* ``one_op``: ``x * 2.0`` (one node: what the compiled call adds around a single dispatch);
* ``chain4``: ``(x * 2.0 + 1.0).relu().tanh()`` (one fused chain of 4 elementwise ops);
* ``softmax_rows``: ``a = x - x.amax(-1, keepdim=True); e = a.exp(); e / e.sum(-1,
  keepdim=True)`` (two reductions, elementwise groups in between: the row softmax whose compiled
  default mode was slower than eager on the H200, benchmarks/README.md run G);
* ``two_args``: ``x * y + 1.0`` (two tensor arguments: the per-leaf cost of the signature);
* ``method``: ``x * self.k`` called as ``forward(self, x)`` (a compiled method: a non-tensor
  argument, and a guarded attribute).

Each compiled function is checked against eager (allclose) before timing. Columns are timed
interleaved (``_harness.paired``: every round times eager, then compiled; 41 rounds of ~10 ms
each by default), so the *overhead* (compiled - eager, per round, median and IQR) and the
*ratio* (compiled / eager medians) come from the same machine state. ``--mode`` adds
``reduce-overhead`` (on cpu it runs as ``"default"`` after its skip check: the figure is that
check's cost).

``--profile N`` also runs N calls of each compiled function under cProfile and prints the
functions with the most time of their own (where ``CompiledFunction.__call__`` spends it).

``--device cuda`` runs the same on a GPU: calls are queued without synchronising (16-element
kernels keep the GPU ahead of the host), so the figures are host time per call, what the H200
profile of run G measured; exit status 2 when cuda is unavailable.

Results go to ``benchmarks/results/compile_overhead_<device>.json`` (and ``--json PATH``).

Usage::

    python benchmarks/bench_compile_overhead.py [--fn one_op,chain4,softmax_rows,two_args,method]
        [--mode default,reduce-overhead] [--numel 16] [--repeat 41] [--profile 20000]
        [--device cpu|cuda] [--json PATH]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness as H  # noqa: E402


def one_op(x):
    return x * 2.0


def chain4(x):
    return (x * 2.0 + 1.0).relu().tanh()


def softmax_rows(x):
    a = x - x.amax(-1, keepdim=True)
    e = a.exp()
    return e / e.sum(-1, keepdim=True)


def two_args(x, y):
    return x * y + 1.0


class Affine:
    """A module-like object: its compiled ``forward`` is called as ``forward(self, x)``."""

    def __init__(self, k):
        self.k = k

    def forward(self, x):
        return x * self.k


FUNCTIONS = {"one_op": one_op, "chain4": chain4, "softmax_rows": softmax_rows,
             "two_args": two_args, "method": Affine.forward}


def _inputs(tp, name, numel, device):
    x = tp.randn(numel, device=device)
    if name == "softmax_rows":
        return (x.view(2, numel // 2),)
    if name == "two_args":
        return (x, tp.randn(numel, device=device))
    if name == "method":
        return (Affine(2.0), x)
    return (x,)


def profile(compiled, args, calls, top=14) -> str:
    """cProfile of ``calls`` calls of ``compiled(*args)``: the ``top`` functions by own time."""
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        compiled(*args)
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


def main(argv=None) -> dict | int:
    """Runs the comparison; the results (a dict), or 2 when the device is unavailable."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fn", default=",".join(FUNCTIONS),
                   help="comma list of " + ", ".join(FUNCTIONS))
    p.add_argument("--mode", default="default", help="comma list: default, reduce-overhead")
    p.add_argument("--numel", type=int, default=16, help="elements of x (even; 16)")
    p.add_argument("--device", default="cpu",
                   help="cpu (default) or cuda: on cuda the figures are host time per call, "
                        "calls queued without synchronising (16 elements keep the GPU ahead)")
    p.add_argument("--repeat", type=int, default=None, help="interleaved rounds (41; quick 9)")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="also cProfile N calls of each compiled function")
    p.add_argument("--json", default=None, help="also write the JSON here")
    a = p.parse_args(argv)

    import tensorplay as tp
    if a.device.split(":")[0] != "cpu":
        ok, why = tp.plugins.device_status(a.device.split(":")[0])
        if not ok:
            print(f"bench_compile_overhead: {a.device} unavailable: {why}", file=sys.stderr)
            return 2
    tp.manual_seed(0)
    tp.set_num_threads(1)
    names = [s.strip() for s in a.fn.split(",") if s.strip()]
    modes = [s.strip() for s in a.mode.split(",") if s.strip()]
    rows, res, profiles = [], {}, {}
    for name in names:
        fn = FUNCTIONS[name]
        args = _inputs(tp, name, a.numel, a.device)
        ref = fn(*args)
        glb = {"fn": fn, "args": args}
        stmts = {"eager": "fn(*args)"}
        compiled = {}
        for m in modes:
            c = tp.compile(fn, mode=None if m == "default" else m)
            for _ in range(3):                # capture, validation, steady state
                out = c(*args)
            if not tp.allclose(out, ref, rtol=1e-6, atol=1e-6):
                raise SystemExit(f"bench_compile_overhead: compiled {name} ({m}) differs from eager")
            if c.captures != 1:
                raise SystemExit(f"bench_compile_overhead: {name} ({m}) captured {c.captures} times")
            compiled[m] = c
            var = "c_" + m.replace("-", "_")
            glb[var] = c
            stmts[m] = f"{var}(*args)"
        times = H.paired(stmts, glb, repeat=a.repeat)
        eager = H.us(times["eager"])
        res[name] = {"eager_us": eager, "modes": {}}
        for m in modes:
            comp = H.us(times[m])
            over = H.us(H.diff(times[m], times["eager"]))
            ratio = comp["median"] / eager["median"]
            res[name]["modes"][m] = {"compiled_us": comp, "overhead_us": over,
                                     "ratio_compiled_over_eager": ratio}
            rows.append([name, m, H.fmt(eager), H.fmt(comp), H.fmt(over), f"{ratio:.2f}x"])
        if a.profile:
            for m in modes:
                profiles[f"{name} ({m})"] = profile(compiled[m], args, a.profile)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    H.print_table(f"compiled vs eager per call, {a.numel} float32 elements on {a.device}, 1 thread "
                  f"(load average {load:.2f})",
                  ["function", "mode", "eager", "compiled", "compiled - eager (paired)",
                   "compiled / eager"], rows)
    for k, v in profiles.items():
        print(f"\n### cProfile, {a.profile} calls of compiled {k}\n")
        print(v)
    out = {"benchmark": "compile_overhead", "numel": a.numel, "device": a.device,
           "functions": res,
           "load_average_1min": load,
           "headline": [{"figure": f"compiled {n} on {a.numel} {a.device} elements, compiled / eager "
                                   f"per call (default mode)",
                         "tensorplay": round(r["modes"]["default"]["ratio_compiled_over_eager"], 2),
                         "torch": None, "numpy": None, "goal": "<= 1.0 (issue 32 item 1)"}
                        for n, r in res.items() if "default" in r["modes"]]}
    path = H.write_json(f"compile_overhead_{a.device.split(':')[0]}", out)
    print(f"written to {path}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(out, machine=H.machine_info()), f, indent=2, default=str)
    return out


if __name__ == "__main__":
    r = main()
    sys.exit(r if isinstance(r, int) else 0)
