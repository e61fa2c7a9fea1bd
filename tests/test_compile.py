"""Tests for tensorplay.compile (SPEC §4; CASES C11, C13) and opcheck's compile check
(tensorplay.testing.aot)."""

from __future__ import annotations

import pytest
import tensorplay as tp
from tensorplay.errors import CompileError, DispatchError
from tensorplay.library import custom_op
from tensorplay.testing import aot, assert_close

pytestmark = pytest.mark.usefixtures("cpu")


# ------------------------------------------------------------------------------ ops for the tests

BODY_CALLS = {"scale": 0}


@custom_op("tc_compile::scale", mutates_args=())
def scale(x: tp.Tensor, s: float) -> tp.Tensor:
    BODY_CALLS["scale"] += 1
    return x * s + 0.0


@scale.register_fake
def _(x, s):
    return x.new_empty(x.shape)


@custom_op("tc_compile::inc_", mutates_args=("x",))
def inc_(x: tp.Tensor) -> None:
    x.add_(1.0)


@custom_op("tc_compile::two_", mutates_args=("a", "b"))
def two_(a: tp.Tensor, b: tp.Tensor) -> None:
    a.add_(1.0)
    b.mul_(2.0)


@custom_op("tc_compile::cube", mutates_args=())
def cube(x: tp.Tensor) -> tp.Tensor:
    return x * x * x


@cube.register_fake
def _(x):
    return x.new_empty(x.shape)


def _cube_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _cube_bw(ctx, g):
    x, = ctx.saved_tensors
    return g * 3.0 * x * x


cube.register_autograd(_cube_bw, setup_context=_cube_setup)


@custom_op("tc_compile::cpu_only", mutates_args=(), device_types="cpu")
def cpu_only(x: tp.Tensor) -> tp.Tensor:
    return x.clone()


def _x(*shape, seed=0, dtype=None, rg=False):
    tp.manual_seed(seed)
    t = tp.randn(*shape, dtype=dtype)
    return t.requires_grad_(True) if rg else t


# ------------------------------------------------------------------------------ graph & capture

def test_graph_is_none_before_a_call_and_prints_one_node_per_line():
    @tp.compile
    def f(x, y):
        return (x * y + 1.0).relu()

    assert f.graph is None
    f(_x(4, 3), _x(3, seed=1))
    text = str(f.graph)
    lines = text.splitlines()
    assert lines[0].startswith("graph f(%0: f32[4, 3] cpu, %1: f32[3] cpu)")
    assert lines[1].strip().startswith("%2 = tp::mul(%0, %1)")
    assert lines[2].strip().startswith("%3 = tp::add(%2, 1.0)")
    assert lines[3].strip().startswith("%4 = tp::relu(%3)")
    assert lines[4].strip() == "return %4"
    assert len(f.graph.nodes) == 3


def test_custom_op_is_one_opaque_node_whose_body_is_not_run_during_capture():
    BODY_CALLS["scale"] = 0
    f = tp.compile(lambda x: scale(x, 2.0).exp())
    x = _x(5, 2)
    out = f(x)
    # one run of the body: the execution; none during capture
    assert BODY_CALLS["scale"] == 1
    assert f.captures == 1
    assert [n.target for n in f.graph.nodes] == ["tc_compile::scale", "tp::exp"]
    assert "opaque" in str(f.graph).splitlines()[1]
    assert_close(out, (x * 2.0).exp())
    f(x)
    assert BODY_CALLS["scale"] == 2 and f.captures == 1


def test_graph_is_reused_for_other_sizes_without_recapture():
    f = tp.compile(lambda x, w: scale(x * w, 3.0).sum(-1))
    for n in (4, 9, 2, 33):
        x, w = _x(n, 3, seed=n), _x(3, seed=100)
        assert_close(f(x, w), ((x * w) * 3.0).sum(-1))
    assert f.captures == 1 and f.cache_size == 1
    assert "sizes: dynamic" in str(f.graph)


