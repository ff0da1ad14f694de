"""Planted wrong answers for chapter 06 (data loading): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations

from collections import abc

import numpy as np


class BatchSamplerAlwaysDropsLast:
    # never yields the short last batch
    def __init__(self, sampler, batch_size, drop_last):
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []

    def __len__(self):
        return len(self.sampler) // self.batch_size


class BatchSamplerYieldsEmptyTail(BatchSamplerAlwaysDropsLast):
    # yields the leftover list even when it is empty
    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if not self.drop_last:
            yield batch

    def __len__(self):
        return len(self.sampler) // self.batch_size + (0 if self.drop_last else 1)


class BatchSamplerLenAlwaysFloor(BatchSamplerYieldsEmptyTail):
    # batches right, length rounded down even without drop_last
    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        return len(self.sampler) // self.batch_size


class BatchSamplerTuples(BatchSamplerLenAlwaysFloor):
    # tuples instead of lists
    def __iter__(self):
        for b in BatchSamplerLenAlwaysFloor.__iter__(self):
            yield tuple(b)

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _collate_06(batch, *, float_dtype="float64", seq=list, strings=None, namedtuples=True, strict=True):
    import course_lib as cl

    def rec(b):
        elem = b[0]
        if isinstance(elem, cl.Tensor):
            return cl.stack(list(b), 0)
        if isinstance(elem, np.ndarray):
            return cl.stack([cl.as_tensor(x) for x in b], 0)
        if isinstance(elem, float):
            return cl.tensor(b, dtype=getattr(cl, float_dtype)) if float_dtype else cl.tensor(b)
        if isinstance(elem, int):
            return cl.tensor(b)
        if isinstance(elem, str):
            return strings(b) if strings else b
        if isinstance(elem, abc.Mapping):
            return {k: rec([d[k] for d in b]) for k in elem}
        if namedtuples and isinstance(elem, tuple) and hasattr(elem, "_fields"):
            return type(elem)(*(rec(v) for v in zip(*b)))
        if isinstance(elem, abc.Sequence):
            return seq(rec(v) for v in zip(*b))
        if strict:
            raise TypeError(type(elem))
        return b

    return rec(batch)


def collate_float32(batch):
    return _collate_06(batch, float_dtype=None)


def collate_tuples_stay_tuples(batch):
    return _collate_06(batch, seq=tuple)


def collate_strings_as_lists(batch):
    return _collate_06(batch, strings=list)


def collate_namedtuple_as_list(batch):
    return _collate_06(batch, namedtuples=False)


def collate_unknown_passes_through(batch):
    return _collate_06(batch, strict=False)


class SingleProcessIterAlwaysBatches:
    # ignores batch_size=None: always iterates batch_sampler
    def __init__(self, loader):
        self.dataset, self.collate_fn = loader.dataset, loader.collate_fn
        self.indices = iter(loader.batch_sampler)

    def __iter__(self):
        return self

    def __next__(self):
        return self.collate_fn([self.dataset[i] for i in next(self.indices)])


class SingleProcessIterDefaultCollate(SingleProcessIterAlwaysBatches):
    # ignores the loader's collate_fn
    def __init__(self, loader):
        from course_lib.utils.data import default_collate, default_convert

        self.dataset = loader.dataset
        self.batching = loader.batch_sampler is not None
        self.collate_fn = default_collate if self.batching else default_convert
        self.indices = iter(loader.batch_sampler if self.batching else loader.sampler)

    def __next__(self):
        index = next(self.indices)
        if self.batching:
            return self.collate_fn([self.dataset[i] for i in index])
        return self.collate_fn(self.dataset[index])


class SingleProcessIterOwnBatches(SingleProcessIterDefaultCollate):
    # rebuilds the batches from sampler and batch_size, forgetting drop_last and batch_sampler
    def __init__(self, loader):
        self.dataset, self.collate_fn = loader.dataset, loader.collate_fn
        self.batching = loader.batch_size is not None
        if self.batching:
            idx = list(loader.sampler)
            bs = loader.batch_size
            self.indices = iter([idx[k:k + bs] for k in range(0, len(idx), bs)])
        else:
            self.indices = iter(loader.sampler)


def worker_loop_no_error_handling(dataset, index_queue, result_queue, collate_fn, worker_id):
    while True:
        task = index_queue.get()
        if task is None:
            return
        task_id, indices = task
        result_queue.put((task_id, collate_fn([dataset[i] for i in indices])))


def worker_loop_batches_only(dataset, index_queue, result_queue, collate_fn, worker_id):
    from course_lib.utils.data._utils import ExceptionWrapper

    while True:
        task = index_queue.get()
        if task is None:
            return
        try:
            result_queue.put(collate_fn([dataset[i] for i in task[1]]))
        except Exception:
            result_queue.put(ExceptionWrapper(where=f"in DataLoader worker process {worker_id}"))


def worker_loop_stops_at_error(dataset, index_queue, result_queue, collate_fn, worker_id):
    from course_lib.utils.data._utils import ExceptionWrapper

    while True:
        task = index_queue.get()
        if task is None:
            return
        task_id, indices = task
        try:
            result_queue.put((task_id, collate_fn([dataset[i] for i in indices])))
        except Exception:
            result_queue.put((task_id, ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")))
            return


def worker_loop_wrong_where(dataset, index_queue, result_queue, collate_fn, worker_id):
    from course_lib.utils.data._utils import ExceptionWrapper

    while True:
        task = index_queue.get()
        if task is None:
            return
        task_id, indices = task
        try:
            batch = collate_fn([dataset[i] for i in indices])
        except Exception:
            batch = ExceptionWrapper(where="in DataLoader worker process")
        result_queue.put((task_id, batch))


def worker_loop_ignores_none(dataset, index_queue, result_queue, collate_fn, worker_id):
    from course_lib.utils.data._utils import ExceptionWrapper

    while True:
        task = index_queue.get()
        if task is None:
            continue
        task_id, indices = task
        try:
            batch = collate_fn([dataset[i] for i in indices])
        except Exception:
            batch = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        result_queue.put((task_id, batch))


def in_order_reads_everything_first(arrivals):
    for _, batch in sorted(arrivals):
        yield batch


def in_order_one_per_arrival(arrivals):
    waiting, next_id = {}, 0
    for task_id, batch in arrivals:
        waiting[task_id] = batch
        if next_id in waiting:
            yield waiting.pop(next_id)
            next_id += 1


def in_order_yields_pairs(arrivals):
    waiting, next_id = {}, 0
    for task_id, batch in arrivals:
        waiting[task_id] = batch
        while next_id in waiting:
            yield next_id, waiting.pop(next_id)
            next_id += 1


def in_order_arrival_order(arrivals):
    for _, batch in arrivals:
        yield batch


WRONG = {
    "06.1": [BatchSamplerAlwaysDropsLast, BatchSamplerYieldsEmptyTail, BatchSamplerLenAlwaysFloor,
             BatchSamplerTuples],
    "06.2": [collate_float32, collate_tuples_stay_tuples, collate_strings_as_lists, collate_namedtuple_as_list,
             collate_unknown_passes_through],
    "06.3": [SingleProcessIterAlwaysBatches, SingleProcessIterDefaultCollate, SingleProcessIterOwnBatches],
    "06.4": [worker_loop_no_error_handling, worker_loop_batches_only, worker_loop_stops_at_error,
             worker_loop_wrong_where, worker_loop_ignores_none],
    "06.5": [in_order_reads_everything_first, in_order_one_per_arrival, in_order_yields_pairs,
             in_order_arrival_order],
}
