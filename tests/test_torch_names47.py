"""``tensorplay.compiler.is_compiling``: the torch name kernel libraries' host code reads to pick a
layout for compiled code (flash-linear-attention 0.6.0's ``fla.modules.activations.ops.
prepare_input`` asks ``torch.compiler.is_compiling()``). Before this module, such code raised
AttributeError under tensorplay (found by the kernel corpus's fla cases)."""

from __future__ import annotations

import threading

import tensorplay as tp


def test_is_compiling_false_in_eager_code():
    assert tp.compiler.is_compiling() is False
    assert tp.compiler.is_dynamo_compiling() is False


def test_is_compiling_true_only_while_compile_captures():
    box = {"seen": []}
    seen = box["seen"]

    def fn(x):
        # (a list inside a dict: the watch does not stop the capture before appending to it,
        # the change is found after the capture)
        box["seen"].append(tp.compiler.is_compiling())
        # fla's pattern: compiled code gets a dense copy, eager code the view as it is
        return (x.contiguous() if tp.compiler.is_compiling() else x) * 2

    compiled = tp.compile(fn)
    x = tp.arange(6, dtype=tp.float32).reshape(2, 3).t()
    for _ in range(3):
        assert compiled(x).tolist() == (x * 2).tolist()
    # the capture sees True; the append is a Python side effect a graph cannot replay, so the
    # later calls run fn eagerly (torch's graph break), where it is False
    assert seen == [True, False, False]
    assert "a Python side effect" in next(iter(compiled.graph_skips.values()))
    assert tp.compiler.is_compiling() is False                        # after the capture
    assert fn(x).tolist() == (x * 2).tolist() and seen[-1] is False   # eager call


def test_is_compiling_is_per_thread():
    answers = {}
    gate, done = threading.Event(), threading.Event()

    def other():
        gate.wait(5)
        answers["other"] = tp.compiler.is_compiling()
        done.set()

    t = threading.Thread(target=other)
    t.start()

    # the events are reached through a dict: the watch does not follow them (their waits and
    # sets would be side effects it stops the capture before)
    sync = {"events": (gate, done)}

    def fn(x):
        sync["events"][0].set()
        sync["events"][1].wait(5)
        answers["capturing"] = tp.compiler.is_compiling()
        return x + 1

    tp.compile(fn)(tp.ones(3))
    t.join(5)
    assert answers == {"capturing": True, "other": False}
