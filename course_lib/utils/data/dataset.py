"""Datasets: where samples come from.

In PyTorch: ``torch/utils/data/dataset.py``.  Two kinds:

- a **map-style** ``Dataset`` answers ``dataset[i]`` for ``0 <= i < len(dataset)``;
  a sampler decides the order of the ``i``;
- an ``IterableDataset`` is a stream: ``iter(dataset)`` yields samples in its
  own order; with several workers each worker iterates its own copy, so the
  dataset must split the work itself (``get_worker_info()``).
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Iterable, Sequence

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``).

    >>> class Squares(Dataset):
    ...     def __len__(self):
    ...         return 5
    ...     def __getitem__(self, i):
    ...         return i * i
    >>> Squares()[3]
    9

    ``__len__`` is not defined here on purpose (as in PyTorch): the default
    samplers need it, a custom sampler may not.  ``dataset_a + dataset_b`` is a
    ``ConcatDataset``.
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream of samples: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker runs ``iter()`` on its own copy: shard
    the stream with ``get_worker_info()`` or every sample arrives once per worker.

    >>> class Count(IterableDataset):
    ...     def __init__(self, n):
    ...         self.n = n
    ...     def __iter__(self):
    ...         return iter(range(self.n))
    >>> list(Count(3))
    [0, 1, 2]
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> "ChainDataset":
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``; every tensor has the same first dimension.

    >>> import course_lib as cl
    >>> ds = TensorDataset(cl.arange(6).view(3, 2), cl.tensor([0, 1, 0]))
    >>> ds[1]
    (tensor([2, 3]), tensor(1))
    """

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Zip datasets of one length: ``StackDataset(a, b)[i] == (a[i], b[i])``, or a dict with keywords."""

    def __init__(self, *args: Dataset, **kwargs: Dataset):
        if args:
            if kwargs:
                raise ValueError("Supported either ``tuple``- (via ``args``) or"
                                 "``dict``- (via ``kwargs``) like input/output, but both types are given.")
            self._length = len(args[0])
            if any(self._length != len(dataset) for dataset in args):
                raise ValueError("Size mismatch between datasets")
            self.datasets = args
        elif kwargs:
            tmp = list(kwargs.values())
            self._length = len(tmp[0])
            if any(self._length != len(dataset) for dataset in tmp):
                raise ValueError("Size mismatch between datasets")
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Datasets one after another: indices ``0 .. len(a) - 1`` are ``a``'s, then ``b``'s, ...

    ``cumulative_sizes`` holds the running totals; ``__getitem__`` finds the
    dataset with a binary search (``bisect``).
    """

    @staticmethod
    def cumsum(sequence) -> list:
        r, s = [], 0
        for e in sequence:
            n = len(e)
            r.append(n + s)
            s += n
        return r

    def __init__(self, datasets: Iterable[Dataset]):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another (computed lazily, while iterating)."""

    def __init__(self, datasets: Iterable[Dataset]):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``: ``Subset(ds, [4, 1])[0] is ds[4]``."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        # a dataset that fetches many samples at once keeps doing so through the Subset
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _default_generator():
    from ..._random import default_generator
    return default_generator


def random_split(dataset: Dataset, lengths: Sequence, generator=None) -> list:
    """Split ``dataset`` into non-overlapping ``Subset``s of the given lengths, at random.

    ``lengths`` are sizes (summing to ``len(dataset)``) or fractions (summing
    to 1; the remainder after flooring goes round-robin to the first splits).
    The permutation comes from ``generator`` (default: the global generator),
    so a seeded generator gives the same split every time.

    >>> import course_lib as cl
    >>> train, val = random_split(range(10), [0.8, 0.2], generator=cl.Generator().manual_seed(0))
    >>> len(train), len(val)
    (8, 2)
    """
    from ..._random import randperm

    if generator is None:
        generator = _default_generator()
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
