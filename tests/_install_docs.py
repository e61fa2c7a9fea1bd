"""The documentation as a new user takes it: the ``pip install`` commands it prints, and the
op-pack guide's code blocks written into the files they name.

Shared by ``tests/test_guide_files.py``, ``tests/test_install_docs.py`` and the ``wheels`` nox
session (which installs every command below into an empty venv, from a local index that also
holds a fake ``tensorplay`` and the :data:`STAND_INS`)."""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Every Markdown page of the repository is a page a user may install from (a page added later is
# collected without anyone remembering to list it), except these, each with the reason.
NOT_INSTALL_DOCS = {
    "CHANGELOG.md": "history: it quotes the commands that were wrong (pip install \"tensorplay[cpu]\")",
}
_NOT_PAGES = {".git", ".venv", ".nox", ".tox", "dist", "build", "site", "node_modules",
              "__pycache__"}
# The op-pack guide's commands run in the pack's directory (``my-ops/``, the repository beside it
# as ``../tensorplay``); the others in the repository root.
PACK_GUIDE = "docs/guides/op-pack.md"

# What the matrix's local index holds besides the fake ``tensorplay``, downloaded once from PyPI
# (``pip download`` arguments, relative to the repository root); ours come only from dist/.
WHEELHOUSE = ["tensorplay-core[all,cuda12,cuda13,test]",
              "tensorplay-example-ops[cpu,cuda12,cuda13,triton]", "setuptools>=77", "numpy>=1.26",
              "-r", "docs/requirements.txt"]

# Third-party distributions a documented command needs that the index holds as a stand-in instead
# (a wheel with only their name and a version our requirements accept; importing it raises
# ImportError): the matrix proves name resolution, and the real ones do not belong in CI's
# wheelhouse. name -> why.
STAND_INS = {"torch": "PyTorch's wheels are GB-size (CUDA builds); tensorplay-torch requires it"}

# `[VENV/bin/python -m ]pip install ARGS`, ARGS ending at a shell comment, `&&`, a pipe, a closing
# backtick or the line; `-m venv VENV` creates the venv a later command installs into
_PIP = re.compile(r"(?:([^\s`]+)/bin/(?:python[\d.]*\s+-m\s+)?)?"
                  r"pip install (.+?)(?=\s+#|\s*&&|\s*\||`|$)", re.M)
_VENV = re.compile(r"-m venv\s+([^\s`&;|]+)")
ELLIPSIS = "..."        # an abbreviated command: "pip install -e . -e plugins/tensorplay_cpu ..."


@dataclass(frozen=True)
class InstallCommand:
    doc: str            # the page that prints it
    args: tuple         # pip install's arguments, shell-split, as printed
    in_pack: bool       # run in the op-pack guide's my-ops/ (else the repository root)
    venv: str = ""      # the venv it installs into when it names one (``.venv``), else ""
    base: "InstallCommand | None" = None    # the page's earlier command that created that venv

    @property
    def pip_args(self) -> tuple:
        """What the matrix runs: the arguments less an abbreviating ``...``."""
        return tuple(a for a in self.args if a != ELLIPSIS)

    def __str__(self):
        prefix = f"{self.venv}/bin/python -m " if self.venv else ""
        return prefix + "pip install " + shlex.join(self.args)


def _names_ours(args) -> bool:
    """Whether the command installs a TensorPlay distribution (by name or from a path here),
    not a tool the page merely mentions (``pip install nox``)."""
    for a in args:
        bare = a.split("[")[0]
        if bare.lower().startswith("tensorplay") or bare in (".", "..") \
                or bare.startswith(("./", "plugins/", "examples")):
            return True
    return False


def install_docs(root: Path = ROOT) -> list:
    """Every Markdown page under ``root`` (repository-relative, README.md first), less
    :data:`NOT_INSTALL_DOCS`."""
    pages = []
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _NOT_PAGES and not d.startswith(".")
                         and not d.endswith(".egg-info"))
        pages += [Path(top, f).relative_to(root).as_posix() for f in files if f.endswith(".md")]
    pages = [p for p in pages if p not in NOT_INSTALL_DOCS]
    return sorted(pages, key=lambda p: (p != "README.md", p))


