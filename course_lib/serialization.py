"""``save`` and ``load``: tensors to files and back, in PyTorch's own file format.

In PyTorch: ``torch/serialization.py`` (``save``, ``load``, ``_save``, ``_load``),
``torch/_utils.py`` (``_rebuild_tensor_v2`` and friends, which rebuild tensors
while unpickling), ``torch/_weights_only_unpickler.py`` (the safe loader, here
``course_lib/_weights_only_unpickler.py``) and ``caffe2/serialize/inline_container.cc``
(``PyTorchStreamWriter``/``PyTorchStreamReader``, the zip writer and reader).

A file written by ``save(obj, "model.pt")`` is a zip archive (every record stored,
not compressed) whose records sit in one folder named after the file::

    model/data.pkl                 the object, pickled with protocol 2; no tensor data in it
    model/.format_version          "1"
    model/.storage_alignment       "64": each storage's bytes start at a multiple of 64
    model/byteorder                "little"
    model/data/0, model/data/1 ... the raw bytes of each storage, written once
    model/version                  "3\\n" (PyTorch refuses a file without it)
    model/.data/serialization_id   an id for the file

In ``data.pkl`` a tensor is a call ``torch._utils._rebuild_tensor_v2(storage, offset,
size, stride, requires_grad, OrderedDict())``, and the storage is not pickled: it
is a *persistent id* ``('storage', torch.FloatStorage, '0', 'cpu', numel)`` naming
the record ``data/0``.  Tensors that share a storage (a tensor and its views) name
the same record, so the bytes are written once and the views share memory again
after loading.  The pickle uses PyTorch's names (``torch.FloatStorage``,
``torch._utils._rebuild_tensor_v2``), so real ``torch.load(f, weights_only=True)``
reads course_lib's files and course_lib reads PyTorch's.

``load`` is safe by default: ``weights_only=True`` runs the pickle in a restricted
unpickler that only knows tensors, containers and a short allowlist.
``weights_only=False`` uses Python's full pickle, which can run arbitrary code:
only for files you trust.

Where course_lib differs from PyTorch (deliberately):

- ``save`` to a path is atomic: it writes a temporary file ``.NAME.<pid>-<hex>.tmp``
  in the same folder, fsyncs it and renames it over the target, so a crash or an
  exception never leaves a half-written checkpoint (PyTorch writes in place).  A
  process killed mid-save leaves its temporary file behind; the next save of the same
  path removes it (never one a running save is still writing).
- ``load`` turns any corrupted or truncated file into a ``RuntimeError`` or
  ``pickle.UnpicklingError`` that names the problem.  It checks the CRC-32 of ``data.pkl``
  and the small records always, and of every storage when ``CHECK_CRC32`` is set (off by
  default: PyTorch does not check either, and it costs about a third of a load).  Legacy
  (pre-1.6, non-zip) files are not read.
- Tensor subclasses are saved as plain tensors and Python attributes set on tensors
  are not saved (they are read from PyTorch files, though).  Gradients are never saved,
  as in PyTorch.
- dtypes course_lib does not have (bfloat16, complex, quantized, ...) raise a
  ``RuntimeError`` saying so; the devices are ``'cpu'`` and ``'meta'`` only.
- Error messages say ``course_lib.load`` / ``course_lib.serialization`` where
  PyTorch's say ``torch.load`` / ``torch.serialization``, and carry no terminal colours.
"""
from __future__ import annotations

import hashlib
import io
import mmap as _mmap
import os
import pickle
import re
import secrets
import shutil
import stat
import struct
import sys
import threading
import zipfile
import zlib
from collections import OrderedDict
from typing import IO, Any, Callable, Union

try:
    import fcntl as _fcntl
except ImportError:  # Windows
    _fcntl = None

import numpy as np

from . import _dtype as D
from . import _weights_only_unpickler
from ._device import device as _device_cls
from ._size import Size
from ._storage import Storage
from ._tensor import Tensor
from ._utils import (_load_state, _rebuild_from_type_v2, _rebuild_meta_tensor_no_storage, _rebuild_parameter,
                     _rebuild_parameter_with_state, _rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3)
from ._weights_only_unpickler import (add_safe_globals, clear_safe_globals, get_safe_globals,  # noqa: F401
                                      safe_globals)
from ._weights_only_unpickler import shown as _shown

__all__ = [
    "save", "load", "add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals",
    "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL", "STORAGE_ALIGNMENT",
]

DEFAULT_PROTOCOL = 2
STORAGE_ALIGNMENT = 64
FILE_FORMAT_VERSION = 3           # what `version` holds ("3\n"), as torch.save writes it
MAX_SUPPORTED_FILE_FORMAT_VERSION = 10  # kMaxSupportedFileFormatVersion in caffe2/serialize/versions.h

#: Set to True and ``load`` checks the CRC-32 of every storage too, so a corrupted checkpoint fails
#: loudly instead of loading wrong numbers.  Off by default, as in torch.load: it costs about a third
#: of an eager load's time when the file is in the page cache.  (``data.pkl`` and records under
#: 1 MiB are always checked; mmap loads never read the data, so never check it.)
CHECK_CRC32 = False

FileLike = Union[str, os.PathLike, IO[bytes]]
MapLocation = Union[None, str, _device_cls, dict, Callable[[Storage, str], Union[Storage, None]]]

UNSAFE_MESSAGE = (
    "Re-running `course_lib.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a trusted source."
)
DOCS_MESSAGE = (
    "\n\nCheck the documentation of course_lib.load (help(course_lib.load)) to learn more about types "
    "accepted by default with weights_only."
)


