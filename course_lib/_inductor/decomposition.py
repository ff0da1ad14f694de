"""Lowering: an FX graph of registry ops -> a list of ``Value`` s over a small primitive set.

In PyTorch: ``torch/_decomp`` and ``torch/_inductor/decomposition.py`` (rewrite an op in terms
of simpler ones) and ``torch/_inductor/lowering.py`` (turn each op into IR).  Ops with an entry
in ``DECOMPOSITIONS`` are rewritten into primitives (``sigmoid(x)`` -> ``1 / (1 + exp(-x))``);
primitives become ``pointwise`` Values; everything else becomes an ``extern`` Value that calls
course_lib's kernel at run time.  Only floating-point and boolean results are generated as code:
integer arithmetic (overflow, floor division) keeps course_lib's kernels.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from .._ops.common import like_sequence
from .._ops.registry import OPS, OpDef
from ..fx.graph_module import GraphModule
from ..fx.node import Node
from .codegen import COMPARISONS, PRIMITIVES
from .ir import Value


def _is_float_or_bool(dtype: np.dtype | None) -> bool:
    return dtype is not None and (dtype.kind == "f" or dtype.kind == "b")


class Lowering:
    """Builds the Values of one graph; ``pw`` is what decompositions call."""

    def __init__(self) -> None:
        self.values: list[Value] = []
        self._n = 0

    def new(self, kind: str, **kw: Any) -> Value:
        v = Value(name=f"v{self._n}", kind=kind, **kw)
        self._n += 1
        self.values.append(v)
        return v

    def pw(self, op: str, *args: Any, dtype: np.dtype) -> Value:
        """A pointwise Value ``op(*args)``; its shape is the broadcast of its tensor arguments."""
        shape = np.broadcast_shapes(*[a.shape for a in args if isinstance(a, Value)])
        return self.new("pointwise", op=op, args=args, shape=tuple(shape), dtype=np.dtype(dtype))

    def reduce(self, op: str, x: Value, dims: Any, keepdim: bool, dtype: np.dtype) -> Value | None:
        """``op`` (sum, max, min) of ``x`` over ``dims``, or None when the dims are neither the
        trailing nor the leading ones (that reduction stays an extern)."""
        nd = len(x.shape)
        if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
            dims = range(nd)
        elif isinstance(dims, int):
            dims = [dims]
        try:
            red = sorted({d + nd if d < 0 else d for d in dims})
        except TypeError:
            return None
        if any(d < 0 or d >= nd for d in red) or x.dtype is None or x.dtype.kind != "f":
            return None
        k = len(red)
        if red == list(range(nd - k, nd)):
            axis, geometry = "rows", (x.shape[:nd - k], x.shape[nd - k:])
        elif red == list(range(k)):
            axis, geometry = "cols", (x.shape[:k], x.shape[k:])
        else:
            return None
        if 0 in x.shape:
            return None   # nothing to loop over (and a max of nothing raises): course_lib's kernel
        shape = tuple(1 if d in red else n for d, n in enumerate(x.shape)) if keepdim else tuple(
            n for d, n in enumerate(x.shape) if d not in red)
        return self.new("reduction", op=op, args=(x,), shape=shape, dtype=np.dtype(dtype), axis=axis,
                        geometry=geometry)


Decomposition = Callable[..., "Value | None"]
#: op name -> f(lowering, out_dtype, *args) returning the Value, or None to keep the op as an extern
DECOMPOSITIONS: dict[str, Decomposition] = {}


def register_decomposition(*names: str) -> Callable[[Decomposition], Decomposition]:
    def deco(f: Decomposition) -> Decomposition:
        for n in names:
            DECOMPOSITIONS[n] = f
        return f
    return deco


def _scaled(L: Lowering, b: Any, alpha: Any, dt: np.dtype) -> Any:
    return b if alpha == 1 else L.pw("mul", b, alpha, dtype=dt)


@register_decomposition("add")
def _add(L: Lowering, dt: np.dtype, a: Any, b: Any, alpha: Any = 1) -> Value:
    return L.pw("add", a, _scaled(L, b, alpha, dt), dtype=dt)


@register_decomposition("sub")
def _sub(L: Lowering, dt: np.dtype, a: Any, b: Any, alpha: Any = 1) -> Value:
    return L.pw("sub", a, _scaled(L, b, alpha, dt), dtype=dt)


@register_decomposition("rsub")
def _rsub(L: Lowering, dt: np.dtype, a: Any, b: Any, alpha: Any = 1) -> Value:
    return L.pw("sub", b, _scaled(L, a, alpha, dt), dtype=dt)


@register_decomposition("div")
def _div(L: Lowering, dt: np.dtype, a: Any, b: Any, rounding_mode: Any = None) -> Value | None:
    return L.pw("div", a, b, dtype=dt) if rounding_mode is None else None


@register_decomposition("relu")
def _relu(L: Lowering, dt: np.dtype, x: Value) -> Value:
    return L.pw("maximum", x, 0, dtype=dt)


@register_decomposition("sigmoid")
def _sigmoid(L: Lowering, dt: np.dtype, x: Value) -> Value:
    e = L.pw("exp", L.pw("neg", x, dtype=dt), dtype=dt)
    return L.pw("div", 1, L.pw("add", 1, e, dtype=dt), dtype=dt)


@register_decomposition("square")
def _square(L: Lowering, dt: np.dtype, x: Value) -> Value:
    return L.pw("mul", x, x, dtype=dt)


@register_decomposition("reciprocal")
def _reciprocal(L: Lowering, dt: np.dtype, x: Value) -> Value:
    return L.pw("div", 1, x, dtype=dt)


@register_decomposition("rsqrt")
def _rsqrt(L: Lowering, dt: np.dtype, x: Value) -> Value:
    return L.pw("div", 1, L.pw("sqrt", x, dtype=dt), dtype=dt)


@register_decomposition("clamp")
def _clamp(L: Lowering, dt: np.dtype, x: Value, lo: Any = None, hi: Any = None) -> Value:
    if lo is None and hi is None:
        return L.pw("clone", x, dtype=dt)
    out = x if lo is None else L.pw("maximum", x, lo, dtype=dt)
    return out if hi is None else L.pw("minimum", out, hi, dtype=dt)


@register_decomposition("lerp")
def _lerp(L: Lowering, dt: np.dtype, a: Any, b: Any, w: Any) -> Value:
    return L.pw("add", a, L.pw("mul", w, L.pw("sub", b, a, dtype=dt), dtype=dt), dtype=dt)


@register_decomposition("threshold_backward")
def _threshold_backward(L: Lowering, dt: np.dtype, grad: Any, x: Value, threshold: Any) -> Value:
    return L.pw("where", L.pw("le", x, threshold, dtype=np.dtype(bool)), 0, grad, dtype=dt)


@register_decomposition("masked_fill")
def _masked_fill(L: Lowering, dt: np.dtype, x: Value, mask: Any, value: Any) -> Value | None:
    if isinstance(value, Value):
        return None
    return L.pw("where", mask, value, x, dtype=dt)


@register_decomposition("_to_copy")
def _to_copy(L: Lowering, dt: np.dtype, x: Value, dtype: Any = None, device: Any = None) -> Value | None:
    if device is not None and str(device) != "cpu":
        return None
    return L.pw("clone", x, dtype=dt)


@register_decomposition("detach", "alias")
def _identity(L: Lowering, dt: np.dtype, x: Value) -> Value:
    return x   # the compiled program's results never require grad: detaching changes nothing


def _reduced_size(x: Value, dims: Any) -> int:
    nd = len(x.shape)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return x.numel
    dims = [dims] if isinstance(dims, int) else dims
    return int(np.prod([x.shape[d] for d in dims], dtype=np.int64)) if nd else 1


@register_decomposition("sum")
def _sum(L: Lowering, dt: np.dtype, x: Value, dim: Any = None, keepdim: bool = False,
         dtype: Any = None) -> Value | None:
    return L.reduce("sum", x, dim, keepdim, dt)


@register_decomposition("mean")
def _mean(L: Lowering, dt: np.dtype, x: Value, dim: Any = None, keepdim: bool = False,
          dtype: Any = None) -> Value | None:
    s = L.reduce("sum", x, dim, keepdim, dt)
    return None if s is None else L.pw("div", s, float(_reduced_size(x, dim)), dtype=dt)


@register_decomposition("amax", "amin")
def _amax(L: Lowering, dt: np.dtype, x: Value, dim: Any = (), keepdim: bool = False, *,
          _op: str = "max") -> Value | None:
    return L.reduce(_op, x, dim, keepdim, dt)


DECOMPOSITIONS["amin"] = lambda L, dt, x, dim=(), keepdim=False: _amax(L, dt, x, dim, keepdim, _op="min")


def _last_dim(x: Value, dim: int) -> bool:
    return len(x.shape) > 0 and dim in (-1, len(x.shape) - 1)


@register_decomposition("softmax", "log_softmax")
def _softmax(L: Lowering, dt: np.dtype, x: Value, dim: int, dtype: Any = None, *, _log: bool = False) -> Value | None:
    if not _last_dim(x, dim) or x.shape[-1] == 0:
        return None
    if x.dtype != dt:
        x = L.pw("clone", x, dtype=dt)
    m = L.reduce("max", x, [-1], True, dt)
    z = L.pw("sub", x, m, dtype=dt)
    s = L.reduce("sum", L.pw("exp", z, dtype=dt), [-1], True, dt)
    if _log:
        return L.pw("sub", z, L.pw("log", s, dtype=dt), dtype=dt)
    return L.pw("div", L.pw("exp", z, dtype=dt), s, dtype=dt)


DECOMPOSITIONS["log_softmax"] = lambda L, dt, x, dim, dtype=None: _softmax(L, dt, x, dim, dtype, _log=True)


@register_decomposition("_log_softmax_backward_data")
def _log_softmax_backward(L: Lowering, dt: np.dtype, grad: Value, out: Value, dim: int,
                          input_dtype: Any) -> Value | None:
    if not isinstance(grad, Value) or not _last_dim(out, dim) or grad.shape != out.shape or out.shape[-1] == 0 \
            or grad.dtype != dt or out.dtype != dt:
        return None
    s = L.reduce("sum", grad, [-1], True, dt)
    return L.pw("sub", grad, L.pw("mul", L.pw("exp", out, dtype=dt), s, dtype=dt), dtype=dt)


def _native_layer_norm(L: Lowering, x: Value, normalized_shape: Any, weight: Any, bias: Any,
                       eps: float) -> tuple | None:
    k, dt = len(normalized_shape), x.dtype
    if k == 0 or tuple(x.shape[len(x.shape) - k:]) != tuple(normalized_shape) or dt.kind != "f":
        return None
    dims, n = list(range(-k, 0)), float(np.prod(normalized_shape))
    mean = L.pw("div", L.reduce("sum", x, dims, True, dt), n, dtype=dt)
    d = L.pw("sub", x, mean, dtype=dt)
    var = L.pw("div", L.reduce("sum", L.pw("mul", d, d, dtype=dt), dims, True, dt), n, dtype=dt)
    rstd = L.pw("div", 1.0, L.pw("sqrt", L.pw("add", var, float(eps), dtype=dt), dtype=dt), dtype=dt)
    y = L.pw("mul", d, rstd, dtype=dt)
    if weight is not None:
        y = L.pw("mul", y, weight, dtype=dt)
    if bias is not None:
        y = L.pw("add", y, bias, dtype=dt)
    return y, mean, rstd


def _native_layer_norm_backward(L: Lowering, dy: Value, x: Value, normalized_shape: Any, mean: Value, rstd: Value,
                                weight: Any, bias: Any) -> tuple | None:
    k, dt = len(normalized_shape), x.dtype
    if weight is None or k == 0 or dy.shape != x.shape or dt.kind != "f" or k >= len(x.shape):
        return None
    rows, n = list(range(-k, 0)), float(np.prod(normalized_shape))
    cols = list(range(len(x.shape) - k))
    xhat = L.pw("mul", L.pw("sub", x, mean, dtype=dt), rstd, dtype=dt)
    g = L.pw("mul", dy, weight, dtype=dt)
    a = L.pw("div", L.reduce("sum", g, rows, True, dt), n, dtype=dt)
    b = L.pw("div", L.reduce("sum", L.pw("mul", g, xhat, dtype=dt), rows, True, dt), n, dtype=dt)
    dx = L.pw("mul", L.pw("sub", L.pw("sub", g, a, dtype=dt), L.pw("mul", xhat, b, dtype=dt), dtype=dt), rstd,
              dtype=dt)
    dw = L.reduce("sum", L.pw("mul", dy, xhat, dtype=dt), cols, False, dt)
    db = L.reduce("sum", dy, cols, False, dt)
    return dx, dw, db


#: ops with several results: name -> f(lowering, *args) returning a tuple of Values, or None
MULTI_DECOMPOSITIONS: dict[str, Callable[..., "tuple | None"]] = {
    "native_layer_norm": _native_layer_norm,
    "native_layer_norm_backward": _native_layer_norm_backward,
}


def _tensor_meta(node: Node) -> tuple[tuple[int, ...], np.dtype] | None:
    tm = node.meta.get("tensor_meta")
    if tm is None or not hasattr(tm, "shape"):
        return None
    return tuple(tm.shape), np.dtype(tm.dtype.np)


def lower(gm: GraphModule) -> tuple[Lowering, Any]:
    """Lower ``gm`` (whose nodes carry ``meta["tensor_meta"]``) to Values; returns them and the output."""
    L = Lowering()
    env: dict[Node, Any] = {}
    n_inputs = 0

    def arg(a: Any) -> Any:
        if isinstance(a, Node):
            return env[a]
        if isinstance(a, (list, tuple)):
            return like_sequence(a, [arg(x) for x in a])
        return a

    output: Any = None
    for node in gm.graph.nodes:
        meta = _tensor_meta(node)
        shape, dtype = meta if meta is not None else ((), None)
        if node.op == "placeholder":
            env[node] = L.new("input", index=n_inputs, shape=shape, dtype=dtype)
            n_inputs += 1
        elif node.op == "get_attr":
            t = gm
            for part in node.target.split("."):
                t = getattr(t, part)
            env[node] = L.new("constant", target=t, shape=tuple(t.shape), dtype=np.dtype(t.dtype.np))
        elif node.op == "call_function" and node.target is operator.getitem:
            base, i = arg(node.args[0]), node.args[1]
            if isinstance(base, (tuple, list)):   # a decomposed multi-result op
                env[node] = base[i]
            else:
                env[node] = L.new("getitem", args=(base,), index=i, shape=shape, dtype=dtype)
        elif (node.op == "call_function" and isinstance(node.target, OpDef)
              and node.target.name in MULTI_DECOMPOSITIONS):
            env[node] = _lower_multi(L, node, arg(tuple(node.args)), shape, dtype)
        elif node.op == "call_function" and isinstance(node.target, OpDef):
            args = arg(tuple(node.args))
            v = _lower_inplace(L, node.target, args, shape, dtype)
            if v is None:
                v = _lower_op(L, node.target, args, shape, dtype)
            else:   # later reads of the input see the new value
                for n, old in list(env.items()):
                    if old is args[0]:
                        env[n] = v
            env[node] = v
        elif node.op == "output":
            output = arg(node.args[0])
        else:
            raise NotImplementedError(f"compile_fx: cannot lower node {node.format_node()}")
    _set_users(L.values)
    if _unfuse_bias_add(L, output):
        _set_users(L.values)
    return L, output


def _set_users(values: list[Value]) -> None:
    for v in values:
        v.users = []
    for v in values:
        for a in v.inputs():
            a.users.append(v)


def _unfuse_bias_add(L: Lowering, output: Any) -> bool:
    """``addmm(bias, a, b)`` whose every reader is a pointwise op or a reduction becomes ``mm(a, b)`` and a
    pointwise add of the bias, which then fuses into its readers' kernel (one pass over the result
    fewer).  PyTorch: ``unfuse_bias_add_to_pointwise`` and ``should_prefer_unfused_addmm`` in
    ``torch/_inductor/fx_passes/post_grad.py``.  Deliberate difference: PyTorch 2.13 unfuses only on
    GPUs (``should_prefer_unfused_addmm`` is False on a CPU device) and only for pointwise readers;
    here the bias of a CPU addmm is a separate numpy pass, which the readers' kernel does for free.
    The values are the same: addmm's kernel also rounds the product before it adds the bias."""
    returned: set[int] = set()

    def collect(o: Any) -> None:
        if isinstance(o, Value):
            returned.add(id(o))
        elif isinstance(o, (list, tuple)):
            for x in o:
                collect(x)
    collect(output)
    changed = False
    i = 0
    while i < len(L.values):
        v = L.values[i]
        i += 1
        if not (v.kind == "extern" and getattr(v.target, "name", "") == "addmm" and len(v.args) >= 3
                and tuple(v.args[3:]) in ((), (1,), (1, 1)) and len(v.shape) == 2 and v.dtype is not None
                and v.dtype.kind == "f" and id(v) not in returned and v.users
                and all(u.kind in ("pointwise", "reduction") for u in v.users)):
            continue
        bias, a, b = v.args[:3]
        if not all(isinstance(t, Value) and t.dtype == v.dtype for t in (bias, a, b)) or len(bias.shape) > 2:
            continue
        mm = Value(name=f"v{L._n}", kind="extern", target=OPS["mm"], args=(a, b), shape=v.shape, dtype=v.dtype)
        L._n += 1
        L.values.insert(i - 1, mm)
        i += 1
        v.kind, v.op, v.args, v.target = "pointwise", "add", (mm, bias), None
        changed = True
    return changed


