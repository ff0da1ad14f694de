"""Derivative formulas, one per op: course_lib's ``derivatives.yaml``.

In PyTorch: ``tools/autograd/derivatives.yaml``, e.g.::

    - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
      self: mul_tensor_backward(grad, other, self.scalar_type())
      other: mul_tensor_backward(grad, self, other.scalar_type())

Here each entry names the op, the node class (``MulBackward0``), what to save
(and for which input's gradient it is needed), and the formula.  A formula gets
``ctx`` (the node: ``ctx.self``, ``ctx.other``, ``ctx.result``, ``ctx.dim``, ...
are the saved values; ``ctx.needs_input_grad`` says which gradients are wanted)
and the incoming gradient, and returns one gradient per tensor input.

Formulas are written with course_lib ops, so when ``create_graph=True`` the
backward pass is itself recorded and can be differentiated again.
Broadcasting is undone for you: a gradient of a larger shape is summed back to
its input's shape after the formula runs.
"""
from __future__ import annotations

import math

from .._ops.dispatcher import dispatch, grad_state
from .._ops.registry import OPS
from .variable_type import Derivative, autograd_kernel, sum_to_size

ALL = None  # "save this for every input's gradient"


def derivative(op_name: str, node_name, save: dict | None = None, scalar_overload=()):
    """Declare the derivative of ``op_name``.

    ``node_name`` is the name of the node class, or a function of the op's arguments
    returning one (PyTorch numbers overloads: ``SumBackward0`` for ``sum()``,
    ``SumBackward1`` for ``sum(dim)``).

    ``save`` maps what to save to the inputs whose gradient needs it (``ALL``: always),
    with ``derivatives.yaml``'s names: an argument (``self``), an output (``result``,
    ``result1``, or its name in the schema), ``self_geometry`` (shape, stride and offset
    without the values) or ``tensors_args_sizes`` (the shapes of a tensor list); see
    ``variable_type.Derivative``.  Non-tensor arguments are always kept.  The formula returns one
    gradient per tensor argument.  The node's ``next_functions`` has one edge per tensor
    argument except indices, masks and conditions (never differentiable) and the
    arguments named in ``scalar_overload`` when they are given as Python numbers (torch
    calls a ``Scalar`` overload there: ``x ** 2`` has one edge, ``x * 2`` two).
    """
    op = OPS[op_name]

    def deco(formula):
        s = {}
        for k, users in (save or {}).items():
            s[k] = users
        # non-tensor arguments are cheap: always keep them
        for a in op.args:
            if not a.is_tensor and not a.is_tensor_list and a.name not in s:
                s[a.name] = ALL
        if callable(node_name):
            specs = {}

            def kernel(op_, args, _specs=specs):
                name = node_name(*args)
                d = _specs.get(name)
                if d is None:
                    d = _specs[name] = Derivative(op, name, s, formula, scalar_overload=scalar_overload)
                op.autograd_spec = d
                return autograd_kernel(op_, args)
            op.autograd_spec = Derivative(op, node_name(*_example_args(op)), s, formula,
                                         scalar_overload=scalar_overload)
            op.autograd = kernel
        else:
            op.autograd_spec = Derivative(op, node_name, s, formula, scalar_overload=scalar_overload)
            op.autograd = autograd_kernel
        return formula
    return deco


def _example_args(op):
    return [None] * len(op.args)


def _shape(ctx, name):
    return ctx._input_meta[_input_index(ctx, name)][0]


def _input_index(ctx, name):
    op = ctx._deriv.op
    k = 0
    for i in op.tensor_pos:
        if op.args[i].name == name:
            return k
        k += 1
    raise KeyError(name)


def _need(ctx, name) -> bool:
    return ctx.needs_input_grad[_input_index(ctx, name)]


# ---------------------------------------------------------------------------
# arithmetic
# ---------------------------------------------------------------------------
@derivative("add", "AddBackward0")
def _add(ctx, g):
    a = ctx.alpha
    return g, (g if a == 1 else g * a)


@derivative("sub", "SubBackward0")
def _sub(ctx, g):
    a = ctx.alpha
    return g, (-g if a == 1 else g * -a)


@derivative("rsub", lambda self, other, alpha=1: "RsubBackward1" if not hasattr(other, "_shape") else "RsubBackward0",
            scalar_overload=("other",))
def _rsub(ctx, g):
    a = ctx.alpha
    return (-g if a == 1 else g * -a), g


@derivative("mul", "MulBackward0", save={"self": ("other",), "other": ("self",)})
def _mul(ctx, g):
    n = ctx.needs_input_grad
    return (g * ctx.other if n[0] else None), (g * ctx.self if n[1] else None)


@derivative("div", lambda self, other, rounding_mode=None: "DivBackward0" if rounding_mode is None else "DivBackward3",
            save={"self": ("other",), "other": ALL})
def _div(ctx, g):
    if ctx.rounding_mode is not None:
        return g * 0, (g * 0 if ctx.needs_input_grad[1] else None)
    n = ctx.needs_input_grad
    other = ctx.other
    return (g / other if n[0] else None), (-g * ctx.self / (other * other) if n[1] else None)


@derivative("pow", lambda self, exponent: "PowBackward1" if hasattr(exponent, "_shape") else "PowBackward0",
            save={"self": ALL, "exponent": ALL, "result": ("exponent",)}, scalar_overload=("exponent",))
def _pow(ctx, g):
    n = ctx.needs_input_grad
    e = ctx.exponent
    x = ctx.self
    gs = ge = None
    if n[0]:
        if isinstance(e, (int, float)):
            gs = g * 0 if e == 0 else g * e * (x ** (e - 1) if e != 2 else x)
        else:
            gs = g * e * x ** (e - 1)
    if len(n) > 1 and n[1]:
        r = ctx.result
        ge = g * r * x.log()
        ge = ge.masked_fill((x == 0) & (e >= 0), 0.0)
    return gs, ge


@derivative("neg", "NegBackward0")
def _neg(ctx, g):
    return -g


@derivative("abs", "AbsBackward0", save={"self": ALL})
def _abs(ctx, g):
    return g * ctx.self.sign()


@derivative("reciprocal", "ReciprocalBackward0", save={"result": ALL})
def _reciprocal(ctx, g):
    r = ctx.result
    return -g * r * r


@derivative("square", "PowBackward0", save={"self": ALL})
def _square(ctx, g):
    return g * 2 * ctx.self


@derivative("maximum", "MaximumBackward0", save={"self": ALL, "other": ALL})
def _maximum(ctx, g):
    a, b = ctx.self, ctx.other
    m = (a > b).to(g.dtype) + (a == b).to(g.dtype) * 0.5
    return g * m, g * (1 - m)


@derivative("minimum", "MinimumBackward0", save={"self": ALL, "other": ALL})
def _minimum(ctx, g):
    a, b = ctx.self, ctx.other
    m = (a < b).to(g.dtype) + (a == b).to(g.dtype) * 0.5
    return g * m, g * (1 - m)


@derivative("clamp", "ClampBackward1", save={"self": ALL})
def _clamp(ctx, g):
    x = ctx.self
    lo, hi = ctx.min, ctx.max
    mask = None
    if lo is not None:
        mask = x >= lo
    if hi is not None:
        m2 = x <= hi
        mask = m2 if mask is None else mask & m2
    return g * mask


