"""Symbolic functions: each registry op of a captured graph, as the ONNX nodes that compute it.

In PyTorch: ``torch/onnx/symbolic_opset9.py`` ... ``symbolic_opset20.py``, one function per
``aten::`` op (``def relu(g, input): return g.op("Relu", input)``), picked by the exporter for
the target opset.  Here a symbolic function gets the exporter (``ex``: ``ex.value(arg)`` is an
argument's ONNX name, ``ex.add(op_type, inputs, output, **attributes)`` appends a node,
``ex.out(node)`` is the name of the node's result) and the FX node with its arguments in schema
order.  Where the result's dynamic axes do not follow from matching the inputs' from the right
(reshapes, transposes, reductions) the function records them in ``ex.dims``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..fx.node import Node
from .errors import SymbolicValueError, UnsupportedOperatorError

__all__ = ["SYMBOLICS", "register_symbolic"]

SYMBOLICS: dict[str, Callable] = {}

_INT64_MAX = np.iinfo(np.int64).max


def register_symbolic(*names: str) -> Callable:
    """``@register_symbolic("relu", "relu_")``: the function that exports these ops."""
    def deco(fn: Callable) -> Callable:
        for n in names:
            SYMBOLICS[n] = fn
        return fn
    return deco


def _pair(v: Any, n: int) -> list[int]:
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v] * (n if len(v) == 1 else 1)
    return [int(v)] * n


def _cast_to_result(ex, node: Node, a: Any) -> str:
    """``a`` (a tensor node or a number) as an ONNX value of ``node``'s dtype (Cast if needed)."""
    dtype = ex.np_dtype(node)
    if not isinstance(a, Node):
        return ex.constant(a, dtype)
    name = ex.value(a)
    if ex.np_dtype(a) != dtype:
        from onnx.helper import np_dtype_to_tensor_dtype
        name = ex.add("Cast", [name], ex.temp(node, f"cast_{name}"), to=np_dtype_to_tensor_dtype(dtype))
    return name


# -- pointwise ---------------------------------------------------------------------------------

_UNARY = {"relu": "Relu", "relu_": "Relu", "sigmoid": "Sigmoid", "sigmoid_": "Sigmoid", "tanh": "Tanh",
          "tanh_": "Tanh", "erf": "Erf", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "neg": "Neg", "abs": "Abs",
          "reciprocal": "Reciprocal", "floor": "Floor", "ceil": "Ceil", "sin": "Sin", "cos": "Cos"}


def _unary(ex, node: Node, x: Node, *_: Any) -> None:
    ex.add(_UNARY[node.target.name], [ex.value(x)], ex.out(node))


for _op in _UNARY:
    register_symbolic(_op)(_unary)


@register_symbolic("rsqrt")
def rsqrt(ex, node: Node, x: Node) -> None:
    ex.add("Reciprocal", [ex.add("Sqrt", [ex.value(x)], ex.temp(node, "sqrt"))], ex.out(node))


def _scaled(ex, node: Node, other: Any, alpha: Any) -> str:
    """``alpha * other`` (add and sub's alpha)."""
    value = _cast_to_result(ex, node, other if isinstance(other, Node) or alpha == 1 else other * alpha)
    if alpha != 1 and isinstance(other, Node):
        value = ex.add("Mul", [value, ex.constant(alpha, ex.np_dtype(node))], ex.temp(node, "alpha"))
    return value


@register_symbolic("add", "add_")
def add(ex, node: Node, self: Any, other: Any, alpha: Any = 1) -> None:
    ex.add("Add", [_cast_to_result(ex, node, self), _scaled(ex, node, other, alpha)], ex.out(node))


@register_symbolic("sub", "sub_")
def sub(ex, node: Node, self: Any, other: Any, alpha: Any = 1) -> None:
    ex.add("Sub", [_cast_to_result(ex, node, self), _scaled(ex, node, other, alpha)], ex.out(node))


@register_symbolic("rsub")
def rsub(ex, node: Node, self: Any, other: Any, alpha: Any = 1) -> None:
    ex.add("Sub", [_cast_to_result(ex, node, other), _scaled(ex, node, self, alpha)], ex.out(node))


