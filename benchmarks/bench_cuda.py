"""CUDA plugin figures, each against a CuPy reference measured in the same run.

1. **Per-call overhead on a tiny tensor** (1-element float32 on ``cuda:0``; host time per call,
   launches are asynchronous): ``x + y`` through tensorplay (``tp.add``: dispatch, the generated
   adapter, the device guard, wrapping the result) against ``cupy.add(xa, ya)`` on the same
   arrays; ``relu`` against the same CuPy expression the reference kernel runs; and the example
   pack's ``example::bias_gelu`` (a custom op whose cuda kernel is a ``cupy.ElementwiseKernel``)
   against launching that kernel directly. Net overhead is paired per repeat (``_harness``); the
   ratio is tensorplay's time per call over CuPy's.
2. **Bandwidth of a large elementwise op**: ``x * 2.0`` on 2^28 float32 (1 GiB) through tensorplay,
   timed with CUDA events, against a device-to-device copy of the same array (``cudaMemcpyAsync``)
   and against CuPy's own ``x * 2.0``; bytes counted are those read plus written. The ratio
   elementwise / copy says how close the op gets to the copy rate.

Run on a machine with a GPU: ``python benchmarks/bench_cuda.py [--json PATH] [--elements N]``
(``TENSORPLAY_BENCH_QUICK=1`` for a short run). Prints tables and writes
``benchmarks/results/cuda.json`` (and ``PATH`` if given). Exits 2 with the reason when cuda is
unavailable.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H  # noqa: E402
import tensorplay as tp  # noqa: E402


def _device_info(cupy) -> dict:
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    return {"name": name.decode() if isinstance(name, bytes) else str(name),
            "count": cupy.cuda.runtime.getDeviceCount(),
            "cupy": cupy.__version__,
            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
            "driver": cupy.cuda.runtime.driverGetVersion()}


def overhead(cupy) -> dict:
    """Host time per call of tensorplay ops vs the CuPy calls doing the same work."""
    from tensorplay_example_ops import cuda_kernels
    from tensorplay_example_ops.cuda_ops import bias_gelu
    x = tp.ones(1, device="cuda")
    y = tp.ones(1, device="cuda")
    xa, ya = x._data, y._data
    relu, add = tp.relu, tp.add
    bias_gelu(x, y)                          # compile the ElementwiseKernel before timing
    g = dict(x=x, y=y, xa=xa, ya=ya, cupy=cupy, relu=relu, add=add,
             bias_gelu=bias_gelu, cuda_kernels=cuda_kernels)
    pairs = {
        "add": ("add(x, y)", "cupy.add(xa, ya)"),
        "relu": ("relu(x)", "cupy.where(xa > 0, xa, cupy.zeros_like(xa))"),
        "custom op bias_gelu": ("bias_gelu(x, y)", "cuda_kernels.bias_gelu(xa, ya, xa.dtype)"),
    }
    res = {}
    for label, (ours, ref) in pairs.items():
        t = H.paired({"tensorplay": ours, "cupy": ref}, g)
        cupy.cuda.Device(0).synchronize()
        net = H.diff(t["tensorplay"], t["cupy"])
        res[label] = {"tensorplay_us": H.us(t["tensorplay"]), "cupy_us": H.us(t["cupy"]),
                      "net_overhead_us": H.us(net),
                      "ratio": statistics.median(t["tensorplay"]) / statistics.median(t["cupy"]),
                      "tensorplay_stmt": ours, "cupy_stmt": ref}
    return res


def bandwidth(cupy, n: int) -> dict:
    """GB/s (read + written bytes) of ``x * 2.0`` via tensorplay and CuPy, and of a D2D copy."""
    quick = H.QUICK
    iters, repeat = (5, 3) if quick else (20, 9)
    x = tp.rand(n, device="cuda")
    xa = x._data
    dst = cupy.empty_like(xa)
    nbytes = xa.nbytes

    def ours():
        return x * 2.0

    def ref():
        return xa * 2.0

    def copy():
        dst.data.copy_from_device_async(xa.data, nbytes)

    check = (x * 2.0).cpu().numpy()[:1000]
    assert (check == (xa[:1000] * 2.0).get()).all(), "tensorplay x * 2.0 disagrees with CuPy"
    moved = 2 * nbytes                     # every variant reads n values and writes n values
    res = {}
    for label, fn in (("tensorplay x * 2.0", ours), ("cupy x * 2.0", ref),
                      ("device-to-device copy", copy)):
        secs = H.gpu_seconds(cupy, fn, iters, repeat)
        gbs = [moved / s / 1e9 for s in secs]
        res[label] = {"ms": H.summary(secs, 1e3), "GB_per_s": H.summary(gbs)}
    copy_rate = res["device-to-device copy"]["GB_per_s"]["median"]
    res["ratio_tensorplay_elementwise_to_copy"] = \
        res["tensorplay x * 2.0"]["GB_per_s"]["median"] / copy_rate
    res["ratio_cupy_elementwise_to_copy"] = res["cupy x * 2.0"]["GB_per_s"]["median"] / copy_rate
    res["elements"] = n
    res["bytes_per_call"] = moved
    return res


def main(argv=None) -> int:
    """Run both measurements, print them, write JSON; 2 when the cuda device is unavailable."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the results to this path")
    ap.add_argument("--elements", type=int, default=(1 << 24) if H.QUICK else (1 << 28),
                    help="elements of the float32 array for the bandwidth figure")
    args = ap.parse_args(argv)
    cu = H.cuda_setup("bench_cuda", no_torch=True)   # CuPy is the only reference here
    if cu is None:
        return 2
    cupy = cu.cupy
    dev = _device_info(cupy)
    print(f"device: {dev['name']} x{dev['count']}, CuPy {dev['cupy']}, CUDA runtime "
          f"{dev['cuda_runtime']}, driver {dev['driver']}")
    ov = overhead(cupy)
    H.print_table("Per-call host time, 1-element float32 on cuda:0",
                  ["op", "tensorplay", "CuPy direct", "net overhead", "ratio"],
                  [[k, H.fmt(v["tensorplay_us"]), H.fmt(v["cupy_us"]),
                    H.fmt(v["net_overhead_us"]), f"{v['ratio']:.2f}x"] for k, v in ov.items()])
    bw = bandwidth(cupy, args.elements)
    rows = [[k, H.fmt(bw[k]["ms"], "ms", 3), H.fmt(bw[k]["GB_per_s"], "GB/s", 0)]
            for k in ("tensorplay x * 2.0", "cupy x * 2.0", "device-to-device copy")]
    H.print_table(f"Bandwidth, {args.elements} float32 ({bw['bytes_per_call'] / 2**30:.2f} GiB "
                  f"read+written per call)", ["what", "time per call", "rate"], rows)
    print(f"\nratio tensorplay elementwise / D2D copy: {bw['ratio_tensorplay_elementwise_to_copy']:.3f}"
          f"   (CuPy's own: {bw['ratio_cupy_elementwise_to_copy']:.3f})")
    data = {"device": dev, "overhead": ov, "bandwidth": bw}
    path = H.write_json("cuda", data)
    print(f"wrote {path}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(data, machine=H.machine_info()), f, indent=2, default=str)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
