"""Planted wrong answers for chapter 06 (data loading): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations

from collections import abc

import numpy as np

from course_lib.utils.data import DataLoader


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


def _worker_loop_06(dataset, index_queue, result_queue, collate_fn, worker_id):
    from course_lib.utils.data._utils import ExceptionWrapper

    while True:
        task = index_queue.get()
        if task is None:
            return
        task_id, indices = task
        try:
            batch = collate_fn([dataset[i] for i in indices])
        except Exception:
            batch = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        result_queue.put((task_id, batch))


def _in_order_06(arrivals):
    waiting, next_id = {}, 0
    for task_id, batch in arrivals:
        waiting[task_id] = batch
        while next_id in waiting:
            yield waiting.pop(next_id)
            next_id += 1


def _load_06(dataset, batches, collate_fn, num_workers, ctx, prefetch_factor=2, timeout=5.0, *, ordered=True,
             refill=True, window=True, stop=True, reraise=True, join=True):
    import queue

    from course_lib.utils.data._utils import ExceptionWrapper

    index_queues = [ctx.Queue() for _ in range(num_workers)]
    result_queue = ctx.Queue()
    workers = [ctx.Process(target=_worker_loop_06, args=(dataset, index_queues[w], result_queue, collate_fn, w),
                           daemon=True) for w in range(num_workers)]
    for w in workers:
        w.start()
    tasks = iter(enumerate(batches))
    sent = [0]

    def send_next():
        task = next(tasks, None)
        if task is not None:
            index_queues[task[0] % num_workers].put(task)
            sent[0] += 1

    def arrivals():
        received = 0
        while received < sent[0]:
            try:
                yield result_queue.get(timeout=timeout)
            except queue.Empty:
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
            received += 1

    try:
        for _ in range(prefetch_factor * num_workers if window else len(batches)):
            send_next()
        for batch in (_in_order_06(arrivals()) if ordered else (b for _, b in arrivals())):
            if refill:
                send_next()
            if reraise and isinstance(batch, ExceptionWrapper):
                batch.reraise()
            yield batch
    finally:
        for q, w in zip(index_queues, workers):
            if stop:
                q.put(None)
            else:
                w.terminate()
        if join:
            for w in workers:
                w.join()


def load_with_workers_arrival_order(*args, **kwargs):
    # yields batches as they arrive: no in_order
    return _load_06(*args, **kwargs, ordered=False)


def load_with_workers_no_refill(*args, **kwargs):
    # sends the first prefetch_factor * num_workers tasks and no more: later batches are lost
    return _load_06(*args, **kwargs, refill=False)


def load_with_workers_all_at_once(*args, **kwargs):
    # sends every task at the start: no prefetch window
    return _load_06(*args, **kwargs, window=False)


def load_with_workers_no_none(dataset, batches, collate_fn, num_workers, ctx, prefetch_factor=2, timeout=5.0):
    # never tells the workers to stop, then waits for them
    import queue

    index_queues = [ctx.Queue() for _ in range(num_workers)]
    result_queue = ctx.Queue()
    workers = [ctx.Process(target=_worker_loop_06, args=(dataset, index_queues[w], result_queue, collate_fn, w),
                           daemon=True) for w in range(num_workers)]
    for w in workers:
        w.start()
    for task_id, indices in enumerate(batches):
        index_queues[task_id % num_workers].put((task_id, indices))
    try:
        arrivals = (result_queue.get(timeout=timeout) for _ in batches)
        yield from _in_order_06(arrivals)
    except queue.Empty:
        raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
    finally:
        for w in workers:
            w.join()


def load_with_workers_terminates(*args, **kwargs):
    # terminates the workers instead of sending None
    return _load_06(*args, **kwargs, stop=False)


def load_with_workers_own_context(dataset, batches, collate_fn, num_workers, ctx, prefetch_factor=2, timeout=5.0):
    # starts its workers with a multiprocessing context of its own instead of ctx
    import multiprocessing

    return _load_06(dataset, batches, collate_fn, num_workers, multiprocessing.get_context("fork"),
                    prefetch_factor, timeout)


def load_with_workers_no_join(*args, **kwargs):
    # sends None to every worker but never joins them: they may still be running when it returns
    return _load_06(*args, **kwargs, join=False)


def load_with_workers_yields_wrappers(*args, **kwargs):
    # hands out the ExceptionWrapper as a batch instead of re-raising it
    return _load_06(*args, **kwargs, reraise=False)


def _pin_loop_06(in_queue, out_queue, done_event, pin, *, poll=True, stop_on_empty=False, skip_wrappers=True,
                 catch=True, where="in pin memory thread for device 0"):
    import queue

    from course_lib.utils.data._utils import ExceptionWrapper

    while not done_event.is_set():
        try:
            r = in_queue.get(timeout=0.05) if poll else in_queue.get()
        except queue.Empty:
            if stop_on_empty:
                return
            continue
        idx, data = r
        if not (skip_wrappers and isinstance(data, ExceptionWrapper)):
            if catch:
                try:
                    data = pin(data)
                except Exception:
                    data = ExceptionWrapper(where=where)
            else:
                data = pin(data)
        out_queue.put((idx, data))


def pin_memory_loop_blocking_get(in_queue, out_queue, done_event, pin):
    # in_queue.get() without a timeout: never sees done_event while nothing arrives
    _pin_loop_06(in_queue, out_queue, done_event, pin, poll=False)


def pin_memory_loop_stops_when_empty(in_queue, out_queue, done_event, pin):
    # returns at the first empty poll instead of looking at done_event again
    _pin_loop_06(in_queue, out_queue, done_event, pin, stop_on_empty=True)


def pin_memory_loop_pins_wrappers(in_queue, out_queue, done_event, pin):
    # pins a worker's ExceptionWrapper like a batch
    _pin_loop_06(in_queue, out_queue, done_event, pin, skip_wrappers=False)


def pin_memory_loop_dies_on_error(in_queue, out_queue, done_event, pin):
    # an error while pinning ends the thread
    _pin_loop_06(in_queue, out_queue, done_event, pin, catch=False)


def pin_memory_loop_wrong_where(in_queue, out_queue, done_event, pin):
    # wraps the error with another description
    _pin_loop_06(in_queue, out_queue, done_event, pin, where="in pin memory thread")


class LoaderArgsReference:
    # the constructor's logic, with switches the wrong answers below flip
    batch_sampler_allows_none = False   # batch_sampler with batch_size=None accepted
    keeps_batch_size = False            # batch_size and drop_last kept when a batch_sampler is given
    checks_no_batching_drop_last = True
    seeds_shuffle = True                # RandomSampler gets the generator
    collate_by_batching = True          # default_convert when batch_size=None
    index_from_batching = True          # _index_sampler: the sampler when not batching
    message = "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, drop_last=False,
                 collate_fn=None, generator=None):
        from course_lib.utils import data
        from course_lib.utils.data.dataloader import _InfiniteConstantSampler

        iterable = isinstance(dataset, data.IterableDataset)
        if iterable:
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            given = batch_size not in (1, None) if self.batch_sampler_allows_none else batch_size != 1
            if given or shuffle or sampler is not None or drop_last:
                raise ValueError(self.message)
            if not self.keeps_batch_size:
                batch_size, drop_last = None, False
        elif batch_size is None and drop_last and self.checks_no_batching_drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = data.RandomSampler(dataset, generator=generator if self.seeds_shuffle else None)
            else:
                sampler = data.SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = data.BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        if collate_fn is None:
            batching = self.batch_sampler is not None if self.collate_by_batching else True
            collate_fn = data.default_collate if batching else data.default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation or not self.index_from_batching else self.sampler


class LoaderArgsBatchSamplerAllowsNone(LoaderArgsReference):
    # batch_sampler with batch_size=None let through (rule 3 reads "batch_size is not None")
    batch_sampler_allows_none = True


class LoaderArgsKeepsBatchSize(LoaderArgsReference):
    # a batch_sampler leaves batch_size at 1 instead of None
    keeps_batch_size = True


class LoaderArgsNoDropLastCheck(LoaderArgsReference):
    # batch_size=None with drop_last=True accepted
    checks_no_batching_drop_last = False


class LoaderArgsUnseededShuffle(LoaderArgsReference):
    # RandomSampler made without the generator
    seeds_shuffle = False


class LoaderArgsAlwaysDefaultCollate(LoaderArgsReference):
    # default_collate even when batching is off
    collate_by_batching = False


class LoaderArgsIndexAlwaysBatchSampler(LoaderArgsReference):
    # _index_sampler is the batch sampler even when it is None
    index_from_batching = False


class LoaderArgsOwnWording(LoaderArgsReference):
    # the right conflict, another message
    message = "batch_sampler is mutually exclusive with batch_size, shuffle, sampler and drop_last"


class LoaderArgsInheritsDataLoader(DataLoader):
    # DataLoader's own constructor and properties, inherited
    pass


class LoaderArgsBorrowsDataLoader(LoaderArgsReference):
    # its own constructor (which does not read them), DataLoader's two properties
    _auto_collation = DataLoader._auto_collation
    _index_sampler = DataLoader._index_sampler


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
    "06.6": [load_with_workers_arrival_order, load_with_workers_no_refill, load_with_workers_all_at_once,
             load_with_workers_no_none, load_with_workers_terminates, load_with_workers_yields_wrappers,
             load_with_workers_own_context, load_with_workers_no_join],
    "06.7": [LoaderArgsBatchSamplerAllowsNone, LoaderArgsKeepsBatchSize, LoaderArgsNoDropLastCheck,
             LoaderArgsUnseededShuffle, LoaderArgsAlwaysDefaultCollate, LoaderArgsIndexAlwaysBatchSampler,
             LoaderArgsOwnWording, LoaderArgsInheritsDataLoader, LoaderArgsBorrowsDataLoader],
    "06.8": [pin_memory_loop_blocking_get, pin_memory_loop_stops_when_empty, pin_memory_loop_pins_wrappers,
             pin_memory_loop_dies_on_error, pin_memory_loop_wrong_where],
}
