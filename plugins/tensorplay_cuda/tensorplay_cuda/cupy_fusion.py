"""The CuPy fuser: one ``cupy.ElementwiseKernel`` per fused chain of same-dtype float32/float64
arithmetic. The cuda backend's ``fuse_elementwise`` uses it when Triton (tensorplay-triton) is
not installed, or for a chain the Triton generator declines."""

from __future__ import annotations

import math

from tensorplay._kernels.elementwise import OPS
from tensorplay.backends import generic_fuser


def cupy_fuser(expr, backend):
    """One ``cupy.ElementwiseKernel`` for ``expr``, or None when the chain is not same-dtype
    float32/float64 arithmetic of ops with a CuPy form (``Pointwise.cupy`` in
    ``tensorplay._kernels.elementwise``, written to compute exactly what the reference kernels
    compute for same-dtype floating inputs). Compiled with ``--fmad=false`` so results
    match the unfused ops exactly. Scalars are kernel arguments (``T c0``...), not source text."""
    cp = backend.np
    dts = {d.name for d in expr.dtypes}
    if len(dts) != 1 or next(iter(dts)) not in ("float32", "float64"):
        return None
    dt_name = next(iter(dts))
    lines = []
    consts = []
    for j, st in enumerate(expr.steps):
        pat = getattr(OPS.get(st.op), "cupy", None)
        if pat is None:
            return None
        ops = []
        for kind, v in st.args:
            if kind == "in":
                ops.append(f"in{v}")
            elif kind == "step":
                ops.append(f"t{v}")
            else:
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    return None
                if st.op == "pow" and not -65504 <= v <= 65504:
                    # the reference kernel powers float32 at float64 past +-2^24 (an odd
                    # exponent stays odd): a float32 ``T c`` would round it
                    return None
                try:
                    c = float(v)          # an int beyond float range: decline, never raise
                except OverflowError:
                    return None
                if not math.isfinite(c):
                    return None
                ops.append(f"c{len(consts)}")
                consts.append(c)
        lines.append(f"T t{j} = {pat.format(*ops)};")
    for k, o in enumerate(expr.outputs):
        lines.append(f"out{k} = t{o};")
    in_params = ", ".join([f"T in{i}" for i in range(expr.n_inputs)] +
                          [f"T c{i}" for i in range(len(consts))])
    out_params = ", ".join(f"T out{k}" for k in range(len(expr.outputs)))
    kernel = cp.ElementwiseKernel(in_params, out_params, "\n".join(lines), "tensorplay_fused",
                                  return_tuple=True, options=("--fmad=false",))
    want = cp.dtype(dt_name)
    cvals = [want.type(c) for c in consts]
    fallback = generic_fuser(expr, backend)

    def run(arrays):
        if any(a.dtype != want for a in arrays):
            return fallback(arrays) if fallback is not None else None
        return list(kernel(*arrays, *cvals))

    run.kernel = kernel
    return run
