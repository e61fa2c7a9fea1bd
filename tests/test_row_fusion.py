"""Chains with row reductions (``tensorplay.compile``): ``sum``/``mean``/``amax``/``amin`` over the
last dim with ``keepdim=True`` fused with the elementwise steps around them, one Triton kernel per
call on cuda (``tensorplay_cuda.triton_rows``), as a row softmax or a layer norm needs.

Without a GPU: the generated kernels run through Triton's interpreter on NumPy arrays (the same
source the GPU compiles), checked against eager; the compile side (planning, the per-call
decline, autograd) runs on a ``MockBackend`` that says it fuses row reductions and runs the very
same kernels. ``@pytest.mark.cuda`` tests compile on the GPU and compare with eager cuda.
"""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("triton", reason="triton is not installed")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
pytest.importorskip("tensorplay_cuda")

import tensorplay as tp  # noqa: E402
from tensorplay.backends import ElementwiseExpr, Step  # noqa: E402
from tensorplay.testing.backend import MockBackend  # noqa: E402
from tensorplay_cuda.triton_rows import MAX_COLS, TritonRows, is_row_expr  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")

ROW = ("const", (-1,))
KEEP = ("const", True)


def softmax(x, y):
    a = x * y
    a = a - a.amax(-1, keepdim=True)
    e = a.exp()
    return e / e.sum(-1, keepdim=True)


def layer_norm(x, w, b):
    m = x.mean(-1, keepdim=True)
    d = x - m
    v = (d * d).mean(-1, keepdim=True)
    r = (v + 1e-5).rsqrt()
    return d * r * w + b, m, r


def logsumexp(x):
    m = x.amax(-1, keepdim=True)
    return (x - m).exp().sum(-1, keepdim=True).log() + m


def column_softmax(x):
    e = (x - x.amax(0, keepdim=True)).exp()
    return e / e.sum(0, keepdim=True)


def min_shift(x, k):
    return (x - x.amin(-1, keepdim=True)) * k


# the steps of the functions above, as tensorplay.compile plans them (inputs in order of use)
SOFTMAX = [Step("mul", (("in", 0), ("in", 1))), Step("amax", (("step", 0), ROW, KEEP)),
           Step("sub", (("step", 0), ("step", 1))), Step("exp", (("step", 2),)),
           Step("sum", (("step", 3), ROW, KEEP)), Step("div", (("step", 3), ("step", 4)))]
LAYER_NORM = [Step("mean", (("in", 0), ROW, KEEP)), Step("sub", (("in", 0), ("step", 0))),
              Step("mul", (("step", 1), ("step", 1))), Step("mean", (("step", 2), ROW, KEEP)),
              Step("add", (("step", 3), ("const", 1e-5))), Step("rsqrt", (("step", 4),)),
              Step("mul", (("step", 1), ("step", 5))), Step("mul", (("step", 6), ("in", 1))),
              Step("add", (("step", 7), ("in", 2)))]
LOGSUMEXP = [Step("amax", (("in", 0), ROW, KEEP)), Step("sub", (("in", 0), ("step", 0))),
             Step("exp", (("step", 1),)), Step("sum", (("step", 2), ROW, KEEP)),
             Step("log", (("step", 3),)), Step("add", (("step", 4), ("step", 0)))]
MIN_SHIFT = [Step("amin", (("in", 0), ROW, KEEP)), Step("sub", (("in", 0), ("step", 0))),
             Step("mul", (("step", 1), ("in", 1)))]

TOL = {"float32": 2e-6, "float64": 1e-12, "float16": 2e-3, "bfloat16": 2e-2}


def _expr(steps, n_in, dtype, outputs):
    return ElementwiseExpr(n_in, tuple(steps), tuple(outputs), (dtype,) * len(steps),
                           tp.device("cpu"))


def _f64(t):
    return t.to(tp.float64).numpy()


def _run(steps, outputs, ins, dtype=None):
    """The chain through TritonRows on the inputs' NumPy arrays (Triton's interpreter)."""
    be = tp.backends.get("cpu")
    dtype = dtype or ins[0].dtype
    return TritonRows(_expr(steps, len(ins), dtype, outputs), be).run([t.numpy() for t in ins])


