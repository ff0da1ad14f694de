"""How a batch travels from a worker process to the main process: shared memory.

In PyTorch: ``torch/multiprocessing/reductions.py`` (pickling a tensor moves its
storage to shared memory and sends a handle instead of the bytes),
``aten/src/ATen/MapAllocator.cpp`` (``shm_open`` / ``mmap`` / ``shm_unlink``)
and ``collate_tensor_fn`` in ``_utils/collate.py`` (inside a worker, the batch
is stacked straight into shared memory).

The path of one batch, with course_lib's names:

1. In the worker, ``default_collate`` stacks the samples into a block taken
   from the worker's :class:`BlockPool` (``empty_shared``): a
   ``multiprocessing.shared_memory.SharedMemory`` that both processes can map.
2. :func:`dumps` pickles the batch.  Each tensor becomes a small record (its
   block's name, dtype, offset, shape, stride): pickle's *persistent id*
   mechanism.  A tensor that is not in a block yet is copied into one first.
   Only these few hundred bytes go through the result queue's pipe.
3. In the main process, :meth:`BlockCache.loads` maps the block (the first time
   it sees its name), unlinks the name at once, and wraps a numpy view of the
   block as the tensor's storage.  No copy.
4. When the last array that views the block dies (the batch's tensors, and any
   ``.numpy()`` views of them), the main process hands the block back to its
   worker along with the worker's next index, and the worker stacks a later
   batch into it.  Fresh shared memory costs a page fault per 4 KiB page on
   first touch, in each process; a recycled block is already mapped in both.
   This is where course_lib differs from PyTorch, which allocates a new block
   per batch.  Free blocks beyond ``prefetch_factor + 1`` of a size are
   dropped, so the pool follows what the program really holds.

Nothing stays in ``/dev/shm``: a name exists only between the worker's create
and the main process's map.  Names carry a prefix unique to the iterator;
when the iterator shuts down, after its workers are gone, it unlinks whatever
names with its prefix are left (batches a worker made but the main process
never received).  All processes share one ``multiprocessing`` resource tracker
(started before the workers), which registers each name once when a worker
creates it and forgets it when the main process unlinks it: no double unlink,
no "leaked shared_memory" warning; and if the main process is killed, the
tracker unlinks the leftovers.
"""
from __future__ import annotations

import io
import os
import pickle
import sys
import weakref
from collections import deque
from multiprocessing import resource_tracker, shared_memory

import numpy as np

PAGE = 4096
"""Blocks are rounded up to whole pages, so that batches of one shape reuse each other's blocks."""

_SHM_DIR = "/dev/shm"


class Block(shared_memory.SharedMemory):
    """A ``SharedMemory`` block whose memory may outlive the object.

    numpy arrays made from ``block.buf`` keep the mapping alive by themselves,
    and the kernel unmaps it when the last of them dies.  So dropping a
    ``Block`` closes its file descriptor, and if arrays still view the memory
    leaves the mapping to them (``SharedMemory.close()`` would raise
    ``BufferError``).
    """

    def __del__(self):
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        try:
            self.close()
        except BufferError:  # arrays still view the memory: they own the mapping now
            pass
        except OSError:
            pass


