"""The views' fast paths (h-viewspeed44): a contiguous input's view/reshape/unsqueeze/squeeze, a
basic index on any dim (``select``/``slice``/``narrow``, ``x[int]``, ``x[slice]``) take their
native array from the backend's own reshape or basic index instead of ``as_strided``. Each
must give exactly what the general path gives: the same metadata (and the fake's), a native
array that is that view (its strides, its first element, shared memory), a shared version
counter, view tracking and autograd history, and the same errors.

The layouts swept: contiguous, contiguous with size-1 dims, a transposed and a strided slice (the
general path), torch-contiguous with a size-1 dim of another stride (``is_contiguous`` but not
the row-major strides: the general path), an empty tensor and a 0-d one."""

from __future__ import annotations

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import fake


def _bases(device="cpu"):
    def ar(n):
        return tp.arange(float(n), device=device)
    return {
        "contig": ar(24).reshape(2, 3, 4),
        "ones_dims": ar(12).reshape(3, 1, 4, 1),
        "transposed": ar(24).reshape(2, 3, 4).transpose(0, 2),
        "strided": ar(60).reshape(5, 12)[1:4, 2::3],
        "odd_one_stride": ar(8).as_strided((4, 1), (1, 7)),
        "offset_contig": ar(30)[6:].view(2, 3, 4),
        "empty": tp.zeros(0, 3, device=device),
        "scalar": tp.tensor(5.0, device=device),
    }


_FLAT = {"contig", "ones_dims", "odd_one_stride", "offset_contig", "empty", "scalar"}

# (name, fn, layouts it applies to: None for all); each a view of its input
OPS = [
    ("view_flat", lambda x: x.view(-1), _FLAT),
    ("view_list", lambda x: x.view([x.numel()]), _FLAT),
    ("view_split", lambda x: x.view(x.shape[0], 1, -1), {"contig", "offset_contig", "ones_dims"}),
    ("view_ones", lambda x: x.view(1, *x.shape, 1), None),
    ("reshape_flat", lambda x: x.reshape(-1), _FLAT),
    ("reshape_tuple", lambda x: x.reshape((1, -1)), _FLAT),
    ("unsqueeze0", lambda x: x.unsqueeze(0), None),
    ("unsqueeze_last", lambda x: x.unsqueeze(-1), None),
    ("unsqueeze_mid", lambda x: x.unsqueeze(1), "ndim"),
    ("squeeze_all", lambda x: x.squeeze(), None),
    ("squeeze_none_dropped", lambda x: x.squeeze(0) if x.ndim else x.squeeze(), None),
    ("squeeze_last", lambda x: x.squeeze(-1), None),
    ("index0", lambda x: x[0], "nonempty"),
    ("index_neg", lambda x: x[-1], "nonempty"),
    ("index_slice", lambda x: x[1:], "ndim"),
    ("index_slice_step", lambda x: x[::2], "ndim"),
    ("index_slice_empty", lambda x: x[5:1], "ndim"),
    ("index_tuple", lambda x: x[0, 1:], "2d"),
    ("index_full_int", lambda x: x[:, 0], "2d"),
    ("index_none_int_none", lambda x: x[None, 0, None], "nonempty"),
    ("index_full_full", lambda x: x[:, :], "2d"),
    ("index_none", lambda x: x[None], None),
    ("select_last_dim", lambda x: x.select(-1, 0), "nonempty_last"),
    ("select_mid", lambda x: x.select(1, 0), "2d"),
    ("slice_dim1", lambda x: x[:, 1::2], "2d"),
    ("narrow1", lambda x: x.narrow(1, 1, 1), "2d"),
    ("narrow0_empty", lambda x: x.narrow(0, 0, 0), "ndim"),
    ("t", lambda x: x.t(), "is2d"),
    ("transpose", lambda x: x.transpose(0, -1), None),
    ("permute", lambda x: x.permute(list(reversed(range(x.ndim)))), None),
    ("expand", lambda x: x.unsqueeze(0).expand(2, *x.shape), None),
]


def _applies(cond, x):
    if cond is None:
        return True
    if isinstance(cond, set):
        return False
    return {"nonempty": x.ndim >= 1 and x.shape[0] > 0,
            "ndim": x.ndim >= 1,
            "2d": x.ndim >= 2 and x.shape[0] > 0 and x.shape[1] > 1,
            "nonempty_last": x.ndim >= 1 and x.shape[-1] > 0,
            "is2d": x.ndim == 2}[cond]


CASES = [(op, layout) for op, fn, cond in OPS for layout, x in _bases().items()
         if (layout in cond if isinstance(cond, set) else _applies(cond, x))]


