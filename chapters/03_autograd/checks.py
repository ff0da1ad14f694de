"""Checks for chapter 03 (autograd).

Expected values come from course_lib's own autograd (``course_lib.autograd.grad``;
for 03.8, on the same graphs built of tensors instead of the chapter's scalar ``Var``)
or from literals; the learner's object is only ever the thing being tested. Probes (the
functions taking the learner's object first) run in the kernel and return numbers:
tensors as nested lists of floats, graphs as node indices and edges, side effects as
observations, which the judge compares with a small tolerance.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import course_lib as cl
from course.checks import exercise, probe
from course_lib.autograd import engine as _engine

# ---------------------------------------------------------------- helpers


def _t(data) -> Any:
    return cl.tensor(data, dtype=cl.float64)


def _values(x) -> Any:
    """A tensor, numpy array or number as nested lists of floats (None stays None)."""
    if x is None:
        return None
    if isinstance(x, (tuple, list)) and not isinstance(x, np.ndarray):
        return type(x)(_values(v) for v in x)
    if hasattr(x, "detach") and hasattr(x, "_np"):
        x = x.detach()._np()
    a = np.asarray(x, dtype=np.float64)
    return a.tolist() if a.ndim else float(a)


def _shape_of(v) -> tuple:
    if isinstance(v, list):
        return (len(v),) + (_shape_of(v[0]) if v else ())
    return ()


def _close(rtol=1e-6, atol=1e-8) -> Callable[[Any, Any], bool]:
    def cmp(got, expected) -> bool:
        if expected is None or got is None:
            return got is None and expected is None
        if isinstance(expected, tuple):
            return isinstance(got, tuple) and len(got) == len(expected) and all(
                cmp(g, e) for g, e in zip(got, expected))
        if isinstance(got, tuple) or not isinstance(got, (list, float, int)) or isinstance(got, bool):
            return False
        if _shape_of(got) != _shape_of(expected):
            return False
        return bool(np.allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float), rtol=rtol,
                                atol=atol))
    return cmp


def _label(name: str, *args) -> str:
    def short(a):
        v = _values(a) if hasattr(a, "_np") else a
        text = repr(v)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"{name}({', '.join(short(a) for a in args)})"


def _ref_grads(f: Callable, inputs: list, grad) -> tuple:
    """d f(*inputs) / d inputs, weighted by ``grad``, with course_lib's autograd."""
    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    out = f(*leaves)
    gs = cl.autograd.grad(out, leaves, grad, allow_unused=True)
    return tuple(_values(g) for g in gs)


def _values_of(fn, *args):
    """Probe: the learner's result as nested lists of floats."""
    return _values(fn(*args))


def _normal(rng, shape, low: float | None = None) -> Any:
    """A float64 tensor of `shape` with values drawn from `rng`, rounded to 2 decimals (|v| >= low if given)."""
    v = rng.standard_normal(shape).round(2)
    if low is not None:
        v = np.where(np.abs(v) < low, np.sign(v + 1e-9) * (low + np.abs(v)), v)
    return cl.tensor(np.asarray(v, dtype=np.float64), dtype=cl.float64)


def _random_shape(rng, max_dims: int = 3) -> tuple:
    return tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(0, max_dims + 1))))


def _formula_trial(name: str, args: tuple, expected):
    return probe(_values_of, *args, expected=expected, compare=_close(), label=_label(name, *args))


# ---------------------------------------------------------------- 03.1 mul

_MUL = [
    ([1.0, 1.0, 1.0], [2.0, -1.0, 0.5], [3.0, 4.0, -2.0]),
    ([0.5, -2.0], [1.5, 2.5], [-1.0, 3.0]),
    ([[1.0, 2.0], [3.0, 4.0]], [[0.1, 0.2], [0.3, 0.4]], [[5.0, 6.0], [7.0, 8.0]]),
    (2.0, 3.0, -4.0),
]


def _formula_trials(rng, name: str, table: list, f: Callable, low: float | None = None,
                    positive: bool = False) -> list:
    """Trials for a backward formula of ``f`` (one or two inputs): the table, then three random shapes."""
    rows = [tuple(_t(v) for v in row) for row in table]
    n_in = len(table[0]) - 1
    for _ in range(3):
        shape = _random_shape(rng)
        row = [_normal(rng, shape)] + [_normal(rng, shape, low) for _ in range(n_in)]
        if positive:
            row[1:] = [x.abs() + 0.1 for x in row[1:]]
        rows.append(tuple(row))
    return [_formula_trial(name, row, _ref_grads(f, list(row[1:]), row[0]) if n_in > 1
                           else _ref_grads(f, list(row[1:]), row[0])[0]) for row in rows]


