"""attorch corpus cases: its autograd Functions, sample inputs and float64 NumPy references (ours).

Each case's ``op`` is the Function's ``apply`` (``tensorplay.autograd.Function``, see layers.py):
these cases are not ``triton_op``s, so ``opcheck`` does not apply; ``corpus.check.check_function``
runs the checks a Function's user relies on instead (see there).
"""

from __future__ import annotations

import math

import numpy as np

from ..cases import Case
from . import layers

_f32 = np.float32
_erf = np.vectorize(math.erf)


def _x(r, *shape):
    return r.standard_normal(shape).astype(_f32)


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


_ACT = {
    "gelu": lambda a: 0.5 * a * (1 + _erf(a / np.sqrt(2))),
    "silu": lambda a: a * _sigmoid(a),
    "mish": lambda a: a * np.tanh(np.log1p(np.exp(a))),
    "leaky_relu_0.1": lambda a: np.where(a > 0, a, 0.1 * a),
    "sigmoid": _sigmoid,
}


def _act_case(name):
    return Case(f"attorch.act_{name.split('_0')[0]}", layers.ActFuncAutoGrad.apply,
                lambda r, s: (_x(r, 3 * s, 21 * s), name, 0.0, False),
                lambda x, *_: (_ACT[name](x),))


def _softmax_ref(x, neg, log):
    x = -x if neg else x
    m = x.max(-1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(-1, keepdims=True))
    return (x - lse if log else np.exp(x - lse),)


def _rms_ref(x, w, eps):
    eps = np.finfo(np.float32).eps if eps is None else eps
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return (y if w is None else y * w,)


def _ln_ref(x, w, b, eps, autocast_to_fp32):
    mean = x.mean(-1, keepdims=True)
    return ((x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps) * w + b,)


def _p_loss_ref(x, t, p_loss, reduction, param):
    d = x - t
    err = {0: lambda: np.where(np.abs(d) < param, 0.5 * d * d / param, np.abs(d) - 0.5 * param),
           1: lambda: np.abs(d), 2: lambda: d * d,
           3: lambda: np.where(np.abs(d) < param, 0.5 * d * d, param * (np.abs(d) - 0.5 * param))}[p_loss]()
    return ({"none": err, "mean": err.mean(), "sum": err.sum()}[reduction],)


def _p_loss_case(name, p_loss, reduction, param=1.0):
    return Case(f"attorch.{name}", layers.PLossAutoGrad.apply,
                lambda r, s: (_x(r, 3 * s, 50 * s), _x(r, 3 * s, 50 * s), p_loss, reduction, param),
                _p_loss_ref, grad=(0, 1))


CASES = [
    *[_act_case(n) for n in ("gelu", "silu", "mish", "leaky_relu_0.1")],
    Case("attorch.glu", layers.GLUAutoGrad.apply, lambda r, s: (_x(r, 3 * s, 2, 20 * s), 1, "sigmoid"),
         lambda x, dim, act: (x[:, :1] * _sigmoid(x[:, 1:]),)),
    Case("attorch.softmax", layers.SoftmaxAutoGrad.apply, lambda r, s: (_x(r, 2, 3 * s, 33 * s), False, False),
         _softmax_ref),
    Case("attorch.log_softmin", layers.SoftmaxAutoGrad.apply, lambda r, s: (_x(r, 5 * s, 33 * s), True, True),
         _softmax_ref),
    Case("attorch.rms_norm", layers.RMSNormAutoGrad.apply,
         lambda r, s: (_x(r, 2, 3 * s, 40 * s), r.random(40 * s).astype(_f32) + 0.5, 1e-6),
         _rms_ref, grad=(0, 1)),
    Case("attorch.rms_norm_no_weight", layers.RMSNormAutoGrad.apply,
         lambda r, s: (_x(r, 40 * s), None, None), _rms_ref),
    Case("attorch.layer_norm", layers.LayerNormAutoGrad.apply,
         lambda r, s: (_x(r, 4 * s, 40 * s) - 2, r.random(40 * s).astype(_f32) + 0.5,
                       r.random(40 * s).astype(_f32), 1e-5, True),
         _ln_ref, grad=(0, 1, 2)),
    _p_loss_case("mse_loss", 2, "mean"),
    _p_loss_case("l1_loss_sum", 1, "sum"),
    _p_loss_case("huber_loss", 3, "none", 0.5),
    _p_loss_case("smooth_l1_loss", 0, "mean", 0.5),
]


def _ce_ref(x, target, weight=None):
    m = x.max(-1, keepdims=True)
    logp = x - (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))
    picked = -np.take_along_axis(logp, target[:, None], -1)[:, 0]
    w = np.ones_like(picked) if weight is None else weight[target]
    return ((w * picked).sum() / w.sum(),)


def _nll_ref(x, target, reduction, weight=None):
    picked = -np.take_along_axis(x, target[:, None], 1)[:, 0]      # (N, C, ...) -> (N, ...)
    w = np.ones_like(picked) if weight is None else weight[target]
    loss = w * picked
    return ({"none": loss, "sum": loss.sum(), "mean": loss.sum() / w.sum()}[reduction],)


def _labels(r, n, c, *spatial):
    return r.integers(0, c, (n, *spatial)).astype(np.int64)


CASES += [
    Case("attorch.cross_entropy", layers.CrossEntropyLossAutoGrad.apply,
         lambda r, s: (_x(r, 6 * s, 10 * s), _labels(r, 6 * s, 10 * s), None), _ce_ref),
    Case("attorch.cross_entropy_weighted", layers.CrossEntropyLossAutoGrad.apply,
         lambda r, s: (_x(r, 6 * s, 10 * s), _labels(r, 6 * s, 10 * s), r.random(10 * s).astype(_f32) + 0.5),
         _ce_ref),
    # (N, C, S) log-probabilities against (N, S) labels: the spatial dims flattened by the host
    Case("attorch.nll_loss_none", layers.NLLLossAutoGrad.apply,
         lambda r, s: (_x(r, 4 * s, 5, 3), _labels(r, 4 * s, 5, 3), "none", None), _nll_ref),
    Case("attorch.nll_loss_mean_weighted", layers.NLLLossAutoGrad.apply,
         lambda r, s: (_x(r, 4 * s, 5), _labels(r, 4 * s, 5), "mean", r.random(5).astype(_f32) + 0.5),
         _nll_ref),
    Case("attorch.nll_loss_sum", layers.NLLLossAutoGrad.apply,
         lambda r, s: (_x(r, 4 * s, 5, 2, 3), _labels(r, 4 * s, 5, 2, 3), "sum", None), _nll_ref,
         upstream_bug="attorch's NLLLossAutoGrad.forward launches nll_loss_forward_kernel on `input` "
                      "with `flattened_input`'s strides; input.flatten(2, -1) copies a non-contiguous "
                      "input with two or more spatial dims, so those strides do not describe `input` "
                      "(nll_loss_layer.py:77-81; wrong values under torch too)"),
]
