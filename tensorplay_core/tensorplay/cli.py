"""The ``tensorplay`` command (console script; also ``python -m tensorplay.cli``).

::

    tensorplay --version
    tensorplay plugins [--json [PATH]]       # every plugin: version, status, devices, ops, kernels
    tensorplay ops [--namespace NS] [--json [PATH]]   # every op: schema, kernels, plugin
    tensorplay check [--plugin NAME] [--device D] [-j N|auto] [--timeout S] [OP ...] [--json [PATH]]

``check`` is the main job: ``opcheck`` (schema, autograd, layouts, fake, compile) over every op
each installed op pack ships, with the sample inputs the plugins provide (hook
``tensorplay_sample_inputs``) plus a derived empty-batch sample, on every available device, for
every registered kernel -- one table row per kernel, naming it (dispatch key,
``module:function``) under the plugin that registered it. ``--plugin tensorplay-cpu`` checks a
device plugin's built-in ops. The engine is ``tensorplay.testing.plugin_check`` (the same as
``check_plugin`` and the pytest helpers); this module parses arguments and renders. Progress on
stderr, tables and failure messages on stdout. A device that cannot be used here (no GPU, no
driver) is said once -- ``device cuda (plugin tensorplay-cuda) is unavailable: <reason and
fix>`` -- under "Not checked", never once per op and never as passed; the summary counts the
kernel rows per device. A plugin named with ``--plugin`` that ``--plugins``/``--disable-plugins``
kept from loading is a failure that names the control and the flag that loads it. Exit status 0
when everything checked passed, 1 on any failure, on a plugin that failed to load or was not
loaded although named with ``--plugin``, or when nothing at all was checked (e.g. every op's
device is unavailable here); 2 for a usage error, including an unknown plugin, op or device
name (``--plugin``, ``OP``, ``--device``, ``--plugins``).

``check -j N`` (``--jobs``; ``auto`` or ``0``: one per cpu) checks the (op, device, kernel) cases
in N worker processes: forks of the command itself, which has loaded and warmed everything
(Linux; not once a device other than cpu is set up, nor on macOS: there fresh interpreters
started with the same plugin controls; on Windows the run stays serial;
``TENSORPLAY_CHECK_WORKERS=fork|spawn`` forces a kind). The same results, failure messages, exit
status and JSON (but for the timings) in the same order as a serial run. A kernel that crashes
its worker is an error naming op, device and sample; the run goes on from the next sample. The
default is 1, as pytest without ``-n``: a run in one process is what a debugger or a crash's
traceback needs.

``check --timeout SECONDS`` (default 300; 0: none) limits each sample's checks and the making of
an op's samples: one that runs past it is an error naming op, device, kernel, sample and the
limit, and the check goes on with the next sample, in the same results under ``-j 1`` (the
sample is interrupted by ``SIGALRM``: POSIX, and only code that returns to Python -- a kernel
stuck in native code hangs a serial run; use ``-j 2``) and ``-j N`` (the worker is killed and
replaced).

``tensorplay plugins`` also warns about a loaded plugin whose module registered no hooks (it
names the file it imported: a same-named directory in the working directory shadows the real
module).

``--json PATH`` writes the results as JSON to PATH; ``--json -`` (or ``--json`` alone) writes
JSON to stdout, and for ``check`` the human output goes to stderr. Output into a closed pipe
(``tensorplay ops | head -1``) ends quietly.

Global options ``--plugins LIST``, ``--disable-plugins LIST`` and ``--strict`` set
``TENSORPLAY_PLUGINS``, ``TENSORPLAY_DISABLE_PLUGINS`` and ``TENSORPLAY_STRICT_PLUGINS=1`` (a name
that matches no installed plugin is a usage error). Not to be confused with ``check --plugin
NAME``, which chooses whose ops are checked. Plugins are discovered when ``tensorplay`` is
imported, which has already happened by the time this module runs, so with any of them the
command re-runs itself in a fresh interpreter with that environment.

Tables fit the terminal (``COLUMNS`` or the terminal's width): cells wrap between words, and a
name (distribution, version, op, kernel) is never split across lines -- a table whose names do
not fit overflows the terminal instead; ``plugins`` then lists the op names under the table.
Piped without ``COLUMNS`` each row stays on one line (greppable). They use ``rich`` on a
terminal when it is importable, plain text otherwise (rich is not a dependency;
``TENSORPLAY_CLI_RICH=1``/``0`` forces either).

A mistyped command or option gets "did you mean ...?"; ``-V`` is ``--version``, which the entry
module (``_tensorplay_cli``) answers before any plugin is imported. A plugin that fails to load
is one line on stderr (its error and where its code raised it); ``--strict`` shows the
traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time

__all__ = ["main"]

_CHECK_COLUMNS = (("test_schema", "schema"), ("test_autograd_registration", "autograd"),
                  ("test_gradients", "grads"), ("test_layouts", "layouts"), ("test_faketensor", "fake"),
                  ("test_aot_dispatch_dynamic", "aot"))
_MARK = {"pass": "ok", "fail": "FAIL", "skip": "n/a", None: "-"}


# ----------------------------------------------------------------------------------------------
# argument parsing

def _version() -> str:
    try:
        import tensorplay
        return tensorplay.__version__
    except Exception:   # noqa: BLE001 - --version must work even with a broken install
        from importlib.metadata import version
        return version("tensorplay-core")


# kept in agreement with README.md's paragraph on `tensorplay check`
_CHECK_EXIT_STATUS = """\
checks (columns of the table; n/a: nothing to check, with the reason in --json):
  schema    inputs not declared mutated are untouched; outputs are fresh memory; the
            returned structure matches the schema
  autograd  gradients reach every floating input with the right shape (not their values)
  grads     gradient values: the formula's (or autograd's) vector-Jacobian product matches
            finite differences of the op, per input; skipped with a reason at non-smooth or
            non-finite points, for mutating or non-differentiable ops, and for ops without a
            formula whose samples do not require grad (as torch's opcheck)
  layouts   transposed/offset/padded/expanded inputs give the contiguous result
  fake      the fake kernel reproduces the real outputs' shapes, dtypes and strides
  aot       the op runs captured by tensorplay.compile and gives the eager result
  none of them proves second derivatives, values at other inputs than the samples, or speed

parallel (-j N, -j auto):
  the (op, device, kernel) cases run in N worker processes forked from this one once it has
  loaded everything (fresh interpreters loading the same plugins on macOS or once a GPU is set
  up; serial on Windows); output, --json (but for the times) and exit status are those of the
  serial run. A kernel that crashes its worker is an error naming op, device and sample, and
  the run goes on from the next sample.
  In a test suite: pytest --tensorplay-check=PLUGIN -n N (pytest-xdist) spreads the same cases

timeout (--timeout SECONDS, default 300, 0: none):
  a sample whose checks (or an op whose sample making) run past it is an error naming op,
  kernel, sample and limit; the check goes on. -j N kills and replaces the worker; -j 1
  interrupts the sample (SIGALRM: code that returns to Python; a kernel stuck in native code
  needs -j 2). Same results either way.

exit status:
  0: everything checked passed
  1: a check failed; a plugin failed to load, or was named with --plugin but kept from
     loading by --plugins/--disable-plugins; or nothing was checked (e.g. every op's device is
     unavailable here)
  2: usage error: a bad option, or an unknown plugin, op or device name (--plugin, OP,
     --device, --plugins, --disable-plugins, --test-utils)"""


class _Parser(argparse.ArgumentParser):
    """argparse with pip's manners: a mistyped command or option gets "did you mean ...?"."""

    def error(self, message):
        import difflib
        import re
        m = re.search(r"invalid choice: '([^']*)'", message)
        if m:
            choices = [c for a in self._actions if a.choices for c in a.choices]
            near = difflib.get_close_matches(m.group(1), choices, n=1)
            if near:
                message += f"; did you mean {near[0]!r}?"
        m = re.match(r"unrecognized arguments: (\S+)", message)
        if m and m.group(1).startswith("--"):
            opts = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            near = difflib.get_close_matches(m.group(1).partition("=")[0], opts, n=1)
            if near:
                message += f"; did you mean {near[0]!r}?"
        super().error(message)


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    g = common.add_argument_group("plugin selection (environment controls)")
    g.add_argument("--plugins", default=argparse.SUPPRESS, metavar="LIST",
                   help="comma list of plugins to load, by entry-point or distribution name "
                        "(TENSORPLAY_PLUGINS; empty: none)")
    g.add_argument("--disable-plugins", default=argparse.SUPPRESS, metavar="LIST",
                   help="comma list of plugins not to load (TENSORPLAY_DISABLE_PLUGINS)")
    g.add_argument("--strict", action="store_true", default=argparse.SUPPRESS,
                   help="a plugin that fails to load is an error (TENSORPLAY_STRICT_PLUGINS=1)")

    # allow_abbrev=False: "--plugin" must never silently mean "--plugins" (two different things)
    p = _Parser(
        prog="tensorplay", parents=[common], allow_abbrev=False,
        description="TensorPlay operator platform: list plugins and ops, check op packs.")
    p.add_argument("-V", "--version", action="version", version=f"tensorplay {_version()}")
    sub = p.add_subparsers(dest="command", metavar="{plugins,ops,check}", parser_class=_Parser)

    sp = sub.add_parser("plugins", parents=[common], allow_abbrev=False,
                        help="list installed plugins")
    sp.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                    dest="json_path", help="JSON instead of a table, to PATH ('-' or no "
                                           "PATH: stdout)")

    so = sub.add_parser("ops", parents=[common], allow_abbrev=False,
                        help="list registered operators")
    so.add_argument("--namespace", "-n", action="append", metavar="NS",
                    help="only ops in this namespace (repeatable)")
    so.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                    dest="json_path", help="JSON instead of a table, to PATH ('-' or no "
                                           "PATH: stdout)")

    sc = sub.add_parser("check", parents=[common], allow_abbrev=False,
                        help="run opcheck on every plugin op over its sample inputs",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog=_CHECK_EXIT_STATUS)
    sc.add_argument("ops", nargs="*", metavar="OP",
                    help="only these ops ('ns::op' or the bare op name)")
    sc.add_argument("--plugin", action="append", metavar="NAME",
                    help="only ops of this plugin (entry-point or distribution name; repeatable;"
                         " a device plugin such as tensorplay-cpu: its built-in ops). Not "
                         "--plugins, which chooses the plugins that are loaded")
    sc.add_argument("--device", action="append", metavar="D",
                    help="only this device type, e.g. cpu or cuda (repeatable)")
    sc.add_argument("--test-utils", default="DEFAULT", metavar="NAMES",
                    help="comma list of checks (default: all): test_schema, "
                         "test_autograd_registration, test_gradients, test_layouts, "
                         "test_faketensor, test_aot_dispatch_dynamic (what each proves: below)")
    sc.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                    dest="json_path", help="also write the results as JSON to PATH ('-' or no "
                                           "PATH: JSON on stdout, the tables on stderr)")
    sc.add_argument("--atol", type=_tolerance, default=None,
                    help="absolute tolerance override (a finite number >= 0)")
    sc.add_argument("--rtol", type=_tolerance, default=None,
                    help="relative tolerance override (a finite number >= 0)")
    sc.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    sc.add_argument("--jobs", "-j", default="1", metavar="N",
                    help="worker processes: a number, or 'auto' (or 0) for one per cpu "
                         "(default 1: in this process, as pytest without -n). Same results, "
                         "same order, same exit status; a kernel that crashes its worker is an "
                         "error naming op and sample")
    sc.add_argument("--timeout", type=_seconds, default=300.0, metavar="SECONDS",
                    help="limit of one sample's checks, and of making an op's samples "
                         "(default 300; 0: none): past it the sample is an error naming op, "
                         "kernel, sample and limit, and the check goes on")
    return p