@exercise("03.1", title="mul_backward", points=1,
          hint="z = x * y, so dz/dx = y and dz/dy = x; multiply each by the incoming grad and return "
               "(grad_x, grad_y) in that order.")
def _mul_backward(rng):
    return _formula_trials(rng, "mul_backward", _MUL, lambda a, b: a * b)


# ---------------------------------------------------------------- 03.2 div

_DIV = [
    ([1.0, 1.0, 1.0], [2.0, -1.0, 0.5], [4.0, 2.0, -0.5]),
    ([0.5, -2.0], [3.0, 2.5], [-1.0, 3.0]),
    ([[1.0, 2.0], [3.0, 4.0]], [[0.1, 0.2], [0.3, 0.4]], [[5.0, 6.0], [7.0, 8.0]]),
    (3.0, 1.0, 2.0),
]


@exercise("03.2", title="div_backward", points=1,
          hint="z = x / y: dz/dx = 1 / y and dz/dy = -x / y**2; multiply both by grad.")
def _div_backward(rng):
    return _formula_trials(rng, "div_backward", _DIV, lambda a, b: a / b, low=0.2)


# ---------------------------------------------------------------- 03.3 log

_LOG = [
    ([1.0, 1.0, 1.0], [2.0, 0.5, 10.0]),
    ([0.5, -2.0], [3.0, 0.25]),
    ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [4.0, 8.0]]),
    (0.14112000167369843, 6.0),
]


@exercise("03.3", title="log_backward", points=1,
          hint="d log(x)/dx = 1/x: return grad / x (one tensor, not a tuple).")
def _log_backward(rng):
    return _formula_trials(rng, "log_backward", _LOG, lambda a: a.log(), positive=True)


# ---------------------------------------------------------------- 03.4 unbroadcast

_UNBROADCAST = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((2, 3), (1, 3)),
    ((2, 3), (2, 1)),
    ((2, 3), ()),
    ((4, 2, 3), (2, 1)),
    ((4, 2, 3), (1, 1, 3)),
    ((2, 1, 3), (1, 3)),
    ((3,), (1,)),
]


def _grad_of(shape):
    n = 1
    for s in shape:
        n *= s
    return cl.arange(1.0, n + 1.0, dtype=cl.float64).reshape(shape) if shape else _t(1.5)


@exercise("03.4", title="unbroadcast", points=2,
          hint="first sum away the leading dims that broadcasting added (grad.dim() - len(shape) of them), then "
               "sum with keepdim=True every dim where shape has a 1 but grad does not.")
def _unbroadcast(rng):
    table = list(_UNBROADCAST)
    for _ in range(4):  # a random grad shape; the input's: some leading dims dropped, some sizes set to 1
        gshape = tuple(int(n) for n in rng.integers(2, 5, size=int(rng.integers(1, 5))))
        shape = tuple(1 if rng.random() < 0.4 else n for n in gshape[int(rng.integers(0, len(gshape) + 1)):])
        table.append((gshape, shape))
    out = []
    for gshape, shape in table:
        g = _grad_of(gshape) if rng.random() < 0.5 else _normal(rng, gshape)
        x = cl.zeros(shape, dtype=cl.float64)
        expected = _ref_grads(lambda a: a.expand(gshape) * 1, [x], g)[0]
        out.append(probe(_values_of, g, shape, expected=expected, compare=_close(),
                         label=f"unbroadcast(grad of shape {gshape}, {shape})"))
    return out


# ---------------------------------------------------------------- 03.5 sum_backward

_SUM = [
    ((2, 3), None, False),
    ((2, 3), 0, False),
    ((2, 3), 1, False),
    ((2, 3), 1, True),
    ((2, 3, 4), (0, 2), False),
    ((2, 3, 4), -1, False),
    ((2, 3, 4), (1,), True),
    ((2, 3, 4), (2, 0), False),
    ((2, 3, 4), (-3, -1), False),   # negative dims in a tuple: wrap them before sorting
    ((2, 3, 4), (-1, 1), False),
    ((4,), 0, False),
]


