"""Packaging: distributions that resolve together, metadata, and a pytest plugin that stays out
of unrelated test runs. (Built wheels and sdists are installed and tested by ``nox -s wheels``.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _plugin_dists import _PYCACHE, BROKEN_IMPORT, PluginEnv

try:
    import tomllib
except ModuleNotFoundError:      # Python 3.10: pytest depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
DISTS = {"tensorplay-core": ROOT, "tensorplay-cpu": ROOT / "plugins" / "tensorplay_cpu",
         "tensorplay-cuda": ROOT / "plugins" / "tensorplay_cuda",
         "tensorplay-triton": ROOT / "plugins" / "tensorplay_triton",
         "tensorplay-example-ops": ROOT / "examples",
         "tensorplay-torch": ROOT / "plugins" / "tensorplay_torch"}


def _project(name):
    path = DISTS[name] / "pyproject.toml"
    if not path.exists():
        pytest.skip(f"{path} is not here (tests run from an installed copy)")
    with open(path, "rb") as f:
        return tomllib.load(f)["project"]


def _core_version():
    return _project("tensorplay-core")["version"]


def test_core_version_is_the_package_version():
    import tensorplay
    assert tensorplay.__version__ == _core_version()


def test_core_distribution_is_a_name_we_own():
    """The import name is ``tensorplay``; the distribution is ``tensorplay-core``, because PyPI's
    ``tensorplay`` (1.x, an unrelated code base) sorts above our pre-releases and would be
    picked by ``pip install tensorplay`` or ``tensorplay[cpu]``. (``nox -s wheels`` installs
    every documented command against an index that holds a fake ``tensorplay`` 1.1.0.)"""
    from importlib import metadata

    import tensorplay
    assert _project("tensorplay-core")["name"] == "tensorplay-core"
    assert metadata.version("tensorplay-core") == tensorplay.__version__
    assert "tensorplay" in metadata.entry_points(group="console_scripts",
                                                 name="tensorplay").names
    ep, = metadata.entry_points(group="console_scripts", name="tensorplay")
    # the entry module catches errors raised during `import tensorplay` (bad controls)
    assert ep.value == "_tensorplay_cli:main" and ep.dist.name == "tensorplay-core"


@pytest.mark.parametrize("name", [n for n in DISTS if n != "tensorplay-core"])
def test_every_plugin_pins_the_core_release_it_was_built_with(name):
    """The core is ``tensorplay-core`` (PyPI's ``tensorplay`` is an unrelated project), pinned to
    the release the plugin was built with; nothing names the bare ``tensorplay``."""
    proj = _project(name)
    reqs = list(proj["dependencies"]) + [r for e in proj.get("optional-dependencies", {}).values()
                                         for r in e]
    names = [re.split(r"[\s\[=<>!~;]", r, maxsplit=1)[0].lower() for r in reqs]
    assert "tensorplay" not in names, reqs
    core = [d for d, n in zip(proj["dependencies"], names) if n == "tensorplay-core"]
    assert core == [f"tensorplay-core=={_core_version()}"], proj["dependencies"]
    if name != "tensorplay-example-ops":
        assert proj["version"] == _core_version()


def test_core_extras_name_the_pinned_plugins():
    v = _core_version()
    extras = _project("tensorplay-core")["optional-dependencies"]
    assert extras["cpu"] == [f"tensorplay-cpu=={v}"]
    assert extras["cuda"] == [f"tensorplay-cuda=={v}"]
    assert extras["triton"] == [f"tensorplay-triton=={v}"]
    assert sorted(extras["all"]) == sorted(
        f"tensorplay-{p}=={v}" for p in ("cpu", "cuda", "triton"))
    assert extras["cuda12"] == [f"tensorplay-cuda[cuda12]=={v}"]
    assert extras["cuda13"] == [f"tensorplay-cuda[cuda13]=={v}"]


def test_cuda_plugin_offers_cuda12_and_cuda13_without_forcing_one():
    proj = _project("tensorplay-cuda")
    assert not [d for d in proj["dependencies"] if d.startswith("cupy")], proj["dependencies"]
    extras = proj["optional-dependencies"]
    assert [d.split(">")[0] for d in extras["cuda12"]] == ["cupy-cuda12x"]
    assert [d.split(">")[0] for d in extras["cuda13"]] == ["cupy-cuda13x"]


@pytest.mark.parametrize("name", list(DISTS))
def test_metadata_license_readme_classifiers(name):
    proj = _project(name)
    assert proj["license"] == "MIT" and proj["license-files"] == ["LICENSE"]
    lic = (DISTS[name] / "LICENSE").read_text()
    assert lic == (ROOT / "LICENSE").read_text() and "TensorPlay contributors" in lic
    assert (DISTS[name] / proj["readme"]).is_file()
    assert "Programming Language :: Python :: 3.13" in proj["classifiers"]
    assert proj["requires-python"] == ">=3.10"


def test_core_ships_py_typed():
    import tensorplay
    assert (Path(tensorplay.__file__).parent / "py.typed").is_file()
    with open(ROOT / "pyproject.toml", "rb") as f:
        cfg = tomllib.load(f)
    assert "py.typed" in cfg["tool"]["setuptools"]["package-data"]["tensorplay"]


def test_sdist_manifest_ships_the_test_support_files():
    """setuptools puts ``tests/test*.py`` in the sdist by itself, but not ``conftest.py`` nor
    the helper modules: without them the tests of an sdist do not even collect."""
    manifest = (ROOT / "MANIFEST.in").read_text().split("\n")
    assert "graft tests" in manifest
    helpers = [p.name for p in (ROOT / "tests").glob("*.py") if not p.name.startswith("test_")]
    assert "conftest.py" in helpers and "_plugin_dists.py" in helpers


# ---- the pytest plugin stays out of unrelated runs -----------------------------------------

UNRELATED = '''
import sys

def test_tensorplay_not_imported(request):
    assert request.config.pluginmanager.hasplugin("tensorplay")     # the entry module is loaded
    assert not [m for m in sys.modules if m == "tensorplay" or m.startswith("tensorplay")], \\
        sorted(m for m in sys.modules if m.startswith("tensorplay"))

def test_plain():
    assert 1 + 1 == 2
'''


def _pytest(root, *args):
    env = {**os.environ, "PYTHONPYCACHEPREFIX": _PYCACHE,
           "PYTHONPATH": os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    env.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o",
                        "addopts=", "--rootdir", root, *args], cwd=root, capture_output=True,
                       text=True, timeout=300, env=env, check=False)
    return p.returncode, p.stdout + p.stderr


def test_pytest_plugin_imports_nothing_in_an_unrelated_strict_run(tmp_path):
    """A broken TensorPlay plugin is installed; an unrelated suite run with ``-W error`` passes,
    and neither tensorplay nor any TensorPlay plugin is imported."""
    env = PluginEnv(tmp_path)
    env.dist("tensorplay-brokenpack", plugins={"brokenpack": "brokenpack"},
             modules={"brokenpack": BROKEN_IMPORT})
    (tmp_path / "test_unrelated.py").write_text(textwrap.dedent(UNRELATED))
    rc, out = _pytest(env.root, "-W", "error", "-q", "test_unrelated.py")
    assert rc == 0 and "2 passed" in out, out
    assert env.executed() == [], "a TensorPlay plugin module ran in an unrelated pytest run"
    # the control: the broken plugin is live, so importing tensorplay under -W error reports it
    # (on stderr: a plugin's fault never makes `import tensorplay` fail, even under -W error)
    (tmp_path / "test_uses_tensorplay.py").write_text("def test_it():\n    import tensorplay\n")
    rc, out = _pytest(env.root, "-W", "error", "-q", "-s", "test_uses_tensorplay.py")
    assert rc == 0 and "tensorplay-brokenpack" in out and "PluginWarning" in out, out


def test_pytest_plugin_options_show_without_importing_tensorplay(tmp_path):
    (tmp_path / "conftest.py").write_text(
        "import sys\n"
        "def pytest_unconfigure(config):\n"
        "    print('TENSORPLAY-IMPORTED', 'tensorplay' in sys.modules)\n")
    rc, out = _pytest(str(tmp_path), "--help")
    assert rc == 0 and "--tensorplay-check=PLUGIN" in out and "--tensorplay-check-device" in out
    assert "TENSORPLAY-IMPORTED False" in out, out


# ---- tensorplay-cuda says which CuPy is wrong --------------------------------------------------

def _dists(tmp_path, *names):
    from importlib import metadata
    env = PluginEnv(tmp_path)
    for name, version in names:
        env.dist(name, version)
    return env, list(metadata.distributions(path=[env.root]))


def test_cuda_plugin_reports_missing_and_conflicting_cupy(tmp_path):
    pytest.importorskip("tensorplay_cuda")
    from tensorplay_cuda._cupy_install import install_problem
    _, none = _dists(tmp_path / "a", ("numpy", "2.0"))
    msg = install_problem(none)
    assert "no CuPy is installed" in msg and "tensorplay-cuda[cuda12]" in msg \
        and "tensorplay-cuda[cuda13]" in msg
    _, one = _dists(tmp_path / "b", ("cupy-cuda13x", "14.2.0"))
    assert install_problem(one) is None
    _, two = _dists(tmp_path / "c", ("cupy-cuda12x", "13.6.0"), ("cupy_cuda13x", "14.2.0"))
    msg = install_problem(two)
    assert "conflicting CuPy" in msg and "cupy-cuda12x 13.6.0" in msg and "14.2.0" in msg
    assert "pip uninstall -y cupy-cuda12x cupy_cuda13x" in msg


def test_cuda_device_status_names_conflicting_cupy(tmp_path):
    pytest.importorskip("tensorplay_cuda")
    env, _ = _dists(tmp_path, ("cupy-cuda12x", "13.6.0"), ("cupy", "14.0.0"))
    d = env.run('''
        import tensorplay
        result(tensorplay.plugins.device_status("cuda"))
    ''').data
    assert d[0] is False
    assert "conflicting CuPy" in d[1] and "cupy-cuda12x 13.6.0" in d[1] and "cupy 14.0.0" in d[1]
    assert "device='cpu'" in d[1]


def test_cuda_plugin_without_a_driver_answers_without_importing_cupy():
    """With CuPy installed but no NVIDIA driver (CI, laptops), asking for the devices does not
    import CuPy (over a second in every `tensorplay check` process) and the cuda device's reason
    names the missing driver library and the fix."""
    pytest.importorskip("tensorplay_cuda")
    import ctypes
    from tensorplay_cuda._cupy_install import installed_problem
    if installed_problem() is not None:
        pytest.skip(f"not one CuPy installed, so no driver is looked for: {installed_problem()}")
    if sys.platform != "linux":
        pytest.skip("the driver library's name is checked on Linux here (libcuda.so.1)")
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("an NVIDIA driver loads here: the cuda tests cover this machine")
    except OSError:
        pass
    code = ("import json, sys, tensorplay.plugins as p\n"
            "devices = p.available_devices()\n"
            "print(json.dumps([devices, 'cupy' in sys.modules, p.device_status('cuda')[1]]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    devices, cupy_imported, reason = json.loads(out.strip().splitlines()[-1])
    assert "cuda" not in devices
    assert cupy_imported is False
    assert "no NVIDIA driver is installed" in reason and "cannot be loaded" in reason
    assert "NVIDIA GPU and its driver" in reason and "device='cpu'" in reason
