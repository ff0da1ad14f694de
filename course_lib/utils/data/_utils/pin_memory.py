"""Pinned memory: accepted, and a no-op.

In PyTorch: ``torch/utils/data/_utils/pin_memory.py`` runs a thread that copies
each batch into page-locked ("pinned") host memory, from which a GPU can copy
asynchronously.  course_lib has no GPU, so ``pin_memory=True`` only produces a
one-time note and batches are returned as they are.
"""
from __future__ import annotations

import warnings

_noted = [False]

MESSAGE = ("'pin_memory' argument is set as true but no accelerator is found, then device pinned memory "
           "won't be used. (Pinned memory only speeds up copies from the CPU to a GPU; course_lib runs on "
           "the CPU.)")


def note_once() -> None:
    if not _noted[0]:
        _noted[0] = True
        warnings.warn(MESSAGE, UserWarning, stacklevel=4)


def pin_memory(data, device=None):
    """PyTorch copies ``data`` to pinned memory here; course_lib returns it unchanged."""
    return data