# =============================================================================================
# PyTorch's names, course_lib's objects
# =============================================================================================
class _StorageType:
    """What ``torch.FloatStorage`` & co. stand for in a pickle: a storage dtype (``StorageType`` in torch)."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype: D.dtype):
        self.name = name
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"StorageType(dtype={self.dtype})"


class _TorchGlobal:
    """A name in the ``torch`` namespace, written into a pickle as ``GLOBAL module name``.

    course_lib cannot import ``torch`` to let pickle find ``torch._utils._rebuild_tensor_v2``,
    so its pickler writes these names itself (see ``_Pickler``).
    """

    __slots__ = ("module", "name", "__name__")

    def __init__(self, module: str, name: str):
        self.module = module
        self.name = name
        self.__name__ = name

    def __call__(self, *args, **kwargs):  # pickle's save_reduce insists on a callable
        raise TypeError(f"{self} only names a PyTorch function in a pickle; it cannot be called")

    def __repr__(self) -> str:
        return f"<{self.module}.{self.name}>"


_G_REBUILD_TENSOR_V2 = _TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_G_REBUILD_PARAMETER = _TorchGlobal("torch._utils", "_rebuild_parameter")
_G_REBUILD_META = _TorchGlobal("torch._utils", "_rebuild_meta_tensor_no_storage")
_G_DEVICE = _TorchGlobal("torch", "device")
_G_SIZE = _TorchGlobal("torch", "Size")
_G_STORAGE = {d: _TorchGlobal("torch", d._storage_name) for d in D.ALL_DTYPES}
_G_DTYPE = {d: _TorchGlobal("torch", d.name) for d in D.ALL_DTYPES}

#: Every global torch.load(weights_only=True) allows (torch 2.13.0, ``_get_allowed_globals()``),
#: besides the builtins and collections ones.  The ones course_lib can build are in
#: ``_torch_globals()``; the others get a "course_lib cannot load" error, not "unsafe".
_TORCH_ALLOWED = frozenset("""
torch.BFloat16Storage torch.BFloat16Tensor torch.BoolStorage torch.BoolTensor torch.ByteStorage torch.ByteTensor
torch.CharStorage torch.CharTensor torch.ComplexDoubleStorage torch.ComplexFloatStorage torch.DoubleStorage
torch.DoubleTensor torch.FloatStorage torch.FloatTensor torch.HalfStorage torch.HalfTensor torch.IntStorage
torch.IntTensor torch.LongStorage torch.LongTensor torch.QInt32Storage torch.QInt8Storage torch.QUInt2x4Storage
torch.QUInt4x2Storage torch.QUInt8Storage torch.ShortStorage torch.ShortTensor torch.Size torch.Tensor
torch._tensor._rebuild_from_type_v2 torch._utils._rebuild_device_tensor_from_cpu_tensor
torch._utils._rebuild_device_tensor_from_numpy torch._utils._rebuild_meta_tensor_no_storage
torch._utils._rebuild_nested_tensor torch._utils._rebuild_parameter torch._utils._rebuild_parameter_with_state
torch._utils._rebuild_qtensor torch._utils._rebuild_sparse_tensor torch._utils._rebuild_tensor
torch._utils._rebuild_tensor_v2 torch._utils._rebuild_tensor_v3 torch._utils._rebuild_wrapper_subclass
torch.bfloat16 torch.bits16 torch.bits1x8 torch.bits2x4 torch.bits4x2 torch.bits8 torch.bool torch.complex128
torch.complex32 torch.complex64 torch.cuda.BFloat16Storage torch.cuda.BFloat16Tensor torch.cuda.BoolStorage
torch.cuda.BoolTensor torch.cuda.ByteStorage torch.cuda.ByteTensor torch.cuda.CharStorage torch.cuda.CharTensor
torch.cuda.ComplexDoubleStorage torch.cuda.ComplexFloatStorage torch.cuda.DoubleStorage torch.cuda.DoubleTensor
torch.cuda.FloatStorage torch.cuda.FloatTensor torch.cuda.HalfStorage torch.cuda.HalfTensor torch.cuda.IntStorage
torch.cuda.IntTensor torch.cuda.LongStorage torch.cuda.LongTensor torch.cuda.ShortStorage torch.cuda.ShortTensor
torch.cuda.sparse.BFloat16Tensor torch.cuda.sparse.ByteTensor torch.cuda.sparse.CharTensor
torch.cuda.sparse.DoubleTensor torch.cuda.sparse.FloatTensor torch.cuda.sparse.HalfTensor
torch.cuda.sparse.IntTensor torch.cuda.sparse.LongTensor torch.cuda.sparse.ShortTensor torch.device
torch.float16 torch.float32 torch.float4_e2m1fn_x2 torch.float64 torch.float8_e4m3fn torch.float8_e4m3fnuz
torch.float8_e5m2 torch.float8_e5m2fnuz torch.float8_e8m0fnu torch.int1 torch.int16 torch.int2 torch.int3
torch.int32 torch.int4 torch.int5 torch.int6 torch.int64 torch.int7 torch.int8 torch.nn.parameter.Parameter
torch.per_channel_affine torch.per_channel_affine_float_qparams torch.per_channel_symmetric
torch.per_tensor_affine torch.per_tensor_symmetric torch.qint32 torch.qint8 torch.quint2x4 torch.quint4x2
torch.quint8 torch.serialization._get_layout torch.sparse.BFloat16Tensor torch.sparse.ByteTensor
torch.sparse.CharTensor torch.sparse.DoubleTensor torch.sparse.FloatTensor torch.sparse.HalfTensor
torch.sparse.IntTensor torch.sparse.LongTensor torch.sparse.ShortTensor torch.storage.TypedStorage
torch.storage.UntypedStorage torch.uint1 torch.uint16 torch.uint2 torch.uint3 torch.uint32 torch.uint4
torch.uint5 torch.uint6 torch.uint64 torch.uint7 torch.uint8
""".split())

_STORAGE_TYPES = {d._storage_name: _StorageType(d._storage_name, d) for d in D.ALL_DTYPES}
_UNTYPED = _StorageType("UntypedStorage", D.uint8)


def _torch_globals() -> dict[str, Any]:
    """PyTorch's names for what course_lib can rebuild: ``'torch.FloatStorage'`` -> a storage type, ..."""
    from .nn.parameter import Parameter

    rc: dict[str, Any] = {
        "torch.nn.parameter.Parameter": Parameter,
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.device": _device_cls,
        "torch.storage.UntypedStorage": _UNTYPED,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._utils._rebuild_meta_tensor_no_storage": _rebuild_meta_tensor_no_storage,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    }
    for d in D.ALL_DTYPES:
        rc[f"torch.{d.name}"] = d
        rc[f"torch.{d._storage_name}"] = _STORAGE_TYPES[d._storage_name]
        rc[f"torch.cuda.{d._storage_name}"] = _STORAGE_TYPES[d._storage_name]
    return rc


def _torch_only_error(full_path: str) -> RuntimeError | None:
    """The error for a global PyTorch would load but course_lib cannot (None for other names)."""
    if full_path not in _TORCH_ALLOWED:
        return None
    name = full_path.rsplit(".", 1)[1]
    if not name.startswith("per_") and (name.endswith("Storage") or name.endswith("Tensor")
                                        or "." not in full_path[len("torch."):]):
        what = "that dtype (course_lib has float32/64, float16, int64/32/16/8, uint8 and bool)"
    else:
        what = "that kind of tensor (no sparse, quantized, nested or device-subclass tensors)"
    return RuntimeError(f"course_lib cannot load GLOBAL {full_path}: torch.load allows it, but course_lib does "
                        f"not support {what}. Load the file with PyTorch and convert it (for example .float()) first.")


# =============================================================================================
# Saving: the pickler
# =============================================================================================
class _Pickler(pickle._Pickler):
    """Python's pickler with PyTorch's conventions.

    * ``persistent_id``: a course_lib ``Storage`` becomes ``('storage', torch.XStorage, key,
      location, numel)``; each storage object gets one key, in first-met order.
    * ``reducer_override``: tensors, parameters, devices and sizes reduce to PyTorch's
      rebuild functions, named by ``_TorchGlobal`` s, which ``save_torch_global`` writes
      as ``GLOBAL`` opcodes.  dtypes become ``GLOBAL torch float32``.

    (The pure-Python ``pickle._Pickler`` is used because only it lets a subclass write a
    ``GLOBAL`` for a module, ``torch``, that may not be installed.  ``data.pkl`` holds only
    metadata, so its speed does not matter.)
    """

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol: int = DEFAULT_PROTOCOL):
        super().__init__(file, protocol)
        self.storages: dict[str, Storage] = {}   # key -> storage, in the order they are written
        self._keys: dict[int, str] = {}          # id(storage) -> key
        self._dtype_at: dict[int, D.dtype] = {}  # data pointer -> dtype

    def persistent_id(self, obj):
        if type(obj) is not Storage:
            return None
        key = self._keys.get(id(obj))
        if key is None:
            if obj.data is not None:
                ptr = obj.data_ptr()
                if self._dtype_at.setdefault(ptr, obj.dtype) is not obj.dtype:
                    raise RuntimeError("Cannot save multiple tensors or storages that view the same data as "
                                       "different types")
            key = self._keys[id(obj)] = str(len(self._keys))
            self.storages[key] = obj
        return ("storage", _G_STORAGE[obj.dtype], key, str(obj.device), obj.size())

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return _reduce_tensor(obj)
        t = type(obj)
        if t is _device_cls:
            return (_G_DEVICE, (str(obj),))
        if t is Size:
            return (_G_SIZE, (tuple(obj),))
        return NotImplemented

    def save_torch_global(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    def save_dtype(self, obj):
        self.save_torch_global(_G_DTYPE[obj])

    dispatch[_TorchGlobal] = save_torch_global
    dispatch[D.dtype] = save_dtype


def _reduce_tensor(t: Tensor):
    from .nn.parameter import Parameter

    if isinstance(t, Parameter):
        data = Tensor._make(t._storage, t._offset, t._shape, t._stride, t.dtype)
        return (_G_REBUILD_PARAMETER, (data, t.requires_grad, OrderedDict()))
    shape = tuple(int(s) for s in t._shape)
    stride = tuple(int(s) for s in t._stride)
    if t._storage.data is None:  # meta
        return (_G_REBUILD_META, (t.dtype, shape, stride, t.requires_grad))
    return (_G_REBUILD_TENSOR_V2, (t._storage, int(t._offset), shape, stride, t.requires_grad, OrderedDict()))


# =============================================================================================
# The archive: writing (PyTorchStreamWriter)
# =============================================================================================
_PAD_HEADER_ID = 0x4246               # "FB": the extra field PyTorch pads local headers with
_PARALLEL_CRC_BYTES = 1 << 20        # records this big get their CRC-32 computed in a second thread
_INFLATE_CHUNK = 1 << 20             # a compressed record is read and inflated this many bytes at a time
_U32 = 0xFFFFFFFF
_DOS_TIME, _DOS_DATE = 0, (0 << 9) | (1 << 5) | 1  # 1980-01-01 00:00: a fixed date, so saves are reproducible
_LOCAL = struct.Struct("<IHHHHHIIIHH")            # local file header (30 bytes)
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")    # central directory header (46 bytes)
_EOCD = struct.Struct("<IHHHHIIH")                # end of central directory (22 bytes)
_EOCD64 = struct.Struct("<IQHHIIQQQQ")            # zip64 end of central directory (56 bytes)
_EOCD64_LOCATOR = struct.Struct("<IIQI")          # zip64 end of central directory locator (20 bytes)


class _ArchiveWriter:
    """Writes a zip archive of ``<prefix>/<name>`` records: stored, each record's data 64-byte aligned.

    A zip file is a sequence of records, each a *local header* (30 bytes, the name, an
    "extra" field) followed by the data, and at the end a *central directory* listing
    every record's name, CRC-32, size and offset, then an end record pointing at the
    directory.  Padding the extra field moves each record's data to the next multiple
    of 64, so that a memory-mapped storage starts aligned (``PyTorchStreamWriter::
    writeRecord`` does the same).  Sizes or offsets past 4 GiB use the zip64 variants.

    The CRC-32 of a large record is computed in a second thread while the main thread
    writes the bytes (both release the GIL), and patched into the local header after.
    """

    def __init__(self, fileobj: IO[bytes], prefix: str, force_zip64: bool = False):
        self.f = fileobj
        self.prefix = prefix
        try:
            self.pos = fileobj.tell()
            # (a file opened for appending "seeks" but writes at the end: no patching there)
            self.seekable = fileobj.seekable() and "a" not in str(getattr(fileobj, "mode", ""))
        except (AttributeError, OSError, ValueError):
            self.pos, self.seekable = 0, False
        self.force_zip64 = force_zip64
        self.entries: list[tuple] = []  # (name, flags, crc, size, header offset, zip64)
        self._digest = hashlib.sha1()
        self._pool = None

    def _write(self, data) -> None:
        view = memoryview(data).cast("B")
        while view.nbytes:
            n = self.f.write(view)
            if n is None or n == view.nbytes:  # buffered files write everything
                break
            view = view[n:]

    def _crc_later(self, data):
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="course_lib-crc32")
        return self._pool.submit(zlib.crc32, data)

    def write_record(self, name: str, data) -> None:
        if isinstance(data, np.ndarray):
            data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        data = memoryview(data).cast("B")
        size = data.nbytes
        fname = f"{self.prefix}/{name}".encode("utf-8")
        flags = 0 if fname.isascii() else 0x800  # bit 11: the name is UTF-8
        zip64 = self.force_zip64 or size >= _U32
        z64 = struct.pack("<HHQQ", 1, 16, size, size) if zip64 else b""
        pad = (-(self.pos + _LOCAL.size + len(fname) + len(z64) + 4)) % STORAGE_ALIGNMENT
        extra = z64 + struct.pack("<HH", _PAD_HEADER_ID, pad) + b"Z" * pad
        later = self.seekable and size >= _PARALLEL_CRC_BYTES
        future = self._crc_later(data) if later else None
        crc = 0 if later else zlib.crc32(data)
        header_offset = self.pos
        sizes = (_U32, _U32) if zip64 else (size, size)
        self._write(_LOCAL.pack(0x04034B50, 45 if zip64 else 20, flags, 0, _DOS_TIME, _DOS_DATE, crc, *sizes,
                                len(fname), len(extra)) + fname + extra)
        self._write(data)
        self.pos = header_offset + _LOCAL.size + len(fname) + len(extra) + size
        if future is not None:
            crc = future.result()
            self.f.seek(header_offset + 14)  # the CRC field of the local header
            self.f.write(struct.pack("<I", crc))
            self.f.seek(self.pos)
        self.entries.append((fname, flags, crc, size, header_offset, zip64))
        self._digest.update(f"{name}:{crc}:{size};".encode())

    def close(self) -> None:
        """Write the serialization id, the central directory and the end records."""
        self.write_record(".data/serialization_id", self._digest.hexdigest().encode())
        cd_offset = self.pos
        central = []
        for fname, flags, crc, size, offset, zip64 in self.entries:
            big = []  # zip64 extra: the sizes and/or the offset that do not fit in 32 bits, in this order
            if zip64 or size >= _U32:
                big += [size, size]
            if offset >= _U32 or self.force_zip64:
                big.append(offset)
            extra = struct.pack(f"<HH{len(big)}Q", 1, 8 * len(big), *big) if big else b""
            version = 45 if big else 20
            sizes = (_U32, _U32) if (zip64 or size >= _U32) else (size, size)
            central.append(_CENTRAL.pack(
                0x02014B50, (3 << 8) | version, version, flags, 0, _DOS_TIME, _DOS_DATE, crc, *sizes, len(fname),
                len(extra), 0, 0, 0, 0o644 << 16, _U32 if (offset >= _U32 or self.force_zip64) else offset)
                + fname + extra)
        directory = b"".join(central)
        self._write(directory)
        n, cd_size = len(self.entries), len(directory)
        if self.force_zip64 or n >= 0xFFFF or cd_offset >= _U32 or cd_size >= _U32:
            self._write(_EOCD64.pack(0x06064B50, _EOCD64.size - 12, 45, 45, 0, 0, n, n, cd_size, cd_offset))
            self._write(_EOCD64_LOCATOR.pack(0x07064B50, 0, cd_offset + cd_size, 1))
        self._write(_EOCD.pack(0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF), min(cd_size, _U32),
                               min(cd_offset, _U32), 0))
        self._shutdown()

    def abandon(self) -> None:
        """After a failure: stop, without writing the directory (the archive is left unreadable)."""
        self._shutdown()

    def _shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


