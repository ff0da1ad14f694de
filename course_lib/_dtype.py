"""Data types and type promotion.

In PyTorch: ``c10/core/ScalarType.h`` (the dtypes and the promotion table) and
``aten/src/ATen/native/TypeProperties.cpp`` (``result_type``).

A ``dtype`` is a small immutable object.  Each one knows its numpy twin, its size
in bytes and its *category*: bool < integer < floating point.  Promotion works on
those categories, exactly as PyTorch does it (see ``result_type``).
"""
from __future__ import annotations

import builtins  # this module's int, float and bool are dtypes
from typing import Literal

import numpy as np

__all__ = [
    "dtype", "float32", "float", "float64", "double", "float16", "half",
    "int64", "long", "int32", "int", "int16", "short", "int8", "uint8", "bool",
    "get_default_dtype", "set_default_dtype", "promote_types",
]

_BOOL, _INT, _FLOAT = 0, 1, 2


def readonly_attribute_message(type_name: str, cls: type, name) -> str:
    """Python's error text for assigning to an attribute of an immutable built-in object.

    ``type_name`` is how the class is shown (``'course_lib.device'``): data attributes
    and properties "are not writable", methods "are read-only", other names do not exist.
    """
    if not isinstance(name, str):
        return f"attribute name must be string, not '{type(name).__name__}'"
    attr = getattr(cls, name, _MISSING)
    if attr is _MISSING:
        return f"'{type_name}' object has no attribute '{name}'"
    if callable(attr) and not hasattr(attr, "__set__"):
        return f"'{type_name}' object attribute '{name}' is read-only"
    return f"attribute '{name}' of '{type_name}' objects is not writable"


_MISSING = object()


class dtype:
    """A tensor element type, like ``torch.dtype``."""

    __slots__ = ("name", "np", "itemsize", "category", "is_signed", "_storage_name", "_tensor_name")

    def __init__(self, name: str, np_dtype, category: int, storage_name: str, tensor_name: str):
        init = object.__setattr__  # dtypes are immutable (see __setattr__)
        init(self, "name", name)
        init(self, "np", np.dtype(np_dtype))
        init(self, "itemsize", self.np.itemsize)
        init(self, "category", category)
        init(self, "is_signed", category != _BOOL and self.np.kind != "u")
        init(self, "_storage_name", storage_name)   # the name torch.save uses: 'FloatStorage', ...
        init(self, "_tensor_name", tensor_name)     # 'Float' as in 'torch.FloatTensor'

    # There is one object per dtype, shared by every tensor: immutable, as in PyTorch.
    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(readonly_attribute_message("course_lib.dtype", type(self), name))

    def __delattr__(self, name: str) -> None:
        raise AttributeError(readonly_attribute_message("course_lib.dtype", type(self), name))

    @property
    def is_floating_point(self) -> bool:
        return self.category == _FLOAT

    @property
    def is_complex(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"course_lib.{self.name}"

    def __reduce__(self):
        # Pickle a dtype as a reference to the module attribute, so identity survives.
        return (_dtype_by_name, (self.name,))


float32 = dtype("float32", np.float32, _FLOAT, "FloatStorage", "Float")
float64 = dtype("float64", np.float64, _FLOAT, "DoubleStorage", "Double")
float16 = dtype("float16", np.float16, _FLOAT, "HalfStorage", "Half")
int64 = dtype("int64", np.int64, _INT, "LongStorage", "Long")
int32 = dtype("int32", np.int32, _INT, "IntStorage", "Int")
int16 = dtype("int16", np.int16, _INT, "ShortStorage", "Short")
int8 = dtype("int8", np.int8, _INT, "CharStorage", "Char")
uint8 = dtype("uint8", np.uint8, _INT, "ByteStorage", "Byte")
bool_ = dtype("bool", np.bool_, _BOOL, "BoolStorage", "Bool")

# PyTorch's aliases.
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
bool = bool_  # noqa: A001

ALL_DTYPES = (float32, float64, float16, int64, int32, int16, int8, uint8, bool_)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NP = {d.np: d for d in ALL_DTYPES}


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The course_lib dtype for a numpy dtype; TypeError for ones we do not have."""
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).name}. The only supported types are: "
            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ) from None


# ---------------------------------------------------------------------------
# default dtype
# ---------------------------------------------------------------------------
_default_dtype = [float32]


def get_default_dtype() -> dtype:
    """The dtype of floating point tensors made from Python floats (float32 unless changed)."""
    return _default_dtype[0]


def set_default_dtype(d: dtype) -> None:
    """Set the default floating point dtype (float32 or float64, as in PyTorch)."""
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_dtype[0] = d


# ---------------------------------------------------------------------------
# promotion
# ---------------------------------------------------------------------------
def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` can be cast to (``torch.promote_types``).

    numpy's table agrees with PyTorch's for the dtypes we have (uint8 + int8 -> int16,
    int64 + float16 -> float16, ...), so we look it up there and cache the answer.
    """
    if a is b:
        return a
    key = (a, b)
    r = _PROMOTE_CACHE.get(key)
    if r is None:
        if a is bool_:
            r = b
        elif b is bool_:
            r = a
        elif a.category != b.category:
            # int with float: the float wins, whatever its size (int64 + float16 -> float16).
            r = a if a.category > b.category else b
        else:
            r = _BY_NP[np.promote_types(a.np, b.np)]
        _PROMOTE_CACHE[key] = r
    return r


_PROMOTE_CACHE: dict = {}


def scalar_category(value) -> int:
    """Category of a Python scalar: bool < int < float."""
    if value is True or value is False or isinstance(value, np.bool_):
        return _BOOL
    if isinstance(value, (builtins.int, np.integer)):
        return _INT
    return _FLOAT


def scalar_dtype(value) -> dtype:
    """The dtype a lone Python scalar gets: bool, int64 or the default float."""
    c = scalar_category(value)
    if c == _BOOL:
        return bool_
    if c == _INT:
        return int64
    return get_default_dtype()


# ---------------------------------------------------------------------------
# C++ type names, as PyTorch's error messages spell them
# ---------------------------------------------------------------------------
# dtype name -> (checked, demangled):
#   checked    c10::checked_convert's template argument: "value cannot be converted to type int64_t without overflow"
#   demangled  the compiler's name of the type (typeid): "Could not set tensor of type long int to a tensor of type
#              float", matmul's "expected m1 and m2 to have the same dtype, but got: long int != float",
#              random_'s "to - 1 is out of bounds for short int"
# (Messages that name the ScalarType instead, "Float" or "Long", use ``dtype._tensor_name``.)
_C_TYPE_NAMES = {
    "float32": ("float", "float"),
    "float64": ("double", "double"),
    "float16": ("c10::Half", "c10::Half"),
    "int64": ("int64_t", "long int"),
    "int32": ("int", "int"),
    "int16": ("int16_t", "short int"),
    "int8": ("int8_t", "signed char"),
    "uint8": ("uint8_t", "unsigned char"),
    "bool": ("bool", "bool"),
}
_SPELLINGS = {"checked": 0, "demangled": 1}


def c_type_name(dt: dtype, spelling: Literal["checked", "demangled"]) -> str:
    """The C++ name of ``dt``'s element type, spelled as the PyTorch message being reproduced spells it."""
    return _C_TYPE_NAMES[dt.name][_SPELLINGS[spelling]]
