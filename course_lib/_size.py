"""``Size``: the shape of a tensor, a tuple of ints (``torch.Size``)."""
from __future__ import annotations

__all__ = ["Size"]


class Size(tuple):
    """A tuple subclass for shapes: ``Size([2, 3])``, with ``numel()``."""

    __slots__ = ()

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"course_lib.Size({list(self)!r})"

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __reduce__(self):
        return (Size, (tuple(self),))
