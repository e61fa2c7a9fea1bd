"""Session 52's index rules and index kernels give cpu's answers on every device.

Session 52 changed the index kernels that cpu, cuda and every other array backend share (the
negative-index wrap skipped, ``index_add`` by rounds of distinct indices, ``gather`` of a 1-D
tensor as a ``take``, ``x[i]``'s single-index shortcut) and the rules they check (index dtypes,
negatives, out-of-range error classes, ``index_add``'s shapes, numbers written through indexing).
Its tests ran on cpu alone. Here every case runs on cpu first, then on a NumPy stand-in for a
GPU (the kernels' device branch, with host reads counted as on CuPy) and on ``cuda`` where one
is present; each device must give cpu's values, dtype and shape, or raise cpu's exception class.
"""

from __future__ import annotations

import warnings

import pytest

import tensorplay as tp

np = pytest.importorskip("numpy")

STAND_IN = "standin53"


@pytest.fixture(scope="module")
def be():
    from tensorplay.testing.backend import MockBackend
    with MockBackend(STAND_IN, device_arrays=True) as b:
        yield b


def _x(d, shape=(6, 20), dtype=tp.float32):
    n = int(np.prod(shape))
    return (tp.arange(n, device=d) % 7).to(dtype).reshape(shape)


def _i(values, d, dtype=tp.int64):
    return tp.tensor(values, dtype=dtype, device=d)


def _put(x, key, value):
    x[key] = value
    return x


def _compiled_accumulate(d):
    f = tp.compile(lambda x, i, v: x.index_put_((i,), v, accumulate=True))
    return f(_x(d), _i([1, 1, -2, 0], d), tp.ones(4, 20, device=d))


