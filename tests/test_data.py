"""course_lib.utils.data in one process: datasets, samplers, collate, DataLoader.

Oracle tests compare with real torch's ``torch.utils.data`` wherever PyTorch's
result is defined by the arguments alone (no shuffling, a given index list),
and compare argument errors by type and exact message.
"""
from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl
from course_lib.utils import data as D
from course_lib.utils.data._utils import pin_memory as _pin

Point = collections.namedtuple("Point", ["x", "y"])


# ----------------------------------------------------------------------------- helpers

def plain(obj):
    """A comparable Python value for a course_lib or torch result (tensors become (dtype, shape, values))."""
    mod = type(obj).__module__
    if type(obj).__name__ == "Tensor" and (mod.startswith("torch") or mod.startswith("course_lib")):
        return ("tensor", str(obj.dtype).split(".")[-1], tuple(obj.shape), obj.tolist())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, tuple(plain(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [plain(v) for v in obj])
    if isinstance(obj, dict):
        return (type(obj).__name__, {k: plain(v) for k, v in obj.items()})
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.dtype.str, obj.tolist())
    return obj


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).replace("torch.", "course_lib.")
    return None


def same_error(cl_fn, torch_fn):
    got, expected = error_of(cl_fn), error_of(torch_fn)
    assert expected is not None, "torch accepted it"
    assert got == expected


class Squares(D.Dataset):
    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i


def _torch_squares(torch, n=10):
    class TSquares(torch.utils.data.Dataset):
        def __len__(self):
            return n

        def __getitem__(self, i):
            return i * i
    return TSquares()


# ----------------------------------------------------------------------------- datasets

def test_dataset_base_and_add():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__."):
        D.Dataset()[0]
    both = Squares(3) + Squares(2)
    assert isinstance(both, D.ConcatDataset)
    assert [both[i] for i in range(len(both))] == [0, 1, 4, 0, 1]


def test_tensor_dataset():
    x = cl.arange(12.).view(6, 2)
    y = cl.arange(6)
    ds = D.TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    assert a.tolist() == [8.0, 9.0] and b.item() == 4
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        D.TensorDataset(x, cl.arange(5))


def test_concat_dataset_indices_and_errors():
    ds = D.ConcatDataset([Squares(3), Squares(4), Squares(2)])
    assert ds.cumulative_sizes == [3, 7, 9]
    assert [ds[i] for i in range(9)] == [0, 1, 4, 0, 1, 4, 9, 0, 1]
    assert ds[-1] == 1 and ds[-9] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-10]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        D.ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        D.ConcatDataset([Squares(2), D.IterableDataset()])


def test_subset_stack_chain():
    sub = D.Subset(Squares(10), [7, 2, 5])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [49, 4, 25]
    assert sub.__getitems__([2, 0]) == [25, 49]
    st = D.StackDataset(Squares(3), Squares(3))
    assert st[2] == (4, 4)
    assert D.StackDataset(a=Squares(2), b=Squares(2))[1] == {"a": 1, "b": 1}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        D.StackDataset(Squares(2), Squares(3))

    class Count(D.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n

    chain = Count(2) + Count(3)
    assert isinstance(chain, D.ChainDataset)
    assert list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5


def test_random_split_lengths_fractions_and_seed():
    g = cl.Generator().manual_seed(0)
    a, b, c = D.random_split(range(10), [5, 3, 2], generator=g)
    assert (len(a), len(b), len(c)) == (5, 3, 2)
    assert sorted(list(a) + list(b) + list(c)) == list(range(10))
    # fractions: floors then the remainder round-robin, as PyTorch does
    parts = D.random_split(range(10), [0.34, 0.33, 0.33], generator=cl.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [4, 3, 3]
    # the same seed gives the same split
    again = D.random_split(range(10), [5, 3, 2], generator=cl.Generator().manual_seed(0))
    assert [list(s) for s in again] == [list(a), list(b), list(c)]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        D.random_split(range(3), [0.1, 0.1, 0.8], generator=cl.Generator().manual_seed(1))


@pytest.mark.oracle
@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 0.6], [-0.1, 1.1], [0.1, 0.9], [0.25, 0.25, 0.25, 0.25],
                                     [1.0], [10]])
def test_random_split_matches_torch_lengths_and_errors(lengths):
    torch = require_torch()
    n = 3 if lengths == [0.1, 0.9] else 10

    def run(split, gen):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [len(s) for s in split(range(n), lengths, generator=gen)]

    got = error_of(lambda: run(D.random_split, cl.Generator()))
    expected = error_of(lambda: run(torch.utils.data.random_split, torch.Generator()))
    assert got == expected
    if expected is None:
        assert run(D.random_split, cl.Generator()) == run(torch.utils.data.random_split, torch.Generator())


# ----------------------------------------------------------------------------- samplers

@pytest.mark.oracle
@pytest.mark.parametrize("n, batch_size, drop_last", [(10, 3, False), (10, 3, True), (9, 3, True), (1, 4, False),
                                                       (0, 2, False), (7, 1, True)])
def test_sequential_and_batch_sampler_match_torch(n, batch_size, drop_last):
    torch = require_torch()
    T = torch.utils.data
    ours = D.BatchSampler(D.SequentialSampler(range(n)), batch_size, drop_last)
    theirs = T.BatchSampler(T.SequentialSampler(range(n)), batch_size, drop_last)
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)
    # any iterable of indices works as the inner sampler
    assert list(D.BatchSampler([5, 1, 4, 2, 3], 2, drop_last)) == list(T.BatchSampler([5, 1, 4, 2, 3], 2, drop_last))


@pytest.mark.oracle
@pytest.mark.parametrize("make", [
    lambda M: M.BatchSampler(range(3), 0, False),
    lambda M: M.BatchSampler(range(3), True, False),
    lambda M: M.BatchSampler(range(3), 2.0, False),
    lambda M: M.BatchSampler(range(3), 2, 1),
    lambda M: M.RandomSampler(range(3), replacement=1),
    lambda M: M.RandomSampler(range(3), num_samples=0),
    lambda M: M.RandomSampler(range(3), num_samples=2.0),
    lambda M: M.RandomSampler([], num_samples=None),
    lambda M: M.WeightedRandomSampler([1.0, 2.0], 0),
    lambda M: M.WeightedRandomSampler([1.0, 2.0], True),
    lambda M: M.WeightedRandomSampler([1.0, 2.0], 2, replacement=1),
    lambda M: M.WeightedRandomSampler([[1.0, 2.0]], 2),
], ids=lambda f: "")
def test_sampler_argument_errors_match_torch(make):
    torch = require_torch()
    same_error(lambda: make(D), lambda: make(torch.utils.data))


def test_random_sampler_permutations_and_reproducibility():
    s = D.RandomSampler(range(10), generator=cl.Generator().manual_seed(3))
    first, second = list(s), list(s)
    assert sorted(first) == list(range(10)) and sorted(second) == list(range(10))
    assert first != second  # a new permutation each pass
    again = D.RandomSampler(range(10), generator=cl.Generator().manual_seed(3))
    assert list(again) == first
    # num_samples beyond len: whole permutations, then part of one
    long = list(D.RandomSampler(range(4), num_samples=10, generator=cl.Generator().manual_seed(0)))
    assert len(long) == 10 and sorted(long[:4]) == [0, 1, 2, 3] and sorted(long[4:8]) == [0, 1, 2, 3]
    # with replacement: num_samples draws in range
    draws = list(D.RandomSampler(range(3), replacement=True, num_samples=70, generator=cl.Generator().manual_seed(0)))
    assert len(draws) == 70 and set(draws) == {0, 1, 2}
    # without a generator: seeded from the global generator
    cl.manual_seed(11)
    a = list(D.RandomSampler(range(20)))
    cl.manual_seed(11)
    assert list(D.RandomSampler(range(20))) == a


