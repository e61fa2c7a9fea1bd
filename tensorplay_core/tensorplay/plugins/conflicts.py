"""Ownership and conflicts: who registered a kernel, and which of two plugins keeps it.

While a plugin loads, ``loading`` pushes a ``_PluginOwner`` on the registry's owner stack, so
every registration records its plugin and priority. The registry does not know the rules
between owners: it asks the registering owner (``Owner.check_kernel``), and ``_PluginOwner``
answers with ``_check_kernel_conflict``, refusing, before anything changes, a kernel that another
plugin's op owner or another plugin at the same priority already claims (errors name both
plugins and carry ``.fix``).
"""

from __future__ import annotations

from .. import _registry
from ..errors import DispatchError
from .state import _S, PluginRecord, _by_dist, _disable_name, _norm, plugin_label, priority_of
from .state import warn as _warn


class _PluginOwner(_registry.Owner):
    """The owner pushed while plugin ``rec`` loads; its priority is read when asked (the module
    may still be importing, with ``TENSORPLAY_PRIORITY`` already declared)."""

    __slots__ = ("record",)

    def __init__(self, rec: PluginRecord):
        super().__init__(rec.dist)
        self.record = rec

    @property
    def priority(self) -> int:
        return priority_of(self.name)

    def check_kernel(self, op, key, entry, current) -> None:
        """The conflict rules between plugins (``_check_kernel_conflict``)."""
        _check_kernel_conflict(op, key, entry, current)


def _owner_str(owner) -> str:
    if isinstance(owner, str):   # a plugin distribution: "plugin tensorplay-x 1.2"
        return f"plugin {plugin_label(owner)}"
    return repr(owner)


def _check_kernel_conflict(op, key: str, entry, stack) -> None:
    """Refuse (``DispatchError`` naming both plugins, with ``.fix``) a kernel registration of one
    plugin that conflicts with another plugin's (module docstring, "Conflicts"). Asked through
    ``_PluginOwner.check_kernel``: runs before the kernel is pushed on ``op``'s stack for ``key``."""
    owner, priority = entry.owner, entry.priority
    op_owner = op.owner
    if owner is not None and op_owner is not None and owner != op_owner and not op.is_builtin:
        # A plugin adding a kernel to another plugin's op: refused when the op's owner provides
        # (or names in its metadata) a kernel for this device, unless it declares a higher
        # priority. Checked against the owner's declaration, not the stack alone, so the
        # outcome does not depend on which plugin loads first.
        covered = any(e.owner == op_owner for e in stack) or \
            op_owner in declared_kernel_dists(op.name, key)
        owner_prio = priority_of(op_owner)
        if covered and priority > owner_prio:
            _override_consent(op, key, owner, op_owner)
        elif covered:
            fix = kernel_conflict_fix(owner, op_owner)
            err = DispatchError(
                f"register_kernel({op.name!r}, {key!r}): {_owner_str(owner)} tried to "
                f"register a {key!r} kernel for {op.name}, which {_owner_str(op_owner)} "
                f"defines and provides the {key!r} kernel of (priority {owner_prio}); "
                f"the op's owner keeps its kernel. Fix: {fix}")
            err.fix = fix
            raise err
    if stack:
        top_owner, top_prio = stack[-1].owner, stack[-1].priority
        if owner is not None and top_owner is not None and owner != top_owner and \
                priority != top_prio and owner != op_owner and top_owner != op_owner:
            # two plugins, neither the op's owner, claim one kernel: the higher priority wins
            # only with the user's word for it, whichever of them loads first
            if priority > top_prio:
                _override_consent(op, key, owner, top_owner)
            else:
                _override_consent(op, key, top_owner, owner, refuse=owner)
        if owner is not None and top_owner is not None and owner != top_owner and \
                priority == top_prio and owner != op_owner:
            err = DispatchError(
                f"register_kernel({op.name!r}, {key!r}): conflict: kernel from "
                f"{_owner_str(owner)} and kernel from {_owner_str(top_owner)} both claim "
                f"({op.name}, {key}). Uninstall one of them, or declare "
                f"TENSORPLAY_PRIORITY = 1 in the module of the one that should win "
                f"(higher wins).")
            err.fix = (f"uninstall one of them, or declare TENSORPLAY_PRIORITY = "
                       f"{priority + 1} in the plugin module of the one that should win "
                       f"(higher wins).")
            raise err


