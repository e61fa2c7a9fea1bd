"""``TensorBase``: a tensor's fields, its one constructor, metadata and dispatch keys.

``Tensor`` is two modules (as torch's ``_C.TensorBase`` under ``torch.Tensor``): this one, at the
dispatch layer, owns the fields; ``tensorplay/_tensor.py``, above the ops, is the user-facing
``Tensor`` with its methods. Only these two modules touch the private slots
(tests/test_architecture_tensor.py scans for it); every other module and plugin uses this
module's public face:

* **Construction**: ``new_tensor`` (a real tensor fresh from a kernel or sharing a storage) and
  ``new_fake`` (metadata only). Both make instances of the user-facing ``tensorplay.Tensor``,
  the class declared with ``class Tensor(TensorBase, instance_class=True)``: the one subclass
  every layer's tensors are made of (a subclass such as ``compile``'s ``CaptureTensor`` passes
  ``cls=``). Backends call it as ``tensorplay.backends.new_tensor`` (from ``Backend.wrap``).
* **Metadata, read-only**: ``shape``, ``dtype``, ``device`` are properties (assigning one is an
  ``AttributeError``, as torch's).
* **Fields, read-only by convention**, for the layers and the backends, never documented to
  users (slot aliases: reading one costs what reading the slot costs, which the per-call
  generated code relies on; write them only through the functions below): ``raw_shape``,
  ``raw_dtype``, ``raw_device`` (the three properties above, without the property's call),
  ``native`` (the backend's array for exactly this view;
  None for fake tensors), ``storage_ref`` (the ``Storage`` shared with every view), ``stride_tuple``
  (strides in elements), ``offset`` (storage offset in elements), ``backend``, ``dispatch_key``
  (``"autograd"`` when requiring grad, ``"capture"`` while ``tensorplay.compile`` records, else
  ``backend_key``), ``backend_key`` (the device type, or ``"meta"`` for fake tensors),
  ``needs_grad`` (``requires_grad`` without the property), ``output_nr`` (which output of
  ``grad_fn`` this is, as torch's), ``accumulator`` (a leaf's gradient accumulator node, made on
  first use), ``view_base`` (the tensor a view was taken of), ``view_version`` (a view's: the storage
  version when its history was last set; a base's: weak references to its views, see
  ``set_view``), ``retains_grad_flag`` (``retain_grad()`` was
  called), ``capture_info`` (the value ``tensorplay.compile`` records for it) and
  ``raw_grad_fn`` (the ``grad_fn`` slot itself: ``tensorplay.Tensor.grad_fn`` regenerates a
  stale view's history first, as torch's getter).
* **Writers**: ``set_history``, ``set_requires_grad``, ``detach_history``, ``set_accumulator``,
  ``set_retains_grad``, ``set_view``, ``set_view_version``, ``set_capture``, ``set_native``.
"""

from __future__ import annotations

from operator import attrgetter as _attrgetter
from typing import TYPE_CHECKING, Any
from weakref import ref as _ref

from ._backend import _CONTIG_CACHE as _CONTIG
from ._backend import Storage as _Storage

if TYPE_CHECKING:
    from ._device import Device
    from ._dtype import DType

__all__ = ["TensorBase", "instance_class", "row_major", "new_tensor", "new_tensor_source", "new_fake", "set_history", "set_history_source", "set_grad_fn",
           "set_requires_grad", "set_grad",
           "detach_history", "refresh_dispatch_key", "set_accumulator", "set_retains_grad",
           "set_view", "set_view_source", "prune_views", "live_views", "made_in_no_grad", "set_view_version", "DataStorage",
           "data_alias", "storage_tensors", "shared_storage", "is_dense", "partial_overlap",
           "check_partial_overlap", "PARTIAL_OVERLAP_MSG", "set_capture", "set_layout", "set_native", "set_data", "wrap_dim", "index_dim", "checked_dims", "FIELDS",
           "SLOTS"]

# Every field of a tensor. Public name (read-only by convention) -> slot (written only here and
# in _tensor.py). ``grad_fn`` is torch's public attribute and its own slot; ``grad`` a checked
# property over the slot ``_grad`` (the constructors write the slot).
FIELDS = {"storage_ref": "_storage", "native": "_data", "raw_shape": "_shape",
          "stride_tuple": "_stride", "offset": "_offset", "raw_dtype": "_dtype",
          "raw_device": "_device",
          "dispatch_key": "_dkey", "backend_key": "_bkey", "needs_grad": "_requires_grad",
          "output_nr": "_output_nr", "accumulator": "_accum", "backend": "_backend",
          "view_base": "_base", "retains_grad_flag": "_retains_grad", "capture_info": "_capture",
          "view_version": "_vver"}
SLOTS = (*FIELDS.values(), "_grad", "grad_fn")

_instance_class: Any = None   # tensorplay.Tensor (class Tensor(TensorBase, instance_class=True))
_new = object.__new__



