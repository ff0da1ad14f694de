"""``torch.nn.utils``: gradient clipping, parameters <-> one vector, and ``rnn.pad_sequence``/``unpad_sequence``."""
from . import rnn  # noqa: F401
from .clip_grad import (  # noqa: F401
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "rnn"]
