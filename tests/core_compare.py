"""Helpers for the core tests: run one expression on course_lib and on torch, compare outcomes.

An *outcome* is what a test can compare across the two libraries: for a result,
its kind, shape, dtype name, values (and, when asked, strides, storage offset,
``is_contiguous()`` and ``_is_view()``); for an error, its type name and message;
plus the warnings raised.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import course_lib as cl


def dtype_name(dt) -> str:
    return str(dt).split(".")[-1]


def is_tensor(x) -> bool:
    return isinstance(x, cl.Tensor) or type(x).__name__ in ("Tensor", "Parameter")


def to_numpy(t) -> np.ndarray | None:
    if isinstance(t, cl.Tensor):
        return None if t.is_meta else np.array(t.detach()._np())
    if t.device.type == "meta":
        return None
    return t.detach().numpy().copy()


def describe(x, layout: bool = False):
    """A comparable, library-neutral description of a result."""
    if is_tensor(x):
        d = {"shape": tuple(x.shape), "dtype": dtype_name(x.dtype)}
        a = to_numpy(x)
        d["values"] = None if a is None else a
        if layout:
            d["stride"] = tuple(x.stride())
            d["offset"] = x.storage_offset()
            d["contiguous"] = x.is_contiguous()
            d["is_view"] = x._is_view()
        return ("tensor", d)
    if isinstance(x, tuple) and (hasattr(x, "_fields") or type(x).__module__.endswith("return_types")):
        # torch.return_types.max (a structseq) and course_lib's named tuple of the same name
        return ("return_type", type(x).__name__, tuple(describe(v, layout) for v in x))
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(describe(v, layout) for v in x))
    if isinstance(x, (bool, int, float)):
        return ("scalar", type(x).__name__, x)
    if type(x).__name__ == "Size":
        return ("Size", tuple(x))
    if type(x).__name__ == "dtype":
        return ("dtype", dtype_name(x))
    return ("other", repr(x))


def outcome(fn, layout: bool = False):
    """(description of the result or ('error', type, message), sorted warning messages)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = fn()
        except Exception as e:  # noqa: BLE001 - exception types are what we compare
            res = ("error", type(e).__name__, str(e))
        else:
            res = describe(r, layout)
    msgs = sorted(str(x.message).split(" (Triggered internally")[0] for x in w)
    return res, msgs


def same(a, b, rtol=1e-5, atol=1e-6) -> bool:
    """Descriptions equal; tensor values compared with a tolerance, NaN equal to NaN."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.shape != b.shape:
            return False
        if a.dtype == bool or b.dtype == bool or a.dtype.kind in "iu":
            return bool(np.array_equal(a, b))
        return bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], rtol, atol) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y, rtol, atol) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    return a == b


def fmt(o) -> str:
    """Readable outcome for assertion messages."""
    np.set_printoptions(threshold=50)
    return repr(o)
