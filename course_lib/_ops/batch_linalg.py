"""``torch.linalg``'s ops: vector and matrix norms, inv, det, solve, svd, svdvals, qr, eigh.

In PyTorch: ``aten/src/ATen/native/BatchLinearAlgebra.cpp`` (the LAPACK-backed
decompositions and solvers) and ``LinearAlgebra.cpp`` (the norms).  Every op takes a batch
of matrices (``(..., m, n)``) and calls numpy's ``linalg``, which runs LAPACK too.  The
Python functions are in ``course_lib/linalg/__init__.py``; ``linalg_matrix_norm``,
``linalg_norm`` and ``norm`` are composites of the others (as in PyTorch, so ``matrix_norm``
with ``ord=1`` records an ``AmaxBackward0``).  A singular matrix raises ``LinAlgError``, a
``RuntimeError`` (``torch.linalg.LinAlgError``).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .common import broadcast_shapes, empty_meta, result_type, wrap, wrap_dims
from .reductions import _return_type_fields
from .registry import register

__all__ = ["LinAlgError"]

svd_ret = _return_type_fields("linalg_svd", ("U", "S", "Vh"))
qr_ret = _return_type_fields("linalg_qr", ("Q", "R"))
eigh_ret = _return_type_fields("linalg_eigh", ("eigenvalues", "eigenvectors"))


class _LinAlgError(RuntimeError):
    """A linear algebra routine failed on its input (a singular matrix): ``torch.linalg.LinAlgError``.

    Named as PyTorch's class (``torch._C._LinAlgError``), so ``type(e).__name__`` reads the same.
    """


LinAlgError = _LinAlgError


def _dispatch(name: str, *args):
    from .dispatcher import dispatch
    from .registry import OPS
    return dispatch(OPS[name], args)


def _float_input(A, name: str) -> None:
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype._tensor_name}")


def _matrix_input(A, name: str, square: bool = False, floating: bool = True) -> None:
    """PyTorch's checks of a batch of matrices, in its order: at least 2-D, square if asked, floating point."""
    if len(A._shape) < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if square and A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A._shape[-2]} by "
                           f"{A._shape[-1]} matrices")
    if floating:
        _float_input(A, name)


# ---------------------------------------------------------------------------
# norms
# ---------------------------------------------------------------------------
def _norm_dtype(self, dtype, name: str = "linalg.vector_norm"):
    _float_input(self, name)
    if dtype is not None and not dtype.is_floating_point:
        raise RuntimeError(f"{name}: dtype should be floating point or complex, but got {dtype._tensor_name}")
    return dtype or self.dtype


def _vector_norm_dims(self, ord, dim):  # noqa: A002
    nd = len(self._shape)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        dims = tuple(range(nd))
    else:
        dims = wrap_dims(dim, nd) if nd else ()
    if ord < 0 or math.isinf(ord):
        empty = self.numel() == 0 if not dims else any(self._shape[d] == 0 for d in dims)
        if empty:
            o = "inf" if ord == math.inf else "-inf" if ord == -math.inf else ord
            raise RuntimeError(f"linalg.vector_norm cannot compute the {o} norm on an empty tensor because the "
                               "operation does not have an identity")
    return dims


