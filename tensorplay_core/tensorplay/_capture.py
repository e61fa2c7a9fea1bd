"""Graph capture for ``tensorplay.compile``: the graph IR and the tracer.

``tensorplay.compile`` runs the user's function once on *capture tensors*: fake tensors (shape,
dtype, device, strides, no data) whose ``_capture`` slot holds the graph ``Value`` they stand for,
so their dispatch key is ``"capture"``. Every operator call on them therefore lands in
``record_call`` (the ``capture`` entry of each op's dispatch table), which

* computes the output metadata with the op's fake entry (``op.table["meta"]``: the registered
  fake for custom ops, the shape rule for built-ins) on plain fake copies of the arguments --
  a custom op's body is never run, it becomes one *opaque* node;
* appends a ``Node`` to the graph and returns new capture tensors for the outputs.

Factories called with no tensor argument reach ``record_call`` too: while capturing,
``_dispatch._state.mode`` is ``"capture"`` (in the capturing thread only). Data-dependent Python
(``if t.sum() > 0``, ``.item()``, ``int(t)``, ``.tolist()``...) raises ``DataDependentGraphBreak``
naming the construct the user wrote (``CaptureTensor``): ``compile`` then runs the function
eagerly, or raises it with ``fullgraph=True``. Errors the same code raises eagerly are raised with
eager's type and message (``record_call``); ``CompileError`` is kept for what only a capture can
fail on. Reading a size as a Python value (``x.shape[0]``,
``x.size(1)``, ``x.numel()``, iterating a shape...) marks the graph *size dependent*: sizes of
capture tensors are ``SizeTuple`` objects that report element reads (their length, the rank, is
guarded anyway and reading it is free).

The graph is plain data (``Graph``, ``Node``, ``Value``); ``tensorplay.compile`` caches it under
guards, plans fusion (``_fusion``) and generates the Python function that replays it through
normal dispatch.
"""

from __future__ import annotations

import contextlib
import re
import threading
from weakref import ref as _weakref

from . import _dispatch, _pytree
from ._tensor import Tensor
from ._tensor_base import (
    TensorBase,
    new_fake,
    row_major,
    set_capture,
    set_layout,
    set_requires_grad,
)
from .autograd import grad_mode as _gm
from .errors import CompileError, DataDependentGraphBreak, DispatchError, GraphBreak
from .fake import DYNAMIC_SIZE_BASE, BodyReadsData, make_fake, reads_data

__all__ = [
    "CaptureTensor",
    "CapturedGradFn",
    "Graph",
    "Node",
    "SizeTuple",
    "Value",
    "active",
    "capture",
    "record_call",
]

class _CaptureState(threading.local):
    """The captures in progress in the calling thread (innermost last): capture is per thread,
    another thread keeps running eagerly. Capture is not re-entrant: a compiled function called
    while another one captures is inlined (see compile.py)."""

    def __init__(self):
        self.active: list = []
        # ``tensorplay.compiler.disable``: while ``run_logged`` runs a function eagerly, the
        # outputs of each disabled call it makes (its own calls, not those nested in a disabled
        # call: ``log_depth``) are described here for the capture that follows
        self.log = None
        self.log_depth = 0


_state = _CaptureState()


def active():
    """The ``_Capture`` in progress in the calling thread, or None."""
    a = _state.active
    return a[-1] if a else None


# ---------------------------------------------------------------------------------------------
# IR

class Value:
    """One value of the graph: a graph input, a node output, or a constant tensor.

    ``kind`` is ``"input"``, ``"node"`` or ``"const"``; ``fake`` a fake tensor with the value's
    metadata at capture time; ``const`` the real tensor of a ``"const"`` value (a tensor the
    function closes over); ``requires_grad`` as seen during capture; ``history`` what eager's
    ``grad_fn`` would be: None for a leaf, else the index of the ``Node`` whose autograd node
    made it (-1: an input or constant that is not a leaf; plain ints, no reference cycle);
    ``root`` the value whose storage this view shares, for views made inside the capture (an
    in-place op with history on a view gives its base history too, as eager).
    """

    __slots__ = ("_graph", "const", "fake", "history", "id", "kind", "name", "requires_grad",
                 "root")

    def __init__(self, graph, kind, fake, const=None, requires_grad=False, history=None):
        # weakly: the graph holds its values, so a strong back-reference made every graph a
        # cycle that only the cyclic collector freed -- evicted graphs (their constants, their
        # generated code, on a GPU device memory) outlived the cache until it ran
        self._graph = _weakref(graph)
        self.kind = kind
        self.fake = fake
        self.const = const
        self.requires_grad = requires_grad
        self.history = history
        self.root = None
        if kind == "const":
            self.id = len(graph.consts)
            self.name = f"%c{self.id}"
            graph.consts.append(self)
        else:
            self.id = graph._next_id
            graph._next_id += 1
            self.name = f"%{self.id}"

    @property
    def graph(self):
        """The graph this value belongs to (None once that graph is gone)."""
        return self._graph()

    def __repr__(self):
        return self.name

    def record_multi_output(self, outs, name) -> None:
        """``record_multi_output(outs, name)``, reached through an output's ``capture_info``: the
        op layer (``_ops.views``) sits below this module and must not import it."""
        record_multi_output(outs, name)

    def describe(self) -> str:
        f = self.fake
        return f"{_short_dtype(f.dtype)}[{', '.join(map(str, f.shape))}] {f.device}" + \
            (" requires_grad" if self.requires_grad else "")


class Node:
    """One call in the graph.

    ``kind``: ``"op"`` (an operator call: ``op(*args, **kwargs)``), ``"disabled"`` (a call of
    a ``tensorplay.compiler.disable``d function, ``op`` its wrapper: run eagerly, opaque, a
    barrier; see ``record_disabled``), ``"requires_grad_"``,
    ``"detach"``, ``"data"``, ``"detach_"``, ``"retain_grad"`` (tensor methods that change
    autograd state without an op), ``"multi_output"`` (``args``: a tuple of values and the name
    of the function that returned them as views, ``record_multi_output``). ``args``/``kwargs`` hold ``Value`` objects where tensors were passed (also
    inside lists/tuples) and plain Python values otherwise. ``result`` is the structure the call
    returned with ``Value``s for tensors; ``outputs`` the new values it produced. ``grad_enabled``
    is the grad mode the call ran under; ``version`` the op's version at capture. ``fake_run``
    (custom ops): ``(inputs, outputs)``, the metadata (``fake_metadata``) of the tensors the
    capture's fake run was given and returned, so that the graph's first run can check the real
    outputs without running the fake kernel again for inputs of the same metadata.
    """

    __slots__ = (
        "args",
        "fake_run",
        "fused",
        "grad_enabled",
        "index",
        "kind",
        "kwargs",
        "op",
        "outputs",
        "result",
        "version",
    )

    def __init__(self, index, kind, op, args, kwargs, grad_enabled):
        self.index = index
        self.kind = kind
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self.result = None
        self.outputs = []
        self.grad_enabled = grad_enabled
        self.version = getattr(op, "version", None)
        self.fused = None      # fusion group number, set by _fusion.plan
        self.fake_run = None

    @property
    def is_barrier(self) -> bool:
        """True for calls that mutate an argument (declared ``mutates_args``): nothing is fused
        or moved across them."""
        return self.kind == "op" and bool(self.op.mutates_args) or self.kind == "detach_" \
            or self.kind == "disabled"

    @property
    def target(self) -> str:
        if self.kind == "disabled":
            return f"disabled {_fn_name(self.op)}"
        return self.op.name if self.kind == "op" else f"Tensor.{self.kind}"

    def inputs(self) -> list:
        """Every ``Value`` read by the call (in argument order)."""
        out = []
        _collect_values(self.args, out)
        _collect_values(tuple(self.kwargs.values()), out)
        return out

    def format(self) -> str:
        args = [_fmt(a) for a in self.args] + [f"{k}={_fmt(v)}" for k, v in self.kwargs.items()]
        call = f"{self.target}({', '.join(args)})"
        res = self.result
        if res is None:
            line = call
        elif isinstance(res, Value):
            line = f"{res.name} = {call}"
        else:   # an unpacking target: a plain tuple even when the op returns a named tuple
            line = f"{_fmt(tuple(res) if isinstance(res, tuple) else res)} = {call}"
        notes = []
        if self.kind == "op" and not self.op.is_builtin:
            notes.append("opaque" + (" triton_op" if getattr(self.op, "is_triton", False) else ""))
        if self.kind == "disabled":
            notes.append("runs eagerly (tensorplay.compiler.disable); barrier")
        if self.is_barrier and self.kind == "op":
            notes.append(f"barrier: mutates {', '.join(self.op.mutates_args)}")
        if self.fused is not None:
            notes.append(f"fused group {self.fused}")
        if not self.grad_enabled:
            notes.append("no_grad")
        return line + (f"  # {'; '.join(notes)}" if notes else "")


