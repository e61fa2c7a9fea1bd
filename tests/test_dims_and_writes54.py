"""torch's argument rules for a reduction's ``dim`` and two write rules, each checked against
torch 2.13 (cpu) running the same calls:

* a 0-dim integer tensor (or a NumPy integer) is taken as a ``dim`` wherever an int is, in an
  int list too (torch's argument parser calls ``__index__``): ``x.sum(tensor(0))``,
  ``x.std(tensor(1))``, ``linalg.norm(x, dim=tensor(1))``;
* a ``dim`` that is not an int (``x.sum(0.5)``) is a TypeError (torch's class; the wording is
  ours, torch lists its overloads) naming the op and ``dim`` (was
  Python's "'float' object is not iterable"), for ``var``/``std`` naming them (was ``mean``);
* ``index_put_`` on a 0-dim tensor is torch's IndexError "too many indices for tensor of
  dimension 0 (got 1)" whatever the index (a 0-dim bool tensor wrote before);
* ``masked_fill_`` on an expanded tensor warns as torch ("Use of masked_fill_ on expanded
  tensors is deprecated") and still writes.
"""

import re
import warnings

import numpy as np
import pytest

import tensorplay as tp

X = [[1.0, 5.0, 2.0], [3.0, 2.0, 4.0]]


def _x():
    return tp.tensor(X)


# (call, the same call with the dim as a plain int)
TENSOR_DIMS = [
    ("sum", lambda x, d: x.sum(d), lambda x: x.sum(0)),
    ("sum list", lambda x, d: x.sum([d, 1]), lambda x: x.sum([0, 1])),
    ("mean", lambda x, d: x.mean(d), lambda x: x.mean(0)),
    ("tp.sum", lambda x, d: tp.sum(x, d), lambda x: tp.sum(x, 0)),
    ("amax", lambda x, d: x.amax(d), lambda x: x.amax(0)),
    ("amin", lambda x, d: x.amin(d), lambda x: x.amin(0)),
    ("prod", lambda x, d: x.prod(d), lambda x: x.prod(0)),
    ("nansum", lambda x, d: x.nansum(d), lambda x: x.nansum(0)),
    ("count_nonzero", lambda x, d: x.count_nonzero(d), lambda x: x.count_nonzero(0)),
    ("std", lambda x, d: x.std(d), lambda x: x.std(0)),
    ("var", lambda x, d: x.var(d), lambda x: x.var(0)),
    ("logsumexp", lambda x, d: x.logsumexp(d), lambda x: x.logsumexp(0)),
    ("linalg.norm", lambda x, d: tp.linalg.norm(x, dim=d), lambda x: tp.linalg.norm(x, dim=0)),
    ("linalg.vector_norm", lambda x, d: tp.linalg.vector_norm(x, dim=d),
     lambda x: tp.linalg.vector_norm(x, dim=0)),
    ("all", lambda x, d: (x > 1).all(d), lambda x: (x > 1).all(0)),
    ("any", lambda x, d: (x > 4).any(d), lambda x: (x > 4).any(0)),
]


@pytest.mark.parametrize("name, call, plain", TENSOR_DIMS, ids=[c[0] for c in TENSOR_DIMS])
@pytest.mark.parametrize("dim", [lambda: tp.tensor(0), lambda: np.int64(0)],
                         ids=["0-dim tensor", "numpy int"])
def test_index_like_dim_is_taken_as_the_int(name, call, plain, dim):
    got, want = call(_x(), dim()), plain(_x())
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want.tolist()), rtol=1e-6)


def test_a_float_tensor_dim_is_a_type_error():
    # torch: TypeError too ("invalid combination of arguments"); ours names the op and the
    # type, as torch's parser does for amax's int list ("amax(): argument 'dim' (position 1)
    # must be tuple of ints, not Tensor"; session 55: sum's dim is a list, not an int)
    with pytest.raises(TypeError, match=r"sum\(\): argument 'dim' must be tuple of ints, not Tensor"):
        _x().sum(tp.tensor(0.0))


NON_INT_DIMS = [
    ("sum", lambda x: x.sum(0.5), "float"),
    ("mean", lambda x: x.mean(0.5), "float"),
    ("amax", lambda x: x.amax(0.5), "float"),
    ("sum", lambda x: x.sum("a"), "str"),
    ("sum", lambda x: x.sum({0}), "set"),
    ("var", lambda x: x.var(0.5), "float"),
    ("std", lambda x: x.std((0.5,)), "float"),
    ("var_mean", lambda x: tp.var_mean(x, (1, "a")), "str"),
]


@pytest.mark.parametrize("api, call, kind", NON_INT_DIMS,
                         ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(NON_INT_DIMS)])
def test_non_int_dim_is_a_type_error_naming_the_op(api, call, kind):
    # (a lone non-int: "not float", as torch's "amax(): argument 'dim' (position 1) must be tuple
    # of ints, not float"; in a list: "but found element of type float")
    with pytest.raises(TypeError, match=re.escape(f"{api}(): argument 'dim' must be tuple of "
                                                  f"ints, ") + f"(but found element of type "
                                                  f"{kind}|not {kind})"):
        call(_x())


@pytest.mark.parametrize("index", [
    lambda: (tp.tensor(True),), lambda: (tp.tensor(False),), lambda: (tp.tensor([True]),),
    lambda: (tp.tensor(0),)], ids=["0-dim True", "0-dim False", "1-dim bool", "0-dim int"])
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_on_a_0_dim_tensor_is_an_index_error(index, accumulate):
    x = tp.tensor(1.0)
    with pytest.raises(IndexError, match=re.escape("too many indices for tensor of dimension 0 "
                                                   "(got 1)")):
        x.index_put_(index(), tp.tensor(5.0), accumulate)
    assert x.item() == 1.0 and x._version == 0


def test_setitem_of_a_0_dim_tensor_with_a_0_dim_bool_still_writes():
    x = tp.tensor(1.0)
    x[tp.tensor(True)] = 7.0
    assert x.item() == 7.0


def test_masked_fill_on_an_expanded_tensor_warns_and_writes():
    base = tp.zeros(1)
    with pytest.warns(UserWarning, match=r"Use of masked_fill_ on expanded tensors is "
                                         r"deprecated\. Please clone\(\) the tensor"):
        base.expand(3).masked_fill_(tp.tensor([True, False, False]), 1.0)
    assert base.tolist() == [1.0]


def test_masked_fill_on_a_plain_tensor_does_not_warn():
    x = tp.zeros(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.masked_fill_(tp.tensor([True, False, True]), 2.0)
    assert x.tolist() == [2.0, 0.0, 2.0]


@pytest.mark.parametrize("call", [lambda x: x.logsumexp(None), lambda x: tp.logsumexp(x, None),
                                  lambda x: tp.logsumexp(x, None, True)])
def test_logsumexp_dim_none_stays_torchs_type_error(call):
    # torch's logsumexp has no all-dims overload (dim=[] reduces every dim); dim_list's None
    # must not turn into one (CI's torch comparison caught it)
    with pytest.raises(TypeError, match=r"logsumexp\(\): argument 'dim' must be tuple of ints, "
                                        r"not NoneType"):
        call(tp.ones(2, 3))
