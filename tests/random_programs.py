"""Seeded random small course_lib programs, run eagerly and compiled, compared call by call.

``generate_program(seed)`` writes a small program as Python source: a ``build()`` that returns a
function (a closure over Python constants and tensors) or an ``nn.Module`` whose ``forward`` is the
body. The body is 2-12 statements drawn from pointwise ops and methods, reductions, views, matmul,
branches on tensor values, ``for`` loops, ``.item()``/``.tolist()`` in Python arithmetic, prints,
appends to an outer list, writes to an outer object, to a module attribute and to a global, reads
of globals the harness changes between calls, calls of a nested compiled helper, and now and then an
op that raises. Shapes are tracked while generating (with numpy arrays of the same shape standing in
for the tensors) so most statements are valid; the sizes are symbols (``n``, ``m``, ``k``, ``p``)
so a later call can bind them to new values.

``check_program(program, compile_fn, backend)`` executes the source twice, in two fresh namespaces,
calls the eager build and the compiled build on the program's 3-5 input sets (new values, new
shapes, changed globals, no_grad, a dtype or requires_grad change) and compares, after every call:
the returned value or the raised exception (type and message), the captured stdout, the outer list,
the outer object's and the module's attributes, the globals the program writes, and the ``.grad`` of
every input and leaf after ``backward()`` of the result. Values are compared exactly for the "eager"
backend and with a tolerance for the others. A difference raises :class:`Divergence`, whose message
holds the seed, the backend, the call and the numbered source.
"""

from __future__ import annotations

import contextlib
import functools
import io
import linecache
import math
import random
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import course_lib as cl

SIZE_SYMBOLS = ("n", "m", "k", "p")

# Where a generated program's namespace gets the compile function for its nested helper.
COMPILE_NAME = "COMPILE"


@dataclass(frozen=True)
class ArgSpec:
    """One tensor argument: its dims (size symbols or literal 1), dtype and requires_grad."""

    name: str
    dims: tuple[str | int, ...]
    dtype: str
    requires_grad: bool


@dataclass(frozen=True)
class CallSpec:
    """One call of a program: sizes bound to the symbols, per-argument dtype and requires_grad,
    globals assigned before the call, grad mode and the seed of the argument values."""

    note: str
    sizes: dict[str, int]
    dtypes: tuple[str, ...]
    requires_grad: tuple[bool, ...]
    globals: dict[str, Any]
    no_grad: bool
    value_seed: int


@dataclass(frozen=True)
class Program:
    """A generated program: its source, kind ("function" or "module"), arguments and calls."""

    seed: int
    source: str
    kind: str
    args: tuple[ArgSpec, ...]
    calls: tuple[CallSpec, ...]
    features: frozenset[str]

    @property
    def filename(self) -> str:
        return f"<random program {self.seed}>"

    def numbered_source(self) -> str:
        return "\n".join(f"{i:3d}  {line}" for i, line in enumerate(self.source.splitlines(), 1))


class Divergence(AssertionError):
    """The compiled program did something the eager one did not."""


# --------------------------------------------------------------------------------------------
# generator
# --------------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return repr(float(x))


def _promote(*arrays: np.ndarray) -> np.dtype:
    """torch's dtype promotion between float32/float64 tensors: dimensioned tensors decide,
    0-d tensors only when every operand is 0-d."""
    dimensioned = [a.dtype for a in arrays if a.ndim > 0]
    pool = dimensioned or [a.dtype for a in arrays]
    return np.dtype(np.float64) if np.dtype(np.float64) in pool else np.dtype(np.float32)


def _proxy(shape: Sequence[int], dtype: np.dtype | str) -> np.ndarray:
    return np.zeros(tuple(shape), dtype=dtype)


def _broadcast(x: np.ndarray, y: np.ndarray) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(x.shape, y.shape))
    except ValueError:
        return None


@dataclass
class _Scope:
    """Variables visible at a point of the generated body: tensors (with a proxy) and floats."""

    tensors: dict[str, np.ndarray] = field(default_factory=dict)
    floats: list[str] = field(default_factory=list)
    ints: list[str] = field(default_factory=list)

    def copy(self) -> _Scope:
        return _Scope(dict(self.tensors), list(self.floats), list(self.ints))


#: from this seed on, most inner ``backward()`` calls free the graph (no ``retain_graph``), and programs also
#: apply a custom ``autograd.Function`` and register tensor hooks: the programs that exercise a backward compiled
#: into the graph (``config.compiled_autograd``) and what must keep it with the engine; lower seeds are unchanged
FREEING_BACKWARD_SEEDS = 500_000


