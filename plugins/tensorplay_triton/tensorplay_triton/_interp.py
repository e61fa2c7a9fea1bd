"""Triton's interpreter, chosen per launch: every launch on cpu tensors runs here.

Triton picks its interpreter when a kernel is *decorated* (``TRITON_INTERPRET=1`` at that moment
gives an ``InterpretedFunction``, otherwise a ``JITFunction``), and Triton's own helpers (``tl.sum``,
``tl.max``, ... in ``triton.language.standard``) are decorated when ``triton`` is first imported.
A process therefore had to decide once, before importing triton. Here the decision is per launch:

* ``interpreted(jf)`` gives the ``InterpretedFunction`` of a ``JITFunction`` (built once, cached);
* ``launch(call, kernels)`` runs ``call()`` inside an *interpreter scope*, during which (and only
  then; everything is restored afterwards, so compiled launches are unaffected):

  - ``triton.language`` is patched once for the launch, at the kernel's entry (Triton re-patches it
    at every interpreted function it enters, each nested ``tl.sum``/``tl.max`` included, and its
    ``InterpretedFunction.__call__`` never undoes that, which would break later compiled launches
    in the same process); a ``@triton.jit`` function called from inside an interpreted kernel
    (Triton's helpers or the user's) is interpreted too;
  - names bound at import time to objects the patches replace (``from
    triton.language.extra.libdevice import rsqrt``, ``from triton.language import arange``) are
    rebound in the module globals of each function the launch enters, as the compiler resolves
    them by the object whatever the name (``_patch_lang_once``);
  - constexpr parameters are those the compiler sees (``"constexpr"`` in the annotation): string
    annotations (``BLOCK: "tl.constexpr"``, ``from __future__ import annotations`` modules,
    ``triton.language.constexpr``) included (``_constexpr_annotations``);
  - the names Triton's interpreter copies into the module globals of every function it rewrites
    (all of ``triton.runtime.interpreter``'s globals that module lacks: ``triton.language.standard``
    for ``tl.sum``, the user's kernel module, ...; the rewritten code needs some of them) are there
    only during the scope: put back when it starts, removed when it ends;
  - Triton's patch scope records ``getattr(obj, name)``, so restoring an *inherited* attribute
    (``tl.tensor.__repr__``) would copy it onto the class; here it records what the object itself
    holds, so a restore deletes what the patch added;
  - the inner ``JITFunction`` of an ``@triton.autotune`` / ``@triton.heuristics`` chain runs
    interpreted, and autotuning uses the first configuration the user's pruning keeps, untimed,
    keeping its choices apart from those made on the GPU (``_no_timing``);
  - **NumPy >= 2.4**: an interpreted scalar is a 1-element array, and NumPy 2.4 refuses ``int()`` on
    arrays with ``ndim > 0``, so a loop bounded by a scalar argument (``range(0, N, BLOCK)``,
    ``tl.range(...)``) failed (Triton issue 9171; upstream fixed ``__index__`` in PR 9172, after 3.6,
    by squeezing the array before ``int()``). Here, equivalently, ``__index__`` of an
    interpreted tensor reads its single element instead (``.item()``), which every NumPy accepts;
  - float scalar arguments become ``fp32`` interpreted tensors, as compiled kernels type them, so
    ``eps.to(tl.float32)`` and friends work (Triton hands them to interpreted kernels as Python
    floats);
  - ``triton.language.extra.libdevice`` functions (``rsqrt``, ``tanh``, ``exp2``, ``pow``, ...; also
    those of the cuda and hip libdevice modules) are evaluated with NumPy (Triton's interpreter
    returns ``None`` for them: Triton issue 8825), however they are spelled; a libdevice
    function without a NumPy equivalent raises ``NotImplementedError`` naming it. Each call keeps
    the compiler's signatures (the function's own dtype table: ``abs`` of an int32 is computed in
    int32, an fp16 or bf16 argument no table lists is refused as the compiler refuses it);
  - bfloat16 operands (stored by the interpreter as their 16-bit patterns, on which NumPy's
    arithmetic, comparisons, math functions, dots and reductions would silently compute) are
    computed in float32 and rounded back to bfloat16, as the GPU evaluates them.

  - the variable of a ``for i in range(...)`` / ``tl.range(...)`` loop is a scalar tensor of the
    integer promotion of the bounds' types (int32, or int64 for an int64 bound), as the compiler's
    ``scf.for`` makes it, not a Python int (``i.to(tl.int64)``, ``i.dtype``: flash-linear-attention's
    ``chunk_fwd_kernel_h``); ``tl.static_range`` keeps its constexpr (``_LoopVarsAsCompiled``).

  - NumPy's floating-point error handling is off during the launch (``numpy.errstate(all=
    "ignore")``): the interpreter evaluates masked lanes too, so ``tl.log`` of an ``other=0.0``
    load warned "divide by zero" (or raised under the caller's ``errstate``) where a GPU computes
    IEEE results silently.

Interpreted launches are serialised by a lock: Triton's interpreter patches the global
``triton.language`` module while a kernel runs, so two interpreted kernels cannot run at once.
Compiles on other threads take the same lock for their frontend (``ASTSource.make_ir``, the one
compile stage that reads ``triton.language``; ``_serialise_frontend``): a kernel compiled during
an interpreted launch -- a cuda kernel's first launch on torch's autograd thread, or on any
other thread -- otherwise called the interpreter's builtins and failed with ``AttributeError:
'block_argument' object has no attribute 'dtype'``, and an interpreted launch starting during a
compile would change the language under it.
These are Triton internals: the versions tested are pinned in ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import math
import sys
import threading

import numpy as np

from . import _bounds, _driver

_lock = threading.RLock()
_INTERP: dict = {}          # id(JITFunction) -> (JITFunction, InterpretedFunction)
_T: dict = {}               # lazily imported Triton pieces
_HOST_CACHE: dict = {}      # id(Autotuner) -> (Autotuner, its configs chosen on the host)


def _triton():
    t = _T.get("interp")
    if t is None:
        import triton.language as tl
        from triton.runtime import interpreter as t
        from triton.runtime.jit import JITFunction
        _T["tl"] = tl
        _T["jit"] = JITFunction
        _serialise_frontend()
        _T["interp"] = t
    return t


def _serialise_frontend():
    """Make Triton's compiler frontend (``ASTSource.make_ir``: the kernel's Python to its first IR)
    hold ``_lock``, as interpreted launches do, so that no compile reads ``triton.language`` while a
    launch has it patched (see the module doc). Installed once, before the first interpreted
    launch; the later compile stages (MLIR passes, ``ptxas``) run unlocked."""
    from triton.compiler import compiler
    src = getattr(compiler, "ASTSource", None)
    make_ir = getattr(src, "make_ir", None)
    if make_ir is None or getattr(make_ir, "_tensorplay_serialised", False):
        return

    def serialised_make_ir(self, *args, **kwargs):
        with _lock:
            return make_ir(self, *args, **kwargs)
    serialised_make_ir._tensorplay_serialised = True
    serialised_make_ir.__wrapped__ = make_ir
    serialised_make_ir.__doc__ = make_ir.__doc__
    src.make_ir = serialised_make_ir


def interpreted(jf):
    """The ``InterpretedFunction`` running ``jf.fn`` (``jf`` a ``JITFunction``), cached per kernel."""
    e = _INTERP.get(id(jf))
    if e is not None and e[0] is jf:
        return e[1]
    interp = _triton()
    f = interp.InterpretedFunction(jf.fn)
    f.pre_run_hooks = list(getattr(jf, "pre_run_hooks", ()))
    _INTERP[id(jf)] = (jf, f)
    return f


def jit(fn=None, **options):
    """Same as ``triton.jit``, except the result is always a ``JITFunction``, whatever
    ``TRITON_INTERPRET`` says when it is decorated: ``wrap_triton`` then interprets it on cpu tensors
    and compiles it on cuda tensors (``triton.jit`` under ``TRITON_INTERPRET=1`` gives an
    ``InterpretedFunction``, which has no compiled form). ``options``: ``triton.jit``'s keywords
    (``do_not_specialize``, ``debug``, ``noinline``, ...). For kernels generated at run time, so the
    process environment cannot change what they are."""
    _triton()
    JITFunction = _T["jit"]

    def decorator(f):
        return JITFunction(f, **options)
    return decorator if fn is None else decorator(fn)


# -- the scope ---------------------------------------------------------------------------------

_CALL = object()


class _Patches:
    """Attributes set for the scope and restored, in reverse order, when it ends."""

    __slots__ = ("_undo",)

    def __init__(self):
        self._undo = []

    def set(self, obj, name, value):
        had = name in obj.__dict__ if not isinstance(obj, type) else name in vars(obj)
        self._undo.append((obj, name, had, getattr(obj, name, None) if had else None))
        setattr(obj, name, value)

    def undo(self, fn, arg):
        """Call ``fn(arg)`` at restore time (in reverse order with the other patches)."""
        self._undo.append((fn, arg, None, _CALL))

    def restore(self):
        while self._undo:
            obj, name, had, old = self._undo.pop()
            if old is _CALL:
                obj(name)
            elif had:
                setattr(obj, name, old)
            else:
                try:
                    delattr(obj, name)
                except AttributeError:
                    pass


def _nested_call(self, *args, **kwargs):
    """``JITFunction.__call__`` / ``InterpretedFunction.__call__`` inside an interpreted kernel:
    the language is already patched for the launch; only the callee's module names are resolved
    (once per module and launch, see ``_patch_lang_once``)."""
    interp = _T["interp"]
    f = self if isinstance(self, interp.InterpretedFunction) else interpreted(self)
    _patch_lang_once(f.fn)
    try:
        return f.rewrite()(*args, **kwargs)
    except interp.InterpreterError:
        raise
    except Exception as e:
        raise interp.InterpreterError(repr(e)) from e


def _index(self):
    # the fix for NumPy >= 2.4: a scalar is a 1-element array; read the element itself
    return int(self.handle.data.reshape(-1)[0].item())


def _scalar_cvt(orig):
    interp, tl = _T["interp"], _T["tl"]

    def cvt(arg):
        if arg.__class__ is float:
            return tl.tensor(interp.TensorHandle(np.array([arg], dtype=np.float32), tl.float32),
                             tl.float32)
        return orig(arg)
    return cvt


def _patch_tensor_fn(orig):
    def patch_lang_tensor(tensor, scope):
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", _index)
    return patch_lang_tensor


_INJECTED: dict = {}        # id(globals) -> (globals, {name: value}): what Triton's rewriter added
# (globals, name, value) put into module globals by the launch in progress: only these are taken
# out when it ends. A module that binds the same object itself later (``from triton import
# language as tl`` after a launch from that module injected ``tl``) keeps its own name.
_ADDED_NOW: list = []
_DEPTH = [0]                # nesting of interpreter scopes (the outermost one adds/removes names)


class _BoolOpsAsCompiled(ast.NodeTransformer):
    """``a and b`` / ``a or b`` in a kernel, as Triton's compiler reads them.

    The compiler evaluates both operands and applies ``logical_and`` / ``logical_or`` (elementwise
    on tensors, plain ``and``/``or`` on constexprs). Triton's interpreter rewrites chained
    comparisons only, so Python's ``and`` kept one whole operand of two tensors: FlagGems'
    ``mask = rows < M and cols < N`` became ``cols < N``, and the kernel read and wrote out of
    bounds. Each such expression becomes a call of ``_bool_op`` below, reached through
    ``__import__`` (a builtin in every module), so no name is added to the kernel's module."""

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        which = "and" if isinstance(node.op, ast.And) else "or"
        mod = ast.Call(func=ast.Name("__import__", ast.Load()),
                       args=[ast.Constant(__name__)],
                       keywords=[ast.keyword("fromlist", ast.Constant(("_bool_op",)))])
        out = node.values[0]
        for v in node.values[1:]:            # the compiler refuses longer chains; fold them
            out = ast.Call(func=ast.Attribute(mod, "_bool_op", ast.Load()),
                           args=[ast.Constant(which), out, v], keywords=[])
        return ast.copy_location(out, node)


