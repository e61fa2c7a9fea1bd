"""``opcheck`` time per example op (issue 8, item 5), and one op checked by both libraries.

* Every op that an installed op pack ships (non-built-in ops registered by a plugin, e.g. the
  example pack ``tensorplay-example-ops``), on every sample its plugin provides through the
  ``tensorplay_sample_inputs`` hook (``tensorplay.plugins.sample_inputs``), on the cpu device:
  wall time of ``tensorplay.library.opcheck(op, args, kwargs)`` with every default check, summed
  over the op's samples -- median and IQR over repeated runs --, that time per sample, and the
  time of each check alone.
* Reference in the same run: the benchmark op ``x * 3.0`` with ``register_autograd`` and a fake
  kernel, defined in both libraries, checked on the same (8, 16) float32 input by
  ``tensorplay.library.opcheck`` (every default check, the gradient check included) and
  ``torch.library.opcheck``, in interleaved rounds (a round: tensorplay's opcheck, each of its
  checks alone, torch's opcheck), wall and process CPU time of the same calls; the ratio is
  torch's median over tensorplay's.

``TENSORPLAY_BENCH_CPU_TIME=1`` times the per-op table with the process CPU clock (a loaded,
shared machine inflates it far less than wall time); the reference table always shows both.

Whatever is missing (the example pack, the sample-inputs hook, opcheck itself, torch) is
reported as "not available" with the reason; no figure is ever made up.
Writes ``benchmarks/results/opcheck.json``.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H
import tensorplay as tp

# the checks timed one by one (the "all" column is opcheck's DEFAULT: every check)
TESTS = ("test_schema", "test_autograd_registration", "test_gradients", "test_layouts",
         "test_faketensor", "test_aot_dispatch_dynamic")
#: column titles of TESTS
SHORT = ("schema", "autograd", "grads", "layouts", "fake", "aot")


def _repeat():
    return 3 if H.QUICK else 9


def _clock():
    return time.process_time if H.CPU_TIME else time.perf_counter


def _time(fn, repeat, clock=None):
    """Seconds per call of ``fn`` (one call per run: opcheck takes milliseconds). ``clock``:
    ``time.process_time`` for the cpu time this process spent, which a loaded machine inflates
    far less than wall time (both libraries single-threaded here)."""
    clock = clock or _clock()
    fn()   # warm-up: first-use imports and compilation caches
    out = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return out


def _pack_ops():
    """The custom ops of every installed op pack (device plugins left out), each pack imported
    here if it loads on first use: ``tensorplay check``'s own selection."""
    from tensorplay.plugins import load_packs, records
    from tensorplay.testing.plugin_check import plugin_ops
    load_packs()            # packs load on first use: import them all, as tensorplay check does
    ops = []
    for rec in records():
        if rec.status == "loaded" and not rec.devices:
            ops += [op for op, _ in plugin_ops(rec.name) if not op.is_builtin and op not in ops]
    return ops


def pack(repeat) -> dict:
    try:
        from tensorplay.library import opcheck
        from tensorplay.plugins import sample_inputs
    except Exception as e:  # noqa: BLE001 - missing piece: report it, never fake a figure
        return {"status": f"not available: {type(e).__name__}: {e}"}
    ops = _pack_ops()
    if not ops:
        return {"status": "not available: no op pack is installed (pip install -e examples)"}
    dev = tp.device("cpu")
    res = {"status": "ok", "device": "cpu", "ops": {}}
    for op in ops:
        entry = {"plugin": op.plugin}
        res["ops"][op.name] = entry
        try:
            samples = sample_inputs(op, dev)
        except Exception as e:  # noqa: BLE001 - a broken hook is reported, not timed
            entry["status"] = f"not available: sample_inputs raised {type(e).__name__}: {e}"
            continue
        if not samples:
            entry["status"] = "not available: its plugin provides no sample inputs"
            continue
        entry["samples"] = len(samples)
        failures = {}
        for s in samples:
            f = opcheck(op, s.args, s.kwargs, raise_exception=False)
            failures.update({f"{s.name or '?'}:{k}": v for k, v in f.items()})
        if failures:   # report, but still time it: the checks ran
            entry["failures"] = {k: str(v)[:300] for k, v in failures.items()}

        def run_all(tests="DEFAULT", op=op, samples=samples):
            for s in samples:
                opcheck(op, s.args, s.kwargs, test_utils=tests, raise_exception=False)

        entry["all_ms"] = H.summary(_time(run_all, repeat), 1e3)
        entry["per_sample_ms"] = entry["all_ms"]["median"] / len(samples)
        from tensorplay.testing.opcheck import ALL_TESTS
        # a check this version does not have is "not available", never a made-up figure
        entry["per_test_ms"] = {t: H.summary(_time(lambda t=t: run_all((t,)), repeat), 1e3)
                                if t in ALL_TESTS else None for t in TESTS}
        entry["status"] = "ok" if not failures else "checks failed"
    return res


