"""Forward + backward overhead on 1 element: built-in ops, a custom op, mixed ``requires_grad``.

Each case times ``y = f(...)`` followed by ``y.backward()`` (and resetting ``.grad``) against the
plain math of the same step done directly on tensors that do not require grad: the forward
expression and the backward formula applied to a ready-made seed. Everything else -- recording
the node, the implicit seed, the engine walk, accumulating ``.grad`` -- is overhead. Net figures
are paired per repeat (see ``_harness``); medians of the repeats.

Cases (1-element float32 cpu tensors):

1. ``builtin_mul``: ``(x * 3.0).backward()``; plain math ``x0 * 3.0; seed * 3.0``;
2. ``custom``: an op with ``register_autograd`` (body ``x * 3.0``, backward ``g * 3.0``);
   plain math ``body(x0); bwd(None, seed)``;
3. ``add_both``: ``tp.add(x, w).backward()``, both requiring grad; plain math ``tp.add(x0, w0)``
   (add's backward is the identity);
4. ``add_mixed``: ``tp.add(w, c).backward()``, only ``w`` requiring grad (a weight and an input);
   plain math ``tp.add(w0, c)``: it must cost no more than ``add_both``.

Torch, when importable, runs the same statements in the same process.

Run: ``python benchmarks/bench_backward.py`` (``TENSORPLAY_BENCH_QUICK=1`` for a short run).
Writes ``benchmarks/results/backward.json``.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H
import tensorplay as tp
from tensorplay.library import custom_op

TARGET_NET_US = 5.0


def tp_body(x: tp.Tensor) -> tp.Tensor:
    return x * 3.0


def tp_bwd(ctx, g):
    return g * 3.0


tp_scale = custom_op("tpbench_bw::scale", tp_body, mutates_args=())
tp_scale.register_autograd(tp_bwd)

CASES = {
    "builtin_mul": ("(x * 3.0).backward(); x.grad = None", "x0 * 3.0; seed * 3.0"),
    "custom": ("tp_scale(x).backward(); x.grad = None", "tp_body(x0); tp_bwd(None, seed)"),
    "add_both": ("tp.add(x, w).backward(); x.grad = None; w.grad = None", "tp.add(x0, w0)"),
    "add_mixed": ("tp.add(w, c).backward(); w.grad = None", "tp.add(w0, c)"),
}
# NumPy by hand: the same plain math on NumPy arrays (no autograd at all): the floor
NUMPY_CASES = {
    "builtin_mul": "na * 3.0; nseed * 3.0",
    "add_both": "na + nw",
}
TORCH_CASES = {
    "builtin_mul": ("(tx * 3.0).backward(); tx.grad = None", "tx0 * 3.0; tseed * 3.0"),
    "add_both": ("torch.add(tx, tw).backward(); tx.grad = None; tw.grad = None",
                 "torch.add(tx0, tw0)"),
    "add_mixed": ("torch.add(tw, tc).backward(); tw.grad = None", "torch.add(tw0, tc)"),
}


def _setup(torch):
    g = {"tp": tp, "tp_body": tp_body, "tp_bwd": tp_bwd, "tp_scale": tp_scale}
    g["x"] = tp.tensor([1.0], requires_grad=True)
    g["w"] = tp.tensor([2.0], requires_grad=True)
    g["c"] = tp.tensor([3.0])
    g["x0"], g["w0"] = g["x"].detach(), g["w"].detach()
    g["seed"] = tp.ones_like(g["x0"])
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        g["na"], g["nw"] = np.array([1.0], np.float32), np.array([2.0], np.float32)
        g["nseed"] = np.ones(1, np.float32)
    if torch is not None:
        g["torch"] = torch
        g["tx"] = torch.tensor([1.0], requires_grad=True)
        g["tw"] = torch.tensor([2.0], requires_grad=True)
        g["tc"] = torch.tensor([3.0])
        g["tx0"], g["tw0"] = g["tx"].detach(), g["tw"].detach()
        g["tseed"] = torch.ones_like(g["tx0"])
    return g


def _sanity(g):
    """Each statement computes the gradient it should (we time real work, not a failure)."""
    x, w = g["x"], g["w"]
    (x * 3.0).backward()
    assert x.grad.item() == 3.0
    x.grad = None
    tp_scale(x).backward()
    assert x.grad.item() == 3.0
    x.grad = None
    tp.add(x, w).backward()
    assert x.grad.item() == 1.0 and w.grad.item() == 1.0
    x.grad = w.grad = None
    tp.add(w, g["c"]).backward()
    assert w.grad.item() == 1.0 and g["c"].grad is None
    w.grad = None


def run() -> dict:
    torch, why = H.try_import_torch()
    if torch is not None:
        torch.set_num_threads(1)
    g = _setup(torch)
    _sanity(g)
    stmts = {}
    for name, (op, direct) in CASES.items():
        stmts[f"tp_{name}"], stmts[f"tp_{name}_direct"] = op, direct
    if torch is not None:
        for name, (op, direct) in TORCH_CASES.items():
            stmts[f"torch_{name}"], stmts[f"torch_{name}_direct"] = op, direct
    if "na" in g:
        for name, st in NUMPY_CASES.items():
            stmts[f"numpy_{name}"] = st
    raw = H.paired(stmts, g)
    res = {"torch_missing": why, "raw_us": {k: H.us(v) for k, v in raw.items()}, "net_us": {}}
    for k in list(stmts):
        if not k.endswith("_direct") and not k.startswith("numpy_"):
            res["net_us"][k] = H.us(H.diff(raw[k], raw[k + "_direct"]))
    res["targets"] = {
        f"{k}_net_le_{TARGET_NET_US:g}us": res["net_us"][f"tp_{k}"]["median"] <= TARGET_NET_US
        for k in CASES}
    res["targets"]["mixed_not_slower_than_both"] = (
        res["raw_us"]["tp_add_mixed"]["median"] <= res["raw_us"]["tp_add_both"]["median"])
    res["headline"] = _headline(res)
    return res


def _headline(res) -> list:
    """Rows for ``run_all.py``'s summary: figure, tensorplay, torch, numpy, goal."""
    raw, net = res["raw_us"], res["net_us"]

    def f(d, k):
        v = d.get(k)
        return None if v is None else round(v["median"], 2)
    return [
        {"figure": "x * 3.0 forward+backward, 1 element, net of the plain math (µs)",
         "tensorplay": f(net, "tp_builtin_mul"), "torch": f(net, "torch_builtin_mul"),
         "numpy": None, "goal": f"<= {TARGET_NET_US:g} (issue 14 goal 2)"},
        {"figure": "x * 3.0 forward+backward, 1 element, total (µs; numpy: the plain math)",
         "tensorplay": f(raw, "tp_builtin_mul"), "torch": f(raw, "torch_builtin_mul"),
         "numpy": f(raw, "numpy_builtin_mul"), "goal": ""},
        {"figure": "custom op (register_autograd) forward+backward, net (µs)",
         "tensorplay": f(net, "tp_custom"), "torch": None, "numpy": None,
         "goal": f"<= {TARGET_NET_US:g} (issue 14 goal 2)"},
        {"figure": "tp.add(w, c) (only w requires grad) forward+backward, total (µs)",
         "tensorplay": f(raw, "tp_add_mixed"), "torch": f(raw, "torch_add_mixed"),
         "numpy": f(raw, "numpy_add_both"), "goal": "<= both requiring grad"},
    ]


def report(res) -> None:
    if res["torch_missing"]:
        print(f"\nNOTE: {res['torch_missing']}: torch columns are n/a")
    rows = []
    raw, net = res["raw_us"], res["net_us"]
    for name in CASES:
        t = f"torch_{name}"
        rows.append([name, H.fmt(raw.get(f"tp_{name}")), H.fmt(raw.get(f"tp_{name}_direct")),
                     H.fmt(net.get(f"tp_{name}")), H.fmt(raw.get(t)), H.fmt(net.get(t))])
        rows[-1].append(H.fmt(raw.get(f"numpy_{name}")))
    H.print_table("Forward + backward, 1 element (median of paired runs, IQR in brackets)",
                  ["case", "tensorplay", "plain math", "tp net", "torch", "torch net",
                   "numpy by hand (plain math)"], rows)
    H.print_targets("Targets (issue 14, goal 2)", res["targets"])


def main():
    return H.run_report_write("backward", run, report)


if __name__ == "__main__":
    main()
