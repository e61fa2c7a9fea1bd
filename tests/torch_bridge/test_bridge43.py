"""The bridge against session 42's review gaps, each checked against what a torch user gets from
``torch.library.custom_op`` and torch's own random ops:

1. ``torch.manual_seed(s)`` makes a bridged op tagged ``nondeterministic_seeded`` reproducible
   (TensorPlay's generator is seeded from torch's on each call): same seed, same numbers; two
   calls in a row, different numbers; torch's own ``fork_rng`` and activation checkpointing
   (which restore torch's generator for the recompute) reach it too;
2. an op without a formula that draws random numbers and is *not* tagged: where backward runs
   its body again (torch.compile, saved-tensor hooks, ``Tensor[]`` returns) the new draw is
   detected and refused naming the op and the fix, instead of a silently wrong gradient;
3. a ``register_autograd`` formula returning None for a tensor input: torch gets None (no
   gradient: ``x.grad`` stays None), as ``custom_op`` gives;
4. ``torch.compile(dynamic=True)``: recompiles per shape (strict xfail: needs the core, see the
   test);
5. bridged ops carry ``torch.Tag.pt2_compliant_tag`` where they have a fake rule (as
   ``custom_op`` ops do), and torch's opcheck passes on them.
"""

from __future__ import annotations

import pytest
import tensorplay as tp
import tensorplay_torch
import torch
from tensorplay import Tag, library

NS = "bridge43"


def _hooks():
    """Saved-tensor hooks: the bridge then takes its general (non-direct) path."""
    return torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


# -- ops --------------------------------------------------------------------------------------

# 1: seeded, with a kernel of its own (no formula, no body to differentiate)
@library.custom_op(f"{NS}::noise", mutates_args=(), tags=Tag.nondeterministic_seeded)
def noise(x: tp.Tensor) -> tp.Tensor:
    return x + tp.randn(*x.shape, dtype=x.dtype, device=x.device)


@noise.register_fake
def _(x):
    return x.new_empty(x.shape)


# 1: seeded, differentiated through its body (keep path eagerly)
@library.custom_op(f"{NS}::drop_body", mutates_args=(), tags=Tag.nondeterministic_seeded)
def drop_body(x: tp.Tensor) -> tp.Tensor:
    return x * (tp.rand(*x.shape, dtype=x.dtype, device=x.device) > 0.5).to(x.dtype) * 2.0


@drop_body.register_fake
def _(x):
    return x.new_empty(x.shape)


# 1: seeded, differentiated through its body, returning a list (its Function recomputes)
@library.custom_op(f"{NS}::drop_split", mutates_args=(), tags=Tag.nondeterministic_seeded)
def drop_split(x: tp.Tensor) -> list[tp.Tensor]:
    m = (tp.rand(*x.shape, dtype=x.dtype, device=x.device) > 0.5).to(x.dtype)
    return [x * m, x * (1.0 - m) * 3.0]


@drop_split.register_fake
def _(x):
    return [x.new_empty(x.shape), x.new_empty(x.shape)]


# 1: seeded, with a formula reading the output (direct path eagerly)
@library.custom_op(f"{NS}::drop", mutates_args=(), tags=Tag.nondeterministic_seeded)
def drop(x: tp.Tensor) -> tp.Tensor:
    return x * (tp.rand(*x.shape, dtype=x.dtype, device=x.device) > 0.5).to(x.dtype) * 2.0


@drop.register_fake
def _(x):
    return x.new_empty(x.shape)


def _drop_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _drop_backward(ctx, g):
    (out,) = ctx.saved_tensors
    return g * (out != 0).to(g.dtype) * 2.0


drop.register_autograd(_drop_backward, setup_context=_drop_setup)


# 2: draws random numbers, not tagged, no formula
@library.custom_op(f"{NS}::untagged_drop", mutates_args=())
def untagged_drop(x: tp.Tensor) -> tp.Tensor:
    return x * (tp.rand(*x.shape, dtype=x.dtype, device=x.device) > 0.5).to(x.dtype) * 2.0


@untagged_drop.register_fake
def _(x):
    return x.new_empty(x.shape)


@library.custom_op(f"{NS}::untagged_split", mutates_args=())
def untagged_split(x: tp.Tensor) -> list[tp.Tensor]:
    m = (tp.rand(*x.shape, dtype=x.dtype, device=x.device) > 0.5).to(x.dtype)
    return [x * m, x * (1.0 - m)]