# Each case: device -> tensor (compared with cpu's) or raises (the class compared with cpu's).
CASES = {
    # reads
    "x[i] int64": lambda d: _x(d)[_i([0, 5, 2], d)],
    "x[-i]": lambda d: _x(d)[_i([-1, -6, 2], d)],
    "x[i] int32": lambda d: _x(d)[_i([0, 5, 2], d, tp.int32)],
    "x[i] bool": lambda d: _x(d)[_i([True, False, True, False, False, True], d, tp.bool)],
    "x[i] uint8 mask": lambda d: _x(d)[_i([1, 0, 1, 0, 0, 1], d, tp.uint8)],
    "x[i] out of range": lambda d: _x(d)[_i([0, 6], d)],
    "x[i] float index": lambda d: _x(d)[_i([0.0, 1.0], d, tp.float32)],
    "x[i, j]": lambda d: _x(d)[_i([0, -1, 3], d), _i([19, 0, -20], d)],
    "x[:, j] 2-D": lambda d: _x(d)[:, _i([[4, 0], [1, -5]], d)],
    "index_select int64": lambda d: _x(d).index_select(0, _i([5, 0, 5], d)),
    "index_select int32": lambda d: _x(d).index_select(1, _i([19, 0], d, tp.int32)),
    "index_select negative": lambda d: _x(d).index_select(0, _i([-1], d)),
    "index_select 0-dim self": lambda d: tp.tensor(3.0, device=d).index_select(0, _i([0, 0], d)),
    "take": lambda d: _x(d).take(_i([[0, 119], [-1, 7]], d)),
    "take 1-D": lambda d: _x(d).reshape(-1).take(_i([3, -3], d)),
    "take int32": lambda d: _x(d).take(_i([0, 1], d, tp.int32)),
    "take out of range": lambda d: _x(d).take(_i([120], d)),
    "gather 1-D": lambda d: _x(d).reshape(-1).gather(0, _i([7, 0, 7], d)),
    "gather 1-D 0-dim index": lambda d: _x(d).reshape(-1).gather(0, _i(5, d)),
    "gather 2-D": lambda d: _x(d).gather(1, _i([[0, 19]] * 6, d)),
    "gather int32": lambda d: _x(d).gather(1, _i([[0, 1]] * 6, d, tp.int32)),
    "gather out of range": lambda d: _x(d).gather(1, _i([[20]] * 6, d)),
    # writes
    "x[i] = 1.0": lambda d: _put(_x(d), _i([0, 5, 0], d), 1.0),
    "x[i] = -1 uint8": lambda d: _put(_x(d, dtype=tp.uint8), _i([1, 2], d), -1),
    "x[0] = 300 uint8": lambda d: _put(_x(d, dtype=tp.uint8), 0, 300),
    "x[0] = nan int32": lambda d: _put(_x(d, dtype=tp.int32), 0, float("nan")),
    "masked_fill -1 uint8": lambda d: _x(d, dtype=tp.uint8).masked_fill(
        _x(d) > 3, -1),
    "masked_fill_ overflow int8": lambda d: _x(d, dtype=tp.int8).masked_fill_(
        _x(d) > 3, 1000),
    "x[i] = t out of range": lambda d: _put(_x(d), _i([6], d), tp.ones(20, device=d)),
    "index_add rows (rounds)": lambda d: _x(d).index_add(
        0, _i([1, 3, 1, 1, 0, 3, 5], d), tp.arange(140.0, device=d).reshape(7, 20) / 7),
    "index_add rows repeated 20x": lambda d: _x(d).index_add(
        0, _i([2] * 20 + [4], d), tp.ones(21, 20, device=d) / 3),
    "index_add small slices": lambda d: _x(d, (20, 3)).index_add(
        0, _i([1, 1, 19, 0], d), tp.ones(4, 3, device=d)),
    "index_add dim 1 alpha": lambda d: _x(d).index_add(
        1, _i([0, 19, 0], d, tp.int32), tp.ones(6, 3, device=d), alpha=2.5),
    "index_add 0-dim self": lambda d: tp.tensor(1.0, device=d).index_add(
        0, _i([0, 0], d), tp.tensor([2.0, 3.0], device=d)),
    "index_add 2-D index": lambda d: _x(d).index_add(0, _i([[0]], d), tp.ones(1, 20, device=d)),
    "index_add wrong source": lambda d: _x(d).index_add(0, _i([0, 1], d), tp.ones(2, 19, device=d)),
    "index_add out of range": lambda d: _x(d).index_add(0, _i([6], d), tp.ones(1, 20, device=d)),
    "index_add 1-D out of range": lambda d: _x(d).reshape(-1).index_add(
        0, _i([120], d), tp.ones(1, device=d)),
    "index_fill_ int32": lambda d: _x(d).index_fill_(0, _i([0], d, tp.int32), 1.0),
    "index_fill_": lambda d: _x(d).index_fill_(1, _i([0, -1], d), -2.0),
    "index_copy_": lambda d: _x(d).index_copy_(0, _i([4, 0], d), tp.ones(2, 20, device=d)),
    "index_copy_ negative": lambda d: _x(d).index_copy_(0, _i([-1], d), tp.ones(1, 20, device=d)),
    "put_ accumulate": lambda d: _x(d).put_(_i([0, 0, -1, 7], d), tp.ones(4, device=d),
                                            accumulate=True),
    "index_put_ accumulate": lambda d: _x(d).index_put_(
        (_i([1, 1, -2], d), _i([0, 0, 19], d)), tp.tensor(2.0, device=d), accumulate=True),
    "index_put_ accumulate compiled": _compiled_accumulate,
    "scatter_add repeats": lambda d: tp.zeros(6, 20, device=d).scatter_add(
        0, _i([[0, 1, 0], [0, 0, 5]], d), tp.ones(2, 3, device=d)),
}


def _run(fn, d):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the uint8-mask deprecation warning, on every device
        try:
            return fn(d), None
        except Exception as e:  # noqa: BLE001 - compared with cpu's class below
            return None, e


def _need(device):
    if device == "cuda":
        ok, why = tp.plugins.device_status("cuda")
        if not ok:
            pytest.skip(f"cuda unavailable: {why}")


def _host(t):
    return t.cpu().numpy()


