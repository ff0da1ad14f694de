"""The backward engine: run the graph's nodes in dependency order.

In PyTorch: ``torch/csrc/autograd/engine.cpp``.  The engine

1. walks the graph from the roots once to count, for every node, how many
   edges lead into it (its *dependencies*);
2. keeps a ready queue of nodes whose gradients are complete (dependency count
   0), ordered like PyTorch's: the most recently created node first;
3. pops a node, runs its hooks and ``apply``, and adds each resulting gradient
   into the input buffer of the node at the other end of the edge; when that
   node's count reaches 0 it becomes ready.

Why not plain recursion from the output?  A tensor used twice (``y = a * a +
a``) must receive the gradient from *both* uses before it passes anything on;
recursion would propagate a partial gradient down the first path it met.
"""
from __future__ import annotations

from heapq import heappop, heappush

import numpy as np

from .._ops.common import wrap
from .._ops.dispatcher import _mode_stack, grad_state
from .._tensor_base import TensorBase
from .graph import AccumulateGrad, gradient_edge


def _validate_root(out, grad, i):
    T = TensorBase
    if grad is None:
        if out.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if not out.dtype.is_floating_point:
            raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                               f"torch.{out.dtype._tensor_name.lower()}")
        return _ones(out)
    if not isinstance(grad, T):
        from .._creation import tensor
        grad = tensor(grad, dtype=out.dtype)
    if grad._shape != out._shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of torch.Size({list(grad._shape)}) "
                           f"and output[{i}] has a shape of torch.Size({list(out._shape)}).")
    return grad


def _ones(out):
    """The implicit gradient of a scalar output: a 1 of its shape and dtype."""
    if out._storage.data is None or _mode_stack:  # meta, or a mode (tracing) that should see the op
        from .._creation import ones_like
        return ones_like(out)
    return wrap(np.ones(out._shape, dtype=out.dtype.np), out.dtype)


def compute_dependencies(roots) -> dict:
    """How many gradients each node reachable from ``roots`` waits for: the number of edges
    (``next_functions`` entries) that point into it. Nodes no edge points into are absent.

    PyTorch's ``Engine::compute_dependencies``; iterative, because graphs can be thousands of
    nodes deep. ``course_lib.viz.graph.execution_order`` uses it to replay the engine's order.
    """
    deps = {}
    stack = [n for n in roots if n is not None]
    seen = set(stack)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def _needed(nodes, targets: set) -> set:
    """Nodes from which some target node can be reached (only those must run)."""
    memo = {}
    for start in nodes:
        if start in memo:
            continue
        # iterative post-order DFS
        stack = [(start, iter(start.next_functions))]
        path = {start}
        result_flag = {start: start in targets}
        while stack:
            node, it = stack[-1]
            advanced = False
            for nxt, _ in it:
                if nxt is None:
                    continue
                if nxt in memo:
                    if memo[nxt]:
                        result_flag[node] = True
                    continue
                if nxt in path:
                    continue
                stack.append((nxt, iter(nxt.next_functions)))
                path.add(nxt)
                result_flag[nxt] = nxt in targets
                advanced = True
                break
            if not advanced:
                stack.pop()
                path.discard(node)
                memo[node] = result_flag[node]
                if stack and memo[node]:
                    result_flag[stack[-1][0]] = True
    return {n for n, v in memo.items() if v}


def run_backward(outputs, grad_outputs, retain_graph: bool, create_graph: bool, inputs=None,
                 accumulate: bool = True, allow_unused: bool = False):
    """Run the graph from ``outputs``.  With ``accumulate=False`` (``autograd.grad``), return the
    gradients of ``inputs`` instead of adding them into ``.grad``."""
    roots = []
    root_grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not out._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        g = _validate_root(out, g, i)
        roots.append(gradient_edge(out))
        root_grads.append(g)

    # capture points for autograd.grad / backward(inputs=...)
    captures = {}
    if inputs is not None:
        for k, t in enumerate(inputs):
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            node, nr = gradient_edge(t)
            captures.setdefault((node, nr), []).append(k)

    prev = grad_state.enabled
    grad_state.enabled = create_graph
    try:
        return _execute(roots, root_grads, retain_graph, captures, inputs, accumulate, allow_unused)
    finally:
        grad_state.enabled = prev


