"""course_lib.compile: capture with graph breaks, guards and recompilation, explain, the backends."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import course_lib as cl
import course_lib._dynamo as dynamo
from course_lib import nn
from course_lib._dynamo import capture as capture_mod
from course_lib._dynamo.testing import CompileCounter


@pytest.fixture(autouse=True)
def _fresh():
    dynamo.reset()
    yield
    dynamo.reset()


def _same(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())


def _rows(gm) -> list[tuple]:
    """print_tabular's rows without the target's address: (opcode, name, target name, args)."""
    out = []
    for n in gm.graph.nodes:
        t = n.target
        name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
        out.append((n.op, n.name, name, str(n.args)))
    return out


# ---------------------------------------------------------------------------------------------
# the seed's toy_example
# ---------------------------------------------------------------------------------------------
def toy_example(a, b):
    x = a / (cl.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


GRAPH_1 = [("placeholder", "l_a_", "L_a_", "()"), ("placeholder", "l_b_", "L_b_", "()"),
           ("call_function", "abs_1", "abs", "(l_a_,)"), ("call_function", "add", "add", "(abs_1, 1)"),
           ("call_function", "x", "truediv", "(l_a_, add)"), ("call_method", "sum_1", "sum", "(l_b_,)"),
           ("call_function", "lt", "lt", "(sum_1, 0)"), ("output", "output", "output", "((lt, x),)")]
GRAPH_2 = [("placeholder", "l_b_", "L_b_", "()"), ("placeholder", "l_x_", "L_x_", "()"),
           ("call_function", "b", "mul", "(l_b_, -1)"), ("call_function", "mul_1", "mul", "(l_x_, b)"),
           ("output", "output", "output", "((mul_1,),)")]
GRAPH_3 = [("placeholder", "l_x_", "L_x_", "()"), ("placeholder", "l_b_", "L_b_", "()"),
           ("call_function", "mul", "mul", "(l_x_, l_b_)"), ("output", "output", "output", "((mul,),)")]


def test_toy_example_gives_three_graphs_with_torchs_names_over_random_inputs():
    graphs = []

    def my_compiler(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    f = cl.compile(toy_example, backend=my_compiler)
    cl.manual_seed(0)
    for _ in range(20):
        a, b = cl.randn(10), cl.randn(10)
        assert _same(f(a, b), toy_example(a, b))
    tables = [_rows(g) for g in graphs]
    assert len(tables) == 3
    assert tables[0] == GRAPH_1
    assert sorted(tables[1:]) == sorted([GRAPH_2, GRAPH_3])


def test_a_custom_backend_gets_the_graph_module_and_the_real_inputs():
    seen = []

    def my_compiler(gm, example_inputs):
        seen.append((type(gm).__name__, example_inputs))
        return gm.forward

    a, b = cl.randn(4), -cl.ones(4)
    cl.compile(toy_example, backend=my_compiler)(a, b)
    assert [s[0] for s in seen] == ["GraphModule", "GraphModule"]
    first = seen[0][1]
    assert first[0] is a and first[1] is b           # real tensors, in placeholder order
    assert all(isinstance(t, cl.Tensor) and t.device.type == "cpu" for t in seen[1][1])


def test_the_graph_code_runs_and_names_the_break_outputs():
    gms = []
    cl.compile(toy_example, backend=lambda gm, ex: gms.append(gm) or gm.forward)(cl.randn(3), cl.ones(3))
    assert "return (lt, x)" in gms[0].code
    assert "course_lib.abs(l_a_)" in gms[0].code


# ---------------------------------------------------------------------------------------------
# correctness: values, errors, side effects
# ---------------------------------------------------------------------------------------------
def test_prints_appends_and_attribute_writes_happen_as_in_eager(capsys):
    log = []

    class Box:
        pass

    box = Box()

    def f(x):
        y = x * 2
        print("y has", y.shape)
        log.append(y.sum().item())
        box.last = y
        if y.mean() > 0:
            return y + 1
        return y - 1

    cf = cl.compile(f, backend="eager")
    for seed in range(4):
        cl.manual_seed(seed)
        x = cl.randn(5)
        r_eager = f(x)
        a_eager = box.last
        out_eager = capsys.readouterr().out
        r_comp = cf(x)
        a_comp = box.last
        out_comp = capsys.readouterr().out
        assert _same(r_eager, r_comp) and _same(a_eager, a_comp)
        assert out_eager == out_comp == "y has course_lib.Size([5])\n"
        assert log[-1] == log[-2]


def test_an_error_is_raised_where_eager_raises_it_after_the_same_side_effects():
    log = []

    def f(x, y):
        z = x + 1
        log.append("before")
        w = z + y                 # shape mismatch: meta raises eager's error here
        log.append("after")
        return w

    cf = cl.compile(f, backend="eager")
    for fn in (f, cf):
        with pytest.raises(RuntimeError) as e:
            fn(cl.ones(3), cl.ones(4))
        assert str(e.value) == ("The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
                                "dimension 0")
    assert log == ["before", "before"]


def test_a_data_dependent_error_appears_at_the_same_point():
    def f(x, idx):
        y = x * 2
        return y[idx]

    cf = cl.compile(f, backend="eager")
    with pytest.raises(IndexError) as e1:
        f(cl.randn(4), cl.tensor([1, 7]))
    with pytest.raises(IndexError) as e2:
        cf(cl.randn(4), cl.tensor([1, 7]))
    assert str(e1.value) == str(e2.value)
    x = cl.randn(4)
    assert _same(cf(x, cl.tensor([0, 3])), f(x, cl.tensor([0, 3])))


def test_an_op_checking_a_real_index_is_recorded_and_checked_on_every_call():
    def loss(x, w, y):
        return nn.functional.cross_entropy(x @ w, y)

    def pick(x, idx):
        return (x * 2)[idx] + cl.gather(x * 3, 0, idx)

    x, w = cl.randn(4, 5), cl.randn(5, 3)
    out = cl.compiler.explain(loss)(x, w, cl.tensor([0, 2, 1, 2]))
    assert (out.graph_count, out.graph_break_count) == (1, 0)   # nll_loss is in the graph
    assert "nll_loss_forward" in [getattr(t, "name", str(t)) for t in out.ops_per_graph[0]]
    cnt = CompileCounter()
    cf = cl.compile(loss, backend=cnt)
    for y in (cl.tensor([0, 2, 1, 2]), cl.tensor([1, 1, 0, 2])):
        assert _same(cf(x, w, y), loss(x, w, y))
    assert cnt.frame_count == 1            # a new target with the same metadata is a hit
    for bad in (cl.tensor([0, 3, 1, 2]), cl.tensor([0, -1, 1, 2])):   # replayed: checked all the same
        with pytest.raises(IndexError) as e1:
            loss(x, w, bad)
        with pytest.raises(IndexError) as e2:
            cf(x, w, bad)
        assert str(e1.value) == str(e2.value)
    cnt = CompileCounter()
    cp = cl.compile(pick, backend=cnt)
    x = cl.randn(4)
    for idx in (cl.tensor([0, 3]), cl.tensor([1, 2])):
        assert _same(cp(x, idx), pick(x, idx))
    assert cnt.frame_count == 1
    with pytest.raises((IndexError, RuntimeError)) as e1:
        pick(x, cl.tensor([0, 4]))
    with pytest.raises((IndexError, RuntimeError)) as e2:
        cp(x, cl.tensor([0, 4]))
    assert (type(e1.value), str(e1.value)) == (type(e2.value), str(e2.value))
    lazy = cl.compiler.explain(lambda x, i: x[i * 1])(cl.randn(4), cl.tensor([1, 2]))
    # a lazy index still breaks: its values are unknown
    assert [r.reason for r in lazy.break_reasons] == ["index depends on the values of its inputs"]


def _check(fn, make, n=4, backend="eager"):
    cf = cl.compile(fn, backend=backend)
    for seed in range(n):
        cl.manual_seed(seed)
        args = make()
        a1 = [t.clone() for t in args]
        a2 = [t.clone() for t in args]
        r1, r2 = fn(*a1), cf(*a2)
        r1 = r1 if isinstance(r1, tuple) else (r1,)
        r2 = r2 if isinstance(r2, tuple) else (r2,)
        for u, v in zip(r1, r2):
            assert _same(u, v), (fn.__name__, u, v)
        for u, v in zip(a1, a2):
            assert _same(u, v), (fn.__name__, "inputs", u, v)


def test_in_place_ops_on_graph_values_views_and_inputs():
    def on_lazy(x):
        y = x * 2
        y.add_(1)
        return y

    def on_view(x):
        y = x * 2
        v = y[0]
        v.mul_(10)
        return y, v

    def on_input(x):
        y = x * 2
        x.add_(1)           # the graph reads x's old value: it runs first
        return y + x

    for fn in (on_lazy, on_view, on_input):
        _check(fn, lambda: (cl.randn(3, 4),))


def test_loops_branches_globals_closures_and_items():
    g = cl.randn(4)

    def loop(x):
        for _ in range(3):
            x = x - 1 if x.sum() > 0 else x + 2
        return x

    def uses_global(x):
        return x * g

    w = cl.randn(4)

    def uses_closure(x):
        return x + w

    def uses_item(x):
        k = x.sum().item()
        return x * k

    for fn in (loop, uses_global, uses_closure, uses_item):
        _check(fn, lambda: (cl.randn(4),))


def test_a_view_whose_base_died_still_gets_its_values():
    """Regression: the base of a lazy view must be a graph output even when its tensor is gone."""
    def f(a, b):
        v = b.matmul(b)       # matmul: mm, then a view of the mm result (which dies)
        print("break")
        return cl.where(a > v, a, v)

    _check(f, lambda: (cl.randn(3, 3), cl.randn(3, 3)))


def test_an_op_that_raises_leaves_no_input_in_the_graph():
    """Regression: a failing op's new inputs must not be passed to the compiled graph at the end."""
    log = []

    def f(a, b):
        v = b.mean(dim=0)
        log.append(v)
        return a + cl.ones(4) + v     # a is (2, 3): raises

    cf = cl.compile(f, backend="eager")
    with pytest.raises(RuntimeError):
        cf(cl.randn(2, 3), cl.randn(2, 3))
    assert log[0].numpy().shape == (3,)     # the lazy tensor in the list got its values


