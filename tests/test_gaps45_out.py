"""``out=`` on the functional built-ins, without torch (tests/torch_bridge/
test_out_differential45.py compares with torch): the result written into ``out`` and ``out``
returned, torch's dtype rules (can_cast, or the same dtype where torch asks it), resizing (silent
for an empty out, a UserWarning otherwise), the version bump, the autograd refusal, overlap
refusals, tuple outs, the factories taking out's dtype and device, and nothing written when a
check fails. One mechanism serves the op records (``tp.mul`` is ``tp::mul``: its generated call
takes ``out``) and the Python functions (``tensorplay._ops._define.write_out``)."""

from __future__ import annotations

import inspect
import warnings

import pytest

import tensorplay as tp


def _x():
    return tp.tensor([[0.5, 1.5, 2.25], [3.0, 0.75, 1.25]])


def test_op_record_writes_into_out_and_returns_it():
    a, b = _x(), _x()
    o = tp.empty(2, 3)
    v = o._version
    r = tp.logical_and(a, b, out=o)
    assert r is o and o.dtype is tp.float32 and o.tolist() == [[1.0] * 3] * 2
    assert o._version == v + 1
    o = tp.empty(2, 3, dtype=tp.bool)
    assert tp.logical_and(a, b, out=o) is o and o.tolist() == [[True] * 3] * 2


def test_empty_out_is_resized_silently_other_shapes_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        o = tp.mul(_x(), 2, out=tp.empty(0))
    assert o.shape == (2, 3) and o.tolist() == [[1.0, 3.0, 4.5], [6.0, 1.5, 2.5]]
    with pytest.warns(UserWarning, match=r"had shape \[7\], which does not match the required "
                                         r"output shape \[2, 3\]"):
        o = tp.add(_x(), 1, out=tp.zeros(7))
    assert o.shape == (2, 3) and o.stride() == (3, 1)


def test_out_keeps_its_strides_when_the_shape_matches():
    o = tp.zeros(3, 2).t()
    tp.exp(_x(), out=o)
    assert o.stride() == (1, 2)
    assert tp.allclose(o, _x().exp())


@pytest.mark.parametrize("call,odt", [
    (lambda o: tp.mul(_x(), 2, out=o), tp.int64),          # float result into an int out
    (lambda o: tp.add(_x(), _x(), out=o), tp.bool),
    (lambda o: tp.matmul(_x(), _x().t(), out=o), tp.float64),   # matmul: the same dtype
    (lambda o: tp.sort(_x(), out=(o, tp.empty(0, dtype=tp.int64))), tp.float64),
    (lambda o: tp.neg(_x(), out=o), tp.float64),           # neg keeps its dtype (torch)
    (lambda o: tp.argmax(_x(), 1, out=o), tp.int32),
])
def test_dtype_refusals_write_nothing(call, odt):
    o = tp.full((2, 3), 7, dtype=odt)
    v = o._version
    with pytest.raises(RuntimeError, match="dtype|type"):
        call(o)
    assert o._version == v and o.shape == (2, 3)
    assert o.tolist() == tp.full((2, 3), 7, dtype=odt).tolist()


def test_castable_dtypes_are_cast():
    o = tp.mul(_x(), 2, out=tp.empty(0, dtype=tp.float64))
    assert o.dtype is tp.float64 and o.tolist() == [[1.0, 3.0, 4.5], [6.0, 1.5, 2.5]]
    o = tp.eq(_x(), _x(), out=tp.empty(0, dtype=tp.float32))
    assert o.tolist() == [[1.0] * 3] * 2
    o = tp.add(tp.tensor([1, 2]), 3, out=tp.empty(0, dtype=tp.float32))
    assert o.dtype is tp.float32 and o.tolist() == [4.0, 5.0]