_BOOL_OPS = _BoolOpsAsCompiled()


def _bool_op(which: str, a, b):
    """``logical_and``/``logical_or`` when either operand is a tensor, Python's operator
    otherwise (constexprs, Python numbers): what the compiler's ``visit_BoolOp`` gives."""
    t = _T["tl"].tensor
    if not isinstance(a, t):
        if not isinstance(b, t):
            return (a and b) if which == "and" else (a or b)
        a, b = b, a                          # both are symmetric
    return a.logical_and(b) if which == "and" else a.logical_or(b)


class _LoopVarsAsCompiled(ast.NodeTransformer):
    """``for i in range(...)`` / ``tl.range(...)`` in a kernel, with ``i`` typed as the compiler
    types it.

    The compiler lowers both to ``scf.for``, whose induction variable is a scalar *tensor* of the
    integer promotion of the bounds' types (int32 for Python ints that fit, an int64 bound makes
    it int64): kernels call ``i.to(tl.int64)`` on it (flash-linear-attention's ``chunk_fwd_kernel_h``)
    or read ``i.dtype``. Triton's interpreter runs the loop as Python's ``range``, so ``i`` was a
    Python int and ``i.to`` raised ``AttributeError: 'int' object has no attribute 'to'``. Each such
    loop's iterable becomes a call of ``_loop_range`` below (reached through ``__import__``, as
    ``_bool_op``), which yields the interpreter's scalar tensors of that type.
    ``tl.static_range`` is left alone: the compiler unrolls it with a constexpr variable."""

    def visit_For(self, node):
        self.generic_visit(node)
        it = node.iter
        if isinstance(it, ast.Call) and (
                (isinstance(it.func, ast.Name) and it.func.id == "range")
                or (isinstance(it.func, ast.Attribute) and it.func.attr == "range")):
            mod = ast.Call(func=ast.Name("__import__", ast.Load()),
                           args=[ast.Constant(__name__)],
                           keywords=[ast.keyword("fromlist", ast.Constant(("_loop_range",)))])
            node.iter = ast.copy_location(
                ast.Call(func=ast.Attribute(mod, "_loop_range", ast.Load()),
                         args=[it.func, *it.args], keywords=it.keywords), it)
        return node