def _meta(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


def _storage_values(x):
    """The flat storage of ``x`` as NumPy (its root array, all of it)."""
    a = x.numpy()
    while a.base is not None and isinstance(a.base, np.ndarray):
        a = a.base
    return a.reshape(-1)


@pytest.mark.parametrize("op,layout", CASES, ids=[f"{o}-{l}" for o, l in CASES])
def test_fast_view_is_the_view(op, layout):
    fn = next(f for o, f, _ in OPS if o == op)
    x = _bases()[layout]
    v = fn(x)
    shape, stride, off = _meta(v)
    # the fake rule gives the same metadata
    assert _meta(fn(fake.from_real(x))) == (shape, stride, off)
    # the native array is exactly that view of the storage: shape, strides of every dim that
    # has more than one element, first element, values; and it shares the memory
    a = v.numpy()
    item = a.dtype.itemsize
    assert a.shape == shape and isinstance(a, np.ndarray)
    # (an empty view's array is a fresh empty one on the general path: no strides to compare)
    assert not a.size or all(s * item == b for s, b, n in zip(stride, a.strides, shape) if n > 1)
    flat = _storage_values(x)
    ref = np.lib.stride_tricks.as_strided(flat[off:], shape, [s * item for s in stride])
    assert a.tolist() == ref.tolist()
    if a.size:
        root = flat.__array_interface__["data"][0]
        assert a.__array_interface__["data"][0] == root + off * item
        assert np.shares_memory(a, flat)
    # one storage, one version counter, the view tracked to the root base
    assert v._storage is x._storage
    assert v._base is (x._base if x._base is not None else x)
    if op != "expand" and v.numel():
        before = x._version
        v.fill_(-7.0)
        assert x._version == v._version == before + 1
        assert (x.numpy() == -7.0).sum() == v.numel() or layout == "odd_one_stride"
        assert (ref == -7.0).all()


CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
@pytest.mark.parametrize("op,layout", CASES, ids=[f"{o}-{l}" for o, l in CASES])
def test_fast_view_is_the_view_on_cuda(op, layout):
    """The same views on cuda (CuPy's reshape and basic indexing as the native views): the cpu
    view's metadata, values and aliasing."""
    fn = next(f for o, f, _ in OPS if o == op)
    x, xc = _bases("cuda")[layout], _bases()[layout]
    v, vc = fn(x), fn(xc)
    assert _meta(v) == _meta(vc) and v.device.type == "cuda"
    assert v.cpu().tolist() == vc.tolist()
    assert v._storage is x._storage
    if op != "expand" and v.numel():
        before = x._version
        v.fill_(-7.0)
        vc.fill_(-7.0)
        assert x._version == v._version == before + 1
        assert x.cpu().tolist() == xc.tolist()        # the same elements written


@pytest.mark.parametrize("op,layout", [c for c in CASES if c[1] in ("contig", "strided")],
                         ids=[f"{o}-{l}" for o, l in CASES if l in ("contig", "strided")])
def test_fast_view_records_autograd(op, layout):
    fn = next(f for o, f, _ in OPS if o == op)
    x = _bases()[layout].detach().requires_grad_(True) if layout == "contig" else \
        tp.arange(60.0).reshape(5, 12).requires_grad_(True)
    base = x if layout == "contig" else x[1:4, 2::3]
    v = fn(base)
    assert v.requires_grad and v.grad_fn is not None
    (v * tp.arange(float(v.numel())).reshape(v.shape)).sum().backward()
    # the gradient lands on the elements the view reads: the same as the general path's
    # (the view of a copy has no aliasing to take; its gradient is the same scatter)
    g = tp.zeros(x.shape)
    w = fn(g if layout == "contig" else g[1:4, 2::3])
    if op != "expand":
        w.copy_(tp.arange(float(w.numel())).reshape(w.shape))
        assert x.grad.tolist() == g.tolist()
    else:
        assert x.grad.shape == x.shape


def test_fast_paths_keep_the_errors():
    x = tp.arange(12.0).reshape(3, 4)
    t = x.t()                                    # the general path
    for bad in ((5, -1), (-1, -1), (2, -2), (7,), (0, -1)):
        with pytest.raises(RuntimeError) as fast:
            x.view(*bad)
        with pytest.raises(RuntimeError) as slow:
            t.view(*bad)
        assert str(fast.value) == str(slow.value)
        with pytest.raises(RuntimeError) as fast_r:
            x.reshape(*bad)
        with pytest.raises(RuntimeError) as slow_r:
            t.reshape(*bad)
        assert str(fast_r.value) == str(slow_r.value)
    with pytest.raises(RuntimeError, match=r"view.*Use \.reshape"):
        t.view(-1)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[3]
    with pytest.raises(IndexError, match="index -4 is out of bounds"):
        x[-4]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        tp.tensor(1.0)[0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        tp.tensor(1.0)[1:]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.unsqueeze(3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.select(2, 0)
    with pytest.raises(TypeError):
        x.view(2.0, 6)
    with pytest.raises(IndexError):
        x[1.5]


def test_bool_and_numpy_int_indices_are_not_fast_ints():
    x = tp.arange(6.0).reshape(2, 3)
    assert x[True].shape == (1, 2, 3)            # a Python bool inserts a dim (torch's rule)
    assert x[False].shape == (0, 2, 3)
    assert x[np.int64(1)].tolist() == [3.0, 4.0, 5.0]
    assert x.select(1, np.int64(-1)).tolist() == [2.0, 5.0]
    assert x[1:np.int64(2)].tolist() == [[3.0, 4.0, 5.0]]


def test_compile_captures_the_fast_views():
    def f(x):
        return x.view(-1)[2:] * 2 + x[1].sum() + x.unsqueeze(0).squeeze(0).reshape(3, 2)[0, 1]

    x = tp.arange(6.0).reshape(2, 3)
    cf = tp.compile(f)
    assert cf(x).tolist() == f(x).tolist()
    y = tp.arange(6.0, 12.0).reshape(2, 3)
    assert cf(y).tolist() == f(y).tolist()


def test_empty_slice_keeps_torchs_storage_offset():
    # torch moves the offset to the clamped start even when the slice is empty (main kept the
    # input's offset: x[5:1] of (2, 3, 4) was offset 0, torch's 24); fake and real agree
    x = tp.arange(24.0).reshape(2, 3, 4)
    for v, off in ((x[5:1], 24), (x[1:1], 12), (x[:, 2:0], 8), (x.narrow(2, 3, 0), 3),
                   (x[1, 3:], 24), (x[-1:-2], 12), (x[0].t()[:, 7:], 12)):
        assert v.numel() == 0 and v.storage_offset() == off
    f = fake.from_real(x)
    assert f[5:1].storage_offset() == 24 and f.narrow(2, 3, 0).storage_offset() == 3
    x[5:1] = 1.0                                  # writes nothing
    assert x.sum().item() == sum(range(24))


def test_permute_needs_its_dims():
    for x in (tp.ones(2, 3), tp.tensor(1.0)):
        with pytest.raises(TypeError, match="dims"):
            x.permute()
    assert tp.tensor(1.0).permute(()).shape == ()
    assert tp.ones(2, 3).permute(dims=(1, 0)).shape == (3, 2)


def test_squeeze_refuses_a_repeated_dim():
    # torch's dim_list_to_bitset (main dropped the repeat: squeeze((0, -1)) of a 0-d tensor, or
    # squeeze((1, -2)) of (2, 1, 3), was accepted); the range is checked first, as torch
    for x, dims, d in ((tp.ones(2, 1, 3), (0, 0), 0), (tp.ones(2, 1, 3), (1, -2), 1),
                       (tp.tensor(1.0), (0, -1), 0)):
        with pytest.raises(RuntimeError, match=f"dim {d} appears multiple times in the list"):
            x.squeeze(dims)
        with pytest.raises(RuntimeError, match=f"dim {d} appears multiple times in the list"):
            fake.from_real(x).squeeze(dims)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tp.tensor(1.0).squeeze((1, -2))
    assert tp.ones(2, 1, 3).squeeze((0, -1)).shape == (2, 1, 3)
    assert tp.ones(2, 1, 3, 1).squeeze((1, -1)).shape == (2, 3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int64", "int32", "uint8",
                                   "bool"])
def test_fast_views_write_through_every_dtype(dtype):
    dt = getattr(tp, dtype)
    x = tp.zeros(3, 4, dtype=dt)
    one = tp.ones((), dtype=dt)
    x.view(-1)[5] = one                     # view + select
    x[1][3] = one                           # select + select
    x.unsqueeze(0).squeeze(0)[2, 0] = one   # unsqueeze + squeeze + tuple index
    x[:, 1::2][0, 1] = one                  # slice on dim 1
    x.reshape(2, 6)[0, 0] = one
    expect = [[1, 0, 0, 1], [0, 1, 0, 1], [1, 0, 0, 0]]
    assert x.to(tp.int64).tolist() == expect
    assert x._version == 5


def test_fast_views_of_a_dtype_view():
    # x.view(dtype) has a storage of its own dtype over the same memory: its fast views write there
    x = tp.zeros(2, 4)
    i = x.view(tp.int32)
    i.view(-1)[1] = 1065353216              # the bits of 1.0 (float32)
    i[1, 2:][0] = 1073741824                # of 2.0
    assert x.tolist() == [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0]]
