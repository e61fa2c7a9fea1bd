"""Entry module of TensorPlay's pytest plugin (entry point ``pytest11``: ``tensorplay``).

pytest imports this module in *every* run of an environment where TensorPlay is installed, so it
imports nothing of TensorPlay: ``import tensorplay`` loads every installed TensorPlay plugin, and
one broken plugin would then warn (or, under ``-W error`` / ``filterwarnings = error``, fail) in
test suites that never use TensorPlay. The option's items and the fixture import
``tensorplay.testing`` only when they are used; the implementation lives in
``tensorplay.testing.pytest_plugin``.
"""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    """``--tensorplay-check=PLUGIN`` (repeatable) and ``--tensorplay-check-device=DEVICE``."""
    group = parser.getgroup("tensorplay", "TensorPlay operator checks")
    group.addoption("--tensorplay-check", action="append", default=[], metavar="PLUGIN",
                    help="run opcheck over every op and sample of this tensorplay plugin "
                         "(distribution or entry-point name); repeatable")
    group.addoption("--tensorplay-check-device", default=None, metavar="DEVICE",
                    help="only check on this device (cpu, cuda, cuda:1); default: every "
                         "available device")
    group.addoption("--tensorplay-triton-bounds", default=None, choices=("on", "off"),
                    help="bounds-check every load/store of Triton kernels run through Triton's "
                         "interpreter (cpu tensors) in this run: on (the default, unless "
                         "TENSORPLAY_TRITON_BOUNDS is set) or off")


def pytest_configure(config):
    """Test runs bounds-check Triton kernels run through the interpreter, as ``compute-sanitizer``
    checks GPU kernels: ``TENSORPLAY_TRITON_BOUNDS=1`` for the run (and the processes it starts)
    unless the variable is already set; ``--tensorplay-triton-bounds=on|off`` sets it. Only
    tensorplay-triton reads it (a kernel that reads or writes outside its tensors then raises
    ``TritonBoundsError`` instead of passing by chance); nothing is imported here."""
    v = config.getoption("tensorplay_triton_bounds", None)
    if v is not None:
        os.environ["TENSORPLAY_TRITON_BOUNDS"] = "1" if v == "on" else "0"
    else:
        os.environ.setdefault("TENSORPLAY_TRITON_BOUNDS", "1")


def pytest_collection_modifyitems(session, config, items):
    """Append the ``--tensorplay-check`` items; without the option, imports nothing."""
    if not config.getoption("tensorplay_check"):
        return
    from tensorplay.testing.pytest_plugin import add_check_items
    add_check_items(session, config, items)


@pytest.fixture
def tensorplay_check():
    """A function ``check(plugin, device=None, **opcheck_options)`` that runs
    ``tensorplay.testing.check_plugin`` over every op and sample of ``plugin`` (distribution or
    entry-point name) and fails the test listing every failing (op, device, sample); returns the
    results when all passed (skips are allowed). TensorPlay is imported on the first call."""
    def check(plugin, device=None, **kwargs):
        from tensorplay.testing.pytest_plugin import run_check
        return run_check(plugin, device, **kwargs)
    return check
