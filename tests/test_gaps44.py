"""Session 44's functions without torch: atan2/arctan2, hypot, fmod, copysign, nextafter,
asinh/acosh/atanh (+ arc* aliases), logaddexp(2)/xlogy/float_power as functions, and the
named-tuple reductions aminmax, median, nanmedian, kthvalue, mode, cummax, cummin.
Values against NumPy/math, dtypes by torch's rules, gradients by ``tp.autograd.gradcheck``
(finite differences, float64). tests/torch_bridge/test_torch_gaps44.py compares with torch."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay as tp

NAN = float("nan")


def _f64(v, grad=False):
    return tp.tensor(v, dtype=tp.float64, requires_grad=grad)


@pytest.mark.parametrize("name,ref", [("atan2", np.arctan2), ("hypot", np.hypot),
                                      ("fmod", np.fmod), ("copysign", np.copysign),
                                      ("nextafter", np.nextafter)])
def test_binary_values_broadcast_like_numpy(name, ref):
    a = np.array([[1.5, -2.0, 0.25], [3.0, -0.5, 7.0]])
    b = np.array([0.75, 3.0, -2.0])
    r = getattr(tp, name)(_f64(a.tolist()), _f64(b.tolist()))
    assert r.shape == (2, 3) and r.dtype is tp.float64
    np.testing.assert_array_equal(r.numpy(), ref(a, b))


def test_integer_and_bool_operands_follow_torch_dtype_rules():
    i = tp.tensor([7, -7, 3])
    j = tp.tensor([2, 3, -2])
    assert tp.atan2(i, j).dtype is tp.float32
    assert tp.copysign(i, -1).dtype is tp.float32
    assert tp.copysign(i, -1).tolist() == [-7.0, -7.0, -3.0]
    assert tp.fmod(i, j).dtype is tp.int64 and tp.fmod(i, j).tolist() == [1, -1, 1]
    assert tp.fmod(i, 2.5).dtype is tp.float32
    assert tp.asinh(i).dtype is tp.float32 and tp.asinh(tp.tensor([True])).dtype is tp.float32
    for f in (tp.hypot, tp.nextafter):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            f(i, j)
    with pytest.raises(NotImplementedError, match="'Bool'"):
        tp.fmod(tp.tensor([True]), tp.tensor([True]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        tp.fmod(i, 0)
    for f in (tp.atan2, tp.hypot, tp.nextafter, tp.logaddexp):   # tensors only, as torch
        with pytest.raises(TypeError):
            f(tp.tensor([1.0]), 2.0)


def test_signed_zeros_and_special_values():
    z = tp.tensor([0.0, -0.0, 0.0])
    assert np.signbit(tp.atan2(z, tp.tensor([-0.0, -0.0, 0.0])).numpy()).tolist() == \
        [False, True, False]
    assert tp.atan2(z, tp.tensor([-0.0, -0.0, 0.0])).tolist() == pytest.approx(
        [math.pi, -math.pi, 0.0])
    assert np.signbit(tp.fmod(tp.tensor([-4.0, 4.0]), 2.0).numpy()).tolist() == [True, False]
    assert np.signbit(tp.nextafter(tp.tensor([0.0], dtype=tp.float16),
                                   tp.tensor([-0.0], dtype=tp.float16)).numpy()).tolist() == [True]
    assert tp.atanh(tp.tensor([1.0, -1.0, 2.0])).tolist()[:2] == [math.inf, -math.inf]
    assert math.isnan(tp.acosh(tp.tensor([0.5])).item())


@pytest.mark.parametrize("name,ref", [("asinh", np.arcsinh), ("acosh", np.arccosh),
                                      ("atanh", np.arctanh)])
def test_inverse_hyperbolics_and_aliases(name, ref):
    v = {"asinh": [-3.0, 0.5, 2.0], "acosh": [1.0, 1.5, 9.0], "atanh": [-0.5, 0.0, 0.9]}[name]
    x = _f64(v)
    np.testing.assert_array_equal(getattr(tp, name)(x).numpy(), ref(np.array(v)))
    assert getattr(tp, "arc" + name[1:]) is getattr(tp, name)
    y = x.clone()
    assert getattr(y, name + "_")() is y and y.tolist() == getattr(tp, name)(x).tolist()
    with pytest.raises(RuntimeError, match="can't be cast"):
        getattr(tp.tensor([1, 2]), name + "_")()


@pytest.mark.parametrize("call", [
    lambda a, b: tp.atan2(a, b), lambda a, b: tp.hypot(a, b), lambda a, b: tp.fmod(a, b),
    lambda a, b: tp.copysign(a, b), lambda a, b: tp.nextafter(a, b),
    lambda a, b: tp.logaddexp(a, b), lambda a, b: tp.logaddexp2(a, b),
    # a positive base: a negative one to a fractional power is NaN (gradcheck fails it, as torch)
    lambda a, b: tp.float_power(a.abs(), b), lambda a, b: tp.xlogy(a, b.abs()),
    lambda a, b: tp.asinh(a) + tp.atanh(a * 0.5) + tp.acosh(b.abs() + 1.5),
])
def test_gradients_match_finite_differences(call):
    a = _f64([[0.7, -1.3, 0.4], [1.1, -0.6, 0.9]], True)
    b = _f64([0.8, 1.7, -1.2], True)
    assert tp.autograd.gradcheck(call, (a, b))


def test_keyword_names_and_in_place_forms():
    a, b = tp.tensor([1.0, -2.0]), tp.tensor([3.0, 0.5])
    for name in ("atan2", "hypot", "fmod", "copysign", "nextafter"):
        want = getattr(tp, name)(a, b).tolist()
        assert getattr(tp, name)(input=a, other=b).tolist() == want
        assert getattr(a, name)(other=b).tolist() == want
        c = a.clone()
        v = c._version
        assert getattr(c, name + "_")(b) is c and c.tolist() == want and c._version == v + 1
    assert tp.arctan2 is tp.atan2 and tp.Tensor.arctan2_ is tp.Tensor.atan2_
    assert tp.xlogy(2, tp.tensor([1.0, math.e])).tolist() == pytest.approx([0.0, 2.0])
    assert tp.float_power(2, tp.tensor([1, -2])).dtype is tp.float64


X = [[3.0, 1.0, 2.0, 1.0, 3.0], [NAN, 1.0, NAN, 0.0, 5.0], [2.0, 2.0, 2.0, 2.0, 2.0]]


def _same(t, want):
    np.testing.assert_array_equal(t.numpy(), np.array(want, dtype=t.numpy().dtype))


def test_named_tuples_types_and_fields():
    x = _f64(X)
    cases = [(tp.aminmax(x, dim=1), "aminmax", ("min", "max")),
             (tp.median(x, 1), "median", ("values", "indices")),
             (tp.nanmedian(x, 1), "nanmedian", ("values", "indices")),
             (tp.kthvalue(x, 2), "kthvalue", ("values", "indices")),
             (tp.mode(x[::2]), "mode", ("values", "indices")),
             (tp.cummax(x, 1), "cummax", ("values", "indices")),
             (tp.cummin(x, 1), "cummin", ("values", "indices"))]
    for r, name, fields in cases:
        assert type(r) is getattr(tp.return_types, name) and r._fields == fields
        v, i = r
        assert v is r[0] and getattr(r, fields[1]) is i
    assert tp.kthvalue(x, 2).indices.dtype is tp.int64


def test_values_and_indices_by_torch_rules():
    x = _f64(X)
    m = tp.median(x, 1)
    _same(m.values, [2.0, NAN, 2.0])
    _same(m.indices, [2, 0, 2])                      # lower median; the first NaN
    _same(tp.nanmedian(x, 1).values, [2.0, 1.0, 2.0])
    assert math.isnan(tp.median(x).item()) and tp.median(x[0]).item() == 2.0
    k = tp.kthvalue(x, 5, 1)
    _same(k.values, [3.0, NAN, 2.0])                 # NaN is the largest value
    mo = tp.mode(x[::2])
    _same(mo.values, [1.0, 2.0])
    _same(mo.indices, [3, 4])                        # smallest most frequent, its last index
    c = tp.cummax(x, 1)
    _same(c.values, [[3, 3, 3, 3, 3], [NAN] * 5, [2] * 5])
    _same(c.indices, [[0, 0, 0, 0, 4], [0, 0, 2, 2, 2], [0, 1, 2, 3, 4]])
    c = tp.cummin(x, 1)
    _same(c.indices, [[0, 1, 1, 3, 3], [0, 0, 2, 2, 2], [0, 1, 2, 3, 4]])
    a = tp.aminmax(x, dim=1, keepdim=True)
    assert a.min.shape == (3, 1)
    _same(a.max, [[3.0], [NAN], [2.0]])
    assert tp.aminmax(tp.tensor([True, False])).max.item() is True


def test_errors_as_torch():
    with pytest.raises(IndexError, match="non-zero size"):
        tp.median(tp.zeros(2, 0), 1)
    with pytest.raises(IndexError, match="non-zero size"):
        tp.mode(tp.zeros(0))
    with pytest.raises(RuntimeError, match="empty dimension"):
        tp.aminmax(tp.zeros(0))
    with pytest.raises(RuntimeError, match="k out of range"):
        tp.kthvalue(tp.zeros(3), 4)
    with pytest.raises(NotImplementedError, match="Bool"):
        tp.median(tp.tensor([True]))
    with pytest.raises(TypeError):
        tp.median([1.0, 2.0])


def test_reduction_gradients():
    x = _f64([[0.5, -1.25, 3.0, 2.0], [4.0, 1.0, -2.0, 0.25]], True)
    for f in (lambda t: tp.median(t, 1).values, lambda t: tp.kthvalue(t, 2, 0).values,
              lambda t: tp.mode(t, 1).values, lambda t: tp.cummax(t, 1).values,
              lambda t: tp.cummin(t, 0).values, lambda t: tp.aminmax(t, dim=1).max,
              lambda t: tp.median(t), lambda t: tp.nanmedian(t, 0).values):
        assert tp.autograd.gradcheck(f, (x,))
    # ties: median() splits the gradient evenly among the equal elements (torch's rule)
    y = _f64([1.0, 2.0, 2.0, 5.0, 2.0], True)
    tp.median(y).backward()
    assert y.grad.tolist() == pytest.approx([0, 1 / 3, 1 / 3, 0, 1 / 3])
    # cummax: the gradient goes to the index of each running maximum
    z = _f64([1.0, 3.0, 2.0, 3.0], True)
    tp.cummax(z, 0).values.sum().backward()
    assert z.grad.tolist() == [1.0, 2.0, 0.0, 1.0]   # indices [0, 1, 1, 3]


def test_scatter_reduce_prod_amax_amin_values_and_gradients():
    x = _f64([[1.5, 0.5, -2.0], [2.0, 3.0, 0.25]], True)
    src = _f64([[2.0, -1.0, 0.5], [4.0, 0.75, -3.0]], True)
    idx = tp.tensor([[0, 0, 2], [1, 2, 2]])
    want = {"prod": [[1.5 * 2.0 * -1.0, 0.5, -2.0 * 0.5], [2.0, 3.0 * 4.0, 0.25 * 0.75 * -3.0]],
            "amax": [[2.0, 0.5, 0.5], [2.0, 4.0, 0.75]],
            "amin": [[-1.0, 0.5, -2.0], [2.0, 3.0, -3.0]]}
    for r, w in want.items():
        assert x.scatter_reduce(1, idx, src, r).tolist() == w
        assert tp.autograd.gradcheck(lambda a, b: a.scatter_reduce(1, idx, b, r), (x, src))
        assert tp.autograd.gradcheck(
            lambda a, b: a.scatter_reduce(1, idx, b, r, include_self=False), (x, src))
    # include_self=False: the touched positions hold only src's values
    assert x.scatter_reduce(1, idx, src, "amax", include_self=False).tolist() == \
        [[2.0, 0.5, 0.5], [2.0, 4.0, 0.75]]
    # amax ties share the gradient evenly (torch's rule): self 2.0 and src 2.0 at [0][0]
    a = _f64([2.0, 1.0], True)
    b = _f64([2.0, 0.5], True)
    a.scatter_reduce(0, tp.tensor([0, 1]), b, "amax").sum().backward()
    assert a.grad.tolist() == [0.5, 1.0] and b.grad.tolist() == [0.5, 0.0]
    # prod with a zero: the other factors' product, no division by zero
    p = _f64([3.0], True)
    q = _f64([0.0, 5.0], True)
    p.scatter_reduce(0, tp.tensor([0, 0]), q, "prod").backward()
    assert p.grad.tolist() == [0.0] and q.grad.tolist() == [15.0, 0.0]


def test_scatter_multiply_and_reduce_spellings():
    x = tp.tensor([1.0, 2.0, 3.0])
    idx = tp.tensor([0, 0, 2])
    assert x.scatter(0, idx, tp.tensor([4.0, 5.0, 6.0]), reduce="multiply").tolist() == \
        [20.0, 2.0, 18.0]
    y = x.clone()
    assert y.scatter_(0, idx, 2.0, reduce="multiply") is y and y.tolist() == [4.0, 2.0, 6.0]
    assert x.scatter_reduce(0, idx, tp.tensor([4.0, 5.0, 6.0]), "max").tolist() == \
        [5.0, 2.0, 6.0]
    with pytest.raises(RuntimeError, match="add or multiply"):
        x.scatter(0, idx, 1.0, reduce="max")
    with pytest.raises(RuntimeError, match="must be either sum"):
        x.scatter_reduce(0, idx, x, "multiply")
    with pytest.raises(RuntimeError, match="dtype"):
        x.scatter_reduce(0, idx, tp.tensor([1, 2, 3]), "amax")


def test_xlogy_op_values_and_gradients_as_torch():
    x = _f64([0.0, 0.0, 1.5, 0.0, 2.0], True)
    y = _f64([2.0, 0.0, 0.0, NAN, 3.0], True)
    r = tp.xlogy(x, y)
    assert r.tolist()[:3] == [0.0, 0.0, -math.inf] and math.isnan(r.tolist()[3])
    r.sum().backward()
    # torch's formulas: self: xlogy(grad, other), 0 where self == 0 and other <= 0;
    # other: grad * self / other
    gx, gy = x.grad.tolist(), y.grad.tolist()
    assert gx[0] == pytest.approx(math.log(2.0)) and gx[1] == 0.0 and gx[2] == -math.inf
    assert math.isnan(gx[3]) and gy[0] == 0.0 and math.isnan(gy[1]) and gy[2] == math.inf
    # computed at the promoted dtype: float64 self with float32 other takes log in float64
    v = tp.xlogy(tp.tensor([-2.0], dtype=tp.float64), tp.tensor([3.0])).item()
    # (to float64 rounding: NumPy's log may differ from math.log by an ulp, as NumPy 1.26's does
    # here; a float32 log would be ~1e-8 off)
    assert v == pytest.approx(-2.0 * math.log(3.0), rel=1e-14, abs=0)
    a = _f64([[0.7, 1.3], [2.1, 0.4]], True)
    b = _f64([0.8, 1.7], True)
    assert tp.autograd.gradcheck(lambda p, q: p.xlogy(q), (a, b))
