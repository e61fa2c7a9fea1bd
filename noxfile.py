"""nox sessions (``pip install nox``, then ``nox -s NAME``; ``nox -l`` lists them).

* ``tests`` -- core + cpu/cuda/triton plugins + example pack, the whole suite, once per supported
  Python (``tests-3.10`` ... ``tests-3.13``; ``.ci/run`` runs the README's command instead).
* ``minimums`` -- the whole suite on Python 3.10 with every direct dependency at its declared
  minimum (``>=X`` installed as ``==X``): proves the lower bounds in the pyproject files.
* ``wheels`` -- builds the sdist and wheel of all five distributions; installs every documented
  ``pip install`` command (every Markdown page but the CHANGELOG) into an empty venv (or into the
  venv of the page's earlier command it adds to) from a local index that also holds a fake
  ``tensorplay`` 1.1.0 (PyPI's unrelated project) and a stand-in ``torch`` (name and version only:
  the bridge's commands are checked for resolution, never with PyTorch), asserting that ours is
  what imports, and logs the install matrix (``-- --matrix-only`` stops there); then
  installs the wheels (non-editable) into a fresh venv, runs ``tensorplay check`` there, and the
  test suite taken from the core's sdist against those installed wheels.
* ``docs`` -- the documentation site (``mkdocs build --strict``: any warning fails).
* ``core_without_numpy`` -- the core alone: proves ``import tensorplay`` imports no numpy (nor
  cupy/triton/torch), that schemas, registration and fake tensors work without a device plugin,
  and that creating a real tensor then fails with a message naming the plugin to install.
* ``torch`` -- the PyTorch bridge (``plugins/tensorplay_torch``): torch 2.13.0 (CPU) + core + cpu
  plugin + triton plugin (with Triton, whose kernels run through its interpreter on cpu) + example
  pack + ``tests/packs/newuser_pack`` + the bridge, running ``tests/torch_bridge/`` (opcheck over
  both packs and the kernel corpus of tests/corpus, torch.compile, DDP with gloo, the guide). The
  only session with torch un-blocked for tests; the core's sessions never install it. Not in the
  default list; CI (``.ci/run``) runs it on Python 3.11.
* ``bench`` -- ``python benchmarks/run_all.py`` (figures and ratios measured in the same run).
* ``lint`` -- ruff over the repository (rules: ``[tool.ruff]`` in pyproject.toml).
* ``triton_versions`` -- tensorplay-triton's interpreter tests on each supported Triton release.
* ``triton_numpy`` -- the same tests on the newest NumPy (Python 3.13) with the oldest and the
  newest supported Triton.

Interpreters are found as ``pythonX.Y`` on ``PATH``; with pyenv, make them all visible with e.g.
``PYENV_VERSION=3.11.7:3.10.13:3.12.1:3.13.0`` (``.ci/run`` does this).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import sys
import tarfile
from pathlib import Path

import nox

nox.options.sessions = ["tests", "minimums", "wheels", "docs", "core_without_numpy", "lint"]
nox.options.reuse_existing_virtualenvs = True

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
# The corpus's pinned kernel wheels (tests/corpus/_upstream.py downloads them once): the suite run
# from the extracted sdist (session wheels) uses the repository's cache too, not a fresh one.
CORPUS_WHEELS = {"TENSORPLAY_CORPUS_WHEELS": os.environ.get("TENSORPLAY_CORPUS_WHEELS")
                 or str(Path(__file__).resolve().parent / ".corpus-wheels")}
# The whole suite runs in four places in CI (the README's command, then tests-3.13, minimums and
# wheels here) on 2 cores with 90 minutes for all of it: each spreads it over the cores with
# pytest-xdist (its test ids are the same in every process). A run's own ``-- -n 0`` (later on
# the command line) makes it serial again.
XDIST = ("pytest-xdist",)
PARALLEL = ("-n", "auto")
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
    session.install("-e", ".[test]", *LOCAL[2:], *XDIST)
    session.run("python", "-m", "pytest", "-q", *PARALLEL, "tests", *session.posargs)


DIST_DIRS = [".", "plugins/tensorplay_cpu", "plugins/tensorplay_cuda", "plugins/tensorplay_triton",
             "examples"]


def _requirements(path):
    """Every requirement string of a pyproject file: dependencies and every extra."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:                                   # nox runs on 3.10: pytest's own dependency
        import tomli as tomllib
    with open(os.path.join(path, "pyproject.toml"), "rb") as f:
        proj = tomllib.load(f)["project"]
    reqs = list(proj.get("dependencies", []))
    for extra in proj.get("optional-dependencies", {}).values():
        reqs += extra
    return reqs


