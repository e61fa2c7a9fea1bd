"""Fresh-user review of the ``tensorplay`` command and the messages around it: an unavailable
device is reported once (with its plugin, reason and fix) and never as checked; plugins left out
by ``--plugins``/``--disable-plugins`` are named with the fix; a plugin module with no hooks is
warned about (naming the file imported); unknown-device messages end cleanly with a fix; the
compiled graph prints named-tuple outputs by field; a kernel run as its own fake says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import tensorplay as tp
from _plugin_dists import PluginEnv

CUDA_OK = tp.plugins.device_status("cuda")[0]


def run_cli(*args, cwd=None, env_extra=None):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    for k in ("TENSORPLAY_PLUGINS", "TENSORPLAY_DISABLE_PLUGINS", "TENSORPLAY_STRICT_PLUGINS"):
        env.pop(k, None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "tensorplay.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300, cwd=cwd, check=False)


# ------------------------------------------------------------------ 1. an unavailable device

def _cuda_reason():
    ok, why = tp.plugins.device_status("cuda")
    assert not ok
    # the part of the reason after the "device 'cuda' is not available" preamble
    return why.split(": ", 1)[-1][:60]


@pytest.mark.skipif(CUDA_OK, reason="needs a machine where device cuda is unavailable")
def test_check_device_plugin_whose_device_is_unavailable_says_so_once():
    p = run_cli("check", "--plugin", "tensorplay-cuda")
    both = p.stdout + p.stderr
    reason = _cuda_reason()
    # one line for the device, naming the plugin, with the reason; never one per op
    assert both.count(reason) == 1, both[-3000:]
    assert "device cuda (plugin tensorplay-cuda) is unavailable: " in both
    assert "no available device with a kernel" not in both
    assert "no op had a kernel and sample inputs" not in both
    # the summary counts the rows on the device they belong to (cuda), never "on cpu"
    summary = [ln for ln in p.stdout.splitlines() if "kernel row(s)" in ln][-1]
    assert "on cpu" not in summary and "cuda" in summary and "unavailable" in summary, summary
    # nothing was checked: exit 1 as documented, and nothing is reported as passed
    assert p.returncode == 1
    assert "nothing was checked" in p.stderr and "cuda" in p.stderr.split("nothing was checked")[1]
    assert "]: ok (" not in p.stderr


@pytest.mark.skipif(CUDA_OK, reason="needs a machine where device cuda is unavailable")
def test_check_json_records_the_unavailable_device_and_is_not_ok():
    p = run_cli("check", "--plugin", "tensorplay-cuda", "--json", "-", "-q")
    data = json.loads(p.stdout)
    assert data["ok"] is False and data["samples_checked"] == 0
    assert data["unavailable_devices"]["cuda"]["plugin"] == "tensorplay-cuda"
    assert _cuda_reason() in data["unavailable_devices"]["cuda"]["reason"]
    assert all(r["device"] == "cuda" and r["note"] == "device unavailable" for r in data["rows"])
    assert p.returncode == 1


@pytest.mark.skipif(CUDA_OK, reason="needs a machine where device cuda is unavailable")
def test_check_explicit_unavailable_device_names_plugin_and_reason():
    p = run_cli("check", "--plugin", "tensorplay-cuda", "--device", "cuda")
    assert p.returncode == 1
    assert "device cuda (plugin tensorplay-cuda) is unavailable: " in p.stderr, p.stderr
    assert p.stderr.count(_cuda_reason()) == 1


@pytest.mark.skipif(CUDA_OK, reason="needs a machine where device cuda is unavailable")
def test_check_all_packs_notes_the_unavailable_device_once_and_passes():
    p = run_cli("check", "--test-utils", "test_schema", "--device", "cpu", "-q")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    p = run_cli("check", "--test-utils", "test_schema", "-q")
    both = p.stdout + p.stderr
    assert both.count("device cuda (plugin tensorplay-cuda) is unavailable: ") == 1, both[-3000:]
    assert both.count(_cuda_reason()) == 1


# ---------------------------------------------------------- 2. plugins left out by the controls

def test_check_plugin_left_out_by_allow_list_says_so_and_how_to_include_it():
    p = run_cli("--plugins", "tensorplay-cpu", "check", "--plugin", "tensorplay-example-ops")
    assert p.returncode == 1
    both = p.stdout + p.stderr
    assert "matching the filters" not in both
    assert "tensorplay-example-ops" in both and "not loaded" in both
    assert "--plugins tensorplay-cpu,tensorplay-example-ops" in both, both


def test_check_plugin_blocked_by_disable_list_says_so_and_how_to_include_it():
    p = run_cli("--disable-plugins", "example_ops", "check", "--plugin", "tensorplay-example-ops")
    assert p.returncode == 1
    both = p.stdout + p.stderr
    assert "matching the filters" not in both
    assert "not loaded" in both and "--disable-plugins" in both and "TENSORPLAY_DISABLE_PLUGINS" \
        in both, both


def test_check_all_packs_with_allow_list_names_the_op_packs_left_out():
    p = run_cli("--plugins", "tensorplay-cpu", "check")
    assert p.returncode == 1
    both = p.stdout + p.stderr
    assert "pip install an op pack" not in both, both
    assert "tensorplay-example-ops" in both and "not loaded" in both


def test_check_op_of_a_plugin_left_out_names_that_plugin():
    p = run_cli("--plugins", "tensorplay-cpu", "check", "gelu")
    assert p.returncode == 1
    assert "tensorplay-example-ops" in p.stderr and "not loaded" in p.stderr, p.stderr


def test_blocked_record_says_which_control_blocked_it(tmp_path):
    env = PluginEnv(tmp_path)
    r = env.run('''
        import tensorplay
        from tensorplay.errors import PluginError
        from tensorplay.testing.plugin_check import plugin_ops
        try:
            plugin_ops("tensorplay-example-ops")
        except PluginError as e:
            result(str(e))
    ''', TENSORPLAY_PLUGINS="tensorplay-cpu")
    assert "TENSORPLAY_PLUGINS" in r.data and "allow-list" in r.data
    assert "TENSORPLAY_DISABLE_PLUGINS" not in r.data, r.data


# --------------------------------------------------------------- 3. a plugin with no hooks

def test_plugin_module_with_no_hooks_is_warned_naming_the_file(tmp_path):
    env = PluginEnv(tmp_path)
    env.dist("tensorplay-hollow", plugins={"hollow": "hollow_plugin"})
    # a same-named directory in the working directory shadows the real module
    os.makedirs(tmp_path / "hollow_plugin")
    r = env.run('''
        import tensorplay
        rec = tensorplay.plugins.get_plugin("hollow")
        result({"status": rec.status, "warnings": rec.as_dict()["warnings"],
                "pw": plugin_warnings()})
    ''')
    d = r.data
    assert d["status"] == "loaded"
    (w,) = d["warnings"]
    assert "registered no hooks" in w and str(tmp_path / "hollow_plugin") in w, w
    assert any("registered no hooks" in x for x in d["pw"]), d
    e = dict(os.environ, PYTHONPATH=str(tmp_path))
    p = subprocess.run([sys.executable, "-m", "tensorplay.cli", "plugins"], cwd=tmp_path,
                       capture_output=True, text=True, env=e, timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    assert "registered no hooks" in p.stdout and str(tmp_path / "hollow_plugin") in \
        p.stdout.replace("\n", "").replace(" ", "") or "hollow_plugin" in p.stdout, p.stdout
    assert "warning" in p.stdout.lower()


def test_plugin_with_hooks_has_no_warning(tmp_path):
    from _plugin_dists import GOOD
    env = PluginEnv(tmp_path)
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    r = env.run('''
        import tensorplay
        rec = tensorplay.plugins.get_plugin("goodpack")
        result({"status": rec.status, "warnings": rec.as_dict()["warnings"]})
    ''')
    assert r.data == {"status": "loaded", "warnings": []}


# ---------------------------------------------------------- 4. unknown device: a clean message

def test_unknown_device_message_ends_cleanly_with_a_fix():
    with pytest.raises(Exception) as ei:
        # a name no test registers (another test's MockBackend("mock") leaves "mock" known as
        # an unregistered test backend, which has its own message)
        tp.zeros(2, device="nodevhere")
    msg = str(ei.value)
    assert msg == msg.rstrip(), repr(msg)
    assert "nodevhere" in msg and "tensorplay plugins" in msg and "install" in msg.lower(), msg


def test_unknown_device_close_to_a_known_one_is_suggested():
    from tensorplay.plugins import device_hint
    hint = device_hint("cudaa")
    assert "Did you mean 'cuda'?" in hint, hint
    assert "Did you mean" not in device_hint("mock")


# ----------------------------------------------------------------------------- 5. compile

def test_compiled_graph_prints_named_tuple_output_by_field():
    @tp.compile
    def f(x):
        return x.max(dim=1)
    f(tp.ones(3, 4))
    text = str(f.graph)
    ret = next(ln for ln in text.splitlines() if ln.strip().startswith("return"))
    assert "values=" in ret and "indices=" in ret and "max(" in ret, text


def test_kernel_run_as_its_own_fake_says_so_when_it_fails():
    from tensorplay.errors import CompileError

    @tp.library.custom_op("clireview::scale", mutates_args=())
    def scale(x: tp.Tensor) -> tp.Tensor:
        return x * float(x.sum().item())

    @tp.compile
    def f(x):
        return scale(x) + 1
    with pytest.raises(CompileError) as ei:
        f(tp.ones(3))
    msg = str(ei.value)
    assert "The fake kernel of" not in msg, msg
    assert "no fake kernel" in msg and "register_fake" in msg and "clireview::scale" in msg


def test_registered_fake_that_fails_is_still_called_the_fake():
    from tensorplay.errors import CompileError

    @tp.library.custom_op("clireview::scale2", mutates_args=())
    def scale2(x: tp.Tensor) -> tp.Tensor:
        return x * 2

    @scale2.register_fake
    def _(x):
        raise RuntimeError("bad fake")

    @tp.compile
    def f(x):
        return scale2(x) + 1
    with pytest.raises(CompileError) as ei:
        f(tp.ones(3))
    assert "fake kernel of clireview::scale2" in str(ei.value)


def test_check_device_none_of_the_plugins_kernels_are_for_says_which_it_has():
    p = run_cli("check", "--plugin", "tensorplay-cuda", "--device", "cpu")
    assert p.returncode == 1
    assert "matching the filters" not in p.stderr
    assert "tensorplay-cuda has kernels for cuda, none for cpu" in p.stderr, p.stderr
