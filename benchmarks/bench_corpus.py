"""The kernel corpus on a GPU: each op as a tensorplay triton_op against the library's torch path.

Run on a machine with a CUDA GPU, the cuda and triton plugins installed, torch optional::

    python benchmarks/bench_corpus.py [--scale 16] [--iters 20] [--rounds 5] [--only liger.]
                                      [--budget 270]

The cases are ``tests/corpus`` (Liger-Kernel, Unsloth, FlagGems, flash-linear-attention and Cut Cross-Entropy kernels as
their libraries wrote them; see tests/test_corpus.py: those on PyPI come from the pinned wheels, which a machine without
network finds in ``$TENSORPLAY_CORPUS_WHEELS`` or ``.corpus-wheels/``; a library whose wheel is
missing is a row ``skip: <why>``). Each runs two ways on its inputs (float32; Cut Cross-Entropy's embeddings
float16 or bfloat16, as its backward requires) ``--scale`` times the cpu test sizes:

* tensorplay: the corpus's ``triton_op`` (``wrap_triton`` launches, ``register_autograd``);
* torch: the same host code run on torch tensors the way the library runs it: a
  ``torch.autograd.Function`` whose forward/backward call the host functions, raw
  ``kernel[grid](...)`` launches, no dispatcher. The host code is the corpus's (upstream's, with
  the ``# CHANGED`` lines: an extra clone where a kernel writes into its inputs), so the ratio is
  tensorplay's cost around the same kernels.

Timed: ``iters`` back-to-back calls between two device synchronisations, per call, the median of
``rounds`` interleaved rounds. ``fwd``: the forward under no_grad; ``fwd+bwd``: the forward with
grad recorded, then ``autograd.backward`` of the compared outputs with preallocated gradients
(``.grad`` reset first). ``check`` compares tensorplay's outputs and gradients with torch's
(relative error); a case that raises is a row ``skip: <why>``, never a crash. ``--budget`` seconds
caps the run (remaining rows are skipped with the reason). Exits 2 without a CUDA GPU, 1 if a
check fails.

``--device cpu`` is a self-check of this script through Triton's interpreter (small sizes; the
reference column then runs the same shim on tensorplay, as torch is not needed there).
"""

from __future__ import annotations

import argparse
import inspect
import pathlib
import re
import statistics
import sys
import time
import types

_TESTS = pathlib.Path(__file__).resolve().parent.parent / "tests"


def _parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=int, default=16, help="size multiplier over the cpu test sizes")
    p.add_argument("--iters", type=int, default=20, help="calls per timed round")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median reported)")
    p.add_argument("--only", default="", help="run the cases whose id contains this text")
    p.add_argument("--budget", type=float, default=270.0, help="seconds for the whole run")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (self-check)")
    return p.parse_args()


# ------------------------------------------------------------------------------------------------
# The reference path: the corpus host code on another framework's tensors

class _RefOp:
    """What ``triton_op`` returns on the reference side: the host function itself, made
    differentiable by a ``torch.autograd.Function`` once ``register_autograd`` is called."""

    def __init__(self, autograd_function, fn):
        self._Function = autograd_function
        self.fn = fn
        self.sig = inspect.signature(fn)
        self.apply = None

    def register_fake(self, fake):
        return fake

    def register_autograd(self, backward, setup_context=None):
        fn = self.fn

        class _Fn(self._Function):
            @staticmethod
            def forward(ctx, *args):
                out = fn(*args)
                if setup_context is not None:
                    setup_context(ctx, args, out)
                return out

            @staticmethod
            def backward(ctx, *grads):
                return backward(ctx, *grads)

        self.apply = _Fn.apply

    def __call__(self, *args, **kwargs):
        bound = self.sig.bind(*args, **kwargs)
        bound.apply_defaults()
        args = tuple(bound.arguments.values())
        return self.fn(*args) if self.apply is None else self.apply(*args)


