"""Worker processes for parallel ``check_plugin`` runs (``tensorplay check -j N``).

Each worker is a fresh interpreter (``sys.executable``), never a fork: a CUDA context (or any
other device state) of the parent must not be inherited, and no ``if __name__ == "__main__"``
guard is asked of the caller's script (``multiprocessing``'s spawn re-imports ``__main__``).
It is started with the environment the parent's plugins were loaded with
(``tensorplay.plugins.controls()``), so it loads the same plugins, and it regenerates each
case's samples itself: they are deterministic (the sample hooks and the gradient check seed
per op). Cases go to whichever worker is free; results come back in the order of the cases.

Protocol: pickles over pipes. The parent writes ``(index, case, kwargs)``; the worker answers
``(index, [PluginCheckResult, ...])`` on a private copy of its stdout, fd 1 itself pointing at
stderr so that what an op or plugin prints cannot corrupt the stream.
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading

# run by the worker interpreter: keep the real stdout for the results, send fd 1 to stderr
# before anything (tensorplay, plugins) is imported
_BOOT = ("import os, sys; fd = os.dup(1); os.dup2(2, 1); "
         "from tensorplay.testing._check_pool import serve; serve(fd)")


def serve(fd: int) -> None:
    """The worker's loop: run each case received on stdin, answer on ``fd``."""
    from .plugin_check import run_case
    from .._registry import registered
    from ..plugins.manager import load_for
    from .plugin_check import PluginCheckResult
    out = os.fdopen(fd, "wb")
    inp = sys.stdin.buffer
    while True:
        try:
            index, case, kw = pickle.load(inp)
        except EOFError:
            return
        load_for(case.op)       # an op pack imported on first use: import it here too
        if registered(case.op) is None:
            res = [PluginCheckResult(case.plugin, case.op, case.device, "", "error",
                                     message=f"{case.op} is not registered in a fresh process "
                                             f"(it was registered at run time, not by an "
                                             f"installed plugin): check it with jobs=1")]
        else:
            res = run_case(case, **kw)
        pickle.dump((index, res), out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()


def _env() -> dict:
    from ..plugins import controls
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORPLAY_")}
    env.update(controls())
    return env


def run_parallel(cases, jobs: int, kw: dict):
    """Yield each case's results (a list of ``PluginCheckResult``) in the order of ``cases``,
    checked by ``jobs`` worker processes. A worker that dies (a kernel crashing the process)
    gives its case an ``error`` result naming the exit status, and is replaced."""
    from .plugin_check import PluginCheckResult
    todo: queue.Queue = queue.Queue()
    for i, c in enumerate(cases):
        todo.put(i)
    done: queue.Queue = queue.Queue()
    env = _env()
    procs: list = []
    lock = threading.Lock()
    stop = threading.Event()

    def start():
        p = subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env)
        with lock:
            procs.append(p)
        return p

    def feed():
        p = None
        while not stop.is_set():
            try:
                i = todo.get_nowait()
            except queue.Empty:
                break
            if p is None:
                p = start()
            try:
                pickle.dump((i, cases[i], kw), p.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                p.stdin.flush()
                j, res = pickle.load(p.stdout)
            except (EOFError, OSError, pickle.UnpicklingError):
                code = p.wait()
                c = cases[i]
                res = [PluginCheckResult(c.plugin, c.op, c.device, "", "error",
                                         message=f"the worker process checking {c.op} on "
                                                 f"{c.device} died (exit status {code}); run "
                                                 f"with jobs=1 to see the crash")]
                j, p = i, None
            done.put((j, res))
        if p is not None:
            p.stdin.close()
            p.wait()
        done.put(None)

    threads = [threading.Thread(target=feed, daemon=True) for _ in range(jobs)]
    for t in threads:
        t.start()
    try:
        got, nxt, live = {}, 0, len(threads)
        while nxt < len(cases):
            if nxt in got:
                yield got.pop(nxt)
                nxt += 1
                continue
            item = done.get()
            if item is None:
                live -= 1
                if live == 0 and done.empty() and nxt not in got:
                    raise RuntimeError("check workers stopped before every case was checked")
                continue
            got[item[0]] = item[1]
    finally:
        stop.set()
        with lock:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
