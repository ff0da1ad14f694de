"""Procedural images of four shapes: a first classification task that trains in seconds.

>>> images, labels = make_shapes(8, size=12, seed=0)
>>> images.shape, images.dtype, labels.dtype
((8, 1, 12, 12), dtype('float32'), dtype('int64'))
>>> [SHAPE_CLASSES[i] for i in labels[:4]]
['plus', 'square', 'cross', 'plus']

Each image is ``size x size`` pixels, one channel: a shape of random size,
position and brightness on a noisy background.  Classes are balanced and
``SHAPE_CLASSES[label]`` names them.  The same ``seed`` always gives the same
images, so use different seeds for a training and a test set.
"""
from __future__ import annotations

import numpy as np

__all__ = ["SHAPE_CLASSES", "make_shapes", "Shapes"]

SHAPE_CLASSES = ("square", "disk", "plus", "cross")


def make_shapes(n: int, size: int = 12, seed: int = 0, noise: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """``n`` images (float32, shape (n, 1, size, size)) and their labels (int64, shape (n,)).

    square: the outline of a square; disk: a filled disk; plus: a "+"; cross: an "x".
    Half-widths are drawn from 2 .. size // 2 - 1 and centres so the shape fits.
    """
    if size < 8:
        raise ValueError(f"size must be at least 8, got {size}")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % len(SHAPE_CLASSES)).astype(np.int64)
    r = rng.integers(2, size // 2, n).astype(np.float64)[:, None, None]           # half-width
    cy = (rng.random(n)[:, None, None] * (size - 2 * r - 1) + r).round()
    cx = (rng.random(n)[:, None, None] * (size - 2 * r - 1) + r).round()
    bright = rng.uniform(0.6, 1.0, n)[:, None, None]
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    dy, dx = yy[None] - cy, xx[None] - cx
    inside = (np.abs(dy) <= r) & (np.abs(dx) <= r)
    masks = np.stack([
        inside & (np.maximum(np.abs(dy), np.abs(dx)) >= r),                        # square outline
        dy ** 2 + dx ** 2 <= r ** 2 + 0.5,                                        # disk
        inside & ((np.abs(dy) < 0.5) | (np.abs(dx) < 0.5)),                       # plus
        inside & ((np.abs(dy - dx) < 0.5) | (np.abs(dy + dx) < 0.5)),             # cross
    ])
    picked = masks[labels, np.arange(n)]
    images = picked * bright + rng.normal(0.0, noise, (n, size, size))
    return images[:, None].astype(np.float32), labels


class Shapes:
    """A map-style dataset over :func:`make_shapes`: ``ds[i]`` is ``(image tensor (1, size, size), label int)``."""

    classes = SHAPE_CLASSES

    def __init__(self, n: int = 2000, size: int = 12, seed: int = 0, noise: float = 0.15):
        self.images, self.labels = make_shapes(n, size, seed, noise)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        from .. import tensor
        return tensor(self.images[i]), int(self.labels[i])

    def tensors(self):
        """All images and labels as two course_lib tensors (for batching by indexing)."""
        from .. import tensor
        return tensor(self.images), tensor(self.labels)