def _nonnegative(unit: str, hint: str = ""):
    """An argparse ``type``: a finite number >= 0, named ``a number{unit}`` in the usage error
    (``--atol``/``--rtol``: ``""``; ``--timeout``: ``" of seconds"``, hint ``" (0: no limit)"``)."""
    import math

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number{unit}") from None
        if not math.isfinite(v) or v < 0:
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number{unit} >= 0{hint}")
        return v
    return parse


_tolerance = _nonnegative("")
_seconds = _nonnegative(" of seconds", " (0: no limit)")


def _usage_error(args) -> str | None:
    """The one-line usage error of arguments argparse accepted but that cannot work, or
    ``None``; checked before anything runs (a whole ``check`` must not run first and then
    fail on its output path): a ``--json`` PATH that cannot be written, a ``--device`` that
    ``tensorplay.device`` refuses, a ``--test-utils`` list naming no check."""
    path = getattr(args, "json_path", None)
    if path and path != "-":
        why = _unwritable(path)
        if why:
            return f"tensorplay {args.command}: --json {path}: {why}"
    if args.command != "check":
        return None
    for d in args.device or ():
        bad = _bad_device(d)
        if bad:
            return f"tensorplay check: --device {d}: {bad}"
    from tensorplay.testing.plugin_check import resolve_jobs
    try:
        resolve_jobs(args.jobs)
    except ValueError:
        return (f"tensorplay check: --jobs {args.jobs}: give a whole number >= 1, or 'auto' "
                f"(or 0) for one worker per cpu")
    if args.test_utils != "DEFAULT" and not any(t.strip() for t in args.test_utils.split(",")):
        return (f"tensorplay check: --test-utils {args.test_utils!r} names no check; give a "
                f"comma list such as test_schema,test_faketensor, or leave it out to run all")
    return None


def _unwritable(path: str) -> str | None:
    """Why ``path`` cannot be written as a file (without creating it), or ``None``."""
    if os.path.isdir(path):
        return "is a directory; give a file name"
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return f"directory {parent} does not exist; create it or give another path"
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            return "the file is not writable"
    elif not os.access(parent, os.W_OK | os.X_OK):
        return f"directory {parent} is not writable; give another path"
    return None


