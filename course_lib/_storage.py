"""Storage: the flat, typed buffer behind every tensor.

In PyTorch: ``c10/core/StorageImpl.h`` (the buffer, its size in bytes and its
allocator) and ``torch/storage.py`` (``UntypedStorage``/``TypedStorage``).

A ``Storage`` owns one 1-D numpy array.  Tensors are *views* of it: each tensor
adds (storage_offset, shape, stride) on top.  Many tensors may share one storage;
writing through any of them changes what all of them read.

On the ``'meta'`` device a storage has no data at all, only a size: this is what
shape-only ("fake") tensors run on.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from . import _dtype
from . import memory as _memory

_mem_state = _memory._state  # [current bytes, peak bytes, number of allocations]

__all__ = ["Storage", "UntypedStorage"]


# glibc's malloc serves requests of 128 KiB and more with fresh mmap()ed pages and gives them back
# to the system on free (and trims the heap above 128 KiB of free space).  A training step
# allocates and frees the same large activations and gradients every time, so each step then pays
# for munmap, mmap and a page fault on every 4 KiB page it writes: 360 page faults per MLP step,
# a third of its time, and half the time of a convolution's forward and backward.  glibc raises
# both thresholds by itself once a large block has been freed (importing torch does that, so torch
# never pays); course_lib sets them at import, as PyTorch's CPU tuning guide suggests
# (use an allocator that keeps memory), unless the user has chosen malloc settings.
_MMAP_THRESHOLD = 32 << 20   # blocks below 32 MiB come from the heap and are reused
_TRIM_THRESHOLD = 64 << 20   # up to 64 MiB of free heap is kept for the next step


def _tune_malloc() -> bool:
    """Keep freed blocks below 32 MiB for reuse (glibc only; True if set)."""
    if not sys.platform.startswith("linux"):
        return False
    if any(k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES",
                                     "COURSE_LIB_DEFAULT_MALLOC")):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (glibc, not musl)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(mallopt(m_mmap_threshold, _MMAP_THRESHOLD)) and bool(mallopt(m_trim_threshold, _TRIM_THRESHOLD))


_malloc_tuned = _tune_malloc()


class Storage:
    """A flat buffer of ``size`` elements of one dtype on one device.

    ``data`` is the numpy array (1-D, contiguous) or ``None`` on the meta device.
    ``_owner`` keeps alive whatever really owns the memory (a shared-memory block,
    a memory-mapped file, ...).
    """

    __slots__ = ("data", "dtype", "device", "_size", "_nbytes", "_owner", "__weakref__")

    def __init__(self, data: np.ndarray | None, dtype: _dtype.dtype, device: str = "cpu",
                 size: int | None = None, owner=None):
        self.data = data
        self.dtype = dtype
        self.device = device
        self._owner = owner
        if data is None:
            self._size = size
            self._nbytes = size * dtype.itemsize
        else:
            # memory accounting, inlined (this runs for every op result)
            self._size = n = data.shape[0]
            self._nbytes = nb = n * dtype.itemsize
            if owner is None:
                st = _mem_state
                st[0] += nb
                st[2] += 1
                if st[0] > st[1]:
                    st[1] = st[0]

    def __del__(self):
        if self._owner is None and self.data is not None:
            try:
                _mem_state[0] -= self._nbytes
            except Exception:  # interpreter shutdown
                pass

    # -- construction -------------------------------------------------------
    @classmethod
    def empty(cls, size: int, dtype: _dtype.dtype, device: str = "cpu") -> "Storage":
        if device == "meta":
            return cls(None, dtype, "meta", size=size)
        return cls(np.empty(size, dtype=dtype.np), dtype)

    # -- queries --------------------------------------------------------------
    def size(self) -> int:
        """Number of elements."""
        return self._size

    def __len__(self) -> int:
        return self._size

    def nbytes(self) -> int:
        """Size of the buffer in bytes."""
        return self._nbytes

    def element_size(self) -> int:
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        """Address of the first byte (0 on the meta device)."""
        if self.data is None:
            return 0
        return self.data.__array_interface__["data"][0]

    @property
    def is_meta(self) -> bool:
        return self.device == "meta"

    def untyped(self) -> "UntypedStorage":
        return UntypedStorage(self)

    def tolist(self) -> list:
        return self.data.tolist()

    def __repr__(self) -> str:
        if self.data is None:
            return f"Storage(device='meta', dtype={self.dtype}, size={self._size})"
        body = " ".join(repr(v) for v in self.data[:20].tolist())
        more = " ..." if self._size > 20 else ""
        return f"[{body}{more}]\n[course_lib.Storage(dtype={self.dtype}, size={self._size})]"


class UntypedStorage:
    """The bytes of a storage, as ``tensor.untyped_storage()`` returns them.

    It shares memory with the typed storage; indexing gives single bytes (0..255).
    """

    __slots__ = ("_typed",)

    def __init__(self, typed: Storage):
        self._typed = typed

    def nbytes(self) -> int:
        return self._typed.nbytes()

    def size(self) -> int:
        return self._typed.nbytes()

    def __len__(self) -> int:
        return self._typed.nbytes()

    def data_ptr(self) -> int:
        return self._typed.data_ptr()

    @property
    def device(self):
        from ._device import device
        return device(self._typed.device)

    def numpy(self) -> np.ndarray:
        """The bytes as a uint8 numpy array sharing memory."""
        if self._typed.data is None:
            raise RuntimeError("Cannot access data of a storage on the meta device")
        return self._typed.data.view(np.uint8)

    def __getitem__(self, i):
        return self.numpy()[i].tolist()

    def __eq__(self, other):
        return isinstance(other, UntypedStorage) and other._typed is self._typed

    def __hash__(self):
        return id(self._typed)

    def __repr__(self) -> str:
        return f"course_lib.UntypedStorage(nbytes={self.nbytes()}, device='{self._typed.device}')"