class Graph:
    """A captured function: inputs, nodes in program order, output structure.

    ``str(graph)`` prints a header with the inputs, one line per node
    (``%3 = tp::mul(%1, %2)``) and the return line. ``size_dependent`` is True when the captured
    code read a size as a Python value (the graph is then guarded on exact sizes).
    """

    def __init__(self, name: str = "fn"):
        self.name = name
        self.inputs: list = []
        self.nodes: list = []
        self.consts: list = []
        self.output = None
        self.size_dependent = False
        self.entry_grad = _gm._state.enabled   # grad mode when the capture started
        self.exit_grad = self.entry_grad       # grad mode the function left set when it returned
        # the captured code read autograd metadata (``requires_grad``; ``is_leaf``/``grad_fn``):
        # the answer depends on constants' requires_grad (and, for is_leaf/grad_fn, on whether
        # inputs and constants are leaves), which the guard key does not hold: guarded then
        self.reads_requires_grad = False
        self.reads_history = False
        self._next_id = 0
        self.groups: list = []      # fusion groups (see _fusion.plan)
        # the real tensors (graph constants: closures, globals, attributes) whose values the
        # captured code read as Python values -- ``int(t)``, ``t.item()``, a dim, a size, a
        # slice bound: ``(tensor, storage, version, value bytes or None)`` each; ``compile``
        # guards the graph on them (``_note_data_read``)
        self.data_reads: list = []

    def custom_ops(self) -> list:
        """(op, version) of each distinct non-built-in op called by the graph."""
        seen = {}
        for n in self.nodes:
            if n.kind == "op" and not n.op.is_builtin:
                seen.setdefault(id(n.op), (n.op, n.version))
        return list(seen.values())

    def __str__(self) -> str:
        head = ", ".join(f"{v.name}: {v.describe()}" for v in self.inputs)
        lines = [f"graph {self.name}({head}):"]
        for c in self.consts:
            lines.append(f"    {c.name} = constant {c.describe()}")
        for n in self.nodes:
            lines.append("    " + n.format())
        lines.append(f"    return {_fmt(self.output)}")
        why = "a disabled call's outputs were seen for these sizes" \
            if any(n.kind == "disabled" for n in self.nodes) else "the code reads sizes"
        lines.append(f"    # sizes: {f'guarded ({why})' if self.size_dependent else 'dynamic'}"
                     f"; {len(self.nodes)} nodes, {len(self.groups)} fused groups")
        return "\n".join(lines)

    __repr__ = __str__


def _short_dtype(dt) -> str:
    n = dt.name
    return {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
            "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "uint32": "u32",
            "bool": "b8"}.get(n, n)


def _fmt(x) -> str:
    if isinstance(x, Value):
        return x.name
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        # a named tuple (``tensorplay.return_types.max``): printed as its repr is, by field
        t = type(x)
        return (f"{t.__module__}.{t.__qualname__}("
                + ", ".join(f"{k}={_fmt(v)}" for k, v in zip(t._fields, x)) + ")")
    if isinstance(x, list):
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    if isinstance(x, tuple):
        return "(" + ", ".join(_fmt(v) for v in x) + ("," if len(x) == 1 else "") + ")"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt(v)}" for k, v in x.items()) + "}"
    return repr(x)


def _fake_failure(op, err) -> tuple[bool, str]:
    """``(refusal, hint)`` for a failed fake run of custom op ``op`` that raised ``err``.

    ``refusal`` is True when ``err`` is about the call's inputs, not about fake tensors: the
    op's own kernel, run as its fake (no ``register_fake``), raised an error that does not
    mention fake tensors (a call outside tensorplay.compile raises it too); or the registered
    fake kernel refused the inputs with a ``TypeError``/``ValueError``/``IndexError`` (most fake
    kernels raise these on purpose, as their kernels do). The capture then re-raises ``err``
    itself, with ``hint`` as a note. Otherwise the fake kernel is missing or wrong (it read data,
    or raised something else): ``CompileError`` with ``hint`` saying how to fix it.
    """
    # the op's qualified name says nothing about fake tensors ("mylib::nofake: n too large");
    # a kernel run as its fake that reads ``t.native`` (None on fake tensors) fails on None
    msg = str(err).lower().replace(op.name.lower(), "")
    about_fakes = reads_data(op, err)
    if not op.has_fake and not about_fakes:
        return True, (f"{op.name} has no fake kernel (no register_fake), so its kernel, run as "
                      f"its fake, raised {type(err).__name__}: an error of the kernel itself, not "
                      f"about fake tensors (a call outside tensorplay.compile likely raises it "
                      f"too). Fix the kernel or its arguments.")
    if op.has_fake and isinstance(err, (TypeError, ValueError, IndexError)) \
            and not about_fakes and "item()" not in msg:
        return True, (f"The fake kernel of {op.name} refused these inputs: fix the call's "
                      f"arguments (a call outside tensorplay.compile refuses them too when the "
                      f"op's kernels check what its fake checks). If the inputs are valid, the "
                      f"fake kernel is wrong: it must only use metadata (shapes, dtypes, "
                      f"devices); check it with tensorplay.library.opcheck.")
    if op.has_fake:
        return False, (f" The fake kernel of {op.name} failed on fake tensors; fix it (it must "
                       f"only use metadata: shapes, dtypes, devices) and check it with "
                       f"tensorplay.library.opcheck.")
    return False, (f" {op.name} has no fake kernel (no register_fake), so its kernel was run as "
                   f"its fake and failed on fake tensors (they have shapes, dtypes and devices "
                   f"but no data). Register one that only uses metadata: "
                   f"@tensorplay.library.register_fake({op.name!r}) (or "
                   f"@{op.opname}.register_fake on the custom_op), and check it with "
                   f"tensorplay.library.opcheck.")


def _add_note(err, note: str) -> None:
    """``err.add_note(note)`` (Python 3.11+: shown under the traceback); on 3.10 the note is
    kept in ``__notes__`` all the same."""
    add = getattr(err, "add_note", None)
    if add is not None:
        add(note)
        return
    try:
        notes = err.__dict__.setdefault("__notes__", [])
    except AttributeError:      # an exception without a __dict__: no note
        return
    notes.append(note)


def _collect_values(x, out):
    _pytree.tree_leaves(x, Value, out)


# ---------------------------------------------------------------------------------------------
# graph constants whose values the capture reads

_SNAPSHOT_MAX = 1 << 16     # elements: a larger constant is guarded on its version only


def value_bytes(t):
    """The values of real tensor ``t`` as bytes (logical order), or None when it is too large
    to keep a copy of (or its backend cannot give one)."""
    try:
        if t.numel() > _SNAPSHOT_MAX:
            return None
        return t.backend.to_host(t.native).tobytes()
    except Exception:  # noqa: BLE001 - an exotic backend or dtype: the version alone then
        return None


def _note_data_read(t) -> None:
    """``Tensor._need_data`` passed on real tensor ``t`` while a capture runs: when a capture
    is active in this thread, ``t`` is a graph constant (a tensor the function reads from a
    closure, a global, an attribute: the inputs are capture tensors) whose values the code read
    as Python values (``int(t)``, ``t.item()``, ``t.tolist()``, a dim, a size or a slice bound:
    in the function, in a Tensor method, or in an op's shape rule, ``record_call``). The
    graph bakes what was read, so it is guarded on them (``compile._data_guard``): its
    identity, version and values, as torch.compile specializes on such values and guards."""
    c = active()
    if c is None or id(t) in c.data_reads:
        return
    st = t.storage_ref
    c.data_reads[id(t)] = (t, st, st.version, value_bytes(t))
    c.keep.append(t)


_hook_lock = threading.Lock()
_hook_users = [0]           # captures in progress, all threads
_tensor_module = [None]     # tensorplay._tensor, once imported (``_hook``)


def _hook(on: bool) -> None:
    """Install ``_note_data_read`` as ``_tensor.data_read_hook`` while a capture is in
    progress in any thread (None otherwise: eager ``item()`` pays one global read). The hook
    itself ignores the threads that are not capturing (``active()``)."""
    t = _tensor_module[0]
    if t is None:        # (imported on first use: _tensor imports this module)
        from . import _tensor as t
        _tensor_module[0] = t
    with _hook_lock:
        _hook_users[0] += 1 if on else -1
        t.data_read_hook = _note_data_read if _hook_users[0] > 0 else None


# ---------------------------------------------------------------------------------------------
# lifted tensors: ops on real tensors the function reaches (globals, closures, ``self``)

_lift_lock = threading.Lock()
_lift_users = [0]           # captures in progress, all threads
_lifted: list = []          # (table, key, installed entry, original or None) while installed
# [registry signature, [(weak reference to the op, key)]]: the slots _lift swaps. Weak, and the
# lifting entries are made anew per capture (about 0.1 ms): nothing here keeps a closed
# Library's ops (and their generated code) alive
_lift_plan: list = [None, []]
_LIFT_SKIP = frozenset(("meta", "capture", "default"))