_FORCE_ZIP64 = False  # tests set it to exercise the zip64 records without writing 4 GiB


def _write_archive(obj, fileobj: IO[bytes], prefix: str, pickle_protocol: int) -> None:
    buf = io.BytesIO()
    pickler = _Pickler(buf, pickle_protocol)
    pickler.dump(obj)
    w = _ArchiveWriter(fileobj, prefix, force_zip64=_FORCE_ZIP64)
    try:
        w.write_record("data.pkl", buf.getvalue())
        w.write_record(".format_version", b"1")
        w.write_record(".storage_alignment", str(STORAGE_ALIGNMENT).encode())
        w.write_record("byteorder", sys.byteorder.encode())
        for key, storage in pickler.storages.items():
            if storage.data is None:
                raise RuntimeError(f"cannot save storage {key}: it is on the meta device and has no data")
            w.write_record(f"data/{key}", storage.data)
        w.write_record("version", f"{FILE_FORMAT_VERSION}\n".encode())
        w.close()
    except BaseException:
        w.abandon()
        raise


def _is_path(f) -> bool:
    return isinstance(f, (str, os.PathLike))


def _archive_prefix(path: str) -> str:
    """PyTorch names the folder inside the zip after the file: ``sd.pt`` -> ``sd``."""
    base = os.path.basename(os.fspath(path))
    stem = base[:base.rfind(".")] if "." in base else base
    return stem or "archive"