@untagged_split.register_fake
def _(x):
    return [x.new_empty(x.shape), x.new_empty(x.shape)]


# 2: deterministic, no formula: recomputed in backward, never refused
@library.custom_op(f"{NS}::square_split", mutates_args=())
def square_split(x: tp.Tensor) -> list[tp.Tensor]:
    return [x * x, x * 3.0]


@square_split.register_fake
def _(x):
    return [x.new_empty(x.shape), x.new_empty(x.shape)]


@library.custom_op(f"{NS}::cube", mutates_args=())
def cube(x: tp.Tensor) -> tp.Tensor:
    return x * x * x


@cube.register_fake
def _(x):
    return x.new_empty(x.shape)


# 3: formulas returning None for a tensor input
@library.custom_op(f"{NS}::lerp_none", mutates_args=())
def lerp_none(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
    return x * 2.0 + y


@lerp_none.register_fake
def _(x, y):
    return x.new_empty(x.shape)


lerp_none.register_autograd(lambda ctx, g: (g * 2.0, None),
                            setup_context=lambda ctx, inputs, output: None)


@library.custom_op(f"{NS}::kw_none", mutates_args=())
def kw_none(x: tp.Tensor, *, y: tp.Tensor) -> tp.Tensor:
    return x * y


@kw_none.register_fake
def _(x, *, y):
    return x.new_empty(x.shape)


def _kw_none_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[1])


def _kw_none_backward(ctx, g):
    (y,) = ctx.saved_tensors
    return g * y, None


kw_none.register_autograd(_kw_none_backward, setup_context=_kw_none_setup)


@library.custom_op(f"{NS}::list_none", mutates_args=())
def list_none(xs: list[tp.Tensor]) -> tp.Tensor:
    return xs[0] * 2.0 + xs[1]


@list_none.register_fake
def _(xs):
    return xs[0].new_empty(xs[0].shape)


list_none.register_autograd(lambda ctx, g: ([g * 2.0, None],),
                            setup_context=lambda ctx, inputs, output: None)


@library.custom_op(f"{NS}::pair_none", mutates_args=())
def pair_none(x: tp.Tensor, y: tp.Tensor) -> list[tp.Tensor]:
    return [x * 2.0, y * 1.0]


@pair_none.register_fake
def _(x, y):
    return [x.new_empty(x.shape), y.new_empty(y.shape)]


pair_none.register_autograd(lambda ctx, g0, g1: (g0 * 2.0, None),
                            setup_context=lambda ctx, inputs, output: None)


# 5: a kernel of its own and no fake rule: nothing for torch.compile to trace with
@library.custom_op(f"{NS}::no_fake", mutates_args=(), device_types="cpu")
def no_fake(x: tp.Tensor) -> tp.Tensor:
    return tp.from_numpy(x.numpy() * 2.0)


tensorplay_torch.register(namespace=NS)
R = getattr(torch.ops, NS)


# -- 1. torch.manual_seed reaches bridged random ops -------------------------------------------

def _with_grad(f):
    def run(x):
        return f(x.clone().requires_grad_(True)).detach()
    return run


PATHS = {
    "kernel": lambda op: op,                                   # no grad: the op's kernel
    "formula": lambda op: _with_grad(op),                      # grad: direct / keep paths
    "hooks": lambda op: (lambda x: _hooks_call(op, x)),        # grad, the general path
}


def _hooks_call(op, x):
    with _hooks():
        return op(x.clone().requires_grad_(True)).detach()


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("name", ["noise", "drop_body", "drop"])
def test_manual_seed_makes_a_seeded_op_reproducible(name, path):
    """Before: TensorPlay's generator ignored torch's seed (two seeded runs differed)."""
    f = PATHS[path](getattr(R, name))
    x = torch.linspace(1.0, 2.0, 256, dtype=torch.float64)
    torch.manual_seed(0)
    a1, a2 = f(x), f(x)
    torch.manual_seed(0)
    b1, b2 = f(x), f(x)
    assert torch.equal(a1, b1) and torch.equal(a2, b2)
    assert not torch.equal(a1, a2)        # calls in a row draw new numbers (not correlated)
    torch.manual_seed(1)
    assert not torch.equal(f(x), a1)      # another seed, other numbers