class _Generator:
    """Writes one random program; ``features`` records what it used (for the coverage test)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.features: set[str] = set()
        self.lines: list[str] = []
        self.counter = 0
        self.kind = "module" if self.rng.random() < 0.3 else "function"
        self.uses_global_counter = False
        self.uses_nonlocal_counter = False
        self.uses_helper = False
        self.closure_tensors: list[tuple[str, np.ndarray, bool]] = []
        self.closure_consts: dict[str, float] = {}
        self.sizes: dict[str, int] = {}
        self.statements_left = 0

    # ---- helpers ------------------------------------------------------------------------------
    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))]

    def literal_tensor(self, shape: tuple[int, ...], dtype: str, requires_grad: bool) -> str:
        values = np.round(np.array([self.rng.uniform(-2, 2) for _ in range(int(np.prod(shape)))]), 2)
        nested = values.reshape(shape).tolist()
        rg = ", requires_grad=True" if requires_grad else ""
        return f"cl.tensor({nested!r}, dtype=cl.{dtype}{rg})"

    def scalar(self, scope: _Scope) -> str:
        """A Python number: a literal, a closure or global constant, a module attribute, a float
        read from a tensor, the call counter or a loop index."""
        choices: list[tuple[float, Callable[[], str]]] = [
            (4.0, lambda: _fmt(self.pick([0.5, 2.0, 1.5, -1.0, 0.25, 3.0, -0.75]))),
            (1.0, lambda: self.feature("global_const", "K")),
        ]
        if self.closure_consts and self.kind == "function":
            choices.append((1.0, lambda: self.feature("closure_const", self.pick(list(self.closure_consts)))))
        if self.kind == "module":
            choices.append((1.0, lambda: self.feature("module_attr_read", "self.scale")))
        if scope.floats:
            choices.append((1.5, lambda: self.pick(scope.floats)))
        if scope.ints:
            choices.append((1.0, lambda: self.pick(scope.ints)))
        if self.uses_global_counter:
            choices.append((0.5, lambda: "CALLS"))
        if self.uses_nonlocal_counter:
            choices.append((0.5, lambda: "calls"))
        total = sum(w for w, _ in choices)
        r = self.rng.random() * total
        for w, make in choices:
            r -= w
            if r <= 0:
                return make()
        return choices[-1][1]()

    def feature(self, name: str, value: str = "") -> str:
        self.features.add(name)
        return value

    def tensor_var(self, scope: _Scope, pred: Callable[[np.ndarray], bool] | None = None) -> str | None:
        names = [n for n, p in scope.tensors.items() if pred is None or pred(p)]
        if not names:
            return None
        # Prefer recent variables so programs chain rather than fan out from the arguments.
        weights = [1.0 + i for i in range(len(names))]
        return self.rng.choices(names, weights)[0]

    def assign(self, depth: int, scope: _Scope, expr: str, proxy: np.ndarray, target: str | None = None) -> str:
        name = target or self.fresh()
        self.emit(depth, f"{name} = {expr}")
        scope.tensors[name] = proxy
        return name

    # ---- statements ---------------------------------------------------------------------------
    def st_unary(self, depth: int, scope: _Scope, target: str | None = None, x: str | None = None) -> bool:
        x = x or self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        lo = round(self.rng.uniform(-1.5, 0), 2)
        hi = round(self.rng.uniform(0, 1.5), 2)
        forms = [
            ("{x}.abs()", "abs"), ("cl.abs({x})", "abs"), ("{x}.exp()", "exp"),
            ("cl.exp({x}.clamp(max=4.0))", "exp"), ("{x}.sin()", "sin"), ("cl.sin({x})", "sin"),
            ("{x}.tanh()", "tanh"), ("cl.tanh({x})", "tanh"), ("F.relu({x})", "relu"),
            ("{x}.relu()", "relu"), ("cl.sigmoid({x})", "sigmoid"), ("{x}.sigmoid()", "sigmoid"),
            (f"{{x}}.clamp(min={lo}, max={hi})", "clamp"), (f"{{x}}.clamp(min={lo})", "clamp"),
            (f"cl.clamp({{x}}, max={hi})", "clamp"), ("{x}.pow(2)", "pow"), ("{x} ** 2", "pow"),
            ("{x}.abs().pow(0.5)", "pow"), ("-{x}", "neg"), ("{x} * {c}", "scalar_arith"),
            ("{x} + {c}", "scalar_arith"), ("{x} - {c}", "scalar_arith"), ("{x} / {c}", "scalar_arith"),
            ("{c} - {x}", "scalar_arith"), ("cl.where({x} > {c}, {x}, {x} * 0.5)", "where"),
        ]
        form, feat = self.pick(forms)
        self.features.add(feat)
        expr = form.format(x=x, c=self.scalar(scope) if "{c}" in form else "")
        self.assign(depth, scope, expr, _proxy(p.shape, p.dtype), target)
        return True

    def st_binary(self, depth: int, scope: _Scope) -> bool:
        pairs = [(x, y) for x in scope.tensors for y in scope.tensors
                 if _broadcast(scope.tensors[x], scope.tensors[y]) is not None]
        if not pairs:
            return False
        x, y = self.pick(pairs)
        px, py = scope.tensors[x], scope.tensors[y]
        shape = _broadcast(px, py)
        assert shape is not None
        if px.shape != py.shape:
            self.features.add("broadcast")
        form = self.pick([
            "{x} + {y}", "{x} - {y}", "{x} * {y}", "{x} / ({y}.abs() + 1)", "cl.add({x}, {y})",
            "cl.mul({x}, {y})", "cl.where({x} > {y}, {x}, {y})", "{x} * {y} + {x}",
        ])
        self.features.add("binary")
        self.assign(depth, scope, form.format(x=x, y=y), _proxy(shape, _promote(px, py)))
        return True

    def st_factory(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        form = self.pick(["{x} + cl.ones_like({x})", "{x} * cl.full_like({x}, 0.5)",
                          "cl.zeros_like({x}) - {x}", "{x} + cl.tensor(0.25)"])
        self.features.add("factory")
        self.assign(depth, scope, form.format(x=x), _proxy(p.shape, p.dtype))
        return True

    def st_reduction(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        op = self.pick(["sum", "mean", "amax"])
        self.features.add("reduction")
        if p.ndim == 0 or self.rng.random() < 0.3:
            if p.ndim == 0 and self.rng.random() < 0.5:
                d = self.pick([0, -1])
                self.assign(depth, scope, f"{x}.{op}(dim={d})", _proxy((), p.dtype))
            else:
                if op == "amax" and p.size == 0:
                    return False
                self.assign(depth, scope, self.pick([f"{x}.{op}()", f"cl.{op}({x})"]), _proxy((), p.dtype))
            return True
        keep = self.rng.random() < 0.4
        if p.ndim >= 2 and self.rng.random() < 0.25:
            dims: tuple[int, ...] = tuple(sorted(self.rng.sample(range(p.ndim), 2)))
            dim_src = repr(dims)
        else:
            d = self.rng.randrange(-p.ndim, p.ndim)
            dims = (d % p.ndim,)
            dim_src = str(d)
        if op == "amax" and any(p.shape[d] == 0 for d in dims):
            return False
        shape = [s if i not in dims else 1 for i, s in enumerate(p.shape)]
        if not keep:
            shape = [s for i, s in enumerate(shape) if i not in dims]
        kw = ", keepdim=True" if keep else ""
        self.features.add("reduction_dim")
        self.assign(depth, scope, f"{x}.{op}(dim={dim_src}{kw})", _proxy(shape, p.dtype))
        return True

    def st_view(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        options: list[tuple[str, Callable[[], np.ndarray], str]] = [
            ("{x}.reshape(-1)", lambda: p.reshape(-1), "reshape"),
            ("{x}.unsqueeze({d})", lambda: np.expand_dims(p, d_unsq), "unsqueeze"),
            ("{x}.T", lambda: p.T, "transpose_T"),  # warns unless 2-D
        ]
        d_unsq = self.rng.randrange(-p.ndim - 1, p.ndim + 1)
        if p.ndim >= 1:
            options += [
                ("{x}[1:]", lambda: p[1:], "slice"),
                ("{x}[..., :2]", lambda: p[..., :2], "slice"),
                ("{x}.reshape({x}.shape[0], -1)", lambda: p.reshape(p.shape[0], -1), "reshape"),
            ]
            if p.shape[0] > 0:
                options.append(("{x}[0]", lambda: p[0], "select"))
        if p.ndim >= 2:
            d0, d1 = self.rng.sample(range(-p.ndim, p.ndim), 2)
            options += [
                (f"{{x}}.transpose({d0}, {d1})", lambda: np.swapaxes(p, d0, d1), "transpose"),
                ("{x}[:, None]", lambda: p[:, None], "slice"),
            ]
            if p.ndim == 2:
                options.append(("{x}.t()", lambda: p.T, "transpose"))
        form, shape_of, feat = self.pick(options)
        try:
            out = shape_of()
        except (ValueError, IndexError):
            return False
        self.features.add("view")
        self.features.add(feat)
        self.assign(depth, scope, form.format(x=x, d=d_unsq), _proxy(out.shape, p.dtype))
        return True

    def st_matmul(self, depth: int, scope: _Scope) -> bool:
        pairs = []
        for x, px in scope.tensors.items():
            for y, py in scope.tensors.items():
                if px.ndim == 0 or py.ndim == 0 or px.dtype != py.dtype:
                    continue
                try:
                    out = np.matmul(px, py)
                except ValueError:
                    continue
                pairs.append((x, y, out))
        if not pairs:
            return False
        x, y, out = self.pick(pairs)
        self.features.add("matmul")
        form = self.pick(["{x} @ {y}", "cl.matmul({x}, {y})", "{x}.matmul({y})"])
        self.assign(depth, scope, form.format(x=x, y=y), _proxy(np.shape(out), scope.tensors[x].dtype))
        return True

    def st_item(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        name = self.fresh("s")
        forms = [f"{x}.sum().item()", f"float({x}.mean())" if p.size else f"{x}.sum().item()"]
        if p.size:
            forms += [f"{x}.reshape(-1)[0].item()", f"{x}.amax().item()"]
        if self.rng.random() < 0.2:
            self.features.add("tolist")
            expr = f"sum({x}.reshape(-1).tolist())"
        else:
            self.features.add("item")
            expr = self.pick(forms)
        self.emit(depth, f"{name} = {expr}")
        scope.floats.append(name)
        if self.rng.random() < 0.3:
            iname = self.fresh("k")
            self.emit(depth, f"{iname} = int(abs({name}) * 2) % 3")
            self.features.add("item_int")
            scope.ints.append(iname)
        return True

    def st_print(self, depth: int, scope: _Scope) -> bool:
        self.features.add("print")
        x = self.tensor_var(scope)
        options = [f'print("step {self.counter}")']
        if x is not None:
            options += [f"print({x})", f'print("{x}:", {x}.shape)', f'print("sum", {x}.sum())']
            self.features.add("print_tensor")
        if scope.floats:
            options.append(f'print(f"value {{{self.pick(scope.floats)}:.4f}}")')
        self.emit(depth, self.pick(options))
        return True

    def st_append(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        options = []
        if x is not None:
            options += [f"LOG.append({x})", f"LOG.append({x}.sum())", f'LOG.append(("shape", tuple({x}.shape)))']
        if scope.floats:
            options.append(f"LOG.append({self.pick(scope.floats)})")
        if not options:
            return False
        self.features.add("append")
        self.emit(depth, self.pick(options))
        return True

    def st_attr(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        options = ["STATE.n += 1", f"STATE.scale = {self.scalar(scope)}"]
        if x is not None:
            options += [f"STATE.last = {x}", f"STATE.total = STATE.n * {x}.sum()"]
        if self.kind == "module":
            options += ["self.count += 1", "self.count = self.count * 2"]
            if x is not None:
                options.append(f"self.last = {x}")
            self.features.add("module_attr_write")
        self.features.add("attr_write")
        self.emit(depth, self.pick(options))
        return True

    def st_global_tensor(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        shape = _broadcast(p, _proxy((), np.float32))
        self.features.add("global_tensor")
        self.assign(depth, scope, f"{x} * GT", _proxy(shape or (), _promote(p, _proxy((), np.float32))))
        return True

    def st_helper(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        self.uses_helper = True
        self.features.add("nested_compiled")
        self.assign(depth, scope, f"HELPER({x})", _proxy(p.shape, p.dtype))
        return True

    def st_inplace(self, depth: int, scope: _Scope) -> bool:
        """An in-place op on a local (or, now and then, an argument: the caller sees the change)."""
        local = [n for n in scope.tensors if n.startswith(("v", "acc"))]
        args = [n for n in scope.tensors if len(n) == 1]
        pool = args if args and (not local or self.rng.random() < 0.25) else local
        if not pool:
            return False
        x = self.pick(pool)
        p = scope.tensors[x]
        fits = [n for n, q in scope.tensors.items() if _broadcast(q, p) == p.shape]
        forms = [f"{x}.mul_(0.5)", f"{x}.clamp_(min=-1.0)", f"{x}.relu_()", f"{x}.tanh_()",
                 f"{x}.add_({self.scalar(scope)})"]
        if fits:
            forms += [f"{x}.add_({self.pick(fits)})", f"{x}.sub_({self.pick(fits)}.sin())"]
        self.features.add("inplace")
        if x in args:
            self.features.add("inplace_argument")
        self.emit(depth, self.pick(forms))
        return True

    def st_no_grad(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        self.features.add("no_grad_block")
        self.emit(depth, "with cl.no_grad():")
        self.assign(depth + 1, scope, self.pick([f"{x} * 2.0", f"{x}.exp()", f"{x} - {x}.mean()"]),
                    _proxy(p.shape, p.dtype))
        return True

    def st_detach(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        self.features.add("detach_clone")
        form = self.pick(["{x}.detach()", "{x}.clone()", "{x}.contiguous()", "{x}.detach().clone() * 2",
                          "{x}.detach().requires_grad_()"])
        self.assign(depth, scope, form.format(x=x), _proxy(p.shape, p.dtype))
        return True

    def st_join(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        same = [n for n, q in scope.tensors.items() if q.shape == p.shape]
        y = self.pick(same)
        self.features.add("stack_cat")
        if p.ndim >= 1 and self.rng.random() < 0.5:
            shape = (p.shape[0] * 2,) + p.shape[1:]
            self.assign(depth, scope, f"cl.cat([{x}, {y}], dim=0)", _proxy(shape, _promote(p, scope.tensors[y])))
        else:
            self.assign(depth, scope, f"cl.stack([{x}, {y}])", _proxy((2,) + p.shape, _promote(p, scope.tensors[y])))
        return True

    def st_meta_read(self, depth: int, scope: _Scope) -> bool:
        """Reads of metadata (no value): requires_grad, is_leaf, grad_fn, ndim, dtype, shape."""
        x = self.tensor_var(scope)
        if x is None:
            return False
        self.features.add("metadata_read")
        self.emit(depth, self.pick([
            f'print("{x}", {x}.requires_grad, {x}.is_leaf, {x}.grad_fn is None)',
            f'print("{x}", {x}.ndim, {x}.dtype, {x}.shape, {x}.numel())',
            f"LOG.append(({x}.requires_grad, {x}.dtype, tuple({x}.shape)))",
        ]))
        return True

    def st_try(self, depth: int, scope: _Scope) -> bool:
        """An op that raises inside try/except: the program catches it and goes on."""
        self.features.add("caught_error")
        self.emit(depth, "try:")
        if not self.st_error(depth + 1, scope):
            self.lines.pop()
            return False
        self.emit(depth, "except (RuntimeError, IndexError) as e:")
        self.emit(depth + 1, 'print("caught", type(e).__name__, e)')
        return True

    def st_state_acc(self, depth: int, scope: _Scope) -> bool:
        """A tensor kept across calls in an outer object."""
        x = self.tensor_var(scope)
        if x is None:
            return False
        self.features.add("state_across_calls")
        self.emit(depth, f"STATE.acc = STATE.acc * 0.5 + {x}.detach().sum()")
        return True

    def st_inner_backward(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        self.features.add("backward_inside")
        self.emit(depth, f"if {x}.requires_grad:")
        if self.seed >= FREEING_BACKWARD_SEEDS and self.rng.random() < 0.8:
            self.features.add("backward_frees_graph")
            self.emit(depth + 1, f"({x} * {x}).sum().backward()")
        else:
            self.emit(depth + 1, f"({x} * {x}).sum().backward(retain_graph=True)")
        return True

    def st_custom_function(self, depth: int, scope: _Scope) -> bool:
        """A custom autograd.Function whose backward is not its forward's derivative (only the engine runs it)."""
        x = self.tensor_var(scope)
        if x is None:
            return False
        self.features.add("custom_function")
        self.assign(depth, scope, f"SCALED.apply({x})", scope.tensors[x])
        return True

    def st_tensor_hook(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        self.features.add("tensor_hook")
        self.emit(depth, f"if {x}.requires_grad:")
        self.emit(depth + 1, f"{x}.register_hook(lambda g: LOG.append('hook'))")
        return True

    def st_error(self, depth: int, scope: _Scope) -> bool:
        x = self.tensor_var(scope)
        if x is None:
            return False
        p = scope.tensors[x]
        options = [
            f"{x}.sum(dim={p.ndim + 1})",
            f"{x}.transpose(0, {p.ndim + 2})",
            f"{x}.reshape({p.size + 1})",
        ]
        bad = [s + 2 for s in p.shape] or [2]
        options.append(f"{x} + cl.ones({', '.join(map(str, bad))})")
        if p.ndim >= 1:
            options.append(f"{x}[{p.shape[0] + 1}]")
            options.append(f"{x} @ cl.ones({p.shape[-1] + 1}, 2)")
        self.features.add("error")
        self.emit(depth, f"bad = {self.pick(options)}")
        return True

    def st_if_tensor(self, depth: int, scope: _Scope) -> _Scope | None:
        x = self.tensor_var(scope)
        if x is None or depth >= 3:
            return None
        c = _fmt(round(self.rng.uniform(-1.0, 1.0), 2))
        cond = self.pick([f"{x}.sum() > {c}", f"{x}.mean() < {c}", f"{x}.sum().item() > {c}"]
                         + ([f"{x}.amax() > {c}"] if scope.tensors[x].size else []))
        self.features.add("if_tensor")
        return self.branch(depth, scope, cond)

    def st_if_python(self, depth: int, scope: _Scope) -> _Scope | None:
        if depth >= 3:
            return None
        options = ["FLAG", "K > 0.3"]
        x = self.tensor_var(scope)
        if x is not None:
            options += [f"{x}.requires_grad", f"{x}.ndim > 1", f"{x}.numel() > 4"]
            if scope.tensors[x].ndim:
                options.append(f"{x}.shape[0] > 2")
        if scope.floats:
            options.append(f"{self.pick(scope.floats)} > 0.0")
        if self.kind == "module":
            options.append("self.count % 2 == 1")
        if self.uses_nonlocal_counter:
            options.append("calls % 2 == 0")
        self.features.add("if_python")
        return self.branch(depth, scope, self.pick(options))

    def branch(self, depth: int, scope: _Scope, cond: str) -> _Scope:
        x = self.tensor_var(scope)
        target = self.fresh()
        self.emit(depth, f"if {cond}:")
        then_scope = self.block(depth + 1, scope.copy(), self.rng.randint(0, 2))
        self.st_unary(depth + 1, then_scope, target, x)
        self.emit(depth, "else:")
        else_scope = self.block(depth + 1, scope.copy(), self.rng.randint(0, 2))
        self.st_unary(depth + 1, else_scope, target, x)
        merged = scope.copy()
        merged.tensors[target] = then_scope.tensors[target]
        return merged

    def st_loop(self, depth: int, scope: _Scope) -> _Scope | None:
        x = self.tensor_var(scope)
        if x is None or depth >= 3:
            return None
        acc = self.fresh("acc")
        p = scope.tensors[x]
        self.emit(depth, f"{acc} = {x} * 1.0")
        scope.tensors[acc] = _proxy(p.shape, p.dtype)
        if self.rng.random() < 0.3:
            count = self.fresh("k")
            self.emit(depth, f"{count} = int(abs({x}.sum().item()) * 2) % 3")
            self.features.update({"item", "item_int"})
            scope.ints.append(count)
        elif scope.ints and self.rng.random() < 0.5:
            count = self.pick(scope.ints)
        else:
            count = self.pick(["1", "2", "3"])
        self.features.add("loop")
        if count in scope.ints:
            self.features.add("loop_item_count")
        var = self.fresh("i")
        self.emit(depth, f"for {var} in range({count}):")
        body = scope.copy()
        body.ints.append(var)
        body = self.block(depth + 1, body, self.rng.randint(0, 2))
        # The accumulator update: an operand that broadcasts into acc's shape.
        fits = [n for n, q in body.tensors.items() if _broadcast(q, p) == p.shape and n != acc]
        y = self.pick(fits) if fits else x
        yq = body.tensors[y]
        op = self.pick([f"{acc} * 0.5 + {y}", f"{acc} + {y} * {var}", f"({acc} - {y}).tanh()"])
        self.emit(depth + 1, f"{acc} = {op}")
        scope.tensors[acc] = _proxy(p.shape, _promote(p, yq))
        return scope

    def block(self, depth: int, scope: _Scope, count: int) -> _Scope:
        simple = [
            (6.0, self.st_unary), (4.0, self.st_binary), (2.5, self.st_reduction), (2.5, self.st_view),
            (1.5, self.st_matmul), (1.0, self.st_factory), (1.5, self.st_item), (1.5, self.st_print),
            (1.5, self.st_append), (1.5, self.st_attr), (0.6, self.st_global_tensor),
            (0.3, self.st_helper), (0.25, self.st_error), (0.6, self.st_inplace), (0.4, self.st_no_grad),
            (0.6, self.st_detach), (0.4, self.st_join), (0.6, self.st_meta_read), (0.2, self.st_try),
            (0.3, self.st_state_acc), (3.0 if self.seed >= FREEING_BACKWARD_SEEDS else 0.2, self.st_inner_backward),
        ]
        if self.seed >= FREEING_BACKWARD_SEEDS:
            simple += [(1.0, self.st_custom_function), (0.6, self.st_tensor_hook)]
        compound = [(2.0, self.st_if_tensor), (0.8, self.st_if_python), (1.2, self.st_loop)]
        for _ in range(count):
            if self.statements_left <= 0:
                break
            self.statements_left -= 1
            for _attempt in range(10):
                table = simple + compound
                fn = self.rng.choices([f for _, f in table], [w for w, _ in table])[0]
                result = fn(depth, scope)
                if isinstance(result, _Scope):
                    scope = result
                    break
                if result is True:
                    break
        return scope

    # ---- the whole program --------------------------------------------------------------------
    def arg_specs(self) -> tuple[ArgSpec, ...]:
        rng = self.rng
        for s in SIZE_SYMBOLS:
            self.sizes[s] = 0 if rng.random() < 0.02 else rng.choice([1, 2, 2, 3, 3, 4, 5])
        n_args = rng.choice([1, 2, 2, 2, 3, 3])
        names = ["a", "b", "c"][:n_args]
        first: tuple[str | int, ...] = tuple(rng.choice(SIZE_SYMBOLS[:3]) if rng.random() < 0.85 else 1
                                             for _ in range(rng.choice([0, 1, 1, 2, 2, 2, 3])))
        dims_list = [first]
        for _ in range(1, n_args):
            base = rng.choice(dims_list)
            mode = rng.choice(["same", "suffix", "ones", "matmul", "random"])
            if mode == "same":
                dims = base
            elif mode == "suffix":
                dims = base[rng.randint(0, len(base)):]
            elif mode == "ones":
                dims = tuple(1 if rng.random() < 0.5 else d for d in base)
            elif mode == "matmul" and base:
                dims = (base[-1], rng.choice(SIZE_SYMBOLS))
            else:
                dims = tuple(rng.choice(SIZE_SYMBOLS) for _ in range(rng.randint(0, 3)))
            dims_list.append(dims)
        specs = []
        for name, dims in zip(names, dims_list):
            dtype = "float64" if rng.random() < 0.3 else "float32"
            specs.append(ArgSpec(name, dims, dtype, rng.random() < 0.4))
        return tuple(specs)

    def shape(self, spec: ArgSpec, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(sizes[d] if isinstance(d, str) else d for d in spec.dims)

    def calls(self, specs: tuple[ArgSpec, ...]) -> tuple[CallSpec, ...]:
        rng = self.rng
        dtypes = tuple(s.dtype for s in specs)
        grads = tuple(s.requires_grad for s in specs)
        calls = [CallSpec("first call", dict(self.sizes), dtypes, grads, {}, False, rng.randrange(2**31))]
        kinds = ["new values", "new values", "new shapes", "changed global", "changed global",
                 "no_grad", "dtype change", "requires_grad change", "same inputs again"]
        for _ in range(rng.randint(2, 4)):
            kind = rng.choice(kinds)
            sizes, dt, rg, glob, no_grad = dict(self.sizes), dtypes, grads, {}, False
            if kind == "new shapes":
                sizes = {s: rng.choice([1, 2, 3, 4, 5, 6]) for s in SIZE_SYMBOLS}
            elif kind == "changed global":
                glob = rng.choice([{"K": rng.choice([0.1, -0.4, 0.9, 2.0])}, {"FLAG": False},
                                   {"GT": ("tensor", round(rng.uniform(-2, 2), 2))}])
            elif kind == "no_grad":
                no_grad = True
            elif kind == "dtype change":
                i = rng.randrange(len(specs))
                dt = tuple(("float64" if d == "float32" else "float32") if j == i else d for j, d in enumerate(dtypes))
            elif kind == "requires_grad change":
                i = rng.randrange(len(specs))
                rg = tuple((not g) if j == i else g for j, g in enumerate(grads))
            seed = calls[-1].value_seed if kind == "same inputs again" else rng.randrange(2**31)
            calls.append(CallSpec(kind, sizes, dt, rg, glob, no_grad, seed))
        return tuple(calls)

    def program(self) -> Program:
        rng = self.rng
        specs = self.arg_specs()
        calls = self.calls(specs)
        scope = _Scope()
        for spec in specs:
            scope.tensors[spec.name] = _proxy(self.shape(spec, self.sizes), spec.dtype)
        self.uses_global_counter = rng.random() < 0.15
        self.uses_nonlocal_counter = self.kind == "function" and rng.random() < 0.15
        closure_lines: list[str] = []
        if self.kind == "function":
            for _ in range(rng.randint(0, 2)):
                name = f"c{len(self.closure_consts)}"
                self.closure_consts[name] = round(rng.uniform(-2, 2), 2)
                closure_lines.append(f"{name} = {_fmt(self.closure_consts[name])}")
        leaf_lines: list[str] = []
        for i in range(rng.choice([0, 0, 1, 1, 2])):
            name = f"t{i}" if self.kind == "function" else f"self.w{i}"
            base = rng.choice(list(scope.tensors.values()))
            shape = rng.choice([(), (1,), base.shape[-1:], base.shape])
            if 0 in shape:
                shape = ()
            dtype = rng.choice(["float32", "float32", "float64"])
            rg = rng.random() < 0.5
            lit = self.literal_tensor(tuple(shape), dtype, rg)
            if self.kind == "module":
                lit = f"nn.Parameter({lit})" if rg else lit
                self.features.add("parameter" if rg else "module_tensor_attr")
            else:
                self.features.add("closure_tensor")
            leaf_lines.append(f"{name} = {lit}")
            if rg and self.kind == "function":
                leaf_lines.append(f"LEAVES.append({name})")
            scope.tensors[name] = _proxy(shape, dtype)
        self.statements_left = rng.randint(2, 12)
        body_depth = 2
        body_start = len(self.lines)
        scope = self.block(body_depth, scope, 40)
        body = self.lines[body_start:]
        self.lines = self.lines[:body_start]
        ret = self.return_line(scope)

        src = [
            "import types",
            "import course_lib as cl",
            "import course_lib.nn as nn",
            "import course_lib.nn.functional as F",
            "",
            "K = 0.5",
            "FLAG = True",
            "CALLS = 0",
            "LOG = []",
            "LEAVES = []",
            "STATE = types.SimpleNamespace(n=0, scale=1.0, acc=cl.tensor(0.0))",
            "GT = cl.tensor(1.5)",
            "",
        ]
        if self.seed >= FREEING_BACKWARD_SEEDS:
            src += ["class SCALED(cl.autograd.Function):", "    @staticmethod", "    def forward(ctx, x):",
                    "        ctx.save_for_backward(x)", "        return x * 2.0", "", "    @staticmethod",
                    "    def backward(ctx, g):", "        (x,) = ctx.saved_tensors", "        return g * 3.0 + x * 0.0",
                    ""]
        if self.uses_helper:
            src += [f"@{COMPILE_NAME}", "def HELPER(x):", "    if x.sum() > 0:",
                    '        print("helper took the positive branch")', "        return x * 2 - 1",
                    "    return x.tanh() + K", ""]
        head = []
        if self.uses_global_counter:
            head += ["global CALLS", "CALLS += 1"]
            self.features.add("global_write")
        if self.kind == "function":
            if self.uses_nonlocal_counter:
                head += ["nonlocal calls", "calls += 1"]
                self.features.add("nonlocal_write")
            src.append("def build():")
            src += ["    " + line for line in closure_lines + leaf_lines]
            if self.uses_nonlocal_counter:
                src.append("    calls = 0")
            src.append("")
            params = ", ".join(s.name for s in specs)
            src.append(f"    def f({params}):")
            src += ["        " + line for line in head]
            src += body
            src.append("        " + ret)
            src += ["", "    return f", ""]
        else:
            src += ["class Prog(nn.Module):", "    def __init__(self):", "        super().__init__()",
                    "        self.count = 0", f"        self.scale = {_fmt(round(rng.uniform(-2, 2), 2))}"]
            src += ["        " + line for line in leaf_lines]
            src.append("")
            params = ", ".join(["self"] + [s.name for s in specs])
            src.append(f"    def forward({params}):")
            src += ["        " + line for line in head]
            src += body
            src.append("        " + ret)
            src += ["", "", "def build():", "    return Prog()", ""]
            self.features.add("module")
        return Program(self.seed, "\n".join(src), self.kind, specs, calls, frozenset(self.features))

    def return_line(self, scope: _Scope) -> str:
        names = list(scope.tensors)
        last = names[-1]
        r = self.rng.random()
        if r < 0.55:
            return f"return {last}"
        if r < 0.75 and len(names) >= 2:
            self.features.add("return_tuple")
            return f"return {last}, {self.pick(names)}"
        if r < 0.85 and scope.floats:
            self.features.add("return_float")
            return f"return {scope.floats[-1]}"
        if r < 0.9:
            self.features.add("return_none")
            return "return None"
        return f"return {last}.sum()"


@functools.lru_cache(maxsize=4096)
def generate_program(seed: int) -> Program:
    """The random program for ``seed`` (deterministic)."""
    return _Generator(seed).program()


def handmade_program(source: str, args: Sequence[ArgSpec], calls: Sequence[CallSpec], seed: int = -1,
                     kind: str = "function") -> Program:
    """A Program from hand-written source (with the random programs' globals and a ``build()``)."""
    header = "\n".join([
        "import types", "import course_lib as cl", "import course_lib.nn as nn",
        "import course_lib.nn.functional as F", "K = 0.5", "FLAG = True", "CALLS = 0", "LOG = []",
        "LEAVES = []", "STATE = types.SimpleNamespace(n=0, scale=1.0, acc=cl.tensor(0.0))", "GT = cl.tensor(1.5)",
        "", "",
    ])
    return Program(seed, header + source, kind, tuple(args), tuple(calls), frozenset())


# --------------------------------------------------------------------------------------------
# harness
# --------------------------------------------------------------------------------------------


def _instantiate(program: Program, compile_helper: Callable[[Callable], Callable]) -> tuple[dict, Any]:
    """Execute the source in a fresh namespace and call its build()."""
    linecache.cache[program.filename] = (len(program.source), None, program.source.splitlines(True),
                                         program.filename)
    ns: dict[str, Any] = {"__name__": f"random_program_{program.seed}", COMPILE_NAME: compile_helper}
    exec(compile(program.source, program.filename, "exec"), ns)
    return ns, ns["build"]()


def _make_args(program: Program, call: CallSpec) -> list[np.ndarray]:
    rng = np.random.default_rng(call.value_seed)
    arrays = []
    for spec, dtype in zip(program.args, call.dtypes):
        shape = tuple(call.sizes[d] if isinstance(d, str) else d for d in spec.dims)
        arrays.append((rng.standard_normal(shape) * rng.choice([0.5, 1.0, 2.0])).astype(dtype))
    return arrays


def _set_globals(ns: dict, call: CallSpec) -> None:
    for name, value in call.globals.items():
        if isinstance(value, tuple) and value[0] == "tensor":
            ns[name] = cl.tensor(value[1])
        else:
            ns[name] = value


def _snap(obj: Any, args: Sequence[Any] = ()) -> Any:
    """A comparable copy of a value: tensors become (tag, dtype, shape, requires_grad, is_leaf,
    index of the argument it is, array)."""
    if isinstance(obj, cl.Tensor):
        alias = next((i for i, a in enumerate(args) if a is obj), None)
        try:
            array = np.array(obj.detach().numpy(), copy=True)
        except Exception as e:  # noqa: BLE001 - a tensor whose values cannot be read is a difference
            return ("unreadable tensor", f"{type(e).__name__}: {e}", str(obj.device))
        return ("tensor", str(obj.dtype), tuple(obj.shape), obj.requires_grad, obj.is_leaf, alias, array)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_snap(o, args) for o in obj])
    if isinstance(obj, dict):
        return ("dict", {k: _snap(v, args) for k, v in obj.items()})
    if isinstance(obj, (int, float, str, bool, type(None), cl.Size)):
        return obj
    if isinstance(obj, cl.dtype):
        return str(obj)
    return ("object", type(obj).__name__)


