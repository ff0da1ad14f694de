"""``export``: a module's forward pass, captured by ``make_fx``, written as an ONNX model.

In PyTorch: ``torch/onnx/utils.py`` (the TorchScript-based exporter, ``dynamo=False``).  PyTorch
traces the model into a TorchScript graph, runs ONNX passes over it (the eval-mode peephole that
folds BatchNorm into the convolution before it, constant folding) and asks each ``aten::`` node's
*symbolic function* (``torch/onnx/symbolic_opset9.py`` ...) for the ONNX nodes that compute it.
Here the capture is chapter 08's: ``make_fx`` records every op that reaches the dispatcher as one
node of an FX graph, so the symbolic functions (:mod:`course_lib.onnx.symbolic_opset`) are
written for course_lib's registry ops (``convolution``, ``native_batch_norm``, ``addmm`` ...).

What the exporter adds to the graph:

* names: inputs and outputs from ``input_names`` / ``output_names``, parameters and buffers as
  initializers named by their ``state_dict`` key (``layer1.0.conv1.weight``);
* dynamic axes: the capture ran with concrete sizes, and a ``view`` records the traced ones
  (``view(x, (2, 512))``).  The exporter follows which dimension of each value comes from a
  dynamic input axis, and writes such a dimension into a ``Reshape`` as ``0`` (copy the input's)
  or ``-1`` (infer), so the model runs at any batch size.  What the traced code turned into
  constants keeps the traced size (an LSTM's zero initial state, InstanceNorm's weight repeated
  per sample): such a model exports, but runs at the traced batch size only;
* eval semantics: the model runs in eval mode while it is captured (BatchNorm uses its running
  statistics, Dropout is the identity), and its mode is restored afterwards, as PyTorch's
  default ``training=TrainingMode.EVAL`` does;
* with ``do_constant_folding``, ops whose inputs are all constants are computed once and stored
  as initializers, and a BatchNorm that follows a convolution is folded into its weight and bias.
"""
from __future__ import annotations

import io
import operator
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import Tensor, no_grad
from .._atomic_file import _atomic_write
from ..fx.experimental.proxy_tensor import make_fx
from ..fx.node import Node
from .errors import OnnxExporterError, SymbolicValueError, UnsupportedOperatorError

__all__ = ["export", "ONNX_DEFAULT_OPSET", "ONNX_MIN_OPSET", "ONNX_MAX_OPSET"]

#: as PyTorch's TorchScript exporter (``torch/onnx/_constants.py``); opsets below 13 are not written
ONNX_DEFAULT_OPSET = 20
ONNX_MIN_OPSET = 13
ONNX_MAX_OPSET = 20

# ops whose result is their input's value, as far as ONNX is concerned
_ALIAS_OPS = {"clone", "alias", "detach", "lift_fresh_copy", "lift_fresh", "contiguous"}
# ops that make a tensor from no tensor: folded into constants, except these
_RANDOM_OPS = {"rand", "randn", "randint", "randperm", "normal", "empty", "empty_like"}
# ops with several outputs of which the exporter computes the first one only
_FIRST_OUTPUT_OPS = {"native_batch_norm", "native_layer_norm", "native_group_norm", "max_pool2d_with_indices"}


def _name(target: Any) -> str:
    return getattr(target, "name", getattr(target, "__name__", str(target)))


