"""``out=``: writing a function's result into a tensor the caller gives.

In PyTorch: the ``.out`` overloads of ``native_functions.yaml`` (``zeros.out``,
``arange.out``, ...), ``at::native::resize_output`` (``aten/src/ATen/native/Resize.cpp``)
and the checks the generated autograd code adds (``check_inplace`` for out arguments).

A function that takes ``out=`` in course_lib computes its result through the dispatcher,
then ``write_out`` resizes ``out`` if its shape differs and copies the values in with
``copy_`` (also dispatched, so a mode sees both calls).  The factories do this themselves;
every other op with an ``.out`` overload (``registry.OUT_OVERLOADS``: ``add``, ``sum``, ``mm``,
``cat``, ...) goes through ``call_with_out``, which its generated binding calls when ``out``
is given.  The checks come first, with PyTorch's messages:

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
from .._tensor_base import TensorBase, contiguous_strides
from .dispatcher import dispatch, grad_state
from .registry import OPS

__all__ = ["check_out", "check_out_dtype", "resize_output", "write_out", "call_with_out", "DEPRECATED_RESIZE"]

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


# ---------------------------------------------------------------------------
# out= of the ops (registry.OUT_OVERLOADS): what each out kernel checks about out's dtype
# ---------------------------------------------------------------------------
def _cast(op, r, out, inputs):
    """TensorIterator's check: the result's dtype can be cast to out's (float -> int or -> bool cannot)."""
    if not _can_cast(r.dtype, out.dtype):
        raise RuntimeError(f"result type {r.dtype._tensor_name} can't be cast to the desired output type "
                           f"{out.dtype._tensor_name}")


def _same(op, r, out, inputs):
    """Kernels that write out's dtype directly (abs, floor, sign, clamp, ...): it must be the result's."""
    if out.dtype is not r.dtype:
        raise RuntimeError(f"Found dtype {out.dtype._tensor_name} but expected {r.dtype._tensor_name}")


def _expected(op, r, out, inputs):
    """Structured kernels that compare out's dtype with the result's (mm, gather, softmax, ...)."""
    if out.dtype is not r.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_dtype.c_type_name(r.dtype, 'demangled')}, but got "
                           f"{_dtype.c_type_name(out.dtype, 'demangled')} instead")


def _cat(op, r, out, inputs):
    if not _can_cast(r.dtype, out.dtype):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type {out.dtype._tensor_name}")


def _amax(op, r, out, inputs):
    if out.dtype is not inputs[0].dtype:
        raise RuntimeError(f"Expected the dtype for input and out to match, but got {inputs[0].dtype._tensor_name} for "
                           f"input's dtype and {out.dtype._tensor_name} for out's dtype.")


def _dot(op, r, out, inputs):
    if out.dtype is not r.dtype:
        raise RuntimeError(f"result dtype {out.dtype._tensor_name} does not match input dtype {r.dtype._tensor_name}")


def _same_scalar_type(op, r, out, inputs):
    if out.dtype is not r.dtype:
        raise RuntimeError(f"{op.name}(): self and result must have the same scalar type")


def _where(op, r, out, inputs):
    if out.dtype is not r.dtype:
        raise RuntimeError(f"Expected out type to be {r.dtype._tensor_name} but got {out.dtype._tensor_name}")


def _logsumexp(op, r, out, inputs):
    if not out.dtype.is_floating_point:
        raise RuntimeError(f"logsumexp(): Expected floating point type for result tensor, but got: "
                           f"{out.dtype._tensor_name}")


# checks that come before anything else (these ops are not differentiable: PyTorch has no autograd check)
def _long_out(op, out):
    if out.dtype is not _dtype.int64:
        raise RuntimeError(f"Expected out tensor to have dtype long int, but got "
                           f"{_dtype.c_type_name(out.dtype, 'demangled')} instead")


def _bool_out(op, out):
    if out.dtype is not _dtype.bool_ and out.dtype is not _dtype.uint8:
        raise RuntimeError(f"{op.name} only supports bool tensor for result, got: {out.dtype._tensor_name}")


def _nonzero_out(op, out):
    if out.dtype is not _dtype.int64:
        raise RuntimeError(f"nonzero: Expected out tensor to have scalar type Long but got scalar type"
                           f"{out.dtype._tensor_name}")


_SAME = ("abs", "ceil", "floor", "frac", "neg", "trunc", "sign", "round", "clamp", "bitwise_not")
_EXPECTED = ("mm", "bmm", "matmul", "addmm", "mv", "gather", "scatter", "scatter_add", "scatter_reduce", "index_add",
             "take_along_dim", "tril", "triu", "diagonal_copy", "softmax", "log_softmax")
_CHECK = {name: _same for name in _SAME}
_CHECK.update({name: _expected for name in _EXPECTED})
_CHECK.update({"cat": _cat, "stack": _cat, "hstack": _cat, "vstack": _cat, "dstack": _cat, "column_stack": _cat,
               "amax": _amax, "amin": _amax, "dot": _dot, "index_select": _same_scalar_type,
               "masked_select": _same_scalar_type, "where": _where, "logsumexp": _logsumexp})
