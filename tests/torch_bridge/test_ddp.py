"""torch.distributed on bridged ops: DDP with gloo, 2 processes on cpu, 20 training steps of a
model whose layers are bridged ops; losses and gradients equal the single-process run."""

from __future__ import annotations

import socket

import ddp_train
import torch
import torch.multiprocessing as mp


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_gloo_two_processes_equal_single_process(tmp_path, bridged):
    mp.spawn(ddp_train.worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    want_losses, want_grads = ddp_train.train_single()
    for rank in range(2):
        losses, grads = torch.load(tmp_path / f"rank{rank}.pt")
        assert len(losses) == ddp_train.STEPS
        torch.testing.assert_close(losses, want_losses, rtol=1e-5, atol=1e-6)
        for step, (got, want) in enumerate(zip(grads, want_grads)):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6,
                                       msg=lambda m, s=step, r=rank: f"rank {r} step {s}: {m}")
    # training moved: the last loss is below the first
    assert want_losses[-1] < want_losses[0]
