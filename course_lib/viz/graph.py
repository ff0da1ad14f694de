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

>>> y = (x * w).sum()
>>> draw_graph(y, params={"x": x, "w": w})       # doctest: +SKIP
>>> print(to_dot(y))                             # doctest: +SKIP
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from ..autograd.engine import compute_dependencies

__all__ = ["draw_graph", "to_dot", "graph_layout", "GraphNode", "execution_order", "backward_stepper"]


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