def _page_commands(root: Path):
    """Every ``pip install`` command of every page, in page order, duplicates kept once."""
    out, seen = [], set()
    for doc in install_docs(root):
        text = (root / doc).read_text()
        created = {}                    # venv -> the page's command that created it
        for m in _PIP.finditer(text):
            venv, args = m.group(1) or "", tuple(shlex.split(m.group(2)))
            line = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
            makes = _VENV.search(line)
            base = None
            if venv and not (makes and makes.group(1) == venv):
                base = created.get(venv)
                if base is None:
                    raise ValueError(f"{doc}: `{m.group(0)}` installs into {venv}, which no "
                                     "earlier command of the page creates (python3 -m venv "
                                     f"{venv})")
            cmd = InstallCommand(doc, args, doc == PACK_GUIDE, venv, base)
            if makes and venv == makes.group(1):
                created[venv] = cmd
            key = (args, cmd.in_pack, venv, base)
            if key not in seen:
                seen.add(key)
                out.append(cmd)
    return out


def install_commands(root: Path = ROOT) -> list:
    """Every ``pip install`` command of :func:`install_docs` that installs one of ours, in page
    order, duplicates kept once. A command that installs into a venv an earlier command of its
    page created (the README's ``.venv/bin/python -m pip install torch ...``) has that command
    as its ``base``: it adds to that install."""
    return [c for c in _page_commands(root) if _names_ours(c.args)]


def tool_install_commands(root: Path = ROOT) -> list:
    """The pages' other ``pip install`` commands: tools they mention (``pip install nox``)."""
    return [c for c in _page_commands(root) if not _names_ours(c.args)]


def bare_tensorplay_requirements(cmds) -> list:
    """Commands that name the distribution ``tensorplay`` (PyPI's unrelated project)."""
    return [str(c) for c in cmds
            if any(re.split(r"[\[=<>!~;\s]", a, maxsplit=1)[0].lower() == "tensorplay"
                   for a in c.args)]


# ---- what the commands need from an index -------------------------------------------------------