def test_the_numbers_follow_torchs_generator_not_tensorplays():
    x = torch.zeros(64)
    tp.manual_seed(1)
    torch.manual_seed(3)
    a = R.noise(x)
    tp.manual_seed(2)
    torch.manual_seed(3)
    b = R.noise(x)
    assert torch.equal(a, b)
    # torch's own random ops between calls move the stream on, as for torch's ops
    torch.manual_seed(3)
    torch.rand(1)
    assert not torch.equal(R.noise(x), a)


def test_fork_rng_restores_the_stream():
    x = torch.zeros(64)
    torch.manual_seed(5)
    with torch.random.fork_rng():
        R.noise(x)
    after = R.noise(x)
    torch.manual_seed(5)
    assert torch.equal(R.noise(x), after)


def test_compiled_calls_are_reproducible_too():
    torch._dynamo.reset()
    f = torch.compile(lambda a: R.noise(a) * 1, fullgraph=True, backend="aot_eager")
    x = torch.zeros(32)
    torch.manual_seed(7)
    a = f(x)
    torch.manual_seed(7)
    assert torch.equal(f(x), a)
    assert not torch.equal(f(x), a)


def test_checkpoint_recompute_draws_the_forwards_numbers():
    """torch.utils.checkpoint restores torch's generator before it recomputes the forward:
    the op's recompute then draws what the forward drew, so the gradient is the forward's mask.
    Before: the recompute drew a new mask (a silently wrong gradient)."""
    from torch.utils.checkpoint import checkpoint

    for _ in range(3):
        x = torch.ones(128, dtype=torch.float64, requires_grad=True)
        y = checkpoint(lambda a: R.drop(a * 1.0), x, use_reentrant=False)
        y.sum().backward()
        torch.testing.assert_close(x.grad, y.detach())     # d(x * m * 2)/dx = m * 2 = y at 1


@pytest.mark.cuda
def test_manual_seed_reaches_a_seeded_op_on_cuda():
    """On cuda the seed comes from the device's cuda generator (its seed and Philox offset, no
    sync): torch.manual_seed and torch.cuda.manual_seed reach it, torch's cpu stream is left
    alone. (The GPU machine; skipped elsewhere.)"""
    if not torch.cuda.is_available():
        pytest.skip("torch has no cuda device here")
    ok, why = tp.plugins.device_status("cuda")
    if not ok:
        pytest.skip(f"TensorPlay's cuda device is unavailable: {why}")
    x = torch.zeros(256, device="cuda")
    torch.manual_seed(0)
    a1, a2 = R.noise(x), R.noise(x)
    torch.manual_seed(0)
    assert torch.equal(R.noise(x), a1) and not torch.equal(a1, a2)
    torch.cuda.manual_seed(0)
    assert torch.equal(R.noise(x), a1)
    cpu_state = torch.get_rng_state()
    R.noise(x)
    assert torch.equal(torch.get_rng_state(), cpu_state)


def _body_grad_is_the_forwards(x, y):
    torch.testing.assert_close(x.grad, y.detach())     # d(x * m * 2)/dx = m * 2 = y at x = 1


def test_a_seeded_body_run_again_under_hooks_draws_the_forwards_numbers():
    """Under saved-tensor hooks backward runs the body of a seeded op without a formula again:
    with the seed its forward drew with, so it draws the forward's mask. Before: refused."""
    for _ in range(3):
        x = torch.ones(128, dtype=torch.float64, requires_grad=True)
        with _hooks():
            y = R.drop_body(x)
        y.sum().backward()
        _body_grad_is_the_forwards(x, y)


def test_a_seeded_body_under_checkpoint_gets_the_forwards_gradient():
    from torch.utils.checkpoint import checkpoint

    for _ in range(3):
        x = torch.ones(128, dtype=torch.float64, requires_grad=True)
        y = checkpoint(lambda a: R.drop_body(a * 1.0), x, use_reentrant=False)
        y.sum().backward()
        _body_grad_is_the_forwards(x, y)


def test_a_seeded_body_returning_a_list_gets_the_forwards_gradient():
    """Tensor[] returns take the backward op's work even eagerly: the body runs again with the
    forward's seed. Before: refused."""
    for hooks in (False, True):
        x = torch.ones(128, dtype=torch.float64, requires_grad=True)
        with _hooks() if hooks else torch.enable_grad():
            a, b = R.drop_split(x)
        (a.sum() + b.sum()).backward()
        m = (a != 0).to(x.dtype)
        torch.testing.assert_close(x.grad, m + (1 - m) * 3.0)