def _close(got, want, dt):
    be = tp.backends.get("cpu")
    assert got.shape == tuple(want.shape) and be.dtype_of(got) is want.dtype, (got.shape, want)
    tol = TOL[want.dtype.name]
    g = tp.from_numpy(got).to(tp.float64).numpy()
    np.testing.assert_allclose(g, _f64(want), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------------------
# the generated kernel, interpreted

@pytest.mark.parametrize("shape", [(5, 37), (2, 3, 1024), (4, 1), (1, 300)])
def test_row_softmax_is_one_kernel_equal_to_eager(shape):
    tp.manual_seed(0)
    x, y = tp.randn(*shape), tp.randn(*shape)
    (got,) = _run(SOFTMAX, [5], [x, y])
    _close(got, softmax(x, y), "float32")


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
def test_layer_norm_with_weight_bias_and_per_row_outputs(dt):
    if dt == "bfloat16":
        pytest.importorskip("ml_dtypes")
    tp.manual_seed(1)
    d = getattr(tp, dt)
    x, w, b = tp.randn(3, 4, 100).to(d), tp.randn(100).to(d), tp.randn(1, 100).to(d)
    got = _run(LAYER_NORM, [8, 0, 5], [x, w, b])
    for g, want in zip(got, layer_norm(x, w, b)):
        _close(g, want, dt)
    assert got[1].shape == (3, 4, 1)


def test_logsumexp_output_per_row_and_nan_and_inf_rows():
    x = tp.tensor([[1.0, 2.0, 3.0], [float("nan"), 0.0, 1.0], [float("-inf"), 0.0, -1.0],
                   [1e30, 1e30, -1e30]])
    (got,) = _run(LOGSUMEXP, [5], [x])
    want = logsumexp(x)
    assert got.shape == (4, 1)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)
    assert np.isnan(got[1, 0])          # amax propagates NaN, as eager (and torch)


def test_amin_with_per_row_and_scalar_inputs():
    tp.manual_seed(2)
    x = tp.randn(6, 50)
    for k in (tp.tensor(2.5), tp.randn(6, 1), tp.randn(50)):     # modes s, k, w
        (got,) = _run(MIN_SHIFT, [2], [x, k])
        _close(got, min_shift(x, k), "float32")


def test_keepdim_false_reduction_is_an_output_of_the_row_shape():
    steps = [Step("mul", (("in", 0), ("in", 1))), Step("sum", (("step", 0), ROW, ("const", False)))]
    x, y = tp.randn(2, 3, 40), tp.randn(2, 3, 40)
    got = _run(steps, [0, 1], [x, y])
    _close(got[0], x * y, "float32")
    _close(got[1], (x * y).sum(-1), "float32")
    assert got[1].shape == (2, 3)
    used = steps + [Step("mul", (("step", 1), ("const", 2.0)))]      # another rank: declined
    assert _run(used, [2], [x, y]) is None


def test_int_and_float_constants_are_arguments_not_code():
    steps = [Step("mul", (("in", 0), ("const", 3))), Step("sum", (("step", 0), ROW, KEEP)),
             Step("add", (("step", 1), ("const", 0.25))), Step("div", (("step", 0), ("step", 2)))]
    x = tp.randn(3, 9)
    (got,) = _run(steps, [3], [x])
    a = x * 3
    _close(got, a / (a.sum(-1, keepdim=True) + 0.25), "float32")


@pytest.mark.parametrize("case", ["strided", "too_wide", "middle_broadcast", "reduce_a_column",
                                  "empty"])
def test_calls_outside_the_kernel_are_declined_not_miscomputed(case):
    x = tp.randn(4, 8)
    if case == "strided":
        args, steps = [tp.randn(8, 4).t(), x], SOFTMAX
    elif case == "too_wide":
        args, steps = [tp.randn(2, MAX_COLS + 1)] * 2, SOFTMAX
    elif case == "middle_broadcast":
        args, steps = [tp.randn(3, 1, 8), tp.randn(3, 4, 8)], SOFTMAX
    elif case == "reduce_a_column":
        steps = [Step("sum", (("in", 1), ROW, KEEP)), Step("mul", (("in", 0), ("step", 0)))]
        args = [x, tp.randn(8)]
    else:
        args, steps = [tp.randn(0, 8)] * 2, SOFTMAX
    assert _run(steps, [len(steps) - 1], args) is None


