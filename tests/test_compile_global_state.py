"""``tensorplay.compile`` guards the global state its graphs bake in (as torch.compile guards
grad mode and the default dtype): a changed default dtype captures again."""

import pytest

import tensorplay as tp


@pytest.fixture(autouse=True)
def _restore_default_dtype():
    yield
    tp.set_default_dtype(tp.float32)


def test_default_dtype_change_recaptures():
    def f(x):
        return tp.zeros(x.shape) + tp.full((2,), 1.5)
    cf = tp.compile(f)
    x = tp.ones(2)
    assert cf(x).dtype is tp.float32
    tp.set_default_dtype(tp.float64)
    out = cf(x)
    assert out.dtype is f(x).dtype is tp.float64
    assert out.tolist() == [1.5, 1.5]
    assert cf.captures == 2
    tp.set_default_dtype(tp.float32)
    assert cf(x).dtype is tp.float32
    assert cf.captures == 2          # the float32 graph is still cached


@pytest.mark.parametrize("make", [lambda: tp.rand(2), lambda: tp.arange(2.0),
                                  lambda: tp.tensor([1.5, 2.5]), lambda: tp.empty(2).fill_(1.0)])
def test_default_dtype_guard_covers_other_factories(make):
    cf = tp.compile(lambda x: make() + x)
    x = tp.ones(2, dtype=tp.float16)
    first = cf(x).dtype
    tp.set_default_dtype(tp.float64)
    assert cf(x).dtype is (make() + x).dtype is tp.float64
    assert first is tp.float32
