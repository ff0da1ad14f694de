"""The pickle opcodes the weights_only unpickler knows, and the ones that only build data.

In CPython: ``Lib/pickle.py``, whose opcode names these are and whose ``_Unpickler.load_binput``
& co. the handlers here are named after.  In PyTorch: branches of ``Unpickler.load`` in
``torch/_weights_only_unpickler.py``.

The handlers here push numbers, strings and empty containers, fill lists, dicts and tuples,
and store or fetch objects in the memo: nothing here looks up or calls anything a file names.
The opcodes that do (GLOBAL, REDUCE, NEWOBJ, BUILD, BINPERSID) are in
``course_lib/_weights_only_unpickler.py``, with the allowlist that restricts them, and so is the
opcode loop that picks a handler from a table indexed by the opcode byte.

Each handler takes the position of its argument and returns where the next opcode starts.  The
loop has already checked that the opcode's fixed-size argument (``_ARGUMENT_BYTES``) is in the
data; a handler whose argument is a length checks that many more bytes with :func:`_end_of`.
"""
from __future__ import annotations

import struct
import warnings
from collections import Counter, OrderedDict
from pickle import UnpicklingError, decode_long
from typing import Any

#: Tuples deeper than this are refused: hashing a tuple nested a million deep overflows CPython's C stack.
MAX_TUPLE_DEPTH = 1000
#: A tuple may hold (in all its levels) as many items as the pickle has bytes, plus this many more
#: reached through references to shared tuples: hashing a tuple in which each of 60 levels holds the
#: one below twice would visit 2**60 items.
MAX_SHARED_TUPLE_ITEMS = 1_000_000


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

_OPNAMES = {v[0]: k for k, v in dict(globals()).items() if isinstance(v, bytes) and len(v) == 1 and k.isupper()}

#: The bytes of each opcode's fixed-size argument (every opcode above is here).  BINUNICODE,
#: SHORT_BINSTRING and LONG1 are followed by as many more bytes as their argument says; GLOBAL
#: by two lines.
_ARGUMENT_BYTES = {
    MARK: 0, STOP: 0, BINPERSID: 0, REDUCE: 0, BUILD: 0, GLOBAL: 0, APPEND: 0, APPENDS: 0, SETITEM: 0,
    SETITEMS: 0, BININT: 4, BININT1: 1, BININT2: 2, LONG1: 1, BINFLOAT: 8, BINUNICODE: 4, SHORT_BINSTRING: 1,
    NONE: 0, NEWTRUE: 0, NEWFALSE: 0, EMPTY_TUPLE: 0, EMPTY_LIST: 0, EMPTY_DICT: 0, EMPTY_SET: 0, TUPLE: 0,
    TUPLE1: 0, TUPLE2: 0, TUPLE3: 0, BINGET: 1, LONG_BINGET: 4, BINPUT: 1, LONG_BINPUT: 4, NEWOBJ: 0, PROTO: 1,
}
_MAX_ARGUMENT_BYTES = max(_ARGUMENT_BYTES.values())


#: The readers of fixed-size arguments: ``_read_uint32(data, at)[0]``, ...
_read_uint16 = struct.Struct("<H").unpack_from
_read_uint32 = struct.Struct("<I").unpack_from
_read_int32 = struct.Struct("<i").unpack_from
_read_float64 = struct.Struct(">d").unpack_from  # BINFLOAT is big-endian


def _truncated(at: int, k: int, n: int) -> UnpicklingError:
    return UnpicklingError(f"pickle data was truncated: needed {k} bytes at byte {at}, but the data ends at byte {n}")


def _end_of(data: bytes, at: int, k: int) -> int:
    """``at + k``, where the ``k`` bytes starting at ``at`` end; raises if ``data`` ends first (truncated)."""
    end = at + k
    if end > len(data):
        raise _truncated(at, k, len(data))
    return end


