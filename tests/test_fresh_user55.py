"""A fresh user's findings of session 55: divergences from torch 2.13, each behaviour checked
in torch 2.13 (cpu) before it was asserted here. Public API only."""

from __future__ import annotations

import pytest

import tensorplay as tp

np = pytest.importorskip("numpy")


def _x():
    return tp.arange(6.0).reshape(2, 3)


def _vals(r):
    """Nested lists of a result: a tensor, a (named) tuple of them, or a list."""
    if isinstance(r, (tuple, list)):
        return [_vals(t) for t in r]
    return r.tolist()


def _close(a, b):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for p, q in zip(a, b):
            _close(p, q)
    else:
        assert a == pytest.approx(b, rel=1e-6, abs=1e-6)


# -- 1. a 0-dim integer tensor (or any __index__ object) as a single dim -------------------------
# torch takes it for every op with an int dim (its parser reads the int); each result here is
# the same call with the plain int 1, as torch's is.
IDX = tp.tensor(1)
I64 = tp.int64
SINGLE_DIM_OPS = {
    "median": lambda x, d: x.median(d),
    "nanmedian": lambda x, d: x.nanmedian(d),
    "kthvalue": lambda x, d: x.kthvalue(1, d),
    "mode": lambda x, d: x.mode(d),
    "cummax": lambda x, d: x.cummax(d),
    "cummin": lambda x, d: x.cummin(d),
    "cumsum": lambda x, d: x.cumsum(d),
    "cumprod": lambda x, d: x.cumprod(d),
    "logcumsumexp": lambda x, d: x.logcumsumexp(d),
    "roll": lambda x, d: x.roll(1, d),
    "movedim": lambda x, d: x.movedim(d, 0),
    "moveaxis": lambda x, d: tp.moveaxis(x, d, 0),
    "softmax": lambda x, d: x.softmax(d),
    "log_softmax": lambda x, d: x.log_softmax(d),
    "tp.softmax": lambda x, d: tp.softmax(x, d),
    "flip": lambda x, d: x.flip(d),
    "narrow": lambda x, d: x.narrow(d, 0, 1),
    "select": lambda x, d: x.select(d, 0),
    "unsqueeze": lambda x, d: x.unsqueeze(d),
    "transpose": lambda x, d: x.transpose(d, 0),
    "gather": lambda x, d: x.gather(d, tp.zeros(2, 1, dtype=I64)),
    "scatter": lambda x, d: x.scatter(d, tp.zeros(2, 1, dtype=I64), 1.0),
    "scatter_add": lambda x, d: x.scatter_add(d, tp.zeros(2, 1, dtype=I64), tp.ones(2, 1)),
    "index_select": lambda x, d: x.index_select(d, tp.tensor([0])),
    "index_fill": lambda x, d: x.index_fill(d, tp.tensor([0]), 1.0),
    "index_fill_": lambda x, d: x.clone().index_fill_(d, tp.tensor([0]), 2.0),
    "index_copy": lambda x, d: x.index_copy(d, tp.tensor([0]), tp.ones(2, 1)),
    "index_add": lambda x, d: x.index_add(d, tp.tensor([0]), tp.ones(2, 1)),
    "topk": lambda x, d: x.topk(1, d),
    "sort": lambda x, d: x.sort(d),
    "argsort": lambda x, d: x.argsort(d),
    "cat": lambda x, d: tp.cat([x, x], d),
    "stack": lambda x, d: tp.stack([x, x], d),
    "chunk": lambda x, d: x.chunk(2, d),
    "split": lambda x, d: x.split(1, d),
    "tensor_split": lambda x, d: x.tensor_split(2, d),
    "unbind": lambda x, d: x.unbind(d),
    "diff": lambda x, d: x.diff(dim=d),
    "quantile": lambda x, d: x.quantile(0.5, d),
    "argmax": lambda x, d: x.argmax(d),
    "sum": lambda x, d: x.sum(d),
    "max(dim)": lambda x, d: x.max(d, True),
    "unfold": lambda x, d: x.unfold(d, 2, 1),
    "repeat_interleave": lambda x, d: x.repeat_interleave(2, dim=d),
    "renorm": lambda x, d: x.renorm(2, d, 1.0),
    "cross": lambda x, d: tp.linalg.cross(tp.ones(3, 3), tp.ones(3, 3), dim=d),
    "size": lambda x, d: x.size(d),
    "stride": lambda x, d: x.stride(d),
}


