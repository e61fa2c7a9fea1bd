"""Custom-op call overhead: tensorplay vs ``torch.library.custom_op``, same run, same bodies.

Three measurements (issue 8, items 1-3), each on 1-element float32 cpu tensors:

1. ``nograd``: ``op(x)`` against the same body called directly (``body(x)``), no grad;
2. ``grad``: ``op(x).backward()`` for an op with ``register_autograd`` and ``x.requires_grad``,
   against the same work done directly: ``body(x0)`` then the backward formula applied to a
   ready-made seed gradient (``bwd(None, seed)``), on tensors that do not require grad. Everything
   else -- recording the node, the seed ``ones``, the engine walk, accumulating ``x.grad`` -- is
   overhead;
3. ``args14``: an op with 14 parameters (4 tensors, two lists, three floats, two bools, three
   ints), body ``a * alpha``, against that body called directly: the overhead must not grow with
   the number of arguments.

The body is the same Python function in the op and in the direct call (``x * 3.0``; backward
``g * 3.0``). Net overhead is paired per repeat (see ``_harness``); the ratio is torch's net
overhead divided by tensorplay's. Torch is optional: without it, torch columns read ``n/a``.

Run: ``python benchmarks/bench_call.py`` (``TENSORPLAY_BENCH_QUICK=1`` for a short run).
Writes ``benchmarks/results/call.json``.
"""


import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H
import tensorplay as tp
from tensorplay.library import custom_op

TARGET_NOGRAD_US = 1.0
TARGET_GRAD_US = 4.0
TARGET_RATIO = 8.0


# ---------------------------------------------------------------------------------------------
# tensorplay ops: the kernel IS the body function, so "direct" runs exactly the op's work.

def tp_body(x: tp.Tensor) -> tp.Tensor:
    return x * 3.0


def tp_body_ag(x: tp.Tensor) -> tp.Tensor:
    return x * 3.0


def tp_bwd(ctx, g):
    return g * 3.0


def tp_body14(a: tp.Tensor, b: tp.Tensor, c: tp.Tensor, d: tp.Tensor, sizes: list[int],
              weights: list[float], alpha: float, beta: float, gamma: float, flag: bool,
              neg: bool, n: int, m: int, k: int) -> tp.Tensor:
    return a * alpha


tp_scale = custom_op("tpbench::scale", tp_body, mutates_args=())
tp_scale_ag = custom_op("tpbench::scale_ag", tp_body_ag, mutates_args=())
tp_scale_ag.register_autograd(tp_bwd)
tp_op14 = custom_op("tpbench::op14", tp_body14, mutates_args=())


def _torch_ops(torch):
    """The same three ops defined with ``torch.library.custom_op``."""
    Tensor = torch.Tensor

    def t_body(x: Tensor) -> Tensor:
        return x * 3.0

    def t_body_ag(x: Tensor) -> Tensor:
        return x * 3.0

    def t_bwd(ctx, g):
        return g * 3.0

    def t_body14(a: Tensor, b: Tensor, c: Tensor, d: Tensor, sizes: list[int],
                 weights: list[float], alpha: float, beta: float, gamma: float, flag: bool,
                 neg: bool, n: int, m: int, k: int) -> Tensor:
        return a * alpha

    t_scale = torch.library.custom_op("tpbench::scale", t_body, mutates_args=())
    t_scale_ag = torch.library.custom_op("tpbench::scale_ag", t_body_ag, mutates_args=())
    t_scale_ag.register_autograd(t_bwd)
    t_op14 = torch.library.custom_op("tpbench::op14", t_body14, mutates_args=())
    for op in (t_scale, t_scale_ag):
        op.register_fake(lambda x: torch.empty_like(x))
    t_op14.register_fake(lambda a, *rest: torch.empty_like(a))
    return {"t_body": t_body, "t_body_ag": t_body_ag, "t_bwd": t_bwd, "t_body14": t_body14,
            "t_scale": t_scale, "t_scale_ag": t_scale_ag, "t_op14": t_op14,
            "t_ops_scale": torch.ops.tpbench.scale.default}


ARGS14 = "{a}, {a}2, {a}3, {a}4, [1, 2], [0.5, 1.5], 2.0, 1.0, 0.5, True, False, 3, 4, 5"


