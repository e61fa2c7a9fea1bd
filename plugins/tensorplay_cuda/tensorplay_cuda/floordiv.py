"""Floor division and remainder of floating CuPy arrays, computed as the cpu device computes them.

CuPy's ``floor_divide`` on floats is ``floor(x / y)`` (and its ``remainder`` ``x - floor(x / y) *
y``): where the rounded quotient lands on an integer that the exact one does not reach, the result
is one more than Python's. torch (``div_floor_floating``) and NumPy (``npy_divmod``, what the cpu
device runs) divide ``x - fmod(x, y)`` by ``y`` instead, which is exact there; e.g. bf16 values
``// 0.1`` differed on 6.7% of 4M random elements. The reference kernels reach CuPy through the
backend's namespace (``CUDABackend.xp``), whose ``floor_divide``/``remainder`` are these: floating
operands run one ``cupy.ElementwiseKernel`` with NumPy's algorithm, computing in float32 for
float16/float32 arrays and in float64 for float64 ones (the result rounded once to the array's
dtype); anything else goes to CuPy's own ufunc.

``SOURCE`` holds the kernels' bodies as C that is valid both in CUDA and in C99 with ``<math.h>``
(``source``), so CI compiles and checks the very same arithmetic on the host without a GPU
(tests/test_reduced_float_scalars.py). Nothing here imports CuPy before a call.
"""

from __future__ import annotations

import math
import struct

from tensorplay._dtype import float16, round_scalar

_F32 = struct.Struct("<f")


def _to_float32(v) -> float:
    """A Python number rounded to float32 (nearest even; +-inf beyond its range), without
    NumPy's overflow warning."""
    v = float(v)
    try:
        return _F32.unpack(_F32.pack(v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)

# torch's/NumPy's floor division and Python remainder, over ``a``/``b`` in the compute type ``CT``
# (``FMOD``/``FLOOR``/``COPYSIGN``: that type's C functions). b == 0 gives a / b (+-inf, NaN) and
# fmod's NaN, as NumPy; a zero remainder takes the divisor's sign, a zero quotient that of a / b.
SOURCE = {
    "floor_divide": """
CT a = (CT)in0, b = (CT)in1, q;
if (b == 0) {
    q = a / b;
} else {
    CT mod = FMOD(a, b);
    q = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) q -= 1;
    if (q != 0) {
        CT f = FLOOR(q);
        q = (q - f > (CT)0.5) ? f + 1 : f;
    } else {
        q = COPYSIGN((CT)0, a / b);
    }
}
out0 = q;
""",
    "remainder": """
CT a = (CT)in0, b = (CT)in1;
CT mod = FMOD(a, b);
if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
} else {
    mod = COPYSIGN((CT)0, b);
}
out0 = mod;
""",
}

_FUNCS = {"float": ("fmodf", "floorf", "copysignf"), "double": ("fmod", "floor", "copysign")}


def source(op: str, compute: str) -> str:
    """The C body of ``op`` (``"floor_divide"`` or ``"remainder"``) computing in ``compute``
    (``"float"`` or ``"double"``): reads ``in0``, ``in1``, writes ``out0``."""
    fmod, floor, copysign = _FUNCS[compute]
    return (SOURCE[op].replace("FMOD", fmod).replace("FLOOR", floor)
            .replace("COPYSIGN", copysign).replace("CT", compute))


_KERNELS: dict = {}


def _kernel(cupy, op, compute, scalar=False):
    """The kernel for two arrays of one dtype (``X in0, X in1``), or for an array and a number
    (``scalar``): the number is a parameter of the compute type itself, since CuPy does not type
    a placeholder from a scalar argument (``KeyError`` in ``_decide_params_type``)."""
    k = _KERNELS.get((op, compute, scalar))
    if k is None:
        params = f"X in0, {compute} in1" if scalar else "X in0, X in1"
        # --fmad=false: no contraction into fused multiply-adds (none is written, none is wanted)
        k = _KERNELS[(op, compute, scalar)] = cupy.ElementwiseKernel(
            params, "X out0", source(op, compute),
            f"tensorplay_{op}_{compute}{'_scalar' if scalar else ''}", options=("--fmad=false",))
    return k


def namespace(xp, cupy, numpy):
    """``xp`` (array-api-compat's CuPy namespace) as a module object whose ``floor_divide`` and
    ``remainder`` take floating arrays through the kernels above; every other name is ``xp``'s."""
    import types
    ns = types.ModuleType(f"{__name__}.xp", "CuPy's array-API namespace, NumPy's float divmod")
    ns.__dict__.update({k: v for k, v in xp.__dict__.items() if not k.startswith("__")})
    nd = cupy.ndarray
    f16, f32, f64 = numpy.dtype("float16"), numpy.dtype("float32"), numpy.dtype("float64")

    def make(op, fallback):
        def f(a, b):
            da = a.dtype if a.__class__ is nd else None
            if da is f32 or da is f64 or da is f16:
                compute = "double" if da is f64 else "float"
                if b.__class__ is not nd:
                    # a number: the array's dtype decides (the kernels' _prep chose it); a
                    # float16 value is exact in float32, the kernel's argument type
                    b = numpy.float64(b) if da is f64 else numpy.float32(
                        round_scalar(b, float16) if da is f16 else _to_float32(b))
                    return _kernel(cupy, op, compute, True)(a, b)
                if b.dtype is da:
                    return _kernel(cupy, op, compute)(a, b)
            return fallback(a, b)
        f.__name__ = op
        return f

    ns.floor_divide = make("floor_divide", xp.floor_divide)
    ns.remainder = make("remainder", xp.remainder)
    return ns
