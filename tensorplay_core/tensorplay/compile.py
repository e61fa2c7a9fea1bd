"""``tensorplay.compile``: capture a function into a graph, cache it under guards, run it.

``compiled = tensorplay.compile(fn)`` (or ``@tensorplay.compile``) returns a callable. A call

1. computes the *guard key* of its arguments: for every tensor its dtype, device, rank, which
   sizes are 0 or 1 (torch's 0/1 specialization), contiguity and ``requires_grad``; every
   non-tensor argument by type and value (``2``, ``2.0`` and ``True`` are different keys; by
   identity when unhashable); the structure of lists, tuples and dicts; the grad mode and the
   default dtype. A call with positional arguments only (tensors, scalars, objects that compare
   by identity such as a method's ``self``) first builds a cheaper *exact* key (every tensor's
   shape, strides, dtype, device and ``requires_grad`` as slot reads, by a function generated
   per number of arguments; every other argument's class and value). When that key was seen
   before (the last call's is compared first, then a table of 256 per compiled function), the
   call takes the cached graph that step 2 chose for it, still checking that graph's own guards
   (custom-op versions, constant tensors, Python values). The exact key determines the guard
   key (a tensor's metadata cannot change in place, except ``requires_grad``, which is in it),
   so this is the same choice, made without recomputing it;
2. looks for a cached graph under that key whose other guards hold: exact sizes and strides
   when the captured code read a size as a Python value or returned ``x.shape``/``x.stride()``
   (or ``dynamic=False``), and the ``version`` and
   registry identity of every custom op it calls (a redefined op invalidates it),
   the Python values the function read from globals, closure cells and attributes (see
   ``compile``'s docstring: a changed ``SCALE`` global misses and recaptures), and the values
   of the graph constants whose values the capture read (``x.sum(dim=D)``, ``int(n)``);
3. on a miss, captures ``fn`` (``tensorplay.capture_info``): custom ops become opaque nodes whose
   fake kernels give the output metadata, built-in ops are recorded with their shape rules.
   With ``RECOMPILE_LIMIT`` (8) graphs cached for calls differing only in Python values
   (arguments, globals, closure values, attributes, values read from tensors; the same tensor
   metadata), a call needing another graph runs ``fn`` eagerly instead, with a warning (torch.compile's
   ``recompile_limit``; see ``compile``'s docstring);
4. runs the graph: a generated Python function calls every node through normal dispatch (so
   every device works), in program order, with chains of elementwise built-in ops fused
   (``tensorplay._fusion``) when no input needs grad -- on cuda with the last-dim ``keepdim``
   reductions between them (a row softmax or a layer norm is one kernel). Ops with mutated
   arguments are barriers: nothing is fused or moved across them;
5. with grad mode on and an input, or a tensor the function reads (a graph constant),
   requiring grad, runs the graph as ONE autograd node, ``CompiledFunctionBackward`` -- what
   ``torch.compile``'s AOTAutograd does (``tensorplay._joint``): the forward is the graph
   replayed under ``no_grad`` (no per-op recording; built-in ops called through their backend
   entry; chains of three or more elementwise ops fused as above), returning the outputs and
   the forward values the backward needs; the backward is derived once per graph, set of sizes
   and set of tensors requiring grad, by tracing every node's own autograd formula (built-in
   ops' and custom ops' ``register_autograd``: ``setup_context`` on the node's inputs and
   output, then its backward) in reverse with the engine's rules, and runs those formulas
   straight on the saved values (or, where a ``setup_context`` computes a tensor, the traced
   backward graph, generated and fused as a forward graph). Gradients are eager's (the same
   formulas on the same values); hooks on inputs, ``.grad`` accumulation, ``backward(inputs=)``,
   ``autograd.grad``, ``retain_graph`` and the second-backward error work as for any node, and
   the in-place check covers what eager's formulas save. A
   backward with ``create_graph=True`` (double backward, any order) and one that reached only
   some of several outputs recompute eagerly from the node's inputs (torch.compile refuses
   double backward; this gives eager's derivatives), refusing inputs written since the call. Graphs it does not handle run op by op
   with autograd recording each op (the per-op path, step 4 with nothing fused where grad is
   needed): ops writing a tensor (in-place ops, ``mutates_args``), ``detach``/``requires_grad_``/
   ``retain_grad`` inside, an op run with grad mode off inside (``no_grad`` blocks), a random
   op, a ``compiler.disable``d call, a custom op without a formula on a tensor requiring grad,
   outputs that are inputs or views (of inputs, of each other, of values made inside: eager's
   view relations), returned twice, or not floating point, and any graph whose formulas cannot be traced (a formula reading values: decided at
   the first call, never failing a call).

The first run of a graph for each set of input sizes also checks that every custom op's real
outputs have the shape, dtype, device and strides its fake kernel promised (the graph was built
from them); a mismatch raises ``CompileError`` naming the op and suggesting ``opcheck``. Where
the op's real inputs have the metadata its fake inputs had at the capture (the capturing call),
the promise is the capture's fake run, not a second one: a custom op without ``register_fake``
runs its kernel on fake tensors once on the first call, as ``torch.compile`` does.

Same idea as ``torch.compile`` (PyTorch 2.9) with a much simpler tracer: a graph break is
one for the whole function -- data-dependent Python in the function (``if t.sum() > 0``,
``.item()``, ``int(t)``, ``float(t)``, ``.tolist()``, ``.numpy()``), ``loss.backward()`` or an
``autograd.Function`` needing grad stops the capture (``GraphBreak``), and the function runs
eagerly, that call and every later one, until ``reset()`` (``graph_skips`` says why;
``fullgraph=True`` raises the ``GraphBreak``, naming the construct). A function whose capture
meets what a graph cannot replay
(Python side effects, values drawn from outside state: see ``compile``'s docstring, "Python
side effects") runs eagerly as a whole too (``graph_skips`` says why; ``fullgraph=True``
raises ``CompileError`` instead): the capture stops before an effect it sees runs, and puts
back the Python state it changed before a break, so each effect happens once per call, in
order, the capturing call included. Any other error a capture meets is the one
the same code raises eagerly (see ``compile``'s docstring). A function decorated with
``tensorplay.compiler.disable`` (torch's graph-break decorator) is one opaque node run eagerly on
every call, the ops around it staying in the graph; its outputs' metadata is learnt from one
eager run of the capturing call (see ``tensorplay.compiler.disable``).
Tensors the function reaches without getting them as arguments (closures, module globals,
attributes of ``self`` or of its arguments, at any depth) and did not make inside the call are
lifted inputs: graph constants used by reference, every op on them recorded (``W.sum()``,
``self.b * 2``, ``buf.add_(x)``: ``_capture._lift``), so values computed from them follow
in-place updates made between calls and their in-place ops run on every call; rebinding one
that a guard source holds recaptures. One whose values the capture
read as Python values (a dim, a size, a slice bound, ``int(t)``, ``t.item()``) guards the graph
on them: an in-place change of those values recaptures (``_data_guard``). One compiled function may be called from several threads: its captures (and the
cache's evictions) are serialised, as torch.compile serialises compilation.
"""

from __future__ import annotations

import contextlib
import functools
import math as _math
import numbers as _numbers
import threading
from typing import Any, Callable, Generic, ParamSpec, TypeVar, overload

from . import _capture, _codegen, _dispatch, _dtype, _fusion, _joint, _pytree, _registry, _replay
from ._tensor import Tensor
from .autograd import grad_mode as _gm
from .errors import CompileError, GraphBreak
from .fake import is_dynamic_size, make_fake

_P = ParamSpec("_P")
_R = TypeVar("_R")

_default_dtype = _dtype._default   # [the default float dtype]: part of every guard key

__all__ = ["CompileError", "CompiledFunction", "compile"]

_MAX_CACHE = 64          # graphs kept per compiled function
RECOMPILE_LIMIT = 8      # graphs invalidated before a function runs eagerly (torch's default)
_MAX_VALIDATED = 256     # size signatures remembered as validated per graph
_MAX_FAST = 256          # exact signatures the fast path remembers per compiled function
_MAX_KEYER_ARITY = 32    # more positional tensors than this: the full lookup on every call


@overload
def compile(fn: Callable[_P, _R], *, dynamic: bool | None = None,
            fullgraph: bool = False, mode: str | None = None) -> CompiledFunction[_P, _R]: ...
@overload
def compile(fn: None = None, *, dynamic: bool | None = None, fullgraph: bool = False,
            mode: str | None = None) -> Callable[[Callable[_P, _R]], CompiledFunction[_P, _R]]: ...
