"""Capture while the Python runs: lazy tensors, graph breaks, and the cache of recorded calls.

In PyTorch: ``torch/_dynamo`` reads a frame's *bytecode* and symbolically runs it; a graph break
compiles the graph so far and makes a resume function of the rest.  course_lib captures one level
lower, at the dispatcher, the way LazyTensor does, so nothing depends on the Python version:

- A compiled call runs the user's Python for real under ``Capture``, a dispatch mode.  Each op that
  reaches the dispatcher is *recorded* instead of computed: its result is a *lazy tensor*, a real
  ``Tensor`` whose storage (a ``_LazyStorage``) has no data yet.  The shapes, strides and dtypes come
  from running the op on meta tensors, so shape and dtype errors are raised where eager raises them.
- A real tensor an op reads (an argument, a global, a closure cell, a module's parameter) becomes a
  placeholder of the graph when it is first used.
- **A graph break is a materialisation.**  When Python needs a lazy tensor's values (``if t:``,
  ``.item()``, ``.tolist()``, printing, ``.numpy()``, any read of ``storage.data``, ``.backward()``),
  and at every ``print``, the current graph ends: its outputs are the tensor that forced the break,
  then every other lazy tensor still alive, in node order.  The backend compiles it, it runs on the
  real inputs (outside the mode, so autograd records it), each lazy tensor receives its values and
  its ``grad_fn``, and capture goes on with a fresh graph.  The user's Python always runs, so its side
  effects (prints, appends, attribute writes, exceptions) are those of eager execution.
- Ops that need values run eagerly, after a break if an input is lazy: ops whose output shape
  depends on the data (``nonzero``, boolean-mask ``index``), ops whose errors depend on it (``index``,
  ``gather``, ``embedding``, ``nll_loss``, ...), random ops (so the random stream is drawn in eager
  order), views of real tensors (cheap, and they alias exactly), and in-place ops on real tensors.
  An in-place op on a lazy tensor that owns its storage alone is recorded as its out-of-place twin.
- Grad mode is fixed per graph: an op under another grad mode ends the graph first.

Node targets are the Python-level callables the user wrote where one op came from one call:
``operator.add`` for ``+``, ``call_method sum`` for ``b.sum()``, ``course_lib.abs`` for
``course_lib.abs(a)``; otherwise the registry's op (``aten.mm`` inside ``matmul``).  Arguments that
still have their schema default are left out.  Names follow Dynamo: placeholders ``l_<var>_``
(target ``L_<var>_``), ``g_<var>_`` for globals, ``l_self_modules_lin_parameters_weight_`` for a
module's parameter; while recording, a ``sys.settrace`` line hook on the user's frames renames a node
after the local variable that holds it (Dynamo's ``STORE_FAST`` name hint): ``x``, ``b``.

**The cache** is a tree per code object.  Each ``_Step`` is one op with its *key* (the op, grad mode,
and its arguments: tensors as graph positions, new inputs with their metadata, constants with their
type), its outputs' metadata and its children; each ``_End`` is a graph break after that step, with
the compiled graph and the root of the next graph.  A later call *replays*: each op's key is compared
with the children of the current step; on a match the lazy result is made from the recorded
metadata (no meta run, no graph node).  No match is a failed guard: the call records from there on
(a new branch, compiled at its break: a recompilation), up to ``config.recompile_limit`` branches;
past it the rest of the call runs eagerly, with a warning worded like torch's.
"""
from __future__ import annotations

import builtins
import operator
import os
import sys
import sysconfig
import threading
import time
import traceback
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from .._ops import dispatcher as _dispatcher
from .._ops.common import like_sequence
from .._ops.dispatcher import grad_state
from .._storage import Storage
from .._tensor import Tensor as _Tensor
from .._tensor_base import TensorBase
from .._tensor_base import contiguous_strides as _contiguous
from ..autograd.graph import _FREED, Node, _fresh_copy
from ..utils._python_dispatch import TorchDispatchMode, _defaults, _is_default
from . import guards as _guards
from .config import config

__all__ = ["Capture", "CodeCache", "current_capture", "is_lazy"]

_DATA = Storage.__dict__["data"]
_COURSE_LIB_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIRS = tuple({os.path.abspath(p) + os.sep for p in (sysconfig.get_paths()["stdlib"],
                                                            sysconfig.get_paths()["platstdlib"])})
_tls = threading.local()


def current_capture() -> "Capture | None":
    """The capture running in this thread, or None."""
    return getattr(_tls, "capture", None)


# ---------------------------------------------------------------------------
# lazy storage and tensors
# ---------------------------------------------------------------------------
class _LazyStorage(Storage):
    """A storage whose values are not computed yet: reading ``data`` forces a graph break.

    ``_capture`` is the capture that will fill it (None once filled); ``_root`` is the graph position
    of the op that made it (a view of a lazy tensor shares its base's storage); ``_layout`` is the
    (shape, stride, offset) of that op's result.  ``Capture._lazy`` makes them, setting every slot
    itself (it runs for every op of every call: no ``__init__`` call).
    """

    __slots__ = ("_capture", "_root", "_layout")

    @property
    def data(self):
        cap = self._capture
        if cap is not None:
            cap.graph_break(_reason_from_stack(), self)
        return _DATA.__get__(self)

    @data.setter
    def data(self, value) -> None:
        _DATA.__set__(self, value)

    def __del__(self) -> None:  # the memory belongs to the storage it adopted (its _owner)
        pass


def is_lazy(t: Any) -> bool:
    """Is ``t`` a tensor whose values a running capture has not computed yet?"""
    st = t._storage
    return type(st) is _LazyStorage and st._capture is not None


class _LazyGradFn:
    """The ``grad_fn`` of a lazy tensor that requires grad: using it forces a graph break."""

    __slots__ = ("_ref",)

    def __init__(self, t: TensorBase) -> None:
        object.__setattr__(self, "_ref", weakref.ref(t))

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._real(), name, value)     # (register_hook stores its hooks on the node)

    def _real(self):
        t = self._ref()
        if t is None:
            return None
        cap = current_capture()
        if cap is not None and t.__dict__.get("grad_fn") is self:
            cap.graph_break(("Tensor.grad_fn of a tensor computed in the graph", _user_stack()),
                            t._storage if is_lazy(t) else None)
        return t.grad_fn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    def __call__(self, *args: Any) -> Any:
        return self._real()(*args)

    def __repr__(self) -> str:
        return repr(self._real())


_new_object = object.__new__
_GRAD_FN_REF = _LazyGradFn.__dict__["_ref"]      # (the slot, set directly: __setattr__ is the node's)


def _lazy_grad_fn(ref) -> _LazyGradFn:
    """``_LazyGradFn(t)`` for ``ref = weakref.ref(t)``, without a call to ``__init__`` (once per op, every call)."""
    g = _new_object(_LazyGradFn)
    _GRAD_FN_REF.__set__(g, ref)
    return g


# ---------------------------------------------------------------------------
# break reasons: what the Python was doing when it needed values
# ---------------------------------------------------------------------------
_REASONS = {
    "__bool__": "generic_jump TensorVariable()",
    "item": "Unsupported Tensor.item() call with capture_scalar_outputs=False",
    "tolist": "Tensor.tolist() with non-integer tensor",
    "__int__": "Tensor.__int__() needs the tensor's value",
    "__float__": "Tensor.__float__() needs the tensor's value",
    "__index__": "Tensor.__index__() needs the tensor's value",
    "__repr__": "Tensor.__repr__() (printing a tensor) needs its values",
    "__str__": "Tensor.__repr__() (printing a tensor) needs its values",
    "__format__": "Tensor.__format__() needs the tensor's value",
    "numpy": "Tensor.numpy() needs the tensor's values",
    "__array__": "Tensor.__array__() (numpy) needs the tensor's values",
    "backward": "Tensor.backward() runs the autograd engine",
}
_PRINT_REASON = "Failed to trace builtin operator"


def _is_user_file(filename: str) -> bool:
    return not filename.startswith(_COURSE_LIB_DIR) and not filename.startswith(_STDLIB_DIRS)


