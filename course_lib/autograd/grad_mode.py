"""Grad mode: whether ops record the graph.

In PyTorch: ``torch/autograd/grad_mode.py`` and ``c10/core/GradMode.h``.  The
flag is per thread.  Each class works as a context manager and as a decorator.
"""
from __future__ import annotations

import functools

from .._ops.dispatcher import grad_state

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled"]


def is_grad_enabled() -> bool:
    """True when ops on tensors that require grad record a graph."""
    return grad_state.enabled


def is_inference_mode_enabled() -> bool:
    return grad_state.inference


class _DecoratorContextManager:
    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Turn graph recording off: results have ``requires_grad=False`` and no ``grad_fn``.

    >>> with no_grad():
    ...     y = x * 2          # y.requires_grad is False
    """

    def __enter__(self):
        self.prev = grad_state.enabled
        grad_state.enabled = False

    def __exit__(self, *exc):
        grad_state.enabled = self.prev
        return False


class enable_grad(_DecoratorContextManager):
    """Turn graph recording on (inside a ``no_grad`` block, say)."""

    def __enter__(self):
        self.prev = grad_state.enabled
        grad_state.enabled = True

    def __exit__(self, *exc):
        grad_state.enabled = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode to ``mode`` now (as a function) or for a block (as a context manager)."""

    def __init__(self, mode: bool):
        self.prev = grad_state.enabled
        self.mode = bool(mode)
        grad_state.enabled = self.mode

    def __call__(self, fn):
        # used as a decorator: the mode applies inside ``fn`` only, so undo the change
        # made by __init__ (as torch.set_grad_enabled does)
        grad_state.enabled = self.prev
        return super().__call__(fn)

    def __enter__(self):
        pass  # the mode was set by __init__ (so that plain ``set_grad_enabled(False)`` works too)

    def __exit__(self, *exc):
        grad_state.enabled = self.prev
        return False

    def clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``; PyTorch also skips version counting in it, course_lib only turns recording off."""

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __enter__(self):
        self.prev = (grad_state.enabled, grad_state.inference)
        if self.mode:
            grad_state.enabled = False
            grad_state.inference = True

    def __exit__(self, *exc):
        grad_state.enabled, grad_state.inference = self.prev
        return False

    def clone(self):
        return inference_mode(self.mode)