@register_symbolic("mul", "mul_")
def mul(ex, node: Node, self: Any, other: Any) -> None:
    ex.add("Mul", [_cast_to_result(ex, node, self), _cast_to_result(ex, node, other)], ex.out(node))


@register_symbolic("div", "div_")
def div(ex, node: Node, self: Any, other: Any, rounding_mode: str | None = None) -> None:
    if rounding_mode is not None:
        raise SymbolicValueError(f"div with rounding_mode={rounding_mode!r} is not supported", node.name)
    ex.add("Div", [_cast_to_result(ex, node, self), _cast_to_result(ex, node, other)], ex.out(node))


@register_symbolic("pow")
def pow_(ex, node: Node, self: Any, exponent: Any) -> None:
    ex.add("Pow", [_cast_to_result(ex, node, self), _cast_to_result(ex, node, exponent)], ex.out(node))


@register_symbolic("clamp", "clamp_")
def clamp(ex, node: Node, self: Node, min: Any = None, max: Any = None) -> None:
    dtype = ex.np_dtype(node)
    bounds = ["" if b is None else ex.constant(b, dtype) for b in (min, max)]
    ex.add("Clip", [ex.value(self), *bounds], ex.out(node))


@register_symbolic("where")
def where(ex, node: Node, condition: Node, self: Any, other: Any) -> None:
    ex.add("Where", [ex.value(condition), _cast_to_result(ex, node, self), _cast_to_result(ex, node, other)],
           ex.out(node))


_COMPARISONS = {"eq": ("Equal", False), "ne": ("Equal", True), "gt": ("Greater", False),
                "ge": ("GreaterOrEqual", False), "lt": ("Less", False), "le": ("LessOrEqual", False)}


def _comparison(ex, node: Node, self: Any, other: Any) -> None:
    op_type, negate = _COMPARISONS[node.target.name]
    tensors = [a for a in (self, other) if isinstance(a, Node)]
    dtype = np.result_type(*(ex.np_dtype(a) for a in tensors))

    def operand(a: Any) -> str:
        if not isinstance(a, Node):
            return ex.constant(a, dtype)
        if ex.np_dtype(a) == dtype:
            return ex.value(a)
        from onnx.helper import np_dtype_to_tensor_dtype
        return ex.add("Cast", [ex.value(a)], ex.temp(node, f"cast_{a.name}"), to=np_dtype_to_tensor_dtype(dtype))
    inputs = [operand(self), operand(other)]
    if negate:
        ex.add("Not", [ex.add(op_type, inputs, ex.temp(node, op_type))], ex.out(node))
    else:
        ex.add(op_type, inputs, ex.out(node))


for _op in _COMPARISONS:
    register_symbolic(_op)(_comparison)


@register_symbolic("index_select")
def index_select(ex, node: Node, self: Node, dim: int, index: Node) -> None:
    ex.add("Gather", [ex.value(self), ex.value(index)], ex.out(node), axis=int(dim) % len(ex.shape(self)))


@register_symbolic("select")
def select(ex, node: Node, self: Node, dim: int, index: int) -> None:
    n = len(ex.shape(self))
    ex.add("Gather", [ex.value(self), ex.constant(int(index), np.int64, "Gather")], ex.out(node), axis=int(dim) % n)
    ex.dims[node] = tuple(d for i, d in enumerate(ex.dims_of(self)) if i != int(dim) % n)


@register_symbolic("embedding")
def embedding(ex, node: Node, weight: Node, indices: Node, *_: Any) -> None:
    ex.add("Gather", [ex.value(weight), ex.value(indices)], ex.out(node), axis=0)
    ex.dims[node] = ex.dims_of(indices) + (None,)


@register_symbolic("_to_copy")
def to_copy(ex, node: Node, self: Node, *_: Any) -> None:
    from onnx.helper import np_dtype_to_tensor_dtype
    ex.add("Cast", [ex.value(self)], ex.out(node), to=np_dtype_to_tensor_dtype(ex.np_dtype(node)))


# -- nn ----------------------------------------------------------------------------------------

