"""Fresh-user findings of session 62, each against torch 2.13's behaviour (cpu):

* a list (or tuple, or NumPy array) used as an index becomes torch's index tensor: bool and
  uint8 data stay masks, anything else is int64 (``indexing_tensor_from_data``) -- so ``[]`` is an
  empty int64 index (``x[[]]`` has shape ``(0, ...)``, ``x[[]] = v`` writes nothing), where
  tensorplay built a float32 tensor and raised IndexError; floats truncate toward zero.
* the suite's "import tensorplay is light" tests consider only this repository's plugins: a
  user's own op pack installed beside them (one importing NumPy at load) made them fail.
* ``tensorplay check``: an installed device that is unavailable here is said the same way
  whether the run names the pack (``--plugin``) or its ops, also for a pack whose kernels are
  all device-independent (they would run there too); an op whose sample inputs were made and
  whose check ran past ``--timeout`` is blamed on the check of that sample, not on its sample
  hooks, and counts as a checked sample that failed (timed out), not as "nothing was checked".
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorplay as tp
from _plugin_dists import PluginEnv


def _x():
    return tp.arange(12).reshape(3, 4)


# --- 1. empty (and float) sequences as indices ---------------------------------------------

# (index, torch 2.13's result shape)
EMPTY_READS = [
    ([], (0, 4)),
    ((slice(None), []), (3, 0)),
    (([], []), (0,)),
    (([], 0), (0,)),
    ((0, []), (0,)),
    ((Ellipsis, []), (3, 0)),
    ((None, []), (1, 0, 4)),
    (([], None), (0, 1, 4)),
    (((),), (0, 4)),                 # an empty tuple as one entry: an empty index too
    (([0], []), (0,)),
    (([5], []), (0,)),               # nothing is read, so nothing is range-checked
    (([[]], []), (1, 0)),
    (([], [[]]), (1, 0)),
    (tp.tensor([], dtype=tp.int64), (0, 4)),
]


@pytest.mark.parametrize("index, shape", EMPTY_READS, ids=lambda v: repr(v))
def test_empty_sequence_index_reads_nothing(index, shape):
    r = _x()[index]
    assert tuple(r.shape) == shape
    assert r.dtype == tp.int64
    assert r.numel() == 0


def test_empty_list_index_of_a_float_tensor_keeps_its_dtype():
    r = tp.ones(3)[[]]
    assert tuple(r.shape) == (0,) and r.dtype == tp.float32


WRITES = [(index, value) for index in ([], (slice(None), []), ([], []), ([], 0))
          for value in (1, 1.5, tp.tensor(7))] + [
    ([], tp.ones(4, dtype=tp.int64)),           # (a row broadcasts to the (0, 4) result)
    ([], tp.ones(0, 4, dtype=tp.int64)),
    ((slice(None), []), tp.ones(3, 0, dtype=tp.int64)),
]


@pytest.mark.parametrize("index, value", WRITES, ids=lambda v: repr(v))
def test_empty_sequence_index_write_is_a_no_op(index, value):
    x = _x()
    x[index] = value
    assert x.tolist() == _x().tolist()


def test_empty_list_write_keeps_torchs_value_checks():
    x = _x()
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[[]] = tp.ones(2, 4, dtype=tp.int64)
    with pytest.raises(RuntimeError, match="dtypes match"):
        x[[]] = tp.ones(4)
    assert x.tolist() == _x().tolist()


def test_float_tensor_index_is_still_refused():
    # a tensor keeps its own dtype: only sequences are converted (torch's rule)
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        _x()[tp.tensor([])]
    x = _x()
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[tp.tensor([])] = 1
    with pytest.raises(RuntimeError, match="int32 or int64"):
        _x().index_select(0, tp.tensor([]))


def test_empty_int64_index_ops():
    e = tp.tensor([], dtype=tp.int64)
    assert tuple(_x().index_select(0, e).shape) == (0, 4)
    assert tuple(_x().index_select(1, e).shape) == (3, 0)
    x = _x()
    x.index_put_((e,), tp.tensor(1))
    assert x.tolist() == _x().tolist()


def test_empty_list_index_backward_gives_zero_grad():
    a = tp.ones(3, requires_grad=True)
    a[[]].sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0]


def test_float_sequence_index_truncates_to_int64():
    # torch: x[[0.0, 2.0]] is x[[0, 2]]; -0.5 truncates to 0, -1.5 to -1 (the last row)
    x = _x()
    assert x[[0.0, 2.0]].tolist() == x[[0, 2]].tolist()
    assert x[[-0.5]].tolist() == x[[0]].tolist()
    assert x[[-1.5]].tolist() == x[[-1]].tolist()
    assert x[:, [0.0]].tolist() == x[:, [0]].tolist()
    assert x[np.array([0.0, 2.0])].tolist() == x[[0, 2]].tolist()
    assert tuple(x[np.array([])].shape) == (0, 4)
    y = _x()
    y[[0.5, 1]] = 5
    assert y.tolist() == [[5] * 4, [5] * 4, [8, 9, 10, 11]]


@pytest.mark.parametrize("v", [1e20, float("nan"), float("inf")])
def test_float_sequence_index_out_of_int64_raises(v):
    with pytest.raises(RuntimeError, match="cannot be converted to type int64 without overflow"):
        _x()[[v]]


def test_bool_and_int_sequences_unchanged():
    x = _x()
    assert x[[True, False, True]].tolist() == [[0, 1, 2, 3], [8, 9, 10, 11]]
    assert x[[0, True]].tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[[tp.tensor(1.0)]]     # a float tensor inside a list stays a float index


# (index of a 3x4 x, torch 2.13's IndexError): the mask's first mismatching dim, the indexed
# tensor (after ints and None) whole, and its dim there
MASK_MISMATCH = [
    (lambda: tp.tensor([], dtype=tp.bool), "[0] at index 0", "[3, 4] at index 0"),
    (lambda: tp.ones(3, 5, dtype=tp.bool), "[3, 5] at index 1", "[3, 4] at index 1"),
    (lambda: tp.ones(2, 4, dtype=tp.bool), "[2, 4] at index 0", "[3, 4] at index 0"),
    (lambda: (slice(None), tp.ones(5, dtype=tp.bool)), "[5] at index 0", "[3, 4] at index 1"),
    (lambda: (None, tp.ones(2, dtype=tp.bool)), "[2] at index 0", "[1, 3, 4] at index 1"),
    (lambda: (0, tp.ones(2, dtype=tp.bool)), "[2] at index 0", "[4] at index 0"),
    (lambda: ([0], tp.ones(2, dtype=tp.bool)), "[2] at index 0", "[3, 4] at index 1"),
    # a mask that would broadcast is refused too (x[m] = 1 wrote through it)
    (lambda: tp.tensor([[True, False, True, False]]), "[1, 4] at index 0", "[3, 4] at index 0"),
]


@pytest.mark.parametrize("index, mask, tensor", MASK_MISMATCH)
def test_mask_shape_mismatch_names_both_dims_as_torch(index, mask, tensor):
    want = (f"The shape of the mask {mask} does not match the shape of the indexed tensor "
            f"{tensor}")
    with pytest.raises(IndexError) as e:
        _x()[index()]
    assert str(e.value) == want
    x = _x()
    with pytest.raises(IndexError) as e:
        x[index()] = 1
    assert str(e.value) == want
    assert x.tolist() == _x().tolist()


def test_empty_sequence_index_compiles():
    def f(x):
        return x[[]] + 1, x[:, []], x[[], []], x.index_select(0, tp.tensor([], dtype=tp.int64))

    def g(x):
        y = x.clone()
        y[[]] = 5
        return y

    x = _x()
    got = tp.compile(f)(x)
    assert [tuple(t.shape) for t in got] == [(0, 4), (3, 0), (0,), (0, 4)]
    assert [tuple(t.shape) for t in f(x)] == [(0, 4), (3, 0), (0,), (0, 4)]
    assert tp.compile(g)(x).tolist() == _x().tolist()


# --- 2. the suite beside a user's own op pack -----------------------------------------------

# an op pack of a user's: its op module imports NumPy when the pack loads (as the fresh user's
# did), which is that pack's business, not a regression of this repository's plugins
FOREIGN_PACK = """
import numpy
import tensorplay
from tensorplay.plugins import hookimpl

