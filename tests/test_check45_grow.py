"""opcheck's compile check on a second input shape grows the sample *consistently*.

``test_aot_dispatch_dynamic`` re-runs the op on a second shape. It used to grow the leading
dimension of every tensor whose leading size equalled the first tensor's, and nothing else: a
size the op requires to match elsewhere (``(m, k) @ (k, n)`` with ``m == k``, a weight of ``x``'s
last size when that equals the leading one) was grown in one argument and not in the other, and
offsets of ``B + 1`` entries were left alone while ``B`` grew, so the op was called with
inconsistent inputs: its kernel raised and the check failed blaming the op, or a Triton kernel
read out of bounds on cpu (garbage, or a pass by chance). Now one size grows everywhere it
appears, sizes tied to integer tensors or int arguments are not grown, and when no size can
grow (or the kernel rejects the grown sample) the second-shape run is reported as a *skip* with
the reason, never as a pass.

Each op records the shapes its kernel was called with, so the tests see what was run.
"""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay import Tensor, library
from tensorplay.testing.opcheck import run_checks

AOT = "test_aot_dispatch_dynamic"
SEEN: dict = {}


def _record(name, *tensors):
    SEEN.setdefault(name, []).append(tuple(tuple(t.shape) for t in tensors))


def aot(op, args, kwargs=None):
    SEEN.pop(op.name, None)
    r = run_checks(op, args, kwargs, test_utils=AOT)[AOT]
    return r.status, r.message, SEEN.get(op.name, [])


# -- (m, k) @ (k, n) with m == k -----------------------------------------------------------------

@library.custom_op("g45::mm", mutates_args=())
def mm(x: Tensor, w: Tensor) -> Tensor:
    _record("g45::mm", x, w)
    if x.shape[1] != w.shape[0]:
        raise ValueError(f"g45::mm: inner sizes differ: {tuple(x.shape)} @ {tuple(w.shape)}")
    return x @ w


@mm.register_fake
def _(x, w):
    return x.new_empty((x.shape[0], w.shape[1]))


def test_matmul_with_equal_outer_and_inner_size_grows_both():
    # failed on main: x grew to (5, 4), w to (5, 3): "the eager call on a second input shape
    # raised ValueError: inner sizes differ" -- the op blamed for the check's own inputs
    status, msg, seen = aot(mm, (tp.randn(4, 4), tp.randn(4, 3)))
    assert (status, msg) == ("pass", ""), msg
    assert ((5, 5), (5, 3)) in seen, seen
    assert all(x[1] == w[0] for x, w in seen), seen


def test_matmul_grows_the_leading_size_only_where_it_appears():
    status, msg, seen = aot(mm, (tp.randn(4, 6), tp.randn(6, 3)))
    assert (status, msg) == ("pass", ""), msg
    assert ((5, 6), (6, 3)) in seen, seen


# -- a weight of x's last size --------------------------------------------------------------------

@library.custom_op("g45::scale_cols", mutates_args=())
def scale_cols(x: Tensor, w: Tensor) -> Tensor:
    _record("g45::scale_cols", x, w)
    if w.shape[0] != x.shape[-1]:
        raise ValueError("g45::scale_cols: w must have x's last size")
    return x * w


@scale_cols.register_fake
def _(x, w):
    return tp.empty_like(x)


def test_weight_of_the_last_size_equal_to_the_leading_one_grows_with_it():
    # failed on main: x (5, 4) with w (5,)
    status, msg, seen = aot(scale_cols, (tp.randn(4, 4, requires_grad=True),
                                         tp.randn(4, requires_grad=True)))
    assert (status, msg) == ("pass", ""), msg
    assert ((5, 5), (5,)) in seen, seen


# -- an index tensor into another argument --------------------------------------------------------

@library.custom_op("g45::rows", mutates_args=())
def rows(idx: Tensor, table: Tensor) -> Tensor:
    _record("g45::rows", idx, table)
    return table[idx]


@rows.register_fake
def _(idx, table):
    return table.new_empty((idx.shape[0], table.shape[1]))


def test_an_index_tensor_grows_with_copied_indices_its_table_is_left():
    idx = tp.tensor([4, 0, 2])
    status, msg, seen = aot(rows, (idx, tp.randn(5, 8)))
    assert (status, msg) == ("pass", ""), msg
    assert ((4,), (5, 8)) in seen, seen          # [4, 0, 2, 2]: still rows of the table


