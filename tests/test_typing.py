"""The public API type-checks (issue 12, "Types that check"): mypy and pyright report 0 errors on
``tests/typing/usage.py``, and they do check it -- calls that disagree with an op's parameters or
return type are reported (an op made by ``custom_op`` carries its function's signature).

Each checker runs in a subprocess; a checker that is not installed skips its test with the
reason (``pip install -e ".[test]"`` installs both; pyright's ``nodejs`` extra supplies the
Node.js it runs on, so no download is needed).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
USAGE = ROOT / "tests" / "typing" / "usage.py"
REALISTIC = ROOT / "tests" / "typing" / "realistic.py"   # strict: ``# pyright: strict`` inside
CORE = ROOT / "tensorplay_core" / "tensorplay"

BAD = '''
from __future__ import annotations
import tensorplay as tp
from tensorplay import library

@library.custom_op("typing_bad::weighted_sum", mutates_args=())
def weighted_sum(x: tp.Tensor, w: float) -> tp.Tensor:
    return x * w

x = tp.ones(2)
a = weighted_sum(x, "two")           # line 11: str for float
b = weighted_sum(x)                  # line 12: missing w
c: int = weighted_sum(x, 1.0)        # line 13: returns a Tensor
d = weighted_sum(x, 1.0, scale=2)    # line 14: no such parameter
'''
BAD_LINES = {11, 12, 13, 14}


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[test]' installs it)")


def _mypy(path, *flags: str) -> tuple[int, str]:
    _need("mypy")
    cache = os.path.join(tempfile.gettempdir(), f"tensorplay-mypy-cache-{os.getuid()}")
    p = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", cache, *flags,
                        "--no-error-summary", "--hide-error-context", str(path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    return p.returncode, p.stdout + p.stderr


def _pyright(path, *flags: str) -> tuple[int, str]:
    _need("pyright")
    env = dict(os.environ, PYRIGHT_PYTHON_IGNORE_WARNINGS="1")   # no version check online
    p = subprocess.run([sys.executable, "-m", "pyright", "--pythonpath", sys.executable,
                        *flags, str(path)], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=600, check=False)
    return p.returncode, p.stdout + p.stderr


def _error_lines(output: str, path) -> set[int]:
    name = re.escape(pathlib.Path(path).name)
    return {int(m.group(1)) for m in re.finditer(rf"{name}:(\d+):(?:\d+)?:? *(?:- )?error", output)}


def test_py_typed_markers_ship():
    """Every installed TensorPlay package carries ``py.typed`` (found where it is installed, so the
    check holds for editable installs and for built wheels alike)."""
    import importlib.util
    from pathlib import Path
    for mod in ("tensorplay", "tensorplay_cpu", "tensorplay_cuda", "tensorplay_triton",
                "tensorplay_example_ops"):
        spec = importlib.util.find_spec(mod)
        assert spec is not None and spec.origin, f"{mod} is not installed"
        assert (Path(spec.origin).parent / "py.typed").is_file(), f"{mod}: no py.typed"


@pytest.mark.parametrize("checker", [_mypy, _pyright], ids=["mypy", "pyright"])
def test_usage_file_type_checks_clean(checker):
    rc, out = checker(USAGE)
    assert rc == 0, out
    assert " error" not in out.replace("0 errors", ""), out


@pytest.mark.parametrize("checker", [_mypy, _pyright], ids=["mypy", "pyright"])
def test_checkers_see_the_ops_real_signature(checker, tmp_path):
    bad = tmp_path / "bad_usage.py"
    bad.write_text(BAD)
    rc, out = checker(bad)
    assert rc != 0, out
    assert _error_lines(out, bad) == BAD_LINES, out
    assert "not callable" not in out, out


def _strict_mypy(path) -> tuple[int, str]:
    return _mypy(path, "--strict")


@pytest.mark.parametrize("checker", [_strict_mypy, _pyright], ids=["mypy-strict", "pyright-strict"])
def test_realistic_user_file_is_clean_under_strict_checkers(checker):
    """Issue 29, "Typed tensors": a realistic user file (a custom op with ``register_fake`` and
    ``register_autograd``, factories, arithmetic with Python scalars, ``.grad`` handling, a
    training step, ``tensorplay.cuda`` queries, ``tensorplay.compile``) gets 0 errors from pyright
    strict (the file says ``# pyright: strict``) and ``mypy --strict``: tensors, factories and
    ``tensorplay.cuda`` are typed, and ``x.grad`` is ``Tensor | None`` (not ``None``, which made
    the code under ``if x.grad is not None:`` unreachable). Its ``assert_type`` lines pin the
    inferred types, so an ``Any`` that silences the checkers fails too."""
    assert "# pyright: strict" in REALISTIC.read_text().splitlines()[0]
    rc, out = checker(REALISTIC)
    errors = [line for line in out.splitlines() if re.search(r"\berror\b", line)
              and not re.search(r"\b0 errors\b", line)]
    assert rc == 0 and not errors, f"{len(errors)} errors:\n{out}"


def test_realistic_user_file_runs():
    """The typed user file is working code: it runs as a script on the cpu."""
    p = subprocess.run([sys.executable, str(REALISTIC)], capture_output=True, text=True,
                       cwd=ROOT, timeout=600, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "loss " in p.stdout, p.stdout
