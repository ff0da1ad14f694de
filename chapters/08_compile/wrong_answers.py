"""Planted wrong answers for chapter 08 (compile): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations

import math

import course_lib as cl
from course_lib import fx
from course_lib._ops.registry import OpDef
from course_lib.fx.experimental.proxy_tensor import ProxyTorchDispatchMode
from course_lib.utils import TorchDispatchMode


# ------------------------------------------------------------------ 08.1 GraphRecorder
class _Recorder(TorchDispatchMode):
    def __init__(self):
        self.graph = fx.Graph()
        self.node_of = {}
        self.keep = []

    def add_input(self, t, name):
        node = self.graph.placeholder(name)
        self.node_of[id(t)] = node
        self.keep.append(t)
        return node

    def arg(self, a):
        if isinstance(a, cl.Tensor):
            return self.node_of[id(a)]
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
        return a

    def remember(self, out, node):
        if isinstance(out, cl.Tensor):
            self.node_of[id(out)] = node
            self.keep.append(out)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args)
        self.remember(out, self.graph.call_function(func, tuple(self.arg(a) for a in args)))
        return out

    def finish(self, outputs):
        self.graph.output(tuple(self.arg(t) for t in outputs))
        return self.graph


class RecorderDropsConstants(_Recorder):
    # keeps only the tensor arguments: add(abs_1, 1, 1) becomes add(abs_1)
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args)
        self.remember(out, self.graph.call_function(func, tuple(self.arg(a) for a in args
                                                                if isinstance(a, cl.Tensor))))
        return out


class RecorderInputsOnFirstUse(_Recorder):
    # makes each placeholder when an op first reads the input, so the inputs come in order of use
    def add_input(self, t, name):
        self.pending = getattr(self, "pending", {})
        self.pending[id(t)] = (t, name)

    def arg(self, a):
        if isinstance(a, cl.Tensor) and id(a) not in self.node_of:
            t, name = self.pending[id(a)]
            with self.graph.inserting_before(next(iter(self.graph.nodes), None)
                                             if not any(n.op == "placeholder" for n in self.graph.nodes)
                                             else [n for n in self.graph.nodes if n.op == "placeholder"][-1].next):
                node = self.graph.placeholder(name)
            self.node_of[id(t)] = node
            self.keep.append(t)
        return super().arg(a)


class RecorderSingleOutput(_Recorder):
    # one output is returned bare, not in a tuple
    def finish(self, outputs):
        mapped = tuple(self.arg(t) for t in outputs)
        self.graph.output(mapped[0] if len(mapped) == 1 else mapped)
        return self.graph


class RecorderReturnsNone(_Recorder):
    # records, but forgets to return the result: the program goes on with None
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        super().__torch_dispatch__(func, types, args, kwargs)


class RecorderListsAsTuples(_Recorder):
    # maps a list argument to a tuple: stack([x, y]) is recorded as stack((x, y))
    def arg(self, a):
        if isinstance(a, (list, tuple)):
            return tuple(self.arg(x) for x in a)
        return super().arg(a)


class RecorderSubclassesLibrary(ProxyTorchDispatchMode):
    # inherits course_lib's __torch_dispatch__ (the dispatcher calls it, not the learner's code)
    def __init__(self):
        super().__init__(fx.Graph(), cl.nn.Module())

    def add_input(self, t, name):
        node = self.graph.placeholder(name)
        self.tensor_to_node[id(t)] = node
        self._alive.append(t)
        return node

    def finish(self, outputs):
        self.graph.output(tuple(self.tensor_to_node[id(t)] for t in outputs))
        return self.graph


class RecorderEntersLibraryMode(TorchDispatchMode):
    # `with recorder:` enters course_lib's own recording mode instead of this one
    def __init__(self):
        self.graph = fx.Graph()
        self.library = ProxyTorchDispatchMode(self.graph, cl.nn.Module())

    def add_input(self, t, name):
        node = self.graph.placeholder(name)
        self.library.tensor_to_node[id(t)] = node
        self.library._alive.append(t)
        return node

    def __enter__(self):
        self.library.__enter__()
        return self

    def __exit__(self, *exc):
        return self.library.__exit__(*exc)

    def finish(self, outputs):
        self.graph.output(tuple(self.library.tensor_to_node[id(t)] for t in outputs))
        return self.graph



# ------------------------------------------------------------------ 08.2 tabular
_HEADERS = ["opcode", "name", "target", "args", "kwargs"]


def _rows(graph):
    return [[n.op, n.name, f"aten.{n.target.name}" if isinstance(n.target, OpDef) else str(n.target),
             str(n.args), str(n.kwargs)] for n in graph.nodes]


def tabular_no_margin(graph):
    # columns as wide as their widest cell, without the two extra for the header
    rows = _rows(graph)
    widths = [max([len(h)] + [len(r[j]) for r in rows]) for j, h in enumerate(_HEADERS)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(_HEADERS), line(["-" * w for w in widths])] + [line(r) for r in rows])


def tabular_trailing_spaces(graph):
    # forgets rstrip: every line padded to the full width
    rows = _rows(graph)
    widths = [max([len(h) + 2] + [len(r[j]) for r in rows]) for j, h in enumerate(_HEADERS)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(_HEADERS), line(["-" * w for w in widths])] + [line(r) for r in rows])


def tabular_one_space(graph):
    # columns separated by one space
    rows = _rows(graph)
    widths = [max([len(h) + 2] + [len(r[j]) for r in rows]) for j, h in enumerate(_HEADERS)]
    line = lambda cells: " ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(_HEADERS), line(["-" * w for w in widths])] + [line(r) for r in rows])


def tabular_repr_target(graph):
    # prints a registry op's target with str(), not as aten.<name>
    rows = [[n.op, n.name, str(n.target), str(n.args), str(n.kwargs)] for n in graph.nodes]
    widths = [max([len(h) + 2] + [len(r[j]) for r in rows]) for j, h in enumerate(_HEADERS)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(_HEADERS), line(["-" * w for w in widths])] + [line(r) for r in rows])


# ------------------------------------------------------------------ 08.3 eliminate_dead_code
def _impure(node):
    if node.op in ("placeholder", "output") or node.target is print:
        return True
    name = getattr(node.target, "name", "")
    return name.endswith("_") and not name.endswith("__")


def dce_forward_walk(graph):
    # walks forwards: a node whose only user is dead is visited while that user still exists
    removed = 0
    for node in list(graph.nodes):
        if not node.users and not _impure(node):
            graph.erase_node(node)
            removed += 1
    return removed


def dce_drops_inplace(graph):
    # treats in-place ops as pure: an unused x.add_(y) disappears, and with it the change to x
    removed = 0
    for node in reversed(graph.nodes):
        if not node.users and node.op not in ("placeholder", "output") and node.target is not print:
            graph.erase_node(node)
            removed += 1
    return removed


def dce_drops_unused_inputs(graph):
    # removes placeholders nobody reads: the graph's signature changes
    removed = 0
    for node in reversed(graph.nodes):
        if not node.users and (not _impure(node) or node.op == "placeholder"):
            graph.erase_node(node)
            removed += 1
    return removed


def dce_drops_print(graph):
    # forgets that print has an effect
    removed = 0
    for node in reversed(graph.nodes):
        name = getattr(node.target, "name", "")
        if not node.users and node.op not in ("placeholder", "output") and not name.endswith("_"):
            graph.erase_node(node)
            removed += 1
    return removed


def dce_keeps_random_off(graph):
    # forgets random ops: an unused rand_like goes, and the generator no longer advances
    removed = 0
    for node in reversed(graph.nodes):
        name = getattr(node.target, "name", "")
        impure = node.op in ("placeholder", "output") or node.target is print or (
            name.endswith("_") and not name.endswith("__"))
        if not node.users and not impure:
            graph.erase_node(node)
            removed += 1
    return removed


def dce_from_partitioner(graph):
    # lets course_lib do it: the partitioner's graph extraction runs Graph.eliminate_dead_code
    from course_lib._functorch.partitioners import _extract_graph_with_inputs_outputs

    output = next(n for n in graph.nodes if n.op == "output")
    inputs = [n for n in graph.nodes if n.op == "placeholder"]
    kept = {n.name for n in _extract_graph_with_inputs_outputs(graph, inputs, list(output.args[0])).nodes}
    removed = 0
    for node in reversed(graph.nodes):
        if node.name not in kept and node.op != "placeholder":
            graph.erase_node(node)
            removed += 1
    return removed


def dce_counts_nothing(graph):
    # right graph, wrong return value
    for node in reversed(graph.nodes):
        if not node.users and not _impure(node):
            graph.erase_node(node)
    return 0


# ------------------------------------------------------------------ 08.4 split_at_breaks
def _pieces(program, breaks):
    ops = program["ops"]
    at = {op[0]: k for k, op in enumerate(ops)}
    bounds = [0] + [at[b] + 1 for b in breaks] + [len(ops)]
    return [ops[bounds[j]:bounds[j + 1]] for j in range(len(bounds) - 1)]


def _split(program, breaks, *, order_inputs=None, live=None, break_first=True):
    pieces = _pieces(program, breaks)
    graphs = []
    for j, piece in enumerate(pieces):
        made = [op[0] for op in piece]
        reads = [a for op in piece for a in op[2] if isinstance(a, str)]
        inputs = list(dict.fromkeys(a for a in reads if a not in made))
        if order_inputs is not None:
            inputs = order_inputs(inputs, program)
        if j == len(pieces) - 1:
            outputs = [program["output"]]
        else:
            later = {a for p in pieces[j + 1:] for op in p for a in op[2] if isinstance(a, str)}
            kept = [n for n in made if (live(n, later) if live else n in later)]
            if break_first:
                outputs = [breaks[j]] + [n for n in kept if n != breaks[j]]
            else:
                outputs = [n for n in made if n in kept or n == breaks[j]]
        graphs.append({"inputs": inputs, "ops": [list(op) for op in piece], "outputs": outputs})
    return graphs


def split_inputs_sorted(program, breaks):
    # inputs sorted by name instead of first use
    return _split(program, breaks, order_inputs=lambda inputs, p: sorted(inputs))


def split_outputs_in_node_order(program, breaks):
    # the break value is not put first: outputs simply in op order
    return _split(program, breaks, break_first=False)


def split_outputs_everything(program, breaks):
    # every value the graph computes is an output, live or not
    return _split(program, breaks, live=lambda n, later: True)


def split_outputs_for_next_graph_only(program, breaks):
    # a value is returned only if the very next graph reads it, not a graph after that
    pieces = _pieces(program, breaks)
    graphs = _split(program, breaks)
    for j, graph in enumerate(graphs[:-1]):
        nxt = {a for op in pieces[j + 1] for a in op[2] if isinstance(a, str)}
        graph["outputs"] = [breaks[j]] + [op[0] for op in pieces[j] if op[0] in nxt and op[0] != breaks[j]]
    return graphs


def split_break_starts_next_graph(program, breaks):
    # cuts before the break op instead of after it
    shifted = []
    ops = program["ops"]
    at = {op[0]: k for k, op in enumerate(ops)}
    for b in breaks:
        shifted.append(ops[max(at[b] - 1, 0)][0])
    return _split(program, shifted)


# ------------------------------------------------------------------ 08.5 Guards
def _value(kind, v):
    if kind == "grad_mode":
        return cl.is_grad_enabled()
    if kind == "type":
        return "Tensor" if isinstance(v, cl.Tensor) else type(v).__name__
    return {"dtype": lambda: v.dtype.name, "device": lambda: str(v.device), "shape": lambda: tuple(v.shape),
            "requires_grad": lambda: v.requires_grad}.get(kind, lambda: v)()


class _Guards:
    kinds_tensor = ("type", "dtype", "device", "shape", "requires_grad")

    def __init__(self, args):
        self.guards = [("grad_mode", None, cl.is_grad_enabled())]
        for i, v in enumerate(args):
            kinds = self.kinds_tensor if isinstance(v, cl.Tensor) else ("type", "value")
            self.guards += [(kind, i, _value(kind, v)) for kind in kinds]

    def check(self, args):
        for kind, i, expected in self.guards:
            actual = _value(kind, None if i is None else args[i])
            if actual != expected:
                what = kind if i is None else f"{kind} of argument {i}"
                return f"{what}: expected {expected!r}, got {actual!r}"
        return None


class GuardsNoGradMode(_Guards):
    # forgets grad mode: a graph captured with grad on is reused under no_grad
    def __init__(self, args):
        super().__init__(args)
        self.guards = self.guards[1:]


class GuardsValueWithoutType(_Guards):
    # a constant is guarded by value only: 2 == 2.0 == True passes
    def __init__(self, args):
        super().__init__(args)
        self.guards = [g for g in self.guards if not (g[0] == "type" and g[2] != "Tensor")]

    def check(self, args):
        for kind, i, expected in self.guards:
            v = None if i is None else args[i]
            if kind == "value" and isinstance(v, cl.Tensor):
                return f"type of argument {i}: expected {type(expected).__name__!r}, got 'Tensor'"
            if kind != "grad_mode" and kind != "value" and not isinstance(v, cl.Tensor):
                return f"type of argument {i}: expected 'Tensor', got {type(v).__name__!r}"
            actual = _value(kind, v)
            if actual != expected:
                what = kind if i is None else f"{kind} of argument {i}"
                return f"{what}: expected {expected!r}, got {actual!r}"
        return None


class GuardsShapeAsList(_Guards):
    # keeps the shape as a list (and so reports it as one)
    def __init__(self, args):
        super().__init__(args)
        self.guards = [(k, i, list(e)) if k == "shape" else (k, i, e) for k, i, e in self.guards]

    def check(self, args):
        for kind, i, expected in self.guards:
            actual = _value(kind, None if i is None else args[i])
            if kind == "shape":
                actual = list(actual)
            if actual != expected:
                what = kind if i is None else f"{kind} of argument {i}"
                return f"{what}: expected {expected!r}, got {actual!r}"
        return None


class GuardsShapesFirst(_Guards):
    # checks every argument's shape before anything else, so the "first" failure is another one
    def check(self, args):
        ordered = sorted(self.guards, key=lambda g: g[0] != "shape")
        for kind, i, expected in ordered:
            v = None if i is None else args[i]
            if kind == "shape" and not isinstance(v, cl.Tensor):
                return f"type of argument {i}: expected 'Tensor', got {type(v).__name__!r}"
            actual = _value(kind, v)
            if actual != expected:
                what = kind if i is None else f"{kind} of argument {i}"
                return f"{what}: expected {expected!r}, got {actual!r}"
        return None


class GuardsTypeName(_Guards):
    # the type guard holds type(v).__name__ for tensors too: an nn.Parameter is "Parameter", not "Tensor"
    def __init__(self, args):
        super().__init__(args)
        self.guards = [(k, i, type(args[i]).__name__) if k == "type" else (k, i, e) for k, i, e in self.guards]

    def check(self, args):
        for kind, i, expected in self.guards:
            v = None if i is None else args[i]
            actual = type(v).__name__ if kind == "type" else _value(kind, v)
            if actual != expected:
                what = kind if i is None else f"{kind} of argument {i}"
                return f"{what}: expected {expected!r}, got {actual!r}"
        return None


class GuardsNoDevice(_Guards):
    # no device guard: a meta tensor passes for a cpu one
    kinds_tensor = ("type", "dtype", "shape", "requires_grad")


# ------------------------------------------------------------------ 08.6 min_cut_saved
def _network(nodes, *, split=True, weight=lambda n: n["weight"], ban=True):
    import networkx as nx

    g = nx.DiGraph()
    for node in nodes:
        name = node["name"]
        if node["backward"]:
            g.add_edge(name + "_in" if split else name, "sink", capacity=math.inf)
            continue
        w = math.inf if node["weight"] is None else weight(node)
        if split:
            g.add_edge(name + "_in", name + "_out", capacity=w)
            if ban and node["banned"]:
                g.add_edge("source", name + "_in", capacity=math.inf)
            for user in node["users"]:
                g.add_edge(name + "_out", user + "_in", capacity=math.inf)
        else:
            if ban and node["banned"]:
                g.add_edge("source", name, capacity=math.inf)
            for user in node["users"]:
                g.add_edge(name, user, capacity=w)
    return g


def _cut_nodes(nodes, g):
    import networkx as nx

    _, (reachable, non_reachable) = nx.minimum_cut(g, "source", "sink")
    return [n["name"] for n in nodes if n["name"] + "_in" in reachable and n["name"] + "_out" in non_reachable]


def min_cut_unit_weights(nodes):
    # every value costs the same: the cut minimises how many values are saved, not their bytes
    return _cut_nodes(nodes, _network(nodes, weight=lambda n: 1))


def min_cut_unsplit(nodes):
    # one vertex per value, its weight on each outgoing edge: a value read twice costs twice
    import networkx as nx

    g = _network(nodes, split=False)
    _, (reachable, non_reachable) = nx.minimum_cut(g, "source", "sink")
    names = {n["name"] for n in nodes}
    return [n["name"] for n in nodes if n["name"] in reachable and n["name"] in names
            and any(u in non_reachable for u in n["users"])]


def min_cut_no_bans(nodes):
    # forgets the source edges: nothing is tied to the source, so nothing is saved
    import networkx as nx

    g = _network(nodes, ban=False)
    g.add_node("source")
    _, (reachable, non_reachable) = nx.minimum_cut(g, "source", "sink")
    return [n["name"] for n in nodes if n["name"] + "_in" in reachable and n["name"] + "_out" in non_reachable]


def min_cut_sorted(nodes):
    # the right cut, returned in alphabetical order instead of graph order
    return sorted(_cut_nodes(nodes, _network(nodes)))


def min_cut_sink_side(nodes):
    # reads the cut the wrong way round: the _in vertex on the sink side
    import networkx as nx

    _, (reachable, non_reachable) = nx.minimum_cut(_network(nodes), "source", "sink")
    return [n["name"] for n in nodes if not n["backward"] and n["name"] + "_out" in reachable
            and any(u + "_in" in non_reachable for u in n["users"])]


# ------------------------------------------------------------------ 08.7 fusion_groups
def _schedule(nodes, *, hoist=True, respect_shape=True, fuse_across=False, hoisted_after=False,
              reads_group=lambda node, group, done: any(name in group for name in node["inputs"])):
    steps, hoisted = [], []
    group, shape = None, None

    def close():
        nonlocal group
        if not hoisted_after:
            steps.extend(hoisted)
        if group is not None:
            steps.append(group)
        if hoisted_after:
            steps.extend(hoisted)
        hoisted.clear()
        group = None

    done: set = set()
    for node in nodes:
        if node["kind"] == "input":
            continue
        done.add(node["name"])
        if node["kind"] == "pointwise":
            if group is None or (respect_shape and shape != node["shape"]):
                close()
                group, shape = [], node["shape"]
            group.append(node["name"])
        elif fuse_across and group is not None:
            hoisted.append([node["name"]])   # runs "before" the group it reads: a cycle
        elif hoist and group is not None and not reads_group(node, group, done - {node["name"]}):
            hoisted.append([node["name"]])
        else:
            close()
            steps.append([node["name"]])
    close()
    return steps


def fusion_never_hoists(nodes):
    # every extern op closes the open group, even one that reads nothing from it
    return _schedule(nodes, hoist=False)


def fusion_ignores_shape(nodes):
    # pointwise ops of different shapes share a loop
    return _schedule(nodes, respect_shape=False)


def fusion_across_reductions(nodes):
    # a reduction that reads the group does not close it: the ops after it join the group before it
    return _schedule(nodes, fuse_across=True)


def fusion_first_input_only(nodes):
    # looks only at the first input: mm(w, abs) does not close the group abs is in
    return _schedule(nodes, reads_group=lambda node, group, done: node["inputs"][0] in group)


def fusion_reads_any_computed(nodes):
    # closes the group whenever the op reads a computed value, even one of a group already closed
    return _schedule(nodes, reads_group=lambda node, group, done: any(name in done for name in node["inputs"]))


def fusion_hoisted_after(nodes):
    # the hoisted ops are put after the group instead of before it
    return _schedule(nodes, hoisted_after=True)


# ------------------------------------------------------------------ 08.8 kernel_source
_EXPR = {"add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "div": "{} / {}", "neg": "-{}", "abs": "abs({})",
         "exp": "math.exp({})", "tanh": "math.tanh({})", "sin": "math.sin({})", "maximum": "max({}, {})"}


def _kernel(name, inputs, ops, outputs, n, *, stop=None, store_all=False, params=None, loop=True):
    ps = params(inputs, outputs) if params else list(inputs) + [f"out_{o}" for o in outputs]
    lines = [f"def {name}({', '.join(ps)}):", f"    for i in range({stop if stop is not None else n}):"]
    local = {x: f"{x}[i]" for x in inputs}
    for value, op, args in ops:
        operands = [local[a] if isinstance(a, str) else repr(float(a)) for a in args]
        lines.append(f"        {value} = {_EXPR[op].format(*operands)}")
        local[value] = value
        if value in outputs:
            lines.append(f"        out_{value}[i] = {value}")
        elif store_all and inputs:
            lines.append(f"        {inputs[0]}[i] = {value}")
    return "\n".join(lines) + "\n"


def kernel_off_by_one(name, inputs, ops, outputs, n):
    # range(n - 1): the last element is never computed
    return _kernel(name, inputs, ops, outputs, n, stop=n - 1)


def kernel_outputs_first(name, inputs, ops, outputs, n):
    # the out_ parameters before the inputs
    return _kernel(name, inputs, ops, outputs, n, params=lambda i, o: [f"out_{x}" for x in o] + list(i))


def kernel_writes_back_into_input(name, inputs, ops, outputs, n):
    # keeps each intermediate by writing it into the first input array (which a later op may read again)
    return _kernel(name, inputs, ops, outputs, n, store_all=True)


def kernel_without_loop(name, inputs, ops, outputs, n):
    # no loop: numpy-style whole-array arithmetic, which is not a kernel
    lines = [f"def {name}({', '.join(list(inputs) + [f'out_{o}' for o in outputs])}):", "    import numpy as np"]
    numpy_expr = {**_EXPR, "exp": "np.exp({})", "tanh": "np.tanh({})", "sin": "np.sin({})", "abs": "np.abs({})",
                  "maximum": "np.maximum({}, {})"}
    for value, op, args in ops:
        operands = [a if isinstance(a, str) else repr(float(a)) for a in args]
        lines.append(f"    {value} = {numpy_expr[op].format(*operands)}")
        if value in outputs:
            lines.append(f"    out_{value}[:] = {value}")
    return "\n".join(lines) + "\n"


def kernel_numpy_with_dummy_loop(name, inputs, ops, outputs, n):
    # whole-array numpy, one pass per op, with an empty loop to look like a kernel
    source = kernel_without_loop(name, inputs, ops, outputs, n)
    return source.replace("    import numpy as np\n", "    import numpy as np\n    for i in range(1):\n        pass\n")


def kernel_loop_per_op(name, inputs, ops, outputs, n):
    # one loop per op, each building a list: a pass over memory per op, not a fused kernel
    lines = [f"def {name}({', '.join(list(inputs) + [f'out_{o}' for o in outputs])}):"]
    for value, op, args in ops:
        operands = [f"{a}[i]" if isinstance(a, str) else repr(float(a)) for a in args]
        lines += [f"    {value} = []", f"    for i in range({n}):",
                  f"        {value}.append({_EXPR[op].format(*operands)})"]
    lines.append(f"    for i in range({n}):")
    lines += [f"        out_{o}[i] = {o}[i]" for o in outputs]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ 08.9 make_dot
def _make_dot_variant(var, params=None, *, edge_once=False, use_names=True, with_base=True, dedupe=True,
                      leaf_edge_reversed=False, size_text=None, base_once=True):
    from course_lib.viz.graph import Digraph
    names = {id(t): name for name, t in (params or {}).items()} if use_names else {}
    dot = Digraph()
    seen = set()

    def label(t):
        sizes = size_text(t) if size_text else ", ".join(str(n) for n in t.shape)
        return f"{names.get(id(t), '')}\n ({sizes})"

    def add_nodes(fn):
        seen.add(id(fn))
        if hasattr(fn, "variable"):
            leaf = fn.variable
            seen.add(id(leaf))
            dot.node(str(id(leaf)), label(leaf), fillcolor="lightblue")
            if leaf_edge_reversed:
                dot.edge(str(id(fn)), str(id(leaf)))
            else:
                dot.edge(str(id(leaf)), str(id(fn)))
        dot.node(str(id(fn)), type(fn).__name__)
        for u, _ in fn.next_functions:
            if u is None:
                continue
            new = id(u) not in seen or not dedupe
            if new or not edge_once:
                dot.edge(str(id(u)), str(id(fn)))
            if new:
                add_nodes(u)

    def add_tensor(t, color):
        if base_once and id(t) in seen:
            return
        seen.add(id(t))
        dot.node(str(id(t)), label(t), fillcolor=color)
        if t.grad_fn is not None:
            if id(t.grad_fn) not in seen:
                add_nodes(t.grad_fn)
            dot.edge(str(id(t.grad_fn)), str(id(t)))
        if with_base and t._base is not None:
            add_tensor(t._base, "darkolivegreen3")
            dot.edge(str(id(t._base)), str(id(t)), style="dotted")

    add_tensor(var, "darkolivegreen1")
    return dot


def make_dot_edge_once(var, params=None):
    # one arrow per node only: a node that two others use (a residual, a layer used twice) loses an arrow
    return _make_dot_variant(var, params, edge_once=True)


def make_dot_no_names(var, params=None):
    # ignores params: every leaf is labelled with its shape only
    return _make_dot_variant(var, params, use_names=False)


def make_dot_no_base(var, params=None):
    # a view's base is left out (no darkolivegreen3 node, no dotted arrow)
    return _make_dot_variant(var, params, with_base=False)


def make_dot_walks_twice(var, params=None):
    # no set of walked nodes: a shared node and everything below it is added again
    return _make_dot_variant(var, params, dedupe=False)


def make_dot_leaf_edge_reversed(var, params=None):
    # the arrow between a leaf and its AccumulateGrad points the wrong way
    return _make_dot_variant(var, params, leaf_edge_reversed=True)


def make_dot_tuple_sizes(var, params=None):
    # sizes written as a Python tuple: '(4,)' for a bias, '()' as '()' but '(2, 3)' right
    return _make_dot_variant(var, params, size_text=lambda t: str(tuple(t.shape))[1:-1])


def make_dot_base_added_again(var, params=None):
    # a view's base is added even when it is already in the graph: w[:, 0] of a parameter w draws w twice
    return _make_dot_variant(var, params, base_once=False)


def make_dot_library(var, params=None):
    # right graph, from course_lib's own make_dot, which the task forbids
    from course_lib.viz import make_dot
    return make_dot(var, params)


WRONG = {
    "08.1": [RecorderDropsConstants, RecorderInputsOnFirstUse, RecorderSingleOutput, RecorderReturnsNone,
             RecorderListsAsTuples, RecorderSubclassesLibrary, RecorderEntersLibraryMode],
    "08.2": [tabular_no_margin, tabular_trailing_spaces, tabular_one_space, tabular_repr_target],
    "08.3": [dce_forward_walk, dce_drops_inplace, dce_drops_unused_inputs, dce_drops_print, dce_counts_nothing,
             dce_keeps_random_off, dce_from_partitioner],
    "08.4": [split_inputs_sorted, split_outputs_in_node_order, split_outputs_everything,
             split_break_starts_next_graph, split_outputs_for_next_graph_only],
    "08.5": [GuardsNoGradMode, GuardsValueWithoutType, GuardsShapeAsList, GuardsShapesFirst, GuardsNoDevice,
             GuardsTypeName],
    "08.6": [min_cut_unit_weights, min_cut_unsplit, min_cut_no_bans, min_cut_sink_side, min_cut_sorted],
    "08.7": [fusion_never_hoists, fusion_ignores_shape, fusion_across_reductions, fusion_hoisted_after,
             fusion_first_input_only, fusion_reads_any_computed],
    "08.8": [kernel_off_by_one, kernel_outputs_first, kernel_writes_back_into_input, kernel_without_loop,
             kernel_numpy_with_dummy_loop, kernel_loop_per_op],
    "08.9": [make_dot_edge_once, make_dot_no_names, make_dot_no_base, make_dot_walks_twice, make_dot_leaf_edge_reversed,
             make_dot_tuple_sizes, make_dot_library, make_dot_base_added_again],
}