def _is_zero_tensor(snap: Any) -> bool:
    return isinstance(snap, tuple) and len(snap) == 7 and snap[0] == "tensor" and not np.any(snap[6])


_NUMBER = re.compile(r"-?\d+\.\d*(?:e[+-]?\d+)?|-?\d+e[+-]?\d+|nan|-?inf")


class _Comparer:
    """Compares snapshots exactly (backend "eager") or with a tolerance."""

    def __init__(self, exact: bool) -> None:
        self.exact = exact
        self.grads = False

    def float_eq(self, a: float, b: float) -> bool:
        if self.exact:
            return a == b or (math.isnan(a) and math.isnan(b))
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5)

    def diff(self, a: Any, b: Any, path: str) -> str | None:
        """None when equal, else a description of the first difference."""
        if isinstance(a, tuple) and a and a[0] == "tensor":
            if not (isinstance(b, tuple) and b and b[0] == "tensor"):
                return f"{path}: eager gave a tensor, compiled gave {b!r}"
            names = ("dtype", "shape", "requires_grad", "is_leaf", "identity with argument")
            for name, x, y in zip(names, a[1:6], b[1:6]):
                if x != y:
                    return f"{path}: {name} differs: eager {x!r}, compiled {y!r}"
            x, y = a[6], b[6]
            if self.exact:
                same = np.array_equal(x, y, equal_nan=True)
            else:
                same = np.allclose(x, y, rtol=1e-4, atol=1e-5, equal_nan=True)
            if not same:
                return f"{path}: values differ:\neager    {x!r}\ncompiled {y!r}"
            return None
        if a is None and self.grads and not self.exact and _is_zero_tensor(b):
            # torch 2.13 does the same with aot_eager: an input of a compiled graph whose outputs
            # get no gradient receives zeros from CompiledFunctionBackward where eager leaves None.
            return None
        if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
            return f"{path}: eager {a!r} ({type(a).__name__}), compiled {b!r} ({type(b).__name__})"
        if isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], list):
            if a[0] != b[0] or len(a[1]) != len(b[1]):
                return f"{path}: eager {a[0]} of {len(a[1])}, compiled {b[0]} of {len(b[1])}"
            for i, (x, y) in enumerate(zip(a[1], b[1])):
                d = self.diff(x, y, f"{path}[{i}]")
                if d:
                    return d
            return None
        if isinstance(a, tuple) and len(a) == 2 and a[0] == "dict":
            if list(a[1]) != list(b[1]):
                return f"{path}: keys differ: eager {list(a[1])}, compiled {list(b[1])}"
            for k in a[1]:
                d = self.diff(a[1][k], b[1][k], f"{path}.{k}")
                if d:
                    return d
            return None
        if isinstance(a, float) or isinstance(b, float):
            return None if self.float_eq(float(a), float(b)) else f"{path}: eager {a!r}, compiled {b!r}"
        return None if a == b else f"{path}: eager {a!r}, compiled {b!r}"

    def same_error(self, a: Any, b: Any) -> bool:
        """Exceptions as (type name, message); with the aot backends, the tensor a version error
        names is an output of CompiledFunction or a tensor saved inside it, so the clause naming
        its autograd node (", which is output N of <node>,") differs by construction and is left out."""
        if a == b or self.exact:
            return a == b
        def strip(x: Any) -> Any:
            return re.sub(r", which is output \d+ of \w+,", "", repr(x))
        return strip(a) == strip(b)

    def stdout_diff(self, a: str, b: str) -> str | None:
        if a == b:
            return None
        if not self.exact:
            # aot backends give outputs CompiledFunctionBackward, as torch's do (and its longer name
            # can move grad_fn= to a line of its own); numbers may differ in their last printed digit.
            def strip(text: str) -> str:
                return re.sub(r"\s+", " ", re.sub(r"grad_fn=<\w+>", "grad_fn=<>", text))
            a2, b2 = strip(a), strip(b)
            if _NUMBER.split(a2) == _NUMBER.split(b2):
                na, nb = _NUMBER.findall(a2), _NUMBER.findall(b2)
                if len(na) == len(nb) and all(
                    self.float_eq(float(x), float(y)) or abs(float(x) - float(y)) <= 1.5e-4
                    for x, y in zip(na, nb)
                ):
                    return None
        return f"stdout differs:\n--- eager ---\n{a}--- compiled ---\n{b}"