def _fsync_dir(path: str) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _temp_pattern(base: str) -> re.Pattern:
    """Names of the temporary files a save of ``base`` writes: ``.NAME.<pid>-<12 hex>.tmp`` (and
    ``.NAME.<12 hex>.tmp``, the name before the process id was added)."""
    return re.compile(r"\." + re.escape(base) + r"\.(?:(\d+)-)?[0-9a-f]{12}\.tmp\Z")


def _process_alive(pid: int) -> bool:
    """Whether another process with this id runs (on POSIX; elsewhere the caller relies on
    Windows refusing to delete a file that is open)."""
    if os.name != "posix":
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists but belongs to another user
    return True


def _remove_if_unlocked(path: str) -> None:
    """Delete a temporary file unless a live save holds its lock (see ``_atomic_write``)."""
    if _fcntl is None:
        try:
            os.unlink(path)  # Windows: fails while the writing process has the file open
        except OSError:
            pass
        return
    try:  # (no following links, and no blocking on a FIFO someone named like a temporary file)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)  # held by a live save: BlockingIOError
        st, now = os.fstat(fd), os.lstat(path)
        if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale_temps(folder: str, base: str) -> None:
    """Remove the temporary files that saves of ``folder/base`` killed mid-write left behind.

    A temporary file is stale when no process holds its lock and the process named in it
    is gone (or is this one: its id was reused): a save in progress in another process or
    thread is never touched.  Errors are ignored: cleaning up must not make a save fail.
    """
    prefix, pattern = f".{base}.", _temp_pattern(base)
    try:
        entries = os.scandir(folder)
    except OSError:
        return
    with entries:
        for entry in entries:
            if not entry.name.startswith(prefix):
                continue
            m = pattern.match(entry.name)
            if m is None:
                continue
            pid = int(m.group(1) or 0)
            # The process's own id: an earlier process that had the same id (containers reuse
            # them); the lock tells whether a thread of this process is writing it.
            if pid and pid != os.getpid() and _process_alive(pid):
                continue
            _remove_if_unlocked(entry.path)


