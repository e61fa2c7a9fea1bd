"""Eager reductions along a dim on cuda: time per call of ``tensorplay`` against ``torch`` and
``cupy`` (issue 32 items 2 and 5), float32 and bfloat16, 2^10 .. 2^24 elements (``--log2n``).

Calls: ``x.sum(1)``, ``x.sum(0)``, ``x.amax(1, keepdim=True)``, ``x.mean(-1)`` (``--ops``), on
``x`` of shape ``(n / 1024, 1024)`` ("rows") and ``(sqrt n, sqrt n)`` ("square")
(``--shapes``); plus, at 4096x4096 float32, ``x.sum(1).mean()`` and
``x.exp().sum(1).log().mean()`` (``--no-chains`` leaves them out); plus full reductions of 1-D
integer and bool arrays of ``--int-log2n`` (2^14, 2^20) elements, as Liger-Kernel's
cross_entropy checks its targets: int64 ``x.sum()`` and ``x.amax()`` (values in [0, 32000)),
bool ``x.sum()`` (``--no-ints`` leaves them out). One figure per call, engine,
dtype and shape, µs per call, the median of ``--rounds`` interleaved rounds (each round times
every engine once):

* **pipelined**: wall time of ``--iters`` calls back to back, then one device synchronisation,
  divided by ``--iters``: the larger of the host's time per call and the GPU's.

Before timing, every engine runs each call ``reduce.WARMUP_CALLS + 2`` times (tensorplay's
generated kernels compile then) and its result is checked against tensorplay's. The ``path``
column says what tensorplay's call ran: ``direct`` (the generated kernel, one driver launch per
pass), ``ref`` (the reference kernel: CuPy's reduction). Ratios are tensorplay / torch from the
same run. CuPy has no bfloat16 reductions of its own (its column is float32 only).
``TENSORPLAY_CUDA_EAGER_REDUCE=0`` switches tensorplay's generated reductions off: run once
with it for the before figures (the JSON name then ends in ``_off``).

Usage (GPU machine): ``python benchmarks/bench_cuda_reduce.py [--log2n 10,16,20,24]
[--dtypes float32,bfloat16] [--shapes rows,square] [--int-log2n 14,20] [--rounds 7] [--iters 200]
[--no-torch] [--no-chains] [--no-ints]``.
Exits 2 when cuda is unavailable.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H  # noqa: E402
import tensorplay as tp  # noqa: E402
from bench_compile_cuda import pipelined_us  # noqa: E402

CALLS = {
    "sum(1)": ("sum", (1,), False, lambda x: x.sum(1)),
    "sum(0)": ("sum", (0,), False, lambda x: x.sum(0)),
    "amax(1,keepdim)": ("amax", (1,), True, lambda x: x.amax(1, keepdim=True)),
    "mean(-1)": ("mean", (-1,), False, lambda x: x.mean(-1)),
}
CHAINS = {
    "sum(1).mean()": lambda x: x.sum(1).mean(),
    "exp.sum(1).log.mean": lambda x: x.exp().sum(1).log().mean(),
}
_SHORT = {"sum(1)": "sum1", "sum(0)": "sum0", "amax(1,keepdim)": "amax1", "mean(-1)": "mean"}
# full reductions of 1-D integer / bool arrays: name -> (dtype, op, call; CuPy's call)
INT_CALLS = {
    "int64 sum()": ("int64", "sum", lambda x: x.sum(), lambda x: x.sum()),
    "int64 amax()": ("int64", "amax", lambda x: x.amax(), lambda x: x.max()),
    "bool sum()": ("bool", "sum", lambda x: x.sum(), lambda x: x.sum()),
}


def _cupy_call(name, cupy):
    return {"sum(1)": lambda x: x.sum(1), "sum(0)": lambda x: x.sum(0),
            "amax(1,keepdim)": lambda x: x.max(1, keepdims=True),
            "mean(-1)": lambda x: x.mean(-1),
            "sum(1).mean()": lambda x: x.sum(1).mean(),
            "exp.sum(1).log.mean": lambda x: cupy.log(cupy.exp(x).sum(1)).mean()}[name]


def _path(op, x, dims, keepdim):
    """What tensorplay's call of ``op`` on ``x`` runs now: "direct" or "ref"."""
    k = tp.backends.get("cuda").kernels()[op]
    plans = getattr(k, "plans", None)
    if plans is None:
        return "ref"
    p = plans.get((tuple(x.shape), x._data.dtype, tuple(dims) if dims else None, keepdim,
                   x.device.index or 0))
    if p is None:
        return "ref"
    return "direct" if callable(p.slots[0 if x._data.data.ptr & 15 else 1]) else "ref"


def _engines(x, dtype, name, cupy, torch, fn):
    eng = {"tensorplay": (fn, x)}
    if torch is not None:
        tx = torch.from_dlpack(x._data)
        eng["torch"] = (fn, tx)
    if dtype == "float32":
        eng["cupy"] = (_cupy_call(name, cupy), x._data)
    return eng


def _int_engines(x, fn, cupy_fn, cupy, torch):
    eng = {"tensorplay": (fn, x)}
    if torch is not None:
        a = x._data
        if a.dtype == cupy.bool_:    # (DLPack's bool is not taken by every CuPy/torch pair)
            tx = torch.from_dlpack(a.view(cupy.uint8)).bool()
        else:
            tx = torch.from_dlpack(a)
        eng["torch"] = (fn, tx)
    eng["cupy"] = (cupy_fn, x._data)
    return eng


