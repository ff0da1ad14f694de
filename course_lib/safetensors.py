"""The safetensors format, written by hand from its published specification.

safetensors (Hugging Face) stores a flat dict of named tensors with no pickle at all, so
loading one can never run code.  A file is:

    8 bytes      N, the size of the header: an unsigned 64-bit little-endian integer
    N bytes      the header: UTF-8 JSON, padded with spaces to a multiple of 8 bytes
                 {"__metadata__": {"format": "pt"},                      (optional, str -> str)
                  "weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}, ...}
    the rest     the byte buffer: each tensor's bytes, little-endian, row-major, at
                 [begin, end) counted from the start of the buffer

The tensors cover the buffer exactly, in order, without holes or overlaps.  Tensors are
written sorted by dtype (larger elements first, so that each stays aligned) and then by
name, as the reference implementation does.

Compared with ``course_lib.save``: no views (tensors that share memory are refused, and
non-contiguous ones must be made contiguous first), no nesting, no Python objects; in
exchange the header is plain JSON that any language can read, and a reader only has to
check numbers, not run a program.

In the reference implementation (``safetensors``, Rust with Python bindings):
``safetensors/src/tensor.rs`` (``serialize``, ``SafeTensors::deserialize``,
``Metadata::validate``) and ``bindings/python/py_src/safetensors/torch.py``.

>>> data = save({"w": course_lib.ones(2, 2)}, metadata={"format": "pt"})
>>> load(data)["w"].shape
course_lib.Size([2, 2])
"""
from __future__ import annotations

import json
import os
import struct
from typing import Union

import numpy as np

from . import _dtype
from ._storage import Storage
from ._tensor import Tensor

__all__ = ["save", "save_file", "load", "load_file", "SafetensorError", "MAX_HEADER_SIZE"]

MAX_HEADER_SIZE = 100_000_000  # the reference implementation refuses bigger headers (a 10-byte file could claim 2^64)

# safetensors dtype names, in the reference implementation's order (the sort key when writing)
_ORDER = ["BOOL", "U8", "I8", "I16", "F16", "I32", "F32", "F64", "I64"]
_NAMES = {_dtype.bool_: "BOOL", _dtype.uint8: "U8", _dtype.int8: "I8", _dtype.int16: "I16", _dtype.float16: "F16",
          _dtype.int32: "I32", _dtype.float32: "F32", _dtype.float64: "F64", _dtype.int64: "I64"}
_DTYPES = {v: k for k, v in _NAMES.items()}
_OTHERS = {"BF16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64"}

PathLike = Union[str, os.PathLike]


class SafetensorError(Exception):
    """A file that is not valid safetensors (or a dtype course_lib does not have)."""


# ------------------------------------------------------------------ writing


def _check_shared(tensors: dict[str, Tensor]) -> None:
    by_storage: dict[int, list[str]] = {}
    for name, t in tensors.items():
        if t.numel() > 0:
            by_storage.setdefault(id(t._storage), []).append(name)
    shared = [names for names in by_storage.values() if len(names) > 1]
    if shared:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and potential differences "
            f"when loading them again: {shared}. Save only one tensor per storage (safetensors has no views), "
            "or .clone() the others.")


def _header_and_buffers(tensors: dict[str, Tensor], metadata: dict[str, str] | None):
    if not isinstance(tensors, dict):
        raise TypeError(f"expected a dict of tensors, got {type(tensors).__name__}")
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, got {name!r}")
        if not isinstance(t, Tensor):
            raise TypeError(f"{name!r} is a {type(t).__name__}, not a course_lib Tensor")
        if t._storage.data is None:
            raise ValueError(f"{name!r} is on the meta device: it has no data to save")
        if not t.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. It either means "
                "you are trying to save tensors which are reference of each other in which case it's recommended to "
                "save only the full tensors, and reslice at load time, or simply call `.contiguous()` on your "
                "tensor to pack it before saving.")
    _check_shared(tensors)
    if metadata is not None and (not isinstance(metadata, dict)
                                 or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("metadata must be a dict of str to str")
    if "__metadata__" in tensors:
        raise ValueError("'__metadata__' is reserved: it cannot be a tensor name")
    order = sorted(tensors, key=lambda n: (-_ORDER.index(_NAMES[tensors[n].dtype]), n))
    header: dict = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    buffers, offset = [], 0
    for name in order:
        t = tensors[name]
        a = t._np()
        if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and np.little_endian is False):
            a = a.astype(a.dtype.newbyteorder("<"))
        raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        header[name] = {"dtype": _NAMES[t.dtype], "shape": [int(s) for s in t.shape],
                        "data_offsets": [offset, offset + raw.nbytes]}
        buffers.append(raw)
        offset += raw.nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, buffers


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors bytes of ``tensors`` (a dict name -> contiguous tensor), with optional str metadata."""
    head, buffers = _header_and_buffers(tensors, metadata)
    return head + b"".join(memoryview(b) for b in buffers)


def save_file(tensors: dict[str, Tensor], filename: PathLike, metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` to ``filename`` in the safetensors format (atomically, like ``course_lib.save``)."""
    from .serialization import _atomic_write

    head, buffers = _header_and_buffers(tensors, metadata)

    def write(f):
        f.write(head)
        for b in buffers:
            f.write(memoryview(b))

    _atomic_write(filename, write)


