"""``course_lib.compile``: the compiled-function wrapper, ``OptimizedModule``, the caches, ``explain``.

In PyTorch: ``torch/_dynamo/eval_frame.py`` (``optimize``, ``OptimizedModule``) and
``torch/_dynamo/convert_frame.py`` (the per-code-object cache and the recompile limit).  A call of a
compiled function runs the function under ``capture.Capture`` (see that module): the first call
records and compiles, later calls replay the recording and call the compiled graphs.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..nn import Module
from . import capture as _capture
from .backends import lookup_backend
from .capture import Capture, _tls

__all__ = ["compile", "OptimizedModule", "reset", "explain", "ExplainOutput", "GraphCompileReason"]

# one cache per (code object, backend, dynamic, fullgraph)
_CACHES: dict[tuple, _capture.CodeCache] = {}
_generation = [0]   # bumped by reset(): a compiled function looks its cache up again


def reset() -> None:
    """Forget every compiled graph and cache entry (``torch._dynamo.reset()``)."""
    _CACHES.clear()
    _generation[0] += 1


def _cache_for(fn: Callable, code: Any, backend: Any, dynamic: bool, fullgraph: bool, mode: str | None,
               options: dict | None) -> _capture.CodeCache:
    key = (code, backend if callable(backend) else (backend, mode), dynamic, fullgraph)
    cache = _CACHES.get(key)
    if cache is None:
        name = getattr(fn, "__name__", type(fn).__name__)
        where = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else "?"
        cache = _CACHES[key] = _capture.CodeCache(lookup_backend(backend, mode, options), dynamic, fullgraph,
                                                  name, where)
        cache.backward_in_graph = mode == "reduce-overhead"   # the step's backward joins its graph
    return cache


def _code_of(fn: Callable) -> Any:
    f = getattr(fn, "__func__", fn)
    code = getattr(f, "__code__", None)
    if code is None and callable(f):
        code = getattr(type(f).__call__, "__code__", None)
    return code


def _run(cache: _capture.CodeCache, fn: Callable, code: Any, args: tuple, kwargs: dict,
         explain: list | None = None) -> Any:
    if getattr(_tls, "capture", None) is not None:
        return fn(*args, **kwargs)    # called from inside a capture: its ops join the caller's graph
    cap = Capture(cache, code, explain)
    with cap:
        try:
            out = fn(*args, **kwargs)
        except BaseException:
            try:
                cap.finish()
            except Exception:  # noqa: S110 - the user's exception is the one to see
                pass
            raise
        cap.finish()
    return out


def _compile_function(fn: Callable, backend: Any, dynamic: bool, fullgraph: bool, mode: str | None,
                      options: dict | None) -> Callable:
    code = _code_of(fn)
    found = [None, -1]    # the cache, and the reset() generation it was found in

    @functools.wraps(fn)
    def compiled(*args: Any, **kwargs: Any) -> Any:
        cache = found[0]
        if found[1] != _generation[0]:
            cache = found[0] = _cache_for(fn, code, backend, dynamic, fullgraph, mode, options)
            found[1] = _generation[0]
        return _run(cache, fn, code, args, kwargs)

    compiled._torchdynamo_orig_callable = fn
    compiled._dynamo_cache = lambda: _cache_for(fn, code, backend, dynamic, fullgraph, mode, options)
    return compiled


class OptimizedModule(Module):
    """A module whose ``forward`` is compiled; ``_orig_mod`` is the original (its state_dict keys get the
    ``_orig_mod.`` prefix, as in torch).  Other attributes are read from ``_orig_mod``."""

    def __init__(self, mod: Module, compiled_forward: Callable) -> None:
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_compiled_forward"] = compiled_forward
        self.training = mod.training

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_compiled_forward"](*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: str | Callable = "inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False) -> Any:
    """Compile a function or module: capture its ops into graphs while it runs, hand each graph to
    ``backend``, and replay the recording on later calls (``torch.compile``).

    >>> @course_lib.compile(backend="eager")
    ... def f(x):
    ...     return x * 2 + 1

    ``dynamic=None`` behaves as ``False`` (torch's automatic dynamic shapes are not modelled: each new
    size is a failed guard); ``mode`` is one of None, ``"default"``, ``"reduce-overhead"``,
    ``"max-autotune"`` (the last behaves as ``"default"``).
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode not in (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: default, reduce-overhead, max-autotune, "
                           "max-autotune-no-cudagraphs")
    if model is None:
        def decorator(m: Callable) -> Any:
            return compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           disable=disable)
        return decorator
    if not callable(model):
        raise RuntimeError("model must be a course_lib.nn.Module or a callable")
    if disable:
        return model
    lookup_backend(backend, mode, options)   # an unknown name fails here, as in torch
    dyn = bool(dynamic)
    if isinstance(model, Module):
        return OptimizedModule(model, _compile_function(model.forward, backend, dyn, fullgraph, mode, options))
    return _compile_function(model, backend, dyn, fullgraph, mode, options)