@derivative("where", "WhereBackward0", save={"condition": ALL})
def _where(ctx, g):
    c = ctx.condition
    n = ctx.needs_input_grad
    zero = g * 0
    import course_lib as _cl
    return None, (_cl.where(c, g, zero) if n[1] else None), (_cl.where(c, zero, g) if n[2] else None)


@derivative("lerp", lambda self, end, weight: "LerpBackward1" if hasattr(weight, "_shape") else "LerpBackward0",
            save={"self": ("weight",), "end": ("weight",), "weight": ALL}, scalar_overload=("weight",))
def _lerp(ctx, g):
    w = ctx.weight
    n = ctx.needs_input_grad
    gw = g * (ctx.end - ctx.self) if len(n) > 2 and n[2] else None
    return g * (1 - w), g * w, gw


@derivative("atan2", "Atan2Backward0", save={"self": ALL, "other": ALL})
def _atan2(ctx, g):
    a, b = ctx.self, ctx.other
    d = a * a + b * b
    return g * b / d, -g * a / d


# ---------------------------------------------------------------------------
# unary math
# ---------------------------------------------------------------------------
def _unary(name, node, save_result=False):
    def deco(fn):
        return derivative(name, node, save={"result": ALL} if save_result else {"self": ALL})(fn)
    return deco


@_unary("exp", "ExpBackward0", save_result=True)
def _exp(ctx, g):
    return g * ctx.result


@_unary("exp2", "Exp2Backward0", save_result=True)
def _exp2(ctx, g):
    return g * ctx.result * math.log(2.0)


@_unary("expm1", "Expm1Backward0", save_result=True)
def _expm1(ctx, g):
    return g * (ctx.result + 1)


@_unary("log", "LogBackward0")
def _log(ctx, g):
    return g / ctx.self


@_unary("log2", "Log2Backward0")
def _log2(ctx, g):
    return g / (ctx.self * math.log(2.0))


@_unary("log10", "Log10Backward0")
def _log10(ctx, g):
    return g / (ctx.self * math.log(10.0))


@_unary("log1p", "Log1PBackward0")
def _log1p(ctx, g):
    return g / (ctx.self + 1)


@_unary("sqrt", "SqrtBackward0", save_result=True)
def _sqrt(ctx, g):
    return g / (2 * ctx.result)


@_unary("rsqrt", "RsqrtBackward0", save_result=True)
def _rsqrt(ctx, g):
    r = ctx.result
    return -0.5 * g * r * r * r


@_unary("sin", "SinBackward0")
def _sin(ctx, g):
    return g * ctx.self.cos()


@_unary("cos", "CosBackward0")
def _cos(ctx, g):
    return -g * ctx.self.sin()


@_unary("tan", "TanBackward0", save_result=True)
def _tan(ctx, g):
    r = ctx.result
    return g * (1 + r * r)


@_unary("asin", "AsinBackward0")
def _asin(ctx, g):
    x = ctx.self
    return g * (1 - x * x).rsqrt()


@_unary("acos", "AcosBackward0")
def _acos(ctx, g):
    x = ctx.self
    return -g * (1 - x * x).rsqrt()


@_unary("atan", "AtanBackward0")
def _atan(ctx, g):
    x = ctx.self
    return g / (1 + x * x)


@_unary("sinh", "SinhBackward0")
def _sinh(ctx, g):
    return g * ctx.self.cosh()


@_unary("cosh", "CoshBackward0")
def _cosh(ctx, g):
    return g * ctx.self.sinh()


@_unary("tanh", "TanhBackward0", save_result=True)
def _tanh(ctx, g):
    r = ctx.result
    return g * (1 - r * r)


@_unary("sigmoid", "SigmoidBackward0", save_result=True)
def _sigmoid(ctx, g):
    r = ctx.result
    return g * r * (1 - r)


@_unary("relu", "ReluBackward0", save_result=True)
def _relu(ctx, g):
    if grad_state.enabled:
        return g * (ctx.result > 0)   # create_graph: ops that can be differentiated again
    return dispatch(OPS["threshold_backward"], (g, ctx.result, 0))


@_unary("erf", "ErfBackward0")
def _erf(ctx, g):
    x = ctx.self
    return g * (2.0 / math.sqrt(math.pi)) * (-(x * x)).exp()


def _zero_grad(name, node):
    @derivative(name, node)
    def _z(ctx, g):
        return g * 0
    return _z


for _n, _node in (("floor", "FloorBackward0"), ("ceil", "CeilBackward0"), ("round", "RoundBackward0"),
                  ("trunc", "TruncBackward0"), ("sign", "SignBackward0")):
    _zero_grad(_n, _node)


@derivative("frac", "FracBackward0")
def _frac(ctx, g):
    return g


# ---------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------
def _reduced_dims(shape, dim):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(len(shape)))
    if isinstance(dim, int):
        dim = (dim,)
    n = len(shape) or 1
    return tuple(sorted(d % n for d in dim)) if shape else ()


def _unreduce(g, shape, dim, keepdim):
    """Put back the reduced dims of ``g`` (as size 1) so it broadcasts against the input."""
    if keepdim or not shape:
        return g
    for d in _reduced_dims(shape, dim):
        g = g.unsqueeze(d)
    return g


@derivative("sum", lambda self, dim=None, keepdim=False, dtype=None: "SumBackward0" if dim is None else "SumBackward1")
def _sum(ctx, g):
    shape = _shape(ctx, "self")
    return _unreduce(g, shape, ctx.dim, ctx.keepdim).expand(shape)


@derivative("mean",
            lambda self, dim=None, keepdim=False, dtype=None: "MeanBackward0" if dim is None else "MeanBackward1")
def _mean(ctx, g):
    shape = _shape(ctx, "self")
    n = 1
    for d in _reduced_dims(shape, ctx.dim):
        n *= shape[d]
    return _unreduce(g, shape, ctx.dim, ctx.keepdim).expand(shape) / n


@derivative("prod",
            lambda self, dim=None, keepdim=False, dtype=None: "ProdBackward0" if dim is None else "ProdBackward1",
            save={"self": ALL, "result": ALL})
def _prod(ctx, g):
    x = ctx.self
    shape = x._shape
    r = _unreduce(ctx.result, shape, ctx.dim, ctx.keepdim)
    gg = _unreduce(g, shape, ctx.dim, ctx.keepdim)
    # product of the others = result / x where x != 0 (zeros are rare in practice; handled exactly below)
    if not bool((x == 0).any()):
        return gg * r / x
    import course_lib as _cl
    dims = _reduced_dims(shape, ctx.dim)
    flat_d = dims[0] if ctx.dim is not None else None
    if flat_d is None:
        xs = x.reshape(-1)
        others = _cl.stack([_cl.cat([xs[:i], xs[i + 1:]]).prod() for i in range(xs.numel())]).reshape(shape)
        return g * others
    n = shape[flat_d]
    parts = []
    for i in range(n):
        rest = _cl.cat([x.narrow(flat_d, 0, i), x.narrow(flat_d, i + 1, n - i - 1)], flat_d)
        parts.append(rest.prod(flat_d, keepdim=True))
    return gg * _cl.cat(parts, flat_d)


