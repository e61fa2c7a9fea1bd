"""torch's index rules, op by op (session 52): the index dtypes each op takes, whether it counts
negative indices from the end, a 0-dim ``self``, and the exception classes (IndexError or
RuntimeError) of its refusals -- the same eagerly, under ``FakeTensorMode`` and under
``tensorplay.compile``, on cpu and on a NumPy stand-in for a GPU.

torch 2.13 (checked by hand): ``index_select``, ``gather``, the ``scatter`` family and
``index_add`` take int32 or int64; ``take``, ``put_`` and ``index_copy_`` int64 only
(RuntimeError), ``index_fill_`` int64 only (IndexError); advanced indexing (``x[idx]``,
``x[idx] = v``, ``index_put_``) takes int64, int32, bool and uint8, a uint8 index being a
boolean mask (deprecated, with a UserWarning); other dtypes are an IndexError there. Negative
indices: refused by ``index_select``, ``index_copy_``, ``index_add`` (IndexError) and by
``gather``/``scatter*`` (RuntimeError); ``index_fill_``, ``take``, ``put_`` and advanced indexing
take ``[-n, n)``. Expected values come from NumPy.
"""

from __future__ import annotations

import warnings

import pytest

import tensorplay as tp
from tensorplay import fake
from tensorplay.testing.backend import MockBackend

np = pytest.importorskip("numpy")

DEV = "standin52"
DTYPES = ["int64", "int32", "int16", "int8", "uint8", "bool", "float32"]
DEVICES = ["cpu", DEV]


@pytest.fixture(scope="module", autouse=True)
def be():
    with MockBackend(DEV, device_arrays=True) as b:
        yield b


def _idx(values, dtype, d="cpu"):
    return tp.tensor(values, dtype=getattr(tp, dtype), device=d)


def _ar(d, n=3):
    return tp.arange(float(n), device=d)


def _z(d, n=3):
    return tp.zeros(n, device=d)


def _v(values, d):
    return tp.tensor(values, dtype=tp.float32, device=d)


def _np_put(n, idx, vals):
    out = np.zeros(n, dtype=np.float32)
    out[np.asarray(idx)] = vals
    return out.tolist()


def _np_add(n, idx, vals):
    out = np.zeros(n, dtype=np.float32)
    np.add.at(out, np.asarray(idx), vals)
    return out.tolist()


I = [2, 0]                  # the index of the dtype table (bool: [True, False])
SRC = [7.0, 8.0]
_INTS = ("int64", "int32")
_LONG = ("int64",)