def _lifting_entry(op, real):
    """The entry put in ``op.table`` under a device or ``autograd`` key while a capture runs:
    in the capturing thread the call is recorded (``op.table["capture"]``), its real tensors
    becoming graph constants used by reference (lifted inputs, ``_Capture.value_of``); other
    threads run ``real``, the entry it replaced."""
    cap = op.table["capture"]
    st = _state
    mst = _dispatch._state

    def entry(*args, **kwargs):
        # (the capture's own machinery runs shape rules under the "meta" mode: an op one
        # calls on a real constant, ``c < 0`` on an index, runs as eagerly)
        if st.active and mst.mode == "capture":
            return cap(*args, **kwargs)
        return real(*args, **kwargs)
    return entry


def _lift(on: bool) -> None:
    """While a capture is in progress in any thread, every op call whose tensors are all real
    (no capture tensor: ``W.sum()``, ``buf.add_(x)``'s follow-up ``buf * 1``, ``self.b * 2``)
    would dispatch to its device or autograd kernel and run once, its result baked into the
    graph as a constant: a value computed from a tensor the function reads from a global, a
    closure or ``self`` would ignore later in-place updates, and an in-place op on such a
    tensor would run only during the capture. So the device and ``autograd`` entries of every
    op's table are swapped for ``_lifting_entry`` (in the capturing thread: recorded as a node;
    elsewhere: the kernel) for the capture's duration -- the generated ``__call__`` indexes
    the table as always, eager calls outside captures pay nothing. A key the table does not
    hold yet gets the op's device-agnostic fallback (what ``op.entry`` would remember); the
    original entries go back when the last capture ends (unless a ``_rebuild`` replaced
    them meanwhile). Costs about 0.3 ms per capture (one pass over about 330 slots)."""
    from . import _devices, _registry
    with _lift_lock:
        _lift_users[0] += 1 if on else -1
        if on and _lift_users[0] == 1:
            ops = _registry._OPS
            # the (table, key, op) slots to swap, listed again only when the registry (its ops,
            # by identity) or the loaded devices changed: a capture pays one pass over them
            # (snapshots first, each one C-level copy: summing ids over the live view allocates,
            # and a collection then run can finalize a library that unregisters its ops --
            # "dictionary changed size during iteration" under the eight-thread stress test)
            vals = list(ops.values())
            devs = tuple(_devices.loaded)
            sig = (len(vals), sum(map(id, vals)), devs)
            if _lift_plan[0] != sig:
                keys = set(devs)
                plan = []
                for op in vals:
                    table = op.table
                    if "capture" in table:
                        r = _weakref(op)
                        plan.extend((r, key) for key in keys.union(table)
                                    if key not in _LIFT_SKIP)
                _lift_plan[:] = [sig, plan]
            for r, key in _lift_plan[1]:
                op = r()
                if op is None:
                    continue
                table = op.table
                real = table.get(key)
                inner = real if real is not None else table.get("default")
                if inner is None:
                    continue
                e = _lifting_entry(op, inner)
                table[key] = e
                _lifted.append((table, key, e, real))
        elif not on and _lift_users[0] == 0:
            for table, key, e, real in _lifted:
                if table.get(key) is e:
                    if real is None:
                        del table[key]
                    else:
                        table[key] = real
            _lifted.clear()


# ---------------------------------------------------------------------------------------------
# capture tensors

def _mark_size_read():
    c = active()
    if c is not None:
        c.graph.size_dependent = True


def dynamic_names(text: str) -> str:
    """``text`` with every placeholder of a data-dependent size (``new_dynamic_size``) written
    as torch names unbacked sizes, ``u0``, ``u1``...: no message shows the placeholder ints."""
    return _PLACEHOLDER.sub(lambda m: f"u{int(m.group()) - DYNAMIC_SIZE_BASE}"
                            if int(m.group()) >= DYNAMIC_SIZE_BASE else m.group(), text)


_PLACEHOLDER = re.compile(r"\d{19,}")    # (DYNAMIC_SIZE_BASE, 2**62 + 2**60, has 19 digits)


def _dynamic_break(why: str) -> DataDependentGraphBreak:
    """A graph break for a data-dependent size (made by an op's fake kernel with
    ``get_ctx().new_dynamic_size()``) needed as a number while capturing: without
    ``fullgraph=True`` the function runs eagerly, as torch.compile breaks the graph there."""
    err = DataDependentGraphBreak(dynamic_names(
        f"tensorplay.compile: {why}; a data-dependent size (the number of nonzero or selected "
        f"elements, of unique values: an op's fake kernel made it with get_ctx()."
        f"new_dynamic_size()) is known only when the op runs (a graph break, so without "
        f"fullgraph=True the function runs eagerly). To keep it in the graph, keep the code that "
        f"reads it (x.shape[i], x.size(), x.numel(), len(...)) outside the compiled function, "
        f"or use ops that take the tensor itself"))
    c = active()
    if c is not None and c.data_read is None:
        c.data_read = err     # checked when the function returns: it may catch the error
    return err


def _dynamic_read(sizes):
    """A data-dependent size was read as a Python value while capturing: its real value exists
    only when the op runs (a graph break)."""
    shown = ", ".join(str(n) for n in tuple.__iter__(sizes))
    raise _dynamic_break(f"a size in ({shown}) was read as a Python value while capturing")


def _read_whole(*sizes) -> None:
    """A read of whole size tuples (compared, hashed, added, printed...): the graph becomes
    size dependent, and a data-dependent size among them is a graph break, as an element read
    of it is (comparing two placeholders would pick a branch the real sizes may not take)."""
    _mark_size_read()
    for t in sizes:
        if isinstance(t, tuple):
            for n in tuple.__iter__(t):
                if n.__class__ is int and n >= DYNAMIC_SIZE_BASE:
                    _dynamic_read(t)


class SizeTuple(tuple):
    """The sizes (or strides) of a capture tensor: a tuple that reports element reads.

    ``len()`` (the rank, which is guarded) does not count as a read; indexing, iteration,
    comparison, hashing and printing do, and make the captured graph size dependent.
    """

    __slots__ = ()

    def __getitem__(self, i):
        _mark_size_read()
        v = tuple.__getitem__(self, i)
        if v.__class__ is int and v >= DYNAMIC_SIZE_BASE:
            _dynamic_read(self)
        elif v.__class__ is tuple and any(n >= DYNAMIC_SIZE_BASE for n in v):
            _dynamic_read(self)
        return v

    def __iter__(self):
        _mark_size_read()
        for n in tuple.__iter__(self):
            if n >= DYNAMIC_SIZE_BASE:
                _dynamic_read(self)
        return tuple.__iter__(self)

    def __reversed__(self):
        _read_whole(self)
        return reversed(tuple(tuple.__iter__(self)))

    def __contains__(self, x):
        _read_whole(self)
        return tuple.__contains__(self, x)

    def __eq__(self, other):
        _read_whole(self, other)
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        _read_whole(self, other)
        return tuple.__ne__(self, other)

    def __lt__(self, other):
        _read_whole(self, other)
        return tuple.__lt__(self, other)

    def __le__(self, other):
        _read_whole(self, other)
        return tuple.__le__(self, other)

    def __gt__(self, other):
        _read_whole(self, other)
        return tuple.__gt__(self, other)

    def __ge__(self, other):
        _read_whole(self, other)
        return tuple.__ge__(self, other)

    def __hash__(self):
        _read_whole(self)
        return tuple.__hash__(self)

    def __add__(self, other):
        _read_whole(self)
        return tuple.__add__(self, other)

    def __radd__(self, other):
        _read_whole(self)
        return tuple(other) + tuple(tuple.__iter__(self))

    # the operators of a plain tuple (not tuple.__mul__ & co. called as functions): a bad operand
    # gets the very message it gets eagerly ("can't multiply sequence by non-int of type 'str'")
    def __mul__(self, n):
        _read_whole(self)
        return tuple(tuple.__iter__(self)) * n

    def __rmul__(self, n):
        _read_whole(self)
        return n * tuple(tuple.__iter__(self))

    def count(self, *a):
        _read_whole(self)
        # (on a plain tuple: under the capture's profiler, ``tuple.count(self)``'s arity
        # error would name SizeTuple, not eager's tuple)
        return tuple(tuple.__iter__(self)).count(*a)

    def index(self, *a):
        _read_whole(self)
        return tuple(tuple.__iter__(self)).index(*a)

    def __repr__(self):
        _read_whole(self)
        return tuple.__repr__(self)

    __str__ = __repr__

    def __reduce__(self):
        _mark_size_read()
        return (tuple, (tuple(tuple.__iter__(self)),))


