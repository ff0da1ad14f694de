"""Parameters to one flat vector and back (``torch/nn/utils/convert_parameters.py``)."""
from __future__ import annotations

from typing import Iterable

from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All the parameters flattened and concatenated, in order (a new tensor, recorded by autograd)."""
    from ... import cat
    return cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Point each parameter's data at its slice of ``vec`` (the inverse of ``parameters_to_vector``)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param