def test_gradients_sum_in_eagers_order_across_graphs():
    """Regression: a view of a real tensor that requires grad gets its autograd node with the graph,
    so the engine sums b's gradient in the same order as eager (bitwise equal)."""
    def f(a, b):
        v1 = cl.abs(b)
        v2 = cl.where(b > a, b, a)
        v3 = b.matmul(v2)
        if v1[..., :2].mean() < -0.4:
            v5 = v3
        else:
            v5 = v3.sin()
        acc = (1.5 - v5) * 1.0
        for i in range(3):
            acc = acc + v1 * i
        return acc

    rng = np.random.default_rng(1449912243)
    a_np = rng.standard_normal((3, 3)).astype("float32")
    b_np = rng.standard_normal(3).astype("float32")
    grads = []
    for fn in (f, cl.compile(f, backend="eager")):
        b = cl.tensor(b_np, requires_grad=True)
        fn(cl.tensor(a_np), b).sum().backward()
        grads.append(b.grad.numpy())
    assert (grads[0] == grads[1]).all()


def test_a_view_of_a_tensor_from_an_earlier_graph_keeps_that_tensors_values():
    """Regression: the storage of a tensor from an earlier graph must not be refilled with the value of
    a view of it (a real view, node 0 of a later graph) at the next break."""
    def f(a, b):
        if a.amax() > -0.98:
            v1 = b.sigmoid()
        else:
            v1 = -b
        v5 = v1.amax(dim=-1)
        v7 = a + -1.0
        if v7.sum().item() > 0.0:
            v10 = v1 * 2
        else:
            v10 = v1.unsqueeze(0)       # a view of a real tensor that requires grad
        if v7.mean() < -0.4:
            return cl.abs(v5), v10, v1
        return cl.sigmoid(v5), v10, v1

    a, b = cl.tensor(-0.138, dtype=cl.float64), cl.tensor(0.3038, requires_grad=True)
    r1, r2 = f(a, b), cl.compile(f, backend="eager")(a, b)
    for u, v in zip(r1, r2):
        assert _same(u.detach(), v.detach()) and v.grad_fn is not None


