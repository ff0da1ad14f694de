"""``Graph``: a list of ``Node``s in program order, and the Python code it stands for.

In PyTorch: ``torch/fx/graph.py``.  A graph is a doubly linked list of nodes
hanging off a sentinel ``root`` node, a namespace that keeps node names unique
the way FX does (``add``, ``add_1``, ``sum_1`` because ``sum`` is a builtin), and
a code generator that turns the nodes back into a Python function::

    def forward(self, x):
        abs_1 = course_lib.abs(x)
        add = abs_1 + 1;  abs_1 = None
        return add

Each value is set to ``None`` right after its last use, as in FX, so the
generated code frees intermediates as early as eager execution would.
"""
from __future__ import annotations

import builtins
import copy
import functools
import inspect
import keyword
import math
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .node import (
    Argument,
    Node,
    Target,
    _get_qualified_name,
    _is_op,
    _target_name,
    map_arg,
)

__all__ = ["Graph", "PythonCode", "magic_methods", "reflectable_magic_methods", "inplace_methods"]


# ---------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------
def _snake_case(s: str) -> str:
    """``mod.pascalCase`` -> ``mod.pascal_case``; ``ALL_CAPS`` -> ``all_caps`` (FX's node names)."""
    return _snake_case_sub(s).lower()


_snake_case_sub = functools.partial(re.compile(r"(?<=[a-z])([A-Z])").sub, r"_\1")
_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
# a name, then an optional numeric suffix: "add_1" -> ("add", "1")
_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")


class _CustomBuiltin:
    """A global every generated function gets (``course_lib``, ``inf``, ``device``, ...)."""

    def __init__(self, import_str: str, obj: object) -> None:
        self.import_str = import_str
        self.obj = obj


# Names a node may not take: keywords, builtins (unless the node *is* that builtin), custom globals.
_illegal_names: dict[str, object] = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)
_custom_builtins: dict[str, _CustomBuiltin] = {}


def _register_custom_builtin(name: str, import_str: str, obj: object) -> None:
    _custom_builtins[name] = _CustomBuiltin(import_str, obj)
    _illegal_names[name] = obj


class _OpNamespace:
    """``aten.add`` in generated code: the op ``add`` of course_lib's registry (``course_lib.OPS``).

    PyTorch's generated code calls ``torch.ops.aten.add.Tensor``; course_lib has one entry per
    op name, so ``aten.<name>`` is enough.
    """

    def __getattr__(self, name: str) -> Any:
        # Called only for names not yet looked up: the op is then kept as an attribute, so generated
        # code pays a plain attribute read for ``aten.mul`` from the second call on.
        from .. import OPS
        try:
            op = OPS[name]
        except KeyError:
            raise AttributeError(f"'aten' has no op '{name}'") from None
        setattr(self, name, op)
        return op

    def __repr__(self) -> str:
        return "aten"


aten = _OpNamespace()


def _register_course_lib_builtins() -> None:
    import course_lib
    _register_custom_builtin("aten", "from course_lib.fx.graph import aten", aten)
    _register_custom_builtin("inf", "from math import inf", math.inf)
    _register_custom_builtin("nan", "from math import nan", math.nan)
    _register_custom_builtin("NoneType", "NoneType = type(None)", type(None))
    _register_custom_builtin("course_lib", "import course_lib", course_lib)
    _register_custom_builtin("device", "from course_lib import device", course_lib.device)


_register_course_lib_builtins()


def _is_magic(x: str) -> bool:
    return x.startswith("__") and x.endswith("__")


class _Namespace:
    """Unique names, as FX makes them (``torch/fx/graph.py: _Namespace.create_name``).

    - every object gets one name, every name is used once;
    - a name never shadows a builtin or a keyword unless the object *is* that builtin:
      ``sum`` -> ``sum_1``, ``abs`` -> ``abs_1``, but the builtin ``getattr`` stays ``getattr``;
    - a taken name gets the next free suffix of its base: ``add``, ``add_1``, ``add_2``.
    """

    def __init__(self) -> None:
        self._obj_to_name: dict[Any, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: Any) -> str:
        """A fresh name built from ``candidate``; the same ``obj`` always gets the same name."""
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate)  # "math.sqrt" -> "math_sqrt"
            if not candidate:
                candidate = "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        existing = self._obj_to_name.setdefault(obj, name)
        if existing is not name:
            raise AssertionError("obj is already associated")


