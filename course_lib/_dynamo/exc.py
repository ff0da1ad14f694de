"""The exceptions of graph capture, as ``torch._dynamo.exc``."""
from __future__ import annotations

__all__ = ["TorchDynamoException", "Unsupported", "InvalidBackend"]


class TorchDynamoException(RuntimeError):
    """Base class of capture errors."""


class Unsupported(TorchDynamoException):
    """A graph break under ``fullgraph=True``: the function cannot be captured as one graph."""


class InvalidBackend(TorchDynamoException):
    """``course_lib.compile(backend=...)`` named no registered backend."""