def _leaves(ns: dict, obj: Any) -> list[Any]:
    leaves = list(ns["LEAVES"])
    if isinstance(obj, cl.nn.Module):
        leaves += list(obj.parameters())
    return leaves + [ns["GT"]]


def _state(ns: dict, obj: Any, args: Sequence[Any]) -> dict[str, Any]:
    """The Python side effects visible after a call."""
    state: dict[str, Any] = {
        "LOG": _snap(ns["LOG"], args),
        "STATE": _snap(dict(vars(ns["STATE"])), args),
        "CALLS": ns["CALLS"],
    }
    if isinstance(obj, cl.nn.Module):
        plain = {k: v for k, v in vars(obj).items() if not k.startswith("_")}
        state["module"] = _snap(plain, args)
    return state


def _tensors_in(obj: Any) -> list[Any]:
    if isinstance(obj, cl.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors_in(o)]
    return []


@dataclass
class _Outcome:
    kind: str  # "return" | "raise"
    value: Any
    stdout: str = ""
    warnings: list[tuple[str, str]] = field(default_factory=list)


def _invoke(fn: Callable, args: Sequence[Any], no_grad: bool) -> tuple[_Outcome, Any]:
    """Call fn, capturing its result or exception, its stdout and its warnings (numpy's
    RuntimeWarnings about inf/nan arithmetic are implementation detail and left out)."""
    buf = io.StringIO()
    ctx = cl.no_grad() if no_grad else contextlib.nullcontext()
    result = None
    with contextlib.redirect_stdout(buf), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with ctx:
                result = fn(*args)
            outcome = _Outcome("return", _snap(result, args))
        except Exception as e:  # noqa: BLE001 - every exception type is compared
            outcome = _Outcome("raise", (type(e).__name__, str(e)))
    outcome.stdout = buf.getvalue()
    outcome.warnings = [(w.category.__name__, str(w.message)) for w in caught
                        if not issubclass(w.category, RuntimeWarning)]
    return outcome, result


