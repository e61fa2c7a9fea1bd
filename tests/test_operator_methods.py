"""Python's operators on tensors (``x * y``, ``2 - x``, ``x += y``, ``-x``, ``x < y``, ``x @ y``...)
run the op's own dispatch: the method is the op's generated call, so everything the op's call
does, the operator does -- grad mode and recording, fake and capture modes, version counters,
the refusal of writes through expanded tensors, per-thread state, the op's argument errors."""

from __future__ import annotations

import operator
import threading

import pytest
import tensorplay as tp
from tensorplay.fake import FakeTensorMode

np = pytest.importorskip("numpy")

pytestmark = pytest.mark.usefixtures("cpu")

# operator -> (the same computation through the functional API, whether a number may come first)
BINARY = {
    "add": (operator.add, tp.add), "sub": (operator.sub, tp.sub), "mul": (operator.mul, tp.mul),
    "truediv": (operator.truediv, tp.div), "floordiv": (operator.floordiv, tp.floor_divide),
    "mod": (operator.mod, tp.remainder), "matmul": (operator.matmul, tp.matmul),
    "lt": (operator.lt, tp.lt), "le": (operator.le, tp.le), "gt": (operator.gt, tp.gt),
    "ge": (operator.ge, tp.ge),
}
INT_BINARY = {"and": (operator.and_, tp.bitwise_and), "or": (operator.or_, tp.bitwise_or),
              "xor": (operator.xor, tp.bitwise_xor),
              "lshift": (operator.lshift, tp.bitwise_left_shift),
              "rshift": (operator.rshift, tp.bitwise_right_shift)}


def _pair():
    a = tp.tensor([[1.5, -2.0], [3.0, 4.5]])
    b = tp.tensor([[2.0, 0.5], [-1.0, 3.0]])
    return a, b


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_operators_equal_the_functional_ops(name):
    op, fn = BINARY[name]
    a, b = _pair()
    r = op(a, b)
    assert r.dtype == fn(a, b).dtype and r.tolist() == fn(a, b).tolist()
    ref = op(a.numpy(), b.numpy())
    np.testing.assert_allclose(np.asarray(r.tolist(), dtype=ref.dtype), ref)


@pytest.mark.parametrize("name", sorted(INT_BINARY))
def test_integer_operators_equal_the_functional_ops(name):
    op, fn = INT_BINARY[name]
    a = tp.tensor([[1, 6], [12, 3]])
    b = tp.tensor([[3, 1], [2, 0]])
    assert op(a, b).tolist() == fn(a, b).tolist() == op(a.numpy(), b.numpy()).tolist()
    assert op(a, 2).tolist() == op(a.numpy(), 2).tolist()


@pytest.mark.parametrize("expr, ref", [
    ("2 + a", lambda a: 2 + a), ("2 - a", lambda a: 2 - a), ("2 * a", lambda a: 2 * a),
    ("2 / a", lambda a: 2 / a), ("2 ** a", lambda a: 2 ** a), ("-a", lambda a: -a),
    ("abs(a)", abs), ("a - 0.5", lambda a: a - 0.5), ("a / 4", lambda a: a / 4),
])
def test_reflected_and_unary_operators(expr, ref):
    a = tp.tensor([[1.5, -2.0], [3.0, 4.5]])
    r = eval(expr)
    np.testing.assert_allclose(np.asarray(r.tolist(), dtype=np.float32), ref(a.numpy()),
                               rtol=1e-6)
    assert r.dtype == tp.float32 and r.shape == (2, 2)


def test_invert_on_bools_and_ints():
    assert (~tp.tensor([True, False])).tolist() == [False, True]
    assert (~tp.tensor([0, 5])).tolist() == [-1, -6]


def test_operators_record_under_grad_and_not_under_no_grad():
    w = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = ((2 - w) * w / 4).sum() + (-w) @ w
    assert y.requires_grad and y.grad_fn is not None
    y.backward()
    # d/dw [(2 - w) w / 4 - w.w] summed over the scalar: (2 - 2w) / 4 - 2w
    expected = [(2 - 2 * v) / 4 - 2 * v for v in (1.0, 2.0, 3.0)]
    np.testing.assert_allclose(w.grad.tolist(), expected, rtol=1e-6)
    with tp.no_grad():
        z = w * 3 + w
    assert not z.requires_grad and z.grad_fn is None


def test_in_place_operators_bump_the_version_and_are_checked_by_autograd():
    x = tp.ones(3)
    v = x._version
    x += 1
    x *= 3.0
    x -= tp.ones(3)
    x /= 2
    assert x.tolist() == [2.5, 2.5, 2.5] and x._version == v + 4
    # a tensor saved for backward and changed in place afterwards: backward refuses, as torch
    w = tp.ones(3, requires_grad=True)
    h = w * 2
    y = (h * h).sum()
    h += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_in_place_operator_on_an_expanded_tensor_is_refused():
    e = tp.ones(1, 3).expand(4, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e += 1


def test_operators_on_fake_tensors_stay_fake():
    with FakeTensorMode() as mode:
        a = mode.from_tensor(tp.ones(4, 3))
        b = mode.from_tensor(tp.ones(3, 5))
        r = -(a * 2 + 1) @ b
        c = r < 0
    assert r._data is None and r.shape == (4, 5) and r.dtype == tp.float32
    assert c._data is None and c.dtype == tp.bool


def test_operators_are_captured_by_compile_like_eager():
    def f(a, b):
        return (a * b - 2) / (a + 1) + (-b) ** 2

    a, b = _pair()
    eager = f(a, b).tolist()
    g = tp.compile(f)
    np.testing.assert_allclose(g(a, b).tolist(), eager, rtol=1e-6)
    np.testing.assert_allclose(g(b, a).tolist(), f(b, a).tolist(), rtol=1e-6)


def test_operator_argument_errors_are_the_ops():
    a, _ = _pair()
    with pytest.raises(TypeError) as op_err:
        tp.mul(a, "x")
    with pytest.raises(TypeError) as operator_err:
        a * "x"
    assert str(operator_err.value) == str(op_err.value)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        a.__mul__()
    with pytest.raises(TypeError):
        a.__add__(a, a)


def test_grad_mode_of_each_thread_is_its_own():
    w = tp.ones(8, requires_grad=True)
    results, errors = {}, []
    barrier = threading.Barrier(4)

    def run(i):
        try:
            barrier.wait(timeout=10)
            for _ in range(200):
                if i % 2:
                    with tp.no_grad():
                        r = w * 2 + w
                    ok = r.grad_fn is None
                else:
                    r = w * 2 + w
                    ok = r.grad_fn is not None
                if not ok or r.tolist() != [3.0] * 8:
                    results[i] = False
                    return
            results[i] = True
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    assert not errors and results == {0: True, 1: True, 2: True, 3: True}