def _bad_device(spelling: str) -> str | None:
    """``tensorplay.device``'s refusal of ``spelling`` (one sentence) when its type is known but
    the whole spelling is malformed (``cuda:99x``, ``cpu:``, ``CUDA``: torch's grammar, lower
    case, no spaces); ``None`` for a device, and for an
    unknown type (``check`` says which devices exist here, and why a provider did not load)."""
    import tensorplay
    try:
        tensorplay.device(spelling)
    except (ValueError, TypeError) as e:
        # the type alone, cleaned: a known type spelled badly ("CUDA", " cpu") is refused here
        # in tensorplay.device's words, an unknown one left to ``check``
        t = spelling.partition(":")[0].strip().lower()
        try:
            if t:
                tensorplay.device(t)
        except (ValueError, TypeError):
            return None      # an unknown type: ``check`` says which devices exist here
        return str(e).removeprefix("tensorplay.device: ")
    return None


_ENV_FLAGS = {"plugins": "TENSORPLAY_PLUGINS", "disable_plugins": "TENSORPLAY_DISABLE_PLUGINS",
              "strict": "TENSORPLAY_STRICT_PLUGINS"}


def _strip_env_flags(argv: list) -> list:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--plugins", "--disable-plugins"):
            skip = True
            continue
        if a.startswith(("--plugins=", "--disable-plugins=")) or a == "--strict":
            continue
        out.append(a)
    return out


def main(argv=None) -> int:
    """Run the ``tensorplay`` command with ``argv`` (default ``sys.argv[1:]``); return the exit
    status (0 ok, 1 failures / nothing checked, 2 usage error). See the module docstring.
    Output into a closed pipe (``tensorplay ops | head -1``, ``tensorplay check | true``) is
    dropped quietly; the command runs to its end and returns its own status (a failed check
    still exits 1)."""
    real = sys.stdout
    sys.stdout = _PipeSafe(real)
    try:
        return _main(argv)
    finally:
        sys.stdout.flush()
        sys.stdout = real


class _PipeSafe:
    """``sys.stdout`` while the command runs: when the reader has gone (``BrokenPipeError``),
    the rest of the output goes to ``os.devnull`` -- the recipe of the Python documentation
    ("signal" module, note on SIGPIPE), which also keeps the interpreter's final flush quiet --
    so the command still finishes and reports its real exit status."""

    def __init__(self, stream):
        self._stream = stream
        self._closed = False

    def _gone(self) -> None:
        self._closed = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def write(self, text):
        if self._closed:
            return len(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self):
        if self._closed:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def __getattr__(self, name):       # isatty, fileno, encoding, ... of the real stream
        return getattr(self._stream, name)


_HINT_PLUGIN = ("hint: --plugin NAME (check) picks the plugin whose ops are checked; --plugins "
                "LIST (any command) picks the plugins that are loaded at all")


def _main(argv) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:      # said by the subcommand's parser: its usage, not the top-level one
            sub = parser._subparsers._group_actions[0].choices.get(args.command, parser)
            sub.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as e:       # argparse exits on --help / bad usage; return the code instead
        code = int(e.code or 0)
        if code and any(a == "--plugin" or a.startswith("--plugin=") for a in argv):
            _err(_HINT_PLUGIN)
        return code
    if args.command is not None:
        bad = _usage_error(args)
        if bad:
            _err(bad)
            return 2
    env = {}
    for attr, var in _ENV_FLAGS.items():
        if hasattr(args, attr):
            env[var] = "1" if attr == "strict" else getattr(args, attr)
    if env:
        bad = _unknown_plugin_names(args)
        if bad:
            return 2
        if args.command == "check" and getattr(args, "plugins", None) and not args.plugin:
            _err(f"note: --plugins {args.plugins} only chooses which plugins are loaded; every "
                 f"loaded op pack is checked. {_HINT_PLUGIN}")
        # plugins were discovered when `tensorplay` was imported (before this function could run):
        # apply the controls by running the same command in a fresh interpreter.
        # the controls as they were before any plugin ran: a plugin that rewrote a
        # TENSORPLAY_* variable at import must not change (or block) what the re-run loads
        from tensorplay.plugins import controls
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORPLAY_")}
        child_env.update(controls())
        child_env.update(env)
        cmd = [sys.executable, "-m", "_tensorplay_cli", *_strip_env_flags(argv)]
        return subprocess.run(cmd, env=child_env).returncode
    if args.command is None:
        parser.print_help()
        return 2
    import tensorplay  # noqa: F401  (already imported with this module; discovery happened there)
    if args.command == "plugins":
        return _cmd_plugins(args)
    if args.command == "ops":
        return _cmd_ops(args)
    return _cmd_check(args)


def _unknown_plugin_names(args) -> list:
    """Names in ``--plugins``/``--disable-plugins`` that match no installed plugin (error on
    stderr, with the installed names). A typo there would otherwise load nothing or block
    nothing without a word."""
    from tensorplay.plugins import manager
    recs = manager.records()
    known = set()
    for r in recs:
        known.update({_norm(r.name), _norm(r.dist), _norm(getattr(r, "key", r.name))})
    bad = []
    for flag in ("plugins", "disable_plugins"):
        value = getattr(args, flag, None)
        if not value:
            continue
        for name in (n.strip() for n in value.split(",")):
            if name and _norm(name) not in known:
                bad.append(name)
                installed = ", ".join(sorted({f"{r.dist} ({r.name})" for r in recs})) or "none"
                _err(f"tensorplay: --{flag.replace('_', '-')}: no installed plugin named "
                     f"{name!r} (installed: {installed})")
                if flag == "plugins" and getattr(args, "command", None) == "check":
                    _err(_HINT_PLUGIN)
    return bad


# ----------------------------------------------------------------------------------------------
# output helpers

def _use_rich(out) -> bool:
    """rich tables on a terminal when rich is importable; plain text when piped (greppable,
    stable for scripts and tests). ``TENSORPLAY_CLI_RICH=1``/``0`` forces either."""
    force = os.environ.get("TENSORPLAY_CLI_RICH")
    if force == "0":
        return False
    if force != "1" and not (hasattr(out, "isatty") and out.isatty()):
        return False
    return importlib.util.find_spec("rich") is not None


