"""Constant padding layers (``torch/nn/modules/padding.py``): ``F.pad`` with a fixed padding."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ZeroPad1d", "ZeroPad2d"]


class _ConstantPadNd(Module):
    _n = 1

    def __init__(self, padding, value: float):
        super().__init__()
        self.padding = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * (2 * self._n)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``: ``padding`` = (left, right) or one int for both."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``: ``padding`` = (left, right, top, bottom) or one int for all."""

    _n = 2


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"
