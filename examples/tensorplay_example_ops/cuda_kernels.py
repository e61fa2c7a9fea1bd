"""CuPy kernels of the example pack (imports CuPy: loaded by ``cuda_ops`` on a kernel's first call).

* ``bias_gelu(x, b, dtype)`` -- a ``cupy.ElementwiseKernel`` (broadcasting, any strides): GELU
  (tanh approximation) of ``x + b``.
* ``rms_norm(x, w, eps, dtype)`` -- a ``cupy.RawKernel``: one thread block per row, a shared-memory
  tree reduction of the sum of squares (accumulated in double), then ``x * rsqrt(ms + eps) * w``.

Both are compiled by NVRTC on their first launch and cached by CuPy (in memory and on disk).
Arrays passed in live on CuPy's current device; callers enter the tensor's device first.
"""

from __future__ import annotations

import cupy
import numpy

__all__ = ["RMS_BLOCK", "bias_gelu", "rms_norm"]

_F16, _F32 = numpy.dtype(numpy.float16), numpy.dtype(numpy.float32)

# 0.5 u (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3))), u = x + b
_bias_gelu_kernel = cupy.ElementwiseKernel(
    "T x, T b", "T y",
    """
    const T u = x + b;
    const T inner = (T)0.7978845608028654 * (u + (T)0.044715 * u * u * u);
    y = (T)0.5 * u * ((T)1 + tanh(inner));
    """,
    "tensorplay_example_bias_gelu")


def bias_gelu(x, b, dtype):
    """GELU(x + b) as a new C-contiguous array of ``dtype`` with the broadcast shape of ``x`` and
    ``b``. float16 inputs are computed in float32 and rounded once at the end."""
    dtype = numpy.dtype(dtype)
    work = _F32 if dtype == _F16 else dtype
    shape = x.shape if x.shape == b.shape else numpy.broadcast_shapes(x.shape, b.shape)
    out = cupy.empty(shape, dtype=work)
    _bias_gelu_kernel(x.astype(work, copy=False), b.astype(work, copy=False), out)
    return out if work == dtype else out.astype(dtype)


RMS_BLOCK = 256

_RMS_SOURCE = r"""
extern "C" __global__ void NAME(const T* __restrict__ x, const T* __restrict__ w,
                                T* __restrict__ y, long long rows, int H, double eps) {
    __shared__ double buf[BLOCK];
    const long long row = blockIdx.x;
    if (row >= rows) return;
    const T* xr = x + row * (long long)H;
    T* yr = y + row * (long long)H;
    double s = 0.0;
    for (int i = threadIdx.x; i < H; i += BLOCK) {
        const double v = (double)xr[i];
        s += v * v;
    }
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) buf[threadIdx.x] += buf[threadIdx.x + k];
        __syncthreads();
    }
    const double r = rsqrt(buf[0] / (double)H + eps);
    for (int i = threadIdx.x; i < H; i += BLOCK) {
        yr[i] = (T)((double)xr[i] * r * (double)w[i]);
    }
}
"""

_C_TYPES = {numpy.dtype(numpy.float32): "float", numpy.dtype(numpy.float64): "double"}
_rms_kernels: dict = {}


def _rms_kernel(dtype):
    k = _rms_kernels.get(dtype)
    if k is None:
        ctype = _C_TYPES[dtype]
        name = f"tensorplay_example_rms_norm_{ctype}"
        src = (f"typedef {ctype} T;\n#define BLOCK {RMS_BLOCK}\n"
               + _RMS_SOURCE.replace("NAME", name))
        k = _rms_kernels[dtype] = cupy.RawKernel(src, name)
    return k


def rms_norm(x, w, eps, dtype):
    """RMS norm over the last axis of ``x`` (any shape (..., H)) with weight ``w`` (H,); returns a
    new C-contiguous array of ``dtype`` (float32 or float64; float16 goes through float32)."""
    dtype = numpy.dtype(dtype)
    work = numpy.dtype(numpy.float32) if dtype == numpy.float16 else dtype
    if work not in _C_TYPES:
        raise TypeError(f"example::rms_norm (cuda): unsupported dtype {dtype}; use float16, "
                        f"float32 or float64")
    H = x.shape[-1] if x.ndim else 1
    xa = cupy.ascontiguousarray(x.astype(work, copy=False))
    wa = cupy.ascontiguousarray(w.astype(work, copy=False))
    out = cupy.empty(x.shape, dtype=work)
    rows = out.size // H if H else 0
    if rows and H:
        _rms_kernel(work)((rows,), (RMS_BLOCK,),
                          (xa, wa, out, numpy.int64(rows), numpy.int32(H), numpy.float64(eps)))
    return out if work == dtype else out.astype(dtype)