def _time(name, engines, cupy, sync, args, warm):
    ref = engines["tensorplay"][0](engines["tensorplay"][1])
    ref = cupy.asarray(ref._data).astype(cupy.float64)
    for ename, (f, a) in engines.items():
        for _ in range(warm):
            r = f(a)
        if hasattr(r, "_data"):
            r = r._data
        elif not isinstance(r, cupy.ndarray):
            r = cupy.from_dlpack(r)
        tol = 2e-2 if "bfloat16" in str(r.dtype) else 1e-3
        if r.shape != ref.shape or not bool(cupy.allclose(r.astype(cupy.float64), ref, rtol=tol,
                                                           atol=tol)):
            print(f"WARNING {name}: {ename} disagrees with tensorplay", file=sys.stderr)
    times = {e: [] for e in engines}
    for _ in range(args.rounds):
        for e, (f, a) in engines.items():
            times[e].append(pipelined_us(lambda f=f, a=a: f(a), sync, args.iters))
    return {e: statistics.median(v) for e, v in times.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", default="10,16,20,24")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--shapes", default="rows,square")
    ap.add_argument("--ops", default=",".join(_SHORT.values()),
                    help="of sum1,sum0,amax1,mean")
    H.add_cuda_timing_args(ap)
    ap.add_argument("--no-chains", action="store_true")
    ap.add_argument("--int-log2n", default="14,20")
    ap.add_argument("--no-ints", action="store_true")
    args = ap.parse_args(argv)
    cu = H.cuda_setup("bench_cuda_reduce", no_torch=args.no_torch)
    if cu is None:
        return 2
    cupy, torch, sync = cu.cupy, cu.torch, cu.sync
    from tensorplay_cuda import reduce
    on = reduce.enabled()
    print(f"{cu.versions}; "
          f"generated reductions {'on' if on else 'OFF (TENSORPLAY_CUDA_EAGER_REDUCE=0)'}")
    warm = reduce.WARMUP_CALLS + 2
    wanted = set(args.ops.split(","))
    calls = {k: v for k, v in CALLS.items() if _SHORT[k] in wanted}
    data = {"machine": H.machine_info(), "reduce_on": on, "cases": {}}
    rows = []
    for dtype in args.dtypes.split(","):
        d = getattr(tp, dtype)
        for lg in [int(s) for s in args.log2n.split(",")]:
            n = 1 << lg
            for shape_kind in args.shapes.split(","):
                if shape_kind == "rows":
                    shape = (max(n // 1024, 1), min(n, 1024))
                else:
                    s = int(math.isqrt(n))
                    shape = (s, n // s)
                tp.manual_seed(0)
                x = tp.randn(*shape, device="cuda").to(d)
                for name, (op, dims, keepdim, fn) in calls.items():
                    t = _time(name, _engines(x, dtype, name, cupy, torch, fn), cupy, sync, args,
                              warm)
                    path = _path(op, x, dims, keepdim)
                    key = f"{dtype} {shape[0]}x{shape[1]} {name}"
                    data["cases"][key] = dict(t, path=path)
                    ratio = t["tensorplay"] / t["torch"] if "torch" in t else float("nan")
                    rows.append([dtype, f"2^{lg}", f"{shape[0]}x{shape[1]}", name, path,
                                 f"{t['tensorplay']:.2f}",
                                 f"{t['torch']:.2f}" if "torch" in t else "-",
                                 f"{t['cupy']:.2f}" if "cupy" in t else "-", f"{ratio:.2f}"])
            print(f"{dtype} 2^{lg} done", flush=True)
    if not args.no_chains:
        tp.manual_seed(0)
        x = tp.randn(4096, 4096, device="cuda")
        for name, fn in CHAINS.items():
            t = _time(name, _engines(x, "float32", name, cupy, torch, fn), cupy, sync, args, warm)
            data["cases"][f"float32 4096x4096 {name}"] = t
            ratio = t["tensorplay"] / t["torch"] if "torch" in t else float("nan")
            rows.append(["float32", "2^24", "4096x4096", name, "-", f"{t['tensorplay']:.2f}",
                         f"{t['torch']:.2f}" if "torch" in t else "-",
                         f"{t['cupy']:.2f}" if "cupy" in t else "-", f"{ratio:.2f}"])
    if not args.no_ints:
        import numpy
        g = numpy.random.default_rng(0)
        for lg in [int(v) for v in args.int_log2n.split(",")]:
            n = 1 << lg
            for name, (dtype, op, fn, cupy_fn) in INT_CALLS.items():
                a = g.random(n) < 0.9 if dtype == "bool" else g.integers(0, 32000, n)
                x = tp.from_numpy(a).to("cuda")
                t = _time(name, _int_engines(x, fn, cupy_fn, cupy, torch), cupy, sync, args,
                          warm)
                path = _path(op, x, None, False)
                data["cases"][f"{dtype} {n} {name}"] = dict(t, path=path)
                ratio = t["tensorplay"] / t["torch"] if "torch" in t else float("nan")
                rows.append([dtype, f"2^{lg}", f"{n}", name, path, f"{t['tensorplay']:.2f}",
                             f"{t['torch']:.2f}" if "torch" in t else "-", f"{t['cupy']:.2f}",
                             f"{ratio:.2f}"])
    H.print_table("eager reduction on cuda (µs per call, pipelined; median of rounds)",
                  ["dtype", "elements", "shape", "call", "path", "tensorplay", "torch", "cupy",
                   "tp / torch"], rows)
    if reduce._FAILED:
        print(f"WARNING: a generated reduction failed: {reduce._FAILED[0]!r}", file=sys.stderr)
    print("wrote", H.write_json("cuda_reduce" + ("" if on else "_off"), data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