@exercise("03.5", title="sum_backward", points=2,
          hint="every input element contributes once to its sum, so its gradient is the grad of that sum: put "
               "the reduced dims back as size 1 (unsqueeze, unless keepdim) and expand to input_shape.")
def _sum_backward(rng):
    table = list(_SUM)
    for _ in range(4):  # a random shape, a random set of dims (some written negative), keepdim or not
        shape = tuple(int(n) for n in rng.integers(1, 5, size=int(rng.integers(1, 5))))
        k = int(rng.integers(1, len(shape) + 1))
        dims = [int(d) - (len(shape) if rng.random() < 0.5 else 0) for d in rng.permutation(len(shape))[:k]]
        dim = dims[0] if k == 1 and rng.random() < 0.5 else tuple(dims)
        table.append((shape, dim, bool(rng.random() < 0.5)))
    out = []
    for shape, dim, keepdim in table:
        x = cl.zeros(shape, dtype=cl.float64)
        def fwd(a, dim=dim, keepdim=keepdim):
            return (a.sum() if dim is None else a.sum(dim, keepdim=keepdim))
        gshape = tuple(fwd(x).shape)
        g = _grad_of(gshape) if rng.random() < 0.5 else _normal(rng, gshape)
        expected = _ref_grads(fwd, [x], g)[0]
        out.append(probe(_values_of, g, shape, dim, keepdim, expected=expected, compare=_close(),
                         label=f"sum_backward(grad of shape {gshape}, input_shape={shape}, dim={dim}, "
                               f"keepdim={keepdim})"))
    return out


# ---------------------------------------------------------------- 03.6 matmul

_MM = [((2, 3), (3, 4)), ((1, 2), (2, 1)), ((3, 1), (1, 3)), ((4, 4), (4, 2))]


@exercise("03.6", title="matmul_backward", points=2,
          hint="C = A @ B: dA = grad @ B.T and dB = A.T @ grad. Check the shapes: dA must be A's shape.")
def _matmul_backward(rng):
    shapes = list(_MM)
    for _ in range(3):
        n, k, m = (int(v) for v in rng.integers(1, 6, size=3))
        shapes.append(((n, k), (k, m)))
    out = []
    for sa, sb in shapes:
        a, b, g = _normal(rng, sa), _normal(rng, sb), _normal(rng, (sa[0], sb[1]))
        out.append(_formula_trial("matmul_backward", (g, a, b), _ref_grads(lambda x, y: x @ y, [a, b], g)))
    return out


# ---------------------------------------------------------------- programs: graphs built from a list of ops
# A program is a list of ops, each ("op", i, j) or ("op", i) with i, j indices of earlier values (the inputs
# come first); its last value is the output. The same program builds a course_lib graph (03.7) or a graph of
# the chapter's Var (03.8), in the kernel and in the grader alike.

_UNARY = ("sin", "log")
_BINARY = ("add", "mul")


def _random_program(rng, n_inputs: int, n_ops: int) -> list:
    ops = []
    for k in range(n_ops):
        avail = n_inputs + k
        if rng.random() < 0.35:
            ops.append((_UNARY[int(rng.random() < 0.3)], int(rng.integers(0, avail))))
        else:
            # lean on recent values, so the graph is deep and values are reused (diamonds)
            i = int(rng.integers(max(0, avail - 4), avail))
            ops.append((_BINARY[int(rng.integers(0, 2))], i, int(rng.integers(0, avail))))
    return ops


def _run_program(program: list, values: list) -> Any:
    values = list(values)
    for op in program:
        a = values[op[1]]
        if op[0] == "add":
            values.append(a + values[op[2]])
        elif op[0] == "mul":
            values.append(a * values[op[2]])
        elif op[0] == "log":  # log(a*a + 1): defined everywhere
            values.append((a * a + (Var(1.0) if isinstance(a, Var) else 1.0)).log())
        else:
            values.append(getattr(a, op[0])())
    return values[-1]


# ---------------------------------------------------------------- 03.7 topological_sort

