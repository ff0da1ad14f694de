"""``autocast``: inside it, each op runs in the precision its cast policy names.

In PyTorch: ``torch/amp/autocast_mode.py`` and ``aten/src/ATen/autocast_mode.cpp``.  Autocast is a
dispatch key placed before Autograd: each op listed for it casts its floating-point tensor arguments,
then runs with autocast excluded, so the casts are recorded by autograd (``ToCopyBackward0``) and an
op listed in lower precision saves its inputs for backward in lower precision, which is where the
memory saving comes from.  Three policies, for the CPU:

- **lower precision** (``mm``, ``bmm``, ``addmm``, ``matmul``, ``linear``, convolutions, ``prelu``,
  ...): float32 arguments are cast to the autocast dtype;
- **float32** (the losses, ``prod``, ``cumprod``, ``quantile``, linear algebra, ...): float16
  arguments are cast to float32, whose range and resolution their sums need;
- **promote** (``cat``, ``stack``, ``index_copy``): every argument to the widest floating type among
  them.
Float64 tensors are never cast, and an op on no list runs on the dtypes it is given.  A float32 leaf
that requires grad (a weight) is cast once per autocast region and the cast reused (``cache_enabled``).

course_lib does it with a dispatch mode, which the dispatcher also hands the composite ops in the
lists (``matmul``, ``linear``, ...) before they decompose: listed ops are caught at the level the user
called, as in PyTorch.  A loss written in Python (``F.mse_loss``, ``F.cross_entropy``, ...) has no op
of its own to catch, so ``nn.functional`` casts its inputs with ``fp32_inputs`` (PyTorch's
``cross_entropy_loss``, ``mse_loss``, ... are ops in the float32 list).

Deliberate difference: course_lib has no bfloat16 (numpy has none), so on the CPU the autocast dtype
must be given as ``float16``; PyTorch's CPU default is bfloat16.
"""
from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

from .. import _dtype
from .._ops import dispatcher as _dispatcher
from .._tensor_base import TensorBase

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "is_autocast_available", "fp32_inputs",
           "LOWER_PRECISION_FP", "FP32", "PROMOTE"]

#: ops that run in the autocast dtype (PyTorch 2.13's CPU list, the ops course_lib has)
LOWER_PRECISION_FP = frozenset({
    "conv1d", "conv2d", "conv3d", "convolution", "_convolution", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "bmm", "mm", "baddbmm", "addmm", "addbmm", "linear", "matmul", "prelu",
    "scaled_dot_product_attention",
})
#: ops that run in float32
FP32 = frozenset({
    "avg_pool3d", "binary_cross_entropy", "binary_cross_entropy_with_logits", "prod", "quantile",
    "nanquantile", "cdist", "trace", "cholesky", "cholesky_inverse", "cholesky_solve", "inverse", "pinverse",
    "max_pool3d", "adaptive_avg_pool3d", "reflection_pad1d", "reflection_pad2d", "replication_pad1d",
    "replication_pad2d", "replication_pad3d", "mse_loss", "cosine_embedding_loss", "nll_loss",
    "nll_loss_forward", "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss",
    "cross_entropy_loss", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "kl_div", "multilabel_margin_loss", "linalg_cond",
    "linalg_matrix_rank", "linalg_solve", "linalg_cholesky", "linalg_svdvals", "linalg_eigvals",
    "linalg_eigvalsh", "linalg_inv", "linalg_householder_product", "linalg_tensorinv", "linalg_tensorsolve",
    "geqrf", "qr", "svd", "triangular_solve", "linalg_qr", "linalg_cholesky_ex", "linalg_svd", "linalg_eig",
    "linalg_eigh", "linalg_lstsq", "linalg_inv_ex",
})
#: ops whose arguments are cast to the widest floating type among them
PROMOTE = frozenset({"cat", "stack", "index_copy"})


class _State(threading.local):
    """The autocast state of this thread (PyTorch keeps it thread-local too)."""

    def __init__(self) -> None:
        self.enabled = False
        self.dtype = _dtype.float16
        self.cache_enabled = True
        self.cache: dict[int, tuple[Any, Any]] = {}   # id(weight) -> (weakref to it, its cast)
        self.depth = 0


_state = _State()


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast works on ``device_type`` (course_lib: only "cpu")."""
    return device_type == "cpu"


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Is autocast on in this thread (for ``device_type``, "cpu" being the only device)?"""
    return _state.enabled and device_type in (None, "cpu")


