"""Counting the bytes that tensor storages hold.

PyTorch keeps these numbers per GPU in its caching allocator
(``c10/cuda/CUDACachingAllocator.cpp``; read them with
``torch.cuda.memory_allocated()`` and ``torch.cuda.max_memory_allocated()``).
course_lib counts every CPU storage it allocates, so the same questions can be
asked on a laptop: how many bytes do my activations hold, and what was the peak?

Storages that wrap memory owned by something else (shared memory from a
DataLoader worker, a memory-mapped file) are not counted.
"""
from __future__ import annotations

__all__ = ["memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "memory_stats"]

_state = [0, 0, 0]  # current bytes, peak bytes, number of allocations


def _allocated(nbytes: int) -> None:
    s = _state
    s[0] += nbytes
    s[2] += 1
    if s[0] > s[1]:
        s[1] = s[0]


def _freed(nbytes: int) -> None:
    _state[0] -= nbytes


def memory_allocated() -> int:
    """Bytes currently held by live course_lib storages."""
    return _state[0]


def max_memory_allocated() -> int:
    """The highest value ``memory_allocated()`` has had since the last reset."""
    return _state[1]


def reset_peak_memory_stats() -> None:
    """Start measuring the peak again from the current value."""
    _state[1] = _state[0]


def memory_stats() -> dict:
    return {"allocated_bytes.current": _state[0], "allocated_bytes.peak": _state[1],
            "num_alloc": _state[2]}
