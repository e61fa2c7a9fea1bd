"""``tensorplay.backends.wrap_native`` checks the native array against the shape, dtype and byte
size it is told (O(1), where the array says), and ``device_finder`` takes an op or its
qualified name."""

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import backends, library
from tensorplay.errors import DispatchError
from tensorplay.testing.backend import MockBackend
from tensorplay.testing.registry import drop_ops

CPU = tp.device("cpu")


def _wrap(arr, shape, dtype=tp.float32, nbytes=None):
    return backends.wrap_native(backends.get("cpu"), arr, shape=shape, dtype=dtype, device=CPU,
                                nbytes=arr.nbytes if nbytes is None else nbytes)


def test_wrap_native_ok():
    t = _wrap(np.arange(6, dtype=np.float32).reshape(2, 3), (2, 3))
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert _wrap(np.zeros((1, 3), np.float32)[:, ::1], (1, 3)).shape == (1, 3)
    assert _wrap(np.zeros((0, 3), np.float32), (0, 3)).numel() == 0
    assert _wrap(np.float32(2.0).reshape(()), ()).item() == 2.0


def test_wrap_native_nbytes_must_match_shape_and_dtype():
    # the review's repro: 6 floats told to be 1000x1000 read beyond the array
    with pytest.raises(ValueError, match=r"wrap_native.*nbytes"):
        _wrap(np.arange(6, dtype=np.float32), (1000, 1000), nbytes=24)
    with pytest.raises(ValueError, match=r"wrap_native.*nbytes"):
        _wrap(np.zeros(6, np.float32), (6,), nbytes=12)


def test_wrap_native_shape_mismatch():
    with pytest.raises(ValueError, match=r"wrap_native.*shape \(3, 2\).*array.s shape \(2, 3\)"):
        _wrap(np.zeros((2, 3), np.float32), (3, 2))


def test_wrap_native_dtype_mismatch():
    with pytest.raises(ValueError,
                       match=r"wrap_native: dtype tensorplay.int32.*"
                             r"array.s dtype tensorplay.float32"):
        _wrap(np.zeros((2, 3), np.float32), (2, 3), dtype=tp.int32)


def test_wrap_native_not_row_major():
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"wrap_native.*row-major"):
        _wrap(a.T, (3, 2))
    with pytest.raises(ValueError, match=r"wrap_native.*row-major"):
        _wrap(np.zeros(8, np.float32)[::2], (4,), nbytes=16)


def test_wrap_native_array_without_attributes_checks_nbytes_only():
    with pytest.raises(ValueError, match=r"wrap_native.*nbytes"):
        backends.wrap_native(backends.get("cpu"), [1.0, 2.0], shape=(3,), dtype=tp.float32,
                             device=CPU, nbytes=8)


@pytest.fixture
def twice():
    @library.custom_op("devnorm_df::twice", mutates_args=())
    def twice(x: tp.Tensor) -> tp.Tensor:
        return x * 2
    yield twice
    drop_ops("devnorm_df")


def test_device_finder_accepts_qualified_name(twice):
    with MockBackend("mock", device_count=2):
        a = tp.ones(2, device="mock:1")
        f = backends.device_finder("devnorm_df::twice", "mock")
        assert f((a,), {}) is tp.device("mock:1")
        assert f((), {"x": a}) is tp.device("mock:1")
        assert f((tp.ones(2),), {}) is None
        g = backends.device_finder(twice, "mock")
        assert g((a,), {}) is tp.device("mock:1")
        with pytest.raises(DispatchError, match="one device"):
            backends.device_finder("devnorm_df::twice", "mock")(
                ([a, tp.ones(2, device="mock:0")],), {})


def test_device_finder_bad_op():
    with pytest.raises(TypeError, match=r"device_finder.*op"):
        backends.device_finder(None, "mock")
    with pytest.raises(TypeError, match=r"device_finder.*op"):
        backends.device_finder(3, "mock")
    with pytest.raises(LookupError, match="devnorm_nosuch::op"):
        backends.device_finder("devnorm_nosuch::op", "mock")
