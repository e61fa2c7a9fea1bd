"""One Triton kernel per fused elementwise chain (``tensorplay.compile`` on cuda), generated from
one table of Triton expressions; the same generator makes the eager built-ins' large-tensor
kernels (a chain of one step).

``TritonChain(expr)`` is the callable the cuda backend's ``fuse_elementwise`` returns: it takes the
chain's input arrays (CuPy on cuda; NumPy arrays run the very same kernel through Triton's
interpreter, which is how CI checks the generated code without a GPU) and returns one array per
``expr.outputs`` entry, with the dtypes and shapes the eager ops give.

The arrays pick the mode, per launch, as everywhere in tensorplay-triton: kernels are always built
as ``JITFunction`` (``tensorplay_triton.jit``, whatever ``TRITON_INTERPRET`` says), NumPy arrays
launch through ``tensorplay_triton.wrap_triton`` -- the one interpreter path, which restores
everything Triton's interpreter patches in ``triton.language`` -- and CuPy arrays launch the
compiled kernel. Nothing here reads or sets ``TRITON_INTERPRET``.

What the generated kernel does (one program per ``BLOCK`` output elements, flat index):

* inputs are loaded in one of three modes chosen per call: ``c`` (contiguous, the output's shape:
  ``ptr + offs``), ``s`` (one element, broadcast: a single load) and ``b`` (anything else:
  broadcast and/or strided; the flat index is split over the output's dims and dotted with the
  input's strides, 0 on broadcast dims). Sizes and strides are kernel arguments;
* Python scalars of the chain are kernel arguments too: floats in a small float64 array (so a
  float64 chain keeps full precision; Triton would pass a Python float as fp32), ints and bools as
  integer arguments. Values never become source text, so a new constant never recompiles;
* each step computes as the eager kernel does: operands are cast to the step's compute type
  (float32 for float16/bfloat16 results -- torch's "opmath" -- else the result dtype; the
  promoted operand dtype for comparisons), and the result is rounded to the step's dtype before
  the next step uses it;
* a chain may end with a full ``sum``/``amax``/``amin`` reduction of its last value (``Step`` with
  op ``"sum"`` etc. and one argument): each program reduces its block in float32 (amax/amin in the
  value's type) and combines into a one-element accumulator with an atomic.

Kernels are cached per (chain, input dtypes and modes, ndim, index width): one kernel serves
both devices, except where a step rounds to bfloat16 (rounded by the GPU's conversion when
compiled, spelled out in integer ops when interpreted: ``_TO_BF16``).
Unsupported chains (``pow``, integer ``div`` by zero semantics aside, bool arithmetic, unknown
ops or dtypes) make ``TritonChain.supports(...)`` false; the caller then falls back to the CuPy
fuser. Launches on cuda go through tensorplay-triton's CuPy-backed driver (no PyTorch), on the
arrays' device and CuPy's current stream.
"""

from __future__ import annotations

import itertools
import math
import linecache
import threading

from tensorplay import _dtype
from tensorplay._kernels.elementwise import OPS, REDUCTIONS

BLOCK = 1024
NUM_WARPS = 4
# Calls whose arrays all have 2-byte elements (float16/bfloat16) take twice the elements per
# program: the same 32 bytes per thread and array as float32 at BLOCK. On an H200 the bf16 8-op
# chain went from 0.84 to 0.95 of copy bandwidth (1024 -> 2048, 4 warps; 8 warps was slower).
BLOCK_NARROW = 2048

# The ops and their Triton forms: tensorplay._kernels.elementwise (one table for every fuser and
# backend). Categories (``Pointwise.family``):
#   "arith": operands in the step's compute type, result rounded to the step's dtype
#   "cmp":   operands in their promoted dtype, result bool
#   "logic": operands tested against zero, result bool
#   "bitwise": operands in the step's (integer or bool) dtype, result of that dtype; ``{bits}``
#              in the form is that dtype's width
#   "where": {0} is the condition, {1}/{2} in the compute type
#   "cast":  to_dtype
TL = {"float16": "tl.float16", "bfloat16": "tl.bfloat16", "float32": "tl.float32",
      "float64": "tl.float64", "int8": "tl.int8", "uint8": "tl.uint8", "int16": "tl.int16",
      "int32": "tl.int32", "int64": "tl.int64", "bool": "tl.int1"}

# tanh from exp only (libdevice.tanh is not available in Triton's interpreter, and the same code
# must run in both): odd polynomial near 0 (no cancellation), (1 - e^-2|x|) / (1 + e^-2|x|) else.
# (``_jit`` is ``tensorplay_triton.jit``: a ``JITFunction`` whatever ``TRITON_INTERPRET`` says)
_PRELUDE = '''
import triton.language as tl


@_jit
def _tanh(x):
    a = tl.abs(x)
    t = tl.exp(-2.0 * a)
    big = (1.0 - t) / (1.0 + t)
    x2 = x * x
    small = x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 +
                 x2 * (62.0 / 2835.0)))))
    return tl.where(a < 0.25, small, tl.where(x < 0, -big, big))


@_jit
def _tanh_f64(x):
    # float64 (the polynomial above is float32-accurate only: 2e-9 off at 0.25):
    # tanh|x| = -m / (2 + m) with m = expm1(-2|x|), expm1 by Kahan's exp/log trick (no expm1 in
    # tl): (u - 1) * y / log(u), u = exp(y), exact for u == 1. |x| >= 22 gives 1 (the float64 tanh).
    a = tl.abs(x)
    y = -2.0 * tl.where(a < 22.0, a, 22.0)
    u = tl.exp(y)
    um1 = u - 1.0
    lu = tl.log(u)
    m = tl.where(um1 == 0.0, y, um1 * (y / tl.where(lu == 0.0, 1.0, lu)))
    r = -m / (2.0 + m)
    return tl.where(x != x, x, tl.where(x < 0, -r, r))


# negation flips the sign bit, as the cpu's -x does: -(+0.0) is -0.0 and a NaN's sign flips too
# (Triton's unary minus is 0 - x, which gives +0.0; x * -1.0, CUDA C's -x and CuPy's negative
# give the GPU's canonical, positive NaN, as torch's cuda neg does: an H100, 2026-12-06). Unsigned: Triton types the literal 0x80000000 as uint32 (a negative
# int32 literal would be the negation of an int64 2147483648, and xor would widen to int64)
@_jit
def _neg_f32(x):
    return (x.to(tl.uint32, bitcast=True) ^ 0x80000000).to(tl.float32, bitcast=True)


@_jit
def _neg_f64(x):
    return (x.to(tl.uint64, bitcast=True) ^ 0x8000000000000000).to(tl.float64, bitcast=True)
'''

