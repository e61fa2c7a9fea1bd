"""Environment controls of the plugin platform (SPEC §1): ``TENSORPLAY_PLUGINS`` (allow-list),
``TENSORPLAY_DISABLE_PLUGINS`` (block-list, applied before import: the module never runs),
``TENSORPLAY_STRICT_PLUGINS=1`` (a load failure is an error) and ``TENSORPLAY_TRACE_PLUGINS=1``
(every import and hook call logged). Each test imports tensorplay in a fresh subprocess with
throw-away plugin distributions on a temporary path."""

from __future__ import annotations

import pytest
from _plugin_dists import BROKEN_IMPORT, GOOD, PluginEnv

LAZY = '''
import tensorplay
from tensorplay.plugins import hookimpl
mark("lazypack")

@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.define("lazyns::op(Tensor x) -> Tensor")
'''

STATUS = '''
    import tensorplay
    result({"status": {p["distribution"]: p["status"] for p in tensorplay.plugins.list()},
            "warnings": plugin_warnings(), "modules": sorted(m for m in
            ("goodpack", "brokendev", "lazypack", "lazypack_kernels", "tensorplay_cpu")
            if m in sys.modules)})
'''


@pytest.fixture
def env(tmp_path):
    e = PluginEnv(tmp_path)
    e.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    e.dist("tensorplay-brokendev", "2.5", plugins={"brokendev": "brokendev"},
           modules={"brokendev": BROKEN_IMPORT})
    e.dist("tensorplay-lazypack", plugins={"lazypack": "lazypack"},
           kernels={"lazyns::op.cpu": "lazypack_kernels:op"},
           modules={"lazypack": LAZY,
                    "lazypack_kernels": "mark('lazy_kernels')\ndef op(x):\n    return x\n"})
    return e


# ---------------------------------------------------------------------------------------------
# block-list

@pytest.mark.parametrize("spelling", ["tensorplay-brokendev", "BrokenDev", "tensorplay_brokendev",
                                      " other , brokendev "])
def test_block_list_prevents_import(env, spelling):
    d = env.run(STATUS, TENSORPLAY_DISABLE_PLUGINS=spelling).data
    assert d["status"]["tensorplay-brokendev"] == "blocked"
    assert d["status"]["tensorplay-goodpack"] == "loaded"
    assert d["warnings"] == []                         # blocking a broken plugin silences it
    assert "brokendev" not in d["modules"]
    assert "broken" not in env.executed()              # its module never ran
    assert "good" in env.executed()


def test_blocked_device_and_ops_say_they_are_blocked(env):
    d = env.run('''
        import tensorplay
        result({"device": raises(tensorplay.zeros, 1, device="brokendev"),
                "op": raises(lambda: tensorplay.ops.lazyns.op),
                "get_kernel": raises(tensorplay.library.get_kernel, "lazyns::op", "cpu"),
                "cpu": raises(tensorplay.zeros, 1)})
    ''', TENSORPLAY_DISABLE_PLUGINS="brokendev,lazypack,tensorplay-cpu").data
    assert d["device"][0] == "DeviceUnavailableError"
    assert "tensorplay-brokendev 2.5" in d["device"][1] and "blocked" in d["device"][1]
    # never imported, but its kernel metadata names lazyns::op
    for key, exc in (("op", "AttributeError"), ("get_kernel", "LookupError")):
        assert d[key][0] == exc and "tensorplay-lazypack 1.0" in d[key][1], d[key]
        assert "blocked" in d[key][1]
    assert d["cpu"][0] == "DeviceUnavailableError" and "tensorplay-cpu" in d["cpu"][1]
    assert "TENSORPLAY_DISABLE_PLUGINS" in d["cpu"][1]
    assert env.executed() == ["good"]


def test_block_list_covers_kernel_entry_points(env):
    env.dist("tensorplay-kernelsonly", kernels={"lazyns::op.cuda": "lazypack_kernels:op"})
    d = env.run('''
        import tensorplay
        st = {p["distribution"]: p["status"] for p in tensorplay.plugins.list()}
        result({"status": st, "ops": [o["name"] for o in tensorplay.plugins.ops_table("lazyns")],
                "table": tensorplay.plugins.ops_table("lazyns")})
    ''', TENSORPLAY_DISABLE_PLUGINS="tensorplay-kernelsonly").data
    assert d["status"]["tensorplay-kernelsonly"] == "blocked"
    assert d["status"]["tensorplay-lazypack"] == "loaded"
    assert d["table"][0]["devices"] == ["cpu"]          # its cuda kernel was never registered


# ---------------------------------------------------------------------------------------------
# allow-list

