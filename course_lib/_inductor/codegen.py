"""Code generation: one numba kernel per fusion group, and the Python wrapper that calls them.

In PyTorch: ``torch/_inductor/codegen/cpp.py`` (C++ loops over the flattened index, OpenMP) and
``codegen/wrapper.py`` (the ``call(args)`` function that allocates buffers and calls kernels).
Here a kernel is Python source with one explicit loop over the flattened index ``i`` of the
group's shape, compiled by ``numba.njit``; ``prange`` splits the loop over threads when the
group is large enough for that to pay.  Each kernel argument is a flat contiguous array; an input
of a smaller (broadcast) shape is read at an index computed from ``i``'s coordinates.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ir import Value
from .scheduler import FusionGroup

#: below this many elements a kernel runs on one thread (starting threads costs more than it saves)
PARALLEL_THRESHOLD = 1 << 16
#: elements per block of a kernel that checks its sin/cos arguments
BLOCK = 1 << 14


def _maximum(a: str, b: str) -> str:   # NaN-propagating, as torch.maximum
    return f"({a} if ({a} > {b} or {a} != {a}) else {b})"


def _minimum(a: str, b: str) -> str:
    return f"({a} if ({a} < {b} or {a} != {a}) else {b})"


#: primitive op name -> its expression, given its arguments' expressions
PRIMITIVES: dict[str, Callable[..., str]] = {
    "add": lambda a, b: f"{a} + {b}",
    "sub": lambda a, b: f"{a} - {b}",
    "mul": lambda a, b: f"{a} * {b}",
    "div": lambda a, b: f"{a} / {b}",
    "pow": lambda a, b: f"{a} ** {b}",
    "neg": lambda a: f"-{a}",
    "clone": lambda a: a,
    "maximum": _maximum,
    "minimum": _minimum,
    "where": lambda c, a, b: f"({a} if {c} else {b})",
    "atan2": lambda a, b: f"np.arctan2({a}, {b})",
    "erf": lambda a: f"math.erf({a})",
    **{name: (lambda f: (lambda a: f"np.{f}({a})"))(f) for name, f in {
        "abs": "abs", "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2",
        "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan",
        "asin": "arcsin", "acos": "arccos", "atan": "arctan", "sinh": "sinh", "cosh": "cosh",
        "tanh": "tanh", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "sign": "sign"}.items()},
}
COMPARISONS: dict[str, str] = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
for _name, _sym in COMPARISONS.items():
    PRIMITIVES[_name] = (lambda s: (lambda a, b: f"{a} {s} {b}"))(_sym)
LOGICAL = {"logical_and": "and", "logical_or": "or"}
for _name, _word in LOGICAL.items():
    PRIMITIVES[_name] = (lambda w: (lambda a, b: f"(bool({a}) {w} bool({b}))"))(_word)
PRIMITIVES["logical_not"] = lambda a: f"(not {a})"
PRIMITIVES["logical_xor"] = lambda a, b: f"(bool({a}) != bool({b}))"

_NUMBA_TYPE = {"float32": "float32", "float64": "float64", "float16": "float16", "bool": "boolean",
               "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8"}


def np_ctor(dtype: np.dtype) -> str:
    """The scalar constructor for ``dtype`` in generated code (``np.float32``)."""
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def _compute_dtype(v: Value) -> np.dtype:
    """The dtype ``v``'s operands are converted to: its own, or (comparisons) their common one."""
    if v.op in COMPARISONS or v.op in LOGICAL or v.op == "logical_not":
        dts = [a.dtype for a in v.inputs()]
        dt = np.result_type(*dts) if dts else np.dtype(np.float32)
        if dt.kind != "f" and any(isinstance(a, float) for a in v.args):
            dt = np.dtype(np.float32)
        return dt
    return v.dtype


def _contiguous_strides(shape: tuple[int, ...]) -> list[int]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return strides[::-1]


#: float32 ops computed by the vectorisable functions of ``libm`` (when the kernel is not the fallback)
FAST_FLOAT32 = {"exp": "expf", "tanh": "tanhf", "sin": "sinf", "cos": "cosf"}


def header_line(group: FusionGroup, params: list[str]) -> str:
    return f"def {group.name}({', '.join(params)}):"


