"""Pointwise ops: unary math, binary arithmetic, comparisons, where, clamp.

In PyTorch: ``aten/src/ATen/native/BinaryOps.cpp``, ``UnaryOps.cpp`` and the
TensorIterator that computes the broadcast shape and the result dtype.

Every kernel here follows the same recipe:

1. work out the result dtype (``common.result_type``) and the broadcast shape;
2. get numpy views of the inputs (``t._np()``), cast if needed;
3. call one vectorised numpy function;
4. ``wrap`` the result in a new tensor.

The meta functions do steps 1 and return an empty meta tensor.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .common import (
    binary_result_type,
    broadcast_shapes,
    broadcast_two,
    checked_scalar,
    empty_meta,
    result_type,
    to_np_scalar,
    wrap,
)
from .registry import register


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _operand(x, dt: _dtype.dtype):
    """numpy operand of dtype ``dt``: a view (cast if needed) for tensors, the scalar itself otherwise."""
    if isinstance(x, Tensor):
        a = x._np_cache
        if a is None:
            a = x._np()
        adt = a.dtype
        dtnp = dt.np
        return a if adt is dtnp or adt == dtnp else a.astype(dtnp)
    if type(x) is int and dt.category == _dtype._INT:
        lo, hi = _INT_RANGE[dt]
        if x < lo or x > hi:
            # A Python int that does not fit the dtype wraps around like C, as in PyTorch
            # (uint8 tensor > -1 compares with 255).
            return to_np_scalar(x, dt)
    elif type(x) is float and dt is _dtype.float16 and (x > 65504.0 or x < -65504.0):
        return np.float16(np.inf if x > 0 else -np.inf)  # rounds to infinity, without numpy's warning
    return x


_INT_RANGE = {d: (int(np.iinfo(d.np).min), int(np.iinfo(d.np).max))
              for d in (_dtype.int64, _dtype.int32, _dtype.int16, _dtype.int8, _dtype.uint8)}


def _shape_of(x) -> tuple:
    return x._shape if isinstance(x, Tensor) else ()


def _apply_binary(fn, a, b, dt: _dtype.dtype):
    """``fn(a, b)`` on numpy operands of dtype ``dt``, with PyTorch's broadcast error."""
    an, bn = _operand(a, dt), _operand(b, dt)
    try:
        return fn(an, bn)
    except ValueError:
        if isinstance(a, Tensor) and isinstance(b, Tensor):
            broadcast_two(a._shape, b._shape)  # PyTorch's error message if they don't broadcast
        raise
    except OverflowError:
        # A Python int too large even for int64: wrap it around like C, as PyTorch does.
        if not isinstance(a, Tensor):
            an = to_np_scalar(a, dt)
        if not isinstance(b, Tensor):
            bn = to_np_scalar(b, dt)
        return fn(an, bn)


def _same_dtype(fn, a, b):
    """``fn`` on two tensors of one dtype (the common case of add and mul: no promotion, no casts)."""
    an = a._np_cache
    if an is None:
        an = a._np()
    bn = b._np_cache
    if bn is None:
        bn = b._np()
    try:
        return wrap(fn(an, bn), a.dtype)
    except ValueError:
        broadcast_two(a._shape, b._shape)  # PyTorch's error message if they don't broadcast
        raise


def _not_for_bool(name: str, *xs) -> None:
    """PyTorch's error for integer-only kernels called on two bools (``"remainder_cpu" not implemented``)."""
    if all(isinstance(x, Tensor) and x.dtype is _dtype.bool_ or x is True or x is False for x in xs):
        raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")


def _float_type(dt: _dtype.dtype) -> _dtype.dtype:
    """Integer and bool inputs of float-valued ops compute in the default float dtype."""
    return dt if dt.category == _dtype._FLOAT else _dtype.get_default_dtype()


def _binary_meta(out_dtype=None, float_out=False):
    def meta(self, other, *rest):
        dt = binary_result_type(self, other)
        if float_out:
            dt = _float_type(dt)
        return empty_meta(broadcast_two(_shape_of(self), _shape_of(other)), out_dtype or dt)
    return meta