def test_a_seeded_body_under_compile_is_still_refused():
    """The compiled backward has no forward seed to run the body with: refused, naming the op."""
    torch._dynamo.reset()
    f = torch.compile(lambda a: R.drop_body(a) * 1, fullgraph=True, backend="aot_eager")
    x = torch.ones(16, requires_grad=True)
    y = f(x)
    with pytest.raises(RuntimeError, match=rf"{NS}::drop_body.*nondeterministic_seeded.*"
                                           rf"register_autograd"):
        y.sum().backward()
    assert x.grad is None


class _CudaGeneratorStandIn:
    """What the bridge reads of a torch cuda generator (no GPU here): seed and Philox offset."""

    def __init__(self, seed):
        self.seed, self.offset = seed, 0

    def initial_seed(self):
        return self.seed

    def get_offset(self):
        return self.offset

    def set_offset(self, offset):
        self.offset = offset


def test_the_cuda_seed_comes_from_the_devices_generator_without_a_sync(monkeypatch):
    """The cuda side of the seeding, run without a GPU (private on purpose: the public path
    needs one; test_manual_seed_reaches_a_seeded_op_on_cuda runs it on the GPU machine): the
    seed is read from the device's generator (its seed and offset), the offset advances by 4 per
    call as one of torch's cuda random ops advances it, torch's cpu generator is not touched."""
    from tensorplay_torch import _seed

    gens = (_CudaGeneratorStandIn(11), _CudaGeneratorStandIn(11))
    monkeypatch.setattr(torch.cuda, "default_generators", gens, raising=False)
    cpu_state = torch.get_rng_state()
    first = [_seed.torch_seed(tp.device("cuda", 1)) for _ in range(3)]
    assert gens[1].offset == 12 and gens[0].offset == 0
    assert len(set(first)) == 3 and all(0 <= v < 2 ** 63 for v in first)
    gens[1].offset = 0                      # the same seed and offset: the same seeds again
    assert [_seed.torch_seed(tp.device("cuda", 1)) for _ in range(3)] == first
    assert _seed.torch_seed(tp.device("cuda", 0)) == first[0]   # device 0: same seed, offset 0
    gens[0].seed, gens[0].offset = 12, 0
    assert _seed.torch_seed(tp.device("cuda", 0)) != first[0]   # another seed, another stream
    assert torch.equal(torch.get_rng_state(), cpu_state)


# -- 2. an untagged op drawing random numbers, recomputed in backward ---------------------------

def _refused(name):
    return (rf"{NS}::{name} \(pack test_bridge43\).*draws random numbers.*"
            rf"nondeterministic_seeded.*register_autograd")


def test_an_untagged_random_op_under_hooks_is_refused_not_silently_wrong():
    """Before: backward ran the body again, drew a new mask and returned its gradient."""
    x = torch.ones(64, requires_grad=True)
    with _hooks():
        y = R.untagged_drop(x)
    with pytest.raises(RuntimeError, match=_refused("untagged_drop")):
        y.sum().backward()
    assert x.grad is None


def test_an_untagged_random_op_under_compile_is_refused_not_silently_wrong():
    torch._dynamo.reset()
    f = torch.compile(lambda a: R.untagged_drop(a) * 1, fullgraph=True, backend="aot_eager")
    x = torch.ones(64, requires_grad=True)
    y = f(x)
    with pytest.raises(RuntimeError, match=_refused("untagged_drop")):
        y.sum().backward()
    assert x.grad is None


def test_an_untagged_random_op_returning_a_list_is_refused_eagerly():
    """Tensor[] returns take the backward op even eagerly: the recompute is refused there."""
    x = torch.ones(64, requires_grad=True)
    a, b = R.untagged_split(x)
    with pytest.raises(RuntimeError, match=_refused("untagged_split")):
        (a.sum() + 2 * b.sum()).backward()


def test_an_untagged_random_op_eagerly_keeps_the_forwards_gradient():
    """The plain eager path keeps the forward's graph: no recompute, nothing to refuse."""
    x = torch.ones(64, requires_grad=True)
    y = R.untagged_drop(x)
    y.sum().backward()
    torch.testing.assert_close(x.grad, y.detach())


