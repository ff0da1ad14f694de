"""Printing tensors the way PyTorch does.

In PyTorch: ``torch/_tensor_str.py``.  This is a port of it for course_lib's
dtypes, working on numpy arrays: the same ``_Formatter`` (one width for all
elements; integer-valued floats print as ``1.``; scientific notation when the
largest and smallest nonzero magnitudes are far apart, or very large or small),
the same line wrapping at ``linewidth`` and the same summarisation with ``...``
above ``threshold`` elements.  The only difference in output is the module name
in the dtype suffix: ``dtype=course_lib.float64`` for ``dtype=torch.float64``.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import _dtype

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "tensor_repr"]


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None) -> None:
    """Set options for printing (``torch.set_printoptions``).

    precision: digits after the point (4); threshold: number of elements above
    which a tensor is summarised (1000); edgeitems: items kept at each end of a
    summarised dimension (3); linewidth: characters per line (80); profile:
    'default', 'short' or 'full'; sci_mode: True/False to force or forbid
    scientific notation, None to let the formatter choose.  Like PyTorch,
    every call resets ``sci_mode`` to the value given (None if omitted).

    >>> set_printoptions(precision=2)
    >>> set_printoptions(profile="default")
    """
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, 1000
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
        elif profile == "short":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 2, 1000
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 80
        elif profile == "full":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, math.inf
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


class printoptions:
    """Context manager: ``with printoptions(precision=2): print(t)``."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __enter__(self):
        self.old = get_printoptions()
        set_printoptions(**self.kwargs)

    def __exit__(self, *exc):
        set_printoptions(**self.old)


class _Formatter:
    """Chooses one format and one width for all the values that will be printed."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        d = flat.astype(np.float64)
        nz = d[np.isfinite(d) & (d != 0)]
        if nz.size == 0:
            return
        a = np.abs(nz)
        mn, mx = float(a.min()), float(a.max())
        self.int_mode = bool((nz == np.ceil(nz)).all())
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        vals = nz.tolist()
        if self.sci_mode:
            w = max(len(f"{v:.{p}e}") for v in vals)
        elif self.int_mode:
            w = max(len(f"{v:.0f}") for v in vals) + 1
        else:
            w = max(len(f"{v:.{p}f}") for v in vals)
        self.max_width = max(self.max_width, w)

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        if self.floating_dtype:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _vector_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    element_length = fmt.width() + 2
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = ([fmt.format(v) for v in a[:e].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-e:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    dim = a.ndim
    if dim == 0:
        return fmt.format(a.item())
    if dim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        slices = ([_tensor_str_with_formatter(a[i], indent + 1, summarize, fmt) for i in range(e)]
                  + ["..."]
                  + [_tensor_str_with_formatter(a[i], indent + 1, summarize, fmt)
                     for i in range(a.shape[0] - e, a.shape[0])])
    else:
        slices = [_tensor_str_with_formatter(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized_data(a: np.ndarray) -> np.ndarray:
    """Only the values a summarised print shows: ``edgeitems`` at each end of every dim.

    One small index array per dim picks them out of the view, whatever its
    strides (expanded, transposed, sliced): only the shown elements are read.
    (``np.take`` would first copy a non-contiguous view whole: 3.64 TiB for
    ``zeros(1).expand(10**12)``.)  With ``edgeitems=0`` nothing is shown and
    the formatter sees no values.
    """
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if not e:
        return a[(slice(0, 0),) * a.ndim]
    index = [np.r_[0:e, n - e:n] if n > 2 * e else np.arange(n) for n in a.shape]
    return a[np.ix_(*index)]


def _tensor_str(a: np.ndarray, indent: int, floating: bool) -> str:
    if a.size == 0:
        return "[]"
    summarize = a.size > PRINT_OPTS.threshold
    fmt = _Formatter(_summarized_data(a) if summarize else a, floating)
    return _tensor_str_with_formatter(a, indent, summarize, fmt)


def _add_suffixes(tensor_str: str, suffixes: list, indent: int, force_newline: bool) -> str:
    tensor_strs = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        # Measure 'dtype=course_lib.float64' as PyTorch measures 'dtype=torch.float64', so a
        # suffix goes on a new line exactly when it does in PyTorch.
        suffix_len = len(suffix.replace("course_lib.", "torch."))
        if force_newline or last_line_len + suffix_len + 2 > PRINT_OPTS.linewidth:
            tensor_strs.append(",\n" + " " * indent + suffix)
            last_line_len = indent + suffix_len
            force_newline = False
        else:
            tensor_strs.append(", " + suffix)
            last_line_len += suffix_len + 2
    tensor_strs.append(")")
    return "".join(tensor_strs)


def _is_parameter_class(cls) -> bool:
    return any(c.__name__ == "Parameter" and c.__module__.startswith("course_lib") for c in cls.__mro__)


def tensor_repr(t, *, tensor_contents: str | None = None) -> str:
    """``repr(t)`` as PyTorch writes it, e.g. ``tensor([[1., 2.],\\n        [3., 4.]])``."""
    from ._tensor import Tensor
    cls = type(t)
    is_plain = cls is Tensor or (cls.__name__ == "Parameter" and _is_parameter_class(cls))
    prefix = "tensor(" if is_plain else f"{cls.__name__}("
    indent = len(prefix)
    suffixes = []
    custom = tensor_contents is not None
    tensor_str = tensor_contents if custom else None
    dtype = t.dtype
    default = _dtype.get_default_dtype()
    has_default_dtype = dtype in (default, _dtype.int64, _dtype.bool_)
    shape = tuple(t._shape)

    if t.is_meta:
        suffixes.append("device='meta'")
        suffixes.append("size=" + str(shape))
        if dtype is not default:
            suffixes.append("dtype=" + str(dtype))
        if not custom:
            tensor_str = "..."
    elif t.numel() == 0:
        if len(shape) != 1:
            suffixes.append("size=" + str(shape))
        if dtype is not default:
            suffixes.append("dtype=" + str(dtype))
        if not custom:
            tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + str(shape))
        if not has_default_dtype:
            suffixes.append("dtype=" + str(dtype))
        if not custom:
            tensor_str = _tensor_str(t._np(), indent, dtype.is_floating_point)

    grad_fn = t.grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")

    r = _add_suffixes(prefix + tensor_str, suffixes, indent, force_newline=False)
    if not is_plain and _is_parameter_class(cls):
        r = f"Parameter({r})"
    return r
