"""Review 42, registration, conversion and error findings of the torch bridge (findings 6, 8-13 of
the new-user review): a namespace torch reserves or owns, a kernel returning what its schema does
not declare, cuda without CuPy, kernel exceptions passed through unchanged, torch's default dtype,
an op redefined with a new schema, a float default torch cannot parse.

Anything that leaves a TensorPlay op torch refuses (which every later ``register()`` of this
session would report again), or that could crash the interpreter, runs in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tensorplay as tp
import tensorplay_torch
import torch
from tensorplay import library
from torch._subclasses.fake_tensor import FakeTensorMode

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "use-from-pytorch.md"


def _child(code: str, *, env: dict | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (no autoload unless ``env`` asks)."""
    e = {k: v for k, v in os.environ.items() if k != "TENSORPLAY_TORCH_AUTOLOAD"}
    e.update(env or {})
    p = subprocess.run([sys.executable, "-W", "always", "-c", textwrap.dedent(code)],
                       capture_output=True, text=True, env=e, timeout=300, check=False)
    if ok:
        assert p.returncode == 0, f"rc={p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def _notes(e: BaseException) -> str:
    return "\n".join(getattr(e, "__notes__", []))


# -- finding 6: namespaces torch reserves or owns ---------------------------------------------

def test_reserved_and_torch_owned_namespaces_are_named_and_the_others_register():
    p = _child("""
        import torch, tensorplay_torch
        from tensorplay import library
        for name in ("prim::my_scale", "prims::my_scale", "aten::rg42_scale",
                     "higher_order::my_scale", "load_library::my_scale",
                     "rg42good::my_scale", "_C::rg42_scale"):
            library.custom_op(name, lambda x: x * 3, mutates_args=(),
                              schema="(Tensor x) -> Tensor")
        spaces = ["prim", "prims", "aten", "higher_order", "load_library", "rg42good", "_C"]
        try:
            tensorplay_torch.register(namespace=spaces)
        except tensorplay_torch.BridgeError as e:
            print("BRIDGED", sorted(e.bridged))
            for name, msg in sorted(e.failed.items()):
                print("FAILED", name, "|", msg.replace("\\n", " "))
        print("CALL", torch.ops.rg42good.my_scale(torch.ones(2)).tolist(),
              torch.ops._C.rg42_scale(torch.ones(1)).tolist())
        # nothing left half-registered in torch
        print("LEFT", torch._C._jit_get_schemas_for_operator("aten::rg42_scale"),
              torch._C._jit_get_schemas_for_operator("prims::my_scale"))
        print("ALL", tensorplay_torch.bridged_ops())
        """)
    lines = p.stdout.splitlines()
    assert "BRIDGED ['_C::rg42_scale', 'rg42good::my_scale']" in lines
    failed = {ln.split()[1]: ln for ln in lines if ln.startswith("FAILED")}
    assert sorted(failed) == ["aten::rg42_scale", "higher_order::my_scale",
                              "load_library::my_scale", "prim::my_scale", "prims::my_scale"]
    for name, msg in failed.items():
        assert f"op {name} (pack __main__)" in msg
        assert "torch side" in msg and "rename" in msg.lower()
        assert "Another library already defines" not in msg
    assert "reserved namespace" in failed["prim::my_scale"]      # torch's own words kept
    assert "torch.ops.higher_order" in failed["higher_order::my_scale"]
    assert "CALL [3.0, 3.0] [3.0]" in lines
    assert "LEFT [] []" in lines
    assert "ALL ['_C::rg42_scale', 'rg42good::my_scale']" in lines


def test_an_op_name_torch_already_has_is_named_with_torchs_schema():
    # quantized::add is torch's (several overloads, none with an empty overload name): defining
    # it again would add an overload to torch's own operator
    p = _child("""
        import torch, tensorplay_torch
        from tensorplay import library
        before = len(torch._C._jit_get_schemas_for_operator("quantized::add"))
        library.custom_op("quantized::add", lambda x: x * 3, mutates_args=(),
                          schema="(Tensor x) -> Tensor")
        try:
            tensorplay_torch.register(namespace="quantized")
        except tensorplay_torch.BridgeError as e:
            print("MSG", e.failed["quantized::add"].replace("\\n", " "))
        print("AFTER", len(torch._C._jit_get_schemas_for_operator("quantized::add")) == before)
        """)
    msg = next(ln for ln in p.stdout.splitlines() if ln.startswith("MSG"))
    assert "op quantized::add (pack __main__)" in msg and "torch side" in msg
    assert "already has an operator quantized::add" in msg
    assert "quantized::add(Tensor qa, Tensor qb" in msg          # torch's own schema, quoted
    assert "AFTER True" in p.stdout