class _Exporter:
    """The state of one export: FX graph in, ONNX nodes and initializers out."""

    def __init__(self, gm, param_names: dict[int, str], opset: int, fold: bool) -> None:
        import onnx
        self.onnx = onnx
        self.gm = gm
        self.param_names = param_names
        self.opset = opset
        self.fold = fold
        self.names: dict[Node, str] = {}           # ONNX value name of each emitted node
        self.dims: dict[Node, tuple] = {}          # per dimension: the dynamic axis name, or None
        self.consts: dict[Node, Tensor] = {}       # constant values (parameters, buffers, folded ops)
        self.alias: dict[Node, Node] = {}          # node -> the node whose value it is
        self.skip: set[Node] = set()               # nodes a pattern consumed (t of a Gemm weight)
        self.folded_bn: dict[Node, Node] = {}      # convolution -> the BatchNorm folded into it
        self.nodes: list = []
        self.initializers: dict[str, Any] = {}
        self._init_of: dict[Node, str] = {}
        self._fresh = 0
        self._outputs: set[Node] = set()           # the graph's output nodes
        self.reserved: set[str] = set()            # the input and output names
        self.sym_size: dict[str, int] = {}         # dynamic axis name -> its size in the traced inputs

    # -- values ---------------------------------------------------------------------------
    def resolve(self, n: Node) -> Node:
        while n in self.alias:
            n = self.alias[n]
        return n

    def shape(self, n: Node) -> tuple:
        return tuple(n.meta["tensor_meta"].shape)

    def np_dtype(self, n: Node) -> np.dtype:
        return np.dtype(n.meta["tensor_meta"].dtype.np)

    def dims_of(self, n: Node) -> tuple:
        r = self.resolve(n)
        if r in self.dims:
            return self.dims[r]
        return (None,) * len(self.shape(n))

    def is_const(self, n: Any) -> bool:
        return isinstance(n, Node) and self.resolve(n) in self.consts

    def const_value(self, n: Node) -> Tensor:
        return self.consts[self.resolve(n)]

    def fresh(self, hint: str) -> str:
        self._fresh += 1
        return f"onnx::{hint}_{self._fresh}"

    def initializer(self, array: np.ndarray, name: str) -> str:
        if name not in self.initializers:
            # (np.asarray, not np.ascontiguousarray: that one makes a 0-d array 1-d)
            self.initializers[name] = self.onnx.numpy_helper.from_array(np.asarray(array, order="C"), name)
        return name

    def constant(self, value: Any, dtype: Any, hint: str = "Constant") -> str:
        """A new initializer holding ``value`` (a number, list or array) as ``dtype``."""
        return self.initializer(np.asarray(value, dtype=dtype), self.fresh(hint))

    def value(self, n: Any) -> str:
        """The ONNX value name of an FX argument ('' for None: an omitted optional input)."""
        if n is None:
            return ""
        r = self.resolve(n)
        if r in self.consts:
            if r not in self._init_of:
                t = self.consts[r]
                name = self.param_names.get(id(t))
                if name is None:
                    name = r.target if r.op == "get_attr" else f"onnx::{r.name}"
                self._init_of[r] = self.initializer(t.detach().numpy(), name)
            return self._init_of[r]
        try:
            return self.names[r]
        except KeyError:
            raise OnnxExporterError(f"the value of {n.name} was never computed") from None

    def out(self, node: Node) -> str:
        """The ONNX name of ``node``'s result: the FX node's name (``.<k>`` added if an input or an
        output is named so); graph outputs are renamed at the end."""
        r = self.resolve(node)
        if r not in self.names:
            name, k = r.name, 0
            while name in self.reserved:
                k += 1
                name = f"{r.name}.{k}"   # (FX names are identifiers: no dots)
            self.names[r] = name
        return self.names[r]

    def add(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str] | str, **attrs: Any) -> str:
        """Append an ONNX node; returns its (first) output name."""
        outputs = [outputs] if isinstance(outputs, str) else list(outputs)
        while inputs and inputs[-1] == "":
            inputs = inputs[:-1]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), outputs,
                                                     name=f"/{op_type}_{len(self.nodes)}", **attrs))
        return outputs[0]

    def temp(self, node: Node, suffix: str) -> str:
        return f"{node.name}/{suffix}"

    # -- passes ----------------------------------------------------------------------------
    def plan(self, output_nodes: list[Node]) -> None:
        """Aliases, constants and the patterns (Gemm weights, BatchNorm folding), before any emission."""
        for node in self.gm.graph.nodes:
            if node.op == "get_attr":
                self.consts[node] = getattr(self.gm, node.target)
            if node.op != "call_function":
                continue
            name = _name(node.target)
            if node.target is operator.getitem:
                src, idx = node.args
                if _name(src.target) in _FIRST_OUTPUT_OPS:
                    if idx == 0:
                        self.alias[node] = src
                    elif node.users or node in output_nodes:
                        raise SymbolicValueError(f"output {idx} of aten::{_name(src.target)} cannot be exported "
                                                 "(only its first result has an ONNX equivalent here)", node.name)
                continue
            if name in _ALIAS_OPS or (name == "_to_copy" and node.args[0].meta["tensor_meta"].dtype
                                      == node.meta["tensor_meta"].dtype):
                self.alias[node] = node.args[0]
        for node in self.gm.graph.nodes:
            if node.op != "call_function":
                continue
            name = _name(node.target)
            if name in ("addmm", "mm"):   # Linear: Gemm with transB=1 on the weight itself
                mat2 = node.args[2] if name == "addmm" else node.args[1]
                if (isinstance(mat2, Node) and _name(mat2.target) == "t" and self._static_const(mat2.args[0])
                        and len(mat2.users) == 1 and mat2 not in output_nodes):
                    self.skip.add(mat2)
            if name == "native_batch_norm" and self.fold:
                self._plan_bn_fold(node, output_nodes)

    def _static_const(self, n: Any) -> bool:
        """Whether ``n`` is a constant of the graph (a get_attr, through aliases)."""
        return isinstance(n, Node) and self.resolve(n).op == "get_attr"

    def _plan_bn_fold(self, bn: Node, output_nodes: list[Node]) -> None:
        conv, weight, bias, mean, var, training = bn.args[:6]
        if (training or not isinstance(conv, Node) or conv.op != "call_function"
                or _name(conv.target) != "convolution" or len(conv.users) != 1 or conv in output_nodes
                or conv.args[6] or not self._static_const(conv.args[1])
                or not all(a is None or self._static_const(a) for a in (conv.args[2], weight, bias))
                or not (self._static_const(mean) and self._static_const(var))):
            return
        self.folded_bn[conv] = bn
        self.alias[bn] = conv

    def emit(self, node: Node) -> None:
        from .symbolic_opset import SYMBOLICS
        if node in self.alias or node in self.skip:
            r = self.resolve(node)
            if r in self.dims:
                self.dims.setdefault(node, self.dims[r])
            return
        if node.target is operator.getitem:
            return
        name = _name(node.target)
        tensor_args = [a for a in _flat(node.args) if isinstance(a, Node)]
        if self.fold and all(self.is_const(a) for a in tensor_args) and name not in _FIRST_OUTPUT_OPS \
                and (tensor_args or name not in _RANDOM_OPS):
            with no_grad():
                self.consts[node] = node.target(*_map_args(node.args, self.const_value))
            return
        if not node.users and node not in self._outputs:
            return   # dead code (a shape computation whose result nothing uses)
        symbolic = SYMBOLICS.get(name)
        if symbolic is None:
            raise UnsupportedOperatorError(f"aten::{name}", self.opset, None)
        symbolic(self, node, *node.args)
        if node not in self.dims and "tensor_meta" in node.meta:
            self.dims[node] = self.broadcast_dims(node, tensor_args)

    def broadcast_dims(self, node: Node, inputs: list[Node]) -> tuple:
        """Dynamic axes of an op's result, matched from the right against its tensor inputs'."""
        ndim = len(self.shape(node))
        out = [None] * ndim
        for a in inputs:
            if "tensor_meta" not in a.meta:
                continue
            d = self.dims_of(a)
            for i in range(1, min(ndim, len(d)) + 1):
                if out[-i] is None and d[-i] is not None and self.shape(a)[-i] == self.shape(node)[-i]:
                    out[-i] = d[-i]
        return tuple(out)

    def run(self, input_nodes: list[Node], input_names: list[str], input_dims: list[tuple],
            output_nodes: list[Node], output_names: list[str], output_axes: list[dict]):
        helper, onnx = self.onnx.helper, self.onnx
        self._outputs = set(output_nodes)
        self.reserved = set(input_names) | set(output_names)
        self.plan(output_nodes)
        for n, name, dims in zip(input_nodes, input_names, input_dims):
            self.names[n] = name
            self.dims[n] = dims
            for size, d in zip(self.shape(n), dims):
                if d is not None:
                    self.sym_size.setdefault(d, size)
        for node in self.gm.graph.nodes:
            if node.op == "call_function":
                self.emit(node)
        self._name_outputs(output_nodes, output_names, set(input_names))
        inputs = [helper.make_tensor_value_info(name, _elem_type(n), _dims(self.shape(n), d))
                  for n, name, d in zip(input_nodes, input_names, input_dims)]
        outputs = []
        for n, name, axes in zip(output_nodes, output_names, output_axes):
            d = list(self.dims_of(n))
            for axis, axis_name in axes.items():
                d[axis] = axis_name
            outputs.append(helper.make_tensor_value_info(name, _elem_type(n), _dims(self.shape(n), d)))
        graph = helper.make_graph(self.nodes, "main_graph", inputs, outputs, list(self.initializers.values()))
        opsets = [helper.make_opsetid("", self.opset)]
        from .. import __version__
        model = helper.make_model(graph, opset_imports=opsets, producer_name="course_lib",
                                  producer_version=__version__, ir_version=helper.find_min_ir_version_for(opsets))
        onnx.checker.check_model(model)
        return model

    def _name_outputs(self, output_nodes: list[Node], output_names: list[str], input_names: set[str]) -> None:
        """Give the graph's outputs their names: the node computing one writes it under that name; an
        output that is an input, a constant or another output's value gets an Identity node."""
        renames: dict[str, str] = {}
        for n, name in zip(output_nodes, output_names):
            r = self.resolve(n)
            internal = self.names.get(r)
            if r.op == "call_function" and r not in self.consts and internal is not None \
                    and internal not in renames and internal not in input_names:
                renames[internal] = name
            else:
                self.add("Identity", [self.value(n)], name)
        for proto in self.nodes:
            for field in (proto.input, proto.output):
                field[:] = [renames.get(v, v) for v in field]


