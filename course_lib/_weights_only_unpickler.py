"""The restricted unpickler behind ``course_lib.load(f)`` (``weights_only=True``, the default).

In PyTorch: ``torch/_weights_only_unpickler.py``.  This file follows it closely:
same allowlist semantics, same opcode subset, same error texts (with
``course_lib.serialization`` where PyTorch says ``torch.serialization``).

Why it exists: a pickle is a small program for a stack machine, and two of its
instructions are enough to run any code.  ``GLOBAL module name`` pushes *any*
importable object (``os.system``, ``builtins.eval``) and ``REDUCE`` calls what is
on the stack with a tuple of arguments.  ``pickle.load`` therefore executes
whatever the file says.  This unpickler runs the same machine, but:

1. ``GLOBAL`` never imports anything.  The name is looked up in an allowlist
   (tensors, storages, dtypes, ``OrderedDict``, ...) plus the names added with
   :func:`add_safe_globals`; anything else is refused with an error that names
   the global.  Modules ``sys``, ``os``, ``posix`` and ``nt`` are refused always,
   even if someone allowlisted something from them.
2. ``REDUCE`` and ``NEWOBJ`` only call allowlisted objects; ``APPEND(S)`` only extends
   lists; ``SETITEM(S)`` only fills dicts.  ``BUILD`` does what PyTorch's does and no
   more: on a tensor it is ``tensor.set_(*state)`` (a storage, offset, size and stride,
   checked to lie inside the storage), on a Parameter (or an allowlisted tensor subclass)
   ``Tensor.__setstate__``, on an ``OrderedDict`` it sets attributes (a state_dict's
   ``_metadata``), on other allowlisted types it runs ``__setstate__`` or sets the
   instance's attributes.  Devices and dtypes are allowlisted but immutable, so BUILD
   on them fails; no file can change a tensor's dtype, shape or storage except through
   those checks.
3. Only the protocol-2 opcodes that ``torch.save`` emits are understood; any
   other byte is refused (``Unsupported operand 149`` is protocol 4's FRAME).  The
   ones that only build data (numbers, strings, containers, the memo) are in
   ``course_lib/_pickle_opcodes.py``; the ones above are here, in :class:`Unpickler`.
4. Persistent ids (``BINPERSID``) must be ``('storage', ...)`` tuples.

course_lib adds guards PyTorch does not have: malformed or truncated data always
raises :class:`pickle.UnpicklingError` (never ``IndexError``, ``TypeError``,
``EOFError``, ...: the message names them); tuples nested deeper than
``MAX_TUPLE_DEPTH`` are refused (hashing a tuple nested a million deep overflows
CPython's C stack), and so are tuples that reach billions of items through shared
references (``MAX_SHARED_TUPLE_ITEMS``); error messages show objects from the file
briefly (a list built through the memo can have a repr of 2**40 characters).
"""
from __future__ import annotations

import functools
from collections import Counter, OrderedDict
from pickle import UnpicklingError
from typing import Any, Callable

from ._pickle_opcodes import (  # noqa: F401 (the limits the docstring names)
    _ARGUMENT_BYTES,
    _ARGUMENT_BYTES_BY_CODE,
    _MAX_ARGUMENT_BYTES,
    _OPNAMES,
    BINUNICODE,
    GLOBAL,
    LONG1,
    MAX_SHARED_TUPLE_ITEMS,
    MAX_TUPLE_DEPTH,
    SHORT_BINSTRING,
    STOP,
    _DataOpcodes,
    _end_of,
    _opcode_table,
    _read_line,
    _Stop,
    _truncated,
)
from ._tensor import Tensor
from ._utils import IMPORT_MAPPING, NAME_MAPPING, _star_args, _tensor_set_, _tensor_setstate, shown
from .nn.parameter import Parameter

__all__ = [
    "Unpickler", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
    "get_globals_in_pkl", "UnpicklingError",
]

#: Modules that can never be loaded, even if something from them was allowlisted.
_blocklisted_modules = ["sys", "os", "posix", "nt"]

# ---------------------------------------------------------------------------------------------
# The user's allowlist: add_safe_globals / safe_globals
# ---------------------------------------------------------------------------------------------
_marked_safe_globals_set: set = set()


def add_safe_globals(safe_globals: list[Callable | tuple[Callable, str]]) -> None:
    """Allow these classes/functions in ``weights_only`` loads.

    Each item is an object (found in the file as ``{__module__}.{__qualname__}``)
    or a pair ``(object, "full.path.in.the.file")``.  Only allowlist what you
    trust: an allowlisted callable can be called with any arguments the file chooses.

    >>> class Point: ...
    >>> add_safe_globals([Point])
    """
    global _marked_safe_globals_set
    _marked_safe_globals_set = _marked_safe_globals_set.union(set(safe_globals))


