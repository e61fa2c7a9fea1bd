"""One MLP training step, tensorplay vs torch vs NumPy by hand, same process, same run.

The model (issue 14, goal 1): input 256 -> ``matmul + bias`` -> ``relu`` -> a custom layer norm
(an op defined with ``custom_op`` + ``register_autograd``, weight and bias) -> ``matmul + bias``
-> 10 classes; loss: softmax cross-entropy written with built-in ops
(``-(log_softmax(logits, -1) * onehot).sum() / batch``); then ``loss.backward()``, an SGD step
(``p.sub_(p.grad, alpha=lr)`` under ``no_grad``) and ``zero_grad`` (``p.grad = None``, torch's
default ``set_to_none``). float32, single thread, batch 1 and 64.

* tensorplay and torch run the *same* ops: the model is written once and run with each
  library's own ops; the layer norm is a ``custom_op`` with ``register_autograd`` in both
  (``tensorplay.library`` / ``torch.library``);
* NumPy by hand: the same forward and the hand-derived backward on NumPy arrays (no autograd):
  a floor for what the math costs with NumPy kernels.

Every step is checked once against the NumPy step (loss and updated weights) before timing.
Figures: median (IQR) of interleaved runs (``_harness.paired``), µs per step.

Run: ``python benchmarks/bench_train.py`` (``TENSORPLAY_BENCH_QUICK=1`` for a short run).
Writes ``benchmarks/results/train.json``.
"""

import os
import sys

# single thread for every library (NumPy's BLAS reads these when it loads; torch is set below)
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H
import tensorplay as tp
from tensorplay.library import custom_op

D_IN, HIDDEN, CLASSES = 256, 256, 10
LR = 0.01
EPS = 1e-5
BATCHES = (1, 64)


# ---------------------------------------------------------------------------------------------
# the model, written once for tensorplay and torch: ``lib`` is either module, so each library
# runs its own ops (the layer norm a custom op of its own)

def _layer_norm_formula(lib):
    """The layer norm's body (annotated with ``lib.Tensor``, for the custom op's schema), its
    ``setup_context`` and its backward formula, in ``lib``'s ops."""
    T = lib.Tensor

    def body(x: T, w: T, b: T) -> T:
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        r = lib.rsqrt((xc * xc).mean(-1, keepdim=True) + EPS)
        return xc * r * w + b

    def setup(ctx, inputs, output):
        x, w, _ = inputs
        ctx.save_for_backward(x, w)

    def backward(ctx, g):
        x, w = ctx.saved_tensors
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        r = lib.rsqrt((xc * xc).mean(-1, keepdim=True) + EPS)
        xh = xc * r
        gx = g * w
        dx = r * (gx - gx.mean(-1, keepdim=True) - xh * (gx * xh).mean(-1, keepdim=True))
        return dx, (g * xh).sum(0), g.sum(0)

    return body, setup, backward


def _make_loss(lib, layer_norm):
    """The forward and the loss in ``lib``'s ops (positional tensors: the compiled variants
    take the exact-signature fast path of their library's compiler)."""
    def forward_loss(w1, b1, g, beta, w2, b2, x, onehot):
        h = layer_norm(lib.relu(x @ w1 + b1), g, beta)
        logits = h @ w2 + b2
        return -(lib.log_softmax(logits, -1) * onehot).sum() / x.shape[0]

    return forward_loss


def _make_step(lib, layer_norm, compile_fn=None):
    """One training step (forward, loss, backward, SGD, zero_grad) in ``lib``'s ops; with
    ``compile_fn`` (``tensorplay.compile``, ``torch.compile``) the forward and the loss are
    compiled, backward/SGD/zero_grad are the eager step's."""
    loss_of = _make_loss(lib, layer_norm)
    if compile_fn is not None:
        loss_of = compile_fn(loss_of)

    def step(params, x, onehot):
        loss = loss_of(*params, x, onehot)
        loss.backward()
        with lib.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=LR)
        for p in params:
            p.grad = None
        return loss

    return step


_body, _setup, _backward = _layer_norm_formula(tp)
tp_layer_norm = custom_op("tpbench_train::layer_norm", _body, mutates_args=())
tp_layer_norm.register_autograd(_backward, setup_context=_setup)
tp_step = _make_step(tp, tp_layer_norm)
# the forward and loss through tensorplay.compile: with the parameters requiring grad the
# graph runs as one autograd node (AOT autograd, tensorplay/_joint.py)
tpc_step = _make_step(tp, tp_layer_norm, tp.compile)


def _torch_defs(torch):
    body, setup, backward = _layer_norm_formula(torch)
    ln = torch.library.custom_op("tpbench_train::layer_norm", body, mutates_args=())
    ln.register_fake(lambda x, w, b: torch.empty_like(x))
    ln.register_autograd(backward, setup_context=setup)
    return _make_step(torch, ln)


