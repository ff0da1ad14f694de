"""course_lib._functorch: the joint graph, the two partitioners and the compiled autograd Function.

The saved sets of the seed functions are PyTorch's (``test_aot_autograd_oracle.py`` asks real
torch); property tests run random small pointwise programs eagerly and through ``aot_function``
with each partitioner and require the same outputs and gradients.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import course_lib as cl
import course_lib.nn.functional as F
from course_lib import nn
from course_lib._functorch import (
    MinCutOptions,
    aot_function,
    aot_module,
    default_partition,
    make_boxed_func,
    min_cut_rematerialization_partition,
    saved_values,
    trace_joint,
)

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=int(os.environ.get("COURSE_HYPOTHESIS_EXAMPLES", 60)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
PARTITIONERS = [default_partition, min_cut_rematerialization_partition]


def leaf(*shape, requires_grad=True, seed=0):
    g = cl.Generator().manual_seed(seed)
    return cl.randn(*shape, generator=g).requires_grad_(requires_grad)


def partition(fn, args, partition_fn):
    joint = trace_joint(fn, *args)
    return partition_fn(joint.module, None, num_fwd_outputs=joint.num_fwd_outputs)


def placeholders(gm):
    return [n.name for n in gm.graph.nodes if n.op == "placeholder"]


def outputs(gm):
    (out,) = gm.graph.find_nodes(op="output")
    return [a.name if a is not None else None for a in out.args[0]]


def ops(gm):
    return [n.target.name for n in gm.graph.nodes if n.op == "call_function" and hasattr(n.target, "name")]


class Recorder:
    """A compiler that keeps the graphs it is given and runs them as they are."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append((gm, example_inputs))
        return gm.forward


def seed_a(a, b):
    return a / (a.abs() + 1) * b


def seed_cos(x):
    return cl.cos(cl.cos(x))


# ---------------------------------------------------------------------------
# the joint graph
# ---------------------------------------------------------------------------
def test_joint_graph_names_and_outputs():
    joint = trace_joint(seed_a, leaf(4), leaf(4, seed=1))
    gm = joint.module
    assert placeholders(gm) == ["primals_1", "primals_2", "tangents_1"]
    assert joint.num_fwd_outputs == 1 and joint.outputs_requiring_grad == (True,)
    out = outputs(gm)
    assert out[0] == "mul" and len(out) == 3   # the output, then one gradient per input
    assert ops(gm)[:4] == ["abs", "add", "div", "mul"]   # the forward first, as traced
    tags = {n.name: n.meta["partitioner_tag"] for n in gm.graph.nodes if n.op == "call_function"}
    assert [tags[n] for n in ("abs_1", "add", "div", "mul")] == ["is_forward"] * 4
    assert tags[out[1]] == tags[out[2]] == "is_backward"
    # the graph runs: outputs and gradients equal eager
    a, b, t = leaf(4), leaf(4, seed=1), leaf(4, requires_grad=False, seed=2)
    res = gm(a.detach(), b.detach(), t)
    eager = seed_a(a, b)
    ga, gb = cl.autograd.grad(eager, (a, b), t)
    for x, y in zip(res, (eager, ga, gb)):
        np.testing.assert_allclose(x.numpy(), y.detach().numpy(), rtol=1e-6)


def test_joint_graph_is_traced_on_meta_tensors():
    joint = trace_joint(seed_cos, leaf(3, 2))
    assert all(t.device.type == "meta" for t in joint.inputs)
    shapes = {n.name: n.meta["tensor_meta"].shape for n in joint.module.graph.nodes if n.op != "output"}
    assert shapes["primals_1"] == shapes["tangents_1"] == shapes["cos_1"] == (3, 2)


def test_tracing_on_values_gives_the_same_graph():
    c = cl.tensor([1.0, 2.0, 3.0, 4.0])
    fn = lambda a, b: (seed_a(a, b) * c).tanh()  # noqa: E731
    args = (leaf(4), leaf(4, seed=1))
    on_meta, on_values = trace_joint(fn, *args), trace_joint(fn, *args, on_meta=False)
    assert on_values.module.code == on_meta.module.code
    assert all(t.device.type == "cpu" for t in on_values.inputs)