def _lower_multi(L: Lowering, node: Node, args: tuple, shape: Any, dtype: Any) -> Any:
    """A multi-result op: its decomposition's tuple of Values, or one extern Value."""
    tensors = [a for a in args if isinstance(a, Value)]
    if all(a.dtype is not None and a.dtype.kind == "f" for a in tensors) and len({a.dtype for a in tensors}) == 1:
        n_values = len(L.values)
        out = MULTI_DECOMPOSITIONS[node.target.name](L, *args)
        if out is not None:
            metas = node.meta.get("tensor_meta")
            if isinstance(metas, (tuple, list)):
                for v, tm in zip(out, metas):
                    if hasattr(tm, "shape") and (tuple(tm.shape) != v.shape or np.dtype(tm.dtype.np) != v.dtype):
                        raise RuntimeError(f"compile_fx: lowering {node.target.name} gave {v.shape} {v.dtype}, "
                                           f"expected {tuple(tm.shape)}")
            return out
        del L.values[n_values:]
    return L.new("extern", target=node.target, args=args, shape=shape, dtype=dtype)


def _lower_inplace(L: Lowering, op: OpDef, args: tuple, shape: Any, dtype: Any) -> Value | None:
    """``x.add_(y)`` on a graph input ``x``: the pointwise ``add`` Value, stored into ``x``; else None."""
    name = op.name
    if not (name.endswith("_") and not name.startswith("_") and args and isinstance(args[0], Value)):
        return None
    x = args[0]
    if x.kind != "input" or shape != x.shape or dtype != x.dtype:
        return None
    base = OPS.get(name[:-1])
    if base is None or (base.name not in PRIMITIVES and base.name not in DECOMPOSITIONS):
        return None
    n_values = len(L.values)
    v = _lower_op(L, base, args, shape, dtype)
    if v.kind != "pointwise" or v.shape != x.shape or v.dtype != x.dtype or v.writes is not None:
        del L.values[n_values:]
        return None
    if v.op == "clone" and v.args[0] is x:   # x.clamp_() with no bounds: nothing to write
        return x
    v.writes = x
    return v