def test_an_in_place_op_on_a_graph_value_that_requires_grad_is_not_a_leaf_error():
    """Regression: the meta check of an in-place op on a lazy tensor must not see a leaf."""
    t0 = cl.tensor(1.08, requires_grad=True)

    def f(a):
        v5 = cl.abs(t0)
        v5.sub_(a.sin())
        return v5 * 2

    a = cl.tensor(0.3)
    r1, r2 = f(a), cl.compile(f, backend="eager")(a)
    assert _same(r1.detach(), r2.detach()) and r2.grad_fn is not None


def test_requires_grad_set_on_a_graph_value_makes_a_leaf():
    """Regression: requires_grad_() on a lazy tensor ends the graph first, and the flag stays set."""
    def f(a):
        acc = a * 1.0
        v = acc.detach().requires_grad_()
        return v, v * 2

    a = cl.randn(3)
    for fn in (f, cl.compile(f, backend="eager")):
        v, w = fn(a)
        assert v.requires_grad and v.is_leaf and w.grad_fn is not None
        w.sum().backward()
        assert _same(v.grad, cl.full((3,), 2.0))


def test_a_view_after_a_no_grad_block_gets_its_grad_fn():
    """Regression: a real view recorded after grad mode changed belongs to a graph run with grad on."""
    t0 = cl.tensor(-0.13, dtype=cl.float64, requires_grad=True)

    def f(c):
        v3 = c + t0
        with cl.no_grad():
            v5 = v3.exp()
        return v3.reshape(-1), v5

    c = cl.randn(2, 2, dtype=cl.float64)
    for fn in (f, cl.compile(f, backend="eager")):
        v6, v5 = fn(c)
        assert v6.requires_grad and not v6.is_leaf and type(v6.grad_fn).__name__ == "ViewBackward0"
        assert not v5.requires_grad


