"""The Autograd dispatch key: run the op, then record a node for it.

In PyTorch: the generated ``torch/csrc/autograd/generated/VariableType_*.cpp``.
For every op with a derivative, its autograd kernel

1. computes the result one level down (the backend kernel, nothing recorded);
2. creates the op's node (``MulBackward0`` ...), with an edge to each input's
   ``grad_fn`` (or ``AccumulateGrad`` for leaves);
3. saves what the derivative formula will need (only for inputs that need a
   gradient), remembering each saved tensor's version;
4. marks the result: ``requires_grad=True``, ``grad_fn=node``.

In-place ops run their out-of-place twin through these steps, write the values
into ``self`` and move ``self``'s history onto the new node.
"""
from __future__ import annotations

import numpy as np

from .._ops.dispatcher import backend, grad_state
from .graph import Node, SavedTensor, gradient_edge

_Tensor = None


class Derivative:
    """What ``derivatives.py`` declares for one op: node name, what to save, the formula."""

    __slots__ = ("op", "name", "save", "formula", "node_cls", "save_output", "arg_index", "diff_pos",
                 "output_differentiable")

    def __init__(self, op, name: str, save: dict, formula, save_output: bool = False):
        self.op = op
        self.name = name
        self.save = save          # {arg name or "result": tuple of input names whose grad needs it, or None}
        self.formula = formula
        self.save_output = save_output
        self.arg_index = {a.name: i for i, a in enumerate(op.args)}
        self.diff_pos = op.tensor_pos + op.tensor_list_pos
        self.node_cls = type(name, (FormulaNode,), {"__slots__": ()})


class FormulaNode(Node):
    """A node whose backward is a formula from ``derivatives.py``."""

    __slots__ = ("_deriv", "_args", "needs_input_grad", "_out_meta", "_list_lens")

    def apply(self, grad_outputs):
        d = self._deriv
        grads = list(grad_outputs)
        for i, g in enumerate(grads):
            if g is None and self._out_meta is not None and self._out_meta[i] is not None:
                from .._creation import zeros
                shape, dtype = self._out_meta[i]
                grads[i] = zeros(shape, dtype=dtype)
        result = d.formula(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        return _fit_to_inputs(self, result)

    def __getattr__(self, name):
        # ctx.self, ctx.other, ctx.result, ctx.dim, ...: saved values by schema name
        saved = object.__getattribute__(self, "_saved")
        if name.startswith("_saved_"):
            return Node.__getattr__(self, name)
        if saved is not None and name in saved:
            return self._unpack(name)
        raise AttributeError(f"'{type(self).__name__}' has no saved value '{name}'")


def _fit_to_inputs(node, grads) -> tuple:
    """Sum broadcast gradients back to each input's shape and cast to its dtype."""
    out = []
    meta = node._input_meta
    for g, m in zip(grads, meta):
        if g is None or m is None:
            out.append(None)
            continue
        shape, dtype = m
        if g._shape != shape:
            g = sum_to_size(g, shape)
        if g.dtype is not dtype:
            g = g.to(dtype)
        out.append(g)
    return tuple(out)


def sum_to_size(g, shape: tuple):
    """Undo broadcasting: sum ``g`` over the dims that were added or expanded from size 1."""
    lead = len(g._shape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and g._shape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        g = g.sum(tuple(dims), keepdim=True)
    if lead:
        g = g.view(shape)
    return g


def autograd_kernel(op, args: tuple):
    """The Autograd key for ``op`` (set as ``op.autograd`` by ``derivatives.py``)."""
    if op.is_inplace:
        return _inplace(op, args)
    d = op.autograd_spec
    out = backend(op, args)
    _record(d, args, out)
    return out


def _record(d: Derivative, args: tuple, out):
    T = _Tensor
    op = d.op
    edges = []
    needs = []
    meta = []
    for i in op.tensor_pos:
        a = args[i]
        if isinstance(a, T) and a._requires_grad:
            edges.append(gradient_edge(a))
            needs.append(True)
            meta.append((a._shape, a.dtype))
        else:
            edges.append((None, 0))
            needs.append(False)
            meta.append(None)
    for i in op.tensor_list_pos:
        for a in args[i]:
            if isinstance(a, T) and a._requires_grad:
                edges.append(gradient_edge(a))
                needs.append(True)
                meta.append((a._shape, a.dtype))
            else:
                edges.append((None, 0))
                needs.append(False)
                meta.append(None)
    node = d.node_cls(edges)
    node._deriv = d
    node.needs_input_grad = tuple(needs)
    node._input_meta = tuple(meta)
    node._out_meta = None
    # save what the formula needs
    names = [a.name for a in op.args]
    need_by_name = {}
    k = 0
    for i in op.tensor_pos:
        need_by_name[names[i]] = needs[k]
        k += 1
    saved = {}
    for key, users in d.save.items():
        if users is not None and not any(need_by_name.get(u, False) for u in users):
            continue
        if key == "result":
            continue
        v = args[d.arg_index[key]]
        saved[key] = SavedTensor(v) if isinstance(v, T) else v
    # outputs
    outs = out if isinstance(out, tuple) else (out,)
    if len(outs) > 1:
        node._out_meta = tuple((o._shape, o.dtype) if isinstance(o, T) else None for o in outs)
    for nr, o in enumerate(outs):
        if isinstance(o, T) and o.dtype.is_floating_point:
            o.grad_fn = node
            o._output_nr = nr
            o._requires_grad = True
    if "result" in d.save:
        saved["result"] = SavedTensor(outs[0], is_output=True)
    node._saved = saved
    return node


def _inplace(op, args: tuple):
    self = args[0]
    T = _Tensor
    if self.grad_fn is None and self._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    functional = op.functional
    if functional is None or functional.autograd is None:
        # ops like copy_/fill_/zero_/index_put_ have their own derivative entries
        d = op.autograd_spec
        if d is None:
            raise RuntimeError(f"the derivative for '{op.name}' is not implemented.")
        if self._base is not None and self._base._requires_grad is False and not self._requires_grad:
            pass
        _check_view_inplace(self)
        # compute the out-of-place value, then rebase self onto the node
        result = backend(op, args)
        node = _record(d, args, result)  # sets self.grad_fn = node (result is self)
        return result
    _check_view_inplace(self)
    result = functional.autograd(functional, args) if any(
        isinstance(a, T) and a._requires_grad for a in _tensors(functional, args)) else backend(functional, args)
    # write the values into self, then move self's history to the new node
    from .._ops.tensor_ops import write_inplace
    write_inplace(self, result)
    if result.grad_fn is not None:
        self.grad_fn = result.grad_fn
        self._output_nr = 0
        self._requires_grad = True
        saved = self.grad_fn._saved
        if saved and "result" in saved:
            saved["result"] = SavedTensor(self, is_output=True)
    return self


def _tensors(op, args):
    for i in op.tensor_pos:
        yield args[i]
    for i in op.tensor_list_pos:
        yield from args[i]


def _check_view_inplace(self):
    base = self._base
    if base is not None and (base._requires_grad or self._requires_grad):
        raise RuntimeError(
            "course_lib does not support in-place operations on views of tensors that require grad "
            "(PyTorch rebuilds the base's history with a CopySlices node). Use an out-of-place op, "
            "or clone() the base first.")


def _install(tensor_cls):
    global _Tensor
    _Tensor = tensor_cls
