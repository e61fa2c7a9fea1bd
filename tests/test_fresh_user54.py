"""A fresh user's findings of session 54: divergences from torch 2.13, each behaviour checked
in torch 2.13 (cpu) before it was asserted here."""

from __future__ import annotations

import pytest

import tensorplay as tp

pytest.importorskip("numpy")


# -- 1. AccumulateGrad with grad mode off adds into the existing .grad in place ---------------

def test_plain_backward_after_create_graph_keeps_grad_object_and_grad_fn():
    # torch: .grad += new (grad mode off) -- same object, its grad_fn (from the create_graph
    # backward) kept
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    g0 = x.grad
    (x * 3).sum().backward()
    assert x.grad is g0
    assert x.grad.tolist() == [5.0, 7.0]
    assert x.grad.grad_fn is not None


def test_second_plain_backward_adds_into_the_same_grad_tensor():
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    ref = w.grad                     # e.g. an optimizer's reference
    (w * 3).sum().backward()
    assert w.grad is ref and ref.tolist() == [5.0, 7.0]
    assert not w.grad.requires_grad


def test_user_set_grad_is_accumulated_into_in_place():
    v = tp.tensor([1.0, 2.0], requires_grad=True)
    g = tp.zeros(2)
    v.grad = g
    (v * 2).sum().backward()
    assert v.grad is g and g.tolist() == [2.0, 2.0]


def test_in_place_accumulation_for_broadcast_leaf_and_other_dtype_gradient():
    s = tp.tensor(2.0, requires_grad=True)
    (s.expand(3) * 1).sum().backward()
    r = s.grad
    (s.expand(3) * 1).sum().backward()
    assert s.grad is r and r.item() == 6.0
    h = tp.tensor([1.0, 3.0], requires_grad=True)
    (h * 1).sum().backward()
    r = h.grad
    (h.double() ** 2).sum().backward()
    assert h.grad is r and r.dtype is tp.float32 and r.tolist() == [3.0, 7.0]


def test_create_graph_backward_into_existing_grad_is_out_of_place():
    z = tp.tensor([1.0, 2.0], requires_grad=True)
    (z * 2).sum().backward()
    g1 = z.grad
    (z * z).sum().backward(create_graph=True)
    assert z.grad is not g1 and z.grad.grad_fn is not None
    assert g1.tolist() == [2.0, 2.0] and z.grad.tolist() == [4.0, 6.0]


def test_retain_grad_of_non_leaf_accumulates_out_of_place():
    a = tp.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    b.retain_grad()
    (b * b).sum().backward(retain_graph=True)
    r = b.grad
    (b * b).sum().backward()
    assert b.grad is not r and b.grad.tolist() == [8.0, 16.0]


# -- 2. a tensor hook may not change the gradient's dtype, device or shape --------------------

def _leaf_hook_backward(hook):
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(hook)
    (x * 2).sum().backward()


def _nonleaf_hook_backward(hook):
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(hook)
    y.sum().backward()


@pytest.mark.parametrize("run", [_leaf_hook_backward, _nonleaf_hook_backward])
def test_hook_changing_dtype_is_refused(run):
    def myhook(g):
        return g.double()
    # torch: RuntimeError "hook 'myhook' has changed the type of value (was torch.FloatTensor
    # got torch.DoubleTensor)"
    with pytest.raises(RuntimeError, match=r"hook 'myhook' has changed the type of value "
                                           r"\(was tensorplay.FloatTensor got tensorplay.DoubleTensor"):
        run(myhook)


@pytest.mark.parametrize("run", [_leaf_hook_backward, _nonleaf_hook_backward])
def test_hook_changing_shape_is_refused(run):
    # torch: RuntimeError "hook '<lambda>' has changed the size of value"
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
        run(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        run(lambda g: g.unsqueeze(0))


def test_hook_changing_device_is_refused():
    # torch (a meta result): "hook '<lambda>' has changed the type of value (was
    # torch.FloatTensor got MetaFloatType)"
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the type of value"):
        _nonleaf_hook_backward(lambda g: g.to("meta"))


def test_hook_returning_a_non_tensor_is_a_type_error():
    # torch: TypeError "expected Variable, but hook returned 'int'"
    with pytest.raises(TypeError, match="hook '<lambda>' returned 'int'"):
        _leaf_hook_backward(lambda g: 3)


def test_hook_on_a_callable_object_is_named_unknown_and_autograd_grad_checks_too():
    class H:
        def __call__(self, g):
            return g.double()
    with pytest.raises(RuntimeError, match="hook '<unknown>' has changed the type of value"):
        _leaf_hook_backward(H())
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match="has changed the type of value"):
        tp.autograd.grad(y.sum(), [x])