def _round_up(nbytes: int) -> int:
    return max(PAGE, -(-nbytes // PAGE) * PAGE)


# ----------------------------------------------------------------------------- worker side

class BlockPool:
    """The blocks of one worker process: free ones by size, and those lent to the main process.

    ``prefix`` names this worker's blocks (``<prefix>_<counter>``); the main
    process sweeps that prefix at shutdown.
    """

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.counter = 0
        self.free: dict[int, list[Block]] = {}   # size -> blocks ready for reuse
        self.taken: dict[str, tuple] = {}         # name -> (block, weakref to the array viewing it here)
        self.lent: dict[str, tuple] = {}          # the same, for blocks the main process holds

    def empty(self, shape: tuple, dtype) -> "object":
        """A new course_lib tensor of ``shape`` and ``dtype`` whose storage is a block."""
        from ...._ops.common import contiguous_strides
        from ...._storage import Storage
        from ...._tensor import Tensor

        numel = 1
        for s in shape:
            numel *= s
        block, root = self._take(numel * dtype.itemsize)
        data = root[:numel * dtype.itemsize].view(dtype.np)
        storage = Storage(data, dtype, owner=block)
        return Tensor._make(storage, 0, tuple(shape), contiguous_strides(tuple(shape)), dtype)

    def _take(self, nbytes: int):
        size = _round_up(nbytes)
        self._reclaim()
        free = self.free.get(size)
        if free:
            block = free.pop()
        else:
            name = f"{self.prefix}_{self.counter:x}"
            self.counter += 1
            block = Block(name=name, create=True, size=size)
        root = np.frombuffer(block.buf, dtype=np.uint8, count=size)
        self.taken[block.name] = (block, weakref.ref(root))
        return block, root

    def _reclaim(self) -> None:
        """Blocks taken for a batch that was never sent (an error in collate) go back to free."""
        for name, (block, root) in list(self.taken.items()):
            if root() is None:
                del self.taken[name]
                self.free.setdefault(block.size, []).append(block)

    def lend(self, block: Block) -> None:
        """``block`` is on its way to the main process: it is not ours until given back."""
        entry = self.taken.pop(block.name, None)
        if entry is not None:
            self.lent[block.name] = entry

    def give_back(self, reuse=(), drop=()) -> None:
        """The main process is done with these blocks: keep ``reuse`` for later batches, close ``drop``.

        A block that this process itself still views (its code kept a batch) is
        not refilled until that view dies.
        """
        for name in reuse:
            entry = self.lent.pop(name, None)
            if entry is not None:
                self.taken[name] = entry    # _reclaim frees it once no array here views it
        for name in drop:
            self.lent.pop(name, None)       # Block.__del__ closes it

    def copy_in(self, tensor) -> tuple:
        """Copy ``tensor``'s elements into a fresh block: (block, numel)."""
        numel = tensor.numel()
        block, root = self._take(numel * tensor.dtype.itemsize)
        dst = root[:numel * tensor.dtype.itemsize].view(tensor.dtype.np).reshape(tensor._shape)
        np.copyto(dst, tensor._np())
        return block, numel


_pool: BlockPool | None = None
"""The pool of this process when it is a DataLoader worker that shares memory; else None."""


def empty_shared(shape: tuple, dtype):
    """A tensor in shared memory if this is a worker that shares memory, else None."""
    if _pool is None:
        return None
    return _pool.empty(shape, dtype)


class _WorkerPickler(pickle.Pickler):
    """Pickles a batch with each tensor replaced by a record of where its data lies."""

    def __init__(self, file, pool: BlockPool):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.pool = pool
        self.sent: dict[int, tuple] = {}   # id(storage) -> (block name, block size, numel)

    def persistent_id(self, obj):
        from ...._ops.common import contiguous_strides
        from ...._tensor import Tensor

        if not isinstance(obj, Tensor):
            return None
        if obj.requires_grad and not obj.is_leaf:
            raise RuntimeError(
                "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not "
                "support crossing process boundaries.  If you just want to transfer the data, call detach() "
                "on the tensor before serializing (e.g., putting it on the queue).")
        storage = obj._storage
        where = self.sent.get(id(storage))
        if where is None:
            block = storage._owner
            if isinstance(block, Block) and block.name in self.pool.taken:
                # stacked into shared memory by default_collate: send the whole storage
                self.pool.lend(block)
                where = self.sent[id(storage)] = (block.name, block.size, storage.size())
        if where is not None:
            return ("t", *where, obj.dtype.name, obj._offset, obj._shape, obj._stride, obj.requires_grad)
        # not in shared memory (a custom collate_fn, a dataset's own tensor, ...): copy its elements
        block, numel = self.pool.copy_in(obj)
        self.pool.lend(block)
        return ("t", block.name, block.size, numel, obj.dtype.name,
                0, obj._shape, contiguous_strides(obj._shape), obj.requires_grad)


class SharedBatch:
    """What a worker puts on the result queue for a batch: the pickle, and who made it."""

    __slots__ = ("payload", "worker_id")

    def __init__(self, payload: bytes, worker_id: int):
        self.payload = payload
        self.worker_id = worker_id

    def __reduce__(self):
        return (SharedBatch, (self.payload, self.worker_id))


def dumps(data, pool: BlockPool, worker_id: int) -> SharedBatch:
    buf = io.BytesIO()
    _WorkerPickler(buf, pool).dump(data)
    return SharedBatch(buf.getvalue(), worker_id)


# ----------------------------------------------------------------------------- main side

class BlockCache:
    """The main process's side: blocks it has mapped, by name, and which to give back.

    ``returned`` is filled by finalizers (when the last array viewing a block
    dies, possibly in any thread) and emptied by the iterator, which sends the
    names back to their worker with its next index.
    """

    def __init__(self, keep_free: int):
        self.blocks: dict[str, Block] = {}
        self.returned: deque = deque()            # (worker_id, name, size), appended by finalizers
        self.keep_free = keep_free
        self.free_count: dict[tuple, int] = {}    # (worker_id, size) -> blocks given back, not reused yet
        self.given_back: set = set()

    def loads(self, batch: SharedBatch):
        """Rebuild a batch from its pickle; its tensors view the blocks (no copy)."""
        unpickler = _MainUnpickler(io.BytesIO(batch.payload))
        unpickler.cache, unpickler.worker_id, unpickler.storages = self, batch.worker_id, {}
        return unpickler.load()

    def _map(self, name: str) -> Block:
        block = self.blocks.get(name)
        if block is None:
            block = Block(name=name)   # map it (the resource tracker already knows the name)
            block.unlink()             # the name goes now; the memory stays while mapped
            self.blocks[name] = block
        return block

    def _tensor(self, pid, worker_id: int, storages: dict):
        from ...._dtype import _dtype_by_name
        from ...._storage import Storage
        from ...._tensor import Tensor

        _, name, size, numel, dtype_name, offset, shape, stride, requires_grad = pid
        dtype = _dtype_by_name(dtype_name)
        storage = storages.get(name)
        if storage is None:
            block = self._map(name)
            if name in self.given_back:     # a recycled block came back full
                self.given_back.discard(name)
                self.free_count[(worker_id, size)] -= 1
            root = np.frombuffer(block.buf, dtype=np.uint8, count=size)
            weakref.finalize(root, self.returned.append, (worker_id, name, size))
            data = root[:numel * dtype.itemsize].view(dtype.np)
            storage = storages[name] = Storage(data, dtype, owner=block)
        t = Tensor._make(storage, offset, tuple(shape), tuple(stride), dtype)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def collect_returns(self, num_workers: int) -> list:
        """Per worker, the (reuse, drop) names of blocks the main process no longer views."""
        out = [([], []) for _ in range(num_workers)]
        while self.returned:
            worker_id, name, size = self.returned.popleft()
            if worker_id >= num_workers:
                continue
            key = (worker_id, size)
            if self.free_count.get(key, 0) < self.keep_free:
                self.free_count[key] = self.free_count.get(key, 0) + 1
                self.given_back.add(name)
                out[worker_id][0].append(name)
            else:
                self.blocks.pop(name, None)
                out[worker_id][1].append(name)
        return out

    def close(self) -> None:
        """Forget every mapping (arrays that still view a block keep it mapped)."""
        self.blocks.clear()
        self.returned.clear()


class _MainUnpickler(pickle.Unpickler):
    """Turns each tensor record back into a tensor over a block (see ``BlockCache._tensor``)."""

    def persistent_load(self, pid):
        return self.cache._tensor(pid, self.worker_id, self.storages)


# ----------------------------------------------------------------------------- the pickling strategy

def _rebuild_tensor(array: np.ndarray, requires_grad: bool):
    """The receiving side of :func:`_reduce_tensor`: wrap the freshly unpickled array, no copy."""
    from ...._creation import from_numpy

    t = from_numpy(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t):
    """How a tensor pickles through a ``multiprocessing`` queue: its elements as one contiguous numpy array.

    ``Tensor.__reduce_ex__`` (plain ``pickle``) copies the data first, and
    rebuilds by copying again; between processes the unpickled array is fresh,
    so neither copy is needed.  This is what the ``'pickle'`` sharing strategy
    sends.  (PyTorch registers a reducer here too, in
    ``torch/multiprocessing/reductions.py``; its reducer moves the storage to
    shared memory instead.)
    """
    return _rebuild_tensor, (np.ascontiguousarray(t._np()), t.requires_grad)


def _register_reducer() -> None:
    from multiprocessing.reduction import ForkingPickler

    from ...._tensor import Tensor

    ForkingPickler.register(Tensor, _reduce_tensor)


_register_reducer()


# ----------------------------------------------------------------------------- cleanup

def new_prefix() -> str:
    """A name prefix unique to one iterator of this process (short: macOS allows 31 characters)."""
    return f"cl{os.getpid():x}_{os.urandom(3).hex()}"


def ensure_tracker_running() -> None:
    """Start the resource tracker before forking, so that workers share the main process's tracker."""
    if sys.platform != "win32":
        resource_tracker.ensure_running()


def sweep(prefix: str) -> list:
    """Unlink names starting with ``prefix`` (blocks made but never received). Linux only."""
    if not os.path.isdir(_SHM_DIR):
        return []
    removed = []
    for fname in os.listdir(_SHM_DIR):
        if fname.startswith(prefix + "_"):
            try:
                os.unlink(os.path.join(_SHM_DIR, fname))
            except FileNotFoundError:
                continue
            try:
                # A worker killed between creating a block and registering it leaves a name the tracker
                # never saw, and unregistering that alone makes the tracker print a KeyError: register
                # first (a no-op for a known name), then unregister.
                resource_tracker.register("/" + fname, "shared_memory")
                resource_tracker.unregister("/" + fname, "shared_memory")
            except Exception:  # pragma: no cover - tracker gone at interpreter exit
                pass
            removed.append(fname)
    return removed
