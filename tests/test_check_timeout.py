"""``tensorplay check --timeout SECONDS``: a sample whose opcheck runs past the limit is an
``error`` result naming op, kernel, sample and the limit, and the check goes on -- with the next
samples of the same op and with the other ops -- giving the same results, order, exit status and
JSON serially (``-j 1``: the limit interrupts the sample in the process) and in parallel (``-j 2``:
the worker is killed and replaced), with either kind of worker (forked from the loaded command,
or a fresh interpreter). And the mechanism that makes ``-j N`` pay: forked workers do not import
and register the plugins again."""

from __future__ import annotations

import json
import time

import pytest

from test_check_parallel import _cli, _untimed

HANG_PACK = '''
    import time
    import pluggy
    hookimpl = pluggy.HookimplMarker("tensorplay")

    @hookimpl
    def tensorplay_register_ops(registrar):
        import tensorplay as tp
        from tensorplay import library as lib

        @lib.custom_op("hangpack::sleepy", mutates_args=())
        def sleepy(x: tp.Tensor) -> tp.Tensor:
            if x.numel() > 10:
                time.sleep(1000)                 # blocked in a call
            return x + 1.0

        sleepy.register_fake(lambda x: x.new_empty(x.shape))

        @lib.custom_op("hangpack::spin", mutates_args=())
        def spin(x: tp.Tensor) -> tp.Tensor:
            while x.numel() > 10:                # busy in Python
                pass
            return x * 2.0

        spin.register_fake(lambda x: x.new_empty(x.shape))

        @lib.custom_op("hangpack::stuckhook", mutates_args=())
        def stuckhook(x: tp.Tensor) -> tp.Tensor:
            return x - 1.0

        stuckhook.register_fake(lambda x: x.new_empty(x.shape))

        @lib.custom_op("hangpack::zfine", mutates_args=())
        def zfine(x: tp.Tensor) -> tp.Tensor:
            return x * 3.0

        zfine.register_fake(lambda x: x.new_empty(x.shape))

    @hookimpl
    def tensorplay_sample_inputs(op, device):
        import tensorplay as tp
        from tensorplay.plugins import SampleInput
        if op.name == "hangpack::stuckhook":
            time.sleep(1000)                     # the samples are never made
        if op.name.startswith("hangpack::"):
            return [SampleInput((tp.ones(3, device=device),), {}, "small"),
                    SampleInput((tp.ones(4, 5, device=device),), {}, "big"),
                    SampleInput((tp.ones(2, device=device),), {}, "after")]
        return None
'''

LIMIT = "3"
ARGS = ("--plugin", "hangpack", "--device", "cpu", "--test-utils", "test_schema,test_faketensor",
        "--timeout", LIMIT)


def _check(tmp_path, env, jobs, workers=None):
    env = dict(env)
    if workers:
        env["TENSORPLAY_CHECK_WORKERS"] = workers
    path = tmp_path / f"j{jobs}-{workers}.json"
    t0 = time.perf_counter()
    p = _cli("check", *ARGS, "-j", jobs, "--json", str(path), env=env)
    return p, json.loads(path.read_text()), time.perf_counter() - t0


def _by_op(res):
    out = {}
    for r in res["samples"]:
        out.setdefault(r["op"], []).append(r)
    return out


@pytest.fixture
def hang_env(plugin_env):
    make, env = plugin_env
    make("hangpack", "hangpack", HANG_PACK)
    return env


def test_a_hanging_sample_is_an_error_and_the_check_goes_on(tmp_path, hang_env):
    p, res, wall = _check(tmp_path, hang_env, "1")
    assert p.returncode == 1, p.stdout + p.stderr
    by_op = _by_op(res)
    for op in ("hangpack::sleepy", "hangpack::spin"):
        rows = by_op[op]
        # every sample of the op is reported, in order: the one that hung is an error, the
        # ones before and after it were checked
        assert [r["sample"] for r in rows] == ["small", "big", "after",
                                               "derived: leading dim 0 (from small)"], rows
        assert [r["status"] for r in rows] == ["passed", "error", "passed", "passed"], rows
        msg = [f for f in res["failures"] if f.startswith(f"{op} on cpu [big]")]
        assert len(msg) == 1, res["failures"]
        name = op.split("::")[1]
        # names op, kernel, sample and the limit, and the fix
        assert f"hangpack.{name}" in msg[0] or f".{name} (plugin hangpack)" in msg[0], msg
        assert "[big]" in msg[0] and f"{LIMIT} s" in msg[0] and "--timeout" in msg[0], msg
    stuck, = by_op["hangpack::stuckhook"]
    assert stuck["status"] == "error" and stuck["sample"] == "", stuck
    msg, = [f for f in res["failures"] if f.startswith("hangpack::stuckhook on cpu")]
    assert "sample inputs" in msg and f"{LIMIT} s" in msg and "--timeout" in msg, msg
    # the op after the hangs is checked and passes
    assert {r["status"] for r in by_op["hangpack::zfine"]} == {"passed"}, by_op
    # three limits of 3 s, not 1000 s
    assert wall < 120, wall


