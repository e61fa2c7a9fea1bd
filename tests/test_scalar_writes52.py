"""A Python number written through indexing or ``masked_fill_`` follows ``fill_``'s rule, as
torch's (checked against torch 2.13, cpu): a negative int into uint8 wraps (two's complement),
a value the integer dtype cannot hold is torch's RuntimeError ("value cannot be converted to type
uint8 without overflow"), a float into an integer dtype truncates. Before (session 52's fresh
user): NumPy's OverflowError from inside the kernel for ``x[0] = -1`` into uint8."""

import pytest

import tensorplay as tp

WRITES = {
    "x[0] = v": lambda x, v: x.__setitem__(0, v),
    "x[:] = v": lambda x, v: x.__setitem__(slice(None), v),
    "x[idx] = v": lambda x, v: x.__setitem__(tp.tensor([0]), v),
    "x[m] = v": lambda x, v: x.__setitem__(x == 0, v),
    "x[i, j] = v": lambda x, v: x.view(3, 1).__setitem__((tp.tensor([0]), tp.tensor([0])), v),
    "masked_fill_": lambda x, v: x.masked_fill_(x == 0, v),
}
# torch's results for zeros(3) of the dtype
WANT = {"x[0] = v": [1, 0, 0], "x[:] = v": [1, 1, 1], "x[idx] = v": [1, 0, 0],
        "x[m] = v": [1, 1, 1], "x[i, j] = v": [1, 0, 0], "masked_fill_": [1, 1, 1]}


@pytest.mark.parametrize("how", list(WRITES))
@pytest.mark.parametrize("dtype,value,stored", [("uint8", -1, 255), ("int8", -1, -1),
                                                ("uint8", 255, 255), ("int16", -32768, -32768),
                                                ("uint8", 1.5, 1)])
def test_a_number_written_into_integers_is_wrapped_or_truncated_as_torch(how, dtype, value,
                                                                         stored):
    x = tp.zeros(3, dtype=getattr(tp, dtype))
    WRITES[how](x, value)
    assert x.tolist() == [stored if w else 0 for w in WANT[how]]


@pytest.mark.parametrize("how", list(WRITES))
@pytest.mark.parametrize("dtype,value", [("uint8", 300), ("int8", 300), ("int8", -129),
                                         ("uint8", float("nan")), ("int32", 2**40)])
def test_a_number_the_dtype_cannot_hold_is_refused_as_torch(how, dtype, value):
    x = tp.zeros(3, dtype=getattr(tp, dtype))
    with pytest.raises(RuntimeError, match="cannot be converted to type"):
        WRITES[how](x, value)
    assert x.tolist() == [0, 0, 0]
