"""Faults a fresh-user review found, each against what ``torch.library.custom_op`` does for the
same op: mutating ops under autograd (refused, never a silently missing gradient), outputs that
alias an input where the schema declares none (refused at call time), error messages that name
the real cause, unknown namespaces in a list, in-place writes to inference tensors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import tensorplay as tp
import tensorplay_torch
import torch
from tensorplay import library

# -- ops defined here (namespace "bridgereview") ----------------------------------------------


@library.custom_op("bridgereview::double_and_log_", mutates_args=("log",))
def double_and_log_(x: tp.Tensor, log: tp.Tensor) -> tp.Tensor:
    log.add_(1)
    return x * 2


@double_and_log_.register_fake
def _(x, log):
    return x.new_empty(x.shape)


@library.custom_op("bridgereview::scaled_into_", mutates_args=("out",))
def scaled_into_(x: tp.Tensor, out: tp.Tensor) -> None:
    out.copy_(x * 3)


@library.custom_op("bridgereview::pair_and_log_", mutates_args=("log",))
def pair_and_log_(x: tp.Tensor, log: tp.Tensor) -> tuple[tp.Tensor, tp.Tensor]:
    log.add_(1)
    return x * 2, x * 3


@pair_and_log_.register_fake
def _(x, log):
    return x.new_empty(x.shape), x.new_empty(x.shape)


# writes its first argument and returns it (declared: Tensor(a!) -> Tensor(a!))
library.define("bridgereview::add_into_", "(Tensor(a!) out, Tensor x) -> Tensor(a!)")


@library.impl("bridgereview::add_into_", "default")
def _(out, x):
    out.add_(x)
    return out


@library.custom_op("bridgereview::ident", mutates_args=())
def ident(x: tp.Tensor) -> tp.Tensor:
    return x


@ident.register_fake
def _(x):
    return x.new_empty(x.shape)


@library.custom_op("bridgereview::tail_view", mutates_args=())
def tail_view(x: tp.Tensor) -> tp.Tensor:
    return x[1:]


@tail_view.register_fake
def _(x):
    return x.new_empty((x.shape[0] - 1, *x.shape[1:]))


@library.custom_op("bridgereview::scaled_ident", mutates_args=())
def scaled_ident(x: tp.Tensor, a: float) -> tp.Tensor:
    return x


@scaled_ident.register_fake
def _(x, a):
    return x.new_empty(x.shape)


scaled_ident.register_autograd(lambda ctx, g: (g, None))


@library.custom_op("bridgereview::pair_one_alias", mutates_args=())
def pair_one_alias(x: tp.Tensor) -> tuple[tp.Tensor, tp.Tensor]:
    return x * 2, x


@pair_one_alias.register_fake
def _(x):
    return x.new_empty(x.shape), x.new_empty(x.shape)


# declares its output a view of its input: returning one is allowed
library.define("bridgereview::declared_view", "(Tensor(a) x) -> Tensor(a)")


@library.impl("bridgereview::declared_view", "default")
def _(x):
    return x[1:]


# composite (no formula): differentiated through its body by TensorPlay's autograd
library.define("bridgereview::cube", "(Tensor x) -> Tensor")
library.impl("bridgereview::cube", "default", lambda x: x * x * x)

tensorplay_torch.register(namespace="bridgereview")
R = torch.ops.bridgereview


def _leaf(*shape):
    return torch.randn(*shape, dtype=torch.float64, requires_grad=True)


# -- 1. mutating ops under autograd ------------------------------------------------------------

def test_a_mutating_op_returning_a_tensor_refuses_backward_naming_op_and_pack():
    """torch's custom_op: the output requires grad and backward raises (no formula). The bridge
    had no Autograd kernel: backward ran and x.grad stayed None, silently."""
    x, log = _leaf(3), torch.zeros(1)
    v = log._version
    y = R.double_and_log_(x, log)
    torch.testing.assert_close(y, 2 * x.detach())
    assert log.tolist() == [1.0] and log._version > v
    assert y.requires_grad
    with pytest.raises(RuntimeError, match=r"bridgereview::double_and_log_ \(pack "
                                           r"test_bridge_review\).*mutates"):
        y.sum().backward()
    assert x.grad is None
    with torch.no_grad():                    # without grad: runs, nothing to refuse
        assert not R.double_and_log_(x, log).requires_grad
    assert log.tolist() == [2.0]


def test_torchs_opcheck_of_a_mutating_op_with_grad_inputs_fails_as_for_torchs_custom_op():
    with pytest.raises(Exception, match="bridgereview::double_and_log_"):
        torch.library.opcheck(R.double_and_log_.default, (_leaf(3), torch.zeros(1)))
    # without inputs requiring grad there is nothing to differentiate: every test passes
    torch.library.opcheck(R.double_and_log_.default, (torch.randn(3), torch.zeros(1)))


def test_mutating_ops_neighbours_tuple_none_and_returned_argument():
    x = _leaf(3)
    a, b = R.pair_and_log_(x, torch.zeros(1))         # tuple return, a mutated argument
    assert a.requires_grad and b.requires_grad
    with pytest.raises(RuntimeError, match="bridgereview::pair_and_log_.*mutates"):
        b.sum().backward()
    out = torch.zeros(3, dtype=torch.float64)
    assert R.scaled_into_(x, out) is None                # returns nothing: nothing to refuse
    torch.testing.assert_close(out, 3 * x.detach())
    out = torch.zeros(3, dtype=torch.float64)
    r = R.add_into_(out, x)                              # returns the argument it writes
    torch.testing.assert_close(out, x.detach())
    assert r.data_ptr() == out.data_ptr() and r.requires_grad
    with pytest.raises(RuntimeError, match="bridgereview::add_into_.*mutates"):
        r.sum().backward()


def test_a_written_argument_requiring_grad_gets_a_history_whose_backward_raises():
    """torch's custom_op leaves the written tensor's history as it was, so the gradient through
    it is silently wrong (here: ones for w, the op having tripled it); the bridge rebases that
    history onto the op's node, whose backward raises naming the op."""
    w = _leaf(3)
    a = w * 1
    R.scaled_into_(torch.ones(3, dtype=torch.float64), a)
    assert a.tolist() == [3.0, 3.0, 3.0] and a.requires_grad
    with pytest.raises(RuntimeError, match=r"bridgereview::scaled_into_.*mutates"):
        a.sum().backward()
    assert w.grad is None
    b = w * 1                                             # a tuple return and a written tensor
    y, z = R.pair_and_log_(torch.ones(3, dtype=torch.float64), b[:1])
    assert y.requires_grad and b.requires_grad
    with pytest.raises(RuntimeError, match=r"bridgereview::pair_and_log_.*mutates"):
        b.sum().backward()
    # a leaf requiring grad is refused before anything is written, as torch's in-place ops do
    with pytest.raises(RuntimeError, match=r"bridgereview::scaled_into_.*leaf Variable"):
        R.scaled_into_(torch.ones(3, dtype=torch.float64), w)
    w0 = w.detach().clone()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        R.scaled_into_(torch.ones(3, dtype=torch.float64), w)
    assert torch.equal(w.detach(), w0)
    with torch.no_grad():
        R.scaled_into_(torch.ones(3, dtype=torch.float64), a)