def test_subset_random_and_weighted_samplers():
    s = D.SubsetRandomSampler([10, 20, 30, 40], generator=cl.Generator().manual_seed(0))
    assert sorted(s) == [10, 20, 30, 40] and len(s) == 4
    w = D.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200, generator=cl.Generator().manual_seed(0))
    draws = list(w)
    assert len(draws) == 200 and set(draws) == {1, 3}
    assert 100 < draws.count(3) < 190  # about 3/4
    nodup = list(D.WeightedRandomSampler([1.0, 1.0, 1.0, 1.0], 4, replacement=False,
                                         generator=cl.Generator().manual_seed(0)))
    assert sorted(nodup) == [0, 1, 2, 3]


# ----------------------------------------------------------------------------- collate

COLLATE_CORPUS = {
    "ints": [1, 2, 3],
    "floats": [1.0, 2.5],
    "bools": [True, False, True],
    "strings": ["a", "b"],
    "bytes": [b"a", b"b"],
    "tuples": [(1, "a", 2.0), (3, "b", 4.0)],
    "lists": [[1, 2], [3, 4], [5, 6]],
    "dicts": [{"x": 0, "y": 1.5}, {"x": 100, "y": 2.5}],
    "nested": [{"img": [1, 2], "meta": ("p", 3)}, {"img": [3, 4], "meta": ("q", 4)}],
    "namedtuple": [Point(0, 0.5), Point(1, 1.5)],
    "numpy_f32": [np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)],
    "numpy_i16": [np.arange(3, dtype=np.int16), np.arange(3, dtype=np.int16)],
    "numpy_0d": [np.array(2.5), np.array(3.5)],
    "numpy_scalars_f32": [np.float32(1.5), np.float32(2.5)],
    "numpy_scalars_i64": [np.int64(1), np.int64(2)],
    "numpy_bool_scalars": [np.bool_(True), np.bool_(False)],
    "numpy_empty": [np.zeros((0, 2), np.float32)] * 2,
    "dict_of_numpy": [{"a": np.array([1, 2])}, {"a": np.array([3, 4])}],
    "namedtuple_numpy": [Point(np.float64(1.0), [1, 2]), Point(np.float64(2.0), [3, 4])],
}


def _tensor_corpus(M):
    return {
        "tensors": [M.tensor([1.0, 2.0]), M.tensor([3.0, 4.0])],
        "tensors_int": [M.tensor([[1, 2]]), M.tensor([[3, 4]])],
        "tensors_0d": [M.tensor(1), M.tensor(2)],
        "tensor_pairs": [(M.tensor([1, 2]), 0), (M.tensor([3, 4]), 1)],
        "noncontiguous": [M.arange(6.).view(2, 3).t(), M.arange(6., 12.).view(2, 3).t()],
        "mixed_dtypes": [M.tensor([1, 2]), M.tensor([1.5, 2.5])],
    }


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(COLLATE_CORPUS))
def test_default_collate_matches_torch(name):
    torch = require_torch()
    batch = COLLATE_CORPUS[name]
    assert plain(D.default_collate(batch)) == plain(torch.utils.data.default_collate(batch))


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(_tensor_corpus(np)) if False else
                         ["tensors", "tensors_int", "tensors_0d", "tensor_pairs", "noncontiguous", "mixed_dtypes"])
def test_default_collate_tensors_match_torch(name):
    torch = require_torch()
    ours = D.default_collate(_tensor_corpus(cl)[name])
    theirs = torch.utils.data.default_collate(_tensor_corpus(torch)[name])
    assert plain(ours) == plain(theirs)


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(COLLATE_CORPUS))
def test_default_convert_matches_torch(name):
    torch = require_torch()
    for sample in COLLATE_CORPUS[name]:
        assert plain(D.default_convert(sample)) == plain(torch.utils.data.default_convert(sample))


