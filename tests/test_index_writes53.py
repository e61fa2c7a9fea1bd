"""Index writes that torch 2.13 refuses or treats differently (session 53, a fresh user's
findings), each checked against torch itself:

1. aliased writes: torch's ``assert_no_overlap`` (a full or partial overlap of the written
   tensor with an index or a source tensor) in index_put_/setitem, index_add_, index_copy_,
   index_fill_ (the index), scatter_/scatter_add_/scatter_reduce_, put_; ``masked_fill_``'s
   ``assert_no_partial_overlap`` of the mask (also x[mask] = number, which torch writes with
   masked_fill_);
2. ``x[idx] = v`` through index_put_ needs ``v`` of ``x``'s dtype (a basic index copies, a
   one-element value with one bool mask is masked_fill_: both cast, as torch);
3. sum/mean/prod/max/min/median/nanmedian with ``keepdim`` (or ``dim=None`` where torch has no
   such overload) but no ``dim``: TypeError;
4. error classes: index_select out of range at dim 1 (RuntimeError), index_copy_'s index and
   shape errors (IndexError), a setitem value that does not broadcast (RuntimeError);
5. range errors name the op called (take_along_dim, scatter_reduce).
"""

from __future__ import annotations

import pytest

import tensorplay as tp

OVERLAP = "refer to a single memory location"
DTYPES = "Index put requires the source and destination dtypes match"
# the device the aliasing cases make their tensors on (cpu; test_*_on_device sets another)
_DEV = ["cpu"]


def t(data, **kw):
    return tp.tensor(data, device=_DEV[0], **kw)


def _arange(*a, **kw):
    return tp.arange(*a, device=_DEV[0], **kw)


def _ones(*a, **kw):
    return tp.ones(*a, device=_DEV[0], **kw)


def ar(n, dtype=tp.float32):
    return _arange(n, dtype=dtype)


# -- 1. aliased writes ------------------------------------------------------------------------
def _ia_self():
    x = ar(4)
    x.index_add_(0, t([0, 1, 2, 3]), x)


def _ia_alpha_self():
    x = ar(3)
    x.index_add_(0, t([0, 1, 2]), x, alpha=2)


def _ia_index_alias():
    x = _arange(4)
    x.index_add_(0, x[:2], t([1, 1]))


def _ia_index_is_self():
    x = _arange(4)
    x.index_add_(0, x, _ones(4, dtype=tp.int64))


def _ia_data():
    x = ar(4)
    x.index_add_(0, t([0, 1, 2, 3]), x.data)


def _ia_empty_self():
    x = ar(0)
    x.index_add_(0, t([], dtype=tp.int64), x)


def _set_x_x():
    x = t([0, 1, 2])
    x[x] = x * 10


def _set_idx_view():
    x = ar(4)
    x[t([1, 2])] = x[:2]


def _set_idx_view_disjoint():
    x = ar(4)
    x[t([0, 1])] = x[2:]      # disjoint memory, yet torch refuses it (the same storage)


def _set_idx_same():
    x = ar(3)
    x[t([0, 1, 2])] = x


def _set_mask_view():
    x = ar(3)
    x[x > 0] = x[:2]


def _set_mask_full_value():
    x = ar(3)
    x[t([True, True, True])] = x


def _set_idx_0d_view():
    x = ar(3)
    x[t([1, 2])] = x[0]


def _set_two_idx_alias():
    x = ar(4).reshape(2, 2)
    x[t([0, 1]), t([0, 1])] = x[0]


def _set_number_idx_alias():
    x = _arange(4)
    x[x[:2]] = 9


def _set_int32_idx_alias():
    x = _arange(4, dtype=tp.int32)
    x[x[:2]] = t([7, 7], dtype=tp.int32)


def _set_mask_partial_mask():
    b = t([True, False, True, True])
    b[:3][b[1:]] = False


def _set_mask_partial_mask_0d():
    b = t([True, False, True, True])
    b[:3][b[1:]] = t(False)


