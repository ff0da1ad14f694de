# ---
# jupyter:
#   course:
#     title: Data loading
# ---

# %% [markdown] id="intro"
# # 06 · Data loading
#
# A training loop asks for one thing, over and over: *the next batch*. Behind that one `for batch in loader:`
# sits a small machine: a **dataset** that knows how to produce sample `i`, a **sampler** that decides the
# order of the `i`, a **batch sampler** that groups them, a **collate** function that merges samples into
# tensors, and, when loading is slow, **worker processes** that prepare batches ahead of time and hand them to
# the training loop through **shared memory**. This chapter takes that machine apart.
#
# **What you will build** (each checked against `course_lib.utils.data`, which follows
# `torch.utils.data`):
#
# - a `BatchSampler`, which turns a stream of indices into lists of indices;
# - `collate`, PyTorch's rules for merging samples (numbers, arrays, tensors, dicts, tuples) into a batch;
# - the single-process iterator: from the next index to the next batch;
# - the loop every worker process runs, errors included;
# - the in-order reassembly of batches that workers finish out of order;
# - the main process's side of the multi-process loader, run with your worker loop in real processes;
# - the constructor's rules: which arguments exclude each other, and the samplers it makes when you give none;
# - the thread that pins batches for a GPU.
#
# Then you will *measure* the real multi-process `DataLoader`: what workers buy and cost, the prefetch
# pipeline drawn as a timeline from a real run, shared memory against pickling, and the classic bug that
# gives every worker the same "random" augmentations; and what pinned memory costs and buys.
#
# *Prerequisites:* chapter 01 (tensors, storage); Python iterators and generators (`yield`); a first idea of
# processes. *Expected time:* 3 hours.

# %% id="setup"
import collections
import time

import matplotlib.pyplot as plt
import numpy as np

import course_lib as cl
from course import check
from course_lib.datasets import transforms as T
from course_lib.datasets.synthetic import SyntheticImages
from course_lib.utils import data
from course_lib.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

# %% [markdown] id="datasets-md"
# ## 1 · Datasets: map-style and iterable
#
# A **map-style** dataset answers two questions: `len(ds)` and `ds[i]` for `0 <= i < len(ds)`. Anything with
# `__len__` and `__getitem__` will do; subclassing `Dataset` only adds `ds1 + ds2` (a `ConcatDataset`). The
# samples are produced *when asked*, so a dataset of a million images can be a few lines of code and no
# memory: `SyntheticImages` draws image `i` from a generator seeded with `(seed, i)`, the same picture in every
# process and every run. Each sample is `(image, label)`, the image a `uint8` array of shape
# `(height, width, channels)`, as an image file decodes.

# %% id="datasets-demo"
images = SyntheticImages(1000, size=32, num_classes=10, seed=0)
img, label = images[7]
print(f"len(images) = {len(images)}; images[7] = (array {img.shape} {img.dtype}, label {label})")

fig, axes = plt.subplots(1, 8, figsize=(10, 1.7))
for i, ax in enumerate(axes):
    img, label = images[i]
    ax.imshow(img)
    ax.set_title(f"#{i}: class {label}", fontsize=9)
    ax.axis("off")
plt.show()

# %% [markdown] id="datasets-more-md"
# The building blocks combine: `TensorDataset` serves rows of tensors, `ConcatDataset` puts datasets end to
# end, `Subset` picks indices, and `random_split` cuts a dataset into random non-overlapping subsets from a
# seeded generator (the same split every run).
#
# An **iterable** dataset is a stream instead: it defines `__iter__`, and the samples come in the stream's
# own order. No `len` is needed and no random access: reading lines of a huge file, records from a database,
# frames from a camera.

# %% id="datasets-more-demo"
xs = cl.arange(12.).view(6, 2)
pairs = data.TensorDataset(xs, cl.arange(6) % 2)
print("TensorDataset[4] =", pairs[4])

both = data.ConcatDataset([data.Subset(images, [5, 9]), pairs])
print("len(ConcatDataset) =", len(both), "; item 2 comes from the second dataset:", both[2])

train, val = data.random_split(images, [0.8, 0.2], generator=cl.Generator().manual_seed(0))
print("random_split:", len(train), len(val), "; first validation indices:", val.indices[:5])


class Countdown(IterableDataset):
    def __init__(self, start):
        self.start = start

    def __iter__(self):
        return iter(range(self.start, 0, -1))


print("an IterableDataset:", list(Countdown(5)))

# %% [markdown] id="samplers-md"
# > **In PyTorch:** `torch/utils/data/dataset.py` holds `Dataset`, `IterableDataset`, `TensorDataset`,
# > `ConcatDataset` (a binary search over cumulative sizes), `Subset` and `random_split`. course_lib's
# > `course_lib/utils/data/dataset.py` follows it line by line. `torchvision/datasets/` adds real datasets;
# > `course_lib.datasets` has procedural ones and an MNIST reader for the IDX files.
#
# ## 2 · Samplers and batch samplers
#
# For a map-style dataset, the `DataLoader` never decides the order itself: it asks a **sampler**, an iterable
# of indices. `SequentialSampler` gives `0, 1, 2, ...`; `RandomSampler` gives a fresh permutation each time it
# is iterated (each epoch), drawn from a `Generator`, so a seeded generator replays the same epochs. Then a
# **batch sampler** groups the indices into lists, one list per batch. `DataLoader(ds, batch_size=4,
# shuffle=True)` builds exactly these two objects: look at `loader.sampler` and `loader.batch_sampler`.

# %% id="samplers-demo"
ten = range(10)
print("SequentialSampler:      ", list(data.SequentialSampler(ten)))
shuffler = data.RandomSampler(ten, generator=cl.Generator().manual_seed(0))
print("RandomSampler, epoch 1: ", list(shuffler))
print("RandomSampler, epoch 2: ", list(shuffler))
print("BatchSampler(size 4):   ", list(data.BatchSampler(data.SequentialSampler(ten), 4, drop_last=False)))
print("...with drop_last=True: ", list(data.BatchSampler(data.SequentialSampler(ten), 4, drop_last=True)))

loader = DataLoader(images, batch_size=4, shuffle=True)
print(type(loader.sampler).__name__, type(loader.batch_sampler).__name__, "len(loader) =", len(loader))


# %% [markdown] id="ex-06-1-task"
# ## Exercise 06.1 · BatchSampler (1 point)
#
# Write the class `BatchSampler(sampler, batch_size, drop_last)`:
#
# - iterating it yields **lists** of indices taken from `iter(sampler)` in order, `batch_size` at a time;
# - the last, shorter list is yielded too, unless `drop_last` is true (and an empty list is never yielded);
# - it can be iterated again (each `iter()` starts a new pass over `sampler`);
# - `len()` is the number of batches: `len(sampler) / batch_size`, rounded up, or down with `drop_last`.
#
# `sampler` can be any iterable of indices with a `len` (a range, a list, a `RandomSampler`). The constructor
# is given; write `__iter__` (a generator: use `yield`) and `__len__`.
#
# *Hint:* keep a list, append each index, yield and start a new list when it is full.