def test_autograd_rule():
    x = _x().requires_grad_(True)
    msg = "functions with out=... arguments don't support automatic differentiation"
    for call in (lambda o: tp.mul(x, 2, out=o), lambda o: tp.add(x, 1, out=o),
                 lambda o: tp.sum(x, 0, out=o), lambda o: tp.cat([x, x], out=o)):
        with pytest.raises(RuntimeError, match=msg):
            call(tp.empty(0))
    with pytest.raises(RuntimeError, match=msg):           # out itself requires grad
        tp.mul(_x(), 2, out=tp.empty(2, 3, requires_grad=True))
    with tp.no_grad():
        o = tp.mul(x, 2, out=tp.empty(0))
    assert not o.requires_grad and o.grad_fn is None
    # results with no gradient (argmax, eq) may be written whatever their inputs need
    assert tp.argmax(x, 1, out=tp.empty(0, dtype=tp.int64)).tolist() == [2, 0]
    assert tp.eq(x, x, out=tp.empty(0, dtype=tp.bool)).shape == (2, 3)


def test_overlap_rules():
    x = tp.arange(6.0)
    assert tp.exp(x, out=x) is x                                  # out is the input
    y = tp.arange(6.0)
    assert tp.add(y, y, out=y).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    z = tp.arange(6.0)
    with pytest.raises(RuntimeError, match="single memory location"):
        tp.add(z[:4], 1, out=z[1:5])
    assert z.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    w = tp.arange(6.0)
    assert tp.add(w[:3], 1, out=w[3:]).tolist() == [1.0, 2.0, 3.0]   # disjoint halves


def test_tuple_outs():
    v, i = tp.empty(0), tp.empty(0, dtype=tp.int64)
    r = tp.sort(_x(), 1, descending=True, out=(v, i))
    assert isinstance(r, tp.return_types.sort) and r.values is v and r.indices is i
    assert v.tolist() == [[2.25, 1.5, 0.5], [3.0, 1.25, 0.75]] and i.tolist() == [[2, 1, 0],
                                                                                [0, 2, 1]]
    r = tp.topk(_x(), 1, out=(tp.empty(0), tp.empty(0, dtype=tp.int64)))
    assert r.values.tolist() == [[2.25], [3.0]] and r.indices.tolist() == [[2], [0]]
    r = tp.max(_x(), 0, out=[tp.empty(0), tp.empty(0, dtype=tp.int64)])
    assert r.values.tolist() == [3.0, 1.5, 2.25] and r.indices.tolist() == [1, 0, 0]
    with pytest.raises(TypeError, match="tuple of 2 Tensors"):
        tp.sort(_x(), out=tp.empty(0))
    with pytest.raises(TypeError, match="must be Tensor"):
        tp.exp(_x(), out=(tp.empty(0),))


def test_reductions_joins_and_linear_algebra():
    x = _x()
    assert tp.sum(x, 0, out=tp.empty(0)).tolist() == [3.5, 2.25, 3.5]
    # sum's out dtype is its dtype (torch): the input cast first
    assert tp.sum(x, 1, out=tp.empty(0, dtype=tp.int64)).tolist() == [3, 4]
    assert tp.cumsum(x, 1, out=tp.empty(0)).tolist() == [[0.5, 2.0, 4.25], [3.0, 3.75, 5.0]]
    assert tp.mean(x, 0, out=tp.empty(0, dtype=tp.float64)).dtype is tp.float64
    assert tp.all(x > 0, 1, out=tp.empty(0, dtype=tp.bool)).tolist() == [True, True]
    assert tp.cat([x, x], 0, out=tp.empty(0)).shape == (4, 3)
    assert tp.stack([x, x], out=tp.empty(0)).shape == (2, 2, 3)
    assert tp.where(x > 1, x, 0.0, out=tp.empty(0)).tolist() == [[0.0, 1.5, 2.25],
                                                               [3.0, 0.0, 1.25]]
    assert tp.clamp(x, 1, 2, out=tp.empty(0)).tolist() == [[1.0, 1.5, 2.0], [2.0, 1.0, 1.25]]
    assert tp.mm(x, x.t(), out=tp.empty(0)).shape == (2, 2)
    assert tp.bmm(x[None], x.t()[None], out=tp.empty(0)).shape == (1, 2, 2)
    assert tp.matmul(x, x.t(), out=tp.empty(0)).tolist() == tp.matmul(x, x.t()).tolist()


