"""The ``tensorplay`` command (console script; also ``python -m tensorplay.cli``).

::

    tensorplay plugins                       # every plugin: version, status, devices, ops, kernels
    tensorplay ops [--namespace NS]          # every op: schema, devices with kernels, plugin
    tensorplay check [--plugin NAME] [--device D] [OP ...] [--json PATH]

``check`` is the main job: ``opcheck`` over every op each installed plugin ships, with
the sample inputs the plugin provides (hook ``tensorplay_sample_inputs``), on every available
device; progress on stderr, a summary table and the failure messages on stdout. Exit status 0 when
everything checked passed, 1 on any failure, on a plugin that failed to load, or when nothing at
all was checked; 2 for a usage error.

Global options ``--plugins LIST``, ``--disable-plugins LIST`` and ``--strict`` set
``TENSORPLAY_PLUGINS``, ``TENSORPLAY_DISABLE_PLUGINS`` and ``TENSORPLAY_STRICT_PLUGINS=1``. Plugins
are discovered when ``tensorplay`` is imported, which has already happened by the time this module
runs, so with any of them the command re-runs itself in a fresh interpreter with that environment.

Tables use ``rich`` on a terminal when it is importable, plain text otherwise (rich is not a
dependency; ``TENSORPLAY_CLI_RICH=1``/``0`` forces either).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

__all__ = ["main"]

_CHECK_COLUMNS = (("test_schema", "schema"), ("test_autograd_registration", "autograd"),
                  ("test_faketensor", "fake"), ("test_aot_dispatch_dynamic", "aot"))
_MARK = {"pass": "PASS", "fail": "FAIL", "skip": "N/A", None: "-"}


# ----------------------------------------------------------------------------------------------
# argument parsing

def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("plugin selection (environment controls)")
    g.add_argument("--plugins", default=argparse.SUPPRESS, metavar="LIST",
                   help="comma list of plugins to load, by entry-point or distribution name "
                        "(TENSORPLAY_PLUGINS; empty: none)")
    g.add_argument("--disable-plugins", default=argparse.SUPPRESS, metavar="LIST",
                   help="comma list of plugins not to load (TENSORPLAY_DISABLE_PLUGINS)")
    g.add_argument("--strict", action="store_true", default=argparse.SUPPRESS,
                   help="a plugin that fails to load is an error (TENSORPLAY_STRICT_PLUGINS=1)")

    p = argparse.ArgumentParser(
        prog="tensorplay", parents=[common],
        description="TensorPlay operator platform: list plugins and ops, check op packs.")
    sub = p.add_subparsers(dest="command", metavar="{plugins,ops,check}")

    sp = sub.add_parser("plugins", parents=[common], help="list installed plugins")
    sp.add_argument("--json", action="store_true", help="print JSON instead of a table")

    so = sub.add_parser("ops", parents=[common], help="list registered operators")
    so.add_argument("--namespace", "-n", action="append", metavar="NS",
                    help="only ops in this namespace (repeatable)")
    so.add_argument("--json", action="store_true", help="print JSON instead of a table")

    sc = sub.add_parser("check", parents=[common],
                        help="run opcheck on every plugin op over its sample inputs")
    sc.add_argument("ops", nargs="*", metavar="OP",
                    help="only these ops ('ns::op' or the bare op name)")
    sc.add_argument("--plugin", action="append", metavar="NAME",
                    help="only ops of this plugin (entry-point or distribution name; repeatable)")
    sc.add_argument("--device", action="append", metavar="D",
                    help="only this device type, e.g. cpu or cuda (repeatable)")
    sc.add_argument("--test-utils", default="DEFAULT", metavar="NAMES",
                    help="comma list of checks (default: all): test_schema, "
                         "test_autograd_registration, test_faketensor, test_aot_dispatch_dynamic")
    sc.add_argument("--json", metavar="PATH", dest="json_path",
                    help="also write the results as JSON to PATH")
    sc.add_argument("--atol", type=float, default=None, help="absolute tolerance override")
    sc.add_argument("--rtol", type=float, default=None, help="relative tolerance override")
    sc.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    return p


_ENV_FLAGS = {"plugins": "TENSORPLAY_PLUGINS", "disable_plugins": "TENSORPLAY_DISABLE_PLUGINS",
              "strict": "TENSORPLAY_STRICT_PLUGINS"}


def _strip_env_flags(argv: list) -> list:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--plugins", "--disable-plugins"):
            skip = True
            continue
        if a.startswith(("--plugins=", "--disable-plugins=")) or a == "--strict":
            continue
        out.append(a)
    return out


def main(argv=None) -> int:
    """Run the ``tensorplay`` command with ``argv`` (default ``sys.argv[1:]``); return the exit
    status (0 ok, 1 failures / nothing checked, 2 usage error). See the module docstring."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:       # argparse exits on --help / bad usage; return the code instead
        return int(e.code or 0)
    env = {}
    for attr, var in _ENV_FLAGS.items():
        if hasattr(args, attr):
            env[var] = "1" if attr == "strict" else getattr(args, attr)
    if env:
        # plugins were discovered when `tensorplay` was imported (before this function could run):
        # apply the controls by running the same command in a fresh interpreter.
        child_env = dict(os.environ)
        child_env.update(env)
        cmd = [sys.executable, "-m", "tensorplay.cli", *_strip_env_flags(argv)]
        return subprocess.run(cmd, env=child_env).returncode
    if args.command is None:
        parser.print_help()
        return 2
    import tensorplay  # noqa: F401  (already imported with this module; discovery happened there)
    if args.command == "plugins":
        return _cmd_plugins(args)
    if args.command == "ops":
        return _cmd_ops(args)
    return _cmd_check(args)