@derivative("var", "VarBackward0", save={"self": ALL})
def _var(ctx, g):
    x = ctx.self
    shape = x._shape
    dims = _reduced_dims(shape, ctx.dim)
    n = 1
    for d in dims:
        n *= shape[d]
    mean = x.mean(dims, keepdim=True) if shape else x
    return _unreduce(g, shape, ctx.dim, ctx.keepdim) * 2 * (x - mean) / (n - ctx.correction)


@derivative("std", "StdBackward0", save={"self": ALL, "result": ALL})
def _std(ctx, g):
    x = ctx.self
    shape = x._shape
    dims = _reduced_dims(shape, ctx.dim)
    n = 1
    for d in dims:
        n *= shape[d]
    mean = x.mean(dims, keepdim=True) if shape else x
    s = _unreduce(ctx.result, shape, ctx.dim, ctx.keepdim)
    return _unreduce(g, shape, ctx.dim, ctx.keepdim) * (x - mean) / (s * (n - ctx.correction))


def _evenly(ctx, g):
    x = ctx.self
    shape = x._shape
    r = _unreduce(ctx.result, shape, ctx.dim, ctx.keepdim)
    mask = (x == r).to(g.dtype)
    return _unreduce(g, shape, ctx.dim, ctx.keepdim) * mask / mask.sum(_reduced_dims(shape, ctx.dim), keepdim=True)


derivative("amax", "AmaxBackward0", save={"self": ALL, "result": ALL})(_evenly)
derivative("amin", "AminBackward0", save={"self": ALL, "result": ALL})(_evenly)


def _maxmin_name(prefix):
    return lambda self, dim=None, keepdim=False: f"{prefix}Backward1" if dim is None else f"{prefix}Backward0"


def _maxmin(ctx, g, g_idx=None):
    if ctx.dim is None:
        return _evenly(ctx, g)
    x = ctx.self
    import course_lib as _cl
    idx = ctx.result1  # max(dim) returns (values, indices)
    d = ctx.dim % max(len(x._shape), 1)
    gg = g if ctx.keepdim or not x._shape else g.unsqueeze(d)
    ii = idx if ctx.keepdim or not x._shape else idx.unsqueeze(d)
    if not x._shape:
        return gg
    return _cl.zeros(x._shape, dtype=g.dtype).scatter_add(d, ii, gg)


derivative("max", _maxmin_name("Max"), save={"self": ALL, "result": ALL, "result1": ALL})(_maxmin)
derivative("min", _maxmin_name("Min"), save={"self": ALL, "result": ALL, "result1": ALL})(_maxmin)


@derivative("logsumexp", "LogsumexpBackward0", save={"self": ALL, "result": ALL})
def _logsumexp(ctx, g):
    x = ctx.self
    shape = x._shape
    r = _unreduce(ctx.result, shape, ctx.dim, ctx.keepdim)
    return _unreduce(g, shape, ctx.dim, ctx.keepdim) * (x - r).exp()


@derivative("cumsum", "CumsumBackward0")
def _cumsum(ctx, g):
    if not g._shape:
        return g
    d = ctx.dim
    return g.flip((d,)).cumsum(d).flip((d,))


@derivative("softmax", "SoftmaxBackward0", save={"result": ALL})
def _softmax(ctx, g):
    r = ctx.result
    if not r._shape:
        return g * 0
    return r * (g - (g * r).sum(ctx.dim, keepdim=True))


@derivative("log_softmax", "LogSoftmaxBackward0", save={"result": ALL})
def _log_softmax(ctx, g):
    r = ctx.result
    if not r._shape:
        return g * 0
    if grad_state.enabled:
        return g - r.exp() * g.sum(ctx.dim, keepdim=True)   # create_graph: differentiable ops
    return dispatch(OPS["_log_softmax_backward_data"], (g, r, ctx.dim, r.dtype))


# ---------------------------------------------------------------------------
# matrix products
# ---------------------------------------------------------------------------
def _column_major(meta) -> bool:
    """Whether an input matrix was stored column by column (a transposed view, such as
    ``Linear``'s ``weight.t()``): PyTorch's test in ``mm_mat1_backward``/``mm_mat2_backward``."""
    shape, stride = meta[0], meta[2]
    return stride[0] == 1 and stride[1] == shape[0]


def _mm_mat1_grad(ctx, g, mat2, k: int):
    """grad @ mat2^T, computed in mat1's layout: for a column-major mat1, (mat2 @ grad^T)^T."""
    if _column_major(ctx._input_meta[k]):
        return mat2.mm(g.t()).t()
    return g.mm(mat2.t())


def _mm_mat2_grad(ctx, g, mat1, k: int):
    """mat1^T @ grad, computed in mat2's layout.  For ``Linear``'s ``weight.t()`` this is
    (grad^T @ mat1)^T: its transpose, the weight's own gradient, comes out contiguous and becomes
    ``weight.grad`` without a copy (as in PyTorch's ``mm_mat2_backward``)."""
    if _column_major(ctx._input_meta[k]):
        return g.t().mm(mat1).t()
    return mat1.t().mm(g)


@derivative("mm", "MmBackward0", save={"self": ("mat2",), "mat2": ("self",)})
def _mm(ctx, g):
    n = ctx.needs_input_grad
    g1 = _mm_mat1_grad(ctx, g, ctx.mat2, 0) if n[0] else None
    return g1, (_mm_mat2_grad(ctx, g, ctx.self, 1) if n[1] else None)


@derivative("bmm", "BmmBackward0", save={"self": ("mat2",), "mat2": ("self",)})
def _bmm(ctx, g):
    n = ctx.needs_input_grad
    return (g.bmm(ctx.mat2.transpose(1, 2)) if n[0] else None), (ctx.self.transpose(1, 2).bmm(g) if n[1] else None)


@derivative("mv", "MvBackward0", save={"self": ("vec",), "vec": ("self",)})
def _mv(ctx, g):
    n = ctx.needs_input_grad
    return (g.unsqueeze(1).mm(ctx.vec.unsqueeze(0)) if n[0] else None), (ctx.self.t().mv(g) if n[1] else None)


@derivative("dot", "DotBackward0", save={"self": ("tensor",), "tensor": ("self",)})
def _dot(ctx, g):
    n = ctx.needs_input_grad
    return (g * ctx.tensor if n[0] else None), (g * ctx.self if n[1] else None)


@derivative("addmm", "AddmmBackward0", save={"mat1": ("mat2",), "mat2": ("mat1",)})
def _addmm(ctx, g):
    n = ctx.needs_input_grad
    a, b = ctx.alpha, ctx.beta
    gs = (g if b == 1 else g * b) if n[0] else None
    g1 = _mm_mat1_grad(ctx, g, ctx.mat2, 1) if n[1] else None
    g2 = _mm_mat2_grad(ctx, g, ctx.mat1, 2) if n[2] else None
    if a != 1:
        g1 = g1 * a if g1 is not None else None
        g2 = g2 * a if g2 is not None else None
    return gs, g1, g2