def compile(fn: Callable[_P, _R] | None = None, *, dynamic: bool | None = None,
            fullgraph: bool = False, mode: str | None = None) -> Any:
    """Compile ``fn`` (a function of tensors) into a cached graph of operator calls.

    Arguments:

    * ``fn`` -- any Python function taking tensors (also inside lists, tuples, dicts) and other
      values, returning tensors (or structures of them, or constants). Omit it to use
      ``tensorplay.compile(...)`` as a decorator with options.
    * ``dynamic`` -- ``None``/``True``: sizes are dynamic (a graph is reused for other sizes)
      unless the captured code reads a size as a Python value; ``False``: every graph is guarded
      on exact sizes.
    * ``fullgraph`` -- as ``torch.compile``'s: ``True`` raises ``CompileError`` (naming the
      reason) where the function would otherwise run eagerly: a graph break (``GraphBreak``:
      data-dependent Python, ``backward()``, see "Graph breaks" below), Python side effects
      or outside state (see "Python side effects" below), or a call past the recompile limit
      (see "Python values the function reads" below).
    * ``mode`` -- ``None`` or ``"default"``; or ``"reduce-overhead"`` (same name and idea as
      ``torch.compile``'s): on a device whose backend records graphs (cuda: CUDA graphs), each
      exact signature (the sizes and strides of every tensor argument) runs normally once (after
      the first, validating call when the graph has custom ops), is recorded on its next call,
      and from then on a call copies the arguments into the graph's static inputs, replays the
      whole graph with one launch, and copies each output out into a fresh tensor (results are
      never overwritten by later calls, unlike torch's). Calls from several threads take turns
      (the static inputs are shared). The first 16 signatures of a graph are recorded (each
      keeps its inputs, outputs and intermediates allocated); later ones run as
      ``"default"``. Signatures that cannot use a graph run as ``"default"``, the reason kept
      in ``.graph_skips`` (``{(sizes, strides): reason}``, the 64 newest): arguments on a
      device without graphs (cpu), on several devices, not contiguous, or needing grad when an
      op of the graph runs with grad mode on (the mode at the call, or one the function sets
      before the op), and likewise a tensor the function reads (a closure, a global,
      ``self.weight``) that requires grad; a graph that mutates a tensor, calls a random op
      (tagged ``nondeterministic_seeded``: tag a custom op whose body draws random numbers) or
      an op tagged ``cudagraph_unsafe``; outputs that are an argument or a view of one, share
      memory with each other, or are not contiguous; a recording that failed (a custom op that
      synchronises with the host, say; on cuda also any matmul, since CuPy refuses cuBLAS
      calls during a CUDA-graph capture); and a recording that holds no more device launches
      than the copies a replay adds (one per tensor argument and per tensor output): a replay
      would then launch as often as a normal run and move the data twice more (a single fused
      chain is one launch, so ``x * y + 1`` runs as ``"default"``). A skip changes the cost
      only, never the results (a replay's outputs are fresh tensors too).
      ``"max-autotune"`` is torch's autotuning plus CUDA graphs: there is no autotuning, so it
      is ``"reduce-overhead"``; ``"max-autotune-no-cudagraphs"`` is ``"default"`` (``.mode``
      tells which). Other modes raise ``ValueError``.

    Compiling a ``CompiledFunction`` again returns it when the options are its own, else a new
    one compiled from its ``fn`` with exactly the options given.

    Returns a ``CompiledFunction``: call it like ``fn``; ``.graph`` is the graph of the last call
    (``print(compiled.graph)``: one node per line), ``.captures`` counts captures, ``.cache_size``
    the graphs kept.

    Python values the function reads (guards). A capture bakes the non-tensor values the code
    reads into the graph (``x * SCALE`` records the number), so each graph is guarded on them,
    like ``torch.compile`` guards on globals and closures; a changed value looks for another
    cached graph and otherwise recaptures (each distinct value gets its own graph). The same
    holds for non-tensor arguments (``f(x, 0.1)``, ``f(x, 0.2)``: the key has their values).
    Recompile limit: with ``RECOMPILE_LIMIT`` (8, torch.compile's ``recompile_limit``) graphs
    cached for calls that differ only in such values -- arguments (by value: each object
    compared by identity, a module as ``self``, has a count of its own), globals, closure
    variables, attributes, values read from tensors -- for the same tensor metadata (and the
    same sizes where the graph is guarded on exact sizes; new sizes, dtypes, ranks follow the
    rules above and are not counted; a graph evicted from the cache of 64 or dropped as stale
    no longer counts), a call needing another graph runs ``fn`` eagerly
    (eager's results; no capture), while the cached graphs keep serving the values they were
    captured for. The first such call warns (``UserWarning``) once, naming the function, the
    argument or value that changed and the fix, and ``graph_skips`` holds the reason under the
    call's ``(sizes, strides)``; ``fullgraph=True`` raises ``CompileError`` instead;
    ``reset()`` starts counting again. ``torch.compile`` first makes a changed float or int
    argument dynamic (a graph input); here a Python number stays a constant of its graph: pass
    a number that changes on every call as a tensor (``f(x, tensorplay.tensor(s))``, one graph
    for every value). Guarded, checked on every call by one generated function (about 60 ns
    per scalar, 150 ns per small flat list):

    * where: the module globals the function's code names (``co_names``, also of lambdas,
      comprehensions and inner functions in it), its closure cells, the same for plain helper
      functions and compiled functions reached through those (two levels deep, not
      ``tensorplay``'s own), and the
      attributes named in the code of objects held there, of non-tensor arguments and of the
      object a compiled bound method, callable object or ``functools.partial`` is bound to
      (``self.scale`` of a compiled method, ``cfg.k``, ``config_module.K``; the instance's,
      module's or class's own ``__dict__`` only, not inherited class attributes), and of plain
      objects held in those attributes, eight levels down (``self.layer.scale``,
      ``cfg.a.b.c.k``; the holder ``self.layer`` is guarded by identity, so replacing it
      recaptures); the attributes read by the methods and properties of those objects that the
      code calls count as named too, two calls deep (``self.helper(x)`` reading
      ``self.scale``; ``h.get()`` reading ``self.vals``), with the globals those methods read;
      a ``functools.partial``'s keywords (``p.keywords["k"] = 4.0`` is seen);
    * ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``: by type and value
      (``2`` and ``2.0`` are different);
    * ``tuple``, ``list``, ``dict``, ``set``, ``frozenset`` (nested) of at most 64 elements: by a
      value snapshot, so ``K[0] = 5.0`` on a global list is seen; elements that are not scalars
      or containers are compared by identity; a flat list, tuple or dict of scalars of up to
      4096 elements by one ``==`` with a copy (about 1 us per 100 elements);
    * NumPy arrays of up to 4096 elements: by identity, shape, dtype and bytes (``ARR[0] = 9.0``
      is seen);
    * top-level globals and closure cells holding anything else (functions, modules, classes,
      custom ops, arbitrary objects, larger containers and arrays): by identity only --
      rebinding the name recaptures, but state mutated *inside* such an object (other than its
      scalar attributes named in the code, see above) is NOT seen: pass such values as arguments
      or call ``compiled.reset()``. Values reached any other way (``getattr`` with a computed
      name, attribute chains deeper than eight objects, functions called through objects
      other than methods of the objects above, custom-op bodies, which are opaque) are not
      guarded either.

    Tensors the function reads without getting them as arguments (globals, closures,
    attributes of arguments and of ``self``, ``self.layer.w``, elements of a list, at any depth)
    are lifted inputs, as ``torch.compile`` lifts them: graph constants used by reference,
    every op on them recorded in the graph, none run once at capture -- ``x + W.sum()`` follows
    ``W.mul_(2)``, an optimizer step on ``self.w`` between calls is seen, and ``buf.add_(x)``,
    ``self.running.mul_(0.9).add_(...)`` (running statistics, a KV cache) update the tensor on
    every call; gradients reach those requiring grad. Rebinding one held in a guard source
    (``m.w = new``) recaptures, and so does a new ``.grad`` of a lifted tensor whose grad the
    graph uses (a compiled optimizer step after ``p.grad = None`` and a backward); after
    ``RECOMPILE_LIMIT`` (8, torch's ``recompile_limit``) graphs dropped that way the function
    runs eagerly, the reason in ``graph_skips`` (pass such tensors as arguments). A tensor
    reached another way (returned by a function, read through a property) is used by reference
    but its rebinding is not seen. Tensors made inside the call (``tp.tensor([...])``) are
    constants of the graph too. A
    constant whose *values* the captured code read as Python values (``x.sum(dim=D)``,
    ``x.reshape(k, -1)``, ``x[:n]``, ``int(t)``, ``t.item()``, ``t.tolist()``: baked into the
    graph) also guards the graph on those values, as ``torch.compile`` specializes on them: a
    call checks its version counter (about 0.15 us), and after an in-place write its values --
    the same values keep the graph, others take the graph cached for them or recapture.
    Writes its version counter does not count (through ``t.data`` or ``t.numpy()``) are not
    seen.

    Python side effects. A graph replays tensor operations only, so the capture (its thread
    only, ``sys.setprofile`` and opcode tracing of the user's frames, not tensorplay's or the
    standard library's) is watched for what it cannot replay: stores to objects that exist
    outside the call (``state["n"] += 1`` or ``K.append`` on a guarded value, ``list.append``/
    ``dict.update``... on a global, closure, ``self`` attribute or argument, any attribute store
    outside an ``__init__``: ``self.calls += 1``, a ``global``/``nonlocal`` assignment),
    ``print``, and values from state no guard can follow (``random``, ``numpy.random``,
    ``time``, ``secrets``), ``write``/``writelines`` on a file or stream (``sys.stdout``),
    ``warnings.warn`` and ``next()`` (on any iterator: its argument is not seen; also spelt
    ``it.__next__()``, ``gen.send(v)``, ``gen.throw(e)``). The watch
    sees these before they run: the capture stops there (the effect not performed), the call
    runs ``fn`` eagerly -- its result is eager's, each effect happens once, in order -- and so
    does every later call (torch's graph break; ``graph_skips`` holds the reason under the
    call's ``(sizes, strides)``) until ``reset()``; ``fullgraph=True`` raises ``CompileError``
    naming the effect instead, the effect not performed. Effects in a ``finally`` block or a
    context manager's ``__exit__`` that the stop unwinds are stopped too where they are calls
    named above. Item stores (``state["n"] += 1``, ``d[k] = v``) and in-place operators
    (``K += [1]``) on the guarded values, and draws from NumPy's global generator (in a
    function that reads ``np``, ``numpy.random`` or one of its functions) or from a NumPy
    generator the function reads (``np.random.rand()``, ``rng.random()``: Cython functions,
    invisible to ``sys.setprofile``) are found after they ran: before a graph break (see
    below) the capture puts them back (the guarded lists, dicts, sets and NumPy arrays, up to
    their snapshot limits, and the generators' states) and the call runs eagerly; without a
    break the capturing call returns the graph's result (its Python ran once, with the values
    of now: correct for this call) and the function runs eagerly from its next call on.
    A list or dict argument reaches the capture as a copy rebuilt around its tensors: an item
    the function adds, removes or replaces in one (``lst.append(1)``, ``d["n"] += 1``) is found
    after the capture, and the call runs eagerly on the caller's containers (the effect once),
    as every later call does (``fullgraph=True``: ``CompileError``, nothing changed).
    Functions without such state pay nothing per call. Not seen: item stores into containers
    the guards do not hold (deeper than the sources above, or larger than their limits) and
    effects inside other C extensions (``random.Random`` objects of the user's are seen;
    other generators are not): such an effect happens at the capture too (before a break:
    twice on that call), and a value drawn that way is baked into the graph. Draw random
    numbers with tensorplay's ops (``tensorplay.rand``...), or call such code outside the
    compiled function.

    Graph breaks. Python that needs a captured tensor's values -- ``bool(tensor)`` (an
    ``if``/``while``/``assert``/``and``/``or``/``not`` on a tensor, a comparison used as a
    Python bool), ``Tensor.item()``, ``int(t)``, ``float(t)``, a tensor used as a Python index,
    ``Tensor.tolist()``, ``Tensor.numpy()``, ``numpy.asarray(t)``, an f-string format spec,
    ``Tensor.__dlpack__()`` (also when the function catches the error) -- and
    ``Tensor.backward()`` stop the capture where they occur, as torch.compile breaks its graph
    there. Without ``fullgraph=True`` the call runs ``fn`` eagerly, and so does every later call
    (any shape) until ``reset()``, without capturing again: eager's results, gradients and
    in-place updates, each once per call (the ops the aborted capture recorded ran nowhere);
    ``graph_skips`` holds ``"runs eagerly: "`` and the message, under the call's ``(sizes,
    strides)``. With ``fullgraph=True`` the call raises the ``GraphBreak``
    (``DataDependentGraphBreak``, also a ``DispatchError``, for a value read), naming the
    construct and how to keep it in the graph. Code the capture does not reach (a branch not
    taken for the captured arguments) breaks nothing. Python before the break runs once per
    call, as with torch (which runs it as part of a graph): a side effect the watch sees
    (``print``, ``log.append``: "Python side effects" above) stops the capture before it, and a
    guarded value or NumPy generator state the capture changed is put back before ``fn`` runs
    eagerly. Effects the watch cannot see (listed above) that come before the break run twice
    on that first call.

    Autograd state. Inside ``fn``, ``t.requires_grad``, ``t.is_leaf``, ``t.grad_fn is None`` and
    ``bool(t.grad_fn)`` answer as eager code does for the same inputs and grad mode (also for
    in-place results and the base of a view written in place, and for inputs that are not
    leaves); a graph whose code read them is guarded on what the answer depends on beyond the
    guard key (whether inputs are leaves; tensors read from closures/globals/attributes:
    ``requires_grad`` and leafness), so other inputs recapture. The node itself cannot be known
    while capturing: reading anything from ``t.grad_fn`` (``.name``, ``.next_functions``)
    raises ``CompileError``, and so do reading an input's ``.grad`` (pass it as an argument) and
    assigning ``.grad`` (tensors made inside have ``grad`` None, as eager). Grad mode changes
    inside ``fn`` apply to the ops after them, as eager, on every call (the capturing one
    too: each op runs under the mode it ran under eagerly, so outputs' ``requires_grad`` and
    gradients are eager's), and a mode ``fn`` leaves set
    (``tensorplay.set_grad_enabled(False)`` called as a function) stays set after every call
    (cache hits and ``"reduce-overhead"`` replays too), as with ``torch.compile``; when ``fn``
    raises, the mode is the one it had set, as eager (a capture refused with ``CompileError``,
    stopped before a side effect or for a graph break restores the caller's before ``fn`` runs
    eagerly).

    Errors (at call time). While ``fn`` is captured, code that fails eagerly fails with eager's
    exception type and message, so ``except TypeError`` (or ``RuntimeError``...) around it keeps
    working: a bad argument to an op (``tp.add(x, "a")``: ``TypeError``; mismatched shapes,
    a dim out of range: the op's ``RuntimeError``/``IndexError``; tensors on several devices:
    ``DispatchError``), a wrong number of arguments or an unknown keyword, an attribute a tensor
    does not have (``'Tensor' object has no attribute 'foo'``), and every exception the
    function's own Python code raises (passed through unchanged). A custom op's fake kernel that
    refuses the inputs with a ``TypeError``/``ValueError``/``IndexError`` (as its kernel does
    eagerly), or its kernel run as its fake (no ``register_fake``) raising an error not about
    fake tensors, propagates that very exception, with a note (``__notes__``) saying it was
    raised while capturing. Data-dependent Python is a graph break (see "Graph breaks"); with
    ``fullgraph=True`` it raises ``DataDependentGraphBreak`` naming what the code did: ``bool(tensor)`` (an ``if``/``while``/``assert``/``and``/``or``/``not`` on a tensor),
    ``Tensor.item()``, ``int(tensor)``, ``float(tensor)``, a tensor as a Python index
    (``Tensor.__index__``), ``Tensor.tolist()``, ``Tensor.numpy()``, ``numpy.asarray(tensor)``,
    an f-string format spec, ``Tensor.__dlpack__()`` -- after the checks eager makes without the
    values (``item()`` of several elements is eager's ``RuntimeError``); an input tensor passed
    where an op takes a number (``x[:n]``, ``x.select(0, n)``, ``x.softmax(d)``) is a tensor
    used as a Python index. A message that prints a
    tensor shows the captured one (``capture_tensor(%0, ...)``: it has no values). ``CompileError`` is kept
    for what only compile can fail on: a custom op without a usable fake kernel (none
    registered, or one that fails on fake tensors or returns a real tensor), a fake kernel that
    disagrees with the real kernel (found on the first run), a tensor leaked out of a capture or
    made fake outside it, ``backward()`` inside the function with ``fullgraph=True`` (on a
    tensor that requires grad; otherwise eager's ``RuntimeError``; without it, a graph break).

    Data-dependent sizes. Ops whose output size depends on the values (``nonzero``,
    ``argwhere``, ``masked_select`` and ``x[mask]``, ``unique``, ``unique_consecutive``, a custom
    op whose fake uses ``get_ctx().new_dynamic_size()``) are captured with that size unknown
    (shown as ``u0``, ``u1``... in messages, as torch's unbacked sizes); a graph serves every
    number of selected elements. Two such sizes, or one and a static size, meeting in a
    broadcast or a ``matmul`` are assumed to match, and the kernels check the real sizes when
    the graph runs (eager's error if they differ, as torch's runtime asserts). Code that needs
    such a size as a Python number (``x[mask].shape[0]``, ``len(...)``, ``numel()``, an op
    whose shape rule cannot state its output from it) is a graph break: the function runs
    eagerly (``fullgraph=True``: ``DataDependentGraphBreak``).

    Autograd (AOT). Called with grad mode on where an input or a tensor the function reads
    requires grad, a graph runs as ONE autograd node named ``CompiledFunctionBackward`` (as
    ``torch.compile``'s AOTAutograd): its forward under ``no_grad`` (chains of three or more
    elementwise ops fused, nothing recorded per op), its backward the ops' own formulas, traced
    once per graph, set of
    sizes and set of tensors requiring grad (the first call of each runs the graph once more
    without grad to trace them), run on the values the forward saved. Gradients equal eager's;
    hooks on inputs, ``.grad``, ``backward(inputs=)``, ``autograd.grad``, ``retain_graph`` and
    in-place changes of saved values (``RuntimeError``, as eager: only the values eager's
    formulas save are checked, so ``x * 2``'s input may be written before backward) behave as
    for any node. ``create_graph=True`` (double backward) recomputes the graph with autograd
    from the node's inputs: eager's higher derivatives (``torch.compile`` refuses them); the
    node keeps the call's inputs and constants for it until a backward releases them, and the
    recompute refuses (``RuntimeError``) an input or constant written in place since the call. Outputs that do not
    require grad eagerly have no ``grad_fn``. Graphs with in-place ops or ``mutates_args``
    custom ops, ``detach``/``retain_grad``/``requires_grad_`` or ``no_grad`` blocks inside,
    random ops, ``compiler.disable``d calls, custom ops without a formula on tensors requiring
    grad, outputs that are inputs or views or are not floating point, or formulas that
    cannot be traced run op by op instead, each op recording its own node, as eager (the
    outputs' ``grad_fn`` is then the last op's).

    Custom ops on that path (cpu): a custom op whose cpu call runs its device-agnostic body,
    and its ``register_autograd`` formula, are traced once per graph, sizes and set of tensors
    requiring grad; where a body or formula is only elementwise ops and ``sum``/``mean`` over
    given dims on float32/float64 tensors (a layer norm, an activation), it runs as one call of
    eager's array kernels, no Tensor between its ops, and the formula's steps that recompute
    the body's values (not reading the gradient) run once, in the forward, their results kept
    for the backward. Values and gradients are eager's bit for bit. Only a body and formula
    that do nothing but compute are traced: the Python functions they call by name included,
    they read modules, tensorplay's functions, builtins such as ``len``/``range``, and globals
    or closure variables holding numbers, strings, None or such functions, each checked to be
    the same object on every call (rebinding a global ``EPS`` gives the new values at once, as
    eager). Anything else -- a write to a global, closure variable, attribute or item, a
    ``print``, a read of a list, dict, array or other object, a body or formula reading values
    (``.item()``, ``.numpy()``, a data-dependent ``if``), writing in place, with views, matmuls
    or factories, a cpu kernel registered for the op, an op re-registered since, an output
    gradient laid out otherwise than traced -- runs the Python body / formula on each call as
    before, as eager does and as ``torch.compile`` runs a custom op.

    Example::

        @tensorplay.compile
        def f(x, y):
            return (x * y + 1.0).relu()

        f(tensorplay.randn(8), tensorplay.randn(8))
        print(f.graph)
    """
    if dynamic not in (None, True, False):
        raise TypeError(f"tensorplay.compile: dynamic must be None, True or False, got {dynamic!r}")
    if mode not in _MODES:
        raise ValueError(f"tensorplay.compile: unknown mode {mode!r}; use None, 'default', "
                         f"'reduce-overhead' (graph replay), 'max-autotune' (= reduce-overhead: "
                         f"there is no autotuning) or 'max-autotune-no-cudagraphs' (= default)")
    if fn is None:
        return functools.partial(compile, dynamic=dynamic, fullgraph=fullgraph, mode=mode)
    if isinstance(fn, CompiledFunction):
        if fn.mode == _MODES[mode] and fn.dynamic == dynamic:
            return fn
        fn = fn.fn                       # other options: compiled anew with them
    if not callable(fn):
        raise TypeError(f"tensorplay.compile: expected a function to compile, got {fn!r}")
    return CompiledFunction(fn, dynamic=dynamic, fullgraph=fullgraph, mode=mode)


# torch's mode names -> what runs here (no autotuning: max-autotune keeps only its CUDA graphs)
_MODES = {None: "default", "default": "default", "reduce-overhead": "reduce-overhead",
          "max-autotune": "reduce-overhead", "max-autotune-no-cudagraphs": "default"}


