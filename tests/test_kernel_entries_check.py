"""``tensorplay check`` imports every ``tensorplay.kernels`` entry point of the plugins it checks,
without calling it, also for devices that are not available here, and reports a dangling one
(a module the distribution does not ship, a function the module does not define)."""

from __future__ import annotations

import pytest
from _plugin_dists import PluginEnv

PACK = '''
import pluggy
hookimpl = pluggy.HookimplMarker("tensorplay")

@hookimpl
def tensorplay_register_ops(registrar):
    import tensorplay as tp
    from tensorplay import library

    @library.custom_op("dangle::scale", mutates_args=())
    def scale(x: tp.Tensor) -> tp.Tensor:
        return x * 2.0

    @scale.register_fake
    def _(x):
        return x.new_empty(x.shape)

@hookimpl
def tensorplay_sample_inputs(op, device):
    if op.name != "dangle::scale":
        return None
    import tensorplay as tp
    from tensorplay.plugins import SampleInput
    return [SampleInput((tp.randn(3, device=device),), {})]
'''

CHECK = '''
import tensorplay
from tensorplay.testing import check_plugin
res = check_plugin("tensorplay-dangle")
result([[r.op, r.device, r.status, r.message] for r in res])
'''


def _env(tmp_path, kernels, modules=None):
    env = PluginEnv(tmp_path)
    env.dist("tensorplay-dangle", plugins={"dangle": "dangle_pack"}, kernels=kernels,
             modules={"dangle_pack.__init__": PACK, **(modules or {})})
    return env


def _errors(rows):
    return [r for r in rows if r[2] == "error"]


def test_dangling_entry_points_are_reported_even_for_an_unavailable_device(tmp_path, cpu):
    env = _env(tmp_path, {
        "dangle::scale.cuda": "dangle_pack.cuda_kernels:scale",     # module never shipped
        "dangle::scale.tpu_sim": "dangle_pack.sim:nosuch",          # function not defined
    }, {"dangle_pack.sim": "def scale(x):\n    return x\n"})
    rows = env.run(CHECK).data
    errs = _errors(rows)
    msgs = "\n".join(e[3] for e in errs)
    assert len(errs) == 2, rows
    assert "'dangle::scale.cuda'" in msgs and "dangle_pack.cuda_kernels" in msgs \
        and "does not exist" in msgs, msgs
    assert "has no attribute 'nosuch'" in msgs and "pyproject.toml" in msgs, msgs
    # the op itself still ran its checks on cpu
    assert any(r[1] == "cpu" and r[2] == "passed" for r in rows), rows


def test_entry_points_that_import_are_not_reported_and_are_not_called(tmp_path, cpu):
    env = _env(tmp_path, {"dangle::scale.cuda": "dangle_pack.cuda_kernels:scale"},
               {"dangle_pack.cuda_kernels":
                "import cupy_that_is_not_installed_here  # the device's own dependency\n"
                "def scale(x):\n    raise AssertionError('called')\n"})
    rows = env.run(CHECK).data
    cuda_ok = env.run("import tensorplay\nresult(tensorplay.plugins.device_status('cuda')[0])")
    if cuda_ok.data:
        pytest.skip("cuda is available here: a missing dependency is then reported")
    assert _errors(rows) == [], rows


def test_check_cli_exits_1_on_a_dangling_entry_point(tmp_path, cpu):
    env = _env(tmp_path, {"dangle::scale.cuda": "dangle_pack.cuda_kernels:scale"})
    r = env.run('''
        import subprocess, sys
        p = subprocess.run([sys.executable, "-m", "tensorplay.cli", "check", "--plugin",
                            "tensorplay-dangle"], capture_output=True, text=True)
        result([p.returncode, p.stdout + p.stderr])
    ''').data
    assert r[0] == 1 and "dangle_pack.cuda_kernels" in r[1] and "dangling" in r[1], r[1]