def test_guard_miss_on_dtype_recaptures_and_hits_afterwards():
    f = tp.compile(lambda x: (x * 2.0).tanh())
    f(_x(4))
    f(_x(4, dtype=tp.float64))
    assert f.captures == 2
    out = f(_x(6, dtype=tp.float64))
    assert out.dtype is tp.float64 and f.captures == 2
    f(_x(7))
    assert f.captures == 2 and f.cache_size == 2


def test_guard_miss_on_requires_grad_and_rank():
    f = tp.compile(lambda x: x.sin())
    f(_x(3))
    f(_x(3, rg=True))
    f(_x(3, 2))
    assert f.captures == 3


def test_code_reading_a_size_is_guarded_on_exact_sizes():
    def g(x):
        return x.reshape(x.shape[0] * x.shape[1]) * 2.0

    f = tp.compile(g)
    a = _x(2, 3)
    assert_close(f(a), g(a))
    assert f.graph.size_dependent and "sizes: guarded" in str(f.graph)
    b = _x(4, 5)
    assert_close(f(b), g(b))          # a graph baked with 2*3 would be wrong here
    assert f.captures == 2
    f(_x(2, 3, seed=7))
    assert f.captures == 2            # same sizes: cache hit


def test_zeros_like_reads_sizes_but_a_plain_factory_does_not():
    f = tp.compile(lambda x: x + tp.zeros_like(x) + 1.0)
    f(_x(2, 3))
    f(_x(5, 3))
    assert f.captures == 2
    h = tp.compile(lambda x: x + tp.ones(3))
    assert_close(h(_x(2, 3)), _x(2, 3) + 1.0)
    assert_close(h(_x(6, 3)), _x(6, 3) + 1.0)
    assert h.captures == 1
    assert "tp::full" in str(h.graph)


def test_dynamic_false_guards_every_size_and_decorator_with_options():
    @tp.compile(dynamic=False)
    def f(x):
        return x * 3

    f(_x(3))
    f(_x(4))
    f(_x(3))
    assert f.captures == 2


def test_non_tensor_arguments_are_guarded_by_value():
    f = tp.compile(lambda x, k: x * k)
    assert_close(f(_x(3), 2.0), _x(3) * 2.0)
    assert_close(f(_x(3), 5.0), _x(3) * 5.0)
    assert f.captures == 2


def test_data_dependent_python_is_a_graph_break_with_a_clear_error_under_fullgraph():
    branch = lambda x: x * 2 if (x.sum() > 0) else x       # noqa: E731
    to_list = lambda x: x.tolist()                           # noqa: E731
    f = tp.compile(branch, fullgraph=True)
    with pytest.raises(DispatchError, match="tensorplay.compile"):
        f(_x(3))
    g = tp.compile(to_list, fullgraph=True)
    with pytest.raises(DispatchError, match="data-dependent"):
        g(_x(3))
    # the default: a graph break, the function runs eagerly (eager's result, on either branch)
    f, g = tp.compile(branch), tp.compile(to_list)
    for x in (_x(3), -_x(3), _x(2, 4)):       # both branches, a new shape
        assert_close(f(x), branch(x))
        assert g(x) == to_list(x)
    assert all(r.startswith("runs eagerly: ") for r in (*f.graph_skips.values(),
                                                         *g.graph_skips.values()))
    assert f.graph_skips and g.graph_skips


def test_missing_fake_kernel_names_the_op_and_register_fake():
    f = tp.compile(lambda x: cpu_only(x) + 1)
    with pytest.raises(CompileError) as ei:
        f(_x(2, 3))
    msg = str(ei.value)
    assert "tc_compile::cpu_only" in msg and "register_fake" in msg


def test_tensor_leaked_out_of_a_capture_is_an_error():
    kept = {"in": []}

    @tp.compile
    def f(x):
        kept["in"].append(x)          # a nested list: not an object the watch stops before
        return x + 1

    f(_x(3))
    with pytest.raises(CompileError, match="capture"):
        kept["in"][0] * 2


