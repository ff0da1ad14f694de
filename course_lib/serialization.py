"""``save`` and ``load``: tensors to files and back, in PyTorch's own file format.

In PyTorch: ``torch/serialization.py`` (``save``, ``load``, ``_save``, ``_load``,
``StorageType``).  The rest of the machinery sits where PyTorch keeps it:

- ``course_lib/_utils.py`` (``torch/_utils.py``): ``_rebuild_tensor_v2`` and friends,
  which rebuild tensors while unpickling;
- ``course_lib/_weights_only_unpickler.py`` (``torch/_weights_only_unpickler.py``): the
  safe loader, with the opcodes that only build data in ``course_lib/_pickle_opcodes.py``;
- ``course_lib/_inline_container.py`` (``caffe2/serialize/inline_container.cc``,
  ``PyTorchStreamWriter``/``PyTorchStreamReader``): the zip writer and reader;
- ``course_lib/_atomic_file.py``: the atomic save to a path (PyTorch writes in place).

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

import io
import mmap as _mmap
import os
import pickle
import re
import sys
from collections import OrderedDict
from typing import IO, Any, Callable, Union

import numpy as np

from . import _dtype, _weights_only_unpickler
from ._atomic_file import _atomic_write
from ._device import device as _device_cls
from ._inline_container import (  # noqa: F401
    FILE_FORMAT_VERSION,
    MAX_SUPPORTED_FILE_FORMAT_VERSION,
    STORAGE_ALIGNMENT,
    _ArchiveReader,
    _ArchiveWriter,
)
from ._size import Size
from ._storage import Storage
from ._tensor import Tensor
from ._utils import (
    _load_state,
    _rebuild_from_type_v2,
    _rebuild_meta_tensor_no_storage,
    _rebuild_parameter,
    _rebuild_parameter_with_state,
    _rebuild_tensor,
    _rebuild_tensor_v2,
    _rebuild_tensor_v3,
)
from ._utils import shown as _shown
from ._weights_only_unpickler import (  # noqa: F401
    _TORCH_ALLOWED,
    _torch_only_error,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

__all__ = [
    "save", "load", "add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals",
    "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL", "STORAGE_ALIGNMENT",
]

DEFAULT_PROTOCOL = 2

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

    def __init__(self, name: str, dtype: _dtype.dtype):
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
_G_STORAGE = {d: _TorchGlobal("torch", d._storage_name) for d in _dtype.ALL_DTYPES}
_G_DTYPE = {d: _TorchGlobal("torch", d.name) for d in _dtype.ALL_DTYPES}

_STORAGE_TYPES = {d._storage_name: _StorageType(d._storage_name, d) for d in _dtype.ALL_DTYPES}
_UNTYPED = _StorageType("UntypedStorage", _dtype.uint8)


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
    for d in _dtype.ALL_DTYPES:
        rc[f"torch.{d.name}"] = d
        rc[f"torch.{d._storage_name}"] = _STORAGE_TYPES[d._storage_name]
        rc[f"torch.cuda.{d._storage_name}"] = _STORAGE_TYPES[d._storage_name]
    return rc


# =============================================================================================
# Saving (``_save`` in torch/serialization.py; tensors pickle themselves in torch/_tensor.py)
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
        self._dtype_at: dict[int, _dtype.dtype] = {}  # data pointer -> dtype

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
    dispatch[_dtype.dtype] = save_dtype


def _reduce_tensor(t: Tensor):
    """What ``Tensor.__reduce_ex__`` returns in PyTorch: a rebuild function and its arguments."""
    from .nn.parameter import Parameter

    if isinstance(t, Parameter):
        data = Tensor._make(t._storage, t._offset, t._shape, t._stride, t.dtype)
        return (_G_REBUILD_PARAMETER, (data, t.requires_grad, OrderedDict()))
    shape = tuple(int(s) for s in t._shape)
    stride = tuple(int(s) for s in t._stride)
    if t._storage.data is None:  # meta
        return (_G_REBUILD_META, (t.dtype, shape, stride, t.requires_grad))
    return (_G_REBUILD_TENSOR_V2, (t._storage, int(t._offset), shape, stride, t.requires_grad, OrderedDict()))


_FORCE_ZIP64 = False  # tests set it to exercise the zip64 records without writing 4 GiB


def _write_archive(obj, fileobj: IO[bytes], prefix: str, pickle_protocol: int) -> None:
    """Pickle ``obj`` and write the archive: ``data.pkl``, the small records, each storage once (the
    writer adds ``version`` and ``.data/serialization_id`` when it closes).  A failure leaves the
    archive unfinished."""
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
# Loading (``_load`` in torch/serialization.py)
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

    def __init__(self, reader: _ArchiveReader, map_location, mapped):
        self.reader = reader
        self.map_location = map_location
        self.mapped = mapped
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

    def load_storage(self, dtype: _dtype.dtype, numel: int, key: str, location: str) -> Storage:
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

    def read_storage(self, dtype: _dtype.dtype, numel: int, name: str) -> Storage:
        if self.mapped is not None:
            offset = self.reader.stored_offset(name, self.mapped)
            if numel == 0:
                return Storage(np.empty(0, dtype.np), dtype)
            arr = np.frombuffer(self.mapped, dtype=dtype.np, count=numel, offset=offset)
            if self.swap and dtype.itemsize > 1:
                return Storage(arr.byteswap(), dtype)  # a copy: the file's bytes are in the other order
            return Storage(arr, dtype, owner=self.mapped)
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


def _load(reader: _ArchiveReader, map_location, weights_only: bool, mapped) -> Any:
    reader.check_version()
    loader = _Loader(reader, map_location, mapped)
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
        reader = _ArchiveReader(fileobj, source, check_crc32=CHECK_CRC32)
        try:
            mapped = None
            if mmap:
                if os.path.getsize(source) == 0:
                    raise RuntimeError(f"{source} is empty")
                mapped = _mmap.mmap(fileobj.fileno(), 0, access=_mmap.ACCESS_COPY)
            return _load(reader, map_location, weights_only, mapped)
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
