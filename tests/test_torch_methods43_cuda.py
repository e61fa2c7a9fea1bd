"""Session 43's Tensor methods (tests/test_torch_methods43.py states their values on cpu) are
compositions of built-in ops: on cuda each gives the cpu's result -- values, dtype, shape (an
in-place form's result is the tensor it wrote). Runs on a GPU machine; skips (saying
why) where cuda is unavailable."""

from __future__ import annotations

import numpy as np
import pytest
from _cuda_vs_cpu import DEVICES, need

import tensorplay as tp

_R = np.random.default_rng(43)
X = _R.standard_normal((3, 4)).astype(np.float32)          # some negatives, no zeros
P = (_R.random((3, 4)) * 0.8 + 0.1).astype(np.float32)     # in (0.1, 0.9)
SQ = _R.standard_normal((3, 3)).astype(np.float32)
I = np.array([[0, 3, 1, 2], [2, 2, 0, 1], [1, 0, 3, 3]], np.int64)
V3 = np.array([1.0, -2.0, 0.5], np.float32)

# (name, call(tensors) -> result); tensors: x (3x4 float32), p (3x4 in (0, 1)), sq (3x3), i (3x4
# int64 in 0..3), v (3,) float32
CALLS = [
    ("absolute", lambda t: t["x"].absolute()),
    ("absolute_", lambda t: t["x"].absolute_()),
    ("addcdiv", lambda t: t["x"].addcdiv(t["p"], t["p"] + 1, value=0.5)),
    ("addcmul_", lambda t: t["x"].addcmul_(t["p"], t["x"], value=2.0)),
    ("addmm_", lambda t: t["sq"].addmm_(t["sq"], t["sq"], beta=0.5, alpha=2.0)),
    ("arccos", lambda t: t["p"].arccos()),
    ("arctan_", lambda t: t["x"].arctan_()),
    ("argwhere", lambda t: (t["x"] > 0).argwhere()),
    ("baddbmm_", lambda t: t["sq"].unsqueeze(0).baddbmm_(t["sq"].unsqueeze(0),
                                                         t["sq"].unsqueeze(0))),
    ("bincount", lambda t: t["i"].flatten().bincount(minlength=6)),
    ("count_nonzero", lambda t: (t["x"] > 0).count_nonzero(1)),
    ("cross", lambda t: t["sq"].cross(t["sq"].flip(0), dim=1)),
    ("cumprod", lambda t: t["p"].cumprod(1)),
    ("cumprod_", lambda t: t["p"].cumprod_(0)),
    ("cumsum_", lambda t: t["x"].cumsum_(1)),
    ("deg2rad", lambda t: t["x"].deg2rad()),
    ("diag_embed", lambda t: t["v"].diag_embed()),
    ("diagflat", lambda t: t["v"].diagflat(1)),
    ("diagonal", lambda t: t["x"].diagonal(1)),
    ("diff", lambda t: t["x"].diff(dim=1)),
    ("divide_", lambda t: t["x"].divide_(t["p"], rounding_mode="floor")),
    ("eq_", lambda t: t["x"].eq_(t["x"].abs())),
    ("fill_diagonal_", lambda t: t["sq"].fill_diagonal_(7.0)),
    ("fliplr", lambda t: t["x"].fliplr()),
    ("float_power", lambda t: t["p"].float_power(2)),
    ("frac", lambda t: (t["x"] * 3).frac()),
    ("ge_", lambda t: t["x"].ge_(0.25)),
    ("ger", lambda t: t["v"].ger(t["v"])),
    ("index_copy_", lambda t: t["x"].index_copy_(0, tp.tensor([2, 0], device=t["x"].device),
                                                 t["p"][:2])),
    ("index_fill_", lambda t: t["x"].index_fill_(1, tp.tensor([1, 3], device=t["x"].device),
                                                 -1.0)),
    ("index_put_", lambda t: t["x"].index_put_((tp.tensor([0, 2], device=t["x"].device),),
                                               t["p"][:2], accumulate=True)),
    ("inner", lambda t: t["x"].inner(t["p"])),
    ("isneginf", lambda t: (t["x"] / 0.0).isneginf()),
    ("lerp_", lambda t: t["x"].lerp_(t["p"], 0.25)),
    ("logaddexp", lambda t: t["x"].logaddexp(t["p"])),
    ("logaddexp2", lambda t: t["x"].logaddexp2(t["p"])),
    ("logit", lambda t: t["p"].logit(eps=1e-3)),
    ("lt_", lambda t: t["x"].lt_(t["p"])),
    ("masked_scatter_", lambda t: t["x"].masked_scatter_(t["x"] > 0, t["p"])),
    ("movedim", lambda t: t["x"].unsqueeze(0).movedim(0, 2)),
    ("msort", lambda t: t["x"].msort()),
    ("mv", lambda t: t["sq"].mv(t["v"])),
    ("nan_to_num", lambda t: (t["x"] / 0.0).nan_to_num(posinf=9.0, neginf=-9.0)),
    ("nanmean", lambda t: t["x"].nanmean(1)),
    ("nansum", lambda t: t["x"].nansum(0)),
    ("narrow_copy", lambda t: t["x"].narrow_copy(1, 1, 2)),
    ("put_", lambda t: t["x"].put_(tp.tensor([0, 11, -1], device=t["x"].device), t["v"],
                                   accumulate=True)),
    ("rad2deg_", lambda t: t["x"].rad2deg_()),
    ("rot90", lambda t: t["x"].rot90(1, [0, 1])),
    ("scatter_add_", lambda t: t["x"].scatter_add_(1, t["i"], t["p"])),
    ("scatter_reduce", lambda t: t["x"].scatter_reduce(1, t["i"], t["p"], "mean",
                                                       include_self=False)),
    ("sgn", lambda t: t["x"].sgn()),
    ("split_with_sizes", lambda t: t["x"].split_with_sizes([1, 3], 1)),
    ("squeeze_", lambda t: t["x"].unsqueeze(1).squeeze_(1)),
    ("swapdims_", lambda t: t["x"].clone().swapdims_(0, 1)),
    ("t_", lambda t: t["x"].clone().t_()),
    ("take", lambda t: t["x"].take(t["i"])),
    ("take_along_dim", lambda t: t["x"].take_along_dim(t["i"], 1)),
    ("tensor_split", lambda t: t["x"].tensor_split([1, 3], dim=1)),
    ("tile", lambda t: t["v"].tile((2, 2))),
    ("trace", lambda t: t["sq"].trace()),
    ("transpose_", lambda t: t["x"].clone().transpose_(0, 1)),
    ("tril_", lambda t: t["sq"].tril_(-1)),
    ("triu_", lambda t: t["x"].triu_(1)),
    ("unfold", lambda t: t["x"].unfold(1, 2, 1)),
    ("unsqueeze_", lambda t: t["x"].clone().unsqueeze_(0)),
    ("xlogy_", lambda t: t["p"].xlogy_(t["p"])),
]


def _tensors(device):
    return {"x": tp.tensor(X, device=device), "p": tp.tensor(P, device=device),
            "sq": tp.tensor(SQ, device=device), "i": tp.tensor(I, device=device),
            "v": tp.tensor(V3, device=device)}


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_session43_method_on_cuda_matches_cpu(name, call, device, request):
    need(device, request)       # (cuda, or conftest's GPU stand-in: the device branch in CI)
    tc, tg = _tensors("cpu"), _tensors(device)
    rc, rg = call(tc), call(tg)
    for c, g in zip(_flat(rc), _flat(rg), strict=True):
        assert g.device.type == device, name
        assert (c.dtype, tuple(c.shape)) == (g.dtype, tuple(g.shape)), name
        np.testing.assert_allclose(g.cpu().numpy().astype(np.float64),
                                   c.numpy().astype(np.float64), rtol=2e-5, atol=2e-6,
                                   err_msg=name)


def test_every_call_here_runs_on_cpu():
    # the cuda sweep compares against these cpu results: each must run (a call that raised
    # on cpu would make its cuda case meaningless)
    for name, call in CALLS:
        r = call(_tensors("cpu"))
        assert all(isinstance(t, tp.Tensor) for t in _flat(r)), name
