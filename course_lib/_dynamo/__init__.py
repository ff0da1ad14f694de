"""Graph capture with graph breaks, guards and recompilation: ``course_lib.compile``'s front end.

In PyTorch: ``torch/_dynamo``.  See ``capture.py`` for how capture works (at the dispatcher, while
the Python runs, so it does not depend on the Python version's bytecode) and ``eval_frame.py`` for
the API.
"""
from __future__ import annotations

from . import backends, exc, guards, testing  # noqa: F401
from .backends import list_backends, lookup_backend, register_backend
from .config import config
from .eval_frame import ExplainOutput, GraphCompileReason, OptimizedModule, explain, reset
from .eval_frame import compile as optimize

__all__ = ["config", "reset", "explain", "list_backends", "lookup_backend", "register_backend", "OptimizedModule",
           "ExplainOutput", "GraphCompileReason", "optimize", "exc", "testing", "backends", "guards"]
