"""Checks for chapter 06 (data loading).

Every exercise is checked against the reference ``course_lib.utils.data``:
``BatchSampler``, ``default_collate``, ``DataLoader(num_workers=0)``, and for
the worker loop and the in-order reassembly, small reference functions below
that follow the contracts stated in the notebook.  The worker loop is run in
this process with in-memory queues (no processes), so a check is fast and a
learner's loop that never stops is reported instead of hanging.
"""
from __future__ import annotations

import collections
import queue
from typing import Any

import numpy as np

from course.checks import Case, exercise


def _data():
    from course_lib.utils import data
    return data


def _cl():
    import course_lib
    return course_lib


def show(obj: Any) -> str:
    """A short, readable text for a batch: ``tensor([1, 3], int64)``, ``('a', 'b')``, ``{'x': ...}``.

    Two batches are equal for the checks when their texts are: same container
    types, same tensor dtypes and shapes, same values.
    """
    from course_lib.utils.data._utils import ExceptionWrapper

    cl = _cl()
    if isinstance(obj, cl.Tensor):
        return f"tensor({obj.tolist()}, {obj.dtype.name})"
    if isinstance(obj, ExceptionWrapper):
        name = obj.exc_type.__name__ if obj.exc_type else None
        return f"ExceptionWrapper({name}, {obj.where!r})"
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return f"{type(obj).__name__}(" + ", ".join(f"{k}={show(v)}" for k, v in zip(obj._fields, obj)) + ")"
    if isinstance(obj, tuple):
        return "(" + ", ".join(show(v) for v in obj) + (",)" if len(obj) == 1 else ")")
    if isinstance(obj, list):
        return "[" + ", ".join(show(v) for v in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, np.ndarray):
        return f"ndarray({obj.tolist()}, {obj.dtype})"
    return repr(obj)


def parts(obj: Any) -> list:
    """``show`` split at the top level, so that a failure message shows each part whole."""
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return [f"{type(obj).__name__} of {len(obj)}:"] + [f"{k}={show(v)}" for k, v in zip(obj._fields, obj)]
    if isinstance(obj, (list, tuple)):
        return [f"{type(obj).__name__} of {len(obj)}:"] + [show(v) for v in obj]
    if isinstance(obj, dict):
        return ["dict:"] + [f"{k!r}: {show(v)}" for k, v in obj.items()]
    return [show(obj)]


def _outcome(fn, render):
    """``render(fn())``, or ``"raises ExcType"`` (NotImplementedError passes through)."""
    try:
        return render(fn())
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001 - the error is the value being compared
        return f"raises {type(e).__name__}"


def _case(label: str, run, expected, render=lambda x: x) -> Case:
    return Case(label, lambda: _outcome(run, render), expected)


Point = collections.namedtuple("Point", ["x", "y"])


# ------------------------------------------------------------------ 06.1 BatchSampler


@exercise("06.1", title="BatchSampler", points=1,
          hint="collect indices from iter(self.sampler) into a list; yield it when it has batch_size items; at "
               "the end yield the leftover list unless it is empty or drop_last is set. __len__: "
               "len(sampler) // batch_size, rounded up unless drop_last.")
def _batch_sampler(BatchSampler):
    D = _data()
    cases = []
    for source, bs, drop in [(range(10), 3, False), (range(10), 3, True), (range(9), 3, True), (range(9), 3, False),
                             (range(0), 2, False), (range(1), 4, False), (range(1), 4, True),
                             ([5, 1, 4, 2, 3], 2, False), (range(7), 1, True), (range(6), 6, False)]:
        label = f"BatchSampler({source!r}, batch_size={bs}, drop_last={drop})"
        expected = list(D.BatchSampler(source, bs, drop))
        cases.append(_case(f"list({label})", lambda s=source, b=bs, d=drop: list(BatchSampler(s, b, d)),
                           expected))
        cases.append(_case(f"len({label})", lambda s=source, b=bs, d=drop: len(BatchSampler(s, b, d)),
                           len(D.BatchSampler(source, bs, drop))))

    def twice():
        s = BatchSampler(D.SequentialSampler(range(5)), 2, False)
        return [list(s), list(s)]

    cases.append(_case("s = BatchSampler(SequentialSampler(range(5)), 2, False); [list(s), list(s)]", twice,
                       [[[0, 1], [2, 3], [4]]] * 2))

    def from_random():
        cl = _cl()
        s = BatchSampler(D.RandomSampler(range(7), generator=cl.Generator().manual_seed(0)), 3, False)
        return list(s)

    cl = _cl()
    expected = list(D.BatchSampler(D.RandomSampler(range(7), generator=cl.Generator().manual_seed(0)), 3, False))
    cases.append(_case("list(BatchSampler(RandomSampler(range(7), generator=seed 0), 3, False))", from_random,
                       expected))
    return cases


# ------------------------------------------------------------------ 06.2 collate