_LOOP_VARS = _LoopVarsAsCompiled()

_INT_NP = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
           "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}


def _bound_type(b):
    """The compiler's type of a loop bound (``semantic.to_tensor``): a tensor's dtype, a Python
    int's as the interpreter converts arguments (int32 if it fits, else uint32 / int64 / uint64)."""
    tl = _T["tl"]
    if isinstance(b, tl.constexpr):
        b = b.value
    if isinstance(b, tl.tensor):
        return b.dtype
    if isinstance(b, bool):
        return tl.int1
    b = int(b)
    return (tl.int32 if -2**31 <= b < 2**31 else tl.uint32 if 0 <= b < 2**32
            else tl.int64 if -2**63 <= b < 2**63 else tl.uint64)


def _promote(a, b):
    """``semantic.integer_promote_impl``: the wider type; of a signed and an unsigned one, the
    unsigned when it is at least as wide, else the signed."""
    if a.is_int_signed() == b.is_int_signed():
        return a if a.int_bitwidth >= b.int_bitwidth else b
    u, s = (a, b) if a.is_int_unsigned() else (b, a)
    return u if u.int_bitwidth >= s.int_bitwidth else s


def _loop_range(fn, *args, **kwargs):
    """The iterable of ``for i in fn(*args, **kwargs)`` (``range`` or ``tl.range``, which the
    interpreter makes Python's range): its values as scalar tensors of the compiler's type."""
    interp, tl = _T["interp"], _T["tl"]
    bounds = [*args[:3], *(kwargs[k] for k in ("arg1", "arg2", "step") if kwargs.get(k) is not None)]
    ty = tl.int32
    for b in bounds:
        bt = _bound_type(b)
        ty = _promote(ty, bt if bt.is_int() and bt.int_bitwidth >= 8 else tl.int32)
    np_ty = _INT_NP[ty.name]
    for i in fn(*args, **kwargs):
        yield tl.tensor(interp.TensorHandle(np.array([i], dtype=np_ty), ty), ty)


def _track_injections(orig):
    """``FunctionRewriter._compile_and_exec`` recording the names it adds to the function's
    module globals (Triton adds every interpreter global the module lacks, and never removes it)."""
    interp = _T["interp"]

    def _compile_and_exec(self, transformed_ast):
        g = self.fn.__globals__
        added = {k: v for k, v in vars(interp).items() if k not in g}
        try:
            transformed_ast = ast.fix_missing_locations(
                _LOOP_VARS.visit(_BOOL_OPS.visit(transformed_ast)))
            return _constexpr_annotations(self.fn, orig(self, transformed_ast))
        finally:
            added = {k: v for k, v in added.items() if g.get(k, _CALL) is v}
            _ADDED_NOW.extend((g, k, v) for k, v in added.items())
            if added:
                e = _INJECTED.get(id(g))
                if e is None or e[0] is not g:
                    e = _INJECTED[id(g)] = (g, {})
                e[1].update(added)
    return _compile_and_exec


def _is_constexpr(annotation) -> bool:
    """The compiler's rule (``KernelParam.is_constexpr``): "constexpr" in the normalised annotation,
    so ``tl.constexpr``, ``"tl.constexpr"`` and ``"triton.language.constexpr"`` all count."""
    if annotation is _T["tl"].constexpr:
        return True
    if isinstance(annotation, str):
        return "constexpr" in annotation
    return "constexpr" in getattr(annotation, "__name__", "")


def _constexpr_annotations(fn, rewritten):
    """``rewritten`` (Triton's rewrite of ``fn``) with the constexpr parameters the compiler sees.

    Triton's interpreter finds a kernel's constexpr parameters by comparing the *rewritten*
    function's annotations with "constexpr" after dropping a "tl." prefix. The rewrite is compiled
    under ``from __future__ import annotations``, so a string annotation (``BLOCK: "tl.constexpr"``,
    PyTorch's own ``triton_op`` example) arrives quoted twice, and ``triton.language.constexpr``
    (or any string in a ``from __future__ import annotations`` module) never matches: the argument
    then became an interpreter tensor and ``tl.arange`` refused it. Here every parameter the
    compiler treats as constexpr is annotated ``tl.constexpr`` on the rewritten function."""
    ann = getattr(fn, "__annotations__", None)
    target = getattr(rewritten, "__annotations__", None)
    if not ann or target is None or rewritten is fn:
        return rewritten
    cx = _T["tl"].constexpr
    for name, a in ann.items():
        if name != "return" and _is_constexpr(a):
            target[name] = cx
    return rewritten


