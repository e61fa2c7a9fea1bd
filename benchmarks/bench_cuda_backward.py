"""Backward of built-in-op graphs on cuda: tensorplay's engine against torch's and hand-written CuPy.

Run on a machine with a CUDA GPU (the cuda plugin installed; tensorplay-triton and torch
optional)::

    python benchmarks/bench_cuda_backward.py [--n 4096] [--iters 20] [--rounds 9]
    python benchmarks/bench_cuda_backward.py --device cpu --n 512   # the same graphs on NumPy

Graphs, on ``n x n`` float32 ``x`` and ``w`` (both requiring grad where they appear):

* ``mul_sum``: ``(x * w).sum()`` -- elementwise; the gradient reaching the mul is a broadcast of
  one element (the sum's backward), so each input's gradient should cost one read and one write;
* ``sum_mean``: ``x.sum(1).mean()`` -- reductions; ``x.grad`` is a row broadcast, materialised
  once when it is accumulated;
* ``lse_mean``: ``x.exp().sum(1).log().mean()`` -- a softmax-like reduction (a log-sum-exp);
* ``mm_sum``: ``(x @ w).sum()`` -- matmul.

Columns: ``tensorplay`` (``loss.backward()``), ``torch`` (the same graph through torch's autograd,
when ``import torch`` works and, on cuda, sees a GPU), ``hand`` (the same forward and gradients
written by hand on the arrays: CuPy on cuda, NumPy on cpu; the matmul's by the textbook formula
``ones @ w.T`` and ``x.T @ ones``, as torch computes it). Passes: ``fwd`` (the forward with the
graph recorded, then dropped), ``fwd+bwd`` (``.grad`` reset to None, forward, ``backward()``: the
first accumulation, a move on every side), and ``bwd`` (their difference): ``iters`` steps back to
back between two device synchronisations (pipelined, as a training loop runs), per step; and
``bwd_alone``: the backward by itself, timed from a synchronisation after its forward to one
after it (host and device time of the backward, nothing overlapped), averaged over ``iters``.
Figures in ms, the median of ``rounds`` interleaved rounds. Before timing, every column's gradients are
checked against NumPy in float64 (a mismatch exits 1). Exits 2 on ``--device cuda`` without a
usable GPU. Writes ``benchmarks/results/cuda_backward[_cpu].json`` (or ``--json PATH``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H  # noqa: E402

GRAPHS = ("mul_sum", "sum_mean", "lse_mean", "mm_sum")


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--n", type=int, default=None, help="side (default 4096 on cuda, 512 on cpu)")
    p.add_argument("--iters", type=int, default=20, help="steps per timed round (default 20)")
    p.add_argument("--rounds", type=int, default=9, help="interleaved rounds (median reported)")
    p.add_argument("--graphs", default=",".join(GRAPHS), help=f"subset of {','.join(GRAPHS)}")
    p.add_argument("--no-torch", action="store_true", help="skip the torch column")
    p.add_argument("--json", default=None,
                   help="where the figures go (default benchmarks/results/cuda_backward[_cpu].json)")
    return p.parse_args(argv)


def _reference(name, x, w):
    """Gradients of graph ``name`` in float64 NumPy: ``(dx, dw or None)``."""
    import numpy as np
    x, w = x.astype(np.float64), w.astype(np.float64)
    n = x.shape[0]
    if name == "mul_sum":
        return w, x
    if name == "sum_mean":
        return np.full_like(x, 1.0 / n), None
    if name == "lse_mean":
        e = np.exp(x)
        return e / e.sum(1, keepdims=True) / n, None
    ones = np.ones((n, n))
    return ones @ w.T, x.T @ ones


def _tp_graph(tp, name):
    if name == "mul_sum":
        return lambda x, w: (x * w).sum()
    if name == "sum_mean":
        return lambda x, w: x.sum(1).mean()
    if name == "lse_mean":
        return lambda x, w: x.exp().sum(1).log().mean()
    return lambda x, w: (x @ w).sum()


def _hand(xp, name, x, w):
    """``(fwd(), bwd(state))``: the graph's forward on arrays ``x``/``w`` (returning what its
    backward needs), and the gradients from that (dense arrays, as ``.grad`` holds them; None
    where the graph has no ``w``)."""
    n = x.shape[0]
    f32 = xp.float32

    if name == "mul_sum":
        def fwd():
            return (x * w).sum()

        def bwd(_):
            g = xp.ones((), f32)
            return w * g, x * g
    elif name == "sum_mean":
        def fwd():
            return x.sum(1).mean()

        def bwd(_):
            g = xp.ones((), f32) / f32(n)
            return xp.ascontiguousarray(xp.broadcast_to(g, (n, n))), None
    elif name == "lse_mean":
        def fwd():
            e = xp.exp(x)
            s = e.sum(1)
            xp.log(s).mean()
            return e, s

        def bwd(st):
            e, s = st
            gs = (xp.ones((), f32) / f32(n)) / s
            return e * gs[:, None], None
    else:
        def fwd():
            return (x @ w).sum()

        def bwd(_):
            ones = xp.ones((n, n), f32)
            return ones @ w.T, x.T @ ones
    return fwd, bwd


def _err(got, ref):
    import numpy as np
    got = np.asarray(got, dtype=np.float64)
    return float(np.max(np.abs(got - ref)) / (np.max(np.abs(ref)) + 1e-30))


def main(argv=None) -> int:
    args = _parse(argv)
    import numpy as np
    import tensorplay as tp
    dev = args.device
    on_cpu = dev == "cpu"
    if not on_cpu:
        ok, why = tp.plugins.device_status("cuda")
        if not ok:
            print(f"bench_cuda_backward: no CUDA GPU ({why}); nothing to measure", file=sys.stderr)
            return 2
    n = args.n or (512 if on_cpu else 4096)
    graphs = [g for g in args.graphs.split(",") if g]
    bad = [g for g in graphs if g not in GRAPHS]
    if bad:
        print(f"bench_cuda_backward: unknown graph(s) {bad}; known: {GRAPHS}", file=sys.stderr)
        return 2
    if on_cpu:
        xp = np

        def sync_xp():
            pass
    else:
        import cupy as xp

        def sync_xp():
            xp.cuda.Device().synchronize()

    torch = None
    if not args.no_torch:
        torch, _why = H.try_import_torch()
        if torch is not None and not on_cpu and not torch.cuda.is_available():
            torch = None

    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((n, n)).astype(np.float32)
    w_np = rng.standard_normal((n, n)).astype(np.float32)

    X = tp.tensor(x_np, device=dev).requires_grad_()
    W = tp.tensor(w_np, device=dev).requires_grad_()
    Xa, Wa = xp.asarray(x_np), xp.asarray(w_np)
    if torch is not None:
        tdev = torch.device("cpu" if on_cpu else "cuda")
        TX = torch.tensor(x_np, device=tdev, requires_grad=True)
        TW = torch.tensor(w_np, device=tdev, requires_grad=True)

    def sync():
        if not on_cpu:
            sync_xp()
            if torch is not None:
                torch.cuda.synchronize()

    cases = []          # (graph, pass, column, fn)
    alone = []          # (graph, column, forward, backward(forward's result)): "bwd alone"
    good = True

    def _column(f, a, b):
        """A column's callables (tensorplay's and torch's alike) for graph ``f`` of leaves
        ``a``, ``b``: the forward, a step (forward + backward), and for "bwd alone" a forward
        after the ``.grad`` reset -- outside the timed backward: the old gradients are freed
        there, as the hand-written column's are dropped after its timed part."""
        def fwd():
            f(a, b)

        def step():
            a.grad = b.grad = None
            f(a, b).backward()

        def fresh():
            a.grad = b.grad = None
            return f(a, b)
        return fwd, step, fresh

    def _bwd(loss):
        loss.backward()
    for name in graphs:
        f = _tp_graph(tp, name)
        ref = _reference(name, x_np, w_np)
        tp_fwd, tp_step, tp_fresh = _column(f, X, W)
        cases += [(name, "fwd", "tensorplay", tp_fwd), (name, "fwd+bwd", "tensorplay", tp_step)]
        tp_step()
        got = (X.grad, W.grad)
        for i, r in enumerate(ref):
            if r is None:
                continue
            e = _err(got[i].cpu().numpy(), r)
            if not e <= 1e-4:
                print(f"bench_cuda_backward: tensorplay {name} grad {i}: relative error {e:.3g}",
                      file=sys.stderr)
                good = False
        hf, hb = _hand(xp, name, Xa, Wa)

        def hs(hf=hf, hb=hb):
            return hb(hf())

        cases += [(name, "fwd", "hand", hf), (name, "fwd+bwd", "hand", hs)]
        alone += [(name, "tensorplay", tp_fresh, _bwd), (name, "hand", hf, hb)]
        for i, (g, r) in enumerate(zip(hs(), ref)):
            if r is not None and not _err(g if on_cpu else xp.asnumpy(g), r) <= 1e-4:
                print(f"bench_cuda_backward: hand {name} grad {i} differs", file=sys.stderr)
                good = False
        if torch is not None:
            th_fwd, th_step, th_fresh = _column(_tp_graph(torch, name), TX, TW)
            cases += [(name, "fwd", "torch", th_fwd), (name, "fwd+bwd", "torch", th_step)]
            alone.append((name, "torch", th_fresh, _bwd))
            th_step()
            for i, (t, r) in enumerate(zip((TX, TW), ref)):
                if r is not None and not _err(t.grad.detach().cpu().numpy(), r) <= 1e-4:
                    print(f"bench_cuda_backward: torch {name} grad {i} differs", file=sys.stderr)
                    good = False
    if not good:
        return 1

    # TENSORPLAY_BENCH_CPU_TIME=1 (see _harness): the process's CPU time, for a busy shared cpu
    clock = time.process_time if H.CPU_TIME else time.perf_counter
    for *_, fn in cases:                   # warm-up: compiled kernels, memory pools
        for _ in range(3):
            fn()
    sync()
    times = {c[:3]: [] for c in cases}
    for _ in range(args.rounds):
        for *key, fn in cases:
            sync()
            t0 = clock()
            for _ in range(args.iters):
                fn()
            sync()
            times[tuple(key)].append((clock() - t0) / args.iters * 1e3)
    # "bwd alone": the backward by itself, the forward run (and synchronised) before it
    for name, col, _, _ in alone:
        times[(name, "bwd alone", col)] = []
    for _ in range(args.rounds):
        for name, col, fw, bw in alone:
            tot = 0.0
            for _ in range(args.iters):
                st = fw()
                sync()
                t0 = clock()
                r = bw(st)
                sync()
                tot += clock() - t0
                st = r = None
            times[(name, "bwd alone", col)].append(tot / args.iters * 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    cols = ["tensorplay", "torch", "hand"]
    if not on_cpu:
        where = xp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    else:
        where = H.machine_info()["cpu"]
    load = H.machine_info()["loadavg_1_5_15min"]
    print(f"bench_cuda_backward: {n}x{n} float32 on {dev} ({where}), load {load}, "
          f"{'process CPU' if H.CPU_TIME else 'wall'} clock; ms per step, "
          f"median of {args.rounds} rounds x {args.iters} pipelined steps; "
          f"torch {torch.__version__ if torch is not None else '-'}")
    print(f"{'graph':9s} {'pass':9s} " + " ".join(f"{c:>10s}" for c in cols) +
          f" {'tp/torch':>9s} {'tp/hand':>8s}")
    rows = []
    for name in graphs:
        for ps in ("fwd", "fwd+bwd", "bwd", "bwd alone"):
            vals = {}
            for c in cols:
                if ps == "bwd":
                    a, b = med.get((name, "fwd+bwd", c)), med.get((name, "fwd", c))
                    vals[c] = None if a is None else a - b
                else:
                    vals[c] = med.get((name, ps, c))
            t, h, m = vals["tensorplay"], vals["torch"], vals["hand"]
            cells = " ".join(f"{v:10.3f}" if v is not None else f"{'-':>10s}" for v in vals.values())
            rt = f"{t / h:9.2f}" if h else f"{'-':>9s}"
            rh = f"{t / m:8.2f}" if m else f"{'-':>8s}"
            print(f"{name:9s} {ps.replace(' ', '_'):9s} {cells} {rt} {rh}")
            rows.append({"graph": name, "pass": ps, **{c: vals[c] for c in cols}})
    data = {"n": n, "device": dev, "iters": args.iters, "rounds": args.rounds, "rows": rows,
            "samples_ms": {"/".join(k): v for k, v in times.items()}}
    if args.json is None:
        H.write_json("cuda_backward" + ("_cpu" if on_cpu else ""), data)
    else:
        import json
        with open(args.json, "w") as f:
            json.dump({**data, "machine": H.machine_info()}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
