"""Fresh-user plugin defects: a ``tensorplay_sample_inputs`` hook returning something other
than None or a list of samples is reported (not iterated into bogus samples); ``tensorplay
check`` names a plugin that failed to load. Each runs in a fresh subprocess (real plugins)."""

from __future__ import annotations

import pytest
from _plugin_dists import PluginEnv

TENSOR_HOOK = '''
import tensorplay
from tensorplay.plugins import hookimpl, SampleInput
mark("tensorhook")

@hookimpl
def tensorplay_register_ops(registrar):
    @tensorplay.library.custom_op("thook::dbl", mutates_args=())
    def dbl(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 2

    @dbl.register_fake
    def _(x):
        return x.new_empty(x.shape)

@hookimpl
def tensorplay_sample_inputs(op, device):
    if op.name == "thook::dbl":
        return RETURN
    return None
'''


@pytest.fixture
def env(tmp_path):
    return PluginEnv(tmp_path)


@pytest.mark.parametrize("ret, kind", [("tensorplay.randn(3, 4, device=device)", "Tensor"),
                                       ("SampleInput((tensorplay.ones(3, device=device),))",
                                        "SampleInput"),
                                       ("iter([SampleInput((tensorplay.ones(3),))])",
                                        "list_iterator")])
def test_sample_hook_returning_a_non_list_fails_that_plugins_check(env, ret, kind):
    env.dist("tensorplay-tensorhook", plugins={"tensorhook": "tensorhook"},
             modules={"tensorhook": TENSOR_HOOK.replace("RETURN", ret)})
    d = env.run('''
        import tensorplay
        from tensorplay.testing import check_plugin, summarize_checks
        res = check_plugin("tensorhook", "cpu", test_utils=["test_schema"])
        result({"rows": [[r.op, r.status, r.message] for r in res],
                "summary": summarize_checks(res)})
    ''').data
    rows = [r for r in d["rows"] if r[0] == "thook::dbl"]
    assert len(rows) == 1, rows
    op, status, msg = rows[0]
    assert status == "error"
    assert "tensorplay-tensorhook" in msg and "tensorplay_sample_inputs" in msg
    assert kind in msg and "list of SampleInput" in msg
    assert d["summary"]["passed"] == 0


def test_sample_hook_returning_a_tuple_of_samples_still_works(env):
    env.dist("tensorplay-tensorhook", plugins={"tensorhook": "tensorhook"},
             modules={"tensorhook": TENSOR_HOOK.replace(
                 "RETURN", "(SampleInput((tensorplay.ones(3, device=device),), name='a'),)")})
    d = env.run('''
        import tensorplay
        from tensorplay.testing import check_plugin
        res = check_plugin("tensorhook", "cpu", test_utils=["test_schema"])
        result([[r.op, r.sample, r.status] for r in res])
    ''').data
    assert ["thook::dbl", "a", "passed"] in d


# ----------------------------------------------------------- 5. README agrees with the table

def _cli(*args, env=None):
    import os
    import subprocess
    import sys
    e = dict(os.environ if env is None else env)
    e.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "tensorplay.cli", *args], capture_output=True,
                          text=True, env=e, timeout=120)


def test_readme_names_the_marks_the_check_table_prints():
    import pathlib
    import re
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    sentence = readme[readme.index("`check` prints progress"):][:400]
    p = _cli("check", "--plugin", "tensorplay-example-ops", "example::add_relu_", "--device", "cpu",
             "--test-utils", "test_schema,test_autograd_registration")
    assert p.returncode == 0, p.stdout + p.stderr
    row = next(line for line in p.stdout.splitlines() if line.startswith("example::add_relu_"))
    # columns: op, then (where several devices are listed) the device, the sample count, the marks
    toks = row.split()
    marks = toks[toks.index(next(t for t in toks[1:] if t.isdigit())) + 1:]
    assert marks == ["ok", "n/a", "-", "-", "-", "-"], row
    for m in set(marks) | {"FAIL"}:
        assert f"`{m}`" in sentence, (m, sentence)
    assert not re.search(r"PASS|N/A", sentence)


# ----------------------------------------------------------------------------- 6. CLI messages

def test_check_unknown_device_says_it_once():
    p = _cli("check", "--device", "tpu")
    assert p.returncode == 2      # an unknown device name: a usage error (check --help)
    err = p.stderr.strip()
    assert err.count("is not available") == 1, err
    assert "  " not in err and ".." not in err and "?." not in err
    assert "'tpu'" in err and "cpu" in err


def test_ops_with_an_unknown_namespace_is_a_usage_error():
    p = _cli("ops", "-n", "nonexist")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "nonexist" in p.stderr and "example" in p.stderr
    p = _cli("ops", "-n", "example", "-n", "nonexist")
    assert p.returncode == 2 and "nonexist" in p.stderr and "example," in p.stderr
    p = _cli("ops", "-n", "example")
    assert p.returncode == 0 and "example::gelu" in p.stdout


BROKEN_KERNEL_EP = '''
import tensorplay
from tensorplay.plugins import hookimpl

@hookimpl
def tensorplay_register_ops(registrar):
    @tensorplay.library.custom_op("myops::affine", mutates_args=())
    def affine(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return x * 2

def k(x):
    return x
'''


def test_a_plugin_that_failed_to_load_is_named_by_check_and_lookups(env):
    env.dist("my-ops", plugins={"my_ops": "my_ops"}, kernels={"myops::nope.cpu": "my_ops:k"},
             modules={"my_ops": BROKEN_KERNEL_EP})
    d = env.run('''
        import io, contextlib, warnings
        warnings.simplefilter("ignore")
        import tensorplay
        from tensorplay.cli import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(["check", "--plugin", "my_ops", "myops::affine"])
        msgs = []
        for f in (lambda: tensorplay.library.opcheck("myops::affine", (tensorplay.ones(2),)),
                  lambda: tensorplay.ops.myops.affine):
            try:
                f()
            except Exception as e:
                msgs.append(str(e))
        result({"rc": rc, "err": err.getvalue(), "msgs": msgs})
    ''').data
    assert d["rc"] == 1
    assert "no plugin op named 'myops::affine'" in d["err"]
    assert "my-ops" in d["err"] and "failed" in d["err"] and "myops::nope" in d["err"]
    assert len(d["msgs"]) == 2
    for m in [d["err"]] + d["msgs"]:
        assert ".." not in m, m
    assert all("Fix:" in m and "failed to load" in m for m in d["msgs"])
