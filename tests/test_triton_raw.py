"""A compiled Triton kernel launched raw (``kernel[grid](...)``) on tensorplay tensors where Triton
has no driver for it: a ``TritonLaunchError`` naming the kernel, the device and the fix, instead of
Triton's "0 active drivers"."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

os.environ.pop("TRITON_INTERPRET", None)
triton = pytest.importorskip("triton", reason="triton is not installed")
pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
np = pytest.importorskip("numpy")

import tensorplay
import triton.language as tl
from tensorplay_triton import TritonLaunchError, wrap_triton


@triton.jit
def raw_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@pytest.fixture
def no_driver(monkeypatch):
    """Triton with no active driver (as on a machine without a GPU), whatever this machine has."""
    from triton.runtime import driver as cfg
    tdriver_mod = sys.modules["triton.runtime.driver"]    # the module (the package attribute
    monkeypatch.setattr(tdriver_mod, "backends", {})      # of that name is its DriverConfig)
    monkeypatch.setattr(cfg, "_default", None)
    monkeypatch.setattr(cfg, "_active", None)


def test_raw_compiled_launch_on_cpu_tensors_names_kernel_device_and_fix(no_driver):
    x, y, out = tensorplay.randn(8), tensorplay.randn(8), tensorplay.empty(8)
    with pytest.raises(TritonLaunchError) as ei:
        raw_add_kernel[(1,)](x, y, out, 8, BLOCK=8)
    msg = str(ei.value)
    assert "raw_add_kernel" in msg and "'x_ptr' is on cpu" in msg
    assert "wrap_triton(raw_add_kernel)[grid](...)" in msg and "interpreter" in msg
    assert ".to('cuda')" in msg
    assert isinstance(ei.value, RuntimeError)               # what Triton raised before
    assert "0 active drivers" in str(ei.value.__cause__)    # Triton's own error is kept as cause
    # the fix works: the same kernel through wrap_triton runs on these cpu tensors
    wrap_triton(raw_add_kernel)[(1,)](x, y, out, 8, BLOCK=8)
    np.testing.assert_allclose(out.numpy(), x.numpy() + y.numpy(), rtol=1e-6)


def test_raw_launch_with_keyword_tensor_and_cpu_tensor_later(no_driver):
    x, y, out = tensorplay.randn(8), tensorplay.randn(8), tensorplay.empty(8)
    with pytest.raises(TritonLaunchError, match=r"raw_add_kernel.*'out_ptr' is on cpu"):
        raw_add_kernel[(1,)](0, 0, out_ptr=out, n=8, BLOCK=8)
    del x, y


def test_raw_launch_on_cuda_tensors_without_driver_names_install_driver(no_driver):
    x = tensorplay.randn(8)
    x._device = tensorplay.device("cuda:0")      # a cuda tensor as far as the message goes
    with pytest.raises(TritonLaunchError, match=r"install_driver\(\).*wrap_triton\(raw_add_kernel\)"):
        raw_add_kernel[(1,)](x, x, x, 8, BLOCK=8)


def test_other_launches_keep_tritons_own_error(no_driver):
    with pytest.raises(RuntimeError, match="0 active drivers") as ei:
        raw_add_kernel[(1,)](0, 0, 0, 8, BLOCK=8)              # no tensorplay tensor involved
    assert not isinstance(ei.value, TritonLaunchError)


@pytest.mark.parametrize("first", ["triton", "tensorplay"])
def test_real_raw_launch_either_import_order(first, tmp_path):
    """No monkeypatching: a fresh process imports triton and tensorplay in either order."""
    imports = ["import triton", "import tensorplay"]
    if first == "tensorplay":
        imports.reverse()
    code = textwrap.dedent(f"""
        import os
        os.environ.pop("TRITON_INTERPRET", None)
        {imports[0]}
        {imports[1]}
        import triton.language as tl
        from triton.backends import backends
        if any(b.driver.is_active() for b in backends.values()):
            print("SKIP a Triton driver is active on this machine")
            raise SystemExit(0)

        @triton.jit
        def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

        x = tensorplay.randn(4)
        try:
            k[(1,)](x, tensorplay.empty(4), 4, BLOCK=4)
        except Exception as e:
            print(type(e).__name__, e)
    """)
    script = tmp_path / "raw.py"
    script.write_text(code)
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=120, check=False)
    out = p.stdout + p.stderr
    if out.startswith("SKIP"):
        pytest.skip(out.strip())
    assert p.returncode == 0, out
    assert out.startswith("TritonLaunchError k[grid](...)"), out
    assert "'x_ptr' is on cpu" in out and "wrap_triton(k)[grid](...)" in out, out


@pytest.mark.parametrize("grid", ["a", None, 3, [1.5], [1, 2, 3, 4], [True]])
def test_wrap_triton_names_a_grid_that_is_not_a_tuple_of_ints(grid):
    """A grid that is neither a tuple nor a function: TypeError naming the kernel, the grid and
    what a grid is (Triton itself says "can only concatenate str ..."); a list of ints works."""
    triton = pytest.importorskip("triton")
    tl = pytest.importorskip("triton.language")
    import tensorplay as tp
    from tensorplay.library import wrap_triton

    @triton.jit
    def grid_kernel(x, o, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        tl.store(o + offs, tl.load(x + offs, mask=m) * 2, mask=m)
    x, o = tp.arange(8.0), tp.empty(8)
    with pytest.raises(TypeError, match=r"wrap_triton\(grid_kernel\)\[grid\]: grid must be a "
                                        r"tuple of 1 to 3 ints"):
        wrap_triton(grid_kernel)[grid](x, o, 8, BLOCK=8)
    wrap_triton(grid_kernel)[[1]](x, o, 8, BLOCK=8)
    assert o.tolist() == [2.0 * i for i in range(8)]
