"""Devices: where a tensor's data lives.

In PyTorch: ``c10/core/Device.h``.  course_lib has two: ``'cpu'`` (numpy arrays)
and ``'meta'`` (no data at all: only shapes and dtypes, used for shape
propagation and by the compiler's fake tensors).
"""
from __future__ import annotations

__all__ = ["device"]

_TYPES = ("cpu", "meta")


class device:
    """``device('cpu')`` or ``device('meta')``; compares equal to its type string."""

    __slots__ = ("type", "index")

    def __new__(cls, type_or_device="cpu", index=None):
        if isinstance(type_or_device, device):
            return type_or_device
        t = str(type_or_device)
        if ":" in t:
            t, _, idx = t.partition(":")
            index = int(idx)
        if t not in _TYPES:
            raise RuntimeError(
                f"Expected one of cpu, meta device type at start of device string: {type_or_device}")
        cached = _CACHE.get((t, index))
        if cached is not None:
            return cached
        self = object.__new__(cls)
        self.type = t
        self.index = index
        _CACHE[(t, index)] = self
        return self

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and other.type == self.type and other.index == self.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (str(self),))


_CACHE: dict = {}