def row_major(shape, stride) -> bool:
    """True when ``stride`` (elements) lays ``shape`` out row-major dense; a size-1 dimension
    may have any stride (same rule as torch's ``is_contiguous``)."""
    expected = 1
    for s, st in zip(reversed(shape), reversed(stride)):
        if s == 1:
            continue
        if st != expected:
            return False
        expected *= s
    return True


class TensorBase:
    """Fields, metadata and dispatch keys of every tensor; see the module docstring. Not made
    directly: ``new_tensor``/``new_fake`` (or, for users, ``tensorplay.tensor``/``empty``/...)."""

    __slots__ = (*SLOTS, "__weakref__")

    if TYPE_CHECKING:   # the slot aliases set below the class, for the type checkers
        raw_shape: tuple[int, ...]
        raw_dtype: DType
        raw_device: Device
        native: Any
        storage_ref: Any
        stride_tuple: tuple[int, ...]
        offset: int
        backend: Any
        dispatch_key: str
        backend_key: str
        needs_grad: bool
        output_nr: int
        accumulator: Any
        view_base: Any
        view_version: int
        raw_grad_fn: Any
        retains_grad_flag: bool
        capture_info: Any
        grad_fn: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("tensorplay.Tensor cannot be constructed directly; use "
                        "tensorplay.tensor(data), tensorplay.empty(shape) or another factory")

    def __init_subclass__(cls, /, instance_class: bool = False, **kwargs: Any) -> None:
        # the user-facing Tensor declares itself the class every tensor is made of; the
        # constructors below read it (no import of the layer above, no name set from outside)
        super().__init_subclass__(**kwargs)
        if instance_class:
            global _instance_class
            _instance_class = cls

    # -- metadata -----------------------------------------------------------------------------
    # read-only properties, as torch's (assigning one would make the tensor lie about its array:
    # AttributeError). The per-call code reads the same fields as raw_shape/raw_dtype/raw_device
    # (the slots' own descriptors, a third of a property's cost)
    if TYPE_CHECKING:   # what the type checkers see; at run time, the C getters below
        @property
        def shape(self) -> tuple[int, ...]: ...
        @property
        def dtype(self) -> DType: ...
        @property
        def device(self) -> Device: ...
    else:
        shape = property(_attrgetter("_shape"),
                         doc="Sizes of each dimension (a tuple of ints, like ``torch.Size``).")
        dtype = property(_attrgetter("_dtype"),
                         doc="Element type (a ``tensorplay.dtype`` such as "
                             "``tensorplay.float32``).")
        device = property(_attrgetter("_device"),
                          doc="The device the data lives on (``device(type='cpu')``, ``cuda:0``, "
                              "``meta``).")

    def size(self, dim: int | None = None) -> Any:
        """``shape``, or the size of dimension ``dim`` (negative indices count from the end)."""
        s = self._shape
        if dim.__class__ is int and -len(s) <= dim < len(s):   # (None: not an int)
            return s[dim]
        if dim is None:
            return s
        return s[_dim_of(dim, len(s), "size(): ")]

    @property
    def ndim(self) -> int:
        """Number of dimensions (``len(shape)``)."""
        return len(self._shape)

    def dim(self) -> int:
        """Number of dimensions, as ``torch.Tensor.dim``."""
        return len(self._shape)

    def numel(self) -> int:
        """Number of elements (product of ``shape``; 1 for a 0-dim tensor)."""
        n = 1
        for s in self._shape:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element."""
        return self._dtype.itemsize

    def stride(self, dim: int | None = None) -> Any:
        """Strides in elements (a tuple), or the stride of ``dim``."""
        st = self._stride
        if dim.__class__ is int and -len(st) <= dim < len(st):   # (None: not an int)
            return st[dim]
        if dim is None:
            return st
        return st[_dim_of(dim, len(st), "stride(): ")]

    def storage_offset(self) -> int:
        """Offset in elements of this view's first element within its storage."""
        return self._offset

    def is_contiguous(self) -> bool:
        """True when the layout is row-major dense (size-1 dimensions may have any stride)."""
        if self._stride is _CONTIG.get(self._shape):
            # fresh results share the cached row-major stride tuple: identity says it (fast path,
            # used by kernels that check layouts on every call)
            return True
        return row_major(self._shape, self._stride)

    @property
    def is_cuda(self) -> bool:
        """True for tensors on a ``cuda`` device."""
        return self._device.type == "cuda"

    @property
    def is_meta(self) -> bool:
        """True for tensors on the ``meta`` device."""
        return self._device.type == "meta"

    @property
    def is_fake(self) -> bool:
        """True for fake (metadata-only) tensors, including ``meta`` tensors."""
        return self._data is None

    def is_floating_point(self) -> bool:
        """True for float16/bfloat16/float32/float64 tensors."""
        return self._dtype.is_floating_point

    @property
    def _version(self) -> int:
        """Version counter shared with every view of the same storage; bumped by mutation."""
        return self._storage.version

    def data_ptr(self) -> int:
        """Address of the first element (an int); 0 for fake tensors. Raises ``DispatchError`` on
        a tensor being captured by ``tensorplay.compile`` (e.g. a raw Triton ``kernel[grid](...)``
        launch outside a ``triton_op``)."""
        if self._data is None:
            if self._capture is not None:
                from .errors import DispatchError
                raise DispatchError(
                    "Tensor.data_ptr(): a tensor being captured by tensorplay.compile has no memory "
                    "(a raw Triton kernel[grid](...) launch outside a triton_op?). Capture cannot "
                    "trace into Triton launches: launch through tensorplay.library.wrap_triton "
                    "inside a @tensorplay.library.triton_op, which compile records as one opaque "
                    "node.")
            return 0
        return self._backend.data_ptr(self._data)

    def untyped_storage(self) -> Any:
        """The ``Storage`` shared by this tensor and all its views (for ``x.data``, ``x``'s: an
        alias with a version counter of its own shares the memory, as torch's)."""
        if self._capture is not None:   # Triton's interpreter copies tensors through this
            self.data_ptr()
        return shared_storage(self._storage)

    # -- autograd fields ------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether operations on this tensor are recorded for autograd. Only floating
        tensors may require grad (``RuntimeError`` otherwise); only leaves may be switched off."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        value = bool(value)
        if value and not (self._dtype.is_floating_point):
            raise RuntimeError(f"only floating point tensors can require gradients (got {self._dtype})")
        if not value and self.grad_fn is not None:
            raise RuntimeError("requires_grad can only be changed on leaf tensors; use .detach()")
        self._requires_grad = value
        refresh_dispatch_key(self)
        if self._vver.__class__ is list:
            # a base with views: a view's requires_grad follows its base's (torch's rule; the
            # views have no history, so they are leaves of their own)
            for v in live_views(self):
                if v.grad_fn is None and v._dtype.is_floating_point:
                    v._requires_grad = value
                    refresh_dispatch_key(v)

    @property
    def is_leaf(self) -> bool:
        """True when the tensor was not produced by a recorded operation (``grad_fn is None``).
        (``Tensor.is_leaf`` reads a view's regenerated history first.)"""
        return self.grad_fn is None

    @property
    def grad(self) -> Any:
        """The gradient accumulated by ``backward`` (None until one reaches this tensor), as
        ``torch.Tensor.grad``.

        Assigning checks the value as torch does, at the assignment: ``None`` or a tensor of this
        tensor's shape, dtype and device (``RuntimeError`` naming the one that differs, in
        torch's words "attempting to assign a gradient of size '[3]' to a tensor of size
        '[2]'..."), not this tensor itself (``RuntimeError``); anything else is a
        ``TypeError``. Any tensor (a leaf or not, requiring grad or not, any layout) takes a
        fitting ``.grad``; ``del t.grad`` sets None."""
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        # (the engine stores through set_grad, unchecked.) Identity tests first -- a fitting
        # tensor of the same class, dtype and device object -- the full check, which raises or
        # takes an equal device that is another object, only otherwise
        if value is not None and (
                value.__class__ is not self.__class__ or value is self
                or value._dtype is not self._dtype or value._device is not self._device
                or value._shape != self._shape):
            check_grad_assignment(self, value)
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        """True for non-leaf tensors on which ``retain_grad()`` was called."""
        return self._retains_grad and self.grad_fn is not None


