"""opcheck per plugin: run ``tensorplay.library.opcheck`` over every op a plugin ships, on every
sample its plugins provide, on every available device. Before a case's samples are made, the
global generator is seeded from its (op, device): hooks using ``tp.randn`` & co. give the same
samples in every run, serial or parallel, whatever ran before.

Three ways in, all built on :func:`check_plugin`:

* Python: ``results = tensorplay.testing.check_plugin("tensorplay-example-ops")``;
* an op pack's own pytest suite, one line (one test per op and device)::

      from tensorplay.testing import opcheck_plugin_tests
      test_opcheck = opcheck_plugin_tests("tensorplay-example-ops")

* pytest option (the ``pytest11`` plugin): ``pytest --tensorplay-check=tensorplay-example-ops``.

Which ops belong to a plugin: those it defined (checked on every available device that has a
kernel, the device-agnostic kernel counting for all), those it registered kernels for (checked
on just those devices), and for a device plugin the built-in ``tp::`` ops on its devices (those
with its array kernels, and the core's device-agnostic ones such as views, which run there too).
Samples come from every plugin's ``tensorplay_sample_inputs`` hook, plus one derived with a
leading dimension of 0 when none has one and the op's fake kernel accepts it. A sample may carry
``skip_checks`` (``{check name: reason}``): those checks are reported as skipped with the reason
for it (the fake check of an op whose output shape depends on its input values). The built-in
ops' samples come from ``tensorplay.testing.builtin_samples`` through the device plugins' hooks.

Every registered kernel is checked, one case each: on a device, the device's own kernel (eager
or named in ``tensorplay.kernels`` entry-point metadata) and the device-agnostic kernel, which a
device kernel hides there but which is what runs on every other device. Each result names the
kernel that ran (dispatch key, ``module:function``, plugin) and is attributed to the plugin that
registered that kernel.

Parallel runs (``check_plugin(..., jobs=N)``, ``tensorplay check -j N``): the (op, device,
kernel) cases are spread over ``N`` worker processes (forked from this process where that is
safe, else fresh interpreters started with its plugin controls: see ``_check_pool``) and the
results come back in the serial order, identical to a serial run apart from timings. A sample
that runs past ``timeout`` seconds is an ``error`` result in both (``timeout_result``).
"""

from __future__ import annotations

import os
import time
import traceback
import warnings
import zlib
from dataclasses import dataclass, field

__all__ = [
    "CheckCase",
    "PluginCheckResult",
    "check_plugin",
    "resolve_jobs",
    "opcheck_plugin_tests",
    "plugin_check_cases",
    "plugin_ops",
    "summarize",
]


@dataclass
class PluginCheckResult:
    """The outcome of ``opcheck`` for one (op, device, sample).

    ``status``: ``"passed"``, ``"failed"`` (``failures`` maps opcheck test name to message),
    ``"error"`` (the samples or the check could not run, or ran past the time limit:
    ``timed_out``; ``message`` says why; ``sample`` is ``""`` when the samples were not made) or
    ``"skipped"``
    (no sample inputs for this op on this device, or ``device_unavailable``: the op's kernels
    are for a device that is not available here, ``message`` saying why). ``seconds`` is the
    wall time; ``check_seconds`` the time of each check (test name -> seconds) and ``notes``
    what a check said without failing (why it skipped, inputs it did not compare).
    """

    plugin: str
    op: str
    device: str
    sample: str
    status: str
    failures: dict = field(default_factory=dict)
    message: str = ""
    seconds: float = 0.0
    kernel: str = ""      # the kernel that ran: "cpu: pkg.mod:fn (plugin dist)"
    checks: dict = field(default_factory=dict)   # test name -> "pass" / "fail" / "skip"
    # skipped because ``device`` is not available here (``message`` has the reason and fix)
    device_unavailable: bool = False
    check_seconds: dict = field(default_factory=dict)   # test name -> wall time of that check
    notes: dict = field(default_factory=dict)   # test name -> why a check skipped / what it left
    # an ``error`` that ran past the time limit (``timeout_result``): of checking ``sample``,
    # or with no sample, of making the op's samples
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        """True for ``passed`` and ``skipped``."""
        return self.status in ("passed", "skipped")

    def describe(self) -> str:
        """One human-readable paragraph (used by the pytest helpers)."""
        kern = f" kernel {self.kernel}" if self.kernel else ""
        head = f"{self.op} on {self.device}{kern} [{self.sample or '-'}]: {self.status}"
        if self.failures:
            return head + "\n" + "\n".join(f"  {k}: {v}" for k, v in self.failures.items())
        return head + (f": {self.message}" if self.message else "")