# ---------------------------------------------------------------------------
# views: reshape-like ops have direct inverses; ops that pick elements scatter back
# ---------------------------------------------------------------------------
@derivative("view", "ViewBackward0")
def _view(ctx, g):
    return g.reshape(_shape(ctx, "self"))


@derivative("_unsafe_view", "UnsafeViewBackward0")
def _unsafe_view_d(ctx, g):
    return g.reshape(_shape(ctx, "self"))


@derivative("transpose", "TransposeBackward0")
def _transpose(ctx, g):
    return g.transpose(ctx.dim0, ctx.dim1)


@derivative("t", "TBackward0")
def _t(ctx, g):
    return g.t()


@derivative("permute", "PermuteBackward0")
def _permute(ctx, g):
    dims = [d % len(g._shape) for d in ctx.dims] if g._shape else []
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return g.permute(tuple(inv))


@derivative("unsqueeze", "UnsqueezeBackward0")
def _unsqueeze(ctx, g):
    return g.squeeze(ctx.dim)


@derivative("squeeze", lambda self, dim=None: "SqueezeBackward0" if dim is None else
            ("SqueezeBackward1" if isinstance(dim, int) else "SqueezeBackward2"))
def _squeeze(ctx, g):
    return g.reshape(_shape(ctx, "self"))


@derivative("expand", "ExpandBackward0")
def _expand(ctx, g):
    return sum_to_size(g, _shape(ctx, "self"))


@derivative("alias", "AliasBackward0")
def _alias(ctx, g):
    return g


def _scatter_back(view_name):
    """Backward of a view that picks elements: put the gradient where the view's elements sit
    in a zero tensor of the input's shape (the view's geometry is computed on a meta tensor)."""
    def formula(ctx, g):
        import course_lib as _cl
        shape = _shape(ctx, "self")
        probe = _cl.empty(shape, device="meta")
        op = OPS[view_name]
        args = [probe] + [getattr(ctx, a.name) for a in op.args[1:]]
        v = op.meta(*args)
        return _cl._ops.dispatcher.dispatch(OPS["_view_scatter"], (g, shape, v._shape, v._stride, v._offset))
    return formula


derivative("select", "SelectBackward0")(_scatter_back("select"))
derivative("slice", "SliceBackward0")(_scatter_back("slice"))
derivative("narrow", "SliceBackward0")(_scatter_back("narrow"))  # narrow is slice in PyTorch
derivative("diagonal", "DiagonalBackward0")(_scatter_back("diagonal"))
derivative("unfold", "UnfoldBackward0")(_scatter_back("unfold"))


# The input's geometry, not the input: as PyTorch's AsStridedBackward0 (TensorGeometry(self)), so an
# in-place change of the input later (CopySlices) does not invalidate the node.
@derivative("as_strided", "AsStridedBackward0", save={"self_geometry": ALL})
def _as_strided(ctx, g):
    import course_lib as _cl
    shape, stride, offset, nstore = ctx.self_geometry
    off = offset if ctx.storage_offset is None else ctx.storage_offset
    from .._ops.common import contiguous_strides
    if tuple(stride) == contiguous_strides(tuple(shape)):
        return _cl._ops.dispatcher.dispatch(OPS["_view_scatter"], (g, shape, tuple(ctx.size), tuple(ctx.stride),
                                                                    off - offset))
    from .._ops.views import _as_strided_backward_general
    return _as_strided_backward_general(g, _Geometry(shape, stride, offset, nstore), ctx.size, ctx.stride,
                                        ctx.storage_offset)


class _Geometry:
    """Shape, stride and offset of a tensor, without its values (what as_strided's backward needs)."""

    def __init__(self, shape, stride, offset, nstore):
        self._shape, self._stride, self._offset = shape, stride, offset
        self._storage = type("S", (), {"_size": nstore})()


@derivative("_view_scatter", "ViewScatterBackward0")
def _view_scatter_d(ctx, g):
    import course_lib as _cl
    return _cl._ops.dispatcher.dispatch(OPS["_view_gather"], (g, ctx.size, ctx.stride, ctx.offset))


@derivative("_view_gather", "ViewGatherBackward0")
def _view_gather_d(ctx, g):
    import course_lib as _cl
    return _cl._ops.dispatcher.dispatch(OPS["_view_scatter"], (g, _shape(ctx, "self"), ctx.size, ctx.stride,
                                                                ctx.offset))


# ---------------------------------------------------------------------------
# copies, joins, indexing
# ---------------------------------------------------------------------------
@derivative("clone", "CloneBackward0")
def _clone(ctx, g):
    return g


@derivative("_to_copy", "ToCopyBackward0")
def _to_copy(ctx, g):
    return g  # cast back to the input's dtype by the engine


# the formula needs every input's shape, also of inputs that don't require grad
@derivative("cat", "CatBackward0", save={"tensors_args_sizes": ALL})
def _cat(ctx, g):
    metas = ctx._input_meta
    nd = len(g._shape)
    d = ctx.dim % nd
    out, start = [], 0
    for m, t in zip(metas, ctx.tensors_args_sizes):
        size = t[d] if len(t) == nd else 0
        out.append(g.narrow(d, start, size) if m is not None else None)
        start += size
    return tuple(out)


@derivative("stack", "StackBackward0")
def _stack(ctx, g):
    d = ctx.dim % len(g._shape)
    return tuple(g.select(d, i) if m is not None else None for i, m in enumerate(ctx._input_meta))


@derivative("index", "IndexBackward0", save={"indices": ALL})
def _index(ctx, g):
    import course_lib as _cl
    shape = _shape(ctx, "self")
    return _cl._ops.dispatcher.dispatch(OPS["index_put"], (_cl.zeros(shape, dtype=g.dtype), ctx.indices, g, True))


@derivative("index_put", "IndexPutBackward0", save={"indices": ALL})
def _index_put(ctx, g):
    # inputs: self, indices (a list: never differentiable), values
    import course_lib as _cl
    n = ctx.needs_input_grad
    gs = gv = None
    if n[0]:
        gs = g if ctx.accumulate else _cl._ops.dispatcher.dispatch(
            OPS["index_put"], (g, ctx.indices, _cl.zeros((), dtype=g.dtype), False))
    if n[-1]:
        gv = _cl._ops.dispatcher.dispatch(OPS["index"], (g, ctx.indices))
    return gs, None, gv


@derivative("gather", "GatherBackward0", save={"index": ALL})
def _gather(ctx, g):
    import course_lib as _cl
    return _cl.zeros(_shape(ctx, "self"), dtype=g.dtype).scatter_add(ctx.dim, ctx.index, g)


@derivative("scatter_add", "ScatterAddBackward0", save={"index": ("src",)})
def _scatter_add(ctx, g):
    n = ctx.needs_input_grad
    gsrc = g.gather(ctx.dim, ctx.index) if n[2] else None
    return (g if n[0] else None), None, gsrc


@derivative("index_select", "IndexSelectBackward0", save={"index": ALL})
def _index_select(ctx, g):
    import course_lib as _cl
    shape = _shape(ctx, "self")
    d = ctx.dim % len(shape)
    idx = [None] * d + [ctx.index]
    return _cl._ops.dispatcher.dispatch(OPS["index_put"], (_cl.zeros(shape, dtype=g.dtype), idx, g, True))


