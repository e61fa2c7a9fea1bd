"""The plugin platform (issue 4): one scan, isolation and rollback, failures resurfacing on use,
conflicts and priorities, API version, contract validation, kernels from entry-point metadata,
visibility data, opcheck per plugin (Python, one-liner and pytest option).

Every test that installs plugins builds throw-away distributions on disk (``_plugin_dists``) and
imports tensorplay in a fresh subprocess, so the scan, the controls and the failures are real.
"""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys

import pytest
from _plugin_dists import _PYCACHE, BROKEN_IMPORT, GOOD, PluginEnv, own_plugins

CORE = pathlib.Path(__file__).resolve().parents[1] / "tensorplay_core" / "tensorplay"


@pytest.fixture
def env(tmp_path):
    return PluginEnv(tmp_path)


# ---------------------------------------------------------------------------------------------
# one scan, cheap import

@pytest.mark.parametrize("mode, importlib_calls", [(None, 0), ("importlib", 1)])
def test_entry_points_scanned_once_per_process(env, mode, importlib_calls):
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    r = env.run('''
        import importlib.metadata as md, pluggy
        calls = []
        real = md.entry_points
        def counting(*a, **k):
            # tensorplay's calls only: a library imported on the way (Triton, when a cuda op runs
            # a generated kernel) scans its own entry points at its import
            import sys
            if sys._getframe(1).f_globals.get("__name__", "").startswith("tensorplay"):
                calls.append((a, k))
            return real(*a, **k)
        md.entry_points = counting
        def forbidden(*a, **k):
            raise AssertionError("pluggy load_setuptools_entrypoints must not be used")
        pluggy.PluginManager.load_setuptools_entrypoints = forbidden
        import tensorplay
        from tensorplay.testing import check_plugin
        tensorplay.plugins.list(); tensorplay.plugins.ops_table()
        tensorplay.plugins.load_all()
        tensorplay.zeros(2)
        check_plugin("tensorplay-goodpack", test_utils=["test_schema"])
        tensorplay.plugins.get_plugin("goodpack")
        result({"calls": len(calls),
                # the platform's own scan counter (private: how often entry points were read
                # is not part of any public result)
                "scan_count": tensorplay.plugins.manager._S.scan_count,
                "good": tensorplay.plugins.get_plugin("goodpack").status})
    ''', TENSORPLAY_PLUGIN_SCAN=mode)
    # one scan: by the fast reader of *.dist-info (importlib.metadata's scan is not used), or
    # by one importlib.metadata.entry_points() call with TENSORPLAY_PLUGIN_SCAN=importlib
    assert r.data == {"calls": importlib_calls, "scan_count": 1, "good": "loaded"}, r.stderr


def test_fast_scan_finds_what_importlib_metadata_finds(env, tmp_path_factory):
    env.dist("tensorplay-goodpack", "1.2", plugins={"goodpack": "goodpack"},
             kernels={"goodns::double.cpu": "goodpack:double_cpu"}, modules={"goodpack": GOOD})
    shadow = PluginEnv(tmp_path_factory.mktemp("shadow"))   # same name later on the path: hidden
    shadow.dist("tensorplay-goodpack", "9.9", plugins={"goodpack": "shadowed"})
    shadow.dist("Tensorplay_Other.Pack", "0.1", plugins={"other": "otherpack"})
    r = env.run('''
        import importlib.metadata as md
        import tensorplay.plugins.discovery as m
        def norm(eps):
            return sorted([e.group, e.name, e.value, e.dist.metadata["Name"], e.dist.version]
                          for e in eps)
        fast = m._fast_scan()
        ref = m._importlib_scan()
        result({"fast": [norm(fast[0]), norm(fast[1])], "ref": [norm(ref[0]), norm(ref[1])]})
    ''', PYTHONPATH=os.pathsep.join([env.root, shadow.root]))
    assert r.data["fast"] == r.data["ref"]
    plugins = {(e[1], e[3], e[4]) for e in r.data["fast"][0]}
    assert ("goodpack", "tensorplay-goodpack", "1.2") in plugins
    assert ("other", "Tensorplay_Other.Pack", "0.1") in plugins
    assert not any(e[4] == "9.9" for e in r.data["fast"][0])
    assert ["tensorplay.kernels", "goodns::double.cpu", "goodpack:double_cpu",
            "tensorplay-goodpack", "1.2"] in r.data["fast"][1]


def test_zip_on_sys_path_falls_back_to_importlib_metadata(env):
    import zipfile
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    z = os.path.join(env.root, "zipped.zip")
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("zipped_pack.py", "import tensorplay\n"
                    "tensorplay.library.define('zipns::op(Tensor x) -> Tensor')\n")
        zf.writestr("zipped_pack-1.0.dist-info/METADATA",
                    "Metadata-Version: 2.1\nName: zipped-pack\nVersion: 1.0\n")
        zf.writestr("zipped_pack-1.0.dist-info/entry_points.txt",
                    "[tensorplay.plugins]\nzipped = zipped_pack\n")
    d = env.run('''
        import tensorplay
        st = {p["distribution"]: p["status"] for p in tensorplay.plugins.list()}
        result({"st": st, "ops": tensorplay.plugins.get_plugin("zipped-pack").ops,
                "scans": tensorplay.plugins.manager._S.scan_count})   # private: see above
    ''', PYTHONPATH=os.pathsep.join([env.root, z])).data
    assert d["st"]["zipped-pack"] == "loaded" and d["st"]["tensorplay-goodpack"] == "loaded"
    assert d["ops"] == ["zipns::op"] and d["scans"] == 1