@dataclass(frozen=True)
class CheckCase:
    """One (op, device, kernel) of a plugin: the unit of ``opcheck_plugin_tests``. ``kernel`` is
    the dispatch key whose kernel is checked (the device type, or ``"default"`` for the
    device-agnostic kernel); ``""`` means whatever a call dispatches to (built-in ops)."""

    plugin: str
    op: str
    device: str
    kernel: str = ""

    @property
    def id(self) -> str:
        """``op-device``; ``op-device-default`` for the device-agnostic kernel of an op that
        also has a kernel of its own on that device (two cases there)."""
        k = ""
        if self.kernel == "default":
            from .._registry import registered
            op = registered(self.op)
            if op is not None and op.active_kernel(self.device.partition(":")[0]) is not None:
                k = "-default"
        return f"{self.op}-{self.device}{k}"


def _devices_for(op, devs, requested):
    """Device types to check ``op`` on: ``devs`` (None: every available device with a kernel,
    the device-agnostic kernel counting for all), limited to ``requested``."""
    from .._device import Device
    from ..plugins import manager
    if requested is not None:
        # only the requested device is loaded (not every plugin's: the cuda plugin's CuPy
        # import alone takes seconds, for a check on cpu)
        t = Device(requested).type
        available = [t] if manager.device_status(t)[0] else []
    else:
        available = manager.available_devices()
    if devs is not None and "default" in devs:
        devs = None    # a device-agnostic kernel: every available device
    if devs is None:
        has_default = bool(op.kernel_stack("default"))
        devs = [d for d in available if has_default or op.kernel_stack(d)
                or (op.is_builtin and op.has_array_kernel)]
    else:
        devs = [d for d in devs if d in available]
    if requested is not None:
        want = Device(requested)
        devs = [str(want) for d in devs if d == want.type]
    return devs


def plugin_check_cases(name: str, device=None, ops=None) -> list[CheckCase]:
    """The (op, device) pairs :func:`check_plugin` would check for plugin ``name``.

    ``device``: ``None`` (every available device) or one device (``"cpu"``, ``"cuda:1"``); an
    explicitly requested device that is not available raises ``DeviceUnavailableError``.
    ``ops``: optional iterable of qualnames to keep. Raises ``PluginError`` (chained to the
    recorded load error, with the fix) when the plugin failed, is blocked or is not installed.
    """
    from .._device import Device
    from ..errors import DeviceUnavailableError
    from ..plugins import manager
    rec = manager.get_plugin(name)
    if device is not None:
        ok, why = manager.device_status(Device(device).type)
        if not ok:
            raise DeviceUnavailableError(f"check_plugin({name!r}, device={str(device)!r}): {why}")
    return _cases(rec, name, device, ops)[0]


def plugin_ops(name: str) -> list:
    """``[(op, device types or None)]``: every op :func:`check_plugin` checks for plugin
    ``name`` (``None``: every available device with a kernel), sorted by name; the same
    selection on every device. For a device plugin, the built-in ``tp::`` ops on its device
    types: those with its array kernels and the core's device-agnostic ones (views), which run
    there too. Raises ``PluginError`` as :func:`plugin_check_cases`."""
    from .._registry import all_ops
    from ..plugins import manager
    rec = manager.get_plugin(name)
    pairs = list(manager.plugin_ops(name))
    if rec.devices:
        have = {op.name for op, _ in pairs}
        pairs += [(op, sorted(rec.devices)) for op in all_ops()
                  if op.is_builtin and not op.has_array_kernel
                  and op.name not in have]
        pairs.sort(key=lambda p: p[0].name)
    return pairs


