"""The host code around real kernel libraries' launches, on cuda: tensorplay against torch
(issue 32 item 4).

A ``triton_op`` from a public kernel library spends most of its host time outside its kernel:
Liger-Kernel's rope transposes and copies its inputs (``q.transpose(1, 2).contiguous()``, a
``clone`` where the kernel writes into them), its cross entropy builds an integer mask of the
targets (``target != ignore_index``), counts it (``.sum().item()``), checks the targets' range
(``bool((target * mask).max() < V)``) and names every kernel argument by keyword. Each of those
here, on the corpus's own sizes (``tests/corpus``, scale 16), µs per call, pipelined (``--iters``
calls then one synchronisation: the larger of host and GPU time per call), the median of
``--rounds`` interleaved rounds; ratio = tensorplay / torch from the same run.

Usage (GPU machine): ``python benchmarks/bench_cuda_host_code.py [--rounds 7] [--iters 300]``.
Writes ``benchmarks/results/cuda_host_code.json``. Exits 2 when cuda is unavailable.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H  # noqa: E402
import numpy as np  # noqa: E402
import tensorplay as tp  # noqa: E402
from bench_compile_cuda import pipelined_us  # noqa: E402


def cases(fw, triton, kernel, wrap):
    """name -> zero-argument callable on framework ``fw`` (tensorplay or torch)."""
    rng = np.random.default_rng(0)
    q = fw.tensor(rng.standard_normal((2, 64, 48, 128)).astype(np.float32), device="cuda")
    x = fw.tensor(rng.standard_normal((96, 800)).astype(np.float32), device="cuda")
    t = fw.tensor(rng.integers(0, 800, 96), device="cuda")
    m = t != -100
    out = fw.empty_like(x)
    k = wrap(kernel)
    n = x.numel()
    return {
        "q.transpose(1, 2).contiguous()  (2x64x48x128)": lambda: q.transpose(1, 2).contiguous(),
        "q.clone()": lambda: q.clone(),
        "x.clone()  (96x800)": lambda: x.clone(),
        "target != -100  (int64)": lambda: t != -100,
        "mask.sum().item()": lambda: m.sum().item(),
        "target * mask  (int64 * bool)": lambda: t * m,
        "target + target  (int64)": lambda: t + t,
        "x > 0.0  (float32 96x800)": lambda: x > 0.0,
        "x.to(bfloat16)": lambda: x.to(fw.bfloat16),
        "mask.float()": lambda: m.float(),
        "x < out  (float32 96x800)": lambda: x < out,
        "bool((target * mask).max() < 800)": lambda: bool((t * m).max() < 800),
        "kernel[grid](x, out, n, BLOCK=1024)": lambda: k[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024),
        "kernel[grid](x_ptr=x, out_ptr=out, n=n, BLOCK=1024)":
            lambda: k[(triton.cdiv(n, 1024),)](x_ptr=x, out_ptr=out, n=n, BLOCK=1024),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--iters", type=int, default=300)
    args = p.parse_args(argv)
    code = H.triton_device_or_exit_code("bench_cuda_host_code", "cuda")
    if code is not None:
        return code
    import cupy
    import triton
    import triton.language as tl

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        msk = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=msk) * 2.0, mask=msk)

    torch, why = H.try_import_torch()
    if torch is not None and not torch.cuda.is_available():
        torch, why = None, "torch has no cuda"
    engines = {"tensorplay": cases(tp, triton, scale_kernel, tp.library.wrap_triton)}
    if torch is not None:
        engines["torch"] = cases(torch, triton, scale_kernel, lambda k: k)
    else:
        print(f"bench_cuda_host_code: no torch column ({why})", file=sys.stderr)

    def sync():
        cupy.cuda.Device().synchronize()
        if torch is not None:
            torch.cuda.synchronize()

    for table in engines.values():          # warm-up: compiles, caches, the dense case's keys
        for f in table.values():
            for _ in range(20):
                f()
    times = {e: {c: [] for c in table} for e, table in engines.items()}
    for _ in range(args.rounds):
        for c in engines["tensorplay"]:
            for e, table in engines.items():
                times[e][c].append(pipelined_us(table[c], sync, args.iters))
    rows, out = [], []
    for c in engines["tensorplay"]:
        a = statistics.median(times["tensorplay"][c])
        b = statistics.median(times["torch"][c]) if torch is not None else None
        rows.append([c, f"{a:.2f}", "-" if b is None else f"{b:.2f}",
                     "-" if b is None else f"{a / b:.2f}"])
        out.append({"case": c, "tensorplay_us": a, "torch_us": b})
    H.print_table(f"host code around kernel launches, cuda, µs per call (median of {args.rounds} "
                  f"rounds x {args.iters})", ["call", "tensorplay", "torch", "ratio"], rows)
    print(f"results: {H.write_json('cuda_host_code', {'rows': out, **H.machine_info()})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