DEVICES = [STAND_IN, pytest.param("cuda", marks=pytest.mark.cuda)]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("device", DEVICES)
def test_every_device_gives_cpus_answer(be, name, device):
    _need(device)
    fn = CASES[name]
    want, want_err = _run(fn, "cpu")
    got, got_err = _run(fn, device)
    if want_err is not None:
        assert got_err is not None, f"{name}: cpu raised {want_err!r}, {device} returned {got!r}"
        assert type(got_err) is type(want_err), (
            f"{name}: cpu raised {want_err!r}, {device} raised {got_err!r}")
        return
    assert got_err is None, f"{name}: cpu returned, {device} raised {got_err!r}"
    assert got.device.type == (device if device != "cuda" else "cuda")
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape), (got, want)
    a, b = _host(got), _host(want)
    if a.dtype.kind == "f":
        # cuda's scatters add with atomics in any order: float sums may round differently
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(a, b)


def test_the_cases_raise_what_torch_raises_on_cpu():
    """The cases above check agreement with cpu; these few pin cpu itself to torch's classes,
    so that an agreement on a wrong class cannot pass."""
    expected = {
        "x[i] out of range": IndexError,
        "take int32": RuntimeError,
        "index_select negative": (IndexError, RuntimeError),
        "index_add 2-D index": IndexError,
        "index_add out of range": RuntimeError,
        "index_add 1-D out of range": IndexError,
        "index_fill_ int32": IndexError,
        "x[0] = 300 uint8": RuntimeError,
        "x[0] = nan int32": RuntimeError,
    }
    for name, exc in expected.items():
        _, err = _run(CASES[name], "cpu")
        assert isinstance(err, exc), f"{name}: {err!r}"


# NumPy makes two int64 dtype objects on Linux: ``long`` ('l', what ``np.int64`` names) and
# ``long long`` ('q', what ``np.longlong`` names and CuPy's ``argmax`` returns): equal, not
# identical. The index kernels tested the dtype by identity and refused the second as "index of
# dtype int64" (``tp.mode`` on cuda failed so).
LONGLONG_CASES = {
    "x[i]": lambda x, i: x[i],
    "x[i] = 1": lambda x, i: _put(x.clone(), i, 1.0),
    "index_select": lambda x, i: x.index_select(0, i),
    "take": lambda x, i: x.take(i),
    "gather": lambda x, i: x.gather(0, i.reshape(-1, 1).expand(-1, 20)),
    "gather 1-D": lambda x, i: x.reshape(-1).gather(0, i),
    "scatter_add": lambda x, i: x.scatter_add(0, i.reshape(-1, 1), tp.ones(3, 1, device=x.device)),
    "index_add": lambda x, i: x.index_add(0, i, tp.ones(3, 20, device=x.device)),
    "index_add out of range": lambda x, i: x.index_add(0, i + 6, tp.ones(3, 20, device=x.device)),
    "index_fill_": lambda x, i: x.clone().index_fill_(0, i, 2.0),
    "index_copy_": lambda x, i: x.clone().index_copy_(0, i, tp.ones(3, 20, device=x.device)),
    "put_": lambda x, i: x.clone().put_(i, tp.ones(3, device=x.device), accumulate=True),
}


@pytest.mark.parametrize("name", list(LONGLONG_CASES))
@pytest.mark.parametrize("device", ["cpu", *DEVICES])
def test_an_index_of_numpys_other_int64_object_is_int64(be, name, device):
    _need(device)
    fn = LONGLONG_CASES[name]
    x = _x(device)
    ll = tp.from_numpy(np.array([4, 0, 4], dtype=np.longlong)).to(device)
    assert ll.dtype == tp.int64
    want, want_err = _run(lambda d: fn(x, _i([4, 0, 4], d)), device)
    got, got_err = _run(lambda d: fn(x, ll), device)
    if want_err is not None:
        assert type(got_err) is type(want_err), (want_err, got_err)
        return
    assert got_err is None, f"{name}: a np.longlong index raised {got_err!r}"
    np.testing.assert_array_equal(_host(got), _host(want))


@pytest.mark.parametrize("device", ["cpu", *DEVICES])
def test_mode_gives_cpus_indices(be, device):
    _need(device)
    rows = [[1.0, 2.0, 2.0, 1.0, 3.0, 3.0], [5.0, 4.0, 4.0, 5.0, 5.0, 0.0]]
    got = tp.mode(tp.tensor(rows, device=device), 1)
    want = tp.mode(tp.tensor(rows), 1)
    assert got.values.cpu().tolist() == want.values.tolist()
    assert got.indices.cpu().tolist() == want.indices.tolist()
