"""Checks for chapter 06 (data loading).

Expected values come from ``course_lib.utils.data``, run in the grader: ``BatchSampler``,
``default_collate`` and ``DataLoader(num_workers=0)``; for the worker loop and the in-order
reassembly, from how the inputs were built (which tasks come before the stop, which index fails;
when each batch becomes yieldable). Datasets, samplers and loaders cannot travel to the kernel, so
the probes build them there from plain descriptions (a random batch from a seed: a failure names it,
and ``course.checks.chapter_checks("06")._random_batch(seed)`` rebuilds it) and return batches as text (``show``): same
container types, tensor dtypes, shapes and values give the same text. The worker loop runs in the
kernel's own process with in-memory queues, so a loop that never stops is reported, not waited for.

06.6 runs the learner's loader (with their 06.4 worker loop) in real forked processes, through a
context of the check's (``CheckContext``) whose queues and processes count what the main process does
and never wait past the case's few seconds; the batches expected are those of ``DataLoader(...,
num_workers>0)`` run in the grader, the counts follow from the inputs. 06.7's expected decisions and
errors are ``DataLoader``'s own (tests/test_dataloader_ctor_oracle.py compares them with torch's).
06.8 runs the learner's loop in a thread with a stand-in ``pin``; what must come out follows from the
inputs by the rules the task states.
"""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

import course_lib as cl
from course.checks import exercise, probe
from course_lib.utils import data as D
from course_lib.utils.data._utils import ExceptionWrapper


def show(obj: Any) -> str:
    """A short, readable text for a batch: ``tensor([1, 3], int64)``, ``('a', 'b')``, ``{'x': ...}``.

    Only exact types are shown by value (a subclass or an unknown object shows as its type), so
    two batches are equal for the checks when their texts are.
    """
    t = type(obj)
    if t is cl.Tensor:
        return f"tensor({obj.tolist()}, {obj.dtype.name})"
    if t is ExceptionWrapper:
        name = obj.exc_type.__name__ if obj.exc_type else None
        return f"ExceptionWrapper({name}, {obj.where!r})"
    if t is Point:
        return f"Point(x={show(obj.x)}, y={show(obj.y)})"
    if t is tuple:
        return "(" + ", ".join(show(v) for v in obj) + (",)" if len(obj) == 1 else ")")
    if t is list:
        return "[" + ", ".join(show(v) for v in obj) + "]"
    if t is dict:
        return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in obj.items()) + "}"
    if t is np.ndarray:
        return f"ndarray({obj.tolist()}, {obj.dtype})"
    if t in (str, int, float, bool, type(None)):
        return repr(obj)
    return f"<{t.__name__} object>"


def parts(obj: Any) -> list:
    """``show`` split at the top level, so that a failure message shows each part whole."""
    if type(obj) is Point:
        return ["Point of 2:", f"x={show(obj.x)}", f"y={show(obj.y)}"]
    if type(obj) in (list, tuple):
        return [f"{type(obj).__name__} of {len(obj)}:"] + [show(v) for v in obj]
    if type(obj) is dict:
        return ["dict:"] + [f"{k!r}: {show(v)}" for k, v in obj.items()]
    return [show(obj)]


Point = collections.namedtuple("Point", ["x", "y"])


def _source(spec):
    """A sampler from its description: an int n is range(n), a list is itself."""
    return range(spec) if isinstance(spec, int) else list(spec)


def _source_text(spec) -> str:
    return f"range({spec})" if isinstance(spec, int) else repr(spec)


# ------------------------------------------------------------------ 06.1 BatchSampler


def _batches(BatchSampler, source, batch_size: int, drop_last: bool) -> dict:
    """Probe: the batches a BatchSampler yields, their types, and its len()."""
    s = BatchSampler(_source(source), batch_size, drop_last)
    got = list(s)
    return {"batches": [b if type(b) is list else show(b) for b in got], "len": len(s)}


def _iterated_twice(BatchSampler, n: int, batch_size: int) -> list:
    """Probe: two passes over one BatchSampler(SequentialSampler(range(n)), batch_size, False)."""
    s = BatchSampler(D.SequentialSampler(range(n)), batch_size, False)
    return [list(s), list(s)]


def _from_random(BatchSampler, n: int, batch_size: int, seed: int) -> list:
    """Probe: the batches of a BatchSampler over a RandomSampler seeded with `seed`."""
    return list(BatchSampler(D.RandomSampler(range(n), generator=cl.Generator().manual_seed(seed)), batch_size, False))


@exercise("06.1", title="BatchSampler", points=1,
          hint="collect indices from iter(self.sampler) into a list; yield it when it has batch_size items; at "
               "the end yield the leftover list unless it is empty or drop_last is set. __len__: "
               "len(sampler) // batch_size, rounded up unless drop_last.")
def _batch_sampler(rng):
    configs = [(10, 3, False), (10, 3, True), (9, 3, True), (9, 3, False), (0, 2, False), (1, 4, False),
               (1, 4, True), ([5, 1, 4, 2, 3], 2, False), (7, 1, True), (6, 6, False)]
    for _ in range(3):
        n = int(rng.integers(0, 20))
        source = n if rng.random() < 0.5 else [int(i) for i in rng.permutation(n)]
        configs.append((source, int(rng.integers(1, 6)), bool(rng.integers(0, 2))))
    out = []
    for source, bs, drop in configs:
        ref = D.BatchSampler(_source(source), bs, drop)
        out.append(probe(_batches, source, bs, drop, expected={"batches": list(ref), "len": len(ref)},
                         label=f"BatchSampler({_source_text(source)}, batch_size={bs}, drop_last={drop}): "
                               "list() and len()"))
    n, bs = int(rng.integers(3, 9)), int(rng.integers(2, 4))
    twice = list(D.BatchSampler(D.SequentialSampler(range(n)), bs, False))
    out.append(probe(_iterated_twice, n, bs, expected=[twice, twice],
                     label=f"s = BatchSampler(SequentialSampler(range({n})), {bs}, False); [list(s), list(s)]"))
    n, bs, seed = int(rng.integers(5, 12)), int(rng.integers(2, 5)), int(rng.integers(0, 1000))
    out.append(probe(_from_random, n, bs, seed,
                     expected=list(D.BatchSampler(D.RandomSampler(range(n), generator=cl.Generator().manual_seed(seed)),
                                                  bs, False)),
                     label=f"list(BatchSampler(RandomSampler(range({n}), generator=seed {seed}), {bs}, False))"))
    return out


