"""Bad input to the ``tensorplay`` command (issue 28, "Bad input"): one line on stderr, exit 2,
before any work is done -- never a traceback, never a whole check run first.

In-process through ``main()`` where the error is in the arguments; as the console script where
it is in the environment controls, which ``import tensorplay`` reads before the command can
parse anything (the console script's entry module catches it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tensorplay.cli import main


def _one_line_usage_error(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", [["plugins"], ["ops"], ["check", "example::gelu"]])
@pytest.mark.parametrize("where", ["missing_dir", "a_directory", "read_only"])
def test_json_path_that_cannot_be_written_is_refused_first(capsys, tmp_path, command, where):
    if where == "missing_dir":
        path = tmp_path / "no" / "such" / "dir" / "out.json"
    elif where == "a_directory":
        path = tmp_path
    else:
        if os.geteuid() == 0:
            pytest.skip("root can write into a read-only directory")
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        path = ro / "out.json"
    line = _one_line_usage_error(capsys, [*command, "-q", "--json", str(path)]
                                 if command[0] == "check" else [*command, "--json", str(path)])
    assert "--json" in line and str(path) in line, line
    assert not (path.exists() and path.is_file())


def test_json_path_refusal_comes_before_the_check_runs(capsys, tmp_path, monkeypatch):
    # the whole check used to run, then fail writing: the refusal must come before any check
    # (seen directly, not by a wall-clock limit that a loaded machine can break)
    import tensorplay.testing.plugin_check as pc
    ran = []
    monkeypatch.setattr(pc, "check_plugin", lambda *a, **k: ran.append(a) or [])
    _one_line_usage_error(capsys, ["check", "-q", "--json", str(tmp_path / "x" / "y.json")])
    assert ran == []


@pytest.mark.parametrize("device", ["cuda:99x", "cpu:", ":0", "cuda:-1", "gpu", "CUDA:1:2"])
def test_check_device_is_validated_like_tensorplay_device(capsys, device):
    line = _one_line_usage_error(capsys, ["check", "-q", "--device", device, "example::gelu"])
    assert repr(device) in line or device in line, line


@pytest.mark.parametrize("value", [",,,", ",", " , "])
def test_check_test_utils_naming_nothing_is_refused(capsys, value):
    line = _one_line_usage_error(capsys, ["check", "-q", "--test-utils", value, "example::gelu"])
    assert "--test-utils" in line, line


@pytest.mark.parametrize("flag", ["--atol", "--rtol"])
@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf", "abc"])
def test_check_tolerances_must_be_finite_and_non_negative(capsys, flag, value):
    rc = main(["check", "-q", flag, value, "example::gelu"])
    err = capsys.readouterr().err
    assert rc == 2 and flag in err and "Traceback" not in err, err


def test_check_valid_tolerances_and_device_still_run(capsys):
    rc = main(["check", "-q", "--device", "cpu", "--atol", "0", "--rtol", "1e-5",
               "--test-utils", "test_schema,", "example::gelu"])
    assert rc == 0, capsys.readouterr()


def _console_script():
    exe = Path(sys.executable).parent / ("tensorplay.exe" if os.name == "nt" else "tensorplay")
    return str(exe) if exe.exists() else shutil.which("tensorplay")


@pytest.mark.parametrize("var,value", [("TENSORPLAY_STRICT_PLUGINS", "maybe"),
                                       ("TENSORPLAY_TRACE_PLUGINS", "2")])
@pytest.mark.parametrize("how", ["console_script", "python_m"])
def test_bad_environment_control_is_one_line_exit_2(var, value, how):
    env = dict(os.environ, **{var: value})
    cmd = [_console_script()] if how == "console_script" else [sys.executable, "-m", "_tensorplay_cli"]
    p = subprocess.run([*cmd, "plugins"], capture_output=True, text=True, env=env, timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"{var}={value!r}" in lines[0], lines[0]
