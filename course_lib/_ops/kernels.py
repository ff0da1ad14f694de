"""Every kernel module: importing this one registers every op.

In PyTorch the kernels are ``aten/src/ATen/native/*.cpp``, registered from
``native_functions.yaml``.  The kernels make ``Tensor`` objects (``common.wrap``), so this
module is imported after ``course_lib._tensor`` (see ``course_lib/__init__.py``).
"""
from __future__ import annotations

# Importing a kernel module registers its ops.
from . import (  # noqa: F401
    advanced_indexing,
    batch_linalg,
    combining,
    copies,
    fill,
    indexing,
    inplace,
    joins,
    linalg,
    losses,
    nn_ops,
    normalization,
    pointwise,
    reductions,
    scatter,
    softmax,
    sorting,
    transformations,
    views,
)
from .registry import OPS

__all__ = ["OPS"]

# In-place variants declared by an op (``add``'s ``inplace="add_"``) and not written as kernels
# of their own: compute out of place, then write into ``self``.
for _op in list(OPS.values()):
    if _op.inplace and _op.inplace not in OPS:
        inplace.make_inplace(_op)