# float32 -> bfloat16, round to nearest even, NaN stays NaN (what eager's rounding does).
# Compiled: Triton's own conversion, which rounds to nearest even (one cvt.rn.bf16x2.f32 per two
# values on sm_90). Interpreted: spelled out in integer ops, because Triton's interpreter
# truncates. The integer version costs ~10 instructions per value and step: on the GPU it made a
# bf16 chain compute-bound (0.38 of copy bandwidth on an H200), hence two spellings of one rule.
_TO_BF16 = {
    False: '''

@_jit
def _to_bf16(x):
    return x.to(tl.bfloat16)
''',
    True: '''

@_jit
def _to_bf16(x):
    u = x.to(tl.uint32, bitcast=True)
    r = u + 0x7FFF + ((u >> 16) & 1)
    r = tl.where(x != x, u | 0x400000, r)
    return (r >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
'''}


# Loads keep their lines in cache (evict_last) and consecutive launches walk their blocks in
# opposite directions (``flip``): a launch that starts where the previous one ended finds that
# one's last-written lines (up to the L2's size: 50 MB on an H200) still in L2 instead of DRAM.
# On an H200, 2^26 float32 elements (benchmarks/bench_gpu.py, one run): the eager 8-op chain
# 1.196 ms in order -> 1.185 alternating (torch eager 1.205), the fused chain 0.187 -> 0.183
# (torch.compile 0.189). evict_last on loads: 1.213 -> 1.200 ms eager and 0.189 -> 0.186 fused in
# hand-written equivalents; evict_first on loads was 3-4% slower, block shapes from 512 elements /
# 4 warps to 8192 / 8 changed less than 1%.
_LOAD_HINT = ', eviction_policy="evict_last"'
_FLIP = [0]


def _next_flip(programs: int) -> int:
    """The ``flip`` argument of the next launch: 0 (blocks in order) and ``programs - 1``
    (reverse order), alternately. Unlocked on purpose: threads racing on it only change which
    direction a launch takes, and both directions compute the same result."""
    f = _FLIP[0] = _FLIP[0] ^ 1
    return programs - 1 if f else 0


_lock = threading.Lock()
_KERNELS: dict = {}
_counter = itertools.count()


def _opmath(d):
    return _dtype.float32 if d.name in ("float16", "bfloat16") else d


def _wrapped(v):
    return _dtype.wrapped_dtype(v)


class Unsupported(Exception):
    """The chain (or this call's dtypes) is outside what the generator handles."""


class ShapeMismatch(ValueError):
    """The inputs do not broadcast (the caller's fallback raises the op's own error)."""


def _plan_operands(expr, in_dtypes, in_0d):
    """Per step: (category, template, operand list, compute dtypes); raises Unsupported."""
    step_dt = list(expr.dtypes)
    step_0d = []
    plan = []
    for j, st in enumerate(expr.steps):
        if st.op in REDUCTIONS:
            if j != len(expr.steps) - 1 or len(st.args) != 1 or st.args[0][0] != "step":
                raise Unsupported(f"reduction {st.op} not at the end of the chain")
            plan.append(("reduce", st.op, st.args[0][1]))
            step_0d.append(True)
            continue
        ent = OPS.get(st.op)
        if ent is None or ent.triton is None:
            raise Unsupported(f"op {st.op}")
        R = step_dt[j]
        tmpl = _template(ent, R)
        ops = []          # (kind, index or value, dtype, rank-kind)
        for kind, v in st.args:
            if kind == "in":
                ops.append(("in", v, in_dtypes[v], 1 if in_0d[v] else 2))
            elif kind == "step":
                if plan[v][0] == "reduce":
                    raise Unsupported("a reduction feeding another step")
                ops.append(("step", v, step_dt[v], 1 if step_0d[v] else 2))
            elif ent.family != "cast" or isinstance(v, (bool, int, float)):
                # (to_dtype's dtype argument is left out: it is R already); inf/nan are fine
                # as float64 arguments
                if not isinstance(v, (bool, int, float)):
                    raise Unsupported(f"constant {type(v).__name__}")
                ops.append(("const", v, _wrapped(v), 0))
        tens = [o for o in ops if o[0] != "const"]
        step_0d.append(all(o[3] == 1 for o in tens) if tens else True)
        plan.append((ent.family, tmpl, ops, _compute_types(ent, R, ops), R))
    return plan


def _template(ent, R):
    """The Triton form of op ``ent`` (a ``Pointwise``) for a step of result dtype ``R``."""
    if R.name not in TL:
        raise Unsupported(f"dtype {R}")
    if ent.name == "rdiv" and R.name in _dtype.REDUCED_FLOATS:
        # torch's s / t on float16/bfloat16 is t.reciprocal() (rounded) * s: the reference
        # kernel computes that
        raise Unsupported(f"rdiv on {R}")
    tmpl = ent.triton
    if R.is_floating_point:
        tmpl = ent.triton_float or tmpl
    if R.name == "float64":
        tmpl = ent.triton_f64 or tmpl
    if ent.family == "bitwise":
        if R.is_floating_point or (R.name == "bool" and "{bits}" in tmpl):
            raise Unsupported(f"{ent.name} on {R}")     # torch refuses: the capture raised it
        tmpl = tmpl.replace("{bits}", str(8 * R.itemsize))
        if ent.name == "bitwise_not" and R.name.startswith("uint"):
            # ~x as x ^ all-ones of the dtype: Triton 3.6's interpreter builds invert's all-ones
            # as np.full(1, -1, dtype=uint8), which NumPy 2 refuses (OverflowError; device run
            # of 2026-12-04, test_triton_chain_matches_eager); compiled, both are one xor
            tmpl = f"({{0}} ^ tl.full([], {(1 << 8 * R.itemsize) - 1}, {TL[R.name]}))"
    return tmpl


def _compute_types(ent, R, ops):
    """The dtype each operand is cast to before the step computes (None: as loaded)."""
    cat = ent.family
    if cat == "arith":
        if R.name == "bool":
            raise Unsupported("bool arithmetic")
        if ent.float_result and ent.arity == 1 and not R.is_floating_point:
            raise Unsupported(f"{ent.name} on {R}")
        return [_opmath(R)] * len(ops)
    if cat == "cmp":
        if len(ops) != 2:
            raise Unsupported(ent.name)
        p = _dtype.result_type(ops[0][2], ops[0][3], ops[1][2], ops[1][3])
        return [_opmath(p)] * 2
    if cat == "logic":
        return [None] * len(ops)
    if cat == "bitwise":       # (R: integer or bool, _template checked it)
        return [R] * len(ops)
    if cat == "where":
        if len(ops) != 3:
            raise Unsupported("where")
        return [None, _opmath(R), _opmath(R)]
    if len(ops) != 1:     # cast
        raise Unsupported("to_dtype")
    return [None]


