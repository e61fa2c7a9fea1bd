"""Tagged mutable ops (``Tag.inplace``/``Tag.out``, PyTorch 2.13's tagged custom ops) through the
bridge: torch gets the schema with its ``Tensor(a!)`` return, the call returns torch's own
argument object (identity and version counter, as torch's in-place and out= ops return
``self``/``out``), the fake returns the fake argument, and torch's own opcheck and
``torch.compile(fullgraph=True)`` pass. Before: the bridged call returned a new torch tensor over
the same memory (another object, a version counter of its own)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402
from tensorplay import Tensor, library  # noqa: E402


@pytest.fixture(scope="module")
def ops():
    @library.custom_op("tagbridge::sin_", mutates_args={"x"}, tags=tp.Tag.inplace)
    def sin_(x: Tensor) -> Tensor:
        x.copy_(x.sin())
        return x

    @library.custom_op("tagbridge::sin_out", mutates_args={"out"}, tags=tp.Tag.out)
    def sin_out(x: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x.sin())
        return out

    @library.custom_op("tagbridge::sincos_out", mutates_args={"s", "c"}, tags=tp.Tag.out)
    def sincos_out(x: Tensor, *, s: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
        s.copy_(x.sin())
        c.copy_(x.cos())
        return s, c

    import tensorplay_torch
    tensorplay_torch.register(namespace="tagbridge")
    yield torch.ops.tagbridge
    tp.testing.drop_ops("tagbridge")


def test_schemas_keep_the_written_return(ops):
    assert str(ops.sin_.default._schema) == "tagbridge::sin_(Tensor(a!) x) -> Tensor(a!)"
    assert str(ops.sin_out.default._schema) == \
        "tagbridge::sin_out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"


def test_in_place_returns_its_argument(ops):
    x = torch.randn(4)
    want = x.sin()
    v = x._version
    assert ops.sin_(x) is x
    assert torch.allclose(x, want) and x._version > v


def test_out_returns_the_out_tensors(ops):
    x, o = torch.randn(4), torch.empty(4)
    assert ops.sin_out(x, out=o) is o and torch.allclose(o, x.sin())
    s, c = torch.empty(4), torch.empty(4)
    r = ops.sincos_out(x, s=s, c=c)
    assert r[0] is s and r[1] is c
    assert torch.allclose(s, x.sin()) and torch.allclose(c, x.cos())


@pytest.mark.parametrize("name", ["sin_", "sin_out", "sincos_out"])
def test_torchs_opcheck_passes(ops, name):
    op = getattr(ops, name).default
    x = torch.randn(3)
    kw = {"sin_": {}, "sin_out": {"out": torch.empty(3)},
          "sincos_out": {"s": torch.empty(3), "c": torch.empty(3)}}[name]
    torch.library.opcheck(op, (x,), kw)


def test_torch_compile_fullgraph(ops):
    f = torch.compile(lambda x: ops.sin_(x.clone()) * 2, fullgraph=True, backend="aot_eager")
    x = torch.randn(5)
    assert torch.allclose(f(x), x.sin() * 2)
    g = torch.compile(lambda x, o: ops.sin_out(x, out=o) + 1, fullgraph=True,
                      backend="aot_eager")
    o = torch.empty(5)
    assert torch.allclose(g(x, o), x.sin() + 1) and torch.allclose(o, x.sin())