def test_allow_list_loads_only_named_plugins(env):
    r = env.run('''
        import tensorplay
        st = {p["distribution"]: p["status"] for p in tensorplay.plugins.list()}
        result({"status": st, "cpu": raises(tensorplay.zeros, 1),
                "meta": list(tensorplay.ops.goodns.double(tensorplay.empty(2, device="meta")).shape)})
    ''', TENSORPLAY_PLUGINS="goodpack")
    d = r.data
    assert d["status"]["tensorplay-goodpack"] == "loaded"
    assert d["status"]["tensorplay-brokendev"] == "blocked"
    assert d["status"]["tensorplay-lazypack"] == "blocked"
    assert d["status"]["tensorplay-cpu"] == "blocked"
    assert d["cpu"][0] == "DeviceUnavailableError" and "blocked" in d["cpu"][1]
    assert d["meta"] == [2]                             # fake tensors need no device plugin
    assert sorted(env.executed()) == ["good"]


def test_empty_allow_list_loads_nothing_and_core_still_works(env):
    d = env.run('''
        import tensorplay
        x = tensorplay.empty(2, 3, device="meta")
        result({"status": sorted({p["status"] for p in tensorplay.plugins.list()}),
                "schema": str(tensorplay.ops.tp.add.schema), "fake": list((x + x).shape),
                "numpy": "numpy" in sys.modules})
    ''', TENSORPLAY_PLUGINS="").data
    assert d["status"] == ["blocked"]
    assert d["fake"] == [2, 3] and d["schema"].startswith("tp::add(") and not d["numpy"]
    assert env.executed() == []


def test_allow_and_block_together_block_wins(env):
    d = env.run(STATUS, TENSORPLAY_PLUGINS="goodpack,lazypack",
                TENSORPLAY_DISABLE_PLUGINS="lazypack").data
    assert d["status"]["tensorplay-goodpack"] == "loaded"
    assert d["status"]["tensorplay-lazypack"] == "blocked"
    assert "lazypack" not in env.executed()


# ---------------------------------------------------------------------------------------------
# strict mode

def test_strict_mode_turns_a_load_failure_into_an_error(env):
    r = env.run(STATUS, TENSORPLAY_STRICT_PLUGINS="1")
    assert r.rc != 0
    assert "PluginError" in r.stderr and "tensorplay-brokendev 2.5" in r.stderr
    assert "libbroken.so" in r.stderr and "TENSORPLAY_STRICT_PLUGINS=1" in r.stderr
    assert "ImportError" in r.stderr                    # the original error is chained


def test_strict_mode_with_failing_plugin_blocked_imports_fine(env):
    d = env.run(STATUS, TENSORPLAY_STRICT_PLUGINS="1",
                TENSORPLAY_DISABLE_PLUGINS="brokendev").data
    assert d["status"]["tensorplay-goodpack"] == "loaded" and d["warnings"] == []


def test_strict_mode_rejects_incompatible_api_version(tmp_path):
    e = PluginEnv(tmp_path)
    e.dist("tensorplay-future", plugins={"future": "future"},
           modules={"future": "TENSORPLAY_API_VERSION = '7.1'\n"})
    assert e.run(STATUS).data["status"]["tensorplay-future"] == "incompatible"
    r = e.run(STATUS, TENSORPLAY_STRICT_PLUGINS="1")
    assert r.rc != 0 and "TENSORPLAY_API_VERSION = '7.1'" in r.stderr


def test_non_strict_failure_warns_exactly_once(env):
    d = env.run('''
        import tensorplay
        tensorplay.plugins.load_all()
        for _ in range(2):
            tensorplay.plugins.list(); raises(tensorplay.zeros, 1, device="brokendev")
        result(plugin_warnings())
    ''').data
    assert len(d) == 1 and "tensorplay-brokendev 2.5" in d[0]


# ---------------------------------------------------------------------------------------------
# trace

def test_trace_logs_each_import_and_hook_call(env):
    r = env.run('''
        import tensorplay
        op = tensorplay.ops.goodns.double
        tensorplay.plugins.sample_inputs(op, "cpu")
        tensorplay.ops.lazyns.op(tensorplay.ones(1))
        result("ok")
    ''', TENSORPLAY_TRACE_PLUGINS="1")
    assert r.data == "ok"
    err = r.stderr
    for line in ["import tensorplay-goodpack 1.0 (goodpack)",
                 "hook tensorplay_devices -> tensorplay-cpu",
                 "hook tensorplay_register_ops -> tensorplay-goodpack 1.0",
                 "hook tensorplay_sample_inputs -> tensorplay-goodpack 1.0",
                 "failed to load",             # the failure is in the trace too
                 "lazy kernel lazyns::op.cpu = lazypack_kernels:op of tensorplay-lazypack 1.0 imported",
                 "load backend tensorplay_cpu.backend:CPUBackend"]:
        assert line in err, f"{line!r} missing from trace:\n{err}"


def test_no_trace_output_by_default(env):
    r = env.run('''
        import tensorplay
        tensorplay.plugins.sample_inputs(tensorplay.ops.goodns.double, "cpu")
        result("ok")
    ''', TENSORPLAY_DISABLE_PLUGINS="brokendev")
    assert r.data == "ok" and "tensorplay.plugins:" not in r.stderr and "hook " not in r.stderr
