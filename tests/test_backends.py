"""The backend contract (``tensorplay.backends``) and the shipped test backend
(``tensorplay.testing.backend.MockBackend``): required and optional members, the load-time check
naming the plugin, and what the core asks of a backend (allocations, syncs, device switches,
multi-device refusals, storage sharing), seen through the test backend instead of private
constructors."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import tensorplay as tp
from tensorplay import backends
from tensorplay.errors import DeviceUnavailableError, DispatchError

np = pytest.importorskip("numpy")
from tensorplay.testing.backend import Allocation, MockBackend

# ---------------------------------------------------------------------------------------------
# the protocol


def test_required_and_optional_members_partition_the_protocol():
    assert not set(backends.REQUIRED) & set(backends.OPTIONAL)
    for name in backends.REQUIRED + backends.OPTIONAL:
        assert name in dir(backends.Backend) or name in backends.Backend.__annotations__, name
    # every optional member has a default on the protocol itself (what a subclass inherits);
    # the required ones are stubs a subclass must override (the check says which it did not)
    class Minimal(backends.Backend):
        device_type = "minimal"

        def wrap(self, arr, device):
            return arr
    m = Minimal()
    for name in backends.OPTIONAL:
        assert hasattr(m, name), name
    required, optional = backends.missing_members(m)
    assert optional == []
    assert required == [n for n in backends.REQUIRED if n not in ("device_type", "wrap")]


def test_optional_defaults_are_what_the_core_assumes():
    class Minimal(backends.Backend):
        device_type = "minimal"
    m = Minimal()
    assert m.is_available() == (True, "")
    assert m.device_count() == 1
    assert m.synchronize() is None
    assert m.device_guard_needed() is False
    with m.device_guard(tp.device("cpu")):
        pass
    assert m.align_device is None
    f = object()
    assert m.guard_kernel(None, f) is f
    assert m.kernels() == {}
    assert m.fuse_elementwise(None) is None
    assert m.fuses_row_reductions is False
    assert m.manual_seed(1) is None
    for name, args in (("rand", ((2,), tp.float32, None)), ("randn", ((2,), tp.float32, None)),
                       ("from_dlpack", (None,)), ("data_ptr", (None,))):
        with pytest.raises(NotImplementedError, match="device 'minimal'"):
            getattr(m, name)(*args)


def test_installed_backends_conform(cpu):
    be = backends.get("cpu")
    assert isinstance(be, backends.Backend)
    assert isinstance(be, backends.ArrayBackend)
    assert backends.missing_members(be) == ([], [])
    assert backends.get(tp.device("cpu")) is be
    assert backends.loaded()["cpu"] is be


def test_unknown_device_lookup_names_the_fix():
    with pytest.raises(DeviceUnavailableError, match="device 'nosuchdev' is not available"):
        backends.get("nosuchdev")


_BROKEN_PLUGIN = '''
from tensorplay.plugins import DeviceSpec, hookimpl

TENSORPLAY_API_VERSION = 1


class HalfBackend:
    """Matches the protocol only partly: no as_strided, no wrap (and no optional members)."""
    device_type = "halfdev"

    def empty(self, shape, dtype, device): ...


class NoDefaults:
    """Every required member, but it neither subclasses Backend nor defines the optional ones."""
    device_type = "nodefaults"
''' + "".join(f"    def {m}(self, *a): ...\n" for m in (
    "native_dtype", "dtype_of", "wrap", "as_strided", "empty", "full", "arange", "from_host",
    "to_host", "assign", "scatter_add", "index_put", "masked_select", "masked_scatter")) + '''

@hookimpl
def tensorplay_devices():
    return [DeviceSpec("halfdev", "halfplug:HalfBackend"),
            DeviceSpec("nodefaults", "halfplug:NoDefaults")]
'''


def test_a_backend_lacking_required_members_fails_naming_plugin_members_and_fix(plugin_env, cpu):
    make, env = plugin_env
    make("tensorplay-halfdev", "halfplug", _BROKEN_PLUGIN)
    code = textwrap.dedent('''
        import tensorplay as tp
        for dev in ("halfdev", "nodefaults"):
            try:
                tp.zeros(2, device=dev)
                print("no error")
            except tp.errors.DeviceUnavailableError as e:
                print("ERR", e)
        print("cpu still works:", (tp.ones(2) + 1).tolist())
        print("status:", tp.plugins.device_status("halfdev")[0], "cpu" in tp.plugins.available_devices(),
              "halfdev" in tp.plugins.available_devices())
        print("loaded:", sorted(tp.backends.loaded()))
    ''')
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    half, nodef, cpu_line, status, loaded = r.stdout.strip().splitlines()[-5:]
    assert status == "status: False True False"
    assert half.startswith("ERR device 'halfdev': plugin tensorplay-halfdev"), half
    assert "halfplug:HalfBackend" in half
    assert "lacks required member(s)" in half and "wrap" in half and "as_strided" in half, half
    assert "subclass tensorplay.backends.ArrayBackend" in half
    assert "reinstall tensorplay-halfdev" in half
    assert nodef.startswith("ERR device 'nodefaults'") and "optional member(s)" in nodef, nodef
    assert "subclass tensorplay.backends.Backend" in nodef
    assert cpu_line == "cpu still works: [2.0, 2.0]"
    assert "halfdev" not in loaded and "nodefaults" not in loaded


def test_register_refuses_bad_backends():
    class Half:
        device_type = "halfreg"
    with pytest.raises(TypeError, match="lacks required member"):
        backends.register(Half())
    with pytest.raises(TypeError, match="object has no device_type"):
        backends.register(object())
    with pytest.raises(ValueError, match="lower-case identifier"):
        backends.register(MockBackend("Bad-Name"))
    if "cpu" in backends.loaded():
        with pytest.raises(ValueError, match="already has a loaded backend"):
            backends.register(MockBackend("cpu"))


# ---------------------------------------------------------------------------------------------
# the test backend


def test_mock_backend_is_a_device_while_registered(cpu):
    be = MockBackend("mockdev")
    assert isinstance(be, backends.Backend)
    with be:
        t = tp.arange(6, dtype=tp.float32, device="mockdev").reshape(2, 3)
        assert t.device == tp.device("mockdev")
        assert (t * 2 + 1).sum().item() == 36.0
        assert t.cpu().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        assert backends.loaded()["mockdev"] is be
    assert "mockdev" not in backends.loaded()
    with pytest.raises(DeviceUnavailableError, match="mockdev"):
        tp.ones(2, device="mockdev")
    with pytest.raises((DeviceUnavailableError, DispatchError)):
        t + 1     # its kernels are unbound with it
    with MockBackend("mockdev"):   # and it can come back
        assert tp.ones(2, device="mockdev").tolist() == [1.0, 1.0]


def test_mock_backend_records_allocations_syncs_and_copies(cpu):
    with MockBackend("mockrec") as be:
        a = tp.zeros(2, 3, device="mockrec")
        assert be.allocations == [Allocation("full", (2, 3), tp.float32, tp.device("mockrec"))]
        be.reset()
        b = tp.tensor([[1, 2]], dtype=tp.int64, device="mockrec")
        assert be.allocations[0][:3] == ("from_host", (1, 2), tp.int64)
        be.reset()
        a.cpu()
        assert "to_host" in be.calls and be.allocations == []
        tp.ones(4).to("mockrec")
        assert [x.method for x in be.allocations] == ["from_other"]
        be.synchronize(tp.device("mockrec"))
        assert be.syncs == [tp.device("mockrec")]
        assert b.dtype == tp.int64 and be.wraps


def test_mock_backend_views_share_storage(cpu):
    with MockBackend("mockview"):
        base = tp.zeros(2, 3, device="mockview")
        row = base[1]
        row.add_(5)
        col = base.t()[2]
        assert base.tolist() == [[0.0, 0.0, 0.0], [5.0, 5.0, 5.0]]
        assert col.tolist() == [0.0, 5.0]
        assert row._version == base._version == 1
        assert not base.t().is_contiguous()
        assert base.t().contiguous().tolist() == [[0.0, 5.0], [0.0, 5.0], [0.0, 5.0]]


def test_mock_backend_two_devices_switch_and_refuse_mixing(cpu):
    with MockBackend("mock2", device_count=2) as be:
        d0, d1 = tp.device("mock2", 0), tp.device("mock2", 1)
        x = tp.ones(3, device=d1)
        be.reset()
        y = x.exp()
        assert y.device == d1
        assert be.switches == [d1, d0] and be.current == 0
        with pytest.raises(DispatchError, match="mock2:0") as ei:
            tp.ones(3, device=d0) + x
        assert "mock2:1" in str(ei.value)
        assert (x + tp.tensor(1.0)).device == d1      # a 0-dim cpu tensor joins
        with pytest.raises(DeviceUnavailableError, match="mock2:2"):
            tp.ones(1, device=tp.device("mock2", 2))


def test_mock_backend_guards_custom_op_kernels(cpu):
    @tp.library.custom_op("mockguard::twice", mutates_args=())
    def twice(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
        return x + y

    with MockBackend("mock3", device_count=2) as be:
        seen = []

        @twice.register_kernel("mock3")
        def _(x, y):
            seen.append(be.current)
            return x + y

        a = tp.ones(2, device="mock3:1")
        assert twice(a, a).tolist() == [2.0, 2.0]
        assert seen == [1]                     # ran with its tensors' device current
        assert be.current == 0
        with pytest.raises(DispatchError, match="mockguard::twice'?\\)?: expected all tensors"):
            twice(a, tp.ones(2, device="mock3:0"))


def test_manual_seed_reaches_backends_loaded_later(cpu):
    tp.manual_seed(7)
    with MockBackend("mockseed") as be:
        assert "manual_seed" in be.calls
        r1 = tp.rand(3, device="mockseed").tolist()
    tp.manual_seed(7)
    with MockBackend("mockseed"):
        assert tp.rand(3, device="mockseed").tolist() == r1


def test_compile_uses_a_backends_own_fuser(cpu):
    """``fuse_elementwise`` is an optional member: a backend defining it runs compiled chains."""
    chains = []

    class Fusing(MockBackend):
        def fuse_elementwise(self, expr):
            chains.append([s.op for s in expr.steps])
            # declines: the generic fuser runs

    with Fusing("mockfuse"):
        f = tp.compile(lambda x: (x * 2 + 1).exp())
        x = tp.ones(4, device="mockfuse")
        assert tp.testing.allclose(f(x), (x * 2 + 1).exp())
    assert chains and chains[0][:2] == ["mul", "add"]


def test_the_core_never_probes_backend_attributes():
    """Optional features are declared on ``Backend`` with their defaults, so the core calls them
    directly: no ``getattr``/``hasattr`` on a backend object anywhere in the core."""
    import pathlib
    import re
    root = pathlib.Path(tp.__file__).parent
    probe = re.compile(r"\b(getattr|hasattr)\(\s*(self\._backend|_backend|backend|be|dst|src_backend)"
                       r"\s*,")
    found = [f"{p.relative_to(root)}:{i}: {line.strip()}"
             for p in sorted(root.rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if probe.search(line)]
    assert found == []


_MISBEHAVING_PLUGIN = '''
from tensorplay.plugins import DeviceSpec, hookimpl
from tensorplay.testing.backend import MockBackend

TENSORPLAY_API_VERSION = 1


class Raising(MockBackend):
    def __init__(self):
        super().__init__("raisingdev")

    def is_available(self):
        raise RuntimeError("driver probe exploded")


class BareBool(MockBackend):
    def __init__(self):
        super().__init__("boolavail")

    def is_available(self):
        return True


class BadKernels(MockBackend):
    def __init__(self):
        super().__init__("badkernels")

    def kernels(self):
        raise RuntimeError("kernel table broken")


class Mismatch(MockBackend):
    def __init__(self):
        super().__init__("somethingelse")


@hookimpl
def tensorplay_devices():
    return [DeviceSpec("raisingdev", "misplug:Raising"), DeviceSpec("boolavail", "misplug:BareBool"),
            DeviceSpec("badkernels", "misplug:BadKernels"),
            DeviceSpec("mismatch", "misplug:Mismatch")]
'''


def test_a_misbehaving_backend_fails_naming_plugin_member_and_fix(plugin_env, cpu):
    """A backend whose is_available() raises or returns a bare bool, whose kernels() raises, or
    whose device_type differs from its DeviceSpec: DeviceUnavailableError naming the plugin's
    backend, the member and the contract; nothing is left loaded; other devices keep working."""
    pytest.importorskip("numpy")
    make, env = plugin_env
    make("tensorplay-misdev", "misplug", _MISBEHAVING_PLUGIN)
    code = textwrap.dedent('''
        import tensorplay as tp
        for dev in ("raisingdev", "boolavail", "badkernels", "mismatch"):
            for attempt in range(2):
                try:
                    tp.ones(2, device=dev)
                    print("no error")
                except tp.errors.DeviceUnavailableError as e:
                    print("ERR", e)
                except Exception as e:
                    print("RAW", type(e).__name__, e)
        print("cpu still works:", (tp.ones(2) + 1).tolist())
        print("loaded:", sorted(tp.backends.loaded()))
    ''')
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()[-10:]
    raising, raising2, bare, bare2, kern, kern2, mism, mism2, cpu_line, loaded = lines
    for line in lines[:8]:
        assert line.startswith("ERR device '"), line
        assert "plugin tensorplay-misdev" in line and "misplug:" in line, line
    assert raising == raising2 and bare == bare2 and kern == kern2 and mism == mism2
    assert "is_available() raised RuntimeError: driver probe exploded" in raising, raising
    assert "(available, reason)" in raising and "never raise" in raising, raising
    assert "is_available() returned True" in bare and "(available, reason)" in bare, bare
    assert "kernels" in kern and "kernel table broken" in kern, kern
    assert "device_type 'somethingelse'" in mism and "'mismatch'" in mism, mism
    assert cpu_line == "cpu still works: [2.0, 2.0]"
    for dev in ("raisingdev", "boolavail", "badkernels", "mismatch", "somethingelse"):
        assert f"'{dev}'" not in loaded, loaded


_NO_DRIVER_PLUGIN = '''
from tensorplay.errors import DeviceUnavailableError
from tensorplay.plugins import DeviceSpec, hookimpl


def make_backend():
    # a plugin that finds, cheaply, that its device cannot work here (no driver), and says so
    # without importing its array library
    raise DeviceUnavailableError("device 'nodriver' is not available: no driver for it is "
                                 "installed; use device='cpu' meanwhile")


@hookimpl
def tensorplay_devices():
    return [DeviceSpec("nodriver", "nodrvplug:make_backend")]
'''


def test_a_backend_factory_may_say_its_device_is_unavailable(plugin_env, cpu):
    """A ``DeviceSpec`` factory raising ``DeviceUnavailableError`` (the device cannot work here,
    found before building the backend) gives the device's reason as the plugin wrote it, not
    "could not load its backend ... reinstall": the plugin is not broken. Nothing is loaded, and
    the answer is the same each time."""
    make, env = plugin_env
    make("tensorplay-nodriver", "nodrvplug", _NO_DRIVER_PLUGIN)
    code = textwrap.dedent('''
        import tensorplay as tp
        for attempt in range(2):
            try:
                tp.ones(2, device="nodriver")
                print("no error")
            except tp.errors.DeviceUnavailableError as e:
                print("ERR", e)
        print("status", tp.plugins.device_status("nodriver"))
        print("loaded", sorted(tp.backends.loaded()))
    ''')
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    first, second, status, loaded = r.stdout.strip().splitlines()[-4:]
    assert first == second == ("ERR device 'nodriver' is not available: no driver for it is "
                               "installed; use device='cpu' meanwhile"), first
    assert "no driver for it is installed" in status and "False" in status, status
    assert "reinstall" not in status.lower() and "could not load" not in status, status
    assert "nodriver" not in loaded, loaded


def test_register_names_a_class_passed_instead_of_an_instance():
    with pytest.raises(TypeError, match=r"pass an instance.*MockBackend\(\)"):
        backends.register(MockBackend)


@pytest.mark.parametrize("count", [True, 0, 1.0, "2"])
def test_mock_backend_refuses_device_counts_that_are_not_positive_ints(count):
    with pytest.raises((TypeError, ValueError), match="device_count"):
        MockBackend("mockcount", device_count=count)


def test_wrap_native_builds_the_tensor_a_backend_returns(cpu):
    """A backend whose wrap uses the public wrap_native (no private constructor) gives tensors
    that work through the built-in ops; bad arguments are refused naming wrap_native."""
    np = pytest.importorskip("numpy")

    class NativeWrap(MockBackend):
        def wrap(self, arr, device):
            arr = np.ascontiguousarray(arr)
            return backends.wrap_native(self, arr, shape=tuple(arr.shape),
                                        dtype=self.dtype_of(arr), device=device,
                                        nbytes=arr.nbytes)
    with NativeWrap("nativewrap") as be:
        t = tp.arange(6, dtype=tp.float32, device="nativewrap").reshape(2, 3)
        assert t.device == tp.device("nativewrap") and t.dtype == tp.float32
        assert t.stride() == (3, 1) and not t.requires_grad and t.grad_fn is None
        assert ((t * 2).sum()).item() == 30.0
        a = np.ones((2, 2), np.float32)
        for kw, err in ((dict(dtype="float32"), TypeError), (dict(device="cpu"), TypeError),
                        (dict(device=tp.device("cpu")), ValueError),
                        (dict(shape=(2, -1)), ValueError)):
            args = dict(shape=(2, 2), dtype=tp.float32, device=tp.device("nativewrap"),
                        nbytes=a.nbytes)
            args.update(kw)
            with pytest.raises(err, match="wrap_native"):
                backends.wrap_native(be, a, **args)


def test_device_finder_reads_the_schemas_tensor_parameters(cpu):
    """backends.device_finder: the device of an op's tensor arguments of one device type, by
    position, keyword or inside a list; None without one; two devices refused naming both."""
    pytest.importorskip("numpy")
    from tensorplay import library
    from tensorplay.errors import DispatchError

    @library.custom_op("finder::f", mutates_args=())
    def f(x: tp.Tensor, ys: list[tp.Tensor], scale: float, *, z: tp.Tensor | None = None) -> tp.Tensor:
        return x.clone()
    try:
        with MockBackend("finderdev", device_count=2):
            find = backends.device_finder(f, "finderdev")
            a = tp.ones(2, device="finderdev:1")
            b = tp.ones(2, device="finderdev:0")
            c = tp.ones(2)
            assert find((a, [a], 1.0), {}) == tp.device("finderdev:1")
            assert find((c, [c], 1.0), {"z": a}) == tp.device("finderdev:1")
            assert find((c, [c], 1.0), {}) is None
            with pytest.raises(DispatchError, match=r"finder::f: expected all tensors on one "
                                                    r"device, found tensors on finderdev:1 and "
                                                    r"finderdev:0"):
                find((a, [c, b], 1.0), {})
            with pytest.raises(DispatchError, match="finderdev:1 and finderdev:0"):
                find((a, [], 1.0), {"z": b})
    finally:
        from tensorplay.testing import drop_ops
        drop_ops("finder")
