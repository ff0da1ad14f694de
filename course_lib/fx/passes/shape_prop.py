"""Shape propagation: run the graph once and record each node's shape and dtype.

In PyTorch: ``torch/fx/passes/shape_prop.py``.  ``ShapeProp(gm).propagate(*args)``
is an ``Interpreter`` that stores ``TensorMetadata`` in ``node.meta["tensor_meta"]``
(a tuple of them for nodes returning several tensors) and the result's Python type
in ``node.meta["type"]``.  Run it on meta tensors (``device="meta"``) to get shapes
without computing anything.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import Tensor
from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """What a later pass needs to know about a tensor without holding it."""

    shape: tuple
    dtype: Any
    requires_grad: bool
    stride: tuple


def _extract_tensor_metadata(t: Tensor) -> TensorMetadata:
    return TensorMetadata(tuple(t.shape), t.dtype, t.requires_grad, tuple(t.stride()))


class ShapeProp(Interpreter):
    """Record ``meta["tensor_meta"]`` and ``meta["type"]`` on every node while running it."""

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found = []

        def extract(obj: Any) -> Any:
            if isinstance(obj, Tensor):
                found.append(True)
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the graph on ``args`` (recording metadata) and return its result."""
        return super().run(*args)