def _values_body(group: FusionGroup, names: dict[int, str], outs: dict[int, str], fast: bool) -> tuple[list[str], int]:
    """The loop body computing ``group.values`` (and storing its outputs); the number of sin/cos."""
    body: list[str] = []
    n_trig = 0
    local: dict[int, str] = {id(v): f"{names[id(v)]}_v" for v in group.inputs}
    local_dtype: dict[int, np.dtype] = {id(v): v.dtype for v in group.inputs}
    for k, v in enumerate(group.values):
        cdt = _compute_dtype(v)

        def operand(a: Any) -> str:
            if isinstance(a, Value):
                e = local[id(a)]
                if v.op == "where" and a is v.args[0]:
                    return e
                return e if local_dtype[id(a)] == cdt else f"{np_ctor(cdt)}({e})"
            if isinstance(a, bool) and cdt.kind == "b":
                return repr(a)
            return f"{np_ctor(cdt)}({a!r})"
        ops = [operand(a) for a in v.args]
        if fast and cdt == np.float32 and v.op in FAST_FLOAT32:
            expr = f"{FAST_FLOAT32[v.op]}({ops[0]})"
            if v.op in ("sin", "cos"):
                n_trig += 1
                body.append(f"        big += np.int32(abs({ops[0]}) >= TRIG_LIMIT)")
        else:
            expr = PRIMITIVES[v.op](*ops)
        if v.op in COMPARISONS or v.op.startswith("logical_") or cdt != v.dtype:
            expr = f"{np_ctor(v.dtype)}({expr})"
        name = f"t{k}"
        body.append(f"        {name} = {expr}")
        local[id(v)], local_dtype[id(v)] = name, v.dtype
        if id(v) in outs:
            body.append(f"        {outs[id(v)]}[i] = {name}")
    return body, n_trig


def kernel_source(group: FusionGroup) -> tuple[str, str]:
    """The Python source of ``group``'s kernel, and its numba signature string."""
    shape, n = group.shape, int(np.prod(group.shape, dtype=np.int64))
    names = {id(v): f"in{k}" for k, v in enumerate(group.inputs)}
    outs = {id(v): f"out{k}" for k, v in enumerate(group.outputs)}
    params = [names[id(v)] for v in group.inputs] + [outs[id(v)] for v in group.outputs]
    loop = "prange" if n >= PARALLEL_THRESHOLD else "range"
    body: list[str] = []
    need_coords = False
    loads: list[str] = []
    for v in group.inputs:
        src = names[id(v)]
        if v.shape == shape:
            idx = "i"
        elif v.numel == 1:
            idx = "0"
        else:   # broadcast: the input's index from the coordinates of i
            need_coords = True
            own = (1,) * (len(shape) - len(v.shape)) + tuple(v.shape)
            st = _contiguous_strides(own)
            terms = [f"c{d} * {st[d]}" if st[d] != 1 else f"c{d}"
                     for d in range(len(shape)) if own[d] != 1]
            idx = " + ".join(terms) if terms else "0"
        loads.append(f"        {src}_v = {src}[{idx}]")
    if need_coords:
        body.append("        r = i")
        for d in reversed(range(len(shape))):
            if d > 0:
                body.append(f"        c{d} = r % {shape[d]}")
                body.append(f"        r = r // {shape[d]}")
            else:
                body.append("        c0 = r")
    body += loads

    fast_body, n_trig = _values_body(group, names, outs, fast=True)
    lines = [header_line(group, params), f"    # {' -> '.join(v.op for v in group.values)}; shape {shape}"]
    if not n_trig:
        lines += [f"    for i in {loop}({n}):", *body, *fast_body]
    else:   # blocks, each counting its too-large sin/cos arguments in a local (a vectorisable reduction)
        nblocks = -(-n // BLOCK)
        lines += [f"    nbig = np.zeros({nblocks}, np.int32)",
                  f"    for b in {loop}({nblocks}):",
                  "        big = np.int32(0)",
                  f"        for i in range(b * {BLOCK}, min(b * {BLOCK} + {BLOCK}, {n})):",
                  *["    " + x for x in body + fast_body],
                  "        nbig[b] = big"]
        slow_body, _ = _values_body(group, names, outs, fast=False)
        lines += ["    if nbig.sum() > 0:  # sin/cos arguments beyond TRIG_LIMIT: again with the C library's",
                  f"        for i in {loop}({n}):", *["    " + x for x in body + slow_body]]
    src = "\n".join(lines) + "\n"
    sig = "void(" + ", ".join(f"{_NUMBA_TYPE[v.dtype.name]}[::1]" for v in group.inputs + group.outputs) + ")"
    return src, sig


def compile_kernel(group: FusionGroup, source: str, signature: str) -> Callable:
    """Compile ``source`` with numba (eagerly, for ``signature``)."""
    import math

    import numba

    from . import libm
    namespace: dict[str, Any] = {"np": np, "math": math, "prange": numba.prange, "TRIG_LIMIT": libm.TRIG_LIMIT,
                                 **{f: getattr(libm, f) for f in FAST_FLOAT32.values()}}
    code = compile(source, f"<course_lib._inductor {group.name}>", "exec")
    exec(code, namespace)
    parallel = "prange(" in source
    return numba.njit(signature, parallel=parallel, fastmath=False, error_model="numpy", cache=False)(
        namespace[group.name])
