"""A second fresh user's review (session 55), each point checked in torch 2.13 (cpu):

* dim LIST parameters (torch's ``int[1]``: sum, mean, amax, var, std, std_mean, logsumexp,
  nansum, nanmean, count_nonzero, roll, squeeze...) take an integer tensor of one element
  (``tensor([1])``, a bool one too) as torch's parser does, and refuse a float tensor or one of
  several elements with a TypeError naming the op called; single-int ones (prod, aminmax,
  argmax, all/any's int overload, movedim's int pair) refuse tuples and ``tensor([1])``;
* expanded writes: ``index_put_``/``x[idx] = v`` into an expanded tensor writes (torch's
  deprecation warning, then each element into the memory its position shares); a reduction's
  ``out=`` may be expanded (its stride-0 dims join the reduction), a pointwise op's may not,
  even where it would be resized.
"""
import re
import warnings

import pytest

import tensorplay as tp


def _x():
    return tp.arange(24.0).reshape(2, 3, 4)


ONE = [lambda: tp.tensor([1]), lambda: tp.tensor(1), lambda: tp.tensor([1], dtype=tp.int32)]
ONE_IDS = ["tensor([1])", "tensor(1)", "int32 tensor([1])"]

LIST_OPS = [
    ("sum", lambda x, d: x.sum(d), lambda x: x.sum(1)),
    ("mean", lambda x, d: x.mean(d), lambda x: x.mean(1)),
    ("amax", lambda x, d: x.amax(d), lambda x: x.amax(1)),
    ("var", lambda x, d: x.var(d), lambda x: x.var(1)),
    ("std", lambda x, d: x.std(dim=d), lambda x: x.std(1)),
    ("std_mean", lambda x, d: tp.std_mean(x, d)[0], lambda x: tp.std_mean(x, 1)[0]),
    ("var_mean", lambda x, d: tp.var_mean(x, dim=d)[0], lambda x: tp.var_mean(x, 1)[0]),
    ("logsumexp", lambda x, d: x.logsumexp(d), lambda x: x.logsumexp(1)),
    ("nansum", lambda x, d: x.nansum(d), lambda x: x.nansum(1)),
    ("nanmean", lambda x, d: x.nanmean(d), lambda x: x.nanmean(1)),
    ("count_nonzero", lambda x, d: x.count_nonzero(d), lambda x: x.count_nonzero(1)),
    ("roll", lambda x, d: x.roll(1, d), lambda x: x.roll(1, 1)),
    ("squeeze", lambda x, d: x.unsqueeze(1).squeeze(d), lambda x: x.unsqueeze(1).squeeze(1)),
    ("norm", lambda x, d: x.norm(2, d), lambda x: x.norm(2, 1)),
    ("tuple", lambda x, d: x.sum((0, d)), lambda x: x.sum((0, 1))),
]


@pytest.mark.parametrize("one", ONE, ids=ONE_IDS)
@pytest.mark.parametrize("name,call,plain", LIST_OPS, ids=[c[0] for c in LIST_OPS])
def test_dim_list_takes_a_one_element_integer_tensor(name, call, plain, one):
    got, want = call(_x(), one()), plain(_x())
    assert got.shape == want.shape and got.tolist() == want.tolist()


def test_dim_list_takes_a_one_element_bool_tensor_as_torch():
    x = _x()
    assert x.sum(tp.tensor([True])).tolist() == x.sum(1).tolist()
    assert x.var(tp.tensor(False)).tolist() == x.var(0).tolist()


BAD_LIST = [
    ("var", lambda x: x.var(tp.tensor(1.0)), "not Tensor"),
    ("std", lambda x: x.std(dim=tp.tensor(1.0)), "not Tensor"),
    ("var", lambda x: tp.var(x, tp.tensor([0, 1])), "not Tensor"),
    ("sum", lambda x: x.sum(tp.tensor([0, 1])), "not Tensor"),
    ("amax", lambda x: x.amax((0, tp.tensor(1.0))), "element of type Tensor at pos 1"),
    ("nanmean", lambda x: x.nanmean(True), "not bool"),
    ("nanmean", lambda x: x.nanmean(tp.tensor(1.0)), "not Tensor"),
    ("nanmean", lambda x: x.nanmean((0, 1.0)), "element of type float at pos 1"),
    ("logsumexp", lambda x: x.logsumexp(tp.tensor([0, 1])), "not Tensor"),
    ("roll", lambda x: x.roll(1, tp.tensor(1.0)), "not Tensor"),
]


@pytest.mark.parametrize("api,call,what", BAD_LIST, ids=[f"{c[0]}-{i}" for i, c in
                                                         enumerate(BAD_LIST)])
