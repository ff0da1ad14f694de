"""Rebuilding tensors while unpickling: the functions a checkpoint's ``data.pkl`` calls.

In PyTorch: ``torch/_utils.py`` (``_rebuild_tensor``, ``_rebuild_tensor_v2``, ``_rebuild_tensor_v3``,
``_rebuild_parameter``, ``_rebuild_parameter_with_state``, ``_rebuild_meta_tensor_no_storage``,
``_set_obj_state``, and the Python 2 name tables ``IMPORT_MAPPING``/``NAME_MAPPING``), plus
``_rebuild_from_type_v2`` from ``torch/_tensor.py`` and what ``Tensor.set_`` and
``Tensor.__setstate__`` do when a pickle's BUILD opcode changes a tensor.

A file written by ``torch.save`` pickles each tensor as a call, ``torch._utils._rebuild_tensor_v2(
storage, offset, size, stride, requires_grad, OrderedDict())``; the loaders in
``course_lib/serialization.py`` and ``course_lib/_weights_only_unpickler.py`` map that name to
the function of the same name here.  A file chooses every argument, so each function checks
them: every view passes :func:`_check_view`, and no tensor can reach outside its storage.
Error messages show what the file holds through :func:`shown`, which stays short however large
or self-referencing the object is.
"""
from __future__ import annotations

import pickle
import reprlib
import threading

from . import _dtype
from ._size import Size
from ._storage import Storage
from ._tensor import Tensor

_INT64_MAX = (1 << 63) - 1
_SEQUENCES = (tuple, list, Size)
_U64 = 1 << 64



# ---------------------------------------------------------------------------------------------
# Python 2 names, which protocol-2 pickles (torch.save's) use, and their Python 3 names
# ---------------------------------------------------------------------------------------------
IMPORT_MAPPING = {
    "__builtin__": "builtins", "copy_reg": "copyreg", "Queue": "queue", "repr": "reprlib",
    "_abcoll": "collections.abc", "UserDict": "collections", "UserList": "collections",
    "UserString": "collections", "whichdb": "dbm", "StringIO": "io", "cStringIO": "io",
}
NAME_MAPPING = {
    ("__builtin__", "xrange"): ("builtins", "range"), ("__builtin__", "reduce"): ("functools", "reduce"),
    ("__builtin__", "intern"): ("sys", "intern"), ("__builtin__", "unichr"): ("builtins", "chr"),
    ("__builtin__", "unicode"): ("builtins", "str"), ("__builtin__", "long"): ("builtins", "int"),
    ("itertools", "izip"): ("builtins", "zip"), ("itertools", "imap"): ("builtins", "map"),
    ("itertools", "ifilter"): ("builtins", "filter"), ("itertools", "ifilterfalse"): ("itertools", "filterfalse"),
    ("itertools", "izip_longest"): ("itertools", "zip_longest"),
    ("UserDict", "IterableUserDict"): ("collections", "UserDict"),
    ("UserList", "UserList"): ("collections", "UserList"),
    ("UserString", "UserString"): ("collections", "UserString"), ("__builtin__", "basestring"): ("builtins", "str"),
    ("exceptions", "StandardError"): ("builtins", "Exception"), ("UserDict", "UserDict"): ("collections", "UserDict"),
}


# ---------------------------------------------------------------------------------------------
# How error messages show what a file holds: briefly (it may be huge, or hold itself)
# ---------------------------------------------------------------------------------------------
def _type_names(values) -> str:
    """``'int, tuple, NoneType'``: how PyTorch's argument errors show what they got (no reprs: a
    value from a file may be a tensor with 2**62 elements)."""
    return ", ".join(type(v).__name__ for v in values)


class _BriefRepr(reprlib.Repr):
    """``repr`` for error messages about objects a file built: short, and quick to make.

    A file can build a list that holds itself, or one whose repr is 2**40 characters long
    (each level holding the previous one twice, through the memo), or a tensor of 2**62
    elements at stride 0: the plain ``repr`` would never finish.
    """

    def __init__(self):
        super().__init__()
        self.maxlevel = 3
        self.maxtuple = self.maxlist = self.maxdict = self.maxset = self.maxfrozenset = 6
        self.maxstring, self.maxlong, self.maxother = 80, 40, 120

    def repr_instance(self, x, level):
        if isinstance(x, Tensor):
            return f"<{type(x).__name__} of size {list(x._shape)} and dtype {x.dtype.name}>"
        for base in (dict, list, tuple, set, frozenset):  # OrderedDict, Counter, Size, ...
            if isinstance(x, base):
                return f"{type(x).__name__}({getattr(self, 'repr_' + base.__name__)(x, level)})"
        return super().repr_instance(x, level)


