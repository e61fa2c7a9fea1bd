"""The cpu backend's elementwise fuser (``CPUBackend.fuse_elementwise``) for ``tensorplay.compile``.

A fused chain (``tensorplay.backends.ElementwiseExpr``) becomes one generated Python function that
makes a *single pass over memory*: the inputs are walked in blocks of ``BLOCK`` elements (sized so
that a block of every live value stays in the L2 cache), each step is one NumPy ufunc call writing
into a preallocated block buffer (``out=``; buffers are reused as soon as their value is dead), and
each output element is written once, straight into the output array. Eager mode, by contrast,
allocates and walks a full-size temporary per op.

The blocks are shared out between ``tensorplay.get_num_threads()`` threads (``parallel``: the
caller and a pool of workers, each with its own block buffers, taking the next block from a
shared counter; NumPy's ufuncs release the GIL) when the arrays hold at least ``PARALLEL_MIN``
elements per thread. Each element goes through the same ufunc calls whichever block or thread it
falls in, so the result does not depend on the thread count.

Results are the eager ones bit for bit: a step runs as a ufunc only where the reference kernel
(``tensorplay/_kernels/``) calls that same ufunc on operands of the same dtype (same-dtype
float16/32/64 arithmetic, comparisons, boolean logic, bitwise and/or/xor/not on integers and
bools of one dtype; Python scalars are converted to the operands' dtype first, as NumPy's
weak-scalar rule does; ``relu``, ``sigmoid`` and ``rsqrt`` as
the reference kernel's own sequence of ufuncs, float16 ``sigmoid``/``rsqrt`` excepted: the kernel
computes their steps at float32). Any other step (mixed dtypes, ``where``, ``erf``,
casts, shifts, integer arithmetic...) calls the reference kernel on the block, so it is exact by construction. The
tests (``tests/test_cpu_fusion.py``, ``tests/test_cpu_fusion_threads.py``) compare bits with eager
on NaN, +-inf, -0.0 and subnormals, so a change of a reference kernel that the table
(``tensorplay._kernels.elementwise.OPS``: its ``ufunc`` and ``steps``) does not follow fails them.

Variants are generated per input signature (dtypes, which inputs are 0-d) on first use. Contiguous
inputs of one shape are walked as 1-D arrays; other layouts (non-contiguous, broadcast inputs:
views from ``np.broadcast_to``) in blocks of whole rows of axis 0. Steps whose value would not
have the full shape (depending on 0-d inputs only), and outputs of a smaller broadcast shape, go
to the core's generic fuser.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

import tensorplay
from tensorplay import _codegen
from tensorplay._dtype import float16, round_scalar
from tensorplay._kernels.elementwise import (HALF_NUMBER_AT_FLOAT32, NUMBER_LOSES_TIES, OPS,
                                             POW_BY_NUMBER)
from tensorplay.backends import generic_fuser

from . import parallel

BLOCK = 1 << 16          # elements per block: 256 KiB of float32 per live value (L2: >= 1 MiB)
MIN_BLOCKED = 1 << 15    # from this size on, a signature's code is generated on its first call
# no input larger than this, and broadcasting inputs or at most 2 steps: the generic fuser (on
# 2-cpu EPYC, 2^4-2^14 elements: a row softmax's sub+exp over rows of 1024 at 0.4-0.75x the
# blocked code's time, x * y + 1 at 0.85x; a 4-step unary chain 1.07x, so it stays blocked)
SMALL = 1 << 12
# elements per thread below which a chain stays on the calling thread: handing a block to a
# worker costs ~20-50 µs, the cheapest chains compute 2^18 elements in ~100 µs
PARALLEL_MIN = 1 << 18
# elements per block on several threads: every ufunc call takes the GIL back when its loop ends,
# and on a busy GIL that hand-over costs ~5 µs (a sleeping thread woken), so threads get fewer,
# longer calls (8-op chain, 2^22 float32, 2 threads of a 2-core Xeon, medians of 41 in one
# process: 2^16 -> 2^17 blocks 6.0 -> 5.5 and 5.6 -> 4.9 ms, 2^18 5.7 / 5.2); one thread keeps
# 2^16 (2^17 there: 8.0 -> 9.1 ms, out of the L2 cache)
PARALLEL_BLOCK = 1 << 17
# ufuncs whose loop with a constant operand is several times slower than with an array operand
# (NumPy vectorizes maximum/minimum only for two arrays): the constant is given as a block
_FILL_FAST = frozenset({"maximum", "minimum", "fmax", "fmin"})

_FLOATS = frozenset({np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)})
_BOOL = np.dtype(bool)
_F16 = np.dtype(np.float16)
# float16 steps whose number operand the reference kernel reads at float32, not rounded to
# float16 (torch's rule, ``tensorplay._dtype``): no same-dtype ufunc computes them
_HALF_OPMATH = HALF_NUMBER_AT_FLOAT32

# The ufuncs of each op (``tensorplay._kernels.elementwise``: the forms of every fuser, stated
# once), by how a step is typed: "arith" (operands and result of one float dtype), "cmp" (float
# operands of one dtype, bool result), "logic" (bool operands and result), "bitwise" (integer or
# bool operands and result of one dtype; the shifts have no ufunc form: torch's rule for amounts
# outside [0, bits) is the reference kernel's)
_BINARY = {n: (p.ufunc, p.swap) for n, p in OPS.items()
           if p.family == "arith" and p.arity == 2 and p.ufunc}
_UNARY = {n: p.ufunc for n, p in OPS.items() if p.family == "arith" and p.arity == 1 and p.ufunc}
_CMP = {n: p.ufunc for n, p in OPS.items() if p.family == "cmp"}
_LOGIC = {n: p.ufunc for n, p in OPS.items() if p.family == "logic"}
_BITWISE = {n: p.ufunc for n, p in OPS.items() if p.family == "bitwise" and p.ufunc}
# composites: the reference kernel's own sequence of ufuncs ("x" is the operand / running value)
_COMPOSITE = {n: p.steps for n, p in OPS.items() if p.steps}


def fuse(expr, backend):
    """``backend.fuse_elementwise`` for the cpu backend: a callable ``run(arrays) -> [arrays]``
    equal to running ``expr``'s steps one by one with the reference kernels, or None when the
    backend has no reference kernel for a step."""
    generic = generic_fuser(expr, backend)
    if generic is None:
        return None
    return _Fused(expr, backend, generic)


class _Fused:
    def __init__(self, expr, backend, generic):
        self.expr = expr
        self.backend = backend
        self.generic = generic
        self.variants: dict = {}
        self.seen: set = set()
        self.kernels = backend.kernels()
        self.dtypes = [np.dtype(backend.native_dtype(d)) for d in expr.dtypes]
        self.short = len(expr.steps) <= 2

    def __call__(self, arrays):
        shape = None
        for a in arrays:
            if a.size > SMALL:
                break
            if a.ndim:
                if shape is None:
                    shape = a.shape
                elif a.shape != shape:
                    shape = False           # broadcast
        else:
            # every array is small: where the inputs broadcast (the views and shapes cost
            # ~20 µs) or the chain is short, the reference kernels one after the other (the
            # generic fuser: eager's own kernels, so the same bits) cost less than the blocks
            # (benchmarks/README.md, "compile per-call overhead")
            if shape is False or self.short:
                return self.generic(arrays)
        key = tuple((a.dtype, a.ndim == 0) for a in arrays)
        fn = self.variants.get(key)
        if fn is None:
            # generating costs ~50 µs per step (compiling the source): paid at once for arrays
            # worth blocking, else from the second call of a signature on (a chain run once on
            # small arrays -- a capture, a test -- keeps compile's capture cost where it was)
            if key not in self.seen and not any(a.size >= MIN_BLOCKED for a in arrays):
                self.seen.add(key)
                return self.generic(arrays)
            fn = self.variants[key] = _generate(self, key) or self.generic
        return fn(arrays)


def _const(v, dt):
    """``v`` as a NumPy scalar of ``dt`` when that is what NumPy's weak-scalar rule gives the
    reference kernel, else None (the step then calls the reference kernel)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or dt not in _FLOATS:
        return None
    if dt == _F16 and isinstance(v, float):
        v = round_scalar(v, float16)   # as the reference kernel rounds it (through float32)
    with np.errstate(over="ignore"):
        c = dt.type(v)
    if isinstance(v, int) and not (math.isfinite(c) and int(c) == v):
        # an int not exact in dt (rounding may differ) or past its range (float16's 65504)
        return None
    if isinstance(v, float) and math.isfinite(v) and not math.isfinite(float(c)):
        return None                                # overflows dt
    return c