# ---------------------------------------------------------------------------
# how operators print
# ---------------------------------------------------------------------------
reflectable_magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}", "truediv": "{} / {}",
    "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}", "lshift": "{} << {}", "rshift": "{} >> {}",
    "and_": "{} & {}", "or_": "{} | {}", "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
magic_methods = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
    "pos": "+{}", "neg": "-{}", "invert": "~{}", **reflectable_magic_methods,
}
inplace_methods = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}", "imod": "{} %= {}",
    "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}", "ipow": "{} **= {}", "irshift": "{} >>= {}",
    "isub": "{} -= {}", "itruediv": "{} /= {}", "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}


def _format_target(base: str, target: str) -> str:
    """``self`` + ``"layer1.0.conv"`` -> ``getattr(self.layer1, "0").conv``."""
    r = base
    for e in target.split("."):
        r = f"{r}.{e}" if e.isidentifier() else f'getattr({r}, "{e}")'
    return r


@dataclass
class PythonCode:
    """The generated source of a graph's function and the globals it runs with."""

    src: str
    globals: dict[str, Any]


# ---------------------------------------------------------------------------
# print_tabular without the tabulate package
# ---------------------------------------------------------------------------
def _tabulate_simple(rows: list[list[Any]], headers: list[str]) -> str:
    """``tabulate(rows, headers)`` in its default "simple" format, for columns of text.

    Each column is as wide as its widest cell, and at least its header plus two; cells are
    left-aligned and separated by two spaces; a row of dashes under the header; trailing
    spaces stripped; a cell with line breaks spans several lines.  (tabulate right-aligns
    columns of numbers: a graph's columns never are.)
    """
    cells = [[str(c).strip().split("\n") for c in row] for row in rows]
    widths = [len(h) + 2 for h in headers]
    for row in cells:
        for j, lines in enumerate(row):
            widths[j] = max(widths[j], *(len(s) for s in lines))

    def line(parts: list[str]) -> str:
        return "  ".join(p.ljust(w) for p, w in zip(parts, widths)).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    for row in cells:
        height = max(len(lines) for lines in row)
        for k in range(height):
            out.append(line([lines[k] if k < len(lines) else "" for lines in row]))
    return "\n".join(out)


# ---------------------------------------------------------------------------
# the graph
# ---------------------------------------------------------------------------
class _NodeList:
    """``graph.nodes``: iterate (forwards or ``reversed``) while the list may change under you."""

    def __init__(self, graph: "Graph", direction: str = "_next") -> None:
        self.graph = graph
        self.direction = direction

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            nxt = getattr(cur, self.direction)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> "_NodeList":
        return _NodeList(self.graph, "_prev" if self.direction == "_next" else "_next")


