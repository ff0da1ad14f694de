"""The wire format between the grader and a kernel: tagged JSON, read back without running any code.

A check's inputs go from the grader to the kernel in a check cell's source, and what the kernel's
probe saw comes back on its stdout, both as :func:`dumps` text. :func:`loads` builds only plain
values: ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``, tuples, lists,
dicts, sets, slices, numpy arrays and scalars of numeric dtypes, course_lib tensors, dtypes,
devices and sizes, plus :class:`Raised` (an exception a call raised) and :class:`Opaque` (anything
else the learner returned: its type's name and a short repr). Nothing in the text names code to
run, so a kernel that lies can send wrong values, never an object that acts.

A value is JSON as it is when it is ``None``, a ``bool``, an ``int``, a ``float`` or a ``str``;
anything else is a JSON list whose first item is a tag: ``["tuple", [...]]``,
``["tensor", cls, dtype, shape, device, requires_grad, base64]``, ...
"""
from __future__ import annotations

import base64
import json
import reprlib
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["dumps", "loads", "encode", "decode", "Raised", "Opaque", "WireError"]

MAX_DEPTH = 48  # nesting deeper than this is sent as Opaque
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 12
_REPR.maxlevel = 4


class WireError(ValueError):
    """Text that is not a well-formed value of this format."""


@dataclass(frozen=True)
class Raised:
    """An exception a call raised: its class's names along the MRO, message and where it was raised."""

    names: tuple[str, ...]
    message: str
    where: str = ""

    @property
    def name(self) -> str:
        return self.names[0] if self.names else "Exception"

    def is_a(self, exc_type: type[BaseException]) -> bool:
        return exc_type.__name__ in self.names

    def __repr__(self) -> str:
        return f"{self.name}({self.message!r})"


@dataclass(frozen=True)
class Opaque:
    """A value the format cannot carry: the name of its type and a short repr of it."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return self.text


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any) -> bytes:
    if not isinstance(text, str):
        raise WireError("expected base64 text")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as e:
        raise WireError(f"bad base64: {e}") from None


def _short_repr(value: Any) -> str:
    try:
        return _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a learner's broken __repr__
        return f"<{type(value).__name__} object>"


def _opaque(value: Any) -> list:
    return ["opaque", type(value).__name__, _short_repr(value)]


_MAX_MESSAGE = 300  # characters of an exception's message (a `match=` longer than this cannot match)


def exception_wire(exc: BaseException, where: str = "") -> list:
    """An exception as ``["raised", names, message, where]`` (the message cut to a few lines)."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001
        message = f"<{type(exc).__name__} whose message cannot be shown>"
    if len(message) > _MAX_MESSAGE:
        message = f"{message[:_MAX_MESSAGE]}... ({len(message):,} characters in all)"
    names = [c.__name__ for c in type(exc).__mro__ if isinstance(c.__name__, str)]
    return ["raised", names, message, where]


def encode(value: Any, depth: int = 0) -> Any:
    """`value` as JSON-able data of this format; what it cannot carry becomes Opaque."""
    t = type(value)
    if value is None or t in (bool, int, str, float):
        return value
    if depth > MAX_DEPTH:
        return ["opaque", t.__name__, "<nested too deeply>"]
    d = depth + 1
    if t is tuple:
        return ["tuple", [encode(v, d) for v in value]]
    if t is list:
        return ["list", [encode(v, d) for v in value]]
    if t is dict or t.__name__ == "OrderedDict" and t.__module__ == "collections":
        return ["dict" if t is dict else "odict", [[encode(k, d), encode(v, d)] for k, v in value.items()]]
    if t in (set, frozenset):
        return [t.__name__, [encode(v, d) for v in value]]
    if t is bytes:
        return ["bytes", _b64(value)]
    if t is complex:
        return ["complex", value.real, value.imag]
    if t is slice:
        return ["slice", encode(value.start, d), encode(value.stop, d), encode(value.step, d)]
    if value is Ellipsis:
        return ["ellipsis"]
    if isinstance(value, BaseException):
        return exception_wire(value)
    if isinstance(value, Raised):
        return ["raised", list(value.names), value.message, value.where]
    np = sys.modules.get("numpy")
    if np is not None:
        if t is np.ndarray:
            if value.dtype.kind not in "biufc" or value.dtype.fields is not None:
                return _opaque(value)
            return ["ndarray", value.dtype.str, list(value.shape), _b64(np.ascontiguousarray(value).tobytes())]
        if isinstance(value, np.generic) and value.dtype.kind in "biufc":
            return ["npscalar", value.dtype.str, _b64(value.tobytes())]
        if t.__name__.endswith("DType") or t is np.dtype:
            return ["npdtype", value.str]
    cl = sys.modules.get("course_lib")
    if cl is not None:
        if isinstance(value, cl.Tensor):
            return _encode_tensor(cl, value)
        if t is cl.dtype:
            return ["dtype", value.name]
        if t is cl.Size:
            return ["size", [encode(v, d) for v in value]]
        if t is cl.device:
            return ["device", str(value)]
    return _opaque(value)


def _encode_tensor(cl, t) -> list:
    kind = "Parameter" if isinstance(t, cl.nn.Parameter) else ("Tensor" if type(t) is cl.Tensor else None)
    if kind is None:
        return _opaque(t)
    import numpy as np

    shape = [int(n) for n in t.shape]
    device = str(t.device)
    data = None
    if device != "meta":
        data = _b64(np.ascontiguousarray(t.detach().numpy()).tobytes())
    return ["tensor", kind, t.dtype.name, shape, device, bool(t.requires_grad), data]


