"""A corpus of third-party Triton kernels (Liger-Kernel, Unsloth, FlagGems), run as triton_ops.

The kernels are copied verbatim from their libraries (``tests/corpus/<library>/kernels.py``, with
licence notices and the upstream commit); the host code is what a torch user migrating writes
(``tests/corpus/<library>/ops.py``: ``triton_op``, ``wrap_triton``, ``register_autograd``; each
line that had to change says ``# CHANGED: why``). Each op runs on cpu through Triton's
interpreter, forward and backward, against a float64 NumPy reference (gradients by central finite
differences of that reference), and through ``tensorplay.library.opcheck``.

A case that fails because of a known, tracked gap is ``xfail(strict=True)`` with the gap named;
the same run on the GPU is ``benchmarks/bench_corpus.py``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay  # noqa: E402
from tensorplay import library  # noqa: E402
from tensorplay.errors import OpCheckError  # noqa: E402
from triton.runtime.errors import InterpreterError  # noqa: E402

from corpus import all_cases  # noqa: E402
from corpus.cases import finite_difference_grads, sample_args  # noqa: E402

CASES = all_cases()


def _params():
    out = []
    for c in CASES:
        # a gap shows as the interpreter failing inside a kernel (opcheck wraps it): any other
        # exception (a bug in the host code or the test) is not an expected failure
        marks = ([pytest.mark.xfail(strict=True, reason=c.xfail, raises=(InterpreterError, OpCheckError))]
                 if c.xfail else [])
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


def _cpu():
    ok, why = tensorplay.plugins.device_status("cpu")
    if not ok:
        pytest.skip(f"cpu device unavailable: {why}")
    return "cpu"


def _np(t):
    return t.detach().cpu().numpy()


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def test_corpus_size_and_licences():
    """At least 25 ops with a backward, from at least three libraries, each with its licence file."""
    import pathlib
    libs = {c.id.split(".")[0] for c in CASES}
    assert len(CASES) >= 25 and len(libs) >= 3, (len(CASES), libs)
    root = pathlib.Path(__file__).parent / "corpus"
    for lib in libs:
        assert (root / lib / "LICENSE").is_file(), lib
        head = (root / lib / "kernels.py").read_text()[:3000]
        assert "Upstream: https://github.com/" in head and "commit" in head, lib
    for c in CASES:
        assert c.op._schema.returns, c.id   # every op has an output and a registered backward
        assert c.grad, c.id


@pytest.mark.parametrize("case", _params())
def test_forward_and_gradients_match_numpy(case):
    d = _cpu()
    rng = np.random.default_rng(0)
    np_args = case.inputs(rng, 1)
    args = sample_args(case, np.random.default_rng(0), d, requires_grad=True)
    outs = _as_tuple(case.op(*args))
    refs = case.ref(*[a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                      for a in np_args])
    for i in range(case.n_out):
        np.testing.assert_allclose(_np(outs[i]).astype(np.float64), refs[i], atol=case.atol,
                                   rtol=case.rtol, err_msg=f"{case.id}: output {i}")
    dys = [rng.standard_normal(np.shape(refs[i])) for i in range(case.n_out)]
    loss = None
    for i in range(case.n_out):
        term = (outs[i] * tensorplay.tensor(dys[i].astype(np.float32), device=d)).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    want = finite_difference_grads(case, np_args, dys)
    for i, g in zip(case.grad, want):
        assert args[i].grad is not None, f"{case.id}: no gradient for argument {i}"
        np.testing.assert_allclose(_np(args[i].grad).astype(np.float64), g, atol=10 * case.atol,
                                   rtol=10 * case.rtol, err_msg=f"{case.id}: gradient of argument {i}")


@pytest.mark.parametrize("case", _params())
def test_opcheck(case):
    d = _cpu()
    args = sample_args(case, np.random.default_rng(1), d, requires_grad=True)
    assert library.opcheck(case.op, args) == {}