def shown(x) -> str:
    """How an error message shows an object from the file (``str`` for strings, as PyTorch's do)."""
    if isinstance(x, str):
        return x if len(x) <= 200 else x[:200] + "..."
    return _BriefRepr().repr(x)


# ---------------------------------------------------------------------------------------------
# The views a file asks for, checked as PyTorch checks them
# ---------------------------------------------------------------------------------------------
def _int_tuple(value, what: str, fn: str = "set_") -> tuple:
    """``value`` (a tuple, list or Size of ints, each within int64) as a plain tuple."""
    if not isinstance(value, (tuple, list)) or not all(type(v) is int for v in value):
        got = f"({_type_names(value)})" if isinstance(value, (tuple, list)) else type(value).__name__
        raise RuntimeError(f"a tensor's {what} must be a tuple of ints, got {got:.200}")
    for i, v in enumerate(value):
        if not -_INT64_MAX - 1 <= v <= _INT64_MAX:
            raise TypeError(f"{fn}(): argument '{what}' failed to unpack the object at pos {i + 1} with error "
                            "\"Overflow when unpacking long long\"")
    return tuple(value)


def _numel_overflows(size: tuple) -> bool:
    """``c10::safe_compute_numel``: the product of the sizes, taken as unsigned 64-bit numbers, overflows
    or does not fit in int64 (so a negative size overflows, unless another size is 0 first)."""
    n, overflow = 1, False
    for s in size:
        n *= s % _U64
        if n >= _U64:
            overflow, n = True, n % _U64
    return overflow or n > _INT64_MAX


def _storage_elements_needed(size: tuple, stride: tuple, offset: int) -> int:
    """Elements a storage must hold for this view (0 for an empty tensor)."""
    if any(s == 0 for s in size):
        return 0
    return offset + 1 + sum((n - 1) * st for n, st in zip(size, stride))


def _check_view(storage_len: int | None, itemsize: int, offset, size, stride, *,
                fn: str = "set_") -> tuple[int, tuple, tuple]:
    """PyTorch's checks when a file points a tensor at a storage (``set_``, or ``empty_strided`` for
    ``fn='empty_strided'``, a meta tensor: ``storage_len`` None), in PyTorch's order and words.

    Every view a load makes passes here, so that no tensor can reach outside its storage.  course_lib
    refuses three things PyTorch accepts in corner cases: negative sizes (``(0, -1)``), negative
    strides (on a dimension of size 1, or on the meta device) and views of more than 2**63 - 1
    bytes (``(2**62,)`` at stride 0), which numpy cannot represent.
    """
    # The common case in one pass (a state_dict has thousands of tensors): non-negative int64s,
    # element count and bytes within int64, the last element inside the storage.
    if type(offset) is int and 0 <= offset <= _INT64_MAX and type(size) in _SEQUENCES \
            and type(stride) in _SEQUENCES and len(size) == len(stride):
        numel, last = 1, offset
        for n, st in zip(size, stride):
            if type(n) is not int or type(st) is not int or not (0 <= n <= _INT64_MAX and 0 <= st <= _INT64_MAX):
                break
            numel *= n
            last += (n - 1) * st
        else:
            if numel == 0:
                return offset, tuple(size), tuple(stride)
            if numel * itemsize <= _INT64_MAX and (last + 1) * itemsize <= _INT64_MAX and (
                    storage_len is None or last < storage_len):
                return offset, tuple(size), tuple(stride)
    # Anything else: PyTorch's checks in its order, for its error messages.
    if type(offset) is not int:
        raise RuntimeError(f"a tensor's storage offset must be an int, got {type(offset).__name__}")
    size, stride = _int_tuple(size, "size", fn), _int_tuple(stride, "stride", fn)
    if fn == "empty_strided":
        for n in size:
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(size)}")
        if len(size) != len(stride):
            raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                               f"({len(stride)})")
    elif len(size) != len(stride):
        raise RuntimeError(f"unequal size length ({len(size)}) and stride length ({len(stride)})")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if offset > _INT64_MAX:
        raise TypeError(f"{fn}(): argument 'storage_offset' failed to unpack the object at pos 2 with error "
                        "\"Overflow when unpacking long long\"")
    if _numel_overflows(size):
        raise RuntimeError("numel: integer multiplication overflow")
    for n in size:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(size)}")
    need = _storage_elements_needed(size, stride, offset)
    if storage_len is not None and 0 not in size:  # (PyTorch does not check a meta tensor's storage size)
        if any(st < 0 and n > 1 for n, st in zip(size, stride)) or need * itemsize > _INT64_MAX:
            raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                               f"strides={list(stride)}")
        numel = 1
        for n in size:
            numel *= n
        if numel * itemsize > _INT64_MAX:  # e.g. 2**62 float32 elements, all at stride 0
            raise RuntimeError(f"course_lib cannot hold a tensor of sizes {list(size)}: its {numel * itemsize} bytes "
                               "are more than a numpy array can have (2**63 - 1), even as a view")
    if any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    if storage_len is not None and need > storage_len:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and itemsize "
            f"{itemsize} requiring a storage size of {need * itemsize} are out of bounds for storage of size "
            f"{storage_len * itemsize}")
    return offset, size, stride


