"""Checks for chapter 08 (compile).

Programs, graphs and joint graphs are sent to the kernel as plain data (specs) and built there by
the probes, the same way in both processes. Expected values come from course_lib, run in the
grader: its recording mode (``ProxyTorchDispatchMode``, 08.1), its table layout
(``fx.graph._tabulate_simple``, 08.2), ``Graph.eliminate_dead_code`` (08.3), its min-cut
partitioner (``solve_min_cut`` on the network ``build_flow_network`` makes, 08.6) and eager
course_lib ops (08.8), ``course_lib.viz.make_dot`` (08.9, its nodes and edges with object ids replaced by
what they stand for); or from how the inputs were built (08.5: the guards of the argument specs
and the first one a variant changes). Two references are written out here: ``_split_reference``
(08.4, the rule the task states; the toy_example cases compare with literals from PyTorch's
graphs) and ``_schedule_reference`` (08.7: the pointwise-only rule of the first version of
``schedule`` in ``course_lib/_inductor/scheduler.py``, before reductions joined groups as row
kernels; it was compared with that version on 2000 random programs of ``_random_fusion_program``).
"""
from __future__ import annotations

import ast
import contextlib
import math
import operator
import re
import sys

import numpy as np

import course_lib as cl
from course.checks import call, exercise, probe
from course_lib import fx
from course_lib._ops.registry import OPS, OpDef
from course_lib.fx import graph as fx_graph
from course_lib.fx.experimental import proxy_tensor
from course_lib.fx.passes import dce
from course_lib.viz import make_dot as _viz_make_dot

# ------------------------------------------------------------------ random programs (08.1, 08.2, 08.6)
_UNARY = ("abs", "exp", "neg", "tanh", "sin", "cos")
_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}


def _random_program(rng, n_inputs: int, n_steps: int, *, reductions: bool = True) -> dict:
    """A random straight-line program over `n_inputs` tensors: steps, outputs and a seed for the inputs."""
    steps: list = []
    n_values = n_inputs
    for _ in range(n_steps):
        pick = int(rng.integers(0, n_values))
        other = int(rng.integers(0, n_values))
        roll = rng.random()
        if roll < 0.35:
            steps.append(["unary", _UNARY[int(rng.integers(0, len(_UNARY)))], [pick]])
        elif roll < 0.65:
            steps.append(["binary", list(_BINARY)[int(rng.integers(0, 3))], [pick, other]])
        elif roll < 0.85 or not reductions:
            steps.append(["scalar", list(_BINARY)[int(rng.integers(0, 3))],
                          [pick, float(np.round(rng.uniform(-2, 2), 2))]])
        else:
            steps.append(["reduce", "sum" if rng.random() < 0.6 else "mean", [pick]])
        n_values += 1
    outputs = [n_values - 1]
    if rng.random() < 0.5:
        outputs.append(int(rng.integers(0, n_values - 1)))
    names = ["x", "y", "z", "w"][:n_inputs]
    return {"inputs": names, "steps": steps, "outputs": outputs, "seed": int(rng.integers(0, 2**31))}


def _program_inputs(spec: dict, requires_grad: bool = False) -> list:
    r = np.random.default_rng(spec["seed"])
    return [cl.from_numpy(r.standard_normal((3, 4)).astype(np.float32)).requires_grad_(requires_grad)
            for _ in spec["inputs"]]


def _run_program(spec: dict, inputs: list) -> tuple:
    """Run the program's steps on `inputs` (tensors, or proxies when traced); returns its outputs."""
    vals = list(inputs)
    for kind, op, refs in spec["steps"]:
        if kind == "unary":
            vals.append(getattr(vals[refs[0]], op)())
        elif kind == "binary":
            vals.append(_BINARY[op](vals[refs[0]], vals[refs[1]]))
        elif kind == "scalar":
            vals.append(_BINARY[op](vals[refs[0]], refs[1]))
        elif kind == "stack":   # a list of tensors as an argument: stack([a, b]) (and sum(0) back to the shape)
            vals.append(cl.stack([vals[r] for r in refs]).sum(0))
        else:
            vals.append(getattr(vals[refs[0]], op)())
    return tuple(vals[i] for i in spec["outputs"])


def _describe_graph(graph) -> list:
    """A graph as data: (opcode, name, target, args, kwargs) per node, registry ops as ``aten.<name>``."""
    out = []
    for n in graph.nodes:
        target = f"aten.{n.target.name}" if isinstance(n.target, OpDef) else str(n.target)
        out.append((n.op, n.name, target, str(n.args), str(n.kwargs)))
    return out


def _library_recording(spec: dict):
    """The graph course_lib's own recording mode makes of the program (placeholders named as the inputs)."""
    graph = fx.Graph()
    mode = proxy_tensor.ProxyTorchDispatchMode(graph, cl.nn.Module())
    tensors = _program_inputs(spec)
    for name, t in zip(spec["inputs"], tensors):
        mode.track(t, graph.placeholder(name))
    with mode:
        outs = _run_program(spec, tensors)
    graph.output(tuple(mode.node_of(o) for o in outs))
    return graph


def _program_text(spec: dict) -> str:
    names = list(spec["inputs"])
    lines = []
    for k, (kind, op, refs) in enumerate(spec["steps"]):
        v = f"v{k}"
        if kind == "unary":
            lines.append(f"{v} = {names[refs[0]]}.{op}()")
        elif kind == "binary":
            lines.append(f"{v} = {names[refs[0]]} {_SYMBOL[op]} {names[refs[1]]}")
        elif kind == "scalar":
            lines.append(f"{v} = {names[refs[0]]} {_SYMBOL[op]} {refs[1]}")
        elif kind == "stack":
            lines.append(f"{v} = stack([{', '.join(names[r] for r in refs)}]).sum(0)")
        else:
            lines.append(f"{v} = {names[refs[0]]}.{op}()")
        names.append(v)
    return "; ".join(lines) + f"; return {', '.join(names[i] for i in spec['outputs'])}"


_SYMBOL = {"add": "+", "sub": "-", "mul": "*"}


@contextlib.contextmanager
def _library_code_runs(functions: dict):
    """Yield a list that records which of `functions` (name -> function) run while active, whoever calls them.

    ``forbid=`` only sees calls made from the learner's own code; this also sees a library method a
    learner's class inherits or a library mode it enters, which course_lib's dispatcher calls. It
    chains to the profile function already set (the one ``forbid=`` installs).
    """
    codes = {getattr(fn, "__func__", fn).__code__: name for name, fn in functions.items()}
    seen: list = []
    outer = sys.getprofile()

    def watch(frame, event, arg):
        if event == "call":
            name = codes.get(frame.f_code)
            if name is not None and name not in seen:
                seen.append(name)
        if outer is not None:
            outer(frame, event, arg)

    sys.setprofile(watch)
    try:
        yield seen
    finally:
        sys.setprofile(outer)