def test_a_mutating_op_still_compiles():
    def f(x, log):
        return R.double_and_log_(x, log) + 1

    x, log = torch.randn(3), torch.zeros(1)
    torch._dynamo.reset()
    out = torch.compile(f, fullgraph=True, backend="aot_eager")(x, log)
    torch.testing.assert_close(out, 2 * x + 1)
    assert log.tolist() == [1.0]


# -- 2. outputs aliasing inputs ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["ident", "tail_view", "pair_one_alias"])
def test_an_output_sharing_an_inputs_memory_without_alias_annotation_is_refused(name):
    """torch's custom_op raises at call time ("may not alias any inputs"); the bridge passed the
    alias to torch (eager and torch.compile then disagree)."""
    op = getattr(R, name)
    with pytest.raises(RuntimeError, match=rf"bridgereview::{name} \(pack test_bridge_review\)"
                                           r".*aliases input 'x'.*copy"):
        op(torch.zeros(3))
    with pytest.raises(Exception, match=rf"bridgereview::{name}"):
        torch.library.opcheck(op.default, (torch.randn(3),))


def test_an_aliasing_output_is_refused_with_grad_too():
    with pytest.raises(RuntimeError, match=r"bridgereview::scaled_ident.*aliases input 'x'"):
        R.scaled_ident(_leaf(3), 2.0)
    with pytest.raises(RuntimeError, match=r"bridgereview::ident.*aliases input 'x'"):
        R.ident(_leaf(3))