def test_hook_returning_same_dtype_shape_other_strides_is_taken():
    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    x.register_hook(lambda g: (g * 3).t().contiguous().t())
    (x * 2).sum().backward()
    assert x.grad.tolist() == [[6.0, 6.0], [6.0, 6.0]]


# -- 3. std/var(unbiased, keepdim) without dim: torch's std(unbiased) overload has no keepdim --

_X = [[1.0, 2.0], [3.0, 5.0]]


@pytest.mark.parametrize("call", [
    lambda x: x.std(unbiased=False, keepdim=True),
    lambda x: x.var(unbiased=False, keepdim=True),
    lambda x: x.var(unbiased=False, keepdim=False),
    lambda x: x.std(False, keepdim=True),
    lambda x: tp.std(x, unbiased=False, keepdim=True),
    lambda x: tp.var(x, unbiased=False, keepdim=True),
    lambda x: tp.std_mean(x, unbiased=False, keepdim=True),
    lambda x: tp.var_mean(x, unbiased=False, keepdim=True),
])
def test_unbiased_with_keepdim_and_no_dim_is_a_type_error(call):
    # torch: TypeError "std() received an invalid combination of arguments - got
    # (keepdim=bool, unbiased=bool, ), but expected one of: ..."
    with pytest.raises(TypeError, match=r"(std|var|std_mean|var_mean)\(\) received an invalid "
                                        r"combination of arguments.*pass dim=None"):
        call(tp.tensor(_X))


@pytest.mark.parametrize("call, shape", [
    (lambda x: x.std(keepdim=True), (1, 1)),
    (lambda x: x.std(correction=0, keepdim=True), (1, 1)),
    (lambda x: x.std(unbiased=False), ()),
    (lambda x: x.std(False), ()),
    (lambda x: x.std(0, False, True), (1, 2)),
    (lambda x: x.std(dim=None, unbiased=False, keepdim=True), (1, 1)),
    (lambda x: x.std(None, keepdim=True), (1, 1)),
    (lambda x: tp.std_mean(x, keepdim=True)[0], (1, 1)),
    (lambda x: tp.var_mean(x, dim=None, unbiased=False, keepdim=True)[1], (1, 1)),
    (lambda x: tp.std(x, 1, False, True), (2, 1)),
    (lambda x: tp.var(x, dim=None, correction=1, keepdim=True), (1, 1)),
])
def test_the_accepted_std_var_overloads_keep_working(call, shape):
    # shapes as torch 2.13 gives them
    assert tuple(call(tp.tensor(_X)).shape) == shape


def test_std_value_and_errors_name_std_not_var():
    x = tp.tensor(_X)
    assert abs(x.std(dim=None, unbiased=False, keepdim=True).item() - 1.479019945774904) < 1e-6
    # torch: TypeError for both (invalid combination of arguments)
    with pytest.raises(TypeError, match=r"^std\(\)"):
        x.std(unbiased=False, correction=0)
    with pytest.raises(TypeError, match=r"^std\(\)"):
        x.std(True, True)


# -- 4. a tuple (or other non-int) dim of a single-dim reduction: torch's TypeError -----------