@register_symbolic("convolution")
def convolution(ex, node: Node, input: Node, weight: Node, bias: Node | None, stride: Any, padding: Any,
                dilation: Any, transposed: bool, output_padding: Any, groups: int) -> None:
    k = len(ex.shape(weight)) - 2
    attrs = dict(kernel_shape=list(ex.shape(weight)[2:]), strides=_pair(stride, k), pads=_pair(padding, k) * 2,
                 dilations=_pair(dilation, k), group=int(groups))
    bn = ex.folded_bn.get(node)
    if bn is not None:   # eval-mode BatchNorm folded into the convolution (PyTorch's fuseConvBN)
        w, b = _fold_batch_norm(ex, weight, bias, bn)
        inputs = [ex.value(input), ex.initializer(w, ex.fresh("Conv")), ex.initializer(b, ex.fresh("Conv"))]
    else:
        inputs = [ex.value(input), ex.value(weight), ex.value(bias)]
    if transposed:
        attrs["output_padding"] = _pair(output_padding, k)
        ex.add("ConvTranspose", inputs, ex.out(node), **attrs)
    else:
        ex.add("Conv", inputs, ex.out(node), **attrs)


def _fold_batch_norm(ex, weight: Node, bias: Node | None, bn: Node) -> tuple[np.ndarray, np.ndarray]:
    """Conv weight and bias with ``y = (conv(x) - mean) / sqrt(var + eps) * gamma + beta`` folded in."""
    _, gamma, beta, mean, var, _, _, eps = bn.args
    w = ex.const_value(weight).detach().numpy()
    c = w.shape[0]
    mean_, var_ = (ex.const_value(a).detach().numpy() for a in (mean, var))
    gamma_ = np.ones(c, w.dtype) if gamma is None else ex.const_value(gamma).detach().numpy()
    beta_ = np.zeros(c, w.dtype) if beta is None else ex.const_value(beta).detach().numpy()
    b = np.zeros(c, w.dtype) if bias is None else ex.const_value(bias).detach().numpy()
    scale = gamma_ / np.sqrt(var_ + eps)
    return ((w * scale.reshape(-1, *([1] * (w.ndim - 1)))).astype(w.dtype),
            ((b - mean_) * scale + beta_).astype(w.dtype))


@register_symbolic("native_batch_norm")
def native_batch_norm(ex, node: Node, input: Node, weight: Node | None, bias: Node | None, running_mean: Any,
                      running_var: Any, training: bool, momentum: float, eps: float) -> None:
    c = ex.shape(input)[1]
    dtype = np.dtype(input.meta["tensor_meta"].dtype.np)
    ex.dims[node] = ex.dims_of(input)
    if training or running_mean is None:
        # batch statistics (InstanceNorm, or track_running_stats=False): the running ones are not updated
        x = ex.value(input)
        axes = [0] + list(range(2, len(ex.shape(input))))
        mean = _reduce_mean(ex, x, axes, ex.temp(node, "mean"))
        centred = ex.add("Sub", [x, mean], ex.temp(node, "centred"))
        var = _reduce_mean(ex, ex.add("Mul", [centred, centred], ex.temp(node, "square")), axes, ex.temp(node, "var"))
        std = ex.add("Sqrt", [ex.add("Add", [var, ex.constant(eps, dtype)], ex.temp(node, "var_eps"))],
                     ex.temp(node, "std"))
        y = ex.add("Div", [centred, std], ex.temp(node, "normalized"))
        _affine(ex, node, y, weight, bias, len(ex.shape(input)))
        return
    scale = ex.value(weight) if weight is not None else ex.constant(np.ones(c), dtype)
    shift = ex.value(bias) if bias is not None else ex.constant(np.zeros(c), dtype)
    ex.add("BatchNormalization", [ex.value(input), scale, shift, ex.value(running_mean), ex.value(running_var)],
           ex.out(node), epsilon=float(eps))


def _reduce_mean(ex, x: str, axes: list[int], out: str) -> str:
    if ex.opset >= 18:
        return ex.add("ReduceMean", [x, ex.constant(axes, np.int64, "ReduceMean")], out, keepdims=1)
    return ex.add("ReduceMean", [x], out, axes=axes, keepdims=1)