def _setup(torch):
    g = {"tp": tp, "tp_body": tp_body, "tp_body_ag": tp_body_ag, "tp_bwd": tp_bwd,
         "tp_body14": tp_body14, "tp_scale": tp_scale, "tp_scale_ag": tp_scale_ag,
         "tp_op14": tp_op14}
    g["x"] = tp.tensor([1.0])
    g["x2"], g["x3"], g["x4"] = tp.tensor([2.0]), tp.tensor([3.0]), tp.tensor([4.0])
    g["xg"] = tp.tensor([1.0], requires_grad=True)
    g["x0"] = g["xg"].detach()
    g["seed"] = tp.ones_like(g["x0"])
    if torch is not None:
        g.update(_torch_ops(torch))
        g["torch"] = torch
        g["tx"] = torch.tensor([1.0])
        g["tx2"], g["tx3"], g["tx4"] = torch.tensor([2.0]), torch.tensor([3.0]), torch.tensor([4.0])
        g["txg"] = torch.tensor([1.0], requires_grad=True)
        g["tx0"] = g["txg"].detach()
        g["tseed"] = torch.ones_like(g["tx0"])
    return g


def _sanity(g, torch):
    """The ops compute what the bodies compute (so we time real work, not a failure path)."""
    assert tp_scale(g["x"]).item() == 3.0
    assert tp_op14(*eval("[" + ARGS14.format(a="x") + "]", g)).item() == 2.0
    y = tp_scale_ag(g["xg"])
    y.backward()
    assert g["xg"].grad.item() == 3.0, g["xg"].grad
    g["xg"].grad = None
    if torch is not None:
        assert g["t_scale"](g["tx"]).item() == 3.0
        y = g["t_scale_ag"](g["txg"])
        y.backward()
        assert g["txg"].grad.item() == 3.0
        g["txg"].grad = None


def _case(glb, stmts, pairs):
    """Time ``stmts`` interleaved; return summaries and paired net overheads ``pairs``."""
    raw = H.paired(stmts, glb)
    out = {"raw_us": {k: H.us(v) for k, v in raw.items()}, "net_us": {}}
    out["best_net_us"] = {}
    for name, (a, b) in pairs.items():
        if a in raw and b in raw:
            out["net_us"][name] = H.us(H.diff(raw[a], raw[b]))
            # load-robust companion figure: fastest run of the op minus fastest direct run
            out["best_net_us"][name] = (min(raw[a]) - min(raw[b])) * 1e6
    return out


def run() -> dict:
    torch, why = H.try_import_torch()
    if torch is not None:
        torch.set_num_threads(1)
    g = _setup(torch)
    _sanity(g, torch)
    res = {"torch_missing": why, "cases": {}}

    # 1. no grad ---------------------------------------------------------------------------
    st = {"tp_op": "tp_scale(x)", "tp_direct": "tp_body(x)"}
    if torch is not None:
        st.update({"torch_op": "t_scale(tx)", "torch_ops_path": "t_ops_scale(tx)",
                   "torch_direct": "t_body(tx)"})
    res["cases"]["nograd"] = _case(g, st, {"tensorplay": ("tp_op", "tp_direct"),
                                           "torch": ("torch_op", "torch_direct"),
                                           "torch.ops": ("torch_ops_path", "torch_direct")})

    # 2. grad: forward + backward -----------------------------------------------------------
    st = {"tp_op": "tp_scale_ag(xg).backward(); xg.grad = None",
          "tp_direct": "tp_body_ag(x0); tp_bwd(None, seed)",
          "tp_fwd_only": "tp_scale_ag(xg)"}
    if torch is not None:
        st.update({"torch_op": "t_scale_ag(txg).backward(); txg.grad = None",
                   "torch_direct": "t_body_ag(tx0); t_bwd(None, tseed)",
                   "torch_fwd_only": "t_scale_ag(txg)"})
    res["cases"]["grad"] = _case(g, st, {"tensorplay": ("tp_op", "tp_direct"),
                                         "torch": ("torch_op", "torch_direct")})

    # 3. fourteen arguments (no grad), with the 1-argument op in the same interleaved run ----
    st = {"tp_op14": f"tp_op14({ARGS14.format(a='x')})",
          "tp_direct14": f"tp_body14({ARGS14.format(a='x')})",
          "tp_op1": "tp_scale(x)", "tp_direct1": "tp_body(x)"}
    if torch is not None:
        st.update({"torch_op14": f"t_op14({ARGS14.format(a='tx')})",
                   "torch_direct14": f"t_body14({ARGS14.format(a='tx')})",
                   "torch_op1": "t_scale(tx)", "torch_direct1": "t_body(tx)"})
    res["cases"]["args14"] = _case(g, st, {"tensorplay": ("tp_op14", "tp_direct14"),
                                           "tensorplay_1arg": ("tp_op1", "tp_direct1"),
                                           "torch": ("torch_op14", "torch_direct14"),
                                           "torch_1arg": ("torch_op1", "torch_direct1")})
    _verdicts(res)
    n = res["cases"]["nograd"]["net_us"]
    gr = res["cases"]["grad"]["net_us"]
    res["headline"] = [
        {"figure": "custom op call, no grad, 1 element, net of its body (µs)",
         "tensorplay": round(n["tensorplay"]["median"], 2),
         "torch": round(n["torch"]["median"], 2) if "torch" in n else None, "numpy": None,
         "goal": "<= 0.4 (issue 14 goal 5)"},
        {"figure": "custom op forward+backward, 1 element, net (µs)",
         "tensorplay": round(gr["tensorplay"]["median"], 2),
         "torch": round(gr["torch"]["median"], 2) if "torch" in gr else None, "numpy": None,
         "goal": "<= 5 (issue 14 goal 2)"},
    ]
    return res


