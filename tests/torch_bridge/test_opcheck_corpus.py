"""``torch.library.opcheck`` on every bridged op of the third-party kernel corpus (tests/corpus:
Liger-Kernel, Unsloth, FlagGems, flash-linear-attention and Cut Cross-Entropy Triton kernels registered
as TensorPlay ``triton_op``s in the namespaces ``liger``, ``unsloth``, ``flaggems``, ``fla``, ``cce``), over the corpus's own sample inputs
(``corpus.cases.sample_args``, the small cpu sizes) converted to torch, on cpu (the kernels run
through Triton's interpreter) and on cuda where torch and TensorPlay both have it.

* Forward ops (each corpus case's op, every one with ``register_autograd``): opcheck's default
  checks once with plain inputs and once with the floating inputs requiring grad, so that
  ``test_autograd_registration`` and the backward half of ``test_aot_dispatch_dynamic`` run (the
  bridge's autograd then calls the pack's backward formula, and with it the backward op, in
  TensorPlay).
* Backward ops (``liger::rms_norm_backward``, ...): the corpus gives no inputs for them, so each
  case's own inputs are run forward and backward in TensorPlay (the loss ``sum(out_i * dy_i)``
  of ``corpus.check``, and again with every ``dy_i`` 1, as ``loss.backward()`` hands a scalar
  loss) with a recording kernel stacked on each backward op of the namespace; every call the
  pack's formula makes is then opchecked with exactly those arguments converted to torch.
  Without inputs requiring grad: a backward op has no formula of its own (the corpus defines no
  double backward), and torch's checks of an op without one only say so. Some formulas call no
  backward op (``liger::jsd``'s and ``liger::tvd``'s: TensorPlay ops only; ``fla::logsumexp``'s
  likewise; ``fla::chunk_local_cumsum``'s calls the forward op itself, reversed, opchecked as a
  forward op). ``test_every_bridged_op_is_checked`` proves every bridged op of the five namespaces is
  reached by one of the two.

A case that hits a known interpreter gap (``corpus.gaps``) is ``xfail(strict=True)`` while the
gap's probe shows it is there, as in tests/test_corpus.py; with the supported Triton releases and
the current tensorplay-triton none is.
"""

from __future__ import annotations

import itertools
import pathlib
import sys

import numpy as np
import tensorplay as tp
import tensorplay_torch
import pytest
import torch

# the corpus is a package of tests/ (imported as tests/test_corpus.py imports it)
_TESTS = str(pathlib.Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from corpus import all_cases, unavailable  # noqa: E402
from corpus.cases import sample_args  # noqa: E402

NAMESPACES = ("liger", "unsloth", "flaggems", "fla", "cce")
CORPUS = all_cases()
# libraries whose pinned wheel could not be had (corpus._upstream): one skipped test each, saying why
UNAVAILABLE = unavailable()
BY_ID = {c.id: c for c in CORPUS}
tensorplay_torch.register(namespace=list(NAMESPACES))
BRIDGED = [n for n in tensorplay_torch.bridged_ops() if n.split("::")[0] in NAMESPACES]
FORWARD = sorted({c.op.name for c in CORPUS})

# cuda where torch and TensorPlay both have it (the GPU machine); cpu everywhere
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and tp.plugins.device_status("cuda")[0]
                     else [])


def _marks(case):
    present = [g.reason for g in case.gaps if g.present]
    if not present:
        return []
    # an isolated case writes out of bounds under its gap (corpus.cases.Case.isolate): not run
    return [pytest.mark.xfail(strict=True, run=not case.isolate, reason="; ".join(present))]


def _unavailable_params(n):
    return [pytest.param(*[None] * n, id=f"{lib}-unavailable", marks=pytest.mark.skip(reason=why))
            for lib, why in UNAVAILABLE.items()]


def _forward_cases():
    out = _unavailable_params(3)
    for c in CORPUS:
        for dev in DEVICES:
            tag = c.id if dev == "cpu" else f"{c.id}, {dev}"
            out.append(pytest.param(c.id, dev, False, id=tag, marks=_marks(c)))
            out.append(pytest.param(c.id, dev, True, id=f"{tag}, grad", marks=_marks(c)))
    return out


def _torch(v):
    if isinstance(v, tp.Tensor):
        return tensorplay_torch.to_torch(v)
    if isinstance(v, (list, tuple)):
        return type(v)(_torch(x) for x in v)
    return v


def _torch_op(name):
    ns, opname = name.split("::")
    return getattr(getattr(torch.ops, ns), opname).default


def _opcheck(op, args, kwargs):
    """opcheck's four default checks, every one run (no corpus output has a NaN, the one case
    test_opcheck.py compares by hand)."""
    assert torch.library.opcheck(op, args, kwargs) == {
        name: "SUCCESS" for name in torch.library._OPCHECK_DEFAULT_UTILS}