def _graphs():
    """(label, build() -> root node) of a few backward graphs, built with course_lib."""
    def seed():
        x1 = cl.tensor(2.0, requires_grad=True)
        x2 = cl.tensor(3.0, requires_grad=True)
        return (cl.log(x1 * x2) * cl.sin(x2)).grad_fn

    def diamond():
        a = cl.tensor(1.0, requires_grad=True) * 2
        return (a.sin() + a.exp() + a * a).grad_fn

    def skip():
        b = cl.tensor(1.0, requires_grad=True) * 3
        return (b + b.exp().sin()).grad_fn

    def ladder():
        y = cl.tensor(1.0, requires_grad=True)
        for _ in range(30):
            y = y + y
        return y.grad_fn

    def chain():
        y = cl.tensor(1.0, requires_grad=True)
        for _ in range(3000):
            y = y * 1.0
        return y.grad_fn

    def two_outputs():
        h = (cl.ones(3, requires_grad=True) * 2).relu()
        return ((h * h).sum() + h.sum()).grad_fn

    return {"the seed example log(x1*x2)*sin(x2)": seed, "diamond: a=x*2; a.sin()+a.exp()+a*a": diamond,
            "skip connection: b=x*3; b + b.exp().sin()": skip, "ladder: y=y+y thirty times": ladder,
            "chain of 3000 muls (no recursion!)": chain,
            "two outputs reused: h=(w*2).relu(); (h*h).sum()+h.sum()": two_outputs}


def _reachable(root) -> list:
    seen, stack, out = {id(root)}, [root], [root]
    while stack:
        n = stack.pop()
        for nxt, _ in n.next_functions:
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
                out.append(nxt)
    return out


def _sorted_graph(fn, name: str | None, program: list | None, n_inputs: int = 0) -> dict:
    """Probe: build graph `name` (or `program` over scalar inputs), run the learner's topological_sort on its
    root; the graph as data: node names, edges (i -> j, i passes gradient to j) and the order as node indices
    (-1 for anything that is not a node of the graph)."""
    if program is not None:
        xs = [cl.tensor(0.3 + 0.2 * k, dtype=cl.float64, requires_grad=True) for k in range(n_inputs)]
        root = _run_program(program, xs).grad_fn
    else:
        root = _graphs()[name]()
    nodes = _reachable(root)
    index = {id(n): i for i, n in enumerate(nodes)}
    edges = [(index[id(n)], index[id(nxt)]) for n in nodes for nxt, _ in n.next_functions if nxt is not None]
    order = fn(root)
    if not isinstance(order, list):
        return {"names": [type(n).__name__ for n in nodes], "edges": edges, "order": type(order).__name__}
    return {"names": [type(n).__name__ for n in nodes], "edges": edges,
            "order": [index.get(id(n), -1) for n in order]}


def _order_problem(got, expected=None) -> bool | str:
    """True if got["order"] is a valid backward order of the graph, else what is wrong."""
    names, edges, order = got["names"], got["edges"], got["order"]
    if not isinstance(order, list):
        return f"expected a list of nodes, got {order}"
    pos: dict = {}
    for i, n in enumerate(order):
        if n == -1:
            return f"position {i} holds something that is not a node of the graph"
        if n in pos:
            return f"{names[n]} appears twice (at {pos[n]} and {i})"
        pos[n] = i
    missing = [names[n] for n in range(len(names)) if n not in pos]
    if missing:
        return f"missing {len(missing)} node(s), e.g. {missing[0]}"
    if order[0] != 0:
        return "the root (output's grad_fn) must come first"
    for a, b in edges:
        if pos[b] < pos[a]:
            return (f"{names[b]} (position {pos[b]}) comes before {names[a]} (position {pos[a]}), "
                    "which passes it a gradient")
    return True


_ENGINE_HELPERS = {f"course_lib.autograd.engine.{n}": getattr(_engine, n)
                   for n in ("compute_dependencies", "run_backward") if hasattr(_engine, n)}


@exercise("03.7", title="topological_sort", points=3,
          hint="count, for every node, how many edges point into it (one pass over next_functions); start "
               "from the root; a node goes into the order when its count drops to 0. Use a list as a stack, not "
               "recursion: graphs can be thousands of nodes deep.", forbid=_ENGINE_HELPERS)
