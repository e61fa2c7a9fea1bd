"""Python side effects before a graph break: ``tensorplay.compile`` against ``torch.compile``.

The same function, written once for either library, is called three times through each compiler
(torch's ``backend="eager"``); the outputs, what it printed and the side effects it performed
(a list, a dict item, a global, a nonlocal, in order) must be the same: each effect once per call,
before and after the break."""
from __future__ import annotations

import torch

import tensorplay as tp

COUNT = 0


def _make(lib):
    events: list = []
    state = {"n": 0}
    calls = 0

    def f(x):
        global COUNT
        nonlocal calls
        print("start", x.shape[0])
        events.append("before")
        state["n"] += 1
        COUNT += 1
        calls += 1
        y = x * 2
        s = y.sum().item()                 # the graph break
        events.append(("after", s))
        print("end", s)
        return y + s

    return f, events, state, lambda: calls


def _run(lib, compiler, capsys):
    global COUNT
    COUNT = 0
    f, events, state, calls = _make(lib)
    c = compiler(f)
    outs = [c(lib.tensor(v)).tolist() for v in ([1.0, 2.0], [3.0, -1.0, 0.5], [1.0, 2.0])]
    return outs, capsys.readouterr().out, events, state["n"], COUNT, calls()


def test_side_effects_before_a_break_match_torch_compile(capsys):
    torch._dynamo.reset()
    want = _run(torch, lambda f: torch.compile(f, backend="eager"), capsys)
    got = _run(tp, tp.compile, capsys)
    assert got == want
    assert want[3:] == (3, 3, 3)