# ----------------------------------------------------------------------------------------------
# output helpers

def _use_rich(out) -> bool:
    """rich tables on a terminal when rich is importable; plain text when piped (greppable,
    stable for scripts and tests). ``TENSORPLAY_CLI_RICH=1``/``0`` forces either."""
    force = os.environ.get("TENSORPLAY_CLI_RICH")
    if force == "0":
        return False
    if force != "1" and not (hasattr(out, "isatty") and out.isatty()):
        return False
    return importlib.util.find_spec("rich") is not None


def _print_table(title, headers, rows, out=None) -> None:
    out = out or sys.stdout
    Console = None
    if _use_rich(out):
        from rich.console import Console
        from rich.table import Table
    if Console is not None:
        t = Table(title=title)
        for h in headers:
            t.add_column(h)
        for r in rows:
            t.add_row(*[str(c) for c in r])
        Console(file=out, width=max(100, _term_width())).print(t)
        return
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(line) for row in cells for line in row[i].splitlines() or [""])
              for i in range(len(headers))]
    if title:
        print(title, file=out)
    sep = "  "

    def emit(row):
        lines = [c.splitlines() or [""] for c in row]
        for k in range(max(len(x) for x in lines)):
            print(sep.join((x[k] if k < len(x) else "").ljust(w) for x, w in zip(lines, widths))
                  .rstrip(), file=out)
    emit(cells[0])
    print(sep.join("-" * w for w in widths), file=out)
    for row in cells[1:]:
        emit(row)


def _term_width() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 160


def _wrap_names(names, width=60) -> str:
    lines, cur = [], ""
    for n in names:
        piece = n if not cur else ", " + n
        if cur and len(cur) + len(piece) > width:
            lines.append(cur + ",")
            cur = n
        else:
            cur += piece
    if cur:
        lines.append(cur)
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# tensorplay plugins

