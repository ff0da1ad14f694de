"""course_lib.viz.make_dot: torchviz's DOT text for course_lib's backward graphs.

The golden text below is what torchviz 0.0.3 writes for the same network built with torch 2.13.0
(node ids renumbered in order of appearance), so this file checks torchviz compatibility without
torchviz; the oracle tests compare with torch's graph (and with torchviz when it is installed).
"""
from __future__ import annotations

import re

import pytest

import course_lib as cl
from course_lib.autograd import Function
from course_lib.viz import graph as viz_graph
from course_lib.viz import make_dot

# torchviz.make_dot(net(x)[:, 0], params=dict(net.named_parameters())).source, for
# net = Sequential(Linear(3, 4), ReLU(), Linear(4, 2)) and x of shape (5, 3), ids renumbered
TORCHVIZ_MLP = """digraph {
\tgraph [size="12,12"]
\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]
\tn0 [label="
 (5)" fillcolor=darkolivegreen1]
\tn1 [label=SelectBackward0]
\tn2 -> n1
\tn2 [label=AddmmBackward0]
\tn3 -> n2
\tn4 [label="2.bias
 (2)" fillcolor=lightblue]
\tn4 -> n3
\tn3 [label=AccumulateGrad]
\tn5 -> n2
\tn5 [label=ReluBackward0]
\tn6 -> n5
\tn6 [label=AddmmBackward0]
\tn7 -> n6
\tn8 [label="0.bias
 (4)" fillcolor=lightblue]
\tn8 -> n7
\tn7 [label=AccumulateGrad]
\tn9 -> n6
\tn9 [label=TBackward0]
\tn10 -> n9
\tn11 [label="0.weight
 (4, 3)" fillcolor=lightblue]
\tn11 -> n10
\tn10 [label=AccumulateGrad]
\tn12 -> n2
\tn12 [label=TBackward0]
\tn13 -> n12
\tn14 [label="2.weight
 (2, 4)" fillcolor=lightblue]
\tn14 -> n13
\tn13 [label=AccumulateGrad]
\tn1 -> n0
\tn15 [label="
 (5, 2)" fillcolor=darkolivegreen3]
\tn2 -> n15
\tn15 -> n0 [style=dotted]
}
"""


def renumber(source: str) -> str:
    """Node ids (``str(id(obj))``) replaced by n0, n1, ... in order of first appearance."""
    ids: dict[str, str] = {}
    return re.sub(r"\b\d{6,}\b", lambda m: ids.setdefault(m.group(0), f"n{len(ids)}"), source)


def test_mlp_matches_torchviz_text():
    net = cl.nn.Sequential(cl.nn.Linear(3, 4), cl.nn.ReLU(), cl.nn.Linear(4, 2))
    y = net(cl.randn(5, 3))[:, 0]
    assert renumber(make_dot(y, params=dict(net.named_parameters())).source) == TORCHVIZ_MLP


def test_fallback_digraph_without_graphviz(monkeypatch):
    # without the graphviz package make_dot returns its own Digraph, with the same text
    monkeypatch.setattr(viz_graph, "_new_digraph",
                        lambda node_attr, graph_attr: viz_graph.Digraph(node_attr=node_attr, graph_attr=graph_attr))
    net = cl.nn.Sequential(cl.nn.Linear(3, 4), cl.nn.ReLU(), cl.nn.Linear(4, 2))
    dot = make_dot(net(cl.randn(5, 3))[:, 0], params=dict(net.named_parameters()))
    assert isinstance(dot, viz_graph.Digraph)
    assert renumber(dot.source) == TORCHVIZ_MLP
    assert not hasattr(dot, "_repr_svg_")


def test_digraph_quotes_as_graphviz():
    graphviz = pytest.importorskip("graphviz", reason="graphviz (python package) not installed: "
                                   "the fallback Digraph is compared with it")
    ours = viz_graph.Digraph(node_attr={"shape": "box"}, graph_attr={"size": "12,12"})
    theirs = graphviz.Digraph(node_attr={"shape": "box"}, graph_attr={"size": "12,12"})
    for d in (ours, theirs):
        d.node("1", 'say "hi"\n (2, 3)', fillcolor="orange")
        d.node("node", "plain_id")
        d.node("2", '\\"escaped\\" <not html')
        d.node("3", "<<b>html</b>>")
        d.node("4", "-4.25")
        d.edge("1", "2", dir="none")
        d.edge("2", "3")
    assert ours.source == theirs.source


