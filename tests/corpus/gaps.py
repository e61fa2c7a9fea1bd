"""Known gaps of Triton's interpreter (cpu) or of tensorplay that corpus cases hit, each with a probe.

A case names the gaps it hits (``Case.gaps``); ``tests/test_corpus.py`` marks it
``xfail(strict=True)`` only while a probe shows the gap is still there, so a fix (in
tensorplay-triton or in Triton) turns the case into a plain passing test with no edit here,
and a case that fails for any other reason is a failure. Each probe is a minimal kernel written
the way the libraries write theirs, launched through ``wrap_triton`` on cpu tensors; the probes
never access memory outside their buffers.

A gap of tensorplay itself (not the interpreter) names the exception it shows as (``raises``,
beyond the interpreter's) and, where it fails only some of a case's checks, which (``checks``:
``"forward"``, ``"opcheck"``, ``"contract"``, ``"compiled"``; None: all).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import tensorplay
import triton
import triton.language as tl
from tensorplay.errors import CompileError
from tensorplay.library import triton_op, wrap_triton

try:
    from triton.language.extra.libdevice import rsqrt as _imported_rsqrt
except ModuleNotFoundError:  # NGC containers, as the libraries guard it
    from triton.language.extra.cuda.libdevice import rsqrt as _imported_rsqrt

_bound_cast = tl.cast   # Unsloth's `triton_cast = tl.cast`


@dataclasses.dataclass(frozen=True)
class Gap:
    reason: str
    probe: Callable[[], bool]     # True while the gap is there
    raises: tuple = ()            # the exceptions it shows as, beyond the interpreter's
    checks: frozenset | None = None   # the checks of a case it fails (None: every one)

    def applies(self, check) -> bool:
        return self.checks is None or check is None or check in self.checks

    @functools.cached_property
    def present(self) -> bool:
        return self.probe()


@triton.jit
def _libdevice_probe_kernel(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, _imported_rsqrt(tl.load(X + offs)))


@triton.jit
def _cast_probe_kernel(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, _bound_cast(tl.load(X + offs), tl.float32) * 2)


@triton.jit
def _boolop_probe_kernel(Y, M, N, BLOCK: tl.constexpr):
    # a BLOCK x BLOCK buffer, a logical M x N corner: FlagGems' `mask = rows < M and cols < N`
    rows = tl.arange(0, BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    mask = rows < M and cols < N
    tl.store(Y + rows * BLOCK + cols, tl.full((BLOCK, BLOCK), 1.0, tl.float32), mask=mask)


@triton_op("corpus_gap_probe::elementwise", mutates_args=())
def _probe_elementwise(x: tensorplay.Tensor, which: str) -> tensorplay.Tensor:
    y = tensorplay.empty_like(x)
    kernel = _libdevice_probe_kernel if which == "libdevice" else _cast_probe_kernel
    wrap_triton(kernel)[(1,)](x, y, BLOCK=x.numel())
    return y


@triton_op("corpus_gap_probe::boolop", mutates_args=())
def _probe_boolop(m: int, n: int) -> tensorplay.Tensor:
    y = tensorplay.zeros((4, 4), dtype=tensorplay.float32)
    wrap_triton(_boolop_probe_kernel)[(1,)](y, m, n, BLOCK=4)
    return y


@triton.jit
def _loopvar_probe_kernel(Y, N):
    # fla's chunk_fwd_kernel_h: `for i_t in range(NT): i_t.to(tl.int64)`
    for i in range(N):
        tl.store(Y + i, i.to(tl.int64) * 2)


@triton_op("corpus_gap_probe::loopvar", mutates_args=())
def _probe_loopvar(n: int) -> tensorplay.Tensor:
    y = tensorplay.zeros((n,), dtype=tensorplay.int64)
    wrap_triton(_loopvar_probe_kernel)[(1,)](y, n)
    return y


def _fails(fn) -> bool:
    try:
        return not fn()
    except Exception:  # noqa: BLE001 - the gap shows as any error inside the interpreter
        return True


def _libdevice_gap() -> bool:
    x = tensorplay.full((4,), 4.0)
    return _fails(lambda: _probe_elementwise(x, "libdevice").tolist() == [0.5] * 4)


def _cast_gap() -> bool:
    x = tensorplay.full((4,), 4.0)
    return _fails(lambda: _probe_elementwise(x, "cast").tolist() == [8.0] * 4)


def _boolop_gap() -> bool:
    return _fails(lambda: _probe_boolop(2, 3).sum().item() == 6.0)


def _loopvar_gap() -> bool:
    return _fails(lambda: _probe_loopvar(3).tolist() == [0, 2, 4])


LIBDEVICE = Gap("gap: names imported from triton.language.extra.libdevice (or bound from it at "
                "import) are not callable under the interpreter, fixed on h-triton", _libdevice_gap)
TL_ALIAS = Gap("gap: triton.language builtins bound to module-level names at import (triton_cast "
               "= tl.cast) are not patched by the interpreter, fixed on h-triton", _cast_gap)
BOOLOP = Gap("gap: `and`/`or` between tensors in a kernel are Python truthiness under the "
             "interpreter (not logical_and/or): masks lose a dimension, out-of-bounds access",
             _boolop_gap)
LOOP_VAR = Gap("gap: a `for i in range(...)` loop variable is a Python int under the interpreter "
               "(a scalar tensor when compiled): `i.to(tl.int64)` raises AttributeError; "
               "tensorplay-triton types it as the compiler does (h-fla47)", _loopvar_gap)


def _size_gap() -> bool:
    return not callable(getattr(tensorplay.zeros(2, 3).size(), "numel", None))


def _compile_break_gap() -> bool:
    def fn(t):
        # released host code's pattern (Cut Cross-Entropy's _build_flat_valids): a nonzero's
        # length read as a Python value to choose what runs
        return t * (2 if t.nonzero().numel() == t.numel() else 3)

    t = tensorplay.tensor([1.0, 0.0])
    return _fails(lambda: tensorplay.compile(fn)(t).tolist() == [3.0, 0.0])


TORCH_SIZE = Gap("gap (tensorplay._tensor_base: Tensor.shape / size()): sizes are a plain tuple, "
                 "not a torch.Size: no .numel() (Cut Cross-Entropy's handle_reduction_none: "
                 "`loss.new_zeros((batch_shape.numel(),))`)", _size_gap, raises=(AttributeError,))
COMPILE_GRAPH_BREAK = Gap(
    "gap (tensorplay.compile): a data-dependent size read as a Python value inside the "
    "compiled function (released host code: `valids.numel() != targets.numel()` after "
    "nonzero()) refuses the capture with CompileError, where torch.compile breaks the graph "
    "there; data-dependent Python values (bool(t), t.item(), float(t)...) are a graph break "
    "(the function runs eagerly), data-dependent sizes are not yet",
    _compile_break_gap, raises=(CompileError,), checks=frozenset({"compiled"}))
