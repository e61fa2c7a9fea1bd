"""``tensorplay.compiler.disable`` (torch.compiler.disable's meaning) and how ``tensorplay.compile``
runs a disabled function: one opaque node of the graph, run eagerly on every compiled call with
that call's values, the ops around it still compiled (h-disable47).

Torch-free. The last tests run flash-linear-attention 0.6.0's released ``chunk_simple_gla`` /
``chunk_retention`` (decorated ``@torch.compiler.disable`` upstream; the corpus binds ``torch`` to
tensorplay) inside ``tensorplay.compile`` (skipped without triton / fla's wheel).
"""

from __future__ import annotations

import functools
import threading

import pytest
import tensorplay as tp
from tensorplay.errors import CompileError
from tensorplay.testing import assert_close

pytestmark = pytest.mark.usefixtures("cpu")


def _lines(graph) -> list[str]:
    return [ln.strip() for ln in str(graph).splitlines()]


def _node_lines(graph) -> list[str]:
    return [ln for ln in _lines(graph)[1:] if ln.startswith("%") or ln.startswith("(")]


# ---------------------------------------------------------------------------------- the decorator

def test_the_three_forms_return_a_wrapper_that_runs_the_function_as_is_outside_compile():
    calls = []

    def f(x, *, k=1.0):
        """doc of f"""
        calls.append(k)
        return x * k

    bare = tp.compiler.disable(f)
    called = tp.compiler.disable(recursive=False)(f)
    deco = tp.compiler.disable(reason="why")(f)

    @tp.compiler.disable
    def g(x):
        return x + 1

    x = tp.randn(4)
    for w in (bare, called, deco):
        assert w.__name__ == "f" and w.__doc__ == "doc of f" and w.__wrapped__ is f
        assert_close(w(x, k=2.0), x * 2.0)
    assert calls == [2.0, 2.0, 2.0]
    assert_close(g(x), x + 1)
    assert g.__name__ == "g"
    assert deco._tensorplay_disable_reason == "why"
    assert tp.compiler.disable(bare) is bare          # disabling a wrapper again: itself
    # not under compile: the function's own errors are its own
    with pytest.raises(ZeroDivisionError):
        tp.compiler.disable(lambda: 1 / 0)()


def test_compiling_a_disabled_function_runs_it_eagerly_every_call():
    log = []

    @tp.compiler.disable
    def f(x):
        log.append(1)
        return x.exp() - 1

    cf = tp.compile(f)
    for n in range(1, 4):
        x = tp.randn(3)
        assert_close(cf(x), x.exp() - 1)
        assert len(log) == n
    assert [ln.split("= ", 1)[1].split("(")[0] for ln in _node_lines(cf.graph)] == \
        ["disabled test_compiling_a_disabled_function_runs_it_eagerly_every_call.<locals>.f"]


def test_decoration_errors():
    with pytest.raises(TypeError, match="expected a function"):
        tp.compiler.disable(3)
    with pytest.raises(TypeError, match="recursive must be a bool"):
        tp.compiler.disable(lambda x: x, "yes")
    with pytest.raises(TypeError, match="recursive must be a bool"):
        tp.compiler.disable(recursive=None)


# ---------------------------------------------------------------------------------- under compile

def _pipeline(disabled_fn):
    def f(x, y):
        a = (x * y).sin() + 1.0
        b = disabled_fn(a)
        return (b * 3.0).cos() - y
    return f


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_side_effects_run_on_every_compiled_call_not_only_at_capture(mode):
    log = []

    @tp.compiler.disable
    def side(a):
        log.append(tuple(a.shape))
        return a.tanh() * 2.0

    eager = _pipeline(side)
    cf = tp.compile(_pipeline(side), mode=mode)
    for i in range(4):
        x, y = tp.randn(3, 5), tp.randn(3, 5)
        got = cf(x, y)
        assert len(log) == 2 * i + 1           # the compiled call ran it exactly once
        want = eager(x, y)
        assert len(log) == 2 * i + 2
        assert_close(got, want, rtol=0, atol=0)
    assert cf.captures == 1                    # one graph, replayed with new values