def test_only_discovery_scans_entry_points():
    """Static guard: nothing but the plugin discovery module reads entry points, and nothing uses
    pluggy's scanner."""
    scanner = CORE / "plugins" / "discovery.py"
    offenders = []
    for path in CORE.rglob("*.py"):
        text = path.read_text()
        if "load_setuptools_entrypoints" in text and path != scanner:
            offenders.append(str(path))
        if "entry_points(" in text and path != scanner:
            offenders.append(str(path))
    discovery = scanner.read_text()
    calls = [n for n in ast.walk(ast.parse(discovery)) if isinstance(n, ast.Call)
             and getattr(n.func, "id", getattr(n.func, "attr", None)) == "entry_points"]
    assert offenders == [] and len(calls) == 1          # in _importlib_scan, the fallback
    assert "load_setuptools_entrypoints(" not in discovery


def test_import_with_all_plugins_imports_no_array_library(env):
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    r = env.run('''
        import tensorplay
        loaded = [p["distribution"] for p in tensorplay.plugins.list() if p["status"] == "loaded"]
        result({"heavy": sorted(m for m in ("numpy", "cupy", "triton", "torch")
                                if m in sys.modules), "loaded": loaded,
                "metadata": "importlib.metadata" in sys.modules})
    ''', TENSORPLAY_PLUGINS=own_plugins("tensorplay-goodpack"))    # (not a user's own packs)
    baseline = env.run('result("importlib.metadata" in sys.modules)').data
    assert r.data["heavy"] == []
    if not baseline:   # nothing at startup imports it here: the scan must not either (~10-20 ms)
        assert r.data["metadata"] is False
    assert "tensorplay-goodpack" in r.data["loaded"] and "tensorplay-cpu" in r.data["loaded"]


# ---------------------------------------------------------------------------------------------
# failure isolation

def test_plugin_failing_on_import_warns_once_others_work_error_resurfaces(env):
    env.dist("tensorplay-brokendev", "2.5", plugins={"brokendev": "brokendev"},
             modules={"brokendev": BROKEN_IMPORT})
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    r = env.run('''
        import tensorplay
        recs = {p["distribution"]: p for p in tensorplay.plugins.list()}
        x = tensorplay.ops.goodns.double(tensorplay.ones(3))
        result({
            "warnings": plugin_warnings(),
            "broken": recs["tensorplay-brokendev"],
            "good_status": recs["tensorplay-goodpack"]["status"],
            "good_value": x.tolist(),
            "op_gone": "brokenns::op" not in [o["name"] for o in tensorplay.plugins.ops_table()],
            "device": raises(tensorplay.zeros, 1, device="brokendev"),
            "get_kernel": raises(tensorplay.library.get_kernel, "brokenns::op", "cpu"),
            "ops_attr": raises(lambda: tensorplay.ops.brokenns.op),
        })
    ''')
    d = r.data
    assert len(d["warnings"]) == 1, d["warnings"]
    w = d["warnings"][0]
    assert "tensorplay-brokendev 2.5" in w and "libbroken.so" in w and "ImportError" in w
    assert "TENSORPLAY_DISABLE_PLUGINS=brokendev" in w          # the fix
    assert d["broken"]["status"] == "failed" and "libbroken.so" in d["broken"]["error"]
    assert d["good_status"] == "loaded" and d["good_value"] == [2.0, 2.0, 2.0]
    assert d["op_gone"]                                            # defined, then rolled back
    for key, exc in (("device", "DeviceUnavailableError"), ("get_kernel", "LookupError"),
                     ("ops_attr", "AttributeError")):
        name, msg, cause, cause_msg = d[key]
        assert name == exc, d[key]
        assert "tensorplay-brokendev 2.5" in msg and "libbroken.so" in msg, msg
        assert "pip install -U tensorplay-brokendev" in msg, msg
        assert cause == "ImportError" and "libbroken.so" in cause_msg   # the recorded error


HALF = '''
import tensorplay
from tensorplay.plugins import hookimpl, DeviceSpec
mark("half")

@hookimpl
def tensorplay_devices():
    return [DeviceSpec("halfdev", "halfpack:Nope")]

@hookimpl
def tensorplay_register_ops(registrar):
    op = tensorplay.library.custom_op("halfns::op", lambda x: x + 1, mutates_args=(),
                                      schema="(Tensor x) -> Tensor")
    op.register_kernel("cpu", lambda x: x + 2)
    # also touch another plugin's op: a cpu kernel and a fake for goodns::double
    tensorplay.library.register_kernel("goodns::double", "cpu", lambda x: x * 100)
    tensorplay.library.register_fake("goodns::double", lambda x: x.new_empty((99,)))
    raise RuntimeError("half-way failure after registering")
'''