def _topological_sort(rng):
    out = [probe(_sorted_graph, name, None, expected="a valid order", compare=_order_problem,
                 label=f"topological_sort(<{name}>)") for name in _graphs()]
    for _ in range(3):
        n_inputs = int(rng.integers(1, 4))
        program = _random_program(rng, n_inputs, int(rng.integers(8, 30)))
        out.append(probe(_sorted_graph, None, program, n_inputs, expected="a valid order", compare=_order_problem,
                         label=f"topological_sort(<random program of {len(program)} ops on {n_inputs} input(s)>)"))
    return out


# ---------------------------------------------------------------- 03.8 run_backward

class _Visits:
    """How many more times the learner's code may read ``Var.parents`` in the case that is running.

    A correct engine reads each node's parents a few times (counting users, then passing gradients on),
    so the reads grow with the number of nodes. One that passes a partial gradient on every time it
    reaches a node reads them once per *path*: 2**40 times for ``y = y + y`` repeated 40 times. The
    probe reports how many reads a run made and the judge allows 20 per node (+100); past a far larger
    cap the read raises, so such an engine stops at once instead of running for hours.
    """

    left: int | None = None     # None: no budget (building graphs, the reference)
    limit: int = 0
    nodes: int = 0


class TooManyVisits(RuntimeError):
    """Raised from ``Var.parents`` when a case's budget of reads is spent."""


class Var:
    """A scalar in the chapter's tiny graph (the same class the notebook defines).

    ``parents`` are the Vars it was computed from, ``local_grads`` d(self)/d(parent)
    for each; ``grad`` accumulates, as ``Tensor.grad`` does. Reading ``parents`` is
    counted against the running case's budget (``_Visits``).
    """

    def __init__(self, value: float, parents: tuple = (), local_grads: tuple = (), name: str = ""):
        self.value = value
        self._parents = tuple(parents)
        self.local_grads = tuple(local_grads)
        self.grad = 0.0
        self.name = name

    @property
    def parents(self) -> tuple:
        if _Visits.left is not None:
            _Visits.left -= 1
            if _Visits.left < 0:
                raise TooManyVisits(
                    f"read .parents more than {_Visits.limit} times in a graph of {_Visits.nodes} nodes: the work "
                    f"must grow with the number of nodes (count users once, pass each gradient on once), "
                    f"not with the number of paths")
        return self._parents

    def __add__(self, other):
        return Var(self.value + other.value, (self, other), (1.0, 1.0))

    def __mul__(self, other):
        return Var(self.value * other.value, (self, other), (other.value, self.value))

    def log(self):
        return Var(math.log(self.value), (self,), (1.0 / self.value,))

    def sin(self):
        return Var(math.sin(self.value), (self,), (math.cos(self.value),))

    def __repr__(self) -> str:
        return f"Var({self.value!r}, grad={self.grad!r})"


def _programs(V=None):
    """{label: build() -> (root, leaves)}, built of the chapter's Var, or of what `V` makes of a number
    (float64 tensors that require grad: the judge's expected gradients come from course_lib's autograd)."""
    V = V or Var

    def seed():
        x1, x2 = V(2.0), V(3.0)
        return (x1 * x2).log() * x2.sin(), [x1, x2]

    def diamond():
        x = V(1.5)
        a = x * V(2.0)
        return a.sin() + a * a + a.log(), [x]

    def reuse():
        x = V(0.5)
        y = x
        for _ in range(20):
            y = y + y
        return y, [x]

    def ladder():
        x = V(0.5)
        y = x
        for _ in range(40):
            y = y + y
        return y, [x]

    def deep_diamonds():
        x = V(0.3)
        a = x
        for _ in range(40):
            a = a.sin() + a * V(0.5)
        return a, [x]

    def chain():
        x = V(1.0)
        y = x
        for _ in range(3000):
            y = y * V(1.0)
        return y, [x]

    def shared_leaf():
        x, w = V(2.0), V(-1.0)
        h = x * w
        return h * h + h * x + w, [x, w]

    return {"seed example": seed, "diamond a=x*2; a.sin()+a*a+a.log()": diamond, "y=y+y twenty times": reuse,
            "y=y+y forty times: 2**40 paths, 41 nodes": ladder,
            "a = a.sin() + a*0.5, forty diamonds deep": deep_diamonds,
            "chain of 3000 products": chain, "h=x*w; h*h+h*x+w": shared_leaf}


def _count_nodes(root) -> int:
    seen, stack = {id(root)}, [root]
    while stack:
        for p in stack.pop()._parents:
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    return len(seen)


