"""Custom differentiable functions: ``class MyFn(Function)`` with ``forward`` and ``backward``.

In PyTorch: ``torch/autograd/function.py`` (``Function``, ``FunctionCtx``) and
``torch/csrc/autograd/python_function.cpp`` (the ``MyFnBackward`` node).

>>> class Cube(Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x ** 3
...     @staticmethod
...     def backward(ctx, grad):
...         (x,) = ctx.saved_tensors
...         return grad * 3 * x ** 2
>>> y = Cube.apply(x)
"""
from __future__ import annotations

from .._ops.dispatcher import grad_state
from .graph import Node, SavedTensor, gradient_edge

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """What ``forward`` and ``backward`` share: saved tensors and any attributes you set."""

    def save_for_backward(self, *tensors) -> None:
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        node = self._node
        if node._saved is None:
            return tuple(getattr(node, "_to_save", ()))  # inside forward
        return tuple(node._unpack(f"t{i}") for i in range(node._n_saved))

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_diff = set(id(t) for t in tensors)

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = value


class BackwardCFunction(Node, FunctionCtx):
    """The node recorded for a custom Function: its ``apply`` calls the user's ``backward``."""

    _fn_cls = None

    def apply(self, grad_outputs):
        grads = list(grad_outputs)
        n_out = len(self._out_meta)
        if len(grads) < n_out:  # backward gets one gradient per output, used or not
            grads += [None] * (n_out - len(grads))
        if getattr(self, "_materialize", True):
            from .._creation import zeros
            for i, g in enumerate(grads):
                if g is None and i < len(self._out_meta):
                    grads[i] = zeros(self._out_meta[i][0], dtype=self._out_meta[i][1])
        r = type(self)._fn_cls.backward(self, *grads)
        if not isinstance(r, tuple):
            r = (r,)
        n_in = len(self.next_functions)
        if len(r) != n_in:
            raise RuntimeError(f"function {type(self).__name__} returned an incorrect number of gradients "
                               f"(expected {n_in}, got {len(r)})")
        out = []
        for g, (node, _), m in zip(r, self.next_functions, self._input_meta):
            if g is not None and m is not None and g._shape != m[0]:
                from .variable_type import sum_to_size
                try:
                    g = sum_to_size(g, m[0])
                except Exception:
                    raise RuntimeError(f"Function {type(self).__name__} returned an invalid gradient at index "
                                       f"{len(out)} - got {list(g._shape)} but expected shape compatible with "
                                       f"{list(m[0])}") from None
            out.append(g if node is not None else None)
        return tuple(out)

    @property
    def _ctx_node(self):
        return self

    @property
    def _node(self):
        """The ctx is the node (as in PyTorch); a property, not an attribute: ``node._node = node`` would
        be a reference cycle, so every backward graph would wait for the garbage collector."""
        return self


class FunctionMeta(type):
    """Creates ``<Name>Backward``, the node class, for each Function subclass."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_fn_cls": cls})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class for custom autograd operations; call them with ``MyFn.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        record = grad_state.enabled and any(needs)
        if record:
            for a in tensor_args:
                if a._requires_grad and getattr(a._storage, "_capture", None) is not None:
                    # a value graph capture has not computed yet (course_lib.compile): reading it ends the
                    # graph, so this node's edges lead to real autograd nodes, as in eager
                    a._storage.data  # noqa: B018
        node = cls._backward_cls()
        Node.__init__(node, ())
        node.needs_input_grad = needs
        prev = grad_state.enabled
        grad_state.enabled = False
        try:
            out = cls.forward(node, *args, **kwargs)
        finally:
            grad_state.enabled = prev
        if not record:
            return out
        node.next_functions = tuple(gradient_edge(a) if isinstance(a, Tensor) else (None, 0) for a in args)
        node._input_meta = tuple((a._shape, a.dtype) if isinstance(a, Tensor) and a._requires_grad else None
                                 for a in args)
        outs = out if isinstance(out, tuple) else (out,)
        non_diff = getattr(node, "_non_diff", set())
        fixed = []
        for nr, o in enumerate(outs):
            if isinstance(o, Tensor):
                if any(o is a for a in tensor_args):
                    o = _alias(o)  # an input returned as is becomes a new tensor of this node
                if id(o) not in non_diff and o.dtype.is_floating_point:
                    o.grad_fn = node
                    o._output_nr = nr
                    o._requires_grad = True
            fixed.append(o)
        node._out_meta = tuple((o._shape, o.dtype) if isinstance(o, Tensor) else ((), None) for o in fixed)
        to_save = getattr(node, "_to_save", ())
        node._n_saved = len(to_save)
        node._saved = {f"t{i}": SavedTensor(t, is_output=any(t is o for o in fixed)) if isinstance(t, Tensor) else t
                       for i, t in enumerate(to_save)}
        return tuple(fixed) if isinstance(out, tuple) else fixed[0]


def _alias(t):
    from .._tensor import Tensor
    if getattr(t._storage, "_capture", None) is not None:
        # a value graph capture has not computed yet (course_lib.compile): reading it ends the graph, so the
        # alias is of a real tensor, as in eager
        t._storage.data  # noqa: B018
    a = Tensor._make(t._storage, t._offset, t._shape, t._stride, t.dtype, t._base, t._vc)
    a._np_cache = t._np_cache
    return a


def once_differentiable(fn):
    """Decorator for ``backward``: run it without recording (it can't be differentiated again)."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        from .grad_mode import no_grad
        with no_grad():
            return fn(ctx, *args)
    return wrapper