def get_safe_globals() -> list[Callable | tuple[Callable, str]]:
    """The globals added with :func:`add_safe_globals`."""
    return list(_marked_safe_globals_set)


def clear_safe_globals() -> None:
    """Forget every global added with :func:`add_safe_globals`."""
    global _marked_safe_globals_set
    _marked_safe_globals_set = set()


def _remove_safe_globals(globals_to_remove) -> None:
    global _marked_safe_globals_set
    _marked_safe_globals_set = _marked_safe_globals_set - set(globals_to_remove)


class safe_globals:
    """Context manager: allow these globals inside the ``with`` block only.

    >>> with safe_globals([Point]):
    ...     obj = course_lib.load("points.pt")
    """

    def __init__(self, safe_globals: list[Callable | tuple[Callable, str]]):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb):
        _remove_safe_globals(self.safe_globals)


def _get_user_allowed_globals() -> dict[str, Any]:
    rc: dict[str, Any] = {}
    for f in _marked_safe_globals_set:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                                 f"length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: {type(f[1])}")
            f, name = f
            rc[name] = f
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


# ---------------------------------------------------------------------------------------------
# The built-in allowlist
# ---------------------------------------------------------------------------------------------
def _bytearray(*args):
    # bytearray(str, encoding) is how protocol 2 pickles a bytearray.  bytearray(n) would
    # allocate n bytes (a memory bomb from a 10-byte pickle), so only data is accepted.
    if not args or isinstance(args[0], int):
        raise UnpicklingError("builtins.bytearray may only be called with data in a weights_only load, not a size")
    return bytearray(*args)


_bytearray.__qualname__ = _bytearray.__name__ = "bytearray"


@functools.lru_cache(maxsize=1)
def _get_allowed_globals() -> dict[str, Any]:
    """Full name in the file -> the course_lib object it stands for."""
    from _codecs import encode

    from .serialization import _torch_globals

    rc: dict[str, Any] = {
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": Counter,
        "_codecs.encode": encode,  # for bytes
        "builtins.bytearray": _bytearray,  # for bytearray
        "builtins.set": set,  # for set
        "builtins.complex": complex,  # for complex
    }
    rc.update(_torch_globals())
    return rc


#: Every global torch.load(weights_only=True) allows (torch 2.13.0, ``_get_allowed_globals()``),
#: besides the builtins and collections ones.  The ones course_lib can build are in
#: ``serialization._torch_globals()``; the others get a "course_lib cannot load" error, not "unsafe".
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


def _allowed_ids() -> set[int]:
    # Identity, not equality: `tensor in list_of_allowed` would compare elementwise.
    return {id(v) for v in _get_allowed_globals().values()} | {id(v) for v in _get_user_allowed_globals().values()}


def _map_global(module: str, name: str) -> tuple[str, str]:
    # torch.save uses protocol 2, which writes Python 2 module names (__builtin__)
    if (module, name) in NAME_MAPPING:
        return NAME_MAPPING[(module, name)]
    if module in IMPORT_MAPPING:
        return IMPORT_MAPPING[module], name
    return module, name


def _display_name(full_path: str) -> str:
    # builtins.print is shown as print, as PyTorch does
    if full_path.startswith("builtins"):
        rest = full_path[len("builtins"):]
        return rest[1:] if rest.startswith(".") else "builtins" + rest
    return full_path


def unsupported_global_message(full_path: str) -> str:
    """The error for a global that is not allowlisted (PyTorch's words)."""
    full_path = _display_name(full_path)
    return (f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. "
            f"Please use `course_lib.serialization.add_safe_globals([{full_path}])` or the "
            f"`course_lib.serialization.safe_globals([{full_path}])` context manager to allowlist this global "
            "if you trust this class/function.")


def _as_bytes(file) -> bytes:
    return bytes(file) if isinstance(file, (bytes, bytearray, memoryview)) else file.read()