# ------------------------------------------------------------------ 08.1 GraphRecorder


def _record_run(GraphRecorder, spec: dict) -> dict:
    """Probe: record the program with the learner's mode; its graph as data, and whether values are eager's."""
    tensors = _program_inputs(spec)
    with _library_code_runs(_RECORDER_CODE) as library:
        rec = GraphRecorder()
        for name, t in zip(spec["inputs"], tensors):
            rec.add_input(t, name)
        with rec:
            outs = _run_program(spec, tensors)
        graph = rec.finish(outs)
    eager = _run_program(spec, tensors)
    same = [isinstance(o, cl.Tensor) and bool(np.allclose(o.numpy(), e.numpy(), equal_nan=True))
            for o, e in zip(outs, eager)]
    return {"nodes": _describe_graph(graph), "values equal eager": same,
            "course_lib recorder code that ran": library}


_PTDM = proxy_tensor.ProxyTorchDispatchMode
# a subclass of the library's mode, or the library's mode entered for the learner's, runs these
_RECORDER_CODE = {"ProxyTorchDispatchMode.__torch_dispatch__": _PTDM.__torch_dispatch__,
                  "ProxyTorchDispatchMode.node_of": _PTDM.node_of, "ProxyTorchDispatchMode.track": _PTDM.track}


@exercise("08.1", title="GraphRecorder", points=2,
          hint="__torch_dispatch__: out = func(*args); node = self.graph.call_function(func, tuple(self.arg(a) "
               "for a in args)); self.node_of[id(out)] = node (and keep out alive); return out. finish: "
               "self.graph.output(tuple(self.arg(t) for t in outputs)).",
          forbid={"make_fx": proxy_tensor.make_fx,
                  "ProxyTorchDispatchMode.__torch_dispatch__": _PTDM.__torch_dispatch__,
                  "ProxyTorchDispatchMode.node_of": _PTDM.node_of, "ProxyTorchDispatchMode.track": _PTDM.track})
def _graph_recorder(rng):
    toy = {"inputs": ["a", "b"], "steps": [["unary", "abs", [0]], ["scalar", "add", [2, 1.0]],
                                            ["binary", "mul", [0, 3]], ["reduce", "sum", [1]],
                                            ["scalar", "mul", [1, -1.0]]],
           "outputs": [4, 5], "seed": 1}
    reversed_use = {"inputs": ["x", "y", "z"], "steps": [["binary", "mul", [2, 1]], ["unary", "exp", [3]],
                                                          ["binary", "add", [4, 4]]],
                    "outputs": [5, 0], "seed": 2}
    # stack([x, y]): an op whose argument is a list of tensors (mapped element by element, still a list)
    listed = {"inputs": ["x", "y"], "steps": [["unary", "exp", [0]], ["stack", "stack", [2, 1]],
                                               ["binary", "mul", [3, 0]]],
              "outputs": [4], "seed": 3}
    specs = [toy, reversed_use, listed] + [_random_program(rng, int(rng.integers(1, 4)), int(rng.integers(3, 9)))
                                   for _ in range(4)]
    out = []
    for spec in specs:
        expected = {"nodes": _describe_graph(_library_recording(spec)),
                    "values equal eager": [True] * len(spec["outputs"]), "course_lib recorder code that ran": []}
        out.append(probe(_record_run, spec, expected=expected,
                         label=f"record: def f({', '.join(spec['inputs'])}): {_program_text(spec)}"))
    return out


# ------------------------------------------------------------------ 08.2 tabular
_HEADERS = ["opcode", "name", "target", "args", "kwargs"]


def _traced_graph(spec: dict):
    """The program as a graph: recorded at the dispatcher ("make_fx") or traced with proxies ("symbolic")."""
    if spec["how"] == "make_fx":
        return _library_recording(spec)
    n = len(spec["inputs"])
    fns = {1: lambda x: _run_program(spec, [x]), 2: lambda x, y: _run_program(spec, [x, y]),
           3: lambda x, y, z: _run_program(spec, [x, y, z])}
    return fx.symbolic_trace(fns[n]).graph


def _tabular_run(tabular, spec: dict):
    """Probe: the learner's table of the spec's graph."""
    return tabular(_traced_graph(spec))


def _library_table(spec: dict) -> str:
    rows = [list(row) for row in _describe_graph(_traced_graph(spec))]
    return fx_graph._tabulate_simple(rows, _HEADERS)


def _forbid_tabular() -> dict:
    forbid = {"Graph.print_tabular": fx.Graph.print_tabular, "_tabulate_simple": fx_graph._tabulate_simple}
    try:
        import tabulate
        forbid["tabulate"] = tabulate.tabulate
    except ImportError:
        pass
    return forbid


@exercise("08.2", title="tabular", points=1,
          hint="width of column j = max(len(header) + 2, longest cell); each line is the cells ljust-ed to their "
               "widths, joined by two spaces, then rstrip()-ed; the second line is dashes as wide as each column.",
          forbid=_forbid_tabular())
def _tabular(rng):
    specs = []
    for k in range(6):
        spec = _random_program(rng, int(rng.integers(1, 4)), int(rng.integers(2, 7)))
        spec["how"] = "make_fx" if k % 2 == 0 else "symbolic"
        specs.append(spec)
    out = []
    for spec in specs:
        out.append(probe(_tabular_run, spec, expected=_library_table(spec),
                         label=f"tabular of the graph ({spec['how']}) of: {_program_text(spec)}"))
    return out


# ------------------------------------------------------------------ 08.3 eliminate_dead_code
_DCE_PURE = ("add", "mul", "exp", "neg", "sum", "abs")
_DCE_INPLACE = ("add_", "mul_")
_DCE_RANDOM = ("rand_like", "randn_like", "bernoulli")


def _random_dce_graph(rng) -> dict:
    n_inputs = int(rng.integers(1, 4))
    nodes = []
    n_values = n_inputs
    for _ in range(int(rng.integers(4, 11))):
        roll = rng.random()
        a, b = int(rng.integers(0, n_values)), int(rng.integers(0, n_values))
        if roll < 0.12:
            nodes.append(["print", [a]])
        elif roll < 0.27:
            nodes.append([_DCE_INPLACE[int(rng.integers(0, 2))], [a, b]])
        elif roll < 0.37:
            nodes.append([_DCE_RANDOM[int(rng.integers(0, len(_DCE_RANDOM)))], [a]])
        else:
            op = _DCE_PURE[int(rng.integers(0, len(_DCE_PURE)))]
            nodes.append([op, [a, b] if op in ("add", "mul") else [a]])
        n_values += 1
    outputs = sorted({int(rng.integers(n_inputs, n_values)) for _ in range(int(rng.integers(1, 3)))})
    return {"inputs": ["x", "y", "z"][:n_inputs], "nodes": nodes, "outputs": outputs}