def _lock_new_temp(fd: int, tmp: str) -> int | None:
    """Lock the temporary file just created, for as long as the save runs; return the locked
    descriptor (a duplicate, so closing the file does not release it), None if a cleanup in
    another process removed the file between its creation and the lock (then take another)."""
    if _fcntl is None:
        return os.dup(fd)
    lock_fd = os.dup(fd)
    try:
        _fcntl.flock(lock_fd, _fcntl.LOCK_EX)
    except OSError:  # a file system without locks: the process id in the name still protects it
        return lock_fd
    try:
        st, now = os.fstat(lock_fd), os.lstat(tmp)
        if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            return lock_fd
    except OSError:
        pass
    os.close(lock_fd)
    return None


def _atomic_write(path, write: Callable[[IO[bytes]], None]) -> None:
    """Write a file through ``write(f)`` so that ``path`` holds either the old or the new bytes.

    The data goes to a temporary file ``.NAME.<pid>-<hex>.tmp`` in the same folder (same
    file system, so the rename is atomic), is flushed and fsynced, then ``os.replace``
    puts it in place and the folder is fsynced so the rename survives a power cut.  On
    any exception the temporary file is removed and the old file is untouched.

    A process killed mid-save (SIGKILL, power cut) cannot remove its temporary file, so
    each save first removes the stale ones of the same path: the save holds an
    exclusive lock (``flock``) on its temporary file until the rename, and a temporary
    file is deleted only when its lock is free and the process named in it is gone.
    """
    target = os.path.realpath(os.fspath(path))  # write through symlinks, like open() would
    folder, base = os.path.split(target)
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {os.path.dirname(os.fspath(path)) or folder} does not exist.")
    _remove_stale_temps(folder, base)
    while True:
        tmp = os.path.join(folder, f".{base}.{os.getpid()}-{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        lock_fd = _lock_new_temp(fd, tmp)
        if lock_fd is not None:
            break
        os.close(fd)
    old_fd = None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            getattr(os, "fdatasync", os.fsync)(f.fileno())
        if os.path.exists(target):
            try:
                shutil.copymode(target, tmp)
                # Keep the old file open across the rename: the file system then frees its
                # blocks when we close it (in the background below), not inside os.replace.
                old_fd = os.open(target, os.O_RDONLY)
            except OSError:
                pass
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if old_fd is not None:
            os.close(old_fd)
        raise
    finally:
        os.close(lock_fd)
    if old_fd is not None:
        threading.Thread(target=os.close, args=(old_fd,), daemon=True).start()
    _fsync_dir(folder)


def save(obj: object, f: FileLike, pickle_protocol: int = DEFAULT_PROTOCOL) -> None:
    """Save ``obj`` to ``f`` (a path or a writable binary file) in PyTorch's zip format.

    ``obj`` may hold tensors, Parameters, dicts, OrderedDicts (their attributes, such as a
    state_dict's ``_metadata``, are kept), lists, tuples, numbers, strings, ``None``,
    dtypes, devices and Sizes: all of that real ``torch.load(f, weights_only=True)``
    reads, and so does ``course_lib.load(f)``.  Other picklable objects are saved too,
    but loading them needs ``weights_only=False`` or :func:`add_safe_globals`.

    Each storage is written once, however many tensors view it; a view keeps its offset
    and strides (the whole storage is written, even for a small slice of it).  Saving
    to a path is atomic: an exception or a crash mid-save leaves the old file as it was.

    >>> sd = {"w": course_lib.ones(2, 3), "step": 10}
    >>> save(sd, "checkpoint.pt")
    >>> load("checkpoint.pt")["w"].shape
    course_lib.Size([2, 3])
    """
    if _is_path(f):
        prefix = _archive_prefix(f)
        _atomic_write(f, lambda fileobj: _write_archive(obj, fileobj, prefix, pickle_protocol))
        return
    if not hasattr(f, "write"):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a 'write' attribute, "
                             f"got {type(f).__name__}")
    _write_archive(obj, f, "archive", pickle_protocol)


