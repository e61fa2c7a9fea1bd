"""``topk``: the ``k`` largest (or smallest) values along a dim and their indices (torch
semantics: NaN counts as the largest value; results come sorted; ``sorted=False`` may return
them sorted too, which torch allows). The array kernel is ``topk`` in ``_kernels/xp.py``."""

from __future__ import annotations

from .. import _dtype
from ._define import defop, ops as O
from ._shapes import out_like, wrap_dim
from .reduction import _select_back
from .._dispatch import NoGradBlock, grad_state


def topk_size(shape, k, dim, api="topk(): "):
    """The output shape of ``topk`` (``shape`` with ``dim`` of size ``k``); ``RuntimeError``
    when ``k`` is not in ``[0, size of dim]`` (torch's message)."""
    nd = len(shape)
    d = wrap_dim(dim, nd, api)
    n = shape[d] if nd else 1
    if not isinstance(k, int) or k < 0 or k > n:
        raise RuntimeError(f"{api}selected index k out of range (k={k}, size of dim {dim} is "
                           f"{n})")
    return tuple(shape[:d]) + (k,) + tuple(shape[d + 1:]) if nd else ()


def _topk_meta(x, k, dim=-1, largest=True, sorted=True):   # noqa: A002 - torch's name
    shape = topk_size(tuple(x.shape), k, dim)
    return out_like(shape, x.dtype, x), out_like(shape, _dtype.int64, x)


def _topk_setup(ctx, inputs, output):
    ctx.shape = inputs[0].shape
    ctx.dim = inputs[2] if len(inputs) > 2 else -1
    ctx.save_for_backward(output[1])


def _topk_bw(ctx, g, _gi=None):
    # the gradient goes back to the selected positions, zeros elsewhere (as torch)
    idx, = ctx.saved_tensors
    return _select_back(g, ctx.shape, ctx.dim, idx, True), None, None, None, None


defop("topk(Tensor self, SymInt k, SymInt dim=-1, bool largest=True, bool sorted=True) -> "
      "(Tensor values, Tensor indices)", meta=_topk_meta, setup=_topk_setup, backward=_topk_bw)


# -- median, kthvalue, mode (session 44): composites of a stable sort, so they run on every device;
# the values are a gather of the input at the indices (autograd: torch's
# value_selecting_reduction_backward, the gradient put back at the index) --------------------
def _check_tensor(api, x):
    from .._tensor_base import TensorBase
    if not isinstance(x, TensorBase):
        raise TypeError(f"{api}(): argument 'input' must be Tensor, not {type(x).__name__}")


def _along(api, x, dim):
    """``x`` with at least one dim, the wrapped dim, its size; IndexError for an empty dim
    (torch's message)."""
    nd = x.ndim
    d = wrap_dim(dim, max(nd, 1), f"{api}(): ")
    xs = O.unsqueeze(x, 0) if not nd else x
    n = xs.shape[d]
    return xs, d, n


def _take(x, xs, d, idx, keepdim):
    """``(values, indices)`` at ``idx`` (kept dim of size 1) along ``d``, shaped as torch's."""
    values = O.gather(xs, d, idx)
    if not x.ndim:
        return O.squeeze(values, [0]), O.squeeze(idx, [0])
    if not keepdim:
        return O.squeeze(values, [d]), O.squeeze(idx, [d])
    return values, idx


def _no_bool(api, x):
    if x.dtype is _dtype.bool:
        raise NotImplementedError(f'"{api}" not implemented for \'Bool\' (as torch); cast to an '
                                  f"integer dtype first, e.g. x.long()")


def kthvalue(x, k, dim=-1, keepdim=False):
    """The ``k``-th smallest element along ``dim`` and its index, as ``torch.kthvalue`` (NaN
    counts as the largest value). Among equal values (the ``k``-th value occurring more than
    once in a slice) the index on cpu is the one torch's cpu kernel returns (same as
    ``torch.kthvalue``: its quickselect, ``_torch_kth_index``, replayed on that slice's values;
    slices without such ties pay nothing more); on other devices, the ``k``-th of a stable sort
    (torch's cuda kernel specifies none either). ``RuntimeError`` when ``k`` is not in
    ``[1, size]``."""
    _check_tensor("kthvalue", x)
    _no_bool("kthvalue", x)
    xs, d, n = _along("kthvalue", x, dim)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    with NoGradBlock():
        sv, si = O.sort(xs, d, False, stable=True)
        idx = O.narrow(si, d, k - 1, 1)
        if n > 1 and xs.device.type == "cpu" and xs.native is not None:
            idx = _cpu_tie_indices(xs, d, n, k, sv, idx)
    return _take(x, xs, d, idx, keepdim)


