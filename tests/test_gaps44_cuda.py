"""Session 44's ops and composites on cuda give the cpu's results (values, dtype, shape, and the
gradients of the float inputs): atan2 ... atanh, xlogy (array kernels: CuPy's functions and
ufunc.at), scatter_reduce, and the value+index reductions (compositions of built-in ops).
Runs on a GPU machine; skips (saying why) where cuda is unavailable."""

from __future__ import annotations

import numpy as np
import pytest
from _cuda_vs_cpu import DEVICES, check_call, check_runs_on_cpu

import tensorplay as tp

_R = np.random.default_rng(44)
X = _R.standard_normal((3, 5))
Y = _R.standard_normal((3, 5))
Y[0, 1] = 0.0
D = np.array([[3.0, 1.0, 2.0, 1.0, 3.0], [np.nan, 1.0, np.nan, 0.0, 5.0],
              [2.0, 2.0, 2.0, 2.0, 2.0]])
I = np.array([[0, 3, 1, 3, 2], [2, 2, 0, 1, 1], [1, 0, 4, 4, 0]], np.int64)
N = np.array([[7, -7, 3, 9, 2], [5, 5, -1, 2, 5], [1, 2, 3, 4, 6]], np.int64)

CALLS = [
    ("atan2", lambda t: tp.atan2(t["x"], t["y"])),
    ("hypot", lambda t: tp.hypot(t["x"], t["y"])),
    ("fmod", lambda t: tp.fmod(t["x"], t["y"] + 3.0)),
    ("fmod int", lambda t: tp.fmod(t["n"], 3)),
    ("copysign", lambda t: tp.copysign(t["x"], t["y"])),
    ("nextafter", lambda t: tp.nextafter(t["x"], t["y"])),
    ("asinh", lambda t: tp.asinh(t["x"])),
    ("acosh", lambda t: tp.acosh(t["x"].abs() + 1.0)),
    ("atanh", lambda t: tp.atanh(t["x"] * 0.3)),
    ("xlogy", lambda t: tp.xlogy(t["x"], t["y"].abs())),
    ("atan2 int", lambda t: tp.atan2(t["n"], t["n"].flip(1))),
    ("scatter_reduce prod", lambda t: t["x"].scatter_reduce(1, t["i"], t["y"], "prod")),
    ("scatter_reduce amax", lambda t: t["x"].scatter_reduce(1, t["i"], t["y"], "amax",
                                                            include_self=False)),
    ("scatter_reduce amin", lambda t: t["x"].scatter_reduce(1, t["i"], t["y"], "amin")),
    # (values only: scatter(reduce=) has no derivative, as torch's)
    ("scatter multiply", lambda t: t["x"].detach().scatter(1, t["i"], t["y"].detach(),
                                                           reduce="multiply")),
    ("aminmax", lambda t: tp.aminmax(t["d"], dim=1)),
    ("median", lambda t: tp.median(t["d"], 1)),
    ("median all", lambda t: tp.median(t["x"])),
    ("nanmedian", lambda t: tp.nanmedian(t["d"], 1)),
    ("kthvalue", lambda t: tp.kthvalue(t["x"], 2, 1)),
    ("mode", lambda t: tp.mode(t["d"][::2], 1)),
    ("cummax", lambda t: tp.cummax(t["d"], 1)),
    ("cummin", lambda t: tp.cummin(t["x"], 0)),
]


def _tensors(device, grad=False):
    return {"x": tp.tensor(X, device=device, requires_grad=grad),
            "y": tp.tensor(Y, device=device, requires_grad=grad),
            "d": tp.tensor(D, device=device, requires_grad=grad),
            "i": tp.tensor(I, device=device), "n": tp.tensor(N, device=device)}


def _rtol(c):
    # float32 results of transcendental functions (atan2 of integers) come from CUDA's libm on
    # cuda and NumPy's on cpu: both within about 1 ulp, not bit-equal (torch's two devices differ
    # the same way); float64 and exact results are held to 1e-10
    return 1e-6 if c.dtype == tp.float32 else 1e-10


_NAN_TO_0 = lambda o: o.nan_to_num(0.0).sum()   # noqa: E731
_KEYS = ("x", "y", "d")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_session44_op_on_cuda_matches_cpu(name, call, device, request):
    check_call(name, call, _tensors, _KEYS, rtol=_rtol, atol=1e-12, loss=_NAN_TO_0,
               device=device, request=request)


def test_every_call_here_runs_on_cpu_with_gradients():
    check_runs_on_cpu(CALLS, _tensors, _KEYS, _NAN_TO_0)
