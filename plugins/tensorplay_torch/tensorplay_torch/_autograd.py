"""Autograd for bridged ops: torch's autograd served by the pack's own formula.

Each bridged op gets a torch ``Autograd`` kernel of the bridge's own (registered as
``torch.library.register_autograd`` registers its kernel: ``Library.impl(op, kernel, "Autograd",
with_keyset=True)``). ``register_autograd`` itself is not used: it refuses ops with keyword-only
tensor arguments, and TensorPlay's schemas allow them. Without grad the kernel redispatches below
autograd at once; with grad it runs a per-op ``torch.autograd.Function`` whose inputs are every
tensor of the call, positional and keyword-only, list elements flattened ("slots"), so each gets
its gradient.

torch traces that Function (``torch.compile``'s AOT autograd runs it on fake tensors), so its
forward and backward cannot call into TensorPlay directly. The work is therefore split:

* the Function's forward redispatches to the op's kernels, saves the tensor inputs and outputs
  with ``ctx.save_for_backward`` (torch's version counters then catch in-place changes before
  backward) and keeps the non-tensor inputs on ``ctx``; outputs the pack's ``setup_context``
  marks non-differentiable are marked on torch's side too (found once per op by running the
  pack's ``setup_context`` on TensorPlay fake tensors);
* its backward calls one opaque torch op, ``tensorplay_bridge::<ns>__<op>__backward``, whose
  kernel rebuilds the pack's ``ctx`` on real TensorPlay tensors (zero-copy) by running the
  pack's ``setup_context`` -- saved tensors and ``ctx`` attributes exactly as the pack set them,
  ``ctx.needs_input_grad`` from torch's -- and then the pack's ``backward`` (one gradient per
  argument in schema order, keyword-only ones included, as TensorPlay's rule is). Its fake says
  what torch's engine requires anyway: one gradient per tensor input, with that input's shape and
  dtype (contiguous); an input that needs no gradient gets an empty placeholder. In plain eager
  mode (nothing tracing) the backward runs that kernel directly, skipping the dispatcher.

Plain eager calls of an op with a formula and no list arguments (cpu or cuda tensors, nothing
tracing, no saved-tensor hooks: the keyset below autograd is the backend's alone) take a direct
path instead, the one most calls take: the Function's forward (``direct_forward``) runs the
TensorPlay op on the inputs crossed once and the pack's ``setup_context`` on those TensorPlay
tensors and output, as TensorPlay's own autograd does, and keeps that ctx on torch's ``ctx``;
its backward (``direct_backward``) only crosses the incoming gradients, runs the pack's
``backward`` on that ctx and crosses the results back. The torch inputs (and outputs a
``setup_context`` reads) are saved as above, for torch's version checks and for a backward
that runs under a torch mode after all (it takes the backward op). Without grad, plain cpu or
cuda tensors call the op's kernel directly (no dispatcher round trip). Gradients computed in
TensorPlay are not differentiable by torch: under ``create_graph=True`` they are made to
raise, naming the op, when differentiated again (``_Refuse``).

Ops returning ``Tensor[]`` or ``Tensor?`` (alone or in a tuple) get ``multi_kernel`` and a Function
of their own (``forward_multi``/``backward_multi``), leaving the paths above as they are: its
outputs are flattened (each list element an output of its own, as torch's ``supports_tensorlist``
does for ``custom_op``) and grouped again on return; in backward an undefined gradient of a tensor
output becomes zeros and that of an output that is None stays None, and the formula gets them as
TensorPlay's autograd hands them (a sole ``Tensor[]``'s one per element, a list beside other
outputs as one list), through the backward op (``tp_lens_`` carries the lists' lengths).

Ops without a formula whose kernel is their device-agnostic body written with TensorPlay ops
(CompositeImplicitAutograd) are differentiated by TensorPlay's autograd through that body. In
plain eager calls (the direct path's conditions, list arguments allowed) the Function's forward
(``keep_forward``) runs the body with TensorPlay's autograd recording and keeps that graph on
``ctx``; backward differentiates it, as TensorPlay's own autograd would -- with what the forward
drew, for a body that draws random numbers. Where torch runs the backward op instead (tracing,
saved-tensor hooks, ``Tensor[]``/``Tensor?`` returns) that op recomputes the forward inside
backward. An op tagged ``nondeterministic_seeded`` runs it with the seed its forward drew with
where the forward's kernel ran in this process's eager autograd (saved-tensor hooks, ``Tensor[]``
returns: ``ctx.tp_seed``), so it draws the forward's numbers; where the forward was traced
(torch.compile, make_fx) there is no such seed, and it is refused, naming the op (a recompute
would draw new numbers: a silently wrong gradient). An untagged op whose recompute draws is
refused too (TensorPlay's generators are watched while it runs: ``_seed.count_draws``). Where a
device kernel of its own runs instead of the body, TensorPlay's autograd refuses, naming the op:
the body's gradient would not be the running kernel's. Ops with neither get a backward that
raises naming the op (torch's own behaviour for custom ops without a formula).

A formula's result is held to TensorPlay's (and torch's) rules, raising ``BridgeError`` naming
the op, its pack and the position: one gradient per argument (too few or too many refused),
None for an argument that is not a tensor, and a shape that is the input's or broadcasts from it
(then summed to it). None for a tensor argument is no gradient: torch's engine gets None, as
from ``custom_op``'s formula (through the backward op, where a gradient cannot be None, an empty
placeholder that the Function turns into None; which gradients are None is found by running the
formula on TensorPlay fakes, ``_none_slots``, so that the backward op's fake says the same).

Ops tagged ``nondeterministic_seeded`` run with TensorPlay's generator seeded from torch's on each
call (``_seed.seeded_call``): ``torch.manual_seed`` makes them reproducible.

Ops that write arguments (``_Bridge.mutating_kernel``) with an argument requiring grad: a
``Tag.out`` op, and a written leaf that requires grad or a view of one, are refused before
anything is written; an op returning the arguments it writes (``Tag.inplace``) returns them
themselves, their history rebased onto a node whose backward raises naming the op.

Whether an argument requires grad is ``torch._C._any_requires_grad``'s answer, plus, for ops with
list arguments, their elements' (that function misses a list holding a None).
"""

from __future__ import annotations

import dis
import inspect

import tensorplay as tp
import torch
from tensorplay.autograd import FunctionCtx

from ._convert import (BridgeError, _needs_conversion, _value_to_tp, alias_error, check_aliasing,
                       fresh_returns, out_to_torch, pick_written, reraise, result_to_torch,
                       set_eval_frame, skip_dynamo, to_tp, written_returns)
from ._fake import fake_from_torch
from ._seed import count_draws, forget_seed, last_seed, run_seeded, seeded_call

__all__ = ["backward_schema", "bridge_autograd"]

BACKWARD_NS = "tensorplay_bridge"


def backward_schema(op) -> str:
    """Schema (without name) of the backward op of ``op``: the forward's arguments (no alias
    annotations, no defaults, all positional), the forward's outputs, the incoming gradients and
    the per-input ``needs_input_grad``; returns one tensor per tensor input. An op returning
    ``Tensor[]`` or ``Tensor?`` (``_multi_returns``) has its outputs and gradients flattened (a
    list's elements one by one) and one more argument, ``tp_lens_``: per return, a list's length
    (-1 for any other return), to group them again."""
    args = ", ".join(f"{a.type} {a.name}" for a in op.schema.arguments)
    sep = ", " if args else ""
    lens = ", int[] tp_lens_" if _multi_returns(op) else ""
    return (f"({args}{sep}Tensor?[] tp_outputs_, Tensor?[] tp_grads_, bool[] tp_needs_{lens}) "
            f"-> Tensor[]")


def _multi_returns(op) -> bool:
    """True when ``op`` returns a ``Tensor[]`` or a ``Tensor?`` (alone or in a tuple): its
    Function returns its outputs flattened (``_Bridge.forward_multi``)."""
    return any(r.type != "Tensor" and r.type.startswith("Tensor") for r in op.schema.returns)


def _is_tensor_arg(a) -> bool:
    return a.type.startswith("Tensor")


def _setup_form(setup) -> int:
    """3 for ``setup_context(ctx, inputs, output)``, 4 for torch's keyword-only form."""
    try:
        params = [p for p in inspect.signature(setup).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return 3
    return 4 if len(params) == 4 else 3


_ALL = "all"


def _read_params(fn) -> dict | None:
    """What ``fn``'s body reads of each positional parameter, from its bytecode: ``{index:
    "all" | frozenset of constant subscripts}`` (a parameter only ever read as ``p[0]`` or
    ``p["name"]`` maps to those keys; one never read is absent), or ``None`` when that cannot
    be known (not a plain function, ``*args``, ``locals()``/``eval`` in the body). Worked out
    once per formula, so that a ``setup_context`` that reads only ``inputs[1]`` (a float) does
    not get the tensor inputs or the outputs converted on every backward."""
    code = getattr(fn, "__code__", None)
    if code is None or inspect.ismethod(fn) or \
            code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or \
            {"locals", "vars", "eval", "exec"} & set(code.co_names):
        return None
    names = code.co_varnames[:code.co_argcount]
    # a parameter captured by a nested function: read in full
    reads: dict = {n: _ALL for n in names if n in code.co_cellvars}
    ins = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "EXTENDED_ARG")]
    for k, i in enumerate(ins):
        if i.opname in ("LOAD_DEREF", "LOAD_CLOSURE") or (i.opname.startswith("LOAD_FAST") and
                                                         isinstance(i.argval, tuple)):
            for n in (i.argval if isinstance(i.argval, tuple) else (i.argval,)):
                reads[n] = _ALL
        elif i.opname.startswith("LOAD_FAST") and i.argval in names and reads.get(i.argval) \
                is not _ALL:
            nxt = ins[k + 1:k + 3]
            if len(nxt) == 2 and nxt[0].opname in ("LOAD_CONST", "LOAD_SMALL_INT") and \
                    isinstance(nxt[0].argval, (int, str)) and \
                    not isinstance(nxt[0].argval, bool) and \
                    (nxt[1].opname == "BINARY_SUBSCR" or
                     (nxt[1].opname == "BINARY_OP" and nxt[1].argrepr == "[]")):
                key = nxt[0].argval
                if isinstance(key, int) and key < 0:
                    reads[i.argval] = _ALL
                else:
                    reads[i.argval] = reads.get(i.argval, frozenset()) | {key}
            else:
                reads[i.argval] = _ALL
    return {k: reads[n] for k, n in enumerate(names) if n in reads}


