"""``torch.backends.mps`` (Apple GPUs) of a CPU-only build: neither built nor available."""
from __future__ import annotations


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