def _cases(rec, name, device, ops):
    """(cases, ops left without any available device: [(op name, wanted device types)])."""
    keep = None if ops is None else set(ops)
    cases, unchecked = [], []
    for op, devs in plugin_ops(name):
        if keep is not None and op.name not in keep:
            continue
        chosen = _devices_for(op, devs, device)
        if not chosen and device is None:
            unchecked.append((op.name, devs or sorted(k for k in op.kernel_stacks()
                                                      if k != "default")))
        for d in chosen:
            if op.is_builtin:
                cases.append(CheckCase(rec.dist, op.name, d, ""))
                continue
            from .opcheck import kernel_keys
            for key in kernel_keys(op, d.partition(":")[0]):
                if devs is not None and op.owner != rec.dist and \
                        op.kernel_owner(key) != rec.dist:
                    continue   # another plugin's kernel on an op this plugin added kernels to
                cases.append(CheckCase(rec.dist, op.name, d, key))
    return cases, unchecked


def case_kernel(case: CheckCase):
    """``(plugin, dispatch key, kernel description)`` of the kernel ``case`` checks: the plugin
    that registered it (results are attributed to it) and ``"cpu: pkg.mod:fn (plugin dist)"``."""
    from .. import _registry
    from .opcheck import _dispatched_key, describe_kernel
    op = _registry.lookup(case.op)
    dtype_ = case.device.partition(":")[0]
    key = case.kernel or (dtype_ if op.is_builtin else _dispatched_key(op, dtype_))
    kdesc = describe_kernel(op, key, dtype_)
    if op.is_builtin and not op.has_array_kernel:
        kdesc = f"{dtype_}: built-in, device-agnostic (tensorplay core)"
    owner = None if op.is_builtin else op.kernel_owner(key)
    return (owner if isinstance(owner, str) else case.plugin), key, kdesc


