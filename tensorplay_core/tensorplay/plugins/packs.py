"""Op packs imported on first use: a pack whose ``tensorplay.namespaces`` metadata names its
operator namespaces (``example = "tensorplay_example_ops"``) is recorded by ``import tensorplay``
(status ``lazy``, from metadata alone) and imported the first time one of its namespaces is used:

* ``tensorplay.ops.<ns>.<op>`` (and ``dir(tensorplay.ops.<ns>)``);
* a ``tensorplay.library`` lookup of ``"ns::op"`` (``impl``, ``register_kernel``,
  ``get_kernel``, ``opcheck``..., anything through ``_registry.lookup``, and pickled ops);
* a definition in ``ns`` (``custom_op``, ``define``, ``Library(ns, ...)``), so that a clash with
  the pack's ops is the error it was when packs loaded at import;
* the listings (``tensorplay.plugins.list()``, ``records``, ``get_plugin``, ``ops_table``,
  ``sample_inputs``, ``dir(tensorplay.ops)``, ``tensorplay plugins | ops | check``): every pack.

A name no pack declares that is not registered (``tp.ops.other.op`` missing) loads every pack
not loaded yet before it is reported missing: a pack that defines ops in a namespace it does not
declare keeps working (and is warned once it loads, naming the namespaces to declare).

Loading is the same atomic load as at import (``loading._load_one``: controls were applied at
``import tensorplay``, conflicts and ownership as always, a failure is recorded with its fix and
rolled back whole, never taking another plugin down), followed by the pack's kernel entry points.
It runs under the plugin lock, once: a thread using a namespace while another loads its pack
waits (``_registry.lookup`` asks while the namespace is in ``_registry.lazy_namespaces``, and
the namespace leaves that set only once its packs are complete). A pack whose module is being
imported right now (the user's own ``import pack.ops``) is left for a later use: what that
import defines is adopted by the pack when it loads.
"""

from __future__ import annotations

import sys
import time

from .. import _registry
from .discovery import NAMESPACE_GROUP, _trace
from .loading import (
    _adopt,
    _install_kernel_eps,
    _load_one,
    _sync_unavailable,
    _warn_if_hollow,
    finish_deferred,
)
from .state import _S, PluginRecord
from .state import warn as _warn


def load_namespace(ns: str) -> None:
    """Import the op packs that declare namespace ``ns`` and are not loaded yet (no-op when
    none; waits while another thread loads one). Raises ``PluginError`` only with
    ``TENSORPLAY_STRICT_PLUGINS=1`` (a pack that fails to load; otherwise it is warned and
    recorded, and requests for its ops re-raise its error)."""
    if ns not in _S.lazy_ns:
        return
    with _S.lock:
        for rec in list(_S.lazy_ns.get(ns, ())):
            _load_pack(rec)


def load_packs() -> None:
    """Import every op pack not loaded yet, in distribution-name order (what the listings and
    ``tensorplay check`` need). Same errors as ``load_namespace``."""
    if not _S.lazy:
        return
    with _S.lock:
        for entry in list(_S.lazy.values()):
            _load_pack(entry[0])


def load_for(qualname: str) -> None:
    """Before ``"ns::op"`` is looked up or reported missing (``_registry.lookup`` calls this, by
    module name at call time): finish plugins still pending, load
    the packs that declare ``ns``; when no pack declares it and no op has that name, every pack
    not loaded yet (one may define it without declaring its namespace)."""
    finish_deferred()
    ns = qualname.partition("::")[0]
    if ns in _S.lazy_ns:
        load_namespace(ns)
    elif _S.lazy and _registry.registered(qualname) is None:
        load_packs()


def _load_pack(rec: PluginRecord) -> None:
    """Load lazy pack ``rec`` (``_S.lock`` held): adopt what its module defined if it was
    imported directly, import it and run its hooks atomically, then its kernel entry points."""
    entry = _S.lazy.get(rec.key)
    if entry is None or entry[0] is not rec or rec.status != "lazy" or _mid_import(rec):
        return
    del _S.lazy[rec.key]
    _, loader, strict, keps = entry
    t0 = time.perf_counter()
    rec.status = "pending"
    _trace("first use of namespace(s) %s: import %s", ", ".join(rec.namespaces), rec.label)
    try:
        _adopt(rec)
        _load_one(rec, loader, strict)
        if keps and rec.status == "loaded":
            _install_kernel_eps(rec, keps, strict)
        if rec.status == "loaded":
            _warn_if_hollow(rec)
            _warn_undeclared(rec)
    finally:
        for ns in rec.namespaces:
            left = [r for r in _S.lazy_ns.get(ns, ()) if r is not rec]
            if left:
                _S.lazy_ns[ns] = left
            else:
                _S.lazy_ns.pop(ns, None)
                _registry.lazy_namespaces.discard(ns)   # complete: lookups stop asking
        _sync_unavailable()
        _S.load_seconds += time.perf_counter() - t0


def _mid_import(rec: PluginRecord) -> bool:
    """Whether the pack's module, or one of its submodules, is executing its import now (the
    user imported it directly and it is defining its ops): loading it now would find it
    half-made; a later use loads it and adopts what the import defined."""
    top = rec.value.partition(":")[0].strip()
    for name, m in list(sys.modules.items()):
        if (name == top or name.startswith(top + ".")) and \
                getattr(getattr(m, "__spec__", None), "_initializing", False):
            return True
    return False


def _warn_undeclared(rec: PluginRecord) -> None:
    """A pack that defined ops in namespaces its metadata does not declare: they are there only
    once something else loaded it. Loaded, but warned and recorded, naming what to declare."""
    extra = sorted({q.partition("::")[0] for q in rec.ops} - set(rec.namespaces))
    if not extra:
        return
    mod = rec.value.partition(":")[0].strip()
    lines = ", ".join(f'{ns} = "{mod}"' for ns in extra)
    msg = (f"tensorplay: plugin {rec.label} defines operators in namespace(s) "
           f"{', '.join(extra)}, which its {NAMESPACE_GROUP!r} metadata does not declare (it "
           f"declares {', '.join(rec.namespaces)}): they appear only once something loads the "
           f"pack. Fix: add {lines} under [project.entry-points.\"{NAMESPACE_GROUP}\"] in the "
           f"pyproject.toml of {rec.dist} and reinstall.")
    rec.warnings.append(msg)
    _trace("%s", msg)
    _warn(msg, stacklevel=3)

