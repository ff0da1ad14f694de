"""Checks for chapter 03 (autograd).

Expected values come from course_lib's own autograd (``course_lib.autograd.grad``)
or from literals; the learner's object is only ever the thing being tested.
Tensors are compared as nested lists of floats with a small tolerance, so a
failure message shows numbers, not reprs.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from course.checks import Case, exercise

# ---------------------------------------------------------------- helpers


def _cl():
    import course_lib

    return course_lib


def _t(data) -> Any:
    return _cl().tensor(data, dtype=_cl().float64)


def _values(x) -> Any:
    """A tensor, numpy array or number as nested lists of floats (None stays None)."""
    import numpy as np

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
    import numpy as np

    def cmp(got, expected) -> bool:
        if expected is None or got is None:
            return got is None and expected is None
        if isinstance(expected, tuple):
            return isinstance(got, tuple) and len(got) == len(expected) and all(
                cmp(g, e) for g, e in zip(got, expected))
        if isinstance(got, tuple):
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
    cl = _cl()
    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    out = f(*leaves)
    gs = cl.autograd.grad(out, leaves, grad, allow_unused=True)
    return tuple(_values(g) for g in gs)


def _formula_case(fn, name: str, args: tuple, expected) -> Case:
    import copy

    def run():
        return _values(fn(*copy.deepcopy(args)))
    return Case(_label(name, *args), run, expected, compare=_close())


# ---------------------------------------------------------------- 03.1 mul

_MUL = [
    ([1.0, 1.0, 1.0], [2.0, -1.0, 0.5], [3.0, 4.0, -2.0]),
    ([0.5, -2.0], [1.5, 2.5], [-1.0, 3.0]),
    ([[1.0, 2.0], [3.0, 4.0]], [[0.1, 0.2], [0.3, 0.4]], [[5.0, 6.0], [7.0, 8.0]]),
    (2.0, 3.0, -4.0),
]


@exercise("03.1", title="mul_backward", points=1,
          hint="z = x * y, so dz/dx = y and dz/dy = x; multiply each by the incoming grad and return "
               "(grad_x, grad_y) in that order.")
def _mul_backward(mul_backward):
    out = []
    for g, x, y in _MUL:
        args = (_t(g), _t(x), _t(y))
        out.append(_formula_case(mul_backward, "mul_backward", args,
                                 _ref_grads(lambda a, b: a * b, [args[1], args[2]], args[0])))
    return out


# ---------------------------------------------------------------- 03.2 div

_DIV = [
    ([1.0, 1.0, 1.0], [2.0, -1.0, 0.5], [4.0, 2.0, -0.5]),
    ([0.5, -2.0], [3.0, 2.5], [-1.0, 3.0]),
    ([[1.0, 2.0], [3.0, 4.0]], [[0.1, 0.2], [0.3, 0.4]], [[5.0, 6.0], [7.0, 8.0]]),
    (3.0, 1.0, 2.0),
]


@exercise("03.2", title="div_backward", points=1,
          hint="z = x / y: dz/dx = 1 / y and dz/dy = -x / y**2; multiply both by grad.")
def _div_backward(div_backward):
    out = []
    for g, x, y in _DIV:
        args = (_t(g), _t(x), _t(y))
        out.append(_formula_case(div_backward, "div_backward", args,
                                 _ref_grads(lambda a, b: a / b, [args[1], args[2]], args[0])))
    return out


# ---------------------------------------------------------------- 03.3 log

_LOG = [
    ([1.0, 1.0, 1.0], [2.0, 0.5, 10.0]),
    ([0.5, -2.0], [3.0, 0.25]),
    ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [4.0, 8.0]]),
    (0.14112000167369843, 6.0),
]


@exercise("03.3", title="log_backward", points=1,
          hint="d log(x)/dx = 1/x: return grad / x (one tensor, not a tuple).")
def _log_backward(log_backward):
    out = []
    for g, x in _LOG:
        args = (_t(g), _t(x))
        out.append(_formula_case(log_backward, "log_backward", args,
                                 _ref_grads(lambda a: a.log(), [args[1]], args[0])[0]))
    return out


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
    cl = _cl()
    n = 1
    for s in shape:
        n *= s
    return cl.arange(1.0, n + 1.0, dtype=cl.float64).reshape(shape) if shape else _t(1.5)


@exercise("03.4", title="unbroadcast", points=2,
          hint="first sum away the leading dims that broadcasting added (grad.dim() - len(shape) of them), then "
               "sum with keepdim=True every dim where shape has a 1 but grad does not.")
def _unbroadcast(unbroadcast):
    cl = _cl()
    out = []
    for gshape, shape in _UNBROADCAST:
        g = _grad_of(gshape)
        x = cl.zeros(shape, dtype=cl.float64)
        expected = _ref_grads(lambda a: a.expand(gshape) * 1, [x], g)[0]
        out.append(Case(f"unbroadcast(grad of shape {gshape}, {shape})",
                        lambda g=g, shape=shape: _values(unbroadcast(g.clone(), shape)), expected,
                        compare=_close()))
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
def _sum_backward(sum_backward):
    cl = _cl()
    out = []
    for shape, dim, keepdim in _SUM:
        x = cl.zeros(shape, dtype=cl.float64)
        fwd = (lambda a, dim=dim, keepdim=keepdim: a.sum() if dim is None else a.sum(dim, keepdim=keepdim))
        gshape = tuple(fwd(x).shape)
        g = _grad_of(gshape)
        expected = _ref_grads(fwd, [x], g)[0]
        out.append(Case(f"sum_backward(grad of shape {gshape}, input_shape={shape}, dim={dim}, keepdim={keepdim})",
                        lambda g=g, shape=shape, dim=dim, keepdim=keepdim: _values(
                            sum_backward(g.clone(), shape, dim, keepdim)), expected, compare=_close()))
    return out


# ---------------------------------------------------------------- 03.6 matmul

_MM = [((2, 3), (3, 4)), ((1, 2), (2, 1)), ((3, 1), (1, 3)), ((4, 4), (4, 2))]


@exercise("03.6", title="matmul_backward", points=2,
          hint="C = A @ B: dA = grad @ B.T and dB = A.T @ grad. Check the shapes: dA must be A's shape.")
def _matmul_backward(matmul_backward):
    import numpy as np

    cl = _cl()
    rng = np.random.default_rng(3)
    out = []
    for sa, sb in _MM:
        a = cl.tensor(rng.standard_normal(sa).round(2), dtype=cl.float64)
        b = cl.tensor(rng.standard_normal(sb).round(2), dtype=cl.float64)
        g = cl.tensor(rng.standard_normal((sa[0], sb[1])).round(2), dtype=cl.float64)
        out.append(_formula_case(matmul_backward, "matmul_backward", (g, a, b),
                                 _ref_grads(lambda x, y: x @ y, [a, b], g)))
    return out


# ---------------------------------------------------------------- 03.7 topological_sort

def _graphs():
    """(label, root node) of a few backward graphs, built with course_lib."""
    cl = _cl()
    out = []
    x1 = cl.tensor(2.0, requires_grad=True)
    x2 = cl.tensor(3.0, requires_grad=True)
    out.append(("the seed example log(x1*x2)*sin(x2)", (cl.log(x1 * x2) * cl.sin(x2)).grad_fn))
    x = cl.tensor(1.0, requires_grad=True)
    a = x * 2
    out.append(("diamond: a=x*2; a.sin()+a.exp()+a*a", (a.sin() + a.exp() + a * a).grad_fn))
    b = x * 3
    out.append(("skip connection: b=x*3; b + b.exp().sin()", (b + b.exp().sin()).grad_fn))
    y = x
    for _ in range(30):
        y = y + y
    out.append(("ladder: y=y+y thirty times", y.grad_fn))
    y = x
    for _ in range(3000):
        y = y * 1.0
    out.append(("chain of 3000 muls (no recursion!)", y.grad_fn))
    w = cl.ones(3, requires_grad=True)
    h = (w * 2).relu()
    out.append(("two outputs reused: h=(w*2).relu(); (h*h).sum()+h.sum()", ((h * h).sum() + h.sum()).grad_fn))
    return out


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


def _order_problem(root, order) -> str:
    """'' if ``order`` is a valid backward order of the graph below ``root``, else what is wrong."""
    if not isinstance(order, list):
        return f"expected a list of nodes, got {type(order).__name__}"
    nodes = _reachable(root)
    pos = {}
    for i, n in enumerate(order):
        if id(n) in pos:
            return f"{type(n).__name__} appears twice (at {pos[id(n)]} and {i})"
        pos[id(n)] = i
    missing = [type(n).__name__ for n in nodes if id(n) not in pos]
    if missing:
        return f"missing {len(missing)} node(s), e.g. {missing[0]}"
    if len(order) != len(nodes):
        return f"{len(order) - len(nodes)} node(s) that are not in the graph"
    if order[0] is not root:
        return "the root (output's grad_fn) must come first"
    for n in nodes:
        for nxt, _ in n.next_functions:
            if nxt is not None and pos[id(nxt)] < pos[id(n)]:
                return (f"{type(nxt).__name__} (position {pos[id(nxt)]}) comes before {type(n).__name__} "
                        f"(position {pos[id(n)]}), which passes it a gradient")
    return ""


@exercise("03.7", title="topological_sort", points=3,
          hint="count, for every node, how many edges point into it (one pass over next_functions); start "
               "from the root; a node goes into the order when its count drops to 0. Use a list as a stack, not "
               "recursion: graphs can be thousands of nodes deep.")
def _topological_sort(topological_sort):
    out = []
    for label, root in _graphs():
        def run(root=root):
            return _order_problem(root, topological_sort(root)) or "a valid order"
        out.append(Case(f"topological_sort(<{label}>)", run, "a valid order"))
    return out


# ---------------------------------------------------------------- 03.8 run_backward

class _Visits:
    """How many more times the learner's code may read ``Var.parents`` in the case that is running.

    A correct engine reads each node's parents a few times (counting users, then passing gradients on),
    so the reads grow with the number of nodes. One that passes a partial gradient on every time it
    reaches a node reads them once per *path*: 2**40 times for ``y = y + y`` repeated 40 times. Past
    the budget the read raises, so such an engine fails at once instead of running for hours.
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


