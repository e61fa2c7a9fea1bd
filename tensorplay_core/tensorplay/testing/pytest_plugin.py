"""pytest plugin of TensorPlay (entry point ``pytest11``: ``tensorplay``).

What it offers an op pack's test suite:

* ``pytest --tensorplay-check=PLUGIN [--tensorplay-check=...] [--tensorplay-check-device=cpu]``
  adds one test per (op, device) of each named plugin, running ``opcheck`` over every sample
  (``tensorplay.testing.check_plugin``); ids look like ``tensorplay-check[PLUGIN]::ns::op-cpu``.
* the fixture ``tensorplay_check``: ``tensorplay_check("my-pack", device="cpu")`` runs the check
  and fails the test with every failing (op, device, sample) message;
* the one-liner for a test module: ``test_ops = tensorplay.testing.opcheck_plugin_tests("my-pack")``
  (no option needed).

Nothing here runs unless asked: the option's items are added only when the option is given,
and ``tensorplay.testing.plugin_check`` is imported only then.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser):
    """``--tensorplay-check=PLUGIN`` (repeatable) and ``--tensorplay-check-device=DEVICE``."""
    group = parser.getgroup("tensorplay", "TensorPlay operator checks")
    group.addoption("--tensorplay-check", action="append", default=[], metavar="PLUGIN",
                    help="run opcheck over every op and sample of this tensorplay plugin "
                         "(distribution or entry-point name); repeatable")
    group.addoption("--tensorplay-check-device", default=None, metavar="DEVICE",
                    help="only check on this device (cpu, cuda, cuda:1); default: every "
                         "available device")


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


def pytest_collection_modifyitems(session, config, items):
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


@pytest.fixture
def tensorplay_check():
    """A function ``check(plugin, device=None, **opcheck_options)`` that runs
    ``tensorplay.testing.check_plugin`` and fails the test listing every failing (op, device,
    sample); returns the results when all passed (skips are allowed)."""
    def check(plugin, device=None, **kwargs):
        from .plugin_check import check_plugin
        results = check_plugin(plugin, device, **kwargs)
        bad = [r for r in results if r.status in ("failed", "error")]
        if bad:
            pytest.fail("\n".join(r.describe() for r in bad), pytrace=False)
        return results
    return check