def _build_dce_graph(spec: dict):
    graph = fx.Graph()
    vals = [graph.placeholder(name) for name in spec["inputs"]]
    for target, refs in spec["nodes"]:
        fn = print if target == "print" else OPS[target]
        vals.append(graph.call_function(fn, tuple(vals[r] for r in refs)))
    graph.output(tuple(vals[i] for i in spec["outputs"]))
    return graph


def _remaining(graph) -> list:
    return [(n.name, len(n.users)) for n in graph.nodes]


def _dce_run(eliminate_dead_code, spec: dict) -> dict:
    """Probe: run the learner's DCE on the spec's graph; what is left (names, user counts) and the count."""
    graph = _build_dce_graph(spec)
    with _library_code_runs(_DCE_CODE) as library:
        removed = eliminate_dead_code(graph)
    return {"left (name, users)": _remaining(graph), "returned": removed, "course_lib DCE code that ran": library}


# course_lib functions that call these (a partitioner's graph extraction, constant folding) do the exercise
_DCE_CODE = {"Graph.eliminate_dead_code": fx.Graph.eliminate_dead_code, "Node.is_impure": fx.Node.is_impure,
             "dead_code_elimination": dce.dead_code_elimination}


def _dce_text(spec: dict) -> str:
    names = list(spec["inputs"])
    parts = []
    for k, (target, refs) in enumerate(spec["nodes"]):
        parts.append(f"n{k} = {target}({', '.join(names[r] for r in refs)})")
        names.append(f"n{k}")
    return "; ".join(parts) + f"; output ({', '.join(names[i] for i in spec['outputs'])})"


@exercise("08.3", title="eliminate_dead_code", points=2,
          hint="walk reversed(graph.nodes); erase a node (graph.erase_node) when it has no users and is not impure "
               "(placeholder, output, print, a registry op whose name ends in one '_', a random op). Count them.",
          forbid={"Graph.eliminate_dead_code": fx.Graph.eliminate_dead_code, "Node.is_impure": fx.Node.is_impure,
                  "dead_code_elimination": dce.dead_code_elimination})
def _eliminate_dead_code(rng):
    chain = {"inputs": ["x", "y"], "nodes": [["exp", [0]], ["neg", [2]], ["abs", [3]], ["add", [0, 1]]],
             "outputs": [5]}
    effects = {"inputs": ["x", "y", "z"], "nodes": [["mul", [0, 1]], ["add_", [3, 1]], ["print", [3]],
                                                   ["exp", [0]], ["sum", [6]]],
               "outputs": [3]}
    # random ops advance the generator: an unused rand_like stays, and so does what it reads
    random = {"inputs": ["x"], "nodes": [["exp", [0]], ["rand_like", [1]], ["neg", [0]], ["bernoulli", [3]],
                                        ["abs", [0]]],
              "outputs": [5]}
    specs = [chain, effects, random] + [_random_dce_graph(rng) for _ in range(6)]
    out = []
    for spec in specs:
        graph = _build_dce_graph(spec)
        before = len(graph.nodes)
        graph.eliminate_dead_code()
        expected = {"left (name, users)": _remaining(graph), "returned": before - len(graph.nodes),
                    "course_lib DCE code that ran": []}
        out.append(probe(_dce_run, spec, expected=expected, label=f"eliminate_dead_code: {_dce_text(spec)}"))
    return out


# ------------------------------------------------------------------ 08.4 split_at_breaks
_TOY_HEAD = [["abs_1", "abs", ["l_a_"]], ["add", "add", ["abs_1", 1]], ["x", "truediv", ["l_a_", "add"]],
             ["sum_1", "sum", ["l_b_"]], ["lt", "lt", ["sum_1", 0]]]


def _split_reference(program: dict, breaks: list) -> list:
    """The rule of exercise 08.4, on the program's data."""
    ops = program["ops"]
    at = {op[0]: k for k, op in enumerate(ops)}
    bounds = [0] + [at[b] + 1 for b in breaks] + [len(ops)]
    pieces = [ops[bounds[j]:bounds[j + 1]] for j in range(len(bounds) - 1)]
    graphs = []
    for j, piece in enumerate(pieces):
        made = {op[0] for op in piece}
        reads = [a for op in piece for a in op[2] if isinstance(a, str)]
        inputs = list(dict.fromkeys(a for a in reads if a not in made))
        if j == len(pieces) - 1:
            outputs = [program["output"]]
        else:
            later = {a for p in pieces[j + 1:] for op in p for a in op[2] if isinstance(a, str)}
            outputs = [breaks[j]] + [op[0] for op in piece if op[0] in later and op[0] != breaks[j]]
        graphs.append({"inputs": inputs, "ops": [list(op) for op in piece], "outputs": outputs})
    return graphs


_TARGETS = ("mul", "add", "sub", "exp", "neg", "sum", "lt", "abs")


def _random_break_program(rng) -> tuple[dict, list]:
    inputs = ["a", "b", "c"][:int(rng.integers(1, 4))]
    names = list(inputs)
    ops = []
    n_ops = int(rng.integers(5, 11))
    for k in range(n_ops):
        target = _TARGETS[int(rng.integers(0, len(_TARGETS)))]
        # read mostly recent values, sometimes old ones (the live values across a break)
        a = names[int(rng.integers(max(0, len(names) - 3), len(names)))]
        b = names[int(rng.integers(0, len(names)))]
        args = [a, b] if target in ("mul", "add", "sub") else [a, 0] if target == "lt" else [a]
        name = f"{target}_{k}"
        ops.append([name, target, args])
        names.append(name)
    n_breaks = int(rng.integers(1, 3))
    at = sorted({int(k) for k in rng.choice(np.arange(1, n_ops - 1), size=n_breaks, replace=False)})
    return {"inputs": inputs, "ops": ops, "output": ops[-1][0]}, [ops[k][0] for k in at]


@exercise("08.4", title="split_at_breaks", points=2,
          hint="graph j's ops end with break j; its inputs: names it reads but does not compute, first use first; "
               "its outputs: the break value, then the values it computes that later graphs read, in op order.")
