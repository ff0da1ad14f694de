"""``torch.cuda`` as a CPU-only build of PyTorch answers it: no CUDA device, ever.

Tutorials start with ``device = "cuda" if torch.cuda.is_available() else "cpu"``; here that picks "cpu".
The calls that need a device raise what a CPU build of PyTorch raises.
"""
from __future__ import annotations

__all__ = ["is_available", "device_count", "is_initialized", "current_device", "synchronize", "manual_seed",
           "manual_seed_all", "empty_cache", "get_device_name", "memory_allocated", "max_memory_allocated",
           "memory_reserved"]


def _not_compiled() -> AssertionError:
    return AssertionError("Torch not compiled with CUDA enabled")


def is_available() -> bool:
    """False: course_lib runs on the CPU only."""
    return False


def device_count() -> int:
    """0 CUDA devices."""
    return 0


def is_initialized() -> bool:
    return False


def current_device() -> int:
    raise _not_compiled()


def synchronize(device=None) -> None:
    raise _not_compiled()


def get_device_name(device=None) -> str:
    raise _not_compiled()


def manual_seed(seed: int) -> None:
    """Silently ignored without CUDA, as in PyTorch."""


def manual_seed_all(seed: int) -> None:
    """Silently ignored without CUDA, as in PyTorch."""


def empty_cache() -> None:
    """Nothing to free without CUDA."""


def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0
