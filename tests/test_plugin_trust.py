"""Trust between plugins (issue 28): a plugin's own claims (its priority, its DeviceSpec, what
it writes into the environment) never silently take something from another distribution.

* a higher ``TENSORPLAY_PRIORITY`` replaces another distribution's kernel only when the user
  names the winner in ``TENSORPLAY_KERNEL_OVERRIDE``; then it is warned about and
  ``tensorplay ops`` names the kernel's real owner;
* a plugin declaring ``cpu`` (served by tensorplay-cpu) is refused unless the user names it in
  ``TENSORPLAY_DEVICE_PROVIDER_cpu``; ``tensorplay plugins`` shows who provides what;
* the ``TENSORPLAY_*`` controls are read from a snapshot taken before any plugin ran: a plugin
  rewriting them at import changes neither the hints nor the ``tensorplay`` command's re-run;
* one distribution naming its module under two entry points loads it once.
"""

from __future__ import annotations

import json

import pytest

from _plugin_dists import PluginEnv


@pytest.fixture
def env(tmp_path):
    return PluginEnv(tmp_path)


OWNER = '''
import tensorplay
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    @tensorplay.library.custom_op("trustns::f", mutates_args=())
    def f(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x + 1
    @f.register_kernel("cpu")
    def _(x):
        return x + 1
'''

INTRUDER = '''
import tensorplay
from tensorplay.plugins import hookimpl
TENSORPLAY_PRIORITY = 50
@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.register_kernel("trustns::f", "cpu", lambda x: x * 0 - 999)
'''

CALL = '''
import tensorplay as tp
from tensorplay.cli import _op_info
st = {p["dist"]: p["status"] for p in tp.plugins.list()}
result({"status": st, "warnings": plugin_warnings(),
        "call": tp.ops.trustns.f(tp.ones(2)).tolist(),
        "table": {o["name"]: o["kernels"] for o in tp.plugins.ops_table()}["trustns::f"]})
'''


def test_priority_alone_does_not_replace_another_distributions_kernel(env):
    env.dist("pack-owner", plugins={"owner": "owner_mod"}, modules={"owner_mod": OWNER})
    env.dist("pack-intruder", plugins={"intruder": "intruder_mod"},
             modules={"intruder_mod": INTRUDER})
    d = env.run(CALL).data
    assert d["call"] == [2.0, 2.0]                          # the owner's kernel runs
    assert d["status"] == {**d["status"], "pack-owner": "loaded", "pack-intruder": "failed"}
    (w,) = [w for w in d["warnings"] if "pack-intruder" in w]
    assert "pack-owner" in w and "trustns::f" in w and "'cpu'" in w
    assert "TENSORPLAY_KERNEL_OVERRIDE=pack-intruder" in w
    assert d["table"]["cpu"]["source"] == "pack-owner"


def test_kernel_override_with_consent_is_warned_and_shown(env):
    env.dist("pack-owner", plugins={"owner": "owner_mod"}, modules={"owner_mod": OWNER})
    env.dist("pack-intruder", plugins={"intruder": "intruder_mod"},
             modules={"intruder_mod": INTRUDER})
    d = env.run(CALL, TENSORPLAY_KERNEL_OVERRIDE="pack-intruder").data
    assert d["call"] == [-999.0, -999.0]
    assert d["status"]["pack-intruder"] == "loaded"
    (w,) = [w for w in d["warnings"] if "pack-intruder" in w]
    assert "pack-owner" in w and "trustns::f" in w and "'cpu'" in w
    assert d["table"]["cpu"]["source"] == "pack-intruder"
    # `tensorplay ops` names the active kernel's owner, not only the op's
    r = env.run('''
        from tensorplay.cli import main
        main(["ops", "-n", "trustns", "--json", "-"])
    ''', TENSORPLAY_KERNEL_OVERRIDE="pack-intruder")
    (info,) = json.loads(r.stdout)
    assert info["plugin"] == "pack-owner"
    assert info["kernel_owners"]["cpu"] == "pack-intruder"
    assert "cpu [by pack-intruder]" in info["kernels"]


CPU_THIEF = '''
import tensorplay
from tensorplay.plugins import hookimpl, DeviceSpec
TENSORPLAY_PRIORITY = 100

@hookimpl
def tensorplay_devices():
    return [DeviceSpec("cpu", "thief_mod:ThiefBackend", priority=100)]

def __getattr__(name):
    if name == "ThiefBackend":
        from tensorplay_cpu.backend import CPUBackend

        class ThiefBackend(CPUBackend):
            def kernels(self):
                k = dict(super().kernels())
                k["add"] = lambda a, b, *rest, **kw: a * 0 - 999
                return k
        return ThiefBackend
    raise AttributeError(name)
'''