def run_case(case: CheckCase, *, test_utils="DEFAULT", atol=None, rtol=None, timeout=None,
             start=0, stop=None, report=None) -> list:
    """Run ``opcheck`` on ``case``'s kernel for every sample; one ``PluginCheckResult`` per
    sample (a single ``skipped``/``error`` result when there are no samples or they cannot be
    made). Each result names the kernel that ran and the plugin that registered it.

    ``timeout``: seconds one sample's checks (and the making of the samples) may take; one that
    runs past it is an ``error`` result (:func:`timeout_result`) and the next sample is checked.
    Enforced here by ``SIGALRM``, which interrupts Python code and the blocking calls that
    return to it on a signal (``time.sleep``, a pipe read) but not native code that never does:
    only in the main thread of a POSIX process that has no other use of ``SIGALRM`` (no
    handler, no armed ``ITIMER_REAL``); elsewhere it is not enforced in-process -- a parallel
    run's parent enforces it on its workers by killing them. ``None``/``0``: no limit.
    ``start``: check only the samples from this index on (a parallel run resumes a case there
    after a worker died on the sample before); ``stop``: optional callable asked before each
    sample ``i`` whether to end there (a parallel run hands the rest of a long case to an idle
    worker). ``report``: optional callable given
    ``("samples", n)`` once the samples are made, ``("sample", i, label)`` just before sample
    ``i`` is checked and ``("result", r)`` after it (the last of ``n``, a sample with a leading
    dimension of 0 derived from the others, is made in its own turn and gives no result when
    the op does not take it) (a parallel run's worker streams them to
    its parent, so a crash or a hang names the sample and loses none of the others)."""
    from .. import _registry
    from ..plugins import manager
    from .opcheck import CheckResult, run_checks
    from .opcheck import _select as _selected
    op = _registry.lookup(case.op)
    plugin, key, kdesc = case_kernel(case)
    t0 = time.perf_counter()
    # a sample hook drawing from the global generator (tp.randn) gets the same values whichever
    # cases ran before in this process: a parallel run equals the serial one, and a failure
    # seen once is seen again
    from .._factories import manual_seed
    manual_seed(_seed(case, "samples"))
    try:
        with time_limit(timeout):
            samples = list(manager.sample_inputs(op, case.device))
    except TimedOut:
        return _said(report, [timeout_result(case, "", timeout, plugin, kdesc,
                                             time.perf_counter() - t0)])
    except (Exception, SystemExit) as e:  # noqa: BLE001 - reported as this case's error
        return _said(report, [PluginCheckResult(
            plugin, case.op, case.device, "", "error",
            message=f"sample inputs could not be made: {type(e).__name__}: {e}",
            seconds=time.perf_counter() - t0, kernel=kdesc)])
    if not samples:
        return _said(report, [PluginCheckResult(
            plugin, case.op, case.device, "", "skipped",
            message=f"no sample inputs: implement the tensorplay_sample_inputs hook in "
                    f"{case.plugin} for {case.op} on {case.device}", kernel=kdesc)])
    # the sample with a leading dimension of 0 comes last, made in its own turn (as a sample
    # is checked, under the same limit): whether the op takes it is asked of the op itself --
    # its fake, else its kernel -- so a slow kernel is blamed on checking that sample, not on
    # the sample hooks, which have returned
    src = _zero_size_source(samples)
    n = len(samples) + (src is not None)
    if report is not None:
        report(("samples", n))
    out = []
    for i in range(n):
        if i < start:
            continue
        if stop is not None and stop(i):
            break
        s = samples[i] if i < len(samples) else None
        label = _derived_name(src) if s is None else (s.name or f"sample{i}")
        if report is not None:
            report(("sample", i, label))
        # each sample from its own seed: what an op draws (dropout-like kernels) does not depend
        # on the samples checked before it, so a case resumed after sample i in a fresh worker
        # gives the serial run's results
        manual_seed(_seed(case, i))
        t0 = time.perf_counter()
        checks, r = {}, None
        try:
            with time_limit(timeout), warnings.catch_warnings():
                # NumPy's "mean of empty slice" & co on 0-size samples: the op's result (NaN,
                # as torch gives) is what is checked, the warning is noise here
                warnings.filterwarnings("ignore", category=RuntimeWarning, module="numpy")
                if s is None:
                    s = _derive_from(op, src)
                    if s is None:       # the op does not take an empty batch: no such sample
                        break
                # checks a sample declares not applicable (``skip_checks``: name -> reason,
                # e.g. the fake check of a data-dependent op) are reported as skipped
                skip = dict(getattr(s, "skip_checks", None) or {})
                tests = [t for t in _selected(test_utils) if t not in skip]
                res = run_checks(op, s.args, s.kwargs, test_utils=tests, atol=atol,
                                 rtol=rtol, kernel=None if op.is_builtin else key) if tests else {}
                for t in _selected(test_utils):
                    if t in skip:
                        res[t] = CheckResult(t, "skip", skip[t])
                res = {t: res[t] for t in _selected(test_utils)}
            failures = {k: r.message for k, r in res.items() if r.status == "fail"}
            checks = {k: r.status for k, r in res.items()}
            times = {k: r.seconds for k, r in res.items()}
            notes = {k: r.message for k, r in res.items() if r.status != "fail" and r.message}
            status, msg = ("failed" if failures else "passed"), ""
        except TimedOut:
            r = timeout_result(case, label, timeout, plugin, kdesc, time.perf_counter() - t0)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - an op that breaks opcheck is
            # an error result; a kernel calling sys.exit() too: it would end a serial check
            # silently with its exit status (a parallel worker reports it the same way)
            failures, times, notes = {}, {}, {}
            status = "error"
            msg = f"opcheck raised {type(e).__name__}: {e}\n" + "".join(
                traceback.format_exception(type(e), e, e.__traceback__, limit=-3))
        if r is None:
            r = PluginCheckResult(plugin, case.op, case.device, label, status, dict(failures),
                                  msg, time.perf_counter() - t0, kdesc, checks,
                                  check_seconds=times, notes=notes)
        out.append(r)
        if report is not None:
            report(("result", r))
    return out


def _said(report, results):
    """``results``, each also given to ``report`` (see :func:`run_case`)."""
    if report is not None:
        for r in results:
            report(("result", r))
    return results


def _seed(case, what) -> int:
    """The generator seed of ``case``'s sample making (``what="samples"``) or of its sample
    number ``what``: the same in every process and run."""
    tag = f"{case.op}|{case.device}" + ("" if what == "samples" else f"|{what}")
    return zlib.crc32(tag.encode()) & 0x7FFFFFFF