# ------------------------------------------------------------------ 06.2 collate


def _fixed_batches() -> dict:
    return {
        "[1, 2, 3]": [1, 2, 3],
        "[1.0, 2.5]": [1.0, 2.5],
        "[True, False]": [True, False],
        "['a', 'b']": ["a", "b"],
        "[tensor([1., 2.]), tensor([3., 4.])]": [cl.tensor([1.0, 2.0]), cl.tensor([3.0, 4.0])],
        "[tensor(1), tensor(2)]": [cl.tensor(1), cl.tensor(2)],
        "[np.ones((2, 2), float32), np.zeros((2, 2), float32)]":
            [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
        "[np.arange(3, dtype=int16)] * 2": [np.arange(3, dtype=np.int16)] * 2,
        "[(1, 'a', 2.0), (3, 'b', 4.0)]": [(1, "a", 2.0), (3, "b", 4.0)],
        "[[1, 2], [3, 4], [5, 6]]": [[1, 2], [3, 4], [5, 6]],
        "[{'x': 0, 'y': 1.5}, {'x': 100, 'y': 2.5}]": [{"x": 0, "y": 1.5}, {"x": 100, "y": 2.5}],
        "[Point(0, 0.5), Point(1, 1.5)]": [Point(0, 0.5), Point(1, 1.5)],
        "[{'img': tensor([1, 2]), 'meta': ('p', 3)}, {'img': tensor([3, 4]), 'meta': ('q', 4)}]":
            [{"img": cl.tensor([1, 2]), "meta": ("p", 3)}, {"img": cl.tensor([3, 4]), "meta": ("q", 4)}],
        "[(np.zeros(2, float32), 0), (np.ones(2, float32), 1)]":
            [(np.zeros(2, np.float32), 0), (np.ones(2, np.float32), 1)],
        "[None, None]": [None, None],
        "[object()]": [object()],
    }


def _random_batch(seed: int) -> list:
    """A batch of 1 to 4 samples of one random structure: dicts, tuples, lists and Points of
    ints, floats, bools, strings, tensors and numpy arrays."""
    r = np.random.default_rng(seed)
    n = int(r.integers(1, 5))

    def leaf(kind: str, shape: tuple):
        if kind == "int":
            return [int(v) for v in r.integers(-9, 10, size=n)]
        if kind == "float":
            return [float(v) for v in np.round(r.normal(size=n), 2)]
        if kind == "bool":
            return [bool(v) for v in r.integers(0, 2, size=n)]
        if kind == "str":
            return [str(c) for c in r.choice(list("abcxyz"), size=n)]
        if kind == "ndarray":
            shape = shape or (1,)  # an array, not a numpy scalar
        values = r.integers(-9, 10, size=(n,) + shape)
        if kind == "tensor":
            dtype = [cl.float32, cl.int64, cl.float64][int(r.integers(0, 3))]
            return [cl.tensor(v.tolist(), dtype=dtype) for v in values]
        dtype = [np.float32, np.int32, np.float64][int(r.integers(0, 3))]
        return [v.astype(dtype) for v in values]

    def structure(depth: int) -> list:
        """The n samples of one random structure, as a list."""
        kinds = ["int", "float", "bool", "str", "tensor", "ndarray"]
        kind = int(r.integers(2 if depth == 0 else 0, 9 if depth < 2 else 6))
        if kind < 6:
            return leaf(kinds[kind], tuple(int(s) for s in r.integers(1, 3, size=int(r.integers(0, 3)))))
        if kind == 6:
            keys = sorted({str(k) for k in r.choice(list("pqrs"), size=int(r.integers(1, 4)))})
            columns = {k: structure(depth + 1) for k in keys}
            return [{k: columns[k][i] for k in keys} for i in range(n)]
        if kind == 7:
            x, y = structure(depth + 1), structure(depth + 1)
            return [Point(x[i], y[i]) for i in range(n)]
        columns = [structure(depth + 1) for _ in range(int(r.integers(1, 4)))]
        make = tuple if r.random() < 0.5 else list
        return [make(c[i] for c in columns) for i in range(n)]

    return structure(0)


def _batch(spec) -> list:
    return _random_batch(spec) if isinstance(spec, int) else _fixed_batches()[spec]


def _collated(collate, spec) -> list:
    """Probe: the learner's collate of the batch `spec` names, shown part by part."""
    return parts(collate(_batch(spec)))


@exercise("06.2", title="collate", points=2,
          hint="look at batch[0]: tensors -> course_lib.stack(batch); numpy arrays -> stack their as_tensor; "
               "float -> float64 tensor; int/bool -> course_lib.tensor(batch); str -> batch unchanged; dict -> "
               "{key: collate([d[key] for d in batch])}; namedtuple -> same type of collated fields; other "
               "tuple/list -> [collate(s) for s in zip(*batch)]; anything else -> TypeError.")
def _collate(rng):
    out = []
    for spec in list(_fixed_batches()) + [int(rng.integers(0, 2**31 - 1)) for _ in range(5)]:
        label = f"collate({spec})" if isinstance(spec, str) else \
            f"collate(_random_batch({spec}) = {show(_batch(spec))[:200]})"
        try:
            expected = parts(D.default_collate(_batch(spec)))
        except TypeError:
            out.append(probe(_collated, spec, raises=TypeError, label=label))
            continue
        out.append(probe(_collated, spec, expected=expected, label=label))
    return out


# ------------------------------------------------------------------ 06.3 SingleProcessIter


class _Squares:
    """A map-style dataset: sample i is (i, float(i * i))."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i, float(i * i)


def _as_list(batch):
    return batch


_LOADERS = {
    "DataLoader(ds10, batch_size=3)": lambda: D.DataLoader(_Squares(10), batch_size=3),
    "DataLoader(ds10, batch_size=3, drop_last=True)": lambda: D.DataLoader(_Squares(10), batch_size=3,
                                                                          drop_last=True),
    "DataLoader(ds10, batch_size=4, sampler=[9, 0, 8, 1, 7])":
        lambda: D.DataLoader(_Squares(10), batch_size=4, sampler=[9, 0, 8, 1, 7]),
    "DataLoader(ds10, batch_sampler=[[3, 1], [0], [9, 8, 7]])":
        lambda: D.DataLoader(_Squares(10), batch_sampler=[[3, 1], [0], [9, 8, 7]]),
    "DataLoader(ds4, batch_size=None)": lambda: D.DataLoader(_Squares(4), batch_size=None),
    "DataLoader(ds10, batch_size=None, sampler=[4, 2])":
        lambda: D.DataLoader(_Squares(10), batch_size=None, sampler=[4, 2]),
    "DataLoader(ds5, batch_size=2, collate_fn=lambda b: b)":
        lambda: D.DataLoader(_Squares(5), batch_size=2, collate_fn=_as_list),
    "DataLoader(ds0, batch_size=2)": lambda: D.DataLoader(_Squares(0), batch_size=2),
    "DataLoader(TensorDataset(arange(6.)), batch_size=4)":
        lambda: D.DataLoader(D.TensorDataset(cl.arange(6.)), batch_size=4),
}


def _loader(spec):
    """A DataLoader by name, or from (n, batch_size, drop_last, shuffle seed or None)."""
    if isinstance(spec, str):
        return _LOADERS[spec]()
    n, bs, drop, seed = spec
    if seed is None:
        return D.DataLoader(_Squares(n), batch_size=bs, drop_last=drop)
    return D.DataLoader(_Squares(n), batch_size=bs, drop_last=drop, shuffle=True,
                        generator=cl.Generator().manual_seed(seed))


def _loader_text(spec) -> str:
    if isinstance(spec, str):
        return spec
    n, bs, drop, seed = spec
    return (f"DataLoader(ds{n}, batch_size={bs}, drop_last={drop}"
            + (f", shuffle=True, generator=seed {seed})" if seed is not None else ")"))


def _iterated(SingleProcessIter, spec) -> list:
    """Probe: the batches SingleProcessIter(loader) gives, shown."""
    return [show(b) for b in SingleProcessIter(_loader(spec))]


def _library_batches(spec) -> list:
    """What ``list(loader)`` gives; for a shuffling loader, the batches of one pass of its batch_sampler.

    (Iterating a DataLoader first draws a base seed for workers from its generator, which moves the
    permutation; SingleProcessIter, like the loader's own iterator with num_workers=0, only reads the
    batch_sampler.)
    """
    loader = _loader(spec)
    if isinstance(spec, tuple) and spec[3] is not None:
        return [show(D.default_collate([loader.dataset[i] for i in idx])) for idx in loader.batch_sampler]
    return [show(b) for b in loader]


def _next_three(SingleProcessIter) -> list:
    """Probe: iter(it) is it, then next(it) three times on a loader of two batches."""
    it = SingleProcessIter(D.DataLoader(_Squares(3), batch_size=2))
    out: list = [iter(it) is it, show(next(it)), show(next(it))]
    try:
        out.append(show(next(it)))
    except StopIteration:
        out.append("raises StopIteration")
    return out


@exercise("06.3", title="SingleProcessIter", points=1,
          hint="in __init__ keep loader.dataset and loader.collate_fn and make an iterator over "
               "loader.batch_sampler, or over loader.sampler when batch_sampler is None (batch_size=None); "
               "__next__: next index (its StopIteration ends the loop), fetch, then collate_fn.")
def _single_process_iter(rng):
    specs: list = list(_LOADERS) + [(10, 4, False, int(rng.integers(0, 1000)))]
    for _ in range(3):
        n, shuffle = int(rng.integers(0, 15)), rng.random() < 0.7
        specs.append((n + shuffle, int(rng.integers(1, 5)), bool(rng.integers(0, 2)),
                      int(rng.integers(0, 1000)) if shuffle else None))  # RandomSampler refuses 0 samples
    out = [probe(_iterated, spec, expected=_library_batches(spec),
                 label=f"list(SingleProcessIter({_loader_text(spec)}))") for spec in specs]
    out.append(probe(_next_three,
                     expected=[True, show(D.default_collate([(0, 0.0), (1, 1.0)])),
                               show(D.default_collate([(2, 4.0)])), "raises StopIteration"],
                     label="it = SingleProcessIter(DataLoader(ds3, batch_size=2)); iter(it) is it; next(it) x3"))
    return out


# ------------------------------------------------------------------ 06.4 worker_loop


class _TaskQueue:
    """An index queue for the check: ``get`` never blocks; asking past the end is reported."""

    def __init__(self, items):
        self.items = list(items)

    def get(self, block=True, timeout=None):
        if not self.items:
            raise RuntimeError("worker_loop asked for another task after the None that tells it to stop")
        return self.items.pop(0)

    def get_nowait(self):
        return self.get(False)


class _ResultQueue:
    def __init__(self):
        self.items = []

    def put(self, obj, block=True, timeout=None):
        self.items.append(obj)

    def put_nowait(self, obj):
        self.items.append(obj)


class _Fails:
    """Sample i is 10 * i, except that index ``bad`` raises ValueError."""

    def __init__(self, bad=None):
        self.bad = bad

    def __len__(self):
        return 100

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"bad index {i}")
        return 10 * i


_COLLATE_FNS = {"default_collate": D.default_collate, "list": list}


def _run_worker(worker_loop, bad, tasks: list, collate: str, worker_id: int) -> list:
    """Probe: what the loop put on the result queue, then what it returned."""
    results = _ResultQueue()
    ret = worker_loop(_Fails(bad), _TaskQueue(tasks), results, _COLLATE_FNS[collate], worker_id)
    return [f"put {show(r)}" for r in results.items] + [f"returned {ret!r}"]


def _worker_expected(bad, tasks: list, collate: str, worker_id: int) -> list:
    """What the loop must put: one result per task before the first None (a wrapper where `bad` is fetched)."""
    out = []
    for task in tasks[:tasks.index(None)]:
        task_id, indices = task
        if bad in indices:
            out.append(f"put ({task_id}, ExceptionWrapper(ValueError, 'in DataLoader worker process {worker_id}'))")
        else:
            out.append(f"put {show((task_id, _COLLATE_FNS[collate]([10 * i for i in indices])))}")
    return out + ["returned None"]


@exercise("06.4", title="worker_loop", points=2,
          hint="loop: task = index_queue.get(); return on None; otherwise task_id, indices = task and put "
               "(task_id, collate_fn([dataset[i] for i in indices])) on result_queue. Wrap the fetch in "
               "try/except Exception and put (task_id, ExceptionWrapper(where=f'in DataLoader worker process "
               "{worker_id}')) instead, then carry on with the next task.")
def _worker_loop(rng):
    scenarios = [
        ("tasks [(0, [0, 1]), (1, [2]), None]", None, [(0, [0, 1]), (1, [2]), None], "default_collate", 0),
        ("tasks [None]", None, [None], "default_collate", 0),
        ("tasks [(5, [3, 4, 5]), (2, [0]), None] with collate_fn=list", None, [(5, [3, 4, 5]), (2, [0]), None],
         "list", 1),
        ("dataset[3] raises: tasks [(0, [1, 2]), (1, [3, 4]), (2, [5]), None], worker 2", 3,
         [(0, [1, 2]), (1, [3, 4]), (2, [5]), None], "default_collate", 2),
        ("dataset[0] raises: tasks [(7, [0]), None], worker 0", 0, [(7, [0]), None], "default_collate", 0),
        ("tasks after None are not run: [(0, [1]), None, (1, [2])]", None, [(0, [1]), None, (1, [2])],
         "default_collate", 0),
    ]
    for _ in range(3):  # random task ids and indices, one index that fails, a random worker, tasks after the stop
        ids = [int(i) for i in rng.permutation(12)[:int(rng.integers(2, 6))]]
        tasks: list = [(i, [int(k) for k in rng.integers(0, 20, size=int(rng.integers(1, 4)))]) for i in ids]
        bad = int(rng.choice(tasks[int(rng.integers(0, len(tasks)))][1]))
        tasks.append(None)
        if rng.random() < 0.5:
            tasks.append((99, [1]))
        collate, wid = str(rng.choice(list(_COLLATE_FNS))), int(rng.integers(0, 8))
        scenarios.append((f"dataset[{bad}] raises: tasks {tasks}, worker {wid}, collate_fn={collate}", bad, tasks,
                          collate, wid))
    return [probe(_run_worker, bad, tasks, collate, wid, expected=_worker_expected(bad, tasks, collate, wid),
                  label=f"worker_loop: {label}")
            for label, bad, tasks, collate, wid in scenarios]


# ------------------------------------------------------------------ 06.5 in_order


class _Arrivals:
    """An iterator over (task_id, batch) pairs that counts how many were read."""

    def __init__(self, order):
        self.pairs = [(t, f"batch {t}") for t in order]
        self.read = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.read == len(self.pairs):
            raise StopIteration
        self.read += 1
        return self.pairs[self.read - 1]


def _yields_with_reads(in_order, order: list) -> list:
    """Probe: (batch, number of arrivals read when it was yielded) for each batch."""
    src = _Arrivals(order)
    return [(batch, src.read) for batch in in_order(src)]


def _as_early_as_possible(order: list) -> list:
    """Batch k can be yielded once tasks 0..k have all arrived: after max(position of 0..k) + 1 reads."""
    position = {t: i for i, t in enumerate(order)}
    last = np.maximum.accumulate([position[k] for k in range(len(order))]) if order else []
    return [(f"batch {k}", int(last[k]) + 1) for k in range(len(order))]


@exercise("06.5", title="in_order", points=2,
          hint="keep early arrivals in a dict {task_id: batch} and a counter next_id = 0; after reading each "
               "arrival, yield (and remove) waiting[next_id] and increase next_id while next_id is in the dict. "
               "Never read an arrival before yielding what is already yieldable.")
def _in_order(rng):
    orders = [[0, 1, 2, 3], [1, 0, 3, 2], [3, 2, 1, 0], [2, 0, 1, 4, 3, 5], [0], [], [1, 2, 3, 0], [0, 2, 1]]
    orders += [[int(t) for t in rng.permutation(int(rng.integers(2, 12)))] for _ in range(4)]
    return [probe(_yields_with_reads, order, expected=_as_early_as_possible(order),
                  label=f"[(batch, arrivals read so far) for batch in in_order(arrivals in order {order})]")
            for order in orders]


# ------------------------------------------------------------------ 06.7 the DataLoader's constructor


class _Stream(D.IterableDataset):
    """An iterable dataset of 0, 1, ..., n - 1."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


#: the arguments a constructor case may set, in DataLoader's order
_CTOR_ARGS = ("batch_size", "shuffle", "sampler", "batch_sampler", "drop_last", "collate_fn", "generator")


def ctor_arguments(spec: dict, iterable_dataset: type = _Stream, map_dataset: type = _Squares,
                   make_generator=None) -> tuple:
    """(dataset, keyword arguments) for a constructor case described as plain data.

    ``spec["dataset"]`` is ``("map", n)`` or ``("iterable", n)``; ``collate_fn`` is ``"list"`` for the
    builtin ``list``; ``generator`` is a seed (a new seeded generator). The other keys are the
    arguments as they are. The dataset classes and ``make_generator(seed)`` can be swapped, so that
    tests/test_dataloader_ctor_oracle.py builds the same case for torch.
    """
    kind, n = spec["dataset"]
    dataset = iterable_dataset(n) if kind == "iterable" else map_dataset(n)
    kwargs = {k: spec[k] for k in _CTOR_ARGS if k in spec}
    if kwargs.get("collate_fn") == "list":
        kwargs["collate_fn"] = list
    if kwargs.get("generator") is not None:
        make = make_generator or (lambda seed: cl.Generator().manual_seed(seed))
        kwargs["generator"] = make(kwargs["generator"])
    return dataset, kwargs


def describe_loader(loader, dataset, kwargs: dict) -> dict:
    """What a constructed DataLoader (or the learner's LoaderArgs) decided, as plain data.

    Samplers are named by type and by where their parts come from ("the sampler argument", "the
    dataset", "the generator argument"), so that the same text comes from course_lib, torch and the
    learner's class; ``first`` is the first four items ``_index_sampler`` yields.
    """
    import itertools

    def source(obj) -> str:
        for name in ("sampler", "batch_sampler", "generator", "collate_fn"):
            if name in kwargs and kwargs[name] is not None and obj is kwargs[name]:
                return f"the {name} argument"
        if obj is dataset:
            return "the dataset"
        return "a new " + type(obj).__name__ if obj is not None else "None"

    def sampler_text(s) -> str | None:
        if s is None:
            return None
        name = source(s)
        if not name.startswith("a new "):
            return name
        t = type(s).__name__
        if t == "SequentialSampler":
            return f"SequentialSampler({source(s.data_source)})"
        if t == "RandomSampler":
            return f"RandomSampler({source(s.data_source)}, generator={source(s.generator)})"
        if t == "BatchSampler":
            inner = "the loader's sampler" if s.sampler is loader.sampler else sampler_text(s.sampler)
            return f"BatchSampler({inner}, batch_size={s.batch_size!r}, drop_last={s.drop_last!r})"
        return f"{t}()"

    collate = loader.collate_fn
    index_sampler = loader._index_sampler
    which = ("batch_sampler" if index_sampler is loader.batch_sampler and index_sampler is not None
             else "sampler" if index_sampler is loader.sampler else sampler_text(index_sampler))
    first = [list(b) if isinstance(b, (list, tuple)) else b for b in itertools.islice(iter(index_sampler), 4)]
    return {"batch_size": loader.batch_size, "drop_last": loader.drop_last, "sampler": sampler_text(loader.sampler),
            "batch_sampler": sampler_text(loader.batch_sampler), "_auto_collation": loader._auto_collation,
            "_index_sampler": which,
            "collate_fn": source(collate) if "collate_fn" in kwargs and kwargs["collate_fn"] is not None
            else getattr(collate, "__name__", type(collate).__name__),
            "first": first}


#: the key of what 06.7's class takes from course_lib's DataLoader ("nothing" is the only right answer)
_REUSED = "taken from course_lib's DataLoader (not allowed)"


def reused_from_dataloader(cls) -> list:
    """What ``cls`` takes from course_lib's DataLoader instead of writing it: the class itself when it
    inherits from it, and each of ``__init__``, ``_auto_collation`` and ``_index_sampler`` it shares.

    The check's probe calls these, so the forbidden-call watch (which lets calls from the checks through)
    would not see an inherited ``__init__`` or an assigned property run DataLoader's code.
    """
    import inspect

    if not isinstance(cls, type):
        return []
    if issubclass(cls, D.DataLoader):
        return ["a subclass of it"]
    reference = {"__init__": D.DataLoader.__init__, "_auto_collation": D.DataLoader._auto_collation.fget,
                 "_index_sampler": D.DataLoader._index_sampler.fget}
    out = []
    for name, fn in reference.items():
        try:
            attr = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        if isinstance(attr, property):
            attr = attr.fget
        if getattr(attr, "__func__", attr) is fn:
            out.append(name)
    return out


def _constructed(LoaderArgs, spec: dict) -> dict:
    """Probe: what LoaderArgs(dataset, **arguments) decided, and what the class reuses from DataLoader."""
    dataset, kwargs = ctor_arguments(spec)
    reused = ", ".join(reused_from_dataloader(LoaderArgs)) or "nothing"
    return {**describe_loader(LoaderArgs(dataset, **kwargs), dataset, kwargs),
            _REUSED: reused}


def _spec_text(spec: dict) -> str:
    kind, n = spec["dataset"]
    parts = [f"{'an IterableDataset' if kind == 'iterable' else 'a dataset'} of {n}"]
    for k in _CTOR_ARGS:
        if k in spec:
            v = spec[k]
            parts.append(f"{k}=" + ("list" if k == "collate_fn" else f"<generator seeded {v}>" if k == "generator"
                                    else repr(v)))
    return "LoaderArgs(" + ", ".join(parts) + ")"


#: the cases every seed runs: defaults, every conflict, and the cases near them that are allowed
CTOR_FIXED: list = [
    {"dataset": ("map", 10)},
    {"dataset": ("map", 10), "batch_size": 3, "drop_last": True},
    {"dataset": ("map", 10), "batch_size": None},
    {"dataset": ("map", 10), "batch_size": None, "drop_last": True},
    {"dataset": ("map", 10), "shuffle": True, "generator": 7},
    {"dataset": ("map", 10), "shuffle": True, "sampler": [3, 1, 2]},
    {"dataset": ("map", 10), "shuffle": False, "sampler": [3, 1, 2], "batch_size": 2},
    {"dataset": ("map", 10), "batch_sampler": [[3, 1], [0], [9, 8, 7]]},
    {"dataset": ("map", 10), "batch_sampler": [[3, 1], [0]], "shuffle": False},
    {"dataset": ("map", 10), "batch_sampler": [[3, 1], [0]], "batch_size": 4},
    {"dataset": ("map", 10), "batch_sampler": [[3, 1], [0]], "batch_size": None},
    {"dataset": ("map", 10), "batch_sampler": [[3, 1], [0]], "drop_last": True},
    {"dataset": ("map", 10), "batch_sampler": [[3, 1], [0]], "sampler": [1, 2]},
    {"dataset": ("map", 10), "batch_sampler": [[3, 1], [0]], "shuffle": True},
    {"dataset": ("map", 10), "batch_sampler": [[3, 1]], "sampler": [1], "shuffle": True},
    {"dataset": ("map", 10), "batch_size": 0},
    {"dataset": ("map", 0), "shuffle": True},
    {"dataset": ("map", 5), "batch_size": 2, "collate_fn": "list"},
    {"dataset": ("map", 5), "batch_size": None, "sampler": [4, 2]},
    {"dataset": ("iterable", 6), "batch_size": 2},
    {"dataset": ("iterable", 6), "batch_size": None, "shuffle": False},
    {"dataset": ("iterable", 6), "shuffle": True},
    {"dataset": ("iterable", 6), "sampler": [0, 1]},
    {"dataset": ("iterable", 6), "batch_sampler": [[0, 1]]},
]


def ctor_random(rng) -> dict:
    """A random constructor case: each argument left out or set to a value near a conflict."""
    spec: dict = {"dataset": ("iterable" if rng.random() < 0.2 else "map", int(rng.integers(1, 12)))}
    n = spec["dataset"][1]
    choices = {
        "batch_size": [1, None, 2, 3, 0], "shuffle": [None, False, True], "drop_last": [False, True],
        "sampler": [None, [int(i) for i in rng.permutation(n)[:3]]],
        "batch_sampler": [None, [[int(i) for i in rng.permutation(n)[:2]], [0]]],
        "collate_fn": [None, "list"], "generator": [None, int(rng.integers(0, 1000))],
    }
    for k in _CTOR_ARGS:
        if rng.random() < 0.5:
            options = choices[k]
            spec[k] = options[int(rng.integers(0, len(options)))]
    if spec.get("shuffle") and spec.get("generator") is None:
        spec["generator"] = int(rng.integers(0, 1000))  # else the order comes from the global generator
    return spec


def _ctor_trial(spec: dict):
    label = _spec_text(spec)
    dataset, kwargs = ctor_arguments(spec)
    try:
        loader = D.DataLoader(dataset, **kwargs)
    except (ValueError, TypeError) as e:
        return probe(_constructed, spec, raises=type(e), match=str(e), label=label)
    expected = {**describe_loader(loader, dataset, kwargs), _REUSED: "nothing"}
    return probe(_constructed, spec, expected=expected, label=label)


@exercise("06.7", title="LoaderArgs", points=2,
          forbid={"DataLoader.__init__": D.DataLoader.__init__,
                  "DataLoader._auto_collation": D.DataLoader._auto_collation.fget,
                  "DataLoader._index_sampler": D.DataLoader._index_sampler.fget},
          hint="in DataLoader's order: the IterableDataset checks (shuffle, then sampler, then batch_sampler), "
               "else shuffle = bool(shuffle); sampler with shuffle; batch_sampler with batch_size != 1, shuffle, "
               "sampler or drop_last (then batch_size = None, drop_last = False); batch_size=None with drop_last. "
               "Then the default sampler, a BatchSampler only when batch_size is not None and no batch_sampler "
               "was given, and the default collate_fn from _auto_collation.")
def _loader_args(rng):
    return [_ctor_trial(spec) for spec in CTOR_FIXED + [ctor_random(rng) for _ in range(8)]]


# ------------------------------------------------------------------ 06.6 the loader in real processes


class _Slow:
    """Sample i is 10 * i, after ``delays[i]`` seconds; index ``bad`` raises ValueError."""

    def __init__(self, delays=(), bad=None):
        self.delays, self.bad = dict(delays), bad

    def __len__(self):
        return 100

    def __getitem__(self, i):
        if i in self.delays:
            import time

            time.sleep(self.delays[i])
        if i == self.bad:
            raise ValueError(f"bad index {i}")
        return 10 * i


#: seconds one case of 06.6 may take in all: a loader that waits for a batch that never comes, or for
#: a worker that never stops, is stopped waiting after this (the check's queues and processes enforce it)
CASE_SECONDS = 2.5


class _Watched:
    """What the check's context made, and the time left for the case."""

    def __init__(self, seconds: float):
        import time

        self.deadline = time.monotonic() + seconds
        self.processes: list = []
        self.queues: list = []
        self.sent = 0          # tasks the main process put on an index queue
        self.received = 0      # results it took from a queue
        self.max_in_flight = 0

    def left(self) -> float:
        import time

        return max(0.0, self.deadline - time.monotonic())


class _CheckQueue:
    """A multiprocessing queue that counts what this process puts on it, and never waits past the case."""

    def __init__(self, ctx, watched: _Watched):
        self._q, self._w = ctx.Queue(), watched
        self.tasks, self.stops = 0, 0

    def put(self, obj, block=True, timeout=None):
        import os

        if os.getpid() == self._w.pid:  # the main process: a task or a stop
            if obj is None:
                self.stops += 1
            else:
                self.tasks += 1
                self._w.sent += 1
                self._w.max_in_flight = max(self._w.max_in_flight, self._w.sent - self._w.received)
        self._q.put(obj, block, timeout)

    def put_nowait(self, obj):
        self.put(obj, False)

    def get(self, block=True, timeout=None):
        import os
        import queue

        if os.getpid() != self._w.pid:  # a worker waits for its next task as long as it likes
            return self._q.get(block, timeout)
        left = self._w.left()
        if timeout is not None and timeout <= left:
            item = self._q.get(block, timeout)
        else:
            try:
                item = self._q.get(block, left)
            except queue.Empty:
                raise TimeoutError(f"the check stopped waiting on a queue after {CASE_SECONDS} s: no result "
                                   "arrived (a task never sent, or a worker that is not running?)") from None
        self._w.received += 1
        return item

    def get_nowait(self):
        return self.get(False)

    def close(self):
        self._q.close()

    def join_thread(self):
        self._q.join_thread()

    def cancel_join_thread(self):
        self._q.cancel_join_thread()


class _CheckProcess:
    """A process of the check's context: ``join()`` never waits past the case."""

    def __init__(self, ctx, watched: _Watched, **kwargs):
        self._p, self._w = ctx.Process(**kwargs), watched
        self._queues = [a for a in kwargs.get("args", ()) if isinstance(a, _CheckQueue)]
        self.joined = False  # the main process called join() on it

    def start(self):
        self._p.start()

    def join(self, timeout=None):
        import os

        if os.getpid() == self._w.pid:
            self.joined = True
        left = self._w.left() if timeout is None else min(timeout, self._w.left())
        if self._queues and not any(q.stops for q in self._queues):
            left = min(left, 0.2)  # nothing told this worker to stop: waiting longer would only delay the verdict
        self._p.join(max(left, 0.05))

    def is_alive(self):
        return self._p.is_alive()

    def terminate(self):
        self._p.terminate()

    def kill(self):
        self._p.kill()

    @property
    def exitcode(self):
        return self._p.exitcode

    @property
    def pid(self):
        return self._p.pid

    @property
    def daemon(self):
        return self._p.daemon

    @daemon.setter
    def daemon(self, value):
        self._p.daemon = value


class CheckContext:
    """The ``ctx`` 06.6 gets: multiprocessing's fork context with ``Queue()`` and ``Process(...)``, watched.

    Fork, because the worker runs functions defined in the notebook, which a spawned process could not
    import.
    """

    def __init__(self, seconds: float = CASE_SECONDS):
        import multiprocessing
        import os

        self._ctx = multiprocessing.get_context("fork")
        self.watched = _Watched(seconds)
        self.watched.pid = os.getpid()

    def Queue(self) -> _CheckQueue:
        q = _CheckQueue(self._ctx, self.watched)
        self.watched.queues.append(q)
        return q

    def Process(self, group=None, target=None, name=None, args=(), kwargs=None, *, daemon=None) -> _CheckProcess:
        p = _CheckProcess(self._ctx, self.watched, target=target, name=name, args=args, kwargs=kwargs or {},
                          daemon=daemon)
        self.watched.processes.append(p)
        return p

    def finish(self) -> int:
        """Stop what is still running (after a short wait); how many processes were still running."""
        running = 0
        for p in self.watched.processes:
            if p.pid is None:
                continue
            p._p.join(0.5 if not running else 0.05)
            if p.is_alive():
                running += 1
                p.kill()
                p._p.join(1.0)
        for q in self.watched.queues:
            q.cancel_join_thread()
            q.close()
        return running


def _first_line(e: BaseException) -> str:
    return f"raises {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _loaded(load_with_workers, batches: list, workers: int, prefetch: int, collate: str, delays: list,
            bad) -> dict:
    """Probe: run the learner's loader with the check's context; what came out, and what it did."""
    ctx = CheckContext()
    w = ctx.watched
    got: list = []
    joined = 0
    try:
        try:
            for batch in load_with_workers(_Slow(delays, bad), batches, _COLLATE_FNS[collate], workers, ctx,
                                           prefetch_factor=prefetch, timeout=2.0):
                got.append(show(batch))
        except NotImplementedError:
            raise
        except Exception as e:  # noqa: BLE001 - what the loader raises is part of what it yields
            got.append(_first_line(e))
        joined = sum(p.joined for p in w.processes if p.pid is not None)  # before the check joins them itself
    finally:
        running = ctx.finish()
    used = [q for q in w.queues if q.tasks or q.stops]
    return {"batches": got, "workers started": sum(p.pid is not None for p in w.processes),
            "tasks sent": sum(q.tasks for q in used), "None sent per index queue": [q.stops for q in used],
            "most tasks in flight": w.max_in_flight, "workers joined": joined,
            "workers still running at the end": running}