def get_autocast_dtype(device_type: str) -> _dtype.dtype:
    """The dtype of lower-precision ops under autocast on ``device_type``."""
    return _state.dtype


def _eligible(t: Any) -> bool:
    return isinstance(t, TensorBase) and t.dtype in (_dtype.float32, _dtype.float16)


def _cast(t: Any, to: _dtype.dtype) -> Any:
    """PyTorch's ``cached_cast``: an eligible tensor as ``to``; a weight's cast is kept for the region."""
    if isinstance(t, (list, tuple)):
        return type(t)(_cast(x, to) for x in t)
    if not _eligible(t) or t.dtype is to:
        return t
    st = _state
    can_cache = (st.cache_enabled and to is not _dtype.float32 and t._requires_grad and t.grad_fn is None
                 and t._storage.data is not None)
    if can_cache:
        hit = st.cache.get(id(t))
        if hit is not None and hit[0]() is t:
            return hit[1]
    out = t.to(to)
    if can_cache:
        st.cache[id(t)] = (weakref.ref(t), out)
    return out


def _widest(args: tuple) -> _dtype.dtype:
    to = _state.dtype
    for a in args:
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if _eligible(t) and t.dtype is _dtype.float32:
                return _dtype.float32
    return to


def fp32_inputs(*tensors: Any) -> tuple:
    """The float32-policy cast for a loss written in Python: float16 tensors as float32 under autocast."""
    if not _state.enabled:
        return tensors
    return tuple(_cast(t, _dtype.float32) for t in tensors)


def lower_precision_inputs(*tensors: Any) -> tuple:
    """The lower-precision cast for an op written in Python (``F.linear``, ``F.conv2d``, ...)."""
    if not _state.enabled:
        return tensors
    return tuple(_cast(t, _state.dtype) for t in tensors)


class _AutocastMode:
    """The dispatch mode behind ``autocast``: casts the arguments of the listed ops, then runs them with
    autocast off (the mode is off the stack while ``func`` runs, as PyTorch excludes the Autocast key)."""

    _ignores_types = True

    @property
    def _composites(self):
        """The composite ops the dispatcher hands this mode before they decompose."""
        return _LISTED if _state.enabled else None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if _state.enabled:
            name = func.name
            if name in LOWER_PRECISION_FP:
                args = tuple(_cast(a, _state.dtype) for a in args)
            elif name in FP32:
                args = tuple(_cast(a, _dtype.float32) for a in args)
            elif name in PROMOTE:
                to = _widest(args)
                args = tuple(_cast(a, to) for a in args)
        return func(*args)


_LISTED = LOWER_PRECISION_FP | FP32 | PROMOTE
_MODE = _AutocastMode()


class autocast:
    """``with autocast("cpu", dtype=course_lib.float16):`` (also a decorator): listed ops run in lower
    precision, the losses and reductions that need it in float32; see the module docstring.

    >>> with autocast("cpu", dtype=course_lib.float16):
    ...     y = x @ w          # float16
    ...     loss = F.mse_loss(y, target)   # float32
    """

    def __init__(self, device_type: str, dtype: _dtype.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        if dtype is None:
            raise RuntimeError("course_lib has no bfloat16 (PyTorch's CPU autocast default): pass "
                               "dtype=course_lib.float16")
        if enabled and dtype is not _dtype.float16:
            import warnings
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                          UserWarning, stacklevel=2)
            enabled = False
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = bool(enabled)
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)

    def __enter__(self) -> "autocast":
        st = _state
        self._prev = (st.enabled, st.dtype, st.cache_enabled)
        st.enabled, st.dtype, st.cache_enabled = self._enabled, self.fast_dtype, self._cache_enabled
        st.depth += 1
        stack = _dispatcher._mode_stack
        self._pushed = _MODE not in stack
        if self._pushed:
            stack.append(_MODE)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        st = _state
        if self._pushed:
            stack = _dispatcher._mode_stack
            if stack and stack[-1] is _MODE:
                stack.pop()
            elif _MODE in stack:
                stack.remove(_MODE)
        st.depth -= 1
        if st.depth == 0:
            st.cache.clear()      # casts of weights live as long as the outermost region
        st.enabled, st.dtype, st.cache_enabled = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device, dtype=self.fast_dtype, enabled=self._enabled,
                          cache_enabled=self._cache_enabled):
                return fn(*args, **kwargs)
        return wrapper