def generate(expr, in_dtypes, modes, ndim, wide, interp=False, general=False):
    """Triton source of the chain for these input dtypes/modes; returns (source, kernel name,
    list of float-constant values in order, list of int-constant values in order). ``interp``
    (the kernel will run in Triton's interpreter) changes only how a float32 value is rounded to
    bfloat16 (``_TO_BF16``); every other line is the same source interpreted and compiled.
    ``general``: float constants are float32 kernel arguments ``f<i>`` after the int ones (a chain
    with float64 steps and a float constant is ``Unsupported`` there), for the kernels
    ``TritonChain.dense_launcher`` launches without Triton's launcher. ``True``: decorated so that
    Triton compiles one kernel for every element count and address (``N`` and the pointers not
    specialised: no ``N == 1`` constant, no 16-byte alignment assumed). ``"aligned"``: ``N`` and
    the pointers specialised as usual, so that a launch with 16-byte aligned addresses and
    ``N % 16 == 0`` compiles the vectorised kernel (128-bit loads and stores) that large arrays
    need to reach the copy bandwidth; its launches must keep those properties."""
    in_0d = [m == "s" for m in modes]
    plan = _plan_operands(expr, in_dtypes, in_0d)
    if general and any(isinstance(v, float) for st in expr.steps for k, v in st.args
                       if k == "const") and any(
            d is not None and d.name == "float64" for d in [*expr.dtypes, *in_dtypes]):
        # general kernels take float constants as float32 arguments (the value rounded as a
        # float32 step computes with it); a float64 chain needs them in float64 (fconst)
        raise Unsupported("a float constant in a float64 general kernel")
    name = f"tp_chain_{next(_counter)}"
    n_in = expr.n_inputs
    reduce_step = plan[-1] if plan and plan[-1][0] == "reduce" else None
    outs = [] if reduce_step is not None else list(expr.outputs)
    params = [f"in{i}" for i in range(n_in)]
    params += [f"out{k}" for k in range(len(outs))]
    if reduce_step is not None:
        params.append("acc")
    params += ["fconst", "N", "flip"]
    iconsts, fconsts = [], []
    body = []
    body.append("    pid = tl.program_id(0)" + (".to(tl.int64)" if wide else ""))
    # flip = 0: program p takes block p; flip = programs - 1: block flip - p (the launcher
    # alternates, see _next_flip)
    body.append("    pid = tl.abs(flip - pid)")
    body.append("    offs = pid * BLOCK + tl.arange(0, BLOCK)")
    body.append("    mask = offs < N")
    if any(m == "b" for m in modes):
        params += [f"size{d}" for d in range(ndim)]
        # split the flat output index over the output's dims once, shared by every "b" input
        body.append("    rem = offs")
        for d in range(ndim - 1, -1, -1):
            body.append(f"    i{d} = rem % size{d}")
            if d:
                body.append(f"    rem = rem // size{d}")
    for i, m in enumerate(modes):
        if m == "c":
            body.append(f"    x{i} = tl.load(in{i} + offs, mask=mask{_LOAD_HINT})")
        elif m == "s":
            body.append(f"    x{i} = tl.load(in{i})")
        else:
            params += [f"st{i}_{d}" for d in range(ndim)]
            idx = " + ".join(f"i{d} * st{i}_{d}" for d in range(ndim))
            body.append(f"    x{i} = tl.load(in{i} + ({idx}), mask=mask{_LOAD_HINT})")
    const_names: list = []
    operand = operand_speller(iconsts, fconsts, const_names, general)

    for j, p in enumerate(plan):
        if p[0] == "reduce":
            body += _reduce_lines(p[1], expr.dtypes[j], f"t{p[2]}", expr.dtypes[p[2]])
            continue
        ops = p[2]
        e = _step_expr(*p, operand)
        body.append(f"    t{j} = {e}")
        # scalar-only steps give scalars; broadcast so stores and reductions see a block
        if all(o[0] == "const" or (o[0] == "in" and modes[o[1]] == "s") or
               (o[0] == "step" and _scalar_step(plan, o[1], modes)) for o in ops):
            body.append(f"    t{j} = tl.broadcast_to(t{j}, [BLOCK])")
    for k, o in enumerate(outs):
        body.append(f"    tl.store(out{k} + offs, t{o}, mask=mask)")
    params += const_names
    params.append("BLOCK: tl.constexpr")
    dns = ", ".join(repr(n) for n in const_names + ["flip"] + (["N"] if general is True else []) +
                    [p for p in params if p.startswith(("size", "st"))])
    deco = f"@_jit(do_not_specialize=[{dns}])"
    if general is True:
        ptrs = ", ".join(repr(p) for p in params if p.startswith(("in", "out", "acc", "fconst")))
        deco = f"@_jit(do_not_specialize=[{dns}], do_not_specialize_on_alignment=[{ptrs}])"
    src = (_PRELUDE + _TO_BF16[bool(interp)] + f"\n\n{deco}\ndef {name}({', '.join(params)}):\n" +
           "\n".join(body) + "\n")
    return src, name, fconsts, iconsts


def operand_speller(iconsts, fconsts, const_names, general=False):
    """``operand(o, ct)``: the Triton spelling of a planned step operand ``o`` (``("in", i, ...)``
    -> ``x<i>``, ``("step", j, ...)`` -> ``t<j>``, a constant) cast to ``ct`` (``None``: as is).
    A constant's value never enters the source: an int becomes kernel argument ``k<n>`` (its
    value appended to ``iconsts``, its name to ``const_names``), a float a load from the
    ``fconst`` array (value appended to ``fconsts``) or, with ``general``, float32 argument
    ``f<n>`` (named in ``const_names``). Shared by the chain and row-chain generators."""
    def operand(o, ct):
        kind, v, dt, _ = o
        if kind == "in":
            e = f"x{v}"
        elif kind == "step":
            e = f"t{v}"
        else:
            if isinstance(v, float) and general:
                # a float32 kernel argument (the step computes in float32: see generate)
                nm = f"f{len(fconsts)}"
                fconsts.append(float(v))
                const_names.append(nm)
                e = nm
            elif isinstance(v, float):
                e = f"tl.load(fconst + {len(fconsts)})"
                fconsts.append(float(v))
            else:
                nm = f"k{len(iconsts)}"
                iconsts.append(int(v))
                const_names.append(nm)
                e = nm
            if ct is None:
                return e
            return f"({e}).to({TL[ct.name]})"
        if ct is None or dt is ct:
            return e
        return f"{e}.to({TL[ct.name]})"
    return operand


def _reduce_lines(op, R, v, srcdt):
    """The lines reducing a block of value ``v`` (dtype ``srcdt``) into the accumulator ``acc``
    of the chain's last step ``op`` (result dtype ``R``)."""
    red = REDUCTIONS[op]
    if op == "sum":       # accumulated in float32 (float64), int64 for integers
        acc_t = "tl.float64" if R.name == "float64" else (
            "tl.float32" if R.is_floating_point else "tl.int64")
        v = f"{v}.to({acc_t})"
    elif not srcdt.is_floating_point or srcdt.name in ("float16", "bfloat16"):
        raise Unsupported(f"{op} over {srcdt}")
    return [f"    r = {red.triton}(tl.where(mask, {v}, {red.triton_identity}), axis=0)",
            f"    tl.{red.atomic}(acc, r)"]


