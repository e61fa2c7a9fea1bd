"""A plugin that fails to load, as ``tensorplay`` users see it (issue 29 §5): one line naming the
plugin, the error and where in the plugin's own code it was raised, and how to see the traceback
(``--strict``) -- not a raw Python warning pointing into tensorplay's loader; a plugin whose code
is local (an editable install, a working tree) is pointed at its own code, never told to
"upgrade or reinstall"."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _plugin_dists import PluginEnv

SOURCE = '''
import tensorplay
def _setup():
    raise ImportError("cannot import name 'fused' from 'my_ops._ext'")
_setup()
'''


@pytest.fixture
def env(tmp_path):
    env = PluginEnv(tmp_path)
    env.dist("my-ops", plugins={"my_ops": "my_ops"}, modules={"my_ops.__init__": SOURCE})
    # an editable install, as pip records it (PEP 610/660)
    with open(os.path.join(env.root, "my_ops-1.0.dist-info", "direct_url.json"), "w") as f:
        f.write('{"url": "file:///src/my-ops", "dir_info": {"editable": true}}')
    path = os.path.join(env.root, "my_ops", "__init__.py")
    with open(path) as f:
        env.line = next(i for i, ln in enumerate(f, 1) if "raise ImportError" in ln)
    return env


def cli(env, *args):
    e = dict(os.environ)
    for k in ("COLUMNS", "TENSORPLAY_STRICT_PLUGINS", "TENSORPLAY_PLUGINS",
              "TENSORPLAY_DISABLE_PLUGINS"):
        e.pop(k, None)
    e["PYTHONPATH"] = os.pathsep.join([env.root] + [x for x in [e.get("PYTHONPATH")] if x])
    return subprocess.run([sys.executable, "-m", "_tensorplay_cli", *args], capture_output=True,
                          text=True, env=e, timeout=300, cwd=env.root)


def test_failed_plugin_is_one_line_naming_its_own_code(env):
    p = cli(env, "ops", "-n", "tp")
    assert p.returncode == 0, p.stderr
    want = (f"warning: plugin my-ops failed to load: ImportError: cannot import name 'fused' "
            f"from 'my_ops._ext' (my_ops/__init__.py:{env.line}); --strict shows the traceback")
    assert p.stderr.splitlines() == [want], p.stderr
    assert "loading.py" not in p.stderr and "PluginWarning" not in p.stderr


def test_failed_plugin_with_global_flags_is_said_once_the_same_way(env):
    # --plugins re-runs the command in a fresh interpreter: the same one line, once
    p = cli(env, "--plugins", "my_ops,tensorplay-cpu", "ops", "-n", "tp")
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "failed to load" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: plugin my-ops failed to load: "), \
        p.stderr
    assert "PluginWarning" not in p.stderr


def test_strict_shows_the_traceback(env):
    p = cli(env, "--strict", "ops", "-n", "tp")
    assert p.returncode == 1, p.stderr
    assert "Traceback (most recent call last)" in p.stderr, p.stderr
    assert f'my_ops/__init__.py", line {env.line}' in p.stderr, p.stderr
    assert "failed to load" in p.stderr.splitlines()[-1]


def test_the_fix_points_at_the_plugins_own_code_not_at_upgrading(env):
    # the library's warning (any program, not only the command) and the record's fix
    r = env.run("import tensorplay\nresult(plugin_warnings())")
    (msg,) = [m for m in r.data if "my-ops" in m]
    assert "upgrade or reinstall" not in msg and "pip install -U" not in msg, msg
    assert f"my_ops/__init__.py:{env.line}" in msg and "own code" in msg, msg
    assert "TENSORPLAY_DISABLE_PLUGINS=my_ops" in msg, msg


def test_a_release_of_another_project_points_at_its_authors(env):
    os.remove(os.path.join(env.root, "my_ops-1.0.dist-info", "direct_url.json"))
    r = env.run("import tensorplay\nresult(plugin_warnings())")
    (msg,) = [m for m in r.data if "my-ops" in m]
    assert "report it to its authors" in msg and f"my_ops/__init__.py:{env.line}" in msg, msg
    assert "own code" not in msg, msg