def _torch_compiled(torch):
    """torch.compile's step (forward and loss compiled), or (None, why) when it cannot run
    here (inductor needs a C++ compiler for cpu code)."""
    import shutil
    if os.environ.get("TENSORPLAY_BENCH_TORCH_COMPILE", "1") == "0":
        return None, "disabled (TENSORPLAY_BENCH_TORCH_COMPILE=0)"
    if shutil.which(os.environ.get("CXX", "c++")) is None and shutil.which("g++") is None:
        return None, "no C++ compiler for inductor's cpu code"
    body, setup, backward = _layer_norm_formula(torch)
    ln = torch.library.custom_op("tpbench_train::layer_norm_c", body, mutates_args=())
    ln.register_fake(lambda x, w, b: torch.empty_like(x))
    ln.register_autograd(backward, setup_context=setup)
    return _make_step(torch, ln, torch.compile), None


# ---------------------------------------------------------------------------------------------
# NumPy by hand: forward, hand-derived backward, SGD

def np_step(np, params, x, onehot):
    w1, b1, g, beta, w2, b2 = params
    n = x.shape[0]
    z1 = x @ w1 + b1
    a = np.maximum(z1, 0)
    mu = a.mean(-1, keepdims=True)
    xc = a - mu
    r = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + EPS)
    xh = xc * r
    h = xh * g + beta
    logits = h @ w2 + b2
    m = logits.max(-1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(-1, keepdims=True)
    logp = logits - m - np.log(s)
    loss = -(logp * onehot).sum() / n
    # backward
    dlogits = (e / s - onehot) / n
    dw2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    dh = dlogits @ w2.T
    dg = (dh * xh).sum(0)
    dbeta = dh.sum(0)
    gx = dh * g
    da = r * (gx - gx.mean(-1, keepdims=True) - xh * (gx * xh).mean(-1, keepdims=True))
    dz1 = da * (z1 > 0)
    dw1 = x.T @ dz1
    db1 = dz1.sum(0)
    for p, d in zip(params, (dw1, db1, dg, dbeta, dw2, db2)):
        p -= LR * d
    return loss


# ---------------------------------------------------------------------------------------------

def _init(np, batch):
    rng = np.random.default_rng(batch)
    f = np.float32
    params = [rng.standard_normal((D_IN, HIDDEN)).astype(f) * f(0.05),
              rng.standard_normal(HIDDEN).astype(f) * f(0.05),
              np.ones(HIDDEN, f), np.zeros(HIDDEN, f),
              rng.standard_normal((HIDDEN, CLASSES)).astype(f) * f(0.05),
              np.zeros(CLASSES, f)]
    x = rng.standard_normal((batch, D_IN)).astype(f)
    onehot = np.zeros((batch, CLASSES), f)
    onehot[np.arange(batch), rng.integers(0, CLASSES, batch)] = 1
    return params, x, onehot


def _check(np, torch, t_steps, batch):
    """Each library's step gives NumPy's loss and updated weights (we time the right work).
    Every step runs three times from the same start (a compiled one captures, validates, then
    takes its fast path) and is compared with three NumPy steps."""
    params, x, oh = _init(np, batch)
    ref = [p.copy() for p in params]
    ref_losses = [np_step(np, ref, x, oh) for _ in range(3)]

    def same(step, lib):
        ps = [lib.tensor(p, requires_grad=True) for p in params]
        for want in ref_losses:
            loss = step(ps, lib.tensor(x), lib.tensor(oh))
            assert abs(loss.item() - want) < 1e-4 * max(1.0, abs(want)), (loss.item(), want)
        for a, b in zip(ps, ref):
            assert np.allclose(a.detach().numpy(), b, atol=1e-5, rtol=1e-4)
            assert a.grad is None

    same(tp_step, tp)
    same(tpc_step, tp)
    if torch is not None:
        for step in t_steps:
            same(step, torch)


def run() -> dict:
    import numpy as np
    torch, why = H.try_import_torch()
    t_step = tc_step = None
    tc_why = why
    if torch is not None:
        torch.set_num_threads(1)
        t_step = _torch_defs(torch)
        tc_step, tc_why = _torch_compiled(torch)
    g = {"tp_step": tp_step, "tpc_step": tpc_step, "np_step": np_step, "t_step": t_step,
         "tc_step": tc_step, "np": np}
    stmts = {}
    for b in BATCHES:
        t_steps = [t_step]
        if tc_step is not None:
            try:
                _check(np, torch, [tc_step], b)
                t_steps.append(tc_step)
            except Exception as e:  # noqa: BLE001 - inductor failing here is a note, not an error
                tc_step, tc_why = None, f"torch.compile failed: {type(e).__name__}: {e}"[:300]
        _check(np, torch, t_steps[:1], b)
        params, x, oh = _init(np, b)
        for pre, lib in (("tp", tp), ("tpc", tp)):
            g[f"{pre}_p{b}"] = [lib.tensor(p, requires_grad=True) for p in params]
        g[f"tp_x{b}"], g[f"tp_oh{b}"] = tp.tensor(x), tp.tensor(oh)
        g[f"np_p{b}"] = [p.copy() for p in params]
        g[f"np_x{b}"], g[f"np_oh{b}"] = x, oh
        stmts[f"tensorplay_b{b}"] = f"tp_step(tp_p{b}, tp_x{b}, tp_oh{b})"
        stmts[f"tensorplay_compile_b{b}"] = f"tpc_step(tpc_p{b}, tp_x{b}, tp_oh{b})"
        stmts[f"numpy_b{b}"] = f"np_step(np, np_p{b}, np_x{b}, np_oh{b})"
        if torch is not None:
            for pre in ("t", "tc"):
                g[f"{pre}_p{b}"] = [torch.tensor(p, requires_grad=True) for p in params]
            g[f"t_x{b}"], g[f"t_oh{b}"] = torch.tensor(x), torch.tensor(oh)
            stmts[f"torch_b{b}"] = f"t_step(t_p{b}, t_x{b}, t_oh{b})"
            if tc_step is not None:
                stmts[f"torch_compile_b{b}"] = f"tc_step(tc_p{b}, t_x{b}, t_oh{b})"
    raw = H.paired(stmts, g, repeat=9 if H.QUICK else 31, target_s=0.01 if H.QUICK else 0.03)
    res = {"torch_missing": why, "torch_compile_missing": tc_why if tc_step is None else None,
           "raw_us": {k: H.us(v) for k, v in raw.items()}, "targets": {}}
    med = {k: v["median"] for k, v in res["raw_us"].items()}
    for b in BATCHES:
        if torch is not None:
            r = H.diff(raw[f"tensorplay_b{b}"], raw[f"torch_b{b}"])
            res[f"ratio_b{b}"] = med[f"tensorplay_b{b}"] / med[f"torch_b{b}"]
            res[f"ratio_compile_b{b}"] = med[f"tensorplay_compile_b{b}"] / med[f"torch_b{b}"]
            res["targets"][f"batch{b}_not_slower_than_torch"] = H.us(r)["median"] <= 0
            res["targets"][f"batch{b}_compiled_at_most_0.75x_torch"] = \
                res[f"ratio_compile_b{b}"] <= 0.75
    res["headline"] = [
        {"figure": f"MLP training step, batch {b} (µs)",
         "tensorplay": round(med[f"tensorplay_b{b}"], 1),
         "tensorplay.compile": round(med[f"tensorplay_compile_b{b}"], 1),
         "torch": (round(med[f"torch_b{b}"], 1) if torch is not None else None),
         "torch.compile": (round(med[f"torch_compile_b{b}"], 1)
                           if f"torch_compile_b{b}" in med else None),
         "numpy": round(med[f"numpy_b{b}"], 1),
         "goal": "<= torch (issue 14 goal 1); compiled <= 0.75x torch (issue 32 item 6)"}
        for b in BATCHES]
    return res


def report(res) -> None:
    if res["torch_missing"]:
        print(f"\nNOTE: {res['torch_missing']}: torch columns are n/a")
    elif res.get("torch_compile_missing"):
        print(f"\nNOTE: torch.compile column n/a: {res['torch_compile_missing']}")
    raw = res["raw_us"]
    rows = []
    for b in BATCHES:
        r = res.get(f"ratio_b{b}")
        rc = res.get(f"ratio_compile_b{b}")
        rows.append([f"batch {b}", H.fmt(raw[f"tensorplay_b{b}"], digits=1),
                     H.fmt(raw[f"tensorplay_compile_b{b}"], digits=1),
                     H.fmt(raw.get(f"torch_b{b}"), digits=1),
                     H.fmt(raw.get(f"torch_compile_b{b}"), digits=1),
                     H.fmt(raw[f"numpy_b{b}"], digits=1), f"{r:.2f}x" if r else "n/a",
                     f"{rc:.2f}x" if rc else "n/a"])
    H.print_table("MLP training step (256 -> 256 -> layer norm -> 10, SGD), µs per step, "
                  "median (IQR)", ["batch", "tensorplay", "tensorplay.compile", "torch",
                                   "torch.compile", "numpy by hand", "tensorplay / torch",
                                   "compiled / torch"], rows)
    H.print_targets("Targets (issue 14 goal 1; issue 32 item 6)", res["targets"])


def main():
    return H.run_report_write("train", run, report)


if __name__ == "__main__":
    main()
