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
   other byte is refused (``Unsupported operand 149`` is protocol 4's FRAME).
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
import reprlib
import struct
import warnings
from collections import Counter, OrderedDict
from pickle import UnpicklingError, decode_long
from typing import Any, Callable

__all__ = [
    "Unpickler", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
    "get_globals_in_pkl", "UnpicklingError",
]

#: Modules that can never be loaded, even if something from them was allowlisted.
_blocklisted_modules = ["sys", "os", "posix", "nt"]

#: Tuples deeper than this are refused (see the module docstring).
MAX_TUPLE_DEPTH = 1000
#: A tuple may hold (in all its levels) as many items as the pickle has bytes, plus this many more
#: reached through references to shared tuples: hashing a tuple in which each of 60 levels holds the
#: one below twice would visit 2**60 items.
MAX_SHARED_TUPLE_ITEMS = 1_000_000

# Python 2 names that protocol-2 pickles use (torch/_utils.py IMPORT_MAPPING / NAME_MAPPING).
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
    ("UserDict", "IterableUserDict"): ("collections", "UserDict"), ("UserList", "UserList"): ("collections", "UserList"),
    ("UserString", "UserString"): ("collections", "UserString"), ("__builtin__", "basestring"): ("builtins", "str"),
    ("exceptions", "StandardError"): ("builtins", "Exception"), ("UserDict", "UserDict"): ("collections", "UserDict"),
}

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
                raise ValueError(
                    f"Expected tuple of length 2 (global, str of callable full path), but got tuple of length: {len(f)}")
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

    from . import serialization as S

    rc: dict[str, Any] = {
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": Counter,
        "_codecs.encode": encode,  # for bytes
        "builtins.bytearray": _bytearray,  # for bytearray
        "builtins.set": set,  # for set
        "builtins.complex": complex,  # for complex
    }
    rc.update(S._torch_globals())
    return rc


def _allowed_ids() -> set[int]:
    # Identity, not equality: `tensor in list_of_allowed` would compare elementwise.
    return {id(v) for v in _get_allowed_globals().values()} | {id(v) for v in _get_user_allowed_globals().values()}


def _read_global_instruction(readline: Callable) -> tuple[str, str]:
    module = readline().decode("utf-8")
    name = readline().decode("utf-8")
    # torch.save uses protocol 2, which writes Python 2 module names (__builtin__)
    if (module, name) in NAME_MAPPING:
        module, name = NAME_MAPPING[(module, name)]
    elif module in IMPORT_MAPPING:
        module = IMPORT_MAPPING[module]
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


# ---------------------------------------------------------------------------------------------
# Opcodes (the protocol-2 subset torch.save writes; pickle.py has the full list)
# ---------------------------------------------------------------------------------------------
MARK, STOP, BINPERSID, REDUCE, BUILD, GLOBAL = b"(", b".", b"Q", b"R", b"b", b"c"
APPEND, APPENDS, SETITEM, SETITEMS = b"a", b"e", b"s", b"u"
BININT, BININT1, BININT2, LONG1, BINFLOAT = b"J", b"K", b"M", b"\x8a", b"G"
BINUNICODE, SHORT_BINSTRING = b"X", b"U"
NONE, NEWTRUE, NEWFALSE = b"N", b"\x88", b"\x89"
EMPTY_TUPLE, EMPTY_LIST, EMPTY_DICT, EMPTY_SET = b")", b"]", b"}", b"\x8f"
TUPLE, TUPLE1, TUPLE2, TUPLE3 = b"t", b"\x85", b"\x86", b"\x87"
BINGET, LONG_BINGET, BINPUT, LONG_BINPUT = b"h", b"j", b"q", b"r"
NEWOBJ, PROTO = b"\x81", b"\x80"