def test_a_pack_in_a_reserved_namespace_does_not_break_import_torch_with_autoload(tmp_path):
    site = tmp_path / "site"
    pack = site / "rg42_prim_pack"
    pack.mkdir(parents=True)
    (pack / "__init__.py").write_text(textwrap.dedent("""
        import pluggy
        hookimpl = pluggy.HookimplMarker("tensorplay")

        @hookimpl
        def tensorplay_register_ops(registrar):
            from tensorplay import library
            library.custom_op("prim::rg42_scale", lambda x: x * 2, mutates_args=(),
                              schema="(Tensor x) -> Tensor")
            library.custom_op("rg42pack::scale", lambda x: x * 5, mutates_args=(),
                              schema="(Tensor x) -> Tensor")
        """))
    info = site / "rg42_prim_pack-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rg42-prim-pack\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[tensorplay.plugins]\nrg42_prim_pack = rg42_prim_pack\n")
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    p = _child("""
        import torch
        print("OK", torch.ops.rg42pack.scale(torch.ones(1)).tolist(),
              hasattr(torch.ops.example, "gelu"))
        """, env={"PYTHONPATH": path, "TENSORPLAY_TORCH_AUTOLOAD": "1"})
    assert p.stdout.splitlines()[-1] == "OK [5.0] True"
    assert "RuntimeWarning" in p.stderr and "prim::rg42_scale" in p.stderr
    assert "pack rg42-prim-pack" in p.stderr and "reserved namespace" in p.stderr


def test_any_other_error_of_autoload_is_a_warning_not_a_failed_import_torch(tmp_path):
    # a broken install stood in for by a sitecustomize making TensorPlay's plugin loading raise
    # (not a BridgeError): import torch still works, the warning names the error
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent("""
        import tensorplay.plugins as plugins

        def load_all(*args, **kwargs):
            raise OSError("rg42: the plugin directory cannot be read")

        plugins.load_all = load_all
        """))
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    p = _child("import torch; print('OK', torch.ones(1).tolist())",
               env={"PYTHONPATH": path, "TENSORPLAY_TORCH_AUTOLOAD": "1"})
    assert p.stdout.splitlines()[-1] == "OK [1.0]"
    assert "RuntimeWarning" in p.stderr and "OSError" in p.stderr
    assert "rg42: the plugin directory cannot be read" in p.stderr


# -- finding 8: outputs the schema does not declare -------------------------------------------

