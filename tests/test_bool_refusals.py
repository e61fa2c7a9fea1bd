"""Unary and matrix ops torch has no bool kernel for refuse bool tensors, eagerly and under
``tensorplay.compile`` (found comparing with torch 2.13: each returned the obvious bool answer).
torch's messages: "Boolean inputs not supported for relu", "The `+` operator, on a bool tensor is
not supported.", and ``NotImplementedError`` "... not implemented for 'Bool'" for matmul and
clamp (a bool clamp by a number bound or by both bounds). ``abs`` of a bool tensor still gives
it back: a dtype test in its kernel would cost every abs call ~0.2 µs."""

import pytest

import tensorplay as tp

B = [True, False, True]


@pytest.mark.parametrize("call, error, match", [
    (lambda b: tp.relu(b), RuntimeError, "Boolean inputs not supported for relu"),
    (lambda b: b.relu_(), RuntimeError, "Boolean inputs not supported for relu"),
    (lambda b: +b, RuntimeError, "The `\\+` operator, on a bool tensor is not supported"),
    (lambda b: b @ b, NotImplementedError, "matmul: not implemented for 'Bool'"),
    (lambda b: b.clamp(True), NotImplementedError, "clamp: not implemented for 'Bool'"),
    (lambda b: b.clamp(b, b), NotImplementedError, "clamp: not implemented for 'Bool'"),
])
@pytest.mark.parametrize("compiled", [False, True])
def test_bool_refusals(call, error, match, compiled):
    b = tp.tensor(B)
    fn = tp.compile(call) if compiled else call
    with pytest.raises(error, match=match):
        fn(b)
    assert b.tolist() == B


def test_what_torch_computes_on_bool_still_works():
    b = tp.tensor(B)
    assert b.clamp(tp.tensor([False, True, False])).tolist() == [True, True, True]
    assert b.clamp(2).tolist() == [2, 2, 2]             # int64 result: torch computes it
    assert tp.maximum(b, ~b).tolist() == [True, True, True]
    assert abs(tp.tensor([-1, 2])).tolist() == [1, 2]
    assert tp.relu(tp.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
