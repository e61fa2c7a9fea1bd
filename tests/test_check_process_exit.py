"""``tensorplay check`` with kernels that misbehave towards the process, found by a new user:

* a kernel calling ``sys.exit(3)`` ended a serial (``-j 1``) check silently with exit status 3
  and no report, while ``-j 2`` reported the sample as an error and went on: ``SystemExit``
  raised by a kernel is now that sample's error in both, with the same JSON;
* a kernel printing to stdout corrupted ``--json -`` of a serial check (the parallel workers'
  output never reached stdout): while the check runs, stdout (Python's and file descriptor 1)
  goes to stderr, so stdout carries the JSON alone.
"""

from __future__ import annotations

import json

import pytest

from test_check_parallel import _cli, _untimed

EXIT_PACK = '''
    import os
    import sys
    import pluggy
    hookimpl = pluggy.HookimplMarker("tensorplay")

    @hookimpl
    def tensorplay_register_ops(registrar):
        import tensorplay as tp
        from tensorplay import library as lib

        @lib.custom_op("exitpack::quits", mutates_args=())
        def quits(x: tp.Tensor) -> tp.Tensor:
            if x.numel() > 10:
                sys.exit(3)
            return x + 1.0

        quits.register_fake(lambda x: x.new_empty(x.shape))

        @lib.custom_op("exitpack::talks", mutates_args=())
        def talks(x: tp.Tensor) -> tp.Tensor:
            print('{"not": "the report"}')                   # Python's stdout
            sys.stdout.flush()
            os.write(1, b"raw bytes on descriptor 1\\n")      # what a C library writes
            return x * 2.0

        talks.register_fake(lambda x: x.new_empty(x.shape))

    @hookimpl
    def tensorplay_sample_inputs(op, device):
        import tensorplay as tp
        from tensorplay.plugins import SampleInput
        if op.name.startswith("exitpack::"):
            return [SampleInput((tp.ones(3, device=device),), {}, "small"),
                    SampleInput((tp.ones(4, 5, device=device),), {}, "big"),
                    SampleInput((tp.ones(2, device=device),), {}, "after")]
        return None
'''


@pytest.fixture
def exit_env(plugin_env):
    make, env = plugin_env
    make("exitpack", "exitpack", EXIT_PACK)
    return env


def _check(env, jobs, *ops):
    return _cli("check", "--plugin", "exitpack", "--device", "cpu", "--test-utils",
                "test_schema,test_faketensor", "-j", str(jobs), "--json", "-", *ops, env=env)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_kernel_calling_sys_exit_is_that_samples_error(exit_env, jobs):
    p = _check(exit_env, jobs, "exitpack::quits")
    assert p.returncode == 1, (p.returncode, p.stdout[-500:], p.stderr[-2000:])
    data = json.loads(p.stdout)
    by = {r["sample"]: r for r in data["samples"]}
    assert by["big"]["status"] == "error", by["big"]
    said = " ".join(map(str, data["failures"]))
    assert "exitpack::quits" in said and "SystemExit: 3" in said, data["failures"]
    assert by["small"]["status"] == "passed" and by["after"]["status"] == "passed", by


def test_sys_exit_gives_the_same_json_serially_and_in_parallel(exit_env):
    one, two = _check(exit_env, 1, "exitpack::quits"), _check(exit_env, 2, "exitpack::quits")
    assert one.returncode == two.returncode == 1
    assert _untimed(json.loads(one.stdout)) == _untimed(json.loads(two.stdout))


@pytest.mark.parametrize("jobs", [1, 2])
def test_what_a_kernel_prints_never_mixes_into_json_on_stdout(exit_env, jobs):
    p = _check(exit_env, jobs, "exitpack::talks")
    assert p.returncode == 0, (p.stdout[-500:], p.stderr[-2000:])
    data = json.loads(p.stdout)                      # the whole of stdout is the report
    assert {r["status"] for r in data["samples"]} == {"passed"}
    assert "the report" in p.stderr and "raw bytes on descriptor 1" in p.stderr