def _unary_meta(float_out=False, out_dtype=None):
    def meta(self, *rest):
        dt = out_dtype or (_float_type(self.dtype) if float_out else self.dtype)
        return empty_meta(self._shape, dt)
    return meta


# ---------------------------------------------------------------------------
# binary arithmetic
# ---------------------------------------------------------------------------
def _check_alpha(dt, alpha):
    if alpha != 1 and dt.category != _dtype._FLOAT and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    checked_scalar(alpha, dt)


@register("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", meta=_binary_meta(),
          inplace="add_", kind="pointwise")
def add(self, other, alpha=1):
    """self + alpha * other, broadcasting."""
    if alpha == 1 and isinstance(other, Tensor) and isinstance(self, Tensor) and self.dtype is other.dtype:
        return _same_dtype(np.add, self, other)
    dt = binary_result_type(self, other)
    if alpha != 1:
        _check_alpha(dt, alpha)
        other = mul.cpu(other, alpha) if isinstance(other, Tensor) else other * alpha
    return wrap(_apply_binary(np.add, self, other, dt), dt)


def _is_bool(x) -> bool:
    return x.dtype is _dtype.bool_ if isinstance(x, Tensor) else (x is True or x is False)


def _check_bool_sub(self, other):
    if _is_bool(self) and _is_bool(other):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead.")
    if ((isinstance(self, Tensor) and self.dtype is _dtype.bool_)
            or (isinstance(other, Tensor) and other.dtype is _dtype.bool_)):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


@register("sub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", meta=_binary_meta(),
          inplace="sub_", kind="pointwise")
def sub(self, other, alpha=1):
    """self - alpha * other, broadcasting."""
    dt = binary_result_type(self, other)
    if (dt is _dtype.bool_ or (isinstance(self, Tensor) and self.dtype is _dtype.bool_)
            or (isinstance(other, Tensor) and other.dtype is _dtype.bool_)):
        _check_bool_sub(self, other)
    if alpha != 1:
        _check_alpha(dt, alpha)
        other = mul.cpu(other, alpha) if isinstance(other, Tensor) else other * alpha
    return wrap(_apply_binary(np.subtract, self, other, dt), dt)


@register("rsub(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", meta=_binary_meta(),
          variants=("function",), kind="pointwise")
def rsub(self, other, alpha=1):
    """other - alpha * self (what ``1 - x`` calls)."""
    return sub.cpu(other, self, alpha) if isinstance(other, Tensor) else _rsub_scalar(self, other, alpha)


def _rsub_scalar(self, other, alpha):
    dt = binary_result_type(self, other)
    if self.dtype is _dtype.bool_:
        _check_bool_sub(self, other)
    s = self if alpha == 1 else mul.cpu(self, alpha)
    return wrap(_apply_binary(np.subtract, other, s, dt), dt)


@register("mul(Tensor self, Tensor other) -> Tensor", meta=_binary_meta(), inplace="mul_",
          kind="pointwise")
def mul(self, other):
    """Elementwise product, broadcasting."""
    if isinstance(other, Tensor) and isinstance(self, Tensor) and self.dtype is other.dtype:
        return _same_dtype(np.multiply, self, other)
    dt = binary_result_type(self, other)
    return wrap(_apply_binary(np.multiply, self, other, dt), dt)


def _div_meta(self, other, rounding_mode=None):
    dt = binary_result_type(self, other)
    if rounding_mode is None:
        dt = _float_type(dt)
    return empty_meta(broadcast_two(_shape_of(self), _shape_of(other)), dt)


@register("div(Tensor self, Tensor other, *, str? rounding_mode=None) -> Tensor", meta=_div_meta,
          inplace="div_", kind="pointwise")
