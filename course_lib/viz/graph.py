"""Pictures of the backward graph: ``draw_graph`` (matplotlib) and ``to_dot`` (Graphviz source).

What ``torchviz.make_dot`` draws for PyTorch: one box per node of the graph that
``backward()`` would run, from the output's ``grad_fn`` down to the leaves.

* op nodes are named like their class (``MulBackward0``) and list the tensors they
  saved for backward (``self: (2, 3)``);
* leaves that require grad appear through their ``AccumulateGrad`` node, labelled with
  the leaf's shape (``AccumulateGrad.variable``) and, if you pass ``params``, its name;
* arrows follow the forward direction (input -> op), as in torchviz.

The layout is layered by topological depth: a node sits one row below the lowest of
the nodes that use it, so every arrow points upwards.  It is deterministic (the order
is that of ``next_functions``), so the same graph always gives the same picture.

``make_dot`` is torchviz's function itself (``torchviz/dot.py``): the same walk, node
shapes, colours and DOT text, returned as a ``graphviz.Digraph`` when the ``graphviz``
package is installed, else as a :class:`Digraph` of this module with the same ``.source``.

>>> y = (x * w).sum()
>>> draw_graph(y, params={"x": x, "w": w})       # doctest: +SKIP
>>> print(to_dot(y))                             # doctest: +SKIP
>>> print(make_dot(y, params={"x": x, "w": w}).source)   # doctest: +SKIP
"""
from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..autograd.engine import compute_dependencies

__all__ = ["draw_graph", "to_dot", "graph_layout", "GraphNode", "execution_order", "backward_stepper", "make_dot",
           "Digraph"]


@dataclass
class GraphNode:
    """One box of the picture."""

    key: int                      # position in discovery order (stable)
    kind: str                     # "output", "op" or "leaf"
    title: str                    # MulBackward0, AccumulateGrad, or the output's label
    lines: list = field(default_factory=list)   # saved tensors / shape lines under the title
    layer: int = 0
    x: float = 0.0
    node: object = None           # the autograd Node (None for the output box)


def _shape(t) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ("," if len(t.shape) == 1 else "") + ")"


def _saved_lines(node) -> list:
    from ..autograd.graph import _FREED_MARK, SavedTensor
    saved = getattr(node, "_saved", None)
    if not saved:
        return []
    out = []
    for k, v in saved.items():
        if k.startswith("_"):
            continue
        if v is _FREED_MARK:
            out.append(f"{k}: (freed)")
        elif isinstance(v, SavedTensor):
            t = v.tensor
            if t is not None:
                out.append(f"{k}: {_shape(t)}")
            else:
                out.append(f"{k}: (packed)")
    return out


def graph_layout(tensor, params: dict | None = None, show_saved: bool = True):
    """The boxes and arrows of ``tensor``'s backward graph, with layered positions.

    Returns ``(nodes, edges)``: ``nodes`` a list of :class:`GraphNode` in discovery order,
    ``edges`` a list of ``(from_key, to_key)`` pairs in the forward direction.
    """
    names = {id(t): n for n, t in (params or {}).items()}
    root = tensor.grad_fn
    out_box = GraphNode(0, "output", "output", [_shape(tensor) + f" {tensor.dtype}".replace("course_lib.", "")])
    nodes = [out_box]
    if root is None:
        return nodes, []
    keys = {}
    order = []
    stack = [root]
    # discovery in next_functions order (iterative DFS, first-seen order is stable)
    while stack:
        n = stack.pop()
        if id(n) in keys:
            continue
        keys[id(n)] = len(nodes)
        kind = "leaf" if type(n).__name__ == "AccumulateGrad" else "op"
        title = type(n).__name__
        lines = []
        if kind == "leaf":
            v = n.variable
            label = names.get(id(v))
            lines.append((f"{label} " if label else "") + _shape(v))
        elif show_saved:
            lines = _saved_lines(n)
        nodes.append(GraphNode(len(nodes), kind, title, lines, node=n))
        order.append(n)
        for nxt, _ in reversed(n.next_functions):
            if nxt is not None and id(nxt) not in keys:
                stack.append(nxt)
    edges = [(keys[id(root)], 0)]
    for n in order:
        for nxt, _ in n.next_functions:
            if nxt is not None:
                edges.append((keys[id(nxt)], keys[id(n)]))
    # layers: longest path from the output (Kahn's algorithm over the "used by" counts)
    users = {}
    for a, b in edges:
        users[a] = users.get(a, 0) + 1
    layer = {0: 0}
    ready = [0]
    remaining = dict(users)
    children = {}
    for a, b in edges:
        children.setdefault(b, []).append(a)
    while ready:
        k = ready.pop(0)
        for c in children.get(k, []):
            layer[c] = max(layer.get(c, 0), layer[k] + 1)
            remaining[c] -= 1
            if remaining[c] == 0:
                ready.append(c)
    rows = {}
    for nd in nodes:
        nd.layer = layer.get(nd.key, 0)
        rows.setdefault(nd.layer, []).append(nd)
    for row in rows.values():
        w = len(row)
        for i, nd in enumerate(row):
            nd.x = i - (w - 1) / 2
    return nodes, edges