def _allowed_reads(nodes: int) -> int:
    """Parent reads the judge allows an engine on a graph of `nodes` Vars."""
    return 20 * nodes + 100


def _within_budget(root, fn) -> tuple[int, int]:
    """``fn(root)``, stopped past a cap of parent reads proportional to the graph's size (see ``_Visits``);
    (reads made, nodes)."""
    n = _count_nodes(root)
    _Visits.nodes, _Visits.limit = n, 10 * _allowed_reads(n)
    _Visits.left = _Visits.limit
    try:
        fn(root)
        return _Visits.limit - _Visits.left, n
    finally:
        _Visits.left = None


def _engine_result(grads: list, runs: list) -> dict:
    reads, nodes = max(r for r, _ in runs), runs[0][1]
    return {"grads": grads, "reads": reads, "nodes": nodes}


def _engine_ok(compare: Callable) -> Callable:
    """Compare a probe's {"grads", "reads", "nodes"} with the expected grads: reads within what is allowed first."""
    def cmp(got, expected) -> bool | str:
        if not isinstance(got, dict) or set(got) != {"grads", "reads", "nodes"}:
            return False
        if got["reads"] > _allowed_reads(got["nodes"]):
            return (f"read .parents {got['reads']} times in a graph of {got['nodes']} nodes: the work must grow "
                    f"with the number of nodes (count users once, pass each gradient on once), not with the "
                    f"number of paths")
        return compare(got["grads"], expected)
    return cmp


def _build(name: str | None, program: list | None, inputs: list | None, V=None) -> tuple:
    V = V or Var
    if program is None:
        return _programs(V)[name]()
    leaves = [V(v) for v in inputs]
    return _run_program(program, leaves), leaves


def _leaf(v: float) -> Any:
    return cl.tensor(v, dtype=cl.float64, requires_grad=True)


def _leaf_grads(fn, name: str | None, program: list | None = None, inputs: list | None = None,
                times: int = 1) -> list:
    """Probe: build the graph, run the learner's run_backward on its root `times` times; the leaves' grads
    and the most parent reads one run made."""
    root, leaves = _build(name, program, inputs)
    runs = [_within_budget(root, fn) for _ in range(times)]
    return _engine_result([lf.grad for lf in leaves], runs)


def _seed_nodes(V=None) -> tuple:
    """The seed example with a name for every Var: (root, [(name, var), ...]) root first."""
    V = V or Var
    x1, x2 = V(2.0), V(3.0)
    a = x1 * x2
    y1, y2 = a.log(), x2.sin()
    w = y1 * y2
    return w, [("root w", w), ("y1", y1), ("y2", y2), ("a", a), ("x1", x1), ("x2", x2)]


def _every_grad(fn) -> list:
    """Probe: run_backward on the seed example; the grad of every Var, the root's first, and the reads."""
    root, named = _seed_nodes()
    runs = [_within_budget(root, fn)]
    return _engine_result([(name, v.grad) for name, v in named], runs)


def _close_pairs(got, expected) -> bool:
    """[(name, number), ...] with the same names, numbers within 1e-9."""
    if not isinstance(got, list) or len(got) != len(expected):
        return False
    return all(isinstance(g, tuple) and len(g) == 2 and g[0] == e[0] and _close(1e-9, 1e-9)(g[1], e[1])
               for g, e in zip(got, expected))


def _expected(name: str | None, program: list | None = None, inputs: list | None = None) -> list:
    """The leaves' gradients, from course_lib's autograd on the same graph built of tensors."""
    root, leaves = _build(name, program, inputs, _leaf)
    grads = cl.autograd.grad(root, leaves, allow_unused=True)
    return [0.0 if g is None else float(g) for g in grads]  # an unused leaf keeps grad 0.0


@exercise("03.8", title="run_backward", points=3,
          hint="count each node's users (edges into it) first; then a ready list, starting with the root and "
               "gradient 1. Keep this pass's gradients in a dict keyed by id(node): when a node is popped, add "
               "its total into node.grad and local_grad * total into each parent's entry; a parent whose "
               "count drops to 0 is ready. Never recurse; never zero existing grads.",
          forbid={**_ENGINE_HELPERS, "cl.autograd.backward": cl.autograd.backward,
                  "cl.autograd.grad": cl.autograd.grad})
