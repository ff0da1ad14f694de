"""``make_fx``: record the ops a function dispatches, as a ``Graph`` of registry ops.

In PyTorch: ``torch/fx/experimental/proxy_tensor.py``.  ``symbolic_trace`` records
what the *Python code* does to proxies (``x + 1``, ``x.sum()``, module calls);
``make_fx`` runs the function on real (or meta) tensors under a dispatch mode and
records what reaches the *dispatcher*: one ``call_function`` node per op, whose
target is the registry's op (``aten.add``, ``aten.mm``: composite ops such as
``matmul`` appear as the ops they decompose into).  Python control flow is
simply executed, so the graph is the path taken for these inputs.

This is the capture that later layers build on (AOT autograd runs the autograd
engine under the same mode).  Like every course_lib op call, arguments arrive
positionally in schema order, defaults included, so a node reads
``aten.add(x_1, y_1, 1)``.  Placeholders are named after ``f``'s parameters plus ``_1``,
as in PyTorch.

A tensor the function did not receive and did not compute becomes a ``get_attr`` of
``_param_constant<i>`` (a parameter, such as a module's weight) or ``_tensor_constant<i>``; a non-tensor argument is
a placeholder whose value the graph does not use (it was specialised).
"""
from __future__ import annotations

import inspect
import operator
from typing import Any, Callable

from ... import Tensor
from ..._ops.common import like_sequence
from ..._ops.registry import OPS
from ...nn import Module, Parameter
from ...utils import TorchDispatchMode
from ..graph import Graph
from ..graph_module import GraphModule
from ..node import Node
from ..passes.shape_prop import _extract_tensor_metadata

__all__ = ["make_fx", "ProxyTorchDispatchMode"]

_LIFT_FRESH, _LIFT_FRESH_COPY = OPS["lift_fresh"], OPS["lift_fresh_copy"]


class ProxyTorchDispatchMode(TorchDispatchMode):
    """A dispatch mode that appends one node per op to ``graph``.

    ``tensor_to_node`` maps ``id(tensor)`` to the node that produced it; the tensors are
    kept alive in ``_alive`` so that no id is reused while tracing.
    """

    def __init__(self, graph: Graph, root: Module) -> None:
        self.graph = graph
        self.root = root
        self.tensor_to_node: dict[int, Node] = {}
        self._alive: list[Tensor] = []
        self._n_constants = {"_param_constant": 0, "_tensor_constant": 0}

    def track(self, t: Tensor, node: Node) -> None:
        """From now on ``t`` is the value of ``node`` (an in-place op moves it to its new node)."""
        self.tensor_to_node[id(t)] = node
        self._alive.append(t)
        node.meta["tensor_meta"] = _extract_tensor_metadata(t)

    def node_of(self, a: Any) -> Any:
        """A node argument for ``a``: its producer node, a new constant, or ``a`` itself."""
        if isinstance(a, Tensor):
            node = self.tensor_to_node.get(id(a))
            if node is None:
                prefix = "_param_constant" if isinstance(a, Parameter) else "_tensor_constant"
                name = f"{prefix}{self._n_constants[prefix]}"
                self._n_constants[prefix] += 1
                setattr(self.root, name, a)
                node = self.graph.get_attr(name)
                self.track(a, node)
            return node
        if isinstance(a, (list, tuple)):
            return like_sequence(a, [self.node_of(x) for x in a])
        return a

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is _LIFT_FRESH:
            # tensor(data): the graph copies its constant, so that no call can change the constant it holds
            func = _LIFT_FRESH_COPY
        out = func(*args)   # runs below this mode: autograd and the kernel
        node = self.graph.call_function(func, tuple(self.node_of(a) for a in args))
        if isinstance(out, Tensor):
            self.track(out, node)
        elif isinstance(out, (tuple, list)):
            for i, t in enumerate(out):
                if isinstance(t, Tensor):
                    self.track(t, self.graph.call_function(operator.getitem, (node, i)))
        return out


def _parameter_names(f: Callable, n: int) -> list[str]:
    """``f``'s positional parameter names (``x``, ``y``), or ``arg0``, ``arg1``, ... for ``*args``."""
    try:
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    if len(params) >= n:
        return [p.name for p in params[:n]]
    return [f"arg{i}" for i in range(n)]


def make_fx(f: Callable) -> Callable[..., GraphModule]:
    """``make_fx(f)(*args)``: run ``f(*args)`` once and return the ops it dispatched as a ``GraphModule``.

    >>> gm = make_fx(lambda x: (x * 2).sum())(course_lib.ones(3))
    >>> print(gm.code)   # doctest: +SKIP
    def forward(self, x_1):
        mul = aten.mul(x_1, 2);  x_1 = None
        sum_1 = aten.sum(mul, None, False, None);  mul = None
        return sum_1
    """
    def wrapped(*args: Any) -> GraphModule:
        graph = Graph()
        root = Module()
        mode = ProxyTorchDispatchMode(graph, root)
        for name, a in zip(_parameter_names(f, len(args)), args):
            placeholder = graph.placeholder(f"{name}_1")
            if isinstance(a, Tensor):
                mode.track(a, placeholder)
            elif isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
                raise NotImplementedError("make_fx: pass tensors as separate arguments, not in a list")
        with mode:
            out = f(*args)
        graph.output(mode.node_of(out) if isinstance(out, (Tensor, list, tuple)) else out)
        return GraphModule(root, graph, class_name=getattr(f, "__name__", "f").replace("<lambda>", "lambda_"))
    return wrapped
