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
from .._dtype import _BY_NP
from .._ops.common import like_sequence
from .._ops.common import wrap as _wrap
from .._parallel import get_num_threads
from .._storage import Storage
from ..fx.graph_module import GraphModule
from ..fx.passes.shape_prop import ShapeProp
from .codegen import compile_kernel, decorator, kernel_source, start_threads
from .decomposition import lower
from .ir import Value
from .scheduler import ExternStep, FusionGroup, schedule

__all__ = ["compile_fx", "CompiledFxGraph"]


def _np(t: Tensor) -> np.ndarray:
    a = t._np_cache        # (the cached array of a tensor with values: the hot path of every call)
    return a if a is not None and t._storage.data is not None else t.numpy(force=True)


def _flat(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1)


def _to_tensor(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        if a.flags.c_contiguous and a.dtype.kind in "fbiuc":
            return _wrap(a)   # the array becomes the storage (no copy), the cheapest way in
        if a.ndim == 2 and a.size and a.dtype.kind in "fbiuc" and a.T.flags.c_contiguous:
            # a transposed matrix (``t`` of a weight, saved for the backward): from_numpy's layout, faster
            b = a.T
            st = Storage(b.reshape(-1), _BY_NP[a.dtype], owner=b)
            isz = a.itemsize
            return Tensor._make(st, 0, a.shape, (a.strides[0] // isz, a.strides[1] // isz), st.dtype)
        from .. import from_numpy
        return from_numpy(a)
    if isinstance(a, (list, tuple)):
        return like_sequence(a, [_to_tensor(x) for x in a])
    return a


def _from_tensor(r: Any) -> Any:
    if isinstance(r, Tensor):
        return _np(r)
    if isinstance(r, (list, tuple)):
        return like_sequence(r, [_from_tensor(x) for x in r])
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
                 n_groups: int, n_externs: int, mode: str | None = None) -> None:
        self.mode = mode
        self.buffers: list[np.ndarray] = namespace["_buffers"]   # reduce-overhead: the reused buffers
        self.wrapper_source = wrapper_source
        self.kernel_sources = kernel_sources
        self.n_kernels = n_groups
        self.n_externs = n_externs
        self._call = namespace["call"]
        self._namespace = namespace
        #: kernels with parallel loops, by name: the group (for its one-thread variant) and the kernel
        self._parallel: dict[str, tuple[FusionGroup, Any]] = namespace["_parallel_kernels"]
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
            start_threads()
            numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))
            self._threads = n
            for name, (group, kernel) in self._parallel.items():   # one thread: the kernel without prange
                if n == 1:
                    kernel = compile_kernel(group, *kernel_source(group, serial=True))
                self._namespace[name] = kernel
        return self._call(args)


def _ensure_meta(gm: GraphModule, example_inputs: Sequence[Any]) -> None:
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "call_function", "get_attr") and "tensor_meta" not in node.meta:
            ShapeProp(gm).propagate(*example_inputs)
            return


MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile_fx(gm: GraphModule, example_inputs: Sequence[Any], mode: str | None = None) -> CompiledFxGraph:
    """Compile ``gm`` into fused numba kernels plus calls of course_lib's kernels for the rest.

    ``mode="reduce-overhead"``: the intermediate buffers are allocated on the first call and reused
    by every later one; a result gets a new buffer on every call (the caller owns it: AccumulateGrad
    takes a gradient without copying it), and views, matmuls and ``addmm`` are numpy calls in the wrapper (``out=`` a
    buffer) instead of course_lib's dispatcher.  ``"max-autotune"`` compiles as the default does
    (there is nothing to tune here)."""
    if mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(str(m) for m in MODES if m is not None)}")
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
    values = _live(values, out_values)
    steps = schedule(values, out_values)

    namespace: dict[str, Any] = {"np": np, "_flat": _flat, "_np": _np, "_call_extern": _call_extern,
                                 "_from_numpy": _to_tensor}
    kernel_sources: list[str] = []
    parallel_kernels: dict[str, tuple[FusionGroup, Any]] = {}
    for s in steps:
        if isinstance(s, FusionGroup) and 0 not in s.shape:
            src, sig = kernel_source(s)
            kernel_sources.append(f"{decorator(s, src)}\n{src}")
            namespace[s.name] = compile_kernel(s, src, sig)
            if s.geometry is None and "prange(" in src:
                parallel_kernels[s.name] = (s, namespace[s.name])
    namespace["_parallel_kernels"] = parallel_kernels

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

    reuse_buffers = mode == "reduce-overhead"
    lines = ["def call(args):"]
    if reuse_buffers:
        lines += ["    B = _buffers", "    if not B:  # the first call allocates every buffer; later calls reuse them",
                  "        B.extend(np.empty(n, dt) for n, dt in _sizes)"]
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
    sizes: list[tuple[int, np.dtype]] = []
    n_buf = n_ext = 0

    def flat_of(v: Value) -> str:
        if id(v) not in flat:
            flat[id(v)] = f"{arr[id(v)]}_flat"
            lines.append(f"    {flat[id(v)]} = _flat({arr[id(v)]})")
        return flat[id(v)]

    def alloc(v: Value) -> str:
        """A buffer for ``v``: a dead one of its size, else a new one (or, reusing, the next slot)."""
        nonlocal n_buf
        key = (v.numel, v.dtype.name)
        name = f"buf{n_buf}"
        n_buf += 1
        is_result = id(root[id(v)]) in keep
        if free.get(key) and not (reuse_buffers and is_result):
            lines.append(f"    {name} = {free[key].pop()}  # reuse (dead after its last read)")
        elif reuse_buffers and not is_result:
            slot = len(sizes)
            sizes.append((v.numel, v.dtype))
            lines.append(f"    {name} = B[{slot}]")
        else:
            # a result is the caller's from now on (a gradient becomes .grad without a copy, as
            # AccumulateGrad steals a tensor nobody else holds): a new buffer on every call
            lines.append(f"    {name} = np.empty({v.numel}, np.{v.dtype.name})")
        flat[id(v)] = name
        arr[id(v)] = f"{name}.reshape({v.shape!r})"
        return name

    write_backs: list[str] = []
    for k, s in enumerate(steps):
        if isinstance(s, FusionGroup):
            ins = [flat_of(v) for v in s.inputs]
            outs = []
            for v in s.outputs:
                if v.writes is not None:   # an in-place op on an input: the kernel stores into its memory
                    a = arr[id(v.writes)]
                    name = f"w{v.writes.index}"
                    lines.append(f"    {name} = _inplace_flat({a})  # overwrites args[{v.writes.index}]")
                    write_backs.append(f"    _write_back({a}, {name})")
                    flat[id(v)], arr[id(v)] = name, a
                    outs.append(name)
                else:
                    outs.append(alloc(v))
            if 0 not in s.shape:   # (a group of no elements has nothing to compute)
                lines.append(f"    {s.name}({', '.join(ins + outs)})")
            lines += write_backs
            write_backs.clear()
        else:
            v = s.value
            direct = _numpy_extern(v, arr, alloc) if reuse_buffers else None
            if direct is not None:
                lines += [f"    {x}" for x in direct]
            elif v.kind == "getitem":
                lines.append(f"    e{n_ext} = {arr[id(v.args[0])]}[{v.index}]")
            else:
                namespace[f"op{n_ext}"] = v.target
                call = f"_call_extern(op{n_ext}, {_fmt_args(v.args, arr, namespace)})"
                lines.append(f"    e{n_ext} = {call}  # {v.target.name}")
            if direct is None:
                arr[id(v)] = f"e{n_ext}"
                n_ext += 1
        for v in values:   # buffers whose last read was this step are free from now on
            if (step_of_use.get(id(v)) == k and root[id(v)] is v and id(v) not in keep
                    and id(v) in flat and flat[id(v)].startswith("buf")):
                free.setdefault((v.numel, v.dtype.name), []).append(flat[id(v)])
    lines.append(f"    return {_fmt_out(output, arr, values)}")
    wrapper = "\n".join(lines) + "\n"
    namespace.update(_buffers=[], _sizes=sizes, _inplace_flat=_inplace_flat,
                     _write_back=_write_back, _nll_forward=_nll_forward, _nll_backward=_nll_backward)
    exec(compile(wrapper, "<course_lib._inductor wrapper>", "exec"), namespace)
    n_groups = sum(isinstance(s, FusionGroup) for s in steps)
    return CompiledFxGraph(wrapper, kernel_sources, namespace, n_groups, len(steps) - n_groups, mode)