def test_the_ops_around_the_disabled_call_are_compiled_and_its_own_are_not():
    @tp.compiler.disable
    def inner(a):
        return a.tanh().exp()

    cf = tp.compile(_pipeline(inner))
    cf(tp.randn(8), tp.randn(8))
    nodes = _node_lines(cf.graph)
    targets = [n.split("= ", 1)[1].split("(")[0] for n in nodes]
    assert targets == ["tp::mul", "tp::sin", "tp::add", "disabled test_the_ops_around_the_disabled_call_"
                       "are_compiled_and_its_own_are_not.<locals>.inner", "tp::mul", "tp::cos", "tp::sub"]
    d = nodes[3]
    assert "runs eagerly" in d and "barrier" in d
    # its body (tanh, exp) is not in the graph; the chains on both sides are fused
    assert not any("tanh" in n or "exp" in n for n in nodes)
    assert "fused group 0" in nodes[0] and "fused group 1" in nodes[-1]
    assert "2 fused groups" in str(cf.graph)
    assert "sizes: guarded (a disabled call's outputs were seen for these sizes)" in str(cf.graph)


def test_inside_the_disabled_function_is_compiling_is_false_outside_it_true_while_capturing():
    seen_inside = []
    box = {"outside": []}         # (nested: the watch does not stop the capture before it)
    seen_outside = box["outside"]

    @tp.compiler.disable
    def probe(a):
        seen_inside.append(tp.compiler.is_compiling())
        return a + 1

    @tp.compile
    def f(x):
        box["outside"].append(tp.compiler.is_compiling())
        return probe(x * 2) * 3

    x = tp.randn(4)
    assert_close(f(x), (x * 2 + 1) * 3)
    assert_close(f(x), (x * 2 + 1) * 3)
    assert seen_inside == [False, False]      # it runs eagerly, each call
    assert True in seen_outside               # the body was captured (only then it runs)


def test_results_equal_eager_on_new_values_and_other_sizes_recapture():
    @tp.compiler.disable
    def norm_rows(a):
        return a / a.sum(-1, keepdim=True)

    eager = _pipeline(norm_rows)
    cf = tp.compile(_pipeline(norm_rows))
    for shape in [(4, 6), (4, 6), (2, 3), (4, 6), (2, 3)]:
        x, y = tp.rand(*shape) + 0.5, tp.rand(*shape) + 0.5
        assert_close(cf(x, y), eager(x, y))
    # the outputs' metadata was seen for one size: a graph per size
    assert cf.captures == 2


def test_gradients_through_a_compiled_function_with_a_disabled_call_equal_eager():
    @tp.compiler.disable
    def mix(a, w):
        return (a @ w).relu() + a.sum(-1, keepdim=True)

    def f(x, w, y):
        h = (x * y).tanh()
        return (mix(h, w) * y.sum()).sin().sum()

    cf = tp.compile(f)
    for _ in range(2):
        vals = [tp.randn(3, 4), tp.randn(4, 4), tp.randn(3, 4)]
        e = [v.clone().requires_grad_() for v in vals]
        c = [v.clone().requires_grad_() for v in vals]
        f(*e).backward()
        out = cf(*c)
        assert out.requires_grad
        out.backward()
        for a, b in zip(c, e):
            assert_close(a.grad, b.grad)
    assert cf.captures == 1


def test_a_disabled_call_under_no_grad_inside_the_compiled_function_runs_under_it():
    seen = []

    @tp.compiler.disable
    def side(a):
        seen.append(tp.is_grad_enabled())
        return a * 2

    def f(x):
        with tp.no_grad():
            y = side(x)
        return y + x

    cf = tp.compile(f)
    for _ in range(2):
        x = tp.randn(3, requires_grad=True)
        out, want = cf(x), f(x)
        assert out.requires_grad and want.requires_grad
        out.sum().backward()
        assert_close(x.grad, tp.ones(3))      # no gradient through the no_grad call, as eager
    assert seen == [False] * 4