def _set_mask_partial_mask_values():
    b = t([True, False, True, True])
    b[:3][b[1:]] = t([False, False])      # two values: index_put_, the mask overlaps b[:3]


def _set_mask_is_self_values():
    x = t([True, False, True])
    x[x] = t([False, False])


def _index_put_self():
    x = ar(3)
    x.index_put_((t([0, 1, 2]),), x)


def _index_put_acc_self():
    x = ar(3)
    x.index_put_((t([0, 1, 2]),), x, accumulate=True)


def _index_put_idx_alias():
    x = _arange(3)
    x.index_put_((x,), t([5, 6, 7]))


def _index_put_acc_idx_alias():
    x = _arange(3)
    x.index_put_((x,), t([5, 6, 7]), accumulate=True)


def _index_copy_self():
    x = ar(3)
    x.index_copy_(0, t([2, 1, 0]), x)


def _index_copy_idx_alias():
    x = _arange(3)
    x.index_copy_(0, x, t([5, 6, 7]))


def _index_fill_idx_alias():
    x = _arange(3)
    x.index_fill_(0, x[:1], 9)


def _scatter_self():
    x = ar(3)
    x.scatter_(0, t([2, 1, 0]), x)


def _scatter_idx_alias():
    x = _arange(3)
    x.scatter_(0, x, t([5, 6, 7]))


def _scatter_value_idx_alias():
    x = _arange(3)
    x.scatter_(0, x, 5)


def _scatter_reduce_kw_self():
    x = ar(3)
    x.scatter_(0, t([0, 1, 2]), x, reduce="add")


def _scatter_add_self():
    x = ar(3)
    x.scatter_add_(0, t([0, 0, 0]), x)


def _scatter_add_idx_alias():
    x = _arange(3)
    x.scatter_add_(0, x, t([1, 1, 1]))


def _scatter_reduce_self():
    x = ar(3)
    x.scatter_reduce_(0, t([0, 0, 0]), x, "sum")


def _scatter_reduce_amax_self():
    x = ar(3)
    x.scatter_reduce_(0, t([0, 0, 0]), x, "amax")


def _scatter_reduce_idx_alias():
    x = _arange(3)
    x.scatter_reduce_(0, x, t([1, 1, 1]), "sum")


def _put_self():
    x = ar(3)
    x.put_(t([2, 1, 0]), x)


def _put_idx_alias():
    x = _arange(3)
    x.put_(x, t([5, 6, 7]))


def _put_acc_self():
    x = ar(3)
    x.put_(t([0, 1, 2]), x, accumulate=True)


def _masked_fill_partial_mask():
    b = t([True, False, True, True])
    b[:3].masked_fill_(b[1:], False)


REFUSED = [_ia_self, _ia_alpha_self, _ia_index_alias, _ia_index_is_self, _ia_data,
           _ia_empty_self, _set_x_x, _set_idx_view, _set_idx_view_disjoint, _set_idx_same,
           _set_mask_view, _set_mask_full_value, _set_idx_0d_view, _set_two_idx_alias,
           _set_number_idx_alias, _set_int32_idx_alias, _set_mask_partial_mask,
           _set_mask_partial_mask_0d, _set_mask_partial_mask_values, _set_mask_is_self_values,
           _index_put_self, _index_put_acc_self,
           _index_put_idx_alias, _index_put_acc_idx_alias, _index_copy_self,
           _index_copy_idx_alias, _index_fill_idx_alias, _scatter_self, _scatter_idx_alias,
           _scatter_value_idx_alias, _scatter_reduce_kw_self, _scatter_add_self,
           _scatter_add_idx_alias, _scatter_reduce_self, _scatter_reduce_amax_self,
           _scatter_reduce_idx_alias, _put_self, _put_idx_alias, _put_acc_self,
           _masked_fill_partial_mask]


@pytest.mark.parametrize("case", REFUSED, ids=lambda f: f.__name__[1:])
def test_aliased_write_refused(case):
    with pytest.raises(RuntimeError, match=OVERLAP):
        case()