def _run_backward(rng):
    out = [probe(_leaf_grads, name, expected=_expected(name), compare=_engine_ok(_close(1e-9, 1e-9)),
                 label=f"run_backward(<{name}>); leaf grads") for name in _programs()]
    for _ in range(3):
        n_inputs = int(rng.integers(1, 4))
        program = _random_program(rng, n_inputs, int(rng.integers(10, 40)))
        inputs = [float(v) for v in rng.uniform(0.2, 1.2, size=n_inputs).round(3)]
        out.append(probe(_leaf_grads, None, program, inputs, expected=_expected(None, program, inputs),
                         compare=_engine_ok(_close(1e-9, 1e-9)),
                         label=f"run_backward(<random program of {len(program)} ops on inputs {inputs}>); leaf grads"))
    root, named = _seed_nodes(_leaf)
    grads = cl.autograd.grad(root, [v for _, v in named])
    out.append(probe(_every_grad, expected=[(name, float(g)) for (name, _), g in zip(named, grads)],
                     compare=_engine_ok(_close_pairs),
                     label="run_backward(<seed example>); grads of every Var, the root (which gets 1) first"))
    seed_grads = _expected("seed example")
    out.append(probe(_leaf_grads, "seed example", None, None, 2, expected=[2 * g for g in seed_grads],
                     compare=_engine_ok(_close(1e-9, 1e-9)),
                     label="run_backward twice on the seed example: leaf grads accumulate"))
    return out


# ---------------------------------------------------------------- 03.9 numerical_jacobian

def _jac_functions():
    return {
        "x.sin()": lambda x: x.sin(),
        "x * x.sum()": lambda x: x * x.sum(),
        "x.exp().sum()": lambda x: x.exp().sum(),
        "x @ x.t()": lambda x: x @ x.t(),
        "cl.softmax(x, 0)": lambda x: cl.softmax(x, 0),
        "x ** 3": lambda x: x ** 3,
    }


_JACOBIANS = [("x.sin()", [0.1, 0.7, -1.2]), ("x * x.sum()", [1.0, 2.0, 3.0]), ("x.exp().sum()", [0.5, -0.5]),
              ("x @ x.t()", [[1.0, 2.0], [0.5, -1.0]]), ("cl.softmax(x, 0)", [0.2, -0.3, 1.0, 0.0])]


def _analytic_jacobian(name, data):
    fn = _jac_functions()[name]
    x = _t(data).requires_grad_()
    y = fn(x)
    rows = []
    for k in range(y.numel()):
        go = cl.zeros(tuple(y.shape), dtype=cl.float64)
        go.view(-1)[k] = 1.0
        (g,) = cl.autograd.grad(y, x, go, retain_graph=True)
        rows.append(g.detach().numpy().reshape(-1))
    return np.array(rows).tolist()


def _jacobian(fn, name: str, data):
    """Probe: the learner's numerical Jacobian of function `name` at x = data, as nested lists."""
    return np.asarray(fn(_jac_functions()[name], _t(data)), dtype=np.float64).tolist()


def _side_effects(fn) -> dict:
    """Probe: what numerical_jacobian did besides returning the Jacobian, called on a leaf that requires grad.

    Observations only: x's values and version before and after, whether each call of the function would
    record a graph (grad mode on and an input that requires grad), whether x.grad was set.
    """
    x = _t([0.3, -1.2, 2.0]).requires_grad_()
    before, version = _values(x), x._version
    recorded = []

    def f(t):
        recorded.append(bool(t.requires_grad and cl.is_grad_enabled()))
        return t.sin() * t
    fn(f, x)
    return {"values": [before, _values(x)], "versions": [version, x._version], "recorded": recorded,
            "grad_set": x.grad is not None}


def _no_side_effects(got, expected=None) -> bool | str:
    problems = []
    (before, after), (v0, v1), recorded = got["values"], got["versions"], got["recorded"]
    if after != before:
        problems.append(f"x's values changed to {after}")
    if v1 != v0:
        problems.append(f"x._version went from {v0} to {v1}: x was written in place")
    if any(recorded):
        problems.append(f"fn recorded a graph in {sum(recorded)} of its {len(recorded)} calls")
    if got["grad_set"]:
        problems.append("x.grad was set")
    if not recorded:
        problems.append("fn was never called")
    return "; ".join(problems) or True