@pytest.mark.parametrize("name", list(SINGLE_DIM_OPS))
def test_0dim_int_tensor_dim_is_the_int(name):
    f = SINGLE_DIM_OPS[name]
    got = f(_x(), IDX)
    want = f(_x(), 1)
    if isinstance(want, int):
        assert got == want
    else:
        _close(_vals(got), _vals(want))


@pytest.mark.parametrize("dim", [lambda: np.int64(1), lambda: tp.tensor(-1),
                                 lambda: tp.tensor(1, dtype=tp.int32),
                                 lambda: tp.tensor(1, dtype=tp.uint8)],
                         ids=["numpy int", "negative tensor", "int32 tensor", "uint8 tensor"])
@pytest.mark.parametrize("name", ["median", "cumsum", "softmax", "transpose", "narrow", "cat"])
def test_other_index_like_dims(name, dim):
    f = SINGLE_DIM_OPS[name]
    d = dim()
    _close(_vals(f(_x(), d)), _vals(f(_x(), int(d))))


def test_max_min_keyword_dim_tensor_is_the_dim():
    # torch: a keyword dim is always the dim overload, a positional tensor alone is `other`
    x = _x()
    v, i = x.max(dim=tp.tensor(1))
    assert v.tolist() == [2.0, 5.0] and i.tolist() == [2, 2]
    v, i = x.min(dim=tp.tensor(1))
    assert v.tolist() == [0.0, 3.0] and i.tolist() == [0, 0]
    v, i = tp.max(x, dim=tp.tensor(1))
    assert v.tolist() == [2.0, 5.0]
    v, i = tp.min(x, dim=tp.tensor(1), keepdim=True)
    assert v.tolist() == [[0.0], [3.0]]
    # a tensor with keepdim is the dim overload too
    assert x.max(tp.tensor(1), True).values.tolist() == [[2.0], [5.0]]
    assert x.max(tp.tensor(1), keepdim=True).values.tolist() == [[2.0], [5.0]]
    # alone and positional: the elementwise maximum (torch's Tensor other overload)
    assert x.max(tp.tensor(1)).tolist() == [[1.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert x.max(other=tp.tensor(4.0)).tolist() == [[4.0, 4.0, 4.0], [4.0, 4.0, 5.0]]
    assert tp.max(x, tp.tensor(1)).tolist() == [[1.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    # plain ints unchanged
    assert x.max(1).values.tolist() == [2.0, 5.0]
    assert x.max(dim=0).indices.tolist() == [1, 1, 1]


def test_max_keyword_dim_refuses_what_torch_refuses():
    x = _x()
    with pytest.raises(TypeError):
        x.max(dim=tp.tensor(1.0))         # torch: "invalid combination of arguments"
    with pytest.raises(TypeError):
        x.max(dim=tp.tensor([1]))
    with pytest.raises(TypeError):
        x.max(dim=True)
    with pytest.raises(TypeError, match="multiple values for argument 'dim'"):
        tp.max(x, 1, dim=1)


def test_0dim_int_tensor_dim_backward():
    x = tp.arange(6.0).reshape(2, 3).requires_grad_()
    x.cumsum(tp.tensor(1)).sum().backward()
    assert x.grad.tolist() == [[3.0, 2.0, 1.0], [3.0, 2.0, 1.0]]
    x.grad = None
    x.softmax(tp.tensor(-1)).select(tp.tensor(1), 0).sum().backward()
    assert x.grad.shape == (2, 3)


# -- 2. dim errors name the op the user called ------------------------------------------------
TORCH_RANGE = r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"


@pytest.mark.parametrize("call", [
    lambda x: x.nansum(5), lambda x: x.count_nonzero(5), lambda x: x.norm(dim=5),
    lambda x: x.logsumexp(5), lambda x: x.aminmax(dim=5), lambda x: x.size(5),
], ids=["nansum", "count_nonzero", "norm", "logsumexp", "aminmax", "size"])
def test_dim_out_of_range_is_torchs_text(call):
    with pytest.raises(IndexError, match="^" + TORCH_RANGE):
        call(_x())


@pytest.mark.parametrize("api,call", [
    ("median", lambda x: x.median(5)), ("cummax", lambda x: x.cummax(5)),
    ("cummin", lambda x: x.cummin(5)), ("kthvalue", lambda x: x.kthvalue(1, 5)),
    ("index_select", lambda x: x.index_select(5, tp.tensor([0]))),
    ("log_softmax", lambda x: x.log_softmax(5)), ("softmax", lambda x: x.softmax(5)),
    ("cumsum", lambda x: x.cumsum(5)), ("roll", lambda x: x.roll(1, 5)),
])
def test_dim_out_of_range_names_the_called_op(api, call):
    # torch's text; where tensorplay prefixes an op name it is the called op's
    with pytest.raises(IndexError, match=TORCH_RANGE) as e:
        call(_x())
    msg = str(e.value)
    prefix = msg[:msg.index("Dimension")]
    assert prefix in ("", f"{api}(): ", f"{api}: "), msg


@pytest.mark.parametrize("api,call", [
    ("median", lambda x, d: x.median(d)), ("kthvalue", lambda x, d: x.kthvalue(1, d)),
    ("cummax", lambda x, d: x.cummax(d)), ("index_select",
                                          lambda x, d: x.index_select(d, tp.tensor([0]))),
    ("logsumexp", lambda x, d: x.logsumexp(d)), ("count_nonzero",
                                                lambda x, d: x.count_nonzero(d)),
    ("nansum", lambda x, d: x.nansum(d)), ("size", lambda x, d: x.size(d)),
    ("roll", lambda x, d: x.roll(1, d)),
])
def test_bool_dim_error_names_the_called_op(api, call):
    # torch: "median(): argument 'dim' (position 1) must be int, not bool" (tuple of ints
    # for the list-taking ones); an inner op's name (sort, amax, sum, cat, index) was shown
    with pytest.raises(TypeError, match=rf"^{api}\(\): argument 'dim' must be") as e:
        call(_x(), True)
    assert "bool" in str(e.value)


@pytest.mark.parametrize("name", ["cumsum", "median", "softmax", "transpose", "unsqueeze",
                                  "topk", "sort", "max(dim)", "select", "narrow", "cat"])
def test_float_tensor_dim_is_torchs_type_error(name):
    # torch: "cumsum(): argument 'dim' (position 1) must be int, not Tensor"; it was
    # "Tensor.item(): fake/meta tensors have no data" or the op's inner arithmetic failing
    with pytest.raises(TypeError, match="must be int, not Tensor"):
        SINGLE_DIM_OPS[name](_x(), tp.tensor(1.0))


def test_size_stride_of_a_0dim_tensor():
    # torch: IndexError "Dimension specified as 0 but tensor has no dimensions" (it was
    # Python's "tuple index out of range")
    z = tp.tensor(1.0)
    for call, d in ((z.size, 0), (z.size, -1), (z.stride, 0), (z.size, 1)):
        with pytest.raises(IndexError, match=f"^Dimension specified as {d} but tensor has no "
                                             "dimensions$"):
            call(d)
    assert z.size() == () and _x().size(tp.tensor(-1)) == 3 and _x().stride(-2) == 3


# -- 3. dims torch refuses ----------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda x: x.softmax((0,)), lambda x: tp.softmax(x, (0,)), lambda x: x.log_softmax((1,)),
    lambda x: x.softmax(None), lambda x: tp.cat([x, x], dim=None),
    lambda x: tp.stack([x, x], dim=None),
], ids=["softmax tuple", "tp.softmax tuple", "log_softmax tuple", "softmax None", "cat None",
        "stack None"])
def test_non_int_single_dim_is_a_type_error(call):
    # torch: "softmax(): argument 'dim' (position 1) must be int, not tuple"; "cat(): argument
    # 'dim' must be int, not NoneType" (NumPy's axis=None flattened: a (12,) result)
    with pytest.raises(TypeError, match="argument 'dim' must be int, not (tuple|NoneType)"):
        call(_x())


@pytest.mark.parametrize("name", ["cumsum", "softmax", "transpose", "unsqueeze", "select",
                                  "narrow", "gather", "chunk", "split", "unbind", "argmax",
                                  "sort", "topk", "cat", "stack", "median", "size", "stride",
                                  "movedim"])
def test_true_is_no_dim(name):
    # torch: "...: argument 'dim' (position 1) must be int, not bool"; True was dim 1 here
    with pytest.raises(TypeError, match="bool"):
        SINGLE_DIM_OPS[name](_x(), True)


@pytest.mark.parametrize("call", [
    lambda x: x.flip(True), lambda x: x.flip((True,)), lambda x: x.view(True, 6),
    lambda x: x.permute((True, 0)), lambda x: tp.flip(x, True),
], ids=["flip", "flip tuple", "view", "permute", "tp.flip"])
def test_true_is_no_element_of_an_int_list(call):
    # torch: "flip(): argument 'dims' (position 1) must be tuple of ints, not bool"
    with pytest.raises(TypeError, match="bool"):
        call(_x())


@pytest.mark.parametrize("name", ["cumsum", "softmax", "transpose", "unsqueeze", "select",
                                  "median", "sort", "cat", "stack", "argmax", "size"])
def test_one_element_tensor_is_no_single_dim(name):
    # torch: "cumsum(): argument 'dim' (position 1) must be int, not Tensor": only a 0-dim
    # integer tensor is an int (tensor([1]) was taken through its __index__)
    with pytest.raises(TypeError, match="must be int, not Tensor"):
        SINGLE_DIM_OPS[name](_x(), tp.tensor([1]))


def test_bool_tensor_is_no_single_dim():
    with pytest.raises(TypeError, match="must be int, not Tensor"):
        _x().cumsum(tp.tensor(True))


@pytest.mark.parametrize("call", [
    lambda x: x.std(dim=True), lambda x: x.var(dim=True), lambda x: tp.std(x, dim=True),
    lambda x: tp.var(x, dim=True), lambda x: tp.std_mean(x, dim=True),
    lambda x: tp.var_mean(x, dim=True),
], ids=["std", "var", "tp.std", "tp.var", "std_mean", "var_mean"])
def test_keyword_dim_true_is_no_unbiased(call):
    # torch: "std() received an invalid combination of arguments - got (dim=bool, )"; only a
    # positional bool is `unbiased` (the all-elements overload)
    with pytest.raises(TypeError, match="dim=bool"):
        call(_x())


def test_positional_bool_is_still_unbiased():
    x = _x()
    assert x.std(True).item() == pytest.approx(1.8708287477493286)
    assert x.var(False).item() == pytest.approx(2.9166667)
    assert tp.var_mean(x, True)[0].item() == pytest.approx(3.5)
    assert x.std(0, True, True).shape == (1, 3)
    assert tp.std(x, dim=1).tolist() == pytest.approx([1.0, 1.0])


# -- 4. Tensor.register_post_accumulate_grad_hook (torch >= 2.1) ---------------------------------
def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    # torch: hook(tensor) after .grad holds the sum, once per backward; handle.remove()
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    h = x.register_post_accumulate_grad_hook(lambda t: calls.append((t is x, t.grad.tolist())))
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert calls == [(True, [3.0, 3.0]), (True, [6.0, 6.0])]
    h.remove()
    h.remove()                                   # idempotent, as torch's RemovableHandle
    (x * 3).sum().backward()
    assert len(calls) == 2


def test_post_accumulate_grad_hook_only_on_leaves_requiring_grad():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError,
                       match="post accumulate grad hooks cannot be registered on non-leaf "
                             "tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError,
                       match="cannot register a hook on a tensor that doesn't require gradient"):
        tp.ones(2).register_post_accumulate_grad_hook(lambda t: None)


def test_post_accumulate_grad_hook_must_return_none():
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda t: tp.zeros(2))
    with pytest.raises(RuntimeError, match="Tensor post accumulate grad hooks should return "
                                           "None."):
        (x * 3).sum().backward()
    y = tp.tensor([1.0, 2.0], requires_grad=True)
    y.register_post_accumulate_grad_hook(lambda t: 3)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        (y * 3).sum().backward()


