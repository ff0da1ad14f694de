"""``Upsample`` (``torch/nn/modules/upsampling.py``): ``F.interpolate`` as a layer."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Upsample"]


class Upsample(Module):
    """Resize the spatial dims to ``size`` or by ``scale_factor`` ('nearest', 'linear' or 'bilinear')."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else scale_factor
        if isinstance(self.scale_factor, (tuple, list)):
            self.scale_factor = tuple(float(f) for f in self.scale_factor)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)