class CompiledFunction(Generic[_P, _R]):
    """The result of ``tensorplay.compile(fn)``: call it like ``fn``.

    Attributes: ``fn`` (the original function), ``graph`` (the ``Graph`` used by the last call,
    None before the first call), ``captures`` (how many times ``fn`` was captured),
    ``cache_size`` (graphs currently cached), ``dynamic``, ``mode`` (``"default"`` or
    ``"reduce-overhead"``), ``graph_skips`` (``{(sizes, strides): reason}``: with
    ``"reduce-overhead"``, the signatures that run without graph replay; in any mode, a reason
    starting ``"runs eagerly: "`` for a function whose capture met a graph break or found
    Python side effects or outside state, which runs eagerly from then on, or for calls past
    the recompile limit, which run eagerly while the cached graphs serve the values they were
    captured for, under the 64 newest signatures of such calls).
    """

    def __init__(self, fn: Callable[_P, _R], *, dynamic: bool | None = None,
                 fullgraph: bool = False, mode: str | None = None) -> None:
        self.fn = fn
        self.dynamic = dynamic
        self.fullgraph = fullgraph
        self.mode = _MODES[mode]
        self._replay = self.mode == "reduce-overhead"
        self.graph_skips: dict = {}
        self.captures = 0
        self._cache: dict = {}
        # the full lookup (a miss, a failed guard: captures, evictions) runs under this lock, as
        # torch.compile serialises compilation: threads calling one compiled function with
        # changing values would otherwise capture and evict over each other's tables. The
        # per-call fast path only reads, and takes no lock.
        self._lock = threading.RLock()
        self._last = None
        # the per-call fast path (``__call__``): exact signature key -> (entry, sig) for calls
        # with positional arguments only (``_exact_keyer``, ``_mixed_key``), and the last such
        # call's (key, entry, sig)
        self._fast: dict = {}
        self._hot: tuple = (None, None, None)
        # set by tensorplay's own callers whose fn only calls an op on its arguments (opcheck's
        # compile check): no outside state to lift, guard or watch, so a capture skips those
        # (about 1.3 ms of a ~2 ms capture: the watch runs CPython in tracing mode)
        self._self_contained = False
        self._stale = 0          # graphs dropped because what they read by reference changed
        # cached graphs per set of everything but Python values (``_value_free``; and exact
        # sizes, for graphs guarded on them): (group, exact) -> _Group. RECOMPILE_LIMIT graphs
        # in one group and the calls needing another run eagerly (``_recompile_limit``)
        self._groups: dict = {}
        self._limit_warned = False
        functools.update_wrapper(self, fn)

    @property
    def graph(self) -> Any:
        """The graph run by the most recent call (None before the first call)."""
        return self._last.graph if self._last is not None else None

    @property
    def cache_size(self) -> int:
        """Number of graphs currently cached (over every guard key)."""
        with self._lock:
            return sum(len(v) for v in self._cache.values())

    def reset(self) -> None:
        """Drop every cached graph (the next call captures again; a function that ran eagerly
        because a capture found Python side effects is captured again too)."""
        with self._lock:
            if self.__class__ is _EagerFunction:
                self.__class__ = CompiledFunction
            self._cache.clear()
            self._forget_fast()
            self._last = None
            self._stale = 0
            self._groups.clear()
            self._limit_warned = False
            self.graph_skips.clear()

    def _forget_fast(self) -> None:
        """Drop the fast path's memory of which entry each exact signature resolved to (called
        whenever ``_cache`` loses or gains an entry, so the fast path only ever returns what the
        full lookup would)."""
        self._fast.clear()
        self._hot = (None, None, None)

    def __repr__(self) -> str:
        return f"<tensorplay.compile({getattr(self.fn, '__qualname__', self.fn)!r}), " \
               f"{self.cache_size} graph(s)>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if _capture._state.active:
            # called while another function is being captured: inline it into that capture
            return self.fn(*args, **kwargs)
        try:
            if not kwargs:
                # The fast path: positional plain tensors (``_exact_keyer``), or tensors with
                # scalars and identity-compared objects (``_mixed_key``). The key is every tensor's
                # exact metadata (shape, strides, dtype, device, dispatch backend, requires_grad:
                # slot reads), every other argument's class and value, and the global state, so it
                # determines the full lookup's key and ``sig``; it maps to the entry that lookup
                # chose (a miss runs the full lookup and remembers its answer). The entry's own
                # guards (custom-op versions, constant tensors, Python values) are checked on every
                # call, as the full lookup does. Tensor metadata cannot change in place (only
                # requires_grad can, and it is in the key), so a key computed now describes the
                # tensors as the graph will see them.
                keyer = _KEYERS.get(len(args)) or _exact_keyer(len(args))
                fkey = keyer(*args)
                leaves = args
                if fkey is None:             # not all plain tensors: ``self`` of a method, a scalar
                    fkey, leaves = _mixed_key(args)
                if fkey is not None:
                    hot = self._hot
                    if fkey == hot[0]:
                        entry, sig = hot[1], hot[2]
                    else:
                        hit = self._fast.get(fkey)
                        if hit is None:
                            entry, sig = self._lookup(args, kwargs)[:2]
                            if len(self._fast) >= _MAX_FAST:
                                self._fast.clear()
                            self._fast[fkey] = (entry, sig)
                        else:
                            entry, sig = hit
                        self._hot = (fkey, entry, sig)
                    if entry.check is not None and not entry.check(leaves):
                        # a guard failed: the full lookup drops or skips this entry, recaptures
                        entry, sig = self._lookup(args, kwargs)[:2]
                        self._fast[fkey] = (entry, sig)
                        self._hot = (fkey, entry, sig)
                    self._last = entry
                    if not entry.ops or sig in entry.validated:   # as in _run, without its frame
                        if self._replay:
                            return _replay.run(self, entry, sig, leaves)
                        if entry.joint is not None and _gm._state.enabled:
                            return entry.joint(sig, leaves, entry)     # AOT autograd (_joint)
                        return entry.run(leaves)
                    return self._run(entry, sig, leaves)
            return self._run(*self._lookup(args, kwargs))
        except _RunEagerly:
            # past the recompile limit, a call that needs a graph of its own runs fn eagerly
            # (``_recompile_limit``); the cached graphs keep serving the calls they match
            return self.fn(*args, **kwargs)
        except GraphBreak as e:
            if self.fullgraph:
                raise
            # torch's graph break, for the whole function: eager from now on, this call too
            # (a try costs nothing until it catches: the per-call path is unchanged). The
            # aborted capture ran no Python side effect the watch sees (``_capture`` raises
            # otherwise), and the ops it recorded ran nowhere: running fn now does each once
            with self._lock:
                self.graph_skips[getattr(e, "sig", None)] = f"runs eagerly: {e}"
                self.__class__ = _EagerFunction
            done = getattr(e, "result", None)
            if done is not None:
                return done[0]      # fn already ran eagerly for this call (_capture)
            return self.fn(*args, **kwargs)

    def _run(self, entry, sig, leaves):
        self._last = entry
        if not entry.ops or sig in entry.validated:   # no custom op, or validated: trusted
            if self._replay:
                return _replay.run(self, entry, sig, leaves)
            if entry.joint is not None and _gm._state.enabled:
                return entry.joint(sig, leaves, entry)     # AOT autograd (_joint)
            return entry.run(leaves)
        # the first call of this signature: check custom ops' real outputs against their fakes
        checked = entry.run_checked
        out = checked(leaves)
        if len(entry.validated) < _MAX_VALIDATED and checked is entry.run_checked:
            entry.validated.add(sig)     # (not when that was the eager run of hand_first)
        return out

    def _lookup(self, args, kwargs):
        """The full lookup: ``(entry, sig, leaves)`` for these arguments (``sig``: the sizes
        and strides of the tensor leaves), capturing on a miss."""
        if not kwargs and all(a.__class__ is Tensor for a in args):
            leaves = list(args)           # the common case: positional tensors only
            spec = ("fast", len(args))
            ctypes = ()
        else:
            leaves = []
            spec = _pytree.tree_flatten((args, kwargs), Tensor, leaves)[1]
            # constants count by type too: 2 == 2.0 == True hash alike, but the graph bakes the
            # value in (x * 2 keeps an int tensor's dtype, x * 2.0 makes it float)
            ctypes = _const_types(spec)
            if any(c.__class__ is tuple and "nan" in c[1] for c in ctypes):
                spec = _canon_nans(spec)
        tkeys = []
        sizes = []
        layout = []
        for t in leaves:
            shape = t.shape
            sizes.append(shape)
            layout.append(t.stride_tuple)
            tkeys.append((t.dtype, t.device, t.backend_key, tuple(s if s < 2 else -1 for s in shape),
                          t.needs_grad, t.is_contiguous()))
        # global state a graph bakes in (as torch.compile guards it): grad mode, and the
        # default dtype (factories without dtype= record it)
        try:
            key = (spec, ctypes, tuple(tkeys), _gm._state.enabled, _default_dtype[0])
            hash(key)
        except TypeError:
            key = (_pytree.spec_key(spec), ctypes, tuple(tkeys), _gm._state.enabled,
                   _default_dtype[0])
        sig = (tuple(sizes), tuple(layout))
        with self._lock:
            entry = None
            entries = self._cache.get(key)
            if entries:
                for e in entries:
                    if e.exact_sizes is not None and e.exact_sizes != sig:
                        continue
                    if not e.ops_valid() or not e.refs_valid():
                        entries.remove(e)
                        self._forget_fast()
                        self._stale += 1
                        self._uncount(e)      # (counted by _stale, not as a changed value)
                        break
                    if e.guard is not None and not e.guard():
                        continue             # captured under other global/closure values
                    if e.autograd is not None and not e.autograd(leaves):
                        continue             # read is_leaf/requires_grad that differ now
                    if e.data is not None and not e.data():
                        continue             # read a constant's values, changed since
                    entry = e
                    break
            if entry is None:
                group = _value_free(key)
                n = 0
                for k in ((group, None), (group, sig)):
                    g = self._groups.get(k)
                    if g is not None:
                        n += g.count
                if n >= RECOMPILE_LIMIT:
                    self._recompile_limit(group, spec, sig, n)      # raises
                entry = self._capture(spec, leaves, sig)
                if entry.eager is None and self._stale > RECOMPILE_LIMIT:
                    # torch.compile's recompile_limit: a graph invalidated on (nearly) every call
                    # -- the tensors it reads from outside replaced each time, as a compiled
                    # optimizer step after zero_grad's p.grad = None -- would capture per call
                    entry.eager = (f"recaptured {self._stale} times because tensors it reads "
                                   f"from outside (globals, closures, attributes, their .grad) "
                                   f"were replaced between calls; pass them as arguments to "
                                   f"keep one graph (torch.compile's recompile_limit, "
                                   f"{RECOMPILE_LIMIT})")
                if entry.eager is not None:
                    if self.fullgraph:
                        raise CompileError(
                            f"tensorplay.compile({getattr(self.fn, '__qualname__', self.fn)}, "
                            f"fullgraph=True): the function has Python state a graph cannot "
                            f"replay: {entry.eager}. Move it out of the compiled function, or "
                            f"drop fullgraph=True to run the function eagerly on later calls.")
                    # the graph stands for this call (the capture ran its Python once, with
                    # the values of now), not for later ones: from the next call on fn runs
                    # eagerly (a graph break of the whole function), not cached
                    self.graph_skips[sig] = f"runs eagerly: {entry.eager}"
                    self.__class__ = _EagerFunction
                    return entry, sig, leaves
                self._forget_fast()
                entries = self._cache.setdefault(key, [])
                entries.insert(0, entry)
                entry.group = gk = (group, entry.exact_sizes)
                g = self._groups.get(gk)
                if g is None:
                    g = self._groups[gk] = _Group()
                g.count += 1
                g.note(spec, entry)
                if self.cache_size > _MAX_CACHE:
                    for k, es in list(self._cache.items()):
                        if es is not entries or len(es) > 1:
                            self._uncount(es.pop())
                            if not es:
                                del self._cache[k]
                            break
        return entry, sig, leaves

    def _uncount(self, entry) -> None:
        """``entry`` left the cache (evicted, or dropped as stale): its group counts one graph
        less, as torch counts the cache entries of a frame (a graph evicted for room and
        captured again later is not a changed value); a group with none is forgotten."""
        g = self._groups.get(entry.group)
        if g is not None:
            g.count -= 1
            if g.count <= 0:
                del self._groups[entry.group]

    def _recompile_limit(self, group, spec, sig, n):
        """Refuse a capture past ``RECOMPILE_LIMIT`` (torch.compile's ``recompile_limit``):
        ``n`` graphs are cached for calls differing only in Python values (arguments,
        globals, closure variables, attributes, values read from tensors), each a constant of
        its graph. Raises ``CompileError`` under ``fullgraph=True``; otherwise records the
        reason in ``graph_skips``, warns once, and raises ``_RunEagerly`` (``__call__`` then
        runs ``fn`` eagerly for this call)."""
        g = self._groups.get((group, sig)) or self._groups.get((group, None))
        if g.reason is None:
            # (named once per group: a call past the limit pays the lookup and this test only)
            what, fix = g.changed(spec, self.fn)
            why = (f"{what} changed between calls: {n} graphs are cached for calls that differ "
                   f"only in Python values, each a constant of its graph (the recompile limit, "
                   f"{RECOMPILE_LIMIT}, as torch.compile's recompile_limit)")
            g.reason = (what, fix, why,
                        f"runs eagerly: {why}; a call needing a new graph runs eagerly, the {n} "
                        f"graphs kept serve the values they were captured for. {fix}")
        what, fix, why, reason = g.reason
        qual = getattr(self.fn, "__qualname__", None) or repr(self.fn)
        if self.fullgraph:
            raise CompileError(f"tensorplay.compile({qual}, fullgraph=True): {why}. {fix}.")
        skips = self.graph_skips
        if skips.get(sig) is not reason:
            # (the newest signatures only, as ``_replay`` keeps them: every eager call past the
            # limit may bring new sizes)
            skips.pop(sig, None)
            if len(skips) >= _replay.MAX_SKIPS:
                del skips[next(iter(skips))]
            skips[sig] = reason
        if not self._limit_warned:
            self._limit_warned = True
            import warnings
            warnings.warn(
                f"tensorplay.compile: {qual} hit the recompile limit ({RECOMPILE_LIMIT} graphs, "
                f"as torch.compile's recompile_limit): {what} changed between calls, and each "
                f"value got a graph of its own (a Python value is a constant of the graph). "
                f"From now on a call needing a new graph runs {qual} eagerly; the {n} graphs "
                f"kept serve the values they were captured for. {fix}; reset() on the "
                f"compiled function starts counting again.", UserWarning, stacklevel=4)
        raise _RunEagerly

    def _capture(self, spec, leaves, sig):
        name = getattr(self.fn, "__name__", None) or type(self.fn).__name__

        given: list = []         # (ctensors, (args, kwargs)) the capture handed fn

        def rebuild(ctensors):
            if spec[0] == "fast":
                return tuple(ctensors), {}
            built = _pytree.tree_unflatten(spec, ctensors)
            given[:] = [(list(ctensors), built)]
            return built

        # the Python values fn reads (globals, closure cells, attributes), before the capture
        roots: list = []
        alone = self._self_contained
        sources = [] if alone else _value_sources(self.fn, spec, roots)
        before = [_snapshot(_read(s)) for s in sources]
        # the watch stops the capture before a side effect it sees runs (``_Watch.note``); what
        # it cannot see before (``d[k] = v``, ``K += [1]`` on a guarded value, NumPy's random
        # state) is put back from ``saved`` when the capture does not become the call's graph
        watch = contextlib.nullcontext() if alone else _Watch(_watched_ids(sources, roots))
        saved = None if alone else _RestorePoint(sources, roots)
        seen_before = before     # what the capture itself may not change (_changed_sources)
        first = None
        try:
            try:
                with watch:
                    graph = _capture.capture(self.fn, rebuild, leaves, name=name,
                                             lift=not alone)
            except _capture.NeedsEagerRun:
                # fn calls a tensorplay.compiler.disable'd function: its outputs exist only when
                # it runs. This call runs fn eagerly (its result is this call's: every disabled
                # call, and every other effect, happens once), logging what each disabled call
                # returned, then fn is captured again with the disabled calls as nodes of those
                # outputs
                args, kwargs = rebuild(list(leaves))
                out, log = _capture.run_logged(self.fn, args, kwargs)
                first = (out,)
                # (the disabled calls' own effects, which run on every call, are not the
                # capture's; what the capture changes from here is put back)
                seen_before = [_snapshot(_read(s)) for s in sources]
                saved = None if alone else _RestorePoint(sources, roots)
                with watch:
                    graph = _capture.capture(self.fn, rebuild, leaves, name=name,
                                             disabled=log, lift=not alone)
        except BaseException as e:
            stopped = None if alone else watch.stopped
            if stopped is None and not isinstance(e, GraphBreak):
                raise
            # the capture stopped before a side effect (``_Watch``: whatever fn did with the
            # stop, a ``finally`` or an ``except BaseException``, is the stop's), or at what a
            # graph cannot hold (data-dependent Python, backward()...): ``__call__`` runs fn
            # eagerly for this call and the next ones. The Python before that point ran once
            # already; what it changed that the eager run would change again is put back first
            if saved is not None:
                saved.restore()
            if stopped is not None:
                raise self._stopped(stopped, sig, first) from None
            e.sig = sig
            if first is not None:
                e.result = first     # this call's result is the eager run's
            raise
        if not alone and watch.stopped is not None:
            # fn took the stop (a bare ``except:``) and went on: the graph is not this call's
            saved.restore()
            raise self._stopped(watch.stopped, sig, first)
        changed = _mutated_arguments(spec, given)
        if changed is not None:
            # fn changed a list/dict/set it was given (``lst.append(1)``, ``d["n"] += 1``): the
            # capture's were copies rebuilt around its tensors, so the caller's containers
            # never saw it and a replay would not do it again; the call runs fn eagerly (on
            # the caller's containers: the effect happens once), as every later one
            if saved is not None:
                saved.restore()
            raise self._stopped(changed, sig, first)
        self.captures += 1
        if len(graph.nodes) > 1:     # a chain is 2 nodes or more (graph.groups stays [])
            _fusion.plan(graph)
        # size-dependent code: guard on exact sizes and strides
        exact = sig if (graph.size_dependent or self.dynamic is False) else None
        entry = _Entry(graph, exact, _tensor_refs(sources, roots, graph),
                       _value_guard(sources, before, graph))
        reasons = [] if alone else watch.reasons + _changed_sources(sources, seen_before) + \
            saved.drawn()
        if reasons:
            entry.eager = "; ".join(reasons)
        if first is not None:
            entry.hand_first(first[0], leaves)
        return entry


    def _stopped(self, why: str, sig, first) -> CompileError:
        """The error ending a capture stopped before the side effect ``why``: with
        ``fullgraph=True`` a ``CompileError`` for the caller; otherwise a ``GraphBreak`` for
        ``__call__``, which runs ``fn`` eagerly (or returns ``first``, this call's eager run)."""
        self.captures += 1          # (the capture ran up to the effect)
        if self.fullgraph:
            return CompileError(
                f"tensorplay.compile({getattr(self.fn, '__qualname__', self.fn)}, "
                f"fullgraph=True): the function has Python state a graph cannot replay: {why}. "
                f"Move it out of the compiled function, or drop fullgraph=True to run the "
                f"function eagerly (this call performed nothing: the capture stopped before "
                f"it).")
        e = GraphBreak(why)
        e.sig = sig
        if first is not None:
            e.result = first
        return e