def test_a_declared_alias_is_allowed():
    x = torch.arange(4.0)
    y = R.declared_view(x)
    assert y.tolist() == [1.0, 2.0, 3.0] and y.data_ptr() == x[1:].data_ptr()


# -- 3. batched gradients ----------------------------------------------------------------------

def test_batched_gradients_name_the_real_cause_not_a_missing_plugin():
    tensorplay_torch.register(namespace="example")
    x = torch.randn(3, 5, requires_grad=True)
    w = torch.randn(5)
    y = torch.ops.example.rms_norm(x, w)
    with pytest.raises(RuntimeError) as e:
        torch.autograd.grad(y, x, torch.randn(2, 3, 5), is_grads_batched=True)
    msg = str(e.value)
    assert "example::rms_norm" in msg and "batched" in msg and "functorch" in msg
    assert "installed" not in msg


# -- 4. double backward message ----------------------------------------------------------------

def test_double_backward_refusal_of_a_composite_op_says_how_it_was_differentiated():
    x = _leaf(3)
    (gx,) = torch.autograd.grad(R.cube(x).sum(), x, create_graph=True)
    torch.testing.assert_close(gx, 3 * x.detach() ** 2)
    with pytest.raises(RuntimeError, match="bridgereview::cube.*double backward") as e:
        torch.autograd.grad(gx.sum(), x)
    assert "formula runs in TensorPlay" not in str(e.value)
    assert "no register_autograd formula" in str(e.value) and "body" in str(e.value)


# -- 5. unknown namespaces in a list -----------------------------------------------------------

def test_an_unknown_namespace_in_a_list_is_named_and_the_known_ones_are_registered():
    library.define("bridgereview2::twice", "(Tensor x) -> Tensor")
    library.impl("bridgereview2::twice", "default", lambda x: x * 2)
    with pytest.raises(tensorplay_torch.BridgeError, match="typo_ns") as e:
        tensorplay_torch.register(namespace=["bridgereview2", "typo_ns"])
    assert "bridgereview2::twice" in e.value.bridged
    assert "bridgereview2::twice" in tensorplay_torch.bridged_ops()
    assert torch.ops.bridgereview2.twice(torch.ones(2)).tolist() == [2.0, 2.0]


def test_an_unknown_namespace_in_the_autoload_list_warns_at_import_torch():
    e = {k: v for k, v in os.environ.items() if k != "TENSORPLAY_TORCH_AUTOLOAD"}
    e["TENSORPLAY_TORCH_AUTOLOAD"] = "example,typo_ns"
    code = "import torch; print(hasattr(torch.ops.example, 'rms_norm'))"
    p = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True,
                       text=True, env=e, timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "True"
    assert "typo_ns" in p.stderr and "RuntimeWarning" in p.stderr


# -- 6. in-place writes to inference tensors ---------------------------------------------------

def test_a_mutating_op_on_an_inference_tensor_outside_inference_mode_is_refused_as_torch_does():
    with torch.inference_mode():
        out = torch.zeros(3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside "
                                           "InferenceMode"):
        R.scaled_into_(torch.ones(3), out)
    assert out.tolist() == [0.0, 0.0, 0.0]
    with torch.inference_mode():
        R.scaled_into_(torch.ones(3), out)
    assert out.tolist() == [3.0, 3.0, 3.0]


# -- 7. list[Tensor] returns with autograd -----------------------------------------------------

def test_list_returns_with_autograd_are_bridged():
    # in a child process: an op that fails to bridge would fail every later register() here.
    # (Was refused as "a limit of the bridge"; tests/torch_bridge/test_bridge_list_returns.py
    # checks these ops in full.)
    code = """if True:
        import tensorplay as tp, tensorplay_torch, torch
        from tensorplay import library

        @library.custom_op("bridgereview3::chunks", mutates_args=())
        def chunks(x: tp.Tensor, n: int) -> list[tp.Tensor]:
            return [x * i for i in range(n)]

        chunks.register_autograd(lambda ctx, *grads: (sum(g * i for i, g in enumerate(grads)),
                                                      None))
        print(tensorplay_torch.register(namespace="bridgereview3"))
        x = torch.ones(2, requires_grad=True)
        out = torch.ops.bridgereview3.chunks(x, 3)
        out[2].sum().backward()
        print(type(out).__name__, len(out), x.grad.tolist())
        """
    e = {k: v for k, v in os.environ.items() if k != "TENSORPLAY_TORCH_AUTOLOAD"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-2:] == ["['bridgereview3::chunks']", "list 3 [2.0, 2.0]"]
