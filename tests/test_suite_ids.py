"""The suite's test ids are the same in every process: pytest-xdist workers each collect the
suite and refuse to run when their ids differ (seen on the H200: ``Different tests were
collected between gw8 and gw2``, from parametrize ids carrying ``object()``'s memory address).
``tests/conftest.py`` turns such an id into a collection error naming the test and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _collect(tmp_path, source):
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(source))
    (tmp_path / "none.ini").write_text("[pytest]\n")      # not the repository's settings
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-o", "addopts=", "--rootdir", str(tmp_path), "-c", str(tmp_path / "none.ini"),
         "--confcutdir", str(tmp_path), "-p", "conftest", str(tmp_path / "test_sample.py")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(TESTS)})


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


def test_this_suite_has_no_address_in_its_ids():
    """The suite itself: every id is free of memory addresses (the conftest hook enforces it on
    every run; this says so in the test report too)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                        "no:cacheprovider", str(TESTS / "test_factory_args.py")],
                       capture_output=True, text=True, timeout=300, cwd=TESTS.parent)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert " at 0x" not in r.stdout and "test_full_refuses_non_number_fill" in r.stdout