# ---------------------------------------------------------------------------------------------
# The rebuild functions a pickle calls for each tensor
# ---------------------------------------------------------------------------------------------
class _LoadState(threading.local):
    v3_views: dict | None = None  # (id(byte storage), dtype) -> typed storage, during one load


_load_state = _LoadState()


def _rebuild_tensor(storage: Storage, storage_offset: int, size, stride) -> Tensor:
    """A tensor viewing ``storage`` (no copy).  Checks that the view fits in the storage."""
    if not isinstance(storage, Storage):
        raise RuntimeError(f"expected a storage to rebuild a tensor from, got {type(storage).__name__}")
    offset, size, stride = _check_view(len(storage), storage.dtype.itemsize, storage_offset, size, stride)
    return Tensor._make(storage, offset, size, stride, storage.dtype)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None) -> Tensor:
    """What ``data.pkl`` calls for every tensor: ``_rebuild_tensor`` + ``requires_grad``.

    ``backward_hooks`` is always an empty ``OrderedDict()`` in files written since
    PyTorch 1.x (hooks are not saved); ``metadata`` (conjugate/negative bits) is ignored.
    """
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    if requires_grad:
        t.requires_grad = bool(requires_grad)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None) -> Tensor:
    """Like v2, but the storage is untyped bytes and the dtype comes separately."""
    if not isinstance(storage, Storage) or not isinstance(dtype, _dtype.dtype):
        raise RuntimeError("_rebuild_tensor_v3 needs an untyped storage and a dtype")
    if storage.dtype is not dtype:
        cache = _load_state.v3_views if _load_state.v3_views is not None else {}
        key = (id(storage), dtype)
        typed = cache.get(key)
        if typed is None:
            nbytes = storage.nbytes()
            if nbytes % dtype.itemsize:
                raise RuntimeError(f"a storage of {nbytes} bytes cannot hold {dtype} elements")
            if storage.data is None:
                typed = Storage(None, dtype, storage.device, size=nbytes // dtype.itemsize)
            else:
                typed = Storage(storage.data.view(dtype.np), dtype, owner=storage)
            cache[key] = typed
        storage = typed
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata)


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad) -> Tensor:
    """A tensor on the meta device: shape, stride and dtype, no data (what PyTorch writes for meta tensors)."""
    if not isinstance(dtype, _dtype.dtype):
        raise RuntimeError(f"expected a dtype, got {type(dtype).__name__}")
    _, size, stride = _check_view(None, dtype.itemsize, 0, size, stride, fn="empty_strided")
    storage = Storage(None, dtype, "meta", size=_storage_elements_needed(size, stride, 0))
    t = Tensor._make(storage, 0, size, stride, dtype)
    if requires_grad:
        t.requires_grad = True
    return t