def test_row_chains_are_recognised():
    assert is_row_expr(_expr(SOFTMAX, 2, tp.float32, [5]))
    assert not is_row_expr(_expr([Step("exp", (("in", 0),)), Step("sum", (("step", 0),))], 1,
                                 tp.float32, [1]))


# ---------------------------------------------------------------------------------------------
# tensorplay.compile: planning, the per-call decline, autograd (a backend that fuses rows)

class RowBackend(MockBackend):
    """A NumPy backend that takes row chains, running them with the generated kernels in
    Triton's interpreter; counts the calls its fuser took and declined."""

    fuses_row_reductions = True

    def __init__(self):
        super().__init__("rowmock")
        self.fused = []

    def fuse_elementwise(self, expr):
        if not is_row_expr(expr):
            return None
        tr = TritonRows(expr, self)

        def run(arrays):
            r = tr.run(arrays)
            self.fused.append(r is not None)
            return r
        return run


@pytest.fixture
def rows():
    with RowBackend() as be:
        yield be


def test_compile_plans_reductions_into_one_chain_and_matches_eager(rows):
    tp.manual_seed(3)
    x, y = tp.randn(4, 33, device="rowmock"), tp.randn(4, 33, device="rowmock")
    c = tp.compile(softmax)
    got = c(x, y)
    assert "1 fused groups" in str(c.graph) and rows.fused == [True]
    np.testing.assert_allclose(got.cpu().numpy(), softmax(x, y).cpu().numpy(), rtol=2e-6, atol=2e-7)
    w, b = tp.randn(33, device="rowmock"), tp.randn(33, device="rowmock")
    c = tp.compile(layer_norm)
    for g, want in zip(c(x, w, b), layer_norm(x, w, b)):
        np.testing.assert_allclose(g.cpu().numpy(), want.cpu().numpy(), rtol=2e-6, atol=2e-6)
    assert "1 fused groups" in str(c.graph) and rows.fused[-1] is True


def per_row_loss(x, y):
    d = x - y
    return (d * d).mean(-1) * 0.5, d.abs().amax(-1)


def test_keepdim_false_reductions_end_their_chain(rows):
    tp.manual_seed(6)
    x, y = tp.randn(6, 20, device="rowmock"), tp.randn(6, 20, device="rowmock")
    c = tp.compile(per_row_loss)
    got = c(x, y)
    for g, want in zip(got, per_row_loss(x, y)):
        assert g.shape == want.shape == (6,)
        np.testing.assert_allclose(g.cpu().numpy(), want.cpu().numpy(), rtol=2e-6, atol=1e-7)
    text = str(c.graph)
    # sub, mul, mean end one chain (one kernel); the * 0.5 that follows the reduction starts
    # another, with abs and amax: its inputs have unrelated shapes, (6,) and (6, 20), so the
    # kernel declines it and it runs op by op
    assert "2 fused groups" in text and rows.fused == [True, False], text


def test_reductions_over_other_dims_stay_out_of_chains(rows):
    x = tp.randn(5, 7, device="rowmock")
    c = tp.compile(column_softmax)
    got = c(x)
    groups = [line for line in str(c.graph).splitlines() if "fused group" in line]
    assert groups and not any("amax" in line or "sum" in line for line in groups), c.graph
    np.testing.assert_allclose(got.cpu().numpy(), column_softmax(x).cpu().numpy(), rtol=1e-6)


def test_a_declined_call_runs_the_ops_one_by_one(rows):
    # strided (its elementwise results row-major: the chain is planned), the kernel declines it
    x = tp.randn(4, 66, device="rowmock")[:, ::2]
    y = tp.randn(4, 33, device="rowmock")
    got = tp.compile(softmax)(x, y)
    assert rows.fused == [False]
    np.testing.assert_allclose(got.cpu().numpy(), softmax(x, y).cpu().numpy(), rtol=1e-6, atol=1e-7)


