"""``out=``: writing a function's result into a tensor the caller gives.

In PyTorch: the ``.out`` overloads of ``native_functions.yaml`` (``zeros.out``,
``arange.out``, ...), ``at::native::resize_output`` (``aten/src/ATen/native/Resize.cpp``)
and the checks the generated autograd code adds (``check_inplace`` for out arguments).

A function that takes ``out=`` in course_lib computes its result through the dispatcher,
then ``write_out`` resizes ``out`` if its shape differs and copies the values in with
``copy_`` (also dispatched, so a mode sees both calls).  The checks come first, with
PyTorch's messages:

* ``out`` must be a tensor;
* with grad mode on, neither ``out`` nor an input may require grad: functions with ``out=``
  are not differentiable;
* a ``dtype=`` or ``device=`` given beside ``out`` must be ``out``'s own.

Deliberate difference: when ``out`` must grow beyond its storage it gets a new storage of
its own (PyTorch reallocates the shared one, so other views of it follow).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype
from .._storage import Storage
from .._tensor_base import TensorBase
from .common import contiguous_strides
from .dispatcher import dispatch, grad_state
from .registry import OPS

__all__ = ["check_out", "check_out_dtype", "resize_output", "write_out", "DEPRECATED_RESIZE"]

# What resize_output warns when it resizes an out tensor that had elements (Resize.cpp).
DEPRECATED_RESIZE = "deprecated"


def _tp_name(obj) -> str:
    tp = type(obj)
    return tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__qualname__}"


def check_out(out, fname: str, autograd_name: str, inputs: tuple = ()) -> None:
    """``out`` is a tensor, and (with grad mode on) neither it nor a tensor in ``inputs`` requires grad.

    ``fname`` names the function in the type error (``zeros``), ``autograd_name`` in the
    autograd one (``aten::zeros``, or ``normal`` where PyTorch's message says so).
    """
    if not isinstance(out, TensorBase):
        raise TypeError(f"{fname}(): argument 'out' must be Tensor, not {_tp_name(out)}")
    if grad_state.enabled and (out._requires_grad
                               or any(isinstance(t, TensorBase) and t._requires_grad for t in inputs)):
        raise RuntimeError(f"{autograd_name}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")


def check_out_dtype(out, dtype, device):
    """A factory's ``dtype``/``device`` beside ``out``: ``out``'s own, or an error. Returns both, filled in."""
    if dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype {dtype._tensor_name} does not match dtype of out parameter "
                           f"({out.dtype._tensor_name})")
    dev = out._storage.device
    if device is not None and device != dev:
        raise RuntimeError(f"device type {device} does not match device type of out parameter ({dev})")
    return out.dtype, dev


def resize_output(out, shape: tuple, warn: str | None = None) -> None:
    """Give ``out`` the shape ``shape`` (contiguous strides) when it has another one.

    ``warn`` is None (resize silently, as most factories' out kernels do), ``DEPRECATED_RESIZE``
    (``resize_output``'s warning when ``out`` had elements) or a message of the op's own.
    """
    shape = tuple(shape)
    if out._shape == shape:
        return
    old_n = 1
    for s in out._shape:
        old_n *= s
    if warn is not None and old_n:
        if warn == DEPRECATED_RESIZE:
            warn = (f"An output with one or more elements was resized since it had shape {list(out._shape)}, "
                    f"which does not match the required output shape {list(shape)}. This behavior is "
                    f"deprecated, and in a future PyTorch release outputs will not be resized unless they "
                    f"have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, "
                    f"to zero elements with t.resize_(0).")
        warnings.warn(warn, UserWarning, stacklevel=4)
    n = 1
    for s in shape:
        n *= s
    st = out._storage
    if out._offset + n > st.size():
        if st.data is None:
            out._storage = Storage(None, out.dtype, "meta", size=out._offset + n)
        else:
            data = np.empty(out._offset + n, dtype=out.dtype.np)
            data[:st.size()] = st.data
            out._storage = Storage(data, out.dtype, st.device)
    out._shape = shape
    out._stride = contiguous_strides(shape)
    out._np_cache = None


def write_out(out, result, warn: str | None = None):
    """Resize ``out`` to ``result``'s shape, copy ``result`` into it (cast to ``out``'s dtype); return ``out``."""
    resize_output(out, result._shape, warn)
    return dispatch(OPS["copy_"], (out, result, False))


def float_kernel_dtype(out, kernel: str) -> _dtype.dtype:
    """``out``'s dtype for a kernel defined only for floating types (``normal_kernel_cpu``)."""
    if not out.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{out.dtype._tensor_name}'")
    return out.dtype
