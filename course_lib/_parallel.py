"""Intra-op parallelism: split one kernel's work across a pool of threads.

In PyTorch: ``aten/src/ATen/Parallel.h`` (``at::parallel_for``, ``at::get_num_threads``,
``at::set_num_threads``, ``at::in_parallel_region``) with the OpenMP backend in
``ParallelOpenMP.h``.  A CPU kernel hands ``parallel_for`` a range and a grain size; the range
is cut into chunks and each thread runs the kernel's loop over its chunks.

course_lib's kernels are numpy calls, and numpy releases the GIL while its loops run over large
arrays, so Python threads do run them in parallel.  Two choices differ from ATen, on purpose:

* The range is cut into chunks of a **fixed** size (``grain``), independent of the number of
  threads, and per-chunk partial results are combined in chunk order.  A kernel therefore gives
  bit-for-bit the same result with 1 thread or 8 (ATen cuts into one chunk per thread, so its
  reductions may round differently when the thread count changes).
* A chunk is also a cache block: a kernel that makes several passes over its data makes them
  over one chunk at a time, while the chunk is still in cache.

``get_num_threads()`` starts at the ``OMP_NUM_THREADS`` environment variable if set, otherwise
at the number of CPUs this process may use (torch uses physical cores).  A pool is created on
first use and recreated in a forked child (a DataLoader worker), whose copy of the parent's
threads does not exist.
"""
from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List, TypeVar

__all__ = ["get_num_threads", "set_num_threads", "in_parallel_region", "parallel_chunks"]

T = TypeVar("T")


def _default_threads() -> int:
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


_num_threads = _default_threads()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_lock = threading.Lock()
_local = threading.local()


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism (like ``torch.get_num_threads``)."""
    return _num_threads


def set_num_threads(n: int) -> None:
    """Set the number of threads used for intra-op parallelism (like ``torch.set_num_threads``)."""
    global _num_threads
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _num_threads = n


def in_parallel_region() -> bool:
    """True inside a chunk run by ``parallel_chunks`` (nested calls then run inline)."""
    return getattr(_local, "active", False)


def _get_pool(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size != n:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="course_lib-intraop")
            _pool_size = n
        return _pool


def _reset_after_fork() -> None:
    global _pool, _pool_size, _lock
    _pool = None
    _pool_size = 0
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _worker(fn: Callable[[int, int], T], bounds: List[tuple], results: list, counter) -> None:
    """Take chunks from the shared counter until none are left (dynamic scheduling)."""
    _local.active = True
    try:
        n = len(bounds)
        while True:
            i = next(counter)            # itertools.count: atomic under the GIL
            if i >= n:
                return
            b, e = bounds[i]
            results[i] = fn(b, e)
    finally:
        _local.active = False


def parallel_chunks(n: int, grain: int, fn: Callable[[int, int], T]) -> List[T]:
    """Run ``fn(begin, end)`` over ``[0, n)`` cut into chunks of ``grain`` items; results in chunk order.

    The chunks are taken one at a time by ``get_num_threads()`` threads (the calling thread is one
    of them), so a thread that finishes early takes more.  With one thread, one chunk, or when
    called from inside another ``parallel_chunks``, everything runs inline on the calling thread.
    An exception in any chunk is re-raised here.
    """
    if n <= 0:
        return []
    grain = max(1, int(grain))
    bounds = [(b, min(b + grain, n)) for b in range(0, n, grain)]
    threads = min(_num_threads, len(bounds))
    results: list = [None] * len(bounds)
    counter = itertools.count()
    if in_parallel_region():                     # nested: inline, already marked
        return [fn(b, e) for b, e in bounds]
    if threads <= 1:
        _worker(fn, bounds, results, counter)    # inline on this thread
        return results
    pool = _get_pool(threads - 1)                # the calling thread is one of the workers
    futures = [pool.submit(_worker, fn, bounds, results, counter) for _ in range(threads - 1)]
    error = None
    try:
        _worker(fn, bounds, results, counter)
    except BaseException as exc:                 # still wait for the others before raising
        error = exc
        for _ in range(len(bounds)):             # let the other threads run out of chunks quickly
            next(counter)
    for f in futures:
        try:
            f.result()
        except BaseException as exc:
            if error is None:
                error = exc
    if error is not None:
        raise error
    return results


_COPY_MIN = 1 << 20          # elements; below this one thread copies faster than two
_COPY_GRAIN = 1 << 18


def parallel_copy(src, dtype=None):
    """``np.array(src, dtype, order="C")``, with large copies split across the intra-op threads.

    One core cannot saturate the memory bus on a copy; PyTorch's copy kernel is parallel too.
    Casts (NaN to int, say) are done without floating-point warnings, as ``tensor()`` does.
    """
    import numpy as np

    dtype = src.dtype if dtype is None else np.dtype(dtype)
    n0 = src.shape[0] if src.ndim else 0
    if _num_threads <= 1 or src.size < _COPY_MIN or n0 < 2 or in_parallel_region():
        return np.array(src, dtype=dtype, order="C")
    out = np.empty(src.shape, dtype)
    row = src.size // n0

    def chunk(b, e):
        with np.errstate(all="ignore"):          # numpy's error state is per thread
            np.copyto(out[b:e], src[b:e], casting="unsafe")

    parallel_chunks(n0, max(1, _COPY_GRAIN // max(1, row)), chunk)
    return out