@pytest.mark.parametrize("api, call", [
    ("max", lambda x: x.max((0, 1))),
    ("min", lambda x: x.min((0, 1))),
    ("max", lambda x: tp.max(x, (0, 1))),
    ("min", lambda x: tp.min(x, dim=(0, 1))),
    ("max", lambda x: x.max((0,), keepdim=True)),
    ("median", lambda x: x.median((0, 1))),
    ("median", lambda x: tp.median(x, (0, 1))),
    ("nanmedian", lambda x: x.nanmedian((0, 1))),
    ("mode", lambda x: x.mode((0, 1))),
    ("kthvalue", lambda x: x.kthvalue(1, (0, 1))),
    ("cummax", lambda x: x.cummax((0,))),
    ("argmax", lambda x: x.argmax((0, 1))),
    ("argmin", lambda x: x.argmin((0, 1))),
    ("argmax", lambda x: tp.argmax(x, dim=(0, 1), keepdim=True)),
])
def test_tuple_dim_of_single_dim_reduction_is_a_type_error_naming_op_and_dim(api, call):
    # torch: TypeError ("argmax(): argument 'dim' (position 1) must be int, not tuple"; max/min:
    # "max() received an invalid combination of arguments - got (tuple), ...")
    with pytest.raises(TypeError, match=rf"^{api}\(\): argument 'dim' must be int, not tuple$"):
        call(tp.tensor(_X))


@pytest.mark.parametrize("call, msg", [
    (lambda x: x.max(0.5), r"^max\(\): argument 'dim' must be int, not float$"),
    (lambda x: x.argmax(0.0), r"^argmax\(\): argument 'dim' must be int, not float$"),
    (lambda x: x.median(0.5), r"^median\(\): argument 'dim' must be int, not float$"),
    (lambda x: x.argmax(dim=[0]), r"^argmax\(\): argument 'dim' must be int, not list$"),
    (lambda x: x.argmax(True), r"^argmax\(\): argument 'dim' must be int, not bool$"),
    (lambda x: x.sum((0.5,)), r"^sum\(\): argument 'dim' must be tuple of ints, but found "
                              r"element of type float at pos 0$"),
    (lambda x: x.amax((0.5,)), r"^amax\(\): argument 'dim' must be tuple of ints"),
])
def test_other_non_int_dims_are_type_errors_naming_the_op(call, msg):
    # torch: TypeError for each (checked in torch 2.13)
    with pytest.raises(TypeError, match=msg):
        call(tp.tensor(_X))


def test_int_like_dims_still_work():
    x = tp.tensor(_X)
    np = pytest.importorskip("numpy")
    assert x.max(dim=np.int64(0)).values.tolist() == [3.0, 5.0]
    assert x.argmax(tp.tensor(1)).tolist() == [1, 1]
    assert x.median(-1).values.tolist() == [1.0, 3.0]


# -- 5. a 0-dim bool tensor index writes by index_put_'s rules (torch: an int64 index) --------

_OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single memory"
_DTYPE = "Index put requires the source and destination dtypes match"


def test_0d_self_0d_bool_index_value_overlapping_self_is_refused():
    x = tp.tensor(1.0)
    with pytest.raises(RuntimeError, match=_OVERLAP):
        x[tp.tensor(True)] = x
    with pytest.raises(RuntimeError, match=_OVERLAP):
        x[tp.tensor(False)] = x            # torch checks before the (empty) write
    with pytest.raises(RuntimeError, match=_OVERLAP):
        x[tp.tensor(True)] = x.view(())
    y = tp.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=_OVERLAP):
        y[tp.tensor(True)] = y[0]
    assert x.item() == 1.0 and y.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("make, value", [
    (lambda: tp.tensor(1.0), lambda: tp.tensor(3)),
    (lambda: tp.tensor(1.0), lambda: tp.tensor(3.0, dtype=tp.float64)),
    (lambda: tp.tensor(1), lambda: tp.tensor(3.0)),
    (lambda: tp.tensor([1.0, 2.0]), lambda: tp.tensor(3)),
])
def test_0d_bool_index_value_of_other_dtype_is_refused(make, value):
    # torch: RuntimeError "Index put requires the source and destination dtypes match, got
    # Float for the destination and Long for the source."
    x = make()
    before = x.tolist()
    with pytest.raises(RuntimeError, match=_DTYPE):
        x[tp.tensor(True)] = value()
    with pytest.raises(RuntimeError, match=_DTYPE):
        x[tp.tensor(False)] = value()
    with pytest.raises(RuntimeError, match=_DTYPE):
        x[..., tp.tensor(True)] = value()
    assert x.tolist() == before


