"""Common-subexpression elimination: compute each repeated expression once.

In PyTorch: ``torch/fx/passes/dialect/common/cse_pass.py`` (``CSEPass``).  Two nodes
are the same expression when they have the same opcode, target and arguments,
after the arguments themselves have been deduplicated; the later one is replaced
by the earlier one.  Constants are compared with their type, so ``x + 1`` and
``x + 1.0`` (different result dtypes) or ``x * 0.0`` and ``x * -0.0`` stay apart.

Never merged: placeholders, outputs, ``get_attr`` (cheap), module calls (a module
may keep state) and impure nodes (random ops give a new value each call).  A graph
with an in-place op is left alone: after ``a.add_(1)``, ``a`` and an equal-looking
``b`` are no longer equal, and merging them before the mutation would change
``b``.  PyTorch's pass leaves that to the caller ("cannot be safely applied on a
FX graph in non-functional dialects").
"""
from __future__ import annotations

from typing import Any

from ..graph_module import GraphModule
from ..node import Node, _is_op, _target_name

__all__ = ["common_subexpression_elimination"]


def _key(a: Any, env: dict[Node, Node]) -> Any:
    """A hashable key for an argument, nodes replaced by their representative."""
    if isinstance(a, Node):
        return env.get(a, a)
    if isinstance(a, (tuple, list)):
        return (type(a).__name__, tuple(_key(x, env) for x in a))
    if isinstance(a, dict):
        return ("dict", tuple((k, _key(v, env)) for k, v in a.items()))
    if isinstance(a, slice):
        return ("slice", _key(a.start, env), _key(a.stop, env), _key(a.step, env))
    if isinstance(a, float):
        return (float, repr(a))   # -0.0 and 0.0 differ; nan is never equal to itself
    return (type(a), a)


def common_subexpression_elimination(gm: GraphModule) -> bool:
    """Replace each node that repeats an earlier expression by that earlier node. Returns whether it changed."""
    graph = gm.graph
    if any(_is_mutation(n, gm) for n in graph.nodes):
        return False
    seen: dict[Any, Node] = {}
    env: dict[Node, Node] = {}
    changed = False
    for n in list(graph.nodes):
        if n.op not in ("call_function", "call_method") or n.is_impure():
            continue
        try:
            key = (n.op, n.target, _key(n.args, env), _key(n.kwargs, env))
            hash(key)
        except TypeError:
            continue   # an unhashable constant argument: keep the node
        if key in seen:
            n.replace_all_uses_with(seen[key])
            env[n] = seen[key]
            graph.erase_node(n)
            changed = True
        else:
            seen[key] = n
    if changed:
        gm.recompile()
    return changed


def _is_mutation(n: Node, gm: GraphModule) -> bool:
    """An in-place op (``add_``, ``operator.iadd``, ``setitem``, ``inplace=True``): it changes a value
    other nodes may hold."""
    if n.op in ("placeholder", "output", "get_attr"):
        return False
    if n.kwargs.get("inplace") is True:
        return True
    if n.op == "call_module":
        return getattr(gm.get_submodule(n.target), "inplace", False) is True
    if _is_op(n.target):
        return n.target.is_inplace
    name = _target_name(n.target)
    if name in ("setitem", "delitem"):
        return True
    if getattr(n.target, "__module__", "") == "_operator":
        return name.startswith("i")
    return name.endswith("_") and not name.endswith("__")
