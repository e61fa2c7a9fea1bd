"""Eager ``sum``/``mean``/``amax``/``amin`` along dims on cuda as generated Triton kernels launched
with one driver call (issue 32).

Why: CuPy's reduction machinery costs 25-40 µs of host time per call on an H200 host (torch:
about 10), so a row softmax or ``x.sum(1).mean()`` was bound by the host. Here, after a few
calls through the reference kernel, each call of a known signature is a dict look-up, an
allocation (``cupy.ndarray``) and one packed ``cuLaunchKernel`` (``tensorplay_triton``'s
``_cupylaunch.make_direct``), as ``eager._dense`` does for elementwise ops.

What is taken (everything else runs the reference kernel, unchanged):

* a row-major CuPy array on the current device, float16/bfloat16/float32/float64 (all four
  ops) or int8/uint8/int16/int32/int64/bool (``sum``, ``amax``, ``amin``: ``mean`` of an
  integer array runs the reference, which raises torch's error), at least one element and fewer
  than ``LIMIT``; ``dim`` a list of ints (``x.sum(1)``, ``x.sum((0, 1))``, ``x.sum()`` and
  ``x.max()``: every dim), valid and without repeats; ``keepdim`` either way; no ``dtype=``;
* the reduced dims (those of size > 1) all after the kept ones -- the array is an ``(M, N)``
  problem reduced over ``N``, ``layout "inner"`` (softmax rows, layer norms, losses, and full
  reductions with ``M == 1``) -- or all before them -- an ``(N, M)`` problem reduced over
  ``N``, ``layout "outer"`` (column sums, bias gradients). Middle dims and strided views are
  not.

Semantics: the reference kernels' (CuPy's, NumPy's on cpu; torch's). Floats: ``sum``/``mean``
accumulate in float32 for float16/bfloat16/float32 and in float64 for float64, and round once to
the input's dtype; ``mean`` divides the sum by the count (in the accumulator's type).
``amax``/``amin`` compare in float32 (float64) -- exact for the 16-bit types -- and return an
element of the input: NaN if any element of the slice is NaN (as torch), ``-0.0`` kept. The
result has the input's dtype and the reference's shape. The summation order differs from CuPy's
(blocks of lanes, then a tree; partial sums over row or column blocks when a split adds them), as
torch's does between devices: values agree within float rounding, not bit for bit. Integers and
bool (exact, whatever the order): ``sum`` returns int64, accumulated in int64 (an int64 sum
wraps around as torch's and NumPy's); ``amax``/``amin`` return the input's dtype, compared in
int32 (int64 for int64); bool arrays are read and written as their bytes (0/1): ``sum`` counts
the true elements, ``amax`` is a logical or, ``amin`` a logical and.

Kernels: ``inner``: one program per ``ROWS`` rows and block of ``R`` elements of them, looping
over it in ``BLOCK_N``-wide tiles; when rows are longer than ``INNER_MAX_N`` and give fewer than
``TARGET_PROGRAMS`` programs (a full reduction of 2^20 elements), each row is split into ``S``
blocks of at least ``MIN_SPLIT_COLS`` elements (else ``R == N``), whose partial results
(accumulator dtype, an ``(S, M)`` scratch array) a second launch, of the ``outer`` kernel,
reduces. ``outer``: one program per ``BLOCK_M`` columns and block of rows, looping over rows;
when ``M`` gives fewer than ``TARGET_PROGRAMS`` programs, the rows are split into ``S`` blocks
whose partial results (an ``(S, M)`` scratch array) a second launch of the same kernel reduces.
Triton specialises each kernel on its integer arguments (``== 1``, ``% 16``)
and the input's 16-byte alignment: these are part of the key of each compiled launch. The
output is not specialised on alignment; the scratch array comes from CuPy's allocator, whose
blocks are 512-byte aligned.

Per (shape, dtype, dims, keepdim, device) signature the first ``WARMUP_CALLS`` calls run the
reference kernel (a short script compiles nothing); the next compiles (never inside a CUDA-graph
capture: ``eager._capturing``) and launches through Triton, then every call is one allocation
and one launch (two and a scratch array for a split). A compile or launch failure
(warned once per process, ``RuntimeWarning``), or a Triton release or kernel the direct launch
does not take, sends that signature to the reference kernel for good. ``TENSORPLAY_CUDA_EAGER_REDUCE=0`` (or
``TENSORPLAY_CUDA_EAGER_TRITON=0``) switches this path off.

NumPy arrays (the cpu backend, tests) run the same kernels through Triton's interpreter on every
call (``tensorplay_triton.wrap_triton``): that is how CI checks the generated code without a GPU.
"""