@exercise("03.9", title="numerical_jacobian", points=2,
          hint="for each input element j: add eps, evaluate, subtract eps, evaluate, restore; column j is "
               "(f(x+eps) - f(x-eps)) / (2*eps), flattened (central, not forward, differences). The result has "
               "shape (f(x).numel(), x.numel()). Work under no_grad on a float64 copy of x (x.detach().clone()), "
               "never on x itself.")
def _numerical_jacobian(rng):
    table = list(_JACOBIANS)
    for name in ("x.sin()", "x * x.sum()", "cl.softmax(x, 0)"):
        table.append((name, [float(v) for v in rng.uniform(-1.5, 1.5, size=int(rng.integers(2, 5))).round(2)]))
    out = [probe(_jacobian, name, data, expected=_analytic_jacobian(name, data), compare=_close(1e-5, 1e-6),
                 label=f"numerical_jacobian(lambda x: {name}, x={data})") for name, data in table]
    # A forward difference (f(x+eps) - f(x)) / eps is off by about eps/2 * f'': 3e-6 * x here, far more than
    # the central difference's error (below 1e-9 relative), so the tolerance tells them apart.
    data = [1.0, 2.0, -1.5]
    out.append(probe(_jacobian, "x ** 3", data, expected=_analytic_jacobian("x ** 3", data),
                     compare=_close(1e-7, 1e-9),
                     label=f"numerical_jacobian(lambda x: x ** 3, x={data}) to 1e-7, as central differences give"))
    out.append(probe(_side_effects, expected="no side effects", compare=_no_side_effects,
                     label="numerical_jacobian(lambda t: t.sin() * t, x) with x a leaf that requires grad: "
                           "what else it did"))
    return out


# ---------------------------------------------------------------- 03.10 Softplus

def _softplus_ref(v: float) -> float:
    return math.log1p(math.exp(v))


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


def _sp_is_function(S) -> bool:
    return issubclass(S, cl.autograd.Function)


def _sp_forward(S, data) -> Any:
    return _values(S.apply(_t(data)))


def _sp_node_name(S, data) -> str:
    return type(S.apply(_t(data).requires_grad_()).grad_fn).__name__


def _sp_gradient(S, data, weights) -> Any:
    x = _t(data).requires_grad_()
    (S.apply(x) * _t(weights)).sum().backward()
    return _values(x.grad)


def _sp_saved(S, data) -> int:
    return len(S.apply(_t(data).requires_grad_()).grad_fn.saved_tensors)


def _sp_gradcheck(S, data) -> bool:
    x = _t(data).requires_grad_()
    return bool(cl.autograd.gradcheck(S.apply, (x,), raise_exception=False))


def _sp_no_graph(S, data) -> bool:
    return S.apply(_t(data)).grad_fn is None


@exercise("03.10", title="Softplus", points=3,
          hint="forward: save x with ctx.save_for_backward(x) and return (x.exp() + 1).log(); backward: "
               "(x,) = ctx.saved_tensors and return grad * x.sigmoid(). Call it as Softplus.apply(x).")
def _softplus(rng):
    data = [-2.0, -0.5, 0.0, 0.5, 3.0] + [float(v) for v in rng.uniform(-4, 4, size=3).round(2)]
    weights = [1.0, 2.0, 3.0, 4.0, 5.0] + [float(v) for v in rng.uniform(-2, 2, size=3).round(2)]
    return [
        probe(_sp_is_function, expected=True, label="issubclass(Softplus, autograd.Function)"),
        probe(_sp_forward, data, expected=[_softplus_ref(v) for v in data], compare=_close(),
              label=f"Softplus.apply(tensor({data}))"),
        probe(_sp_node_name, data, expected="SoftplusBackward", label="type(Softplus.apply(x).grad_fn).__name__"),
        probe(_sp_gradient, data, weights, expected=[w * _sigmoid(v) for w, v in zip(weights, data)],
              compare=_close(), label=f"x.grad after (Softplus.apply(x) * {weights}).sum().backward()"),
        probe(_sp_saved, data, expected=1, label="len(Softplus.apply(x).grad_fn.saved_tensors)"),
        probe(_sp_gradcheck, [0.3, -1.1, 2.0], expected=True, label="gradcheck(Softplus.apply, x)"),
        probe(_sp_no_graph, data, expected=True,
              label="Softplus.apply(x) records nothing when x does not require grad"),
    ]
