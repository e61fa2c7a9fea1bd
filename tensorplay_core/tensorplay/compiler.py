"""``tensorplay.compiler``: the question kernel libraries' host code asks about compilation
(``torch.compiler``'s names).

flash-linear-attention's activation host code (``fla.modules.activations.ops.prepare_input``)
asks ``torch.compiler.is_compiling()`` to hand compiled code dense rows; under tensorplay the
compiler is ``tensorplay.compile``, which captures a function by running it once in the calling
thread and replays what it captured.
"""

from __future__ import annotations

import functools
import gc

from . import _capture, _dispatch

__all__ = ["cudagraph_mark_step_begin", "disable", "is_compiling", "is_dynamo_compiling",
           "reset"]

_cstate = _capture._state        # per thread: captures in progress, the eager run's log
_dstate = _dispatch._state       # per thread: the dispatch mode ("capture" while capturing)


def is_compiling() -> bool:
    """True while ``tensorplay.compile`` captures in the calling thread (the run whose calls become
    the compiled graph), and in the eager run that stands for the first call of a compiled
    function calling a disabled function (see :func:`disable`; outside the disabled functions,
    so that it takes the capture's path); else False: eager calls, a compiled function's
    replays, code run by a disabled function, other threads.
    Same role as ``torch.compiler.is_compiling()`` (True while torch.compile traces). Takes no
    argument, never raises."""
    return _dstate.mode == "capture" or (_cstate.log is not None and not _cstate.log_depth)


def is_dynamo_compiling() -> bool:
    """:func:`is_compiling` (torch's name for its tracer's part; tensorplay has one tracer)."""
    return is_compiling()


def disable(fn=None, recursive=True, *, reason=None):
    """Keep ``fn`` out of ``tensorplay.compile``'s graphs: it runs eagerly, on every call of the
    compiled function, on that call's values. Same as ``torch.compiler.disable(fn=None,
    recursive=True, *, reason=None)``: usable bare (``@disable``), with arguments
    (``@disable(recursive=False)``) or as ``disable(fn)``; returns a wrapper of ``fn``
    (``functools.wraps``: its name, docstring and ``__wrapped__``); disabling a wrapper again
    returns it. Any arguments and results (tensors of any shape, dtype and device, also in
    lists, tuples and dicts; other values): shapes and dtypes are irrelevant to it.

    Outside a capture the wrapper calls ``fn`` as is (about two thread-local reads added to the
    call). While ``tensorplay.compile`` captures, a call of it is recorded as one opaque node of
    the graph (``print(compiled.graph)`` shows ``disabled <name>``) that the compiled function
    runs by calling ``fn`` with the graph's tensors, in program order: ``fn``'s Python runs on
    every call (side effects such as appending to a list happen each time, as under torch), and
    the ops before and after it are still compiled (fused where they qualify); the node is a
    barrier (``fn`` may mutate its arguments: nothing is fused or moved across it).
    Gradients flow through it as through eager code (``fn``'s own autograd graph).

    Why a node and not a graph break: tensorplay's tracer records op calls, so the rest of the
    function stays one graph around the call; what the graph needs from ``fn`` is its outputs'
    metadata, which exist only when it runs. So the first call of a compiled function that
    meets a disabled call (each new signature: the graph is guarded on exact sizes) runs the
    function eagerly once -- that run is the call's result, so ``fn`` and every other effect
    happen once; :func:`is_compiling` is True in it outside disabled functions, so it takes the
    capture's path -- logging what each disabled call returned, then captures it again with
    those outputs (the function's own Python, outside ``fn``, runs at each of these passes, as
    captured code runs only when captured). Each later call checks that ``fn``'s outputs have
    the structure, shapes, dtypes, devices and strides seen then.

    ``recursive``: torch's ``recursive=False`` skips only ``fn``'s own frame and may compile the
    functions it calls. tensorplay's tracer has no frames to skip -- it records op calls, not
    bytecode -- so there is no such distinction: ``recursive=False`` is treated as ``True``
    (``fn`` and everything it calls run eagerly; results and side effects are torch's, only
    the callees are not compiled). ``reason`` is kept as ``wrapper._tensorplay_disable_reason``.

    Errors: ``TypeError`` when ``fn`` is not callable or ``recursive`` is not a bool (at
    decoration). Under ``tensorplay.compile``: ``CompileError`` when a later call's ``fn``
    returns outputs of another structure or metadata than when captured (naming ``fn`` and what
    changed), and when the capture calls a disabled function that the eager run did not call on
    tensors of those shapes (the function's Python took another path: a branch on its own
    side effects); errors ``fn`` raises propagate unchanged.
    """
    if not isinstance(recursive, bool):
        raise TypeError(f"tensorplay.compiler.disable: recursive must be a bool, got {recursive!r}")
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if not callable(fn):
        raise TypeError(f"tensorplay.compiler.disable: expected a function, got {fn!r}")
    if getattr(fn, "_tensorplay_disabled", False):
        return fn
    st = _cstate

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if st.active and _dstate.mode == "capture":   # (not a custom op's body run as its fake)
            return _capture.record_disabled(wrapper, args, kwargs)
        if st.log is not None:
            return _capture.call_logged(wrapper, fn, args, kwargs)
        return fn(*args, **kwargs)

    wrapper._tensorplay_disabled = True
    wrapper._tensorplay_disable_reason = reason
    return wrapper


def reset() -> None:
    """Drop every compiled graph in the process (``torch.compiler.reset()``: clear the in-process
    compilation caches): each live ``tensorplay.compile`` result forgets its graphs, its
    ``"reduce-overhead"`` recordings and ``graph_skips``, as ``compiled.reset()`` does, so its
    next call captures again. Compiled functions stay usable; nothing else changes (no disk
    cache exists). Takes no argument, returns None, never raises.

    Finds them by walking the objects the garbage collector tracks (no registry on the compile
    path): milliseconds for a large heap, meant between runs or tests, as torch's. Calls of
    other threads running meanwhile finish on the graph they hold."""
    from .compile import CompiledFunction
    for obj in gc.get_objects():
        if isinstance(obj, CompiledFunction):
            obj.reset()


def cudagraph_mark_step_begin() -> None:
    """Mark the start of a new iteration (``torch.compiler.cudagraph_mark_step_begin()``, called
    before each step of a ``mode="reduce-overhead"`` loop). Takes no argument, returns None.

    A no-op here, by design: torch's CUDA-graph replays return outputs in the graph's own
    memory, which the next replay overwrites unless a new step has begun (hence this call);
    ``tensorplay.compile``'s replays copy every output into a fresh tensor, so a result is never
    overwritten by a later call and there is no step to mark. Code written for torch (calling
    it before each iteration) runs unchanged, with the same results."""