def _library_loaded(batches: list, workers: int, prefetch: int, collate: str, bad) -> list:
    """What course_lib's DataLoader with `workers` processes yields for these index lists (as shown)."""
    key = (repr(batches), workers, prefetch, collate, bad)
    if key not in _LIBRARY_LOADED:
        _LIBRARY_LOADED[key] = _run_library_loader(batches, workers, prefetch, collate, bad)
    return list(_LIBRARY_LOADED[key])


#: what the library's loader gave for each case already run (the fixed cases are the same for every seed)
_LIBRARY_LOADED: dict = {}


def _run_library_loader(batches: list, workers: int, prefetch: int, collate: str, bad) -> list:
    import warnings

    out: list = []
    with warnings.catch_warnings():  # more workers than this machine's CPUs: a warning that says nothing here
        warnings.simplefilter("ignore")
        loader = D.DataLoader(_Slow((), bad), batch_sampler=batches, num_workers=workers,
                              prefetch_factor=prefetch, collate_fn=_COLLATE_FNS[collate],
                              multiprocessing_context="fork")  # _Slow lives in a module a spawned child cannot import
        try:
            for batch in loader:
                out.append(show(batch))
        except Exception as e:  # noqa: BLE001
            out.append(_first_line(e))
    return out


def _loader_trial(batches: list, workers: int, prefetch: int, collate: str, delays: list, bad, label: str):
    expected = _library_loaded(batches, workers, prefetch, collate, bad)
    window = prefetch * workers  # (a case with a failing batch sends every task at the start)
    return probe(_loaded, batches, workers, prefetch, collate, delays, bad,
                 expected={"batches": expected, "workers started": workers, "tasks sent": len(batches),
                           "None sent per index queue": [1] * workers,
                           "most tasks in flight": min(window, len(batches)), "workers joined": workers,
                           "workers still running at the end": 0},
                 label=label)