class TimedOut(BaseException):
    """Raised into a sample's check by :func:`time_limit` when it runs past the limit. A
    ``BaseException``, as ``KeyboardInterrupt``: opcheck's own ``except Exception`` (a check
    that raises is that check's failure) must not turn it into a check result."""


def _alarm_usable() -> bool:
    """Whether ``SIGALRM`` can time a sample here: POSIX, the main thread, and nobody else's
    use of it (a handler, or an armed ``ITIMER_REAL``: pytest-timeout's signal method)."""
    import signal
    import threading
    return (hasattr(signal, "setitimer") and threading.current_thread() is
            threading.main_thread() and signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
            and signal.getitimer(signal.ITIMER_REAL)[0] == 0)


class time_limit:
    """``with time_limit(seconds):`` raises :class:`TimedOut` into the body once it has run
    ``seconds`` (``SIGALRM``; a no-op for ``None``/``0`` or where ``_alarm_usable`` is false).
    The handler is restored and the timer disarmed on the way out."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.old = None

    def __enter__(self):
        if self.seconds and _alarm_usable():
            import signal

            def on_alarm(signum, frame):
                raise TimedOut()
            self.old = signal.signal(signal.SIGALRM, on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            import signal
            signal.setitimer(signal.ITIMER_REAL, 0)
            # an alarm that fired after the body ended is dropped with the handler (CPython
            # skips a pending signal whose handler became SIG_DFL)
            signal.signal(signal.SIGALRM, self.old)
            self.old = None
        return False


def timeout_result(case, sample, limit, plugin, kdesc, seconds=0.0):
    """The ``error`` result of ``case``'s ``sample`` (``""``: the making of its samples) that
    ran past ``limit`` seconds: the same text whether a serial run interrupted it or a parallel
    run killed its worker, naming op, device, kernel, sample and the limit."""
    what = (f"sample [{sample}] was still being checked" if sample else
            "its sample inputs (the tensorplay_sample_inputs hooks) were still being made")
    msg = (f"timed out: {what} after the limit of {limit:g} s per sample (op {case.op}, "
           f"device {case.device}, kernel {kdesc}); the kernel or hook hangs or is that slow: "
           f"fix it, or give more time (tensorplay check --timeout SECONDS; "
           f"check_plugin(timeout=...))")
    return PluginCheckResult(plugin, case.op, case.device, sample, "error", message=msg,
                             seconds=seconds, kernel=kdesc, timed_out=True)


def derive_zero_size(op, samples):
    """A sample with leading dimension 0, derived from the first sample that has a tensor with a
    leading dimension: every tensor whose leading size equals that tensor's is sliced to
    ``[:0]``. None when a sample already has such a tensor, none can be derived, or the op's
    fake kernel rejects it (then the op does not take empty batches)."""
    src = _zero_size_source(samples)
    return None if src is None else _derive_from(op, src)


def _sample_tensors(s):
    from .opcheck import _map_tensors
    found = []
    _map_tensors((tuple(s.args), tuple(s.kwargs.values())), lambda t: found.append(t) or t)
    return found


def _zero_size_source(samples):
    """The sample :func:`derive_zero_size` derives from (the first with a tensor of a leading
    dimension), or None when a sample already has a leading dimension of 0 or none has a
    tensor of one. Cheap: nothing runs."""
    for s in samples:
        if any(t.ndim >= 1 and t.shape[0] == 0 for t in _sample_tensors(s)):
            return None
    for s in samples:
        if any(t.ndim >= 1 for t in _sample_tensors(s)):
            return s
    return None


def _derived_name(src) -> str:
    return f"derived: leading dim 0 (from {src.name or 'sample'})"


def _derive_from(op, s):
    """``s`` with every tensor whose leading size is its first such tensor's sliced to
    ``[:0]``, or None when the op's fake kernel (or what runs on fake inputs) rejects it."""
    from .._tensor import Tensor
    from ..plugins import SampleInput
    from .opcheck import _map_tensors
    lead = next(t for t in _sample_tensors(s) if t.ndim >= 1).shape[0]

    def cut(t):
        if isinstance(t, Tensor) and t.ndim >= 1 and t.shape[0] == lead:
            return t.detach()[:0]
        return t
    args = tuple(_map_tensors(a, cut) for a in s.args)
    kwargs = {k: _map_tensors(v, cut) for k, v in s.kwargs.items()}
    from .aot import _shape_generic
    if not _shape_generic(op, args, kwargs):
        return None
    d = SampleInput(args, kwargs, _derived_name(s))
    skip = getattr(s, "skip_checks", None)
    if skip:        # what the source sample declares not applicable stays so (tp::nonzero)
        d.skip_checks = dict(skip)
    return d


