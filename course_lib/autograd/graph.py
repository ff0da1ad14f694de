"""The backward graph: nodes, edges, saved tensors and hooks.

In PyTorch: ``torch/csrc/autograd/function.h`` (``Node``, ``next_edges``),
``saved_variable.h`` (saved tensors and their version check),
``functions/accumulate_grad.h`` (``AccumulateGrad``) and ``torch/utils/hooks.py``
(``RemovableHandle``).

A node is one recorded op.  ``next_functions`` are its edges: for each input of
the op, ``(node that produced it, which output of that node)``, or
``(None, 0)`` for inputs that don't need a gradient.  Leaves that require grad
end in an ``AccumulateGrad`` node that adds into ``.grad``.
"""
from __future__ import annotations

import itertools
import sys
import weakref

import numpy as np

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "RemovableHandle", "gradient_edge", "saved_tensors_hooks"]

_seq = itertools.count()


class RemovableHandle:
    """Returned by ``register_hook`` and friends; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks_dict: dict):
        try:
            self.hooks_dict_ref = weakref.ref(hooks_dict)
        except TypeError:  # a plain dict can't be weakly referenced: keep it
            self.hooks_dict_ref = lambda d=hooks_dict: d
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        d = self.hooks_dict_ref()
        if d is not None:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class SavedTensor:
    """A tensor kept for backward, with the version it had when saved.

    Unpacking checks the version (an in-place change since saving is an error) and
    fails after the graph was freed by a backward pass without ``retain_graph``.
    Outputs of the node are kept without their ``grad_fn`` (to avoid a reference
    cycle) and get it back when unpacked.

    Inside ``saved_tensors_hooks(pack, unpack)`` the tensor itself is not kept:
    ``pack(tensor)`` returns what to keep and ``unpack(that)`` gives a tensor back in
    backward (checkpointing uses this to drop activations and recompute them).
    """

    __slots__ = ("tensor", "version", "is_output", "output_nr", "packed", "unpack_hook")

    def __init__(self, t, is_output: bool = False):
        self.version = t._vc.value
        self.is_output = is_output
        self.output_nr = t._output_nr
        if _saved_hooks:
            pack, self.unpack_hook = _saved_hooks[-1]
            self.packed = pack(t)
            self.tensor = None
            return
        self.unpack_hook = None
        if is_output:
            a = Tensor._make(t._storage, t._offset, t._shape, t._stride, t.dtype, t._base, t._vc)
            a._np_cache = t._np_cache
            self.tensor = a
        else:
            self.tensor = t

    def unpack(self, node: "Node"):
        if self.unpack_hook is not None:
            return self.unpack_hook(self.packed)
        t = self.tensor
        if t._vc.value != self.version:
            if self.is_output:
                where = f", which is output {self.output_nr} of {_short_name(node)},"
            elif t.grad_fn is not None:
                where = f", which is output {t._output_nr} of {_short_name(t.grad_fn)},"
            else:
                where = ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[torch.{t.dtype._tensor_name}Tensor [{', '.join(map(str, t._shape))}]]{where} is at version "
                f"{t._vc.value}; expected version {self.version} instead. Hint: enable anomaly detection to find "
                "the operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")
        if self.is_output:
            out = Tensor._make(t._storage, t._offset, t._shape, t._stride, t.dtype, t._base, t._vc)
            out._np_cache = t._np_cache
            out.grad_fn = node
            out._output_nr = self.output_nr
            out._requires_grad = True
            return out
        return t


_saved_hooks: list = []  # stack of (pack, unpack) pairs


class saved_tensors_hooks:
    """Context manager: tensors saved for backward inside it go through ``pack_hook``.

    ``pack_hook(tensor) -> anything`` runs when a node saves a tensor; what it returns is
    kept instead of the tensor.  ``unpack_hook(that) -> tensor`` runs when backward needs
    the tensor.  In PyTorch: ``torch.autograd.graph.saved_tensors_hooks``.

    >>> with saved_tensors_hooks(lambda t: t.numpy().copy(), lambda a: course_lib.tensor(a)):
    ...     y = x.exp()        # ExpBackward0 keeps a numpy copy of y
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _saved_hooks.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _saved_hooks.pop()
        return False


