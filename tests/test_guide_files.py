"""The op-pack guide as files: its blocks written into the files they name make a package that
installs into a fresh venv with the guide's own command (finding the pinned core among wheels
built from this repository) and passes the commands the guide shows. (``test_docs`` runs the
blocks in one namespace, which hides a missing import or a file the guide never writes.)

No network: pip runs with ``--no-index``, finding our wheels where the guide says and every other
distribution it needs (the build backend, NumPy...) as wheels made from this environment's
installed copies, so the test passes on a machine without internet (the GPU machine)."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import os
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from _install_docs import ROOT, guide_files, guide_shell_commands, load_toml, write_guide_pack
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.slow


def _run(cmd, cwd, env, timeout=600):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                       check=False)
    return p.returncode, p.stdout + p.stderr


def _unbound_names(src: str) -> list:
    """Names a module reads that nothing in it binds (import, def, class, assignment,
    parameter) and that are not builtins: the guide's file would raise NameError."""
    import ast
    import builtins
    tree = ast.parse(src)
    bound, loaded = set(dir(builtins)), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return sorted(loaded - bound)


def test_guide_names_only_files_it_writes_and_each_module_imports_what_it_uses():
    files = guide_files()
    assert {"pyproject.toml", "my_ops/__init__.py", "my_ops/ops.py"} <= set(files), list(files)
    text = files["pyproject.toml"]
    for line in text.splitlines():          # every "module:function" the metadata names
        if "=" in line and ":" in line.split("=", 1)[1]:
            module = line.split("=", 1)[1].strip().strip('"').split(":")[0]
            assert module.replace(".", "/") + ".py" in files, f"{line!r}: the guide never writes it"
    for name, src in files.items():
        if name.endswith(".py"):
            assert not _unbound_names(src), f"{name} uses {_unbound_names(src)} unbound"


def _wheel_of_installed(dist, out: Path) -> Path:
    """A wheel of an installed distribution: the files its RECORD lists under site-packages
    (scripts, which lie outside it, left out), with a fresh RECORD."""
    site = Path(dist.locate_file(""))
    info = next(f for f in dist.files if f.name == "METADATA").parent     # NAME-VER.dist-info
    tag = next(line.split(":", 1)[1].strip() for line in dist.read_text("WHEEL").splitlines()
               if line.startswith("Tag:"))
    whl = out / f"{str(info)[:-len('.dist-info')]}-{tag}.whl"
    record = []
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
        for f in dist.files:
            if f.parts[0] == ".." or "__pycache__" in f.parts or not (site / f).is_file() or \
                    (f.parent == info and f.name in ("RECORD", "INSTALLER", "REQUESTED",
                                                      "direct_url.json")):
                continue
            data = (site / f).read_bytes()
            z.writestr(f.as_posix(), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{f.as_posix()},sha256={digest.decode()},{len(data)}")
        record.append(f"{info.as_posix()}/RECORD,,")
        z.writestr(f"{info.as_posix()}/RECORD", "\n".join(record) + "\n")
    return whl


def _installed_closure(requirements) -> dict:
    """``{canonical name: installed Distribution}`` of what ``requirements`` need, followed
    through the installed distributions' metadata (extras and markers evaluated); a requirement
    this environment has not installed fails the test, naming it."""
    found, seen, todo = {}, set(), [(Requirement(r), "") for r in requirements]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        if (name, frozenset(req.extras)) in seen:
            continue
        seen.add((name, frozenset(req.extras)))
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            pytest.fail(f"{req} is not installed in this environment ({sys.prefix}); it is what "
                        "the guide's install needs, taken from here without network: install "
                        "the test extra, pip install -e \".[test]\" -e plugins/tensorplay_cpu")
        assert req.specifier.contains(dist.version, prereleases=True), \
            f"{req}: this environment has {dist.version} (reinstall the test extra)"
        found[name] = dist
        todo += [(Requirement(r), e) for r in dist.requires or [] for e in req.extras or [""]]
    return found


def test_guide_pack_installs_in_a_fresh_venv_and_passes_the_guides_commands(tmp_path):
    if not (ROOT / "plugins" / "tensorplay_cpu" / "pyproject.toml").exists():
        pytest.skip("the repository is not here (the core's sdist has no plugins/): the guide's "
                    "install needs the cpu plugin's wheel built from it")
    # pip with no index at all and no configuration of this machine's (its constraints, its
    # local indexes): only --find-links, the guide's and the wheelhouse below
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TENSORPLAY_", "PYTHONPATH", "PIP_"))}
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheelhouse),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    # the guide's layout: my-ops/ beside the repository, whose wheels are in ../tensorplay/dist
    pack = write_guide_pack(tmp_path)
    # what a new user's pip takes from PyPI: the build backend (for the pack, the core and the
    # cpu plugin) and the third-party dependencies of the pack and its extra [cpu]; as wheels of
    # this environment's copies. Ours come only from dist/, as the guide says.
    needs = []
    for project in (pack, ROOT, ROOT / "plugins" / "tensorplay_cpu"):
        toml = load_toml(project / "pyproject.toml")
        needs += toml["build-system"]["requires"]
        if project == pack:
            proj = toml["project"]
            needs += proj["dependencies"] + proj["optional-dependencies"]["cpu"]
    for name, dist in _installed_closure(needs).items():
        if not name.startswith("tensorplay"):
            _wheel_of_installed(dist, wheelhouse)
    dist = tmp_path / "tensorplay" / "dist"
    rc, out = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir",
                    str(dist), str(ROOT), str(ROOT / "plugins" / "tensorplay_cpu")], tmp_path, env)
    assert rc == 0, out
    venv = tmp_path / "venv"
    rc, out = _run([sys.executable, "-m", "venv", str(venv)], tmp_path, env)
    assert rc == 0, out
    bindir = venv / "bin"
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    cmds = guide_shell_commands()
    assert cmds[0].startswith("pip install") and cmds[1:] == ["tensorplay plugins",
                                                              "tensorplay check --plugin my_ops"]
    outs = {}
    for cmd in cmds:
        argv = shlex.split(cmd)
        argv = [str(bindir / "python"), "-m", "pip", *argv[1:]] if argv[0] == "pip" else \
            [str(bindir / argv[0]), *argv[1:]]
        rc, out = _run(argv, pack, env)
        assert rc == 0, f"{cmd}\n{out}"
        outs[cmd] = out
    assert "my-ops" in outs["tensorplay plugins"] and "loaded" in outs["tensorplay plugins"]
    check = outs["tensorplay check --plugin my_ops"]
    assert "my_ops::scaled_add" in check and "my_ops.cpu_kernels:scaled_add_cpu" in check, check
    rc, out = _run([str(bindir / "python"), "-c", "import importlib.metadata as m; "
                    "print(m.version('tensorplay-core'), m.version('tensorplay-cpu'))"], pack, env)
    assert rc == 0 and out.split() == [m.split("==")[1] for m in
                                       ("tensorplay-core==1.0.0.dev20260909",
                                        "tensorplay-cpu==1.0.0.dev20260909")], out
    # ours came from dist/ (the wheels built above), not from anything installed here
    rc, out = _run([str(bindir / "python"), "-c", "import importlib.metadata as m, json; "
                    "print(json.dumps([m.distribution(n).read_text('direct_url.json') is None "
                    "and str(m.distribution(n).locate_file('')).startswith(%r) "
                    "for n in ('tensorplay-core', 'tensorplay-cpu')]))" % str(venv)], pack, env)
    assert rc == 0 and out.strip() == "[true, true]", out