# What the user wrote, for each Tensor method that needs a tensor's values, and how to do
# without it inside a compiled function (``CaptureTensor._need_data`` and the conversions).
_DATA_READS = {
    "__bool__": ("bool(tensor) (Tensor.__bool__: an `if`, `while`, `assert`, `and`/`or`/`not` "
                 "on a tensor, or sorted()/min()/max() comparing tensors)",
                 "Compute both results and select with tensorplay.where(cond, a, b), or move "
                 "the test out of the compiled function"),
    "item": ("Tensor.item()",
             "Keep the value as a 0-dim tensor (ops take it where they take a number), or call "
             ".item() on the compiled function's result"),
    "tolist": ("Tensor.tolist()", "Return the tensor and convert the compiled function's result"),
    "__int__": ("int(tensor) (Tensor.__int__, also called by '%d' % t)",
                "Keep the value as a tensor (t.to(tensorplay.int64)), or move the conversion out "
                "of the compiled function"),
    "__float__": ("float(tensor) (Tensor.__float__, also called by math functions such as "
                  "math.sqrt(t))",
                  "Keep the value as a tensor and use tensor ops (t.sqrt()), or move the "
                  "conversion out of the compiled function"),
    "__index__": ("a tensor used as a Python integer (Tensor.__index__: seq[t], range(t), a "
                  "slice bound)",
                  "Index tensors with tensors (x[t]), or move this out of the compiled function"),
    "numpy": ("Tensor.numpy()", "Return the tensor and convert the compiled function's result"),
    "__array__": ("numpy.asarray(tensor) (Tensor.__array__: a NumPy function called on a tensor)",
                  "Use tensorplay ops, or convert the compiled function's result"),
    "__format__": ("format(tensor, spec) (Tensor.__format__: an f-string such as f'{t:.4f}')",
                   "Format the compiled function's result instead"),
    "__dlpack__": ("Tensor.__dlpack__() (a DLPack export such as numpy.from_dlpack(t))",
                   "Export the compiled function's result instead"),
}


def _data_dependent(what: str) -> DataDependentGraphBreak:
    """The error for reading a captured tensor's values through Tensor method ``what``: a graph
    break (``compile`` runs the function eagerly; with ``fullgraph=True`` the call raises it)."""
    construct, fix = _DATA_READS.get(what, (f"Tensor.{what}()", "Move this out of the compiled "
                                            "function or compute it with tensor ops"))
    err = DataDependentGraphBreak(
        f"{construct} needs the values of a tensor, which are not known while tensorplay.compile "
        f"captures a graph (data-dependent Python code: a graph break, so without "
        f"fullgraph=True the function runs eagerly). To keep it in the graph: {fix[0].lower()}{fix[1:]}.")
    c = active()
    if c is not None and c.data_read is None:
        c.data_read = err     # checked when the function returns: it may catch the error
    return err


class CaptureTensor(Tensor):
    """A fake tensor standing for graph value ``_capture`` while ``tensorplay.compile`` captures.

    Ops on it are recorded (dispatch key ``"capture"``); autograd-state methods
    (``requires_grad_``, ``detach``, ``retain_grad``) are recorded as graph nodes too;
    ``requires_grad``, ``is_leaf`` and ``grad_fn is None`` answer as eager (``grad_fn`` is a
    ``CapturedGradFn`` where eager has a node; reading from it, or an input's ``grad``, raises
    ``CompileError``); reading its
    values raises ``DataDependentGraphBreak`` naming what the code did (``bool(tensor)``, ``int(tensor)``,
    ``Tensor.item()``...), after the checks eager makes without the values (several elements,
    a float used as an index, ``numpy()`` of a tensor requiring grad: eager's errors); reading its
    sizes makes the graph size dependent. Python's own messages call it ``Tensor``, as eager's
    (``'Tensor' object has no attribute 'foo'``): the class presents itself under that name.
    """

    __slots__ = ()

    def _need_data(self, what):
        if what == "item" and self.numel() != 1:
            return      # Tensor.item raises eager's error next: the count needs no values
        raise _data_dependent(what)

    # conversions Tensor builds on .item(): each names itself, once the checks that need no
    # values passed (Tensor's method raises eager's error for those)
    def __bool__(self) -> bool:
        if self.numel() != 1:
            return Tensor.__bool__(self)
        raise _data_dependent("__bool__")

    def __int__(self) -> int:
        if self.numel() != 1:
            return Tensor.__int__(self)
        raise _data_dependent("__int__")

    def __float__(self) -> float:
        if self.numel() != 1:
            return Tensor.__float__(self)
        raise _data_dependent("__float__")

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.numel() != 1:
            return Tensor.__index__(self)
        raise _data_dependent("__index__")

    def __array__(self, dtype=None, copy=None):
        raise _data_dependent("__array__")

    def __format__(self, spec: str) -> str:
        if spec and not len(self.shape):    # the rank is guarded: no size read
            raise _data_dependent("__format__")
        return Tensor.__format__(self, spec)

    # autograd metadata: eager's answers for the same inputs (``record_call`` computes whether
    # each output requires grad and has history as the autograd entries would); reading it
    # marks the graph so that ``compile`` guards what the answer depends on beyond its key
    @property
    def requires_grad(self) -> bool:
        v = self.capture_info
        if v is None:
            return self.needs_grad
        v.graph.reads_requires_grad = True
        return v.requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        value = bool(value)
        if value and not self.dtype.is_floating_point:
            raise RuntimeError(f"only floating point tensors can require gradients (got {self.dtype})")
        v = self.capture_info
        if not value and v is not None and v.history is not None:
            raise RuntimeError("requires_grad can only be changed on leaf tensors; use .detach()")
        _record_method(self, "requires_grad_", (value,))
        set_requires_grad(self, value)
        self.capture_info.requires_grad = value

    @property
    def grad_fn(self):
        """None for a tensor eager code would have as a leaf; else a ``CapturedGradFn``: not
        None and true, as eager's node, but the node itself exists only when the graph runs."""
        v = self.capture_info
        if v is None:
            return None
        v.graph.reads_history = True
        if v.history is None:
            return None
        return _captured_grad_fn(v)

    @grad_fn.setter
    def grad_fn(self, node) -> None:        # the slot (new_fake sets it to None)
        _GRAD_FN_SLOT.__set__(self, node)

    @property
    def grad(self):
        """None for a tensor made inside the function (as eager: no backward ran on it);
        ``CompileError`` for an input's, whose value the graph does not take."""
        v = self.capture_info
        if v is not None and v.kind != "node":
            raise CompileError(
                f"tensorplay.compile: Tensor.grad of an input ({v.name}) was read inside the "
                f"compiled function; the graph does not take gradients as inputs, so the value "
                f"read while capturing would be baked in. Pass x.grad as an argument, or read "
                f"it outside the compiled function.")
        return None

    @grad.setter
    def grad(self, value) -> None:
        if getattr(self, "capture_info", None) is not None:    # unset while new_fake builds it
            raise CompileError(
                "tensorplay.compile: Tensor.grad was assigned inside the compiled function; "
                "the assignment is not captured (it would be dropped). Return the value and "
                "assign it outside the compiled function.")
        _GRAD_SLOT.__set__(self, value)        # new_fake sets it to None

    def requires_grad_(self, requires_grad: bool = True):
        self.requires_grad = requires_grad
        return self

    def detach(self):
        return _record_method(self, "detach", (), new_output=True)

    @property
    def data(self):
        # recorded as itself: at replay its version counter is its own, as eager's (a write
        # through it is not seen by autograd's checks on the tensor; detach() shares them)
        return _record_method(self, "data", (), new_output=True)

    def detach_(self):
        _record_method(self, "detach_", ())
        set_requires_grad(self, False)
        self.capture_info.requires_grad = False
        self.capture_info.history = None
        return self

    def retain_grad(self):
        _record_method(self, "retain_grad", ())

    def register_hook(self, hook):
        # a hook is Python run by backward: the graph has no node for it, and dropping it would
        # change the gradients silently
        raise CompileError(
            "tensorplay.compile: Tensor.register_hook() was called inside the compiled function; "
            "hooks are not captured. Register the hook outside the compiled function (on an "
            "input before the call, or on the returned tensor after it).")

    def backward(self, *args, **kwargs):
        if not self.requires_grad:
            return Tensor.backward(self, *args, **kwargs)    # eager's RuntimeError: no grad
        # torch.compile graph-breaks on it too: a graph cannot run a backward pass of its own
        raise GraphBreak(
            "tensorplay.compile: Tensor.backward() was called inside the compiled function: a "
            "graph break, so without fullgraph=True the function runs eagerly. To keep it "
            "compiled, return the loss from the compiled function and call .backward() on the "
            "result (gradients flow through compiled graphs).")

    def is_contiguous(self) -> bool:
        # contiguity of the inputs is guarded, so reading it does not make the graph size dependent
        return row_major(tuple(tuple.__iter__(self.shape)), tuple(tuple.__iter__(self.stride_tuple)))

    def __repr__(self) -> str:
        v = self.capture_info
        return (f"capture_tensor({v.name if v is not None else '?'}, rank={len(self.shape)}, "
                f"dtype={self.dtype}, device='{self.device}')")


_GRAD_FN_SLOT = TensorBase.__dict__["grad_fn"]
_GRAD_SLOT = TensorBase.__dict__["grad"]


