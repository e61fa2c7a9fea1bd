"""Session 47 (h-corr47): divergences from torch a user can meet -- masked subgradients of the
norm family, ``x.data``'s aliasing in the storage-identity checks, a view's lazily regenerated
``grad_fn`` read by two threads at once, polygamma's host read. Torch-free (the torch
differential is tests/torch_bridge/test_corr47_differential.py)."""

from __future__ import annotations

import functools
import math
import sys
import threading

import pytest

import tensorplay as tp
from tensorplay import linalg as LA


# -- item 3: a stale view's grad_fn regenerated once, whichever thread reads it ------------------
def test_view_grad_fn_regenerated_once_across_threads():
    """Two threads reading ``v.grad_fn`` of one stale view at once see the same node (torch
    has one node per view history); before the fix each could build its own, or one could see
    the old node while the other was regenerating."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        n_threads, rounds, n_views = 4, 40, 16
        barrier = threading.Barrier(n_threads, timeout=60)
        seen = [[None] * n_views for _ in range(n_threads)]
        state = {}
        bad = []

        def reader(k):
            try:
                _read(k)
            except BaseException as e:   # noqa: BLE001 - reported below, the others released
                bad.append(repr(e))
                barrier.abort()

        def _read(k):
            for _ in range(rounds):
                barrier.wait()
                views = state["views"]
                seen[k] = [v.grad_fn for v in views]
                barrier.wait()
                if k == 0:
                    for j in range(n_views):
                        nodes = {id(seen[i][j]) for i in range(n_threads)}
                        if len(nodes) != 1 or seen[0][j] is not views[j].grad_fn or \
                                type(seen[0][j]).__name__ != "AsStridedBackward":
                            bad.append((j, len(nodes)))
                    _new_round()
                barrier.wait()

        def _new_round():
            a = tp.randn(n_views, 3, requires_grad=True)
            base = a * 1.0
            views = [base[j] for j in range(n_views)]
            base.mul_(2.0)                 # every view's history is now stale
            state["views"] = views

        _new_round()
        ts = [threading.Thread(target=reader, args=(k,)) for k in range(n_threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not bad, bad[:5]
    finally:
        sys.setswitchinterval(old)


def test_view_grad_fn_regenerated_gradient_flows():
    # the regenerated node is the one backward uses (the single-thread neighbour)
    a = tp.ones(2, 3, requires_grad=True)
    base = a * 1.0
    v = base[0]
    base.mul_(3.0)
    node = v.grad_fn
    assert node is v.grad_fn and type(node).__name__ == "AsStridedBackward"
    v.sum().backward()
    assert a.grad.tolist() == [[3.0, 3.0, 3.0], [0.0, 0.0, 0.0]]


# -- item 2: x.data is the same storage as x in the storage-identity checks -------------------
def test_data_alias_same_storage_and_pointer():
    x = tp.arange(6.0)
    d = x.data
    assert d.data_ptr() == x.data_ptr()
    assert d.untyped_storage() is x.untyped_storage()
    assert d[2:].untyped_storage() is x[1:].data.untyped_storage()


@pytest.mark.parametrize("which", ["out_is_data", "input_is_data", "both_data"])
def test_out_partial_overlap_through_data_raises(which):
    """``out=`` sharing only part of an input's memory is refused (torch's message), when one
    side is reached through ``.data`` (its own version counter, the same memory) too."""
    x = tp.arange(6.0)
    src = x.data[:3] if which != "out_is_data" else x[:3]
    dst = x.data[1:4] if which != "input_is_data" else x[1:4]
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        tp.exp(src, out=dst)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]     # nothing written


def test_out_full_overlap_through_data_allowed():
    # out= the input itself (same elements, same layout) is allowed, through .data too (torch)
    x = tp.arange(4.0)
    r = tp.exp(x, out=x.data)
    assert r.data_ptr() == x.data_ptr()
    assert x.tolist() == pytest.approx([math.exp(i) for i in range(4)])


def _alias_op(name, body):
    from tensorplay import library

    @library.custom_op(f"corr47::{name}", mutates_args=())
    def op(x: tp.Tensor) -> tp.Tensor:
        return body(x)

    @op.register_fake
    def _(x):
        return x.new_empty(x.shape)
    return op


def test_opcheck_flags_output_that_is_input_data():
    from tensorplay import library
    op = _alias_op("returns_data", lambda x: x.data)
    x = tp.randn(3)
    res = library.opcheck(op, (x,), test_utils=("test_schema",), raise_exception=False)
    msg = str(res)
    assert "shares storage with input" in msg, msg


def test_opcheck_flags_two_outputs_one_storage_through_data():
    from tensorplay import library

    @library.custom_op("corr47::two_aliases", mutates_args=())
    def op(x: tp.Tensor) -> tuple[tp.Tensor, tp.Tensor]:
        y = x.clone()
        return y, y.data

    @op.register_fake
    def _(x):
        return x.new_empty(x.shape), x.new_empty(x.shape)
    res = library.opcheck(op, (tp.randn(3),), test_utils=("test_schema",), raise_exception=False)
    assert "shares storage with output" in str(res), str(res)


# -- item 1: masked subgradients of the norm family (torch's norm backward) ---------------------
def _grad(fn, *arrays):
    ts = [tp.tensor(a, dtype=tp.float64, requires_grad=True) for a in arrays]
    fn(*ts).sum().backward()
    return [t.grad.tolist() for t in ts]


@pytest.mark.parametrize("p", [2, 3, 1.5, 0.5, "fro", math.inf])
def test_norm_of_zeros_has_zero_gradient(p):
    assert _grad(lambda x: tp.norm(x, p), [0.0, 0.0, 0.0]) == [[0.0, 0.0, 0.0]]
    assert _grad(lambda x: x.norm(p, dim=1, keepdim=True), [[0.0, 0.0], [3.0, 4.0]])[0][0] == \
        [0.0, 0.0]


def test_dist_at_equal_inputs_has_zero_gradient():
    a = [[1.0, -2.0], [0.5, 3.0]]
    for p in (2, 3, 0.5):
        assert _grad(lambda x, y: tp.dist(x, y, p), a, a) == [[[0.0, 0.0], [0.0, 0.0]]] * 2


def test_vector_norm_small_ord_masks_zero_elements():
    # 0 < ord < 1: the zero element's gradient is 0 (torch), not nan; the others are finite
    g = _grad(lambda x: LA.vector_norm(x, 0.5), [0.0, 1.0, 4.0])[0]
    assert g[0] == 0.0 and all(math.isfinite(v) and v > 0 for v in g[1:])


def test_vector_norm_ord0_records_history_with_zero_gradient():
    x = tp.tensor([0.0, 2.0, -1.0], requires_grad=True)
    r = LA.vector_norm(x, 0)
    assert r.grad_fn is not None and r.item() == 2.0
    (r + x.sum()).backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    with tp.no_grad():
        assert LA.vector_norm(x, 0).grad_fn is None
    assert LA.vector_norm(tp.tensor([0.0, math.inf]), 0).item() == 1.0   # inf stays a non-zero


@pytest.mark.parametrize("p", [0, 1, 2, 0.5, math.inf])
def test_cdist_of_equal_rows_finite_gradient(p):
    g1, g2 = _grad(lambda a, b: tp.cdist(a, b, p), [[0.0, 1.0], [1.0, 0.0]], [[0.0, 1.0]])
    assert all(math.isfinite(v) for row in g1 + g2 for v in row)
    assert g1[0] == [0.0, 0.0]             # the row equal to x2's: a zero distance


def test_cdist_inf_ties_take_the_whole_gradient():
    # |diff| = [1, 1]: both tied elements get the whole gradient (torch's cdist), not half
    g1, _ = _grad(lambda a, b: tp.cdist(a, b, math.inf), [[1.0, 0.0]], [[0.0, 1.0]])
    assert g1 == [[1.0, -1.0]]
    r = tp.cdist(tp.tensor([[math.inf, 0.0]], requires_grad=True), tp.tensor([[0.0, 1.0]]),
                 math.inf)
    assert r.item() == math.inf


def test_std_of_constant_input_has_zero_gradient():
    assert _grad(lambda x: x.std(1), [[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]])[0][0] == [0.0] * 3
    x = tp.full((2, 3), 1.5, dtype=tp.float64, requires_grad=True)
    s, m = tp.std_mean(x)
    (s + m).backward()
    assert x.grad.tolist() == [[1 / 6] * 3] * 2


def test_renorm_with_zero_row_finite_gradient():
    g = _grad(lambda x: tp.renorm(x, 2, 0, 1.0), [[0.0, 0.0], [3.0, 4.0]])[0]
    assert g[0] == [1.0, 1.0] and all(math.isfinite(v) for v in g[1])


def test_norm_of_0d_tensor_checks_dim():
    # tp.norm now goes through linalg.vector_norm, which took any dim of a 0-d tensor
    x = tp.tensor(2.0)
    for f in (lambda: tp.norm(x, dim=1), lambda: LA.vector_norm(x, 2, 1)):
        with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got 1"):
            f()
    assert LA.vector_norm(x, 2, 0).item() == 2.0 and tp.norm(x, dim=-1).item() == 2.0
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        tp.norm(x, dim=[0, -1])


# -- item 4: polygamma computes on the device (no host read) -------------------------------------
class _NoRead:
    """What the reductions of the device-like namespace below return: reading one back to the
    host (``float``, ``int``, ``bool``, ``item``) fails, as it would cost a synchronisation."""


def _device_like_special_kernels():
    """The special-function kernels bound as the cuda plugin binds them (an array module that
    is not NumPy: every branch on every lane), over NumPy arrays, with the reductions' results
    unreadable on the host."""
    np = pytest.importorskip("numpy")
    xpn = pytest.importorskip("array_api_compat.numpy")
    from tensorplay import backends
    from tensorplay._kernels import special as SK
    from tensorplay._kernels._context import Context

    class NoRead(np.ndarray, _NoRead):
        def _no(self, *a):
            raise AssertionError("a value read back to the host")
        __float__ = __int__ = __bool__ = __index__ = item = tolist = _no

    class XP:
        def __getattr__(self, k):
            f = getattr(xpn, k)
            if k in ("min", "max", "any", "all", "sum", "mean", "argmin", "argmax"):
                return lambda *a, **kw: np.asarray(f(*a, **kw)).view(NoRead)
            return f

    class NotNumpy:
        __name__ = "devicelike"

        def __getattr__(self, k):
            return getattr(np, k)

    class Be:
        np = NotNumpy()

        def __getattr__(self, k):
            return getattr(backends.get("cpu"), k)

    return SK.bind(Context(XP(), Be())), np


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7])
def test_polygamma_device_path_reads_nothing_back_and_matches_cpu(n):
    """Off NumPy polygamma reflects negative arguments (before: a direct sum whose length was
    the smallest argument, read back from the device per call); its values are the cpu
    plugin's (NumPy's direct sum) within 1e-10 relative, the non-finite ones exactly."""
    K, np = _device_like_special_kernels()
    rng = np.random.default_rng(47)
    x = np.concatenate([rng.uniform(-30, 30, 300), -rng.uniform(0, 1, 40),
                        [0.0, -0.0, -1.0, -2.0, -0.5, -2.5, -100.3, -1e5 - 0.25, 1e-300,
                         math.inf, -math.inf, math.nan]])
    with np.errstate(all="ignore"):
        dev = np.asarray(K["polygamma"](n, x.copy()))
    cpu = tp.polygamma(n, tp.tensor(x)).numpy()
    fin = np.isfinite(cpu)
    np.testing.assert_array_equal(dev[~fin], cpu[~fin])
    np.testing.assert_allclose(dev[fin], cpu[fin], rtol=1e-10, atol=0)


def test_polygamma_negative_arguments_cpu_closed_forms():
    # psi_2(-1/2) = psi_2(3/2) - pi^3 P_2(cot(-pi/2)) = psi_2(3/2) (P_2(0) = 0), through the cpu
    # plugin; and psi_n's poles at the non-positive integers
    got = tp.polygamma(2, tp.tensor([-0.5, 1.5], dtype=tp.float64)).tolist()
    assert got[0] == pytest.approx(got[1], rel=1e-14)
    assert tp.polygamma(2, tp.tensor([0.0, -3.0])).tolist() == [-math.inf, -math.inf]


@pytest.mark.parametrize("dev", [pytest.param("cuda", marks=pytest.mark.cuda), "gpustandin"])
def test_polygamma_on_cuda_without_synchronising(dev, request):
    """On a GPU: polygamma of negative arguments with CuPy's implicit synchronisations
    forbidden (a host read raises), values as the cpu's; on conftest's stand-in for a GPU (the
    kernels' device branch where there is no GPU) with its host reads forbidden the same way."""
    np = pytest.importorskip("numpy")
    if dev == "cuda":
        ok, why = tp.plugins.device_status("cuda")
        if not ok:
            pytest.skip(f"cuda unavailable: {why}")
        no_sync = functools.partial(pytest.importorskip("cupyx").allow_synchronize, False)
    else:
        no_sync = request.getfixturevalue("gpu_stand_in").forbid_sync
    x = np.concatenate([np.linspace(-20.3, 20.1, 97), [-0.5, -2.0, -0.0, 0.0, math.inf,
                                                        -math.inf, math.nan]])
    xc = tp.tensor(x, device=dev)
    for n in (0, 1, 2, 3, 4):
        tp.polygamma(n, xc)          # warm (first-use set-up may read)
        with no_sync():
            r = tp.polygamma(n, xc)
        got, want = r.cpu().numpy(), tp.polygamma(n, tp.tensor(x)).numpy()
        fin = np.isfinite(want)
        np.testing.assert_array_equal(got[~fin], want[~fin])
        np.testing.assert_allclose(got[fin], want[fin], rtol=1e-10, atol=0)


# -- sweep: clamp by tensor bounds gives a tied element's whole gradient to the input (torch) ----
def test_clamp_tensor_bounds_gradient_at_the_bounds():
    x = tp.tensor([0.0, 1.0, 2.0, -3.0, 5.0], requires_grad=True)
    lo = tp.tensor([0.0, 0.0, 1.0, -3.0, 1.0], requires_grad=True)
    hi = lo.detach() + 1.0
    hi.requires_grad_()
    r = tp.clamp(x, lo, hi)
    assert r.tolist() == [0.0, 1.0, 2.0, -3.0, 2.0]
    r.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0]
    assert lo.grad.tolist() == [0.0] * 5
    assert hi.grad.tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]
    y = tp.tensor([1.0, -1.0], requires_grad=True)       # only the input records history
    y.clamp_min(tp.tensor([1.0, 0.0])).sum().backward()
    assert y.grad.tolist() == [1.0, 0.0]


def test_clamp_tensor_bounds_values_keep_nan_and_inf():
    x = tp.tensor([math.nan, math.inf, -math.inf, 0.5], requires_grad=True)
    lo, hi = tp.tensor([0.0, 0.0, 0.0, math.nan]), tp.tensor([1.0, math.inf, 1.0, 1.0])
    r = tp.clamp(x, lo, hi)
    want = tp.clamp(x.detach(), lo, hi).tolist()
    got = r.tolist()
    assert [str(v) for v in got] == [str(v) for v in want]
    r.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 0.0]     # torch's


def test_norm_nuc_is_the_nuclear_norm():
    # tp.norm(x, "nuc") was refused ("ord must be a number"); torch.norm takes it (matrix_norm)
    a = tp.tensor([[3.0, 0.0], [0.0, -4.0]], dtype=tp.float64)
    assert tp.norm(a, "nuc").item() == pytest.approx(7.0, rel=1e-14)
    b = tp.stack([a, a * 2])
    assert tp.norm(b, "nuc", dim=(1, 2)).tolist() == pytest.approx([7.0, 14.0], rel=1e-14)
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 0 1 2"):
        tp.norm(b, "nuc")
