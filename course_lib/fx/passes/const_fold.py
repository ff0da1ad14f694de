"""Constant folding: compute at compile time what does not depend on the inputs.

In PyTorch: ``torch/fx/experimental/const_fold.py`` and, for compiled graphs,
``torch/_inductor/constant_folding.py``.  A node is folded when it is pure
(``Node.is_impure`` is false: no random op, no in-place op, no module call) and
every node it reads is a constant:

- a ``get_attr`` of a constant the tracer stored (``_tensor_constant0``) or of an
  earlier fold (``_folded_constant0``);
- with ``freeze=True``, also a ``get_attr`` of a parameter or buffer: the module is
  then treated as frozen (inference), and later changes to its weights are not seen;
- a node folded before it.

A folded tensor is stored on the module as ``_folded_constant<i>`` and read with one
``get_attr``; a folded Python value (a number, a tuple of sizes) is written into its
users' arguments.  The nodes and attributes nothing uses any more are removed.
"""
from __future__ import annotations

from typing import Any

from ... import Tensor, no_grad
from ...nn import Parameter
from ..graph_module import GraphModule
from ..node import Node, base_types, map_aggregate, map_arg

__all__ = ["constant_fold"]

_CONSTANT_PREFIXES = ("_tensor_constant", "_folded_constant")


def _is_literal(value: Any) -> bool:
    """Can ``value`` be written into the generated code as it is?"""
    ok = [True]

    def check(x: Any) -> Any:
        if not (isinstance(x, base_types) or x is None or x is ...):
            ok[0] = False
        return x

    map_aggregate(value, check)
    return ok[0]


def constant_fold(gm: GraphModule, freeze: bool = False) -> bool:
    """Fold the constant parts of ``gm``'s graph (see the module docstring). Returns whether it changed."""
    graph = gm.graph
    values: dict[Node, Any] = {}   # constant nodes -> their values
    for n in graph.nodes:
        if n.op == "get_attr":
            attr = _fetch_attr(gm, n.target)
            if n.target.split(".")[-1].startswith(_CONSTANT_PREFIXES) or (freeze and isinstance(attr, Tensor)):
                values[n] = attr

    changed = False
    counter = 0
    for n in list(graph.nodes):
        if n.op not in ("call_function", "call_method") or n.is_impure():
            continue
        if not all(i in values for i in n.all_input_nodes):
            continue
        args = map_arg(n.args, values.__getitem__)
        kwargs = map_arg(n.kwargs, values.__getitem__)
        with no_grad():
            if n.op == "call_function":
                result = n.target(*args, **kwargs)
            else:
                self_obj, *rest = args
                result = getattr(self_obj, n.target)(*rest, **kwargs)
        if isinstance(result, Tensor):
            while hasattr(gm, f"_folded_constant{counter}"):
                counter += 1
            name = f"_folded_constant{counter}"
            gm.register_buffer(name, result.detach() if not isinstance(result, Parameter) else result)
            with graph.inserting_before(n):
                new_node = graph.get_attr(name)
            n.replace_all_uses_with(new_node)
            values[new_node] = result
        elif _is_literal(result):
            def inline(x: Node, n: Node = n, value: Any = result) -> Any:
                return value if x is n else x
            for user in list(n.users):
                user._update_args_kwargs(map_arg(user.args, inline), map_arg(user.kwargs, inline))
        else:
            continue   # a value the code could not spell (a list of tensors, ...): keep the node
        graph.erase_node(n)
        changed = True

    if changed:
        graph.eliminate_dead_code()
        _delete_unused_constants(gm)
        gm.recompile()
    return changed


def _fetch_attr(gm: GraphModule, target: str) -> Any:
    obj: Any = gm
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def _delete_unused_constants(gm: GraphModule) -> None:
    """Drop ``_tensor_constant*`` / ``_folded_constant*`` buffers no ``get_attr`` reads any more."""
    used = {n.target for n in gm.graph.nodes if n.op == "get_attr"}
    for name in list(gm._buffers):
        if name.startswith(_CONSTANT_PREFIXES) and name not in used:
            del gm._buffers[name]