class _ProbeCtx(FunctionCtx):
    """The pack's ``ctx`` while its ``setup_context`` runs on fakes: records marked outputs."""

    def mark_non_differentiable(self, *tensors):
        self.marked = getattr(self, "marked", ()) + tuple(id(t) for t in tensors)
        super().mark_non_differentiable(*tensors)


def _call_setup(op, ctx, values, output, setup=None, form=None):
    """Run the pack's ``setup_context`` like TensorPlay does (inputs in schema order; torch's
    four-argument form gets the keyword-only ones as a dict)."""
    setup = op.setup_context_fn if setup is None else setup
    if setup is None:
        return
    if (form or _setup_form(setup)) == 4:
        args = op.schema.arguments
        pos = tuple(v for a, v in zip(args, values) if not a.kwarg_only)
        kw = {a.name: v for a, v in zip(args, values) if a.kwarg_only}
        setup(ctx, pos, kw, output)
    else:
        setup(ctx, tuple(values), output)


def _tag_names(op) -> frozenset:
    """``op``'s tags by name (``"out"``, ``"nondeterministic_seeded"``)."""
    return frozenset(str(getattr(t, "value", t)) for t in op.tags)


def _single_output(op) -> bool:
    return len(op.schema.returns) == 1 and not op.schema.returns_tuple


_Tensor = torch.Tensor
_grad_enabled = torch.is_grad_enabled
_any_requires_grad = torch._C._any_requires_grad
_below_autograd = torch._C._AutoDispatchBelowAutograd
_AFTER_AUTOGRAD = torch._C._after_autograd_keyset
_functorch_active = torch._C._are_functorch_transforms_active
# the innermost saved-tensor hooks (None: none); a torch without the function: never direct
_top_saved_hooks = getattr(torch._C._autograd, "_top_saved_tensors_default_hooks",
                           lambda ignore_is_tracing: ())
_TPTensor = tp.Tensor
_MISSING = object()
# the keysets an Autograd kernel gets for plain cpu / cuda tensors and no mode: below autograd
# only the backend's key is left
_CPU_RAW = (torch._C.DispatchKeySet(torch._C.DispatchKey.CPU) |
            torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradCPU)).raw_repr()
_CUDA_RAW = (torch._C.DispatchKeySet(torch._C.DispatchKey.CUDA) |
             torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradCUDA)).raw_repr()