def _split_at_breaks(rng):
    negative = {"inputs": ["l_a_", "l_b_"], "output": "mul_1",
                "ops": _TOY_HEAD + [["b", "mul", ["l_b_", -1]], ["mul_1", "mul", ["x", "b"]]]}
    positive = {"inputs": ["l_a_", "l_b_"], "output": "mul", "ops": _TOY_HEAD + [["mul", "mul", ["x", "l_b_"]]]}
    graph1 = {"inputs": ["l_a_", "l_b_"], "ops": _TOY_HEAD, "outputs": ["lt", "x"]}
    out = [
        call(negative, ["lt"], label="split_at_breaks(toy_example where b.sum() < 0, ['lt'])",
             expected=[graph1, {"inputs": ["l_b_", "x"], "ops": negative["ops"][5:], "outputs": ["mul_1"]}]),
        call(positive, ["lt"], label="split_at_breaks(toy_example where b.sum() >= 0, ['lt'])",
             expected=[graph1, {"inputs": ["x", "l_b_"], "ops": positive["ops"][5:], "outputs": ["mul"]}]),
    ]
    # two breaks; exp is computed by graph 1 and read only by graph 3, so graph 1 returns it too
    skip = {"inputs": ["a", "b"], "output": "out",
            "ops": [["exp", "exp", ["a"]], ["sum_1", "sum", ["a"]], ["lt", "lt", ["sum_1", 0]],
                    ["mul", "mul", ["b", "b"]], ["sum_2", "sum", ["mul"]], ["lt_1", "lt", ["sum_2", 0]],
                    ["out", "mul", ["exp", "mul"]]]}
    out.append(call(skip, ["lt", "lt_1"], expected=[
        {"inputs": ["a"], "ops": skip["ops"][:3], "outputs": ["lt", "exp"]},
        {"inputs": ["b"], "ops": skip["ops"][3:6], "outputs": ["lt_1", "mul"]},
        {"inputs": ["exp", "mul"], "ops": skip["ops"][6:], "outputs": ["out"]}]))
    for _ in range(5):
        program, breaks = _random_break_program(rng)
        out.append(call(program, breaks, expected=_split_reference(program, breaks)))
    return out


# ------------------------------------------------------------------ 08.5 Guards


def _make_arg(spec):
    """A constant, or a tensor ["tensor", shape, dtype, requires_grad, device] (a 6th item "parameter": an
    nn.Parameter, still a "Tensor" for the type guard)."""
    if spec[0] == "const":
        return spec[1]
    _, shape, dtype, requires_grad, device = spec[:5]
    t = cl.zeros(tuple(shape), dtype=getattr(cl, dtype), device=device)
    if spec[5:] == ["parameter"]:
        return cl.nn.Parameter(t, requires_grad=requires_grad)
    return t.requires_grad_() if requires_grad else t


def _guards_run(Guards, args_spec: list, grad_mode: bool, variants: list) -> dict:
    """Probe: build the learner's guards for the args, then check each variant (args, grad mode)."""
    with cl.set_grad_enabled(grad_mode):
        guards = Guards([_make_arg(s) for s in args_spec])
    reasons = []
    for v_args, v_grad in variants:
        with cl.set_grad_enabled(v_grad):
            reasons.append(guards.check([_make_arg(s) for s in v_args]))
    return {"guards": list(guards.guards), "check of each variant": reasons}


def _spec_guards(args_spec: list, grad_mode: bool) -> list:
    guards = [("grad_mode", None, grad_mode)]
    for i, s in enumerate(args_spec):
        if s[0] == "const":
            guards += [("type", i, type(s[1]).__name__), ("value", i, s[1])]
        else:
            _, shape, dtype, requires_grad, device = s[:5]
            guards += [("type", i, "Tensor"), ("dtype", i, dtype), ("device", i, device), ("shape", i, tuple(shape)),
                       ("requires_grad", i, requires_grad)]
    return guards


def _spec_failure(guards: list, v_args: list, v_grad: bool):
    """The first guard the variant (given as specs) breaks, as the task words it; None if none."""
    for kind, i, expected in guards:
        if kind == "grad_mode":
            actual = v_grad
        else:
            s = v_args[i]
            if s[0] == "const":
                actual = {"type": type(s[1]).__name__, "value": s[1]}[kind]
            else:
                _, shape, dtype, requires_grad, device = s[:5]
                actual = {"type": "Tensor", "dtype": dtype, "device": device, "shape": tuple(shape),
                          "requires_grad": requires_grad}[kind]
        if actual != expected:
            what = kind if i is None else f"{kind} of argument {i}"
            return f"{what}: expected {expected!r}, got {actual!r}"
    return None


def _tensor_spec(rng) -> list:
    shape = [int(n) for n in rng.integers(1, 6, size=int(rng.integers(1, 4)))]
    dtype = ["float32", "float64", "int64"][int(rng.integers(0, 3))]
    return ["tensor", shape, dtype, dtype != "int64" and bool(rng.random() < 0.4), "cpu"]


def _const_spec(rng) -> list:
    return ["const", _CONSTANTS[int(rng.integers(0, len(_CONSTANTS)))][0]]


_CONSTANTS = [(2, 2.0), (2.0, 3.0), (True, 1), ("mean", "sum"), (None, 0), (0.5, 0.25), (3, 4)]


def _changed_constant(v):
    """Another constant: of another type (2 -> 2.0, True -> 1, None -> 0) or another value."""
    return next((new for old, new in _CONSTANTS if type(old) is type(v) and old == v), "changed")


def _variants(rng, args_spec: list) -> list:
    """Each variant changes one or two things (or nothing)."""
    out = [(args_spec, True)]
    for _ in range(7):
        v = [list(s) for s in args_spec]
        grad = True
        for _ in range(int(rng.integers(1, 3))):
            i = int(rng.integers(0, len(v)))
            change = rng.random()
            if change < 0.1:
                grad = False
            elif v[i][0] == "const":
                v[i] = ["const", _changed_constant(v[i][1])] if change < 0.7 else _tensor_spec(rng)
            elif change < 0.35:
                v[i][1] = v[i][1][:-1] + [v[i][1][-1] + 1]
            elif change < 0.5:
                v[i][1] = v[i][1] + [1]
            elif change < 0.65:
                v[i][2] = {"float32": "float64", "float64": "float32", "int64": "float32"}[v[i][2]]
                v[i][3] = False
            elif change < 0.75 and v[i][2] != "int64":
                v[i][3] = not v[i][3]
            elif change < 0.85:
                v[i][4] = "meta"
            else:
                v[i] = _const_spec(rng)
        out.append((v, grad))
    return out


@exercise("08.5", title="Guards", points=2,
          hint="__init__: the grad-mode guard, then per argument ('type', i, ...) and either dtype, device, shape "
               "(a tuple), requires_grad, or value. check: for each guard in order, compute the actual value "
               "(type before anything else) and return the reason at the first difference; None at the end.")
