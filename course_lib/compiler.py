"""``course_lib.compiler``: the user-facing helpers of the compiler, as ``torch.compiler``."""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["explain", "reset", "list_backends"]


def explain(f: Callable, *args: Any, **kwargs: Any) -> Any:
    """``explain(fn)(*args)``: graphs, graph breaks with reasons, ops and guards of one call of ``fn``."""
    from ._dynamo import explain as _explain
    return _explain(f, *args, **kwargs)


def reset() -> None:
    """Forget every compiled graph (``torch.compiler.reset``)."""
    from ._dynamo import reset as _reset
    _reset()


def list_backends(exclude_tags: tuple = ("debug", "experimental")) -> list[str]:
    """The registered backend names."""
    from ._dynamo import list_backends as _lb
    return _lb(exclude_tags)
