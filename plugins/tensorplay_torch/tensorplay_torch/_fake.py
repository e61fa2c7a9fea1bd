"""Fake kernels: a bridged op's fake is the pack's own fake run on TensorPlay fake tensors.

Each torch fake tensor argument becomes a TensorPlay fake tensor with its metadata (sizes,
strides, storage offset, dtype, device); the pack's fake (``register_fake``, or its
device-agnostic kernel run on fakes) runs under ``tensorplay.fake.FakeTensorMode``; each output
becomes a torch tensor with the same metadata, made with ``torch.empty_strided`` while torch's
fake mode is active (so it is a torch fake tensor).

Symbolic sizes: TensorPlay's fake tensors hold plain ints, so a symbolic size is specialised to
its hint (torch records a guard). Data-dependent output sizes would need
``torch.library.get_ctx().new_dynamic_size()``; TensorPlay's fake kernels have no counterpart yet,
so such ops cannot be bridged faithfully (see the guide).
"""

from __future__ import annotations

import tensorplay as tp
import torch
from tensorplay import fake as tp_fake

from ._convert import (
    BridgeError,
    pick_written,
    reraise,
    torch_device,
    torch_dtype,
    tp_device,
    tp_dtype,
    written_returns,
)

__all__ = ["fake_from_torch", "make_fake_kernel", "torch_from_fake"]


def fake_from_torch(t, where):
    """A TensorPlay fake tensor with torch tensor ``t``'s metadata. An empty tensor's strides
    carry no layout (DLPack exports of empty NumPy arrays have all-zero strides, which
    TensorPlay reads as an expanded tensor and refuses to write): it gets contiguous ones."""
    stride = tuple(t.stride()) if t.numel() else None
    return tp_fake.make_fake(tuple(t.shape), tp_dtype(t.dtype, where), tp_device(t.device),
                             stride, offset=int(t.storage_offset()))


def torch_from_fake(f, where):
    """A torch tensor (fake under torch's fake mode) with TensorPlay fake ``f``'s metadata."""
    if f.storage_offset():
        raise BridgeError(f"{where}: the fake kernel returned a tensor with storage offset "
                          f"{f.storage_offset()}; a custom op's outputs are fresh tensors "
                          f"(torch refuses outputs that view an input)")
    return torch.empty_strided(tuple(f.shape), tuple(f.stride()),
                               dtype=torch_dtype(f.dtype, where), device=torch_device(f.device))


def _fake_value(v, where):
    if isinstance(v, torch.Tensor):
        return fake_from_torch(v, where)
    if isinstance(v, (list, tuple)):
        return [_fake_value(x, where) for x in v]
    if isinstance(v, torch.dtype):
        return tp_dtype(v, where)
    if isinstance(v, torch.device):
        return tp_device(v)
    if isinstance(v, torch.SymInt):
        return int(v)                # specialised (TensorPlay fakes hold ints): torch guards it
    if isinstance(v, torch.SymFloat):
        return float(v)
    if isinstance(v, torch.SymBool):
        return bool(v)
    return v


def _fake_out(out, where):
    if isinstance(out, tp.Tensor):
        return torch_from_fake(out, where)
    if isinstance(out, list):       # a Tensor[] return: a list, as the real kernel's
        return [_fake_out(o, where) for o in out]
    if isinstance(out, tuple):
        return tuple(_fake_out(o, where) for o in out)
    return out


def make_fake_kernel(op, where):
    """torch fake kernel of TensorPlay op ``op``. An op whose returns are all arguments it
    writes (``Tag.inplace``/``Tag.out``) returns those torch (fake) arguments themselves, as
    its real kernel does, after the pack's fake has run on them."""
    written = written_returns(op)

    def fake_kernel(*args, **kwargs):
        with tp_fake.FakeTensorMode():
            a = [_fake_value(v, where) for v in args]
            k = {n: _fake_value(v, where) for n, v in kwargs.items()}
            try:
                out = op(*a, **k)
            except BridgeError:
                raise
            except Exception as e:  # noqa: BLE001 - re-raised, same type, naming op and side
                reraise(e, f"{where}: the pack's fake kernel raised on the TensorPlay side (run "
                           f"on fake tensors built from torch's)")
        if written is not None:
            return pick_written(args, kwargs, written)
        return _fake_out(out, where)
    fake_kernel.__name__ = f"fake_{op.opname}"
    return fake_kernel