def _minimum_pins():
    """``name==X`` for each direct dependency declared ``name>=X`` (all five distributions; our
    own pinned distributions and CuPy, which needs a GPU to matter, left out)."""
    pins = {}
    for d in DIST_DIRS:
        for req in _requirements(d):
            # name[extras]>=X[,<Y]: the extras are kept (pyright[nodejs] without its extra has
            # no node to run, and its tests would skip instead of checking the minimum).
            m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*>=\s*([^,;\s]+)\s*(?:,\s*<[^;]*)?",
                             req)
            if not m or m.group(1).startswith(("tensorplay", "cupy")):
                continue
            name, extras, low = m.group(1).lower(), m.group(2) or "", m.group(3)
            old_extras, old_low = pins.get(name, ("", low))
            pins[name] = (extras or old_extras,
                          max(old_low, low, key=lambda v: [int(x) for x in re.findall(r"\d+", v)]))
    return [f"{n}{e}=={v}" for n, (e, v) in sorted(pins.items())]


@nox.session(python=PYTHONS[0])
def minimums(session):
    """The whole suite with every direct dependency at its declared minimum version."""
    pins = _minimum_pins()
    session.log("declared minimums: " + " ".join(pins))
    session.install(*pins, *XDIST)     # one resolve: xdist fits the pinned pytest
    session.install("--no-deps", *LOCAL)
    session.run("python", "-m", "pip", "check")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *PARALLEL, "tests",
                *session.posargs)


# A stand-in for PyPI's ``tensorplay`` 1.x (an unrelated project): if any documented command
# resolves it, ``import tensorplay`` says so.
FAKE_TENSORPLAY = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=77"]\n'
                      'build-backend = "setuptools.build_meta"\n[project]\nname = "tensorplay"\n'
                      'version = "1.1.0"\n[project.scripts]\ntensorplay = "tensorplay:main"\n',
    "tensorplay/__init__.py": 'print("WRONG: PyPI\'s tensorplay 1.1.0 was installed")\n'
                              'FAKE_PYPI_TENSORPLAY = True\n\n\ndef main():\n    print("WRONG")\n',
}

# Run in each venv after a documented install: ours is what imports. Its last line: the
# TensorPlay distributions installed and the stand-ins (see _install_docs.STAND_INS) installed.
OURS_CHECK = r"""
import importlib.metadata as md, json, sys
import tensorplay
names = sorted({d.metadata["Name"].lower() for d in md.distributions()
                if (d.metadata["Name"] or "").lower().startswith("tensorplay")})
assert not hasattr(tensorplay, "FAKE_PYPI_TENSORPLAY"), "PyPI's tensorplay was imported"
assert "tensorplay" not in names, f"the distribution tensorplay was installed: {names}"
assert hasattr(tensorplay, "library") and tensorplay.__version__ == md.version("tensorplay-core")
stand_ins = sorted(f"{d.metadata['Name']} {d.version}" for d in md.distributions()
                   if (d.metadata.get("Summary") or "").startswith("stand-in for "))
print(json.dumps([names, stand_ins]))
"""


def _write_project(folder, files):
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)


