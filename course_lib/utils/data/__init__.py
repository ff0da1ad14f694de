"""course_lib.utils.data: datasets, samplers, collate and the DataLoader.

In PyTorch: ``torch/utils/data/``, laid out the same way:

- ``dataset.py``     ``Dataset``, ``IterableDataset``, ``TensorDataset``, ``ConcatDataset``, ``Subset``,
  ``random_split``
- ``sampler.py``     ``SequentialSampler``, ``RandomSampler``, ``SubsetRandomSampler``,
  ``WeightedRandomSampler``, ``BatchSampler``
- ``dataloader.py``  ``DataLoader`` and its single- and multi-process iterators
- ``_utils/``        collate, fetch, the worker loop, shared memory, worker failures

>>> import course_lib as cl
>>> from course_lib.utils.data import DataLoader, TensorDataset
>>> loader = DataLoader(TensorDataset(cl.arange(6.)), batch_size=4)
>>> [batch for (batch,) in loader]
[tensor([0., 1., 2., 3.]), tensor([4., 5.])]
"""
from __future__ import annotations

from ._utils.collate import collate, default_collate, default_collate_fn_map, default_convert
from ._utils.worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader, get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy
from .dataset import (
                      ChainDataset,
                      ConcatDataset,
                      Dataset,
                      IterableDataset,
                      StackDataset,
                      Subset,
                      TensorDataset,
                      random_split,
)
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler",
    "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
    "WeightedRandomSampler", "WorkerInfo", "collate", "default_collate", "default_collate_fn_map",
    "default_convert", "get_all_sharing_strategies", "get_sharing_strategy", "get_worker_info", "random_split",
    "set_sharing_strategy",
]