def test_0d_bool_index_writes_that_torch_takes():
    x = tp.tensor(1.0)
    x[tp.tensor(True)] = 3                  # a number: cast, as torch
    assert x.item() == 3.0
    x[tp.tensor(True)] = tp.tensor(3.5)
    assert x.item() == 3.5
    x[tp.tensor(True)] = x.clone() * 2
    assert x.item() == 7.0
    x[tp.tensor(False)] = tp.tensor(9.0)
    assert x.item() == 7.0
    b = tp.tensor(True)
    b[b] = False                            # the index is not checked against self (torch)
    assert b.item() is False
    y = tp.tensor([1.0, 2.0])
    y[tp.tensor(True)] = tp.tensor([7.0, 8.0])
    assert y.tolist() == [7.0, 8.0]
    y[tp.tensor([True, False])] = tp.tensor(3)   # a real mask, 0-d value: masked_fill_ (cast)
    assert y.tolist() == [3.0, 8.0]
    y[True] = tp.tensor(5)                  # a Python True alone: copy_ (cast)
    assert y.tolist() == [5.0, 5.0]


# -- 6. *_like / new_* of a meta tensor on a real device: a real tensor (torch's) -------------

@pytest.mark.parametrize("call, total", [
    (lambda m: tp.zeros_like(m, device="cpu"), 0.0),
    (lambda m: tp.ones_like(m, device="cpu"), 6.0),
    (lambda m: tp.full_like(m, 7, device="cpu"), 42.0),
    (lambda m: m.new_zeros(2, device="cpu"), 0.0),
    (lambda m: m.new_ones(2, device="cpu"), 2.0),
    (lambda m: m.new_full((2,), 4.0, device="cpu"), 8.0),
    (lambda m: m.new_tensor([1.0, 2.0], device="cpu"), 3.0),
])
def test_like_and_new_of_meta_on_cpu_have_values(call, total):
    r = call(tp.empty(2, 3, device="meta"))
    assert r.device.type == "cpu"
    assert r.sum().item() == total        # torch: a real cpu tensor (values readable)


@pytest.mark.parametrize("call", [
    lambda m: tp.empty_like(m, device="cpu"),
    lambda m: tp.rand_like(m, device="cpu"),
    lambda m: tp.randn_like(m, device="cpu"),
    lambda m: tp.randint_like(m, 5, device="cpu"),
    lambda m: m.new_empty(2, device="cpu"),
])
def test_uninitialised_and_random_like_of_meta_on_cpu_are_real(call):
    r = call(tp.empty(2, 3, device="meta"))
    assert r.device.type == "cpu"
    assert len(r.tolist()) == r.shape[0]   # has data (a fake tensor refuses tolist)


def test_like_of_meta_keeps_layout_dtype_grad_and_meta_stays_meta():
    m = tp.empty(2, 3, device="meta")
    r = tp.zeros_like(m.t(), device="cpu")
    assert r.stride() == (1, 3)            # preserve_format, as torch
    r = tp.ones_like(m, dtype=tp.int64, device="cpu", requires_grad=False)
    assert r.dtype is tp.int64 and r.sum().item() == 6
    r = tp.zeros_like(m, device="cpu", requires_grad=True)
    assert r.requires_grad and r.sum().item() == 0.0
    assert tp.zeros_like(m).device.type == "meta"
    assert m.new_zeros(2).device.type == "meta"
    assert tp.zeros_like(tp.ones(2), device="meta").device.type == "meta"


# -- 7. index_put_(accumulate=True) into an expanded tensor: torch warns and accumulates ------

_EXPANDED_WARNING = "Use of index_put_ on expanded tensors is deprecated"


def test_index_put_accumulate_into_expanded_adds_every_value_into_shared_memory():
    base = tp.zeros(1)
    with pytest.warns(UserWarning, match=_EXPANDED_WARNING):
        base.expand(3).index_put_((tp.tensor([0, 2]),), tp.tensor([1.0, 2.0]), accumulate=True)
    assert base.tolist() == [3.0]          # torch: tensor([3.])
    base = tp.zeros(1, 2)
    with pytest.warns(UserWarning, match=_EXPANDED_WARNING):
        base.expand(3, 2).index_put_((tp.tensor([0, 2]),), tp.tensor(1.0), accumulate=True)
    assert base.tolist() == [[2.0, 2.0]]
    base = tp.zeros(1)
    with pytest.warns(UserWarning, match=_EXPANDED_WARNING):
        base.expand(3).index_put_((tp.tensor([True, False, True]),), tp.tensor([1.0, 2.0]),
                                  accumulate=True)
    assert base.tolist() == [3.0]


