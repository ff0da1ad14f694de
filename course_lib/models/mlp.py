"""A multi-layer perceptron builder."""
from __future__ import annotations

from .. import nn

__all__ = ["mlp"]


def mlp(sizes: list[int], activation=nn.ReLU, dropout: float = 0.0) -> nn.Sequential:
    """Linear layers of the given sizes with ``activation`` between them: mlp([784, 256, 10])."""
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(activation())
            if dropout:
                layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers)
