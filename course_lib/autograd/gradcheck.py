"""Check analytic gradients against finite differences.

In PyTorch: ``torch/autograd/gradcheck.py``.  For every input element, nudge it
by ``eps`` both ways and take the central difference of every output element;
that gives the numerical Jacobian column.  The analytic Jacobian comes from one
backward pass per output element (a vector-Jacobian product with a one-hot
vector).  They must agree within ``atol + rtol * |numerical|``.

Use float64 inputs: with float32 the finite differences are too noisy.
"""
from __future__ import annotations

import numpy as np

from .grad_mode import no_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when the two Jacobians disagree."""


def _values(out) -> list:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [np.array(o.detach()._np(), dtype=np.float64) for o in outs]


def _numerical_jacobian(fn, inputs, diff_idx, eps):
    """J[k][i] has shape (numel(output i), numel(input k)) by central differences."""
    with no_grad():
        outs0 = fn(*inputs)
    outs0 = outs0 if isinstance(outs0, (tuple, list)) else (outs0,)
    jac = []
    for k in diff_idx:
        x = inputs[k]
        arr = x.detach()._np()
        cols = [np.zeros((o.numel(), x.numel())) for o in outs0]
        flat_positions = list(np.ndindex(*x._shape)) if x._shape else [()]
        for j, pos in enumerate(flat_positions):
            orig = arr[pos].item()
            with no_grad():
                # copy the outputs at once: an output may be a view of the input being nudged
                arr[pos] = orig + eps
                plus = _values(fn(*inputs))
                arr[pos] = orig - eps
                minus = _values(fn(*inputs))
                arr[pos] = orig
            for i, (p, m) in enumerate(zip(plus, minus)):
                cols[i][:, j] = ((p - m) / (2 * eps)).reshape(-1)
        jac.append(cols)
    return jac


def _analytic_jacobian(fn, inputs, diff_idx):
    from .. import autograd
    from .._creation import zeros
    outs = fn(*inputs)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    jac = [[np.zeros((o.numel(), inputs[k].numel())) for o in outs] for k in diff_idx]
    diff_inputs = [inputs[k] for k in diff_idx]
    for i, o in enumerate(outs):
        if not o.requires_grad:
            continue
        for r in range(o.numel()):
            go = zeros(o._shape, dtype=o.dtype)  # contiguous, so the flat write below lands
            go._np().reshape(-1)[r] = 1
            grads = autograd.grad(o, diff_inputs, go, retain_graph=True, allow_unused=True)
            for kk, g in enumerate(grads):
                if g is not None:
                    jac[kk][i][r, :] = g._np().astype(np.float64).reshape(-1)
    return jac


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    """True if ``fn``'s analytic gradients match finite differences for every input that requires grad.

    On a mismatch, raises ``GradcheckError`` naming the output, the input and the element.
    """
    from .._tensor import Tensor
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    diff_idx = [k for k, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for k in diff_idx:
        if inputs[k].dtype.name != "float64":
            import warnings
            warnings.warn(f"Input #{k} requires gradient and is not a double precision floating point. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point. ", UserWarning, stacklevel=2)
    num = _numerical_jacobian(fn, inputs, diff_idx, eps)
    ana = _analytic_jacobian(fn, inputs, diff_idx)
    for kk, k in enumerate(diff_idx):
        for i, (n, a) in enumerate(zip(num[kk], ana[kk])):
            bad = np.abs(a - n) > atol + rtol * np.abs(n)
            if bad.any():
                r, c = map(int, np.argwhere(bad)[0])
                msg = (f"Jacobian mismatch for output {i} with respect to input {k},\n"
                       f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n\n"
                       f"The first mismatch is at output element {r}, input element {c}: "
                       f"numerical {n[r, c]:.6g}, analytical {a[r, c]:.6g}.")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def _fmt(m):
    from .._creation import tensor
    return repr(tensor(m))


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True) -> bool:
    """gradcheck of the backward pass itself: checks second derivatives (needs ``create_graph`` support)."""
    from .. import autograd
    from .._random import manual_seed  # noqa: F401
    from .._tensor import Tensor
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    outs = fn(*inputs)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        from .._creation import tensor
        grad_outputs = tuple(tensor(rng.standard_normal(o._shape), dtype=o.dtype, requires_grad=True) for o in outs)
    grad_outputs = tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [k for k, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_grads(*args):
        from .grad_mode import enable_grad
        ins, gos = args[:n_in], args[n_in:]
        with enable_grad():
            o = fn(*ins)
            o = o if isinstance(o, (tuple, list)) else (o,)
            gs = autograd.grad(o, [ins[k] for k in diff_idx], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