def load_toml(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:                                   # Python 3.10: tomli, a dependency of pytest
        import tomli as tomllib
    with open(path, "rb") as f:
        return tomllib.load(f)


def our_projects(root: Path = ROOT) -> dict:
    """``{canonical name: (directory, [project] table)}`` of the distributions in the
    repository (the core, plugins/*, examples)."""
    from packaging.utils import canonicalize_name
    out = {}
    plugins = sorted((root / "plugins").iterdir()) if (root / "plugins").is_dir() else []
    for d in [root, *plugins, root / "examples"]:
        if (d / "pyproject.toml").is_file():
            proj = load_toml(d / "pyproject.toml")["project"]
            out[canonicalize_name(proj["name"])] = (d, proj)
    return out


_VALUE_OPTIONS = {"-f", "--find-links", "-i", "--index-url", "--extra-index-url", "-c",
                  "--constraint", "-t", "--target", "--prefix", "--root"}


def _requirement_roots(args, cwd: Path):
    """``(requirement strings, [(project directory, extras)])`` that pip arguments name."""
    from packaging.requirements import Requirement
    reqs, paths = [], []
    it = iter(a for a in args if a != ELLIPSIS)
    editable = False
    for a in it:
        if a in _VALUE_OPTIONS:
            next(it, None)
        elif a in ("-r", "--requirement"):
            for line in (cwd / next(it)).read_text().splitlines():
                line = line.split("#", 1)[0].strip()
                if line:
                    reqs.append(line)
        elif a in ("-e", "--editable"):
            editable = True
            continue
        elif a.startswith("-"):
            pass
        else:
            path, _, extras = a.partition("[")
            # pip's rule: an editable, something that looks like a path, or a project directory
            if editable or path.startswith((".", "/")) or "/" in path \
                    or (cwd / path / "pyproject.toml").is_file():
                paths.append((cwd / path, set(extras.rstrip("]").split(",")) - {""}))
            else:
                reqs.append(str(Requirement(a)))
        editable = False
    return reqs, paths


def requirement_closure(args, cwd: Path, root: Path = ROOT) -> tuple:
    """What pip arguments install, directly or through ours (their pyproject files in the
    repository, extras followed): ``({third-party canonical name: [specifier strings]},
    {our distributions required by name and not installed from a path by the same arguments},
    {all of ours installed})``. The second set must come from an index or ``--find-links``."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    ours = our_projects(root)
    by_dir = {d.resolve(): name for name, (d, _) in ours.items()}
    needs: dict = {}
    by_name: set = set()
    reqs, todo = _requirement_roots(args, cwd)
    from_paths = {by_dir.get(Path(p).resolve()) for p, _ in todo} - {None}
    done = set()
    while reqs or todo:
        for r in map(Requirement, reqs):
            name = canonicalize_name(r.name)
            if name in ours:
                by_name.add(name)
                todo.append((ours[name][0], set(r.extras)))
            elif r.marker is None or r.marker.evaluate({"extra": ""}):
                needs.setdefault(name, []).append(str(r.specifier))
        reqs = []
        while todo:
            path, extras = todo.pop()
            key = (Path(path).resolve(), frozenset(extras))
            if key in done:
                continue
            done.add(key)
            proj = load_toml(Path(path) / "pyproject.toml")["project"]
            reqs += proj.get("dependencies", [])
            for extra in extras:
                reqs += proj.get("optional-dependencies", {}).get(extra, [])
    return needs, by_name - from_paths, by_name | from_paths


def third_party_needs(args, cwd: Path, root: Path = ROOT) -> dict:
    """``{canonical name: [specifier strings]}`` of the third-party distributions that pip
    arguments require (:func:`requirement_closure`)."""
    return requirement_closure(args, cwd, root)[0]


def stand_in_version(name: str, root: Path = ROOT) -> str:
    """A version of the stand-in ``name`` that every specifier our distributions and the
    documented commands give for it accepts: the lowest such bound, with the local label
    ``+standin`` (so that ``pip list`` says what it is)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version
    specs = SpecifierSet()
    for cmd in install_commands(root):
        cwd = root if not cmd.in_pack else None
        if cwd is None:
            continue                        # the pack's pyproject names only ours
        for s in third_party_needs(cmd.pip_args, cwd, root).get(name, []):
            specs &= SpecifierSet(s)
    candidates = sorted({Version(s.version.rstrip(".*")) for s in specs
                         if s.operator in ("==", ">=", "~=", "===", "<=")} | {Version("0")})
    for v in candidates:
        if specs.contains(f"{v}+standin", prereleases=True):
            return f"{v}+standin"
    raise ValueError(f"no version of the stand-in {name} satisfies {specs}")


def stand_in_files(name: str, version: str, why: str) -> dict:
    """``{relative path: text}`` of a project whose wheel is the stand-in ``name`` ``version``:
    its name and version only; importing it raises ImportError saying what it is."""
    summary = f"stand-in for {name} in noxfile.py's install matrix, not {name}"
    message = (f"this {name} is the stand-in wheel of noxfile.py's install matrix ({why}); "
               "it only lets pip resolve the documented commands")
    return {
        "pyproject.toml": '[build-system]\nrequires = ["setuptools>=77"]\n'
                          'build-backend = "setuptools.build_meta"\n[project]\n'
                          f'name = "{name}"\nversion = "{version}"\n'
                          f'description = "{summary}"\n',
        f"{name}/__init__.py": f"raise ImportError({message!r})\n",
    }


# ---- the op-pack guide as files ---------------------------------------------------------------

_BLOCK = re.compile(r"```(python|toml)\n(.*?)```", re.S)
_FILE = re.compile(r"#\s*(\S+\.(?:py|toml))(\s*\(continued\))?\s*$")


def guide_files(root: Path = ROOT) -> dict:
    """``{relative path: text}`` of the op-pack guide's blocks whose first line names a file
    (``# my_ops/ops.py``); ``(continued)`` appends to that file."""
    files: dict = {}
    for _lang, body in _BLOCK.findall((root / PACK_GUIDE).read_text()):
        first, _, rest = body.partition("\n")
        m = _FILE.fullmatch(first.strip())
        if not m:
            continue
        name, continued = m.group(1), m.group(2)
        if continued:
            assert name in files, f"{PACK_GUIDE}: '{first}' continues a file not started before"
            files[name] += "\n\n" + rest
        else:
            assert name not in files, f"{PACK_GUIDE}: two blocks start {name}"
            files[name] = rest
    return files


def guide_shell_commands(root: Path = ROOT) -> list:
    """The commands of the op-pack guide's "Install and check" block (comments stripped)."""
    text = (root / PACK_GUIDE).read_text()
    section = text.split("## 8. Install and check", 1)[1]
    block = section.split("```text\n", 1)[1].split("```", 1)[0]
    return [re.split(r"\s+#", line, maxsplit=1)[0].strip() for line in block.splitlines()
            if line.strip()]


def write_guide_pack(dest: Path, root: Path = ROOT) -> Path:
    """Write the guide's files under ``dest/my-ops`` and return that directory."""
    pack = dest / "my-ops"
    for name, text in guide_files(root).items():
        path = pack / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return pack
