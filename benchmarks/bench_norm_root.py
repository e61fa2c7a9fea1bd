"""Per-call cost of the norm family's root (session 48, h-norm48), cpu, one thread.

    python benchmarks/bench_norm_root.py [--rounds 21] NAME=TREE [NAME=TREE ...]

Each TREE is a checkout (or ``git archive`` of one) holding ``tensorplay_core`` and ``plugins``;
every round runs one fresh process per tree, in turn (interleaved), each timing every case (the
fastest of 5 repeats of 1000 calls, after 200 warm-up calls). Prints the median per case and
tree over the rounds, in µs, and ``uptime`` before and after. Cases: ``tp.norm(xg)`` and
``xg.std()`` with history (``xg`` requires grad), ``tp.norm(x)``, ``x.norm(3)``,
``linalg.vector_norm(x)`` and ``x * y`` without, ``tp.norm(xg).backward()``; 8x8 float32.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r'''
import json, timeit
import tensorplay as tp
tp.set_num_threads(1)
x, y = tp.randn(8, 8), tp.randn(8, 8)
xg = tp.randn(8, 8, requires_grad=True)
cases = {
    "tp.norm(xg), grad": lambda: tp.norm(xg),
    "xg.std(), grad": lambda: xg.std(),
    "tp.norm(x)": lambda: tp.norm(x),
    "x.norm(3)": lambda: x.norm(3),
    "linalg.vector_norm(x)": lambda: tp.linalg.vector_norm(x),
    "x * y": lambda: x * y,
    "tp.norm(xg).backward()": lambda: tp.norm(xg).backward(),
}
out = {}
for k, f in cases.items():
    for _ in range(200):
        f()
    out[k] = min(timeit.repeat(f, number=1000, repeat=5)) / 1000 * 1e6
print(json.dumps(out))
'''


def _env(tree):
    p = os.path.join(tree, "plugins")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(tree, "tensorplay_core"),
                                         os.path.join(p, "tensorplay_cpu"),
                                         os.path.join(p, "tensorplay_cuda"),
                                         os.path.join(p, "tensorplay_triton")])
    return env


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("trees", nargs="+", metavar="NAME=TREE")
    a = ap.parse_args(argv)
    trees = [t.split("=", 1) for t in a.trees]
    uptime = lambda: subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()  # noqa: E731
    print("load before:", uptime())
    res = {name: [] for name, _ in trees}
    for _ in range(a.rounds):
        for name, tree in trees:
            r = subprocess.run([sys.executable, "-c", CHILD], env=_env(tree), check=True,
                               capture_output=True, text=True)
            res[name].append(json.loads(r.stdout))
    print("load after:", uptime())
    cases = list(res[trees[0][0]][0])
    print(f"medians of {a.rounds} interleaved rounds, µs")
    print("| case | " + " | ".join(name for name, _ in trees) + " |")
    print("|---|" + "---|" * len(trees))
    for c in cases:
        meds = [statistics.median(r[c] for r in res[name]) for name, _ in trees]
        print(f"| {c} | " + " | ".join(f"{m:.2f}" for m in meds) + " |")


if __name__ == "__main__":
    main()
