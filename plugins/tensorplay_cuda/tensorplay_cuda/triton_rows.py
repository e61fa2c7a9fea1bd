"""One Triton kernel per fused chain with *row reductions* (``tensorplay.compile`` on cuda): a row
softmax (``a - a.amax(-1, keepdim=True)``, ``exp``, ``e / e.sum(-1, keepdim=True)``), a layer
norm, a logsumexp, as inductor's persistent reductions do it.

Why: each reduction used to end a fused chain, so a compiled row softmax was five launches, each
with its own host cost (on an H200 host a compiled softmax over rows of 1024 cost as much as
eager, 1.6-1.8x ``torch.compile``, which makes it one kernel).

What is taken: a chain (``tensorplay._fusion``) whose steps are elementwise ops (the forms of
``triton_fusion``) and ``sum``/``mean``/``amax``/``amin`` over the last dim of a
float16/bfloat16/float32/float64 value (``keepdim=True``: later steps may use the result,
broadcast over the row; ``keepdim=False``: an output only). Per call, every input is one of:

* ``r``: the chain's full shape ``(..., C)`` (the inputs' broadcast shape), row-major dense;
* ``k``: one value per row, shape ``(..., 1)`` of the same rank, row-major dense;
* ``w``: one value per column, shape ``(C,)`` or ``(1, ..., C)``, its elements adjacent;
* ``s``: one element (a 0-d tensor, or any shape of ones).

and ``1 <= C <= MAX_COLS``, at least one row; every reduced value has the full shape and every
output the full shape or one value per row (``(..., 1)``, or ``(...)`` for ``keepdim=False``).
Anything else returns ``None``: the compiled graph
then runs the chain's ops one by one (the eager kernels), so nothing is refused here.

The kernel: one program per row; the row is one block of ``BLOCK`` (the next power of two
>= ``C``) lanes, masked; inputs are loaded once and every step computes in registers, as
``triton_fusion``'s steps do (same forms, compute types and rounding); a reduction reduces the
masked block (``sum``/``mean`` in float32, float64 for float64, rounded once to the value's
dtype; ``mean`` divides by ``C``; ``amax``/``amin`` NaN-propagating, as the eager kernels of
``reduce``) and later steps broadcast its value over the row. Summation order differs from the
eager reduction's (a tree over the lanes): values agree within float rounding, not bit for bit,
as torch's compiled and eager reductions do.

Launches as ``TritonChain``'s: Triton's launcher on a call signature's first call, then
``tensorplay_triton``'s direct CuPy launch of that compiled kernel (``_Plan``). NumPy arrays run
the very same kernel through Triton's interpreter (how CI checks the generated code).
"""

from __future__ import annotations

from tensorplay import _dtype
from tensorplay._kernels.elementwise import OPS, REDUCTIONS

from . import triton_fusion as _tf
from .reduce import NAN_COMBINE

ROW_OPS = frozenset(("sum", "mean", "amax", "amin"))
MAX_COLS = 16384      # longest row one program holds (16 warps x 32 lanes x 32 values at most)
_FLOATS = frozenset(("float16", "bfloat16", "float32", "float64"))


_REDUCE = {
    "sum": ("0.0", "tl.sum({v}, axis=0)"),
    "mean": ("0.0", "tl.sum({v}, axis=0) / C"),
    "amax": ('-float("inf")', "tl.reduce({v}, 0, _nanmax)"),
    "amin": ('float("inf")', "tl.reduce({v}, 0, _nanmin)"),
}


def is_row_expr(expr) -> bool:
    """Whether ``expr`` holds a row reduction (three arguments: value, dims, keepdim)."""
    return any(st.op in ROW_OPS and len(st.args) == 3 for st in expr.steps)


def num_warps(block: int) -> int:
    """Warps per program for rows of ``block`` lanes: 4 up to 1024, 8 up to 4096, else 16."""
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def _kind(kinds: set) -> str:
    """The kind of a step's value from its tensor operands' kinds (full ``F``, per row ``K``,
    per column ``W``, one element ``S``)."""
    if "F" in kinds or ("K" in kinds and "W" in kinds):
        return "F"
    return "K" if "K" in kinds else "W" if "W" in kinds else "S"


_MODE_KIND = {"r": "F", "k": "K", "w": "W", "s": "S"}


