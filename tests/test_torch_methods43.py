"""Tensor methods a script translated from PyTorch by names only (torch -> tensorplay) calls, with
torch's semantics (torch 2.13; expected values are torch's, stated here so the file runs without it).

1. Every in-place method ``m_`` of ``torch.Tensor`` whose out-of-place ``m`` TensorPlay has
   (listed mechanically against torch 2.13): it returns ``self``, bumps the version once, casts the
   result into ``self``'s dtype (RuntimeError, nothing written, when the result's dtype cannot be
   cast), is refused on a leaf that requires grad (and a view of one) while grad mode is on,
   writes through views into their base, and differentiates through non-leaves. The
   shape-changing ones (``t_``, ``transpose_``, ``swapaxes_``, ``swapdims_``, ``unsqueeze_``,
   ``squeeze_``, ``as_strided_``) change ``self``'s shape/stride/offset in place, as torch's.
2. Keyword spellings torch accepts for methods declared with ``*args``: ``permute(dims=)``,
   ``reshape(shape=)``, ``view(size=)``/``view(dtype=)``, ``expand(size=)``, ``repeat(repeats=)``,
   ``flip(dims=)``, ``new_zeros(size=)``, ``copy_(other=, non_blocking=)``, ...
3. Neighbours found on the way: torch's aliases (``multiply``, ``absolute``, ``swapdims``, ...)
   and everyday methods (``addcmul_``/``addcdiv_``/``lerp_`` of hand-written optimizers,
   ``movedim``, ``tile``, ``masked_scatter``, ...).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import tensorplay as tp


def _f(values, dtype=tp.float32):
    return tp.tensor(values, dtype=dtype)


# -- 1. value-writing in-place methods --------------------------------------------------------

COMPARISONS = {"eq_": [0.0, 1.0, 0.0], "ne_": [1.0, 0.0, 1.0], "lt_": [1.0, 0.0, 0.0],
               "le_": [1.0, 1.0, 0.0], "gt_": [0.0, 0.0, 1.0], "ge_": [0.0, 1.0, 1.0],
               "greater_": [0.0, 0.0, 1.0], "greater_equal_": [0.0, 1.0, 1.0],
               "less_": [1.0, 0.0, 0.0], "less_equal_": [1.0, 1.0, 0.0],
               "not_equal_": [1.0, 0.0, 1.0]}


@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_comparison_in_place_writes_truth_values_in_self_dtype(name):
    x = _f([1.0, 2.0, 3.0])
    v = x._version
    r = getattr(x, name)(2)
    assert r is x and x.dtype is tp.float32 and x.tolist() == COMPARISONS[name]
    assert x._version == v + 1
    i = tp.tensor([1, 2, 3])
    assert getattr(i, name)(_f([2.0, 2.0, 2.0])).tolist() == [int(b) for b in COMPARISONS[name]]
    assert i.dtype is tp.int64
    b = tp.tensor([True, False, True])
    assert getattr(b, name)(tp.tensor([True, True, True])).dtype is tp.bool


def test_comparison_in_place_refuses_a_broadcast_beyond_self():
    x = _f([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError):
        x.eq_(tp.ones(2, 3))
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_cumsum_():
    x = _f([1.0, 2.0, 3.0])
    assert x.cumsum_(0) is x and x.tolist() == [1.0, 3.0, 6.0]
    i = tp.tensor([[1, 2], [3, 4]], dtype=tp.int32)
    assert i.cumsum_(dim=1).tolist() == [[1, 3], [3, 7]] and i.dtype is tp.int32
    assert i.cumsum_(0, dtype=tp.int32).tolist() == [[1, 3], [4, 10]]
    with pytest.raises(RuntimeError):     # torch: "Bad in-place call: ... should match"
        i.cumsum_(0, dtype=tp.float32)
    with pytest.raises(RuntimeError):     # int64 result into bool
        tp.tensor([True, False]).cumsum_(0)


def test_scatter_add_():
    x = tp.zeros(3)
    r = x.scatter_add_(0, tp.tensor([0, 0, 2]), _f([1.0, 2.0, 3.0]))
    assert r is x and x.tolist() == [3.0, 0.0, 3.0]
    y = tp.ones(2, 2)
    y.scatter_add_(dim=1, index=tp.tensor([[1, 1], [0, 1]]), src=_f([[1.0, 2.0], [3.0, 4.0]]))
    assert y.tolist() == [[1.0, 4.0], [4.0, 5.0]]


def test_addmm_and_baddbmm_():
    x = tp.ones(2, 2)
    m = _f([[1.0, 2.0], [3.0, 4.0]])
    r = x.addmm_(tp.eye(2), m, beta=2, alpha=3)
    assert r is x and x.tolist() == [[5.0, 8.0], [11.0, 14.0]]
    b = tp.zeros(1, 2, 2)
    b.baddbmm_(m.reshape(1, 2, 2), tp.eye(2).reshape(1, 2, 2), alpha=2)
    assert b.tolist() == [[[2.0, 4.0], [6.0, 8.0]]]
    i = tp.zeros(2, 2, dtype=tp.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.addmm_(m, m)
    assert i.tolist() == [[0, 0], [0, 0]]


def test_tril_triu_():
    x = tp.ones(3, 3)
    assert x.tril_() is x and x.tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    y = tp.ones(2, 3)
    assert y.triu_(diagonal=1).tolist() == [[0, 1, 1], [0, 0, 1]]


def test_value_in_place_on_a_leaf_requiring_grad_is_refused_and_writes_nothing():
    for name, args in [("eq_", (1.0,)), ("cumsum_", (0,)), ("tril_", ()), ("lerp_", (tp.ones(2, 2), 0.5)),
                       ("scatter_add_", (0, tp.tensor([[0, 0]]), tp.ones(1, 2))),
                       ("addcmul_", (tp.ones(2, 2), tp.ones(2, 2)))]:
        x = tp.ones(2, 2, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            getattr(x, name)(*args)
        assert x.tolist() == [[1.0, 1.0], [1.0, 1.0]], name
        with tp.no_grad():
            getattr(x, name)(*args)       # allowed under no_grad, as torch


def test_value_in_place_on_a_view_writes_the_base():
    b = tp.zeros(2, 3)
    v0 = b._version
    b[0].eq_(0)
    assert b.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]] and b._version == v0 + 1
    c = tp.ones(2, 3)
    c[:, 1:].cumsum_(1)
    assert c.tolist() == [[1.0, 1.0, 2.0], [1.0, 1.0, 2.0]]


def test_value_in_place_differentiates_through_non_leaves():
    x = _f([1.0, 2.0, 3.0]).requires_grad_()
    y = x * 2
    y.cumsum_(0)
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 4.0, 2.0]
    x.grad = None
    y = x * 1
    y[1:].gt_(0)                        # comparisons: zero gradient where written
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0]
    a = tp.ones(2, 2, requires_grad=True)
    m = _f([[1.0, 2.0], [3.0, 4.0]]).requires_grad_()
    z = a * 1
    z.addmm_(m, tp.eye(2), beta=3)
    z.sum().backward()
    assert a.grad.tolist() == [[3.0, 3.0], [3.0, 3.0]] and m.grad.tolist() == [[1, 1], [1, 1]]


# -- 1b. shape-changing in-place methods --------------------------------------------------------

def test_t_transpose_swap_in_place_change_self():
    for name, args in [("t_", ()), ("transpose_", (0, 1)), ("swapaxes_", (0, 1)),
                       ("swapdims_", (1, 0))]:
        x = tp.arange(6.0).reshape(2, 3)
        v = x._version
        r = getattr(x, name)(*args)
        assert r is x, name
        assert x.shape == (3, 2) and x.stride() == (1, 3), name
        assert x.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]], name
        assert x._version == v + 1 and not x.is_contiguous(), name
    one = tp.arange(3.0)
    assert one.t_() is one and one.shape == (3,)
    with pytest.raises(RuntimeError):
        tp.ones(2, 2, 2).t_()


def test_unsqueeze_squeeze_in_place():
    x = tp.arange(3.0)
    assert x.unsqueeze_(0) is x and x.shape == (1, 3)
    assert x.unsqueeze_(-1).shape == (1, 3, 1)
    assert x.squeeze_(0).shape == (3, 1)
    assert x.squeeze_().shape == (3,) and x.tolist() == [0.0, 1.0, 2.0]
    y = tp.ones(1, 3, 1)
    assert y.squeeze_((0, 2)).shape == (3,)
    z = tp.ones(1, 3, 1)
    assert z.squeeze_(dim=2).shape == (1, 3)
    with pytest.raises(IndexError):
        z.unsqueeze_(5)
    assert z.shape == (1, 3)


def test_as_strided_():
    x = tp.arange(6.0)
    r = x.as_strided_((2, 2), (1, 2), 1)
    assert r is x and x.shape == (2, 2) and x.stride() == (1, 2)
    assert x.storage_offset() == 1 and x.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    with pytest.raises(RuntimeError):
        x.as_strided_((10,), (1,))


def test_shape_in_place_refused_on_leaf_requiring_grad_and_views_of_one():
    for name, args in [("t_", ()), ("transpose_", (0, 1)), ("unsqueeze_", (0,)),
                       ("squeeze_", ()), ("as_strided_", ((4,), (1,)))]:
        x = tp.ones(2, 2, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            getattr(x, name)(*args)
        assert x.shape == (2, 2), name
        with pytest.raises(RuntimeError, match="view of a leaf"):
            getattr(x.view(2, 2), name)(*args)
    x = tp.ones(2, 3, requires_grad=True)
    with tp.no_grad():
        x.t_()
    assert x.shape == (3, 2) and x.requires_grad and x.is_leaf


def test_shape_in_place_differentiates_and_keeps_views():
    a = tp.arange(6.0).requires_grad_()
    y = (a * 1).view(2, 3)
    y.t_()
    assert not y.is_leaf and y.shape == (3, 2)
    (y * _f([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
    assert a.grad.tolist() == [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]
    b = tp.arange(6.0).view(2, 3)
    bv = b[0]
    bv.unsqueeze_(0)
    bv.mul_(10)
    assert bv.shape == (1, 3) and b.tolist() == [[0.0, 10.0, 20.0], [3.0, 4.0, 5.0]]
    # a write into the base after the metadata change reaches the view's gradient
    c = tp.ones(2, 3, requires_grad=True)
    d = c * 1
    dv = d[1]
    dv.unsqueeze_(0)
    d.mul_(2)
    dv.sum().backward()
    assert c.grad.tolist() == [[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]]


def test_shape_in_place_on_fake_tensors():
    x = tp.empty(2, 3, device="meta")
    assert x.t_() is x and x.shape == (3, 2) and x.stride() == (1, 3)
    assert x.unsqueeze_(0).shape == (1, 3, 2)


def test_shape_in_place_inside_compile_is_refused_naming_the_alternative():
    def f(x):
        x.t_()
        return x * 2
    g = tp.compile(f)
    with pytest.raises(RuntimeError, match=r"t_\(\).*x = x\.t\(\)"):
        g(tp.ones(2, 3))


# -- 2. keywords torch accepts ----------------------------------------------------------------

def test_size_and_dims_keywords():
    x = tp.arange(6.0).reshape(2, 3)
    assert x.permute(dims=(1, 0)).shape == (3, 2)
    assert x.reshape(shape=(3, 2)).shape == (3, 2)
    assert x.view(size=(3, 2)).shape == (3, 2)
    assert x.view(size=[6]).shape == (6,)
    assert x.view(dtype=tp.int32).dtype is tp.int32
    assert x[:1].expand(size=(2, 2, 3)).shape == (2, 2, 3)
    assert x[:1].expand(size=(2, 3), implicit=False).shape == (2, 3)
    assert x.repeat(repeats=(2, 1)).shape == (4, 3)
    assert x.flip(dims=(0,)).tolist() == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]
    assert x.sum_to_size(size=(1, 3)).tolist() == [[3.0, 5.0, 7.0]]
    assert x[:1].broadcast_to(size=(2, 3)).shape == (2, 3)
    assert x.new_zeros(size=(2,)).tolist() == [0.0, 0.0]
    assert x.new_ones(size=[1, 2], dtype=tp.int64).tolist() == [[1, 1]]
    assert x.new_empty(size=(4,)).shape == (4,)
    assert x.swapaxes(axis0=0, axis1=1).shape == (3, 2)
    assert x.swapdims(dim0=0, dim1=1).shape == (3, 2)


def test_positional_forms_still_work():
    x = tp.arange(6.0).reshape(2, 3)
    assert x.permute(1, 0).shape == x.permute((1, 0)).shape == x.permute([1, 0]).shape == (3, 2)
    assert x.view(3, 2).shape == x.view((3, 2)).shape == (3, 2)
    assert x.view(tp.int32).dtype is tp.int32
    assert x.flip(0).tolist() == x.flip([0]).tolist() == x.flip((0,)).tolist()
    assert x.new_zeros(2, 2).shape == x.new_zeros((2, 2)).shape == (2, 2)


@pytest.mark.parametrize("call", [
    lambda x: x.permute(1, 0, dims=(1, 0)), lambda x: x.reshape(6, shape=(6,)),
    lambda x: x.view(6, size=(6,)), lambda x: x.permute(dim=(1, 0)),
    lambda x: x.reshape(size=(6,)), lambda x: x.repeat(sizes=(1, 1)),
    lambda x: x.flip(dim=0), lambda x: x.new_zeros((2,), size=(2,)),
    lambda x: x.view(size=(6,), dtype=tp.int32), lambda x: x.expand(sizes=(2, 3)),
    lambda x: x.tile((1,), dims=(1,)), lambda x: x.uniform_(frm=0.0),
])
def test_bad_keyword_combinations_are_type_errors(call):
    with pytest.raises(TypeError):
        call(tp.arange(6.0).reshape(2, 3))


def test_copy_takes_torch_names():
    x = tp.zeros(2)
    assert x.copy_(other=_f([1.0, 2.0])) is x and x.tolist() == [1.0, 2.0]
    x.copy_(_f([3.0, 4.0]), non_blocking=True)
    assert x.tolist() == [3.0, 4.0]
    x.copy_(_f([5.0, 6.0]), True)
    assert x.tolist() == [5.0, 6.0]


def test_max_min_other_keyword():
    a, b = _f([1.0, 5.0]), _f([3.0, 2.0])
    assert a.max(other=b).tolist() == [3.0, 5.0]
    assert a.min(other=b).tolist() == [1.0, 2.0]


def test_random_fills_accept_torch_from_keyword():
    x = tp.zeros(100)
    x.random_(**{"from": 3, "to": 5})
    assert set(x.tolist()) <= {3.0, 4.0}
    x.uniform_(**{"from": 2.0, "to": 3.0})
    assert all(2.0 <= v < 3.0 for v in x.tolist())
    with pytest.raises(TypeError):
        x.uniform_(**{"from": 2.0, "from_": 1.0})


def test_cuda_takes_non_blocking():
    assert "non_blocking" in inspect.signature(tp.Tensor.cuda).parameters


# -- 3. aliases and everyday methods ------------------------------------------------------------

ALIASES = [("absolute", "abs", ()), ("arccos", "acos", ()), ("arcsin", "asin", ()),
           ("arctan", "atan", ()), ("negative", "neg", ()), ("fix", "trunc", ()),
           ("multiply", "mul", (2.0,)), ("subtract", "sub", (2.0,)), ("divide", "div", (2.0,)),
           ("true_divide", "div", (2.0,)), ("greater", "gt", (0.0,)),
           ("greater_equal", "ge", (0.0,)), ("less", "lt", (0.0,)), ("less_equal", "le", (0.0,)),
           ("not_equal", "ne", (0.0,))]


@pytest.mark.parametrize("alias,name,args", ALIASES)
def test_aliases_and_their_in_place_forms(alias, name, args):
    x = _f([-0.5, 0.0, 0.25])
    assert getattr(x, alias)(*args).tolist() == getattr(x, name)(*args).tolist()
    y = x.clone()
    r = getattr(y, alias + "_")(*args)
    assert r is y and y.tolist() == [float(v) for v in getattr(x, name)(*args).tolist()]


def test_alias_keywords():
    x = _f([1.0, 2.0])
    assert x.subtract(_f([1.0, 1.0]), alpha=2).tolist() == [-1.0, 0.0]
    assert x.divide(_f([2.0, 4.0]), rounding_mode="floor").tolist() == [0.0, 0.0]
    assert x.clone().divide_(2, rounding_mode="trunc").tolist() == [0.0, 1.0]
    assert x.clone().subtract_(1, alpha=2).tolist() == [-1.0, 0.0]
    with pytest.raises(RuntimeError, match="can't be cast"):
        tp.tensor([1, 2]).true_divide_(2)


def test_addcmul_addcdiv_lerp():
    x = _f([1.0, 2.0])
    t1, t2 = _f([2.0, 3.0]), _f([4.0, 5.0])
    assert x.addcmul(t1, t2, value=0.5).tolist() == [5.0, 9.5]
    assert x.addcdiv(t1, t2, value=2).tolist() == pytest.approx([2.0, 3.2])
    y = x.clone()
    assert y.addcmul_(t1, t2) is y and y.tolist() == [9.0, 17.0]
    assert tp.tensor([1, 2]).addcmul(tp.tensor([2, 3]), tp.tensor([4, 5]), value=2).tolist() \
        == [17, 32]
    with pytest.raises(RuntimeError, match="Integer division"):
        tp.tensor([1, 2]).addcdiv(tp.tensor([2, 3]), tp.tensor([4, 5]))
    assert x.lerp(_f([3.0, 6.0]), 0.25).tolist() == [1.5, 3.0]
    assert x.lerp(_f([3.0, 6.0]), _f([0.25, 0.75])).tolist() == [1.5, 5.0]
    z = x.clone()
    assert z.lerp_(_f([3.0, 6.0]), 0.5) is z and z.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError):
        tp.tensor([1, 2]).lerp(tp.tensor([3, 6]), 0.5)
    # an optimizer step written by hand: exp_avg.lerp_(g, 1 - b1); v.mul_(b2).addcmul_(g, g, value=)
    p = tp.ones(2, requires_grad=True)
    (p * _f([1.0, 2.0])).sum().backward()
    m, v = tp.zeros(2), tp.zeros(2)
    with tp.no_grad():
        m.lerp_(p.grad, 0.1)
        v.mul_(0.999).addcmul_(p.grad, p.grad, value=0.001)
        p.addcdiv_(m, v.sqrt().add_(1e-8), value=-0.1)
    assert m.tolist() == pytest.approx([0.1, 0.2])
    assert v.tolist() == pytest.approx([0.001, 0.004])
    assert p.tolist() == pytest.approx([1 - 0.1 * 0.1 / (0.001 ** 0.5 + 1e-8),
                                        1 - 0.1 * 0.2 / (0.004 ** 0.5 + 1e-8)], rel=1e-5)


def test_addcmul_differentiates():
    x = _f([1.0, 2.0]).requires_grad_()
    t1 = _f([2.0, 3.0]).requires_grad_()
    x.addcmul(t1, _f([4.0, 5.0]), value=0.5).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and t1.grad.tolist() == [2.0, 2.5]


def test_shape_helpers():
    x = tp.ones(2, 3, 4)
    assert x.movedim(0, 2).shape == (3, 4, 2)
    assert x.moveaxis((0, 1), (2, 0)).shape == (3, 4, 2)
    assert x.movedim(source=-1, destination=0).shape == (4, 2, 3)
    y = tp.arange(6.0).reshape(2, 3)
    assert y.ravel().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert y.tile((2,)).shape == (2, 6) and y.tile(2, 1, 1).shape == (2, 2, 3)
    m = tp.tensor([[1, 2], [3, 4]])
    assert m.fliplr().tolist() == [[2, 1], [4, 3]] and m.flipud().tolist() == [[3, 4], [1, 2]]
    with pytest.raises(RuntimeError, match=">= 2-d"):
        tp.ones(3).fliplr()
    assert y.ndimension() == 2
    assert y.is_same_size(tp.zeros(2, 3)) and not y.is_same_size(tp.zeros(3, 2))


def test_predicates_and_sizes():
    x = tp.ones(2, dtype=tp.int16)
    assert x.itemsize == 2 and x.nbytes == 4 and x.get_device() == -1 and x.is_cpu
    assert x.is_signed() and not tp.ones(1, dtype=tp.uint8).is_signed()
    assert not tp.ones(1, dtype=tp.bool).is_signed() and not x.is_complex()
    assert tp.tensor([0.0]).is_nonzero() is False and tp.tensor(2).is_nonzero() is True
    with pytest.raises(RuntimeError, match="more than one value"):
        tp.tensor([1.0, 2.0]).is_nonzero()
    with pytest.raises(RuntimeError, match="no values"):
        tp.tensor([]).is_nonzero()
    y = _f([1.0, -2.0])
    assert y.positive() is y
    with pytest.raises(RuntimeError, match="bool"):
        tp.tensor([True]).positive()


def test_frac():
    x = _f([1.5, -2.5])
    assert x.frac().tolist() == [0.5, -0.5]
    assert x.frac_() is x and x.tolist() == [0.5, -0.5]
    with pytest.raises(RuntimeError):
        tp.tensor([1, 2]).frac()


def test_masked_scatter():
    x = tp.zeros(4)
    mask = tp.tensor([True, False, True, False])
    assert x.masked_scatter(mask, _f([1.0, 2.0, 3.0])).tolist() == [1.0, 0.0, 2.0, 0.0]
    assert x.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert x.masked_scatter_(mask, _f([1.0, 2.0, 3.0])) is x and x.tolist() == [1.0, 0.0, 2.0, 0.0]


def test_every_torch_in_place_of_an_existing_method_exists():
    """The mechanical list (torch 2.13's ``Tensor.m_`` whose ``m`` TensorPlay has, computed
    against torch; tests/torch_bridge/test_torch_methods_differential43.py recomputes it)."""
    names = ["addmm_", "as_strided_", "baddbmm_", "cumsum_", "eq_", "ge_", "gt_", "le_", "lt_",
             "ne_", "scatter_add_", "squeeze_", "swapaxes_", "t_", "transpose_", "tril_", "triu_",
             "unsqueeze_"]
    missing = [n for n in names if not callable(getattr(tp.Tensor, n, None))]
    assert missing == []


# -- 3b. more of torch's everyday methods ---------------------------------------------------------

def test_diagonal_trace_unfold_are_views():
    x = tp.arange(9.0).reshape(3, 3)
    d = x.diagonal()
    assert d.tolist() == [0.0, 4.0, 8.0] and d.untyped_storage() is x.untyped_storage()
    assert x.diagonal(1).tolist() == [1.0, 5.0] and x.diagonal(-1).tolist() == [3.0, 7.0]
    assert x.diagonal(offset=5).shape == (0,)
    b = tp.arange(8.0).reshape(2, 2, 2)
    assert b.diagonal(0, 1, 2).tolist() == [[0.0, 3.0], [4.0, 7.0]]
    assert b.diagonal(dim1=-1, dim2=0).tolist() == [[0.0, 5.0], [2.0, 7.0]]
    x.diagonal().fill_(-1)
    assert x.tolist() == [[-1.0, 1.0, 2.0], [3.0, -1.0, 5.0], [6.0, 7.0, -1.0]]
    assert x.trace().item() == -3.0 and tp.arange(9.0).reshape(3, 3).trace().item() == 12.0
    assert tp.arange(9, dtype=tp.int32).reshape(3, 3).trace().dtype is tp.int64
    with pytest.raises(RuntimeError):
        tp.ones(3).trace()
    u = tp.arange(7.0).unfold(0, 3, 2)
    assert u.tolist() == [[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [4.0, 5.0, 6.0]]
    assert tp.arange(6.0).reshape(2, 3).unfold(1, 2, 1).shape == (2, 2, 2)
    assert tp.tensor(5.0).unfold(0, 1, 1).tolist() == [5.0]
    with pytest.raises(RuntimeError, match="maximum size"):
        tp.arange(3).unfold(0, 4, 1)
    with pytest.raises(RuntimeError, match="step"):
        tp.arange(3).unfold(0, 2, 0)


def test_diagonal_and_unfold_differentiate():
    x = tp.arange(9.0).reshape(3, 3).requires_grad_()
    (x.diagonal(1) * _f([2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [[0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]]
    y = tp.arange(5.0).requires_grad_()
    y.unfold(0, 3, 1).sum().backward()          # overlapping windows accumulate
    assert y.grad.tolist() == [1.0, 2.0, 3.0, 2.0, 1.0]


def test_h_mh_adjoint():
    m = tp.arange(6.0).reshape(2, 3)
    assert m.H.shape == (3, 2) and m.mH.shape == (3, 2) and m.adjoint().shape == (3, 2)
    assert tp.ones(4, 2, 3).mH.shape == (4, 3, 2)
    with pytest.raises(RuntimeError, match="mH"):
        tp.ones(2, 2, 2).H


def test_tensor_split_and_split_with_sizes():
    x = tp.arange(7)
    assert [t.tolist() for t in x.tensor_split(3)] == [[0, 1, 2], [3, 4], [5, 6]]
    assert [t.tolist() for t in x.tensor_split([1, 5])] == [[0], [1, 2, 3, 4], [5, 6]]
    assert [t.tolist() for t in x.tensor_split(tp.tensor([2]))] == [[0, 1], [2, 3, 4, 5, 6]]
    assert [t.tolist() for t in x.split_with_sizes([3, 4])] == [[0, 1, 2], [3, 4, 5, 6]]


def test_nan_aware_and_counting_reductions():
    nan, inf = float("nan"), float("inf")
    z = tp.tensor([[0, 1], [2, 0]])
    assert z.count_nonzero().item() == 2 and z.count_nonzero(0).tolist() == [1, 1]
    assert z.count_nonzero().dtype is tp.int64
    assert z.argwhere().tolist() == [[0, 1], [1, 0]]
    f = _f([1.0, nan, 3.0])
    assert f.nansum().item() == 4.0 and f.nanmean().item() == 2.0
    assert tp.tensor([1, 2]).nansum().dtype is tp.int64
    with pytest.raises(RuntimeError, match="floating point"):
        tp.tensor([1, 2]).nanmean()
    g = _f([nan, inf, -inf, 1.0])
    assert g.nan_to_num().tolist() == [0.0, 3.4028234663852886e38, -3.4028234663852886e38, 1.0]
    assert g.nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0).tolist() == [1.0, 2.0, -2.0, 1.0]
    assert g.nan_to_num_(0.5) is g and g.tolist()[0] == 0.5
    assert tp.tensor([1, 2]).nan_to_num().tolist() == [1, 2]


def test_elementwise_composites():
    assert _f([-2.0, 0.0, 3.0]).sgn().tolist() == [-1.0, 0.0, 1.0]
    assert tp.tensor([180]).deg2rad().dtype is tp.float32
    assert tp.tensor([180.0]).deg2rad().item() == pytest.approx(3.1415927410125732, abs=0)
    assert tp.tensor([1]).rad2deg().item() == pytest.approx(57.2958, rel=1e-5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        tp.tensor([180]).deg2rad_()
    assert tp.tensor([2, 3]).float_power(2).dtype is tp.float64
    assert tp.tensor([2, 3]).float_power(2).tolist() == [4.0, 9.0]
    with pytest.raises(RuntimeError, match="float64"):
        _f([2.0]).float_power_(2)
    xl = _f([2.0, 3.0]).xlogy(_f([0.0, 2.0])).tolist()
    assert xl[0] == float("-inf") and xl[1] == pytest.approx(2.0794415416798357, rel=1e-6)
    r = _f([0.0, 1.0]).xlogy(_f([float("nan"), 0.0])).tolist()
    assert r[0] != r[0] and r[1] == float("-inf")
    assert tp.tensor([1, 2]).xlogy(2).dtype is tp.float32
    assert _f([0.0, 2.0]).xlogy(0.0).tolist() == [0.0, float("-inf")]


def test_matrix_vector():
    m = tp.arange(6.0).reshape(2, 3)
    assert m.mv(tp.ones(3)).tolist() == [3.0, 12.0]
    with pytest.raises(RuntimeError):
        m.mv(tp.ones(3, 1))
    assert _f([1.0, 2.0]).ger(_f([3.0, 4.0])).tolist() == [[3.0, 4.0], [6.0, 8.0]]
    assert tp.ones(2, 3).inner(tp.ones(4, 3)).shape == (2, 4)
    assert _f([1.0, 2.0]).inner(_f([3.0, 4.0])).item() == 11.0


def test_index_fill_and_index_copy():
    x = tp.ones(2, 3)
    assert x.index_fill(1, tp.tensor([0, 2]), -1.0).tolist() == [[-1.0, 1.0, -1.0]] * 2
    assert x.tolist() == [[1.0, 1.0, 1.0]] * 2
    assert x.index_fill_(0, tp.tensor(1), tp.tensor(5.0)) is x
    assert x.tolist() == [[1.0, 1.0, 1.0], [5.0, 5.0, 5.0]]
    z = tp.zeros(3, 2)
    out = z.index_copy(0, tp.tensor([2, 0]), _f([[1.0, 2.0], [3.0, 4.0]]))
    assert out.tolist() == [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]]
    with pytest.raises(RuntimeError, match="same dtype"):
        z.index_copy_(0, tp.tensor([2, 0]), tp.tensor([[1, 2], [3, 4]]))
    with pytest.raises(IndexError, match="Number of indices"):     # (torch's class)
        z.index_copy_(0, tp.tensor([2, 0]), tp.ones(3, 2))
    with pytest.raises(IndexError, match="index_fill_"):     # (torch's class, session 52)
        z.index_fill_(0, tp.tensor([0.5]), 1.0)
    a = tp.ones(3, requires_grad=True)
    b = _f([7.0]).requires_grad_()
    (a * 1).index_copy(0, tp.tensor([1]), b).sum().backward()
    assert a.grad.tolist() == [1.0, 0.0, 1.0] and b.grad.tolist() == [1.0]


def test_random_fills():
    tp.manual_seed(0)
    x = tp.empty(1000)
    x.bernoulli_(0.25)
    assert set(x.tolist()) <= {0.0, 1.0} and 150 < x.sum().item() < 350
    assert set(tp.zeros(10, dtype=tp.int64).bernoulli_(0.5).tolist()) <= {0, 1}
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        x.bernoulli_(1.5)
    p = tp.full((1000,), 1.0)
    assert p.bernoulli().tolist() == [1.0] * 1000 and tp.zeros(3).bernoulli().tolist() == [0.0] * 3
    assert x.exponential_(2.0) is x and min(x.tolist()) >= 0 and 0.35 < x.mean().item() < 0.65
    assert min(x.log_normal_().tolist()) > 0
    assert x.cauchy_() is x
    g = x.geometric_(0.5).tolist()
    assert min(g) >= 1 and all(v == int(v) for v in g)


REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "all", "any", "var",
              "std", "nansum", "nanmean"]


@pytest.mark.parametrize("name", REDUCTIONS + ["max", "min"])
def test_reductions_take_numpy_spellings(name):
    x = tp.arange(6.0).reshape(2, 3) + 1
    want = getattr(x, name)(1, keepdim=True)
    got = getattr(x, name)(axis=1, keepdims=True)
    if name in ("max", "min"):
        want, got = want.values, got.values
    assert got.shape == want.shape == (2, 1) and got.tolist() == want.tolist()
    r = getattr(x, name)(axis=0)
    assert (r.values if name in ("max", "min") else r).shape == (3,)
    with pytest.raises(TypeError):
        getattr(x, name)(0, axis=0)
    with pytest.raises(TypeError):
        getattr(x, name)(0, keepdim=True, keepdims=True)


def test_count_nonzero_takes_axis():
    assert tp.tensor([[0, 1], [2, 0]]).count_nonzero(axis=0).tolist() == [1, 1]


# -- 3c. indexing methods, shape composites, real tensors' complex surface ----------------------

def test_index_put_():
    x = tp.zeros(3, 3)
    r = x.index_put_((tp.tensor([0, 0, 2]), tp.tensor([1, 1, 2])), _f([1.0, 2.0, 3.0]),
                     accumulate=True)
    assert r is x and x.tolist() == [[0.0, 3.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 3.0]]
    y = tp.zeros(3)
    y.index_put_((tp.tensor([0, 0]),), tp.tensor(1.0), accumulate=True)
    assert y.tolist() == [2.0, 0.0, 0.0]
    y.index_put_((tp.tensor([-1]),), tp.tensor(4.0), accumulate=True)
    assert y.tolist() == [2.0, 0.0, 4.0]
    z = tp.zeros(3)
    z.index_put_((tp.tensor([True, False, True]),), tp.tensor(5.0))
    assert z.tolist() == [5.0, 0.0, 5.0]
    z.index_put_([tp.tensor([True, False, True])], _f([1.0, 2.0]), accumulate=True)
    assert z.tolist() == [6.0, 0.0, 7.0]
    m = tp.arange(6.0).reshape(2, 3)
    m.index_put_((m > 2,), _f([30.0, 40.0, 50.0]))      # one value per True, as torch
    assert m.tolist() == [[0.0, 1.0, 2.0], [30.0, 40.0, 50.0]]
    rows = tp.zeros(3, 2)
    rows.index_put_((tp.tensor([1, 1]),), _f([[1.0, 2.0], [3.0, 4.0]]), accumulate=True)
    assert rows.tolist() == [[0.0, 0.0], [4.0, 6.0], [0.0, 0.0]]
    with pytest.raises(RuntimeError, match="dtypes match"):
        tp.zeros(3).index_put_((tp.tensor([0]),), tp.tensor([1]))
    w = tp.zeros(2)
    assert w.index_put((tp.tensor([1]),), tp.tensor(3.0)).tolist() == [0.0, 3.0]
    assert w.tolist() == [0.0, 0.0]


def test_index_put_accumulate_differentiates():
    x = tp.zeros(3, requires_grad=True)
    v = _f([1.0, 2.0]).requires_grad_()
    y = x * 1
    y.index_put_((tp.tensor([0, 0]),), v, accumulate=True)
    (y * _f([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0] and v.grad.tolist() == [1.0, 1.0]


def test_take_and_take_along_dim():
    x = tp.arange(6).reshape(2, 3)
    assert x.take(tp.tensor([[0, 5]])).tolist() == [[0, 5]]
    assert x.take(tp.tensor([-1])).tolist() == [5]
    f = tp.arange(6.0).reshape(2, 3)
    assert f.take_along_dim(tp.tensor([[0], [2]]), 1).tolist() == [[0.0], [5.0]]
    assert f.take_along_dim(tp.tensor([5, 0])).tolist() == [5.0, 0.0]
    assert f.take_along_dim(tp.tensor([[2]]), dim=1).tolist() == [[2.0], [5.0]]   # broadcast
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        f.take_along_dim(tp.tensor([0]), 1)


def test_fill_diagonal_():
    x = tp.ones(3, 2)
    assert x.fill_diagonal_(5) is x and x.tolist() == [[5, 1], [1, 5], [1, 1]]
    w = tp.ones(7, 3).fill_diagonal_(0, wrap=True)
    assert w.tolist() == [[0, 1, 1], [1, 0, 1], [1, 1, 0], [1, 1, 1], [0, 1, 1], [1, 0, 1],
                          [1, 1, 0]]
    c = tp.zeros(2, 2, 2).fill_diagonal_(1)
    assert c.sum().item() == 2.0 and c[1, 1, 1].item() == 1.0
    with pytest.raises(RuntimeError):
        tp.zeros(2, 3, 2).fill_diagonal_(1)
    with pytest.raises(RuntimeError):
        tp.zeros(2, 2, dtype=tp.int32).fill_diagonal_(1.5e10)


def test_rot90_diff_splits_msort():
    x = tp.arange(6).reshape(2, 3)
    assert x.rot90().tolist() == [[2, 5], [1, 4], [0, 3]]
    assert x.rot90(2, [0, 1]).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert x.rot90(-1).tolist() == [[3, 0], [4, 1], [5, 2]]
    assert x.rot90(4).tolist() == x.tolist()
    assert tp.tensor([1, 4, 9]).diff().tolist() == [3, 5]
    assert tp.tensor([True, False, False]).diff().tolist() == [True, False]
    assert _f([1.0, 4.0, 9.0]).diff(n=2, prepend=_f([0.0])).tolist() == [2.0, 2.0]
    assert x.diff(dim=0, append=tp.tensor([[0, 0, 0]])).tolist() == [[3, 3, 3], [-3, -4, -5]]
    assert tp.ones(2, 3, 4).hsplit(3)[0].shape == (2, 1, 4)
    assert tp.ones(4, 2).vsplit([1])[1].shape == (3, 2)
    assert tp.ones(2, 2, 4).dsplit(2)[0].shape == (2, 2, 2)
    with pytest.raises(RuntimeError, match="divisible"):
        tp.ones(2, 3).hsplit(2)
    assert tp.tensor([3, 1, 2]).msort().tolist() == [1, 2, 3]
    assert x.narrow_copy(1, 1, 2).tolist() == [[1, 2], [4, 5]]


def test_diag_embed_diagflat_cross():
    assert tp.tensor([1, 2]).diag_embed().tolist() == [[1, 0], [0, 2]]
    assert tp.tensor([[1, 2], [3, 4]]).diagflat(1).tolist() == [
        [0, 1, 0, 0, 0], [0, 0, 2, 0, 0], [0, 0, 0, 3, 0], [0, 0, 0, 0, 4], [0, 0, 0, 0, 0]]
    e = _f([[1.0, 2.0]]).diag_embed(offset=1)
    assert e.shape == (1, 3, 3) and e[0].tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    v = _f([1.0, 2.0]).requires_grad_()
    (v.diag_embed() * _f([[3.0, 9.0], [9.0, 4.0]])).sum().backward()
    assert v.grad.tolist() == [3.0, 4.0]
    a, b = _f([[1.0, 2.0, 3.0]]), _f([[4.0, 5.0, 6.0]])
    assert a.cross(b, dim=1).tolist() == [[-3.0, 6.0, -3.0]] == a.cross(b).tolist()
    with pytest.raises(RuntimeError):
        tp.ones(2, 2).cross(tp.ones(2, 2))


def test_logaddexp_logit_inf_predicates():
    inf = float("inf")
    r = _f([inf, -inf, 1.0]).logaddexp(_f([inf, -inf, 2.0])).tolist()
    assert r[:2] == [inf, -inf] and r[2] == pytest.approx(2.3132617, rel=1e-6)
    assert _f([1.0]).logaddexp2(_f([1.0])).tolist() == [2.0]
    with pytest.raises(RuntimeError):
        tp.tensor([1]).logaddexp(tp.tensor([2]))
    assert _f([0.25]).logit().item() == pytest.approx(-1.0986123, rel=1e-6)
    assert _f([0.0]).logit(eps=0.1).item() == pytest.approx(-2.1972246, rel=1e-6)
    assert tp.tensor([1]).logit().dtype is tp.float32
    y = _f([0.5])
    assert y.logit_() is y and y.tolist() == [0.0]
    g = _f([inf, -inf, 1.0])
    assert g.isposinf().tolist() == [True, False, False]
    assert g.isneginf().tolist() == [False, True, False]
    assert g.isreal().tolist() == [True, True, True]


def test_real_tensors_complex_surface_and_legacy_new():
    x = tp.ones(2)
    assert x.conj() is x and x.real is x and x.resolve_conj() is x and x.resolve_neg() is x
    assert not x.is_conj() and not x.is_neg() and not x.is_pinned() and not x.is_shared()
    assert x.conj_physical() is not x and x.conj_physical().tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="non-complex"):
        x.imag
    assert x.new(2, 3).shape == (2, 3) and x.new([1, 2]).tolist() == [1.0, 2.0]
    assert x.new().shape == (0,) and x.new((2, 3)).tolist() == [2.0, 3.0]
    assert tp.ones(2, dtype=tp.int32).new(2).dtype is tp.int32


def test_split_and_random_fill_keywords():
    x = tp.arange(8).reshape(2, 4)
    assert [t.shape for t in x.tensor_split(sections=2, dim=1)] == [(2, 2), (2, 2)]
    assert [t.shape for t in x.tensor_split(indices=[1], dim=1)] == [(2, 1), (2, 3)]
    assert len(x.tensor_split(tensor_indices_or_sections=tp.tensor(2))) == 2
    with pytest.raises(TypeError):
        x.tensor_split(2, sections=2)
    assert [t.shape for t in x.hsplit(sections=2)] == [(2, 2), (2, 2)]
    assert [t.shape for t in x.hsplit(indices=[1])] == [(2, 1), (2, 3)]
    with pytest.raises(TypeError):
        x.vsplit()
    f = tp.zeros(4)
    for name, args in [("normal_", ()), ("uniform_", ()), ("random_", (0, 3)),
                       ("bernoulli_", ()), ("exponential_", ()), ("log_normal_", ()),
                       ("cauchy_", ()), ("geometric_", (0.5,))]:
        assert getattr(f, name)(*args, generator=None) is f, name
        with pytest.raises(TypeError, match="manual_seed"):
            getattr(f, name)(*args, generator=object())


def test_shape_in_place_keeps_a_retained_grad_on_the_old_history_as_torch():
    x = tp.arange(4.0).reshape(2, 2).requires_grad_()
    y = x * 1
    y.retain_grad()
    y.t_()
    (y * _f([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    # torch 2.13: y.grad is the gradient of y as it was (before t_), x.grad the same
    assert y.grad.tolist() == [[1.0, 3.0], [2.0, 4.0]] == x.grad.tolist()


def test_shape_in_place_under_no_grad_keeps_history_as_torch():
    x = tp.arange(4.0).reshape(2, 2).requires_grad_()
    y = x * 1
    with tp.no_grad():
        y.t_()
    (y * _f([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0], [3.0, 4.0]]     # torch's answer: history unchanged


def test_cumprod():
    x = _f([2.0, 0.5, 3.0, 0.0, 4.0])
    assert x.cumprod(0).tolist() == [2.0, 1.0, 3.0, 0.0, 0.0]
    assert tp.tensor([[2, 3], [4, 5]], dtype=tp.int32).cumprod(1).tolist() == [[2, 6], [4, 20]]
    assert tp.tensor([2, 3], dtype=tp.int32).cumprod(0).dtype is tp.int64
    assert tp.tensor([True, True, False]).cumprod(0).tolist() == [1, 1, 0]
    assert tp.tensor([1, 2]).cumprod(0, dtype=tp.float64).dtype is tp.float64
    # float32 accumulated in float64 as torch's cpu kernel: 0.1**k in float32, bit for bit
    assert tp.full((5,), 0.1).cumprod(0).tolist() == [
        0.10000000149011612, 0.010000000707805157, 0.0010000000474974513,
        0.00010000000474974513, 1.0000000656873453e-05]
    g = _f([2.0, 0.0, 3.0]).requires_grad_()
    g.cumprod(0).sum().backward()
    assert g.grad.tolist() == [1.0, 8.0, 0.0]
    y = tp.tensor([1, 2, 3], dtype=tp.int32)
    assert y.cumprod_(0) is y and y.tolist() == [1, 2, 6] and y.dtype is tp.int32
    with pytest.raises(RuntimeError):
        y.cumprod_(0, dtype=tp.int64)
    long = tp.full((3000,), 1.0001)
    assert long.cumprod(0)[-1].item() == pytest.approx(1.0001 ** 3000, rel=1e-4)


def test_setitem_with_a_full_shape_mask_takes_one_value_per_true_element():
    x = tp.arange(6.0).reshape(2, 3)
    x[x.remainder(2) == 0] = _f([10.0, 20.0, 30.0])    # main: [[10, 1, 30], [3, 20, 5]]
    assert x.tolist() == [[10.0, 1.0, 20.0], [3.0, 30.0, 5.0]]
    y = tp.arange(4.0)
    y[tp.tensor([True, False, True, True])] = _f([1.0, 2.0, 3.0])   # main: ValueError
    assert y.tolist() == [1.0, 1.0, 2.0, 3.0]
    z = tp.arange(6.0).reshape(2, 3)
    z[(z > 2,)] = _f([7.0, 8.0, 9.0])
    z[z > 8] = _f([1.0])
    z[z > 100] = _f([5.0])
    assert z.tolist() == [[0.0, 1.0, 2.0], [7.0, 8.0, 1.0]]
    for bad in (tp.full((2, 3), 9.0), _f([1.0, 2.0])):
        with pytest.raises(RuntimeError):
            z[z > 0] = bad
    s = tp.arange(4.0)
    s[s > 1] = tp.tensor(0.0)                  # a 0-dim value fills, as before
    assert s.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_setitem_mask_values_on_a_mask_tuple_and_under_compile():
    # the rule lives in the indexing layer: the tuple spelling x[mask,] takes one value per
    # True element too
    def f(x, v):
        y = x * 1.0
        y[y > 2.0] = v
        return y

    x = tp.arange(6.0).reshape(2, 3)
    v = _f([7.0, 8.0, 9.0])
    want = [[0.0, 1.0, 2.0], [7.0, 8.0, 9.0]]
    assert f(x, v).tolist() == want
    # the positions' count is data-dependent, read as a number by the indexing layer: a graph
    # break (eager's result, the reason kept); fullgraph=True raises it, naming the size
    g = tp.compile(f)
    assert g(x, v).tolist() == want
    assert "data-dependent" in next(iter(g.graph_skips.values()))
    with pytest.raises(tp.errors.GraphBreak, match="data-dependent"):
        tp.compile(f, fullgraph=True)(x, v)
    for spell in (lambda m: (m,), lambda m: (m, ...)):
        z = tp.arange(6.0).reshape(2, 3)
        z[spell(z.remainder(2) == 0)] = _f([10.0, 20.0, 30.0])   # (m, ...) main: [[10, 1, 30],
        assert z.tolist() == [[10.0, 1.0, 20.0], [3.0, 30.0, 5.0]]   # [3, 20, 5]]


def test_setitem_mask_values_differentiate():
    x = _f([[0.1, 0.9, 0.3], [0.7, 0.2, 0.8]]).requires_grad_()
    v = _f([1.0, 2.0, 3.0]).requires_grad_()
    y = x * 2
    y[y > 1.0] = v * 3
    (y * tp.arange(6.0).reshape(2, 3)).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 4.0], [0.0, 8.0, 0.0]] and v.grad.tolist() == [3, 9, 15]


def test_varargs_dims_as_torch():
    x = tp.ones(1, 3, 1)
    assert x.squeeze(0, 2).shape == (3,) and x.shape == (1, 3, 1)
    assert x.squeeze_(0, 2) is x and x.shape == (3,)
    z = tp.tensor([[0, 1, 2], [3, 1, 0]])
    assert z.count_nonzero(0, 1).item() == 4
    y = tp.arange(8).reshape(2, 4)
    assert [t.shape for t in y.hsplit(1, 3)] == [(2, 1), (2, 2), (2, 1)]
    assert [t.shape for t in tp.ones(4, 2).vsplit(1, 2)] == [(1, 2), (1, 2), (2, 2)]


def test_logit_eps_clamps_low_bound_first_as_torch():
    # eps >= 0.5 makes the bounds cross: torch clamps to lo first (x < lo), then to hi
    assert _f([0.5, 3.0]).logit(eps=1.0).tolist() == [float("inf"), float("-inf")]


def test_scatter_reduce_sum_and_mean_and_scatter_reduce_add():
    x, idx = tp.tensor([1, 2, 3, 4]), tp.tensor([0, 0, 1])
    src = tp.tensor([5, 6, 7])
    assert x.scatter_reduce(0, idx, src, "mean").tolist() == [4, 4, 3, 4]
    assert x.scatter_reduce(0, idx, src, "mean", include_self=False).tolist() == [5, 7, 3, 4]
    assert x.scatter_reduce(0, idx, tp.tensor([-5, 6, 7]), "mean").tolist() == [0, 4, 3, 4]
    xf = x.float()
    assert xf.scatter_reduce(0, idx, src.float(), "mean").tolist() == [4.0, 4.5, 3.0, 4.0]
    assert xf.scatter_reduce(0, idx, src.float(), "sum", include_self=False).tolist() == \
        [11.0, 7.0, 3.0, 4.0]
    y = xf.clone()
    assert y.scatter_reduce_(0, idx, src.float(), "sum") is y and y.tolist() == [12, 9, 3, 4]
    # prod/amax/amin (session 44: tp::scatter_reduce; torch's values)
    for r, want, want_no_self in (("prod", [30, 14, 3, 4], [30, 7, 3, 4]),
                                  ("amax", [6, 7, 3, 4], [6, 7, 3, 4]),
                                  ("amin", [1, 2, 3, 4], [5, 7, 3, 4])):
        assert xf.scatter_reduce(0, idx, src.float(), r).tolist() == want
        assert xf.scatter_reduce(0, idx, src.float(), r, include_self=False).tolist() == \
            want_no_self
        assert x.scatter_reduce(0, idx, src, r).tolist() == want
    with pytest.raises(RuntimeError, match="dtype"):
        xf.scatter_reduce(0, idx, src, "sum")
    assert xf.scatter(0, idx, src.float(), reduce="add").tolist() == [12.0, 9.0, 3.0, 4.0]
    assert xf.scatter(0, idx, value=2.0, reduce="add").tolist() == [5.0, 4.0, 3.0, 4.0]
    z = xf.clone()
    assert z.scatter_(0, idx, 2.0, reduce="add") is z and z.tolist() == [5.0, 4.0, 3.0, 4.0]
    assert xf.scatter(0, idx, src.float(), reduce="multiply").tolist() == [30, 14, 3, 4]
    assert xf.scatter(0, idx, value=2.0, reduce="multiply").tolist() == [4, 4, 3, 4]
    with pytest.raises(RuntimeError, match="add or multiply"):
        xf.scatter(0, idx, src.float(), reduce="max")
    g = tp.ones(4, requires_grad=True)
    s = _f([1.0, 2.0, 3.0]).requires_grad_()
    (g * 1).scatter_reduce(0, idx, s, "mean").sum().backward()
    assert g.grad.tolist() == pytest.approx([1 / 3, 0.5, 1.0, 1.0])      # torch's gradients
    assert s.grad.tolist() == pytest.approx([1 / 3, 1 / 3, 0.5])


def test_put_and_bincount():
    y = tp.zeros(2, 3)
    r = y.put_(tp.tensor([0, 5, 5]), _f([1.0, 2.0, 3.0]), accumulate=True)
    assert r is y and y.tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 5.0]]
    t = tp.zeros(3, 2).t()                      # row-major order of the view, not of memory
    assert t.put(tp.tensor([1, -1]), _f([7.0, 8.0])).tolist() == [[0, 7, 0], [0, 0, 8]]
    with pytest.raises(RuntimeError, match="same number"):
        y.put_(tp.tensor([0]), _f([1.0, 2.0]))
    x = tp.tensor([0, 1, 1, 3])
    assert x.bincount().tolist() == [1, 2, 0, 1] and x.bincount().dtype is tp.int64
    assert x.bincount(minlength=6).tolist() == [1, 2, 0, 1, 0, 0]
    w = x.bincount(_f([0.5, 1.0, 2.0, 3.0]))
    assert w.dtype is tp.float32 and w.tolist() == [0.5, 3.0, 0.0, 3.0]
    assert x.bincount(tp.tensor([1, 2, 3, 4])).dtype is tp.float64
    assert tp.tensor([], dtype=tp.int64).bincount().tolist() == []
    for bad in (tp.tensor([-1, 2]), _f([1.0]), tp.ones(2, 2, dtype=tp.int64)):
        with pytest.raises(RuntimeError, match="non-negative integral"):
            bad.bincount()


def test_more_methods_take_axis():
    x = _f([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    assert x.sort(axis=0).values.tolist() == x.sort(0).values.tolist()
    assert x.argsort(axis=0).tolist() == x.argsort(0).tolist()
    assert x.topk(1, axis=0).values.tolist() == [[3.0, 5.0, 4.0]]
    assert [t.shape for t in x.chunk(2, axis=0)] == [(1, 3), (1, 3)]
    assert len(x.unbind(axis=1)) == 3
    assert tp.ones(1, 3).squeeze(axis=0).shape == (3,)
    y = tp.ones(1, 3)
    assert y.squeeze_(axis=0) is y and y.shape == (3,)
    assert x.repeat_interleave(2, axis=0).shape == (4, 3)
    with pytest.raises(TypeError):
        x.sort(0, axis=0)
    with pytest.raises(TypeError):
        x.chunk(2, 1, axis=0)


def test_an_ellipsis_beside_a_multi_dim_mask_leaves_the_other_dims():
    # a bool mask takes as many dims as it has (torch): the ellipsis expands over the rest
    # (main: IndexError "The shape of the mask [2, 3] at index 1 ...")
    z = tp.arange(6.0).reshape(2, 3)
    assert z[..., z > 2].tolist() == [3.0, 4.0, 5.0]
    z[..., z > 2] = _f([7.0, 8.0, 9.0])
    assert z.tolist() == [[0.0, 1.0, 2.0], [7.0, 8.0, 9.0]]
    w = tp.arange(24.0).reshape(2, 3, 4)
    assert w[..., tp.ones(3, 4, dtype=tp.bool)].shape == (2, 12)
    assert w[..., np.ones((3, 4), bool)].shape == (2, 12)
    with pytest.raises(IndexError, match="too many indices"):
        w[tp.ones(2, 3, dtype=tp.bool), 0, 0]