def check_plugin(name: str, device=None, *, ops=None, test_utils="DEFAULT", atol=None,
                 rtol=None, progress=None, jobs=1, timeout=None) -> list[PluginCheckResult]:
    """Run ``opcheck`` over all of plugin ``name``'s ops x samples x available devices.

    Arguments:

    * ``name`` -- distribution or entry-point name (``"tensorplay-example-ops"``, ``"example_ops"``).
    * ``device`` -- ``None`` for every available device, or one (``"cpu"``, ``"cuda:1"``).
    * ``ops`` -- optional qualnames to restrict to; ``test_utils``/``atol``/``rtol`` are passed
      to ``tensorplay.library.opcheck``.
    * ``progress`` -- optional callable receiving each ``PluginCheckResult`` as it completes
      (in the order of the results, also when parallel).
    * ``jobs`` -- worker processes: ``1`` (default) runs here; ``N``, or ``"auto"``/``0`` (one
      per cpu, see :func:`resolve_jobs`) spreads the (op, device, kernel) cases over worker
      processes (see ``_check_pool``: forked from this process where that is safe -- POSIX but
      macOS, one Python thread, no device but cpu set up -- else fresh interpreters that load
      the same plugins; on Windows the run stays in this process). The results are the same,
      in the same order, apart from the timings. A kernel that crashes its worker (a segfault)
      is an ``error`` result naming op, device and sample, and a fresh worker goes on with the
      rest. Ops registered at run time rather than by an installed plugin exist in fresh
      interpreters only when a plugin registers them: check those with ``jobs=1``.
    * ``timeout`` -- seconds one sample's checks (or the making of an op's samples) may take
      (``None``/``0``: no limit); one that runs past it is an ``error`` result naming op,
      device, kernel, sample and the limit, and the check goes on with the next sample. In
      parallel the worker is killed and replaced; with ``jobs=1`` it is interrupted by
      ``SIGALRM`` (main thread on POSIX; see :func:`run_case` for what that cannot stop).

    Returns one ``PluginCheckResult`` per (op, device, sample); ``summarize`` counts them. Never
    raises for a failing op. Raises ``PluginError`` when the plugin is not installed, failed to
    load (its recorded error chained, with the fix) or is blocked, and
    ``DeviceUnavailableError`` when an explicitly requested device is not available.

    Example::

        >>> res = tensorplay.testing.check_plugin("tensorplay-example-ops", device="cpu")
        >>> tensorplay.testing.summarize(res)["failed"]
        0
    """
    from ..plugins import manager
    n_jobs = resolve_jobs(jobs)      # a bad value fails before anything runs
    if timeout is not None and not (isinstance(timeout, (int, float))
                                    and not isinstance(timeout, bool) and timeout >= 0
                                    and timeout == timeout and timeout != float("inf")):
        raise ValueError(f"timeout={timeout!r}: give the seconds one sample may take, a "
                         f"finite number >= 0 (0 or None: no limit)")
    cases = plugin_check_cases(name, device, ops)
    results = []
    # ops with no available device (e.g. a cuda-only plugin on a machine without a GPU): say so
    # one skipped result per device it has kernels for, each with that device's reason
    status: dict = {}
    for op_name, wanted in _cases(manager.get_plugin(name), name, device, ops)[1]:
        dist = manager.get_plugin(name).dist
        found = []
        for d in wanted:
            if d not in status:
                status[d] = manager.device_status(d)[1] or f"device '{d}' is not available"
            found.append(PluginCheckResult(dist, op_name, d, "", "skipped",
                                           message=status[d], device_unavailable=True))
        if not found:
            found.append(PluginCheckResult(dist, op_name, "-", "", "skipped",
                                           message="no available device with a kernel for "
                                                   "this op"))
        for r in found:
            results.append(r)
            if progress is not None:
                progress(r)
    from .kernel_entries import check_kernel_entries    # dangling tensorplay.kernels entries
    check_kernel_entries(manager.get_plugin(name), device, ops, results, progress)
    for case_results in _run_cases(cases, n_jobs, timeout or None, test_utils=test_utils,
                                   atol=atol, rtol=rtol):
        for r in case_results:
            results.append(r)
            if progress is not None:
                progress(r)
    return results