def _short_name(node) -> str:
    n = type(node).__name__
    i = n.find("Backward")
    return n[:i] if i > 0 else n


_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
          "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
          "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
          "if you need to access saved tensors after calling backward.")


_FREED_MARK = object()

from .._ops.common import wrap  # noqa: E402
from .._ops.dispatcher import _mode_stack  # noqa: E402
from .._ops.dispatcher import grad_state as _grad_state  # noqa: E402
from .._tensor import Tensor  # noqa: E402


class Node:
    """One recorded op in the backward graph.

    Subclasses implement ``apply(grad_outputs) -> grad_inputs`` (tuples, one entry per
    output / per edge in ``next_functions``).
    """

    __slots__ = ("next_functions", "_saved", "_sequence_nr", "_input_meta", "__weakref__", "__dict__")
    # Rarely set fields are class-level defaults (an instance that sets one keeps it in its
    # __dict__): creating a node on every recorded op then costs four attribute writes.
    _released = False
    _pre_hooks = None
    _hooks = None
    _tensor_pre_hooks = None
    _retains_grad_hooks = None

    def __init__(self, next_functions=()):
        self.next_functions = tuple(next_functions)
        self._saved = None
        self._sequence_nr = next(_seq)
        self._input_meta = None

    @property
    def metadata(self) -> dict:
        """A dict for your own annotations (as ``Node.metadata`` in PyTorch)."""
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d

    def name(self) -> str:
        return type(self).__name__

    def apply(self, grad_outputs: tuple) -> tuple:
        raise NotImplementedError

    def __call__(self, *grad_outputs):
        return self.apply(grad_outputs)

    # saved values -------------------------------------------------------------
    def _unpack(self, key):
        v = self._saved[key]
        if v is _FREED_MARK:
            raise RuntimeError(_FREED)
        if isinstance(v, SavedTensor):
            return v.unpack(self)
        return v

    def _release(self) -> None:
        # Free the saved tensors (plain values such as dims stay).  Only a node that had
        # saved tensors complains when it is run again.
        saved = self._saved
        if saved:
            for k, v in saved.items():
                if isinstance(v, SavedTensor) or hasattr(v, "_storage"):
                    saved[k] = _FREED_MARK
                    self._released = True

    def __getattr__(self, name):
        # grad_fn._saved_self, grad_fn._saved_other, ... as in PyTorch
        if name.startswith("_saved_"):
            key = name[len("_saved_"):]
            saved = object.__getattribute__(self, "_saved")
            if saved is not None and key in saved:
                return self._unpack(key)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    # hooks ------------------------------------------------------------------------
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after this node runs; may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = {}
        h = RemovableHandle(self._hooks)
        self._hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before this node runs; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The end of the graph for a leaf: adds the incoming gradient into ``variable.grad``."""

    __slots__ = ("variable", "_post_hooks")

    def __init__(self, variable):
        super().__init__(())
        self.variable = variable
        self._post_hooks = None

    def apply(self, grad_outputs):
        var = self.variable
        g = grad_outputs[0]
        if g is None:
            return ()
        if var._grad is None:
            if _grad_state.enabled:
                var._grad = g  # create_graph: keep the graph of the gradient
            elif sys.getrefcount(g) <= _STEAL_REFS and _stealable(g):
                # nobody else holds this gradient: keep it without a copy, as PyTorch does
                var._grad = g if g._base is None else _detached_root_layout(g)
            else:
                # a copy: the same gradient tensor may also flow to other leaves
                var._grad = _fresh_copy(g)
        elif _grad_state.enabled:
            var._grad = var._grad + g
        else:
            var._grad.add_(g)
        if var._post_acc_hooks:
            for hook in list(var._post_acc_hooks.values()):
                hook(var)
        return ()


# References to the incoming gradient while AccumulateGrad.apply looks at it: the engine's input
# buffer list and its loop variable, the tuple passed to apply, apply's local ``g`` and
# getrefcount's own argument.  Anything above that (a user's variable, a hook that kept it,
# another buffer) means it is shared.
_STEAL_REFS = 5


def _stealable(g) -> bool:
    """Whether ``g``'s memory may become ``.grad`` without a copy (PyTorch: ``is_tensor_stealable``
    in ``torch/csrc/autograd/functions/accumulate_grad.h``): no history, contiguous over its whole
    storage, and no other tensor or numpy view sharing that memory.

    ``g`` may be a view whose base (the root of the view chain) nobody else holds: the weight
    gradient of ``Linear`` is the transpose of a transposed matrix product, a bias gradient a sum
    viewed to the bias's shape.  PyTorch counts only references to the tensor; here the base's
    references are counted too, since it shares the memory.
    """
    if g.grad_fn is not None or g._requires_grad:
        return False
    st = g._storage
    base = g._base
    st_refs = 3                                  # g._storage, local ``st``, getrefcount's argument
    if base is not None:
        # base: g._base, local ``base``, getrefcount's argument
        if base.grad_fn is not None or base._requires_grad or sys.getrefcount(base) > 3 \
                or base._storage is not st:
            return False
        st_refs = 4                              # and base._storage
    if st.data is None or st._owner is not None or sys.getrefcount(st) > st_refs:
        return False
    if g._offset != 0 or g.numel() != st._size or not g.is_contiguous():
        return False
    data = st.data
    owner = data if data.base is None else data.base
    if type(owner) is not np.ndarray:
        return False
    # Count the references to the memory's owner that we know of; one more is a view held elsewhere
    # (for example a hook that kept g.numpy()).
    known = 2                                    # the local ``owner``, getrefcount's argument
    known += 2 if data is owner else 1           # st.data and the local ``data``, or data.base
    for t in (g, base):
        cached = t._np_cache if t is not None else None
        if cached is None:
            continue
        if cached is owner:
            known += 1                           # t._np_cache
        elif cached is data:                     # (data.base is counted above)
            if sys.getrefcount(cached) > 5:      # st.data, ``data``, t._np_cache, ``cached``, getrefcount's argument
                return False
        elif cached.base is not owner or sys.getrefcount(cached) > 3:  # t._np_cache, ``cached``, getrefcount's argument
            return False
        else:
            known += 1                           # cached.base
    cached = None
    return sys.getrefcount(owner) <= known


def _detached_root_layout(g):
    """A plain (non-view) tensor over ``g``'s storage, which nobody else holds (see ``_stealable``)."""
    t = Tensor._make(g._storage, 0, g._shape, g._stride, g.dtype)
    t._np_cache = g._np_cache
    return t


