"""The ``tensorplay`` command: ``plugins``, ``ops`` and ``check`` (SPEC §5), in a subprocess (the
way users run it) and in-process through ``main()``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


import tensorplay
from tensorplay.cli import main

NO_AOT = "test_schema,test_autograd_registration,test_faketensor"
EXAMPLE_OPS = ("example::weighted_sum", "example::rms_norm", "example::gelu",
               "example::softmax_cross_entropy", "example::add_relu_")


def run_cli(*args, env=None, timeout=120, columns=None):
    """``python -m tensorplay.cli ARGS`` (same code as the console script). ``columns``: the
    terminal width the tables fit (``COLUMNS``; default: none set, i.e. 80 when piped)."""
    env = dict(os.environ if env is None else env)
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "tensorplay.cli", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def _console_script():
    exe = Path(sys.executable).parent / ("tensorplay.exe" if os.name == "nt" else "tensorplay")
    return str(exe) if exe.exists() else shutil.which("tensorplay")


# ---------------------------------------------------------------------------- check, subprocess

def test_console_script_check_passes_on_the_example_pack(tmp_path):
    exe = _console_script()
    assert exe, "the `tensorplay` console script is not installed (pip install -e .)"
    out = tmp_path / "res.json"
    p = subprocess.run([exe, "check", "--plugin", "example_ops", "--device", "cpu",
                        "--test-utils", NO_AOT,
                        "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    for name in EXAMPLE_OPS:
        assert name in p.stdout
    # progress on stderr, one line per (op, device, kernel, sample)
    assert "[1] " in p.stderr and "]: ok (" in p.stderr
    res = json.loads(out.read_text())
    assert res["ok"] and res["failures"] == [] and res["samples_checked"] >= 10
    rows = {r["op"]: r for r in res["rows"]}
    assert set(rows) >= set(EXAMPLE_OPS) and all(r["device"] == "cpu" for r in rows.values())
    # gelu (composite, no formula): its small samples ask for grad, so the autograd check runs
    assert rows["example::gelu"]["checks"]["test_autograd_registration"] == "pass"
    assert rows["example::rms_norm"]["checks"]["test_autograd_registration"] == "pass"
    assert rows["example::add_relu_"]["checks"]["test_autograd_registration"] == "skip"
    assert rows["example::add_relu_"]["checks"]["test_aot_dispatch_dynamic"] is None
    header = next(line for line in p.stdout.splitlines() if line.startswith("op / kernel"))
    for col in ("samples", "schema", "autograd", "fake"):      # the checks that were run
        assert col in header
    assert "tensorplay check: tensorplay-example-ops on cpu" in p.stdout


def test_full_check_exit_code_agrees_with_its_results(tmp_path):
    out = tmp_path / "res.json"
    p = run_cli("check", "--json", str(out))
    res = json.loads(out.read_text())
    assert p.returncode == (0 if res["ok"] else 1), p.stdout
    assert {r["op"] for r in res["rows"]} >= set(EXAMPLE_OPS)
    try:
        import tensorplay.testing.aot  # noqa: F401
    except ImportError:
        # the compile check must report itself as not available, never as passed
        assert p.returncode == 1
        assert "not available" in p.stdout
        assert all(r["checks"]["test_aot_dispatch_dynamic"] in ("fail", None) for r in res["rows"])


BROKEN_PACK = '''
    import pluggy
    hookimpl = pluggy.HookimplMarker("tensorplay")

    @hookimpl
    def tensorplay_register_ops(registrar):
        import tensorplay as tp
        from tensorplay import library as lib

        @lib.custom_op("broken::leaky", mutates_args=())
        def leaky(x: tp.Tensor) -> tp.Tensor:
            return x[1:]                      # aliases its input (C07)

        @leaky.register_fake
        def _(x):
            return x.new_empty((x.shape[0] - 1,) + tuple(x.shape[1:]))

        @lib.custom_op("broken::fine", mutates_args=())
        def fine(x: tp.Tensor) -> tp.Tensor:
            return x * 2

        @fine.register_fake
        def _(x):
            return x.new_empty(x.shape)

    @hookimpl
    def tensorplay_sample_inputs(op, device):
        import tensorplay as tp
        if op.name in ("broken::leaky", "broken::fine"):
            return [((tp.randn(8, 4, device=device),), {})]
        return None
'''


def test_a_failing_op_pack_makes_check_exit_1(plugin_env):
    make, env = plugin_env
    make("broken-pack", "broken_pack", BROKEN_PACK)
    p = run_cli("check", "--plugin", "broken-pack", "--test-utils", NO_AOT, env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    leaky = next(line for line in lines if line.startswith("broken::leaky"))
    assert "FAIL" in leaky
    fine = next(line for line in lines if line.startswith("broken::fine"))
    assert "FAIL" not in fine and "ok" in fine
    assert "output 0 is a view of / shares storage with input 'x'" in p.stdout
    # only the good op: passes
    p2 = run_cli("check", "--plugin", "broken_pack", "broken::fine", "--test-utils", NO_AOT,
                 env=env)
    assert p2.returncode == 0, p2.stdout + p2.stderr


def test_a_plugin_that_fails_to_load_fails_check_and_shows_in_plugins(plugin_env):
    make, env = plugin_env
    make("exploding-pack", "exploding_pack", "raise ImportError('needs libfoo 3')\n")
    p = run_cli("plugins", env=env, columns=250)
    assert p.returncode == 0
    row = next(line for line in p.stdout.splitlines() if line.startswith("exploding-pack"))
    assert "failed" in row and "needs libfoo 3" in row
    c = run_cli("check", "--plugin", "exploding-pack", env=env)
    assert c.returncode == 1
    assert "exploding-pack" in c.stdout and "needs libfoo 3" in c.stdout


def test_nothing_checked_is_exit_1_with_a_clear_message():
    # --plugins cpu: the example pack is not loaded, so no op is left to check
    p = run_cli("--plugins", "cpu", "check")
    assert p.returncode == 1
    # ... and says which installed op pack was left out, and how to load it
    assert "nothing was checked" in p.stderr and "no loaded plugin ships operators" in p.stderr
    assert "tensorplay-example-ops" in p.stdout and "--plugins cpu,tensorplay-example-ops" \
        in p.stdout


def test_disable_plugins_and_strict_flags_reach_the_loader():
    p = run_cli("--disable-plugins", "example_ops", "plugins", "--json")
    assert p.returncode == 0, p.stderr
    recs = {r["dist"]: r for r in json.loads(p.stdout)}
    assert recs["tensorplay-example-ops"]["status"] == "blocked"
    assert recs["tensorplay-cpu"]["status"] == "loaded"
    p = run_cli("plugins", "--strict", "--json")
    assert p.returncode == 0
    assert all(r["status"] == "loaded" for r in json.loads(p.stdout))


def test_strict_turns_a_broken_plugin_into_an_error(plugin_env):
    make, env = plugin_env
    make("exploding-pack", "exploding_pack", "raise ImportError('needs libfoo 3')\n")
    p = run_cli("--strict", "plugins", env=env)
    assert p.returncode != 0
    assert "PluginError" in p.stderr and "exploding-pack" in p.stderr


# ---------------------------------------------------------------------------- plugins / ops

def test_plugins_table_subprocess():
    p = run_cli("plugins", columns=250)
    assert p.returncode == 0, p.stderr
    head = p.stdout.splitlines()[1]
    for col in ("distribution", "version", "status", "devices", "ops", "kernels", "error"):
        assert col in head
    cpu = next(line for line in p.stdout.splitlines() if line.startswith("tensorplay-cpu "))
    assert tensorplay.__version__ in cpu and "loaded" in cpu and "cpu (available)" in cpu
    ex = next(line for line in p.stdout.splitlines() if line.startswith("tensorplay-example-ops"))
    n = len(tensorplay.plugins.records()[[r.dist for r in tensorplay.plugins.records()].index(
        "tensorplay-example-ops")].ops)
    assert n >= len(EXAMPLE_OPS) and "loaded" in ex and f"{n}: example::" in ex


def test_plugins_json_matches_the_api(capsys):
    assert main(["plugins", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    api = tensorplay.plugins.list()
    assert [r["dist"] for r in got] == [r["dist"] for r in api]
    ex = next(r for r in got if r["dist"] == "tensorplay-example-ops")
    assert set(ex["ops"]) >= set(EXAMPLE_OPS)
    assert next(r for r in got if r["dist"] == "tensorplay-cpu")["device_status"] == {
        "cpu": "available"}


def test_ops_lists_schema_kernels_and_plugin(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["ops", "--namespace", "example"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("example::rms_norm "))
    assert "(Tensor x, Tensor weight, float eps=1e-06) -> Tensor" in line
    assert "any device" in line and "tensorplay-example-ops" in line and "yes" in line
    assert "tp::" not in out


def test_ops_all_includes_builtins_with_device_kernels():
    p = run_cli("ops", "--json")
    assert p.returncode == 0
    ops = {o["name"]: o for o in json.loads(p.stdout)}
    assert "cpu" in ops["tp::add"]["kernels"] and ops["tp::add"]["plugin"].startswith("tensorplay")
    assert ops["example::add_relu_"]["mutates_args"] == ["x"]


# ---------------------------------------------------------------------------- check, in-process

def test_main_check_single_op_in_process(capsys, tmp_path):
    out = tmp_path / "r.json"
    rc = main(["check", "gelu", "--device", "cpu", "--test-utils", "test_faketensor", "-q",
               "--json", str(out)])
    cap = capsys.readouterr()
    assert rc == 0, cap.out
    assert cap.err == ""               # --quiet: no progress lines
    rows = json.loads(out.read_text())["rows"]
    assert [r["op"] for r in rows] == ["example::gelu"]
    assert rows[0]["checks"]["test_faketensor"] == "pass"
    assert rows[0]["checks"]["test_schema"] is None


def test_rich_table_when_rich_is_importable_and_forced(monkeypatch, capsys):
    pytest.importorskip("rich")
    monkeypatch.setenv("TENSORPLAY_CLI_RICH", "1")
    assert main(["ops", "-n", "example"]) == 0
    out = capsys.readouterr().out
    assert "example::rms_norm" in out and "\u2503" in out      # rich's heavy box border
    monkeypatch.setenv("TENSORPLAY_CLI_RICH", "0")
    assert main(["ops", "-n", "example"]) == 0
    assert "\u2503" not in capsys.readouterr().out


def test_main_usage_errors(capsys):
    assert main(["check", "no_such_op"]) == 2
    assert "no plugin op named 'no_such_op'" in capsys.readouterr().err
    assert main(["check", "--plugin", "nope"]) == 2
    assert "no installed plugin named nope" in capsys.readouterr().err
    assert main(["check", "--device", "npu"]) == 2
    assert "device 'npu' is not available" in capsys.readouterr().err
    assert main(["check", "--test-utils", "test_bogus"]) == 2
    assert main([]) == 2
    assert main(["--help"]) == 0


# ---------------------------------------------------------------------------- README and CI

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    blocks = text.split("```bash\n")[1:]
    return [b.split("```")[0].strip() for b in blocks]


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    cmds = _readme_commands()
    assert len(cmds) == 2 and all("\n" not in c for c in cmds), cmds
    install, test = cmds
    assert install.startswith("python3 -m venv") and install.endswith("tensorplay check")
    assert test.startswith("python3 -m venv") and test.endswith("pytest -q -n auto tests")
    ci = ROOT / ".ci" / "run"
    assert os.access(ci, os.X_OK), ".ci/run must be executable"
    lines = [line.strip() for line in ci.read_text().splitlines()]
    assert test in lines, ".ci/run must run exactly the README's test command"
    assert '"$rc" -eq 5' in ci.read_text()      # "no tests collected" is a failure


def test_readme_example_runs():
    text = (ROOT / "README.md").read_text()
    code = text.split("```python\n")[1].split("```")[0]
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "{}"


def test_plugins_table_shows_builtin_kernels_of_device_plugins():
    """tensorplay-cpu provides the built-in kernels of device cpu through its backend: the
    kernels column says how many, instead of 0 (user-tester report)."""
    p = run_cli("plugins", columns=250)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("tensorplay-cpu "))
    n = len(tensorplay.plugins.get_plugin("tensorplay-cpu").kernels)
    assert n == 0 and " built-in (cpu)" in lines[i]
    count = int(lines[i].split(" built-in (cpu)")[0].split()[-1])
    assert count >= 50


# ---------------------------------------------------------------------------- good citizens

def test_version():
    p = run_cli("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"tensorplay {tensorplay.__version__}"


def test_output_into_a_closed_pipe_ends_quietly():
    # `tensorplay ops | head -1`: the reader goes away after one line
    p = subprocess.Popen([sys.executable, "-m", "tensorplay.cli", "ops"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait(timeout=60)
    assert first and "BrokenPipeError" not in err and "Traceback" not in err, err
    assert rc == 0


@pytest.mark.parametrize("cmd", [["plugins"], ["ops", "-n", "example"],
                                 ["check", "gelu", "--device", "cpu", "--test-utils",
                                  "test_schema"]], ids=["plugins", "ops", "check"])
def test_json_dash_writes_json_to_stdout_for_every_command(cmd):
    p = run_cli(*cmd, "--json", "-")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)           # stdout is JSON and nothing else
    assert data
    if cmd[0] == "check":
        assert data["ok"] and {r["op"] for r in data["rows"]} == {"example::gelu"}
        assert "op / kernel" in p.stderr  # the human tables go to stderr


def test_a_plugins_name_that_matches_nothing_is_a_usage_error():
    p = run_cli("--plugins", "tensorplay-cpu,no-such-pack", "plugins")
    assert p.returncode == 2
    assert "no-such-pack" in p.stderr and "tensorplay-cpu" in p.stderr
    p = run_cli("plugins", "--disable-plugins", "nope")
    assert p.returncode == 2 and "nope" in p.stderr


def test_plugin_and_plugins_confusion_gets_a_hint():
    # `--plugin` on a command that has only `--plugins`: never silently taken as an abbreviation
    p = run_cli("plugins", "--plugin", "tensorplay-cpu")
    assert p.returncode == 2 and "--plugins" in p.stderr and "hint" in p.stderr
    # `check --plugins X`: loads only X (valid), but says what --plugin does
    p = run_cli("check", "--plugins", "tensorplay-cpu,tensorplay-example-ops", "gelu",
                "--test-utils", "test_schema", "-q")
    assert "--plugin NAME" in p.stderr and p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("cmd", [["plugins"], ["ops"],
                                 ["check", "--plugin", "example_ops", "--device", "cpu",
                                  "--test-utils", "test_schema", "-q"]],
                         ids=["plugins", "ops", "check"])
def test_tables_fit_80_columns(cmd):
    p = run_cli(*cmd, columns=80)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    # the tables (failure messages and notes are prose, greppable on one line)
    table = [line for line in lines if not line.startswith(("- ", "device "))]
    # ... unless one name is too long to fit (names are never split, issue 29 §5): then the
    # widest column is exactly as wide as that name (it could not give up more)
    dashes = next(line for line in lines if set(line) <= {"-", " "} and "-" in line)
    if len(dashes) > 80:
        assert max(len(d) for d in dashes.split()) == max(len(w) for ln in lines
                                                           for w in ln.split()), p.stdout
    else:
        assert max(len(line) for line in table) <= 80, max(table, key=len)


def test_check_plugin_of_a_device_plugin_finds_the_builtin_cases():
    from tensorplay.testing.plugin_check import plugin_check_cases
    p = run_cli("check", "--plugin", "tensorplay-cpu", "--device", "cpu", "-q", "--json", "-")
    data = json.loads(p.stdout)
    cases = plugin_check_cases("tensorplay-cpu", "cpu")
    assert len(cases) >= 50
    assert {(r["op"], r["device"]) for r in data["rows"]} == {(c.op, c.device) for c in cases}
    # the CLI and check_plugin are one engine: same verdicts
    if not data["samples_checked"]:
        assert p.returncode == 1 and "nothing was checked" in p.stderr


def test_check_plugin_tensorplay_cpu_passes_over_every_builtin_op():
    """`tensorplay check --plugin tensorplay-cpu`: the cpu plugin hands the core's built-in
    samples to the engine; every built-in op is checked with every default check and passes."""
    import tensorplay as tp
    from tensorplay.testing import builtin_samples
    BUILTINS = dir(tp.ops.tp)            # every built-in op's name
    exe = _console_script()
    p = subprocess.run([exe, "check", "--plugin", "tensorplay-cpu", "-q", "--json", "-"],
                       capture_output=True, text=True, timeout=300, check=False)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    data = json.loads(p.stdout)
    assert data["ok"] and data["failures"] == []
    n_table = sum(len(builtin_samples.samples(n)) for n in BUILTINS)
    assert data["samples_checked"] >= n_table >= 300
    rows = {r["op"]: r for r in data["rows"]}
    assert set(rows) == {f"tp::{n}" for n in BUILTINS}
    for r in rows.values():
        assert r["device"] == "cpu" and r["samples"] >= 1, r
        assert set(r["checks"]) == {"test_schema", "test_autograd_registration", "test_gradients",
                                    "test_layouts", "test_faketensor",
                                    "test_aot_dispatch_dynamic"}, r
        assert "fail" not in r["checks"].values(), r
    assert rows["tp::add"]["checks"]["test_layouts"] == "pass"
    assert rows["tp::matmul"]["checks"]["test_autograd_registration"] == "pass"
    # every built-in formula's values are checked against finite differences (issue 27)
    assert rows["tp::matmul"]["checks"]["test_gradients"] == "pass"
    assert rows["tp::tanh"]["checks"]["test_gradients"] == "pass"
    assert "nothing was checked" not in p.stderr
