"""Intra-op threads of the cpu plugin: one process-wide pool of worker threads, sized by
``tensorplay.get_num_threads()`` (torch's intra-op setting), shared by every fused chain.

NumPy's ufuncs release the GIL while their loops run, so several threads each running ufuncs on
their own cache-sized blocks of one array use several cores (as torch's OpenMP threads do). The
calling thread always takes part in the work, so a call makes progress even when every worker is
busy with another caller's chain; workers never wait on the pool themselves (no deadlock).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["run"]

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def _workers(n: int) -> ThreadPoolExecutor:
    """A pool with at least ``n`` workers (threads are started as needed, named
    ``tensorplay-cpu_<i>``); a larger setting replaces the pool, a smaller one keeps it (idle
    workers cost nothing)."""
    global _pool, _pool_size
    pool = _pool
    if pool is not None and _pool_size >= n:
        return pool
    with _lock:
        if _pool is None or _pool_size < n:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="tensorplay-cpu")
            _pool_size = n
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def _forget_pool() -> None:
    # a forked child has none of the parent's threads: start a new pool there on first use
    global _pool, _pool_size
    _pool, _pool_size = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def run(fn, threads: int, *args) -> None:
    """``fn(*args)`` on ``threads`` threads at once (the caller and ``threads - 1`` workers);
    returns when every call has returned. ``fn`` shares the work out itself (each call takes
    blocks from a shared counter). The first exception raised by any call is re-raised here,
    after all calls have ended (so no worker still writes into the caller's arrays)."""
    futures = [_workers(threads - 1).submit(fn, *args) for _ in range(threads - 1)]
    error = None
    try:
        fn(*args)
    except BaseException as e:      # noqa: BLE001 - re-raised below, once the workers are done
        error = e
    for f in futures:
        e = f.exception()
        if error is None and e is not None:
            error = e
    if error is not None:
        raise error