def _reference_backward(root) -> None:
    """The engine loop, done right (the answer to 03.8 is not read from here: it is our reference)."""
    users: dict = {}
    stack, seen = [root], {id(root)}
    while stack:
        n = stack.pop()
        for p in n.parents:
            users[id(p)] = users.get(id(p), 0) + 1
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    grads = {id(root): 1.0}
    ready = [root]
    while ready:
        n = ready.pop()
        g = grads.pop(id(n), 0.0)
        n.grad += g
        for p, local in zip(n.parents, n.local_grads):
            grads[id(p)] = grads.get(id(p), 0.0) + local * g
            users[id(p)] -= 1
            if users[id(p)] == 0:
                ready.append(p)


def _programs():
    """(label, build() -> (root, leaves))."""
    def seed():
        x1, x2 = Var(2.0), Var(3.0)
        return (x1 * x2).log() * x2.sin(), [x1, x2]

    def diamond():
        x = Var(1.5)
        a = x * Var(2.0)
        return a.sin() + a * a + a.log(), [x]

    def reuse():
        x = Var(0.5)
        y = x
        for _ in range(20):
            y = y + y
        return y, [x]

    def ladder():
        x = Var(0.5)
        y = x
        for _ in range(40):
            y = y + y
        return y, [x]

    def deep_diamonds():
        x = Var(0.3)
        a = x
        for _ in range(40):
            a = a.sin() + a * Var(0.5)
        return a, [x]

    def chain():
        x = Var(1.0)
        y = x
        for _ in range(3000):
            y = y * Var(1.0)
        return y, [x]

    def shared_leaf():
        x, w = Var(2.0), Var(-1.0)
        h = x * w
        return h * h + h * x + w, [x, w]

    return [("seed example", seed), ("diamond a=x*2; a.sin()+a*a+a.log()", diamond),
            ("y=y+y twenty times", reuse), ("y=y+y forty times: 2**40 paths, 41 nodes", ladder),
            ("a = a.sin() + a*0.5, forty diamonds deep", deep_diamonds),
            ("chain of 3000 products", chain), ("h=x*w; h*h+h*x+w", shared_leaf)]