def test_refused_write_leaves_self_unchanged():
    x = ar(4)
    with pytest.raises(RuntimeError, match=OVERLAP):
        x[t([1, 2])] = x[:2]
    with pytest.raises(RuntimeError, match=OVERLAP):
        x.index_add_(0, t([0, 1, 2, 3]), x)
    with pytest.raises(RuntimeError, match=OVERLAP):
        x.scatter_add_(0, t([0, 0, 0, 0]), x)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


# what torch accepts: the results torch gives
def _acc_clone():
    x = ar(4)
    x.index_add_(0, t([0, 1, 2, 3]), x.clone())
    return x, [0.0, 2.0, 4.0, 6.0]


def _acc_noncontig_src():
    # a source that is not dense: torch's overlap status "too hard", not refused
    x = ar(8).reshape(2, 4)
    x.index_add_(1, t([0, 1]), x[:, ::2])
    return x, [[0.0, 3.0, 2.0, 3.0], [8.0, 11.0, 6.0, 7.0]]


def _acc_mask_0d_view():
    # one bool mask with a one-element value: masked_fill_ (value read first), no overlap test
    x = ar(3)
    x[x > 0] = x[0]
    return x, [0.0, 0.0, 0.0]


def _acc_mask_1elem_view():
    x = ar(3)
    x[t([True, False, True])] = x[0:1]
    return x, [0.0, 1.0, 0.0]


def _acc_slice_mask_0d_alias():
    x = ar(4).reshape(2, 2)
    x[:, t([True, False])] = x[0, 0]
    return x, [[0.0, 1.0], [0.0, 3.0]]


def _acc_bool_mask_is_self():
    x = t([True, False, True])
    x[x] = False       # the mask is x itself: a full overlap, which masked_fill_ allows
    return x, [False, False, False]


def _acc_masked_fill_mask_is_self():
    x = t([True, False, True])
    x.masked_fill_(x, False)
    return x, [False, False, False]


def _acc_slice_self():
    x = ar(4)
    x[:] = x
    return x, [0.0, 1.0, 2.0, 3.0]


def _acc_other_row():
    x = ar(6).reshape(2, 3)
    x[0, t([0, 1])] = x[1, :2]       # the written view x[0] and x[1, :2] are disjoint
    return x, [[3.0, 4.0, 2.0], [3.0, 4.0, 5.0]]


def _acc_nondense_value():
    x = ar(8)
    x[t([0, 1])] = x[::4]
    return x, [0.0, 4.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]


def _acc_index_fill_0d_value_alias():
    x = ar(3)
    x.index_fill_(0, t([1]), x[0])
    return x, [0.0, 0.0, 2.0]


def _acc_out_of_place():
    x = ar(3)
    r = [x.index_add(0, t([0, 1, 2]), x).tolist(), x.index_put((t([0, 1, 2]),), x).tolist(),
         x.put(t([0, 1, 2]), x).tolist(), x.index_copy(0, t([2, 1, 0]), x).tolist(),
         x.scatter(0, t([2, 1, 0]), x).tolist(), x.scatter_add(0, t([0, 0, 0]), x).tolist()]
    return r, [[0.0, 2.0, 4.0], [0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [2.0, 1.0, 0.0],
               [2.0, 1.0, 0.0], [3.0, 1.0, 2.0]]


ACCEPTED = [_acc_clone, _acc_noncontig_src, _acc_mask_0d_view, _acc_mask_1elem_view,
            _acc_slice_mask_0d_alias, _acc_bool_mask_is_self, _acc_masked_fill_mask_is_self,
            _acc_slice_self, _acc_other_row, _acc_nondense_value,
            _acc_index_fill_0d_value_alias, _acc_out_of_place]


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda f: f.__name__[1:])
def test_write_torch_accepts(case):
    got, want = case()
    assert (got if isinstance(got, list) else got.tolist()) == want


