"""A custom op's body and autograd formula traced to array level on the AOT path of
``tensorplay.compile`` (``tensorplay/_joint.py``, issue 32 item 6): where the body / formula is
elementwise ops and sum/mean reductions on cpu float32/float64, the compiled call runs it as one
chain of eager's own kernels on the arrays -- so values and gradients are eager's bit for bit,
and the Python body / formula itself runs only while traced (as torch.compile traces the code it
compiles). Everything else -- data-dependent Python, ``.numpy()``/``.item()``, writes, a device
kernel registered for cpu, a gradient laid out otherwise than traced -- runs the body / formula
itself on every call, as before.

The count of Python calls of a body or formula is how these tests see which path ran; it is
taken from outside, by a profile hook (a counter inside the body would be a side effect, and a
body or formula with side effects, or reading state that may change, always runs itself)."""

import sys
import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.library import custom_op

_N = [0]
EPS = 1e-5


# code object of a watched body / formula -> (its counts, "body" | "formula")
_WATCH: dict = {}


def _watch(calls, key, fn):
    _WATCH[fn.__code__] = (calls, key)
    return fn


def _hook(frame, event, arg):
    if event == "call":
        w = _WATCH.get(frame.f_code)
        if w is not None:
            w[0][w[1]] += 1


@pytest.fixture(autouse=True)
def _count_calls():
    prev = sys.getprofile()
    sys.setprofile(_hook)
    try:
        yield
    finally:
        sys.setprofile(prev)
        _WATCH.clear()


def _name(tag):
    _N[0] += 1
    return f"arr57test::{tag}{_N[0]}"


def _layer_norm(calls, body=None, backward=None):
    """bench_train's layer norm as a custom op; ``calls`` counts body / formula runs."""
    def ln_body(x: tp.Tensor, w: tp.Tensor, b: tp.Tensor) -> tp.Tensor:
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        r = tp.rsqrt((xc * xc).mean(-1, keepdim=True) + EPS)
        return xc * r * w + b

    def setup(ctx, inputs, output):
        x, w, _ = inputs
        ctx.save_for_backward(x, w)

    def ln_backward(ctx, g):
        x, w = ctx.saved_tensors
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        r = tp.rsqrt((xc * xc).mean(-1, keepdim=True) + EPS)
        xh = xc * r
        gx = g * w
        dx = r * (gx - gx.mean(-1, keepdim=True) - xh * (gx * xh).mean(-1, keepdim=True))
        return dx, (g * xh).sum(0), g.sum(0)

    op = custom_op(_name("ln"), _watch(calls, "body", body or ln_body), mutates_args=())
    op.register_autograd(_watch(calls, "formula", backward or ln_backward), setup_context=setup)
    return op


def _mlp(op):
    def f(w1, b1, g, beta, w2, b2, x, onehot):
        h = op(tp.relu(x @ w1 + b1), g, beta)
        logits = h @ w2 + b2
        return -(tp.log_softmax(logits, -1) * onehot).sum() / x.shape[0]
    return f


def _mlp_args(batch, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal((16, 12)) * 0.3, rng.standard_normal(12) * 0.1,
            1 + rng.standard_normal(12) * 0.1, rng.standard_normal(12) * 0.1,
            rng.standard_normal((12, 5)) * 0.3, rng.standard_normal(5) * 0.1]
    params = [a.astype(dtype) for a in arrs]
    x = rng.standard_normal((batch, 16)).astype(dtype)
    onehot = np.eye(5, dtype=dtype)[rng.integers(0, 5, batch)]
    return params, x, onehot


