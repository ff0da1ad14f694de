"""viz.graph: the backward graph as a matplotlib picture and as Graphviz source (Agg backend)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import course_lib as cl  # noqa: E402
from course_lib.viz.graph import draw_graph, graph_layout, to_dot  # noqa: E402


def seed():
    x1 = cl.tensor(2.0, requires_grad=True)
    x2 = cl.tensor(3.0, requires_grad=True)
    a = x1 * x2
    return x1, x2, cl.log(a) * cl.sin(x2)


def test_layout_of_seed_example():
    x1, x2, z = seed()
    nodes, edges = graph_layout(z, params={"x1": x1, "x2": x2})
    titles = [n.title for n in nodes]
    assert titles == ["output", "MulBackward0", "LogBackward0", "MulBackward0", "AccumulateGrad",
                      "AccumulateGrad", "SinBackward0"]
    by_key = {n.key: n for n in nodes}
    # every arrow points up: from a deeper layer to a shallower one
    assert all(by_key[a].layer > by_key[b].layer for a, b in edges)
    # x2 feeds both Mul (a) and Sin: one box, two arrows
    acc2 = next(n for n in nodes if n.lines == ["x2 ()"])
    assert sum(1 for a, b in edges if a == acc2.key) == 2
    # saved tensors are listed on the op nodes
    top = nodes[1]
    assert top.lines == ["self: ()", "other: ()"]
    # AccumulateGrad of x2 sits below both of its users
    assert acc2.layer == 4


def test_layout_is_deterministic_and_shows_shapes():
    w = cl.ones(3, 2, requires_grad=True)
    x = cl.ones(4, 3)
    y = (x @ w).relu().sum()
    a = graph_layout(y, params={"w": w})
    b = graph_layout(y, params={"w": w})
    assert [(n.title, n.lines, n.layer, n.x) for n in a[0]] == [(n.title, n.lines, n.layer, n.x) for n in b[0]]
    assert a[1] == b[1]
    leaf = next(n for n in a[0] if n.kind == "leaf")
    assert leaf.lines == ["w (3, 2)"]
    mm = next(n for n in a[0] if n.title == "MmBackward0")
    assert mm.lines == ["self: (4, 3)"]  # only what w's gradient needs


def test_freed_saved_tensors_are_marked():
    x = cl.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    nodes, _ = graph_layout(y)
    mul = next(n for n in nodes if n.title == "MulBackward0")
    assert mul.lines == ["self: (freed)", "other: (freed)"]


def test_draw_graph_on_given_axes_and_new_figure():
    x1, x2, z = seed()
    fig, ax = plt.subplots()
    assert draw_graph(z, ax=ax) is ax
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("LogBackward0") for t in texts)
    assert any("AccumulateGrad" in t for t in texts)
    assert len(ax.patches) == 7
    plt.close(fig)
    ax2 = draw_graph(z, title="seed")
    assert ax2.get_title() == "seed"
    fig2 = ax2.figure
    fig2.canvas.draw()
    plt.close(fig2)


def test_graph_of_a_leaf_or_no_grad_tensor():
    nodes, edges = graph_layout(cl.ones(2))
    assert len(nodes) == 1 and edges == []
    ax = draw_graph(cl.ones(2))
    plt.close(ax.figure)


def test_to_dot():
    x1, x2, z = seed()
    src = to_dot(z, params={"x1": x1})
    assert src.startswith("digraph backward {") and src.rstrip().endswith("}")
    assert 'label="LogBackward0' in src
    assert 'label="AccumulateGrad\\nx1 ()"' in src
    assert src.count("->") == 7
    assert src == to_dot(z, params={"x1": x1})


def test_execution_order_matches_the_engine():
    from course_lib.viz.graph import execution_order
    x = cl.tensor(2.0, requires_grad=True)
    a = x * 3
    out = a.sin() + a.exp() + a * a
    order = execution_order(out)
    ran = []
    for node in order:
        node.register_prehook(lambda grads, node=node: ran.append(node))
    out.backward()
    assert ran == order
    # every node comes after all the nodes that send it gradient
    pos = {n: i for i, n in enumerate(order)}
    for n in order:
        for nxt, _ in n.next_functions:
            if nxt is not None:
                assert pos[nxt] > pos[n]
    assert order[0] is out.grad_fn and type(order[-1]).__name__ == "AccumulateGrad"


def test_draw_graph_order_and_done():
    x1, x2, z = seed()
    ax = draw_graph(z, show_order=True, done=3)
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("1. MulBackward0") for t in texts)
    colours = sorted({tuple(round(c, 3) for c in p.get_facecolor()) for p in ax.patches})
    assert len(colours) >= 3  # done, op and leaf colours
    plt.close(ax.figure)


def test_backward_stepper_builds_a_widget():
    pytest = __import__("pytest")
    pytest.importorskip("ipywidgets")
    from course_lib.viz.graph import backward_stepper
    x1, x2, z = seed()
    w = backward_stepper(z)
    slider = w.children[0]
    assert slider.max == 6
    slider.value = 2
    plt.close("all")


def test_graph_pictures_take_a_figsize():
    from course_lib.viz.graph import backward_stepper, draw_graph
    x1, x2, z = seed()
    ax = draw_graph(z, figsize=(4.6, 4.4))
    assert tuple(ax.figure.get_size_inches()) == (4.6, 4.4)
    plt.close("all")
    __import__("pytest").importorskip("ipywidgets")
    backward_stepper(z, figsize=(4.6, 4.4))
    sizes = [tuple(plt.figure(k).get_size_inches()) for k in plt.get_fignums()]
    assert sizes == [(4.6, 4.4), (4.6, 4.4)]  # the static picture and the slider's
    plt.close("all")
