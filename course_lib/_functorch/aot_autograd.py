"""AOT autograd: trace forward and backward into one graph, split it, compile each half.

In PyTorch: ``torch/_functorch/aot_autograd.py`` (``aot_function``, ``aot_module``), with the
tracing in ``_aot_autograd/graph_capture_wrappers.py`` (``create_joint``) and the runtime in
``_aot_autograd/runtime_wrappers.py`` (the ``CompiledFunction`` autograd.Function).

``aot_function(fn, fw_compiler, bw_compiler, partition_fn)(*args)`` does, on the first call for
inputs of these shapes, dtypes and ``requires_grad``:

1. **Trace the joint graph.**  ``fn`` runs on meta copies of the inputs (shapes only, no data)
   under make_fx's dispatch mode, which records one node per op.  Then course_lib's own autograd
   engine runs ``autograd.grad(outputs, inputs, tangents)`` under the same mode: the derivative
   formulas are course_lib ops too, so the backward lands in the same graph.  Placeholders are
   ``primals_1, primals_2, ...`` (the inputs) and ``tangents_1, ...`` (the incoming gradients, one
   per output that requires grad), as PyTorch names them; the outputs are ``fn``'s outputs followed
   by one gradient per input (``None`` where the input does not require grad).
2. **Partition it** (``partitioners.py``): a forward graph ``primals -> outputs + saved values`` and
   a backward graph ``saved values + tangents -> input gradients``.  ``default_partition`` saves
   whatever the backward reads; ``min_cut_rematerialization_partition`` recomputes cheap ops instead.
3. **Compile** each graph with ``fw_compiler(gm, example_inputs)`` / ``bw_compiler`` and wrap them
   in an autograd ``Function``: its forward runs the compiled forward and saves the saved values,
   its backward runs the compiled backward, so ``loss.backward()`` works as in eager.

With grad mode off or no input requiring grad only the forward is traced (``arg0_1, ...``) and
compiled (``inference_compiler``, by default ``fw_compiler``), as in PyTorch.

Like PyTorch's fake tensors, the meta trace never computes a value: a program that branches on
a tensor's value, or calls ``.item()``, cannot be captured.  Differences from PyTorch: there is
no functionalization pass; an in-place op on a value the function computed is recorded as its
out-of-place twin (``add_`` -> ``add``); an input modified in place that does not require grad
becomes an extra forward output copied back into it (as PyTorch's runtime wrapper does); mutating
an input that requires grad, a captured tensor, or a tensor whose other view is read afterwards
is refused.  Compiled entries are cached per input signature
(PyTorch's ``aot_function`` compiles once).  No decompositions, no dynamic shapes.
"""
from __future__ import annotations

import contextlib
import operator
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .. import Tensor
from .._ops.common import like_sequence
from .._ops.dispatcher import grad_state
from .._ops.registry import OPS
from ..autograd import Function
from ..autograd import grad as autograd_grad
from ..fx.experimental.proxy_tensor import ProxyTorchDispatchMode
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.node import Node
from ..nn import Module
from .partitioners import default_partition

__all__ = ["aot_function", "aot_module", "trace_joint", "JointGraph", "make_boxed_func"]

Compiler = Callable[[GraphModule, list], Callable]
_DETACH = OPS["detach"]


# ---------------------------------------------------------------------------
# tracing
# ---------------------------------------------------------------------------
def _view_key(t: Tensor) -> tuple:
    """Two tensor objects with the same key are the same elements: one value for the graph."""
    return (id(t._storage), t._offset, t._shape, t._stride, t.dtype)