def test_gradients_flow_through_a_compiled_row_chain(rows):
    tp.manual_seed(4)
    x = tp.randn(3, 16, device="rowmock", requires_grad=True)
    w, b = tp.randn(16, device="rowmock"), tp.randn(16, device="rowmock")
    out = tp.compile(layer_norm)(x, w, b)[0]
    (out * out).sum().backward()
    g = x.grad.cpu().numpy().copy()
    x.grad = None
    ref = layer_norm(x, w, b)[0]
    (ref * ref).sum().backward()
    np.testing.assert_allclose(g, x.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)
    # (session 55: an input needs grad, so the graph runs as one autograd node whose forward
    # runs under no_grad and fuses the row chain, as torch.compile's AOTAutograd; before, the
    # ops ran one by one, recording their nodes, and nothing was fused)
    assert True in rows.fused


def test_backends_that_do_not_fuse_rows_keep_reductions_out_of_chains():
    c = tp.compile(layer_norm)
    x, w = tp.randn(4, 8), tp.randn(8)
    c(x, w, w)
    groups = [line for line in str(c.graph).splitlines() if "fused group" in line]
    assert not any("mean" in line for line in groups)


# ---------------------------------------------------------------------------------------------
# on the GPU

@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("dt,shape", [("float32", (4, 1024)), ("float32", (64, 37)),
                                      ("bfloat16", (8, 4096)), ("float16", (3, 5000)),
                                      ("float64", (2, 3, 130)), ("float32", (1, 16384))])
def test_cuda_compiled_row_chains_match_eager(dt, shape):
    if dt == "bfloat16":
        pytest.importorskip("ml_dtypes")
    tp.manual_seed(5)
    d = getattr(tp, dt)
    x, y = tp.randn(*shape, device="cuda").to(d), tp.randn(*shape, device="cuda").to(d)
    w, b = tp.randn(shape[-1], device="cuda").to(d), tp.randn(shape[-1], device="cuda").to(d)
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 3e-3, "bfloat16": 3e-2}[dt]
    for fn, args in ((softmax, (x, y)), (layer_norm, (x, w, b)), (logsumexp, (x,)),
                     (per_row_loss, (x, y))):
        c = tp.compile(fn)
        for _ in range(3):       # first call through Triton's launcher, then the direct launch
            got = c(*args)
        want = fn(*args)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for g, v in zip(got, want):
            assert g.shape == v.shape and g.dtype == v.dtype
            np.testing.assert_allclose(g.to(tp.float64).cpu().numpy(),
                                       v.to(tp.float64).cpu().numpy(), rtol=tol, atol=tol)
        groups = 2 if fn is per_row_loss else 1
        assert f"{groups} fused groups" in str(c.graph), c.graph


@pytest.mark.cuda
@needs_cuda
def test_cuda_row_chain_launches_the_generated_kernel():
    be = tp.backends.get("cuda")
    x, y = tp.randn(16, 1024, device="cuda"), tp.randn(16, 1024, device="cuda")
    run = be.fuse_elementwise(_expr(SOFTMAX, 2, tp.float32, [5]))
    assert run.engine == "triton"
    for _ in range(3):
        (got,) = run([x._data, y._data])
        assert run.last_engine == "triton"
    np.testing.assert_allclose(tp.from_dlpack(got).cpu().numpy(), softmax(x, y).cpu().numpy(),
                               rtol=1e-5, atol=1e-6)
    (none,) = [run([x._data.T.copy().T, y._data.T.copy().T])]      # strided: declined
    assert none is None and run.last_engine == "ops"


@pytest.mark.cuda
@needs_cuda
def test_cuda_row_chain_under_reduce_overhead_and_new_shapes(monkeypatch):
    # one row kernel: recorded all the same, to replay it (_replay.SKIP_FEW_LAUNCHES)
    from tensorplay import _replay
    monkeypatch.setattr(_replay, "SKIP_FEW_LAUNCHES", False)
    c = tp.compile(softmax, mode="reduce-overhead")
    for shape in ((8, 1024), (8, 1024), (8, 1024), (5, 300), (5, 300)):
        x, y = tp.randn(*shape, device="cuda"), tp.randn(*shape, device="cuda")
        np.testing.assert_allclose(c(x, y).cpu().numpy(), softmax(x, y).cpu().numpy(),
                                   rtol=1e-5, atol=1e-6)
