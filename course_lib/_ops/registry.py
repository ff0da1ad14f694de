"""The op registry: every operator is declared exactly once.

In PyTorch: ``aten/src/ATen/native/native_functions.yaml`` declares each op's
name, schema and variants; ``tools/autograd/derivatives.yaml`` declares its
derivative; codegen (``torchgen``) turns both into C++ and Python bindings.

Here an ``OpDef`` holds:

* ``name`` and ``schema``: ``"add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"``
* ``cpu``: the kernel (numpy on a strided view of the storage)
* ``meta``: the shape function (same signature, returns tensors on the meta device)
* ``autograd``: the derivative, filled in by ``course_lib.autograd.derivatives``
* ``variants``: ``"function"`` and/or ``"method"``; ``inplace`` names the ``op_`` form.
* ``kind``: what the op does, one of ``KINDS`` (``"pointwise"``, ``"view"``, ``"nn"``, ...).
* ``manual_binding``: the Python function and method are hand-written
  (``python_methods.py``) instead of generated, like PyTorch's ``manual_cpp_binding``.
* ``has_out``: the function takes ``out=`` (the op is in ``OUT_OVERLOADS``: PyTorch declares
  an ``.out`` overload beside it and its Python binding accepts ``out=``).

``python -m course_lib._ops.bindings`` reads the registry and writes ``course_lib.add``,
``Tensor.add``, ``Tensor.add_`` and friends from the schemas into
``python_torch_functions.py`` and ``python_variable_methods.py``.
"""
from __future__ import annotations

import re
from typing import Callable

__all__ = ["OpDef", "OPS", "KINDS", "OUT_OVERLOADS", "register", "get", "default_source"]

# What an op does, as its kernel file groups it. Two kinds change how ops are handled: a "composite" op
# decomposes into other ops and has no kernel of its own (modes and tracers see its parts), and the min-cut
# partitioner recomputes "pointwise" ops instead of saving their outputs (PyTorch's pointwise tag).
# "factory" ops make a tensor from sizes and values (zeros, arange, zeros_like, the tensor() of constants) and
# "random" ops draw from a Generator (rand, normal, uniform_): modes see both, and neither may be recomputed.
KINDS = ("pointwise", "reduction", "view", "composite", "linalg", "nn", "indexing", "copy", "fill", "join",
         "transformation", "factory", "random")

# The ops whose function takes ``out=``: those with an ``.out`` overload in native_functions.yaml
# (``add.out``, ``mm.out``, ...) that ``torch.<name>(..., out=)`` accepts.  ``out_arg.call_with_out``
# holds what each checks before writing.
OUT_OVERLOADS = frozenset({
    # pointwise
    "abs", "acos", "add", "asin", "atan", "atan2", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "ceil", "clamp", "cos", "cosh", "div", "eq", "erf", "exp", "exp2", "expm1", "floor", "floor_divide", "fmod",
    "frac", "ge", "gt", "le", "lerp", "log", "log10", "log1p", "log2", "logical_and", "logical_not", "logical_or",
    "logical_xor", "lt", "maximum", "minimum", "mul", "ne", "neg", "pow", "reciprocal", "remainder", "round",
    "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "square", "sub", "tan", "tanh", "trunc", "where",
    # reductions
    "all", "amax", "amin", "any", "argmax", "argmin", "cumsum", "logsumexp", "max", "mean", "min", "prod", "sum",
    # linear algebra, joins, indexing, the rest
    "addmm", "bmm", "dot", "matmul", "mm", "mv", "cat", "stack", "hstack", "vstack", "dstack", "column_stack",
    "outer", "kron", "gather", "index_select", "scatter", "scatter_add", "scatter_reduce", "index_add",
    "masked_select", "take_along_dim", "nonzero", "tril", "triu", "diagonal_copy", "softmax", "log_softmax",
})

# Schema defaults that are not Python literals.
_DEFAULTS = {"True": "True", "False": "False", "None": "None", "[]": "()",
             "preserve_format": "'preserve_format'", "contiguous_format": "'contiguous_format'"}


def default_source(text: str) -> str:
    """A schema default as Python source (``[]`` -> ``()``, ``contiguous_format`` -> a string)."""
    return _DEFAULTS.get(text, text)