def _lang_set_attr(self, obj, name, value):
    """``_LangPatchScope.set_attr`` recording the object's own attribute (not an inherited one)."""
    own = getattr(obj, "__dict__", None)
    if own is None:
        original = getattr(obj, name, _T["interp"]._MISSING)
    else:
        original = own[name] if name in own else _T["interp"]._MISSING
    self._changes.append((obj, name, original))
    setattr(obj, name, value)


def _add_injected(_=None):
    for g, names in _INJECTED.values():
        for k, v in names.items():
            if k not in g:
                g[k] = v
                _ADDED_NOW.append((g, k, v))


def _remove_injected(_=None):
    # only what this launch added and is still the injected object: a name the module has since
    # bound (to another object, or before this launch to the same one) is its own
    while _ADDED_NOW:
        g, k, v = _ADDED_NOW.pop()
        if g.get(k, _CALL) is v:
            del g[k]


def launch(call, chain=()):
    """Run ``call()`` (an interpreted launch) inside the interpreter scope (see module doc).

    ``chain``: the kernel objects of the launch (``Autotuner``/``Heuristics`` wrappers and the inner
    ``JITFunction``); a ``JITFunction`` reached through a wrapper runs interpreted for this launch.
    """
    interp = _triton()
    JITFunction = _T["jit"]
    with _lock:
        p = _Patches()
        try:
            if _DEPTH[0] == 0:
                _add_injected()
                p.undo(_remove_injected, None)
                # the language is patched once for the whole launch (see _patch_lang_once)
                _LAUNCH[0] = _Launch(p, interp._patch_lang)
                p.undo(_end_launch, None)
                p.set(interp, "_patch_lang", _patch_lang_once)
            _DEPTH[0] += 1
            p.undo(_leave, None)
            rw = getattr(interp, "FunctionRewriter", None)
            if rw is not None and hasattr(rw, "_compile_and_exec"):
                p.set(rw, "_compile_and_exec", _track_injections(rw._compile_and_exec))
            sc = getattr(interp, "_LangPatchScope", None)
            if sc is not None and hasattr(interp, "_MISSING") and hasattr(sc, "set_attr"):
                p.set(sc, "set_attr", _lang_set_attr)
            p.set(JITFunction, "__call__", _nested_call)
            p.set(interp.InterpretedFunction, "__call__", _nested_call)
            p.set(interp, "_implicit_cvt", _scalar_cvt(interp._implicit_cvt))
            p.set(interp, "_patch_lang_tensor", _patch_tensor_fn(interp._patch_lang_tensor))
            _patch_libdevice(p)
            _patch_bf16(p)
            if _bounds.wanted():        # loads/stores inside the arguments' memory (_bounds)
                _bounds.install(p, interp)
            for k in chain[:-1] if len(chain) > 1 else ():
                if hasattr(k, "configs") and isinstance(getattr(k, "cache", None), dict):
                    # autotune on the host clock, into a cache of its own: Triton keys the choice
                    # by argument values and dtypes, not device, and a config timed by the
                    # interpreter says nothing about the GPU (and vice versa)
                    if getattr(k, "_do_bench", 0) is None:
                        p.set(k, "do_bench", _driver.host_do_bench)
                    e = _HOST_CACHE.get(id(k))
                    if e is None or e[0] is not k:
                        e = _HOST_CACHE[id(k)] = (k, {})
                    p.set(k, "cache", e[1])
                    _no_timing(p, k)
            inner = chain[-1] if chain else None
            if len(chain) > 1 and isinstance(inner, JITFunction):
                p.set(inner, "run", interpreted(inner).run)
            # the interpreter computes masked lanes too (log(0), 1/0 of `other=0.0` loads): a
            # GPU gives their IEEE results silently, and so does this launch (no NumPy warning
            # or FloatingPointError); the caller's settings are back when the launch returns
            with np.errstate(all="ignore"):
                return call()
        finally:
            p.restore()


def _leave(_):
    _DEPTH[0] -= 1


# -- autotuning under the interpreter ----------------------------------------------------------
# Timing configurations on the interpreter says nothing about the GPU (the GPU makes its own
# choice, in its own cache), and it runs the kernel (warm-up + repetitions) once per configuration
# before the real call: the first call of an autotuned kernel cost 25x the next ones. The
# configurations an autotuner is given must all compute the same result, so on the interpreter the
# first configuration the user's pruning keeps (``prune_configs_by``: ``early_config_prune``, then
# ``perf_model``/``top_k``) is used, without timing: the choice is deterministic, and configurations
# that differ only in what the interpreter ignores (``num_warps``, ``num_stages``, ``num_ctas``,
# ``maxnreg``) cost nothing at all.

def _no_timing(p: _Patches, k):
    """Make autotuner ``k`` pick its first kept configuration, untimed, for this launch."""
    orig_prune = k.prune_configs

    def prune_configs(kwargs):
        return list(orig_prune(kwargs))[:1]

    def untimed(*args, config, **meta):
        # reached only on releases that time even a single configuration (3.6); the autotuner's
        # own hook (reset_to_zero after timing) is then skipped too, as 3.9 skips both
        return [0.0, 0.0, 0.0]
    p.set(k, "prune_configs", prune_configs)
    p.set(k, "_bench", untimed)
    p.set(k, "pre_hook", _no_hook)
    if getattr(k, "cache_results", False):
        p.set(k, "cache_results", False)     # the disk cache keys on the GPU target


def _no_hook(*args, **kwargs):
    return None


