"""Worker processes for parallel ``check_plugin`` runs (``tensorplay check -j N``).

Where a worker comes from (``worker_kind``) is what decides whether ``-j N`` pays: importing
tensorplay, the plugins, NumPy and Triton and re-running every plugin's registration costs a
fresh interpreter about 1.5 s of cpu, as long as the whole built-in check. So:

* ``"fork"`` (Linux and other POSIX but macOS): each worker is ``os.fork()`` of the command
  itself, which has already loaded every plugin, registered every op and warmed the first-use
  work the cases share (``_warm_up``); a worker costs a few milliseconds and sees exactly the
  parent's ops (also those registered at run time). Chosen only where a fork is safe: the parent
  runs one Python thread (this pool uses none: one loop over the workers' pipes; a thread
  holding a lock at the fork would leave it held forever in the child) and no device but cpu has
  been set up (a CUDA context, or any driver state, must never be inherited by a fork: a backend
  other than cpu in ``tensorplay._devices.loaded``, or the CUDA driver library mapped in the
  process -- whoever loaded it, torch included -- rules it out). NumPy's OpenBLAS threads are
  native and re-made after a fork (OpenBLAS registers ``pthread_atfork``). Not
  ``multiprocessing``'s forkserver: its server would import everything once more (the cost this
  removes) and does not carry first-use caches, and like spawn it re-imports the caller's
  ``__main__`` (a guard asked of every script that calls ``check_plugin(jobs=N)``).
* ``"spawn"`` (macOS, where system libraries are not fork-safe; or a parent that fork rules
  out): a fresh interpreter (``sys.executable``) started with the environment the parent's
  plugins were loaded with (``tensorplay.plugins.controls()``), which loads the same plugins
  and regenerates each case's samples (deterministic: ``run_case`` seeds per case and sample).
* ``None`` (Windows: no fork, and pipes are not file descriptors there): the run stays in the
  calling process, serial.
``TENSORPLAY_CHECK_WORKERS=fork|spawn`` forces a kind (``fork`` only where the platform has it).

Work goes per case -- one (op, device, kernel) and all its samples, so that messages are not the
cost -- to whichever worker is free, and each sample's result streams back as it completes;
results are yielded in the order of the cases, each case's in the order of its samples. When no
case is left to start and a worker is idle, the busy worker with the most samples ahead is asked
to stop halfway through them, and the rest of its case becomes a job of its own: one long op
(the example pack's ``rms_norm``: a quarter of its check) no longer keeps the others waiting.
The parent is one thread waiting on the workers' pipes with a deadline per busy worker: the
per-sample ``timeout`` (reset when the worker announces a sample). A worker past it is killed;
its sample is an ``error`` result (``plugin_check.timeout_result``, the same text a serial run
gives), and the rest of its case goes on in a fresh worker from the next sample. A worker that
dies (a kernel's segfault) costs only its sample the same way, reported as an ``error`` naming
op, device, sample and how it ended. A spawned worker that cannot start (its plugins fail to
import) is said once per remaining case, and no more workers are started; nothing waits forever
on a dead process.

Not ``concurrent.futures.ProcessPoolExecutor``: there, one worker that dies breaks the whole
pool and every pending case with it, and a hung one cannot be killed alone.

Protocol: ``multiprocessing.connection.Connection`` (length-prefixed pickles) over two pipes per
worker. The parent sends ``("job", index, case, first, end, kwargs)`` (samples ``first`` to
``end``, ``None``: the last) and, while it runs, maybe ``("limit", (index, first), m)``; the
worker answers ``("ready",)`` once, then per job ``("samples", n)``, ``("sample", i, label)``
before each sample, ``("result", PluginCheckResult)`` after it, ``("stop", at)`` when a limit
reached it between samples (it stops before sample ``at`` = max(m, the next one)), and
``("done", index)``. A worker's fd 1 points at stderr, so that what an op or plugin prints goes
to the parent's stderr, never into a ``--json -`` on stdout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from multiprocessing.connection import Connection, wait

# run by a spawned worker interpreter: fd 1 to stderr before anything is imported
_BOOT = ("import os, sys; os.dup2(2, 1); "
         "from tensorplay.testing._check_pool import serve; "
         "serve(int(sys.argv[1]), int(sys.argv[2]))")


def worker_kind():
    """``"fork"``, ``"spawn"`` or ``None`` (serial): see the module docstring."""
    forced = os.environ.get("TENSORPLAY_CHECK_WORKERS", "").strip().lower()
    if os.name != "posix":
        return None
    can_fork = hasattr(os, "fork")
    if forced == "spawn" or (forced == "fork" and can_fork):
        return forced
    if not can_fork or sys.platform == "darwin":
        return "spawn"
    return "fork" if _fork_is_safe() else "spawn"


def _fork_is_safe() -> bool:
    import threading

    from .. import _devices
    if threading.active_count() > 1:
        return False
    if any(t != "cpu" for t in _devices.loaded):
        return False
    # torch.cuda, CuPy or Triton having set up CUDA all show as the driver library mapped
    return not _cuda_driver_mapped()


def _warm_up(cases, kw) -> None:
    """Before the first fork: pay here, once, the first-use work every case shares (the check
    modules, the compile check's code generation, the autograd and gradient-check machinery)
    -- about 0.6 s of a 2 s built-in check, which each forked worker would otherwise pay again
    -- by checking the core's ``tp::mul`` on two small cpu tensors: core code only, never a
    plugin's kernel (a crash or hang there would take the command down, not a worker). What it
    leaves behind is caches; every case reseeds the generator (``run_case``)."""
    if not any(c.device.partition(":")[0] == "cpu" for c in cases):
        return
    import warnings
    try:
        from .. import _registry
        from .._factories import manual_seed, randn
        from .opcheck import run_checks
        manual_seed(0)
        x = randn(4, 3, requires_grad=True)
        y = randn(4, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_checks(_registry.lookup("tp::mul"), (x, y), {},
                       test_utils=kw.get("test_utils", "DEFAULT"))
    except Exception:  # noqa: BLE001 - an optimisation only: the cases report real problems
        pass


def _cuda_driver_mapped() -> bool:
    """Whether the CUDA driver library is loaded in this process (Linux): whoever loaded it
    (CuPy, Triton's driver, torch, a plugin) may have initialised it, and a forked child of an
    initialised driver cannot use CUDA, nor safely share its state; then no fork."""
    try:
        with open("/proc/self/maps") as f:
            return any("libcuda.so" in line for line in f)
    except OSError:
        return False


def serve(rfd: int, wfd: int) -> None:
    """The worker's loop: check each case received on ``rfd``, answer on ``wfd``."""
    import faulthandler
    import traceback
    # a kernel that crashes the process leaves its Python stack on stderr
    faulthandler.enable()
    # Ctrl-C is the parent's to handle (it stops the workers): no traceback from every worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .plugin_check import run_case
    inp = Connection(rfd, writable=False)
    out = Connection(wfd, readable=False)
    out.send(("ready",))
    while True:
        try:
            msg = inp.recv()
        except EOFError:
            return
        if msg[0] == "limit":
            continue        # for a job that ended before it arrived
        _, index, case, start, end, kw = msg
        job, limit = (index, start), [end]

        def stop(i, job=job, limit=limit):
            """Before sample ``i``: take a ("limit", job, m) from the parent -- stop at
            max(m, i), said back -- and whether this job's range ends here."""
            while inp.poll(0):
                m = inp.recv()
                if m[0] == "limit" and m[1] == job:
                    at = max(m[2], i)
                    limit[0] = at if limit[0] is None else min(limit[0], at)
                    out.send(("stop", at))
            return limit[0] is not None and i >= limit[0]
        try:
            missing = _missing(case)
            if missing is not None:
                out.send(("result", missing))
            else:
                run_case(case, start=start, stop=stop, report=out.send, **kw)
        except Exception as e:  # noqa: BLE001 - reported as the case's error, the worker lives
            out.send(("result", _error(case, "", f"the worker process checking {case.op} on "
                                                 f"{case.device} raised {type(e).__name__}: "
                                                 f"{e}\n" + "".join(
                                                     traceback.format_exception(e, limit=-3)))))
        out.send(("done", index))


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
    return _error(case, "", f"{case.op} is not registered in a fresh process ({why})")


def _kernel_of(case):
    """``(plugin, kernel description)`` of ``case`` (as its results name them)."""
    from .plugin_check import case_kernel
    try:
        plugin, _key, kdesc = case_kernel(case)
    except Exception:  # noqa: BLE001 - the op is not registered here (see _missing)
        plugin, kdesc = case.plugin, ""
    return plugin, kdesc


def _error(case, sample, message):
    """An ``error`` result of ``case``, on the row (plugin, kernel) its results would have."""
    from .plugin_check import PluginCheckResult
    plugin, kdesc = _kernel_of(case)
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
    """One worker process and the parent's ends of its two pipes."""

    def __init__(self, kind: str, env, others):
        r_task, w_task = os.pipe()       # parent -> worker
        r_res, w_res = os.pipe()         # worker -> parent
        self.proc = None
        if kind == "fork":
            # what the parent buffered must not be written a second time by the child
            for f in (sys.stdout, sys.stderr):
                try:
                    f.flush()
                except (OSError, ValueError, AttributeError):
                    pass
            pid = os.fork()
            if pid == 0:                 # the worker: never returns into the parent's code
                code = 0
                try:
                    os.close(w_task)
                    os.close(r_res)
                    for fd in others:    # the other workers' pipes: their EOF is theirs
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                    os.dup2(2, 1)
                    serve(r_task, w_res)
                except BaseException:  # noqa: BLE001 - the parent reports the exit status
                    import traceback
                    traceback.print_exc()
                    code = 70
                finally:
                    os._exit(code)
            self.pid = pid
        else:
            self.proc = subprocess.Popen([sys.executable, "-c", _BOOT, str(r_task), str(w_res)],
                                         pass_fds=(r_task, w_res), stdin=subprocess.DEVNULL,
                                         env=env)
            self.pid = self.proc.pid
        os.close(r_task)
        os.close(w_res)
        self.tasks = Connection(w_task, readable=False)
        self.results = Connection(r_res, writable=False)
        self.ready = kind == "fork"      # a fork is loaded; a fresh interpreter says "ready"
        self.job = None                  # (case index, first sample, end) being checked
        self.sample = None               # (index, label) of the sample being checked
        self.deadline = None
        self.splitting = False           # asked to stop early ("limit"), no answer yet

    def fds(self):
        return [c.fileno() for c in (self.tasks, self.results) if not c.closed]

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def reap(self) -> str:
        """Close the pipes, wait for the process; how it ended, in words."""
        for c in (self.tasks, self.results):
            try:
                c.close()
            except OSError:
                pass
        if self.proc is not None:
            return _how(self.proc.wait())
        _, status = os.waitpid(self.pid, 0)
        return _how(os.waitstatus_to_exitcode(status))


_DEAD = (EOFError, OSError, ConnectionError)


def run_parallel(cases, jobs: int, kw: dict, *, timeout=None, kind="spawn"):
    """Yield each case's results (a list of ``PluginCheckResult``) in the order of ``cases``,
    checked by ``jobs`` worker processes of ``kind`` (``"fork"`` or ``"spawn"``). A sample past
    ``timeout`` seconds (``None``: no limit) or whose worker dies is an ``error`` result; the
    worker is replaced and the case goes on from the next sample. See the module docstring."""
    from .plugin_check import timeout_result
    if kind == "fork":
        _warm_up(cases, kw)
        if not _fork_is_safe():      # the warm-up must not have changed that; if it did
            kind = "spawn"
    env = _env() if kind == "spawn" else None
    # a job: (case index, first sample, end sample or None: to the last)
    todo = deque((i, 0, None) for i in range(len(cases)))
    found: dict = {}        # case index -> {sample index (-1: the case's own): [results]}
    counts: dict = {}       # case index -> number of samples (once made)
    open_jobs = dict.fromkeys(range(len(cases)), 1)   # case index -> jobs queued or running
    finished: dict = {}
    slots: list = [None] * jobs
    boot_error: list = []   # set once: a spawned worker could not start; start no more

    def fds():
        return [fd for w in slots if w is not None for fd in w.fds()]

    def put(i, at, result):
        found.setdefault(i, {}).setdefault(at, []).append(result)

    def job_done(i):
        open_jobs[i] -= 1
        if open_jobs[i] == 0:
            got = found.pop(i, {})
            finished[i] = [r for at in sorted(got) for r in got[at]]

    def lost(k, w, result):
        """Worker ``w`` of slot ``k`` is gone while checking: ``result`` stands for the sample
        it was on; the job goes on from the next sample in a fresh worker."""
        i, _, end = w.job
        at = w.sample[0] if w.sample is not None else -1
        put(i, at, result)
        end = counts.get(i, 0) if end is None else end
        slots[k] = None
        if at >= 0 and at + 1 < end:
            todo.appendleft((i, at + 1, end))
        else:
            job_done(i)

    def died(k, w):
        how = w.reap()
        if w.job is None:       # idle: a fresh interpreter that could not load, or gone
            if not w.ready and not boot_error:
                boot_error.append(
                    f"not checked: a worker process of the parallel check could not start "
                    f"({how}; its error is on stderr above); fix that, or check in one "
                    f"process with jobs=1 (tensorplay check -j 1)")
            slots[k] = None
            return
        c = cases[w.job[0]]
        label = w.sample[1] if w.sample is not None else None
        where = (f"while checking sample [{label}]" if label is not None
                 else "while making its sample inputs")
        lost(k, w, _error(c, label or "",
                          f"the worker process checking {c.op} on {c.device} died ({how}) "
                          f"{where}: the kernel crashed its process (its Python stack, if it "
                          f"left one, is on stderr above); reproduce it in one process with "
                          f"jobs=1 (tensorplay check {c.op} -j 1)"))

    def timed_out(k, w):
        w.kill()
        how = w.reap()
        if w.job is None:        # a fresh interpreter still importing
            if not boot_error:
                boot_error.append(
                    f"not checked: a worker process of the parallel check did not start "
                    f"within {max(timeout, 60):g} s ({how}); check in one process with "
                    f"jobs=1 (tensorplay check -j 1)")
            slots[k] = None
            return
        c = cases[w.job[0]]
        plugin, kdesc = _kernel_of(c)
        label = w.sample[1] if w.sample is not None else ""
        lost(k, w, timeout_result(c, label, timeout, plugin, kdesc, timeout))

    def handle(w, msg):
        tag = msg[0]
        if tag == "ready":
            w.ready, w.deadline = True, None
            return
        i, first, end = w.job
        if tag == "samples":
            counts[i] = msg[1]
            if end is None:
                w.job = (i, first, msg[1])
        elif tag == "sample":
            w.sample = (msg[1], msg[2])
            w.deadline = time.monotonic() + timeout if timeout else None
        elif tag == "result":
            put(i, w.sample[0] if w.sample is not None else -1, msg[1])
        elif tag == "stop":             # the split asked for: the rest goes to another worker
            w.splitting = False
            if msg[1] < end:
                w.job = (i, first, msg[1])
                open_jobs[i] += 1
                todo.appendleft((i, msg[1], end))
        elif tag == "done":
            w.job = w.sample = w.deadline = None
            w.splitting = False
            job_done(i)

    def split():
        """No job is queued and a worker is idle: ask the busy worker with the most samples
        still ahead of it to stop halfway through them (it says where: ``"stop"``); the rest
        becomes a job. A long op is then not checked by one worker while the others wait."""
        best, ahead = None, 0
        for w in slots:
            if w is None or w.job is None or w.sample is None or w.splitting:
                continue
            n = w.job[2] - (w.sample[0] + 1)
            if n > ahead:
                best, ahead = w, n
        if best is None:
            return False
        i, first, _ = best.job
        m = best.sample[0] + 1 + ahead // 2
        try:
            best.tasks.send(("limit", (i, first), m))
            best.splitting = True
        except _DEAD:
            pass                # its death is seen on its results pipe
        return True

    try:
        nxt = 0
        while nxt < len(cases):
            while nxt in finished:
                yield finished.pop(nxt)
                nxt += 1
            if nxt >= len(cases):
                break
            # give work to idle workers; start workers for idle slots while there is work
            idle = 0
            for k in range(jobs):
                w = slots[k]
                if w is not None and (not w.ready or w.job is not None):
                    continue
                if not todo:
                    idle += w is not None
                    continue
                if w is None:
                    if boot_error:
                        i, _, _ = todo.popleft()
                        put(i, -1, _error(cases[i], "", boot_error[0]))
                        job_done(i)
                        continue
                    w = slots[k] = _Worker(kind, env, fds())
                    if not w.ready:
                        # a fresh interpreter that hangs in its imports is not waited on
                        # forever: the limit of a sample, at least a minute
                        w.deadline = time.monotonic() + max(timeout, 60) if timeout else None
                        continue
                i, first, end = todo.popleft()
                w.job, w.sample = (i, first, end), None
                w.deadline = time.monotonic() + timeout if timeout else None
                try:
                    w.tasks.send(("job", i, cases[i], first, end, kw))
                except _DEAD:
                    died(k, w)
            asked = sum(1 for w in slots if w is not None and w.splitting)
            while idle > asked and split():
                asked += 1
            if nxt in finished:
                continue
            live = [w for w in slots if w is not None]
            if not live:
                if todo:
                    continue     # the loop above fails them (boot_error) or starts workers
                raise RuntimeError("check workers stopped before every case was checked")
            now = time.monotonic()
            due = [w.deadline for w in live if w.deadline is not None]
            ready = wait([w.results for w in live],
                         None if not due else max(0.0, min(due) - now))
            for k in range(jobs):
                w = slots[k]
                if w is None or w.results not in ready:
                    continue
                try:
                    while True:
                        handle(w, w.results.recv())
                        if not w.results.poll(0):
                            break
                except _DEAD:
                    died(k, w)
            now = time.monotonic()
            for k in range(jobs):
                w = slots[k]
                if w is not None and w.deadline is not None and now >= w.deadline:
                    timed_out(k, w)
    finally:
        for w in slots:
            if w is not None:
                try:
                    w.tasks.close()      # EOF: an idle worker's loop ends
                except OSError:
                    pass
                if w.job is not None or not w.ready:
                    w.kill()
                w.reap()