def _print_table(title, headers, rows, out=None) -> None:
    """A table on ``out`` (stdout) that fits the terminal (80 columns when it is not one): the
    widest columns are wrapped, at ``.``/``:``/``,``/space boundaries where possible."""
    out = out or sys.stdout
    width = _term_width(out)
    Console = None
    if _use_rich(out):
        from rich.console import Console
        from rich.table import Table
    if Console is not None:
        t = Table(title=title)
        cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
        # the plain table's widths (rich adds a border and a padding of 1 on each side): no
        # column narrower than its longest word, so rich never folds a name; a table whose
        # words do not fit overflows the terminal instead
        frame = 3 * len(headers) + 1
        widths = _fit_widths(cells, max((width or 80) - frame, 1), 0)
        for h, w in zip(headers, widths):
            t.add_column(h, width=w)
        for r in cells[1:]:
            t.add_row(*r)
        Console(file=out, width=max(width or 80, sum(widths) + frame)).print(t)
        return
    sep = "  "
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    natural = _fit_widths(cells, None, len(sep))
    if width is not None and sum(natural) + len(sep) * (len(natural) - 1) > width:
        # narrow terminal: drop columns that say nothing in any row first (empty, or "-":
        # a check that was not run)
        keep = [i for i in range(len(headers))
                if any(row[i].strip() not in ("", "-") for row in cells[1:])]
        cells = [[row[i] for i in keep] for row in cells]
    widths = _fit_widths(cells, width, len(sep))
    cells = [[_wrap_cell(c, w) for c, w in zip(row, widths)] for row in cells]
    if title:
        print(title, file=out)

    def emit(row):
        lines = [c.splitlines() or [""] for c in row]
        for k in range(max(len(x) for x in lines)):
            print(sep.join((x[k] if k < len(x) else "").ljust(w) for x, w in zip(lines, widths))
                  .rstrip(), file=out)
    emit(cells[0])
    print(sep.join("-" * w for w in widths), file=out)
    for row in cells[1:]:
        emit(row)


def _tokens(text: str) -> list:
    """The unbreakable pieces of a cell: its words (names, versions, paths are one word each)."""
    return text.split()


def _floor(cells, i) -> int:
    """The narrowest column ``i`` may get: its longest word, header included -- an identifier
    is never split across lines (a row overflows the terminal first)."""
    return max([3] + [len(t) for row in cells for t in _tokens(row[i])])


def _fits(headers, rows, width, out) -> bool:
    """Whether the table fits ``width`` (None: always) without overflowing its longest words."""
    if width is None:
        return True
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    n = len(headers)
    frame = 3 * n + 1 if _use_rich(out) else 2 * (n - 1)
    return sum(_floor(cells, i) for i in range(n)) + frame <= width


def _fit_widths(cells, width, sep) -> list:
    """Column widths whose sum (with separators) is at most ``width`` where the words allow
    (None: natural widths). The column with the most room above its floor (its longest word)
    gives up one character at a time; a table whose words alone do not fit overflows."""
    n = len(cells[0])
    widths = [max(len(line) for row in cells for line in row[i].splitlines() or [""])
              for i in range(n)]
    if width is None:
        return widths
    floor = [_floor(cells, i) for i in range(n)]
    budget = width - sep * (n - 1)
    while sum(widths) > budget:
        i = max(range(n), key=lambda j: widths[j] - floor[j])
        if widths[i] <= floor[i]:
            break
        widths[i] -= 1
    return widths


def _wrap_cell(text: str, width: int) -> str:
    """``text`` wrapped to ``width`` between words, never inside one (a longer word keeps its
    own line); continuation lines keep the line's indent."""
    out = []
    for line in text.splitlines() or [""]:
        indent = line[:len(line) - len(line.lstrip())]
        out += textwrap.wrap(line, width, initial_indent="", subsequent_indent=indent,
                             break_long_words=False, break_on_hyphens=False) or [line]
    return "\n".join(out)


def _term_width(out=None):
    """The width tables must fit: ``COLUMNS`` when set, else the terminal's width when ``out``
    is a terminal; ``None`` (no limit: one line per row, greppable) when piped."""
    env = os.environ.get("COLUMNS")
    if env and env.isdigit():
        return max(int(env), 40)
    try:
        if out is not None and hasattr(out, "isatty") and out.isatty():
            return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError):
        pass
    return None


def _wrap_names(names, width=60) -> str:
    lines, cur = [], ""
    for n in names:
        piece = n if not cur else ", " + n
        if cur and len(cur) + len(piece) > width:
            lines.append(cur + ",")
            cur = n
        else:
            cur += piece
    if cur:
        lines.append(cur)
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# tensorplay plugins

def _kernels_cell(r: dict, status=None) -> str:
    """The ``kernels`` column: kernels the plugin registered, plus the built-in ``tp::`` kernels
    a device plugin provides through its backend ("62 built-in (cpu)"; "(cuda, lazy until first
    use)" while its backend is not loaded)."""
    lines = [str(len(r["kernels"]))] if r["kernels"] or not r.get("builtin_kernels") else []
    for d, b in (r.get("builtin_kernels") or {}).items():
        state = ")" if not b["lazy"] else (", lazy until first use)"
                                           if (status or {}).get(d, "available") == "available"
                                           else ", bound once it can be used)")
        lines.append(f"{b['count']} built-in ({d}{state}")
    return "\n".join(lines)


def _cmd_plugins(args) -> int:
    from tensorplay import plugins
    recs = plugins.list_plugins()
    status = {}
    for r in recs:
        for d in r["devices"]:
            if d not in status:
                ok, why = plugins.device_status(d)
                status[d] = "available" if ok else f"unavailable: {why}"
    if args.json_path:
        for r in recs:
            r["device_status"] = {d: status[d] for d in r["devices"]}
        _write_json(recs, args.json_path)
        return 0
    if not recs:
        print("no tensorplay plugins installed (entry-point group 'tensorplay.plugins'); "
              "pip install tensorplay-cpu to get the cpu device")
        return 0
    rows = []
    recs = plugins.list_plugins()     # again: checking the devices bound their built-in kernels
    per_dist: dict = {}
    for r in recs:
        per_dist[r["dist"]] = per_dist.get(r["dist"], 0) + 1
    for r in recs:
        devs = "\n".join(f"{d} ({'available' if status[d] == 'available' else 'unavailable'})"
                         for d in r["devices"]) or "-"
        ops = f"{len(r['ops'])}" + (f": {_wrap_names(r['ops'])}" if r["ops"] else "")
        # a distribution with several entry points: one row each, told apart by the entry point
        dist = r["dist"] if per_dist[r["dist"]] == 1 else f"{r['dist']} [{r['name']}]"
        note = r["error"] or ("warning: registered no hooks (see below)"
                              if r.get("warnings") else "")
        if r["status"] == "blocked" and not note:
            note = _blocked_cell(r)
        rows.append([dist, r["version"], r["status"], devs, ops, _kernels_cell(r, status), note])
    headers = ["distribution", "version", "status", "devices", "ops", "kernels", "error"]
    w = _term_width(sys.stdout)
    listed = []
    if not _fits(headers, rows, w, sys.stdout):
        # narrow terminal: no empty error column; the op names (whole, never split) go under
        # the table, the column keeps their count
        if not any(row[-1] for row in rows):
            headers, rows = headers[:-1], [row[:-1] for row in rows]
        for r, row in zip(recs, rows):
            if r["ops"]:
                row[4] = str(len(r["ops"]))
                listed.append(f"ops of {row[0]}: {', '.join(r['ops'])}")
    _print_table("TensorPlay plugins", headers, rows)
    for line in listed:
        print(textwrap.fill(line, width=w, subsequent_indent="  ", break_long_words=False,
                            break_on_hyphens=False))
    for d, s in status.items():
        if s != "available":
            line = f"device {d}: {s}"
            print(textwrap.fill(line, width=w, subsequent_indent="  ") if w else line)
    for r in recs:     # a loaded plugin that did nothing: most likely a shadowed module
        for msg in r.get("warnings") or ():
            line = f"warning: {msg.removeprefix('tensorplay: ')}"
            print(textwrap.fill(line, width=w, subsequent_indent="  ") if w else line)
    return 0


