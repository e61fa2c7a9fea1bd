"""The documented ``pip install`` commands, as ``nox -s wheels`` installs them (its install
matrix): every page's commands are collected, each finds our distributions where it says, and
everything else it needs is in the matrix's local index (downloaded, or a stand-in for what is
too large for CI's wheelhouse). Fast checks on the text; the matrix itself runs in nox."""

from __future__ import annotations

import re
import shlex

import pytest
from _install_docs import (ELLIPSIS, NOT_INSTALL_DOCS, ROOT, STAND_INS, WHEELHOUSE,
                           bare_tensorplay_requirements, install_commands, our_projects,
                           requirement_closure, stand_in_files, stand_in_version,
                           tool_install_commands, write_guide_pack)
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if not (ROOT / "plugins").is_dir():
    pytest.skip("the repository is not here (the core's sdist has no plugins/ nor examples/, "
                "which the documented commands install)", allow_module_level=True)


def _cwd(cmd, tmp_path):
    return write_guide_pack(tmp_path) if cmd.in_pack else ROOT


def test_every_pip_install_of_every_page_is_collected():
    """Each ``pip install`` printed on any page (parsed here on its own) is a collected command:
    one to install (ours) or one named as a tool's; none silently dropped."""
    collected = {c.args for c in install_commands() + tool_install_commands()}
    printed = {}
    for page in ROOT.rglob("*.md"):
        rel = page.relative_to(ROOT).as_posix()
        if rel in NOT_INSTALL_DOCS or any(part.startswith(".") or part in ("dist", "build", "site")
                                          for part in page.relative_to(ROOT).parts):
            continue
        for m in re.finditer(r"pip install ([^`\n]+?)(?=\s+#|\s*&&|\s*\||`|$)", page.read_text(),
                             re.M):
            printed.setdefault(tuple(shlex.split(m.group(1))), rel)
    dropped = {args: rel for args, rel in printed.items() if args not in collected}
    assert printed and not dropped, dropped
    guide = [c for c in install_commands() if c.doc == "docs/guides/use-from-pytorch.md"]
    assert guide and any("plugins/tensorplay_torch" in c.args for c in guide), guide


def test_no_command_names_pypis_unrelated_tensorplay():
    assert bare_tensorplay_requirements(install_commands()) == []


def test_each_command_finds_our_distributions_where_it_says(tmp_path):
    """A distribution of ours required by name comes from ``--find-links`` (dist/), or from
    the install the command adds to; else pip would look for it on PyPI."""
    for cmd in install_commands():
        _, from_index, _ = requirement_closure(cmd.pip_args, _cwd(cmd, tmp_path))
        if cmd.base is not None:
            from_index -= requirement_closure(cmd.base.pip_args, ROOT)[2]
        if from_index and not {"-f", "--find-links"} & set(cmd.args):
            pytest.fail(f"[{cmd.doc}] {cmd}: needs {sorted(from_index)} but names no "
                        "--find-links (a fresh venv would take them from PyPI)")


def test_everything_a_command_needs_is_in_the_matrix_index(tmp_path):
    """Third-party distributions: downloaded into the wheelhouse, or a stand-in (never both)."""
    downloaded = requirement_closure(WHEELHOUSE, ROOT)[0].keys()
    assert not downloaded & STAND_INS.keys(), "a stand-in is also downloaded"
    for cmd in install_commands():
        needs = requirement_closure(cmd.pip_args, _cwd(cmd, tmp_path))[0]
        missing = needs.keys() - downloaded - STAND_INS.keys()
        assert not missing, f"[{cmd.doc}] {cmd}: {sorted(missing)} not in the matrix's index"
    # the README's bridge line is one of them, and needs torch
    bridge = [c for c in install_commands() if "plugins/tensorplay_torch" in c.args]
    assert bridge and all("torch" in requirement_closure(c.pip_args, ROOT)[0] for c in bridge)


def test_a_command_into_a_pages_venv_adds_to_the_command_that_made_it():
    (cmd,) = [c for c in install_commands()
              if c.doc == "README.md" and "plugins/tensorplay_torch" in c.args]
    assert cmd.venv == ".venv" and cmd.base is not None and cmd.base.doc == "README.md"
    assert "tensorplay-core" in requirement_closure(cmd.base.pip_args, ROOT)[2]


def test_a_command_into_a_venv_nothing_made_is_an_error(tmp_path):
    (tmp_path / "GUIDE.md").write_text("Add it: `.venv/bin/python -m pip install -e .`\n")
    with pytest.raises(ValueError, match=r"GUIDE\.md.*\.venv.*no earlier command"):
        install_commands(tmp_path)


def test_an_abbreviated_command_runs_without_its_ellipsis(tmp_path):
    (tmp_path / "NOTES.md").write_text("`pip install -e . -e plugins/tensorplay_cpu ...`.\n")
    (cmd,) = install_commands(tmp_path)
    assert cmd.args[-1] == ELLIPSIS and cmd.pip_args == ("-e", ".", "-e", "plugins/tensorplay_cpu")


@pytest.mark.parametrize("name", sorted(STAND_INS))
def test_a_stand_in_satisfies_what_ours_declare_and_cannot_be_used(name):
    version = stand_in_version(name)
    specs = [Requirement(r).specifier for _, proj in our_projects().values()
             for r in proj.get("dependencies", []) + sum(
                 proj.get("optional-dependencies", {}).values(), [])
             if canonicalize_name(Requirement(r).name) == name]
    assert specs, f"nothing of ours requires {name}: drop its stand-in"
    for spec in specs:
        assert spec.contains(version, prereleases=True), (version, str(spec))
    files = stand_in_files(name, version, STAND_INS[name])
    assert re.search(r'description = "stand-in for ', files["pyproject.toml"])
    with pytest.raises(ImportError, match="stand-in wheel of noxfile.py's install matrix"):
        exec(compile(files[f"{name}/__init__.py"], f"{name}/__init__.py", "exec"), {})