def div(self, other, rounding_mode=None):
    """True division (integers give floats); ``rounding_mode='floor'|'trunc'`` rounds."""
    dt = binary_result_type(self, other)
    if rounding_mode is None:
        ft = _float_type(dt)
        with np.errstate(divide="ignore", invalid="ignore"):
            return wrap(_apply_binary(np.true_divide, self, other, ft), ft)
    if rounding_mode == "floor":
        return floor_divide.cpu(self, other)
    if rounding_mode == "trunc":
        with np.errstate(divide="ignore", invalid="ignore"):
            if dt.category == _dtype._FLOAT:
                return wrap(np.trunc(_apply_binary(np.true_divide, self, other, dt)), dt)
            _check_int_zero_div(other)
            q = _apply_binary(np.true_divide, self, other, _dtype.float64)
            return wrap(np.trunc(q).astype(dt.np), dt)
    raise RuntimeError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def _check_int_zero_div(other):
    if (isinstance(other, Tensor) and other.dtype.category != _dtype._FLOAT and (other._np() == 0).any()) or \
            (not isinstance(other, Tensor) and other == 0 and not isinstance(other, float)):
        raise RuntimeError("ZeroDivisionError")


@register("floor_divide(Tensor self, Tensor other) -> Tensor", meta=_binary_meta(),
          inplace="floor_divide_", kind="pointwise")
def floor_divide(self, other):
    """Division rounded towards minus infinity (``//``): ``-3 // 2 == -2``."""
    dt = binary_result_type(self, other)
    if dt is _dtype.bool_:
        _not_for_bool("div_floor_cpu", self, other)
    if dt.category != _dtype._FLOAT:
        _check_int_zero_div(other)
    with np.errstate(divide="ignore", invalid="ignore"):
        return wrap(_apply_binary(np.floor_divide, self, other, dt), dt)


@register("remainder(Tensor self, Tensor other) -> Tensor", meta=_binary_meta(),
          inplace="remainder_", kind="pointwise")
def remainder(self, other):
    """Python-style modulus (``%``): the result has the sign of the divisor."""
    dt = binary_result_type(self, other)
    if dt is _dtype.bool_:
        _not_for_bool("remainder_cpu", self, other)
    if dt.category != _dtype._FLOAT:
        _check_int_zero_div(other)
    with np.errstate(divide="ignore", invalid="ignore"):
        return wrap(_apply_binary(np.remainder, self, other, dt), dt)


@register("fmod(Tensor self, Tensor other) -> Tensor", meta=_binary_meta(), kind="pointwise")
def fmod(self, other):
    """C-style remainder: the result has the sign of the dividend."""
    dt = binary_result_type(self, other)
    if dt is _dtype.bool_:
        _not_for_bool("fmod_cpu", self, other)
    if dt.category != _dtype._FLOAT:
        _check_int_zero_div(other)
    with np.errstate(divide="ignore", invalid="ignore"):
        return wrap(_apply_binary(np.fmod, self, other, dt), dt)


def _pow_meta(self, exponent):
    dt = binary_result_type(self, exponent)
    return empty_meta(broadcast_two(_shape_of(self), _shape_of(exponent)), dt)


@register("pow(Tensor self, Tensor exponent) -> Tensor", meta=_pow_meta, inplace="pow_",
          kind="pointwise")
def pow(self, exponent):  # noqa: A001
    """self ** exponent, broadcasting.

    Integers: a negative *scalar* exponent raises; negative exponents in a tensor give
    PyTorch's integer results (1 for base 1, +-1 for base -1, else 0).
    """
    dt = binary_result_type(self, exponent)
    if dt.category != _dtype._FLOAT:
        if dt is _dtype.bool_:
            _not_for_bool("pow", self, exponent)
        if not isinstance(exponent, Tensor) and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if not isinstance(exponent, Tensor):
            exponent = checked_scalar(exponent, dt)
        if isinstance(exponent, Tensor):
            return wrap(_int_pow(_operand(self, dt), _operand(exponent, dt)), dt)
    if not isinstance(self, Tensor):
        # scalar ** tensor
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return wrap(_apply_binary(np.power, self, exponent, dt), dt)
    if not isinstance(exponent, Tensor):
        if exponent == 2:
            a = _operand(self, dt)
            return wrap(a * a, dt)
        if exponent == 0.5 and dt.category == _dtype._FLOAT:
            with np.errstate(invalid="ignore"):
                return wrap(np.sqrt(_operand(self, dt)), dt)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return wrap(_apply_binary(np.power, self, exponent, dt), dt)


