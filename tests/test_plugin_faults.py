"""Plugin faults blame the right party and leave nothing held (issue 11, "Plugin platform").

Each test installs throw-away distributions (``_plugin_dists``) and imports tensorplay in a fresh
interpreter, so discovery, load order, rollback and the environment controls are the real ones.
"""

from __future__ import annotations

import pytest
from _plugin_dists import PluginEnv


@pytest.fixture
def env(tmp_path):
    return PluginEnv(tmp_path)


def _pl(data, dist):
    return next(p for p in data["plugins"] if p["dist"] == dist)


LIST = '''
import tensorplay as tp
out = {"plugins": [{k: p[k] for k in ("dist", "status", "ops", "error", "kernels")}
                   for p in tp.plugins.list()], "warnings": plugin_warnings()}
'''

# ---------------------------------------------------------------------------------------------
# a plugin registering a kernel on another pack's op

OWNER_HOOK = '''
import tensorplay
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    @tensorplay.library.custom_op("ownerns::op", mutates_args=(), device_types="cpu")
    def op(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 2
    @tensorplay.library.custom_op("ownerns::op2", mutates_args=(), device_types="cpu")
    def op2(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 3
'''

# the owner defines its op in a hook and names its cpu kernel in entry-point metadata
OWNER_EP = '''
import tensorplay
from tensorplay.plugins import hookimpl
def op_cpu(x):
    return x * 2
@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.define("ownerns::op(Tensor x) -> Tensor")
    @tensorplay.library.custom_op("ownerns::op2", mutates_args=(), device_types="cpu")
    def op2(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 3
'''

INTRUDER = '''
import tensorplay
from tensorplay.plugins import hookimpl
{prio}
@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.register_kernel("ownerns::op", "cpu", lambda x: x * 100)
'''


def _install(env, owner_dist, intruder_dist, owner_src, prio=""):
    kernels = {"ownerns::op.cpu": "ownerpack:op_cpu"} if owner_src is OWNER_EP else None
    env.dist(owner_dist, plugins={"ownerpack": "ownerpack"}, kernels=kernels,
             modules={"ownerpack": owner_src})
    env.dist(intruder_dist, plugins={"intrpack": "intrpack"},
             modules={"intrpack": INTRUDER.format(prio=prio)})


@pytest.mark.parametrize("owner_src", [OWNER_HOOK, OWNER_EP], ids=["kernel-in-hook",
                                                                     "kernel-in-metadata"])
@pytest.mark.parametrize("owner_dist, intruder_dist", [("a-owner", "b-intruder"),
                                                        ("b-owner", "a-intruder")],
                         ids=["owner-loads-first", "intruder-loads-first"])
def test_kernel_on_another_packs_op_refuses_the_intruder(env, owner_src, owner_dist,
                                                         intruder_dist):
    _install(env, owner_dist, intruder_dist, owner_src)
    r = env.run(LIST + '''
out["call"] = tp.ops.ownerns.op(tp.ones(2)).tolist()
out["call2"] = tp.ops.ownerns.op2(tp.ones(2)).tolist()
result(out)
''')
    owner, intr = _pl(r.data, owner_dist), _pl(r.data, intruder_dist)
    assert owner["status"] == "loaded", owner
    assert owner["ops"] == ["ownerns::op", "ownerns::op2"]
    assert r.data["call"] == [2.0, 2.0] and r.data["call2"] == [3.0, 3.0]
    assert intr["status"] == "failed" and intr["ops"] == []
    err = intr["error"]
    assert f"plugin {intruder_dist} 1.0" in err and f"plugin {owner_dist} 1.0" in err, err
    assert "TENSORPLAY_PRIORITY" in err, err
    (w,) = [w for w in r.data["warnings"] if intruder_dist in w]
    assert "reinstall" not in w, w
    assert "TENSORPLAY_DISABLE_PLUGINS=intrpack" in w