_COLOURS = {"output": "#c7e9c0", "op": "#f0f0f0", "leaf": "#c6dbef"}
_DONE = "#fdd0a2"


def execution_order(tensor) -> list:
    """The nodes in the order ``tensor.backward()`` runs them, without running anything.

    Same rule as the engine (``course_lib/autograd/engine.py``), with its dependency counts
    (``compute_dependencies``): a node is ready when every edge into it has delivered its
    gradient; among ready nodes the most recently created (highest sequence number) runs first.
    """
    root = tensor.grad_fn
    if root is None:
        return []
    deps = compute_dependencies([root])
    ready = [(-root._sequence_nr, id(root), root)]
    order = []
    while ready:
        n = heapq.heappop(ready)[2]
        order.append(n)
        for nxt, _ in n.next_functions:
            if nxt is None:
                continue
            deps[nxt] -= 1
            if deps[nxt] == 0:
                heapq.heappush(ready, (-nxt._sequence_nr, id(nxt), nxt))
    return order


def draw_graph(tensor, ax=None, params: dict | None = None, show_saved: bool = True, title: str | None = None,
               show_order: bool = False, done: int | None = None, figsize: tuple | None = None):
    """Draw ``tensor``'s backward graph with matplotlib; returns the Axes.

    ``params`` maps names to leaf tensors (``dict(model.named_parameters())``) to label them.
    ``figsize`` (inches) sets the size of a new figure (default: from the graph's width and depth).
    ``show_order`` numbers the nodes in the order backward runs them (``execution_order``);
    ``done=k`` colours the first ``k`` of them as already run.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    nodes, edges = graph_layout(tensor, params, show_saved)
    step = {}
    if show_order or done is not None:
        step = {id(n): k + 1 for k, n in enumerate(execution_order(tensor))}
    n_layers = max(nd.layer for nd in nodes) + 1
    width = max(sum(1 for nd in nodes if nd.layer == k) for k in range(n_layers))
    if ax is None:
        if figsize is None:
            figsize = (max(4.0, 2.6 * width), max(2.5, 1.25 * n_layers))
        _, ax = plt.subplots(figsize=figsize)
    ys = {}
    xs = {}
    box_h = {}
    for nd in nodes:
        x, y = nd.x * 2.6, -nd.layer * 1.25
        xs[nd.key], ys[nd.key] = x, y
        k = step.get(id(nd.node)) if nd.node is not None else None
        label = f"{k}. {nd.title}" if (show_order and k is not None) else nd.title
        text = "\n".join([label] + nd.lines)
        h = 0.32 + 0.16 * len(nd.lines)
        box_h[nd.key] = h
        w = 0.11 * max(len(s) for s in [label] + nd.lines) + 0.3
        colour = _DONE if (done is not None and k is not None and k <= done) else _COLOURS[nd.kind]
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.05",
                                    facecolor=colour, edgecolor="#555555", linewidth=0.8))
        ax.text(x, y, text, ha="center", va="center", fontsize=8, family="monospace")
    for a, b in edges:
        ax.annotate("", xy=(xs[b], ys[b] - box_h[b] / 2 - 0.04), xytext=(xs[a], ys[a] + box_h[a] / 2 + 0.04),
                    arrowprops=dict(arrowstyle="->", color="#444444", lw=0.9))
    xmin = min(xs.values()) - 1.5
    xmax = max(xs.values()) + 1.5
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(-(n_layers - 1) * 1.25 - 0.8, 0.8)
    ax.axis("off")
    if title:
        ax.set_title(title)
    return ax


def _dot_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(tensor, params: dict | None = None, show_saved: bool = True) -> str:
    """Graphviz source of the same picture (``dot -Tpng`` or the ``graphviz`` package renders it)."""
    nodes, edges = graph_layout(tensor, params, show_saved)
    lines = ["digraph backward {", '  node [shape=box, style="rounded,filled", fontname="monospace", fontsize=10];',
             "  rankdir=BT;"]
    for nd in nodes:
        label = "\\n".join(_dot_escape(s) for s in [nd.title] + nd.lines)
        lines.append(f'  n{nd.key} [label="{label}", fillcolor="{_COLOURS[nd.kind]}"];')
    for a, b in edges:
        lines.append(f"  n{a} -> n{b};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def backward_stepper(tensor, params: dict | None = None, figsize: tuple | None = None):
    """A slider that steps through ``backward()``: nodes already run are coloured.

    Draws a static figure (every node numbered in execution order) first, so the
    notebook reads well without a live kernel, then returns the ipywidgets control.
    ``figsize`` is passed to both pictures (see ``draw_graph``).
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    n = len(execution_order(tensor))
    draw_graph(tensor, params=params, show_order=True, title="order in which backward() runs the nodes",
               figsize=figsize)
    plt.show()
    out = widgets.Output()
    slider = widgets.IntSlider(value=0, min=0, max=n, description="steps run")

    def redraw(change=None):
        with out:
            out.clear_output(wait=True)
            draw_graph(tensor, params=params, show_order=True, done=slider.value,
                       title=f"after {slider.value} of {n} steps", figsize=figsize)
            plt.show()
    slider.observe(redraw, names="value")
    redraw()
    return widgets.VBox([slider, out])