def test_index_put_accumulate_into_expanded_int_and_inner_expanded_dim():
    b = tp.zeros(1, dtype=tp.int32)
    x = b.expand(3)
    with pytest.warns(UserWarning, match=_EXPANDED_WARNING):
        r = x.index_put_((tp.tensor([0, 2, 2]),), tp.tensor([1, 2, 3], dtype=tp.int32),
                         accumulate=True)
    assert r is x and x.tolist() == [6, 6, 6] and x.dtype is tp.int32
    c = tp.zeros(2, 1).expand(2, 3)
    with pytest.warns(UserWarning, match=_EXPANDED_WARNING):
        c.index_put_((tp.tensor([1]), tp.tensor([0])), tp.tensor(5.0), accumulate=True)
    assert c.tolist() == [[0.0, 0.0, 0.0], [5.0, 5.0, 5.0]]


def test_index_put_into_expanded_without_accumulate_warns_too():
    base = tp.zeros(1)
    with pytest.warns(UserWarning, match=_EXPANDED_WARNING):
        base.expand(3).index_put_((tp.tensor([0, 2]),), tp.tensor([1.0, 2.0]))
    assert base.tolist() == [2.0]
    base = tp.zeros(1)
    x = base.expand(3)
    with pytest.warns(UserWarning, match=_EXPANDED_WARNING):
        x[tp.tensor([0, 2])] = tp.tensor([1.0, 2.0])
    assert base.tolist() == [2.0]


def test_out_of_place_index_put_of_expanded_does_not_warn_or_write(recwarn):
    base = tp.zeros(1)
    r = tp.index_put(base.expand(3), (tp.tensor([0, 2]),), tp.tensor([1.0, 2.0]),
                     accumulate=True)
    assert r.tolist() == [1.0, 0.0, 2.0] and base.tolist() == [0.0]
    assert not [w for w in recwarn if _EXPANDED_WARNING in str(w.message)]


# -- 8. index range errors read as torch's, without internal op-name prefixes -----------------

_X3 = [1.0, 2.0, 3.0]


@pytest.mark.parametrize("call, msg", [
    (lambda x: x[tp.tensor([5])], "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: x[tp.tensor([-4])], "index -4 is out of bounds for dimension 0 with size 3"),
    (lambda x: x[[5]], "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: x.__setitem__(tp.tensor([5]), 1.0),
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: x.__setitem__([5], tp.tensor([1.0])),
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: x.index_put_((tp.tensor([5]),), tp.tensor(1.0)),
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: tp.zeros(2, 3)[:, tp.tensor([7])],
     "index 7 is out of bounds for dimension 1 with size 3"),
])
def test_indexing_range_errors_are_torchs_words(call, msg):
    # torch: IndexError with exactly these words (torch says dimension 0 for the [:, idx] one)
    with pytest.raises(IndexError, match=f"^{msg}$"):
        call(tp.tensor(_X3))


@pytest.mark.parametrize("call, api", [
    (lambda x: x.index_select(0, tp.tensor([5])), "index_select"),
    (lambda x: x.take(tp.tensor([5])), "take"),
    (lambda x: x.index_add_(0, tp.tensor([5]), tp.tensor([1.0])), "index_add_"),
    (lambda x: x.index_copy_(0, tp.tensor([5]), tp.tensor([1.0])), "index_copy_"),
    (lambda x: x.index_fill_(0, tp.tensor([5]), 1.0), "index_fill_"),
])
def test_index_op_range_errors_name_the_op_without_namespace(call, api):
    # torch: IndexError for each ("index out of range in self", "out of range: tried to access
    # index 5 on a tensor of 3 elements.", "index_copy_(): index 5 is out of bounds for
    # dimension 0 with size 3", ...)
    with pytest.raises(IndexError, match=rf"^{api}\(\): index 5 is out of bounds for dimension "
                                         r"0 with size 3$"):
        call(tp.tensor(_X3))
