"""torch's everyday tensor surface (issue 29 §3): copy, pickle, format, advanced indexing, and
the methods/functions the issue probed. Values are compared with NumPy."""

import copy
import pickle

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.fake import FakeTensorMode


def _np(t):
    return t.detach().numpy()


# -- copy.deepcopy ------------------------------------------------------------------------------
def test_deepcopy_copies_values_dtype_and_leaf_state():
    for dt in (tp.float32, tp.float64, tp.int64, tp.bool, tp.bfloat16, tp.float16):
        x = tp.tensor([[1, 0], [3, 4]]).to(dt)
        y = copy.deepcopy(x)
        assert y.dtype is dt and y.shape == x.shape and y.device == x.device
        np.testing.assert_array_equal(_np(y.float()), _np(x.float()))
        y[0, 0] = 7     # a copy, not an alias
        assert x[0, 0].item() == 1


def test_deepcopy_requires_grad_and_grad():
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    c = copy.deepcopy(w)
    assert c.requires_grad and c.is_leaf and c.grad_fn is None
    np.testing.assert_array_equal(_np(c.grad), [2.0, 4.0])
    assert c.grad is not w.grad
    (c * 3).sum().backward()      # the copy is a leaf of its own
    np.testing.assert_array_equal(_np(c.grad), [5.0, 7.0])
    np.testing.assert_array_equal(_np(w.grad), [2.0, 4.0])


def test_deepcopy_keeps_shared_identity_in_containers():
    x = tp.ones(3)
    a, b = copy.deepcopy([x, x])
    assert a is b and a is not x


def test_deepcopy_of_non_leaf_is_refused_as_torch():
    w = tp.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(w * 2)


# -- pickle -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "int32", "bool", "bfloat16",
                                "float16", "uint8"])
def test_pickle_roundtrip_by_value(dt):
    dtype = getattr(tp, dt)
    x = tp.arange(6).reshape(2, 3).to(dtype)
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype is dtype and y.shape == (2, 3) and y.device == x.device
    np.testing.assert_array_equal(_np(y.float()), _np(x.float()))


def test_pickle_views_and_requires_grad():
    base = tp.arange(12.0).reshape(3, 4)
    v = base[:, 1::2].t()
    y = pickle.loads(pickle.dumps(v))
    np.testing.assert_array_equal(_np(y), _np(v))
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    z = pickle.loads(pickle.dumps(w))
    assert z.requires_grad and z.is_leaf
    obj = pickle.loads(pickle.dumps({"w": w, "n": 3}))
    np.testing.assert_array_equal(_np(obj["w"]), [1.0, 2.0])


def test_pickle_fake_or_meta_is_refused_clearly():
    m = tp.empty(2, 3, device="meta")
    with pytest.raises(RuntimeError, match="pickle.*meta"):
        pickle.dumps(m)
    with FakeTensorMode():
        f = tp.empty(2)
        with pytest.raises(RuntimeError, match="pickle"):
            pickle.dumps(f)


# -- format -------------------------------------------------------------------------------------
def test_format_zero_dim_uses_the_spec():
    assert f"{tp.tensor(3.14159):.2f}" == "3.14"
    assert format(tp.tensor(7), "04d") == "0007"
    assert f"{tp.tensor(True)}" == "True"
    assert f"{tp.tensor(2.5):>6}" == "   2.5"


def test_format_other_tensors():
    t = tp.tensor([1.0, 2.0])
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match="format"):
        f"{t:.2f}"


# -- advanced indexing --------------------------------------------------------------------------
def _idx_cases():
    a = np.arange(3 * 4 * 5 * 2, dtype=np.float64).reshape(3, 4, 5, 2)
    return a, [
        ([0, 2],),
        (np.array([1, 0, 2]),),
        ([0, 1], [1, 0]),
        (np.array([[0, 1], [2, 2]]), np.array([1, 3])),
        (slice(None), [0, 3], [4, 1]),            # adjacent after a slice: stays in place
        ([0, 2], slice(None), [1, 4]),            # separated: result dims go first
        (slice(None), [0, 3], slice(1, 4), [1, 0]),
        (Ellipsis, [1, 0], [0, 1]),
        ([-1, 0], [-2, 3]),
        (None, [0, 1], [1, 2]),
        (np.array([True, False, True]), [1, 3]),  # bool mask + int array
        (np.array([[True, False, True, False]] * 3), [0, 1, 1, 0, 1, 0]),
        (np.int64(2), [1, 1]),
    ]


def test_advanced_indexing_matches_numpy():
    a, cases = _idx_cases()
    t = tp.tensor(a)
    for idx in cases:
        tidx = tuple(tp.tensor(i) if isinstance(i, list) and len(i) > 4 else i for i in idx)
        expect = a[idx]
        got = t[tidx if len(tidx) > 1 else tidx[0]]
        assert got.shape == expect.shape, idx
        np.testing.assert_array_equal(_np(got), expect, err_msg=str(idx))


def test_ints_are_selects_before_advanced_indexing_as_torch():
    # torch applies an int index as select first (NumPy would broadcast it with the arrays)
    a = np.arange(3 * 4 * 5 * 2).reshape(3, 4, 5, 2)
    t = tp.tensor(a)
    got = t[1, :, [0, 2]]
    assert got.shape == (4, 2, 2)
    np.testing.assert_array_equal(_np(got), a[1][:, [0, 2]])
    got = t[[0, 1], 2, [3, 4]]
    np.testing.assert_array_equal(_np(got), a[:, 2][[0, 1], [3, 4]])


def test_advanced_indexing_with_index_tensors():
    a = np.arange(12).reshape(3, 4)
    t = tp.tensor(a)
    i, j = tp.tensor([0, 2, 1]), tp.tensor([3, 0, 1])
    np.testing.assert_array_equal(_np(t[i, j]), a[[0, 2, 1], [3, 0, 1]])
    np.testing.assert_array_equal(_np(t[i[:, None], j]), a[np.array([0, 2, 1])[:, None],
                                                             [3, 0, 1]])


def test_advanced_indexing_errors():
    t = tp.zeros(3, 4)
    with pytest.raises(IndexError):
        t[[0, 3], [0, 1]]
    with pytest.raises(IndexError, match="shape mismatch"):
        t[[0, 1], [0, 1, 2]]


def test_advanced_indexing_backward_accumulates_repeats():
    a = np.arange(12.0).reshape(3, 4)
    x = tp.tensor(a, requires_grad=True)
    w = np.array([1.0, 2.0, 3.0])
    (x[[0, 2, 0], [1, 3, 1]] * tp.tensor(w)).sum().backward()
    g = np.zeros_like(a)
    np.add.at(g, ([0, 2, 0], [1, 3, 1]), w)
    np.testing.assert_array_equal(_np(x.grad), g)
    x.grad = None
    x[:, [0, 2]].sum().backward()
    g = np.zeros_like(a)
    g[:, [0, 2]] = 1
    np.testing.assert_array_equal(_np(x.grad), g)


def test_advanced_indexing_under_fake_mode_gives_shapes():
    with FakeTensorMode():
        t = tp.empty(3, 4, 5)
        i = tp.zeros(2, dtype=tp.int64)
        assert t[i, :, i].shape == (2, 4)
        assert t[:, i, i].shape == (3, 2)
