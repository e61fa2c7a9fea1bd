"""Compiled calls on cuda across sizes: ``tensorplay.compile`` (default and
``mode="reduce-overhead"``, CUDA graphs) against ``torch.compile`` (default and
``"reduce-overhead"``) and both eagers, on the 8-op chain of ``bench_compile.py``, float32, at
2^10, 2^16, 2^20, 2^22 and 2^24 elements (``--log2n``).

Two figures per engine and size, µs per call, median of ``--rounds`` interleaved rounds (each
round times every engine once, so all see the same machine state):

* **pipelined**: wall time of ``--iters`` calls back to back, then one device synchronisation,
  divided by ``--iters``. Where the GPU work is short this is the host's time per call, which is
  what a training or inference loop feels;
* **synced**: one call followed by a device synchronisation, the median over the round's calls:
  host time + launch latency + GPU time of one call, nothing overlapped.

Ratios are tensorplay / torch within the same run and the same mode (< 1: tensorplay faster).
``tp.compile ro`` runs a signature without a graph where the recording holds no more launches
than the copies a replay adds (the 8-op chain is one fused kernel: it runs as the default mode,
the reason printed per size); ``tp.compile ro graph`` is the same function with its graph
recorded regardless (the rule off while recording), the cost the rule avoids.
Before timing, every engine's result is compared with tensorplay eager (allclose).

``--fn softmax_rows`` times a row softmax instead (rows of 1024: two reductions and three
elementwise groups), ``--fn layer_norm_rows`` a layer norm (two means): eager runs several
kernels per call; compile fuses each into one row kernel where the backend fuses row reductions
(cuda with tensorplay-triton; ``TENSORPLAY_CUDA_FUSE_ROWS=0`` gives the unfused graph).

Usage (GPU machine): ``python benchmarks/bench_compile_cuda.py [--fn chain|softmax_rows|layer_norm_rows] [--log2n 10,16,20,22,24]
[--rounds 7] [--iters 200] [--no-torch]``. Exits 2 when cuda is unavailable. torch is optional
(the reference); ``torch.compile`` compiles once per size and mode (a few seconds each).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H  # noqa: E402
import tensorplay as tp  # noqa: E402
from bench_compile import chain  # noqa: E402  (the 8-op chain, one definition)


def pipelined_us(fn, sync, iters):
    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - t0) / iters * 1e6


def synced_us(fn, sync, iters):
    out = []
    pc = time.perf_counter
    for _ in range(max(iters // 4, 10)):
        t0 = pc()
        fn()
        sync()
        out.append(pc() - t0)
    return statistics.median(out) * 1e6


def softmax_rows(x, y):
    """Several kernels, not one fused chain: a row softmax of x * y over rows of 1024 (two
    reductions, three elementwise groups): what reduce-overhead's one graph launch is for."""
    a = x * y
    a = a - a.amax(1, keepdim=True)
    e = a.exp()
    return e / e.sum(1, keepdim=True)


def layer_norm_rows(x, y):
    """A layer norm of x over rows of 1024 scaled by y (two mean reductions, elementwise steps
    around them): one kernel when compile fuses row reductions."""
    m = x.mean(1, keepdim=True)
    d = x - m
    v = (d * d).mean(1, keepdim=True)
    return d * (v + 1e-5).rsqrt() * y


def _forced_graph(fn, x, y):
    """``fn`` compiled with ``mode="reduce-overhead"`` and its signature recorded even where the
    graph saves no launch (``_replay.SKIP_FEW_LAUNCHES`` off for its first two calls: the rule
    is applied when recording), so one run shows the graph's cost beside the rule's choice;
    None on a tree without the rule."""
    from tensorplay import _replay
    if not hasattr(_replay, "SKIP_FEW_LAUNCHES"):
        return None
    c = tp.compile(fn, mode="reduce-overhead")
    _replay.SKIP_FEW_LAUNCHES = False
    try:
        c(x, y), c(x, y)              # the normal run, then the recording
    finally:
        _replay.SKIP_FEW_LAUNCHES = True
    return c