# -- make_dot: torchviz's picture ----------------------------------------------------------------------

_DOT_ID = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*|-?(\.[0-9]+|[0-9]+(\.[0-9]*)?))$")
_DOT_HTML = re.compile(r"<.*>$", re.DOTALL)
_DOT_QUOTE = re.compile(r"(?P<escaped_backslashes>(?:\\{2})*)\\?(?P<literal_quote>\")")
_DOT_KEYWORDS = {"node", "edge", "graph", "digraph", "subgraph", "strict"}


def _quote(identifier: str) -> str:
    """A DOT identifier, quoted when it has to be (graphviz's ``quoting.quote``)."""
    if _DOT_HTML.match(identifier):
        return identifier
    if not _DOT_ID.match(identifier) or identifier.lower() in _DOT_KEYWORDS:
        return '"' + _DOT_QUOTE.sub(r"\g<escaped_backslashes>\\\g<literal_quote>", identifier) + '"'
    return identifier


def _attr_list(label: str | None = None, attrs: dict | None = None) -> str:
    """`` [label=... key=value ...]`` with the keys sorted, or ``""`` (graphviz's ``attr_list``)."""
    items = [f"label={_quote(label)}"] if label is not None else []
    items += [f"{_quote(k)}={_quote(v)}" for k, v in sorted((attrs or {}).items()) if v is not None]
    return f" [{' '.join(items)}]" if items else ""