# -- the language, patched once per launch; names resolved as the compiler resolves them -------
# Triton's interpreter patches ``triton.language`` (its builtins, ``tl.tensor``, ``tl.reduce``...)
# every time it enters an interpreted function -- the kernel and each nested ``@triton.jit`` call,
# ``tl.sum`` and ``tl.max`` included -- walking the modules' members each time (1.09 s of a 2.7 s
# cross-entropy launch). Here the first entry of a launch patches ``triton.language`` and
# ``triton.language.core`` for the whole launch (restored when it ends); later entries patch
# nothing.
#
# The patches replace *module attributes*, so a name bound at import time (``from
# triton.language.extra.libdevice import rsqrt``, ``from triton.language import arange``) still
# held the unpatched object: libdevice stubs returned ``None``, builtins asked for ``@triton.jit``.
# Triton's compiler resolves such names by the object (a libdevice stub by its module and name, a
# builtin by its marker), whatever the name. Here likewise: the module globals of every function
# the launch enters (the kernel's module, helpers' modules, ``triton.language.standard``) have each
# name bound to a patched object rebound to its replacement, once per module and launch, and put
# back when the launch ends.

class _Launch:
    __slots__ = ("orig", "p", "resolved", "subst")

    def __init__(self, p, orig):
        self.p = p
        self.orig = orig            # Triton's _patch_lang
        self.subst = None           # id(original) -> (original, replacement), once patched
        self.resolved = set()       # id() of the module globals already resolved


_LAUNCH: list = [None]


def _end_launch(_):
    _LAUNCH[0] = None


class _NoScope:
    __slots__ = ()

    def restore(self):
        return None


_NO_SCOPE = _NoScope()


class _LangGlobals:
    """Stands for a function that sees ``triton.language`` and ``triton.language.core``."""

    __slots__ = ("__globals__",)

    def __init__(self, tl):
        self.__globals__ = {"tl": tl, "core": tl.core}


def _patch_lang_once(fn):
    """``_patch_lang`` inside a launch: patch the language on the first call, then only resolve the
    module names of ``fn`` (see above). Returns a scope whose ``restore`` does nothing (the launch
    restores)."""
    st = _LAUNCH[0]
    if st.subst is None:
        tl = _T["tl"]
        mods = (tl, tl.core, tl.math)
        before = [dict(vars(m)) for m in mods]
        st.p.undo(_restore_scope, st.orig(_LangGlobals(tl)))
        subst = dict(_libdevice_subst())
        for m, old in zip(mods, before):
            now = vars(m)
            for name, v in old.items():
                r = now.get(name, v)
                if r is not v:
                    subst[id(v)] = (v, r)
        st.subst = subst
    g = getattr(fn, "__globals__", None)
    if g is not None and id(g) not in st.resolved:
        st.resolved.add(id(g))
        _resolve_names(g, st)
    return _NO_SCOPE


def _restore_scope(scope):
    scope.restore()


def _resolve_names(g: dict, st: _Launch):
    subst = st.subst
    found = []
    for k, v in g.items():
        e = subst.get(id(v))
        if e is not None and e[0] is v:
            found.append((k, v, e[1]))
    for k, v, r in found:
        g[k] = r
        st.p.undo(_put_back, (g, k, v, r))


def _put_back(entry):
    g, k, v, r = entry
    if g.get(k, _CALL) is r:        # a name the module has rebound since is its own
        g[k] = v


# -- libdevice under the interpreter -----------------------------------------------------------

def _erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


def _round_away(x):
    return np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5))


_UNARY = {
    "rsqrt": lambda x: 1 / np.sqrt(x), "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "exp": np.exp,
    "exp2": np.exp2, "exp10": lambda x: np.power(x.dtype.type(10), x), "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "erf": _erf, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "rint": np.rint, "nearbyint": np.rint, "round": _round_away, "abs": np.abs, "fabs": np.abs,
    "rcp_rn": lambda x: 1 / x, "fast_expf": np.exp, "fast_logf": np.log, "fast_log2f": np.log2,
    "fast_exp10f": lambda x: np.power(x.dtype.type(10), x), "fast_tanf": np.tan,
    "fast_sinf": np.sin, "fast_cosf": np.cos, "fast_log10f": np.log10, "saturatef":
    lambda x: np.clip(x, 0, 1), "cbrt": np.cbrt, "rcbrt": lambda x: 1 / np.cbrt(x),
    "signbit": lambda x: np.signbit(x).astype(np.int32), "isnan": lambda x: np.isnan(x).astype(np.int32),
    "isinf": lambda x: np.isinf(x).astype(np.int32),
    "finitef": lambda x: np.isfinite(x).astype(np.int32),
    "isfinited": lambda x: np.isfinite(x).astype(np.int32),
}
_BINARY = {
    "pow": np.power, "powf": np.power, "fast_powf": np.power, "atan2": np.arctan2,
    "fmod": np.fmod, "fmin": np.fmin, "fmax": np.fmax, "hypot": np.hypot, "copysign": np.copysign,
    "div_rn": np.divide, "fast_dividef": np.divide, "remainder": np.remainder,
    "nextafter": np.nextafter, "fdim": lambda a, b: np.maximum(a - b, 0),
}
_TERNARY = {"fma": lambda a, b, c: a * b + c, "fma_rn": lambda a, b, c: a * b + c}


def _vec(f):
    return lambda x: np.vectorize(f, otypes=[x.dtype])(x) if x.size else x.copy()


_UNARY.update({
    "fast_tanhf": np.tanh, "sinpi": lambda x: np.sin(np.pi * x), "cospi": lambda x: np.cos(np.pi * x),
    "erfc": _vec(math.erfc), "lgamma": _vec(math.lgamma), "tgamma": _vec(math.gamma),
    "normcdf": lambda x: 0.5 * (1 + _erf(x / np.sqrt(x.dtype.type(2)))),
})
_BINARY.update({"rhypot": lambda a, b: 1 / np.hypot(a, b)})
# Rounding-mode variants (_rn/_rz/_rd/_ru) are evaluated with NumPy's round-to-nearest: the
# interpreter checks a kernel's logic, not last-bit rounding.
for _m in ("rn", "rz", "rd", "ru"):
    _UNARY.setdefault(f"sqrt_{_m}", np.sqrt)
    _UNARY.setdefault(f"rcp_{_m}", lambda x: 1 / x)
    _BINARY.setdefault(f"div_{_m}", np.divide)
    _BINARY[f"add_{_m}"] = np.add
    _BINARY[f"sub_{_m}"] = np.subtract
    _BINARY[f"mul_{_m}"] = np.multiply
    _TERNARY[f"fma_{_m}"] = lambda a, b, c: a * b + c