def one_size(lg, cupy, torch, sync, args):
    """{engine: {"pipelined_us", "synced_us"}} at 2^lg elements, and the warm-up seconds;
    ``sync`` waits for CuPy's and (with ``torch``) torch's queued work."""
    n = 1 << lg
    tp.manual_seed(0)
    x, y = tp.randn(n, device="cuda"), tp.randn(n, device="cuda")
    if args.fn in ("softmax_rows", "layer_norm_rows"):
        x, y = x.view(-1, min(n, 1024)), y.view(-1, min(n, 1024))
    chain = FUNCTIONS[args.fn]
    ref = cupy.asarray(chain(x, y)._data)
    engines = {"tp eager": lambda: chain(x, y)}
    c_def = tp.compile(chain)
    engines["tp.compile"] = lambda: c_def(x, y)
    try:
        c_ro = tp.compile(chain, mode="reduce-overhead")
    except TypeError as e:           # a tree without the mode
        print(f"tp.compile reduce-overhead: {e}")
    else:
        engines["tp.compile ro"] = lambda: c_ro(x, y)
        forced = _forced_graph(chain, x, y)
        if forced is not None:
            engines["tp.compile ro graph"] = lambda: forced(x, y)
    if torch is not None:
        tx, ty = torch.from_dlpack(x._data), torch.from_dlpack(y._data)
        t_def = torch.compile(chain, dynamic=False)
        t_ro = torch.compile(chain, dynamic=False, mode="reduce-overhead")
        engines["torch eager"] = lambda: chain(tx, ty)
        engines["torch.compile"] = lambda: t_def(tx, ty)
        engines["torch.compile ro"] = lambda: t_ro(tx, ty)
    t0 = time.perf_counter()
    for name, fn in engines.items():
        for _ in range(3):
            out = fn()
        sync()
        o = out._data if hasattr(out, "_data") else cupy.from_dlpack(out)
        if not bool(cupy.allclose(o, ref, rtol=1e-4, atol=1e-4)):
            print(f"WARNING 2^{lg}: {name} disagrees with tensorplay eager", file=sys.stderr)
    warm_s = time.perf_counter() - t0
    if "tp.compile ro" in engines:
        why = list(c_ro.graph_skips.values())
        print(f"2^{lg}: tp.compile ro " + (f"runs without a graph: {why[0]}" if why
                                          else "replays a graph"), flush=True)
    pip = {k: [] for k in engines}
    syn = {k: [] for k in engines}
    for _ in range(args.rounds):
        for name, fn in engines.items():
            pip[name].append(pipelined_us(fn, sync, args.iters))
            syn[name].append(synced_us(fn, sync, args.iters))
    return {k: {"pipelined_us": statistics.median(pip[k]),
                "synced_us": statistics.median(syn[k])} for k in engines}, warm_s


FUNCTIONS = {"chain": chain, "softmax_rows": softmax_rows, "layer_norm_rows": layer_norm_rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", default="10,16,20,22,24")
    ap.add_argument("--fn", default="chain", choices=sorted(FUNCTIONS),
                    help="chain: the 8-op chain (one fused kernel); softmax_rows / "
                         "layer_norm_rows: a row softmax / layer norm over rows of 1024")
    H.add_cuda_timing_args(ap)
    args = ap.parse_args(argv)
    cu = H.cuda_setup("bench_compile_cuda", no_torch=args.no_torch)
    if cu is None:
        return 2
    cupy, torch = cu.cupy, cu.torch
    print(cu.versions)
    data = {"machine": H.machine_info(), "sizes": {}}
    rows = []
    if torch is not None:
        # one compiled function per size and mode here: lift dynamo's recompile limit (8)
        cfg = torch._dynamo.config
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(cfg, name):
                setattr(cfg, name, 64)
    for lg in [int(s) for s in args.log2n.split(",")]:
        res, warm_s = one_size(lg, cupy, torch, cu.sync, args)
        data["sizes"][lg] = res
        for k, v in res.items():
            ratio = ""
            anchor = {"tp eager": "torch eager", "tp.compile": "torch.compile",
                      "tp.compile ro": "torch.compile ro",
                      "tp.compile ro graph": "torch.compile ro"}.get(k)
            if anchor in res:
                ratio = (f"{v['pipelined_us'] / res[anchor]['pipelined_us']:.2f} / "
                         f"{v['synced_us'] / res[anchor]['synced_us']:.2f}")
            rows.append([f"2^{lg}", k, f"{v['pipelined_us']:.1f}", f"{v['synced_us']:.1f}", ratio])
        print(f"2^{lg}: warm-up and compiles {warm_s:.1f} s", flush=True)
    H.print_table(f"{args.fn} per call on cuda (µs; median of rounds)",
                  ["elements", "engine", "pipelined", "synced", "vs torch (pip / sync)"], rows)
    print("wrote", H.write_json(f"compile_cuda_{args.fn}", data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
