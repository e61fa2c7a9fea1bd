"""Loop variables of ``for i in range(...)`` / ``tl.range(...)`` in kernels run on cpu tensors
(Triton's interpreter, through ``wrap_triton``) are what the compiler makes them: scalar tensors
of the integer promotion of the bounds' types (int32 for Python ints that fit; an int64 bound
gives int64), so ``i.to(tl.int64)``, ``i.dtype`` and tensor arithmetic on them work as compiled.

Found by the kernel corpus: flash-linear-attention 0.6.0's ``chunk_fwd_kernel_h``
(``fla/ops/common/chunk_h.py``, the state recurrence of every chunked linear-attention op) starts
its time loop with ``i_t_int64 = i_t.to(tl.int64)``; under the interpreter ``i_t`` was a Python int
and the launch raised ``InterpreterError: AttributeError("'int' object has no attribute 'to'")``.
``tl.static_range`` keeps its constexpr variable (the compiler unrolls it).
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorplay as tp

triton = pytest.importorskip("triton")
pytest.importorskip("tensorplay_triton")
tl = pytest.importorskip("triton.language")

from tensorplay.library import wrap_triton


@triton.jit(do_not_specialize=["T"])
def _chunk_starts(Y, T, BT: tl.constexpr, OFF: tl.constexpr):
    # fla's pattern: an int64 chunk index from the loop variable
    NT = tl.cdiv(T, BT)
    for i_t in range(NT):
        i_t64 = i_t.to(tl.int64)
        tl.store(Y + i_t, i_t64 * BT + OFF)


def test_loop_variable_converts_like_a_compiled_one():
    y = tp.zeros(5, dtype=tp.int64)
    off = 2 ** 40                                  # only an int64 holds the result
    wrap_triton(_chunk_starts)[(1,)](y, 37, BT=8, OFF=off)
    assert y.tolist() == [off + 8 * i for i in range(5)]


@triton.jit
def _dtypes(N_ptr, Y, n, WHICH: tl.constexpr):
    if WHICH == 0:      # Python-int bounds: int32
        for i in range(n):
            tl.static_assert(i.dtype == tl.int32)
            tl.store(Y + i, i * 10)
    elif WHICH == 1:    # an int64 bound (a loaded int64 length): int64
        m = tl.load(N_ptr)
        for i in range(0, m):
            tl.static_assert(i.dtype == tl.int64)
            tl.store(Y + i, i * 10)
    elif WHICH == 2:    # tl.range with a step and a keyword (num_stages): int32
        for i in tl.range(0, n, 2, num_stages=2):
            tl.static_assert(i.dtype == tl.int32)
            tl.store(Y + i // 2, i * 10)
    else:               # a negative constant step, a branch on the variable, a nested range
        k = 0
        for i in range(n - 1, -1, -1):
            if i == 0:
                tl.store(Y + k, -1)
            else:
                acc = 0
                for j in range(i):
                    acc += j
                tl.store(Y + k, acc)
            k += 1


@pytest.mark.parametrize("which, want", [
    (0, [0, 10, 20, 30, 40, 50]),
    (1, [0, 10, 20, 30, 0, 0]),
    (2, [0, 20, 40, 0, 0, 0]),
    (3, [10, 6, 3, 1, 0, -1]),
])
def test_loop_variable_types_follow_the_bounds(which, want):
    n_ptr = tp.tensor(np.array([4], dtype=np.int64))
    y = tp.zeros(6, dtype=tp.int64)
    wrap_triton(_dtypes)[(1,)](n_ptr, y, 6, WHICH=which)
    assert y.tolist() == want


@triton.jit
def _static(Y, N: tl.constexpr):
    acc = tl.zeros([N], dtype=tl.float32)
    for j in tl.static_range(3):
        acc += tl.full([N], j, tl.float32)     # j is a constexpr (unrolled)
    tl.store(Y + tl.arange(0, N), acc)


def test_static_range_keeps_its_constexpr_variable():
    y = tp.zeros(4)
    wrap_triton(_static)[(1,)](y, N=4)
    assert y.tolist() == [3.0] * 4