def _plan(expr, in_dtypes, modes, in_0d):
    """Per step ``(family, template, operands, compute dtypes, R)`` as ``triton_fusion`` plans
    them, or ``("rowred", op, operand, source dtype, R)``; and each step's kind. Raises
    ``Unsupported``."""
    kinds, step_0d, plan = [], [], []
    for j, st in enumerate(expr.steps):
        R = expr.dtypes[j]
        if st.op in ROW_OPS and len(st.args) == 3:
            kind, v = st.args[0]
            if kind == "in":
                src_kind, src_dt, e = _MODE_KIND[modes[v]], in_dtypes[v], f"x{v}"
            elif kind == "step":
                src_kind, src_dt, e = kinds[v], expr.dtypes[v], f"t{v}"
            else:
                raise _tf.Unsupported("a reduction of a constant")
            if src_kind != "F" or src_dt.name not in _FLOATS or R is not src_dt:
                raise _tf.Unsupported(f"{st.op} of a {src_kind} value of {src_dt}")
            plan.append(("rowred", st.op, e, src_dt, R))
            # keepdim=False: one value per row of another rank (an output only)
            kinds.append("K" if st.args[2][1] is True else "D")
            step_0d.append(False)
            continue
        if st.op in REDUCTIONS:
            raise _tf.Unsupported(f"full reduction {st.op} in a row chain")
        ent = OPS.get(st.op)
        if ent is None or ent.triton is None:
            raise _tf.Unsupported(f"op {st.op}")
        tmpl = _tf._template(ent, R)
        ops, ks = [], set()
        for kind, v in st.args:
            if kind == "in":
                ops.append(("in", v, in_dtypes[v], 1 if in_0d[v] else 2))
                ks.add(_MODE_KIND[modes[v]])
            elif kind == "step":
                if kinds[v] == "D":
                    raise _tf.Unsupported("a keepdim=False reduction used by another step")
                ops.append(("step", v, expr.dtypes[v], 1 if step_0d[v] else 2))
                ks.add(kinds[v])
            elif ent.family != "cast" or isinstance(v, (bool, int, float)):
                if not isinstance(v, (bool, int, float)):
                    raise _tf.Unsupported(f"constant {type(v).__name__}")
                ops.append(("const", v, _dtype.wrapped_dtype(v), 0))
        tens = [o for o in ops if o[0] != "const"]
        step_0d.append(all(o[3] == 1 for o in tens) if tens else True)
        kinds.append(_kind(ks))
        plan.append((ent.family, tmpl, ops, _tf._compute_types(ent, R, ops), R))
    for o in expr.outputs:
        if kinds[o] not in ("F", "K", "D"):
            raise _tf.Unsupported(f"an output of kind {kinds[o]}")
    return plan, kinds


def generate(expr, in_dtypes, modes, in_0d, interp=False):
    """Triton source of the row chain for these input dtypes and modes: ``(source, kernel name)``.
    Parameters: the inputs, the outputs, ``fconst`` (the float constants, float64), ``R`` (rows),
    ``flip``, ``C`` (columns), the int constants ``k<i>``, ``BLOCK`` (lanes, a power of two >=
    ``C``). ``interp`` changes only the bfloat16 rounding's spelling (``triton_fusion._TO_BF16``)."""
    plan, kinds = _plan(expr, in_dtypes, modes, in_0d)
    name = f"tp_rows_{next(_tf._counter)}"
    params = [f"in{i}" for i in range(expr.n_inputs)]
    params += [f"out{k}" for k in range(len(expr.outputs))]
    params += ["fconst", "R", "flip", "C"]
    body = ["    row = tl.program_id(0).to(tl.int64)",
            "    row = tl.abs(flip - row)",
            "    cols = tl.arange(0, BLOCK)",
            "    cmask = cols < C",
            "    base = row * C"]
    for i, m in enumerate(modes):
        ptr = {"r": f"in{i} + base + cols", "k": f"in{i} + row", "w": f"in{i} + cols",
               "s": f"in{i}"}[m]
        mask = ", mask=cmask" if m in "rw" else ""
        body.append(f"    x{i} = tl.load({ptr}{mask}{_tf._LOAD_HINT})")
    const_names: list = []
    operand = _tf.operand_speller([], [], const_names)

    for j, p in enumerate(plan):
        if p[0] != "rowred":
            body.append(f"    t{j} = {_tf._step_expr(*p, operand)}")
            continue
        _, op, e, src, R = p
        acc = "tl.float64" if src.name == "float64" else "tl.float32"
        ident, form = _REDUCE[op]
        body.append(f"    t{j} = {form.format(v=f'tl.where(cmask, {e}.to({acc}), {ident})')}")
        if R.name == "bfloat16":
            body.append(f"    t{j} = _to_bf16(t{j}.to(tl.float32))")
        else:
            body.append(f"    t{j} = t{j}.to({_tf.TL[R.name]})")
    for k, o in enumerate(expr.outputs):
        if kinds[o] == "F":
            body.append(f"    tl.store(out{k} + base + cols, t{o}, mask=cmask)")
        else:
            body.append(f"    tl.store(out{k} + row, t{o})")
    params += const_names
    params.append("BLOCK: tl.constexpr")
    dns = ", ".join(repr(n) for n in ["R", "flip", *const_names])
    src = (_tf._PRELUDE + NAN_COMBINE + _tf._TO_BF16[bool(interp)] +
           f"\n\n@_jit(do_not_specialize=[{dns}])\ndef {name}({', '.join(params)}):\n" +
           "\n".join(body) + "\n")
    return src, name