@pytest.mark.oracle
@pytest.mark.parametrize("batch", [
    [None, None],
    [object()],
    [[1, 2], [3]],
    [np.array(["a", "b"]), np.array(["c", "d"])],
    [np.array([object()]), np.array([object()])],
    [{"a": 1}, {"b": 2}],
], ids=["none", "object", "unequal_lists", "numpy_str", "numpy_object", "dict_keys"])
def test_default_collate_errors_match_torch(batch):
    torch = require_torch()
    got = error_of(lambda: D.default_collate(batch))
    expected = error_of(lambda: torch.utils.data.default_collate(batch))
    assert got is not None and got[0] == expected[0]
    if "object at 0x" not in expected[1]:
        assert got == expected


@pytest.mark.oracle
def test_ragged_tensors_error_matches_torch():
    torch = require_torch()
    same_error(lambda: D.default_collate([cl.tensor([1, 2]), cl.tensor([1, 2, 3])]),
               lambda: torch.utils.data.default_collate([torch.tensor([1, 2]), torch.tensor([1, 2, 3])]))
    same_error(lambda: D.default_collate([np.zeros(2), np.zeros(3)]),
               lambda: torch.utils.data.default_collate([np.zeros(2), np.zeros(3)]))


def test_collate_numpy_keeps_dtype_and_makes_new_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = D.default_collate([a, a + 1])
    assert out.dtype is cl.float32 and out.shape == (2, 2, 3)
    a[0, 0] = 99
    assert out[0, 0, 0].item() == 0.0


def test_collate_fn_map_extension():
    class Box:
        def __init__(self, v):
            self.v = v

    def collate_box(batch, *, collate_fn_map=None):
        return sum(b.v for b in batch)

    custom = {**D.default_collate_fn_map, Box: collate_box}
    assert plain(D.collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=custom)) == \
        ("list", [4, ("tensor", "int64", (2,), [2, 4])])


# ----------------------------------------------------------------------------- DataLoader (one process)

@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [
    dict(batch_size=3),
    dict(batch_size=3, drop_last=True),
    dict(batch_size=4, sampler=[9, 0, 8, 1, 7]),
    dict(batch_sampler=[[3, 1], [0], [9, 8, 7]]),
    dict(batch_size=None),
    dict(batch_size=None, sampler=[4, 2]),
    dict(batch_size=1),
    dict(batch_size=20),
    dict(batch_size=2, collate_fn=lambda b: b),
], ids=lambda kw: ",".join(sorted(kw)))
def test_loader_batches_match_torch(kwargs):
    torch = require_torch()
    ours = [plain(b) for b in D.DataLoader(Squares(), **kwargs)]
    theirs = [plain(b) for b in torch.utils.data.DataLoader(_torch_squares(torch), **kwargs)]
    assert ours == theirs
    assert len(D.DataLoader(Squares(), **kwargs)) == len(torch.utils.data.DataLoader(_torch_squares(torch),
                                                                                       **kwargs))


@pytest.mark.oracle
def test_tensor_dataset_loader_matches_torch():
    torch = require_torch()
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    y = np.arange(10) % 3
    ours = D.DataLoader(D.TensorDataset(cl.tensor(x), cl.tensor(y)), batch_size=4, sampler=[5, 3, 9, 0, 1, 2])
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
                                         batch_size=4, sampler=[5, 3, 9, 0, 1, 2])
    assert [plain(b) for b in ours] == [plain(b) for b in theirs]


BAD_LOADER_ARGS = [
    dict(shuffle=True, sampler=[0, 1]),
    dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], sampler=[0]),
    dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True),
    dict(batch_size=0),
    dict(batch_size=-1),
    dict(num_workers=-1),
    dict(timeout=-1),
    dict(prefetch_factor=2),
    dict(num_workers=2, prefetch_factor=-1),
    dict(persistent_workers=True),
    dict(multiprocessing_context="spawn"),
    dict(num_workers=1, multiprocessing_context="nope"),
    dict(num_workers=1, multiprocessing_context=3),
]


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", BAD_LOADER_ARGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_loader_argument_errors_match_torch(kwargs):
    torch = require_torch()
    same_error(lambda: D.DataLoader(Squares(), **kwargs),
               lambda: torch.utils.data.DataLoader(_torch_squares(torch), **kwargs))