# op: (call(device, index), accepted dtypes, exception for the others, message fragment,
# expected value for an accepted index)
DTYPE_RULES = {
    "index_select": (lambda d, i: _ar(d).index_select(0, i), _INTS, RuntimeError,
                     "index_select", np.arange(3.0)[I].tolist()),
    "tp.index_select": (lambda d, i: tp.index_select(_ar(d), 0, i), _INTS, RuntimeError,
                        "index_select", np.arange(3.0)[I].tolist()),
    "gather": (lambda d, i: _ar(d).gather(0, i), _INTS, RuntimeError, "gather",
               np.arange(3.0)[I].tolist()),
    "take_along_dim": (lambda d, i: _ar(d).take_along_dim(i), _INTS, RuntimeError, "gather",
                       np.arange(3.0)[I].tolist()),
    "take_along_dim dim": (lambda d, i: _ar(d).take_along_dim(i, 0), _LONG, RuntimeError,
                           "take_along_dim", np.arange(3.0)[I].tolist()),
    "scatter value": (lambda d, i: _z(d).scatter(0, i, 5.0), _INTS, RuntimeError, "scatter",
                      _np_put(3, I, 5.0)),
    "scatter src": (lambda d, i: _z(d).scatter(0, i, _v(SRC, d)), _INTS, RuntimeError,
                    "scatter", _np_put(3, I, SRC)),
    "scatter_": (lambda d, i: _z(d).scatter_(0, i, 5.0), _INTS, RuntimeError, "scatter",
                 _np_put(3, I, 5.0)),
    "scatter reduce=add": (lambda d, i: _z(d).scatter(0, i, _v(SRC, d), reduce="add"), _INTS,
                           RuntimeError, "scatter", _np_add(3, I, SRC)),
    "scatter_add": (lambda d, i: _z(d).scatter_add(0, i, _v(SRC, d)), _INTS, RuntimeError,
                    "scatter_add", _np_add(3, I, SRC)),
    "scatter_reduce": (lambda d, i: _z(d).scatter_reduce(0, i, _v(SRC, d), "sum"), _INTS,
                       RuntimeError, "scatter_reduce", _np_add(3, I, SRC)),
    "scatter_reduce_ amax": (lambda d, i: _z(d).scatter_reduce_(0, i, _v(SRC, d), "amax"),
                             _INTS, RuntimeError, "scatter_reduce", _np_put(3, I, SRC)),
    "index_add": (lambda d, i: _z(d).index_add(0, i, _v(SRC, d)), _INTS, RuntimeError,
                  "index_add", _np_add(3, I, SRC)),
    "index_add_": (lambda d, i: _z(d).index_add_(0, i, _v(SRC, d)), _INTS, RuntimeError,
                   "index_add", _np_add(3, I, SRC)),
    "take": (lambda d, i: _ar(d).take(i), _LONG, RuntimeError, "take",
             np.arange(3.0)[I].tolist()),
    "tp.take": (lambda d, i: tp.take(_ar(d), i), _LONG, RuntimeError, "take",
                np.arange(3.0)[I].tolist()),
    "put_": (lambda d, i: _z(d).put_(i, _v(SRC, d)), _LONG, RuntimeError, "put_",
             _np_put(3, I, SRC)),
    "put_ accumulate": (lambda d, i: _z(d).put_(i, _v(SRC, d), accumulate=True), _LONG,
                        RuntimeError, "put_", _np_add(3, I, SRC)),
    "put": (lambda d, i: _z(d).put(i, _v(SRC, d)), _LONG, RuntimeError, "put_",
            _np_put(3, I, SRC)),
    "index_copy": (lambda d, i: _z(d).index_copy(0, i, _v(SRC, d)), _LONG, RuntimeError,
                   "index_copy_", _np_put(3, I, SRC)),
    "index_copy_": (lambda d, i: _z(d).index_copy_(0, i, _v(SRC, d)), _LONG, RuntimeError,
                    "index_copy_", _np_put(3, I, SRC)),
    "index_fill": (lambda d, i: _z(d).index_fill(0, i, 5.0), _LONG, IndexError, "index_fill_",
                   _np_put(3, I, 5.0)),
    "index_fill_": (lambda d, i: _z(d).index_fill_(0, i, 5.0), _LONG, IndexError,
                    "index_fill_", _np_put(3, I, 5.0)),
}


def _values(dtype):
    return [True, False] if dtype == "bool" else I


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(DTYPE_RULES))
@pytest.mark.parametrize("device", DEVICES)
def test_index_dtype_rule(op, dtype, device):
    fn, ok, exc, name, want = DTYPE_RULES[op]
    i = _idx(_values(dtype), dtype, device)
    if dtype in ok:
        assert fn(device, i).cpu().tolist() == want
        return
    with pytest.raises(exc, match=name) as e:
        fn(device, i)
    msg = str(e.value)
    assert "index.long()" in msg and dtype in msg, msg


# -- advanced indexing: int64, int32, bool, uint8 (a mask); others an IndexError --------------------
ADV = [2, 0, 1]     # as uint8 or bool: the mask [True, False, True]


def _get(d, i):
    return _ar(d)[i]


def _get2(d, i):
    return tp.arange(9.0, device=d).reshape(3, 3)[:, i]


def _set(d, i):
    x = _z(d)
    x[i] = _v([7.0, 8.0, 9.0], d) if i.dtype in (tp.int64, tp.int32) else _v([7.0, 9.0], d)
    return x


def _iput(d, i):
    v = _v([7.0, 8.0, 9.0], d) if i.dtype in (tp.int64, tp.int32) else _v([7.0, 9.0], d)
    return _z(d).index_put_((i,), v)


def _iput_acc(d, i):
    return _z(d).index_put_((i,), tp.tensor(5.0, device=d), accumulate=True)


_MASK = [True, False, True]
ADVANCED = {
    "x[idx]": (_get, np.arange(3.0)[ADV].tolist(), np.arange(3.0)[_MASK].tolist()),
    "x[:, idx]": (_get2, np.arange(9.0).reshape(3, 3)[:, ADV].tolist(),
                  np.arange(9.0).reshape(3, 3)[:, _MASK].tolist()),
    "x[idx] = v": (_set, _np_put(3, ADV, [7.0, 8.0, 9.0]), [7.0, 0.0, 9.0]),
    "index_put_": (_iput, _np_put(3, ADV, [7.0, 8.0, 9.0]), [7.0, 0.0, 9.0]),
    "index_put_ accumulate": (_iput_acc, _np_add(3, ADV, 5.0), [5.0, 0.0, 5.0]),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(ADVANCED))
@pytest.mark.parametrize("device", DEVICES)
def test_advanced_index_dtype_rule(op, dtype, device):
    fn, want_int, want_mask = ADVANCED[op]
    i = _idx(_MASK if dtype == "bool" else ADV, dtype, device)
    if dtype in ("int64", "int32"):
        assert fn(device, i).cpu().tolist() == want_int
    elif dtype == "bool":
        assert fn(device, i).cpu().tolist() == want_mask
    elif dtype == "uint8":
        # torch's deprecated byte mask: its nonzero positions, with a UserWarning
        with pytest.warns(UserWarning, match="uint8 is now deprecated"):
            got = fn(device, i)
        assert got.cpu().tolist() == want_mask
    else:
        with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte "
                                             "or bool tensors") as e:
            fn(device, i)
        assert "index.long()" in str(e.value) and dtype in str(e.value)


def test_uint8_index_is_a_mask_not_positions():
    # the silent wrong result: [1, 0, 1] read rows 1, 0, 1
    with pytest.warns(UserWarning):
        got = tp.arange(3.0)[tp.tensor([1, 0, 1], dtype=tp.uint8)]
    assert got.tolist() == [0.0, 2.0]
    with pytest.warns(UserWarning):
        got = tp.arange(4.0).reshape(2, 2)[tp.tensor([[1, 0], [0, 7]], dtype=tp.uint8)]
    assert got.tolist() == [0.0, 3.0]
    with pytest.warns(UserWarning), pytest.raises(IndexError, match="shape of the mask"):
        tp.arange(3.0)[tp.tensor([1, 0], dtype=tp.uint8)]
    # a 0-dim uint8 index is a 0-dim mask, as torch's
    assert tp.arange(3.0)[tp.tensor(1, dtype=tp.uint8)].shape == (1, 3)
    assert tp.arange(3.0)[tp.tensor(0, dtype=tp.uint8)].shape == (0, 3)
    # a 0-dim int8/int16 index is an int (torch)
    assert tp.arange(3.0)[tp.tensor(1, dtype=tp.int8)].item() == 1.0
    # with an integer index tensor beside it
    with pytest.warns(UserWarning):
        got = tp.arange(9.0).reshape(3, 3)[tp.tensor([1, 0, 1], dtype=tp.uint8), tp.tensor([0, 1])]
    assert got.tolist() == [0.0, 7.0]


