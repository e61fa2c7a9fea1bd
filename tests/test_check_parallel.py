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


def _serial_and_parallel(tmp_path, *args, env=None):
    out = []
    for jobs in ("1", "2"):
        path = tmp_path / f"j{jobs}.json"
        p = _cli("check", *args, "-j", jobs, "--json", str(path), env=env)
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


def test_a_failing_op_fails_identically_in_parallel(tmp_path, plugin_env):
    make, env = plugin_env
    make("parbad-pack", "parbad_pack", BAD_PACK)
    (p1, s), (p2, par) = _serial_and_parallel(
        tmp_path, "--plugin", "parbad-pack", "--test-utils",
        "test_schema,test_gradients,test_faketensor", env=env)
    assert p1.returncode == p2.returncode == 1, p1.stdout + p1.stderr
    assert any("parbad::badgrad" in f for f in s["failures"]), s["failures"]
    assert any("parbad::leaky" in f for f in s["failures"]), s["failures"]
    assert _untimed(par) == _untimed(s)
    # the human output too, but for the total time
    fails = [p.stdout.split("Failures:", 1)[1].split("Slowest samples:")[0] for p in (p1, p2)]
    assert fails[0] == fails[1] and "parbad::badgrad" in fails[0]


@pytest.mark.parametrize("bad", ["0", "-1", "many", "1.5", ""])
def test_a_bad_jobs_value_is_a_one_line_usage_error(bad):
    p = _cli("check", "-j", bad)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "--jobs" in lines[0] and "auto" in lines[0], p.stderr
    assert p.stdout == ""


def test_resolve_jobs():
    assert resolve_jobs(1) == 1 and resolve_jobs("3") == 3
    assert 1 <= resolve_jobs("auto") <= (os.cpu_count() or 1)
    for bad in (0, -2, "x", True, 1.5, None):
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
