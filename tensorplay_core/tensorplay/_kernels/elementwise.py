"""What each elementwise built-in op computes, stated once for every backend and fuser.

``OPS`` maps an op's kernel name to a ``Pointwise`` record giving each form of its computation:

* ``xp``: the array-API function the reference kernel calls (``tensorplay._kernels``; the family
  modules add the op's torch rules around it: promotion, bool and float16 cases);
* ``ufunc``: the NumPy/CuPy ufunc that computes it on operands of one floating dtype (the cpu
  fuser's in-place block steps, the cuda eager fast path); ``steps``: for a composite, the
  reference kernel's own sequence of ufuncs (``"x"`` the running value, numbers constants);
* ``triton`` (``triton_float``, ``triton_f64``: the spelling for floating / float64 results where
  it differs): a Triton expression over the operands ``{0}``, ``{1}``, ``{2}``
  (``tensorplay_cuda.triton_fusion`` casts the operands and rounds the result);
* ``cupy``: a C expression for ``cupy.ElementwiseKernel`` (``T`` the element type).

The family (``family``) says how a fuser types a step: ``"arith"`` (operands in the step's
compute type, result of the step's dtype), ``"cmp"`` (operands promoted together, bool result),
``"logic"`` (operands tested against zero, bool result), ``"bitwise"`` (operands promoted to the
step's integer or bool dtype, result of that dtype; ``{bits}`` in a Triton form is the dtype's
width in bits), ``"where"``, ``"cast"`` (``to_dtype``).
``float_result``: integer operands give the default float dtype (the reference casts them first).

Pure data and small functions: importing this module imports no array library. The forms encode
torch's rules that the reference kernels follow (NaN propagation in maximum/minimum and relu,
IEEE-rounded division and square root, ``-x`` flipping the sign of zeros); a fuser that cannot
state an op exactly declines it and the reference kernel runs.
"""

from __future__ import annotations

import math

from .. import _dtype
from .._backend import contiguous_strides_cached
from .._tensor_base import is_dense  # torch's is_non_overlapping_and_dense (also the overlap rule's)

__all__ = ["CUDA_EAGER", "HALF_NUMBER_AT_FLOAT32", "OPS", "POW_BY_NUMBER", "REDUCTIONS", "Pointwise",
           "Reduction", "compose"]


class Pointwise:
    """One elementwise op's forms (see the module docstring). A plain class (not a dataclass:
    this table is built at ``import tensorplay``, where a dataclass costs ~1 ms)."""

    __slots__ = ("name", "family", "arity", "xp", "ufunc", "steps", "triton", "triton_float",
                 "triton_f64", "cupy", "float_result", "swap")

    def __init__(self, name: str, family: str, arity: int, *, xp: str | None = None,
                 ufunc: str | None = None, steps: tuple | None = None, triton: str | None = None,
                 triton_float: str | None = None, triton_f64: str | None = None,
                 cupy: str | None = None, float_result: bool = False, swap: bool = False):
        self.name, self.family, self.arity = name, family, arity
        self.xp, self.ufunc, self.steps = xp, ufunc, steps
        self.triton, self.triton_float, self.triton_f64 = triton, triton_float, triton_f64
        self.cupy, self.float_result, self.swap = cupy, float_result, swap

    def __repr__(self):
        return f"Pointwise({self.name!r}, {self.family!r}, {self.arity})"


def _op(name, family, arity, **forms) -> Pointwise:
    return Pointwise(name, family, arity, **forms)


def _reversed(p: Pointwise, name: str) -> Pointwise:
    """``p`` with its operands exchanged (``rsub(a, b)`` is ``sub(b, a)``)."""
    def sw(t):
        return None if t is None else t.replace("{0}", "\0").replace("{1}", "{0}").replace(
            "\0", "{1}")
    return Pointwise(name, p.family, p.arity, xp=p.xp, ufunc=p.ufunc, steps=p.steps,
                     triton=sw(p.triton), triton_float=sw(p.triton_float),
                     triton_f64=sw(p.triton_f64), cupy=sw(p.cupy),
                     float_result=p.float_result, swap=True)


