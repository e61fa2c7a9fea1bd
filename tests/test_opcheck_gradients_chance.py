"""``opcheck``'s ``test_gradients`` does not pass a wrong formula by chance.

The check compares random projections ``u . J v`` of the op's Jacobian (finite differences)
with ``(J^T u) . v`` (the formula). One projection of a wrong Jacobian can land inside the
tolerance by chance: about ``rtol * |J| / |J_formula - J|`` of the time, which is 1 draw in
100 or more in float32 for an error of 15%. ``test_opcheck_repeat.py::test_every_check_leaves_
the_sample_untouched`` failed that way now and then (the planted ``* 3.5`` for ``* 3.0`` passed),
and so did the composite test of test_opcheck_gradients.py before its inputs were fixed.
Here each planted error is checked on many random samples, so one missed draw fails the test;
and correct ops, smooth or with kinks and ties, never fail on any of them."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library as lib
from tensorplay.testing.opcheck import run_checks

Tensor = tp.Tensor
G = "test_gradients"
SEEDS = range(60)


def grads(op, *args):
    return run_checks(op, args, test_utils=[G])[G]


def _np(x):
    return x.detach().numpy()


def _only_f32(x):
    if x.dtype is not tp.float32:
        raise TypeError("float32 only")


def _save_x(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


# the planted errors: a scale 3.5 for 3.0 (full rank, 1/7 of the Jacobian), a missing term of a
# broadcast sum (rank one), a factor 2 on a nonlinear derivative; in a kernel that takes float64
# (the check runs in float64) and in one that takes float32 only (the check runs in float32, 30x
# coarser tolerance); several names each (the check's generator is seeded by the op's name)
NAMES = ("a", "b", "c")


def _ops(name):
    @lib.custom_op(f"chance_{name}::scale64", mutates_args=())
    def scale64(x: Tensor) -> Tensor:
        return x * 3.0

    @lib.custom_op(f"chance_{name}::scale32", mutates_args=())
    def scale32(x: Tensor) -> Tensor:
        _only_f32(x)
        return x * 3.0

    for op in (scale64, scale32):
        op.register_fake(lambda x: x.new_empty(x.shape))
        op.register_autograd(lambda ctx, g: g * 3.5)                 # planted: 3.5

    @lib.custom_op(f"chance_{name}::plus_sum32", mutates_args=())
    def plus_sum32(x: Tensor) -> Tensor:
        _only_f32(x)
        a = _np(x)
        return tp.from_numpy(a + a.sum())

    plus_sum32.register_fake(lambda x: x.new_empty(x.shape))
    plus_sum32.register_autograd(lambda ctx, g: g)                    # planted: no g.sum()

    @lib.custom_op(f"chance_{name}::sin32", mutates_args=())
    def sin32(x: Tensor) -> Tensor:
        _only_f32(x)
        return tp.from_numpy(np.sin(_np(x)))

    sin32.register_fake(lambda x: x.new_empty(x.shape))
    sin32.register_autograd(lambda ctx, g: g * 2.0 * ctx.saved_tensors[0].cos(),  # planted: 2
                            setup_context=_save_x)
    return {"scale64": scale64, "scale32": scale32, "plus_sum32": plus_sum32, "sin32": sin32}


OPS = {name: _ops(name) for name in NAMES}


@pytest.mark.parametrize("kind", ["scale64", "scale32", "plus_sum32", "sin32"])
def test_planted_wrong_formula_is_caught_on_every_sample(kind):
    missed = []
    for name in NAMES:
        op = OPS[name][kind]
        for seed in SEEDS:
            tp.manual_seed(seed)
            shape = ((6, 4), (5,), (3, 7))[seed % 3]
            x = tp.randn(*shape)
            if seed % 2:
                x = tp.randn(*shape[::-1]).t() if len(shape) == 2 else x
                x.requires_grad_(True)
            r = grads(op, x)
            if r.status != "fail":
                missed.append((op.name, seed, shape, r.status, r.message[:200]))
    assert not missed, f"{len(missed)} of {len(NAMES) * len(SEEDS)} missed: {missed[:5]}"


# ---------------------------------------------------------------------------- no false failures

@lib.custom_op("chance_ok::softplus32", mutates_args=())
def softplus32(x: Tensor) -> Tensor:
    _only_f32(x)
    return tp.from_numpy(np.logaddexp(0, _np(x)).astype(np.float32))


softplus32.register_autograd(lambda ctx, g: g * tp.sigmoid(ctx.saved_tensors[0]),
                             setup_context=_save_x)


@lib.custom_op("chance_ok::relu", mutates_args=())
def relu(x: Tensor) -> Tensor:
    return tp.from_numpy(np.maximum(_np(x), 0))


relu.register_autograd(lambda ctx, g: g * (ctx.saved_tensors[0] > 0).to(g.dtype),
                       setup_context=_save_x)


@lib.custom_op("chance_ok::relu32", mutates_args=())
def relu32(x: Tensor) -> Tensor:
    _only_f32(x)
    return tp.from_numpy(np.maximum(_np(x), 0))


relu32.register_autograd(lambda ctx, g: g * (ctx.saved_tensors[0] > 0).to(g.dtype),
                         setup_context=_save_x)


@lib.custom_op("chance_ok::rowmax", mutates_args=())
def rowmax(x: Tensor) -> Tensor:
    return tp.from_numpy(np.max(_np(x), axis=-1))


def _rowmax_bw(ctx, g):
    a = _np(ctx.saved_tensors[0])
    first = np.zeros_like(a)
    first[np.arange(a.shape[0]), np.argmax(a, -1)] = 1.0
    return tp.from_numpy(first) * g.unsqueeze(-1)


rowmax.register_autograd(_rowmax_bw, setup_context=_save_x)


@lib.custom_op("chance_ok::plus_sum", mutates_args=())
def plus_sum(x: Tensor) -> Tensor:
    a = _np(x)
    return tp.from_numpy(a + a.sum())


plus_sum.register_autograd(lambda ctx, g: g + g.sum())


def test_right_formulas_never_fail_smooth_or_not():
    bad = []
    for seed in SEEDS:
        tp.manual_seed(seed)
        x = tp.randn(6, 5)
        zeros = tp.randn(6, 5)
        zeros[:, :2] = 0.0                                       # relu exactly at its kink
        ties = tp.from_numpy(np.repeat(_np(tp.randn(4, 1)), 3, 1))   # 3-way ties in each row
        for op, arg in ((softplus32, x), (plus_sum, x), (relu, zeros), (relu32, zeros),
                        (rowmax, ties)):
            r = grads(op, arg)
            if r.status not in ("pass", "skip"):
                bad.append((op.name, seed, r.message[:300]))
    assert not bad, bad
