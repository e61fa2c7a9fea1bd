"""Out-of-bounds loads and stores of Triton kernels run through the interpreter (cpu) are caught.

Triton's interpreter reads and writes host memory at whatever address a kernel computes, so a
kernel with a missing mask read past the end of its tensors silently: opcheck passed it. With
the bounds check (on during opcheck / ``tensorplay check``, in test runs through TensorPlay's
pytest plugin, and wherever ``TENSORPLAY_TRITON_BOUNDS=1``), every active lane of every
load/store/atomic must lie inside one of the launch's tensor arguments' storages; a violation
raises ``TritonBoundsError`` naming the kernel, the argument, the offset and the fix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

triton = pytest.importorskip("triton", reason="triton is not installed (pip install tensorplay-triton)")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")

import tensorplay as tp
import triton.language as tl
from tensorplay import library
from tensorplay.testing.opcheck import run_checks
from tensorplay_triton import wrap_triton

os.environ.pop("TRITON_INTERPRET", None)   # the mode is chosen per launch, from the device


@triton.jit
def b45_double_nomask(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)                        # the bug: no mask
    tl.store(out_ptr + offs, x * 2, mask=offs < n)


@triton.jit
def b45_double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * 2, mask=m)


@triton.jit
def b45_store_nomask(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x * 2)                  # the bug: writes past the end


@triton.jit
def b45_atomic_nomask(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr + offs, x)                 # the bug: no mask


@triton.jit
def b45_descriptor(x_ptr, out_ptr, n, shape_n, BLOCK: tl.constexpr):
    # a tensor descriptor: the interpreter masks its lanes by the descriptor's shape, so a
    # shape larger than the tensor reads past it
    pid = tl.program_id(0)
    xd = tl.make_tensor_descriptor(x_ptr, shape=[shape_n], strides=[1], block_shape=[BLOCK])
    od = tl.make_tensor_descriptor(out_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    od.store([pid * BLOCK], xd.load([pid * BLOCK]) * 2)


@triton.jit
def b45_view_shift(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # reads the element before the view's first one: inside the storage, as a GPU allows
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs - 1, mask=m), mask=m)


def _launch(kernel, x, out, block=16):
    n = x.numel()
    wrap_triton(kernel)[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    return out


@library.triton_op("b45::double_nomask", mutates_args=())
def double_nomask(x: tp.Tensor) -> tp.Tensor:
    return _launch(b45_double_nomask, x, tp.empty_like(x))


@library.triton_op("b45::double", mutates_args=())
def double(x: tp.Tensor) -> tp.Tensor:
    return _launch(b45_double, x, tp.empty_like(x))


double.register_autograd(lambda ctx, grad: grad * 2)


def _bounds_messages(failures):
    return {k: m for k, m in failures.items() if "bounds check" in m}


def test_a_missing_mask_fails_opcheck_on_cpu_naming_the_kernel():
    # passed on main: the unmasked load read 6 floats past x, the masked store dropped them
    failures = library.opcheck(double_nomask, (tp.randn(10),), raise_exception=False)
    found = _bounds_messages(failures)
    assert found, failures
    for m in found.values():
        assert "b45_double_nomask" in m and "'x_ptr'" in m, m
        assert "Check the mask" in m, m


def test_the_message_names_the_argument_offset_program_and_source_line():
    from tensorplay_triton._bounds import TritonBoundsError, bounds_check
    x = tp.randn(10)
    with bounds_check(), pytest.raises(TritonBoundsError) as ei:
        _launch(b45_double_nomask, x, tp.empty_like(x))
    e = ei.value
    assert (e.kernel, e.argument, e.offset, e.access) == ("b45_double_nomask", "x_ptr", 40, "load")
    # also the interpreter's own error class: code that caught an interpreted kernel's failure
    # as InterpreterError keeps working
    from triton.runtime.errors import InterpreterError
    assert isinstance(e, InterpreterError) and isinstance(e, IndexError)
    assert type(e).__name__ == "TritonBoundsError" and e.error_message == str(e)
    msg = str(e)
    assert "test_check45_bounds.py:" in msg and "program id (0, 0, 0)" in msg, msg
    assert "byte offset 40 (element 10)" in msg and "6 of 16 active lane(s)" in msg, msg


def test_a_correct_kernel_passes_every_check_with_the_bounds_check_on():
    assert library.opcheck(double, (tp.randn(10, requires_grad=True),)) == {}
    assert library.opcheck(double, (tp.randn(3, 16),)) == {}


def test_a_mask_bug_hidden_by_the_samples_size_is_caught_on_the_second_shape():
    # 16 elements: one full block, nothing read out of bounds on the sample; the compile check's
    # second shape (17) needs the mask -- passed on main
    res = run_checks(double_nomask, (tp.randn(16),))
    assert all(r.status != "fail" for k, r in res.items() if k != "test_aot_dispatch_dynamic"), res
    aot = res["test_aot_dispatch_dynamic"]
    assert aot.status == "fail" and "b45_double_nomask" in aot.message, aot
    assert "bounds check" in aot.message and "size 16 grown to 17" in aot.message, aot.message


def test_a_store_past_the_end_is_caught_before_it_writes():
    from tensorplay_triton._bounds import TritonBoundsError, bounds_check
    x = tp.randn(10)
    storage = tp.zeros(32)
    out = storage[:10]            # a view: writes past it would land in the rest of the storage
    with bounds_check():
        _launch(b45_store_nomask, x, out)   # inside out's storage (32 floats): allowed
    assert tp.equal(storage[10:], tp.zeros(22))      # lanes past n stored x's other=0 * 2
    out = tp.zeros(10)
    with bounds_check(), pytest.raises(TritonBoundsError) as ei:
        _launch(b45_store_nomask, x, out)
    assert ei.value.access == "store" and ei.value.argument == "out_ptr"


def test_atomics_are_checked():
    from tensorplay_triton._bounds import TritonBoundsError, bounds_check
    x = tp.randn(10)
    with bounds_check(), pytest.raises(TritonBoundsError) as ei:
        _launch(b45_atomic_nomask, x, tp.zeros(10))
    assert ei.value.access == "atomic" and ei.value.argument == "out_ptr"


def test_tensor_descriptors_are_checked():
    from tensorplay_triton._bounds import TritonBoundsError, bounds_check
    x = tp.randn(10)
    out = tp.empty_like(x)
    with bounds_check():
        wrap_triton(b45_descriptor)[(1,)](x, out, 10, 10, BLOCK=16)
        assert tp.allclose(out, x * 2)
        with pytest.raises(TritonBoundsError) as ei:       # the descriptor says 16 elements
            wrap_triton(b45_descriptor)[(1,)](x, out, 10, 16, BLOCK=16)
    assert ei.value.argument == "x_ptr" and ei.value.access == "load"


def test_a_view_may_read_its_storage_outside_the_view():
    from tensorplay_triton._bounds import TritonBoundsError, bounds_check
    base = tp.arange(12, dtype=tp.float32)
    out = tp.empty(8)
    with bounds_check():
        _launch(b45_view_shift, base[4:12], out)
        assert out.tolist() == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
        with pytest.raises(TritonBoundsError) as ei:       # element -1 of a fresh storage
            _launch(b45_view_shift, base[4:12].clone(), out)
    assert ei.value.offset == -4 and "before the start of its storage" in str(ei.value)


def test_off_launches_are_not_checked():
    from tensorplay_triton._bounds import bounds_check
    x = tp.randn(10)
    with bounds_check(False):       # reads past x, as before (and as on main)
        out = _launch(b45_double_nomask, x, tp.empty_like(x))
    assert tp.allclose(out, x * 2)


_ENV_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    import tensorplay as tp
    from tensorplay import library
    import test_check45_bounds as t
    try:
        t._launch(t.b45_double_nomask, tp.randn(10), tp.empty(10))
        print("direct: no error")
    except Exception as e:
        print("direct:", type(e).__name__)
    f = library.opcheck(t.double_nomask, (tp.randn(10),), raise_exception=False)
    print("opcheck:", "bounds" if any("bounds check" in m for m in f.values()) else "none")
    from tensorplay_triton._bounds import bounds_check
    try:
        with bounds_check():            # a scope wins over the environment
            t._launch(t.b45_double_nomask, tp.randn(10), tp.empty(10))
        print("scoped: no error")
    except Exception as e:
        print("scoped:", type(e).__name__)
""")


