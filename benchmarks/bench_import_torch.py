"""``import tensorplay`` (every installed plugin) against ``import torch``, fresh processes.

Issue 8, item 4. Each round starts three fresh interpreters, interleaved so that drifts of the
machine hit all alike: ``python -c pass`` (the floor: interpreter, site, .pth files),
``python -c "import tensorplay"`` and ``python -c "import torch"``. Prints medians (IQR), the
times net of the floor, and the ratio torch / tensorplay. ``bench_import.py`` (a colleague's)
breaks the tensorplay side down further (core alone, per plugin).

Usage: ``python benchmarks/bench_import_torch.py [-n ROUNDS]``; writes
``benchmarks/results/import_torch.json``. Without torch the torch row reads "not available".
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H

CMDS = {"python -c pass": "pass",
        "import tensorplay": "import tensorplay",
        "import torch": "import torch"}


def _once(code: str, env=None) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def _env(tmp: str) -> dict:
    """What users get: bytecode cached (a sandbox may set PYTHONDONTWRITEBYTECODE=1, which would
    recompile tensorplay's editable sources on every run while torch's site-packages have their
    .pyc from installation); the cache goes to a temporary folder, not the tree."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
    return env


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", "--rounds", type=int, default=5 if H.QUICK else 21)
    a = ap.parse_args(argv)
    torch, why = H.try_import_torch()
    cmds = dict(CMDS)
    if torch is None:
        del cmds["import torch"]
    # what "every plugin" means here: the plugins import tensorplay loaded in this environment
    import tensorplay
    plugins = [p.get("name") if isinstance(p, dict) else str(p) for p in tensorplay.plugins.list()]
    env_heavy = subprocess.run(
        [sys.executable, "-c", ("import sys, tensorplay; print(','.join(m for m in ('numpy', "
                                "'cupy', 'triton', 'torch') if m in sys.modules))")],
        check=True, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        env = _env(tmp)
        for code in cmds.values():   # warm the file-system and bytecode caches
            _once(code, env)
        raw = {k: [] for k in cmds}
        for _ in range(a.rounds):
            for k, code in cmds.items():
                raw[k].append(_once(code, env))
    floor = raw["python -c pass"]
    res = {"rounds": a.rounds, "plugins": plugins, "heavy_modules_imported_by_tensorplay":
           env_heavy.split(",") if env_heavy else [], "torch_status": why or "ok",
           "ms": {k: H.summary(v, 1e3) for k, v in raw.items()},
           "net_ms": {k: H.summary(H.diff(v, floor), 1e3) for k, v in raw.items()
                      if k != "python -c pass"}}
    n = res["net_ms"]
    res["ratio_torch_over_tensorplay_net"] = (
        n["import torch"]["median"] / n["import tensorplay"]["median"]
        if "import torch" in n and n["import tensorplay"]["median"] > 0 else None)
    rows = [[k, H.fmt(res["ms"][k], "ms", 1), H.fmt(n.get(k), "ms", 1) if k in n else "(floor)"]
            for k in CMDS if k in res["ms"]]
    if "import torch" not in res["ms"]:
        rows.append(["import torch", f"not available: {why}", ""])
    r = res["ratio_torch_over_tensorplay_net"]
    rows.append(["torch / tensorplay (net)", f"{r:.1f}x" if r else "n/a", ""])
    H.print_table(f"Import time, fresh processes ({a.rounds} interleaved rounds; plugins: "
                  f"{', '.join(plugins) or 'none'})", ["command", "wall time", "net of floor"],
                  rows)
    print(f"heavy modules imported by `import tensorplay`: {env_heavy or 'none'}")
    print(f"\nwrote {H.write_json('import_torch', res)}")
    return res


if __name__ == "__main__":
    main()
