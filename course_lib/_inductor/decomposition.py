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

from .._ops.registry import OpDef
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
            return type(a)(arg(x) for x in a)
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
            env[node] = L.new("getitem", args=(base,), index=i, shape=shape, dtype=dtype)
        elif node.op == "call_function" and isinstance(node.target, OpDef):
            env[node] = _lower_op(L, node.target, arg(tuple(node.args)), shape, dtype)
        elif node.op == "output":
            output = arg(node.args[0])
        else:
            raise NotImplementedError(f"compile_fx: cannot lower node {node.format_node()}")
    for v in L.values:
        for a in v.inputs():
            a.users.append(v)
    return L, output


def _lower_op(L: Lowering, op: OpDef, args: tuple, shape: tuple[int, ...], dtype: np.dtype | None) -> Value:
    tensors = [a for a in args if isinstance(a, Value)]
    fusible = (_is_float_or_bool(dtype) and all(a.dtype is not None and a.dtype.kind in "fbiu" for a in tensors)
               and not any(isinstance(a, (list, tuple)) for a in args))
    if fusible and (dtype.kind == "f" or op.name in COMPARISONS or op.name in ("where", "masked_fill", "clone")):
        v = None
        if op.name in DECOMPOSITIONS:
            v = DECOMPOSITIONS[op.name](L, dtype, *args)
        elif op.name in PRIMITIVES:
            v = L.pw(op.name, *args, dtype=dtype)
        if v is not None:
            if v.shape != shape or v.dtype != dtype:
                raise RuntimeError(f"compile_fx: lowering {op.name} gave {v.shape} {v.dtype}, expected {shape} {dtype}")
            return v
    return L.new("extern", target=op, args=args, shape=shape, dtype=dtype)
