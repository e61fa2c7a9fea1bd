"""A small model whose layers are bridged TensorPlay ops (shared by the compile and DDP tests
and the benchmark): matmul (torch) -> example::gelu (composite, differentiated through its body)
-> newuser::layer_norm (NumPy kernel, explicit formula, two non-differentiable outputs) ->
example::rms_norm (explicit formula) -> matmul -> example::softmax_cross_entropy (int64 target)."""

from __future__ import annotations

import torch


class BridgedMLP(torch.nn.Module):
    def __init__(self, d_in=16, d_hidden=32, classes=5, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.w1 = torch.nn.Parameter(torch.randn(d_in, d_hidden, generator=g) / d_in ** 0.5)
        self.ln_w = torch.nn.Parameter(torch.ones(d_hidden))
        self.ln_b = torch.nn.Parameter(torch.zeros(d_hidden))
        self.rms_w = torch.nn.Parameter(torch.ones(d_hidden))
        self.w2 = torch.nn.Parameter(torch.randn(d_hidden, classes, generator=g) / d_hidden ** 0.5)

    def forward(self, x, target):
        h = torch.ops.example.gelu(x @ self.w1)
        h, _mean, _rstd = torch.ops.newuser.layer_norm(h, self.ln_w, self.ln_b)
        h = torch.ops.example.rms_norm(h, self.rms_w)
        return torch.ops.example.softmax_cross_entropy(h @ self.w2, target)


def batch(step, n=8, d_in=16, classes=5):
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(n, d_in, generator=g), torch.randint(0, classes, (n,), generator=g)