# ---------------------------------------------------------------------------
# explain
# ---------------------------------------------------------------------------
@dataclass
class GraphCompileReason:
    """Why a graph ended: ``reason`` and the user's frame (``user_stack``)."""

    reason: str
    user_stack: list
    graph_break: bool = True


@dataclass
class ExplainOutput:
    """What ``explain`` found: the graphs, the breaks and their reasons, the ops, the guards."""

    graphs: list
    graph_count: int
    graph_break_count: int
    break_reasons: list
    op_count: int
    ops_per_graph: list | None = None
    out_guards: list | None = None
    compile_times: str | None = None
    _extra: dict = field(default_factory=dict, repr=False)

    def __str__(self) -> str:
        output = f"Graph Count: {self.graph_count}\n"
        output += f"Graph Break Count: {self.graph_break_count}\n"
        output += f"Op Count: {self.op_count}\n"
        output += "Break Reasons:\n"
        for idx, br in enumerate(self.break_reasons):
            output += f"  Break Reason {idx + 1}:\n"
            output += f"    Reason: {br.reason}\n"
            output += "    User Stack:\n"
            for fs in br.user_stack:
                output += f"      {fs}\n"
        if self.ops_per_graph is not None:
            output += "Ops per Graph:\n"
            for idx, ops in enumerate(self.ops_per_graph):
                output += f"  Ops {idx + 1}:\n"
                for op in ops:
                    output += f"    {op}\n"
        if self.out_guards is not None:
            output += "Out Guards:\n"
            for i, guard in enumerate(self.out_guards):
                output += f"  Guard {i + 1}:\n"
                output += f"    {guard}"
        if self.compile_times is not None:
            output += f"Compile Times: {self.compile_times}\n"
        return output


def explain(f: Callable, *extra_args: Any, **extra_kwargs: Any) -> Callable[..., ExplainOutput]:
    """``explain(f)(*args, **kwargs)``: run ``f`` once under capture (eager backend, a fresh cache) and
    report its graphs, graph breaks with reasons and the user's line, ops per graph and guards."""
    def inner(*args: Any, **kwargs: Any) -> ExplainOutput:
        target = f._orig_mod.forward if isinstance(f, OptimizedModule) else f
        target = getattr(target, "_torchdynamo_orig_callable", target)
        code = _code_of(target)
        cache = _capture.CodeCache(lookup_backend("eager"), False, False, getattr(target, "__name__", "f"), "")
        breaks: list = []
        start = time.perf_counter()
        _run(cache, target, code, args, kwargs, explain=breaks)
        total = time.perf_counter() - start
        graphs = cache.graphs
        ops = [[n.target for n in g.graph.nodes if n.op == "call_function"] for g in graphs]
        reasons = [GraphCompileReason(r, s) for r, s in breaks]
        times = "TorchDynamo compilation metrics:\nFunction    Runtimes (s)\n" \
                f"_compile    {total:.4f}\n"
        # torch counts graph_count - 1 breaks (-1 with no graph), and lists the reasons of the graphs that
        # ended at a break: a break that would end an empty graph is neither
        return ExplainOutput(graphs, len(graphs), len(graphs) - 1, reasons, sum(len(o) for o in ops), ops,
                             _capture.guards_of(cache), times)
    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner
