"""``tensorplay.compiler``: the question kernel libraries' host code asks about compilation
(``torch.compiler``'s names).

flash-linear-attention's activation host code (``fla.modules.activations.ops.prepare_input``)
asks ``torch.compiler.is_compiling()`` to hand compiled code dense rows; under tensorplay the
compiler is ``tensorplay.compile``, which captures a function by running it once in the calling
thread and replays what it captured.
"""

from __future__ import annotations

__all__ = ["is_compiling", "is_dynamo_compiling"]


def is_compiling() -> bool:
    """True while ``tensorplay.compile`` captures in the calling thread (the run whose calls become
    the compiled graph), else False: eager calls, a compiled function's replays, other threads.
    Same role as ``torch.compiler.is_compiling()`` (True while torch.compile traces). Takes no
    argument, never raises."""
    from . import _dispatch
    return _dispatch._state.mode == "capture"


def is_dynamo_compiling() -> bool:
    """:func:`is_compiling` (torch's name for its tracer's part; tensorplay has one tracer)."""
    return is_compiling()
