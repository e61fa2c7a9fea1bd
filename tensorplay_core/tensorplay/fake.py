"""Fake (metadata-only) tensors: ``FakeTensorMode`` and the ``meta`` device.

A fake tensor has shape, dtype, device, strides and storage offset, and no data (``_data is
None``); ops on it run their fake rule (``register_fake`` for custom ops, the shape rule beside
each built-in op) through the ``meta`` dispatch key. Same idea as ``torch._subclasses.FakeTensorMode``
and ``device="meta"``: a fake tensor keeps the device it pretends to be on; a meta tensor is on
device ``meta``.
"""

from __future__ import annotations

from . import _dispatch
from ._backend import Storage, contiguous_strides
from ._device import Device, canonical
from ._tensor_base import new_fake
from .errors import DispatchError

__all__ = ["FakeImplCtx", "FakeTensorMode", "get_ctx", "is_dynamic_size", "make_fake",
           "from_real", "in_fake_mode"]


def make_fake(shape, dtype, device, stride=None, *, storage=None, offset: int = 0):
    """A fake tensor of ``shape``/``dtype`` on ``device`` with ``stride`` (default: contiguous).

    ``storage`` shares an existing fake storage (views); otherwise a new one sized to fit.
    """
    # (called for every fake tensor: a capture's inputs, each fake kernel run, opcheck's fake
    # copies, so the common spellings -- a tuple of ints, a canonical Device -- skip the
    # conversions)
    if shape.__class__ is not tuple or not all(s.__class__ is int for s in shape):
        shape = tuple([int(s) for s in shape])
    if stride is None:
        stride = contiguous_strides(shape)
    elif stride.__class__ is not tuple:
        stride = tuple(stride)
    if storage is None:
        span = 1
        for s, st in zip(shape, stride):
            if not s:
                span = 0
                break
            span += (s - 1) * st
        storage = Storage(None, (span + offset) * dtype.itemsize, None)
    dev = device if device.__class__ is Device and device._canon is device else \
        canonical(Device(device))
    return new_fake(storage, shape, stride, offset, dtype, dev)


def from_real(t):
    """A fake tensor with exactly ``t``'s metadata (a fresh fake storage; requires_grad kept)."""
    f = make_fake(t.shape, t.dtype, t.device, t.stride(), offset=t.storage_offset())
    if t.requires_grad:
        f.requires_grad_(True)
    return f


class FakeTensorMode:
    """Context manager: factories make fake tensors; ``from_tensor(t)`` converts real ones.

    The mode is per thread (as in torch): inside the block, in the thread that entered it,
    ``tensorplay.empty/zeros/randn/...`` and custom ops with no tensor inputs
    produce fake tensors; ops on fake tensors run their fake rules. Errors: an op without a fake
    rule raises ``DispatchError`` pointing to ``register_fake``.
    """

    def __enter__(self):
        st = _dispatch._state     # per thread: other threads keep making real tensors
        self._prev = st.mode
        st.mode = "meta"
        return self

    def __exit__(self, *exc):
        _dispatch._state.mode = self._prev
        return False

    def from_tensor(self, t):
        """A fake tensor with ``t``'s metadata (``fake.from_real``), as torch's ``from_tensor``."""
        return from_real(t)


# ---------------------------------------------------------------------------------------------
# data-dependent sizes: ``get_ctx().new_dynamic_size()`` in fake kernels
#
# torch gives a fake kernel an unbacked SymInt; tensorplay's sizes are ints, so a dynamic size is
# a placeholder int from a range no real tensor can have (>= 2**62 elements). It flows through
# fake rules like any size; ``is_dynamic_size`` recognises it, ``tensorplay.compile`` treats
# such dimensions as "known when the op runs" (its check of fake kernels accepts any real size
# there; shape rules meeting two of them, or one and a static size, assume they match and the
# kernels check when the graph runs; reading one as a Python value while capturing is a graph
# break naming it u<n>), and the real call always produces the real size.
#
# The base is 2**62 + 2**60, not 2**62: Python hashes an int modulo 2**61 - 1, so 2**62 + k hashed
# as the small int k + 2, and a shape cache keyed by size tuples compared a real (50,) with a
# cached placeholder (u48,) -- a data-dependent read in the middle of a capture. These hash as
# 2**60 + 2 + k, far from any real size.
DYNAMIC_SIZE_BASE = (1 << 62) + (1 << 60)
_dynamic_count = [0]


