"""Planted wrong answers for chapter 07 (serialization): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations

import io
import pickle
import zipfile
from collections import OrderedDict

_STORAGE_NAMES07 = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
                    "uint8": "ByteStorage", "bool": "BoolStorage"}


def _cl07():
    import course_lib

    return course_lib


def _dtype_of07(name):
    cl = _cl07()
    return {v: getattr(cl, k) for k, v in _STORAGE_NAMES07.items()}[name]


# ------------------------------------------------------------------ 07.1 make_payload
def make_payload_calls_now(fn, *args):
    # runs fn while making the "payload": the pickle then holds only its result
    return fn(*args)


def make_payload_drops_args(fn, *args):
    class Payload:
        def __reduce__(self):
            return (fn, ())

    return Payload()


def make_payload_list_args(fn, *args):
    class Payload:
        def __reduce__(self):
            return (fn, list(args))  # pickle wants a tuple

    return Payload()


# ------------------------------------------------------------------ 07.2 tensor_persistent_id
def persistent_id_new_key_every_time(obj, storages):
    if not isinstance(obj, _cl07().Storage):
        return None
    key = str(len(storages))
    storages[key] = obj
    return ("storage", _STORAGE_NAMES07[obj.dtype.name], key, str(obj.device), obj.size())


def persistent_id_nbytes(obj, storages):
    if not isinstance(obj, _cl07().Storage):
        return None
    key = next((k for k, s in storages.items() if s is obj), None)
    if key is None:
        key = str(len(storages))
        storages[key] = obj
    return ("storage", _STORAGE_NAMES07[obj.dtype.name], key, str(obj.device), obj.nbytes())


def persistent_id_dtype_name(obj, storages):
    if not isinstance(obj, _cl07().Storage):
        return None
    key = next((k for k, s in storages.items() if s is obj), None)
    if key is None:
        key = str(len(storages))
        storages[key] = obj
    return ("storage", obj.dtype.name, key, str(obj.device), obj.size())


def persistent_id_by_equal_bytes(obj, storages):
    # "the same storage" by comparing contents: two equal storages get one key
    import numpy as np
    if not isinstance(obj, _cl07().Storage):
        return None
    key = next((k for k, s in storages.items() if s is obj or (
        s.dtype is obj.dtype and s.data is not None and obj.data is not None and s.size() == obj.size()
        and np.array_equal(s.data, obj.data))), None)
    if key is None:
        key = str(len(storages))
        storages[key] = obj
    return ("storage", _STORAGE_NAMES07[obj.dtype.name], key, str(obj.device), obj.size())


def persistent_id_tensors_too(obj, storages):
    cl = _cl07()
    if isinstance(obj, cl.Tensor):
        obj = obj._storage
    if not isinstance(obj, cl.Storage):
        return None
    key = next((k for k, s in storages.items() if s is obj), None)
    if key is None:
        key = str(len(storages))
        storages[key] = obj
    return ("storage", _STORAGE_NAMES07[obj.dtype.name], key, str(obj.device), obj.size())


# ------------------------------------------------------------------ 07.3 rebuild_tensor
def _checked07(storage, offset, size, stride, strict=True):
    size, stride = tuple(size), tuple(stride)
    if offset < 0 or any(n < 0 for n in size) or any(s < 0 for s in stride) or len(size) != len(stride):
        raise RuntimeError("bad geometry")
    if all(n > 0 for n in size):
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if (last >= len(storage)) if strict else (last > len(storage)):
            raise RuntimeError("out of bounds")
    return size, stride


def rebuild_tensor_copies(storage, storage_offset, size, stride):
    cl = _cl07()
    size, stride = _checked07(storage, storage_offset, size, stride)
    copy = cl.Storage(storage.data.copy(), storage.dtype)
    return cl.Tensor._make(copy, storage_offset, size, stride, storage.dtype)


def rebuild_tensor_no_checks(storage, storage_offset, size, stride):
    return _cl07().Tensor._make(storage, storage_offset, tuple(size), tuple(stride), storage.dtype)


def rebuild_tensor_off_by_one(storage, storage_offset, size, stride):
    size, stride = _checked07(storage, storage_offset, size, stride, strict=False)
    return _cl07().Tensor._make(storage, storage_offset, size, stride, storage.dtype)


def rebuild_tensor_checks_empty_views(storage, storage_offset, size, stride):
    # bounds-checks every view, empty ones too: offset + sum((n - 1) * s) "fits" an empty view at the
    # storage's end (6 + (0 - 1) * 1 = 5), but an empty view further out is refused
    size, stride = tuple(size), tuple(stride)
    if storage_offset < 0 or any(n < 0 for n in size) or any(s < 0 for s in stride) or len(size) != len(stride):
        raise RuntimeError("bad geometry")
    if storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) >= len(storage):
        raise RuntimeError("out of bounds")
    return _cl07().Tensor._make(storage, storage_offset, size, stride, storage.dtype)


def rebuild_tensor_contiguous(storage, storage_offset, size, stride):
    size, _ = _checked07(storage, storage_offset, size, stride)
    contiguous, step = [], 1
    for n in reversed(size):
        contiguous.insert(0, step)
        step *= max(n, 1)
    return _cl07().Tensor._make(storage, storage_offset, size, tuple(contiguous), storage.dtype)


# ------------------------------------------------------------------ 07.4 tensor_persistent_load
def _pload07(pid, read_record, cache, *, use_cache=True, copy=True, check=True, dtype=None):
    import numpy as np
    typename, name, key, location, numel = pid
    if typename != "storage":
        raise pickle.UnpicklingError("not a storage")
    if use_cache and key in cache:
        return cache[key]
    dtype = dtype or _dtype_of07(name)
    data = read_record(f"data/{key}")
    if check and len(data) != numel * dtype.itemsize:
        raise RuntimeError("size mismatch")
    arr = np.frombuffer(data, dtype.np)
    storage = _cl07().Storage(arr.copy() if copy else arr, dtype)
    cache[key] = storage
    return storage


def persistent_load_no_cache(pid, read_record, cache):
    return _pload07(pid, read_record, cache, use_cache=False)


def persistent_load_read_only(pid, read_record, cache):
    return _pload07(pid, read_record, cache, copy=False)


def persistent_load_no_size_check(pid, read_record, cache):
    return _pload07(pid, read_record, cache, check=False)


def persistent_load_always_float32(pid, read_record, cache):
    return _pload07(pid, read_record, cache, dtype=_cl07().float32)


# ------------------------------------------------------------------ 07.5 write_archive
def _write07(f, prefix, data_pkl, storages, *, compression=zipfile.ZIP_STORED, version=True,
             version_first=False, use_prefix=True):
    name = (lambda n: f"{prefix}/{n}") if use_prefix else (lambda n: n)
    with zipfile.ZipFile(f, "w", compression=compression) as z:
        if version_first and version:
            z.writestr(name("version"), b"3\n")
        z.writestr(name("data.pkl"), data_pkl)
        z.writestr(name("byteorder"), b"little")
        for key, storage in storages.items():
            z.writestr(name(f"data/{key}"), storage.data.tobytes())
        if version and not version_first:
            z.writestr(name("version"), b"3\n")


def write_archive_deflated(f, prefix, data_pkl, storages):
    _write07(f, prefix, data_pkl, storages, compression=zipfile.ZIP_DEFLATED)


def write_archive_no_version(f, prefix, data_pkl, storages):
    _write07(f, prefix, data_pkl, storages, version=False)


def write_archive_version_first(f, prefix, data_pkl, storages):
    _write07(f, prefix, data_pkl, storages, version_first=True)


def write_archive_no_prefix(f, prefix, data_pkl, storages):
    _write07(f, prefix, data_pkl, storages, use_prefix=False)


# ------------------------------------------------------------------ 07.6 RestrictedUnpickler
class _Restricted07(pickle.Unpickler):
    def __init__(self, file, allowed):
        super().__init__(file)
        self.allowed = allowed


class UnpicklerAllowlistFirst(_Restricted07):
    # an allowlisted name wins over the blocklist: posix.system gets through
    def find_class(self, module, name):
        full = f"{module}.{name}"
        if full in self.allowed:
            return self.allowed[full]
        if module in {"os", "posix", "nt", "sys"}:
            raise pickle.UnpicklingError(f"blocked {full}")
        raise pickle.UnpicklingError(f"refusing {full}")


class UnpicklerStartswithOs(_Restricted07):
    def find_class(self, module, name):
        full = f"{module}.{name}"
        if module.startswith(("os", "posix", "nt", "sys")):
            raise pickle.UnpicklingError(f"blocked {full}")
        if full not in self.allowed:
            raise pickle.UnpicklingError(f"refusing {full}")
        return self.allowed[full]


class UnpicklerFallsBackToImport(_Restricted07):
    def find_class(self, module, name):
        full = f"{module}.{name}"
        if module in {"os", "posix", "nt", "sys"}:
            raise pickle.UnpicklingError(f"blocked {full}")
        if full in self.allowed:
            return self.allowed[full]
        return super().find_class(module, name)


class UnpicklerKeyError(_Restricted07):
    def find_class(self, module, name):
        if module in {"os", "posix", "nt", "sys"}:
            raise pickle.UnpicklingError(f"blocked {module}.{name}")
        return self.allowed[f"{module}.{name}"]  # KeyError, not UnpicklingError


# ------------------------------------------------------------------ 07.7 my_load
def _my_load07(f, *, shared_cache=True, restricted=True):
    from course_lib import serialization as S

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            full = f"{module}.{name}"
            if full == "collections.OrderedDict":
                return OrderedDict
            if full == "torch._utils._rebuild_tensor_v2":
                return lambda storage, offset, size, stride, *rest: S._rebuild_tensor(storage, offset, size, stride)
            if module == "torch" and name in _STORAGE_NAMES07.values():
                return name
            if restricted:
                raise pickle.UnpicklingError(f"refusing {full}")
            return super().find_class(module, name)

    with zipfile.ZipFile(f) as z:
        folder = z.namelist()[0].split("/")[0]
        cache = {}
        u = Unpickler(io.BytesIO(z.read(f"{folder}/data.pkl")))
        u.persistent_load = lambda pid: _pload07(pid, lambda n: z.read(f"{folder}/{n}"),
                                                 cache if shared_cache else {})
        return u.load()


def my_load_archive_folder(f):
    # reads every record from "archive/": right for files saved to a buffer, wrong for a file saved to a path
    from course_lib import serialization as S

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            full = f"{module}.{name}"
            if full == "collections.OrderedDict":
                return OrderedDict
            if full == "torch._utils._rebuild_tensor_v2":
                return lambda storage, offset, size, stride, *rest: S._rebuild_tensor(storage, offset, size, stride)
            if module == "torch" and name in _STORAGE_NAMES07.values():
                return name
            raise pickle.UnpicklingError(f"refusing {full}")

    with zipfile.ZipFile(f) as z:
        cache = {}
        u = Unpickler(io.BytesIO(z.read("archive/data.pkl")))
        u.persistent_load = lambda pid: _pload07(pid, lambda n: z.read(f"archive/{n}"), cache)
        return u.load()


def my_load_cache_per_call(f):
    return _my_load07(f, shared_cache=False)


def my_load_unrestricted(f):
    return _my_load07(f, restricted=False)


WRONG = {
    "07.1": [make_payload_calls_now, make_payload_drops_args, make_payload_list_args],
    "07.2": [persistent_id_new_key_every_time, persistent_id_nbytes, persistent_id_dtype_name,
             persistent_id_by_equal_bytes, persistent_id_tensors_too],
    "07.3": [rebuild_tensor_copies, rebuild_tensor_no_checks, rebuild_tensor_off_by_one, rebuild_tensor_contiguous,
             rebuild_tensor_checks_empty_views],
    "07.4": [persistent_load_no_cache, persistent_load_read_only, persistent_load_no_size_check,
             persistent_load_always_float32],
    "07.5": [write_archive_deflated, write_archive_no_version, write_archive_version_first, write_archive_no_prefix],
    "07.6": [UnpicklerAllowlistFirst, UnpicklerStartswithOs, UnpicklerFallsBackToImport, UnpicklerKeyError],
    "07.7": [my_load_cache_per_call, my_load_unrestricted, my_load_archive_folder],
}
