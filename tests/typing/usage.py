"""Typed use of the public API, checked by mypy and pyright (tests/test_typing.py): 0 errors.

Not collected by pytest (no ``test_`` names); it also runs as a script, so every line here is
real, working code. The ``assert_type`` lines pin what the checkers infer: an op made by
``custom_op`` is called with the decorated function's own parameters and returns its type.
"""

from __future__ import annotations

from typing import Any, Callable

from typing_extensions import assert_type

import tensorplay as tp
from tensorplay import library
from tensorplay.library import CustomOpDef, Library


# ---- custom_op as a decorator: the op keeps the function's signature -------------------------
@library.custom_op("typing_usage::weighted_sum", mutates_args=())
def weighted_sum(x: tp.Tensor, w: float, *, bias: float = 0.0) -> tp.Tensor:
    return x * w + bias




@weighted_sum.register_fake
def _(x: tp.Tensor, w: float, *, bias: float = 0.0) -> tp.Tensor:
    return x.new_empty(x.shape)


def _setup(ctx: Any, inputs: tuple[Any, ...], output: tp.Tensor) -> None:
    ctx.w = inputs[1]


def _backward(ctx: Any, grad: tp.Tensor) -> tuple[tp.Tensor, None, None]:
    return grad * ctx.w, None, None


weighted_sum.register_autograd(_backward, setup_context=_setup)

x = tp.ones(3)
y = weighted_sum(x, 2.0)
assert_type(y, tp.Tensor)
y2 = weighted_sum(x, 2.0, bias=1.0)
assert_type(y2, tp.Tensor)
as_fn: Callable[[tp.Tensor, float], tp.Tensor] = weighted_sum   # assignable to its signature


# ---- custom_op as a direct call, with a schema and device types ------------------------------
def _scale(x: tp.Tensor, n: int) -> tp.Tensor:
    return x * n


scale = library.custom_op("typing_usage::scale", _scale, mutates_args=[], device_types="cpu",
                          schema="(Tensor x, int n) -> Tensor")
assert_type(scale(x, 3), tp.Tensor)


@scale.register_kernel("cpu")
def _scale_cpu(x: tp.Tensor, n: int) -> tp.Tensor:
    return x * n


library.register_kernel(scale, "cpu", _scale_cpu)
library.register_fake("typing_usage::scale", lambda x, n: x.new_empty(x.shape))
library.register_autograd("typing_usage::scale", lambda ctx, g: (g, None))


# ---- triton_op: same typing as custom_op (the body runs as is when it launches nothing) -------
@library.triton_op("typing_usage::tri", mutates_args=())
def tri(x: tp.Tensor) -> tp.Tensor:
    return x * 1.0


assert_type(tri(x), tp.Tensor)
tri2 = library.triton_op("typing_usage::tri2", lambda t: t, mutates_args=(),
                         schema="(Tensor t) -> Tensor")


@library.register_fake("typing_usage::tri")
def _tri_fake(x: tp.Tensor) -> tp.Tensor:
    return x.new_empty(x.shape)


assert_type(_tri_fake(x), tp.Tensor)   # decorators return the function itself


# ---- mutates_args: any iterable of names, as in torch ----------------------------------------
@library.custom_op("typing_usage::add_", mutates_args={"x"})
def add_(x: tp.Tensor, y: tp.Tensor) -> None:
    x.add_(y)


assert_type(add_(tp.zeros(3), x), None)

# ---- Library, define, impl -------------------------------------------------------------------
with Library("typing_usage_lib", "DEF") as lib_:
    qualname: str = lib_.define("twice(Tensor x) -> Tensor")
    lib_.impl("twice", lambda t: t * 2, "CompositeExplicitAutograd")
    twice = tp.ops.typing_usage_lib.twice
    out = twice(x)

op = library.define("typing_usage::triple(Tensor x) -> Tensor")
assert_type(op, CustomOpDef[..., Any])


@library.impl("typing_usage::triple", "cpu")
def _triple(x: tp.Tensor) -> tp.Tensor:
    return x * 3


kernel = library.get_kernel(op, "cpu")
with op.set_kernel_enabled("cpu", False):
    pass

# ---- opcheck ---------------------------------------------------------------------------------
failures: dict[str, Any] = library.opcheck(weighted_sum, (tp.ones(2), 2.0))


# ---- Tensor methods ----------------------------------------------------------------------------
a = tp.ones(2, 3, requires_grad=True)
b = (a * 2.0 + 1.0).sum()
b.backward()
grad = a.grad
shape = a.shape
values = a.detach().tolist()
first = a.sum().item()
z = tp.zeros(4, dtype=tp.float64).reshape(2, 2).mean()
c = tp.tensor([1.0, 2.0]).to("cpu")


# ---- tensorplay.compile --------------------------------------------------------------------------
def f(t: tp.Tensor) -> tp.Tensor:
    return weighted_sum(t, 3.0).relu()


compiled = tp.compile(f)
r = compiled(tp.ones(2))