class GraphTask:
    """What one backward call keeps while it runs (PyTorch's ``GraphTask``): the dependency count of
    every node, the input buffers of the nodes not run yet, the ready queue, and, for
    ``autograd.grad`` / ``backward(inputs=...)``, which nodes must run and which gradients to capture
    (PyTorch's ``exec_info``)."""

    __slots__ = ("deps", "buffers", "ready", "retain_graph", "inputs", "accumulate", "captures", "capture_nodes",
                 "needed", "captured")

    def __init__(self, roots, root_grads, retain_graph: bool, captures: dict, inputs, accumulate: bool):
        root_nodes = [n for n, _ in roots if n is not None]
        self.deps = compute_dependencies(root_nodes)
        self.retain_graph = retain_graph
        self.inputs = inputs
        self.accumulate = accumulate
        self.captures = captures
        self.capture_nodes = ()
        self.needed = None  # None: every node runs
        self.captured = [None] * (len(inputs) if inputs is not None else 0)
        if inputs is not None:
            self.capture_nodes = {node for node, _ in captures}
            self.needed = _needed(root_nodes, self.capture_nodes)

        # input buffers: node -> list of gradients, one slot per output of the node
        self.buffers = {}
        for (node, nr), g in zip(roots, root_grads):
            if node is not None:
                _add_to(self.buffers.setdefault(node, []), nr, g)
        self.ready = []
        for node in set(root_nodes):
            if self.deps.get(node, 0) == 0:
                heappush(self.ready, (-node._sequence_nr, id(node), node))


def _execute(roots, root_grads, retain_graph, captures, inputs, accumulate, allow_unused):
    """Run the graph (PyTorch's ``Engine::execute`` and its worker loop ``thread_main``): pop the most
    recent ready node and evaluate it, until no node is ready."""
    task = GraphTask(roots, root_grads, retain_graph, captures, inputs, accumulate)
    ready, buffers = task.ready, task.buffers
    while ready:
        node = heappop(ready)[2]
        evaluate_function(task, node, buffers.pop(node, None) or [None])
    if inputs is not None and not accumulate:
        for k, g in enumerate(task.captured):
            if g is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        return tuple(task.captured)
    return None


def evaluate_function(task: GraphTask, node, grads: list) -> None:
    """Evaluate one ready node, whose input buffer ``grads`` is complete (PyTorch's
    ``Engine::evaluate_function``).

    Its pre-hooks run first; then, for ``autograd.grad``, the gradients of captured inputs are
    taken and the node runs only if the task needs it; a node that ran frees its saved tensors
    unless ``retain_graph``; its gradients go into the input buffers of the nodes its edges lead
    to, and a node whose last dependency this was becomes ready.
    """
    if node._tensor_pre_hooks or node._retains_grad_hooks or node._pre_hooks:
        grads = call_pre_hooks(node, grads)
    if task.needed is None or _capture(task, node, grads):
        grad_inputs = call_function(node, grads)
        if not task.retain_graph:
            node._release()
    else:
        grad_inputs = ()
    edges = node.next_functions
    if len(grad_inputs) != len(edges):
        grad_inputs = validate_outputs(edges, grad_inputs)
    deps, buffers = task.deps, task.buffers
    for (nxt, nr), g in zip(edges, grad_inputs):
        if nxt is None:
            continue
        if g is not None:
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = []
            _add_to(buf, nr, g)
        d = deps[nxt] - 1
        deps[nxt] = d
        if d == 0:
            heappush(task.ready, (-nxt._sequence_nr, id(nxt), nxt))