def _decode_tensor(item: list):
    import numpy as np

    import course_lib as cl

    _, kind, dtype_name, shape, device, requires_grad, data = item
    dtype = getattr(cl, dtype_name, None) if isinstance(dtype_name, str) else None
    if not isinstance(dtype, cl.dtype) or not isinstance(shape, list) \
            or not all(type(n) is int and n >= 0 for n in shape) or kind not in ("Tensor", "Parameter"):
        raise WireError("bad tensor")
    if device == "meta":
        t = cl.empty(tuple(shape), dtype=dtype, device="meta")
    elif device == "cpu":
        raw = _unb64(data)
        n = 1
        for s in shape:
            n *= s
        if len(raw) != n * dtype.itemsize:
            raise WireError("tensor data of the wrong size")
        t = cl.from_numpy(np.frombuffer(raw, dtype=dtype.np).reshape(shape).copy())
    else:
        raise WireError("bad tensor device")
    if kind == "Parameter":
        return cl.nn.Parameter(t, requires_grad=bool(requires_grad))
    if requires_grad:
        t.requires_grad_(True)
    return t


def decode(data: Any, depth: int = 0) -> Any:
    """The value `data` (from :func:`encode`) stands for; WireError if it is not well formed."""
    if data is None or type(data) in (bool, int, str, float):
        return data
    if type(data) is not list or not data or type(data[0]) is not str or depth > MAX_DEPTH + 2:
        raise WireError("malformed value")
    tag, d = data[0], depth + 1
    try:
        if tag in ("tuple", "list", "set", "frozenset"):
            items = [decode(v, d) for v in _list(data[1])]
            return {"tuple": tuple, "list": list, "set": set, "frozenset": frozenset}[tag](items)
        if tag in ("dict", "odict"):
            pairs = [(decode(k, d), decode(v, d)) for k, v in map(_pair, _list(data[1]))]
            if tag == "odict":
                from collections import OrderedDict
                return OrderedDict(pairs)
            return dict(pairs)
        if tag == "bytes":
            return _unb64(data[1])
        if tag == "complex":
            return complex(_number(data[1]), _number(data[2]))
        if tag == "slice":
            return slice(decode(data[1], d), decode(data[2], d), decode(data[3], d))
        if tag == "ellipsis":
            return Ellipsis
        if tag == "raised":
            names = _list(data[1])
            if not all(type(n) is str for n in names) or type(data[2]) is not str or type(data[3]) is not str:
                raise WireError("bad exception")
            return Raised(tuple(names), data[2], data[3])
        if tag == "opaque":
            if type(data[1]) is not str or type(data[2]) is not str:
                raise WireError("bad opaque value")
            return Opaque(data[1][:200], data[2][:400])
        if tag in ("ndarray", "npscalar", "npdtype"):
            return _decode_numpy(tag, data)
        if tag == "tensor":
            return _decode_tensor(data)
        if tag in ("dtype", "size", "device"):
            import course_lib as cl

            if tag == "dtype":
                dtype = getattr(cl, data[1], None) if type(data[1]) is str else None
                if not isinstance(dtype, cl.dtype):
                    raise WireError("bad dtype")
                return dtype
            if tag == "size":
                return cl.Size([decode(v, d) for v in _list(data[1])])
            if type(data[1]) is not str:
                raise WireError("bad device")
            return cl.device(data[1])
    except WireError:
        raise
    except (IndexError, TypeError, ValueError, KeyError, RuntimeError) as e:
        raise WireError(f"malformed {tag}: {type(e).__name__}: {e}") from None
    raise WireError(f"unknown tag {tag[:40]!r}")


def _list(x: Any) -> list:
    if type(x) is not list:
        raise WireError("expected a list")
    return x


def _pair(x: Any) -> tuple:
    if type(x) is not list or len(x) != 2:
        raise WireError("expected a pair")
    return x[0], x[1]


def _number(x: Any) -> float:
    if type(x) not in (int, float):
        raise WireError("expected a number")
    return x


def _decode_numpy(tag: str, data: list):
    import numpy as np

    if type(data[1]) is not str:
        raise WireError("bad numpy dtype")
    dtype = np.dtype(data[1])
    if tag == "npdtype":
        return dtype
    if dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None:
        raise WireError("numpy dtype not allowed")
    if tag == "npscalar":
        raw = _unb64(data[2])
        if len(raw) != dtype.itemsize:
            raise WireError("numpy scalar of the wrong size")
        return np.frombuffer(raw, dtype=dtype)[0]
    shape = _list(data[2])
    if not all(type(n) is int and n >= 0 for n in shape):
        raise WireError("bad shape")
    raw = _unb64(data[3])
    n = 1
    for s in shape:
        n *= s
    if len(raw) != n * dtype.itemsize:
        raise WireError("array data of the wrong size")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def dumps(value: Any) -> str:
    """`value` as one line of text."""
    return json.dumps(encode(value), separators=(",", ":"))


def loads(text: str | bytes) -> Any:
    """The value of :func:`dumps` text; WireError for anything else (never runs code)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError, TypeError) as e:
        raise WireError(f"not JSON: {type(e).__name__}") from None
    try:
        return decode(data)
    except RecursionError:
        raise WireError("nested too deeply") from None
