"""``symbolic_trace``: run a module or function on proxies and record a ``Graph``.

In PyTorch: ``torch/fx/_symbolic_trace.py``.  The tracer calls ``forward`` once
with a ``Proxy`` per parameter.  While it runs, a few things are patched so that
calls reach the tracer:

- ``Module.__call__``: a call of a *leaf* module (course_lib.nn's layers, as
  ``torch.nn``'s in FX; not ``Sequential``) becomes one ``call_module`` node;
  other modules are traced through.
- ``Module.__getattr__``: reading a parameter or buffer gives a ``get_attr`` proxy.
- the functions of ``course_lib``, ``course_lib.nn.functional`` and ``math`` (in
  those modules and in the traced function's globals), and functions marked with
  ``wrap``: called with a proxy among their arguments, they become one
  ``call_function`` node.  PyTorch reaches ``torch.*`` functions through
  ``Proxy.__torch_function__`` instead; course_lib has no such protocol.

Everything is restored when tracing ends, even if it fails.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import math
import types
import warnings
from typing import TYPE_CHECKING, Any, Callable

from .. import Tensor
from ..nn import Module, Parameter, Sequential
from .graph import Graph
from .node import Argument, has_side_effect
from .proxy import Proxy, TracerBase, _find_proxy

if TYPE_CHECKING:
    from .graph_module import GraphModule

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH"]

_orig_module_call = Module.__call__
_orig_module_getattr = Module.__getattr__

# (id of the globals dict, name) -> globals dict: functions ``wrap`` registered
_wrapped_fns_to_patch: dict[tuple[int, str], dict] = {}


@has_side_effect
def _assert(condition: Any, message: str = "") -> None:
    """``assert condition, message`` as a function, so that a graph can hold it (``torch._assert``)."""
    assert condition, message


@has_side_effect
def _assert_is_none(value: Any, msg: str) -> None:
    assert value is None, msg


_HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _patch_function(fn: types.FunctionType, nargs: int) -> types.FunctionType:
    """``fn`` with every parameter made positional: keyword-only ones, ``*args`` and ``**kwargs``
    each take one positional value (a proxy), in the order of ``co_varnames``."""
    co = fn.__code__
    new_code = co.replace(co_argcount=nargs, co_posonlyargcount=0, co_kwonlyargcount=0,
                          co_flags=co.co_flags & ~_HAS_VARSTUFF)
    return types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


class _PH:
    """``concrete_args`` value meaning "still a placeholder"."""

    def __repr__(self) -> str:
        return "PH"


PH = _PH()


def _default_autowrap_modules() -> tuple:
    import course_lib
    import course_lib.nn.functional
    return (math, course_lib, course_lib.nn.functional)


def _is_plain_function(value: Any) -> bool:
    """Functions only: patching a class (``course_lib.Tensor``) would break ``isinstance``."""
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType))


class Tracer(TracerBase):
    """Records a ``Graph`` from a module or function; subclass it to change what is a leaf.

    ``autowrap_modules``: modules whose functions become ``call_function`` nodes when called
    with a proxy (default: ``math``, ``course_lib``, ``course_lib.nn.functional``);
    ``autowrap_functions``: more such functions.
    """

    def __init__(self, autowrap_modules: tuple = (), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self._autowrap_search = list(autowrap_modules or _default_autowrap_modules())
        self._autowrap_function_ids = {id(value) for m in self._autowrap_search
                                       for name, value in m.__dict__.items()
                                       if not name.startswith("_") and _is_plain_function(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict[Module, str] | None = None
        self.root: Module | None = None

    # -- what tracing sees --------------------------------------------------------------
    def create_arg(self, a: Any) -> Argument:
        """Parameters, buffers and submodules of the root become ``get_attr`` nodes; other
        tensors are stored on the root as ``_tensor_constant0``, ``_tensor_constant1``, ..."""
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for n_, p_ in self.root.named_buffers():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
        elif isinstance(a, Module):
            for n_, p_ in self.root.named_modules():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
        if isinstance(a, Tensor):
            qualname = self.tensor_attrs.get(id(a))
            if not qualname:
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[id(a)] = qualname
                self._keep_alive.append(a)
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def get_fresh_qualname(self, prefix: str) -> str:
        """``prefix`` + the first number not yet an attribute of the root."""
        i = 0
        while hasattr(self.root, f"{prefix}{i}"):
            i += 1
        return f"{prefix}{i}"

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Leaves appear as one ``call_module`` node: course_lib.nn's own layers, except ``Sequential``."""
        return type(m).__module__.startswith("course_lib.nn") and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        """The dotted path of ``mod`` inside the root (``"layer1.0.conv1"``)."""
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m: Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A leaf module call becomes a ``call_module`` node; any other module is traced through."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Proxy]) -> Any:
        """A parameter or buffer read on a module: one ``get_attr`` proxy per attribute."""
        def maybe_get_proxy(collection) -> Proxy | None:
            for n, p in collection:
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {})
                    return parameter_proxy_cache[n]
            return None

        if isinstance(attr_val, Parameter):
            proxy = maybe_get_proxy(self.root.named_parameters())
            if proxy is not None:
                return proxy
        if isinstance(attr_val, Tensor):
            proxy = maybe_get_proxy(self.root.named_buffers())
            if proxy is not None:
                return proxy
        return attr_val

    # -- the trace --------------------------------------------------------------------
    def create_args_for_root(self, root_fn: Callable, is_module: bool,
                             concrete_args: dict[str, Any] | None) -> tuple[Callable, list]:
        """One placeholder per parameter of ``root_fn``; ``*args`` and ``**kwargs`` are one placeholder each
        (``*args``, ``**kwargs``), whose proxy the function indexes (``args[0]``)."""
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names_iter = iter(co.co_varnames)
        args: list[Any] = []
        skip_arg_idx = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip_arg_idx = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)

        def proxy_placeholder(name: str) -> Any:
            if concrete_args is not None and name in concrete_args:
                value = concrete_args[name]
                if value is PH:
                    return self.create_proxy("placeholder", name, (), {})
                # The value is baked into the graph.  The input stays (as name_1), checked by an assert
                # node: a guard on the specialisation, as FX writes it.
                out = self.create_proxy("placeholder", f"{name}_1", default_of(name), {})
                if type(value) in (bool, int, float, str):
                    msg = f"{name} has been specialized to have value {value} but got another value"
                    self.create_proxy("call_function", _assert, (out == value, msg), {})
                elif value is None:
                    msg = f"{name} has been specialized to have value None but got another value"
                    self.create_proxy("call_function", _assert_is_none, (out, msg), {})
                else:
                    warnings.warn(f"Was not able to add assertion to guarantee correct input {name} to specialized "
                                  "function. It is up to the user to make sure that your inputs match the inputs "
                                  "you specialized the function with.")
                return value
            return self.create_proxy("placeholder", name, default_of(name), {})

        def default_of(name: str) -> tuple:
            param = sig.parameters.get(name.lstrip("*"))
            return () if param is None or param.default is inspect.Parameter.empty else (param.default,)

        arg_names = [next(names_iter) for _ in range(skip_arg_idx, total_args)]
        args.extend(proxy_placeholder(n) for n in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & _HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(proxy_placeholder("*" + next(names_iter)))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(proxy_placeholder("**" + next(names_iter)))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def trace(self, root: Module | Callable, concrete_args: dict[str, Any] | None = None) -> Graph:
        """Trace ``root`` (a module's ``forward`` or a function) and return its ``Graph``."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            self.submodule_paths = {mod: name for name, mod in root.named_modules()}
        else:
            self.root = Module()
            fn = root
        self.graph = Graph(tracer_cls=type(self))
        if hasattr(fn, "__code__"):
            code = fn.__code__
            self.graph._co_fields = {"co_name": code.co_name, "co_filename": code.co_filename,
                                     "co_firstlineno": code.co_firstlineno}
        # tensors already stored on the modules are found by identity, not copied
        self.tensor_attrs: dict[int, str] = {}
        self._keep_alive: list = []

        def collect_tensor_attrs(m: Module, prefix_atoms: list[str]) -> None:
            for k, v in m.__dict__.items():
                if isinstance(v, Tensor):
                    self.tensor_attrs[id(v)] = ".".join(prefix_atoms + [k])
            for k, v in m.named_children():
                collect_tensor_attrs(v, prefix_atoms + [k])

        collect_tensor_attrs(self.root, [])
        if not isinstance(fn, types.FunctionType):
            raise AssertionError(f"Expected FunctionType, got {type(fn)}")
        fn_globals = fn.__globals__
        fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)

        parameter_proxy_cache: dict[str, Proxy] = {}

        @functools.wraps(_orig_module_getattr)
        def module_getattr_wrapper(mod: Module, attr: str) -> Any:
            attr_val = _orig_module_getattr(mod, attr)
            return self.getattr(attr, attr_val, parameter_proxy_cache)

        @functools.wraps(_orig_module_call)
        def module_call_wrapper(mod: Module, *args: Any, **kwargs: Any) -> Any:
            def forward(*args: Any, **kwargs: Any) -> Any:
                return _orig_module_call(mod, *args, **kwargs)
            _autowrap_check(patcher, getattr(getattr(mod, "forward", mod), "__globals__", {}),
                            self._autowrap_function_ids)
            return self.call_module(mod, forward, args, kwargs)

        try:
            with _Patcher() as patcher:
                patcher.patch_method(Module, "__getattr__", module_getattr_wrapper, deduplicate=False)
                patcher.patch_method(Module, "__call__", module_call_wrapper, deduplicate=False)
                _patch_wrapped_functions(patcher)
                _autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
                for module in self._autowrap_search:
                    _autowrap_check(patcher, module.__dict__, self._autowrap_function_ids)
                self.create_node("output", "output", (self.create_arg(fn(*args)),), {})
        finally:
            self.submodule_paths = None
        return self.graph


# ---------------------------------------------------------------------------
# patching
# ---------------------------------------------------------------------------
class _Patcher:
    """Replace globals and class attributes until the ``with`` block ends (in reverse order)."""

    def __init__(self) -> None:
        self.patches_made: list[tuple[Callable[[], None], Callable[[], None]]] = []
        self.visited: set[int] = set()

    def patch(self, frame_dict: dict, name: str, new_fn: Callable, deduplicate: bool = True) -> None:
        """``frame_dict[name] = new_fn`` (a builtin such as ``len`` is shadowed, then removed)."""
        new_fn.__fx_already_patched = deduplicate
        if name not in frame_dict and hasattr(builtins, name):
            def undo() -> None:
                frame_dict.pop(name, None)
        elif getattr(frame_dict[name], "__fx_already_patched", False):
            return
        else:
            orig = frame_dict[name]

            def undo() -> None:
                frame_dict[name] = orig
        frame_dict[name] = new_fn
        self.patches_made.append(undo)

    def patch_method(self, cls: type, name: str, new_fn: Callable, deduplicate: bool = True) -> None:
        """``cls.name = new_fn``."""
        new_fn.__fx_already_patched = deduplicate
        orig_fn = getattr(cls, name)
        if getattr(orig_fn, "__fx_already_patched", False):
            return
        setattr(cls, name, new_fn)
        self.patches_made.append(lambda: setattr(cls, name, orig_fn))

    def visit_once(self, thing: object) -> bool:
        if id(thing) in self.visited:
            return False
        self.visited.add(id(thing))
        return True

    def __enter__(self) -> "_Patcher":
        return self

    def __exit__(self, *exc: Any) -> None:
        while self.patches_made:
            self.patches_made.pop()()
        self.visited.clear()


def _create_wrapped_func(orig_fn: Callable) -> Callable:
    """``orig_fn``, except that a call with a proxy among its arguments becomes a node."""
    @functools.wraps(orig_fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return_proxy = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            return_proxy.node.meta["is_wrapped"] = True
            return return_proxy
        return orig_fn(*args, **kwargs)
    return wrapped


def _patch_wrapped_functions(patcher: _Patcher) -> None:
    for (_, name), frame_dict in _wrapped_fns_to_patch.copy().items():
        if name not in frame_dict and hasattr(builtins, name):
            orig_fn = getattr(builtins, name)
        else:
            orig_fn = frame_dict[name]
        patcher.patch(frame_dict, name, _create_wrapped_func(orig_fn))


def _autowrap_check(patcher: _Patcher, frame_dict: dict, function_ids: set[int]) -> None:
    """Patch the autowrapped functions found in one namespace (a module's or a function's globals)."""
    if patcher.visit_once(frame_dict):
        for name, value in list(frame_dict.items()):
            if not name.startswith("_") and callable(value) and id(value) in function_ids:
                patcher.patch(frame_dict, name, _create_wrapped_func(value))


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Make a module-level function a leaf of tracing: called with a proxy, it becomes one node.

    Call it at module scope, with the function or its name (``wrap("len")`` works for
    builtins), or use it as a decorator.  The function is looked up in the calling
    module's globals when tracing starts.
    """
    if callable(fn_or_name):
        fn_name = fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        fn_name = fn_or_name
    else:
        raise AssertionError("Unsupported type for global function! Must be either a callable or string name")
    currentframe = inspect.currentframe()
    f = currentframe.f_back
    if f.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(f.f_globals), fn_name)] = f.f_globals
    return fn_or_name


def symbolic_trace(root: Module | Callable, concrete_args: dict[str, Any] | None = None) -> "GraphModule":
    """Trace ``root`` into a ``GraphModule`` whose ``.code`` is the traced program.

    >>> def f(x):
    ...     return course_lib.relu(x) + 1
    >>> print(symbolic_trace(f).code)
    <BLANKLINE>
    ...
    def forward(self, x):
        relu = course_lib.relu(x);  x = None
        add = relu + 1;  relu = None
        return add

    ``concrete_args`` fixes some parameters to values (e.g. a flag the code branches on).
    """
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
