"""``Dropout`` (``torch/nn/modules/dropout.py``)."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d"]


class Dropout(Module):
    """In training, zero each element with probability p and scale the rest by 1/(1-p); identity in eval."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout2d(Dropout):
    """In training, zero whole channels (``input[n, c]`` of an (N, C, H, W) input) with probability p and scale
    the rest by 1/(1-p); identity in eval."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout1d(Dropout):
    """In training, zero whole channels of an (N, C, L) or (C, L) input with probability p; identity in eval."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)