# maximum/minimum propagate NaN from either side (torch), unlike C's fmax and Triton's maximum.
# The Triton and CuPy forms serve the cuda device, whose torch kernels order -0.0 below 0.0 on a
# tie of zeros (maximum(-0.0, 0.0) and maximum(0.0, -0.0) are 0.0; an H100 with torch 2.11,
# 2026-12-07), whichever operand is the number: of two zeros ``a + b`` is the larger and
# ``(a + b) * a * b`` the smaller (the product's sign is either's), exact in every dtype. Spelt
# out rather than left to the hardware's max instruction, so that Triton's interpreter (tests on
# cpu) computes what the GPU does.
_NAN_PICK_TL = ("tl.where({0} != {0}, {0}, tl.where({1} != {1}, {1}, tl.where({0} %s {1}, {0}, "
                "tl.where({0} %s {1}, {1}, tl.where({0} == 0, %s, {0})))))")
_NAN_PICK_C = ("(({0} != {0}) ? {0} : (({1} != {1}) ? {1} : (({0} %s {1}) ? {0} : "
               "(({0} %s {1}) ? {1} : (({0} == (T)0) ? (T)(%s) : {0})))))")
_ZERO_MAX = ">", "<", "{0} + {1}"
_ZERO_MIN = "<", ">", "({0} + {1}) * {0} * {1}"


def _unary_math(name, triton="", **forms) -> Pointwise:
    """A floating function of one operand (integers computed in the default float dtype).
    ``triton``: its Triton form, ``tl.<name>`` when not given, None for none (the Triton fusers
    decline the op); ``xp``: the array-API name when it differs from ``name``."""
    return _op(name, "arith", 1, xp=forms.pop("xp", name), ufunc=forms.pop("ufunc", name),
               triton=f"tl.{name}({{0}})" if triton == "" else triton,
               cupy=forms.pop("cupy", f"{name}({{0}})"), float_result=True, **forms)


def _cmp(name, ufunc, sym) -> Pointwise:
    return _op(name, "cmp", 2, xp=ufunc, ufunc=ufunc, triton=f"{{0}} {sym} {{1}}")


_sub = _op("sub", "arith", 2, xp="subtract", ufunc="subtract", triton="{0} - {1}",
           cupy="{0} - {1}")
# IEEE division and square root, rounded to nearest (torch's; Triton's `/` and tl.sqrt on float32
# are the approximate div.full / sqrt.approx instructions, up to 2 ulp off; on float64 they are the
# IEEE div.rn.f64 / sqrt.rn.f64, and div_rn / sqrt_rn take float32 only)
_div = _op("div", "arith", 2, xp="divide", ufunc="divide", triton="tl.math.div_rn({0}, {1})",
           triton_f64="{0} / {1}", cupy="{0} / {1}", float_result=True)
_pow = _op("pow", "arith", 2, xp="pow", ufunc="power", cupy="pow({0}, {1})")

# torch's shifts by an amount outside [0, bits) (its lshift/rshift kernels): 0 to the left, the
# sign bit to the right (``a >> (bits - 1)`` signed, 0 unsigned: ``(a >> (bits - 1)) >> 1`` is
# both). In range, the amount is masked to its low bits first so that no lane ever shifts by the
# width or more (LLVM's shl/ashr/lshr give poison there).
_SHL_TL = "tl.where(({1} >= 0) & ({1} < {bits}), {0} << ({1} & ({bits} - 1)), 0)"
_SHR_TL = ("tl.where(({1} >= 0) & ({1} < {bits}), {0} >> ({1} & ({bits} - 1)), "
           "({0} >> ({bits} - 1)) >> 1)")

