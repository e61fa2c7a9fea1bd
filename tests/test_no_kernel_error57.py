"""A call to an op without a kernel for its device raises an error that is also a
``NotImplementedError``, as torch's dispatcher does ("Could not run ... with arguments from the
'CPU' backend"), so ``except NotImplementedError`` code ported from torch catches it (a fresh
user's finding, session 57). It stays a ``DispatchError`` and names the op and the fix."""

import pytest

import tensorplay as tp
from tensorplay.errors import DispatchError, NoKernelError

tp.library.define("nokernel57::op", "(Tensor x) -> Tensor")
tp.library.define("nokernel57::factory", "(int n) -> Tensor")


def test_no_kernel_for_the_device_is_not_implemented():
    with pytest.raises(NotImplementedError, match=r"nokernel57::op.*no kernel for device 'cpu'"
                                                  r".*register_kernel"):
        tp.ops.nokernel57.op(tp.ones(1))


def test_it_stays_a_dispatch_error():
    with pytest.raises(DispatchError) as info:
        tp.ops.nokernel57.op(tp.ones(1))
    assert isinstance(info.value, NoKernelError) and isinstance(info.value, RuntimeError)


def test_no_device_agnostic_kernel_is_not_implemented():
    with pytest.raises(NotImplementedError, match="no device-agnostic kernel"):
        tp.ops.nokernel57.factory(3)


def test_a_disabled_kernel_is_not_implemented_either():
    @tp.library.custom_op("nokernel57::dis", mutates_args=(), device_types="cpu")
    def dis(x: tp.Tensor) -> tp.Tensor:
        return x.clone()

    with dis.set_kernel_enabled("cpu", False):
        with pytest.raises(NotImplementedError, match="disabled by set_kernel_enabled"):
            dis(tp.ones(1))