def is_dynamic_size(n) -> bool:
    """True for a size made by ``new_dynamic_size`` (a placeholder of a data-dependent size)."""
    return n.__class__ is int and n >= DYNAMIC_SIZE_BASE


class FakeImplCtx:
    """What ``tensorplay.library.get_ctx()`` returns inside a fake kernel (same role as torch's
    ``FakeImplCtx``)."""

    __slots__ = ()

    def new_dynamic_size(self, *, min: int = 0, max: int | None = None) -> int:  # noqa: A002
        """A size known only when the op runs (the number of nonzero elements, of unique values
        ...), for a fake kernel whose output shape depends on the input's values; same as
        torch's ``ctx.new_dynamic_size``. ``min``/``max``: the bounds the real size keeps
        (``ValueError`` when ``min < 0`` or ``max < min``).

        Returns a placeholder int (``is_dynamic_size`` is True for it), distinct per call: use it
        as a dimension of the fake outputs (``x.new_empty([nnz, x.dim()])``), never as a value.
        Under ``tensorplay.compile`` the real size is whatever the op returns; reading the
        placeholder as a Python number while capturing is a graph break (the function runs
        eagerly; ``fullgraph=True`` raises ``DataDependentGraphBreak``)."""
        if not isinstance(min, int) or min < 0:
            raise ValueError(f"new_dynamic_size: min must be an int >= 0, got {min!r}")
        if max is not None and (not isinstance(max, int) or max < min):
            raise ValueError(f"new_dynamic_size: max must be an int >= min ({min}), got {max!r}")
        _dynamic_count[0] += 1
        return DYNAMIC_SIZE_BASE + (_dynamic_count[0] % (1 << 40))


_CTX = FakeImplCtx()


def get_ctx() -> FakeImplCtx:
    """The context of the fake kernel being run (``tensorplay.library.get_ctx``; same as
    ``torch.library.get_ctx``): ``get_ctx().new_dynamic_size()`` gives a data-dependent size."""
    return _CTX


def in_fake_mode() -> bool:
    """True inside a ``FakeTensorMode`` block of the calling thread."""
    return _dispatch._state.mode == "meta"


def _mutating_fake(*args, **kwargs):
    return None


def _returned_written_args(schema):
    """For an op whose every return is one of its written arguments (``Tensor(a!)`` returns of
    ``Tag.inplace``/``Tag.out`` ops; none at all for an op returning nothing), the positions of
    those arguments, ``(index, kwarg_only, name)`` per return; else None."""
    by_alias = {a.alias: (i, a) for i, a in enumerate(schema.arguments) if a.is_write}
    if not by_alias:
        return None
    picks = []
    for r in schema.returns:
        hit = by_alias.get(r.alias) if r.is_write else None
        if hit is None:
            return None
        i, a = hit
        picks.append((i, a.kwarg_only, a.name))
    return tuple(picks)


def _returning_fake(picks):
    """The fake of an op that returns only (some of) its written arguments: it returns the
    corresponding fake inputs themselves, as torch generates it for ``Tag.inplace``/``Tag.out``
    custom ops (their outputs are their arguments: same metadata, same object)."""
    if not picks:
        return _mutating_fake

    def get(args, kwargs, i, kw, name):
        return kwargs[name] if kw or i >= len(args) else args[i]

    if len(picks) == 1:
        (i, kw, name), = picks
        if not kw:
            def fake_returning_arg(*args, **kwargs):
                return args[i] if i < len(args) else kwargs[name]
            return fake_returning_arg

        def fake_returning_kwarg(*args, **kwargs):
            return kwargs[name]
        return fake_returning_kwarg

    def fake_returning_args(*args, **kwargs):
        return tuple(get(args, kwargs, i, kw, name) for i, kw, name in picks)
    return fake_returning_args