def test_factories_take_outs_dtype_and_device():
    o = tp.zeros(2, 3, out=tp.empty(0, dtype=tp.int64))
    assert o.dtype is tp.int64 and o.tolist() == [[0, 0, 0], [0, 0, 0]]
    assert tp.arange(5, out=tp.empty(0)).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert tp.linspace(0, 1, 3, out=tp.empty(0, dtype=tp.float64)).tolist() == [0.0, 0.5, 1.0]
    assert tp.full((2,), 2.5, out=tp.empty(0)).tolist() == [2.5, 2.5]
    assert tp.ones(3, out=tp.empty(0, dtype=tp.bool)).tolist() == [True] * 3
    assert tp.rand(4, out=tp.empty(0, dtype=tp.float64)).shape == (4,)
    with pytest.raises(RuntimeError, match=r"dtype Float does not match dtype of out parameter "
                                           r"\(Long\)"):
        tp.zeros(2, dtype=tp.float32, out=tp.empty(0, dtype=tp.int64))
    o = tp.ones(4)
    v = o._version
    assert tp.empty(4, out=o) is o and o._version == v and o.tolist() == [1.0] * 4   # nothing written
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.zeros(2, 3, out=tp.ones(5))                     # factories resize silently


def test_methods_take_no_out_and_calls_without_out_are_unchanged():
    x = _x()
    with pytest.raises(TypeError):
        x.mul(x, out=tp.empty(0))
    with pytest.raises(TypeError):
        tp.relu(x, out=tp.empty(0))          # torch's relu, isnan, clone take no out=
    assert "out" in inspect.signature(tp.mul).parameters
    assert inspect.signature(tp.mul).parameters["out"].kind is inspect.Parameter.KEYWORD_ONLY
    assert (x * x).tolist() == tp.mul(x, x).tolist() == tp.mul(x, x, out=None).tolist()
    for f in (tp.mul, tp.add, tp.sub, tp.div, tp.atan2):
        with pytest.raises(TypeError, match="positional"):
            f(x, x, tp.empty(0))             # out is keyword-only
        sig = inspect.signature(f)
        assert sig.parameters["out"].kind is inspect.Parameter.KEYWORD_ONLY
        assert [p for p in sig.parameters if p.startswith("_")] == []
    with pytest.raises(TypeError, match="positional"):
        tp.exp(x, tp.empty(0))


def test_out_under_fake_mode():
    from tensorplay.fake import FakeTensorMode
    with FakeTensorMode():
        o = tp.empty(0)
        r = tp.add(tp.ones(2, 3), 1, out=o)
        assert r is o and o.shape == (2, 3)


def test_forms_without_out_and_bad_outs():
    x = _x()
    with pytest.raises(TypeError, match="takes no out="):
        tp.where(x > 1, out=tp.empty(0))             # where(condition) alone: no out (torch)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        tp.exp(x, out=3)


def test_out_inside_compile():
    def f(x, o):
        tp.mul(x, 2, out=o)
        return o + 1

    cf = tp.compile(f)
    o = tp.empty(3)
    assert cf(tp.ones(3), o).tolist() == [3.0] * 3 and o.tolist() == [2.0] * 3
    assert cf(tp.full((3,), 5.0), o).tolist() == [11.0] * 3 and o.tolist() == [10.0] * 3
    with pytest.raises(RuntimeError, match="inside tensorplay.compile"):
        cf(tp.ones(3), tp.empty(0))                  # a resize is not recorded: refused