@pytest.fixture(params=["standin53w", pytest.param("cuda", marks=pytest.mark.cuda)])
def other_device(request):
    """The aliasing cases again on a GPU stand-in (the kernels' device branch) and on cuda:
    the overlap rule reads storages and byte ranges, never the device."""
    dev = request.param
    if dev == "cuda":
        ok, why = tp.plugins.device_status("cuda")
        if not ok:
            pytest.skip(f"cuda unavailable: {why}")
        _DEV[0] = dev
        yield dev
    else:
        pytest.importorskip("numpy")
        from tensorplay.testing.backend import MockBackend
        with MockBackend(dev, device_arrays=True):
            _DEV[0] = dev
            yield dev
    _DEV[0] = "cpu"


@pytest.mark.parametrize("case", REFUSED, ids=lambda f: f.__name__[1:])
def test_aliased_write_refused_on_device(other_device, case):
    with pytest.raises(RuntimeError, match=OVERLAP):
        case()


# torch's masked_fill_ shortcut of index_put_ takes a one-element value only when it is on the
# cpu (canDispatchToMaskedFill); a value on the written tensor's own device is checked for
# overlap like any other: these writes are refused there
_CPU_VALUE_ONLY = {_acc_mask_0d_view, _acc_mask_1elem_view, _acc_slice_mask_0d_alias}


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda f: f.__name__[1:])
def test_write_torch_accepts_on_device(other_device, case):
    if case in _CPU_VALUE_ONLY:
        with pytest.raises(RuntimeError, match=OVERLAP):
            case()
        return
    got, want = case()
    assert (got if isinstance(got, list) else got.tolist()) == want


def test_aliased_write_refused_on_fake_tensors():
    from tensorplay.fake import FakeTensorMode
    with FakeTensorMode():
        x = tp.empty(4)
        i = tp.zeros(4, dtype=tp.int64)
        with pytest.raises(RuntimeError, match=OVERLAP):
            x.index_add_(0, i, x)
        with pytest.raises(RuntimeError, match=OVERLAP):
            x[i[:2]] = x[:2]
        x.index_add_(0, i, tp.empty(4))


@pytest.mark.parametrize("dynamic", [False, True])
def test_aliased_write_refused_inside_compile(dynamic):
    def bad(x):
        y = x * 1.0
        y.index_add_(0, tp.arange(y.shape[0]), y)
        return y

    def bad_set(x):
        y = x * 1.0
        y[tp.tensor([1, 2])] = y[:2]
        return y

    def good(x):
        y = x * 1.0
        y.index_add_(0, tp.arange(y.shape[0]), y.clone())
        return y

    cb, cs, cg = (tp.compile(f, dynamic=dynamic) for f in (bad, bad_set, good))
    for n in (4, 5, 7):
        with pytest.raises(RuntimeError, match=OVERLAP):
            cb(tp.arange(float(n)))
        with pytest.raises(RuntimeError, match=OVERLAP):
            cs(tp.arange(float(n)))
        assert cg(tp.arange(float(n))).tolist() == good(tp.arange(float(n))).tolist()


# -- 2. index_put_'s dtype rule in setitem ------------------------------------------------------
def _d_idx_double():
    x = ar(3)
    x[t([0, 1])] = t([1.0, 2.0], dtype=tp.float64)


def _d_idx_int_value():
    x = ar(3)
    x[t([0, 1])] = t([1, 2])


def _d_idx_0d_double():
    x = ar(3)
    x[t([0, 1])] = t(5.0, dtype=tp.float64)


def _d_mask_double():
    x = ar(3)
    x[x > 0] = t([1.0, 2.0], dtype=tp.float64)


def _d_mask_rows_double():
    x = ar(6).reshape(2, 3)
    x[t([True, False])] = t([1.0, 2.0, 3.0], dtype=tp.float64)


def _d_list_double():
    x = ar(3)
    x[[0, 1]] = t([1.0, 2.0], dtype=tp.float64)


def _d_two_idx_double():
    x = ar(4).reshape(2, 2)
    x[t([0, 1]), t([0, 1])] = t([1.0, 2.0], dtype=tp.float64)


def _d_two_masks_0d_double():
    x = ar(4).reshape(2, 2)
    x[t([True, False]), t([True, False])] = t(5.0, dtype=tp.float64)