def reads_data(op, err) -> bool:
    """Whether ``err``, raised by custom op ``op``'s kernel run on fake tensors, says the kernel
    needed data fake tensors lack (it names fake/meta tensors or their missing data, or failed
    on ``None``, the ``native`` array of a fake tensor), rather than refusing the inputs."""
    msg = str(err).lower().replace(op.name.lower(), "")
    if any(w in msg for w in ("fake", "meta", "no data")):
        return True
    return not op.has_fake and "nonetype" in msg


class BodyReadsData(DispatchError):
    """A custom op without a fake kernel whose device-agnostic kernel, run as its fake, needed
    data (``__cause__``: the kernel's own error). A ``tensorplay.compile`` capture explains the
    cause itself (``_capture``); elsewhere this error's message names ``register_fake``."""


def _body_as_fake(op, body):
    """Custom op ``op``'s device-agnostic kernel ``body`` serving as its fake (no
    ``register_fake``): where it fails because it reads data (``reads_data``), the error says
    what is missing: ``BodyReadsData`` naming ``register_fake``, chained to the kernel's error
    (torch says the same: no fake impl registered). Other errors propagate unchanged."""
    def fake(*args, **kwargs):
        try:
            return body(*args, **kwargs)
        except Exception as e:
            if not reads_data(op, e):
                raise
            raise BodyReadsData(
                f"{op.label}: no fake kernel registered, and its kernel, run on fake/meta "
                f"tensors as its fake, needs their data ({type(e).__name__}: {e}). Add one "
                f"with @{op.opname}.register_fake (or tensorplay.library.register_fake("
                f"{op.name!r})) returning empty tensors of the output shapes "
                f"(x.new_empty(shape)), or write the kernel with tensorplay ops.") from e
    fake.__name__ = getattr(body, "__name__", "fake")
    fake.__wrapped__ = body
    return fake


def fake_source(op) -> str | None:
    """Where ``op``'s fake (meta) behaviour comes from, in ``make_fake_entry``'s order:
    ``"registered"`` (``register_fake``), ``"built-in"`` (a built-in op's shape rule),
    ``"trivial"`` (returns nothing, or only arguments it writes: the fake torch generates),
    ``"body"`` (its device-agnostic kernel run on fake tensors; a ``triton_op``'s with the
    launches skipped), or None (none: fake tensors and compile refuse the op)."""
    if op.fake_impl is not None:
        return "registered"
    if op.builtin_fake is not None:
        return "built-in"
    if _returned_written_args(op.schema) is not None:
        return "trivial"
    if op.active_kernel("default") is not None:
        return "body"
    return None


def make_fake_entry(op):
    """``meta`` entry: the registered fake kernel; else the built-in shape rule; else, for an
    op whose only returns are arguments it writes (none: it returns nothing and mutates
    declared arguments; ``Tag.inplace``/``Tag.out`` ops: it returns them), a fake that returns
    those (fake) arguments and does nothing else (same as torch, which generates these fakes
    from the schema); else the device-agnostic kernel run on fake tensors
    (CompositeImplicitAutograd ops need no fake); else an error pointing to ``register_fake``."""
    if op.fake_impl is not None:
        return op.fake_impl
    if op.builtin_fake is not None:
        return op.builtin_fake
    schema = op.schema
    picks = _returned_written_args(schema)
    if picks is not None:
        # an op that only writes its declared arguments, and returns nothing or them, has
        # nothing to describe (a custom op may not change its arguments' metadata): its fake
        # returns what it returns, as torch generates it, also when a device-agnostic body
        # exists -- such a body usually reads data (NumPy, a library call), which fake tensors
        # lack. An op returning nothing and mutating nothing is suspicious, so it keeps the
        # error below, as in torch
        return _returning_fake(picks)
    default = op.active_kernel("default")
    if default is not None:
        if op.is_builtin:
            return default
        return _body_as_fake(op, default)

    def no_fake(*args, **kwargs):
        raise DispatchError(
            f"{op.label}: no fake kernel registered, so it cannot run on fake/meta tensors or be "
            f"captured by tensorplay.compile. Add one with @{op.opname}.register_fake (or "
            f"tensorplay.library.register_fake({op.name!r})) returning empty tensors of the "
            f"output shapes.")
    return no_fake