class _Bridge:
    """One op's autograd bridge: its torch ``Autograd`` kernel (a ``torch.autograd.Function``
    whose inputs are every tensor of the op, keyword-only ones included) and the backward op's
    kernels.

    torch's ``register_autograd`` refuses keyword-only tensor arguments (its Function gets the
    positional ones only), and ``autograd.Function.apply`` would not track them either; so the
    bridge registers the ``Autograd`` kernel itself (``Library.impl(..., "Autograd",
    with_keyset=True)``, what ``register_autograd`` does underneath) and hands every tensor --
    positional, keyword-only, list elements -- to the Function as one flat list of "slots"."""

    def __init__(self, op, where, mode: str, overload):
        self.op = op
        self.where = where
        # "formula", "composite", "none" (backward raises) or "mutating" (the op writes an
        # argument: backward raises, as for torch's custom ops, which take no formula then)
        self.mode = mode
        self.formula = mode == "formula"
        self.refuse = mode in ("none", "mutating")
        self.overload = overload    # torch.ops.<ns>.<op>.default
        self.args = op.schema.arguments
        self.nargs = len(self.args)
        self.tensor_args = tuple(i for i, a in enumerate(self.args) if _is_tensor_arg(a))
        self.list_args = tuple(i for i in self.tensor_args if self.args[i].type.endswith("[]"))
        # does an argument require grad (the kernels' first test): list elements looked at too
        self.any_requires_grad = self._any_grad_lists if self.list_args else _any_requires_grad
        self.npos = sum(1 for a in self.args if not a.kwarg_only)
        self.kwnames = tuple(a.name for a in self.args if a.kwarg_only)
        # defaults as torch fills them (the dispatcher leaves out arguments equal to their
        # default): torch's own values, read once from the torch schema
        targs = overload._schema.arguments
        self.pos_defaults = tuple(a.default_value if a.has_default_value() else _MISSING
                                  for a in targs[:self.npos])
        self.kw_defaults = tuple((a.name, a.default_value if a.has_default_value() else _MISSING)
                                 for a in targs[self.npos:])
        self.single = _single_output(op)
        self.nreturns = len(op.schema.returns)
        self.tensor_returns = all(r.type == "Tensor" for r in op.schema.returns)
        # Tensor[] / Tensor? returns: the Function's outputs are flat (forward_multi); the
        # returns that are lists of tensors; a sole Tensor[] return's formula gets one gradient
        # per element (TensorPlay's rule), a list beside other returns one list of them
        self.multi = _multi_returns(op) and mode != "mutating"
        self.list_returns = frozenset(j for j, r in enumerate(op.schema.returns)
                                      if r.type.startswith("Tensor") and r.type.endswith("[]"))
        self.flat_grads = self.single and bool(self.list_returns)
        self._marked_by_lens: dict = {}     # forward_multi's probe, per list lengths
        self.marked = None          # output indices the pack marks non-differentiable (probed)
        self.bw_name = f"{op.namespace}__{op.opname}__backward"
        self.bw_op = None           # torch.ops.tensorplay_bridge.<bw_name>, set once defined
        self.bw_where = f"{where}, backward"
        self.cuda_kernel = None     # backward_kernel on torch's current CUDA stream
        self.cuda_eager = None      # eager_backward on torch's current CUDA stream
        self._needs_by_arg: dict = {}   # torch's needs_input_grad -> the pack's ctx's
        self.function = type(f"TensorPlayBridge_{op.namespace}_{op.opname}",
                             (torch.autograd.Function,),
                             {"forward": staticmethod(self.forward_multi if self.multi else
                                                      self.forward),
                              "backward": staticmethod(self.backward_multi if self.multi else
                                                       self.backward)})
        # what Function.apply runs when no functorch transform is active (_C._FunctionBase.apply),
        # bound once: Function.apply's own Python checks cost a few frames per call
        self._apply = super(torch.autograd.Function, self.function).apply
        # the pack's formula as last seen: (setup, its form, tensor arguments to convert,
        # convert outputs?)
        self._setup_plan = (_MISSING, 3, self.tensor_args, True)
        # plain eager calls of a formula op (no list arguments) take the direct path: the
        # forward runs the TensorPlay op itself and the pack's setup_context on the TensorPlay
        # tensors it already has, and the backward gets that ctx (see ``direct_forward``)
        self.direct = self.formula and not self.list_args and not self.multi
        self.convert_args = tuple(i for i, a in enumerate(self.args)
                                  if not _is_tensor_arg(a) and _needs_conversion(a))
        self.slot_of = (None if len(self.tensor_args) != 1 else self.tensor_args[0])
        self.fresh = fresh_returns(op)      # outputs that must not alias an input
        # one output, plain Tensor arguments only: the aliasing test is an identity test each
        self.alias_plain = (self.single and self.fresh == (0,) and
                            all(self.args[i].type == "Tensor" for i in self.tensor_args))
        # the arguments that are not tensors (kept on ctx for a backward that takes the backward
        # op after all) and the template when there are none (shared: only ever copied)
        self.other_args = tuple(i for i in range(self.nargs) if i not in self.tensor_args)
        self.no_others = (None,) * self.nargs
        self.direct_function = type(f"TensorPlayBridgeDirect_{op.namespace}_{op.opname}",
                                    (torch.autograd.Function,),
                                    {"forward": staticmethod(self.direct_forward),
                                     "backward": staticmethod(self.direct_function_backward)})
        self._direct_apply = super(torch.autograd.Function, self.direct_function).apply
        self.cuda_run = None        # _direct_run on torch's current CUDA stream
        self.kernels = (None, None)  # the op's torch kernels (cpu, cuda), see bridge_autograd
        self.cuda_direct = None     # direct_backward on torch's current CUDA stream
        names = set(op.mutates_args)
        self.mutated = tuple(i for i, a in enumerate(self.args) if a.name in names)
        # Tag.out: refused with grad (mutating_kernel); every return an argument it writes
        # (Tag.inplace, Tag.out): those arguments are the results, with a node of their own
        tags = _tag_names(op)
        self.out_tagged = "out" in tags
        # an op without a formula whose body draws random numbers: its body is never run again
        # in backward (backward_kernel refuses; plain eager calls keep the forward's graph)
        self.seeded = "nondeterministic_seeded" in tags
        # a seeded op differentiated through its body: its forward keeps the seed its call used
        # (ctx.tp_seed), and an eager backward runs the body again with it (the forward's
        # numbers: saved-tensor hooks, activation checkpointing); where there is none (tracing)
        # backward_kernel refuses
        self.seeded_body = self.seeded and mode == "composite"
        # what runs the TensorPlay op: seeded ops with TensorPlay's generator seeded from torch's
        # first (``_seed``), any other op as it is
        self.call = seeded_call(op) if self.seeded else op
        # plain eager calls of an op differentiated through its body keep the forward's
        # TensorPlay graph for backward (keep_forward) instead of recomputing the body
        self.keep = mode == "composite" and not self.multi
        if self.keep:               # its own Function (made only for the ops that take it)
            self.keep_function = type(f"TensorPlayBridgeBody_{op.namespace}_{op.opname}",
                                      (torch.autograd.Function,),
                                      {"forward": staticmethod(self.keep_forward),
                                       "backward": staticmethod(self.keep_backward)})
            self._keep_apply = super(torch.autograd.Function, self.keep_function).apply
        self.cuda_keep_run = None   # _keep_run on torch's current CUDA stream
        self.cuda_keep_grads = None  # _keep_grads on torch's current CUDA stream
        # gradients the pack's backward must return at least: one per argument, trailing
        # keyword-only non-tensor ones may be left out (TensorPlay's rule)
        n = self.nargs
        while n and self.args[n - 1].kwarg_only and not _is_tensor_arg(self.args[n - 1]):
            n -= 1
        self.nneeded = n
        self.picks = written_returns(op) if mode == "mutating" else None
        self.written_only = self.picks is not None

    # -- torch's side ------------------------------------------------------------------------
    def autograd_kernel(self, keyset, *args, **kwargs):
        """The op's ``Autograd`` kernel. torch's dispatcher passes the positional arguments in
        ``args`` and the keyword-only ones in ``kwargs`` (either may lack trailing arguments
        equal to their defaults). Without grad it redispatches below autograd at once.
        TorchDynamo's frame hook is off while it runs, as in the kernels (``_register``)."""
        prior = set_eval_frame(None)
        try:
            if not (_grad_enabled() and self.any_requires_grad(*args, **kwargs)):
                # plain cpu / cuda tensors, no mode: the backend's kernel is all the redispatch
                # would reach, so it is called here (no dispatcher round trip)
                raw = keyset.raw_repr()
                if raw == _CPU_RAW and self.kernels[0] is not None:
                    return self.kernels[0](*args, **kwargs)
                if raw == _CUDA_RAW and self.kernels[1] is not None:
                    return self.kernels[1](*args, **kwargs)
                with _below_autograd():
                    return self.overload.redispatch(keyset & _AFTER_AUTOGRAD, *args, **kwargs)
            n = len(args)
            values = args if n == self.npos and not self.kw_defaults else \
                self._values(args, kwargs)
            if self.list_args:
                slots = self._slots(values)
            elif self.slot_of is not None:
                slots = (values[self.slot_of],)
            else:
                slots = []          # a loop, not a list comprehension: no frame per call
                for i in self.tensor_args:
                    slots.append(values[i])
            if self.direct and _top_saved_hooks(True) is None:
                # the keyset below autograd is the backend's alone: no mode (fake, functional,
                # proxy, functorch, a __torch_dispatch__ subclass) would see the redispatch, so
                # running the kernel's work here is what the redispatch would do. Not under
                # saved-tensor hooks: what backward uses must come back through their unpack
                raw = keyset.raw_repr()
                if raw == _CPU_RAW:
                    return self._direct_apply(*slots, (values, False))
                if raw == _CUDA_RAW:
                    return self._direct_apply(*slots, (values, True))
            elif self.keep and _top_saved_hooks(True) is None:
                # an op without a formula, differentiated through its body: the same plain
                # eager call runs the body with TensorPlay's autograd recording, and backward
                # differentiates that graph (``keep_forward``)
                # only where the body is what runs (no device kernel of the pack's own: its
                # gradient is not the body's, and TensorPlay's autograd refuses it in backward)
                raw = keyset.raw_repr()
                if raw == _CPU_RAW and self.op.active_kernel("cpu") is None:
                    return self._keep_apply(*slots, (values, False))
                if raw == _CUDA_RAW and self.op.active_kernel("cuda") is None:
                    return self._keep_apply(*slots, (values, True))
            if _functorch_active():       # Function.apply says what torch supports there
                return self.function.apply(*slots, (keyset, args, kwargs, values))
            return self._apply(*slots, (keyset, args, kwargs, values))
        finally:
            set_eval_frame(prior)

    def _any_grad_lists(self, *args, **kwargs) -> bool:
        """``any_requires_grad`` of an op with list-of-tensors arguments (``Tensor[]``,
        ``Tensor?[]``, keyword-only ones included): ``torch._C._any_requires_grad`` misses the
        elements of a list holding a None (it reads such a list as no tensors at all), so an op
        whose list elements alone required grad ran without autograd; those lists' elements are
        looked at here when it says False. Ops without list arguments use that function itself
        (no work added to their calls)."""
        if _any_requires_grad(*args, **kwargs):
            return True
        n = len(args)
        for i in self.list_args:
            v = args[i] if i < self.npos and i < n else \
                kwargs.get(self.args[i].name) if i >= self.npos else None
            if v.__class__ in (list, tuple):
                for t in v:
                    if isinstance(t, _Tensor) and t.requires_grad:
                        return True
        return False

    def mutating_kernel(self, keyset, *args, **kwargs):
        """The ``Autograd`` kernel of an op that writes arguments (``mode == "mutating"``), as
        ``torch.library.custom_op`` registers for one: without grad it redispatches below
        autograd (the ``ADInplaceOrView`` kernel then bumps the written tensors' versions);
        with grad the op runs inside the op's ``autograd.Function``, so its outputs get a node
        whose backward raises naming the op and pack (without this kernel torch's fallback let
        backward run and leave the inputs' gradients silently missing).

        With grad, refused at once (``BridgeError`` naming the op, its pack and the argument;
        nothing is written): a ``Tag.out`` op (torch's words: "functions with out=... arguments
        don't support automatic differentiation", as torch's out= ops, ``custom_op`` and
        TensorPlay refuse it), and a written argument that is a leaf requiring grad or a view
        of one (as torch refuses its own in-place ops there). Any other written argument that
        requires grad is marked dirty (``ctx.mark_dirty``), so its history is rebased onto a
        node whose backward raises too (``custom_op`` leaves its history as it was, and the
        gradient through it silently wrong).

        An op whose every return is an argument it writes (``Tag.inplace``: ``Tensor(a!) ->
        Tensor(a!)``) returns those torch arguments themselves, as torch's in-place ops return
        ``self``: its Function's forward marks them dirty (an in-place ``autograd.Function``), so
        torch rebases their history onto the op's node, whose backward raises, and they require
        grad when any input does (``a`` written from ``w``, as after ``a.add_(w)``). Before,
        they were marked dirty apart from the Function, which invalidated its output over the
        same tensor: every use of the result raised torch's internal "is a view and its base
        ... has been modified inplace"."""
        prior = set_eval_frame(None)
        try:
            if not (_grad_enabled() and self.any_requires_grad(*args, **kwargs)):
                with _below_autograd():
                    return self.overload.redispatch(keyset & _AFTER_AUTOGRAD, *args, **kwargs)
            if self.out_tagged:
                raise BridgeError(
                    f"{self.where}: functions with out=... arguments don't support automatic "
                    f"differentiation, but one of the arguments requires grad (the op is tagged "
                    f"Tag.out, as torch's out= variants; refused by the bridge before anything "
                    f"is written, as torch and TensorPlay refuse it). Call it under "
                    f"torch.no_grad(), pass detached tensors, or use a functional op that "
                    f"returns a new tensor for gradients.")
            values = self._values(args, kwargs)
            dirty = []
            for i in self.mutated:
                v = values[i]
                for t in (v if isinstance(v, (list, tuple)) else (v,)):
                    if not isinstance(t, _Tensor):
                        continue
                    if not t.requires_grad:
                        continue
                    base = t._base
                    if t.is_leaf or (base is not None and base.is_leaf):
                        view = "" if t.is_leaf else "a view of "
                        raise BridgeError(
                            f"{self.where}: {view}a leaf Variable that requires grad is being "
                            f"used in an in-place operation: the op writes its argument "
                            f"{self.args[i].name!r}"
                            f"{', a view of a leaf that requires grad' if view else ''} (torch "
                            f"refuses this for its own in-place ops; nothing was written). Call "
                            f"it under torch.no_grad(), or on a tensor that does not require "
                            f"grad (e.g. a clone).")
                    dirty.append(t)
            slots = self._slots(values)
            state = (keyset, args, kwargs, values)
            if _functorch_active():       # Function.apply says what torch supports there
                out = self.function.apply(*slots, state)
            else:
                out = self._apply(*slots, state)
            if self.written_only:
                # the op returns the arguments it writes, marked dirty by the Function's
                # forward: torch hands them back themselves, their history rebased onto the
                # op's node (whose backward raises), as for an in-place autograd.Function
                return out
            # one node per written tensor, apart from the op's (torch's engine takes a Function
            # writing a view in place only with a single output)
            for t in dirty:
                _Written.apply(t, self)
            return out
        finally:
            set_eval_frame(prior)

    def multi_kernel(self, keyset, *args, **kwargs):
        """The ``Autograd`` kernel of an op returning ``Tensor[]`` or ``Tensor?`` (``self.multi``):
        as ``autograd_kernel``, but with grad its Function (``forward_multi``) returns the
        outputs flattened -- a list's elements one by one, as torch's ``supports_tensorlist``
        does for ``custom_op`` -- so that each element gets its gradient, and they are grouped
        again here into the schema's structure."""
        if not (_grad_enabled() and self.any_requires_grad(*args, **kwargs)):
            return self.autograd_kernel(keyset, *args, **kwargs)
        prior = set_eval_frame(None)
        try:
            values = self._values(args, kwargs)
            slots = self._slots(values)
            state = [keyset, args, kwargs, values, None]    # forward_multi sets the lengths
            if _functorch_active():       # Function.apply says what torch supports there
                flat = self.function.apply(*slots, state)
            else:
                flat = self._apply(*slots, state)
            out = _group(flat, state[4])
            return out[0] if self.single else tuple(out)
        finally:
            set_eval_frame(prior)

    def forward_multi(self, ctx, *a):
        """``forward`` for an op returning ``Tensor[]`` or ``Tensor?``: the op through the
        dispatcher below autograd, its outputs flattened (``_flatten``; their lengths per return
        go back to ``multi_kernel`` in the state list), the tensor inputs (and tensor outputs,
        for a ``setup_context`` that reads them) saved, the non-tensor arguments and each flat
        output's metadata kept on ``ctx`` (a gradient torch leaves undefined becomes zeros of
        it in ``backward_multi``; an output that is None gets None, as TensorPlay's own
        autograd hands them to the formula)."""
        state = a[-1]
        keyset, args, kwargs, values = state[0], state[1], state[2], state[3]
        if self.seeded_body:
            forget_seed()
        with _below_autograd():
            out = self.overload.redispatch(keyset & _AFTER_AUTOGRAD, *args, **kwargs)
        if self.seeded_body:        # the seed the kernel drew with (None: it did not run)
            ctx.tp_seed = last_seed()
        outs = (out,) if self.single else tuple(out)
        flat, lens = self._flatten(outs)
        state[4] = lens
        meta = tuple((o.shape, o.dtype, o.device) if isinstance(o, _Tensor) else None
                     for o in flat)
        nslots = len(a) - 1
        with_outputs = self.formula and self._formula_plan()[3]
        if with_outputs:
            ctx.save_for_backward(*a[:nslots], *[o for o in flat if isinstance(o, _Tensor)])
        else:
            ctx.save_for_backward(*a[:nslots])
        template = self._template(values)
        ctx.tp_state = (template, nslots, with_outputs)
        ctx.tp_multi = (lens, meta)
        if self.formula:
            marked = self._marked_multi(values, outs, lens)
            if marked:
                ctx.mark_non_differentiable(*[flat[k] for k in marked])
        return tuple(flat)

    def _flatten(self, outs):
        """``(flat outputs, lengths)``: each return's value, a ``Tensor[]`` return's elements
        one by one; per return the list's length, or None for any other return."""
        flat, lens = [], []
        for j, o in enumerate(outs):
            if j in self.list_returns and o is not None:
                lens.append(len(o))
                flat.extend(o)
            else:
                lens.append(None)
                flat.append(o)
        return flat, lens

    def _marked_multi(self, values, outs, lens):
        """``_marked`` for ``forward_multi``: flat indices of the outputs the pack's
        setup_context marks non-differentiable (probed on TensorPlay fakes once per op and list
        lengths)."""
        key = (tuple(lens), tuple(o is None for o in outs))
        marked = self._marked_by_lens.get(key)
        if marked is None:
            probe = self._probe_marked(values, outs)
            marked = () if probe is None else tuple(
                k for k, o in enumerate(self._flatten(probe[0])[0]) if id(o) in probe[1])
            self._marked_by_lens[key] = marked
        return marked

    def backward_multi(self, ctx, *grads):
        """``backward`` for ``forward_multi``: one gradient per flat output; an undefined one
        of a tensor output becomes zeros of its metadata, that of an output that is not a
        tensor (None, a number) None, as TensorPlay hands them to a formula. Then the backward
        op's kernel directly in plain eager mode, the backward op itself otherwise (one
        opaque node for torch.compile / make_fx); ``tp_lens_`` carries the lists' lengths."""
        if self.refuse:
            _no_formula(self.where)
        saved = ctx.saved_tensors     # torch's version check of the saved tensors
        lens, meta = ctx.tp_multi
        grads = list(grads)
        for k, m in enumerate(meta):
            if m is None:
                grads[k] = None
            elif grads[k] is None:
                grads[k] = torch.zeros(m[0], dtype=m[1], device=m[2])
        template, nslots, with_outputs = ctx.tp_state
        values = self._rebuild(template, saved[:nslots])
        needs = list(ctx.needs_input_grad[:nslots])
        if with_outputs:
            rest = iter(saved[nslots:])
            outputs = [None if m is None else next(rest) for m in meta]
        else:
            outputs = [None] * len(meta)
        lens_arg = [-1 if n is None else n for n in lens]
        if _plain_eager(saved, grads):
            cuda = any(g is not None and g.is_cuda for g in grads) or \
                any(s is not None and s.is_cuda for s in saved)
            flat = (self.cuda_kernel if cuda else self.backward_kernel)(
                *values, outputs, grads, needs, lens_arg, eager=True,
                seed=getattr(ctx, "tp_seed", None))
            res = (*[g if need else None for g, need in zip(flat, needs)], None)
            if _grad_enabled():     # create_graph=True: torch records this backward's graph
                return self._once_differentiable(res, saved, grads)
            return res
        flat = self.bw_op(*values, outputs, grads, needs, lens_arg)
        return _from_backward_op(flat, needs, saved)

    def _values(self, args, kwargs):
        """Every argument in schema order, defaults filled in."""
        n = len(args)
        if n == self.npos and not self.kw_defaults:
            return args
        values = list(args) + list(self.pos_defaults[n:])
        for name, default in self.kw_defaults:
            values.append(kwargs.get(name, default))
        return values

    def direct_forward(self, ctx, *a):
        """The Function's forward for a plain eager call (cpu or cuda tensors, no mode; see
        ``autograd_kernel``): the TensorPlay op runs here on the inputs crossed once, the pack's
        ``setup_context`` runs on those same TensorPlay tensors and output (as TensorPlay's own
        autograd runs it: in forward, ``needs_input_grad`` set), and its ctx is kept on torch's
        ``ctx`` for ``direct_backward`` -- so the tensors the pack saves cross to TensorPlay once,
        here, and never again in backward. The torch inputs (and outputs, for a setup_context
        that reads them) are still saved with ``save_for_backward``: torch's version counters
        then catch in-place changes before backward, and a backward run under a torch mode
        after all (a ``TorchDispatchMode``, tracing) takes the backward op from them, as after
        ``forward``. Everything backward needs is one tuple on ``ctx`` (``tp_direct``: the
        pack's ctx and backward, the device, and the non-tensor arguments for that op)."""
        values, on_cuda = a[-1]
        nslots = len(a) - 1
        needs = ctx.needs_input_grad
        per_arg = self._needs_by_arg.get(needs)
        if per_arg is None:
            per_arg = self._per_arg_needs(needs)
        plan = self._setup_plan
        if self.op._setup_context is not plan[0]:     # setup_context_fn without its frame
            plan = self._formula_plan()
        out, tctx, backward, marked = (self.cuda_run if on_cuda else self._direct_run)(
            values, per_arg, plan)
        with_outputs = plan[3]
        if with_outputs:
            self._save(ctx, a, nslots, (out,) if self.single else out, True)
        else:                   # the inputs only (_save's common case, without its frame)
            ctx.save_for_backward(*a[:nslots])
        others = self.other_args
        if others:
            template = [None] * self.nargs
            for i in others:
                template[i] = values[i]
        else:
            template = self.no_others
        ctx.tp_direct = (tctx, backward, on_cuda, template, nslots, with_outputs)
        if marked:
            outs = (out,) if self.single else out
            ctx.mark_non_differentiable(*[outs[i] for i in marked])
        return out

    def keep_forward(self, ctx, *a):
        """The Function's forward for a plain eager call (cpu or cuda tensors, no mode, no
        saved-tensor hooks; see ``autograd_kernel``) of an op without a formula differentiated
        through its body: the body runs here on the inputs crossed once, with TensorPlay's
        autograd recording (the inputs torch needs gradients for require grad on the
        TensorPlay side), and that graph is kept on ``ctx`` for ``keep_backward`` -- as
        TensorPlay's own autograd differentiates the op, with what the forward drew (a random
        mask) and without running the body again. The torch inputs are saved with
        ``save_for_backward`` (torch's version checks; the backward op when a backward runs
        under a torch mode after all)."""
        values, on_cuda = a[-1]
        nslots = len(a) - 1
        out, graph = (self.cuda_keep_run if on_cuda else self._keep_run)(
            values, ctx.needs_input_grad)
        ctx.save_for_backward(*a[:nslots])
        template = self._template(values)
        ctx.tp_state = (template, nslots, False)
        ctx.tp_keep = (graph, on_cuda)
        return out

    def _keep_run(self, values, needs):
        """``keep_forward``'s TensorPlay side: ``(torch output, (TensorPlay outputs with their
        graph, per slot the TensorPlay input differentiated or None))``."""
        where = self.where
        op = self.op
        tvals = list(values)
        for i in self.tensor_args:
            v = tvals[i]
            if v is not None:
                tvals[i] = self._to_tp(v, where)
        for i in self.convert_args:     # dtypes and devices as the kernel gets them
            tvals[i] = _value_to_tp(tvals[i], where)
        leaves = []
        for t, need in zip(self._slots(tvals), needs):
            if need and t is not None and t.is_floating_point():
                t.requires_grad_(True)
                leaves.append(t)
            else:
                leaves.append(None)
        with tp.autograd.enable_grad():
            out = self._run_op(tvals, where)
        if self.fresh:          # an output sharing an input's memory: refused, as the kernel does
            check_aliasing(op, where, out, tvals, None, self.fresh)
        if isinstance(out, _TPTensor):
            touts = (out,)
            tout = result_to_torch(out.detach(), where)
        elif not isinstance(out, (tuple, list)):    # a number: nothing to differentiate
            return out_to_torch(out, where), ((), leaves)
        else:
            touts = tuple(out)
            tout = out_to_torch(tuple(o.detach() if isinstance(o, _TPTensor) else o
                                      for o in touts), where)
        return tout, (touts, leaves)

    def keep_backward(self, ctx, *grads):
        """The backward of the Function that ``keep_forward`` ran: in plain eager mode (as
        ``direct_function_backward`` tests it) TensorPlay's autograd differentiates the kept
        graph (``_keep_grads``); else the backward op (``_op_backward``), which runs the body
        again -- refused for an op tagged ``nondeterministic_seeded`` (``backward_kernel``)."""
        saved = ctx.saved_tensors     # torch's version check of the saved tensors
        plain = not _dispatch_stack_len() and _peek_functorch() is None
        if plain:
            for g in grads:
                if g is not None and g.__class__ is not _Tensor:
                    plain = False
                    break
        if not plain:
            template, nslots, _ = ctx.tp_state
            return self._op_backward(saved, grads, ctx.needs_input_grad, template, nslots,
                                     False)
        graph, on_cuda = ctx.tp_keep
        res = (self.cuda_keep_grads if on_cuda else self._keep_grads)(
            graph, saved, grads, ctx.needs_input_grad)
        if _grad_enabled():     # create_graph=True: torch records this backward's graph
            return self._once_differentiable(res, saved, grads)
        return res

    def _keep_grads(self, graph, saved, grads, needs):
        """``keep_backward``'s TensorPlay side: the vector-Jacobian product of the kept graph
        (``retain_graph``: torch may run this backward again under ``retain_graph=True``; the
        graph goes with torch's node), one gradient per slot as ``_grad_to_torch`` makes it,
        None where torch needs none."""
        where = self.bw_where
        touts, leaves = graph
        roots, gs = [], []
        for o, g in zip(touts, grads):
            if o.__class__ is _TPTensor and o.requires_grad and g is not None:
                roots.append(o)
                gs.append(to_tp(g, where))
        live = [t for t in leaves if t is not None]
        try:
            found = tp.autograd.grad(roots, live, gs, retain_graph=True, allow_unused=True) \
                if roots and live else [None] * len(live)
        except BridgeError:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, same type, naming op and side
            reraise(e, f"{where}: TensorPlay's autograd raised differentiating the op's body")
        found = iter(found)
        out = []
        for s, t, need in zip(saved, leaves, needs):
            g = None if t is None else next(found)
            out.append(_grad_to_torch(s, g, where) if need else None)
        out.append(None)                # the Function's state argument
        return tuple(out)

    def _template(self, values):
        """``values`` with each tensor slot replaced by what ctx keeps of it: a list's length, or
        None for one tensor (the tensors themselves go through save_for_backward)."""
        template = list(values)
        for i in self.tensor_args:
            v = values[i]
            template[i] = len(v) if v.__class__ in (list, tuple) else None
        return template

    def _run_op(self, tvals, where):
        """The TensorPlay op on the converted values (keyword-only ones by name); its errors
        re-raised with their own type, naming the op and the side."""
        try:
            if self.kwnames:
                npos = self.npos
                return self.call(*tvals[:npos], **dict(zip(self.kwnames, tvals[npos:])))
            return self.call(*tvals)
        except BridgeError:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, same type, naming op and side
            reraise(e, f"{where}: the TensorPlay kernel raised")

    def _per_arg_needs(self, needs):
        """torch's ``needs_input_grad`` (one per slot, then the state argument) as the pack's
        ctx has it (one per argument), cached per pattern."""
        per_arg = [False] * self.nargs
        for i, need in zip(self.tensor_args, needs):
            per_arg[i] = need
        per_arg = self._needs_by_arg[needs] = tuple(per_arg)
        return per_arg

    def _direct_run(self, values, per_arg, plan):
        """``direct_forward``'s TensorPlay side: ``(torch output, the pack's ctx, its backward,
        indices of the outputs its setup_context marked non-differentiable)``."""
        where = self.where
        op = self.op
        tvals = list(values)
        for i in self.tensor_args:
            v = tvals[i]
            if v is not None:
                tvals[i] = to_tp(v, where)
        for i in self.convert_args:
            tvals[i] = _value_to_tp(tvals[i], where)
        out = self._run_op(tvals, where)
        # an output sharing an input's memory where the schema declares no alias: refused, as
        # the kernel (_register._kernel) refuses it; one identity test for one tensor in and out
        if self.alias_plain:
            if out.__class__ is _TPTensor:
                st = out.storage_ref
                for i in self.tensor_args:
                    if tvals[i].storage_ref is st:
                        alias_error(op, where, 0, i)
        elif self.fresh:
            check_aliasing(op, where, out, tvals, None, self.fresh)
        tctx = FunctionCtx()
        tctx.needs_input_grad = per_arg
        setup = plan[0]
        backward = op._backward         # backward_fn without its frame
        if setup is not None:
            try:
                if plan[1] == 3:
                    setup(tctx, tuple(tvals), out)
                else:
                    _call_setup(op, tctx, tvals, out, setup, 4)
            except BridgeError:
                raise
            except Exception as e:  # noqa: BLE001 - re-raised, same type, naming op and side
                reraise(e, f"{where}: the pack's setup_context raised on the TensorPlay side")
        # the outputs the pack marked non-differentiable, read off its ctx (no probe on fakes)
        nd = tctx._non_diff
        marked = () if not nd else tuple(
            i for i, o in enumerate((out,) if self.single else out) if id(o) in nd)
        tout = result_to_torch(out, where) if out.__class__ is _TPTensor else out_to_torch(out, where)
        return tout, tctx, backward, marked

    def forward(self, ctx, *a):
        keyset, args, kwargs, values = a[-1]
        if self.seeded_body:
            forget_seed()
        with _below_autograd():
            out = self.overload.redispatch(keyset & _AFTER_AUTOGRAD, *args, **kwargs)
        if self.seeded_body:        # the seed the kernel drew with (None: it did not run)
            ctx.tp_seed = last_seed()
        if self.refuse:
            if self.written_only:   # in place: the written arguments are the results
                ctx.mark_dirty(*[t for i in self.mutated for t in
                                 (values[i] if isinstance(values[i], (list, tuple))
                                  else (values[i],)) if isinstance(t, _Tensor)])
                # the arguments themselves (under functionalization the redispatch returns
                # other objects; the arguments hold the written values)
                return pick_written(args, kwargs, self.picks)
            return out
        nslots = len(a) - 1
        outs = (out,) if self.single else out
        # the outputs are saved only for a setup_context that reads them (a composite's
        # backward recomputes the forward: it never does)
        with_outputs = self.formula and self._formula_plan()[3]
        self._save(ctx, a, nslots, outs, with_outputs)
        # the non-tensor arguments (a list argument keeps its length); tensors come back from
        # the saved tensors, so torch's version counters guard them
        template = self._template(values)
        ctx.tp_state = (template, nslots, with_outputs)
        if self.formula and self.marked != ():
            marked = self._marked(values, outs)
            if marked:
                ctx.mark_non_differentiable(*[outs[i] for i in marked])
        return out

    def _marked(self, values, outs):
        """Indices of the outputs the pack's setup_context marks non-differentiable (probed once
        per op on TensorPlay fakes with these inputs' metadata)."""
        if self.marked is None:
            probe = self._probe_marked(values, outs)
            self.marked = () if probe is None else tuple(
                i for i, o in enumerate(probe[0]) if id(o) in probe[1])
        return self.marked

    def _probe_marked(self, values, outs):
        """``(fake outputs, ids of those the pack's setup_context marks non-differentiable)``,
        from one run of the setup on TensorPlay fakes of ``values``/``outs``; None when that
        fails (a setup_context that needs data: nothing is marked then, and the outputs get
        zero gradients)."""
        try:
            with tp.fake.FakeTensorMode():
                fv = [self._fake(v) for v in values]
                fo = [self._fake(o) for o in outs]
                ctx = _ProbeCtx()
                _call_setup(self.op, ctx, fv, fo[0] if self.single else tuple(fo))
            return fo, set(getattr(ctx, "marked", ()))
        except Exception:  # noqa: BLE001 - any failure on fakes: probe unusable, say nothing
            return None

    def _fake(self, v):
        if isinstance(v, torch.Tensor):
            return fake_from_torch(v, self.where)
        if isinstance(v, (list, tuple)):
            return [self._fake(x) for x in v]
        return _value_to_tp(v, self.where)     # dtypes and devices as the kernel gets them

    def backward(self, ctx, *grads):
        """The backward of the Function that ``forward`` ran (the op through torch's
        dispatcher): in plain eager mode the backward op's work runs here directly
        (``eager_backward``), else the backward op itself (``_op_backward``)."""
        if self.refuse:
            if self.mode == "mutating":
                _mutating_no_formula(self.where, self.op)
            _no_formula(self.where)
        saved = ctx.saved_tensors     # torch's version check of the saved tensors
        if _plain_eager(saved, grads):
            # nothing traces this backward: the backward op's work runs here directly (the op
            # exists for torch.compile / make_fx, which must see one opaque node); its results
            # go straight to torch's engine, as an autograd.Function's would
            cuda = grads[0].is_cuda if grads and grads[0] is not None else \
                any(s is not None and s.is_cuda for s in saved)
            run = self.cuda_eager if cuda else self.eager_backward
            res = run(saved, grads, ctx.needs_input_grad, ctx.tp_state,
                      ctx.tp_seed if self.seeded_body else None)
            if res.__class__ is _WithNone:  # a formula's None: as the backward op gives it
                res = self._settle_none(res, saved, grads, ctx.needs_input_grad, *ctx.tp_state)
            if _grad_enabled():     # create_graph=True: torch records this backward's graph
                return self._once_differentiable(res, saved, grads)
            return res
        template, nslots, with_outputs = ctx.tp_state
        return self._op_backward(saved, grads, ctx.needs_input_grad, template, nslots,
                                 with_outputs)

    def direct_function_backward(self, ctx, *grads):
        """The backward of the Function that ``direct_forward`` ran. In plain eager mode (no
        tracing mode on the dispatch stack, no functorch transform, plain tensors: what
        ``_plain_eager`` tests, inline) ``direct_backward`` runs the pack's backward on the ctx
        kept from forward, on the forward's device; else the backward op (``_op_backward``)
        from the saved torch tensors, as after ``forward``."""
        saved = ctx.saved_tensors     # torch's version check of the saved tensors
        tctx, backward, on_cuda, template, nslots, with_outputs = ctx.tp_direct
        plain = not _dispatch_stack_len() and _peek_functorch() is None
        if plain:
            for t in saved:         # loops, not all(genexpr): no frame per tensor
                if t.__class__ is not _Tensor:
                    plain = False
                    break
            for g in grads:
                if g is not None and g.__class__ is not _Tensor:
                    plain = False
                    break
        if plain:
            res = (self.cuda_direct if on_cuda else self.direct_backward)(
                tctx, backward, saved, grads, ctx.needs_input_grad)
            if res.__class__ is _WithNone:  # a formula's None: as the backward op gives it
                res = self._settle_none(res, saved, grads, ctx.needs_input_grad, template,
                                        nslots, with_outputs)
            if _grad_enabled():     # create_graph=True: torch records this backward's graph
                return self._once_differentiable(res, saved, grads)
            return res
        return self._op_backward(saved, grads, ctx.needs_input_grad, template, nslots,
                                 with_outputs)

    def _op_backward(self, saved, grads, needs, template, nslots, with_outputs):
        """``Function.backward``'s result through the backward op (one opaque node for
        torch.compile / make_fx), from the saved torch tensors and the non-tensor arguments
        (``template``)."""
        values = self._rebuild(template, saved[:nslots])
        needs = list(needs[:nslots])
        flat = self.bw_op(*values, self._outputs(saved, nslots, with_outputs), list(grads),
                          needs)
        return _from_backward_op(flat, needs, saved)

    def _once_differentiable(self, res, saved, grads):
        """The gradients ``res`` (one per Function input, None where none), each made to fail
        when differentiated again, naming the op: the formula ran in TensorPlay, outside
        torch's graph, so a second-order gradient through it would otherwise be silently
        missing. Each is tied (``_Refuse``) to the forward's inputs and the incoming gradients
        that require grad, so that torch's engine reaches the refusal from any of them."""
        tied = [t for t in (*saved, *grads) if t is not None and t.requires_grad]
        if not tied:
            return res
        how = ("the register_autograd formula runs in TensorPlay" if self.formula else
               "the op has no register_autograd formula: TensorPlay's autograd differentiates "
               "its body in TensorPlay")
        msg = (f"{self.where}: double backward is not supported (refused on the TensorPlay "
               f"side): {how}, outside torch's graph, so its gradients cannot be "
               f"differentiated again (create_graph=True)")
        return tuple(None if g is None else _Refuse.apply(msg, g, *tied) for g in res)

    def _outputs(self, saved, nslots, with_outputs):
        """The forward's outputs as the backward op takes them (None where not saved)."""
        if not with_outputs:
            return [None] * self.nreturns
        if self.tensor_returns:
            return list(saved[nslots:])
        rest = iter(saved[nslots:])
        return [next(rest) if r.type == "Tensor" else None for r in self.op.schema.returns]

    def _save(self, ctx, a, nslots, outs, with_outputs):
        """Save the tensor arguments (``a[:nslots]``), and the tensor outputs when the pack's
        ``setup_context`` reads them, for backward (torch's version counters guard them)."""
        if not with_outputs:
            ctx.save_for_backward(*a[:nslots])
        elif self.tensor_returns:
            ctx.save_for_backward(*a[:nslots], *outs)
        else:
            ctx.save_for_backward(*a[:nslots], *[o for o in outs if isinstance(o, _Tensor)])

    def direct_backward(self, tctx, backward, saved, grads, needs):
        """``Function.backward``'s result after ``direct_forward`` in plain eager mode: the
        pack's ``backward`` on the ctx its ``setup_context`` filled in forward (``tctx``);
        only the incoming gradients cross to TensorPlay and the results back (each as
        ``_grad_to_torch`` makes it: the input's dtype, shape and device, contiguous; None
        where torch needs none)."""
        where = self.bw_where
        tgrads = list(grads)        # a loop, not a list comprehension: no frame per call
        for k, g in enumerate(grads):
            if g is not None:
                tgrads[k] = to_tp(g, where)
        try:
            res = backward(tctx, *tgrads)
            if res.__class__ is _TPTensor and self.nargs == 1:
                res = (res,)        # a lone gradient, bare (as _per_arg takes it)
            elif res.__class__ is not tuple or len(res) != self.nargs:
                res = self._per_arg(res)    # TensorPlay's checks of the count and non-tensors
            else:
                for k in self.other_args:   # a gradient for a non-tensor argument: refused
                    if res[k] is not None:
                        res = self._per_arg(res)
                        break
        except BridgeError:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, same type, naming op and side
            reraise(e, f"{where}: the pack's backward raised on the TensorPlay side")
        i = self.slot_of
        if i is not None and needs[0] and i < len(res):
            # one tensor argument (the common case): _grads_out's first case, without its frame
            g = res[i]
            if g.__class__ is _TPTensor:
                tg = result_to_torch(g, where)
                s = saved[0]
                if tg.dtype is s.dtype and tg.shape == s.shape and tg.is_contiguous():
                    return (tg, None)
        return _grads_out(self.tensor_args, saved, needs, res, where, self.args)

    def eager_backward(self, saved, grads, needs, state, seed=None):
        """``Function.backward``'s result in plain eager mode: the backward op's kernel's work
        with torch's engine as the caller (``needs``: torch's ``ctx.needs_input_grad``, the
        trailing state argument included; a gradient is None where none is needed, and may
        share memory with an input, as an ``autograd.Function``'s may: torch's own
        ``register_autograd`` hands its formula's results to the engine unchecked too).

        This is the per-call path of every bridged call with grad, so the common case -- a
        formula, no list arguments -- runs in this one frame: no argument list rebuilt, no
        backward op arguments packed and unpacked, only the tensors the pack's
        ``setup_context`` reads crossing to TensorPlay."""
        template, nslots, with_outputs = state
        if not self.formula or self.list_args:
            values = self._rebuild(template, saved[:nslots])
            needs = list(needs[:nslots])
            flat = self.backward_kernel(*values, self._outputs(saved, nslots, with_outputs),
                                        list(grads), needs, eager=True, seed=seed)
            return (*[g if need else None for g, need in zip(flat, needs)], None)
        where = self.bw_where
        op = self.op
        setup = op.setup_context_fn
        plan = self._setup_plan
        if setup is not plan[0]:
            plan = self._formula_plan()
        tensor_args = self.tensor_args
        values = list(template)
        for i, s in zip(tensor_args, saved):
            values[i] = s
        for i in plan[2]:           # the tensor arguments the pack's setup_context reads
            s = values[i]
            if s is not None:
                values[i] = to_tp(s, where)
        for i in self.convert_args:  # dtypes and devices as the forward's kernel got them
            values[i] = _value_to_tp(values[i], where)
        tgrads = list(grads)        # a loop, not a list comprehension: no frame per call
        for k, g in enumerate(grads):
            if g is not None:
                tgrads[k] = to_tp(g, where)
        ctx = FunctionCtx()
        per_arg = self._needs_by_arg.get(needs)
        if per_arg is None:         # torch's needs (one per slot) -> TensorPlay's (per argument)
            per_arg = [False] * self.nargs
            for i, need in zip(tensor_args, needs):
                per_arg[i] = need
            per_arg = self._needs_by_arg[needs] = tuple(per_arg)
        ctx.needs_input_grad = per_arg
        try:
            if setup is not None:
                if with_outputs:
                    outs = [None if o is None else to_tp(o, where)
                            for o in self._outputs(saved, nslots, True)]
                else:
                    outs = [None] * self.nreturns
                out = outs[0] if self.single else tuple(outs)
                if plan[1] == 3:    # setup_context(ctx, inputs, output), as _call_setup calls it
                    setup(ctx, tuple(values), out)
                else:
                    _call_setup(op, ctx, values, out, setup, 4)
            res = op.backward_fn(ctx, *tgrads)
            if res.__class__ is not tuple or len(res) != self.nargs:
                res = self._per_arg(res)    # TensorPlay's checks of the count and non-tensors
            else:
                for k in self.other_args:   # a gradient for a non-tensor argument: refused
                    if res[k] is not None:
                        res = self._per_arg(res)
                        break
        except BridgeError:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, same type, naming op and side
            reraise(e, f"{where}: the pack's backward raised on the TensorPlay side")
        return _grads_out(tensor_args, saved, needs, res, where, self.args)

    def _rebuild(self, template, slots):
        values = list(template)
        if not self.list_args:
            for i, s in zip(self.tensor_args, slots):
                values[i] = s
            return values
        k = 0
        for i in self.tensor_args:
            n = template[i]             # a list argument's length; None: one slot
            if n is None:
                values[i] = slots[k]
                k += 1
            else:
                values[i] = list(slots[k:k + n])
                k += n
        return values

    # -- the backward op's kernels -----------------------------------------------------------
    def _slots(self, values):
        """The forward's tensor inputs, one per slot (list elements flattened; None kept)."""
        out = []
        for i in self.tensor_args:
            v = values[i]
            out.extend(v if isinstance(v, (list, tuple)) else [v])
        return out

    def backward_kernel(self, *args, eager=False, seed=None):
        """Kernel of the backward op (``eager``: called directly by ``backward``, not through
        torch's dispatcher; its results then need not be fresh tensors; ``seed``: for an op
        tagged ``nondeterministic_seeded`` without a formula, the seed its forward drew with --
        its body runs again with it -- else such an op is refused)."""
        if self.seeded and not self.formula and seed is None:
            _seeded_no_recompute(self.bw_where)
        nargs = self.nargs
        outputs, grads, needs = args[nargs:nargs + 3]
        where = self.bw_where
        tvals = list(args[:nargs])
        if self.formula:
            setup, form, convert, with_outputs = self._formula_plan()
        else:
            setup, form, convert, with_outputs = None, 3, self.tensor_args, False
        for i in convert:       # the tensor arguments the pack's code reads
            v = tvals[i]
            if v.__class__ is _Tensor:
                tvals[i] = to_tp(v, where)
            elif v is not None:
                tvals[i] = self._to_tp(v, where)
        for i in self.convert_args:     # dtypes and devices as the forward's kernel got them
            tvals[i] = _value_to_tp(tvals[i], where)
        tgrads = [None if g is None else to_tp(g, where) for g in grads]
        try:
            if self.formula:
                touts = [None if o is None else to_tp(o, where) for o in outputs] \
                    if with_outputs else [None] * len(outputs)
                tres = self._run_formula(tvals, touts, tgrads, needs, args, setup, form)
            else:
                tres = self._composite(tvals, tgrads, needs, seed)
        except BridgeError:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised, same type, naming op and side
            reraise(e, f"{where}: the pack's backward raised on the TensorPlay side")
        slots = [args[i] for i in self.tensor_args] if not self.list_args else \
            self._slots(args[:nargs])
        return self._grads_to_torch(slots, tres, needs, None if eager else args, where,
                                    args[:nargs], args)

    def _settle_none(self, res, saved, grads, needs, template, nslots, with_outputs):
        """``res`` (a Function backward's tuple, one gradient per slot, then None) with each
        None a needed gradient gets -- the formula returned None -- kept None where the formula
        gives None on TensorPlay fakes too (``_none_slots``), and zeros otherwise: what the
        backward op gives under torch.compile, so that eager and compiled gradients agree."""
        values = self._rebuild(template, saved[:nslots])
        bw_args = (*values, self._outputs(saved, nslots, with_outputs), list(grads),
                   list(needs[:nslots]))
        none = self._none_slots(bw_args)
        out = list(res)
        for k in range(nslots):
            if out[k] is None and needs[k] and k not in none:
                s = saved[k]
                out[k] = torch.zeros(s.shape, dtype=s.dtype, device=s.device)
        return tuple(out)

    def _run_formula(self, tvals, touts, tgrads, needs, args, setup, form):
        """The pack's formula on TensorPlay values (``args``: the backward op's arguments, for
        a ``Tensor[]`` return's lengths): one gradient (or None) per slot."""
        if self.multi:      # the outputs as returned; gradients as TensorPlay gives them
            lens = [None if n < 0 else n for n in args[self.nargs + 3]]
            touts = _group(touts, lens)
            if not self.flat_grads:     # a sole Tensor[]'s: one per element
                tgrads = _group(tgrads, lens)
        return self._formula(tvals, touts, tgrads, needs, setup, form)

    def _none_slots(self, args) -> frozenset:
        """The slots whose gradient the pack's formula gives as None for the backward op's
        arguments ``args`` (torch tensors, real or fake), found by running it on TensorPlay
        fakes of their metadata: the backward op returns an empty placeholder there (its fake
        and its kernel alike) and the Function hands torch None, as ``custom_op``'s formula
        hands it None. Empty when that run fails (a formula reading data) and for an op
        without a formula: those gradients are zeros then."""
        nargs = self.nargs
        outputs, grads, needs = args[nargs:nargs + 3]
        if not self.formula or not any(needs):
            return frozenset()
        try:
            with tp.fake.FakeTensorMode():
                tvals = [self._fake(v) for v in args[:nargs]]
                tgrads = [None if g is None else self._fake(g) for g in grads]
                setup, form, _, with_outputs = self._formula_plan()
                touts = [None if o is None else self._fake(o) for o in outputs] \
                    if with_outputs else [None] * len(outputs)
                tres = self._run_formula(tvals, touts, tgrads, needs, args, setup, form)
        except Exception:  # noqa: BLE001 - not runnable on fakes: no None known, zeros then
            return frozenset()
        return frozenset(k for k, (g, need) in enumerate(zip(tres, needs))
                         if need and g is None)

    def _formula_plan(self):
        """``(setup, form, tensor arguments to convert, convert outputs?)`` for the pack's
        current formula (worked out again only when the pack registers another one)."""
        setup = self.op.setup_context_fn
        plan = self._setup_plan
        if setup is not plan[0]:
            if setup is None:
                plan = (None, 3, (), False)
            else:
                form = _setup_form(setup)
                read = _read_params(setup)
                if read is None:
                    plan = (setup, form, self.tensor_args, True)
                else:               # (ctx, inputs, [keyword_only_inputs,] output)
                    plan = (setup, form, self._read_args(read, form), form - 1 in read)
            self._setup_plan = plan
        return plan

    def _read_args(self, read, form):
        """The tensor arguments a setup_context reads, by ``_read_params``'s answer."""
        if form == 3:                       # inputs: every argument in schema order
            keys = read.get(1)
            by_key = {i: i for i in self.tensor_args}
        else:                               # inputs: the positional ones; by name: the others
            pos, kw = read.get(1), read.get(2)
            if pos is _ALL or kw is _ALL:
                keys = _ALL
            else:
                keys = (pos or frozenset()) | (kw or frozenset())
            by_key = {(i if i < self.npos else self.args[i].name): i for i in self.tensor_args}
        if keys is None:
            return ()
        if keys is _ALL:
            return self.tensor_args
        return tuple(sorted(by_key[k] for k in keys if k in by_key))

    @staticmethod
    def _to_tp(v, where):
        if isinstance(v, torch.Tensor):
            return to_tp(v, where)
        if isinstance(v, (list, tuple)):
            return [to_tp(x, where) if isinstance(x, torch.Tensor) else x for x in v]
        return v

    def _formula(self, tvals, touts, tgrads, needs, setup, form):
        ctx = FunctionCtx()
        if self.list_args:
            per_arg, k = [], 0
            for i, v in enumerate(tvals):
                if i in self.tensor_args:
                    m = len(v) if isinstance(v, list) else 1
                    per_arg.append(any(needs[k:k + m]))
                    k += m
                else:
                    per_arg.append(False)
            ctx.needs_input_grad = tuple(per_arg)
        else:
            per_arg = [False] * self.nargs
            for i, need in zip(self.tensor_args, needs):
                per_arg[i] = need
            ctx.needs_input_grad = tuple(per_arg)
        if setup is not None:
            _call_setup(self.op, ctx, tvals, touts[0] if self.single else tuple(touts), setup,
                        form)
        res = self._per_arg(self.op.backward_fn(ctx, *tgrads))
        if not self.list_args:
            nres = len(res)
            return [res[i] if i < nres else None for i in self.tensor_args]
        flat = []
        for i in self.tensor_args:
            g = res[i] if i < len(res) else None
            v = tvals[i]
            if isinstance(v, list):
                flat.extend(list(g) if g is not None else [None] * len(v))
            else:
                flat.append(g)
        return flat

    def _per_arg(self, res):
        """The pack's backward result as a sequence indexed by argument (TensorPlay's rule: one
        gradient per argument, trailing keyword-only non-tensor ones may be left out; a lone
        gradient for a one-argument op may come bare), checked as TensorPlay's own autograd
        checks it (``RuntimeError`` naming the op, its pack and the position): too few or too
        many gradients, a gradient other than None for an argument that is not a tensor."""
        n = self.nargs
        if not (isinstance(res, tuple) or (isinstance(res, list) and n != 1)):
            res = (res,)
        got = len(res)
        if got < self.nneeded or got > n:
            raise BridgeError(
                f"{self.bw_where}: the backward formula registered with register_autograd "
                f"returned {got} gradients: an incorrect number of gradients (expected "
                f"{self.nneeded}, got {got}); return one gradient (or None) per input of the "
                f"op, in schema order (refused by the bridge, as TensorPlay's autograd refuses "
                f"it)")
        for i in self.other_args:
            if i < got:
                g = res[i]
                if g is not None and not (isinstance(g, (list, tuple)) and
                                          all(x is None for x in g)):
                    raise BridgeError(
                        f"{self.bw_where}: the backward formula registered with "
                        f"register_autograd returned a gradient different than None at position "
                        f"{i + 1} (argument {self.args[i].name!r}), but the corresponding "
                        f"forward input was not a Tensor: return None for it (refused by the "
                        f"bridge, as TensorPlay's autograd refuses it)")
        return res

    def _composite(self, tvals, tgrads, needs, seed=None):
        slots = self._slots(tvals)
        leaves = []
        for s, need in zip(slots, needs):
            if need and s is not None and s.is_floating_point():
                s.requires_grad_(True)
                leaves.append(s)
        args = self.op.schema.arguments
        pos = [v for a, v in zip(args, tvals) if not a.kwarg_only]
        kw = {a.name: v for a, v in zip(args, tvals) if a.kwarg_only}
        if seed is not None:        # a seeded op: its body draws what its forward drew
            with tp.autograd.enable_grad():
                out = run_seeded(seed, self.op, *pos, **kw)
        else:
            # the body runs again here: one that draws random numbers draws new ones (a seeded
            # op without its forward's seed never gets here: backward_kernel refuses it), so its
            # gradient would not be the forward's -- refused, naming the op, when TensorPlay's
            # generators drew
            with count_draws() as drawn, tp.autograd.enable_grad():
                out = self.op(*pos, **kw)
            if drawn():
                _unseeded_draws(self.bw_where)
        if isinstance(out, tp.Tensor):
            outs = [out]
        elif self.multi and not self.single:    # a list beside other returns: its elements
            outs = self._flatten(out)[0]
        else:
            outs = list(out)
        roots, gs = [], []
        for o, g in zip(outs, tgrads):
            if isinstance(o, tp.Tensor) and o.requires_grad and g is not None:
                roots.append(o)
                gs.append(g)
        found = tp.autograd.grad(roots, leaves, gs, allow_unused=True) if roots and leaves \
            else [None] * len(leaves)
        by_id = {id(leaf): g for leaf, g in zip(leaves, found)}
        return [by_id.get(id(s)) for s in slots]

    def _grads_to_torch(self, slots, tres, needs, args, where, values, bw_args):
        """One torch tensor per slot: the gradient (``_grad_to_torch``), or an empty placeholder
        where none is needed. With ``args`` (the backward op's arguments, called through
        torch's dispatcher) a gradient never shares memory with an argument, as torch requires
        of a custom op's outputs. ``values``: the forward's arguments (naming a slot whose
        gradient has a shape torch cannot take). A formula's None for a needed gradient: where
        the formula gives None on fakes too (``_none_slots`` of ``bw_args``, the backward op's
        arguments) None called directly (``args`` None), the empty placeholder through the
        dispatcher; zeros otherwise."""
        arg_ptrs = None             # the arguments' storages, read only when a gradient needs them
        none = None                 # _none_slots, worked out when a gradient is None
        out = []
        for k, (s, g, need) in enumerate(zip(slots, tres, needs)):
            if s is None:
                ref = next((t for t in slots if t is not None), None)
                out.append(torch.empty(0, device=ref.device if ref is not None else "cpu"))
                continue
            if not need:
                out.append(s.new_empty(0))
                continue
            if g is None and self.formula:     # the formula's None: no gradient, as custom_op's
                if none is None:    # as the backward op's fake says (_none_slots)
                    none = self._none_slots(bw_args)
                if k in none:       # called directly: None reaches torch's engine
                    out.append(None if args is None else s.new_empty(0))
                    continue
            try:
                tg = _grad_to_torch(s, g, where)
            except _BadGradShape as e:
                raise e.error(where, self._slot_label(k, values), self.formula) from None
            if args is not None and g is not None:
                if arg_ptrs is None:
                    arg_ptrs = {t.untyped_storage().data_ptr() for t in _flat_tensors(args)}
                if tg.untyped_storage().data_ptr() in arg_ptrs:
                    tg = tg.clone(memory_format=torch.contiguous_format)
            out.append(tg)
        return out

    def _slot_label(self, k, values):
        """Slot ``k`` (list elements one by one) as TensorPlay names an input: ``"i (argument
        'name')"``, with the element for a list argument."""
        for i in self.tensor_args:
            v = values[i]
            m = len(v) if isinstance(v, (list, tuple)) else 1
            if k < m:
                el = f", element {k}" if isinstance(v, (list, tuple)) else ""
                return f"{i} (argument {self.args[i].name!r}{el})"
            k -= m
        return str(k)               # pragma: no cover - every slot is some argument's

    def backward_fake(self, *args):
        values = list(args[:self.nargs])
        needs = args[self.nargs + 2]
        ref = next(iter(_flat_tensors(args)), None)
        none = self._none_slots(args) if not self.refuse else frozenset()
        out = []
        for k, (s, need) in enumerate(zip(self._slots(values), needs)):
            if s is None:
                out.append(torch.empty(0, device=ref.device if ref is not None else "cpu"))
            elif need and k not in none:
                out.append(torch.empty(s.shape, dtype=s.dtype, device=s.device))
            else:
                out.append(s.new_empty(0))
        return out