class CapturedGradFn:
    """``t.grad_fn`` of a capture tensor that eager code would have as a non-leaf.

    ``is None`` is False and ``bool()`` True, as for eager's node, so ``t.is_leaf``,
    ``t.grad_fn is None`` and ``if t.grad_fn:`` answer as eager. The node itself is made by
    autograd when the compiled graph runs, so anything read from it (``name()``,
    ``next_functions``, ``register_hook``...) raises ``CompileError``. Tensors made by one
    autograd node share its ``CapturedGradFn`` (``a.grad_fn is b.grad_fn`` as eager)."""

    __slots__ = ("_what",)

    def __init__(self, what: str):
        self._what = what

    def __bool__(self) -> bool:
        return True

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)       # protocols Python probes (copy, pickle...)
        raise CompileError(
            f"tensorplay.compile: Tensor.grad_fn.{name} was read inside the compiled function "
            f"(grad_fn of {self._what}); the autograd node is made when the compiled graph "
            f"runs, so it cannot be known while capturing. Inside the function only "
            f"`t.grad_fn is None`, `t.is_leaf` and `t.requires_grad` can be used; read "
            f"grad_fn on the compiled function's result, outside it.")

    def __repr__(self) -> str:
        return f"<grad_fn of {self._what}: made when the compiled graph runs>"


def _captured_grad_fn(v) -> CapturedGradFn:
    h = v.history
    key = h if h >= 0 else v        # outputs of one node share it; an input has its own
    c = active()
    cache = c.grad_fns if c is not None else {}
    g = cache.get(key)
    if g is None:
        what = f"{v.graph.nodes[h].target} ({v.name})" if h >= 0 else f"input {v.name}"
        g = cache[key] = CapturedGradFn(what)
    return g


def _present_as(cls, name: str) -> None:
    """Give ``cls`` (and its methods) the name Python's own error messages use for the eager
    class it stands for: ``'Tensor' object has no attribute 'foo'``, ``Tensor.__format__``,
    ``'tuple' object has no attribute ...``. The class's ``repr`` (``__qualname__``, module)
    still names the real class."""
    cls.__name__ = name
    for attr in vars(cls).values():
        for f in ((attr.fget, attr.fset) if isinstance(attr, property) else (attr,)):
            if callable(f) and hasattr(f, "__qualname__") and not isinstance(f, type):
                f.__qualname__ = f"{name}.{f.__name__}"


_present_as(CaptureTensor, "Tensor")
_present_as(SizeTuple, "tuple")


def _new_capture_tensor(value, fake):
    """A capture tensor for ``value`` with ``fake``'s metadata, sharing its fake storage."""
    t = new_fake(fake.storage_ref, fake.shape, fake.stride_tuple, fake.offset, fake.dtype,
                 fake.device, cls=CaptureTensor)
    set_layout(t, SizeTuple(tuple(fake.shape)), SizeTuple(tuple(fake.stride_tuple)))
    set_requires_grad(t, value.requires_grad)
    set_capture(t, value)
    return t


def _plain_fake(t, storages: dict):
    """A plain fake tensor with ``t``'s metadata (views of one storage keep sharing one)."""
    shape = tuple(tuple.__iter__(t.shape))
    stride = tuple(tuple.__iter__(t.stride_tuple))
    st = storages.get(id(t.storage_ref))
    f = make_fake(shape, t.dtype, t.device, stride, storage=st, offset=t.offset)
    if st is None:
        storages[id(t.storage_ref)] = f.storage_ref
    return f


# ---------------------------------------------------------------------------------------------
# the capture itself

class _Capture:
    def __init__(self, graph: Graph, fn_name: str):
        self.graph = graph
        self.fn_name = fn_name
        self.storages: dict = {}      # id(real storage) -> fake storage (constants)
        self.const_of: dict = {}      # id(real tensor) -> const Value
        self.keep: list = []          # real constants kept alive while capturing
        self.escaped: dict = {}       # id(fake) -> (op name, container) the capture can't walk
        self.data_read = None         # the first data-dependent read's error (_data_dependent)
        self.grad_fns: dict = {}      # Value.history (or the value) -> its CapturedGradFn
        self.roots: dict = {}         # id(fake storage) -> the value made inside that owns it
        self.disabled_log = None      # run_logged's descriptions of the disabled calls, or None
        self.disabled_next = 0        # the next one record_disabled takes
        # id(real tensor) -> (tensor, storage, version, value bytes or None): the tensors whose
        # values the capture read (``_note_data_read``)
        self.data_reads: dict = {}

    def api(self) -> str:
        return f"tensorplay.compile({self.fn_name})"

    def add_node(self, kind, op, args, kwargs) -> Node:
        n = Node(len(self.graph.nodes), kind, op, args, kwargs, _gm._state.enabled)
        self.graph.nodes.append(n)
        return n

    def value_of(self, x, op_name: str):
        """Graph value for tensor argument ``x`` (a capture tensor or a real constant)."""
        v = x.capture_info
        if v is not None:
            if v.graph is not self.graph:
                raise CompileError(
                    f"{self.api()}: {op_name} got a tensor captured by another compiled function "
                    f"(or by an earlier capture). Do not keep tensors from inside a compiled "
                    f"function in globals; pass them as arguments.")
            return v
        if x.native is None:
            origin = self.escaped.get(id(x))
            if origin is None and self.escaped:
                # not that very tensor, but one computed from it (ops on untracked fakes
                # give untracked fakes): the escaped output is still the cause
                origin = next(iter(self.escaped.values()))
                how = "that was computed from what"
            else:
                how = "that"
            if origin is not None:
                raise CompileError(
                    f"{self.api()}: {op_name} got a fake tensor (shape {tuple(x.shape)}) "
                    f"{how} {origin[0]} returned inside a {origin[1]}, which the capture "
                    f"cannot follow. A custom op (and its fake kernel) must return a Tensor, "
                    f"or a tuple/list of Tensors, as its schema declares.")
            raise CompileError(
                f"{self.api()}: {op_name} got a fake/meta tensor (shape {tuple(x.shape)}) that "
                f"is not part of the captured graph. Compiled functions take real tensors; "
                f"create fake tensors outside of them.")
        c = self.const_of.get(id(x))
        if c is None:
            c = Value(self.graph, "const", _plain_fake(x, self.storages), const=x,
                      requires_grad=x.needs_grad)
            if x.grad_fn is not None:
                c.history = -1
            self.const_of[id(x)] = c
            self.keep.append(x)
        return c


# Context-manager factories entered around every capture (plugins add theirs: tensorplay-triton
# records raw ``kernel[grid](...)`` launches on captured tensors while a capture runs).
capture_scopes: list = []


def capture(fn, args_template, leaves, *, name="fn", disabled=None, lift=True):
    """Run ``fn`` on capture tensors standing for ``leaves`` and return the ``Graph``.

    ``args_template`` rebuilds ``(args, kwargs)`` from a list of leaf replacements
    (``compile._Spec.rebuild``). Capture tensors keep each input's sizes, strides, storage
    offset, dtype, device and ``requires_grad``; inputs sharing a storage share a fake storage.
    ``disabled``: ``run_logged``'s log of the disabled calls an eager run of ``fn`` on these
    leaves made; None: a disabled call raises ``NeedsEagerRun`` (see ``record_disabled``).
    ``lift``: record ops on real tensors ``fn`` reaches from outside (``_lift``); False where
    the caller knows ``fn`` reaches none.
    """
    graph = Graph(name)
    ctx = _Capture(graph, name)
    ctx.disabled_log = disabled
    storages: dict = {}
    ctensors = []
    for t in leaves:
        st = storages.get(id(t.storage_ref))
        f = make_fake(t.shape, t.dtype, t.device, t.stride_tuple, storage=st, offset=t.offset)
        if st is None:
            storages[id(t.storage_ref)] = f.storage_ref
        v = Value(graph, "input", f, requires_grad=t.needs_grad)
        if t.grad_fn is not None:
            v.history = -1
        graph.inputs.append(v)
        ctensors.append(_new_capture_tensor(v, f))
    args, kwargs = args_template(ctensors)
    stack = _state.active
    stack.append(ctx)
    _hook(True)
    if lift:
        _lift(True)
    mst, gst = _dispatch._state, _gm._state
    prev_mode = mst.mode
    prev_grad = gst.enabled
    mst.mode = "capture"
    exit_grad = prev_grad       # the grad mode to leave set: the entry one unless fn changed it
    try:
        try:
            with contextlib.ExitStack() as scopes:
                for scope in capture_scopes:
                    scopes.enter_context(scope())
                out = fn(*args, **kwargs)
            graph.exit_grad = gst.enabled
        except BaseException as e:
            # the function's own exceptions (and eager's errors, which the capture raises as
            # eager does) leave the grad mode the function set, as eager; what only the capture
            # raises (CompileError, a data-dependent read) leaves the entry mode
            if not isinstance(e, (CompileError, NeedsEagerRun, SideEffectStop)) and \
                    e is not ctx.data_read:
                exit_grad = gst.enabled
            raise
        if ctx.data_read is not None:
            # the function caught it (try/except): the graph would follow a branch eager code
            # does not take -- a graph break as the uncaught read is (compile runs fn eagerly)
            raise GraphBreak(
                f"{ctx.api()}: the function caught the error raised when it read a tensor's "
                f"values while being captured, so the captured graph would follow a branch "
                f"eager code does not take: {ctx.data_read} Do not catch this error inside the "
                f"compiled function.") from ctx.data_read
        graph.output = _output_structure(ctx, out)
        graph.data_reads = list(ctx.data_reads.values())
        exit_grad = graph.exit_grad
    finally:
        mst.mode = prev_mode
        gst.enabled = exit_grad
        stack.pop()
        if lift:
            _lift(False)
        _hook(False)
    return graph