def _guards(rng):
    fixed = [["tensor", [10], "float32", False, "cpu"], ["const", 2.0]]
    fixed_variants = [(fixed, True), (fixed, False),
                      ([["tensor", [12], "float32", False, "cpu"], ["const", 2.0]], True),
                      ([["tensor", [10], "float32", False, "cpu"], ["const", 2]], True),
                      ([["tensor", [10], "float64", False, "cpu"], ["const", 3.0]], True),
                      ([["tensor", [10], "float32", True, "cpu"], ["const", 2.0]], True),
                      ([["tensor", [10], "float32", False, "meta"], ["const", 2.0]], True),
                      ([["const", 1.0], ["tensor", [10], "float32", False, "cpu"]], True)]
    # an nn.Parameter is a Tensor too: a plain tensor like it passes every guard
    param = [["tensor", [3, 2], "float32", True, "cpu", "parameter"], ["const", "mean"]]
    param_variants = [(param, True), ([["tensor", [3, 2], "float32", True, "cpu"], ["const", "mean"]], True),
                      ([["tensor", [3, 2], "float32", False, "cpu", "parameter"], ["const", "mean"]], True)]
    cases = [(fixed, True, fixed_variants), (param, True, param_variants)]
    for _ in range(4):
        args_spec = [_tensor_spec(rng) if rng.random() < 0.6 else _const_spec(rng)
                     for _ in range(int(rng.integers(1, 4)))]
        cases.append((args_spec, bool(rng.random() < 0.8), _variants(rng, args_spec)))
    out = []
    for args_spec, grad, variants in cases:
        guards = _spec_guards(args_spec, grad)
        expected = {"guards": guards, "check of each variant": [_spec_failure(guards, a, g) for a, g in variants]}
        out.append(probe(_guards_run, args_spec, grad, variants, expected=expected,
                         label=f"Guards({_args_text(args_spec)}) with grad mode {grad}, then check "
                               f"{len(variants)} variants"))
    return out


def _args_text(args_spec: list) -> str:
    parts = []
    for s in args_spec:
        if s[0] == "const":
            parts.append(repr(s[1]))
        else:
            _, shape, dtype, requires_grad, device = s[:5]
            extra = ((", requires_grad=True" if requires_grad else "")
                     + (f", device={device!r}" if device != "cpu" else ""))
            text = f"zeros({tuple(shape)}, dtype={dtype}{extra})"
            parts.append(f"Parameter({text})" if s[5:] == ["parameter"] else text)
    return "[" + ", ".join(parts) + "]"


# ------------------------------------------------------------------ 08.6 min_cut_saved


def _seed_div(a, b):
    return a / (cl.abs(a) + 1) * b


def _seed_coscos(x):
    return x.cos().cos()


def _joint_nodes(fn, args: list) -> tuple[list, list]:
    """The joint graph of fn as the exercise's node dicts, and the values course_lib's min-cut saves."""
    import copy

    from course_lib._functorch import partitioners as P
    from course_lib._functorch.aot_autograd import trace_joint
    from course_lib.fx.passes import common_subexpression_elimination

    joint = trace_joint(fn, *args)
    jm = fx.GraphModule(joint.module, copy.deepcopy(joint.module.graph))
    jm.graph.eliminate_dead_code()
    common_subexpression_elimination(jm)
    info = P.classify_nodes(jm, num_fwd_outputs=joint.num_fwd_outputs)
    network, banned = P.build_flow_network(jm.graph, info)
    nodes = []
    for n in jm.graph.nodes:
        if n.op == "output":
            continue
        backward = n in info.tangents_closure
        if n in info.required_bw_nodes and not backward:
            raise AssertionError(f"{n}: a gradient output that needs no tangent (not a case of this exercise)")
        weight = None
        if not backward:
            cap = network[n.name + "_in"][n.name + "_out"]["capacity"]
            weight = None if cap == math.inf else int(cap)
        nodes.append({"name": n.name, "users": [u.name for u in n.users if u.op != "output"], "weight": weight,
                      "banned": n in banned, "backward": backward})
    saved, _ = P.solve_min_cut(jm.graph, info)
    return nodes, [n.name for n in saved]


def _mincut_forbid() -> dict:
    from course_lib._functorch import partitioners as P
    return {"solve_min_cut": P.solve_min_cut, "build_flow_network": P.build_flow_network,
            "min_cut_rematerialization_partition": P.min_cut_rematerialization_partition}


@exercise("08.6", title="min_cut_saved", points=2,
          hint="backward node: name_in -> 'sink'. Other nodes: name_in -> name_out with the weight (math.inf for "
               "None), name_out -> user_in for each user, and 'source' -> name_in if banned. Then "
               "_, (reachable, non_reachable) = nx.minimum_cut(g, 'source', 'sink').",
          forbid=_mincut_forbid())
def _min_cut_saved(rng):
    cases = [("a / (|a| + 1) * b", _seed_div, 2, ["primals_1", "primals_2"]),
             ("cos(cos(x))", _seed_coscos, 1, ["primals_1"])]
    for _ in range(4):
        spec = _random_program(rng, int(rng.integers(1, 3)), int(rng.integers(3, 8)))
        spec["outputs"] = spec["outputs"][:1]
        cases.append((_program_text(spec), lambda *xs, spec=spec: _run_program(spec, list(xs))[0],
                      len(spec["inputs"]), None))
    # x read by two ops: saving x costs 100 once, though both of its edges cross the cut
    shared = [{"name": "x", "users": ["y1", "y2"], "weight": 100, "banned": True, "backward": False},
              {"name": "y1", "users": ["z"], "weight": 120, "banned": False, "backward": False},
              {"name": "y2", "users": ["z"], "weight": 120, "banned": False, "backward": False},
              {"name": "z", "users": ["g"], "weight": 150, "banned": False, "backward": False},
              {"name": "t", "users": ["g"], "weight": None, "banned": False, "backward": True},
              {"name": "g", "users": [], "weight": None, "banned": False, "backward": True}]
    out = [call(shared, expected=["x"], label="min_cut_saved(x -> y1, y2 -> z -> backward; weights 100, 120, 120, "
                                              "150)")]
    # six inputs the backward reads, named against the alphabet: graph order is not sorted order
    names = ["f", "e", "d", "c", "b", "a"]
    many = [{"name": v, "users": [f"g_{v}"], "weight": 10 + k, "banned": True, "backward": False}
            for k, v in enumerate(names)]
    many += [{"name": "t", "users": [f"g_{v}" for v in names], "weight": None, "banned": False, "backward": True}]
    many += [{"name": f"g_{v}", "users": [], "weight": None, "banned": False, "backward": True} for v in names]
    out.append(call(many, expected=names, label="min_cut_saved(inputs f, e, d, c, b, a, each read by the backward)"))
    for text, fn, n_args, literal in cases:
        args = [cl.randn(64, 32, requires_grad=True) for _ in range(n_args)]
        nodes, saved = _joint_nodes(fn, args)
        if literal is not None and saved != literal:
            raise AssertionError(f"course_lib's min-cut saves {saved} on {text}, the fact sheet {literal}")
        out.append(call(nodes, expected=saved, label=f"min_cut_saved(<the joint graph of {text}, 64x32 inputs>)"))
    return out


# ------------------------------------------------------------------ 08.7 fusion_groups