@pytest.mark.parametrize("owner_src", [OWNER_HOOK, OWNER_EP], ids=["kernel-in-hook",
                                                                     "kernel-in-metadata"])
@pytest.mark.parametrize("owner_dist, intruder_dist", [("a-owner", "b-intruder"),
                                                        ("b-owner", "a-intruder")])
def test_kernel_on_another_packs_op_wins_with_declared_priority(env, owner_src, owner_dist,
                                                                intruder_dist):
    _install(env, owner_dist, intruder_dist, owner_src, prio="TENSORPLAY_PRIORITY = 5")
    code = LIST + '''
out["call"] = tp.ops.ownerns.op(tp.ones(2)).tolist()
result(out)
'''
    # the intruder's priority alone does not replace the owner's kernel (issue 28): refused,
    # naming the control that allows it
    r = env.run(code)
    assert _pl(r.data, owner_dist)["status"] == "loaded"
    assert _pl(r.data, intruder_dist)["status"] == "failed", _pl(r.data, intruder_dist)
    assert r.data["call"] != [100.0, 100.0]
    assert any(f"TENSORPLAY_KERNEL_OVERRIDE={intruder_dist}" in w for w in r.data["warnings"])
    # the user allowed it: the intruder wins, with a warning naming both, the op and the device
    r = env.run(code, TENSORPLAY_KERNEL_OVERRIDE=intruder_dist)
    assert _pl(r.data, owner_dist)["status"] == "loaded"
    assert _pl(r.data, intruder_dist)["status"] == "loaded", _pl(r.data, intruder_dist)
    assert r.data["call"] == [100.0, 100.0]
    (w,) = [w for w in r.data["warnings"] if "owner" in w or "intruder" in w]
    assert owner_dist in w and intruder_dist in w and "ownerns::op" in w and "'cpu'" in w


def test_kernel_for_a_device_the_owner_does_not_cover_is_allowed(env):
    env.dist("a-owner", plugins={"ownerpack": "ownerpack"}, modules={"ownerpack": OWNER_HOOK})
    env.dist("b-extra", plugins={"extrapack": "extrapack"}, modules={"extrapack": '''
import tensorplay
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.register_kernel("ownerns::op", "cuda", lambda x: x * 7)
'''})
    r = env.run(LIST + "result(out)")
    assert _pl(r.data, "b-extra")["status"] == "loaded"
    assert _pl(r.data, "b-extra")["kernels"] == ["ownerns::op.cuda"]
    assert _pl(r.data, "a-owner")["ops"] == ["ownerns::op", "ownerns::op2"]


# ---------------------------------------------------------------------------------------------
# rollback releases everything a failed plugin held

def test_failed_plugin_releases_its_def_library_namespace(env):
    env.dist("lib-holder", plugins={"holder": "holder"}, modules={"holder": '''
import tensorplay
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    L = tensorplay.library.Library("heldns", "DEF")
    L.define("f(Tensor x) -> Tensor")
    L.impl("f", lambda x: x, "default")
    raise RuntimeError("half-way through")
'''})
    r = env.run(LIST + '''
L = tp.library.Library("heldns", "DEF")
L.define("f(Tensor x, Tensor y) -> Tensor")
out["schema"] = str(tp.ops.heldns.f.schema)
result(out)
''')
    assert r.rc == 0, r.stderr[-2000:]
    assert _pl(r.data, "lib-holder")["status"] == "failed"
    assert r.data["schema"] == "heldns::f(Tensor x, Tensor y) -> Tensor"


def test_failed_plugin_at_import_releases_its_def_library_namespace(env):
    env.dist("lib-holder", plugins={"holder": "holder"}, modules={"holder": '''
import tensorplay
L = tensorplay.library.Library("heldns", "DEF")
L.define("f(Tensor x) -> Tensor")
raise ImportError("missing native library")
'''})
    r = env.run(LIST + '''
tp.library.Library("heldns", "DEF")
result(out)
''')
    assert r.rc == 0, r.stderr[-2000:]


