"""Procedural 32x32 colour images in 10 classes: five shapes, each solid or striped.

A stand-in for CIFAR-10 that is made from a seed in seconds and needs no
download: big enough (tens of thousands of images) and hard enough (random colours,
sizes, positions, stripe angles and noise) that a network has to learn shapes and
textures, small enough that a ResNet learns it on a CPU in minutes.

>>> images, labels = make_patterns(6, seed=0)
>>> images.shape, images.dtype, labels.dtype
((6, 32, 32, 3), dtype('uint8'), dtype('int64'))
>>> [PATTERN_CLASSES[i] for i in labels[:3]]
['striped square', 'solid square', 'striped triangle']
>>> ds = Patterns(100, seed=1)
>>> img, label = ds[0]
>>> img.shape, label, ds.classes[label]
((32, 32, 3), 8, 'solid plus')

The label is ``2 * shape + striped`` (``SHAPES[label // 2]``; striped when odd).
Colours are random in every image, so colour alone tells nothing about the class.
Images are ``uint8`` arrays of shape (H, W, C), as image files decode and as
torchvision's ``CIFAR10.data`` holds them; a ``transform`` (say ``ToTensor`` and
``Normalize`` from :mod:`course_lib.datasets.transforms`) turns them into tensors.
The same ``seed`` always gives the same images: use different seeds for the
training and the test set.
"""
from __future__ import annotations

import numpy as np

from ..utils.data.dataset import Dataset

__all__ = ["SHAPES", "PATTERN_CLASSES", "make_patterns", "Patterns"]

SHAPES = ("disk", "square", "triangle", "diamond", "plus")
PATTERN_CLASSES = tuple(f"{fill} {shape}" for shape in SHAPES for fill in ("solid", "striped"))

_CHUNK = 2048   # images generated at a time: bounds the temporaries to a few tens of MB


def _shape_masks(shape: np.ndarray, r: np.ndarray, dy: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """Boolean (n, H, W) masks: image k holds shape ``shape[k]`` of half-width ``r[k]`` at offsets dy, dx."""
    ady, adx = np.abs(dy), np.abs(dx)
    masks = np.stack([
        dy ** 2 + dx ** 2 <= r ** 2,                                               # disk
        (ady <= 0.8 * r) & (adx <= 0.8 * r),                                       # square
        (dy >= -r) & (dy <= 0.8 * r) & (adx <= (dy + r) * 0.6),                    # triangle, point up
        ady + adx <= r,                                                            # diamond
        ((ady <= r) & (adx <= 0.3 * r)) | ((adx <= r) & (ady <= 0.3 * r)),         # plus
    ])
    return masks[shape, np.arange(len(shape))]


def _make_chunk(rng: np.random.Generator, labels: np.ndarray, size: int, noise: float) -> np.ndarray:
    n = len(labels)
    shape, striped = labels // 2, labels % 2 == 1
    half = rng.uniform(0.25, 0.42, n) * size                                      # half-width in pixels
    cy = rng.uniform(half, size - 1 - half).astype(np.float32)[:, None, None]
    cx = rng.uniform(half, size - 1 - half).astype(np.float32)[:, None, None]
    r = half.astype(np.float32)[:, None, None]
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    dy, dx = yy[None] - cy, xx[None] - cx
    inside = _shape_masks(shape, r, dy, dx)
    # stripes: period 3.5 to 6 px at a random angle and phase; solid shapes ignore them
    angle = rng.uniform(0, np.pi, n).astype(np.float32)[:, None, None]
    period = rng.uniform(3.5, 6.0, n).astype(np.float32)[:, None, None]
    phase = rng.uniform(0, 2 * np.pi, n).astype(np.float32)[:, None, None]
    wave = np.sin((xx * np.cos(angle) + yy * np.sin(angle)) * (2 * np.pi / period) + phase) > 0
    # background and foreground colours at least 0.35 apart in each channel (circularly)
    bg = rng.uniform(0, 1, (n, 1, 1, 3)).astype(np.float32)
    fg = (bg + rng.uniform(0.35, 0.65, (n, 1, 1, 3)).astype(np.float32)) % 1.0
    # each pixel is bg + k * (fg - bg): k = 0 outside the shape, 1 on a solid shape, and on a
    # striped one 1 and 0.5 in turns (its colour alternating with an even mix of the two)
    k = inside * np.where(striped[:, None, None], 0.5 + 0.5 * wave, np.float32(1)).astype(np.float32)
    img = bg + k[..., None] * (fg - bg)
    img += rng.standard_normal(img.shape, dtype=np.float32) * np.float32(noise)
    np.clip(img * 255 + 0.5, 0, 255, out=img)
    return img.astype(np.uint8)


def make_patterns(n: int, size: int = 32, seed: int = 0, noise: float = 0.06) -> tuple[np.ndarray, np.ndarray]:
    """``n`` images (uint8, shape (n, size, size, 3)) and their labels (int64, shape (n,)), balanced classes.

    Made in blocks of a few thousand images, each block with whole-array numpy operations.
    """
    if size < 16:
        raise ValueError(f"size must be at least 16, got {size}")
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % len(PATTERN_CLASSES)).astype(np.int64)
    images = np.empty((n, size, size, 3), dtype=np.uint8)
    for start in range(0, n, _CHUNK):
        images[start:start + _CHUNK] = _make_chunk(rng, labels[start:start + _CHUNK], size, noise)
    return images, labels


class Patterns(Dataset):
    """A map-style dataset over :func:`make_patterns`, shaped like torchvision's ``CIFAR10``.

    ``data``: the (n, size, size, 3) uint8 images; ``targets``: the labels (a list of ints);
    ``ds[i]`` is ``(transform(data[i]), target_transform(targets[i]))``, the raw image and int
    label without transforms.
    """

    classes = PATTERN_CLASSES

    def __init__(self, n: int = 20000, size: int = 32, seed: int = 0, noise: float = 0.06,
                 transform=None, target_transform=None):
        self.data, labels = make_patterns(n, size, seed, noise)
        self.targets = labels.tolist()
        self.transform, self.target_transform = transform, target_transform

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int):
        img, target = self.data[index], self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target
