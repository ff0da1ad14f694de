"""Procedural datasets generated from a seed: images and tables, nothing to download.

- :class:`SyntheticImages`: colour images of oriented stripes, one orientation
  and colour per class, made on the fly by ``__getitem__`` (so a million-image
  dataset costs no memory).  ``work`` adds smoothing passes to make each
  sample cost real CPU time: the stand-in for decoding and augmenting a JPEG
  when measuring a DataLoader.
- :class:`SyntheticTabular`: rows of features with a class label from a
  noisy linear rule, held in memory as two tensors.

Sample ``i`` depends only on ``(seed, i)``: the same in every process and in
every run, whatever order the samples are read in.
"""
from __future__ import annotations

import numpy as np

from ..utils.data.dataset import Dataset

__all__ = ["SyntheticImages", "SyntheticTabular"]


class SyntheticImages(Dataset):
    """``n`` images of ``size x size`` pixels with ``channels`` channels, ``num_classes`` classes.

    ``ds[i]`` is ``(image, label)``: ``image`` a ``uint8`` numpy array of shape
    (size, size, channels) (height, width, channel, as image files decode),
    ``label`` an int; or ``transform(image)`` if a transform is given.

    >>> ds = SyntheticImages(100, size=16, seed=0)
    >>> img, label = ds[3]
    >>> img.shape, img.dtype, label
    ((16, 16, 3), dtype('uint8'), 5)
    """

    def __init__(self, n: int, size: int = 32, channels: int = 3, num_classes: int = 10, seed: int = 0,
                 transform=None, target_transform=None, work: int = 0):
        if n < 0 or size < 1 or channels < 1 or num_classes < 1:
            raise ValueError("n >= 0, size >= 1, channels >= 1 and num_classes >= 1 are required")
        self.n, self.size, self.channels, self.num_classes = n, size, channels, num_classes
        self.seed, self.work = seed, work
        self.transform, self.target_transform = transform, target_transform
        # one orientation, frequency and colour per class, fixed by the seed
        rng = np.random.default_rng([seed, 2 ** 31])
        self.angles = np.linspace(0, np.pi, num_classes, endpoint=False)
        self.freqs = rng.uniform(1.5, 4.0, num_classes)
        self.colours = rng.uniform(0.3, 1.0, (num_classes, channels))

    def __len__(self) -> int:
        return self.n

    def label(self, index: int) -> int:
        return int(np.random.default_rng([self.seed, index]).integers(self.num_classes))

    def __getitem__(self, index: int):
        if not -self.n <= index < self.n:
            raise IndexError(f"index {index} is out of range for a dataset of {self.n} images")
        index = index % self.n if self.n else index
        rng = np.random.default_rng([self.seed, index])
        label = int(rng.integers(self.num_classes))
        s = self.size
        yy, xx = np.mgrid[0:s, 0:s] / s
        phase = rng.uniform(0, 2 * np.pi)
        a = self.angles[label] + rng.normal(0, 0.1)
        wave = 0.5 + 0.5 * np.sin(2 * np.pi * self.freqs[label] * (xx * np.cos(a) + yy * np.sin(a)) + phase)
        img = wave[:, :, None] * self.colours[label] + rng.normal(0, 0.08, (s, s, self.channels))
        for _ in range(self.work):
            # a 3x3 box blur, then sharpen back: costs time, keeps the picture
            blurred = img.copy()
            blurred[1:-1, 1:-1] = sum(img[1 + dy:s - 1 + dy, 1 + dx:s - 1 + dx]
                                      for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 9.0
            img = np.clip(2 * img - blurred, 0.0, 1.0)
        image = (np.clip(img, 0.0, 1.0) * 255).astype(np.uint8)
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label


class SyntheticTabular(Dataset):
    """``n`` rows of ``num_features`` float32 features; the label is the argmax of a noisy linear map.

    ``ds[i]`` is ``(features tensor (num_features,), label int)``; ``data`` and
    ``targets`` hold everything as two tensors (float32 and int64).

    >>> ds = SyntheticTabular(50, num_features=4, num_classes=3, seed=0)
    >>> x, y = ds[0]
    >>> tuple(x.shape), ds.targets.dtype
    ((4,), course_lib.int64)
    """

    def __init__(self, n: int, num_features: int = 8, num_classes: int = 2, seed: int = 0, noise: float = 0.1):
        import course_lib

        rng = np.random.default_rng(seed)
        x = rng.normal(0.0, 1.0, (n, num_features)).astype(np.float32)
        weights = rng.normal(0.0, 1.0, (num_features, num_classes))
        logits = x @ weights + rng.normal(0.0, noise, (n, num_classes))
        y = logits.argmax(axis=1).astype(np.int64)
        self.data = course_lib.from_numpy(x)
        self.targets = course_lib.from_numpy(y)
        self.num_classes = num_classes

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int):
        return self.data[index], int(self.targets[index])
