"""Overhead of the tensorplay-torch bridge: a bridged op vs the same body registered directly with
``torch.library.custom_op``, 1 element.

The body is the same array computation on both sides (``x * a`` by NumPy on cpu, CuPy on cuda;
backward ``g * a``): the TensorPlay op ``bench_bridge::scale`` (kernel + ``register_autograd``
formula) bridged with ``tensorplay_torch.register``, against a torch custom op
``bench_native::scale`` whose kernel does the same on the torch tensor's array. Rows, each timed
paired (``_harness.paired``) in one process:

* eager, no grad: ``op(x, 2.0)``;
* eager, with grad: forward and ``torch.autograd.grad`` (x requires grad);
* the same for ``square`` (``x * x``), whose ``setup_context`` saves its input (as most packs'
  formulas do; backward ``g * x * 2``), against a native op with the same formula;
* compiled: ``torch.compile(lambda x: op(x, 2.0) + 1, fullgraph=True)`` (inductor; ``--backend``);
* for reference, the TensorPlay op alone on TensorPlay tensors (its own dispatch and body, no
  torch), in the bridged column.

* the bridge's own crossing cost per tensor (torch -> TensorPlay -> torch), bridged column only.

Targets (issue 31): eager <= 1.1x, compiled <= 1.05x (figures before/after the per-call work:
``benchmarks/README.md``, "tensorplay-torch bridge"). Usage: ``python
benchmarks/bench_torch_bridge.py [--device cpu|cuda|all] [--backend inductor] [--repeat N]``;
``TENSORPLAY_BENCH_CPU_TIME=1`` times with the process's CPU clock (a shared machine); writes
``benchmarks/results/torch_bridge.json``. Exits 2 (not available) without torch or
tensorplay-torch.
"""


import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H


def _define(torch, tp):
    from tensorplay import library

    @library.custom_op("bench_bridge::scale", mutates_args=())
    def scale(x: tp.Tensor, a: float) -> tp.Tensor:
        raise NotImplementedError("bench_bridge::scale: cpu and cuda kernels only")

    @scale.register_kernel("cpu")
    def _(x, a):
        return tp.from_numpy(x.numpy() * a)

    @scale.register_kernel("cuda")
    def _(x, a):
        import cupy
        return tp.from_dlpack(cupy.from_dlpack(x) * a)

    @scale.register_fake
    def _(x, a):
        return x.new_empty(x.shape)

    def setup(ctx, inputs, output):
        ctx.a = inputs[1]

    scale.register_autograd(lambda ctx, g: (g * ctx.a, None), setup_context=setup)

    @torch.library.custom_op("bench_native::scale", mutates_args=())
    def native(x: torch.Tensor, a: float) -> torch.Tensor:
        if x.device.type == "cuda":
            import cupy
            # detach: DLPack refuses a tensor that requires grad (the GPU run of 2026-12-03)
            return torch.from_dlpack(cupy.from_dlpack(x.detach()) * a)
        return torch.from_numpy(x.numpy() * a)

    @native.register_fake
    def _(x, a):
        return torch.empty_like(x)

    def nsetup(ctx, inputs, output):
        ctx.a = inputs[1]

    native.register_autograd(lambda ctx, g: (g * ctx.a, None), setup_context=nsetup)

    # a formula whose setup_context saves its input (as most packs' do): x * x, backward
    # g * x * 2 (two multiplies on either side)
    @library.custom_op("bench_bridge::square", mutates_args=())
    def square(x: tp.Tensor) -> tp.Tensor:
        raise NotImplementedError("bench_bridge::square: cpu and cuda kernels only")

    @square.register_kernel("cpu")
    def _(x):
        a = x.numpy()
        return tp.from_numpy(a * a)

    @square.register_kernel("cuda")
    def _(x):
        import cupy
        a = cupy.from_dlpack(x)
        return tp.from_dlpack(a * a)

    @square.register_fake
    def _(x):
        return x.new_empty(x.shape)

    def sq_setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    square.register_autograd(lambda ctx, g: g * ctx.saved_tensors[0] * 2.0,
                             setup_context=sq_setup)

    @torch.library.custom_op("bench_native::square", mutates_args=())
    def nsquare(x: torch.Tensor) -> torch.Tensor:
        if x.device.type == "cuda":
            import cupy
            a = cupy.from_dlpack(x.detach())
            return torch.from_dlpack(a * a)
        a = x.numpy()
        return torch.from_numpy(a * a)

    @nsquare.register_fake
    def _(x):
        return torch.empty_like(x)

    nsquare.register_autograd(lambda ctx, g: g * ctx.saved_tensors[0] * 2.0,
                              setup_context=sq_setup)
    import tensorplay_torch
    tensorplay_torch.register(namespace="bench_bridge")
    return (torch.ops.bench_bridge.scale, torch.ops.bench_native.scale,
            torch.ops.bench_bridge.square, torch.ops.bench_native.square)