def get_globals_in_pkl(file) -> set[str]:
    """The full names of every GLOBAL in a pickle, without running it (PyTorch's ``get_globals_in_pkl``)."""
    data = _as_bytes(file)
    found: set[str] = set()
    pos = 0
    while True:
        op = data[pos:_end_of(data, pos, 1)]
        pos += 1
        if op == GLOBAL:
            raw_module, pos = _read_line(data, pos)
            module = raw_module.decode("utf-8")
            raw_name, pos = _read_line(data, pos)
            module, name = _map_global(module, raw_name.decode("utf-8"))
            found.add(f"{module}.{name}")
        elif op == STOP:
            return found
        elif op in _ARGUMENT_BYTES:
            start, pos = pos, _end_of(data, pos, _ARGUMENT_BYTES[op])
            if op == BINUNICODE:
                pos = _end_of(data, pos, int.from_bytes(data[start:pos], "little"))
            elif op in (SHORT_BINSTRING, LONG1):
                pos = _end_of(data, pos, data[start])
        else:
            raise UnpicklingError(f"Unsupported operand {op[0]}")


# ---------------------------------------------------------------------------------------------
# The unpickler
# ---------------------------------------------------------------------------------------------
class _Passthrough(Exception):
    """Carries an exception raised by persistent_load out of the opcode loop unchanged."""

    def __init__(self, error: Exception):
        self.error = error