def _step_expr(cat, tmpl, ops, cts, R, operand):
    """The Triton expression of a planned step: its form over the operands (``operand(o, ct)``
    spells operand ``o`` cast to ``ct``), rounded to the step's dtype ``R``."""
    if cat == "logic":
        args = [f"({operand(o, None)} != 0)" for o in ops]
    elif cat == "where":
        args = [f"({operand(ops[0], None)} != 0)"] + [operand(o, c) for o, c in
                                                     zip(ops[1:], cts[1:])]
    else:
        args = [operand(o, c) for o, c in zip(ops, cts)]
    e = tmpl.format(*args)
    if cat == "cast" and R.name == "bool":
        e = f"({e} != 0)"
    if cat in ("arith", "where", "cast", "bitwise"):
        # round to the step's dtype; float32 -> float16/bfloat16 rounds to nearest even, as
        # eager does (said explicitly: Triton's interpreter would truncate otherwise)
        src_f32 = (cat != "cast" and _opmath(R) is not R) or \
            (cat == "cast" and ops[0][2] is _dtype.float32)
        if src_f32 and R.name == "bfloat16":
            e = f"_to_bf16(({e}).to(tl.float32))"
        else:
            e = f"({e}).to({TL[R.name]})"
    return e


def _scalar_step(plan, j, modes):
    p = plan[j]
    if p[0] == "reduce":
        return False
    for o in p[2]:
        if o[0] == "in" and modes[o[1]] != "s":
            return False
        if o[0] == "step" and not _scalar_step(plan, o[1], modes):
            return False
    return True


def _build(src, name):
    fn = f"<tensorplay-fused {name}>"
    # Triton reads a kernel's source back (inspect.getsource): register it with linecache
    linecache.cache[fn] = (len(src), None, src.splitlines(True), fn)
    from tensorplay_triton import jit
    ns: dict = {"__name__": f"tensorplay_cuda._fused.{name}", "_jit": jit}
    exec(compile(src, fn, "exec"), ns)
    return ns[name]