def test_backward_inside_the_compiled_function_is_a_graph_break():
    step = lambda x: (x * 2).sum().backward()                # noqa: E731
    f = tp.compile(step, fullgraph=True)
    with pytest.raises(CompileError, match="backward"):
        f(_x(3, rg=True))
    # the default: the function runs eagerly, so backward() fills .grad as eager's does
    f = tp.compile(step)
    xe, xc = _x(3, rg=True), _x(3, rg=True)
    assert f(xc) is step(xe) is None
    assert_close(xc.grad, xe.grad)
    assert any("backward" in r for r in f.graph_skips.values())


# ------------------------------------------------------------------------------ compiled == eager

def _fns():
    def chain(x, y):
        return ((x * y + 1.0) * 0.5 - y).relu().tanh() + x.sigmoid()

    def with_custom(x, y):
        return (cube(x) * y).sum(-1).mean()

    def matmul_softmax(x, y):
        return (x @ y.t()).softmax(-1).log()

    def views_and_cat(x, y):
        a = x.t().reshape(-1)
        b = tp.cat([a, y.reshape(-1)], 0)
        return (b * b).sum(), x[1:].transpose(0, 1).exp()

    def reductions(x, y):
        return x.amax(-1) + (x * y).mean(0).sum() - y.abs().sum(-1)

    def scaled(x, y):
        return scale(x, 0.5) * y.exp()

    return [chain, with_custom, matmul_softmax, views_and_cat, reductions, scaled]


@pytest.mark.parametrize("fn", _fns(), ids=lambda f: f.__name__)
def test_compiled_equals_eager_outputs_and_gradients(fn):
    cfn = tp.compile(fn)
    for n in (4, 6):
        xe, ye = _x(n, 3, seed=n, rg=True), _x(n, 3, seed=n + 50, rg=True)
        xc, yc = _x(n, 3, seed=n, rg=True), _x(n, 3, seed=n + 50, rg=True)
        oe, oc = fn(xe, ye), cfn(xc, yc)
        oe = oe if isinstance(oe, tuple) else (oe,)
        oc = oc if isinstance(oc, tuple) else (oc,)
        for a, b in zip(oc, oe):
            assert_close(a, b)
        sum(o.sum() for o in oe).backward()
        sum(o.sum() for o in oc).backward()
        assert_close(xc.grad, xe.grad)
        if ye.grad is not None or yc.grad is not None:
            assert_close(yc.grad, ye.grad)
    assert cfn.captures == 1


def test_no_grad_inside_the_function_is_replayed():
    def f(x):
        with tp.no_grad():
            y = x * 2
        return x * y

    cf = tp.compile(f)
    xe, xc = _x(4, rg=True), _x(4, rg=True)
    f(xe).sum().backward()
    cf(xc).sum().backward()
    assert_close(xc.grad, xe.grad)
    assert "no_grad" in str(cf.graph)


def test_requires_grad_and_detach_inside_the_function_are_recorded():
    def f(x):
        w = tp.ones(3, requires_grad=True)
        return (x.detach() * w).sum(), w

    out, w = tp.compile(f)(_x(3, rg=True))
    out.backward()
    assert w.requires_grad and w.is_leaf
    assert_close(w.grad, _x(3))


def test_structures_constants_and_inputs_in_the_output():
    const = _x(3, seed=9)

    @tp.compile
    def f(d, k):
        return {"sum": d["a"] + const, "same": d["b"], "k": k, "pair": [d["a"] * k, 7]}

    a, b = _x(3), _x(2)
    r = f({"a": a, "b": b}, 3)
    assert r["same"] is b and r["k"] == 3 and r["pair"][1] == 7
    assert_close(r["sum"], a + const)
    assert_close(r["pair"][0], a * 3)


def test_compiled_function_called_inside_another_is_inlined():
    inner = tp.compile(lambda x: x * 2)
    outer = tp.compile(lambda x: inner(x) + 1)
    assert_close(outer(_x(3)), _x(3) * 2 + 1)
    assert [n.target for n in outer.graph.nodes] == ["tp::mul", "tp::add"]
    assert inner.captures == 0


