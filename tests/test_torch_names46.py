"""``tensorplay.version``, ``tensorplay.xpu`` and ``tensorplay.accelerator``: the torch names that
kernel libraries read to pick a device and an architecture (Liger-Kernel's ``is_hip`` and
``infer_device_arch`` read ``torch.version.hip``; its ``infer_device`` and Unsloth's
``get_device_type`` ask ``torch.xpu`` and ``torch.accelerator`` when cuda is unavailable). Before
these modules, such code raised AttributeError under tensorplay (the kernel corpus replaced it)."""

from __future__ import annotations

import re

import pytest

import tensorplay as tp
from tensorplay.errors import DeviceUnavailableError
from tensorplay.testing.backend import MockBackend


def _cuda() -> bool:
    return tp.cuda.is_available()


def test_version_names():
    assert tp.version.__version__ == tp.__version__
    assert tp.version.hip is None and tp.version.debug is False
    if _cuda():
        assert re.fullmatch(r"\d+\.\d", tp.version.cuda), tp.version.cuda
    else:
        assert tp.version.cuda is None
    with pytest.raises(AttributeError, match="git_version"):
        tp.version.git_version


def test_released_style_device_probes_answer_as_torch_would():
    # Liger-Kernel 0.8.5's liger_kernel.utils.infer_device / ops.utils.is_hip, with torch -> tp
    def infer_device():
        if tp.cuda.is_available():
            return "cuda"
        elif tp.xpu.is_available():
            return "xpu"
        return "cpu"
    assert infer_device() == ("cuda" if _cuda() else "cpu")
    assert (tp.version.hip is not None) is False


def test_xpu_and_accelerator_without_devices():
    if _cuda():
        pytest.skip("a cuda device is usable here: test_accelerator_is_cuda covers this machine")
    assert tp.xpu.is_available() is False and tp.xpu.device_count() == 0
    assert tp.accelerator.is_available() is False
    assert tp.accelerator.current_accelerator() is None
    assert tp.accelerator.device_count() == 0
    with pytest.raises(DeviceUnavailableError, match="current_device_index: no accelerator"):
        tp.accelerator.current_device_index()


@pytest.mark.cuda
def test_accelerator_is_cuda():
    if not _cuda():
        pytest.skip("cuda unavailable: " + tp.plugins.device_status("cuda")[1])
    assert tp.accelerator.is_available()
    assert tp.accelerator.current_accelerator() == tp.device("cuda")
    assert tp.accelerator.device_count() == tp.cuda.device_count()
    assert tp.accelerator.current_device_index() == tp.cuda.current_device()


def test_an_xpu_plugin_makes_xpu_the_accelerator_where_cuda_is_not():
    if _cuda():
        pytest.skip("a cuda device is usable here: cuda comes first, as in torch")
    with MockBackend("xpu"):
        assert tp.xpu.is_available() is True and tp.xpu.device_count() == 1
        assert tp.accelerator.current_accelerator() == tp.device("xpu")
        assert tp.accelerator.device_count() == 1
        assert tp.accelerator.current_device_index() == 0
    assert tp.xpu.is_available() is False