def _affine(ex, node: Node, y: str, weight: Node | None, bias: Node | None, ndim: int) -> None:
    """``y * weight + bias`` with the per-channel parameters reshaped to ``(C, 1, ...)``; written to node's name."""
    shape = None
    for i, p in enumerate((weight, bias)):
        if p is None:
            continue
        if shape is None:
            shape = ex.constant([-1] + [1] * (ndim - 2), np.int64, "Reshape")
        p = ex.add("Reshape", [ex.value(p), shape], ex.temp(node, f"param_{i}"))
        y = ex.add("Mul" if i == 0 else "Add", [y, p], ex.temp(node, "scaled" if i == 0 else "shifted"))
    ex.add("Identity", [y], ex.out(node))


@register_symbolic("native_group_norm")
def native_group_norm(ex, node: Node, input: Node, weight: Node | None, bias: Node | None, N: int, C: int,
                      HxW: int, group: int, eps: float) -> None:
    dtype = np.dtype(input.meta["tensor_meta"].dtype.np)
    x = ex.value(input)
    # each (sample, group) normalised over its channels and positions: InstanceNormalization of (N, G, -1)
    grouped = ex.add("Reshape", [x, ex.constant([0, group, -1], np.int64, "Reshape")], ex.temp(node, "grouped"))
    normed = ex.add("InstanceNormalization", [grouped, ex.constant(np.ones(group), dtype),
                                              ex.constant(np.zeros(group), dtype)],
                    ex.temp(node, "normalized"), epsilon=float(eps))
    y = ex.add("Reshape", [normed, ex.add("Shape", [x], ex.temp(node, "shape"))], ex.temp(node, "ungrouped"))
    _affine(ex, node, y, weight, bias, len(ex.shape(input)))
    ex.dims[node] = ex.dims_of(input)


@register_symbolic("native_layer_norm")
def native_layer_norm(ex, node: Node, input: Node, normalized_shape: Any, weight: Node | None,
                      bias: Node | None, eps: float) -> None:
    if ex.opset < 17:
        raise UnsupportedOperatorError("aten::native_layer_norm", ex.opset, 17)
    dtype = np.dtype(input.meta["tensor_meta"].dtype.np)
    shape = tuple(normalized_shape)
    scale = ex.value(weight) if weight is not None else ex.constant(np.ones(shape), dtype)
    inputs = [ex.value(input), scale] + ([ex.value(bias)] if bias is not None else [])
    ex.add("LayerNormalization", inputs, ex.out(node), axis=-len(shape), epsilon=float(eps))
    ex.dims[node] = ex.dims_of(input)


@register_symbolic("max_pool2d_with_indices")
def max_pool2d_with_indices(ex, node: Node, self: Node, kernel_size: Any, stride: Any = (), padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False) -> None:
    kernel = _pair(kernel_size, 2)
    ex.add("MaxPool", [ex.value(self)], ex.out(node), kernel_shape=kernel,
           strides=_pair(stride, 2) if stride not in ((), [], None) else kernel, pads=_pair(padding, 2) * 2,
           dilations=_pair(dilation, 2), ceil_mode=int(ceil_mode))
    ex.dims[node] = ex.dims_of(self)


@register_symbolic("avg_pool2d")
def avg_pool2d(ex, node: Node, self: Node, kernel_size: Any, stride: Any = (), padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: Any = None) -> None:
    if divisor_override is not None:
        raise SymbolicValueError("avg_pool2d with divisor_override is not supported", node.name)
    kernel = _pair(kernel_size, 2)
    strides = _pair(stride, 2) if stride not in ((), [], None) else kernel
    pads = _pair(padding, 2)
    if list(ex.shape(self)[-2:]) == kernel and pads == [0, 0] and strides == kernel:
        # one window over the whole plane: adaptive_avg_pool2d(x, 1), at any input size
        ex.add("GlobalAveragePool", [ex.value(self)], ex.out(node))
    else:
        ex.add("AveragePool", [ex.value(self)], ex.out(node), kernel_shape=kernel, strides=strides, pads=pads * 2,
               ceil_mode=int(ceil_mode), count_include_pad=int(count_include_pad))
    d = ex.dims_of(self)
    ex.dims[node] = d[:-2] + (None, None)


