"""``Proxy``: the stand-in value that records what the program does to it.

In PyTorch: ``torch/fx/proxy.py``.  During symbolic tracing the function runs
with ``Proxy`` objects instead of tensors.  Every operator (``x + 1``), method
call (``x.sum()``), attribute read (``x.shape``) and indexing on a proxy
appends a node to the tracer's graph and returns a new proxy for the result.
What a proxy cannot do is tell its value: ``if proxy:``, ``for v in proxy``
and ``len(proxy)`` raise, because the graph would have to pick one branch.
"""
from __future__ import annotations

import dis
import inspect
import operator
import sys
import traceback
from typing import Any, Iterator

from .graph import Graph, magic_methods, reflectable_magic_methods
from .node import Argument, Node, Target, base_types, map_aggregate

__all__ = ["TracerBase", "GraphAppendingTracer", "TraceError", "Proxy", "Attribute"]


class TraceError(ValueError):
    """A traced program did something a graph cannot represent (branch on a traced value, ...)."""


class TracerBase:
    """Creates nodes and proxies; ``Tracer`` (``_symbolic_trace.py``) adds modules and patching."""

    graph: Graph
    record_stack_traces: bool = False   # put the user's stack in each node's ``meta["stack_trace"]``
    trace_asserts: bool = False

    def create_node(self, kind: str, target: Target, args: tuple, kwargs: dict, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Add a node to the graph (a hook for tracers that want to annotate nodes)."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        if self.record_stack_traces and kind not in ("placeholder", "output"):
            node.meta["stack_trace"] = _user_stack_trace()
        return node

    def proxy(self, node: Node) -> "Proxy":
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: tuple, kwargs: dict, name: str | None = None,
                     type_expr: Any = None) -> "Proxy":
        """Turn ``args``/``kwargs`` into node arguments, add the node, return a proxy for it."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node)

    def create_arg(self, a: Any) -> Argument:
        """A value as a node argument: proxies become their nodes, containers are rebuilt.

        Anything else must be a constant the generated code can spell (numbers, strings,
        None, ``...``, dtypes, devices); ``Tracer.create_arg`` adds tensors and modules.
        """
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            args = tuple(self.create_arg(elem) for elem in a)
            return self.create_node("call_function", a.__class__, args, {})
        if isinstance(a, (tuple, list)):
            return type(a)(self.create_arg(elem) for elem in a)
        if isinstance(a, dict):
            r = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. Got key: {k}")
                r[k] = self.create_arg(v)
            return r
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, base_types) or a is None or a is ...:
            return a
        if _is_course_lib_constant(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: "Proxy") -> bool:
        """``bool(proxy)`` (``if``, ``while``, ``and``): a plain tracer cannot know the value."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: "Proxy") -> Iterator:
        """``iter(proxy)``: the number of elements is not known."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
                         "more detailed explanation of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: "Proxy") -> "Proxy":
        """``proxy.keys()`` (what ``**proxy`` calls)."""
        return Attribute(obj, "keys")()


def _is_course_lib_constant(a: Any) -> bool:
    """dtypes, devices and sizes: their repr is valid code in the generated function's globals."""
    from .. import Size, device, dtype
    return isinstance(a, (dtype, device, Size))


def _user_stack_trace() -> str:
    """The stack of the traced program, without the frames of course_lib.fx itself."""
    frames = [f for f in traceback.extract_stack()[:-1] if "course_lib/fx/" not in f.filename.replace("\\", "/")]
    return "".join(traceback.format_list(frames[-1:]))


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph (to build nodes with operators on proxies)."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph


class Proxy:
    """A ``Node`` wrapper that flows through the traced program and records what touches it.

    A proxy cannot be iterated, tested for truth or measured with ``len``: see the module
    docstring.  To keep such code, move it into a function marked with ``course_lib.fx.wrap``
    (it becomes one node), or make the decision static (``concrete_args``).
    """

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> "Attribute":
        # not in the graph yet: a method call becomes one call_method node, not getattr + call
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict) -> "Proxy":
        return Proxy(self.node, self.tracer)

    def __call__(self, *args: Any, **kwargs: Any) -> "Proxy":
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator["Proxy"]:
        # ``a, b = proxy`` unpacks a known number of values: read it from the caller's bytecode
        frame = inspect.currentframe()
        calling_frame = frame.f_back
        inst_list = list(dis.get_instructions(calling_frame.f_code))
        if sys.version_info >= (3, 11):
            from bisect import bisect_left
            inst_idx = bisect_left(inst_list, calling_frame.f_lasti, key=lambda x: x.offset)
        else:
            inst_idx = calling_frame.f_lasti // 2
        inst = inst_list[inst_idx]
        if inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __abs__(self) -> "Proxy":
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def keys(self) -> "Proxy":
        return self.tracer.keys(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call course_lib.fx.wrap('len') at module scope")


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node if the value is used, a ``call_method`` node if it is called."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        # created lazily: most attributes are methods that are called at once
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _define_magic(method: str) -> None:
    def impl(*args: Any, **kwargs: Any) -> Proxy:
        tracer = args[0].tracer
        return tracer.create_proxy("call_function", getattr(operator, method), args, kwargs)
    impl.__name__ = method
    setattr(Proxy, f"__{method.strip('_')}__", impl)


def _define_reflectable(orig_method_name: str) -> None:
    method_name = f"__r{orig_method_name.strip('_')}__"

    def impl(self: Proxy, rhs: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", getattr(operator, orig_method_name), (rhs, self), {})
    impl.__name__ = method_name
    impl.__qualname__ = method_name
    setattr(Proxy, method_name, impl)


for _method in magic_methods:
    _define_magic(_method)
for _method in reflectable_magic_methods:
    _define_reflectable(_method)


def _find_proxy(*objects_to_search: Any) -> Proxy | None:
    """The first proxy inside ``objects_to_search`` (nested containers included), or None."""
    found: list[Proxy] = []

    def find(x: Any) -> Any:
        if isinstance(x, Proxy) and not found:
            found.append(x)
        return x

    map_aggregate(objects_to_search, find)
    return found[0] if found else None