def test_hook_raising_rolls_back_everything_it_registered(env):
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    env.dist("tensorplay-halfpack", "0.3", plugins={"halfpack": "halfpack"},
             modules={"halfpack": HALF})
    r = env.run('''
        import tensorplay
        from tensorplay.fake import FakeTensorMode
        m = tensorplay.plugins.manager
        op = tensorplay.ops.goodns.double
        with FakeTensorMode():
            fake_shape = list(op(tensorplay.empty(4)).shape)
        rec = tensorplay.plugins.get_plugin("halfpack")
        result({
            "warnings": plugin_warnings(),
            "status": rec.status, "ops": rec.ops, "devices": rec.devices, "kernels": rec.kernels,
            "halfns_defined": "halfns::op" in tensorplay.ops.__dir__(),
            "good_cpu_kernel": raises(tensorplay.library.get_kernel, "goodns::double", "cpu"),
            "good_value": op(tensorplay.ones(2)).tolist(),
            "fake_shape": fake_shape,
            "device_listed": "halfdev" in m._S.devices,
            "device": raises(tensorplay.zeros, 1, device="halfdev"),
            "op": raises(tensorplay.library.get_kernel, "halfns::op", "cpu"),
            # private on purpose: no public call shows the registry's owner stack (a failed
            # load must leave no owner registering)
            "undo_log_empty": tensorplay._registry.current_owner() is None,
            "pm_registered": [n for n, _ in m._S.pm.list_name_plugin()],
        })
    ''')
    d = r.data
    assert len(d["warnings"]) == 1 and "tensorplay-halfpack 0.3" in d["warnings"][0]
    assert "half-way failure" in d["warnings"][0]
    assert d["status"] == "failed" and d["ops"] == [] and d["devices"] == [] and d["kernels"] == []
    assert not d["halfns_defined"]
    assert d["good_cpu_kernel"][0] == "LookupError"         # its kernel on goodns::double: gone
    assert d["good_value"] == [2.0, 2.0]                     # the owner's kernel runs
    assert d["fake_shape"] == [4]                            # its fake: gone, the owner's is back
    assert not d["device_listed"]
    assert d["device"][0] == "DeviceUnavailableError" and "tensorplay-halfpack 0.3" in d["device"][1]
    assert d["device"][2] == "RuntimeError"
    assert d["op"][0] == "LookupError" and "tensorplay-halfpack 0.3" in d["op"][1]
    assert d["undo_log_empty"]
    assert "tensorplay-halfpack" not in d["pm_registered"]


def test_plugin_raising_systemexit_does_not_kill_import(env):
    env.dist("tensorplay-exiter", plugins={"exiter": "exiter"},
             modules={"exiter": "import sys\nsys.exit(3)\n"})
    r = env.run('''
        import tensorplay
        result({"status": tensorplay.plugins.get_plugin("exiter").status,
                "zeros": tensorplay.zeros(2).tolist()})
    ''')
    assert r.data == {"status": "failed", "zeros": [0.0, 0.0]}


# ---------------------------------------------------------------------------------------------
# conflicts, priority, API version

def _kernel_plugin(tag: str, priority: int | None = None) -> str:
    prio = f"TENSORPLAY_PRIORITY = {priority}\n" if priority is not None else ""
    return prio + f'''
import tensorplay
from tensorplay.plugins import hookimpl
mark("{tag}")

@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.register_kernel("goodns::double", "cpu", lambda x: x * 0 + {tag!r}.__len__())
'''


def test_conflicting_kernels_name_both_distributions(env):
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    env.dist("tensorplay-kern-a", "1.1", plugins={"kern_a": "kern_a"},
             modules={"kern_a": _kernel_plugin("a")})
    env.dist("tensorplay-kern-bb", "2.2", plugins={"kern_bb": "kern_bb"},
             modules={"kern_bb": _kernel_plugin("bb")})
    code = '''
        import tensorplay
        st = {p["distribution"]: p["status"] for p in tensorplay.plugins.list()}
        result({"warnings": plugin_warnings(), "status": st,
                "value": tensorplay.ops.goodns.double(tensorplay.ones(1)).tolist()})
    '''
    d = env.run(code).data
    assert d["status"]["tensorplay-kern-a"] == "loaded"
    assert d["status"]["tensorplay-kern-bb"] == "failed"
    assert d["value"] == [1.0]                                  # kern-a's kernel stays active
    (w,) = d["warnings"]
    assert "tensorplay-kern-a 1.1" in w and "tensorplay-kern-bb 2.2" in w and "conflict" in w
    assert "TENSORPLAY_PRIORITY" in w
    strict = env.run(code, TENSORPLAY_STRICT_PLUGINS="1")
    assert strict.rc != 0 and "PluginError" in strict.stderr
    assert "tensorplay-kern-a 1.1" in strict.stderr and "tensorplay-kern-bb 2.2" in strict.stderr