# the public fields: the slots' own descriptors under a second name (same cost as the slot)
for _public, _slot in FIELDS.items():
    setattr(TensorBase, _public, TensorBase.__dict__[_slot])
# ``.grad`` unchecked, for the autograd engine (a slot read, not the checked property: the
# engine reads and writes each leaf's gradient once per backward; writes go through set_grad)
TensorBase.raw_grad = TensorBase.__dict__["_grad"]
del _public, _slot
# ``grad_fn`` as stored, for the layers: ``tensorplay.Tensor.grad_fn`` is a property that first
# regenerates the history of a view made stale by an in-place write (torch's getter), which the
# autograd internals must not trigger (their checks read the history a view was given, and
# regenerate through ``autograd.graph.edge_of`` only when they record); reading or writing
# ``raw_grad_fn`` costs what the slot costs
TensorBase.raw_grad_fn = TensorBase.__dict__["grad_fn"]


def set_grad(t, g) -> None:
    """Store the engine's gradient ``g`` as ``t.grad`` without the assignment's checks: a
    ``retain_grad()`` made before a shape-changing in-place op (``t_()``) keeps the old
    history's gradient, of the old shape, as torch's engine stores it."""
    t._grad = g


def check_grad_assignment(t, g) -> None:
    """Raise unless ``g`` (not None) may be assigned as ``t.grad``: torch's checks, order and
    words (``TypeError`` for a non-tensor; ``RuntimeError`` for the tensor itself, then another
    dtype, device, size)."""
    if not isinstance(g, TensorBase):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type(g).__name__}")
    if g is t:
        raise RuntimeError("can't assign Variable as its own grad")
    if g._dtype is not t._dtype:
        raise RuntimeError(f"attempting to assign a gradient with dtype '{g._dtype}' to a "
                           f"tensor with dtype '{t._dtype}'. Please ensure that the gradient "
                           f"and the tensor have the same dtype")
    if g._device != t._device:
        raise RuntimeError(f"attempting to assign a gradient with device type "
                           f"'{g._device.type}' to a tensor with device type "
                           f"'{t._device.type}'. Please ensure that the gradient and the tensor "
                           f"are on the same device")
    if g._shape != t._shape:
        raise RuntimeError(f"attempting to assign a gradient of size '{list(g._shape)}' to a "
                           f"tensor of size '{list(t._shape)}'. Please ensure that the "
                           f"gradient and the tensor are the same size")


