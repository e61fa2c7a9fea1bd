"""Listing ops and plugins while another thread closes a ``Library`` (issue 28, "Threads").

``tensorplay.plugins.list()``, ``tensorplay.plugins.ops_table()`` (``tensorplay ops``),
``tensorplay.ops`` namespaces and a lookup miss must read a snapshot of the registry taken under
its lock: an op removed meanwhile may be missing from the answer, never a ``KeyError`` or
"dictionary changed size during iteration".
"""

from __future__ import annotations

import sys
import threading
import time

import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.testing import drop_ops

SECONDS = 1.5


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def test_listing_while_libraries_close(fast_switching):
    stop = time.monotonic() + SECONDS
    errors = []
    counts = {"closed": 0, "listed": 0}

    def churn(n):
        try:
            first = True                     # at least once, whatever the machine's load
            while first or time.monotonic() < stop:
                first = False
                with lib.Library(f"churn{n}", "DEF") as lib_:   # closed on leaving
                    for i in range(20):
                        lib_.define(f"f{i}(Tensor x) -> Tensor")
                counts["closed"] += 20
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(f"churn: {type(e).__name__}: {e}")

    def listing():
        try:
            first = True
            while first or time.monotonic() < stop:
                first = False
                tp.plugins.list()
                tp.plugins.ops_table()
                for _ in range(20):              # the cheap listings, many times
                    dir(tp.ops)
                    dir(tp.ops.churn0)
                try:
                    tp.ops.nosuchns.nosuchop       # the error lists the known namespaces
                except (LookupError, AttributeError):
                    pass
                counts["listed"] += 1
        except BaseException as e:  # noqa: BLE001
            errors.append(f"listing: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=churn, args=(n,)) for n in range(2)] + \
        [threading.Thread(target=listing) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    drop_ops("churn", prefix=True)
    assert not errors, errors[:3]
    assert counts["closed"] > 0 and counts["listed"] > 0, counts