# %% id="ex-06-1-solution" tags=["solution"] exercise="06.1"
class BatchSampler:
    """Group the indices of `sampler` into lists of `batch_size` (the last one shorter unless drop_last)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        ### BEGIN SOLUTION
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch
        ### END SOLUTION

    def __len__(self) -> int:
        ### BEGIN SOLUTION
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
        ### END SOLUTION


# %% id="ex-06-1-check" tags=["check", "nbval-check-output"] exercise="06.1" points=1
check("06.1", BatchSampler)

# %% [markdown] id="collate-md"
# > **In PyTorch:** `torch/utils/data/sampler.py`. Its `BatchSampler.__iter__` has a second, faster branch for
# > `drop_last=True`: `zip(*[iter(sampler)] * batch_size)` pulls `batch_size` items from *one* iterator per
# > tuple and stops at the first incomplete one.
#
# ## 3 · Collate: from a list of samples to a batch
#
# The batch sampler gives `[3, 7, 1, 4]`; the fetcher reads `[ds[3], ds[7], ds[1], ds[4]]`, a list of
# samples. `collate_fn` turns that list into the batch, and the default, `default_collate`, decides by the
# type of the **first** sample:
#
# | each sample is | the batch is |
# |---|---|
# | a tensor | `stack(samples)`: a new leading dimension of size batch |
# | a numpy array | the arrays as tensors, stacked (dtype kept) |
# | a `float` | a **float64** tensor (not the default float32!) |
# | an `int` / a `bool` | an int64 / bool tensor |
# | a `str` | the samples, unchanged |
# | a `dict` | a dict: each key collated over the samples |
# | a namedtuple | the same namedtuple type, each field collated |
# | a tuple or list | **transposed**: a list with one collated entry per position |
#
# The last rule is what turns a list of `(image, label)` pairs into `[images, labels]`. The rules apply
# recursively, so nested structures come out with the same nesting and tensors at the leaves.

# %% id="collate-demo"
samples = [images[i] for i in range(4)]
batch = data.default_collate(samples)
print(type(batch).__name__, "of", [f"{type(b).__name__} {tuple(b.shape)} {b.dtype}" for b in batch])
print(data.default_collate([1.0, 2.5]), data.default_collate([{"x": 1, "tag": "a"}, {"x": 2, "tag": "b"}]))
print(data.default_collate([(1, "a", 2.0), (3, "b", 4.0)]))
try:
    data.default_collate([np.zeros(2), np.zeros(3)])
except RuntimeError as e:
    print("ragged samples:", e)

# %% [markdown] id="ex-06-2-task"
# ## Exercise 06.2 · collate (2 points)
#
# Write `collate(batch)` for a non-empty list of samples, following the table above:
#
# - a tensor first sample: `course_lib.stack(batch)`; numpy arrays: stack `course_lib.as_tensor` of each;
# - `float`: `course_lib.tensor(batch, dtype=course_lib.float64)`; `int` (which includes `bool`):
#   `course_lib.tensor(batch)`; `str`: `batch` itself, unchanged;
# - a mapping (`dict`): a dict with each key collated over the samples;
# - a namedtuple (a `tuple` with a `_fields` attribute): the same type, built from the collated fields;
# - another tuple or list: a `list` with, for each position, the collated tuple of that position's values
#   (`zip(*batch)` transposes; pass its tuples on as they are);
# - anything else: raise `TypeError`.
#
# Order matters: a namedtuple is also a tuple, and a `bool` is also an `int`.

# %% id="ex-06-2-solution" tags=["solution"] exercise="06.2"
import collections.abc

import numpy as np

import course_lib as cl


def collate(batch):
    """Merge a list of samples into a batch, by the type of the first sample."""
    ### BEGIN SOLUTION
    elem = batch[0]
    if isinstance(elem, cl.Tensor):
        return cl.stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        return cl.stack([cl.as_tensor(b) for b in batch], 0)
    if isinstance(elem, float):
        return cl.tensor(batch, dtype=cl.float64)
    if isinstance(elem, int):  # bool too
        return cl.tensor(batch)
    if isinstance(elem, str):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return {key: collate([sample[key] for sample in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(collate(values) for values in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        return [collate(values) for values in zip(*batch)]
    raise TypeError(f"collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {type(elem)}")
    ### END SOLUTION


# %% id="ex-06-2-check" tags=["check", "nbval-check-output"] exercise="06.2" points=2
check("06.2", collate)


# %% [markdown] id="single-md"
# > **In PyTorch:** `torch/utils/data/_utils/collate.py`. `default_collate` is `collate` with a registry,
# > `default_collate_fn_map`, from leaf types to functions: add your own type there instead of rewriting the
# > whole function. Inside a worker process its tensor rule allocates the stacked batch directly in shared
# > memory, which matters in section 9.
#
# ## 4 · Follow one index: the single-process iterator
#
# With `num_workers=0` (the default) everything happens in the training loop's own process, one batch per
# `next()`:
#
# ```
# batch_sampler ──> [3, 7, 1, 4] ──> [ds[3], ds[7], ds[1], ds[4]] ──> collate_fn ──> batch
# ```
#
# With `batch_size=None` batching is off: the loader iterates `loader.sampler` (single indices), and
# `collate_fn` (then `default_convert`, which only turns numpy arrays into tensors) gets one sample at a time.
# The loader says which case it is in: `loader.batch_sampler` is `None` when batching is off.

# %% [markdown] id="ex-06-3-task"
# ## Exercise 06.3 · SingleProcessIter (1 point)
#
# Write the iterator that `iter(DataLoader(..., num_workers=0))` returns. `SingleProcessIter(loader)` takes a
# `DataLoader` and must produce exactly the batches that `list(loader)` gives:
#
# - `__init__`: keep `loader.dataset` and `loader.collate_fn`, and start an iterator over
#   `loader.batch_sampler`, or over `loader.sampler` when `loader.batch_sampler` is `None`;
# - `__next__`: take the next index (or list of indices), fetch the sample(s), return `collate_fn` of
#   them: `collate_fn([dataset[i] for i in indices])` when batching, `collate_fn(dataset[index])` when not.
#   When the indices run out, `next()` raises `StopIteration`: let it through, it ends the `for` loop.
# - `__iter__` returns `self` (given).
#
# *Hint:* iterate the batch sampler only once, in `__init__`: calling `iter()` on a `RandomSampler` again
# would start a new permutation.

# %% id="ex-06-3-solution" tags=["solution"] exercise="06.3"
class SingleProcessIter:
    """The batches of `loader`, loaded in this process (like DataLoader with num_workers=0)."""

    def __init__(self, loader):
        ### BEGIN SOLUTION
        self.dataset = loader.dataset
        self.collate_fn = loader.collate_fn
        self.auto_collation = loader.batch_sampler is not None
        self.indices = iter(loader.batch_sampler if self.auto_collation else loader.sampler)
        ### END SOLUTION

    def __iter__(self):
        return self

    def __next__(self):
        ### BEGIN SOLUTION
        index = next(self.indices)  # StopIteration ends the loop
        if self.auto_collation:
            return self.collate_fn([self.dataset[i] for i in index])
        return self.collate_fn(self.dataset[index])
        ### END SOLUTION


# %% id="ex-06-3-check" tags=["check", "nbval-check-output"] exercise="06.3" points=1
check("06.3", SingleProcessIter)

# %% [markdown] id="workers-md"
# > **In PyTorch:** `_SingleProcessDataLoaderIter` in `torch/utils/data/dataloader.py`, with the fetching in
# > `torch/utils/data/_utils/fetch.py` (`_MapDatasetFetcher`; `_IterableDatasetFetcher` pulls `batch_size`
# > items from the stream instead). A dataset may also define `__getitems__(indices)` to fetch a whole batch at
# > once, which the fetcher prefers.
#
# ## 5 · Why worker processes, and what they cost
#
# Real samples are expensive: decode a JPEG, crop, flip, normalize. Done in the training loop, that time adds
# to every step. `num_workers=N` starts `N` processes that load batches *while the training loop computes*.
# Why processes, not threads? Python code runs one thread at a time (the GIL). Threads do run in parallel
# while they are inside C code that releases the GIL: numpy working on large arrays, reading files, decoding
# images in libraries that release it. But a dataset's `__getitem__` is mostly Python around such calls, and
# in threads those Python parts would take turns. Each worker process has its own interpreter and its own
# GIL, so all of its work runs in parallel with the training loop, at the costs listed below.
#
# The next cell makes each sample cost about 2 ms of numpy work (`work=15` smoothing passes) and times one
# epoch with 0, 1 and 2 workers. On a machine with two or more free cores, 2 workers should come close to
# twice as fast as none; the first batch, though, arrives later, because the workers have to start first.

# %% id="workers-demo" grader_runs="epoch = None  # `course grade` skips the measurement"
busy = SyntheticImages(192, size=32, seed=0, work=15)


def epoch(loader):
    # (seconds for the whole epoch, seconds until the first batch)
    start = time.perf_counter()
    first = None
    for _ in loader:
        if first is None:
            first = time.perf_counter() - start
    return time.perf_counter() - start, first


results = {n: epoch(DataLoader(busy, batch_size=16, num_workers=n)) for n in (0, 1, 2)}
for n, (total, first) in results.items():
    print(f"num_workers={n}: {len(busy) / total:6.0f} samples/s   first batch after {first * 1e3:5.1f} ms")

fig, ax = plt.subplots(figsize=(5, 1.8))
ax.barh([f"num_workers={n}" for n in results], [len(busy) / t for t, _ in results.values()], color="#2b8cbe")
ax.set_xlabel("samples per second (higher is better)")
plt.show()

# %% [markdown] id="workers-cost-md"
# What a worker costs:
#
# - **start-up**: a process per worker, every epoch unless `persistent_workers=True` keeps them. On Linux
#   course_lib starts them with `fork`: the child is a copy-on-write copy of the parent, dataset included, so
#   it starts in milliseconds. With `multiprocessing_context="spawn"` (the default on macOS and Windows) each
#   worker starts a fresh Python, imports everything again and receives the dataset pickled, which takes a
#   second or more, and everything it needs must be importable: classes defined in a notebook cell are not;
# - **memory**: each worker has its own copy of the dataset object (and of whatever it caches);
# - **a trip between processes** for every batch (section 9).
#
# So use workers when loading a batch costs more than sending it: decoding and augmenting, yes; slicing an
# in-memory tensor, no.

# %% [markdown] id="protocol-md"
# ## 6 · Inside the multi-process loader
#
# The main process keeps workers busy through queues:
#
# ```
#                   index queue 0 ──> worker 0 ──┐
# main process ──>  index queue 1 ──> worker 1 ──┼──> result queue ──> main process ──> your loop
#  (round-robin)         ...                     ┘     (task id, batch)    (back in order)
# ```
#
# - Each task gets a number. The main process sends `(task id, indices)` to the workers in turn and keeps
#   `prefetch_factor * num_workers` tasks in flight (2 x 2 = 4 by default with 2 workers): enough to hide
#   loading time, not so many that memory fills up with batches nobody asked for yet.
# - A worker loops: take a task, load and collate, put `(task id, batch)` on the one shared result queue.
# - An exception in a worker does not kill it: it is caught, wrapped with its traceback, sent like a batch and
#   re-raised in the main process when that batch's turn comes, as
#   `ValueError: Caught ValueError in DataLoader worker process 0.` followed by the original traceback.
# - A worker that *dies* (killed by the out-of-memory killer, a crash in C code) is noticed while the main
#   process waits: `RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.`
#   With `persistent_workers=True` the loader then stays failed, as in PyTorch: the other workers are stopped
#   at once and every later epoch raises the same error; make a new DataLoader to start again.
# - At the end of the epoch, on `break`, on an error or when the iterator is garbage collected, the main
#   process sends each worker `None`, waits briefly, and terminates any that do not stop.
#
# Peek at the bookkeeping of a real iterator: right after it starts, four tasks are in flight.

# %% id="protocol-demo"
it = iter(DataLoader(images, batch_size=8, num_workers=2))
print("tasks sent:", it._send_idx, "| in flight:", it._tasks_outstanding, "| worker of each task:",
      {task: info[0] for task, info in it._task_info.items()})
first = next(it)
print("after one next(): sent", it._send_idx, "| next task to hand out:", it._rcvd_idx)
print("workers:", [f"pid {w.pid}" for w in it._workers])
del it, first  # the iterator stops its workers when it is garbage collected

# %% [markdown] id="ex-06-4-task"
# ## Exercise 06.4 · worker_loop (2 points)
#
# Write the loop a worker process runs, `worker_loop(dataset, index_queue, result_queue, collate_fn,
# worker_id)`:
#
# - take tasks with `index_queue.get()`, one at a time, in order;
# - a task `None` means stop: return (and put nothing);
# - a task `(task_id, indices)`: put `(task_id, collate_fn([dataset[i] for i in indices]))` on
#   `result_queue` with `result_queue.put(...)`, then take the next task;
# - if loading or collating raises an `Exception`, put `(task_id, ExceptionWrapper(where=f"in DataLoader
#   worker process {worker_id}"))` instead and carry on with the next task. `ExceptionWrapper()` must be
#   created inside the `except` block: it reads the exception being handled and formats its traceback.
#
# The check runs your function in this process, with queue objects that hold a prepared list of tasks.
#
# *Hint:* a `while True:` loop around a `try`/`except Exception:`.

# %% id="ex-06-4-solution" tags=["solution"] exercise="06.4"
from course_lib.utils.data._utils import ExceptionWrapper


def worker_loop(dataset, index_queue, result_queue, collate_fn, worker_id: int) -> None:
    """Load the batches asked for on index_queue, put them on result_queue, until None."""
    ### BEGIN SOLUTION
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
    ### END SOLUTION


# %% id="ex-06-4-check" tags=["check", "nbval-check-output"] exercise="06.4" points=2
check("06.4", worker_loop)


# %% [markdown] id="order-md"
# > **In PyTorch:** `_worker_loop` in `torch/utils/data/_utils/worker.py`. Before its loop it seeds the
# > random number generators (section 10), sets `get_worker_info()` and calls `worker_init_fn`; while idle it
# > checks every few seconds that the main process is still alive, so a worker never outlives it. The wrapper
# > is `ExceptionWrapper` in `torch/_utils.py`. Dead workers are reported by a SIGCHLD handler
# > (`torch/utils/data/_utils/signal_handling.py`, `torch/csrc/DataLoader.cpp`); course_lib checks each
# > worker's exit code while it waits (`course_lib/utils/data/_utils/signal_handling.py`).
#
# ## 7 · Back in order
#
# Workers finish in any order: a slow sample holds up only its own batch. The main process remembers which
# task it must hand out next; a batch that arrives early waits in a dictionary until its turn. With
# `in_order=False` the loader skips that and yields batches as they come, which keeps the training loop busy
# when some samples are slow, at the price of an order that changes from run to run.

# %% id="order-demo"
class SlowStart(Dataset):
    # sample 0 takes 0.3 s, the others are instant
    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 0:
            time.sleep(0.3)
        return i


for ordered in (True, False):  # (not `in_order`: that name is your function of exercise 06.5)
    loader = DataLoader(SlowStart(), batch_size=2, num_workers=2, in_order=ordered)
    print(f"in_order={ordered!s:5}:", [b.tolist() for b in loader])


# %% [markdown] id="ex-06-5-task"
# ## Exercise 06.5 · in_order (2 points)
#
# Write the generator `in_order(arrivals)`. `arrivals` is an iterator of `(task_id, batch)` pairs in the order
# workers finished them; the task ids are `0, 1, 2, ...`, each exactly once, in any order. Yield the
# **batches** in task order, and each one **as early as possible**: as soon as task `k` and everything before
# it have arrived, yield it, before reading another arrival. Keep the early arrivals in a dictionary.
#
# The check counts how many arrivals you had read each time you yield a batch: reading ahead, even by one,
# makes the training loop wait for nothing.

# %% id="ex-06-5-solution" tags=["solution"] exercise="06.5"
def in_order(arrivals):
    """Yield the batches of (task_id, batch) arrivals in task order, each as soon as possible."""
    ### BEGIN SOLUTION
    waiting, next_id = {}, 0
    for task_id, batch in arrivals:
        waiting[task_id] = batch
        while next_id in waiting:
            yield waiting.pop(next_id)
            next_id += 1
    ### END SOLUTION


# %% id="ex-06-5-check" tags=["check", "nbval-check-output"] exercise="06.5" points=2
check("06.5", in_order)


# %% [markdown] id="ex-06-6-task"
# ## Exercise 06.6 · Your loader, in real processes (3 points)
#
# Your `worker_loop` and `in_order` were checked in this process, with pretend queues. Now put them to work:
# write the main process's side of the multi-process loader, as a generator
# `load_with_workers(dataset, batches, collate_fn, num_workers, ctx, prefetch_factor=2, timeout=5.0)` that
# yields the batches of `batches` (a list of index lists: task `k` is `batches[k]`) in order, loaded by
# `num_workers` processes, each running **your** `worker_loop` from 06.4:
#
# 1. make one index queue per worker and one result queue with `ctx.Queue()`, and the workers with
#    `ctx.Process(target=worker_loop, args=(dataset, index_queue, result_queue, collate_fn, worker_id),
#    daemon=True)`; start them. `ctx` is a multiprocessing context (the check's, watched; in the demo below,
#    `multiprocessing.get_context("fork")`): use only its `Queue` and `Process`;
# 2. send `(task_id, indices)` round-robin (task `k` to worker `k % num_workers`), at first
#    `prefetch_factor * num_workers` tasks, then one more each time a batch is handed out, so that at most
#    that many are in flight;
# 3. read `(task_id, batch)` pairs with `result_queue.get(timeout=timeout)` and put them in order with your
#    `in_order` from 06.5; if nothing arrives in time (`queue.Empty`), raise
#    `RuntimeError(f"DataLoader timed out after {timeout} seconds")`, as PyTorch does;
# 4. a batch that is an `ExceptionWrapper` is re-raised with its `reraise()` method when its turn comes;
# 5. whatever happens (the last batch, an error, a loop that stops early), end with `None` on every index
#    queue and `join()` every worker: a `try`/`finally` around the loop.
#
# The check runs your function with several datasets, slow samples (so that batches arrive out of order),
# a failing sample and a small prefetch window, and compares the batches with those of course_lib's
# `DataLoader(dataset, batch_sampler=batches, num_workers=...)`. It also counts the workers started, the
# tasks sent, how many were in flight at most, the `None`s, the workers your function joined before it
# returned, and the workers still running at the end. A
# loader that waits for a batch that never comes, or for a worker that never stops, is stopped after a few
# seconds and fails. Do not hand the work to `DataLoader` (or to another multiprocessing context): the check
# sees only what goes through its `ctx`.
#
# *Hint:* keep a counter of tasks sent; `in_order` needs an iterator of arrivals: a small generator that
# calls `result_queue.get` once per task sent and not yet received.

# %% id="ex-06-6-solution" tags=["solution"] exercise="06.6"
import queue

from course_lib.utils.data._utils import ExceptionWrapper


def load_with_workers(dataset, batches, collate_fn, num_workers: int, ctx, prefetch_factor: int = 2,
                      timeout: float = 5.0):
    """Yield the batches of `batches` (lists of indices), in order, loaded by worker processes."""
    ### BEGIN SOLUTION
    index_queues = [ctx.Queue() for _ in range(num_workers)]
    result_queue = ctx.Queue()
    workers = [ctx.Process(target=worker_loop, args=(dataset, index_queues[w], result_queue, collate_fn, w),
                           daemon=True) for w in range(num_workers)]
    for w in workers:
        w.start()
    tasks = iter(enumerate(batches))
    sent = 0

    def send_next():
        nonlocal sent
        task = next(tasks, None)
        if task is not None:
            index_queues[task[0] % num_workers].put(task)
            sent += 1

    def arrivals():
        received = 0
        while received < sent:
            try:
                yield result_queue.get(timeout=timeout)
            except queue.Empty:
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
            received += 1

    try:
        for _ in range(prefetch_factor * num_workers):
            send_next()
        for batch in in_order(arrivals()):
            send_next()  # a batch leaves: one more task may go out
            if isinstance(batch, ExceptionWrapper):
                batch.reraise()
            yield batch
    finally:
        for q in index_queues:
            q.put(None)
        for w in workers:
            w.join()
    ### END SOLUTION


# %% id="ex-06-6-check" tags=["check", "nbval-check-output"] exercise="06.6" points=3
check("06.6", load_with_workers)

# %% [markdown] id="ex-06-6-demo-md"
# Your loader against the library's, on the slow-start dataset of the demo above: the same batches, in the
# same order.

# %% id="ex-06-6-demo" grader_runs="pass"
import multiprocessing

fork = multiprocessing.get_context("fork")
pairs = [[2 * k, 2 * k + 1] for k in range(6)]
library = [b.tolist() for b in DataLoader(SlowStart(), batch_sampler=pairs, num_workers=2)]
print("DataLoader:       ", library)
try:
    mine = [b.tolist() for b in load_with_workers(SlowStart(), pairs, data.default_collate, 2, fork)]
    print("load_with_workers:", mine, "same:", mine == library)
except NotImplementedError:
    print("load_with_workers: finish exercise 06.6 first")
except RuntimeError as e:
    print("load_with_workers: not working yet:", type(e).__name__, e)


# %% [markdown] id="timeline-md"
# > **In PyTorch:** `_MultiProcessingDataLoaderIter._next_data` in `torch/utils/data/dataloader.py`: the
# > dictionary is `_task_info`, the counter `_rcvd_idx`. Each batch handed out frees a slot, and
# > `_try_put_index` sends the next task right away, to the next worker in turn.
#
# ## 8 · The prefetch pipeline, drawn from a real run
#
# The next cell wraps each sample so that it records *which worker loaded it and when*, runs an epoch with 2
# workers and a pretend training step of 30 ms per batch, and draws the timeline: one row per worker (a bar
# per batch it loaded) and one for the training loop (a bar per step, and the time it spent waiting for a
# batch in red). On an idle machine a batch takes a worker about 32 ms (16 samples, 2 ms each), so two
# workers deliver a batch every 16 ms or so, faster than the loop consumes them: they get ahead until
# `prefetch_factor * num_workers` batches are waiting, then pause (the pipeline is full), and only the first
# batch makes the loop wait. On a busy machine loading takes longer and red bars appear between steps: the
# loop is waiting for data, the situation where more workers (or cheaper samples) help.

# %% id="timeline" grader_runs="print('`course grade` skips the figure')"
class Timed(Dataset):
    # each sample also reports (worker id, start time, end time)
    def __init__(self, base):
        self.base = base

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        start = time.perf_counter()
        image, label = self.base[i]
        info = get_worker_info()
        return image, label, (info.id if info else -1), start, time.perf_counter()


loader = DataLoader(Timed(SyntheticImages(16 * 12, size=32, seed=1, work=15)), batch_size=16, num_workers=2)
t0 = time.perf_counter()
loads, steps = [], []
wait_start = time.perf_counter()
for k, (images_batch, labels, worker, start, end) in enumerate(loader):
    got = time.perf_counter()
    loads.append((int(worker[0]), start.min().item() - t0, end.max().item() - t0, k))
    time.sleep(0.03)  # the "training step"
    steps.append((wait_start - t0, got - t0, time.perf_counter() - t0, k))
    wait_start = time.perf_counter()

fig, ax = plt.subplots(figsize=(10, 2.4))
for worker, start, end, k in loads:
    ax.broken_barh([(start * 1e3, (end - start) * 1e3)], (2 - worker - 0.35, 0.7), color="#2b8cbe")
    ax.text((start + end) / 2 * 1e3, 2 - worker, str(k), ha="center", va="center", color="white", fontsize=8)
for waited, got, done, k in steps:
    ax.broken_barh([(waited * 1e3, (got - waited) * 1e3)], (-0.35, 0.7), color="#e34a33")
    ax.broken_barh([(got * 1e3, (done - got) * 1e3)], (-0.35, 0.7), color="#31a354")
    ax.text((got + done) / 2 * 1e3, 0, str(k), ha="center", va="center", color="white", fontsize=8)
ax.set_yticks([0, 1, 2], ["training loop", "worker 1", "worker 0"])
ax.set_xlabel("milliseconds since the loader started (blue: loading batch k; green: step k; red: waiting)")
plt.show()


# %% [markdown] id="shm-md"
# Things to try: make the training step shorter than a batch's loading time (`time.sleep(0.005)`), and the
# red bars appear: the loop now waits for data and more workers would help. Set `prefetch_factor=1` and the
# workers pause sooner. Add `persistent_workers=True` and run two epochs: the second one starts without the
# start-up gap.
#
# ## 9 · Shared memory against pickling
#
# A worker's batch must reach the main process. The obvious way is to **pickle** it: turn every tensor into
# bytes, push the bytes through a pipe, and rebuild the tensors on the other side. For a batch of 64 images
# of 3 x 128 x 128 floats that is 12.6 MB copied three times (into the pickle, through the pipe, out of it).
#
# **Shared memory** avoids the copies. In a worker, `default_collate` stacks the batch directly into a
# *shared-memory block*, memory that both processes can map. Only the block's name and the tensor's
# `(dtype, offset, shape, stride)` go through the pipe: a few hundred bytes. The main process maps the block
# and wraps it as the tensor's storage, with no copy. When the last tensor (or numpy view) of that storage
# dies, the block goes back to its worker, which fills it with a later batch.

# %% id="shm-demo" grader_runs="print('`course grade` skips the measurement')"
class Frames(Dataset):
    # cheap samples, so that the trip between processes is what we measure
    def __init__(self, n, shape=(3, 64, 64)):
        self.frame = np.ones(shape, np.float32)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.frame * i


frames = Frames(64 * 16)
batch_mb = 64 * frames.frame.nbytes / 2 ** 20
per_batch = {}
for strategy in ("pickle", "shared_memory"):
    data.set_sharing_strategy(strategy)
    try:
        loader = DataLoader(frames, batch_size=64, num_workers=1)
        total, _ = epoch(loader)
    finally:
        data.set_sharing_strategy("shared_memory")
    per_batch[strategy] = total / len(loader)
    print(f"{strategy:13}: {per_batch[strategy] * 1e3:6.1f} ms per batch of {batch_mb:.1f} MB")
print(f"shared memory is {per_batch['pickle'] / per_batch['shared_memory']:.1f}x faster here")

batch = next(iter(DataLoader(frames, batch_size=64, num_workers=1)))
print("the batch's storage lives in", type(batch._storage._owner).__name__, batch._storage._owner.name)


# %% [markdown] id="seed-md"
# Freeing the blocks is the delicate part. course_lib unlinks a block's *name* as soon as the main process
# has mapped it: from then on the memory belongs to the two mappings and disappears with them, whatever
# happens to either process, and nothing is left behind in `/dev/shm`. Names that never reached the main
# process (a worker killed mid-epoch, an early `break`) carry a prefix unique to the iterator, which is swept
# when the iterator shuts down.
#
# > **In PyTorch:** `torch/multiprocessing/reductions.py` registers how tensors pickle between processes:
# > the storage moves to shared memory and only a handle travels (a file descriptor, or a file name with
# > `set_sharing_strategy("file_system")`). `collate_tensor_fn` in `_utils/collate.py` allocates the batch in
# > shared memory when it runs in a worker. PyTorch allocates a fresh block for every batch; course_lib
# > recycles them, because touching fresh memory costs a page fault per 4 KB page, in each process.
#
# ## 10 · Randomness in workers: the classic bug
#
# Every worker starts as a copy of the main process. Anything random that lives *in* the dataset object is
# copied too, state included: every worker then draws the same "random" numbers. The next dataset creates its
# random generator in `__init__`, the natural place, and uses it to pick a crop offset per sample. Look at
# the batches: worker 0 loads batches 0, 2, 4 and worker 1 loads batches 1, 3, 5, and each pair is identical.

# %% id="seed-bug"
class RandomOffsets(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)  # one generator... copied into every worker

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return int(self.rng.integers(0, 100))  # e.g. where to crop


print("2 workers:", [b.tolist() for b in DataLoader(RandomOffsets(), batch_size=2, num_workers=2)])


# %% [markdown] id="seed-fix-md"
# The DataLoader does its part: in each worker it seeds Python's `random` and course_lib's generator with
# `base_seed + worker_id`, and numpy's global generator with a hash of the two, where `base_seed` is drawn
# from the loader's `generator` (or the global one) once per epoch. So `np.random.rand()`, `random.random()` and course_lib's
# random transforms (`T.RandomCrop`, `T.RandomHorizontalFlip`) already differ between workers, and are
# reproducible when you seed. A generator you keep yourself needs the same treatment, in `worker_init_fn`,
# which runs in each worker after that seeding: `get_worker_info()` gives the worker's `seed` and its copy of
# the `dataset`.

# %% id="seed-fix"
def seed_worker(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)  # this worker's copy, this worker's seed


for run in (1, 2):
    loader = DataLoader(RandomOffsets(), batch_size=2, num_workers=2, worker_init_fn=seed_worker,
                        generator=cl.Generator().manual_seed(42))
    print(f"fixed, run {run}:", [b.tolist() for b in loader])

augment = T.Compose([T.ToTensor(), T.RandomCrop(24), T.RandomHorizontalFlip()])
crops = DataLoader(SyntheticImages(8, size=32, seed=0, transform=augment), batch_size=4, num_workers=2)
print("augmented batch:", tuple(next(iter(crops))[0].shape))


# %% [markdown] id="shard-md"
# ## 11 · Sharding an iterable dataset
#
# A map-style dataset is split between workers by the sampler: each index goes to one worker. An
# `IterableDataset` has no indices, so each worker simply iterates its own copy, and without help every
# worker yields the *whole* stream: with 2 workers each sample arrives twice. The dataset must shard
# itself: `get_worker_info()` returns `None` in the main process and, in a worker, its `id` and
# `num_workers`.

# %% id="shard-demo"
class Stream(IterableDataset):
    def __init__(self, n, shard):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))  # worker k takes k, k + W, k + 2W, ...


print("not sharded:", [b.tolist() for b in DataLoader(Stream(8, shard=False), batch_size=2, num_workers=2)])
print("sharded:    ", [b.tolist() for b in DataLoader(Stream(8, shard=True), batch_size=2, num_workers=2)])
print("3 items/batch:", [b.tolist() for b in DataLoader(Stream(8, shard=True), batch_size=3, num_workers=2)])

# %% [markdown] id="ctor-md"
# Each worker fills its batches from its own shard, so with `batch_size=3` the batches mix nothing across
# workers and each worker may end with a short batch of its own: `[6]` and `[7]` above, not one `[6, 7]`.
# That is also why `len(loader)` is only an estimate for iterable datasets.
#
# ## 12 · The constructor: defaults, and the arguments that exclude each other
#
# You have now met every piece the loader is made of. `DataLoader.__init__` is where your arguments become
# those pieces. It first checks the numbers (`num_workers` and `timeout` not negative, `prefetch_factor` and
# `persistent_workers` only with workers), then decides where the indices come from. Four arguments describe
# that, and they overlap:
#
# ```
# shuffle ─┐
# sampler ─┴─> sampler: one index at a time ──┐
# batch_size, drop_last ──────────────────────┴─> BatchSampler(sampler, batch_size, drop_last)
# batch_sampler: lists of indices, ready-made (replaces all of the above)
# ```
#
# A `batch_sampler` already holds its own order and batch size. If the loader also accepted a `sampler`,
# that sampler would be silently ignored: a bug nobody would notice. So the constructor refuses every
# combination where one argument would override another, with a `ValueError` naming the conflict, in this
# order:
#
# 1. **An `IterableDataset`** decides its own order, so `shuffle` (anything but `False` or `None`), then
#    `sampler`, then `batch_sampler` are refused. Its sampler is `_InfiniteConstantSampler`, which yields
#    `None` forever: the fetcher ignores the "index" and takes the stream's next item. For a map-style
#    dataset, `shuffle` becomes `bool(shuffle)` (the default `None` is `False`).
# 2. **`sampler` and `shuffle=True`**: two answers to "in which order?".
# 3. **`batch_sampler` with `batch_size != 1`, `shuffle`, `sampler` or `drop_last`**: `batch_size=1` is the
#    default, so any other value, `None` included, counts as given. Then `batch_size` becomes `None` and
#    `drop_last` `False`: the batch sampler decides.
# 4. **`batch_size=None` with `drop_last=True`**: without batching there is no last batch to drop.
#
# Then it fills in what was not given: the sampler (`RandomSampler(dataset, generator=generator)` when
# shuffling, else `SequentialSampler(dataset)`), a `BatchSampler(sampler, batch_size, drop_last)` when
# `batch_size` is not `None` and no `batch_sampler` was given, and `collate_fn`: `default_collate` when
# batching, `default_convert` when not. Two properties read these decisions back, and the iterators use
# nothing else: `_auto_collation` is `batch_sampler is not None`, and `_index_sampler` is the batch sampler
# when batching, else the sampler. Every iterator starts with `iter(loader._index_sampler)`; your
# `SingleProcessIter` made the same choice in section 4.

# %% id="ctor-demo"
for kwargs in ({}, {"batch_size": None}, {"batch_sampler": [[3, 1], [0]]}, {"shuffle": True, "sampler": [0, 1]}):
    try:
        loader = DataLoader(images, **kwargs)
    except ValueError as e:
        print(f"{kwargs}: ValueError: {e}")
        continue
    print(f"{kwargs}: sampler {type(loader.sampler).__name__}, batch_sampler "
          f"{type(loader.batch_sampler).__name__}, _auto_collation {loader._auto_collation}, "
          f"collate_fn {loader.collate_fn.__name__}")


# %% [markdown] id="ex-06-7-task"
# ## Exercise 06.7 · LoaderArgs (2 points)
#
# Write the index-source half of `DataLoader.__init__` as a class, `LoaderArgs(dataset, batch_size=1,
# shuffle=None, sampler=None, batch_sampler=None, drop_last=False, collate_fn=None, generator=None)`:
#
# - check the arguments in the order of the list above and raise `ValueError` with PyTorch's message:
#
#   | conflict | message |
#   |---|---|
#   | `IterableDataset`, shuffle | `DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}` |
#   | `IterableDataset`, sampler | `DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}` |
#   | `IterableDataset`, batch_sampler | `DataLoader with IterableDataset: expected unspecified batch_sampler option, but got batch_sampler={batch_sampler}` |
#   | sampler, shuffle | `sampler option is mutually exclusive with shuffle` |
#   | batch_sampler, ... | `batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last` |
#   | batch_size=None, drop_last | `batch_size=None option disables auto-batching and is mutually exclusive with drop_last` |
#
#   (`{shuffle}` stands for the argument's value, as in an f-string);
# - set `self.dataset`, `self.batch_size`, `self.drop_last`, `self.sampler`, `self.batch_sampler` and
#   `self.collate_fn` to what the DataLoader would: the argument when it is given, else the default
#   described above. Make the samplers with course_lib's classes: `data.SequentialSampler`,
#   `data.RandomSampler`, `data.BatchSampler` and `_InfiniteConstantSampler` (imported below); these raise
#   their own errors (`batch_size=0`, an empty dataset to shuffle), let them through;
# - the properties `_auto_collation` and `_index_sampler`, as above.
#
# The check builds random combinations of arguments and compares what your class decides (or raises) with
# what `DataLoader` decides. Do not call `DataLoader` (or its two properties): that is the answer. For
# the same reason `LoaderArgs` may not inherit from course_lib's `DataLoader` or reuse its `__init__`,
# `_auto_collation` or `_index_sampler` (`_index_sampler = DataLoader._index_sampler`): the check fails
# such a class.
#
# *Hint:* follow the numbered list line by line; the only subtle line is `batch_size != 1` in rule 3.

# %% id="ex-06-7-solution" tags=["solution"] exercise="06.7"
from course_lib.utils import data
from course_lib.utils.data import IterableDataset
from course_lib.utils.data.dataloader import _InfiniteConstantSampler


class LoaderArgs:
    """How DataLoader.__init__ turns shuffle, sampler, batch_sampler, batch_size and drop_last into samplers."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, drop_last=False,
                 collate_fn=None, generator=None):
        ### BEGIN SOLUTION
        iterable = isinstance(dataset, IterableDataset)
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
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = data.RandomSampler(dataset, generator=generator)
            else:
                sampler = data.SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = data.BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        if collate_fn is None:
            collate_fn = data.default_collate if self._auto_collation else data.default_convert
        self.collate_fn = collate_fn
        ### END SOLUTION

    @property
    def _auto_collation(self) -> bool:
        ### BEGIN SOLUTION
        return self.batch_sampler is not None
        ### END SOLUTION

    @property
    def _index_sampler(self):
        ### BEGIN SOLUTION
        return self.batch_sampler if self._auto_collation else self.sampler
        ### END SOLUTION