def call_pre_hooks(node, grads: list) -> list:
    """The hooks that see a node's incoming gradients before it runs (PyTorch's
    ``call_tensor_pre_hooks`` and ``call_pre_hooks``): tensor hooks (``register_hook``) per output,
    ``retain_grad``, then the node's own pre-hooks.  A hook that returns a value replaces the
    gradient(s)."""
    if node._tensor_pre_hooks:
        for nr, hook in list(node._tensor_pre_hooks.values()):
            if nr < len(grads) and grads[nr] is not None:
                r = hook(grads[nr])
                if r is not None:
                    grads[nr] = r
    if node._retains_grad_hooks:
        for nr, ref in node._retains_grad_hooks.items():
            t = ref()
            if t is not None and nr < len(grads) and grads[nr] is not None:
                g = grads[nr]
                t._grad = g.detach().clone() if t._grad is None else t._grad + g.detach()
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            r = hook(tuple(grads))
            if r is not None:
                grads = list(r)
    return grads


def _capture(task: GraphTask, node, grads: list) -> bool:
    """For ``autograd.grad`` / ``backward(inputs=...)``: keep the gradients arriving for the
    captured inputs (added into their ``.grad`` with ``backward(inputs=...)``), and say whether
    ``node`` must run: an ``AccumulateGrad`` only when it is captured and gradients accumulate,
    any other node when a captured input can be reached from it."""
    is_capture = node in task.capture_nodes
    if is_capture:
        captures = task.captures
        for nr in range(len(grads)):
            ks = captures.get((node, nr))
            if ks:
                for k in ks:
                    g = grads[nr]
                    task.captured[k] = g
                    if task.accumulate and g is not None and not isinstance(node, AccumulateGrad):
                        t = task.inputs[k]
                        t._grad = g.detach().clone() if t._grad is None else t._grad + g
    if isinstance(node, AccumulateGrad):
        return task.accumulate and is_capture
    return node in task.needed


def call_function(node, grads: list) -> tuple:
    """Run ``node.apply`` on its incoming gradients, then its post-hooks, which may replace the
    result (PyTorch's ``call_function``).  A node none of whose gradients arrived is not run and
    passes nothing on."""
    # apply runs inside the loop on purpose: the loop variable is one of the references that
    # AccumulateGrad counts when it decides whether it may keep the gradient without a copy
    # (graph._STEAL_REFS)
    for g in grads:
        if g is not None:
            grad_inputs = node.apply(tuple(grads))
            if node._hooks:
                for hook in list(node._hooks.values()):
                    r = hook(grad_inputs, tuple(grads))
                    if r is not None:
                        grad_inputs = tuple(r)
            return grad_inputs
    return ()


def validate_outputs(edges: tuple, grad_inputs: tuple) -> tuple:
    """Line a node's gradients up with its edges (in ``next_functions`` order): a node may return
    fewer gradients than it has edges (``NativeBatchNormBackward0`` has none for the running
    statistics), the missing ones are None.

    PyTorch's ``validate_outputs`` also checks each gradient's count, shape, dtype and device
    against its edge.  Here the derivative formulas produce the input's geometry by construction,
    and a custom ``Function``'s gradients are checked (and summed to the input's shape) by
    ``BackwardCFunction.apply``.
    """
    missing = len(edges) - len(grad_inputs)
    if missing > 0:
        return grad_inputs + (None,) * missing
    return grad_inputs


def _add_to(buf: list, nr: int, g) -> None:
    """Add ``g`` into slot ``nr`` of an input buffer (PyTorch's InputBuffer::add)."""
    n = len(buf)
    if nr < n:
        cur = buf[nr]
        buf[nr] = g if cur is None else cur + g
    else:
        if nr > n:
            buf.extend([None] * (nr - n))
        buf.append(g)