def _d_slice_then_idx_double():
    x = ar(4).reshape(2, 2)
    x[:, t([0])] = t([[1.0], [2.0]], dtype=tp.float64)


def _d_none_idx_double():
    x = ar(3)
    x[None, t([0])] = t([1.0], dtype=tp.float64)


def _d_idx_bool_value():
    x = ar(3)
    x[t([0])] = t([True])


def _d_idx_half_value():
    x = ar(3)
    x[t([0])] = t([1.0], dtype=tp.float16)


def _d_uint8_mask_double():
    x = ar(3)
    with pytest.warns(UserWarning):
        x[t([1, 0, 1], dtype=tp.uint8)] = t([1.0, 2.0], dtype=tp.float64)


def _d_0d_bool_index_double():
    x = ar(3)
    x[t(True)] = t([1.0, 2.0, 3.0], dtype=tp.float64)


def _d_index_put_double():
    x = ar(3)
    x.index_put_((t([0]),), t([1.0], dtype=tp.float64))


def _d_index_put_acc_double():
    x = ar(3)
    x.index_put_((t([0]),), t([1.0], dtype=tp.float64), accumulate=True)


DTYPE_REFUSED = [_d_idx_double, _d_idx_int_value, _d_idx_0d_double, _d_mask_double,
                 _d_mask_rows_double, _d_list_double, _d_two_idx_double,
                 _d_two_masks_0d_double, _d_slice_then_idx_double, _d_none_idx_double,
                 _d_idx_bool_value, _d_idx_half_value, _d_uint8_mask_double,
                 _d_0d_bool_index_double, _d_index_put_double, _d_index_put_acc_double]


@pytest.mark.parametrize("case", DTYPE_REFUSED, ids=lambda f: f.__name__[3:])
def test_index_put_dtype_mismatch_refused(case):
    with pytest.raises(RuntimeError, match=DTYPES):
        case()


def test_dtype_mismatch_writes_nothing():
    x = ar(3)
    with pytest.raises(RuntimeError, match=DTYPES):
        x[t([0, 1])] = t([7.0, 8.0], dtype=tp.float64)
    assert x.tolist() == [0.0, 1.0, 2.0]


def f64(v):
    return t(v, dtype=tp.float64)


CAST = [
    # basic indices copy (copy_ casts), as torch
    (lambda x: x.__setitem__(slice(0, 2), f64([1.0, 2.0])), [1.0, 2.0, 2.0]),
    (lambda x: x.__setitem__(0, f64(7.0)), [7.0, 1.0, 2.0]),
    (lambda x: x.__setitem__(Ellipsis, f64(7.0)), [7.0, 7.0, 7.0]),
    (lambda x: x.__setitem__(True, f64([1.0, 2.0, 3.0])), [1.0, 2.0, 3.0]),
    (lambda x: x.__setitem__(t(1), f64(9.0)), [0.0, 9.0, 2.0]),
    # one bool mask with a one-element value: masked_fill_ (torch's dispatch), which casts
    (lambda x: x.__setitem__(x > 0, f64(5.0)), [0.0, 5.0, 5.0]),
    (lambda x: x.__setitem__(x > 0, t(5)), [0.0, 5.0, 5.0]),
    (lambda x: x.__setitem__(x > 0, f64([5.0])), [0.0, 5.0, 5.0]),
    (lambda x: x.index_put_((t([True, False, True]),), f64(1.0)), [1.0, 1.0, 1.0]),
    # Python numbers: as before
    (lambda x: x.__setitem__(t([0]), 5), [5.0, 1.0, 2.0]),
    (lambda x: x.__setitem__(t([0, 2]), 2.5), [2.5, 1.0, 2.5]),
]


@pytest.mark.parametrize("k", range(len(CAST)))
def test_dtype_cast_where_torch_casts(k):
    f, want = CAST[k]
    x = ar(3)
    f(x)
    assert x.tolist() == want and x.dtype is tp.float32


def test_mask_rows_0d_value_casts():
    x = ar(6).reshape(2, 3)
    x[t([True, False])] = f64(7.0)
    x[:, t([True, False, False])] = f64(9.0)
    assert x.tolist() == [[9.0, 7.0, 7.0], [9.0, 4.0, 5.0]]