def test_sorted_indices_grow_too():
    idx = tp.tensor([0, 1, 3])
    status, msg, seen = aot(rows, (idx, tp.randn(5, 8)))
    assert (status, msg) == ("pass", ""), msg
    assert ((4,), (5, 8)) in seen, seen


@library.custom_op("g45::gather1", mutates_args=())
def gather1(x: Tensor, index: Tensor) -> Tensor:
    _record("g45::gather1", x, index)
    return tp.gather(x, 1, index)


@gather1.register_fake
def _(x, index):
    return x.new_empty(tuple(index.shape))


def test_a_2d_index_tensor_grows_with_the_data_it_indexes():
    x, index = tp.randn(3, 4), tp.tensor([[0, 3, 1], [2, 2, 0], [1, 0, 3]])
    status, msg, seen = aot(gather1, (x, index))
    assert (status, msg) == ("pass", ""), msg
    assert ((4, 4), (4, 4)) in seen, seen


# -- offsets of B + 1 entries into jagged values (B per-row weights first) ---------------------

@library.custom_op("g45::segment_scale", mutates_args=())
def segment_scale(w: Tensor, values: Tensor, offsets: Tensor) -> Tensor:
    _record("g45::segment_scale", w, values, offsets)
    b = w.shape[0]
    if offsets.shape[0] != b + 1 or values.shape[1] != w.shape[1]:
        raise ValueError("g45::segment_scale: offsets must have B + 1 entries, values w's width")
    o = offsets.tolist()
    if o[-1] > values.shape[0]:
        raise ValueError("g45::segment_scale: offsets past the values")
    out = [values[o[i]:o[i + 1]].sum(0) for i in range(b)]
    return tp.stack(out) * w


@segment_scale.register_fake
def _(w, values, offsets):
    return tp.empty_like(w)


def test_offsets_are_never_left_behind_the_size_they_index():
    # failed on main: w grew to (4, 8) while offsets kept 4 entries (B + 1 for B = 3)
    w, values = tp.randn(3, 8), tp.randn(7, 8)
    offsets = tp.tensor([0, 2, 5, 7])
    status, msg, seen = aot(segment_scale, (w, values, offsets))
    assert (status, msg) == ("pass", ""), msg
    assert all(o[0] == ws[0] + 1 for ws, _, o in seen), seen
    assert ((3, 9), (7, 9), (4,)) in seen, seen          # the width grew, in both tensors


def test_offsets_ending_at_the_grown_size_leave_the_new_row_unreferenced():
    # 3 rows (offsets 3 + 1) and 4 columns (offsets 4 entries, w 3 = 4 - 1 rows) are tied;
    # the 7 values rows are not: offsets ending at 7 just do not reach the 8th
    w, values = tp.randn(3, 4), tp.randn(7, 4)
    offsets = tp.tensor([0, 2, 5, 7])
    status, msg, seen = aot(segment_scale, (w, values, offsets))
    assert (status, msg) == ("pass", ""), msg
    assert ((3, 4), (8, 4), (4,)) in seen, seen


def test_every_size_tied_is_a_skip_with_the_reason():
    w, values = tp.randn(3, 4), tp.randn(4, 4)
    offsets = tp.tensor([0, 1, 3, 4])
    status, msg, seen = aot(segment_scale, (w, values, offsets))
    assert status == "skip", (status, msg)
    assert "agree on the sample" in msg and "second input shape was not run" in msg
    assert "'offsets'" in msg, msg
    assert all(s == ((3, 4), (4, 4), (4,)) for s in seen), seen      # only the sample ran


@library.custom_op("g45::segment_scale_len", mutates_args=())
def segment_scale_len(w: Tensor, values: Tensor, lengths: Tensor) -> Tensor:
    _record("g45::segment_scale_len", w, values, lengths)
    if lengths.shape[0] != w.shape[0] or values.shape[1] != w.shape[1]:
        raise ValueError("g45::segment_scale_len: one length per row of w, values w's width")
    ln = lengths.tolist()
    if sum(ln) > values.shape[0]:
        raise ValueError("g45::segment_scale_len: lengths past the values")
    starts = [sum(ln[:i]) for i in range(len(ln))]
    return tp.stack([values[a:a + n].sum(0) for a, n in zip(starts, ln)]) * w


@segment_scale_len.register_fake
def _(w, values, lengths):
    return tp.empty_like(w)