def test_a_kernel_returning_what_its_schema_does_not_declare_is_refused_not_a_crash():
    p = _child("""
        import torch, tensorplay_torch, tensorplay as tp
        from tensorplay import library
        from torch._subclasses.fake_tensor import FakeTensorMode
        cases = {
            "three": ("(Tensor x) -> (Tensor, Tensor)", lambda x: (x * 1, x * 2, x * 3)),
            "one": ("(Tensor x) -> (Tensor, Tensor)", lambda x: (x * 1,)),
            "notensor": ("(Tensor x) -> (Tensor, Tensor)", lambda x: (x * 1, 3)),
            "tuple": ("(Tensor x) -> Tensor", lambda x: (x * 1, x * 2)),
            "none": ("(Tensor x) -> Tensor", lambda x: None),
            "lst": ("(Tensor x) -> Tensor[]", lambda x: [x * 1, 2]),
            "tensor_for_int": ("(Tensor x) -> (Tensor, int)", lambda x: (x * 1, x * 2)),
        }
        for name, (schema, body) in cases.items():
            library.custom_op(f"rg42out::{name}", body, mutates_args=(), schema=schema)
            f = library.custom_op(f"rg42outf::{name}", body, mutates_args=(), schema=schema)
            f.register_autograd(lambda ctx, *g: g[0], setup_context=lambda ctx, i, o: None)
        tensorplay_torch.register(namespace=["rg42out", "rg42outf"])
        for ns in ("rg42out", "rg42outf"):
            for name in cases:
                for grad in (False, True):
                    try:
                        r = getattr(getattr(torch.ops, ns), name)(
                            torch.ones(2, requires_grad=grad))
                        print("NOERR", ns, name, grad, type(r).__name__, flush=True)
                    except tensorplay_torch.BridgeError as e:
                        print("ERR", ns, name, grad, "|", str(e).replace("\\n", " "),
                              flush=True)
        with FakeTensorMode() as mode:      # the fake kernel (torch.compile, opcheck) too
            try:
                torch.ops.rg42out.three(mode.from_tensor(torch.ones(2)))
                print("NOERR fake")
            except tensorplay_torch.BridgeError as e:
                print("ERR fake |", str(e).replace("\\n", " "), flush=True)
        # a right kernel still works
        tensorplay_torch.register(namespace="example")
        print("GOOD", torch.ops.example.rms_norm(torch.ones(2, 4), torch.ones(4)).shape)
        """, ok=False)
    assert p.returncode == 0, f"rc={p.returncode} (139: a segfault)\n{p.stdout}\n{p.stderr}"
    lines = p.stdout.splitlines()
    assert not [ln for ln in lines if ln.startswith("NOERR")], lines
    errs = [ln for ln in lines if ln.startswith("ERR")]
    assert len(errs) == 7 * 2 * 2 + 1
    for ln in errs:
        assert "(pack __main__)" in ln and "schema" in ln and "returned" in ln, ln
    three = next(ln for ln in errs if ln.startswith("ERR rg42out three False"))
    assert "rg42out::three" in three and "(Tensor x) -> (Tensor, Tensor)" in three
    assert "a tuple of 3" in three
    assert "rg42out::three" in next(ln for ln in errs if ln.startswith("ERR fake"))
    assert "returned None" in next(ln for ln in errs if ln.startswith("ERR rg42out none"))
    assert "GOOD torch.Size([2, 4])" in lines


# -- finding 9: cuda without CuPy --------------------------------------------------------------

def test_cuda_without_cupy_names_the_device_the_op_and_the_install():
    # CuPy made unimportable (sys.modules entry None): the bridge's cuda kernel is reached on a
    # cpu-only machine through a factory op's device argument (torch's BackendSelect)
    p = _child("""
        import sys
        sys.modules["cupy"] = None
        import torch, tensorplay_torch, tensorplay as tp
        from tensorplay import library

        @library.custom_op("rg42fac::make", mutates_args=())
        def make(n: int, value: float, dtype: tp.dtype, device: tp.device) -> tp.Tensor:
            return tp.full((n,), value, dtype=dtype, device=device)

        tensorplay_torch.register(namespace="rg42fac")
        try:
            torch.ops.rg42fac.make(3, 7.0, torch.float32, "cuda")
        except Exception as e:
            print("TYPE", type(e).__name__, isinstance(e, tensorplay_torch.BridgeError),
                  isinstance(e, tp.errors.DeviceUnavailableError))
            print("MSG", str(e).replace("\\n", " "))
        print("CPU", torch.ops.rg42fac.make(2, 7.0, torch.float32, "cpu").tolist())
        """)
    lines = p.stdout.splitlines()
    assert "TYPE" in p.stdout, p.stdout + p.stderr
    assert next(ln for ln in lines if ln.startswith("TYPE")).endswith("True True")
    msg = next(ln for ln in lines if ln.startswith("MSG"))
    assert "op rg42fac::make (pack __main__)" in msg and "'cuda'" in msg
    assert "tensorplay-cuda[cuda13]" in msg and "tensorplay-cuda[cuda12]" in msg
    assert "CuPy" in msg and "No module named" not in msg
    assert "CPU [7.0, 7.0]" in lines


def test_the_guides_install_line_says_how_to_get_the_cuda_device():
    text = GUIDE.read_text()
    head = text.split("## 1.")[0]
    assert 'plugins/tensorplay_cuda[cuda13]' in head and "cuda12" in head


# -- finding 10: kernel exceptions pass through unchanged --------------------------------------

class _ShapeError(Exception):
    def __init__(self, code, msg):
        super().__init__(f"[{code}] {msg}")
        self.code = code


class _QuotaError(Exception):
    def __init__(self, msg, limit=0):
        super().__init__(msg)
        self.limit = limit


