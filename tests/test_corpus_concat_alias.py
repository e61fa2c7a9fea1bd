"""``tensorplay.concat`` / ``tensorplay.concatenate``: torch's aliases of ``cat``.

Found by the corpus (tests/corpus/attorch/layers.py): attorch's ``GLUAutoGrad.backward`` returns
``torch.concat([input1_grad, input2_grad], dim=ctx.dim)``; translated by names only it raised
AttributeError. Each alias gives what ``cat`` gives: values, dtype promotion, negative dims,
gradients, errors, and under ``tensorplay.compile``.
"""

from __future__ import annotations

import pytest

import tensorplay as tp


def _pair():
    return tp.tensor([[1.0, 2.0], [3.0, 4.0]]), tp.tensor([[5.0], [6.0]])


@pytest.mark.parametrize("alias", ["concat", "concatenate"])
def test_alias_gives_what_cat_gives(alias):
    f = getattr(tp, alias)
    a, b = _pair()
    want = tp.cat([a, b], 1).tolist()
    assert f([a, b], 1).tolist() == want
    assert f((a, b), -1).tolist() == want                    # any sequence, negative dim
    assert f([a, a]).tolist() == tp.cat([a, a]).tolist()     # dim defaults to 0
    mixed = f([tp.tensor([1, 2]), tp.tensor([0.5])])
    assert mixed.dtype == tp.float32 and mixed.tolist() == [1.0, 2.0, 0.5]
    assert tp.compile(lambda x, y: f([x, y], 1))(a, b).tolist() == want


def test_keyword_spellings_are_torchs():
    a, b = _pair()
    want = tp.cat([a, b], 1).tolist()
    assert tp.concat([a, b], dim=1).tolist() == want
    assert tp.concatenate([a, b], axis=1).tolist() == want   # torch.concatenate's NumPy name
    assert tp.concatenate([a, b], dim=1).tolist() == want
    assert tp.concat([a, b], axis=1).tolist() == want        # torch takes axis= for dim= in all three
    assert tp.cat([a, b], axis=1).tolist() == want


@pytest.mark.parametrize("alias", ["concat", "concatenate"])
def test_gradients_flow_to_every_input(alias):
    a = tp.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = tp.tensor([[5.0], [6.0]], requires_grad=True)
    out = getattr(tp, alias)([a, b], 1)
    (out * tp.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert a.grad.tolist() == [[1.0, 2.0], [4.0, 5.0]]
    assert b.grad.tolist() == [[3.0], [6.0]]


@pytest.mark.parametrize("alias", ["concat", "concatenate"])
def test_errors_are_cats(alias):
    f = getattr(tp, alias)
    with pytest.raises(RuntimeError, match="non-empty"):
        f([])
    a, b = _pair()
    with pytest.raises(Exception) as got:
        f([a, b], 0)                  # sizes differ off the concatenated dim
    with pytest.raises(type(got.value)):
        tp.cat([a, b], 0)


@pytest.mark.parametrize("alias", ["concat", "concatenate"])
def test_exported_and_documented(alias):
    assert alias in tp.__all__
    assert "cat" in (getattr(tp, alias).__doc__ or "")