def _vector_norm_meta(self, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    dt = _norm_dtype(self, dtype)
    dims = _vector_norm_dims(self, ord, dim)
    shape = tuple(1 if i in dims else s for i, s in enumerate(self._shape)) if keepdim else \
        tuple(s for i, s in enumerate(self._shape) if i not in dims)
    return empty_meta(shape, dt)


@register("linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
          "ScalarType? dtype=None) -> Tensor", meta=_vector_norm_meta, variants=(), kind="reduction")
def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all dims by default); ord 0 counts, +-inf take max/min of |x|."""
    dt = _norm_dtype(self, dtype)
    dims = _vector_norm_dims(self, ord, dim)
    a = np.abs(self._np().astype(dt.np, copy=False))
    axis = dims
    if ord == 2:
        r = np.sqrt(np.add.reduce(a * a, axis=axis, keepdims=keepdim))
    elif ord == 1:
        r = np.add.reduce(a, axis=axis, keepdims=keepdim)
    elif ord == math.inf:
        r = np.max(a, axis=axis, keepdims=keepdim)
    elif ord == -math.inf:
        r = np.min(a, axis=axis, keepdims=keepdim)
    elif ord == 0:
        r = np.add.reduce((a != 0).astype(dt.np), axis=axis, keepdims=keepdim)
    else:
        with np.errstate(divide="ignore"):
            r = np.add.reduce(a ** ord, axis=axis, keepdims=keepdim) ** (1.0 / ord)
    return wrap(np.asarray(r, dtype=dt.np), dt)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _matrix_norm_check(A, ord, dim):  # noqa: A002
    if len(A._shape) < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    _float_input(A, "linalg.matrix_norm")
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    if not any(ord == o and type(ord) is not bool and isinstance(ord, str) == isinstance(o, str)
               for o in _MATRIX_ORDS):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    d0, d1 = wrap_dims(dim, len(A._shape))
    return d0, d1


@register("linalg_matrix_norm(Tensor self, Scalar ord='fro', int[] dim=[-2,-1], bool keepdim=False, *, "
          "ScalarType? dtype=None) -> Tensor", variants=(), kind="composite")
def linalg_matrix_norm(self, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):  # noqa: A002
    """A matrix norm over the two dims ``dim``: 'fro', 'nuc', 1/-1 (columns), inf/-inf (rows), 2/-2 (singular
    values)."""
    d0, d1 = _matrix_norm_check(self, ord, dim)
    A = self if dtype is None else _dispatch("_to_copy", self, dtype)
    if ord == "fro":
        return _dispatch("linalg_vector_norm", A, 2, (d0, d1), keepdim, None)
    if ord in ("nuc", 2, -2):
        # singular values of the matrices spanned by (d0, d1), moved to the last two dims
        s = _dispatch("linalg_svdvals", _dispatch("movedim", A, (d0, d1), (-2, -1)))
        r = _dispatch("sum", s, -1, False, None) if ord == "nuc" else \
            _dispatch("amax" if ord == 2 else "amin", s, (-1,), False)
        if keepdim:
            for d in sorted((d0, d1)):
                r = _dispatch("unsqueeze", r, d)
        return r
    # 1 / -1: largest / smallest column sum (sum over d0); inf / -inf: the same for rows (sum over d1)
    first = d0 if abs(ord) == 1 else d1
    sums = _dispatch("sum", _dispatch("abs", A), first, True, None)
    return _dispatch("amax" if ord > 0 else "amin", sums, (d0, d1), keepdim)


@register("linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, "
          "ScalarType? dtype=None) -> Tensor", variants=(), kind="composite")
def linalg_norm(self, ord=None, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """``torch.linalg.norm``: a vector norm over one dim (or all), a matrix norm over two."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return _dispatch("linalg_vector_norm", self, 2 if ord is None else ord, dims, keepdim, dtype)
        if len(dims) == 2:
            return _dispatch("linalg_matrix_norm", self, "fro" if ord is None else ord, dims, keepdim, dtype)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    if ord is None:
        return _dispatch("linalg_vector_norm", self, 2, None, keepdim, dtype)
    nd = len(self._shape)
    if isinstance(ord, str) or nd == 2:
        return _dispatch("linalg_matrix_norm", self, ord, (-2, -1), keepdim, dtype)
    if nd != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {nd}D.")
    return _dispatch("linalg_vector_norm", self, ord, None, keepdim, dtype)


@register("norm(Tensor self, Scalar? p='fro', int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
          "-> Tensor", kind="composite")