def _generate(fz, key):
    """Source of one variant (input signature ``key``), compiled; None: the generic fuser."""
    expr = fz.expr
    in_dt = [k[0] for k in key]
    scalar_in = [k[1] for k in key]
    steps = expr.steps
    ns: dict = {}
    consts: dict = {}

    def const(c):
        name = f"c{len(consts)}"
        consts[name] = c
        ns[name] = c
        return name

    # which values have the full shape (depend on a non-0-d input); a step that does not would
    # have its own shape: generic fuser
    full = []
    for s in steps:
        f = any((a[0] == "in" and not scalar_in[a[1]]) or (a[0] == "step" and full[a[1]])
                for a in s.args)
        full.append(f)
    if not all(full):
        return None

    def dt_of(a):
        return in_dt[a[1]] if a[0] == "in" else fz.dtypes[a[1]] if a[0] == "step" else None

    # plan each step: a list of ufunc calls, or None (reference kernel)
    plans = []
    for j, s in enumerate(steps):
        plans.append(_plan_step(s, fz.dtypes[j], dt_of, const))
    # (a chain of reference-kernel steps only -- integers, say -- still gains the blocks and
    # the threads)
    gen = _Body(fz, ns, const)
    body, buf_dt = gen.emit(plans)
    return _compile(expr, scalar_in, body, buf_dt, gen.fills, ns, fz.dtypes, fz.generic)