def _tp_ref_op():
    from tensorplay.library import custom_op

    def body(x: tp.Tensor) -> tp.Tensor:
        return x * 3.0

    op = custom_op("tpbench::opcheck_scale", body, mutates_args=())
    op.register_fake(lambda x: x.new_empty(x.shape))
    op.register_autograd(lambda ctx, g: g * 3.0)
    return op


def _torch_ref_op(torch):
    def body(x: torch.Tensor) -> torch.Tensor:
        return x * 3.0

    op = torch.library.custom_op("tpbench::opcheck_scale", body, mutates_args=())
    op.register_fake(lambda x: torch.empty_like(x))
    op.register_autograd(lambda ctx, g: g * 3.0)
    return op


def _both(fn, n=1):
    """(wall, cpu) seconds per call of ``fn``, over ``n`` calls."""
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        fn()
    return (time.perf_counter() - w0) / n, (time.process_time() - c0) / n


def reference(repeat) -> dict:
    out = {}
    rounds = 3 * repeat
    inner = 5        # tensorplay calls per round (one takes milliseconds; torch's tens of ms)
    try:
        from tensorplay.library import opcheck
        from tensorplay.testing.opcheck import ALL_TESTS
        op = _tp_ref_op()
        x = tp.randn(8, 16)
        fails = opcheck(op, (x,), raise_exception=False)
        out["tensorplay_failures"] = {k: str(v)[:300] for k, v in fails.items()}
        tp_all = lambda: opcheck(op, (x,), raise_exception=False)  # noqa: E731
        tp_each = {t: (lambda t=t: opcheck(op, (x,), test_utils=(t,), raise_exception=False))
                   for t in TESTS if t in ALL_TESTS}
    except Exception as e:  # noqa: BLE001 - reported as "not available" with the reason
        tp_all = None
        out["tensorplay_ms"] = None
        out["tensorplay_status"] = f"not available: {type(e).__name__}: {e}"
    torch, why = H.try_import_torch()
    if torch is None:
        out["torch_ms"] = None
        out["torch_status"] = f"not available: {why}"
        t_fn = None
    else:
        torch.set_num_threads(1)
        t_op = _torch_ref_op(torch)
        tx = torch.randn(8, 16)
        t_fn = lambda: torch.library.opcheck(t_op, (tx,))  # noqa: E731
    # interleaved rounds: load on a shared machine hits both libraries alike
    samples = {"tp": [], "torch": [], **{t: [] for t in (tp_each if tp_all else ())}}
    for f in ([tp_all] if tp_all else []) + list(tp_each.values() if tp_all else []) + \
            ([t_fn] if t_fn else []):
        f()      # warm-up: first-use imports and caches
    for _ in range(rounds):
        if tp_all:
            samples["tp"].append(_both(tp_all, inner))
            for t, f in tp_each.items():
                samples[t].append(_both(f, inner))
        if t_fn:
            samples["torch"].append(_both(t_fn))
    for key, name in (("tp", "tensorplay"), ("torch", "torch")):
        if samples[key]:
            out[f"{name}_ms"] = H.summary([w for w, _ in samples[key]], 1e3)
            out[f"{name}_cpu_ms"] = H.summary([c for _, c in samples[key]], 1e3)
    if tp_all:
        out["tensorplay_per_check_ms"] = {t: H.summary([w for w, _ in samples[t]], 1e3)
                                          for t in tp_each}
        out["tensorplay_per_check_cpu_ms"] = {t: H.summary([c for _, c in samples[t]], 1e3)
                                              for t in tp_each}
    a, b = out.get("torch_ms"), out.get("tensorplay_ms")
    out["ratio_torch_over_tensorplay"] = a["median"] / b["median"] if a and b else None
    a, b = out.get("torch_cpu_ms"), out.get("tensorplay_cpu_ms")
    out["ratio_cpu_torch_over_tensorplay"] = a["median"] / b["median"] if a and b else None
    try:
        out["loadavg_1min"] = round(os.getloadavg()[0], 2)
    except OSError:
        out["loadavg_1min"] = None
    return out