class _AOTTraceMode(ProxyTorchDispatchMode):
    """make_fx's mode, made safe for tracing the autograd engine on meta tensors.

    * Saved outputs come back from ``SavedTensor.unpack`` as new tensor objects over the same
      elements: a tensor it does not know is looked up by its storage and geometry.
    * A tensor it did not receive (a constant in ``fn``'s closure) is recorded as a ``get_attr``
      of the real tensor, while the op runs on a meta stand-in.  One that requires grad is
      refused: its gradient would be lost (pass it as an argument, or use ``aot_module``).
    * In-place ops become their out-of-place twin (``add_`` -> ``add``), after checking that
      no captured tensor, input requiring grad or other view of the same elements sees the change.
    * A differentiable output autograd saves for backward gets a ``detach`` node where it is saved
      (in the forward) and another where the engine unpacks it (in the backward), as in
      PyTorch's joint graphs: the partitioners see the same graph PyTorch's see.
    * Every node is tagged ``is_forward`` or ``is_backward`` in ``meta["partitioner_tag"]``.
    """

    def __init__(self, graph: Graph, root: Module, on_meta: bool) -> None:
        super().__init__(graph, root)
        self.on_meta = on_meta
        self.tag = "is_forward"
        self._by_view: dict[tuple, Node] = {}
        self._version: dict[int, int] = {}
        self._stand_in: dict[int, Tensor] = {}
        self._saved_outputs: set[Node] = set()   # the forward detach nodes of saved outputs

    def track(self, t: Tensor, node: Node) -> None:
        super().track(t, node)
        self._by_view[_view_key(t)] = node
        self._version[id(t)] = t._vc.value

    def node_of(self, a: Any) -> Any:
        if isinstance(a, Tensor):
            node = self.tensor_to_node.get(id(a))
            if node is None:
                node = self._by_view.get(_view_key(a))
                if node is not None:
                    if node in self._saved_outputs:   # the engine unpacked a saved output
                        node = self._record(_DETACH, (node,))
                    self.track(a, node)
                    return node
                if self.on_meta and a.device.type == "meta":
                    raise RuntimeError(
                        "aot_function: while tracing, a tensor was made without going through the dispatcher "
                        f"(shape {list(a.shape)}; a factory or random function such as bernoulli_ that course_lib "
                        "does not dispatch yet), so the graph cannot compute it.")
                if a.requires_grad:
                    raise RuntimeError(
                        "aot_function: fn uses a tensor that requires grad but is not one of its inputs "
                        f"(shape {list(a.shape)}); its gradient would be lost. Pass it as an argument, "
                        "or compile the module with aot_module.")
                return super().node_of(a)
            if self._version[id(a)] != a._vc.value:
                raise NotImplementedError(
                    "aot_function: a tensor was modified in place through another view of its elements "
                    "and then read; course_lib's AOT autograd does not functionalize views "
                    "(PyTorch's functionalization pass does).")
            return node
        if isinstance(a, (list, tuple)):
            return like_sequence(a, [self.node_of(x) for x in a])
        return a

    def _run_value(self, a: Any) -> Any:
        """What the op runs on: a meta stand-in for a real constant when tracing on meta."""
        if isinstance(a, Tensor):
            if not self.on_meta or a.device.type == "meta":
                return a
            m = self._stand_in.get(id(a))
            if m is None:
                m = self._stand_in[id(a)] = a.to("meta")
                self.track(m, self.tensor_to_node[id(a)])   # autograd may save the stand-in
            return m
        if isinstance(a, (list, tuple)):
            return like_sequence(a, [self._run_value(x) for x in a])
        return a

    def _functional_twin(self, func: Any, args: tuple) -> Any:
        """The out-of-place op to record for in-place ``func`` (refusing what would need functionalization)."""
        target = args[0]
        node = self.tensor_to_node.get(id(target))
        if node is None or node.op == "get_attr":
            raise NotImplementedError(
                f"aot_function: {func.name} modifies a tensor the function captured in place; pass it as an "
                "argument (a module's buffers are arguments under aot_module).")
        if node.op == "placeholder" and target.requires_grad:
            raise NotImplementedError(
                f"aot_function: {func.name} modifies an input that requires grad in place; course_lib's AOT "
                "autograd copies back only inputs without grad (PyTorch's functionalization handles both).")
        if func.functional is None:
            raise NotImplementedError(f"aot_function: the in-place op {func.name} has no out-of-place twin "
                                      "to record")
        return func.functional

    def _record(self, target: Any, args: tuple) -> Node:
        node = self.graph.call_function(target, args)
        node.meta["partitioner_tag"] = self.tag
        return node

    def _detach_saved_outputs(self, outs: Sequence[Any]) -> None:
        """A ``detach`` node for each differentiable output the op's autograd node saved."""
        grad_fn = next((t.grad_fn for t in outs if isinstance(t, Tensor) and t.grad_fn is not None), None)
        saved = getattr(grad_fn, "_saved", None) or {}
        for s in saved.values():
            t = getattr(s, "tensor", None)
            if not (getattr(s, "is_output", False) and isinstance(t, Tensor)):
                continue
            out = next((o for o in outs if isinstance(o, Tensor) and _view_key(o) == _view_key(t)), None)
            if out is not None and out.requires_grad:
                node = self._record(_DETACH, (self.tensor_to_node[id(out)],))
                self._saved_outputs.add(node)
                self.track(t, node)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        nodes = tuple(self.node_of(a) for a in args)
        target = self._functional_twin(func, args) if func.is_inplace else func
        out = func(*self._run_value(args))   # runs below this mode: autograd and the (meta) kernel
        node = self._record(target, nodes)
        if isinstance(out, Tensor):
            self.track(out, node)
            self._detach_saved_outputs((out,))
        elif isinstance(out, (tuple, list)):
            for i, t in enumerate(out):
                if isinstance(t, Tensor):
                    self.track(t, self._record(operator.getitem, (node, i)))
            node.meta["tensor_meta"] = tuple(x.meta.get("tensor_meta") for x in node.users)
            self._detach_saved_outputs(out)
        return out


