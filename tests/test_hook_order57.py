"""Leaf hooks (``register_hook``, ``register_post_accumulate_grad_hook``) and ``.grad``
accumulation run in torch 2.13's order: torch's engine runs a leaf's AccumulateGrad before any
other ready node, and the two or three leaves of one node in edge order (a fresh user's
``Function`` of 3 leaves fired [2, 1, 0], torch [0, 1, 2]; ``a * b * c`` fired [2, 1, 0], torch
[2, 0, 1]). Expected orders are torch 2.13's (cpu), recorded with the same code."""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay.autograd import Function


class Weighted(Function):
    """sum_i (i + 1) * x_i of any number of tensors."""
    @staticmethod
    def forward(ctx, *xs):
        ctx.n = len(xs)
        out = xs[0] * 1
        for i, x in enumerate(xs[1:], 2):
            out = out + x * i
        return out

    @staticmethod
    def backward(ctx, g):
        return tuple(g * (i + 1) for i in range(ctx.n))


class SumOfThree(Function):
    """A root (scalar) straight over three leaves."""
    @staticmethod
    def forward(ctx, a, b, c):
        return (a + b * 2 + c * 3).sum()

    @staticmethod
    def backward(ctx, g):
        return g.expand(2), (g * 2).expand(2), (g * 3).expand(2)


def _order(fn, n, inputs=None, two_hooks=False):
    ts = [tp.ones(2, requires_grad=True) for _ in range(n)]
    hooks, post = [], []
    for i, t in enumerate(ts):
        t.register_hook(lambda g, i=i: hooks.append(i))
        if two_hooks:
            t.register_hook(lambda g, i=i: hooks.append(f"{i}b"))
        t.register_post_accumulate_grad_hook(lambda p, i=i: post.append(i))
    out = fn(*ts)
    if out.dim():
        out = out.sum()
    if inputs is None:
        out.backward()
    else:
        out.backward(inputs=[ts[i] for i in inputs])
    assert hooks == post or two_hooks
    return hooks, post


@pytest.mark.parametrize("name,fn,n,want", [
    ("Function of 2 leaves", Weighted.apply, 2, [0, 1]),
    ("Function of 3 leaves", Weighted.apply, 3, [0, 1, 2]),
    ("stack of 3", lambda *t: tp.stack(t), 3, [0, 1, 2]),
    ("cat of 2", lambda *t: tp.cat(t), 2, [0, 1]),
    ("a*b*c", lambda a, b, c: a * b * c, 3, [2, 0, 1]),
    ("a*b*c*d", lambda a, b, c, d: a * b * c * d, 4, [3, 2, 0, 1]),
    ("a+b+c+d", lambda a, b, c, d: a + b + c + d, 4, [3, 2, 0, 1]),
    ("(a+b)*(c+d)", lambda a, b, c, d: (a + b) * (c + d), 4, [2, 3, 0, 1]),
    ("a used twice", lambda a, b: a * 2 + a * 3 + b, 2, [1, 0]),
    ("a.sin()+b.exp()", lambda a, b: a.sin() + b.exp(), 2, [1, 0]),
    ("root over 3 leaves", SumOfThree.apply, 3, [0, 1, 2]),
    ("root a*b", lambda a, b: (a * b).sum(), 2, [0, 1]),
    ("views and matmul", lambda x, w, b: x.reshape(1, 2) @ w.reshape(2, 1) + b[:1], 3, [2, 1, 0]),
])
def test_leaf_hooks_run_in_torchs_order(name, fn, n, want):
    hooks, post = _order(fn, n)
    assert hooks == want, name
    assert post == want, name


@pytest.mark.parametrize("fn,inputs,want", [
    (lambda a, b, c: a * b * c, [0, 1, 2], [2, 0, 1]),
    (lambda a, b, c: a * b * c, [2, 0], [2, 0]),
    (SumOfThree.apply, [0, 1, 2], [0, 1, 2]),
])
def test_backward_inputs_runs_leaves_in_torchs_order(fn, inputs, want):
    hooks, post = _order(fn, 3, inputs=inputs)
    assert hooks == post == want


def test_several_hooks_of_one_leaf_run_in_registration_order_leaf_by_leaf():
    hooks, post = _order(lambda a, b: a * b, 2, two_hooks=True)
    assert hooks == [0, "0b", 1, "1b"] and post == [0, 1]


def test_many_leaves_of_one_node_run_in_edge_order():
    # torch's order here is its heap's tie-breaking ([0, 2, 4, 1, 3] for 5); tensorplay keeps
    # edge order, as torch gives for two and three
    for n in (4, 5, 7):
        assert _order(Weighted.apply, n)[0] == list(range(n))
        assert _order(lambda *t: tp.stack(t), n)[0] == list(range(n))