# %% id="ex-06-7-check" tags=["check", "nbval-check-output"] exercise="06.7" points=2
check("06.7", LoaderArgs)

# %% [markdown] id="ctor-torch-md"
# With PyTorch installed, the next cell puts your class beside `torch.utils.data.DataLoader` on a few of the
# cases above.

# %% id="ctor-torch" grader_runs="torch = None  # `course grade` skips the optional comparison with PyTorch"
try:
    import torch
except ImportError:
    torch = None
    print("torch is not installed: skipped (`make oracle` installs it)")
if torch is not None:
    from torch.utils.data import DataLoader as TorchDataLoader

    def decision(make, **kwargs):
        try:
            loader = make(list(range(10)), **kwargs)
        except ValueError as e:
            return f"ValueError: {e}"
        return (f"batch_size={loader.batch_size}, sampler {type(loader.sampler).__name__}, batch_sampler "
                f"{type(loader.batch_sampler).__name__}, _auto_collation={loader._auto_collation}")

    for kwargs in ({}, {"batch_size": None}, {"batch_size": None, "drop_last": True},
                   {"shuffle": True, "sampler": [1, 2]}, {"batch_sampler": [[0, 1]], "batch_size": None},
                   {"batch_sampler": [[0, 1]], "shuffle": False}):
        try:
            mine = decision(LoaderArgs, **kwargs)
        except NotImplementedError:
            mine = "finish exercise 06.7 first"
        except Exception as e:  # noqa: BLE001 - 06.7 not right yet
            mine = f"{type(e).__name__}: {e}"
        print(f"{kwargs}\n  LoaderArgs: {mine}\n  torch:      {decision(TorchDataLoader, **kwargs)}")