@dataclass
class JointGraph:
    """A traced joint graph and what the runtime needs to know about it.

    ``module``: the joint ``GraphModule`` (``print(joint.module.code)``); ``num_fwd_outputs``: how
    many of its outputs the forward computes: first the new values of the inputs ``fn`` modified in
    place (``mutated_inputs``, their positions; copied back into them at run time), then ``fn``'s
    outputs; the rest are the input gradients.  ``outputs_requiring_grad``: which forward outputs
    got a tangent; ``inputs``: the meta tensors it was traced on.
    """

    module: GraphModule
    num_fwd_outputs: int
    outputs_requiring_grad: tuple[bool, ...]
    inputs: tuple[Tensor, ...]
    single_output: bool
    mutated_inputs: tuple[int, ...] = ()


def _meta_copy(t: Tensor, requires_grad: bool) -> Tensor:
    """A meta tensor like ``t`` with storage of its own (``t.to("meta")`` of a meta tensor is ``t``)."""
    from .._creation import empty_strided
    m = empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device="meta")
    if requires_grad:
        m.requires_grad_(True)
    return m


def _flat_outputs(out: Any) -> tuple[tuple[Tensor, ...], bool]:
    if isinstance(out, Tensor):
        return (out,), True
    if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
        return tuple(out), False
    raise TypeError(f"aot_function: fn must return a Tensor or a tuple or list of Tensors, got {type(out).__name__}")


def _trace(fn: Callable, tensors: Sequence[Tensor], call: Callable[[list], Any], *, joint: bool,
           on_meta: bool = True) -> JointGraph:
    """Trace ``call(traced_tensors)`` (forward only, or forward and backward when ``joint``)."""
    graph = Graph()
    root = Module()
    mode = _AOTTraceMode(graph, root, on_meta)
    if on_meta:
        inputs = [_meta_copy(t, joint and t.requires_grad) for t in tensors]
    else:
        inputs = [t.detach().requires_grad_(True) if joint and t.requires_grad else t.detach() for t in tensors]
    placeholders = [graph.placeholder(f"primals_{i + 1}" if joint else f"arg{i}_1") for i in range(len(inputs))]
    for t, node in zip(inputs, placeholders):
        mode.track(t, node)
    with mode:
        outs, single = _flat_outputs(call(inputs))
    mutated = tuple(i for i, t in enumerate(inputs) if mode.node_of(t) is not placeholders[i])
    if any(inputs[i].requires_grad for i in mutated):
        raise NotImplementedError("aot_function: an input modified in place now requires grad; course_lib's AOT "
                                  "autograd copies back only values without grad")
    out_nodes = [mode.node_of(inputs[i]) for i in mutated] + [mode.node_of(o) for o in outs]
    needs_grad = tuple(o.requires_grad for o in outs)
    grad_nodes: list = []
    if joint:
        grad_nodes = [None] * len(inputs)
        diff_ins = [i for i, t in enumerate(inputs) if t.requires_grad]
        diff_outs = [o for o, rg in zip(outs, needs_grad) if rg]
        tangents = [_meta_copy(o, False) if on_meta else o.detach().clone() for o in diff_outs]
        first_op = next((n for n in graph.nodes if n.op != "placeholder"), None)
        insert = graph.inserting_before(first_op) if first_op is not None else contextlib.nullcontext()
        with insert:
            for i, t in enumerate(tangents):
                mode.track(t, graph.placeholder(f"tangents_{i + 1}"))
        if diff_outs and diff_ins:
            mode.tag = "is_backward"
            with mode:
                grads = autograd_grad(diff_outs, [inputs[i] for i in diff_ins], tangents, allow_unused=True)
            for i, g in zip(diff_ins, grads):
                grad_nodes[i] = None if g is None else mode.node_of(g)
    graph.output(tuple(out_nodes + grad_nodes))
    name = getattr(fn, "__name__", "fn").replace("<lambda>", "lambda_")
    module = GraphModule(root, graph, class_name=f"{name}_joint" if joint else name)
    return JointGraph(module, len(out_nodes), (False,) * len(mutated) + needs_grad, tuple(inputs), single, mutated)