def resolve_jobs(jobs) -> int:
    """The number of worker processes ``jobs`` asks for: a whole number >= 1 (``1``: run in this
    process), or ``"auto"`` or ``0``: one per cpu this process may run on
    (``os.sched_getaffinity``, else ``os.cpu_count()``; as ``xargs -P 0`` and pytest-xdist's
    ``-n auto``). Raises ``ValueError`` (one sentence with the fix) for anything else, e.g.
    ``-2``, ``1.5`` or ``"many"``."""
    n = jobs
    if isinstance(jobs, str):
        try:
            n = 0 if jobs.strip().lower() == "auto" else int(jobs.strip())
        except ValueError:
            n = None
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"jobs={jobs!r} is not a number of worker processes: give a whole "
                         f"number >= 1, or 'auto' (or 0) for one per cpu")
    if n == 0:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except (AttributeError, OSError):
            return max(1, os.cpu_count() or 1)
    return n


def _run_cases(cases, jobs, timeout, **kw):
    """``run_case`` over ``cases``: yields each case's results in the order of ``cases``, as
    they complete; in ``jobs`` worker processes when ``jobs > 1``, there are several cases and
    this platform has workers (``_check_pool.worker_kind``), else in this process."""
    jobs = min(jobs, len(cases))
    kind = None
    if jobs > 1:
        from ._check_pool import worker_kind
        kind = worker_kind()
    if kind is None:
        for case in cases:
            yield run_case(case, timeout=timeout, **kw)
        return
    from ._check_pool import run_parallel
    yield from run_parallel(cases, jobs, kw, timeout=timeout, kind=kind)


def summarize(results) -> dict:
    """Counts by status: ``{"passed": n, "failed": n, "error": n, "skipped": n}``."""
    out = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for r in results:
        out[r.status] = out.get(r.status, 0) + 1
    return out


def opcheck_plugin_tests(name: str, device=None, *, ops=None, test_utils="DEFAULT", atol=None,
                         rtol=None, skip_without_samples: bool = True):
    """A pytest test function running ``opcheck`` on plugin ``name``: one test per (op, device),
    each over every sample. Assign it to a ``test_*`` name in an op pack's test module::

        from tensorplay.testing import opcheck_plugin_tests
        test_opcheck = opcheck_plugin_tests("tensorplay-example-ops")

    A case fails with every failing sample's opcheck messages; a case without samples is skipped
    (or fails with ``skip_without_samples=False``). If the plugin is missing, failed or blocked,
    the single generated test fails with that error (never silently passes). Needs pytest.
    """
    import pytest

    try:
        cases = plugin_check_cases(name, device, ops)
        setup_error = None
    except Exception as e:  # noqa: BLE001 - reported by the generated test, not at collection
        cases, setup_error = [], e
    if setup_error is not None or not cases:
        def test_plugin_opcheck_setup():
            if setup_error is not None:
                raise setup_error
            pytest.fail(f"opcheck_plugin_tests({name!r}): plugin has no ops to check on "
                        f"{device or 'any available device'}")
        return test_plugin_opcheck_setup

    @pytest.mark.parametrize("case", cases, ids=[c.id for c in cases])
    def test_plugin_opcheck(case):
        results = run_case(case, test_utils=test_utils, atol=atol, rtol=rtol)
        bad = [r for r in results if r.status in ("failed", "error")]
        if bad:
            pytest.fail("\n".join(r.describe() for r in bad), pytrace=False)
        if all(r.status == "skipped" for r in results):
            if skip_without_samples:
                pytest.skip(results[0].message)
            pytest.fail(results[0].message, pytrace=False)

    test_plugin_opcheck.__doc__ = f"opcheck over the ops of plugin {name}"
    return test_plugin_opcheck