def _run(fn, params, x, onehot):
    """loss and the six gradients (NumPy arrays) of one call of ``fn``."""
    ps = [tp.tensor(p, requires_grad=True) for p in params]
    loss = fn(*ps, tp.tensor(x), tp.tensor(onehot))
    loss.backward()
    return loss.detach().numpy().copy(), [p.grad.numpy().copy() for p in ps]


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def _assert_bits(eager, compiled):
    (l0, g0), (l1, g1) = eager, compiled
    assert _same(l0, l1)
    assert all(_same(a, b) for a, b in zip(g0, g1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [1, 7, 64])
def test_layer_norm_mlp_is_eagers_bits_and_runs_at_array_level(batch, dtype):
    calls = {"body": 0, "formula": 0}
    op = _layer_norm(calls)
    f = _mlp(op)
    args = _mlp_args(batch, dtype)
    eager = _run(f, *args)
    c = tp.compile(f)
    for _ in range(3):        # capture, validation, the plan (the body and formula traced)
        _assert_bits(eager, _run(c, *args))
    before = dict(calls)
    for _ in range(3):
        _assert_bits(eager, _run(c, *args))
    # the fast path ran the traced body and formula, not the Python functions
    assert calls == before


def test_new_shapes_are_traced_again_with_eagers_bits():
    calls = {"body": 0, "formula": 0}
    op = _layer_norm(calls)
    f = _mlp(op)
    c = tp.compile(f)
    for batch in (3, 9, 3):
        args = _mlp_args(batch, seed=batch)
        eager = _run(f, *args)
        for _ in range(3):
            _assert_bits(eager, _run(c, *args))
    before = dict(calls)
    _assert_bits(_run(f, *_mlp_args(9, seed=9)), _run(c, *_mlp_args(9, seed=9)))
    assert calls["formula"] == before["formula"] + 1       # (the eager reference's)


def _steady_calls(op_calls, f, args, n=3):
    """Run ``tp.compile(f)`` past its warm-up, check ``n`` more calls against eager bit for bit
    and return how many body / formula calls those ``n`` calls made."""
    eager = _run(f, *args)
    c = tp.compile(f)
    for _ in range(3):
        _assert_bits(eager, _run(c, *args))
    before = dict(op_calls)
    for _ in range(n):
        _assert_bits(eager, _run(c, *args))
    return {k: op_calls[k] - before[k] for k in op_calls}


def _scale_op(calls, body, backward=None):
    """``body(x, w)`` as a custom op whose formula is ``backward`` (default: (g * w, g * x))."""
    def bw(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, g * x

    def setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def counted(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
        return body(x, w)

    op = custom_op(_name("scale"), _watch(calls, "body", counted), mutates_args=())
    # (a body reading values cannot be its own fake: compile's capture needs this one)
    op.register_fake(lambda x, w: tp.empty_like(x))
    op.register_autograd(_watch(calls, "formula", backward or bw), setup_context=setup)
    return op


def _scale_fn(op):
    def f(x, w):
        return (op(x.tanh(), w) * 3.0).sum()
    return f


def _scale_args():
    rng = np.random.default_rng(5)
    return [rng.standard_normal((4, 6)).astype(np.float32) for _ in range(2)]


def _run2(fn, a, b):
    x, w = tp.tensor(a, requires_grad=True), tp.tensor(b, requires_grad=True)
    loss = fn(x, w)
    loss.backward()
    return loss.detach().numpy().copy(), [x.grad.numpy().copy(), w.grad.numpy().copy()]


def _steady2(calls, f, n=3):
    a, b = _scale_args()
    eager = _run2(f, a, b)
    c = tp.compile(f)
    for _ in range(3):
        _assert_bits(eager, _run2(c, a, b))
    before = dict(calls)
    for _ in range(n):
        _assert_bits(eager, _run2(c, a, b))
    return {k: calls[k] - before[k] for k in calls}


def test_plain_elementwise_body_and_formula_are_traced():
    calls = {"body": 0, "formula": 0}
    op = _scale_op(calls, lambda x, w: x * w + 1.0)
    assert _steady2(calls, _scale_fn(op)) == {"body": 0, "formula": 0}


@pytest.mark.parametrize("kind", ["item", "numpy", "branch"])
def test_body_reading_values_runs_on_every_call(kind):
    calls = {"body": 0, "formula": 0}

    def body(x, w):
        if kind == "item":
            s = x.sum().item()
            return x * w + s
        if kind == "numpy":
            return tp.tensor(x.numpy() * 2.0) * w
        if (x.sum() > 0).item():      # data-dependent branch
            return x * w
        return x - w

    op = _scale_op(calls, body)
    got = _steady2(calls, _scale_fn(op))
    # the body runs on each call (its dispatch); the formula is still traced
    assert got == {"body": 3, "formula": 0}


def test_formula_reading_values_runs_on_every_call():
    calls = {"body": 0, "formula": 0}

    def bw(ctx, g):
        x, w = ctx.saved_tensors
        k = 2.0 if (x.sum() > 0).item() else 1.0
        return g * w * k, g * x * k

    op = _scale_op(calls, lambda x, w: x * w, backward=bw)
    got = _steady2(calls, _scale_fn(op))
    # (a formula that cannot be traced keeps the whole graph on the per-op path: the body runs
    # by dispatch too)
    assert got["formula"] == 3


def test_body_writing_in_place_runs_on_every_call():
    calls = {"body": 0, "formula": 0}

    def body(x, w):
        y = x * w
        y.add_(1.0)
        return y

    op = _scale_op(calls, body)
    assert _steady2(calls, _scale_fn(op))["body"] == 3


@pytest.mark.parametrize("body", [lambda x, w: x @ w.t() @ w,
                                  lambda x, w: (x * w).reshape(6, 4).reshape(4, 6) + 0.0],
                         ids=["matmul", "view"])
def test_body_with_a_matmul_or_a_view_runs_on_every_call(body):
    calls = {"body": 0, "formula": 0}
    op = _scale_op(calls, body)
    assert _steady2(calls, _scale_fn(op))["body"] == 3


def test_formula_returning_its_gradient_and_none():
    calls = {"body": 0, "formula": 0}

    def bw(ctx, g):
        return g, None

    op = _scale_op(calls, lambda x, w: x + w, backward=bw)

    def f(x, w):
        return (op(x.tanh(), w) * 3.0).sum()

    a, b = _scale_args()
    eager_x = tp.tensor(a, requires_grad=True)
    f(eager_x, tp.tensor(b)).backward()
    c = tp.compile(f)
    for _ in range(5):
        x = tp.tensor(a, requires_grad=True)
        w = tp.tensor(b, requires_grad=True)
        c(x, w).backward()
        assert _same(x.grad.numpy(), eager_x.grad.numpy()) and w.grad is None


def test_gradient_laid_out_otherwise_runs_the_formula():
    calls = {"body": 0, "formula": 0}
    op = _scale_op(calls, lambda x, w: x * w + 1.0)
    rng = np.random.default_rng(2)
    m = tp.tensor(rng.standard_normal((4, 4)).astype(np.float32))

    def f(x, w):
        # the op's output gradient comes as the transpose of a matmul's: not row-major
        return ((op(x.tanh(), w).t() @ m) * 1.5).sum()

    got = _steady2(calls, f)
    assert got["formula"] == 3 and got["body"] == 0


def test_cpu_kernel_registered_is_the_one_that_runs():
    calls = {"body": 0, "formula": 0}
    op = _scale_op(calls, lambda x, w: x * w)
    op.register_kernel("cpu")(lambda x, w: x * w * 2.0)
    f = _scale_fn(op)
    a, b = _scale_args()
    eager = _run2(f, a, b)
    c = tp.compile(f)
    for _ in range(5):
        _assert_bits(eager, _run2(c, a, b))
    assert calls["body"] == 0        # (the registered cpu kernel ran, never the body)


def test_kernel_registered_after_the_plan_takes_effect():
    calls = {"body": 0, "formula": 0}
    op = _scale_op(calls, lambda x, w: x * w)
    f = _scale_fn(op)
    a, b = _scale_args()
    c = tp.compile(f)
    for _ in range(4):
        _run2(c, a, b)
    op.register_kernel("cpu")(lambda x, w: x * w * 2.0)
    _assert_bits(_run2(f, a, b), _run2(c, a, b))
    x = tp.tensor(a)
    assert np.array_equal(c(x, tp.tensor(b)).numpy(), f(x, tp.tensor(b)).numpy())


def test_custom_op_without_formula_differentiates_its_body_as_eager():
    # (SPEC 2: a composite custom op without register_autograd is differentiable through its
    # body; the AOT node needs a formula, so the per-op path runs it, the body on every call)
    calls = {"body": 0}

    def body(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
        return x * w + 1.0

    op = custom_op(_name("noformula"), _watch(calls, "body", body), mutates_args=())
    f = _scale_fn(op)
    a, b = _scale_args()
    eager = _run2(f, a, b)
    c = tp.compile(f)
    for _ in range(3):
        _assert_bits(eager, _run2(c, a, b))
    before = calls["body"]
    for _ in range(3):
        _assert_bits(eager, _run2(c, a, b))
    assert calls["body"] == before + 3


def test_infinite_and_nan_values_warn_as_eager_does_not():
    calls = {"body": 0, "formula": 0}
    op = _layer_norm(calls)
    f = _mlp(op)
    params, x, onehot = _mlp_args(4)
    x[:] = 0.0                       # every row constant after relu(0 @ w1 + b1)... 
    params[1][:] = 0.0               # ...: zero variance, rsqrt(eps) stays finite
    params[0][:] = np.inf            # inf * 0 -> NaN through the whole step
    eager = _run(f, params, x, onehot)
    c = tp.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            got = _run(c, params, x, onehot)
    assert np.array_equal(eager[0], got[0], equal_nan=True)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(eager[1], got[1]))


def test_formula_saving_the_output_is_traced_with_the_body():
    calls = {"body": 0, "formula": 0}

    def body(x: tp.Tensor) -> tp.Tensor:
        return tp.exp(x * 0.5) + 0.0

    def setup(ctx, inputs, output):
        ctx.save_for_backward(output)

    def bw(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (y * 0.5)

    op = custom_op(_name("expo"), _watch(calls, "body", body), mutates_args=())
    op.register_autograd(_watch(calls, "formula", bw), setup_context=setup)

    def f(x, w):
        return (op(x * w) * 3.0).sum()

    assert _steady2(calls, f) == {"body": 0, "formula": 0}


def _ln_in(calls):
    op = _layer_norm(calls)

    def f(x, g, b):
        return (op(x, g, b) * tp.arange(6.0)).sum()
    return f


def _ln_args():
    rng = np.random.default_rng(9)
    return (rng.standard_normal((3, 6)).astype(np.float32), 1 + rng.standard_normal(6).astype(
        np.float32) * 0.1, rng.standard_normal(6).astype(np.float32) * 0.1)


def _ln_runs():
    """The layer-norm function eagerly, then compiled four times (capture, validation, plan,
    fast path)."""
    f = _ln_in({"body": 0, "formula": 0})
    c = tp.compile(f)
    return (f, c, c, c, c)


def _ln_leaves():
    return [tp.tensor(a, requires_grad=True) for a in _ln_args()]


def test_input_written_in_place_before_backward_raises_eagers_error():
    msgs = []
    for run in _ln_runs():
        ts = _ln_leaves()
        x = ts[0] * 1.0                       # (a non-leaf: it may be written in place)
        loss = run(x, ts[1], ts[2])
        with tp.no_grad():
            x.add_(1.0)
        with pytest.raises(RuntimeError) as e:
            loss.backward()
        msgs.append(str(e.value))
    assert all("modified by an inplace operation" in m for m in msgs)


def test_double_backward_and_retain_graph_are_eagers():
    res = []
    for run in _ln_runs():
        ts = _ln_leaves()
        loss = run(*ts)
        loss.backward(retain_graph=True)
        first = [t.grad.numpy().copy() for t in ts]
        loss.backward()                       # a second time through the retained graph
        second = [t.grad.numpy().copy() for t in ts]
        ts2 = _ln_leaves()
        (gx,) = tp.autograd.grad(run(*ts2), [ts2[0]], create_graph=True)
        (ggx,) = tp.autograd.grad((gx * gx).sum(), [ts2[0]])
        res.append((first, second, gx.detach().numpy().copy(), ggx.numpy().copy()))
    for got in res[1:]:
        assert all(_same(a, b) for a, b in zip(got[0], res[0][0]))
        assert all(_same(a, b) for a, b in zip(got[1], res[0][1]))
        # (create_graph recomputes op by op: eager's formulas, eager's bits)
        assert _same(got[2], res[0][2]) and _same(got[3], res[0][3])


def test_two_layer_norms_in_a_row():
    calls = {"body": 0, "formula": 0}
    op = _layer_norm(calls)

    def f(x, g, b):
        h = op(op(x, g, b) * 2.0, g, b)     # the second reads the first's output
        return (h * tp.arange(6.0)).sum()

    eager = None
    c = tp.compile(f)
    for k, run in enumerate((f, c, c, c, c, c)):
        ts = _ln_leaves()
        loss = run(*ts)
        loss.backward()
        got = (loss.detach().numpy().copy(), [t.grad.numpy().copy() for t in ts])
        if eager is None:
            eager = got
        else:
            _assert_bits(eager, got)
        if k == 3:
            before = dict(calls)
    assert calls == before


# -- state the body or formula reads, and side effects: as eager on every call ---------------

SCALE = 2.0
LOG: list = []


def _helper(x):
    return x * SCALE


def _rebound_matches_eager(op_of):
    """``op_of(calls)`` a custom op reading ``SCALE``: the steady state is traced (no Python
    call), and rebinding ``SCALE`` gives eager's new values at once."""
    global SCALE
    calls = {"body": 0, "formula": 0}
    op = op_of(calls)
    f = _scale_fn(op)
    a, b = _scale_args()
    assert _steady2(calls, f) == {"body": 0, "formula": 0}
    c = tp.compile(f)
    for _ in range(4):
        _assert_bits(_run2(f, a, b), _run2(c, a, b))
    SCALE = 5.0
    try:
        for _ in range(2):
            _assert_bits(_run2(f, a, b), _run2(c, a, b))
    finally:
        SCALE = 2.0


def test_body_reading_a_global_number_sees_it_rebound():
    _rebound_matches_eager(lambda calls: _scale_op(calls, lambda x, w: x * w * SCALE))


def test_body_calling_a_helper_that_reads_a_global_sees_it_rebound():
    _rebound_matches_eager(lambda calls: _scale_op(calls, lambda x, w: _helper(x) * w))


def test_formula_reading_a_global_number_sees_it_rebound():
    def bw(ctx, g):
        x, w = ctx.saved_tensors
        return g * w * SCALE, g * x * SCALE

    _rebound_matches_eager(lambda calls: _scale_op(calls, lambda x, w: x * w * SCALE, bw))


def test_body_with_a_side_effect_runs_on_every_call():
    LOG.clear()

    def body(x, w):
        LOG.append(1)
        return x * w

    calls = {"body": 0, "formula": 0}
    op = _scale_op(calls, body)
    n = len(LOG)
    got = _steady2(calls, _scale_fn(op))
    assert got["body"] == 3 and len(LOG) > n + 3


def test_formula_printing_runs_on_every_call(capsys):
    def bw(ctx, g):
        print("backward")
        x, w = ctx.saved_tensors
        return g * w, g * x

    calls = {"body": 0, "formula": 0}
    op = _scale_op(calls, lambda x, w: x * w, bw)
    assert _steady2(calls, _scale_fn(op))["formula"] == 3
    assert capsys.readouterr().out.count("backward") >= 3


def test_body_drawing_random_numbers_runs_on_every_call():
    import random as _random

    calls = {"body": 0, "formula": 0}
    op = _scale_op(calls, lambda x, w: x * w * _random.random())
    f = _scale_fn(op)
    a, b = _scale_args()
    c = tp.compile(f)
    outs = {float(c(tp.tensor(a, requires_grad=True), tp.tensor(b, requires_grad=True)))
            for _ in range(6)}
    assert len(outs) > 3          # a fresh draw on each call, as eager