def _compile(expr, scalar_in, body, buf_dt, fills, ns, dtypes, generic):
    """The variant: ``__work`` (generated: its block buffers, the loop over the blocks it takes
    from a shared counter, ``body`` for each block) and the ``_Variant`` driving it."""
    outputs = list(expr.outputs)
    for k, o in enumerate(outputs):
        ns[f"d{k}"] = dtypes[o]
    ins = [f"a{i}" for i in range(expr.n_inputs)]
    full_ins = [i for i in range(expr.n_inputs) if not scalar_in[i]]
    # n: rows (axis 0 of the arrays as given, 1-D when contiguous), R: rows per block, tail:
    # the other axes; take(): the next block number (shared by the threads of one call)
    W = ["def __work(arrays, outs, fills, n, R, tail, take):",
         f"    {', '.join(ins)}, = arrays",
         "    " + "".join(f"o{k}, " for k in range(len(outputs))) + "= outs"]
    if fills:
        W.append("    " + "".join(f"F{f}, " for f in fills.values()) + "= fills")
    for b, d in enumerate(buf_dt):
        ns[f"bd{b}"] = d
        W.append(f"    B{b} = __empty((R,) + tail, bd{b})")
    W += [f"    x{i} = a{i}" for i in range(expr.n_inputs) if scalar_in[i]]
    W += ["    with __errstate(all='ignore'):",
          "        while True:",
          "            s = take() * R",
          "            if s >= n:",
          "                return",
          "            __sl = slice(s, s + R)",
          "            m = min(R, n - s)"]
    W += [f"            b{b} = B{b} if m == R else B{b}[:m]" for b in range(len(buf_dt))]
    W += [f"            f{f} = F{f} if m == R else F{f}[:m]" for f in fills.values()]
    W += [f"            x{i} = a{i}[__sl]" for i in full_ins]
    W += ["            " + line for line in body]
    src = "\n".join(W)
    fill_values = [ns[c] for c in fills]       # in the order of their numbers
    ns.update(__empty=np.empty, __errstate=np.errstate, __Decline=_Decline)
    work = _codegen.function(src, ns, "__work", f"<tensorplay cpu fused chain: {expr}>")
    return _Variant(work, full_ins, [dtypes[o] for o in outputs], _deps(expr, full_ins),
                    fill_values, generic, src)


def _deps(expr, full_ins):
    """For each output: the non-0-d inputs its value depends on (its shape is theirs,
    broadcast)."""
    full = set(full_ins)
    dep = []
    for s in expr.steps:
        d = set()
        for a in s.args:
            if a[0] == "in" and a[1] in full:
                d.add(a[1])
            elif a[0] == "step":
                d |= dep[a[1]]
        dep.append(d)
    return [sorted(dep[o]) for o in expr.outputs]