# ----------------------------------------------------------------------------------------------
# tensorplay ops

def _op_info(op) -> dict:
    from .fake import fake_source
    stacks = op.kernel_stacks()
    keys = sorted(stacks)
    # who registered the kernel a call runs: another plugin than the op's own (a kernel
    # override) is named next to the device, so the table never credits the wrong one
    owners = {k: stacks[k][-1].owner for k in keys}
    kernels = [("any device" if k == "default" else k)
               # entry-point kernels not imported yet are stand-ins in the stack (plugin manager)
               + (" (lazy)" if hasattr(op.kernels.get(k), "_tensorplay_lazy_target") else "")
               + (f" [by {owners[k]}]" if owners[k] and owners[k] != op.owner else "")
               for k in keys]
    if op.is_builtin:
        plugin = "tensorplay (built-in)"
    else:
        plugin = op.owner or (op.source or "?")
    # where fake tensors and compile take the op's output metadata from (fake.fake_source):
    # its own body only counts for a triton_op (launches skipped on fake tensors); a plain
    # device-agnostic body may read data, so it is not advertised as a fake
    source = fake_source(op)
    if source == "body" and not op.is_triton:
        source = None
    if source == "built-in":
        source = "registered"
    return {"name": op.name, "schema": op.schema.signature_str(), "kernels": kernels,
            "kernel_owners": {("default" if k == "default" else k): owners[k] for k in keys},
            "fake": source is not None,
            "fake_source": source,
            "autograd_formula": op.has_autograd, "plugin": plugin,
            "mutates_args": list(op.mutates_args)}


def _cmd_ops(args) -> int:
    from tensorplay import _registry, plugins
    plugins.load_packs()          # op packs imported on first use: list their ops too
    plugins.available_devices()   # load backends so built-in ops show their device kernels
    ops = _registry.all_ops()
    if args.namespace:
        ops = [o for o in ops if o.namespace in args.namespace]
    if args.namespace:
        # a namespace nothing is registered in is a mistake (a typo, a plugin that did not
        # load): a usage error, exit 2 as for --plugins naming no installed plugin
        have = {o.namespace for o in ops}
        missing = [n for n in dict.fromkeys(args.namespace) if n not in have]
        if missing:
            known = sorted({o.namespace for o in _registry.all_ops()})
            _err(f"tensorplay ops: no operators registered in namespace(s) "
                 f"{', '.join(missing)} (namespaces: {', '.join(known) or 'none'}); check the "
                 f"spelling, or `tensorplay plugins` for a plugin that failed to load")
            return 2
    infos = [_op_info(o) for o in ops]
    if args.json_path:
        _write_json(infos, args.json_path)
        return 0
    if not infos:
        print("no operators registered" + (f" in namespace(s) {', '.join(args.namespace)}"
                                           if args.namespace else ""))
        return 0
    rows = [[i["name"], i["schema"], ", ".join(i["kernels"]) or "-",
             (f"yes ({i['fake_source']})" if i["fake_source"] in ("body", "trivial") else "yes")
             if i["fake"] else "no",
             "yes" if i["autograd_formula"] else "-", i["plugin"]]
            for i in infos]
    _print_table("TensorPlay operators", ["op", "schema", "kernels", "fake", "formula",
                                          "plugin"], rows)
    return 0


# ----------------------------------------------------------------------------------------------
# tensorplay check: argument handling and rendering only; the engine is
# tensorplay.testing.plugin_check (the same one check_plugin / the pytest helpers use)

def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _not_loaded(r) -> str:
    """``"plugin X (name) was not loaded: <which control left it out>; <how to load it>"`` for
    a blocked plugin record, in the command's own flags (``--plugins``/``--disable-plugins`` set
    the environment variables this process was started with)."""
    label = f"plugin {r.dist} {r.version} ({r.name}) was not loaded"
    if getattr(r, "blocked_by", "") == "TENSORPLAY_DISABLE_PLUGINS":
        block = os.environ.get("TENSORPLAY_DISABLE_PLUGINS", "")
        rest = ",".join(n for n in (x.strip() for x in block.split(","))
                        if n and _norm(n) not in (_norm(r.dist), _norm(r.name)))
        return (f"{label}: --disable-plugins {block} (TENSORPLAY_DISABLE_PLUGINS, the plugins "
                f"not to load) names it; " + (f"use --disable-plugins {rest}" if rest else
                                              "drop --disable-plugins") + " to load it")
    allow = os.environ.get("TENSORPLAY_PLUGINS", "")
    with_it = ",".join([n for n in (x.strip() for x in allow.split(",")) if n] + [r.dist])
    return (f"{label}: --plugins {allow or '(empty)'} (TENSORPLAY_PLUGINS, the allow-list of "
            f"plugins to load) leaves it out; use --plugins {with_it} (or drop --plugins) to "
            f"load it")


def _blocked_cell(r: dict) -> str:
    """The error cell of a blocked plugin in ``tensorplay plugins``: the control that blocked it
    (the command's flag and the environment variable it sets)."""
    from tensorplay import plugins
    rec = plugins.get_plugin(r["dist"] if r.get("dist") else r["name"])
    if getattr(rec, "blocked_by", "") == "TENSORPLAY_DISABLE_PLUGINS":
        return "blocked by --disable-plugins (TENSORPLAY_DISABLE_PLUGINS) naming it"
    return "blocked: not in --plugins (TENSORPLAY_PLUGINS, the allow-list)"


def _no_device_reason(recs) -> str:
    """Why no device is available, from the plugin records: the cpu plugin blocked (by which
    flag/control), failed (its error and fix) or shadowed; "pip install" only when it is not
    installed at all."""
    from tensorplay import plugins
    for r in plugins.records():
        if "cpu" in r.attempted_devices or _norm(r.dist) == "tensorplay-cpu":
            if r.status == "blocked":
                return f"no device is available: {_not_loaded(r)}"
            break
    hint = " ".join(plugins.device_hint("cpu").split()).rstrip(".")
    return f"no device is available: device cpu: {hint or 'no plugin provides it'}"


def _failed_note(device_type: str):
    from tensorplay.plugins.records import failed_device_note
    return failed_device_note(device_type)


def _provider(device_type: str):
    """The distribution of the loaded plugin that provides ``device_type``, or None."""
    from tensorplay import plugins
    for r in plugins.records():
        if r.status == "loaded" and device_type in r.devices:
            return r.dist
    return None