def _flat(args: Any):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _flat(a)
        else:
            yield a


def _map_args(args: Any, fn) -> Any:
    if isinstance(args, (list, tuple)):
        return type(args)(_map_args(a, fn) for a in args)
    return fn(args) if isinstance(args, Node) else args


def _elem_type(n: Node) -> int:
    from onnx.helper import np_dtype_to_tensor_dtype
    return np_dtype_to_tensor_dtype(np.dtype(n.meta["tensor_meta"].dtype.np))


def _dims(shape: tuple, dims: Sequence) -> list:
    return [d if d is not None else s for s, d in zip(shape, dims)]


def _normalize_dynamic_axes(dynamic_axes: Mapping | None, given_names: set[str]) -> dict[str, dict[int, str]]:
    """``{"input": {0: "batch"}}`` as is; ``{"input": [0]}`` names the axis ``input_dynamic_axes_1``.

    PyTorch's ``_validate_dynamic_axes``, with its warnings: a key that is not one of the
    ``input_names`` / ``output_names`` given, an axis list without names, a repeated axis.
    """
    out: dict[str, dict[int, str]] = {}
    for key, value in (dynamic_axes or {}).items():
        if key not in given_names:
            warnings.warn(f"Provided key {key} for dynamic axes is not a valid input/output name", stacklevel=3)
        if isinstance(value, list):
            warnings.warn("No names were found for specified dynamic axes of provided input."
                          f"Automatically generated names will be applied to each dynamic axes of input {key}",
                          stacklevel=3)
            axes: dict[int, str] = {}
            for i, x in enumerate(value):
                if not isinstance(x, int):
                    raise ValueError("The type of axis index is expected to be an integer")
                if x in axes:
                    warnings.warn(f"Duplicate dynamic axis index {x} was provided for input {key}.", stacklevel=3)
                else:
                    axes[x] = f"{key}_dynamic_axes_{i + 1}"
            out[key] = axes
        else:
            out[key] = {int(k): str(v) for k, v in value.items()}
    return out