def _reference_ops(framework, library, wrap=lambda kernel: kernel):
    """``tests/corpus/<library>/ops.py`` executed with ``tensorplay`` bound to ``framework``
    (torch), ``triton_op`` to :class:`_RefOp` and ``wrap_triton`` to ``wrap`` (the identity: raw
    launches; the cpu self-check passes tensorplay's, as raw launches on cpu tensors are refused).
    The kernels are the same objects as the tensorplay side's (one compilation cache)."""
    path = _TESTS / "corpus" / library / "ops.py"
    src = path.read_text()
    fw = framework.__name__
    replacements = {
        r"^import tensorplay$": f"import {fw} as tensorplay",
        r"^from tensorplay import Tensor$": f"from {fw} import Tensor",
        r"^from tensorplay\.library import triton_op, wrap_triton$": "",
    }
    for pat, new in replacements.items():
        src, n = re.subn(pat, new, src, flags=re.MULTILINE)
        if n != 1:
            raise RuntimeError(f"{path}: expected one line matching {pat!r}")
    name = f"corpus.{library}._reference_ops"
    mod = types.ModuleType(name)
    mod.__file__ = str(path)
    mod.__package__ = f"corpus.{library}"

    def triton_op(opname, fn=None, /, *, mutates_args, schema=None):
        make = lambda f: _RefOp(framework.autograd.Function, f)
        return make if fn is None else make(fn)

    mod.triton_op = triton_op
    mod.wrap_triton = wrap
    sys.modules[name] = mod
    exec(compile(src, str(path), "exec"), mod.__dict__)  # noqa: S102 - our own file, see above
    return mod


def _op_name(case, ops_module):
    for name, obj in vars(ops_module).items():
        if obj is case.op:
            return name
    raise LookupError(f"{case.id}: op not found in its library's ops module")


# ------------------------------------------------------------------------------------------------

def _median_call_s(fn, sync, iters, rounds_out, i):
    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    rounds_out[i].append((time.perf_counter() - t0) / iters)


def _rel_err(a, b):
    import numpy as np
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-12)) if a.size else 0.0


class _Side:
    """One framework's run of a case: inputs, the forward, the forward+backward step."""

    def __init__(self, fw, op, case, np_args, dys, device):
        import numpy as np
        self.fw, self.op, self.case = fw, op, case

        def conv(a, grad):
            if not isinstance(a, np.ndarray):
                return a
            # (np.ascontiguousarray makes a 0-d array 1-d: liger.poly_norm has 0-d inputs)
            t = fw.tensor(np.array(a, order="C", copy=True), device=device)
            return t.requires_grad_() if grad else t

        self.args = [conv(a, i in case.grad) for i, a in enumerate(np_args)]
        self.leaves = [self.args[i] for i in case.grad]
        self.dys = [fw.tensor(d, device=device) for d in dys]

    def outs(self, result):
        return (result if isinstance(result, tuple) else (result,))[: self.case.n_out]

    def fwd(self):
        with self.fw.no_grad():
            return self.op(*self.args)

    def step(self):
        for t in self.leaves:
            t.grad = None
        self.fw.autograd.backward(list(self.outs(self.op(*self.args))), self.dys)

    def results(self):
        self.step()
        outs = self.outs(self.fwd())
        return [o.detach().cpu().numpy() for o in outs] + [t.grad.detach().cpu().numpy() for t in self.leaves]


