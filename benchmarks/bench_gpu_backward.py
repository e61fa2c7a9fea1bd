"""Forward and forward+backward of Triton RMSNorm / LayerNorm: tensorplay vs torch's autograd.

Run on a machine with a CUDA GPU, the cuda and triton plugins installed (torch optional)::

    python benchmarks/bench_gpu_backward.py [--m 4096] [--n 4096] [--iters 20] [--rounds 7]

The same Triton kernels (``benchmarks/triton_norms.py``: forward, input-gradient and
weight-gradient kernels) run two ways on ``m x n`` float32 inputs:

* tensorplay: ``triton_op``s with ``register_autograd`` (the backward kernels in a second
  ``triton_op``), ``y.backward(dy)`` through tensorplay's engine into ``.grad``;
* torch (when ``import torch`` works): a ``torch.autograd.Function`` launching the same kernels with
  ``kernel[grid]``, ``y.backward(dy)`` through torch's engine.

Timed: ``iters`` back-to-back steps between two device synchronisations, per step; the median of
``rounds`` interleaved rounds. ``fwd``: the forward only (no grad recorded on either side, inputs
not requiring grad); ``fwd+bwd``: the forward with grad recorded, then ``backward`` with a
preallocated output gradient, ``.grad`` reset to ``None`` before each step (the first accumulation
is a move on both sides). Before timing, each path's outputs and gradients are checked against the
other path (or against NumPy, without torch); a mismatch exits 1. Exits 2 without a CUDA GPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import statistics
import sys
import time


def _parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, default=4096, help="rows (default 4096)")
    p.add_argument("--n", type=int, default=4096, help="row length (default 4096)")
    p.add_argument("--iters", type=int, default=20, help="steps per timed round")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds (median reported)")
    p.add_argument("--no-torch", action="store_true", help="skip the torch column")
    p.add_argument("--device", default="cuda",
                   help="cuda (default); cpu runs the same path through Triton's interpreter "
                        "(a self-check of this script at small sizes, e.g. --m 8 --n 64, no torch)")
    return p.parse_args()


def _kernels():
    path = pathlib.Path(__file__).resolve().parent / "triton_norms.py"
    spec = importlib.util.spec_from_file_location("tensorplay_bench_triton_norms", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> int:
    args = _parse()
    import tensorplay
    on_cpu = args.device == "cpu"
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import _harness
    code = _harness.triton_device_or_exit_code("bench_gpu_backward", args.device)
    if code is not None:
        return code
    import triton
    import numpy as np
    cp = None
    if not on_cpu:
        import cupy as cp

    K = _kernels()
    torch = None
    if not args.no_torch and not on_cpu:
        try:
            import torch
            if not torch.cuda.is_available():
                torch = None
        except ImportError:
            torch = None

    M, N, eps = args.m, args.n, 1e-5
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((M, N)).astype(np.float32)
    w_np = (rng.random(N) + 0.5).astype(np.float32)
    b_np = rng.random(N).astype(np.float32)
    dy_np = rng.standard_normal((M, N)).astype(np.float32)

    def tp(a, grad=False):
        t = tensorplay.tensor(a, device=args.device)
        return t.requires_grad_() if grad else t

    X, W, B, DY = tp(x_np), tp(w_np), tp(b_np), tp(dy_np)
    Xg, Wg, Bg = tp(x_np, True), tp(w_np, True), tp(b_np, True)

    def sync():
        if cp is not None:
            cp.cuda.Device().synchronize()
        if torch is not None:
            torch.cuda.synchronize()

    def tp_rms_fwd():
        return K.rms_norm(X, W, eps)[0]

    def tp_rms_step():
        Xg.grad = None
        Wg.grad = None
        K.rms_norm(Xg, Wg, eps)[0].backward(DY)

    def tp_ln_fwd():
        return K.layer_norm(X, W, B, eps)[0]

    def tp_ln_step():
        Xg.grad = Wg.grad = Bg.grad = None
        K.layer_norm(Xg, Wg, Bg, eps)[0].backward(DY)

    cases = [("RMSNorm", "fwd", "tensorplay", tp_rms_fwd),
             ("RMSNorm", "fwd+bwd", "tensorplay", tp_rms_step),
             ("LayerNorm", "fwd", "tensorplay", tp_ln_fwd),
             ("LayerNorm", "fwd+bwd", "tensorplay", tp_ln_step)]

    # -- correctness: tensorplay against NumPy (float64), then torch against tensorplay ----------
    def check(name, got, ref, tol):
        got = np.asarray(got, dtype=np.float64)
        err = float(np.max(np.abs(got - ref)) / (np.max(np.abs(ref)) + 1e-12))
        if not err <= tol:
            print(f"bench_gpu_backward: {name}: relative error {err:.3g} > {tol}", file=sys.stderr)
            return False
        return True

    x64, dy64 = x_np.astype(np.float64), dy_np.astype(np.float64)
    rstd = 1 / np.sqrt((x64 * x64).mean(-1) + eps)
    g = dy64 * w_np
    rms_ref = (x64 * rstd[:, None] * w_np,
               rstd[:, None] * g - (rstd ** 3 * (g * x64).sum(-1) / N)[:, None] * x64,
               (dy64 * x64 * rstd[:, None]).sum(0))
    mean = x64.mean(-1)
    rstd_ln = 1 / np.sqrt(((x64 - mean[:, None]) ** 2).mean(-1) + eps)
    xhat = (x64 - mean[:, None]) * rstd_ln[:, None]
    c1 = (xhat * g).sum(-1, keepdims=True) / N
    c2 = g.sum(-1, keepdims=True) / N
    ln_ref = (xhat * w_np + b_np, (g - (xhat * c1 + c2)) * rstd_ln[:, None],
              (dy64 * xhat).sum(0), dy64.sum(0))

    good = True
    tp_rms_step()
    y = tp_rms_fwd()
    good &= check("tensorplay RMSNorm y", y.cpu().numpy(), rms_ref[0], 1e-5)
    good &= check("tensorplay RMSNorm dx", Xg.grad.cpu().numpy(), rms_ref[1], 1e-4)
    good &= check("tensorplay RMSNorm dw", Wg.grad.cpu().numpy(), rms_ref[2], 1e-4)
    tp_ln_step()
    y = tp_ln_fwd()
    good &= check("tensorplay LayerNorm y", y.cpu().numpy(), ln_ref[0], 1e-5)
    good &= check("tensorplay LayerNorm dx", Xg.grad.cpu().numpy(), ln_ref[1], 1e-4)
    good &= check("tensorplay LayerNorm dw", Wg.grad.cpu().numpy(), ln_ref[2], 1e-4)
    good &= check("tensorplay LayerNorm db", Bg.grad.cpu().numpy(), ln_ref[3], 1e-4)

    if torch is not None:
        t_rms, t_ln = K.torch_functions()
        dev = torch.device("cuda")

        def tt(a, grad=False):
            return torch.tensor(a, device=dev, requires_grad=grad)

        tX, tW, tB, tDY = tt(x_np), tt(w_np), tt(b_np), tt(dy_np)
        tXg, tWg, tBg = tt(x_np, True), tt(w_np, True), tt(b_np, True)

        def th_rms_fwd():
            with torch.no_grad():
                return t_rms(tX, tW, eps)

        def th_rms_step():
            tXg.grad = tWg.grad = None
            t_rms(tXg, tWg, eps).backward(tDY)

        def th_ln_fwd():
            with torch.no_grad():
                return t_ln(tX, tW, tB, eps)

        def th_ln_step():
            tXg.grad = tWg.grad = tBg.grad = None
            t_ln(tXg, tWg, tBg, eps).backward(tDY)

        cases += [("RMSNorm", "fwd", "torch", th_rms_fwd),
                  ("RMSNorm", "fwd+bwd", "torch", th_rms_step),
                  ("LayerNorm", "fwd", "torch", th_ln_fwd),
                  ("LayerNorm", "fwd+bwd", "torch", th_ln_step)]
        th_rms_step()
        good &= check("torch RMSNorm y", th_rms_fwd().cpu().numpy(), rms_ref[0], 1e-5)
        good &= check("torch RMSNorm dx", tXg.grad.cpu().numpy(), rms_ref[1], 1e-4)
        good &= check("torch RMSNorm dw", tWg.grad.cpu().numpy(), rms_ref[2], 1e-4)
        th_ln_step()
        good &= check("torch LayerNorm y", th_ln_fwd().cpu().numpy(), ln_ref[0], 1e-5)
        good &= check("torch LayerNorm dx", tXg.grad.cpu().numpy(), ln_ref[1], 1e-4)
        good &= check("torch LayerNorm dw", tWg.grad.cpu().numpy(), ln_ref[2], 1e-4)
        good &= check("torch LayerNorm db", tBg.grad.cpu().numpy(), ln_ref[3], 1e-4)
    if not good:
        return 1

    # -- timing ------------------------------------------------------------------------------
    for _, _, _, fn in cases:                      # warm-up (compiled kernels, pools)
        for _ in range(3):
            fn()
    sync()
    times = {(a, b, c): [] for a, b, c, _ in cases}
    it = args.iters
    for _ in range(args.rounds):
        for a, b, c, fn in cases:
            sync()
            t0 = time.perf_counter()
            for _ in range(it):
                fn()
            sync()
            times[(a, b, c)].append((time.perf_counter() - t0) / it * 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}

    dev_name = (cp.cuda.runtime.getDeviceProperties(0)["name"].decode() if cp is not None
                else "cpu (Triton interpreter)")
    print(f"bench_gpu_backward: {M}x{N} float32, {dev_name}, triton {triton.__version__}, "
          f"cupy {cp.__version__ if cp is not None else '-'}, torch {torch.__version__ if torch is not None else '-'}; "
          f"ms per step, median of {args.rounds} rounds x {it} steps")
    print(f"{'op':10s} {'pass':8s} {'tensorplay':>11s} {'torch':>9s} {'tp/torch':>9s}")
    for op in ("RMSNorm", "LayerNorm"):
        for ps in ("fwd", "fwd+bwd", "bwd (diff)"):
            if ps == "bwd (diff)":
                t = med[(op, "fwd+bwd", "tensorplay")] - med[(op, "fwd", "tensorplay")]
                h = (med[(op, "fwd+bwd", "torch")] - med[(op, "fwd", "torch")]
                     if torch is not None else None)
            else:
                t = med[(op, ps, "tensorplay")]
                h = med.get((op, ps, "torch"))
            hs = f"{h:9.3f}" if h is not None else f"{'-':>9s}"
            rs = f"{t / h:9.2f}" if h else f"{'-':>9s}"
            print(f"{op:10s} {ps:8s} {t:11.3f} {hs} {rs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