def _mutated_arguments(spec, given) -> str | None:
    """Why the capture's rebuilt arguments (``given``: the tensors and ``(args, kwargs)`` handed
    to fn) no longer flatten to ``spec`` around the same tensors -- fn added, removed or
    replaced an item of a container argument -- or None (unchanged, or not comparable: a
    constant whose ``==`` does not give a bool)."""
    if not given:
        return None
    ctensors, built = given[0]
    leaves: list = []
    try:
        now = _pytree.tree_flatten(built, Tensor, leaves)[1]
        same = bool(now == spec) and len(leaves) == len(ctensors) and \
            all(a is b for a, b in zip(leaves, ctensors))
    except Exception:  # noqa: BLE001 - a constant with its own ``==`` (an array): not judged
        return None
    if same:
        return None
    return ("changes a container it was given as an argument (a list, dict or set: an item "
            "added, removed or replaced), a Python side effect a graph cannot replay")


# iterator methods whose call advances it, as ``next()`` does (``_Watch``)
_ADVANCES = frozenset({"__next__", "send", "throw"})


class _EagerFunction(CompiledFunction):
    """A ``CompiledFunction`` whose capture found what a graph cannot stand for (Python side
    effects, values from outside state: ``_Watch``; the reason is in ``graph_skips``): every
    call runs ``fn`` itself, as torch.compile's graph break does, until ``reset()``. Set by
    switching the instance's class, so compiled functions without such state pay no test."""

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


class _RunEagerly(Exception):
    """Raised by ``CompiledFunction._lookup`` past the recompile limit: ``__call__`` runs the
    function eagerly for this call."""


# ---------------------------------------------------------------------------------------------
# the recompile limit: captures counted per set of everything but Python values

def _value_free(key):
    """The part of a full lookup key (``CompiledFunction._lookup``) that is not a Python value:
    the arguments' structure, every constant argument of a value-compared class by its class
    (``0.1`` and ``0.2``, ``"a"`` and ``"b"`` alike) -- an object compared by identity (a
    module as ``self``, a config object) stays itself, by id, so each object has its own
    count, as torch counts per identity-matched object -- the tensors' guard keys, the grad
    mode and default dtype. Calls whose keys give the same value here differ only in values
    a graph bakes in (with the globals, closure variables and attributes guarded)."""
    spec, ctypes = key[0], key[1]
    return (_strip_values(spec), tuple([c[0] if c.__class__ is tuple else c for c in ctypes]),
            *key[2:])


def _strip_values(spec):
    if spec.__class__ is str:        # a leaf
        return spec
    head = spec[0]
    if head == "fast":
        return spec
    if head == "c":
        v = spec[1]
        c = v.__class__
        if c.__eq__ is _object_eq and c.__hash__ is _object_hash:
            return ("i", id(v))
        return ("v", c)
    if head == "id":                 # (``_pytree.spec_key``: an unhashable constant)
        return spec
    if head is dict:
        return (dict, spec[1], tuple([_strip_values(s) for s in spec[2]]))
    return (head, tuple([_strip_values(s) for s in spec[1]]))


def _scalar_constants(spec, path=(), out=None) -> dict:
    """``{path: value}`` of the scalar constants in a call's ``_pytree`` spec (a path starts
    with the top-level argument: ``(0, i, ...)`` positional ``i``, ``(1, name, ...)`` keyword
    ``name``). Scalars only: nothing here keeps an object alive."""
    out = {} if out is None else out
    if spec.__class__ is str:
        return out
    head = spec[0]
    if head == "fast" or head == "id":
        return out
    if head == "c":
        v = spec[1]
        if v.__class__ in _SCALAR_TYPES or _np_scalar(v):
            out[path] = _spelling(v) if _special(v) else (v.__class__, v)
        return out
    if head is dict:
        for k, s in zip(spec[1], spec[2]):
            _scalar_constants(s, path + (k,), out)
    else:
        for i, s in enumerate(spec[1]):
            _scalar_constants(s, path + (i,), out)
    return out


class _Group:
    """The cached graphs of one ``_value_free`` group (and exact sizes): how many, what the
    last capture saw (its scalar arguments, its entry, weakly), and the limit's reason once
    named."""

    __slots__ = ("count", "consts", "entry", "reason")

    def __init__(self):
        self.count = 0
        self.consts = None
        self.entry = None
        self.reason = None

    def note(self, spec, entry) -> None:
        import weakref
        self.consts = _scalar_constants(spec)
        self.entry = weakref.ref(entry)

    def changed(self, spec, fn) -> tuple[str, str]:
        """``(what, fix)``: what differs between this call (``spec``) and the last capture of
        the group -- arguments, then the values the guards hold -- for the limit's message."""
        now = _scalar_constants(spec)
        then = self.consts or {}
        tops = []
        for p in sorted(set(now) | set(then), key=repr):
            if now.get(p) != then.get(p) and p[:2] not in tops:
                tops.append(p[:2])
        if tops:
            names = [_argument_name(fn, p) for p in tops]
            return (", ".join(f"argument {n!r}" if n.__class__ is str else f"argument {n}"
                              for n in names),
                    f"Pass a number that changes between calls as a tensor "
                    f"(tensorplay.tensor({names[0] if names[0].__class__ is str else 'value'})) "
                    f"to keep one graph for every value, or call with fewer distinct values")
        entry = self.entry() if self.entry is not None else None
        if entry is not None:
            srcs = getattr(entry.guard, "sources", None) or ()
            labels = [_source_name(fn, s) for s, a in srcs
                      if not _same_snapshot(_snapshot(_read(s)), a)]
            if labels:
                return (", ".join(labels),
                        "Pass a value that changes between calls to the function as a tensor "
                        "argument instead of reading it from outside as a Python number, or "
                        "keep it fixed")
            if entry.data is not None and not entry.data():
                return ("the values of a tensor it reads as Python numbers (int(t), t.item(), "
                        "a size or an index)",
                        "Use that tensor in tensor ops instead of reading its values as Python "
                        "numbers")
        return ("a Python value it reads",
                "Pass values that change between calls as tensor arguments")


def _argument_name(fn, path):
    """The name of a ``_scalar_constants`` path's top-level argument in ``fn``'s signature (its
    position, an int, when it has none)."""
    kind, where = path[0], path[1]
    if kind == 1:
        return where
    import inspect
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    if where < len(params):
        return params[where].name
    return where


def _source_name(fn, source) -> str:
    """How the message names a guarded value: ``global 'S'``, ``closure variable 's'``,
    ``attribute 'k'``."""
    kind, container, name = source[:3]
    if kind == "g":
        return f"global {name!r}"
    if kind == "a":
        return f"attribute {name!r}"
    for f in _functions_of(fn):
        for n, c in zip(f.__code__.co_freevars, f.__closure__ or ()):
            if c is container:
                return f"closure variable {n!r}"
    return "a closure variable"


def _functions_of(fn) -> list:
    """``fn`` unwrapped (partials, bound methods, callable objects), and the plain functions
    its globals and closure cells hold (where a closure variable it reads may live)."""
    for _ in range(4):
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif hasattr(fn, "__func__"):
            fn = fn.__func__
        elif not hasattr(fn, "__code__") and hasattr(_class_call(fn), "__code__"):
            fn = _class_call(fn)
        else:
            break
    out = [fn] if fn.__class__ is _FunctionType else []
    for f in list(out):
        for c in f.__closure__ or ():
            try:
                v = c.cell_contents
            except ValueError:
                continue
            if v.__class__ is _FunctionType:
                out.append(v)
        g = f.__globals__
        for n in f.__code__.co_names:
            v = g.get(n)
            if v.__class__ is _FunctionType:
                out.append(v)
    return out


# ---------------------------------------------------------------------------------------------
# the fast path's key: one generated function per number of positional arguments

_KEYERS: dict = {}       # arity -> key(*args)


def _exact_keyer(n: int):
    """``key(a0, ..., a{n-1})`` for ``CompiledFunction.__call__``'s fast path: None unless every
    argument is a plain ``Tensor`` (not a subclass), else one flat tuple of each tensor's shape,
    strides, dtype, device, backend key and ``needs_grad`` (slot reads, no property or method
    call), then the grad mode and the default dtype. Equal keys mean equal full-lookup keys and
    equal ``sig``. The text is made of generated names only (``a0``...); bound once per arity."""
    if n > _MAX_KEYER_ARITY:
        return _no_key
    names = [f"a{i}" for i in range(n)]
    lines = [f"def key({', '.join(names)}):"]
    if names:
        lines.append("    if " + " or ".join(f"{a}.__class__ is not __T" for a in names) + ":")
        lines.append("        return None")
    fields = "".join(f"{a}.raw_shape, {a}.stride_tuple, {a}.raw_dtype, {a}.raw_device, "
                     f"{a}.backend_key, {a}.needs_grad, " for a in names)
    lines.append(f"    return ({fields}__gm.enabled, __dd[0])")
    ns = {"__T": Tensor, "__gm": _gm._state, "__dd": _default_dtype}
    fn = _codegen.function("\n".join(lines), ns, "key", f"<tensorplay.compile key of {n} tensors>")
    _KEYERS[n] = fn
    return fn


def _no_key(*args):
    return None


_MIXED_SCALARS = frozenset((type(None), bool, int, float, complex, str, bytes))
_object_eq = object.__eq__
_object_hash = object.__hash__


def _mixed_key(args):
    """``(key, leaves)`` for positional arguments that are plain tensors (as in
    ``_exact_keyer``), scalars (by class and value: ``2``, ``2.0``, ``True`` differ, as in the
    full key) and objects compared by identity (classes that keep ``object``'s ``__eq__`` and
    ``__hash__``: ``self`` of a compiled method, a config object), which are their own key
    (held, so an id is never reused). ``(None, None)`` for anything else (containers, which are
    flattened; tensor subclasses; objects with their own equality): the full lookup."""
    key: list = []
    leaves = []
    for a in args:
        c = a.__class__
        if c is Tensor:
            key += (a.raw_shape, a.stride_tuple, a.raw_dtype, a.raw_device, a.backend_key,
                    a.needs_grad)
            leaves.append(a)
        elif c in _MIXED_SCALARS or (c.__eq__ is _object_eq and c.__hash__ is _object_hash
                                     and not isinstance(a, (Tensor, tuple, list, dict))):
            # a class, never a tuple: a tensor's six fields start with its shape tuple, so the
            # flat key cannot be read two ways. A float zero or NaN by its spelling: 0.0 ==
            # -0.0 hash alike, but the graph bakes the sign in (x * -0.0); nan != nan, so a
            # fresh NaN would miss every call (_spelling)
            if c is float and (a == 0.0 or a != a) or c is complex and (
                    a.real == 0.0 or a.imag == 0.0 or a != a):
                a = _spelling(a)
            key += (c, a)
        else:
            return None, None
    key += (_gm._state.enabled, _default_dtype[0])
    return tuple(key), leaves


def _const_types(spec) -> tuple:
    """The classes of the constants in a ``_pytree`` spec, in order."""
    out: list = []
    _walk_const_types(spec, out)
    return tuple(out)


def _walk_const_types(spec, out) -> None:
    if spec.__class__ is str:        # a leaf
        return
    head = spec[0]
    if head.__class__ is str:        # ("c", value)
        v = spec[1]
        c = v.__class__
        # a float zero's sign too (0.0 == -0.0 hash alike; the graph bakes the value in), and
        # a NaN as a NaN (_spelling; _lookup then keys the spec on one NaN object, _canon_nans)
        if c is not int and c is not bool and isinstance(v, _numbers.Number) and (
                v.real == 0.0 or v.imag == 0.0 or v != v):
            # (NumPy's scalars too: np.float64 is a float, np.float32 a numbers.Real)
            out.append((c, _spelling(v)))
        else:
            out.append(c)
        return
    for s in spec[2] if head is dict else spec[1]:
        _walk_const_types(s, out)


def _spelling(v) -> str:
    """A float or complex number (NumPy's scalars too) as a graph bakes it in, for keys and
    guards where ``==`` cannot tell: ``repr`` tells 0.0 from -0.0 (which compare and hash
    equal), and a NaN -- never equal to itself, so a key holding a fresh one never matched --
    is spelled with the signs of its NaN parts (``repr`` shows none)."""
    z = complex(v)
    s = repr(z)
    if z != z:
        s += f" nan{_math.copysign(1.0, z.real):+.0f}{_math.copysign(1.0, z.imag):+.0f}"
    return s


_NANS: dict = {}     # (class, spelling) -> the one NaN constant object keys hold (_canon_nans)


def _canon_nans(spec):
    """``spec`` with each NaN constant replaced by the first NaN object seen of its class and
    spelling, so that two calls' specs compare equal (tuples compare items by identity first;
    ``nan != nan`` otherwise)."""
    if spec.__class__ is str:        # a leaf
        return spec
    head = spec[0]
    if head.__class__ is str:        # ("c", value)
        v = spec[1]
        if v.__class__ is not int and v.__class__ is not bool and \
                isinstance(v, _numbers.Number) and v != v:
            if len(_NANS) > 256:     # (a program's NaN spellings are few: a bound, not an LRU)
                _NANS.clear()
            return ("c", _NANS.setdefault((v.__class__, _spelling(v)), v))
        return spec
    if head is dict:
        return (dict, spec[1], tuple([_canon_nans(s) for s in spec[2]]))
    return (head, tuple([_canon_nans(s) for s in spec[1]]))


