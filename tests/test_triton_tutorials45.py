"""libdevice calls under the interpreter keep the compiler's signatures (found with Triton's
tutorial 07, ``libdevice.asin`` applied to a tensor, run on cpu through ``wrap_triton``).

A libdevice function compiles only for the argument dtypes its table lists (``abs``: int32, int64,
fp32, fp64; ``asin``/``exp``: fp32, fp64; none takes fp16 or bf16) and returns the dtype listed
there. tensorplay-triton evaluates libdevice with NumPy on cpu, and it computed in whatever NumPy
promoted to: ``abs`` of an int32 went through float32 (abs(-16777217) was 16777216), ``exp`` of
a bfloat16 ran on its 16-bit pattern (exp(1.0) was inf), and fp16 inputs computed where the GPU
refuses to compile the kernel: a kernel green on cpu failed on the GPU, or was silently wrong on
cpu. The kernels here are ours (a load, one libdevice call, a store), in each dtype and spelling.

Also here (tutorial 08, grouped GEMM): kernels that read tensors' addresses from a table of
``data_ptr()`` values, eagerly and inside a ``triton_op`` called under ``tensorplay.compile``.
"""

from __future__ import annotations

import pytest

triton = pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay  # noqa: E402
import triton.language as tl  # noqa: E402
from tensorplay.library import wrap_triton  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402
from triton.language.extra.cuda import libdevice as cuda_libdevice  # noqa: E402
from triton.language.extra.libdevice import exp as bound_exp  # noqa: E402
from triton.runtime.errors import InterpreterError  # noqa: E402


@triton.jit
def _unary(X, Y, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask)
    if OP == "abs":
        y = libdevice.abs(x)
    elif OP == "asin":
        y = libdevice.asin(x)
    elif OP == "cuda_exp":
        y = cuda_libdevice.exp(x)
    elif OP == "bound_exp":
        y = bound_exp(x)
    elif OP == "isnan":
        y = libdevice.isnan(x)
    else:
        y = libdevice.pow(x, 3)          # (fp32, int32): the table's powi signature
    tl.store(Y + offs, y, mask=mask)


def _cpu():
    ok, why = tensorplay.plugins.device_status("cpu")
    if not ok:
        pytest.skip(f"cpu device unavailable: {why}")
    return "cpu"


def _device(name):
    if name == "cpu":
        return _cpu()
    ok, why = tensorplay.plugins.device_status(name)
    if not ok:
        pytest.skip(f"{name} unavailable: {why}")
    return name


_DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.triton])]


def _run(op, x, out_dtype, device):
    xt = tensorplay.tensor(x, device=device)
    y = tensorplay.zeros(x.shape, dtype=out_dtype, device=device)
    wrap_triton(_unary)[(1,)](xt, y, x.size, OP=op, BLOCK=triton.next_power_of_2(x.size))
    return y.cpu().numpy()


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("np_dtype,tp_dtype", [(np.int32, tensorplay.int32), (np.int64, tensorplay.int64)])
def test_integer_abs_is_computed_in_integers(np_dtype, tp_dtype, device):
    """abs of int32/int64 is __nv_abs/__nv_llabs: exact, whatever float32 can hold."""
    d = _device(device)
    big = 2 ** 24 + 1 if np_dtype is np.int32 else 2 ** 53 + 1
    x = np.array([-big, big - 2, -7, 0, 5], np_dtype)
    np.testing.assert_array_equal(_run("abs", x, tp_dtype, d), np.abs(x))


@pytest.mark.parametrize("device", _DEVICES)
def test_float64_is_computed_in_float64(device):
    d = _device(device)
    x = np.linspace(-0.99, 0.99, 17)
    np.testing.assert_allclose(_run("asin", x, tensorplay.float64, d), np.arcsin(x), rtol=1e-14, atol=0)