def _unavailable_line(device_type: str, plugin, why: str) -> str:
    """``"device cuda (plugin tensorplay-cuda) is unavailable: <reason, with its fix>."``: the
    one line said for a device that cannot be checked (the reason without its own preamble)."""
    why = " ".join((why or "").split())
    for pre in (f"device '{device_type}' is not available: ",
                f"device '{device_type}' is not available. ", f"device '{device_type}': "):
        if why.startswith(pre):
            why = why[len(pre):]
            break
    who = f" (plugin {plugin})" if plugin else ""
    return f"device {device_type}{who} is unavailable: {why.rstrip('.') or 'no reason given'}."


def _devices_of(recs) -> dict:
    """``{dist: device types}`` its ops have kernels for, for the loaded plugins in ``recs``
    that ship ops (to say why ``--device`` left nothing to check)."""
    from tensorplay.testing.plugin_check import plugin_ops
    out = {}
    for r in recs:
        if r.status != "loaded":
            continue
        ds = set()
        for op, devs in plugin_ops(r.dist):
            ds |= set(devs) if devs is not None else {k for k in op.kernel_stacks()
                                                       if k != "default"}
        if ds:
            out[r.dist] = sorted(ds)
    return out


def _relevant_devices(recs, ops_filter, installed) -> set:
    """The device types the ops a run checks have kernels for: those of the loaded plugins in
    ``recs``, only the ops in ``ops_filter`` when given. A device-independent kernel (key
    ``"default"``) runs on any device, so it makes each of ``installed`` (the devices loaded
    plugins provide) one the op would be checked on."""
    from tensorplay.testing.plugin_check import plugin_ops
    out = set()
    for r in recs:
        if r.status != "loaded":
            continue
        for op, devs in plugin_ops(r.dist):
            if ops_filter is not None and op.name not in ops_filter:
                continue
            keys = set(devs) if devs is not None else set(op.kernel_stacks())
            if "default" in keys:
                out |= set(installed)
            out |= keys - {"default"}
    return out


def _short_kernel(desc: str) -> str:
    """``"cpu: pkg.mod:fn (plugin dist)"`` -> ``"cpu: pkg.mod:fn"`` (the plugin is the row's
    group); kept whole in JSON and in failure messages."""
    return desc.rsplit(" (", 1)[0] if desc.endswith(")") else desc


