"""Random numbers in bridged ops: torch's generator decides them.

A torch user expects ``torch.manual_seed(s); op(x)`` to give the same numbers each time, two
calls in a row to give different ones, and ``torch.random.fork_rng`` / activation checkpointing
(which save and restore torch's generator around a recompute) to reach every random op. A
bridged op draws from TensorPlay's generator, which torch's seed does not touch. So each call of
an op tagged ``nondeterministic_seeded`` (``seeded_call``) first draws a seed from torch's
generator of the call's device -- advancing it, as a torch random op advances it -- and seeds
TensorPlay's generator with it (``tensorplay.manual_seed``) before the TensorPlay op runs:

* cpu (and ops with no tensor or device argument): ``torch.default_generator`` (one 63-bit
  draw; what ``torch.manual_seed`` seeds);
* cuda: the device's ``torch.cuda.default_generators[i]``, read without a device sync: the
  seed is mixed from its seed and Philox offset, and the offset advanced by 4, as one of torch's
  own cuda random ops advances it (``torch.manual_seed`` and ``torch.cuda.manual_seed`` seed it).

The seed is a new one per call (torch's stream moves on), so calls are not correlated; the
numbers a call draws are TensorPlay's (NumPy's or CuPy's generator seeded with it), not the
numbers torch's own op would draw. Seeding and running are one step under a lock, so two threads
never run with one seed. Cost per call of a tagged op on cpu: a draw (~2.5 us) and TensorPlay's
seeding (~30 us: NumPy builds a generator), ~45 us in all measured on a 1-element op; untagged
ops take none of this.

``count_draws`` is the other half: it counts the draws TensorPlay's generators make in the
calling thread (every draw goes through a device backend's ``rand``/``randn``, the members of
``tensorplay.backends.Backend`` that draw), so that a body run again in backward can be refused
when it drew: its new numbers would give a gradient that is not the forward's.
"""

from __future__ import annotations

import contextlib
import threading

import tensorplay as tp
import torch

__all__ = ["count_draws", "forget_seed", "last_seed", "run_seeded", "seeded_call", "torch_seed"]

_TPTensor = tp.Tensor
_TPDevice = type(tp.device("cpu"))
_lock = threading.RLock()           # seeding + the op: one step (no two calls on one seed)
_MASK = (1 << 64) - 1


def _mix(a: int, b: int) -> int:
    """splitmix64 of ``a`` and ``b``: a 63-bit seed, another one for each offset."""
    z = (a * 0x9E3779B97F4A7C15 + b + 0x632BE59BD9B4E019) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return (z ^ (z >> 31)) >> 1


def torch_seed(device=None) -> int:
    """A seed drawn from torch's generator of ``device`` (a TensorPlay device; None: cpu),
    advancing it: ``torch.default_generator`` for cpu, the device's cuda generator (its seed
    and Philox offset, no sync) for cuda."""
    if device is not None and device.type == "cuda":
        index = device.index
        gen = torch.cuda.default_generators[torch.cuda.current_device() if index is None
                                             else index]
        seed, offset = gen.initial_seed(), gen.get_offset()
        gen.set_offset(offset + 4)
        return _mix(seed, offset)
    # int64 random_ draws uniformly from [0, 2**63) with the default generator (a cpu tensor
    # whatever torch's default device: no sync, torch.default_generator's stream)
    return int(torch.empty((), dtype=torch.int64, device="cpu").random_())


def _device_of(args, kwargs):
    """The device of the first TensorPlay tensor among the arguments (one level into lists),
    else the first device argument, else None (cpu)."""
    found = None
    for v in (*args, *kwargs.values()):
        if v.__class__ is _TPTensor or isinstance(v, _TPTensor):
            return v.device
        if isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, _TPTensor):
                    return x.device
        elif found is None and isinstance(v, _TPDevice):
            found = v
    return found


class _Last(threading.local):
    """The seed the last seeded call of this thread used (None: none since ``forget_seed``)."""

    def __init__(self):
        self.seed = None


_last = _Last()


def seeded_call(op):
    """``op`` (a TensorPlay op tagged ``nondeterministic_seeded``) called with TensorPlay's
    generator seeded from torch's first (see the module's docstring). The seed is kept for
    ``last_seed`` (an op differentiated through its body runs it again with that seed in an eager
    backward: the forward's numbers)."""
    def call(*args, **kwargs):
        seed = torch_seed(_device_of(args, kwargs))
        _last.seed = seed
        with _lock:
            tp.manual_seed(seed)
            return op(*args, **kwargs)
    call.__name__ = f"seeded_{op.opname}"
    return call


def forget_seed() -> None:
    """Forget this thread's last seed (before a call whose seed ``last_seed`` is to read)."""
    _last.seed = None


def last_seed():
    """The seed this thread's last seeded call used since ``forget_seed`` (None: no call ran,
    e.g. torch ran the op's fake while tracing)."""
    return _last.seed


def run_seeded(seed, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with TensorPlay's generator seeded with ``seed`` (under the lock
    ``seeded_call`` takes): a body run again draws what the call seeded with ``seed`` drew."""
    with _lock:
        tp.manual_seed(seed)
        return fn(*args, **kwargs)


class _Draws(threading.local):
    """Draws made by TensorPlay's generators in this thread (while ``count_draws`` watches)."""

    def __init__(self):
        self.n = 0


_draws = _Draws()
_watch_lock = threading.Lock()
_watch: dict = {}       # backend -> {member: its own instance value, or _NONE}; while watched
_watchers = [0]
_NONE = object()
_DRAWING = ("rand", "randn")


def _counting(fn):
    def draw(*args, **kwargs):
        _draws.n += 1
        return fn(*args, **kwargs)
    return draw


@contextlib.contextmanager
def count_draws():
    """Context manager yielding a function that returns how many draws TensorPlay's generators
    made in this thread since the block began: while any thread watches, each loaded device
    backend's ``rand``/``randn`` count their calls per thread (then they are restored). A
    backend whose members cannot be wrapped (``__slots__``) is not counted."""
    with _watch_lock:
        if _watchers[0] == 0:
            for b in tp.backends.loaded().values():
                own = getattr(b, "__dict__", None)
                if own is None:
                    continue
                saved = {}
                try:
                    for name in _DRAWING:
                        saved[name] = own.get(name, _NONE)
                        setattr(b, name, _counting(getattr(b, name)))
                except (AttributeError, TypeError):
                    _restore(b, saved)
                    continue
                _watch[b] = saved
        _watchers[0] += 1
    start = _draws.n
    try:
        yield lambda: _draws.n - start
    finally:
        with _watch_lock:
            _watchers[0] -= 1
            if _watchers[0] == 0:
                for b, saved in list(_watch.items()):
                    _restore(b, saved)
                _watch.clear()


def _restore(b, saved):
    for name, v in saved.items():
        if v is _NONE:
            b.__dict__.pop(name, None)
        else:
            setattr(b, name, v)