class Count(D.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])],
                         ids=["shuffle", "sampler", "batch_sampler"])
def test_iterable_dataset_argument_errors_match_torch(kwargs):
    torch = require_torch()

    class TCount(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    got, expected = error_of(lambda: D.DataLoader(Count(3), **kwargs)), error_of(
        lambda: torch.utils.data.DataLoader(TCount(), **kwargs))
    assert got[0] == expected[0]
    # the message shows the sampler's repr, which differs only in the object
    assert got[1].split("=")[0] == expected[1].split("=")[0]


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [dict(batch_size=2), dict(batch_size=2, drop_last=True), dict(batch_size=None),
                                    dict(batch_size=5)])
def test_iterable_dataset_one_process_matches_torch(kwargs):
    torch = require_torch()

    class TCount(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7

    ours = D.DataLoader(Count(7), **kwargs)
    theirs = torch.utils.data.DataLoader(TCount(), **kwargs)
    assert [plain(b) for b in ours] == [plain(b) for b in theirs]
    assert len(ours) == len(theirs)


def test_iterable_len_warning():
    class Liar(D.IterableDataset):
        def __iter__(self):
            return iter(range(5))

        def __len__(self):
            return 2

    loader = D.DataLoader(Liar(), batch_size=None)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match=r"Length of IterableDataset .* was reported to be 2"):
        list(loader)


def test_defaults_and_len():
    loader = D.DataLoader(Squares())
    assert loader.batch_size == 1 and loader.num_workers == 0 and loader.prefetch_factor is None
    assert loader.timeout == 0 and loader.in_order is True and loader.drop_last is False
    assert len(D.DataLoader(Squares(), batch_size=3)) == 4
    assert len(D.DataLoader(Squares(), batch_size=3, drop_last=True)) == 3
    assert D.DataLoader(Squares(), num_workers=2).prefetch_factor == 2
    assert isinstance(loader.sampler, D.SequentialSampler)
    assert isinstance(D.DataLoader(Squares(), shuffle=True).sampler, D.RandomSampler)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 4


def test_timeout_with_no_workers_fails_at_iteration():
    loader = D.DataLoader(Squares(), timeout=1)
    with pytest.raises(AssertionError, match="_SingleProcessDataLoaderIter requires timeout == 0"):
        iter(loader)


def test_shuffle_reproducible_from_generator_and_manual_seed():
    def epoch(loader):
        return [b.tolist() for b in loader]

    loader = D.DataLoader(Squares(20), batch_size=5, shuffle=True, generator=cl.Generator().manual_seed(7))
    e1, e2 = epoch(loader), epoch(loader)
    assert sorted(sum(e1, [])) == sorted(i * i for i in range(20))
    assert e1 != e2  # reshuffled each epoch
    again = D.DataLoader(Squares(20), batch_size=5, shuffle=True, generator=cl.Generator().manual_seed(7))
    assert epoch(again) == e1 and epoch(again) == e2
    cl.manual_seed(5)
    a = epoch(D.DataLoader(Squares(20), batch_size=5, shuffle=True))
    cl.manual_seed(5)
    assert epoch(D.DataLoader(Squares(20), batch_size=5, shuffle=True)) == a


def test_pin_memory_is_accepted_with_one_note(monkeypatch):
    monkeypatch.setattr(_pin, "_noted", [False])
    with pytest.warns(UserWarning, match="only speeds up copies from the CPU to a GPU"):
        assert [b.tolist() for b in D.DataLoader(Squares(4), batch_size=2, pin_memory=True)] == [[0, 1], [4, 9]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(D.DataLoader(Squares(4), batch_size=2, pin_memory=True))


def test_get_worker_info_is_none_in_main_process():
    assert D.get_worker_info() is None


def test_sharing_strategy_api():
    assert D.get_all_sharing_strategies() == {"shared_memory", "pickle"}
    assert D.get_sharing_strategy() == "shared_memory"
    with pytest.raises(ValueError, match="sharing strategy must be one of"):
        D.set_sharing_strategy("file_system")