@pytest.mark.parametrize("value", [1.0, "0-dim", "one element"])
def test_uint8_mask_with_one_value_is_refused_as_torch(value):
    # torch sends a one-element write through a byte or bool mask to masked_fill_, which
    # refuses a byte mask
    m = tp.tensor([1, 0, 1], dtype=tp.uint8)
    v = {"0-dim": tp.tensor(1.0), "one element": tp.tensor([1.0])}.get(value, value)
    x = tp.zeros(3)
    with pytest.raises(RuntimeError, match=r"uint8.*mask.bool\(\)"):
        x[m] = v
    with pytest.raises(RuntimeError, match=r"uint8.*mask.bool\(\)"):
        x.index_put_((m,), v if not isinstance(v, float) else tp.tensor(v))
    assert x.tolist() == [0.0, 0.0, 0.0]
    # accumulate takes it (torch)
    with pytest.warns(UserWarning):
        x.index_put_((m,), tp.tensor(5.0), accumulate=True)
    assert x.tolist() == [5.0, 0.0, 5.0]


# -- 0-dim self: one element along dim 0 (dim 0 or -1) -------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("index", [[0], 0])
def test_zero_dim_self(device, index):
    x = tp.tensor(5.0, device=device)
    i = tp.tensor(index, device=device)
    for dim in (0, -1):
        r = x.index_select(dim, i)
        assert r.shape == () and r.item() == 5.0
        r = x.index_add(dim, i, tp.tensor(1.0, device=device))
        assert r.shape == () and r.item() == 6.0
        r = x.index_fill(dim, i, 2.0)
        assert r.shape == () and r.item() == 2.0
        r = x.index_copy(dim, i, tp.tensor(1.0, device=device))
        assert r.shape == () and r.item() == 1.0
    assert x.item() == 5.0
    y = tp.tensor(5.0, device=device)
    assert y.index_fill_(0, i, 3.0) is y and y.item() == 3.0
    assert y.index_copy_(0, i, tp.tensor(4.0, device=device)).item() == 4.0
    assert y.index_add_(0, i, tp.tensor(1.0, device=device)).item() == 5.0


def test_zero_dim_self_neighbours():
    x = tp.tensor(5.0)
    e = tp.tensor([], dtype=tp.int64)
    # an empty index
    with pytest.raises(RuntimeError, match="index_select.*only 1 value, got 0"):
        x.index_select(0, e)
    assert x.index_fill(0, e, 2.0).item() == 5.0
    # several indices
    with pytest.raises(RuntimeError, match="index_select.*only 1 value, got 2"):
        x.index_select(0, tp.tensor([0, 0]))
    assert x.index_fill(0, tp.tensor([0, 0]), 2.0).item() == 2.0
    assert x.index_copy(0, tp.tensor([0, 0]), tp.tensor([1.0, 2.0])).item() in (1.0, 2.0)
    assert x.index_copy(0, tp.tensor([0]), tp.tensor([3.0])).item() == 3.0
    with pytest.raises(IndexError, match="index_copy_.*one element"):
        x.index_copy(0, tp.tensor([0, 0]), tp.tensor(1.0))
    with pytest.raises(RuntimeError, match="index_add"):
        x.index_add(0, tp.tensor([0]), tp.tensor([1.0]))
    # index 1 is out of range of the one element; -1 only where negatives count from the end
    for fn in (lambda i: x.index_select(0, i), lambda i: x.index_add(0, i, tp.tensor(1.0)),
               lambda i: x.index_copy(0, i, tp.tensor(1.0))):
        for bad in ([1], [-1]):
            with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 1"):
                fn(tp.tensor(bad))
    with pytest.raises(IndexError, match="index 1 is out of bounds for dimension 0 with size 1"):
        x.index_fill(0, tp.tensor([1]), 2.0)
    assert x.index_fill(0, tp.tensor([-1]), 2.0).item() == 2.0
    # dims other than 0 and -1
    for fn in (lambda: x.index_select(1, tp.tensor([0])),
               lambda: x.index_add(1, tp.tensor([0]), tp.tensor(1.0)),
               lambda: x.index_fill(1, tp.tensor([0]), 1.0),
               lambda: x.index_copy(1, tp.tensor([0]), tp.tensor(1.0))):
        with pytest.raises(IndexError, match="Dimension out of range"):
            fn()
    # a 0-dim index on a 1-D self (as torch: index_select's result is 1-D)
    assert tp.arange(3.0).index_select(0, tp.tensor(1)).tolist() == [1.0]
    # (index_add's source has self's dims: a 0-dim one into a 1-D self is refused, as torch's)
    with pytest.raises(RuntimeError, match="source tensor shape must match self tensor shape"):
        tp.zeros(3).index_add(0, tp.tensor(1), tp.tensor(2.0))
    assert tp.zeros(3).index_add(0, tp.tensor(1), tp.tensor([2.0])).tolist() == [0.0, 2.0, 0.0]


