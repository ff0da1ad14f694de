"""Convolution layers (``torch/nn/modules/conv.py``).

The call path, as in PyTorch: ``Conv2d.forward`` -> ``F.conv2d`` -> the registry's
``convolution`` op (through the dispatcher, so autograd records
``ConvolutionBackward0``) -> the im2col CPU kernel in ``course_lib/_ops/nn_ops.py``.
"""
from __future__ import annotations

import math

from ... import _creation as C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "ConvTranspose2d"]


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _ConvNd(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, n, dtype=None, device=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode != "zeros":
            raise ValueError(f"course_lib supports padding_mode='zeros' only, got {padding_mode!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(C.empty((*shape, *self.kernel_size), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(C.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # PyTorch's default: kaiming_uniform(a=sqrt(5)) for the weight, U(-1/sqrt(fan_in), ..) for the bias
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        n = len(self.kernel_size)
        if self.padding != (0,) * n:
            s += ", padding={padding}"
        if self.dilation != (1,) * n:
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * n:
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class Conv2d(_ConvNd):
    """2-d convolution over (N, C, H, W) inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, 2, dtype, device)

    def forward(self, input):
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-d convolution over (N, C, L) inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, 1, dtype, device)

    def forward(self, input):
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """Transposed 2-d convolution (the gradient of conv2d with respect to its input, as a layer); the weight is
    (in_channels, out_channels / groups, kH, kW).  ``forward(input, output_size)`` picks the output_padding
    that gives ``output_size``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, 2, dtype, device)

    def _output_padding(self, input, output_size) -> tuple:
        if output_size is None:
            return self.output_padding
        output_size = list(output_size)[-2:]
        pads = []
        for d in range(2):
            size = input.shape[d - 2]
            min_size = ((size - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            max_size = min_size + self.stride[d] - 1
            if not min_size <= output_size[d] <= max_size:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"[{min_size}, {min_size}] to [{max_size}, {max_size}] (for an input of "
                                 f"{list(input.shape[2:])})")
            pads.append(output_size[d] - min_size)
        return tuple(pads)

    def forward(self, input, output_size=None):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)