def test_dim_list_refusals_name_the_op_called(api, call, what):
    with pytest.raises(TypeError, match=re.escape(f"{api}(): argument 'dim' must be tuple of "
                                                  f"ints, ") + ".*" + re.escape(what)):
        call(_x())


SINGLE = [
    ("prod", lambda x, d: x.prod(d)), ("prod", lambda x, d: tp.prod(x, d)),
    ("aminmax", lambda x, d: tp.aminmax(x, dim=d)), ("aminmax", lambda x, d: x.aminmax(dim=d)),
    ("argmax", lambda x, d: x.argmax(d)), ("argmin", lambda x, d: x.argmin(d)),
    ("all", lambda x, d: (x > 3).all(d)), ("any", lambda x, d: tp.any(x > 3, d)),
]


@pytest.mark.parametrize("api,call", SINGLE, ids=[f"{c[0]}-{i}" for i, c in enumerate(SINGLE)])
def test_single_int_dims_take_a_0_dim_tensor(api, call):
    x = _x()
    assert call(x, tp.tensor(1))[0].tolist() == call(x, 1)[0].tolist()


@pytest.mark.parametrize("api,call", SINGLE, ids=[f"{c[0]}-{i}" for i, c in enumerate(SINGLE)])
def test_single_int_dims_refuse_a_1_element_tensor(api, call):
    # (torch: "argmax(): argument 'dim' (position 1) must be int, not Tensor", or for prod,
    # all, any "... received an invalid combination of arguments - got (Tensor)")
    with pytest.raises(TypeError, match=re.escape(f"{api}(): argument 'dim' must be int, not "
                                                  f"Tensor")):
        call(_x(), tp.tensor([1]))


@pytest.mark.parametrize("call", [
    lambda x: x.prod((1,)), lambda x: tp.prod(x, dim=(1,)), lambda x: x.prod((tp.tensor(1),)),
    lambda x: x.prod((1, 1)), lambda x: tp.aminmax(x, dim=(1,)), lambda x: x.argmax((1,)),
], ids=["prod", "tp.prod", "prod-tensor-in-tuple", "prod-twice", "aminmax", "argmax"])
def test_single_int_dims_refuse_a_tuple(call):
    with pytest.raises(TypeError, match="argument 'dim' must be int, not tuple"):
        call(_x())


def test_all_any_take_an_int_or_a_tuple():
    b = _x() > 3
    assert b.all((1,)).tolist() == b.all(1).tolist()
    assert b.any((tp.tensor([1]),)).tolist() == b.any(1).tolist()
    assert tp.all(b, dim=(0, 2)).tolist() == b.all(0).all(1).tolist()


def test_aminmax_dim_true_names_aminmax():
    with pytest.raises(TypeError, match=re.escape("aminmax(): argument 'dim' must be int, not "
                                                  "bool")):
        tp.aminmax(_x(), dim=True)


def test_squeeze_none_is_refused_and_no_dim_squeezes_all():
    x = tp.zeros(2, 1, 3)
    for call in (lambda: x.squeeze(None), lambda: tp.squeeze(x, None),
                 lambda: x.clone().squeeze_(None)):
        with pytest.raises(TypeError, match="squeeze"):
            call()
    assert x.squeeze().shape == (2, 3) and tp.squeeze(x).shape == (2, 3)
    assert x.squeeze((1,)).shape == (2, 3) and x.squeeze(0, 1).shape == (2, 3)


@pytest.mark.parametrize("call", [
    lambda x: x.movedim((1,), 0), lambda x: x.movedim(1, (0,)), lambda x: tp.movedim(x, (1,), 0),
    lambda x: x.moveaxis([1], 0)], ids=["tuple-int", "int-tuple", "tp.movedim", "moveaxis"])
def test_movedim_takes_two_ints_or_two_lists(call):
    with pytest.raises(TypeError, match="movedim|moveaxis"):
        call(_x())


def test_movedim_overloads_still_work():
    x = _x()
    assert x.movedim(1, 0).shape == (3, 2, 4)
    assert x.movedim((1,), (0,)).shape == (3, 2, 4)
    assert x.movedim(tp.tensor(1), tp.tensor(0)).shape == (3, 2, 4)
    assert x.movedim([1, 2], [0, 1]).shape == (3, 4, 2)


def test_flip_refuses_a_tensor_of_several_elements_with_a_type_error():
    with pytest.raises(TypeError, match="tuple of ints"):
        _x().flip(tp.tensor([0, 1]))


# -- expanded writes -------------------------------------------------------------------------------