skip_dynamo(_Bridge.autograd_kernel)
skip_dynamo(_Bridge.mutating_kernel)
skip_dynamo(_Bridge.multi_kernel)


class _Written(torch.autograd.Function):
    """``apply(t, bridge, *tied)``: ``t``, which ``bridge``'s mutating op has just written in
    place, marked dirty: its history is rebased onto this node, whose backward raises naming
    the op (``tied``: the op's other inputs that require grad, so that ``t`` requires grad when
    one does, as after torch's own in-place ops)."""

    @staticmethod
    def forward(ctx, t, bridge, *tied):
        ctx.bridge = bridge
        ctx.mark_dirty(t)
        return t

    @staticmethod
    def backward(ctx, *grads):
        _mutating_no_formula(ctx.bridge.where, ctx.bridge.op)


class _Refuse(torch.autograd.Function):
    """``apply(msg, g, *tied)``: ``g``'s values, whose backward raises ``msg`` (a gradient
    that must not be differentiated again; ``tied`` puts the node on the paths from them)."""

    @staticmethod
    def forward(ctx, msg, g, *tied):
        ctx.msg = msg
        return g.clone()

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.msg)


def _group(flat, lens):
    """``flat`` (one value per flat output) grouped by ``lens`` (per return: a list's length, or
    None for one value): a list per list return."""
    out, k = [], 0
    for n in lens:
        if n is None:
            out.append(flat[k])
            k += 1
        else:
            out.append(list(flat[k:k + n]))
            k += n
    return out


