"""Triton launches inside ``tensorplay.compile``: recorded as graph nodes, as torch.compile does.

torch.compile accepts a Triton launch on tensors it traces -- ``wrap_triton(k)[grid](...)`` or a raw
``k[grid](...)`` -- and records it as one node that launches the kernel when the graph runs
(``triton_kernel_wrapper_mutation``), mutating the tensors passed. Here likewise:

* a launch whose tensors are being captured becomes a call of the op ``tensorplay_triton::launch``
  (``(str kernel, int launch, Tensor(a!)[] tensors) -> ()``, a ``triton_op``; defined on the first
  such launch): ``launch`` indexes a table holding the kernel's wrapper, the grid and the
  non-tensor arguments; ``tensors`` are the tensor arguments, all declared mutated, so the node is
  a barrier (nothing is reordered across it) and the graph prints ``kernel``'s name. When the graph
  runs, the op launches the kernel through ``wrap_triton`` on the real tensors (cpu: interpreter,
  cuda: compiled); a callable grid is called then, with the launch's meta-parameters.
* raw launches reach ``wrap_triton``: while a capture runs (in any thread), Triton's
  ``KernelInterface.__getitem__`` gives launchers that hand launches with captured tensors to
  ``wrap_triton``; every other launch is Triton's own. The patch is entered around each capture
  (``tensorplay._capture.capture_scopes``) and removed when the last capture ends: nothing is
  added to launches outside ``tensorplay.compile``.

Gradients do not flow through a launch (as in torch): the op has no autograd formula.
"""

from __future__ import annotations

import contextlib
import sys
import threading

from tensorplay import Tensor

__all__ = ["capture_scope", "pin_launch", "record_launch"]

_LAUNCHES: list = []        # launch index -> (wrapper, grid, args, kwargs) with _Slot for tensors
_OP: list = []              # the launch op, once defined
_lock = threading.Lock()
_active = [0]               # captures in progress (all threads) that patched __getitem__
_ORIG: list = []            # Triton's KernelInterface.__getitem__


class _Slot:
    """Where the ``i``-th tensor of the launch goes among the arguments."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


def _launch_op():
    if not _OP:
        from tensorplay import library

        def launch(kernel: str, launch: int, tensors: list) -> None:
            w, grid, targs, tkw = _LAUNCHES[launch]
            args = [tensors[a.i] if a.__class__ is _Slot else a for a in targs]
            kwargs = {k: tensors[v.i] if v.__class__ is _Slot else v for k, v in tkw.items()}
            w[grid](*args, **kwargs)

        op = library.triton_op("tensorplay_triton::launch", launch, mutates_args=("tensors",),
                               schema="(str kernel, int launch, Tensor(a!)[] tensors) -> ()")
        op.register_fake(_no_output)
        _OP.append(op)
    return _OP[0]


def _no_output(kernel, launch, tensors):
    return None


def record_launch(wrapper, grid, args, kwargs) -> int:
    """Record ``wrapper[grid](*args, **kwargs)`` (tensors being captured) as a graph node;
    returns the launch's index (``pin_launch``)."""
    tensors: list = []
    targs = list(args)
    for i, a in enumerate(targs):
        if isinstance(a, Tensor):
            targs[i] = _Slot(len(tensors))
            tensors.append(a)
    tkw = dict(kwargs)
    for k, v in tkw.items():
        if isinstance(v, Tensor):
            tkw[k] = _Slot(len(tensors))
            tensors.append(v)
    with _lock:
        idx = len(_LAUNCHES)
        _LAUNCHES.append((wrapper, grid, targs, tkw))
    _launch_op()(wrapper.name, idx, tensors)
    return idx


def pin_launch(idx, wrapper, config_kwargs) -> None:
    """Launch ``idx`` (recorded, not yet run: its capture is in progress) launches ``wrapper``
    (an autotuner's inner kernel) with ``config_kwargs`` added to its keyword arguments."""
    with _lock:
        _, grid, targs, tkw = _LAUNCHES[idx]
        _LAUNCHES[idx] = (wrapper, grid, targs, {**tkw, **config_kwargs})


def _captured(args, kwargs) -> bool:
    for a in args:
        if isinstance(a, Tensor) and a.capture_info is not None:
            return True
    for a in kwargs.values():
        if isinstance(a, Tensor) and a.capture_info is not None:
            return True
    return False


def _getitem(self, grid):
    """``KernelInterface.__getitem__`` while a capture runs: launches with captured tensors go to
    ``wrap_triton`` (which records them); the others are Triton's own."""
    launch = _ORIG[0](self, grid)

    def launch_or_record(*args, **kwargs):
        if _captured(args, kwargs):
            from . import wrap_triton
            return wrap_triton(self)[grid](*args, **kwargs)
        return launch(*args, **kwargs)
    return launch_or_record


@contextlib.contextmanager
def capture_scope():
    """Entered around every ``tensorplay.compile`` capture: raw launches are recorded meanwhile."""
    jit = sys.modules.get("triton.runtime.jit")
    ki = getattr(jit, "KernelInterface", None)
    if ki is None or "__getitem__" not in vars(ki):    # no Triton kernel can exist yet
        yield
        return
    with _lock:
        if _active[0] == 0:
            if not _ORIG:
                _ORIG.append(vars(ki)["__getitem__"])
            ki.__getitem__ = _getitem
        _active[0] += 1
    try:
        yield
    finally:
        with _lock:
            _active[0] -= 1
            if _active[0] == 0:
                ki.__getitem__ = _ORIG[0]
