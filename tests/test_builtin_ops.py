"""Built-in ``tp::`` operators: gradients agree with finite differences (every differentiable op),
fake rules reproduce the real outputs' metadata (every op), and dtype promotion follows torch.

Both parametrizations run over the built-in ops (``tensorplay.ops.tp``): a new built-in op without an entry in
the core's sample table ``tensorplay.testing.builtin_samples`` (and, if differentiable, a gradcheck
sample) fails ``test_tables_cover_every_builtin``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import fake
from tensorplay.testing import builtin_samples

F64 = tp.float64

# every built-in op (namespace ``tp``), by name: the public spelling of the op table
BUILTINS = {n: getattr(tp.ops.tp, n) for n in dir(tp.ops.tp)}
O = tp.ops.tp


# The sample table is the core's (tensorplay.testing.builtin_samples): the same samples feed the
# device plugins' tensorplay_sample_inputs hooks, so `tensorplay check --plugin tensorplay-cpu`
# runs opcheck over exactly these calls.
SAMPLES = builtin_samples.SAMPLES
NOT_DIFFERENTIABLE = builtin_samples.NOT_DIFFERENTIABLE


def _samples(name):
    return builtin_samples.samples(name, "cpu")


def _rng():
    return np.random.default_rng(1234)


NO_DERIVATIVE = builtin_samples.NO_DERIVATIVE


def _differentiable():
    return sorted(n for n, op in BUILTINS.items() if op.has_autograd and n not in NO_DERIVATIVE)


def test_tables_cover_every_builtin():
    missing = sorted(set(BUILTINS) - set(SAMPLES))
    assert not missing, f"add sample inputs to SAMPLES for new built-in ops: {missing}"
    stale = sorted(set(SAMPLES) - set(BUILTINS))
    assert not stale, f"SAMPLES names ops that do not exist: {stale}"
    diff = set(_differentiable())
    assert diff | NOT_DIFFERENTIABLE | NO_DERIVATIVE == set(BUILTINS)
    assert not diff & NOT_DIFFERENTIABLE, "an op listed as non-differentiable has a formula"
    assert all(BUILTINS[n].has_autograd for n in NO_DERIVATIVE), "a NO_DERIVATIVE op needs " \
        "the formula that raises (its output requires grad, as torch's)"
    no_grad_sample = [n for n in diff if not any(s.grad for s in _samples(n))]
    assert not no_grad_sample, f"differentiable ops without a gradcheck sample: {no_grad_sample}"


# -- gradcheck --------------------------------------------------------------------------------
def _leaves_and_rebuild(args, kwargs):
    """Floating tensors among args (also inside lists) -> leaves; and a function that rebuilds
    the arguments from new leaf values."""
    slots = []
    for i, a in enumerate(args):
        if isinstance(a, tp.Tensor) and a.dtype.is_floating_point:
            slots.append((i, None))
        elif isinstance(a, list):
            slots.extend((i, j) for j, x in enumerate(a)
                         if isinstance(x, tp.Tensor) and x.dtype.is_floating_point)
    leaves = tuple((args[i] if j is None else args[i][j]).detach().clone().requires_grad_(True)
                   for i, j in slots)

    def rebuild(vals):
        out = [list(a) if isinstance(a, list) else a for a in args]
        for (i, j), v in zip(slots, vals):
            if j is None:
                out[i] = v
            else:
                out[i][j] = v
        return out, dict(kwargs)
    return leaves, rebuild


@pytest.mark.parametrize("name", _differentiable())
def test_gradcheck(name):
    op = BUILTINS[name]
    samples = [s for s in _samples(name) if s.grad]
    assert samples
    for s in samples:
        leaves, rebuild = _leaves_and_rebuild(s.args, s.kwargs)
        assert leaves, f"{name}: sample has no floating tensor input"
        assert all(x.dtype is F64 for x in leaves)

        def fn(*vals):
            args, kwargs = rebuild(vals)
            if op.mutates_args:          # never write a leaf: write a differentiable copy
                args[0] = O.clone(args[0])
            return op(*args, **kwargs)

        assert tp.autograd.gradcheck(fn, leaves, eps=1e-6, atol=1e-6, rtol=1e-4), name


@pytest.mark.parametrize("name", _differentiable())
def test_gradgradcheck(name):
    """Backward formulas are themselves differentiable (create_graph=True / double backward)."""
    op = BUILTINS[name]
    samples = [s for s in _samples(name) if s.grad][:2]
    for s in samples:
        leaves, rebuild = _leaves_and_rebuild(s.args, s.kwargs)

        def fn(*vals):
            args, kwargs = rebuild(vals)
            if op.mutates_args:
                args[0] = O.clone(args[0])
            return op(*args, **kwargs)

        assert tp.autograd.gradgradcheck(fn, leaves, eps=1e-6, atol=1e-5, rtol=1e-4), name


def test_gradcheck_catches_a_wrong_formula():
    """gradcheck itself can fail: a Function with a deliberately wrong backward is reported."""
    class Bad(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x          # should be 2 * x

    x = tp.tensor([0.5, -1.0, 2.0], dtype=F64, requires_grad=True)
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        tp.autograd.gradcheck(Bad.apply, (x,))
    assert tp.autograd.gradcheck(Bad.apply, (x,), raise_exception=False) is False

    class FirstOrderOnly(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x.detach()      # right value, but cut from the graph

    assert tp.autograd.gradcheck(FirstOrderOnly.apply, (x,))
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        tp.autograd.gradgradcheck(FirstOrderOnly.apply, (x,))


# -- fake rules == real metadata ----------------------------------------------------------------
def _meta(x):
    if isinstance(x, (tuple, list)):
        return [_meta(y) for y in x]
    return (tuple(x.shape), x.dtype, str(x.device), tuple(x.stride()), x.storage_offset())


def _to_fake(x):
    if isinstance(x, tp.Tensor):
        return fake.from_real(x)
    if isinstance(x, list):
        return [_to_fake(y) for y in x]
    return x


def _fake_samples():
    out = []
    for name in sorted(BUILTINS):
        for i, s in enumerate(_samples(name)):
            out.append(pytest.param(name, i, id=f"{name}-{i}"))
    return out


@pytest.mark.parametrize("name,i", _fake_samples())
def test_fake_rule_matches_real(name, i):
    op = BUILTINS[name]
    s = _samples(name)[i]
    fargs = [_to_fake(a) for a in s.args]
    fkw = {k: _to_fake(v) for k, v in s.kwargs.items()}
    if not s.fake:
        # a data-dependent output size: the fake rule gives a dynamic size (masked_select,
        # nonzero: get_ctx().new_dynamic_size()) where the real size varies
        with fake.FakeTensorMode():
            f = op(*fargs, **fkw)
        r = op(*s.args, **s.kwargs)
        dyn = [fake.is_dynamic_size(n) for n in f.shape]
        assert any(dyn) and len(f.shape) == len(r.shape) and f.dtype == r.dtype
        assert [a for a, d in zip(f.shape, dyn) if not d] == [b for b, d in zip(r.shape, dyn)
                                                             if not d]
        return
    with fake.FakeTensorMode():
        f = op(*fargs, **fkw)
    r = op(*s.args, **s.kwargs)
    assert _meta(f) == _meta(r), f"{name}: fake {_meta(f)} != real {_meta(r)}"
    for t in (f if isinstance(f, (list, tuple)) else [f]):
        assert t.is_fake


# -- dtype promotion (torch's result_type) ------------------------------------------------------
def _z(dtype, shape=(2,)):
    return tp.zeros(*shape, dtype=dtype) + (1 if dtype is not tp.bool else True)


PROMOTION = [
    # (a, b, expected dtype of a + b) -- values are torch's
    (lambda: _z(tp.int64), lambda: 1.5, tp.float32),
    (lambda: _z(tp.int32), lambda: 2, tp.int32),
    (lambda: _z(tp.bool), lambda: 2, tp.int64),
    (lambda: _z(tp.bool), lambda: 2.0, tp.float32),
    (lambda: _z(tp.bool), lambda: _z(tp.bool), tp.bool),
    (lambda: _z(tp.float16), lambda: _z(tp.float32), tp.float32),
    (lambda: _z(tp.float16), lambda: 2.5, tp.float16),
    (lambda: _z(tp.uint8), lambda: _z(tp.int8), tp.int16),
    (lambda: _z(tp.int8), lambda: _z(tp.int64, ()), tp.int8),          # 0-dim: same category
    (lambda: _z(tp.float32), lambda: _z(tp.float64, ()), tp.float32),
    (lambda: _z(tp.int32), lambda: _z(tp.float64, ()), tp.float64),    # 0-dim: higher category
    (lambda: _z(tp.float64, ()), lambda: _z(tp.float16, ()), tp.float64),
    (lambda: _z(tp.int16), lambda: _z(tp.float16), tp.float16),
]


@pytest.mark.parametrize("i", range(len(PROMOTION)))
def test_promotion_add(i):
    a, b, want = PROMOTION[i][0](), PROMOTION[i][1](), PROMOTION[i][2]
    assert (a + b).dtype is want
    assert (b + a).dtype is want
    with fake.FakeTensorMode():
        fa = _to_fake(a)
        fb = _to_fake(b)
        assert (fa + fb).dtype is want


def test_division_and_float_functions_promote_ints_to_float32():
    a, b = tp.tensor([1, 2]), tp.tensor([2, 4])
    q = a / b
    assert q.dtype is tp.float32 and q.tolist() == [0.5, 0.5]
    assert (1 / a).dtype is tp.float32 and (a / 2).dtype is tp.float32
    assert (tp.zeros(2, dtype=tp.int32) / tp.tensor(2.0, dtype=F64)).dtype is F64
    for f in (tp.exp, tp.log, tp.sqrt, tp.tanh, tp.sigmoid, tp.sin):
        assert f(a).dtype is tp.float32
    assert tp.relu(a).dtype is tp.int64 and tp.abs(a).dtype is tp.int64
    assert (a ** 0.5).dtype is tp.float32 and (2 ** a).dtype is tp.int64


def test_floor_division_and_remainder_follow_python_signs():
    x = tp.tensor([7, -7, 5])
    assert (x // 2).tolist() == [3, -4, 2] and (x % 3).tolist() == [1, 2, 2]
    assert (17 // x).tolist() == [2, -3, 3] and (17 % x).tolist() == [3, -4, 2]
    assert (x // 2).dtype is tp.int64 and (x // 2.0).dtype is tp.float32
    f = tp.tensor([7.5, -7.5])
    assert (f // 2).tolist() == [3.0, -4.0] and (f % 2).tolist() == [1.5, 0.5]
    assert (7.5 % tp.tensor([2, -2])).tolist() == [1.5, -0.5]
    with pytest.raises(ZeroDivisionError, match="floor_divide"):
        x // 0
    with pytest.raises(ZeroDivisionError, match="remainder"):
        x % tp.tensor([1, 0, 1])


def test_comparisons_and_logical_ops_give_bool():
    a = tp.tensor([1, 2, 3])
    for r in (a < 2, a <= 2, a > 2.5, a >= 2, a == 2, a != 2, 2 < a, (a > 1) & (a < 3),
              (a > 2) | (a < 2), ~(a > 1)):
        assert r.dtype is tp.bool
    assert ((a > 1) & (a < 3)).tolist() == [False, True, False]
    assert (2.5 < a).tolist() == [False, False, True]


def test_python_int_out_of_range_wraps_like_torch():
    u = tp.tensor([0, 10], dtype=tp.uint8)
    assert (u - 1).dtype is tp.uint8
    assert (u - 1).tolist() == [255, 9]
    assert (u + 256).tolist() == [0, 10]


def test_bool_subtraction_is_refused():
    a = tp.tensor([True, False])
    with pytest.raises(RuntimeError, match="bool"):
        a - a


def test_inplace_refuses_result_of_higher_category():
    x = tp.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.add_(1.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.mul_(tp.tensor([0.5, 0.5]))
    with pytest.raises(RuntimeError, match="can't be cast"):
        with fake.FakeTensorMode():
            fake.from_real(x).add_(1.5)
    assert x.tolist() == [1, 2]
    y = tp.tensor([1.0, 2.0])
    y.add_(tp.tensor([1, 1]))            # int into float: fine
    assert y.tolist() == [2.0, 3.0]


def test_mean_of_integers_is_an_error_on_real_and_fake():
    x = tp.tensor([1, 2])
    with pytest.raises(RuntimeError, match="mean"):
        x.mean()
    with pytest.raises(RuntimeError, match="mean"):
        fake.from_real(x).mean()
    assert x.mean(dtype=F64).item() == 1.5


def test_where_with_two_scalars_follows_python_number_rules():
    c = tp.tensor([True, False])
    assert tp.where(c, 1.0, 0.0).dtype is tp.float32
    assert tp.where(c, 1, 0).dtype is tp.int64
    assert tp.where(c, 1, 0).tolist() == [1, 0]
    with fake.FakeTensorMode():
        assert tp.where(fake.from_real(c), 1.0, 0.0).dtype is tp.float32


def test_cat_and_stack_promote_all_inputs():
    ts = [tp.zeros(2, dtype=tp.int8), tp.zeros(2, dtype=tp.int64), tp.zeros(2, dtype=tp.uint8)]
    assert tp.cat(ts).dtype is tp.int64
    assert tp.stack(ts).dtype is tp.int64
    assert tp.stack([tp.zeros(2, dtype=tp.int64), tp.zeros(2)]).dtype is tp.float32


# -- values against numpy -----------------------------------------------------------------------
def test_values_match_numpy():
    rng = _rng()
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4,))
    ta, tb = tp.tensor(a), tp.tensor(b)
    np.testing.assert_allclose((ta + tb).numpy(), a + b)
    np.testing.assert_allclose((ta * tb - tb / 3).numpy(), a * b - b / 3)
    np.testing.assert_allclose((ta @ tb).numpy(), a @ b)
    np.testing.assert_allclose(ta.exp().numpy(), np.exp(a))
    np.testing.assert_allclose(ta.tanh().numpy(), np.tanh(a))
    np.testing.assert_allclose(ta.sigmoid().numpy(), 1 / (1 + np.exp(-a)))
    np.testing.assert_allclose(ta.relu().numpy(), np.maximum(a, 0))
    np.testing.assert_allclose(ta.abs().sqrt().numpy(), np.sqrt(np.abs(a)))
    np.testing.assert_allclose(ta.abs().log().numpy(), np.log(np.abs(a)))
    np.testing.assert_allclose((ta.abs() ** tb).numpy(), np.abs(a) ** b)
    np.testing.assert_allclose(ta.sum(1).numpy(), a.sum(1))
    np.testing.assert_allclose(ta.mean(0, keepdim=True).numpy(), a.mean(0, keepdims=True))
    np.testing.assert_allclose(ta.amax(1).numpy(), a.max(1))
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(ta.softmax(1).numpy(), e / e.sum(1, keepdims=True))
    np.testing.assert_allclose(tp.where(ta > 0, ta, tb).numpy(), np.where(a > 0, a, b))
    np.testing.assert_allclose(tp.cat([ta, ta], 0).numpy(), np.concatenate([a, a], 0))
    np.testing.assert_allclose(tp.stack([tb, tb], 1).numpy(), np.stack([b, b], 1))


def test_erf_is_accurate_in_float64():
    import math
    xs = [-3.0, -1.2, -0.3, 0.0, 1e-3, 0.5, 1.0, 2.2, 4.0]
    got = tp.tensor(xs, dtype=F64).erf().tolist()
    for x, g in zip(xs, got):
        assert abs(g - math.erf(x)) < 1e-12, (x, g, math.erf(x))
    f32 = tp.tensor(xs).erf()
    assert f32.dtype is tp.float32
    assert max(abs(g - math.erf(x)) for x, g in zip(xs, f32.tolist())) < 1e-6


def test_errors_name_the_op_and_argument():
    x = tp.ones(2, 3)
    with pytest.raises(RuntimeError, match="matmul.*cannot be multiplied"):
        x @ x
    with pytest.raises(RuntimeError, match="size of tensor a"):
        x + tp.ones(4)
    with pytest.raises(TypeError, match="argument 'other'"):
        O.add(x, "nope")
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sum(5)


@pytest.mark.parametrize("name", sorted(NO_DERIVATIVE))
def test_no_derivative_ops_raise_torchs_error_in_backward(name):
    op = BUILTINS[name]
    for s in _samples(name):
        leaves, rebuild = _leaves_and_rebuild(s.args, s.kwargs)
        if not leaves:
            continue
        args, kwargs = rebuild(leaves)
        out = op(*args, **kwargs)
        assert out.requires_grad
        with pytest.raises(RuntimeError, match=f"derivative for aten::{name} is not implemented"):
            tp.autograd.grad(out.sum(), leaves)
