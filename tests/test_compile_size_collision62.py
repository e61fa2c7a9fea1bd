"""A compiled function's shape compared with a plain tuple holding a huge int is an ordinary
comparison, not a read of a data-dependent size. Found in the full suite (a flaky
``test_raw_launch_inside_compile``): a data-dependent size is a placeholder int 2**62 + k, whose
hash equals that of the small int k + 2 (Python hashes ints modulo 2**61 - 1), so a shape
cache keyed by size tuples (``empty_like``'s contiguous-strides lookup) compared a real shape
``(50,)`` with a cached placeholder shape ``(u48,)`` and the capture took it for a read of
``u48``: a graph break, and an error under ``fullgraph=True``. The placeholders now start at
2**62 + 2**60, whose hashes lie far from any real size."""

import tensorplay as tp


def test_selections_then_like_factories_of_every_small_size():
    # placeholders land in the shape caches (each capture of a selection makes new ones) ...
    for k in range(40):
        g = tp.compile(lambda x, k=k: x[x > k] * 2, fullgraph=True)
        assert g(tp.arange(50.0)).tolist() == [2.0 * v for v in range(k + 1, 50)]

    def f(x):
        return tp.empty_like(x).fill_(1.0) + tp.zeros_like(x) + x

    # ... and a real shape whose hash meets one is compared with it: an ordinary miss
    for n in range(1, 80):
        cf = tp.compile(f, fullgraph=True)
        assert cf(tp.zeros(n)).tolist() == [1.0] * n


def test_shape_compared_with_a_plain_tuple_of_huge_ints():
    def f(x):
        return x + 1 if x.shape == (2**62 + 48,) else x - 1

    cf = tp.compile(f, fullgraph=True)
    assert cf(tp.zeros(3)).tolist() == [-1.0, -1.0, -1.0]
    assert not cf.graph_skips
