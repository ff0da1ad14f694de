"""Reverse-mode automatic differentiation.

In PyTorch: ``torch/autograd/__init__.py`` (``backward``, ``grad``) over the C++
engine in ``torch/csrc/autograd/``.

* ``graph.py``: nodes, edges, saved tensors, hooks
* ``variable_type.py``: the dispatcher's Autograd key, which records nodes
* ``derivatives.py``: each op's derivative formula (PyTorch's ``derivatives.yaml``)
* ``engine.py``: runs the graph backwards in dependency order
* ``function.py``: custom ``Function`` with ``forward``/``backward``
* ``gradcheck.py``: numerical checks of analytic gradients
"""
from __future__ import annotations

from .._tensor_base import TensorBase
from . import engine, grad_mode, graph, variable_type
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["backward", "grad", "Function", "gradcheck", "gradgradcheck", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled"]


# Set by course_lib._dynamo: graph capture ends its graph before the engine runs, and the engine's
# ops run eagerly; the hook returns the function that resumes capture, or None when the capture
# computed the gradients itself (the backward compiled into the graph: see ``_dynamo.capture``).
_pre_engine_hook = None


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, TensorBase):
        return (x,)
    return tuple(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate d(tensors)/d(leaf) into the ``.grad`` of every leaf that requires grad.

    ``grad_tensors`` are the vectors of the vector-Jacobian product (needed for
    non-scalar outputs); ``inputs`` limits accumulation to those tensors.
    """
    outs = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) or (None,) * len(outs)
    if retain_graph is None:
        retain_graph = create_graph
    ins = _as_tuple(inputs)
    if ins is not None and len(ins) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    if _pre_engine_hook is None:
        engine.run_backward(outs, grads, retain_graph, create_graph, inputs=ins, accumulate=True)
        return
    resume = _pre_engine_hook("Tensor.backward() runs the autograd engine", outs, grads, retain_graph,
                              create_graph, ins)
    if resume is None:
        return
    try:
        engine.run_backward(outs, grads, retain_graph, create_graph, inputs=ins, accumulate=True)
    finally:
        resume()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """Return d(outputs)/d(inputs) without touching ``.grad``.

    >>> x = tensor(3., requires_grad=True)
    >>> (g,) = grad(x ** 3, x, create_graph=True)   # 27, with a graph
    >>> grad(g, x)                                    # (tensor(18.),)
    """
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    gos = _as_tuple(grad_outputs) or (None,) * len(outs)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    resume = _pre_engine_hook("autograd.grad() runs the autograd engine") if _pre_engine_hook else None
    try:
        res = engine.run_backward(outs, gos, retain_graph, create_graph, inputs=ins, accumulate=False,
                                  allow_unused=allow_unused)
    finally:
        if resume is not None:
            resume()
    if materialize_grads:
        from .._creation import zeros_like
        res = tuple(zeros_like(i) if g is None else g for g, i in zip(res, ins))
    return res


from . import derivatives  # noqa: E402,F401  (fills op.autograd for every op with a formula)
from .function import Function  # noqa: E402
from .gradcheck import gradcheck, gradgradcheck  # noqa: E402