def _schedule_reference(nodes: list) -> list:
    """The basic fusion rule (reductions and externs are steps of their own), on the exercise's node dicts."""
    steps: list = []
    hoisted: list = []
    group: list | None = None
    shape = None
    for node in nodes:
        if node["kind"] == "input":
            continue
        if node["kind"] == "pointwise":
            if group is None or node["shape"] != shape:
                steps.extend(hoisted)
                hoisted = []
                if group is not None:
                    steps.append(group)
                group, shape = [], node["shape"]
            group.append(node["name"])
        elif group is not None and not set(node["inputs"]) & set(group):
            hoisted.append([node["name"]])
        else:
            steps.extend(hoisted)
            hoisted = []
            if group is not None:
                steps.append(group)
            group = None
            steps.append([node["name"]])
    steps.extend(hoisted)
    if group is not None:
        steps.append(group)
    return steps


def _random_fusion_program(rng) -> list:
    big, small = (4, 8), (4,)
    nodes = [{"name": "x", "kind": "input", "inputs": [], "shape": big},
             {"name": "w", "kind": "input", "inputs": [], "shape": (8, 8)}]
    for k in range(int(rng.integers(5, 12))):
        roll = rng.random()
        big_values = [n["name"] for n in nodes if n["shape"] == big]
        small_values = [n["name"] for n in nodes if n["shape"] == small]
        recent = big_values[-3:]
        if roll < 0.55 or not small_values and roll < 0.7:
            reads = [recent[int(rng.integers(0, len(recent)))]]
            if rng.random() < 0.4:
                reads.append(big_values[int(rng.integers(0, len(big_values)))])
            nodes.append({"name": f"pw{k}", "kind": "pointwise", "inputs": reads, "shape": big})
        elif roll < 0.7:
            reads = [small_values[int(rng.integers(0, len(small_values)))]]
            nodes.append({"name": f"pw{k}", "kind": "pointwise", "inputs": reads, "shape": small})
        elif roll < 0.85:
            src = recent[int(rng.integers(0, len(recent)))] if rng.random() < 0.7 else "x"
            nodes.append({"name": f"sum{k}", "kind": "reduction", "inputs": [src], "shape": small})
        else:
            src = recent[int(rng.integers(0, len(recent)))] if rng.random() < 0.5 else "x"
            nodes.append({"name": f"mm{k}", "kind": "extern", "inputs": [src, "w"], "shape": big})
    return nodes


@exercise("08.7", title="fusion_groups", points=2,
          hint="pointwise: join the open group if the shape matches, else close and open a new one. Anything else: "
               "if it reads nothing of the open group, hoist it ([name] waits in a list); else close, then [name]. "
               "close() appends the hoisted steps, then the group.")
def _fusion_groups(rng):
    big = (4, 8)
    across = [{"name": "x", "kind": "input", "inputs": [], "shape": big},
              {"name": "mul", "kind": "pointwise", "inputs": ["x"], "shape": big},
              {"name": "exp", "kind": "pointwise", "inputs": ["mul"], "shape": big},
              {"name": "sum", "kind": "reduction", "inputs": ["exp"], "shape": ()},
              {"name": "div", "kind": "pointwise", "inputs": ["exp", "sum"], "shape": big}]
    hoist = [{"name": "x", "kind": "input", "inputs": [], "shape": big},
             {"name": "w", "kind": "input", "inputs": [], "shape": (8, 8)},
             {"name": "abs", "kind": "pointwise", "inputs": ["x"], "shape": big},
             {"name": "mm", "kind": "extern", "inputs": ["x", "w"], "shape": big},
             {"name": "add", "kind": "pointwise", "inputs": ["abs", "mm"], "shape": big},
             {"name": "lt", "kind": "pointwise", "inputs": ["add"], "shape": big}]
    shapes = [{"name": "x", "kind": "input", "inputs": [], "shape": big},
              {"name": "neg", "kind": "pointwise", "inputs": ["x"], "shape": big},
              {"name": "amax", "kind": "reduction", "inputs": ["x"], "shape": (4,)},
              {"name": "exp", "kind": "pointwise", "inputs": ["amax"], "shape": (4,)},
              {"name": "mul", "kind": "pointwise", "inputs": ["neg"], "shape": big}]
    # mm reads the open group through its second input, so it closes the group; sum reads a value of a
    # group already closed, so it is hoisted before the open one
    second = [{"name": "x", "kind": "input", "inputs": [], "shape": big},
              {"name": "w", "kind": "input", "inputs": [], "shape": (8, 8)},
              {"name": "abs", "kind": "pointwise", "inputs": ["x"], "shape": big},
              {"name": "mm", "kind": "extern", "inputs": ["w", "abs"], "shape": big},
              {"name": "relu", "kind": "pointwise", "inputs": ["mm"], "shape": big},
              {"name": "sum", "kind": "reduction", "inputs": ["abs"], "shape": (4,)},
              {"name": "mul", "kind": "pointwise", "inputs": ["relu", "mm"], "shape": big}]
    programs = [across, hoist, shapes, second] + [_random_fusion_program(rng) for _ in range(5)]
    return [call(nodes, expected=_schedule_reference(nodes),
                 label=f"fusion_groups({[(n['name'], n['kind'], n['inputs'], n['shape']) for n in nodes]})")
            for nodes in programs]


# ------------------------------------------------------------------ 08.8 kernel_source
_KERNEL_OPS = {"add": 2, "sub": 2, "mul": 2, "div": 1, "neg": 1, "abs": 1, "exp": 1, "tanh": 1, "sin": 1,
               "maximum": 2}


def _random_kernel(rng) -> dict:
    inputs = ["x", "y", "z"][:int(rng.integers(1, 4))]
    names = list(inputs)
    ops = []
    for k in range(int(rng.integers(2, 8))):
        op = list(_KERNEL_OPS)[int(rng.integers(0, len(_KERNEL_OPS)))]
        a = names[int(rng.integers(max(0, len(names) - 2), len(names)))]
        if op == "div":
            args = [a, float([2.0, -4.0, 0.5][int(rng.integers(0, 3))])]
        elif _KERNEL_OPS[op] == 2:
            b = names[int(rng.integers(0, len(names)))] if rng.random() < 0.7 \
                else float(np.round(rng.uniform(-2, 2), 2))
            args = [a, b]
        else:
            args = [a]
        if op == "exp":   # keep values small enough for exp
            ops.append([f"t{k}a", "tanh", [a]])
            names.append(f"t{k}a")
            args = [f"t{k}a"]
        ops.append([f"t{k}", op, args])
        names.append(f"t{k}")
    computed = [op[0] for op in ops]
    extra = {computed[int(k)] for k in rng.integers(0, len(computed), size=int(rng.integers(0, 3)))}
    outputs = sorted({computed[-1]} | extra, key=computed.index)
    n = int(rng.integers(5, 40))
    data = np.random.default_rng(int(rng.integers(0, 2**31))).standard_normal((len(inputs), n))
    return {"name": f"kernel{int(rng.integers(0, 10))}", "inputs": inputs, "ops": ops, "outputs": outputs, "n": n,
            "data": data}