def test_inputs_without_grad_get_no_gradient_and_outputs_without_grad_no_tangent():
    joint = trace_joint(lambda x, y: (x * y, x.argmax()), leaf(4), leaf(4, requires_grad=False))
    assert placeholders(joint.module) == ["primals_1", "primals_2", "tangents_1"]
    assert joint.outputs_requiring_grad == (True, False)
    assert outputs(joint.module)[3] is None


def test_saved_outputs_are_detached_where_saved_and_where_unpacked():
    # tanh saves its result; the engine unpacks it as a new tensor object: PyTorch's joint graph
    # has a detach at each end, and so does course_lib's (never a constant)
    joint = trace_joint(lambda x: x.tanh().tanh(), leaf(4))
    gm = joint.module
    assert not gm.graph.find_nodes(op="get_attr")
    detaches = [(n.name, n.args[0].name, n.meta["partitioner_tag"]) for n in gm.graph.nodes
                if getattr(n.target, "name", None) == "detach"]
    assert detaches == [("detach", "tanh", "is_forward"), ("detach_1", "tanh_1", "is_forward"),
                        ("detach_2", "detach_1", "is_backward"), ("detach_3", "detach", "is_backward")]


# ---------------------------------------------------------------------------
# the partitions (PyTorch's saved sets on the seed functions)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("fn, n_args, default_saved, min_cut_saved", [
    (seed_a, 2, ["primals_1", "primals_2", "add", "div"], ["primals_1", "primals_2"]),
    (seed_cos, 1, ["primals_1", "cos"], ["primals_1"]),
])
def test_seed_functions_save_what_pytorch_saves(fn, n_args, default_saved, min_cut_saved):
    args = [leaf(4, seed=i) for i in range(n_args)]
    fw, bw = partition(fn, args, default_partition)
    assert saved_values(bw) == default_saved
    assert outputs(fw)[1:] == default_saved
    fw, bw = partition(fn, args, min_cut_rematerialization_partition)
    assert saved_values(bw) == min_cut_saved
    assert outputs(fw)[1:] == min_cut_saved
    assert placeholders(bw) == min_cut_saved + ["tangents_1"]


def test_min_cut_recomputes_the_pointwise_ops_in_the_backward():
    fw, bw = partition(seed_a, [leaf(4), leaf(4, seed=1)], min_cut_rematerialization_partition)
    assert ops(fw) == ["abs", "add", "div", "mul"]
    assert ops(bw)[:3] == ["abs", "add", "div"]
    assert "return (mul, primals_1, primals_2)" in fw.code


def test_min_cut_never_recomputes_a_matmul():
    fn = lambda x, w: cl.mm(x, w).relu().sum()  # noqa: E731
    fw, bw = partition(fn, [leaf(4, 3), leaf(3, 2)], min_cut_rematerialization_partition)
    assert ops(bw).count("mm") == 2   # the two gradient matmuls only: mm is not recomputed
    assert saved_values(bw) == ["detach_1", "t", "t_1"]   # relu's saved output (as PyTorch)
    # without the allowlist ban, mm is still banned as compute intensive
    joint = trace_joint(fn, leaf(4, 3), leaf(3, 2))
    fw, bw = min_cut_rematerialization_partition(joint.module, num_fwd_outputs=1,
                                                 options=MinCutOptions(ban_if_not_in_allowlist=False))
    assert ops(bw).count("mm") == 2


def test_min_cut_keeps_a_reduction_instead_of_its_input():
    fn = lambda x: (x - x.mean(dim=0)) / x.var(dim=0).sqrt()  # noqa: E731
    fw, bw = partition(fn, [leaf(6, 3)], min_cut_rematerialization_partition)
    assert saved_values(bw) == ["primals_1", "mean", "sqrt"]


