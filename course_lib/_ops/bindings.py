"""Generated Python bindings: module functions and Tensor methods from the registry.

In PyTorch, ``tools/autograd/gen_python_functions.py`` reads
``native_functions.yaml`` and writes ``python_torch_functions.cpp`` and
``python_variable_methods.cpp``: one small C++ function per op that parses the
Python arguments and calls the dispatcher.

We do the same in Python.  For every registered op, ``python_source(op)`` writes
the text of a function such as::

    def add(self, other, *, alpha=1):
        return _dispatch(_op, (self, other, alpha))

and ``generate()`` compiles it and installs it as ``course_lib.add`` and/or
``Tensor.add``.  Print ``python_source(OPS['sum'])`` to see one.

Deliberate difference: PyTorch's generated parsers check every argument's type
against the schema and raise ``TypeError: add() received an invalid combination
of arguments - got (...), but expected one of: ...``.  These bindings pass the
arguments on as they are; a wrong type fails later, with a different error.
"""
from __future__ import annotations

from .dispatcher import dispatch
from .registry import OPS, OpDef

# Schema defaults that are not Python literals.
_DEFAULTS = {"True": "True", "False": "False", "None": "None", "[]": "()",
             "preserve_format": "'preserve_format'", "contiguous_format": "'contiguous_format'"}

# Methods whose size-like argument may be given as varargs: x.view(2, 3) or x.view((2, 3)).
_VARARG_METHODS = {"view", "reshape", "expand", "permute", "repeat", "tile", "flip"}


def _default(text: str) -> str:
    return _DEFAULTS.get(text, text)


def python_source(op: OpDef, *, method: bool = False) -> str:
    """The source of the binding generated for ``op`` (as a function, or as a Tensor method)."""
    params, call = [], []
    star_done = False
    vararg = method and op.name.rstrip("_") in _VARARG_METHODS and len(op.args) >= 2
    for i, a in enumerate(op.args):
        if vararg and i == 1:
            params.append(f"*{a.name}")
            call.append(f"_sizes({a.name})")
            star_done = True
            continue
        if a.kwarg_only and not star_done:
            params.append("*")
            star_done = True
        params.append(a.name if a.default is None else f"{a.name}={_default(a.default)}")
        call.append(a.name)
    args = ", ".join(call) + ("," if len(call) == 1 else "")
    doc = (op.doc.strip().splitlines() or [""])[0].replace('"', "'")
    return (f"def {op.name}({', '.join(params)}):\n"
            f"    \"\"\"{doc}\n\n    Schema: {op.schema}\n    \"\"\"\n"
            f"    return _dispatch(_op, ({args}))\n")


def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return size


def _compile(op: OpDef, method: bool):
    src = python_source(op, method=method)
    ns = {"_dispatch": dispatch, "_op": op, "_sizes": _sizes}
    exec(compile(src, f"<generated binding {op.name}>", "exec"), ns)  # noqa: S102
    fn = ns[op.name]
    fn.__module__ = "course_lib"
    fn._op = op
    fn._source = src
    return fn


def generate(module_namespace: dict, tensor_cls) -> None:
    """Install a function and/or method for every op in the registry."""
    for op in list(OPS.values()):
        if "function" in op.variants:
            module_namespace.setdefault(op.name, _compile(op, method=False))
        if "method" in op.variants and not hasattr(tensor_cls, op.name):
            setattr(tensor_cls, op.name, _compile(op, method=True))