def _kernels_cell(r: dict, status=None) -> str:
    """The ``kernels`` column: kernels the plugin registered, plus the built-in ``tp::`` kernels
    a device plugin provides through its backend ("62 built-in (cpu)"; "(cuda, lazy until first
    use)" while its backend is not loaded)."""
    lines = [str(len(r["kernels"]))] if r["kernels"] or not r.get("builtin_kernels") else []
    for d, b in (r.get("builtin_kernels") or {}).items():
        state = ")" if not b["lazy"] else (", lazy until first use)"
                                           if (status or {}).get(d, "available") == "available"
                                           else ", bound once the device is available)")
        lines.append(f"{b['count']} built-in ({d}{state}")
    return "\n".join(lines)


def _cmd_plugins(args) -> int:
    from tensorplay import plugins
    recs = plugins.list_plugins()
    status = {}
    for r in recs:
        for d in r["devices"]:
            if d not in status:
                ok, why = plugins.device_status(d)
                status[d] = "available" if ok else f"unavailable: {why}"
    if args.json:
        for r in recs:
            r["device_status"] = {d: status[d] for d in r["devices"]}
        print(json.dumps(recs, indent=2))
        return 0
    if not recs:
        print("no tensorplay plugins installed (entry-point group 'tensorplay.plugins'); "
              "pip install tensorplay-cpu to get the cpu device")
        return 0
    rows = []
    recs = plugins.list_plugins()     # again: checking the devices bound their built-in kernels
    per_dist: dict = {}
    for r in recs:
        per_dist[r["dist"]] = per_dist.get(r["dist"], 0) + 1
    for r in recs:
        devs = "\n".join(f"{d} ({'available' if status[d] == 'available' else 'unavailable'})"
                         for d in r["devices"]) or "-"
        ops = f"{len(r['ops'])}" + (f": {_wrap_names(r['ops'])}" if r["ops"] else "")
        # a distribution with several entry points: one row each, told apart by the entry point
        dist = r["dist"] if per_dist[r["dist"]] == 1 else f"{r['dist']} [{r['name']}]"
        rows.append([dist, r["version"], r["status"], devs, ops, _kernels_cell(r, status),
                     r["error"] or ""])
    _print_table("TensorPlay plugins", ["distribution", "version", "status", "devices", "ops",
                                        "kernels", "error"], rows)
    for d, s in status.items():
        if s != "available":
            print(f"device {d}: {s}")
    return 0


# ----------------------------------------------------------------------------------------------
# tensorplay ops

def _op_info(op) -> dict:
    keys = sorted(k for k, v in op._kernels.items() if v)
    kernels = [("any device" if k == "default" else k)
               # entry-point kernels not imported yet are stand-ins in the stack (plugin manager)
               + (" (lazy)" if hasattr(op.kernels.get(k), "_tensorplay_lazy_target") else "")
               for k in keys]
    if op.is_builtin:
        plugin = "tensorplay (built-in)"
    else:
        plugin = op.plugin or (op.source or "?")
    return {"name": op.name, "schema": op.schema.signature_str(), "kernels": kernels,
            "fake": op._fake is not None or op._meta_default is not None,
            "autograd_formula": op._backward is not None, "plugin": plugin,
            "mutates_args": list(op.mutates_args)}


def _cmd_ops(args) -> int:
    from tensorplay import _registry, plugins
    plugins.available_devices()   # load backends so built-in ops show their device kernels
    ops = _registry.all_ops()
    if args.namespace:
        ops = [o for o in ops if o.namespace in args.namespace]
    infos = [_op_info(o) for o in ops]
    if args.json:
        print(json.dumps(infos, indent=2))
        return 0
    if not infos:
        print("no operators registered" + (f" in namespace(s) {', '.join(args.namespace)}"
                                           if args.namespace else ""))
        return 0
    rows = [[i["name"], i["schema"], ", ".join(i["kernels"]) or "-",
             "yes" if i["fake"] else "no", "yes" if i["autograd_formula"] else "-", i["plugin"]]
            for i in infos]
    _print_table("TensorPlay operators", ["op", "schema", "kernels", "fake", "formula",
                                          "plugin"], rows)
    return 0


