"""``copy_`` and ``x[index] = v``: which shapes of the source each accepts (torch 2.13's rules).

* ``dst.copy_(src)`` broadcasts ``src`` to ``dst``'s shape; a ``src`` of more dims never
  broadcasts, even when its extra leading dims have size 1 (``zeros(()).copy_(ones(1))``:
  ``RuntimeError: output with shape [] doesn't match the broadcast shape [1]``). An array
  assignment drops those dims, so TensorPlay wrote them (failed on main 8abad1c), and so did every
  in-place method whose value is written with ``copy_`` (``pow_``, ``clamp_``, ``lerp_``, ...).
* ``x[index] = v`` first strips ``v``'s leading size-1 dims (torch's ``slicePrefix1sSize``), then
  broadcasts it to ``x[index]``'s shape: ``x[...] = ones(1, 2, 3)`` into a (2, 3) tensor works,
  ``x[0] = ones(1, 3)`` into a (3,) row refuses (``expand``'s words). With a bool mask the value
  stripped the same way: ``x[mask] = ones(1, 3)`` writes 3 True elements (failed on main).

The expected values and which cases raise were measured on torch 2.13 (cpu).
"""

from __future__ import annotations

import math

import pytest

import tensorplay as tp
from tensorplay import fake

# (dst shape, src shape) torch refuses for copy_ / accepts for copy_
COPY_REFUSED = [((), (1,)), ((), (1, 1)), ((3,), (1, 3)), ((3,), (3, 1)), ((3,), (2, 3)),
                ((2, 3), (1, 1, 3)), ((2, 3), (1, 2, 3)), ((1,), (1, 1)), ((0,), (1, 0)),
                ((2, 0), (1, 2, 0))]
COPY_OK = [((3,), (1,)), ((2, 3), (3,)), ((1,), ()), ((0,), (1,)), ((2, 3), (2, 1)),
           ((2, 3), (2, 3)), ((), ())]


@pytest.mark.parametrize("dst,src", COPY_REFUSED)
def test_copy_of_more_dims_is_refused_nothing_written(dst, src):
    x = tp.zeros(dst)
    v = x._version
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape|must match the size"):
        x.copy_(tp.ones(src))
    assert x._version == v and (x == 0).all().item()


def test_copy_refusal_names_both_shapes_in_torchs_words():
    with pytest.raises(RuntimeError, match=r"^output with shape \[\] doesn't match the broadcast "
                                           r"shape \[1\]$"):
        tp.zeros(()).copy_(tp.ones(1))
    with pytest.raises(RuntimeError, match=r"output with shape \[2, 3\] doesn't match the "
                                           r"broadcast shape \[1, 2, 3\]"):
        tp.zeros(2, 3).copy_(tp.ones(1, 2, 3))


@pytest.mark.parametrize("dst,src", COPY_OK)
def test_copy_broadcasting_to_self_is_accepted(dst, src):
    x = tp.zeros(dst)
    s = tp.arange(1.0, 1.0 + math.prod(src)).reshape(src)
    assert x.copy_(s) is x
    assert x.tolist() == s.expand(dst).tolist()


def test_fake_copy_refuses_as_eager():
    f = fake.from_real(tp.zeros(3))
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast "
                                           r"shape \[1, 3\]"):
        f.copy_(fake.from_real(tp.ones(1, 3)))


@pytest.mark.parametrize("method", ["pow_", "clamp_", "lerp_", "remainder_", "addcmul_",
                                    "floor_divide_", "bitwise_and_", "add_", "mul_"])
def test_in_place_methods_refuse_an_operand_of_more_dims(method):
    # torch: "output with shape [3] doesn't match the broadcast shape [1, 3]" for each; the
    # methods written as op + copy_ wrote the result on main
    integral = method == "bitwise_and_"
    x = tp.tensor([1, 2, 3]) if integral else tp.tensor([1.0, 2.0, 3.0])
    o = tp.ones(1, 3, dtype=x.dtype)
    call = {"clamp_": lambda: x.clamp_(min=o), "lerp_": lambda: x.lerp_(o, 0.5),
            "addcmul_": lambda: x.addcmul_(o, o)}.get(method, lambda: getattr(x, method)(o))
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast "
                                           r"shape \[1, 3\]"):
        call()
    assert x.tolist() == [1, 2, 3]


# (dst shape, index, value shape, expected flat result or None when torch refuses)
SETITEM = [
    ((), Ellipsis, (1,), [1.0]),
    ((), Ellipsis, (1, 1), [1.0]),
    ((), (), (1,), [1.0]),
    ((3,), Ellipsis, (1, 3), [1.0] * 3),
    ((3,), slice(None), (1, 1, 3), [1.0] * 3),
    ((2, 3), Ellipsis, (1, 1, 3), [1.0] * 6),
    ((2, 3), Ellipsis, (1, 2, 3), [1.0] * 6),
    ((2, 3), 0, (1, 1, 3), [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]),
    ((2, 3), (0, slice(None)), (1, 1, 3), [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]),
    ((2, 3), (0, 1), (1, 1), [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]),
    ((2, 3), None, (1, 1, 2, 3), [1.0] * 6),
    ((0,), Ellipsis, (1, 0), []),
    ((2, 0), Ellipsis, (1, 2, 0), []),
    ((3,), Ellipsis, (3, 1), None),
    ((3,), Ellipsis, (2, 3), None),
    ((3,), 0, (1, 3), None),
    ((3,), 0, (1, 1, 3), None),
    ((3,), slice(None), (2, 1), None),
    ((2, 3), 0, (1, 2, 3), None),
    ((2, 3), slice(None), (2, 1, 3), None),
    ((2, 3), (0, 1), (2,), None),
]


