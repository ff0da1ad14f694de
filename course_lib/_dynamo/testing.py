"""Test helpers, as ``torch._dynamo.testing``."""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["CompileCounter", "CompileCounterWithBackend"]


class CompileCounter:
    """A backend that counts: ``frame_count`` graphs compiled, ``op_count`` their ``call_function`` nodes.

    >>> cnt = CompileCounter()
    >>> f = course_lib.compile(fn, backend=cnt)
    """

    def __init__(self) -> None:
        self.frame_count = 0
        self.op_count = 0
        self.graphs: list = []

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        self.frame_count += 1
        self.graphs.append(gm)
        self.op_count += sum(1 for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    def clear(self) -> None:
        self.frame_count = 0
        self.op_count = 0
        self.graphs = []


class CompileCounterWithBackend(CompileCounter):
    """Counts like ``CompileCounter`` and compiles with the named backend."""

    def __init__(self, backend: str) -> None:
        super().__init__()
        self.backend = backend

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        from .backends import lookup_backend
        super().__call__(gm, example_inputs)
        return lookup_backend(self.backend)(gm, example_inputs)