_PRE_CHECK = {"argmax": _long_out, "argmin": _long_out, "all": _bool_out, "any": _bool_out, "nonzero": _nonzero_out}
# reductions computed in out's dtype (the input is cast first), after mean's castability check
_IN_OUT_DTYPE = {"sum", "prod", "cumsum", "mean"}
# what the autograd check's message names when it is not the function (a composite names the op it runs)
_AUTOGRAD_NAME = {"softmax": "aten::softmax", "log_softmax": "aten::log_softmax", "floor_divide": "aten::floor_divide",
                  "bitwise_and": "aten::bitwise_and", "bitwise_or": "aten::bitwise_or",
                  "bitwise_xor": "aten::bitwise_xor", "square": "pow", "hstack": "cat", "vstack": "cat",
                  "dstack": "cat", "column_stack": "cat", "outer": "mul", "kron": "mul", "take_along_dim": "gather",
                  "diagonal_copy": "aten::diagonal_copy"}
# not differentiable in PyTorch: no autograd check at all
_NO_GRAD_CHECK = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                            "logical_not", "argmax", "argmin", "all", "any", "nonzero"})


def _can_cast(src, dst) -> bool:
    from .inplace import can_cast
    return can_cast(src, dst)


def _tensor_inputs(op, args: tuple) -> list:
    ts = [args[i] for i in op.tensor_pos if isinstance(args[i], TensorBase)]
    for i in op.tensor_list_pos:
        ts.extend(t for t in args[i] if isinstance(t, TensorBase))
    return ts


def _max_min_out(op, args: tuple, out):
    """``max``/``min`` with ``out=``: a (values, indices) pair of tensors for ``max(x, dim)``, one tensor for
    ``max(x)`` (castable from the input's dtype) and for ``max(x, other)`` (``maximum``'s rule)."""
    name = op.name
    self, dim = args[0], args[1]
    if dim is None or isinstance(dim, TensorBase):
        if not isinstance(out, TensorBase):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {_tp_name(out)}")
        check_out(out, name, name, (self, dim))
        r = dispatch(op, args)
        if dim is None and not _can_cast(r.dtype, out.dtype):
            raise RuntimeError("Expected canCast( typeMetaToScalarType(self.dtype()), "
                               "typeMetaToScalarType(out.dtype())) to be true, but got false.  (Could this error "
                               "message be improved?  If so, please report an enhancement request to PyTorch.)")
        _cast(op, r, out, (self,))
        write_out(out, r, DEPRECATED_RESIZE)
        return out
    if not isinstance(out, (tuple, list)) or not all(isinstance(t, TensorBase) for t in out):
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, int, "
                        f"out={type(out).__name__}), but expected one of: (Tensor input, int dim, "
                        f"bool keepdim = False, *, tuple of Tensors out = None)")
    if len(out) != 2:
        raise TypeError(f"expected tuple of 2 elements but got {len(out)}")
    values, indices = out
    check_out(values, name, name, (self,))
    r = dispatch(op, args)
    _expected(op, r[0], values, (self,))
    _long_out(op, indices)
    write_out(values, r[0], DEPRECATED_RESIZE)
    write_out(indices, r[1], DEPRECATED_RESIZE)
    cls = _OUT_RETURN_TYPES.get(name)
    if cls is None:  # torch.return_types.max_out, made on first use (reductions imports the Tensor class)
        from .reductions import _return_type
        cls = _OUT_RETURN_TYPES[name] = _return_type(f"{name}_out")
    return cls(values, indices)


_OUT_RETURN_TYPES: dict = {}


def call_with_out(op, args: tuple, out):
    """``op(*args, out=out)``: PyTorch's checks for the ``.out`` overload, the op through the dispatcher, then
    ``out`` resized (with the deprecation warning if it had elements) and written; returns ``out``."""
    name = op.name
    if name == "max" or name == "min":
        return _max_min_out(op, args, out)
    if not isinstance(out, TensorBase):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {_tp_name(out)}")
    pre = _PRE_CHECK.get(name)
    if pre is not None:
        pre(op, out)
    inputs = _tensor_inputs(op, args)
    if name not in _NO_GRAD_CHECK:
        check_out(out, name, _AUTOGRAD_NAME.get(name, name), tuple(inputs))
    if name in _IN_OUT_DTYPE:
        if name == "mean":
            _cast(op, inputs[0], out, inputs)
        if name == "cumsum" and out.dtype is _dtype.bool_:
            raise NotImplementedError("\"cumsum_out_cpu\" not implemented for 'Bool'")
        k = next(i for i, a in enumerate(op.args) if a.name == "dtype")
        if args[k] is None:
            args = args[:k] + (out.dtype,) + args[k + 1:]
    r = dispatch(op, args)
    _CHECK.get(name, _cast)(op, r, out, inputs)
    # nothing here records a graph (the check above refused inputs that require grad); an out of a
    # non-differentiable op may itself require grad, as in PyTorch, and is written all the same
    prev = grad_state.enabled
    grad_state.enabled = False
    try:
        if name == "nonzero" and out._shape != r._shape:
            # nonzero's out kernel gives out column-major strides (one index column after another)
            resize_output(out, r._shape, DEPRECATED_RESIZE)
            out._stride = (1, r._shape[0]) if r._shape[0] > 1 else out._stride
        write_out(out, r, DEPRECATED_RESIZE)
    finally:
        grad_state.enabled = prev
    return out