# %% [markdown] id="pin-md"
# > **In PyTorch:** `DataLoader.__init__` in `torch/utils/data/dataloader.py`, in this order; it also wraps
# > `IterDataPipe`s, and its `__setattr__` refuses to change `batch_size`, `batch_sampler`, `sampler`,
# > `drop_last`, `dataset` or `persistent_workers` once the loader is built (the samplers were made from
# > them). `tests/test_dataloader_ctor_oracle.py` runs this exercise's cases through torch's constructor.
#
# ## 13 · Pinned memory: one more stage, for the GPU
#
# One argument is left: `pin_memory=True`. It matters only when batches go on to a GPU, and it adds a stage to
# the pipeline of section 6, a **thread** in the main process between the result queue and your loop:
#
# ```
# workers ──> result queue ──> pin-memory thread ──> data queue ──> main loop (back in order) ──> your loop
#                              pin(batch): copy every tensor
#                              into page-locked memory
# ```
#
# **Why pin.** A GPU reads host memory by DMA: its copy engine reads physical pages by itself, so those pages
# must stay where they are for the whole copy. Ordinary memory is *pageable*: the operating system may move
# it or swap it out. So `x.to("cuda")` from pageable memory is done in two steps: the CUDA driver first copies
# the data into a page-locked buffer of its own, then the GPU copies from there, and the call returns only when
# it is safe to reuse `x`. From memory that is already **pinned** (page-locked), the GPU copies directly, and
# `x.to("cuda", non_blocking=True)` only *queues* the copy (`cudaMemcpyAsync` on the current stream) and
# returns at once. What that buys on a GPU machine:
#
# - one copy instead of two, and usually a faster one (the driver's staging copy is skipped);
# - the Python thread is free while the copy runs: it can already ask the loader for the next batch;
# - with the copy on a second CUDA stream, the copy of batch `k + 1` overlaps the forward and backward
#   of batch `k` (a "prefetcher" that keeps the next batch in flight does this).
#
# A `non_blocking=True` copy from pageable memory cannot be asynchronous: it still goes through the staging
# buffer. And pinning is not free: it is one more copy on the host (the batch into a pinned buffer), and
# pinned memory is taken away from the operating system (pin too much and the whole machine slows down).
# That host copy is why the DataLoader does it in a thread: the copy releases the GIL, so it runs while your
# training step runs. It is a thread of the main process, not a worker, because pinned memory belongs to the
# process (and CUDA context) that allocated it. Without workers there is no thread: the single-process
# iterator pins each batch in your loop's thread.
#
# **Here.** course_lib has no GPU, exactly like a CPU-only build of PyTorch: `DataLoader(pin_memory=True)`
# warns once and hands out batches unpinned, `Tensor.pin_memory()` raises, `is_pinned()` is `False`, and no
# thread is started. (PyTorch starts it only when `torch.accelerator.is_available()`.)

