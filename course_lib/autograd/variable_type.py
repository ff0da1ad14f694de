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
into ``self`` and move ``self``'s history onto the new node.  When ``self`` is a
*view* (``y[0].mul_(2)``), the history that changes is the base's: the base's
``grad_fn`` becomes a ``CopySlices`` node wrapping the in-place op's node, and
every view of the base gets a fresh ``AsStridedBackward0`` pointing at it
(PyTorch: ``torch/csrc/autograd/variable.cpp``, ``rebase_history``, and
``functions/tensor.cpp``, ``CopySlices``).
"""
from __future__ import annotations

import weakref

import numpy as np

from .._ops.common import wrap
from .._ops.dispatcher import _mode_stack, backend, grad_state
from .._ops.registry import default_source
from .._tensor import Tensor
from .._tensor_base import TensorBase
from .graph import Node, SavedTensor, _seq, gradient_edge


class Derivative:
    """What ``derivatives.py`` declares for one op: node name, what to save, the formula.

    ``save`` maps a name to the names of the inputs whose gradient needs it (``None``:
    always).  The names are those of ``derivatives.yaml``:

    * an argument of the op (``self``, ``other``, ``dim``, ...);
    * ``result`` (the output), ``result1``, ``result2``, ... (the other outputs) or an
      output's name in the schema (``total_weight``);
    * ``<arg>_geometry``: a tensor argument's shape, stride, storage offset and storage
      size, without its values (PyTorch's ``TensorGeometry(self)``);
    * ``<arg>_args_sizes``: the shape of every tensor of a tensor-list argument
      (PyTorch's ``to_args_sizes(tensors)``).

    The plan for ``_record`` is worked out here, once, so that recording a node on every
    op call does no name lookups.
    """

    __slots__ = ("op", "name", "save", "formula", "node_cls", "save_output", "arg_index", "diff_pos",
                 "output_differentiable", "_plan", "_save_result", "_n_tensor", "_static_drop", "_scalar_drop",
                 "_plan_derived", "_save_outputs")

    def __init__(self, op, name: str, save: dict, formula, save_output: bool = False, scalar_overload=()):
        self.op = op
        self.name = name
        self.save = save          # {name (see above): tuple of input names whose grad needs it, or None}
        self.formula = formula
        self.save_output = save_output
        self.arg_index = {a.name: i for i, a in enumerate(op.args)}
        self.diff_pos = op.tensor_pos + op.tensor_list_pos
        self.node_cls = type(name, (FormulaNode,), {"__slots__": ()})
        # (key, position in args, positions in needs_input_grad that want it, or None for "always", ...)
        input_k = {op.args[i].name: k for k, i in enumerate(op.tensor_pos)}
        outputs = _output_names(op.returns)
        plan, derived, saved_outputs = [], [], []
        for key, users in save.items():
            if key == "result":
                continue
            ks = None if users is None else tuple(input_k[u] for u in users if u in input_k)
            if key in self.arg_index:
                pos = self.arg_index[key]
                plan.append((key, pos, ks, _schema_default(op.args[pos])))
            elif key in outputs and outputs[key] > 0:
                saved_outputs.append((key, outputs[key], ks))
            elif key.startswith("result") and key[len("result"):].isdigit():
                # an op whose schema shows one return but that returns several for some arguments
                # (max(dim) is (values, indices): PyTorch's max.dim overload)
                saved_outputs.append((key, int(key[len("result"):]), ks))
            elif key.endswith("_geometry") and key[:-len("_geometry")] in self.arg_index:
                derived.append((key, self.arg_index[key[:-len("_geometry")]], ks, _geometry))
            elif key.endswith("_args_sizes") and key[:-len("_args_sizes")] in self.arg_index:
                derived.append((key, self.arg_index[key[:-len("_args_sizes")]], ks, _args_sizes))
            else:
                raise ValueError(f"{op.name}: cannot save {key!r}: not an argument, an output, "
                                 f"<arg>_geometry or <arg>_args_sizes")
        self._plan = tuple(plan)
        self._plan_derived = tuple(derived)
        self._save_outputs = tuple(saved_outputs)
        self._save_result = "result" in save
        self._n_tensor = len(op.tensor_pos)
        # Which tensor arguments get an edge in next_functions.  As in PyTorch, arguments that are
        # never differentiable (indices, masks, conditions) get none, and neither does an argument
        # given as a Python number to an op whose torch overload takes a Scalar there
        # (``x ** 2`` is pow.Tensor_Scalar: one edge; ``x * 2`` is mul.Tensor: two).
        self._static_drop = frozenset(k for k, i in enumerate(op.tensor_pos) if op.args[i].name in NON_DIFFERENTIABLE
                                      and not (op.args[i].name == "target" and op.name in DIFFERENTIABLE_TARGET))
        self._scalar_drop = tuple((k, i) for k, i in enumerate(op.tensor_pos) if op.args[i].name in scalar_overload)


def _output_names(returns: str) -> dict:
    """{name: output index} for a schema's returns: ``result0``/``result1``/... and the declared names
    (``(Tensor output, Tensor total_weight)`` also gives ``output`` and ``total_weight``)."""
    parts = [p.strip() for p in returns.strip().strip("()").split(",") if p.strip()]
    names = {}
    for i, part in enumerate(parts):
        names[f"result{i}"] = i
        typ, _, name = part.rpartition(" ")
        if typ and name:
            names[name] = i
    return names


def _geometry(t) -> tuple:
    """``<arg>_geometry``: (shape, stride, storage offset, storage size), without the values."""
    return (t._shape, t._stride, t._offset, t._storage._size)


def _args_sizes(tensors) -> tuple:
    """``<arg>_args_sizes``: the shape of each tensor of a tensor list."""
    return tuple(t._shape for t in tensors)


def _schema_default(arg):
    """The Python value of an argument's schema default (``None`` when it has none)."""
    if arg.default is None:
        return None
    try:
        return eval(default_source(arg.default), {})  # noqa: S307 (schema literals such as 1, False, None)
    except Exception:
        return None


NON_DIFFERENTIABLE = frozenset({"condition", "mask", "index", "indices", "target"})
#: losses whose ``target`` holds values, not class indices: it gets a gradient, as in PyTorch
DIFFERENTIABLE_TARGET = frozenset({"mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
                                   "smooth_l1_loss", "huber_loss"})


class FormulaNode(Node):
    """A node whose backward is a formula from ``derivatives.py``.

    The formula returns one gradient per tensor argument of the op (``None`` for the
    ones it does not differentiate); ``_keep`` picks those that have an edge.
    """

    __slots__ = ("_deriv", "needs_input_grad", "_out_meta", "_keep")

    def apply(self, grad_outputs):
        d = self._deriv
        grads = grad_outputs
        meta = self._out_meta
        if meta is not None and (None in grads or len(grads) < len(meta)):
            grads = list(grads) + [None] * (len(meta) - len(grads))
            for i, g in enumerate(grads):
                if g is None and meta[i] is not None:
                    from .._creation import zeros
                    shape, dtype = meta[i]
                    grads[i] = zeros(shape, dtype=dtype)
        result = d.formula(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        result = _fit_to_inputs(self, result)
        keep = self._keep
        if keep is not None:
            result = tuple(result[k] if k < len(result) else None for k in keep)
        return result

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
        shape = m[0]
        if g._shape != shape:
            g = sum_to_size(g, shape)
        if g.dtype is not m[1]:
            g = g.to(m[1])
        out.append(g)
    return tuple(out)


def sum_to_size(g, shape: tuple):
    """Undo broadcasting: sum ``g`` over the dims that were added or expanded from size 1.

    As PyTorch's ``sum_to``: ``sum(dims, keepdim=True)`` then ``view(shape)``.  When no graph of the
    backward is recorded and no mode watches, the same numpy reduction runs without the two dispatches.
    """
    lead = len(g._shape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and g._shape[lead + i] != 1:
            dims.append(lead + i)
    if dims and not grad_state.enabled and not _mode_stack and g._storage.data is not None \
            and g.dtype.is_floating_point:
        a = g._np()
        return wrap(_add_reduce(a, axis=tuple(dims), dtype=a.dtype, keepdims=True).reshape(shape), g.dtype)
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
    if op.is_view:
        _register_view(out)
    return out


def _record(d: Derivative, args: tuple, out):
    """Create ``d``'s node for a call of its op on ``args`` with result ``out``, save what the
    formula needs and make ``out`` the node's output(s).  Runs on every recorded op: keep it lean."""
    T = Tensor  # op results are exactly Tensor: `a.__class__ is T` skips most isinstance calls
    op = d.op
    edges = []
    needs = []
    meta = []  # (shape, dtype, stride) of each input that needs a gradient (stride: see _mm in derivatives.py)
    for i in op.tensor_pos:
        a = args[i]
        if (a.__class__ is T or isinstance(a, T)) and a._requires_grad:
            fn = a.grad_fn
            edges.append((fn, a._output_nr) if fn is not None else gradient_edge(a))
            needs.append(True)
            meta.append((a._shape, a.dtype, a._stride))
        else:
            edges.append(_NO_EDGE)
            needs.append(False)
            meta.append(None)
    if op.tensor_list_pos:
        for i in op.tensor_list_pos:
            for a in args[i]:
                if isinstance(a, T) and a._requires_grad:
                    edges.append(gradient_edge(a))
                    needs.append(True)
                    meta.append((a._shape, a.dtype))
                else:
                    edges.append(_NO_EDGE)
                    needs.append(False)
                    meta.append(None)
    keep = None
    if d._static_drop or d._scalar_drop:
        drop = set(d._static_drop)
        for k, i in d._scalar_drop:
            if not isinstance(args[i], T):
                drop.add(k)
        if drop:
            keep = tuple(k for k in range(len(edges)) if k not in drop)
            edges = [edges[k] for k in keep]
    node = d.node_cls.__new__(d.node_cls)
    node.next_functions = tuple(edges)
    node._sequence_nr = next(_seq)
    node._keep = keep
    node._deriv = d
    node.needs_input_grad = tuple(needs)
    node._input_meta = tuple(meta)
    # save what the formula needs (only for the inputs whose gradient will be computed)
    saved = {}
    if d._plan:
        n_args = len(args)
        for key, pos, users, default in d._plan:
            if users is not None:
                for k in users:
                    if needs[k]:
                        break
                else:
                    continue
            v = args[pos] if pos < n_args else default
            saved[key] = SavedTensor(v) if isinstance(v, T) else v
    if d._plan_derived:
        for key, pos, users, compute in d._plan_derived:
            if users is None or any(needs[k] for k in users):
                saved[key] = compute(args[pos])
    # outputs
    if out.__class__ is T:
        node._out_meta = None
        if out.dtype.is_floating_point:
            out.grad_fn = node
            out._output_nr = 0
            out._requires_grad = True
        if d._save_result:
            saved["result"] = SavedTensor(out, is_output=True)
    else:
        outs = out if isinstance(out, tuple) else (out,)
        node._out_meta = tuple((o._shape, o.dtype) if isinstance(o, T) else None for o in outs) \
            if len(outs) > 1 else None
        for nr, o in enumerate(outs):
            if isinstance(o, T) and o.dtype.is_floating_point:
                o.grad_fn = node
                o._output_nr = nr
                o._requires_grad = True
        if d._save_result:
            saved["result"] = SavedTensor(outs[0], is_output=True)
        for key, nr, users in d._save_outputs:
            if users is None or any(needs[k] for k in users):
                o = outs[nr]
                saved[key] = SavedTensor(o, is_output=o.grad_fn is node) if isinstance(o, T) else o
    node._saved = saved
    return node


_NO_EDGE = (None, 0)
_add_reduce = np.add.reduce


# ---------------------------------------------------------------------------
# in-place ops
# ---------------------------------------------------------------------------
_LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
_VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation."
_NO_GRAD_VIEW = ("A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given "
                 "that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
                 "moving both the view and the inplace either both inside the no_grad block (if you don't want "
                 "the inplace to be tracked) or both outside (if you want the inplace to be tracked).")


def _inplace(op, args: tuple):
    self = args[0]
    T = TensorBase
    if self._requires_grad and self.grad_fn is None and self._base is None:
        raise RuntimeError(_LEAF_INPLACE)
    base = self._base
    if base is not None:
        if base._requires_grad and base.grad_fn is None:
            raise RuntimeError(_VIEW_OF_LEAF)
        if base._requires_grad and not self._requires_grad:
            raise RuntimeError(_NO_GRAD_VIEW)
    functional = op.functional
    if functional is None or functional.autograd is None:
        # ops like copy_/fill_/zero_/index_put_ have their own derivative entries
        d = op.autograd_spec
        if d is None:
            name = functional.name if functional is not None else op.name
            raise RuntimeError(f"the derivative for '{name}' is not implemented.")
        old_edge = gradient_edge(self)
        result = backend(op, args)        # writes into self and bumps its version
        node = _record(d, args, result)   # sets self.grad_fn = node (result is self)
        if old_edge != node.next_functions[0]:
            node.next_functions = (old_edge,) + node.next_functions[1:]
    else:
        needs_grad = False
        for a in _tensors(functional, args):
            if isinstance(a, T) and a._requires_grad:
                needs_grad = True
                break
        if needs_grad:
            result = functional.autograd(functional, args)
            node = result.grad_fn
        else:
            result = backend(functional, args)
            node = None
        if node is not None:
            _keep_original_self(node, self)
        # write the values into self, then move self's history to the new node
        from .._ops.inplace import write_inplace
        write_inplace(self, result)
        if node is not None:
            saved = node._saved
            if saved and "result" in saved:
                saved["result"] = SavedTensor(self, is_output=True)
        result = self
    if node is None:
        return self
    if base is not None:
        _rebase_view(self, base, node)
    else:
        self.grad_fn = node
        self._output_nr = 0
        self._requires_grad = True
        _regenerate_views(self)
    return self


def _keep_original_self(node, self) -> None:
    """If the formula saved ``self``, save a copy: ``self`` is about to be overwritten.

    PyTorch does the same (``original_self`` in the generated code): the saved value is a
    clone recorded in the graph, so higher-order gradients still flow through it.
    """
    saved = node._saved
    if not saved:
        return
    for k, v in saved.items():
        if isinstance(v, SavedTensor) and not v.is_output and v.tensor is self:
            from .._ops.dispatcher import dispatch
            from .._ops.registry import OPS
            saved[k] = SavedTensor(dispatch(OPS["clone"], (self, "preserve_format")))


def _tensors(op, args):
    for i in op.tensor_pos:
        yield args[i]
    for i in op.tensor_list_pos:
        yield from args[i]


class CopySlices(Node):
    """The base's new history after an in-place op on one of its views.

    ``next_functions`` are the base's old history followed by the other inputs of the
    in-place op.  In backward, the gradient of the base passes through unchanged
    outside the view's elements; inside them it goes through the wrapped op's node.
    """

    __slots__ = ("fn", "view_geometry", "base_meta")

    def apply(self, grad_outputs):
        g = grad_outputs[0]
        size, stride, offset = self.view_geometry
        result = g.clone(memory_format="contiguous_format")
        grad_slice = _slice_of(result, self.base_meta, size, stride, offset)
        res = self.fn.apply((grad_slice.clone(),))
        res0 = res[0] if res else None
        if res0 is None:
            grad_slice.zero_()
        else:
            grad_slice.copy_(res0)
        return (result,) + tuple(res[1:])


def _slice_of(result, base_meta, size, stride, offset):
    """The elements of the view (size, stride, storage offset) inside ``result``, a contiguous
    tensor laid out like the base (base_meta = its shape, stride and storage offset)."""
    bshape, bstride, boff = base_meta
    from .._ops.common import contiguous_strides
    if tuple(bstride) == contiguous_strides(tuple(bshape)):
        return result.as_strided(size, stride, offset - boff)
    # a non-contiguous base: map storage positions to the base's element numbers
    import numpy as np

    from .._ops.views import _geometry_index
    pos = _geometry_index(bshape, bstride, boff).reshape(-1)
    order = np.argsort(pos, kind="stable")
    want = _geometry_index(size, stride, offset).reshape(-1)
    elem = order[np.searchsorted(pos[order], want)]
    elem = elem.reshape(size)
    # express the element numbers as a strided view when possible (always true for views
    # made by select/slice/transpose ... of the base); fall back to as_strided otherwise
    strides = []
    for d in range(len(size)):
        if size[d] > 1:
            idx0 = [0] * len(size)
            idx1 = list(idx0)
            idx1[d] = 1
            strides.append(int(elem[tuple(idx1)] - elem[tuple(idx0)]))
        else:
            strides.append(1)
    start = int(elem.reshape(-1)[0]) if elem.size else 0
    return result.as_strided(size, tuple(strides), start)


def _rebase_view(view, base, fn) -> None:
    """After an in-place op on ``view`` recorded as ``fn``: CopySlices on the base, fresh view nodes."""
    cs = CopySlices(((gradient_edge(base) if base._requires_grad else (None, 0)),) + tuple(fn.next_functions[1:]))
    cs.fn = fn
    cs.view_geometry = (view._shape, view._stride, view._offset)
    cs.base_meta = (base._shape, base._stride, base._offset)
    meta = fn._input_meta
    keep = getattr(fn, "_keep", None)
    if keep is not None:
        meta = tuple(meta[k] for k in keep)
    cs._input_meta = ((base._shape, base.dtype),) + tuple(meta[1:])
    base.grad_fn = cs
    base._output_nr = 0
    base._requires_grad = True
    _regenerate_views(base, also=view)


def _register_view(out) -> None:
    """Remember a view of a non-leaf base, so that an in-place change regenerates its ``grad_fn``."""
    T = TensorBase
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        if not isinstance(o, T):
            continue
        base = o._base
        if base is None or base.grad_fn is None:
            continue
        views = base.__dict__.get("_views")
        if views is None:
            views = base.__dict__["_views"] = {}
        key = id(o)

        def _drop(ref, views=views, key=key):
            if views.get(key) is ref:
                del views[key]
        views[key] = weakref.ref(o, _drop)


def _regenerate_views(base, also=None) -> None:
    """Give every live view of ``base`` a new ``AsStridedBackward0`` node on the base's history."""
    views = base.__dict__.get("_views")
    targets = []
    if views:
        for ref in list(views.values()):
            v = ref()
            if v is not None and v is not also:
                targets.append(v)
    if also is not None:
        targets.append(also)
        _register_one(base, also)
    if not targets:
        return
    from .._ops.registry import OPS
    d = OPS["as_strided"].autograd_spec
    for v in targets:
        _record(d, (base, v._shape, v._stride, v._offset), v)


def _register_one(base, view) -> None:
    views = base.__dict__.get("_views")
    if views is None:
        views = base.__dict__["_views"] = {}
    key = id(view)
    if key not in views:
        def _drop(ref, views=views, key=key):
            if views.get(key) is ref:
                del views[key]
        views[key] = weakref.ref(view, _drop)
