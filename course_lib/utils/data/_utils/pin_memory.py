"""Pinned memory: the DataLoader's ``pin_memory=True`` is a no-op with a note; pinning a tensor is refused.

In PyTorch: ``torch/utils/data/_utils/pin_memory.py`` runs a thread that copies
each batch into page-locked ("pinned") host memory, from which a GPU can copy
asynchronously.  course_lib has no GPU, so, as PyTorch built for the CPU only,
``DataLoader(pin_memory=True)`` produces a one-time note and returns batches as they
are, and ``pin_memory(batch)`` (``Tensor.pin_memory()`` on every tensor in it) raises.
"""
from __future__ import annotations

import collections.abc
import copy
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
    """Pin every tensor in ``data`` (nested mappings, namedtuples, tuples and sequences), as PyTorch's does:
    ``Tensor.pin_memory()``, which course_lib (no accelerator) refuses with PyTorch's CPU-only error."""
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: pin_memory(sample, device) for k, sample in data.items()})
                return clone
            return type(data)({k: pin_memory(sample, device) for k, sample in data.items()})
        except TypeError:
            return {k: pin_memory(sample, device) for k, sample in data.items()}
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):  # namedtuple
            return type(data)(*(pin_memory(sample, device) for sample in data))
        return type(data)(pin_memory(sample, device) for sample in data)
    if isinstance(data, collections.abc.Sequence):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, item in enumerate(data):
                    clone[i] = pin_memory(item, device)
                return clone
            return type(data)([pin_memory(sample, device) for sample in data])
        except TypeError:
            return [pin_memory(sample, device) for sample in data]
    return data