(_MARK, _STOP, _BINPERSID, _REDUCE, _BUILD, _GLOBAL, _APPEND, _APPENDS, _SETITEM, _SETITEMS, _BININT, _BININT1,
 _BININT2, _LONG1, _BINFLOAT, _BINUNICODE, _SHORT_BINSTRING, _NONE, _NEWTRUE, _NEWFALSE, _EMPTY_TUPLE, _EMPTY_LIST,
 _EMPTY_DICT, _EMPTY_SET, _TUPLE, _TUPLE1, _TUPLE2, _TUPLE3, _BINGET, _LONG_BINGET, _BINPUT, _LONG_BINPUT, _NEWOBJ,
 _PROTO) = (op[0] for op in (MARK, STOP, BINPERSID, REDUCE, BUILD, GLOBAL, APPEND, APPENDS, SETITEM, SETITEMS, BININT,
                             BININT1, BININT2, LONG1, BINFLOAT, BINUNICODE, SHORT_BINSTRING, NONE, NEWTRUE, NEWFALSE,
                             EMPTY_TUPLE, EMPTY_LIST, EMPTY_DICT, EMPTY_SET, TUPLE, TUPLE1, TUPLE2, TUPLE3, BINGET,
                             LONG_BINGET, BINPUT, LONG_BINPUT, NEWOBJ, PROTO))

_OPNAMES = {v[0]: k for k, v in dict(globals()).items() if isinstance(v, bytes) and len(v) == 1 and k.isupper()}

_bytes_to_skip = {
    NEWOBJ: 0, REDUCE: 0, BUILD: 0, APPEND: 0, APPENDS: 0, SETITEM: 0, SETITEMS: 0, MARK: 0, TUPLE: 0,
    TUPLE1: 0, TUPLE2: 0, TUPLE3: 0, NONE: 0, NEWFALSE: 0, NEWTRUE: 0, EMPTY_TUPLE: 0, EMPTY_LIST: 0,
    EMPTY_DICT: 0, EMPTY_SET: 0, BINPERSID: 0, BININT: 4, BININT1: 1, BININT2: 2, BINFLOAT: 8,
    BINGET: 1, LONG_BINGET: 4, BINPUT: 1, LONG_BINPUT: 4,
}


