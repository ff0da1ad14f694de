"""The dispatcher: the one path every op call takes.

In PyTorch: ``aten/src/ATen/core/dispatch/Dispatcher.h`` picks a kernel by the
highest-priority *dispatch key* present (Python modes, Autograd, CPU, Meta, ...).

course_lib tries three keys, in order:

1. **Modes**: if a mode is active (``with LoggingMode():``), the innermost one
   gets the call.  While it handles it, it is popped off the stack, so when it
   calls the op again the call goes on to the next key.
2. **Autograd**: if grad mode is on and an input requires grad, the op's
   autograd wrapper runs the op one level down and records a graph node.
3. **Backend**: the ``meta`` kernel if the inputs live on the meta device,
   else the ``cpu`` kernel.

Composite ops (``kind="composite"``: ``matmul``, ``reshape``, ``flatten``, ...)
have no kernel of their own: their "kernel" calls other ops through the
dispatcher.  Modes do not see them, only the ops they decompose into, as with
PyTorch's CompositeImplicitAutograd ops (a mode sees ``mm``, not ``matmul``).

The fast path (no mode, nothing requires grad) is a few attribute reads and one
loop over the op's tensor positions; keep it that way (see ``bench/``).
"""
from __future__ import annotations

import threading

__all__ = ["dispatch", "redispatch_below_autograd", "push_mode", "pop_mode", "active_modes",
           "grad_state"]

_mode_stack: list = []


class _GradState(threading.local):
    """Grad mode is per thread, as in PyTorch (``c10/core/GradMode.h``)."""

    def __init__(self):
        self.enabled = True
        self.inference = False


grad_state = _GradState()

_Tensor = None  # set by course_lib._tensor once the class exists


def dispatch(op, args: tuple):
    """Run ``op`` on ``args`` (positional, in schema order) through modes -> autograd -> backend."""
    if _mode_stack and not op.composite:
        mode = _mode_stack.pop()
        try:
            return mode.__torch_dispatch__(op, _types(op, args), args, {})
        finally:
            _mode_stack.append(mode)
    # One pass over the tensor arguments: does one require grad (-> Autograd)? Is one
    # on the meta device (-> meta kernel)?  Grad mode (a thread-local) is only read
    # when an input requires grad.
    T = _Tensor
    meta = False
    for i in op.tensor_pos:
        a = args[i]
        if isinstance(a, T):
            if a._requires_grad and op.autograd is not None and grad_state.enabled:
                return op.autograd(op, args)
            if a._storage.data is None:
                meta = True
    if op.tensor_list_pos:
        for i in op.tensor_list_pos:
            for a in args[i]:
                if isinstance(a, T):
                    if a._requires_grad and op.autograd is not None and grad_state.enabled:
                        return op.autograd(op, args)
                    if a._storage.data is None:
                        meta = True
    if meta:
        _check_same_device(op, args)
        return op.meta(*args)
    return op.cpu(*args)


def backend(op, args: tuple):
    """Pick the device kernel: meta if any tensor input is on the meta device, else cpu."""
    T = _Tensor
    for i in op.tensor_pos:
        a = args[i]
        if isinstance(a, T) and a._storage.data is None:
            _check_same_device(op, args)
            return op.meta(*args)
    for i in op.tensor_list_pos:
        for a in args[i]:
            if isinstance(a, T) and a._storage.data is None:
                _check_same_device(op, args)
                return op.meta(*args)
    return op.cpu(*args)


def redispatch_below_autograd(op, args: tuple):
    """What the autograd wrapper calls to compute the result: the backend, no recording."""
    return backend(op, args)


def _check_same_device(op, args):
    """All tensor arguments on one device (0-d CPU tensors may join any device, as in PyTorch)."""
    T = _Tensor
    tensors = [args[i] for i in op.tensor_pos if isinstance(args[i], T)]
    for i in op.tensor_list_pos:
        tensors.extend(a for a in args[i] if isinstance(a, T))
    expected = None
    for a in tensors:
        dev = a._storage.device
        if dev == "cpu" and not a._shape:
            continue
        if expected is None:
            expected = dev
        elif dev != expected:
            raise RuntimeError(f"Tensor on device {dev} is not on the expected device {expected}!")


def _types(op, args):
    T = _Tensor
    seen = []
    for i in op.tensor_pos:
        t = type(args[i])
        if isinstance(args[i], T) and t not in seen:
            seen.append(t)
    return tuple(seen)


# ---------------------------------------------------------------------------
# modes
# ---------------------------------------------------------------------------
def push_mode(mode) -> None:
    _mode_stack.append(mode)


def pop_mode():
    return _mode_stack.pop()


def active_modes() -> tuple:
    return tuple(_mode_stack)