def report(res) -> None:
    p = res["pack"]
    if p["status"] != "ok":
        H.print_table("opcheck per example op", ["op", "status"], [["(all)", p["status"]]])
    else:
        rows = []
        for name, e in p["ops"].items():
            if "all_ms" not in e:
                rows.append([name, e.get("status")] + [""] * (len(TESTS) + 3))
                continue
            pt = e["per_test_ms"]
            rows.append([name, e["samples"], H.fmt(e["all_ms"], "ms"),
                         f"{e['per_sample_ms']:.2f}"]
                        + [f"{pt[t]['median']:.2f}" if pt[t] else "n/a" for t in TESTS]
                        + [e["status"] if e["status"] == "ok" else
                           f"{e['status']}: {', '.join(sorted(e['failures']))[:80]}"])
        clock = "cpu time" if H.CPU_TIME else "wall"
        H.print_table(f"opcheck per example op, cpu (all samples, every default check; ms, "
                      f"{clock})",
                      ["op", "samples", "opcheck (median, IQR)", "per sample", *SHORT,
                       "status"], rows)
    r = res["reference"]
    rr = r.get("ratio_torch_over_tensorplay")
    rc = r.get("ratio_cpu_torch_over_tensorplay")
    pc, pcc = r.get("tensorplay_per_check_ms"), r.get("tensorplay_per_check_cpu_ms")
    if pc:
        H.print_table("tensorplay opcheck of x * 3.0, each check alone (same rounds; ms)",
                      ["check", "wall", "cpu time"],
                      [[t, H.fmt(pc[t], "ms"), H.fmt(pcc[t], "ms")] for t in pc])
    H.print_table(f"opcheck of the same op (x * 3.0, autograd + fake, one (8, 16) input; "
                  f"interleaved rounds, load {r.get('loadavg_1min')})",
                  ["library", "opcheck time", "cpu time", "note"],
                  [["tensorplay", H.fmt(r.get("tensorplay_ms"), "ms"),
                    H.fmt(r.get("tensorplay_cpu_ms"), "ms"),
                    r.get("tensorplay_status") or ("failures: " + ", ".join(r["tensorplay_failures"])
                                                   if r.get("tensorplay_failures") else "passes")],
                   ["torch 2.x", H.fmt(r.get("torch_ms"), "ms"), H.fmt(r.get("torch_cpu_ms"), "ms"),
                    r.get("torch_status", "")],
                   ["torch / tensorplay", f"{rr:.1f}x" if rr else "n/a",
                    f"{rc:.1f}x" if rc else "n/a", ""]])


def main():
    repeat = _repeat()
    res = {"repeat": repeat, "pack": pack(repeat), "reference": reference(repeat)}
    report(res)
    print(f"\nwrote {H.write_json('opcheck', res)}")
    return res


if __name__ == "__main__":
    main()