# 06.6 has no forbid=: the forbidden-call watch fails any process the learner's code starts itself, and
# starting processes is the exercise. A loader that leaves the work to DataLoader (or to another
# multiprocessing context) shows up in the counts instead: no workers or tasks went through the check's ctx.
@exercise("06.6", title="load_with_workers", points=3, time_budget=18.0,
          hint="ctx.Queue() per worker and one result queue; ctx.Process(target=worker_loop, args=(dataset, "
               "index_queues[w], result_queue, collate_fn, w), daemon=True) and start() each; send "
               "prefetch_factor * num_workers tasks (task k to worker k % num_workers); for each batch "
               "in_order yields, send one more task, re-raise an ExceptionWrapper, yield the batch; finally put "
               "None on every index queue and join the workers. Read results with get(timeout=timeout).")
def _load_with_workers(rng):
    cases = [
        ([[0, 1], [2, 3], [4, 5]], 2, 2, "default_collate", [], None, "3 batches, 2 workers"),
        ([[0], [1], [2], [3], [4], [5]], 2, 2, "default_collate", [(0, 0.1)], None,
         "6 batches, 2 workers, sample 0 takes 0.1 s (batches 1 to 3 arrive before batch 0)"),
        ([[i] for i in range(9)], 2, 1, "list", [(1, 0.05), (4, 0.05)], None,
         "9 batches, 2 workers, prefetch_factor=1 (2 tasks in flight), collate_fn=list"),
        ([[0, 1], [2], [3, 4], [5], [6, 7]], 3, 2, "default_collate", [], 3,
         "5 batches, 3 workers, sample 3 raises ValueError"),
        ([], 2, 2, "default_collate", [], None, "no batches, 2 workers"),
    ]
    # one random case: the samples in a random order, cut into 4 to 7 batches, two of them slow
    workers, prefetch = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    order = [int(i) for i in rng.permutation(12)]
    cuts = sorted(int(c) for c in rng.choice(np.arange(1, 12), size=int(rng.integers(3, 7)), replace=False))
    batches = [order[a:b] for a, b in zip([0] + cuts, cuts + [12])]
    delays = [(int(i), 0.03) for i in rng.choice(12, size=2, replace=False)]
    collate = str(rng.choice(list(_COLLATE_FNS)))
    cases.append((batches, workers, prefetch, collate, delays, None,
                  f"batches {batches}, {workers} worker(s), prefetch_factor={prefetch}, collate_fn={collate}, "
                  f"slow samples {[i for i, _ in delays]}"))
    return [_loader_trial(b, w, p, c, d, bad, f"load_with_workers: {label}") for b, w, p, c, d, bad, label in cases]


