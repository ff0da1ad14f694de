"""Compiler backends: what a captured ``GraphModule`` is handed to.

In PyTorch: ``torch/_dynamo/backends/`` and ``torch/_dynamo/backends/registry.py``.  A backend is a
callable ``backend(gm, example_inputs) -> callable``: ``gm`` is the captured ``GraphModule``,
``example_inputs`` the real tensors of its placeholders, and the returned callable takes the same
tensors positionally and returns the graph's outputs (a tuple).  ``course_lib.compile`` calls it
outside any dispatch mode, so autograd records the compiled graph's ops as it does eager ones.

- ``"eager"``: ``gm.forward`` (the captured Python, run op by op);
- ``"aot_eager"``: ``aot_function`` with identity compilers (the forward and backward graphs
  traced ahead of time, run op by op);
- ``"inductor"`` (the default): ``aot_function`` with ``compile_fx`` as forward, backward and
  inference compiler (fused numba kernels).  ``aot_function`` keeps one compiled graph per input
  signature (shapes included), so a graph captured with ``dynamic=True`` is compiled again for each
  new set of sizes inside the same cache entry; that is not a recompilation of the capture.
  ``mode`` (``"reduce-overhead"``, ...) is passed to ``compile_fx`` when it accepts the keyword;
  ``"max-autotune"`` behaves as ``"default"``.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

__all__ = ["lookup_backend", "list_backends", "register_backend", "eager", "aot_eager", "inductor"]

_BACKENDS: dict[str, Callable] = {}


def register_backend(fn: Callable | None = None, name: str | None = None) -> Callable:
    """Register ``fn`` as a backend under ``name`` (default ``fn.__name__``); usable as a decorator."""
    if fn is None:
        return lambda f: register_backend(f, name)
    _BACKENDS[name or fn.__name__] = fn
    return fn


def eager(gm: Any, example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
    """Run the captured graph as Python (``gm.forward``)."""
    return gm.forward


def _identity(gm: Any, example_inputs: Sequence[Any]) -> Callable:
    return gm.forward


def aot_eager(gm: Any, example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
    """AOT autograd with identity compilers: forward and backward graphs run as Python."""
    from .._functorch.aot_autograd import aot_function
    return aot_function(gm.forward, _identity, _identity)


def _accepts_mode(fn: Callable) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "mode" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def inductor(gm: Any, example_inputs: Sequence[Any], mode: str | None = None, **kwargs: Any) -> Callable:
    """AOT autograd with ``compile_fx`` (course_lib's fusing code generator) for every graph."""
    from .._functorch.aot_autograd import aot_function
    from .._inductor.compile_fx import compile_fx
    if mode not in (None, "default", "max-autotune", "max-autotune-no-cudagraphs") and _accepts_mode(compile_fx):
        def fx_compiler(g: Any, inputs: Sequence[Any]) -> Callable:
            return compile_fx(g, inputs, mode=mode)
    else:
        fx_compiler = compile_fx
    return aot_function(gm.forward, fx_compiler, fx_compiler)


register_backend(eager, "eager")
register_backend(aot_eager, "aot_eager")
register_backend(inductor, "inductor")


def list_backends(exclude_tags: Sequence[str] = ("debug", "experimental")) -> list[str]:
    """The registered backend names (``eager`` and ``aot_eager`` are debug backends, as in torch)."""
    debug = {"eager", "aot_eager"}
    return sorted(n for n in _BACKENDS if not (exclude_tags and "debug" in exclude_tags and n in debug))


def lookup_backend(backend: str | Callable, mode: str | None = None, options: dict | None = None) -> Callable:
    """The compiler function for ``backend`` (a registered name or a callable, returned as is)."""
    if callable(backend):
        return backend
    if backend not in _BACKENDS:
        from .exc import InvalidBackend
        raise InvalidBackend(f"Invalid backend: {backend!r}, see `course_lib._dynamo.list_backends()` for "
                             "available backends.")
    fn = _BACKENDS[backend]
    if backend == "inductor" and mode is not None:
        def with_mode(gm: Any, inputs: Sequence[Any]) -> Callable:
            return fn(gm, inputs, mode=mode)
        with_mode.compile_inference = lambda gm, inputs: _compile_fx(gm, inputs, mode)
        return with_mode
    return fn


def _compile_fx(gm: Any, inputs: Sequence[Any], mode: str | None = None) -> Callable:
    from .._inductor.compile_fx import compile_fx
    if mode in (None, "default", "max-autotune", "max-autotune-no-cudagraphs"):
        return compile_fx(gm, inputs)
    return compile_fx(gm, inputs, mode=mode)


# A graph that needs no autograd (the forward and backward compiled together, run under no_grad) skips
# the AOT layer: ``compile_inference(gm, example_inputs)`` compiles it as is.
inductor.compile_inference = _compile_fx
