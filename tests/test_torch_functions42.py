"""torch functions whose Tensor methods existed but whose ``tensorplay.<name>`` function did not
(code translated from torch by names only, ``torch.square(x)`` -> ``tp.square(x)``, raised
AttributeError). Each function gives what torch's function gives, and what the method gives."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp


def _x():
    return tp.tensor([[-1.5, 0.0, 2.0], [3.0, -0.25, 4.0]])


def test_sign():
    assert tp.sign(_x()).tolist() == [[-1.0, 0.0, 1.0], [1.0, -1.0, 1.0]]
    assert tp.sign(tp.tensor([-3, 0, 5])).tolist() == [-1, 0, 1]
    assert tp.sign(tp.tensor([-3, 0, 5])).dtype == tp.int64


def test_square_and_its_gradient():
    x = _x().requires_grad_()
    y = tp.square(x)
    assert y.tolist() == (x.detach() * x.detach()).tolist()
    y.sum().backward()
    assert x.grad.tolist() == (2 * x.detach()).tolist()
    assert tp.square(tp.tensor([3], dtype=tp.int32)).dtype == tp.int32   # as torch: keeps int


def test_reciprocal():
    assert tp.reciprocal(tp.tensor([2.0, -4.0])).tolist() == [0.5, -0.25]
    r = tp.reciprocal(tp.tensor([2, 4]))                 # integer input: the default float dtype
    assert r.dtype == tp.float32 and r.tolist() == [0.5, 0.25]


def test_t():
    x = _x()
    assert tp.t(x).shape == (3, 2) and tp.t(x).tolist() == np.asarray(x.tolist()).T.tolist()
    v = tp.tensor([1.0, 2.0])
    assert tp.t(v).tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="<= 2"):
        tp.t(tp.zeros(2, 2, 2))


def test_masked_fill_is_out_of_place():
    x = _x()
    m = x < 0
    y = tp.masked_fill(x, m, 9.0)
    assert y.tolist() == [[9.0, 0.0, 2.0], [3.0, 9.0, 4.0]]
    assert x.tolist() == _x().tolist()


def test_index_add():
    x = tp.zeros(3, 2)
    y = tp.index_add(x, 0, tp.tensor([0, 2, 0]), tp.ones(3, 2), alpha=2)
    assert y.tolist() == [[4.0, 4.0], [0.0, 0.0], [2.0, 2.0]]
    assert x.tolist() == [[0.0, 0.0]] * 3


def test_numel_is_floating_point_detach_swapaxes_unflatten():
    x = _x().requires_grad_()
    assert tp.numel(x) == 6
    assert tp.is_floating_point(x) and not tp.is_floating_point(tp.tensor([1]))
    d = tp.detach(x)
    assert not d.requires_grad and d.tolist() == x.tolist()
    assert tp.swapaxes(x, 0, 1).shape == (3, 2)
    assert tp.unflatten(tp.arange(6), 0, (2, 3)).tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("name", ["sign", "square", "reciprocal", "t", "masked_fill",
                                  "index_add", "numel", "is_floating_point", "detach",
                                  "swapaxes", "unflatten"])
def test_exported_and_documented(name):
    assert name in tp.__all__
    assert (getattr(tp, name).__doc__ or "").strip()


def test_sign_of_bool_is_the_input_as_torch():
    """torch.sign of a bool tensor returns it (a copy); NumPy's sign has no bool loop and its
    error leaked out."""
    b = tp.tensor([True, False])
    for got in (tp.sign(b), b.sign(), tp.compile(lambda v: tp.sign(v))(b)):
        assert got.dtype == tp.bool and got.tolist() == [True, False]
    c = tp.tensor([True, False])
    assert c.sign_() is c and c.tolist() == [True, False]
