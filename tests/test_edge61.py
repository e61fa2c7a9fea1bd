"""Session 61 edge cases a fresh user found, each against torch 2.13 (cpu); torch's answers are
written out in the comments beside each case.

1. A fractional fill value just outside an integer dtype's range is refused (torch range-checks
   the unrounded value: ``full((2,), 127.5, dtype=int8)`` raises "value cannot be converted to
   type int8_t without overflow"), in ``full``/``full_like``/``new_full``/``fill_``/
   ``masked_fill``/``index_fill``; a value inside (127.0, 0.5 into uint8, -0.0 into uint8) still
   truncates as before.
2. ``x.to('cpu:0')`` / ``x.to(device('cpu', 0))`` is a copy (torch compares the indexed device
   with the tensor's unindexed ``cpu`` as different); ``x.to('cpu')`` is still ``x``.
"""
import pytest

import tensorplay as tp

OVERFLOW = "without overflow"

# (value, dtype name): torch 2.13 raises RuntimeError "value cannot be converted to type ...
# without overflow" for every one of these, from full, full with a 0-dim tensor fill,
# full_like, new_full, fill_, masked_fill and index_fill
REFUSED = [
    (127.5, "int8"), (127.99999, "int8"), (-128.5, "int8"), (32767.5, "int16"),
    (-0.5, "uint8"), (-0.9, "uint8"), (255.9, "uint8"),
    (2147483647.5, "int32"), (-2147483648.5, "int32"),
]

# (value, dtype name, element torch 2.13 writes): in range, truncated toward zero
ACCEPTED = [
    (127.0, "int8", 127), (-128.0, "int8", -128), (-0.0, "uint8", 0), (0.5, "uint8", 0),
    (255.0, "uint8", 255), (2147483647.0, "int32", 2147483647), (-2147483648.0, "int32",
                                                                  -2147483648),
    (127.5, "bool", True), (-1.5, "bool", True),
]


def _fills(value, dt):
    m = tp.tensor([True, False])
    return {
        "full": lambda: tp.full((2,), value, dtype=dt),
        "full_like": lambda: tp.full_like(tp.zeros(2, dtype=dt), value),
        "new_full": lambda: tp.zeros(2, dtype=dt).new_full((2,), value),
        "fill_": lambda: tp.zeros(2, dtype=dt).fill_(value),
        "masked_fill": lambda: tp.zeros(2, dtype=dt).masked_fill(m, value),
        "masked_fill_": lambda: tp.zeros(2, dtype=dt).masked_fill_(m, value),
        "index_fill": lambda: tp.zeros(2, dtype=dt).index_fill(0, tp.tensor([0]), value),
    }


@pytest.mark.parametrize("value,name", REFUSED)
def test_fractional_fill_outside_range_is_refused(value, name):
    dt = getattr(tp, name)
    for api, f in _fills(value, dt).items():
        with pytest.raises(RuntimeError, match=OVERFLOW):
            f()


@pytest.mark.parametrize("value,name,want", ACCEPTED)
def test_fill_inside_range_still_truncates(value, name, want):
    dt = getattr(tp, name)
    for api, f in _fills(value, dt).items():
        got = f().tolist()
        if api.startswith(("masked", "index")):
            assert got[0] == want and got[1] in (0, False), api
        else:
            assert got == [want, want], api


def test_full_with_a_tensor_fill_checks_the_unrounded_value():
    # torch: full((2,), tensor(127.5), dtype=int8) raises (the 0-dim tensor is read as its
    # number, then checked); tensor(-0.5) into uint8 likewise
    with pytest.raises(RuntimeError, match=OVERFLOW):
        tp.full((2,), tp.tensor(127.5), dtype=tp.int8)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        tp.full((2,), tp.tensor(-0.5), dtype=tp.uint8)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        tp.full((2,), tp.tensor(255.9), dtype=tp.uint8)
    # torch: tensor(127.0) into int8 gives [127, 127]
    assert tp.full((2,), tp.tensor(127.0), dtype=tp.int8).tolist() == [127, 127]


def test_fill_with_a_tensor_value_casts_unchecked_as_torch():
    # torch: zeros(2, dtype=int8).fill_(tensor(127.5)) gives [127, 127] (a tensor value is cast,
    # not range-checked), uint8 with tensor(-0.5) gives [0, 0]
    assert tp.zeros(2, dtype=tp.int8).fill_(tp.tensor(127.5)).tolist() == [127, 127]
    assert tp.zeros(2, dtype=tp.uint8).fill_(tp.tensor(-0.5)).tolist() == [0, 0]


def test_uint32_fractional_fill_outside_range_is_refused():
    # torch 2.13: full((2,), 4294967295.5, dtype=uint32) and zeros(2, dtype=uint32)
    # .fill_(4294967295.5) raise "... without overflow"; 4294967295.0 is accepted
    with pytest.raises(RuntimeError, match=OVERFLOW):
        tp.full((2,), 4294967295.5, dtype=tp.uint32)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        tp.zeros(2, dtype=tp.uint32).fill_(4294967295.5)
    assert tp.full((2,), 4294967295.0, dtype=tp.uint32).tolist() == [4294967295] * 2


def test_negative_int_into_uint8_still_wraps():
    # torch: full((2,), -1, dtype=uint8) gives [255, 255]; -1.0 (a float) raises
    assert tp.full((2,), -1, dtype=tp.uint8).tolist() == [255, 255]
    with pytest.raises(RuntimeError, match=OVERFLOW):
        tp.full((2,), -1.0, dtype=tp.uint8)


# -- Tensor.to with an indexed cpu device ------------------------------------------------------

def test_to_indexed_cpu_is_a_copy():
    # torch 2.13: x.to('cpu:0') is x -> False, x.to('cpu:1') is x -> False,
    # x.to(device('cpu', 0)) is x -> False, x.to(device='cpu:0') is x -> False (also with
    # copy=False and with dtype=x.dtype); the result is on cpu and does not share x's storage
    x = tp.ones(2)
    for dev in ("cpu:0", "cpu:1", tp.device("cpu", 0), tp.device("cpu:0")):
        for kw in ({}, {"copy": False}, {"dtype": tp.float32}):
            y = x.to(dev, **kw)
            assert y is not x, (dev, kw)
            assert y.device == tp.device("cpu") and y.tolist() == [1.0, 1.0]
        y = x.to(device=dev)
        assert y is not x, dev
    y = x.to("cpu:0")
    y[0] = 5.0
    assert x.tolist() == [1.0, 1.0]


def test_to_unindexed_cpu_is_self():
    # torch 2.13: x.to('cpu') is x -> True, x.to(device('cpu')) is x -> True,
    # x.to(device='cpu') is x -> True, x.to(other_cpu_tensor) is x -> True, x.cpu() is x -> True
    x = tp.ones(2)
    assert x.to("cpu") is x
    assert x.to(tp.device("cpu")) is x
    assert x.to(device="cpu") is x
    assert x.to("cpu", copy=False) is x
    assert x.to(tp.zeros(1)) is x
    assert x.cpu() is x
    assert x.to("cpu", copy=True) is not x


def test_to_indexed_cpu_keeps_layout_and_grad():
    # torch 2.13: ones(3, 4).t().to('cpu:0').stride() == (1, 4); a copy of a tensor that
    # requires grad is part of the graph (grad flows back as ones)
    w = tp.ones(3, 4).t()
    assert w.to("cpu:0").stride() == (1, 4)
    a = tp.ones(2, requires_grad=True)
    b = a.to("cpu:0")
    assert b is not a and b.requires_grad
    b.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]