def instance_class() -> type:
    """``tensorplay.Tensor``, the class every tensor is made of (for generated code that tests
    ``x.__class__ is Tensor``). ``RuntimeError`` before ``tensorplay/_tensor.py`` defined it (an
    op defined before the class would bind None)."""
    if _instance_class is None:
        raise RuntimeError("tensorplay.Tensor is not defined yet: tensorplay/_tensor.py defines "
                           "the class before importing the ops")
    return _instance_class


# -- the one constructor ------------------------------------------------------------------------
def new_tensor(storage, data, shape, stride, offset, dtype, device, backend, cls=None):
    """A real tensor viewing ``storage``: the one constructor of every real tensor, published to
    backends as ``tensorplay.backends.new_tensor``.

    * ``storage``: a ``tensorplay.backends.Storage`` (or the backend's ``root_storage``) shared
      by this tensor and every view of it;
    * ``data``: the backend's native array for exactly this view (``native``);
    * ``shape``, ``stride``: tuples of ints, in elements (not bytes); ``offset``: the view's
      storage offset in elements;
    * ``dtype``: a ``tensorplay.dtype``; ``device``: a canonical ``tensorplay.device`` of
      ``backend``'s device type (``cuda:0``, not ``cuda``; ``cpu``, not ``cpu:0``);
    * ``backend``: the device's backend object; ``cls``: a subclass of ``tensorplay.Tensor``
      (default: ``tensorplay.Tensor``).

    The tensor is fresh: not a view, no history, does not require grad, not captured. It trusts
    its arguments and raises nothing, as every kernel result's path does (a wrong shape, stride or
    dtype lets ops read past the array): a backend calls it from ``Backend.wrap`` with what the
    array itself says. ``tensorplay.backends.wrap_native`` checks its arguments (``TypeError``/
    ``ValueError``) and is the one to use for arrays from elsewhere."""
    t = _new(cls or _instance_class)
    t._storage = storage
    t._data = data
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t._dtype = dtype
    t._device = device
    t._backend = backend
    t._dkey = t._bkey = device.type
    t._requires_grad = False
    t._grad = None
    t.raw_grad_fn = None
    t._output_nr = 0
    t._accum = None
    t._base = None
    t._vver = 0
    t._retains_grad = False
    t._capture = None
    return t


def new_tensor_source(var, storage, data, shape, stride, dtype, device, backend,
                      new="__new", cls="__T", offset="0") -> list:
    """Source lines that bind ``var`` to what ``new_tensor(storage, data, shape, stride, offset,
    dtype, device, backend)`` returns (``offset`` 0 unless given), without its frame: for the code
    generated per op on the per-call path (the built-in ops' adapters, the views' ``make_view``).
    Arguments are source expressions, each evaluated once (``device`` is read back from the
    tensor); the namespace binds ``new`` to ``object.__new__`` and ``cls`` to
    ``instance_class()``."""
    return [f"{var} = {new}({cls})",
            f"{var}._storage = {storage}",
            f"{var}._data = {data}",
            f"{var}._shape = {shape}",
            f"{var}._stride = {stride}",
            f"{var}._offset = {offset}",
            f"{var}._dtype = {dtype}",
            f"{var}._device = {device}",
            f"{var}._backend = {backend}",
            f"{var}._dkey = {var}._bkey = {var}._device.type",
            f"{var}._requires_grad = False",
            f"{var}._grad = None",
            f"{var}.raw_grad_fn = None",
            f"{var}._output_nr = 0",
            f"{var}._accum = None",
            f"{var}._base = None",
            f"{var}._vver = 0",
            f"{var}._retains_grad = False",
            f"{var}._capture = None"]


_META = [None]      # the meta backend (``new_fake``), once imported


def new_fake(storage, shape, stride, offset, dtype, device, cls=None, backend_key="meta"):
    """A fake tensor (metadata only, ``native is None``) over fake ``storage``. Arguments as
    ``new_tensor``'s (``shape``/``stride`` any int sequences); ``backend_key``: the key it
    dispatches to (``"meta"``; a view keeps its base's, e.g. ``compile``'s capture tensors)."""
    meta = _META[0]
    if meta is None:     # (_backend defines it after importing this module's importers)
        from ._backend import META as meta
        _META[0] = meta
    t = new_tensor(storage, None, shape if shape.__class__ is tuple else tuple(shape),
                   stride if stride.__class__ is tuple else tuple(stride), offset, dtype, device,
                   meta, cls)
    t._dkey = t._bkey = backend_key
    return t


