"""The backend's small IR: one ``Value`` per computed tensor, in program order.

In PyTorch: ``torch/_inductor/ir.py`` (``Pointwise``, ``ExternKernel``, ``InputBuffer``), much
reduced.  A ``Value`` is one of:

- ``input``: a placeholder of the graph (``index`` is its position);
- ``constant``: a tensor the graph reads with ``get_attr`` (``target`` holds it);
- ``pointwise``: a primitive elementwise op (``op`` names it, see ``codegen.PRIMITIVES``) whose
  ``args`` are Values or Python scalars; these are what fusion groups are made of;
- ``reduction``: ``op`` (``sum``, ``max``, ``min``) of ``args[0]`` over its trailing dims
  (``axis == "rows"``: one result per row) or its leading dims (``axis == "cols"``: one result per
  column), where ``geometry = (outer, inner)`` splits ``args[0]``'s shape into rows and columns;
- ``extern``: any other registry op, run through course_lib's own kernel (``target`` is the op);
- ``writes``: set on the pointwise Value of an in-place op on a graph input (``p.sub_(g)``): its
  result is stored in that input's memory;
- ``getitem``: element ``index`` of a tuple-valued extern.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(eq=False)
class Value:
    """One tensor-valued (or, for a multi-output extern, tuple-valued) step of the program."""

    name: str
    kind: str
    op: str = ""
    args: tuple = ()
    shape: tuple[int, ...] = ()
    dtype: np.dtype | None = None
    index: int = 0
    target: Any = None
    axis: str = ""
    geometry: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    writes: "Value | None" = None   # an in-place op on a graph input: the input it overwrites
    users: list["Value"] = field(default_factory=list)

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def inputs(self) -> list["Value"]:
        """The Values among ``args`` (looking inside lists and tuples)."""
        out: list[Value] = []

        def visit(a: Any) -> None:
            if isinstance(a, Value):
                out.append(a)
            elif isinstance(a, (list, tuple)):
                for x in a:
                    visit(x)
        visit(self.args)
        return out

    def __repr__(self) -> str:
        return f"Value({self.name}, {self.kind}, {self.op or self.target!s}, shape={self.shape})"