@pytest.mark.parametrize("high", ["kern_a", "kern_bb"])   # loaded first, loaded second
def test_priority_resolves_conflict_higher_wins(env, high):
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    for name, tag in (("kern_a", "a"), ("kern_bb", "bb")):
        env.dist(f"tensorplay-{name.replace('_', '-')}", plugins={name: name},
                 modules={name: _kernel_plugin(tag, 5 if name == high else None)})
    d = env.run('''
        import tensorplay
        st = {p["distribution"]: p["status"] for p in tensorplay.plugins.list()}
        t = tensorplay.ops.goodns.double(tensorplay.ones(1)).tolist()
        result({"warnings": plugin_warnings(), "status": st, "value": t,
                "table": {o["name"]: o["kernels"] for o in tensorplay.plugins.ops_table()}})
    ''', TENSORPLAY_KERNEL_OVERRIDE=f"tensorplay-{high.replace('_', '-')}").data
    # the user allowed it: the override is warned about, naming both distributions (issue 28)
    (w,) = d["warnings"]
    assert "tensorplay-kern-a" in w and "tensorplay-kern-bb" in w and "goodns::double" in w
    assert d["status"]["tensorplay-kern-a"] == d["status"]["tensorplay-kern-bb"] == "loaded"
    assert d["value"] == [1.0 if high == "kern_a" else 2.0]
    assert d["table"]["goodns::double"]["cpu"]["source"] == f"tensorplay-{high.replace('_', '-')}"


def test_two_plugins_providing_one_device_conflict(env):
    dev = '''
from tensorplay.plugins import hookimpl, DeviceSpec
@hookimpl
def tensorplay_devices():
    return [DeviceSpec("npu", "nowhere:Backend")]
'''
    env.dist("tensorplay-npu-one", plugins={"npu_one": "npu_one"}, modules={"npu_one": dev})
    env.dist("tensorplay-npu-two", plugins={"npu_two": "npu_two"}, modules={"npu_two": dev})
    d = env.run('''
        import tensorplay
        result({"warnings": plugin_warnings(),
                "status": {p["distribution"]: p["status"] for p in tensorplay.plugins.list()}})
    ''').data
    assert d["status"]["tensorplay-npu-one"] == "loaded"
    assert d["status"]["tensorplay-npu-two"] == "failed"
    assert "tensorplay-npu-one 1.0" in d["warnings"][0] and "tensorplay-npu-two 1.0" in d["warnings"][0]


def test_incompatible_api_version_is_skipped_with_warning(env):
    env.dist("tensorplay-future", "9.0", plugins={"future": "future"}, modules={"future": '''
import tensorplay
TENSORPLAY_API_VERSION = 2
tensorplay.library.define("futurens::op(Tensor x) -> Tensor")
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    mark("future-hook-ran")
'''})
    r = env.run('''
        import tensorplay
        rec = tensorplay.plugins.get_plugin("future")
        result({"api": tensorplay.plugins.API_VERSION, "status": rec.status,
                "warnings": plugin_warnings(),
                "op": "futurens::op" in [o["name"] for o in tensorplay.plugins.ops_table()],
                "get": raises(tensorplay.library.get_kernel, "futurens::op", "cpu")})
    ''')
    d = r.data
    assert d["api"] == 1 and d["status"] == "incompatible" and not d["op"]
    (w,) = d["warnings"]
    assert "tensorplay-future 9.0" in w and "TENSORPLAY_API_VERSION = 2" in w and "API version 1" in w
    assert "future-hook-ran" not in env.executed()
    assert d["get"][0] == "LookupError" and "tensorplay-future 9.0" in d["get"][1]


# ---------------------------------------------------------------------------------------------
# the contract, checked at registration

@pytest.mark.parametrize("source, expected", [
    ('''
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrr):
    pass
''', ["hook tensorplay_register_ops(registrr)", "'registrr'", "tensorplay_register_ops(registrar)"]),
    ('''
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_device():
    return []
''', ["tensorplay_device is not a tensorplay hook", "did you mean tensorplay_devices"]),
    ('''
def tensorplay_devices():
    return []
''', ["tensorplay_devices has the name of a hook but is not marked", "@tensorplay.plugins.hookimpl"]),
    ('''
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_devices():
    return ["cpu"]
''', ["hook tensorplay_devices returned 'cpu'", "DeviceSpec"]),
    ('''
from tensorplay.plugins import hookimpl
@hookimpl(wrapper=True)
def tensorplay_register_ops(registrar):
    yield
''', ["hook tensorplay_register_ops is declared as a wrapper", "plain @hookimpl"]),
])
def test_invalid_hook_implementations_are_reported_naming_plugin_and_hook(env, source, expected):
    env.dist("tensorplay-sloppy", "0.1", plugins={"sloppy": "sloppy"}, modules={"sloppy": source})
    d = env.run('''
        import tensorplay
        result({"warnings": plugin_warnings(),
                "status": tensorplay.plugins.get_plugin("sloppy").status,
                "cpu": tensorplay.ones(1).tolist()})
    ''').data
    assert d["status"] == "failed" and d["cpu"] == [1.0]
    (w,) = d["warnings"]
    assert "tensorplay-sloppy 0.1" in w
    for e in expected:
        assert e in w, w


def test_hook_may_take_a_subset_of_the_spec_arguments(env):
    env.dist("tensorplay-noargs", plugins={"noargs": "noargs"}, modules={"noargs": '''
import tensorplay
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops():
    tensorplay.library.define("noargs::op(Tensor x) -> Tensor")
'''})
    d = env.run('''
        import tensorplay
        result({"status": tensorplay.plugins.get_plugin("noargs").status,
                "ops": tensorplay.plugins.get_plugin("noargs").ops})
    ''').data
    assert d == {"status": "loaded", "ops": ["noargs::op"]}


# ---------------------------------------------------------------------------------------------
# kernels named in entry-point metadata