# ---------------------------------------------------------------------------------------------
# a plugin module imported before tensorplay

TOPLEVEL = '''
import tensorplay
from tensorplay.library import custom_op

@custom_op("toppack::twice", mutates_args=(), device_types="cpu")
def twice(x: tensorplay.Tensor) -> tensorplay.Tensor:
    return x * 2

@twice.register_fake
def _(x):
    return x.new_empty(x.shape)
'''


@pytest.mark.parametrize("first", ["import toppack, tensorplay as tp",
                                   "import tensorplay as tp, toppack"])
def test_plugin_imported_before_tensorplay_owns_its_ops(env, first):
    env.dist("tensorplay-toppack", plugins={"toppack": "toppack"},
             modules={"toppack": TOPLEVEL})
    r = env.run(first + '''
rec = [p for p in tp.plugins.list() if p["dist"] == "tensorplay-toppack"][0]
ops = tp.plugins.plugin_ops("tensorplay-toppack")
from tensorplay.testing import check_plugin
res = check_plugin("tensorplay-toppack", test_utils=["test_schema"])
result({"status": rec["status"], "ops": rec["ops"], "kernels": rec["kernels"],
        "plugin_ops": [o.name for o, _ in ops], "table": [t["plugin"] for t in
        tp.plugins.ops_table("toppack")], "checked": sorted({c.op for c in res})})
''')
    assert r.rc == 0, r.stderr[-2000:]
    d = r.data
    assert d["status"] == "loaded" and d["ops"] == ["toppack::twice"], d
    assert d["kernels"] == ["toppack::twice.cpu"], d
    assert d["plugin_ops"] == ["toppack::twice"]
    assert d["table"] == ["tensorplay-toppack"]
    assert d["checked"] == ["toppack::twice"], d     # the plugin check finds its op


# ---------------------------------------------------------------------------------------------
# two distributions naming the same plugin module

def test_two_distributions_with_one_module_name_both_and_disable_one(env):
    env.dist("pack-one", plugins={"shared": "sharedmod"}, modules={"sharedmod": '''
import tensorplay
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.define("sharedns::f(Tensor x) -> Tensor")
'''})
    env.dist("pack-two", plugins={"shared": "sharedmod"})
    r = env.run(LIST + "result(out)")
    one, two = _pl(r.data, "pack-one"), _pl(r.data, "pack-two")
    assert one["status"] == "loaded" and one["ops"] == ["sharedns::f"]
    assert two["status"] == "failed"
    err = two["error"]
    assert "pack-one 1.0" in err and "pack-two 1.0" in err and "sharedmod" in err, err
    assert "already registered" not in err and "{" not in err, err   # no pluggy registry dump
    (w,) = [w for w in r.data["warnings"] if "pack-two" in w]
    assert "TENSORPLAY_DISABLE_PLUGINS=shared" not in w, w             # would disable both
    assert "TENSORPLAY_DISABLE_PLUGINS=pack-two" in w, w


def test_disable_hint_names_the_distribution_when_entry_point_names_collide(env):
    env.dist("pack-one", plugins={"shared": "mod_one"}, modules={"mod_one": "import tensorplay\n"})
    env.dist("pack-two", plugins={"shared": "mod_two"},
             modules={"mod_two": "raise ImportError('no libfoo')\n"})
    r = env.run(LIST + "result(out)")
    (w,) = [w for w in r.data["warnings"] if "pack-two" in w]
    assert "TENSORPLAY_DISABLE_PLUGINS=pack-two" in w, w
    r2 = env.run(LIST + "result(out)", TENSORPLAY_DISABLE_PLUGINS="pack-two")
    assert _pl(r2.data, "pack-one")["status"] == "loaded"
    assert _pl(r2.data, "pack-two")["status"] == "blocked"