def test_zero_dim_self_backward():
    x = tp.tensor(5.0, requires_grad=True)
    x.index_select(0, tp.tensor([0])).mul(3.0).backward()
    assert x.grad.shape == () and x.grad.item() == 3.0
    x = tp.tensor(5.0, requires_grad=True)
    s = tp.tensor(2.0, requires_grad=True)
    x.index_add(0, tp.tensor([0]), s).mul(3.0).backward()
    assert x.grad.item() == 3.0 and s.grad.shape == () and s.grad.item() == 3.0
    x = tp.tensor(5.0, requires_grad=True)
    x.index_fill(0, tp.tensor([0]), 2.0).mul(3.0).backward()
    assert x.grad.item() == 0.0
    x = tp.tensor(5.0, requires_grad=True)
    s = tp.tensor(2.0, requires_grad=True)
    x.index_copy(0, tp.tensor([0]), s).mul(3.0).backward()
    assert x.grad.item() == 0.0 and s.grad.shape == () and s.grad.item() == 3.0


# -- negative indices ------------------------------------------------------------------------------
NEG_REFUSED = {
    "index_select": (lambda d, i: _ar(d).index_select(0, i), IndexError, "index_select"),
    "index_copy": (lambda d, i: _z(d).index_copy(0, i, _v([1.0], d)), IndexError,
                   "index_copy_"),
    "index_copy_": (lambda d, i: _z(d).index_copy_(0, i, _v([1.0], d)), IndexError,
                    "index_copy_"),
    "index_add": (lambda d, i: _z(d).index_add(0, i, _v([1.0], d)), IndexError, "index_add"),
    "index_add_": (lambda d, i: _z(d).index_add_(0, i, _v([1.0], d)), IndexError, "index_add"),
    "gather": (lambda d, i: _ar(d).gather(0, i), RuntimeError, "gather"),
    "scatter": (lambda d, i: _z(d).scatter(0, i, 1.0), RuntimeError, "scatter"),
    "scatter_add": (lambda d, i: _z(d).scatter_add(0, i, _v([1.0], d)), RuntimeError,
                    "scatter_add"),
    # (sum and mean are scatter_add's: its range check names it)
    "scatter_reduce": (lambda d, i: _z(d).scatter_reduce(0, i, _v([1.0], d), "sum"),
                       RuntimeError, "scatter"),
    "scatter_reduce amax": (lambda d, i: _z(d).scatter_reduce(0, i, _v([1.0], d), "amax"),
                            RuntimeError, "scatter_reduce"),
}


@pytest.mark.parametrize("neg", [-1, -3])
@pytest.mark.parametrize("op", list(NEG_REFUSED))
@pytest.mark.parametrize("device", DEVICES)
def test_negative_index_refused(op, neg, device):
    fn, exc, name = NEG_REFUSED[op]
    with pytest.raises(exc, match=f"{name}.*index {neg} is out of bounds for dimension 0 "
                                  f"with size 3"):
        fn(device, tp.tensor([neg], device=device))


