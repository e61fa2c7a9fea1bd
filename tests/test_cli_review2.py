"""Second review of the ``tensorplay`` command's messages and exit statuses: install advice comes
from the plugin records (a blocked plugin names the control, a shadowed one says it is
shadowed), never "pip install" for an installed plugin; an unknown name the user typed (plugin,
op, device) is a usage error (exit 2) everywhere, as documented in ``check --help``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import tensorplay as tp
from tensorplay.cli import main


def run_cli(*args, cwd=None, env_extra=None):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    for k in ("TENSORPLAY_PLUGINS", "TENSORPLAY_DISABLE_PLUGINS", "TENSORPLAY_STRICT_PLUGINS"):
        env.pop(k, None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "tensorplay.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300, cwd=cwd, check=False)


def run_py(code, cwd=None, env_extra=None):
    env = dict(os.environ)
    for k in ("TENSORPLAY_PLUGINS", "TENSORPLAY_DISABLE_PLUGINS", "TENSORPLAY_STRICT_PLUGINS"):
        env.pop(k, None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300, cwd=cwd, check=False)


# ------------------------------------------------- 1. advice from the records, not "pip install"

def test_check_with_cpu_left_out_by_plugins_names_the_flag_not_pip_install():
    p = run_cli("--plugins", "tensorplay-example-ops", "check")
    both = p.stdout + p.stderr
    assert p.returncode == 1
    assert "pip install tensorplay-cpu" not in both, both[-2000:]
    tail = both[both.index("nothing was checked"):]
    assert "tensorplay-cpu" in tail and "--plugins" in tail, tail


def test_check_with_cpu_disabled_names_disable_plugins_once():
    p = run_cli("--plugins", "tensorplay-cpu", "--disable-plugins", "tensorplay-cpu", "check")
    both = p.stdout + p.stderr
    assert p.returncode == 1
    assert "pip install tensorplay-cpu" not in both, both[-2000:]
    tail = both[both.index("nothing was checked"):]
    assert "--disable-plugins" in tail, tail
    # the blocked plugin is listed once under "Not checked"
    notc = p.stdout[p.stdout.index("Not checked:"):] if "Not checked:" in p.stdout else ""
    assert notc.count("plugin tensorplay-cpu ") <= 1, notc


def test_device_hint_for_a_blocked_provider_names_the_control():
    p = run_py("import tensorplay as tp\ntry:\n    tp.ones(2)\nexcept Exception as e:\n"
               "    print(e)", env_extra={"TENSORPLAY_DISABLE_PLUGINS": "tensorplay-cpu"})
    assert "TENSORPLAY_DISABLE_PLUGINS" in p.stdout, p.stdout + p.stderr
    assert "pip install tensorplay-cpu" not in p.stdout
    q = run_py("import tensorplay as tp\ntry:\n    tp.ones(2)\nexcept Exception as e:\n"
               "    print(e)", env_extra={"TENSORPLAY_PLUGINS": "tensorplay-example-ops"})
    assert "TENSORPLAY_PLUGINS" in q.stdout and "pip install tensorplay-cpu" not in q.stdout, \
        q.stdout + q.stderr


def test_shadowed_device_plugin_says_shadowed_not_install(tmp_path):
    # a regular package (with __init__.py) in the working directory shadows the installed one
    # however it was installed (an empty directory shadows only editable installs)
    (tmp_path / "tensorplay_cpu").mkdir()
    (tmp_path / "tensorplay_cpu" / "__init__.py").write_text("")
    p = run_py("import warnings; warnings.simplefilter('ignore')\nimport tensorplay as tp\n"
               "try:\n    tp.ones(2)\nexcept Exception as e:\n    print(e)", cwd=tmp_path)
    out = p.stdout
    assert "Install tensorplay-cpu" not in out and "pip install tensorplay-cpu)" not in out, out
    assert "shadow" in out and str(tmp_path / "tensorplay_cpu") in out, out


# ------------------------------------------------------- 3. exit statuses for unknown names

@pytest.mark.parametrize("argv", [["check", "--plugin", "nosuchplugin"],
                                  ["check", "nosuch::op"],
                                  ["check", "--device", "tpu"],
                                  ["ops", "-n", "nosuch"]])
def test_unknown_names_are_usage_errors(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "?." not in err, err


def test_unknown_plugins_flag_is_a_usage_error():
    assert run_cli("--plugins", "nosuch", "check").returncode == 2


def test_unavailable_but_provided_device_is_a_failure_not_usage(capsys):
    if tp.plugins.device_status("cuda")[0]:
        pytest.skip("cuda is available here")
    assert main(["check", "--device", "cuda"]) == 1


def test_exit_statuses_documented_in_help_and_readme(capsys):
    assert main(["check", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "exit status" in out.lower()
    for code in ("0", "1", "2"):
        assert f"{code}:" in out or f"{code} " in out
    assert "unknown" in out and "--plugin" in out
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    readme = " ".join(readme.split())
    assert "unknown plugin, op or device name" in readme
    assert "unknown plugin, op or device name" in out


# ------------------------------------------------------------ 4. plugins table and check scope

def test_plugins_table_says_which_control_blocked_a_plugin():
    p = run_cli("--plugins", "tensorplay-cpu", "plugins")
    rows = [ln for ln in p.stdout.splitlines() if ln.startswith("tensorplay-triton")]
    assert rows and "blocked" in rows[0], p.stdout
    assert "--plugins" in rows[0] or "TENSORPLAY_PLUGINS" in rows[0], rows[0]
    q = run_cli("--disable-plugins", "tensorplay-triton", "plugins")
    rows = [ln for ln in q.stdout.splitlines() if ln.startswith("tensorplay-triton")]
    assert "--disable-plugins" in rows[0] or "TENSORPLAY_DISABLE_PLUGINS" in rows[0], rows[0]


def test_check_device_plugin_names_only_its_devices(capsys):
    assert main(["check", "--plugin", "tensorplay-cpu", "-q", "--test-utils", "test_schema"]) \
        == 0
    out = capsys.readouterr().out
    assert "device cuda" not in out, out[-2000:]


def test_check_plugin_without_ops_says_it_ships_none(capsys):
    assert main(["check", "--plugin", "tensorplay-triton"]) == 1
    err = capsys.readouterr().err
    assert "tensorplay-triton ships no operators" in err, err
    assert "matching the filters" not in err


# ------------------------------------------ 2. a shadowed op pack with kernel entry points

def test_shadowed_op_pack_with_kernel_entry_points_says_shadowed(tmp_path):
    # a regular package (with __init__.py) in the working directory shadows the installed one
    # however it was installed (an empty directory shadows only editable installs)
    (tmp_path / "tensorplay_example_ops").mkdir()
    (tmp_path / "tensorplay_example_ops" / "__init__.py").write_text("")
    p = run_py("import warnings; warnings.simplefilter('ignore')\nimport tensorplay as tp\n"
               "try:\n    tp.ops.example.gelu(tp.ones(2))\nexcept Exception as e:\n"
               "    print(e)", cwd=tmp_path)
    out = p.stdout
    assert "shadows the installed package" in out, out
    assert str(tmp_path / "tensorplay_example_ops") in out, out
    assert "which no loaded plugin or module defines" not in out, out


# ---------------------------------------------------------------------------- 5. messages

def test_compile_of_op_without_fake_whose_kernel_raises_says_the_kernel_raised():
    from tensorplay import library
    from tensorplay.errors import CompileError

    @library.custom_op("cli2r::boom", mutates_args=())
    def boom(x: tp.Tensor, k: int) -> tp.Tensor:
        if k > 1:
            raise ValueError(f"boom: k={k} too large")
        return x * 2

    # the kernel's own error, as eagerly (an ``except ValueError`` keeps working under
    # compile); what happened is said in a note
    with pytest.raises(ValueError, match="boom: k=3 too large") as ei:
        tp.compile(lambda x: boom(x, 3) + 1)(tp.ones(2))
    assert not isinstance(ei.value, CompileError)
    msg = " ".join(getattr(ei.value, "__notes__", ()))
    assert "its kernel, run as its fake, raised ValueError" in msg, msg
    assert "failed on fake tensors" not in msg and "register_fake" in msg  # "(no register_fake)"
    assert "Register one" not in msg

    # neighbour: a kernel that reads data still gets the register_fake advice
    @library.custom_op("cli2r::reads", mutates_args=())
    def reads(x: tp.Tensor) -> tp.Tensor:
        return x * x.sum().item()

    with pytest.raises(CompileError) as ei:
        tp.compile(lambda x: reads(x) + 1)(tp.ones(2))
    msg = str(ei.value)
    assert "failed on fake tensors" in msg and "Register one" in msg, msg


def _opcheck_msgs(op, args):
    from tensorplay import library
    res = library.opcheck(op, args, raise_exception=False)
    return {k: v for k, v in res.items() if v != "SUCCESS"}


def test_opcheck_messages_plain_floats_no_double_period_inplace_leaf():
    from tensorplay import library

    @library.custom_op("cli2r::nofake", mutates_args=(), device_types="cpu")
    def nofake(x: tp.Tensor) -> tp.Tensor:
        return tp.from_numpy(x.detach().numpy() * 2)

    msgs = _opcheck_msgs(nofake, (tp.randn(3),))
    assert ".." not in msgs["test_faketensor"], msgs["test_faketensor"]

    @library.custom_op("cli2r::strides", mutates_args=(), device_types="cpu")
    def strides(x: tp.Tensor) -> tp.Tensor:
        flat = x.contiguous().view(-1) if x.is_contiguous() else x.t().contiguous().view(-1)
        return flat.view(x.shape) * 1.0

    @strides.register_fake
    def _(x):
        return tp.empty_like(x)

    msg = _opcheck_msgs(strides, (tp.randn(3, 4),))["test_layouts"]
    assert "np.float64" not in msg and "worst at index" in msg, msg

    @library.custom_op("cli2r::sneaky", mutates_args=())
    def sneaky(x: tp.Tensor) -> tp.Tensor:
        x.add_(1)
        return x.clone()

    msg = _opcheck_msgs(sneaky, (tp.randn(3, requires_grad=True),))["test_autograd_registration"]
    assert ".numpy()" not in msg and "in place" in msg and "mutates_args" in msg, msg


def test_tensor_of_an_unregistered_test_backend_says_it_was_unregistered():
    from tensorplay.testing import MockBackend
    with MockBackend(device_type="mockcli2"):
        x = tp.ones(2, device="mockcli2")
    with pytest.raises(Exception) as ei:
        x + 1
    msg = str(ei.value)
    assert "unregistered" in msg and "MockBackend" in msg, msg
    assert "install the plugin" not in msg
    # neighbour: registered again, it works
    with MockBackend(device_type="mockcli2"):
        assert (tp.ones(2, device="mockcli2") + 1).tolist() == [2.0, 2.0]


def test_blocked_device_plugin_is_listed_once_under_not_checked():
    p = run_cli("--disable-plugins", "tensorplay-cpu", "check")
    notc = p.stdout[p.stdout.index("Not checked:"):]
    lines = [ln for ln in notc.splitlines() if "tensorplay-cpu" in ln and ln.startswith("- ")]
    assert len(lines) == 1, notc
    assert "--disable-plugins" in lines[0] and "device cpu" in lines[0], lines[0]
    # the summary never counts cpu rows as checked: here they are marked unavailable; where
    # another device (cuda) checked the ops, the engine made no cpu rows at all
    summary = [ln for ln in p.stdout.splitlines() if "kernel row(s)" in ln]
    assert summary, p.stdout
    assert "on cpu (unavailable: not checked)" in summary[-1] or "on cpu" not in summary[-1]