class _Reader:
    """read(n)/readline() over bytes that refuse to run past the end (truncated data)."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def read(self, n: int) -> bytes:
        p = self.pos
        if p + n > len(self.data):
            raise UnpicklingError(f"pickle data was truncated: needed {n} bytes at byte {p}, "
                                  f"but the data ends at byte {len(self.data)}")
        self.pos = p + n
        return self.data[p:p + n]

    def readline(self) -> bytes:
        p = self.pos
        end = self.data.find(b"\n", p)
        if end < 0:
            raise UnpicklingError(f"pickle data was truncated: no end of line after byte {p}")
        self.pos = end + 1
        return self.data[p:end]


def _as_reader(file) -> _Reader:
    if isinstance(file, (bytes, bytearray, memoryview)):
        return _Reader(bytes(file))
    return _Reader(file.read())


def get_globals_in_pkl(file) -> set[str]:
    """The full names of every GLOBAL in a pickle, without running it (PyTorch's ``get_globals_in_pkl``)."""
    r = _as_reader(file)
    found: set[str] = set()
    while True:
        key = r.read(1)
        if key == GLOBAL:
            module, name = _read_global_instruction(r.readline)
            found.add(f"{module}.{name}")
        elif key in _bytes_to_skip:
            if _bytes_to_skip[key]:
                r.read(_bytes_to_skip[key])
        elif key == BINUNICODE:
            r.read(struct.unpack("<I", r.read(4))[0])
        elif key in (SHORT_BINSTRING, LONG1):
            r.read(r.read(1)[0])
        elif key == PROTO:
            r.read(1)
        elif key == STOP:
            return found
        else:
            raise UnpicklingError(f"Unsupported operand {key[0]}")


# ---------------------------------------------------------------------------------------------
# The unpickler
# ---------------------------------------------------------------------------------------------
class Unpickler:
    """Runs a pickle with the restrictions above.  ``persistent_load`` is set by the caller.

    >>> Unpickler(io.BytesIO(pickle.dumps({"a": 1}, protocol=2))).load()
    {'a': 1}
    """

    def __init__(self, file, *, encoding: str = "bytes"):
        self.encoding = encoding
        self._reader = _as_reader(file)
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
        # One pass over the bytes with an index (an opcode is one byte, its argument follows),
        # the most frequent opcodes tested first: this loop is most of a load's Python time.
        self._op, self._op_pos = None, 0
        data = self._reader.data
        n = len(data)
        memo = self.memo
        stack: list = []
        metastack: list = []
        append = stack.append
        depth: dict[int, int] = {}  # id(tuple) -> nesting depth, for tuples this load built
        allowed = _get_allowed_globals()
        user_allowed = _get_user_allowed_globals()
        allowed_ids = _allowed_ids()
        from ._tensor import Tensor
        from .nn.parameter import Parameter
        from ._utils import _tensor_set_ as tensor_set_, _tensor_setstate as tensor_setstate

        def truncated(at: int, k: int):
            return UnpicklingError(f"pickle data was truncated: needed {k} bytes at byte {at}, "
                                   f"but the data ends at byte {n}")

        max_items = n + MAX_SHARED_TUPLE_ITEMS

        def tuple_of(items) -> tuple:
            # depth and number of items in all (each shared tuple counted every time it is reached):
            # hashing or comparing the tuple visits that many
            d, total = 1, len(items)
            for x in items:
                if isinstance(x, tuple):
                    dx, tx = depth.get(id(x), (0, len(x)))
                    total += tx
                    if dx + 1 > d:
                        d = dx + 1
            if d > MAX_TUPLE_DEPTH:
                raise UnpicklingError(f"tuples nested more than {MAX_TUPLE_DEPTH} deep are not supported")
            if total > max_items:
                raise UnpicklingError(f"a tuple that holds {total} items in all (through references to the same "
                                      f"tuples) is not supported: at most {max_items} in a pickle of {n} bytes")
            t = tuple(items)
            depth[id(t)] = (d, total)
            return t

        def pop_mark() -> list:
            nonlocal stack, append
            items = stack
            stack = metastack.pop()
            append = stack.append
            return items

        def readline(at: int) -> tuple[bytes, int]:
            end = data.find(b"\n", at)
            if end < 0:
                raise UnpicklingError(f"pickle data was truncated: no end of line after byte {at}")
            return data[at:end], end + 1

        pos = start = 0
        op = None
        try:
            while True:
                start = pos
                if pos >= n:
                    raise UnpicklingError(f"pickle data was truncated: it ends at byte {n} without a STOP opcode")
                op = data[pos]
                pos += 1
                if op == _BINPUT:
                    if pos >= n:
                        raise truncated(pos, 1)
                    memo[data[pos]] = stack[-1]
                    pos += 1
                elif op == _BINGET:
                    if pos >= n:
                        raise truncated(pos, 1)
                    append(memo[data[pos]])
                    pos += 1
                elif op == _BININT1:
                    if pos >= n:
                        raise truncated(pos, 1)
                    append(data[pos])
                    pos += 1
                elif op == _MARK:
                    metastack.append(stack)
                    stack = []
                    append = stack.append
                elif op == _TUPLE:
                    items = pop_mark()
                    append(tuple_of(items))
                elif op == _BINUNICODE:
                    if pos + 4 > n:
                        raise truncated(pos, 4)
                    strlen = int.from_bytes(data[pos:pos + 4], "little")
                    pos += 4
                    if pos + strlen > n:
                        raise truncated(pos, strlen)
                    append(str(data[pos:pos + strlen], "utf-8", "surrogatepass"))
                    pos += strlen
                elif op == _REDUCE:
                    args = stack.pop()
                    func = stack[-1]
                    if id(func) not in allowed_ids:
                        error_msg = f"Trying to call reduce for unrecognized function {shown(func)}"
                        if hasattr(func, "__self__"):
                            error_msg += f" which belongs to {shown(func.__self__)}"
                        raise UnpicklingError(error_msg)
                    if type(args) is not tuple:
                        raise UnpicklingError(f"REDUCE needs a tuple of arguments, got {type(args).__name__}")
                    result = func(*args)
                    if type(result) is tuple:
                        result = tuple_of(result)
                    elif isinstance(result, tuple):
                        tuple_of(result)  # a tuple subclass (Size): check the depth of what it holds
                    stack[-1] = result
                elif op == _EMPTY_TUPLE:
                    append(())
                elif op == _TUPLE1:
                    stack[-1] = tuple_of(stack[-1:])
                elif op == _TUPLE2:
                    if len(stack) < 2:
                        raise IndexError("stack underflow")
                    stack[-2:] = [tuple_of(stack[-2:])]
                elif op == _TUPLE3:
                    if len(stack) < 3:
                        raise IndexError("stack underflow")
                    stack[-3:] = [tuple_of(stack[-3:])]
                elif op == _NEWFALSE:
                    append(False)
                elif op == _NEWTRUE:
                    append(True)
                elif op == _BINPERSID:
                    pid = stack.pop()
                    # Only allow persistent load of storage
                    if type(pid) is not tuple and type(pid) is not int:
                        raise UnpicklingError(f"persistent_load id must be tuple or int, but got {type(pid)}")
                    if type(pid) is tuple and len(pid) > 0 and _maybe_decode_ascii(pid[0]) != "storage":
                        raise UnpicklingError(f"Only persistent_load of storage is allowed, but got {type(pid[0])}")
                    try:
                        storage = self.persistent_load(pid)
                    except Exception as e:  # the caller's errors are the caller's: not "malformed data"
                        raise _Passthrough(e) from None
                    append(storage)
                elif op == _GLOBAL:
                    raw_module, pos = readline(pos)
                    raw_name, pos = readline(pos)
                    module, name = _map_global(raw_module.decode("utf-8"), raw_name.decode("utf-8"))
                    full_path = f"{module}.{name}"
                    if module in _blocklisted_modules:
                        raise UnpicklingError(
                            f"Trying to load unsupported GLOBAL {full_path} whose module {module} is blocked.")
                    if full_path in allowed:
                        append(allowed[full_path])
                    elif full_path in user_allowed:
                        append(user_allowed[full_path])
                    else:
                        from .serialization import _torch_only_error
                        err = _torch_only_error(full_path)
                        if err is not None:
                            raise err
                        raise UnpicklingError(unsupported_global_message(full_path))
                elif op == _SETITEMS:
                    items = pop_mark()
                    _check_set_item_target(stack, "SETITEMS")
                    if len(items) % 2:
                        raise UnpicklingError("SETITEMS needs key/value pairs, got an odd number of items")
                    target = stack[-1]
                    for i in range(0, len(items), 2):
                        target[items[i]] = items[i + 1]
                elif op == _SETITEM:
                    (v, k) = (stack.pop(), stack.pop())
                    _check_set_item_target(stack, "SETITEM")
                    stack[-1][k] = v
                elif op == _EMPTY_DICT:
                    append({})
                elif op == _EMPTY_LIST:
                    append([])
                elif op == _APPENDS:
                    items = pop_mark()
                    list_obj = stack[-1]
                    if type(list_obj) is not list:
                        raise UnpicklingError(f"Can only extend lists, but got {type(list_obj)}")
                    list_obj.extend(items)
                elif op == _APPEND:
                    item = stack.pop()
                    list_obj = stack[-1]
                    if type(list_obj) is not list:
                        raise UnpicklingError(f"Can only append to lists, but got {type(list_obj)}")
                    list_obj.append(item)
                elif op == _BUILD:
                    state = stack.pop()
                    inst = stack[-1]
                    if type(inst) is Tensor:
                        # Legacy unpickling: PyTorch runs inst.set_(*state), with set_'s checks
                        tensor_set_(inst, *_star_args(state))
                    elif type(inst) is Parameter:
                        tensor_setstate(inst, state)
                    elif type(inst) is OrderedDict:
                        inst.__dict__.update(state)  # a state_dict's _metadata
                    elif id(type(inst)) in allowed_ids or type(inst) is bytearray:
                        if hasattr(inst, "__setstate__"):
                            inst.__setstate__(state)
                        elif isinstance(inst, Tensor):  # an allowlisted subclass: Tensor.__setstate__, as in PyTorch
                            tensor_setstate(inst, state)
                        else:
                            # mimics load_build in pickle
                            slotstate = None
                            if isinstance(state, tuple) and len(state) == 2:
                                state, slotstate = state
                            if state:
                                inst.__dict__.update(state)
                            if slotstate:
                                for k, v in slotstate.items():
                                    setattr(inst, k, v)
                    else:
                        raise UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                                              f"via `add_safe_globals`, but got {type(inst)}")
                elif op == _NEWOBJ:
                    args = stack.pop()
                    cls = stack.pop()
                    if cls is Parameter:
                        append(Parameter(*args))
                    elif id(cls) in allowed_ids and isinstance(cls, type):
                        append(cls.__new__(cls, *args))
                    else:
                        raise UnpicklingError("Can only create new object for nn.Parameter or classes allowlisted "
                                              f"via `add_safe_globals` but got {shown(cls)}")
                elif op == _NONE:
                    append(None)
                elif op == _EMPTY_SET:
                    append(set())
                elif op == _BININT:
                    if pos + 4 > n:
                        raise truncated(pos, 4)
                    append(int.from_bytes(data[pos:pos + 4], "little", signed=True))
                    pos += 4
                elif op == _BININT2:
                    if pos + 2 > n:
                        raise truncated(pos, 2)
                    append(int.from_bytes(data[pos:pos + 2], "little"))
                    pos += 2
                elif op == _LONG1:
                    if pos >= n:
                        raise truncated(pos, 1)
                    k = data[pos]
                    pos += 1
                    if pos + k > n:
                        raise truncated(pos, k)
                    append(decode_long(data[pos:pos + k]))
                    pos += k
                elif op == _BINFLOAT:
                    if pos + 8 > n:
                        raise truncated(pos, 8)
                    append(struct.unpack(">d", data[pos:pos + 8])[0])
                    pos += 8
                elif op == _SHORT_BINSTRING:
                    if pos >= n:
                        raise truncated(pos, 1)
                    k = data[pos]
                    pos += 1
                    if pos + k > n:
                        raise truncated(pos, k)
                    strdata = data[pos:pos + k]
                    pos += k
                    if self.encoding != "bytes":
                        strdata = strdata.decode(self.encoding, "strict")
                    append(strdata)
                elif op == _LONG_BINGET:
                    if pos + 4 > n:
                        raise truncated(pos, 4)
                    append(memo[int.from_bytes(data[pos:pos + 4], "little")])
                    pos += 4
                elif op == _LONG_BINPUT:
                    if pos + 4 > n:
                        raise truncated(pos, 4)
                    memo[int.from_bytes(data[pos:pos + 4], "little")] = stack[-1]
                    pos += 4
                # First and last deserializer ops
                elif op == _PROTO:
                    if pos >= n:
                        raise truncated(pos, 1)
                    self.proto = data[pos]
                    pos += 1
                    if self.proto != 2:
                        warnings.warn(
                            f"Detected pickle protocol {self.proto} in the checkpoint, which was "
                            "not the default pickle protocol used by `course_lib.load` (2). The weights_only "
                            "Unpickler might not support all instructions implemented by this protocol.",
                            stacklevel=3)
                elif op == _STOP:
                    return stack.pop()
                else:
                    raise UnpicklingError(f"Unsupported operand {op}")
        except BaseException:
            self._op_pos, self._op = start, op  # where it went wrong, for the error message
            raise