@register_symbolic("softmax", "_softmax")
def softmax(ex, node: Node, self: Node, dim: int, dtype: Any = None) -> None:
    ex.add("Softmax", [_cast_to_result(ex, node, self)], ex.out(node), axis=int(dim))


@register_symbolic("log_softmax", "_log_softmax")
def log_softmax(ex, node: Node, self: Node, dim: int, dtype: Any = None) -> None:
    ex.add("LogSoftmax", [_cast_to_result(ex, node, self)], ex.out(node), axis=int(dim))


# -- linear algebra ----------------------------------------------------------------------------

def _gemm_weight(ex, mat2: Node) -> tuple[str, int]:
    """(name, transB): the weight itself when ``mat2`` is ``t(weight)`` of a Linear layer."""
    if mat2 in ex.skip:
        return ex.value(mat2.args[0]), 1
    return ex.value(mat2), 0


@register_symbolic("addmm")
def addmm(ex, node: Node, self: Any, mat1: Node, mat2: Node, beta: Any = 1, alpha: Any = 1) -> None:
    weight, trans_b = _gemm_weight(ex, mat2)
    ex.add("Gemm", [ex.value(mat1), weight, _cast_to_result(ex, node, self)], ex.out(node),
           alpha=float(alpha), beta=float(beta), transB=trans_b)
    ex.dims[node] = (ex.dims_of(mat1)[0], None)


@register_symbolic("mm")
def mm(ex, node: Node, self: Node, mat2: Node) -> None:
    weight, trans_b = _gemm_weight(ex, mat2)
    if trans_b:
        ex.add("Gemm", [ex.value(self), weight], ex.out(node), transB=1)
    else:
        ex.add("MatMul", [ex.value(self), weight], ex.out(node))
    ex.dims[node] = (ex.dims_of(self)[0], None if trans_b else ex.dims_of(mat2)[1])


@register_symbolic("bmm", "matmul")
def bmm(ex, node: Node, self: Node, mat2: Node) -> None:
    ex.add("MatMul", [ex.value(self), ex.value(mat2)], ex.out(node))


# -- shapes ------------------------------------------------------------------------------------

def _transpose(ex, node: Node, x: Node, perm: list[int]) -> None:
    ex.add("Transpose", [ex.value(x)], ex.out(node), perm=perm)
    d = ex.dims_of(x)
    ex.dims[node] = tuple(d[p] for p in perm)


@register_symbolic("t")
def t(ex, node: Node, self: Node) -> None:
    n = len(ex.shape(self))
    _transpose(ex, node, self, list(range(n))[::-1])


@register_symbolic("transpose")
def transpose(ex, node: Node, self: Node, dim0: int, dim1: int) -> None:
    n = len(ex.shape(self))
    perm = list(range(n))
    perm[dim0 % n], perm[dim1 % n] = perm[dim1 % n], perm[dim0 % n]
    _transpose(ex, node, self, perm)


@register_symbolic("permute")
def permute(ex, node: Node, self: Node, dims: Any) -> None:
    n = len(ex.shape(self))
    _transpose(ex, node, self, [int(d) % n for d in dims])


def _factors(sym: str, size: int, sym_size: dict[str, int]) -> list[tuple[int, str | None]]:
    """A dynamic axis as its factors in order: ``"5*b"`` (traced b=2) is ``[(5, None), (2, "b")]``."""
    parts = sym.split("*")
    if all(x.isdigit() or x in sym_size for x in parts):
        return [(int(x), None) if x.isdigit() else (sym_size[x], x) for x in parts]
    return [(size, sym)]


