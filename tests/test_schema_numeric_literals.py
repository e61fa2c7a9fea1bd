"""Every number the schema parser reads (issue 28, "Bad input"): a list size, an int, float or
list default, with absurd lengths and magnitudes, parses or raises ``SchemaError`` naming the
position -- never a bare ``ValueError``/``OverflowError`` from ``int()``/``float()`` (Python's
4300-digit limit on int strings, float overflow)."""

from __future__ import annotations

import pytest

from tensorplay.errors import SchemaError
from tensorplay.library import FunctionSchema

BIG = "9" * 5000


@pytest.mark.parametrize("text", [
    f"(int[{BIG}] i) -> ()",                      # list size over the int-string limit
    "(int[99999999999999999999] i) -> ()",       # list size no list can have
    f"(int i={BIG}) -> ()",                       # int default over the limit
    f"(int i=-{BIG}) -> ()",
    f"(int[2] i=[1, {BIG}]) -> ()",               # inside a list default
    f"(float x={BIG}) -> ()",                     # an int literal as a float default
    f"(float[] x=[{BIG}]) -> ()",
    f"(Scalar s={BIG}) -> ()",
    f"(int? i={BIG}) -> ()",
])
def test_huge_numbers_are_schema_errors(text):
    with pytest.raises(Exception) as info:
        FunctionSchema.parse(text)
    assert type(info.value) is SchemaError, (type(info.value), str(info.value)[:200])
    assert len(str(info.value)) < 600, "the message must not echo thousands of digits"


@pytest.mark.parametrize("text,expect", [
    ("(int[3] i) -> ()", "int[3] i"),
    ("(int[0] i) -> ()", "int[0] i"),
    ("(float x=1e308) -> ()", "float x=1e+308"),
    ("(float x=1e999) -> ()", "float x=inf"),
    (f"(float x=1e{BIG}) -> ()", "float x=inf"),   # a float overflows to inf, as in Python
    ("(int[2147483647] i) -> ()", "int[2147483647] i"),
])
def test_ordinary_numbers_still_parse(text, expect):
    assert expect in str(FunctionSchema.parse(text))