def _output_structure(ctx, out):
    if _holds_sizes(out):
        # ``return y, x.shape``: the sizes (or strides) become a constant of the graph, so they
        # are read as much as ``x.shape[0]`` is: guard on exact sizes
        _mark_size_read()
    return _pytree.tree_map(lambda t: ctx.value_of(t, "the return value"), out, Tensor)


def _holds_sizes(x) -> bool:
    """``x`` is, or its lists, tuples and dicts hold, a capture tensor's ``SizeTuple``."""
    t = x.__class__
    if t is SizeTuple:
        return True
    if t is list or t is tuple or (isinstance(x, tuple) and hasattr(x, "_fields")):
        return any(_holds_sizes(y) for y in x)
    if t is dict:
        return any(_holds_sizes(y) for y in x.values())
    return False


def _record_method(t, kind, extra, new_output=False):
    ctx = active()
    if ctx is None:
        raise CompileError(_leak_msg(f"Tensor.{kind}"))
    v = ctx.value_of(t, f"Tensor.{kind}")
    n = ctx.add_node(kind, None, (v,) + tuple(extra), {})
    if not new_output:
        n.result = None
        return None
    out = Value(ctx.graph, "node", v.fake, requires_grad=False)
    n.outputs = [out]
    n.result = out
    return _new_capture_tensor(out, v.fake)


def record_multi_output(outs, name) -> None:
    """Record ``_ops.views.mark_multi_output(outs, name)`` on capture tensors ``outs`` (the
    outputs of ``unbind``/``split``/``chunk``, recorded as ``narrow``/``select`` calls) as a
    graph node of kind ``"multi_output"``: the compiled function marks the real views when it
    runs (grad mode as the node's), so an in-place write to one of them, or a use after their
    base was written, raises eager's error (views.py's ``creation_meta``)."""
    ctx = active()
    if ctx is None:
        raise CompileError(_leak_msg(name))
    vals = tuple(ctx.value_of(t, name) for t in outs)
    ctx.add_node("multi_output", None, (vals, name), {}).result = None


def _leak_msg(what):
    return (f"{what}: a tensor from inside a tensorplay.compile capture was used after the capture "
            f"ended (kept in a global or a closure?). Pass tensors in and return them instead.")


def record_call(op, args, kwargs):
    """The ``capture`` entry of every op: record ``op(*args, **kwargs)`` as a graph node.

    Output metadata comes from the op's fake entry run on plain fake copies of the arguments
    (custom-op bodies are never run: opaque nodes). Returns capture tensors for the outputs; an
    output the fake kernel returns as one of its (fake) inputs -- an in-place op returning
    ``self`` -- is the corresponding capture tensor itself.

    When the fake entry fails, raises what the same call raises eagerly (``_raise_fake_failure``):
    a built-in op's shape rule is where eager dispatch takes its error from too, so its error
    (and the argument ``TypeError`` eager checks first) propagates unchanged; a custom op's fake
    kernel (or its kernel run as its fake) refusing the inputs propagates its own exception, with
    a note. ``CompileError`` only when the fake kernel is missing (a custom op with only
    device-specific kernels: the error names the op and ``register_fake``), fails on fake
    tensors, or returns a real tensor.
    """
    ctx = active()
    if ctx is None:
        raise CompileError(_leak_msg(op.name))
    fake_of: dict = {}     # id(fake arg) -> capture tensor / real tensor passed
    vals_rg = [False]

    def conv(x):
        v = ctx.value_of(x, op.name)
        if v.requires_grad:
            vals_rg[0] = True
        fake_of[id(v.fake)] = x      # the capture tensor (or real constant) passed
        return v

    gargs = _pytree.tree_map(conv, tuple(args), Tensor)
    gkwargs = _pytree.tree_map(conv, kwargs, Tensor)
    if not fake_of:
        _check_device(op, args, kwargs)
    fargs = tuple(_to_fake(a) for a in gargs)
    fkwargs = {k: _to_fake(v) for k, v in gkwargs.items()}
    numbers = None
    if fake_of and op.is_builtin:
        fargs, fkwargs, numbers = _as_numbers(op, gargs, gkwargs, fargs, fkwargs, fake_of)
    # a custom op's fake inputs as the fake kernel gets them (taken before the run, as the
    # first run's check takes the real inputs' before the call: ``compile._FakeCheck``)
    fake_in = None if op.is_builtin else \
        fake_metadata(_pytree.tree_leaves(fkwargs, Tensor, _pytree.tree_leaves(list(fargs), Tensor)))
    mst = _dispatch._state
    prev_mode = mst.mode
    mst.mode = "meta"
    failed = None
    try:
        fout = op.entry("meta")(*fargs, **fkwargs)
    except CompileError as e:
        if e is not ctx.data_read:      # (a data read is a CompileError too: named below)
            raise
        failed = e
    except Exception as e:  # noqa: BLE001 - sorted out below, with the dispatch mode restored
        failed = e
    finally:
        mst.mode = prev_mode
    if failed is not None:
        if not isinstance(failed, CompileError) and _names_dynamic_size(failed) and \
                _has_dynamic_size(fargs, fkwargs):
            # a shape rule refusing data-dependent sizes (two of them, or one against a static
            # size, where it cannot assume they match; its message shows them): whether eager
            # refuses depends on the values, so the function runs eagerly (eager's error, if
            # any, is then raised). Errors that do not depend on them (a dim out of range, a
            # dtype) stay eager's, raised here
            raise _dynamic_break(f"{op.name} cannot state its output from data-dependent input "
                                 f"sizes ({type(failed).__name__}: {failed})") from None
        if numbers and failed is ctx.data_read:
            # the shape rule read the values of a capture tensor passed as a number (compared
            # it, converted it): what the user wrote is a tensor used as that number
            ctx.data_read = None
            raise _data_dependent(_NUMBER_READS.get(numbers[0].split("[")[0].rstrip("?"),
                                                    "__index__")) from None
        _raise_fake_failure(ctx, op, args, kwargs, failed)
    node = ctx.add_node("op", op, gargs, gkwargs)
    if fake_in is not None:
        node.fake_run = (fake_in, output_metadata(fout))
    differentiable = not (op.is_builtin and op.backward_fn is None)
    out_rg = vals_rg[0] and _gm._state.enabled and differentiable
    ins = node.inputs()
    by_fake = {id(_to_fake(v)): v for v in ins}
    in_storages = None

    def wrap(f):
        nonlocal in_storages
        if isinstance(f, Tensor):
            same = fake_of.get(id(f))
            if same is not None:     # the op returned one of its inputs (in-place ops)
                v = by_fake[id(f)]
                if out_rg and f.dtype.is_floating_point:
                    _gain_history(v, node, same)
                return v, same
            if f.native is not None or f.capture_info is not None:
                raise CompileError(
                    f"{ctx.api()}: the fake kernel of {op.name} returned a real tensor; fake "
                    f"kernels must return fake tensors (e.g. x.new_empty(shape)). Check it with "
                    f"tensorplay.library.opcheck.")
            rg = out_rg and f.dtype.is_floating_point
            # a view of a tensor requiring grad requires grad without history when no history
            # was recorded (grad mode off: a leaf of its own), as eager's views
            # (tensorplay/_tensor_base.py set_view)
            if not rg and f.view_base is not None and f.dtype.is_floating_point:
                # (its base, or an input viewing the same storage: a view's flag is its base's)
                st = f.storage_ref
                b = ctx.roots.get(id(st))
                rg_view = b.requires_grad if b is not None else any(
                    x.requires_grad for x in ins if x.__class__ is Value and
                    x.fake.storage_ref is st)
            else:
                rg_view = False
            v = Value(ctx.graph, "node", f, requires_grad=rg or rg_view,
                      history=node.index if rg else None)
            # views: the value made inside the capture that owns the storage (their base)
            sid = id(f.storage_ref)
            root = ctx.roots.get(sid)
            if root is not None:
                v.root = root
            else:
                if in_storages is None:
                    in_storages = {id(x.fake.storage_ref) for x in ins}
                if sid not in in_storages:      # a new storage, not a view of an input
                    ctx.roots[sid] = v
            node.outputs.append(v)
            return v, _new_capture_tensor(v, f)
        if isinstance(f, (list, tuple)):
            # lists, tuples and named tuples (a composite body returning x.max(dim=0) gives a
            # tensorplay.return_types.max): the graph keeps plain sequences of values, the
            # function being captured gets the same container type back
            pairs = [wrap(y) for y in f]
            vs = [p[0] for p in pairs]
            ts = [p[1] for p in pairs]
            if isinstance(f, list):
                return vs, ts
            if hasattr(f, "_fields"):
                return tuple(vs), type(f)(*ts)
            return tuple(vs), tuple(ts)
        _note_escapes(ctx, f, op.name)
        return f, f

    try:
        res, ret = wrap(fout)
    finally:
        # wrap calls itself (lists of outputs), so its closure holds it: a cycle through the
        # capture (ctx, and so the graph) that only the cyclic collector freed; empty the cell
        wrap = None     # noqa: F841
    node.result = res
    return ret