_LIBDEVICE_MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
                      "triton.language.extra.hip.libdevice")


def _as_interp_tensor(a):
    interp, tl = _T["interp"], _T["tl"]
    if isinstance(a, tl.constexpr):
        a = a.value
    if isinstance(a, tl.tensor):
        return a
    if isinstance(a, bool) or not isinstance(a, (int, float)):
        raise TypeError(f"libdevice: expected a tensor or a number, got {type(a).__name__}")
    if isinstance(a, float):
        return tl.tensor(interp.TensorHandle(np.array([a], dtype=np.float32), tl.float32), tl.float32)
    return tl.tensor(interp.TensorHandle(np.array([a], dtype=np.int32), tl.int32), tl.int32)


def _from_numpy(out, block, sty=None):
    """An interpreted tensor holding ``out`` (a NumPy array) of Triton type ``sty`` (by default
    the one of ``out``'s dtype); a block tensor if ``block``."""
    interp, tl = _T["interp"], _T["tl"]
    if sty is None:
        sty = {"int32": tl.int32, "int64": tl.int64, "float16": tl.float16, "float32": tl.float32,
               "float64": tl.float64}[out.dtype.name]
    ty = tl.block_type(sty, list(out.shape)) if block else sty
    return tl.tensor(interp.TensorHandle(out, sty), ty)


# -- the signatures the compiler accepts ----------------------------------------------------------
# A libdevice function compiles only for the argument dtypes its table lists (``abs``: int32,
# int64, fp32, fp64; ``asin``: fp32, fp64; none takes fp16 or bf16), with the result dtype the
# table gives; any other dtypes are a compile error (a KeyError of the table on 3.6 to 3.9: no
# promotion is tried first). The NumPy versions computed in whatever NumPy promoted to: abs of an
# int32 went through float32 (abs(-16777217) gave 16777216), exp of a bfloat16 ran on its 16-bit
# pattern (exp(1.0) gave inf), fp16 computed where the GPU refuses to compile. Here each call
# looks its argument dtypes up in the table of the backend module the compiler would use (the
# cuda one for ``triton.language.extra.libdevice``; Python floats are fp32 and ints int32, as
# ``to_tensor`` types them), raises the compiler's error for dtypes it lacks, and computes in the
# listed dtypes, returning the listed result dtype.

_LD_SIGS: dict = {}          # (backend module name, function name) -> table, or None
_LD_ORIG: dict = {}          # libdevice module name -> its own public functions (see below)


class _Table(Exception):
    def __init__(self, table):
        super().__init__()
        self.table = table


def _record_table(lib_name, lib_path, args, arg_type_symbol_dict, is_pure, _semantic=None):
    raise _Table(arg_type_symbol_dict)


def _ld_signatures(backend, name, arity):
    """``{(arg dtype names...): result dtype name}`` of libdevice function ``name`` in module
    ``backend`` (read from the function itself: it builds the table when called), or ``None``
    when the module has no such function or the table cannot be read."""
    key = (backend, name)
    if key not in _LD_SIGS:
        table = None
        try:
            import importlib
            mod = importlib.import_module(backend)
            # the module's own function, also while a launch has swapped in the NumPy versions
            fn = _LD_ORIG.get(backend, vars(mod)).get(name)
            # swapped for the call only: this runs inside an interpreted launch, under _lock,
            # which compiles on other threads also take for their frontend (the one stage that
            # calls core.extern_elementwise)
            core = _T["tl"].core
            orig = core.extern_elementwise
            core.extern_elementwise = _record_table
            try:
                fn(*([None] * arity), _semantic=object())
            except _Table as t:
                table = {tuple(d.name for d in k): v[1].name for k, v in t.table.items()}
            finally:
                core.extern_elementwise = orig
        except Exception:  # noqa: BLE001 - no table: the NumPy version runs unchecked
            table = None
        _LD_SIGS[key] = table
    return _LD_SIGS[key]


_NP_OF = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64, "int32": np.int32,
          "int64": np.int64, "uint32": np.uint32, "uint64": np.uint64, "int1": np.bool_}


def _make_elementwise(name, fn, arity, backend):
    def libdevice_fn(*args, _semantic=None, **kwargs):
        if kwargs:
            args = args + tuple(kwargs.values())
        if len(args) != arity:
            raise TypeError(f"libdevice.{name} takes {arity} argument(s), got {len(args)}")
        ts = [_as_interp_tensor(a) for a in args]
        block = any(t.type.is_block() for t in ts)
        datas = [t.handle.data for t in ts]
        table = _ld_signatures(backend, name, arity)
        sty = None
        if table is not None:
            got = tuple(t.dtype.name for t in ts)
            if got not in table:
                raise ValueError(
                    f"libdevice.{name}: input arg type does not match. Expect one of "
                    f"{sorted(table)}, got {got} (the compiler refuses these dtypes too: cast the "
                    f"arguments, e.g. x.to(tl.float32))")
            datas = [d.astype(_NP_OF[n], copy=False) for d, n in zip(datas, got)]
            rname = table[got]
            sty = getattr(_T["tl"], {"fp16": "float16", "fp32": "float32", "fp64": "float64",
                                     "int1": "int1"}.get(rname, rname))
            ft = np.result_type(*[d.dtype for d in datas])
            if ft.kind != "f":
                ft = np.dtype(_NP_OF.get(rname, np.float32))
            rt = np.dtype(_NP_OF[rname])
        else:
            ft = np.result_type(*[d.dtype for d in datas])
            if ft.kind != "f":
                ft = np.dtype(np.float32)
            rt = None
        if block:
            datas = np.broadcast_arrays(*datas)
        with np.errstate(all="ignore"):
            if rt is not None and rt.kind in "iu" and all(d.dtype.kind in "iu" for d in datas):
                out = np.asarray(fn(*datas))       # integer signatures compute in integers
            else:
                out = np.asarray(fn(*[d.astype(ft, copy=False) for d in datas]))
        if rt is not None:
            out = out.astype(rt, copy=False)
        elif out.dtype != np.int32:
            out = out.astype(ft, copy=False)
        return _from_numpy(np.ascontiguousarray(out), block, sty)
    libdevice_fn.__name__ = name
    return libdevice_fn