def _count_nodes(root) -> int:
    seen, stack = {id(root)}, [root]
    while stack:
        for p in stack.pop()._parents:
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    return len(seen)


def _within_budget(root, fn) -> None:
    """``fn(root)`` with a budget of parent reads proportional to the graph's size (see ``_Visits``)."""
    n = _count_nodes(root)
    _Visits.nodes, _Visits.limit = n, 20 * n + 100
    _Visits.left = _Visits.limit
    try:
        fn(root)
    finally:
        _Visits.left = None


def _seed_nodes() -> tuple:
    """The seed example with a name for every Var: (root, [(name, var), ...]) root first."""
    x1, x2 = Var(2.0), Var(3.0)
    a = x1 * x2
    y1, y2 = a.log(), x2.sin()
    w = y1 * y2
    return w, [("root w", w), ("y1", y1), ("y2", y2), ("a", a), ("x1", x1), ("x2", x2)]


def _close_pairs(got, expected) -> bool:
    """[(name, number), ...] with the same names, numbers within 1e-9."""
    if not isinstance(got, list) or len(got) != len(expected):
        return False
    return all(isinstance(g, tuple) and len(g) == 2 and g[0] == e[0] and _close(1e-9, 1e-9)(g[1], e[1])
               for g, e in zip(got, expected))