def _cpu_tie_indices(xs, d, n, k, sv, idx):
    """``idx`` (the stable sort's ``k``-th index, kept dim ``d``) with torch's cpu choice in the
    slices whose ``k``-th value occurs more than once (a sorted neighbour in ``sv`` equal to it;
    NaN ties NaN): ``_torch_kth_index`` on those slices' values (read to the host; the others
    keep ``idx``, which is then the only index). The neighbours are read to the host, at most
    three values a slice: no pass over the input."""
    lo, hi = max(k - 2, 0), min(k + 1, n)
    near = O.narrow(sv, d, lo, hi - lo).movedim(d, -1).reshape(-1, hi - lo).tolist()
    at = k - 1 - lo
    tied = [any(u == w[at] or (u != u and w[at] != w[at]) for j, u in enumerate(w) if j != at)
            for w in near]
    if not any(tied):
        return idx
    rows = xs.movedim(d, -1).reshape(-1, n)
    flat = idx.movedim(d, -1).reshape(-1).tolist()
    for r, t in enumerate(tied):
        if t:
            flat[r] = _torch_kth_index(rows[r].tolist(), k - 1)
    moved = idx.movedim(d, -1)
    return idx.new_tensor(flat).reshape(moved.shape).movedim(-1, d)


def _torch_kth_index(a, k0):
    """The index that torch's cpu ``kthvalue`` kernel (``quick_select_template`` of
    ATen/native/SortingUtils.h: median-of-three pivot, NaN greater than every number) leaves at
    position ``k0`` of the list ``a``: torch's answer among equal values, replayed step by step."""
    ix = list(range(len(a)))

    def gt(x, y):
        return (x != x and y == y) or x > y

    def sw(i, j):
        a[i], a[j] = a[j], a[i]
        ix[i], ix[j] = ix[j], ix[i]

    lo, hi = 0, len(a) - 1
    while True:
        if hi <= lo:
            return ix[k0]
        if hi == lo + 1:
            if gt(a[lo], a[hi]):
                sw(lo, hi)
            return ix[k0]
        sw(lo + (hi - lo) // 2, lo + 1)
        if gt(a[lo + 1], a[hi]):
            sw(lo + 1, hi)
        if gt(a[lo], a[hi]):
            sw(lo, hi)
        if gt(a[lo + 1], a[lo]):
            sw(lo + 1, lo)
        i, j, piv = lo + 1, hi, a[lo]
        while True:
            i += 1
            while gt(piv, a[i]):
                i += 1
            j -= 1
            while gt(a[j], piv):
                j -= 1
            if j < i:
                break
            sw(i, j)
        sw(lo, j)
        if j <= k0:
            lo = i
        if j >= k0:
            hi = j - 1


def median_dim(x, dim, keepdim=False, nan_ignored=False):
    """``torch.median(input, dim)`` (``nanmedian`` with ``nan_ignored``): the lower median along
    ``dim`` and its index; a slice holding NaN gives NaN and its first NaN's index (median), or
    the lower median of its other values (nanmedian: NaN only when all are NaN). IndexError for
    an empty dim."""
    api = "nanmedian" if nan_ignored else "median"
    _check_tensor(api, x)
    _no_bool(api, x)
    xs, d, n = _along(api, x, dim)
    if n == 0:
        raise IndexError(f"{api}(): Expected reduction dim {wrap_dim(dim, max(x.ndim, 1))} to "
                         f"have non-zero size.")
    with NoGradBlock():
        si = O.sort(xs, d, False, stable=True)[1]
        if not xs.dtype.is_floating_point:
            idx = O.narrow(si, d, (n - 1) // 2, 1)
        elif nan_ignored:
            # the lower median of the non-NaN values: position (count - 1) // 2 of the sort
            cnt = O.sum(O.logical_not(O.isnan(xs)), [d], True)
            pos = O.floor_divide(O.sub(O.maximum(cnt, 1), 1), 2)
            idx = O.gather(si, d, pos)
        else:
            nan = O.isnan(xs)
            first_nan = O.argmax(O.to_dtype(nan, _dtype.uint8), d, True)
            idx = O.where(O.any(nan, [d], True), first_nan, O.narrow(si, d, (n - 1) // 2, 1))
    return _take(x, xs, d, idx, keepdim)


def median_all(x, nan_ignored=False):
    """``torch.median(input)``: the lower median of every element (NaN if any is NaN; 0-dim);
    the gradient is split evenly among the elements equal to it (torch's
    evenly_distribute_backward). ``RuntimeError`` for bool (torch's)."""
    api = "nanmedian" if nan_ignored else "median"
    _check_tensor(api, x)
    _no_bool(api, x)
    flat = O.reshape(x, [-1])
    if flat.shape[0] == 0:
        return O.full([], float("nan"), dtype=x.dtype, device=x.device)
    v = median_dim(flat, 0, False, nan_ignored)[0]
    if not x.dtype.is_floating_point or not (x.requires_grad and grad_state.enabled):
        return v
    with NoGradBlock():
        nan = bool(O.isnan(v))
        same = O.isnan(flat) if nan else O.eq(flat, v)
    if nan:   # NaN either way; the gradient split evenly among the NaN elements
        return O.div(O.sum(O.where(same, flat, 0.0), [], False),
                     float(int(O.sum(same, [], False))))
    # amax over the equal elements is exactly v; its gradient is split evenly among them
    return O.amax(O.where(same, flat, float("-inf")), [], False)


def mode(x, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest among equally frequent ones) and an
    index of it, exactly as ``torch.mode`` on the CPU: torch sorts each row's (value, index)
    pairs with ``std::sort`` comparing values by ``<`` and takes the last pair of the first
    longest run of equal values. Up to 16 elements that sort is an insertion sort (stable: the
    index of the value's last occurrence, and NaN, which compares false, stays where it is);
    beyond, an introsort (unstable: another occurrence's index may come). Rows of more than 16
    elements, or holding NaN, are therefore resolved by running libstdc++'s algorithm on the
    row's values (``_std_sort``, on the host); the others by a stable sort on the device.
    IndexError for an empty dim."""
    _check_tensor("mode", x)
    xs, d, n = _along("mode", x, dim)
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {wrap_dim(dim, max(x.ndim, 1))} to "
                         f"have non-zero size.")
    with NoGradBlock():
        host = xs.native is not None and (n > 16 or (xs.dtype.is_floating_point and bool(
            O.any(O.isnan(xs), None, False))))
        idx = _mode_index_std(xs, d, n) if host else None
    if idx is not None:
        return _take(x, xs, d, idx, keepdim)
    with NoGradBlock():
        sv, si = O.sort(xs, d, False, stable=True)
        # run starts of the sorted values; run r's length counted into slot r
        if n > 1:
            diff = O.ne(O.narrow(sv, d, 1, n - 1), O.narrow(sv, d, 0, n - 1))
            first = O.full(list(O.narrow(sv, d, 0, 1).shape), True, dtype=_dtype.bool,
                           device=x.device)
            start = O.cat([first, diff], d)
        else:
            start = O.full(list(sv.shape), True, dtype=_dtype.bool, device=x.device)
        run = O.sub(O.cumsum(O.to_dtype(start, _dtype.int64), d), 1)
        counts = O.scatter_add(O.full(list(sv.shape), 0, dtype=_dtype.int64, device=x.device),
                               d, run, O.full(list(sv.shape), 1, dtype=_dtype.int64,
                                              device=x.device))
        best = O.argmax(counts, d, True)           # the first (smallest) most frequent run
        end = O.sub(O.gather(O.cumsum(counts, d), d, best), 1)   # its last sorted position
        idx = O.gather(si, d, end)
    return _take(x, xs, d, idx, keepdim)


def _mode_index_std(xs, d, n):
    """``torch.mode``'s CPU indices along ``d`` (kept, size 1), from libstdc++'s ``std::sort``
    of each row's (value, index) pairs by value (``_std_sort``) and torch's run scan."""
    nd = xs.ndim
    perm = [i for i in range(nd) if i != d] + [d]
    rows = O.reshape(O.permute(xs, perm), [-1, n]).tolist()
    lt = _first_lt
    idx = []
    for row in rows:
        el = _std_sort([(v, i) for i, v in enumerate(row)], lt)
        best = (0, 0)
        run = 0
        for i in range(n):
            run += 1
            if i == n - 1 or el[i][0] != el[i + 1][0]:
                if run > best[0]:
                    best = (run, el[i][1])
                run = 0
        idx.append(best[1])
    kept = [xs.shape[i] for i in perm[:-1]] + [1]
    t = O.reshape(xs.new_tensor(idx, dtype=_dtype.int64), kept)
    inv = [perm.index(i) for i in range(nd)]
    return O.permute(t, inv)


def _first_lt(p, q):
    return p[0] < q[0]


# -- libstdc++'s std::sort (introsort), as torch's CPU mode runs it --------------------------------
# Reproduced step by step so that a comparison that is no strict weak order (NaN under <) and the
# unstable partitioning leave the pairs where libstdc++ leaves them.
def _std_sort(a, lt):
    n = len(a)
    if n > 1:
        _introsort(a, 0, n, 2 * (n.bit_length() - 1), lt)
        if n > 16:
            _insertion(a, 0, 16, lt)
            for i in range(16, n):
                _linear_insert(a, i, lt)
        else:
            _insertion(a, 0, n, lt)
    return a


def _introsort(a, first, last, depth, lt):
    while last - first > 16:
        if depth == 0:
            _heapsort(a, first, last, lt)
            return
        depth -= 1
        mid = first + (last - first) // 2
        _median_to_first(a, first, first + 1, mid, last - 1, lt)
        cut = _unguarded_partition(a, first + 1, last, first, lt)
        _introsort(a, cut, last, depth, lt)
        last = cut


def _median_to_first(a, r, x, y, z, lt):
    if lt(a[x], a[y]):
        m = y if lt(a[y], a[z]) else z if lt(a[x], a[z]) else x
    elif lt(a[x], a[z]):
        m = x
    elif lt(a[y], a[z]):
        m = z
    else:
        m = y
    a[r], a[m] = a[m], a[r]


def _unguarded_partition(a, first, last, pivot, lt):
    n = len(a)
    while True:
        while first < n and lt(a[first], a[pivot]):
            first += 1
        last -= 1
        while last > 0 and lt(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _insertion(a, first, last, lt):
    for i in range(first + 1, last):
        v = a[i]
        if lt(v, a[first]):
            a[first + 1:i + 1] = a[first:i]
            a[first] = v
        else:
            _linear_insert(a, i, lt)


def _linear_insert(a, last, lt):
    v = a[last]
    nxt = last - 1
    while nxt >= 0 and lt(v, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = v


def _heapsort(a, first, last, lt):
    # std::__partial_sort(first, last, last): make_heap, then sort_heap
    n = last - first
    for parent in range((n - 2) // 2, -1, -1):
        _adjust_heap(a, first, parent, n, a[first + parent], lt)
    while n > 1:
        n -= 1
        v = a[first + n]
        a[first + n] = a[first]
        _adjust_heap(a, first, 0, n, v, lt)


def _adjust_heap(a, first, hole, length, value, lt):
    top = child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if lt(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and lt(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


# -- searchsorted (session 46): the array namespace's binary search (NumPy's, CuPy's) for a 1-D
# sequence, a branchless one over every row for a batch of rows; O(m log n) --------------------
def searchsorted_check(seq, x, sorter):
    """torch's checks of ``searchsorted``'s shapes and dtypes (its messages), without values."""
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if seq.ndim > 1 and tuple(seq.shape[:-1]) != tuple(x.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           f"first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {list(seq.shape)} and "
                           f"input value tensor {list(x.shape)}")
    if seq.dtype is not x.dtype:
        raise RuntimeError(f"torch.searchsorted(): boundaries and input value tensors must have "
                           f"one dtype, got {seq.dtype} and {x.dtype} (tensorplay.searchsorted "
                           f"promotes them)")
    if sorter is not None:
        if sorter.dtype is not _dtype.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {_dtype.scalar_type_name(sorter.dtype)}")
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)}and got sorter "
                               f"tensor {list(sorter.shape)}")


def _searchsorted_meta(seq, x, *, out_int32=False, right=False, sorter=None):
    searchsorted_check(seq, x, sorter)
    return out_like(tuple(x.shape), _dtype.int32 if out_int32 else _dtype.int64, x)


defop("searchsorted(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, "
      "bool right=False, Tensor? sorter=None) -> Tensor", meta=_searchsorted_meta,
      differentiable=False)
