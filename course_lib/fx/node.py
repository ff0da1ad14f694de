"""``Node``: one operation in a ``Graph``.

In PyTorch: ``torch/fx/node.py``.  A node has an opcode (``op``), a ``target``
(what it calls), ``args``/``kwargs`` that may contain other nodes, and a
``name``, unique in its graph, that becomes the variable name in the generated
Python code.  Nodes form a doubly linked list in program order (``prev``/``next``)
and keep both directions of their data edges: ``all_input_nodes`` (the nodes in
their arguments) and ``users`` (the nodes that use them).

===============  ======================================  ==============================
opcode           target                                  args / kwargs
===============  ======================================  ==============================
placeholder      the parameter name (``x``, ``*args``)   ``(default,)`` or ``()``
get_attr         a dotted attribute path (``fc.weight``) ``()``
call_function    a Python callable (``operator.add``)    its arguments
call_method      a method name (``"sum"``)               ``(self, *args)``, kwargs
call_module      a dotted submodule path (``"fc"``)      the module's arguments
output           ``"output"``                            ``(returned value,)``
===============  ======================================  ==============================
"""
from __future__ import annotations

import builtins
import operator
import types
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["Node", "Argument", "Target", "map_arg", "map_aggregate", "has_side_effect"]

Target = Any     # a callable for call_function, a string for every other opcode
Argument = Any   # a Node, a base type, None, or a (nested) tuple / list / dict / slice of them

_legal_ops = dict.fromkeys(["placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root"])

# Functions a graph must never drop or deduplicate even when nothing uses their result
# (``torch/fx/node.py: _side_effectful_functions``).  ``has_side_effect`` adds to it.
_side_effectful_functions: set = {print, operator.setitem, operator.delitem}


def has_side_effect(fn: Callable) -> Callable:
    """Mark ``fn`` as side-effectful: dead-code elimination keeps its nodes."""
    _side_effectful_functions.add(fn)
    return fn


def _is_random_or_inplace(name: str) -> bool:
    """Random ops and in-place ops (``add_``, ``uniform_``) have effects beyond their result."""
    if name.endswith("_") and not name.endswith("__"):
        return True
    return name in _RANDOM_NAMES


# course_lib's random factories and functions (``course_lib/_random.py``, ``nn.functional.dropout``)
_RANDOM_NAMES = frozenset({"rand", "randn", "randint", "randperm", "randint_like", "rand_like", "randn_like",
                           "normal", "multinomial", "bernoulli", "poisson", "dropout", "uniform_", "normal_",
                           "manual_seed", "seed"})


def _is_op(target: Any) -> bool:
    """Is ``target`` an op of the registry (``course_lib.OPS["add"]``), as graphs made by a dispatch mode hold?"""
    from .._ops.registry import OpDef
    return isinstance(target, OpDef)


def _target_name(target: Any) -> str:
    """``operator.add`` -> ``"add"``; an op of the registry -> its name; a method name -> itself."""
    if isinstance(target, str):
        return target
    if _is_op(target):
        return target.name
    return getattr(target, "__name__", "")


def _get_qualified_name(func: Callable) -> str:
    """The name under which generated code finds ``func``: ``getattr``, ``course_lib.abs``, ``math.sqrt``.

    FX writes ``torch.abs``; functions of course_lib are named by their public path
    (``course_lib.abs``, ``course_lib.nn.functional.relu``), not the file that defines them.  An op
    of the registry is ``aten.<name>`` (``aten`` is a global of every generated function, as
    ``torch.ops.aten`` is in FX).
    """
    if _is_op(func):
        return f"aten.{func.name}"
    name = func.__name__
    if getattr(builtins, name, None) is func:
        return name
    module = getattr(func, "__module__", None) or ""
    if module.startswith("course_lib"):
        import course_lib
        import course_lib.fx
        import course_lib.nn.functional
        for public, mod in (("course_lib", course_lib), ("course_lib.nn.functional", course_lib.nn.functional),
                            ("course_lib.fx", course_lib.fx)):
            if getattr(mod, name, None) is func:
                return f"{public}.{name}"
    return f"{module}.{func.__qualname__}" if module else func.__qualname__


def _format_arg(arg: Any, max_list_len: float = float("inf")) -> str:
    """An argument as ``Graph.__str__`` shows it: nodes as ``%name``."""
    if isinstance(arg, list):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        maybe_len = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"[{items}{maybe_len}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        maybe_len = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        maybe_comma = "," if len(arg) == 1 else ""
        return f"({items}{maybe_comma}{maybe_len})"
    if isinstance(arg, dict):
        items_str = ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items())
        return f"{{{items_str}}}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


