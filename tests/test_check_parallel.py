"""``tensorplay check -j N`` / ``check_plugin(jobs=N)``: the cases spread over worker processes
give the serial run's results -- same rows, statuses, failure messages, same order -- apart from
the timings; a bad ``-j`` is a one-line usage error (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tensorplay.testing.plugin_check import resolve_jobs

from _terminal import check_on_a_terminal

EXAMPLE = ("example::rms_norm", "example::gelu", "example::add_relu_")
BUILTIN = ("tp::add", "tp::cumsum", "tp::expand", "tp::argmax")


def _cli(*args, env=None):
    env = dict(os.environ if env is None else env)
    env.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "tensorplay.cli", *args], capture_output=True,
                          text=True, env=env, timeout=600)


def _untimed(obj):
    """The JSON without its timings (``ms``, ``check_ms``)."""
    if isinstance(obj, dict):
        return {k: _untimed(v) for k, v in obj.items() if k not in ("ms", "check_ms")}
    if isinstance(obj, list):
        return [_untimed(v) for v in obj]
    return obj


# the kinds of worker -j 2 can use: the default here (forked from the loaded command) and fresh
# interpreters (what macOS, or a parent that set up a GPU, gets)
WORKERS = [None, "spawn"]


def _serial_and_parallel(tmp_path, *args, env=None, workers=None):
    out = []
    for jobs in ("1", "2"):
        path = tmp_path / f"j{jobs}.json"
        e = dict(os.environ if env is None else env)
        if workers and jobs != "1":
            e["TENSORPLAY_CHECK_WORKERS"] = workers
        p = _cli("check", *args, "-j", jobs, "--json", str(path), env=e)
        out.append((p, json.loads(path.read_text())))
    return out


@pytest.mark.parametrize("plugin, ops", [("tensorplay-example-ops", EXAMPLE),
                                         ("tensorplay-cpu", BUILTIN)])
def test_parallel_check_gives_the_serial_json(tmp_path, plugin, ops):
    (p1, s), (p2, par) = _serial_and_parallel(tmp_path, "--plugin", plugin, "--device", "cpu",
                                              *ops)
    assert p1.returncode == p2.returncode == 0, p2.stdout + p2.stderr
    assert s["samples_checked"] >= len(ops)
    assert [r["op"] for r in s["rows"]] == sorted(r["op"] for r in s["rows"])
    assert _untimed(par) == _untimed(s)
    # the footer of the slowest samples is there in both
    assert "Slowest samples:" in p2.stdout and "Slowest samples:" in p1.stdout


BAD_PACK = '''
    import pluggy
    hookimpl = pluggy.HookimplMarker("tensorplay")

    @hookimpl
    def tensorplay_register_ops(registrar):
        import tensorplay as tp
        from tensorplay import library as lib

        @lib.custom_op("parbad::badgrad", mutates_args=())
        def badgrad(x: tp.Tensor) -> tp.Tensor:
            return x * 2.0

        badgrad.register_fake(lambda x: x.new_empty(x.shape))
        badgrad.register_autograd(lambda ctx, g: g * 3.0)      # wrong: d(2x)/dx is 2

        @lib.custom_op("parbad::leaky", mutates_args=())
        def leaky(x: tp.Tensor) -> tp.Tensor:
            return x[1:]                                        # aliases its input

        leaky.register_fake(lambda x: x.new_empty((x.shape[0] - 1,) + tuple(x.shape[1:])))

        @lib.custom_op("parbad::fine", mutates_args=())
        def fine(x: tp.Tensor) -> tp.Tensor:
            return x + 1.0

        fine.register_fake(lambda x: x.new_empty(x.shape))

    @hookimpl
    def tensorplay_sample_inputs(op, device):
        import tensorplay as tp
        if op.name.startswith("parbad::"):
            # drawn from the global generator, unseeded by the hook
            return [((tp.randn(6, 3, device=device, requires_grad=True),), {}),
                    ((tp.randn(5, device=device, requires_grad=True),), {})]
        return None
'''


@pytest.mark.parametrize("workers", WORKERS)
def test_a_failing_op_fails_identically_in_parallel(tmp_path, plugin_env, workers):
    make, env = plugin_env
    make("parbad-pack", "parbad_pack", BAD_PACK)
    (p1, s), (p2, par) = _serial_and_parallel(
        tmp_path, "--plugin", "parbad-pack", "--test-utils",
        "test_schema,test_gradients,test_faketensor", env=env, workers=workers)
    assert p1.returncode == p2.returncode == 1, p1.stdout + p1.stderr
    assert any("parbad::badgrad" in f for f in s["failures"]), s["failures"]
    assert any("parbad::leaky" in f for f in s["failures"]), s["failures"]
    assert _untimed(par) == _untimed(s)
    # the human output too, but for the total time
    fails = [p.stdout.split("Failures:", 1)[1].split("Slowest samples:")[0] for p in (p1, p2)]
    assert fails[0] == fails[1] and "parbad::badgrad" in fails[0]


@pytest.mark.parametrize("bad", ["-1", "many", "1.5", ""])
def test_a_bad_jobs_value_is_a_one_line_usage_error(bad):
    p = _cli("check", "-j", bad)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "--jobs" in lines[0] and "auto" in lines[0], p.stderr
    assert p.stdout == ""


def test_resolve_jobs():
    assert resolve_jobs(1) == 1 and resolve_jobs("3") == 3
    assert 1 <= resolve_jobs("auto") <= (os.cpu_count() or 1)
    # 0 is "one per cpu", as xargs -P 0
    assert resolve_jobs(0) == resolve_jobs("0") == resolve_jobs(" Auto ") == resolve_jobs("auto")
    for bad in (-2, "x", True, 1.5, None, "-1"):
        with pytest.raises(ValueError, match="auto"):
            resolve_jobs(bad)


def test_pytest_check_items_run_under_xdist(tmp_path):
    """``pytest --tensorplay-check=PLUGIN -n 2``: one item per (op, device, kernel), the same
    collection on every xdist worker, each item's samples seeded by its case."""
    pytest.importorskip("xdist")
    (tmp_path / "test_x.py").write_text("def test_nothing():\n    pass\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                        "--tensorplay-check=example_ops", "--tensorplay-check-device=cpu"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert " passed" in p.stdout and "failed" not in p.stdout


CRASH_PACK = '''
    import os
    import signal
    import sys
    import pluggy
    hookimpl = pluggy.HookimplMarker("tensorplay")

    if sys.argv[0] == "-c" and os.environ.get("CRASHPACK_FAIL_IN_WORKER"):
        # a plugin that imports in the parent but not in a worker interpreter; each failed
        # start is also counted in a file (workers' tracebacks share one stderr and can
        # interleave character by character, so stderr cannot be counted)
        with open(os.environ["CRASHPACK_FAIL_IN_WORKER"], "a") as f:
            print("failed start", file=f)
        raise RuntimeError("crashpack cannot load here")

    @hookimpl
    def tensorplay_register_ops(registrar):
        import tensorplay as tp
        from tensorplay import library as lib

        @lib.custom_op("crashpack::boom", mutates_args=())
        def boom(x: tp.Tensor) -> tp.Tensor:
            if x.numel() > 10:
                os.kill(os.getpid(), signal.SIGSEGV)     # a kernel crashing its process
            return x + 1.0

        boom.register_fake(lambda x: x.new_empty(x.shape))

        @lib.custom_op("crashpack::quits", mutates_args=())
        def quits(x: tp.Tensor) -> tp.Tensor:
            os._exit(7)

        quits.register_fake(lambda x: x.new_empty(x.shape))

        @lib.custom_op("crashpack::fine", mutates_args=())
        def fine(x: tp.Tensor) -> tp.Tensor:
            return x * 2.0

        fine.register_fake(lambda x: x.new_empty(x.shape))

    @hookimpl
    def tensorplay_sample_inputs(op, device):
        import tensorplay as tp
        from tensorplay.plugins import SampleInput
        if op.name.startswith("crashpack::"):
            return [SampleInput((tp.ones(3, device=device),), {}, "small"),
                    SampleInput((tp.ones(4, 5, device=device),), {}, "big")]
        return None
'''

ONE_CASE = ("--test-utils", "test_schema", "--device", "cpu")


def _failure(res, op):
    hit = [f for f in res["failures"] if f.startswith(op + " ")]
    assert len(hit) == 1, res["failures"]
    return hit[0]


@pytest.mark.parametrize("workers", WORKERS)
def test_a_worker_that_dies_is_an_error_naming_op_and_sample(tmp_path, plugin_env, workers):
    """A kernel that segfaults (or exits) kills its worker: that sample is an error naming op,
    device, sample and signal; the rest is checked by a fresh worker; no hang."""
    make, env = plugin_env
    make("crashpack", "crashpack", CRASH_PACK)
    if workers:
        env["TENSORPLAY_CHECK_WORKERS"] = workers
    path = tmp_path / "out.json"
    p = _cli("check", "--plugin", "crashpack", *ONE_CASE, "-j", "2", "--json", str(path),
             env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    res = json.loads(path.read_text())
    by_op = {}
    for r in res["samples"]:
        by_op.setdefault(r["op"], []).append(r)
    # the crashed sample is the error; the samples before and after it are checked (the case
    # goes on from the next sample in a fresh worker)
    boom = {r["sample"]: r for r in by_op["crashpack::boom"]}
    assert list(boom) == ["small", "big", "derived: leading dim 0 (from small)"], boom
    assert [r["status"] for r in boom.values()] == ["passed", "error", "passed"], boom
    boom = boom["big"]
    assert boom["kernel"].endswith(".boom (plugin crashpack)"), boom    # its kernel's row
    msg = _failure(res, "crashpack::boom")
    assert msg.startswith("crashpack::boom on cpu [big]: the worker process checking "
                          "crashpack::boom on cpu died (killed by signal SIGSEGV) while "
                          "checking sample [big]"), msg
    assert "-j 1" in msg
    quits = by_op["crashpack::quits"]
    assert [r["status"] for r in quits] == ["error"] * 3, quits
    msg = [f for f in res["failures"] if f.startswith("crashpack::quits on cpu [small]")]
    assert len(msg) == 1 and "died (exit status 7) while checking sample [small]" in msg[0], msg
    # the case after the crashes is checked (by a fresh worker) and passes
    fine = by_op["crashpack::fine"]
    assert len(fine) >= 2 and all(r["status"] == "passed" for r in fine), fine
    # the human report says it too, and the crash left its Python stack on stderr
    assert "crashpack::boom on cpu [big]" in p.stdout.split("Failures:", 1)[1]
    assert "Fatal Python error" in p.stderr and "in boom" in p.stderr


def test_a_plugin_that_fails_in_the_worker_is_named(tmp_path, plugin_env):
    make, env = plugin_env
    make("crashpack", "crashpack", CRASH_PACK)
    starts = tmp_path / "failed_starts.txt"
    env["CRASHPACK_FAIL_IN_WORKER"] = str(starts)
    env["TENSORPLAY_CHECK_WORKERS"] = "spawn"      # fresh interpreters: a fork is loaded
    path = tmp_path / "out.json"
    p = _cli("check", "--plugin", "crashpack", *ONE_CASE, "-j", "2", "--json", str(path),
             env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    res = json.loads(path.read_text())
    assert [r["status"] for r in res["samples"]] == ["error"] * 3, res["samples"]
    msg = _failure(res, "crashpack::fine")
    assert "in the worker process" in msg and "crashpack cannot load here" in msg, msg
    assert "-j 1" in msg


def test_a_worker_that_cannot_start_fails_every_case_once(tmp_path, plugin_env):
    """Under --strict a plugin error kills the worker at import: each case is an error saying
    so (no worker started per case after the first failure), and the run ends."""
    make, env = plugin_env
    make("crashpack", "crashpack", CRASH_PACK)
    starts = tmp_path / "failed_starts.txt"
    env["CRASHPACK_FAIL_IN_WORKER"] = str(starts)
    env["TENSORPLAY_CHECK_WORKERS"] = "spawn"      # fresh interpreters: a fork is loaded
    path = tmp_path / "out.json"
    p = _cli("--strict", "check", "--plugin", "crashpack", *ONE_CASE, "-j", "2",
             "--json", str(path), env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    res = json.loads(path.read_text())
    assert sorted(r["op"] for r in res["samples"]) == ["crashpack::boom", "crashpack::fine",
                                                       "crashpack::quits"]
    assert all(r["status"] == "error" for r in res["samples"]), res["samples"]
    for op in ("crashpack::boom", "crashpack::fine", "crashpack::quits"):
        msg = _failure(res, op)
        assert "could not start" in msg and "-j 1" in msg, msg
    # at most one failed start per feeding thread (2), not one per case
    assert 1 <= starts.read_text().count("failed start") <= 2, p.stderr
    assert "RuntimeError" in p.stderr and "crashpack cannot load here" in p.stderr


def test_a_check_on_cpu_loads_no_other_device(tmp_path):
    """``check --device cpu`` (and ``check_plugin(..., "cpu")``) loads only the cpu backend: the
    cuda plugin's CuPy import (seconds) is not paid to learn that there is no GPU -- by the
    command nor by each of its workers."""
    import importlib.util
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed here: nothing that could be loaded needlessly")
    code = ("import sys\n"
            "from tensorplay.cli import main\n"
            "rc = main(['check', '--plugin', 'tensorplay-example-ops', '--device', 'cpu',\n"
            "           'example::gelu', '-q', '--test-utils', 'test_schema'])\n"
            "print('cupy imported' if 'cupy' in sys.modules else 'cupy not imported', rc)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600)
    assert p.stdout.strip().endswith("cupy not imported 0"), p.stdout + p.stderr


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_parallel_progress_on_a_terminal_counts_to_the_total():
    """``[n/total] op device`` on a terminal, in the serial order, under ``-j 2`` too."""
    rc, out, term = check_on_a_terminal("--plugin", "tensorplay-cpu", "--device", "cpu",
                                        "tp::tanh", "tp::mul", "tp::add",
                                        "--test-utils", "test_schema", "-j", "2")
    assert rc == 0, out + term
    at = [term.find(f"[{i}/3] tp::{op} cpu") for i, op in enumerate(("add", "mul", "tanh"), 1)]
    assert -1 not in at and at == sorted(at), term