NEG_TAKEN = {
    "index_fill": (lambda d, i: _z(d).index_fill(0, i, 1.0), lambda k: _np_put(3, [k], 1.0)),
    "take": (lambda d, i: _ar(d).take(i), lambda k: [np.arange(3.0)[k]]),
    "put_": (lambda d, i: _z(d).put_(i, _v([1.0], d)), lambda k: _np_put(3, [k], 1.0)),
    "put_ accumulate": (lambda d, i: _z(d).put_(i, _v([1.0], d), accumulate=True),
                        lambda k: _np_put(3, [k], 1.0)),
    "x[idx]": (lambda d, i: _ar(d)[i], lambda k: [np.arange(3.0)[k]]),
    "index_put_": (lambda d, i: _z(d).index_put_((i,), tp.tensor(1.0, device=d)),
                   lambda k: _np_put(3, [k], 1.0)),
}


@pytest.mark.parametrize("op", list(NEG_TAKEN))
@pytest.mark.parametrize("device", DEVICES)
def test_negative_index_counts_from_the_end(op, device):
    fn, want = NEG_TAKEN[op]
    for k in (-1, -3):
        assert fn(device, tp.tensor([k], device=device)).cpu().tolist() == want(k)
    with pytest.raises(IndexError, match="-4"):
        fn(device, tp.tensor([-4], device=device))


def test_backward_through_negative_indices():
    w = tp.tensor([1.0, 2.0])
    x = tp.arange(3.0, requires_grad=True)
    (x[tp.tensor([-1, 0])] * w).sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 1.0]
    x = tp.arange(3.0, requires_grad=True)
    (x.take(tp.tensor([-1, 0])) * w).sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 1.0]
    x = tp.arange(3.0, requires_grad=True)
    (x.index_fill(0, tp.tensor([-1]), 0.0) * tp.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 0.0]


# -- int32 indices through backward ----------------------------------------------------------------
def _i32(v):
    return tp.tensor(v, dtype=tp.int32)


W3 = [1.0, 2.0, 3.0]
INT32_GRADS = {
    # name: (fn(x, s), grad of x, grad of s) -- values from NumPy
    "index_select": (lambda x, s: x.index_select(0, _i32([2, 0, 2])) * tp.tensor(W3),
                     [2.0, 0.0, 4.0], None),
    "gather": (lambda x, s: x.gather(0, _i32([2, 0, 2])) * tp.tensor(W3), [2.0, 0.0, 4.0], None),
    "x[idx]": (lambda x, s: x[_i32([2, 0, 2])] * tp.tensor(W3), [2.0, 0.0, 4.0], None),
    "x[i, j]": (lambda x, s: x.reshape(1, 3)[_i32([0, 0, 0]), _i32([2, 0, 2])] * tp.tensor(W3),
                [2.0, 0.0, 4.0], None),
    "index_add": (lambda x, s: x.index_add(0, _i32([2, 0]), s) * tp.tensor(W3),
                  [1.0, 2.0, 3.0], [3.0, 1.0]),
    "scatter": (lambda x, s: x.scatter(0, _i32([2, 0]), s) * tp.tensor(W3),
                [0.0, 2.0, 0.0], [3.0, 1.0]),
    "scatter_add": (lambda x, s: x.scatter_add(0, _i32([2, 0]), s) * tp.tensor(W3),
                    [1.0, 2.0, 3.0], [3.0, 1.0]),
    "scatter_reduce": (lambda x, s: x.scatter_reduce(0, _i32([2, 0]), s, "sum") * tp.tensor(W3),
                       [1.0, 2.0, 3.0], [3.0, 1.0]),
}


@pytest.mark.parametrize("op", list(INT32_GRADS))
def test_int32_index_backward(op):
    fn, gx, gs = INT32_GRADS[op]
    x = tp.arange(3.0, requires_grad=True)
    s = tp.ones(2, requires_grad=True)
    fn(x, s).sum().backward()
    assert x.grad.tolist() == gx
    assert (s.grad.tolist() if s.grad is not None else None) == gs