class Digraph:
    """The part of ``graphviz.Digraph`` that :func:`make_dot` uses, for when graphviz is not installed.

    ``source`` is the same DOT text graphviz 0.21 writes; render it with ``dot -Tsvg`` or paste it
    into any Graphviz viewer.  Nothing is rendered here (no ``_repr_svg_``), so a notebook shows the repr.
    """

    def __init__(self, node_attr: dict | None = None, graph_attr: dict | None = None) -> None:
        self.node_attr = dict(node_attr or {})
        self.graph_attr = dict(graph_attr or {})
        self.edge_attr: dict = {}
        self.body: list[str] = []

    def node(self, name: str, label: str | None = None, **attrs: str) -> None:
        """Add a node ``name`` (its caption ``label``)."""
        self.body.append(f"\t{_quote(name)}{_attr_list(label, attrs)}\n")

    def edge(self, tail_name: str, head_name: str, **attrs: str) -> None:
        """Add an arrow ``tail_name -> head_name``."""
        self.body.append(f"\t{_quote(tail_name)} -> {_quote(head_name)}{_attr_list(None, attrs)}\n")

    def __iter__(self) -> Iterator[str]:
        yield "digraph {\n"
        for kw in ("graph", "node", "edge"):
            attrs = getattr(self, f"{kw}_attr")
            if attrs:
                yield f"\t{kw}{_attr_list(None, attrs)}\n"
        yield from self.body
        yield "}\n"

    @property
    def source(self) -> str:
        """The DOT text."""
        return "".join(self)

    def __str__(self) -> str:
        return self.source


def _new_digraph(node_attr: dict, graph_attr: dict):
    try:
        from graphviz import Digraph as GraphvizDigraph
    except ImportError:
        return Digraph(node_attr=node_attr, graph_attr=graph_attr)
    return GraphvizDigraph(node_attr=node_attr, graph_attr=graph_attr)


def _is_tensor(x: Any) -> bool:
    # duck-typed so that make_dot also draws real torch tensors (the tests compare the two)
    return hasattr(x, "grad_fn") and hasattr(x, "requires_grad") and hasattr(x, "size")


def _saved_attributes(fn) -> list[str]:
    """The ``_saved_<name>`` attributes of a node, sorted as ``dir()`` lists them."""
    names = {a for a in dir(fn) if a.startswith("_saved_")}
    saved = getattr(fn, "_saved", None)   # course_lib's nodes answer _saved_<name> from this dict
    # (a custom Function's node keeps ctx.save_for_backward's tensors there too: like PyTorch's, it
    # shows them as saved_tensors only)
    if isinstance(saved, dict) and not hasattr(type(fn), "saved_tensors"):
        names.update(f"_saved_{k}" for k in saved if not k.startswith("_"))
    return sorted(names)


def _fn_name(fn, show_attrs: bool, max_attr_chars: int) -> str:
    name = type(fn).__name__
    if not show_attrs:
        return name
    attrs = {}
    for attr in _saved_attributes(fn):
        val = getattr(fn, attr)
        attr = attr[len("_saved_"):]
        if _is_tensor(val):
            attrs[attr] = "[saved tensor]"
        elif isinstance(val, tuple) and any(_is_tensor(t) for t in val):
            attrs[attr] = "[saved tensors]"
        else:
            attrs[attr] = str(val)
    if not attrs:
        return name
    max_attr_chars = max(max_attr_chars, 3)
    col1 = max(len(k) for k in attrs)
    col2 = min(max(len(v) for v in attrs.values()), max_attr_chars)
    sep = "-" * max(col1 + col2 + 2, len(name))
    rows = (f"%-{col1}s: %{col2}s" % (k, v[:col2 - 3] + "..." if len(v) > col2 else v) for k, v in attrs.items())
    return name + "\n" + sep + "\n" + "\n".join(rows)