def _expected(build) -> list:
    root, leaves = build()
    _reference_backward(root)
    return [lf.grad for lf in leaves]


@exercise("03.8", title="run_backward", points=3,
          hint="count each node's users (edges into it) first; then a ready list, starting with the root and "
               "gradient 1. Keep this pass's gradients in a dict keyed by id(node): when a node is popped, add "
               "its total into node.grad and local_grad * total into each parent's entry; a parent whose "
               "count drops to 0 is ready. Never recurse; never zero existing grads.")
def _run_backward(run_backward):
    out = []
    for label, build in _programs():
        expected = _expected(build)

        def run(build=build):
            root, leaves = build()
            _within_budget(root, run_backward)
            return [lf.grad for lf in leaves]
        out.append(Case(f"run_backward(<{label}>); leaf grads", run, expected, compare=_close(1e-9, 1e-9)))

    def every_node():
        root, named = _seed_nodes()
        _within_budget(root, run_backward)
        return [(name, v.grad) for name, v in named]
    root, named = _seed_nodes()
    _reference_backward(root)
    out.append(Case("run_backward(<seed example>); grads of every Var, the root (which gets 1) first", every_node,
                    [(name, v.grad) for name, v in named], compare=_close_pairs))

    def twice():
        x1, x2 = Var(2.0), Var(3.0)
        root = (x1 * x2).log() * x2.sin()
        _within_budget(root, run_backward)
        _within_budget(root, run_backward)
        return [x1.grad, x2.grad]
    seed_grads = _expected(_programs()[0][1])
    out.append(Case("run_backward twice on the seed example: leaf grads accumulate", twice,
                    [2 * g for g in seed_grads], compare=_close(1e-9, 1e-9)))
    return out


# ---------------------------------------------------------------- 03.9 numerical_jacobian

def _jac_functions():
    cl = _cl()
    return [
        ("x.sin()", lambda x: x.sin(), [0.1, 0.7, -1.2]),
        ("x * x.sum()", lambda x: x * x.sum(), [1.0, 2.0, 3.0]),
        ("x.exp().sum()", lambda x: x.exp().sum(), [0.5, -0.5]),
        ("x @ x.t()", lambda x: x @ x.t(), [[1.0, 2.0], [0.5, -1.0]]),
        ("cl.softmax(x, 0)", lambda x: cl.softmax(x, 0), [0.2, -0.3, 1.0, 0.0]),
    ]


def _analytic_jacobian(fn, data):
    import numpy as np

    cl = _cl()
    x = _t(data).requires_grad_()
    y = fn(x)
    rows = []
    for k in range(y.numel()):
        go = cl.zeros(tuple(y.shape), dtype=cl.float64)
        go.view(-1)[k] = 1.0
        (g,) = cl.autograd.grad(y, x, go, retain_graph=True)
        rows.append(g.detach().numpy().reshape(-1))
    return np.array(rows).tolist()


def _side_effects(numerical_jacobian) -> list:
    """What numerical_jacobian did besides returning the Jacobian, called on a leaf that requires grad.

    It must not change x (its values or its version counter: no in-place writes, even undone) and must not
    record a graph: fn must never see a tensor that requires grad.
    """
    cl = _cl()
    x = _t([0.3, -1.2, 2.0]).requires_grad_()
    before, version = _values(x), x._version
    recorded = []   # per call of fn: would its ops record a graph? (grad mode on and an input that requires grad)

    def fn(t):
        recorded.append(bool(t.requires_grad and cl.is_grad_enabled()))
        return t.sin() * t
    numerical_jacobian(fn, x)
    problems = []
    if _values(x) != before:
        problems.append(f"x's values changed to {_values(x)}")
    if x._version != version:
        problems.append(f"x._version went from {version} to {x._version}: x was written in place")
    if any(recorded):
        problems.append(f"fn recorded a graph in {sum(recorded)} of its {len(recorded)} calls")
    if x.grad is not None:
        problems.append("x.grad was set")
    if not recorded:
        problems.append("fn was never called")
    return problems