def _backward(result: Any, seed: int) -> tuple[str, Any] | None:
    """backward() of a weighted sum of the result's tensors; None if nothing requires grad."""
    tensors = [t for t in _tensors_in(result) if t.requires_grad]
    if not tensors:
        return None
    rng = np.random.default_rng(seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # inf/nan arithmetic
            loss = None
            for t in tensors:
                w = cl.tensor(rng.standard_normal(tuple(t.shape)).astype(str(t.dtype).split(".")[-1]))
                term = (t * w).sum()
                loss = term if loss is None else loss + term
            assert loss is not None
            loss.backward()
    except Exception as e:  # noqa: BLE001
        return ("raise", (type(e).__name__, str(e)))
    return ("ok", None)


def check_program(program: Program, compile_fn: Callable[..., Any], backend: Any,
                  exact: bool | None = None, after_call: Callable[[int, CallSpec], None] | None = None,
                  compiled_only_warnings: str | None = None) -> list[str]:
    """Run ``program`` eagerly and through ``compile_fn(obj, backend=backend)``, comparing every call.

    ``after_call(i, call)`` runs after call ``i`` has been compared. Warnings of the compiled run
    whose message matches the regular expression ``compiled_only_warnings`` are left out of the
    comparison and returned. Raises :class:`Divergence` with the seed, call and source on the first
    difference.
    """
    compiled_only: list[str] = []
    if exact is None:
        exact = backend == "eager"
    comparer = _Comparer(exact)

    def nested(fn: Callable) -> Callable:
        return compile_fn(fn, backend=backend)

    eager_ns, eager_obj = _instantiate(program, lambda fn: fn)
    comp_ns, comp_base = _instantiate(program, nested)
    compiled = compile_fn(comp_base, backend=backend)

    def fail(i: int, call: CallSpec, what: str) -> None:
        calls = "\n".join(f"  call {j}: {c.note}; sizes {c.sizes}, dtypes {c.dtypes}, requires_grad "
                          f"{c.requires_grad}, globals {c.globals}, no_grad {c.no_grad}"
                          for j, c in enumerate(program.calls))
        raise Divergence(
            f"random program seed {program.seed}, backend {backend!r}, call {i} ({call.note}):\n{what}\n\n"
            f"calls:\n{calls}\n\nsource:\n{program.numbered_source()}"
        )

    for i, call in enumerate(program.calls):
        arrays = _make_args(program, call)
        args_e = [cl.tensor(a, requires_grad=rg) for a, rg in zip(arrays, call.requires_grad)]
        args_c = [cl.tensor(a, requires_grad=rg) for a, rg in zip(arrays, call.requires_grad)]
        _set_globals(eager_ns, call)
        _set_globals(comp_ns, call)
        out_e, res_e = _invoke(eager_obj, args_e, call.no_grad)
        out_c, res_c = _invoke(compiled, args_c, call.no_grad)
        if out_e.kind != out_c.kind:
            fail(i, call, f"eager {out_e.kind}s {out_e.value!r}; compiled {out_c.kind}s {out_c.value!r}")
        if out_e.kind == "raise" and not comparer.same_error(out_e.value, out_c.value):
            fail(i, call, f"exceptions differ: eager {out_e.value!r}, compiled {out_c.value!r}")
        if out_e.kind == "return":
            d = comparer.diff(out_e.value, out_c.value, "result")
            if d:
                fail(i, call, d)
        d = comparer.stdout_diff(out_e.stdout, out_c.stdout)
        if d:
            fail(i, call, d)
        warned_c = out_c.warnings
        if compiled_only_warnings is not None:
            compiled_only += [m for _, m in warned_c if re.search(compiled_only_warnings, m)]
            warned_c = [(c, m) for c, m in warned_c if not re.search(compiled_only_warnings, m)]
        if out_e.warnings != warned_c:
            fail(i, call, f"warnings differ:\neager    {out_e.warnings}\ncompiled {warned_c}")
        d = comparer.diff(("dict", _state(eager_ns, eager_obj, args_e)), ("dict", _state(comp_ns, comp_base, args_c)),
                          "side effects")
        if d:
            fail(i, call, d)
        d = comparer.diff(_snap(args_e), _snap(args_c), "arguments after the call")
        if d:
            fail(i, call, d)
        if out_e.kind == "return" and not call.no_grad:
            b_e, b_c = _backward(res_e, call.value_seed), _backward(res_c, call.value_seed)
            if not comparer.same_error(b_e, b_c):
                fail(i, call, f"backward: eager {b_e!r}, compiled {b_c!r}")
        grads_e = [t.grad if t.is_leaf else "not a leaf" for t in args_e + _leaves(eager_ns, eager_obj)]
        grads_c = [t.grad if t.is_leaf else "not a leaf" for t in args_c + _leaves(comp_ns, comp_base)]
        comparer.grads = True
        d = comparer.diff(_snap(grads_e), _snap(grads_c), "grads of inputs and leaves")
        comparer.grads = False
        if d:
            fail(i, call, d)
        if after_call is not None:
            after_call(i, call)
    return compiled_only


def check_seeds(seeds: Sequence[int], compile_fn: Callable[..., Any], backend: Any,
                exact: bool | None = None, shrink_budget: int = 150) -> int:
    """check_program over ``seeds``; returns how many calls were compared.

    On a divergence the program is first shrunk (at most ``shrink_budget`` reruns; 0 to skip) and
    the message shows the smaller program that still diverges after the original one.
    """
    n = 0
    for seed in seeds:
        program = generate_program(seed)
        try:
            check_program(program, compile_fn, backend, exact)
        except Divergence as e:
            if shrink_budget <= 0:
                raise
            small = shrink(program, compile_fn, backend, exact, budget=shrink_budget)
            try:
                check_program(small, compile_fn, backend, exact)
            except Divergence as again:
                raise Divergence(f"{e}\n\n---- shrunk to ----\n{again}") from None
            raise
        n += len(program.calls)
    return n


def _statement_units(lines: list[str], start: int, stop: int) -> list[tuple[int, int]]:
    """(first, end) line ranges of the statements in lines[start:stop] at any depth, innermost last:
    a statement runs from its line to the next line indented no deeper than it."""
    units = []
    for i in range(start, stop):
        text = lines[i]
        if not text.strip() or text.strip().startswith(("else:", "return", "global ", "nonlocal ")):
            continue
        indent = len(text) - len(text.lstrip())
        j = i + 1
        while j < stop and (len(lines[j]) - len(lines[j].lstrip()) > indent or lines[j].strip() == "else:"
                            and len(lines[j]) - len(lines[j].lstrip()) > indent - 1 and
                            lines[i].strip().startswith("if ")):
            j += 1
        units.append((i, j))
    return units


def shrink(program: Program, compile_fn: Callable[..., Any], backend: Any, exact: bool | None = None,
           budget: int = 300) -> Program:
    """A smaller program that still diverges: statements and calls are dropped while the first
    line of the :class:`Divergence` message stays the same kind (delta debugging, one unit at a time)."""

    def kind(p: Program) -> str | None:
        try:
            check_program(p, compile_fn, backend, exact)
        except Divergence as e:
            first = str(e).split("\n")[1]
            return re.sub(r"[\d.\[\]]+", "#", first)[:40]
        except Exception:  # noqa: BLE001 - a shrunk program that breaks the harness does not count
            return None
        return None

    target = kind(program)
    if target is None:
        return program
    tries = 0
    changed = True
    while changed and tries < budget:
        changed = False
        for i in range(len(program.calls) - 1, -1, -1):
            if len(program.calls) == 1:
                break
            calls = program.calls[:i] + program.calls[i + 1:]
            if i == 0:
                calls = (CallSpec("first call", *_call_fields(calls[0])),) + calls[1:]
            candidate = Program(program.seed, program.source, program.kind, program.args, calls, program.features)
            tries += 1
            if kind(candidate) == target:
                program, changed = candidate, True
        lines = program.source.splitlines()
        start = next(i for i, t in enumerate(lines) if t.strip().startswith(("def f(", "def forward(")))
        stop = max(i for i, t in enumerate(lines) if t.strip().startswith("return ") and t.startswith("        r"))
        for first, end in reversed(_statement_units(lines, start + 1, stop)):
            for replacement in ([], ["    " * ((len(lines[first]) - len(lines[first].lstrip())) // 4) + "pass"]):
                candidate_lines = lines[:first] + replacement + lines[end:]
                candidate = Program(program.seed, "\n".join(candidate_lines), program.kind, program.args,
                                    program.calls, program.features)
                tries += 1
                if kind(candidate) == target:
                    program, changed = candidate, True
                    break
            if changed:
                break
    return program


def _call_fields(call: CallSpec) -> tuple[Any, ...]:
    return (call.sizes, call.dtypes, call.requires_grad, call.globals, call.no_grad, call.value_seed)