def _fresh_copy(g):
    """A contiguous copy of ``g`` with its own storage and no history (no dispatch: hot path)."""
    if g._storage.data is None or _mode_stack:  # meta tensors, or a mode that wants to see the op
        return g.detach().clone()
    return wrap(np.array(g._np(), order="C"), g.dtype)


def grad_accumulator(t) -> AccumulateGrad:
    """The (unique) AccumulateGrad node of a leaf that requires grad."""
    ref = t._grad_acc
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._grad_acc = weakref.ref(acc)
    return acc


def gradient_edge(t):
    """The edge a tensor contributes to a node's ``next_functions``."""
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return (None, 0)


# ---------------------------------------------------------------------------
# tensor hooks
# ---------------------------------------------------------------------------
def register_tensor_hook(t, hook) -> RemovableHandle:
    """``hook(grad)`` when ``t``'s gradient has been computed; a returned tensor replaces it."""
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node = t.grad_fn if t.grad_fn is not None else grad_accumulator(t)
    if t.grad_fn is None:
        # keep the accumulator alive as long as the tensor has hooks on it
        t.__dict__["_acc_keepalive"] = node
    if node._tensor_pre_hooks is None:
        node._tensor_pre_hooks = {}
    h = RemovableHandle(node._tensor_pre_hooks)
    node._tensor_pre_hooks[h.id] = (t._output_nr, hook)
    return h


def register_post_accumulate_grad_hook(t, hook) -> RemovableHandle:
    """``hook(t)`` after ``t.grad`` has been updated (leaves only)."""
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if t._post_acc_hooks is None:
        t._post_acc_hooks = {}
    t.__dict__["_acc_keepalive"] = grad_accumulator(t)
    h = RemovableHandle(t._post_acc_hooks)
    t._post_acc_hooks[h.id] = hook
    return h