# =============================================================================================
# The archive: reading (PyTorchStreamReader)
# =============================================================================================
class _ArchiveReader:
    """Reads the records of a ``torch.save`` zip.  Every problem is a ``RuntimeError`` naming it."""

    def __init__(self, fileobj: IO[bytes], source: str):
        self._f = fileobj
        self.source = source
        try:
            start = fileobj.tell()
            fileobj.seek(0, os.SEEK_END)
            self._end = fileobj.tell()
            fileobj.seek(start)
        except (OSError, AttributeError, ValueError) as e:
            raise RuntimeError(f"{source}: course_lib.load needs a seekable binary file ({e})") from None
        try:
            self._zip = zipfile.ZipFile(fileobj)
        except Exception as e:  # noqa: BLE001 - zipfile raises many kinds on corrupt data
            raise RuntimeError(
                f"{source} is not a readable zip archive ({type(e).__name__}: {e}). Files written by torch.save "
                "(since PyTorch 1.6) and course_lib.save are zip archives; this one is truncated, corrupted, "
                "or in another format (course_lib does not read PyTorch's legacy pre-1.6 format)") from None
        infos = self._zip.infolist()
        if not infos:
            raise RuntimeError(f"{source}: the zip archive is empty, it holds no checkpoint")
        first = infos[0].filename
        if "/" not in first:
            raise RuntimeError(f"{source}: file in archive is not in a subdirectory: {first}")
        self.prefix = first.split("/", 1)[0]
        lead = self.prefix + "/"
        self._records = {i.filename[len(lead):]: i for i in infos if i.filename.startswith(lead)}
        self._pool = None
        self._pending: list = []  # (name, expected CRC, future) of CRC checks running in the background

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._zip.close()

    def finish(self) -> None:
        """Wait for the background CRC checks; raise if a record failed its check."""
        pending, self._pending = self._pending, []
        for name, expected, future in pending:
            if future.result() != expected:
                raise self._damaged(name, "fails its CRC-32 check")

    def names(self) -> list[str]:
        return list(self._records)

    def has_record(self, name: str) -> bool:
        return name in self._records

    def _info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self._records[name]
        except KeyError:
            raise RuntimeError(f"{self.source}: record '{self.prefix}/{name}' is missing from the archive "
                               "(the file is incomplete or was not written by torch.save)") from None

    def _damaged(self, name: str, what: str) -> RuntimeError:
        return RuntimeError(f"{self.source}: record '{self.prefix}/{name}' {what}: the file is corrupted or truncated")

    def get_record(self, name: str) -> bytes:
        info = self._info(name)
        if info.compress_size > self._end or info.file_size > max(self._end, 1) * 1032:
            raise self._damaged(name, f"claims {info.file_size} bytes in a file of {self._end}")
        try:
            return self._zip.read(info)
        except Exception as e:  # noqa: BLE001 - BadZipFile (bad CRC), EOFError, zlib.error, ...
            raise self._damaged(name, f"cannot be read ({type(e).__name__}: {e})") from None

    def data_offset(self, name: str, mapped=None) -> int:
        """Where the record's bytes start in the file (from its local header; read from ``mapped``, if given)."""
        info = self._info(name)
        if mapped is not None:
            header = mapped[info.header_offset:info.header_offset + 30]
        else:
            self._f.seek(info.header_offset)
            header = self._f.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise self._damaged(name, f"has no valid zip header at byte {info.header_offset}")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        offset = info.header_offset + 30 + name_len + extra_len
        if offset + info.compress_size > self._end:
            raise self._damaged(name, f"ends at byte {offset + info.compress_size}, past the end of the file "
                                      f"({self._end} bytes)")
        return offset

    def check_size(self, name: str, nbytes: int, what: str) -> zipfile.ZipInfo:
        info = self._info(name)
        if info.file_size != nbytes:
            raise RuntimeError(
                f"{self.source}: storage record '{self.prefix}/{name}' holds {info.file_size} bytes, but the "
                f"pickle says it holds {what} ({nbytes} bytes): the file is corrupted or truncated")
        return info

    def read_into(self, name: str, out: np.ndarray) -> None:
        """Fill the uint8 array ``out`` with the record's bytes (one copy; CRC checked, see CHECK_CRC32)."""
        info = self._info(name)
        n = out.nbytes
        if info.compress_type != zipfile.ZIP_STORED:
            self._decompress_into(name, info, memoryview(out).cast("B"))
            return
        offset = self.data_offset(name)
        self._f.seek(offset)
        view = memoryview(out).cast("B")
        got = 0
        while got < n:
            k = self._f.readinto(view[got:])
            if not k:
                break
            got += k
        if got != n:
            raise self._damaged(name, f"is cut short: {got} of {n} bytes")
        if n < _PARALLEL_CRC_BYTES:
            if zlib.crc32(view) != info.CRC:
                raise self._damaged(name, "fails its CRC-32 check")
            return
        if not CHECK_CRC32:
            return
        # A large record is checked in a second thread while the next one is read (both
        # release the GIL); finish() collects the verdicts before load returns.
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="course_lib-crc32")
        self._pending.append((name, info.CRC, self._pool.submit(zlib.crc32, view)))

    def _decompress_into(self, name: str, info: zipfile.ZipInfo, out: memoryview) -> None:
        """Fill ``out`` with a compressed record, a chunk at a time, checking its size and CRC-32.

        Deflated records (the only compression PyTorch's reader knows) are inflated by
        ``zlib`` straight into ``out``; other methods go through ``zipfile``.  Either way
        the load needs the storage plus about a megabyte, not the storage twice.
        """
        n = out.nbytes
        got, crc = 0, 0
        try:
            if info.compress_type == zipfile.ZIP_DEFLATED and not info.flag_bits & 0x1:  # (bit 0: encrypted)
                self._f.seek(self.data_offset(name))
                left = info.compress_size
                inflate = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as in a zip
                data = b""
                while not inflate.eof:
                    if not data and left:
                        data = self._f.read(min(_INFLATE_CHUNK, left))
                        if not data:
                            break
                        left -= len(data)
                    before = len(data)
                    # at most the room left (1 byte when full: more data means the record is too long)
                    chunk = inflate.decompress(data, min(_INFLATE_CHUNK, n - got) or 1)
                    data = inflate.unconsumed_tail
                    if len(chunk) > n - got:
                        raise self._damaged(name, f"holds more than the {n} bytes its size says")
                    if not chunk and len(data) == before:
                        break  # no input left, or none it can use
                    out[got:got + len(chunk)] = chunk
                    crc = zlib.crc32(chunk, crc)
                    got += len(chunk)
                if not inflate.eof:
                    raise self._damaged(name, f"is cut short: its compressed data ends after {got} of {n} bytes")
            else:
                with self._zip.open(info) as f:  # (zipfile checks the CRC-32 when it reaches the end)
                    while got < n:
                        k = f.readinto(out[got:got + _INFLATE_CHUNK])
                        if not k:
                            break
                        got += k
                    if got == n and f.read(1):
                        raise self._damaged(name, f"holds more than the {n} bytes its size says")
                crc = info.CRC
        except RuntimeError:
            raise
        except Exception as e:  # noqa: BLE001 - zlib.error, BadZipFile (bad CRC), EOFError, ...
            raise self._damaged(name, f"cannot be read ({type(e).__name__}: {e})") from None
        if got != n:
            raise self._damaged(name, f"holds {got} bytes instead of {n}")
        if crc != info.CRC:
            raise self._damaged(name, "fails its CRC-32 check")

    def stored_offset(self, name: str, mapped) -> int:
        """For mmap: the record's offset in ``mapped``; the record must be stored uncompressed."""
        info = self._info(name)
        if info.compress_type != zipfile.ZIP_STORED:
            raise RuntimeError(
                f"{self.source}: mmap=True maps storages straight from the file, so they must be stored "
                f"uncompressed (ZIP_STORED), but record '{self.prefix}/{name}' is compressed (method "
                f"{info.compress_type}). Load it without mmap, or save it again with course_lib.save/torch.save.")
        return self.data_offset(name, mapped)


