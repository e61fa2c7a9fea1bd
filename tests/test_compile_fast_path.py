"""``CompiledFunction.__call__``'s per-call path: a call with positional plain tensors is looked
up by an exact key of every tensor's metadata (remembered per compiled function, the last one
kept hot), every other call by the full lookup. These tests check that the cheap path is never
looser than the full guard: a call that differs in anything a graph may have baked in (dtype,
strides, contiguity, sizes read as values, requires_grad, grad mode, the type of a constant
argument, Python values read, redefined ops) does not reuse the wrong graph, also when it
alternates with a call that hits."""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay.library import custom_op

pytestmark = pytest.mark.usefixtures("cpu")

SCALE = 2.0


def _eq(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and bool(tp.equal(a, b))


def test_same_shape_other_dtype_alternating_never_reuses_the_other_graph():
    @tp.compile
    def f(x):
        # the dtype is baked into the graph (a factory given x.dtype)
        return x * 2, tp.zeros(2, dtype=x.dtype)

    a, b = tp.randn(4), tp.randn(4, dtype=tp.float64)
    for _ in range(3):
        ra, rb = f(a), f(b)
        assert ra[1].dtype == tp.float32 and ra[0].dtype == tp.float32
        assert rb[1].dtype == tp.float64 and rb[0].dtype == tp.float64
    assert f.captures == 2


def test_same_shape_other_device_alternating_never_reuses_the_other_graph():
    @tp.compile
    def f(x):
        return x * 2.0, tp.zeros(2, device=x.device)     # the device is baked in

    a, m = tp.randn(3), tp.empty(3, device="meta")
    for _ in range(2):
        assert [t.device.type for t in f(a)] == ["cpu", "cpu"]
        assert [t.device.type for t in f(m)] == ["meta", "meta"]


def test_same_shape_other_strides_alternating_takes_its_own_graph():
    @tp.compile
    def f(x):
        return x * 1.0, x.is_contiguous(), x.stride()

    a = tp.randn(3, 3)
    for _ in range(3):
        assert f(a)[1:] == (True, (3, 1))
        assert f(a.t())[1:] == (False, (1, 3))


def test_returned_strides_are_guarded_even_where_contiguity_agrees():
    # (3, 1) with strides (1, 1) and (1, 3): both contiguous (a size-1 dimension's stride is
    # free), same dtype and size classes; returning x.stride() makes the graph exact
    @tp.compile
    def f(x):
        return x + 1.0, x.stride()

    b = tp.randn(3, 1)
    c = tp.randn(1, 3).t()
    assert b.is_contiguous() and c.is_contiguous() and b.stride() != c.stride()
    for _ in range(3):
        assert f(b)[1] == b.stride()
        assert f(c)[1] == c.stride()


def test_returned_shape_is_guarded_on_exact_sizes():
    @tp.compile
    def f(x):
        return x * 1.0, x.shape

    for n in (3, 4, 3, 4, 5):
        out, shape = f(tp.randn(n))
        assert shape == (n,) and out.shape == (n,)


def test_other_sizes_alternating_reuse_one_dynamic_graph_with_correct_results():
    @tp.compile
    def f(x):
        return (x * 2.0 + 1.0).relu()

    xs = [tp.randn(n) for n in (5, 7, 5, 9, 7)]
    for _ in range(2):
        for x in xs:
            assert _eq(f(x), (x * 2.0 + 1.0).relu())
    assert f.captures == 1


def test_requires_grad_flipped_in_place_between_calls_is_seen():
    @tp.compile
    def f(x):
        # the branch taken is baked into the graph
        return (x * (3.0 if x.requires_grad else 5.0)).sum()

    x = tp.ones(4)
    assert not f(x).requires_grad and f(x).item() == 20.0
    x.requires_grad_()
    y = f(x)
    assert y.requires_grad and y.item() == 12.0
    y.backward()
    assert _eq(x.grad, tp.full((4,), 3.0))
    x.requires_grad_(False)
    assert not f(x).requires_grad and f(x).item() == 20.0


def test_grad_mode_is_part_of_the_key():
    @tp.compile
    def f(x):
        return x * (2.0 if tp.is_grad_enabled() else 3.0)     # baked into the graph

    x = tp.ones(3, requires_grad=True)
    for _ in range(2):
        y = f(x)
        assert y.requires_grad and _eq(y.detach(), tp.full((3,), 2.0))
        with tp.no_grad():
            y = f(x)
        assert not y.requires_grad and _eq(y, tp.full((3,), 3.0))


def test_a_constant_argument_counts_by_type_not_only_by_value():
    # 2 == 2.0 == True and they hash alike; the graph bakes the constant in
    @tp.compile
    def f(x, k):
        return x * k

    x = tp.arange(4)
    assert f(x, 2).dtype == tp.int64
    assert f(x, 2.0).dtype == tp.float32
    assert _eq(f(x, 2.5), x * 2.5)
    assert f(x, 2).dtype == tp.int64
    b = tp.tensor([True, False])
    assert f(b, True).dtype == tp.bool
    assert f(b, 1).dtype == tp.int64


def test_mutated_input_is_read_afresh_on_every_call():
    @tp.compile
    def f(x):
        x.add_(1.0)
        return x * 2.0

    x = tp.zeros(3)
    for i in range(1, 4):
        assert _eq(f(x), tp.full((3,), 2.0 * i))
    assert _eq(x, tp.full((3,), 3.0))


def test_a_changed_global_misses_on_the_hot_path_and_changing_it_back_hits():
    global SCALE

    @tp.compile
    def f(x):
        return x * SCALE

    x = tp.ones(2)
    try:
        assert _eq(f(x), tp.full((2,), 2.0)) and _eq(f(x), tp.full((2,), 2.0))
        SCALE = 5.0
        assert _eq(f(x), tp.full((2,), 5.0))
        SCALE = 2.0
        assert _eq(f(x), tp.full((2,), 2.0))
        assert f.captures == 2
    finally:
        SCALE = 2.0


def test_a_redefined_custom_op_is_seen_on_the_hot_path():
    @custom_op("tc_fastpath::scale", mutates_args=())
    def scale(x: tp.Tensor) -> tp.Tensor:
        return x * 2.0

    @scale.register_fake
    def _(x):
        return x.new_empty(x.shape)

    @tp.compile
    def f(x):
        return tp.ops.tc_fastpath.scale(x) + 0.0

    x = tp.ones(2)
    assert _eq(f(x), tp.full((2,), 2.0)) and _eq(f(x), tp.full((2,), 2.0))

    @custom_op("tc_fastpath::scale", mutates_args=())
    def scale2(x: tp.Tensor) -> tp.Tensor:
        return x * 7.0

    @scale2.register_fake
    def _(x):
        return x.new_empty(x.shape)

    assert _eq(f(x), tp.full((2,), 7.0))
    assert f.captures == 2


def test_a_rebound_closure_tensor_is_seen_on_the_hot_path():
    w = tp.ones(2)

    def make():
        @tp.compile
        def f(x):
            return x * w
        return f

    f = make()
    x = tp.full((2,), 3.0)
    assert _eq(f(x), x) and _eq(f(x), x)
    w = tp.full((2,), 2.0)     # noqa: F841 - rebinds the cell f reads
    assert _eq(f(x), tp.full((2,), 6.0))


def test_keyword_calls_take_the_full_lookup_and_hit_it_again():
    @tp.compile
    def f(x, y=None):
        return x + (0.0 if y is None else y)

    x = tp.randn(3)
    for _ in range(2):
        assert _eq(f(x), x)
        assert _eq(f(x, y=x), x + x)        # keyword: the full lookup
        assert _eq(f(x, x), x + x)          # positional: the fast path, its own graph
    assert f.captures == 3


def test_many_positional_tensors_beyond_the_generated_keys():
    @tp.compile
    def f(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out

    xs = [tp.full((2,), float(i)) for i in range(40)]
    for _ in range(2):
        assert _eq(f(*xs), tp.full((2,), float(sum(range(40)))))
    assert f.captures == 1


def test_evicted_graphs_are_not_kept_alive_by_the_fast_path():
    import gc
    import weakref

    @tp.compile(dynamic=False)
    def f(x):
        return x + 1.0

    f(tp.zeros(2))
    f(tp.zeros(2))                                # the hot entry
    first = weakref.ref(f.graph)
    for n in range(3, 80):
        assert _eq(f(tp.zeros(n)), tp.ones(n))
    assert f.cache_size <= 64
    gc.collect()
    assert first() is None                        # evicted, and nothing else holds it
    assert _eq(f(tp.zeros(2)), tp.ones(2))        # captured again, correct


def test_reset_forgets_the_hot_entry():
    @tp.compile
    def f(x):
        return x * 2.0

    x = tp.ones(2)
    f(x)
    f(x)
    f.reset()
    assert _eq(f(x), tp.full((2,), 2.0))
    assert f.captures == 2


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_row_softmax_equals_eager_across_signatures(mode):
    def softmax_rows(x):
        a = x - x.amax(-1, keepdim=True)
        e = a.exp()
        return e / e.sum(-1, keepdim=True)

    f = tp.compile(softmax_rows, mode=mode)
    xs = [tp.randn(2, 8), tp.randn(4, 8), tp.randn(8, 2).t(), tp.randn(2, 8, dtype=tp.float64)]
    for _ in range(3):
        for x in xs:
            got, want = f(x), softmax_rows(x)
            assert got.dtype == want.dtype and bool(tp.allclose(got, want, rtol=1e-6, atol=1e-7))


def test_compiled_method_takes_the_fast_path_per_instance_and_sees_attributes():
    class Scale:
        def __init__(self, k, w):
            self.k = k
            self.w = w

        @tp.compile
        def forward(self, x):
            return x * self.k + self.w

    a, b = Scale(2.0, tp.ones(2)), Scale(3.0, tp.zeros(2))
    x = tp.ones(2)
    for _ in range(2):
        assert _eq(a.forward(x), tp.full((2,), 3.0))
        assert _eq(b.forward(x), tp.full((2,), 3.0))
    a.k = 5.0                                  # a scalar attribute: guarded by value
    assert _eq(a.forward(x), tp.full((2,), 6.0))
    a.w = tp.full((2,), 10.0)                  # a tensor attribute rebound
    assert _eq(a.forward(x), tp.full((2,), 15.0))
    a.w.add_(1.0)                              # updated in place: used by reference
    assert _eq(a.forward(x), tp.full((2,), 16.0))


def test_arguments_with_their_own_equality_and_containers_take_the_full_lookup():
    class Cfg:
        def __init__(self, k):
            self.k = k

        def __eq__(self, other):
            return isinstance(other, Cfg) and other.k == self.k

        def __hash__(self):
            return hash(self.k)

    @tp.compile
    def f(xs, cfg, x):
        return xs[0] * cfg.k + x

    x = tp.ones(2)
    for k in (2.0, 3.0, 2.0):
        assert _eq(f([x, x], Cfg(k), x), tp.full((2,), k + 1.0))
    assert _eq(f([x * 2.0], Cfg(2.0), x), tp.full((2,), 5.0))


def test_tensor_metadata_is_keyed_also_next_to_scalar_arguments():
    @tp.compile
    def f(x, k):
        # dtype, device, contiguity and requires_grad all baked into the graph
        return (x * k, tp.zeros(2, dtype=x.dtype, device=x.device), x.is_contiguous(),
                1.0 if x.requires_grad else 0.0)

    base = tp.randn(3, 3)
    xs = [base, base.t(), base.to(tp.float64), tp.empty(3, 3, device="meta"),
          base.clone().requires_grad_()]
    for _ in range(2):
        for x in xs:
            _, z, contig, rg = f(x, 2.0)
            assert z.dtype == x.dtype and z.device == x.device
            assert contig == x.is_contiguous() and rg == float(x.requires_grad)