from __future__ import annotations

import os
import threading

OPS = ("sum", "mean", "amax", "amin")
FLOATS = frozenset(("float16", "bfloat16", "float32", "float64"))
# integer and bool dtypes taken: (smallest, largest) value -- amax's and amin's identities
INTS = {"int8": (-2 ** 7, 2 ** 7 - 1), "uint8": (0, 2 ** 8 - 1), "int16": (-2 ** 15, 2 ** 15 - 1),
        "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1), "bool": (0, 1)}

# Untuned first choices (no GPU was at hand when they were written): benchmarks/
# bench_cuda_reduce.py shows where they stand against torch.
TILE = 2048               # inner: elements per program and loop step (a [ROWS, BLOCK_N] tile):
#                           16 float32 values per thread with 4 warps
OUTER_TILE = 4096         # outer: the [BLOCK_N, BLOCK_M] tile (fewer, longer programs: more
#                           bytes in flight per program)
NUM_WARPS = 4
MAX_BLOCK_M = 128         # outer: columns per program (512 contiguous bytes of float32 per row)
INNER_MAX_N = 1 << 16     # inner: longest row one program loops over when rows are few (longer:
#                           the row is split into blocks, a second pass adds their results)
MIN_SPLIT_COLS = 4096     # inner: fewest elements per row block when a row is split
TARGET_PROGRAMS = 528     # about four programs per SM of an H200 (132 SMs)
MIN_SPLIT_ROWS = 128      # outer: fewest rows per block when N is split
LIMIT = 2 ** 31 - 2 * OUTER_TILE     # elements; above, 32-bit offsets would overflow: the reference
WARMUP_CALLS = 8          # as eager.WARMUP_CALLS
MAX_PLANS = 4096          # signatures kept per op and backend (cleared beyond)

# op -> (identity in the source, combine of two values/tiles, reduction of a tile along an axis)
_FORMS = {
    "sum": ("0.0", "{a} + {b}", "tl.sum({t}, axis={ax})"),
    "mean": ("0.0", "{a} + {b}", "tl.sum({t}, axis={ax})"),
    "amax": ('-float("inf")', "_nanmax({a}, {b})", "tl.reduce({t}, {ax}, _nanmax)"),
    "amin": ('float("inf")', "_nanmin({a}, {b})", "tl.reduce({t}, {ax}, _nanmin)"),
}
# integers and bool (as bytes 0/1): the identity is the plan's (a value of the input's dtype, as
# the masked load's ``other`` is converted to it)
_INT_FORMS = {
    "sum": ("{a} + {b}", "tl.sum({t}, axis={ax})"),
    "amax": ("tl.maximum({a}, {b})", "tl.max({t}, axis={ax})"),
    "amin": ("tl.minimum({a}, {b})", "tl.min({t}, axis={ax})"),
}

# the NaN-propagating combines, shared with the row-chain kernels (``triton_rows``)
NAN_COMBINE = '''

# NaN wins (torch's amax/amin): `a` when it is NaN or strictly beyond `b`, else `b` (NaN or not);
# an element of the input either way, so -0.0 stays -0.0
@_jit
def _nanmax(a, b):
    return tl.where((a > b) | (a != a), a, b)


@_jit
def _nanmin(a, b):
    return tl.where((a < b) | (a != a), a, b)
'''
_HELPERS = "\nimport triton.language as tl\n" + NAN_COMBINE

_INNER = '''

@_jit(do_not_specialize_on_alignment=["out"])
def {name}(x, out, M, N, ndiv, R, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = rows[:, None] * N
    c0 = tl.program_id(1) * R
    cols = tl.arange(0, BLOCK_N)
    acc = tl.full([ROWS, BLOCK_N], {ident}, {acc})
    for start in range(0, R, BLOCK_N):
        c = c0 + start + cols
        m = rmask[:, None] & (c < N)[None, :]
        v = tl.load(x + base + c[None, :], mask=m, other={ident}).to({acc})
        acc = {combine}
    r = {reduce}
{finish}    tl.store(out + tl.program_id(1) * M + rows, {store}, mask=rmask)
'''

_OUTER = '''

@_jit(do_not_specialize_on_alignment=["out"])
def {name}(x, out, N, M, ndiv, R, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cmask = cols < M
    r0 = tl.program_id(1) * R
    rows = tl.arange(0, BLOCK_N)
    acc = tl.full([BLOCK_N, BLOCK_M], {ident}, {acc})
    for start in range(0, R, BLOCK_N):
        rr = r0 + start + rows
        m = (rr < N)[:, None] & cmask[None, :]
        v = tl.load(x + rr[:, None] * M + cols[None, :], mask=m, other={ident}).to({acc})
        acc = {combine}
    r = {reduce}
{finish}    tl.store(out + tl.program_id(1) * M + cols, {store}, mask=cmask)
'''

_lock = threading.Lock()
_KERNELS: dict = {}        # (layout, op, accumulator, bf16 rounding spelled out, integer
#                            identity or None) -> JITFunction
_FAILED: list = []         # the first failure (warned once)


def enabled() -> bool:
    """Whether the environment leaves this path on (read when the kernel table is built)."""
    return (os.environ.get("TENSORPLAY_CUDA_EAGER_REDUCE", "1") != "0" and
            os.environ.get("TENSORPLAY_CUDA_EAGER_TRITON", "1") != "0")


def source(layout: str, op: str, acc: str, bf16_interp: bool = False,
           ident: int | None = None) -> tuple[str, str]:
    """``(source, kernel name)`` of the ``layout`` (``"inner"``/``"outer"``) kernel of ``op``
    accumulating in ``acc`` (``"float32"``/``"float64"``; with an integer ``ident``: integer
    inputs, ``"int32"``/``"int64"``, ``ident`` the identity of ``op`` in the input's dtype).
    The store converts to the output pointer's type; ``bf16_interp``: a bfloat16 output rounded
    to nearest even by integer ops (Triton's interpreter would truncate:
    ``triton_fusion._TO_BF16``)."""
    from .triton_fusion import _TO_BF16
    if ident is None:
        ident_s, comb, red = _FORMS[op]
        tag = ""
    else:
        comb, red = _INT_FORMS[op]
        ident_s = str(ident)
        tag = f"_i{ident}".replace("-", "m")
    name = f"tp_reduce_{layout}_{op}_{acc}{tag}{'_bf16i' if bf16_interp else ''}"
    finish = "    r = r / ndiv\n" if op == "mean" else ""
    store = "_to_bf16(r)" if bf16_interp else "r.to(out.dtype.element_ty)"
    body = (_INNER if layout == "inner" else _OUTER).format(
        name=name, ident=ident_s, acc=f"tl.{acc}", combine=comb.format(a="acc", b="v"),
        reduce=red.format(t="acc", ax=1 if layout == "inner" else 0), finish=finish,
        store=store)
    return _HELPERS + (_TO_BF16[True] if bf16_interp else "") + body, name


def kernel(layout: str, op: str, acc: str, bf16_interp: bool = False, ident: int | None = None):
    """The ``JITFunction`` of ``source(...)`` (built once per process)."""
    key = (layout, op, acc, bf16_interp, ident)
    k = _KERNELS.get(key)
    if k is None:
        with _lock:
            k = _KERNELS.get(key)
            if k is None:
                from .triton_fusion import _build
                src, name = source(*key)
                k = _KERNELS[key] = _build(src, name)
    return k


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class Plan:
    """How one call signature runs: ``out_shape``; ``passes``: one or two launches, each
    ``(layout, op, input from scratch?, output is scratch?, ints, grid, constexprs)``;
    ``scratch``: the ``(S, M)`` shape of the partial results (a split) or None; ``acc``: the
    accumulator's (and scratch's) dtype name; ``out``: the result's dtype name; ``ident``: the
    integer identity of the kernels of integer/bool inputs, None for floats."""

    __slots__ = ("acc", "ident", "out", "out_shape", "passes", "scratch", "slots")

    def __init__(self, out_shape, passes, scratch, acc, out, ident=None):
        self.out_shape = out_shape
        self.passes = passes
        self.scratch = scratch
        self.acc = acc
        self.out = out
        self.ident = ident
        self.slots = [0, 0]     # per input alignment (misaligned, 16-byte aligned): warm-up
        #                         calls so far (int), the launch (callable), or None (reference)


def plan(op: str, shape: tuple, dims, keepdim: bool, dtype_name: str):
    """The ``Plan`` of ``op`` over a row-major array of ``shape`` and dtype ``dtype_name`` along
    ``dims`` (a list of ints, or None/empty: every dim), or None where the reference kernel runs
    (see the module docstring). Invalid or repeated dims are None too: the reference kernel
    raises the op's error."""
    if not shape or keepdim.__class__ is not bool:
        return None
    if dtype_name in FLOATS:
        acc = "float64" if dtype_name == "float64" else "float32"
        out, ident = dtype_name, None
    else:
        lim = INTS.get(dtype_name)
        if lim is None or op == "mean":
            return None        # mean of integers: the reference raises torch's error
        if op == "sum":        # torch: integral sums are int64 (and wrap as int64)
            acc, out, ident = "int64", "int64", 0
        else:
            acc = "int64" if dtype_name == "int64" else "int32"
            out, ident = dtype_name, lim[0] if op == "amax" else lim[1]
    nd = len(shape)
    if not dims:
        red = set(range(nd))
    else:
        red = set()
        for d in dims:
            if d.__class__ is not int or not -nd <= d < nd:
                return None
            d %= nd
            if d in red:
                return None
            red.add(d)
    n = m = 1
    for i, s in enumerate(shape):
        if i in red:
            n *= s
        else:
            m *= s
    if not n * m or n * m >= LIMIT:
        return None
    big_r = [i for i in red if shape[i] != 1]
    big_k = [i for i in range(nd) if i not in red and shape[i] != 1]
    if keepdim:
        out_shape = tuple(1 if i in red else s for i, s in enumerate(shape))
    else:
        out_shape = tuple(s for i, s in enumerate(shape) if i not in red)
    ndiv = n if op == "mean" else 1
    first = "sum" if op == "mean" else op      # partial results of a split: no division
    if not big_r or not big_k or max(big_k) < min(big_r):
        bn = min(_pow2(max(n, 16)), TILE)
        rows = TILE // bn
        pm = _cdiv(m, rows)
        ce = {"ROWS": rows, "BLOCK_N": bn}
        s = 1
        if n > INNER_MAX_N and pm < TARGET_PROGRAMS:
            # a few very long rows (a full reduction of 2^20 elements): one program each would
            # be slow; split each row into s blocks of r elements (a multiple of BLOCK_N: the
            # blocks do not overlap), their partial results reduced by an outer pass
            s = min(_cdiv(TARGET_PROGRAMS, pm), _cdiv(n, MIN_SPLIT_COLS))
            r = _cdiv(_cdiv(n, s), bn) * bn
            s = _cdiv(n, r)
        if s == 1:
            return Plan(out_shape, [("inner", op, False, False, (m, n, ndiv, n), (pm, 1), ce)],
                        None, acc, out, ident)
        bm = min(_pow2(max(m, 16)), MAX_BLOCK_M)
        bn2 = OUTER_TILE // bm
        return Plan(out_shape, [("inner", first, False, True, (m, n, 1, r), (pm, s), ce),
                                ("outer", op, True, False, (s, m, ndiv, _cdiv(s, bn2) * bn2),
                                 (_cdiv(m, bm), 1), {"BLOCK_N": bn2, "BLOCK_M": bm})],
                    (s, m), acc, out, ident)
    if max(big_r) >= min(big_k):
        return None            # reduced dims between kept ones
    bm = min(_pow2(max(m, 16)), MAX_BLOCK_M)
    bn = OUTER_TILE // bm
    ce = {"BLOCK_N": bn, "BLOCK_M": bm}
    pm = _cdiv(m, bm)
    s = 1
    if pm < TARGET_PROGRAMS and n >= 2 * MIN_SPLIT_ROWS:
        s = min(_cdiv(TARGET_PROGRAMS, pm), _cdiv(n, MIN_SPLIT_ROWS))
    r = _cdiv(_cdiv(n, s), bn) * bn
    s = _cdiv(n, r)
    if s == 1:
        return Plan(out_shape, [("outer", op, False, False, (n, m, ndiv, r), (pm, 1), ce)],
                    None, acc, out, ident)
    r2 = _cdiv(s, bn) * bn
    return Plan(out_shape, [("outer", first, False, True, (n, m, 1, r), (pm, s), ce),
                            ("outer", op, True, False, (s, m, ndiv, r2), (pm, 1), ce)],
                (s, m), acc, out, ident)


def _failed(e) -> None:
    if not _FAILED:
        _FAILED.append(e)
        import warnings
        warnings.warn(f"tensorplay-cuda: a generated reduction kernel failed ({type(e).__name__}: "
                      f"{e}); that reduction keeps CuPy's kernels", RuntimeWarning, stacklevel=4)


def accelerate(kernels: dict, backend) -> dict:
    """``kernels`` with ``sum``/``mean``/``amax``/``amin`` taking the generated kernels where
    they can (CuPy arrays: the direct launch; NumPy arrays: Triton's interpreter on every call)
    and the given kernel everywhere else. Unchanged when the path is switched off or Triton /
    tensorplay-triton is not installed."""
    from . import eager
    if not enabled() or not eager.triton_available():
        return kernels
    out = dict(kernels)
    cupy = backend.np.__name__ == "cupy"
    for op in OPS:
        if op in out:
            out[op] = (_cupy_kernel if cupy else _interp_kernel)(op, out[op], backend)
    return out


def _signature(op, ref, run):
    """The kernel with ``op``'s reference signature: ``run(x, dim, keepdim)`` (an array or None:
    the reference ``ref``) in front of ``ref``."""
    if op in ("sum", "mean"):
        def k(x, dim=None, keepdim=False, *, dtype=None):
            if dtype is None:
                r = run(x, dim, keepdim)
                if r is not None:
                    return r
                return ref(x, dim, keepdim)
            return ref(x, dim, keepdim, dtype=dtype)
    else:
        def k(x, dim=(), keepdim=False):
            r = run(x, dim, keepdim)
            if r is not None:
                return r
            return ref(x, dim, keepdim)
    k.__wrapped__ = ref
    k.__name__ = op
    return k


# -- NumPy arrays: Triton's interpreter (CI) --------------------------------------------------------
def _interp_kernel(op, ref, backend):
    np = backend.np
    plans: dict = {}

    def run(x, dim, keepdim):
        if x.__class__ is not np.ndarray or not x.flags.c_contiguous:
            return None
        key = (x.shape, x.dtype, tuple(dim) if dim else None, keepdim)
        p = plans.get(key, False)
        if p is False:
            p = plans[key] = plan(op, x.shape, dim, keepdim, x.dtype.name)
        if p is None:
            return None
        bf = x.dtype.name == "bfloat16"
        scratch = None if p.scratch is None else np.empty(p.scratch, np.dtype(p.acc))
        r = np.empty(p.out_shape, x.dtype if p.out == x.dtype.name else np.dtype(p.out))
        for layout, pop, from_s, to_s, ints, grid, ce in p.passes:
            src = scratch if from_s else x
            dst = scratch if to_s else r
            k = kernel(layout, pop, p.acc, bf and not to_s, p.ident)
            # bool arrays as their bytes (0/1): the kernels read and write uint8
            _interpret(k, grid, [_bytes(src, np), _bytes(dst, np), *ints], ce)
        return r
    k = _signature(op, ref, run)
    k.plans = plans
    return k


def _bytes(a, np):
    """``a``, a bool array viewed as uint8 (the kernels' type for bool)."""
    return a.view(np.uint8) if a.dtype.kind == "b" else a


_WRAPPED: dict = {}


def _interpret(kern, grid, args, ce):
    """NumPy arrays through Triton's interpreter, via tensorplay-triton's ``wrap_triton`` (as
    ``triton_fusion._launch_interpreted``)."""
    import tensorplay as tp
    conv = [tp.from_numpy(a.reshape(-1)) if hasattr(a, "dtype") else a for a in args]
    w = _WRAPPED.get(id(kern))
    if w is None or w[0] is not kern:
        from tensorplay_triton import wrap_triton
        w = _WRAPPED[id(kern)] = (kern, wrap_triton(kern))
    w[1][grid](*conv, **ce)


# -- CuPy arrays: compiled, then one driver call per launch ---------------------------------------
def _int_features(ints):
    from tensorplay_triton._cupylaunch import int_feature
    return tuple(int_feature(v) for v in ints)


class Compiler:
    """Compiles and loads the launch of one pass (``compile_pass``); one per backend, shared by
    the four ops (``backend._tp_reduce_compiler``, where tests put a stand-in)."""

    def __init__(self, backend):
        self.backend = backend
        self.directs: dict = {}       # launch key -> Direct, or None (that key: the reference)

    def compile_pass(self, p, i, arrays):
        """Launch pass ``i`` of plan ``p`` through Triton on ``arrays`` (input, output: CuPy
        arrays on the current device), compiling it, and return its ``go(values, g0, g1, g2)``
        (``_cupylaunch.Direct.go``), or None when the direct launch cannot take it (the pass
        has run then all the same). Raises what Triton raises."""
        layout, op, from_s, to_s, ints, grid, ce = p.passes[i]
        x, out = arrays
        dev = self.backend.np.cuda.runtime.getDevice()
        key = (layout, op, p.ident, x.dtype, out.dtype, tuple(sorted(ce.items())),
               _int_features(ints), not x.data.ptr & 15, dev)
        d = self.directs.get(key, False)
        if d:                         # loaded for another plan of the same specialisation
            d.go((x.data.ptr, out.data.ptr, *ints), grid[0], grid[1], 1)
            return d.go
        from tensorplay_triton import _cupylaunch, _wrap

        from .triton_fusion import _DRIVER, _Ptr, _helpers_compile
        if not _helpers_compile():
            raise RuntimeError("Triton's tl.sum & co. were imported interpreted "
                               "(TRITON_INTERPRET=1): they cannot compile")
        if _DRIVER[0] is None:
            import tensorplay_triton
            _DRIVER[0] = tensorplay_triton.install_driver()
        kern = kernel(layout, op, p.acc, False, p.ident)
        args = [_Ptr(x), _Ptr(out), *ints]
        for a in args[:2]:
            if a.dtype.kind == "b":     # bool: the kernels read and write its bytes (0/1)
                a.dtype = self.backend.np.dtype("uint8")
        # (Triton's launcher: compiles this specialisation the first time, runs the pass always)
        compiled = kern[grid](*args, num_warps=NUM_WARPS, **ce)
        if d is None:
            return None               # known: the direct launch does not take this kernel
        d = None
        if _wrap._direct_setup():
            d = _cupylaunch.make_direct(compiled, dev, kern, len(args), ce)
            if not isinstance(d, _cupylaunch.Direct):
                d = None
        self.directs[key] = d
        return None if d is None else d.go


def _cupy_kernel(op, ref, backend):
    from . import eager
    nd = backend.np.ndarray
    getdev = backend.np.cuda.runtime.getDevice
    plans: dict = {}
    comp = getattr(backend, "_tp_reduce_compiler", None)
    if comp is None:
        comp = backend._tp_reduce_compiler = Compiler(backend)

    def first(p, al, x):
        """A call of plan ``p`` before its launch (for this alignment ``al``) is known: the
        reference for the first WARMUP_CALLS, then compile and launch each pass through Triton,
        and keep ``launch(x) -> array``; None (the reference) after a failure."""
        st = p.slots[al]
        if st < WARMUP_CALLS:
            p.slots[al] = st + 1
            return None
        if eager._capturing(backend):
            return None          # no compiling inside a CUDA-graph capture
        np = backend.np
        try:
            scratch = None if p.scratch is None else nd(p.scratch, np.dtype(p.acc))
            odt = x.dtype if p.out == x.dtype.name else np.dtype(p.out)
            r = nd(p.out_shape, odt)
            gos = []
            for i, (_, _, from_s, to_s, _, _, _) in enumerate(p.passes):
                go = comp.compile_pass(p, i, (scratch if from_s else x, scratch if to_s else r))
                gos.append(go)
        except Exception as e:  # noqa: BLE001 - any compiler/driver error: the reference, said once
            p.slots[al] = None
            _failed(e)
            return None
        if any(g is None for g in gos):
            p.slots[al] = None   # launched through Triton; later calls: the reference
            return r
        p.slots[al] = _launcher(p, gos, nd, backend, odt)
        return r

    def failed(e, p, al, launch, ptr, dev):
        """``launch`` raised (the driver refused it: nothing was launched): inside a graph
        capture, the capture's error; else retried once after making the device current (a
        thread whose first CUDA work this is has no current context -- CUDA_ERROR_INVALID_CONTEXT
        -- until a runtime call makes the device's primary context current, which cudaSetDevice
        does, as in triton_fusion._Plan); then the reference for good, said once."""
        if eager._capturing(backend):
            raise e
        try:
            backend.np.cuda.runtime.setDevice(dev)
            return launch(ptr)
        except Exception:  # noqa: BLE001 - the reference from now on
            pass
        p.slots[al] = None
        _failed(e)
        return None

    def new_plan(key, x, dim, keepdim):
        if len(plans) >= MAX_PLANS:
            plans.clear()
        p = plans[key] = plan(op, x.shape, dim, keepdim, x.dtype.name)
        return p

    # the per-call path, one frame before the launch: a dict look-up by (shape, dtype, dims,
    # keepdim, device), the input's device and alignment, its plan's launch. (The adapters pass
    # ``dim`` as a list or None; ``dtype`` only to sum/mean.)
    def k(x, dim=None, keepdim=False, *, dtype=None):
        if dtype is None and x.__class__ is nd and x._c_contiguous:
            dev = getdev()
            key = (x.shape, x.dtype, tuple(dim) if dim else None, keepdim, dev)
            p = plans.get(key, False)
            if p is False:
                p = new_plan(key, x, dim, keepdim)
            if p is not None:
                mp = x.data
                if mp.device_id == dev:
                    ptr = mp.ptr
                    al = 0 if ptr & 15 else 1
                    launch = p.slots[al]
                    if launch.__class__ is int:
                        r = first(p, al, x)
                    elif launch is None:
                        r = None
                    else:
                        try:
                            return launch(ptr)
                        except Exception as e:  # noqa: BLE001 - see failed()
                            r = failed(e, p, al, launch, ptr, dev)
                    if r is not None:
                        return r
            return ref(x, dim, keepdim)
        if dtype is None:
            return ref(x, dim, keepdim)
        return ref(x, dim, keepdim, dtype=dtype)
    k.__wrapped__ = ref
    k.__name__ = op
    k.plans = plans
    return k


def _launcher(p, gos, nd, backend, dt):
    """``launch(x address) -> result array`` of dtype ``dt``: the plan's passes, one driver call
    each (a split first fills a fresh scratch array of partial results). The arrays are made
    as ``nd(shape, dtype)`` through ``fresh.new_array_for`` (the same arrays, less host time: a
    full reduction's ``(t * m).max()`` is a small op whose host time is the bound)."""
    from .fresh import new_array_for
    nd = new_array_for(nd)
    shape = p.out_shape
    if len(gos) == 1:
        go = gos[0]
        ints = p.passes[0][4]
        g0, g1 = p.passes[0][5]

        def launch(xp):
            r = nd(shape, dt)
            go((xp, r.data.ptr, *ints), g0, g1, 1)
            return r
        return launch
    go1, go2 = gos
    i1, i2 = p.passes[0][4], p.passes[1][4]
    (a0, a1), (b0, b1) = p.passes[0][5], p.passes[1][5]
    sshape = p.scratch
    sdt = backend.np.dtype(p.acc)

    def launch2(xp):
        s = nd(sshape, sdt)
        r = nd(shape, dt)
        go1((xp, s.data.ptr, *i1), a0, a1, 1)
        go2((s.data.ptr, r.data.ptr, *i2), b0, b1, 1)
        return r
    return launch2
