"""``tensorplay.get_num_threads`` / ``set_num_threads`` (torch's intra-op setting) and the cpu
fuser's threaded, cache-blocked execution of ``tensorplay.compile``'s chains: results equal eager
*bit for bit* whatever the thread count -- sizes around a block and around the parallel
threshold, broadcasting, non-contiguous inputs, float32/float64/int dtypes, a reduction after the
chain -- and the setting decides how many threads run (none below the threshold)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorplay as tp
from _fusion_cases import assert_bits, chain8

fusion = pytest.importorskip("tensorplay_cpu.fusion")
BLOCK = fusion.BLOCK
PAR = fusion.PARALLEL_MIN


@pytest.fixture
def threads():
    """Restores the thread setting after the test."""
    before = tp.get_num_threads()
    yield
    tp.set_num_threads(before)


def _values(n, dtype, seed):
    """float values with NaN, +-inf, -0.0 and subnormals sprinkled in; ints in a small range."""
    rng = np.random.default_rng(seed)
    if dtype in (tp.int32, tp.int64):
        return tp.from_numpy(rng.integers(-50, 50, size=n).astype(
            np.int32 if dtype == tp.int32 else np.int64))
    x = (rng.standard_normal(n) * 3).astype(np.float32 if dtype == tp.float32 else np.float64)
    fi = np.finfo(x.dtype)
    sp = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, fi.tiny / 4, fi.max], dtype=x.dtype)
    idx = rng.integers(0, n, size=min(n, 64))
    x[idx] = np.resize(sp, len(idx))
    return tp.from_numpy(x)


def int_chain(x, y):
    a = x * y
    a = a + 3
    a = a - y
    a = tp.maximum(a, x)
    return a * 2, a.abs()


def _every_thread_count(f, *args):
    """``f`` compiled, run on 1, 2 and 3 threads: each result bit-equal to eager."""
    want = f(*args)
    cf = tp.compile(f)
    for t in (1, 2, 3):
        tp.set_num_threads(t)
        assert_bits(cf(*args), want)
    return cf


def test_num_threads_setting_is_torchs(threads):
    assert isinstance(tp.get_num_threads(), int) and tp.get_num_threads() >= 1
    tp.set_num_threads(3)
    assert tp.get_num_threads() == 3
    tp.set_num_threads(1)
    assert tp.get_num_threads() == 1
    for bad, err in [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError),
                     ("2", TypeError)]:
        with pytest.raises(err, match="set_num_threads"):
            tp.set_num_threads(bad)
    assert tp.get_num_threads() == 1                 # a refused value changes nothing
    tp.set_num_threads(np.int64(2))                   # an integer index, as torch accepts
    assert tp.get_num_threads() == 2 and type(tp.get_num_threads()) is int


@pytest.mark.parametrize("env, want", [("3", 3), ("1", 1), ("zero", None), ("0", None), ("", None)])
def test_default_is_omp_num_threads_else_the_cores(env, want):
    code = "import os, tensorplay; print(tensorplay.get_num_threads(), len(os.sched_getaffinity(0)))"
    e = dict(os.environ, OMP_NUM_THREADS=env)
    got, cores = map(int, subprocess.run([sys.executable, "-c", code], env=e, check=True,
                                         capture_output=True, text=True).stdout.split())
    assert got == (want if want is not None else cores)


@pytest.mark.usefixtures("cpu", "threads")
@pytest.mark.parametrize("n", [BLOCK - 1, BLOCK + 1, 2 * PAR - 1, 2 * PAR + BLOCK + 17])
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_chain_is_bit_equal_on_any_thread_count(n, dtype):
    _every_thread_count(chain8, _values(n, dtype, 1), _values(n, dtype, 2))


@pytest.mark.usefixtures("cpu", "threads")
@pytest.mark.parametrize("dtype", [tp.int32, tp.int64])
def test_int_chain_is_bit_equal_on_any_thread_count(dtype):
    n = 2 * PAR + 5
    _every_thread_count(int_chain, _values(n, dtype, 3), _values(n, dtype, 4))


@pytest.mark.usefixtures("cpu", "threads")
def test_reference_kernel_steps_in_worker_threads_are_bit_equal():
    def f(x, y):
        m = (x * 2.0) > y
        w = tp.where(tp.logical_or(m, x == y), x.exp(), y.abs() + 1.0)   # where: reference kernel
        h = (w * 3.0).to(tp.float64) + 1.0                                # a cast, then float64
        return h.sqrt(), tp.erf(w), tp.logical_not(m)
    n = 3 * PAR + 7
    _every_thread_count(f, _values(n, tp.float32, 13), _values(n, tp.float32, 14))


@pytest.mark.usefixtures("cpu", "threads")
@pytest.mark.parametrize("case", ["row_broadcast", "column_broadcast", "outer", "zero_d"])
def test_broadcasting_is_bit_equal_on_any_thread_count(case):
    rows, cols = 1031, 1024                     # a block is a whole number of rows, plus a tail
    x = _values(rows * cols, tp.float32, 5).reshape(rows, cols)
    if case == "row_broadcast":
        y = _values(cols, tp.float32, 6)
    elif case == "column_broadcast":
        y = _values(rows, tp.float32, 6).reshape(rows, 1)
    elif case == "outer":
        x, y = x[:, :1], _values(cols, tp.float32, 6).reshape(1, cols)
    else:
        y = tp.tensor(0.75)
    _every_thread_count(chain8, x, y)
    _every_thread_count(chain8, y, x)           # the broadcast input first


@pytest.mark.usefixtures("cpu", "threads")
def test_an_output_of_the_smaller_broadcast_shape_keeps_its_shape():
    def f(x, y):
        a = (x * 2.0).relu()           # x's shape only
        return a, (a + y).tanh()       # broadcast shape
    x, y = _values(1024, tp.float32, 11), _values(PAR, tp.float32, 12).reshape(-1, 1024)
    cf = _every_thread_count(f, x, y)
    a, b = cf(x, y)
    assert tuple(a.shape) == (1024,) and tuple(b.shape) == (PAR // 1024, 1024)


@pytest.mark.usefixtures("cpu", "threads")
@pytest.mark.parametrize("case", ["strided", "transposed", "sliced_rows", "mixed"])
def test_non_contiguous_inputs_are_bit_equal_on_any_thread_count(case):
    n = 2 * PAR + 333
    if case == "strided":
        x, y = _values(2 * n, tp.float32, 7)[::2], _values(3 * n, tp.float32, 8)[::3]
    elif case == "transposed":
        x = _values(700 * 1500, tp.float32, 7).reshape(700, 1500).transpose(0, 1)
        y = _values(1500 * 700, tp.float32, 8).reshape(1500, 700)
    elif case == "sliced_rows":
        x = _values(900 * 1200, tp.float64, 7).reshape(900, 1200)[:, 100:1100]
        y = _values(900 * 1000, tp.float64, 8).reshape(900, 1000)
    else:
        x, y = _values(n, tp.float32, 7), _values(2 * n, tp.float32, 8)[1::2]
    _every_thread_count(chain8, x, y)


@pytest.mark.usefixtures("cpu", "threads")
def test_reduction_after_the_chain_and_intermediate_outputs():
    def f(x, y):
        a = x * y + 1.0
        b = (a * 0.5).relu()
        c = (b - y).tanh()
        return c.sum(), a, c.amax(dim=0)
    x = _values(3 * PAR, tp.float32, 9).reshape(-1, 512)
    y = _values(3 * PAR, tp.float32, 10).reshape(-1, 512)
    _every_thread_count(f, x, y)


@pytest.mark.usefixtures("cpu")
def test_the_setting_decides_the_worker_threads_and_small_chains_stay_on_the_caller():
    code = textwrap.dedent(f"""
        import threading, tensorplay as tp

        def chain(x, y):
            return ((x * y + 1.0) * 0.5).relu().tanh()

        def workers():
            return [t for t in threading.enumerate() if t.name.startswith("tensorplay-cpu")]

        cf = tp.compile(chain)
        big, small = tp.randn({4 * PAR}), tp.randn({PAR // 2})
        tp.set_num_threads(1)
        cf(big, big)
        one = len(workers())
        tp.set_num_threads(3)
        cf(small, small)
        cf(small, small)
        small_n = len(workers())
        cf(big, big)
        print(one, small_n, len(workers()))
    """)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout.split()
    one, small_n, three = map(int, out)
    assert one == 0, "set_num_threads(1): a worker thread was started"
    assert small_n == 0, "a chain below the parallel threshold started worker threads"
    assert 1 <= three <= 2, f"set_num_threads(3): {three} worker threads (1 or 2 expected)"
