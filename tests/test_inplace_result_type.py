"""In-place arithmetic follows torch's rule: compute as the out-of-place op would (torch's type
promotion), then write into ``self`` if the result's dtype can be cast to ``self``'s
(``torch.can_cast``: no floating into integer or bool, no integer into bool); otherwise
RuntimeError naming both dtypes, with nothing written. Found by comparing every Python operator
and in-place method against torch 2.13 over float32/float64/int64/int32/int8/uint8/bool operands:
``int64 /= int64`` wrote INT64_MIN, ``float32 -= uint8`` computed ``x + (256 - b)``,
``//=``, ``%=``, ``**=`` rebound the name to a new tensor of another dtype, ``x /= 3`` differed
from ``x / 3`` in the last bit, ``x /= 0`` raised ZeroDivisionError. Expected values are torch's.
"""

import pytest

import tensorplay as tp


def _i(values, dtype=tp.int64):
    return tp.tensor(values, dtype=dtype)


INT_DTYPES = [tp.int64, tp.int32, tp.int8, tp.uint8]


@pytest.mark.parametrize("dtype", INT_DTYPES + [tp.bool])
@pytest.mark.parametrize("other", [2, 2.5, "int", "float"])
def test_true_division_into_an_integer_tensor_is_refused_and_writes_nothing(dtype, other):
    x = tp.tensor([1, 0, 1], dtype=dtype)
    before, version = x.tolist(), x._version
    o = {"int": _i([2, 2, 2]), "float": tp.tensor([2.0, 2.0, 2.0])}.get(other, other)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        x /= o
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        x.div_(o)
    assert x.tolist() == before and x._version == version


@pytest.mark.parametrize("op", ["__ifloordiv__", "__imod__", "__ipow__"])
def test_integer_in_place_ops_with_a_float_operand_are_refused(op):
    x = _i([7, -7])
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        getattr(x, op)(2.5)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        getattr(x, op)(tp.tensor([2.0]))
    assert x.tolist() == [7, -7]


def test_floordiv_mod_pow_in_place_write_self():
    for op, expected in (("__ifloordiv__", [3, -4]), ("__imod__", [1, 2]),
                         ("__ipow__", [49, 49])):
        x = _i([7, -7])
        x0, v = x, x._version
        other = 3 if op == "__imod__" else 2
        r = getattr(x, op)(other)
        assert r is x0 and x.tolist() == expected and x.dtype is tp.int64, op
        assert x._version == v + 1, op


def test_in_place_keeps_self_dtype_when_the_other_operand_is_wider():
    x = tp.tensor([7.0, -7.0])
    y = x
    y //= tp.tensor([2.0], dtype=tp.float64)
    assert y is x and x.dtype is tp.float32 and x.tolist() == [3.0, -4.0]
    y %= tp.tensor([2.5], dtype=tp.float64)
    assert y is x and x.dtype is tp.float32 and x.tolist() == [0.5, 1.0]
    y **= tp.tensor([2.0], dtype=tp.float64)
    assert y is x and x.dtype is tp.float32 and x.tolist() == [0.25, 1.0]


def test_int8_pow_uint8_computes_in_int16_and_wraps_into_int8():
    x = _i([-2, -1, 0, 3, 4], tp.int8)
    x **= _i([4, 3, 2, 5, 1], tp.uint8)       # torch: int16 results 16, -1, 0, 243, 4
    assert x.dtype is tp.int8 and x.tolist() == [16, -1, 0, -13, 4]


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.int64, tp.int32])
def test_subtracting_an_unsigned_tensor_in_place(dtype):
    x = tp.tensor([1, 2], dtype=dtype)
    x -= _i([3, 200], tp.uint8)
    assert x.dtype is dtype and x.tolist() == [-2, -198]
    x = tp.tensor([1, 2], dtype=dtype)
    x.sub_(_i([3, 200], tp.uint8))
    assert x.tolist() == [-2, -198]
    x = tp.tensor([1, 2], dtype=dtype)
    x.sub_(_i([3, 200], tp.uint8), alpha=2)
    assert x.tolist() == [-5, -398]


