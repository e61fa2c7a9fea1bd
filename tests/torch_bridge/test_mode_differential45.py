"""``mode`` against torch's CPU kernel (session 45): rows with NaN and rows of more than 16
elements, where torch's ``std::sort`` (an insertion sort up to 16 elements, an introsort beyond;
``<`` on values, so NaN compares false) decides which value and which index come out; plus ties,
every dim, keepdim, integer dtypes and the gradient (put back at the index)."""

from __future__ import annotations

import math
import random

import pytest

torch = pytest.importorskip("torch")
import tensorplay as tp  # noqa: E402

NAN = float("nan")


def _rows(seed, count, sizes, nan_share):
    rnd = random.Random(seed)
    for _ in range(count):
        n = rnd.choice(sizes)
        row = [float(rnd.randint(0, 4)) for _ in range(n)]
        yield [v if rnd.random() >= nan_share else NAN for v in row]


def _same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("sizes,nan_share", [((1, 2, 3, 5, 8, 16), 0.3), ((17, 20, 33, 64), 0.0),
                                             ((17, 40, 100, 257), 0.3), ((100, 300), 0.05)])
def test_rows_match_torch_cpu(sizes, nan_share):
    bad = []
    for row in _rows(hash((sizes, nan_share)) & 0xFFFF, 150, sizes, nan_share):
        for dt in ("float32", "float64"):
            r = torch.mode(torch.tensor(row, dtype=getattr(torch, dt)))
            q = tp.mode(tp.tensor(row, dtype=getattr(tp, dt)))
            if not (_same(r.values.item(), q.values.item()) and
                    r.indices.item() == q.indices.item()):
                bad.append((row, (r.values.item(), r.indices.item()),
                            (q.values.item(), q.indices.item())))
    assert not bad, bad[:3]


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_dims_integers_and_gradient(dim, keepdim):
    rnd = random.Random(dim * 2 + keepdim)
    vals = [[float(rnd.randint(0, 3)) if rnd.random() > 0.2 else NAN for _ in range(24)]
            for _ in range(20)]
    r = torch.mode(torch.tensor(vals), dim, keepdim)
    q = tp.mode(tp.tensor(vals), dim, keepdim)
    assert tuple(q.indices.shape) == tuple(r.indices.shape)
    assert q.indices.tolist() == r.indices.tolist()
    iv = [[rnd.randint(-2, 2) for _ in range(30)] for _ in range(6)]
    r = torch.mode(torch.tensor(iv), dim, keepdim)
    q = tp.mode(tp.tensor(iv), dim, keepdim)
    assert q.values.tolist() == r.values.tolist() and q.indices.tolist() == r.indices.tolist()
    xt = torch.tensor(vals, requires_grad=True)
    xq = tp.tensor(vals, requires_grad=True)
    torch.mode(xt, dim, keepdim).values.nan_to_num(0.5).sum().backward()
    vq = tp.mode(xq, dim, keepdim).values
    tp.where(tp.isnan(vq), 0.5, vq).sum().backward()
    assert xq.grad.tolist() == xt.grad.tolist()