# -- writers ------------------------------------------------------------------------------------
def refresh_dispatch_key(t) -> None:
    """Recompute ``t.dispatch_key`` from its capture / requires-grad state."""
    if t._capture is not None:
        t._dkey = "capture"
    else:
        t._dkey = "autograd" if t._requires_grad else t._bkey


def set_history(t, node, nr: int) -> None:
    """Make ``t`` output ``nr`` of autograd node ``node`` (it then requires grad)."""
    t.raw_grad_fn = node
    t._output_nr = nr
    t._requires_grad = True
    refresh_dispatch_key(t)


def set_history_source(var, node, nr) -> list:
    """Source lines doing ``set_history(var, node, nr)`` without its frame, for the autograd
    entries generated per op (arguments are source expressions, each evaluated once)."""
    return [f"{var}.raw_grad_fn = {node}",
            f"{var}._output_nr = {nr}",
            f"{var}._requires_grad = True",
            f"{var}._dkey = 'autograd' if {var}._capture is None else 'capture'"]


def set_grad_fn(t, node, nr: int) -> None:
    """Point ``t``'s history at output ``nr`` of ``node`` without touching ``requires_grad``
    (a view's history regenerated from its base's)."""
    t.raw_grad_fn = node
    t._output_nr = nr


def set_requires_grad(t, flag: bool) -> None:
    """Set ``requires_grad`` without the property's checks (autograd's own results)."""
    t._requires_grad = flag
    refresh_dispatch_key(t)


def detach_history(t) -> None:
    """Cut ``t`` from the graph in place (``detach_``): no ``grad_fn``, no grad required."""
    t.raw_grad_fn = None
    t._requires_grad = False
    refresh_dispatch_key(t)


def set_accumulator(t, node) -> None:
    """The leaf's gradient accumulator node (autograd makes it on first use)."""
    t._accum = node


def set_retains_grad(t, flag: bool) -> None:
    t._retains_grad = flag


def set_view(t, base, version: int, grad_enabled: bool = True) -> None:
    """Record that ``t`` is a view of ``base`` (a tensor that is no view; None: ``t`` is no
    view) taken at storage version ``version``, with grad mode ``grad_enabled`` when it was made.

    The view's autograd state follows its base's, as torch's: ``t`` requires grad when ``base``
    does (a view made under ``no_grad``, or one whose op recorded no history, is then a leaf of
    its own), and ``base`` keeps a weak reference to it, so that an in-place write giving
    ``base`` a new history later reaches every live view (``live_views``; autograd's
    ``refresh_views``). A base's ``view_version`` field holds that list of references (an int
    while it has none): only views have a version of their own. (``set_view_source`` spells
    this body as generated source for ``make_view``: keep the two alike.)"""
    t._base = base
    t._vver = version
    if base is None:
        return
    r = _ref(t) if grad_enabled else (_ref(t),)   # a 1-tuple: made under no_grad
    vs = base._vver
    if vs.__class__ is list:
        vs.append(r)
        n = len(vs)
        if n >= 16 and not n & (n - 1):
            # at each power of two: drop the views that died (amortized O(1) a view)
            prune_views(vs)
    else:
        base._vver = [r]
    if base._requires_grad and not t._requires_grad and t._dtype.is_floating_point:
        t._requires_grad = True
        refresh_dispatch_key(t)


def set_view_source(var, base, version, grad_enabled, ref="__ref", prune="__prune",
                    refresh="__refresh") -> list:
    """Source lines doing what ``set_view(var, base, version, grad_enabled)`` does, without its
    frame, for a ``base`` that is not None (``make_view``'s views, generated per call): the same
    statements in the same order (keep the two alike). Arguments are source expressions;
    ``base`` and ``var`` are read more than once (names, then). The namespace binds ``ref`` to
    ``weakref.ref``, ``prune`` to ``prune_views`` and ``refresh`` to ``refresh_dispatch_key``;
    the lines bind ``__w``, ``__vs`` and ``__n``."""
    return [f"{var}._base = {base}",
            f"{var}._vver = {version}",
            f"__w = {ref}({var}) if {grad_enabled} else ({ref}({var}),)",
            f"__vs = {base}._vver",
            "if __vs.__class__ is list:",
            "    __vs.append(__w)",
            "    __n = len(__vs)",
            "    if __n >= 16 and not __n & (__n - 1):",
            f"        {prune}(__vs)",
            "else:",
            f"    {base}._vver = [__w]",
            f"if {base}._requires_grad and not {var}._requires_grad and "
            f"{var}._dtype.is_floating_point:",
            f"    {var}._requires_grad = True",
            f"    {refresh}({var})"]


def prune_views(vs) -> None:
    """Drop the dead references from a base's list of views (``set_view``'s, in place)."""
    vs[:] = [e for e in vs if (e if e.__class__ is not tuple else e[0])() is not None]


