"""A second op pack, written the way a newcomer writes one from real kernels
(``tests/packs/newuser_pack``): NumPy kernels with ``register_autograd`` formulas, statistics
outputs marked non-differentiable, a formula returning ``None`` for rotary tables, a quantiser
that is not differentiable on purpose, and a Triton forward with its own Triton backward kernel.

``tensorplay check`` must pass it on cpu with no false failure, and catch each classic fault
planted in it (``NEWUSER_FAULT``), naming the op and the kernel that ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _plugin_dists import PluginEnv

PACK = Path(__file__).parent / "packs" / "newuser_pack"

EXTRA_KERNEL = '''
import numpy as np
import tensorplay as tp

def scale_add_cpu(x, y, alpha=1.0):
    # reads numel() elements from the data pointer: ignores strides
    from newuser_pack.numpy_ops import _raw_read
    flat = _raw_read(x.detach().numpy())
    return tp.from_numpy(np.ascontiguousarray(alpha * flat + y.detach().numpy()))
'''


def _env(root, fault=None, extra=False):
    env = PluginEnv(root)
    env.dist("tensorplay-newuser-pack", plugins={"newuser": "newuser_pack"})
    if extra:
        env.dist("tensorplay-newuser-extra",
                 kernels={"newuser::scale_add.cpu": "newuser_extra:scale_add_cpu"},
                 modules={"newuser_extra": EXTRA_KERNEL})
    e = dict(os.environ)
    for k in ("TENSORPLAY_PLUGINS", "TENSORPLAY_DISABLE_PLUGINS", "TENSORPLAY_STRICT_PLUGINS",
              "COLUMNS"):
        e.pop(k, None)
    e["PYTHONPATH"] = os.pathsep.join([str(root), str(PACK)]
                                      + [p for p in [os.environ.get("PYTHONPATH")] if p])
    e["TRITON_INTERPRET"] = "1"          # no GPU in CI: Triton's interpreter, tiny sizes
    if fault:
        e["NEWUSER_FAULT"] = fault
    return e


def _check(tmp_path, *args, fault=None, extra=False):
    out = tmp_path / "res.json"
    p = subprocess.run([sys.executable, "-m", "tensorplay.cli", "check", "--plugin", "newuser",
                        "--device", "cpu", "-q", "--json", str(out), *args],
                       capture_output=True, text=True, timeout=300,
                       env=_env(tmp_path, fault, extra))
    res = json.loads(out.read_text()) if out.exists() else None
    return p, res


def test_the_pack_passes_every_check_on_cpu(tmp_path):
    p, res = _check(tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert res["failures"] == [] and res["ok"]
    rows = {(r["op"], r["kernel"].split(":")[0]): r for r in res["rows"]}
    ops = {op for op, _ in rows}
    assert ops >= {"newuser::layer_norm", "newuser::scaled_softmax", "newuser::rotary",
                   "newuser::quantize", "newuser::batch_stats", "newuser::flatten"}
    # every check ran somewhere, none was failed
    for r in res["rows"]:
        assert "fail" not in r["checks"].values(), r
        assert r["checks"]["test_layouts"] == "pass", r
        assert r["checks"]["test_schema"] == "pass", r
    # outputs marked non-differentiable / None gradients from formulas: passed, not skipped
    for op in ("newuser::layer_norm", "newuser::rotary", "newuser::quantize",
               "newuser::batch_stats"):
        assert rows[(op, "cpu")]["checks"]["test_autograd_registration"] == "pass"
    # the device-agnostic kernel hidden behind the NumPy cpu kernel has its own row
    assert ("newuser::scaled_softmax", "cpu") in rows and \
        ("newuser::scaled_softmax", "default") in rows
    assert "newuser_pack.numpy_ops:scaled_softmax" in rows[("newuser::scaled_softmax",
                                                            "default")]["kernel"]


def test_the_triton_op_passes_with_its_triton_backward(tmp_path):
    pytest.importorskip("triton")
    pytest.importorskip("tensorplay_triton")
    p, res = _check(tmp_path, "newuser::scale_add")
    assert p.returncode == 0, p.stdout + p.stderr
    (row,) = res["rows"]
    assert row["kernel"].startswith("default: newuser_pack.triton_ops:scale_add")
    assert all(v == "pass" for v in row["checks"].values()), row


@pytest.mark.parametrize("fault, op, check, kernel, words", [
    ("strides", "newuser::scaled_softmax", "test_layouts",
     "cpu: newuser_pack.numpy_ops:_softmax_np (plugin tensorplay-newuser-pack)",
     "with transposed inputs (x) the result differs"),
    ("alias", "newuser::flatten", "test_schema",
     "cpu: newuser_pack.numpy_ops:flatten (plugin tensorplay-newuser-pack)",
     "output 0 shares memory with"),
    ("hidden_default", "newuser::scaled_softmax", "test_faketensor",
     "default: newuser_pack.numpy_ops:scaled_softmax (plugin tensorplay-newuser-pack)",
     "dtype tensorplay.float64 vs fake tensorplay.float32"),
    ("zero_size", "newuser::scaled_softmax", "test_schema",
     "cpu: newuser_pack.numpy_ops:_softmax_np (plugin tensorplay-newuser-pack)",
     "zero-size array"),
])
def test_each_planted_fault_is_caught(tmp_path, fault, op, check, kernel, words):
    p, res = _check(tmp_path, op, fault=fault)
    assert p.returncode == 1, p.stdout + p.stderr
    hits = [f for f in res["failures"]
            if f"opcheck({op!r}) {check} [kernel {kernel}]" in f and words in f]
    assert hits, res["failures"]
    if fault == "zero_size":     # only the derived empty-batch sample exposes it
        assert all("derived: leading dim 0" in f for f in res["failures"])


def test_a_kernel_another_plugin_registered_is_checked_under_that_plugin(tmp_path):
    p, res = _check(tmp_path, "newuser::scale_add", extra=True)
    assert p.returncode == 1, p.stdout + p.stderr
    by_kernel = {r["kernel"]: r for r in res["rows"]}
    extra = by_kernel["cpu: newuser_extra:scale_add_cpu (plugin tensorplay-newuser-extra)"]
    assert extra["plugin"] == "tensorplay-newuser-extra"
    assert extra["checks"]["test_layouts"] == "fail"
    # the pack's own (Triton) kernel, hidden on cpu by the extra kernel, is still checked: passes
    own = next(r for k, r in by_kernel.items() if k.startswith("default: newuser_pack"))
    assert own["plugin"] == "tensorplay-newuser-pack" and "fail" not in own["checks"].values()
    assert all("newuser_extra:scale_add_cpu (plugin tensorplay-newuser-extra)" in f
               for f in res["failures"])
