"""Models: ResNet with torchvision-compatible names, and an MLP builder."""
from .mlp import mlp  # noqa: F401
from .resnet import BasicBlock, Bottleneck, ResNet, resnet18, resnet34, resnet50  # noqa: F401