def test_nested_disabled_functions_each_run_once_per_call_and_only_the_outer_is_a_node():
    log = []

    @tp.compiler.disable
    def inner(a):
        log.append("inner")
        return a * 2

    @tp.compiler.disable
    def outer(a):
        log.append("outer")
        return inner(a + 1) - 1

    @tp.compile
    def f(x):
        return outer(x.exp()).sqrt()

    for n in range(1, 4):
        x = tp.rand(5)
        assert_close(f(x), ((x.exp() + 1) * 2 - 1).sqrt())
        assert log == ["outer", "inner"] * n
    nodes = _node_lines(f.graph)
    assert sum("disabled" in ln for ln in nodes) == 1 and "outer" in nodes[1]


def test_recursive_false_is_treated_as_recursive_side_effects_each_call():
    log = []

    def helper(a):
        log.append("helper")
        return a.cos()

    @tp.compiler.disable(recursive=False)
    def top(a):
        log.append("top")
        return helper(a) + 1

    @tp.compile
    def f(x):
        return top(x * 3) * 2

    for n in range(1, 3):
        x = tp.randn(6)
        assert_close(f(x), ((x * 3).cos() + 1) * 2)
        assert log == ["top", "helper"] * n
    # no frames to skip in tensorplay's tracer: the callee's op (cos) is not in the graph either
    assert not any("cos" in ln for ln in _node_lines(f.graph))


def test_a_disabled_function_mutating_its_input_runs_once_per_call_and_the_ops_after_see_it():
    @tp.compiler.disable
    def bump(a):
        a.add_(1.0)
        return a

    @tp.compile
    def f(x):
        y = bump(x)
        return y * 2

    x = tp.zeros(3)
    assert_close(f(x), tp.full((3,), 2.0))
    assert_close(x, tp.ones(3))               # once on the first (capturing) call
    assert_close(f(x), tp.full((3,), 4.0))
    assert_close(x, tp.full((3,), 2.0))


def test_structured_results_and_python_values_come_back_as_eager():
    @tp.compiler.disable
    def split(a, scale):
        return {"lo": a.clamp(max=0.0) * scale, "parts": [a.abs(), a.sign()]}, 7

    @tp.compile
    def f(x, s):
        d, n = split(x + 0.0, s)
        return d["lo"] + d["parts"][0] * n - d["parts"][1]

    for _ in range(2):
        x = tp.randn(4, 2)
        want = x.clamp(max=0.0) * 0.5 + x.abs() * 7 - x.sign()
        assert_close(f(x, 0.5), want)
    assert f.captures == 1


def test_outputs_changing_metadata_at_replay_raise_naming_the_function():
    @tp.compiler.disable
    def positives(a):
        return a[a > 0]                  # data-dependent size

    @tp.compile
    def f(x):
        return positives(x * 1.0).sum()

    assert_close(f(tp.tensor([1.0, -1.0, 2.0])), tp.tensor(3.0))
    assert_close(f(tp.tensor([3.0, -1.0, 2.0])), tp.tensor(5.0))    # same size out: fine
    with pytest.raises(CompileError, match=r"disabled function .*positives.* returned tensor 0 "
                                           r"as f32\[3\] .* not f32\[2\]"):
        f(tp.tensor([1.0, 1.0, 2.0]))
    # the structure too (a data-dependent choice; a global it reads would be guarded instead)
    @tp.compiler.disable
    def two_or_one(a):
        return (a, a) if a.sum().item() > 0 else a

    @tp.compile
    def g(x):
        r = two_or_one(x)
        return r * 2

    g(tp.tensor([-1.0, -2.0]))
    with pytest.raises(CompileError, match=r"two_or_one .*returned \(f32\[2\], f32\[2\]\) on "
                                           r"this call, not f32\[2\] as when captured"):
        g(tp.tensor([1.0, 2.0]))


