"""Matrix products: dot, mv, mm, bmm, addmm, and matmul built on them.

In PyTorch: ``aten/src/ATen/native/LinearAlgebra.cpp``.  ``matmul`` is a
composite: it looks at the two ranks and calls ``dot``, ``mv``, ``mm`` or
``bmm`` (folding or broadcasting batch dims with views), so autograd records
those ops (``x @ w`` on matrices gives ``MmBackward0``).
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .common import broadcast_shapes, empty_meta, wrap
from .registry import register


def _dispatch(name, *args):
    from .dispatcher import dispatch
    from .registry import OPS
    return dispatch(OPS[name], args)




def _same_dtype(a, b, what="m1 and m2"):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected {what} to have the same dtype, but got: "
                           f"{_dtype.c_type_name(a.dtype, 'demangled')} != {_dtype.c_type_name(b.dtype, 'demangled')}")


def _no_bool(kernel: str, *ts) -> None:
    if any(t.dtype is _dtype.bool_ for t in ts):
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _dot_check(self, other):
    if len(self._shape) != 1 or len(other._shape) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(self._shape)}D and {len(other._shape)}D tensors")
    if self.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{self.dtype._tensor_name} and {other.dtype._tensor_name}")
    if self._shape[0] != other._shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{self._shape[0]}] and src [{other._shape[0]}] to have the "
            f"same number of elements, but got {self._shape[0]} and {other._shape[0]} elements respectively")
    _no_bool("dot", self)


@register("dot(Tensor self, Tensor tensor) -> Tensor",
          meta=lambda self, tensor: (_dot_check(self, tensor), empty_meta((), self.dtype))[1], kind="linalg")
def dot(self, tensor):
    """Inner product of two 1-D tensors."""
    _dot_check(self, tensor)
    return wrap(np.asarray(np.dot(self._np(), tensor._np())), self.dtype)


def _mv_check(self, vec):
    if len(self._shape) != 2 or len(vec._shape) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {len(self._shape)}, {len(vec._shape)}")
    if self._shape[1] != vec._shape[0]:
        raise RuntimeError(f"size mismatch, got input ({self._shape[0]}), mat ({self._shape[0]}x{self._shape[1]}), "
                           f"vec ({vec._shape[0]})")
    if self.dtype is not vec.dtype:
        v, m = vec.dtype._tensor_name, self.dtype._tensor_name
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {v}, {m}, and {v}")
    _no_bool("addmv_impl_cpu", self)


@register("mv(Tensor self, Tensor vec) -> Tensor",
          meta=lambda self, vec: (_mv_check(self, vec), empty_meta(self._shape[:1], self.dtype))[1], kind="linalg")
def mv(self, vec):
    """Matrix-vector product."""
    _mv_check(self, vec)
    return wrap(np.matmul(self._np(), vec._np()), self.dtype)


def _mm_check(self, mat2):
    if len(self._shape) != 2:
        raise RuntimeError("self must be a matrix")
    if len(mat2._shape) != 2:
        raise RuntimeError("mat2 must be a matrix")
    if self._shape[1] != mat2._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({self._shape[0]}x{self._shape[1]} and "
                           f"{mat2._shape[0]}x{mat2._shape[1]})")
    _same_dtype(self, mat2)
    _no_bool("addmm_impl_cpu_", self)


@register("mm(Tensor self, Tensor mat2) -> Tensor",
          meta=lambda self, mat2: (_mm_check(self, mat2), empty_meta((self._shape[0], mat2._shape[1]),
                                                                     self.dtype))[1], kind="linalg")
def mm(self, mat2):
    """Matrix product of two 2-D tensors."""
    _mm_check(self, mat2)
    return wrap(np.matmul(self._np(), mat2._np()), self.dtype)


def _bmm_check(self, mat2):
    if len(self._shape) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if len(mat2._shape) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, n, m = self._shape
    if mat2._shape[0] != b or mat2._shape[1] != m:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {m}] but got: "
                           f"[{mat2._shape[0]}, {mat2._shape[1]}].")
    if self.dtype is not mat2.dtype:
        raise RuntimeError(f"expected scalar type {self.dtype._tensor_name} but found {mat2.dtype._tensor_name}")
    _no_bool("bmm", self)


@register("bmm(Tensor self, Tensor mat2) -> Tensor",
          meta=lambda self, mat2: (_bmm_check(self, mat2),
                                   empty_meta(self._shape[:2] + mat2._shape[2:], self.dtype))[1], kind="linalg")
def bmm(self, mat2):
    """Batched matrix product: (b, n, m) @ (b, m, p) -> (b, n, p)."""
    _bmm_check(self, mat2)
    return wrap(np.matmul(self._np(), mat2._np()), self.dtype)


def _addmm_check(self, mat1, mat2):
    if len(mat1._shape) == 2 and len(mat2._shape) == 2 and mat1._shape[1] == mat2._shape[0] \
            and self.dtype is not mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {self.dtype._tensor_name} and "
                           f"{mat2.dtype._tensor_name}")
    _mm_check(mat1, mat2)
    out = (mat1._shape[0], mat2._shape[1])
    sh = self._shape
    if sh != out and not (len(sh) == 1 and sh[0] in (1, out[1])) and not (len(sh) == 2 and sh[0] in (1, out[0])
                                                                       and sh[1] in (1, out[1])):
        _expand_op().cpu(self, out)  # PyTorch's errors when self does not broadcast to the result
    return out


def _addmm_meta(self, mat1, mat2, beta=1, alpha=1):
    return empty_meta(_addmm_check(self, mat1, mat2), mat1.dtype)


@register("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
          meta=_addmm_meta, kind="linalg")
def addmm(self, mat1, mat2, beta=1, alpha=1):
    """beta * self + alpha * (mat1 @ mat2): what ``Linear`` with a bias calls."""
    _addmm_check(self, mat1, mat2)
    r = np.matmul(mat1._np(), mat2._np())
    if alpha != 1:
        r *= alpha
    b = self._np()
    if beta != 1:
        b = b * beta
    r += b  # in place: r is fresh, self broadcasts into it
    return wrap(r, mat1.dtype)


@register("matmul(Tensor self, Tensor other) -> Tensor", kind="composite")
def matmul(self, other):
    """The ``@`` operator: every rank combination PyTorch supports.

    1-D @ 1-D -> dot; 2-D @ 1-D -> mv; 1-D @ 2-D -> (1, n) @ mm; 2-D @ 2-D -> mm;
    N-D @ 1-D/2-D -> fold the batch dims into rows; otherwise broadcast the batch dims
    and call bmm.
    """
    d1, d2 = len(self._shape), len(other._shape)
    if d1 == 0 or d2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D")
    if d1 == 1 and d2 == 1:
        return _dispatch("dot", self, other)
    if d1 == 2 and d2 == 1:
        return _dispatch("mv", self, other)
    if d1 == 1 and d2 == 2:
        return _dispatch("squeeze", _dispatch("mm", _dispatch("unsqueeze", self, 0), other), 0)
    if d1 == 2 and d2 == 2:
        return _dispatch("mm", self, other)
    if d1 >= 3 and d2 <= 2:
        # fold batch dims into the rows of one matrix
        batch = self._shape[:-1]
        rows = 1
        for s in batch:
            rows *= s
        folded = _dispatch("reshape", self, (rows, self._shape[-1]))
        if d2 == 1:
            return _dispatch("_unsafe_view", _dispatch("mv", folded, other), batch)
        return _dispatch("_unsafe_view", _dispatch("mm", folded, other), batch + (other._shape[-1],))
    # batched: broadcast the batch dims, then bmm
    a = _dispatch("unsqueeze", self, 0) if d1 == 1 else self
    b = _dispatch("unsqueeze", other, -1) if d2 == 1 else other
    n, m1 = a._shape[-2:]
    m2, p = b._shape[-2:]
    batch = broadcast_shapes(a._shape[:-2], b._shape[:-2])
    nb = 1
    for s in batch:
        nb *= s
    a3 = _dispatch("reshape", _dispatch("expand", a, batch + (n, m1)), (nb, n, m1))
    b3 = _dispatch("reshape", _dispatch("expand", b, batch + (m2, p)), (nb, m2, p))
    out = _dispatch("_unsafe_view", _dispatch("bmm", a3, b3), batch + (n, p))
    if d1 == 1:
        out = _dispatch("squeeze", out, -2)
    if d2 == 1:
        out = _dispatch("squeeze", out, -1)
    return out


def _expand_op():
    from .registry import OPS
    return OPS["expand"]
