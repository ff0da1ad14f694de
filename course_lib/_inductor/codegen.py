"""Code generation: one numba kernel per fusion group, and the Python wrapper that calls them.

In PyTorch: ``torch/_inductor/codegen/cpp.py`` (C++ loops over the flattened index, OpenMP) and
``codegen/wrapper.py`` (the ``call(args)`` function that allocates buffers and calls kernels).
Here a kernel is Python source with explicit loops over the flattened index ``i`` of the group's
shape, compiled by ``numba.njit``; ``prange`` splits the outer loop over threads when the group is
large enough for that to pay.  Each kernel argument is a flat contiguous array; an input of a
smaller (broadcast) shape is read at an index computed from the coordinates of a loop over rows
and one along the last dimension; a long chain of transcendental functions is split into loops
that run block by block.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from typing import Any, Callable

import numpy as np

from .ir import Value
from .libm import FASTMATH
from .scheduler import FusionGroup

#: a row kernel's reductions may be reassociated (summed in SIMD lanes, then combined: numpy's
#: pairwise sum and torch's vectorised sum reorder it too); without it the loop stays scalar
REDUCTION_FASTMATH = FASTMATH | {"reassoc"}

#: below this many elements a kernel runs on one thread (starting threads costs more than it saves)
PARALLEL_THRESHOLD = 1 << 16
#: SIMD lanes of the loops of an elementwise kernel that calls ``libm``'s float32 functions (see
#: ``_wide_vectors``; other kernels are left to LLVM's cost model, which does as well or better for them)
VECTOR_WIDTH = 16


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


def _expr(v: Value, local: dict[int, str], local_dtype: dict[int, np.dtype], fast: bool, trig: bool = True) -> str:
    """The expression computing pointwise ``v`` from the locals holding its operands (``fast``: float32
    exp/tanh, and sin/cos if ``trig``, by ``libm``'s vectorisable functions)."""
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
    if fast and cdt == np.float32 and v.op in FAST_FLOAT32 and (trig or v.op not in ("sin", "cos")):
        expr = f"{FAST_FLOAT32[v.op]}({ops[0]})"
    else:
        expr = PRIMITIVES[v.op](*ops)
    if v.op in COMPARISONS or v.op.startswith("logical_") or cdt != v.dtype:
        expr = f"{np_ctor(v.dtype)}({expr})"
    return expr


def _values_body(group: FusionGroup, names: dict[int, str], outs: dict[int, str], fast: bool,
                 stage: list[Value] | None = None, carried: dict[int, str] | None = None,
                 kept: dict[int, str] | None = None) -> tuple[list[str], int]:
    """The loop body computing ``stage`` (default: ``group.values``) and storing its outputs; the number
    of sin/cos.  ``carried``: Values of earlier stages this one reads, by the array holding them;
    ``kept``: Values of this stage later ones read, by the array to store them in."""
    body: list[str] = []
    n_trig = 0
    local: dict[int, str] = {id(v): f"{names[id(v)]}_v" for v in group.inputs}
    local_dtype: dict[int, np.dtype] = {id(v): v.dtype for v in group.inputs}
    number = {id(v): k for k, v in enumerate(group.values)}
    for v in group.values:
        if carried and id(v) in carried:   # loaded before anything is stored (its array may be stored to)
            local[id(v)], local_dtype[id(v)] = f"t{number[id(v)]}", v.dtype
            body.append(f"        t{number[id(v)]} = {carried[id(v)]}[i]")
    for v in group.values if stage is None else stage:
        k = number[id(v)]
        expr = _expr(v, local, local_dtype, fast)
        if fast and v.op in ("sin", "cos") and _compute_dtype(v) == np.float32:
            n_trig += 1
            # (an int32 count: a reduction LLVM vectorises for free, where a bool OR keeps the loop scalar;
            # one counter per sin/cos, named by kernel_source: prange allows one update of a reduction variable)
            body.append(f"        big_ += np.int32(abs({local[id(v.args[0])]}) >= TRIG_LIMIT)")
        name = f"t{k}"
        body.append(f"        {name} = {expr}")
        local[id(v)], local_dtype[id(v)] = name, v.dtype
        if id(v) in outs:
            body.append(f"        {outs[id(v)]}[i] = {name}")
        elif kept and id(v) in kept:
            body.append(f"        {kept[id(v)]}[i] = {name}  # for a later loop")
    return body, n_trig


#: how much of a loop body each vectorised float32 function is (tanh is an exp and a division)
STAGE_WEIGHT = {"exp": 1, "sin": 1, "cos": 1, "tanh": 2}
#: the most weight one loop computes: a longer chain of them is split into loops that run block by block, the
#: values one loop leaves to the next kept in an output buffer (the seed's 4M float32 chain at one thread, fastest
#: calls: one loop 5.7 ms; two loops over the whole array 4.6 ms; two loops per block of 4096 elements 4.2 ms)
STAGE_BUDGET = 2
#: elements per block when a kernel has several loops: each block runs them all (4096 float32 are 16 KB)
BLOCK = 4096


def _stages(group: FusionGroup, outs: dict[int, str]) -> tuple[list[list[Value]], list[dict[int, str]], dict[int, str]]:
    """``group.values`` split into loops of at most ``STAGE_BUDGET`` weight; per loop, the Values of earlier
    loops it reads, by the output array holding them; all of those.  One loop when they cannot be held (no
    output buffer of their dtype computed late enough, or an output that overwrites an input)."""
    one: tuple[list[list[Value]], list[dict[int, str]], dict[int, str]] = ([group.values], [{}], {})
    if any(v.writes is not None for v in group.outputs):
        return one
    stages: list[list[Value]] = [[]]
    weight = 0
    for v in group.values:
        w = STAGE_WEIGHT.get(v.op, 0) if _compute_dtype(v) == np.float32 else 0
        if w and weight and weight + w > STAGE_BUDGET:
            stages.append([])
            weight = 0
        stages[-1].append(v)
        weight += w
    if len(stages) == 1:
        return one
    stage_of = {id(v): s for s, vs in enumerate(stages) for v in vs}
    last_read: dict[int, int] = {}
    for s, vs in enumerate(stages):
        for v in vs:
            for a in v.inputs():
                if id(a) in stage_of and stage_of[id(a)] < s:
                    last_read[id(a)] = s
    holder: dict[int, str] = {}
    free = [o for o in group.outputs if o.shape == group.shape]
    for v in group.values:
        if id(v) not in last_read:
            continue
        if id(v) in outs:   # an output: read back from its own buffer
            holder[id(v)] = outs[id(v)]
            continue
        # a buffer first stored to at or after the last loop reading v (that loop loads v before storing)
        fit = [o for o in free if o.dtype == v.dtype and stage_of[id(o)] >= last_read[id(v)]]
        if not fit:
            return one
        free.remove(fit[0])
        holder[id(v)] = outs[id(fit[0])]
    carried = [{id(v): holder[id(v)] for v in group.values
                if id(v) in last_read and stage_of[id(v)] < s <= last_read[id(v)]} for s in range(len(stages))]
    return stages, carried, holder


def _coords(var: str, shape: tuple[int, ...], prefix: str, indent: str) -> list[str]:
    """Lines splitting the flat index ``var`` of ``shape`` into coordinates ``{prefix}0, {prefix}1, ...``."""
    lines = [f"{indent}{prefix}r = {var}"]
    for d in reversed(range(len(shape))):
        if d > 0:
            lines += [f"{indent}{prefix}{d} = {prefix}r % {shape[d]}", f"{indent}{prefix}r = {prefix}r // {shape[d]}"]
        else:
            lines.append(f"{indent}{prefix}0 = {prefix}r")
    return lines


def _sub_index(own: tuple[int, ...], full: tuple[int, ...], var: str, prefix: str) -> tuple[str | None, bool]:
    """The flat index into ``own`` (broadcast against ``full``) from the flat index ``var`` of ``full``;
    None when it does not depend on ``var``; whether it needs ``var``'s coordinates."""
    if all(n == 1 for n in own):
        return None, False
    if own == full:
        return var, False
    st = _contiguous_strides(own)
    terms = [f"{prefix}{d} * {st[d]}" if st[d] != 1 else f"{prefix}{d}" for d in range(len(full)) if own[d] != 1]
    return " + ".join(terms), True


def row_kernel_source(group: FusionGroup) -> tuple[str, str]:
    """A row kernel: a loop over the rows of ``group.geometry``; per row, one inner loop over the
    columns per round of reductions (the pointwise Values feeding them recomputed in it), the
    per-row Values after their round, and a last inner loop storing the full-size outputs and
    accumulating column reductions (one partial row per block of rows, summed at the end)."""
    outer, inner = group.geometry
    full = outer + inner
    R, C = int(np.prod(outer, dtype=np.int64)), int(np.prod(inner, dtype=np.int64))
    names = {id(v): f"in{k}" for k, v in enumerate(group.inputs)}
    outs = {id(v): f"out{k}" for k, v in enumerate(group.outputs)}
    params = [names[id(v)] for v in group.inputs] + [outs[id(v)] for v in group.outputs]
    members = set(map(id, group.values))
    local: dict[int, str] = {id(v): f"{names[id(v)]}_v" for v in group.inputs}
    local_dtype: dict[int, np.dtype] = {id(v): v.dtype for v in group.inputs}
    for k, v in enumerate(group.values):
        local[id(v)], local_dtype[id(v)] = f"t{k}", v.dtype

    def is_full(v: Value) -> bool:   # computed per element, inside an inner loop
        return v.kind == "pointwise" and v.shape == group.shape

    # rounds: a row reduction runs in round 1 + the last round of the per-row Values it reads
    phase: dict[int, int] = {}

    def row_deps(v: Value, seen: set) -> int:
        p = 0
        for a in v.inputs():
            if id(a) in seen or id(a) not in members:
                continue
            seen.add(id(a))
            p = max(p, row_deps(a, seen) if is_full(a) else phase[id(a)])
        return p
    for v in group.values:
        if v.kind == "reduction" and v.axis == "rows":
            phase[id(v)] = 1 + row_deps(v, set())
        elif v.kind == "pointwise" and not is_full(v):
            phase[id(v)] = row_deps(v, set())
    n_phases = max([p for v, p in phase.items()] + [0])
    col_reds = [v for v in group.values if v.kind == "reduction" and v.axis == "cols"]
    blocked = bool(col_reds)
    n_blocks = min(R, 64) if blocked and R * C >= PARALLEL_THRESHOLD else 1
    rows_per_block = -(-R // max(n_blocks, 1))
    parallel = R * C >= PARALLEL_THRESHOLD and R > 1
    loop = "prange" if parallel else "range"

    # where each input is read: per row (its columns broadcast) or per element
    ind_r = "            " if blocked else "        "
    ind_j = ind_r + "    "
    row_loads, need_rc, sliced = [], False, set()
    elem_index: dict[int, tuple[str, bool]] = {}
    for v in group.inputs:
        own = (1,) * (len(full) - len(v.shape)) + tuple(v.shape)
        ri, rc = _sub_index(own[:len(outer)], outer, "r", "rc")
        ci, cc = _sub_index(own[len(outer):], inner, "j", "jc")
        need_rc |= rc
        n_inner = int(np.prod(own[len(outer):], dtype=np.int64))
        if ri is None or n_inner == 1:
            row_part = ri
        else:
            row_part = f"({ri}) * {n_inner}" if rc else f"{ri} * {n_inner}"
        if ci is None:
            row_loads.append(f"{ind_r}{names[id(v)]}_v = {names[id(v)]}[{row_part or '0'}]")
        elif row_part == f"r * {C}" and ci == "j":   # a row of a full-size input: a slice, indexed by j
            row_loads.append(f"{ind_r}{names[id(v)]}_row = {names[id(v)]}[r * {C}:r * {C} + {C}]")
            elem_index[id(v)] = ("j", False)
            sliced.add(id(v))
        else:
            elem_index[id(v)] = (ci if row_part is None else f"{row_part} + {ci}", cc)

    lines = [header_line(group, params), f"    # {' -> '.join(v.op for v in group.values)}; "
             f"{R} rows of {C} ({group.shape})"]
    acc_init = {"sum": "0", "max": "-np.inf", "min": "np.inf"}

    def combine(v: Value, acc: str, x: str) -> str:
        return {"sum": f"{acc} + {x}", "max": _maximum(x, acc), "min": _minimum(x, acc)}[v.op]

    for v in col_reds:
        lines.append(f"    {local[id(v)]}_part = np.full(({n_blocks}, {C}), {acc_init[v.op]}, np.{v.dtype.name})")
    if blocked:
        lines.append(f"    for b in {loop}({n_blocks}):")
        lines += [f"        {local[id(v)]}_b = {local[id(v)]}_part[b]" for v in col_reds]
        rb = rows_per_block
        lines.append(f"        for r in range(b * {rb}, min(b * {rb} + {rb}, {R})):")
    else:
        lines.append(f"    for r in {loop}({R}):")
    if need_rc:
        lines += _coords("r", outer, "rc", ind_r)
    lines += row_loads
    # (rows as slices: an index the loop variable j itself is one numba knows is not negative)
    lines += [f"{ind_r}{outs[id(v)]}_row = {outs[id(v)]}[r * {C}:r * {C} + {C}]" for v in group.outputs
              if is_full(v)]

    def inner_loop(targets: list[Value], store: bool) -> list[str]:
        """One loop over the columns computing what ``targets`` read (in program order)."""
        needed: set[int] = set()

        def visit(v: Value) -> None:
            for a in v.inputs():
                if id(a) in needed:
                    continue
                if id(a) in elem_index or (id(a) in members and is_full(a)):
                    needed.add(id(a))
                    if id(a) in members:
                        visit(a)
        for t in targets:
            if is_full(t):
                needed.add(id(t))
            visit(t)
        body = [f"{ind_r}for j in range({C}):"]
        if any(elem_index[id(v)][1] for v in group.inputs if id(v) in needed and id(v) in elem_index):
            body += _coords("j", inner, "jc", ind_j)
        for v in group.inputs:
            if id(v) in needed and id(v) in elem_index:
                src = f"{names[id(v)]}_row[j]" if id(v) in sliced else f"{names[id(v)]}[{elem_index[id(v)][0]}]"
                body.append(f"{ind_j}{local[id(v)]} = {src}")
        for v in group.values:
            if id(v) in needed:
                body.append(f"{ind_j}{local[id(v)]} = {_expr(v, local, local_dtype, True, trig=False)}")
                if store and id(v) in outs:
                    body.append(f"{ind_j}{outs[id(v)]}_row[j] = {local[id(v)]}")
        for t in targets:
            if t.kind != "reduction":
                continue
            x = local[id(t.args[0])]
            x = x if local_dtype[id(t.args[0])] == t.dtype else f"np.{t.dtype.name}({x})"
            acc = local[id(t)] if t.axis == "rows" else f"{local[id(t)]}_b[j]"
            body.append(f"{ind_j}{acc} = {combine(t, acc, x)}")
        return body

    for p in range(n_phases + 1):
        if p > 0:
            reds = [v for v in group.values if v.kind == "reduction" and v.axis == "rows" and phase[id(v)] == p]
            lines += [f"{ind_r}{local[id(v)]} = np.{v.dtype.name}({acc_init[v.op]})" for v in reds]
            lines += inner_loop(reds, store=False)
        for v in group.values:
            if phase.get(id(v)) == p:
                if v.kind == "pointwise":
                    lines.append(f"{ind_r}{local[id(v)]} = {_expr(v, local, local_dtype, True, trig=False)}")
                if id(v) in outs:
                    lines.append(f"{ind_r}{outs[id(v)]}[r] = {local[id(v)]}")
    finals = [v for v in group.values if (is_full(v) and id(v) in outs) or v in col_reds]
    if finals:
        lines += inner_loop(finals, store=True)
    for v in col_reds:
        part = f"{local[id(v)]}_part"
        lines += [f"    for j in range({C}):",
                  f"        acc = {part}[0, j]",
                  f"        for b in range(1, {n_blocks}):",
                  f"            acc = {combine(v, 'acc', f'{part}[b, j]')}",
                  f"        {outs[id(v)]}[j] = acc"]
    src = "\n".join(lines) + "\n"
    sig = "void(" + ", ".join(f"{_NUMBA_TYPE[v.dtype.name]}[::1]" for v in group.inputs + group.outputs) + ")"
    return src, sig


def kernel_source(group: FusionGroup, serial: bool = False) -> tuple[str, str]:
    """The Python source of ``group``'s kernel, and its numba signature string (``serial``: with no
    ``prange``, for one thread: numba's parallel loops cost a 4M float32 sin -> exp -> tanh chain 15%
    at one thread)."""
    if group.geometry is not None:
        return row_kernel_source(group)
    shape, n = group.shape, int(np.prod(group.shape, dtype=np.int64))
    names = {id(v): f"in{k}" for k, v in enumerate(group.inputs)}
    outs = {id(v): f"out{k}" for k, v in enumerate(group.outputs)}
    params = [names[id(v)] for v in group.inputs] + [outs[id(v)] for v in group.outputs]
    parallel = n >= PARALLEL_THRESHOLD and not serial
    loop = "prange" if parallel else "range"
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
    # a broadcast input needs the coordinates of i: one loop per dimension (c0, c1, ...), the flat index
    # computed from them, so that the innermost loop runs along contiguous memory (a quotient and a
    # remainder per element and dimension cost more than the arithmetic of a small kernel)
    heads = _loop_heads(shape, loop) if need_coords else [f"    for i in {loop}({n}):"]
    pad = "    " if need_coords else ""
    body += loads

    stages, carried, held = _stages(group, outs)
    fast = [_values_body(group, names, outs, True, vs, c, held) for vs, c in zip(stages, carried)]
    n_trig = sum(k for _, k in fast)
    lines = [header_line(group, params), f"    # {' -> '.join(v.op for v in group.values)}; shape {shape}"]
    counters: list[str] = []   # per sin/cos, the count of its arguments too large for the fast functions
    blocked = len(fast) > 1 and not need_coords
    if blocked:
        # the loops one after the other over each block of BLOCK elements, so that what one leaves for the next
        # is still in the cache (the block's bounds unsigned: a signed index gets a negative-index check
        # that stops LLVM vectorising the loop)
        lines.append(f"    for b in {loop}({-(-n // BLOCK)}):")
        lines.append(f"        lo = np.uint64(b * {BLOCK})")
        lines.append(f"        hi = np.uint64(min(b * {BLOCK} + {BLOCK}, {n}))")
    for fast_body, _ in fast:
        renamed = []
        for x in fast_body:
            if "big_ +=" in x:
                counters.append(f"big{len(counters)}")
                lines.insert(2, f"    {counters[-1]} = 0")
                x = x.replace("big_ +=", f"{counters[-1]} +=")
            renamed.append(x)
        if blocked:
            lines += ["        for i in range(lo, hi):", *["    " + x for x in body + renamed]]
        else:
            lines += [*heads, *[pad + x for x in body + renamed]]
    if counters:
        lines.append(f"    big = {' + '.join(counters)}")
    if n_trig:
        slow_body, _ = _values_body(group, names, outs, fast=False)
        lines += ["    if big:  # sin/cos arguments beyond TRIG_LIMIT: again with the C library's",
                  *["    " + x for x in heads], *["    " + pad + x for x in body + slow_body]]
    src = "\n".join(lines) + "\n"
    sig = "void(" + ", ".join(f"{_NUMBA_TYPE[v.dtype.name]}[::1]" for v in group.inputs + group.outputs) + ")"
    return src, sig


def _loop_heads(shape: tuple[int, ...], loop: str) -> list[str]:
    """Two nested loops over ``shape``: the outer one (``loop``: ``prange`` or ``range``) over its rows (all
    dimensions but the last, flattened), with the coordinates ``c0, c1, ...`` of the row; the inner one
    along the last dimension; then the flat row-major index ``i``."""
    *lead, last = shape
    rows = int(np.prod(lead, dtype=np.int64)) if lead else 1
    heads = [f"    for o in {loop}({rows}):"]
    rest = "o"   # (a new name per quotient: numba's prange refuses a loop that assigns twice to an alias of o)
    for d in reversed(range(len(lead))):
        if d > 0:
            heads.append(f"        c{d} = {rest} % {lead[d]}")
            heads.append(f"        r{d} = {rest} // {lead[d]}")
            rest = f"r{d}"
        else:
            heads.append(f"        c0 = {rest}")
    k = len(lead)
    heads.append(f"        for c{k} in range({last}):")
    heads.append(f"            i = o * {last} + c{k}")
    return heads


def _wide(group: FusionGroup, source: str) -> bool:
    """Is ``source`` compiled with its loops forced to ``VECTOR_WIDTH`` lanes (``_wide_vectors``)?"""
    return group.geometry is None and any(f"{f}(" in source for f in FAST_FLOAT32.values())


def decorator(group: FusionGroup, source: str) -> str:
    """The ``@njit(...)`` line ``compile_kernel`` compiles ``source`` with, for showing the code."""
    fastmath = FASTMATH if group.geometry is None else REDUCTION_FASTMATH
    line = f"@njit(parallel={'prange(' in source}, fastmath={sorted(fastmath)!r})"
    if _wide(group, source):
        line += f"  # LLVM told: {VECTOR_WIDTH} SIMD lanes per loop (codegen._wide_vectors)"
    return line


_LLVM_LOCK = threading.Lock()

#: how long an idle OpenMP worker of numba's thread pool spins before it sleeps (libgomp's default is 300000)
GOMP_SPINCOUNT = "10000"
_threads_started = False


def start_threads() -> None:
    """Start numba's thread pool (once), its OpenMP workers spinning ``GOMP_SPINCOUNT`` times when idle.

    A compiled program alternates numba's kernels with numpy's BLAS calls (matmuls, convolutions),
    which run on OpenBLAS's own threads. libgomp's workers spin 300000 times (its default) after every
    parallel kernel, and on a machine with as many cores as threads they take the cores BLAS needs:
    the small ResNet training step took 219-242 ms compiled at 2 threads with the default, 176-190 ms
    with 10000 spins (156-176 ms eager); back-to-back kernels still find the workers awake (a launch
    stays at 2 us). libgomp reads the variable once, when it is loaded, so it is set for that
    moment only, and only when neither ``GOMP_SPINCOUNT`` nor ``OMP_WAIT_POLICY`` is set already.
    It does nothing when the pool runs already, or when libgomp was loaded before (by torch)."""
    global _threads_started
    if _threads_started:
        return
    _threads_started = True
    from numba.np.ufunc import parallel
    if parallel._is_initialized:
        return
    ours = "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ
    if ours:
        os.environ["GOMP_SPINCOUNT"] = GOMP_SPINCOUNT
    try:
        parallel._launch_threads()
    finally:
        if ours:
            del os.environ["GOMP_SPINCOUNT"]


@contextlib.contextmanager
def _wide_vectors(width: int):
    """LLVM's loop vectoriser told to use ``width`` lanes while numba compiles (eagerly) in this block.

    Left to its cost model, LLVM vectorises loops of libm's float32 sin/exp/tanh badly: the seed's 4M
    float32 chain takes 9.4 ms at one thread, 10.2 ms forced to 8 lanes and 4.4 ms forced to 16 (on a CPU
    with 512-bit registers, which LLVM is tuned to leave half used).  The option is global to LLVM, so it
    is set for this compilation only, under a lock.  While it is set, LLVM prints a remark for every loop
    it still cannot vectorise (numba's own loops that call functions): those are dropped from stderr,
    anything else written there is passed on."""
    import llvmlite.binding as llvm
    with _LLVM_LOCK:
        if sys.stderr is not None:
            sys.stderr.flush()
        try:
            saved = os.dup(2)
        except OSError:   # no stderr to capture
            saved = None
        captured = tempfile.TemporaryFile() if saved is not None else None
        if captured is not None:
            os.dup2(captured.fileno(), 2)
        llvm.set_option("", f"--force-vector-width={width}")
        try:
            yield
        finally:
            llvm.set_option("", "--force-vector-width=0")
            if captured is not None:
                os.dup2(saved, 2)
                os.close(saved)
                captured.seek(0)
                text = captured.read().decode(errors="replace")
                captured.close()
                rest = [line for line in text.splitlines(keepends=True) if not line.startswith("remark: ")]
                if rest and sys.stderr is not None:
                    sys.stderr.write("".join(rest))


#: compiled kernels by (source, signature): a kernel generated again is not compiled again
_KERNELS: dict[tuple[str, str, bool], Callable] = {}


def compile_kernel(group: FusionGroup, source: str, signature: str) -> Callable:
    """Compile ``source`` with numba (eagerly, for ``signature``); reused when compiled before."""
    key = (source, signature, group.geometry is None)
    if key in _KERNELS:
        return _KERNELS[key]
    import math

    import numba

    from . import libm
    namespace: dict[str, Any] = {"np": np, "math": math, "prange": numba.prange, "TRIG_LIMIT": libm.TRIG_LIMIT,
                                 **{f: getattr(libm, f) for f in FAST_FLOAT32.values()}}
    code = compile(source, f"<course_lib._inductor {group.name}>", "exec")
    exec(code, namespace)
    parallel = "prange(" in source
    if parallel:
        start_threads()   # (compiling a parallel loop loads the thread pool's library)
    fastmath = FASTMATH if group.geometry is None else REDUCTION_FASTMATH
    jit = numba.njit(signature, parallel=parallel, fastmath=fastmath, error_model="numpy", cache=False)
    if _wide(group, source):
        with _wide_vectors(VECTOR_WIDTH):
            kernel = jit(namespace[group.name])
    else:
        kernel = jit(namespace[group.name])
    _KERNELS[key] = kernel
    return kernel
