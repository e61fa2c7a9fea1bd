"""bfloat16 as a first-class dtype: on cpu (NumPy + ml_dtypes) and on cuda (CuPy + ml_dtypes).

Every built-in op on bf16 computes in float32 and rounds once (torch's "opmath"), so results are
checked against the same op on float32 copies of the inputs, rounded to bf16 (tolerance: bf16's
relative step, 2**-8, a little more for ops chaining two roundings); reductions accumulate in
float32. Custom ops (opcheck) and Triton kernels (``triton_op``, ``wrap_triton``) take bf16 too.
"""

from __future__ import annotations

# No TRITON_INTERPRET: tensorplay-triton picks interpreter or compiler per launch from the device,
# and a process-wide variable would turn Triton's own helpers (tl.sum...) into interpreter-only
# functions for every later test (see test_triton.py).

import pytest  # noqa: E402

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes")

import tensorplay as tp  # noqa: E402
from tensorplay import library  # noqa: E402

CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, needs_cuda])]
BF_TOL = 2 ** -7


def _f64(t):
    return t.to(tp.float64).cpu().numpy()


def _ref(fn, *args):
    """``fn`` on float32 copies of the bf16 tensor arguments, result rounded to bf16."""
    conv = [a.float() if isinstance(a, tp.Tensor) and a.dtype is tp.bfloat16 else a for a in args]
    r = fn(*conv)
    return r.to(tp.bfloat16) if r.dtype is tp.float32 else r


@pytest.mark.parametrize("dev", DEVICES)
def test_creation_and_conversion(dev):
    bf = tp.bfloat16
    for t in (tp.zeros(3, dtype=bf, device=dev), tp.ones(2, 3, dtype=bf, device=dev),
              tp.full((2,), 1.5, dtype=bf, device=dev), tp.tensor([1.0, 2.5, -3.0], dtype=bf, device=dev),
              tp.arange(0, 5, dtype=bf, device=dev), tp.rand(4, dtype=bf, device=dev),
              tp.randn(4, dtype=bf, device=dev), tp.ones(3, device=dev).to(bf),
              tp.empty(3, dtype=bf, device=dev)):
        assert t.dtype is bf and t.device.type == dev and t.element_size() == 2
    x = tp.tensor([1.0, 2.5, -3.0, 1 / 3], dtype=bf, device=dev)
    assert x.tolist()[:3] == [1.0, 2.5, -3.0]
    assert abs(x.tolist()[3] - 1 / 3) <= 2 ** -9            # rounded to bf16 (8 bits)
    f = x.float()
    assert f.dtype is tp.float32 and f.to(bf).dtype is bf
    assert x.cpu().numpy().dtype == np.dtype(ml_dtypes.bfloat16)
    y = tp.from_numpy(np.array([0.5, 4.0], dtype=ml_dtypes.bfloat16))
    assert y.dtype is bf and (y * 2).tolist() == [1.0, 8.0]
    assert tp.randn(3, dtype=bf, device=dev).to("cpu").dtype is bf