def test_the_flow_network_of_the_seed_function():
    from course_lib._functorch.partitioners import build_flow_network, classify_nodes
    joint = trace_joint(seed_a, leaf(4), leaf(4, seed=1))
    info = classify_nodes(joint.module, num_fwd_outputs=1)
    assert {n.name for n in info.required_fw_nodes} == {"primals_1", "primals_2", "abs_1", "add", "div", "mul"}
    network, banned = build_flow_network(joint.module.graph, info)
    assert {n.name for n in banned} == {"primals_1", "primals_2", "mul"}
    assert network["source"]["primals_1_in"]["reason"] == "cannot recompute: primal input"
    assert network["source"]["mul_in"]["reason"] == "cannot recompute: materialized in backward"  # the output
    # 16 bytes * 1.1 ** max(min(dist_from_bw, 100), 1): the inputs are read by the backward (distance 1),
    # abs_1 two ops before it; abs_1 fuses into its only user, add, so it is never written to memory
    # anyway: saving it costs twice
    assert network["primals_1_in"]["primals_1_out"]["capacity"] == int(16 * 1.1)
    assert network["abs_1_in"]["abs_1_out"]["capacity"] == 2 * int(16 * 1.1 ** 2)
    assert network["tangents_1_in"]["sink"]["capacity"] == math.inf


def test_partitions_do_not_change_the_joint_graph():
    joint = trace_joint(seed_a, leaf(4), leaf(4, seed=1))
    code = joint.module.code
    min_cut_rematerialization_partition(joint.module, num_fwd_outputs=1)
    default_partition(joint.module, num_fwd_outputs=1)
    assert joint.module.code == code


def test_min_cut_without_backward_falls_back_to_the_default():
    joint = trace_joint(lambda x: x.argmax(), leaf(4))
    fw, bw = min_cut_rematerialization_partition(joint.module, num_fwd_outputs=1)
    assert saved_values(bw) == [] and ops(fw) == ["argmax"]


# ---------------------------------------------------------------------------
# aot_function: values, gradients, compilers, caching
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("partition_fn", PARTITIONERS)
def test_compilers_get_the_forward_and_backward_graphs(partition_fn):
    fw_c, bw_c = Recorder(), Recorder()
    f = aot_function(seed_a, fw_c, bw_c, partition_fn=partition_fn)
    a, b = leaf(4), leaf(4, seed=1)
    out = f(a, b)
    assert out.grad_fn is not None and type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    out.sum().backward()
    (fw, fw_inputs), = fw_c.graphs
    (bw, bw_inputs), = bw_c.graphs
    assert placeholders(fw) == ["primals_1", "primals_2"]
    assert placeholders(bw) == saved_values(bw) + ["tangents_1"]
    assert all(t.device.type == "meta" for t in fw_inputs + bw_inputs)
    assert [tuple(t.shape) for t in bw_inputs] == [(4,)] * len(bw_inputs)
    ga, gb = a.grad, b.grad
    a.grad = b.grad = None
    seed_a(a, b).sum().backward()
    np.testing.assert_allclose(ga.numpy(), a.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), b.grad.numpy(), rtol=1e-6)


def test_bw_compiler_defaults_to_fw_compiler_and_boxed_compilers_work():
    compiled = []

    def boxed(gm, example_inputs):
        compiled.append(gm)
        return make_boxed_func(gm.forward)

    x = leaf(3)
    aot_function(seed_cos, boxed)(x).sum().backward()
    assert len(compiled) == 2
    np.testing.assert_allclose(x.grad.numpy(), (cl.sin(cl.cos(x)) * cl.sin(x)).detach().numpy(), rtol=1e-6)


def test_compiled_once_per_input_signature():
    rec = Recorder()
    f = aot_function(lambda x: x.sin() * 2, rec)
    f(leaf(3))
    f(leaf(3, seed=1))
    assert len(rec.graphs) == 2          # forward and backward, once
    f(leaf(4))
    assert len(rec.graphs) == 4          # a new shape compiles again
    f(leaf(3, requires_grad=False))      # nothing requires grad: the inference graph only
    assert len(rec.graphs) == 5 and placeholders(rec.graphs[-1][0]) == ["arg0_1"]
    with cl.no_grad():
        y = f(leaf(3))
    assert len(rec.graphs) == 6 and not y.requires_grad


