"""One compiled function called from several threads while its guarded values change (each
call a miss and a capture, the cache evicting): results right, no internal errors. Found by a
new user's review: ``IndexError: pop from empty list``, ``KeyError`` and "dictionary changed
size during iteration" from the cache's lookup and eviction, on most runs on 3.13."""

from __future__ import annotations

import sys
import threading

import pytest

import tensorplay as tp

pytestmark = pytest.mark.usefixtures("cpu")


def test_one_compiled_function_recaptured_from_eight_threads():
    # the code reads a size, so each size has a graph of its own: 97 sizes, one value each,
    # overflow the 64 graphs kept (values alone would stop at the recompile limit, 8 graphs)
    shared = tp.compile(lambda x, k: x * k + x.shape[0])
    errors: list = []

    def work(t):
        try:
            for i in range(300):
                n = (t * 300 + i) % 97 + 2
                k = float(n - 2)
                out = shared(tp.ones(n), k)
                assert out.tolist() == [k + n] * n, (k, out)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
    finally:
        sys.setswitchinterval(old)
    assert not [th for th in threads if th.is_alive()]
    assert not errors, errors[:3]
    assert shared.cache_size <= 64
