"""The AOT node's replayed backward (``tensorplay/_joint.py``) calls a custom op's formula
straight when its output's gradient came in the output's dtype: what the formula returns is
still held to eager's rules (a list shaped as a tuple, too few gradients refused with eager's
words, a gradient of another dtype or a broadcast shape conformed to its input), and the sizes
a setup read while traced (sum's, mean's) give eager's gradients on every call. Each case is
compared with the same function run eagerly; they pass on main too."""

import pytest

import tensorplay as tp
from tensorplay.library import custom_op

_N = [0]


def _op(backward, setup=None):
    """``x * w`` as a custom op with ``backward`` registered (a fresh name per call)."""
    _N[0] += 1

    def body(x: tp.Tensor, w: tp.Tensor) -> tp.Tensor:
        return x * w

    op = custom_op(f"joint56test::scale{_N[0]}", body, mutates_args=())
    op.register_autograd(backward, setup_context=setup or _save)
    return op


def _save(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _grads(fn, *shapes):
    """Gradients of ``fn`` eagerly and compiled (three calls: capture, validation, fast path)."""
    out = []
    runs = [fn] + [tp.compile(fn)] * 3
    for k, run in enumerate(runs):
        xs = [(tp.arange(float(s[0] * s[1])).reshape(s) * 0.1).requires_grad_() for s in shapes]
        loss = run(*xs)
        # (the last call runs as the one node this file is about: the first captures, a
        # custom op's second validates, both op by op)
        assert k < 3 or loss.grad_fn.name() == "CompiledFunctionBackward"
        loss.backward()
        out.append([x.grad.tolist() for x in xs])
    return out


def test_formula_returning_a_list():
    def bw(ctx, g):
        x, w = ctx.saved_tensors
        return [g * w, g * x]

    op = _op(bw)
    eager, *compiled = _grads(lambda x, w: op(x.tanh(), w).sum(), (2, 3), (2, 3))
    assert all(c == eager for c in compiled)


def test_formula_returning_too_few_gradients_raises_eagers_error():
    def bw(ctx, g):
        return (g,)

    op = _op(bw)

    def f(x, w):
        return op(x.tanh(), w).sum()

    msgs = []
    c = tp.compile(f)
    for run in (f, c, c, c):
        x = tp.ones(2, 3, requires_grad=True)
        w = tp.ones(2, 3, requires_grad=True)
        loss = run(x, w)    # (the plan's trace of this formula fails: the per-op path runs it)
        with pytest.raises(RuntimeError) as e:
            loss.backward()
        msgs.append(str(e.value))
    assert msgs[1:] == msgs[:1] * 3 and "joint56test::scale" in msgs[0]


def test_formula_gradients_of_another_dtype_and_shape_are_conformed():
    def bw(ctx, g):
        x, w = ctx.saved_tensors
        # float64 for a float32 input; a gradient with an extra leading dim of 1 for w
        return (g * w).double(), (g * x).unsqueeze(0)

    op = _op(bw)
    eager, *compiled = _grads(lambda x, w: (op(x.tanh(), w) * 3.0).sum(), (2, 3), (2, 3))
    assert all(c == eager for c in compiled)


@pytest.mark.parametrize("red", ["sum_dim", "mean_dim", "sum_keepdim", "sum_all"])
def test_traced_sizes_give_eagers_gradients(red):
    def f(x, w):
        y = (x * w).tanh()
        if red == "sum_dim":
            z = y.sum(0)
        elif red == "mean_dim":
            z = y.mean(-1)
        elif red == "sum_keepdim":
            z = y.sum(1, keepdim=True)
        else:
            z = y.sum()
        return (z * z).sum()

    eager, *compiled = _grads(f, (3, 4), (3, 4))
    assert all(c == eager for c in compiled)
