"""The DataLoader: turns a dataset and a sampler into an iterator of batches.

In PyTorch: ``torch/utils/data/dataloader.py``; this file keeps its structure
and names so the two can be read side by side.

Follow one index from the sampler to the batch::

    sampler ──> BatchSampler ──> [3, 7, 1, 4] ──> fetcher: [dataset[3], dataset[7], ...]
                                                      ──> collate_fn ──> batch

With ``num_workers=0`` (``_SingleProcessDataLoaderIter``) that chain runs in
the main process, one batch per ``next()``.  With workers
(``_MultiProcessingDataLoaderIter``) the main process only *sends* index
lists, round-robin, one queue per worker, keeping ``prefetch_factor *
num_workers`` batches in flight; each worker fetches and collates
(``_utils/worker.py``) and puts ``(task index, batch)`` on one shared result
queue; the main process hands batches out in task order (``in_order=True``:
early arrivals wait in ``_task_info``) or as they arrive.  Batches travel
through shared memory (``_utils/shared_memory.py``).

Workers are started with ``fork`` on Linux (fast: the dataset is already in
the child's memory) and with the platform's default method elsewhere; pass
``multiprocessing_context='spawn'`` for fresh interpreters (then the dataset,
``collate_fn`` and ``worker_init_fn`` must be picklable, so defined at module
level, not in a notebook cell).
"""
from __future__ import annotations

import itertools
import multiprocessing as python_multiprocessing
import os
import queue
import sys
import time
import warnings
import weakref
from math import ceil

from . import _utils
from ._utils import ExceptionWrapper
from ._utils import shared_memory as _shm
from ._utils.signal_handling import workers_failure
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert", "set_sharing_strategy",
           "get_sharing_strategy", "get_all_sharing_strategies"]

default_collate = _utils.collate.default_collate
default_convert = _utils.collate.default_convert
get_worker_info = _utils.worker.get_worker_info


# ----------------------------------------------------------------------------- sharing strategy

_SHARING_STRATEGIES = ("shared_memory", "pickle")
_sharing_strategy = ["shared_memory"]


def get_all_sharing_strategies() -> set:
    """How batches can travel from workers: ``'shared_memory'`` (default) or ``'pickle'``."""
    return set(_SHARING_STRATEGIES)


def get_sharing_strategy() -> str:
    return _sharing_strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how workers send batches to the main process (read when an iterator starts).

    ``'shared_memory'``: tensors are written to shared memory and only their
    address travels.  ``'pickle'``: the whole batch is pickled through the
    result queue's pipe (slower; here to measure the difference).  PyTorch's
    ``torch.multiprocessing.set_sharing_strategy`` chooses between two kinds of
    shared memory (``file_descriptor``, ``file_system``); it has no pickling mode.
    """
    if new_strategy not in _SHARING_STRATEGIES:
        raise ValueError(f"sharing strategy must be one of {list(_SHARING_STRATEGIES)}, got {new_strategy!r}")
    _sharing_strategy[0] = new_strategy


# ----------------------------------------------------------------------------- helpers

class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        if kind == _DatasetKind.Map:
            return _utils.fetch._MapDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)
        return _utils.fetch._IterableDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the 'indices' of an IterableDataset (its fetcher ignores them)."""

    def __iter__(self):
        while True:
            yield None


def _cpu_count() -> int | None:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def _default_context():
    """'fork' on Linux (fast start, no pickling of the dataset); the platform's default elsewhere."""
    if sys.platform.startswith("linux"):
        return python_multiprocessing.get_context("fork")
    return python_multiprocessing.get_context()


# ----------------------------------------------------------------------------- DataLoader