def _lower_op(L: Lowering, op: OpDef, args: tuple, shape: tuple[int, ...], dtype: np.dtype | None) -> Value:
    tensors = [a for a in args if isinstance(a, Value)]
    fusible = (_is_float_or_bool(dtype) and all(a.dtype is not None and a.dtype.kind in "fbiu" for a in tensors)
               and not any(isinstance(a, (list, tuple)) and any(isinstance(x, Value) for x in a) for a in args))
    if fusible and (dtype.kind == "f" or op.name in COMPARISONS or op.name in ("where", "masked_fill", "clone")):
        v = None
        n_values = len(L.values)
        if op.name in DECOMPOSITIONS:
            v = DECOMPOSITIONS[op.name](L, dtype, *args)
            if v is None:   # not decomposed after all: drop what the attempt built
                del L.values[n_values:]
        elif op.name == "clone":
            # a copy in row-major order (reshape of a permuted tensor records clone(x, contiguous_format));
            # channels_last keeps its own layout: an extern
            if len(args) < 2 or args[1] in (None, "contiguous_format", "preserve_format"):
                v = L.pw("clone", args[0], dtype=dtype)
        elif op.name in PRIMITIVES:
            v = L.pw(op.name, *args, dtype=dtype)
        if v is not None:
            if v.shape != shape or v.dtype != dtype:
                raise RuntimeError(f"compile_fx: lowering {op.name} gave {v.shape} {v.dtype}, expected {shape} {dtype}")
            return v
    return L.new("extern", target=op, args=args, shape=shape, dtype=dtype)