def _rows(torch, ops, device, backend, repeat=None):
    bridged, native, bsquare, nsquare = ops
    x = torch.ones(1, device=device)
    xg = torch.ones(1, device=device, requires_grad=True)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    glb = {"bridged": bridged, "native": native, "x": x, "xg": xg, "grad": torch.autograd.grad,
           "sync": sync, "bsquare": bsquare, "nsquare": nsquare}
    compiled = {}
    torch._dynamo.reset()       # once: a reset between the two would drop the first's graph
    for k, op in (("bridged", bridged), ("native", native)):
        f = torch.compile(lambda t, op=op: op(t, 2.0) + 1, fullgraph=True, backend=backend)
        f(x)
        compiled[k] = f
    glb["c_bridged"], glb["c_native"] = compiled["bridged"], compiled["native"]
    rows = {}
    # where the time goes: the TensorPlay op itself on TensorPlay tensors (dispatch + the same
    # body), against which the bridge's own share (DLPack/NumPy views both ways) is the rest
    import tensorplay as tp
    glb["tp_op"], glb["tx"] = tp.ops.bench_bridge.scale, tp.ones(1, device=device)
    t = H.paired({"tensorplay": "tp_op(tx, 2.0); sync()", "native": "native(x, 2.0); sync()"},
                 glb)
    rows["tensorplay op alone (no torch)"] = {
        "bridged": H.us(t["tensorplay"]), "native": H.us(t["native"]),
        "ratio": H.summary([p / q for p, q in zip(t["tensorplay"], t["native"])])}
    # the bridge's own per-tensor cost: one torch tensor to TensorPlay and one result back
    # (the cpu path: torch's .numpy() view + the backend's wrap_shared; torch.from_numpy back)
    from tensorplay_torch import to_tensorplay, to_torch
    glb["to_tp"], glb["to_torch"] = to_tensorplay, to_torch
    t = H.paired({"cross": "to_torch(to_tp(x)); sync()"}, glb)
    rows["crossing torch -> tensorplay -> torch, 1 tensor"] = {
        "bridged": H.us(t["cross"]), "native": None, "ratio": None}
    for label, (a, b) in {
        "eager, no grad": ("bridged(x, 2.0); sync()", "native(x, 2.0); sync()"),
        "eager, with grad": ("grad(bridged(xg, 2.0), xg); sync()",
                             "grad(native(xg, 2.0), xg); sync()"),
        "eager, with grad, setup saving x (x * x)": ("grad(bsquare(xg), xg); sync()",
                                                     "grad(nsquare(xg), xg); sync()"),
        f"compiled ({backend})": ("c_bridged(x); sync()", "c_native(x); sync()"),
    }.items():
        with torch.no_grad() if label == "eager, no grad" else _null():
            # a discarded warm-up pass first: on the shared cpu box the first paired pass of a
            # row read 1.5x where the next ones read 1.06-1.09x (the bridged column's larger
            # code path warming up), and the row's median mixed the two
            H.paired({"bridged": a, "native": b}, glb, repeat=5)
            t = H.paired({"bridged": a, "native": b}, glb, repeat=repeat)
        rows[label] = {"bridged": H.us(t["bridged"]), "native": H.us(t["native"]),
                       "ratio": H.summary([p / q for p, q in zip(t["bridged"], t["native"])])}
    return rows


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="all", choices=["cpu", "cuda", "all"])
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--repeat", type=int, default=None,
                    help="paired runs per compared row (default: the harness's, 41); more "
                         "runs narrow the ratio's spread on a loaded machine")
    a = ap.parse_args(argv)
    torch, why = H.try_import_torch()
    if torch is None:
        print(f"not available: {why}")
        return 2
    try:
        import tensorplay_torch  # noqa: F401
    except ImportError as e:
        print(f"not available: tensorplay-torch is not installed ({e})")
        return 2
    import tensorplay as tp
    ops = _define(torch, tp)
    devices = ["cpu", "cuda"] if a.device == "all" else [a.device]
    if "cuda" in devices and not torch.cuda.is_available():
        devices.remove("cuda")
        print("cuda: not available here (torch.cuda.is_available() is False); cpu only")
    out = {}
    print(f"load average (1, 5, 15 min) at start: {os.getloadavg()}")
    for dev in devices:
        rows = _rows(torch, ops, dev, a.backend, a.repeat)
        out[dev] = rows
        H.print_table(f"tensorplay-torch bridge overhead, 1 element, {dev} (targets: eager "
                      f"<= 1.1x, compiled <= 1.05x)",
                      ["call", "bridged", "native custom_op", "ratio (median, IQR)"],
                      [[k, H.fmt(r["bridged"]), H.fmt(r["native"]),
                        f"{r['ratio']['median']:.3f}x ({r['ratio']['iqr']:.3f})"
                        if r["ratio"] else "n/a"]
                       for k, r in rows.items()])
    print(f"load average (1, 5, 15 min) at end: {os.getloadavg()}")
    print("wrote", H.write_json("torch_bridge", {"rows": out, "backend": a.backend}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