@pytest.mark.parametrize("value,direct,checked", [
    ("1", "TritonBoundsError", "bounds"),      # always
    ("0", "no error", "none"),                 # never, not even in opcheck
    ("", "no error", "bounds"),                # unset: during checks only
])
def test_the_environment_variable(value, direct, checked):
    env = dict(os.environ)
    env.pop("TENSORPLAY_TRITON_BOUNDS", None)
    if value:
        env["TENSORPLAY_TRITON_BOUNDS"] = value
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, "-c", _ENV_SCRIPT.format(here=here)], env=env,
                       capture_output=True, text=True, timeout=300, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"direct: {direct}" in p.stdout and f"opcheck: {checked}" in p.stdout, p.stdout
    assert "scoped: TritonBoundsError" in p.stdout, p.stdout


@pytest.mark.parametrize("preset,option,expected", [
    (None, None, "1"),                               # test runs: on by default
    (None, "--tensorplay-triton-bounds=off", "0"),
    ("0", None, "0"),                                # the user's setting stands
    ("0", "--tensorplay-triton-bounds=on", "1"),
])
def test_tensorplays_pytest_plugin_turns_the_check_on_in_test_runs(tmp_path, preset, option,
                                                                   expected):
    (tmp_path / "test_env.py").write_text(
        "import os\n\ndef test_env():\n"
        f"    assert os.environ.get('TENSORPLAY_TRITON_BOUNDS') == {expected!r}\n")
    env = dict(os.environ)
    env.pop("TENSORPLAY_TRITON_BOUNDS", None)
    if preset is not None:
        env["TENSORPLAY_TRITON_BOUNDS"] = preset
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)]
    p = subprocess.run(cmd + ([option] if option else []), env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=300, check=False)
    assert p.returncode == 0, p.stdout + p.stderr


