"""Guards: the assumptions a cache entry was compiled under, as objects ``explain`` can list.

In PyTorch: ``torch/_guards.py`` (``Guard``) and ``torch/_dynamo/guards.py``.  course_lib checks its
guards while the Python runs again (each op against the recorded one, each new input against its
recorded metadata, grad mode with every op), so a ``Guard`` here only *describes* one of those checks.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Guard", "TENSOR_MATCH", "GRAD_MODE", "CONSTANT_MATCH", "ID_MATCH", "OP_MATCH", "SHAPE_ENV"]

TENSOR_MATCH = "TENSOR_MATCH"
GRAD_MODE = "GRAD_MODE"
CONSTANT_MATCH = "CONSTANT_MATCH"
ID_MATCH = "ID_MATCH"
OP_MATCH = "OP_MATCH"
SHAPE_ENV = "SHAPE_ENV"


@dataclass(frozen=True)
class Guard:
    """One check: ``name`` (the source, ``L['a']``), its ``source`` kind (local, global, ...), the
    ``create_fn_name`` (``TENSOR_MATCH``, ``GRAD_MODE``, ...) and a readable ``description``."""

    name: str
    source: str
    create_fn_name: str
    description: str

    def __str__(self) -> str:
        return (f"Name: {self.name!r}\n    Source: {self.source}\n    Create Function: {self.create_fn_name}\n"
                f"    Guard Types: ['{self.create_fn_name}']\n    Code List: [{self.description!r}]\n")