def _live(values: list[Value], outputs: list[Value]) -> list[Value]:
    """Dead-code elimination: the Values an output, an in-place write or an extern's side effect reads."""
    live = set(map(id, outputs))
    for v in reversed(values):
        effect = v.writes is not None or (v.kind == "extern" and (
            v.target.name.endswith("_") or bool(getattr(v.target, "is_inplace", False))
            or getattr(v.target, "kind", "") in ("random", "io")))
        if id(v) in live or effect or v.kind == "input":
            live.add(id(v))
            live.update(map(id, v.inputs()))
    kept = [v for v in values if id(v) in live]
    for v in kept:
        v.users = [u for u in v.users if id(u) in live]
    return kept


def _inplace_flat(a: np.ndarray) -> np.ndarray:
    """Where a kernel writes a new value of ``a``: ``a`` itself, flattened, if contiguous."""
    return a.reshape(-1) if a.flags.c_contiguous else np.empty(a.size, a.dtype)


def _write_back(a: np.ndarray, flat: np.ndarray) -> None:
    if not a.flags.c_contiguous:
        np.copyto(a, flat.reshape(a.shape))


#: extern ops whose result is a reshape of their first argument
_RESHAPES = {"view", "_unsafe_view", "reshape", "squeeze", "unsqueeze", "flatten", "unflatten", "view_as",
             "reshape_as"}


def _numpy_extern(v: Value, arr: dict[int, str], alloc: Any) -> list[str] | None:
    """Lines computing extern ``v`` with numpy directly (reduce-overhead), or None for course_lib's kernel."""
    if v.kind != "extern" or (v.target.name != "nll_loss_forward" and (v.dtype is None or v.dtype.kind != "f")):
        return None
    name, args = v.target.name, v.args
    if name == "nll_loss_forward" and _plain_nll(args, 3):
        arr[id(v)] = out = f"r{v.name}"
        return [f"{out} = _nll_forward({arr[id(args[0])]}, {arr[id(args[1])]}, {args[3]!r}, {args[4]!r})"
                f"  # nll_loss_forward"]
    x = args[0] if args and isinstance(args[0], Value) else None
    if x is None or x.dtype != v.dtype:
        return None
    a = arr[id(x)]
    out = f"r{v.name}"
    if name in _RESHAPES:
        expr = f"{a}.reshape({v.shape!r})"
    elif name == "t":
        expr = f"{a}.T"
    elif name == "transpose" and len(args) == 3:
        expr = f"np.swapaxes({a}, {args[1]!r}, {args[2]!r})"
    elif name == "permute" and len(args) == 2:
        expr = f"np.transpose({a}, {tuple(args[1])!r})"
    elif name == "expand":
        expr = f"np.broadcast_to({a}, {v.shape!r})"
    elif name in ("mm", "bmm", "matmul") and len(args) == 2 and isinstance(args[1], Value) and args[1].dtype == v.dtype:
        buf = alloc(v)
        arr[id(v)] = out
        fn = _matmul_fn(x, args[1])
        return [f"{out} = {fn}({a}, {arr[id(args[1])]}, out={buf}.reshape({v.shape!r}))  # {name}"]
    elif (name == "addmm" and all(isinstance(t, Value) and t.dtype == v.dtype for t in args[:3])
          and tuple(args[3:]) in ((), (1,), (1, 1)) and len(v.shape) == 2):
        buf = alloc(v)
        arr[id(v)] = out
        fn = _matmul_fn(args[1], args[2])
        return [f"{out} = {fn}({arr[id(args[1])]}, {arr[id(args[2])]}, out={buf}.reshape({v.shape!r}))  # addmm",
                f"{out} += {a}"]
    elif name == "nll_loss_backward" and _plain_nll(args[1:], 3) and isinstance(args[6], Value):
        buf = alloc(v)
        arr[id(v)] = out
        t, r = arr[id(args[2])], args[4]
        return [f"{out} = _nll_backward({a}, {t}, {arr[id(args[6])]}, {r!r}, {args[5]!r}, "
                f"{buf}.reshape({v.shape!r}))  # nll_loss_backward"]
    else:
        return None
    arr[id(v)] = out
    return [f"{out} = {expr}  # {name}"]


