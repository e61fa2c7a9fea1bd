"""``tensorplay.cuda`` host calls (issue 26, section 4): what kernel libraries' host code calls
around every launch, ``get_device_properties(dev).multi_processor_count`` first.

Prints, in ns per call (median of ``--rounds`` rounds of 20000 calls): the first
``get_device_properties(0)`` (the driver query, once), repeat calls with ``0``, ``"cuda:0"``,
``None`` (current device) and a ``tensorplay.device``, ``.multi_processor_count`` through it,
``device_count()``, ``current_device()``, ``is_available()``; and one ``Event.elapsed_time``
sanity figure (ms for 10 matmuls of 1024x1024). Needs a GPU; exits 0 with a message without one.
Target (issue 26): ``get_device_properties`` under 1 µs after the first call (Triton's driver
query costs about 0.81 ms per call on an H200).

Usage: ``python benchmarks/bench_cuda_api.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time


def _ns(fn, n=20000, rounds=7):
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        per.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(per)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args(argv)
    import tensorplay as tp
    if not tp.cuda.is_available():
        print("bench_cuda_api: no usable CUDA GPU:", tp.plugins.device_status("cuda")[1])
        return 0
    t0 = time.perf_counter_ns()
    p = tp.cuda.get_device_properties(0)
    first = time.perf_counter_ns() - t0
    dev = tp.device("cuda", 0)
    gdp = tp.cuda.get_device_properties
    r = a.rounds
    rows = [
        ("get_device_properties(0) first call", first),
        ("get_device_properties(0)", _ns(lambda: gdp(0), rounds=r)),
        ("get_device_properties('cuda:0')", _ns(lambda: gdp("cuda:0"), rounds=r)),
        ("get_device_properties(None)", _ns(lambda: gdp(), rounds=r)),
        ("get_device_properties(device)", _ns(lambda: gdp(dev), rounds=r)),
        (".multi_processor_count", _ns(lambda: gdp(0).multi_processor_count, rounds=r)),
        ("device_count()", _ns(tp.cuda.device_count, rounds=r)),
        ("current_device()", _ns(tp.cuda.current_device, rounds=r)),
        ("is_available()", _ns(tp.cuda.is_available, rounds=r)),
    ]
    print(f"bench_cuda_api: {p.name}, {p.multi_processor_count} SMs, sm_{p.major}{p.minor}, "
          f"{p.total_memory / 2**30:.1f} GiB")
    for name, ns in rows:
        print(f"  {name:40s} {ns:12.0f} ns")
    x = tp.randn(1024, 1024, device="cuda")
    start, end = tp.cuda.Event(enable_timing=True), tp.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        x = x @ x * 1e-3
    end.record()
    end.synchronize()
    print(f"  Event.elapsed_time, 10 matmuls 1024^2 {start.elapsed_time(end):12.3f} ms")
    ok = rows[1][1] < 1000
    print(f"  get_device_properties under 1 us after the first call: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