UNARY = ["neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "abs", "sin", "cos",
         "erf", "sign"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", UNARY)
def test_unary_ops_match_float32_rounded(dev, op):
    tp.manual_seed(0)
    x = (tp.rand(257, device=dev) * 3 + 0.05).to(tp.bfloat16)
    if op in ("neg", "sin", "sign", "abs", "relu", "tanh"):
        x = x - 1.5
    f = getattr(tp.ops.tp, op)
    got = f(x)
    assert got.dtype is tp.bfloat16
    np.testing.assert_allclose(_f64(got), _f64(_ref(f, x)), rtol=BF_TOL, atol=BF_TOL)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", BINARY)
def test_binary_ops_tensors_and_scalars(dev, op):
    tp.manual_seed(1)
    x = (tp.rand(300, device=dev) * 2 + 0.5).to(tp.bfloat16)
    y = (tp.rand(300, device=dev) * 2 + 0.5).to(tp.bfloat16)
    f = getattr(tp.ops.tp, op)
    for other in (y, 1.75, 2):
        got = f(x, other)
        assert got.dtype is tp.bfloat16, (op, other)           # a Python scalar keeps bf16
        np.testing.assert_allclose(_f64(got), _f64(_ref(f, x, other)), rtol=BF_TOL, atol=BF_TOL)


@pytest.mark.parametrize("dev", DEVICES)
def test_promotion_comparisons_where_and_inplace(dev):
    bf = tp.bfloat16
    x = tp.tensor([1.0, -2.0, 3.0], dtype=bf, device=dev)
    assert (x + tp.ones(3, device=dev)).dtype is tp.float32            # bf16 + float32
    assert (x + tp.ones(3, dtype=tp.float16, device=dev)).dtype is tp.float32
    assert (x + tp.tensor(1.0, device=dev)).dtype is bf                 # 0-dim float32
    assert (x + tp.tensor([1, 2, 3], device=dev)).dtype is bf           # int tensor
    assert (x > 0).tolist() == [True, False, True] and (x == x).tolist() == [True] * 3
    w = tp.where(x > 0, x, 0.0)
    assert w.dtype is bf and w.tolist() == [1.0, 0.0, 3.0]
    x.add_(1.5)
    x.mul_(tp.full((3,), 2.0, dtype=bf, device=dev))
    assert x.dtype is bf and x.tolist() == [5.0, -1.0, 9.0]


@pytest.mark.parametrize("dev", DEVICES)
def test_reductions_accumulate_in_float32(dev):
    bf = tp.bfloat16
    ones = tp.ones(10000, dtype=bf, device=dev)
    s = ones.sum()
    assert s.dtype is bf and s.item() == 9984.0           # 10000 rounded to bf16 once (not 256)
    m = (ones * 0.1).mean()
    assert m.dtype is bf and abs(m.item() - 0.1) < 2e-3
    assert ones.sum(dtype=tp.float32).item() == 10000.0
    tp.manual_seed(2)
    x = tp.randn(64, 33, device=dev).to(bf)
    for name in ("sum", "mean", "amax", "amin"):
        got = getattr(x, name)(1) if name in ("sum", "mean") else getattr(x, name)((1,))
        want = _ref(lambda t: getattr(t, name)(1) if name in ("sum", "mean") else
                    getattr(t, name)((1,)), x)
        assert got.dtype is bf
        np.testing.assert_allclose(_f64(got), _f64(want), rtol=BF_TOL, atol=BF_TOL)
    assert x.argmax().item() == x.float().argmax().item()


@pytest.mark.parametrize("dev", DEVICES)
def test_matmul_softmax_cat_index_add(dev):
    bf = tp.bfloat16
    tp.manual_seed(3)
    a, b = tp.randn(16, 32, device=dev).to(bf), tp.randn(32, 8, device=dev).to(bf)
    got = a @ b
    assert got.dtype is bf
    np.testing.assert_allclose(_f64(got), _f64(_ref(lambda p, q: p @ q, a, b)), rtol=0.02,
                               atol=0.05)
    for fn in (lambda t: tp.softmax(t, -1), lambda t: t.log_softmax(-1)):
        r = fn(a)
        assert r.dtype is bf
        np.testing.assert_allclose(_f64(r), _f64(_ref(fn, a)), rtol=0.02, atol=0.02)
    c = tp.cat([a, a.float()])
    assert c.dtype is tp.float32 and c.shape == (32, 32)
    assert tp.stack([a, a]).dtype is bf
    idx = tp.tensor([0, 2, 0], device=dev)
    r = tp.ops.tp.index_add(tp.zeros(4, 32, dtype=bf, device=dev), 0, idx, a[:3])
    assert r.dtype is bf
    np.testing.assert_allclose(_f64(r[0]), _f64((a[0].float() + a[2].float()).to(bf)),
                               rtol=BF_TOL, atol=BF_TOL)


@pytest.mark.parametrize("dev", DEVICES)
def test_autograd_through_bf16(dev):
    x = tp.tensor([0.5, -1.0, 2.0], dtype=tp.bfloat16, device=dev, requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype is tp.bfloat16 and x.grad.tolist() == [1.0, -2.0, 4.0]


@pytest.mark.parametrize("dev", DEVICES)
def test_compile_fuses_a_bf16_chain(dev):
    def f(x, y):
        return ((x * y + 1.0) * 0.5).tanh()
    tp.manual_seed(4)
    x, y = tp.randn(1000, device=dev).to(tp.bfloat16), tp.randn(1000, device=dev).to(tp.bfloat16)
    got = tp.compile(f)(x, y)
    assert got.dtype is tp.bfloat16
    np.testing.assert_allclose(_f64(got), _f64(f(x, y)), rtol=BF_TOL, atol=BF_TOL)


@library.custom_op("bf16test::scale_shift", mutates_args=())
def _scale_shift(x: tp.Tensor, s: float) -> tp.Tensor:
    return x * s + 1.0


@_scale_shift.register_fake
def _(x, s):
    return x.new_empty(x.shape)


@pytest.mark.parametrize("dev", DEVICES)
def test_opcheck_on_a_bf16_custom_op(dev):
    x = tp.randn(8, 4, device=dev).to(tp.bfloat16)
    out = _scale_shift(x, 3.0)
    assert out.dtype is tp.bfloat16
    np.testing.assert_allclose(_f64(out), _f64(_ref(lambda t: t * 3.0 + 1.0, x)), rtol=BF_TOL,
                               atol=BF_TOL)
    assert library.opcheck(_scale_shift, (x, 3.0)) == {}


def test_triton_op_and_wrap_triton_take_bf16_on_cpu():
    """The pointer dtype Triton sees ends in 'bfloat16' (its bf16); interpreter on cpu."""
    pytest.importorskip("triton")
    pytest.importorskip("tensorplay_triton")
    _bf16_triton_op_roundtrip("cpu")


@pytest.mark.cuda
@needs_cuda
def test_triton_op_takes_bf16_on_cuda():
    pytest.importorskip("triton")
    pytest.importorskip("tensorplay_triton")
    _bf16_triton_op_roundtrip("cuda")


_TOP: dict = {}


def _bf16_triton_op_roundtrip(dev):
    import triton
    import triton.language as tl

    if "op" not in _TOP:
        @triton.jit
        def axpb(x_ptr, out_ptr, a, b, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
            tl.store(out_ptr + offs, (x * a + b).to(out_ptr.dtype.element_ty), mask=m)

        @library.triton_op("bf16test::axpb", mutates_args=())
        def op(x: tp.Tensor, a: float, b: float) -> tp.Tensor:
            out = tp.empty_like(x)
            n = x.numel()
            library.wrap_triton(axpb)[(triton.cdiv(n, 128),)](x, out, a, b, n, BLOCK=128)
            return out
        _TOP["op"] = op
    op = _TOP["op"]
    x = tp.randn(300, device=dev).to(tp.bfloat16)
    r = op(x, 2.0, 0.5)
    assert r.dtype is tp.bfloat16
    np.testing.assert_allclose(_f64(r), _f64(_ref(lambda t: t * 2.0 + 0.5, x)), rtol=BF_TOL,
                               atol=BF_TOL)
    assert library.opcheck(op, (x, 2.0, 0.5), test_utils=("test_schema", "test_faketensor")) == {}


@pytest.mark.cuda
@needs_cuda
def test_dlpack_bf16_to_and_from_cupy():
    import cupy
    x = tp.randn(5, device="cuda").to(tp.bfloat16)
    c = cupy.from_dlpack(x)
    assert c.dtype == np.dtype(ml_dtypes.bfloat16) and c.shape == (5,)
    back = tp.from_dlpack(c * 2)
    assert back.dtype is tp.bfloat16 and back.device.type == "cuda"
    np.testing.assert_allclose(_f64(back), 2 * _f64(x), rtol=BF_TOL)


def _numpy_dlpack_bf16_error():
    """NumPy's own answer to a bfloat16 array through DLPack, probed on a plain NumPy array:
    None where NumPy carries it (NumPy 2.5), else the exception it raises (2.4 and 1.26:
    ``BufferError: DLPack only supports signed/unsigned integers, float and complex dtypes.``)."""
    try:
        np.from_dlpack(np.ones(2, dtype=ml_dtypes.bfloat16))
    except Exception as e:  # noqa: BLE001 - whatever NumPy raises is what tensorplay must raise
        return e
    return None


def test_dlpack_bf16_on_cpu_follows_numpy():
    """cpu bf16 tensors go through DLPack exactly as far as NumPy's DLPack goes: where NumPy
    carries bfloat16, both directions share memory with the right values; where it does not,
    both directions raise NumPy's own error (and .numpy() / from_numpy share memory instead)."""
    x = tp.tensor([1.0, 2.5, -3.0], dtype=tp.bfloat16)
    b = np.array([0.5, 7.0, -1.25, 4.0], dtype=ml_dtypes.bfloat16)
    refused = _numpy_dlpack_bf16_error()
    if refused is None:
        a = np.from_dlpack(x)
        assert a.dtype == ml_dtypes.bfloat16 and a.astype(np.float32).tolist() == [1.0, 2.5, -3.0]
        a[0] = 5
        assert x[0].item() == 5.0                      # shared, not copied
        t = tp.from_dlpack(b)
        assert t.dtype is tp.bfloat16 and t.tolist() == [0.5, 7.0, -1.25, 4.0]
        b[1] = 9
        assert t[1].item() == 9.0
    else:
        # NumPy's own error, unchanged: same type, same message
        for call in (lambda: np.from_dlpack(x), lambda: tp.from_dlpack(b)):
            with pytest.raises(type(refused)) as got:
                call()
            assert type(got.value) is type(refused) and str(got.value) == str(refused)
    a = x.numpy()
    a[1] = 6
    assert x[1].item() == 6.0
    t = tp.from_numpy(b)
    assert t.dtype is tp.bfloat16
    b[2] = 3
    assert t[2].item() == 3.0


@pytest.mark.parametrize("dev", DEVICES)
def test_rounding_predicates_scans_and_sorts(dev):
    bf = tp.bfloat16
    x = tp.tensor([1.5, -2.5, 0.25, 3.75, float("nan"), -0.75], dtype=bf, device=dev)
    T = tp.ops.tp
    assert T.floor(x).dtype is bf and T.floor(x).tolist()[:4] == [1.0, -3.0, 0.0, 3.0]
    assert T.ceil(x).tolist()[:4] == [2.0, -2.0, 1.0, 4.0]
    assert T.round(x).tolist()[:4] == [2.0, -2.0, 0.0, 4.0]
    assert T.isnan(x).tolist() == [False, False, False, False, True, False]
    assert T.isfinite(x).tolist()[4] is False
    y = x[:4]
    p = T.prod(y)
    assert p.dtype is bf and abs(p.item() - (1.5 * -2.5 * 0.25 * 3.75)) < 0.02
    c = T.cumsum(tp.ones(1000, dtype=bf, device=dev), 0)
    assert c.dtype is bf and c[-1].item() == 1000.0 and c[299].item() == 300.0   # float32 scan
    v, i = T.sort(y, 0, True)
    assert v.dtype is bf and v.tolist() == [3.75, 1.5, 0.25, -2.5] and i.tolist() == [3, 0, 2, 1]
    assert T.argsort(y).tolist() == [1, 2, 0, 3] and T.argmin(y).item() == 1
    assert T.any(y > 3).item() is True and T.all(y > -3).item() is True


def test_cpu_namespace_sort_matches_the_array_api():
    """The cpu backend's NumPy namespace adds the array-API ``argsort``/``sort`` (descending,
    stable): same results as array-api-compat's, ties kept in order."""
    xp_ref = pytest.importorskip("array_api_compat.numpy")
    from tensorplay_cpu.backend import CPUBackend
    xp = CPUBackend.xp
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, size=(5, 7))
    for axis in (0, 1, -1):
        for desc in (False, True):
            np.testing.assert_array_equal(
                xp.argsort(a, axis=axis, descending=desc, stable=True),
                xp_ref.argsort(a, axis=axis, descending=desc, stable=True))
            np.testing.assert_array_equal(xp.sort(a, axis=axis, descending=desc),
                                          xp_ref.sort(a, axis=axis, descending=desc))