@derivative("masked_fill", "MaskedFillBackward0", save={"mask": ALL})
def _masked_fill(ctx, g):
    return g.masked_fill(ctx.mask, 0), None


@derivative("tril", "TrilBackward0")
def _tril(ctx, g):
    return g.tril(ctx.diagonal)


@derivative("triu", "TriuBackward0")
def _triu(ctx, g):
    return g.triu(ctx.diagonal)


@derivative("flip", "FlipBackward0")
def _flip(ctx, g):
    return g.flip(ctx.dims)


# in-place ops with their own formula (not "compute out of place, then write")
@derivative("copy_", "CopyBackwards")
def _copy(ctx, g):
    return g * 0, g


@derivative("fill_", "FillBackward1")
def _fill(ctx, g):
    return g * 0


@derivative("zero_", "ZeroBackward0")
def _zero(ctx, g):
    return g * 0


# in-place random fills: the result does not depend on the old values (PyTorch: zeros_like(grad))
def _zeros_like_grad(ctx, g):
    return g.new_zeros(g.shape) if g._storage.data is not None else g * 0


for _name, _node in (("uniform_", "UniformBackward0"), ("normal_", "NormalBackward0"),
                     ("exponential_", "ExponentialBackward0"), ("geometric_", "GeometricBackward0"),
                     ("log_normal_", "LogNormalBackward0"), ("cauchy_", "CauchyBackward0")):
    derivative(_name, _node)(_zeros_like_grad)

derivative("random_", lambda self, from_=None, to=None, generator=None:
           "RandomBackward2" if to is None and from_ is None else
           "RandomBackward1" if from_ is None else "RandomBackward0")(_zeros_like_grad)


@derivative("bernoulli_", lambda self, p=0.5, generator=None:
            "BernoulliBackward2" if hasattr(p, "_shape") else "BernoulliBackward1", scalar_overload=("p",))
def _bernoulli_(ctx, g):
    z = _zeros_like_grad(ctx, g)
    return (z, z) if len(ctx.needs_input_grad) > 1 else z


@derivative("index_put_", "IndexPutBackward0", save={"indices": ALL})
def _index_put_(ctx, g):
    return _index_put(ctx, g)


# ---------------------------------------------------------------------------
# ops returning several views at once: one node with one output per piece, as in PyTorch
# (SplitBackward0, UnbindBackward0), instead of one node per piece
# ---------------------------------------------------------------------------
def _multi_view(op_name: str, node_name: str, formula) -> None:
    from .._ops.dispatcher import backend, grad_state
    from .variable_type import _record, _register_view
    op = OPS[op_name]
    save = {a.name: ALL for a in op.args if not a.is_tensor}
    d = Derivative(op, node_name, save, formula)

    def kernel(op_, args):
        prev = grad_state.enabled
        grad_state.enabled = False  # the composite's own view calls must not record
        try:
            outs = backend(op_, args)
        finally:
            grad_state.enabled = prev
        _record(d, args, tuple(outs))
        _register_view(tuple(outs))
        return outs
    op.autograd_spec = d
    op.autograd = kernel


def _split_formula(ctx, *grads):
    import course_lib as _cl
    shape = _shape(ctx, "self")
    d = ctx.dim % len(shape)
    return _cl.cat(list(grads), d)


def _unbind_formula(ctx, *grads):
    import course_lib as _cl
    shape = _shape(ctx, "self")
    return _cl.stack(list(grads), ctx.dim % len(shape))


for _name, _node, _f in (("split", "SplitBackward0", _split_formula), ("chunk", "SplitBackward0", _split_formula),
                         ("unbind", "UnbindBackward0", _unbind_formula)):
    if _name in OPS:
        _multi_view(_name, _node, _f)


# ---------------------------------------------------------------------------
# scatter, scatter_reduce, index_add, index_fill, masked_select (derivatives.yaml's formulas and
# scatter_reduce_backward of FunctionsManual.cpp)
# ---------------------------------------------------------------------------
def _scatter_value(g, dim, index, value):
    """``g.scatter(dim, index, value)`` with a number ``value``, through the dispatcher."""
    return dispatch(OPS["scatter"], (g, dim, index, None, value, None))


@derivative("scatter", lambda self, dim, index, src=None, value=None, reduce=None:
            "NotImplemented" if reduce is not None else
            "ScatterBackward0" if src is not None and hasattr(src, "_shape") else "ScatterBackward1",
            save={"index": ALL})
def _scatter(ctx, g):
    if ctx.reduce is not None:  # PyTorch has no formula for scatter's reduce= overloads either
        raise RuntimeError("derivative for aten::scatter is not implemented")
    n = ctx.needs_input_grad
    gself = _scatter_value(g, ctx.dim, ctx.index, 0) if n[0] else None
    gsrc = g.gather(ctx.dim, ctx.index) if len(n) > 2 and n[2] else None
    return gself, None, gsrc


@derivative("scatter_reduce", "ScatterReduceBackward0", save={"self": ALL, "index": ALL, "src": ALL, "result": ALL})
def _scatter_reduce(ctx, g):
    import course_lib as _cl
    dim, index, reduce, include_self = ctx.dim, ctx.index, ctx.reduce, ctx.include_self
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    self, src, result = ctx.self, ctx.src, ctx.result
    if reduce == "sum":
        gself, gsrc = g, g.gather(dim, index)
    elif reduce == "mean":
        n = (_cl.ones_like(g) if include_self else _cl.zeros_like(g)).scatter_add(dim, index, _cl.ones_like(src))
        n = n.masked_fill(n == 0, 1)
        gself = g / n
        gsrc = g.gather(dim, index) / n.gather(dim, index)
    elif reduce in ("amax", "amin"):
        value = result.gather(dim, index)
        self_is_result = (self == result).to(g.dtype)
        src_is_value = (src == value).to(g.dtype)
        g_distributed = g / self_is_result.scatter_add(dim, index, src_is_value)
        gself = self_is_result * g_distributed
        gsrc = src_is_value * g_distributed.gather(dim, index)
    else:  # prod: the product of the others, with a single zero handled as PyTorch does
        masked_self = self.masked_fill(self == 0, 1)
        masked_self_result = masked_self.scatter_reduce(dim, index, src, reduce, include_self=include_self)
        gself = g * masked_self_result / masked_self
        src_zero = src == 0
        src_num_zeros = _cl.zeros_like(self).scatter_add(dim, index, src_zero.to(self.dtype)).gather(dim, index)
        src_single_zero = src_zero & (src_num_zeros == 1)
        masked_src = src.masked_fill(src_single_zero, 1)
        masked_src_result = self.scatter_reduce(dim, index, masked_src, reduce, include_self=include_self)
        gsrc = _cl.where(src_single_zero, (g * masked_src_result).gather(dim, index),
                         (g * result).gather(dim, index) / src.masked_fill(src_zero, 1))
    if not include_self:
        gself = _scatter_value(gself, dim, index, 0)
    return gself, None, gsrc


