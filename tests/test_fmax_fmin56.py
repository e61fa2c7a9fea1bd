"""torch.fmax / torch.fmin (a fresh user's missing APIs, session 56): NaN is ignored where the
other operand is a number (C's fmax), gradients as torch 2.13's derivatives.yaml (the operand
picked gets the gradient; a tie and an other that is NaN go to ``input``). Expected values are
torch 2.13's (cpu), written out: these tests run with torch blocked."""
import math

import pytest

import tensorplay as tp

NAN = float("nan")


def _same(t, expected):
    got = t.tolist()
    assert len(got) == len(expected), got
    for g, e in zip(got, expected):
        assert (math.isnan(g) and math.isnan(e)) or g == e, (got, expected)


@pytest.mark.parametrize("name, values, ga, gb", [
    ("fmax", [2.0, 1.0, 3.0, NAN, 2.0], [0.0, 0.0, 3.0, 4.0, 5.0], [1.0, 2.0, 0.0, 0.0, 0.0]),
    ("fmin", [1.0, 1.0, 3.0, NAN, 2.0], [1.0, 0.0, 3.0, 4.0, 5.0], [0.0, 2.0, 0.0, 0.0, 0.0]),
])
def test_values_and_gradients_are_torchs(name, values, ga, gb):
    a = tp.tensor([1.0, NAN, 3.0, NAN, 2.0], requires_grad=True)
    b = tp.tensor([2.0, 1.0, NAN, NAN, 2.0], requires_grad=True)
    r = getattr(tp, name)(a, b)
    _same(r, values)
    r.backward(tp.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    _same(a.grad, ga)
    _same(b.grad, gb)
    _same(getattr(a.detach(), name)(b.detach()), values)      # the method


def test_dtypes_broadcasting_and_refusals_follow_torch():
    assert tp.fmax(tp.tensor([1, 5]), tp.tensor([3, 2])).tolist() == [3, 5]
    r = tp.fmax(tp.tensor([1, 5]), tp.tensor([3.0, 2.0]))
    assert r.dtype == tp.float32 and r.tolist() == [3.0, 5.0]
    assert tp.fmax(tp.tensor([True]), tp.tensor([False])).tolist() == [True]
    assert tp.fmax(tp.tensor([1.0], dtype=tp.float16), tp.tensor([2.0])).dtype == tp.float32
    assert tp.fmin(tp.ones(2, 1), tp.zeros(3)).shape == (2, 3)
    assert tp.fmax(tp.tensor([1.0]), tp.tensor(2.0)).tolist() == [2.0]
    bf = tp.fmax(tp.tensor([1.5, NAN], dtype=tp.bfloat16), tp.tensor([NAN, 2.5], dtype=tp.bfloat16))
    assert bf.dtype == tp.bfloat16 and bf.float().tolist() == [1.5, 2.5]
    with pytest.raises(TypeError):
        tp.fmax(tp.tensor([1.0]), 2.0)          # torch: "argument 'other' must be Tensor"
    out = tp.empty(2)
    assert tp.fmin(tp.tensor([1.0, NAN]), tp.tensor([NAN, 0.5]), out=out) is out
    assert out.tolist() == [1.0, 0.5]


def test_gradcheck_and_opcheck():
    a = tp.tensor([[0.3, -1.2, 2.0], [1.0, 0.5, -0.7]], dtype=tp.float64, requires_grad=True)
    b = tp.tensor([0.1, 0.4, -2.0], dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(tp.fmax, (a, b))
    assert tp.autograd.gradcheck(tp.fmin, (a, b))
    tp.library.opcheck("tp::fmax", (a, b))
    tp.library.opcheck("tp::fmin", (a, b))