# ---------------------------------------------------------------------------------------------
# Tensor state from a file: the only ways a pickle can change an existing tensor
# ---------------------------------------------------------------------------------------------
_SET_OVERLOADS = (" * ()\n * (torch.Storage source)\n"
                  " * (torch.Storage source, int storage_offset, tuple of ints size, tuple of ints stride = None)\n"
                  " * (Tensor source)\n"
                  " * (Tensor source, int storage_offset, tuple of ints size, tuple of ints stride = None)\n")


def _contiguous_strides(size: tuple) -> tuple:
    # (not _ops.common's: its cache is process-wide, and a file must not add to it)
    strides, acc = [], 1
    for s in reversed(size):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _is_int_sequence(v) -> bool:
    return isinstance(v, (tuple, list)) and all(type(x) is int for x in v)


def _star_args(state) -> tuple:
    """``*state`` in ``inst.set_(*state)``, without iterating a tensor row by row (it may have 2**62 rows)."""
    if isinstance(state, Tensor):
        if state.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        if state.shape[0] > 4:
            raise TypeError(f"set_() received an invalid combination of arguments - got ({state.shape[0]} tensors)")
    try:
        return tuple(state)
    except TypeError:
        raise TypeError(f"Tensor.set_() argument after * must be an iterable, not {type(state).__name__}") from None


def _tensor_set_(self: Tensor, *args) -> Tensor:
    """``self.set_(*args)``: what BUILD on a tensor does (PyTorch's legacy format), with ``set_``'s checks.

    ``set_()`` empties the tensor; ``set_(source)`` views all of a storage or the same
    elements as a tensor; ``set_(source, offset, size, stride=None)`` views the given
    elements.  The storage must have the tensor's dtype and device, and the view must
    lie inside it (a loaded storage cannot grow, so PyTorch refuses too).
    """
    n = len(args)
    source = args[0] if n else None
    ok = n == 0 or (isinstance(source, (Storage, Tensor)) and (
        n == 1 or (n in (3, 4) and type(args[1]) is int and _is_int_sequence(args[2])
                   and (n == 3 or args[3] is None or _is_int_sequence(args[3])))))
    if not ok:
        raise TypeError(f"set_() received an invalid combination of arguments - got ({_type_names(args)}), "
                        f"but expected one of:\n{_SET_OVERLOADS}")
    if self._requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if n == 0:
        storage, offset, size, stride = Storage.empty(0, self.dtype, self._storage.device), 0, (0,), (1,)
    else:
        storage = source if isinstance(source, Storage) else source._storage
        if source.dtype is not self.dtype:
            own_type = _dtype.c_type_name(self.dtype, "demangled")
            if isinstance(source, Storage):
                raise RuntimeError(f"Expected a Storage of type {own_type} or an UntypedStorage, "
                                   f"but got type {source.dtype._tensor_name} for argument 1 'storage'")
            raise RuntimeError(f"Could not set tensor of type {_dtype.c_type_name(source.dtype, 'demangled')} to a "
                               f"tensor of type {own_type}")
        if storage.device != self._storage.device:
            raise RuntimeError(f'Attempted to set the storage of a tensor on device "{self._storage.device}" to a '
                               f'storage on different device "{storage.device}".  This is no longer allowed; the '
                               "devices must match.")
        if n == 1 and isinstance(source, Storage):
            offset, size, stride = 0, (len(storage),), (1,)
        elif n == 1:
            offset, size, stride = source._offset, source._shape, source._stride
        else:
            offset, size = args[1], args[2]
            stride = args[3] if n == 4 and args[3] is not None else None
            if stride is None and _is_int_sequence(size):
                stride = _contiguous_strides(tuple(size))
        offset, size, stride = _check_view(len(storage), storage.dtype.itemsize, offset, size, stride)
    self._storage, self._offset, self._shape, self._stride, self._np_cache = storage, offset, size, stride, None
    self._bump_version()
    return self


def _tensor_setstate(self: Tensor, state) -> None:
    """``Tensor.__setstate__``: what BUILD on a Parameter does (PyTorch's legacy formats)."""
    if self.grad_fn is not None:
        raise RuntimeError("__setstate__ can be only called on leaf Tensors")
    if len(state) == 4:  # legacy serialization of Tensor
        _tensor_set_(self, *state)
        return
    if len(state) == 5:  # legacy serialization of Variable
        _set_tensor_attribute(self, "data", state[0])
        state = (state[3], state[4], state[2])
    requires_grad, _, _backward_hooks = state  # hooks are never restored (PyTorch's are not either)
    _set_tensor_attribute(self, "requires_grad", requires_grad)