def test_post_accumulate_grad_hook_may_return_the_tensor_itself():
    # torch's own docs example: an SGD step whose in-place add_ returns the parameter; also
    # on backward() of the leaf itself
    v = tp.tensor([0.0, 0.0, 0.0], requires_grad=True)
    h = v.register_post_accumulate_grad_hook(lambda p: p.add_(p.grad, alpha=-0.01))
    v.backward(tp.tensor([1.0, 2.0, 3.0]))
    assert v.tolist() == pytest.approx([-0.01, -0.02, -0.03])
    assert v.grad.tolist() == [1.0, 2.0, 3.0]
    h.remove()


def test_post_accumulate_grad_hook_order_and_sum():
    # torch: the tensor hooks (register_hook) first, then accumulation, then the post hooks
    # in registration order, once for a leaf used twice (its gradients summed first)
    v = tp.tensor([1.0], requires_grad=True)
    order = []
    v.register_post_accumulate_grad_hook(lambda t: order.append(("post1", t.grad.item())))
    v.register_hook(lambda g: order.append(("pre", g.item())))
    v.register_post_accumulate_grad_hook(lambda t: order.append(("post2", t.grad.item())))
    (v * 2 + v * 3).sum().backward()
    assert order == [("pre", 5.0), ("post1", 5.0), ("post2", 5.0)]