_RAISED: list = []


def _raise(n):
    e = _ShapeError(7, "bad shape") if n == 1 else _QuotaError("too big", limit=1024)
    _RAISED.append(e)
    raise e


@library.custom_op("rg42exc::op", mutates_args=())
def _exc_op(x: tp.Tensor, n: int) -> tp.Tensor:
    if n:
        _raise(n)
    return x * 2


@library.custom_op("rg42exc::formula", mutates_args=())
def _exc_formula(x: tp.Tensor, n: int) -> tp.Tensor:
    return x * 2


def _exc_setup(ctx, inputs, output):
    if inputs[1] == 3:
        _raise(1)
    ctx.n = inputs[1]


def _exc_backward(ctx, g):
    _raise(ctx.n)


_exc_formula.register_autograd(_exc_backward, setup_context=_exc_setup)


@pytest.fixture(scope="module")
def exc_ops():
    tensorplay_torch.register(namespace="rg42exc")
    return torch.ops.rg42exc


@pytest.mark.parametrize("grad", [False, True])
def test_a_kernel_exception_arrives_unchanged_with_op_and_pack_in_a_note(exc_ops, grad):
    x = torch.ones(2, requires_grad=grad)
    _RAISED.clear()
    with pytest.raises(_ShapeError) as e:           # two constructor arguments: same type
        exc_ops.op(x, 1)
    assert e.value is _RAISED[-1] and e.value.code == 7 and str(e.value) == "[7] bad shape"
    notes = _notes(e.value)
    assert "op rg42exc::op (pack test_bridge_registration42)" in notes
    assert "TensorPlay kernel raised" in notes
    with pytest.raises(_QuotaError) as e:           # keyword attribute kept
        exc_ops.op(x, 2)
    assert e.value is _RAISED[-1] and e.value.limit == 1024
    assert notes.count("rg42exc::op") == 1


def test_formula_and_setup_context_exceptions_arrive_unchanged(exc_ops):
    y = exc_ops.formula(torch.ones(2, requires_grad=True), 2)
    with pytest.raises(_QuotaError) as e:
        y.sum().backward()
    assert e.value is _RAISED[-1] and e.value.limit == 1024
    assert "rg42exc::formula" in _notes(e.value) and "backward" in _notes(e.value)
    with pytest.raises(_ShapeError) as e:
        exc_ops.formula(torch.ones(2, requires_grad=True), 3)
    assert e.value.code == 7 and "setup_context" in _notes(e.value)


def test_a_fake_kernel_exception_arrives_unchanged(exc_ops):
    with FakeTensorMode() as mode, pytest.raises(_ShapeError) as e:
        exc_ops.op(mode.from_tensor(torch.ones(2)), 1)
    assert e.value.code == 7 and "rg42exc::op" in _notes(e.value)


# -- finding 11: torch's default dtype ----------------------------------------------------------

@library.custom_op("rg42dt::ramp", mutates_args=())
def _ramp(x: tp.Tensor) -> tp.Tensor:
    return x + tp.arange(x.shape[0]) * 0.1


def test_the_default_dtype_rule_is_documented_and_holds():
    tensorplay_torch.register(namespace="rg42dt")
    doc = tensorplay_torch.register.__doc__
    assert "set_default_dtype" in doc
    guide = GUIDE.read_text()
    assert "torch.set_default_dtype" in guide and "tp.set_default_dtype" in guide
    prior_torch, prior_tp = torch.get_default_dtype(), tp.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        # the rule: bodies use TensorPlay's default dtype, which torch's does not set
        assert torch.ops.rg42dt.ramp(torch.arange(3)).dtype == torch.float32
        tp.set_default_dtype(tensorplay_torch.DTYPES[torch.get_default_dtype()])
        assert torch.ops.rg42dt.ramp(torch.arange(3)).dtype == torch.float64
        with FakeTensorMode() as mode:          # the fake agrees (torch.compile)
            assert torch.ops.rg42dt.ramp(mode.from_tensor(torch.arange(3))).dtype == \
                torch.float64
    finally:
        torch.set_default_dtype(prior_torch)
        tp.set_default_dtype(prior_tp)


# -- finding 12: an op redefined with a new schema ----------------------------------------------