def test_dtype_rule_on_fake_tensors_and_compile():
    from tensorplay.fake import FakeTensorMode
    with FakeTensorMode():
        x = tp.empty(4)
        with pytest.raises(RuntimeError, match=DTYPES):
            x[tp.zeros(2, dtype=tp.int64)] = tp.empty(2, dtype=tp.float64)
        x[tp.zeros(2, dtype=tp.int64)] = tp.empty(2)

    def f(x, v):
        y = x * 1.0
        y[tp.tensor([0, 1])] = v
        return y

    cf = tp.compile(f)
    with pytest.raises(RuntimeError, match=DTYPES):
        cf(ar(4), f64([1.0, 2.0]))
    assert cf(ar(4), t([5.0, 6.0])).tolist() == [5.0, 6.0, 2.0, 3.0]


# -- 3. keepdim (or dim=None) without dim -------------------------------------------------------
REFUSED_REDUCTIONS = [
    ("sum", {"keepdim": True}), ("sum", {"keepdim": False}),
    ("sum", {"keepdim": True, "dtype": tp.float64}),
    ("mean", {"keepdim": True}), ("mean", {"keepdim": False}),
    ("mean", {"keepdim": True, "dtype": tp.float64}),
    ("prod", {"keepdim": True}), ("prod", {"keepdim": False}), ("prod", {"dim": None}),
    ("prod", {"dim": None, "keepdim": True}), ("prod", {"keepdim": True, "dtype": tp.float64}),
    ("max", {"keepdim": True}), ("max", {"keepdim": False}), ("max", {"dim": None}),
    ("max", {"dim": None, "keepdim": True}),
    ("min", {"keepdim": True}), ("min", {"keepdim": False}), ("min", {"dim": None}),
    ("median", {"keepdim": True}), ("median", {"keepdim": False}), ("median", {"dim": None}),
    ("nanmedian", {"keepdim": True}), ("nanmedian", {"dim": None}),
]


@pytest.mark.parametrize("name,kw", REFUSED_REDUCTIONS,
                         ids=[f"{n}-{'-'.join(kw)}" for n, kw in REFUSED_REDUCTIONS])
@pytest.mark.parametrize("form", ["method", "function"])
def test_reduction_keepdim_without_dim_refused(name, kw, form):
    x = ar(6).reshape(2, 3)
    f = getattr(x, name) if form == "method" else (lambda **k: getattr(tp, name)(x, **k))
    with pytest.raises(TypeError, match=name):
        f(**kw)


ACCEPTED_REDUCTIONS = [
    ("sum", (), {}, 15.0), ("sum", (None, True), {}, [[15.0]]),
    ("sum", (), {"dim": None, "keepdim": True}, [[15.0]]),
    ("sum", (), {"dtype": tp.float64}, 15.0), ("sum", (), {"dim": [], "keepdim": True}, [[15.0]]),
    ("mean", (), {"dim": None, "keepdim": True}, [[2.5]]), ("mean", (None, True), {}, [[2.5]]),
    ("prod", (), {}, 0.0), ("prod", (), {"dtype": tp.float64}, 0.0),
    ("max", (), {}, 5.0), ("min", (), {}, 0.0), ("median", (), {}, 2.0),
    ("amax", (), {"keepdim": True}, [[5.0]]), ("amin", (), {"keepdim": True}, [[0.0]]),
    ("nansum", (), {"keepdim": True}, [[15.0]]), ("nanmean", (), {"keepdim": True}, [[2.5]]),
    ("all", (), {"keepdim": True}, [[False]]), ("any", (), {"keepdim": True}, [[True]]),
    ("argmax", (), {"keepdim": True}, [[5]]), ("std", (), {"keepdim": True}, None),
    ("var", (), {"keepdim": True}, [[3.5]]), ("norm", (), {"keepdim": True}, None),
]