# %% id="pin-demo"
import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    batch = next(iter(DataLoader(cl.arange(8.), batch_size=4, pin_memory=True)))
for w in caught:
    print("DataLoader(pin_memory=True) warns:", w.message)
print("batch.is_pinned():", batch.is_pinned())
try:
    batch.pin_memory()
except RuntimeError as e:
    print("batch.pin_memory(): RuntimeError:", e)

# %% [markdown] id="pin-measure-md"
# **What this machine can measure, and what it cannot.** Both host-side costs of the stage can be measured
# here: the copy that pinning adds (into an ordinary buffer here: copying into page-locked memory costs the
# same memory traffic; allocating page-locked memory is another matter, which is why PyTorch's caching host
# allocator keeps pinned blocks for reuse) and the trip of each batch through one more thread and queue. The
# GPU side, a copy from pinned against pageable memory and its overlap with compute, needs a GPU: this
# notebook shows no figure for it rather than an invented one. On a machine with one, time it with CUDA
# events, for example:
#
# ```python
# x = torch.randn(64, 3, 224, 224)                      # pageable
# xp = x.pin_memory()                                   # pinned
# start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
# for src, nb in ((x, False), (xp, False), (xp, True)):
#     torch.cuda.synchronize(); start.record()
#     y = src.to("cuda", non_blocking=nb)
#     end.record(); torch.cuda.synchronize()
#     print(f"pinned={src.is_pinned()} non_blocking={nb}: {start.elapsed_time(end):.2f} ms")
# ```
#
# and, for the overlap, time the host: the `non_blocking=True` copy from pinned memory returns before the
# data has arrived, the others do not.