def trace_joint(fn: Callable, *args: Tensor, on_meta: bool = True) -> JointGraph:
    """The joint forward+backward graph of ``fn`` on inputs like ``args``.

    It is traced on meta tensors (shapes only), or with ``on_meta=False`` on the values of ``args``
    (for an op without a meta kernel; the graph is the same).

    >>> a = course_lib.randn(4, requires_grad=True)
    >>> joint = trace_joint(lambda a: a.cos().cos(), a)
    >>> print(joint.module.code)   # doctest: +SKIP
    def forward(self, primals_1, tangents_1):
        cos = aten.cos(primals_1)
        cos_1 = aten.cos(cos)
        ...
        return (cos_1, mul_1)
    """
    return _trace(fn, args, lambda inputs: fn(*inputs), joint=True, on_meta=on_meta)


# ---------------------------------------------------------------------------
# runtime
# ---------------------------------------------------------------------------
def make_boxed_func(f: Callable) -> Callable:
    """Mark ``f`` as taking its arguments as one list (``f(args)``), PyTorch's "boxed" convention."""
    def g(args: list) -> Any:
        return f(*args)
    g._boxed_call = True
    return g


def _call(compiled: Callable, args: Sequence) -> tuple:
    out = compiled(list(args)) if getattr(compiled, "_boxed_call", False) else compiled(*args)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _example_inputs(nodes: Sequence[Node]) -> list:
    """Meta tensors shaped like the placeholders (what PyTorch's fake example inputs are)."""
    from .._creation import empty_strided
    out = []
    for n in nodes:
        tm = n.meta.get("tensor_meta")
        out.append(empty_strided(tm.shape, tm.stride, dtype=tm.dtype, device="meta") if tm is not None else None)
    return out


def _copy_back(joint: JointGraph, inputs: Sequence[Tensor], fw_outs: tuple) -> tuple:
    """Write the new values of the inputs ``fn`` modified in place into them; return the rest."""
    n_mut = len(joint.mutated_inputs)
    for i, value in zip(joint.mutated_inputs, fw_outs[:n_mut]):
        inputs[i].copy_(value)
    return fw_outs[n_mut:]


def _compiled_function(joint: JointGraph, fw: Callable, bw: Callable) -> type:
    """The autograd ``Function`` whose forward and backward run the compiled graphs."""
    n_out = joint.num_fwd_outputs - len(joint.mutated_inputs)
    out_rg = joint.outputs_requiring_grad[len(joint.mutated_inputs):]

    class CompiledFunctionBackward(Function):
        """The compiled backward as a node, so that differentiating it again fails loudly."""

        @staticmethod
        def forward(ctx, *all_args):
            return _call(bw, all_args)

        @staticmethod
        def backward(ctx, *grads):
            raise RuntimeError("torch.compile with aot_autograd does not currently support double backward")

    class CompiledFunction(Function):
        @staticmethod
        def forward(ctx, *primals):
            fw_outs = _copy_back(joint, primals, _call(fw, primals))
            outs, saved = fw_outs[:n_out], fw_outs[n_out:]
            ctx.save_for_backward(*saved)
            ctx.mark_non_differentiable(*(o for o, rg in zip(outs, out_rg) if not rg))
            return outs

        @staticmethod
        def backward(ctx, *grad_outputs):
            tangents = [g.contiguous() for g, rg in zip(grad_outputs, out_rg) if rg]
            all_args = (*ctx.saved_tensors, *tangents)
            if grad_state.enabled and any(a.requires_grad for a in all_args):
                return CompiledFunctionBackward.apply(*all_args)
            return _call(bw, all_args)

    return CompiledFunction


def _signature(args: tuple) -> tuple:
    """The cache key of a call: each tensor's geometry, dtype and requires_grad, other values as is."""
    key = [grad_state.enabled]
    for a in args:
        if isinstance(a, Tensor):   # (the attributes behind shape, stride(), device, requires_grad: a hot path)
            key.append((a._shape, a._stride, a.dtype, a._storage.device, a._requires_grad))
        else:
            key.append((type(a), a))
    return tuple(key)