def test_values_the_disabled_function_reads_are_guarded_a_change_recaptures():
    flip = [False]

    @tp.compiler.disable
    def two_or_one(a):
        return (a, a * 3) if flip[0] else (a, a)

    @tp.compile
    def g(x):
        a, b = two_or_one(x)
        return a * 2 + b

    x = tp.randn(2)
    assert_close(g(x), x * 3)
    flip[0] = True
    assert_close(g(x), x * 5)
    assert g.captures == 2


def test_errors_of_the_disabled_function_propagate_unchanged():
    @tp.compiler.disable
    def picky(a, ok):
        if not ok:
            raise ValueError("picky refuses")
        return a + 1

    @tp.compile
    def f(x, ok):
        return picky(x * 2, ok) * 3

    with pytest.raises(ValueError, match="picky refuses"):
        f(tp.randn(2), False)                 # on the capturing call
    assert_close(f(tp.ones(2), True), tp.full((2,), 9.0))

    fail = [False]

    @tp.compiler.disable
    def later(a):
        if fail[0]:
            raise KeyError("later")
        return a

    @tp.compile
    def g(x):
        return later(x + 1)

    g(tp.randn(2))
    fail[0] = True
    with pytest.raises(KeyError, match="later"):
        g(tp.randn(2))                        # on a replay


def test_a_branch_on_is_compiling_around_the_call_takes_the_compiled_path_on_every_call():
    log = []

    @tp.compiler.disable
    def side(a):
        log.append(tp.compiler.is_compiling())
        return a * 2

    # taken only eagerly: under compile the branch is not taken (as under torch.compile)
    @tp.compile
    def f(x):
        if not tp.compiler.is_compiling():
            x = side(x)
        return x + 1

    x = tp.randn(3)
    assert_close(f(x), x + 1)
    assert log == []

    # taken only while compiling: on every call, the first one too (its eager run takes the
    # compiled path); inside the disabled function is_compiling() is False, as under torch
    @tp.compile
    def g(x):
        if tp.compiler.is_compiling():
            x = side(x)
        return x + 1

    for n in range(1, 4):
        x = tp.randn(3)
        assert_close(g(x), x * 2 + 1)
        assert log == [False] * n

    # not taken while compiling, next to a disabled call that is: the compiled path each call
    log.clear()

    @tp.compile
    def h(x):
        if not tp.compiler.is_compiling():
            x = side(x)
        return side(x + 1)

    for n in range(1, 4):
        x = tp.randn(3)
        assert_close(h(x), (x + 1) * 2)
        assert len(log) == n


def test_a_capture_taking_another_path_than_the_eager_run_is_refused_with_an_explanation():
    runs = {"n": []}

    @tp.compiler.disable
    def side(a):
        return a * 2

    @tp.compile
    def f(x):
        x = side(x)
        runs["n"].append(1)           # (nested: the watch does not stop the capture before it)
        if len(runs["n"]) == 2:       # the function's own state: true only in the capture
            x = side(x[:2])
        return x + 1

    with pytest.raises(CompileError, match=r"different disabled functions: the capture calls "
                                           r".*side on \(f32\[2\]\), which the eager run did "
                                           r"not call there \(its calls left: \[\]\)"):
        f(tp.randn(3))


def test_threads_each_run_their_own_calls():
    counts = {}

    @tp.compiler.disable
    def side(a):
        k = threading.current_thread().name
        counts[k] = counts.get(k, 0) + 1
        return a * 2

    cf = tp.compile(lambda x: side(x + 1) - 1)
    errs = []
    start = threading.Barrier(3)

    def work():
        try:
            start.wait()
            for _ in range(5):
                x = tp.randn(4)
                assert_close(cf(x), (x + 1) * 2 - 1)
        except Exception as e:   # noqa: BLE001 - reported below
            errs.append(e)

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs
    assert sorted(counts.values()) == [5, 5, 5]