def _user_stack(frame=None) -> list:
    """The innermost user frame as a one-element ``[FrameSummary]`` (as Dynamo's ``user_stack``)."""
    f = frame or sys._getframe(1)
    while f is not None and not _is_user_file(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return []
    return [traceback.FrameSummary(f.f_code.co_filename, f.f_lineno, f.f_code.co_name, lookup_line=False)]


def _reason_from_stack() -> tuple:
    """(reason text, user stack, forcing tensor or None) for a read of a lazy storage's data."""
    f = sys._getframe(2)
    entry = None
    while f is not None and not _is_user_file(f.f_code.co_filename):
        entry = f
        f = f.f_back
    forcing = None
    if entry is not None:
        name = entry.f_code.co_name
        reason = _REASONS.get(name)
        if reason is None:
            reason = f"{name}() reads the values of a tensor"
        if name == "tolist" and not entry.f_locals.get("self").dtype.is_floating_point:
            reason = "Tensor.tolist() needs the tensor's values"
        self_ = entry.f_locals.get("self")
        if isinstance(self_, TensorBase):
            forcing = self_
    else:
        reason = "the values of a tensor were read"
    stack = [] if f is None else [traceback.FrameSummary(f.f_code.co_filename, f.f_lineno, f.f_code.co_name,
                                                         lookup_line=False)]
    return reason, stack, forcing


# ---------------------------------------------------------------------------
# the cache: a tree of recorded steps
# ---------------------------------------------------------------------------
class _Step:
    """One recorded op (or the root of a graph, with ``op`` None), its outputs and what follows it."""

    __slots__ = ("key", "op", "parent", "children", "outs", "sources", "style", "renames", "ends", "n_nodes",
                 "n_inputs", "guards")

    def __init__(self, key: tuple | None, op, parent: "_Step | None", n_nodes: int, n_inputs: int) -> None:
        self.key = key
        self.op = op
        self.parent = parent
        self.children: list[_Step] = []
        self.outs: Any = None        # metadata of the result(s), or ("arg", i): the op returned its argument i
        self.sources: list[str] = []  # the placeholder target of each new input this op reads
        self.style: tuple = ()        # how the FX node calls it: (opcode, target, argument positions)
        self.renames: list[tuple[int, str]] = []  # (graph position, variable name) seen after this op
        self.ends: list[_End] = []
        self.n_nodes = n_nodes      # graph positions used before this op
        self.n_inputs = n_inputs    # graph inputs before this op
        self.guards: list = []


class _End:
    """A graph break after a step: the graph's outputs, the compiled graph, and the next graph's root."""

    __slots__ = ("outputs", "compiled", "gm", "next", "compile_time", "tangent", "copy_grads")

    def __init__(self, outputs: tuple, compiled: Callable | None, gm, compile_time: float) -> None:
        self.outputs = outputs
        self.compiled = compiled
        self.gm = gm
        self.next = _Step(None, None, None, 0, 0)
        self.compile_time = compile_time


class CodeCache:
    """The cache of one compiled function (one code object): the tree of its recorded calls."""

    def __init__(self, backend: Callable, dynamic: bool, fullgraph: bool, name: str, where: str) -> None:
        self.root = _Step(None, None, None, 0, 0)
        self.backend = backend
        self.dynamic = dynamic
        self.fullgraph = fullgraph
        self.name = name
        self.where = where
        self.entries = 0          # calls that recorded something new (the first one included)
        self.warned = False
        self.graphs: list = []    # every GraphModule compiled, in order
        self.last_reason = ""
        self.backward_in_graph = False   # compile loss.backward() into the graph (besides config.compiled_autograd)


# ---------------------------------------------------------------------------
# op classification
# ---------------------------------------------------------------------------
# outputs or errors that depend on the values: materialise the inputs and run eagerly
_EAGER_OPS = frozenset({
    "nonzero", "index", "index_put", "index_put_", "index_select", "gather", "scatter_add", "_view_gather",
    "_view_scatter", "embedding", "embedding_dense_backward", "nll_loss_forward", "nll_loss_backward",
    "unique", "masked_select", "take", "multinomial", "_local_scalar_dense", "item",
})
# the random stream is drawn in eager order: random ops run eagerly
_RANDOM_OPS = frozenset({
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "uniform_", "normal_",
    "bernoulli", "bernoulli_", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_", "dropout",
    "native_dropout", "poisson",
})

_SPECIAL_OPS = _EAGER_OPS | _RANDOM_OPS

# ops whose errors depend only on the values of these argument positions (the output shape does not):
# when those are real tensors the op is checked eagerly on every call and recorded; a lazy one breaks
_CHECKED_ARGS = {
    "nll_loss_forward": (1,), "nll_loss_backward": (2,), "gather": (2,), "index_select": (2,),
    "embedding": (1,), "embedding_dense_backward": (1,), "take": (1,), "scatter_add": (2,), "index": (1,),
}

_OPERATORS = {
    "__add__": ("add", operator.add, 2), "__sub__": ("sub", operator.sub, 2), "__mul__": ("mul", operator.mul, 2),
    "__truediv__": ("div", operator.truediv, 2), "__floordiv__": ("floor_divide", operator.floordiv, 2),
    "__mod__": ("remainder", operator.mod, 2), "__pow__": ("pow", operator.pow, 2),
    "__lt__": ("lt", operator.lt, 2), "__le__": ("le", operator.le, 2), "__gt__": ("gt", operator.gt, 2),
    "__ge__": ("ge", operator.ge, 2), "__eq__": ("eq", operator.eq, 2), "__ne__": ("ne", operator.ne, 2),
    "__and__": ("bitwise_and", operator.and_, 2), "__or__": ("bitwise_or", operator.or_, 2),
    "__xor__": ("bitwise_xor", operator.xor, 2), "__neg__": ("neg", operator.neg, 1),
    "__invert__": ("bitwise_not", operator.invert, 1), "__abs__": ("abs", operator.abs, 1),
}
_METHOD_FILES = ("python_variable_methods.py", "_tensor.py", "python_methods.py")
_FUNCTION_FILES = ("python_torch_functions.py", "python_methods.py", "functional.py")


def _style(op, args: tuple) -> tuple:
    """How the FX node calls ``op``: found from the course_lib function the user's frame called."""
    f = sys._getframe(1)
    entry = None
    while f is not None and not _is_user_file(f.f_code.co_filename):
        entry = f
        f = f.f_back
    defaults = _defaults(op)
    n = len(args)
    last = n
    while last > 0 and (op.args[last - 1].kwarg_only or _is_default(args[last - 1], defaults[last - 1])):
        last -= 1
    kw = tuple(i for i in range(last, n) if op.args[i].kwarg_only and not _is_default(args[i], defaults[i]))
    if entry is not None:
        name = entry.f_code.co_name
        fname = os.path.basename(entry.f_code.co_filename)
        opinfo = _OPERATORS.get(name)
        if opinfo is not None and opinfo[0] == op.name and last <= opinfo[2] and not kw:
            return ("call_function", opinfo[1], tuple(range(opinfo[2])), ())
        if name == op.name and not op.manual_binding:
            qualname = getattr(entry.f_code, "co_qualname", None)   # Python 3.11+
            is_method = "." in qualname if qualname is not None else fname in _METHOD_FILES[:2]
            if fname in _METHOD_FILES and is_method and "method" in op.variants:
                return ("call_method", op.name, tuple(range(last)), kw)
            if fname in _FUNCTION_FILES and "function" in op.variants:
                import course_lib
                fn = getattr(course_lib, op.name, None)
                if fn is not None:
                    return ("call_function", fn, tuple(range(last)), kw)
    return ("call_function", op, tuple(range(n)), ())


def _meta_of(t: TensorBase) -> tuple:
    return (t._shape, t._stride, t._offset, t.dtype, t._requires_grad, type(t))


def _out_meta(t: TensorBase, storages: dict, args: tuple) -> tuple:
    """(shape, stride, offset, dtype, requires_grad, storage size, position of the argument it views)."""
    view_of = storages.get(id(t._storage))
    return (t._shape, t._stride, t._offset, t.dtype, t._requires_grad, t._storage._size, view_of)


# ---------------------------------------------------------------------------
# print and settrace hooks
# ---------------------------------------------------------------------------
_real_print = builtins.print
_hook_depth = [0]
_hook_lock = threading.Lock()


def _capturing_print(*args: Any, **kwargs: Any) -> None:
    cap = current_capture()
    if cap is not None and not cap.breaking and not cap.disabled:
        cap.graph_break((_PRINT_REASON, _user_stack(sys._getframe(1))), None, from_print=True)
    _real_print(*args, **kwargs)


def _global_trace(frame, event: str, arg: Any):
    if event == "call" and _is_user_file(frame.f_code.co_filename):
        return _local_trace
    return None


def _local_trace(frame, event: str, arg: Any):
    cap = current_capture()
    if cap is not None and cap.tracing and not cap.breaking:
        cap.name_locals(frame)
    return _local_trace


# ---------------------------------------------------------------------------
# the capture mode
# ---------------------------------------------------------------------------
_MAX, _U64 = np.maximum.reduce, np.dtype(np.uint64)


def _indices_in(t: Any, n: int, ignore: int | None = None) -> bool:
    """Is ``t`` a real int64 tensor whose values all lie in [0, n) (or equal ``ignore``)?"""
    if not isinstance(t, TensorBase) or t.dtype.name != "int64" or type(t._storage) is _LazyStorage:
        return False
    a = t._np()
    if not a.size:
        return True
    if _MAX(a.view(_U64), None) < n:   # one pass for 0 <= a < n: as uint64, a negative value is 2**63 or more
        return True
    if ignore is None:
        return False
    return bool((((a >= 0) & (a < n)) | (a == ignore)).all())


def _nll_classes(inp: TensorBase) -> int:
    return inp._shape[1] if len(inp._shape) >= 2 else (inp._shape[0] if inp._shape else 1)


def _dim_size(t: TensorBase, dim: int) -> int:
    if not t._shape:
        return 1
    return t._shape[dim] if -len(t._shape) <= dim < len(t._shape) else -1


#: op -> a cheap test that the real index arguments hold values eager accepts (then no eager run is needed)
_VALUES_IN_RANGE = {
    "nll_loss_forward": lambda a: isinstance(a[4], int) and _indices_in(a[1], _nll_classes(a[0]), a[4]),
    "nll_loss_backward": lambda a: isinstance(a[5], int) and _indices_in(a[2], _nll_classes(a[1]), a[5]),
    "embedding": lambda a: _indices_in(a[1], a[0]._shape[0] if a[0]._shape else 0),
    "index_select": lambda a: len(a[2]._shape) <= 1 and _indices_in(a[2], _dim_size(a[0], a[1])),
    "gather": lambda a: _indices_in(a[2], _dim_size(a[0], a[1])),
}


def _zeros_for_lazy(a: Any, capture: "Capture") -> Any:
    """``a`` with each of ``capture``'s lazy tensors replaced by real zeros of its shape (a module function:
    a recursive closure would be a reference cycle holding the capture)."""
    if isinstance(a, TensorBase):
        st = a._storage
        if type(st) is _LazyStorage and st._capture is capture:
            from .._tensor import Tensor
            z = Storage(np.zeros(st._size, dtype=a.dtype.np), a.dtype, "cpu", size=st._size)
            return Tensor._make(z, a._offset, a._shape, a._stride, a.dtype)
        return a
    if isinstance(a, (list, tuple)):
        return like_sequence(a, [_zeros_for_lazy(x, capture) for x in a])
    return a


class Capture(TorchDispatchMode):
    """One compiled call: records (or replays) the ops the Python dispatches, and breaks graphs."""

    # flags a call sets only when it needs to (class defaults: a cache hit assigns none of them)
    breaking = False
    disabled = False           # past the recompile limit: the rest of the call runs eagerly
    tracing = False
    recorded = False           # this call added steps to the tree
    finishing = False
    _seg_grad = None           # grad mode of the current graph (set by its first op)
    n_nodes = 0
    _ignores_types = True
    _joint = None              # the loss whose backward the graph ending now computes (see backward_into_graph)
    _joint_ran = False

    def __init__(self, cache: CodeCache, code, explain: list | None = None) -> None:
        self.cache = cache
        self.dynamic = cache.dynamic
        self.code = code
        self.explain = explain          # a list collecting (reason, user_stack) of each break
        self.cursor = cache.root
        self.inputs: list = []
        self.in_ids: dict[int, int] = {}
        self.in_storages: set[int] = set()
        self.lazies: list = []
        self.views: dict = {}
        self.named: set[int] = set()
        self.sym: dict[int, int] = {}

    # -- graph state -----------------------------------------------------------------
    def _start_graph(self, root: _Step) -> None:
        self.cursor = root
        self.inputs: list = []
        self.in_ids: dict[int, int] = {}
        self.in_storages: set[int] = set()
        self.lazies: list = []           # (graph position, weakref to the lazy tensor)
        self.views: dict = {}            # id -> (graph position, weakref): real views waiting for a grad_fn
        self.n_nodes = 0
        self.named: set[int] = set()
        self.sym: dict[int, int] = {}    # dynamic=True: size value -> symbol number

    # -- entering and leaving ---------------------------------------------------------
    def __enter__(self) -> "Capture":
        self._prev = getattr(_tls, "capture", None)
        _tls.capture = self
        with _hook_lock:
            if not _hook_depth[0]:
                builtins.print = _capturing_print
            _hook_depth[0] += 1
        if not self.cache.entries:
            self._start_tracing()
        _dispatcher._mode_stack.append(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            stack = _dispatcher._mode_stack
            if stack and stack[-1] is self:
                stack.pop()
            elif self in stack:
                stack.remove(self)
        finally:
            if self.tracing:
                self._stop_tracing()
            with _hook_lock:
                _hook_depth[0] -= 1
                if not _hook_depth[0]:
                    builtins.print = _real_print
            _tls.capture = self._prev
        return False

    def finish(self) -> None:
        """The call returned (or raised): end the last graph."""
        if self.n_nodes and not self.breaking:
            self.finishing = True
            if self._joint is None and not self.views and self._finish_replayed():
                return
            self._break(None, None)

    def _finish_replayed(self) -> bool:
        """The common last break of a cache hit, without ``_materialise``'s general bookkeeping: every live lazy
        tensor owns its storage and the graph for them is compiled already.  False: take the general path."""
        alive = []
        for j, r in self.lazies:
            t = r()
            if t is not None:
                st = t._storage
                if st.__class__ is _LazyStorage and st._capture is self:
                    if st._root != j:
                        return False
                    alive.append((j, t))
        outputs = tuple([j for j, _ in alive])
        for end in self.cursor.ends:
            if end.outputs == outputs:
                break
        else:
            return False
        stack = _dispatcher._mode_stack
        if not stack or stack[-1] is not self:
            return False
        stack.pop()                   # the graph runs below this mode, which stays off (as after _break)
        self.breaking = True
        try:
            compiled = end.compiled
            if compiled is not None:
                results = self._run_graph(compiled)
                in_storages = self.in_storages
                for (j, t), v in zip(alive, results):
                    _fill_one(t._storage, t, v, in_storages)
            for _, t in alive:
                t._storage._capture = None
        finally:
            self.breaking = False
        return True

    def _start_tracing(self) -> None:
        if self.tracing:
            return
        self.tracing = True
        self._old_trace = sys.gettrace()
        sys.settrace(_global_trace)
        f = sys._getframe(1)
        while f is not None:
            if _is_user_file(f.f_code.co_filename):
                f.f_trace = _local_trace
            f = f.f_back

    def _stop_tracing(self) -> None:
        if self.tracing:
            sys.settrace(self._old_trace)
            f = sys._getframe(1)
            while f is not None:
                if f.f_trace is _local_trace:
                    f.f_trace = None
                f = f.f_back
            self.tracing = False

    def name_locals(self, frame) -> None:
        """Name the nodes of lazy tensors held by the frame's locals after their variables."""
        for name, v in frame.f_locals.items():
            if isinstance(v, TensorBase) and is_lazy(v):
                j = v.__dict__.get("_dynamo_node")
                if j is not None and j not in self.named and v._storage._capture is self:
                    self.named.add(j)
                    self.cursor.renames.append((j, name))

    # -- ops ------------------------------------------------------------------------------
    def _enc(self, a: Any) -> Any:
        """An argument as part of an op's key: tensors by graph position, constants with their type (a new
        input is appended to ``inputs``)."""
        if isinstance(a, TensorBase):
            st = a._storage
            if type(st) is _LazyStorage and st._capture is self:
                return a.__dict__["_dynamo_node"]
            k = self.in_ids.get(id(a))
            if k is not None:
                return -1 - k
            v = self.views.get(id(a))
            if v is not None and v[1]() is a:
                return v[0]
            self.in_ids[id(a)] = len(self.inputs)
            self.inputs.append(a)
            self.in_storages.add(id(st))
            return ("new", self._dyn_meta(a) if self.dynamic else _meta_of(a))
        if isinstance(a, (list, tuple)):
            return (type(a),) + tuple(self._enc(x) for x in a)
        return (type(a), a)

    def _dyn_meta(self, t: TensorBase) -> tuple:
        """dynamic=True: sizes as 0, 1 or a symbol (equal sizes share one), not their values."""
        sizes = []
        for s in t._shape:
            if s < 2:
                sizes.append(s)
            else:
                sizes.append(("s", self.sym.setdefault(s, len(self.sym))))
        return (tuple(sizes), t.dtype, t._requires_grad, type(t), t.is_contiguous())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.disabled or self.breaking:
            return func(*args)
        name = func.name
        if name in _SPECIAL_OPS:
            checked = _CHECKED_ARGS.get(name)
            if checked is not None and self._any_lazy(args) and self._checkable(name, args, checked):
                self._check_values(func, args)     # eager's error for the real values, on every call
                return self._op(func, args)
            return self._eager(func, args, f"{name} depends on the values of its inputs"
                               if name in _EAGER_OPS else f"random op {name} runs eagerly")
        if func.is_inplace:
            return self._inplace(func, args)
        real_view = False
        if func.is_view and not self._any_lazy(args):
            a = args[0]
            if not (grad_state.enabled and a._requires_grad and name != "detach"):
                return func(*args)     # a view of a real tensor: cheap, and it aliases exactly
            real_view = True           # data now, autograd node with the graph (see _view)
        if self.n_nodes and grad_state.enabled is not self._seg_grad:
            self.graph_break(("grad mode changed", _user_stack()), None)
        return self._op(func, args, real_view)

    def _grad(self) -> bool:
        g = self._seg_grad
        return grad_state.enabled if g is None else g

    def _any_lazy(self, args: tuple) -> bool:
        for a in args:
            if isinstance(a, TensorBase):
                if type(a._storage) is _LazyStorage and a._storage._capture is self:
                    return True
            elif isinstance(a, (list, tuple)) and self._any_lazy(a):
                return True
        return False

    def _checkable(self, name: str, args: tuple, checked: tuple) -> bool:
        """Are the arguments whose values the op validates all real (integer tensors for ``index``)?"""
        for i in checked:
            a = args[i]
            items = a if isinstance(a, (list, tuple)) else (a,)
            for x in items:
                if x is None:
                    continue
                if not isinstance(x, TensorBase) or (type(x._storage) is _LazyStorage and x._storage._capture is self):
                    return False
                if name == "index" and x.dtype.name not in ("int64", "int32"):
                    return False    # a boolean (or uint8) mask: the output shape depends on the values
        return True

    def _check_values(self, func, args: tuple) -> None:
        """Run ``func`` eagerly with zeros in place of the lazy tensors: the real arguments' values raise
        eager's errors (out-of-range targets and indices) at the point eager raises them.

        A range check of the indices comes first: when every value is one eager accepts, the op cannot
        raise for its values and the eager run is skipped (on a training step it cost more than the rest
        of the capture); any other case runs the op, which raises eager's exact error or passes."""
        fast = _VALUES_IN_RANGE.get(func.name)
        if fast is not None and fast(args):
            return
        prev = grad_state.enabled
        grad_state.enabled = False
        self.breaking = True           # the check's own ops run eagerly
        try:
            func(*(_zeros_for_lazy(a, self) for a in args))
        finally:
            self.breaking = False
            grad_state.enabled = prev

    def _eager(self, func, args: tuple, reason: str):
        if self._any_lazy(args):
            self.graph_break((reason, _user_stack()), None)
        return func(*args)

    def _inplace(self, func, args: tuple):
        self_ = args[0]
        if isinstance(self_, TensorBase) and is_lazy(self_) and self_._storage._capture is self:
            functional = func.functional
            st = self_._storage
            alone = self._alone(self_)
            # autograd involved: run it eagerly, so the version counter catches a saved value it overwrites
            grads = grad_state.enabled and (self_._requires_grad or self._requires_grad(args))
            if functional is not None and alone and not grads and st._root == self_.__dict__["_dynamo_node"]:
                prev = grad_state.enabled
                grad_state.enabled = False       # self_ is never a leaf: only shape and dtype errors remain
                try:
                    self._meta_run(func, args)   # eager's errors for the in-place form
                finally:
                    grad_state.enabled = prev
                out = self._op(functional, args)
                if isinstance(out, TensorBase) and out._shape == self_._shape and out.dtype == self_.dtype \
                        and out._stride == self_._stride and type(out._storage) is _LazyStorage:
                    # self_ now is the functional result: take over its storage and graph position
                    self_._storage = out._storage
                    out._storage = Storage(None, out.dtype, "meta", size=0)
                    self_._requires_grad = out._requires_grad
                    self_.__dict__["_dynamo_node"] = out.__dict__["_dynamo_node"]
                    if out._requires_grad:
                        self_.__dict__["grad_fn"] = _LazyGradFn(self_)
                    self._replace_lazy(out, self_)
                    self_._np_cache = None
                    return self_
            self.graph_break((f"in-place {func.name} on a tensor computed in the graph", _user_stack()), None)
            return _inplace_eagerly(func, args)
        # in-place on a real tensor: the graph may read its old value, or its arguments are lazy
        if self.n_nodes and (self._any_lazy(args) or (isinstance(self_, TensorBase)
                                                     and id(self_._storage) in self.in_storages)):
            self.graph_break((f"in-place {func.name} on a graph input", _user_stack()), None)
        return _inplace_eagerly(func, args)

    @staticmethod
    def _requires_grad(args: tuple) -> bool:
        for a in args:
            if isinstance(a, TensorBase) and a._requires_grad:
                return True
        return False

    def _alone(self, t: TensorBase) -> bool:
        st = t._storage
        for _, r in self.lazies:
            o = r()
            if o is not None and o is not t and o._storage is st:
                return False
        return True

    def _replace_lazy(self, old: TensorBase, new: TensorBase) -> None:
        """``new`` (the tensor an in-place op wrote to) takes ``old``'s graph position; its former one is dropped."""
        j = new.__dict__["_dynamo_node"]
        ref = weakref.ref(new)
        self.lazies = [(k, ref if k == j else r) for k, r in self.lazies if k == j or r() is not new]
        old.__dict__.pop("_dynamo_node", None)

    def _op(self, func, args: tuple, real_view: bool = False):
        grad = grad_state.enabled
        if self._seg_grad is None or not self.n_nodes:
            self._seg_grad = grad        # an op that added no node (a real view) does not fix the graph's mode
        inputs = self.inputs
        n_inputs = len(inputs)           # the new inputs this op reads are inputs[n_inputs:]
        encs = []
        for a in args:
            if isinstance(a, TensorBase):
                st = a._storage
                if st.__class__ is _LazyStorage and st._capture is self:
                    encs.append(a.__dict__["_dynamo_node"])
                    continue
                k = self.in_ids.get(id(a))
                if k is not None:
                    encs.append(-1 - k)
                    continue
                if self.views:
                    v = self.views.get(id(a))
                    if v is not None and v[1]() is a:
                        encs.append(v[0])
                        continue
                if not self.dynamic:      # a new input: its metadata is part of the key
                    self.in_ids[id(a)] = len(inputs)
                    inputs.append(a)
                    self.in_storages.add(id(st))
                    encs.append(("new", (a._shape, a._stride, a._offset, a.dtype, a._requires_grad, a.__class__)))
                    continue
            elif not isinstance(a, (list, tuple)):
                encs.append((a.__class__, a))
                continue
            encs.append(self._enc(a))
        key = (func, grad, tuple(encs))
        for child in self.cursor.children:
            if child.key == key:
                break
        else:
            if self.cache.entries >= config.recompile_limit and not self.recorded:
                self._give_up(func, key)
                return func(*args)
            try:
                child = self._record(func, args, key, inputs[n_inputs:], real_view)
            except BaseException:
                self._drop_new_inputs()    # the op raised (as eager does): its inputs are not in the graph
                raise
            if child is None:      # not recorded: run it for real, after the graph if it reads lazy tensors
                self._drop_new_inputs()
                if self._any_lazy(args):
                    self.graph_break((f"{func.name} returns an alias of a real tensor", _user_stack()), None)
                return func(*args)
            self.cursor = child
            return self._make(child, args, child.outs)
        self.cursor = child
        outs = child.outs
        if not self.dynamic:
            if outs[0] == "one":
                return self._lazy(outs[1], args)
        elif outs[0] == "one" or outs[0] == "many":
            outs = self._meta_outs(func, args)[0]   # sizes are symbolic: this call's shapes
        return self._make(child, args, outs)

    def _give_up(self, func, key: tuple) -> None:
        """Past the recompile limit: end the graph so far and run the rest of the call eagerly."""
        cache = self.cache
        if not cache.warned:
            cache.warned = True
            warnings.warn(
                f"course_lib._dynamo hit config.recompile_limit ({config.recompile_limit})\n"
                f"   function: {cache.name!r} ({cache.where})\n"
                f"   last reason: {self._guard_reason(func, key)}\n"
                "To diagnose recompilation issues, see the chapter on guards.", UserWarning, stacklevel=2)
        self._drop_new_inputs()
        self.graph_break(("recompile_limit reached", _user_stack()), None)
        self.disabled = True

    def _drop_new_inputs(self) -> None:
        """Forget the inputs an unrecorded key registered (they are not part of the graph so far)."""
        n = self._inputs_of_path()
        for a in self.inputs[n:]:
            self.in_ids.pop(id(a), None)
        del self.inputs[n:]
        self.in_storages = {id(a._storage) for a in self.inputs}

    def _inputs_of_path(self) -> int:
        s = self.cursor
        return s.n_inputs + len(s.sources) if s.op is not None else 0

    def _guard_reason(self, func, key: tuple) -> str:
        recorded = [c.key for c in self.cursor.children]
        if not recorded:
            return f"a new op {func.name} after the recorded ones"
        old = recorded[-1]
        if old[0] is not func:
            return f"op {old[0].name} expected, {func.name} called"
        if old[1] != key[1]:
            return f"grad mode: expected {old[1]}, actual {key[1]}"
        for i, (o, k) in enumerate(zip(old[2], key[2])):
            if o != k:
                if isinstance(o, tuple) and o and o[0] == "new" and isinstance(k, tuple) and k and k[0] == "new":
                    if o[1][0] != k[1][0]:
                        return (f"tensor argument {i} of {func.name} size mismatch: expected {list(o[1][0])}, "
                                f"actual {list(k[1][0])}")
                    return f"tensor argument {i} of {func.name}: metadata changed ({o[1][1:5]} -> {k[1][1:5]})"
                return f"argument {i} of {func.name}: expected {o!r}, actual {k!r}"
        return f"op {func.name}"

    def _meta_run(self, func, args: tuple):
        """Run ``func`` on meta copies of its arguments; returns (output, meta storage id -> arg position)."""
        from .._tensor import Tensor
        storages: dict[int, Storage] = {}
        positions: dict[int, int] = {}

        def meta(a: Any, pos: int) -> Any:
            if isinstance(a, TensorBase):
                st = a._storage
                m = storages.get(id(st))
                if m is None:
                    m = storages[id(st)] = Storage(None, a.dtype if st.dtype is None else st.dtype, "meta",
                                                   size=st._size)
                    positions[id(m)] = pos
                t = Tensor._make(m, a._offset, a._shape, a._stride, a.dtype)
                t._requires_grad = a._requires_grad
                return t
            if isinstance(a, (list, tuple)):
                return like_sequence(a, [meta(x, pos) for x in a])
            return a
        margs = tuple(meta(a, i) for i, a in enumerate(args))
        out = func(*margs)
        return out, positions, margs

    def _meta_outs(self, func, args: tuple) -> tuple:
        out, positions, margs = self._meta_run(func, args)
        if isinstance(out, TensorBase):
            for i, m in enumerate(margs):
                if m is out:
                    return ("arg", i), out
            return ("one", _out_meta(out, positions, args)), out
        if isinstance(out, (tuple, list)) and all(isinstance(o, TensorBase) for o in out):
            # (the container's type too: max(dim) returns a named tuple with .values and .indices)
            return ("many", tuple(_out_meta(o, positions, args) for o in out), type(out)), out
        return None, out

    def _record(self, func, args: tuple, key: tuple, new: list, real_view: bool = False):
        outs, out = self._meta_outs(func, args)
        if outs is None:
            return None        # not a tensor op (a Python value comes back): run it for real
        if real_view:
            if outs[0] != "one" or not outs[1][4]:
                return None
            outs = ("view", outs[1])
        elif outs[0] != "arg":
            for m in (outs[1] if outs[0] == "many" else (outs[1],)):
                if m[6] is not None and not is_lazy(_flat_tensor(args, m[6])):
                    return None   # an alias of a real tensor: run it eagerly
        if not self.recorded:
            self.recorded = True
            self.cache.entries += 1
            self.cache.last_reason = ""
            self._start_tracing()
        step = _Step(key, func, self.cursor, self.n_nodes, self._inputs_of_path())
        step.outs = outs
        step.style = _style(func, args)
        step.sources = [self._source(a) for a in new]
        self.cursor.children.append(step)
        return step

    def _make(self, step: _Step, args: tuple, outs: Any):
        """The lazy result(s) of ``step`` (or the argument it returned)."""
        kind, m = outs[0], outs[1]
        if kind == "one":
            return self._lazy(m, args)
        if kind == "arg":
            return args[m]
        if kind == "view":
            return self._view(step.op, args)
        lazies = [self._lazy(x, args) for x in m]
        cls = outs[2]
        return tuple(lazies) if cls is tuple else (cls(*lazies) if hasattr(cls, "_fields") else cls(lazies))

    def _view(self, func, args: tuple):
        """A view of a real tensor that requires grad: its data now (it aliases its base exactly), its
        ``grad_fn`` from the graph when the graph runs, so autograd's nodes keep eager's order."""
        prev = grad_state.enabled
        grad_state.enabled = False
        try:
            # with no other mode and a real input, the dispatcher would pick the cpu kernel (grad mode is off)
            t = func.cpu(*args) if not _dispatcher._mode_stack and args[0]._storage.data is not None else func(*args)
        finally:
            grad_state.enabled = prev
        j = self.n_nodes
        self.n_nodes = j + 1
        t._requires_grad = True
        ref = weakref.ref(t)
        t.__dict__["grad_fn"] = _lazy_grad_fn(ref)
        self.views[id(t)] = (j, ref)
        return t

    def _lazy(self, m: tuple, args: tuple):
        shape, stride, offset, dtype, rg, size, view_of = m
        j = self.n_nodes
        self.n_nodes = j + 1
        if view_of is None:
            st = _new_object(_LazyStorage)
            _DATA.__set__(st, None)
            st.dtype = dtype
            st.device = "cpu"
            st._size = size
            st._nbytes = size * dtype.itemsize
            st._owner = None
            st._capture = self
            st._root = j
            st._layout = (shape, stride, offset)
        else:
            st = _flat_tensor(args, view_of)._storage
        # Tensor._make(st, offset, shape, stride, dtype) and _lazy_grad_fn(ref), written out
        t = _new_object(_Tensor)
        t._storage = st
        t._offset = offset
        t._shape = shape
        t._stride = stride
        t.dtype = dtype
        t._np_cache = None
        t._requires_grad = rg
        ref = weakref.ref(t)
        d = t.__dict__
        if rg:
            g = _new_object(_LazyGradFn)
            _GRAD_FN_REF.__set__(g, ref)
            d["grad_fn"] = g
        d["_dynamo_node"] = j
        self.lazies.append((j, ref))
        return t

    # -- sources of inputs (recording only) -----------------------------------------------
    def _source(self, t: TensorBase) -> str:
        """The placeholder target of a real tensor: ``L_a_``, ``G_w_``, ``L_self_modules_lin_parameters_weight_``."""
        f = sys._getframe(1)
        root = None
        while f is not None:
            if f.f_code is self.code:
                root = f
            f = f.f_back
        frames = [root] if root is not None else []
        f = sys._getframe(1)
        while f is not None:
            if f is not root and _is_user_file(f.f_code.co_filename):
                frames.append(f)
            f = f.f_back
        for fr in frames:
            local = fr.f_locals
            for name, v in local.items():
                if v is t:
                    return f"L_{name}_"
            for name, v in local.items():
                path = _module_path(v, t)
                if path is not None:
                    return f"L_{name}_{path}"
            for name, v in fr.f_globals.items():
                if v is t and isinstance(v, TensorBase):
                    return f"G_{name}_"
        base = t._base
        if base is not None and base is not t:
            return f"{self._source(base)}view_"   # a view made eagerly (views of real tensors are not recorded)
        return "L_input_"

    # -- graph breaks -------------------------------------------------------------------------
    def graph_break(self, why: tuple, storage: Storage | None, *, final: bool = False,
                    from_print: bool = False) -> None:
        """End the current graph: compile it (or find it compiled), run it, fill the lazy tensors."""
        if self.breaking:
            return
        reason, stack = why[0], why[1]
        forcing = why[2] if len(why) > 2 else None
        if not final and self.cache.fullgraph and not self.disabled:
            from .exc import Unsupported
            if self.n_nodes or not from_print:
                raise Unsupported(_fullgraph_message(reason, stack))
        if self.n_nodes:
            compiled = len(self.cache.graphs)
            self._break(forcing, storage)
            # as Dynamo's explain: a reason per graph that ended at a break (an empty graph is no graph)
            if not final and self.explain is not None and len(self.cache.graphs) > compiled:
                self.explain.append((reason, stack))

    def _break(self, forcing: TensorBase | None, storage: Storage | None) -> None:
        """Materialise, with this mode off the dispatcher's stack (the compiled graph runs below it)."""
        self.breaking = True
        stack = _dispatcher._mode_stack
        if stack and stack[-1] is self:
            stack.pop()
            i = len(stack)
        elif self in stack:
            i = stack.index(self)
            del stack[i]
        else:
            i = -1
        try:
            self._materialise(forcing, storage)
        finally:
            if i >= 0 and not self.finishing:   # after the last graph the mode stays off (__exit__ ends it)
                stack.insert(i, self)
            self.breaking = False

    def _materialise(self, forcing: TensorBase | None, storage: Storage | None) -> None:
        if self._joint is not None and self._materialise_joint():
            return
        # the lazy tensors still alive, in node order; the one that forced the break goes first
        alive = []
        order = []
        storages = {}
        views = False
        for j, r in self.lazies:
            t = r()
            if t is not None:
                st = t._storage
                if st.__class__ is _LazyStorage and st._capture is self:
                    alive.append((j, t))
                    order.append(j)
                    root = st._root
                    storages[root] = st
                    if root != j:
                        views = True
        first = None
        if forcing is not None:
            if is_lazy(forcing) and forcing._storage._capture is self:
                first = forcing.__dict__.get("_dynamo_node")
        elif storage is not None:
            for j, t in alive:
                if t._storage is storage:
                    first = j
        if self.views:
            views = True
            for j, r in self.views.values():
                t = r()
                if t is not None and t.__dict__.get("grad_fn").__class__ is _LazyGradFn:
                    alive.append((j, t))
            alive.sort(key=_first)
            order = [j for j, _ in alive]
        if first is not None and (not order or order[0] != first):
            order.remove(first)
            order.insert(0, first)
            views = True                   # outputs no longer follow ``alive``: the general fill
        if views:
            have = set(order)
            for root in storages:
                if root not in have:
                    order.append(root)     # a view's base, dead itself: its values fill the storage
        outputs = tuple(order)
        step = self.cursor
        for end in step.ends:
            if end.outputs == outputs:
                break
        else:
            end = self._new_end(step, outputs)
        compiled = end.compiled
        if compiled is not None:
            results = self._run_graph(compiled)
            if views:
                tensors = dict(alive)
                self._fill(outputs, results, tensors, storages)
                _link_views(alive, tensors, storages)
            else:
                # the common case: each output is one alive lazy tensor that owns its storage
                in_storages = self.in_storages
                for (j, t), v in zip(alive, results):
                    _fill_one(storages[j], t, v, in_storages)
        for st in storages.values():
            st._capture = None            # from here on reading data is plain again
        if not self.finishing:
            self._start_graph(end.next)
            self._seg_grad = None

    # -- the backward in the graph (compiled autograd) -------------------------------------------
    def backward_into_graph(self, tensors: tuple, grad_tensors: tuple, retain_graph: Any, create_graph: bool,
                            inputs: Any, reason: str) -> bool:
        """``loss.backward()`` on the graph's loss: end the graph with one program that computes its
        outputs and the gradients of its leaf inputs, and store them in ``.grad`` as the engine would.

        Returns False (nothing done) unless every gradient the engine would compute flows through this
        graph and lands in a leaf whose ``.grad`` is None: one scalar loss computed here, no gradient
        given, no ``retain_graph``/``create_graph``/``inputs``; no other live tensor of the graph that
        requires grad; every graph input that requires grad a leaf without hooks.  Then the engine has
        nothing else to do and nothing else could observe it.  The loss gets a ``grad_fn`` whose saved
        values are freed, as after eager's backward; a graph whose backward saves nothing is left to
        the engine (a second backward through it would succeed in eager)."""
        if len(tensors) != 1 or grad_tensors[0] is not None or retain_graph or create_graph or inputs is not None:
            return False
        loss = tensors[0]
        if not isinstance(loss, TensorBase) or loss._shape != () or not loss._requires_grad:
            return False
        st = loss._storage
        j = loss.__dict__.get("_dynamo_node")
        if st.__class__ is not _LazyStorage or st._capture is not self or st._root != j or not self.n_nodes:
            return False
        if self.cache.fullgraph or self.dynamic or (not self.recorded and self.cache.entries >= config.recompile_limit):
            return False          # (dynamic=True: the joint graph is traced for this call's sizes)
        for _, r in self.lazies:
            t = r()
            if t is not None and t is not loss and t._requires_grad and t._storage._capture is self:
                return False      # the engine would give it a grad_fn the program does not make
            if t is not None and t._storage.__class__ is _LazyStorage and t._storage._root != t.__dict__.get(
                    "_dynamo_node", -1):
                return False      # a view inside the graph
        for _, r in self.views.values():
            t = r()
            if t is not None and t.__dict__.get("grad_fn").__class__ is _LazyGradFn:
                return False
        for a in self.inputs:
            if a._requires_grad and (a.grad_fn is not None or a._grad is not None or a._post_acc_hooks
                                     or a.__dict__.get("_acc_keepalive") is not None):
                return False
        self._joint = loss
        self._joint_ran = False
        try:
            self.graph_break((reason, _user_stack() if self.explain is not None else []), None)
        finally:
            self._joint = None
        return self._joint_ran

    def _materialise_joint(self) -> bool:
        loss = self._joint
        lj = loss.__dict__["_dynamo_node"]
        alive = []
        for j, r in self.lazies:
            t = r()
            if t is not None and t._storage.__class__ is _LazyStorage and t._storage._capture is self:
                alive.append((j, t))
        alive.sort(key=lambda p: p[0] != lj)      # the loss first, then node order
        outputs = tuple(j for j, _ in alive) + ("backward",)
        step = self.cursor
        for end in step.ends:
            if end.outputs == outputs:
                break
        else:
            end = self._new_joint_end(step, outputs)
        compiled = end.compiled
        if compiled is None:
            return False           # its backward saves nothing: the engine runs it
        prev = grad_state.enabled
        grad_state.enabled = False
        try:
            results = compiled(*self.inputs, end.tangent)
        finally:
            grad_state.enabled = prev
        if results.__class__ is not tuple and results.__class__ is not list:
            results = (results,)
        in_storages = self.in_storages
        n_out = len(alive)
        for (j, t), v in zip(alive, results):
            st = t._storage
            _fill_storage(st, v, in_storages)
            st._capture = None
        node = _CompiledBackwardDone()
        d = loss.__dict__
        d["grad_fn"] = node
        d["_output_nr"] = 0
        grad_of, copy = end.copy_grads
        inputs = self.inputs
        for k, (i, g) in enumerate(zip(grad_of, results[n_out:])):
            # stolen as eager's AccumulateGrad steals a gradient nobody else holds: a whole, contiguous storage
            gst = g._storage
            if (k in copy or g._offset or g._base is not None or gst.data is None or g._stride != _contiguous(g._shape)
                    or gst._size != _numel(g._shape)):
                g = _fresh_copy(g)
            inputs[i]._grad = g
        self._joint_ran = True
        self._start_graph(end.next)
        self._seg_grad = None
        return True

    def _new_joint_end(self, step: _Step, outputs: tuple) -> _End:
        """Trace the joint forward+backward graph of the graph so far and compile it with the backend."""
        from .._functorch.aot_autograd import trace_joint
        gm = self._build_graph(step, outputs[:-1])
        joint = trace_joint(gm.forward, *self.inputs)
        jg = joint.module.graph
        saves = any(n.meta.get("partitioner_tag") == "is_backward" and any(
            a.op != "placeholder" and a.meta.get("partitioner_tag") != "is_backward"
            or (a.op == "placeholder" and not a.target.startswith("tangents"))
            for a in n.all_input_nodes) for n in jg.nodes)
        if not saves or joint.mutated_inputs or joint.outputs_requiring_grad[1:] != (False,) * (len(outputs) - 2):
            end = _End(outputs, None, None, 0.0)
            step.ends.append(end)
            return end
        if not self.recorded:
            self.recorded = True
            self.cache.entries += 1
        loss = self._joint
        tangent = _make_tensor(Storage(np.ones(1, dtype=loss.dtype.np), loss.dtype, "cpu", size=1), 0, (), (),
                               loss.dtype)
        output = next(n for n in reversed(jg.nodes) if n.op == "output")
        out_nodes = output.args[0]
        n_out = len(outputs) - 1
        # the program returns the forward outputs, then the gradients that exist (backends return tensors)
        grad_of = tuple(i for i, g in enumerate(out_nodes[n_out:]) if g is not None)
        grads = [out_nodes[n_out + i] for i in grad_of]
        output.args = (tuple(out_nodes[:n_out]) + tuple(grads),)
        joint.module.recompile()
        seen: set = set()
        copy = set()
        for k, g in enumerate(grads):
            if g in seen or _aliases_placeholder(g) or g in out_nodes[:n_out]:
                copy.add(k)
            seen.add(g)
        start = time.perf_counter()
        prev = grad_state.enabled
        grad_state.enabled = False
        try:
            backend = self.cache.backend
            compiled = getattr(backend, "compile_inference", backend)(joint.module, [*self.inputs, tangent])
        finally:
            grad_state.enabled = prev
        end = _End(outputs, compiled, joint.module, time.perf_counter() - start)
        end.tangent = tangent
        end.copy_grads = (grad_of, frozenset(copy))
        self.cache.graphs.append(joint.module)
        step.ends.append(end)
        return end

    def _run_graph(self, compiled: Callable) -> tuple | list:
        """Call the compiled graph on this graph's inputs under the grad mode it was recorded in; its results
        as a sequence."""
        g = self._seg_grad
        if g is None or g is grad_state.enabled:
            results = compiled(*self.inputs)
        else:
            prev = grad_state.enabled
            grad_state.enabled = g
            try:
                results = compiled(*self.inputs)
            finally:
                grad_state.enabled = prev
        if results.__class__ is not tuple and results.__class__ is not list:
            results = (results,)
        return results

    def _new_end(self, step: _Step, outputs: tuple) -> _End:
        if not outputs:
            end = _End(outputs, None, None, 0.0)    # nothing computed is still used
        elif not self.recorded and self.cache.entries >= config.recompile_limit:
            gm = self._build_graph(step, outputs)
            end = _End(outputs, gm.forward, gm, 0.0)   # past the limit: run the graph as Python
        else:
            if not self.recorded:
                self.recorded = True
                self.cache.entries += 1
            end = self._compile(step, outputs)
        step.ends.append(end)
        return end

    def _fill(self, outputs: tuple, results: Any, tensors: dict, storages: dict) -> None:
        """Give each storage its values and each lazy tensor its ``grad_fn``."""
        in_storages = self.in_storages
        for j, v in zip(outputs, results):
            st = storages.get(j)
            if st is not None:
                _fill_storage(st, v, in_storages)
            t = tensors.get(j)
            if t is not None:
                _take_grad_fn(t, v)

    def _compile(self, step: _Step, outputs: tuple) -> _End:
        gm = self._build_graph(step, outputs)
        start = time.perf_counter()
        compiled = self.cache.backend(gm, list(self.inputs))
        elapsed = time.perf_counter() - start
        self.cache.graphs.append(gm)
        return _End(outputs, compiled, gm, elapsed)

    def _build_graph(self, step: _Step, outputs: tuple):
        """The FX graph of the path from the current graph's root to ``step``, returning ``outputs``."""
        from ..fx import Graph, GraphModule
        from ..nn import Module
        path = []
        s = step
        while s is not None and s.op is not None:
            path.append(s)
            s = s.parent
        path.reverse()
        g = Graph()
        values: dict[int, Any] = {}
        news = _Inputs()
        placeholders = news.placeholders
        used: set[str] = set()
        first_op = None
        for s in path:
            for src in s.sources:
                k, base = 1, src
                while src in used:     # two inputs with one source name: L_input_, L_input_1_
                    src = f"{base.rstrip('_')}_{k}_"
                    k += 1
                used.add(src)
                if first_op is None:
                    placeholders.append(g.placeholder(src))
                else:
                    with g.inserting_before(first_op):
                        placeholders.append(g.placeholder(src))
            news.fresh = iter(news.placeholders[len(news.placeholders) - len(s.sources):])
            ins = _decode(s.key[2], values, news)
            opcode, target, pos, kw = s.style
            node_args = tuple(ins[i] for i in pos)
            node_kwargs = {s.op.args[i].name: ins[i] for i in kw}
            if s.outs[0] == "arg":
                continue
            node = g.create_node(opcode, target, node_args, node_kwargs)
            if first_op is None:
                first_op = node
            if s.outs[0] == "many":
                for i in range(len(s.outs[1])):
                    values[s.n_nodes + i] = g.call_function(operator.getitem, (node, i))
            else:
                values[s.n_nodes] = node
            for j, name in s.renames:
                if j in values:
                    _rename(values[j], name)
        g.output(tuple(values[j] for j in outputs))
        return GraphModule(Module(), g)


def _numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _make_tensor(st, offset, shape, stride, dtype):
    from .._tensor import Tensor
    global _make_tensor
    _make_tensor = Tensor._make
    return _make_tensor(st, offset, shape, stride, dtype)


def _fill_storage(st: _LazyStorage, v: TensorBase, in_storages: set) -> None:
    """Give ``st`` the values of the graph output ``v``: adopt its buffer when the layout matches, else copy."""
    shape, stride, offset = st._layout
    vst = v._storage
    if (v._offset == offset and v._stride == stride and vst.__class__ is Storage and vst._size == st._size
            and vst.dtype is st.dtype and vst.data is not None and id(vst) not in in_storages):
        _DATA.__set__(st, vst.data)   # adopt the result's buffer
        st._owner = vst
    else:
        data = _copy_into(v, st, shape, stride, offset)
        _DATA.__set__(st, data)
        st._owner = data


def _take_grad_fn(t: TensorBase, v: TensorBase) -> None:
    """The lazy tensor ``t`` takes the autograd identity of its graph output ``v``."""
    gf = v.grad_fn
    if gf is not None:
        d = t.__dict__
        d["grad_fn"] = gf
        d["_output_nr"] = v._output_nr
        d["_version_counter"] = v._vc   # an in-place op on t invalidates what autograd saved of v
        d["_dynamo_twin"] = weakref.ref(v)
        t._requires_grad = True
    elif t._requires_grad and t.__dict__.get("grad_fn").__class__ is _LazyGradFn:
        del t.__dict__["grad_fn"]


def _fill_one(st: _LazyStorage, t: TensorBase, v: TensorBase, in_storages: set) -> None:
    """``_fill_storage`` then ``_take_grad_fn`` for an output that is the only tensor of its storage."""
    vst = v._storage
    layout = st._layout
    if (v._offset == layout[2] and v._stride == layout[1] and vst.__class__ is Storage and vst._size == st._size
            and vst.dtype is st.dtype and vst.data is not None and id(vst) not in in_storages):
        _DATA.__set__(st, vst.data)   # adopt the result's buffer
        st._owner = vst
    else:
        _fill_storage(st, v, in_storages)
    if v.grad_fn is not None or t._requires_grad:
        _take_grad_fn(t, v)


def _copy_into(v: TensorBase, st: Storage, shape: tuple, stride: tuple, offset: int) -> np.ndarray:
    """A new buffer of ``st``'s size holding ``v``'s values at the recorded layout."""
    from numpy.lib.stride_tricks import as_strided
    arr = np.empty(st._size, dtype=st.dtype.np)
    if not shape:
        arr[offset] = v._np()
    elif 0 not in shape:
        item = arr.itemsize
        as_strided(arr[offset:], shape, tuple(x * item for x in stride))[...] = v._np()
    return arr


def _link_views(alive: list, tensors: dict, storages: dict) -> None:
    """Materialised views of tensors that require grad become views of them for autograd (``_base``, the
    base's list of views), so an in-place op on the base later regenerates their ``grad_fn`` as in eager."""
    from ..autograd.variable_type import _register_one
    for j, t in alive:
        if t.grad_fn is None:
            continue
        st = t._storage
        if st.__class__ is _LazyStorage and storages.get(st._root) is st:   # a lazy view of this graph
            base = tensors.get(st._root)
            if base is None or base is t:
                continue
            base = base._base if base._base is not None else base
            t.__dict__["_base"] = base
        else:
            base = t._base        # a view of a real tensor: its _base is set already
        if base is not None and base.grad_fn is not None:
            _register_one(base, t)


def _inplace_eagerly(func, args: tuple):
    """Run an in-place op; a tensor that left a graph passes its new ``grad_fn`` to its graph output, which
    autograd may have saved (so an error about the saved value names the in-place op, as in eager)."""
    out = func(*args)
    self_ = args[0]
    twin = self_.__dict__.get("_dynamo_twin")
    if twin is not None:
        v = twin()
        if v is not None and self_.grad_fn is not None:
            v.__dict__["grad_fn"] = self_.grad_fn
            v.__dict__["_output_nr"] = self_._output_nr
            if v.__dict__.get("_views"):      # views the graph took of it (inside matmul, ...) see the op too
                from ..autograd.variable_type import _regenerate_views
                _regenerate_views(v)
    return out


def _first(pair: tuple) -> int:
    return pair[0]


def _flat_tensor(args: tuple, pos: int) -> TensorBase:
    a = args[pos]
    if isinstance(a, (list, tuple)):
        a = a[0]
    return a


def _decode(encs: tuple, values: dict, news) -> list:
    """An op's arguments for its FX node: graph positions become nodes, new inputs the next placeholder."""
    out = []
    for e in encs:
        if isinstance(e, int):
            out.append(values[e] if e >= 0 else news.placeholders[-1 - e])
        elif e[0] == "new":
            out.append(next(news.fresh))
        elif e[0] in (list, tuple) or (isinstance(e[0], type) and issubclass(e[0], (list, tuple))):
            out.append(e[0](_decode(e[1:], values, news)))
        else:
            out.append(e[1])
    return out


class _Inputs:
    """The placeholders made so far, and an iterator over the ones a step introduces."""

    def __init__(self) -> None:
        self.placeholders: list = []
        self.fresh = iter(())


def _rename(node, name: str) -> None:
    """Give ``node`` the name ``name`` (or ``name_1``, ...): Dynamo's name hint from a variable."""
    ns = node.graph._graph_namespace
    new = ns.create_name(name, None)
    ns._obj_to_name.pop(node, None)
    node.name = new
    ns._obj_to_name[node] = new


def _module_path(v: Any, t: TensorBase) -> str | None:
    """``modules_lin_parameters_weight_`` if ``t`` is a parameter or buffer of module ``v``."""
    from ..nn import Module
    if not isinstance(v, Module):
        return None
    for mod_name, mod in v.named_modules():
        prefix = "".join(f"modules_{p}_" for p in mod_name.split(".")) if mod_name else ""
        for pname, p in mod._parameters.items():
            if p is t:
                return f"{prefix}parameters_{pname}_"
        for bname, b in mod._buffers.items():
            if b is t:
                return f"{prefix}buffers_{bname}_"
    return None


def _fullgraph_message(reason: str, stack: list) -> str:
    where = ""
    if stack:
        fs = stack[-1]
        where = f'\n\nfrom user code:\n   File "{fs.filename}", line {fs.lineno}, in {fs.name}'
    if reason == "generic_jump TensorVariable()":
        text = ("Data-dependent branching\n  Explanation: Detected data-dependent branching (e.g. `if "
                "my_tensor.sum() > 0:`). Dynamo does not support tracing dynamic control flow.")
    else:
        text = reason
    return text + where


def guards_of(cache: CodeCache) -> list:
    """The guards of every recorded path, as ``Guard`` objects (for ``explain``)."""
    out = []
    seen = set()

    def walk(s: _Step, graph: int) -> None:
        if s.op is None and s.children:
            state = "enabled" if s.children[0].key[1] else "disabled"
            g = _guards.Guard("", "global", _guards.GRAD_MODE, f"grad mode {state}")
            if (graph, g) not in seen:
                seen.add((graph, g))
                out.append(g)
        for c in s.children:
            for src, enc in zip(c.sources, [e for e in c.key[2] if isinstance(e, tuple) and e and e[0] == "new"]):
                meta = enc[1]
                name = _source_name(src)
                kind = _guards.TENSOR_MATCH
                if len(meta) == 5:
                    desc = (f"check_tensor({name}, {meta[1]}, sizes={list(meta[0])}, "
                            f"requires_grad={meta[2]}, contiguous={meta[4]})")
                else:
                    desc = (f"check_tensor({name}, {meta[3]}, size={list(meta[0])}, stride={list(meta[1])}, "
                            f"requires_grad={meta[4]})")
                g = _guards.Guard(name, "global" if src.startswith("G_") else "local", kind, desc)
                if g not in seen:
                    seen.add(g)
                    out.append(g)
            consts = [e for e in c.key[2] if isinstance(e, tuple) and len(e) == 2 and isinstance(e[0], type)
                      and e[0] in (int, float, bool)]
            if consts:
                g = _guards.Guard(c.op.name, "constant", _guards.CONSTANT_MATCH,
                                  f"{c.op.name} called with constants {[e[1] for e in consts]}")
                if g not in seen:
                    seen.add(g)
                    out.append(g)
            walk(c, graph)
        for e in s.ends:
            walk(e.next, graph + 1)
    walk(cache.root, 0)
    return out


def _source_name(src: str) -> str:
    """``L_a_`` -> ``L['a']``, ``G_w_`` -> ``G['w']`` (Dynamo's source names)."""
    if src.startswith(("L_", "G_")) and src.endswith("_"):
        return f"{src[0]}['{src[2:-1]}']"
    return src


def _noop() -> None:
    pass


class _CompiledBackwardDone(Node):
    """The ``grad_fn`` of a loss whose backward ran inside its compiled graph: as after eager's backward,
    the values it saved are freed, so a second backward fails with eager's error."""

    def name(self) -> str:
        return "CompiledFunctionBackward"

    def apply(self, grad_outputs: tuple) -> tuple:
        raise RuntimeError(_FREED)


def _aliases_placeholder(node) -> bool:
    """May the graph output ``node`` share memory with a graph input (a view chain down to a placeholder)?"""
    from .._inductor.compile_fx import _ALIASING
    while True:
        if node.op == "placeholder":
            return True
        if node.op != "call_function" or not node.args:
            return False
        target = node.target
        name = getattr(target, "name", getattr(target, "__name__", ""))
        if not (getattr(target, "is_view", False) or name in _ALIASING):
            return False
        node = node.args[0]
        if not hasattr(node, "op"):
            return False


def _engine_hook(reason: str, tensors: tuple = (), grad_tensors: tuple = (), retain_graph: Any = None,
                 create_graph: bool = False, inputs: Any = None) -> Callable[[], None] | None:
    """Before the autograd engine runs: end the graph, run the engine's ops eagerly, then resume.  With the
    backward compiled into the graph (``config.compiled_autograd``, ``mode="reduce-overhead"``) the graph
    may compute the gradients itself: then None, and the engine does not run."""
    cap = current_capture()
    if cap is None or cap.breaking or cap.disabled:
        return _noop
    if tensors and (config.compiled_autograd or cap.cache.backward_in_graph) and cap.backward_into_graph(
            tensors, grad_tensors, retain_graph, create_graph, inputs, reason):
        return None
    cap.graph_break((reason, _user_stack()), None)
    cap.disabled = True

    def resume() -> None:
        cap.disabled = False
    return resume


def _install_engine_hook() -> None:
    from .. import autograd
    autograd._pre_engine_hook = _engine_hook


_install_engine_hook()

