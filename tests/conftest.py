"""Shared test set-up: ``TENSORPLAY_BLOCK_TORCH=1`` honoured for any selection of tests, a report
header naming the installed plugins and devices (and the torch block), the same terminal width
(none) for every test, a collection error for test ids that carry a memory address (ids that
differ between processes, which pytest-xdist refuses), and fixtures for tests that need the cpu
device, a throw-away plugin on ``PYTHONPATH`` or a GPU stand-in (``gpu_stand_in``)."""

from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

import pytest


def pytest_report_header(config):
    try:
        import tensorplay
        plugins = ", ".join(f"{r['dist']} {r['version']} ({r['status']})"
                            for r in tensorplay.plugins.list_plugins()) or "none"
        lines = [f"tensorplay {tensorplay.__version__}; plugins: {plugins}"]
    except Exception as e:   # the header must never break collection
        lines = [f"tensorplay: import failed: {type(e).__name__}: {e}"]
    if BLOCK_TORCH:
        lines.append("torch: blocked (TENSORPLAY_BLOCK_TORCH=1): import torch fails in this process")
    return lines


# TENSORPLAY_BLOCK_TORCH=1 (GPU machines with torch installed, as a reference for benchmarks):
# `import torch` fails in the test process from here on, whatever tests are selected, proving
# that nothing -- tensorplay, its plugins, or Triton's launcher -- needs PyTorch. The spellings
# are those of the plugin controls (TENSORPLAY_STRICT_PLUGINS: tensorplay/plugins/discovery.py's
# private _env_flag, not imported here: the tests keep to public names).
_BLOCK = os.environ.get("TENSORPLAY_BLOCK_TORCH", "").strip().lower()
if _BLOCK not in ("", "0", "false", "no", "off", "1", "true", "yes", "on"):
    raise pytest.UsageError(f"TENSORPLAY_BLOCK_TORCH={_BLOCK!r}: use 1 (block import torch) or 0")
BLOCK_TORCH = _BLOCK in ("1", "true", "yes", "on")
if BLOCK_TORCH:
    os.environ["TENSORPLAY_BLOCK_TORCH"] = "1"   # one spelling for the tests and subprocesses
    try:
        from tensorplay_triton import block_torch
    except ImportError as e:
        raise pytest.UsageError(
            f"TENSORPLAY_BLOCK_TORCH=1: the blocker ships with tensorplay-triton, which is not "
            f"importable ({e}); install plugins/tensorplay_triton, or put "
            f"plugins/tensorplay_triton/tools/block_torch on PYTHONPATH and unset the variable "
            f"for pytest") from e
    block_torch()

# The CLI fits its tables to COLUMNS when it is set; tests that read its output (in this process
# or in subprocesses, which inherit the environment) expect the unwrapped rows of a pipe.
# pytest-xdist's workers run with COLUMNS=80 and a user's shell may export it: drop it here,
# once, for the whole run (pytest's own report then uses the terminal's width, or 80 when
# piped). A test that wants a width sets it itself.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
# A pytest run that a test starts (tests/test_packaging.py, test_suite_setup.py, ...) is a session
# of its own, not one of xdist's workers, but it inherits the variables xdist sets in each worker
# for user code. Plugins read them: pytest-benchmark 5.2.2-5.2.3 then warns at start-up that
# xdist is active, which stops a `-W error` run. xdist itself does not read them back (it keeps
# the worker's identity in config.workerinput), so they are dropped here, for every process the
# tests start.
for _name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
    os.environ.pop(_name, None)

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def pytest_collection_modifyitems(session, config, items):
    """Refuse test ids that carry a memory address (a parametrize value whose repr is
    ``<... at 0x...>``): they differ from process to process, and pytest-xdist then refuses to
    run the suite at all ("Different tests were collected between gw0 and gw1")."""
    bad = [item.nodeid for item in items if _ADDRESS.search(item.nodeid)]
    if bad:
        listed = "\n  ".join(bad[:10]) + ("\n  ..." if len(bad) > 10 else "")
        raise pytest.UsageError(
            f"{len(bad)} test id(s) carry a memory address, so they differ between processes "
            f"(pytest-xdist workers would refuse the suite):\n  {listed}\nGive those "
            f"parametrizations ids= that do not depend on object identity (e.g. the type's name).")


@pytest.fixture
def cpu():
    """The cpu device; skips the test when no cpu plugin is installed (core-only runs)."""
    import tensorplay
    ok, why = tensorplay.plugins.device_status("cpu")
    if not ok:
        pytest.skip(f"cpu device unavailable: {why}")
    return tensorplay.device("cpu")


#: The device type of ``gpu_stand_in``.
STAND_IN = "gpustandin"


@pytest.fixture(scope="module")
def gpu_stand_in():
    """A NumPy device standing in for a GPU, registered as ``"gpustandin"`` while the module's
    tests run: ``tensorplay.testing.backend.MockBackend(device_arrays=True)``, so the kernels take
    the branch they take for CuPy (CI has no GPU and would never run it) and
    ``be.forbid_sync()`` refuses host reads as ``cupyx.allow_synchronize(False)`` does. Skips
    without NumPy (core-only runs)."""
    pytest.importorskip("numpy")
    from tensorplay.testing.backend import MockBackend
    with MockBackend(STAND_IN, device_arrays=True) as be:
        yield be


@pytest.fixture
def grad_mode_restored():
    """Puts back the global grad mode after a test that leaves it changed on purpose (a
    function calling ``set_grad_enabled`` as a statement, compiled or not)."""
    import tensorplay
    prev = tensorplay.is_grad_enabled()
    yield
    tensorplay.set_grad_enabled(prev)


def make_plugin_dist(root: Path, dist: str, module: str, source: str, version: str = "0.1",
                     entry_name: str | None = None) -> Path:
    """Write an installed-looking plugin into ``root``: ``module.py`` with ``source`` and a
    ``.dist-info`` whose entry point (group ``tensorplay.plugins``) names it. Put ``root`` on
    ``PYTHONPATH`` of a subprocess and ``import tensorplay`` discovers it like a pip install."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        f"[tensorplay.plugins]\n{entry_name or module} = {module}\n")
    return root


@pytest.fixture
def plugin_env(tmp_path):
    """``(make, env)``: ``make(dist, module, source)`` writes a plugin under ``tmp_path``; ``env``
    is a copy of ``os.environ`` with ``tmp_path`` first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path)] + [p for p in [env.get("PYTHONPATH")] if p])

    def make(dist, module, source, **kw):
        return make_plugin_dist(tmp_path, dist, module, source, **kw)
    return make, env


PY = sys.executable
