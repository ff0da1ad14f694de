"""Samplers: the order in which a map-style dataset is read.

In PyTorch: ``torch/utils/data/sampler.py``.  A sampler is an iterable of
indices (``SequentialSampler``: 0, 1, 2, ...; ``RandomSampler``: a fresh
permutation each epoch); a ``BatchSampler`` groups any sampler's indices into
lists, one list per batch.  The DataLoader builds both for you from
``shuffle``, ``batch_size`` and ``drop_last``.

Random samplers draw from a course_lib ``Generator``: the same seed gives the
same order every run, but not PyTorch's order (the generators differ).
"""
from __future__ import annotations

import itertools
from typing import Iterable, Iterator, Sequence, Sized

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


def _cl():
    import course_lib
    return course_lib


class Sampler:
    """Base class: subclasses define ``__iter__`` (indices, or lists of indices) and usually ``__len__``."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order: a permutation per pass (``replacement=False``) or independent draws.

    ``num_samples`` (default ``len(data_source)``) may exceed the dataset's
    length; without replacement that concatenates several permutations.
    Without a ``generator`` each ``iter()`` seeds a fresh generator from the
    global one, so ``course_lib.manual_seed`` makes the epochs reproducible.
    """

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        # the dataset's size may change between the constructor and iteration
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        cl = _cl()
        n = len(self.data_source)
        if self.generator is None:
            seed = int(cl.empty((), dtype=cl.int64).random_().item())
            generator = cl.Generator()
            generator.manual_seed(seed)
        else:
            generator = self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from cl.randint(high=n, size=(32,), dtype=cl.int64, generator=generator).tolist()
            yield from cl.randint(high=n, size=(self.num_samples % 32,), dtype=cl.int64,
                                  generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from cl.randperm(n, generator=generator).tolist()
            yield from cl.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order (a new one each pass)."""

    def __init__(self, indices: Sequence[int], generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _cl().randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Indices ``0 .. len(weights) - 1`` drawn with probability proportional to ``weights``.

    >>> import course_lib as cl
    >>> s = WeightedRandomSampler([0.0, 0.0, 1.0], 4, generator=cl.Generator().manual_seed(0))
    >>> list(s)
    [2, 2, 2, 2]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        cl = _cl()
        weights_tensor = cl.as_tensor(weights, dtype=cl.double)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rand_tensor = _cl().multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from iter(rand_tensor.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size``.

    >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    """

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            # zip of batch_size references to one iterator: stops at the first incomplete batch
            args = [sampler_iter] * self.batch_size
            for batch_droplast in zip(*args):
                yield [*batch_droplast]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