# ------------------------------------------------------------------ 06.8 the pin-memory thread


#: how often 06.8's loop must look at done_event (the task gives it; PyTorch waits MP_STATUS_CHECK_INTERVAL, 5 s)
PIN_POLL = 0.05


def _pin(batch):
    """The check's stand-in for pinning (course_lib has no accelerator): ``('pinned', batch)``; "bad" raises."""
    if batch == "bad":
        raise ValueError("cannot pin this batch")
    return ("pinned", batch)


def _pin_items(items: list) -> list:
    """(task id, data) pairs from their descriptions: data "wrapper" is an ExceptionWrapper from a worker."""
    out = []
    for idx, data in items:
        if data == "wrapper":
            try:
                raise KeyError("from a worker")
            except KeyError:
                data = ExceptionWrapper(where="in DataLoader worker process 0")
        out.append((idx, data))
    return out


def _pinned_thread(pin_memory_loop, items: list, gap: float) -> dict:
    """Probe: run the learner's loop in a thread; feed `items` (`gap` seconds apart), collect what comes out,
    set done_event and see whether the thread ends."""
    import queue
    import threading
    import time

    in_queue, out_queue, done = queue.Queue(), queue.Queue(), threading.Event()
    errors: list = []

    def run():
        try:
            pin_memory_loop(in_queue, out_queue, done, _pin)
        except BaseException as e:  # noqa: BLE001 - reported as data
            errors.append(f"{type(e).__name__}: {e}")

    thread = threading.Thread(target=run, daemon=True, name="pin_memory_loop under check")
    thread.start()
    got = []
    try:
        for item in _pin_items(items):
            if gap:
                time.sleep(gap)
            in_queue.put(item)
        deadline = time.monotonic() + 1.0
        while len(got) < len(items) and time.monotonic() < deadline:
            try:
                got.append(out_queue.get(timeout=0.02))
            except queue.Empty:
                if not thread.is_alive() and out_queue.empty():
                    break  # the loop is gone: nothing more will come
        done.set()
        thread.join(0.5)  # a loop that polls every PIN_POLL seconds ends long before
        stopped = not thread.is_alive()
    finally:
        done.set()
        if thread.is_alive():
            in_queue.put((-1, "wake up"))  # a loop blocked in get() without a timeout: let it see done_event
            thread.join(0.5)
    if errors and errors[0].startswith("NotImplementedError"):
        raise NotImplementedError
    return {"out": [show(pair) for pair in got], "stopped soon after done_event": stopped,
            "raised": errors[0] if errors else None}