def test_a_compiled_method_and_a_partial_as_the_disabled_function():
    class Block:
        def __init__(self):
            self.w = tp.randn(3, 3)
            self.calls = 0

        @tp.compiler.disable
        def proj(self, a):
            self.calls += 1
            return a @ self.w

        @tp.compile
        def forward(self, x):
            return self.proj(x.relu()).sigmoid()

    b = Block()
    for n in range(1, 3):
        x = tp.randn(2, 3)
        assert_close(b.forward(x), (x.relu() @ b.w).sigmoid())
        assert b.calls == n
    p = tp.compiler.disable(functools.partial(tp.mul, other=3.0))
    cf = tp.compile(lambda x: p(x).exp())
    x = tp.randn(4)
    assert_close(cf(x), (x * 3.0).exp())


def test_data_dependent_python_inside_the_disabled_function_works_under_compile():
    # why libraries disable a function: .item(), .tolist(), numpy() on values, which a capture
    # refuses (DispatchError) in compiled code
    np = pytest.importorskip("numpy")

    @tp.compiler.disable
    def host_side(a):
        m = a.abs().max().item()
        rows = a.tolist()
        arr = np.asarray(a.numpy()) * 0.0 + len(rows)
        return a / m + tp.tensor(arr)

    def f(x):
        return host_side(x * 2.0).relu()

    cf = tp.compile(f)
    for _ in range(3):
        x = tp.randn(3, 4)
        assert_close(cf(x), f(x))
    assert cf.captures == 1


def test_a_custom_op_body_calling_a_disabled_function_stays_inside_the_op():
    from tensorplay.library import custom_op
    log = []

    @tp.compiler.disable
    def helper(a):
        log.append(1)
        return a * 2.0

    @custom_op("t_disable47::twice_plus", mutates_args=())
    def twice_plus(x: tp.Tensor) -> tp.Tensor:    # no register_fake: the body is its own fake
        return helper(x) + 1.0

    @tp.compile
    def f(x):
        return twice_plus(x.sin()).cos()

    x = tp.randn(5)
    assert_close(f(x), (x.sin() * 2.0 + 1.0).cos())
    nodes = _node_lines(f.graph)
    assert not any("disabled" in ln for ln in nodes)
    assert any("t_disable47::twice_plus" in ln and "opaque" in ln for ln in nodes)
    n = len(log)
    f(tp.randn(5))
    assert len(log) == n + 1                  # the op's body ran (once) on the replay

    # next to a disabled call of its own: the eager run's call inside the op's body is not one
    # of the graph's
    @tp.compile
    def g(x):
        return helper(twice_plus(helper(x)))

    for _ in range(2):
        x = tp.randn(5)
        assert_close(g(x), (x * 4.0 + 1.0) * 2.0)
    assert sum("disabled" in ln for ln in _node_lines(g.graph)) == 2


@pytest.mark.parametrize("inner_first", [False, True])
def test_a_compiled_function_calling_a_compiled_function_with_a_disabled_call(inner_first):
    log = []

    @tp.compiler.disable
    def side(a):
        log.append(1)
        return a * 2

    @tp.compile
    def inner(x):
        return side(x.exp()) + 1

    @tp.compile
    def outer(x):
        return inner(x * 3).log()

    x = tp.rand(4)
    if inner_first:                      # inner cached: a replay inside outer's eager run
        assert_close(inner(x), x.exp() * 2 + 1)
        log.clear()
    for n in range(1, 4):
        x = tp.rand(4)
        assert_close(outer(x), ((x * 3).exp() * 2 + 1).log())
        assert len(log) == n
    assert outer.captures == 1 and inner.captures == 1
    assert sum("disabled" in ln for ln in _node_lines(outer.graph)) == 1   # inlined


# ---------------------------------------------------------------------------------- fla as released

def _fla_host(names: dict):
    pytest.importorskip("triton", reason="triton is not installed")
    pytest.importorskip("tensorplay_triton", reason="tensorplay-triton is not installed")
    pytest.importorskip("numpy")
    try:
        from corpus import _upstream
        from corpus.fla.kernels import DIST
    except Exception as e:   # noqa: BLE001 - the wheel is absent: no fla here
        pytest.skip(f"flash-linear-attention's wheel is not available ({e})")
    from tensorplay.library import wrap_triton
    return _upstream.host(DIST, names, framework=tp, wrap=wrap_triton)