def _cmd_check(args) -> int:
    from tensorplay import plugins
    from tensorplay.errors import PluginError
    from tensorplay.testing.opcheck import ALL_TESTS
    from tensorplay.testing.plugin_check import check_plugin, plugin_ops

    tests = [t.strip() for t in args.test_utils.split(",") if t.strip()] \
        if args.test_utils != "DEFAULT" else ["DEFAULT"]
    bad = [t for t in tests if t != "DEFAULT" and t not in ALL_TESTS]
    if bad:
        _err(f"tensorplay check: unknown check(s) {', '.join(bad)}; valid: "
             f"{', '.join(ALL_TESTS)}")
        return 2
    recs = plugins.records()
    plugin_failures = []
    if args.plugin:
        chosen = []
        for want in args.plugin:
            hit = [r for r in recs if _norm(want) in (_norm(r.name), _norm(r.dist))]
            if not hit:
                names = ", ".join(f"{r.dist} ({r.name})" for r in recs) or "none"
                _err(f"tensorplay check: no installed plugin named {want} (installed: {names})")
                return 2      # an unknown name the user typed: a usage error
            chosen.extend(h for h in hit if h not in chosen)
        recs = chosen
    else:
        # every op pack: plugins that define ops or register kernels (a device plugin's built-in
        # ops are checked when it is named with --plugin)
        recs = [r for r in recs if r.status != "loaded" or r.ops or r.kernels]

    if args.device:
        # only the devices asked for are loaded: ``--device cpu`` does not import the cuda
        # plugin's CuPy (seconds) to learn that there is no GPU
        chosen = []
        for d in args.device:
            t = d.partition(":")[0].lower()
            ok, why = plugins.device_status(t)
            if not ok:
                devices = plugins.available_devices()     # named in the error
                prov = _provider(t)
                if prov is not None:
                    _err(f"tensorplay check: {_unavailable_line(t, prov, why)} Available here: "
                         f"{', '.join(devices) or 'none'}.")
                    return 1
                # the reason is a whole sentence that already names the device ("device 'tpu'
                # is not available. No installed plugin provides ..."): say it once
                why = " ".join((why or "").split()).rstrip(".")
                if not why.startswith("device "):
                    why = f"device {d!r} is not available: {why or 'no plugin provides it'}"
                _err(f"tensorplay check: {why}{'' if why.endswith(('?', '!')) else '.'} "
                     f"Available here: {', '.join(devices) or 'none'}.")
                # no plugin, loaded or not, provides it: an unknown name (usage error); one
                # that failed to load or was blocked is a failure of this environment
                return 1 if _failed_note(t) else 2
            chosen.append(d)
        devices = chosen
    else:
        devices = plugins.available_devices()

    ops_filter = None
    if args.ops:
        known = {}
        for r in recs:
            if r.status == "loaded":
                try:
                    for op, _ in plugin_ops(r.dist):    # the engine's selection
                        known.setdefault(op.name, op)
                except PluginError:
                    pass
        ops_filter = []
        for want in args.ops:
            hits = [n for n, o in known.items() if want in (n, o.opname)]
            if not hits:
                avail = ", ".join(sorted(known)) or "none"
                # a plugin that failed to load has no ops: its error is the real answer
                broken = [f"plugin {r.dist} {r.version} ({r.name}) {r.status}: "
                          f"{type(r.error).__name__}: {str(r.error).rstrip().rstrip('.')}"
                          for r in recs if r.status != "loaded" and r.error is not None]
                note = (f"; {'; '.join(broken)}. Fix the plugin so that it loads, then check "
                        f"again") if broken else ""
                # plugins the controls left out may be the ones that ship it
                left_out = [_not_loaded(r) for r in recs if r.status == "blocked"]
                note += f"; {'; '.join(left_out)}" if left_out else ""
                _err(f"tensorplay check: no plugin op named {want!r} (plugin ops: {avail})"
                     f"{note}")
                # unknown name: usage error (2); a plugin that failed to load or was left out
                # (which may ship it): a failure of this environment (1)
                return 1 if (broken or left_out) else 2
            ops_filter.extend(h for h in hits if h not in ops_filter)

    results = []
    n_jobs = [0]
    # on a terminal: one line rewritten in place, "[12/94] ns::op cpu", over the (op, device,
    # kernel) cases of every selected plugin and device; elsewhere (logs, CI): a line per sample
    live = not args.quiet and sys.stderr.isatty()
    total = _count_cases(recs, devices if args.device else [None], ops_filter) if live else 0
    seen: dict = {}

    def progress(r):
        if r.device_unavailable:      # said once per device below, never once per op
            return
        n_jobs[0] += 1
        if args.quiet:
            return
        verdict = {"passed": "ok", "failed": "FAIL", "error": "ERROR",
                   "skipped": "n/a"}[r.status]
        if live:
            seen.setdefault((r.plugin, r.op, r.device, r.kernel), len(seen) + 1)
            line = f"[{len(seen)}/{max(total, len(seen))}] {r.op} {r.device}"
            if r.status in ("failed", "error"):
                sys.stderr.write(f"\r\033[K{line} [{r.sample or '-'}]: {verdict}\n")
            sys.stderr.write(f"\r\033[K{line}")
            sys.stderr.flush()
            return
        extra = f": {r.message.splitlines()[0]}" if r.status == "skipped" and r.message else ""
        _err(f"[{n_jobs[0]}] {r.op} on {r.device} ({_short_kernel(r.kernel) or '-'}) "
             f"[{r.sample or '-'}]: {verdict}{extra} ({r.seconds * 1e3:.0f} ms)")

    t_all = time.perf_counter()
    left_out = []
    # kernels run in this process (-j 1, and the command's own work): what they print goes to
    # stderr while the check runs, so `--json -` leaves stdout to the report alone
    with _stdout_to_stderr(args.json_path == "-"):
        for r in recs:
            if r.status in ("failed", "incompatible"):
                plugin_failures.append(f"plugin {r.dist} {r.version} ({r.name}) {r.status}: "
                                       f"{type(r.error).__name__}: {r.error}")
                continue
            if r.status == "blocked":
                # asked for by name: not checking it is a failure; otherwise the user left it out
                (plugin_failures if args.plugin else left_out).append(_not_loaded(r))
                continue
            if r.status != "loaded":
                continue
            for dev in (devices if args.device else [None]):
                try:
                    results.extend(check_plugin(r.dist, dev, ops=ops_filter, test_utils=tests,
                                                atol=args.atol, rtol=args.rtol, progress=progress,
                                                jobs=args.jobs, timeout=args.timeout))
                except PluginError as e:
                    plugin_failures.append(str(e))
    total_ms = (time.perf_counter() - t_all) * 1e3
    if live:
        sys.stderr.write("\r\033[K")      # the progress line goes; the tables follow
        sys.stderr.flush()
    rows, failures, unchecked = _rows(results)
    # a sample whose check ran and failed, raised or timed out counts as checked (it was, and
    # failed); one whose op's samples were never made (``sample`` empty) does not
    n_checked = sum(1 for x in results if x.status in ("passed", "failed")
                    or (x.status == "error" and x.sample))
    n_timed_out = sum(1 for x in results if x.timed_out)
    # devices that cannot be checked here: one line each (plugin, reason and fix), however many
    # ops have kernels for them; never counted as checked
    unavailable = {}
    for x in results:
        if x.device_unavailable:
            t = x.device.partition(":")[0]
            u = unavailable.setdefault(t, {"plugin": _provider(t), "reason": x.message,
                                           "ops": set()})
            u["ops"].add(x.op)
    from tensorplay._devices import failed_provider
    if not args.device:
        installed = {d for x in plugins.list_plugins() if x["status"] == "loaded"
                     for d in x["devices"]}
        # only devices the selected ops have kernels for (a cpu plugin's check says nothing
        # about cuda; a device-independent kernel would run on each), the same set whether the
        # ops were named or their plugin; the engine reports a device only for ops that had no
        # other one, so kernels for a device whose plugin is unavailable, blocked or broken are
        # said here even when another device checked those ops
        relevant = _relevant_devices(recs, ops_filter, installed)
        for d in sorted(relevant - set(devices)):
            if d not in unavailable and (d in installed or failed_provider(d) is not None):
                unavailable[d] = {"plugin": _provider(d), "reason": plugins.device_status(d)[1],
                                  "ops": set()}
    # a device whose provider was left out by --plugins/--disable-plugins: said once, on that
    # plugin's "was not loaded" line (with the flag that loads it), not twice
    for d in list(unavailable):
        rec = failed_provider(d) if unavailable[d]["plugin"] is None else None
        if rec is not None and rec.status == "blocked":
            mine = [i for i, line in enumerate(left_out) if line == _not_loaded(rec)]
            if mine:
                unavailable[d]["said"] = True
                n = len(unavailable[d]["ops"])
                left_out[mine[0]] += (f" (it provides device {d}, not checked"
                                      + (f": {n} op(s)" if n else "") + ")")
    for d, u in sorted((d, u) for d, u in unavailable.items() if not u.get("said")):
        n = len(u["ops"])
        unchecked.insert(0, _unavailable_line(d, u["plugin"], u["reason"])
                         + (f" Not checked there: {n} op(s)." if n else ""))
    n_said = sum(1 for u in unavailable.values() if not u.get("said"))
    unchecked[n_said:n_said] = left_out
    out = sys.stderr if args.json_path == "-" else sys.stdout
    shown = [r for r in rows if r["note"] != "device unavailable"]
    for plugin in dict.fromkeys(r["plugin"] for r in shown):
        mine = [r for r in shown if r["plugin"] == plugin]
        devs = sorted({r["device"] for r in mine})
        one = len(devs) == 1
        # one row per kernel: the op, and under it the kernel that ran (dispatch key,
        # module:function); the device is in the title when there is only one
        _print_table(f"tensorplay check: {plugin}" + (f" on {devs[0]}" if one else ""),
                     ["op / kernel"] + ([] if one else ["device"]) + ["samples"]
                     + [c for _, c in _CHECK_COLUMNS],
                     [[f"{r['op']}\n  {_short_kernel(r['kernel']) or '-'}"]
                      + ([] if one else [r["device"]])
                      + [r["samples"] or r["note"] or "0"]
                      + [_MARK[r["checks"][t]] for t, _ in _CHECK_COLUMNS]
                      for r in mine], out=out)
        print("", file=out)
    if plugin_failures or failures:
        print("Failures:", file=out)
        for f in plugin_failures + failures:
            print(f"- {f}", file=out)
    if unchecked:
        print("\nNot checked:", file=out)
        for u in unchecked:
            print(f"- {u}", file=out)
    nothing = n_checked == 0
    if nothing:
        why = []
        blocked = [r for r in recs if r.status == "blocked"]
        if not devices:
            why.append(_no_device_reason(recs))
        ran = [x for x in results if not x.device_unavailable]
        if unavailable and results and not ran:
            why.append("; ".join(f"device {d}" + (f" (plugin {u['plugin']})" if u["plugin"]
                                                   else "") + " is unavailable (reason above)"
                                 for d, u in sorted(unavailable.items()) if u["ops"]))
        elif not results and blocked:
            why.append(f"no loaded plugin ships operators; installed plugin(s) "
                       f"{', '.join(r.dist for r in blocked)} were not loaded (see above for "
                       f"how to load them)")
        elif not results and args.device and _devices_of(recs):
            # --device picked a device none of the chosen plugins' ops has a kernel for
            have = _devices_of(recs)
            alt = " or ".join(f"--device {d}" for d in sorted({d for v in have.values()
                                                               for d in v}))
            why.append("; ".join(f"plugin {dist} has kernels for {', '.join(ds)}, none for "
                                 f"{', '.join(args.device)}" for dist, ds in have.items())
                       + f" (use {alt}, or drop --device)")
        elif not results and args.plugin and not args.ops and not args.device and \
                all(r.status == "loaded" for r in recs):
            why.append("; ".join(f"{r.dist} ships no operators" for r in recs)
                       + " (nothing to check; `tensorplay plugins` lists what each plugin "
                         "provides)")
        elif not results:
            why.append("no installed plugin ships operators" + (
                " matching the filters" if (args.plugin or args.ops) else
                " (pip install an op pack, e.g. tensorplay-example-ops)"))
        elif devices:
            unmade = sorted({x.op for x in results if x.status == "error" and not x.sample})
            why.append(f"the sample inputs of {', '.join(unmade)} could not be made (see "
                       f"Failures above)" if unmade else
                       "no op had a kernel and sample inputs on the selected devices")
        _err(f"\ntensorplay check: nothing was checked: {'; '.join(why)}.")
    n_fail = len(plugin_failures) + len(failures)
    n_ops = len({x.op for x in results})
    # kernel rows counted on the device each belongs to (an unavailable one says so)
    per_dev: dict = {}
    for r in rows:
        per_dev[r["device"]] = per_dev.get(r["device"], 0) + 1
    where = ", ".join(f"{n} on {d}" + (" (unavailable: not checked)"
                                       if d.partition(":")[0] in unavailable else "")
                      for d, n in per_dev.items()) or \
        f"0 on {', '.join(devices) or 'no device'}"
    slow = _slowest(results)
    if slow:
        print("\nSlowest samples:", file=out)
        for line in slow:
            print(f"- {line}", file=out)
    print(f"\n{n_checked} sample(s) of {n_ops} op(s), {len(rows)} kernel row(s): {where}; "
          f"{n_fail} failure(s)" + (f" ({n_timed_out} sample(s) timed out)" if n_timed_out
                                     else "") + f" in {total_ms:.0f} ms", file=out)
    if args.json_path:
        _write_json({"ok": not (n_fail or nothing), "samples_checked": n_checked,
                     "devices": devices, "rows": rows, "samples": _sample_records(results),
                     "unavailable_devices": {d: {"plugin": u["plugin"], "reason": u["reason"],
                                                 "ops": sorted(u["ops"])}
                                             for d, u in sorted(unavailable.items())},
                     "failures": plugin_failures + failures, "not_checked": unchecked},
                    args.json_path)
    return 1 if (n_fail or nothing) else 0


