"""A tensor's metadata is read-only from the outside, as before the ``Tensor`` split and as torch's.

``shape``, ``dtype`` and ``device`` describe the storage view; assigning one would make the tensor
lie about its array (ops would read past it or reinterpret its bytes), so assignment raises
``AttributeError`` (torch: "attribute 'shape' of 'torch._C.TensorBase' objects is not writable")
and leaves the tensor unchanged. ``requires_grad`` stays settable with its checks, ``grad`` stays
assignable (both as torch).
"""

import pytest

import tensorplay as tp


@pytest.mark.parametrize("name, value", [("shape", (3,)), ("dtype", tp.float64),
                                         ("device", tp.device("meta"))])
@pytest.mark.parametrize("make", [lambda: tp.ones(2, 2), lambda: tp.empty(2, 2, device="meta")],
                         ids=["cpu", "meta"])
def test_metadata_cannot_be_assigned(make, name, value):
    t = make()
    before = (t.shape, t.dtype, t.device)
    with pytest.raises(AttributeError):
        setattr(t, name, value)
    assert (t.shape, t.dtype, t.device) == before
    with pytest.raises(AttributeError):
        delattr(t, name)
    assert (t.shape, t.dtype, t.device) == before


def test_ops_still_see_the_true_metadata_after_a_refused_assignment():
    t = tp.ones(2, 3)
    with pytest.raises(AttributeError):
        t.shape = (6,)
    assert (t + 1).shape == (2, 3)
    assert t.sum().item() == 6.0


def test_requires_grad_and_grad_keep_their_rules():
    t = tp.ones(2)
    t.requires_grad = True
    assert t.requires_grad and t.is_leaf
    y = t * 2
    with pytest.raises(RuntimeError):
        y.requires_grad = False          # only leaves may be switched off (torch's rule)
    with pytest.raises(RuntimeError):
        tp.ones(2, dtype=tp.int64).requires_grad = True
    t.grad = tp.zeros(2)
    assert t.grad.tolist() == [0.0, 0.0]
    t.requires_grad = False
    assert not t.requires_grad
