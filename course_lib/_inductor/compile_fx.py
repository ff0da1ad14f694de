"""``compile_fx(gm, example_inputs)``: the backend's entry point.

In PyTorch: ``torch/_inductor/compile_fx.py``.  The steps: make sure every node has its shape
and dtype (``ShapeProp`` on the example inputs if tracing did not record them), lower to the
primitive set (``decomposition.lower``), group into kernels (``scheduler.schedule``), generate
and compile each kernel (``codegen``), and generate the wrapper: a Python function that
allocates the buffers (reusing a dead buffer of the same size and dtype instead of allocating
a new one), calls the kernels and the extern ops in order, and returns tensors.
``CompiledFxGraph.source`` is all the generated code; ``print_code()`` prints it.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import Tensor
from .._parallel import get_num_threads
from ..fx.graph_module import GraphModule
from ..fx.passes.shape_prop import ShapeProp
from .codegen import compile_kernel, decorator, kernel_source
from .decomposition import lower
from .ir import Value
from .scheduler import ExternStep, FusionGroup, schedule

__all__ = ["compile_fx", "CompiledFxGraph"]


def _np(t: Tensor) -> np.ndarray:
    return t.numpy(force=True)


def _flat(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1)


def _to_tensor(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        from .. import from_numpy
        return from_numpy(a)
    if isinstance(a, (list, tuple)):
        return type(a)(_to_tensor(x) for x in a)
    return a


def _from_tensor(r: Any) -> Any:
    if isinstance(r, Tensor):
        return _np(r)
    if isinstance(r, (list, tuple)):
        return type(r)(_from_tensor(x) for x in r)
    return r


def _call_extern(op: Any, args: tuple) -> Any:
    """Run a registry op on numpy arrays (as tensors sharing their memory); numpy results."""
    return _from_tensor(op(*_to_tensor(args)))


#: ops whose result may share memory with an argument: a buffer they read stays alive while it lives
def _may_alias(v: Value) -> bool:
    return v.kind == "getitem" or (v.kind == "extern" and (
        getattr(v.target, "kind", "") in ("view", "copy") or bool(getattr(v.target, "is_view", False))
        or v.target.name.endswith("_") or v.target.name in _ALIASING))


_ALIASING = {"reshape", "contiguous", "flatten", "unflatten", "expand", "expand_as", "broadcast_to", "movedim",
             "squeeze", "unsqueeze", "t", "transpose", "permute", "select", "slice", "narrow", "diagonal",
             "unbind", "split", "chunk", "as_strided", "alias", "detach", "view", "_unsafe_view", "unfold"}


class CompiledFxGraph:
    """The compiled program: call it like the GraphModule's ``forward``; ``source`` is its code."""

    def __init__(self, wrapper_source: str, kernel_sources: list[str], namespace: dict[str, Any],
                 n_groups: int, n_externs: int) -> None:
        self.wrapper_source = wrapper_source
        self.kernel_sources = kernel_sources
        self.n_kernels = n_groups
        self.n_externs = n_externs
        self._call = namespace["call"]
        self._threads = 0

    @property
    def source(self) -> str:
        """The generated kernels and wrapper, as one readable Python module."""
        header = ("import numpy as np\nfrom numba import njit, prange\n"
                  "from course_lib._inductor.libm import TRIG_LIMIT, cosf, expf, sinf, tanhf")
        return "\n\n".join([header, *self.kernel_sources, self.wrapper_source])

    def print_code(self) -> None:
        print(self.source)

    def __call__(self, *args: Any) -> Any:
        n = get_num_threads()
        if n != self._threads:
            import numba
            numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))
            self._threads = n
        return self._call(args)


def _ensure_meta(gm: GraphModule, example_inputs: Sequence[Any]) -> None:
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "call_function", "get_attr") and "tensor_meta" not in node.meta:
            ShapeProp(gm).propagate(*example_inputs)
            return


