"""pytest plugin of TensorPlay: the implementation behind the entry module ``_tensorplay_pytest``
(entry point ``pytest11``: ``tensorplay``), which imports this module only when used.

What it offers an op pack's test suite:

* ``pytest --tensorplay-check=PLUGIN [--tensorplay-check=...] [--tensorplay-check-device=cpu]``
  adds one test per (op, device) of each named plugin, running ``opcheck`` over every sample
  (``tensorplay.testing.check_plugin``); ids look like ``tensorplay-check[PLUGIN]::ns::op-cpu``.
* the fixture ``tensorplay_check``: ``tensorplay_check("my-pack", device="cpu")`` runs the check
  and fails the test with every failing (op, device, sample) message;
* the one-liner for a test module: ``test_ops = tensorplay.testing.opcheck_plugin_tests("my-pack")``
  (no option needed).

Under pytest-xdist (``pytest -n N``) the option's items and the one-liner's tests spread over the
xdist workers like any others: every worker collects the same items (the case list is
deterministic), and each item's samples are seeded by its (op, device), so an item gives the same
result on any worker and in a serial run. The fixture checks a whole plugin inside one test:
pass it ``jobs="auto"`` (``check_plugin``'s worker processes) to use the cores there.

Nothing runs unless asked: in a pytest run that uses neither the option nor the fixture,
neither this module nor ``tensorplay`` is imported at all (so a broken TensorPlay plugin cannot
disturb unrelated test suites, even under ``-W error``).
"""

from __future__ import annotations

import pytest


class TensorPlayCheckItem(pytest.Item):
    """One (op, device) of a plugin: ``opcheck`` over each of its samples."""

    def __init__(self, *, case=None, setup_error=None, plugin="", **kwargs):
        super().__init__(**kwargs)
        self.case = case
        self.setup_error = setup_error
        self.plugin = plugin

    def runtest(self):
        from .plugin_check import run_case
        if self.setup_error is not None:
            raise self.setup_error
        results = run_case(self.case)
        bad = [r for r in results if r.status in ("failed", "error")]
        if bad:
            raise _CheckFailed("\n".join(r.describe() for r in bad))
        if all(r.status == "skipped" for r in results):
            pytest.skip(results[0].message)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, _CheckFailed):
            return str(excinfo.value)
        if excinfo.value is self.setup_error:   # plugin missing/failed/blocked: the message says it
            e = excinfo.value
            cause = e.__cause__
            return f"{type(e).__name__}: {e}" + (
                f"\n  caused by {type(cause).__name__}: {cause}" if cause is not None else "")
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"{self.parent.name}::{self.name}"


class TensorPlayCheckCollector(pytest.Collector):
    """``tensorplay-check[PLUGIN]``: the items of one ``--tensorplay-check`` plugin."""

    def __init__(self, *, items_spec=(), **kwargs):
        super().__init__(**kwargs)
        self.items_spec = items_spec

    def collect(self):
        return [TensorPlayCheckItem.from_parent(self, **spec) for spec in self.items_spec]


class _CheckFailed(AssertionError):
    pass


def add_check_items(session, config, items):
    """Append the ``--tensorplay-check`` items (nothing when the option is not given)."""
    names = config.getoption("tensorplay_check") or []
    if not names:
        return
    from .plugin_check import plugin_check_cases
    device = config.getoption("tensorplay_check_device")
    for name in names:
        try:
            cases, err = plugin_check_cases(name, device), None
        except Exception as e:  # noqa: BLE001 - reported as a failing item, never dropped
            cases, err = [], e
        if err is not None or not cases:
            specs = [{"name": "setup", "plugin": name, "setup_error": err or AssertionError(
                f"--tensorplay-check={name}: the plugin has no ops to check on "
                f"{device or 'any available device'}")}]
        else:
            specs = [{"name": case.id, "case": case, "plugin": name} for case in cases]
        coll = TensorPlayCheckCollector.from_parent(session, name=f"tensorplay-check[{name}]",
                                                    items_spec=specs)
        for node in coll.collect():
            items.append(node)


def run_check(plugin, device=None, **kwargs):
    """The ``tensorplay_check`` fixture's function: ``tensorplay.testing.check_plugin`` over every
    op and sample of ``plugin``; fails the test listing every failing (op, device, sample) and
    returns the results when all passed (skips are allowed)."""
    from .plugin_check import check_plugin
    results = check_plugin(plugin, device, **kwargs)
    bad = [r for r in results if r.status in ("failed", "error")]
    if bad:
        pytest.fail("\n".join(r.describe() for r in bad), pytrace=False)
    return results