def test_an_in_place_op_after_a_break_on_a_value_autograd_saved_is_caught_at_backward():
    def f(a):
        v1 = a.exp()
        v3 = v1.clamp(min=0.0, max=1.21)
        v3.tolist()
        v1.add_(2.0)
        return v3

    for fn in (f, cl.compile(f, backend="eager")):   # eager's text: the saved value is output 0 of Add
        with pytest.raises(RuntimeError, match="modified by an inplace operation: .*, which is output 0 of Add,"):
            fn(cl.randn(3, requires_grad=True)).sum().backward()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_view_of_a_graph_value_sees_a_later_in_place_op_on_its_base(backend):
    """Regression: after v1.tanh_() the view v4 = v1[:2] goes through tanh in backward, as in eager."""
    def f(a):
        v1 = a * 2
        v4 = v1[:2]
        v1.tanh_()
        return v4.sum()

    grads = []
    for fn in (f, cl.compile(f, backend=backend)):
        a = cl.tensor([1.0, -2.0, 0.5], requires_grad=True)
        out = fn(a)
        out.backward()
        grads.append((out.item(), a.grad.tolist()))
    assert grads[1] == grads[0]


def test_a_view_inside_the_graph_sees_a_later_in_place_op_on_its_base():
    """Regression: matmul's view of v2 (inside the graph) is regenerated when v2 is modified in place, so
    backward's version error names AsStrided, as in eager."""
    def f(a, b):
        v2 = (b * a + b).mean(dim=-1)
        v3 = v2.matmul(a)
        v2.add_(0.5)
        return v3

    for fn in (f, cl.compile(f, backend="eager")):
        with pytest.raises(RuntimeError, match="which is output 0 of AsStrided,"):
            fn(cl.randn(3, 3, requires_grad=True), cl.randn(3)).sum().backward()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_autograd_through_several_graphs(backend):
    if backend == "inductor":
        pytest.importorskip("numba")

    def f(x):
        y = x * 2
        if y.sum() > 0:
            y = y * 3
        return (y * y).sum()

    cf = cl.compile(f, backend=backend)
    for seed in range(3):
        cl.manual_seed(seed)
        x1 = cl.randn(4, requires_grad=True)
        x2 = x1.detach().clone().requires_grad_()
        f(x1).backward()
        cf(x2).backward()
        assert np.allclose(x1.grad.numpy(), x2.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_backward_and_no_grad_inside_a_compiled_function():
    def step(x, w):
        loss = ((x * w).sum() - 1) ** 2
        loss.backward()
        with cl.no_grad():
            w2 = w * 3
        return loss, w2

    cf = cl.compile(step, backend="eager")
    x = cl.randn(3)
    w1 = cl.randn(3, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_()
    l1, u1 = step(x, w1)
    l2, u2 = cf(x, w2)
    assert _same(w1.grad, w2.grad) and _same(l1.detach(), l2.detach())
    assert not u2.requires_grad and l2.requires_grad and l2.grad_fn is not None


def test_a_compiled_function_called_from_a_compiled_function():
    @cl.compile(backend="eager")
    def inner(x):
        return x * 2 if x.sum() > 0 else x - 1

    @cl.compile(backend="eager")
    def outer(x):
        return inner(x) + inner(-x)

    x = cl.randn(5)
    assert _same(outer(x), (x * 2 if x.sum() > 0 else x - 1) + (-x * 2 if (-x).sum() > 0 else -x - 1))


# ---------------------------------------------------------------------------------------------
# modules and backends
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_compiled_module_gives_eagers_gradients(backend):
    if backend == "inductor":
        pytest.importorskip("numba")
    cl.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    om = cl.compile(m, backend=backend)
    x = cl.randn(5, 3)
    om(x).sum().backward()
    g1 = [p.grad.numpy().copy() for p in m.parameters()]
    m.zero_grad()
    m(x).sum().backward()
    g2 = [p.grad.numpy() for p in m.parameters()]
    assert all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(g1, g2))


def test_optimized_module_wraps_the_original():
    m = nn.Linear(3, 2)
    om = cl.compile(m, backend="eager")
    assert type(om).__name__ == "OptimizedModule" and om._orig_mod is m
    assert list(om.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert om.weight is m.weight and om.in_features == 3


def test_placeholders_of_parameters_buffers_and_globals_are_named_like_dynamo():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.register_buffer("buf", cl.ones(3))

        def forward(self, x):
            return x * self.lin.weight.sum() + self.buf + GLOBAL_T

    gms = []
    cl.compile(M(), backend=lambda gm, ex: gms.append(gm) or gm.forward)(cl.randn(2, 3))
    names = [n.name for n in gms[0].graph.nodes if n.op == "placeholder"]
    # in order of first use: weight.sum() runs before the multiplication reads x
    assert names == ["l_self_modules_lin_parameters_weight_", "l_x_", "l_self_buffers_buf_", "g_global_t_"]


GLOBAL_T = cl.randn(3)


def test_backends_and_the_api():
    assert dynamo.list_backends() == ["inductor"]
    assert {"eager", "aot_eager", "inductor"} <= set(dynamo.list_backends(exclude_tags=()))
    with pytest.raises(dynamo.exc.InvalidBackend, match="Invalid backend"):
        cl.compile(toy_example, backend="nope")
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        cl.compile(toy_example, mode="fast")
    for mode in (None, "default", "reduce-overhead", "max-autotune"):
        cl.compile(toy_example, mode=mode)
    assert cl.compile(toy_example, disable=True) is toy_example

    @cl.compile
    def f1(x):
        return x + 1

    @cl.compile(backend="eager")
    def f2(x):
        return x + 1

    x = cl.ones(3)
    assert _same(f2(x), x + 1) and f1.__name__ == "f1"


def test_compile_counter_counts_graphs_and_call_function_nodes():
    cnt = CompileCounter()
    f = cl.compile(toy_example, backend=cnt)
    f(cl.randn(4), -cl.ones(4))
    assert (cnt.frame_count, cnt.op_count) == (2, 6)   # call_method sum is not a call_function


# ---------------------------------------------------------------------------------------------
# guards, recompilation, the limit, dynamic shapes
# ---------------------------------------------------------------------------------------------
def test_guards_recompile_on_what_the_graph_assumed_and_hit_otherwise():
    cnt = CompileCounter()
    k = [0.5]

    def f(x):
        return x * k[0] + 1

    cf = cl.compile(f, backend=cnt)
    steps = [
        (lambda: cf(cl.randn(3)), 1),                               # first call
        (lambda: cf(cl.randn(3)), 1),                               # new values: hit
        (lambda: cf(cl.randn(4)), 2),                               # shape
        (lambda: cf(cl.randn(3, dtype=cl.float64)), 3),             # dtype
        (lambda: cf(cl.randn(3, requires_grad=True)), 4),           # requires_grad
        (lambda: k.__setitem__(0, 2.0) or cf(cl.randn(3)), 5),      # a Python constant
        (lambda: cf(cl.randn(3)), 5),                               # hit
        (lambda: k.__setitem__(0, 0.5) or cf(cl.randn(3)), 5),      # seen before: hit
    ]
    for i, (call, frames) in enumerate(steps):
        call()
        assert cnt.frame_count == frames, i
    with cl.no_grad():
        cf(cl.randn(3, requires_grad=True))                         # grad mode
    assert cnt.frame_count == 6


def test_past_the_recompile_limit_calls_run_eagerly_with_a_warning():
    assert dynamo.config.cache_size_limit == dynamo.config.recompile_limit == 8
    cnt = CompileCounter()
    h = cl.compile(lambda x: x + 1, backend=cnt)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 13):
            assert _same(h(cl.ones(n)), cl.ones(n) + 1)
    assert cnt.frame_count == 8
    msgs = [str(w.message) for w in caught]
    assert len(msgs) == 1 and msgs[0].startswith("course_lib._dynamo hit config.recompile_limit (8)")
    assert "size mismatch" in msgs[0]


def test_dynamic_sizes_do_not_recompile_but_0_1_and_equalities_do():
    cnt = CompileCounter()
    f = cl.compile(lambda x, y: (x * 2).sum(0) + y, backend=cnt, dynamic=True)
    for n, m in [(2, 3), (5, 3), (7, 3), (9, 4)]:
        x, y = cl.randn(n, m), cl.randn(m)
        assert _same(f(x, y), (x * 2).sum(0) + y)
    assert cnt.frame_count == 1
    f(cl.randn(1, 3), cl.randn(3))         # a size of 1 is specialised
    assert cnt.frame_count == 2
    f(cl.randn(4, 4), cl.randn(4))         # n == m is a new relation
    assert cnt.frame_count == 3


def test_a_cache_hit_records_no_node_runs_no_meta_and_sets_no_trace(monkeypatch):
    f = cl.compile(lambda x: x + 1, backend="eager")
    x = cl.ones(10)
    f(x)
    calls = []
    monkeypatch.setattr(capture_mod.Capture, "_meta_run", lambda *a: calls.append("meta"))
    monkeypatch.setattr(capture_mod.Capture, "_build_graph", lambda *a: calls.append("graph"))
    monkeypatch.setattr(capture_mod.Capture, "_start_tracing", lambda *a: calls.append("trace"))
    for _ in range(3):
        assert _same(f(x), x + 1)
    assert calls == []


# ---------------------------------------------------------------------------------------------
# explain, break reasons, fullgraph
# ---------------------------------------------------------------------------------------------
def test_explain_reports_graphs_breaks_ops_and_guards():
    out = cl.compiler.explain(toy_example)(cl.randn(10), -cl.ones(10))
    assert (out.graph_count, out.graph_break_count, out.op_count) == (2, 1, 6)
    assert [len(o) for o in out.ops_per_graph] == [4, 2]
    reason = out.break_reasons[0]
    assert reason.reason == "generic_jump TensorVariable()"
    fs = reason.user_stack[0]
    assert fs.filename == __file__ and fs.name == "toy_example"
    assert fs.lineno == toy_example.__code__.co_firstlineno + 2
    text = str(out)
    assert text.startswith("Graph Count: 2\nGraph Break Count: 1\nOp Count: 6\nBreak Reasons:\n  Break Reason 1:\n"
                           "    Reason: generic_jump TensorVariable()\n    User Stack:\n      <FrameSummary file ")
    assert "Ops per Graph:\n  Ops 1:\n" in text and "Out Guards:\n  Guard 1:\n    Name: " in text
    kinds = {g.create_fn_name for g in out.out_guards}
    assert {"TENSOR_MATCH", "GRAD_MODE", "CONSTANT_MATCH"} <= kinds
    assert any(g.name == "L['a']" for g in out.out_guards)
    assert dynamo.explain(toy_example)(cl.randn(3), cl.ones(3)).graph_count == 2


def test_break_reasons_for_item_print_and_tolist():
    def f(x):
        y = x * 2
        v = y.item()
        z = y + v
        print("z")
        w = z * 2
        w.tolist()
        return w + 1

    out = dynamo.explain(f)(cl.randn(1))
    reasons = [r.reason for r in out.break_reasons]
    assert reasons == ["Unsupported Tensor.item() call with capture_scalar_outputs=False",
                       "Failed to trace builtin operator", "Tensor.tolist() with non-integer tensor"]
    line0 = f.__code__.co_firstlineno
    assert [r.user_stack[0].lineno - line0 for r in out.break_reasons] == [2, 4, 6]


def test_fullgraph_raises_unsupported_at_a_break():
    f = cl.compile(toy_example, fullgraph=True, backend="eager")
    with pytest.raises(dynamo.exc.Unsupported, match="Data-dependent branching") as e:
        f(cl.randn(3), cl.randn(3))
    assert isinstance(e.value, RuntimeError)
    g = cl.compile(lambda x: (x * 2).sin(), fullgraph=True, backend="eager")
    x = cl.randn(3)
    assert _same(g(x), (x * 2).sin())


def test_import_course_lib_does_not_import_the_compiler_stack():
    code = ("import sys, course_lib; "
            "print(sorted(m for m in ('numba', 'networkx', 'course_lib._dynamo', 'course_lib._inductor') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_break_forced_by_a_tensor_that_is_not_first_in_node_order_fills_every_output():
    # the forcing tensor (c) comes after a and b: the outputs are reordered and all three keep their values
    def f(x):
        a = x + 1
        b = x * 2
        c = b.sum()
        if c > 0:
            return a - b, c
        return a + b, c

    g = cl.compile(f, backend="eager")
    for values in ([1.0, 2.0, 3.0], [-1.0, -2.0, -3.0], [0.5, 0.25, 4.0]):
        x = cl.tensor(values)
        got, want = g(x), f(x)
        assert [t.tolist() for t in got] == [t.tolist() for t in want]


def test_range_checks_of_real_indices_pass_what_eager_passes_and_raise_what_it_raises():
    """The cheap range test in front of the eager check: ignored targets pass, every bad value still raises
    eager's error (also after the same index tensor was changed in place between two calls)."""
    F = nn.functional

    def loss(x, y):
        return F.cross_entropy(x * 2, y, ignore_index=-100)

    def emb(w, i):
        return F.embedding(i, w * 1) + cl.index_select(w * 2, 0, i)

    x, w = cl.randn(4, 3), cl.randn(5, 2)
    cf, ce = cl.compile(loss, backend="eager"), cl.compile(emb, backend="eager")
    y = cl.tensor([0, -100, 2, 1])
    assert _same(cf(x, y), loss(x, y))
    i = cl.tensor([[0, 4], [2, 2]]).view(-1)
    assert _same(ce(w, i), emb(w, i))
    for fn, cfn, arg, t in ((loss, cf, x, y), (emb, ce, w, i)):
        for bad in (7, -1):                    # the same tensor, now out of range (above, or negative)
            t[1] = bad
            with pytest.raises((IndexError, RuntimeError)) as e1:
                fn(arg, t)
            with pytest.raises((IndexError, RuntimeError)) as e2:
                cfn(arg, t)
            assert (type(e1.value), str(e1.value)) == (type(e2.value), str(e2.value))
    y32 = cl.tensor([0, 1, 2, 1], dtype=cl.int32)     # not int64: the full eager check decides
    with pytest.raises(RuntimeError) as e1:
        loss(x, y32)
    with pytest.raises(RuntimeError) as e2:
        cf(x, y32)
    assert str(e1.value) == str(e2.value)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_compiled_training_step_leaves_no_reference_cycles(backend):
    """Every object a compiled step makes is freed by reference counting, as in eager: a cycle per call
    (a backward node holding itself, a closure holding the capture) made the garbage collector walk every
    object of the process every few hundred steps."""
    import gc

    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 3))
    opt = cl.optim.SGD(model.parameters(), lr=0.1)
    x, y = cl.randn(5, 4), cl.tensor([0, 2, 1, 1, 0])

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    cstep = cl.compile(step, backend=backend)    # aot_eager: the compiled forward is a custom Function
    for _ in range(3):
        cstep()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(3):
            cstep()
        gc.collect()
        garbage = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert garbage == []


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_ops_returning_named_tuples_keep_them_in_the_graph(backend):
    """max(dim), sort, topk, median, aminmax return named tuples: compiled code reads .values / .indices (or
    indexes them) as eager code does, and gradients flow through them."""
    def f(x):
        m = x.max(1)
        s = x.sort(1, descending=True)
        k = x.topk(2, 1)
        lo, hi = cl.aminmax(x, dim=0)
        return (m.values * 2 + m[1], (s.values * s.indices.float()).exp(), k.values.tanh() + k.indices,
                x.median(1).values + lo.sum() * hi.sum(), x.max(0))

    x = cl.randn(3, 4, requires_grad=True)
    if backend == "inductor":   # (numba compiles each kernel: one small program keeps the test fast)
        def g(x):
            m = x.max(1)
            return m.values * 2 + m[1], x.max(0)
        x = x.detach()          # (inference: one graph to compile, no backward)
        out, ref = cl.compile(g)(x), g(x)
        assert type(out[1]) is type(ref[1]) and _same(out[1].indices, ref[1].indices)
        np.testing.assert_allclose(out[0].detach().numpy(), ref[0].detach().numpy(), rtol=1e-6)
        return
    out, ref = cl.compile(f, backend=backend)(x), f(x)
    assert type(out[4]) is type(ref[4]) and out[4]._fields == ("values", "indices")
    for o, r in zip(out[:4] + tuple(out[4]), ref[:4] + tuple(ref[4])):
        assert o.shape == r.shape and o.dtype == r.dtype     # values: inductor's exp may differ in the last bit
        np.testing.assert_allclose(o.detach().numpy(), r.detach().numpy(), rtol=1e-6, atol=1e-7)
    loss = sum(o.float().sum() for o in out[:4]) + out[4].values.sum()
    (gx,) = cl.autograd.grad(loss, x)
    (rx,) = cl.autograd.grad(sum(o.float().sum() for o in ref[:4]) + ref[4].values.sum(), x)
    np.testing.assert_allclose(gx.numpy(), rx.numpy(), rtol=1e-5, atol=1e-6)
