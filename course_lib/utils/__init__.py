"""course_lib.utils: helpers beside the core (``torch.utils``).

Only ``_python_dispatch`` is imported eagerly.  ``utils.data`` and ``utils.checkpoint`` are imported on first
use, so ``course_lib.utils.data.DataLoader`` works after a bare ``import course_lib`` (as
``torch.utils.data`` does after ``import torch``) without ``import course_lib`` paying for multiprocessing.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from ._python_dispatch import LoggingMode, TorchDispatchMode  # noqa: F401

__all__ = ["TorchDispatchMode", "LoggingMode"]

_LAZY_SUBMODULES = ("data", "checkpoint")


def __getattr__(name: str) -> ModuleType:
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
