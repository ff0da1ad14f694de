"""``Parameter`` and ``Buffer``: tensors that a Module registers when you assign them.

In PyTorch: ``torch/nn/parameter.py``.  A Parameter is a Tensor subclass that
shares its data's storage and requires grad by default; assigning one to a
module attribute puts it in ``module._parameters``.  A ``Buffer`` marks a tensor
to be registered in ``module._buffers`` (saved in the state_dict unless
``persistent=False``).
"""
from __future__ import annotations

from .._tensor import Tensor

__all__ = ["Parameter", "Buffer"]


def _alias_as(cls, data: Tensor) -> Tensor:
    t = cls._make(data._storage, data._offset, data._shape, data._stride, data.dtype, vc=data._vc)
    t._np_cache = data._np_cache
    return t


class Parameter(Tensor):
    """A tensor that is a module parameter: ``requires_grad=True`` unless told otherwise.

    >>> w = Parameter(zeros(2, 3))
    >>> w.requires_grad, w.is_leaf
    (True, True)
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from .._creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a Tensor as data, got {type(data).__name__}")
        t = _alias_as(cls, data)
        t._is_param = True
        t.requires_grad = requires_grad
        return t

    def __init__(self, data=None, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        import numpy as np

        from .._creation import _rebuild_from_numpy
        return (_rebuild_parameter, (_rebuild_from_numpy(np.array(self.detach()._np()), False), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        r = Parameter(self.detach().clone(), self.requires_grad)
        if self._grad is not None:
            r._grad = self._grad.detach().clone()
        memo[id(self)] = r
        return r


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """Marks a tensor to become a module buffer when assigned: ``self.stats = Buffer(zeros(3))``.

    ``persistent=False`` keeps it out of the state_dict.  Once registered, the module
    stores a plain Tensor, as in PyTorch.
    """

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            from .._creation import empty
            data = empty(0)
        t = _alias_as(cls, data)
        t.__dict__["persistent"] = persistent
        return t

    def __init__(self, data=None, *, persistent: bool = True):
        pass