# =============================================================================================
# Loading
# =============================================================================================
def _get_wo_message(message: str) -> str:
    """The text of a refused weights_only load (``_get_wo_message`` in torch.load)."""
    has_unsafe_global = re.search(r"GLOBAL (\S+) was not an allowed global by default.", message) is not None
    has_blocklist = re.search(r"whose module (\S+) is blocked", message) is not None
    if has_unsafe_global:
        updated = (
            "Weights only load failed. This file can still be loaded, to do so you have two options, "
            "do those steps only if you trust the source of the checkpoint. "
            f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
            "the recommended steps in the following error message.\n\tWeightsUnpickler error: " + message)
    else:
        updated = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
        if not has_blocklist:
            updated += ("The file is malformed, or uses a pickle feature the weights_only unpickler does not "
                        "support: WeightsUnpickler error: ")
        updated += "\n\n" + message
    return updated + DOCS_MESSAGE


def _device_type(location: str) -> str:
    return location.split(":", 1)[0]


def _no_device_error(location: str) -> RuntimeError:
    return RuntimeError(
        f"Attempting to deserialize object on device '{location}', but course_lib has only the 'cpu' and 'meta' "
        "devices. Use course_lib.load(..., map_location='cpu') to map your storages to the CPU.")


def _check_map_location(map_location) -> None:
    if map_location is None:
        return
    if isinstance(map_location, (str, _device_cls)):
        _device_cls(str(map_location))  # RuntimeError for an unknown device
        return
    if isinstance(map_location, dict):
        for k, v in map_location.items():
            if not isinstance(k, str) or not isinstance(v, (str, _device_cls)):
                raise TypeError("map_location dict must map location tags (str) to devices (str or device), "
                                f"got {k!r}: {v!r}")
        return
    if callable(map_location):
        return
    raise TypeError(f"map_location must be None, a device, a str, a dict or a callable, not "
                    f"{type(map_location).__name__}")


class _Loader:
    """One load: persistent ids -> storages (read once per key), restored where map_location says."""

    def __init__(self, reader: _ArchiveReader, map_location, mm):
        self.reader = reader
        self.map_location = map_location
        self.mm = mm
        self.storages: dict[str, Storage] = {}
        swap = False
        if reader.has_record("byteorder"):
            order = reader.get_record("byteorder")
            if order not in (b"little", b"big"):
                raise RuntimeError(f"{reader.source}: Unknown endianness type: {order.decode('latin-1')!r:.40}")
            swap = order.decode() != sys.byteorder
        self.swap = swap

    def target(self, location: str) -> str | None:
        m = self.map_location
        if m is None:
            return location
        if isinstance(m, (str, _device_cls)):
            return str(m)
        if isinstance(m, dict):
            v = m.get(location, location)
            return str(v)
        return None  # a callable decides after reading

    def persistent_load(self, saved_id):
        if not isinstance(saved_id, tuple) or len(saved_id) != 5:
            raise pickle.UnpicklingError(f"a storage's persistent id must be a tuple of 5 items, "
                                         f"got {_shown(saved_id)}")
        typename, storage_type, key, location, numel = saved_id
        if _weights_only_unpickler._maybe_decode_ascii(typename) != "storage":
            raise pickle.UnpicklingError(f"Unknown typename for persistent_load, expected 'storage' but got "
                                         f"{_shown(typename)}")
        if not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"expected a storage type such as torch.FloatStorage, "
                                         f"got {_shown(storage_type)}")
        key = _weights_only_unpickler._maybe_decode_ascii(key)
        location = _weights_only_unpickler._maybe_decode_ascii(location)
        if not isinstance(key, str) or not isinstance(location, str) or type(numel) is not int or numel < 0:
            raise pickle.UnpicklingError(f"malformed storage id {_shown(saved_id)}")
        dtype = storage_type.dtype
        cached = self.storages.get(key)
        if cached is not None:
            if cached.dtype is not dtype:
                raise RuntimeError(f"{self.reader.source}: storage {key} is used as both {cached.dtype} and {dtype}")
            return cached
        storage = self.load_storage(dtype, numel, key, location)
        self.storages[key] = storage
        return storage

    def load_storage(self, dtype: D.dtype, numel: int, key: str, location: str) -> Storage:
        name = f"data/{key}"
        nbytes = numel * dtype.itemsize
        self.reader.check_size(name, nbytes, f"{numel} {dtype.name} elements")
        target = self.target(location)
        if target is not None:
            kind = _device_type(target)
            if kind == "meta":
                return Storage(None, dtype, "meta", size=numel)
            if kind != "cpu":
                raise _no_device_error(target)
        storage = self.read_storage(dtype, numel, name)
        if target is None:  # a callable map_location
            result = self.map_location(storage, location)
            if result is None:
                kind = _device_type(location)
                if kind == "meta":
                    return Storage(None, dtype, "meta", size=numel)
                if kind != "cpu":
                    raise _no_device_error(location)
                return storage
            if not isinstance(result, Storage):
                raise TypeError(f"map_location must return a course_lib Storage or None, got {type(result).__name__}")
            return result
        return storage

    def read_storage(self, dtype: D.dtype, numel: int, name: str) -> Storage:
        if self.mm is not None:
            offset = self.reader.stored_offset(name, self.mm)
            if numel == 0:
                return Storage(np.empty(0, dtype.np), dtype)
            arr = np.frombuffer(self.mm, dtype=dtype.np, count=numel, offset=offset)
            if self.swap and dtype.itemsize > 1:
                return Storage(arr.byteswap(), dtype)  # a copy: the file's bytes are in the other order
            return Storage(arr, dtype, owner=self.mm)
        arr = np.empty(numel, dtype.np)
        self.reader.read_into(name, arr.view(np.uint8))
        if self.swap and dtype.itemsize > 1:
            arr.byteswap(inplace=True)
        return Storage(arr, dtype)