LAZY_PACK = '''
import tensorplay
from tensorplay.plugins import hookimpl
mark("lazypack")

@hookimpl
def tensorplay_register_ops(registrar):
    @tensorplay.library.custom_op("lazyns::triple", mutates_args=())
    def triple(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 3
'''

LAZY_KERNELS = '''
import tensorplay
mark("lazy_kernels")

def triple_cpu(x):
    return x * 3 + 1000      # distinguishable from the default kernel
'''


def test_kernel_from_metadata_is_imported_only_on_first_call(env):
    env.dist("tensorplay-lazypack", "1.4", plugins={"lazypack": "lazypack"},
             kernels={"lazyns::triple.cpu": "lazypack_kernels:triple_cpu"},
             modules={"lazypack": LAZY_PACK, "lazypack_kernels": LAZY_KERNELS})
    r = env.run('''
        import tensorplay
        mod = "lazypack_kernels"
        steps = {"after_import": mod in sys.modules}
        k = tensorplay.library.get_kernel("lazyns::triple", "cpu")
        steps["after_get_kernel"] = mod in sys.modules
        steps["listed"] = tensorplay.plugins.get_plugin("lazypack").as_dict()["lazy_kernels"]
        steps["table"] = {o["name"]: o["kernels"] for o in tensorplay.plugins.ops_table()}["lazyns::triple"]
        y = tensorplay.ops.lazyns.triple(tensorplay.ones(2))
        steps["after_call"] = mod in sys.modules
        steps["value"] = y.tolist()
        steps["kernel_now"] = tensorplay.library.get_kernel("lazyns::triple", "cpu").__name__
        steps["value2"] = tensorplay.ops.lazyns.triple(tensorplay.ones(1)).tolist()
        with tensorplay.fake.FakeTensorMode():
            steps["meta_no_kernel"] = list(tensorplay.ops.lazyns.triple(tensorplay.empty(5)).shape)
        result(steps)
    ''')
    d = r.data
    assert d["after_import"] is False and d["after_get_kernel"] is False
    assert d["listed"] == {"lazyns::triple.cpu": "lazypack_kernels:triple_cpu"}
    assert d["table"]["cpu"] == {"source": "tensorplay-lazypack", "lazy": True}
    assert d["after_call"] is True and d["value"] == [1003.0, 1003.0]
    assert d["kernel_now"] == "triple_cpu" and d["value2"] == [1003.0]
    assert env.executed().count("lazy_kernels") == 1


def test_kernel_from_metadata_that_fails_to_import_raises_dispatch_error(env):
    env.dist("tensorplay-lazypack", "1.4", plugins={"lazypack": "lazypack"},
             kernels={"lazyns::triple.cpu": "lazypack_missing:triple_cpu"},
             modules={"lazypack": LAZY_PACK})
    d = env.run('''
        import tensorplay
        x = tensorplay.ones(2)
        result({"call": raises(tensorplay.ops.lazyns.triple, x),
                "again": raises(tensorplay.ops.lazyns.triple, x),
                "meta_ok": list(tensorplay.ops.lazyns.triple(tensorplay.empty(3, device="meta")).shape)})
    ''').data
    name, msg, cause, _ = d["call"]
    assert name == "DispatchError"
    assert "tensorplay-lazypack 1.4" in msg and "lazypack_missing:triple_cpu" in msg
    assert "'lazyns::triple.cpu'" in msg and "reinstall tensorplay-lazypack" in msg
    assert cause == "ModuleNotFoundError"
    assert d["again"][0] == "DispatchError" and d["meta_ok"] == [3]


def test_kernel_from_metadata_with_wrong_signature_is_rejected_on_first_call(env):
    env.dist("tensorplay-lazypack", plugins={"lazypack": "lazypack"},
             kernels={"lazyns::triple.cpu": "lazypack_kernels:bad"},
             modules={"lazypack": LAZY_PACK,
                      "lazypack_kernels": "def bad(a, b, c):\n    return a\n"})
    d = env.run('''
        import tensorplay
        result(raises(tensorplay.ops.lazyns.triple, tensorplay.ones(1)))
    ''').data
    assert d[0] == "DispatchError" and "tensorplay-lazypack 1.0" in d[1]


@pytest.mark.parametrize("ep_name, value, expected", [
    ("lazyns::nosuch.cpu", "lazypack_kernels:triple_cpu", "names operator 'lazyns::nosuch'"),
    ("lazyns::triple", "lazypack_kernels:triple_cpu", "is malformed"),
    ("lazyns::triple.cpu", "lazypack_kernels", "is malformed"),
])
def test_invalid_kernel_entry_point_fails_its_plugin_atomically(env, ep_name, value, expected):
    env.dist("tensorplay-lazypack", plugins={"lazypack": "lazypack"}, kernels={ep_name: value},
             modules={"lazypack": LAZY_PACK, "lazypack_kernels": LAZY_KERNELS})
    d = env.run('''
        import tensorplay
        result({"warnings": plugin_warnings(),
                "status": tensorplay.plugins.get_plugin("lazypack").status,
                "op": raises(lambda: tensorplay.ops.lazyns.triple)})
    ''').data
    assert d["status"] == "failed"
    (w,) = d["warnings"]
    assert "tensorplay-lazypack 1.0" in w and expected in w
    assert d["op"][0] == "AttributeError" and "tensorplay-lazypack 1.0" in d["op"][1]


