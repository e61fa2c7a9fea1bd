"""Op packs imported on first use (issue 30, item 3): a pack whose ``tensorplay.namespaces``
metadata names its namespaces is not imported by ``import tensorplay``; the first use of one of
them imports it (``tp.ops.<ns>``, a library lookup of ``"ns::op"``, a definition in ``ns``, the
listings), with the controls, conflicts, ownership and error messages of a pack loaded at import.

Each test runs in a fresh interpreter (``PluginEnv``), so "not imported yet" is real.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from _plugin_dists import GOOD, PluginEnv


@pytest.fixture
def env(tmp_path):
    return PluginEnv(tmp_path)


# A pack: its module marks that it ran; one op with a default kernel that must never run on cpu
# (the cpu kernel comes from a kernel entry point), so a half-loaded pack is visible.
LAZY = '''
import time
import tensorplay
from tensorplay.plugins import hookimpl, SampleInput
mark("lazy-imported")

@hookimpl
def tensorplay_register_ops(registrar):
    @tensorplay.library.custom_op("lz::triple", mutates_args=())
    def triple(x: tensorplay.Tensor) -> tensorplay.Tensor:
        raise AssertionError("lz::triple: the cpu kernel from the entry point must run")

    @triple.register_fake
    def _(x):
        return x.new_empty(x.shape)
    global DEFINED
    DEFINED = True       # (for the thread test: the op exists, its cpu kernel not yet)
    time.sleep(0.2)      # a slow pack: other threads must wait, not see it half-made

def triple_cpu(x):
    return x * 3

@hookimpl
def tensorplay_sample_inputs(op, device):
    if op.name == "lz::triple":
        return [SampleInput((tensorplay.ones(3, device=device),), name="ones3")]
    return None
'''


def _lazy(env, source=LAZY):
    env.dist("lz-pack", plugins={"lzpack": "lzpack"}, namespaces={"lz": "lzpack"},
             kernels={"lz::triple.cpu": "lzpack:triple_cpu"}, modules={"lzpack": source})


def test_import_tensorplay_reads_metadata_only_and_first_use_imports_the_pack(env):
    _lazy(env)
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"}, modules={"goodpack": GOOD})
    r = env.run('''
        import tensorplay as tp
        before = "lzpack" in sys.modules
        eager = "goodpack" in sys.modules          # no namespaces declared: loaded as before
        y = tp.ops.lz.triple(tp.ones(2))
        rec = tp.plugins.get_plugin("lz-pack")
        result({"before": before, "eager": eager, "y": y.tolist(), "status": rec.status,
                "ops": rec.ops, "owner": tp.ops.lz.triple.plugin,
                "namespaces": rec.as_dict()["namespaces"], "warnings": plugin_warnings()})
    ''')
    assert r.data == {"before": False, "eager": True, "y": [3.0, 3.0], "status": "loaded",
                      "ops": ["lz::triple"], "owner": "lz-pack", "namespaces": ["lz"],
                      "warnings": []}, r.stderr
    assert env.executed().count("lazy-imported") == 1


@pytest.mark.parametrize("use", [
    "tp.library.get_kernel('lz::triple', 'cpu')",
    "tp.library.register_fake('lz::triple')(lambda x: x.new_empty(x.shape))",
    "tp.library.opcheck('lz::triple', (tp.ones(3),))",
    "dir(tp.ops.lz)",
    "dir(tp.ops)",
    "tp.plugins.list()",
    "tp.plugins.ops_table()",
])
def test_each_first_use_imports_the_pack(env, use):
    _lazy(env)
    r = env.run(f'''
        import tensorplay as tp
        assert "lzpack" not in sys.modules
        {use}
        result({{"imported": "lzpack" in sys.modules,
                 "status": tp.plugins.get_plugin("lz-pack").status,
                 "y": tp.ops.lz.triple(tp.ones(1)).tolist()}})
    ''')
    assert r.data == {"imported": True, "status": "loaded", "y": [3.0]}, r.stderr
    assert env.executed().count("lazy-imported") == 1


def test_defining_in_a_declared_namespace_clashes_as_when_loaded_at_import(env):
    _lazy(env)
    r = env.run('''
        import tensorplay as tp
        err = raises(tp.library.define, "lz::triple(Tensor x) -> Tensor")
        lib = raises(tp.library.Library, "lz", "FRAGMENT")
        result({"err": err, "lib": lib, "status": tp.plugins.get_plugin("lz-pack").status})
    ''')
    assert r.data["err"][0] == "AlreadyDefinedError", r.stderr
    assert "lz::triple" in r.data["err"][1] and "lzpack" in r.data["err"][1]
    assert r.data["lib"] is None and r.data["status"] == "loaded"


def test_the_cli_lists_and_checks_a_pack_not_imported_yet(env):
    # (a default kernel that passes opcheck: `tensorplay check` checks it too)
    _lazy(env, LAZY.replace('raise AssertionError("lz::triple: the cpu kernel from the entry '
                            'point must run")', "return x * 3"))
    r = env.run('''
        import subprocess
        ops = subprocess.run([sys.executable, "-m", "tensorplay", "ops", "--namespace", "lz"],
                             capture_output=True, text=True)
        chk = subprocess.run([sys.executable, "-m", "tensorplay", "check", "--plugin", "lz-pack",
                              "--device", "cpu"], capture_output=True, text=True)
        plg = subprocess.run([sys.executable, "-m", "tensorplay", "plugins"],
                             capture_output=True, text=True)
        result({"ops": [ops.returncode, ops.stdout + ops.stderr],
                "check": [chk.returncode, chk.stdout + chk.stderr],
                "plugins": [plg.returncode, plg.stdout + plg.stderr]})
    ''')
    d = r.data
    assert d["ops"][0] == 0 and "lz::triple" in d["ops"][1], d["ops"][1]
    assert d["check"][0] == 0 and "lz::triple" in d["check"][1], d["check"][1]
    assert d["plugins"][0] == 0 and "lz-pack" in d["plugins"][1] and "loaded" in d["plugins"][1]


BROKEN_LAZY = '''
import tensorplay
mark("broken-imported")
from tensorplay.plugins import hookimpl

@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.define("bz::half(Tensor x) -> Tensor")   # undone by the rollback
    raise RuntimeError("bz kernels need libbz.so")
'''


def test_a_broken_pack_fails_on_first_use_naming_itself_and_the_fix_others_work(env):
    env.dist("bz-pack", "2.1", plugins={"bzpack": "bzpack"}, namespaces={"bz": "bzpack"},
             modules={"bzpack": BROKEN_LAZY})
    _lazy(env)
    r = env.run('''
        import tensorplay as tp
        at_import = plugin_warnings()
        err = raises(lambda: tp.ops.bz.half)
        lookup = raises(tp.library.get_kernel, "bz::half", "default")
        ok = tp.ops.lz.triple(tp.ones(1)).tolist()
        st = {p["distribution"]: p["status"] for p in tp.plugins.list()}
        result({"at_import": at_import, "err": err, "lookup": lookup, "ok": ok, "st": st,
                "warnings": plugin_warnings(),
                "half": "bz::half" in [o["name"] for o in tp.plugins.ops_table()]})
    ''')
    d = r.data
    assert d["at_import"] == [], d                      # import tensorplay: metadata only
    assert d["err"][0] == "AttributeError" and "bz-pack 2.1" in d["err"][1], d["err"]
    assert "libbz.so" in d["err"][1] and "TENSORPLAY_DISABLE_PLUGINS" in d["err"][1]
    assert d["err"][2] == "RuntimeError"                # chained: the pack's own error
    assert d["lookup"][0] == "LookupError" and "bz-pack 2.1" in d["lookup"][1]
    assert d["ok"] == [3.0] and d["st"]["bz-pack"] == "failed" and d["st"]["lz-pack"] == "loaded"
    assert d["half"] is False                           # nothing half-registered
    assert len(d["warnings"]) == 1 and "bz-pack 2.1" in d["warnings"][0], d["warnings"]
    assert env.executed().count("broken-imported") == 1


def test_strict_mode_raises_at_first_use(env):
    env.dist("bz-pack", plugins={"bzpack": "bzpack"}, namespaces={"bz": "bzpack"},
             modules={"bzpack": BROKEN_LAZY})
    r = env.run('''
        import tensorplay as tp
        result({"err": raises(lambda: tp.ops.bz.half)})
    ''', TENSORPLAY_STRICT_PLUGINS="1")
    assert r.data["err"][0] == "PluginError" and "bz-pack" in r.data["err"][1], r.stderr
    assert "TENSORPLAY_STRICT_PLUGINS=1" in r.data["err"][1]


def test_a_blocked_pack_is_never_imported_and_its_namespace_says_why(env):
    _lazy(env)
    r = env.run('''
        import tensorplay as tp
        err = raises(lambda: tp.ops.lz.triple)
        result({"err": err, "status": tp.plugins.get_plugin("lz-pack").status})
    ''', TENSORPLAY_DISABLE_PLUGINS="lz-pack")
    assert r.data["status"] == "blocked", r.stderr
    assert r.data["err"][0] == "AttributeError" and "TENSORPLAY_DISABLE_PLUGINS" in r.data["err"][1]
    assert env.executed() == []


UNDECLARED = '''
import tensorplay
from tensorplay.plugins import hookimpl
mark("undeclared-imported")

@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.custom_op("ud::one", lambda x: x + 1, mutates_args=(), schema="(Tensor x) -> Tensor")
    tensorplay.library.custom_op("ud2::two", lambda x: x + 2, mutates_args=(), schema="(Tensor x) -> Tensor")
'''


def test_ops_in_a_namespace_the_pack_does_not_declare_still_resolve_and_warn(env):
    env.dist("ud-pack", plugins={"udpack": "udpack"}, namespaces={"ud": "udpack"},
             modules={"udpack": UNDECLARED})
    r = env.run('''
        import tensorplay as tp
        y = tp.ops.ud2.two(tp.ones(1)).tolist()     # no pack declares ud2: every pack loads
        result({"y": y, "warnings": plugin_warnings()})
    ''')
    assert r.data["y"] == [3.0], r.stderr
    (w,) = r.data["warnings"]
    assert "ud-pack" in w and "ud2" in w and 'ud2 = "udpack"' in w


def test_a_namespace_entry_naming_another_module_is_warned_and_the_pack_loads_eagerly(env):
    env.dist("tensorplay-goodpack", plugins={"goodpack": "goodpack"},
             namespaces={"goodns": "not_the_plugin", "tp": "goodpack"},
             modules={"goodpack": GOOD})
    r = env.run('''
        import tensorplay as tp
        result({"eager": "goodpack" in sys.modules, "warnings": plugin_warnings()})
    ''')
    assert r.data["eager"] is True, r.stderr
    ws = r.data["warnings"]
    assert len(ws) == 2 and all("tensorplay-goodpack" in w and "tensorplay.namespaces" in w
                                for w in ws), ws
    assert any("not_the_plugin" in w for w in ws) and any("built-in namespace" in w for w in ws)


PACKAGE_INIT = '''
from tensorplay.plugins import hookimpl

@hookimpl
def tensorplay_register_ops(registrar):
    from . import ops  # noqa: F401
'''

PACKAGE_OPS = '''
import tensorplay
mark("ops-imported")

@tensorplay.library.custom_op("pk::inc", mutates_args=())
def inc(x: tensorplay.Tensor) -> tensorplay.Tensor:
    return x + 1
'''


def test_importing_the_packs_own_module_first_still_attributes_its_ops(env):
    env.dist("pk-pack", plugins={"pkpack": "pkpack"}, namespaces={"pk": "pkpack"},
             modules={"pkpack": PACKAGE_INIT, "pkpack.ops": PACKAGE_OPS})
    r = env.run('''
        from pkpack.ops import inc       # the user imports the pack's module directly
        import tensorplay as tp
        y = inc(tp.ones(1)).tolist()
        rec = tp.plugins.get_plugin("pk-pack")
        result({"y": y, "status": rec.status, "ops": rec.ops, "owner": inc.plugin,
                "same": tp.ops.pk.inc is inc, "warnings": plugin_warnings()})
    ''')
    assert r.data == {"y": [2.0], "status": "loaded", "ops": ["pk::inc"], "owner": "pk-pack",
                      "same": True, "warnings": []}, r.stderr
    assert env.executed().count("ops-imported") == 1


RACE = r'''
import sys, threading
sys.setswitchinterval(1e-6)
import tensorplay as tp
assert "lzpack" not in sys.modules
x = tp.ones(2)                      # the cpu backend is loaded; the pack is not
paths = {
    "ops": lambda: tp.ops.lz.triple(x).tolist() == [3.0, 3.0],
    "lookup": lambda: tp.library.get_kernel("lz::triple", "cpu")(x).tolist() == [3.0, 3.0],
    "records": lambda: tp.plugins.get_plugin("lz-pack").ops == ["lz::triple"],
}
errors, wrong = [], []
start = threading.Barrier(3 * len(paths))

def worker(name, fn, polling):
    # each path three times: twice as a first use, once polling until the pack's hook has
    # defined its op (registered, its cpu kernel not yet) and using it at that moment
    try:
        start.wait()
        if polling:
            while not getattr(sys.modules.get("lzpack"), "DEFINED", False):
                pass
        if not fn():
            wrong.append(name)
    except BaseException as e:
        errors.append(f"{name} (polling={polling}): {type(e).__name__}: {e}")

threads = [threading.Thread(target=worker, args=(n, f, p)) for n, f in paths.items()
           for p in (False, False, True)]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
result({"errors": errors, "wrong": wrong, "alive": sum(t.is_alive() for t in threads),
        "warnings": plugin_warnings()})
'''


@pytest.mark.parametrize("run", range(3))
def test_first_use_from_many_threads_loads_the_pack_once_and_whole(env, run):
    _lazy(env)
    r = env.run(RACE)
    assert r.rc == 0, r.stderr
    assert r.data == {"errors": [], "wrong": [], "alive": 0, "warnings": []}, r.data
    assert env.executed().count("lazy-imported") == 1


def test_the_example_pack_is_imported_on_first_use():
    pytest.importorskip("tensorplay_example_ops")
    code = ("import sys, tensorplay as tp\n"
            "assert 'tensorplay_example_ops' not in sys.modules, 'imported by import tensorplay'\n"
            "y = tp.ops.example.gelu(tp.ones(2))\n"
            "assert 'tensorplay_example_ops' in sys.modules\n"
            "r = tp.plugins.get_plugin('tensorplay-example-ops')\n"
            "assert r.status == 'loaded' and r.namespaces == ['example'], r\n"
            "assert abs(y.tolist()[0] - 0.8412) < 1e-3, y\nprint('ok')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "ok" in p.stdout, p.stderr


INTRUDER = '''
import tensorplay
from tensorplay.plugins import hookimpl

@hookimpl
def tensorplay_register_ops(registrar):
    tensorplay.library.register_kernel("lz::triple", "cpu")(lambda x: x * 30)
'''


def test_another_plugins_kernel_for_a_lazy_packs_op_conflicts_as_at_import(env):
    # an eager plugin reaching for the pack's op loads the pack first; the owner keeps its
    # kernel and the intruder fails, naming both, whichever loads first
    _lazy(env)
    env.dist("aa-intruder", "0.3", plugins={"intruder": "intruder"},
             modules={"intruder": INTRUDER})
    r = env.run('''
        import tensorplay as tp
        st = {p["distribution"]: [p["status"], p["error"]] for p in tp.plugins.list()}
        result({"st": st, "y": tp.ops.lz.triple(tp.ones(1)).tolist()})
    ''')
    d = r.data
    assert d["y"] == [3.0], r.stderr
    assert d["st"]["lz-pack"][0] == "loaded"
    status, error = d["st"]["aa-intruder"]
    assert status == "failed" and "aa-intruder 0.3" in error and "lz-pack 1.0" in error, error