def test_inference_compiler_gets_the_graph_without_grad():
    fw_c, inf_c = Recorder(), Recorder()
    f = aot_function(seed_cos, fw_c, inference_compiler=inf_c)
    with cl.no_grad():
        f(leaf(3))
    assert not fw_c.graphs and ops(inf_c.graphs[0][0]) == ["cos", "cos"]


def test_non_tensor_arguments_are_baked_in():
    rec = Recorder()
    f = aot_function(lambda x, k: x * k, rec)
    x = leaf(3)
    np.testing.assert_allclose(f(x, 2.0).detach().numpy(), (x * 2.0).detach().numpy())
    np.testing.assert_allclose(f(x, 3.0).detach().numpy(), (x * 3.0).detach().numpy())
    assert len(rec.graphs) == 4 and placeholders(rec.graphs[0][0]) == ["primals_1"]


@pytest.mark.parametrize("partition_fn", PARTITIONERS)
def test_several_outputs_some_without_gradient(partition_fn):
    fn = lambda x, y: (x.sin(), (x * y).sum(), x.argmax())  # noqa: E731
    x, y = leaf(4), leaf(4, seed=1)
    out = aot_function(fn, Recorder(), partition_fn=partition_fn)(x, y)
    assert isinstance(out, tuple) and len(out) == 3 and not out[2].requires_grad
    (out[0] * 3).sum().backward()          # the second output's gradient is missing: zeros
    gx = x.grad
    x.grad = None
    e = fn(x, y)
    (e[0] * 3).sum().backward()
    np.testing.assert_allclose(gx.numpy(), x.grad.numpy(), rtol=1e-6)
    assert y.grad is None or not y.grad.numpy().any()


@pytest.mark.parametrize("partition_fn", PARTITIONERS)
def test_layers_compile_to_the_same_gradients(partition_fn):
    x, w, b = leaf(8, 5), leaf(6, 5, seed=1), leaf(6, seed=2)
    target = cl.tensor([0, 2, 1, 5, 4, 3, 2, 1])

    def fn(x, w, b):
        h = F.layer_norm(F.linear(x, w, b).relu(), (6,))
        return F.cross_entropy(F.log_softmax(h, dim=1), target)

    loss = aot_function(fn, Recorder(), partition_fn=partition_fn)(x, w, b)
    loss.backward()
    got = [t.grad for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    eager = fn(x, w, b)
    eager.backward()
    np.testing.assert_allclose(loss.item(), eager.item(), rtol=1e-6)
    for g, t in zip(got, (x, w, b)):
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_in_place_op_on_a_computed_value_is_recorded_out_of_place():
    fn = lambda x: (x * 2).add_(1).relu_()  # noqa: E731
    joint = trace_joint(fn, leaf(4))
    assert ops(joint.module)[:3] == ["mul", "add", "relu"]
    x = leaf(4)
    out = aot_function(fn, Recorder(), partition_fn=min_cut_rematerialization_partition)(x)
    out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), fn(x).detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), ((x * 2 + 1) > 0).float().numpy() * 2)


def test_an_input_modified_in_place_is_copied_back():
    def count(x, counter):
        counter.add_(1)
        return x * counter

    rec = Recorder()
    f = aot_function(count, rec)
    x, counter = leaf(3), cl.zeros(3)
    f(x, counter)
    out = f(x, counter)
    out.sum().backward()
    np.testing.assert_array_equal(counter.numpy(), [2, 2, 2])
    np.testing.assert_allclose(out.detach().numpy(), (x * 2).detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), [2, 2, 2])
    fw = rec.graphs[0][0]
    assert outputs(fw)[:2] == ["add", "mul"]     # the input's new value first, then the output
    with cl.no_grad():
        f(x, counter)                             # the inference graph copies back too
    np.testing.assert_array_equal(counter.numpy(), [3, 3, 3])