@pytest.mark.parametrize("name,args,kw,want", ACCEPTED_REDUCTIONS,
                         ids=[f"{a[0]}-{i}" for i, a in enumerate(ACCEPTED_REDUCTIONS)])
@pytest.mark.parametrize("form", ["method", "function"])
def test_reductions_torch_accepts(name, args, kw, want, form):
    x = ar(6).reshape(2, 3)
    r = getattr(x, name)(*args, **kw) if form == "method" else getattr(tp, name)(x, *args, **kw)
    if want is not None:
        assert r.tolist() == want


def test_reduction_numpy_names_keep_the_rule():
    x = ar(6).reshape(2, 3)
    assert x.sum(axis=0, keepdim=True).tolist() == [[3.0, 5.0, 7.0]]
    assert x.sum(axis=0, keepdims=True).tolist() == [[3.0, 5.0, 7.0]]
    with pytest.raises(TypeError, match="sum"):
        x.sum(keepdims=True)
    with pytest.raises(TypeError, match="max"):
        x.max(keepdims=True)


def test_reduction_keepdim_rule_in_compile():
    def f(x):
        return x.sum(keepdim=True)

    with pytest.raises(TypeError, match="sum"):
        tp.compile(f)(ar(4))


# -- 4. error classes ---------------------------------------------------------------------------
def test_index_select_out_of_range_at_dim1_is_runtime_error():
    # torch's cpu dim-1 path: RuntimeError "INDICES element is out of DATA bounds"
    x = ar(6).reshape(2, 3)
    for idx in (t([5]), t([-1]), t([5], dtype=tp.int32)):
        with pytest.raises(RuntimeError, match="out of") as e:
            x.index_select(1, idx)
        assert not isinstance(e.value, IndexError)
        with pytest.raises(RuntimeError, match="out of") as e:
            tp.index_select(x, 1, idx)
        assert not isinstance(e.value, IndexError)
    with pytest.raises(RuntimeError) as e:
        ar(8).reshape(2, 2, 2).index_select(1, t([5]))
    assert not isinstance(e.value, IndexError)
    # other dims: IndexError, as torch
    with pytest.raises(IndexError):
        x.index_select(0, t([5]))
    with pytest.raises(IndexError):
        ar(8).reshape(2, 2, 2).index_select(2, t([5]))
    with pytest.raises(IndexError):
        ar(3).index_select(0, t([5]))


def test_index_copy_errors_are_index_errors():
    x = ar(4).reshape(2, 2)
    with pytest.raises(IndexError, match="Index should have dimension 1 or 0"):
        x.index_copy_(0, t([[0], [1]]), ar(4).reshape(2, 2))
    with pytest.raises(IndexError, match="Index should have dimension 1 or 0"):
        tp.index_copy(x, 0, t([[0], [1]]), ar(4).reshape(2, 2))
    with pytest.raises(IndexError, match="dimensionality must match"):
        x.index_copy_(0, t([0, 1]), ar(4))
    with pytest.raises(IndexError, match="Number of indices"):
        x.index_copy_(0, t([0]), ar(4).reshape(2, 2))
    with pytest.raises(RuntimeError, match="same slice shapes") as e:
        x.index_copy_(0, t([0, 1]), ar(6).reshape(2, 3))
    assert not isinstance(e.value, IndexError)
    assert x.tolist() == [[0.0, 1.0], [2.0, 3.0]]


SHAPE_MISMATCH = [
    (lambda x: x.__setitem__(t([0, 1]), t([1.0, 2.0])), "shape mismatch"),
    (lambda x: x.__setitem__(t([0]), ar(4).reshape(2, 2)), "shape mismatch"),
    (lambda x: x.index_put_((t([0, 1]),), t([1.0, 2.0])), "shape mismatch"),
    (lambda x: x.__setitem__(x > 2, t([1.0, 2.0])), "shape mismatch"),
]


@pytest.mark.parametrize("k", range(len(SHAPE_MISMATCH)))
def test_setitem_shape_mismatch_is_runtime_error(k):
    f, msg = SHAPE_MISMATCH[k]
    x = ar(6).reshape(2, 3)
    with pytest.raises(RuntimeError, match=msg) as e:
        f(x)
    assert not isinstance(e.value, ValueError)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