class _FullUnpickler(pickle.Unpickler):
    """``weights_only=False``: Python's unpickler (it can run any code), knowing PyTorch's names."""

    def __init__(self, file, loader: _Loader):
        super().__init__(file, encoding="utf-8")
        self._loader = loader
        self._table = _torch_globals()

    def find_class(self, module, name):
        full = f"{module}.{name}"
        if full in self._table:
            return self._table[full]
        err = _torch_only_error(full)
        if err is not None:
            raise err
        if module == "torch" or module.startswith("torch."):
            raise RuntimeError(f"course_lib cannot load GLOBAL {full}: it is a PyTorch object, not a course_lib "
                               "one (save a state_dict rather than a whole module)")
        return super().find_class(module, name)

    def persistent_load(self, pid):
        return self._loader.persistent_load(pid)


def _check_version(reader: _ArchiveReader) -> None:
    if not reader.has_record("version"):
        raise RuntimeError(
            f"{reader.source}: the archive has no '{reader.prefix}/version' record, so it is not a file torch.save "
            "or course_lib.save wrote (torch.load refuses it too: Expected hasRecord(\"version\") to be true, "
            "but got false.)")
    raw = reader.get_record("version")
    try:
        version = int(raw.strip())
    except ValueError:
        raise RuntimeError(f"{reader.source}: the 'version' record holds {raw[:20]!r}, not a number") from None
    if not 1 <= version <= MAX_SUPPORTED_FILE_FORMAT_VERSION:
        raise RuntimeError(
            f"{reader.source}: Attempted to read a PyTorch file with version {version}, but the supported "
            f"versions for reading are 1 to {MAX_SUPPORTED_FILE_FORMAT_VERSION}.")


def _load(reader: _ArchiveReader, map_location, weights_only: bool, mm) -> Any:
    _check_version(reader)
    loader = _Loader(reader, map_location, mm)
    data = reader.get_record("data.pkl")
    _load_state.v3_views = {}
    try:
        if weights_only:
            unpickler = _weights_only_unpickler.Unpickler(data, encoding="utf-8")
            unpickler.persistent_load = loader.persistent_load
            try:
                result = unpickler.load()
            except pickle.UnpicklingError as e:
                raise pickle.UnpicklingError(_get_wo_message(str(e))) from None
        else:
            result = _FullUnpickler(io.BytesIO(data), loader).load()
        reader.finish()
        return result
    finally:
        _load_state.v3_views = None


def load(f: FileLike, map_location: MapLocation = None, *, weights_only: bool = True, mmap: bool = False) -> Any:
    """Load an object saved with ``course_lib.save`` or ``torch.save``.

    Args:
        f: a path, or a binary file object that can ``read``, ``seek`` and ``tell``.
        map_location: where storages go.  ``None`` keeps each storage's saved location
            (``'cpu'``); a device (``'cpu'``, ``'meta'``, ``course_lib.device('meta')``) sends
            all of them there; a dict maps saved locations to devices
            (``{'cuda:0': 'cpu'}``); a callable ``fn(storage, location)`` gets each storage
            (read on the CPU) and returns a storage or ``None`` (then the default applies).
            ``'meta'`` gives tensors with shapes and dtypes but reads no data.
        weights_only: ``True`` (the default) unpickles with a restricted unpickler that
            only builds tensors, containers, numbers, strings and what
            :func:`add_safe_globals` allows; anything else is refused before it runs.
            ``False`` runs the full pickle machinery, which can execute arbitrary
            code: only for files you trust.
        mmap: map the file into memory instead of reading it: storages are views of the
            mapped file and their bytes are read from disk only when touched (copy on
            write: changing a tensor never changes the file).  ``f`` must be a path and
            the storages stored uncompressed.

    Corrupted, truncated or non-checkpoint files raise ``RuntimeError`` (or
    ``pickle.UnpicklingError`` for a bad pickle) with a message naming the problem.

    >>> sd = load("checkpoint.pt")                       # safe: tensors and containers only
    >>> shapes = load("checkpoint.pt", map_location="meta")  # no data read at all
    >>> big = load("checkpoint.pt", mmap=True)           # storages mapped, read lazily
    """
    _check_map_location(map_location)
    if mmap and not _is_path(f):
        raise ValueError("f must be a file path in order to use the mmap argument")
    if _is_path(f):
        source = os.fspath(f)
        try:
            fileobj = open(source, "rb")
        except IsADirectoryError:
            raise IsADirectoryError(f"{source} is a directory, not a checkpoint file") from None
    else:
        if not all(hasattr(f, a) for a in ("read", "seek", "tell")):
            raise AttributeError(f"expected 'f' to be a path or a binary file object with read, seek and tell, "
                                 f"got {type(f).__name__}")
        source, fileobj = getattr(f, "name", None) or "the checkpoint", f
        if not isinstance(source, str):
            source = "the checkpoint"
    try:
        reader = _ArchiveReader(fileobj, source)
        try:
            mm = None
            if mmap:
                if os.path.getsize(source) == 0:
                    raise RuntimeError(f"{source} is empty")
                mm = _mmap.mmap(fileobj.fileno(), 0, access=_mmap.ACCESS_COPY)
            return _load(reader, map_location, weights_only, mm)
        finally:
            reader.close()
    finally:
        if _is_path(f):
            fileobj.close()


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list[str]:
    """The globals in a checkpoint's pickle that a ``weights_only`` load would refuse, without loading it.

    Like PyTorch's, it reads the pickle without running it and lists globals only: a file
    that uses allowlisted globals in a way the loader refuses (a BUILD that would move a
    tensor outside its storage, say) is not reported, and ``load`` still refuses it.
    Use it to see what a file wants before deciding to trust it::

        >>> get_unsafe_globals_in_checkpoint("suspicious.pt")
        ['posix.system']
    """
    if _is_path(f):
        with open(f, "rb") as fileobj:
            return get_unsafe_globals_in_checkpoint(fileobj)
    reader = _ArchiveReader(f, getattr(f, "name", "the checkpoint") if isinstance(getattr(f, "name", None), str)
                            else "the checkpoint")
    try:
        found = _weights_only_unpickler.get_globals_in_pkl(reader.get_record("data.pkl"))
    finally:
        reader.close()
    safe = (set(_weights_only_unpickler._get_allowed_globals()) | _TORCH_ALLOWED
            | set(_weights_only_unpickler._get_user_allowed_globals()))
    return sorted(found - safe)