# %% id="pin-measure" grader_runs="pass"
import queue
import threading

frames_batch = np.ones((64, 3, 128, 128), np.float32)  # the 12.6 MB batch of section 9
buffer = np.empty_like(frames_batch)
copies = []
for _ in range(20):
    start = time.perf_counter()
    np.copyto(buffer, frames_batch)
    copies.append(time.perf_counter() - start)
copy_s = float(np.median(copies))
print(f"copying a {frames_batch.nbytes / 1e6:.1f} MB batch: {copy_s * 1e3:.2f} ms "
      f"({frames_batch.nbytes / copy_s / 1e9:.1f} GB/s), median of 20")


def relay(source, sink, stop):
    # the pin-memory thread's shape, with nothing to pin
    while not stop.is_set():
        try:
            sink.put(source.get(timeout=0.05))
        except queue.Empty:
            continue


source, sink, stop = queue.Queue(), queue.Queue(), threading.Event()
thread = threading.Thread(target=relay, args=(source, sink, stop), daemon=True)
thread.start()
hops = []
for k in range(300):
    start = time.perf_counter()
    source.put((k, None))
    sink.get()
    hops.append(time.perf_counter() - start)
stop.set()
thread.join()
print(f"one more thread and queue: {float(np.median(hops)) * 1e6:.0f} µs per batch, median of 300")