def _sgla_inputs(seed):
    import numpy as np
    r = np.random.default_rng(seed)
    B, T, H, K, V = 1, 18, 2, 16, 16        # two chunks of 16, the second partial

    def x(*s):
        return tp.tensor(r.standard_normal(s).astype(np.float32))
    g = tp.tensor((-0.1 * np.abs(r.standard_normal((B, T, H)))).astype(np.float32))
    return x(B, T, H, K), x(B, T, H, K), x(B, T, H, V), g, x(B, H, K, V)


def test_fla_chunk_simple_gla_as_released_inside_compile_matches_eager_with_gradients(request):
    chunk_simple_gla = _fla_host({"fla/ops/simple_gla/chunk.py": ["chunk_simple_gla"]})["chunk_simple_gla"]
    from corpus.fla import runtime
    if runtime.GATED_BWD_REFUSED:   # fla's own guard on this machine (its gated backward, #640)
        request.applymarker(pytest.mark.xfail(strict=True, raises=RuntimeError, reason=(
            "fla refuses chunk_bwd_dqkwg with a gate on a Hopper GPU with Triton >= 3.4.0, < 3.7.1")))
    assert chunk_simple_gla._tensorplay_disabled      # @torch.compiler.disable as released

    def layer(q, k, v, g, h0):
        o, s = chunk_simple_gla((q * 1.5).sin(), k, v, g, initial_state=h0,
                                output_final_state=True, chunk_size=16)
        return (o * 2.0 + 1.0).sum() + s.exp().mean()

    cf = tp.compile(layer)
    for seed in (0, 1):
        vals = _sgla_inputs(seed)
        e = [t.clone().requires_grad_() for t in vals]
        c = [t.clone().requires_grad_() for t in vals]
        want = layer(*e)
        got = cf(*c)
        assert_close(got, want, rtol=1e-5, atol=1e-5)
        want.backward()
        got.backward()
        for a, b in zip(c, e):
            assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-5)
    assert cf.captures == 1
    nodes = _node_lines(cf.graph)
    assert any("disabled chunk_simple_gla" in ln for ln in nodes)
    assert any("tp::sin" in ln for ln in nodes) and any("tp::exp" in ln for ln in nodes)


def test_fla_chunk_retention_as_released_inside_compile_matches_eager():
    chunk_retention = _fla_host({"fla/ops/retention/chunk.py": ["chunk_retention"]})["chunk_retention"]
    assert chunk_retention._tensorplay_disabled

    def f(q, k, v, h0):
        o, s = chunk_retention(q, k, v, initial_state=h0, output_final_state=True)
        return o.relu(), s * 2.0

    cf = tp.compile(f)
    for seed in (2, 3):
        q, k, v, _, h0 = _sgla_inputs(seed)
        for a, b in zip(cf(q, k, v, h0), f(q, k, v, h0)):
            assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert cf.captures == 1


# ---------------------------------------------------------------------------------- cuda

_CUDA_OK, _CUDA_WHY = tp.plugins.device_status("cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not _CUDA_OK, reason=f"no usable CUDA device: {_CUDA_WHY}")
def test_cuda_disabled_call_runs_each_call_and_reduce_overhead_says_why_no_graph():
    log = []

    @tp.compiler.disable
    def side(a):
        log.append(a.device.type)
        return a.tanh() * 2.0

    def f(x, y):
        return (side((x * y).sin() + 1.0) * 3.0).cos() - y

    for mode in (None, "reduce-overhead"):
        log.clear()
        cf = tp.compile(f, mode=mode)
        for i in range(3):
            x, y = tp.randn(64, 64).cuda(), tp.randn(64, 64).cuda()
            assert_close(cf(x, y), f(x, y))
            assert log == ["cuda"] * (2 * i + 2)
        assert cf.captures == 1
    assert any("disabled" in why and "side" in why for why in cf.graph_skips.values())