def _names_dynamic_size(err) -> bool:
    """Whether ``err``'s message shows a placeholder of a data-dependent size (error path)."""
    return any(int(m) >= DYNAMIC_SIZE_BASE for m in _PLACEHOLDER.findall(str(err)))


def _has_dynamic_size(fargs, fkwargs) -> bool:
    """Whether a fake argument of an op has a data-dependent dimension (error path only)."""
    for t in _pytree.tree_leaves(fkwargs, Tensor, _pytree.tree_leaves(list(fargs), Tensor)):
        if isinstance(t, Tensor) and any(n >= DYNAMIC_SIZE_BASE for n in tuple.__iter__(t.shape)):
            return True
    return False


def _gain_history(v, node, t) -> None:
    """An in-place op recorded with grad (``node``) on ``v`` (capture tensor ``t``): as eager,
    the tensor then requires grad and is not a leaf, and so is the base of a view."""
    v.requires_grad = True
    v.history = node.index
    set_requires_grad(t, True)
    r = v.root
    if r is not None:
        r.requires_grad = True
        r.history = node.index
    # every other view of that base follows its new history, as eager's views do
    # (autograd/function.py refresh_views)
    base = r if r is not None else v
    g = v.graph
    for n in (g.nodes if g is not None else ()):
        for o in n.outputs:
            if o.__class__ is Value and o.root is base and o is not v and \
                    o.fake.dtype.is_floating_point:
                o.requires_grad = True
                o.history = node.index


def _as_numbers(op, gargs, gkwargs, fargs, fkwargs, fake_of):
    """The fake run's arguments, with a tensor passed where the schema takes a number (``int
    dim``, ``SymInt[] size``, a slice bound: ``x.softmax(t)``, ``x.select(0, t)``, ``x[:t]``)
    handed over as the tensor itself, not its plain fake: the shape rule converts it as eager
    does (``index_dim``, ``__index__``), so a capture tensor (an input, a value made inside)
    raises compile's ``DataDependentGraphBreak`` naming ``Tensor.__index__`` (a plain fake
    said "fake/meta tensors have no data"), and a graph constant gives its real value, which
    the graph is then guarded on (``_note_data_read``; the node keeps the constant, by
    reference, for the kernel to read)."""
    captured: list = []          # the schema types of the slots given capture tensors

    def passed(v):
        return fake_of.get(id(v.fake), v.fake)

    def sub(g, a):
        if any(v.kind != "const" for v in _pytree.tree_leaves(g, Value)):
            captured.append(a.type)
        return _pytree.tree_map(passed, g, Value)

    args = op.schema.arguments
    pos = [a for a in args if not a.kwarg_only]
    out = None
    for i, g in enumerate(gargs):
        if i < len(pos) and pos[i].kind == "other" and _has_value(g):
            if out is None:
                out = list(fargs)
            out[i] = sub(g, pos[i])
    if out is not None:
        fargs = tuple(out)
    named = None
    for k, g in gkwargs.items():
        if _has_value(g):
            if named is None:
                named = {a.name: a for a in args}
            a = named.get(k)
            if a is not None and a.kind == "other":
                fkwargs = dict(fkwargs)
                fkwargs[k] = sub(g, a)
    return fargs, fkwargs, captured


# the data-dependent construct (``_DATA_READS``) of a tensor passed where a schema type is taken
_NUMBER_READS = {"int": "__index__", "SymInt": "__index__", "float": "__float__",
                 "bool": "__bool__", "Scalar": "item"}


def _has_value(x) -> bool:
    if x.__class__ is Value:
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_value(y) for y in x)
    return False


def _bound(op, args, kwargs) -> dict:
    """Schema name -> value of a call as dispatch passes it to a table entry (positional
    arguments in schema order, keyword-only ones by name)."""
    names = [a.name for a in op.schema.arguments if not a.kwarg_only]
    values = dict(zip(names, args))
    values.update(kwargs)
    return values


def _check_device(op, args, kwargs):
    """A call without tensor arguments (a factory) runs on its ``device`` argument's device:
    eager dispatch finds that device's kernel first, loading its backend (a device no plugin
    provides, or a custom op without a kernel for it, is refused there). Do the same before
    recording the call, so the capture refuses it with eager's error, not at replay."""
    arg = next((a for a in op.schema.arguments if a.kind == "device"), None) or \
        next((a for a in op.schema.arguments if a.name == "device"), None)
    if arg is None:
        return
    dev = _bound(op, args, kwargs).get(arg.name)
    if dev is not None:
        op.entry(_dispatch._device_key(op, dev))


def _raise_fake_failure(ctx, op, args, kwargs, err):
    """The fake entry of ``op`` raised ``err`` while capturing ``op(*args, **kwargs)``: raise
    what a PyTorch user expects (see ``record_call``)."""
    # eager dispatch refuses tensors on several devices before any kernel runs; captured
    # arguments all have the "capture" key, so the call's fast path did not look
    _dispatch.resolve_key(op, _dispatch.flat_tensors(args, kwargs))
    if op.is_builtin:
        # eager dispatch explains a failed kernel with the same shape rule (_define.kernel_error),
        # checking first that every Tensor argument is a tensor (or a number where one is taken)
        from ._ops._define import check_tensor_arguments
        check_tensor_arguments(op, _bound(op, args, kwargs))
        raise err.with_traceback(None) from None
    if isinstance(err, BodyReadsData):      # the kernel run as its fake: explained below
        err = err.__cause__
    if isinstance(err, DispatchError):      # no fake kernel at all
        raise CompileError(f"{ctx.api()}: cannot capture a call of {op.name}: {err}") from err
    refusal, hint = _fake_failure(op, err)
    if refusal:
        # the inputs are refused, as a call outside compile refuses them: the user's
        # ``except TypeError`` (or ValueError...) must keep working under compile
        _add_note(err, f"(raised while {ctx.api()} captured a call of {op.name}) {hint}")
        raise err
    raise CompileError(f"{ctx.api()}: computing the output metadata of {op.name} failed: "
                       f"{type(err).__name__}: {err}.{hint}") from err


def _note_escapes(ctx, x, op_name):
    """Remember fake tensors an op's fake run returned inside a structure the capture does not
    walk (not a Tensor, list or tuple): if one reaches the graph later, the error names the op."""
    seen = 0
    todo = [x]
    while todo and seen < 1000:
        y = todo.pop()
        seen += 1
        if isinstance(y, Tensor):
            if y.native is None and y.capture_info is None:
                ctx.escaped[id(y)] = (op_name, type(x).__name__)
                ctx.keep.append(y)
        elif isinstance(y, dict):
            todo.extend(y.values())
        elif isinstance(y, (list, tuple, set, frozenset)):
            todo.extend(y)


def _to_fake(x):
    return _pytree.tree_map(_fake_of, x, Value)


def fake_metadata(tensors) -> tuple:
    """What a fake kernel can see of each tensor (``make_fake``'s arguments): shape, dtype,
    device, strides, storage offset. Fake copies of tensors with equal metadata are equal."""
    return tuple([(tuple(t.shape), t.dtype, t.device, t.stride_tuple, t.offset)
                  for t in tensors])


def output_metadata(out) -> list:
    """What the first run's check compares of a fake kernel's outputs (``compile._FakeCheck``):
    shape, dtype, device, strides of every tensor in ``out``, in order."""
    return [(tuple(t.shape), t.dtype, t.device, t.stride_tuple)
            for t in _pytree.tree_leaves(out, Tensor)]


def _fake_of(v):
    return v.fake


def make_capture_entry(op):
    """``capture`` entry: record the call as a graph node (``tensorplay.compile``)."""
    def capture(*args, **kwargs):
        return record_call(op, args, kwargs)
    return capture



# ---------------------------------------------------------------------------------------------
# tensorplay.compiler.disable: a disabled call is one opaque graph node run eagerly

class NeedsEagerRun(BaseException):
    """Raised by ``record_disabled`` in a capture made without a log (``capture(disabled=None)``):
    the function calls a disabled function, whose outputs exist only when it runs. ``compile``
    then runs the function eagerly once (``run_logged``: that is the call's result) and
    captures again with the log. A ``BaseException``: the function's own ``except Exception``
    must not take it for one of its errors."""


