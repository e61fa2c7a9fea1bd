"""``MockBackend(device_arrays=True)``: NumPy standing in for a GPU array library, so tests run
the reference kernels' device branch (the one they take for CuPy) where there is no GPU, with
host reads refused inside ``forbid_sync()`` as under ``cupyx.allow_synchronize(False)``.

Session 48's GPU run found two cuda-only tests failing that CI never ran (one a test bug, one
still unexplained); conftest's ``gpu_stand_in`` now runs such tests here too
(test_conformance's ``gpustandin`` parameters, tests/_cuda_vs_cpu.py's ``DEVICES``)."""

from __future__ import annotations

import threading

import pytest

import tensorplay as tp
from tensorplay.testing.backend import DeviceSynchronized, MockBackend

np = pytest.importorskip("numpy")


@pytest.fixture
def be():
    with MockBackend("standin49", device_arrays=True) as b:
        yield b


def test_the_array_module_is_not_numpy_and_scalars_stay_arrays(be):
    # the kernels ask "is this NumPy?" to decide whether to compute on the host
    assert be.np.__name__ != "numpy"
    x = tp.tensor([1.0, 2.0, 3.0], device="standin49")
    assert isinstance(x.native, be.np.ndarray) and type(x.native) is not np.ndarray
    s = x.sum().native
    assert type(s) is be.np.ndarray and s.shape == ()     # as CuPy: a 0-dim array, no scalar
    assert x.sum().item() == 6.0                            # reads are fine outside forbid_sync


@pytest.mark.parametrize("read,what", [
    (lambda t: bool(t.sum() > 0), ".item()"), (lambda t: t.tolist(), ".tolist()"),
    (lambda t: float(t[0]), ".item()"), (lambda t: t.cpu(), "to_host"),
    (lambda t: t[t > 1.5], "boolean-mask"), (lambda t: tp.nonzero(t), "nonzero()"),
], ids=["bool", "tolist", "float", "cpu", "mask index", "nonzero"])
def test_host_reads_raise_inside_forbid_sync(be, read, what):
    x = tp.tensor([1.0, 2.0, 3.0], device="standin49")
    with be.forbid_sync():
        with pytest.raises(DeviceSynchronized, match="inside forbid_sync") as e:
            read(x)
    assert what in str(e.value)                               # names the read
    read(x)                                                   # and fine after it


def test_device_work_runs_inside_forbid_sync(be):
    x = tp.tensor([0.5, -1.5, 2.5, -0.0, float("inf")], device="standin49")
    with be.forbid_sync():
        y = tp.where(x > 0, tp.digamma(x), tp.lgamma(x)) * 2 + tp.polygamma(2, x).abs()
        z = (y.exp() - 1).sum()
    want = (tp.where(x.cpu() > 0, tp.digamma(x.cpu()), tp.lgamma(x.cpu())) * 2
            + tp.polygamma(2, x.cpu()).abs()).exp().sub(1).sum()
    assert z.item() == pytest.approx(want.item(), rel=1e-12, nan_ok=True)


def test_forbid_sync_nests_and_is_per_thread(be):
    x = tp.tensor([1.0], device="standin49")
    seen = []
    with be.forbid_sync():
        with be.forbid_sync():
            pass
        with pytest.raises(DeviceSynchronized):      # the outer block still forbids
            x.item()
        t = threading.Thread(target=lambda: seen.append(x.item()))
        t.start()
        t.join()
    assert seen == [1.0]                              # another thread was never forbidden
    assert x.item() == 1.0


def test_forbid_sync_needs_device_arrays():
    with MockBackend("standin49b") as b:
        with pytest.raises(ValueError, match="device_arrays=True"):
            b.forbid_sync()


def test_no_floating_point_warnings_from_masked_lanes(be, recwarn):
    # a GPU library computes every lane of a branch silently; the stand-in too
    x = tp.tensor([0.0, -1.0, 1e30], device="standin49")     # (1e30 squared: overflow)
    (tp.log(x) + 1 / x + x * x).cpu()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_the_special_functions_device_branch_matches_the_host(be):
    """A dense grid through the device branch of the special functions against the host branch
    (NumPy): the two compute differently (every lane and ``where`` on the device), so this
    catches a branch that only the GPU would take."""
    g = np.concatenate([np.linspace(-30.25, 30.5, 2441), [-3e6 - 0.5, 1e-300, -0.0, 0.0,
                                                         np.inf, -np.inf, np.nan]])
    xh, xd = tp.tensor(g), tp.tensor(g, device="standin49")
    ops = {"digamma": tp.digamma, "lgamma": tp.lgamma, "erfinv": lambda t: tp.erfinv(t / 31),
           "i0": tp.i0, "erfc": tp.erfc,
           **{f"polygamma {n}": (lambda t, n=n: tp.polygamma(n, t)) for n in (1, 2, 3)}}
    for name, f in ops.items():
        with be.forbid_sync():
            d = f(xd)
        h, d = f(xh).numpy(), d.cpu().numpy()
        bad = ~np.isfinite(h)
        np.testing.assert_array_equal(d[bad], h[bad], err_msg=name)
        # relative to the value, or to 1 near a zero (the reflections cancel to ~1e-13 there)
        np.testing.assert_allclose(d[~bad], h[~bad], rtol=1e-11, atol=1e-11, err_msg=name)
