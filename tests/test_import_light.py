"""``import tensorplay`` is light: no array library at import, and the core works without any
device plugin for schemas, registration and fake tensors (SPEC §1, §2). Each check runs in a fresh
subprocess so that this test session's own imports cannot hide a regression."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("numpy", "cupy", "triton", "array_api_compat", "torch")


def _run(code: str, **env) -> dict:
    e = dict(os.environ)
    for k in ("TENSORPLAY_PLUGINS", "TENSORPLAY_DISABLE_PLUGINS", "TENSORPLAY_STRICT_PLUGINS"):
        e.pop(k, None)
    e.update(env)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=e, timeout=120)
    assert p.returncode == 0, f"subprocess failed:\n{p.stdout}\n{p.stderr}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_import_imports_no_array_library():
    r = _run(f"""
        import json, sys
        import tensorplay
        print(json.dumps({{"heavy": [m for m in {HEAVY!r} if m in sys.modules],
                          "plugins": [p["distribution"] for p in tensorplay.plugins.list()
                                      if "cpu" in p["devices"]]}}))
    """)
    assert r["heavy"] == []
    assert r["plugins"] == ["tensorplay-cpu"], "the cpu plugin is discovered (but not imported)"


def test_first_cpu_tensor_imports_numpy_lazily():
    r = _run("""
        import json, sys
        import tensorplay as tp
        before = "numpy" in sys.modules
        x = tp.ones(2)
        print(json.dumps({"before": before, "after": "numpy" in sys.modules,
                          "value": x.tolist()}))
    """)
    assert r == {"before": False, "after": True, "value": [1.0, 1.0]}


_NO_PLUGIN_WORK = f"""
    import json, sys
    import tensorplay as tp
    from tensorplay import fake, library as lib

    out = {{}}
    # schemas
    def f(x: tp.Tensor, n: int, scale: float = 1.0) -> tp.Tensor: ...
    out["schema"] = lib.infer_schema(f, mutates_args=())

    # registration
    @lib.custom_op("light::double", mutates_args=())
    def double(x: tp.Tensor) -> tp.Tensor:
        return x * 2

    @double.register_fake
    def _(x):
        return x.new_empty(x.shape)

    # fake tensors and the meta device
    with fake.FakeTensorMode():
        a = tp.randn(4, 3)
        b = (a @ a.t()).softmax(-1)
        c = double(a).sum(0)
    m = tp.empty(2, 5, device="meta")
    out["fake"] = [list(b.shape), str(b.dtype), list(a.t().stride()), list(c.shape),
                   b.is_fake]
    out["meta"] = [list((m + 1).shape), str((m + 1).device), list(double(m).shape)]
    try:
        tp.ones(2)
        out["error"] = None
    except Exception as e:
        out["error"] = [type(e).__name__, str(e)]
    try:
        tp.tensor([1.0, 2.0])
        out["error2"] = None
    except Exception as e:
        out["error2"] = [type(e).__name__, str(e)]
    out["heavy"] = [m for m in {HEAVY!r} if m in sys.modules]
    print(json.dumps(out))
"""


def _check_no_plugin_result(r):
    assert r["schema"] == "(Tensor x, SymInt n, float scale=1.0) -> Tensor"
    assert r["fake"] == [[4, 4], "tensorplay.float32", [1, 3], [3], True]
    assert r["meta"] == [[2, 5], "meta", [2, 5]]
    assert r["heavy"] == []
    for err in (r["error"], r["error2"]):
        assert err is not None, "creating a real tensor without a plugin must fail"
        assert err[0] == "DeviceUnavailableError"
        assert "tensorplay-cpu" in err[1] and "'cpu'" in err[1]


def test_no_plugins_allowed_schemas_registration_fake_still_work():
    r = _run(_NO_PLUGIN_WORK, TENSORPLAY_PLUGINS="")
    _check_no_plugin_result(r)
    assert "blocked" in r["error"][1]


def test_no_plugin_installed_error_says_what_to_install():
    # simulate a machine where no plugin distribution is installed at all
    code = ("import importlib.metadata as _md\n"
            "_md.entry_points = lambda *a, **k: _md.EntryPoints(())\n") + \
        textwrap.dedent(_NO_PLUGIN_WORK)
    r = _run(code, TENSORPLAY_PLUGIN_SCAN="importlib")   # scan through the patched importlib.metadata
    _check_no_plugin_result(r)
    assert "pip install tensorplay-cpu" in r["error"][1]


@pytest.mark.parametrize("var", ["TENSORPLAY_DISABLE_PLUGINS"])
def test_blocking_the_cpu_plugin_by_name(var):
    r = _run("""
        import json
        import tensorplay as tp
        try:
            tp.zeros(1)
            print(json.dumps(None))
        except Exception as e:
            print(json.dumps([type(e).__name__, str(e)]))
    """, **{var: "tensorplay-cpu"})
    assert r is not None and r[0] == "DeviceUnavailableError" and "tensorplay-cpu" in r[1]