def test_kernel_only_distribution_and_conflict_with_metadata_kernel(env):
    env.dist("tensorplay-lazypack", plugins={"lazypack": "lazypack"},
             modules={"lazypack": LAZY_PACK, "lazypack_kernels": LAZY_KERNELS})
    env.dist("tensorplay-morekernels", "3.0",
             kernels={"lazyns::triple.cpu": "lazypack_kernels:triple_cpu"})
    env.dist("tensorplay-zkernels", "4.0",
             kernels={"lazyns::triple.cpu": "lazypack_kernels:triple_cpu"})
    d = env.run('''
        import tensorplay
        st = {p["distribution"]: p["status"] for p in tensorplay.plugins.list()}
        result({"status": st, "warnings": plugin_warnings(),
                "value": tensorplay.ops.lazyns.triple(tensorplay.ones(1)).tolist()})
    ''').data
    assert d["status"]["tensorplay-morekernels"] == "loaded"
    assert d["status"]["tensorplay-zkernels"] == "failed"
    (w,) = d["warnings"]
    assert "tensorplay-morekernels 3.0" in w and "tensorplay-zkernels 4.0" in w
    assert d["value"] == [1003.0]


def test_example_pack_declares_a_lazy_cpu_kernel(env):
    """The example op pack (examples/pyproject.toml) names example::rms_norm's cpu kernel in
    metadata; its module (and numpy) load on the first cpu call."""
    d = env.run('''
        import tensorplay
        try:
            rec = tensorplay.plugins.get_plugin("tensorplay-example-ops")
        except Exception as e:
            result({"skip": str(e)}); raise SystemExit
        mod = "tensorplay_example_ops.cpu_kernels"
        out = {"lazy": rec.as_dict()["lazy_kernels"], "before": mod in sys.modules,
               "numpy_before": "numpy" in sys.modules}
        x, w = tensorplay.randn(4, 8), tensorplay.randn(8)
        out["still_before"] = mod in sys.modules
        y = tensorplay.ops.example.rms_norm(x, w)
        ref = x * tensorplay.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
        out["after"] = mod in sys.modules
        out["close"] = tensorplay.allclose(y, ref, rtol=1e-5, atol=1e-6)
        out["kernel"] = tensorplay.library.get_kernel("example::rms_norm", "cpu").__module__
        result(out)
    ''', TENSORPLAY_PLUGINS=own_plugins()).data     # (a user's pack may import numpy: theirs)
    if "skip" in d:
        pytest.skip(f"example pack not installed: {d['skip']}")
    assert d["lazy"].get("example::rms_norm.cpu") == "tensorplay_example_ops.cpu_kernels:rms_norm"
    assert d["before"] is False and d["numpy_before"] is False and d["still_before"] is False
    assert d["after"] is True and d["close"] is True
    assert d["kernel"] == "tensorplay_example_ops.cpu_kernels"


# ---------------------------------------------------------------------------------------------
# visibility (in-process: the installed plugins)

def test_list_returns_data_for_every_plugin():
    import tensorplay
    recs = tensorplay.plugins.list()
    assert recs, "no plugin installed"
    keys = {"name", "distribution", "version", "status", "devices", "ops", "kernels", "error"}
    for r in recs:
        assert keys <= set(r)
        assert r["status"] in ("loaded", "failed", "blocked", "incompatible")
    cpu = [r for r in recs if r["distribution"] == "tensorplay-cpu"]
    assert cpu and cpu[0]["status"] == "loaded" and cpu[0]["devices"] == ["cpu"]
    assert cpu[0]["error"] is None


def test_ops_table_lists_schema_devices_and_sources():
    import tensorplay
    table = {o["name"]: o for o in tensorplay.plugins.ops_table()}
    add = table["tp::add"]
    assert add["builtin"] and add["plugin"] == "tensorplay" and "cpu" in add["devices"]
    assert add["schema"].startswith("tp::add(")
    for o in table.values():
        assert set(o) >= {"name", "schema", "devices", "kernels", "plugin", "module"}
        assert sorted(o["kernels"]) == o["devices"]
    assert all(o["name"].startswith("tp::") for o in tensorplay.plugins.ops_table("tp"))


def test_get_plugin_unknown_name_lists_installed():
    import tensorplay
    from tensorplay.errors import PluginError
    with pytest.raises(PluginError, match="no tensorplay plugin named 'nope'.*tensorplay-cpu"):
        tensorplay.plugins.get_plugin("nope")
    assert tensorplay.plugins.get_plugin("TensorPlay_CPU").dist == "tensorplay-cpu"


# ---------------------------------------------------------------------------------------------
# opcheck per plugin

CHECKPACK = '''
import tensorplay
from tensorplay.plugins import hookimpl, SampleInput
mark("checkpack")

@hookimpl
def tensorplay_register_ops(registrar):
    @tensorplay.library.custom_op("checkns::good", mutates_args=())
    def good(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 2

    @good.register_fake
    def _(x):
        return x.new_empty(x.shape)

    @tensorplay.library.custom_op("checkns::badfake", mutates_args=())
    def badfake(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 2

    @badfake.register_fake
    def _(x):
        return x.new_empty((1,) + tuple(x.shape))     # wrong shape on purpose

    tensorplay.library.define("checkns::nosamples(Tensor x) -> Tensor")
    tensorplay.library.impl("checkns::nosamples", "CompositeExplicitAutograd", lambda x: x + 0)

@hookimpl
def tensorplay_sample_inputs(op, device):
    if op.name in ("checkns::good", "checkns::badfake"):
        return [SampleInput((tensorplay.ones(3, device=device),), name="ones3"),
                ((tensorplay.ones(2, 2, device=device),), {})]
    return None
'''