def _int_pow(base, exp):
    """Integer power where exponents may be negative (numpy refuses those)."""
    base, exp = np.broadcast_arrays(base, exp)
    neg = exp < 0
    if not neg.any():
        return np.power(base, exp)
    r = np.power(base, np.where(neg, 0, exp))
    one = np.ones((), r.dtype)
    minus = np.where(exp % 2 == 0, one, -one) if r.dtype.kind == "i" else one
    return np.where(neg, np.where(base == 1, one, np.where(base == -1, minus, np.zeros((), r.dtype))), r)


def _minmax_meta(self, other):
    return empty_meta(broadcast_two(self._shape, other._shape), binary_result_type(self, other))


@register("maximum(Tensor self, Tensor other) -> Tensor", meta=_minmax_meta, kind="pointwise")
def maximum(self, other):
    """Elementwise maximum (NaN propagates)."""
    dt = binary_result_type(self, other)
    return wrap(_apply_binary(np.maximum, self, other, dt), dt)


@register("minimum(Tensor self, Tensor other) -> Tensor", meta=_minmax_meta, kind="pointwise")
def minimum(self, other):
    """Elementwise minimum (NaN propagates)."""
    dt = binary_result_type(self, other)
    return wrap(_apply_binary(np.minimum, self, other, dt), dt)


@register("atan2(Tensor self, Tensor other) -> Tensor", meta=_binary_meta(float_out=True),
          kind="pointwise")
def atan2(self, other):
    ft = _float_type(binary_result_type(self, other))
    return wrap(_apply_binary(np.arctan2, self, other, ft), ft)


# bitwise / logical ---------------------------------------------------------
def _bitwise(name, fn):
    def kernel(self, other):
        dt = binary_result_type(self, other)
        if dt.category == _dtype._FLOAT:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{dt._tensor_name}\'')
        return wrap(_apply_binary(fn, self, other, dt), dt)
    kernel.__name__ = name
    kernel.__doc__ = f"Elementwise {name} of integer or bool tensors."
    return kernel


bitwise_and = register("bitwise_and(Tensor self, Tensor other) -> Tensor", meta=_binary_meta(),
                       inplace="bitwise_and_", kind="pointwise")(_bitwise("bitwise_and", np.bitwise_and))
bitwise_or = register("bitwise_or(Tensor self, Tensor other) -> Tensor", meta=_binary_meta(),
                      inplace="bitwise_or_", kind="pointwise")(_bitwise("bitwise_or", np.bitwise_or))
bitwise_xor = register("bitwise_xor(Tensor self, Tensor other) -> Tensor", meta=_binary_meta(),
                       inplace="bitwise_xor_", kind="pointwise")(_bitwise("bitwise_xor", np.bitwise_xor))


def _logical(fn):
    def kernel(self, other):
        a = self._np() if isinstance(self, Tensor) else self
        b = other._np() if isinstance(other, Tensor) else other
        if isinstance(self, Tensor) and isinstance(other, Tensor) and self._shape != other._shape:
            broadcast_two(self._shape, other._shape)
        return wrap(fn(a, b), _dtype.bool_)
    return kernel


logical_and = register("logical_and(Tensor self, Tensor other) -> Tensor",
                       meta=_binary_meta(out_dtype=_dtype.bool_), kind="pointwise")(_logical(np.logical_and))
logical_or = register("logical_or(Tensor self, Tensor other) -> Tensor",
                      meta=_binary_meta(out_dtype=_dtype.bool_), kind="pointwise")(_logical(np.logical_or))
logical_xor = register("logical_xor(Tensor self, Tensor other) -> Tensor",
                       meta=_binary_meta(out_dtype=_dtype.bool_), kind="pointwise")(_logical(np.logical_xor))


# ---------------------------------------------------------------------------
# comparisons: compute in the promoted dtype, return bool
# ---------------------------------------------------------------------------
def _compare(fn):
    def kernel(self, other):
        dt = binary_result_type(self, other)
        return wrap(_apply_binary(fn, self, other, dt), _dtype.bool_)
    return kernel


for _name, _fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                   ("gt", np.greater), ("ge", np.greater_equal)):
    globals()[_name] = register(f"{_name}(Tensor self, Tensor other) -> Tensor",
                                meta=_binary_meta(out_dtype=_dtype.bool_), inplace=f"{_name}_",
                                kind="pointwise")(_compare(_fn))