class Unpickler(_DataOpcodes):
    """Runs a pickle with the restrictions above.  ``persistent_load`` is set by the caller.

    The opcode loop (:meth:`_load`) reads one byte, checks that the opcode's fixed-size argument
    is there, and calls the opcode's method with the position of the argument; the method returns
    where the next opcode starts.  The methods are named as in ``Lib/pickle.py`` (``load_binput``,
    ``load_reduce``, ...): the ones that only build data are in ``course_lib/_pickle_opcodes.py``,
    the ones the allowlist restricts below.

    >>> Unpickler(io.BytesIO(pickle.dumps({"a": 1}, protocol=2))).load()
    {'a': 1}
    """

    def __init__(self, file, *, encoding: str = "bytes"):
        self.encoding = encoding
        self._data = _as_bytes(file)
        self.memo: dict[int, Any] = {}
        self.proto: int = -1

    def persistent_load(self, pid):
        raise UnpicklingError("unsupported persistent id encountered")

    def load(self):
        """Run the pickle and return the object it builds."""
        try:
            return self._load()
        except _Passthrough as p:
            raise p.error.with_traceback(p.error.__traceback__) from None
        except (UnpicklingError, RuntimeError, MemoryError):
            raise
        except Exception as e:  # noqa: BLE001
            # IndexError: popping an empty stack (a MARK or an argument missing), KeyError: an
            # unknown memo index, TypeError: a call with the wrong arguments, LookupError:
            # _codecs.encode with an unknown encoding, ...: the data is malformed.  Say where.
            op = self._op
            name = _OPNAMES.get(op, str(op))
            raise UnpicklingError(f"malformed pickle data at byte {self._op_pos} ({name}): "
                                  f"{type(e).__name__}: {e}") from None

    def _load(self):
        # One pass over the bytes with an index: an opcode is one byte, its argument follows, and
        # its handler comes from a table indexed by that byte.  This loop is most of a load's
        # Python time (a state_dict's pickle has about 30 opcodes per tensor).
        self._op, self._op_pos = None, 0
        self._new_stacks()
        self._allowed = _get_allowed_globals()
        self._user_allowed = _get_user_allowed_globals()
        self._allowed_ids = _allowed_ids()
        data = self._data
        n = len(data)
        if isinstance(data, str) and data:  # from a text file: no character is an opcode (as in PyTorch)
            raise UnpicklingError(f"Unsupported operand {data[0]}")
        handlers, argument_bytes = _HANDLERS, _ARGUMENT_BYTES_BY_CODE
        pos = 0
        try:
            # Until the last few bytes, every fixed-size argument (8 bytes at most) is inside the
            # data: no check.  In the last bytes, check that the opcode's argument is there.
            unchecked_end = n - 1 - _MAX_ARGUMENT_BYTES
            while pos < unchecked_end:
                pos = handlers[data[pos]](self, pos + 1)
            while pos < n:
                op = data[pos]
                if pos + argument_bytes[op] >= n:
                    raise _truncated(pos + 1, argument_bytes[op], n)
                pos = handlers[op](self, pos + 1)
        except _Stop as stop:
            return stop.value
        except BaseException:
            self._op_pos, self._op = pos, data[pos]  # where it went wrong, for the error message
            raise
        raise UnpicklingError(f"pickle data was truncated: it ends at byte {n} without a STOP opcode")

    # -- globals, calls and state: only what the allowlists allow --------------------------------
    def load_global(self, pos: int) -> int:
        raw_module, pos = _read_line(self._data, pos)
        raw_name, pos = _read_line(self._data, pos)
        module, name = _map_global(raw_module.decode("utf-8"), raw_name.decode("utf-8"))
        full_path = f"{module}.{name}"
        if module in _blocklisted_modules:
            raise UnpicklingError(f"Trying to load unsupported GLOBAL {full_path} whose module {module} is blocked.")
        if full_path in self._allowed:
            self.stack.append(self._allowed[full_path])
        elif full_path in self._user_allowed:
            self.stack.append(self._user_allowed[full_path])
        else:
            err = _torch_only_error(full_path)
            if err is not None:
                raise err
            raise UnpicklingError(unsupported_global_message(full_path))
        return pos

    def load_reduce(self, pos: int) -> int:
        stack = self.stack
        args = stack.pop()
        func = stack[-1]
        if id(func) not in self._allowed_ids:
            error_msg = f"Trying to call reduce for unrecognized function {shown(func)}"
            if hasattr(func, "__self__"):
                error_msg += f" which belongs to {shown(func.__self__)}"
            raise UnpicklingError(error_msg)
        if type(args) is not tuple:
            raise UnpicklingError(f"REDUCE needs a tuple of arguments, got {type(args).__name__}")
        result = func(*args)
        if type(result) is tuple:
            result = self._tuple_of(result)
        elif isinstance(result, tuple):
            self._tuple_of(result)  # a tuple subclass (Size): check the depth of what it holds
        stack[-1] = result
        return pos

    def load_newobj(self, pos: int) -> int:
        args = self.stack.pop()
        cls = self.stack.pop()
        if cls is Parameter:
            self.stack.append(Parameter(*args))
        elif id(cls) in self._allowed_ids and isinstance(cls, type):
            self.stack.append(cls.__new__(cls, *args))
        else:
            raise UnpicklingError("Can only create new object for nn.Parameter or classes allowlisted "
                                  f"via `add_safe_globals` but got {shown(cls)}")
        return pos

    def load_build(self, pos: int) -> int:
        state = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) is Tensor:
            # Legacy unpickling: PyTorch runs inst.set_(*state), with set_'s checks
            _tensor_set_(inst, *_star_args(state))
        elif type(inst) is Parameter:
            _tensor_setstate(inst, state)
        elif type(inst) is OrderedDict:
            inst.__dict__.update(state)  # a state_dict's _metadata
        elif id(type(inst)) in self._allowed_ids or type(inst) is bytearray:
            _build_allowlisted(inst, state)
        else:
            raise UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                                  f"via `add_safe_globals`, but got {type(inst)}")
        return pos

    def load_binpersid(self, pos: int) -> int:
        pid = self.stack.pop()
        # Only allow persistent load of storage
        if type(pid) is not tuple and type(pid) is not int:
            raise UnpicklingError(f"persistent_load id must be tuple or int, but got {type(pid)}")
        if type(pid) is tuple and len(pid) > 0 and _maybe_decode_ascii(pid[0]) != "storage":
            raise UnpicklingError(f"Only persistent_load of storage is allowed, but got {type(pid[0])}")
        try:
            storage = self.persistent_load(pid)
        except Exception as e:  # the caller's errors are the caller's: not "malformed data"
            raise _Passthrough(e) from None
        self.stack.append(storage)
        return pos

    def load_unsupported(self, pos: int) -> int:
        raise UnpicklingError(f"Unsupported operand {self._data[pos - 1]}")


#: The method that runs each opcode, by opcode byte: ``load_`` and the opcode's name, as in pickle.py.
_HANDLERS = _opcode_table({op: getattr(Unpickler, f"load_{_OPNAMES[op[0]].lower()}") for op in _ARGUMENT_BYTES},
                          Unpickler.load_unsupported)


def _build_allowlisted(inst, state) -> None:
    """BUILD on an instance of an allowlisted type: its ``__setstate__``, or what pickle's
    ``load_build`` does (a Tensor subclass without one gets ``Tensor.__setstate__``, as in PyTorch)."""
    if hasattr(inst, "__setstate__"):
        inst.__setstate__(state)
    elif isinstance(inst, Tensor):
        _tensor_setstate(inst, state)
    else:
        slotstate = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slotstate = state
        if state:
            inst.__dict__.update(state)
        if slotstate:
            for k, v in slotstate.items():
                setattr(inst, k, v)


def _maybe_decode_ascii(b):
    return b.decode("ascii") if isinstance(b, bytes) else b


def load(file, *, encoding: str = "ASCII"):
    """Run a pickle (bytes or a binary file) under the restrictions; storages are refused."""
    return Unpickler(file, encoding=encoding).load()