class Arg:
    """One argument of a schema: ``Tensor self``, ``int[1]? dim=None``, ``*``..."""

    __slots__ = ("type", "name", "default", "kwarg_only")

    def __init__(self, type: str, name: str, default: str | None, kwarg_only: bool):
        self.type = type
        self.name = name
        self.default = default
        self.kwarg_only = kwarg_only

    @property
    def is_tensor(self) -> bool:
        return self.type.startswith("Tensor") and not self.type.startswith("Tensor[]")

    @property
    def is_tensor_list(self) -> bool:
        return self.type.startswith("Tensor[]")

    def __repr__(self) -> str:
        d = f"={self.default}" if self.default is not None else ""
        return f"{self.type} {self.name}{d}"


_SCHEMA = re.compile(r"^(\w+)\((.*)\)\s*->\s*(.+)$")


def parse_schema(schema: str) -> tuple[str, list[Arg], str]:
    m = _SCHEMA.match(schema.strip())
    if m is None:
        raise ValueError(f"bad schema: {schema!r}")
    name, argstr, ret = m.groups()
    args: list[Arg] = []
    kwarg_only = False
    for part in _split_args(argstr):
        if part == "*":
            kwarg_only = True
            continue
        decl, _, default = part.partition("=")
        typ, _, aname = decl.strip().rpartition(" ")
        args.append(Arg(typ.strip(), aname.strip(), default.strip() or None, kwarg_only))
    return name, args, ret.strip()


def _split_args(s: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


class OpDef:
    """A registered operator.  See the module docstring."""

    __slots__ = ("name", "schema", "args", "returns", "cpu", "meta", "autograd", "variants",
                 "inplace", "tensor_pos", "tensor_list_pos", "kind", "doc", "is_view",
                 "is_inplace", "overload", "functional", "autograd_spec", "composite", "manual_binding", "has_out")

    def __init__(self, schema: str, cpu: Callable, meta: Callable | None, *,
                 variants=("function", "method"), inplace: str | None = None,
                 kind: str | None = None, doc: str = "", is_view: bool = False,
                 is_inplace: bool = False, manual_binding: bool = False):
        self.schema = schema
        self.name, self.args, self.returns = parse_schema(schema)
        self.overload = self.name
        self.cpu = cpu
        self.meta = meta if meta is not None else cpu  # view ops: same code on both devices
        self.autograd = None       # the Autograd-key kernel (None: no derivative, e.g. composites)
        self.autograd_spec = None  # the Derivative declared in course_lib/autograd/derivatives.py
        self.variants = tuple(variants)
        self.inplace = inplace
        self.tensor_pos = tuple(i for i, a in enumerate(self.args) if a.is_tensor)
        self.tensor_list_pos = tuple(i for i, a in enumerate(self.args) if a.is_tensor_list)
        self.kind = kind
        self.composite = kind == "composite"  # decomposes into other ops; modes don't see it
        self.doc = doc
        self.is_view = is_view
        self.is_inplace = is_inplace
        self.functional = None  # for an in-place op: its out-of-place twin
        self.manual_binding = manual_binding  # its Python binding is in python_methods.py, not generated
        self.has_out = False  # its function takes out= (set by register() from OUT_OVERLOADS)

    def __repr__(self) -> str:
        return f"<op {self.schema}>"

    def __call__(self, *args):
        """Call through the dispatcher with positional arguments in schema order."""
        from .dispatcher import dispatch
        return dispatch(self, args)


OPS: dict[str, OpDef] = {}


def register(schema: str, *, meta: Callable | None = None, variants=("function", "method"),
             inplace: str | None = None, kind: str, is_view: bool = False,
             is_inplace: bool = False, manual_binding: bool = False):
    """Decorator: declare an op from its schema, its CPU kernel and its kind (one of ``KINDS``).

    >>> @register("neg(Tensor self) -> Tensor", meta=unary_meta, kind="pointwise")
    ... def neg(self):
    ...     return wrap(np.negative(self._np()))
    """
    if kind not in KINDS:
        raise ValueError(f"op kind {kind!r} is not one of {KINDS}")

    def deco(fn: Callable) -> OpDef:
        op = OpDef(schema, fn, meta, variants=variants, inplace=inplace, kind=kind,
                   doc=fn.__doc__ or "", is_view=is_view, is_inplace=is_inplace,
                   manual_binding=manual_binding)
        if op.name in OPS:
            raise ValueError(f"op {op.name} registered twice")
        op.has_out = op.name in OUT_OVERLOADS
        OPS[op.name] = op
        return op
    return deco


def get(name: str) -> OpDef:
    return OPS[name]
