"""Index bounds checks read the device once per op, not twice per index tensor.

On a GPU every host read of a device value (``.item()``, ``int()``, ``.tolist()``) is a copy
that waits for all the work queued before it: the pipeline drains, and the host then queues the
rest of the op with the GPU idle. Advanced indexing (``x[idx]``, ``x[i, j]``, ``x[idx] = v``),
``gather``, the ``scatter`` family, ``index_select`` and ``searchsorted``'s ``sorter`` checked
their indices with one read for the smallest index and another for the largest, per index
tensor (``x[i, j]``: four waits). torch's cuda kernels check bounds on the device; here the
bounds are still read (the error is raised by the op itself, naming the index), but the extremes
of every index tensor of one op come back in a single read.

Run on ``MockBackend(device_arrays=True)`` (the kernels' device branch; ``host_reads`` counts the
reads), with the errors compared to cpu's: each bad index is still named, low or high.
"""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay.testing.backend import MockBackend

np = pytest.importorskip("numpy")

DEV = "standin51"


@pytest.fixture(scope="module")
def be():
    with MockBackend(DEV, device_arrays=True) as b:
        yield b


def _reads(be, fn):
    be.reset()
    r = fn()
    n = len(be.host_reads)
    return r, n


def _x(device, shape=(4, 5)):
    return tp.arange(float(np.prod(shape)), device=device).reshape(shape)


def _i(values, device):
    return tp.tensor(values, dtype=tp.int64, device=device)