def test_post_accumulate_grad_hook_as_an_optimizer_step():
    # the documented use: step and clear .grad inside the hook
    p = tp.tensor([1.0, 2.0], requires_grad=True)

    def step(t):
        with tp.no_grad():
            t.sub_(0.1 * t.grad)
        t.grad = None
    p.register_post_accumulate_grad_hook(step)
    (p * p).sum().backward()
    assert p.tolist() == pytest.approx([0.8, 1.6]) and p.grad is None


def test_post_accumulate_grad_hook_with_inputs_and_not_with_autograd_grad():
    # torch: backward(inputs=[w]) accumulates (the hook runs); autograd.grad does not
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    c = []
    w.register_post_accumulate_grad_hook(lambda t: c.append(t.grad.tolist()))
    (w * w).sum().backward(inputs=[w])
    assert c == [[2.0, 4.0]]
    tp.autograd.grad((w * w).sum(), w)
    assert len(c) == 1


def test_post_accumulate_grad_hook_with_a_custom_function_and_create_graph():
    class Double(tp.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    Double.apply(x).sum().backward()
    assert seen == [[2.0, 2.0]]
    r = tp.tensor([1.0], requires_grad=True)
    rr = []
    r.register_post_accumulate_grad_hook(lambda t: rr.append(t.grad.requires_grad))
    (r * r).sum().backward(create_graph=True)
    assert rr == [True]


# -- 7. writes into expanded tensors -------------------------------------------------------------
_OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


@pytest.mark.parametrize("api,call", [
    ("add", lambda x, o: tp.add(x, x, out=o)), ("exp", lambda x, o: tp.exp(x, out=o)),
    ("tril", lambda x, o: tp.tril(x, out=o)), ("mul", lambda x, o: tp.mul(x, 2, out=o)),
    ("clamp", lambda x, o: tp.clamp(x, 0, 1, out=o)),
])
def test_out_into_an_expanded_tensor_names_the_called_op(api, call):
    # torch: RuntimeError "unsupported operation: more than one element of the written-to
    # tensor refers to a single memory location" (no op named); it named copy_ here, an
    # inner op, and its 'self' argument
    o = tp.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match=_OVERLAP) as e:
        call(_x(), o)
    msg = str(e.value)
    assert "copy_" not in msg and msg.startswith(f"{api}: argument 'out'"), msg
    assert o.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]      # nothing written