@derivative("index_add", "IndexAddBackward0", save={"index": ("source",)})
def _index_add(ctx, g):
    n = ctx.needs_input_grad
    gsource = None
    if n[2]:
        gsource = g.index_select(ctx.dim, ctx.index).reshape(_shape(ctx, "source"))
        if ctx.alpha != 1:
            gsource = gsource * ctx.alpha
    return (g if n[0] else None), None, gsource


@derivative("index_fill", lambda self, dim, index, value: "IndexFillBackward1" if hasattr(value, "_shape")
            else "IndexFillBackward0", save={"index": ALL}, scalar_overload=("value",))
def _index_fill(ctx, g):
    n = ctx.needs_input_grad
    gself = g.index_fill(ctx.dim, ctx.index, 0) if n[0] else None
    gvalue = g.index_select(ctx.dim, ctx.index).sum() if len(n) > 2 and n[2] else None
    return gself, None, gvalue


@derivative("masked_select", "MaskedSelectBackward0", save={"mask": ALL, "self_geometry": ALL})
def _masked_select(ctx, g):
    import course_lib as _cl
    shape = _cl.broadcast_shapes(ctx.self_geometry[0], ctx.mask._shape)
    mask = ctx.mask if ctx.mask._shape == shape else ctx.mask.expand(shape)
    return dispatch(OPS["index_put"], (_cl.zeros(shape, dtype=g.dtype), [mask], g, False)), None


# ---------------------------------------------------------------------------
# repeat, roll, diag_embed, diagonal_copy, einsum (the kernels of _ops/combining.py)
# ---------------------------------------------------------------------------
@derivative("repeat", "RepeatBackward0")
def _repeat(ctx, g):
    shape = _shape(ctx, "self")
    repeats = tuple(ctx.repeats)
    full = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    pairs = g.reshape(tuple(x for r, s in zip(repeats, full) for x in (r, s)))
    summed = pairs.sum(tuple(range(0, 2 * len(repeats), 2))) if repeats else pairs
    return summed.reshape(shape)


@derivative("roll", "RollBackward0")
def _roll(ctx, g):
    shifts = (ctx.shifts,) if isinstance(ctx.shifts, int) else tuple(ctx.shifts)
    return g.roll(tuple(-s for s in shifts), ctx.dims)


@derivative("diag_embed", "DiagEmbedBackward0")
def _diag_embed(ctx, g):
    return g.diagonal(ctx.offset, ctx.dim1, ctx.dim2)


@derivative("diagonal_copy", "DiagonalBackward0_copy")
def _diagonal_copy(ctx, g):
    from .._ops.combining import diagonal_geometry
    shape = _shape(ctx, "self")
    size, stride, offset = diagonal_geometry(shape, ctx.offset, ctx.dim1, ctx.dim2)
    return dispatch(OPS["_view_scatter"], (g, shape, size, stride, offset))


@derivative("einsum", "EinsumBackward0", save={"tensors": ALL})
def _einsum(ctx, g):
    from .._ops.combining import einsum_backward
    tensors = ctx.tensors
    return tuple(einsum_backward(ctx.equation, tensors, g, k) if need else None
                 for k, need in enumerate(ctx.needs_input_grad))


# ---------------------------------------------------------------------------
# in-place variants (add_, mul_, exp_, ...): every one goes through the Autograd key, which
# runs the out-of-place twin's formula (or refuses, e.g. on a leaf that requires grad).
# ---------------------------------------------------------------------------
def _wire_inplace() -> None:
    from .variable_type import autograd_kernel as _k
    for op in OPS.values():
        if op.is_inplace and op.autograd is None:
            op.autograd = _k


_wire_inplace()


# ---------------------------------------------------------------------------
# sorting and selection: the gradient goes back to the positions the values came from
# ---------------------------------------------------------------------------
def _scatter_to_indices(ctx, g, g_indices=None):
    """sort/topk: ``zeros(self.shape).scatter(dim, indices, grad)`` (the indices of one slice are distinct)."""
    import course_lib as _cl
    shape = _shape(ctx, "self")
    if not shape:
        return g
    return _cl.zeros(shape, dtype=g.dtype).scatter_add(ctx.dim % len(shape), ctx.result1, g)


def _select_one(ctx, g, g_indices=None):
    """kthvalue/mode/median(dim): one element per slice; PyTorch's value_selecting_reduction_backward."""
    import course_lib as _cl
    shape = _shape(ctx, "self")
    if not shape:
        return g
    d = ctx.dim % len(shape)
    idx = ctx.result1
    if not ctx.keepdim:
        g, idx = g.unsqueeze(d), idx.unsqueeze(d)
    return _cl.zeros(shape, dtype=g.dtype).scatter_add(d, idx, g)


derivative("sort", lambda self, dim=-1, descending=False, stable=None:
           "SortBackward0" if stable is None else "SortBackward1", save={"result1": ALL})(_scatter_to_indices)
derivative("topk", "TopkBackward0", save={"result1": ALL})(_scatter_to_indices)
derivative("kthvalue", "KthvalueBackward0", save={"result1": ALL})(_select_one)
derivative("mode", "ModeBackward0", save={"result1": ALL})(_select_one)


@derivative("median", lambda self, dim=None, keepdim=False: "MedianBackward0" if dim is None else "MedianBackward1",
            save={"self": ALL, "result": ALL, "result1": ALL})
def _median(ctx, g, g_indices=None):
    if ctx.dim is None:
        return _evenly(ctx, g)  # every element equal to the median shares the gradient, as for max()
    return _select_one(ctx, g)


@derivative("cumprod", "CumprodBackward0", save={"self": ALL, "result": ALL})
def _cumprod(ctx, g):
    x = ctx.self
    if not x._shape:
        return g
    d = ctx.dim % len(x._shape)
    if not bool((x == 0).any()):
        # d out_k / d x_i = out_k / x_i for k >= i: a reversed cumulative sum
        return (g * ctx.result).flip((d,)).cumsum(d).flip((d,)) / x
    # with zeros, without dividing: grad_i = prod_{j<i} x_j * sum_{k>=i} g_k prod_{i<j<=k} x_j,
    # the inner products taken as a cumprod over an (n, n) matrix per slice
    import course_lib as _cl
    xs = x.movedim(d, -1)
    gs = g.movedim(d, -1)
    n = xs._shape[-1]
    upper = _cl.ones((n, n), dtype=x.dtype).triu(1)      # k > i
    lower = _cl.ones((n, n), dtype=x.dtype).tril(0)      # k <= i
    rows = xs.unsqueeze(-2) * upper + lower               # row i: 1 up to i, then x_{i+1}, x_{i+2}, ...
    inner = (rows.cumprod(-1) * (1 - lower + _cl.eye(n, dtype=x.dtype)) * gs.unsqueeze(-2)).sum(-1)
    before = _cl.cat([_cl.ones(xs._shape[:-1] + (1,), dtype=x.dtype), xs.narrow(-1, 0, n - 1)], -1).cumprod(-1)
    return (before * inner).movedim(-1, d)


@derivative("nansum", lambda self, dim=None, keepdim=False, dtype=None: "NansumBackward0", save={"self": ALL})
def _nansum(ctx, g):
    x = ctx.self
    shape = x._shape
    return _unreduce(g, shape, ctx.dim, ctx.keepdim).expand(shape) * (x == x).to(g.dtype)