def test_an_op_redefined_with_a_new_schema_is_named_with_both_schemas():
    # torch cannot redefine an op in a running process: taking the old definition out and
    # defining the new one leaves the torch.ops objects held from before dangling (calling one
    # segfaults, torch 2.13), so the old registration stays and register() says so
    p = _child("""
        import torch, tensorplay_torch, tensorplay as tp
        from tensorplay import library

        @library.custom_op("rg42late::f", mutates_args=())
        def f(x: tp.Tensor) -> tp.Tensor:
            return x * 2

        @library.custom_op("rg42late::g", mutates_args=())
        def g(x: tp.Tensor) -> tp.Tensor:
            return x * 2
        print("FIRST", tensorplay_torch.register(namespace="rg42late"))
        held = torch.ops.rg42late.f

        @library.custom_op("rg42late::g", mutates_args=())    # same schema, new body
        def g(x: tp.Tensor) -> tp.Tensor:
            return x * 3
        print("AGAIN", tensorplay_torch.register(namespace="rg42late"))
        print("G", torch.ops.rg42late.g(torch.ones(1)).tolist())

        @library.custom_op("rg42late::f", mutates_args=())    # a new schema
        def f(x: tp.Tensor, k: float = 5.0) -> tp.Tensor:
            return x * k
        for _ in range(2):                                    # every call says it
            try:
                tensorplay_torch.register(namespace="rg42late")
                print("NOERR")
            except tensorplay_torch.BridgeError as e:
                print("ERR", e.bridged, list(e.failed), e.failed["rg42late::f"])
        print("SCHEMA", torch.ops.rg42late.f.default._schema)
        print("HELD", held(torch.ones(1)).tolist(), tensorplay_torch.bridged_ops())
        """)
    lines = p.stdout.splitlines()
    assert lines[:3] == ["FIRST ['rg42late::f', 'rg42late::g']", "AGAIN []", "G [3.0]"]
    errs = [ln for ln in lines if ln.startswith(("ERR", "NOERR"))]
    assert len(errs) == 2 and errs[0] == errs[1], errs
    err = errs[0]
    assert err.startswith("ERR [] ['rg42late::f']")
    assert "op rg42late::f (pack __main__)" in err and "redefined" in err
    assert "(Tensor x, float k=5.0) -> Tensor" in err and "(Tensor x) -> Tensor" in err
    assert "torch side" in err and "restart Python" in err
    assert "SCHEMA rg42late::f(Tensor x) -> Tensor" in lines
    assert "HELD [5.0] ['rg42late::f', 'rg42late::g']" in lines


# -- finding 13: float defaults torch cannot parse ---------------------------------------------

def test_a_float_default_torch_cannot_parse_is_named_without_a_wrong_hint():
    p = _child("""
        import math, torch, tensorplay_torch, tensorplay as tp
        from tensorplay import library
        for name, default in (("inf", "inf"), ("ninf", "-inf"), ("nan", "nan")):
            def body(x, hi=float(default)):
                return x
            library.custom_op(f"rg42dm::{name}", body, mutates_args=(),
                              schema=f"(Tensor x, float hi={default}) -> Tensor")

        @library.custom_op("rg42dm::clamp", mutates_args=())     # from annotations
        def clamp(x: tp.Tensor, hi: float = math.inf) -> tp.Tensor:
            return x.clamp(max=hi)
        library.custom_op("rg42dm::ok", lambda x, hi=2.5: x * hi, mutates_args=(),
                          schema="(Tensor x, float hi=2.5) -> Tensor")
        try:
            tensorplay_torch.register(namespace="rg42dm")
        except tensorplay_torch.BridgeError as e:
            print("BRIDGED", e.bridged)
            for name, msg in sorted(e.failed.items()):
                print("FAILED", name, "|", msg.replace("\\n", " "))
        """)
    lines = p.stdout.splitlines()
    assert "BRIDGED ['rg42dm::ok']" in lines
    failed = [ln for ln in lines if ln.startswith("FAILED")]
    assert len(failed) == 4, p.stdout + p.stderr
    for ln in failed:
        assert "Another library already defines" not in ln
        assert "argument 'hi'" in ln and "torch side" in ln
        assert "float? hi=None" in ln            # what to do
    assert "default inf" in next(ln for ln in failed if "rg42dm::inf" in ln)
    assert "default nan" in next(ln for ln in failed if "rg42dm::nan" in ln)
