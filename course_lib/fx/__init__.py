"""course_lib.fx: graphs of programs, and tools to capture, run and transform them.

In PyTorch: ``torch/fx/``.  The same parts, with the same names:

- ``Graph`` and ``Node`` (``graph.py``, ``node.py``): a program as a list of nodes
  with six opcodes (``placeholder``, ``get_attr``, ``call_function``,
  ``call_method``, ``call_module``, ``output``).
- ``symbolic_trace`` (``_symbolic_trace.py``, ``proxy.py``): run a module or
  function on ``Proxy`` values and record what they go through.
- ``GraphModule`` (``graph_module.py``): a module whose ``forward`` is Python code
  generated from a graph (``gm.code``).
- ``Interpreter`` and ``Transformer`` (``interpreter.py``): run or rewrite a graph
  node by node.
- ``passes/``: dead-code elimination, common-subexpression elimination,
  constant folding, shape propagation.

>>> import course_lib as cl
>>> from course_lib import fx
>>> gm = fx.symbolic_trace(lambda x: cl.abs(x) + 1)
>>> gm.graph.print_tabular()   # doctest: +SKIP
"""
from __future__ import annotations

from ._symbolic_trace import PH, Tracer, _assert, symbolic_trace, wrap  # noqa: F401  (_assert: graphs call it)
from .graph import Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Proxy, TraceError

__all__ = ["symbolic_trace", "Tracer", "wrap", "PH", "Graph", "PythonCode", "GraphModule", "Interpreter",
           "Transformer", "Node", "map_arg", "has_side_effect", "Proxy", "TraceError"]
