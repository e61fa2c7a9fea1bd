"""A corpus of third-party Triton kernels (Liger-Kernel, Unsloth, FlagGems, flash-linear-attention, Cut
Cross-Entropy as triton_ops; attorch, flash-linear-attention and Cut Cross-Entropy as their own
autograd Functions).

The kernels are their libraries' own: those released on PyPI are read from the pinned wheel at run
time (``tests/corpus/_upstream.py``; downloaded once into a git-ignored cache, never committed; with
no wheel and no network those libraries' cases skip, saying why), the others are copied verbatim
(``tests/corpus/<library>/kernels.py``, with licence notices and the upstream commit); the host code is what a torch user migrating writes
(``tests/corpus/<library>/ops.py``: ``triton_op``, ``wrap_triton``, ``register_autograd``; each
line that had to change says ``# CHANGED: why``). Each op runs on cpu through Triton's
interpreter, forward and backward, against a float64 NumPy reference (gradients by central finite
differences of that reference), and through ``tensorplay.library.opcheck``. attorch's kernels
keep their library's ``autograd.Function``s (``tests/corpus/attorch/layers.py``, migrated to
``tensorplay.autograd.Function``): the same forward and gradient check, and instead of opcheck
``corpus.check.check_function`` (no graph without grad, one gradient argument at a time,
a non-contiguous first argument) and ``check_function_compiled`` (inside ``tensorplay.compile``).

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
from corpus import _upstream, all_cases, function_cases, unavailable
from corpus.cases import finite_difference_grads
from corpus.check import (check_forward_and_gradients, check_function, check_function_compiled,
                          check_opcheck)
from tensorplay.errors import OpCheckError
from triton.runtime.errors import InterpreterError

CASES = all_cases()
FUNCTION_CASES = function_cases()
UNAVAILABLE = unavailable()     # {library: why its pinned wheel could not be had}
_TESTS_DIR = pathlib.Path(__file__).parent


class IsolatedCaseFailed(AssertionError):
    """A case run in its own process (``Case.isolate``) failed or crashed."""


def _params(isolated, cases=CASES, backward=True, check=None):
    # a library whose kernels could not be had: one skipped parameter saying why (never a pass)
    out = [pytest.param(None, id=f"{lib}-unavailable", marks=pytest.mark.skip(reason=why))
           for lib, why in UNAVAILABLE.items()] if cases is CASES else []
    for c in cases:
        if c.isolate != isolated:
            continue
        # the gaps that fail this check (``check``: the test's kind; None: all of them)
        present = [g for g in c.gaps if g.applies(check) and g.present]
        raises = (InterpreterError, OpCheckError, IsolatedCaseFailed,
                  *(e for g in present for e in g.raises))
        marks = ([pytest.mark.xfail(strict=True, reason="; ".join(g.reason for g in present),
                                    raises=raises)]
                 if present else [])
        if c.refused and backward:      # the library's own guard (OpCheckError is a RuntimeError)
            marks.append(pytest.mark.xfail(strict=True, raises=RuntimeError,
                                           reason=f"the library refuses: {c.refused}"))
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


@pytest.fixture
def ieee_on_cuda(monkeypatch):
    """``ieee_on_cuda(case, device)``: for a ``Case.tf32`` case on cuda, Triton's float32 dots in
    IEEE float32 (read when a kernel compiles; part of its cache key), so that its outputs and
    gradients are checked at the case's own tolerance, as the interpreter's on cpu."""
    def use(case, device):
        if case.tf32 and device == "cuda":
            monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")
        return device
    return use


def _cpu():
    ok, why = tensorplay.plugins.device_status("cpu")
    if not ok:
        pytest.skip(f"cpu device unavailable: {why}")
    return "cpu"


def test_corpus_size_and_licences():
    """At least 25 ops with a backward, from at least three libraries, each with its licence file
    and its upstream: a pinned PyPI release (read from its wheel) or a commit (copied)."""
    if UNAVAILABLE:
        pytest.skip("; ".join(UNAVAILABLE.values()))
    libs = {c.id.split(".")[0] for c in CASES}
    assert len(CASES) >= 25 and len(libs) >= 3, (len(CASES), libs)
    assert len({c.id for c in CASES}) == len(CASES)
    root = _TESTS_DIR / "corpus"
    pinned = {f"{p.dist}=={p.version}" for p in _upstream.PINS.values()}
    for lib in libs:
        assert (root / lib / "LICENSE").is_file(), lib
        head = (root / lib / "kernels.py").read_text()[:3000]
        assert "Upstream: https://github.com/" in head, lib
        assert "at commit " in head or any(f"PyPI {p}" in head for p in pinned), lib
    for c in CASES:
        assert c.grad, c.id   # every case checks at least one gradient


def test_function_corpus_licences():
    """The autograd.Function cases: at least 10, each library with its licence file and upstream
    (a commit it was copied at, or a pinned PyPI release read from its wheel: fla's released
    Functions), every case checking a gradient, ids distinct from the op cases'."""
    libs = {c.id.split(".")[0] for c in FUNCTION_CASES}
    assert len(FUNCTION_CASES) >= 10 and libs, (len(FUNCTION_CASES), libs)
    ids = [c.id for c in FUNCTION_CASES]
    assert len(set(ids)) == len(ids) and not set(ids) & {c.id for c in CASES}
    root = _TESTS_DIR / "corpus"
    for lib in libs:
        assert (root / lib / "LICENSE").is_file(), lib
        head = (root / lib / "kernels.py").read_text()[:3000]
        pinned = {f"{p.dist}=={p.version}" for p in _upstream.PINS.values()}
        assert "Upstream: https://github.com/" in head, lib
        assert "at commit " in head or any(f"PyPI {p}" in head for p in pinned), lib
    for c in FUNCTION_CASES:
        assert c.grad, c.id