def test_example_pack_ops_compiled_equal_eager_with_gradients():
    ops = [op for op in tp._registry.all_ops() if op.namespace == "example"
           and (op.active_kernel("cpu") is not None or op.active_kernel("default") is not None)]
    if not ops:
        pytest.skip("the example op pack (tensorplay-example-ops) is not installed")
    cpu = tp.device("cpu")
    checked = 0
    for op in ops:
        for s in tp.plugins.sample_inputs(op, cpu)[:2]:
            assert aot.check(op, s.args, s.kwargs) is None, (op.name, s.name)
            checked += 1
    assert checked >= 8


def test_triton_op_is_one_opaque_node():
    op = tp._registry._OPS.get("example::fused_add_mul_relu")
    if op is None or not op.is_triton:
        pytest.skip("the example pack's triton ops need triton and tensorplay-triton")
    cpu = tp.device("cpu")
    samples = tp.plugins.sample_inputs(op, cpu)
    if not samples:
        pytest.skip("no cpu samples for the triton op on this machine (kernels compiled for a GPU)")
    x, y = samples[0].args[:2]
    f = tp.compile(lambda x, y: op(x, y, 0.5) * 2.0)
    assert_close(f(x, y), op(x, y, 0.5) * 2.0)
    assert [n.target for n in f.graph.nodes] == ["example::fused_add_mul_relu", "tp::mul"]
    assert "opaque triton_op" in str(f.graph).splitlines()[1]


# ------------------------------------------------------------------------------ mutation barriers

def test_barriers_keep_program_order_and_split_fusion():
    def f(x):
        a = x * 2.0
        b = a + 1.0
        inc_(x)
        c = b * x
        d = c - 1.0
        return a, d

    cf = tp.compile(f)
    xe, xc = _x(5), _x(5)
    ae, de = f(xe)
    ac, dc = cf(xc)
    assert_close(ac, ae)
    assert_close(dc, de)
    assert_close(xc, xe)
    nodes = cf.graph.nodes
    assert [n.target for n in nodes] == ["tp::mul", "tp::add", "tc_compile::inc_", "tp::mul",
                                         "tp::sub"]
    barrier = nodes[2]
    assert barrier.is_barrier and barrier.fused is None
    assert nodes[0].fused == nodes[1].fused != nodes[3].fused == nodes[4].fused
    assert "barrier: mutates x" in str(cf.graph)


def test_mutated_arguments_that_are_views_of_one_base_match_eager():
    def f(base):
        y = base * 3
        two_(base[0], base[1:])
        z = base + y
        base.mul_(0.5)
        return z, base.sum()

    cf = tp.compile(f)
    for n in (3, 5):
        be = tp.arange(float(2 * n)).reshape(n, 2).clone()
        bc = tp.arange(float(2 * n)).reshape(n, 2).clone()
        ze, se = f(be)
        zc, sc = cf(bc)
        assert_close(zc, ze)
        assert_close(sc, se)
        assert_close(bc, be)
    assert cf.captures == 1


# ------------------------------------------------------------------------------ fusion

def _fusing_mock(name):
    """A MockBackend (shipped test backend) recording the chains it is offered; it declines them,
    so compile's generic fuser runs them."""
    pytest.importorskip("numpy")
    from tensorplay.testing.backend import MockBackend

    class Fusing(MockBackend):
        offered: list

        def fuse_elementwise(self, expr):
            self.offered.append(len(expr.steps))
            return None

    be = Fusing(name)
    be.offered = []
    return be


def test_elementwise_chain_is_fused_into_one_kernel_and_equals_eager():
    from _fusion_cases import chain8 as f

    cf = tp.compile(f)
    for n in (1000, 3 * (1 << 16) + 17):      # whole-array and blocked paths (blocks of 2**16)
        x, y = _x(n, seed=1), _x(n, seed=2)
        assert_close(cf(x, y), f(x, y), rtol=0, atol=0)     # the cpu fuser is exact
    assert len(cf.graph.groups) == 1 and len(cf.graph.groups[0].nodes) == 8
    # one chain, run fused: offered once to the backend's fuser, and each call wraps one result
    # (op by op, each of the 8 ops would wrap its own)
    with _fusing_mock("mockchain") as be:
        cm = tp.compile(f)
        for n in (1000, 3 * (1 << 16) + 17):
            x, y = _x(n, seed=1).to("mockchain"), _x(n, seed=2).to("mockchain")
            be.reset()
            assert_close(cm(x, y).cpu(), f(x, y).cpu(), rtol=0, atol=0)
            assert len(be.wraps) == 1 + 8                  # the compiled call + the eager f
        assert be.offered == [8]
    # broadcast and non-contiguous inputs take the whole-array path
    x, y = _x(4, 3, seed=3).t(), _x(4, seed=4)
    assert_close(cf(x, y), f(x, y))


