"""The view ops against torch itself, as the oracle: shape, strides, storage offset and values of
``view``/``reshape``/``unsqueeze``/``squeeze``/``select``/``slice``/``narrow``/``t``/
``transpose``/``permute``/``expand`` and basic ``x[...]`` on inputs of several layouts
(contiguous, with size-1 dims, transposed, a strided slice, torch-contiguous with a size-1 dim
of another stride, offset, empty, 0-d), or both raise. Companion of tests/test_views_fast44.py
(torch-free), which checks that the fast paths' native arrays are those views."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402


def _layouts(L):
    return {
        "contig": lambda: L.arange(24.0).reshape(2, 3, 4),
        "ones_dims": lambda: L.arange(12.0).reshape(3, 1, 4, 1),
        "transposed": lambda: L.arange(24.0).reshape(2, 3, 4).transpose(0, 2),
        "strided": lambda: L.arange(60.0).reshape(5, 12)[1:4, 2::3],
        "odd_one_stride": lambda: L.arange(8.0).as_strided((4, 1), (1, 7)),
        "odd_ones": lambda: L.arange(40.0).as_strided((2, 1, 3, 1), (3, 11, 1, 5)),
        "offset_contig": lambda: L.arange(30.0)[6:].view(2, 3, 4),
        "empty": lambda: L.zeros(0, 3),
        "empty_mid": lambda: L.zeros(2, 0, 3),
        "scalar": lambda: L.tensor(5.0),
    }


OPS = {
    "view_flat": lambda x: x.view(-1),
    "view_ones": lambda x: x.view(1, *x.shape, 1),
    "view_split": lambda x: x.view(x.shape[0], 1, -1),
    "view_merge_last": lambda x: x.view(*x.shape[:-2], -1),
    "reshape_flat": lambda x: x.reshape(-1),
    "reshape_2": lambda x: x.reshape(2, -1),
    "unsqueeze0": lambda x: x.unsqueeze(0),
    "unsqueeze1": lambda x: x.unsqueeze(1),
    "unsqueeze_last": lambda x: x.unsqueeze(-1),
    "squeeze": lambda x: x.squeeze(),
    "squeeze0": lambda x: x.squeeze(0),
    "squeeze_last": lambda x: x.squeeze(-1),
    "squeeze_multi": lambda x: x.squeeze((0, -1)),
    "index0": lambda x: x[0],
    "index_neg": lambda x: x[-1],
    "index_slice": lambda x: x[1:],
    "index_step": lambda x: x[::2],
    "index_empty": lambda x: x[5:1],
    "index_tuple": lambda x: x[0, 1:],
    "index_full_int": lambda x: x[:, 0],
    "index_none_int_none": lambda x: x[None, 0, None],
    "index_full_full": lambda x: x[:, :],
    "index_none": lambda x: x[None],
    "index_int_full_step": lambda x: x[-1, :, ::2],
    "select_last": lambda x: x.select(-1, 0),
    "select1": lambda x: x.select(1, -1),
    "slice1": lambda x: x[:, 1::2],
    "narrow1": lambda x: x.narrow(1, 1, 1),
    "narrow0": lambda x: x.narrow(0, 0, 0),
    "t": lambda x: x.t(),
    "transpose": lambda x: x.transpose(0, -1),
    "permute": lambda x: x.permute(list(reversed(range(x.ndim)))),
    "expand": lambda x: x.unsqueeze(0).expand(2, *x.shape),
}

CASES = [(o, lay) for o in OPS for lay in _layouts(tp)]


@pytest.mark.parametrize("op,layout", CASES, ids=[f"{o}-{lay}" for o, lay in CASES])
def test_view_matches_torch(op, layout):
    fn = OPS[op]
    xt, xp = _layouts(torch)[layout](), _layouts(tp)[layout]()
    try:
        rt = fn(xt)
    except (RuntimeError, IndexError, ValueError) as e:
        with pytest.raises((RuntimeError, IndexError, ValueError)):
            fn(xp)
        return e
    rp = fn(xp)
    if op == "t" and xt.ndim < 2:       # torch's t() of a 0-d/1-d tensor is an alias of it
        assert tuple(rp.shape) == tuple(rt.shape)
        return
    assert (tuple(rp.shape), tuple(rp.stride()), rp.storage_offset()) == \
        (tuple(rt.shape), tuple(rt.stride()), rt.storage_offset())
    assert rp.tolist() == rt.tolist()
    # aliasing as torch's: a view shares its input's storage, reshape's copy does not
    assert (rp._storage is xp._storage) == \
        (rt.untyped_storage().data_ptr() == xt.untyped_storage().data_ptr())
