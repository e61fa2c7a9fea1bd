"""Factories check their arguments before any kernel runs, as torch does (issue 28:
``tp.linspace(0, 1, -1)`` returned an empty tensor). Each bad call raises ``RuntimeError`` through
the public factory, through the op itself (``tp.ops.tp.*``), under ``FakeTensorMode``, on the
``meta`` device and inside ``tensorplay.compile``."""

from __future__ import annotations

import math

import pytest

import tensorplay as tp
from tensorplay.fake import FakeTensorMode

BAD = {
    "linspace(0, 1, -1)": (lambda d: tp.linspace(0, 1, -1, device=d), "number of steps"),
    "linspace(0.5, 2, -3)": (lambda d: tp.linspace(0.5, 2.0, -3, device=d), "number of steps"),
    "arange(0, 10, 0)": (lambda d: tp.arange(0, 10, 0, device=d), "step must be nonzero"),
    "arange(0.0, 1.0, 0.0)": (lambda d: tp.arange(0.0, 1.0, 0.0, device=d), "nonzero"),
    "arange(10, 0, 1)": (lambda d: tp.arange(10, 0, 1, device=d), "inconsistent with step sign"),
    "arange(0, 10, -1)": (lambda d: tp.arange(0, 10, -1, device=d), "inconsistent with step sign"),
    "arange(nan)": (lambda d: tp.arange(math.nan, device=d), "unsupported range"),
    "arange(0, inf)": (lambda d: tp.arange(0, math.inf, device=d), "unsupported range"),
    "eye(-1)": (lambda d: tp.eye(-1, device=d), "non-negative"),
    "eye(2, -1)": (lambda d: tp.eye(2, -1, device=d), "non-negative"),
    "randint(5, 0, (2,))": (lambda d: tp.randint(5, 0, (2,), device=d), "less than"),
    "randint(0, 5, (-1,))": (lambda d: tp.randint(0, 5, (-1,), device=d), "negative"),
    "empty(-1)": (lambda d: tp.empty(-1, device=d), "negative"),
    "zeros(2, -3)": (lambda d: tp.zeros(2, -3, device=d), "negative"),
    "ones((-1,))": (lambda d: tp.ones((-1,), device=d), "negative"),
    "full((-1,), 1.0)": (lambda d: tp.full((-1,), 1.0, device=d), "negative"),
    "rand(-2)": (lambda d: tp.rand(-2, device=d), "negative"),
    "randn(3, -2)": (lambda d: tp.randn(3, -2, device=d), "negative"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("path", ["cpu", "meta", "fake", "compiled"])
def test_bad_factory_arguments_raise_runtime_error(case, path):
    fn, msg = BAD[case]
    with pytest.raises(RuntimeError, match=msg):
        if path in ("cpu", "meta"):
            fn(path)
        elif path == "fake":
            with FakeTensorMode():
                fn("cpu")
        else:
            tp.compile(lambda x: fn("cpu") + x)(tp.ones(()))


@pytest.mark.parametrize("call", [
    lambda: tp.ops.tp.linspace(0, 1, -1, dtype=tp.float32, device=tp.device("cpu")),
    lambda: tp.ops.tp.arange(10, 0, 1, dtype=tp.int64, device=tp.device("cpu")),
    lambda: tp.ops.tp.eye(-1, 2, dtype=tp.float32, device=tp.device("cpu")),
])
def test_the_ops_themselves_refuse(call):
    with pytest.raises(RuntimeError):
        call()


def test_negative_size_is_also_a_value_error():
    with pytest.raises(ValueError):     # what earlier releases raised: still caught
        tp.empty(-1)


def test_good_calls_unchanged():
    assert tp.linspace(0, 1, 0).shape == (0,)
    assert tp.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
    assert tp.arange(0, 0).shape == (0,) and tp.arange(3, 3, -1).shape == (0,)
    assert tp.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert tp.arange(0.0, 1.0, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert tp.eye(0).shape == (0, 0) and tp.empty(0).shape == (0,)