_TABLE = (
    _op("add", "arith", 2, xp="add", ufunc="add", triton="{0} + {1}", cupy="{0} + {1}"),
    _sub, _reversed(_sub, "rsub"),
    _op("mul", "arith", 2, xp="multiply", ufunc="multiply", triton="{0} * {1}",
        cupy="{0} * {1}"),
    _div, _reversed(_div, "rdiv"),
    _pow, _reversed(_pow, "rpow"),
    _op("maximum", "arith", 2, xp="maximum", ufunc="maximum", triton=_NAN_PICK_TL % _ZERO_MAX,
        cupy=_NAN_PICK_C % _ZERO_MAX),
    _op("minimum", "arith", 2, xp="minimum", ufunc="minimum", triton=_NAN_PICK_TL % _ZERO_MIN,
        cupy=_NAN_PICK_C % _ZERO_MIN),
    # Triton's unary minus is `0 - x`, which gives +0.0 for -(+0.0) (a -0.0 literal is folded to
    # +0.0 too): the Triton spellings flip the sign bit (_neg_f32/_neg_f64), -0.0 right; a NaN's
    # sign then flips as on cpu, where CUDA C's -x (the cupy spelling) gives the GPU's positive
    # canonical NaN, as torch's cuda neg does (an H100, 2026-12-06)
    _op("neg", "arith", 1, xp="negative", ufunc="negative", triton="-{0}",
        triton_float="_neg_f32({0})", triton_f64="_neg_f64({0})", cupy="-{0}"),
    _op("abs", "arith", 1, xp="abs", ufunc="absolute", triton="tl.abs({0})", cupy="abs({0})"),
    _unary_math("exp"), _unary_math("log"), _unary_math("sin"), _unary_math("cos"),
    _unary_math("sqrt", triton="tl.sqrt_rn({0})", triton_f64="tl.sqrt({0})"),
    # tanh from exp only (tensorplay_cuda.triton_fusion's _tanh/_tanh_f64: libdevice's is not
    # available in Triton's interpreter)
    _unary_math("tanh", triton="_tanh({0})", triton_f64="_tanh_f64({0})"),
    _unary_math("erf", ufunc=None, cupy=None),
    # torch.expm1 ... torch.cosh: NumPy's ufunc on the CPU (the reference and the cpu fuser
    # alike), C's function in CuPy's fuser. No Triton form: Triton's own tl.exp2/tl.log2 are
    # the approximate ex2/lg2 instructions on float32, the others exist only in libdevice, which
    # Triton's interpreter lacks; the Triton fusers decline these ops and the reference runs.
    # (trunc keeps integer dtypes: a rounding op with floor/ceil/round, not in this table.)
    _unary_math("expm1", triton=None), _unary_math("log1p", triton=None),
    _unary_math("log2", triton=None), _unary_math("log10", triton=None),
    _unary_math("exp2", triton=None),   # exp2 is NumPy's/CuPy's (the array API has none)
    _unary_math("tan", triton=None),
    _unary_math("asin", triton=None, ufunc="arcsin"),
    _unary_math("acos", triton=None, ufunc="arccos"),
    _unary_math("atan", triton=None, ufunc="arctan"),
    _unary_math("sinh", triton=None), _unary_math("cosh", triton=None),
    # composites: the reference kernels' own sequences (1 / sqrt(x), 1 / (1 + exp(-x)))
    _unary_math("rsqrt", ufunc=None, steps=(("sqrt", "x"), ("divide", 1, "x")),
                cupy="((T)1 / sqrt({0}))"),
    _unary_math("sigmoid", ufunc=None, triton="1.0 / (1.0 + tl.exp(-{0}))",
                steps=(("negative", "x"), ("exp", "x"), ("add", "x", 1), ("divide", 1, "x")),
                cupy="((T)1 / ((T)1 + exp(-{0})))"),
    # torch's cpu x < 0 ? 0 : x: NaN passes through, -0.0 stays -0.0 (the cpu fuser's steps:
    # NumPy's maximum gives its second operand on a tie, so the zero goes first); torch's cuda
    # relu gives 0.0 for -0.0 (the Triton and CuPy forms, which serve cuda: see _NAN_PICK_TL)
    _op("relu", "arith", 1, steps=(("maximum", 0, "x"),), triton="tl.where({0} <= 0, 0, {0})",
        cupy="(({0} <= (T)0) ? (T)0 : {0})"),
    # torch's (x > 0) - (x < 0): NaN gives 0. No ufunc: NumPy's sign keeps NaN (the cpu fuser
    # declines sign and the reference kernel runs)
    _op("sign", "arith", 1, xp="sign",
        triton="tl.where({0} > 0, 1, tl.where({0} < 0, -1, 0))"),
    _cmp("eq", "equal", "=="), _cmp("ne", "not_equal", "!="), _cmp("lt", "less", "<"),
    _cmp("le", "less_equal", "<="), _cmp("gt", "greater", ">"),
    _cmp("ge", "greater_equal", ">="),
    _op("logical_and", "logic", 2, xp="logical_and", ufunc="logical_and", triton="{0} & {1}"),
    _op("logical_or", "logic", 2, xp="logical_or", ufunc="logical_or", triton="{0} | {1}"),
    _op("logical_not", "logic", 1, xp="logical_not", ufunc="logical_not", triton="{0} == 0"),
    # integer and bool operands only (the reference kernels and fake rules refuse floating ones);
    # on bool, and/or/xor/not are the logical ops. Shifts: integers only, torch's out-of-range
    # rule spelled out (no ufunc: the reference kernel applies the rule)
    _op("bitwise_and", "bitwise", 2, xp="bitwise_and", ufunc="bitwise_and", triton="{0} & {1}"),
    _op("bitwise_or", "bitwise", 2, xp="bitwise_or", ufunc="bitwise_or", triton="{0} | {1}"),
    _op("bitwise_xor", "bitwise", 2, xp="bitwise_xor", ufunc="bitwise_xor", triton="{0} ^ {1}"),
    _op("bitwise_not", "bitwise", 1, xp="bitwise_invert", ufunc="invert", triton="~{0}"),
    _op("bitwise_left_shift", "bitwise", 2, xp="bitwise_left_shift", triton=_SHL_TL),
    _op("bitwise_right_shift", "bitwise", 2, xp="bitwise_right_shift", triton=_SHR_TL),
    _op("where", "where", 3, xp="where", triton="tl.where({0}, {1}, {2})"),
    _op("to_dtype", "cast", 1, triton="{0}"),
)

