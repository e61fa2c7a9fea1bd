"""``tensorplay.backends``: the device backend contract, and the lookup that loads backends.

A device plugin declares ``DeviceSpec("mydev", "mypkg.backend:MyBackend")`` (see
``tensorplay.plugins``); on the first use of ``"mydev"`` the core imports ``MyBackend``, builds
one instance and checks it against ``Backend``, the protocol that says which members a backend
must define and which are optional (with the default the core assumes). Subclass ``Backend``
(any array storage) or ``ArrayBackend`` (a NumPy-like module: set ``np``, ``xp`` and implement
``as_strided``) to inherit the defaults.

* ``Backend``: the protocol (runtime-checkable: ``isinstance(b, Backend)``);
* ``ArrayBackend``: its implementation over a NumPy-like module (the cpu and cuda plugins'
  base class);
* ``get(device_type)``: the backend of a device type, loaded on first use (the explicit lookup
  at the top of the package, as tinygrad's ``Device[...]``);
* ``loaded()``: the backends loaded so far;
* ``Storage``: what a tensor and its views share (root array, byte size, version counter,
  backend); a backend's ``root_storage`` is a subclass of it;
* ``register(backend)``: make ``backend`` the backend of its device type without a plugin (a
  test backend: ``tensorplay.testing.backend.MockBackend``); undone by the returned handle;
* ``missing_members(obj)``: the required and optional members ``obj`` lacks;
* ``device_finder(op, device_type)``: the device of a custom op's tensor arguments (refusing
  two devices of one type), for ``Backend.guard_kernel`` on backends with several devices;
* ``wrap_native(backend, arr, shape=, dtype=, device=, nbytes=)``: a new tensor owning a native
  array (what ``Backend.wrap`` returns, for a backend whose arrays are not NumPy-like);
* ``ElementwiseExpr``, ``Step``: what ``Backend.fuse_elementwise`` is handed (a chain of
  elementwise built-in ops found by ``tensorplay.compile``);
* ``generic_fuser(expr, backend)``: the core's fuser for an ``ArrayBackend`` (its reference
  kernels, blocked over the arrays), the fallback a backend's own ``fuse_elementwise`` may use.

Loading is registration time, never per call: what the built-in ops need (their kernels) is
bound once, when the backend is announced, by the op layer that subscribed to the announcement.

Errors: ``DeviceUnavailableError`` when no installed plugin provides the device (with the
distribution to install, or the plugin's recorded load error and its fix), when the backend
reports itself unavailable (``is_available()``), when the plugin's backend lacks a required
member of ``Backend``, has another ``device_type`` than its ``DeviceSpec``, or misbehaves while
loading (``is_available()`` raising or not returning ``(available, reason)``, ``kernels()``
raising): each names the plugin, the backend, the member and the fix, and leaves nothing
loaded. A failed device leaves every
other device working.
"""

from __future__ import annotations

import threading

from . import _devices, plugins
from ._backend import (OPTIONAL, REQUIRED, ArrayBackend, Backend, Storage, device_finder,
                       missing_members, wrap_native)
from ._device import Device
from ._fusion import ElementwiseExpr, Step, generic_fuser
from ._registry import RegistrationHandle
from .errors import DeviceUnavailableError

__all__ = [
    "OPTIONAL",
    "REQUIRED",
    "ArrayBackend",
    "Backend",
    "ElementwiseExpr",
    "Step",
    "Storage",
    "device_finder",
    "generic_fuser",
    "get",
    "loaded",
    "missing_members",
    "register",
    "wrap_native",
]

_lock = threading.RLock()


def get(device_type: str) -> Backend:
    """The backend of ``device_type`` (a string such as ``"cpu"``, ``"cuda"``, or a
    ``tensorplay.device``; the index is ignored), loading it on first use.

    Raises ``DeviceUnavailableError`` as described in the module docstring; ``ValueError`` for
    a malformed device spelling.
    """
    t = device_type if isinstance(device_type, str) and ":" not in device_type \
        else _device_type(device_type)
    b = _devices.loaded.get(t)
    if b is not None:
        return b
    return _devices.load(t)


def _device_type(d) -> str:
    return Device(d).type


def loaded() -> dict:
    """``{device type: backend}`` of the backends loaded so far (a copy)."""
    return dict(_devices.loaded)


def _provider_label(device_type: str):
    p = _devices.provider(device_type)
    if p is None:
        return None, None
    _, spec, rec = p
    return rec, spec


def _conformance_error(backend, device_type: str):
    """``DeviceUnavailableError`` for a backend lacking members of ``Backend``, or ``None``."""
    required, optional = missing_members(backend)
    if not required and not optional:
        return None
    if required:
        what = (f"lacks required member(s) {', '.join(required)} of tensorplay.backends.Backend. "
                f"Fix: implement them in {type(backend).__qualname__} (for a NumPy-like array "
                f"module, subclass tensorplay.backends.ArrayBackend, which provides all but "
                f"as_strided)")
    else:
        what = (f"lacks optional member(s) {', '.join(optional)} of tensorplay.backends.Backend "
                f"and does not subclass it. Fix: subclass tensorplay.backends.Backend (or "
                f"ArrayBackend) to inherit their defaults, or define them")
    return _backend_error(device_type, backend, what)