def _aminmax_dims(shape, dim):
    return _reduced_dims(shape, None if dim is None else (dim,))


@derivative("aminmax", "AminmaxBackward0", save={"self": ALL, "result": ALL, "result1": ALL})
def _aminmax(ctx, g_min, g_max):
    x = ctx.self
    shape = x._shape
    dims = _aminmax_dims(shape, ctx.dim)
    out = None
    for g, r in ((g_min, ctx.result), (g_max, ctx.result1)):
        mask = (x == _unreduce(r, shape, ctx.dim, ctx.keepdim)).to(g.dtype)
        part = _unreduce(g, shape, ctx.dim, ctx.keepdim) * mask / mask.sum(dims, keepdim=True)
        out = part if out is None else out + part
    return out


def _spread_parts(ctx):
    """The centred input, the reduced element count and the count minus the correction (var/std_mean)."""
    x = ctx.self
    shape = x._shape
    dims = _reduced_dims(shape, ctx.dim)
    n = 1
    for d in dims:
        n *= shape[d]
    mean = x.mean(dims, keepdim=True) if shape else x
    return x - mean, n, n - ctx.correction


@derivative("var_mean", "VarMeanBackward0", save={"self": ALL})
def _var_mean(ctx, g_var, g_mean):
    centred, n, dof = _spread_parts(ctx)
    shape = centred._shape
    return (_unreduce(g_var, shape, ctx.dim, ctx.keepdim) * 2 * centred / dof
            + _unreduce(g_mean, shape, ctx.dim, ctx.keepdim).expand(shape) / n)


@derivative("std_mean", "StdMeanBackward0", save={"self": ALL, "result": ALL})
def _std_mean(ctx, g_std, g_mean):
    centred, n, dof = _spread_parts(ctx)
    shape = centred._shape
    s = _unreduce(ctx.result, shape, ctx.dim, ctx.keepdim)
    return (_unreduce(g_std, shape, ctx.dim, ctx.keepdim) * centred / (s * dof)
            + _unreduce(g_mean, shape, ctx.dim, ctx.keepdim).expand(shape) / n)


# ---------------------------------------------------------------------------
# torch.linalg
# ---------------------------------------------------------------------------
def _norm_dims(shape, dim):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(len(shape)))
    return _reduced_dims(shape, dim)


@derivative("linalg_vector_norm", "LinalgVectorNormBackward0", save={"self": ALL, "result": ALL})
def _linalg_vector_norm(ctx, g):
    x = ctx.self
    shape = x._shape
    dims = _norm_dims(shape, ctx.dim)
    keep = ctx.keepdim or not shape
    r, gg = ctx.result, g
    if not keep:
        for d in dims:
            r, gg = r.unsqueeze(d), gg.unsqueeze(d)
    return _norm_backward(x, r, gg, ctx.ord, dims)


def _norm_backward(x, r, gg, p, dims):
    """The gradient of the ``p``-norm ``r`` of ``x`` over ``dims`` (``r``, ``gg`` with those dims kept)."""
    if p == 0:
        return None          # a count: no gradient (PyTorch leaves .grad undefined too)
    if p == 1:
        return gg * x.sign()
    if math.isinf(p):
        mask = (x.abs() == r).to(gg.dtype)   # the gradient is shared by the elements at the max (min) |x|
        return gg * x.sign() * mask / mask.sum(dims, keepdim=True)
    if p == 2:
        return x * (gg / r).masked_fill(r == 0, 0)
    if p < 1:                # as PyTorch's norm_backward: zeros of x get no gradient
        return x.sign() * x.abs().masked_fill(x == 0, 1) ** (p - 1) * gg * r ** (1 - p)
    scaled = x.sign() * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
    return scaled * (gg / r ** (p - 1)).masked_fill(r == 0, 0)


@derivative("linalg_inv", "LinalgInvExBackward0", save={"result": ALL})
def _linalg_inv(ctx, g):
    r = ctx.result.mT
    return -(r @ g @ r)


@derivative("linalg_det", "LinalgDetBackward0", save={"A": ALL, "result": ALL})
def _linalg_det(ctx, g):
    # d det(A) = tr(adj(A) dA): the gradient is g times the cofactor matrix, det(A) A^-T when A is
    # invertible; with a singular matrix in the batch, from A = U diag(S) Vh:
    # cofactors = det(U) det(Vh) U diag(prod_{j != i} S_j) Vh.  (Deliberate difference: torch 2.13 gives
    # zeros at an exactly singular matrix, which its own gradcheck rejects.)
    import course_lib as _cl

    from .._ops.dispatcher import dispatch as _d
    A, det = ctx.A, ctx.result
    if not bool((det == 0).any()):
        return (g * det).unsqueeze(-1).unsqueeze(-1) * _d(OPS["linalg_inv"], (A,)).mT
    U, S, Vh = _d(OPS["linalg_svd"], (A, False))
    sign = _d(OPS["linalg_det"], (U,)) * _d(OPS["linalg_det"], (Vh,))
    one = _cl.ones(S._shape[:-1] + (1,), dtype=S.dtype)
    n = S._shape[-1]
    before = _cl.cat([one, S.narrow(-1, 0, n - 1)], -1).cumprod(-1)            # prod_{j < i} S_j
    after = _cl.cat([S.narrow(-1, 1, n - 1), one], -1).flip((-1,)).cumprod(-1).flip((-1,))   # prod_{j > i}
    D = (g * sign).unsqueeze(-1) * before * after
    return (U * D.unsqueeze(-2)) @ Vh


@derivative("linalg_solve", "LinalgSolveExBackward0", save={"A": ALL, "result": ("A",)})
def _linalg_solve(ctx, g):
    # AX = B: gB = A^-T g, gA = -gB X^T;  XA = B: gB = g A^-T, gA = -X^T gB
    from .._ops.dispatcher import dispatch as _d
    A = ctx.A
    left = ctx.left
    gb = _d(OPS["linalg_solve"], (A.mT, g, left))
    ga = None
    if ctx.needs_input_grad[0]:
        x = ctx.result
        vector = len(x._shape) == len(A._shape) - 1
        if vector:
            ga = -(gb.unsqueeze(-1) @ x.unsqueeze(-2)) if left else -(x.unsqueeze(-1) @ gb.unsqueeze(-2))
        else:
            ga = -(gb @ x.mT) if left else -(x.mT @ gb)
    return ga, gb


@derivative("linalg_eigh", "LinalgEighBackward0", save={"result": ALL, "result1": ALL})
def _linalg_eigh(ctx, g_values, g_vectors):
    # A = V diag(L) V^T: gA = V (diag(gL) + skew(V^T gV) / (L_j - L_i)) V^T, as PyTorch's linalg_eig_backward
    # for Hermitian input (the skew part: only it survives the constraint V^T V = I); equal eigenvalues
    # give inf, as in PyTorch
    import course_lib as _cl
    L, V = ctx.result, ctx.result1
    eye = _cl.eye(L._shape[-1], dtype=L.dtype)
    vg = V.mT @ g_vectors
    skew = (vg - vg.mT) * 0.5
    gaps = L.unsqueeze(-2) - L.unsqueeze(-1) + eye      # L_j - L_i, 1 on the diagonal (where skew is 0)
    return V @ (skew / gaps + g_values.unsqueeze(-1) * eye) @ V.mT


