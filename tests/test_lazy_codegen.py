"""Time to first result: loading a backend generates no code for the built-in ops a program never
calls. Each built-in's device adapter and autograd entry is generated on that op's first call
(a stand-in sits in its dispatch table until then and puts the generated function in its place,
so the per-call path after the first call is the eager one's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import tensorplay as tp

_PROBE = r"""
import json, sys
import tensorplay as tp
BUILTINS = {n: getattr(tp.ops.tp, n) for n in dir(tp.ops.tp)}
r = (tp.ones(3) + 1).tolist()
names = lambda key: sorted(n for n, op in BUILTINS.items()
                           if getattr(op.table.get(key), "__name__", "") not in ("", "lazy_adapter",
                                                                                 "lazy_autograd"))
w = tp.ones(2, requires_grad=True)
(w * 3.0).sum().backward()
print(json.dumps({"result": r, "cpu": names("cpu"), "grad": w.grad.tolist(),
                  "autograd": names("autograd"), "numpy.random": "numpy.random" in sys.modules,
                  "n_builtins": len(BUILTINS)}))
"""


def test_first_op_generates_only_what_it_calls():
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, check=True, capture_output=True,
                         text=True).stdout.strip().splitlines()[-1]
    res = json.loads(out)
    assert res["result"] == [2.0, 2.0, 2.0] and res["grad"] == [3.0, 3.0]
    # ones, add (the first op), then mul, sum and the ops backward ran: a handful, not all ~80
    assert {"add", "mul"} <= set(res["cpu"]) and len(res["cpu"]) < 12 < res["n_builtins"]
    assert "mul" in res["autograd"] and len(res["autograd"]) < 6
    # no random numbers drawn: numpy.random not loaded. NumPy < 2 imports numpy.random with
    # numpy itself (by design); there the check is whether a bare `import numpy` loads it
    bare = subprocess.run([sys.executable, "-c", "import sys, numpy; "
                           "print('numpy.random' in sys.modules)"], env=env, check=True,
                          capture_output=True, text=True).stdout.strip() == "True"
    assert res["numpy.random"] is bare


def test_stand_ins_put_the_generated_function_in_the_table_and_come_back_after_a_rebuild():
    op = tp.ops.tp.sub
    x = tp.ones(3)
    assert (x - 1.0).tolist() == [0.0, 0.0, 0.0]
    first = op.table["cpu"]
    assert first.__name__ == "adapter"           # the generated adapter, called directly
    op._rebuild()   # private on purpose: a registration change rebuilds the table (any change)
    assert op.table["cpu"].__name__ == "lazy_adapter"
    assert (x - 2.0).tolist() == [-1.0, -1.0, -1.0]
    assert op.table["cpu"] is first              # back on the first call, not generated again
    w = tp.ones(2, requires_grad=True)
    (w - 1.0).sum().backward()
    ag = op.table["autograd"]
    assert ag.__name__ != "lazy_autograd" and w.grad.tolist() == [1.0, 1.0]