CASES = {
    "x[idx]": lambda d: _x(d)[_i([0, 3, -1], d)],
    "x[i, j]": lambda d: _x(d)[_i([0, 3, -1], d), _i([4, 0, 2], d)],
    "x[:, j]": lambda d: _x(d)[:, _i([[4, 0], [1, -5]], d)],
    "x[idx] = v": lambda d: _x(d).index_put_((_i([1, 2], d),), tp.tensor(7.0, device=d)),
    "gather": lambda d: tp.gather(_x(d), 1, _i([[0, 4], [3, 3], [1, 0], [2, 2]], d)),
    "scatter": lambda d: tp.zeros(4, 5, device=d).scatter(1, _i([[0, 4], [3, 3]], d),
                                                           tp.ones(2, 2, device=d)),
    "scatter_add": lambda d: tp.zeros(4, 5, device=d).scatter_add(
        0, _i([[0, 3, 1]], d), tp.ones(1, 3, device=d)),
    "scatter_reduce": lambda d: tp.zeros(4, 5, device=d).scatter_reduce(
        1, _i([[0, 4], [3, 3]], d), tp.ones(2, 2, device=d), "amax"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_one_read_per_op_and_the_cpu_result(be, name):
    fn = CASES[name]
    got, n = _reads(be, lambda: fn(DEV))
    want = fn("cpu")
    assert got.cpu().tolist() == want.tolist()
    # x[i, j]: one read for both index tensors, one by the index kernel on the linear index
    assert n <= (2 if name == "x[i, j]" else 1), f"{name} read the device {n} times: {be.host_reads}"


def test_index_select_of_an_empty_result_reads_once(be):
    # an empty result checks every index anyway (as torch); both extremes in one read
    _, n = _reads(be, lambda: tp.index_select(tp.zeros(3, 0, device=DEV), 0, _i([2, 0], DEV)))
    assert n <= 1, be.host_reads
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        tp.index_select(tp.zeros(3, 0, device=DEV), 0, _i([5, 0], DEV))


def test_searchsorted_sorter_check_reads_once(be):
    seq = tp.tensor([3.0, 1.0, 2.0], device=DEV)
    got, n = _reads(be, lambda: tp.searchsorted(seq, tp.tensor([2.5], device=DEV),
                                                sorter=_i([1, 2, 0], DEV)))
    assert got.cpu().tolist() == [2] and n <= 1, be.host_reads
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        tp.searchsorted(seq, tp.tensor([2.5], device=DEV), sorter=_i([1, 3, 0], DEV))


BAD = {
    "x[idx] high": (lambda d: _x(d)[_i([0, 4], d)], IndexError, "index 4 is out of bounds"),
    "x[idx] low": (lambda d: _x(d)[_i([0, -5], d)], IndexError, "index -5 is out of bounds"),
    "x[i, j] second": (lambda d: _x(d)[_i([0, 1], d), _i([5, 0], d)], IndexError,
                       "index 5 is out of bounds for dimension 1 with size 5"),
    "x[i, j] both bad: the first dim named": (
        lambda d: _x(d)[_i([9, 1], d), _i([5, 0], d)], IndexError,
        "index 9 is out of bounds for dimension 0 with size 4"),
    "gather high": (lambda d: tp.gather(_x(d), 1, _i([[0, 5]], d)), RuntimeError,
                    r"gather\(\): index 5 is out of bounds for dimension 1 with size 5"),
    "gather low": (lambda d: tp.gather(_x(d), 0, _i([[-1, 0]], d)), RuntimeError,
                   r"gather\(\): index -1 is out of bounds for dimension 0 with size 4"),
    "scatter_add high": (lambda d: tp.zeros(4, 5, device=d).scatter_add(
        0, _i([[0, 4]], d), tp.ones(1, 2, device=d)), RuntimeError,
        "index 4 is out of bounds for dimension 0 with size 4"),
}


# what CuPy's take, scatter and add.at would wrap modulo n (no error, another element read or
# written), and NumPy's take or setitem a second time (a negative index of one lap too many)
BAD.update({
    "x[idx] one past": (lambda d: _x(d)[_i([4], d)], IndexError, "index 4 is out of bounds"),
    "x[:, idx] low": (lambda d: _x(d)[:, _i([-6], d)], IndexError,
                      "index -6 is out of bounds for dimension 1 with size 5"),
    "x[idx] = v": (lambda d: _x(d).__setitem__(_i([4], d), 1.0), IndexError,
                   "index 4 is out of bounds for dimension 0 with size 4"),
    "index_put_ low": (lambda d: _x(d).index_put_((_i([-5], d),), tp.tensor(1.0, device=d)),
                       IndexError, "index -5 is out of bounds for dimension 0 with size 4"),
    # (RuntimeError, torch's class for an int64 index into 2 or more dims; IndexError for a 1-D
    # self or an int32 index: tests/test_index_accumulate52.py)
    "index_add_ high": (lambda d: _x(d).index_add_(0, _i([4], d), tp.ones(1, 5, device=d)),
                        RuntimeError, "index 4 is out of bounds for dimension 0 with size 4"),
    "index_add_ negative (torch refuses it)": (
        lambda d: _x(d).index_add_(0, _i([-1], d), tp.ones(1, 5, device=d)), RuntimeError,
        "index -1 is out of bounds for dimension 0 with size 4"),
    "index_fill_ high": (lambda d: _x(d).index_fill_(1, _i([5], d), 2.0), IndexError,
                         "index 5 is out of bounds for dimension 1 with size 5"),
    "index_select high": (lambda d: tp.index_select(_x(d), 0, _i([4], d)), IndexError,
                          "index 4 is out of bounds"),
    "take high": (lambda d: tp.take(_x(d), _i([20], d)), IndexError, "index 20 is out of bounds"),
    "take low": (lambda d: tp.take(_x(d), _i([-21], d)), IndexError,
                 "index -21 is out of bounds"),
    "put_ high": (lambda d: _x(d).put_(_i([20], d), tp.ones(1, device=d)), IndexError,
                  "index 20 is out of bounds"),
    "index_put_ accumulate high": (
        lambda d: _x(d).index_put_((_i([4], d),), tp.tensor(1.0, device=d), accumulate=True),
        IndexError, "index 4 is out of bounds for dimension 0 with size 4"),
    "index_put_ accumulate low, named as given": (
        lambda d: _x(d).index_put_((_i([0], d), _i([-6], d)), tp.tensor(1.0, device=d),
                                   accumulate=True),
        IndexError, "index -6 is out of bounds for dimension 1 with size 5"),
})

DEVICES = ["cpu", DEV, pytest.param("cuda", marks=pytest.mark.cuda)]


def _need(device):
    if device == "cuda":
        ok, why = tp.plugins.device_status("cuda")
        if not ok:
            pytest.skip(f"cuda unavailable: {why}")


@pytest.mark.parametrize("name", list(BAD))
@pytest.mark.parametrize("device", DEVICES)
def test_a_bad_index_is_refused_and_named(be, name, device):
    _need(device)
    fn, exc, msg = BAD[name]
    with pytest.raises(exc, match=msg):
        fn(device)


GOOD = {
    "x[-4]": lambda d: _x(d)[_i([-4, 3], d)],
    "x[:, -5]": lambda d: _x(d)[:, _i([-5, 4], d)],
    "x[i, j] negative": lambda d: _x(d)[_i([-1, 0], d), _i([-5, 4], d)],
    "setitem -4": lambda d: _x(d).index_put_((_i([-4], d),), tp.tensor(9.0, device=d)),
    "take -20": lambda d: tp.take(_x(d), _i([-20, 19], d)),
    "index_add_ 3": lambda d: _x(d).index_add_(0, _i([3, 3], d), tp.ones(2, 5, device=d)),
    "bincount": lambda d: _i([0, 3, 3, 1], d).bincount(),
    "accumulate -4": lambda d: _x(d).index_put_((_i([-4, 3, -4], d),), tp.tensor(1.0, device=d),
                                                accumulate=True),
}


@pytest.mark.parametrize("name", list(GOOD))
@pytest.mark.parametrize("device", DEVICES)
def test_the_edges_of_the_range_still_work(be, name, device):
    _need(device)
    assert GOOD[name](device).cpu().tolist() == GOOD[name]("cpu").tolist()


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_through_negative_indices(be, device):
    # the index's backward adds the gradient at the indices it read, negative ones from the end
    # (index_add itself takes no negative index, as torch's)
    _need(device)
    got = []
    for d in ("cpu", device):
        x = _x(d).requires_grad_(True)
        (x[_i([-1, 0, -1], d)] * 2).sum().backward()
        f = tp.arange(20.0, device=d).requires_grad_(True)
        tp.take(f, _i([[-1, 3], [-20, -1]], d)).sum().backward()
        got.append((x.grad.cpu().tolist(), f.grad.cpu().tolist()))
    assert got[0] == got[1]
    assert got[0][0][3] == [4.0] * 5 and got[0][0][0] == [2.0] * 5
    assert got[0][1][19] == 2.0 and got[0][1][0] == 1.0 and got[0][1][3] == 1.0


NEG_DIM = {
    "index_select": lambda d: _x(d).index_select(-1, _i([0, 4], d)),
    "index_fill": lambda d: _x(d).index_fill(-1, _i([0, 2], d), -1.0),
    "index_fill -2 of 3-D": lambda d: tp.arange(24.0, device=d).reshape(2, 3, 4).index_fill(
        -2, _i([1], d), -1.0),
    "index_add": lambda d: _x(d).index_add(-1, _i([0, 3], d), tp.ones(4, 2, device=d)),
    "index_copy": lambda d: _x(d).index_copy(-1, _i([0, 3], d), tp.ones(4, 2, device=d)),
}


@pytest.mark.parametrize("name", list(NEG_DIM))
@pytest.mark.parametrize("device", DEVICES)
def test_a_negative_dim_counts_from_the_end(be, name, device):
    # (index_fill(-1, ...) filled rows; index_select/index_add/index_copy with -1 failed in a
    # reshape): as the same call with the dim counted from the end
    _need(device)
    fn = NEG_DIM[name]
    pos = {"index_select": lambda d: _x(d).index_select(1, _i([0, 4], d)),
           "index_fill": lambda d: _x(d).index_fill(1, _i([0, 2], d), -1.0),
           "index_fill -2 of 3-D": lambda d: tp.arange(24.0, device=d).reshape(2, 3, 4)
           .index_fill(1, _i([1], d), -1.0),
           "index_add": lambda d: _x(d).index_add(1, _i([0, 3], d), tp.ones(4, 2, device=d)),
           "index_copy": lambda d: _x(d).index_copy(1, _i([0, 3], d), tp.ones(4, 2, device=d))}
    assert fn(device).cpu().tolist() == pos[name]("cpu").tolist()


@pytest.mark.parametrize("device", DEVICES)
def test_scatter_refuses_an_index_wider_than_self(be, device):
    # the linear index ran into the next row: row 1 became [9, 5, 6, 7], no error
    _need(device)
    with pytest.raises(RuntimeError, match=r"expected index \[2, 5\] to be no larger than self"):
        _x(device)[:3, :4].scatter(0, _i([[0] * 5] * 2, device),
                                   tp.arange(10.0, device=device).reshape(2, 5))


@pytest.mark.parametrize("i,j,bad,dim", [([0], [-4], -4, 1), ([1], [3], 3, 1), ([-5], [0], -5, 0),
                                         ([4], [0], 4, 0)])
def test_compiled_two_index_tensors_check_each_dim(i, j, bad, dim):
    # captured, the check before the flattening cannot read values: x[0, -4] of a 4x3 x read
    # x[3, 2] (inside the flattened 12), x[1, 3] read x[2, 0]; each dim is checked at replay
    x = tp.arange(12.0).reshape(4, 3)
    get = tp.compile(lambda x, i, j: x[i, j])

    def put(x, i, j):
        y = x.clone()
        y[i, j] = 5.0
        return y
    put = tp.compile(put)
    assert get(x, tp.tensor([3]), tp.tensor([-1])).tolist() == [11.0]       # in range: as eager
    assert put(x, tp.tensor([-4]), tp.tensor([2]))[0, 2].item() == 5.0
    for fn in (get, put):
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for dimension {dim} "):
            fn(x, tp.tensor(i), tp.tensor(j))