def _collate_batches():
    cl = _cl()
    return [
        ("[1, 2, 3]", [1, 2, 3]),
        ("[1.0, 2.5]", [1.0, 2.5]),
        ("[True, False]", [True, False]),
        ("['a', 'b']", ["a", "b"]),
        ("[tensor([1., 2.]), tensor([3., 4.])]", [cl.tensor([1.0, 2.0]), cl.tensor([3.0, 4.0])]),
        ("[tensor(1), tensor(2)]", [cl.tensor(1), cl.tensor(2)]),
        ("[np.ones((2, 2), float32), np.zeros((2, 2), float32)]",
         [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)]),
        ("[np.arange(3, dtype=int16)] * 2", [np.arange(3, dtype=np.int16)] * 2),
        ("[(1, 'a', 2.0), (3, 'b', 4.0)]", [(1, "a", 2.0), (3, "b", 4.0)]),
        ("[[1, 2], [3, 4], [5, 6]]", [[1, 2], [3, 4], [5, 6]]),
        ("[{'x': 0, 'y': 1.5}, {'x': 100, 'y': 2.5}]", [{"x": 0, "y": 1.5}, {"x": 100, "y": 2.5}]),
        ("[Point(0, 0.5), Point(1, 1.5)]", [Point(0, 0.5), Point(1, 1.5)]),
        ("[{'img': tensor([1, 2]), 'meta': ('p', 3)}, {'img': tensor([3, 4]), 'meta': ('q', 4)}]",
         [{"img": cl.tensor([1, 2]), "meta": ("p", 3)}, {"img": cl.tensor([3, 4]), "meta": ("q", 4)}]),
        ("[(np.zeros(2, float32), 0), (np.ones(2, float32), 1)]",
         [(np.zeros(2, np.float32), 0), (np.ones(2, np.float32), 1)]),
    ]


@exercise("06.2", title="collate", points=2,
          hint="look at batch[0]: tensors -> course_lib.stack(batch); numpy arrays -> stack their as_tensor; "
               "float -> float64 tensor; int/bool -> course_lib.tensor(batch); str -> batch unchanged; dict -> "
               "{key: collate([d[key] for d in batch])}; namedtuple -> same type of collated fields; other "
               "tuple/list -> [collate(s) for s in zip(*batch)]; anything else -> TypeError.")
def _collate(collate):
    D = _data()
    cases = [_case(f"collate({label})", lambda b=batch: collate(b), parts(D.default_collate(batch)), parts)
             for label, batch in _collate_batches()]
    cases.append(_case("collate([None, None])", lambda: collate([None, None]), "raises TypeError"))
    cases.append(_case("collate([object()])", lambda: collate([object()]), "raises TypeError"))
    return cases


# ------------------------------------------------------------------ 06.3 SingleProcessIter


class _Squares:
    """A map-style dataset: sample i is (i, float(i * i))."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i, float(i * i)


def _loaders():
    D = _data()
    cl = _cl()
    return [
        ("DataLoader(ds10, batch_size=3)", lambda: D.DataLoader(_Squares(10), batch_size=3)),
        ("DataLoader(ds10, batch_size=3, drop_last=True)",
         lambda: D.DataLoader(_Squares(10), batch_size=3, drop_last=True)),
        ("DataLoader(ds10, batch_size=4, sampler=[9, 0, 8, 1, 7])",
         lambda: D.DataLoader(_Squares(10), batch_size=4, sampler=[9, 0, 8, 1, 7])),
        ("DataLoader(ds10, batch_sampler=[[3, 1], [0], [9, 8, 7]])",
         lambda: D.DataLoader(_Squares(10), batch_sampler=[[3, 1], [0], [9, 8, 7]])),
        ("DataLoader(ds4, batch_size=None)", lambda: D.DataLoader(_Squares(4), batch_size=None)),
        ("DataLoader(ds10, batch_size=None, sampler=[4, 2])",
         lambda: D.DataLoader(_Squares(10), batch_size=None, sampler=[4, 2])),
        ("DataLoader(ds5, batch_size=2, collate_fn=lambda b: b)",
         lambda: D.DataLoader(_Squares(5), batch_size=2, collate_fn=lambda b: b)),
        ("DataLoader(ds0, batch_size=2)", lambda: D.DataLoader(_Squares(0), batch_size=2)),
        ("DataLoader(TensorDataset(arange(6.)), batch_size=4)",
         lambda: D.DataLoader(D.TensorDataset(cl.arange(6.)), batch_size=4)),
    ]


def _shuffled_reference():
    """What a shuffling loader's batch_sampler gives, iterated once from a fresh seed."""
    D = _data()
    cl = _cl()
    loader = D.DataLoader(_Squares(10), batch_size=4, shuffle=True, generator=cl.Generator().manual_seed(3))
    return [D.default_collate([loader.dataset[i] for i in idx]) for idx in loader.batch_sampler]


@exercise("06.3", title="SingleProcessIter", points=1,
          hint="in __init__ keep loader.dataset and loader.collate_fn and make an iterator over "
               "loader.batch_sampler, or over loader.sampler when batch_sampler is None (batch_size=None); "
               "__next__: next index (its StopIteration ends the loop), fetch, then collate_fn.")
