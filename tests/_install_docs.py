"""The documentation as a new user takes it: the ``pip install`` commands it prints, and the
op-pack guide's code blocks written into the files they name.

Shared by ``tests/test_guide_files.py`` and the ``wheels`` nox session (which installs every
command below into an empty venv, from a local index that also holds a fake ``tensorplay``)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Every page a user installs from (repository-relative). The op-pack guide's commands run in the
# pack's directory (``my-ops/``, the repository beside it as ``../tensorplay``); the others in
# the repository root.
INSTALL_DOCS = ["README.md", "docs/index.md", "docs/guides/op-pack.md", "docs/guides/triton.md",
                "examples/README.md", "plugins/tensorplay_cpu/README.md",
                "plugins/tensorplay_cuda/README.md", "plugins/tensorplay_triton/README.md"]
PACK_GUIDE = "docs/guides/op-pack.md"

# `pip install ARGS`, ARGS ending at a shell comment, `&&`, a pipe, a closing backtick or the line
_PIP = re.compile(r"pip install (.+?)(?=\s+#|\s*&&|\s*\||`|$)", re.M)


@dataclass(frozen=True)
class InstallCommand:
    doc: str            # the page that prints it
    args: tuple         # pip install's arguments, shell-split
    in_pack: bool       # run in the op-pack guide's my-ops/ (else the repository root)

    def __str__(self):
        return "pip install " + shlex.join(self.args)


def _names_ours(args) -> bool:
    """Whether the command installs a TensorPlay distribution (by name or from a path here),
    not a tool the page merely mentions (``pip install nox``)."""
    for a in args:
        bare = a.split("[")[0]
        if bare.lower().startswith("tensorplay") or bare in (".", "..") \
                or bare.startswith(("./", "plugins/", "examples")):
            return True
    return False


def install_commands(root: Path = ROOT) -> list:
    """Every ``pip install`` command of :data:`INSTALL_DOCS` that installs one of ours, in page
    order, duplicates kept once."""
    out, seen = [], set()
    for doc in INSTALL_DOCS:
        path = root / doc
        if not path.exists():
            continue
        for m in _PIP.finditer(path.read_text()):
            args = tuple(shlex.split(m.group(1)))
            cmd = InstallCommand(doc, args, doc == PACK_GUIDE)
            if _names_ours(args) and (args, cmd.in_pack) not in seen:
                seen.add((args, cmd.in_pack))
                out.append(cmd)
    return out


def bare_tensorplay_requirements(cmds) -> list:
    """Commands that name the distribution ``tensorplay`` (PyPI's unrelated project)."""
    return [str(c) for c in cmds
            if any(re.split(r"[\[=<>!~;\s]", a, maxsplit=1)[0].lower() == "tensorplay"
                   for a in c.args)]


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