def test_check_plugin_runs_opcheck_over_ops_and_samples(env):
    env.dist("tensorplay-checkpack", plugins={"checkpack": "checkpack"},
             modules={"checkpack": CHECKPACK})
    d = env.run('''
        import tensorplay
        from tensorplay.testing import check_plugin, summarize_checks
        seen = []
        res = check_plugin("checkpack", "cpu", test_utils=["test_schema", "test_faketensor"],
                           progress=seen.append)
        result({"rows": [[r.op, r.device, r.sample, r.status, sorted(r.failures)] for r in res],
                "progress": len(seen), "summary": summarize_checks(res),
                "cuda": raises(check_plugin, "checkpack", device="nodev")})
    ''').data
    rows = d["rows"]
    assert ["checkns::good", "cpu", "ones3", "passed", []] in rows
    assert ["checkns::badfake", "cpu", "ones3", "failed", ["test_faketensor"]] in rows
    assert ["checkns::badfake", "cpu", "tensorplay-checkpack#1", "failed", ["test_faketensor"]] in rows
    assert ["checkns::nosamples", "cpu", "", "skipped", []] in rows
    # plus the empty-batch sample check_plugin derives (leading dim 0) for each op
    assert ["checkns::good", "cpu", "derived: leading dim 0 (from ones3)", "passed", []] in rows
    assert d["summary"] == {"passed": 3, "failed": 3, "error": 0, "skipped": 1}
    assert d["progress"] == len(rows)
    assert d["cuda"][0] == "DeviceUnavailableError"


def test_check_plugin_of_failed_plugin_reraises_its_error(env):
    env.dist("tensorplay-brokendev", "2.5", plugins={"brokendev": "brokendev"},
             modules={"brokendev": BROKEN_IMPORT})
    d = env.run('''
        import tensorplay
        from tensorplay.testing import check_plugin
        result(raises(check_plugin, "tensorplay-brokendev"))
    ''').data
    assert d[0] == "PluginError" and "tensorplay-brokendev 2.5" in d[1] and d[2] == "ImportError"


def _pytest(env, *args):
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-o", "addopts=", "--rootdir", env.root, *args],
                       cwd=env.root, capture_output=True, text=True, timeout=300,
                       env={**os.environ,
                            # keep the caller's path (site dirs of the machine running the suite)
                            "PYTHONPATH": os.pathsep.join(
                                [env.root] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
                            "PYTHONPYCACHEPREFIX": _PYCACHE}, check=False)
    return p.returncode, p.stdout + p.stderr


def test_one_line_opcheck_in_an_op_pack_test_suite(env):
    env.dist("tensorplay-checkpack", plugins={"checkpack": "checkpack"},
             modules={"checkpack": CHECKPACK})
    with open(os.path.join(env.root, "test_pack.py"), "w") as f:
        f.write('from tensorplay.testing import opcheck_plugin_tests\n'
                'test_ops = opcheck_plugin_tests("tensorplay-checkpack", "cpu", '
                'test_utils=["test_schema", "test_faketensor"])\n')
    rc, out = _pytest(env, "test_pack.py", "-rs")
    assert rc == 1, out
    assert "1 failed, 1 passed, 1 skipped" in out, out
    assert "test_ops[checkns::badfake-cpu]" in out and "test_faketensor" in out
    assert "no sample inputs" in out


def test_pytest_option_and_fixture_run_opcheck(env):
    env.dist("tensorplay-checkpack", plugins={"checkpack": "checkpack"},
             modules={"checkpack": CHECKPACK})
    with open(os.path.join(env.root, "test_fixture.py"), "w") as f:
        f.write('def test_fixture(tensorplay_check):\n'
                '    tensorplay_check("checkpack", ops=["checkns::good"])\n'
                'def test_fixture_fails(tensorplay_check):\n'
                '    tensorplay_check("checkpack", ops=["checkns::badfake"])\n')
    rc, out = _pytest(env, "test_fixture.py", "--tensorplay-check=checkpack",
                      "--tensorplay-check-device=cpu", "-vv")
    assert rc == 1, out
    assert "test_fixture.py::test_fixture PASSED" in out
    assert "test_fixture.py::test_fixture_fails FAILED" in out
    assert "tensorplay-check[checkpack]::checkns::good-cpu PASSED" in out
    assert "tensorplay-check[checkpack]::checkns::badfake-cpu FAILED" in out
    assert "tensorplay-check[checkpack]::checkns::nosamples-cpu SKIPPED" in out
    rc, out = _pytest(env, "test_fixture.py", "--tensorplay-check=not-installed", "-k", "check")
    assert rc == 1 and "no tensorplay plugin named 'not-installed'" in out, out


