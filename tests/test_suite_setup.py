"""The suite's own set-up (``tests/conftest.py``).

It runs the same in every process, so that pytest-xdist can spread it (seen on the H200:
``Different tests were collected between gw8 and gw2``):

* Test ids are the same in every process: parametrize ids carrying ``object()``'s memory address
  differed. ``tests/conftest.py`` turns such an id into a collection error naming the test.
* The terminal width is not inherited: xdist's workers run with ``COLUMNS=80``, and tests that
  read the CLI's tables (in subprocesses) then found them wrapped. ``conftest.py`` drops it.
* A pytest run that a test starts is its own session, not an xdist worker: the workers'
  ``PYTEST_XDIST_WORKER``/``_WORKER_COUNT``/``_TESTRUNUID`` are dropped. Inherited, they made
  pytest-benchmark 5.2.2-5.2.3 (installed on the H200) warn that xdist was active in such a run,
  and a ``-W error`` run then stopped with an internal error.

And ``TENSORPLAY_BLOCK_TORCH=1`` makes ``import torch`` fail in the test process whichever tests
are selected, and the report header says so."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _pythonpath():
    """``tests/`` (so that ``-p conftest`` loads this suite's conftest) before the caller's path."""
    return os.pathsep.join([str(TESTS)] + [p for p in [os.environ.get("PYTHONPATH")] if p])


def _run_sample(tmp_path, source, *pytest_args, env=()):
    """pytest run on one test file holding ``source``, with this suite's conftest as a plugin
    (``-p conftest``) and none of the repository's settings."""
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(source))
    (tmp_path / "none.ini").write_text("[pytest]\n")
    return subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args, "-p", "no:cacheprovider", "-o", "addopts=",
         "--rootdir", str(tmp_path), "-c", str(tmp_path / "none.ini"), "--confcutdir",
         str(tmp_path), "-p", "conftest", str(tmp_path / "test_sample.py")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": _pythonpath(), **dict(env)})


def _collect(tmp_path, source):
    return _run_sample(tmp_path, source, "--collect-only", "-q")


def test_an_id_with_a_memory_address_is_a_collection_error(tmp_path):
    r = _collect(tmp_path, """
        import pytest
        @pytest.mark.parametrize("v", [1, object()], ids=repr)
        def test_a(v):
            pass
    """)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "test_a[<object object at" in out and "ids=" in out, out


def test_stable_ids_collect(tmp_path):
    r = _collect(tmp_path, """
        import pytest
        @pytest.mark.parametrize("v", [1, "x", None])
        def test_a(v):
            pass
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 tests collected" in r.stdout


def test_the_fill_value_ids_carry_no_address():
    """The ids that carried ``object()``'s address (``test_factory_args.py``) now say
    ``object()``; the conftest hook keeps every other id of the suite free of addresses on every
    run."""
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                        "no:cacheprovider", str(TESTS / "test_factory_args.py")],
                       capture_output=True, text=True, timeout=300, cwd=TESTS.parent)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert " at 0x" not in r.stdout and "test_full_refuses_non_number_fill[None-object()]" in r.stdout


def test_an_inherited_terminal_width_does_not_reach_the_tests():
    """A CLI-table test run with ``COLUMNS=80`` in its environment (as in an xdist worker)."""
    env = {**os.environ, "COLUMNS": "80", "LINES": "24"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(TESTS / "test_plugins.py") +
                        "::test_two_entry_points_of_one_distribution_are_told_apart"],
                       capture_output=True, text=True, timeout=300, cwd=TESTS.parent, env=env)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_a_pytest_run_started_by_a_test_is_not_an_xdist_worker(tmp_path):
    """The variables an xdist worker runs with, inherited (as a worker's subprocesses inherit
    them), are gone in the test process and so in anything it starts."""
    markers = {"PYTEST_XDIST_WORKER": "gw3", "PYTEST_XDIST_WORKER_COUNT": "12",
               "PYTEST_XDIST_TESTRUNUID": "0123456789abcdef"}
    r = _run_sample(tmp_path, f"""
        import os
        import subprocess
        import sys
        def test_no_worker_markers():
            assert not {{k for k in os.environ if k in {sorted(markers)!r}}}
            child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.environ))"],
                                   capture_output=True, text=True, check=True).stdout
            assert "PYTEST_XDIST" not in child
    """, "-q", env=markers)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_block_torch_holds_for_any_selection_of_tests(tmp_path):
    """``TENSORPLAY_BLOCK_TORCH=1`` blocks ``import torch`` whatever tests are selected (it used to
    be installed by ``test_triton.py`` at its collection only: a GPU run of other files with the
    variable set still had torch importable)."""
    pytest.importorskip("tensorplay_triton", reason="the blocker ships with tensorplay-triton")
    r = _run_sample(tmp_path, """
        import sys
        import pytest
        def test_torch_is_blocked():
            with pytest.raises(ImportError, match="blocked by tensorplay"):
                import torch  # noqa: F401
            assert "torch" not in sys.modules
    """, env={"TENSORPLAY_BLOCK_TORCH": "1"})           # not -q: the report header is checked
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert "torch: blocked" in r.stdout        # the report header says so
