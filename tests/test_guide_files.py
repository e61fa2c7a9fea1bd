"""The op-pack guide as files: its blocks written into the files they name make a package that
installs into a fresh venv with the guide's own command (finding the pinned core among wheels
built from this repository) and passes the commands the guide shows. (``test_docs`` runs the
blocks in one namespace, which hides a missing import or a file the guide never writes.)"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest
from _install_docs import ROOT, guide_files, guide_shell_commands, write_guide_pack

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


def test_guide_pack_installs_in_a_fresh_venv_and_passes_the_guides_commands(tmp_path):
    if not (ROOT / "pyproject.toml").exists():
        pytest.skip("source tree not here")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TENSORPLAY_", "PYTHONPATH"))}
    # the guide's layout: my-ops/ beside the repository, whose wheels are in ../tensorplay/dist
    pack = write_guide_pack(tmp_path)
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