def _load(device_type: str):
    """The loader subscribed to ``_devices.loaders``: import the providing plugin's backend, check
    it against ``Backend`` and its availability, then record and announce it (the op layer binds
    the built-in kernels)."""
    with _lock:
        b = _devices.backend_of(device_type)
        if b is not None:   # loaded meanwhile, or being set up by this thread (a subscriber)
            return b
        b = plugins.load_backend(device_type)
        err = _conformance_error(b, device_type)
        if err is not None:
            raise err
        if b.device_type != device_type:
            raise _backend_error(device_type, b, f"has device_type {b.device_type!r}, but the "
                                 f"plugin declares it for device '{device_type}'. Fix: make "
                                 f"the DeviceSpec's type and the backend's device_type the same")
        try:
            res = b.is_available()
        except Exception as e:  # noqa: BLE001 - a plugin's probe: named, never raw
            raise _backend_error(device_type, b, f"is_available() raised {type(e).__name__}: "
                                 f"{e}; it must return (available, reason) and never raise "
                                 f"(catch the driver's error and return (False, str(error)))"
                                 ) from e
        if not (isinstance(res, tuple) and len(res) == 2 and isinstance(res[0], bool)):
            raise _backend_error(device_type, b, f"is_available() returned {res!r:.80}; it must "
                                 f"return a tuple (available, reason), e.g. (True, '')")
        ok, why = res
        if not ok:
            raise DeviceUnavailableError(f"device '{device_type}' is not available: {why}")
        try:
            _devices.add_loaded(b)     # subscribers bind the built-in kernels (b.kernels())
        except Exception as e:  # noqa: BLE001 - rolled back by add_loaded; named here
            raise _backend_error(device_type, b, f"could not be set up: {type(e).__name__}: "
                                 f"{e} (raised while binding its kernels: kernels(), "
                                 f"guard_kernel())") from e
        return b


def _backend_error(device_type: str, backend, what: str) -> DeviceUnavailableError:
    """``DeviceUnavailableError`` naming the device, the plugin (and its distribution) and the
    backend class, followed by ``what`` went wrong and its fix."""
    rec, spec = _provider_label(device_type)
    who = (f"plugin {rec.label}'s backend {spec.backend}" if rec is not None
           else f"backend {type(backend).__module__}.{type(backend).__qualname__}")
    tail = f"; then reinstall {rec.dist}" if rec is not None else ""
    return DeviceUnavailableError(f"device '{device_type}': {who} {what}{tail}.")


_devices.loaders.append(_load)


def register(backend: Backend) -> RegistrationHandle:
    """Make ``backend`` the loaded backend of ``backend.device_type`` (a lower-case identifier)
    without a plugin, binding the built-in ops' kernels for it (``backend.kernels()``).

    For tests and experiments: ``tensorplay.testing.backend.MockBackend`` uses it. The returned
    handle's ``destroy()`` unbinds the kernels and forgets the backend. ``tensorplay.device``
    accepts the type while it is registered.

    Raises ``ValueError`` when a backend of that type is already loaded (``cpu`` included) or the
    type is not an identifier, ``TypeError`` when ``backend`` lacks members of ``Backend``.
    """
    if isinstance(backend, type):
        raise TypeError(f"tensorplay.backends.register: got the class {backend.__qualname__}; "
                        f"pass an instance, e.g. register({backend.__qualname__}())")
    try:
        t = backend.device_type
    except AttributeError:
        raise TypeError(f"tensorplay.backends.register: {type(backend).__qualname__} has no "
                        f"device_type (required member of tensorplay.backends.Backend)") from None
    if not isinstance(t, str) or not t.isidentifier() or t != t.lower() or t == "meta":
        raise ValueError(f"tensorplay.backends.register: device_type must be a lower-case "
                         f"identifier other than 'meta', got {t!r}")
    err = _conformance_error(backend, t)
    if err is not None:
        raise TypeError(f"tensorplay.backends.register: {err}")
    with _lock:
        if t in _devices.loaded:
            raise ValueError(f"tensorplay.backends.register: device type {t!r} already has a "
                             f"loaded backend ({type(_devices.loaded[t]).__qualname__}); pick "
                             f"another device_type")
        added = t not in _devices.KNOWN_TYPES
        _devices.KNOWN_TYPES.add(t)
        try:
            _devices.add_loaded(backend)
        except BaseException:
            if added:
                _devices.KNOWN_TYPES.discard(t)
            raise

    def undo():
        with _lock:
            if _devices.loaded.get(t) is backend:
                _devices.remove_loaded(t)
            if added:
                _devices.KNOWN_TYPES.discard(t)
    return RegistrationHandle(undo)