class _Double(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def _double_program(lib):
    class _Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    w = lib.ones(3, requires_grad=True)
    y = _Double.apply(w)
    return (y * w).sum(), y, w


def test_saved_tensors_attrs_and_tuple_outputs():
    z, y, w = _double_program(cl)
    src = renumber(make_dot((z, y), params={"w": w}, show_attrs=True, show_saved=True).source)
    assert '[label="w\n (3)" fillcolor=lightblue]' in src
    # y was drawn as MulBackward0's saved self, so (as in torchviz) it gets no output box of its own
    assert src.count("fillcolor=darkolivegreen1") == 1
    assert make_dot((z, y)).source.count("fillcolor=darkolivegreen1") == 2
    # the custom Function's saved tensor (w itself) is drawn orange, undirected, and lists no attributes
    assert "n5 [label=_DoubleBackward]" in src and "n3 -> n5 [dir=none]" in src
    # MulBackward0 lists what it saved (other, self), as torchviz does from the _saved_* attributes
    assert re.search(r"MulBackward0\n-+\nother: \[saved tensor\]\nself : \[saved tensor\]", src)
    assert src.count('[label="other\n (3)" fillcolor=orange]') == 1
    with pytest.raises(TypeError, match="params must map names to tensors"):
        make_dot(z, params={"w": 1.0})


def test_saved_tensors_as_torch():
    torch = pytest.importorskip("torch", reason="torch==2.13.0 not installed (make oracle): the graph is compared "
                                "with torch's")
    pictures = []
    for lib in (cl, torch):
        z, y, w = _double_program(lib)
        pictures.append(renumber(make_dot((z, y), params={"w": w}, show_saved=True).source))
    assert pictures[0] == pictures[1]


def test_deep_graph_walks_without_recursion():
    x = cl.ones(1, requires_grad=True)
    y = x
    for _ in range(1500):   # deeper than the recursion limit
        y = y * 1.0
    src = make_dot(y).source
    assert src.count("MulBackward0") == 1500
    size = 1500 * 2 + 5   # lines: 2 per MulBackward0, 3 for the leaf, 2 for the output
    assert f'size="{size * 0.15},{size * 0.15}"' in src   # torchviz's resize_graph: 0.15 a line


def _conv_net(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(3)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(12, 2)

        def forward(self, x):
            y = self.relu(self.bn(self.conv(x)) + x)
            return self.fc(self.pool(y).flatten(1)).softmax(-1)
    return Net()


def test_conv_net_graph_as_torch():
    torch = pytest.importorskip("torch", reason="torch==2.13.0 not installed (make oracle): the graph is compared "
                                "with torch's")
    # make_dot only reads grad_fn, next_functions and variable, so it also draws torch's graph
    pictures = []
    for lib in (cl, torch):
        net = _conv_net(lib.nn)
        y = net(lib.randn(2, 3, 4, 4))
        pictures.append(renumber(make_dot(y, params=dict(net.named_parameters())).source))
    assert pictures[0] == pictures[1]
    assert '[label="bn.weight\n (3)" fillcolor=lightblue]' in pictures[0]
    assert "ConvolutionBackward0" in pictures[0] and "NativeBatchNormBackward0" in pictures[0]


def test_same_text_as_torchviz_on_torch():
    torch = pytest.importorskip("torch", reason="torch==2.13.0 not installed (make oracle)")
    torchviz = pytest.importorskip("torchviz", reason="torchviz not installed: the golden text stands in for it")
    import warnings
    net = _conv_net(torch.nn)
    y = net(torch.randn(2, 3, 4, 4))
    params = dict(net.named_parameters())
    for kw in ({}, {"show_attrs": True, "show_saved": True}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)   # torchviz imports distutils
            expected = torchviz.make_dot(y, params=params, **kw).source
        assert renumber(make_dot(y, params=params, **kw).source) == renumber(expected)