def _pin_expected(items: list) -> dict:
    out = []
    for idx, data in items:
        if data == "wrapper":
            out.append(show((idx, "W")).replace("'W'", "ExceptionWrapper(KeyError, 'in DataLoader worker process 0')"))
        elif data == "bad":
            out.append(f"({idx}, ExceptionWrapper(ValueError, 'in pin memory thread for device 0'))")
        else:
            out.append(show((idx, ("pinned", data))))
    return {"out": out, "stopped soon after done_event": True, "raised": None}


@exercise("06.8", title="pin_memory_loop", points=2,
          hint="while not done_event.is_set(): try r = in_queue.get(timeout=PIN_POLL) except queue.Empty: continue; "
               "idx, data = r; unless data is an ExceptionWrapper, data = pin(data) inside try/except Exception "
               "(then data = ExceptionWrapper(where='in pin memory thread for device 0')); out_queue.put((idx, data)).")
def _pin_memory_loop(rng):
    cases = [
        ([(0, 1), (1, 2), (2, 3)], 0.0, "three batches"),
        ([], 0.0, "nothing arrives: done_event is set while the loop waits"),
        ([(0, "wrapper"), (1, 5)], 0.0, "batch 0 is an ExceptionWrapper from a worker"),
        ([(0, "a"), (1, "bad"), (2, "c")], 0.0, "pinning batch 1 raises ValueError"),
        ([(0, 7), (1, 8)], 2 * PIN_POLL, f"batches {2 * PIN_POLL:g} s apart (longer than the poll interval)"),
    ]
    ids = [int(i) for i in rng.permutation(20)[:int(rng.integers(5, 12))]]
    kinds = [7, "x", "wrapper", "bad", 3.5]
    items = [(i, kinds[int(rng.integers(0, len(kinds)))]) for i in ids]
    cases.append((items, 0.0, f"items {items}"))
    return [probe(_pinned_thread, items, gap, expected=_pin_expected(items), label=f"pin_memory_loop: {label}")
            for items, gap, label in cases]
