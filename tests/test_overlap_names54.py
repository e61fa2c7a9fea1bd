"""Writing an expanded tensor (several elements sharing one memory location) is refused with
torch's message, naming what the caller called: the in-place method or op, never the internal
``copy_`` an in-place method is made of, and a built-in op without its ``tp::`` namespace."""

import re

import pytest

import tensorplay as tp

_TORCH = ("unsupported operation: more than one element of the written-to tensor refers to a "
          "single memory location. Please clone() the tensor before performing the operation.")


def _expanded():
    base = tp.zeros(1)
    return base, base.expand(3)


CALLS = [
    ("add_", lambda e: e.add_(1.0)),
    ("copy_", lambda e: e.copy_(tp.ones(3))),
    ("relu_", lambda e: e.relu_()),
    ("clamp_", lambda e: e.clamp_(0.0, 1.0)),
    ("clamp_min_", lambda e: e.clamp_min_(0.5)),
    ("logical_not_", lambda e: e.logical_not_()),
    ("index_add_", lambda e: e.index_add_(0, tp.tensor([0]), tp.ones(1))),
    ("index_copy_", lambda e: e.index_copy_(0, tp.tensor([0]), tp.ones(1))),
    ("bernoulli_", lambda e: e.bernoulli_(0.5)),
    ("exponential_", lambda e: e.exponential_()),
    ("uniform_", lambda e: e.uniform_()),
    ("normal_", lambda e: e.normal_()),
    ("random_", lambda e: e.random_(0, 5)),
    ("__setitem__", lambda e: e.__setitem__(slice(None), tp.ones(3))),
    ("__setitem__", lambda e: e.__setitem__(slice(0, 2), 1.0)),
]


@pytest.mark.parametrize("name, write", CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CALLS)])
def test_expanded_write_names_the_call_with_torchs_words(name, write):
    base, e = _expanded()
    with pytest.raises(RuntimeError) as info:
        write(e)
    msg = str(info.value)
    # (the written region: all of it, or the slice's two elements)
    assert re.match(rf"{re.escape(name)}: argument 'self' \(shape \([23],\), stride \(0,\)\): ",
                    msg), msg
    assert msg.endswith(_TORCH), msg
    assert "tp::" not in msg
    assert base.tolist() == [0.0] and base._version == 0      # nothing written


def test_int_expanded_bitwise_not_names_bitwise_not_():
    e = tp.zeros(1, dtype=tp.int64).expand(2, 3)
    with pytest.raises(RuntimeError, match=re.escape("bitwise_not_: argument 'self' (shape (2, 3), "
                                                     "stride (0, 0))")):
        e.bitwise_not_()


def test_custom_op_keeps_its_qualified_name():
    @tp.library.custom_op("ov54::bump_", mutates_args=("x",))
    def bump_(x: tp.Tensor) -> None:
        x.add_(1.0)

    with pytest.raises(RuntimeError, match=r"^ov54::bump_: argument 'x' \(shape \(4, 2\), "
                                           r"stride \(0, 1\)\): unsupported operation"):
        bump_(tp.zeros(2).expand(4, 2))


def test_an_overlap_inside_a_custom_op_body_is_not_renamed():
    # the error from the body's own write names that write (add_), not the caller's method
    @tp.library.custom_op("ov54::inner", mutates_args=())
    def inner(x: tp.Tensor) -> tp.Tensor:
        y = tp.zeros(1).expand(3)
        y.add_(x)
        return y.clone()

    with pytest.raises(RuntimeError, match=r"^add_: argument 'self'"):
        inner(tp.ones(3))