OPS: dict = {p.name: p for p in _TABLE}

# the ops the cuda plugin's eager fast paths take (a CuPy ufunc or kernel in front of the
# reference kernel, Triton for large arrays)
CUDA_EAGER = frozenset({"add", "sub", "rsub", "mul", "div", "rdiv", "maximum", "minimum",
                        "eq", "ne", "lt", "le", "gt", "ge",
                        "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
                        "sigmoid", "relu"})

# ops whose tensor operand wins a tie of zeros with a number operand on cpu (torch's cpu clamp by
# a number: clamp(-0.0, min=0.0) is -0.0; its cuda kernels order the zeros, as the ``triton``/
# ``cupy`` forms do whatever the order). NumPy's maximum/minimum give the second operand on such a
# tie, so the cpu fuser puts the number first.
NUMBER_LOSES_TIES = frozenset({"maximum", "minimum"})

# float16 ops whose Python-number operand torch reads at float32 rather than rounding it to
# float16 (``_dtype.SCALAR_AT_OPMATH``; ``s / t`` is ``t.reciprocal() * s``): no float16 ufunc
# computes them, the reference kernel does
HALF_NUMBER_AT_FLOAT32 = _dtype.SCALAR_AT_OPMATH | {"rdiv"}

# ``pow`` of a floating tensor by a Python number, as torch's cpu kernel computes it
# (``pow_tensor_scalar``) for float32, float64 and bfloat16 (computed at float32 and rounded
# once): six exponents never reach ``pow``. The steps are ufunc calls as a composite's
# (``Pointwise.steps``: ``"x"`` the running value, ``"x0"`` the tensor operand in any call,
# numbers constants). They fix the sign of zeros (``(-0.0) ** 0.5`` is ``-0.0``, ``** -0.5``
# ``-inf``), ``(-inf) ** 0.5`` (NaN) and the last bit of cubes, where ``pow`` differs -- and
# NumPy >= 2 takes ``sqrt`` for a broadcast 0.5 by itself, NumPy 1.26 ``pow``: the values must
# not follow the installed NumPy. float16 and integer tensors keep ``pow`` (torch's too).
POW_BY_NUMBER = {
    0.5: (("sqrt", "x"),),
    -0.5: (("sqrt", "x"), ("divide", 1, "x")),
    -1: (("divide", 1, "x"),),
    2: (("multiply", "x", "x"),),
    3: (("multiply", "x", "x"), ("multiply", "x", "x0")),
    -2: (("multiply", "x", "x"), ("divide", 1, "x")),
}


def compose(xp, steps):
    """A function of one array computing ``steps`` (``Pointwise.steps``, ``POW_BY_NUMBER``) with
    the namespace ``xp``'s functions of the same names; made once per backend, not per call."""
    calls = [(getattr(xp, fn), tuple(ops)) for fn, *ops in steps]
    if len(calls) == 1:
        (f, ops), = calls
        if ops == ("x",):
            return f
        if ops == ("x", "x"):
            return lambda x0: f(x0, x0)
        if ops == (1, "x"):
            return lambda x0: f(1, x0)

    def run(x0):
        x = x0
        for k, (f, ops) in enumerate(calls):
            x = f(*[x0 if o == "x0" or (o == "x" and not k) else x if o == "x" else o
                    for o in ops])
        return x
    return run