def test_check_plugin_reports_ops_without_an_available_device(env):
    env.dist("tensorplay-npu", "0.2", plugins={"npu": "npu"}, modules={"npu": '''
import tensorplay
from tensorplay.plugins import hookimpl, DeviceSpec

class Backend:
    def __init__(self):
        raise RuntimeError("no NPU driver found")

@hookimpl
def tensorplay_devices():
    return [DeviceSpec("npu", "npu:Backend")]

@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.custom_op("npuns::op", lambda x: x + 1, mutates_args=(),
                                 device_types="npu", schema="(Tensor x) -> Tensor")
'''})
    d = env.run('''
        import tensorplay
        from tensorplay.testing import check_plugin
        res = check_plugin("npu", ops=["npuns::op"])
        result({"rows": [[r.op, r.device, r.status, r.message] for r in res],
                "explicit": raises(check_plugin, "npu", device="npu")})
    ''').data
    ((op, dev, status, msg),) = d["rows"]
    assert (op, dev, status) == ("npuns::op", "npu", "skipped")
    assert "no NPU driver found" in msg and "tensorplay-npu 0.2" in msg
    assert d["explicit"][0] == "DeviceUnavailableError" and "no NPU driver found" in d["explicit"][1]


# ---------------------------------------------------------------------------------------------
# plugin UX (user-tester defects r4/r5): unknown allow-list names, misplaced kernel entry points,
# kernel entry points on built-ins, the plugins table

def test_allow_list_name_matching_no_plugin_warns_naming_it_and_the_installed(env):
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    d = env.run('''
        import tensorplay
        result({"warnings": plugin_warnings(),
                "status": {p["distribution"]: p["status"] for p in tensorplay.plugins.list()}})
    ''', TENSORPLAY_PLUGINS="bogus,goodpak").data
    (w,) = [w for w in d["warnings"] if "TENSORPLAY_PLUGINS" in w]
    assert "'bogus', 'goodpak'" in w and "match no installed plugin" in w
    assert "tensorplay-goodpack (entry point 'goodpack')" in w and "did you mean 'goodpack'" in w
    assert d["status"]["tensorplay-goodpack"] == "blocked"
    d = env.run('''
        import tensorplay
        result({"warnings": plugin_warnings()})
    ''', TENSORPLAY_PLUGINS="goodpack,tensorplay-cpu").data
    assert d["warnings"] == []


def test_kernel_entry_point_in_plugins_group_warns_to_move_it(env):
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack",
                                             "goodns::double.cpu": "goodpack:double_cpu"},
             modules={"goodpack": GOOD + "\ndef double_cpu(x):\n    return x * 2\n"})
    d = env.run('''
        import tensorplay
        result({"warnings": plugin_warnings(),
                "status": {p["name"]: p["status"] for p in tensorplay.plugins.list()}})
    ''').data
    (w,) = d["warnings"]
    assert "'goodns::double.cpu' = 'goodpack:double_cpu'" in w
    assert "group 'tensorplay.plugins'" in w and "belong in group 'tensorplay.kernels'" in w
    assert 'move it to [project.entry-points."tensorplay.kernels"]' in w
    assert "already registered" not in w
    assert d["status"] == {**{k: v for k, v in d["status"].items() if k != "goodpack"},
                           "goodpack": "loaded"}


def test_kernel_entry_point_on_a_builtin_op_fails_its_plugin(env):
    env.dist("tensorplay-hijack", plugins={"hijack": "hijack"},
             kernels={"tp::mul.cpu": "hijack:mul"},
             modules={"hijack": "def mul(a, b):\n    return 'hijacked'\n"})
    d = env.run('''
        import tensorplay as tp
        result({"warnings": plugin_warnings(), "mul": (tp.ones(1) * tp.ones(1)).tolist(),
                "status": tp.plugins.get_plugin("hijack").status})
    ''').data
    assert d["mul"] == [1.0] and d["status"] == "failed"
    (w,) = d["warnings"]
    assert "'tp::mul' is a built-in operator" in w and "provided by the tensorplay core" in w


def test_two_entry_points_of_one_distribution_are_told_apart(env):
    two = GOOD.replace("goodns::double", "twons::double")
    env.dist("tensorplay-twopack", plugins={"first": "twopack_a", "second": "twopack_b"},
             modules={"twopack_a": GOOD, "twopack_b": two})
    r = env.run('''
        import tensorplay
        from tensorplay.cli import main
        main(["plugins"])
    ''')
    rows = [line for line in r.stdout.splitlines() if line.startswith("tensorplay-twopack")]
    assert len(rows) == 2, r.stdout + r.stderr
    assert rows[0].startswith("tensorplay-twopack [first] ")
    assert rows[1].startswith("tensorplay-twopack [second] ")


def test_device_plugin_shows_its_builtin_kernels():
    import tensorplay
    cpu = tensorplay.plugins.get_plugin("tensorplay-cpu")
    n_builtin = sum(1 for name in dir(tensorplay.ops.tp)
                    if getattr(tensorplay.ops.tp, name).has_array_kernel)
    tensorplay.zeros(1)                                    # the cpu backend is loaded now
    count, lazy = cpu.builtin_kernels["cpu"]
    assert not lazy and 0 < count <= n_builtin
    d = next(p for p in tensorplay.plugins.list() if p["dist"] == "tensorplay-cpu")
    assert d["builtin_kernels"] == {"cpu": {"count": count, "lazy": False}}
    assert next(p for p in tensorplay.plugins.list()
                if p["dist"] == "tensorplay-example-ops")["builtin_kernels"] == {}