def _read_line(data: bytes, at: int) -> tuple[bytes, int]:
    """The line starting at ``at`` (without its ``\\n``) and where the next one starts; raises if the
    data ends first (truncated)."""
    end = data.find(b"\n", at)
    if end < 0:
        raise UnpicklingError(f"pickle data was truncated: no end of line after byte {at}")
    return data[at:end], end + 1


class _Stop(Exception):
    """STOP: carries the pickle's result out of the opcode loop."""

    def __init__(self, value):
        self.value = value


class _DataOpcodes:
    """The handlers of the opcodes that only build data; ``Unpickler`` adds the others.

    They work on ``self._data`` (the pickle's bytes), ``self.memo``, ``self.encoding`` and ``self.proto``,
    which the unpickler sets, and on the stacks :meth:`_new_stacks` sets up for each load.
    """

    _data: bytes
    memo: dict[int, Any]
    encoding: str
    proto: int

    # -- the stack: MARK starts a new one, the opcodes that take the items since the MARK end it ---
    def _new_stacks(self) -> None:
        self.stack: list = []
        self.metastack: list = []  # the stacks MARKs put aside
        self._depth: dict[int, tuple[int, int]] = {}  # id(tuple) -> (nesting depth, items in all), see _tuple_of
        self._max_tuple_items = len(self._data) + MAX_SHARED_TUPLE_ITEMS

    def _pop_mark(self) -> list:
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _tuple_of(self, items) -> tuple:
        # depth and number of items in all (each shared tuple counted every time it is reached):
        # hashing or comparing the tuple visits that many
        depth = self._depth
        d, total = 1, len(items)
        for x in items:
            if isinstance(x, tuple):
                dx, tx = depth.get(id(x), (0, len(x)))
                total += tx
                if dx + 1 > d:
                    d = dx + 1
        if d > MAX_TUPLE_DEPTH:
            raise UnpicklingError(f"tuples nested more than {MAX_TUPLE_DEPTH} deep are not supported")
        if total > self._max_tuple_items:
            raise UnpicklingError(f"a tuple that holds {total} items in all (through references to the same "
                                  f"tuples) is not supported: at most {self._max_tuple_items} in a pickle of "
                                  f"{len(self._data)} bytes")
        t = tuple(items)
        depth[id(t)] = (d, total)
        return t

    def load_mark(self, pos: int) -> int:
        self.metastack.append(self.stack)
        self.stack = []
        return pos

    # -- the memo ----------------------------------------------------------------------------
    def load_binput(self, pos: int) -> int:
        self.memo[self._data[pos]] = self.stack[-1]
        return pos + 1

    def load_long_binput(self, pos: int) -> int:
        self.memo[_read_uint32(self._data, pos)[0]] = self.stack[-1]
        return pos + 4

    def load_binget(self, pos: int) -> int:
        self.stack.append(self.memo[self._data[pos]])
        return pos + 1

    def load_long_binget(self, pos: int) -> int:
        self.stack.append(self.memo[_read_uint32(self._data, pos)[0]])
        return pos + 4

    # -- numbers, strings, constants ---------------------------------------------------------
    def load_binint1(self, pos: int) -> int:
        self.stack.append(self._data[pos])
        return pos + 1

    def load_binint2(self, pos: int) -> int:
        self.stack.append(_read_uint16(self._data, pos)[0])
        return pos + 2

    def load_binint(self, pos: int) -> int:
        self.stack.append(_read_int32(self._data, pos)[0])
        return pos + 4

    def load_long1(self, pos: int) -> int:
        data = self._data
        end = _end_of(data, pos + 1, data[pos])
        self.stack.append(decode_long(data[pos + 1:end]))
        return end

    def load_binfloat(self, pos: int) -> int:
        self.stack.append(_read_float64(self._data, pos)[0])
        return pos + 8

    def load_binunicode(self, pos: int) -> int:
        data = self._data
        end = _end_of(data, pos + 4, _read_uint32(data, pos)[0])
        self.stack.append(str(data[pos + 4:end], "utf-8", "surrogatepass"))
        return end

    def load_short_binstring(self, pos: int) -> int:
        data = self._data
        end = _end_of(data, pos + 1, data[pos])
        text = data[pos + 1:end]
        if self.encoding != "bytes":
            text = text.decode(self.encoding, "strict")
        self.stack.append(text)
        return end

    def load_none(self, pos: int) -> int:
        self.stack.append(None)
        return pos

    def load_newtrue(self, pos: int) -> int:
        self.stack.append(True)
        return pos

    def load_newfalse(self, pos: int) -> int:
        self.stack.append(False)
        return pos

    # -- containers: tuples, lists (APPEND/APPENDS only extend lists), dicts, sets -----------
    def load_empty_tuple(self, pos: int) -> int:
        self.stack.append(())
        return pos

    def load_tuple(self, pos: int) -> int:
        items = self._pop_mark()
        self.stack.append(self._tuple_of(items))
        return pos

    def load_tuple1(self, pos: int) -> int:
        stack = self.stack
        stack[-1] = self._tuple_of(stack[-1:])
        return pos

    def load_tuple2(self, pos: int) -> int:
        stack = self.stack
        if len(stack) < 2:
            raise IndexError("stack underflow")
        stack[-2:] = [self._tuple_of(stack[-2:])]
        return pos

    def load_tuple3(self, pos: int) -> int:
        stack = self.stack
        if len(stack) < 3:
            raise IndexError("stack underflow")
        stack[-3:] = [self._tuple_of(stack[-3:])]
        return pos

    def load_empty_list(self, pos: int) -> int:
        self.stack.append([])
        return pos

    def load_append(self, pos: int) -> int:
        item = self.stack.pop()
        list_obj = self.stack[-1]
        if type(list_obj) is not list:
            raise UnpicklingError(f"Can only append to lists, but got {type(list_obj)}")
        list_obj.append(item)
        return pos

    def load_appends(self, pos: int) -> int:
        items = self._pop_mark()
        list_obj = self.stack[-1]
        if type(list_obj) is not list:
            raise UnpicklingError(f"Can only extend lists, but got {type(list_obj)}")
        list_obj.extend(items)
        return pos

    def load_empty_dict(self, pos: int) -> int:
        self.stack.append({})
        return pos

    def load_setitem(self, pos: int) -> int:
        stack = self.stack
        (v, k) = (stack.pop(), stack.pop())
        _check_set_item_target(stack, "SETITEM")
        stack[-1][k] = v
        return pos

    def load_setitems(self, pos: int) -> int:
        items = self._pop_mark()
        _check_set_item_target(self.stack, "SETITEMS")
        if len(items) % 2:
            raise UnpicklingError("SETITEMS needs key/value pairs, got an odd number of items")
        target = self.stack[-1]
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]
        return pos

    def load_empty_set(self, pos: int) -> int:
        self.stack.append(set())
        return pos

    # -- first and last opcodes --------------------------------------------------------------
    def load_proto(self, pos: int) -> int:
        self.proto = self._data[pos]
        if self.proto != 2:
            warnings.warn(
                f"Detected pickle protocol {self.proto} in the checkpoint, which was "
                "not the default pickle protocol used by `course_lib.load` (2). The weights_only "
                "Unpickler might not support all instructions implemented by this protocol.",
                stacklevel=4)
        return pos + 1

    def load_stop(self, pos: int) -> int:
        raise _Stop(self.stack.pop())


def _check_set_item_target(stack: list, opcode: str) -> None:
    if type(stack[-1]) not in (dict, OrderedDict, Counter):
        raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, "
                              f"collections.Counter, but got {type(stack[-1])}")


def _opcode_table(by_opcode: dict[bytes, Any], default) -> tuple:
    """A tuple of 256 entries, one per opcode byte."""
    table = [default] * 256
    for op, value in by_opcode.items():
        table[op[0]] = value
    return tuple(table)


_ARGUMENT_BYTES_BY_CODE = _opcode_table(_ARGUMENT_BYTES, 0)