def _check_set_item_target(stack: list, opcode: str) -> None:
    if type(stack[-1]) not in (dict, OrderedDict, Counter):
        raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, "
                              f"collections.Counter, but got {type(stack[-1])}")


def _map_global(module: str, name: str) -> tuple[str, str]:
    # torch.save uses protocol 2, which writes Python 2 module names (__builtin__)
    if (module, name) in NAME_MAPPING:
        return NAME_MAPPING[(module, name)]
    if module in IMPORT_MAPPING:
        return IMPORT_MAPPING[module], name
    return module, name


class _Passthrough(Exception):
    """Carries an exception raised by persistent_load out of the opcode loop unchanged."""

    def __init__(self, error: Exception):
        self.error = error


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
        from ._tensor import Tensor

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


def _maybe_decode_ascii(b):
    return b.decode("ascii") if isinstance(b, bytes) else b


def _star_args(state) -> tuple:
    """``*state`` in ``inst.set_(*state)``, without iterating a tensor row by row (it may have 2**62 rows)."""
    from ._tensor import Tensor

    if isinstance(state, Tensor):
        if state.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        if state.shape[0] > 4:
            raise TypeError(f"set_() received an invalid combination of arguments - got ({state.shape[0]} tensors)")
    try:
        return tuple(state)
    except TypeError:
        raise TypeError(f"Tensor.set_() argument after * must be an iterable, not {type(state).__name__}") from None


def load(file, *, encoding: str = "ASCII"):
    """Run a pickle (bytes or a binary file) under the restrictions; storages are refused."""
    return Unpickler(file, encoding=encoding).load()
