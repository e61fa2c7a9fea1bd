"""Each elementwise op's computation is stated once (``tensorplay._kernels.elementwise.OPS``) and
every fuser and eager table reads it: the Triton and CuPy fusers render the table's form, the cpu
fuser and the cuda eager table take the table's ufuncs, compile fuses exactly the table's ops.
(GPU-free: the generators are called on cpu; the CuPy fuser with a stand-in for ``cupy`` that
records the kernel source.)"""

from __future__ import annotations

import numpy as np
import pytest
import tensorplay as tp
from tensorplay import _dtype
from tensorplay._kernels.elementwise import OPS
from tensorplay.backends import ElementwiseExpr, Step

triton_fusion = pytest.importorskip("tensorplay_cuda.triton_fusion")
cupy_fusion = pytest.importorskip("tensorplay_cuda.cupy_fusion")
eager = pytest.importorskip("tensorplay_cuda.eager")
cpu_fusion = pytest.importorskip("tensorplay_cpu.fusion")


def _one_step(op, n_in, R):
    return ElementwiseExpr(n_in, (Step(op, tuple(("in", i) for i in range(n_in))),), (0,), (R,),
                           None)


@pytest.mark.parametrize("op", sorted(n for n, p in OPS.items()
                                      if p.triton and p.family == "arith"))
@pytest.mark.parametrize("dt", [_dtype.float32, _dtype.float64])
def test_the_triton_fuser_renders_the_tables_form(op, dt):
    p = OPS[op]
    form = (p.triton_f64 if dt is _dtype.float64 else None) or p.triton_float or p.triton
    src, *_ = triton_fusion.generate(_one_step(op, p.arity, dt), [dt] * p.arity,
                                     ("c",) * p.arity, 0, False)
    want = form.format(*(f"x{i}" for i in range(p.arity)))
    assert f"t0 = ({want}).to({triton_fusion.TL[dt.name]})" in src


@pytest.mark.parametrize("op", sorted(n for n, p in OPS.items() if p.family == "bitwise"))
@pytest.mark.parametrize("dt", [_dtype.int8, _dtype.uint8, _dtype.int64, _dtype.bool], ids=str)
def test_the_triton_fuser_renders_the_bitwise_forms(op, dt):
    p = OPS[op]
    if dt is _dtype.bool and "{bits}" in p.triton:
        with pytest.raises(triton_fusion.Unsupported):      # torch has no bool shifts
            triton_fusion.generate(_one_step(op, p.arity, dt), [dt] * p.arity,
                                   ("c",) * p.arity, 0, False)
        return
    src, *_ = triton_fusion.generate(_one_step(op, p.arity, dt), [dt] * p.arity,
                                     ("c",) * p.arity, 0, False)
    want = p.triton.replace("{bits}", str(8 * dt.itemsize)).format(
        *(f"x{i}" for i in range(p.arity)))
    if op == "bitwise_not" and dt is _dtype.uint8:
        # an unsigned ~x is an xor with the dtype's all-ones (Triton 3.6's interpreter cannot
        # build invert's all-ones for unsigned types under NumPy 2)
        want = "(x0 ^ tl.full([], 255, tl.uint8))"
    assert f"t0 = ({want}).to({triton_fusion.TL[dt.name]})" in src


class _Cupy:
    """Stands in for ``cupy``: records the ElementwiseKernel body."""
    dtype = staticmethod(np.dtype)
    bodies: list = []

    class ElementwiseKernel:
        def __init__(self, in_params, out_params, body, name, **kw):
            _Cupy.bodies.append(body)


class _Backend:
    np = _Cupy


@pytest.mark.parametrize("op", sorted(n for n, p in OPS.items() if p.cupy))
def test_the_cupy_fuser_renders_the_tables_form(op, monkeypatch):
    p = OPS[op]
    monkeypatch.setattr(cupy_fusion, "generic_fuser", lambda expr, be: None)
    _Cupy.bodies.clear()
    run = cupy_fusion.cupy_fuser(_one_step(op, p.arity, _dtype.float32), _Backend)
    assert run is not None
    want = p.cupy.format(*(f"in{i}" for i in range(p.arity)))
    assert _Cupy.bodies == [f"T t0 = {want};\nout0 = t0;"]


def test_ops_without_a_form_are_declined_by_the_generators():
    # pow has no Triton form (the reference kernel runs it), erf no CuPy form
    with pytest.raises(triton_fusion.Unsupported):
        triton_fusion.generate(_one_step("pow", 2, _dtype.float32), [_dtype.float32] * 2,
                               ("c", "c"), 0, False)
    assert cupy_fusion.cupy_fuser(_one_step("erf", 1, _dtype.float32), _Backend) is None


def test_the_eager_table_and_the_cpu_fuser_take_the_tables_ufuncs():
    for op, (uf, swap) in eager._UFUNC.items():
        assert (uf, swap) == (OPS[op].ufunc, OPS[op].swap)
    assert eager._SAME_DTYPE == {"add", "sub", "mul", "div", "maximum", "minimum"}
    for op, (uf, swap) in cpu_fusion._BINARY.items():
        assert (uf, swap) == (OPS[op].ufunc, OPS[op].swap) and hasattr(np, uf)
    assert set(cpu_fusion._BITWISE) == {"bitwise_and", "bitwise_or", "bitwise_xor",
                                        "bitwise_not"}
    for table in (cpu_fusion._UNARY, cpu_fusion._CMP, cpu_fusion._LOGIC, cpu_fusion._BITWISE):
        for op, uf in table.items():
            assert uf == OPS[op].ufunc and hasattr(np, uf)
    for op, steps in cpu_fusion._COMPOSITE.items():
        assert steps == OPS[op].steps and all(hasattr(np, s[0]) for s in steps)


def test_every_table_op_has_a_reference_kernel_and_is_fused_by_compile():
    from tensorplay import _fusion
    assert _fusion.FUSIBLE == frozenset(OPS)
    kernels = tp.backends.get("cpu").kernels()
    assert set(OPS) <= set(kernels)