@pytest.mark.parametrize("other", [True, "bool"])
def test_subtracting_a_bool_in_place_is_refused_as_out_of_place(other):
    x = tp.tensor([1.0, 2.0])
    o = tp.tensor([True, False]) if other == "bool" else other
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        x -= o
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor"):
        x.sub_(o)
    assert x.tolist() == [1.0, 2.0]


def test_bool_tensor_in_place_with_an_integer_is_refused():
    b = tp.tensor([True, False])
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        b += 1
    b *= True                                   # bool * bool stays bool
    assert b.tolist() == [True, False] and b.dtype is tp.bool


def test_true_division_in_place_is_the_out_of_place_division_bit_for_bit():
    tp.manual_seed(0)
    x = tp.randn(4096)
    y = x.clone()
    y /= 3
    assert y.tolist() == (x / 3).tolist()
    z = x.clone()
    z.div_(7.0)
    assert z.tolist() == (x / 7.0).tolist()


def test_float_division_by_zero_in_place_gives_infinities():
    x = tp.tensor([1.0, -2.0, 0.0])
    x /= 0
    r = x.tolist()
    assert r[0] == float("inf") and r[1] == float("-inf") and r[2] != r[2]


def test_fill_with_a_tensor_of_dimensions_is_refused():
    x = _i([1, 2])
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
        x.fill_(_i([1]))
    assert x.tolist() == [1, 2]
    x.fill_(tp.tensor(2.7))                     # a 0-dim value is cast into self, as torch
    assert x.tolist() == [2, 2]


def test_clamp_needs_min_or_max():
    x = tp.tensor([1.0, 2.0])
    for call in (lambda: x.clamp(), lambda: x.clamp_(), lambda: tp.clamp(x)):
        with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
            call()


def test_integer_clamp_in_place_with_a_float_bound_is_refused():
    x = _i([5, 1])
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        x.clamp_(2.5)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        x.clamp_(tp.tensor([2.0]))
    assert x.tolist() == [5, 1]
    x8 = _i([5, 1], tp.int8)
    x8.clamp_(_i([2]))                          # int64 bound: the result casts back to int8
    assert x8.tolist() == [5, 2] and x8.dtype is tp.int8


def test_in_place_results_keep_autograd():
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = tp.tensor([1.0, 2.0, 4.0], requires_grad=True)
    y = x * 1
    y /= w
    y -= w
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.5, 0.25]
    assert w.grad.tolist() == [-1.0 - 1.0, -2.0 / 4.0 - 1.0, -3.0 / 16.0 - 1.0]


def test_in_place_ops_inside_compile_match_eager():
    def f(x, y):
        a = x.clone()
        a //= 2
        a %= 3
        a **= 2
        b = y.clone()
        b -= x.to(tp.uint8)
        b /= 4
        return a, b

    x = _i([7, -7, 5, 9])
    y = tp.tensor([1.0, 2.0, 3.0, 4.0])
    eager = f(x, y)
    x2 = _i([7, 1, 5, 9])
    compiled = tp.compile(f)
    for args in ((x, y), (x2, y)):
        e, c = f(*args), compiled(*args)
        assert [t.tolist() for t in e] == [t.tolist() for t in c]
        assert [t.dtype for t in e] == [t.dtype for t in c]
    assert eager[0].dtype is tp.int64


def test_alpha_multiplies_in_the_ops_common_dtype():
    x = tp.tensor([1.0, 2.0])
    y = _i([3, 200], tp.uint8)
    assert x.add(y, alpha=2).tolist() == [7.0, 402.0]       # torch: 200 * 2 does not wrap
    assert x.sub(y, alpha=2).tolist() == [-5.0, -398.0]
    z = x.clone()
    z.add_(y, alpha=2)
    assert z.tolist() == [7.0, 402.0]
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        _i([1, 2]).add(_i([1, 1]), alpha=0.5)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        _i([1, 2]).sub_(1, alpha=0.5)