def _requiring_grad(v):
    if isinstance(v, torch.Tensor) and v.is_floating_point():
        return v.detach().requires_grad_(True)
    if isinstance(v, (list, tuple)):
        return type(v)(_requiring_grad(x) for x in v)
    return v


@pytest.mark.parametrize("case_id, device, grad", _forward_cases())
def test_opcheck_forward(case_id, device, grad):
    case = BY_ID[case_id]
    args = _torch(sample_args(case, np.random.default_rng(1), device))
    if grad:
        args = _requiring_grad(args)
    _opcheck(_torch_op(case.op.name), args, {})


def _detached(v):
    if isinstance(v, tp.Tensor):
        return v.detach().clone()
    if isinstance(v, (list, tuple)):
        return type(v)(_detached(x) for x in v)
    return v


def _backward_calls(case, device, ones):
    """``[(backward op name, args, kwargs)]``: every call of a backward op of the case's namespace
    while TensorPlay runs the case's op forward and backward on the case's inputs (the loss
    ``sum(out_i * dy_i)`` over the compared outputs, as ``corpus.check`` computes it; with
    ``ones`` every ``dy_i`` is 1, what ``loss.backward()`` hands a scalar loss, which takes the
    kernels' skip-the-multiply branches). A recording kernel is stacked on each backward op
    meanwhile (a ``Library`` closed after)."""
    ns = case.op.namespace
    calls = []
    lib = tp.library.Library(ns, "FRAGMENT")
    try:
        for name in BRIDGED:
            if name.split("::")[0] != ns or name in FORWARD:
                continue
            op = getattr(getattr(tp.ops, ns), name.split("::")[1])
            (kernel,) = op.kernel_stack("default")

            def record(*a, _name=name, _fn=kernel.fn, **k):
                calls.append((_name, _detached(a), {key: _detached(x) for key, x in k.items()}))
                return _fn(*a, **k)

            lib.impl(op, record, "default")
        rng = np.random.default_rng(1)
        args = sample_args(case, rng, device, requires_grad=True)
        outs = case.op(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        roots = list(outs[:case.n_out])
        dys = [tp.ones(o.shape, device=device) if ones else
               tp.tensor(rng.standard_normal(tuple(o.shape)).astype(np.float32), device=device)
               for o in roots]
        tp.autograd.backward(roots, dys)
    finally:
        lib.close()
    return calls


def _backward_cases():
    """One case per backward-op call of each corpus case (cases whose formula computes the
    gradient with plain TensorPlay ops, e.g. ``liger::jsd``'s, call none); recorded now, at
    collection. A case whose recording raises becomes one test that raises it again."""
    out = _unavailable_params(3)
    for c, dev, ones in itertools.product(CORPUS, DEVICES, (False, True)):
        tag = (c.id if dev == "cpu" else f"{c.id}, {dev}") + (", ones" if ones else "")
        marks = _marks(c)
        if marks and c.isolate:
            out.append(pytest.param(None, None, None, id=f"{tag}, not recorded", marks=marks))
            continue
        try:
            calls = _backward_calls(c, dev, ones)
        except Exception as e:  # noqa: BLE001 - raised again by the test
            out.append(pytest.param("recording", (e,), {}, id=f"{tag}, recording",
                                    marks=marks))
            continue
        seen: dict = {}
        for name, args, kwargs in calls:
            seen[name] = seen.get(name, 0) + 1
            n = f" #{seen[name]}" if seen[name] > 1 else ""
            out.append(pytest.param(name, args, kwargs, id=f"{name}[{tag}{n}]", marks=marks))
    return out


BACKWARD_CASES = _backward_cases()


@pytest.mark.parametrize("name, args, kwargs", BACKWARD_CASES)
def test_opcheck_backward(name, args, kwargs):
    if name == "recording":
        raise args[0]
    _opcheck(_torch_op(name), _torch(args), _torch(kwargs))


def test_every_bridged_op_is_checked():
    """Every bridged op of the five namespaces is opchecked: the forward ops on the cases' inputs,
    each backward op on the inputs its formula gave it in at least one case."""
    backward = {p.values[0] for p in BACKWARD_CASES} - {"recording", None}
    assert sorted(set(FORWARD) | backward) == BRIDGED
    assert not set(FORWARD) & backward
    assert all(c.op.has_autograd and c.op.backward_fn is not None for c in CORPUS)
    if UNAVAILABLE:
        pytest.skip("counts not checked: " + "; ".join(UNAVAILABLE.values()))
    assert len(FORWARD) == 41 and len(BRIDGED) == 78, (len(FORWARD), len(BRIDGED))
