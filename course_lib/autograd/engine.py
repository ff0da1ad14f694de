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

import heapq

import numpy as np

from .._ops.common import wrap
from .._ops.dispatcher import _mode_stack, grad_state
from .graph import AccumulateGrad, gradient_edge

_Tensor = None


def _validate_root(out, grad, i):
    T = _Tensor
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


def _collect(roots):
    """Count dependencies of every node reachable from ``roots`` (iteratively: graphs can be deep)."""
    deps = {}
    seen = set()
    stack = [n for n in roots if n is not None]
    for n in stack:
        seen.add(n)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps, seen


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
    T = _Tensor
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


def _execute(roots, root_grads, retain_graph, captures, inputs, accumulate, allow_unused):
    root_nodes = [n for n, _ in roots]
    deps, reachable = _collect(root_nodes)
    needed = None
    capture_nodes = ()
    if inputs is not None:
        capture_nodes = {node for node, _ in captures}
        needed = _needed([n for n in root_nodes if n is not None], capture_nodes)

    # input buffers: node -> list of gradients, one slot per output of the node
    buffers = {}
    for (node, nr), g in zip(roots, root_grads):
        if node is None:
            continue
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = []
        _add_to(buf, nr, g)

    captured = [None] * (len(inputs) if inputs is not None else 0)
    ready = []
    heappush, heappop = heapq.heappush, heapq.heappop
    for node in set(n for n in root_nodes if n is not None):
        if deps.get(node, 0) == 0:
            heappush(ready, (-node._sequence_nr, id(node), node))

    while ready:
        node = heappop(ready)[2]
        grads = buffers.pop(node, None) or [None]

        # tensor hooks (register_hook) and retain_grad, per output
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

        run = True
        if needed is not None:
            # capture for autograd.grad / inputs=
            is_capture = node in capture_nodes
            if is_capture:
                for nr in range(len(grads)):
                    ks = captures.get((node, nr))
                    if ks:
                        for k in ks:
                            g = grads[nr]
                            captured[k] = g
                            if accumulate and g is not None and not isinstance(node, AccumulateGrad):
                                t = inputs[k]
                                t._grad = g.detach().clone() if t._grad is None else t._grad + g
            if isinstance(node, AccumulateGrad):
                run = accumulate and is_capture
            elif node not in needed:
                run = False
        nf = node.next_functions
        if run:
            for g in grads:
                if g is not None:
                    grad_inputs = node.apply(tuple(grads))
                    if node._hooks:
                        for hook in list(node._hooks.values()):
                            r = hook(grad_inputs, tuple(grads))
                            if r is not None:
                                grad_inputs = tuple(r)
                    break
            else:
                grad_inputs = ()  # no gradient reached this node: nothing to pass on
            if not retain_graph:
                node._release()
        else:
            grad_inputs = ()

        n_gi = len(grad_inputs)
        for k, (nxt, nr) in enumerate(nf):
            if nxt is None:
                continue
            g = grad_inputs[k] if k < n_gi else None
            if g is not None:
                buf = buffers.get(nxt)
                if buf is None:
                    buf = buffers[nxt] = []
                _add_to(buf, nr, g)
            d = deps[nxt] - 1
            deps[nxt] = d
            if d == 0:
                heappush(ready, (-nxt._sequence_nr, id(nxt), nxt))
        # drop this node's references to gradients now handed on, so that a gradient reaching an
        # AccumulateGrad is held only by its input buffer and can become .grad without a copy
        grads = grad_inputs = g = None

    if inputs is not None and not accumulate:
        for k, g in enumerate(captured):
            if g is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        return tuple(captured)
    return None


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


def _install(tensor_cls):
    global _Tensor
    _Tensor = tensor_cls