def test_out_tuple_with_an_expanded_second_out_writes_nothing():
    v, i = tp.zeros(1, 3).expand(2, 3).clone(), tp.zeros(1, 3, dtype=tp.int64).expand(2, 3)
    with pytest.raises(RuntimeError, match=_OVERLAP):
        tp.sort(_x(), 1, out=(v, i))
    assert v.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


@pytest.mark.parametrize("base,expand,method,diagonal,want", [
    ((1, 3), (3, 3), "tril_", 0, [[1.0, 0.0, 0.0]] * 3),
    ((1, 3), (3, 3), "triu_", 0, [[0.0, 0.0, 1.0]] * 3),
    ((3, 1), (3, 3), "tril_", 1, [[0.0] * 3, [1.0] * 3, [1.0] * 3]),
    ((1, 3), (3, 3), "triu_", -5, [[1.0] * 3] * 3),
    ((1, 3), (3, 3), "tril_", 5, [[1.0] * 3] * 3),
    ((1, 1, 3), (2, 3, 3), "tril_", 0, [[[1.0, 0.0, 0.0]] * 3] * 2),
])
def test_tril_triu_in_place_on_an_expanded_tensor(base, expand, method, diagonal, want):
    # torch allows it, without a warning: tril_/triu_ write only zeros, so every memory
    # location some element outside the triangle maps to becomes 0, whatever the order
    b = tp.ones(*base)
    x = b.expand(*expand)
    r = getattr(x, method)(diagonal)
    assert r is x
    assert x.tolist() == want


