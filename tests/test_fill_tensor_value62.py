"""``masked_fill``/``masked_fill_``/``index_fill``/``index_fill_`` with a 0-dim tensor value check
the value against the dtype as torch does (its kernels read ``value.item()`` and convert the
number checked): ``int8.masked_fill(mask, tensor(300))`` raises "value cannot be converted to
type int8_t without overflow" in torch 2.13, where it wrote 44. Session 61 fixed the same for
``full``/``full_like``/``new_full``; ``fill_(tensor(300))`` and ``x[0] = tensor(300)`` are a
tensor copy in torch and wrap (44), kept. Expected values are torch 2.13's (cpu)."""

import pytest

import tensorplay as tp

MASK = [True, False, True]


def _forms(dt, value):
    m = tp.tensor(MASK)
    return {
        "masked_fill": lambda: tp.zeros(3, dtype=dt).masked_fill(m, value),
        "masked_fill_": lambda: tp.zeros(3, dtype=dt).masked_fill_(m, value),
        "index_fill": lambda: tp.zeros(3, dtype=dt).index_fill(0, tp.tensor([1]), value),
        "index_fill_": lambda: tp.zeros(3, dtype=dt).index_fill_(0, tp.tensor([1]), value),
    }


@pytest.mark.parametrize("dt, value", [(tp.int8, 300), (tp.uint8, 300), (tp.int8, -200),
                                       (tp.int8, 1e10), (tp.uint8, 1e10)])
def test_out_of_range_tensor_value_raises(dt, value):
    for name, f in _forms(dt, tp.tensor(value)).items():
        with pytest.raises(RuntimeError, match="cannot be converted to type"):
            f()


@pytest.mark.parametrize("value, int8, uint8", [(-1, -1, 255), (2.5, 2, 2), (True, 1, 1),
                                                 (127, 127, 127)])
def test_in_range_tensor_value_written(value, int8, uint8):
    for dt, want in ((tp.int8, int8), (tp.uint8, uint8)):
        for name, f in _forms(dt, tp.tensor(value)).items():
            r = f().tolist()
            assert r == ([want, 0, want] if "masked" in name else [0, want, 0]), name


def test_negative_int_into_uint8_wraps_as_a_number_does():
    # torch's checked conversion lets a negative int into uint8 (it wraps: -200 is 56)
    for name, f in _forms(tp.uint8, tp.tensor(-200)).items():
        assert f().tolist() == ([56, 0, 56] if "masked" in name else [0, 56, 0]), name


def test_float_and_bool_targets_unchanged():
    r = tp.zeros(3).masked_fill(tp.tensor(MASK), tp.tensor(300))
    assert r.tolist() == [300.0, 0.0, 300.0]
    b = tp.zeros(3, dtype=tp.bool).index_fill(0, tp.tensor([1]), tp.tensor(300))
    assert b.tolist() == [False, True, False]
    with pytest.raises(RuntimeError, match="cannot be converted to type"):
        tp.zeros(3, dtype=tp.float16).masked_fill(tp.tensor(MASK), tp.tensor(1e6))


def test_fill_and_setitem_still_copy():
    # torch's fill_(tensor) and x[i] = tensor are copies: 300 wraps to 44 in int8
    x = tp.zeros(3, dtype=tp.int8)
    assert x.fill_(tp.tensor(300)).tolist() == [44, 44, 44]
    y = tp.zeros(3, dtype=tp.int8)
    y[0] = tp.tensor(300)
    assert y.tolist() == [44, 0, 0]


def test_value_keeps_its_gradient():
    v = tp.tensor(2.0, requires_grad=True)
    tp.zeros(3).masked_fill(tp.tensor(MASK), v).sum().backward()
    assert v.grad.item() == 2.0


def test_compiled_with_a_tensor_value():
    def f(x, v):
        return x.masked_fill(x > 0, v) * 1
    x = tp.tensor([1, -1, 2], dtype=tp.int8)
    assert tp.compile(f)(x, tp.tensor(5)).tolist() == [5, -1, 5]


def test_negative_zero_into_bool():
    # -0.0 is False in torch; the kernels' -0.0 path (made as -(0.0) for CuPy's memset) took
    # NumPy's boolean negative, a TypeError that leaked to the user
    b = tp.tensor([True, False])
    m = tp.tensor([True, True])
    assert b.masked_fill(m, -0.0).tolist() == [False, False]
    assert b.clone().masked_fill_(m, -0.0).tolist() == [False, False]
    assert b.index_fill(0, tp.tensor([0]), -0.0).tolist() == [False, False]
    assert tp.where(m, b, False).tolist() == [True, False]
    x = tp.tensor([1, 2], dtype=tp.int8)
    assert x.masked_fill(m, -0.0).tolist() == [0, 0]
