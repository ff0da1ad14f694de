"""The losses' legacy ``size_average`` / ``reduce`` arguments (``torch/nn/_reduction.py``)."""
from __future__ import annotations

import warnings

__all__ = ["legacy_get_string"]


def legacy_get_string(size_average: bool | None, reduce: bool | None, emit_warning: bool = True) -> str:
    """The ``reduction`` the pre-1.0 pair means (None counts as True), with PyTorch's deprecation warning."""
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                      stacklevel=2)
    return ret
