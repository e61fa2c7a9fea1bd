"""tensorplay.linalg on cuda (session 46): the tp::linalg_* kernels (cupy.linalg) and the
composites give the cpu's results (values, dtypes, shapes; sign-invariant forms of singular and
eigen vectors) and gradients, and the same LinAlgError with the same message for singular and
non positive-definite inputs (CuPy asked to raise through cupyx.errstate). Runs on a GPU
machine; skips (saying why) where cuda is unavailable."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _cuda_vs_cpu import DEVICES, check_call, check_runs_on_cpu, need_cuda

import tensorplay as tp
from tensorplay import linalg as LA

_R = np.random.default_rng(4646)
A = _R.uniform(-1, 1, (2, 4, 4)) + 4 * np.eye(4)           # well-conditioned
M = _R.standard_normal((2, 5, 3))                          # tall
W = _R.standard_normal((2, 3, 5))                          # wide
_m = _R.uniform(-1, 1, (2, 4, 4))
SPD = _m @ np.swapaxes(_m, -1, -2) + 4 * np.eye(4)
SYM = 0.2 * (_m + np.swapaxes(_m, -1, -2)) + np.diag(1.5 * np.arange(4))
B = _R.standard_normal((2, 4, 3))
SING = np.stack([A[0], np.outer([1.0, 2.0, -1.0, 0.5], [0.5, 1.0, 3.0, -2.0]) + np.diag(
    [0.0, 0.0, 0.0, 1.0])])                                  # one singular matrix

CALLS = [
    ("det", lambda t: LA.det(t["a"])),
    ("slogdet", lambda t: LA.slogdet(t["a"])),
    ("inv", lambda t: LA.inv(t["a"])),
    ("inv_ex", lambda t: LA.inv_ex(t["a"])),
    ("solve", lambda t: LA.solve(t["a"], t["b"])),
    ("solve vector", lambda t: LA.solve(t["a"], t["b"][..., 0])),
    ("cholesky", lambda t: LA.cholesky(t["spd"])),
    ("cholesky upper", lambda t: LA.cholesky(t["spd"], upper=True)),
    ("qr tall", lambda t: LA.qr(t["m"])),
    ("qr wide", lambda t: LA.qr(t["w"])),
    ("qr complete", lambda t: LA.qr(t["w"], mode="complete")),
    ("svd", lambda t: (lambda r: (r.U.abs(), r.S, r.Vh.abs()))(LA.svd(t["m"], False))),
    ("svd full square", lambda t: (lambda r: (r.U.abs(), r.S, r.Vh.abs()))(LA.svd(t["a"]))),
    ("svdvals", lambda t: LA.svdvals(t["w"])),
    ("eigh", lambda t: (lambda r: (r[0], r[1].abs()))(LA.eigh(t["sym"]))),
    ("eigvalsh U", lambda t: LA.eigvalsh(t["sym"], "U")),
    ("pinv", lambda t: LA.pinv(t["m"])),
    ("matrix_norm nuc", lambda t: LA.matrix_norm(t["m"], "nuc")),
    ("matrix_norm 2", lambda t: LA.matrix_norm(t["m"], 2)),
    ("matrix_norm inf", lambda t: LA.matrix_norm(t["m"], math.inf)),
    ("vector_norm 3", lambda t: LA.vector_norm(t["m"], 3, dim=-1)),
    ("matrix_power", lambda t: LA.matrix_power(t["a"], 3)),
    ("matrix_power -2", lambda t: LA.matrix_power(t["a"], -2)),
    ("matrix_rank", lambda t: LA.matrix_rank(t["m"])),
    ("cdist", lambda t: tp.cdist(t["m"], t["m"][:, :2])),
    ("logdet", lambda t: tp.logdet(t["spd"])),
    ("svd V", lambda t: tp.svd(t["m"]).V.abs()),
    ("det singular", lambda t: LA.det(t["sing"])),
    ("solve_ex singular", lambda t: LA.solve_ex(t["sing"], t["b"]).info),
    ("solve_triangular", lambda t: LA.solve_triangular(t["a"], t["b"], upper=True)),
    ("lstsq", lambda t: LA.lstsq(t["m"], t["m"][..., :2]).solution),
]


def _tensors(device, grad=False):
    return {k: tp.tensor(v, device=device, requires_grad=grad)
            for k, v in (("a", A), ("m", M), ("w", W), ("spd", SPD), ("sym", SYM), ("b", B),
                         ("sing", SING))}


_KEYS = ("a", "b", "m", "sing", "spd", "sym", "w")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_linalg_on_cuda_matches_cpu(name, call, device, request):
    check_call(name, call, _tensors, _KEYS, rtol=1e-8, atol=1e-9, device=device, request=request)


@pytest.mark.cuda
def test_linalg_errors_on_cuda_match_cpu():
    need_cuda()
    sing = np.stack([np.eye(3), [[1.0, 2, 3], [2, 4, 6], [0, 0, 1]]])
    notpd = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0])])
    for fn, data in ((LA.inv, sing), (LA.cholesky, notpd),
                     (lambda x: LA.solve(x, x), sing)):
        msgs = []
        for dev in ("cpu", "cuda"):
            with pytest.raises(LA.LinAlgError) as e:
                fn(tp.tensor(data, device=dev))
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
    r = LA.inv_ex(tp.tensor(sing, device="cuda"))
    assert r.info.device.type == "cuda" and r.info.tolist() == [0, 2]
    c = LA.cholesky_ex(tp.tensor(notpd, device="cuda"))
    assert c.info.tolist() == [0, 2]


def test_every_call_here_runs_on_cpu_with_gradients():
    check_runs_on_cpu(CALLS, _tensors, _KEYS)