def _simple_index(index, *folders):
    """A PEP 503 index (``file://`` URL) of the distribution files in ``folders``."""
    from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
    projects = {}
    for folder in folders:
        for f in sorted(os.listdir(folder)):
            parse = parse_wheel_filename if f.endswith(".whl") else parse_sdist_filename
            try:
                name = parse(f)[0]
            except Exception:  # noqa: BLE001 - not a distribution file
                continue
            projects.setdefault(canonicalize_name(name), []).append(os.path.join(folder, f))
    for name, files in projects.items():
        os.makedirs(os.path.join(index, name))
        links = "".join(f'<a href="file://{f}">{os.path.basename(f)}</a><br>\n' for f in files)
        with open(os.path.join(index, name, "index.html"), "w") as out:
            out.write(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    return "file://" + index


def _install_matrix(session, tmp, dist):
    """Every ``pip install`` command of the README, the docs and the guides, each into an empty
    venv (or, for a command that adds to a venv an earlier command of its page created, into that
    one after it), against a local index holding their dependencies, stand-ins for the few too
    large for CI (``STAND_INS``: torch) and a fake ``tensorplay`` 1.1.0 (and nothing of ours: the
    commands find our wheels the way they say, ``--find-links dist``); pip never reaches PyPI.
    Asserts that ``import tensorplay`` is ours after each; logs the matrix."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"))
    from _install_docs import (STAND_INS, WHEELHOUSE, install_commands, stand_in_files,
                               stand_in_version, tool_install_commands, write_guide_pack)

    # the repository as a user has it, with the built wheels in dist/; the op-pack guide's pack
    # beside it (the guide's layout: my-ops/ and ../tensorplay)
    work = os.path.join(tmp, "matrix")
    shutil.rmtree(work, ignore_errors=True)
    src = os.path.join(work, "tensorplay")
    shutil.copytree(".", src, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".nox", "dist", "build", "*.egg-info", "__pycache__", "site"))
    shutil.copytree(dist, os.path.join(src, "dist"))
    pack = str(write_guide_pack(Path(work)))
    cmds = install_commands(Path(src))

    fake_dist = os.path.join(work, "fake-dist")
    _write_project(os.path.join(work, "fake-tensorplay"), FAKE_TENSORPLAY)
    session.run("python", "-m", "build", "--no-isolation", "--wheel", "--outdir", fake_dist,
                os.path.join(work, "fake-tensorplay"))
    stand_ins = {}
    for name, why in STAND_INS.items():
        version = stand_in_version(name, Path(src))
        _write_project(os.path.join(work, f"stand-in-{name}"), stand_in_files(name, version, why))
        session.run("python", "-m", "build", "--no-isolation", "--wheel", "--outdir", fake_dist,
                    os.path.join(work, f"stand-in-{name}"), silent=True)
        stand_ins[name] = version
        session.log(f"STAND-IN: the index's {name} is {name} {version}, a wheel with only that "
                    f"name and version (importing it raises ImportError), not {name}: {why}. "
                    "Every command needing it below is checked for name resolution only.")

    # the dependencies of every command, downloaded once (the only step that reaches PyPI)
    wheelhouse = os.path.join(tmp, "wheelhouse")
    os.makedirs(wheelhouse, exist_ok=True)
    with session.chdir(src):
        session.run("python", "-m", "pip", "download", "-q", "-d", wheelhouse, "--find-links",
                    dist, *WHEELHOUSE)
    from packaging.utils import canonicalize_name
    for f in glob.glob(os.path.join(wheelhouse, "*")):
        name = canonicalize_name(re.split(r"-\d", os.path.basename(f), maxsplit=1)[0])
        if name.startswith("tensorplay") or name in stand_ins:
            os.remove(f)    # ours come only from dist/, as the commands say; stand-ins only
    index = _simple_index(os.path.join(work, "simple"), wheelhouse, fake_dist)

    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    # PIP_NO_COMPILE: no bytecode for triton/cupy in every venv (resolution is what is tested)
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=index, PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_COMPILE="1")
    # the control: the index is live, so the command the docs printed before the rename
    # installs the fake and the check below fails on it
    venv = os.path.join(work, "venv-control")
    session.run("python", "-m", "venv", venv, silent=True)
    py = os.path.join(venv, "bin", "python")
    with session.chdir(src):
        session.run(py, "-m", "pip", "install", "-q", "--find-links", "dist", "tensorplay[cpu]",
                    env=env, external=True)
    session.run(py, "-c", OURS_CHECK, env=env, external=True, success_codes=[1])
    shutil.rmtree(venv)

    matrix, venvs = [], {}
    last_use = {c.base or c: i for i, c in enumerate(cmds)}    # a venv's last command
    for i, cmd in enumerate(cmds):
        if cmd.base is None:
            venv = venvs[cmd] = os.path.join(work, f"venv{i}")
            session.run("python", "-m", "venv", venv, silent=True)
        else:                           # adds to the install of the page's earlier command
            venv = venvs[cmd] = venvs[cmd.base]
        py = os.path.join(venv, "bin", "python")
        on = f" (into the venv of: {cmd.base})" if cmd.base is not None else ""
        note = " (the page abbreviates it with '...': run without it)" \
            if cmd.pip_args != cmd.args else ""
        session.log(f"[{cmd.doc}] {cmd}{on}{note}")
        with session.chdir(pack if cmd.in_pack else src):
            session.run(py, "-m", "pip", "install", "-q", *cmd.pip_args, env=env, external=True)
        out = session.run(py, "-c", OURS_CHECK, env=env, external=True, silent=True)
        names, stand_ins = json.loads(out.strip().splitlines()[-1])
        matrix.append((cmd.doc, str(cmd) + on, json.dumps(names) + (
            "; STAND-IN (not the real project, name resolution only): " + ", ".join(stand_ins)
            if stand_ins else "")))
        if last_use[cmd.base or cmd] == i:
            shutil.rmtree(venv)         # no later command adds to it
    session.log("install matrix (command -> tensorplay distributions installed):")
    for doc, cmd, names in matrix:
        session.log(f"  [{doc}] {cmd} -> {names}")
    for cmd in tool_install_commands(Path(src)):
        session.log(f"  [{cmd.doc}] {cmd} -> not run: installs a tool, none of ours")


@nox.session(python=PYTHONS[-2])
def wheels(session):
    """Built sdists and wheels of all five distributions: every documented install command
    resolves ours, never PyPI's unrelated ``tensorplay`` (:func:`_install_matrix`); installed
    non-editable in a fresh venv, ``tensorplay check`` passes, and the suite from the core's
    sdist passes against the installed wheels."""
    session.install("build", "setuptools>=77", "packaging")
    tmp = os.path.abspath(session.create_tmp())     # absolute: the suite runs from elsewhere
    for old in ("dist", "sdist"):
        shutil.rmtree(os.path.join(tmp, old), ignore_errors=True)
    dist = os.path.join(tmp, "dist")
    for d in DIST_DIRS:
        session.run("python", "-m", "build", "--outdir", dist, d)
    session.log("built: " + " ".join(sorted(os.listdir(dist))))
    _install_matrix(session, tmp, dist)
    if "--matrix-only" in session.posargs:         # nox -s wheels -- --matrix-only
        return
    venv = os.path.join(tmp, "venv")
    session.run("python", "-m", "venv", "--clear", venv)     # this session's Python
    py = os.path.join(venv, "bin", "python")
    tp_exe = os.path.join(venv, "bin", "tensorplay")
    session.run(py, "-m", "pip", "install", "-q", "--find-links", dist,
                "tensorplay-core[all,test]", "tensorplay-example-ops", *XDIST, external=True)
    session.run(py, "-m", "pip", "check", external=True)
    session.run(py, "-c", "import importlib.resources as r; "
                "assert r.files('tensorplay').joinpath('py.typed').is_file(), 'py.typed missing'",
                external=True)
    session.run(tp_exe, "check", external=True)
    sdist = glob.glob(os.path.join(dist, "tensorplay_core-[0-9]*.tar.gz"))[0]
    src = os.path.join(tmp, "sdist")
    with tarfile.open(sdist) as tar:
        tar.extractall(src, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    (top,) = os.listdir(src)
    with session.chdir(os.path.join(src, top)):
        session.run(py, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PARALLEL, "tests",
                    *session.posargs, env=CORPUS_WHEELS, external=True)


@nox.session(python=PYTHONS[-2])
def docs(session):
    """The documentation site; any mkdocs/mkdocstrings warning is an error."""
    session.install("-r", "docs/requirements.txt")
    session.install("-e", ".", "-e", "plugins/tensorplay_cpu")
    session.run("mkdocs", "build", "--strict", "--site-dir", os.path.join(session.create_tmp(),
                                                                          "site"))


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
def torch(session):
    """tests/torch_bridge/ with torch installed: the bridge's tests (collected only with
    TENSORPLAY_TORCH_TESTS=1; elsewhere that directory collects nothing and imports no torch)."""
    session.install("torch==2.13.0")
    # tensorplay-triton brings Triton (its kernels run through the interpreter on cpu): the
    # corpus of tests/corpus, opchecked by test_opcheck_corpus.py, is Triton kernels
    session.install("-e", ".[test]", "-e", "plugins/tensorplay_cpu", "-e", "plugins/tensorplay_triton",
                    "-e", "examples", "-e", "plugins/tensorplay_torch")
    # tests/packs/newuser_pack has no pyproject: installed as an editable install would be
    session.run("python", "tests/torch_bridge/install_newuser_pack.py")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/torch_bridge",
                *session.posargs, env={"TENSORPLAY_TORCH_TESTS": "1"})


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
    """ruff over the repository (the rules: ``[tool.ruff]`` in pyproject.toml)."""
    session.install("ruff==0.17.6")     # pinned: a new release's rules must not turn lint red
    session.run("ruff", "check", ".", *session.posargs)


# Triton releases tensorplay-triton supports (its pyproject pins exactly this range): the plugin uses
# Triton internals (driver, launcher, interpreter), so each release runs the interpreter tests.
TRITON_VERSIONS = ["3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0"]
# tensorplay-triton's interpreter tests (kernels on cpu run through Triton's interpreter on NumPy)
TRITON_TESTS = ["tests/test_triton.py", "tests/test_triton_tutorials.py", "tests/test_triton_raw.py",
                "tests/test_triton_direct.py", "tests/test_triton_bf16_interp.py",
                "tests/test_triton_spellings.py"]


@nox.session(python="3.11")
@nox.parametrize("triton", TRITON_VERSIONS)
def triton_versions(session, triton):
    """tensorplay-triton's tests (interpreter on cpu, no TRITON_INTERPRET) on one Triton release."""
    session.install("-e", ".[test]", "-e", "plugins/tensorplay_cpu", "-e", "plugins/tensorplay_triton",
                    "-e", "examples")
    session.install(f"triton=={triton}")
    session.run("python", "-c", "import triton, numpy; print('triton', triton.__version__, "
                "'numpy', numpy.__version__)")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *TRITON_TESTS,
                *session.posargs)


@nox.session(python=PYTHONS[-1])
@nox.parametrize("triton", [TRITON_VERSIONS[0], TRITON_VERSIONS[-1]])
def triton_numpy(session, triton):
    """The interpreter tests on the newest NumPy pip resolves (2.5 needs Python >= 3.12; the
    ``triton_versions`` sessions run Python 3.11, hence NumPy 2.4) with the oldest and the newest
    supported Triton: Triton's interpreter computes with NumPy, and NumPy releases change what it
    accepts (2.4 refused ``int()`` on the 1-element arrays it uses for scalars: Triton issue 9171)."""
    session.install("-e", ".[test]", "-e", "plugins/tensorplay_cpu", "-e", "plugins/tensorplay_triton",
                    "-e", "examples")
    session.install(f"triton=={triton}", "--upgrade", "numpy")
    session.run("python", "-c", "import triton, numpy; print('triton', triton.__version__, "
                "'numpy', numpy.__version__)")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *TRITON_TESTS,
                *session.posargs)