def test_refused_programs_say_why():
    with pytest.raises(NotImplementedError, match="modifies an input that requires grad"):
        aot_function(lambda x: x.mul_(2), Recorder())(leaf(3))
    c = cl.zeros(3)
    with pytest.raises(NotImplementedError, match="modifies a tensor the function captured"):
        aot_function(lambda x: x * c.add_(1), Recorder())(leaf(3))

    def read_stale_view(x):
        y = x * 2
        v = y[0:2]
        y.add_(1)
        return v * 3
    with pytest.raises(NotImplementedError, match="another view"):
        aot_function(read_stale_view, Recorder())(leaf(3))
    w = leaf(3)
    with pytest.raises(RuntimeError, match="requires grad but is not one of its inputs"):
        aot_function(lambda x: x * w, Recorder())(leaf(3))
    with pytest.raises(TypeError, match="must return a Tensor"):
        aot_function(lambda x: {"y": x * 2}, Recorder())(leaf(3))


def test_a_data_dependent_branch_cannot_be_traced_on_meta():
    def branchy(x):
        return x * 2 if x.sum() > 0 else x
    with pytest.raises(RuntimeError, match="meta"):
        aot_function(branchy, Recorder())(leaf(3))


def test_constants_in_the_closure_are_graph_attributes():
    c = cl.tensor([1.0, 2.0, 3.0])
    x = leaf(3)
    f = aot_function(lambda x: x * c + cl.tensor(3.0), Recorder())
    out = f(x)
    out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), (x * c + 3).detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), c.numpy())


def test_double_backward_fails_as_in_pytorch():
    x = leaf(3)
    (g,) = cl.autograd.grad(aot_function(lambda x: x ** 3, Recorder())(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        g.sum().backward()


# ---------------------------------------------------------------------------
# aot_module: a training loop
# ---------------------------------------------------------------------------
def _mlp(seed):
    cl.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))


@pytest.mark.parametrize("partition_fn", PARTITIONERS)
def test_aot_module_trains_like_eager(partition_fn):
    eager, model = _mlp(0), _mlp(0)
    rec = Recorder()
    compiled = aot_module(model, rec, partition_fn=partition_fn)
    x = leaf(8, 5, requires_grad=False)
    y = cl.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    opts = [cl.optim.SGD(m.parameters(), lr=0.1) for m in (eager, model)]
    for _ in range(3):
        for m, opt in zip((eager, compiled), opts):
            opt.zero_grad()
            F.cross_entropy(m(x), y).backward()
            opt.step()
    for (name, p), q in zip(eager.named_parameters(), model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert len(rec.graphs) == 2          # compiled once
    assert placeholders(rec.graphs[0][0])[:7] == [f"primals_{i}" for i in range(1, 8)]


@pytest.mark.parametrize("partition_fn", PARTITIONERS)
def test_aot_module_batch_norm_updates_its_buffers_and_recompiles_for_eval(partition_fn):
    def model():
        cl.manual_seed(2)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))

    eager, compiled_model = model(), model()
    compiled = aot_module(compiled_model, Recorder(), partition_fn=partition_fn)
    x = leaf(8, 4, requires_grad=False)
    for _ in range(2):
        eager(x).sum().backward()
        compiled(x).sum().backward()
    for name, b in eager.named_buffers():
        np.testing.assert_allclose(compiled_model.get_buffer(name).numpy(), b.numpy(), rtol=1e-6, err_msg=name)
    for p, q in zip(eager.parameters(), compiled_model.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    compiled.eval()
    eager.eval()
    np.testing.assert_allclose(compiled(x).detach().numpy(), eager(x).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_aot_module_leaves_the_module_as_it_was():
    model = _mlp(1)
    before = [p for p in model.parameters()]
    aot_module(model, Recorder())(leaf(2, 5)).sum().backward()
    assert [p for p in model.parameters()] == before
    assert all(p.grad is not None for p in model.parameters())


# ---------------------------------------------------------------------------
# random pointwise programs: compiled == eager, for both partitioners
# ---------------------------------------------------------------------------
UNARY = {
    "sin": cl.sin, "cos": cl.cos, "tanh": cl.tanh, "sigmoid": cl.sigmoid, "neg": cl.neg, "abs": cl.abs,
    "relu": cl.relu, "exp": lambda a: cl.exp(a.clamp(-3, 3)), "log": lambda a: cl.log(a.abs() + 1),
    "sqrt": lambda a: cl.sqrt(a * a + 1), "scale": lambda a: a * 1.5 - 0.25,
    "sum": lambda a: a.sum(dim=-1, keepdim=True), "mean": lambda a: a.mean(),
}
BINARY = {
    "add": cl.add, "sub": cl.sub, "mul": cl.mul, "div": lambda a, b: a / (b.abs() + 1),
    "maximum": cl.maximum, "where": lambda a, b: cl.where(a > b, a, b * 0.5),
}
SHAPES = [(2, 3), (3,), (1, 3), (2, 1), ()]


@st.composite
def programs(draw):
    n_in = draw(st.integers(1, 3))
    shapes = [draw(st.sampled_from(SHAPES)) for _ in range(n_in)]
    grads = [draw(st.booleans()) for _ in range(n_in)]
    steps = []
    for k in range(draw(st.integers(1, 8))):
        n_values = n_in + k
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(sorted(UNARY))), draw(st.integers(0, n_values - 1))))
        else:
            steps.append((draw(st.sampled_from(sorted(BINARY))), draw(st.integers(0, n_values - 1)),
                          draw(st.integers(0, n_values - 1))))
    n_values = n_in + len(steps)
    outs = sorted(set(draw(st.lists(st.integers(n_in, n_values - 1), min_size=1, max_size=2))))
    return shapes, grads, steps, outs, draw(st.integers(0, 2 ** 16))


