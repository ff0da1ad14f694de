"""Python-level helpers over tensors: ``is_tensor``, ``is_floating_point``, ``numel``, ``equal``, ``allclose``.

In PyTorch ``is_tensor`` is Python (``torch/__init__.py``); the others are ATen ops.  Here they are composed
of registered ops (``eq``, ``isclose``, ``all``), so they need no kernel of their own.
"""
from __future__ import annotations

from typing import Any

from ._tensor import Tensor

__all__ = ["is_tensor", "is_floating_point", "numel", "equal", "allclose"]


def _check_tensor(fn: str, arg: str, pos: int, value: Any) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type(value).__name__}")


def is_tensor(obj: Any) -> bool:
    """True if ``obj`` is a Tensor (a Parameter too)."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    """True if ``input``'s dtype is a floating point one."""
    _check_tensor("is_floating_point", "input", 1, input)
    return input.is_floating_point()


def numel(input: Tensor) -> int:
    """The number of elements of ``input``."""
    _check_tensor("numel", "input", 1, input)
    return input.numel()


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and the same values (compared after type promotion)."""
    _check_tensor("equal", "input", 1, input)
    _check_tensor("equal", "other", 2, other)
    if input.shape != other.shape:
        return False
    return bool((input == other).all())


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True if ``|input - other| <= atol + rtol * |other|`` everywhere (broadcast; the dtypes must match)."""
    _check_tensor("allclose", "input", 1, input)
    _check_tensor("allclose", "other", 2, other)
    return bool(input.isclose(other, rtol, atol, equal_nan).all())