def _unsupported(name):
    def libdevice_fn(*args, _semantic=None, **kwargs):
        raise NotImplementedError(
            f"libdevice.{name} has no NumPy equivalent in tensorplay-triton's interpreter path: the "
            f"kernel runs compiled on cuda tensors, or rewrite it with triton.language functions")
    libdevice_fn.__name__ = name
    return libdevice_fn


_LIBDEVICE_IMPL: dict = {}   # backend module name -> {function name: NumPy version}

# the module whose tables the compiler uses for each libdevice module's functions (the generic
# module's stubs are resolved to the target's module: cuda on the GPUs tensorplay-cuda drives)
_LD_BACKEND = {"triton.language.extra.libdevice": "triton.language.extra.cuda.libdevice",
               "triton.language.extra.cuda.libdevice": "triton.language.extra.cuda.libdevice",
               "triton.language.extra.hip.libdevice": "triton.language.extra.hip.libdevice"}


def _libdevice_impl(module_name):
    backend = _LD_BACKEND[module_name]
    impl = _LIBDEVICE_IMPL.get(backend)
    if impl is None:
        impl = _LIBDEVICE_IMPL[backend] = {}
        for table, arity in ((_UNARY, 1), (_BINARY, 2), (_TERNARY, 3)):
            for name, fn in table.items():
                impl[name] = _make_elementwise(name, fn, arity, backend)
    return impl


_LD_SWAP: dict = {}          # id(module) -> (module, originals, replacements): built once


def _libdevice_tables():
    """``(module, originals, replacements)`` of each imported libdevice module (built once each)."""
    out = []
    for mname in _LIBDEVICE_MODULES:
        mod = sys.modules.get(mname)
        if mod is None:
            continue
        e = _LD_SWAP.get(id(mod))
        if e is None or e[0] is not mod:
            impl = _libdevice_impl(mname)
            orig = {name: val for name, val in vars(mod).items()
                    if not name.startswith("_") and callable(val) and not isinstance(val, type)
                    and getattr(val, "__module__", None) in _LIBDEVICE_MODULES}
            repl = {name: impl.get(name) or _unsupported(name) for name in orig}
            _LD_ORIG[mname] = orig
            subst = {id(v): (v, repl[name]) for name, v in orig.items()}
            e = _LD_SWAP[id(mod)] = (mod, orig, repl, subst)
        out.append(e)
    return out


def _libdevice_subst() -> dict:
    """id(libdevice function) -> (function, NumPy version), for names bound at import time."""
    subst: dict = {}
    for e in _libdevice_tables():
        subst.update(e[3])
    return subst


def _patch_libdevice(p: _Patches):
    """Swap every public libdevice function for its NumPy version in the libdevice modules
    (``libdevice.rsqrt``, ``ld.rsqrt``: two ``dict.update`` calls per launch); names bound at import
    time are resolved by ``_patch_lang_once``."""
    for mod, orig, repl, _ in _libdevice_tables():
        mod.__dict__.update(repl)
        p.undo(mod.__dict__.update, orig)


# -- bfloat16 under the interpreter ------------------------------------------------------------
# Triton's interpreter stores bfloat16 as its uint16 bit pattern and runs NumPy's arithmetic,
# comparisons, math functions, dots and reductions on that pattern (its documented limitation),
# which gives silently wrong values where the compiled kernel is right. Inside the scope, these
# builder operations compute bfloat16 operands in float32 and round the result back (RTNE, as
# ml_dtypes does), the way the GPU evaluates bfloat16; loads, stores, selects and casts already
# work on the bits and are left alone.

_BF: list = []


def _bf16():
    """``(tl.bfloat16, numpy bfloat16 dtype)``, or ``None`` without ml_dtypes."""
    if not _BF:
        try:
            import ml_dtypes
            _BF.append((_T["tl"].bfloat16, np.dtype(ml_dtypes.bfloat16)))
        except ImportError:
            _BF.append(None)
    return _BF[0]


def _up(data, bf):
    return data.view(bf).astype(np.float32)


def _down(data, bf):
    return np.asarray(data, dtype=np.float32).astype(bf).view(np.uint16)