_PACK = '''
import tensorplay
import triton
import triton.language as tl
from tensorplay import library
from tensorplay.plugins import hookimpl, SampleInput
from tensorplay_triton import wrap_triton


@triton.jit
def masklessk(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * 2, mask=offs < n)


@triton.jit
def maskedk(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def _launch(k, x):
    out = tensorplay.empty_like(x)
    wrap_triton(k)[(triton.cdiv(x.numel(), 16),)](x, out, x.numel(), BLOCK=16)
    return out


@hookimpl
def tensorplay_register_ops(registrar):
    @library.triton_op("maskpack::bad", mutates_args=())
    def bad(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return _launch(masklessk, x)

    @library.triton_op("maskpack::good", mutates_args=())
    def good(x: tensorplay.Tensor) -> tensorplay.Tensor:
        return _launch(maskedk, x)


@hookimpl
def tensorplay_sample_inputs(op, device):
    if op.namespace != "maskpack":
        return None
    return [SampleInput((tensorplay.randn(10, device=device),), name="n10")]
'''


def test_tensorplay_check_fails_a_pack_whose_kernel_reads_past_its_tensor(tmp_path):
    # `tensorplay check` passed maskpack::bad on main (every check ok)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _plugin_dists import PluginEnv
    env = PluginEnv(tmp_path)
    env.dist("maskpack", plugins={"maskpack": "maskpack"}, modules={"maskpack": _PACK})
    e = dict(os.environ)
    e.pop("TENSORPLAY_TRITON_BOUNDS", None)       # the default outside test runs: on in checks
    e["PYTHONPATH"] = os.pathsep.join([env.root] + [x for x in [e.get("PYTHONPATH")] if x])
    p = subprocess.run([sys.executable, "-m", "_tensorplay_cli", "check", "--plugin", "maskpack",
                        "--device", "cpu", "--test-utils", "test_schema,test_faketensor"],
                       capture_output=True, text=True, env=e, timeout=600, check=False)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "maskpack::bad" in out and "masklessk" in out and "Check the mask" in out, out
    assert "'x_ptr'" in out, out
    rows = [ln for ln in p.stdout.splitlines() if "maskpack::good" in ln]
    assert rows and "FAIL" not in rows[0], p.stdout


# -- pointer tables: addresses loaded from memory (Triton's grouped-GEMM tutorial builds them) ----

@triton.jit
def b45_copy_through_table(table_ptr, n, BLOCK: tl.constexpr):
    src = tl.load(table_ptr + 0).to(tl.pointer_type(tl.float32))
    dst = tl.load(table_ptr + 1).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n) * 2, mask=offs < n)


def test_a_pointer_table_reaches_live_tensors_that_are_not_arguments():
    # failed before the fix: the pointed-to tensors are not launch arguments, so every access
    # through the table was reported out of bounds
    from tensorplay_triton._bounds import bounds_check
    x, out = tp.randn(10), tp.zeros(10)
    table = tp.tensor([x.data_ptr(), out.data_ptr()], dtype=tp.int64)
    with bounds_check():
        wrap_triton(b45_copy_through_table)[(1,)](table, 10, BLOCK=16)
    assert tp.equal(out, x * 2)


def test_a_pointer_table_access_outside_every_live_tensor_is_still_caught():
    from tensorplay_triton._bounds import TritonBoundsError, bounds_check
    out = tp.zeros(10)
    # a source address inside no tensor: 1 MiB past the end of out's storage
    bogus = out.data_ptr() + (1 << 20)
    table = tp.tensor([bogus, out.data_ptr()], dtype=tp.int64)
    with bounds_check(), pytest.raises(TritonBoundsError):
        wrap_triton(b45_copy_through_table)[(1,)](table, 10, BLOCK=16)
    del out


def test_a_kernel_without_integer_to_pointer_casts_gets_its_arguments_only():
    # the live-tensor lookup is only for kernels that cast integers to pointers: a plain kernel
    # reading past its argument is caught even when another live tensor sits at that address
    from tensorplay_triton._bounds import TritonBoundsError, bounds_check
    storage = tp.randn(64)
    x, out = storage[:10].clone(), tp.zeros(10)
    keep = [tp.randn(10) for _ in range(32)]    # live neighbours in memory
    with bounds_check(), pytest.raises(TritonBoundsError):
        _launch(b45_double_nomask, x, out)
    del keep