@register("isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor",
          meta=_binary_meta(out_dtype=_dtype.bool_), kind="pointwise")
def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if isinstance(other, Tensor) and other.dtype is not self.dtype:
        raise RuntimeError(f"{self.dtype._tensor_name} did not match {other.dtype._tensor_name}")
    dt = binary_result_type(self, other)
    if isinstance(other, Tensor) and other._shape != self._shape:
        broadcast_two(self._shape, other._shape)
    return wrap(np.isclose(_operand(self, dt), _operand(other, dt), rtol=rtol, atol=atol,
                           equal_nan=equal_nan), _dtype.bool_)


# ---------------------------------------------------------------------------
# unary
# ---------------------------------------------------------------------------
def _unary_float(name: str, fn, doc: str):
    """A float-valued unary op (exp, log, sin, ...): ints and bools compute in the default float dtype."""
    def kernel(self):
        dt = self.dtype
        if dt.category != _dtype._FLOAT:
            dt = _dtype.get_default_dtype()
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                return wrap(fn(self._np().astype(dt.np)), dt)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return wrap(fn(self._np()), dt)
    kernel.__name__ = name
    kernel.__doc__ = doc
    return register(f"{name}(Tensor self) -> Tensor", meta=_unary_meta(float_out=True),
                    inplace=f"{name}_", kind="pointwise")(kernel)


def _rsqrt(a):
    return 1.0 / np.sqrt(a)


def _sigmoid(a):
    # numerically safe for large |a|: exp of a non-positive number only
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)


exp = _unary_float("exp", np.exp, "e ** x, elementwise.")
exp2 = _unary_float("exp2", np.exp2, "2 ** x, elementwise.")
expm1 = _unary_float("expm1", np.expm1, "exp(x) - 1, accurate near 0.")
log = _unary_float("log", np.log, "Natural logarithm, elementwise.")
log2 = _unary_float("log2", np.log2, "Base-2 logarithm, elementwise.")
log10 = _unary_float("log10", np.log10, "Base-10 logarithm, elementwise.")
log1p = _unary_float("log1p", np.log1p, "log(1 + x), accurate near 0.")
sqrt = _unary_float("sqrt", np.sqrt, "Square root, elementwise.")
rsqrt = _unary_float("rsqrt", _rsqrt, "1 / sqrt(x), elementwise.")
sin = _unary_float("sin", np.sin, "Sine, elementwise.")
cos = _unary_float("cos", np.cos, "Cosine, elementwise.")
tan = _unary_float("tan", np.tan, "Tangent, elementwise.")
asin = _unary_float("asin", np.arcsin, "Inverse sine, elementwise.")
acos = _unary_float("acos", np.arccos, "Inverse cosine, elementwise.")
atan = _unary_float("atan", np.arctan, "Inverse tangent, elementwise.")
sinh = _unary_float("sinh", np.sinh, "Hyperbolic sine, elementwise.")
cosh = _unary_float("cosh", np.cosh, "Hyperbolic cosine, elementwise.")
tanh = _unary_float("tanh", np.tanh, "Hyperbolic tangent, elementwise.")
sigmoid = _unary_float("sigmoid", _sigmoid, "1 / (1 + exp(-x)), elementwise.")
reciprocal = _unary_float("reciprocal", np.reciprocal, "1 / x, elementwise.")


def _erf(x):
    """erf from Numerical Recipes' erfc approximation (fractional error below 1.2e-7).

    numpy has no erf, and course_lib depends on numpy only; this is accurate to float32
    rounding, which is what GELU needs.  (PyTorch calls the C library's ``erf``.)
    """
    x = np.asarray(x)
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    r = t * np.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277)))))))))
    y = np.where(x >= 0, 1.0 - r, r - 1.0)
    return y.astype(x.dtype, copy=False)


erf = _unary_float("erf", _erf, "The error function, elementwise.")


