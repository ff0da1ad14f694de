"""ResNet (He et al., 2015) with torchvision's module names.

In torchvision: ``torchvision/models/resnet.py``.  The names of the modules,
and so the state_dict keys (``layer1.0.conv1.weight``, ``layer2.0.downsample.0
.weight``, ``fc.bias`` ...), are identical, so a torchvision checkpoint loads
with ``strict=True``.

``small_input=True`` adapts the stem to 16-32 px images (a 3x3 stride-1 first
convolution and no max-pool), the usual CIFAR variant; it changes only
``conv1``'s shape and drops nothing else from the state_dict.  ``widths`` (not in torchvision, whose
stages are always 64, 128, 256 and 512 channels wide) sets the four stages'
widths, the stem's too, for a ResNet small enough to train on a CPU; the module
names stay the same.
"""
from __future__ import annotations

from typing import Callable, Sequence

from .. import nn
from ..nn import Module

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50", "conv3x3", "conv1x1"]


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    """3x3 convolution with padding."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups, bias=False,
                     dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(Module):
    """Two 3x3 convolutions and a shortcut: out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))."""

    expansion: int = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Module | None = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1, norm_layer: Callable | None = None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out = out + identity
        out = self.relu(out)
        return out


class Bottleneck(Module):
    """1x1 (reduce) -> 3x3 -> 1x1 (expand x4), with the stride on the 3x3 (torchvision's "ResNet V1.5")."""

    expansion: int = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Module | None = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1, norm_layer: Callable | None = None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out = out + identity
        return self.relu(out)


class ResNet(Module):
    """The ResNet family: a stem, four stages of residual blocks built by ``_make_layer``, pooling, a classifier."""

    def __init__(self, block, layers: list[int], num_classes: int = 1000, zero_init_residual: bool = False,
                 groups: int = 1, width_per_group: int = 64, replace_stride_with_dilation=None,
                 norm_layer: Callable | None = None, small_input: bool = False,
                 widths: Sequence[int] = (64, 128, 256, 512)):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if len(widths) != 4 or any(int(w) < 1 for w in widths):
            raise ValueError(f"widths should be 4 positive channel counts, one per stage, got {tuple(widths)}")
        if len(layers) != 4:
            raise ValueError(f"layers should be 4 block counts, one per stage, got {list(layers)}")
        self._norm_layer = norm_layer
        self.inplanes = int(widths[0])
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, got "
                             f"{replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        if small_input:
            self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=3, stride=1, padding=1, bias=False)
        else:
            self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.Identity() if small_input else nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        w1, w2, w3, w4 = (int(w) for w in widths)
        self.layer1 = self._make_layer(block, w1, layers[0])
        self.layer2 = self._make_layer(block, w2, layers[1], stride=2, dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, w3, layers[2], stride=2, dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, w4, layers[3], stride=2, dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(w4 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes: int, blocks: int, stride: int = 1, dilate: bool = False) -> nn.Sequential:
        """One stage: the first block may change resolution/width (with a 1x1 downsample shortcut), the
        other ``blocks - 1`` keep it."""
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = x.flatten(1)
        x = self.fc(x)
        return x


def resnet18(*, num_classes: int = 1000, small_input: bool = False, **kwargs) -> ResNet:
    """ResNet-18: BasicBlock x [2, 2, 2, 2]."""
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes=num_classes, small_input=small_input, **kwargs)


def resnet34(*, num_classes: int = 1000, small_input: bool = False, **kwargs) -> ResNet:
    """ResNet-34: BasicBlock x [3, 4, 6, 3]."""
    return ResNet(BasicBlock, [3, 4, 6, 3], num_classes=num_classes, small_input=small_input, **kwargs)


def resnet50(*, num_classes: int = 1000, small_input: bool = False, **kwargs) -> ResNet:
    """ResNet-50: Bottleneck x [3, 4, 6, 3]."""
    return ResNet(Bottleneck, [3, 4, 6, 3], num_classes=num_classes, small_input=small_input, **kwargs)