def aot_function(fn: Callable, fw_compiler: Compiler, bw_compiler: Compiler | None = None,
                 partition_fn: Callable = default_partition, inference_compiler: Compiler | None = None) -> Callable:
    """Compile ``fn``'s forward and backward ahead of time; see the module docstring.

    ``fw_compiler(gm, example_inputs)`` gets the forward ``GraphModule`` and meta example inputs and
    returns a callable (``gm.forward`` is fine); ``bw_compiler`` (default: ``fw_compiler``) does the
    same for the backward.  ``partition_fn(joint_module, joint_inputs, num_fwd_outputs=n)`` splits
    the joint graph.  Tensor arguments become graph inputs; other arguments are baked into the
    graph (a new value compiles again).  An input ``fn`` modifies in place (a module's
    ``num_batches_tracked``) is a graph output copied back into it after each call.

    >>> def print_compile(gm, example_inputs):
    ...     print(gm.code)
    ...     return gm.forward
    >>> f = aot_function(lambda x: x.sin().cos(), print_compile)
    >>> f(course_lib.randn(4, requires_grad=True)).sum().backward()   # prints both graphs
    """
    bw_compiler = bw_compiler or fw_compiler
    inference_compiler = inference_compiler or fw_compiler
    cache: dict[tuple, Callable] = {}

    def compile_for(args: tuple) -> Callable:
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in positions]

        def call(traced: list) -> Any:
            full = list(args)
            for i, t in zip(positions, traced):
                full[i] = t
            return fn(*full)

        training = grad_state.enabled and any(t.requires_grad for t in tensors)
        traced = _trace(fn, tensors, call, joint=training)
        if not training:
            compiled = inference_compiler(traced.module, list(traced.inputs))

            def run_inference(*tensors: Tensor) -> tuple:
                return _copy_back(traced, tensors, _call(compiled, tensors))
            return _finish(run_inference, traced.single_output)
        joint_inputs = (list(traced.inputs), _example_inputs(
            [n for n in traced.module.graph.nodes if n.op == "placeholder" and "tangents" in n.target]))
        fw_module, bw_module = partition_fn(traced.module, joint_inputs, num_fwd_outputs=traced.num_fwd_outputs)
        fw = fw_compiler(fw_module, list(traced.inputs))
        bw = bw_compiler(bw_module, _example_inputs([n for n in bw_module.graph.nodes if n.op == "placeholder"]))
        return _finish(_compiled_function(traced, fw, bw).apply, traced.single_output)

    def returned_function(*args: Any) -> Any:
        key = _signature(args)
        run = cache.get(key)
        if run is None:
            run = cache[key] = compile_for(args)
        return run(*(a for a in args if isinstance(a, Tensor)))

    returned_function.__name__ = getattr(fn, "__name__", "aot_function")
    returned_function.__doc__ = getattr(fn, "__doc__", None)
    return returned_function


def _finish(run: Callable, single_output: bool) -> Callable:
    """Return a single tensor when ``fn`` did."""
    if single_output:
        return lambda *tensors: run(*tensors)[0]
    return run


@contextlib.contextmanager
def _swapped_state(mod: Module, names: Sequence[str], values: Sequence[Tensor]):
    """Temporarily put ``values`` in place of ``mod``'s parameters and buffers (``functional_call``)."""
    saved = []
    for name, v in zip(names, values):
        *path, leaf = name.split(".")
        owner = mod.get_submodule(".".join(path)) if path else mod
        table = owner._parameters if leaf in owner._parameters else owner._buffers
        saved.append((table, leaf, table[leaf]))
        table[leaf] = v
    try:
        yield
    finally:
        for table, leaf, old in saved:
            table[leaf] = old


def aot_module(mod: Module, fw_compiler: Compiler, bw_compiler: Compiler | None = None,
               partition_fn: Callable = default_partition, inference_compiler: Compiler | None = None) -> Module:
    """A module running ``mod`` through ``aot_function``: its parameters and buffers are the first
    primals (so their gradients flow to ``.grad`` as in eager), then the call's arguments.  Each
    submodule's ``training`` flag is part of the cache key, so ``eval()`` compiles again."""
    named = list(mod.named_parameters(remove_duplicate=False)) + list(mod.named_buffers(remove_duplicate=False))
    names = [n for n, _ in named]

    def functional_call(modes: tuple, *args: Any) -> Any:
        with _swapped_state(mod, names, args[:len(names)]):
            return mod(*args[len(names):])

    compiled_f = aot_function(functional_call, fw_compiler, bw_compiler, partition_fn,
                              inference_compiler=inference_compiler)

    class AOTModule(Module):
        def __init__(self) -> None:
            super().__init__()
            self.orig_module = mod

        def forward(self, *args: Any) -> Any:
            state = [t for _, t in list(mod.named_parameters(remove_duplicate=False))
                     + list(mod.named_buffers(remove_duplicate=False))]
            modes = tuple(m.training for m in mod.modules())   # train/eval: part of the cache key
            return compiled_f(modes, *state, *args)

    return AOTModule()