def _ops_valid(ops) -> bool:
    table = _registry._OPS   # checked on every compiled call: the plain dict, no function call
    for op, v in ops:
        if op.version != v or table.get(op.name) is not op:
            return False
    return True


def _refs_valid(refs) -> bool:
    for container, key, obj in refs:
        try:
            cur = container.cell_contents if key is None else container.get(key)
        except ValueError:       # an emptied closure cell
            return False
        if cur is not obj:
            return False
    return True


def _entry_check(ops, refs, guard, autograd, data=None):
    """``check(leaves)`` of an entry with something to check (a closure over the lists, not
    over the entry: no reference cycle)."""
    if data is not None:
        if not (ops or refs or guard or autograd):
            return lambda leaves: data()
        rest = _entry_check(ops, refs, guard, autograd)
        return lambda leaves: rest(leaves) and data()
    if not refs:
        # (no graph constant read from a closure, global or attribute, the common case: no
        # _refs_valid frame on every call)
        if autograd is not None:
            if guard is None:
                return lambda leaves: _ops_valid(ops) and autograd(leaves)
            return lambda leaves: _ops_valid(ops) and guard() and autograd(leaves)
        if guard is None:
            return lambda leaves: _ops_valid(ops)
        return lambda leaves: _ops_valid(ops) and guard()
    if autograd is not None:
        if guard is None:
            return lambda leaves: _ops_valid(ops) and _refs_valid(refs) and autograd(leaves)
        return lambda leaves: (_ops_valid(ops) and _refs_valid(refs) and guard()
                               and autograd(leaves))
    if guard is None:
        return lambda leaves: _ops_valid(ops) and _refs_valid(refs)
    return lambda leaves: _ops_valid(ops) and _refs_valid(refs) and guard()


def _data_guard(reads):
    """``check()`` for a graph whose capture read graph constants' values (``graph.data_reads``:
    ``int(t)``, ``t.item()``, a dim, a size, a slice bound -- baked into the graph), None when
    it read none. True while each such tensor still holds the values read: the fast test is its
    storage and version counter (two slot reads); after a write (or ``t.data = ...``) its
    values are compared with those read, and when equal the new version is remembered (a write
    of the same value keeps the graph). A value changed fails the guard: the lookup tries the
    other cached graphs (one captured for the new value) and otherwise recaptures. Writes the
    version counter does not count (through ``t.data``'s own counter or ``t.numpy()``'s array)
    are not seen, as autograd does not see them either."""
    if not reads:
        return None
    recs = [[t, st, ver, snap] for t, st, ver, snap in reads]
    value_bytes = _capture.value_bytes

    def check():
        for r in recs:
            t = r[0]
            st = t.storage_ref
            if st is not r[1] or st.version != r[2]:
                snap = r[3]
                if snap is None or value_bytes(t) != snap:
                    return False
                r[1], r[2] = st, st.version      # written, same values: the fast test again
        return True
    return check


def _autograd_guard(graph):
    """``check(leaves)`` for a graph whose code read autograd metadata, None otherwise.

    ``requires_grad`` of a value computed inside depends on the grad mode and the inputs'
    ``requires_grad`` (both in the guard key) and on the constants' (tensors the function reads
    from closures, globals, attributes): guarded here. ``is_leaf``/``grad_fn`` also depend on
    whether the inputs and constants are leaves: guarded too when read."""
    if not (graph.reads_requires_grad or graph.reads_history):
        return None
    consts = [(c.const, c.const.needs_grad, c.const.grad_fn is None) for c in graph.consts]
    inputs = tuple(v.history is None for v in graph.inputs) if graph.reads_history else None
    history = graph.reads_history
    if not consts and inputs is None:
        return None                  # requires_grad read, no constant: the key holds it all

    def check(leaves):
        for t, rg, leaf in consts:
            if t.needs_grad is not rg or (history and (t.grad_fn is None) is not leaf):
                return False
        if inputs is not None:
            for t, leaf in zip(leaves, inputs):
                if (t.grad_fn is None) is not leaf:
                    return False
        return True
    return check


class _Entry:
    """A cached graph with its guards and generated runners."""

    eager = None     # why the function must run eagerly after this call (``_Watch``), or None
    group = None     # its key in ``CompiledFunction._groups`` (the recompile limit's count)

    def __init__(self, graph, exact_sizes, refs=(), guard=None):
        self.graph = graph
        self.exact_sizes = exact_sizes
        self.refs = refs
        self.guard = guard           # () -> bool over globals/closure values, None: nothing read
        self.guard_source = getattr(guard, "source", None)
        self.ops = [(op, v) for op, v in graph.custom_ops()]
        # (leaves) -> bool: the autograd metadata the code read is unchanged; None: none read
        self.autograd = _autograd_guard(graph)
        # () -> bool: the graph constants whose values the capture read hold them still; None:
        # it read none
        self.data = _data_guard(graph.data_reads)
        # (leaves) -> bool: the guards the fast path checks on every call; None: nothing to check
        self.check = _entry_check(self.ops, refs, guard, self.autograd, self.data) \
            if (self.ops or refs or guard or self.autograd or self.data) else None
        self.validated: set = set()
        self.replays: dict = {}      # mode="reduce-overhead": signature -> GraphReplay or state
        # an op runs with grad on (then a constant or input needing grad must record history)
        self.grad_inside = any(n.grad_enabled for n in graph.nodes)
        self._source = None          # of ``run``, once generated
        # calls with grad mode on and something requiring grad: the graph as one autograd node
        # (``_joint``); None when the graph is not one it handles (the per-op path then)
        self.joint_skip = _joint.unsupported(graph)
        self.joint = _joint.Joint(graph) if self.joint_skip is None else None
        self.run_checked, self.source_checked = _generate(graph, checked=True)

    def run(self, leaves):
        """The unchecked runner (the calls after a shape's first, validated one), generated on
        its first use: a graph called once (opcheck's compile check) generates one runner. The
        generated function, stored on the instance, shadows this method from then on (no
        per-call test, no reference cycle)."""
        self.run, self._source = _generate(self.graph, checked=False)
        return self.run(leaves)

    @property
    def source(self) -> str:
        """The text of the unchecked runner (generated now if no call has needed it yet)."""
        if self._source is None:
            self.run, self._source = _generate(self.graph, checked=False)
        return self._source

    def hand_first(self, out, leaves) -> None:
        """The capturing call already has its result ``out`` (the eager run made when the
        function calls a disabled function, ``CompiledFunction._capture``): the next run of
        this entry returns it when it is that call's (same thread, same argument tensors)
        instead of running the graph (the custom ops' check then waits for the signature's next
        call); any run puts the graph's runners back first."""
        owner = threading.get_ident()
        keep = list(leaves)
        d = self.__dict__
        saved = {k: d[k] for k in ("run", "run_checked") if k in d}

        def once(runner):
            def run(now):
                d.pop("run", None)
                d.update(saved)          # the graph's runners from now on
                if threading.get_ident() == owner and len(now) == len(keep) and \
                        all(a is b for a, b in zip(now, keep)):
                    return out
                return getattr(self, runner)(now)
            return run

        d["run"] = once("run")
        d["run_checked"] = once("run_checked")

    def launches(self, backend) -> int:
        """The device launches one run of the graph makes on ``backend``, counted from the
        runner's structure (``mode="reduce-overhead"`` weighs them against the copies a replay
        adds, ``_replay``; used where the backend's recording does not count its own work): a
        fused chain whose backend function exists is one launch (one kernel), a chain the
        backend does not fuse one per node; every other op node one, except a view (its
        outputs share an input's storage: no device work). A lower bound where an op launches
        several kernels; called once per recorded signature, after the signature's normal run
        (which made each chain's fused function)."""
        g = self.graph
        n = 0
        chained: set = set()
        for ch in g.groups:
            chained.update(x.index for x in ch.nodes)
            n += 1 if ch._compiled.get(backend) else len(ch.nodes)
        Value = _capture.Value
        for node in g.nodes:
            if node.kind != "op" or node.index in chained:
                continue
            ins: set = set()
            for a in _pytree.tree_flatten([node.args, node.kwargs], Value, [])[0]:
                if isinstance(a, Value):
                    ins.add(id(a.fake.storage_ref))
            if node.outputs and all(id(v.fake.storage_ref) in ins for v in node.outputs):
                continue                 # a view of an input: metadata only
            n += 1
        return n

    def refs_valid(self) -> bool:
        """The tensors the graph holds as constants are still the ones ``fn`` refers to."""
        return _refs_valid(self.refs)

    def ops_valid(self) -> bool:
        """Every custom op the graph calls is still registered, at the version captured."""
        return _ops_valid(self.ops)


def _tensor_refs(sources, roots, graph) -> list:
    """Where the function finds the tensors that ``graph`` holds as constants: among the places
    ``_value_sources`` lists (closure cells, module globals, attributes named in the code of the
    objects reached: ``self`` of a bound method, a callable object, a partial's arguments,
    non-tensor arguments, and plain objects held in their attributes, ``self.layer.w``), and any
    attribute of ``roots`` (the objects the function is bound to or called with) holding one.
    ``(cell, None, tensor)`` / ``(dict, name, tensor)``. Rebinding one of them invalidates the
    graph (a guard, as torch.compile guards on globals and attributes); the tensor itself is
    used by reference, so in-place updates are seen without a recapture."""
    if not graph.consts:
        return []
    wanted = {id(c.const) for c in graph.consts}
    refs = []
    seen: set = set()
    dicts = []
    for kind, container, name, _ in sources:
        if kind == "c":
            try:
                v = container.cell_contents
            except ValueError:
                continue
            if isinstance(v, Tensor) and id(v) in wanted and id(container) not in seen:
                seen.add(id(container))
                refs.append((container, None, v))
        elif kind == "g":
            v = container.get(name)
            if isinstance(v, Tensor) and id(v) in wanted and (id(container), name) not in seen:
                seen.add((id(container), name))
                refs.append((container, name, v))
        else:
            dicts.append(container)
    for o in roots:
        d = getattr(o, "__dict__", None)
        if isinstance(d, dict):
            dicts.append(d)
    done: set = set()
    for d in dicts:
        if id(d) in done:
            continue
        done.add(id(d))
        for name, v in list(d.items()):
            if isinstance(v, Tensor) and id(v) in wanted and (id(d), name) not in seen:
                seen.add((id(d), name))
                refs.append((d, name, v))
    # a constant that is another constant's ``.grad`` (a compiled optimizer step reading
    # ``p.grad``): backward and ``p.grad = None`` rebind it between calls, so the slot is
    # guarded by identity like a global (a new grad tensor recaptures)
    for c in graph.consts:
        g = c.const.grad
        if g is not None and id(g) in wanted:
            refs.append((_GradSlot(c.const), "grad", g))
    return refs


class _GradSlot:
    """``get(_)``: the ``.grad`` of one tensor, for ``_refs_valid``'s ``container.get(key)``."""

    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t

    def get(self, key):
        return self.t.grad


def _spec_objects(spec, out) -> None:
    """Non-tensor argument values (objects) held in a ``_pytree`` spec."""
    if not isinstance(spec, tuple) or not spec:
        return
    if spec[0] == "c":
        if not isinstance(spec[1], (int, float, str, bytes, bool, type(None))):
            out.append(spec[1])
        return
    if spec[0] == "fast":
        return
    for part in spec[1:]:
        if isinstance(part, tuple):
            for s in part:
                _spec_objects(s, out)


# ---------------------------------------------------------------------------------------------
# guards on the Python values the function reads (globals, closure cells, attributes)
#
# A capture bakes every non-tensor Python value the function reads into the graph (``x * SCALE``
# records the float). At capture, ``_value_sources`` lists where the function can read such
# values; ``_value_guard`` snapshots them and generates ``guard()``, a straight-line function
# comparing the current values with the snapshot (run on every cache lookup; a miss looks at
# the next cached graph, then recaptures). Snapshot kinds:
#   "s": exact None/bool/int/float/complex/str/bytes: same object, or same type and ==;
#   "f": tuple/list/dict/set/frozenset (nested) with at most _FREEZE_BUDGET elements: a frozen
#        copy (type + value of every scalar, identity of anything else) compared each call;
#   "i": anything else (functions, modules, classes, custom ops, objects, tensors, too-large
#        containers): identity only -- mutating such an object in place is NOT seen.

_SCALAR_TYPES = frozenset((type(None), bool, int, float, complex, str, bytes))
_CONTAINER_TYPES = frozenset((tuple, list, dict, set, frozenset))
_IMMUTABLE_TYPES = frozenset((tuple, frozenset))
_FREEZE_BUDGET = 64      # scalars + containers snapshotted by value per guarded value
_HELPER_DEPTH = 2        # plain functions reached through globals/closures whose reads count too
_ATTR_DEPTH = 8          # plain objects followed below an object whose attributes are read
_FLAT_MAX = 4096         # a flat container of scalars up to this size: guarded by value (one ==)
_MISSING = object()


class _Unfreezable(Exception):
    pass