class _BadGradShape(RuntimeError):
    """``_grad_to_torch``'s refusal of a gradient whose shape torch cannot take (the caller
    names the input: ``error``)."""

    def __init__(self, got, want):
        super().__init__(got, want)
        self.got, self.want = got, want

    def error(self, where, index, formula=True):
        """The ``RuntimeError`` torch's and TensorPlay's engines raise, naming op and input."""
        what = ("the backward formula registered with register_autograd" if formula else
                "the gradient through the op's body")
        return BridgeError(
            f"{where}: {what} returned an invalid gradient at index {index} - got "
            f"{_shape_str(self.got)} but expected shape compatible with {_shape_str(self.want)} "
            f"(a gradient has its input's shape, or one that broadcasts from it: summed)")


def _shape_str(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _expandable(shape, to) -> bool:
    """torch's ``is_expandable_to(shape, to)``: no more dims, trailing ones equal or 1."""
    lead = len(to) - len(shape)
    return lead >= 0 and all(a == 1 or a == b for a, b in zip(shape, tuple(to)[lead:]))


def _grad_to_torch(s, g, where):
    """The pack's gradient ``g`` for input ``s`` (a TensorPlay tensor, a number, or None for
    zeros) as torch's engine takes it: a torch tensor of ``s``'s dtype, shape (a broadcast
    gradient summed to it) and device, contiguous. ``_BadGradShape`` when its shape is not
    ``s``'s and does not broadcast from it (torch's and TensorPlay's rule)."""
    if g is None:
        return torch.zeros(s.shape, dtype=s.dtype, device=s.device)
    tg = result_to_torch(g, where) if g.__class__ is _TPTensor or isinstance(g, _TPTensor) else \
        torch.as_tensor(g, device=s.device)
    if tg.dtype is not s.dtype:
        tg = tg.to(s.dtype)
    if tg.shape != s.shape:
        if not _expandable(s.shape, tg.shape):
            raise _BadGradShape(tuple(tg.shape), tuple(s.shape))
        tg = tg.sum_to_size(s.shape)
    if not tg.is_contiguous():
        tg = tg.clone(memory_format=torch.contiguous_format)
    return tg


def _plain_eager(saved, grads) -> bool:
    """True when torch runs this backward eagerly on plain tensors: no tracing mode (fake,
    functional, proxy) on the dispatch stack, no functorch transform, every tensor a plain
    ``torch.Tensor``."""
    if _dispatch_stack_len() or _peek_functorch() is not None:
        return False
    for t in saved:                 # loops, not all(genexpr): no frame per tensor
        if t.__class__ is not _Tensor:
            return False
    for g in grads:
        if g is not None and g.__class__ is not _Tensor:
            return False
    return True


_dispatch_stack_len = torch._C._len_torch_dispatch_stack
_peek_functorch = torch._C._functorch.peek_interpreter_stack


def _flat_tensors(args):
    for a in args:
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, torch.Tensor):
                    yield x