class _InsertPoint:
    def __init__(self, graph: "Graph", new_insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        self.graph._insert = self.orig_insert


class Graph:
    """The nodes of one function, in program order; see the module docstring.

    >>> g = Graph()
    >>> x = g.placeholder("x")
    >>> g.output(g.call_function(operator.add, (x, 1)))
    """

    def __init__(self, owning_module: Any = None, tracer_cls: type | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._insert = self._root.prepend   # new nodes go at the end
        self._len = 0
        self._graph_namespace = _Namespace()
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._co_fields: dict[str, Any] = {}

    @property
    def nodes(self) -> _NodeList:
        """The nodes in program order; ``reversed(graph.nodes)`` walks backwards."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target | None = None) -> list[Node]:
        """The nodes with opcode ``op`` (and ``target``; required for ``call_function``, as in FX)."""
        if op == "call_function" and target is None:
            raise AssertionError("target must not be None for call_function op")
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # -- building -----------------------------------------------------------------------
    def _target_to_str(self, target: Target) -> str:
        """A node's name candidate: ``operator.add`` -> ``add``, ``"__getitem__"`` -> ``getitem``."""
        if callable(target):
            op = _target_name(target)
        else:
            op = target
            if _is_magic(op):
                op = op[2:-2]
        return _snake_case(op)

    def create_node(self, op: str, target: Target, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any = None) -> Node:
        """Create a node at the current insert point (the end, unless ``inserting_before/after``)."""
        args = () if not args else args
        kwargs = {} if not kwargs else kwargs
        if not isinstance(args, tuple):
            raise AssertionError(f"args must be a tuple, got {type(args)}")
        if not isinstance(kwargs, dict):
            raise AssertionError(f"kwargs must be a dict, got {type(kwargs)}")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr: Any = None, default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the function; ``default_value`` makes it optional."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Read ``self.<qualified_name>`` (a parameter, buffer, constant or submodule)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:
        """Call the submodule at ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:
        """Call ``args[0].<method_name>(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None, kwargs: dict | None = None,
                      type_expr: Any = None) -> Node:
        """Call a Python callable: ``operator.add``, ``course_lib.abs``, a user function."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any = None) -> Node:
        """The value the function returns (nodes, constants or containers of them)."""
        return self.create_node(op="output", target="output", args=(result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x) -> Node:
        """Copy ``node`` (of any graph) into this one; ``arg_transform`` maps its input nodes."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g: "Graph", val_map: dict[Node, Node]) -> Argument:
        """Copy every node of ``g`` except its output into this graph; returns the output's value.

        ``val_map`` maps ``g``'s nodes to this graph's and is filled in.
        """
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                return map_arg(node.args[0], lambda n: val_map[n])
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict | None = None) -> "Graph":
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, {})
        out_node = next(iter(reversed(self.nodes)), None)
        if out_node is not None and out_node.op == "output":
            g.output(out, type_expr=out_node.type)
        return g

    # -- editing ------------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that nothing uses any more."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node")
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        # forget its inputs, so that they no longer count it as a user
        to_erase._update_args_kwargs(map_arg(to_erase._args, lambda n: None),
                                     map_arg(to_erase._kwargs, lambda n: None))

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """``with graph.inserting_before(node):`` new nodes go just before ``node`` (None: the start)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """``with graph.inserting_after(node):`` new nodes go just after ``node`` (None: the end of the graph,
        as in torch.fx, whose docstring says "the beginning" while its code appends)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Remove the nodes nothing uses and that have no side effect (``Node.is_impure``).

        Walks backwards, so a chain of dead nodes goes in one pass.  Returns whether
        anything was removed.
        """
        self.lint()
        has_side_effect = is_impure_node if is_impure_node is not None else Node.is_impure
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not has_side_effect(node):
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph is well formed: known opcodes, own nodes, topological order, unique
        names, and (with an owning module) targets that exist."""
        seen_names: set[str] = set()
        seen_values: set[Node] = set()
        for node in self.nodes:
            if node.op not in ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                context = f" of Node '{node}' "
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}'{context}does not belong to this Graph, but was used as an "
                                       f"argument! If you are copying nodes from another graph, make sure to use "
                                       f"``arg_transform`` on node_copy() to remap values\n{self}")
                if arg not in seen_values:
                    raise RuntimeError(f"Argument '{arg}'{context}was used before it has been defined! Please check "
                                       f"that Nodes in the graph are topologically ordered\n{self}")
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
        if self.owning_module is None:
            return
        from ..nn import Module
        for node in self.nodes:
            if node.op not in ("get_attr", "call_module"):
                continue
            m_itr = self.owning_module
            atoms = node.target.split(".")
            for i, atom in enumerate(atoms):
                new_m_itr = getattr(m_itr, atom, None)
                seen_qualname = ".".join(atoms[:i])
                if new_m_itr is None:
                    raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                       f"{atom} of {seen_qualname}")
                if node.op == "call_module" and not isinstance(new_m_itr, Module):
                    raise RuntimeError(f"Node {node} target {node.target} {atom} of {seen_qualname} does "
                                       "not reference an nn.Module")
                m_itr = new_m_itr

    # -- printing -------------------------------------------------------------------------
    def __str__(self) -> str:
        placeholder_names: list[str] = []
        node_strs = [node.format_node(placeholder_names) for node in self.nodes]
        s = f"graph({', '.join(placeholder_names)}):"
        for node_str in node_strs:
            if node_str:
                s += "\n    " + node_str
        return s

    def print_tabular(self) -> None:
        """Print one row per node: opcode, name, target, args, kwargs, in FX's column layout.

        FX prints with the ``tabulate`` package; course_lib uses it when it is installed and
        otherwise lays the table out the same way itself.
        """
        # an op of the registry shows as aten.add (its repr is its whole schema)
        node_specs = [[n.op, n.name, _get_qualified_name(n.target) if _is_op(n.target) else n.target, n.args,
                       n.kwargs] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        try:
            from tabulate import tabulate
        except ImportError:
            print(_tabulate_simple(node_specs, headers))
        else:
            print(tabulate(node_specs, headers=headers))

    # -- code generation -------------------------------------------------------------------
    def python_code(self, root_module: str, *, verbose: bool = False) -> PythonCode:
        """The graph as the source of ``def forward(self, ...)`` and the globals it needs.

        ``root_module`` is how the code refers to the owning module (``"self"``); ``verbose``
        adds a comment with the user's source line above the nodes that recorded one.
        """
        namespace = _Namespace()
        for node in self.nodes:   # nodes' names first, so globals cannot take them
            namespace.create_name(node.name, node)
        return _gen_python_code(list(self.nodes), root_module, namespace, verbose=verbose)


_frame_regex = re.compile(r'^\s*File "(.+)", line (\d+), in (.+)$')


def _stack_trace_summary(stack_trace: str | None) -> str:
    """``File: model.py:12 in forward, code: y = x + 1`` from the innermost frame of a stack trace."""
    if stack_trace:
        lines = stack_trace.strip("\n").split("\n")
        for i in range(len(lines) - 1, -1, -1):
            m = _frame_regex.match(lines[i])
            if m:
                code = lines[i + 1].strip() if i + 1 < len(lines) else ""
                return f"File: {m.group(1)}:{m.group(2)} in {m.group(3)}, code: {code}"
    return "No stacktrace found for following nodes"


def _gen_python_code(nodes: list[Node], root_module: str, namespace: _Namespace, *, verbose: bool) -> PythonCode:
    """FX's ``CodeGen._gen_python_code``, without type annotations and pytree handling."""
    free_vars: list[str] = []
    defaults: list[str] = []   # " = value" or "" per entry of free_vars
    body: list[str] = []
    globals_: dict[str, Any] = {}

    def add_global(name_hint: str, obj: Any) -> str:
        """Make ``obj`` reachable from the code; returns the name to use."""
        if _is_op(obj):
            return _get_qualified_name(obj)   # aten.add: through the ``aten`` global
        if name_hint.startswith("course_lib."):
            return name_hint   # course_lib.abs: reached through the ``course_lib`` global
        global_name = namespace.create_name(name_hint, obj)
        if global_name in globals_:
            if globals_[global_name] is not obj:
                raise AssertionError(f"Global name {global_name} already assigned to different object")
            return global_name
        globals_[global_name] = obj
        return global_name

    for name, cb in _custom_builtins.items():
        add_global(name, cb.obj)

    def _get_repr(arg: Any) -> str:
        if isinstance(arg, Node):
            return repr(arg)
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            global_name = add_global(_get_qualified_name(type(arg)), type(arg))
            return f"{global_name}{repr(tuple(arg))}"
        from .. import Tensor
        if isinstance(arg, Tensor):
            return f"course_lib.Tensor(size={list(arg.shape)}, dtype={str(arg.dtype).split('.')[-1]})"
        if isinstance(arg, tuple):
            if len(arg) == 1:
                return f"({_get_repr(arg[0])},)"
            return "(" + ", ".join(_get_repr(a) for a in arg) + ")"
        if isinstance(arg, list):
            return "[" + ", ".join(_get_repr(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{_get_repr(k)}: {_get_repr(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return f"slice({_get_repr(arg.start)}, {_get_repr(arg.stop)}, {_get_repr(arg.step)})"
        if _is_op(arg) or (callable(arg) and hasattr(arg, "__name__") and not isinstance(arg, type)):
            return add_global(_get_qualified_name(arg), arg)
        return repr(arg)

    def _format_args(args: tuple, kwargs: dict) -> str:
        res = [_get_repr(a) for a in args]
        res.extend(f"{k} = {_get_repr(v)}" for k, v in kwargs.items())
        return ", ".join(res)

    # The first use of each value seen walking backwards is its last use going forwards:
    # after that node runs, the value is set to None.
    node_to_last_use: dict[Node, Node] = {}
    user_to_last_uses: dict[Node, list[Node]] = {}
    for node in reversed(nodes):
        for input_node in node._input_nodes:
            if input_node not in node_to_last_use:
                node_to_last_use[input_node] = node
                user_to_last_uses.setdefault(node, []).append(input_node)

    def delete_unused_values(user: Node) -> None:
        if user.op == "placeholder":
            return
        if user.op == "output":
            body.append("\n")
            return
        nodes_to_delete = list(user_to_last_uses.get(user, []))
        if not user.users:
            nodes_to_delete.append(user)   # kept for its side effect only: free it at once
        if nodes_to_delete:
            body.append(f";  {' = '.join([repr(n) for n in nodes_to_delete] + ['None'])}\n")
        else:
            body.append("\n")

    prev_summary = None

    def append_stacktrace_summary(node: Node) -> None:
        nonlocal prev_summary
        if node.op in ("placeholder", "output"):
            return
        summary = f"\n# {_stack_trace_summary(node.meta.get('stack_trace'))}\n"
        if summary != prev_summary:
            prev_summary = summary
            body.append(summary)

    def emit_node(node: Node) -> None:
        if node.op == "placeholder":
            free_vars.append(node.target)
            defaults.append("" if not node.args else f" = {_get_repr(node.args[0])}")
            raw_name = node.target.replace("*", "")
            if raw_name != repr(node):
                body.append(f"{repr(node)} = {raw_name}\n")
            return
        if node.op == "call_method":
            body.append(f"{repr(node)} = {_format_target(_get_repr(node.args[0]), node.target)}"
                        f"({_format_args(node.args[1:], node.kwargs)})")
            return
        if node.op == "call_function":
            mod, fname = getattr(node.target, "__module__", ""), getattr(node.target, "__name__", "")
            if mod == "_operator" and fname in magic_methods:
                body.append(f"{repr(node)} = {magic_methods[fname].format(*(_get_repr(a) for a in node.args))}")
                return
            if mod == "_operator" and fname in inplace_methods:
                body.append(f"{inplace_methods[fname].format(*(_get_repr(a) for a in node.args))};  "
                            f"{repr(node)} = {_get_repr(node.args[0])}")
                return
            global_name = add_global(_get_qualified_name(node.target), node.target)
            if (global_name == "getattr" and len(node.args) == 2 and isinstance(node.args[1], str)
                    and node.args[1].isidentifier()):
                body.append(f"{repr(node)} = {_format_target(_get_repr(node.args[0]), node.args[1])}")
                return
            body.append(f"{repr(node)} = {global_name}({_format_args(node.args, node.kwargs)})")
            return
        if node.op == "call_module":
            body.append(f"{repr(node)} = {_format_target(root_module, node.target)}"
                        f"({_format_args(node.args, node.kwargs)})")
            return
        if node.op == "get_attr":
            body.append(f"{repr(node)} = {_format_target(root_module, node.target)}")
            return
        if node.op == "output":
            body.append(f"return {_get_repr(node.args[0])}")
            return
        raise NotImplementedError(f"node: {node.op} {node.target}")

    for node in nodes:
        if verbose:
            append_stacktrace_summary(node)
        emit_node(node)
        delete_unused_values(node)

    if not body:
        body.append("pass\n")   # a graph of placeholders only is still valid Python

    # A default before a required parameter (``def f(x, y=2.0, *, z)`` traced) is not valid Python:
    # such defaults are dropped, those after the last required parameter kept.
    last_required = max((i for i, d in enumerate(defaults) if not d and not free_vars[i].startswith("*")),
                        default=-1)
    params = [v if i < last_required else v + defaults[i] for i, v in enumerate(free_vars)]
    if not params or params[0] != "self":
        params.insert(0, "self")
    prologue = f"def forward({', '.join(params)}):"
    code = "".join(body).lstrip("\n")
    code = "\n".join("    " + line for line in code.split("\n"))
    fn_code = f"\n\n\n{prologue}\n{code}"
    return PythonCode(fn_code, globals_)
