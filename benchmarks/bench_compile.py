"""Eager vs ``tensorplay.compile`` on a chain of 8 elementwise ops (2**24 float32 elements).

The chain (``mul, add, mul, sub, relu, add, mul, tanh``) runs eagerly (8 dispatches, 8 full-size
temporaries) and compiled (one fused chain: on cpu the generic fuser's single blocked pass, on
cuda whatever fuser the CUDA backend offers). Both are timed in the same run, on the same inputs,
after warm-up, interleaved (each repeat times eager then compiled, so both see the same machine
state); the result is checked equal first. Prints the medians (IQR) and the ratio
eager/compiled (> 1: compiled is faster) and writes them to
``benchmarks/results/compile_<device>.json`` (and ``--json PATH`` if given).

Usage::

    python benchmarks/bench_compile.py [--device cpu|cuda] [--log2n 24] [--repeat 15] [--json PATH]
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


def _once(fn, args, device):
    _sync(device)
    t0 = time.perf_counter()
    fn(*args)
    _sync(device)
    return time.perf_counter() - t0


def _paired(a, b, args, device, repeat):
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(_once(a, args, device))
        tb.append(_once(b, args, device))
    return ta, tb


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--log2n", type=int, default=24, help="log2 of the element count (24)")
    p.add_argument("--repeat", type=int, default=15, help="timed runs of each (median kept)")
    p.add_argument("--json", default=None, help="also write the JSON here")
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
    te, tc = _paired(chain, compiled, (x, y), a.device, a.repeat)
    eager, comp = H.summary(te, 1e3), H.summary(tc, 1e3)
    res = {
        "benchmark": "compile_elementwise_chain",
        "device": a.device,
        "elements": n,
        "dtype": "float32",
        "ops_in_chain": 8,
        "fused_chains": fused,
        "captures": compiled.captures,
        "eager_ms": eager,
        "compiled_ms": comp,
        "ratio_eager_over_compiled": eager["median"] / comp["median"],
        "repeat": a.repeat,
    }
    print(f"chain of 8 elementwise ops, {n} float32 elements on {a.device} "
          f"(median of {a.repeat} interleaved runs)")
    print(f"  eager    : {H.fmt(eager, 'ms')}")
    print(f"  compiled : {H.fmt(comp, 'ms')}  ({fused} fused chain)")
    print(f"  ratio eager/compiled: {res['ratio_eager_over_compiled']:.2f}x")
    path = H.write_json(f"compile_{a.device.split(':')[0]}", res)
    print(f"  written to {path}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(res, machine=H.machine_info()), f, indent=2, default=str)
        print(f"  and to {a.json}")
    return res


if __name__ == "__main__":
    main()