def live_views(base, no_grad_flags: bool = False) -> list:
    """The views of ``base`` (``set_view``) still alive, in the order they were made; with
    ``no_grad_flags``, ``(view, made_in_no_grad(view))`` pairs (one pass, no search per view)."""
    vs = base._vver
    if vs.__class__ is not list:
        return []
    out = []
    keep = []
    for e in vs:
        ng = e.__class__ is tuple
        v = (e[0] if ng else e)()
        if v is not None and v._base is base:
            out.append((v, ng) if no_grad_flags else v)
            keep.append(e)
    vs[:] = keep
    return out


def made_in_no_grad(t) -> bool:
    """True when view ``t`` was made with grad mode off (torch's ``CreationMeta::NO_GRAD_MODE``)."""
    base = t._base
    vs = base._vver if base is not None else None
    if vs.__class__ is list:
        for e in vs:
            if e.__class__ is tuple and e[0]() is t:
                return True
    return False


class DataStorage(_Storage):
    """The ``Storage`` of ``x.data`` (``data_alias``): ``x``'s memory -- its storage's root
    array, size and backend, read through ``shared`` (so a resize of either is seen by both) --
    with a version counter of its own, starting at 0, as torch's ``.data`` (a new
    ``VariableVersion``): in-place writes through it, or through its views, are not seen by
    autograd's checks on ``x`` (no "modified by an inplace operation" error), nor writes to
    ``x`` by its checks. ``untyped_storage()`` answers ``shared``."""

    __slots__ = ("shared",)

    def __init__(self, shared):     # (no Storage.__init__: root, nbytes, backend are shared's)
        self.shared = shared
        self.version = 0

    @property
    def root(self):
        return self.shared.root

    @root.setter
    def root(self, value) -> None:      # (resize_ through the alias grows the shared storage)
        self.shared.root = value

    @property
    def nbytes(self) -> int:
        return self.shared.nbytes

    @nbytes.setter
    def nbytes(self, value: int) -> None:
        self.shared.nbytes = value

    @property
    def backend(self):
        return self.shared.backend


def shared_storage(st):
    """The storage ``st`` aliases: a ``DataStorage``'s ``shared``, else ``st`` itself."""
    return st.shared if st.__class__ is DataStorage else st


def is_dense(shape, stride) -> bool:
    """torch's ``is_non_overlapping_and_dense``: some order of the dims (size-1 dims ignored)
    has row-major strides."""
    n = len(shape)
    if n == 1:
        return shape[0] < 2 or stride[0] == 1
    req = 1
    for i in sorted(range(n), key=lambda d: (shape[d] < 2, stride[d])):
        if shape[i] < 2:
            return True
        if stride[i] != req:
            return False
        req *= shape[i]
    return True


PARTIAL_OVERLAP_MSG = ("unsupported operation: some elements of the input tensor and the "
                       "written-to tensor refer to a single memory location. Please clone() the "
                       "tensor before performing the operation.")


def partial_overlap(out, t) -> bool:
    """torch's ``get_overlap_status(out, t) == Partial``, the rule of its in-place ops and
    ``out=``: the two tensors share a storage (``x.data`` counts as ``x``'s: ``shared_storage``),
    both have elements and are dense and non-overlapping (``is_dense``; other layouts are torch's
    "too hard": not refused), and their byte ranges intersect without being the same range with
    the same strides (that is a full overlap: ``t`` is ``out`` itself, allowed)."""
    if t is out or shared_storage(t._storage) is not shared_storage(out._storage):
        return False
    r = dense_byte_ranges(out, t)
    if r is None:
        return False
    o0, o1, t0, t1 = r
    if o0 == t0 and o1 == t1:
        return tuple(out._stride) != tuple(t._stride)
    return o0 < t1 and t0 < o1


def dense_byte_ranges(out, t):
    """``(o0, o1, t0, t1)``: the byte ranges ``[o0, o1)`` and ``[t0, t1)`` that tensors ``out``
    and ``t`` cover in their storage, when both have elements and are dense and
    non-overlapping (``is_dense``); None otherwise (torch's overlap checks call those layouts
    "too hard" and refuse nothing)."""
    so, st = out._shape, t._shape
    if 0 in so or 0 in st or not is_dense(so, out._stride) or not is_dense(st, t._stride):
        return None
    io, it = out._dtype.itemsize, t._dtype.itemsize
    no = nt = 1
    for s in so:
        no *= s
    for s in st:
        nt *= s
    o0, t0 = out._offset * io, t._offset * it
    return o0, o0 + no * io, t0, t0 + nt * it


def check_partial_overlap(out, t) -> None:
    """``RuntimeError`` (torch's words) when ``partial_overlap(out, t)``: an op writing ``out``
    would read elements of ``t`` it has already overwritten (or not yet). Called by the in-place
    ops, ``out=`` and ``copy_`` for each input tensor whose storage may be ``out``'s."""
    if partial_overlap(out, t):
        raise RuntimeError(PARTIAL_OVERLAP_MSG)