def _split(factors: list[tuple[int, str | None]], sizes: list[int]) -> list[str | None] | None:
    """Deal ``factors`` out, in order, to dimensions of ``sizes``: each dimension's symbol (None if static),
    or None if the factors do not line up with the sizes."""
    out, i = [], 0
    for size in sizes:
        prod, parts = 1, []
        while prod != size:
            if i == len(factors) or prod > size:
                return None
            prod *= factors[i][0]
            parts.append(factors[i])
            i += 1
        if prod != size:
            return None
        dynamic = any(sym is not None for _, sym in parts)
        out.append("*".join(sym or str(n) for n, sym in parts if sym is not None or n != 1) if dynamic else None)
    if any(sym is not None or n != 1 for n, sym in factors[i:]):
        return None
    return out


def reshape_target(in_shape: tuple, in_dims: tuple, out_shape: tuple, name: str,
                   sym_size: dict[str, int] | None = None) -> tuple[list[int], tuple]:
    """The ``shape`` input of an ONNX Reshape, and the result's dynamic axes.

    Leading dimensions the reshape keeps become ``0`` (copy the input's) when dynamic; trailing
    ones it keeps stay as they are.  In between, the dynamic axes are followed factor by factor
    (``sym_size`` gives each axis name's traced size): the one result dimension that holds a
    dynamic factor becomes ``-1``, which ONNX allows once.  ``(B, 512, 1, 1) -> (B, 512)`` gives
    ``[0, 512]``; ``(5 * B, 8) -> (5, B, 8)`` gives ``[5, -1, 8]``.
    """
    sym_size = sym_size or {}
    target, dims = [int(x) for x in out_shape], [None] * len(out_shape)
    n = min(len(in_shape), len(out_shape))
    p = 0
    while p < n and in_shape[p] == out_shape[p]:
        if in_dims[p] is not None:
            target[p], dims[p] = 0, in_dims[p]
        p += 1
    s = 0
    while (s < n - p and in_shape[len(in_shape) - 1 - s] == out_shape[len(out_shape) - 1 - s]
           and in_dims[len(in_dims) - 1 - s] is None):
        s += 1
    middle_in = list(zip(in_shape[p:len(in_shape) - s], in_dims[p:len(in_dims) - s]))
    middle_out = list(range(p, len(out_shape) - s))
    if not any(d is not None for _, d in middle_in):
        return target, tuple(dims)
    factors = []
    for size, d in middle_in:
        factors += [(size, None)] if d is None else _factors(d, size, sym_size)
    split = _split(factors, [out_shape[i] for i in middle_out])
    if split is not None and sum(x is not None for x in split) == 1:
        for i, sym in zip(middle_out, split):
            dims[i] = sym
            if sym is not None:
                target[i] = -1
    elif len(middle_out) == 1:
        target[p], dims[p] = -1, "*".join(sym or str(n) for n, sym in factors if sym is not None or n != 1)
    else:
        raise SymbolicValueError(f"cannot export a reshape of {tuple(in_shape)} to {tuple(out_shape)} whose "
                                 f"dynamic axes {[d for _, d in middle_in if d is not None]} it merges or "
                                 "splits among several dimensions", name)
    return target, tuple(dims)


@register_symbolic("view", "_unsafe_view", "reshape", "flatten", "unflatten", "view_as", "reshape_as")
def view(ex, node: Node, self: Node, *_: Any) -> None:
    target, dims = reshape_target(ex.shape(self), ex.dims_of(self), ex.shape(node), node.name, ex.sym_size)
    ex.add("Reshape", [ex.value(self), ex.constant(target, np.int64, "Reshape")], ex.out(node))
    ex.dims[node] = dims


@register_symbolic("unsqueeze", "unsqueeze_")
def unsqueeze(ex, node: Node, self: Node, dim: int) -> None:
    n = len(ex.shape(node))
    ex.add("Unsqueeze", [ex.value(self), ex.constant([dim % n], np.int64, "Unsqueeze")], ex.out(node))
    d = list(ex.dims_of(self))
    d.insert(dim % n, None)
    ex.dims[node] = tuple(d)