DEVICES = '''
import tensorplay as tp
recs = {p["dist"]: p for p in tp.plugins.list()}
result({"sum": (tp.ones(2) + tp.ones(2)).tolist(), "warnings": plugin_warnings(),
        "status": {d: r["status"] for d, r in recs.items()},
        "devices": {d: r["devices"] for d, r in recs.items()},
        "error": recs["aaa-cpu-thief"]["error"]})
'''


def test_a_plugin_cannot_take_over_cpu(env):
    # "aaa-" sorts first: it loads before tensorplay-cpu
    env.dist("aaa-cpu-thief", plugins={"thief": "thief_mod"}, modules={"thief_mod": CPU_THIEF})
    d = env.run(DEVICES).data
    assert d["sum"] == [2.0, 2.0]
    assert d["status"]["aaa-cpu-thief"] == "failed"
    assert "cpu" in d["devices"]["tensorplay-cpu"]
    assert "TENSORPLAY_DEVICE_PROVIDER_cpu=aaa-cpu-thief" in d["error"], d["error"]
    assert any("aaa-cpu-thief" in w and "tensorplay-cpu" in w for w in d["warnings"])


def test_the_user_may_name_another_cpu_provider(env):
    env.dist("aaa-cpu-thief", plugins={"thief": "thief_mod"}, modules={"thief_mod": CPU_THIEF})
    d = env.run(DEVICES, TENSORPLAY_DEVICE_PROVIDER_cpu="aaa-cpu-thief").data
    assert d["sum"] == [-999.0, -999.0]         # what the user asked for
    assert d["status"]["aaa-cpu-thief"] == "loaded"
    # `tensorplay plugins` tells the truth: the thief provides cpu, tensorplay-cpu does not
    assert d["devices"]["aaa-cpu-thief"] == ["cpu"] and d["devices"]["tensorplay-cpu"] == []
    assert any("aaa-cpu-thief" in w and "TENSORPLAY_DEVICE_PROVIDER_cpu" in w
               for w in d["warnings"])


REWRITER = '''
import os
os.environ["TENSORPLAY_DISABLE_PLUGINS"] = "b-victim"
os.environ["TENSORPLAY_PLUGINS"] = "a-rewriter"
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    pass
'''

VICTIM = '''
import tensorplay
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.define("victimns::f(Tensor x) -> Tensor")
'''


def test_plugins_rewriting_controls_at_import_change_nothing(env):
    env.dist("a-rewriter", plugins={"rewriter": "rewriter_mod"},
             modules={"rewriter_mod": REWRITER})
    env.dist("b-victim", plugins={"victim": "victim_mod"}, modules={"victim_mod": VICTIM})
    r = env.run('''
        import tensorplay as tp
        from tensorplay.cli import main
        st = {p["dist"]: p["status"] for p in tp.plugins.list()}
        print("PARENT:" + json.dumps({"status": st, "controls": tp.plugins.controls()}))
        sys.stdout.flush()
        # --strict makes the command re-run itself in a fresh interpreter
        sys.exit(main(["--strict", "plugins", "--json", "-"]))
    ''', TENSORPLAY_DISABLE_PLUGINS="nothing-installed")
    assert r.rc == 0, r.stderr
    parent = json.loads(r.stdout.split("PARENT:")[1].splitlines()[0])
    assert parent["status"]["b-victim"] == "loaded"
    # the snapshot holds what the process started with (the runner's own TENSORPLAY_* too, e.g.
    # TENSORPLAY_BLOCK_TORCH on the GPU runs), never what the rewriter wrote at import
    assert parent["controls"]["TENSORPLAY_DISABLE_PLUGINS"] == "nothing-installed", parent
    assert "TENSORPLAY_PLUGINS" not in parent["controls"], parent
    child = json.loads(r.stdout.split("\n", 1)[1])
    st = {p["dist"]: p["status"] for p in child}
    assert st["b-victim"] == "loaded", st


def test_one_distribution_naming_its_module_twice_loads_it_once(env):
    env.dist("pack-twice", plugins={"first": "twice_mod", "second": "twice_mod"},
             modules={"twice_mod": VICTIM})
    d = env.run('''
        import tensorplay as tp
        recs = [p for p in tp.plugins.list() if p["dist"] == "pack-twice"]
        result({"recs": [(p["status"], p["ops"], p["error"]) for p in recs],
                "has_op": hasattr(tp.ops.victimns, "f"), "warnings": plugin_warnings()})
    ''').data
    assert d["has_op"], d
    assert d["recs"] == [["loaded", ["victimns::f"], None]], d
    assert d["warnings"] == []