@pytest.mark.parametrize("how", ["hooks", "compile", "eager"])
def test_deterministic_bodies_recomputed_in_backward_are_not_refused(how):
    x = torch.linspace(0.5, 1.5, 16, dtype=torch.float64, requires_grad=True)
    if how == "hooks":
        with _hooks():
            y = R.cube(x)
            a, b = R.square_split(x)
    elif how == "compile":
        torch._dynamo.reset()
        y = torch.compile(R.cube, fullgraph=True, backend="aot_eager")(x)
        a, b = torch.compile(R.square_split, fullgraph=True, backend="aot_eager")(x)
    else:
        y = R.cube(x)
        a, b = R.square_split(x)
    (y.sum() + a.sum() + b.sum()).backward()
    xd = x.detach()
    torch.testing.assert_close(x.grad, 3 * xd * xd + 2 * xd + 3)


# -- 3. a formula returning None for a tensor input ----------------------------------------------

def _native_none():
    """torch's own answer: a custom_op whose formula returns None for ``y``."""
    @torch.library.custom_op(f"{NS}_native::lerp_none", mutates_args=())
    def native(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * 2.0 + y

    native.register_fake(lambda x, y: torch.empty_like(x))
    native.register_autograd(lambda ctx, g: (g * 2.0, None))
    return native


NATIVE = _native_none()


@pytest.mark.parametrize("path", ["eager", "hooks"])
def test_a_none_gradient_leaves_grad_none_as_custom_op_does(path):
    """Before: the bridge handed torch zeros (``y.grad`` was a zero tensor, not None)."""
    got = {}
    for name, op in (("native", NATIVE), ("bridged", R.lerp_none)):
        x = torch.ones(3, requires_grad=True)
        y = torch.ones(3, requires_grad=True)
        if path == "hooks":
            with _hooks():
                out = op(x, y)
        else:
            out = op(x, y)
        out.sum().backward()
        got[name] = (x.grad, y.grad)
    assert got["native"][1] is None
    assert got["bridged"][1] is None
    torch.testing.assert_close(got["bridged"][0], got["native"][0])


def test_a_none_gradient_through_autograd_grad_is_none_with_allow_unused():
    x = torch.ones(3, requires_grad=True)
    y = torch.ones(3, requires_grad=True)
    gx, gy = torch.autograd.grad(R.lerp_none(x, y).sum(), (x, y), allow_unused=True)
    assert gy is None and torch.equal(gx, torch.full((3,), 2.0))
    gx, gy = torch.autograd.grad(NATIVE(x, y).sum(), (x, y), allow_unused=True)
    assert gy is None


def test_a_none_gradient_adds_nothing_to_another_path():
    x = torch.ones(3, requires_grad=True)
    y = torch.ones(3, requires_grad=True)
    (R.lerp_none(x, y).sum() + (y * 5).sum()).backward()
    assert torch.equal(y.grad, torch.full((3,), 5.0))


@pytest.mark.parametrize("path", ["eager", "hooks"])
def test_none_gradients_of_keyword_list_and_list_return_ops(path):
    x = torch.ones(3, requires_grad=True)
    y = torch.full((3,), 4.0, requires_grad=True)
    a = torch.ones(3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    p = torch.ones(3, requires_grad=True)
    q = torch.ones(3, requires_grad=True)
    ctx = _hooks() if path == "hooks" else torch.enable_grad()
    with ctx:
        total = R.kw_none(x, y=y).sum() + R.list_none([a, b]).sum()
        u, v = R.pair_none(p, q)
        total = total + u.sum() + v.sum()
    total.backward()
    assert torch.equal(x.grad, y.detach()) and y.grad is None
    assert torch.equal(a.grad, torch.full((3,), 2.0)) and b.grad is None
    assert torch.equal(p.grad, torch.full((3,), 2.0)) and q.grad is None


def test_a_none_gradient_under_compile_matches_custom_op():
    torch._dynamo.reset()
    got = {}
    for name, op in (("native", NATIVE), ("bridged", R.lerp_none)):
        f = torch.compile(lambda a, b: op(a, b) * 1, fullgraph=True, backend="aot_eager")
        x = torch.ones(3, requires_grad=True)
        y = torch.ones(3, requires_grad=True)
        f(x, y).sum().backward()
        got[name] = (x.grad, y.grad)
    assert got["native"][1] is None
    assert got["bridged"][1] is None
    torch.testing.assert_close(got["bridged"][0], got["native"][0])


# -- 4. torch.compile(dynamic=True) -------------------------------------------------------------

@pytest.mark.xfail(strict=True, reason=(
    "needs the core: tensorplay.fake.make_fake (and the factories' size_ints) turn each size "
    "into a Python int, so the bridge's fake specialises torch's symbolic sizes (a guard per "
    "shape). See the bridge's guide, Limits."))
def test_dynamic_compile_does_not_recompile_per_shape():
    from torch._dynamo.utils import counters

    tensorplay_torch.register(namespace="example")
    torch._dynamo.reset()
    counters.clear()
    f = torch.compile(lambda a: torch.ops.example.gelu(a) * 2, dynamic=True,
                      backend="aot_eager")
    for n in (3, 5, 7, 9):
        f(torch.randn(n, 8))
    assert counters["stats"]["unique_graphs"] == 1


# -- 5. pt2_compliant_tag ------------------------------------------------------------------------

def test_ops_with_a_fake_rule_are_tagged_pt2_compliant_as_custom_op_ops_are():
    """Before: bridged ops carried only their pack's tags (custom_op ops always carry it)."""
    assert torch.Tag.pt2_compliant_tag in NATIVE._opoverload.tags
    for name in ("drop", "cube", "lerp_none", "kw_none", "list_none", "pair_none",
                 "untagged_drop", "square_split"):
        tags = getattr(R, name).default.tags
        assert torch.Tag.pt2_compliant_tag in tags, name
    assert torch.Tag.nondeterministic_seeded in R.drop.default.tags    # the pack's kept


def test_an_op_without_a_fake_rule_is_not_tagged():
    assert torch.Tag.pt2_compliant_tag not in R.no_fake.default.tags
    assert torch.equal(R.no_fake(torch.ones(2)), torch.full((2,), 2.0))


@pytest.mark.parametrize("name", ["noise", "drop_body", "drop_split"])
def test_a_seeded_op_differentiated_through_its_body_is_not_tagged(name):
    """Its compiled backward is refused (no forward seed to run the body with): torch's opcheck
    fails with inputs requiring grad, so the op does not claim pt2 compliance; without grad
    opcheck passes."""
    op = getattr(R, name).default
    assert torch.Tag.pt2_compliant_tag not in op.tags
    torch.library.opcheck(op, (torch.randn(8, dtype=torch.float64),))
    with pytest.raises(Exception, match="nondeterministic_seeded"):
        torch.library.opcheck(op, (torch.randn(8, dtype=torch.float64, requires_grad=True),))


def test_a_seeded_op_with_a_formula_is_tagged_and_passes_opcheck_with_grad():
    op = R.drop.default
    assert torch.Tag.pt2_compliant_tag in op.tags
    torch.library.opcheck(op, (torch.randn(8, dtype=torch.float64, requires_grad=True),))


@pytest.mark.parametrize("name", ["cube", "lerp_none", "kw_none", "list_none", "pair_none",
                                  "square_split"])
def test_tagged_ops_pass_torchs_opcheck(name):
    op = getattr(R, name).default
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, dtype=torch.float64, requires_grad=True)
    args, kwargs = {"cube": ((x,), {}), "lerp_none": ((x, y), {}), "kw_none": ((x,), {"y": y}),
                    "list_none": (([x, y],), {}), "pair_none": ((x, y), {}),
                    "square_split": ((x,), {})}[name]
    assert torch.Tag.pt2_compliant_tag in op.tags
    torch.library.opcheck(op, args, kwargs)


def test_the_example_packs_ops_are_tagged_and_pass_opcheck_on_their_samples():
    tensorplay_torch.register(namespace="example")
    for name in ("gelu", "rms_norm", "softmax_rows", "weighted_sum"):
        op = getattr(torch.ops.example, name).default
        assert torch.Tag.pt2_compliant_tag in op.tags, name
        for sample in tp.plugins.sample_inputs(getattr(tp.ops.example, name), "cpu"):
            args = [tensorplay_torch.to_torch(a) if isinstance(a, tp.Tensor) else a
                    for a in sample.args]
            torch.library.opcheck(op, tuple(args), dict(sample.kwargs))