def make_dot(var, params: dict | None = None, show_attrs: bool = False, show_saved: bool = False,
             max_attr_chars: int = 50):
    """torchviz's ``make_dot``: the backward graph of ``var`` (a tensor or a tuple of them) as Graphviz.

    Walks ``var.grad_fn`` and each node's ``next_functions`` depth first, as torchviz does:

    * grey boxes are backward nodes, labelled with their class (``AddmmBackward0``);
    * lightblue boxes are the leaves that will receive ``.grad`` (``AccumulateGrad.variable``),
      labelled ``name\\n (shape)`` with the name from ``params`` (``dict(model.named_parameters())``);
    * the output is darkolivegreen1; if it is a view, its base is darkolivegreen3 (dotted arrow);
    * orange boxes are saved tensors: always for custom ``Function``s (``saved_tensors``), and for
      built-in nodes with ``show_saved=True``; ``show_attrs=True`` lists each node's saved values.

    Node names are ``str(id(obj))``, as in torchviz.  Returns a ``graphviz.Digraph`` when the
    graphviz package is installed, else a :class:`Digraph`; either has ``.source`` (the DOT text).
    """
    if params is not None:
        if not all(_is_tensor(p) for p in params.values()):
            raise TypeError("make_dot: params must map names to tensors")
        param_map = {id(v): k for k, v in params.items()}
    else:
        param_map = {}
    node_attr = dict(style="filled", shape="box", align="left", fontsize="10", ranksep="0.1", height="0.2",
                     fontname="monospace")
    dot = _new_digraph(node_attr, dict(size="12,12"))
    seen: set[int] = set()
    alive: list = []   # saved values are unpacked into new objects: keep them so that no id is reused

    def mark(obj) -> None:
        seen.add(id(obj))
        alive.append(obj)

    def var_name(t, name: str | None = None) -> str:
        if not name:
            name = param_map.get(id(t), "")
        return "%s\n (%s)" % (name, ", ".join("%d" % v for v in t.size()))

    def visit(fn) -> Iterator:
        """torchviz's ``add_nodes(fn)``; yields each next function to walk before going on."""
        if show_saved:
            for attr in _saved_attributes(fn):
                val = getattr(fn, attr)
                mark(val)
                attr = attr[len("_saved_"):]
                if _is_tensor(val):
                    dot.edge(str(id(fn)), str(id(val)), dir="none")
                    dot.node(str(id(val)), var_name(val, attr), fillcolor="orange")
                if isinstance(val, tuple):
                    for i, t in enumerate(val):
                        if _is_tensor(t):
                            dot.edge(str(id(fn)), str(id(t)), dir="none")
                            dot.node(str(id(t)), var_name(t, f"{attr}[{i}]"), fillcolor="orange")
        if hasattr(fn, "variable"):   # AccumulateGrad: the leaf it accumulates into
            leaf = fn.variable
            mark(leaf)
            dot.node(str(id(leaf)), var_name(leaf), fillcolor="lightblue")
            dot.edge(str(id(leaf)), str(id(fn)))
        dot.node(str(id(fn)), _fn_name(fn, show_attrs, max_attr_chars))
        for u, _ in getattr(fn, "next_functions", ()):
            if u is not None:
                dot.edge(str(id(u)), str(id(fn)))
                yield u
        for t in getattr(fn, "saved_tensors", ()) if hasattr(fn, "saved_tensors") else ():
            mark(t)
            dot.edge(str(id(t)), str(id(fn)), dir="none")
            dot.node(str(id(t)), var_name(t), fillcolor="orange")

    def add_nodes(root) -> None:
        # depth first with an explicit stack, so that deep graphs (long RNNs) do not hit the recursion limit
        if id(root) in seen:
            return
        mark(root)
        stack = [visit(root)]
        while stack:
            u = next(stack[-1], None)
            if u is None:
                stack.pop()
            elif id(u) not in seen:
                mark(u)
                stack.append(visit(u))

    def add_base_tensor(t, color: str = "darkolivegreen1") -> None:
        if id(t) in seen:
            return
        mark(t)
        dot.node(str(id(t)), var_name(t), fillcolor=color)
        if t.grad_fn:
            add_nodes(t.grad_fn)
            dot.edge(str(id(t.grad_fn)), str(id(t)))
        if t._is_view():
            add_base_tensor(t._base, color="darkolivegreen3")
            dot.edge(str(id(t._base)), str(id(t)), style="dotted")

    for v in (var if isinstance(var, tuple) else (var,)):
        add_base_tensor(v)
    size = max(12, len(dot.body) * 0.15)   # torchviz's resize_graph
    dot.graph_attr.update(size=f"{size},{size}")
    return dot
