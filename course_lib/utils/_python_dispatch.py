"""Dispatch modes: Python code that sees every op on its way to the kernel.

In PyTorch: ``torch/utils/_python_dispatch.py`` (``TorchDispatchMode``) and the
``Python`` dispatch key in ``c10/core/DispatchKey.h``.

A mode is a context manager.  Entering it pushes it onto the dispatcher's mode
stack (``course_lib._ops.dispatcher.push_mode``); from then on every op call
goes first to the innermost mode's ``__torch_dispatch__(func, types, args, kwargs)``.
While that method runs, the mode is taken off the stack, so calling
``func(*args)`` inside it re-dispatches *below* the mode: to the next mode out,
then autograd, then the kernel.

>>> import course_lib as cl
>>> from course_lib.utils import LoggingMode
>>> x = cl.ones(2, 3)
>>> with LoggingMode():
...     y = x + cl.ones(3)
add(Tensor[2, 3] float32, Tensor[3] float32) -> Tensor[2, 3] float32

Composite ops (``matmul``, ``reshape``, ``flatten``, ...) are not seen by modes:
they run their decomposition, and the mode sees the ops they call (``mm``,
``view``, ...), as with a ``TorchDispatchMode`` in PyTorch.

Differences from PyTorch: ``func`` is a course_lib ``OpDef`` (``func.name`` is
``'add'``; PyTorch passes an ``OpOverload`` such as ``aten.add.Tensor``); all
arguments arrive positionally, in schema order, defaults included, and
``kwargs`` is always empty; modes run *before* autograd (PyTorch's Python key
sits below Autograd).
"""
from __future__ import annotations

from .._ops import dispatcher as _dispatcher

__all__ = ["TorchDispatchMode", "LoggingMode", "describe"]


class TorchDispatchMode:
    """Base class of dispatch modes: subclass it and implement ``__torch_dispatch__``.

    >>> class CountOps(TorchDispatchMode):
    ...     def __init__(self):
    ...         self.count = 0
    ...     def __torch_dispatch__(self, func, types, args=(), kwargs=None):
    ...         self.count += 1
    ...         return func(*args)
    """

    #: True in a subclass whose ``__torch_dispatch__`` never reads ``types``: the dispatcher passes ()
    _ignores_types = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"{type(self).__name__} must implement __torch_dispatch__")

    def __enter__(self):
        _dispatcher.push_mode(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        popped = _dispatcher.pop_mode()
        if popped is not self:  # pragma: no cover - only if someone misused push/pop
            _dispatcher.push_mode(popped)
            raise RuntimeError("dispatch modes were exited out of order")
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        """Make a mode and enter it (``with MyMode.push(): ...``), like PyTorch's helper."""
        return cls(*args, **kwargs)


# ---------------------------------------------------------------------------
# logging
# ---------------------------------------------------------------------------
def _describe_value(v) -> str:
    from .._dtype import dtype
    from .._tensor import Tensor
    if isinstance(v, Tensor):
        shape = ", ".join(str(s) for s in v._shape)
        dev = "" if v._storage.device == "cpu" else f" {v._storage.device}"
        return f"Tensor[{shape}] {v.dtype.name}{dev}"
    if isinstance(v, dtype):
        return v.name
    if isinstance(v, (tuple, list)):
        inner = ", ".join(_describe_value(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) or not any(isinstance(x, Tensor) for x in v) \
            else f"({inner})"
    if isinstance(v, str):
        return repr(v)
    return repr(v)


def _defaults(op) -> tuple:
    """The op's schema defaults as Python values (cached on first use)."""
    d = _DEFAULTS.get(op)
    if d is None:
        from .._ops.bindings import _default
        vals = []
        for a in op.args:
            if a.default is None:
                vals.append(_NO_DEFAULT)
            else:
                try:
                    vals.append(eval(_default(a.default), {}))  # noqa: S307 - schema literals only
                except Exception:
                    vals.append(_NO_DEFAULT)
        d = _DEFAULTS[op] = tuple(vals)
    return d


_NO_DEFAULT = object()
_DEFAULTS: dict = {}


def _is_default(value, default) -> bool:
    if default is _NO_DEFAULT:
        return False
    if isinstance(default, tuple) and isinstance(value, (tuple, list)):
        return tuple(value) == default
    if type(value) is not type(default) and not (value is None or default is None):
        # 1 == 1.0 == True: only the same kind of value counts as the default
        if isinstance(value, bool) or isinstance(default, bool):
            return False
    try:
        return bool(value == default)
    except Exception:
        return False


def describe(func, args, out) -> str:
    """One line for a dispatched op: ``add(Tensor[2, 3] float32, Tensor[3] float32) -> Tensor[2, 3] float32``.

    Arguments that still have their schema default are left out; keyword-only
    arguments that are given are shown as ``name=value``.
    """
    defaults = _defaults(func)
    n = len(args)
    # drop trailing positional defaults; keyword-only args are shown by name when not default
    parts = []
    last = n
    while last > 0 and _is_default(args[last - 1], defaults[last - 1]):
        last -= 1
    for i in range(last):
        a = func.args[i]
        if a.kwarg_only:
            if _is_default(args[i], defaults[i]):
                continue
            parts.append(f"{a.name}={_describe_value(args[i])}")
        else:
            parts.append(_describe_value(args[i]))
    return f"{func.name}({', '.join(parts)}) -> {_describe_value(out)}"


class LoggingMode(TorchDispatchMode):
    """Record (and print) one line per op dispatched inside the ``with`` block.

    >>> with LoggingMode(print_ops=False) as log:
    ...     y = (x * 2).sum()
    >>> log.lines
    ['mul(Tensor[2, 3] float32, 2) -> Tensor[2, 3] float32', 'sum(Tensor[2, 3] float32) -> Tensor[] float32']

    The text is deterministic (shapes, dtypes and arguments; never values or
    addresses), so it can be a checked notebook output.
    """

    def __init__(self, print_ops: bool = True):
        self.print_ops = print_ops
        self.lines: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args)
        line = describe(func, args, out)
        self.lines.append(line)
        if self.print_ops:
            print(line)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines)
