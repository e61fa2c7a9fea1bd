"""Kernels registered at torch's autograd dispatch keys (``"Autograd"``, ``"AutogradCPU"``,
``"AutogradCUDA"``) through ``Library.impl``, ``library.impl`` and ``library.register_kernel``:
the function becomes the op's autograd entry (torch's "Extending torch.library" pattern: an
``autograd.Function`` whose forward calls the op below autograd -- with ``no_grad`` here,
fresh57/12), and ``CustomOpDef._opoverload`` (fresh57/19).

Each test gets its own namespace (fixture ``ns``); its ops are removed afterwards.
"""

from __future__ import annotations

import itertools

import pytest

import tensorplay as tp
import tensorplay.library as lib
from tensorplay.fake import FakeTensorMode
from tensorplay.library import Library
from tensorplay.testing import drop_ops

_count = itertools.count()
CUDA_OK, CUDA_WHY = tp.plugins.device_status("cuda")
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")


@pytest.fixture
def ns():
    name = f"tagk{next(_count)}"
    yield name
    drop_ops(name)


def _triple_fn(op, calls=None, k=3):
    """torch's documented pattern: an autograd.Function whose forward calls the op below
    autograd (tensorplay: Function.forward runs with grad mode off, which is below autograd);
    its backward scales by ``k`` (3: the right derivative of ``triple``)."""

    class TripleFn(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if calls is not None:
                calls.append(tp.is_grad_enabled())
            return op(x)

        @staticmethod
        def backward(ctx, g):
            return g * k

    return TripleFn


def _define_triple(ns, L):
    L.define("triple(Tensor x) -> Tensor")
    # a kernel autograd cannot see through (numpy): only the Autograd kernel gives a gradient
    L.impl("triple", lambda x: tp.from_numpy(x.detach().numpy() * 3), "CPU")
    return getattr(tp.ops, ns).triple


class TestAutogradKey:
    def test_fresh57_12_library_impl_autograd(self, ns):
        with Library(ns, "DEF") as L:
            op = _define_triple(ns, L)
            calls = []
            L.impl("triple", _triple_fn(op, calls).apply, "Autograd")
            x = tp.ones(2, requires_grad=True)
            y = op(x)
            assert y.requires_grad and y.grad_fn.name() == "TripleFnBackward"
            y.sum().backward()
            assert x.grad.tolist() == [3.0, 3.0]
            assert calls == [False]          # forward ran once, below autograd
        assert not hasattr(getattr(tp.ops, ns), "triple")

    def test_only_calls_that_record_use_it(self, ns):
        with Library(ns, "DEF") as L:
            op = _define_triple(ns, L)
            calls = []
            L.impl("triple", _triple_fn(op, calls).apply, "Autograd")
            assert op(tp.ones(2)).tolist() == [3.0, 3.0]       # no input requires grad
            with tp.no_grad():
                y = op(tp.ones(2, requires_grad=True))           # grad mode off
            assert not y.requires_grad and y.tolist() == [3.0, 3.0]
            assert calls == []

    def test_library_close_and_handle_restore_previous_autograd(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        lib.impl(op, "cpu", lambda x: x * 2)     # composite: autograd through x * 2
        x = tp.ones(1, requires_grad=True)
        L = Library(ns, "IMPL")
        L.impl("f", _triple_fn(op, k=10).apply, "Autograd")
        op(x).backward()
        assert x.grad.tolist() == [10.0]
        L.close()
        x.grad = None
        op(x).backward()
        assert x.grad.tolist() == [2.0]          # differentiated through the kernel again

    def test_per_device_key_only_for_that_device(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        lib.impl(op, "cpu", lambda x: x * 2)
        with Library(ns, "IMPL") as L:
            L.impl("f", lambda x: x * 20, "AutogradCUDA")
            # a cpu call does not see the cuda autograd kernel
            assert op(tp.ones(1, requires_grad=True)).tolist() == [2.0]
            L.impl("f", lambda x: x * 30, "Autograd")
            assert op(tp.ones(1, requires_grad=True)).tolist() == [30.0]
            L.impl("f", lambda x: x * 40, "AutogradCPU")   # the device's key wins over the alias
            assert op(tp.ones(1, requires_grad=True)).tolist() == [40.0]

    @pytest.mark.cuda
    @needs_cuda
    def test_per_device_key_on_cuda(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        lib.impl(op, ["cpu", "cuda"], lambda x: x * 2)
        with Library(ns, "IMPL") as L:
            L.impl("f", lambda x: x * 20, "AutogradCUDA")
            L.impl("f", lambda x: x * 30, "AutogradCPU")
            xc = tp.ones(1, device="cuda", requires_grad=True)
            assert op(xc).cpu().tolist() == [20.0]
            assert op(tp.ones(1, requires_grad=True)).tolist() == [30.0]
            # a 0-dim cpu tensor joins the cuda call: the cuda kernel
            assert op(xc * tp.tensor(1.0)).cpu().tolist() == [20.0]

    @pytest.mark.parametrize("form", ["impl", "impl_decorator", "register_kernel", "list"])
    def test_module_level_forms(self, ns, form):
        with Library(ns, "DEF") as L:
            op = _define_triple(ns, L)
            fn = _triple_fn(op).apply
            if form == "impl":
                lib.impl(f"{ns}::triple", "Autograd", fn, lib=L)
            elif form == "impl_decorator":
                lib.impl(f"{ns}::triple", "Autograd", lib=L)(fn)
            elif form == "register_kernel":
                lib.register_kernel(f"{ns}::triple", "Autograd", fn, lib=L)
            else:
                lib.impl(f"{ns}::triple", ["cpu", "AutogradCPU"], lambda x: x * 3, lib=L)
                lib.impl(f"{ns}::triple", ["AutogradCPU"], fn, lib=L)
            x = tp.ones(1, requires_grad=True)
            op(x).backward()
            assert x.grad.tolist() == [3.0]
        # the registration went with the library
        assert not hasattr(getattr(tp.ops, ns), "triple")

    def test_get_kernel(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        with Library(ns, "IMPL") as L:
            def k(x):
                return x
            L.impl("f", k, "Autograd")
            assert lib.get_kernel(op, "Autograd") is k
            assert op.autograd_kernels == {"Autograd": k}
            with pytest.raises(LookupError, match=r"no kernel registered for 'AutogradCPU' "
                                                  r"\(autograd keys registered: Autograd\)"):
                lib.get_kernel(op, "AutogradCPU")
        with pytest.raises(LookupError, match=r"autograd keys registered: none"):
            lib.get_kernel(op, "Autograd")

    def test_library_default_key(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        lib.impl(op, "cpu", lambda x: x * 2)
        with Library(ns, "IMPL", "Autograd") as L:
            L.impl("f", lambda x: x * 7)
            assert op(tp.ones(1, requires_grad=True)).tolist() == [7.0]
        assert op(tp.ones(1, requires_grad=True)).tolist() == [2.0]

    def test_errors(self, ns):
        op = lib.define(f"{ns}::f(Tensor x) -> Tensor")
        L = Library(ns, "IMPL")
        api = rf"^Library\('{ns}', 'IMPL'\).impl: "
        with pytest.raises(ValueError, match=api + r"'AutogradOther' is not an autograd key"):
            L.impl("f", lambda x: x, "AutogradOther")
        with pytest.raises(ValueError, match=r"'AutogradMeta' is not an autograd key"):
            lib.impl(op, "AutogradMeta", lambda x: x)
        with pytest.raises(ValueError, match=api + r"the autograd kernel .* requires parameter "
                                                   r"'z'"):
            L.impl("f", lambda x, z: x, "Autograd")
        with pytest.raises(ValueError, match=r"^impl\(.*\): expected a callable autograd kernel"):
            lib.impl(op, "Autograd", 3, lib=L)
        with pytest.raises(ValueError, match=r"'AutogradBogus' is not an autograd key"):
            Library(ns, "IMPL", "AutogradBogus")
        with pytest.raises(ValueError, match=r"built-in operator"):
            lib.impl("tp::add", "Autograd", lambda *a: None)
        # torch's CustomOpDef.register_kernel takes device types only
        with pytest.raises(ValueError):
            op.register_kernel("Autograd", lambda x: x)
        assert op.autograd_kernels == {}
        L.close()

    def test_fake_tensors_reach_it_and_forward_reaches_fake_kernel(self, ns):
        with Library(ns, "DEF") as L:
            op = _define_triple(ns, L)
            L.impl("triple", lambda x: tp.empty_like(x), "Meta")
            L.impl("triple", _triple_fn(op).apply, "Autograd")
            with FakeTensorMode():
                y = op(tp.ones(3, requires_grad=True))
            assert y.shape == (3,) and y.requires_grad

    def test_opcheck_checks_gradient_of_autograd_kernel(self, ns):
        with Library(ns, "DEF") as L:
            op = _define_triple(ns, L)
            L.impl("triple", _triple_fn(op).apply, "Autograd")
            x = tp.randn(3, dtype=tp.float64, requires_grad=True)
            assert lib.opcheck(op, (x,), test_utils=("test_autograd_registration",
                                                     "test_gradients")) == {}
            # a wrong backward (the op's derivative is 3) fails the gradient check
            L.impl("triple", _triple_fn(op, k=2).apply, "Autograd")
            res = lib.opcheck(op, (x,), test_utils="test_gradients", raise_exception=False)
            assert set(res) == {"test_gradients"}

    def test_compile_uses_it(self, ns):
        with Library(ns, "DEF") as L:
            op = _define_triple(ns, L)
            L.impl("triple", lambda x: tp.empty_like(x), "Meta")
            calls = []
            L.impl("triple", _triple_fn(op, calls).apply, "Autograd")
            f = tp.compile(lambda x: op(x * 1.0).sum())
            x = tp.ones(2, requires_grad=True)
            f(x).backward()
            assert x.grad.tolist() == [3.0, 3.0]
            assert calls        # the Autograd kernel ran (not a formula it does not have)

    def test_formula_shadowed_while_autograd_kernel_registered(self, ns):
        @lib.custom_op(f"{ns}::g", mutates_args=())
        def g(x: tp.Tensor) -> tp.Tensor:
            return x * 2

        g.register_autograd(lambda ctx, gr: gr * 2)
        with Library(ns, "IMPL") as L:
            L.impl("g", lambda x: x * 5, "Autograd")     # autograd through x * 5
            assert g.backward_fn is None and not g.has_autograd
            assert set(g.autograd_kernels) == {"Autograd"}
            x = tp.ones(1, requires_grad=True)
            g(x).backward()
            assert x.grad.tolist() == [5.0]
        assert g.has_autograd and g.autograd_kernels == {}
        x = tp.ones(1, requires_grad=True)
        g(x).backward()
        assert x.grad.tolist() == [2.0]


class TestOpOverload:
    def test_custom_op_opoverload_is_ops_default(self, ns):
        @lib.custom_op(f"{ns}::op", mutates_args=())
        def op(x: tp.Tensor, n: int = 2) -> tp.Tensor:
            return x * n

        assert op._opoverload is getattr(tp.ops, ns).op.default

    def test_redefined_handle_opoverload_is_current(self, ns):
        def make(k):
            @lib.custom_op(f"{ns}::op", mutates_args=())
            def op(x: tp.Tensor) -> tp.Tensor:
                return x * k
            return op

        old = make(2)
        new = make(3)
        assert old._opoverload is new._opoverload is getattr(tp.ops, ns).op.default

    def test_named_overload(self, ns):
        lib.define(f"{ns}::h(Tensor x) -> Tensor")
        lib.define(f"{ns}::h.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
        packet = getattr(tp.ops, ns).h
        assert packet.default._opoverload is packet.default
        assert packet.out._opoverload is packet.out
