"""Every kernel module: importing this one registers every op.

In PyTorch the kernels are ``aten/src/ATen/native/*.cpp``, registered from
``native_functions.yaml``.  The kernels make ``Tensor`` objects (``common.wrap``), so this
module is imported after ``course_lib._tensor`` (see ``course_lib/__init__.py``).
"""
from __future__ import annotations

from .._tensor import Tensor
from . import pointwise, reductions, views, linalg  # noqa: F401
from . import copies, inplace, fill, joins, advanced_indexing, transformations, softmax, indexing  # noqa: F401
from . import nn_ops, normalization  # noqa: F401
from .registry import OPS

__all__ = ["OPS"]

# The kernel modules' own reference to the Tensor class, for isinstance checks and ``_T._make``.
for _module in (pointwise, reductions, views, linalg, copies, inplace, fill, advanced_indexing, indexing, nn_ops,
                normalization):
    _module._install(Tensor)

# In-place variants declared by an op (``add``'s ``inplace="add_"``) and not written as kernels
# of their own: compute out of place, then write into ``self``.
for _op in list(OPS.values()):
    if _op.inplace and _op.inplace not in OPS:
        inplace.make_inplace(_op)