def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    """``torch.norm`` / ``Tensor.norm``: the 2-norm ('fro') or p-norm over ``dim`` (all dims by default), or 'nuc'."""
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return _dispatch("linalg_vector_norm", self, 2, dim, keepdim, dtype)
        dims = tuple(range(len(self._shape))) if dim is None else dim
        return _dispatch("linalg_matrix_norm", self, p, dims, keepdim, dtype)
    return _dispatch("linalg_vector_norm", self, 2.0 if p is None else p, dim, keepdim, dtype)


# ---------------------------------------------------------------------------
# inv, det, solve
# ---------------------------------------------------------------------------
def _zero_pivot(m: np.ndarray) -> int:
    """The 1-based position of the first zero pivot of LU with partial pivoting (LAPACK getrf's ``info``)."""
    u = np.array(m, dtype=np.float64)
    n = u.shape[0]
    for k in range(n):   # only on the error path, to word the message as PyTorch does
        p = k + int(np.argmax(np.abs(u[k:, k])))
        if u[p, k] == 0:
            return k + 1
        u[[k, p]] = u[[p, k]]
        u[k + 1:] -= np.outer(u[k + 1:, k] / u[k, k], u[k])
    return n


def _singular_inv(a: np.ndarray) -> _LinAlgError:
    batch = a.reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(batch):
        if not np.all(np.isfinite(m)) or np.linalg.matrix_rank(m) < m.shape[0]:
            where = f"(Batch element {i}): " if a.ndim > 2 else ""
            return LinAlgError(f"linalg.inv: {where}The diagonal element {_zero_pivot(m)} is zero, the inversion "
                               "could not be completed because the input matrix is singular.")
    return LinAlgError("linalg.inv: the input matrix is singular.")


def _square_meta(name):
    def meta(A):
        _matrix_input(A, name, square=True)
        return empty_meta(A._shape if name == "linalg.inv" else A._shape[:-2], A.dtype)
    return meta


@register("linalg_inv(Tensor A) -> Tensor", meta=_square_meta("linalg.inv"), variants=(), kind="linalg")
def linalg_inv(A):
    """The inverse of each square matrix of the batch ``A``."""
    _matrix_input(A, "linalg.inv", square=True)
    a = A._np()
    try:
        r = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise _singular_inv(a) from None
    return wrap(r, A.dtype)


@register("inverse(Tensor self) -> Tensor", kind="composite")
def inverse(self):
    """The inverse of each square matrix (``torch.linalg.inv``)."""
    return _dispatch("linalg_inv", self)


@register("linalg_det(Tensor A) -> Tensor", meta=_square_meta("linalg.det"), variants=(), kind="linalg")
def linalg_det(A):
    """The determinant of each square matrix of the batch ``A``."""
    _matrix_input(A, "linalg.det", square=True)
    return wrap(np.asarray(np.linalg.det(A._np()), dtype=A.dtype.np), A.dtype)


@register("det(Tensor self) -> Tensor", kind="composite")
def det(self):
    """The determinant of each square matrix (``torch.linalg.det``)."""
    return _dispatch("linalg_det", self)


def _solve_check(A, B, left):
    _matrix_input(A, "linalg.solve", square=True)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype._tensor_name} and B of type {B.dtype._tensor_name} instead")
    vector = len(B._shape) == 1 or (len(B._shape) == len(A._shape) - 1 and B._shape == A._shape[:-1])
    n = A._shape[-1]
    if vector:   # B is a column (n x 1): for XA = B its one column must match A's n
        b_rows = B._shape[-1] if left else 1
    else:
        b_rows = B._shape[-2 if left else -1]
    if b_rows != n:
        bm = f"{B._shape[-1]}x1" if vector else f"{B._shape[-2]}x{B._shape[-1]}"
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and {bm})")
    if vector:
        shape = broadcast_shapes(A._shape[:-2], B._shape[:-1]) + (n,)
    else:
        shape = broadcast_shapes(A._shape[:-2], B._shape[:-2]) + B._shape[-2:]
    return vector, shape