def _matmul_fn(a: Value, b: Value) -> str:
    """``np.dot`` for two matrices (the same BLAS call as ``np.matmul``, 0.25-0.45 us less per call on the
    small matrices of an overhead-bound step), ``np.matmul`` for batches."""
    return "np.dot" if len(a.shape) == 2 and len(b.shape) == 2 else "np.matmul"


def _plain_nll(args: tuple, weight_at: int) -> bool:
    """nll_loss on (N, C) log-probabilities and (N,) int64 targets, no class weights, mean or sum."""
    x, t = args[0], args[1]
    return (isinstance(x, Value) and isinstance(t, Value) and len(x.shape) == 2 and t.shape == x.shape[:1]
            and t.dtype == np.int64 and args[weight_at - 1] is None and args[weight_at] in (1, 2))


_NLL: dict[str, Any] = {}


def _nll_kernels() -> dict[str, Any]:
    """Two small numba loops for ``nll_loss`` forward and backward (a training step's loss is a handful of
    numpy calls otherwise, each with its own overhead).  They return the first out-of-range row, or -1."""
    if not _NLL:
        from numba import njit

        @njit(nogil=True)
        def forward(x, t, ignore_index):  # pragma: no cover - compiled by numba
            n, c = x.shape
            s = 0.0
            total = 0
            for i in range(n):
                ti = t[i]
                if ti == ignore_index:
                    continue
                if ti < 0 or ti >= c:
                    return s, total, i
                s -= x[i, ti]
                total += 1
            return s, total, -1

        @njit(nogil=True)
        def backward(coef, t, ignore_index, out):  # pragma: no cover - compiled by numba
            n, c = out.shape
            for i in range(n):
                ti = t[i]
                if ti != ignore_index and (ti < 0 or ti >= c):
                    return i
            for i in range(n):
                for j in range(c):
                    out[i, j] = 0
                ti = t[i]
                if ti != ignore_index:
                    out[i, ti] = coef
            return -1
        _NLL["forward"], _NLL["backward"] = forward, backward
    return _NLL


def _nll_forward(x: np.ndarray, t: np.ndarray, reduction: int, ignore_index: int) -> tuple[np.ndarray, np.ndarray]:
    """``nll_loss_forward`` for ``_plain_nll`` arguments: (loss, total weight)."""
    s, n, bad = _nll_kernels()["forward"](x, t, ignore_index)
    if bad >= 0:
        raise IndexError(f"Target {t[bad]} is out of bounds.")
    total = np.asarray(n, x.dtype)
    loss = np.asarray(s, x.dtype)
    if reduction == 1:   # (every target ignored: 0 / 0, eager's NaN, without numpy's warning)
        loss = np.asarray(loss / total if n else np.nan, x.dtype)
    return loss, total


def _nll_backward(g: np.ndarray, t: np.ndarray, total: np.ndarray, reduction: int, ignore_index: int,
                  out: np.ndarray) -> np.ndarray:
    """``nll_loss_backward`` for ``_plain_nll`` arguments, into ``out``."""
    coef = -np.asarray(g, out.dtype).reshape(())
    if reduction == 1 and total:   # (a total of 0: every target ignored, and coef is written nowhere)
        coef = coef / total
    bad = _nll_kernels()["backward"](coef.item(), t, ignore_index, out)
    if bad >= 0:
        raise IndexError(f"Target {t[bad]} is out of bounds.")
    return out


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
        if o.kind == "input" or o.writes is not None:
            return f"args[{(o.writes or o).index}]"
        return f"_from_numpy({arr[id(o)]})"
    if isinstance(o, (list, tuple)):
        inner = ", ".join(_fmt_out(x, arr, values) for x in o)
        return f"[{inner}]" if isinstance(o, list) else f"({inner}{',' if len(o) == 1 else ''})"
    return repr(o)