@pytest.mark.parametrize("op", ["pow_", "clamp_", "remainder_", "div_"])
def test_in_place_on_a_non_leaf_whose_formula_reads_self(op):
    # the out-of-place formula saves self; the write must not make the saved value stale
    w = tp.tensor([1.5, 2.0, 3.0], requires_grad=True)
    x = tp.tensor([0.5, 1.5, 2.5], requires_grad=True)
    args = {"pow_": (w,), "clamp_": (w * 0.5, None), "remainder_": (w,), "div_": (w,)}[op]
    y = x * 1
    getattr(y, op)(*args)
    y.sum().backward()
    ref_x = tp.tensor([0.5, 1.5, 2.5], requires_grad=True)
    ref_w = tp.tensor([1.5, 2.0, 3.0], requires_grad=True)
    rargs = {"pow_": (ref_w,), "clamp_": (ref_w * 0.5, None), "remainder_": (ref_w,),
             "div_": (ref_w,)}[op]
    out_of_place = {"pow_": tp.Tensor.pow, "clamp_": tp.Tensor.clamp,
                    "remainder_": tp.Tensor.remainder, "div_": tp.Tensor.div}[op]
    out_of_place(ref_x * 1, *rargs).sum().backward()
    assert x.grad.tolist() == ref_x.grad.tolist()
    assert w.grad.tolist() == ref_w.grad.tolist()


@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16, tp.float32, tp.float64])
@pytest.mark.parametrize("op", ["sub", "div"])
def test_sub_and_div_in_place_equal_the_out_of_place_op_in_every_float_dtype(dtype, op):
    tp.manual_seed(1)
    x = tp.randn(257).to(dtype)
    for other in (tp.rand(257).to(dtype) + 0.5, tp.rand(1) + 0.5, 3, 0.1, 1 / 3):
        y = x.clone()
        getattr(y, op + "_")(other)
        assert y.dtype is dtype
        assert y.tolist() == getattr(x, op)(other).to(dtype).tolist(), (op, other)


def test_alpha_under_compile_is_eager():
    # a captured tensor is a Tensor too: alpha multiplies in the common dtype there as well
    x = tp.tensor([1.0, 2.0, 3.0])
    y = _i([200, 1, 0], tp.uint8)

    def f(x, y):
        a = x.clone()
        a.sub_(y, alpha=2)
        return x.add(y, alpha=2), x.sub(y, alpha=3), a

    assert [t.tolist() for t in tp.compile(f)(x, y)] == [t.tolist() for t in f(x, y)] == [
        [401.0, 4.0, 3.0], [-599.0, -1.0, 3.0], [-399.0, 0.0, 3.0]]


def test_in_place_reading_self_keeps_autograd_under_compile():
    def h(x, w):
        y = x * 1
        y.pow_(w)
        y.div_(w)
        return y.sum()

    grads = []
    for fn in (h, tp.compile(h)):
        x = tp.tensor([0.5, 1.5, 2.5], requires_grad=True)
        w = tp.tensor([1.5, 2.0, 3.0], requires_grad=True)
        fn(x, w).backward()
        grads.append((x.grad.tolist(), w.grad.tolist()))
    assert grads[0] == grads[1]


def test_alpha_conversion_follows_torch():
    b = tp.tensor([True, False])
    assert b.add(b, alpha=2).tolist() == [True, False]          # bool result: bool(alpha)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        tp.tensor([1.0]).add(tp.tensor([1.0]), alpha=True)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8"):
        _i([1, 2], tp.int8).add(_i([1, 1], tp.int8), alpha=300)
    for call in (lambda: tp.tensor([1.0, 2.0]).sub(b, alpha=2),
                 lambda: tp.tensor([1.0, 2.0]).sub_(True, alpha=2)):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
            call()


def test_clamp_bounds_are_converted_with_torch_checks():
    i8 = _i([7, -7, 5, 0], tp.int8)
    u8 = _i([7, 250, 5, 0], tp.uint8)
    for call in (lambda: i8.clamp(max=200), lambda: u8.clamp(0, 300),
                 lambda: i8.clamp(-1000, 1000), lambda: i8.clone().clamp_(max=200)):
        with pytest.raises(RuntimeError, match="value cannot be converted to type"):
            call()
    assert u8.clamp(-1).tolist() == [255, 255, 255, 255]       # -1 wraps into uint8, as torch
    assert i8.clamp(max=127).tolist() == [7, -7, 5, 0]
    assert i8.clamp(2.5).dtype is tp.float32                    # a float bound: float result
