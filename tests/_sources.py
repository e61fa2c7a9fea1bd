"""Where the source of the core and of the plugins we ship lives, for the tests that read it.

In a checkout the plugins are ``plugins/<name>/<name>``. The core's sdist (``nox -s wheels`` runs
the suite from it against installed wheels) has no ``plugins/``: there the source of each plugin
is its installed package. Either way a scan reads every shipped plugin that is present and
refuses to run on nothing: the core and ``tensorplay_cpu`` must be found.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "tensorplay_core" / "tensorplay"
# the plugin packages this repository ships under plugins/ (test_sources checks the list)
SHIPPED_PLUGINS = ("tensorplay_cpu", "tensorplay_cuda", "tensorplay_torch", "tensorplay_triton")
REQUIRED_PLUGINS = ("tensorplay_cpu",)


def plugin_dir(name: str) -> Path | None:
    """The source folder of plugin package ``name``: the checkout's, else the installed one's,
    else None (not installed here, e.g. ``tensorplay_torch`` in a venv without torch)."""
    repo = ROOT / "plugins" / name / name
    if repo.is_dir():
        return repo
    spec = importlib.util.find_spec(name)     # a top-level name: finds, does not import
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def plugin_dirs() -> dict[str, Path]:
    """Every shipped plugin's source folder that is present; raises when a required one is not."""
    found = {n: d for n in SHIPPED_PLUGINS if (d := plugin_dir(n)) is not None}
    missing = [n for n in REQUIRED_PLUGINS if n not in found]
    if missing:
        raise AssertionError(f"source of {missing} not found in {ROOT / 'plugins'} nor installed: "
                             "pip install -e plugins/tensorplay_cpu")
    return found


def source_files(core: bool = True) -> list[Path]:
    """Every module of the core package (when ``core``) and of the shipped plugins present."""
    files = sorted(CORE.rglob("*.py")) if core else []
    assert not core or files, f"no core source under {CORE}"
    for d in plugin_dirs().values():
        files += sorted(d.rglob("*.py"))
    return files


def display(path: Path) -> str:
    """``path`` for a failure message: relative to the checkout, or to its installed package's
    parent (site-packages)."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        for d in plugin_dirs().values():
            if path.is_relative_to(d):
                return str(path.relative_to(d.parent))
        return str(path)