def _freeze(v, budget, keep):
    """Comparable copy of a container of scalars (identity, by id, of anything else: ``keep``
    holds those objects alive so an id cannot be reused)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _Unfreezable
    t = v.__class__
    if t in _SCALAR_TYPES or _np_scalar(v):
        return (t, _spelling(v) if _special(v) else v)
    if t is tuple or t is list:
        return (t, tuple([_freeze(x, budget, keep) for x in v]))
    if t is dict:
        return (t, tuple([(_freeze(k, budget, keep), _freeze(x, budget, keep))
                          for k, x in v.items()]))
    if t is set or t is frozenset:
        return (t, frozenset([_freeze(x, budget, keep) for x in v]))
    if keep is not None:
        keep.append(v)
    return ("id", id(v))


def _special(v) -> bool:
    """A float or complex that ``==`` cannot compare as a graph needs: a zero (0.0 == -0.0,
    but the graph bakes the sign in) or a NaN (never equal to itself). Such values are
    compared by ``_spelling``."""
    c = v.__class__
    if c is float:
        return v == 0.0 or v != v
    if c is complex or (c.__module__ == "numpy" and getattr(v, "dtype", None) is not None
                        and v.dtype.kind in "fc" and getattr(v, "ndim", None) == 0):
        return v.real == 0.0 or v.imag == 0.0 or v != v
    return False


def _np_scalar(v) -> bool:
    """A NumPy scalar (``np.float32(1.5)``, ``np.int64(3)``...): compared by value as a Python
    number is, not by identity (a fresh equal one is the same constant)."""
    t = v.__class__
    return t.__module__ == "numpy" and t.__name__ != "ndarray" and getattr(v, "ndim", None) == 0


def _flat_key(v):
    """A flat container (``_flat``) compared whole: its class and items, special numbers by
    their spelling (the guard of a container too big to freeze)."""
    t = v.__class__
    items = v.items() if t is dict else v
    if t is dict:
        return (t, tuple([(k, _spelling(x) if _special(x) else x) for k, x in items]))
    return (t, tuple([_spelling(x) if _special(x) else x for x in items]))


def _freeze_now(v):
    return _freeze(v, [_FREEZE_BUDGET], None)


def _deep_immutable(v) -> bool:
    t = v.__class__
    if t in _SCALAR_TYPES:
        return True
    if t in _IMMUTABLE_TYPES:
        return all(_deep_immutable(x) for x in v)
    return False


def _flat(v) -> bool:
    """A list, tuple or dict (keys and values) of scalars only, of at most ``_FLAT_MAX``
    elements (a ``BIG = {i: 1.0 for i in range(100)}`` table: its guard is one C-level ``==``
    with a copy, about 1 us per 100 elements, paid only by functions that read it)."""
    t = v.__class__
    if t is dict:
        return len(v) <= _FLAT_MAX and all(e.__class__ in _SCALAR_TYPES for e in v) and \
            all(e.__class__ in _SCALAR_TYPES for e in v.values())
    return (t is list or t is tuple) and len(v) <= _FLAT_MAX and \
        all(e.__class__ in _SCALAR_TYPES for e in v)


def _ndarray(v) -> bool:
    """A NumPy array (by class name: numpy is not imported for it)."""
    t = v.__class__
    return t.__name__ == "ndarray" and t.__module__ == "numpy"


def _snapshot(v):
    """(kind, object, frozen, keep) of a value read by the function; None when absent."""
    if v is _MISSING:
        return None
    t = v.__class__
    if t in _SCALAR_TYPES or _np_scalar(v):
        return ("s", v, None, None)
    if t in _CONTAINER_TYPES:
        keep: list = []
        try:
            return ("f", v, _freeze(v, [_FREEZE_BUDGET], keep), keep)
        except (_Unfreezable, RecursionError, TypeError):
            pass
        if t is not set and t is not frozenset and _flat(v):
            # larger than the freeze budget but flat: compared whole (``_value_guard``)
            return ("f", v, _flat_key(v), None)
    elif _ndarray(v) and v.size <= _FLAT_MAX:
        # a NumPy array: ``float(ARR[0])`` bakes an element; guarded by identity, shape,
        # dtype and bytes (an in-place ``ARR[0] = 9.0`` is seen)
        return ("n", v, (v.shape, v.dtype.str, v.tobytes()), None)
    return ("i", v, None, None)


def _same_snapshot(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if a[0] != b[0]:
        return False
    if a[0] == "s":
        x, y = a[1], b[1]
        return x is y or (x.__class__ is y.__class__ and (
            _spelling(x) == _spelling(y) if _special(x) else x == y))
    if a[0] == "f" or a[0] == "n":
        return a[2] == b[2] and (a[0] == "f" or a[1] is b[1])
    return a[1] is b[1]


def _read(source):
    kind, container, name = source[:3]
    if kind == "c":
        try:
            return container.cell_contents
        except ValueError:
            return _MISSING
    return container.get(name, _MISSING)     # a dict or mappingproxy, name a str


def _code_names(code, out=None) -> set:
    """Names a code object (and the code objects nested in it: lambdas, comprehensions, inner
    functions) looks up as globals or attributes."""
    out = set() if out is None else out
    out.update(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            _code_names(c, out)
    return out


def _value_sources(fn, spec=None, roots=None) -> list:
    """Where ``fn`` reads Python values: ``("g", globals, name, top)`` for the globals its code
    names, ``("c", cell, None, top)`` for its closure cells, ``("a", obj.__dict__, name, ident)``
    for attributes named in its code of the objects found there, of the objects ``fn`` is
    bound to (``self`` of a bound method, a callable object, a partial's arguments) and of its
    non-tensor arguments, and of plain objects held in those attributes (``self.layer.w``,
    ``_ATTR_DEPTH``; ``ident``: such a holder, guarded by identity); plain helper functions
    reached that way are followed (``_HELPER_DEPTH``). ``roots`` (a list) receives the objects
    bound to or passed to ``fn``."""
    out: list = []
    seen: set = set()
    selves = []
    for _ in range(4):                    # bound methods, partials, callable objects
        if isinstance(fn, functools.partial):
            for a in (*fn.args, *fn.keywords.values()):
                t = a.__class__
                if not (t in _SCALAR_TYPES or t in _CONTAINER_TYPES or isinstance(a, Tensor)):
                    selves.append(a)      # partial(M.fwd, m): m is read like self
            # the keywords dict is live (``p.keywords["k"] = 4.0`` changes the next call):
            # each keyword is guarded like an attribute
            for k in fn.keywords:
                if (id(fn.keywords), k) not in seen:
                    seen.add((id(fn.keywords), k))
                    out.append(("a", fn.keywords, k, True))
            fn = fn.func
        elif hasattr(fn, "__func__") and hasattr(fn, "__self__"):
            selves.append(fn.__self__)
            fn = fn.__func__
        elif not hasattr(fn, "__code__") and hasattr(_class_call(fn), "__code__"):
            selves.append(fn)                     # a callable object: its class's __call__
            fn = _class_call(fn)
        else:
            break
    code = getattr(fn, "__code__", None)
    if code is None:
        return out
    names = _code_names(code)
    _fn_sources(fn, names, out, seen, 0)
    objs: list = list(selves)
    _spec_objects(spec, objs)
    if roots is not None:
        roots.extend(objs)
    for o in objs:
        _attr_sources(o, names, out, seen)
    return out


def _class_call(obj):
    for c in type(obj).__mro__:
        if "__call__" in c.__dict__:
            return c.__dict__["__call__"]
    return None


def _fn_sources(fn, names, out, seen, depth) -> None:
    code = fn.__code__
    if ("code", id(code)) in seen:
        return
    seen.add(("code", id(code)))
    found = []
    g = getattr(fn, "__globals__", None)
    if isinstance(g, dict):
        for n in sorted(names):
            v = g.get(n, _MISSING)
            if v is not _MISSING and (id(g), n) not in seen:
                seen.add((id(g), n))
                out.append(("g", g, n, True))
                found.append(v)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if id(cell) not in seen:
            seen.add(id(cell))
            out.append(("c", cell, None, True))
            found.append(v)
    for v in found:
        if isinstance(v, CompiledFunction):      # inlined into this capture: its reads count
            v = v.fn
        if v.__class__ is _FunctionType and getattr(v, "_tensorplay_disabled", False):
            # tensorplay.compiler.disable's wrapper: the reads of the function it runs (its
            # outputs' metadata may depend on them), not the wrapper's own (tensorplay's state)
            v = v.__wrapped__
        t = v.__class__
        if t in _SCALAR_TYPES or t in _CONTAINER_TYPES or isinstance(v, Tensor):
            continue
        if t is _FunctionType:
            mod = getattr(v, "__module__", None) or ""
            if depth < _HELPER_DEPTH and mod != "tensorplay" and not mod.startswith("tensorplay."):
                _fn_sources(v, _code_names(v.__code__), out, seen, depth + 1)
            continue
        _attr_sources(v, names, out, seen)


def _attr_sources(obj, names, out, seen, depth=0) -> None:
    """Attributes of ``obj`` (its ``__dict__``, a module's namespace, a class's) that the code
    names; those holding a plain object are followed (``self.layer.w``: the holder
    ``self.layer`` is then guarded by identity), ``_ATTR_DEPTH`` levels below ``obj``."""
    try:
        d = obj.__dict__
    except Exception:  # noqa: BLE001 - arbitrary user objects (proxies with __getattr__ ...)
        return
    if not isinstance(d, (dict, _MappingProxy)):
        return
    names = _with_methods(obj, names, out, seen)
    for n in sorted(names):
        if n in d and (id(d), n) not in seen:
            seen.add((id(d), n))
            v = d[n]
            inner = depth < _ATTR_DEPTH and _plain_object(v)
            out.append(("a", d, n, inner))
            if inner:
                _attr_sources(v, names, out, seen, depth + 1)
            elif depth < _ATTR_DEPTH and v.__class__ in (list, tuple, dict) and \
                    len(v) <= _FREEZE_BUDGET:
                # a list of layers (``for l in self.layers: x = l(x)``): the list is guarded
                # by its elements' identities, their attributes (``l.scale``) as any holder's
                for e in (v.values() if v.__class__ is dict else v):
                    if _plain_object(e):
                        _attr_sources(e, names, out, seen, depth + 1)


_ModuleType = type(functools)


def _with_methods(obj, names, out, seen):
    """``names`` plus the names looked up by the code of ``obj``'s methods (and properties)
    that ``names`` names, ``_HELPER_DEPTH`` calls deep: ``self.helper(x)`` whose body reads
    ``self.scale`` guards ``scale`` too, and the globals those methods read are sources
    (``_fn_sources``). Only user classes (not builtins', tensorplay's, classes', modules')."""
    t = obj.__class__
    mod = getattr(t, "__module__", None) or ""
    if mod in ("builtins", "tensorplay") or mod.startswith("tensorplay.") or \
            isinstance(obj, (type, _ModuleType)):
        return names
    names = set(names)
    frontier = names | {"__call__"}      # (``layer(x)`` names no method)
    for _ in range(_HELPER_DEPTH):
        new: set = set()
        for n in frontier:
            f = None
            for c in t.__mro__:
                f = c.__dict__.get(n)
                if f is not None:
                    break
            if isinstance(f, property):
                f = f.fget
            f = getattr(f, "__func__", f)            # staticmethod / classmethod
            if f.__class__ is _FunctionType:
                cn = _code_names(f.__code__)
                _fn_sources(f, cn, out, seen, 1)
                new |= cn - names
        if not new:
            break
        names |= new
        frontier = new
    return names


def _plain_object(v) -> bool:
    """An instance of a user class with its own ``__dict__`` (a layer, a config): its
    attributes named in the code are read through it. Not a tensor, scalar, container,
    function, class, module or tensorplay object."""
    t = v.__class__
    if t in _SCALAR_TYPES or t in _CONTAINER_TYPES or isinstance(v, (Tensor, type, _ModuleType)):
        return False
    if isinstance(v, CompiledFunction):
        return False
    mod = getattr(t, "__module__", None) or ""
    if mod == "tensorplay" or mod.startswith("tensorplay.") or mod == "builtins":
        return False
    try:
        return isinstance(object.__getattribute__(v, "__dict__"), dict)
    except AttributeError:
        return False


def _value_guard(sources, before, graph):
    """Generate ``guard()`` for the values in ``sources`` that the capture read unchanged
    (values the function itself rewrote while capturing are not guarded: such a function runs
    eagerly from its next call on, ``_changed_sources``). None when there is nothing to guard."""
    if not sources:
        return None
    consts = {id(c.const) for c in graph.consts}   # tensors already guarded by _Entry.refs
    ns: dict = {"__miss": _MISSING, "__freeze": _freeze_now}
    names: dict = {}
    lines = []
    guarded: list = []       # (source, snapshot) of each value guarded, for naming a change

    def cname(container):
        k = names.get(id(container))
        if k is None:
            k = names[id(container)] = f"__d{len(names)}"
            ns[k] = container
        return k

    for s, b in zip(sources, before):
        if b is None:
            continue
        kind, container, name, top = s
        a = _snapshot(_read(s))
        if not _same_snapshot(a, b):
            continue
        mode, obj = a[0], a[1]
        if mode == "i" and (not top and not isinstance(obj, Tensor) or
                            isinstance(obj, Tensor) and id(obj) in consts):
            continue
        k = len(lines)
        guarded.append((s, a))
        ns[f"__n{k}"] = name        # the key is data bound by name, never pasted as text
        acc = f"{cname(container)}.cell_contents" if kind == "c" else \
            f"{cname(container)}.get(__n{k}, __miss)"
        # a readable note of what is guarded, only when it cannot be anything but a name
        note = f"  # {name}" if type(name) is str and name.isidentifier() else ""
        ns[f"__o{k}"] = obj
        if mode == "s" and _special(obj):
            # a zero or NaN: compared by spelling (a fresh NaN is the same constant; -0.0 is
            # not 0.0), any other value of its class by == as below
            ns[f"__t{k}"] = obj.__class__
            ns[f"__s{k}"] = _spelling(obj)
            ns["__spell"] = _spelling
            lines.append(f"v = {acc}\n"
                         f"if v is not __o{k} and (v.__class__ is not __t{k} or "
                         f"__spell(v) != __s{k}): return False")
        elif mode == "s":
            ns[f"__t{k}"] = obj.__class__
            lines.append(f"v = {acc}\n"
                         f"if v is not __o{k} and (v.__class__ is not __t{k} or v != __o{k}): "
                         f"return False")
        elif mode == "f" and _flat(obj) and not any(map(_special, obj.values() if
                                                        obj.__class__ is dict else obj)):
            # flat list/tuple/dict of scalars: element types, then one C-level ==
            t = obj.__class__
            ns[f"__t{k}"] = t
            items = obj.values() if t is dict else obj
            ns[f"__ty{k}"] = [e.__class__ for e in items]
            check = f"v.__class__ is not __t{k} or [*map(type, {'v.values()' if t is dict else 'v'})]" \
                    f" != __ty{k}"
            if t is dict:
                ns[f"__tk{k}"] = [e.__class__ for e in obj]
                ns[f"__kl{k}"] = list(obj)        # key order too (iteration order)
                check += f" or [*v] != __kl{k} or [*map(type, v)] != __tk{k}"
            if t is tuple:
                lines.append(f"v = {acc}\nif v is not __o{k} and ({check} or v != __o{k}): "
                             f"return False")
            else:
                ns[f"__o{k}"] = t(obj)            # a copy: the live object is what changes
                lines.append(f"v = {acc}\nif {check} or v != __o{k}: return False")
        elif mode == "f" and a[3] is None:
            # a flat container too big to freeze, holding a zero or NaN: compared whole by
            # _flat_key (as _snapshot took it)
            ns[f"__f{k}"] = a[2]
            ns["__flatkey"] = _flat_key
            lines.append(f"if __flatkey({acc}) != __f{k}: return False")
        elif mode == "n":
            ns[f"__f{k}"] = a[2]
            lines.append(f"v = {acc}\nif v is not __o{k} or (v.shape, v.dtype.str, v.tobytes()) != "
                         f"__f{k}: return False")
        elif mode == "f":
            ns[f"__f{k}"] = a[2]
            ns[f"__keep{k}"] = a[3]
            if _deep_immutable(obj):
                lines.append(f"v = {acc}\nif v is not __o{k} and __freeze(v) != __f{k}: return False")
            else:
                lines.append(f"if __freeze({acc}) != __f{k}: return False")
        else:
            lines.append(f"if {acc} is not __o{k}: return False")
        if k < len(lines):
            lines[k] += note
    if not lines:
        return None
    body = "\n".join(lines).replace("\n", "\n        ")
    src = f"def guard():\n    try:\n        {body}\n    except Exception:\n        return False\n" \
          f"    return True"
    guard = _codegen.function(src, ns, "guard", f"<tensorplay.compile guards {graph.name}>")
    guard.source = src
    guard.sources = guarded
    return guard


_FunctionType = type(_value_guard)
_MappingProxy = type(type.__dict__)


# ---------------------------------------------------------------------------------------------
# what a graph cannot stand for: the capture is watched, and such a function runs eagerly
#
# A graph replays tensor operations only. Python side effects (``state["n"] += 1``,
# ``log.append(x)``, ``self.calls += 1``, a ``global``/``nonlocal`` store, ``print``) happen
# once, while capturing, and values drawn from outside state the guards cannot follow
# (``random.random()``, ``np.random.rand()``, ``time.time()``) would be baked in. ``_Watch``
# looks at the capture (its thread only) with ``sys.setprofile`` (``c_call`` events: the C
# function called and its ``__self__``) and ``sys.settrace`` with ``f_trace_opcodes`` in the
# user's frames (``STORE_GLOBAL``, ``STORE_DEREF`` of a free variable, ``STORE_ATTR``/
# ``DELETE_ATTR`` outside ``__init__``), and ``_changed_sources`` compares the values the guards
# read before and after the capture. Both events come before the effect runs: ``_Watch.note``
# raises ``_capture.SideEffectStop`` there, so the effect is not performed, and the call runs
# the function eagerly (each effect once, in order). What is only found afterwards (an item
# store into a guarded dict, a NumPy draw) is put back by ``_RestorePoint`` when the capture
# ends in a graph break, and otherwise makes the function run eagerly from its next call on
# (its Python ran once, for this call's graph). Either way the function runs eagerly from then
# on (torch's graph break, for the whole function): correct results, eager speed, the reason
# kept in ``CompiledFunction.graph_skips``. The calling thread's own tracer/profiler
# (coverage, a debugger) is chained, not replaced. Functions without findings pay nothing per
# call; the watch costs capture time only.

# Python 3.12+ runs sys.settrace/sys.setprofile on sys.monitoring: a profiler switched on from
# inside a trace callback (at a user's call instruction) misses that very call, so there the
# profiler stays on for the whole capture and filters C calls by their calling frame instead
# (the capture costs more there; 3.10/3.11 keep the switched profiler).
_PROFILE_ALWAYS = __import__("sys").version_info >= (3, 12)

_MUTATORS = frozenset(("append", "extend", "insert", "pop", "remove", "clear", "update",
                       "setdefault", "popitem", "add", "discard", "sort", "reverse",
                       "__setitem__", "__delitem__", "__iadd__", "appendleft", "extendleft",
                       "popleft", "rotate", "difference_update", "intersection_update",
                       "symmetric_difference_update", "fill", "itemset", "resize"))
_WRITES = frozenset(("write", "writelines", "truncate"))      # on an ``_io`` file or stream
_ENTROPY_MODULES = frozenset(("time", "_random", "random", "_secrets", "secrets", "uuid"))
_OPCODES = frozenset(("STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF",
                      "STORE_ATTR", "DELETE_ATTR"))
_INIT_NAMES = frozenset(("__init__", "__new__", "__post_init__", "__setattr__", "__enter__",
                         "__exit__"))


def _stdlib_dirs() -> tuple:
    """The standard library's folders: its frames are not the user's (their stores are their
    own bookkeeping: a ``with`` block's context manager)."""
    import os
    import sysconfig
    dirs = []
    for k in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(k)
        if p:
            dirs.append(os.path.join(p, ""))
    return tuple(dirs)


_STDLIB_DIRS: tuple = ()


def _own_frame(frame) -> bool:
    """A frame of tensorplay's or of one of its plugins' modules (``tensorplay_triton``'s
    capture scope patches Triton while a capture runs), by the module name of its globals."""
    return (frame.f_globals.get("__name__") or "").startswith("tensorplay")


class _Watch:
    """Context manager around one capture: ``reasons`` lists what the graph cannot stand
    for (see above). ``watched``: ids of the objects that existed before the call and that
    the function reaches (guard sources' values, ``self``, arguments), whose mutating
    methods (``list.append``...) are side effects.

    Cost is kept to the user's code: ``sys.settrace`` answers tensorplay's and the standard
    library's frames with None (no local events), and the profiler that sees C calls is on only
    from a call instruction of a user frame until the next instruction of a user frame or the
    start of a tensorplay frame (so ``log.append(1)``, ``random.random()`` and the C calls of a
    standard-library function the user calls are seen, tensorplay's own thousands are not).
    A profiler installed before stays on, chained, for the whole capture."""

    def __init__(self, watched: set):
        global _STDLIB_DIRS
        if not _STDLIB_DIRS:
            _STDLIB_DIRS = _stdlib_dirs()
        self.watched = watched
        self.reasons: list = []
        self.stopped: str | None = None   # the effect the capture stopped before
        self.codes: dict = {}        # code -> (stores {offset: reason}, call offsets) or None
        self.own: dict = {}          # code -> True for tensorplay's own frames

    def note(self, why: str) -> None:
        """Stop the capture before the effect ``why`` runs. Called from the profile (``c_call``:
        before the C function runs; an exception there skips the call) or the opcode trace
        (before the store instruction runs; an exception there is raised by that instruction),
        so the effect has not happened: the call then runs the function eagerly, which performs
        it once. CPython drops the tracer or profiler that raised (``__exit__`` puts the
        caller's back); the profiler, on until then, stops the C calls named in ``_profile`` that
        the unwinding runs (a ``print`` in a ``finally`` block), not stores (a second stop drops
        it too)."""
        if _dispatch._state.mode == "meta":
            # an op's fake kernel (or a custom op's body run as its fake) is running: its
            # effects are not the function's (a body runs again on every call of the graph,
            # as eagerly; a fake kernel runs only while capturing)
            return
        if why not in self.reasons:
            self.reasons.append(why)
        if self.stopped is None:
            self.stopped = why
            if not self._keep[1] and not self._on:
                # raised from the tracer, which CPython then drops: the profiler stays on while
                # the stop unwinds the function, so that an effect in a ``finally`` block or a
                # context manager's ``__exit__`` is stopped too (not performed twice)
                self._on = True
                self._sys.setprofile(self._profile)
        raise _capture.SideEffectStop(why)

    def __enter__(self):
        import gc
        import sys
        self._saved = (sys.gettrace(), sys.getprofile())
        # a tracer or profiler installed before (a debugger, coverage) is chained; one that
        # Python cannot call (cProfile's C profiler: sys.setprofile could not put it back) is
        # left alone, and that part of the watch is off meanwhile
        self._keep = tuple(p is not None and not callable(p) for p in self._saved)
        self._prev = tuple(None if k else p for p, k in zip(self._saved, self._keep))
        self._sys = sys
        self._on = self._keep[1]       # (never switched while a C profiler runs)
        # no cyclic collection meanwhile: a finalizer it runs (anyone's ``__del__``, at any
        # point of the capture) is not the function's doing
        self._gc = gc if gc.isenabled() else None
        if self._gc is not None:
            gc.disable()
        if self._prev[1] is not None or (_PROFILE_ALWAYS and not self._keep[1]):
            sys.setprofile(self._profile)
            self._on = True
        if not self._keep[0]:
            sys.settrace(self._trace)
        return self

    def __exit__(self, *exc):
        if not self._keep[0]:
            self._sys.settrace(self._saved[0])
        if not self._keep[1]:
            self._sys.setprofile(self._saved[1])
        if self._gc is not None:
            self._gc.enable()
        return False

    def _profiling(self, on: bool) -> None:
        if _PROFILE_ALWAYS or self.stopped is not None:
            return                  # (on for the whole capture: see _PROFILE_ALWAYS; note)
        if on is not self._on and self._saved[1] is None:
            self._on = on
            self._sys.setprofile(self._profile if on else None)

    def _profile(self, frame, event, arg):
        prev = self._prev[1]
        if prev is not None:
            prev(frame, event, arg)
        if event == "call":
            own = self.own.get(frame.f_code)
            if own is None:
                own = self.own[frame.f_code] = _own_frame(frame) or \
                    (frame.f_code.co_filename or "").startswith("<tensorplay")
            if own:
                self._profiling(False)
            return
        if event != "c_call":
            return
        if _PROFILE_ALWAYS or self._prev[1] is not None or self.stopped is not None:
            # every C call of the capture reaches here (the profiler is on throughout, or a
            # chained one keeps it on, or the capture is unwinding from a stop): only the
            # user's own calls count
            code = frame.f_code
            own = self.own.get(code)
            if own is None:
                own = self.own[code] = _own_frame(frame) or \
                    (code.co_filename or "").startswith("<tensorplay")
            if own:
                return
            table = self.codes.get(code, False)
            if table is False and self.stopped is not None:
                # a frame the tracer did not see (it is off once a stop was raised from it)
                table = self.codes[code] = self._table(code)
            if table is None:
                return
        name = getattr(arg, "__name__", None)
        owner = getattr(arg, "__self__", None)
        mod = getattr(arg, "__module__", None) or ""
        if name == "print" and mod == "builtins":
            self.note("calls print (output happens once per call eagerly)")
        elif mod in _ENTROPY_MODULES or mod.startswith("numpy.random") or (
                owner is not None and owner.__class__.__module__ in ("random", "_random")) or (
                owner is not None and (owner.__class__.__module__ or "").startswith("numpy.random")):
            self.note(f"calls {mod or type(owner).__name__}.{name} (a value from outside state "
                      f"the guards cannot see)")
        elif name in _MUTATORS and owner is not None and id(owner) in self.watched:
            self.note(f"calls {type(owner).__name__}.{name} on an object that exists outside "
                      f"the call (a Python side effect)")
        elif name in _WRITES and owner is not None and owner.__class__.__module__ == "_io":
            self.note(f"calls {type(owner).__name__}.{name} (output happens once per call "
                      f"eagerly)")
        elif mod == "_warnings" or (mod == "builtins" and name == "next"):
            # a warning is output (or registered); next() advances an iterator that may exist
            # outside the call (its argument is not known here)
            self.note(f"calls {name}() (a Python side effect)")
        elif name in _ADVANCES and owner is not None:
            # it.__next__(), gen.send(v), gen.throw(e): the same advance as next(it)
            self.note(f"calls {type(owner).__name__}.{name}() (advances an iterator: a Python "
                      f"side effect)")

    def _trace(self, frame, event, arg):
        prev = self._prev[0]
        local_prev = prev(frame, event, arg) if prev is not None else None
        code = frame.f_code
        table = self.codes.get(code, False)
        if table is False:
            table = self.codes[code] = None if _own_frame(frame) else self._table(code)
        if table is None:
            return local_prev
        frame.f_trace_opcodes = True
        stores, calls = table
        watch = self

        prev_local = [local_prev]     # the tracer installed before ours, for this frame

        def local(frame, event, arg):
            if prev_local[0] is not None:
                prev_local[0] = prev_local[0](frame, event, arg)
            if event == "opcode":
                at = frame.f_lasti
                why = stores.get(at)
                if why is not None:
                    watch.note(why)
                watch._profiling(at in calls)
            elif event == "line":
                # Python 3.13 starts a frame's opcode events only once f_trace_opcodes is set
                # from its local tracer (set in the 'call' event alone, none came: a store or
                # it.__next__() ran unseen)
                frame.f_trace_opcodes = True
            return local
        return local

    @staticmethod
    def _table(code):
        """``(stores, calls)`` of a user code object: ``{offset: reason}`` of its
        side-effecting stores and the offsets of its call instructions; None for tensorplay's
        and the standard library's code (also frozen modules: importlib's, when the capture
        imports a module) -- not traced."""
        fname = code.co_filename or ""
        if fname.startswith(_STDLIB_DIRS) or fname.startswith(("<tensorplay", "<frozen")):
            return None
        import dis
        init = code.co_name in _INIT_NAMES
        out = {}
        calls = set()
        for ins in dis.get_instructions(code):
            op = ins.opname
            if op.startswith("CALL"):
                calls.add(ins.offset)
                continue
            if op in ("LOAD_METHOD", "LOAD_ATTR") and ins.argval in _ADVANCES:
                # it.__next__(): a method-wrapper, whose call the profiler does not report
                # (gen.send/throw are reported too, as calls)
                out[ins.offset] = (f"{code.co_name}: reads .{ins.argval} (advances an "
                                   f"iterator: a Python side effect)")
                continue
            if op not in _OPCODES:
                continue
            if op in ("STORE_ATTR", "DELETE_ATTR"):
                if init:
                    continue
                why = f"sets attribute .{ins.argval} (a Python side effect)"
            elif op in ("STORE_DEREF", "DELETE_DEREF"):
                if ins.argval not in code.co_freevars:
                    continue         # the frame's own cell
                why = f"assigns nonlocal {ins.argval} (a Python side effect)"
            else:
                why = f"assigns global {ins.argval} (a Python side effect)"
            out[ins.offset] = f"{code.co_name}: {why}"
        return out, frozenset(calls)


def _watched_ids(sources, roots) -> set:
    """ids of the objects that exist outside the call and that the function reaches: the
    values of the guard sources (their containers too) and the objects it is bound to or
    given (``_Watch``)."""
    ids = {id(r) for r in roots}
    for s in sources:
        v = _read(s)
        if v is not _MISSING and v.__class__ not in _SCALAR_TYPES:
            ids.add(id(v))
        if s[0] != "c":
            ids.add(id(s[1]))
    return ids


class _RestorePoint:
    """The Python state a capture may change without the watch seeing it before it happens
    (``_Watch`` stops the capture before the effects it sees), taken before the capture:
    the bindings of the guard sources, the contents of the lists, dicts, sets and NumPy arrays
    they hold (nested, up to ``_FREEZE_BUDGET`` objects per source), and the state of NumPy's
    global random generator and of the NumPy generators the sources and roots hold.
    ``restore()`` puts them back where a capture does not become the call's graph (a graph
    break, a stop): the call then runs the function eagerly, which changes them once.
    ``drawn()`` names the generators a completed capture drew from (values the graph would
    bake in). Capture time only."""

    def __init__(self, sources, roots):
        self.bindings = [(s, _read(s)) for s in sources]
        self.contents: list = []        # (object, copy of its contents)
        seen: set = set()
        for _, v in self.bindings:
            self._save(v, seen, [_FREEZE_BUDGET])
        self.rngs: list = []            # (name, generator, state)
        np = __import__("sys").modules.get("numpy")
        if np is not None:
            rs = getattr(getattr(np.random, "mtrand", None), "_rand", None)
            values = [v for _, v in self.bindings]
            # the global generator's state (a 2.5 KiB copy, ~30 us) only for functions that
            # read numpy, numpy.random or one of its functions (``from numpy.random import rand``)
            if rs is not None and any(v is np or v is np.random or
                                      getattr(v, "__self__", None) is rs for v in values):
                self.rngs.append(("numpy.random", rs, rs.get_state()))
            for v in values + list(roots):
                mod = getattr(v.__class__, "__module__", "") or ""
                if mod.startswith("numpy.random") and v is not rs and \
                        all(v is not r[1] for r in self.rngs):
                    state = _rng_state(v)
                    if state is not None:
                        self.rngs.append((f"a {v.__class__.__name__}", v, state))

    def _save(self, v, seen, budget) -> None:
        t = v.__class__
        if t is list or t is dict or t is set:
            if id(v) in seen or budget[0] <= 0:
                return
            seen.add(id(v))
            budget[0] -= 1
            self.contents.append((v, v.copy()))
            for x in (v.values() if t is dict else v):
                self._save(x, seen, budget)
        elif t is tuple:
            for x in v:
                self._save(x, seen, budget)
        elif _ndarray(v) and v.size <= _FLAT_MAX and id(v) not in seen:
            seen.add(id(v))
            self.contents.append((v, v.copy()))

    def restore(self) -> None:
        for s, v in self.bindings:
            if _read(s) is v:
                continue
            kind, container, name = s[:3]
            if kind == "c":
                if v is _MISSING:
                    del container.cell_contents
                else:
                    container.cell_contents = v
            elif isinstance(container, dict):       # a mappingproxy (a class) is not written
                if v is _MISSING:
                    container.pop(name, None)
                else:
                    container[name] = v
        for obj, copy in self.contents:
            t = obj.__class__
            if t is list:
                obj[:] = copy
            elif t is dict or t is set:
                obj.clear()
                obj.update(copy)
            elif obj.shape == copy.shape and obj.tobytes() != copy.tobytes():
                obj[...] = copy
        for _, g, state in self.rngs:
            if _rng_state(g) is not None:
                _set_rng_state(g, state)

    def drawn(self) -> list:
        return [f"draws from {name} (a value from outside state the guards cannot see)"
                for name, g, state in self.rngs if not _same_rng_state(_rng_state(g), state)]


def _rng_state(g):
    """The state of a NumPy ``RandomState`` or ``Generator`` (a copy), None for other objects."""
    if hasattr(g, "get_state"):
        return g.get_state()
    bg = getattr(g, "bit_generator", None)
    return bg.state if bg is not None else None


def _set_rng_state(g, state) -> None:
    if hasattr(g, "set_state"):
        g.set_state(state)
    else:
        g.bit_generator.state = state


def _same_rng_state(a, b) -> bool:
    """Equal generator states (tuples or dicts holding NumPy arrays, compared by value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_rng_state(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_rng_state(x, y) for x, y in zip(a, b))
    if _ndarray(a) or _ndarray(b):
        return _ndarray(a) and _ndarray(b) and a.shape == b.shape and bool((a == b).all())
    return a.__class__ is b.__class__ and a == b


def _changed_sources(sources, before) -> list:
    """Reasons for the guarded values the capture itself changed (a side effect the graph
    would not replay: ``state["calls"] += 1`` on a global dict, ``K.append(1)``)."""
    out = []
    for s, b in zip(sources, before):
        if not _same_snapshot(_snapshot(_read(s)), b):
            name = s[2] if s[0] != "c" else "a closure variable"
            out.append(f"changes {name} (a Python side effect)")
    return out


# ---------------------------------------------------------------------------------------------
# code generation: one Python function per graph

def _generate(graph, *, checked: bool, kernels: dict | None = None):
    """Generate ``run(leaves)`` replaying ``graph`` through dispatch; returns (fn, source).

    ``checked`` adds, after each custom-op node, a comparison of the real outputs with the
    metadata its fake kernel gives for the real inputs. ``kernels``: node index -> the callable
    to call instead of the op (``_joint``: a built-in op's backend entry, called straight where
    the dispatch key is known -- grad mode off, one backend, no dispatch mode).
    """
    Value = _capture.Value
    ns: dict = {"__gm": _gm._state, "__CompileError": CompileError, "__kernels": kernels or {}}
    def const(x):
        return _codegen.bind(ns, x)

    def ref(x):
        if isinstance(x, Value):
            if x.kind == "const":
                ns[_cname(x)] = x.const
                return _cname(x)
            return f"v{x.id}"
        # Values reach the source only as names bound in ``ns`` (data, never text): only None
        # and exact small ints are written as literals, since their repr is known. Dict keys,
        # enums, NaN, user objects with any repr are constants looked up by name.
        t = type(x)
        if t is list:
            return "[" + ", ".join(ref(y) for y in x) + "]"
        if t is tuple:
            return "(" + "".join(ref(y) + ", " for y in x) + ")"
        if isinstance(x, tuple) and hasattr(x, "_fields"):     # a namedtuple result
            return f"{const(t)}._make((" + "".join(ref(y) + ", " for y in x) + "))"
        if t is dict:
            return "{" + ", ".join(f"{const(k)}: {ref(v)}" for k, v in x.items()) + "}"
        lit = _codegen.literal(x)
        if lit is not None:
            return lit
        return const(x)

    body = []
    if graph.inputs:
        names = ", ".join(f"v{v.id}" for v in graph.inputs)
        body.append(f"{names}, = __leaves")
    entry_mode = graph.entry_grad
    exit_mode = graph.exit_grad
    manage_grad = exit_mode != entry_mode or any(n.grad_enabled != entry_mode for n in graph.nodes)
    if manage_grad and graph.nodes:
        # every node runs under the mode it had eagerly, set here from the first node on: the
        # call that captured the graph runs it right after the capture, which left the mode the
        # function set (``exit_mode``), not the entry mode of the guard key (later calls)
        entry_mode = None
    chains = {ch.nodes[0].index: ch for ch in graph.groups}
    skip_until = -1
    for n in graph.nodes:
        if n.index <= skip_until:
            continue
        if manage_grad and n.grad_enabled != entry_mode:
            body.append(f"__gm.enabled = {bool(n.grad_enabled)}")
            entry_mode = n.grad_enabled
        ch = chains.get(n.index)
        if ch is not None:
            body.extend(_gen_chain(ch, ns, ref))
            skip_until = ch.nodes[-1].index
            continue
        body.extend(_gen_node(n, ns, ref, checked))
    body.append(f"return {ref(graph.output)}")
    lines = ["def run(__leaves):"]
    if manage_grad:
        # the grad mode is part of the guard key: it is ``graph.entry_grad`` here. The function
        # leaves the mode it set (``tp.set_grad_enabled(False)`` called as a function) after
        # the call, as eager; also when a node raises (eager would have left the mode set at
        # that point: this is it unless the error is raised inside a ``with`` block)
        lines.append("    try:")
        lines.extend("        " + b for b in body)
        lines.append("    finally:")
        lines.append(f"        __gm.enabled = {bool(exit_mode)}")
    else:
        lines.extend("    " + b for b in body)
    src = "\n".join(lines)
    ns["__check"] = _check_against_fake
    return _codegen.function(src, ns, "run", f"<tensorplay.compile {graph.name}>"), src


def _cname(v):
    return f"c{v.id}"


def _assign(res, ref) -> str:
    """Left-hand side for a node result structure ('' when nothing new is bound)."""
    Value = _capture.Value
    # an in-place op on a lifted tensor (a graph constant: ``buf.add_(x)``) returns that
    # constant, which is bound by name already: nothing to bind (``c0 = ...`` would make the
    # name local to the runner)
    if isinstance(res, Value):
        return "" if res.kind == "const" else f"v{res.id}"
    if isinstance(res, (list, tuple)) and res and all(isinstance(r, Value) for r in res):
        return "(" + "".join("_, " if r.kind == "const" else f"v{r.id}, " for r in res) + ")"
    return ""


def _gen_node(n, ns, ref, checked):
    Value = _capture.Value
    if n.kind == "disabled":         # run eagerly, its outputs checked (_capture.record_disabled)
        ns[f"dis{n.index}"] = n.op
        ns[f"dischk{n.index}"] = _capture.disabled_check(n)
        args = [ref(a) for a in n.args] + [_codegen.keyword_arg(k, ref(v), ref)
                                           for k, v in n.kwargs.items()]
        outs = "".join(f"v{v.id}, " for v in n.outputs)
        call = f"dischk{n.index}(dis{n.index}({', '.join(args)}))"
        return [f"({outs}) = {call}" if outs else call]
    if n.kind == "multi_output":     # (the outputs of unbind/split/chunk: _capture)
        from ._ops.views import mark_multi_output
        ns["__multi_output"] = mark_multi_output
        return [f"__multi_output({ref(n.args[0])}, {ref(n.args[1])})"]
    if n.kind != "op":
        v = ref(n.args[0])
        if n.kind == "requires_grad_":
            return [f"{v}.requires_grad_({ref(n.args[1])})"]
        if n.kind == "detach":
            return [f"v{n.outputs[0].id} = {v}.detach()"]
        if n.kind == "data":        # (a detached alias with a version counter of its own)
            return [f"v{n.outputs[0].id} = {v}.data"]
        return [f"{v}.{n.kind}()"]
    opname = f"op{n.index}"
    ns[opname] = ns["__kernels"].get(n.index, n.op)
    args = [ref(a) for a in n.args] + [_codegen.keyword_arg(k, ref(v), ref)
                                       for k, v in n.kwargs.items()]
    call = f"{opname}({', '.join(args)})"
    lhs = _assign(n.result, ref)
    out = []
    check = checked and not n.op.is_builtin
    if check:
        # fake metadata of the real inputs, computed before the call (mutation cannot change it)
        # (the capture's own fake run, for inputs of its metadata: ``_FakeCheck.expected``)
        ns[f"__seen{n.index}"] = n.fake_run
        out.append(f"__fk = __check.expected(op{n.index}, ({''.join(a + ', ' for a in args[:len(n.args)])}), "
                   f"{{{', '.join(f'{ref(k)}: {ref(v)}' for k, v in n.kwargs.items())}}}, "
                   f"__seen{n.index})")
    if lhs:
        out.append(f"{lhs} = __r = {call}")
    else:
        out.append(f"__r = {call}")
    if not lhs and n.result is not None and not isinstance(n.result, Value):
        # nested result structures: bind each value by its path
        for path, v in _paths(n.result):
            out.append(f"v{v.id} = __r{path}")
    if check:
        out.append(f"__check(op{n.index}, __fk, __r)")
    return out


def _paths(x, prefix=""):
    Value = _capture.Value
    if isinstance(x, Value):
        if x.kind != "const":        # (a lifted tensor returned by an in-place op: bound)
            yield prefix, x
    elif isinstance(x, (list, tuple)):
        for i, y in enumerate(x):
            yield from _paths(y, f"{prefix}[{i}]")


def _gen_chain(ch, ns, ref):
    """A fused chain: fused when nothing needs grad and the backend fuses, else node by node."""
    k = f"chain{ch.number}"
    if ch.runner is None:               # one per chain: the checked and unchecked runs share it
        ch.runner = _chain_runner(ch)
    ns[k] = ch.runner
    ins = ", ".join(ref(v) for v in ch.inputs)
    outs = "".join(f"v{v.id}, " for v in ch.outputs)
    return [f"({outs}) = {k}({ins})"]


def _chain_runner(ch):
    """``run(a0, ...)``: one fused chain on real tensors (see ``_fusion``), generated per chain
    so its arity and outputs are unrolled (no ``*args`` tuple, no loop, no generator).

    Runs the chain node by node (``unfused``) when grad mode is on and an input needs grad,
    under a dispatch mode, when an input is fake or on another device than the first, or when
    the backend has no fuser; else one call of the backend's fused function on the native
    arrays, each output wrapped on the first input's device. Only generated names reach the
    text (``a0``, ``n0``, ``r``): the chain and its functions are bound in the namespace."""
    n = len(ch.inputs)
    if not n:                           # nothing to read a device from: node by node
        return _gen_unfused(ch)
    a = [f"a{i}" for i in range(n)]
    nat = [f"n{i}" for i in range(n)]
    args = ", ".join(a)
    lines = [f"def run({args}):"]
    needs = " or ".join(f"{x}.needs_grad" for x in a)
    lines.append(f"    if __gm.enabled and ({needs}) or __ds.mode is not None:")
    lines.append(f"        return __unfused({args})")
    lines.extend(f"    {v} = {x}.native" for v, x in zip(nat, a))
    lines.append("    dev = a0.raw_device")
    other = "".join(f" or {x}.raw_device is not dev" for x in a[1:])
    lines.append(f"    if {' or '.join(f'{v} is None' for v in nat)}{other}:")
    lines.append(f"        return __unfused({args})")
    lines.append("    be = a0.backend")
    lines.append("    fn = __compiled.get(be, False)")
    lines.append("    if fn is False:")
    lines.append("        fn = __fused_for(__compiled, __expr, be)")
    lines.append("    if fn is None:")
    lines.append(f"        return __unfused({args})")
    lines.append(f"    r = fn([{', '.join(nat)}])")
    lines.append("    if r is None:")         # the fuser declined this call (layout, size)
    lines.append(f"        return __unfused({args})")
    lines.append("    wrap = be.wrap")
    lines.append("    return (" + "".join(f"wrap(r[{i}], dev), " for i in range(len(ch.outputs))) + ")")
    # the chain's parts, not the chain: it keeps this runner (``FusedChain.runner``), and a
    # cycle would outlive the graph until the cyclic collector runs
    ns = {"__gm": _gm._state, "__ds": _dispatch._state, "__unfused": _gen_unfused(ch),
          "__compiled": ch._compiled, "__expr": ch.expr, "__fused_for": _fusion.fused_for}
    return _codegen.function("\n".join(lines), ns, "run",
                             f"<tensorplay.compile chain {ch.number} runner>")


def _gen_unfused(ch):
    Value = _capture.Value
    ns: dict = {}
    idx = {id(v): f"a{i}" for i, v in enumerate(ch.inputs)}

    def ref(x):
        if isinstance(x, Value):
            return idx.get(id(x), f"v{x.id}")
        return _codegen.bind(ns, x)

    lines = [f"def unfused({', '.join(idx[id(v)] for v in ch.inputs)}):"]
    for n in ch.nodes:
        ns[f"op{n.index}"] = n.op
        call = [ref(a) for a in n.args]
        # (keyword arguments of row reductions: dtype=None, the only ones a chain takes)
        call += [f"{k}={ref(v)}" for k, v in n.kwargs.items() if k.isidentifier()]
        lines.append(f"    v{n.outputs[0].id} = op{n.index}({', '.join(call)})")
    lines.append(f"    return ({''.join(f'v{v.id}, ' for v in ch.outputs)})")
    return _codegen.function("\n".join(lines), ns, "unfused", f"<tensorplay.compile chain {ch.number}>")


# ---------------------------------------------------------------------------------------------
# run-time check of fake kernels (CASES C13)

class _FakeCheck:
    """Compares a custom op's real outputs with what its fake kernel promises for the same
    inputs (shape, dtype, device, strides of dimensions larger than 1)."""

    @staticmethod
    def expected(op, args, kwargs, seen=None):
        """The metadata (``_capture.output_metadata``) the fake kernel of ``op`` gives for fake
        copies of the real ``args``/``kwargs``. ``seen``: the node's capture-time fake run
        (``Node.fake_run``), reused when its inputs had the metadata of these (the capturing
        call's, as a rule), so a kernel serving as its own fake runs once on fakes per first
        call, not twice: a fake kernel sees metadata only, and its inputs' are the same."""
        if seen is not None:
            ins = seen[0]
            leaves = _pytree.tree_leaves(kwargs, Tensor, _pytree.tree_leaves(list(args), Tensor))
            if len(leaves) == len(ins) and _capture.fake_metadata(leaves) == ins:
                return seen[1]

        def fk(x):
            return make_fake(x.shape, x.dtype, x.device, x.stride_tuple, offset=x.offset)
        mst = _dispatch._state
        prev = mst.mode
        mst.mode = "meta"
        try:
            return _capture.output_metadata(
                op.entry("meta")(*_pytree.tree_map(fk, list(args), Tensor),
                                 **_pytree.tree_map(fk, kwargs, Tensor)))
        except Exception as e:
            which = f"the fake kernel of {op.name}" if op.is_builtin or op.has_fake else (
                f"{op.name} has no fake kernel (no register_fake), so its kernel was run as its "
                f"fake and it")
            fix = "Fix it" if op.is_builtin or op.has_fake else (
                f"Register a fake that only uses metadata (@tensorplay.library.register_fake("
                f"{op.name!r}))")
            raise CompileError(
                f"tensorplay.compile: {which} failed on the inputs of this call "
                f"({type(e).__name__}: {e}). {fix} and check the op with "
                f"tensorplay.library.opcheck({op.name!r}, args).") from e
        finally:
            mst.mode = prev

    def __call__(self, op, fake, real):
        """``fake``: ``expected``'s metadata; ``real``: what the op returned."""
        rl = _pytree.tree_leaves(real, Tensor)
        if len(fake) != len(rl):
            self._fail(op, f"it returned {len(rl)} tensor(s) but its fake kernel returns "
                           f"{len(fake)}")
        for i, ((fs, fdtype, fdevice, fstride), r) in enumerate(zip(fake, rl)):
            rs = tuple(r.shape)
            dynamic = any(is_dynamic_size(n) for n in fs)
            if dynamic and len(fs) == len(rs):
                # a data-dependent dimension (get_ctx().new_dynamic_size()) takes the real size
                fs = tuple(b if is_dynamic_size(a) else a for a, b in zip(fs, rs))
            if fs != rs or fdtype is not r.dtype or fdevice != r.device:
                self._fail(op, f"output {i} is {_desc(r)} but its fake kernel promised "
                               f"{_desc_meta(fs, fdtype, fdevice, fstride)}")
            if not dynamic and any(a != b for a, b, s in zip(fstride, r.stride_tuple, rs) if s > 1):
                self._fail(op, f"output {i} has strides {tuple(r.stride_tuple)} but its fake kernel "
                               f"promised {tuple(fstride)} (shape {rs})")

    @staticmethod
    def _fail(op, what):
        raise CompileError(
            f"tensorplay.compile: custom op {op.name!r} does not match its fake kernel: {what}. "
            f"The compiled graph was built from the fake kernel's metadata, so its results cannot "
            f"be trusted. Fix the fake kernel (@{op.opname}.register_fake) and check the op "
            f"with tensorplay.library.opcheck({op.name!r}, sample_args).")


_check_against_fake = _FakeCheck()


def _desc(t) -> str:
    return _desc_meta(tuple(t.shape), t.dtype, t.device, t.stride_tuple)


def _desc_meta(shape, dtype, device, stride) -> str:
    return f"shape {tuple(shape)}, dtype {dtype}, device {device}, strides {tuple(stride)}"
