"""Who is to fix a plugin that failed to load: where its own code raised the error, and
whether it is an editable install (its author's working tree) or another project's release --
so the advice points at that code or those authors, never "upgrade or reinstall" for the
author's own bug (issue 29 §5). Used by ``loading`` for the warning's fix and by the command
line (``_tensorplay_cli``) for its one-line report."""

from __future__ import annotations

import sys

from .state import PluginRecord, _disable_name, _norm


def failure_site(e: BaseException):
    """``(path relative to its sys.path entry, line)`` of the innermost frame of ``e``'s
    traceback outside tensorplay and the import machinery -- where the plugin's own code raised
    (``("my_ops/__init__.py", 27)``) -- plus the absolute path, or ``None``."""
    import os
    core = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    site, tb = None, e.__traceback__
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if not f.startswith("<") and not os.path.abspath(f).startswith(core + os.sep):
            site = (os.path.abspath(f), tb.tb_lineno)
        tb = tb.tb_next
    if site is None:
        return None
    roots = [os.path.abspath(p) for p in sys.path if p and site[0].startswith(os.path.abspath(p))]
    rel = os.path.relpath(site[0], max(roots, key=len)) if roots else site[0]
    return rel.replace(os.sep, "/"), site[1], site[0]


#: the distributions of this project: for their failures the default advice (upgrade or
#: reinstall) stands
_OURS = frozenset({"tensorplay-core", "tensorplay-cpu", "tensorplay-cuda", "tensorplay-triton"})


def author_fix(rec: PluginRecord, e: BaseException):
    """The fix of a plugin failure, pointing at the plugin's author: for an editable install
    its own code (or a dependency it lacks) -- never "upgrade or reinstall"; for another
    project's release, its authors. ``None`` for this project's plugins (the default advice)."""
    site = failure_site(e)
    if site is None or _norm(rec.dist) in _OURS:
        return None
    at = f"{site[0]}:{site[1]}"
    off = f"or disable it with TENSORPLAY_DISABLE_PLUGINS={_disable_name(rec)}."
    if not _editable(rec.dist):
        return (f"the error is raised in {rec.dist}'s code ({at}): report it to its authors "
                f"(pip show {rec.dist}); pip install -U {rec.dist} may bring a fixed release, "
                f"{off}")
    top = (rec.value or "").partition(":")[0].partition(".")[0]
    missing = getattr(e, "name", None) if isinstance(e, ModuleNotFoundError) else None
    if missing and top and missing.partition(".")[0] != top:
        return (f"{rec.dist} imports {missing!r} ({at}), which is not installed: pip install "
                f"it and declare it in {rec.dist}'s dependencies, {off}")
    return (f"the error is in {rec.dist}'s own code ({at}; an editable install, so upgrading "
            f"will not help): fix it there, {off}")


def _editable(dist: str) -> bool:
    """Whether distribution ``dist`` is an editable install (PEP 660 ``direct_url.json``)."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution
    try:
        info = json.loads(distribution(dist).read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        return False
    return bool(info.get("dir_info", {}).get("editable"))
