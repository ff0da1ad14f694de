"""The dispatcher: the one path every op call takes.

In PyTorch: ``aten/src/ATen/core/dispatch/Dispatcher.h`` picks a kernel by the
highest-priority *dispatch key* present (Python modes, Autograd, CPU, Meta, ...).

course_lib tries three keys, in order:

1. **Modes**: if a mode is active (``with LoggingMode():``), the innermost one
   gets the call.  While it handles it, it is popped off the stack, so when it
   calls the op again the call goes on to the next key.
2. **Autograd**: if grad mode is on and an input requires grad, the op's
   autograd kernel (``autograd/variable_type.py``) computes the result with
   ``backend(op, args)`` (PyTorch's redispatch below the Autograd key) and records
   a graph node.
3. **Backend**: ``backend`` runs the ``meta`` kernel if an input lives on the meta
   device, else the ``cpu`` kernel.

Composite ops (``kind="composite"``: ``matmul``, ``reshape``, ``flatten``, ...)
have no kernel of their own: their "kernel" calls other ops through the
dispatcher.  Modes do not see them, only the ops they decompose into, as with
PyTorch's CompositeImplicitAutograd ops (a mode sees ``mm``, not ``matmul``).

Most calls have no mode and no input that requires grad or lives on the meta
device: ``dispatch`` sees that in one loop over the op's tensor positions and
calls the cpu kernel, which is what steps 2 and 3 would pick.  Keep that loop
short (``bench/``: add of 10 floats).
"""
from __future__ import annotations

import threading

from .._tensor_base import TensorBase

__all__ = ["dispatch", "backend", "push_mode", "pop_mode", "active_modes", "grad_state"]

_mode_stack: list = []


class _GradState(threading.local):
    """Grad mode is per thread, as in PyTorch (``c10/core/GradMode.h``)."""

    def __init__(self):
        self.enabled = True
        self.inference = False


grad_state = _GradState()


def dispatch(op, args: tuple):
    """Run ``op`` on ``args`` (positional, in schema order) through modes -> Autograd -> backend."""
    # 1. modes: the innermost one gets the call, popped while it runs
    if _mode_stack:
        if op.composite:
            # a composite's kernel is its decomposition on every device (and a mode may hold tensors
            # whose data must not be read here, such as graph capture's lazy tensors); a mode that
            # names composites it wants (autocast's lists) gets those before they decompose
            wanted = getattr(_mode_stack[-1], "_composites", None)
            if wanted is None or op.name not in wanted:
                return op.cpu(*args)
        mode = _mode_stack.pop()
        try:
            # (a mode that never reads ``types``, graph capture, says so: it sees every op of a program;
            # a mode need not subclass TorchDispatchMode, hence getattr)
            types = () if getattr(mode, "_ignores_types", False) else _types(op, args)
            return mode.__torch_dispatch__(op, types, args, {})
        finally:
            _mode_stack.append(mode)
    # No input requires grad or is on the meta device: the cpu kernel, without steps 2 and 3.
    for i in op.tensor_pos:
        a = args[i]
        if isinstance(a, TensorBase) and (a._requires_grad or a._storage.data is None):
            break
    else:
        if not op.tensor_list_pos or not _in_lists(op, args, _special):
            return op.cpu(*args)
        a = None
    # 2. Autograd: grad mode on (a thread-local, read only here) and an input requires grad
    #    (``a``, the input the loop stopped at, usually says so)
    if op.autograd is not None and grad_state.enabled and (
            (a is not None and a._requires_grad) or _requires_grad(op, args)):
        return op.autograd(op, args)
    # 3. backend
    return backend(op, args)


def backend(op, args: tuple):
    """Pick the device kernel: meta if any tensor input is on the meta device, else cpu."""
    for i in op.tensor_pos:
        a = args[i]
        if isinstance(a, TensorBase) and a._storage.data is None:
            break
    else:
        if not op.tensor_list_pos or not _in_lists(op, args, _on_meta):
            return op.cpu(*args)
    _check_same_device(op, args)
    return op.meta(*args)


def _special(a) -> bool:
    return a._requires_grad or a._storage.data is None


def _on_meta(a) -> bool:
    return a._storage.data is None


def _in_lists(op, args: tuple, test) -> bool:
    """Is ``test`` true of a tensor in one of the op's tensor-list arguments (``cat``'s tensors)?"""
    for i in op.tensor_list_pos:
        for a in args[i]:
            if isinstance(a, TensorBase) and test(a):
                return True
    return False


def _requires_grad(op, args: tuple) -> bool:
    for i in op.tensor_pos:
        a = args[i]
        if isinstance(a, TensorBase) and a._requires_grad:
            return True
    return _in_lists(op, args, _requires_grad_test)


def _requires_grad_test(a) -> bool:
    return a._requires_grad


def _check_same_device(op, args):
    """All tensor arguments on one device (0-d CPU tensors may join any device, as in PyTorch)."""
    tensors = [args[i] for i in op.tensor_pos if isinstance(args[i], TensorBase)]
    for i in op.tensor_list_pos:
        tensors.extend(a for a in args[i] if isinstance(a, TensorBase))
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
    seen = []
    for i in op.tensor_pos:
        t = type(args[i])
        if isinstance(args[i], TensorBase) and t not in seen:
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
