"""Faults found by running PyTorch's own docstring examples on TensorPlay (session 43;
tests/torch_bridge/test_torch_doc_examples.py is the differential run). Torch-free: each test
states the values torch gives (its docs' examples, and their neighbours)."""

from __future__ import annotations

import inspect
import math

import pytest

import tensorplay as tp
from tensorplay._registry import CustomOpDef


def _vals(t):
    return t.tolist()


# -- torch's argument names: tp.exp(input=x), tp.pow(input=x, exponent=2) ----------------------------

RECORDS = sorted(n for n in tp.__all__ if isinstance(getattr(tp, n), CustomOpDef))


def test_the_function_records_exist():
    assert len(RECORDS) >= 50, RECORDS
    assert {"exp", "mul", "pow", "eq", "matmul", "clone", "remainder"} <= set(RECORDS)


@pytest.mark.parametrize("name", RECORDS)
def test_function_records_name_their_first_argument_input(name):
    # torch.<name>(input, ...): the function's first parameter is "input", as torch's
    params = list(inspect.signature(getattr(tp, name)).parameters)
    assert params[0] == "input", (name, params)
    second = {"pow": "exponent"}.get(name, "other")
    assert params[1:] in ([], [second]), (name, params)


@pytest.mark.parametrize("name", RECORDS)
def test_function_records_take_torch_keywords(name):
    fn = getattr(tp, name)
    params = list(inspect.signature(fn).parameters)
    x = tp.tensor([[1, 2], [3, 4]]) if name.startswith(("bitwise", "floor_divide")) else \
        tp.tensor([[0.25, 0.5], [0.75, 1.0]])
    kw = {"input": x}
    if len(params) == 2:
        kw[params[1]] = x
    by_name, by_position = fn(**kw), fn(*kw.values())
    assert by_name.dtype is by_position.dtype and _vals(by_name) == _vals(by_position)


def test_keyword_calls_of_torch_docs():
    # torch.exp(torch.tensor([0, math.log(2.)])) -> tensor([1., 2.]), by keyword
    assert _vals(tp.exp(input=tp.tensor([0.0, math.log(2.0)]))) == [1.0, 2.0]
    assert _vals(tp.pow(input=tp.tensor([1.0, 2.0, 3.0]), exponent=2)) == [1.0, 4.0, 9.0]
    assert _vals(tp.pow(tp.tensor([1, 2, 3]), exponent=tp.tensor([2, 1, 0]))) == [1, 2, 1]
    assert _vals(tp.remainder(input=tp.tensor([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0]), other=2)) == \
        [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    assert _vals(tp.eq(input=tp.tensor([[1, 2], [3, 4]]), other=tp.tensor([[1, 1], [4, 4]]))) \
        == [[True, False], [False, True]]
    assert _vals(tp.matmul(input=tp.tensor([[1.0, 2.0]]), other=tp.tensor([[3.0], [4.0]]))) \
        == [[11.0]]
    # the number-first forms still work: pow(2, t) is 2 ** t, add(5, t) is 5 + t
    assert _vals(tp.pow(2, tp.tensor([1.0, 2.0, 3.0]))) == [2.0, 4.0, 8.0]
    with pytest.raises(TypeError, match="exponent"):
        tp.pow(tp.tensor([1.0]))
    with pytest.raises(TypeError):
        tp.exp(self=tp.tensor([1.0]))      # torch's function has no "self" either


def test_in_place_methods_keep_self():
    # methods are called on the tensor: the in-place records keep the schema name "self"
    assert "self" in str(tp.ops.tp.add_.schema)
    x = tp.tensor([1.0, 2.0])
    assert x.add_(1).tolist() == [2.0, 3.0] and x.pow(2).tolist() == [4.0, 9.0]
