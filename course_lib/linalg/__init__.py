"""``course_lib.linalg``: norms, inverses, solvers and decompositions (``torch.linalg``).

Each function calls its op through the dispatcher (kernels in ``course_lib/_ops/batch_linalg.py``),
so autograd, modes and the meta device see them like any other op.  Derivatives exist for
``vector_norm``, ``matrix_norm`` and ``norm`` (all orders), ``inv``, ``det`` (invertible matrices),
``slogdet``, ``solve``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``, ``qr`` (PyTorch's formulas and
refusals), ``cholesky``, ``pinv`` (constant rank), ``cross``, and the composites (``matrix_power``,
``multi_dot``, ``vecdot``, ``cond``, ...) through their parts.
"""
from __future__ import annotations

import numbers

from .._ops.batch_linalg import LinAlgError
from .._ops.dispatcher import dispatch as _dispatch
from .._ops.python_torch_functions import matmul
from .._ops.registry import OPS as _OPS

__all__ = ["LinAlgError", "norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet", "solve", "svd", "svdvals",
           "qr", "eigh", "eigvalsh", "cholesky", "pinv", "matrix_rank", "matrix_power", "multi_dot", "cross", "vecdot",
           "cond", "diagonal", "matmul"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all dims by default); ``ord`` 0, +-inf allowed."""
    if not isinstance(ord, numbers.Number):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")
    return _dispatch(_OPS["linalg_vector_norm"], (x, ord, dim, keepdim, dtype))


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002
    """A matrix norm ('fro', 'nuc', 1, -1, 2, -2, inf, -inf) of each matrix over the dims ``dim``."""
    return _dispatch(_OPS["linalg_matrix_norm"], (A, ord, dim, keepdim, dtype))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """A vector norm (``dim`` one dim, or all dims when ``ord`` is None) or a matrix norm (two dims)."""
    return _dispatch(_OPS["linalg_norm"], (A, ord, dim, keepdim, dtype))


def inv(A):
    """The inverse of each square matrix of ``A``; ``LinAlgError`` if one is singular."""
    return _dispatch(_OPS["linalg_inv"], (A,))


def det(A):
    """The determinant of each square matrix of ``A``."""
    return _dispatch(_OPS["linalg_det"], (A,))


def solve(A, B, *, left=True):
    """X with ``A @ X = B`` (``left=False``: ``X @ A = B``); ``LinAlgError`` if A is singular."""
    return _dispatch(_OPS["linalg_solve"], (A, B, left))


def svd(A, full_matrices=True):
    """``(U, S, Vh)`` with ``A = U @ diag(S) @ Vh``, singular values descending."""
    return _dispatch(_OPS["linalg_svd"], (A, full_matrices))


def svdvals(A):
    """The singular values of each matrix of ``A``, descending."""
    return _dispatch(_OPS["linalg_svdvals"], (A,))


def qr(A, mode="reduced"):
    """``(Q, R)`` with ``A = Q @ R``; ``mode`` 'reduced', 'complete' or 'r' (R only, Q empty)."""
    return _dispatch(_OPS["linalg_qr"], (A, mode))


def eigh(A, UPLO="L"):  # noqa: N803 (PyTorch's name)
    """``(eigenvalues, eigenvectors)`` of each symmetric matrix, eigenvalues ascending."""
    return _dispatch(_OPS["linalg_eigh"], (A, UPLO))


def slogdet(A):
    """``(sign, logabsdet)`` of each determinant: sign 0 and logabsdet -inf for a singular matrix."""
    return _dispatch(_OPS["linalg_slogdet"], (A,))


def eigvalsh(A, UPLO="L"):  # noqa: N803 (PyTorch's name)
    """The eigenvalues of each symmetric matrix, ascending."""
    return _dispatch(_OPS["linalg_eigvalsh"], (A, UPLO))


def cholesky(A, *, upper=False):
    """L with ``A = L @ L.mT`` (``upper=True``: ``L.mT``); ``LinAlgError`` if A is not positive-definite."""
    return _dispatch(_OPS["linalg_cholesky"], (A, upper))


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The pseudo-inverse; singular values below ``max(atol, rtol * largest)`` count as zero."""
    return _dispatch(_OPS["linalg_pinv"], (A, atol, rtol, hermitian))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """How many singular values exceed the tolerance of ``pinv``, as int64."""
    return _dispatch(_OPS["linalg_matrix_rank"], (A, atol, rtol, hermitian))


def matrix_power(A, n):
    """``A`` multiplied by itself ``n`` times (``n < 0``: its inverse; ``n = 0``: the identity)."""
    return _dispatch(_OPS["linalg_matrix_power"], (A, n))


def multi_dot(tensors):
    """The product of a list of matrices (the first may be 1-D as a row, the last 1-D as a column)."""
    return _dispatch(_OPS["linalg_multi_dot"], (list(tensors),))


def cross(input, other, *, dim=-1):  # noqa: A002
    """The cross product of the 3-vectors along ``dim`` (other dims broadcast)."""
    return _dispatch(_OPS["linalg_cross"], (input, other, dim))


def vecdot(x, y, *, dim=-1):
    """The dot product of the vectors along ``dim`` (other dims broadcast)."""
    return _dispatch(_OPS["linalg_vecdot"], (x, y, dim))


def cond(A, p=None):
    """The condition number of each matrix in the matrix norm ``p`` (None: the 2-norm, from the SVD)."""
    return _dispatch(_OPS["linalg_cond"], (A, p))


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal of each matrix (a view), by default over the last two dims."""
    return _dispatch(_OPS["diagonal"], (A, offset, dim1, dim2))
