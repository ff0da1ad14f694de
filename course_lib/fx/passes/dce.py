"""Dead-code elimination: remove the nodes whose value nothing uses.

In PyTorch: ``Graph.eliminate_dead_code`` (``torch/fx/graph.py``).  Walking the
graph backwards, a node with no users and no side effect (``Node.is_impure``:
not a placeholder or output, not ``print``, not random, not in-place) is erased;
its inputs may then lose their last user and go in the same walk.
"""
from __future__ import annotations

from ..graph_module import GraphModule

__all__ = ["dead_code_elimination"]


def dead_code_elimination(gm: GraphModule) -> bool:
    """Erase dead nodes, drop submodules nothing refers to any more, recompile. Returns whether it changed."""
    changed = gm.graph.eliminate_dead_code()
    if changed:
        gm.delete_all_unused_submodules()
        gm.recompile()
    return changed