class TritonChain:
    """Runs one ``ElementwiseExpr`` as one Triton kernel. ``run(arrays) -> list of arrays``."""

    def __init__(self, expr, backend):
        self.expr = expr
        self.backend = backend
        self._structure = _structure(expr)
        self._bf16 = any(d is not None and d.name == "bfloat16" for d in expr.dtypes)
        # fail early (at compile time, not per call) on ops the table lacks
        for st in expr.steps:
            if getattr(OPS.get(st.op), "triton", None) is None and st.op not in REDUCTIONS:
                raise Unsupported(f"op {st.op}")

    def _kernel(self, key, in_dtypes, modes, ndim, wide, interp=False, general=False):
        """(kernel, source) for this call signature, or None when unsupported (cached either way;
        kernels are shared by every chain of the same structure, whatever its constant values)."""
        full = (self._structure, key, general)
        k = _KERNELS.get(full, False)
        if k is False:
            with _lock:
                k = _KERNELS.get(full, False)
                if k is False:
                    try:
                        src, name, _, _ = generate(self.expr, in_dtypes, modes, ndim, wide,
                                                   interp, general)
                        k = (_build(src, name), src)
                    except Unsupported:
                        k = None
                    _KERNELS[full] = k
        return k

    def __call__(self, arrays):
        return self.run(arrays)

    def dense_launcher(self, arrays, consts=(), aligned=False, modes=None):
        """The chain on ``arrays`` -- CuPy arrays of one shape, each row-major dense, on the current
        device, fewer than ``2**31 - BLOCK_NARROW`` elements; a chain of one output and no
        reduction -- with its constants' values ``consts`` (Python numbers, in the order they
        appear in the steps; ints within int32), and how to run it again on such arrays of the
        same dtypes on this device with one driver call: returns ``(output array, launch)``,
        ``launch(*addresses, n, *consts)`` taking the inputs' and a fresh output's addresses, the
        element count (> 0) and the constants' values (of the same types).

        The kernel is the chain's own generated source with float constants as float32 arguments
        (``generate(..., general=...)``: a chain with float64 steps and a float constant is
        declined). ``aligned=False``: compiled for every element count, address and constant
        value, and every launch walks its blocks in order. ``aligned=True`` (large arrays): the
        caller guarantees every address of this call and of each ``launch`` 16-byte aligned (the
        output's too) and ``n % 16 == 0`` and ``n > 1``; the kernel is compiled for that
        (vectorised loads and stores), and launches alternate their blocks' direction as the
        chain's own do (``_next_flip``). The first launch goes through Triton (compile, cache),
        later ones through ``tensorplay_triton``'s CuPy launch. ``launch`` is None when this
        Triton release or the compiled kernel is not one that launch path takes (then the output
        came from Triton's launcher, and the caller should keep its other path); the output is
        None (nothing launched) when the generator declines these dtypes or constants.
        Launches also have ``launch.call`` (``_dense_call``): the same launch from the arrays,
        allocating the output (aligned: None when that output is not 16-byte aligned, nothing
        launched) -- or None where it cannot be built, or where the output's shape is not the
        first array's.

        ``modes``: each array's load mode, ``"c"`` (the default: the output's shape, row-major)
        or ``"s"`` (one element, read once at the array's address: a 0-d array, or an array
        whose strides are all 0 -- a broadcast of one element, whose address is that element's).
        The output has the shape of the first ``"c"`` array, or of the first array when every
        one is ``"s"`` (then a broadcast of the output's shape: ``g.expand(n) / n``, the mean's
        gradient, computes one value and stores it ``n`` times, one launch)."""
        be = self.backend
        np = be.np
        expr = self.expr
        consts = list(consts)
        n_const = sum(k == "const" and isinstance(v, (bool, int, float))
                      for st in expr.steps for k, v in st.args)
        if len(expr.outputs) != 1 or expr.steps[-1].op in REDUCTIONS or n_const != len(consts) \
                or any(c.__class__ is int and not -0x80000000 <= c <= 0x7FFFFFFF for c in consts):
            return None, None
        in_dtypes = [be.dtype_of(a) for a in arrays]
        if modes is None:
            modes = ("c",) * len(arrays)
        else:
            modes = tuple(modes)
            if len(modes) != len(arrays) or any(m not in ("c", "s") for m in modes):
                raise ValueError(f"dense_launcher: modes {modes!r} for {len(arrays)} arrays")
        shape_of = arrays[modes.index("c")] if "c" in modes else arrays[0]
        general = "aligned" if aligned else True
        k = self._kernel((tuple(in_dtypes), modes, 0, False, False), in_dtypes, modes, 0, False,
                         general=general)
        if k is None or not _helpers_compile():
            return None, None
        kern = k[0]
        out = np.empty(shape_of.shape, dtype=be.native_dtype(expr.dtypes[expr.outputs[0]]))
        n = out.size
        if aligned and out.data.ptr & 15:
            return None, None                 # an allocator without CuPy's 512-byte alignment
        fc = self._fconst_array([], arrays)
        blk = BLOCK_NARROW if all(a.dtype.itemsize <= 2 for a in [*arrays, out]) else BLOCK
        if n == 0:
            return out, None
        grid = (n + blk - 1) // blk
        args = [*arrays, out, fc, n, _next_flip(grid) if aligned else 0, *consts]
        compiled = _launch_cuda(kern, (grid,), args, arrays, blk)
        from tensorplay_triton import _cupylaunch, _wrap
        if not _wrap._direct_setup():
            return out, None                  # a Triton release that launch path was not checked on
        idx = np.cuda.runtime.getDevice()
        d = _cupylaunch.make_direct(compiled, idx, kern, len(args), {"BLOCK": blk})
        if not isinstance(d, _cupylaunch.Direct):
            return out, None
        go, fcp, n_in = d.go, fc.data.ptr, len(arrays)
        if aligned and n_in == 2 and not consts:
            # large arrays: blocks in alternating order, as the chain's own launches (_next_flip
            # is shared with them: eager ops and chains alternate together); the eager ops'
            # arities spelled out (no argument tuple to slice: at 2^22 elements the host is
            # the bound)
            def launch(p0, p1, po, n):
                g = (n + blk - 1) // blk
                go((p0, p1, po, fcp, n, _next_flip(g)), g, 1, 1)
        elif aligned and n_in == 1 and not consts:
            def launch(p0, po, n):
                g = (n + blk - 1) // blk
                go((p0, po, fcp, n, _next_flip(g)), g, 1, 1)
        elif aligned and n_in == 1 and len(consts) == 1:
            def launch(p0, po, n, c):
                g = (n + blk - 1) // blk
                go((p0, po, fcp, n, _next_flip(g), c), g, 1, 1)
        elif aligned:
            def launch(*a):
                n = a[n_in + 1]
                g = (n + blk - 1) // blk
                go((*a[:n_in + 1], fcp, n, _next_flip(g), *a[n_in + 2:]), g, 1, 1)
        elif n_in == 1 and not consts:
            def launch(p0, po, n):
                go((p0, po, fcp, n, 0), (n + blk - 1) // blk, 1, 1)
        elif n_in == 2 and not consts:
            def launch(p0, p1, po, n):
                go((p0, p1, po, fcp, n, 0), (n + blk - 1) // blk, 1, 1)
        elif n_in == 1 and len(consts) == 1:
            def launch(p0, po, n, c):
                go((p0, po, fcp, n, 0, c), (n + blk - 1) // blk, 1, 1)
        else:
            def launch(*a):
                n = a[n_in + 1]
                go((*a[:n_in + 1], fcp, n, 0, *a[n_in + 2:]), (n + blk - 1) // blk, 1, 1)
        launch.direct = d                     # keeps the kernel's module and constants alive
        launch.fconst = fc
        # (the call allocates the first array's shape: not where a 0-d operand comes first)
        launch.call = _dense_call(d, np.ndarray, out.dtype, n_in, consts, fc, blk, aligned) \
            if arrays[0].shape == out.shape else None
        return out, launch

    def run(self, arrays, consts=None):
        """Outputs of the chain for ``arrays`` (list), or None when this call's dtypes or layout
        are outside the generator (the caller falls back). ``consts`` overrides the chain's
        constant values (same order and types), as the eager path does. On cuda, outputs are
        allocated and the kernel launched on the first input's GPU.

        On cuda, a call with the chain's own constants whose arrays have the shapes, strides and
        dtypes of an earlier call on the current device replays that call's plan (``_Plan``): the
        outputs allocated and the compiled kernel launched with one driver call, without Triton's
        launcher (which re-derives the specialisation from every argument on every call)."""
        np = self.backend.np
        if np.__name__ != "numpy" and arrays:
            if consts is None:
                plans = self._plans
                if plans:
                    dev = arrays[0].data.device_id
                    if len(arrays) == 2:      # (the eager binary ops': the key without a loop)
                        a, b = arrays
                        key = (dev, a.shape, a.strides, a.dtype, a.data.ptr & 15,
                               b.shape, b.strides, b.dtype, b.data.ptr & 15)
                    else:
                        key = [dev]
                        for a in arrays:
                            key += (a.shape, a.strides, a.dtype, a.data.ptr & 15)
                        key = tuple(key)
                    p = plans.get(key)
                    if p is not None and dev == _getdev():
                        r = p.call(arrays)
                        if r is not None:
                            return r
            with np.cuda.Device(arrays[0].device.id):
                return self._run(arrays, consts)
        return self._run(arrays, consts)

    def _run(self, arrays, consts):
        be = self.backend
        expr = self.expr
        np = be.np
        shapes = [tuple(a.shape) for a in arrays]
        out_shape = _broadcast(shapes)
        n = 1
        for s in out_shape:
            n *= s
        in_dtypes = [be.dtype_of(a) for a in arrays]
        modes = []
        for a, s in zip(arrays, shapes):
            if a.size == 1:
                modes.append("s")
            elif s == out_shape and a.flags.c_contiguous:
                modes.append("c")
            else:
                modes.append("b")
        ndim = len(out_shape) if "b" in modes else 0
        wide = n >= 2 ** 31 - max(BLOCK, BLOCK_NARROW)
        if np.__name__ != "numpy" and not _helpers_compile():
            return None     # Triton's tl.sum & co. cannot compile in this process: decline
        # bf16 rounding is spelled per mode (_TO_BF16): only such chains get a kernel per mode
        interp = self._bf16 and np.__name__ == "numpy"
        key = (tuple(in_dtypes), tuple(modes), ndim, wide, interp)
        k = self._kernel(key, in_dtypes, modes, ndim, wide, interp)
        if k is None:
            return None                       # this call's dtypes/layout: caller falls back
        kern = k[0]
        fconsts, iconsts = self._consts(consts)
        reduce_op = expr.steps[-1].op if expr.steps[-1].op in REDUCTIONS else None
        nd = be.native_dtype
        if reduce_op is None:
            outs = [np.empty(out_shape, dtype=nd(expr.dtypes[o])) for o in expr.outputs]
        else:
            outs = []
            R = expr.dtypes[-1]
            acc_dt = (_dtype.float64 if R.name == "float64" else _dtype.float32) \
                if R.is_floating_point else _dtype.int64
            if reduce_op != "sum":     # amax/amin: in the value's own type
                acc_dt = expr.dtypes[expr.steps[-1].args[0][1]]
            acc = np.full((), REDUCTIONS[reduce_op].identity, dtype=nd(acc_dt))
        if n == 0:
            if reduce_op is not None:
                return [acc.astype(nd(expr.dtypes[-1]))]
            return outs
        extra = []
        if ndim:
            extra += list(out_shape)
            for a, m in zip(arrays, modes):
                if m == "b":
                    extra += _bstrides(a, out_shape)
        fc = self._fconst_array(fconsts, arrays)
        blk = BLOCK
        if all(a.dtype.itemsize <= 2 for a in arrays) and all(o.dtype.itemsize <= 2 for o in outs):
            blk = BLOCK_NARROW
        grid = ((n + blk - 1) // blk,)
        # a chain ending in a reduction adds its blocks' partial results in launch order: in
        # order always, so that the same inputs give the same bits (in Triton's interpreter)
        flip = 0 if reduce_op is not None else _next_flip(grid[0])
        args = list(arrays) + outs + ([acc] if reduce_op is not None else []) + \
            [fc, n, flip] + extra + iconsts
        if np.__name__ == "numpy":
            _launch_interpreted(kern, grid, args, len(arrays), blk)
        else:
            compiled = _launch_cuda(kern, grid, args, arrays, blk)
            if consts is None:
                self._remember(compiled, kern, arrays, outs, args, blk, grid[0], None if
                               reduce_op is None else (acc.dtype, REDUCTIONS[reduce_op].identity,
                                                       nd(expr.dtypes[-1])))
        if reduce_op is not None:
            return [acc.astype(nd(expr.dtypes[-1]))]
        return outs

    def _remember(self, compiled, kern, arrays, outs, args, blk, grid, acc):
        """Keep a ``_Plan`` for calls like this one (same device, shapes, strides, dtypes; the
        chain's own constants). Nothing is kept when the kernel is not one
        ``tensorplay_triton``'s direct launch takes; later calls then keep Triton's launcher."""
        from tensorplay_triton import _cupylaunch, _wrap
        if not _wrap._direct_setup():
            return
        dev = arrays[0].data.device_id     # the current device here (run's Device block)
        d = _cupylaunch.make_direct(compiled, dev, kern, len(args), {"BLOCK": blk})
        if not isinstance(d, _cupylaunch.Direct):
            return
        # the key holds each input's 16-byte alignment too: Triton specialises on it, so two
        # alignments of one signature keep two plans (no reloading the kernel back and forth)
        key = [dev]
        for a in arrays:
            key += (a.shape, a.strides, a.dtype, a.data.ptr & 15)
        plans = self.__dict__.setdefault("_plans", {})
        if len(plans) >= _MAX_PLANS:
            plans.clear()
        plans[tuple(key)] = _Plan(d, self.backend.np, arrays, outs, args, grid, acc)

    _plans: dict = {}        # per instance once a plan is kept (the class's stays empty)

    def _consts(self, override=None):
        f, i = [], []
        if override is not None:
            for v in override:
                (f if isinstance(v, float) else i).append(v if isinstance(v, float) else int(v))
            return f, i
        for st in self.expr.steps:
            cat = OPS[st.op].family if st.op in OPS else "reduce"
            for kind, v in st.args:
                if kind != "const":
                    continue
                if cat == "cast" and not isinstance(v, (bool, int, float)):
                    continue
                if isinstance(v, float):
                    f.append(v)
                else:
                    i.append(int(v))
        return f, i

    _fc_cache: dict

    def _fconst_array(self, fconsts, arrays):
        np = self.backend.np
        vals = tuple(fconsts) or (0.0,)
        # 0.0 == -0.0 (one hash, one key): a zero's sign is part of the key, or a chain run with
        # -0.0 after 0.0 (clamp(x, max=-0.0) after max=0.0) would read the first one's array
        zsign = tuple(math.copysign(1.0, v) for v in vals) if 0.0 in vals else None
        key = (np.__name__, vals, zsign,
               getattr(getattr(arrays[0], "device", None), "id", 0) if arrays else 0)
        cache = self.__dict__.setdefault("_fc_cache", {})
        a = cache.get(key)
        if a is None:
            a = np.asarray(list(fconsts) or [0.0], dtype=np.float64)
            if len(cache) > 64:
                cache.clear()
            cache[key] = a
        return a


_MAX_PLANS = 64            # per chain: call signatures whose launch is kept


class _Plan:
    """One call signature of a chain on cuda, launched again without Triton's launcher.

    Built from a call that Triton launched (and so compiled for): the kernel's arguments are the
    same on every call of the signature except the arrays' addresses (and ``flip``, which
    alternates as ``_next_flip`` says): the element count, sizes, strides and constants are
    fixed by the key (device, shapes, strides, dtypes), so Triton's specialisation of them is
    too. Triton also specialises a pointer on its 16-byte alignment: a call whose addresses
    differ in that from the recorded call's returns None (the caller takes Triton's launcher,
    which compiles that specialisation if needed)."""

    __slots__ = ("acc", "align", "call", "direct", "fc", "go", "grid", "np", "outs", "tail")

    def __init__(self, direct, np, arrays, outs, args, grid, acc):
        self.direct = direct                 # keeps the loaded module alive
        self.go = direct.go
        self.np = np
        self.outs = [(o.shape, o.dtype) for o in outs]
        ptrs = [a.data.ptr for a in [*arrays, *outs]]
        k = len(ptrs)
        self.acc = acc                       # (dtype, identity, result dtype) or None
        if acc is not None:
            ptrs.append(args[k].data.ptr)
            k += 1
        self.align = tuple(not p & 15 for p in ptrs)
        self.fc = fc = args[k]               # the float constants' array, kept alive here
        # the arguments after the pointers: fconst, N, flip, then sizes, strides, int constants
        self.tail = (fc.data.ptr, args[k + 1], tuple(args[k + 3:]))
        self.grid = grid
        # what TritonChain.run calls: the same launch in one generated function (_plan_call)
        self.call = self._generic if acc is not None else _plan_call(self, len(arrays))

    def __call__(self, arrays):
        return self.call(arrays)

    def _generic(self, arrays):
        np = self.np
        outs = [np.empty(shape, dtype=dt) for shape, dt in self.outs]
        ptrs = [a.data.ptr for a in arrays]
        ptrs += [o.data.ptr for o in outs]
        acc = self.acc
        if acc is not None:
            a = np.full((), acc[1], dtype=acc[0])
            ptrs.append(a.data.ptr)
        for p, al in zip(ptrs, self.align):
            if (not p & 15) is not al:
                return None
        fcp, n, rest = self.tail
        g = self.grid
        args = (*ptrs, fcp, n, 0 if acc is not None else _next_flip(g), *rest)
        # (a reduction adds its blocks' partial results in launch order: in order always)
        try:
            self.go(args, g, 1, 1)
        except Exception:  # noqa: BLE001 - retried once below, else raised
            # a thread whose first CUDA work this is has no current context: cuLaunchKernel
            # fails (CUDA_ERROR_INVALID_CONTEXT) until a runtime call makes the device's
            # primary context current, which cudaSetDevice does
            from cupy.cuda import runtime
            runtime.setDevice(arrays[0].data.device_id)
            self.go(args, g, 1, 1)
        if acc is None:
            return outs
        return [a.astype(acc[2])]


def _plan_call(plan, n_in):
    """``call(arrays)``: ``plan``'s launch (a chain without a reduction) as one generated function
    -- the inputs' addresses read and tested against the recorded 16-byte alignments, each
    output allocated by ``fresh.route``'s two steps where they apply (``cupy.ndarray``'s
    constructor otherwise; ``np.empty``'s array either way) and tested so, the blocks' direction
    alternated as ``_next_flip`` does (its state), and one ``go`` -- what ``_Plan._generic`` does
    through lists, a ``zip`` and ``np.empty``. Same arguments, same launch, same None (nothing
    launched) on another alignment. Why: a broadcast operand (``g.unsqueeze(1).expand(R, C)
    * exp(x)``, the backward of a log-sum-exp) takes the chain's plan on every call, whose host
    time is the step's when the GPU work is short (4096x4096 float32 on an H100)."""
    np = plan.np
    nd = np.ndarray
    from .fresh import dtype_arg, route_for
    fresh = route_for(nd)
    g = {"GO": plan.go, "FLIPS": _FLIP, "ND": nd, "PLAN": plan}
    ins = [f"a{i}" for i in range(n_in)]
    lines = ["def call(arrays):", f"    {', '.join(ins)}{',' if n_in == 1 else ''} = arrays"]
    ptrs = []
    for i, al in enumerate(plan.align):
        if i < n_in:
            lines.append(f"    p{i} = a{i}.data.ptr")
        else:
            k = i - n_in
            shape, dt = plan.outs[k]
            g[f"SHAPE{k}"], g[f"DT{k}"] = shape, dt
            if fresh is not None:
                g.update(NEW=fresh[0], INIT=fresh[1])
                g[f"DTA{k}"] = dtype_arg(*fresh, nd, dt)
                lines += [f"    r{k} = NEW(ND)", f"    INIT(r{k}, SHAPE{k}, DTA{k}, None, None, None)"]
            else:
                lines.append(f"    r{k} = ND(SHAPE{k}, DT{k})")
            lines.append(f"    p{i} = r{k}.data.ptr")
        lines += [f"    if {'' if al else 'not '}p{i} & 15:", "        return None"]
        ptrs.append(f"p{i}")
    fcp, n, rest = plan.tail
    g.update(FCP=fcp, N=n, REST=rest)
    grid = int(plan.grid)
    outs = ", ".join(f"r{k}" for k in range(len(plan.outs)))
    lines += ["    f = FLIPS[0] = FLIPS[0] ^ 1", "    if f:", f"        f = {grid - 1}",
              f"    v = ({', '.join(ptrs)}, FCP, N, f) + REST",
              "    try:", f"        GO(v, {grid}, 1, 1)",
              "    except Exception:  # noqa: BLE001 - retried once below, else raised",
              # (as _generic: a thread without a current context gets the device's made current)
              "        from cupy.cuda import runtime",
              "        runtime.setDevice(a0.data.device_id)", f"        GO(v, {grid}, 1, 1)",
              f"    return [{outs}]", ""]
    source = "\n".join(lines)
    exec(compile(source, f"<tensorplay chain plan of {getattr(plan.direct, 'function', 0):#x}>", "exec"), g)  # noqa: S102
    call = g["call"]
    call.source = source
    return call


def _dense_call(direct, nd, rdt, n_in, consts, fconst, blk, aligned=False):
    """``call(a, b, n)`` / ``call(a, c, n)`` / ``call(a, n)`` (two arrays, an array and a number,
    one array; ``n = a.size > 0``): a fresh row-major ``nd`` array of ``a``'s shape and dtype
    ``rdt``, into which an unaligned ``dense_launcher`` launch (``direct``, its kernel compiled
    with ``n_in`` inputs, ``consts``' types and the float-constant array ``fconst``, kept alive
    here) computes -- one generated function doing the allocation, the packing and the driver
    call: what the caller's allocation, ``launch`` and ``Direct.go`` did, with two frames below
    the caller and an argument tuple built and indexed. The eager ops' dense case (``eager._dense``) calls it on
    every small op, where on an H100 host the work between the adapter and ``launchKernel`` was
    a measurable part of a ~7.8 µs ``x * y``.

    It launches as ``go`` does -- the same function, threads, shared memory, parameter block and
    packing (``go``'s own namespace, from ``_cupylaunch.make_direct``), the current CuPy stream
    read per call, a thread without a CUDA context given one (``make_current``) -- except that
    the stream is looked up for the launch's device index when the look-up takes one (CuPy's
    ``get_current_stream``): the caller launches only on that device (its key), so it is the
    current one, and CuPy then skips its own ``getDevice``. A float is packed by ``struct`` as a
    float32 (the same rounding as ``go``'s NumPy conversion; a value beyond float32's range, which
    ``struct`` refuses, goes through NumPy to inf as there). None where ``direct``'s parameters
    are not the ones this layout packs (another Triton, another ``make_direct``): the caller
    then launches through ``launch``.

    ``aligned`` (an aligned ``dense_launcher``'s launch: ``eager``'s large arrays, whose caller
    has checked ``n``): the launch's ``flip`` argument alternates as ``launch``'s does (the
    same ``_FLIP`` state as ``_next_flip``, read inline), and the call returns None, launching
    nothing, when an operand's address or the fresh output's is not 16-byte aligned (the caller
    then takes its other path): each address read once, for that test and the packing, where
    the caller's own tests read them again (0.1-0.2 µs of a 2^22-element op on a CPU host)."""
    ns = getattr(getattr(direct, "go", None), "__globals__", {})
    need = ("PACK", "BLOCK_OF_THREAD", "LAUNCH", "STREAM", "MAKE_CURRENT", "F32", "FN", "THREADS",
            "SHARED", "DEVICE")
    kinds = ("ptr",) * (n_in + 2) + ("i32", "i32") + tuple(
        "fp32" if c.__class__ is float else "i32" for c in consts) + ("null", "null")
    if any(k not in ns for k in need) or tuple(getattr(direct, "kinds", ())) != kinds or \
            len(consts) > 1 or n_in + len(consts) not in (1, 2):
        return None
    if consts:
        args, ptrs = "a, c, n", "a.data.ptr, r.data.ptr"
    elif n_in == 2:
        args, ptrs = "a, b, n", "a.data.ptr, b.data.ptr, r.data.ptr"
    else:
        args, ptrs = "a, n", "a.data.ptr, r.data.ptr"
    if aligned:
        # the addresses read once each: tested for 16-byte alignment, then packed
        ptrs = ptrs.replace("a.data.ptr", "pa").replace("b.data.ptr", "pb").replace(
            "r.data.ptr", "pr")
    # aligned: the blocks' direction alternates (_next_flip's state), as the address launch's
    values = f"buf, 0, {ptrs}, FCP, n, {'f' if aligned else '0'}" + (", c" if consts else "")
    stream = "STREAM(DEVICE)" if _stream_takes_device(ns["STREAM"]) else "STREAM()"
    grid = "g" if aligned else f"(n + {int(blk) - 1}) // {int(blk)}"
    launch = f"LAUNCH(FN, {grid}, 1, 1, THREADS, 1, 1, SHARED, {stream}.ptr, params, 0)"
    if consts and consts[0].__class__ is float:
        pack = ["    try:", f"        PACK({values})", "    except OverflowError:",
                f"        PACK({values[:-1]}F32(c))"]
    else:
        pack = [f"    PACK({values})"]
    # the result array: fresh.route's two steps of cupy.ndarray(a.shape, RDT) where they apply,
    # RDT given as fresh.dtype_arg says (0.75 µs less per call on a CPU host), else the
    # constructor
    from .fresh import route_for
    fresh = route_for(nd)
    alloc = ["    r = NEW(ND)", "    INIT(r, a.shape, RDT_ARG, None, None, None)"] if fresh else \
        ["    r = ND(a.shape, RDT)"]
    if aligned:
        # operands off 16-byte alignment (views, offsets): nothing allocated or launched
        test = "(pa | pb) & 15" if n_in == 2 and not consts else "pa & 15"
        alloc = ["    pa = a.data.ptr", *(["    pb = b.data.ptr"] if "pb" in test else []),
                 f"    if {test}:", "        return None", *alloc,
                 # (an allocator without CuPy's 512-byte alignment: nothing launched)
                 "    pr = r.data.ptr", "    if pr & 15:", "        return None",
                 f"    g = (n + {int(blk) - 1}) // {int(blk)}",
                 # _next_flip inline: the same state, the same alternation
                 "    f = FLIPS[0] = FLIPS[0] ^ 1", "    if f:", "        f = g - 1"]
    source = "\n".join([f"def call({args}):", *alloc,
                        "    buf, params, _ = BLOCK_OF_THREAD.block", *pack,
                        "    try:", f"        {launch}", "    except Exception as e:",
                        "        if not MAKE_CURRENT(e, DEVICE):", "            raise",
                        f"        {launch}", "    return r", ""])
    g = {k: ns[k] for k in need}
    g.update(ND=nd, RDT=rdt, FCP=fconst.data.ptr, FLIPS=_FLIP)
    if fresh:
        from .fresh import dtype_arg
        g.update(NEW=fresh[0], INIT=fresh[1], RDT_ARG=dtype_arg(*fresh, nd, rdt))
    exec(compile(source, f"<tensorplay dense call of {ns['FN']:#x}>", "exec"), g)  # noqa: S102
    call = g["call"]
    call.direct = direct                 # keeps the kernel's module alive (and for the tests)
    call.fconst = fconst                 # (the kernel's fconst argument: its address is packed)
    call.source = source
    return call


def _stream_takes_device(stream) -> bool:
    """Whether current-stream look-up ``stream`` takes a device index (CuPy's
    ``get_current_stream(device_id)``; a stand-in declaring ``device_id``)."""
    try:
        import cupy
        if stream is cupy.cuda.get_current_stream:
            return True
    except ImportError:
        pass
    import inspect
    try:
        return "device_id" in inspect.signature(stream).parameters
    except (TypeError, ValueError):
        return False


_GETDEV: list = []


def _getdev() -> int:
    """CuPy's current device index (the CUDA runtime's)."""
    if not _GETDEV:
        from cupy.cuda import runtime
        _GETDEV.append(runtime.getDevice)
    return _GETDEV[0]()


def _structure(expr):
    """The chain without its constant values (they are kernel arguments, not code)."""
    steps = []
    for st in expr.steps:
        args = []
        for kind, v in st.args:
            if kind == "const" and isinstance(v, (bool, int, float)):
                args.append((kind, type(v).__name__))
            else:
                args.append((kind, v))
        steps.append((st.op, tuple(args)))
    return (expr.n_inputs, tuple(steps), tuple(expr.outputs), tuple(expr.dtypes))


def _broadcast(shapes):
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        off = nd - len(s)
        for i, d in enumerate(s):
            if out[off + i] == 1:
                out[off + i] = d
            elif d != 1 and d != out[off + i]:
                raise ShapeMismatch(f"operands could not be broadcast together with shapes "
                                    f"{shapes}")
    return tuple(out)


def _bstrides(a, out_shape):
    """Element strides of ``a`` broadcast to ``out_shape`` (0 on broadcast dims)."""
    item = a.dtype.itemsize
    nd = len(out_shape)
    st = [0] * nd
    off = nd - a.ndim
    for i, (s, b) in enumerate(zip(a.shape, a.strides)):
        st[off + i] = 0 if s == 1 else b // item
    return st


class _Ptr:
    """A CuPy array as a Triton pointer argument: ``data_ptr()`` and a dtype whose ``str`` ends in
    the Triton type name (NumPy/CuPy dtypes do: ``float32``, ``bfloat16``...)."""

    __slots__ = ("_p", "dtype")

    def __init__(self, a):
        self._p = int(a.data.ptr)
        self.dtype = a.dtype

    def data_ptr(self) -> int:
        return self._p


_DRIVER = [None]
_HELPERS_COMPILE: list = []


def _helpers_compile() -> bool:
    """Whether Triton's own ``@triton.jit`` helpers (``tl.sum``, ``tl.max``...) are
    ``JITFunction``s: false when ``triton`` was first imported under ``TRITON_INTERPRET=1`` (they
    are then ``InterpretedFunction``s, which a compiled kernel cannot call)."""
    if not _HELPERS_COMPILE:
        from triton.language import standard
        from triton.runtime.jit import JITFunction
        _HELPERS_COMPILE.append(isinstance(standard.sum, JITFunction))
    return _HELPERS_COMPILE[0]


def _launch_cuda(kern, grid, args, arrays, blk=None, num_warps=NUM_WARPS):
    if _DRIVER[0] is None:
        import tensorplay_triton
        _DRIVER[0] = tensorplay_triton.install_driver()
    import cupy
    dev = arrays[0].device.id if arrays else cupy.cuda.runtime.getDevice()
    conv = [(_Ptr(a) if isinstance(a, cupy.ndarray) else a) for a in args]
    with cupy.cuda.Device(dev):
        return kern[grid](*conv, BLOCK=blk or BLOCK, num_warps=num_warps)


_WRAPPED: dict = {}         # id(kernel) -> (kernel, its wrap_triton launcher)


def _launch_interpreted(kern, grid, args, n_in, blk=None):
    """NumPy arrays through Triton's interpreter, via tensorplay-triton's public ``wrap_triton``
    (tensors over the arrays' memory; inputs may be strided views): the one way a Triton kernel
    runs on cpu, which undoes every patch Triton's interpreter makes to ``triton.language``."""
    import numpy
    import tensorplay as tp
    conv = []
    for a in args:
        if isinstance(a, numpy.ndarray):
            if a.ndim == 0:
                a = a.reshape(1)
            conv.append(tp.from_numpy(a))
        else:
            conv.append(a)
    e = _WRAPPED.get(id(kern))
    if e is None or e[0] is not kern:
        from tensorplay_triton import wrap_triton
        e = _WRAPPED[id(kern)] = (kern, wrap_triton(kern, strided=[f"in{i}" for i in range(n_in)]))
    e[1][grid](*conv, BLOCK=blk or BLOCK)