def _program(steps, outs):
    def fn(*inputs):
        values = list(inputs)
        for name, *args in steps:
            op = UNARY.get(name) or BINARY[name]
            values.append(op(*(values[i] for i in args)))
        return tuple(values[i] for i in outs)
    return fn


@SETTINGS
@given(programs(), st.sampled_from(PARTITIONERS))
def test_random_pointwise_programs_match_eager(program, partition_fn):
    shapes, grads, steps, outs, seed = program
    fn = _program(steps, outs)
    g = cl.Generator().manual_seed(seed)
    inputs = [cl.randn(*s, generator=g).requires_grad_(rg) for s, rg in zip(shapes, grads)]
    compiled = aot_function(fn, Recorder(), partition_fn=partition_fn)
    results = []
    for run in (fn, compiled):
        for t in inputs:
            t.grad = None
        out = run(*inputs)
        weights = [cl.randn(*o.shape, generator=cl.Generator().manual_seed(i)) for i, o in enumerate(out)]
        loss = sum((o * w).sum() for o, w in zip(out, weights) if o.requires_grad)
        if isinstance(loss, cl.Tensor):
            loss.backward()
        results.append(([o.detach().numpy() for o in out],
                        [None if t.grad is None else t.grad.numpy() for t in inputs]))
    (e_out, e_grad), (c_out, c_grad) = results
    for a, b in zip(e_out, c_out):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    for a, b in zip(e_grad, c_grad):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# networkx is an optional dependency
# ---------------------------------------------------------------------------
def test_without_networkx_the_compiler_says_which_extra_and_eager_still_imports():
    code = ("import sys\n"
            "sys.modules['networkx'] = None\n"
            "import course_lib, course_lib.nn, course_lib.fx\n"
            "try:\n"
            "    import course_lib._functorch\n"
            "except ImportError as e:\n"
            "    print('ImportError:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "ImportError: course_lib._functorch" in out.stdout and "'.[compile]'" in out.stdout


def test_importing_course_lib_does_not_import_networkx():
    code = "import sys, course_lib, course_lib.nn, course_lib.fx; print('networkx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"
