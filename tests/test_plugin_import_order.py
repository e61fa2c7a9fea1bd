"""A plugin module imported *before* tensorplay (``import tensorplay_cpu`` first) still loads.

When the plugin module imports ``tensorplay``, the core's entry-point loader finds that module
mid-import (its hooks not yet defined); the manager defers it and finishes it on first need.
"""

import subprocess
import sys

import pytest

CASES = {
    "device plugin first": (
        "import tensorplay_cpu, tensorplay as tp\n"
        "assert tp.zeros(2).tolist() == [0.0, 0.0]\n"
        "rec = [r for r in tp.plugins.list() if r['dist'] == 'tensorplay-cpu'][0]\n"
        "assert rec['status'] == 'loaded' and rec['devices'] == ['cpu'], rec\n"),
    "op pack first": (
        "import tensorplay_example_ops, tensorplay as tp\n"
        "y = tp.ops.example.gelu(tp.ones(2))\n"
        "assert abs(y.tolist()[0] - 0.8412) < 1e-3, y\n"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_plugin_imported_before_tensorplay_still_loads(name):
    pytest.importorskip("tensorplay_example_ops")
    r = subprocess.run([sys.executable, "-c", CASES[name]], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