# ----------------------------------------------------------------------------------------------
# tensorplay check

def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _has_kernel(op, dev: str) -> bool:
    return op._active(dev) is not None or op._active("default") is not None


def _cmd_check(args) -> int:
    import tensorplay
    from tensorplay import _registry, plugins
    from tensorplay.testing.opcheck import ALL_TESTS, run_checks

    tests = [t.strip() for t in args.test_utils.split(",") if t.strip()] \
        if args.test_utils != "DEFAULT" else ["DEFAULT"]
    bad = [t for t in tests if t != "DEFAULT" and t not in ALL_TESTS]
    if bad:
        print(f"tensorplay check: unknown check(s) {', '.join(bad)}; valid: "
              f"{', '.join(ALL_TESTS)}", file=sys.stderr)
        return 2
    recs = plugins.records()
    if args.plugin:
        want = {_norm(p) for p in args.plugin}
        recs = [r for r in recs if {_norm(r.name), _norm(r.dist)} & want]
        if not recs:
            names = ", ".join(f"{r.dist} ({r.name})" for r in plugins.records()) or "none"
            print(f"tensorplay check: no installed plugin named {', '.join(args.plugin)} "
                  f"(installed: {names})", file=sys.stderr)
            return 1

    devices = plugins.available_devices()
    if args.device:
        chosen = []
        for d in args.device:
            t = d.partition(":")[0].lower()
            if t not in devices:
                ok, why = plugins.device_status(t)
                print(f"tensorplay check: device {d!r} is not available: "
                      f"{why or 'no plugin provides it'} (available: "
                      f"{', '.join(devices) or 'none'})", file=sys.stderr)
                return 1
            chosen.append(d)
        devices = chosen

    # (plugin record, op) pairs to check
    plugin_failures = []
    targets = []
    for r in recs:
        if r.status in ("failed", "incompatible"):
            plugin_failures.append(f"plugin {r.dist} {r.version} ({r.name}) {r.status}: "
                                   f"{type(r.error).__name__}: {r.error}")
            continue
        if r.status != "loaded":
            continue
        for name in r.ops:
            op = _registry._OPS.get(name)
            if op is not None:
                targets.append((r, op))
    if args.ops:
        picked = []
        for want in args.ops:
            hits = [(r, o) for r, o in targets if want in (o.name, o._opname)]
            if not hits:
                avail = ", ".join(o.name for _, o in targets) or "none"
                print(f"tensorplay check: no plugin op named {want!r} (plugin ops: {avail})",
                      file=sys.stderr)
                return 1
            picked.extend(h for h in hits if h not in picked)
        targets = picked

    rows, failures, unchecked = [], [], []
    grouped = {}   # (op, device, message) -> sample labels: one line per distinct failure
    n_checked = 0
    jobs = [(r, o, d) for r, o in targets for d in devices]
    t_all = time.perf_counter()
    for i, (rec, op, dev) in enumerate(jobs, 1):
        row = {"plugin": rec.dist, "op": op.name, "device": dev, "samples": 0,
               "checks": {t: None for t, _ in _CHECK_COLUMNS}, "ms": 0.0, "note": ""}
        rows.append(row)
        prefix = f"[{i}/{len(jobs)}] {op.name} on {dev}"
        if not _has_kernel(op, dev.partition(":")[0]):
            row["note"] = f"no kernel for {dev}"
            unchecked.append(f"{op.name} on {dev}: no kernel for this device")
            _progress(args, f"{prefix}: N/A (no kernel for {dev})")
            continue
        t0 = time.perf_counter()
        try:
            samples = plugins.sample_inputs(op, tensorplay.device(dev))
        except Exception as e:
            msg = (f"{op.name} on {dev}: the sample-input hook of plugin {rec.dist} raised "
                   f"{type(e).__name__}: {e}")
            failures.append(msg)
            row["note"] = "sample inputs raised"
            row["checks"] = {t: "fail" for t, _ in _CHECK_COLUMNS}
            _progress(args, f"{prefix}: FAIL (sample inputs raised)")
            continue
        row["samples"] = len(samples)
        if not samples:
            row["note"] = "no sample inputs"
            unchecked.append(f"{op.name} on {dev}: plugin {rec.dist} provides no sample inputs "
                             f"(implement the tensorplay_sample_inputs hook)")
            _progress(args, f"{prefix}: N/A (no sample inputs)")
            continue
        for k, s in enumerate(samples):
            label = s.name or f"sample {k}"
            res = run_checks(op, s.args, s.kwargs, test_utils=tests, atol=args.atol,
                             rtol=args.rtol)
            n_checked += 1
            for t, r in res.items():
                cur = row["checks"].get(t)
                if r.status == "fail":
                    row["checks"][t] = "fail"
                    grouped.setdefault((op.name, dev, r.message), []).append(label)
                elif r.status == "pass" and cur != "fail":
                    row["checks"][t] = "pass"
                elif r.status == "skip" and cur is None:
                    row["checks"][t] = "skip"
        row["ms"] = (time.perf_counter() - t0) * 1e3
        verdict = "FAIL" if "fail" in row["checks"].values() else "ok"
        _progress(args, f"{prefix}: {len(samples)} sample(s) {verdict} ({row['ms']:.0f} ms)")
    total_ms = (time.perf_counter() - t_all) * 1e3
    for (name, dev, msg), labels in grouped.items():
        failures.append(f"{name} on {dev} [{'; '.join(labels)}]: {msg}")

    if rows:
        _print_table("tensorplay check", ["plugin", "op", "device", "samples"]
                     + [c for _, c in _CHECK_COLUMNS] + ["time (ms)"],
                     [[r["plugin"], r["op"], r["device"], r["samples"] or r["note"] or "0"]
                      + [_MARK[r["checks"][t]] for t, _ in _CHECK_COLUMNS]
                      + [f"{r['ms']:.1f}"] for r in rows])
    if plugin_failures or failures:
        print("\nFailures:")
        for f in plugin_failures + failures:
            print(f"- {f}")
    if not args.device:
        # installed device types that could not be used here: say so, so a green run on cpu is
        # not mistaken for a run on every device
        installed = {d for r in plugins.list_plugins() if r["status"] == "loaded"
                     for d in r["devices"]}
        for d in sorted(installed - set(devices)):
            ok, why = plugins.device_status(d)
            unchecked.append(f"device {d}: not available here ({why})")
    if unchecked:
        print("\nNot checked:")
        for u in unchecked:
            print(f"- {u}")
    nothing = n_checked == 0
    if nothing:
        why = []
        if not devices:
            why.append("no device is available (pip install tensorplay-cpu)")
        if not targets:
            why.append("no installed plugin ships operators" + (
                " matching the filters" if (args.plugin or args.ops) else
                " (pip install an op pack, e.g. tensorplay-example-ops)"))
        elif devices:
            why.append("no op had a kernel and sample inputs on the selected devices")
        print(f"\ntensorplay check: nothing was checked: {'; '.join(why)}.", file=sys.stderr)
    n_fail = len(plugin_failures) + len(failures)
    print(f"\n{n_checked} sample(s) of {len({o.name for _, o in targets})} op(s) on "
          f"{', '.join(devices) or 'no device'}: {n_fail} failure(s) in {total_ms:.0f} ms")
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump({"ok": not (n_fail or nothing), "samples_checked": n_checked,
                       "devices": devices, "rows": rows,
                       "failures": plugin_failures + failures, "not_checked": unchecked},
                      fh, indent=2)
    return 1 if (n_fail or nothing) else 0


def _progress(args, line: str) -> None:
    if not args.quiet:
        print(line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