def _no_formula(where):
    raise RuntimeError(
        f"{where}: no autograd formula (refused on the TensorPlay side): the op has no "
        f"register_autograd formula and no device-agnostic body written with TensorPlay ops "
        f"to differentiate through. Register one in the pack with "
        f"op.register_autograd(backward, setup_context=...), or call it under "
        f"torch.no_grad().")


def _seeded_no_recompute(where):
    raise RuntimeError(
        f"{where}: no autograd formula, and the op's body cannot be run again in backward "
        f"(refused on the TensorPlay side): the op is tagged nondeterministic_seeded (it draws "
        f"random numbers), so a recomputed body would draw new ones and give a wrong gradient. "
        f"Its gradient through the body is taken from the forward's own TensorPlay graph in "
        f"plain eager calls, and from the body run again with the forward's seed in eager "
        f"calls under saved-tensor hooks (activation checkpointing); here torch runs the "
        f"backward op without that seed (torch.compile, make_fx, a torch dispatch mode). "
        f"Register a formula with op.register_autograd(backward, setup_context=...) (e.g. "
        f"return what it drew, the mask, as an output and use it in backward), or call it "
        f"under torch.no_grad().")


def _from_backward_op(flat, needs, slots):
    """``Function.backward``'s tuple from the backward op's results ``flat`` (one per slot):
    None where no gradient is needed, and where the op returned the empty placeholder of a
    gradient the formula gave as None (``_none_slots``: a 1-d empty tensor for an input that is
    not one); then None for the Function's state argument."""
    out = []
    for g, need, s in zip(flat, needs, slots):
        if not need:
            out.append(None)
        elif g.dim() == 1 and g.shape[0] == 0 and not (s.dim() == 1 and s.shape[0] == 0):
            out.append(None)
        else:
            out.append(g)
    out.append(None)
    return tuple(out)