def test_fusion_when_an_input_needs_grad():
    # (session 55: with an input requiring grad the graph runs as one autograd node, its
    # forward under no_grad, so its chains are fused as torch.compile's AOTAutograd fuses them;
    # before, the ops ran one by one, recording their nodes, never offered to a fuser)
    f = lambda x: (x * 2.0 + 1.0).exp()
    with _fusing_mock("mockgrad") as be:
        cf = tp.compile(f)
        xe = _x(8).to("mockgrad").requires_grad_(True)
        xc = _x(8).to("mockgrad").requires_grad_(True)
        cf(xc).sum().backward()
        f(xe).sum().backward()
        assert_close(xc.grad.cpu(), xe.grad.cpu())
        assert be.offered != []           # the AOT path's forward fuses the chain
        # a graph the AOT path does not take (a write inside) runs op by op: not offered
        be.offered.clear()

        def g(x):
            y = x * 2.0
            y.add_(1.0)
            return (y * 3.0 + 1.0).exp()
        xc = _x(8).to("mockgrad").requires_grad_(True)
        xe = _x(8).to("mockgrad").requires_grad_(True)
        tp.compile(g)(xc).sum().backward()
        g(xe).sum().backward()
        assert_close(xc.grad.cpu(), xe.grad.cpu())
        assert be.offered == []           # op by op: autograd needs the ops


def test_a_backend_fuser_is_used_when_offered():
    """``fuse_elementwise`` is an optional member of the backend protocol: a backend defining
    it is handed each chain and its callable runs the chain (seen on the shipped MockBackend)."""
    np = pytest.importorskip("numpy")
    from tensorplay.testing.backend import MockBackend
    seen, ran = [], []

    class Fusing(MockBackend):
        def fuse_elementwise(self, expr):
            seen.append(str(expr))

            def run(arrays):          # this chain, written by hand as a backend fuser would
                ran.append(len(arrays))
                x = arrays[0]
                return [np.sqrt(x + np.float32(1.0)) * x]
            return run

    with Fusing("mockfuser"):
        cf = tp.compile(lambda x: (x + 1.0).sqrt() * x)
        x = _x(10).abs().to("mockfuser")
        assert_close(cf(x).cpu(), ((x + 1.0).sqrt() * x).cpu())
    assert ran == [1]
    assert seen == ["t0 = add(in0, 1.0); t1 = sqrt(t0); t2 = mul(t1, in0) -> t2"]


# ------------------------------------------------------------------------------ CASES C11, C13

def test_c11_redefined_op_runs_the_corrected_definition():
    @custom_op("tc_compile::sneaky", mutates_args=())
    def sneaky(x: tp.Tensor) -> tp.Tensor:
        x.add_(1.0)                   # writes x although mutates_args=()
        return x * 2

    @sneaky.register_fake
    def _(x):
        return x.new_empty(x.shape)

    def f(x):
        return tp.ops.tc_compile.sneaky(x) + 0.0

    old_compiled = tp.compile(f)
    old_compiled(_x(3))
    first_op = old_compiled.graph.nodes[0].op

    @custom_op("tc_compile::sneaky", mutates_args=("x",))
    def sneaky2(x: tp.Tensor) -> tp.Tensor:
        x.add_(1.0)
        return x * 2

    @sneaky2.register_fake
    def _(x):
        return x.new_empty(x.shape)

    assert sneaky2.version == first_op.version + 1
    for compiled in (tp.compile(f), old_compiled):
        x = tp.zeros(3)
        out = compiled(x)
        node = compiled.graph.nodes[0]
        assert node.op is sneaky2 and node.is_barrier
        assert_close(x, tp.ones(3))           # the write happened
        assert_close(out, tp.full((3,), 2.0))
    assert old_compiled.captures == 2          # the stale graph was not used


