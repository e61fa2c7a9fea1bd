"""The ``tensorplay`` command's argument handling as pip/pytest users expect (issue 29 §5): a
suggestion for a mistyped command, ``-V``, a subcommand's own usage for its bad options, the
check's exit status through a closed stdout pipe, and ``--version`` before any plugin runs. Run
as users run it: ``python -m _tensorplay_cli`` (the console script's entry module)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version

from _plugin_dists import BROKEN_IMPORT, PluginEnv


def cli(*args, env=None, **kw):
    e = dict(os.environ if env is None else env)
    e.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "_tensorplay_cli", *args], capture_output=True,
                          text=True, env=e, timeout=120, **kw)


def test_mistyped_command_gets_a_suggestion():
    p = cli("chek")
    assert p.returncode == 2
    assert "did you mean 'check'?" in p.stderr, p.stderr
    q = cli("plugin")
    assert q.returncode == 2 and "did you mean 'plugins'?" in q.stderr, q.stderr
    # nothing close: no suggestion, the usual choices
    r = cli("frobnicate")
    assert r.returncode == 2 and "did you mean" not in r.stderr and "check" in r.stderr


def test_dash_V_is_version():
    want = f"tensorplay {version('tensorplay-core')}"
    for flag in ("-V", "--version"):
        p = cli(flag)
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == want


def test_bad_option_of_a_subcommand_prints_that_subcommands_usage():
    p = cli("check", "--nosuch")
    assert p.returncode == 2
    assert "usage: tensorplay check" in p.stderr, p.stderr
    assert "unrecognized arguments: --nosuch" in p.stderr
    q = cli("ops", "--nosuch")
    assert q.returncode == 2 and "usage: tensorplay ops" in q.stderr, q.stderr
    # a near miss of one of its options is suggested
    r = cli("check", "--devcie", "cpu")
    assert r.returncode == 2 and "did you mean '--device'?" in r.stderr, r.stderr


def _run_into_closed_pipe(args, env):
    """Run the command with stdout a pipe whose reading end is already closed."""
    rd, wr = os.pipe()
    os.close(rd)
    try:
        p = subprocess.run([sys.executable, "-m", "_tensorplay_cli", *args], stdout=wr,
                           stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    finally:
        os.close(wr)
    return p


def test_failed_check_into_a_closed_pipe_keeps_its_exit_status(tmp_path):
    env = PluginEnv(tmp_path)
    env.dist("broken-ops", plugins={"broken_ops": "broken_ops"},
             modules={"broken_ops": BROKEN_IMPORT})
    e = dict(os.environ)
    e.pop("COLUMNS", None)
    e["PYTHONPATH"] = os.pathsep.join([env.root] + [x for x in [e.get("PYTHONPATH")] if x])
    args = ["check", "--device", "cpu", "--test-utils", "test_schema", "-q"]
    # the reference: into a live pipe the check fails (the plugin did not load)
    live = subprocess.run([sys.executable, "-m", "_tensorplay_cli", *args], capture_output=True,
                          text=True, env=e, timeout=300)
    assert live.returncode == 1, live.stdout + live.stderr
    p = _run_into_closed_pipe(args, e)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and "BrokenPipeError" not in p.stderr, p.stderr


def test_passing_listing_into_a_closed_pipe_exits_0():
    p = _run_into_closed_pipe(["ops"], dict(os.environ))
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "BrokenPipeError" not in p.stderr, p.stderr


def test_version_answers_without_importing_any_plugin(tmp_path):
    env = PluginEnv(tmp_path)
    env.dist("noisy-ops", plugins={"noisy_ops": "noisy_ops"},
             modules={"noisy_ops": "mark('imported')\n"})
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([env.root] + [x for x in [e.get("PYTHONPATH")] if x])
    # the reference: any other command imports it
    assert cli("plugins", "--json", env=e).returncode == 0
    assert env.executed() == ["imported"]
    os.remove(env.marks)
    for flag in ("--version", "-V"):
        p = cli(flag, env=e)
        assert p.returncode == 0 and p.stdout.startswith("tensorplay "), p.stderr
    assert env.executed() == []