def _count_cases(recs, devices, ops_filter) -> int:
    """How many (op, device, kernel) cases the run will check (the progress total)."""
    from tensorplay.testing.plugin_check import plugin_check_cases
    n = 0
    for r in recs:
        if r.status != "loaded":
            continue
        for dev in devices:
            try:
                n += len(plugin_check_cases(r.dist, dev, ops_filter))
            except Exception:   # noqa: BLE001 - the run itself reports it
                pass
    return n


#: how many of the slowest samples the footer names
_N_SLOWEST = 5


def _slowest(results) -> list:
    """Footer lines for the slowest samples: time, op, device, sample, and its slowest check."""
    ran = sorted((x for x in results if x.checks), key=lambda x: -x.seconds)[:_N_SLOWEST]
    # an op checked through several kernels on one device (e.g. its cpu kernel and its default
    # one) gets the kernel named, else its lines for one sample read the same
    kernels: dict = {}
    for x in results:
        kernels.setdefault((x.op, x.device), set()).add(x.kernel)
    out = []
    for x in ran:
        worst = max(x.check_seconds.items(), key=lambda kv: kv[1], default=None)
        most = f" (most in {worst[0]}: {worst[1] * 1e3:.0f} ms)" if worst else ""
        # the kernel's dispatch key ("cpu", "default"): its module path is in the table above
        which = (f", {str(x.kernel).split(':', 1)[0]} kernel"
                 if len(kernels[x.op, x.device]) > 1 else "")
        out.append(f"{x.seconds * 1e3:.0f} ms  {x.op} on {x.device}{which} "
                   f"[{x.sample or '-'}]{most}")
    return out


def _sample_records(results) -> list:
    """The JSON record of every sample run: status and each check's status and time."""
    return [{"plugin": x.plugin, "op": x.op, "device": x.device, "kernel": x.kernel,
             "sample": x.sample, "status": x.status, "ms": round(x.seconds * 1e3, 3),
             "checks": {t: {"status": st, "ms": round(x.check_seconds.get(t, 0.0) * 1e3, 3),
                            **({"note": x.notes[t]} if t in x.notes else {})}
                        for t, st in x.checks.items()}}
            for x in results if not x.device_unavailable]


def _rows(results):
    """One table row per (plugin, op, device, kernel) from ``PluginCheckResult``s, the failure
    lines (one per distinct message, naming its samples) and what could not be checked."""
    rows, grouped, unchecked = {}, {}, []
    for x in results:
        key = (x.plugin, x.op, x.device, x.kernel)
        row = rows.get(key)
        if row is None:
            row = rows[key] = {"plugin": x.plugin, "op": x.op, "device": x.device,
                               "kernel": x.kernel, "samples": 0,
                               "checks": {t: None for t, _ in _CHECK_COLUMNS}, "ms": 0.0,
                               "note": ""}
        row["ms"] += x.seconds * 1e3
        if x.device_unavailable:     # said once per device by the caller
            row["note"] = "device unavailable"
            continue
        if x.status == "skipped":
            row["note"] = "no samples" if "sample" in x.message else "not checked"
            unchecked.append(f"{x.op} on {x.device}: {x.message}")
            continue
        if x.status == "error":
            row["note"] = "error"
            row["checks"] = {t: "fail" for t, _ in _CHECK_COLUMNS}
            grouped.setdefault((x.op, x.device, x.kernel, x.message.splitlines()[0]),
                               []).append(x.sample or "-")
            continue
        row["samples"] += 1
        for t, sec in x.check_seconds.items():
            row.setdefault("check_ms", {}).setdefault(t, 0.0)
            row["check_ms"][t] += sec * 1e3
        for t, st in x.checks.items():
            cur = row["checks"].get(t)
            if st == "fail":
                row["checks"][t] = "fail"
            elif st == "pass" and cur != "fail":
                row["checks"][t] = "pass"
            elif st == "skip" and cur is None:
                row["checks"][t] = "skip"
        for t, msg in x.failures.items():
            grouped.setdefault((x.op, x.device, x.kernel, msg), []).append(x.sample or "-")
    failures = [f"{op} on {dev} [{'; '.join(labels)}]: {msg}"
                for (op, dev, _k, msg), labels in grouped.items()]
    return list(rows.values()), failures, unchecked


@contextlib.contextmanager
def _stdout_to_stderr(on: bool):
    """While the block runs (when ``on``), standard output -- Python's ``sys.stdout`` and file
    descriptor 1, which C libraries write to -- goes to standard error; restored afterwards."""
    if not on:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _write_json(data, path) -> None:
    """``path`` ``"-"``: stdout; else the file."""
    if path == "-":
        print(json.dumps(data, indent=2))
    else:
        with open(path, "w") as fh:
            json.dump(data, fh, indent=2)


if __name__ == "__main__":
    sys.exit(main())