def test_lengths_are_never_grown_past_the_values():
    # failed on main: w grew to (4, 8), lengths kept 3 entries
    w, values = tp.randn(3, 8), tp.randn(7, 8)
    lengths = tp.tensor([2, 3, 2])
    status, msg, seen = aot(segment_scale_len, (w, values, lengths))
    assert (status, msg) == ("pass", ""), msg
    assert all(ln[0] == ws[0] for ws, _, ln in seen), seen
    assert ((3, 9), (7, 9), (3,)) in seen, seen


# -- an int argument giving a size ------------------------------------------------------------------

@library.custom_op("g45::head", mutates_args=())
def head(x: Tensor, n: int) -> Tensor:
    _record("g45::head", x)
    if n > x.shape[0]:
        raise ValueError("g45::head: n > rows")
    return x.narrow(0, 0, n) * 2


@head.register_fake
def _(x, n):
    return x.new_empty((n, x.shape[1]))


def test_a_size_given_as_an_int_is_not_grown_another_size_is():
    status, msg, seen = aot(head, (tp.randn(4, 6), 4))
    assert (status, msg) == ("pass", ""), msg
    assert seen and all(s[0][0] == 4 for s in seen), seen
    assert ((4, 7),) in seen, seen


@library.custom_op("g45::flat", mutates_args=())
def flat(x: Tensor, n: int) -> Tensor:
    _record("g45::flat", x)
    SEEN.setdefault("g45::flat n", []).append(n)
    return x.reshape(n) * 1


@flat.register_fake
def _(x, n):
    return x.new_empty((n,))


def test_an_element_count_given_as_an_int_grows_with_the_size():
    # every size of x is tied to n (its element count): n grows with it, 6 -> 8 for (4, 2)
    SEEN.pop("g45::flat n", None)
    status, msg, seen = aot(flat, (tp.randn(3, 2), 6))
    assert (status, msg) == ("pass", ""), msg
    assert ((4, 2),) in seen and 8 in SEEN["g45::flat n"], (seen, SEEN["g45::flat n"])


@library.custom_op("g45::as_rows", mutates_args=())
def as_rows(x: Tensor, rows: int) -> Tensor:
    _record("g45::as_rows", x)
    return x.reshape(rows, -1) + 0


@as_rows.register_fake
def _(x, rows):
    return x.new_empty((rows, x.shape[0] // rows))


def test_kernel_rejecting_the_grown_sample_is_a_skip_not_a_failure():
    # failed on main: "the eager call on a second input shape raised" (8 -> 9 elements cannot be
    # 4 rows); the op is right, the invented shape is not one it accepts
    status, msg, seen = aot(as_rows, (tp.randn(8), 4))
    assert status == "skip", (status, msg)
    assert "rejects the sample with size 8 grown to 9" in msg, msg
    assert ((9,),) in seen


def test_skip_is_not_a_failure_for_opcheck_and_shows_in_run_checks():
    assert library.opcheck(as_rows, (tp.randn(8), 4), test_utils=AOT) == {}
    r = run_checks(as_rows, (tp.randn(8), 4))
    assert r[AOT].status == "skip"


# -- what stays a failure ---------------------------------------------------------------------------

@library.custom_op("g45::fixed", mutates_args=())
def fixed(x: Tensor, w: Tensor) -> Tensor:
    return x @ w


@fixed.register_fake
def _(x, w):
    return x.new_empty((4, 3))        # right for the sample only


def test_a_fake_right_for_the_sample_only_still_fails_on_the_consistent_second_shape():
    status, msg, _ = aot(fixed, (tp.randn(4, 4), tp.randn(4, 3)))
    assert status == "fail", (status, msg)
    assert "second input shape" in msg and "g45::fixed" in msg


def test_a_sample_without_a_size_to_grow_passes_with_a_note():
    status, msg, _ = aot(scale_cols, (tp.randn(1, 1), tp.randn(1)))
    assert status == "pass" and "no second input shape" in msg, (status, msg)


@pytest.mark.parametrize("make", [
    lambda: tp.randn(4, 6)[:, :4],                  # column slice: both dims of size 4 grow
    lambda: tp.randn(4, 4).t(),                     # transposed
    lambda: tp.randn(1, 4).expand(4, 4),            # expanded (stride 0 kept)
], ids=["column-slice", "transposed", "expanded"])
def test_growing_several_dims_keeps_the_layout_kind(make):
    x = make()
    status, msg, seen = aot(scale_cols, (x, tp.randn(4)))
    assert (status, msg) == ("pass", ""), msg
    assert ((5, 5), (5,)) in seen
