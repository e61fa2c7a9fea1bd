"""20 SGD steps of ``models.BridgedMLP``: on one process over the whole batch, or under
``torch.nn.parallel.DistributedDataParallel`` (gloo, cpu) with each rank on its half of the
batch. Each records the loss and the gradients of every step (after DDP's all-reduce)."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from models import BridgedMLP, batch

STEPS = 20
BATCH = 8


def _steps(model, params, rank=0, world=1):
    opt = torch.optim.SGD(params, lr=0.1)
    losses, grads = [], []
    for step in range(STEPS):
        x, t = batch(step, BATCH)
        per = BATCH // world
        x, t = x[rank * per:(rank + 1) * per], t[rank * per:(rank + 1) * per]
        opt.zero_grad()
        loss = model(x, t)
        loss.backward()
        if world > 1:                           # the global loss: mean of the equal halves
            loss = loss.detach().clone()
            dist.all_reduce(loss)
            loss /= world
        losses.append(float(loss.detach()))
        grads.append([p.grad.detach().clone() for p in params])
        opt.step()
    return losses, grads


def train_single():
    import tensorplay_torch
    tensorplay_torch.register()
    model = BridgedMLP()
    return _steps(model, list(model.parameters()))


def worker(rank, world, port, out_dir):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    import tensorplay_torch
    tensorplay_torch.register()
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        model = torch.nn.parallel.DistributedDataParallel(BridgedMLP())
        res = _steps(model, list(model.parameters()), rank, world)
        torch.save(res, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()