def _unseeded_draws(where):
    raise BridgeError(
        f"{where}: the op's body draws random numbers and has no autograd formula (refused on "
        f"the TensorPlay side): torch runs the body again inside backward here (torch.compile, "
        f"make_fx, saved-tensor hooks such as activation checkpointing, Tensor[] returns), and "
        f"that run drew new numbers, so its gradient would not be the forward's (a silently "
        f"wrong gradient). Tag the op nondeterministic_seeded (tags=tp.Tag."
        f"nondeterministic_seeded: torch.manual_seed then reaches its numbers) and register a "
        f"formula with op.register_autograd(backward, setup_context=...) that uses what the "
        f"forward drew (e.g. return the mask as an output), or call it under torch.no_grad().")


def _mutating_no_formula(where, op):
    raise RuntimeError(
        f"{where}: trying to backward through an op that mutates its arguments "
        f"({', '.join(op.mutates_args)}); such an op has no autograd formula (TensorPlay's "
        f"register_autograd refuses one, as torch's does), so no gradient flows through it "
        f"(refused by the bridge, as torch.library.custom_op refuses it). "
        f"Make the op functional (return new tensors instead of writing arguments) and "
        f"register a formula with op.register_autograd(backward, setup_context=...), or call "
        f"it under torch.no_grad() / on detached tensors.")