def _solve_meta(A, B, left=True):
    _, shape = _solve_check(A, B, left)
    return empty_meta(shape, A.dtype)


@register("linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor", meta=_solve_meta, variants=(),
          kind="linalg")
def linalg_solve(A, B, left=True):
    """X with ``A @ X = B`` (``left=False``: ``X @ A = B``); ``B`` may be a (batch of) vector(s)."""
    vector, _ = _solve_check(A, B, left)
    a, b = A._np(), B._np()
    if not left:
        a = np.swapaxes(a, -1, -2)      # X A = B  <=>  A^T X^T = B^T
        if not vector:
            b = np.swapaxes(b, -1, -2)
    try:
        x = np.linalg.solve(a, b[..., None])[..., 0] if vector else np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is singular.") from None
    if not left and not vector:
        x = np.swapaxes(x, -1, -2)
    return wrap(x, A.dtype)


# ---------------------------------------------------------------------------
# decompositions
# ---------------------------------------------------------------------------
def _svd_meta(A, full_matrices=True):
    _matrix_input(A, "linalg.svd")
    *batch, m, n = A._shape
    k = min(m, n)
    b = tuple(batch)
    u = (m, m) if full_matrices else (m, k)
    v = (n, n) if full_matrices else (k, n)
    return svd_ret(empty_meta(b + u, A.dtype), empty_meta(b + (k,), A.dtype), empty_meta(b + v, A.dtype))


@register("linalg_svd(Tensor A, bool full_matrices=True) -> (Tensor U, Tensor S, Tensor Vh)", meta=_svd_meta,
          variants=(), kind="linalg")
def linalg_svd(A, full_matrices=True):
    """``A = U @ diag(S) @ Vh`` for each matrix of the batch; S descending (signs of U, Vh as LAPACK gives them)."""
    _matrix_input(A, "linalg.svd")
    u, s, vh = np.linalg.svd(A._np(), full_matrices=full_matrices)
    return svd_ret(wrap(u, A.dtype), wrap(s, A.dtype), wrap(vh, A.dtype))


@register("linalg_svdvals(Tensor A) -> Tensor", variants=(), kind="composite")
def linalg_svdvals(A):
    """The singular values of each matrix of the batch, in descending order (``linalg_svd``'s S, as in
    PyTorch, where svdvals records a ``LinalgSvdBackward0`` too)."""
    return _dispatch("linalg_svd", A, False)[1]


_QR_MODES = ("reduced", "complete", "r")


def _qr_check(A, mode):
    _matrix_input(A, "linalg.qr")
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")


def _qr_meta(A, mode="reduced"):
    _qr_check(A, mode)
    *batch, m, n = A._shape
    k = m if mode == "complete" else min(m, n)
    q = (0,) if mode == "r" else tuple(batch) + (m, k)
    return qr_ret(empty_meta(q, A.dtype), empty_meta(tuple(batch) + (k, n), A.dtype))


@register("linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)", meta=_qr_meta, variants=(),
          kind="linalg")
def linalg_qr(A, mode="reduced"):
    """``A = Q @ R``, Q orthonormal columns, R upper triangular; ``mode='r'`` gives an empty Q."""
    _qr_check(A, mode)
    a = A._np()
    if mode == "r":
        return qr_ret(wrap(np.empty((0,), a.dtype), A.dtype), wrap(np.linalg.qr(a, mode="r"), A.dtype))
    q, r = np.linalg.qr(a, mode=mode)
    return qr_ret(wrap(q, A.dtype), wrap(r, A.dtype))


def _eigh_check(A, UPLO):
    _matrix_input(A, "linalg.eigh", square=True, floating=False)
    if not A.dtype.is_floating_point:
        raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{A.dtype._tensor_name}'")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def _eigh_meta(A, UPLO="L"):
    _eigh_check(A, UPLO)
    return eigh_ret(empty_meta(A._shape[:-1], A.dtype), empty_meta(A._shape, A.dtype))