@exercise("03.9", title="numerical_jacobian", points=2,
          hint="for each input element j: add eps, evaluate, subtract eps, evaluate, restore; column j is "
               "(f(x+eps) - f(x-eps)) / (2*eps), flattened (central, not forward, differences). The result has "
               "shape (f(x).numel(), x.numel()). Work under no_grad on a float64 copy of x (x.detach().clone()), "
               "never on x itself.")
def _numerical_jacobian(numerical_jacobian):
    import numpy as np

    out = []
    for label, fn, data in _jac_functions():
        expected = _analytic_jacobian(fn, data)

        def run(fn=fn, data=data):
            j = numerical_jacobian(fn, _t(data))
            return np.asarray(j, dtype=np.float64).tolist()
        out.append(Case(f"numerical_jacobian(lambda x: {label}, x={data})", run, expected,
                        compare=_close(1e-5, 1e-6)))
    # A forward difference (f(x+eps) - f(x)) / eps is off by about eps/2 * f'': 3e-6 * x here, far more than
    # the central difference's error (below 1e-9 relative), so the tolerance tells them apart.
    data = [1.0, 2.0, -1.5]
    out.append(Case(f"numerical_jacobian(lambda x: x ** 3, x={data}) to 1e-7, as central differences give",
                    lambda: np.asarray(numerical_jacobian(lambda x: x ** 3, _t(data)), dtype=np.float64).tolist(),
                    _analytic_jacobian(lambda x: x ** 3, data), compare=_close(1e-7, 1e-9)))
    out.append(Case("numerical_jacobian(lambda t: t.sin() * t, x) with x a leaf that requires grad: "
                    "what else it did", lambda: _side_effects(numerical_jacobian), []))
    return out


# ---------------------------------------------------------------- 03.10 Softplus

def _softplus_ref(v: float) -> float:
    return math.log1p(math.exp(v))


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


@exercise("03.10", title="Softplus", points=3,
          hint="forward: save x with ctx.save_for_backward(x) and return (x.exp() + 1).log(); backward: "
               "(x,) = ctx.saved_tensors and return grad * x.sigmoid(). Call it as Softplus.apply(x).")
def _softplus(Softplus):
    cl = _cl()
    data = [-2.0, -0.5, 0.0, 0.5, 3.0]

    def forward():
        return _values(Softplus.apply(_t(data)))

    def is_function():
        return issubclass(Softplus, cl.autograd.Function)

    def node_name():
        x = _t(data).requires_grad_()
        return type(Softplus.apply(x).grad_fn).__name__

    def gradient():
        x = _t(data).requires_grad_()
        (Softplus.apply(x) * _t([1.0, 2.0, 3.0, 4.0, 5.0])).sum().backward()
        return _values(x.grad)

    def saves_input():
        x = _t(data).requires_grad_()
        y = Softplus.apply(x)
        return len(y.grad_fn.saved_tensors)

    def passes_gradcheck():
        x = _t([0.3, -1.1, 2.0]).requires_grad_()
        return bool(cl.autograd.gradcheck(Softplus.apply, (x,), raise_exception=False))

    def no_grad_input():
        return _t(data).requires_grad is False and Softplus.apply(_t(data)).grad_fn is None

    return [
        Case("issubclass(Softplus, autograd.Function)", is_function, True),
        Case(f"Softplus.apply(tensor({data}))", forward, [_softplus_ref(v) for v in data], compare=_close()),
        Case("type(Softplus.apply(x).grad_fn).__name__", node_name, "SoftplusBackward"),
        Case("x.grad after (Softplus.apply(x) * [1, 2, 3, 4, 5]).sum().backward()", gradient,
             [w * _sigmoid(v) for w, v in zip([1.0, 2.0, 3.0, 4.0, 5.0], data)], compare=_close()),
        Case("len(Softplus.apply(x).grad_fn.saved_tensors)", saves_input, 1),
        Case("gradcheck(Softplus.apply, x)", passes_gradcheck, True),
        Case("Softplus.apply(x) records nothing when x does not require grad", no_grad_input, True),
    ]
