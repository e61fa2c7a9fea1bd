"""Session 46's special functions on cuda give the cpu's results (values, dtype, shape, and the
gradients of the float inputs): the reference kernels of _kernels/special.py bound to CuPy
(``xp.take`` of the erfc tables on the device, the host read of polygamma's smallest argument,
CuPy's frexp/ldexp). Runs on a GPU machine; skips (saying why) where cuda is unavailable."""

from __future__ import annotations

import numpy as np
import pytest
from _cuda_vs_cpu import DEVICES, check_call, check_runs_on_cpu

import tensorplay as tp
import tensorplay.special as S

_R = np.random.default_rng(46)
X = np.concatenate([_R.uniform(-6, 6, 30), [0.0, -0.0, -1.0, 1.0, 2.5, 30.0, -30.0, 1e-300,
                                            np.inf, -np.inf, np.nan]])
P = np.concatenate([_R.uniform(0, 1, 20), [0.0, 1.0, 0.5, 1e-300, 1 - 1e-12]])
POS = _R.uniform(0.1, 8, 20)
N = np.array([-3, 0, 2, 7], np.int64)

CALLS = [
    ("lgamma", lambda t: tp.lgamma(t["x"])), ("digamma", lambda t: tp.digamma(t["x"])),
    ("polygamma 1", lambda t: tp.polygamma(1, t["x"])),
    ("polygamma 3", lambda t: tp.polygamma(3, t["x"])),
    ("mvlgamma", lambda t: tp.mvlgamma(t["pos"] + 1.0, 3)),
    ("erfc", lambda t: tp.erfc(t["x"] * 4)), ("erfcx", lambda t: S.erfcx(t["x"] * 5)),
    ("erfinv", lambda t: tp.erfinv(t["p"] * 2 - 1)), ("ndtri", lambda t: S.ndtri(t["p"])),
    ("i0", lambda t: tp.i0(t["x"] * 5)), ("i0e", lambda t: S.i0e(t["x"] * 5)),
    ("i1", lambda t: S.i1(t["x"] * 5)), ("i1e", lambda t: S.i1e(t["x"] * 5)),
    ("sinc", lambda t: tp.sinc(t["x"])), ("logit", lambda t: tp.logit(t["p"], eps=0.01)),
    ("xlog1py", lambda t: S.xlog1py(t["x"], t["pos"][:1])),
    ("heaviside", lambda t: tp.heaviside(t["x"], t["pos"][:1])),
    ("ldexp int", lambda t: tp.ldexp(t["x"], t["n"][:1])),
    ("ldexp float", lambda t: tp.ldexp(t["pos"], t["pos"] / 4)),
    ("frexp", lambda t: tuple(tp.frexp(t["x"]))),
    ("ndtr", lambda t: S.ndtr(t["x"])), ("log_ndtr", lambda t: S.log_ndtr(t["x"] * 6)),
    ("entr", lambda t: S.entr(t["x"])),
    ("lgamma float32", lambda t: tp.lgamma(t["x"].float())),
    ("erfinv float16", lambda t: tp.erfinv((t["p"] * 1.8 - 0.9).half())),
    ("i0 int", lambda t: tp.i0(t["n"])),
]


def _tensors(device, grad=False):
    return {"x": tp.tensor(X, device=device, requires_grad=grad),
            "p": tp.tensor(P, device=device, requires_grad=grad),
            "pos": tp.tensor(POS, device=device, requires_grad=grad),
            "n": tp.tensor(N, device=device)}


_KEYS = ("x", "p", "pos")
_NAN_TO_0 = lambda o: o.nan_to_num(0.0, 0.0, 0.0).sum()   # noqa: E731


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_special46_op_on_cuda_matches_cpu(name, call, device, request):
    check_call(name, call, _tensors, _KEYS, rtol=1e-12, atol=1e-300, loss=_NAN_TO_0,
               device=device, request=request, no_sync=True)


def test_every_call_here_runs_on_cpu_with_gradients():
    check_runs_on_cpu(CALLS, _tensors, _KEYS, _NAN_TO_0)


# erf (h-specialfast46): on cuda both of its branches run on every lane and `where` selects (no
# host read); float32 is computed in float32 arithmetic, so two libms' expf may differ by an ulp
ERF_CALLS = [("erf", lambda t: tp.erf(t["x"])), ("erf float32", lambda t: tp.erf(t["x"].float())),
             ("erf float16", lambda t: tp.erf(t["x"].half())),
             ("erf of a view", lambda t: tp.erf(t["x"][::3] * 0.7))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,call", ERF_CALLS, ids=[c[0] for c in ERF_CALLS])
def test_erf_on_cuda_matches_cpu(name, call, device, request):
    # float32 is computed in float32 on both devices: CUDA's expf and NumPy's differ by up to
    # 2 ulp, and the polynomial's rounding with them (the H100 run of 12:40 UTC failed at 4e-7);
    # 2e-6 is about 16 ulp, torch's own float32 tolerance between devices is 1.3e-6
    check_call(name, call, _tensors, _KEYS, atol=1e-300, loss=_NAN_TO_0,
               rtol=lambda c: 1e-13 if c.dtype == tp.float64 else 2e-6 if c.dtype == tp.float32
               else 1e-3, device=device, request=request, no_sync=True)


def test_every_erf_call_here_runs_on_cpu_with_gradients():
    check_runs_on_cpu(ERF_CALLS, _tensors, _KEYS, _NAN_TO_0)
