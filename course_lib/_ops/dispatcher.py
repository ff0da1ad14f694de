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
    if _mode_stack:
        mode = _mode_stack.pop()
        try:
            return mode.__torch_dispatch__(op, _types(op, args), args, {})
        finally:
            _mode_stack.append(mode)
    ag = op.autograd
    if ag is not None and grad_state.enabled:
        T = _Tensor
        for i in op.tensor_pos:
            a = args[i]
            if isinstance(a, T) and a.requires_grad:
                return ag(op, args)
        for i in op.tensor_list_pos:
            for a in args[i]:
                if isinstance(a, T) and a.requires_grad:
                    return ag(op, args)
    return backend(op, args)


def backend(op, args: tuple):
    """Pick the device kernel: meta if any tensor input is on the meta device."""
    T = _Tensor
    for i in op.tensor_pos:
        a = args[i]
        if isinstance(a, T):
            if a._storage.data is None:
                _check_same_device(op, args, "meta")
                return op.meta(*args)
            return op.cpu(*args)
    for i in op.tensor_list_pos:
        for a in args[i]:
            if isinstance(a, T) and a._storage.data is None:
                _check_same_device(op, args, "meta")
                return op.meta(*args)
    return op.cpu(*args)


def redispatch_below_autograd(op, args: tuple):
    """What the autograd wrapper calls to compute the result: the backend, no recording."""
    return backend(op, args)


def _check_same_device(op, args, dev):
    T = _Tensor
    devices = set()
    for i in op.tensor_pos:
        if isinstance(args[i], T):
            devices.add(args[i]._storage.device)
    for i in op.tensor_list_pos:
        for a in args[i]:
            if isinstance(a, T):
                devices.add(a._storage.device)
    if len(devices) > 1:
        a, b = sorted(devices)
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!")


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