def _modes(arrays, shape):
    """Each input's mode for the full shape ``shape`` (see the module docstring), or None."""
    C = shape[-1]
    kshape = (*shape[:-1], 1)
    modes = []
    for a in arrays:
        s = a.shape
        if a.size == 1 and len(s) <= len(shape):
            modes.append("s")
        elif s == shape and a.flags.c_contiguous:
            modes.append("r")
        elif s == kshape and a.flags.c_contiguous:
            modes.append("k")
        elif s and s[-1] == C and a.size == C and len(s) <= len(shape) and \
                a.strides[-1] == a.dtype.itemsize:
            modes.append("w")
        else:
            return None
    return modes


class TritonRows(_tf.TritonChain):
    """Runs one ``ElementwiseExpr`` with row reductions as one Triton kernel:
    ``run(arrays) -> list of arrays``, or None for a call outside what the kernel takes (see the
    module docstring). Call plans on cuda as ``TritonChain``'s."""

    def __init__(self, expr, backend):
        self.expr = expr
        self.backend = backend
        self._structure = ("rows", _tf._structure(expr))
        self._bf16 = any(d is not None and d.name == "bfloat16" for d in expr.dtypes)
        for st in expr.steps:
            if st.op in ROW_OPS and len(st.args) == 3:
                continue
            if getattr(OPS.get(st.op), "triton", None) is None:
                raise _tf.Unsupported(f"op {st.op}")

    def _kernel(self, key, in_dtypes, modes, in_0d, interp):
        full = (self._structure, key)
        k = _tf._KERNELS.get(full, False)
        if k is False:
            with _tf._lock:
                k = _tf._KERNELS.get(full, False)
                if k is False:
                    try:
                        src, name = generate(self.expr, in_dtypes, modes, in_0d, interp)
                        k = (_tf._build(src, name), src)
                    except _tf.Unsupported:
                        k = None
                    _tf._KERNELS[full] = k
        return k

    def _consts(self, override=None):
        """The chain's constants (float, int) in kernel order: the elementwise steps' (a row
        reduction's dims and keepdim are its form, not arguments)."""
        f, i = [], []
        for st in self.expr.steps:
            if st.op in ROW_OPS and len(st.args) == 3:
                continue
            cast = OPS[st.op].family == "cast"
            for kind, v in st.args:
                if kind != "const" or (cast and not isinstance(v, (bool, int, float))):
                    continue
                if isinstance(v, float):
                    f.append(v)
                else:
                    i.append(int(v))
        return f, i

    def dense_launcher(self, arrays, consts=(), aligned=False):
        return None, None          # (eager's single-op path: never a row chain)

    def _run(self, arrays, consts):
        if consts is not None:
            return None
        be = self.backend
        np = be.np
        expr = self.expr
        if not arrays:
            return None
        try:
            shape = _tf._broadcast([tuple(a.shape) for a in arrays])
        except _tf.ShapeMismatch:
            # inputs of unrelated shapes (a chain of independent values; or the user's error,
            # which the ops raise one by one)
            return None
        if not shape or not 1 <= shape[-1] <= MAX_COLS:
            return None
        C = shape[-1]
        R = 1
        for d in shape[:-1]:
            R *= d
        if R == 0:
            return None
        modes = _modes(arrays, shape)
        if modes is None:
            return None
        if np.__name__ != "numpy" and not _tf._helpers_compile():
            return None
        in_dtypes = [be.dtype_of(a) for a in arrays]
        in_0d = [a.ndim == 0 for a in arrays]
        interp = self._bf16 and np.__name__ == "numpy"
        blk = 1 << max(C - 1, 0).bit_length()
        key = (tuple(in_dtypes), tuple(modes), tuple(in_0d), blk, interp)
        k = self._kernel(key, in_dtypes, modes, in_0d, interp)
        if k is None:
            return None
        kern = k[0]
        _, kinds = _plan(expr, in_dtypes, modes, in_0d)
        nd = be.native_dtype
        by_kind = {"F": shape, "K": (*shape[:-1], 1), "D": shape[:-1]}
        outs = [np.empty(by_kind[kinds[o]], dtype=nd(expr.dtypes[o])) for o in expr.outputs]
        fconsts, iconsts = self._consts(None)
        fc = self._fconst_array(fconsts, arrays)
        args = [*arrays, *outs, fc, R, _tf._next_flip(R), C, *iconsts]
        if np.__name__ == "numpy":
            _tf._launch_interpreted(kern, (R,), args, len(arrays), blk)
        else:
            compiled = _tf._launch_cuda(kern, (R,), args, arrays, blk, num_warps(blk))
            self._remember(compiled, kern, arrays, outs, args, blk, R, None)
        return outs