@pytest.mark.parametrize("dst,index,src,want", SETITEM)
def test_setitem_strips_the_values_leading_ones(dst, index, src, want):
    x = tp.zeros(dst)
    if want is None:
        with pytest.raises(RuntimeError, match="number of sizes provided"):
            x[index] = tp.ones(src)
        assert (x == 0).all().item()
    else:
        x[index] = tp.ones(src)
        assert x.reshape(-1).tolist() == want


def test_setitem_with_int_tensor_and_masks_strips_leading_ones():
    x = tp.zeros(2, 3)
    x[tp.tensor([0, 1])] = tp.arange(6.0).reshape(1, 1, 2, 3)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    m = tp.tensor([[True, False, True], [False, False, True]])
    y = tp.zeros(2, 3)
    y[m] = tp.tensor([[1.0, 2.0, 3.0]])                         # one value per True element
    assert y.tolist() == [[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]]
    z = tp.zeros(2, 3)
    z[tp.tensor([True, False])] = tp.tensor([[[1.0, 2.0, 3.0]]])   # rows: (1, 3) region
    assert z.tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]
    u = tp.zeros(2, 3)
    u[m] = tp.tensor([[7.0]])                                   # one value, broadcast
    assert u.tolist() == [[7.0, 0.0, 7.0], [0.0, 0.0, 7.0]]


def test_setitem_stripped_value_keeps_its_gradient_shape():
    w = tp.full((1, 1, 3), 2.0, requires_grad=True)
    x = tp.zeros(2, 3, requires_grad=True).clone()
    x[0] = w * 3
    (x * tp.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert w.grad.shape == (1, 1, 3)
    assert w.grad.tolist() == [[[3.0, 6.0, 9.0]]]


# -- bool scalars, 0-d bool tensors, several Ellipsis (torch's rules; refused or crashed on main) --
def test_bool_scalar_index_inserts_a_dim_taken_or_emptied():
    x = tp.arange(24.0).reshape(2, 3, 4)
    assert x[True].shape == (1, 2, 3, 4) and x[True].tolist() == [x.tolist()]
    assert x[False].shape == (0, 2, 3, 4)
    assert x[0, True].shape == (1, 3, 4)
    assert x[:, False].shape == (2, 0, 3, 4)
    assert x[tp.tensor(True)].shape == (1, 2, 3, 4)
    assert x[..., tp.tensor(False)].shape == (2, 3, 4, 0)
    # an advanced index: broadcast with the others (adjacent: in place; apart: first)
    assert x[[0, 1], True].shape == (2, 3, 4)
    r = x[True, :, [0, 2]]
    assert r.shape == (2, 2, 4)
    assert r.tolist() == [[[0.0, 1.0, 2.0, 3.0], [12.0, 13.0, 14.0, 15.0]],
                          [[8.0, 9.0, 10.0, 11.0], [20.0, 21.0, 22.0, 23.0]]]
    z = tp.tensor(5.0)
    assert z[True].tolist() == [5.0] and z[False].shape == (0,)
    assert z[tp.tensor(True)].tolist() == [5.0]


def test_bool_scalar_setitem_and_gradient():
    y = tp.zeros(2, 3)
    y[True] = tp.tensor([1.0, 2.0, 3.0])
    assert y.tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    y = tp.zeros(2, 3)
    y[0, tp.tensor(True)] = 5.0
    assert y.tolist() == [[5.0, 5.0, 5.0], [0.0, 0.0, 0.0]]
    y = tp.zeros(2, 3)
    y[False] = tp.ones(7)            # torch writes nothing and checks nothing
    assert y.tolist() == [[0.0] * 3] * 2 and y._version == 0
    w = tp.ones(3, requires_grad=True)
    (w[True] * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_several_ellipses_each_move_on_by_the_free_dims():
    x = tp.arange(24.0).reshape(2, 3, 4)
    assert x[..., 0, ...].tolist() == x[..., 0].tolist()
    assert x[0, ..., ...].shape == (3, 4)
    assert x[..., None, ...].shape == (2, 3, 4, 1)
    for bad in (lambda: x[..., ..., 1], lambda: x[..., ..., None]):
        with pytest.raises((IndexError, RuntimeError)):
            bad()
    y = tp.zeros(2, 3)
    y[..., 1, ...] = 4.0
    assert y.tolist() == [[0.0, 4.0, 0.0], [0.0, 4.0, 0.0]]