# %% [markdown] id="ex-06-8-task"
# Both numbers are small next to a training step, and the copy runs beside it, in the thread. On a GPU machine
# the benefit is the asynchronous copy the pinned batch allows.
#
# ## Exercise 06.8 · pin_memory_loop (2 points)
#
# Write the loop that the pin-memory thread runs, `pin_memory_loop(in_queue, out_queue, done_event, pin)`.
# `in_queue` brings `(task_id, data)` pairs (from the workers' result queue), `out_queue` takes them to the
# main loop, `done_event` is a `threading.Event` the main process sets when the loader shuts down, and
# `pin(data)` pins a batch (the check passes its own stand-in, since nothing can be pinned here):
#
# - while `done_event` is not set: take the next pair with `in_queue.get(timeout=PIN_POLL)`; on
#   `queue.Empty` go round again (that is how the loop notices `done_event` while no batch comes);
# - put `(task_id, pin(data))` on `out_queue`, in the order they came;
# - a `data` that is already an `ExceptionWrapper` (a worker's error) goes through unchanged: there is
#   nothing to pin;
# - if `pin` raises an `Exception`, put `(task_id, ExceptionWrapper(where="in pin memory thread for device
#   0"))` instead, and carry on: the main loop re-raises it when that batch's turn comes;
# - return once `done_event` is set.
#
# The check runs your function in a thread, as the DataLoader does, and also sets `done_event` while the
# loop is waiting for a batch that never comes: the thread must end soon after.