class Reduction:
    """A full reduction a fused chain may end with: ``triton`` reduces a block, ``atomic``
    (a ``tl`` atomic) combines the blocks' results into a one-element accumulator that starts at
    ``identity``, the value masked lanes take too (``triton_identity``: its Triton spelling)."""

    __slots__ = ("name", "triton", "atomic", "identity", "triton_identity")

    def __init__(self, name: str, triton: str, atomic: str, identity: float,
                 triton_identity: str):
        self.name, self.triton, self.atomic = name, triton, atomic
        self.identity, self.triton_identity = identity, triton_identity


REDUCTIONS: dict = {r.name: r for r in (
    Reduction("sum", "tl.sum", "atomic_add", 0, "0"),
    Reduction("amax", "tl.max", "atomic_max", -math.inf, "-float('inf')"),
    Reduction("amin", "tl.min", "atomic_min", math.inf, "float('inf')"),
)}


# -- the result layout of an elementwise op: torch's TensorIterator rule, in one place ----------
# Used by the real kernels' results (``ArrayBackend.wrap_elementwise``: every device), the fake
# rules (``_ops._shapes.out_like``) and so by tensorplay.compile's capture and replay. Facts from
# torch's ``TensorIteratorBase`` (``compute_fast_setup_type``, ``compute_strides``,
# ``reorder_dimensions``, ``allocate_or_resize_outputs``):
# * operands of one shape (a Python number or a 0-d operand beside >= 1-d ones is not "one
#   shape"): all row-major -> row-major; else all channels-last (4-D) -> channels-last; else all
#   dense, non-overlapping with equal strides -> exactly those strides;
# * otherwise the dims are sorted by the operands' strides, operands in order: a broadcast dim
#   (stride 0) leaves the pair to the next operand, a smaller stride goes inside, equal strides
#   put the larger size outside (else the next operand decides), no decision keeps row-major
#   order; the result is dense in that order (row-major when the order is row-major's).
# Outputs the user gives (``out=``, in-place ops) keep their own layout: not this rule's concern.