# -- 5. the op named is the one called ----------------------------------------------------------
def test_range_errors_name_the_op_called():
    x = ar(6).reshape(2, 3)
    with pytest.raises(RuntimeError, match="take_along_dim") as e:
        x.take_along_dim(t([9]))
    assert "gather" not in str(e.value)
    for reduce in ("sum", "mean", "prod", "amax"):
        with pytest.raises(RuntimeError, match="scatter_reduce") as e:
            ar(3).scatter_reduce(0, t([5]), t([1.0]), reduce)
        assert "scatter_add" not in str(e.value)
        with pytest.raises(RuntimeError, match="scatter_reduce") as e:
            ar(3).scatter_reduce_(0, t([5]), t([1.0]), reduce)
        assert "scatter_add" not in str(e.value)
    with pytest.raises(RuntimeError, match="scatter_add"):
        ar(3).scatter_add(0, t([5]), t([1.0]))


# -- basic indexing writing a tensor onto its own memory (torch's copy_to: copy_ or fill_) ----
# torch expands the value to the destination's shape (a new or size-1 dim gets the stride that
# addresses nothing new), so the same elements in the same order are a full overlap: allowed,
# a no-op. Strides of size-1 dims never address memory; the rule ignores them.
def _b_true():
    x = ar(3)
    x[True] = x
    return x, [0.0, 1.0, 2.0]


def _b_true_0d():
    x = t(2.0)
    x[True] = x
    return x, 2.0


def _b_none():
    x = ar(3)
    x[None] = x
    return x, [0.0, 1.0, 2.0]


def _b_slice_0d_value():
    x = ar(3)
    x[0:1] = x[0]
    return x, [0.0, 1.0, 2.0]


def _b_view_all():
    x = ar(3)
    y = x.view(1, 3)
    y[:] = x
    return x, [0.0, 1.0, 2.0]


def _b_row_none():
    x = ar(6).reshape(2, 3)
    x[0, None] = x[0]
    return x, [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


SAME_MEMORY = [_b_true, _b_true_0d, _b_none, _b_slice_0d_value, _b_view_all, _b_row_none]


@pytest.mark.parametrize("case", SAME_MEMORY, ids=lambda f: f.__name__[3:])
def test_basic_index_write_of_the_same_memory_is_a_no_op(case):
    got, want = case()
    assert got.tolist() == want


def test_basic_index_write_of_shifted_memory_is_still_refused():
    x = ar(4)
    with pytest.raises(RuntimeError, match=OVERLAP):
        x[None, 1:] = x[:3]
    with pytest.raises(RuntimeError, match=OVERLAP):
        x[1:].copy_(x[:3])


def test_expand_gives_new_size1_dims_torchs_strides():
    # torch 2.13's strides for these expands (inferExpandGeometry: a new dim of size 1 takes the
    # next dim's expanded size times its stride; a 0-dim tensor's new dims are all 0)
    x = tp.arange(6.0)
    z = tp.arange(6.0).reshape(2, 3)[:, :1]
    w = tp.arange(6.0).reshape(1, 6)
    cases = [(x.expand(1, 6), (6, 1)), (x.expand(2, 6), (0, 1)), (x.expand(1, 1, 6), (6, 6, 1)),
             (x.expand(2, 1, 6), (0, 6, 1)), (x.expand(1, 2, 6), (0, 0, 1)),
             (tp.tensor(2.0).expand(1), (0,)), (tp.tensor(2.0).expand(1, 1), (0, 0)),
             (z.expand(1, 2, 4), (6, 3, 0)), (z.expand(1, 1, 2, 4), (6, 6, 3, 0)),
             (w.expand(1, 3, 6), (0, 0, 1)), (w.expand(1, 1, 6), (6, 6, 1))]
    for t_, want in cases:
        assert t_.stride() == want, (t_.shape, t_.stride(), want)
    assert x.expand(1, 6).is_contiguous() and x.expand(1, 6).tolist() == [x.tolist()]