@derivative("linalg_svd", "LinalgSvdBackward0", save={"full_matrices": ALL, "result": ALL, "result1": ALL,
                                                      "result2": ALL})
def _linalg_svd(ctx, gU, gS, gVh):
    # PyTorch's svd_backward for real input: with E_ij = S_j^2 - S_i^2 and skew(X) = X - X^T,
    #   gA = U [(skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS)] Vh
    #        + (I - U U^T) gU S^-1 Vh + U S^-1 gVh (I - V V^T)
    # With full_matrices only the first min(m, n) singular vectors enter (the others are not unique).
    import course_lib as _cl
    U, S, Vh = ctx.result, ctx.result1, ctx.result2
    m, n = U._shape[-2], Vh._shape[-1]
    k = S._shape[-1]
    if ctx.full_matrices and m != n:
        U, gU = U.narrow(-1, 0, k), gU.narrow(-1, 0, k)
        Vh, gVh = Vh.narrow(-2, 0, k), gVh.narrow(-2, 0, k)
    eye = _cl.eye(k, dtype=S.dtype)
    uu = U.mT @ gU
    vv = Vh @ gVh.mT                                  # V^T gV, with V = Vh^T and gV = gVh^T
    s2 = S * S
    gaps = s2.unsqueeze(-2) - s2.unsqueeze(-1) + eye
    core = ((uu - uu.mT) * S.unsqueeze(-2) + S.unsqueeze(-1) * (vv - vv.mT)) / gaps + gS.unsqueeze(-1) * eye
    if m > n:
        gu_sinv = gU / S.unsqueeze(-2)
        return (U @ core + gu_sinv - U @ (U.mT @ gu_sinv)) @ Vh
    if m < n:
        sinv_gvh = gVh / S.unsqueeze(-1)
        return U @ (core @ Vh + sinv_gvh - (sinv_gvh @ Vh.mT) @ Vh)
    return U @ core @ Vh


def _qr_square_part(Q, R, gQ, gR):
    """A = QR with R square (m >= n): gA = (gQ + Q N) R^-T, N the symmetric matrix with the upper
    triangle of M = gR R^T - Q^T gQ (the constraint Q^T Q = I keeps only that part)."""
    from .._ops.dispatcher import dispatch as _d
    M = gR @ R.mT - Q.mT @ gQ
    N = M.triu() + M.mT.tril(-1)
    return _d(OPS["linalg_solve"], (R.mT, gQ + Q @ N, False))


@derivative("linalg_qr", "LinalgQrBackward0", save={"mode": ALL, "result": ALL, "result1": ALL})
def _linalg_qr(ctx, gQ, gR):
    Q, R = ctx.result, ctx.result1
    if ctx.mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                           "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                           "linalg.qr.")
    m, n = Q._shape[-2], R._shape[-1]
    if ctx.mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if m >= n:
        return _qr_square_part(Q, R, gQ, gR)
    # m < n: A = Q [R1 | R2]; the columns beyond m are Y = Q R2, which also moves Q
    import course_lib as _cl
    Y, R1 = Q @ R.narrow(-1, m, n - m), R.narrow(-1, 0, m)
    gR1, gR2 = gR.narrow(-1, 0, m), gR.narrow(-1, m, n - m)
    gX = _qr_square_part(Q, R1, gQ + Y @ gR2.mT, gR1)
    return _cl.cat([gX, Q @ gR2], -1)


derivative("cummax", "CummaxBackward0", save={"result1": ALL})(_scatter_to_indices)
derivative("cummin", "CumminBackward0", save={"result1": ALL})(_scatter_to_indices)
derivative("nanmedian", lambda self, dim=None, keepdim=False: "NanmedianBackward0" if dim is None
           else "NanmedianBackward1", save={"self": ALL, "result": ALL, "result1": ALL})(_median)


@derivative("linalg_cholesky", "LinalgCholeskyExBackward0", save={"upper": ALL, "result": ALL})
def _linalg_cholesky(ctx, g):
    # A = L L^T: gA = L^-T phi(L^T gL) L^-1, phi = the lower triangle with its diagonal halved, then
    # symmetrised (PyTorch's cholesky_backward)
    from .._ops.dispatcher import dispatch as _d
    L = ctx.result.mT if ctx.upper else ctx.result
    gL = g.mT if ctx.upper else g
    P = (L.mT @ gL).tril()
    P = P - P.tril().triu() * 0.5                     # halve the diagonal
    gA = _d(OPS["linalg_solve"], (L, _d(OPS["linalg_solve"], (L.mT, P, True)), False))
    return (gA + gA.mT) * 0.5


@derivative("linalg_slogdet", "LinalgSlogdetBackward0", save={"A": ALL})
def _linalg_slogdet(ctx, g_sign, g_logabsdet):
    # d log|det A| = tr(A^-1 dA): gradient g A^-T (the sign is piecewise constant)
    from .._ops.dispatcher import dispatch as _d
    return g_logabsdet.unsqueeze(-1).unsqueeze(-1) * _d(OPS["linalg_inv"], (ctx.A,)).mT


@derivative("linalg_pinv", "LinalgPinvBackward0", save={"self": ALL, "result": ALL})
def _linalg_pinv(ctx, g):
    # X = pinv(A), its rank constant near A (Golub and Pereyra's derivative):
    #   gA = -X^T g X^T + (I - A X) g^T X X^T + X^T X g^T (I - X A), the identities multiplied out
    A, X = ctx.self, ctx.result
    Xt = X.mT
    term1 = -(Xt @ g @ Xt)
    gX = g.mT @ X @ Xt                                  # g^T X X^T
    term2 = gX - A @ X @ gX                             # (I - A X) g^T X X^T
    hX = Xt @ X @ g.mT                                  # X^T X g^T
    term3 = hX - hX @ X @ A                             # X^T X g^T (I - X A)
    return term1 + term2 + term3


@derivative("trace", "TraceBackward0")
def _trace(ctx, g):
    import course_lib as _cl
    n, m = _shape(ctx, "self")
    return g * _cl.eye(n, m, dtype=g.dtype)


@derivative("dist", "DistBackward0", save={"self": ALL, "other": ALL, "result": ALL})
def _dist(ctx, g):
    x = ctx.self - ctx.other
    dims = tuple(range(len(x._shape)))
    r, gg = ctx.result, g
    for _ in dims:
        r, gg = r.unsqueeze(0), gg.unsqueeze(0)
    gx = _norm_backward(x, r, gg, ctx.p, dims)
    if gx is None:
        return None, None
    return gx, -gx       # summed back to each input's shape afterwards


@derivative("linalg_cross", "LinalgCrossBackward0", save={"self": ("other",), "other": ("self",)})
def _linalg_cross(ctx, g):
    from .._ops.dispatcher import dispatch as _d
    n = ctx.needs_input_grad
    ga = _d(OPS["linalg_cross"], (ctx.other, g, ctx.dim)) if n[0] else None
    gb = _d(OPS["linalg_cross"], (g, ctx.self, ctx.dim)) if n[1] else None
    return ga, gb