def _ratio(c, a="torch", b="tensorplay"):
    n = c["net_us"]
    if a not in n or b not in n or n[b]["median"] <= 0:
        return None
    return n[a]["median"] / n[b]["median"]


def _verdicts(res):
    c = res["cases"]
    v = {}
    v["nograd_net_le_1us"] = c["nograd"]["net_us"]["tensorplay"]["median"] <= TARGET_NOGRAD_US
    v["grad_net_le_4us"] = c["grad"]["net_us"]["tensorplay"]["median"] <= TARGET_GRAD_US
    n14 = c["args14"]["net_us"]
    growth = n14["tensorplay"]["median"] - n14["tensorplay_1arg"]["median"]
    res["args14_growth_us"] = growth
    # "flat": 14 arguments stay within the 1 µs budget of the 1-argument call
    v["args14_net_le_1us"] = n14["tensorplay"]["median"] <= TARGET_NOGRAD_US
    for case in ("nograd", "grad", "args14"):
        r = _ratio(c[case])
        c[case]["ratio_torch_over_tensorplay"] = r
        v[f"{case}_ratio_ge_8"] = None if r is None else r >= TARGET_RATIO
    res["targets"] = v


def report(res) -> None:
    c = res["cases"]
    if res["torch_missing"]:
        print(f"\nNOTE: {res['torch_missing']}: torch columns are n/a (install torch==2.13.0 "
              f"in the benchmark venv: nox -s bench)")
    rows = []
    labels = {"nograd": "1. call, no grad", "grad": "2. forward+backward, requires_grad",
              "args14": "3. call with 14 arguments, no grad"}
    for case in ("nograd", "grad", "args14"):
        raw, net = c[case]["raw_us"], c[case]["net_us"]
        a, b = ("tp_op14", "tp_direct14") if case == "args14" else ("tp_op", "tp_direct")
        ta, tb = ("torch_op14", "torch_direct14") if case == "args14" else ("torch_op", "torch_direct")
        r = c[case].get("ratio_torch_over_tensorplay")
        rows.append([labels[case], H.fmt(raw.get(a)), H.fmt(raw.get(b)), H.fmt(net.get("tensorplay")),
                     H.fmt(raw.get(ta)), H.fmt(raw.get(tb)), H.fmt(net.get("torch")),
                     f"{r:.1f}x" if r else "n/a"])
    H.print_table("Custom-op overhead (median of paired runs, IQR in brackets)",
                  ["case", "tensorplay op", "tp direct", "tp net", "torch custom_op",
                   "torch direct", "torch net", "torch net / tp net"], rows)
    extra = []
    n14 = c["args14"]["net_us"]
    extra.append(["tensorplay net, 1 arg vs 14 args (same run)",
                  f"{H.fmt(n14.get('tensorplay_1arg'))} -> {H.fmt(n14.get('tensorplay'))}"])
    if "torch" in n14:
        extra.append(["torch net, 1 arg vs 14 args (same run)",
                      f"{H.fmt(n14.get('torch_1arg'))} -> {H.fmt(n14.get('torch'))}"])
    if "torch.ops" in c["nograd"]["net_us"]:
        extra.append(["torch.ops.tpbench.scale.default net (C++ dispatcher path)",
                      H.fmt(c["nograd"]["net_us"]["torch.ops"])])
    for case in ("nograd", "grad", "args14"):
        b = c[case]["best_net_us"]
        extra.append([f"net from the fastest runs, {case} (tensorplay / torch)",
                      f"{b['tensorplay']:.2f} µs / " +
                      (f"{b['torch']:.2f} µs" if "torch" in b else "n/a")])
    g = c["grad"]["raw_us"]
    extra.append(["forward only, requires_grad (tensorplay / torch)",
                  f"{H.fmt(g.get('tp_fwd_only'))} / {H.fmt(g.get('torch_fwd_only'))}"])
    H.print_table("Details", ["what", "figure"], extra)
    H.print_targets("Targets (issue 8)", res["targets"])


def main():
    return H.run_report_write("call", run, report)


if __name__ == "__main__":
    main()
