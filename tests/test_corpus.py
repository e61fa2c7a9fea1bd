"""A corpus of third-party Triton kernels (Liger-Kernel, Unsloth, FlagGems), run as triton_ops.

The kernels are copied verbatim from their libraries (``tests/corpus/<library>/kernels.py``, with
licence notices and the upstream commit); the host code is what a torch user migrating writes
(``tests/corpus/<library>/ops.py``: ``triton_op``, ``wrap_triton``, ``register_autograd``; each
line that had to change says ``# CHANGED: why``). Each op runs on cpu through Triton's
interpreter, forward and backward, against a float64 NumPy reference (gradients by central finite
differences of that reference), and through ``tensorplay.library.opcheck``.

A case that hits a known gap (``tests/corpus/gaps.py``) is ``xfail(strict=True)`` with the gap
named, while the gap's probe shows it is still there (once fixed, the case is a plain test with
no edit), and expects the failure the gap causes (an interpreter error inside a kernel, or a
failure of the isolated process); any other exception fails the test. The GPU run is ``benchmarks/bench_corpus.py``.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay
from corpus import all_cases
from corpus.check import check_forward_and_gradients, check_opcheck
from tensorplay.errors import OpCheckError
from triton.runtime.errors import InterpreterError

CASES = all_cases()
_TESTS_DIR = pathlib.Path(__file__).parent


class IsolatedCaseFailed(AssertionError):
    """A case run in its own process (``Case.isolate``) failed or crashed."""


def _params(isolated):
    out = []
    for c in CASES:
        if c.isolate != isolated:
            continue
        present = [g.reason for g in c.gaps if g.present]
        marks = ([pytest.mark.xfail(strict=True, reason="; ".join(present),
                                    raises=(InterpreterError, OpCheckError, IsolatedCaseFailed))]
                 if present else [])
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def _cpu():
    ok, why = tensorplay.plugins.device_status("cpu")
    if not ok:
        pytest.skip(f"cpu device unavailable: {why}")
    return "cpu"


def test_corpus_size_and_licences():
    """At least 25 ops with a backward, from at least three libraries, each with its licence file."""
    libs = {c.id.split(".")[0] for c in CASES}
    assert len(CASES) >= 25 and len(libs) >= 3, (len(CASES), libs)
    assert len({c.id for c in CASES}) == len(CASES)
    root = _TESTS_DIR / "corpus"
    for lib in libs:
        assert (root / lib / "LICENSE").is_file(), lib
        head = (root / lib / "kernels.py").read_text()[:3000]
        assert "Upstream: https://github.com/" in head and "at commit " in head, lib
    for c in CASES:
        assert c.grad, c.id   # every case checks at least one gradient


@pytest.mark.parametrize("case", _params(False))
def test_forward_and_gradients_match_numpy(case):
    check_forward_and_gradients(case, _cpu())


@pytest.mark.parametrize("case", _params(False))
def test_opcheck(case):
    check_opcheck(case, _cpu())


@pytest.mark.parametrize("case", _params(True))
def test_isolated_case(case):
    """Both checks, in a fresh process (the case's kernels write out of bounds under a known gap)."""
    _cpu()
    env = dict(os.environ, PYTHONFAULTHANDLER="0")
    proc = subprocess.run([sys.executable, "-m", "corpus.check", case.id], cwd=_TESTS_DIR, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise IsolatedCaseFailed(f"{case.id}: exit status {proc.returncode}\n{proc.stdout[-2000:]}"
                                 f"\n{proc.stderr[-4000:]}")