class Node:
    """One operation of a ``Graph``; see the module docstring for the six opcodes."""

    def __init__(self, graph: "Graph", name: str, op: str, target: Target, args: tuple, kwargs: dict,
                 return_type: Any = None) -> None:
        if op not in _legal_ops:
            raise AssertionError(f"Unknown opcode {op}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        if op in ("placeholder", "call_method", "call_module", "get_attr", "output") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}   # insertion-ordered set of the nodes that use this one
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict[str, Any] = {}     # free-form: "val", "tensor_meta", "stack_trace", ...
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # -- the linked list --------------------------------------------------------------
    @property
    def next(self) -> "Node":
        """The next node in program order (the graph's root sentinel after the last one)."""
        return self._next

    @property
    def prev(self) -> "Node":
        """The previous node in program order."""
        return self._prev

    def prepend(self, x: "Node") -> None:
        """Insert ``x`` just before this node (moving it if it is already in the list)."""
        if self == x:
            raise AssertionError("Cannot prepend a node to itself")
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: "Node") -> None:
        """Insert ``x`` just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # -- arguments and uses -----------------------------------------------------------
    @property
    def args(self) -> tuple:
        """The positional arguments; assigning them updates the use lists of both ends."""
        return self._args

    @args.setter
    def args(self, a: tuple) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments; assigning them updates the use lists of both ends."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list["Node"]:
        """The distinct nodes in ``args`` and ``kwargs``, in order of appearance."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args: tuple, new_kwargs: dict) -> None:
        self._args = map_aggregate(new_args, lambda x: x)
        self._kwargs = map_aggregate(new_kwargs, lambda x: x)
        for old_use in self._input_nodes:
            old_use.users.pop(self)
        self._input_nodes = {}
        map_arg(self._args, self._input_nodes.setdefault)
        map_arg(self._kwargs, self._input_nodes.setdefault)
        for new_use in self._input_nodes:
            new_use.users.setdefault(self)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Replace positional argument ``idx``."""
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Replace (or add) keyword argument ``key``."""
        self.kwargs = {**self.kwargs, key: arg}

    def replace_all_uses_with(self, replace_with: "Node",
                              delete_user_cb: Callable[["Node"], bool] | None = None) -> list["Node"]:
        """Make every user of this node use ``replace_with`` instead; returns the users changed.

        ``delete_user_cb(user)`` returning False leaves that user alone.
        """
        changed = []
        for use_node in list(self.users):
            if delete_user_cb is not None and not delete_user_cb(use_node):
                continue
            changed.append(use_node)
            use_node.replace_input_with(self, replace_with)
        return changed

    def replace_input_with(self, old_input: "Node", new_input: "Node") -> None:
        """Replace every occurrence of ``old_input`` in this node's arguments."""
        def swap(n: Node) -> Node:
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # -- purity -----------------------------------------------------------------------
    def is_impure(self) -> bool:
        """Does this node do something besides computing its value (so DCE and CSE must keep it)?

        Placeholders and outputs; calls of side-effectful functions (``print``, ``setitem``,
        ``has_side_effect``); random ops; in-place ops (``add_``, ``iadd``, ``inplace=True``); modules
        marked ``_is_impure``, in-place (``ReLU(inplace=True)``) or random (``Dropout``).  PyTorch's
        ``Node.is_impure`` does not look at ``call_method`` nodes at all, so FX's DCE can drop an unused
        ``x.add_(1)``; course_lib keeps it.
        """
        if self.op in ("placeholder", "output"):
            return True
        if self.kwargs.get("inplace") is True:   # F.relu(x, inplace=True)
            return True
        if self.op == "call_function":
            if self.target in _side_effectful_functions:
                return True
            if _is_op(self.target) and self.target.is_inplace:
                return True
            name = _target_name(self.target)
            if getattr(self.target, "__module__", "") == "_operator":
                return name.startswith("i") and name[1:] in _INPLACE_OPERATOR_BASES
            return _is_random_or_inplace(name)
        if self.op == "call_method":
            return _is_random_or_inplace(self.target)
        if self.op == "call_module":
            mod = self.graph.owning_module
            if mod is None:
                return True  # unknown module: assume the worst
            sub = mod.get_submodule(self.target)
            return (bool(getattr(sub, "_is_impure", False)) or getattr(sub, "inplace", False) is True
                    or type(sub).__name__.startswith("Dropout"))
        return False

    # -- printing ---------------------------------------------------------------------
    def __repr__(self) -> str:
        return self.name

    def _pretty_print_target(self, target: Target) -> str:
        if isinstance(target, str):
            return target
        if getattr(target, "__module__", None) == "_operator":
            return f"operator.{target.__name__}"
        if getattr(target, "__module__", None) == "builtins":
            return f"builtins.{target.__name__}"
        return _get_qualified_name(target)

    def format_node(self, placeholder_names: list[str] | None = None) -> str | None:
        """One line of ``str(graph)``: ``%add : [num_users=1] = call_function[target=operator.add](args = ...)``."""
        if self.op == "placeholder":
            if placeholder_names:   # as in FX: a list that is still empty does not count
                placeholder_names.append(self.target)
                return None
            default_val = "(default=" + str(self.args[0]) + ")" if self.args else ""
            return f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={self.target}]{default_val}"
        if self.op == "get_attr":
            return f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={self.target}]"
        if self.op == "output":
            return f"return {self.args[0]}"
        return (f"%{self.name} : [num_users={len(self.users)}] = "
                f"{self.op}[target={self._pretty_print_target(self.target)}]("
                f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")


_INPLACE_OPERATOR_BASES = frozenset({"add", "and", "concat", "floordiv", "lshift", "mod", "mul", "matmul", "or",
                                     "pow", "rshift", "sub", "truediv", "xor"})


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every Node inside ``a`` (nested tuples, lists, dicts, slices), rebuilding the rest."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply ``fn`` to every leaf of ``a``; tuples (named ones too), lists, dicts and slices are rebuilt."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


# types that appear unchanged in a node's arguments
base_types = (str, int, float, bool, complex, type(None), type(Ellipsis), types.FunctionType)