@pytest.mark.parametrize("workers", [None, "spawn"])
def test_a_hanging_sample_gives_the_serial_results_in_parallel(tmp_path, hang_env, workers):
    """-j 2 (forked workers by default; fresh interpreters with TENSORPLAY_CHECK_WORKERS=spawn):
    a worker past the limit is killed and replaced, the rest of its op goes on in the new
    worker; same JSON, same failures text, same exit status as -j 1."""
    p1, s, _ = _check(tmp_path, hang_env, "1")
    p2, par, wall = _check(tmp_path, hang_env, "2", workers)
    assert p1.returncode == p2.returncode == 1, p2.stdout + p2.stderr
    assert _untimed(par) == _untimed(s)
    fails = [p.stdout.split("Failures:", 1)[1].split("Slowest samples:")[0] for p in (p1, p2)]
    assert fails[0] == fails[1] and "hangpack::spin on cpu [big]" in fails[0]
    assert wall < 120, wall


def test_no_timeout_flag_validation(tmp_path):
    for bad in ("-1", "x", "nan"):
        p = _cli("check", "--timeout", bad)
        assert p.returncode == 2 and "--timeout" in p.stderr, p.stderr


COUNT_PACK = '''
    import os
    import pluggy
    hookimpl = pluggy.HookimplMarker("tensorplay")

    @hookimpl
    def tensorplay_register_ops(registrar):
        import tensorplay as tp
        from tensorplay import library as lib
        with open(os.environ["COUNTPACK_LOG"], "a") as f:
            f.write(f"{os.getpid()}\\n")

        def make(i):
            @lib.custom_op(f"countpack::op{i}", mutates_args=())
            def f(x: tp.Tensor) -> tp.Tensor:
                return x + 1.0

            f.register_fake(lambda x: x.new_empty(x.shape))
        for i in range(4):
            make(i)

    @hookimpl
    def tensorplay_sample_inputs(op, device):
        import tensorplay as tp
        if op.name.startswith("countpack::"):
            return [((tp.ones(3, device=device),), {})]
        return None
'''


def test_forked_workers_do_not_load_the_plugins_again(tmp_path, plugin_env):
    """The cost a worker used to pay before any work (import tensorplay and every plugin,
    re-running their registration): a forked worker starts from the loaded command, so each
    plugin registers its ops once, in the command's process, whatever -j is."""
    make, env = plugin_env
    make("countpack", "countpack", COUNT_PACK)
    log = tmp_path / "registrations.log"
    env["COUNTPACK_LOG"] = str(log)
    path = tmp_path / "out.json"
    p = _cli("check", "--plugin", "countpack", "--device", "cpu", "--test-utils", "test_schema",
             "-j", "2", "--json", str(path), env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(path.read_text())["samples_checked"] >= 4
    assert len(log.read_text().split()) == 1, log.read_text()


SPLIT_PACK = '''
    import os
    import time
    import pluggy
    hookimpl = pluggy.HookimplMarker("tensorplay")

    @hookimpl
    def tensorplay_register_ops(registrar):
        import tensorplay as tp
        from tensorplay import library as lib

        @lib.custom_op("splitpack::along", mutates_args=())
        def along(x: tp.Tensor) -> tp.Tensor:
            with open(os.environ["SPLITPACK_LOG"], "a") as f:
                f.write(f"{os.getpid()}\\n")
            time.sleep(0.3)
            return x + 1.0

        along.register_fake(lambda x: x.new_empty(x.shape))

        @lib.custom_op("splitpack::short", mutates_args=())
        def short(x: tp.Tensor) -> tp.Tensor:
            return x * 2.0

        short.register_fake(lambda x: x.new_empty(x.shape))

    @hookimpl
    def tensorplay_sample_inputs(op, device):
        import tensorplay as tp
        from tensorplay.plugins import SampleInput
        if op.name == "splitpack::along":
            return [SampleInput((tp.randn(2, n + 1, device=device),), {}, f"s{n}")
                    for n in range(12)]
        if op.name == "splitpack::short":
            return [SampleInput((tp.ones(3, device=device),), {}, "one")]
        return None
'''


@pytest.mark.parametrize("workers", [None, "spawn"])
def test_a_long_op_is_shared_by_idle_workers(tmp_path, plugin_env, workers):
    """An op with many samples is not left to one worker while the others idle: its remaining
    samples are split off to an idle worker (both processes check some of them), and the
    results are the serial run's, in its order."""
    make, env = plugin_env
    make("splitpack", "splitpack", SPLIT_PACK)
    out = []
    for jobs in ("1", "2"):
        log = tmp_path / f"calls-{jobs}.log"
        e = dict(env, SPLITPACK_LOG=str(log))
        if workers and jobs == "2":
            e["TENSORPLAY_CHECK_WORKERS"] = workers
        path = tmp_path / f"j{jobs}.json"
        p = _cli("check", "--plugin", "splitpack", "--device", "cpu", "--test-utils",
                 "test_schema", "-j", jobs, "--json", str(path), env=e)
        assert p.returncode == 0, p.stdout + p.stderr
        out.append((json.loads(path.read_text()), set(log.read_text().split())))
    (s, pids1), (par, pids2) = out
    assert [r["sample"] for r in s["samples"] if r["op"] == "splitpack::along"] == \
        [f"s{n}" for n in range(12)] + ["derived: leading dim 0 (from s0)"]
    assert _untimed(par) == _untimed(s)
    assert len(pids1) == 1 and len(pids2) >= 2, (pids1, pids2)


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "5", True])
def test_check_plugin_rejects_a_timeout_that_is_not_seconds(bad):
    from tensorplay.testing import check_plugin
    with pytest.raises(ValueError, match="timeout"):
        check_plugin("tensorplay-cpu", "cpu", ops=["tp::add"], timeout=bad)