def _kernel_run(kernel_source, spec: dict) -> dict:
    """Probe: generate the source, look at its loop and stores, run it with exec on the spec's data."""
    source = kernel_source(spec["name"], list(spec["inputs"]), [list(op) for op in spec["ops"]],
                           list(spec["outputs"]), spec["n"])
    tree = ast.parse(source)
    fn_defs = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    params = [a.arg for a in fn_defs[0].args.args] if fn_defs else []
    stores = sorted({node.value.id for node in ast.walk(tree)
                     if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
                     and isinstance(node.value, ast.Name)})
    loop = (_loop_shape(fn_defs[0]) if len(tree.body) == 1 and fn_defs
            else "the source is not one function definition")
    namespace = {"math": math}
    exec(compile(source, "<kernel_source>", "exec"), namespace)  # noqa: S102 - the learner's generated code
    outs = [np.full(spec["n"], np.nan) for _ in spec["outputs"]]
    namespace[spec["name"]](*[row.copy() for row in spec["data"]], *outs)
    return {"parameters": params, "loop": loop, "arrays stored into": stores, "outputs": outs}


_ONE_LOOP = "the body is one loop, for i in range(n), indexing arrays only with [i]"


def _loop_shape(fn: ast.FunctionDef) -> str:
    """_ONE_LOOP if the kernel is one loop over the elements, else what is not."""
    body = [stmt for stmt in fn.body
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))]   # a docstring
    if len(body) != 1 or not isinstance(body[0], ast.For):
        return "the body is not one for loop (statements outside it, or no loop)"
    loop = body[0]
    if not (isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Call)
            and isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range"):
        return "the loop is not `for <name> in range(...)`"
    for node in ast.walk(loop):
        if node is not loop and isinstance(node, (ast.For, ast.While, ast.comprehension)):
            return "a second loop (one pass over memory per op is what fusion removes)"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return "an import inside the kernel"
        if isinstance(node, ast.Subscript) and not (isinstance(node.slice, ast.Name)
                                                    and node.slice.id == loop.target.id):
            return f"an index other than [{loop.target.id}]: {ast.unparse(node)}"
    return _ONE_LOOP


def _eager_kernel(spec: dict) -> list:
    vals = {name: cl.from_numpy(row.copy()) for name, row in zip(spec["inputs"], spec["data"])}
    fns = {"add": cl.add, "sub": cl.sub, "mul": cl.mul, "div": cl.div, "neg": cl.neg, "abs": cl.abs, "exp": cl.exp,
           "tanh": cl.tanh, "sin": cl.sin, "maximum": cl.maximum}
    for value, op, args in spec["ops"]:
        operands = [vals[a] if isinstance(a, str) else cl.tensor(a, dtype=cl.float64) for a in args]
        vals[value] = fns[op](*operands)
    return [vals[o].numpy() for o in spec["outputs"]]


def _kernel_compare(got, expected):
    if not isinstance(got, dict) or got.keys() != expected.keys():
        return False
    for key in ("parameters", "loop", "arrays stored into"):
        if got[key] != expected[key]:
            return f"{key}: expected {expected[key]!r}, got {got[key]!r}"
    outs = got["outputs"]
    if not isinstance(outs, list) or len(outs) != len(expected["outputs"]):
        return "outputs: not one array per output"
    for k, (g, e) in enumerate(zip(outs, expected["outputs"])):
        if not isinstance(g, np.ndarray) or g.shape != e.shape or not np.allclose(g, e, rtol=1e-9, atol=1e-12):
            return f"output {k}: the values differ from eager course_lib's"
    return True


def _kernel_text(spec: dict) -> str:
    return (f"kernel_source({spec['name']!r}, {spec['inputs']}, "
            f"{[tuple(op) for op in spec['ops']]}, {spec['outputs']}, {spec['n']})")


@exercise("08.8", title="kernel_source", points=2,
          hint="lines: 'def name(x, y, out_t3):', '    for i in range(n):', then per input '        x_i = x[i]', "
               "per op '        t0 = ' + EXPRESSIONS[op].format(*operands), and '        out_t0[i] = t0' for outputs.",
          time_budget=20.0)
def _kernel_source(rng):
    fixed = {"name": "kernel0", "inputs": ["x"], "ops": [["t0", "mul", ["x", 1.5]], ["t1", "add", ["t0", 0.5]],
                                                         ["t2", "sin", ["t1"]]],
             "outputs": ["t2"], "n": 7, "data": np.linspace(-1, 1, 7)[None, :]}
    specs = [fixed] + [_random_kernel(rng) for _ in range(5)]
    out = []
    for spec in specs:
        expected = {"parameters": list(spec["inputs"]) + [f"out_{o}" for o in spec["outputs"]],
                    "loop": _ONE_LOOP, "arrays stored into": sorted(f"out_{o}" for o in spec["outputs"]),
                    "outputs": _eager_kernel(spec)}
        out.append(probe(_kernel_run, spec, expected=expected, compare=_kernel_compare, label=_kernel_text(spec)))
    return out


# ------------------------------------------------------------------ 08.9 make_dot


class _Residual(cl.nn.Module):
    """x -> h = fc1(x); fc2(tanh(h)) + h: the node of h is used twice (two arrows out of AddmmBackward0)."""

    def __init__(self, n_in: int, n_hidden: int) -> None:
        super().__init__()
        self.fc1 = cl.nn.Linear(n_in, n_hidden)
        self.fc2 = cl.nn.Linear(n_hidden, n_hidden)

    def forward(self, x):
        h = self.fc1(x)
        return self.fc2(h.tanh()) + h


