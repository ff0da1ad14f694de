"""``Interpreter`` and ``Transformer``: run a graph node by node.

In PyTorch: ``torch/fx/interpreter.py``.  ``Interpreter.run(*args)`` walks the
nodes in order and calls one method per opcode (``placeholder``, ``get_attr``,
``call_function``, ``call_method``, ``call_module``, ``output``); override them
to change what a node does (count ops, swap functions, record shapes).  Values
are dropped from the environment after their last use, as the generated code
does.

``Transformer`` is an interpreter whose values are proxies: running it writes a
new graph, so overriding a method rewrites the program.
"""
from __future__ import annotations

import inspect
from typing import Any, Iterator

from ._symbolic_trace import Tracer
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Run ``module``'s graph (or ``graph``) on concrete values, one overridable method per opcode.

    >>> class CountCalls(Interpreter):
    ...     def call_function(self, target, args, kwargs):
    ...         self.calls += 1
    ...         return super().call_function(target, args, kwargs)
    """

    def __init__(self, module: Any, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules()) if hasattr(module, "named_modules") else {}
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if self.garbage_collect_values:
            # the first use seen walking backwards is the last use going forwards
            node_to_last_use: dict[Node, Node] = {}
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in node_to_last_use:
                        node_to_last_use[n] = node
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None) -> Any:
        """Run the graph on ``args`` and return what its output node returns.

        ``initial_env`` pre-sets the values of some nodes (they are not run).
        """
        self.env = initial_env if initial_env is not None else {}
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else str(msg)
                    msg += f"\nOriginal traceback:\n{node.meta.get('stack_trace')}"
                    e.args = (msg,) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments' values and call the method named by its opcode."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # -- one method per opcode ------------------------------------------------------
    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The next argument passed to ``run`` (or the placeholder's default)."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!"
                               ) from si

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``self.module.<target>``."""
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``args[0].<target>(*args[1:], **kwargs)``."""
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Call the submodule at ``target``."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The returned value."""
        return args[0]

    # -- helpers ---------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        """The attribute at dotted path ``target`` of ``self.module``."""
        target_atoms = target.split(".")
        attr_itr = self.module
        for i, atom in enumerate(target_atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target_atoms[: i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """``n``'s args and kwargs with each node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        """Replace each node inside ``args`` by its value in the environment."""
        def load_arg(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() "
                                   "to diagnose such issues")
            return self.env[n_arg]
        return map_arg(args, load_arg)


class _TransformerTracer(Tracer):
    """Appends to the transformer's new graph; every module call stays one node."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.tensor_attrs: dict[int, str] = {}
        self._keep_alive: list = []

    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """Rewrite a ``GraphModule`` by running it on proxies; ``transform()`` returns the new module.

    >>> class SwapAbsForNeg(Transformer):
    ...     def call_function(self, target, args, kwargs):
    ...         if target is course_lib.abs:
    ...             target = course_lib.neg
    ...         return super().call_function(target, args, kwargs)
    """

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        default_value = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default_value), self.tracer)

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the transformation and return the new ``GraphModule``."""
        result = super().run()
        if result is not None:
            def strip_proxy(a: Any) -> Any:
                return a.node if isinstance(a, Proxy) else a
            new_output = self.new_graph.output(map_aggregate(result, strip_proxy))
            old_output = next(iter(reversed(self.graph.nodes)))
            new_output.meta.update(old_output.meta)
        return GraphModule(self.module, self.new_graph)
