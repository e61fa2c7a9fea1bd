"""The built-in kernels are silent about floating point exceptions (x/0, log(0), overflow: torch
is), and nothing else is: the caller's NumPy error state and warnings filters apply to the
user's own code everywhere -- around op calls, in a custom op's body and backward formula, in
gradient hooks -- and each thread's state is its own. A kernel that calls a kernel (a backend
method running tensorplay ops), and kernels running in several threads at once, stay silent
and give IEEE results."""

import math
import threading
import warnings

import pytest

import tensorplay as tp
from tensorplay.library import custom_op

np = pytest.importorskip("numpy")


def _user_division():
    """The user's own NumPy code dividing by zero: warns, or raises under errstate(raise)."""
    return np.array([1.0], np.float32) / np.float32(0.0)


def test_ops_silent_and_callers_state_kept_under_errstate_raise():
    with np.errstate(all="raise"):
        before = np.geterr()
        assert (tp.tensor([1.0, -1.0]) / 0).tolist() == [math.inf, -math.inf]
        assert math.isnan(tp.tensor([-1.0]).sqrt().item())
        assert tp.tensor([0.0]).log().item() == -math.inf
        x = tp.zeros(3, requires_grad=True)
        x.sqrt().sum().backward()           # 0.5 / sqrt(0): inf, silently
        assert x.grad.tolist() == [math.inf] * 3
        assert np.geterr() == before
        with pytest.raises(FloatingPointError):
            _user_division()


def test_user_code_in_custom_op_body_formula_and_hook_keeps_the_users_state():
    seen = []

    def body(x: tp.Tensor) -> tp.Tensor:
        seen.append(("body", np.geterr()["divide"]))
        return x * 2.0

    def backward(ctx, g):
        seen.append(("formula", np.geterr()["divide"]))
        with pytest.raises(FloatingPointError):
            _user_division()
        return (g / 0.0) * 0.0 + g * 2.0    # the ops inside still silent

    op = custom_op("test_quiet_state::double", body, mutates_args=())
    op.register_autograd(backward)
    w = tp.ones(4, requires_grad=True)

    def hook(g):
        seen.append(("hook", np.geterr()["divide"]))
        with pytest.raises(FloatingPointError):
            _user_division()
        return g

    with np.errstate(divide="raise"):
        y = op(w)
        y.register_hook(hook)
        (y.log() / 0.0).sum().backward()
    assert [k for k, _ in seen] == ["body", "hook", "formula"]
    assert all(v == "raise" for _, v in seen)
    assert all(math.isnan(v) or math.isinf(v) for v in w.grad.tolist())


def test_user_warnings_still_warn_after_ops_and_inside_formulas():
    x = tp.ones(3, requires_grad=True)
    caught = []

    def hook(g):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            _user_division()
        caught.append(len(w))
        return g

    y = x * 2.0
    y.register_hook(hook)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (y / 0.0).sum().backward()
        tp.tensor([1.0]) / 0
        with pytest.raises(RuntimeWarning):
            _user_division()
    assert caught == [1]


def test_kernel_calling_a_kernel_is_silent():
    """A backend method (run inside its kernel) that runs tensorplay ops on the cpu: the inner
    kernels find the quiet state already in use and still run silently."""
    from tensorplay.testing.backend import MockBackend

    class Nested(MockBackend):
        def masked_select(self, x, mask):
            t = tp.from_numpy(np.ascontiguousarray(x))
            r = (t / 0.0) + (t * 0.0).exp()     # inf, -inf, nan: no warning
            return r.numpy()[np.broadcast_to(mask, x.shape)]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            with Nested("nestq") as _:
                a = tp.tensor([1.0, -1.0, 0.0], device="nestq")
                m = tp.tensor([True, False, True], device="nestq")
                out = a.masked_select(m)
                assert out.device.type == "nestq"
                v = out.cpu().tolist()
            assert v[0] == math.inf and math.isnan(v[1])
            with pytest.raises(FloatingPointError):
                _user_division()


def test_threads_running_kernels_at_once_stay_silent_and_keep_their_state():
    """Large kernels release the GIL, so other threads' kernels start while one runs: each
    stays silent, and each thread's own NumPy state is its own."""
    n_threads, rounds = 4, 15
    big = tp.arange(1, 1_000_001, dtype=tp.float32)
    errors, states = [], []
    barrier = threading.Barrier(n_threads)

    def work(i):
        try:
            mode = ("raise", "ignore", "warn", "raise")[i]
            with np.errstate(divide=mode):
                barrier.wait()
                for _ in range(rounds):
                    r = (big / 0.0).abs().sum()
                    assert r.item() == math.inf
                    s = (big * 0.0).log()
                    assert s[0].item() == -math.inf
                states.append((mode, np.geterr()["divide"]))
                if mode == "raise":
                    with pytest.raises(FloatingPointError):
                        _user_division()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors, errors
    assert sorted(states) == sorted((m, m) for m in ("raise", "ignore", "warn", "raise"))
