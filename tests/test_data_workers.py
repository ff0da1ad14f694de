"""The multi-process DataLoader: ordering, seeding, failures, shutdown and shared memory.

Every test here checks afterwards that no worker process is left and that no
shared-memory block of this process is left in /dev/shm (the autouse fixture
``no_leftovers``).  Datasets are tiny and sleeps short, so the whole file runs
in seconds on two cores.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl
from course_lib.utils import data as D
from course_lib.utils.data._utils import shared_memory as shm
from course_lib.utils.data._utils import worker as W

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="worker tests assume Linux")

SHM_DIR = "/dev/shm"


def our_blocks() -> list:
    prefix = f"cl{os.getpid():x}_"
    return sorted(f for f in os.listdir(SHM_DIR) if f.startswith(prefix)) if os.path.isdir(SHM_DIR) else []


def reaped(pids) -> bool:
    """No process (not even a zombie) has any of these pids any more."""
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        return False
    return True


def process_state(pid: int) -> str:
    """The state letter in /proc/PID/stat: R, S, Z (zombie), ..."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


KILLED = r"^DataLoader worker \(pid {}\) is killed by signal: Killed\. $"


@pytest.fixture(autouse=True)
def no_leftovers():
    """No worker process and no shared-memory block may outlive a test; no test may hang."""
    def on_alarm(signum, frame):
        raise TimeoutError("test took longer than 60 s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    # Iterators kept alive by an exception's traceback (a reference cycle) need the garbage collector,
    # which is slow with torch loaded: only run it when workers are still there.
    if multiprocessing.active_children():
        gc.collect()
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []
    assert our_blocks() == []


# ------------------------------------------------------------------ datasets (module level: spawn can pickle them)

class Range(D.Dataset):
    """Sample i is i (an int), optionally slow for some indices."""

    def __init__(self, n, slow=(), delay=0.2):
        self.n, self.slow, self.delay = n, set(slow), delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i in self.slow:
            time.sleep(self.delay)
        return i


class Arrays(D.Dataset):
    """Sample i: a float32 array full of i, and the label i."""

    def __init__(self, n, shape=(3, 4, 4)):
        self.n, self.shape = n, shape

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.full(self.shape, i, dtype=np.float32), i


class Failing(D.Dataset):
    def __init__(self, n, bad, exc):
        self.n, self.bad, self.exc = n, bad, exc

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc
        return i


class Dies(D.Dataset):
    """Index ``bad`` kills its worker: with a signal, or by exiting."""

    def __init__(self, n, bad, how):
        self.n, self.bad, self.how = n, bad, how

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            if self.how == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        time.sleep(0.01)
        return i


class Randomness(D.Dataset):
    """Each sample reports who loaded it and what its random number generators gave."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = D.get_worker_info()
        return {"worker": info.id, "seed": info.seed, "num_workers": info.num_workers,
                "same_dataset": info.dataset is self, "py": random.random(), "np": float(np.random.rand()),
                "cl": cl.rand(1).item(), "init": _init_marks.get(info.id)}


_init_marks: dict = {}


def record_init(worker_id):
    # runs in the worker after seeding: what random gives here is reproducible too
    _init_marks[worker_id] = (worker_id, random.random())


class Shards(D.IterableDataset):
    def __init__(self, n, shard=True):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = D.get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def flat(batches):
    return [b.tolist() if isinstance(b, cl.Tensor) else b for b in batches]


def quiet_loader(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # more workers than CPUs on small machines
        return D.DataLoader(*args, **kwargs)


# ----------------------------------------------------------------------------- batches and order

def test_workers_give_the_same_batches_as_one_process():
    for kwargs in (dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None),
                   dict(batch_size=4, sampler=[9, 1, 8, 2, 7]), dict(batch_sampler=[[3, 1], [0], [9, 8, 7]])):
        expected = flat(D.DataLoader(Range(10), **kwargs))
        assert flat(D.DataLoader(Range(10), num_workers=2, **kwargs)) == expected


@pytest.mark.oracle
def test_workers_match_torch_on_arrays():
    torch = require_torch()

    class TArrays(torch.utils.data.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return np.full((3, 4, 4), i, dtype=np.float32), i

    ours = [(x.tolist(), y.tolist()) for x, y in D.DataLoader(Arrays(10), batch_size=4, num_workers=2)]
    theirs = [(x.tolist(), y.tolist()) for x, y in torch.utils.data.DataLoader(TArrays(), batch_size=4,
                                                                                 num_workers=2)]
    assert ours == theirs


def test_in_order_despite_slow_items():
    loader = D.DataLoader(Range(8, slow={0, 3}), batch_size=2, num_workers=2)
    assert flat(loader) == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_out_of_order_yields_as_completed():
    loader = D.DataLoader(Range(8, slow={0}, delay=0.5), batch_size=2, num_workers=2, in_order=False)
    got = flat(loader)
    assert sorted(got) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert got[0] != [0, 1]  # the slow first batch did not hold the others back


def test_at_most_prefetch_factor_batches_in_flight():
    it = iter(D.DataLoader(Range(40), batch_size=1, num_workers=2, prefetch_factor=3))
    assert it._send_idx == 6 and it._tasks_outstanding == 6
    next(it)
    assert it._tasks_outstanding <= 6 and it._send_idx == 7
    del it


@pytest.mark.oracle
@pytest.mark.parametrize("n_workers, batch_size, shard", [(3, 2, True), (2, 1, False), (2, None, True),
                                                         (2, 3, True)])
def test_iterable_dataset_sharding_matches_torch(n_workers, batch_size, shard):
    torch = require_torch()

    class TShards(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            if info is None or not shard:
                return iter(range(8))
            return iter(range(info.id, 8, info.num_workers))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = flat(D.DataLoader(Shards(8, shard), batch_size=batch_size, num_workers=n_workers))
        theirs = [b.tolist() if hasattr(b, "tolist") else b
                  for b in torch.utils.data.DataLoader(TShards(), batch_size=batch_size, num_workers=n_workers)]
    assert ours == theirs
    if (n_workers, batch_size, shard) == (3, 2, True):
        assert ours == [[0, 3], [1, 4], [2, 5], [6], [7]]


# ----------------------------------------------------------------------------- seeding

def _draws(generator_seed, **kw):
    loader = D.DataLoader(Randomness(), batch_size=None, num_workers=2,
                          generator=cl.Generator().manual_seed(generator_seed), **kw)
    return [{k: (v.item() if isinstance(v, cl.Tensor) else v) for k, v in s.items()} for s in loader]


def test_worker_info_and_per_worker_seeds():
    samples = _draws(0, worker_init_fn=record_init)
    assert [s["worker"] for s in samples] == [0, 1, 0, 1, 0, 1, 0, 1]
    assert all(s["num_workers"] == 2 and s["same_dataset"] for s in samples)
    seed0, seed1 = samples[0]["seed"], samples[1]["seed"]
    assert seed1 == seed0 + 1  # base seed + worker id
    # each worker's generators were seeded differently: its draws differ from the other's
    for key in ("py", "np", "cl"):
        assert samples[0][key] != samples[1][key]
    # worker_init_fn ran in each worker, after seeding, with the worker's id
    assert samples[0]["init"][0] == 0 and samples[1]["init"][0] == 1
    random.seed(seed0)
    assert samples[0]["init"][1] == random.random()
    # Python's random in worker 0 continues from seed0 (init_fn took the first number)
    random.seed(seed0)
    random.random()
    assert samples[0]["py"] == random.random()
    # numpy in worker w is seeded with PyTorch's _generate_state(base_seed, w)
    np_state = np.random.RandomState(W._generate_state(seed0, 0))
    assert samples[0]["np"] == np_state.rand()
    # course_lib's generator: manual_seed(seed)
    assert samples[0]["cl"] == cl.rand(1, generator=cl.Generator().manual_seed(seed0)).item()


def test_seeds_reproducible_from_the_loader_generator():
    a, b, c = _draws(5), _draws(5), _draws(6)
    assert a == b
    assert [s["np"] for s in a] != [s["np"] for s in c]


@pytest.mark.oracle
@pytest.mark.parametrize("base_seed", [0, 1, 12345, 2 ** 40 + 7, 2 ** 63 - 1])
def test_generate_state_matches_torch(base_seed):
    require_torch()
    from torch.utils.data._utils.worker import _generate_state

    for worker_id in range(3):
        assert W._generate_state(base_seed, worker_id) == _generate_state(base_seed, worker_id)


# ----------------------------------------------------------------------------- failures

def test_worker_exception_is_reraised_with_its_traceback():
    loader = D.DataLoader(Failing(8, 5, ValueError("bad index 5")), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as info:
        list(loader)
    msg = str(info.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.\n"
                          "Original Traceback (most recent call last):")
    assert "in __getitem__" in msg and msg.rstrip().endswith("ValueError: bad index 5")
    del info  # test frame -> info -> traceback -> test frame: break the cycle, the iterator goes now


def test_iteration_continues_after_a_worker_exception():
    it = iter(D.DataLoader(Failing(6, 2, ValueError("x")), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1]
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process 1"):
        next(it)
    assert next(it).tolist() == [4, 5]
    with pytest.raises(StopIteration):
        next(it)


class NeedsTwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


def test_keyerror_and_unconstructible_exceptions():
    with pytest.raises(KeyError) as info:
        list(D.DataLoader(Failing(4, 1, KeyError("k")), num_workers=1))
    assert "Caught KeyError in DataLoader worker process 0.\nOriginal Traceback" in str(info.value)
    del info
    with pytest.raises(RuntimeError, match="Caught NeedsTwoArgs in DataLoader worker process 0"):
        list(D.DataLoader(Failing(4, 1, NeedsTwoArgs(1, 2)), num_workers=1))


def failing_init(worker_id):
    raise OSError(f"no data for worker {worker_id}")


def test_worker_init_fn_error_reaches_the_main_process():
    with pytest.raises(OSError, match="Caught OSError in DataLoader worker process 0"):
        list(D.DataLoader(Range(4), num_workers=1, worker_init_fn=failing_init))


@pytest.mark.parametrize("how, pattern", [
    ("sigkill", r"^DataLoader worker \(pid \d+\) is killed by signal: Killed\. $"),
    ("exit", r"^DataLoader worker \(pid \d+\) exited unexpectedly with exit code 3\. Details are lost due to "
             r"multiprocessing\. Rerunning with num_workers=0 may give better error trace\.$"),
])
def test_dead_worker_raises_instead_of_hanging(how, pattern):
    loader = D.DataLoader(Dies(20, 5, how), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=pattern):
        list(loader)
    assert time.monotonic() - start < 10


def test_worker_killed_from_outside_mid_epoch():
    it = iter(D.DataLoader(Range(30, slow=set(range(30)), delay=0.05), batch_size=2, num_workers=2))
    next(it)
    victim = it._workers[1]
    os.kill(victim.pid, signal.SIGKILL)
    with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid {victim.pid}\) is killed by signal: Killed"):
        for _ in it:
            pass
    assert it._shutdown
    with pytest.raises(StopIteration):
        next(it)
    del it


class Large(D.Dataset):
    """Sample i: an 8 MB float32 array full of i (many times a pipe's buffer)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return np.full(2 * 2 ** 20, i, dtype=np.float32)


@pytest.mark.parametrize("persistent", [False, True])
def test_worker_killed_while_writing_a_batch(persistent):
    # The worker's queue thread blocks halfway through writing an 8 MB pickled batch (nobody is reading)
    # and is killed there.  Reading a message used to wait for its end, which never came: a hang.
    D.set_sharing_strategy("pickle")
    try:
        loader = D.DataLoader(Large(), batch_size=None, num_workers=1, persistent_workers=persistent)
        it = iter(loader)
        assert next(it)[0].item() == 0
        victim = it._workers[0]
        while not it._worker_result_queue._reader.poll(0):   # the next batch has started to arrive
            time.sleep(0.01)
        time.sleep(0.2)                                     # its writer is blocked on the full pipe
        os.kill(victim.pid, signal.SIGKILL)
        start = time.monotonic()
        with pytest.raises(RuntimeError, match=KILLED.format(victim.pid)):
            for _ in it:
                pass
        assert time.monotonic() - start < 5
        assert reaped([victim.pid]) and not multiprocessing.active_children()
        if persistent:
            with pytest.raises(RuntimeError, match=KILLED.format(victim.pid)):
                iter(loader)
        del loader, it
    finally:
        D.set_sharing_strategy("shared_memory")


def test_timeout():
    loader = D.DataLoader(Range(4, slow={1}, delay=1.0), batch_size=2, num_workers=1, timeout=0.2)
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.2 seconds$"):
        list(loader)


# ----------------------------------------------------------------------------- shutdown

def test_early_break_stops_workers():
    loader = D.DataLoader(Arrays(64), batch_size=4, num_workers=2)
    for batch in loader:
        break
    del batch
    # the fixture checks: no workers, no blocks


def test_workers_stop_at_exhaustion_and_on_errors():
    it = iter(D.DataLoader(Range(6), batch_size=2, num_workers=2))
    workers = list(it._workers)
    assert flat(it) == [[0, 1], [2, 3], [4, 5]]
    assert all(not w.is_alive() for w in workers) and it._shutdown
    with pytest.raises(ZeroDivisionError):
        for batch in D.DataLoader(Arrays(32), batch_size=2, num_workers=2):
            1 / 0


def test_garbage_collected_iterator_stops_workers():
    it = iter(D.DataLoader(Arrays(32), batch_size=2, num_workers=2))
    next(it)
    workers = list(it._workers)
    del it
    assert all(not w.is_alive() for w in workers)


def test_keyboard_interrupt_while_waiting_stops_workers():
    it = iter(D.DataLoader(Range(8, slow={2}, delay=2.0), batch_size=2, num_workers=1))
    assert next(it).tolist() == [0, 1]
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            next(it)
    finally:
        timer.cancel()
    assert it._shutdown and not any(w.is_alive() for w in it._workers)
    del it


def test_keyboard_interrupt_in_the_loop_body():
    with pytest.raises(KeyboardInterrupt):
        for batch in D.DataLoader(Arrays(32), batch_size=2, num_workers=2):
            raise KeyboardInterrupt


# ----------------------------------------------------------------------------- persistent workers

def test_persistent_workers_reuse_processes_across_epochs():
    loader = D.DataLoader(Range(10, slow={0}, delay=0.05), batch_size=3, num_workers=2, persistent_workers=True)
    it1 = iter(loader)
    pids = [w.pid for w in it1._workers]
    assert flat(it1) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    it2 = iter(loader)
    assert it2 is it1 and [w.pid for w in it2._workers] == pids
    for first in it2:
        break  # leave batches of this epoch in flight
    assert first.tolist() == [0, 1, 2]
    assert flat(loader) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]  # stale batches dropped
    assert all(w.is_alive() for w in it1._workers)
    workers = it1._workers
    del loader, it1, it2, first
    gc.collect()
    assert not any(w.is_alive() for w in workers)


@pytest.mark.parametrize("victim", [0, 1])
@pytest.mark.parametrize("wait", [False, True], ids=["at-once", "after-exit"])
def test_persistent_worker_killed_between_epochs(victim, wait):
    # PyTorch: every later epoch raises a RuntimeError naming the dead worker; it starts no new workers.
    # Here all the workers are stopped at the first error, and each later epoch raises that error again
    # (it used to be a raw BrokenPipeError, every epoch, with the other worker left running).
    loader = D.DataLoader(Range(12), batch_size=2, num_workers=2, persistent_workers=True)
    assert flat(loader) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    workers = list(loader._iterator._workers)
    pids = [w.pid for w in workers]
    os.kill(pids[victim], signal.SIGKILL)
    if wait:  # until the victim is a zombie: dead, its pipes closed, not yet reaped
        while process_state(pids[victim]) != "Z":
            time.sleep(0.01)
    for _ in range(3):
        start = time.monotonic()
        with pytest.raises(RuntimeError, match=KILLED.format(pids[victim])):
            for batch in loader:
                pass
        assert time.monotonic() - start < 3
        assert reaped(pids) and not multiprocessing.active_children()
    del loader


def test_persistent_worker_killed_after_an_early_break():
    # batches of the unfinished epoch are still in flight when the next epoch starts
    loader = D.DataLoader(Range(40, slow=set(range(40)), delay=0.02), batch_size=2, num_workers=2,
                          persistent_workers=True)
    for first in loader:
        break
    pids = [w.pid for w in loader._iterator._workers]
    os.kill(pids[1], signal.SIGKILL)
    for _ in range(2):
        with pytest.raises(RuntimeError, match=KILLED.format(pids[1])):
            iter(loader)
        assert reaped(pids)
    del loader, first


@pytest.mark.parametrize("how, pattern", [
    ("sigkill", r"^DataLoader worker \(pid \d+\) is killed by signal: Killed\. $"),
    ("exit", r"^DataLoader worker \(pid \d+\) exited unexpectedly with exit code 3\."),
], ids=["sigkill", "exit"])
def test_persistent_workers_stay_failed_after_a_dead_worker(how, pattern):
    # As in PyTorch, a persistent loader whose worker died starts no new workers: each epoch says why.
    loader = D.DataLoader(Dies(12, 5, how), batch_size=2, num_workers=2, persistent_workers=True)
    with pytest.raises(RuntimeError, match=pattern) as first:
        list(loader)
    pids = [w.pid for w in loader._iterator._workers]
    assert reaped(pids)
    for _ in range(2):
        with pytest.raises(RuntimeError) as again:
            list(loader)
        assert str(again.value) == str(first.value)
        assert [w.pid for w in loader._iterator._workers] == pids and not multiprocessing.active_children()
    del loader


def test_persistent_workers_restart_after_keyboard_interrupt():
    loader = D.DataLoader(Range(6, slow={2}, delay=2.0), batch_size=2, num_workers=1, persistent_workers=True)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            next(it)
    finally:
        timer.cancel()
    assert it._shutdown
    loader.dataset.slow = set()  # the fork-time copy of the dataset is what new workers get
    assert flat(loader) == [[0, 1], [2, 3], [4, 5]]  # not a worker failure: new workers
    assert loader._iterator is not it
    del loader, it


def test_persistent_workers_iterable_dataset():
    loader = D.DataLoader(Shards(6), batch_size=2, num_workers=2, persistent_workers=True)
    assert flat(loader) == flat(loader) == [[0, 2], [1, 3], [4], [5]]
    del loader


# ----------------------------------------------------------------------------- shared memory

def test_batches_arrive_in_shared_memory():
    for images, labels in D.DataLoader(Arrays(8), batch_size=4, num_workers=2):
        assert isinstance(images._storage._owner, shm.Block)
        assert isinstance(labels._storage._owner, shm.Block)
        assert images.dtype is cl.float32 and images.shape == (4, 3, 4, 4)
        assert images[:, 0, 0, 0].tolist() == labels.tolist()
        # the storage is a numpy view of the mapped block: no copy was made
        base = images._storage.data
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        assert isinstance(base, memoryview)


def test_sweeping_a_block_its_worker_never_registered_is_quiet():
    # A worker killed between creating a block and registering it with the resource tracker leaves a
    # name the tracker does not know; sweeping it made the tracker print a KeyError traceback.
    code = ("from course_lib.utils.data._utils import shared_memory as shm\n"
            "shm.ensure_tracker_running()\n"
            "prefix = shm.new_prefix()\n"
            "open(f'/dev/shm/{prefix}_0_0', 'wb').close()\n"
            "assert shm.sweep(prefix) == [f'{prefix}_0_0']\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_recycled_blocks_never_overwrite_batches_still_alive():
    kept = list(D.DataLoader(Arrays(96), batch_size=4, num_workers=2))
    assert [x[:, 0, 0, 0].tolist() for x, _ in kept] == [[4 * k + j for j in range(4)] for k in range(24)]
    assert [y.tolist() for _, y in kept] == [[4 * k + j for j in range(4)] for k in range(24)]
    # only numpy views survive: they keep their blocks too
    views = [x.numpy() for x, _ in D.DataLoader(Arrays(96), batch_size=4, num_workers=2)]
    assert [v[:, 1, 2, 3].tolist() for v in views] == [[4 * k + j for j in range(4)] for k in range(24)]


def test_blocks_are_recycled():
    it = iter(D.DataLoader(Arrays(400, shape=(64, 64)), batch_size=4, num_workers=2))
    seen = set()
    for k, (x, y) in enumerate(it):
        assert x[0, 0, 0].item() == 4 * k
        seen.add(x._storage._owner.name)
        del x, y
    # 100 batches of two tensors each, through a handful of blocks per worker
    assert len(seen) <= 2 * (it._prefetch_factor + 3)


def test_pickle_strategy_gives_the_same_batches():
    expected = [(x.tolist(), y.tolist()) for x, y in D.DataLoader(Arrays(10), batch_size=4)]
    D.set_sharing_strategy("pickle")
    try:
        got = [(x, y) for x, y in D.DataLoader(Arrays(10), batch_size=4, num_workers=2)]
    finally:
        D.set_sharing_strategy("shared_memory")
    assert [(x.tolist(), y.tolist()) for x, y in got] == expected
    assert not isinstance(got[0][0]._storage._owner, shm.Block)


def identity(batch):
    return batch


def with_view(batch):
    images, labels = D.default_collate(batch)
    return images, images[1], labels, {"name": "meta", "count": len(batch)}


def test_other_tensors_and_objects_travel_too():
    x = cl.arange(24.).view(6, 4)
    ds = D.TensorDataset(x, cl.arange(6))
    got = flat(D.DataLoader(ds, batch_size=None, num_workers=2, collate_fn=identity))
    assert [(a.tolist(), b.item()) for a, b in got] == [(x[i].tolist(), i) for i in range(6)]
    for images, second, labels, meta in D.DataLoader(Arrays(6), batch_size=3, num_workers=2, collate_fn=with_view):
        # two views of one storage arrive as two views of one storage
        assert second._storage is images._storage and second.storage_offset() == 3 * 4 * 4
        assert second[0, 0, 0].item() == labels[1].item()
        assert meta == {"name": "meta", "count": 3}


def test_spawn_context():
    loader = D.DataLoader(Arrays(6), batch_size=3, num_workers=1, multiprocessing_context="spawn")
    got = [(x[:, 0, 0, 0].tolist(), y.tolist()) for x, y in loader]
    assert got == [([0.0, 1.0, 2.0], [0, 1, 2]), ([3.0, 4.0, 5.0], [3, 4, 5])]


class Unpicklable(Range):
    def __init__(self, n):
        super().__init__(n)
        self.fn = lambda i: i  # spawn must pickle the dataset: a lambda cannot be pickled


def test_spawn_with_an_unpicklable_dataset_fails_cleanly():
    loader = D.DataLoader(Unpicklable(4), num_workers=2, multiprocessing_context="spawn")
    with pytest.raises((AttributeError, TypeError, __import__("pickle").PicklingError)):
        iter(loader)


def test_context_object_and_pin_memory_with_workers():
    ctx = multiprocessing.get_context("fork")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = D.DataLoader(Range(5), batch_size=2, num_workers=1, multiprocessing_context=ctx, pin_memory=True)
        assert loader.multiprocessing_context is ctx
        assert flat(loader) == [[0, 1], [2, 3], [4]]


@pytest.mark.oracle
def test_too_many_workers_warning_matches_torch():
    torch = require_torch()
    n = len(os.sched_getaffinity(0)) + 1
    with pytest.warns(UserWarning) as ours:
        D.DataLoader(Range(4), num_workers=n)
    with pytest.warns(UserWarning) as theirs:
        torch.utils.data.DataLoader(range(4), num_workers=n)
    assert str(ours[0].message) == str(theirs[0].message)