def test_c13_wrong_fake_found_at_run_time_names_the_op_and_suggests_opcheck():
    @custom_op("tc_compile::t_contig", mutates_args=())
    def t_contig(x: tp.Tensor) -> tp.Tensor:
        return x.t().contiguous()

    @t_contig.register_fake
    def _(x):
        return x.new_empty(x.shape)

    f = tp.compile(lambda x: t_contig(x) * 2)
    with pytest.raises(CompileError) as ei:
        f(_x(2, 3))
    msg = str(ei.value)
    assert "tc_compile::t_contig" in msg and "opcheck" in msg and "(3, 2)" in msg
    assert "register_fake" in msg


# ------------------------------------------------------------------------------ testing.aot

def test_aot_check_passes_for_good_ops_and_never_mutates_the_sample():
    x = _x(4, 3, rg=True)
    before = x.detach().clone()
    assert aot.check(scale, (x, 2.0)) is None
    assert aot.check(cube, (x,)) is None
    assert aot.check("tc_compile::inc_", (x.detach().clone(),)) is None
    assert_close(x.detach(), before)
    assert x.grad is None


def test_aot_check_reports_a_fake_that_is_only_right_for_the_sample_shape():
    @custom_op("tc_compile::fixed_fake", mutates_args=())
    def fixed_fake(x: tp.Tensor) -> tp.Tensor:
        return x + 1

    @fixed_fake.register_fake
    def _(x):
        return x.new_empty((4, 3))     # right for the sample only

    msg = aot.check(fixed_fake, (_x(4, 3),))
    assert msg is not None and "tc_compile::fixed_fake" in msg
    assert "second input shape" in msg and "opcheck" in msg


def test_aot_check_reports_a_missing_fake():
    msg = aot.check(cpu_only, (_x(2, 2),))
    assert msg is not None and "tc_compile::cpu_only" in msg and "register_fake" in msg


def test_opcheck_runs_the_compile_check_by_default():
    from tensorplay.library import opcheck
    assert opcheck(cube, (_x(3, 2, rg=True),)) == {}
    bad = opcheck(cpu_only, (_x(2, 2),), raise_exception=False)
    assert "test_aot_dispatch_dynamic" in bad


W_GLOBAL = None


def test_rebinding_a_closed_over_or_global_tensor_recaptures():
    global W_GLOBAL
    w = _x(3, seed=1)
    W_GLOBAL = _x(3, seed=2)
    f = tp.compile(lambda x: x * w + W_GLOBAL)
    x = _x(3, seed=3)
    assert_close(f(x), x * w + W_GLOBAL)
    w = _x(3, seed=4)
    assert_close(f(x), x * w + W_GLOBAL)
    W_GLOBAL = _x(3, seed=5)
    assert_close(f(x), x * w + W_GLOBAL)
    assert f.captures == 3
    f(x)
    assert f.captures == 3


def test_sizes_0_and_1_are_specialised_like_torch():
    f = tp.compile(lambda x, y: x + y)
    f(_x(4, 3), _x(4, 3))
    f(_x(7, 3), _x(7, 3))
    assert f.captures == 1
    f(_x(1, 3), _x(4, 3))          # broadcasting now decided by a size-1 dimension
    assert f.captures == 2


def test_bad_arguments_to_compile():
    with pytest.raises(TypeError, match="expected a function"):
        tp.compile(3)
    with pytest.raises(TypeError, match="dynamic"):
        tp.compile(lambda x: x, dynamic="yes")
    f = tp.compile(lambda x: x * 2, fullgraph=True)
    assert tp.compile(f) is f
    assert_close(f(_x(2)), _x(2) * 2)


# ------------------------------------------------------------------------------ cuda