@register_symbolic("squeeze", "squeeze_")
def squeeze(ex, node: Node, self: Node, dim: Any = None) -> None:
    shape, d = ex.shape(self), ex.dims_of(self)
    n = len(shape)
    dims = range(n) if dim is None else (dim if isinstance(dim, (list, tuple)) else [dim])
    axes = sorted({int(a) % n for a in dims if shape[int(a) % n] == 1 and d[int(a) % n] is None}) if n else []
    if not axes:
        ex.add("Identity", [ex.value(self)], ex.out(node))
        ex.dims[node] = d
        return
    ex.add("Squeeze", [ex.value(self), ex.constant(axes, np.int64, "Squeeze")], ex.out(node))
    ex.dims[node] = tuple(x for i, x in enumerate(d) if i not in axes)


@register_symbolic("expand")
def expand(ex, node: Node, self: Node, size: Any, *_: Any) -> None:
    in_shape, in_dims = ex.shape(self), ex.dims_of(self)
    out_shape = ex.shape(node)
    lead = len(out_shape) - len(in_shape)
    # 1 where the input's size is kept (its dynamic axes included): ONNX Expand broadcasts
    target = [1 if i >= lead and (in_dims[i - lead] is not None or in_shape[i - lead] == s) else int(s)
              for i, s in enumerate(out_shape)]
    ex.add("Expand", [ex.value(self), ex.constant(target, np.int64, "Expand")], ex.out(node))


@register_symbolic("cat")
def cat(ex, node: Node, tensors: Any, dim: int = 0) -> None:
    n = len(ex.shape(node))
    ex.add("Concat", [_cast_to_result(ex, node, x) for x in tensors], ex.out(node), axis=int(dim) % n)
    ex.dims[node] = ex.dims_of(tensors[0])[:dim % n] + (None,) + ex.dims_of(tensors[0])[dim % n + 1:]


@register_symbolic("stack")
def stack(ex, node: Node, tensors: Any, dim: int = 0) -> None:
    n = len(ex.shape(node))
    axis = ex.constant([int(dim) % n], np.int64, "Unsqueeze")
    parts = [ex.add("Unsqueeze", [_cast_to_result(ex, node, x), axis], ex.temp(node, f"unsqueeze_{i}"))
             for i, x in enumerate(tensors)]
    ex.add("Concat", parts, ex.out(node), axis=int(dim) % n)
    d = list(ex.dims_of(tensors[0]))
    d.insert(int(dim) % n, None)
    ex.dims[node] = tuple(d)


@register_symbolic("slice")
def slice_(ex, node: Node, self: Node, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> None:
    n = len(ex.shape(self))
    c = [ex.constant([v], np.int64, "Slice") for v in
         (0 if start is None else start, _INT64_MAX if end is None else min(int(end), _INT64_MAX), int(dim) % n, step)]
    ex.add("Slice", [ex.value(self), *c], ex.out(node))
    d = list(ex.dims_of(self))
    if ex.shape(node)[int(dim) % n] != ex.shape(self)[int(dim) % n]:
        d[int(dim) % n] = None
    ex.dims[node] = tuple(d)


@register_symbolic("narrow")
def narrow(ex, node: Node, self: Node, dim: int, start: int, length: int) -> None:
    slice_(ex, node, self, dim, start, int(start) + int(length), 1)


def _reduce(ex, node: Node, op_type: str, self: Node, dim: Any, keepdim: bool, dtype: Any) -> None:
    n = len(ex.shape(self))
    axes = list(range(n)) if dim in (None, [], ()) else [int(a) % n for a in
                                                          (dim if isinstance(dim, (list, tuple)) else [dim])]
    x = _cast_to_result(ex, node, self)
    if op_type == "ReduceSum" or ex.opset >= 18:
        ex.add(op_type, [x, ex.constant(axes, np.int64, op_type)], ex.out(node), keepdims=int(keepdim))
    else:
        ex.add(op_type, [x], ex.out(node), axes=axes, keepdims=int(keepdim))
    d = ex.dims_of(self)
    ex.dims[node] = tuple(None if i in axes else x for i, x in enumerate(d) if keepdim or i not in axes)


@register_symbolic("mean")
def mean(ex, node: Node, self: Node, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> None:
    _reduce(ex, node, "ReduceMean", self, dim, keepdim, dtype)


@register_symbolic("sum")
def sum_(ex, node: Node, self: Node, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> None:
    _reduce(ex, node, "ReduceSum", self, dim, keepdim, dtype)