class SideEffectStop(BaseException):
    """Raised by ``compile``'s watch where the function being captured is about to perform a
    Python side effect a graph cannot replay (``print``, ``log.append`` on an outside list, a
    global store...): raised before the effect runs, so that the call can run the function
    eagerly and perform each effect once. A ``BaseException``: the function's own
    ``except Exception`` must not take it for one of its errors."""


def _fn_name(wrapper) -> str:
    fn = getattr(wrapper, "__wrapped__", wrapper)
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _describe(out):
    """(spec, [(shape, strides, dtype, device, requires_grad, has history)]) of a disabled
    call's result: its structure (non-tensor parts as values, ``_pytree``) and its tensors."""
    leaves: list = []
    spec = _pytree.tree_flatten(out, Tensor, leaves)[1]
    metas = [(tuple(t.shape), tuple(t.stride_tuple), t.dtype, t.device, t.needs_grad,
              t.grad_fn is not None) for t in leaves]
    return spec, metas


def run_logged(fn, args, kwargs):
    """Run ``fn(*args, **kwargs)`` eagerly (real tensors), logging what each disabled call it
    makes returns (``_describe``); returns ``(out, log)``, ``log`` a list of
    ``(wrapper, argument signature, description)`` in call order."""
    st = _state
    prev, prev_depth = st.log, st.log_depth
    log = st.log = []
    st.log_depth = 0
    try:
        out = fn(*args, **kwargs)
    finally:
        st.log, st.log_depth = prev, prev_depth
    if prev is not None and not prev_depth:
        # a compiled function's first call inside another's eager run: its disabled calls are
        # the outer function's too (a capture of the outer inlines it)
        prev.extend(log)
    return out, log


def call_logged(wrapper, fn, args, kwargs):
    """A disabled call while ``run_logged`` runs (no capture in progress): run it, log it."""
    st = _state
    if st.log_depth:                 # inside another disabled call: part of that one
        return fn(*args, **kwargs)
    st.log_depth += 1
    try:
        out = fn(*args, **kwargs)
    finally:
        st.log_depth -= 1
    st.log.append((wrapper, _arg_sig(args, kwargs), _describe(out)))
    return out


def _arg_sig(args, kwargs) -> tuple:
    """The shapes, dtypes and devices of a call's tensor arguments (capture tensors' too)."""
    return tuple((tuple(tuple.__iter__(t.shape)), t.dtype, t.device)
                 for t in _pytree.tree_leaves((args, kwargs), Tensor))


def _disabled_mismatch(ctx, wrapper, sig) -> CompileError:
    log = ctx.disabled_log
    eager = [_fn_name(e[0]) for e in log[ctx.disabled_next:]]
    shown = ", ".join(f"{_short_dtype(dt)}{list(sh)}" for sh, dt, _ in sig)
    return CompileError(
        f"{ctx.api()}: the function ran eagerly once to learn what its disabled functions return "
        f"(tensorplay.compiler.disable), then was captured, and the two runs called different "
        f"disabled functions: the capture calls {_fn_name(wrapper)} on ({shown}), which the "
        f"eager run did not call there (its calls left: {eager}). The function's Python code "
        f"must take the same path in both (a branch on state the function itself changes "
        f"does not): move the disabled call out of such a branch.")


def record_disabled(wrapper, args, kwargs):
    """A call of a ``tensorplay.compiler.disable``d function (``wrapper``) while capturing: one
    node of kind ``"disabled"`` that the compiled function runs eagerly on every call, on that
    call's tensors (the function's own Python runs each time, side effects included; nothing
    is traced into it). Its outputs are those the eager run of the same call returned
    (``run_logged``: ``compile`` runs the function eagerly once when a capture meets a disabled
    call, that run being the call's result, then captures with the log): their shapes, dtypes,
    devices and strides become the graph's, so the graph is guarded on exact sizes, and each
    run checks that the outputs still match (``disabled_check``). Tensors are passed in lists,
    tuples and dicts as in op calls; other values are baked in, as an op's are."""
    ctx = active()
    log = ctx.disabled_log
    if log is None:
        raise NeedsEagerRun()
    # the eager run's next call of this function on tensors of these shapes: calls it made that
    # a capture does not see (inside a custom op's body, which the capture does not run; in a
    # branch not taken while compiling) are passed over
    sig = _arg_sig(args, kwargs)
    k = ctx.disabled_next
    while k < len(log) and (log[k][0] is not wrapper or log[k][1] != sig):
        k += 1
    if k == len(log):
        raise _disabled_mismatch(ctx, wrapper, sig)
    ctx.disabled_next = k + 1
    spec, metas = log[k][2]
    name = _fn_name(wrapper)

    def conv(x):
        return ctx.value_of(x, f"disabled {name}")

    gargs = _pytree.tree_map(conv, tuple(args), Tensor)
    gkwargs = _pytree.tree_map(conv, dict(kwargs), Tensor)
    node = ctx.add_node("disabled", wrapper, gargs, gkwargs)
    ctx.graph.size_dependent = True      # the outputs' sizes were seen for these sizes only
    values, tensors = [], []
    for shape, stride, dtype, device, rg, hist in metas:
        f = make_fake(shape, dtype, device, stride)
        v = Value(ctx.graph, "node", f, requires_grad=rg,
                  history=node.index if hist else None)
        ctx.roots[id(f.storage_ref)] = v
        values.append(v)
        tensors.append(_new_capture_tensor(v, f))
    node.outputs = values
    node.result = _pytree.tree_unflatten(spec, values)
    return _pytree.tree_unflatten(spec, tensors)


def disabled_check(node):
    """``check(out)`` for a ``"disabled"`` node's run: the flat list of ``out``'s tensors when
    its structure and tensors' shapes, dtypes, devices and strides are the ones the capture
    saw, else ``CompileError`` naming the function and what changed. A result that is one
    plain tensor, or a tuple of them, as captured, is checked by slot reads (about 0.3 us)."""
    wrapper = node.op
    outs = node.outputs
    want = _pytree.tree_unflatten(_pytree.tree_flatten(node.result, Value, [])[1],
                                  [v.fake for v in outs])
    spec_w = _pytree.tree_flatten(want, Tensor, [])[1]
    metas = [(tuple(f.shape), tuple(f.stride_tuple), f.dtype, f.device) for f in
             (v.fake for v in outs)]
    single = spec_w == _pytree.LEAF
    flat = (not single and spec_w[0] is tuple
            and all(s == _pytree.LEAF for s in spec_w[1]))
    n = len(metas)

    def fail(what):
        raise CompileError(
            f"tensorplay.compile: the disabled function {_fn_name(wrapper)} "
            f"(tensorplay.compiler.disable, run eagerly on every call) {what}; the compiled "
            f"graph was built from what it returned when captured. Make its outputs' structure, "
            f"shapes, dtypes, devices and strides depend only on its inputs' metadata, or call "
            f"it outside the compiled function.")

    def full(out):
        leaves: list = []
        spec = _pytree.tree_flatten(out, Tensor, leaves)[1]
        try:
            same = spec == spec_w
        except Exception:  # noqa: BLE001 - values without a usable ==
            same = False
        if not same:
            fail(f"returned {_short(out)} on this call, not {_short(want)} as when captured")
        for i, (t, (shape, stride, dtype, device)) in enumerate(zip(leaves, metas)):
            ts = tuple(t.shape)
            if ts != shape or t.dtype is not dtype or t.device != device:
                fail(f"returned tensor {i} as {_short_dtype(t.dtype)}{list(ts)} on {t.device}, "
                     f"not {_short_dtype(dtype)}{list(shape)} on {device} as when captured")
            if any(a != b for a, b, s in zip(t.stride_tuple, stride, ts) if s > 1):
                fail(f"returned tensor {i} with strides {tuple(t.stride_tuple)}, not {stride} "
                     f"as when captured (shape {list(ts)})")
        return leaves

    def same(t, m) -> bool:
        return t.__class__ is Tensor and t.raw_shape == m[0] and t.stride_tuple == m[1] and \
            t.raw_dtype is m[2] and t.raw_device == m[3]

    if single:
        m0 = metas[0]

        def check(out):
            if same(out, m0):
                return [out]
            return full(out)
    elif flat:
        def check(out):
            if out.__class__ is tuple and len(out) == n and all(map(same, out, metas)):
                return out
            return full(out)
    else:
        check = full
    return check


def _short(x) -> str:
    """A one-line description of a result structure (tensors by dtype and shape)."""
    def one(t):
        return _Shown(f"{_short_dtype(t.dtype)}{list(tuple.__iter__(t.shape))}")
    r = repr(_pytree.tree_map(one, x, Tensor))
    return r if len(r) <= 200 else r[:197] + "..."


class _Shown(str):
    """A text shown as is inside a ``repr`` (no quotes)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)