# ------------------------------------------------------------------ reading


def _no_duplicates(pairs):
    seen: dict = {}
    for k, v in pairs:
        if k in seen:
            raise SafetensorError(f"Error while deserializing header: duplicate key {k!r}")
        seen[k] = v
    return seen


def _parse_header(data: bytes | memoryview) -> tuple[dict, dict, int]:
    """(metadata, {name: (dtype, shape, begin, end)}, where the buffer starts), every number checked."""
    if len(data) < 8:
        raise SafetensorError("Error while deserializing header: HeaderTooSmall (the file has fewer than 8 bytes)")
    (n,) = struct.unpack("<Q", bytes(data[:8]))
    if n > MAX_HEADER_SIZE:
        raise SafetensorError(f"Error while deserializing header: HeaderTooLarge ({n} bytes)")
    if 8 + n > len(data):
        raise SafetensorError(f"Error while deserializing header: InvalidHeaderLength (the header claims {n} bytes, "
                              f"the file has {len(data) - 8} after the size)")
    raw = bytes(data[8:8 + n])
    if not raw.startswith(b"{"):
        raise SafetensorError("Error while deserializing header: InvalidHeaderStart (the header must start with '{')")
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except SafetensorError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise SafetensorError(f"Error while deserializing header: InvalidHeaderDeserialization ({e})") from None
    if not isinstance(header, dict):
        raise SafetensorError("Error while deserializing header: the header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorError("Error while deserializing header: __metadata__ must map strings to strings")
    entries = {}
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorError(f"Error while deserializing header: tensor {name!r} needs exactly dtype, shape "
                                  "and data_offsets")
        dtype_name, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype_name in _OTHERS:
            raise SafetensorError(f"tensor {name!r} has dtype {dtype_name}, which course_lib does not have")
        if dtype_name not in _DTYPES:
            raise SafetensorError(f"Error while deserializing header: tensor {name!r} has an unknown dtype "
                                  f"{dtype_name!r:.40}")
        ints = lambda v: isinstance(v, list) and all(type(x) is int and x >= 0 for x in v)  # noqa: E731
        if not ints(shape) or not ints(offsets) or len(offsets) != 2 or offsets[0] > offsets[1]:
            raise SafetensorError(f"Error while deserializing header: tensor {name!r} has an invalid shape or "
                                  "data_offsets")
        dtype = _DTYPES[dtype_name]
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if offsets[1] - offsets[0] != nbytes:
            raise SafetensorError(f"Error while deserializing header: TensorInvalidInfo: tensor {name!r} of shape "
                                  f"{shape} and dtype {dtype_name} needs {nbytes} bytes, its data_offsets span "
                                  f"{offsets[1] - offsets[0]}")
        entries[name] = (dtype, tuple(shape), offsets[0], offsets[1])
    start = 8 + n
    end = 0
    for name, (_, _, b, e) in sorted(entries.items(), key=lambda kv: (kv[1][2], kv[1][3])):
        if b != end:
            raise SafetensorError(f"Error while deserializing header: InvalidOffset({name!r}): the tensors must "
                                  "cover the buffer in order, without holes or overlaps")
        end = e
    if start + end != len(data):
        raise SafetensorError(f"Error while deserializing header: MetadataIncompleteBuffer (the tensors cover "
                              f"{end} bytes, the buffer has {len(data) - start})")
    return metadata, entries, start


def _tensors(data, entries: dict, start: int, device: str) -> dict[str, Tensor]:
    out = {}
    for name, (dtype, shape, b, e) in entries.items():
        numel = (e - b) // dtype.itemsize
        stride = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
        if device == "meta":
            storage = Storage(None, dtype, "meta", size=numel)
        else:
            arr = np.frombuffer(data, dtype=dtype.np.newbyteorder("<"), count=numel, offset=start + b)
            storage = Storage(arr.astype(dtype.np), dtype)  # a copy: native order, writable, its own memory
        out[name] = Tensor._make(storage, 0, shape, stride, dtype)
    return out


def load(data: bytes) -> dict[str, Tensor]:
    """The tensors of safetensors ``data`` (bytes), in the file's order."""
    _, entries, start = _parse_header(data)
    return _tensors(data, entries, start, "cpu")


def load_file(filename: PathLike, device: str = "cpu") -> dict[str, Tensor]:
    """The tensors of a safetensors file; ``device='meta'`` gives shapes and dtypes without data."""
    if str(device) not in ("cpu", "meta"):
        raise RuntimeError(f"course_lib has only the 'cpu' and 'meta' devices, not {device!r}")
    with open(filename, "rb") as f:
        data = f.read()
    _, entries, start = _parse_header(data)
    return _tensors(data, entries, start, str(device))
