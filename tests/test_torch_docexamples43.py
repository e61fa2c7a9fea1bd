"""Faults found by running PyTorch's own docstring examples on TensorPlay (session 43;
tests/torch_bridge/test_torch_doc_examples.py is the differential run). Torch-free: each test
states the values torch gives (its docs' examples, and their neighbours)."""

from __future__ import annotations

import inspect
import math

import numpy as np

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
    # torch.<name>(input, ...): the function's first parameter is "input", as torch's; then
    # torch's keyword-only out= (session 45), except on the functions torch gives none
    sig = inspect.signature(getattr(tp, name))
    params = [p for p in sig.parameters if p != "out"]
    no_out = {"relu", "isnan", "isinf", "isfinite", "clone"}
    assert ("out" in sig.parameters) == (name not in no_out), (name, list(sig.parameters))
    if "out" in sig.parameters:
        assert sig.parameters["out"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params[0] == "input", (name, params)
    second = {"pow": "exponent"}.get(name, "other")
    assert params[1:] in ([], [second]), (name, params)


@pytest.mark.parametrize("name", RECORDS)
def test_function_records_take_torch_keywords(name):
    fn = getattr(tp, name)
    params = [p for p in inspect.signature(fn).parameters if p != "out"]
    x = tp.tensor([[1, 2], [3, 4]]) if name.startswith(("bitwise", "floor_divide")) else \
        tp.tensor([[0.25, 0.5], [0.75, 1.0]])
    kw = {"input": x}
    if len(params) == 2:
        kw[params[1]] = x
    by_name, by_position = fn(**kw), fn(*kw.values())
    assert by_name.dtype is by_position.dtype
    # the same values, NaN where the other has NaN (acosh of [0.25, 1.0] is NaN but at 1.0)
    if by_name.dtype.is_floating_point:
        assert tp.allclose(by_name, by_position, rtol=0, atol=0, equal_nan=True)
    else:
        assert _vals(by_name) == _vals(by_position)


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


# -- tp.add / tp.sub with alpha (torch.add(input, other, *, alpha=1)) --------------------------------

def test_add_alpha_of_torch_docs():
    # torch.add(b, c, alpha=10): b + 10 * c, broadcast (4,) with (4, 1)
    b = tp.tensor([0.5, -1.0, 2.0, 0.25])
    c = tp.tensor([[1.0], [-2.0], [0.5], [0.0]])
    r = tp.add(b, c, alpha=10)
    assert r.dtype is tp.float32 and tuple(r.shape) == (4, 4)
    assert _vals(r) == [[10.5, 9.0, 12.0, 10.25], [-19.5, -21.0, -18.0, -19.75],
                        [5.5, 4.0, 7.0, 5.25], [0.5, -1.0, 2.0, 0.25]]
    # torch.sub(a, b, alpha=2) with a = (1, 2), b = (0, 1): tensor([1, 0])
    r = tp.sub(tp.tensor((1, 2)), tp.tensor((0, 1)), alpha=2)
    assert r.dtype is tp.int64 and _vals(r) == [1, 0]


def test_add_sub_alpha_neighbours():
    t = tp.tensor([1, 2])
    assert _vals(tp.add(t, 3, alpha=2)) == [7, 8]
    assert _vals(tp.sub(t, 3, alpha=2)) == [-5, -4]
    assert _vals(tp.add(5, t, alpha=2)) == [7, 9]            # a number first: 5 + 2 * t
    assert _vals(tp.sub(5, t, alpha=2)) == [3, 1]
    r = tp.add(2.5, t, alpha=2)
    assert r.dtype is tp.float32 and _vals(r) == [4.5, 6.5]
    r = tp.add(t.float(), t, alpha=0.5)
    assert r.dtype is tp.float32 and _vals(r) == [1.5, 3.0]
    assert _vals(tp.add(input=t, other=t, alpha=3)) == [4, 8]
    assert _vals(tp.sub(input=t, other=t, alpha=3)) == [-2, -4]
    assert _vals(tp.add(t, t)) == [2, 4] and _vals(tp.add(input=t, other=t)) == [2, 4]
    assert _vals(tp.add(t.bool(), t.bool(), alpha=True)) == [True, True]
    i8 = tp.tensor([1, 2], dtype=tp.int8)
    r = tp.add(i8, i8, alpha=3)
    assert r.dtype is tp.int8 and _vals(r) == [4, 8]
    u8 = tp.tensor([200], dtype=tp.uint8)      # computed in the result dtype (int64 here)
    assert _vals(tp.add(tp.tensor([0]), u8, alpha=2)) == [400]


@pytest.mark.parametrize("call, match", [
    (lambda t: tp.add(t, t, alpha=0.5), "alpha must not be a floating point"),
    (lambda t: tp.add(t, t, alpha=1.0), "alpha must not be a floating point"),
    (lambda t: tp.sub(t, t, alpha=2.0), "alpha must not be a floating point"),
    (lambda t: tp.add(t, t, alpha=True), "Boolean alpha only supported for Boolean results"),
    (lambda t: tp.add(t.to(tp.int8), t.to(tp.int8), alpha=300), "int8"),
    (lambda t: tp.sub(t.bool(), t.bool(), alpha=2), "Subtraction, the `-` operator, with two "
                                                    "bool tensors"),
])
def test_add_sub_alpha_refusals(call, match):
    with pytest.raises(RuntimeError, match=match):
        call(tp.tensor([1, 2]))


def test_add_alpha_gradients():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = tp.tensor([3.0, 4.0], requires_grad=True)
    (tp.add(x, y, alpha=2) + tp.sub(x, y, alpha=0.5)).sum().backward()
    assert _vals(x.grad) == [2.0, 2.0] and _vals(y.grad) == [1.5, 1.5]


# -- einsum: torch's sublist form; "..." beside upper-case subscripts -------------------------------

def _t(rows):
    return tp.tensor(rows, dtype=tp.float32)


def test_einsum_sublist_form():
    a, b = _t([[1, 2], [3, 4]]), _t([[5, 6], [7, 8]])
    assert _vals(tp.einsum(a, [0, 1], b, [1, 2], [0, 2])) == [[19.0, 22.0], [43.0, 50.0]]
    assert _vals(tp.einsum(a, [0, 1], b, [1, 2])) == [[19.0, 22.0], [43.0, 50.0]]  # implicit
    assert _vals(tp.einsum(a, [0, 0])) == 5.0                                       # trace
    assert _vals(tp.einsum(a, [0, 1], [1, 0])) == [[1.0, 3.0], [2.0, 4.0]]
    # 26..51 stand for A..Z; "..." (Ellipsis) for broadcast dims (torch's docs' example form)
    assert _vals(tp.einsum(a, [27, 1], b, [1, 2], [27, 2])) == [[19.0, 22.0], [43.0, 50.0]]
    As = tp.stack([a, b])                                            # (2, 2, 2)
    r = tp.einsum(As, [..., 0, 1], As, [..., 1, 2], [..., 0, 2])     # batched a @ a, b @ b
    assert _vals(r) == [[[7.0, 10.0], [15.0, 22.0]], [[67.0, 78.0], [91.0, 106.0]]]
    with pytest.raises(ValueError, match=r"not within the valid range \[0, 52\)"):
        tp.einsum(a, [0, 52], b, [52, 2])
    with pytest.raises(ValueError, match=r"not within the valid range \[0, 52\)"):
        tp.einsum(a, [0, -1])


def test_einsum_ellipsis_with_upper_case_subscripts():
    # "..." stood for upper-case letters inside: '...A,AB->...B' took A as a diagonal
    a, b = _t([[1, 2], [3, 4]]), _t([[5, 6, 1], [7, 8, 0]])
    assert _vals(tp.einsum("...A,AB->...B", a, b)) == [[19.0, 22.0, 1.0], [43.0, 50.0, 3.0]]
    assert _vals(tp.einsum("Z...,Zk", _t([[1, 2], [3, 4]]), _t([[1], [2]]))) == [[7.0], [10.0]]
    assert _vals(tp.einsum("...ij,...jk->...ik", a, b)) == [[19.0, 22.0, 1.0], [43.0, 50.0, 3.0]]


# -- unique(dim=): the distinct slices along a dim ---------------------------------------------------

def test_unique_dim_of_torch_docs():
    x = tp.tensor([[1, 3, 2, 3], [1, 2, 1, 2]])
    assert _vals(tp.unique(x, dim=0)) == [[1, 2, 1, 2], [1, 3, 2, 3]]
    out, inv, counts = tp.unique(x, dim=1, return_inverse=True, return_counts=True)
    assert _vals(out) == [[1, 2, 3], [1, 1, 2]]
    assert _vals(inv) == [0, 2, 1, 2] and _vals(counts) == [1, 1, 2]
    assert inv.dtype is tp.int64 and counts.dtype is tp.int64
    a = tp.tensor([[[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
                   [[0, 0, 1, 1], [0, 0, 1, 1], [1, 1, 1, 1]],
                   [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1]]])
    assert _vals(tp.unique(a, dim=0)) == [[[0, 0, 1, 1], [0, 0, 1, 1], [1, 1, 1, 1]],
                                          [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1]]]
    assert _vals(tp.unique(a, dim=1)) == [[[0, 0, 1, 1], [1, 1, 0, 0]],
                                          [[1, 1, 1, 1], [0, 0, 1, 1]],
                                          [[0, 0, 1, 1], [1, 1, 0, 0]]]
    assert _vals(tp.unique(a, dim=2)) == [[[0, 1], [0, 1], [1, 0]], [[1, 0], [1, 0], [1, 1]],
                                          [[0, 1], [0, 1], [1, 0]]]


def test_unique_dim_neighbours():
    r, inv = tp.unique(tp.tensor([[2, 1], [1, 5], [2, 1]]), dim=-2, return_inverse=True)
    assert _vals(r) == [[1, 5], [2, 1]] and _vals(inv) == [1, 0, 1]
    r, inv, c = tp.unique(tp.tensor([3, 1, 3]), dim=0, return_inverse=True, return_counts=True)
    assert _vals(r) == [1, 3] and _vals(inv) == [1, 0, 1] and _vals(c) == [1, 2]
    # sorted=False sorts too (torch's unique_dim always does)
    assert _vals(tp.unique(tp.tensor([[3], [1]]), sorted=False, dim=0)) == [[1], [3]]
    assert _vals(tp.unique(tp.tensor([[True, False], [True, False]]), dim=0)) == [[True, False]]
    r = tp.unique(tp.tensor([[-0.0, 1.0], [0.0, 1.0]]), dim=0)     # -0.0 == 0.0: one row
    assert _vals(r) == [[0.0, 1.0]] and math.copysign(1.0, _vals(r)[0][0]) == -1.0
    r = tp.unique(tp.tensor([[1.0, math.nan], [1.0, math.nan]]), dim=0)   # NaN: never equal
    assert tuple(r.shape) == (2, 2)
    out, inv, c = tp.unique(tp.zeros(0, 3), dim=0, return_inverse=True, return_counts=True)
    assert tuple(out.shape) == (0, 3) and tuple(inv.shape) == (0,) and tuple(c.shape) == (0,)
    out = tp.unique(tp.zeros(3, 0), dim=1)
    assert tuple(out.shape) == (3, 0)
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        tp.unique(tp.zeros(3, 0), dim=0)
    with pytest.raises(IndexError):
        tp.unique(tp.tensor(3), dim=0)
    with pytest.raises(IndexError):
        tp.unique(tp.tensor([[2, 1]]), dim=2)


# -- torch's constants and the functions its examples lean on: dist, dstack, cartesian_prod ----------

def test_constants():
    assert tp.e == math.e and tp.pi == math.pi and tp.inf == math.inf and math.isnan(tp.nan)
    # torch.equal(torch.tensor([3, torch.nan]), torch.tensor([3, torch.nan])) -> False
    assert tp.equal(tp.tensor([3, tp.nan]), tp.tensor([3, tp.nan])) is False
    assert {"e", "inf", "nan", "pi"} <= set(tp.__all__)


def test_dist():
    x, y = tp.tensor([1.0, 2.0, 3.0]), tp.tensor([[0.0], [1.0]])    # broadcast to (2, 3)
    r = tp.dist(x, y)
    assert r.dtype is tp.float32 and tuple(r.shape) == () and abs(r.item() - 19 ** 0.5) < 1e-6
    assert tp.dist(x, y, 0).item() == 5.0 and tp.dist(x, y, 1).item() == 9.0
    assert tp.dist(x, y, math.inf).item() == 3.0 and tp.dist(x, y, -math.inf).item() == 0.0
    assert abs(tp.dist(x, y, 3).item() - 45 ** (1 / 3)) < 1e-6
    assert tp.dist(x.double(), x).dtype is tp.float64
    with pytest.raises(RuntimeError, match="floating point"):
        tp.dist(tp.tensor([1, 2]), tp.tensor([0, 0]))
    with pytest.raises(TypeError, match="must be Tensor"):
        tp.dist(x, 1.0)


def test_dstack():
    a, b = tp.tensor([1, 2, 3]), tp.tensor([4, 5, 6])
    assert _vals(tp.dstack((a, b))) == [[[1, 4], [2, 5], [3, 6]]]
    a, b = tp.tensor([[1], [2], [3]]), tp.tensor([[4], [5], [6]])
    assert _vals(tp.dstack((a, b))) == [[[1, 4]], [[2, 5]], [[3, 6]]]
    assert tuple(tp.dstack([tp.tensor(1), tp.tensor(2)]).shape) == (1, 1, 2)
    assert tuple(tp.dstack([tp.ones(2, 3), tp.zeros(2, 3, 2)]).shape) == (2, 3, 3)
    r = tp.dstack([tp.tensor([1, 2]), tp.tensor([1.5, 2.0])])
    assert r.dtype is tp.float32 and _vals(r) == [[[1.0, 1.5], [2.0, 2.0]]]
    with pytest.raises(RuntimeError, match="non-empty"):
        tp.dstack([])


def test_cartesian_prod():
    r = tp.cartesian_prod(tp.tensor([1, 2, 3]), tp.tensor([4, 5]))
    assert _vals(r) == [[1, 4], [1, 5], [2, 4], [2, 5], [3, 4], [3, 5]] and r.dtype is tp.int64
    t = tp.tensor([1, 2, 3])
    assert tp.cartesian_prod(t) is t
    assert tuple(tp.cartesian_prod(t, t, tp.tensor([7, 8])).shape) == (18, 3)
    with pytest.raises(RuntimeError, match="1D vector"):
        tp.cartesian_prod(tp.ones(2, 2))
    with pytest.raises(RuntimeError, match="same dtype"):
        tp.cartesian_prod(tp.tensor([1, 2]), tp.tensor([1.5]))
    with pytest.raises(RuntimeError, match="non-empty"):
        tp.cartesian_prod()


@pytest.mark.cuda
def test_session43_functions_on_cuda_match_cpu():
    """add/sub alpha, einsum's sublist form, unique(dim=), dist, dstack, cartesian_prod are
    compositions of tp ops: on cuda they give the cpu's values (run on a GPU machine)."""
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")
    calls = [
        lambda d: tp.add(tp.tensor([1, 2], device=d), tp.tensor([3, 4], device=d), alpha=3),
        lambda d: tp.sub(5, tp.tensor([1.0, 2.0], device=d), alpha=2),
        lambda d: tp.einsum(tp.tensor([[1.0, 2.0], [3.0, 4.0]], device=d), [0, 1],
                            tp.tensor([[5.0, 6.0], [7.0, 8.0]], device=d), [1, 2], [0, 2]),
        lambda d: tp.unique(tp.tensor([[1, 3, 2, 3], [1, 2, 1, 2]], device=d), dim=1,
                            return_inverse=True, return_counts=True),
        lambda d: tp.dist(tp.tensor([1.0, 2.0, 3.0], device=d), tp.tensor([[0.0], [1.0]],
                                                                          device=d), 3),
        lambda d: tp.dstack([tp.tensor([1, 2, 3], device=d), tp.tensor([4, 5, 6], device=d)]),
        lambda d: tp.cartesian_prod(tp.tensor([1, 2, 3], device=d), tp.tensor([4, 5], device=d)),
    ]
    for call in calls:
        c, g = call("cpu"), call("cuda")
        c, g = (c, g) if isinstance(c, tuple) else ((c,), (g,))
        for x, y in zip(c, g):
            assert y.device.type == "cuda" and x.dtype is y.dtype
            # (nested lists: pytest.approx takes flat ones only)
            np.testing.assert_allclose(np.asarray(y.cpu().tolist(), dtype=float),
                                       np.asarray(x.tolist(), dtype=float), rtol=1e-6)


# -- found by the corpus, owned elsewhere: strict xfails naming the gap -------------------------------

@pytest.mark.parametrize("method", ["add", "sub", "add_", "sub_"])
def test_tensor_add_float_one_alpha_is_refused(method):
    # torch refuses a floating alpha with integral operands whatever its value; the methods'
    # alpha == 1 shortcut skipped the check for 1.0 (tp.add refused it)
    x = tp.tensor([1, 2])
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        getattr(x, method)(tp.tensor([1, 2]), alpha=1.0)
    assert x.tolist() == [1, 2]


@pytest.mark.parametrize("method", ["add", "sub", "add_", "sub_"])
def test_tensor_add_one_alpha_keeps_values(method):
    x = tp.tensor([1.5, -0.0])
    r = getattr(x, method)(tp.tensor([2.0, -0.0]), alpha=1.0)
    want = [3.5, -0.0] if method.startswith("add") else [-0.5, 0.0]
    assert r.tolist() == want and r.dtype == tp.float32
    b = tp.tensor([True, False])
    assert b.add(tp.tensor([True, True]), alpha=True).tolist() == [True, True]


def test_copy_into_fewer_dims_is_refused():
    # torch refuses a source of more dims (NumPy's assignment would drop its leading 1s); the
    # test_copy_setitem44 tests hold the neighbours (setitem strips them, as torch's)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        tp.zeros(()).copy_(tp.ones(1))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        tp.zeros(3).copy_(tp.ones(1, 3))