@register("linalg_eigh(Tensor A, str UPLO='L') -> (Tensor eigenvalues, Tensor eigenvectors)", meta=_eigh_meta,
          variants=(), kind="linalg")
def linalg_eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of each symmetric matrix, read from its ``UPLO`` triangle."""
    _eigh_check(A, UPLO)
    w, v = np.linalg.eigh(A._np(), UPLO=UPLO)
    return eigh_ret(wrap(w, A.dtype), wrap(v, A.dtype))


# ---------------------------------------------------------------------------
# cholesky, slogdet, pinv, and composites: eigvalsh, matrix_rank, matrix_power, multi_dot
# ---------------------------------------------------------------------------
slogdet_ret = _return_type_fields("linalg_slogdet", ("sign", "logabsdet"))


def _not_positive_definite(a: np.ndarray) -> _LinAlgError:
    """The error for the first matrix of the batch without a Cholesky factor, naming the leading minor
    where the factorization stops (LAPACK potrf's ``info``; found by factoring growing minors)."""
    batch = a.reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(batch):
        for k in range(1, m.shape[0] + 1):   # only on the error path
            try:
                np.linalg.cholesky(m[:k, :k])
            except np.linalg.LinAlgError:
                where = f"(Batch element {i}): " if a.ndim > 2 else ""
                return LinAlgError(f"linalg.cholesky: {where}The factorization could not be completed because the "
                                   f"input is not positive-definite (the leading minor of order {k} is not "
                                   "positive-definite).")
    return LinAlgError("linalg.cholesky: The factorization could not be completed because the input is not "
                       "positive-definite.")


def _cholesky_meta(A, upper=False):
    _matrix_input(A, "linalg.cholesky", square=True)
    return empty_meta(A._shape, A.dtype)


@register("linalg_cholesky(Tensor A, *, bool upper=False) -> Tensor", meta=_cholesky_meta, variants=(),
          kind="linalg")
def linalg_cholesky(A, upper=False):
    """L lower triangular with ``A = L @ L.mT`` for each symmetric positive-definite matrix (``upper``: L.mT)."""
    _matrix_input(A, "linalg.cholesky", square=True)
    a = A._np()
    try:
        lower = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise _not_positive_definite(a) from None
    return wrap(np.swapaxes(lower, -1, -2) if upper else lower, A.dtype)


def _slogdet_meta(A):
    _matrix_input(A, "linalg.slogdet", square=True)
    return slogdet_ret(empty_meta(A._shape[:-2], A.dtype), empty_meta(A._shape[:-2], A.dtype))


@register("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", meta=_slogdet_meta, variants=(),
          kind="linalg")
def linalg_slogdet(A):
    """The sign and the log of the absolute value of each determinant (sign 0 and -inf when singular)."""
    _matrix_input(A, "linalg.slogdet", square=True)
    sign, logabs = np.linalg.slogdet(A._np())
    return slogdet_ret(wrap(np.asarray(sign, dtype=A.dtype.np), A.dtype),
                       wrap(np.asarray(logabs, dtype=A.dtype.np), A.dtype))


def _pinv_check(A):
    if len(A._shape) < 2 or A.dtype not in (_F32, _F64):
        raise RuntimeError(f"linalg.pinv({A.dtype._tensor_name}{{{list(A._shape)}}}): expected a tensor with 2 or "
                           "more dimensions of float, double, cfloat or cdouble types")


def _pinv_meta(A, atol=None, rtol=None, hermitian=False):
    _pinv_check(A)
    return empty_meta(A._shape[:-2] + (A._shape[-1], A._shape[-2]), A.dtype)


def _cutoff(s: np.ndarray, m: int, n: int, atol, rtol, dtype) -> np.ndarray:
    """PyTorch's tolerance for pinv and matrix_rank: max(atol, rtol * largest singular value), with
    rtol = eps * max(m, n) when neither is given (and 0 when only atol is)."""
    if rtol is None:
        rtol = np.finfo(dtype).eps * max(m, n) if atol is None else 0.0
    smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    return np.maximum(0.0 if atol is None else atol, rtol * smax)


@register("linalg_pinv(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor",
          meta=_pinv_meta, variants=(), kind="linalg")
def linalg_pinv(self, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse of each matrix, from its SVD; singular values at or below the
    tolerance (see ``_cutoff``) count as zero."""
    _pinv_check(self)
    a = self._np()
    m, n = a.shape[-2:]
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    keep = s > _cutoff(s, m, n, atol, rtol, a.dtype)
    with np.errstate(divide="ignore"):
        s_inv = np.where(keep, 1 / np.where(keep, s, 1), 0).astype(a.dtype)
    return wrap(np.swapaxes(vh, -1, -2) * s_inv[..., None, :] @ np.swapaxes(u, -1, -2), self.dtype)


_F32, _F64 = _dtype.float32, _dtype.float64


@register("linalg_eigvalsh(Tensor A, str UPLO='L') -> Tensor", variants=(), kind="composite")
def linalg_eigvalsh(A, UPLO="L"):  # noqa: N803 (PyTorch's name)
    """The eigenvalues of each symmetric matrix, ascending (``eigh``'s first output, as in PyTorch)."""
    return _dispatch("linalg_eigh", A, UPLO)[0]


@register("linalg_matrix_rank(Tensor input, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor",
          variants=(), kind="composite")
def linalg_matrix_rank(input, atol=None, rtol=None, hermitian=False):  # noqa: A002
    """How many singular values of each matrix exceed the tolerance of ``pinv``, as int64."""
    if input.dtype not in (_F32, _F64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    s = _dispatch("linalg_svdvals", input)
    m, n = input._shape[-2:]
    if rtol is None:
        rtol = float(np.finfo(input.dtype.np).eps) * max(m, n) if atol is None else 0.0
    smax = _dispatch("amax", s, (-1,), True) if s._shape[-1] else 0.0
    tol = _dispatch("clamp", _dispatch("mul", smax, rtol), 0.0 if atol is None else atol, None) \
        if isinstance(smax, Tensor) else 0.0
    return _dispatch("sum", _dispatch("gt", s, tol), (-1,), False, None)


@register("linalg_matrix_power(Tensor self, int n) -> Tensor", variants=(), kind="composite")
def linalg_matrix_power(self, n):
    """``self`` multiplied by itself ``n`` times (``n < 0``: of its inverse; ``n = 0``: the identity), by
    repeated squaring."""
    _matrix_input(self, "linalg.matrix_power", square=True, floating=False)
    if n == 0:
        eye = wrap(np.broadcast_to(np.eye(self._shape[-1], dtype=self.dtype.np), self._shape).copy(), self.dtype)
        return eye if self._storage.data is not None else _dispatch("_to_copy", eye, None, "meta")
    a = _dispatch("linalg_inv", self) if n < 0 else self
    n = abs(n)
    result = None
    while True:   # binary exponentiation: O(log n) products
        if n & 1:
            result = a if result is None else _dispatch("matmul", result, a)
        n >>= 1
        if not n:
            return result
        a = _dispatch("matmul", a, a)


def _multi_dot_check(tensors) -> None:
    """PyTorch's checks of ``multi_dot``'s list: at least two, 1-D or 2-D ends, 2-D middles, shapes that chain."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    last = len(tensors) - 1
    for i, t in enumerate(tensors):
        nd = len(t._shape)
        if i in (0, last) and nd not in (1, 2):
            which = "first" if i == 0 else "last"
            raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got {nd}D")
        if 0 < i < last and nd != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {nd}D")
    for i in range(last):
        a, b = tensors[i], tensors[i + 1]
        if a._shape[-1] != b._shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(a._shape)} and "
                               f"{list(b._shape)} cannot be multiplied")


@register("linalg_multi_dot(Tensor[] tensors) -> Tensor", variants=(), kind="composite")
def linalg_multi_dot(tensors):
    """The product of the matrices in order (the first may be a row vector, the last a column vector).

    As PyTorch: 1-D ends become a (1, n) row and an (n, 1) column, the chain is multiplied with ``mm``
    (left to right here; PyTorch picks the cheapest order) and the result viewed without those dims.
    """
    _multi_dot_check(tensors)
    first, last = tensors[0], tensors[-1]
    out_shape = first._shape[:-1] + last._shape[1:]
    mats = list(tensors)
    if len(first._shape) == 1:
        mats[0] = _dispatch("unsqueeze", first, 0)
    if len(last._shape) == 1:
        mats[-1] = _dispatch("unsqueeze", last, 1)
    r = mats[0]
    for t in mats[1:]:
        r = _dispatch("mm", r, t)
    return _dispatch("view", r, out_shape)


# ---------------------------------------------------------------------------
# the older torch.* names and a few more: slogdet, logdet, pinverse, matrix_power, trace, dist, cross,
# vecdot, cond, diff
# ---------------------------------------------------------------------------
torch_slogdet_ret = _return_type_fields("slogdet", ("sign", "logabsdet"))


@register("slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)", kind="composite")
def slogdet(self):
    """``torch.slogdet``: ``linalg.slogdet``, as a ``slogdet`` pair."""
    return torch_slogdet_ret(*_dispatch("linalg_slogdet", self))


@register("logdet(Tensor self) -> Tensor", kind="composite")
def logdet(self):
    """log(det) of each square matrix: NaN for a negative determinant, -inf for a singular matrix."""
    sign, logabs = _dispatch("linalg_slogdet", self)
    return _dispatch("where", _dispatch("lt", sign, 0), math.nan, logabs)


@register("pinverse(Tensor self, float rcond=1e-15) -> Tensor", kind="composite")
def pinverse(self, rcond=1e-15):
    """``linalg.pinv`` with relative tolerance ``rcond``."""
    return _dispatch("linalg_pinv", self, None, rcond, False)


@register("matrix_power(Tensor self, int n) -> Tensor", kind="composite")
def matrix_power(self, n):
    """``linalg.matrix_power``."""
    return _dispatch("linalg_matrix_power", self, n)


def _trace_check(self):
    if len(self._shape) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {len(self._shape)}")
    if self.dtype is _dtype.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return self.dtype if self.dtype.is_floating_point else _dtype.int64


@register("trace(Tensor self) -> Tensor", meta=lambda self: empty_meta((), _trace_check(self)), kind="reduction")
def trace(self):
    """The sum of the main diagonal of a matrix (integers sum to int64)."""
    dt = _trace_check(self)
    return wrap(np.asarray(np.trace(self._np(), dtype=dt.np)), dt)


def _dist_check(self, other):
    dt = result_type(self, other)
    if not dt.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{dt._tensor_name} instead.")
    return dt, broadcast_shapes(self._shape, other._shape)


@register("dist(Tensor self, Tensor other, Scalar p=2) -> Tensor",
          meta=lambda self, other, p=2: empty_meta((), _dist_check(self, other)[0]), kind="reduction")
def dist(self, other, p=2):
    """The ``p``-norm of ``self - other`` (broadcast), over all elements."""
    dt, _ = _dist_check(self, other)
    diff = np.subtract(self._np(), other._np(), dtype=dt.np)
    return linalg_vector_norm.cpu(wrap(diff, dt), p)


def _cross_check(self, other, dim):
    if len(self._shape) != len(other._shape):
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = wrap_dims(dim, len(self._shape))[0]
    if self._shape[d] != 3 or other._shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {self._shape[d]} and "
                           f"{other._shape[d]}")
    shape = broadcast_shapes(self._shape, other._shape)
    if self.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {self.dtype._tensor_name} but found {other.dtype._tensor_name}")
    return shape, d, self.dtype


@register("linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor",
          meta=lambda self, other, dim=-1: empty_meta(*_cross_check(self, other, dim)[::2]), variants=(),
          kind="linalg")
def linalg_cross(self, other, dim=-1):
    """The cross product of 3-vectors along ``dim`` (the other dims broadcast)."""
    shape, d, dt = _cross_check(self, other, dim)
    a = np.broadcast_to(self._np(), shape).astype(dt.np, copy=False)
    b = np.broadcast_to(other._np(), shape).astype(dt.np, copy=False)
    return wrap(np.cross(a, b, axis=d), dt)


_CROSS_WARNING = ("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                  "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree with "
                  "that of linalg.cross in a future release.")


@register("cross(Tensor self, Tensor other, int? dim=None) -> Tensor", kind="composite")
def cross(self, other, dim=None):
    """``torch.cross``: ``linalg.cross`` along ``dim``; without it, the first dim of size 3 (deprecated)."""
    if dim is None:
        warnings.warn(_CROSS_WARNING, UserWarning, stacklevel=3)
        shape = broadcast_shapes(self._shape, other._shape)
        dim = next((i for i, s in enumerate(shape) if s == 3), -1)
    return _dispatch("linalg_cross", self, other, dim)


@register("linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor", variants=(), kind="composite")
def linalg_vecdot(x, y, dim=-1):
    """The dot product of the vectors along ``dim`` (the other dims broadcast)."""
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{x.dtype._tensor_name} and y of type {y.dtype._tensor_name} instead")
    return _dispatch("sum", _dispatch("mul", x, y), dim, False, None)


@register("linalg_cond(Tensor self, Scalar? p=None) -> Tensor", variants=(), kind="composite")
def linalg_cond(self, p=None):
    """The condition number: largest over smallest singular value (``p`` None, 2 or -2: its inverse), or
    ``norm(A, p) * norm(A^-1, p)`` for the other matrix norms."""
    if p is None or p in (2, -2):
        s = _dispatch("linalg_svdvals", self)
        k = s._shape[-1]
        big, small = _dispatch("narrow", s, -1, 0, 1), _dispatch("narrow", s, -1, k - 1, 1)
        ratio = _dispatch("div", small, big, None) if p == -2 else _dispatch("div", big, small, None)
        return _dispatch("squeeze", ratio, -1)
    inv = _dispatch("linalg_inv", self)
    return _dispatch("mul", _dispatch("linalg_matrix_norm", self, p, (-2, -1), False, None),
                     _dispatch("linalg_matrix_norm", inv, p, (-2, -1), False, None))


@register("diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor",
          kind="composite")
def diff(self, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim``, after joining ``prepend`` and ``append`` (bools: xor)."""
    if not self._shape:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dims(dim, len(self._shape))[0]
    parts = [self]
    for extra, first in ((prepend, True), (append, False)):
        if extra is not None:
            if len(extra._shape) != len(self._shape):
                raise RuntimeError("diff expects prepend or append to be the same dimension as input")
            parts.insert(0, extra) if first else parts.append(extra)
    x = _dispatch("cat", parts, d) if len(parts) > 1 else self
    if n == 0:
        return _dispatch("clone", x, "preserve_format")
    for _ in range(n):
        length = max(x._shape[d] - 1, 0)
        later = _dispatch("narrow", x, d, 1 if x._shape[d] else 0, length)
        earlier = _dispatch("narrow", x, d, 0, length)
        x = _dispatch("logical_xor", later, earlier) if x.dtype is _dtype.bool_ else \
            _dispatch("sub", later, earlier, 1)
    return x