def _put_warns(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    assert any("index_put_ on expanded tensors is deprecated" in str(m.message) for m in w)
    return r


def test_index_put_into_an_expanded_tensor_writes_the_shared_memory():
    base = tp.ones(1, 3)
    e = base.expand(2, 3)
    _put_warns(lambda: e.index_put_((tp.tensor([0]), tp.tensor([1])), tp.tensor(5.0)))
    assert e.tolist() == [[1.0, 5.0, 1.0], [1.0, 5.0, 1.0]] and base.tolist() == [[1.0, 5.0, 1.0]]


@pytest.mark.parametrize("write,want", [
    (lambda e: e.__setitem__((tp.tensor([0, 1]), tp.tensor([0, 2])), tp.tensor([7.0, 8.0])),
     [[7.0, 0.0, 8.0], [7.0, 0.0, 8.0]]),
    (lambda e: e.__setitem__(tp.tensor([[True, False, True], [False, False, False]]),
                             tp.tensor([1.0, 2.0])), [[1.0, 0.0, 2.0], [1.0, 0.0, 2.0]]),
    (lambda e: e.index_put_((tp.tensor([1]),), tp.tensor([1.0, 2.0, 3.0])),
     [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]),
], ids=["two-indices", "full-mask-values", "one-index-row"])
def test_advanced_writes_into_an_expanded_tensor(write, want):
    e = tp.zeros(1, 3).expand(2, 3)
    _put_warns(lambda: write(e))
    assert e.tolist() == want


def test_index_put_expanded_along_a_dim_not_indexed_keeps_the_last_value():
    e = tp.arange(3.0).reshape(3, 1).expand(3, 4)
    _put_warns(lambda: e.__setitem__(tp.tensor([0, 2]), tp.tensor([10.0, 11.0, 12.0, 13.0])))
    assert e.tolist() == [[13.0] * 4, [1.0] * 4, [13.0] * 4]


@pytest.mark.parametrize("fn,want", [
    (lambda o: tp.sum(tp.ones(2, 3), 0, out=o), 6.0),
    (lambda o: tp.sum(tp.arange(6.0).reshape(2, 3), 0, out=o), 15.0),
    (lambda o: tp.nansum(tp.arange(6.0).reshape(2, 3), 0, out=o), 15.0),
    (lambda o: tp.amax(tp.arange(6.0).reshape(2, 3), 0, out=o), 5.0),
    (lambda o: tp.amin(tp.arange(6.0).reshape(2, 3), 0, out=o), 0.0),
    (lambda o: tp.prod(tp.arange(1.0, 7.0).reshape(2, 3), 0, out=o), 720.0),
], ids=["sum-ones", "sum", "nansum", "amax", "amin", "prod"])
def test_reduction_into_an_expanded_out_reduces_its_expanded_dims_too(fn, want):
    base = tp.zeros(1)
    o = base.expand(3)
    r = fn(o)
    assert r is o and o.tolist() == [want] * 3 and base.tolist() == [want]


def test_all_any_into_an_expanded_out():
    b = tp.tensor([[True, False, True], [True, True, True]])
    o = tp.zeros(1, dtype=tp.bool).expand(3)
    assert tp.all(b, 0, out=o).tolist() == [False] * 3
    assert tp.any(b, 0, out=tp.zeros(1, dtype=tp.bool).expand(3)).tolist() == [True] * 3


def test_sum_into_a_2d_expanded_out():
    o = tp.zeros(2, 1).expand(2, 3)
    tp.sum(tp.ones(2, 3, 4), -1, out=o)
    assert o.tolist() == [[12.0] * 3] * 2


@pytest.mark.parametrize("fn", [
    lambda: tp.add(tp.ones(1, 3), 1, out=tp.zeros(1, 3).expand(2, 3)),
    lambda: tp.add(tp.ones(3), 1, out=tp.zeros(1).expand(2)),
    lambda: tp.mul(tp.ones(3), 2, out=tp.zeros(1).expand(2)),
    lambda: tp.exp(tp.ones(3), out=tp.zeros(1).expand(2)),
], ids=["add-broadcast", "add-resize", "mul-resize", "exp-resize"])
def test_pointwise_out_expanded_is_refused_before_a_resize(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # (no resize warning: refused first)
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            fn()


@pytest.mark.parametrize("fn", [
    lambda o: tp.mean(tp.ones(2, 3), 0, out=o), lambda o: tp.cumsum(tp.ones(3), 0, out=o),
    lambda o: tp.logsumexp(tp.ones(2, 3), 0, out=o)], ids=["mean", "cumsum", "logsumexp"])
def test_non_reduction_kernels_refuse_an_expanded_out_as_torch(fn):
    o = tp.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        fn(o)
    assert o.tolist() == [0.0] * 3      # (torch's mean and logsumexp write their sum first)


def test_a_reduction_resizes_an_expanded_out_of_another_shape():
    o = tp.zeros(1).expand(3)
    with pytest.warns(UserWarning, match="resized"):
        tp.sum(tp.ones(2, 3), 0, keepdim=True, out=o)
    assert o.tolist() == [[2.0, 2.0, 2.0]]
