"""The loop a DataLoader worker process runs.

In PyTorch: ``torch/utils/data/_utils/worker.py``.  A worker:

1. seeds Python's ``random``, numpy and course_lib from ``base_seed`` and its
   id, sets ``get_worker_info()``, then calls ``worker_init_fn(worker_id)``;
2. waits on its own *index queue* for ``(idx, indices, returned)``, fetches and
   collates the batch, and puts ``(idx, batch)`` on the shared *result queue*;
   ``returned`` lists shared-memory blocks the main process gave back;
3. sends exceptions as an ``ExceptionWrapper`` instead of dying, and for an
   ``IterableDataset`` reports the end of its iterator once;
4. stops on ``None``, or when the main process has died (checked every
   ``MP_STATUS_CHECK_INTERVAL`` seconds while idle).
"""
from __future__ import annotations

import io
import math
import os
import queue
import random
import select
import struct
import time
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler

from . import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper
from . import shared_memory as _shm


class ManagerWatchdog:
    """Is the process that started us still alive?  (Our parent changes when it dies.)"""

    def __init__(self):
        self.manager_pid = os.getppid()
        self.manager_dead = False

    def is_alive(self) -> bool:
        if not self.manager_dead:
            self.manager_dead = os.getppid() != self.manager_pid
        return not self.manager_dead


class _IndexQueue:
    """Main process -> one worker: a one-way pipe with ``put`` and ``get(timeout)``.

    PyTorch uses a ``multiprocessing.Queue`` here.  A Queue's ``put`` hands the
    object to a background feeder thread, and when the garbage collector frees
    an iterator caught in a reference cycle (an exception's traceback holds
    it), the Queue's own finalizer may stop that thread first: the "stop"
    message then never leaves and each worker is only terminated after a
    timeout.  ``put`` here writes to the pipe at once.
    """

    def __init__(self, ctx):
        self._reader, self._writer = ctx.Pipe(duplex=False)

    def put(self, obj) -> None:
        self._writer.send(obj)

    def get(self, timeout: float):
        if not self._reader.poll(timeout):
            raise queue.Empty
        return self._reader.recv()

    def started(self) -> None:
        """The worker has its copy of the reading end: the main process closes its own."""
        self._reader.close()

    def close(self) -> None:
        self._writer.close()


class _ResultReader:
    """The main process's end of the result queue: ``get(timeout)`` never waits on half a message.

    ``multiprocessing.Queue.get`` waits until a message starts, then blocks
    until all of it is read.  A worker killed halfway through writing a large
    batch never sends the rest, and the main process would wait forever
    without checking its workers (PyTorch's SIGCHLD handler gets it out of
    that read).  Here each ``get`` reads only the bytes already there; a
    message is unpickled once complete, and a partial one waits in this
    object while the caller checks the workers.  The framing is
    ``Connection.send_bytes``'s: a 4-byte big-endian length (-1 and an 8-byte
    length from 2 GiB), then the pickle.  Only the main process reads, so the
    queue's read lock is not needed.
    """

    def __init__(self, q):
        self._queue = q
        self._reader = q._reader
        self._file = io.FileIO(self._reader.fileno(), "rb", closefd=False)
        self._poller = select.poll()
        self._poller.register(self._file.fileno(), select.POLLIN)
        self._header = b""
        self._body: bytearray | None = None
        self._filled = 0

    def get(self, timeout: float):
        """The next message; ``queue.Empty`` if none is complete after ``timeout`` s; EOFError if the pipe is closed."""
        deadline = time.monotonic() + timeout
        wait_ms = math.ceil(timeout * 1000)
        while self._poller.poll(wait_ms):
            if self._read_available():
                body, self._body = self._body, None
                self._queue._sem.release()   # as Queue.get does: one more put may go ahead
                return ForkingPickler.loads(body)
            wait_ms = max(0, math.ceil((deadline - time.monotonic()) * 1000))
        raise queue.Empty

    def _read_available(self) -> bool:
        """One read (the pipe holds something): of the length, or into the body; True once the body is complete."""
        if self._body is None:
            need = 12 if self._header[:4] == _LONG_MESSAGE else 4
            chunk = self._file.read(need - len(self._header))
            if not chunk:
                raise EOFError
            self._header += chunk
            if self._header == _LONG_MESSAGE:
                need = 12                    # an 8-byte length follows
            if len(self._header) < need:
                return False
            size, = struct.unpack("!Q", self._header[4:]) if need == 12 else struct.unpack("!i", self._header)
            self._header, self._body, self._filled = b"", bytearray(size), 0
        else:
            n = self._file.readinto(memoryview(self._body)[self._filled:])
            if not n:
                raise EOFError
            self._filled += n
        return self._filled == len(self._body)