class _Variant:
    """One input signature's fused function: ``variant(arrays) -> [arrays]``.

    Lays the arrays out for ``__work`` -- contiguous inputs of one shape as 1-D arrays, other
    layouts (non-contiguous, broadcast) as they are, in blocks of rows of axis 0 -- allocates
    the outputs and runs ``__work`` on ``tensorplay.get_num_threads()`` threads when the arrays
    are large enough to pay for them. Every element is computed by the same ufunc calls
    whichever thread or block it falls in, so the result does not depend on the thread count.
    """

    __slots__ = ("work", "full_ins", "out_dtypes", "deps", "fill_values", "fills", "generic",
                 "source")

    def __init__(self, work, full_ins, out_dtypes, deps, fill_values, generic, source):
        self.work, self.full_ins, self.out_dtypes = work, full_ins, out_dtypes
        self.deps, self.fill_values, self.generic, self.source = deps, fill_values, generic, source
        self.fills: dict = {}    # (R, tail) -> the constant blocks (read only: shared by threads)

    def _fills(self, R, tail):
        key = (R, tail)
        f = self.fills.get(key)
        if f is None:
            if len(self.fills) >= 8:         # a few block shapes are live at a time
                self.fills.clear()
            f = self.fills[key] = tuple(np.full((R,) + tail, v) for v in self.fill_values)
        return f

    def __call__(self, arrays):
        full = self.full_ins
        shape = arrays[full[0]].shape
        contiguous = True
        try:
            for i in full:
                a = arrays[i]
                if a.shape != shape:
                    return self._broadcast(arrays)
                contiguous = contiguous and a.flags.c_contiguous
            if contiguous:
                if len(shape) != 1:
                    arrays = [a.reshape(-1) if a.ndim else a for a in arrays]
                return self._run(arrays, shape, 1)
            return self._run(arrays, shape, 0)
        except _Decline:     # a reference kernel's result is not what the capture promised
            return self.generic(arrays)

    def _broadcast(self, arrays):
        full = self.full_ins
        try:
            shape = np.broadcast_shapes(*[arrays[i].shape for i in full])
        except ValueError:
            return self.generic(arrays)      # the reference kernels raise their own error
        for d in self.deps:                  # an output of a smaller shape: not this code's job
            if np.broadcast_shapes(*[arrays[i].shape for i in d]) != shape:
                return self.generic(arrays)
        views = list(arrays)
        for i in full:
            views[i] = np.broadcast_to(arrays[i], shape)
        return self._run(views, shape, 0)

    def _run(self, views, shape, flat):
        size = views[self.full_ins[0]].size if flat else math.prod(shape)
        threads = 1
        if size >= 2 * PARALLEL_MIN:
            threads = min(tensorplay.get_num_threads(), size // PARALLEL_MIN)
        block = PARALLEL_BLOCK if threads > 1 else BLOCK
        if flat:
            n, tail = size, ()
            R = block if n > block else max(1, n)
        else:
            n, tail = shape[0], tuple(shape[1:])
            R = max(1, min(block // max(1, size // max(1, n)), n))
        outs = [np.empty((n,) + tail, d) for d in self.out_dtypes]
        fills = self._fills(R, tail) if self.fill_values else ()
        take = itertools.count().__next__
        if threads > 1 and n > R:
            threads = min(threads, -(-n // R))
            parallel.run(self.work, threads, views, outs, fills, n, R, tail, take)
        else:
            self.work(views, outs, fills, n, R, tail, take)
        if flat and len(shape) == 1:
            return outs
        return [o.reshape(shape) for o in outs]


class _Body:
    """The loop body of a variant, one block of every step: ufunc steps write into reused block
    buffers (one per live value at a time, per dtype) or straight into an output; other steps call
    the reference kernel. A buffer read by a reference kernel is never reused (its result may be
    a view of it)."""

    def __init__(self, fz, ns, const):
        self.fz, self.ns, self.const = fz, ns, const
        self.out_of = {o: k for k, o in enumerate(fz.expr.outputs)}
        self.free: dict = {}       # dtype -> buffers whose value is dead
        self.buf_dt: list = []     # dtype of each buffer b<i>
        self.loc: dict = {}        # step -> expression naming its value in the loop body
        self.pinned: set = set()
        self.lines: list = []
        self.fills: dict = {}      # constant's name -> number of the block holding it

    def emit(self, plans):
        """``(body lines, buffer dtypes)`` for the steps planned as ``plans`` (``_plan_step``)."""
        steps = self.fz.expr.steps
        last = {}                  # liveness: last step reading each step's value
        for j, s in enumerate(steps):
            for a in s.args:
                if a[0] == "step":
                    last[a[1]] = j
        for j, s in enumerate(steps):
            args = [f"x{a[1]}" if a[0] == "in" else self.loc[a[1]] if a[0] == "step" else None
                    for a in s.args]
            if plans[j] is None:
                self._kernel_step(j, s, args)
            else:
                # buffers whose value dies at this step (may be written by it: ufuncs allow
                # out=in); a reference-kernel value dying frees nothing (not a buffer). An
                # operand a later call of the step reads again (a cube's ``x * x * x``) is
                # freed only after the step: the first call must not overwrite it.
                late = {o for call in plans[j][1:] for o in call[1:] if o.__class__ is int}
                for i, a in enumerate(s.args):
                    if i not in late:
                        self._free_if_dead(a, j, last)
                self._ufunc_step(j, plans[j], args)
                for i in late:
                    self._free_if_dead(s.args[i], j, last)
        return self.lines, self.buf_dt

    def _free_if_dead(self, a, j, last):
        if a[0] == "step" and last.get(a[1]) == j:
            b = self.loc[a[1]]
            if b.startswith("b") and b not in self.pinned:
                self.free.setdefault(self.fz.dtypes[a[1]], []).append(b)

    def _kernel_step(self, j, s, args):
        body, loc = self.lines, self.loc
        for a in s.args:
            if a[0] == "step" and loc[a[1]].startswith("b"):
                self.pinned.add(loc[a[1]])
        cargs = ", ".join(args[i] if a[0] != "const" else self.const(a[1])
                          for i, a in enumerate(s.args))
        self.ns[f"k{j}"] = self.fz.kernels[s.op]
        if j in self.out_of:
            k = self.out_of[j]
            body.append(f"r = k{j}({cargs})")
            body.append(f"if r.dtype != d{k} or r.shape != o{k}[__sl].shape: raise __Decline")
            body.append(f"o{k}[__sl] = r")
            loc[j] = f"o{k}[__sl]"
        else:
            self.ns[f"dt{j}"] = self.fz.dtypes[j]
            body.append(f"t{j} = k{j}({cargs})")
            body.append(f"if t{j}.dtype != dt{j}: raise __Decline")
            loc[j] = f"t{j}"

    def _destination(self, j):
        if j in self.out_of:
            k = self.out_of[j]
            self.lines.append(f"v{k} = o{k}[__sl]")
            return f"v{k}"
        lst = self.free.get(self.fz.dtypes[j])
        if lst:
            return lst.pop()
        self.buf_dt.append(self.fz.dtypes[j])
        return f"b{len(self.buf_dt) - 1}"

    def _ufunc_step(self, j, plan, operand):
        dst = self._destination(j)
        for call in plan:
            fn, opnds = call[0], call[1:]
            src = []
            for o in opnds:
                if isinstance(o, int) and not isinstance(o, bool):   # operand index
                    src.append(operand[o])
                elif o == "x":
                    src.append(dst)
                elif fn in _FILL_FAST:      # a constant, as a block of it
                    src.append(f"f{self.fills.setdefault(o, len(self.fills))}")
                else:                       # a constant's name
                    src.append(o)
            self.ns[f"__{fn}"] = getattr(np, fn)
            self.lines.append(f"__{fn}({', '.join(src)}, out={dst})")
        self.loc[j] = dst


class _Decline(Exception):
    """A reference kernel's result is not what the chain's fake metadata promised."""


def _plan_step(s, dt, dt_of, const):
    """The ufunc calls computing step ``s`` exactly as its reference kernel does (operands by
    index, ``"x"`` for the step's own running value, constants by name), or None."""
    op = s.op
    args = s.args
    if op in _BINARY or op in _UNARY or op in _COMPOSITE:
        return _plan_arith(op, args, dt, dt_of, const)
    if op in _CMP:
        if dt != _BOOL:
            return None
        tens = [dt_of(a) for a in args if a[0] != "const"]
        if not tens or tens[0] not in _FLOATS:
            return None
        ops = _operands(args, tens[0], dt_of, const)
        return None if ops is None else [(_CMP[op], *ops)]
    if op in _LOGIC:
        if dt != _BOOL or any(a[0] == "const" or dt_of(a) != _BOOL for a in args):
            return None
        return [(_LOGIC[op], *range(len(args)))]
    if op in _BITWISE:
        # the reference kernel on operands of the step's dtype is the ufunc alone (its promotion
        # changes nothing); a number it keeps as is when the dtype holds it (else it wraps it)
        if dt.kind not in "biu":
            return None
        ops = _operands(args, dt, dt_of, const, _int_const)
        return None if ops is None else [(_BITWISE[op], *ops)]
    return None


def _expand(steps, x0, dt, const):
    """A composite's ``steps`` (``elementwise``'s form) as a plan's ufunc calls on the operand
    ``x0``: ``"x"`` the operand in the first call and the running value after it, ``"x0"`` the
    operand in any call (``_Body.emit`` keeps its buffer alive through the step), numbers as
    constants of ``dt``."""
    return [(call[0], *[x0 if o == "x0" or (o == "x" and not k) else o if o == "x"
                        else const(dt.type(o)) for o in call[1:]])
            for k, call in enumerate(steps)]


def _int_const(v, dt):
    """A Python int/bool ``v`` as a NumPy scalar of integer or bool dtype ``dt`` when it holds
    ``v`` (a bool takes only bools), else None (the reference kernel wraps it as torch does)."""
    if v.__class__ is bool:
        return dt.type(v)
    if v.__class__ is not int or dt == _BOOL:
        return None
    info = np.iinfo(dt)
    return dt.type(v) if info.min <= v <= info.max else None


def _operands(args, want, dt_of, const, convert=None):
    """Operand list: ints for tensors of dtype ``want``, const names for scalars (``convert``:
    the number as the step's scalar, ``_const`` by default); None when an operand is of another
    dtype or a number ``want`` cannot hold as the reference does."""
    convert = convert or _const
    r = []
    for i, a in enumerate(args):
        if a[0] == "const":
            c = convert(a[1], want)
            if c is None:
                return None
            r.append(const(c))
        elif dt_of(a) != want:
            return None
        else:
            r.append(i)
    return r


def _plan_arith(op, args, dt, dt_of, const):
    """An "arith" step (operands and result of one float dtype ``dt``): its ufunc, or its
    composite's sequence; None where the reference kernel computes otherwise."""
    if dt not in _FLOATS:
        return None
    if dt == _F16 and op in _HALF_OPMATH and any(a[0] == "const" for a in args):
        return None   # torch reads this number at float32: the reference kernel does that
    if dt == _F16 and op == "relu":
        return None   # NumPy's float16 maximum gives its first operand on a tie: the kernel's order
    if dt == _F16 and op in _COMPOSITE:
        return None   # float16 sigmoid/rsqrt: the kernel computes the steps at float32 (opmath)
    if op == "pow" and any(a[0] == "const" and not -65504 <= a[1] <= 65504 for a in args):
        # the reference kernel's exponent rules past float16's range: float32 powers at float64
        # beyond +-2^24 (an odd integer stays odd), float16 refuses the exponent
        return None
    ops = _operands(args, dt, dt_of, const)
    if ops is None:
        return None
    if op in _UNARY:
        return [(_UNARY[op], ops[0])]
    if op in _COMPOSITE:
        return _expand(_COMPOSITE[op], ops[0], dt, const)
    if op == "pow" and dt != _F16 and args[1][0] == "const" and args[0][0] != "const":
        steps = POW_BY_NUMBER.get(args[1][1])    # sqrt, reciprocals, products: the kernel's
        if steps is not None:
            return _expand(steps, ops[0], dt, const)
    fn, rev = _BINARY[op]
    a, b = ops
    if op in NUMBER_LOSES_TIES and isinstance(b, str) and dt != _F16:
        # maximum/minimum with a number (clamp's bound): the tensor wins a tie of zeros, as in
        # the reference kernel (NumPy's float32/float64 loops give their second operand there)
        return [(fn, b, a)]
    return [(fn, b, a) if rev else (fn, a, b)]
