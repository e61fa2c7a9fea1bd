"""`tensorplay check` on the built-in ``tp::`` ops: the device plugins answer
``tensorplay_sample_inputs`` with the core's table (``tensorplay.testing.builtin_samples``), so
opcheck (every default check, ``test_layouts`` included) runs over every built-in op on their
devices; and a device plugin whose built-in kernels are wrong is caught, naming the op, the check
and the plugin."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import tensorplay as tp
from tensorplay.testing import builtin_samples, check_plugin, summarize_checks
from tensorplay.testing.opcheck import ALL_TESTS

# every built-in op (namespace ``tp``), by name: the public spelling of the op table
BUILTINS = {n: getattr(tp.ops.tp, n) for n in dir(tp.ops.tp)}


def test_every_builtin_op_has_cpu_samples_from_the_cpu_plugin(cpu):
    for name, op in sorted(BUILTINS.items()):
        got = tp.plugins.sample_inputs(op, "cpu")
        want = builtin_samples.samples(name, "cpu")
        assert len(got) == len(want) >= 1, name
        assert all(s.name.startswith(f"tp::{name}#") for s in got), name
    # not the cpu plugin's to answer for a custom op, nor for another device's built-ins
    import tensorplay_cpu
    assert tensorplay_cpu.tensorplay_sample_inputs(op=BUILTINS["add"],
                                                   device=tp.device("meta")) is None
    assert builtin_samples.sample_inputs("example::gelu", cpu) is None


def test_check_plugin_tensorplay_cpu_checks_every_builtin_with_every_check(cpu):
    results = check_plugin("tensorplay-cpu", "cpu")
    counts = summarize_checks(results)
    bad = [r.describe() for r in results if r.status in ("failed", "error")]
    assert not bad, "\n".join(bad)
    assert counts["skipped"] == 0, [r.describe() for r in results if r.status == "skipped"]
    assert {r.op for r in results} == {f"tp::{n}" for n in BUILTINS}
    n_table = sum(len(builtin_samples.samples(n, "cpu")) for n in BUILTINS)
    assert counts["passed"] >= n_table
    # every check ran: test_layouts passed on every op with a tensor input with elements
    ran = {t: sum(r.checks.get(t) == "pass" for r in results) for t in ALL_TESTS}
    assert all(ran[t] > 100 for t in ALL_TESTS), ran
    # the data-dependent ops: their fakes give a data-dependent size (new_dynamic_size), so the
    # fake and compile checks run and pass on every sample
    ms = [r for r in results if r.op in ("tp::masked_select", "tp::nonzero")]
    assert len({r.op for r in ms}) == 2 and all(
        r.checks["test_faketensor"] == "pass" and r.checks["test_aot_dispatch_dynamic"] == "pass"
        for r in ms)


def test_random_builtins_compare_metadata_not_values(cpu):
    from tensorplay.testing.aot import check
    for name in ("rand", "randn", "randint", "empty"):
        s = builtin_samples.samples(name, "cpu")[0]
        assert check(BUILTINS[name], s.args, s.kwargs) is None, name
    # a deterministic factory is still compared by value: the check can fail
    assert "nondeterministic_seeded" not in BUILTINS["arange"].tags


BUGGY_DEVICE = '''
import numpy as np
from tensorplay.plugins import DeviceSpec, hookimpl
from tensorplay_cpu.backend import CPUBackend

TENSORPLAY_API_VERSION = 1


def naive_neg(x):
    # the elements in memory order, as a kernel reading numel() items from the data pointer
    # does: wrong for a transposed input
    return -np.ravel(x, order="K").reshape(x.shape)


def exp_1d(x):
    # a 0-dim input gives shape (1,): the fake rule (shape ()) disagrees
    return np.atleast_1d(np.exp(x))


class BuggyBackend(CPUBackend):
    device_type = "buggy"

    def kernels(self):
        k = super().kernels()
        if k.get("neg") is not naive_neg:
            k = self._kernels = dict(k, neg=naive_neg, exp=exp_1d)
        return k


@hookimpl
def tensorplay_devices():
    return [DeviceSpec("buggy", "buggy_dev:BuggyBackend")]


@hookimpl
def tensorplay_sample_inputs(op, device):
    if device.type != "buggy":
        return None
    from tensorplay.testing.builtin_samples import sample_inputs
    return sample_inputs(op, device)
'''


def test_planted_bugs_in_a_device_plugins_builtin_kernels_are_caught(plugin_env, cpu):
    make, env = plugin_env
    make("buggy-dev", "buggy_dev", BUGGY_DEVICE)
    p = subprocess.run([sys.executable, "-m", "tensorplay.cli", "check", "--plugin", "buggy-dev",
                        "-q", "--json", "-"], capture_output=True, text=True, env=env,
                       timeout=300, check=False)
    assert p.returncode == 1, p.stdout + p.stderr
    data = json.loads(p.stdout)
    rows = {r["op"]: r for r in data["rows"]}
    assert set(rows) == {f"tp::{n}" for n in BUILTINS}
    assert all(r["device"] == "buggy" and r["plugin"] == "buggy-dev" for r in rows.values())
    assert rows["tp::neg"]["checks"]["test_layouts"] == "fail"
    assert rows["tp::exp"]["checks"]["test_faketensor"] == "fail"
    for fine in ("tp::add", "tp::sin", "tp::matmul", "tp::transpose", "tp::sum"):
        assert set(rows[fine]["checks"].values()) <= {"pass", "skip"}, rows[fine]
    fails = "\n".join(data["failures"])
    assert "tp::neg on buggy" in fails and "test_layouts" in fails and "transposed" in fails
    assert "ignores strides" in fails and "plugin buggy-dev" in fails
    assert "tp::exp on buggy" in fails and "real shape (1,) vs fake ()" in fails


@pytest.mark.cuda
def test_cuda_plugin_answers_for_builtins_on_cuda():
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"cuda unavailable: {why}")
    res = check_plugin("tensorplay-cuda", "cuda:0", ops=["tp::add", "tp::transpose"])
    assert {r.op for r in res} == {"tp::add", "tp::transpose"}
    assert all(r.status == "passed" for r in res), [r.describe() for r in res]


def test_views_are_checked_under_the_device_plugin_and_selectable_by_name(cpu):
    """The core's device-agnostic built-ins (views) run on every device: a device plugin's check
    covers them, and the command finds them by name (one selection: the engine's)."""
    from tensorplay.testing.plugin_check import plugin_check_cases, plugin_ops
    names = {op.name for op, _ in plugin_ops("tensorplay-cpu")}
    assert names == {f"tp::{n}" for n in BUILTINS}
    assert {c.op for c in plugin_check_cases("tensorplay-cpu", "cpu")} == names
    p = subprocess.run([sys.executable, "-m", "tensorplay.cli", "check", "--plugin",
                        "tensorplay-cpu", "tp::transpose", "view", "-q", "--json", "-"],
                       capture_output=True, text=True, timeout=300, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = json.loads(p.stdout)["rows"]
    assert sorted(r["op"] for r in rows) == ["tp::transpose", "tp::view"]
    assert all("device-agnostic" in r["kernel"] and r["checks"]["test_layouts"] == "pass"
               for r in rows)