def data_alias(t):
    """``t.data``: a tensor over ``t``'s memory with ``t``'s layout, no history, not requiring
    grad, no view, and a version counter of its own (``DataStorage``), as torch's ``.data``;
    a fake tensor's stays fake (same dispatch key)."""
    st = t._storage
    alias = _new(DataStorage)        # (DataStorage(shared) without its __init__ frame)
    alias.shared = st.shared if st.__class__ is DataStorage else st
    alias.version = 0
    a = new_tensor(alias, t._data, t._shape, t._stride, t._offset, t._dtype, t._device,
                   t._backend)
    a._bkey = a._dkey = t._bkey
    # the memory's tensors that no view list reaches (the owner, each .data): a resize of any of
    # them that moves the memory re-points the others (resize_, as torch's shared StorageImpl)
    sh = alias.shared
    try:
        refs = sh.aliases
    except AttributeError:
        refs = sh.aliases = [_ref(t._base if t._base is not None else t)]
    refs.append(_ref(a))
    n = len(refs)
    if n >= 16 and not n & (n - 1):     # dead ones dropped at 16, 32, 64... entries
        refs[:] = [r for r in refs if r() is not None]
    return a


def set_data(t, src) -> None:
    """``t.data = src``, as torch's ``set_data``: ``t`` keeps its identity, ``requires_grad``,
    ``grad_fn``, ``.grad`` and version counter, and takes ``src``'s memory, shape, strides,
    offset, dtype and device (a later write through either is seen by the other; the version
    counters stay apart, as torch's: ``t``'s storage becomes a ``DataStorage`` over ``src``'s
    memory carrying ``t``'s version). torch's refusals: a non-tensor (``TypeError``), a
    non-floating ``src`` for a ``t`` that requires grad, another kind of tensor (a fake for a
    real one, another device type). Refused here, where torch goes on (``RuntimeError``): a
    view (it would keep its base's view history over memory that is no longer the base's,
    and an in-place write would rebase the base with it), a tensor being captured by
    ``tensorplay.compile``."""
    if not isinstance(src, TensorBase):
        raise TypeError(f"Variable data has to be a tensor, but got {type(src).__name__}")
    if t._requires_grad and not (src._dtype.is_floating_point or src._dtype.is_complex):
        raise RuntimeError("data set to a tensor that requires gradients must be floating "
                           "point or complex dtype")
    if t._bkey != src._bkey:
        raise RuntimeError("Attempted to call `variable.set_data(tensor)`, but `variable` and "
                           "`tensor` have incompatible tensor type.")
    if t._capture is not None or src._capture is not None:
        raise RuntimeError("x.data = ... inside tensorplay.compile: the captured function "
                           "cannot replace a tensor's memory; do it outside the compiled call")
    if t._base is not None:
        raise RuntimeError("x.data = ... on a view is not supported by tensorplay (the view "
                           "would keep its base's history over other memory); assign to the "
                           "base, or write the values with x.copy_(...) under no_grad()")
    alias = _new(DataStorage)
    sh = alias.shared = src._storage.shared if src._storage.__class__ is DataStorage \
        else src._storage
    alias.version = t._storage.version
    t._storage = alias
    t._data = src._data
    t._shape = src._shape
    t._stride = src._stride
    t._offset = src._offset
    t._dtype = src._dtype
    t._device = src._device
    t._backend = src._backend
    t._bkey = src._bkey
    refresh_dispatch_key(t)
    # one more tensor over that memory that no view list reaches (see data_alias): a resize
    # that moves the memory re-points it too
    if sh is not None:
        try:
            refs = sh.aliases
        except AttributeError:
            refs = sh.aliases = [_ref(src._base if src._base is not None else src)]
        refs.append(_ref(t))


def storage_tensors(t) -> list:
    """Every live tensor known to share ``t``'s memory, ``t`` included: ``t``'s base and its
    views, and, when a ``.data`` of that memory was taken (``data_alias``), the owner, each
    alias and their views (torch's tensors sharing one ``StorageImpl``)."""
    sh = shared_storage(t._storage)
    bases = [t._base if t._base is not None else t]
    for r in getattr(sh, "aliases", ()):
        b = r()
        if b is not None:
            bases.append(b._base if b._base is not None else b)
    out, seen = [], set()
    for b in bases:
        for u in (b, *live_views(b)):
            if id(u) not in seen and shared_storage(u._storage) is sh:
                seen.add(id(u))
                out.append(u)
    return out


def set_view_version(t, version: int) -> None:
    """A view's version: the storage version its history was last set at (-1: stale)."""
    t._vver = version


def set_capture(t, info) -> None:
    """The value ``tensorplay.compile`` records for ``t`` (None: not captured); rekeys ``t``."""
    t._capture = info
    refresh_dispatch_key(t)


def set_layout(t, shape, stride) -> None:
    """Replace ``t``'s shape and stride tuples by equal ones (``compile``'s size-tracking
    tuples); the layout itself must not change."""
    t._shape = shape
    t._stride = stride


def set_native(t, data) -> None:
    """Replace the native array of ``t`` (same shape, dtype and layout)."""
    t._data = data


def _dim_of(dim, ndim: int, api: str) -> int:
    """``size(dim)``/``stride(dim)``'s dim off their int path: ``wrap_dim``'s, but a 0-dim
    tensor has no dim to give (torch: "Dimension specified as 0 but tensor has no
    dimensions", IndexError, for any int)."""
    if not ndim:
        d = dim if dim.__class__ is int else index_dim(dim, api)
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    return wrap_dim(dim, ndim, api)