def _sort_dims(n, should_swap) -> list:
    """The dims ``0..n-1`` innermost first, as torch sorts them for a layout (``infer_dense_strides``,
    TensorIterator's ``reorder_dimensions``): an insertion sort from row-major order, where
    ``should_swap(d0, d1)`` (``d0`` now inside ``d1``) answers 1 (swap), -1 (keep, stop) or 0
    (no decision: look further out)."""
    perm = list(range(n - 1, -1, -1))
    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def infer_dense_strides(shape, stride) -> tuple:
    """torch's ``infer_dense_strides``: dense strides in the order of ``stride`` (insertion sort
    from the innermost dim; a stride 0 leaves two dims in row-major order; equal strides put the
    smaller size inside)."""
    n = len(shape)

    def swap(d0, d1):
        s0, s1 = stride[d0], stride[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 < s1:
            return -1
        if s0 > s1:
            return 1
        return 1 if shape[d0] > shape[d1] else 0
    perm = _sort_dims(n, swap)
    out = [0] * n
    acc = 1
    for idx in perm:
        out[idx] = acc
        if shape[idx] > 1:
            acc *= shape[idx]
    return tuple(out)


def preserve_strides(shape, stride):
    """The strides of a tensor made like one of ``shape``/``stride`` with torch's
    ``preserve_format`` (``*_like``, ``clone``, ``to``'s copy): a dense, non-overlapping one's
    exactly, another's dense in its stride order; None when they are row-major."""
    st = tuple(stride) if is_dense(shape, stride) else infer_dense_strides(shape, stride)
    return None if st == _contiguous(tuple(shape)) else st


def _row_major(shape, stride) -> bool:
    # torch's is_contiguous: size-1 dims take any stride; an empty tensor is contiguous
    expected = 1
    for s, st in zip(reversed(shape), reversed(stride)):
        if s == 1:
            continue
        if s == 0:
            return True
        if st != expected:
            return False
        expected *= s
    return True


def _channels_last(shape, stride) -> bool:
    # torch's is_contiguous(memory_format=channels_last) of a 4-D tensor
    expected = 1
    for d in (1, 3, 2, 0):
        s = shape[d]
        if s != 1:
            if stride[d] != expected:
                return False
            expected *= s
    return True


def _dense_in(shape, order):
    """Dense strides laying ``shape`` out with ``order[0]`` innermost (torch's
    ``compatible_stride``: each dim's stride is the product of the sizes inside it)."""
    out = [0] * len(shape)
    acc = 1
    for d in order:
        out[d] = acc
        acc *= shape[d]
    return tuple(out)


def iter_strides(shape, operands):
    """The strides torch's TensorIterator gives the result of an elementwise op of broadcast
    shape ``shape`` over ``operands`` (in the op's argument order): each a ``(shape, strides)``
    pair of a tensor operand (strides in elements), or None for a Python number. Returns None when the result is row-major (the common case), else
    the strides in elements. Pure Python: the real kernels, the fake rules and capture share it."""
    n = len(shape)
    if n == 0:
        return None
    same = True
    tensors = []
    for op in operands:
        if op is None:
            same = False
            continue
        s = op[0]
        if s != shape:
            same = False
        tensors.append(op)
    if not tensors:
        return None
    if same:      # torch's fast set-up: every operand of the result's shape
        if all(_row_major(s, st) for s, st in tensors):
            return None
        if n == 4 and all(_channels_last(s, st) for s, st in tensors):
            return _dense_in(shape, (1, 3, 2, 0))
        st0 = tuple(tensors[0][1])
        if all(tuple(st) == st0 for _, st in tensors) and is_dense(shape, st0):
            return st0
    # compute_strides: each operand's strides over the result's dims, 0 where it broadcasts
    strides = []
    for s, st in tensors:
        off = n - len(s)
        row = [0] * n
        for i, d in enumerate(s):
            if not (d == 1 and shape[off + i] != 1):
                row[off + i] = st[i]
        if any(row):
            strides.append(row)

    def should_swap(d0, d1):
        for row in strides:
            s0, s1 = row[d0], row[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = _sort_dims(n, should_swap)
    if all(perm[i] == n - 1 - i for i in range(n)):
        return None
    return _dense_in(shape, perm)


_LAYOUTS: dict = {}    # (shape, operands' layouts) -> iter_strides (a program's layouts are few)


def iter_strides_cached(shape, operands):
    """``iter_strides`` memoised on its (hashable) arguments: ``operands`` a tuple of
    ``(shape, strides)`` tuples or None."""
    key = (shape, operands)
    try:
        return _LAYOUTS[key]
    except KeyError:
        pass
    r = iter_strides(shape, operands)
    if len(_LAYOUTS) > 4096:
        _LAYOUTS.clear()
    _LAYOUTS[key] = r
    return r


def layout_for(shape, args, preserve=False):
    """``iter_strides`` of an elementwise op's result of shape ``shape`` from its arguments
    ``args`` as the op takes them: tensors (real, fake or captured: their sizes and strides read
    without guards, as the graph's signature holds them), Python numbers, None for an absent
    optional operand (left out). None when row-major. ``preserve``: a one-operand copy whose
    result torch lays out by ``preserve_format`` instead (``to``'s dtype conversion:
    ``preserve_strides``)."""
    ops = []
    row_major = True
    for a in args:
        st = getattr(a, "stride_tuple", None)
        if st is None:
            if a is not None:
                ops.append(None)
            continue
        s, st = tuple(tuple.__iter__(a.raw_shape)), tuple(tuple.__iter__(st))
        if row_major and st != _contiguous(s):
            row_major = False
        ops.append((s, st))
    if preserve and ops[0] is not None:
        return None if row_major else preserve_strides(*ops[0])
    if row_major:
        # row-major operands: a row-major result, as the generated adapters' own test says
        # without this call (torch's rule differs only for an empty broadcast result)
        return None
    shape, ops = tuple(tuple.__iter__(shape)), tuple(ops)
    try:
        return iter_strides_cached(shape, ops)
    except TypeError:     # symbolic sizes (torch's, through tensorplay-torch): no cache
        return iter_strides(shape, ops)


def _contiguous(shape):
    try:
        return contiguous_strides_cached(shape)
    except TypeError:     # symbolic sizes: the same rule, uncached
        st, acc = [], 1
        for s in reversed(shape):
            st.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(st))