_CUDA_OK, _CUDA_WHY = tp.plugins.device_status("cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not _CUDA_OK, reason=f"no usable CUDA device: {_CUDA_WHY}")
def test_cuda_chain_is_one_fused_kernel_equal_to_eager_and_gradients_flow():
    """The chain runs as one kernel of the backend's fuser: a generated Triton kernel when
    tensorplay-triton is installed, else one CuPy ElementwiseKernel (the fused callable's
    ``engine``; ``last_engine`` says which one ran the call, so a silent fallback fails here)."""
    import importlib.util

    be = tp.backends.get("cuda")
    triton = (importlib.util.find_spec("triton") is not None and
              importlib.util.find_spec("tensorplay_triton") is not None)

    def f(x, y):
        a = ((x * y + 1.0) * 0.5 - y).relu()
        return (a + x).sigmoid().tanh() * 2.0

    cf = tp.compile(f)
    x, y = _x(1 << 20, seed=1).cuda(), _x(1 << 20, seed=2).cuda()
    out, ref = cf(x, y), f(x, y)
    if triton:      # generated kernel: its own exp/tanh spelling, float32-accurate
        assert_close(out, ref, rtol=2e-6, atol=2e-6)
    else:           # --fmad=false: the CuPy kernel rounds like the unfused ops
        assert_close(out, ref, rtol=0, atol=0)
    ch = cf.graph.groups[0]
    # compile's own record of the fuser it chose for the chain (private: which engine ran is not
    # part of any public result)
    from tensorplay import _fusion
    fused = _fusion.get_fused(ch, be)
    want = "triton" if triton else "cupy"
    assert (fused.engine, fused.last_engine, len(ch.nodes)) == (want, want, 9)
    assert (fused.triton is not None) is triton and fused.cupy is not None
    # bool values in the chain: the CuPy kernel does not cover them (generic fuser, op by op);
    # the Triton generator does (one kernel). Either way == eager
    g = tp.compile(lambda x, y: tp.where((x * 2.0) > y, x.exp(), y.abs() + 1.0))
    assert_close(g(x, y), tp.where((x * 2.0) > y, x.exp(), y.abs() + 1.0))
    assert len(g.graph.groups) == 1
    gf = _fusion.get_fused(g.graph.groups[0], be)
    want = "triton" if triton else "generic"
    assert (gf.engine, gf.last_engine) == (want, want) and gf.cupy is None
    xg, yg = x.detach().requires_grad_(True), y.detach().requires_grad_(True)
    cf(xg, yg).sum().backward()
    xe, ye = x.detach().requires_grad_(True), y.detach().requires_grad_(True)
    f(xe, ye).sum().backward()
    assert_close(xg.grad, xe.grad)
    assert_close(yg.grad, ye.grad)


def test_compiled_method_recaptures_when_a_tensor_attribute_is_rebound():
    class Lin:
        def __init__(self):
            self.w = _x(3, seed=1)

        @tp.compile
        def forward(self, x):
            return x * self.w

    m = Lin()
    x = _x(3, seed=2)
    assert_close(m.forward(x), x * m.w)
    m.w = _x(3, seed=3)
    assert_close(m.forward(x), x * m.w)
    m.w.mul_(2.0)                       # in-place updates need no recapture
    assert_close(m.forward(x), x * m.w)
    assert Lin.forward.captures == 2


# ------------------------------------------------------------------------------ guards on Python values

G_SCALE = 2.0
G_LIST = [2.0, 3.0]
G_DICT = {"k": 2.0}
G_CONST = 4.0          # never rebound: must not cause recaptures
G_OBJ = None


def test_global_scalar_is_guarded_and_a_changed_value_recaptures():
    global G_SCALE
    G_SCALE = 2.0
    try:
        f = tp.compile(lambda x: x * G_SCALE)
        assert_close(f(tp.ones(2)), tp.full((2,), 2.0))
        G_SCALE = 5.0
        assert_close(f(tp.ones(2)), tp.full((2,), 5.0))   # was stale [2.0] before the guard
        assert f.captures == 2
        G_SCALE = 2.0                                     # the first graph is still cached
        assert_close(f(tp.ones(2)), tp.full((2,), 2.0))
        assert f.captures == 2
        G_SCALE = 2                                       # int vs float: other result dtype
        out = f(tp.ones(2, dtype=tp.int64))
        assert out.dtype is tp.int64 and f.captures == 3
        G_SCALE = 2.0
        assert f(tp.ones(2, dtype=tp.int64)).dtype is tp.float32 and f.captures == 4
    finally:
        G_SCALE = 2.0


def test_closure_scalar_is_guarded():
    s = 3.0
    f = tp.compile(lambda x: x * s)
    assert_close(f(tp.ones(2)), tp.full((2,), 3.0))
    s = 4.0
    assert_close(f(tp.ones(2)), tp.full((2,), 4.0))
    assert f.captures == 2
    f(tp.ones(2))
    assert f.captures == 2


def test_global_list_element_and_dict_item_are_guarded_by_value():
    G_LIST[:] = [2.0, 3.0]
    G_DICT["k"] = 2.0
    try:
        f = tp.compile(lambda x: x * G_LIST[0] + G_DICT["k"])
        assert_close(f(tp.ones(2)), tp.full((2,), 4.0))
        G_LIST[0] = 7.0
        assert_close(f(tp.ones(2)), tp.full((2,), 9.0))
        G_DICT["k"] = -1.0
        assert_close(f(tp.ones(2)), tp.full((2,), 6.0))
        assert f.captures == 3
        f(tp.ones(2))
        assert f.captures == 3
    finally:
        G_LIST[:] = [2.0, 3.0]
        G_DICT["k"] = 2.0


def test_unchanged_module_constant_keeps_the_cache_hit():
    f = tp.compile(lambda x: (x * G_CONST).relu() + tp.ones(1))
    x = _x(5)
    for _ in range(5):
        assert_close(f(x), (x * G_CONST).relu() + 1.0)
    assert f.captures == 1 and f.cache_size == 1
    assert "G_CONST" in f._last.guard_source


def test_function_without_python_values_has_no_guard():
    f = tp.compile(lambda x: x * 2.0)
    f(_x(3))
    assert f._last.guard is None


def test_values_read_by_a_helper_and_attributes_are_guarded():
    class Cfg:
        pass

    global G_OBJ
    G_OBJ = Cfg()
    G_OBJ.k = 2.0

    def helper(x):
        return x * G_OBJ.k

    try:
        f = tp.compile(lambda x: helper(x) + 1.0)
        assert_close(f(tp.ones(2)), tp.full((2,), 3.0))
        G_OBJ.k = 3.0                     # attribute of a global object
        assert_close(f(tp.ones(2)), tp.full((2,), 4.0))
        assert f.captures == 2
    finally:
        G_OBJ = None


def test_scalar_attribute_of_a_compiled_method_is_guarded():
    class M:
        def __init__(self):
            self.k = 2.0

        @tp.compile
        def forward(self, x):
            return x * self.k

    m = M()
    assert_close(m.forward(tp.ones(2)), tp.full((2,), 2.0))
    m.k = 6.0
    assert_close(m.forward(tp.ones(2)), tp.full((2,), 6.0))
    assert M.forward.captures == 2


def test_values_the_function_itself_rewrites_make_it_run_eagerly():
    log = []

    @tp.compile
    def f(x):
        log.append(1)                     # a Python side effect: a graph would drop it
        return x + 1

    f(_x(3))
    f(_x(3))
    f(_x(3))
    assert f.captures == 1 and log == [1, 1, 1]      # captured once, then eager (graph break)
    assert "list.append" in next(iter(f.graph_skips.values()))
    f.reset()
    f(_x(3))
    assert f.captures == 2 and log == [1] * 4


def test_values_read_by_an_inlined_compiled_function_are_guarded():
    global G_SCALE
    G_SCALE = 2.0
    try:
        inner = tp.compile(lambda x: x * G_SCALE)
        outer = tp.compile(lambda x: inner(x) + 1.0)
        assert_close(outer(tp.ones(2)), tp.full((2,), 3.0))
        G_SCALE = 4.0
        assert_close(outer(tp.ones(2)), tp.full((2,), 5.0))
        assert outer.captures == 2 and inner.captures == 0
    finally:
        G_SCALE = 2.0