OVERRIDE_CONTROL = "TENSORPLAY_KERNEL_OVERRIDE"


def override_allowed(dist: str) -> bool:
    """Whether the user named plugin distribution ``dist`` in ``TENSORPLAY_KERNEL_OVERRIDE`` (a
    comma list of the distributions allowed to replace other distributions' kernels)."""
    from .. import _devices
    raw = _devices.control(OVERRIDE_CONTROL, "") or ""
    names = {_norm(x) for x in raw.split(",") if x.strip()}
    rec = _by_dist(dist)
    return _norm(dist) in names or (rec is not None and _norm(rec.name) in names)


def _override_consent(op, key: str, intruder: str, victim: str, refuse=None) -> None:
    """Plugin ``intruder`` is about to replace plugin ``victim``'s ``key`` kernel of ``op`` (its
    higher ``TENSORPLAY_PRIORITY``). A priority is the plugin's own claim; replacing another
    distribution's kernel also needs the user's word: ``TENSORPLAY_KERNEL_OVERRIDE`` naming the
    intruder. Without it, ``DispatchError`` (the intruder's load fails, naming the control);
    with it, a ``PluginWarning`` naming both distributions, the op and the device (torch warns
    on every kernel override). ``refuse``: the plugin whose registration is refused without the
    word (default the intruder; the victim when it registers after the intruder)."""
    what = (f"{_owner_str(intruder)} (TENSORPLAY_PRIORITY {priority_of(intruder)}) replaces the "
            f"{key!r} kernel of {op.name} registered by {_owner_str(victim)} (priority "
            f"{priority_of(victim)})")
    if override_allowed(intruder):
        _warn(f"tensorplay: {what}, as {OVERRIDE_CONTROL} allows; calls of {op.name} on "
              f"{key} run {intruder}'s kernel.", stacklevel=4)
        return
    refused = refuse or intruder
    rec = _by_dist(intruder)
    disable = _disable_name(rec) if rec is not None else intruder
    fix = (f"to use {intruder}'s kernel, allow it with {OVERRIDE_CONTROL}={intruder}; otherwise "
           f"drop the registration from {intruder}, or disable it with "
           f"TENSORPLAY_DISABLE_PLUGINS={disable}.")
    if refused != intruder:
        what += f"; {_owner_str(refused)}'s registration is refused until that is settled"
    err = DispatchError(f"register_kernel({op.name!r}, {key!r}): {what}: refused, a plugin's "
                        f"priority alone cannot replace another distribution's kernel. Fix: {fix}")
    err.fix = fix
    raise err


def kernel_conflict_fix(intruder, op_owner) -> str:
    """The fix sentence of a refused kernel registration of plugin ``intruder`` on an op owned by
    plugin ``op_owner`` (both distribution names)."""
    prio = priority_of(op_owner)
    rec = _by_dist(intruder)
    disable = _disable_name(rec) if rec is not None else intruder
    return (f"if {intruder} is meant to replace that kernel, declare TENSORPLAY_PRIORITY = "
            f"{prio + 1} (higher than {op_owner}'s {prio}) in its plugin module; otherwise drop "
            f"the registration from {intruder}, or disable it with "
            f"TENSORPLAY_DISABLE_PLUGINS={disable}; declaring the higher priority also needs "
            f"the user's {OVERRIDE_CONTROL}={intruder}.")


def declared_kernel_dists(qualname: str, key: str) -> set:
    """The distributions whose ``tensorplay.kernels`` metadata names a kernel for
    (``qualname``, ``key``)."""
    return _S.declared.get((qualname, key), set())