def _parameter_names(model: Any) -> dict[int, str]:
    names: dict[int, str] = {}
    if hasattr(model, "named_parameters"):
        for k, t in model.named_parameters():
            names.setdefault(id(t), k)
        for k, t in model.named_buffers():
            names.setdefault(id(t), k)
    return names


def export(model, args: tuple | Tensor = (), f: str | os.PathLike | io.IOBase | None = None, *,
           input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None,
           opset_version: int | None = None, dynamic_axes: Mapping | None = None,
           do_constant_folding: bool = True) -> None:
    """Write ``model`` (run on ``args``) to ``f`` as an ONNX model, as ``torch.onnx.export(..., dynamo=False)``.

    ``f`` is a path (written atomically: a failed export leaves the file there untouched) or a
    binary file object.  ``input_names`` / ``output_names`` name the graph's inputs and outputs
    (default: the captured graph's names).  ``dynamic_axes`` maps an input or output name to its
    symbolic dimensions: ``{"input": {0: "batch"}, "output": {0: "batch"}}``.  ``opset_version``
    defaults to 20, as PyTorch's TorchScript exporter.  An op without an ONNX translation raises
    :class:`~course_lib.onnx.errors.UnsupportedOperatorError` naming it (``aten::<op>``).
    """
    try:
        import onnx  # noqa: F401
    except ImportError as e:
        raise ModuleNotFoundError("course_lib.onnx.export needs the onnx package: pip install onnx==1.23.2 "
                                  "(or the course's extra: pip install -e '.[onnx]')") from e
    opset = ONNX_DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not ONNX_MIN_OPSET <= opset <= ONNX_MAX_OPSET:
        raise ValueError(f"Unsupported ONNX opset version: {opset}. Supported versions are "
                         f"{ONNX_MIN_OPSET} to {ONNX_MAX_OPSET}.")
    if f is None:
        raise ValueError("f must be a path or a binary file object to write the model to")
    args = (args,) if isinstance(args, Tensor) else tuple(args)
    was_training = getattr(model, "training", False)
    if was_training:
        model.train(False)
    try:
        with no_grad():
            gm = make_fx(model)(*args)
    finally:
        if was_training:
            model.train(True)
    graph_nodes = list(gm.graph.nodes)
    placeholders = [n for n in graph_nodes if n.op == "placeholder"]
    input_nodes = [n for n, a in zip(placeholders, args) if isinstance(a, Tensor)]
    out_arg = next(n for n in graph_nodes if n.op == "output").args[0]
    output_nodes = list(_flat(out_arg)) if isinstance(out_arg, (list, tuple)) else [out_arg]   # (h, (h, c))
    if not all(isinstance(n, Node) for n in output_nodes):
        raise OnnxExporterError("the model must return tensors (a tensor, or tuples and lists of them)")
    in_names = list(input_names or ())[:len(input_nodes)]
    in_names += [n.name for n in input_nodes[len(in_names):]]
    out_names = list(output_names or ())[:len(output_nodes)]
    used = set(in_names) | set(out_names)
    for n in output_nodes[len(out_names):]:   # an output that is an input, or twice the same value
        name, k = n.name, 0
        while name in used:
            k += 1
            name = f"{n.name}.{k}"
        used.add(name)
        out_names.append(name)
    axes = _normalize_dynamic_axes(dynamic_axes, set(input_names or ()) | set(output_names or ()))
    input_dims = []
    for n, name in zip(input_nodes, in_names):
        d = [None] * len(n.meta["tensor_meta"].shape)
        for axis, axis_name in axes.get(name, {}).items():
            d[axis] = axis_name
        input_dims.append(tuple(d))
    exporter = _Exporter(gm, _parameter_names(model), opset, do_constant_folding)
    proto = exporter.run(input_nodes, in_names, input_dims, output_nodes, out_names,
                         [axes.get(name, {}) for name in out_names])
    data = proto.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        _atomic_write(f, lambda fh: fh.write(data))
    else:
        f.write(data)
