"""Intra-op threads: ``tensorplay.get_num_threads`` / ``set_num_threads`` (torch's names and
meaning).

One process-wide number: how many threads a backend may use inside one op or one fused chain
(today the cpu plugin's fuser for ``tensorplay.compile`` splits a large chain into cache-sized
blocks over that many threads). The default is ``OMP_NUM_THREADS`` when it holds a positive
integer (as torch reads it), else the number of cores this process may run on.
"""

from __future__ import annotations

import os

__all__ = ["get_num_threads", "set_num_threads"]

_num_threads: int | None = None     # None: not read yet (the default is computed on first use)


def _default() -> int:
    v = os.environ.get("OMP_NUM_THREADS", "").strip()
    if v.isdigit() and int(v) > 0:
        return int(v)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism on cpu (same as
    ``torch.get_num_threads``).

    Returns a positive int: the last ``set_num_threads`` value, else ``OMP_NUM_THREADS`` when it
    is a positive integer, else the number of cores this process may run on
    (``os.sched_getaffinity``, or ``os.cpu_count()``).
    """
    global _num_threads
    n = _num_threads
    if n is None:
        n = _num_threads = _default()
    return n


def set_num_threads(n: int) -> None:
    """Set the number of threads used for intra-op parallelism on cpu (same as
    ``torch.set_num_threads``): process-wide, read by each op or fused chain when it starts.

    ``n`` is a positive integer (an ``int``, or anything usable as an index, e.g. a NumPy
    integer, as torch accepts); 1 runs everything on the calling thread. Raises ``TypeError``
    for anything else (``bool``, ``float`` and ``str`` included) and ``ValueError`` for
    ``n < 1``.
    """
    global _num_threads
    import operator
    try:
        if n.__class__ is bool:
            raise TypeError
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"tensorplay.set_num_threads: expected an int, got {type(n).__name__} "
                        f"({n!r}); pass a positive number of threads") from None
    if n < 1:
        raise ValueError(f"tensorplay.set_num_threads: the number of threads must be positive, "
                         f"got {n}; pass 1 to run on the calling thread only")
    _num_threads = int(n)