def _build_bf16() -> list:
    """The ``(object, name, replacement)`` patches for bfloat16 (built once: the replacements close
    over the original methods)."""
    sets: list = []
    e = _bf16()
    if e is None:
        return sets
    tbf, bf = e
    interp = _T["interp"]
    B = interp.InterpreterBuilder
    TH = interp.TensorHandle

    def back(out, like):
        """A handle of ``out`` computed in float32 for bf16 operands: floats rounded to bf16, other
        results (comparisons) kept as the original builder keeps them."""
        if out.dtype.kind == "f":
            return TH(_down(out, bf), tbf)
        return TH(out if out.dtype.itemsize <= 2 else out.astype(np.uint16), like)

    orig_binary = B.binary_op

    def binary_op(self, lhs, rhs, op):
        if lhs.dtype.scalar != tbf or rhs.dtype.scalar != tbf:
            return orig_binary(self, lhs, rhs, op)
        with np.errstate(all="ignore"):
            out = op(_up(lhs.data, bf), _up(rhs.data, bf))
        return back(np.asarray(out), lhs.dtype.scalar)

    orig_unary = B.unary_op

    def unary_op(self, arg, op):
        if arg.dtype.scalar != tbf:
            return orig_unary(self, arg, op)
        with np.errstate(all="ignore"):
            return back(np.asarray(op(_up(arg.data, bf))), tbf)

    orig_ternary = B.ternary_op

    def ternary_op(self, lhs, rhs, other, op):
        # np.where selects bits (exact); np.clip compares values
        if op is np.where or other.dtype.scalar != tbf:
            return orig_ternary(self, lhs, rhs, other, op)
        return back(np.asarray(op(_up(lhs.data, bf), _up(rhs.data, bf), _up(other.data, bf))), tbf)

    orig_fma = B.create_fma

    def create_fma(self, x, y, z):
        if z.dtype.scalar != tbf:
            return orig_fma(self, x, y, z)
        out = np.multiply(_up(x.data, bf), _up(y.data, bf), dtype=np.float64) + _up(z.data, bf)
        return TH(_down(out, bf), tbf)

    orig_dot = B.create_dot

    def create_dot(self, a, b, d, *rest):
        if a.dtype.scalar != tbf and b.dtype.scalar != tbf:
            return orig_dot(self, a, b, d, *rest)
        ad = _up(a.data, bf) if a.dtype.scalar == tbf else a.data
        bd = _up(b.data, bf) if b.dtype.scalar == tbf else b.data
        if d.dtype.scalar == tbf:
            return TH(_down(np.matmul(ad, bd, dtype=np.float32) + _up(d.data, bf), bf), tbf)
        return TH(np.matmul(ad, bd, dtype=d.data.dtype) + d.data, d.dtype.scalar)

    def one_arg(name, fn):
        orig = getattr(B, name, None)
        if orig is None:
            return

        def f(self, arg):
            if arg.dtype.scalar != tbf:
                return orig(self, arg)
            with np.errstate(all="ignore"):
                return TH(_down(fn(_up(arg.data, bf)), bf), tbf)
        sets.append((B, name, f))

    orig_cast = B.cast_impl
    f32 = _T["tl"].float32

    def cast_impl(self, src, dst_type):
        # bf16 <-> fp32 is exact in Triton's own code; the other casts used the bit pattern
        s, d = src.dtype.scalar, dst_type.scalar
        if s == tbf and d != tbf and d != f32:
            return TH(_up(src.data, bf).astype(interp._get_np_dtype(dst_type)), d)
        if d == tbf and s != tbf and s != f32:
            return TH(_down(src.data.astype(np.float32), bf), tbf)
        return orig_cast(self, src, dst_type)

    orig_rmw = B.create_atomic_rmw
    native = interp._interpreter
    fadd = interp._ir.ATOMIC_OP.FADD

    def create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope):
        # Triton's C++ atomic has no bfloat16 ("Unsupported data type"), a GPU has bf16 atomic
        # adds (the only bf16 atomic Triton's frontend allows): programs run one at a time here,
        # so lane by lane, in order (lanes may share an address), a load, the addition in float32
        # rounded to bf16, and a store is the atomic add; the old values are returned, as
        # Triton's atomics return them
        fn = np.add if rmwOp == fadd and val.dtype.scalar == tbf else None
        if fn is None:
            return orig_rmw(self, rmwOp, ptr, val, mask, sem, scope)
        shape = np.shape(ptr.data)
        # (a writeable copy: NumPy 1.26's ascontiguousarray hands back a contiguous broadcast
        # view as is, read-only, which Triton's native load/store refuse)
        ptrs = np.array(np.broadcast_to(ptr.data, shape), copy=True).reshape(-1)
        vals = np.broadcast_to(val.data, shape).reshape(-1)
        lanes = np.broadcast_to(mask.data, shape).reshape(-1)
        old = np.zeros(ptrs.shape, np.uint16)
        one, zero = np.ones(1, bool), np.zeros(1, np.uint16)
        for i in np.flatnonzero(lanes):
            p = ptrs[i:i + 1]
            o = native.load(p, one, zero, np.dtype(np.uint16))
            old[i] = o[0]
            native.store(p, np.array(_down(fn(_up(o, bf), _up(vals[i:i + 1].copy(), bf)), bf)), one)
        return TH(old.reshape(shape), tbf)

    sets.append((B, "create_atomic_rmw", create_atomic_rmw))
    sets.append((B, "cast_impl", cast_impl))
    if not hasattr(B, "get_bf16"):   # Triton 3.6: a bf16 constant (``x * 2.0``) had no builder
        sets.append((B, "get_bf16", lambda self, value: TH(_down(np.array([value], np.float32), bf), tbf)))
    sets.append((B, "binary_op", binary_op))
    sets.append((B, "unary_op", unary_op))
    sets.append((B, "ternary_op", ternary_op))
    sets.append((B, "create_fma", create_fma))
    sets.append((B, "create_dot", create_dot))
    one_arg("create_rsqrt", lambda x: 1 / np.sqrt(x))
    one_arg("create_erf", _erf)

    R = getattr(interp, "ReduceOps", None)
    if R is not None:
        orig_sum, orig_mm = R.sum, R.min_max

        def rsum(self, input):
            if input.dtype != tbf:
                return orig_sum(self, input)
            s = np.sum(_up(input.handle.data, bf), axis=self.axis, keepdims=self.keep_dims)
            return self.to_tensor(_down(s, bf) if np.ndim(s) else _down(np.asarray(s), bf)[()], input.dtype)

        def min_max(self, input, val_reduce_op, idx_reduce_op=None):
            x = input[0] if isinstance(input, tuple) else input
            if x.dtype != tbf:
                return orig_mm(self, input, val_reduce_op, idx_reduce_op)
            xf = _up(x.handle.data, bf)
            val = idx = None
            if val_reduce_op:
                val = self.to_tensor(_down(np.asarray(val_reduce_op(xf, axis=self.axis, keepdims=self.keep_dims)), bf), x.dtype)
            if idx_reduce_op:
                idx = self.to_tensor(idx_reduce_op(xf, axis=self.axis, keepdims=self.keep_dims), _T["tl"].int32)
            if val is not None and idx is not None:
                return val, idx
            return val if val is not None else idx
        sets.append((R, "sum", rsum))
        sets.append((R, "min_max", min_max))
    return sets


_BF16_SETS: list = []


def _patch_bf16(p: _Patches):
    """Install the bfloat16 patches for the scope (built on the first interpreted launch)."""
    if not _BF16_SETS:
        _BF16_SETS.append(_build_bf16())
    for obj, name, fn in _BF16_SETS[0]:
        p.set(obj, name, fn)
