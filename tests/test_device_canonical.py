"""A tensor's device is canonical (as torch): ``cpu:0`` and ``cpu`` are one device for tensors
(the ``device`` object keeps its index); on a device type with several devices, a bare type
means the current one (``"mock"`` -> ``mock:0``)."""

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import backends
from tensorplay.testing.backend import MockBackend


def test_device_object_keeps_index():
    assert tp.device("cpu:0").index == 0
    assert str(tp.device("cpu", 0)) == "cpu:0"


@pytest.mark.parametrize("dev", ["cpu:0", tp.device("cpu:0"), tp.device("cpu", 0), "cpu", None])
def test_cpu0_tensor_reports_cpu_and_mixes(dev):
    a = tp.ones(2, device=dev)
    assert a.device is tp.device("cpu")
    assert str(a.device) == "cpu"
    assert (a + tp.ones(2)).tolist() == [2.0, 2.0]
    assert tp.cat([a, tp.ones(2)]).shape == (4,)


@pytest.mark.parametrize("factory", [
    lambda d: tp.zeros(2, device=d), lambda d: tp.empty(2, device=d).fill_(1.0),
    lambda d: tp.full((2,), 1.0, device=d), lambda d: tp.zeros_like(tp.ones(2), device=d),
    lambda d: tp.ones(2).new_zeros(2, device=d), lambda d: tp.arange(2, device=d),
    lambda d: tp.rand(2, device=d), lambda d: tp.ones(2).to(d),
    lambda d: tp.ones(2).to(d, copy=True),
])
def test_cpu0_everywhere(factory):
    t = factory("cpu:0")
    assert t.device is tp.device("cpu")
    assert (t + tp.ones(2)).shape == (2,)


def test_cpu0_inside_compile():
    def g(x):
        return tp.zeros(x.shape, device="cpu:0") + x
    out = tp.compile(g)(tp.ones(2))
    assert out.tolist() == [1.0, 1.0] and out.device is tp.device("cpu")


def test_wrap_native_cpu0():
    cpu = backends.get("cpu")
    t = backends.wrap_native(cpu, np.arange(6, dtype=np.float32).reshape(2, 3), shape=(2, 3),
                             dtype=tp.float32, device=tp.device("cpu:0"), nbytes=24)
    assert t.device is tp.device("cpu")
    assert (t + tp.ones(2, 3)).tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_meta0_is_meta():
    assert tp.zeros(2, device="meta:0").device is tp.device("meta")


def test_multi_device_bare_type_is_current_index():
    with MockBackend("mock", device_count=2):
        a = tp.ones(2, device="mock")
        assert a.device is tp.device("mock", 0)
        assert (a + tp.ones(2, device="mock:0")).device is tp.device("mock:0")
        assert tp.ones(2).to("mock").device is tp.device("mock:0")
        assert tp.zeros_like(tp.ones(2), device="mock").device is tp.device("mock:0")
        with pytest.raises(Exception, match="one device"):
            tp.ones(2, device="mock:1") + tp.ones(2, device="mock")


def test_multi_device_custom_op_mixes_bare_and_zero():
    from tensorplay import library
    from tensorplay.testing.registry import drop_ops

    @library.custom_op("devnorm_t::clone2", mutates_args=())
    def clone2(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
        return x.clone()
    try:
        with MockBackend("mock", device_count=2):
            a, b = tp.ones(2, device="mock"), tp.ones(2, device="mock:0")
            assert clone2(a, b).device is tp.device("mock:0")
    finally:
        drop_ops("devnorm_t")


def test_single_device_mock_type_drops_index():
    with MockBackend("mock1"):
        assert tp.ones(2, device="mock1:0").device is tp.device("mock1")
        assert (tp.ones(2, device="mock1:0") + tp.ones(2, device="mock1")).shape == (2,)


def test_cpu_and_meta_read_any_index_as_the_type():
    # as torch: "cpu:1" makes cpu tensors (torch ignores a cpu index), "meta:1" meta ones
    assert tp.zeros(2, device="cpu:1").device is tp.device("cpu")
    assert tp.ones(2).to("cpu:1").device is tp.device("cpu")
    assert tp.zeros(2, device="meta:1").device is tp.device("meta")


def test_a_single_device_backend_refuses_other_indices():
    with MockBackend("mock1"):
        with pytest.raises(ValueError, match=r"mock1:1.*one device"):
            tp.zeros(2, device="mock1:1")
        with pytest.raises(ValueError, match=r"mock1:1.*one device"):
            tp.ones(2).to("mock1:1")


def test_bare_type_follows_the_current_device():
    with MockBackend("mock", device_count=2) as be:
        with be.device_guard(tp.device("mock", 1)):
            assert tp.ones(2, device="mock").device is tp.device("mock:1")
            assert tp.ones(2).to("mock").device is tp.device("mock:1")
        assert tp.ones(2, device="mock").device is tp.device("mock:0")


def test_rule_follows_the_backend_that_is_loaded():
    with MockBackend("mockswap", device_count=2):
        assert tp.ones(2, device="mockswap").device is tp.device("mockswap:0")
    with MockBackend("mockswap"):
        assert tp.ones(2, device="mockswap:0").device is tp.device("mockswap")