def _same_dtype_unary(name, fn, doc, inplace=True, allow_bool=True, kernel_name=None, float_only=False):
    def kernel(self):
        if self.dtype is _dtype.bool_ and not allow_bool:
            if kernel_name is None:
                raise RuntimeError(
                    f"{'Negation, the `-` operator,' if name == 'neg' else name} on a bool tensor is not supported. "
                    "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
            raise NotImplementedError(f"\"{kernel_name}\" not implemented for 'Bool'")
        if float_only and self.dtype.category != _dtype._FLOAT:
            raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{self.dtype._tensor_name}'")
        return wrap(fn(self._np()), self.dtype)
    kernel.__name__ = name
    kernel.__doc__ = doc
    return register(f"{name}(Tensor self) -> Tensor", meta=_unary_meta(),
                    inplace=f"{name}_" if inplace else None, kind="pointwise")(kernel)


neg = _same_dtype_unary("neg", np.negative, "-x, elementwise.", allow_bool=False)
abs = _same_dtype_unary("abs", np.abs, "|x|, elementwise.", allow_bool=False, kernel_name="abs_cpu")  # noqa: A001
floor = _same_dtype_unary("floor", np.floor, "Round down, elementwise.", allow_bool=False,
                          kernel_name="floor_vml_cpu")
ceil = _same_dtype_unary("ceil", np.ceil, "Round up, elementwise.", allow_bool=False, kernel_name="ceil_vml_cpu")
trunc = _same_dtype_unary("trunc", np.trunc, "Round towards zero, elementwise.", allow_bool=False,
                          kernel_name="trunc_vml_cpu")
round = _same_dtype_unary("round", np.round, "Round half to even, elementwise.", allow_bool=False,  # noqa: A001
                          kernel_name="round_vml_cpu")
sign = _same_dtype_unary("sign", lambda a: a.copy() if a.dtype == np.bool_ else np.sign(a),
                         "-1, 0 or 1 by the sign of x.")
frac = _same_dtype_unary("frac", lambda a: a - np.trunc(a), "x - trunc(x), elementwise.", float_only=True,
                         kernel_name="frac_cpu")


@register("square(Tensor self) -> Tensor", meta=lambda self: empty_meta(
    self._shape, _dtype.int64 if self.dtype is _dtype.bool_ else self.dtype), inplace="square_", kind="pointwise")
def square(self):
    """x * x, elementwise (``pow(x, 2)``: bools give int64)."""
    dt = _dtype.int64 if self.dtype is _dtype.bool_ else self.dtype
    a = _operand(self, dt)
    return wrap(a * a, dt)


@register("bitwise_not(Tensor self) -> Tensor", meta=_unary_meta(), inplace="bitwise_not_",
          kind="pointwise")
def bitwise_not(self):
    """``~x``: bitwise not of integers, logical not of bools."""
    if self.dtype.category == _dtype._FLOAT:
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{self.dtype._tensor_name}'")
    return wrap(np.invert(self._np()), self.dtype)


@register("logical_not(Tensor self) -> Tensor", meta=_unary_meta(out_dtype=_dtype.bool_), kind="pointwise")
def logical_not(self):
    return wrap(np.logical_not(self._np()), _dtype.bool_)


@register("isnan(Tensor self) -> Tensor", meta=_unary_meta(out_dtype=_dtype.bool_), kind="pointwise")
def isnan(self):
    return wrap(np.isnan(self._np()), _dtype.bool_)


@register("isinf(Tensor self) -> Tensor", meta=_unary_meta(out_dtype=_dtype.bool_), kind="pointwise")
def isinf(self):
    return wrap(np.isinf(self._np()), _dtype.bool_)


@register("isfinite(Tensor self) -> Tensor", meta=_unary_meta(out_dtype=_dtype.bool_), kind="pointwise")
def isfinite(self):
    return wrap(np.isfinite(self._np()), _dtype.bool_)


# activations that are pointwise ---------------------------------------------
@register("relu(Tensor self) -> Tensor", meta=_unary_meta(), inplace="relu_", kind="pointwise")
def relu(self):
    """max(x, 0), elementwise."""
    if self.dtype is _dtype.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    a = self._np()
    return wrap(np.maximum(a, a.dtype.type(0)), self.dtype)


@register("threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor", variants=(),
          meta=lambda grad_output, self, threshold: empty_meta(grad_output._shape, grad_output.dtype), kind="nn")
def threshold_backward(grad_output, self, threshold):
    """grad_output where self > threshold, else 0: what ``ReluBackward0`` runs (with threshold 0)
    when no graph of the backward is recorded.

    Deliberate difference: computed as grad * (self > threshold), the value of the formula
    ``g * (result > 0)`` it replaces, so a NaN gradient stays NaN where PyTorch's kernel gives 0.
    """
    g = grad_output._np()
    return wrap(np.multiply(g, self._np() > threshold), grad_output.dtype)


@register("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", meta=None,
          inplace="clamp_", kind="pointwise")
def clamp(self, min=None, max=None):  # noqa: A002
    """Limit every element to [min, max]; either bound may be None (or a tensor)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dt = result_type(self, min, max)
    if dt is _dtype.bool_ and not (isinstance(min, Tensor) or isinstance(max, Tensor)):
        kernel = "clamp_scalar_cpu" if min is not None and max is not None else \
            ("clamp_min_scalar_cpu" if min is not None else "clamp_max_scalar_cpu")
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        broadcast_shapes(self._shape, *[x._shape for x in (min, max) if isinstance(x, Tensor)])
    a = _operand(self, dt)
    lo = (_operand(min, dt) if isinstance(min, Tensor) else checked_scalar(min, dt)) if min is not None else None
    hi = (_operand(max, dt) if isinstance(max, Tensor) else checked_scalar(max, dt)) if max is not None else None
    if lo is not None:
        a = np.maximum(a, lo)
    if hi is not None:
        a = np.minimum(a, hi)
    return wrap(a, dt)


def _clamp_meta(self, min=None, max=None):  # noqa: A002
    shapes = [self._shape] + [x._shape for x in (min, max) if isinstance(x, Tensor)]
    return empty_meta(broadcast_shapes(*shapes), result_type(self, min, max))


clamp.meta = _clamp_meta


def _where_meta(condition, self, other):
    return empty_meta(broadcast_shapes(_shape_of(condition), _shape_of(self), _shape_of(other)),
                      result_type(self, other))


@register("where(Tensor condition, Tensor self, Tensor other) -> Tensor", meta=_where_meta,
          kind="pointwise")
def where(condition, self, other):
    """Pick ``self`` where ``condition`` is True, else ``other`` (all broadcast)."""
    if condition.dtype is not _dtype.bool_ and condition.dtype is not _dtype.uint8:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{condition.dtype._tensor_name}")
    dt = result_type(self, other)
    broadcast_shapes(condition._shape, _shape_of(self), _shape_of(other))
    a = _operand(self, dt) if isinstance(self, Tensor) else checked_scalar(self, dt)
    b = _operand(other, dt) if isinstance(other, Tensor) else checked_scalar(other, dt)
    return wrap(np.where(condition._np(), a, b), dt)


def _lerp_meta(self, end, weight):
    _check_lerp(self, end, weight)
    return empty_meta(broadcast_shapes(self._shape, end._shape, _shape_of(weight)), self.dtype)


@register("lerp(Tensor self, Tensor end, Tensor weight) -> Tensor", meta=_lerp_meta, inplace="lerp_",
          kind="pointwise")
def lerp(self, end, weight):
    """self + weight * (end - self)."""
    dt = self.dtype
    _check_lerp(self, end, weight)
    a, b, w = _operand(self, dt), _operand(end, dt), _operand(weight, dt)
    return wrap(a + w * (b - a), dt)


def _check_lerp(self, end, weight):
    if self.dtype.category != _dtype._FLOAT:
        kind = "tensor" if isinstance(weight, Tensor) else "scalar"
        raise NotImplementedError(f"\"lerp_kernel_{kind}\" not implemented for '{self.dtype._tensor_name}'")
    for name, x in (("end", end), ("weight", weight)):
        if isinstance(x, Tensor) and x.dtype is not self.dtype:
            raise RuntimeError(f"expected dtype {_dtype.c_type_name(self.dtype, 'demangled')} for `{name}` but got "
                               f"dtype {_dtype.c_type_name(x.dtype, 'demangled')}")
    broadcast_shapes(self._shape, end._shape, *([weight._shape] if isinstance(weight, Tensor) else []))