@pytest.mark.parametrize("dim,value", [(0, 5.0), (1, 5.0), (1, "tensor")])
def test_index_fill_on_an_expanded_tensor_warns_as_torch(dim, value):
    # torch: UserWarning "Use of index_fill_ on expanded tensors is deprecated. ..." (as
    # masked_fill_), then the write
    x = tp.ones(1, 3).expand(2, 3)
    v = tp.tensor(5.0) if value == "tensor" else value
    with pytest.warns(UserWarning, match="Use of index_fill_ on expanded tensors is "
                                         "deprecated. Please clone"):
        x.index_fill_(dim, tp.tensor([0]), v)
    assert x.tolist() == ([[5.0] * 3] * 2 if dim == 0 else [[5.0, 1.0, 1.0]] * 2)


# -- 5. x.data = y (torch's set_data) -----------------------------------------------------------
def test_data_setter_takes_the_memory_and_layout_keeps_identity():
    # torch: x keeps its identity and requires_grad, takes y's shape/dtype and memory
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = tp.arange(6.0).reshape(2, 3).double()
    same = x
    x.data = y
    assert x is same and x.requires_grad and x.is_leaf
    assert x.shape == (2, 3) and x.dtype == tp.float64
    y[0, 0] = 100.0
    assert x[0, 0].item() == 100.0                      # shares y's memory


def test_data_setter_then_backward_uses_the_new_data():
    w = tp.tensor([1.0, 2.0], requires_grad=True)
    w.data = tp.tensor([5.0, 6.0, 7.0])
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_data_setter_keeps_history_grad_and_version_counters_apart():
    q = tp.ones(2, requires_grad=True) * 2
    fn = q.grad_fn
    q.data = tp.zeros(2)
    assert q.grad_fn is fn and q.tolist() == [0.0, 0.0]
    b = tp.ones(2, requires_grad=True)
    g = tp.zeros(2)
    b.grad = g
    b.data = tp.ones(2) * 3
    assert b.grad is g
    # torch: d and e share memory, each keeps its own version counter
    d, e = tp.ones(2), tp.zeros(2)
    d.data = e
    e.add_(1)
    assert d.tolist() == [1.0, 1.0] and d._version == 0 and e._version == 1
    d.add_(1)
    assert e.tolist() == [2.0, 2.0] and d._version == 1


def test_data_setter_refusals_are_torchs():
    w = tp.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        w.data = [1, 2]
    with pytest.raises(RuntimeError, match="data set to a tensor that requires gradients must "
                                           "be floating point or complex dtype"):
        w.data = tp.arange(3)
    m = tp.ones(2)
    with pytest.raises(RuntimeError, match="incompatible tensor type"):
        m.data = tp.ones(2, device="meta")
    i = tp.ones(2, dtype=tp.int64)
    i.data = tp.ones(3, dtype=tp.float16)             # no grad: any dtype, as torch
    assert i.dtype == tp.float16 and i.shape == (3,)


def test_data_setter_on_a_view_is_refused_here():
    # torch lets a view take other memory while it keeps its _base; tensorplay's view history
    # would then rebase the base with it: refused, saying what to do instead
    a = tp.ones(4)
    v = a[:2]
    with pytest.raises(RuntimeError, match="on a view is not supported"):
        v.data = tp.zeros(3)
    assert v.tolist() == [1.0, 1.0]