_LONG_MESSAGE = struct.pack("!i", -1)


@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker.

    ``id`` (0 .. num_workers - 1), ``num_workers``, ``seed`` (this worker's
    seed: base seed + id) and ``dataset`` (this process's copy of the dataset).
    """

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker, information about it; ``None`` in the main process.

    Use it in an ``IterableDataset.__iter__`` to give each worker its own share
    of the data, or in ``worker_init_fn`` to configure each worker's copy.
    """
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """Sent once by a worker whose ``IterableDataset`` iterator is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch; echoed back when they are ready."""

    seed: int | None = None


def _generate_state(base_seed: int, worker_id: int) -> list:
    """numpy's seed for a worker: four 32-bit words hashed from (worker id, base seed).

    PyTorch's ``_generate_state``, an implementation of numpy's ``SeedSequence``
    mixing, so that the workers' numpy streams are unrelated even though their
    seeds differ by one.
    """
    INIT_A, MULT_A = 0x43B0D7E5, 0x931E8875
    INIT_B, MULT_B = 0x8B51F9DD, 0x58F38DED
    MIX_MULT_L, MIX_MULT_R = 0xCA01F9DD, 0x4973F715
    XSHIFT = 4 * 8 // 2
    MASK32 = 0xFFFFFFFF

    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_A = INIT_A

    def hash(value):
        nonlocal hash_const_A
        value = (value ^ hash_const_A) & MASK32
        hash_const_A = (hash_const_A * MULT_A) & MASK32
        value = (value * hash_const_A) & MASK32
        value = (value ^ (value >> XSHIFT)) & MASK32
        return value

    def mix(x, y):
        result_x = (MIX_MULT_L * x) & MASK32
        result_y = (MIX_MULT_R * y) & MASK32
        result = (result_x - result_y) & MASK32
        result = (result ^ (result >> XSHIFT)) & MASK32
        return result

    for i in range(len(pool)):
        pool[i] = hash(entropy[i])
    for i_src in range(len(pool)):
        for i_dst in range(len(pool)):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash(pool[i_src]))

    hash_const_B = INIT_B
    state = []
    for i_dst in range(4):
        data_val = pool[i_dst]
        data_val = (data_val ^ hash_const_B) & MASK32
        hash_const_B = (hash_const_B * MULT_B) & MASK32
        data_val = (data_val * hash_const_B) & MASK32
        data_val = (data_val ^ (data_val >> XSHIFT)) & MASK32
        state.append(data_val)
    return state


def _seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed every random number generator a dataset may use; returns this worker's seed."""
    import numpy as np

    import course_lib

    seed = base_seed + worker_id
    random.seed(seed)
    course_lib.manual_seed(seed)
    np.random.seed(_generate_state(base_seed, worker_id))
    return seed


def _worker_loop(dataset_kind, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers, persistent_workers,
                 shm_prefix) -> None:
    """The body of worker process ``worker_id``.  ``shm_prefix`` is None when batches are pickled."""
    from ..dataloader import _DatasetKind

    global _worker_info
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        pool = None
        if shm_prefix is not None:
            pool = _shm._pool = _shm.BlockPool(f"{shm_prefix}_{worker_id}")

        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        # iteration_end: this worker's IterableDataset is exhausted; later tasks are skipped
        # until the main process resumes us (persistent workers) or stops us.
        iteration_end = False
        watchdog = ManagerWatchdog()

        while watchdog.is_alive():
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    break
                continue
            except EOFError:
                break  # the main process closed its end
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn,
                                                      drop_last)
                continue
            if r is None:
                break  # the main process tells us to stop
            idx, index, (reuse, drop) = r
            if pool is not None:
                pool.give_back(reuse, drop)
            if done_event.is_set() or iteration_end:
                continue  # shutting down, or nothing left to give: skip the task
            if init_exception is not None:
                data = init_exception
                init_exception = None
            else:
                try:
                    data = fetcher.fetch(index)
                    if pool is not None:
                        data = _shm.dumps(data, pool, worker_id)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data, idx, index, r  # don't keep the batch alive while waiting for the next task
    except KeyboardInterrupt:
        # Ctrl-C reaches the whole process group; the main process decides what happens.
        pass
    if done_event.is_set():
        # Don't wait at exit for the result queue's feeder thread to flush batches nobody will read.
        data_queue.cancel_join_thread()
        data_queue.close()
