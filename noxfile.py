"""nox sessions (``pip install nox``, then ``nox -s NAME``; ``nox -l`` lists them).

* ``tests`` -- core + cpu/cuda/triton plugins + example pack, the whole suite (as ``.ci/run``).
* ``core_without_numpy`` -- the core alone: proves ``import tensorplay`` imports no numpy (nor
  cupy/triton/torch), that schemas, registration and fake tensors work without a device plugin,
  and that creating a real tensor then fails with a message naming the plugin to install.
* ``bench`` -- ``python benchmarks/run_all.py`` (figures and ratios measured in the same run).
* ``lint`` -- ruff over the repository.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "core_without_numpy", "lint"]
nox.options.reuse_existing_virtualenvs = True

PYTHONS = ["3.10", "3.11", "3.12"]
LOCAL = ["-e", ".", "-e", "plugins/tensorplay_cpu", "-e", "plugins/tensorplay_cuda", "-e",
         "plugins/tensorplay_triton", "-e", "examples"]

# A script, not a pytest module: the test dependencies (hypothesis, numpy via pytest plugins...)
# must not be installed in this session, so the proof runs on the bare core.
CORE_ONLY = r"""
import sys
import tensorplay as tp
heavy = [m for m in ("numpy", "cupy", "triton", "torch", "array_api_compat") if m in sys.modules]
assert not heavy, f"import tensorplay imported {heavy}"
from tensorplay import fake, library

@library.custom_op("nox::scale", mutates_args=())
def scale(x: tp.Tensor, k: float) -> tp.Tensor:
    return x * k

@scale.register_fake
def _(x, k):
    return x.new_empty(x.shape)

assert str(scale.schema) == "nox::scale(Tensor x, float k) -> Tensor", scale.schema
with fake.FakeTensorMode():
    y = scale(tp.empty(3, 4), 2.0)
assert y.shape == (3, 4) and y.is_fake
try:
    tp.ones(3)
except Exception as e:
    assert "tensorplay-cpu" in str(e), f"unhelpful error without a device plugin: {e}"
else:
    raise AssertionError("a real tensor was created without any device plugin")
heavy = [m for m in ("numpy", "cupy", "triton", "torch") if m in sys.modules]
assert not heavy, f"using the core imported {heavy}"
print("core without numpy: ok")
"""


@nox.session(python=PYTHONS)
def tests(session):
    """The whole suite on core + cpu + example pack."""
    session.install("-e", ".[test]", *LOCAL[2:])
    session.run("python", "-m", "pytest", "-q", "tests", *session.posargs)


@nox.session(python=PYTHONS[-1])
def core_without_numpy(session):
    """``import tensorplay`` and core-only use with no array library installed at all."""
    session.install("-e", ".")
    session.run("python", "-c", "import importlib.util, sys; "
                "sys.exit(importlib.util.find_spec('numpy') is not None and "
                "'numpy is installed in this session; the check would prove nothing')")
    session.run("python", "-c", CORE_ONLY)
    session.run("tensorplay", "plugins")


@nox.session(python="3.11")   # the torch==2.13.0 CPU wheel on this disk is built for 3.11
def bench(session):
    """Benchmarks (see benchmarks/): per-call overhead and the other figures."""
    # PyTorch is the reference measured in the same run: installed into this session's venv
    # only (the CPU wheel; pip takes it from the local disk), never a dependency of the project.
    session.install("torch==2.13.0")
    session.install(*LOCAL)
    session.run("python", "benchmarks/run_all.py", *session.posargs)


@nox.session(python=PYTHONS[-1])
def lint(session):
    """ruff over the repository (configuration in pyproject.toml, if any)."""
    session.install("ruff")
    session.run("ruff", "check", ".", *session.posargs)


# Triton releases tensorplay-triton supports (its pyproject pins exactly this range): the plugin uses
# Triton internals (driver, launcher, interpreter), so each release runs the interpreter tests.
TRITON_VERSIONS = ["3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0"]


@nox.session(python="3.11")
@nox.parametrize("triton", TRITON_VERSIONS)
def triton_versions(session, triton):
    """tensorplay-triton's tests (interpreter on cpu, no TRITON_INTERPRET) on one Triton release."""
    session.install("-e", ".[test]", "-e", "plugins/tensorplay_cpu", "-e", "plugins/tensorplay_triton",
                    "-e", "examples")
    session.install(f"triton=={triton}")
    session.run("python", "-c", "import triton, numpy; print('triton', triton.__version__, "
                "'numpy', numpy.__version__)")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_triton.py",
                "tests/test_triton_tutorials.py", *session.posargs)
