"""Generated Python source: the one place that turns generated text into functions.

Every code generator of the core (the dispatch ``__call__`` of each op, the autograd entries,
the kernel adapters of built-in ops, ``tensorplay.compile``'s guards, graphs and chains) writes
its function as text and hands it here with the namespace that text runs in.

The safety rule, kept by every generator: **data never becomes code.** The only text taken from
outside is identifiers -- schema argument names (checked by ``Argument``) and names the
generator makes up -- and Python literals whose ``repr`` is known (``None``, ``True``/``False``,
exact ``int``\\s, see ``literal``). Every other value (defaults, the op, its table, constants
captured from user code, dict keys, strings) is bound to a name in the namespace (``bind``) and
the text refers to that name. Generated functions get a stable file name
(``<tensorplay dispatch ns::op>``) whose source is registered with ``linecache``, so tracebacks
and ``inspect.getsource`` show the generated line.

Also here: the small renderers the generators share, from a schema's arguments to the text of a
signature and of a call (``py_names``, ``signature``, ``call_arg``, ``values``).
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import keyword
import linecache
import threading
import weakref

from ._schema import NO_DEFAULT

__all__ = ["function", "literal", "bind", "pyname", "py_names", "call_arg", "keyword_arg",
           "signature", "has_default_gap", "values", "indent"]

# The tables below change only under ``_lock``. A function's finalizer (``_release``) runs when
# the garbage collector frees it -- in any thread, and at any allocation or loop turn, including
# inside this module's own bookkeeping (``_busy`` > 0, in the thread holding the lock): it only
# queues the release (``_pending``), and the bookkeeping applies the queue when it is done, so
# no table changes under code that is reading it. Reentrant (RLock): code run by the collector
# there (a user's ``__del__``) may itself generate a function.
_lock = threading.RLock()
_busy = 0
_pending: collections.deque = collections.deque()
# file name -> {text: [number, functions alive]}: the texts generated under each name whose
# functions are alive, each with its number (its file name in linecache) and how many live
# functions were generated from it. Per name, so a name's entries go with its last function
# (one table shared by every name would be rebuilt by CPython as names come and go)
_live: dict = {}
# (file name, text) -> code object: the same text generated again under the same name (a graph
# captured anew, an op redefined with the same schema) is compiled once; code objects are
# immutable, each function still gets its own namespace. Bounded, oldest entry dropped first.
_codes: dict = {}
_CODES_MAX = 256


def function(src: str, ns: dict, name: str, filename: str):
    """Compile ``src`` (generated text defining function ``name``) in namespace ``ns`` and
    return the function.

    ``filename`` names the generator and what the code is for, e.g.
    ``"<tensorplay dispatch ns::op>"``. Functions generated under one name from the same text
    share that file name (and the compiled code: a graph recaptured for a new guarded value
    compiles nothing); one generated from a different text while another is alive (an op
    redefined with another schema, a graph captured with another body) gets
    ``"<... #2>"``, so each traceback line maps to its own text. The text is registered with
    ``linecache`` under that name while a function generated from it lives: it is removed when
    the last is collected (a closed ``Library``'s ops, graphs evicted from a compile cache,
    dropped compiled functions leave nothing behind), and its number is given to the next text
    of that name (CPython keeps every file name it compiled, so numbers only ever growing would
    leak too). Raises ``SyntaxError`` only on a generator bug (the text is built from
    identifiers and known literals).
    """
    base = filename
    with _tables():
        texts = _live.get(base)
        if texts is None:
            texts = _live[base] = {}
        entry = texts.get(src)
        if entry is None:
            used = {e[0] for e in texts.values()}
            n = 1
            while n in used:
                n += 1
            entry = texts[src] = [n, 0]
        entry[1] += 1
        n = entry[0]
    if n > 1:
        filename = f"{filename[:-1]} #{n}>" if filename.endswith(">") else f"{filename} #{n}"
    try:
        code = _codes.get((filename, src))
        if code is None:
            code = builtins.compile(src, filename, "exec")
            with _tables():
                if len(_codes) >= _CODES_MAX:
                    _codes.pop(next(iter(_codes)), None)
                _codes[(filename, src)] = code
        # (size, mtime None: never checked against a file, lines, name), as linecache.lazycache
        if filename not in linecache.cache:
            linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        exec(code, ns)  # noqa: S102 - identifiers and known literals only (module docstring)
        # taken out of its namespace (no generated text calls itself): without the cycle
        # function -> globals -> function, a dropped function is freed at once, not by the
        # cyclic collector much later
        fn = ns.pop(name)
        weakref.finalize(fn, _release, base, src, filename)
    except BaseException:
        _release(base, src, filename)
        raise
    _drain()
    return fn


@contextlib.contextmanager
def _tables():
    """The bookkeeping of the tables: under the lock, releases queued meanwhile applied at the
    end."""
    global _busy
    with _lock:
        _busy += 1
        try:
            yield
            _apply_pending()
        finally:
            _busy -= 1


def _release(base: str, src: str, filename: str) -> None:
    """A function generated from text ``src`` under ``base`` is gone (its finalizer): queue the
    release; apply the queue unless bookkeeping is under way (it applies it when done)."""
    _pending.append((base, src, filename))
    _drain()


def _drain() -> None:
    """Apply the queued releases if no bookkeeping is under way here or in another thread (a
    thread holding the lock applies them before it lets go)."""
    while _pending and _lock.acquire(blocking=False):
        try:
            if _busy:
                return
            with _tables():
                pass
        finally:
            _lock.release()


def _apply_pending() -> None:
    """In ``_tables()``: apply the queued releases. When the function released was the last
    one of its text, drop the text from ``linecache`` and free its number."""
    while _pending:
        base, src, filename = _pending.popleft()
        texts = _live.get(base)
        entry = texts.get(src) if texts is not None else None
        if entry is None:
            continue
        entry[1] -= 1
        if entry[1] > 0:
            continue
        del texts[src]
        linecache.cache.pop(filename, None)
        if not texts:
            del _live[base]


def literal(x):
    """The source text of ``x`` when its ``repr`` is a Python literal that reads back as the
    same value (``None``, bools, exact ints that floats represent exactly); else None (the value
    must then be bound by name, see ``bind``)."""
    t = type(x)
    if x is None or t is bool or (t is int and abs(x) < 2**53):
        return repr(x)
    return None


def bind(ns: dict, value, prefix: str = "__k") -> str:
    """Bind ``value`` to a fresh name ``<prefix><n>`` in ``ns`` and return the name."""
    k = f"{prefix}{len(ns)}"
    while k in ns:
        k += "_"
    ns[k] = value
    return k


def pyname(name: str) -> str:
    """The Python name of one schema argument taken alone (``from`` -> ``from_``, ``__x`` ->
    ``__x_``). Use ``py_names`` for a whole argument list (collision-free)."""
    return name + "_" if keyword.iskeyword(name) or name.startswith("__") else name


def py_names(arguments) -> list:
    """The Python parameter name of each schema argument in generated code: the schema name,
    or for a Python keyword (``from``) or a ``__`` name (which could clash with the generated
    code's own ``__`` locals) the name plus ``_`` -- plus more ``_`` until it differs from every
    other argument's name (``(Tensor from, Tensor from_)`` gets ``from__`` and ``from_``)."""
    taken = {a.name for a in arguments}
    out = []
    for a in arguments:
        n = a.name
        if keyword.iskeyword(n) or n.startswith("__"):
            n += "_"
            while n in taken:
                n += "_"
            taken.add(n)
        out.append(n)
    return out


def call_arg(a, pyname: str, value: str | None = None) -> str:
    """Source text passing schema argument ``a`` (held in local ``pyname``; or the expression
    ``value``) to a callee with the schema's signature: positionally, or by keyword for
    keyword-only arguments (``**{'from': from_}`` when the name is a Python keyword, since
    ``from=...`` is not valid syntax). Schema names are identifiers (``[A-Za-z_][A-Za-z0-9_]*``,
    checked by ``Argument``), so their repr is a plain literal."""
    v = pyname if value is None else value
    if not a.kwarg_only:
        return v
    if not a.name.isidentifier():   # refused by Argument; never pasted as text
        raise ValueError(f"argument name {a.name!r} is not an identifier")
    if keyword.iskeyword(a.name):
        return f"**{{{a.name!r}: {v}}}"
    return f"{a.name}={v}"


def keyword_arg(name, value_src: str, bind_value) -> str:
    """Keyword argument ``name=value`` in generated source for a name that is *data* (a
    captured call's keyword): a plain identifier is written as such; any other name (a Python
    keyword such as ``from``, a non-identifier) is bound by the generator's ``bind_value(name)``
    (which returns the bound name) and passed as ``**{<bound name>: value}``."""
    if type(name) is str and name.isidentifier() and not keyword.iskeyword(name):
        return f"{name}={value_src}"
    return f"**{{{bind_value(name)}: {value_src}}}"


def has_default_gap(arguments) -> bool:
    """True when a positional argument without a default follows one with a default
    (``(Tensor? x=None, Tensor y)``: valid schema, not a valid Python signature as is)."""
    seen = False
    for a in arguments:
        if a.kwarg_only:
            break
        if a.default is not NO_DEFAULT:
            seen = True
        elif seen:
            return True
    return False


def signature(arguments, names, ns: dict, unset: str = "__unset"):
    """The parameter list of a generated function with the schema's signature.

    ``names`` are the Python names (``py_names``). Defaults are bound in ``ns`` as ``__d<i>``
    (``<i>``: the argument's index). Two schema forms have no Python signature as written; those
    parameters get the default ``unset`` (a name the caller binds) and are reported:
    ``required`` -- (index, schema name, pyname) of positional arguments without a default after
    one with a default, and of keyword-only ones under another name without a default (the
    caller must check they were supplied); ``renamed`` -- (index, schema name, pyname) of
    keyword-only arguments whose Python name differs from the schema name (``class`` held as
    ``class_``: callers pass ``**{"class": v}``, which the generated function must take from
    ``**kwargs``). Returns ``(params, required, renamed)``; ``params`` includes the ``*``.
    """
    params, required, renamed = [], [], []
    kw_started = seen_default = False
    for i, a in enumerate(arguments):
        n = names[i]
        if a.kwarg_only and not kw_started:
            params.append("*")
            kw_started = True
        has_default = a.default is not NO_DEFAULT
        if a.kwarg_only and n != a.name:
            renamed.append((i, a.name, n))
            params.append(f"{n}={unset}")
            if has_default:
                ns[f"__d{i}"] = a.default
            else:
                required.append((i, a.name, n))
        elif has_default:
            ns[f"__d{i}"] = a.default
            params.append(f"{n}=__d{i}")
            seen_default = seen_default or not a.kwarg_only
        elif seen_default and not a.kwarg_only:
            params.append(f"{n}={unset}")
            required.append((i, a.name, n))
        else:
            params.append(n)
    return params, required, renamed


def values(names) -> str:
    """The text of a tuple of the locals ``names``: ``(a, b, )``."""
    return "(" + "".join(f"{n}, " for n in names) + ")"


def indent(lines, by: str = "    ") -> list:
    """``lines`` (each possibly several lines of text) indented by ``by``."""
    return [by + ln.replace("\n", "\n" + by) for ln in lines]
