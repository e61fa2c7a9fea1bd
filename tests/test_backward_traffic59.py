"""Memory traffic of ``backward()`` for the graphs of ``benchmarks/bench_cuda_backward.py``.

On a GPU these backwards are bound by memory traffic at large sizes, so each full-size array an
extra kernel reads or writes (a gradient expanded and copied before a multiply, the mean's
division as its own pass, an ``exp`` recomputed, ``.grad`` filled by a copy where it could take
the buffer) is time lost against torch. A ``MockBackend`` whose built-in kernels are wrapped
counts, for each backward, the ``n x n`` arrays read in full (a broadcast operand -- a 0 stride --
reads ``n`` elements, not ``n * n``) and written; each count is the least that graph's gradients
need, and what torch's autograd formulas (``derivatives.yaml``) do for the same graph:

* ``(x * w).sum()``: ``x.grad = g * w`` and ``w.grad = g * x`` with ``g`` one element broadcast:
  two reads, two writes;
* ``x.sum(1).mean()``: ``x.grad`` is a row broadcast, materialised once in ``.grad``: no read,
  one write (the mean's division is over ``n`` elements, before the expand);
* ``x.exp().sum(1).log().mean()``: ``x.grad = exp(x) * (g / s)[:, None]``: one read of the
  saved ``exp(x)``, one write, taken by ``.grad`` without a copy;
* ``(x @ w).sum()``: row and column sums of ``w`` and ``x`` (one read each) broadcast into the
  two gradients (one write each).

Gradients are checked against NumPy in float64 as well."""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay.testing.backend import MockBackend

np = pytest.importorskip("numpy")

N = 48     # not a power of two: a count cannot come from a coincidence of sizes


class _Traffic(MockBackend):
    """A ``MockBackend`` recording, while ``on``, each built-in kernel call's ``n x n`` arrays:
    ``reads`` (array arguments that are not broadcasts), ``writes`` (results, and the target of
    ``assign``, through which in-place kernels such as ``copy_`` write). ``empty`` allocates and
    writes nothing (a GPU pool hands out memory unwritten)."""

    def __init__(self, numel, **kw):
        super().__init__("traffic", **kw)
        self.numel = numel
        self.on = False
        self.log: list = []          # (kernel name, full reads, writes)

    def _full(self, a):
        return isinstance(a, np.ndarray) and a.size == self.numel

    def _read(self, a):
        return self._full(a) and not (a.ndim and 0 in a.strides)

    def kernels(self):
        ks = super().kernels()
        out = {}
        for name, fn in ks.items():
            out[name] = self._counted(name, fn)
        return out

    def _counted(self, name, fn):
        be = self

        def kernel(*args, **kwargs):
            r = fn(*args, **kwargs)
            if be.on and r is not None and name != "empty":
                # (a kernel returning None wrote in place: assign records it)
                res = r if isinstance(r, (tuple, list)) else (r,)
                reads = sum(map(be._read, [*args, *kwargs.values()]))
                writes = sum(map(be._full, res))
                be.log.append((name, reads, writes))
            return r
        return kernel

    def assign(self, dst, src):
        if self.on:
            self.log.append(("assign", int(self._read(src)), int(self._full(dst))))
        return super().assign(dst, src)

    def traffic(self):
        """``(full reads, writes)`` of ``n x n`` arrays recorded so far."""
        return sum(e[1] for e in self.log), sum(e[2] for e in self.log)


def _reference(name, x, w):
    """The benchmark's own float64 gradients (benchmarks/bench_cuda_backward.py): one formula
    for both."""
    import pathlib
    import sys
    bench = str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    import bench_cuda_backward
    return bench_cuda_backward._reference(name, x, w)


GRAPHS = {
    "mul_sum": (lambda x, w: (x * w).sum(), (2, 2)),
    "sum_mean": (lambda x, w: x.sum(1).mean(), (0, 1)),
    "lse_mean": (lambda x, w: x.exp().sum(1).log().mean(), (1, 1)),
    "mm_sum": (lambda x, w: (x @ w).sum(), (2, 2)),
}


@pytest.mark.parametrize("device_arrays", [False, True], ids=["host", "device_arrays"])
@pytest.mark.parametrize("name", list(GRAPHS))
def test_backward_reads_and_writes_each_full_array_at_most_once(name, device_arrays):
    f, (want_reads, want_writes) = GRAPHS[name]
    rng = np.random.default_rng(5)
    xn = rng.standard_normal((N, N)).astype(np.float32)
    wn = rng.standard_normal((N, N)).astype(np.float32)
    with _Traffic(N * N, device_arrays=device_arrays) as be:
        x = tp.tensor(xn, device="traffic", requires_grad=True)
        w = tp.tensor(wn, device="traffic", requires_grad=True)
        loss = f(x, w)
        be.on = True
        loss.backward()
        be.on = False
        got = be.traffic()
        grads = [t.grad for t in (x, w)]
        grads = [None if g is None else np.asarray(g.cpu().numpy(), dtype=np.float64)
                 for g in grads]
    assert got == (want_reads, want_writes), (
        f"{name}: backward read {got[0]} and wrote {got[1]} arrays of {N}x{N} (least: "
        f"{want_reads} and {want_writes}); kernels: {be.log}")
    for g, ref in zip(grads, _reference(name, xn, wn)):
        if ref is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, ref, rtol=2e-5, atol=1e-6 * np.abs(ref).max())


def test_the_counter_sees_a_materialised_broadcast():
    """The counting itself: a gradient expanded and copied before the multiply (what the graphs
    above must not do) is one write and one read more than the multiply by the broadcast."""
    with _Traffic(N * N) as be:
        g = tp.ones(N, device="traffic").unsqueeze(1).expand(N, N)
        e = tp.ones(N, N, device="traffic")
        be.on = True
        g * e
        lean = be.traffic()
        be.log.clear()
        g.contiguous() * e
        fat = be.traffic()
        be.on = False
    assert lean == (1, 1)
    assert fat == (2, 2)
