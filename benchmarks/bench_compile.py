"""Eager vs ``tensorplay.compile`` on a chain of 8 elementwise ops (2**24 float32 elements).

The chain (``mul, add, mul, sub, relu, add, mul, tanh``) runs eagerly (8 dispatches, 8 full-size
temporaries) and compiled (one fused chain: on cpu the generic fuser's single blocked pass, on
cuda whatever fuser the CUDA backend offers). Both are timed in the same run, on the same inputs,
after warm-up; the result is checked equal first. Prints the figures and the ratio
eager/compiled (> 1: compiled is faster) and writes them as JSON.

Usage::

    python benchmarks/bench_compile.py [--device cpu|cuda] [--log2n 24] [--repeat 15]
                                       [--json benchmarks/bench_compile.<device>.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time


def chain(x, y):
    """8 elementwise ops."""
    a = x * y
    a = a + 1.0
    a = a * 0.5
    a = a - y
    a = a.relu()
    a = a + x
    a = a * 2.0
    return a.tanh()


def _sync(device):
    from tensorplay import _backend
    _backend.get_backend(device.split(":")[0]).synchronize()


def _time(fn, args, device, repeat):
    ts = []
    for _ in range(repeat):
        _sync(device)
        t0 = time.perf_counter()
        fn(*args)
        _sync(device)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), min(ts)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--log2n", type=int, default=24, help="log2 of the element count (24)")
    p.add_argument("--repeat", type=int, default=15, help="timed runs of each (median kept)")
    p.add_argument("--json", default=None, help="output path (default "
                   "benchmarks/bench_compile.<device>.json next to this script)")
    a = p.parse_args(argv)

    import tensorplay as tp
    tp.manual_seed(0)
    n = 1 << a.log2n
    x = tp.randn(n, device=a.device)
    y = tp.randn(n, device=a.device)
    compiled = tp.compile(chain)

    expected = chain(x, y)
    got = compiled(x, y)
    if not tp.allclose(got, expected, rtol=1e-6, atol=1e-6):
        raise SystemExit("bench_compile: compiled result differs from eager; not timing")
    fused = len(compiled.graph.groups)
    for _ in range(2):             # warm-up (allocator, caches, kernel compilation)
        chain(x, y)
        compiled(x, y)
    eager_med, eager_min = _time(chain, (x, y), a.device, a.repeat)
    comp_med, comp_min = _time(compiled, (x, y), a.device, a.repeat)
    res = {
        "benchmark": "compile_elementwise_chain",
        "device": a.device,
        "elements": n,
        "dtype": "float32",
        "ops_in_chain": 8,
        "fused_groups": fused,
        "captures": compiled.captures,
        "eager_ms_median": eager_med * 1e3,
        "eager_ms_min": eager_min * 1e3,
        "compiled_ms_median": comp_med * 1e3,
        "compiled_ms_min": comp_min * 1e3,
        "ratio_eager_over_compiled": eager_med / comp_med,
        "repeat": a.repeat,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "tensorplay": tp.__version__,
    }
    print(f"chain of 8 elementwise ops, {n} float32 elements on {a.device}")
    print(f"  eager    : {res['eager_ms_median']:9.2f} ms (median of {a.repeat}, min "
          f"{res['eager_ms_min']:.2f})")
    print(f"  compiled : {res['compiled_ms_median']:9.2f} ms (median of {a.repeat}, min "
          f"{res['compiled_ms_min']:.2f}; {fused} fused chain)")
    print(f"  ratio eager/compiled: {res['ratio_eager_over_compiled']:.2f}x")
    import os
    path = a.json or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  f"bench_compile.{a.device.split(':')[0]}.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=2)
    print(f"  written to {path}")
    return res


if __name__ == "__main__":
    main()
