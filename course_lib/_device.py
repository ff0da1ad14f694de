"""Devices: where a tensor's data lives.

In PyTorch: ``c10/core/Device.h``.  course_lib has two: ``'cpu'`` (numpy arrays)
and ``'meta'`` (no data at all: only shapes and dtypes, used for shape
propagation and by the compiler's fake tensors).
"""
from __future__ import annotations

from ._dtype import readonly_attribute_message

__all__ = ["device"]

_TYPES = ("cpu", "meta")


class device:
    """``device('cpu')`` or ``device('meta')``; compares equal to its type string."""

    __slots__ = ("type", "index")

    def __new__(cls, type_or_device="cpu", index=None):
        if isinstance(type_or_device, device):
            return type_or_device
        if index is not None:
            if type(index) is not int:
                raise TypeError(f"device(): argument 'index' (position 2) must be int, not {type(index).__name__}")
            if index < 0:
                raise RuntimeError("Device index must not be negative")
        t = str(type_or_device)
        if ":" in t:
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was passed "
                                   f"explicitly: {type_or_device}")
            t, _, idx = t.partition(":")
            index = int(idx)
        if t not in _TYPES:
            raise RuntimeError(
                f"Expected one of cpu, meta device type at start of device string: {type_or_device}")
        cached = _CACHE.get((t, index))
        if cached is not None:
            return cached
        self = object.__new__(cls)
        object.__setattr__(self, "type", t)
        object.__setattr__(self, "index", index)
        _CACHE[(t, index)] = self
        return self

    # ``device('cpu')`` is one shared object, so devices are immutable, as PyTorch's are:
    # changing one would move every tensor and every later ``zeros(2, device='cpu')``.
    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(readonly_attribute_message("course_lib.device", type(self), name))

    def __delattr__(self, name: str) -> None:
        raise AttributeError(readonly_attribute_message("course_lib.device", type(self), name))

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