def bridge_autograd(op, where, overload, define_backward, kernels=(None, None)):
    """The torch ``Autograd`` kernel (``with_keyset=True``) of bridged op ``op`` (``overload``
    its torch ``OpOverload``). An op that mutates gets ``_Bridge.mutating_kernel``: no formula
    (torch refuses autograd formulas on non-functional ops, TensorPlay too), its outputs'
    backward raises naming the op, as for ``torch.library.custom_op`` ops.
    ``define_backward(name, schema, bridge)`` defines the backward op and returns it.
    ``kernels``: the op's torch kernels for cpu and cuda as registered (called directly without
    grad on plain tensors). An op returning ``Tensor[]`` or ``Tensor?`` gets
    ``_Bridge.multi_kernel`` (its Function's outputs flattened, grouped again on return)."""
    if op.mutates_args:
        return _Bridge(op, where, "mutating", overload).mutating_kernel
    formula = op.backward_fn is not None
    composite = (not formula and not op.is_triton and op.active_kernel("default") is not None)
    mode = "formula" if formula else "composite" if composite else "none"
    bridge = _Bridge(op, where, mode, overload)
    bridge.kernels = kernels
    if mode != "none":
        bridge.bw_op = define_backward(bridge.bw_name, backward_schema(op), bridge)
    if bridge.keep:             # the kept graph's work, on torch's current CUDA stream
        from ._register import _on_torch_stream
        bridge.cuda_keep_run = _on_torch_stream(bridge._keep_run)
        bridge.cuda_keep_grads = _on_torch_stream(bridge._keep_grads)
    # Tensor[] / Tensor? returns: the Function's outputs flattened (torch's supports_tensorlist)
    return bridge.multi_kernel if bridge.multi else bridge.autograd_kernel


def _grads_out(tensor_args, saved, needs, res, where, args):
    """``Function.backward``'s tuple: per tensor argument, the pack's gradient ``res[i]`` as
    ``_grad_to_torch`` makes it (the saved input's dtype, shape and device, contiguous), None
    where torch needs none; then None for the Function's state argument."""
    nres = len(res)
    out = []
    cls = tuple
    for i, s, need in zip(tensor_args, saved, needs):
        if not need:
            out.append(None)
            continue
        g = res[i] if i < nres else None
        if g.__class__ is _TPTensor:
            tg = result_to_torch(g, where)
            if tg.dtype is s.dtype and tg.shape == s.shape and tg.is_contiguous():
                out.append(tg)      # the common case, as _grad_to_torch would return it
                continue
        elif g is None:             # no gradient: torch's engine gets None, as from custom_op's
            out.append(None)        # (the caller settles it: _Bridge._settle_none)
            cls = _WithNone
            continue
        try:
            out.append(_grad_to_torch(s, g, where))
        except _BadGradShape as e:
            raise e.error(where, f"{i} (argument {args[i].name!r})") from None
    out.append(None)                # the Function's state argument
    return cls(out)


class _WithNone(tuple):
    """``_grads_out``'s tuple when the formula gave None for a gradient torch needs (the
    caller then settles None against zeros: ``_Bridge._settle_none``)."""

