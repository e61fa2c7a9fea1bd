"""``torch.library.opcheck`` on every bridged op of the example pack (examples/) and of the
newuser pack (tests/packs/newuser_pack), over each pack's own sample inputs converted to torch
(zero-copy, layouts kept), on cpu (and on cuda where torch and TensorPlay have it)."""

from __future__ import annotations

import pytest
import tensorplay as tp
import tensorplay_torch
import torch

NAMESPACES = ("example", "newuser")
tensorplay_torch.register(namespace=list(NAMESPACES))


# cuda where torch and TensorPlay both have it (the GPU machine); cpu everywhere
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and tp.plugins.device_status("cuda")[0]
                     else [])


def _cases():
    cases = []
    for name in tensorplay_torch.bridged_ops():
        ns, opname = name.split("::")
        if ns not in NAMESPACES:
            continue
        op = getattr(getattr(tp.ops, ns), opname)
        for dev in DEVICES:
            for s in tp.plugins.sample_inputs(op, dev):
                tag = f"{name}[{s.name}]" if dev == "cpu" else f"{name}[{s.name}, {dev}]"
                cases.append(pytest.param(name, s, False, id=tag))
                if not op.mutates_args:  # torch's autograd checks run only on inputs needing grad
                    cases.append(pytest.param(name, s, True, id=tag[:-1] + ", grad]"))
    return cases


CASES = _cases()


def _torch(v):
    if isinstance(v, tp.Tensor):
        return tensorplay_torch.to_torch(v)
    if isinstance(v, (list, tuple)):
        return type(v)(_torch(x) for x in v)
    return v


def _has_nan(out):
    outs = out if isinstance(out, (tuple, list)) else [out]
    return any(isinstance(o, torch.Tensor) and o.is_floating_point() and o.isnan().any()
               for o in outs)


def test_every_op_of_both_packs_has_samples():
    names = {c.values[0] for c in CASES}
    assert {"example::rms_norm", "example::gelu", "example::weighted_sum",
            "example::softmax_cross_entropy", "example::add_relu_"} <= names
    assert {"newuser::layer_norm", "newuser::scaled_softmax", "newuser::rotary",
            "newuser::quantize", "newuser::batch_stats", "newuser::flatten"} <= names


def _requiring_grad(v):
    if isinstance(v, torch.Tensor) and v.is_floating_point():
        return v.detach().requires_grad_(True)
    if isinstance(v, (list, tuple)):
        return type(v)(_requiring_grad(x) for x in v)
    return v


@pytest.mark.parametrize("name, sample, grad", CASES)
def test_opcheck(name, sample, grad):
    """opcheck's four default checks; with ``grad`` the floating inputs require grad, so that
    test_autograd_registration and the backward half of test_aot_dispatch_dynamic run."""
    ns, opname = name.split("::")
    op = getattr(getattr(torch.ops, ns), opname).default
    args, kwargs = _torch(tuple(sample.args)), dict(_torch(dict(sample.kwargs)))
    if grad:
        args = _requiring_grad(args)
    utils = list(torch.library._OPCHECK_DEFAULT_UTILS)
    with torch.no_grad():
        nan = _has_nan(op(*[a.detach().clone() if isinstance(a, torch.Tensor) else a
                            for a in args], **kwargs))
    if nan:
        # torch's test_aot_dispatch_dynamic compares with assert_close(equal_nan=False): any
        # op returning NaN fails it, torch's own cross_entropy on an empty batch included. The
        # same comparison is made here with NaNs equal.
        utils.remove("test_aot_dispatch_dynamic")
        with torch.no_grad():
            eager = op(*args, **kwargs)
        compiled = torch.compile(lambda *a: op(*a, **kwargs), backend="aot_eager",
                                 fullgraph=True)(*args)
        if isinstance(compiled, torch.Tensor):
            compiled = compiled.detach()
        torch.testing.assert_close(compiled, eager, equal_nan=True)
    torch.library.opcheck(op, args, kwargs, test_utils=tuple(utils))
