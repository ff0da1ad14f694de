"""``GraphModule``: a ``Module`` whose ``forward`` is generated from a ``Graph``.

In PyTorch: ``torch/fx/graph_module.py``.  The module copies from ``root`` only
the submodules, parameters and buffers the graph refers to (``get_attr`` and
``call_module`` targets), generates Python source from the graph (``.code``),
and executes it to get ``forward``.  After editing ``gm.graph``, call
``gm.recompile()`` to regenerate the code.

Each instance gets its own subclass (``GraphModuleImpl``), so that assigning the
generated ``forward`` to the class does not change other graph modules.  The
source is registered with ``linecache`` under a ``<eval_with_key>.N`` file name,
so tracebacks through generated code show its lines, as in FX.
"""
from __future__ import annotations

import copy
import itertools
import linecache
from typing import Any, Callable

from .. import Tensor
from ..nn import Module, Parameter
from .graph import Graph, PythonCode

__all__ = ["GraphModule"]

_next_id = itertools.count()


def _exec_with_source(src: str, globals_: dict) -> None:
    key = f"<eval_with_key>.{next(_next_id)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)


def _forward_from_src(src: str, globals_: dict) -> Callable:
    globals_copy = dict(globals_)
    _exec_with_source(src, globals_copy)
    return globals_copy.pop("forward")


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Copy ``from_module.<target>`` (dotted) into ``to_module``, creating empty modules on the way."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return   # already copied with a parent
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj: Any, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, Tensor) and not isinstance(from_obj, Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


def _addindent(s: str, num_spaces: int) -> str:
    """Indent every line but the first; lines of only spaces become empty (as FX's ``_addindent``)."""
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join((num_spaces * " ") + line if line.strip() else "" for line in lines)


def _print_readable(module: "GraphModule", module_name: str, print_output: bool = True) -> str:
    src = module.graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
    module_code = _addindent(f"class {module_name}(course_lib.nn.Module):\n" + src, 4)
    submodule_code_list = [""]
    for submodule_name, submodule in module.named_children():
        if isinstance(submodule, GraphModule):
            submodule_code_list.append(_print_readable(submodule, submodule_name, print_output=False))
    output = module_code + _addindent("\n".join(submodule_code_list), 4)
    if print_output:
        print(output)
    return output


class GraphModule(Module):
    """A module generated from a ``Graph``; see the module docstring.

    ``root`` is a module (the attributes the graph uses are copied from it) or a dict from
    target names to attributes; ``class_name`` names the class in ``repr`` and ``print_readable``.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> "GraphModule":
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # one class per instance: forward is set on it
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was not "
                                           "provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.meta: dict[str, Any] = {}
        self.graph = graph

    @property
    def graph(self) -> Graph:
        """The graph; assigning one makes this module its owner and regenerates the code."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        object.__setattr__(self, "_graph", g)
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward``, generated from the graph."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerate ``forward`` from ``self.graph`` (call it after editing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        object.__setattr__(self, "_code", python_code.src)
        type(self).forward = _forward_from_src(self._code, python_code.globals)
        return python_code

    # -- submodules ------------------------------------------------------------------
    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at dotted path ``target``, creating empty modules on the way."""
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = Module()
                setattr(mod, item, submod)
            if not isinstance(submod, Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; False if there is none."""
        *path, target_submod = target.split(".")
        mod: Module = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, target_submod) or not isinstance(getattr(mod, target_submod), Module):
            return False
        delattr(mod, target_submod)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove the submodules no ``call_module`` or ``get_attr`` node reaches."""
        used: set[str] = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                fullpath = node.target.split(".")
                used.update(".".join(fullpath[:i]) for i in range(1, len(fullpath) + 1))
        to_delete = [name for name, _ in self.named_modules() if name and name not in used]
        for name in to_delete:
            self.delete_submodule(name)

    # -- printing and copying -----------------------------------------------------------
    def print_readable(self, print_output: bool = True) -> str:
        """The generated code as a class, with each node's source line as a comment
        (nested graph modules as nested classes)."""
        return _print_readable(self, self._get_name(), print_output)

    def __str__(self) -> str:
        return "\n".join([super().__repr__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    def __deepcopy__(self, memo: dict) -> "GraphModule":
        fake_mod = Module()
        fake_mod.__dict__ = copy.deepcopy(self.__dict__, memo)
        res = GraphModule(fake_mod, fake_mod.__dict__["_graph"], self._get_name())
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __copy__(self) -> "GraphModule":
        res = GraphModule(self, self.graph, self._get_name())
        res.meta = getattr(self, "meta", {})
        return res