@pytest.mark.parametrize("device", _DEVICES)
def test_listed_mixed_signature_and_integer_result(device):
    """pow(fp32, int32) is a signature of its own (powi); isnan returns int32."""
    d = _device(device)
    x = np.array([1.5, -2.0, 0.25, 3.0], np.float32)
    np.testing.assert_allclose(_run("pow", x, tensorplay.float32, d), x.astype(np.float64) ** 3, rtol=1e-6)
    xn = np.array([1.0, np.nan, -np.inf, 0.0], np.float32)
    np.testing.assert_array_equal(_run("isnan", xn, tensorplay.int32, d), [0, 1, 0, 0])


@pytest.mark.parametrize("op", ["asin", "cuda_exp", "bound_exp"],
                         ids=["libdevice", "cuda-module", "bound-at-import"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_unlisted_dtypes_are_refused_on_cpu_as_the_compiler_refuses_them(op, dtype):
    """fp16/bf16 are in no float libdevice table: the cpu launch fails naming the signatures (it
    computed in fp16, or on bf16's bit pattern), however the function is spelled."""
    d = _cpu()
    x = tensorplay.tensor(np.array([0.5, 0.25, 1.0, -0.5], np.float32), device=d).to(getattr(tensorplay, dtype))
    y = tensorplay.zeros(4, device=d)
    with pytest.raises(InterpreterError, match=r"input arg type does not match.*fp32.*fp64.*got \('(fp16|bf16)',\)"):
        wrap_triton(_unary)[(1,)](x, y, 4, OP=op, BLOCK=4)


@pytest.mark.cuda
@pytest.mark.triton
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_unlisted_dtypes_are_refused_by_the_compiler_on_cuda(dtype):
    """The other side of the parity above: the compiled launch refuses the same call."""
    d = _device("cuda")
    x = tensorplay.tensor(np.array([0.5, 0.25, 1.0, -0.5], np.float32), device=d).to(getattr(tensorplay, dtype))
    y = tensorplay.zeros(4, device=d)
    with pytest.raises(Exception, match="input arg type does not match|KeyError|fp16|bf16|float16|bfloat16"):
        wrap_triton(_unary)[(1,)](x, y, 4, OP="asin", BLOCK=4)


# -- pointer tables (Triton tutorial 08's grouped GEMM: data_ptr() values in an int64 tensor) ----
# The tutorial's kernel loads each matrix's address from a device table and casts it to a
# pointer; on cpu the interpreter dereferences the tensors' real addresses. Inside a triton_op the
# table is rebuilt on every call, so a compiled caller's replay reads the replay's tensors (a
# table baked at capture would point at freed memory; a capture refuses data_ptr() outright).

@triton.jit
def _copy_through_table(table_ptr, n, BLOCK: tl.constexpr):
    src = tl.load(table_ptr + 0).to(tl.pointer_type(tl.float32))
    dst = tl.load(table_ptr + 1).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m) * 2, mask=m)


def _double_via_table(x):
    out = tensorplay.empty_like(x)
    table = tensorplay.tensor([x.data_ptr(), out.data_ptr()], dtype=tensorplay.int64, device=x.device)
    wrap_triton(_copy_through_table)[(1,)](table, x.numel(), BLOCK=16)
    return out


@tensorplay.library.triton_op("tut45::double_via_table", mutates_args=())
def _double_op(x: tensorplay.Tensor) -> tensorplay.Tensor:
    return _double_via_table(x)


@pytest.mark.parametrize("device", _DEVICES)
def test_pointer_table_kernel(device):
    d = _device(device)
    x = tensorplay.arange(10, dtype=tensorplay.float32, device=d)
    np.testing.assert_array_equal(_double_via_table(x).cpu().numpy(), np.arange(10) * 2)


def test_pointer_table_inside_a_triton_op_under_compile():
    d = _cpu()
    f = tensorplay.compile(lambda x: _double_op(x) + 1)
    for i in range(3):                      # capture, then replays on new tensors
        x = tensorplay.arange(10, dtype=tensorplay.float32, device=d) + i
        np.testing.assert_array_equal(f(x).numpy(), (np.arange(10) + i) * 2 + 1)
    assert f.captures == 1
    with pytest.raises(Exception, match="data_ptr"):
        tensorplay.compile(_double_via_table)(tensorplay.ones(4, device=d))