def compile_fx(gm: GraphModule, example_inputs: Sequence[Any]) -> CompiledFxGraph:
    """Compile ``gm`` into fused numba kernels plus calls of course_lib's kernels for the rest."""
    _ensure_meta(gm, example_inputs)
    lowering, output = lower(gm)
    values = lowering.values
    out_values: list[Value] = []

    def collect(o: Any) -> None:
        if isinstance(o, Value):
            out_values.append(o)
        elif isinstance(o, (list, tuple)):
            for x in o:
                collect(x)
    collect(output)
    steps = schedule(values, out_values)

    namespace: dict[str, Any] = {"np": np, "_flat": _flat, "_np": _np, "_call_extern": _call_extern,
                                 "_from_numpy": _to_tensor}
    kernel_sources: list[str] = []
    for s in steps:
        if isinstance(s, FusionGroup):
            src, sig = kernel_source(s)
            kernel_sources.append(f"{decorator(s, src)}\n{src}")
            namespace[s.name] = compile_kernel(s, src, sig)

    # liveness: the step after which each value is last read (through aliases, by the root buffer)
    root: dict[int, Value] = {}
    for v in values:
        ins = v.inputs()
        root[id(v)] = root[id(ins[0])] if _may_alias(v) and len(ins) == 1 else v
    step_of_use: dict[int, int] = {}
    alias_groups: dict[int, list[Value]] = {}
    for v in values:
        alias_groups.setdefault(id(root[id(v)]), []).append(v)
    for k, s in enumerate(steps):
        reads = s.inputs if isinstance(s, FusionGroup) else s.value.inputs()
        for a in reads:
            step_of_use[id(root[id(a)])] = k
            if _may_alias(s.value if isinstance(s, ExternStep) else a):
                for b in reads:   # a multi-input view-like op: keep every input alive with the result
                    step_of_use[id(root[id(b)])] = max(step_of_use.get(id(root[id(b)]), k), k)
    keep = {id(root[id(v)]) for v in out_values}
    for v in values:   # a value read by a later alias of its root keeps the root alive
        r = id(root[id(v)])
        if r in step_of_use and id(v) in step_of_use:
            step_of_use[r] = max(step_of_use[r], step_of_use[id(v)])

    lines = ["def call(args):"]
    arr: dict[int, str] = {}     # value -> expression of its array (its shape)
    flat: dict[int, str] = {}    # value -> name of its flat contiguous array
    n_const = 0
    for v in values:
        if v.kind == "input" and v.dtype is not None:
            arr[id(v)] = f"a{v.index}"
            lines.append(f"    a{v.index} = _np(args[{v.index}])")
        elif v.kind == "constant":
            namespace[f"const{n_const}"] = v.target
            arr[id(v)] = f"c{n_const}"
            lines.append(f"    c{n_const} = _np(const{n_const})")
            n_const += 1
    free: dict[tuple[int, str], list[str]] = {}
    n_buf = n_ext = 0

    def flat_of(v: Value) -> str:
        if id(v) not in flat:
            flat[id(v)] = f"{arr[id(v)]}_flat"
            lines.append(f"    {flat[id(v)]} = _flat({arr[id(v)]})")
        return flat[id(v)]

    for k, s in enumerate(steps):
        if isinstance(s, FusionGroup):
            ins = [flat_of(v) for v in s.inputs]
            outs = []
            for v in s.outputs:
                key = (v.numel, v.dtype.name)
                if free.get(key):
                    name = free[key].pop()
                    lines.append(f"    buf{n_buf} = {name}  # reuse (dead after its last read)")
                else:
                    lines.append(f"    buf{n_buf} = np.empty({v.numel}, np.{v.dtype.name})")
                name = f"buf{n_buf}"
                n_buf += 1
                flat[id(v)] = name
                arr[id(v)] = f"{name}.reshape({v.shape!r})"
                outs.append(name)
            lines.append(f"    {s.name}({', '.join(ins + outs)})")
        else:
            v = s.value
            if v.kind == "getitem":
                lines.append(f"    e{n_ext} = {arr[id(v.args[0])]}[{v.index}]")
            else:
                namespace[f"op{n_ext}"] = v.target
                lines.append(f"    e{n_ext} = _call_extern(op{n_ext}, {_fmt_args(v.args, arr, namespace)})  # {v.target.name}")
            arr[id(v)] = f"e{n_ext}"
            n_ext += 1
        for v in values:   # buffers whose last read was this step are free from now on
            if (step_of_use.get(id(v)) == k and root[id(v)] is v and id(v) not in keep
                    and id(v) in flat and flat[id(v)].startswith("buf")):
                free.setdefault((v.numel, v.dtype.name), []).append(flat[id(v)])
    lines.append(f"    return {_fmt_out(output, arr, values)}")
    wrapper = "\n".join(lines) + "\n"
    exec(compile(wrapper, "<course_lib._inductor wrapper>", "exec"), namespace)
    n_groups = sum(isinstance(s, FusionGroup) for s in steps)
    return CompiledFxGraph(wrapper, kernel_sources, namespace, n_groups, len(steps) - n_groups)


def _fmt_args(args: Any, arr: dict[int, str], namespace: dict[str, Any]) -> str:
    def f(a: Any) -> str:
        if isinstance(a, Value):
            return arr[id(a)]
        if isinstance(a, list):
            return "[" + ", ".join(f(x) for x in a) + "]"
        if isinstance(a, tuple):
            return "(" + "".join(f(x) + ", " for x in a) + ")"
        return _literal(a, namespace)
    return f(tuple(args))


def _literal(a: Any, namespace: dict[str, Any]) -> str:
    """``a`` as source: its repr when that reads back as ``a``, else a name bound to it (a dtype)."""
    if a is None or isinstance(a, (bool, int, str)) or (isinstance(a, float) and np.isfinite(a)):
        return repr(a)
    name = f"k{sum(k.startswith('k') and k[1:].isdigit() for k in namespace)}"
    namespace[name] = a
    return name


def _fmt_out(o: Any, arr: dict[int, str], values: list[Value]) -> str:
    if isinstance(o, Value):
        if o.kind == "input":
            return f"args[{o.index}]"
        return f"_from_numpy({arr[id(o)]})"
    if isinstance(o, (list, tuple)):
        inner = ", ".join(_fmt_out(x, arr, values) for x in o)
        return f"[{inner}]" if isinstance(o, list) else f"({inner}{',' if len(o) == 1 else ''})"
    return repr(o)
