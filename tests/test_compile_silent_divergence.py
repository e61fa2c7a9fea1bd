"""Code whose compiled run would silently differ from eager is refused with ``CompileError``
(found by a new user's review; each test failed before the fix with a wrong result or gradient):

* an ``autograd.Function`` applied to an input that requires grad inside the compiled function:
  its forward ran under no_grad and its backward was not captured (wrong gradients);
* ``Tensor.register_hook`` inside the compiled function: the hook was dropped (wrong gradients);
* the function's own ``try/except`` catching the error raised for data-dependent Python: the
  captured graph followed the ``except`` branch, which eager code does not take (wrong values).
  Data-dependent Python is now a graph break: the function runs eagerly (eager's values, the
  reason in ``graph_skips``), and ``fullgraph=True`` raises; never the ``except`` branch baked in.
"""

from __future__ import annotations

import pytest

import tensorplay as tp
from tensorplay.autograd import Function
from tensorplay.errors import CompileError, DispatchError, GraphBreak

pytestmark = pytest.mark.usefixtures("cpu")


class _STE(Function):
    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, g):
        return g


def _ste_loss(x):
    return (_STE.apply(x) * x).sum()


def test_autograd_function_needing_grad_inside_compile_runs_eagerly():
    # torch's graph break (a fresh user's finding, session 57: it was refused): without
    # fullgraph the function runs eagerly, its custom backward counts, the reason is kept
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    _ste_loss(x).backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]          # eager: the custom backward counts
    c = tp.compile(_ste_loss)
    for _ in range(2):
        x.grad = None
        c(x).backward()
        assert x.grad.tolist() == [2.0, 4.0, 6.0]
    assert any("autograd.Function _STE.apply" in r for r in c.graph_skips.values())
    with pytest.raises(CompileError, match=r"autograd.Function _STE.apply .*requires grad.*"
                                           r"fullgraph=True.*register_autograd"):
        tp.compile(_ste_loss, fullgraph=True)(x)


def test_autograd_function_without_grad_compiles_as_before():
    x = tp.tensor([1.2, 2.0, 3.0], requires_grad=True)
    with tp.no_grad():
        assert tp.compile(_ste_loss)(x).item() == pytest.approx(1.2 + 4.0 + 9.0)
    y = tp.tensor([1.2, 2.0, 3.0])
    assert tp.compile(_ste_loss)(y).item() == pytest.approx(1.2 + 4.0 + 9.0)


@pytest.mark.parametrize("on", ["result", "input"])
def test_register_hook_inside_compile_is_refused(on):
    def f(x):
        y = x * 2
        (y if on == "result" else x).register_hook(lambda g: g * 10)
        return y.sum()

    x = tp.ones(2, requires_grad=True)
    f(x).backward()
    assert x.grad.tolist() == [20.0, 20.0]
    with pytest.raises(CompileError, match=r"register_hook\(\) was called inside the compiled"):
        tp.compile(f)(tp.ones(2, requires_grad=True))


def test_hooks_registered_outside_still_work():
    x = tp.ones(2, requires_grad=True)
    x.register_hook(lambda g: g * 10)
    tp.compile(lambda x: (x * 2).sum())(x).backward()
    assert x.grad.tolist() == [20.0, 20.0]


@pytest.mark.parametrize("read", ["float", "int", "if", "item"])
def test_caught_data_dependent_read_is_a_graph_break_never_the_except_branch(read):
    def f(x):
        try:
            if read == "float":
                m = float(x.abs().max())
            elif read == "int":
                m = int(x.sum()) or 1
            elif read == "item":
                m = x.max().item()
            else:
                m = 2.0 if x.sum() > 0 else 1.0
        except Exception:          # noqa: BLE001 - the user's code under test
            m = 1.0
        return x / m

    x = tp.tensor([2.0, 4.0])
    eager = f(x).tolist()
    assert eager != x.tolist()      # the except branch (x / 1.0) would be visibly wrong
    # the default: a graph break, eager's values on this call and later ones (new values too)
    c = tp.compile(f)
    assert c(x).tolist() == eager
    y = tp.tensor([-3.0, 1.0, 5.0])
    assert c(y).tolist() == f(y).tolist()
    (reason,) = c.graph_skips.values()
    assert reason.startswith("runs eagerly: ")
    assert "caught the error raised when it read a tensor's values" in reason, reason
    # fullgraph=True: refused, naming the caught read
    with pytest.raises(GraphBreak, match=r"caught the error raised when it read a tensor's "
                                          r"values") as ei:
        tp.compile(f, fullgraph=True)(x)
    assert isinstance(ei.value, CompileError)
    assert isinstance(ei.value.__cause__, DispatchError)


def test_uncaught_data_dependent_read_under_fullgraph_is_still_the_dispatch_error():
    def f(x):
        return x / float(x.max())

    with pytest.raises(DispatchError, match=r"float\(tensor\)"):
        tp.compile(f, fullgraph=True)(tp.tensor([2.0, 4.0]))
    # without fullgraph=True: a graph break, eager's result
    c = tp.compile(f)
    x = tp.tensor([2.0, 4.0])
    assert c(x).tolist() == f(x).tolist()
    assert all(r.startswith("runs eagerly: ") for r in c.graph_skips.values()) and c.graph_skips


def test_a_kernel_reading_native_without_a_fake_is_told_to_register_one():
    # run as its own fake (no register_fake), a kernel reading ``x.native`` gets None: the error
    # is about the missing fake kernel, not "an error of the kernel itself" (eager works)
    import numpy as np

    from tensorplay import library
    from tensorplay.testing import drop_ops

    @library.custom_op("cgnative::mysin", mutates_args=())
    def mysin(x: tp.Tensor) -> tp.Tensor:
        return tp.from_numpy(np.sin(x.native))

    try:
        assert mysin(tp.zeros(3)).tolist() == [0.0] * 3
        with pytest.raises(CompileError, match=r"has no fake kernel .*Register one"):
            tp.compile(lambda x: mysin(x) * 2)(tp.ones(3))
    finally:
        drop_ops("cgnative")