@hookimpl
def tensorplay_register_ops(registrar):
    @tensorplay.library.custom_op("foreignns::twice", mutates_args=())
    def twice(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return tensorplay.tensor(numpy.asarray(x.tolist()) * 2)
"""

LIGHT_IMPORT_TESTS = [
    "tests/test_plugins.py::test_import_with_all_plugins_imports_no_array_library",
    "tests/test_plugins.py::test_example_pack_declares_a_lazy_cpu_kernel",
    "tests/test_triton.py::test_plugin_loaded_and_import_is_light",
]


def test_light_import_tests_pass_beside_a_foreign_pack_importing_numpy(tmp_path):
    env = PluginEnv(tmp_path)
    env.dist("foreign-ops", plugins={"foreign_ops": "foreign_ops"},
             namespaces={"foreignns": "foreign_ops"}, modules={"foreign_ops": FOREIGN_PACK})
    root = Path(__file__).resolve().parents[1]
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([env.root] + [p for p in [e.get("PYTHONPATH")] if p])
    # (the pack is really seen: listing the plugins loads it, and NumPy with it)
    seen = subprocess.run([sys.executable, "-c", "import sys, tensorplay\n"
                           "d = [r['dist'] for r in tensorplay.plugins.list()]\n"
                           "print('foreign-ops' in d, 'numpy' in sys.modules)"],
                          env=e, capture_output=True, text=True, timeout=120, check=False)
    assert seen.stdout.split() == ["True", "True"], seen.stdout + seen.stderr
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                        *LIGHT_IMPORT_TESTS], cwd=root, env=e,
                       capture_output=True, text=True, timeout=600, check=False)
    # (the example pack's test skips where that pack is not installed)
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    assert p.returncode == 0 and "passed" in last and "failed" not in last, \
        p.stdout[-3000:] + p.stderr[-2000:]


def test_own_plugins_list_matches_the_checkout():
    # OWN_PLUGINS names every distribution of this repository with a tensorplay.plugins entry
    # point (a plugin added later must join it, or the light-import tests would block it)
    import re

    from _plugin_dists import OWN_PLUGINS
    root = Path(__file__).resolve().parents[1]
    tomls = sorted(root.glob("plugins/*/pyproject.toml")) + [root / "examples" / "pyproject.toml"]
    if not (root / "plugins").is_dir():
        pytest.skip("no plugins/ here (the core's sdist): the list is checked in a checkout")
    found = set()
    for t in tomls:
        text = t.read_text()
        if '[project.entry-points."tensorplay.plugins"]' in text:
            found.add(re.search(r'(?m)^name = "([^"]+)"', text).group(1))
    assert found == set(OWN_PLUGINS)


# --- 3. tensorplay check's words ----------------------------------------------------------------

def _cli(*args, env):
    e = dict(env)
    e.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "tensorplay.cli", *args], capture_output=True,
                          text=True, env=e, timeout=600, check=False)


# one op with a device-independent kernel only (no device_types), a fake only with
# FRESHPACK_FAKE=1; FRESHPACK_SLEEP seconds in its body (as any slow kernel)
AGNOSTIC_PACK = """
    import os
    import time
    import pluggy
    hookimpl = pluggy.HookimplMarker("tensorplay")

    @hookimpl
    def tensorplay_register_ops(registrar):
        import tensorplay as tp
        from tensorplay import library as lib

        @lib.custom_op("freshpack::plus_one", mutates_args=())
        def plus_one(x: tp.Tensor) -> tp.Tensor:
            time.sleep(float(os.environ.get("FRESHPACK_SLEEP", "0")))
            return x + 1.0

        if os.environ.get("FRESHPACK_FAKE"):
            plus_one.register_fake(lambda x: x.new_empty(x.shape))

    @hookimpl
    def tensorplay_sample_inputs(op, device):
        import tensorplay as tp
        from tensorplay.plugins import SampleInput
        if op.name == "freshpack::plus_one":
            return [SampleInput((tp.ones(3, device=device),), {}, "small")]
        return None
"""


def _unavailable_here() -> set:
    """Devices of loaded plugins that are not available in this environment."""
    return {d for r in tp.plugins.list_plugins() if r["status"] == "loaded"
            for d in r["devices"] if not tp.plugins.device_status(d)[0]}


def _not_checked(p) -> list:
    out = p.stdout.split("Not checked:", 1)
    if len(out) == 1:
        return []
    return [ln for ln in out[1].split("\n\n", 1)[0].splitlines() if ln.startswith("- device ")]


def test_check_says_an_unavailable_device_the_same_by_plugin_and_by_op(tmp_path, plugin_env):
    make, env = plugin_env
    make("freshpack", "freshpack", AGNOSTIC_PACK)
    env = {**env, "FRESHPACK_FAKE": "1"}
    by_plugin = _cli("check", "--plugin", "freshpack", "--json", str(tmp_path / "p.json"),
                     env=env)
    by_op = _cli("check", "freshpack::plus_one", "--json", str(tmp_path / "o.json"), env=env)
    assert by_plugin.returncode == by_op.returncode == 0, by_plugin.stdout + by_plugin.stderr
    # the same "device X (plugin P) is unavailable: why" lines either way
    assert _not_checked(by_plugin) == _not_checked(by_op), (by_plugin.stdout, by_op.stdout)
    jp = json.loads((tmp_path / "p.json").read_text())
    jo = json.loads((tmp_path / "o.json").read_text())
    assert jp["unavailable_devices"] == jo["unavailable_devices"]
    # a device-independent kernel would run on every installed device: each unavailable one
    # is named (cuda on a machine without a GPU)
    assert set(jp["unavailable_devices"]) == _unavailable_here()
    for d in _unavailable_here():
        assert any(ln.startswith(f"- device {d} ") for ln in _not_checked(by_plugin)), \
            by_plugin.stdout


def test_check_says_an_unavailable_device_only_for_the_ops_asked_for(tmp_path, plugin_env):
    # an op with a cpu kernel only: another pack's cuda kernels (the example pack's rms_norm)
    # must not make a run of this op say anything of cuda, by op or by plugin
    make, env = plugin_env
    make("freshpack", "freshpack", AGNOSTIC_PACK.replace(
        '"freshpack::plus_one", mutates_args=()', '"freshpack::plus_one", mutates_args=(), '
        'device_types="cpu"'))
    env = {**env, "FRESHPACK_FAKE": "1"}
    for args in (("freshpack::plus_one",), ("--plugin", "freshpack")):
        p = _cli("check", *args, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        assert _not_checked(p) == [], p.stdout


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_slow_check_is_blamed_on_the_check_not_on_the_samples(tmp_path, plugin_env, jobs):
    make, env = plugin_env
    make("freshpack", "freshpack", AGNOSTIC_PACK)
    env = {**env, "FRESHPACK_SLEEP": "1000"}
    path = tmp_path / "r.json"
    p = _cli("check", "--plugin", "freshpack", "--device", "cpu", "--timeout", "1", "-j", jobs,
             "--json", str(path), env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    res = json.loads(path.read_text())
    fails = [f for f in res["failures"] if f.startswith("freshpack::plus_one on cpu [small]")]
    assert len(fails) == 1, res["failures"]
    assert "timed out: sample [small] was still being checked" in fails[0], fails[0]
    # the hooks returned at once: they are not what timed out
    assert "tensorplay_sample_inputs hooks) were still being made" not in p.stdout, p.stdout
    # counted as checked and failed (timed out), never as missing
    assert "nothing was checked" not in p.stderr, p.stderr
    assert "no op had a kernel and sample inputs" not in p.stdout + p.stderr
    assert res["samples_checked"] >= 1
    summary = [ln for ln in p.stdout.splitlines() if "sample(s) of" in ln][-1]
    assert "timed out" in summary and not summary.startswith("0 sample(s)"), summary


def test_a_hanging_sample_hook_is_still_blamed_on_the_hooks(tmp_path, plugin_env):
    make, env = plugin_env
    make("freshpack", "freshpack", AGNOSTIC_PACK.replace(
        'if op.name == "freshpack::plus_one":', 'if op.name == "freshpack::plus_one":\n'
        '            time.sleep(1000)'))
    p = _cli("check", "--plugin", "freshpack", "--device", "cpu", "--timeout", "1", env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "tensorplay_sample_inputs hooks) were still being made" in p.stdout, p.stdout
    # its sample inputs were never made: nothing was checked, and the summary says why
    assert "nothing was checked" in p.stderr
    assert "no op had a kernel and sample inputs" not in p.stderr, p.stderr