@pytest.mark.parametrize("case", _params(False, check="forward"))
def test_forward_and_gradients_match_numpy(case):
    check_forward_and_gradients(case, _cpu())


@pytest.mark.parametrize("case", _params(False, check="opcheck"))
def test_opcheck(case):
    check_opcheck(case, _cpu())


def _device(name):
    if name == "cpu":
        return _cpu()
    ok, why = tensorplay.plugins.device_status(name)
    if not ok:
        pytest.skip(f"{name} unavailable: {why}")
    return name


# the Functions launch their kernels from forward/backward themselves (no triton_op, so
# bench_corpus.py's cuda run does not reach them): cuda here, for the GPU run
_FUNCTION_DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda])]


@pytest.mark.parametrize("device", _FUNCTION_DEVICES)
@pytest.mark.parametrize("case", _params(False, FUNCTION_CASES, check="forward"))
def test_function_forward_and_gradients_match_numpy(case, device, ieee_on_cuda):
    check_forward_and_gradients(case, ieee_on_cuda(case, _device(device)))


def _contract_params():
    out = []
    for p in _params(False, FUNCTION_CASES, check="contract"):
        (case,) = p.values
        if case.upstream_bug:
            p = pytest.param(case, id=p.id, marks=[*p.marks, pytest.mark.xfail(
                strict=True, raises=AssertionError, reason=f"upstream bug: {case.upstream_bug}")])
        out.append(p)
    return out


@pytest.mark.parametrize("device", _FUNCTION_DEVICES)
@pytest.mark.parametrize("case", _contract_params())
def test_function_contract(case, device, ieee_on_cuda):
    check_function(case, ieee_on_cuda(case, _device(device)))


@pytest.mark.parametrize("device", _FUNCTION_DEVICES)
@pytest.mark.parametrize("case", _params(False, FUNCTION_CASES, backward=False, check="compiled"))
def test_function_compiled_without_grad(case, device, ieee_on_cuda):
    check_function_compiled(case, ieee_on_cuda(case, _device(device)))


def test_function_backward_after_a_mean_loss():
    """The usual training loss, ``out.mean().backward()``, through attorch's activation Function:
    its backward kernel reads the incoming gradient as contiguous, which mean's gradient is (as in
    torch: expanded, then divided). It was refused while mean's gradient was a broadcast view."""
    (case,) = [c for c in FUNCTION_CASES if c.id == "attorch.act_gelu"]
    np_args = case.inputs(np.random.default_rng(0), 1)
    x = tensorplay.tensor(np_args[0], requires_grad=True)
    out = case.op(x, *np_args[1:])
    out.mean().backward()
    (want,) = finite_difference_grads(case, np_args, [np.full(out.shape, 1.0 / out.numel())])
    np.testing.assert_allclose(x.grad.numpy(), want, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("case", _params(True, [*CASES, *FUNCTION_CASES]))
def test_isolated_case(case):
    """Both checks, in a fresh process (the case's kernels write out of bounds under a known gap)."""
    _cpu()
    env = dict(os.environ, PYTHONFAULTHANDLER="0")
    proc = subprocess.run([sys.executable, "-m", "corpus.check", case.id], cwd=_TESTS_DIR, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise IsolatedCaseFailed(f"{case.id}: exit status {proc.returncode}\n{proc.stdout[-2000:]}"
                                 f"\n{proc.stderr[-4000:]}")
