"""Session 49: divergences from torch 2.13 (cpu) found by checking torch itself (values noted
next to each test)."""
import math

import pytest

import tensorplay as tp

inf, nan = math.inf, math.nan


def _expanded():
    base = tp.tensor([1.0])
    return base, base.expand(3)


# -- 3. writing into an expanded tensor -----------------------------------------------------------
# torch allows the writes that give every element sharing a location the same value (fill_ with
# a number, zero_, masked_fill_, index_put_ / index_fill_ / x[idx] = v) and refuses the others
# (copy_, fill_ with a Tensor, arithmetic, random fills, x[:] = v, index_copy_, scatter_...)
@pytest.mark.parametrize("write, want", [
    (lambda t: t.fill_(2.0), 2.0),
    (lambda t: t.fill_(2), 2.0),
    (lambda t: t.fill_(True), 1.0),
    (lambda t: t.zero_(), 0.0),
    (lambda t: t.detach().fill_(3.0), 3.0),
    (lambda t: t.masked_fill_(tp.tensor([True, False, True]), 7.0), 7.0),
    (lambda t: t.masked_fill_(tp.tensor([True, False, True]), tp.tensor(7.0)), 7.0),
    (lambda t: t.index_fill_(0, tp.tensor([0]), 7.0), 7.0),
    (lambda t: t.index_put_((tp.tensor([0]),), tp.tensor(9.0)), 9.0),
    (lambda t: t.__setitem__(tp.tensor([0, 2]), 5.0), 5.0),
    (lambda t: t.__setitem__(tp.tensor([True, False, True]), 5.0), 5.0),
    (lambda t: t.__setitem__(0, 4.0), 4.0),
])
def test_expanded_write_allowed(write, want):
    base, t = _expanded()
    v = t._version
    write(t)
    assert base.tolist() == [want]
    assert t._version == v + 1


@pytest.mark.parametrize("write", [
    lambda t: t.fill_(tp.tensor(3.0)),
    lambda t: t.copy_(tp.tensor([1.0, 2.0, 3.0])),
    lambda t: t.copy_(tp.tensor(5.0)),
    lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.neg_(), lambda t: t.clamp_(0, 1),
    lambda t: t.normal_(), lambda t: t.uniform_(), lambda t: t.bernoulli_(),
    lambda t: t.random_(5), lambda t: t.exponential_(),
    lambda t: t.__setitem__(slice(None), 4.0),
    lambda t: t.__setitem__(Ellipsis, 4.0),
    lambda t: t.__setitem__(slice(0, 2), 4.0),
    lambda t: t.index_copy_(0, tp.tensor([0]), tp.tensor([7.0])),
    lambda t: t.index_add_(0, tp.tensor([0]), tp.tensor([7.0])),
    lambda t: t.scatter_(0, tp.tensor([0]), 7.0),
    lambda t: t.masked_scatter_(tp.tensor([True, False, True]), tp.tensor([4.0, 5.0])),
])
def test_expanded_write_refused(write):
    base, t = _expanded()
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        write(t)
    assert base.tolist() == [1.0]


def test_expanded_fill_nd():
    b = tp.tensor([[1.0], [2.0]])
    b.expand(2, 3).fill_(4.0)
    assert b.tolist() == [[4.0], [4.0]]
    z = tp.ones(2, 2)
    z.unsqueeze(1).expand(2, 3, 2).zero_()
    assert z.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    # a row of an expanded matrix is itself expanded: x[0] = v refused (torch: copy_)
    with pytest.raises(RuntimeError, match="single memory location"):
        b.expand(2, 3)[0] = 5.0