# ---------------------------------------------------------------------------------------------
# a device whose providing plugin failed

@pytest.mark.parametrize("announced", [True, False])
@pytest.mark.parametrize("dev", ["xpu", "npu"])
def test_device_of_a_failed_plugin_names_the_plugin_and_its_error(env, dev, announced):
    if announced:
        src = f'''
import tensorplay
from tensorplay.plugins import hookimpl, DeviceSpec
@hookimpl
def tensorplay_devices():
    return [DeviceSpec("{dev}", "devmod:Backend")]
@hookimpl
def tensorplay_register_ops(registrar):
    raise RuntimeError("driver stack missing")
'''
        dist, mod = "vendor-ext", "devmod"
    else:
        src = "raise RuntimeError('driver stack missing')\n"
        dist, mod = f"tensorplay-{dev}", f"tensorplay_{dev}"
    env.dist(dist, plugins={"ext": mod}, modules={mod: src})
    r = env.run(f'''
import tensorplay as tp
result([raises(tp.zeros, 2, device="{dev}"), raises(tp.device, "{dev}")])
''')
    for exc in r.data:
        assert exc is not None
        msg = exc[1]
        assert f"plugin {dist} 1.0" in msg, msg
        assert "RuntimeError: driver stack missing" in msg, msg
        assert "no installed plugin provides it" not in msg, msg


# ---------------------------------------------------------------------------------------------
# TENSORPLAY_STRICT_PLUGINS spellings

BROKEN = "raise ImportError('libbroken.so: cannot open shared object file')\n"


@pytest.mark.parametrize("value, strict", [("false", False), ("0", False), ("no", False),
                                           ("off", False), ("", False), ("FALSE", False),
                                           ("true", True), ("1", True), ("yes", True),
                                           ("on", True), ("On", True)])
def test_strict_plugins_spellings(env, value, strict):
    env.dist("tensorplay-broken", plugins={"broken": "brokenmod"}, modules={"brokenmod": BROKEN})
    r = env.run("import tensorplay; result('imported')", TENSORPLAY_STRICT_PLUGINS=value)
    if strict:
        assert r.rc != 0 and "PluginError" in r.stderr and "tensorplay-broken" in r.stderr
    else:
        assert r.rc == 0 and r.data == "imported", r.stderr[-2000:]


def test_strict_plugins_unknown_spelling_is_a_clear_error(env):
    env.dist("tensorplay-broken", plugins={"broken": "brokenmod"}, modules={"brokenmod": BROKEN})
    r = env.run("import tensorplay; result('imported')", TENSORPLAY_STRICT_PLUGINS="maybe")
    assert r.rc != 0
    assert "TENSORPLAY_STRICT_PLUGINS" in r.stderr and "'maybe'" in r.stderr
    assert "1, true, yes, on" in r.stderr


@pytest.mark.parametrize("value, traced", [("false", False), ("off", False), ("0", False),
                                           ("yes", True), ("1", True)])
def test_trace_plugins_spellings(env, value, traced):
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"},
             modules={"goodpack": "import tensorplay\n"})
    r = env.run("import tensorplay; result('imported')", TENSORPLAY_TRACE_PLUGINS=value)
    assert r.data == "imported"
    assert ("tensorplay.plugins: import tensorplay-goodpack" in r.stderr) is traced, r.stderr