def _set_tensor_attribute(t: Tensor, name, value) -> None:
    """``setattr(t, name, value)`` for an attribute a file sets, as PyTorch's C tensor would allow it.

    ``data``, ``requires_grad`` and ``grad`` go through their checked setters; anything else
    the Tensor class defines (``dtype``, ``shape``, ``grad_fn``, methods) is not writable; any
    name starting with ``_`` is refused, because course_lib keeps its internals in Python
    attributes.  Other names become plain Python attributes (``t.note = "hello"``).
    """
    if type(name) is not str:
        raise TypeError(f"attribute name must be string, not '{type(name).__name__}'")
    if name == "data":
        if not isinstance(value, Tensor):
            cls = type(value)
            got = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
            raise TypeError(f"Variable data has to be a tensor, but got {got}")
        t.data = value
    elif name == "requires_grad":
        if type(value) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        t.requires_grad = value
    elif name == "grad":
        if isinstance(value, Tensor) and value._storage.device != t._storage.device:
            raise RuntimeError(f"attempting to assign a gradient with device type '{value._storage.device}' to a "
                               f"tensor with device type '{t._storage.device}'. Please ensure that the gradient and "
                               "the tensor are on the same device")
        t.grad = value
    elif name.startswith("_"):
        raise pickle.UnpicklingError(f"refusing to set the private tensor attribute {name!r:.80} from a file")
    elif hasattr(type(t), name):
        raise AttributeError(_dtype.readonly_attribute_message("course_lib.Tensor", type(t), name))
    else:
        setattr(t, name, value)


def _set_obj_state(obj: Tensor, state) -> Tensor:
    """``torch._utils._set_obj_state``: a tensor's Python attributes, ``{name: value}`` or
    ``(dict_state, slots_state)``, each set through :func:`_set_tensor_attribute`."""
    if isinstance(state, tuple):
        if len(state) != 2:
            raise RuntimeError(f"Invalid serialized state: a tuple of {len(state)} items "
                               f"({_type_names(state[:8]):.200})")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    # Starting with Python 3.11, the __dict__ attribute is lazily created and is serialized as None when not needed.
    if dict_state:
        for k, v in dict_state.items():
            _set_tensor_attribute(obj, k, v)
    if slots_state:
        for k, v in slots_state.items():
            _set_tensor_attribute(obj, k, v)
    return obj


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from .nn.parameter import Parameter

    if not isinstance(data, Tensor):
        raise RuntimeError(f"a Parameter is rebuilt from a tensor, got {type(data).__name__}")
    return Parameter(data, bool(requires_grad))


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    param = _rebuild_parameter(data, requires_grad, backward_hooks)
    _set_obj_state(param, state)
    return param


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor subclass, or a tensor with Python attributes: rebuild, re-type, then set the attributes."""
    from .nn.parameter import Parameter

    if not any(func is f for f in (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
                                   _rebuild_parameter_with_state, _rebuild_meta_tensor_no_storage)):
        got = getattr(func, "__qualname__", None) if callable(func) else None
        raise pickle.UnpicklingError("_rebuild_from_type_v2 may only call a tensor rebuild function, not "
                                     f"{got or type(func).__name__:.80}")
    if not isinstance(args, tuple):
        raise pickle.UnpicklingError("_rebuild_from_type_v2 needs a tuple of arguments")
    ret = func(*args)
    if type(ret) is not new_type:
        if new_type is Parameter:
            ret = Parameter(ret, ret.requires_grad)
        elif isinstance(new_type, type) and issubclass(new_type, Tensor):
            sub = new_type._make(ret._storage, ret._offset, ret._shape, ret._stride, ret.dtype)
            sub._requires_grad = ret._requires_grad
            ret = sub
        else:
            got = new_type.__qualname__ if isinstance(new_type, type) else type(new_type).__name__
            raise pickle.UnpicklingError(f"cannot rebuild a tensor as {got:.80}")
    if getattr(type(ret), "__setstate__", None) is not None:
        ret.__setstate__(state)  # an allowlisted subclass that restores its own state (Tensor has none)
    else:
        ret = _set_obj_state(ret, state)
    return ret
