"""A custom op whose device-agnostic body reads data (NumPy) and has no fake: called on fake or
meta tensors outside a compile capture, the error names ``register_fake`` (as torch's "no fake
impl registered"), chained to the body's own error; errors of the body that are not about fake
tensors, and composite bodies written with tensorplay ops, are unchanged (review 41, M1)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import Tensor, library
from tensorplay.errors import DispatchError
from tensorplay.testing import drop_ops


@pytest.fixture
def ns():
    yield "fakebody41"
    drop_ops("fakebody41")


def _numpy_sin(ns):
    @library.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: Tensor) -> Tensor:
        return tp.from_numpy(np.sin(x.detach().numpy()))
    return numpy_sin


def test_fake_tensor_mode_names_register_fake(ns):
    op = _numpy_sin(ns)
    with pytest.raises(DispatchError, match="register_fake") as info:
        with tp.fake.FakeTensorMode():
            op(tp.empty(3))
    assert f"{ns}::numpy_sin" in str(info.value)
    assert info.value.__cause__ is not None           # the body's own error, chained


def test_meta_device_names_register_fake(ns):
    op = _numpy_sin(ns)
    with pytest.raises(DispatchError, match="register_fake"):
        op(tp.empty(3, device="meta"))


def test_a_body_refusing_its_inputs_keeps_its_error(ns):
    @library.custom_op(f"{ns}::picky", mutates_args=())
    def picky(x: Tensor, n: int) -> Tensor:
        if n < 0:
            raise ValueError("picky: n must be >= 0")
        return x * n

    with tp.fake.FakeTensorMode():
        with pytest.raises(ValueError, match="n must be >= 0"):
            picky(tp.empty(3), -1)
        assert picky(tp.empty(3), 2).shape == (3,)     # a composite body is its own fake


def test_eager_and_compile_are_unchanged(ns):
    op = _numpy_sin(ns)
    x = tp.randn(4)
    assert tp.allclose(op(x), x.sin())
    from tensorplay.errors import CompileError
    with pytest.raises(CompileError, match="register_fake"):
        tp.compile(lambda t: op(t) * 2, fullgraph=True)(x)


def test_ops_listing_shows_the_trivial_fake_of_a_mutating_op(ns, capsys):
    """``tensorplay ops`` reports the fake an op really has: an op that returns nothing and
    mutates declared arguments has torch's trivial fake ("yes (trivial)", JSON ``"fake": true``,
    ``"fake_source": "trivial"``); one with a NumPy body and no fake has none."""
    import json

    from tensorplay.cli import main

    @library.custom_op(f"{ns}::numpy_sin_out", mutates_args={"out"})
    def numpy_sin_out(x: Tensor, out: Tensor) -> None:
        np.sin(x.detach().numpy(), out=out.numpy())

    _numpy_sin(ns)
    x = tp.randn(3)
    assert tp.testing.opcheck(numpy_sin_out, (x, tp.empty(3))) == {}
    capsys.readouterr()
    assert main(["ops", "-n", ns, "--json", "-"]) == 0
    info = {i["name"]: i for i in json.loads(capsys.readouterr().out)}
    assert info[f"{ns}::numpy_sin_out"]["fake"] is True
    assert info[f"{ns}::numpy_sin_out"]["fake_source"] == "trivial"
    assert info[f"{ns}::numpy_sin"]["fake"] is False
    assert main(["ops", "-n", ns]) == 0
    assert "yes (trivial)" in capsys.readouterr().out
