"""Graph passes: functions that take a ``GraphModule``, rewrite its graph and recompile it.

In PyTorch: ``torch/fx/passes/`` (and, for CSE and constant folding,
``torch/fx/passes/dialect/common/cse_pass.py`` and ``torch/fx/experimental/const_fold.py``).

- ``dead_code_elimination(gm)``: drop nodes nothing uses (``dce.py``)
- ``common_subexpression_elimination(gm)``: compute each repeated expression once (``cse_pass.py``)
- ``constant_fold(gm)``: evaluate what depends only on constants at compile time (``const_fold.py``)
- ``ShapeProp(gm).propagate(*args)``: record each node's shape and dtype (``shape_prop.py``)

Each pass returns whether it changed the graph.
"""
from __future__ import annotations

from .const_fold import constant_fold
from .cse_pass import common_subexpression_elimination
from .dce import dead_code_elimination
from .shape_prop import ShapeProp, TensorMetadata

__all__ = ["dead_code_elimination", "common_subexpression_elimination", "constant_fold", "ShapeProp",
           "TensorMetadata"]
