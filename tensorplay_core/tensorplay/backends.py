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
* ``first_use(device_type)``: what that first use does, step by step (below);
* ``loaded()``: the backends loaded so far;
* ``Storage``: what a tensor and its views share (root array, byte size, version counter,
  backend); a backend's ``root_storage`` is a subclass of it;
* ``register(backend)``: make ``backend`` the backend of its device type without a plugin (a
  test backend: ``tensorplay.testing.backend.MockBackend``); undone by the returned handle;
* ``missing_members(obj)``: the required and optional members ``obj`` lacks;
* ``device_finder(op, device_type)``: the device of a custom op's tensor arguments (refusing
  two devices of one type), for ``Backend.guard_kernel`` on backends with several devices;
* ``wrap_native(backend, arr, shape=, dtype=, device=, nbytes=)``: a new tensor owning a native
  array (what ``Backend.wrap`` returns, for a backend whose arrays are not NumPy-like), its
  arguments checked;
* ``new_tensor(storage, native, shape, stride, offset, dtype, device, backend)``: the one
  constructor of real tensors, unchecked (the per-op path of a backend's ``wrap``: shapes and
  strides in elements; see its docstring);
* ``ElementwiseExpr``, ``Step``: what ``Backend.fuse_elementwise`` is handed (a chain of
  elementwise built-in ops found by ``tensorplay.compile``);
* ``generic_fuser(expr, backend)``: the core's fuser for an ``ArrayBackend`` (its reference
  kernels, blocked over the arrays), the fallback a backend's own ``fuse_elementwise`` may use.

A device's first use is one function, ``first_use(device_type)``, read top to bottom: load the
plugin that provides the device and build its backend, check it, bind its kernels (the built-in
ops' kernels, and the custom ops' kernels registered for the device before it loaded), give it the
last ``manual_seed``, publish it, then drop the cached canonical devices. It publishes the backend
only when every step succeeded (another thread waits on the lock, and never sees a half-bound
device; a failed step undoes the earlier ones). Every lower layer reaches it through one route,
``_devices.load``, which names this module at call time (see its docstring for why).
Loading is registration time, never per call.

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

from . import _device, _devices, _factories, _ops, _registry, plugins
from ._backend import (OPTIONAL, REQUIRED, Backend, Storage, device_finder, missing_members,
                       wrap_native)
from ._device import Device
from ._kernels.array_backend import ArrayBackend
from ._tensor_base import new_tensor
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
    "first_use",
    "generic_fuser",
    "get",
    "loaded",
    "missing_members",
    "new_tensor",
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
    return first_use(t)


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


def first_use(device_type: str) -> Backend:
    """Set up device ``device_type`` (``"cpu"``, ``"cuda"``...) on its first use and return its
    backend; the loaded one when another thread got there first. Every first use of a device
    (a dispatch miss, ``tensorplay.backends.get``, a factory with ``device=``) comes here through
    ``_devices.load``. The steps, in order, under one lock:

    1. load the plugin that provides the device and build its backend (``plugins.load_backend``);
    2. check it: the ``Backend`` protocol's members, its ``device_type``, ``is_available()``;
    3. bind the built-in ops' kernels to it (``backend.kernels()``);
    4. rebind the custom ops registered for this device before it loaded (``guard_kernel``);
    5. apply the last ``tensorplay.manual_seed``;
    6. publish it: only now does ``tensorplay.backends.loaded()`` list it and do other threads
       dispatch to it (another thread asking meanwhile waits on the lock).

    Raises ``DeviceUnavailableError`` naming the device, the plugin and the fix when a step
    fails; what the earlier steps did is undone and nothing is published."""
    with _lock:
        b = _devices.backend_of(device_type)
        if b is not None:   # loaded meanwhile, or being set up by this thread (its own step)
            return b
        # 1. load the plugin that provides the device, and build its backend
        b = plugins.load_backend(device_type)
        # 2. check it: the protocol's members, its device type, its availability
        _check_backend(b, device_type)
        # 3-6. bind its kernels, seed it, publish it
        try:
            _install(b)
        except Exception as e:  # noqa: BLE001 - undone by _install; named here
            raise _backend_error(device_type, b, f"could not be set up: {type(e).__name__}: "
                                 f"{e} (raised while binding its kernels: kernels(), "
                                 f"guard_kernel())") from e
        return b


def _check_backend(b, device_type: str) -> None:
    """``DeviceUnavailableError`` for a plugin's backend that lacks members of ``Backend``, has
    another device type than its ``DeviceSpec``, or is not available (``is_available()``)."""
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


# device type -> what undoes ``_install`` of its backend (latest last), for ``register``'s handle
_undo: dict = {}


def _install(backend) -> None:
    """Steps 3-6 of a device's first use (and all of ``register``), under ``_lock``: bind the
    backend's kernels, seed it, publish it. When a step raises, the earlier ones are undone,
    nothing is published, and the error propagates."""
    t = backend.device_type
    undo = []
    _devices.begin_binding(backend)    # its own steps see it (backend_of), other threads do not
    try:
        # 3. the built-in ops' kernels: backend.kernels() (ArrayBackend: the reference kernels
        # bound to its xp), each wrapped in an adapter generated on its first call
        undo.append(_ops.install_backend(backend))
        # 4. custom ops registered for this device before it loaded: their tables are rebuilt,
        # binding each kernel through backend.guard_kernel (undone by rebuilding them again
        # once the backend is gone)
        _registry.rebuild_ops_with(t)
        undo.append(lambda: _registry.rebuild_ops_with(t))
        # 5. the last manual_seed, so a device loaded after it draws seeded numbers
        _factories.seed_new_backend(backend)
    except BaseException:
        _devices.abandon(t)
        for u in reversed(undo):
            u()
        raise
    # 6. publish: from here on, every thread finds the backend, complete
    _devices.publish(backend)
    # a device type's index rule may depend on its backend (indexed_devices, device_count):
    # canonical devices cached before the backend was published are computed again
    _device.forget_canonical()
    _undo[t] = undo


def _uninstall(device_type: str) -> None:
    """Undo ``_install`` of ``device_type``'s backend (``register``'s handle): forget it, then
    unbind its kernels (latest first). No-op when none is loaded."""
    if _devices.withdraw(device_type) is None:
        return
    for u in reversed(_undo.pop(device_type, [])):
        u()
    _device.forget_canonical()


def _backend_error(device_type: str, backend, what: str) -> DeviceUnavailableError:
    """``DeviceUnavailableError`` naming the device, the plugin (and its distribution) and the
    backend class, followed by ``what`` went wrong and its fix."""
    rec, spec = _provider_label(device_type)
    who = (f"plugin {rec.label}'s backend {spec.backend}" if rec is not None
           else f"backend {type(backend).__module__}.{type(backend).__qualname__}")
    tail = f"; then reinstall {rec.dist}" if rec is not None else ""
    return DeviceUnavailableError(f"device '{device_type}': {who} {what}{tail}.")



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
            _install(backend)
        except BaseException:
            if added:
                _devices.KNOWN_TYPES.discard(t)
            raise

    def undo():
        with _lock:
            if _devices.loaded.get(t) is backend:
                _uninstall(t)
            if added:
                _devices.KNOWN_TYPES.discard(t)
    return RegistrationHandle(undo)