class DataLoader:
    """Iterate over a dataset in batches, optionally with worker processes.

    >>> import course_lib as cl
    >>> from course_lib.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(cl.arange(10.), cl.arange(10) % 2)
    >>> [x.tolist() for x, y in DataLoader(ds, batch_size=4)]
    [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0]]

    Arguments (PyTorch's, same defaults):

    - ``batch_size`` (1): samples per batch; ``None`` turns batching off (each
      sample goes through ``default_convert`` alone).
    - ``shuffle``: a new random order each epoch (a ``RandomSampler`` using
      ``generator``); ``sampler``: your own order; ``batch_sampler``: your own
      lists of indices.
    - ``num_workers`` (0): worker processes; 0 loads in the main process.
    - ``collate_fn``: merges samples (default ``default_collate``).
    - ``pin_memory``: accepted; a no-op without a GPU (one note is printed).  ``pin_memory_device``
      is ignored with PyTorch's deprecation warning (it pins to the current accelerator, and there is none).
    - ``drop_last``: drop the last incomplete batch.
    - ``timeout`` (0): seconds to wait for a batch from the workers before a
      ``RuntimeError``; 0 waits forever.
    - ``worker_init_fn(worker_id)``: runs in each worker after seeding.
    - ``multiprocessing_context``: ``'fork'``, ``'spawn'``, ``'forkserver'`` or
      a context; default ``'fork'`` on Linux.
    - ``generator``: draws the shuffling order and the workers' base seed.
    - ``prefetch_factor`` (2 with workers): batches in flight per worker.
    - ``persistent_workers``: keep the workers (and their dataset copies) between epochs.
    - ``in_order`` (True): batches in sampler order; False: as workers finish them.
    """

    __initialized = False

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        # Dataset checks come before sampler checks: an IterableDataset has no use for a sampler.
        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            elif batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")

        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                                 "with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)

        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator

        if collate_fn is None:
            collate_fn = _utils.collate.default_collate if self._auto_collation else _utils.collate.default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers

        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    def _get_iterator(self) -> "_BaseDataLoaderIter":
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        if multiprocessing_context is not None:
            if self.num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid_start_methods = python_multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid_start_methods:
                        raise ValueError(
                            "multiprocessing_context option should specify a valid start method in "
                            f"{valid_start_methods!r}, but got multiprocessing_context={multiprocessing_context!r}")
                    multiprocessing_context = python_multiprocessing.get_context(multiprocessing_context)
                if not isinstance(multiprocessing_context, python_multiprocessing.context.BaseContext):
                    raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                    f"specifying the start method, but got "
                                    f"multiprocessing_context={multiprocessing_context}")
            else:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def __iter__(self) -> "_BaseDataLoaderIter":
        # Persistent workers: one multi-process iterator for the DataLoader's lifetime, reset each epoch.
        # One stopped by Ctrl-C is replaced; one whose worker died raises that failure again in _reset
        # (as in PyTorch, the loader does not start new workers; make a new DataLoader).
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or (self._iterator._shutdown and self._iterator._failure is None):
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        # what the iterator draws from: lists of indices when batching, single indices otherwise
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            # A guess from len(dataset): each worker may end with its own partial batch.
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn when asking for more workers than CPUs this process may use."""
        if not self.num_workers:
            return
        max_num_worker_suggest = _cpu_count()
        cpuset_checked = hasattr(os, "sched_getaffinity")
        if max_num_worker_suggest is None or self.num_workers > max_num_worker_suggest:
            if max_num_worker_suggest is not None:
                suggested = (f"Our suggested max number of worker in current system is {max_num_worker_suggest}"
                             f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is "
                             "smaller than what this DataLoader is going to create.")
            else:
                suggested = "DataLoader is not able to compute a suggested max number of worker in current system."
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {suggested} "
                          "Please be aware that excessive worker creation might get DataLoader running slow or "
                          "even freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                          stacklevel=2)


# ----------------------------------------------------------------------------- iterators

class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader):
        import course_lib

        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                          f"ignore pin_memory_device='{loader.pin_memory_device}'.", stacklevel=2)
        if loader.pin_memory:
            _utils.pin_memory.note_once()
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # One draw from the generator seeds the workers: base_seed + worker_id.
        self._base_seed = int(course_lib.empty((), dtype=course_lib.int64).random_(generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            warn_msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                        f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                        f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                warn_msg += ("For multiprocessing data-loading, this could be caused by not properly configuring "
                             "the IterableDataset replica at each worker. Please see "
                             "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for "
                             "examples.")
            warnings.warn(warn_msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Everything in the main process: next index, fetch, collate."""

    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        if self._num_workers != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires num_workers == 0")
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()                   # may raise StopIteration
        return self._dataset_fetcher.fetch(index)   # may raise StopIteration (IterableDataset)


_live_iterators: "weakref.WeakSet[_MultiProcessingDataLoaderIter]" = weakref.WeakSet()
_atexit_registered = [False]