# -- the same refusals on fake tensors and under tensorplay.compile ----------------------------------
REFUSED = {
    "index_select int8": (lambda x, i: x.index_select(0, i), "int8", RuntimeError,
                          "index_select"),
    "gather float32": (lambda x, i: x.gather(0, i), "float32", RuntimeError, "gather"),
    "scatter float32": (lambda x, i: x.scatter(0, i, 1.0), "float32", RuntimeError, "scatter"),
    "scatter_add uint8": (lambda x, i: x.scatter_add(0, i, x[:2]), "uint8", RuntimeError,
                          "scatter_add"),
    "scatter_reduce int16": (lambda x, i: x.scatter_reduce(0, i, x[:2], "sum"), "int16",
                             RuntimeError, "scatter_reduce"),
    "index_add int8": (lambda x, i: x.index_add(0, i, x[:2]), "int8", RuntimeError, "index_add"),
    "take int32": (lambda x, i: x.take(i), "int32", RuntimeError, "take"),
    "put_ int32": (lambda x, i: x.clone().put_(i, x[:2]), "int32", RuntimeError, "put_"),
    "index_copy int32": (lambda x, i: x.index_copy(0, i, x[:2]), "int32", RuntimeError,
                         "index_copy_"),
    "index_fill int32": (lambda x, i: x.index_fill(0, i, 1.0), "int32", IndexError,
                         "index_fill_"),
    "x[int16]": (lambda x, i: x[i], "int16", IndexError, "tensors used as indices"),
    "x[int8] = v": (lambda x, i: x.clone().__setitem__(i, 1.0), "int8", IndexError,
                    "tensors used as indices"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_on_fake_tensors(case):
    fn, dtype, exc, name = REFUSED[case]
    x = fake.from_real(tp.arange(3.0))
    i = fake.from_real(_idx(I, dtype))
    with pytest.raises(exc, match=name):
        fn(x, i)
    with fake.FakeTensorMode(), pytest.raises(exc, match=name):
        fn(tp.zeros(3), tp.zeros(2, dtype=getattr(tp, dtype)))


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_under_compile(case):
    fn, dtype, exc, name = REFUSED[case]
    with pytest.raises(exc, match=name):
        tp.compile(fn)(tp.arange(3.0), _idx(I, dtype))


def test_accepted_int32_under_compile_and_fake():
    f = tp.compile(lambda x, i: x.index_select(0, i) + x.gather(0, i) + x[i])
    assert f(tp.arange(3.0), _i32([2, 0])).tolist() == [6.0, 0.0]
    x = fake.from_real(tp.arange(3.0))
    assert x.scatter_reduce(0, fake.from_real(_i32([2, 0])), x[:2], "sum").shape == (3,)
    assert x.index_add(0, fake.from_real(_i32([2, 0])), x[:2]).shape == (3,)


def test_negative_refused_under_compile():
    with pytest.raises(IndexError, match="index_select.*index -1 is out of bounds"):
        tp.compile(lambda x, i: x.index_select(0, i))(tp.arange(3.0), tp.tensor([-1]))
    with pytest.raises(IndexError, match="index_copy_.*index -1 is out of bounds"):
        tp.compile(lambda x, i: x.index_copy(0, i, x[:1]))(tp.arange(3.0), tp.tensor([-1]))
    f = tp.compile(lambda x, i: x.index_fill(0, i, 9.0))
    assert f(tp.arange(3.0), tp.tensor([-1])).tolist() == [0.0, 1.0, 9.0]


def test_zero_dim_self_on_fake_tensors():
    x = fake.from_real(tp.tensor(5.0))
    i = fake.from_real(tp.tensor([0]))
    assert x.index_select(0, i).shape == ()
    assert x.index_add(0, i, fake.from_real(tp.tensor(1.0))).shape == ()
    assert x.index_fill(0, i, 2.0).shape == ()
    assert x.index_copy(0, i, fake.from_real(tp.tensor(1.0))).shape == ()


def test_no_warning_for_int_and_bool_indices():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.arange(3.0)[tp.tensor([True, False, True])]
        tp.arange(3.0)[_i32([1])]
