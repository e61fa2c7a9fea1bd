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
    p = _cli("check", "--plugin", "tensorplay-example-ops", "example::add_relu_",
             "--test-utils", "test_schema,test_autograd_registration")
    assert p.returncode == 0, p.stdout + p.stderr
    row = next(line for line in p.stdout.splitlines() if line.startswith("example::add_relu_"))
    marks = row.split()[2:]
    assert marks == ["ok", "n/a", "-", "-", "-"], row
    for m in set(marks) | {"FAIL"}:
        assert f"`{m}`" in sentence, (m, sentence)
    assert not re.search(r"PASS|N/A", sentence)
