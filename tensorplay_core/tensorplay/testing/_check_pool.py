"""Worker processes for parallel ``check_plugin`` runs (``tensorplay check -j N``).

Each worker is a fresh interpreter (``sys.executable``), never a fork: a CUDA context (or any
other device state, or a lock held by another thread) of the parent must not be inherited, and no
``if __name__ == "__main__"`` guard is asked of the caller's script (``multiprocessing``'s spawn
re-imports ``__main__``). It is started with the environment the parent's plugins were loaded
with (``tensorplay.plugins.controls()``), so it loads the same plugins itself, and it regenerates
each case's samples: they are deterministic (``run_case`` seeds the generator per case). Cases go
to whichever worker is free; results come back in the order of the cases.

Not ``concurrent.futures.ProcessPoolExecutor``: there, one worker that dies (a kernel's
segfault) breaks the whole pool and every pending case with it. Here a dead worker costs only its
case, which is reported as an ``error`` result naming op, device and the sample it was checking
(the worker announces each sample before checking it), and a fresh worker takes the next case.
A worker that cannot even start (its plugins fail to import) is said once per remaining case,
and no more workers are started; nothing waits forever on a dead process.

Protocol: pickles over pipes. The parent writes ``(index, case, kwargs)``; the worker answers
``("ready",)`` once imported, then per case ``("sample", label)`` before each sample and
``("done", index, [PluginCheckResult, ...])``, on a private copy of its stdout, fd 1 itself
pointing at stderr so that what an op or plugin prints cannot corrupt the stream.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import subprocess
import sys
import threading

# run by the worker interpreter: keep the real stdout for the results, send fd 1 to stderr
# before anything (tensorplay, plugins) is imported
_BOOT = ("import os, sys; fd = os.dup(1); os.dup2(2, 1); "
         "from tensorplay.testing._check_pool import serve; serve(fd)")


def serve(fd: int) -> None:
    """The worker's loop: run each case received on stdin, answer on ``fd``."""
    import faulthandler
    import traceback
    # a kernel that crashes the process leaves its Python stack on stderr
    faulthandler.enable()
    # Ctrl-C is the parent's to handle (it stops the workers): no traceback from every worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .plugin_check import run_case
    out = os.fdopen(fd, "wb")
    inp = sys.stdin.buffer

    def send(msg):
        pickle.dump(msg, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()

    send(("ready",))
    while True:
        try:
            index, case, kw = pickle.load(inp)
        except EOFError:
            return
        try:
            res = _missing(case)
            if res is None:
                res = run_case(case, on_sample=lambda label: send(("sample", label)), **kw)
        except Exception as e:  # noqa: BLE001 - reported as the case's error, the worker lives
            res = [_error(case, "", f"the worker process checking {case.op} on {case.device} "
                                    f"raised {type(e).__name__}: {e}\n"
                                    + "".join(traceback.format_exception(e, limit=-3)))]
        send(("done", index, res))


def _missing(case):
    """``None`` when ``case.op`` exists in this (worker) process, else its error result: the
    plugin failed to load here, or the op was registered at run time in the parent."""
    from .. import plugins
    from .._registry import registered
    from ..plugins.manager import load_for
    load_for(case.op)       # an op pack imported on first use: import it here too
    if registered(case.op) is not None:
        return None
    broken = [f"plugin {r.dist} ({r.name}) {r.status} in the worker process: "
              f"{type(r.error).__name__}: {r.error}"
              for r in plugins.records() if r.status != "loaded" and r.error is not None]
    why = ("; ".join(broken) + "; fix the plugin, or check in one process with jobs=1 "
           "(tensorplay check -j 1)") if broken else (
        "it was registered at run time, not by an installed plugin: check it with jobs=1")
    return [_error(case, "", f"{case.op} is not registered in a fresh process ({why})")]


def _error(case, sample, message):
    """An ``error`` result of ``case``, on the row (plugin, kernel) its results would have."""
    from .plugin_check import PluginCheckResult, case_kernel
    try:
        plugin, _key, kdesc = case_kernel(case)
    except Exception:  # noqa: BLE001 - the op is not registered here (see _missing)
        plugin, kdesc = case.plugin, ""
    return PluginCheckResult(plugin, case.op, case.device, sample, "error", message=message,
                             kernel=kdesc)


def _how(code: int) -> str:
    """A process's exit status in words: ``killed by signal SIGSEGV``, ``exit status 3``."""
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _env() -> dict:
    from ..plugins import controls
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORPLAY_")}
    env.update(controls())
    return env


class _Worker:
    """One worker interpreter, used by one feeding thread at a time."""

    def __init__(self, env, procs, lock):
        self.proc = subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        with lock:
            procs.append(self.proc)

    def recv(self):
        return pickle.load(self.proc.stdout)

    def send(self, obj):
        pickle.dump(obj, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()

    def died(self) -> str:
        """How it ended (after an EOF on its pipe), the process reaped."""
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        return _how(self.proc.wait())

    def close(self):
        try:
            self.proc.stdin.close()      # EOF: the worker's loop ends
        except OSError:
            pass
        self.proc.wait()
        self.proc.stdout.close()


_DEAD = (EOFError, OSError, pickle.UnpicklingError)


def run_parallel(cases, jobs: int, kw: dict):
    """Yield each case's results (a list of ``PluginCheckResult``) in the order of ``cases``,
    checked by ``jobs`` worker processes. A worker that dies (a kernel crashing the process)
    gives its case an ``error`` result naming the exit status and the sample, and is replaced;
    one that dies before it is ready fails the cases not yet checked."""
    todo: queue.Queue = queue.Queue()
    for i in range(len(cases)):
        todo.put(i)
    done: queue.Queue = queue.Queue()
    env = _env()
    procs: list = []
    lock = threading.Lock()
    stop = threading.Event()
    boot_error: list = []        # set once: a worker could not start; start no more

    def start():
        w = _Worker(env, procs, lock)
        try:
            w.recv()                    # ("ready",)
            return w
        except _DEAD:
            how = w.died()
            with lock:
                boot_error.append(
                    f"not checked: a worker process of the parallel check could not start "
                    f"({how}; its error is on stderr above); fix that, or check in one "
                    f"process with jobs=1 (tensorplay check -j 1)")
            return None

    def check(w, i):
        """``(results, worker still usable)``."""
        c = cases[i]
        sample = None
        try:
            w.send((i, c, kw))
            while True:
                msg = w.recv()
                if msg[0] == "sample":
                    sample = msg[1]
                    continue
                return msg[2], True
        except _DEAD:
            how = w.died()
            where = (f"while checking sample [{sample}]" if sample is not None
                     else "while making its sample inputs")
            return [_error(c, sample or "",
                           f"the worker process checking {c.op} on {c.device} died ({how}) "
                           f"{where}: the kernel crashed its process (its Python stack, if it "
                           f"left one, is on stderr above); reproduce it in one process with "
                           f"jobs=1 (tensorplay check {c.op} -j 1)")], False

    def feed():
        w = None
        try:
            while not stop.is_set():
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    break
                if w is None and not boot_error:
                    w = start()
                if w is None:
                    done.put((i, [_error(cases[i], "", boot_error[0])]))
                    continue
                res, alive = check(w, i)
                if not alive:
                    w = None
                done.put((i, res))
            if w is not None:
                w.close()
        finally:
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
