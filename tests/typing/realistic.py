# pyright: strict
"""A realistic user file (issue 29, "Typed tensors"): pyright strict and mypy --strict report 0
errors on it (tests/test_typing.py). It runs as a script too, so every line is working code."""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

from typing_extensions import assert_type

import tensorplay as tp
from tensorplay import library


@library.custom_op("typing_real::scaled_tanh", mutates_args=())
def scaled_tanh(x: tp.Tensor, scale: float) -> tp.Tensor:
    return (x * scale).tanh()


@scaled_tanh.register_fake
def _(x: tp.Tensor, scale: float) -> tp.Tensor:
    return tp.empty_like(x)


def _setup(ctx: Any, inputs: tuple[Any, ...], output: tp.Tensor) -> None:
    ctx.scale = inputs[1]
    ctx.save_for_backward(output)


def _backward(ctx: Any, grad: tp.Tensor) -> tuple[tp.Tensor, None]:
    (y,) = ctx.saved_tensors
    return grad * (1 - y * y) * ctx.scale, None


scaled_tanh.register_autograd(_backward, setup_context=_setup)

device = "cuda" if tp.cuda.is_available() else "cpu"
n_gpus: int = tp.cuda.device_count()
tp.manual_seed(0)
w = tp.randn(4, 3, device=device, requires_grad=True)
b = tp.zeros(3, device=device, requires_grad=True)
data = tp.rand(8, 4, device=device)
target = tp.arange(8, device=device) % 3
lr = 0.1


def loss_fn(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
    logits = scaled_tanh(x @ w + b, 2.0)
    return (logits - tp.ones_like(logits) * 0.5).pow(2).mean() + 0.0 * y.float().sum()


compiled_loss = tp.compile(loss_fn)


def step(x: tp.Tensor, y: tp.Tensor) -> float:
    loss = compiled_loss(x, y)
    loss.backward()
    with tp.no_grad():
        for p in (w, b):
            if p.grad is not None:          # reachable: .grad is Tensor | None
                p -= lr * p.grad
                p.grad = None
    return loss.item()


losses = [step(data, target) for _ in range(3)]
print(f"loss {losses[-1]:.4f}")
mask = data > 0.5
picked = tp.where(mask, data, tp.full((8, 4), -1.0, device=device))
rows: int = picked.shape[0]
col = picked[:, 1].detach().cpu().tolist()
stats = tp.tensor([1.0, 2.0, 3.0], dtype=tp.float32)
stats2 = 2 * stats / 3 - 1
ok: bool = bool((stats2 >= -1).all()) and stats2.dtype == tp.float32 and stats2.ndim == 1
values, indices = stats2.max(0)
assert_type(tp.max(stats2, 0).values, tp.Tensor)
assert_type(w.grad, Optional[tp.Tensor])
assert_type(tp.zeros(2, 3), tp.Tensor)
assert_type(stats.shape, Tuple[int, ...])
assert_type(stats.sum().item(), Union[bool, int, float])
assert_type(compiled_loss(data, target), tp.Tensor)
assert_type(tp.cuda.is_available(), bool)
assert_type(tp.add(stats, 1.0), tp.Tensor)            # a built-in op re-exported at the root
assert_type(tp.device(device), tp.device)
print(rows, len(col), ok, n_gpus, stats2.requires_grad, w.is_leaf, values, indices)