# %% id="ex-06-8-solution" tags=["solution"] exercise="06.8"
import queue

from course_lib.utils.data._utils import ExceptionWrapper

PIN_POLL = 0.05  # seconds between looks at done_event (PyTorch: MP_STATUS_CHECK_INTERVAL, 5 s)


def pin_memory_loop(in_queue, out_queue, done_event, pin) -> None:
    """Pin each (task_id, data) from in_queue and pass it on to out_queue, until done_event is set."""
    ### BEGIN SOLUTION
    while not done_event.is_set():
        try:
            task_id, data = in_queue.get(timeout=PIN_POLL)
        except queue.Empty:
            continue
        if not isinstance(data, ExceptionWrapper):
            try:
                data = pin(data)
            except Exception:
                data = ExceptionWrapper(where="in pin memory thread for device 0")
        out_queue.put((task_id, data))
    ### END SOLUTION


# %% id="ex-06-8-check" tags=["check", "nbval-check-output"] exercise="06.8" points=2
check("06.8", pin_memory_loop)

# %% [markdown] id="summary"
# > **In PyTorch:** `_pin_memory_loop` and `pin_memory` in `torch/utils/data/_utils/pin_memory.py` (it also
# > skips pinning once `done_event` is set, and retries `out_queue.put` while the queue is full). The
# > thread is started in `_MultiProcessingDataLoaderIter.__init__` (`torch/utils/data/dataloader.py`) with a
# > plain `queue.Queue` as its `out_queue`; `_SingleProcessDataLoaderIter._next_data` pins in the calling thread.
# > `Tensor.pin_memory()` allocates through the accelerator's caching host allocator
# > (`at::getHostAllocator`, `cudaHostAlloc` for CUDA).
#
# ## Summary and what comes next
#
# - A map-style dataset answers `ds[i]`; an iterable dataset is a stream. Samplers choose the order of the
#   indices, a batch sampler groups them, and `collate` merges samples by type: tensors and arrays are
#   stacked, numbers become tensors (floats as float64), containers are walked, tuples transposed.
# - With `num_workers=0` the loader is a three-step loop: next indices, fetch, collate.
# - With workers, the main process keeps `prefetch_factor * num_workers` tasks in flight through per-worker
#   index queues, collects `(task id, batch)` from one result queue and hands batches out in order. Worker
#   errors travel as wrapped exceptions; dead workers are reported, not waited for; every exit path stops the
#   workers.
# - Batches travel through shared memory: only names and shapes are pickled.
# - Each worker's random generators are seeded from `base_seed` and its id; seed your own generators in
#   `worker_init_fn`, and shard iterable datasets with `get_worker_info()`.
# - The constructor turns `shuffle`, `sampler`, `batch_sampler`, `batch_size` and `drop_last` into one
#   sampler and one batch sampler, refusing every combination where one argument would override another;
#   `_index_sampler` is what the iterators draw from.
# - `pin_memory=True` adds a thread that copies each batch into page-locked memory, so that a GPU copy can
#   be asynchronous (`non_blocking=True`) and overlap compute; without a GPU it does nothing.
#
# **Chapter 07 · Serialization** saves and loads tensors, modules and optimizers, and meets shared storage
# again: two tensors that view one storage must still share it after `save` and `load`.
#
# Grade this chapter with `course grade notebooks/06_data_loading.ipynb`.