def main() -> int:
    args = _parse()
    import numpy as np
    import tensorplay
    on_cpu = args.device == "cpu"
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import _harness
    code = _harness.triton_device_or_exit_code("bench_corpus", args.device)
    if code is not None:
        return code
    sys.path.insert(0, str(_TESTS))
    from corpus import all_cases, unavailable

    ref_fw, ref_label, ref_wrap = None, "torch", (lambda kernel: kernel)
    if on_cpu:
        ref_fw, ref_label, ref_wrap = tensorplay, "shim", tensorplay.library.wrap_triton
    else:
        try:
            import torch
            ref_fw = torch if torch.cuda.is_available() else None
        except ImportError:
            ref_fw = None
    if ref_fw is None:
        print("bench_corpus: torch with cuda is not importable; the torch columns are empty",
              file=sys.stderr)

    syncs = []
    if not on_cpu:
        try:
            import cupy
            syncs.append(lambda: cupy.cuda.Device().synchronize())
        except ImportError:
            pass
        if ref_fw is not None:
            syncs.append(ref_fw.cuda.synchronize)

    def sync():
        for s in syncs:
            s()

    scale = 1 if on_cpu else args.scale
    cases = [c for c in all_cases() if args.only in c.id]
    ref_ops = {}
    rows, failed = [], False
    for lib, why in unavailable().items():     # its pinned wheel could not be had
        if args.only.split(".")[0] in lib:
            rows.append((f"{lib}.*", None, f"skip: {why}"[:300]))
    start = time.perf_counter()
    for case in cases:
        if time.perf_counter() - start > args.budget:
            rows.append((case.id, None, f"skip: over the --budget of {args.budget:.0f} s"))
            continue
        if on_cpu and case.isolate and any(g.present for g in case.gaps):
            rows.append((case.id, None, "skip: on cpu, " + "; ".join(g.reason for g in case.gaps
                                                                     if g.present)))
            continue
        try:
            library = case.id.split(".")[0]
            rng = np.random.default_rng(0)
            np_args = case.inputs(rng, scale)
            probe = _Side(tensorplay, case.op, case, np_args, [], args.device)
            shapes = [tuple(o.shape) for o in probe.outs(probe.fwd())]   # the output gradients' shapes
            dys = [rng.standard_normal(s).astype(np.float32) for s in shapes]
            sides = [_Side(tensorplay, case.op, case, np_args, dys, args.device)]
            if ref_fw is not None:
                if library not in ref_ops:
                    ref_ops[library] = _reference_ops(ref_fw, library, ref_wrap)
                import importlib
                ops_mod = importlib.import_module(f"corpus.{library}.ops")
                ref_op = getattr(ref_ops[library], _op_name(case, ops_mod))
                sides.append(_Side(ref_fw, ref_op, case, np_args, dys, args.device))
            res = [s.results() for s in sides]            # warm-up (compiles, autotunes) + check
            err = max((_rel_err(a, b) for a, b in zip(res[0], res[1])), default=0.0) if len(res) > 1 else 0.0
            check = "ok" if err <= 1e-3 else f"MISMATCH {err:.2g}"
            failed |= err > 1e-3
            fwd_r = [[] for _ in sides]
            step_r = [[] for _ in sides]
            for _ in range(args.rounds):
                for i, s in enumerate(sides):
                    _median_call_s(s.fwd, sync, args.iters, fwd_r, i)
                    _median_call_s(s.step, sync, args.iters, step_r, i)
            t = [(statistics.median(f) * 1e6, statistics.median(b) * 1e6) for f, b in zip(fwd_r, step_r)]
            rows.append((case.id, t, check))
        except Exception as e:  # noqa: BLE001 - a row, never a crash
            msg = f"{type(e).__name__}: {e}".splitlines()[0][:150]
            rows.append((case.id, None, f"skip: {msg}"))

    print(f"\nkernel corpus, {args.device}, scale {scale}, float32; per call, us (median of "
          f"{args.rounds} rounds x {args.iters}); ratio = tensorplay / {ref_label}")
    head = (f"{'case':32} {'tp fwd':>9} {ref_label + ' fwd':>10} {'ratio':>6}  {'tp f+b':>9} "
            f"{ref_label + ' f+b':>10} {'ratio':>6}  check")
    print(head)
    print("-" * len(head))
    fr, br = [], []
    for cid, t, check in rows:
        if t is None:
            print(f"{cid:32} {check}")
            continue
        if len(t) == 1:
            print(f"{cid:32} {t[0][0]:9.1f} {'-':>10} {'-':>6}  {t[0][1]:9.1f} {'-':>10} {'-':>6}  {check}")
            continue
        (tf, tb), (rf, rb) = t
        fr.append(tf / rf)
        br.append(tb / rb)
        print(f"{cid:32} {tf:9.1f} {rf:10.1f} {tf / rf:6.2f}  {tb:9.1f} {rb:10.1f} {tb / rb:6.2f}  {check}")
    if fr:
        print(f"{'median ratio':32} {'':9} {'':10} {statistics.median(fr):6.2f}  {'':9} {'':10} "
              f"{statistics.median(br):6.2f}")
    print(f"({len(rows) - sum(1 for r in rows if r[1] is None)} of {len(rows)} cases measured, "
          f"{time.perf_counter() - start:.0f} s)")
    out = {"device": args.device, "scale": scale, "reference": ref_label, "rows": [
        {"case": cid, "check": check, **({} if t is None else {
            "tensorplay_fwd_us": t[0][0], "tensorplay_fwd_bwd_us": t[0][1],
            **({} if len(t) == 1 else {"reference_fwd_us": t[1][0], "reference_fwd_bwd_us": t[1][1]})})}
        for cid, t, check in rows]}
    print(f"results: {_harness.write_json('corpus' if not on_cpu else 'corpus_cpu_selfcheck', out)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