def wrap_dim(dim: int, ndim: int, api: str = "") -> int:
    """``dim`` in ``[-ndim, ndim)`` as a non-negative index (0-d tensors take -1 and 0);
    ``IndexError`` otherwise (torch's message). A ``dim`` that is not an int goes through
    ``index_dim`` (a 0-dim integer tensor is its int; a bool is a ``TypeError``)."""
    if dim.__class__ is not int:
        dim = index_dim(dim, api)
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def index_dim(dim, api: str = "", name: str = "dim") -> int:
    """A single-dim argument that is not an ``int``, as torch's argument parser takes it: a
    0-dim integer tensor or anything else with ``__index__`` (a NumPy integer) is that int;
    a bool (Python's or NumPy's), a tensor of another dtype or with dims (``tensor([1])``,
    which ``__index__`` would take), a float or a sequence is torch's ``TypeError``
    ("argument 'dim' must be int, not Tensor"), never used as 0/1 or iterated. Every shared
    dim normalisation (``wrap_dim`` here and in ``_kernels/_checks``) calls it, off their
    int path only. ``api``: the prefix naming the op the user called ("cumsum(): ")."""
    t = type(dim)
    if isinstance(dim, TensorBase):
        dt = dim._dtype
        ok = (not dim._shape and not dt.is_floating_point and not dt.is_complex
              and dt.name != "bool")
    else:
        ok = (t is not bool and hasattr(t, "__index__")
              and not (t.__module__ == "numpy" and t.__name__ in ("bool_", "bool")))
    if not ok:
        raise TypeError(f"{api}argument '{name}' must be int, not {t.__name__}")
    return t.__index__(dim)


class _Unset:
    """The default of a reduction's ``dim``/``keepdim`` when not passed, shown as the value it
    stands for (None, False): torch's parser tells ``x.sum()`` (its full-reduction overload,
    which takes no ``keepdim``) from ``x.sum(None, True)`` (its ``dim`` overload)."""
    __slots__ = ("shown",)

    def __init__(self, shown):
        self.shown = shown

    def __repr__(self) -> str:
        return repr(self.shown)

    def __bool__(self) -> bool:
        return bool(self.shown)


_NO_DIM: Any = _Unset(None)
_NO_KEEPDIM: Any = _Unset(False)


def dim_list(dim, api: str = "") -> list | None:
    """A dim LIST argument (torch's ``int[1]``: ``sum``, ``mean``, ``amax``, ``var``, ``std``,
    ``logsumexp``, ``nansum``, ``roll``, ...) as a list of ints (None: all dims), by torch's
    parser: an int, a list/tuple of ints, or alone or in the list a NumPy integer or an integer
    tensor of ONE element (``tensor(1)``, ``tensor([1])``, a bool tensor too: torch reads its
    item). A bool, a float, None in the list, a float tensor or one of several elements is
    torch's ``TypeError`` naming ``api``, the op the user called ("var(): argument 'dim' must
    be tuple of ints, not Tensor"). A single-dim argument (torch's ``int``) is ``index_dim``'s."""
    if dim is None:
        return None
    if dim.__class__ is int:
        return [dim]
    if isinstance(dim, (list, tuple)):
        dims = list(dim)
        for d in dims:          # (all ints, the common case: one pass, no enumerate)
            if d.__class__ is not int:
                return _indexed(dims, api)
        return dims
    d = _list_int(dim)
    if d is None:
        raise TypeError(f"{_named(api)}argument 'dim' must be tuple of ints, not "
                        f"{type(dim).__name__}")
    return [d]


def _named(api: str) -> str:
    return f"{api}(): " if api else ""


def _list_int(d):
    """``d`` as an element of torch's int list (its int), or None where torch's parser
    refuses it: a bool, a float, a tensor not integral or not of one element."""
    if isinstance(d, TensorBase):
        dt = d._dtype
        if dt.is_floating_point or dt.is_complex or d.numel() != 1:
            return None
        return int(d.item())
    t = type(d)
    if t is bool or t.__module__ == "numpy" and t.__name__ in ("bool_", "bool"):
        return None
    index = getattr(t, "__index__", None)
    return None if index is None else index(d)


def checked_dims(dim, api: str) -> list | None:
    """``dim_list(dim, api)`` (kept for the composite ops' call sites)."""
    return dim_list(dim, api)


def _indexed(dims: list, api: str = "") -> list:
    """``dims`` with each element that is not an int replaced by its int (``_list_int``);
    torch's ``TypeError`` naming ``api`` for one it refuses (a bool, a float, None, ...)."""
    for i, d in enumerate(dims):
        if d.__class__ is not int:
            v = _list_int(d)
            if v is None:
                raise TypeError(f"{_named(api)}argument 'dim' must be tuple of ints, but found "
                                f"element of type {type(d).__name__} at pos {i}")
            dims[i] = v
    return dims