def _shutdown_live_iterators() -> None:
    """At interpreter exit, before multiprocessing terminates daemonic workers: shut down politely."""
    for it in list(_live_iterators):
        it._shutdown_workers()


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Worker processes fed through per-worker index queues; results through one result queue.

    The bookkeeping (PyTorch's names):

    - ``_send_idx``: task number of the next index list to send;
    - ``_rcvd_idx``: task number of the next batch to hand out;
    - ``_task_info[task] = (worker_id,)`` while in flight, ``(worker_id, batch)``
      once it arrived early (out of order);
    - ``_tasks_outstanding``: tasks sent and not received, at most
      ``prefetch_factor * num_workers``;
    - ``_workers_status[w]``: False once worker ``w`` is stopped or exhausted;
    - ``_failure``: the message of the dead worker that stopped every worker, if one did.
    """

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._num_workers <= 0:
            raise AssertionError("num_workers must be greater than 0 for MultiProcessingDataLoaderIter")
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        self._shutdown = False
        self._failure: str | None = None
        self._workers = []
        self._index_queues = []
        ctx = loader.multiprocessing_context or _default_context()
        self._worker_init_fn = loader.worker_init_fn

        # Shared memory: a name prefix for this iterator's blocks, and the main process's side of them.
        self._shm_prefix = _shm.new_prefix() if get_sharing_strategy() == "shared_memory" else None
        self._blocks = _shm.BlockCache(keep_free=self._prefetch_factor + 1)
        self._returns = [([], []) for _ in range(self._num_workers)]
        if self._shm_prefix is not None:
            _shm.ensure_tracker_running()

        self._worker_result_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        for i in range(self._num_workers):
            index_queue = _utils.worker._IndexQueue(ctx)
            w = ctx.Process(
                target=_utils.worker._worker_loop,
                args=(self._dataset_kind, self._dataset, index_queue, self._worker_result_queue,
                      self._workers_done_event, self._auto_collation, self._collate_fn, self._drop_last,
                      self._base_seed, self._worker_init_fn, i, self._num_workers, self._persistent_workers,
                      self._shm_prefix),
                name=f"DataLoader worker {i}")
            w.daemon = True  # dies with the main process if nothing else stops it
            self._index_queues.append(index_queue)
            self._workers.append(w)
            w.start()
            index_queue.started()
        # (Windows pipes have no file descriptor to read piecewise: Queue.get there.)
        self._data_queue = (self._worker_result_queue if sys.platform == "win32"
                            else _utils.worker._ResultReader(self._worker_result_queue))

        if not _atexit_registered[0]:
            import atexit
            atexit.register(_shutdown_live_iterators)
            _atexit_registered[0] = True
        _live_iterators.add(self)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter: bool = False) -> None:
        if self._failure is not None:
            # A persistent iterator whose worker died: every later epoch says so (its workers are gone).
            raise RuntimeError(self._failure)
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True for _ in range(self._num_workers)]
        self._workers_num_tasks = [0 for _ in range(self._num_workers)]
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # Persistent workers, new epoch: tell every worker, and wait until each has answered.
            # Batches of the previous epoch still on their way are read and dropped here.
            # A worker that died between epochs is found here (its pipe is closed, or it never answers).
            self._raise_if_workers_died()
            for idx in range(self._num_workers):
                self._put_task(idx, _utils.worker._ResumeIteration())
            resume_iteration_cnt = self._num_workers
            while resume_iteration_cnt > 0:
                return_idx, return_data = self._get_data()
                if isinstance(return_idx, _utils.worker._ResumeIteration):
                    assert return_data is None
                    resume_iteration_cnt -= 1
        # prime the prefetch pipeline
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    # -- receiving -------------------------------------------------------------------
    def _try_get_data(self, timeout: float):
        """(True, (idx, data)) or (False, None) after ``timeout`` s; raises if a worker died."""
        try:
            idx, data = self._data_queue.get(timeout=timeout)
        except queue.Empty:
            pass
        except (EOFError, OSError) as e:  # a worker died while writing to the queue
            self._raise_if_workers_died(e)
            raise
        else:
            if isinstance(data, _shm.SharedBatch):
                data = self._blocks.loads(data)
            return True, (idx, data)
        self._raise_if_workers_died()
        return False, None

    def _raise_if_workers_died(self, cause: BaseException | None = None) -> None:
        """If a worker that should be running has died: stop all the others and raise its failure."""
        failed = [w for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
        if failed:
            error = workers_failure(failed)
            self._failure = str(error)
            self._shutdown_workers()
            raise error from cause

    def _put_task(self, worker_id: int, task) -> None:
        """Send ``task`` to worker ``worker_id``; a closed pipe means the worker died: raise its failure."""
        try:
            self._index_queues[worker_id].put(task)
        except OSError as e:
            # The kernel closes a dead process's pipes a moment before it can be reaped: wait for it.
            self._workers[worker_id].join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
            self._raise_if_workers_died(e)
            raise

    def _get_data(self):
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _utils.WORKER_STATUS_CHECK_INTERVAL
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
                wait = min(wait, remaining)
            success, data = self._try_get_data(wait)
            if success:
                return data

    def __next__(self):
        try:
            return super().__next__()
        except KeyboardInterrupt:
            # Interrupted while waiting (Ctrl-C, or Jupyter's stop button): stop the workers now.
            self._shutdown_workers()
            raise

    def _next_data(self):
        if self._shutdown:
            raise StopIteration  # stopped early (a dead worker, KeyboardInterrupt): nothing more will come
        while True:
            # Skip tasks whose worker is gone (an exhausted IterableDataset worker) and that have no data.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx, None)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:  # has data or is still active
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                # nothing in flight: the epoch is over
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            # The next batch in order already arrived: hand it out.
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            assert not self._shutdown and self._tasks_outstanding > 0
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable:
                if isinstance(data, _utils.worker._IterableDatasetStopIteration):
                    if self._persistent_workers:
                        self._workers_status[data.worker_id] = False
                    else:
                        self._mark_worker_as_unavailable(data.worker_id)
                    self._try_put_index()
                    continue

            if idx != self._rcvd_idx:
                if not self._in_order:
                    # out of order is fine: hand it out now
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                # early: keep it until its turn
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    # -- sending ---------------------------------------------------------------------
    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        assert self._tasks_outstanding < max_tasks
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # find the next active worker, if any
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order:
                    break
                elif self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(self._workers_status):
                    # out of order: don't pile tasks onto a slow worker
                    break
        else:
            # no active worker (e.g. every IterableDataset replica is exhausted)
            return
        self._put_task(worker_queue_idx, (self._send_idx, index, self._take_returns(worker_queue_idx)))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _take_returns(self, worker_id: int) -> tuple:
        """Shared-memory blocks this worker may refill (or must drop), sent along with its next task."""
        for w, (reuse, drop) in enumerate(self._blocks.collect_returns(self._num_workers)):
            self._returns[w][0].extend(reuse)
            self._returns[w][1].extend(drop)
        reuse, drop = self._returns[worker_id]
        self._returns[worker_id] = ([], [])
        return tuple(reuse), tuple(drop)

    def _process_data(self, data, worker_idx: int):
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    # -- shutting down -----------------------------------------------------------------
    def _mark_worker_as_unavailable(self, worker_id: int, shutdown: bool = False) -> None:
        # Tell the worker to stop.  It exits after the tasks it already has; we don't wait here.
        try:
            self._index_queues[worker_id].put(None)
        except OSError:  # the worker is already gone (its end of the pipe is closed)
            pass
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        """Stop every worker: ask, wait a little, then terminate.  Safe to call more than once.

        Runs at the end of an epoch, on ``break`` (when the iterator is garbage
        collected), on a dead worker, on KeyboardInterrupt, and at interpreter
        exit.  Afterwards no worker process is left and no block of this
        iterator is left in ``/dev/shm``.
        """
        if getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        _live_iterators.discard(self)
        try:
            self._workers_done_event.set()
            if not hasattr(self, "_workers_status"):  # a worker failed to start: tell every started one
                self._workers_status = [w.pid is not None for w in self._workers]
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id, shutdown=True)
            for w in self._workers:
                if w.pid is not None:
                    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
            for q in self._index_queues:
                q.close()
        finally:
            for w in self._workers:
                if w.pid is not None and w.is_alive():
                    w.terminate()
                    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
            self._worker_result_queue.close()
            if self._shm_prefix is not None:
                _shm.sweep(self._shm_prefix)   # blocks made by workers but never received
            self._blocks.close()

    def __del__(self):
        self._shutdown_workers()
