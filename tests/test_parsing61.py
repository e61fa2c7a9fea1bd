"""Argument parsing of the factories and of device strings, as torch's parser has it.

* A 0-dim tensor as ``full``/``full_like``/``new_full``'s fill value is read as its number and
  checked against the dtype as that number is ("value cannot be converted to type int8 without
  overflow"); ``fill_`` with a tensor keeps copying its value cast, unchecked (torch's
  ``fill_.Tensor``).
* ``full``/``new_full``/``empty_strided``/``randint`` take their size as one tuple or list of
  ints, never a bare int or a tensor; the ``*size`` factories take ints positionally but a
  sequence for the ``size=`` keyword.
* A device string is ``TYPE`` or ``TYPE:INDEX``: ``TYPE`` is spelled in lower case, ``INDEX`` a
  non-negative decimal without sign, spaces or leading zeros; nothing around it. A cpu or meta
  index names no other device (``cpu:1`` makes cpu tensors, as torch's); every place that reads a
  device (``tensorplay.device``, ``device=`` of the factories, ``Tensor.to``, schema defaults)
  parses it the same way.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import library
from tensorplay.errors import SchemaError


# -- 1: a 0-dim tensor fill value is checked as its number --------------------------------------

# (value, value's dtype, dtype it cannot fit): torch raises for each, as for the number itself
_OVERFLOWS = [
    (300, tp.int64, tp.int8), (256, tp.int64, tp.uint8), (-129, tp.int64, tp.int8),
    (2**40, tp.int64, tp.int32), (300.0, tp.float32, tp.int8), (1e10, tp.float64, tp.int32),
    (math.nan, tp.float32, tp.int8), (math.inf, tp.float32, tp.int16),
    (1e300, tp.float64, tp.float32), (1e300, tp.float64, tp.float16),
    (1e300, tp.float64, tp.bfloat16), (70000.0, tp.float32, tp.float16),
]


def _fills(value, dtype):
    """Every factory that fills with ``value`` as dtype ``dtype`` (explicit or inferred)."""
    return {
        "full": lambda: tp.full((2,), value, dtype=dtype),
        "full_like dtype=": lambda: tp.full_like(tp.zeros(2), value, dtype=dtype),
        "full_like inferred": lambda: tp.full_like(tp.zeros(2, dtype=dtype), value),
        "new_full dtype=": lambda: tp.zeros(2).new_full((2,), value, dtype=dtype),
        "new_full inferred": lambda: tp.zeros(2, dtype=dtype).new_full((2,), value),
    }


@pytest.mark.parametrize("number, vdtype, dtype", _OVERFLOWS)
def test_a_tensor_fill_value_out_of_range_raises_as_its_number(number, vdtype, dtype):
    t = tp.tensor(number, dtype=vdtype)
    for name, f in _fills(number, dtype).items():
        with pytest.raises(RuntimeError, match=f"{dtype.name} without overflow") as num:
            f()
        with pytest.raises(RuntimeError, match=f"{dtype.name} without overflow") as ten:
            _fills(t, dtype)[name]()
        assert str(ten.value).split(" (got")[0] == str(num.value).split(" (got")[0], name


# values every dtype here holds (or takes as torch does: -1 into uint8 is 255, 1.5 into int8
# truncates, inf into a float dtype is inf, any number into bool is its truth)
_FITS = [(-1, tp.int64, tp.uint8), (1.5, tp.float32, tp.int8), (math.inf, tp.float32, tp.float16),
         (300, tp.int64, tp.bool), (True, tp.bool, tp.int8), (100, tp.int8, tp.int16),
         (127, tp.int64, tp.int8), (65504.0, tp.float32, tp.float16)]


@pytest.mark.parametrize("number, vdtype, dtype", _FITS)
def test_a_tensor_fill_value_in_range_fills_as_its_number(number, vdtype, dtype):
    t = tp.tensor(number, dtype=vdtype)
    for name, f in _fills(t, dtype).items():
        got, want = f(), _fills(number, dtype)[name]()
        assert got.dtype == want.dtype == dtype, name
        assert got.tolist() == want.tolist(), name


def test_a_tensor_fill_value_keeps_its_inferred_dtype():
    assert tp.full((2,), tp.tensor(300)).dtype == tp.int64
    assert tp.full((2,), tp.tensor(300)).tolist() == tp.full((2,), 300).tolist()


def test_fill_with_a_tensor_copies_its_value_cast_unchecked():
    # torch's fill_.Tensor: the value is copied cast, as x.copy_(value) would (no range check)
    x = tp.zeros(2, dtype=tp.int8)
    x.fill_(tp.tensor(300))
    assert x.tolist() == [tp.tensor(300).to(tp.int8).item()] * 2
    h = tp.zeros(2, dtype=tp.float16).fill_(tp.tensor(1e300, dtype=tp.float64))
    assert h.tolist() == [tp.tensor(1e300, dtype=tp.float64).to(tp.float16).item()] * 2
    with pytest.raises(RuntimeError, match="int8 without overflow"):
        tp.zeros(2, dtype=tp.int8).fill_(300)


@pytest.mark.parametrize("value", [lambda: tp.tensor([3.0]), lambda: tp.tensor(3.0, requires_grad=True)])
def test_new_full_refuses_a_tensor_that_is_no_number(value):
    with pytest.raises(TypeError, match=r"new_full\(\): argument 'fill_value' .*must be Number, "
                                        r"not Tensor.*item\(\)"):
        tp.zeros(2).new_full((2,), value())


def test_a_captured_tensor_fill_value_still_fills_under_compile():
    f = tp.compile(lambda x, v: tp.full((2,), v) + x)
    assert f(tp.ones(2), tp.tensor(2.0)).tolist() == [3.0, 3.0]
    assert f(tp.ones(2), tp.tensor(5.0)).tolist() == [6.0, 6.0]


# -- 2: sizes --------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, arg, got", [
    (lambda: tp.full(3, 1.0), "size", "int"),
    (lambda: tp.full(size=3, fill_value=1.0), "size", "int"),
    (lambda: tp.full(np.int64(3), 1.0), "size", "int64"),
    (lambda: tp.full(tp.tensor(3), 1.0), "size", "Tensor"),
    (lambda: tp.full(3.0, 1.0), "size", "float"),
    (lambda: tp.full(None, 1.0), "size", "NoneType"),
    (lambda: tp.zeros(2).new_full(3, 1.0), "size", "int"),
    (lambda: tp.zeros(2).new_full(np.int64(3), 1.0), "size", "int64"),
    (lambda: tp.zeros(2).new_full(tp.tensor(3), 1.0), "size", "Tensor"),
    (lambda: tp.empty_strided(3, (1,)), "size", "int"),
    (lambda: tp.empty_strided((3,), 1), "stride", "int"),
    (lambda: tp.empty_strided(size=3, stride=(1,)), "size", "int"),
    (lambda: tp.randint(10, 3), "size", "int"),
    (lambda: tp.randint(10, size=3), "size", "int"),
    (lambda: tp.randint(0, 10, size=3), "size", "int"),
    (lambda: tp.zeros(size=3), "size", "int"),
    (lambda: tp.ones(size=3), "size", "int"),
    (lambda: tp.empty(size=3), "size", "int"),
    (lambda: tp.rand(size=3), "size", "int"),
    (lambda: tp.randn(size=3), "size", "int"),
    (lambda: tp.zeros(size=np.int64(3)), "size", "int64"),
    (lambda: tp.zeros(size=tp.tensor(3)), "size", "Tensor"),
    (lambda: tp.zeros(2).new_zeros(size=3), "size", "int"),
    (lambda: tp.zeros(2).new_ones(size=3), "size", "int"),
    (lambda: tp.zeros(2).new_empty(size=3), "size", "int"),
    (lambda: tp.zeros(tp.tensor([2, 3])), "size", "Tensor"),
    (lambda: tp.zeros(np.array([2, 3])), "size", "ndarray"),
    (lambda: tp.zeros(True), "size", "bool"),
    (lambda: tp.zeros(3.0), "size", "float"),
])
def test_a_size_that_is_no_sequence_is_refused_as_torch(call, arg, got):
    with pytest.raises(TypeError, match=rf"argument '{arg}'.* must be tuple of ints, not {got}\b"
                                        r".*pass .*\([13],\)") as e:
        call()
    assert "()" in str(e.value).split(":")[0]      # names the function that refused it


@pytest.mark.parametrize("method, name", [("view", "size"), ("reshape", "shape"),
                                          ("expand", "size"), ("permute", "dims"),
                                          ("repeat", "repeats"), ("tile", "dims"),
                                          ("flip", "dims"), ("sum_to_size", "size")])
def test_a_keyword_size_of_a_method_takes_a_sequence_only(method, name):
    x = tp.zeros(3)
    n = 0 if name == "dims" and method != "tile" else 3
    with pytest.raises(TypeError, match=rf"{method}\(\): argument '{name}' must be tuple of ints, "
                                        rf"not int; pass the tuple \({n},\)"):
        getattr(x, method)(**{name: n})
    want = getattr(x, method)(n)           # the positional int, as torch takes it
    assert tuple(getattr(x, method)(**{name: (n,)}).shape) == tuple(want.shape)


def test_sizes_torch_takes_still_work():
    x = tp.zeros(2)
    for r, shape in [(tp.zeros(3), (3,)), (tp.zeros(2, 3), (2, 3)), (tp.ones(3), (3,)),
                     (tp.empty(3), (3,)), (tp.rand(3), (3,)), (tp.randn(2, 3), (2, 3)),
                     (tp.zeros(np.int64(3)), (3,)), (tp.zeros(tp.tensor(3)), (3,)),
                     (tp.zeros(size=[3]), (3,)), (tp.zeros(size=(2, 3)), (2, 3)),
                     (tp.full([3], 1.0), (3,)), (tp.full((np.int64(3),), 1.0), (3,)),
                     (tp.full((tp.tensor(3),), 1.0), (3,)), (tp.full(x.shape, 1.0), (2,)),
                     (tp.full((), 1.0), ()), (tp.full(size=(3,), fill_value=1.0), (3,)),
                     (x.new_full([2, 3], 1.0), (2, 3)), (x.new_full((), 1.0), ()),
                     (x.new_zeros(3), (3,)), (x.new_ones(2, 3), (2, 3)), (x.new_empty(3), (3,)),
                     (x.new_zeros(size=(3,)), (3,)), (tp.randint(10, (3,)), (3,)),
                     (tp.randint(0, 10, (3,)), (3,)), (tp.randint(10, size=(3,)), (3,)),
                     (tp.empty_strided((3,), (1,)), (3,))]:
        assert tuple(r.shape) == shape


# -- 3: device strings -------------------------------------------------------------------------------

_BAD = ["CPU", "Cpu", "CUDA", "Meta", " cpu", "cpu ", "cpu\n", "cpu:-1", "cpu:x", "cuda:x",
        "cuda:-1", "cpu:01", "cuda:00", "cpu:+1", "cpu:", "cuda:1:2", "", "cpu: 1", "cpu:\uff11",
        "CUDA:0"]


def _device_readers(s):
    x = tp.zeros(2)
    return {
        "device": lambda: tp.device(s), "zeros": lambda: tp.zeros(2, device=s),
        "empty": lambda: tp.empty(2, device=s), "full": lambda: tp.full((2,), 1.0, device=s),
        "rand": lambda: tp.rand(2, device=s), "arange": lambda: tp.arange(2, device=s),
        "zeros_like": lambda: tp.zeros_like(x, device=s),
        "full_like": lambda: tp.full_like(x, 1.0, device=s),
        "new_zeros": lambda: x.new_zeros(2, device=s),
        "new_full": lambda: x.new_full((2,), 1.0, device=s),
        "tensor": lambda: tp.tensor([1.0], device=s), "as_tensor": lambda: tp.as_tensor([1.0], device=s),
        "to": lambda: x.to(s), "to device=": lambda: x.to(device=s),
        "to dtype": lambda: x.to(s, tp.float64),
    }


@pytest.mark.parametrize("s", _BAD)
def test_a_malformed_device_string_is_refused_everywhere(s):
    for name, f in _device_readers(s).items():
        for _ in range(2):         # the second time too (nothing cached lets it through)
            with pytest.raises(RuntimeError) as e:
                f()
            assert isinstance(e.value, ValueError), name    # the type earlier releases raised
            assert repr(s) in str(e.value), (name, str(e.value))


@pytest.mark.parametrize("s, fix", [("CPU", "'cpu'"), ("Cuda", "'cuda'"), ("CUDA:0", "'cuda:0'"),
                                    (" cpu", "'cpu'"), ("cpu:01", "'cpu:1'"),
                                    ("cpu:-1", "non-negative")])
def test_the_device_error_names_the_fix(s, fix):
    with pytest.raises(RuntimeError, match="device string") as e:
        tp.zeros(2, device=s)
    assert fix in str(e.value)


@pytest.mark.parametrize("s", ["CPU", " cpu", "cpu:01"])
def test_the_check_command_refuses_the_device_strings_tensorplay_device_refuses(s, capsys):
    from tensorplay.cli import main
    assert main(["check", "-q", "--device", s, "example::gelu"]) == 2
    err = capsys.readouterr().err
    assert f"invalid device string {s!r}" in err, err


def test_a_schema_default_device_is_parsed_the_same_way():
    with library.Library("parse61", "DEF") as lib:
        lib.define("f(Tensor x, Device d='cpu:1') -> Tensor")
        with pytest.raises(SchemaError, match="CPU"):
            lib.define("g(Tensor x, Device d='CPU') -> Tensor")


@pytest.mark.parametrize("s", ["cpu:1", "cpu:7", "meta:1"])
def test_a_cpu_or_meta_index_makes_tensors_on_that_type(s):
    d = tp.device(s)
    assert d.index == int(s.partition(":")[2]) and str(d) == s and d != tp.device(d.type)
    home = tp.device(d.type)
    for name, f in _device_readers(s).items():
        if name == "device":
            continue
        r = f()
        assert r.device == home, name
    assert tp.zeros(2, device=tp.device(d.type, d.index)).device == home


def test_good_device_strings_parse():
    assert tp.device("cpu").index is None and tp.device("cpu:0").index == 0
    assert tp.device("cuda:0") == tp.device("cuda", 0)
    assert tp.device("cuda:10").index == 10
    assert tp.device("cpu", 1) is tp.device("cpu:1")
    assert tp.device(type="cpu", index=1) is tp.device("cpu:1")
    assert tp.device(tp.device("cpu:1")) is tp.device("cpu:1")


@pytest.mark.parametrize("index", [True, 1.0, "1"])
def test_a_device_index_must_be_an_int(index):
    tp.device("cuda", 1)            # seen first: an equal key must not find it
    tp.device(1)
    with pytest.raises(TypeError, match="index"):
        tp.device("cuda", index)


def test_a_bool_is_no_device():
    tp.device(1)
    with pytest.raises(TypeError):
        tp.device(True)


def test_a_negative_index_is_refused():
    for f in (lambda: tp.device("cpu", -1), lambda: tp.device(-1),
              lambda: tp.zeros(2, device=-1)):
        with pytest.raises(RuntimeError, match="non-negative"):
            f()


def test_the_index_is_given_once():
    with pytest.raises(RuntimeError, match="index"):
        tp.device("cpu:0", 0)