class _Twice(cl.nn.Module):
    """The same Linear applied twice: its AccumulateGrad nodes are reached from two places each."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.lin = cl.nn.Linear(n, n)

    def forward(self, x):
        return self.lin(self.lin(x).sigmoid())


class _ConvNet(cl.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = cl.nn.Conv2d(2, 3, 3, padding=1)
        self.fc = cl.nn.Linear(3 * 4 * 4, 2)

    def forward(self, x):
        return self.fc(self.conv(x).relu().flatten(1))


_ACTIVATIONS = {"relu": cl.nn.ReLU, "tanh": cl.nn.Tanh, "sigmoid": cl.nn.Sigmoid}


def _dot_model(spec: dict):
    """(model, output) for a model spec, the same in the grader and in the kernel (seeded)."""
    cl.manual_seed(spec["seed"])
    kind = spec["model"]
    if kind == "weight":  # a view of a parameter: its base is already in the graph, as the leaf
        model = cl.nn.Linear(3, 4)
        return model, model.weight[:, 0]
    if kind == "residual":
        model, x = _Residual(3, 4), cl.randn(2, 3)
    elif kind == "twice":
        model, x = _Twice(3), cl.randn(2, 3)
    elif kind == "conv":
        model, x = _ConvNet(), cl.randn(1, 2, 4, 4)
    else:
        layers = []
        for layer in spec["layers"]:
            layers.append(cl.nn.Linear(*layer[1:]) if layer[0] == "linear" else _ACTIVATIONS[layer[0]]())
        model, x = cl.nn.Sequential(*layers), cl.randn(spec["batch"], spec["layers"][0][1])
    y = model(x)
    tail = spec["tail"]
    out = (y[:, 0] if tail == "select" else y.sum() if tail == "sum" else (y * y).mean() if tail == "square_mean"
           else y.t() if tail == "transpose" else y)
    return model, out


def _dot_params(model, which: str):
    named = dict(model.named_parameters())
    if which == "none":
        return None
    if which == "some":
        return {k: v for k, v in named.items() if k.endswith("weight")}
    return named


def _graph_names(var) -> dict[str, str]:
    """str(id(obj)) -> a name for what it stands for: 'out', 'base', 'f<k>' for the k-th backward node and
    'v<k>' for the k-th leaf met in breadth-first order over next_functions."""
    names = {str(id(var)): "out"}
    if var._base is not None:
        names[str(id(var._base))] = "base"
    queue = [t.grad_fn for t in (var, var._base) if t is not None and t.grad_fn is not None]
    seen: set[int] = set()
    while queue:
        fn = queue.pop(0)
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        names[str(id(fn))] = f"f{len(seen) - 1}"
        if hasattr(fn, "variable"):
            names.setdefault(str(id(fn.variable)), f"v{len(seen) - 1}")
        queue += [u for u, _ in fn.next_functions if u is not None]
    return names


_STATEMENT = re.compile(r"^\t(\S+) -> (\S+)(.*)$|^\t(\S+)(.*)$", re.S)


def _statements(dot, names: dict[str, str]) -> list[str] | str:
    """The Digraph's node and edge statements with object ids replaced by names, sorted."""
    body = getattr(dot, "body", None)
    if not isinstance(body, list) or not all(isinstance(s, str) for s in body):
        return f"make_dot returned {type(dot).__name__}, not a Digraph (no list of statements in .body)"

    def name(token: str) -> str:
        token = token.strip('"')
        return names.get(token, f"?{token}" if not token.isdigit() else "?(an id of something not in the graph)")

    out = []
    for s in body:
        m = _STATEMENT.match(s)
        if m is None:
            out.append(f"?{s!r}")
        elif m.group(1) is not None:
            out.append(f"{name(m.group(1))} -> {name(m.group(2))}{m.group(3).rstrip()}")
        else:
            out.append(f"{name(m.group(4))}{m.group(5).rstrip()}")
    return sorted(out)


def _dot_statements(fn, spec):
    """Probe: the statements of fn(output, params) for the spec's model, ids replaced by names."""
    model, out = _dot_model(spec)
    return _statements(fn(out, _dot_params(model, spec["params"])), _graph_names(out))


def _dot_compare(got, expected):
    if got == expected:
        return True
    if not isinstance(got, list):
        return str(got)
    missing = [s for s in expected if s not in got or expected.count(s) > got.count(s)]
    extra = [s for s in got if s not in expected or got.count(s) > expected.count(s)]
    parts = []
    if missing:
        parts.append(f"missing {len(missing)}: " + "; ".join(repr(s) for s in sorted(set(missing))[:3]))
    if extra:
        parts.append(f"not expected {len(extra)}: " + "; ".join(repr(s) for s in sorted(set(extra))[:3]))
    return ("; ".join(parts) + " (names: out, base, f<k> backward nodes, v<k> leaves)") if parts else False


def _dot_label(spec: dict) -> str:
    params = {"all": "dict(model.named_parameters())", "some": "the weights only", "none": "None"}[spec["params"]]
    if spec["model"] == "weight":
        return f"model = Linear(3, 4); make_dot(model.weight[:, 0], params={params})"
    if spec["model"] == "mlp":
        model = " -> ".join(f"Linear({layer[1]}, {layer[2]})" if layer[0] == "linear" else layer[0]
                            for layer in spec["layers"])
    else:
        model = {"residual": "fc2(tanh(fc1(x))) + fc1(x)", "twice": "lin(sigmoid(lin(x)))",
                 "conv": "fc(relu(conv(x)).flatten(1))"}[spec["model"]]
    tail = {"select": "y[:, 0]", "sum": "y.sum()", "square_mean": "(y * y).mean()", "transpose": "y.t()",
            "none": "y"}[spec["tail"]]
    return f"y = {model}; make_dot({tail}, params={params})"


def _random_mlp(rng) -> dict:
    sizes = [int(n) for n in rng.integers(1, 5, size=int(rng.integers(2, 5)))]
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers.append(["linear", a, b])
        if rng.random() < 0.7:
            layers.append([list(_ACTIVATIONS)[int(rng.integers(0, len(_ACTIVATIONS)))]])
    tails = ["select", "sum", "square_mean", "none", "transpose"]
    return {"model": "mlp", "layers": layers, "batch": int(rng.integers(1, 4)), "seed": int(rng.integers(0, 2**31)),
            "tail": tails[int(rng.integers(0, len(tails)))], "params": ["all", "some", "none"][int(rng.integers(0, 3))]}


@exercise("08.9", title="make_dot", points=2,
          hint="names = {id(t): name for name, t in params.items()}; add_tensor(var, 'darkolivegreen1') adds the node, "
               "walks var.grad_fn and adds grad_fn -> var, then the base (if var._base is not None) with a dotted "
               "edge; add_nodes(fn): the leaf of fn.variable (lightblue) and leaf -> fn, the node, and u -> fn for "
               "every u in next_functions, walking u only if its id is new.",
          forbid={"course_lib.viz.make_dot": _viz_make_dot})
def _make_dot(rng):
    mlp = {"model": "mlp", "layers": [["linear", 3, 4], ["relu"], ["linear", 4, 2]], "batch": 5, "seed": 0}
    specs = [dict(mlp, tail="sum", params="all"), dict(mlp, tail="select", params="all"),
             dict(mlp, tail="none", params="none"),
             {"model": "residual", "tail": "sum", "params": "all", "seed": int(rng.integers(0, 2**31))},
             {"model": "twice", "tail": "none", "params": "all", "seed": int(rng.integers(0, 2**31))},
             {"model": "conv", "tail": "select", "params": "some", "seed": int(rng.integers(0, 2**31))},
             {"model": "weight", "tail": "select", "params": "all", "seed": int(rng.integers(0, 2**31))}]
    specs += [_random_mlp(rng) for _ in range(3)]
    return [probe(_dot_statements, spec, expected=_dot_statements(_viz_make_dot, spec), compare=_dot_compare,
                  label=_dot_label(spec)) for spec in specs]
