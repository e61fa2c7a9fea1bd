"""``import tensorplay`` with 0, 1 and 5 op packs installed: packs loaded at import (no
``tensorplay.namespaces`` metadata, as every pack was before issue 30) against packs imported on
first use (the same packs declaring their namespaces), in one run.

The packs are throw-away distributions written to a temporary directory put on ``PYTHONPATH``
(a ``*.dist-info`` with ``entry_points.txt`` and the module): nothing is installed into the
environment. Each follows the op-pack guide: a cheap plugin module whose
``tensorplay_register_ops`` hook imports the pack's ops module, which imports what its kernels
need at its top -- NumPy for four of them, Triton for one (``pack0``; NumPy instead when Triton
is not installed, said in the output). "1 pack" is the Triton pack.

Every sample is a fresh interpreter timing ``import tensorplay`` with ``time.perf_counter``
(bytecode caching on, in a temporary ``PYTHONPYCACHEPREFIX``); the configurations are
interleaved round by round, so drifts of the machine hit all alike. The op packs of the
environment itself (``tensorplay-example-ops``) are blocked with ``TENSORPLAY_DISABLE_PLUGINS``
in every configuration (a blocked plugin is never imported), so "0 packs" has none; the device
plugins load as always. It also times ``import tensorplay`` + the first call of one op of
``pack1`` (first use: the lazy pack's import moves there).

Prints medians (IQR) in ms and the ratios to "0 packs"; the goal is "5 packs, first use" within
10% of "0 packs". Usage: ``python benchmarks/bench_lazy_packs.py [-n ROUNDS]`` (default 21;
``TENSORPLAY_BENCH_QUICK=1``: 15). Results in ``benchmarks/results/lazy_packs.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _harness import QUICK, machine_info, print_table, summary, write_json

PLUGIN = '''
import pluggy
hookimpl = pluggy.HookimplMarker("tensorplay")
TENSORPLAY_API_VERSION = 1

@hookimpl
def tensorplay_register_ops(registrar):
    from . import ops  # noqa: F401  (defines the ops)
'''

OPS = '''
import {heavy}  # noqa: F401  (what the pack's kernels use)
import tensorplay as tp


@tp.library.custom_op("{ns}::scale", mutates_args=())
def scale(x: tp.Tensor, alpha: float = 2.0) -> tp.Tensor:
    return x * alpha


@scale.register_fake
def _(x, alpha=2.0):
    return x.new_empty(x.shape)
'''

PROBE = r'''
import sys, time
t0 = time.perf_counter()
import tensorplay as tp
t1 = time.perf_counter()
if "--use" in sys.argv:
    tp.ops.pack1.scale(tp.ones(2))
t2 = time.perf_counter()
print(f"{(t1 - t0) * 1e3:.3f} {(t2 - t0) * 1e3:.3f}")
'''


def _write_pack(root: str, i: int, heavy: str, lazy: bool) -> None:
    """Distribution ``bench-pack<i>`` (module ``pack<i>``, namespace ``pack<i>``) under
    ``root``."""
    name = f"pack{i}"
    pkg = os.path.join(root, name)
    os.makedirs(pkg, exist_ok=True)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write(PLUGIN)
    with open(os.path.join(pkg, "ops.py"), "w") as f:
        f.write(OPS.format(heavy=heavy, ns=name))
    info = os.path.join(root, f"bench_pack{i}-1.0.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: bench-pack{i}\nVersion: 1.0\n")
    eps = f"[tensorplay.plugins]\n{name} = {name}\n"
    if lazy:
        eps += f"\n[tensorplay.namespaces]\n{name} = {name}\n"
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write(eps)


def _configs(tmp: str, heavy0: str) -> dict:
    """name -> (PYTHONPATH entry or None, use the op?)."""
    out: dict = {"0 packs": (None, False)}
    for n in (1, 5):
        for lazy in (False, True):
            root = os.path.join(tmp, f"{n}-{'lazy' if lazy else 'eager'}")
            for i in range(n):
                _write_pack(root, i, heavy0 if i == 0 else "numpy", lazy)
            how = "first use" if lazy else "at import"
            out[f"{n} pack{'s' if n > 1 else ''}, {how}"] = (root, False)
    out["5 packs, at import + 1st op"] = (os.path.join(tmp, "5-eager"), True)
    out["5 packs, first use + 1st op"] = (os.path.join(tmp, "5-lazy"), True)
    return out


def _run(path, use: bool, cache: str) -> tuple[float, float]:
    env = dict(os.environ)
    for k in ("TENSORPLAY_PLUGINS", "TENSORPLAY_STRICT_PLUGINS", "TENSORPLAY_TRACE_PLUGINS",
              "PYTHONDONTWRITEBYTECODE"):
        env.pop(k, None)
    env["TENSORPLAY_DISABLE_PLUGINS"] = "tensorplay-example-ops"
    env["PYTHONPYCACHEPREFIX"] = cache
    if path:
        env["PYTHONPATH"] = os.pathsep.join([path] + [p for p in [env.get("PYTHONPATH")] if p])
    argv = [sys.executable, "-c", PROBE] + (["--use"] if use else [])
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    if p.returncode != 0:
        raise SystemExit(f"probe failed ({path}):\n{p.stderr}")
    a, b = p.stdout.split()[-2:]
    return float(a), float(b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--rounds", type=int, default=15 if QUICK else 21)
    args = ap.parse_args()
    heavy0 = "triton" if importlib.util.find_spec("triton") else "numpy"
    with tempfile.TemporaryDirectory(prefix="tp-bench-packs-") as tmp:
        cache = os.path.join(tmp, "pycache")
        configs = _configs(tmp, heavy0)
        for path, use in configs.values():          # warm the bytecode caches
            _run(path, use, cache)
        samples: dict = {k: [] for k in configs}
        for _ in range(args.rounds):
            for name, (path, use) in configs.items():
                imp, first = _run(path, use, cache)
                samples[name].append(first if use else imp)
    base = statistics.median(samples["0 packs"])
    rows, out = [], {}
    for name, xs in samples.items():
        s = summary(xs)
        ratio = s["median"] / base
        rows.append([name, f"{s['median']:.1f}", f"{s['iqr']:.1f}", f"{s['min']:.1f}",
                     f"{ratio:.2f}"])
        out[name] = dict(s, ratio_to_0=ratio)
    print(f"pack0 imports {heavy0}; packs 1-4 import numpy; {args.rounds} fresh processes each")
    print_table("import tensorplay with N op packs installed (ms)",
                ["configuration", "median", "IQR", "min", "ratio to 0 packs"], rows)
    goal = out["5 packs, first use"]["ratio_to_0"]
    print(f"\n5 packs imported on first use / 0 packs: {goal:.3f} (goal: <= 1.10) -> "
          f"{'met' if goal <= 1.10 else 'NOT met'}")
    print(f"5 packs loaded at import / 0 packs: {out['5 packs, at import']['ratio_to_0']:.3f}")
    headline = [{"figure": "import tensorplay, 5 op packs installed / none (ratio of medians)",
                 "tensorplay": round(goal, 3), "torch": None, "numpy": None,
                 "goal": "<= 1.10 (issue 30 item 3; packs loaded at import: "
                         f"{out['5 packs, at import']['ratio_to_0']:.2f})"}]
    path = write_json("lazy_packs", {"heavy_pack0": heavy0, "rounds": args.rounds,
                                     "figures_ms": out, "goal_ratio": goal,
                                     "headline": headline, "machine": machine_info()})
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