def test_plugin_failing_after_loading_the_owner_on_demand_leaves_the_owner_whole(env):
    """The first plugin (by name) uses another pack's op, which loads that pack on demand, then
    fails: only its own registrations are undone."""
    env.dist("b-owner", plugins={"ownerpack": "ownerpack"}, modules={"ownerpack": OWNER_HOOK})
    env.dist("a-user", plugins={"userpack": "userpack"}, modules={"userpack": '''
import tensorplay
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.register_kernel("ownerns::op", "cuda", lambda x: x)
    tensorplay.library.define("userns::g(Tensor x) -> Tensor")
    raise RuntimeError("late failure")
'''})
    r = env.run(LIST + '''
out["cuda"] = "cuda" in tp.ops.ownerns.op.kernels
out["userns"] = hasattr(tp.ops, "userns") and "g" in dir(tp.ops.userns)
result(out)
''')
    owner, user = _pl(r.data, "b-owner"), _pl(r.data, "a-user")
    assert owner["status"] == "loaded" and owner["ops"] == ["ownerns::op", "ownerns::op2"]
    assert owner["kernels"] == ["ownerns::op.cpu", "ownerns::op2.cpu"]
    assert user["status"] == "failed" and "late failure" in user["error"]
    assert r.data["cuda"] is False and r.data["userns"] is False


@pytest.mark.parametrize("owner_dist, intruder_dist", [("a-owner", "b-intruder"),
                                                        ("b-owner", "a-intruder")])
def test_kernel_entry_point_on_another_packs_op_is_refused(env, owner_dist, intruder_dist):
    env.dist(owner_dist, plugins={"ownerpack": "ownerpack"},
             kernels={"ownerns::op.cpu": "ownerpack:op_cpu"}, modules={"ownerpack": OWNER_EP})
    env.dist(intruder_dist, kernels={"ownerns::op.cpu": "intrkern:op_cpu"},
             modules={"intrkern": "def op_cpu(x):\n    return x * 100\n"})
    r = env.run(LIST + '''
out["call"] = tp.ops.ownerns.op(tp.ones(2)).tolist()
result(out)
''')
    assert _pl(r.data, owner_dist)["status"] == "loaded"
    assert r.data["call"] == [2.0, 2.0]
    intr = _pl(r.data, intruder_dist)
    assert intr["status"] == "failed", intr
    assert f"plugin {owner_dist} 1.0" in intr["error"] and "TENSORPLAY_PRIORITY" in intr["error"]


def _cross(mine, other):
    return f'''
import tensorplay
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.define("{mine}::f(Tensor x) -> Tensor")
    tensorplay.library.impl("{other}::f", "cuda", lambda x: x)
'''


def test_packs_using_each_others_ops_load_in_any_order_and_a_failed_one_leaves_nothing(env):
    env.dist("a-pack", plugins={"apack": "apack"}, modules={"apack": _cross("ans", "bns")})
    env.dist("b-pack", plugins={"bpack": "bpack"}, modules={"bpack": _cross("bns", "ans")})
    env.dist("c-fragment", plugins={"cpack": "cpack"}, modules={"cpack": '''
import tensorplay
from tensorplay.plugins import hookimpl
@hookimpl
def tensorplay_register_ops(registrar):
    F = tensorplay.library.Library("zns", "FRAGMENT")
    F.define("g(Tensor x) -> Tensor")
    tensorplay.library.register_fake("ans::f", lambda x: x)
    I = tensorplay.library.Library("ans", "IMPL")
    I.impl("f", lambda x: x, "cpu")
    raise ValueError("boom")
'''})
    r = env.run(LIST + '''
op = tp.ops.ans.f
out.update(ans_kernels=sorted(op.kernels), fake=op.fake_impl is not None,
           zns=sorted(o["name"] for o in tp.plugins.ops_table("zns")))
result(out)
''')
    a, b, c = (_pl(r.data, d) for d in ("a-pack", "b-pack", "c-fragment"))
    assert (a["status"], a["ops"], a["kernels"]) == ("loaded", ["ans::f"], ["bns::f.cuda"])
    assert (b["status"], b["ops"], b["kernels"]) == ("loaded", ["bns::f"], ["ans::f.cuda"])
    assert c["status"] == "failed" and c["error"] == "ValueError: boom"
    assert r.data["ans_kernels"] == ["cuda"] and r.data["fake"] is False and r.data["zns"] == []
