"""dtype information: ``finfo``, ``iinfo``, ``promote_types`` and ``can_cast``.

In PyTorch: ``torch.finfo`` / ``torch.iinfo`` (``torch/csrc/TypeInfo.cpp``) and ``torch.can_cast``
(``c10::canCast``).  The numbers come from numpy's ``finfo`` / ``iinfo`` of the dtype's numpy type.
"""
from __future__ import annotations

import builtins

import numpy as np

from . import _dtype
from ._dtype import dtype

__all__ = ["finfo", "iinfo", "promote_types", "can_cast"]


def _check_dtype(fn: str, arg: str, pos: int, value) -> None:
    if not isinstance(value, dtype):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be torch.dtype, not {type(value).__name__}")


class finfo:
    """Machine limits of a floating point dtype (the default dtype if none is given)."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: dtype | None = None) -> None:  # noqa: A002  (PyTorch's argument name)
        if type is None:
            type = _dtype.get_default_dtype()  # noqa: A001
        _check_dtype("finfo", "type", 1, type)
        if not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = np.finfo(type.np)
        self.bits: int = info.bits
        self.eps: float = builtins.float(info.eps)
        self.max: float = builtins.float(info.max)
        self.min: float = builtins.float(info.min)
        self.tiny: float = builtins.float(info.smallest_normal)
        self.smallest_normal: float = self.tiny
        self.resolution: float = 10.0 ** -builtins.int(info.precision)
        self.dtype: str = type.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type: dtype) -> None:  # noqa: A002
        _check_dtype("iinfo", "type", 1, type)
        if type is _dtype.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(type.np)
        self.bits: int = info.bits
        self.max: int = builtins.int(info.max)
        self.min: int = builtins.int(info.min)
        self.dtype: str = type.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={builtins.float(self.min):g}, max={builtins.float(self.max):g}, dtype={self.dtype})"


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` can be cast to."""
    _check_dtype("promote_types", "type1", 1, type1)
    _check_dtype("promote_types", "type2", 2, type2)
    return _dtype.promote_types(type1, type2)


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether PyTorch's type promotion allows casting ``from_`` to ``to``: never to a lower kind
    (float to integer, anything but bool to bool); any size within a kind or to a higher kind is allowed."""
    _check_dtype("can_cast", "from_", 1, from_)
    _check_dtype("can_cast", "to", 2, to)
    return from_.category <= to.category