def _single_process_iter(SingleProcessIter):
    D = _data()
    cl = _cl()
    cases = []
    render = lambda batches: [show(b) for b in batches]  # noqa: E731
    for label, make in _loaders():
        expected = render(list(make()))
        cases.append(_case(f"list(SingleProcessIter({label}))",
                           lambda m=make: list(SingleProcessIter(m())), expected, render))

    def shuffled():
        loader = D.DataLoader(_Squares(10), batch_size=4, shuffle=True, generator=cl.Generator().manual_seed(3))
        return list(SingleProcessIter(loader))

    cases.append(_case("list(SingleProcessIter(DataLoader(ds10, batch_size=4, shuffle=True, generator=seed 3)))",
                       shuffled, render(_shuffled_reference()), render))

    def is_iterator():
        it = SingleProcessIter(D.DataLoader(_Squares(3), batch_size=2))
        return [iter(it) is it, show(next(it)), show(next(it)), _outcome(lambda: next(it), show)]

    cases.append(_case("it = SingleProcessIter(DataLoader(ds3, batch_size=2)); iter(it) is it; next(it) x3",
                       is_iterator, [True, show(D.default_collate([(0, 0.0), (1, 1.0)])),
                                     show(D.default_collate([(2, 4.0)])), "raises StopIteration"]))
    return cases


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


def _worker_loop_reference(dataset, index_queue, result_queue, collate_fn, worker_id):
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


def _run_worker(worker_loop, dataset, tasks, collate_fn, worker_id) -> list:
    """What the loop put on the result queue, then what it returned."""
    results = _ResultQueue()
    ret = worker_loop(dataset, _TaskQueue(tasks), results, collate_fn, worker_id)
    return [f"put {show(r)}" for r in results.items] + [f"returned {ret!r}"]


@exercise("06.4", title="worker_loop", points=2,
          hint="loop: task = index_queue.get(); return on None; otherwise task_id, indices = task and put "
               "(task_id, collate_fn([dataset[i] for i in indices])) on result_queue. Wrap the fetch in "
               "try/except Exception and put (task_id, ExceptionWrapper(where=f'in DataLoader worker process "
               "{worker_id}')) instead, then carry on with the next task.")
def _worker_loop(worker_loop):
    D = _data()
    scenarios = [
        ("tasks [(0, [0, 1]), (1, [2]), None]", _Fails(), [(0, [0, 1]), (1, [2]), None], D.default_collate, 0),
        ("tasks [None]", _Fails(), [None], D.default_collate, 0),
        ("tasks [(5, [3, 4, 5]), (2, [0]), None] with collate_fn=list", _Fails(),
         [(5, [3, 4, 5]), (2, [0]), None], list, 1),
        ("dataset[3] raises: tasks [(0, [1, 2]), (1, [3, 4]), (2, [5]), None], worker 2", _Fails(bad=3),
         [(0, [1, 2]), (1, [3, 4]), (2, [5]), None], D.default_collate, 2),
        ("dataset[0] raises: tasks [(7, [0]), None], worker 0", _Fails(bad=0), [(7, [0]), None],
         D.default_collate, 0),
        ("tasks after None are not run: [(0, [1]), None, (1, [2])]", _Fails(), [(0, [1]), None, (1, [2])],
         D.default_collate, 0),
    ]
    cases = []
    for label, ds, tasks, collate_fn, wid in scenarios:
        expected = _run_worker(_worker_loop_reference, ds, tasks, collate_fn, wid)
        cases.append(_case(f"worker_loop: {label}",
                           lambda ds=ds, t=tasks, c=collate_fn, w=wid: _run_worker(worker_loop, ds, list(t), c, w),
                           expected))
    return cases


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


def _in_order_reference(arrivals):
    waiting, next_id = {}, 0
    for task_id, batch in arrivals:
        waiting[task_id] = batch
        while next_id in waiting:
            yield waiting.pop(next_id)
            next_id += 1


def _yields_with_reads(in_order, order):
    """(batch, number of arrivals read when it was yielded) for each batch."""
    src = _Arrivals(order)
    return [(batch, src.read) for batch in in_order(src)]


@exercise("06.5", title="in_order", points=2,
          hint="keep early arrivals in a dict {task_id: batch} and a counter next_id = 0; after reading each "
               "arrival, yield (and remove) waiting[next_id] and increase next_id while next_id is in the dict. "
               "Never read an arrival before yielding what is already yieldable.")
def _in_order(in_order):
    orders = [[0, 1, 2, 3], [1, 0, 3, 2], [3, 2, 1, 0], [2, 0, 1, 4, 3, 5], [0], [], [1, 2, 3, 0], [0, 2, 1]]
    return [_case(f"[(batch, arrivals read so far) for batch in in_order(arrivals in order {order})]",
                  lambda o=order: _yields_with_reads(in_order, o),
                  _yields_with_reads(_in_order_reference, order))
            for order in orders]
