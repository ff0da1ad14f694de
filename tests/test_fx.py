"""course_lib.fx: graphs, node names, generated code, tracing, interpreters and passes.

The layouts checked here (node names, ``.code``, ``print_tabular``) are FX's: the
same programs traced by real torch.fx are compared in ``test_fx_oracle.py``.
Property tests generate small random programs, run them eagerly, traced, through
the Interpreter and after the passes, and require the same values.
"""
from __future__ import annotations

import copy
import io
import math
import operator
import os
import re
from contextlib import redirect_stdout

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import course_lib as cl
import course_lib.nn.functional as F
from course_lib import exp as cl_exp
from course_lib import fx, nn
from course_lib.fx.graph import _Namespace, _tabulate_simple
from course_lib.fx.passes import (
    ShapeProp,
    TensorMetadata,
    common_subexpression_elimination,
    constant_fold,
    dead_code_elimination,
)

SETTINGS = settings(max_examples=int(os.environ.get("COURSE_HYPOTHESIS_EXAMPLES", 150)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def close(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y)
    elif isinstance(a, cl.Tensor):
        assert isinstance(b, cl.Tensor) and a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    else:
        assert a == b


def tabular(graph: fx.Graph) -> str:
    buf = io.StringIO()
    with redirect_stdout(buf):
        graph.print_tabular()
    return buf.getvalue()


# ---------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------
def test_names_follow_fx_namespace_rules():
    ns = _Namespace()
    got = [ns.create_name(c, None) for c in
           ["add", "add", "sum", "abs", "x", "add", "if", "1st", "a.b", "", "add_5", "add_5", "getattr"]]
    assert got == ["add", "add_1", "sum_1", "abs_1", "x", "add_2", "if_1", "_1st", "a_b", "_unnamed", "add_5",
                   "add_6", "getattr_1"]
    # the builtin itself may keep its name (generated code calls ``getattr`` under that name)
    assert _Namespace().create_name("getattr", getattr) == "getattr"


def test_node_names_from_targets():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(cl.abs, (x,))
    b = g.call_function(operator.add, (a, 1))
    c = g.call_function(operator.add, (b, 1))
    s = g.call_method("sum", (c,))
    m = g.call_method("__getitem__", (s, 0))
    p = g.call_function(operator.truediv, (x, b))
    q = g.call_module("myConvLayer", (x,))
    assert [n.name for n in (a, b, c, s, m, p, q)] == ["abs_1", "add", "add_1", "sum_1", "getitem", "truediv",
                                                      "my_conv_layer"]


# ---------------------------------------------------------------------------
# nodes and graph editing
# ---------------------------------------------------------------------------
def build_small_graph():
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    a = g.call_function(operator.add, (x, y))
    b = g.call_function(operator.mul, (a, a))
    g.output(b)
    return g, x, y, a, b


def test_users_and_inputs_are_kept_in_both_directions():
    g, x, y, a, b = build_small_graph()
    assert a.all_input_nodes == [x, y] and b.all_input_nodes == [a]
    assert list(x.users) == [a] and list(a.users) == [b]
    b.args = (a, x)
    assert list(x.users) == [a, b] and b.all_input_nodes == [a, x]
    b.update_kwarg("alpha", y)
    assert list(y.users) == [a, b]
    assert [n.op for n in g.nodes] == ["placeholder", "placeholder", "call_function", "call_function", "output"]
    assert len(g.nodes) == 5 and [n.name for n in reversed(g.nodes)][0] == "output"


def test_replace_all_uses_with_and_erase():
    g, x, y, a, b = build_small_graph()
    with g.inserting_before(b):
        c = g.call_function(operator.sub, (x, y))
    assert [n.name for n in g.nodes] == ["x", "y", "add", "sub", "mul", "output"]
    changed = a.replace_all_uses_with(c)
    assert changed == [b] and b.args == (c, c) and not a.users
    with pytest.raises(RuntimeError, match=r"Tried to erase Node sub but it still had 1 users in the graph: "
                                           r"\{mul: None\}!"):
        g.erase_node(c)
    g.erase_node(a)
    assert [n.name for n in g.nodes] == ["x", "y", "sub", "mul", "output"]
    assert list(x.users) == [c]
    with g.inserting_after(x):
        d = g.call_function(operator.neg, (x,))
    assert [n.name for n in g.nodes][:3] == ["x", "neg", "y"] and d.prev is x and d.next.name == "y"
    g.lint()


def test_lint_catches_bad_order_and_foreign_nodes():
    g, x, y, a, b = build_small_graph()
    a.prepend(b)   # mul before its input add
    with pytest.raises(RuntimeError, match="was used before it has been defined"):
        g.lint()
    g2, x2, *_ = build_small_graph()
    g3, *_ = build_small_graph()
    n = next(iter(g3.nodes))
    with g3.inserting_after(n):
        g3.call_function(operator.neg, (x2,))
    with pytest.raises(RuntimeError, match="does not belong to this Graph"):
        g3.lint()


def test_lint_checks_targets_of_the_owning_module():
    root = nn.Module()
    root.lin = nn.Linear(2, 2)
    g = fx.Graph()
    x = g.placeholder("x")
    call = g.call_module("lin", (x,))
    g.output(call)
    gm = fx.GraphModule(root, g)
    gm.graph.lint()
    call.target = "missing"
    with pytest.raises(RuntimeError, match="references nonexistent attribute missing of"):
        gm.graph.lint()
    call.target = "lin.weight"
    with pytest.raises(RuntimeError, match="weight of lin does not reference an nn.Module"):
        gm.graph.lint()


def test_graph_str_lists_nodes():
    g, *_ = build_small_graph()
    assert str(g) == ("graph():\n"
                      "    %x : [num_users=1] = placeholder[target=x]\n"
                      "    %y : [num_users=1] = placeholder[target=y]\n"
                      "    %add : [num_users=1] = call_function[target=operator.add](args = (%x, %y), kwargs = {})\n"
                      "    %mul : [num_users=1] = call_function[target=operator.mul]"
                      "(args = (%add, %add), kwargs = {})\n"
                      "    return mul")


# ---------------------------------------------------------------------------
# print_tabular
# ---------------------------------------------------------------------------
class _Named:
    """A callable target that prints like torch's ``torch.abs`` (whose address varies)."""

    __name__ = "abs"

    def __call__(self, x):
        return cl.abs(x)

    def __str__(self):
        return "<built-in method abs of type object at 0x7f3da12cea40>"


def test_print_tabular_matches_fx_layout_of_the_toy_example():
    # graph 1 of the seed's toy_example under torch.compile (shared/reference/pytorch-facts.md, section 7)
    g = fx.Graph()
    a = g.placeholder("l_a_", )
    b = g.placeholder("l_b_")
    abs_1 = g.call_function(_Named(), (a,))
    add = g.call_function(operator.add, (abs_1, 1))
    x = g.create_node("call_function", operator.truediv, (a, add), name="x")
    s = g.call_method("sum", (b,))
    lt = g.call_function(operator.lt, (s, 0))
    g.output((lt, x))
    expected = (
        "opcode         name    target                                                  args         kwargs\n"
        "-------------  ------  ------------------------------------------------------  -----------  --------\n"
        "placeholder    l_a_    l_a_                                                    ()           {}\n"
        "placeholder    l_b_    l_b_                                                    ()           {}\n"
        "call_function  abs_1   <built-in method abs of type object at 0x7f3da12cea40>  (l_a_,)      {}\n"
        "call_function  add     <built-in function add>                                 (abs_1, 1)   {}\n"
        "call_function  x       <built-in function truediv>                             (l_a_, add)  {}\n"
        "call_method    sum_1   sum                                                     (l_b_,)      {}\n"
        "call_function  lt      <built-in function lt>                                  (sum_1, 0)   {}\n"
        "output         output  output                                                  ((lt, x),)   {}\n")
    # (torch's placeholders there are named l_a_ with target L_a_; the layout is what matters)
    assert tabular(g) == expected
    assert [n.name for n in g.nodes] == ["l_a_", "l_b_", "abs_1", "add", "x", "sum_1", "lt", "output"]


def test_tabulate_simple_pads_headers_and_breaks_lines():
    assert _tabulate_simple([["a", "b\nc"]], ["h", "long header"]) == (
        "h    long header\n"
        "---  -------------\n"
        "a    b\n"
        "     c")


# ---------------------------------------------------------------------------
# symbolic_trace and the generated code
# ---------------------------------------------------------------------------
def program(x, y):
    a = cl.abs(x) + 1
    b = a.sum(dim=0, keepdim=True)
    c = cl.sum(x)
    e = x[0, 1:]
    g = x.view(x.shape[0], -1)
    return (b + c, -e, cl.relu(g) * y, x.T, max(1, 2))


PROGRAM_CODE = """


def forward(self, x, y):
    abs_1 = course_lib.abs(x)
    add = abs_1 + 1;  abs_1 = None
    sum_1 = add.sum(dim = 0, keepdim = True);  add = None
    sum_2 = course_lib.sum(x)
    getitem = x[(0, slice(1, None, None))]
    getattr_1 = x.shape
    getitem_1 = getattr_1[0];  getattr_1 = None
    view = x.view(getitem_1, -1);  getitem_1 = None
    add_1 = sum_1 + sum_2;  sum_1 = sum_2 = None
    neg = -getitem;  getitem = None
    relu = course_lib.relu(view);  view = None
    mul = relu * y;  relu = y = None
    getattr_2 = x.T;  x = None
    return (add_1, neg, mul, getattr_2, 2)
    """


def test_symbolic_trace_code_and_results():
    gm = fx.symbolic_trace(program)
    assert gm.code == PROGRAM_CODE
    assert type(gm).__name__ == "program"
    for seed in range(5):
        cl.manual_seed(seed)
        x, y = cl.randn(3, 4), cl.randn(4)
        close(gm(x, y), program(x, y))
        close(fx.Interpreter(gm).run(x, y), program(x, y))


def test_generated_code_is_traceable_again():
    gm = fx.symbolic_trace(program)
    gm2 = fx.symbolic_trace(gm)
    assert gm2.code == gm.code


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 3)
        self.scale = nn.Parameter(cl.ones(3))
        self.register_buffer("shift", cl.zeros(3))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale + self.shift


MLP_CODE = """


def forward(self, x):
    fc1 = self.fc1(x);  x = None
    act = self.act(fc1);  fc1 = None
    fc2 = self.fc2(act);  act = None
    scale = self.scale
    mul = fc2 * scale;  fc2 = scale = None
    shift = self.shift
    add = mul + shift;  mul = shift = None
    return add
    """


def test_traced_mlp_has_leaf_modules_and_gets_same_values_and_gradients():
    cl.manual_seed(0)
    m = MLP()
    gm = fx.symbolic_trace(m)
    assert gm.code == MLP_CODE
    assert [(n.op, n.target) for n in gm.graph.nodes if n.op in ("call_module", "get_attr")] == [
        ("call_module", "fc1"), ("call_module", "act"), ("call_module", "fc2"), ("get_attr", "scale"),
        ("get_attr", "shift")]
    assert gm.fc1 is m.fc1 and gm.scale is m.scale and "shift" in gm._buffers
    x = cl.randn(5, 4)
    close(gm(x), m(x))
    gm(x).sum().backward()
    g_traced = m.fc1.weight.grad.clone()
    m.zero_grad()
    m(x).sum().backward()
    close(g_traced, m.fc1.weight.grad)
    assert repr(gm).startswith("MLP(") and str(gm).startswith(repr(gm) + "\n\n\n\ndef forward(self, x):")
    assert str(gm).endswith("\n# To see more debug info, please use `graph_module.print_readable()`")


def test_sequential_is_traced_through_and_user_modules_inlined():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return F.relu(self.lin(x)) + x

    m = nn.Sequential(Block(), nn.Tanh())
    gm = fx.symbolic_trace(m)
    assert [(n.op, n.name) for n in gm.graph.nodes] == [
        ("placeholder", "input_1"), ("call_module", "_0_lin"), ("call_function", "relu"),
        ("call_function", "add"), ("call_module", "_1"), ("output", "output")]
    assert "course_lib.nn.functional.relu(_0_lin)" in gm.code and 'getattr(self, "0").lin(input_1)' in gm.code
    x = cl.randn(2, 3)
    close(gm(x), m(x))


def test_tensor_constants_are_stored_on_the_module():
    c = cl.tensor([1.0, 2.0, 3.0])

    def f(x):
        return x + c + cl.ones(3)

    gm = fx.symbolic_trace(f)
    assert "_tensor_constant0 = self._tensor_constant0" in gm.code
    assert "_tensor_constant1 = self._tensor_constant1" in gm.code
    assert gm._tensor_constant0 is c
    x = cl.randn(3)
    close(gm(x), f(x))


def test_control_flow_on_a_traced_value_raises_fx_errors():
    def branch(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(fx.TraceError, match="^symbolically traced variables cannot be used as inputs to "
                                            "control flow$"):
        fx.symbolic_trace(branch)
    with pytest.raises(RuntimeError, match=r"'len' is not supported in symbolic tracing by default\. If you want "
                                           r"this call to be recorded, please call course_lib\.fx\.wrap\('len'\)"):
        fx.symbolic_trace(lambda x: x + len(x))

    def loop(x):
        for row in x:
            x = x + row
        return x

    with pytest.raises(fx.TraceError, match="^Proxy object cannot be iterated"):
        fx.symbolic_trace(loop)
    with pytest.raises(TypeError, match="'Proxy'"):
        fx.symbolic_trace(lambda x: int(x))
    assert isinstance(fx.TraceError("x"), ValueError)


def test_patches_are_undone_after_a_failed_trace():
    before = (nn.Module.__call__, nn.Module.__getattr__, cl.abs, F.relu, math.sqrt)
    with pytest.raises(fx.TraceError):
        fx.symbolic_trace(lambda x: cl.abs(x) if x else x)
    assert (nn.Module.__call__, nn.Module.__getattr__, cl.abs, F.relu, math.sqrt) == before


def test_unpacking_a_proxy_gives_getitems():
    def f(x):
        a, b = cl.chunk(x, 2)
        return a * b

    gm = fx.symbolic_trace(f)
    assert [n.name for n in gm.graph.nodes] == ["x", "chunk", "getitem", "getitem_1", "mul", "output"]
    x = cl.randn(4, 3)
    close(gm(x), f(x))


def test_math_and_imported_functions_are_wrapped():
    def f(x, n):
        return cl_exp(x) * math.sqrt(n)   # imported by name at module scope: patched in the globals

    gm = fx.symbolic_trace(f)
    assert "exp = course_lib.exp(x)" in gm.code and "sqrt = math_sqrt(n)" in gm.code
    x = cl.randn(3)
    close(gm(x, 4.0), f(x, 4.0))


def my_leaf(x, k):
    return x * k if k > 0 else x   # branches on k: must not be traced through


fx.wrap("my_leaf")


@fx.wrap
def my_other_leaf(x):
    return x + 1 if bool(x.sum() > 0) else x


def test_wrap_keeps_functions_as_one_node():
    def f(x, k):
        return my_other_leaf(my_leaf(x, k))

    gm = fx.symbolic_trace(f)
    assert [n.op for n in gm.graph.nodes].count("call_function") == 2
    assert "my_leaf = test_fx_my_leaf(x, k)" in gm.code
    assert gm.graph.find_nodes(op="call_function", target=my_leaf)[0].meta["is_wrapped"]
    with pytest.raises(AssertionError, match="target must not be None for call_function op"):
        gm.graph.find_nodes(op="call_function")
    x = cl.randn(3)
    for k in (-1.0, 2.0):
        close(gm(x, k), f(x, k))
    assert my_leaf is globals()["my_leaf"]   # unpatched after tracing


def test_concrete_args_fix_a_flag():
    def f(x, flag):
        return x + 1 if flag else x - 1

    gm = fx.symbolic_trace(f, concrete_args={"flag": True})
    assert gm.code == (
        "\n\n\ndef forward(self, x, flag_1):\n"
        "    eq = flag_1 == True;  flag_1 = None\n"
        "    _assert = course_lib.fx._assert(eq, 'flag has been specialized to have value True but got another "
        "value');  eq = _assert = None\n"
        "    add = x + 1;  x = None\n"
        "    return add\n    ")
    x = cl.randn(3)
    close(gm(x, True), x + 1)
    with pytest.raises(AssertionError, match="^flag has been specialized to have value True but got another value$"):
        gm(x, False)
    # the assert is a side effect: dead-code elimination keeps it
    assert not dead_code_elimination(gm)
    gm = fx.symbolic_trace(lambda x, bias=None: x if bias is None else x + bias, concrete_args={"bias": None})
    close(gm(x, None), x)
    with pytest.raises(AssertionError, match="bias has been specialized to have value None"):
        gm(x, 1.0)


def test_keyword_only_and_default_parameters():
    def f(x, y=2.0, *, z):
        return x * y + z

    gm = fx.symbolic_trace(f)
    assert [(n.name, n.args) for n in gm.graph.find_nodes(op="placeholder")] == [("x", ()), ("y", (2.0,)),
                                                                                ("z", ())]
    # a default before a required parameter would not be valid Python: the code drops it
    assert "def forward(self, x, y, z):" in gm.code
    x = cl.randn(2)
    close(gm(x, 3.0, x), f(x, 3.0, z=x))
    gm = fx.symbolic_trace(lambda x, y=2.0: x * y)
    assert "def forward(self, x, y = 2.0):" in gm.code
    close(gm(x), x * 2.0)



def test_star_args_and_kwargs_are_one_placeholder_each():
    def f(x, *rest, scale=2.0, **extra):
        return x * scale + rest[0] - extra["bias"]

    gm = fx.symbolic_trace(f)
    assert [(n.op, n.target) for n in gm.graph.find_nodes(op="placeholder")] == [
        ("placeholder", "x"), ("placeholder", "scale"), ("placeholder", "*rest"), ("placeholder", "**extra")]
    assert "def forward(self, x, scale = 2.0, *rest, **extra):" in gm.code
    x = cl.randn(3)
    close(gm(x, 1.0, x, bias=x), f(x, x, scale=1.0, bias=x))


def test_record_stack_traces_shows_user_lines_in_print_readable():
    class Tracer(fx.Tracer):
        record_stack_traces = True

    def f(x):
        y = cl.exp(x)
        return y + 1

    g = Tracer().trace(f)
    gm = fx.GraphModule(nn.Module(), g, "f")
    text = gm.print_readable(print_output=False)
    assert text.startswith("class f(course_lib.nn.Module):\n    def forward(self, x):\n")
    assert "test_fx.py:" in text and "in f, code: y = cl.exp(x)" in text and "code: return y + 1" in text


# ---------------------------------------------------------------------------
# GraphModule
# ---------------------------------------------------------------------------
def test_recompile_after_editing_the_graph():
    gm = fx.symbolic_trace(lambda x: cl.abs(x) + 1)
    for n in gm.graph.nodes:
        if n.target is cl.abs:
            n.target = cl.neg
    gm.recompile()
    assert "course_lib.neg(x)" in gm.code
    x = cl.randn(4)
    close(gm(x), -x + 1)


def test_graph_modules_do_not_share_forward_and_deepcopy_is_independent():
    gm1 = fx.symbolic_trace(lambda x: x + 1)
    gm2 = fx.symbolic_trace(lambda x: x * 3)
    x = cl.ones(2)
    close(gm1(x), x + 1)
    close(gm2(x), x * 3)
    m = MLP()
    gm = fx.symbolic_trace(m)
    gm_copy = copy.deepcopy(gm)
    assert gm_copy.code == gm.code and gm_copy.fc1 is not gm.fc1
    x = cl.randn(2, 4)
    close(gm_copy(x), gm(x))
    with cl.no_grad():
        gm_copy.fc1.weight.add_(1.0)
    assert not np.allclose(gm_copy(x).detach().numpy(), gm(x).detach().numpy())


def test_graph_module_from_a_dict_root():
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("sub.w")
    g.output(g.call_function(operator.matmul, (x, w)))
    wt = cl.randn(3, 2)
    gm = fx.GraphModule({"sub.w": wt}, g)
    assert gm.sub.w is wt
    x = cl.randn(4, 3)
    close(gm(x), x @ wt)
    with pytest.raises(RuntimeError, match="referenced target sub.w but that target was not provided"):
        fx.GraphModule({}, g)


def test_generated_code_shows_in_tracebacks():
    gm = fx.symbolic_trace(lambda x, y: x @ y)
    with pytest.raises(RuntimeError) as info:
        gm(cl.randn(2, 3), cl.randn(2, 3))
    frames = [f for f in info.traceback if "eval_with_key" in str(f.path)]
    assert frames and "matmul = x @ y" in str(frames[0].statement)


# ---------------------------------------------------------------------------
# Interpreter and Transformer
# ---------------------------------------------------------------------------
def test_interpreter_methods_can_be_overridden():
    class CountAndSwap(fx.Interpreter):
        calls = 0

        def call_function(self, target, args, kwargs):
            self.calls += 1
            if target is cl.abs:
                target = cl.neg
            return super().call_function(target, args, kwargs)

    gm = fx.symbolic_trace(lambda x: cl.abs(x).sum() + 1)
    interp = CountAndSwap(gm)
    x = cl.randn(5)
    close(interp.run(x), (-x).sum() + 1)
    assert interp.calls == 2 and [n.op for n in interp.env] == ["output"]   # the rest freed after last use
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x, but one was not "
                                           "passed in!"):
        fx.Interpreter(gm).run()


def test_interpreter_error_names_the_node():
    gm = fx.symbolic_trace(lambda x, y: x @ y)
    with pytest.raises(RuntimeError, match=r"While executing %matmul : \[num_users=1\] = "
                                           r"call_function\[target=operator.matmul\]"):
        fx.Interpreter(gm).run(cl.randn(2, 3), cl.randn(2, 3))


def test_transformer_rewrites_a_graph():
    class SwapAbsForNeg(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is cl.abs:
                target = cl.neg
            return super().call_function(target, args, kwargs)

    m = MLP()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = m

        def forward(self, x):
            return cl.abs(self.mlp.fc1(x)).sum(dim=1)

    gm = fx.symbolic_trace(Net())
    new = SwapAbsForNeg(gm).transform()
    assert "course_lib.neg(mlp_fc1)" in new.code and "self.mlp.fc1(x)" in new.code
    x = cl.randn(3, 4)
    close(new(x), (-m.fc1(x)).sum(dim=1))


# ---------------------------------------------------------------------------
# passes
# ---------------------------------------------------------------------------
def test_dead_code_elimination_keeps_side_effects():
    def f(x):
        unused = cl.exp(x) * 2  # noqa: F841 (a dead value: DCE removes it)
        x.add_(0.0)            # in place: kept although unused
        r = cl.rand(3)         # noqa: F841 (random: kept although unused)
        return x + 1

    gm = fx.symbolic_trace(f)
    assert dead_code_elimination(gm)
    assert [n.name for n in gm.graph.nodes] == ["x", "add_", "add", "output"]
    assert not dead_code_elimination(gm)

    def g(x):
        print(x)
        F.relu(x, inplace=True)
        return x

    gm = fx.symbolic_trace(g)
    assert not dead_code_elimination(gm)


def test_dead_code_elimination_removes_unused_submodules():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = nn.Linear(2, 2)

        def forward(self, x):
            self.a(x)
            return self.b(x)

    gm = fx.symbolic_trace(M())
    assert dead_code_elimination(gm)
    assert not hasattr(gm, "a") and hasattr(gm, "b")


def test_cse_merges_repeats_but_not_different_constants_or_random_ops():
    def f(x):
        a = cl.exp(x) * 2
        b = cl.exp(x) * 2
        c = x + 1
        d = x + 1.0
        e = x * 0.0
        g = x * -0.0
        r1 = F.dropout(x, 0.5)
        r2 = F.dropout(x, 0.5)
        return a + b, c, d, e, g, r1, r2

    gm = fx.symbolic_trace(f)
    assert common_subexpression_elimination(gm)
    names = [n.name for n in gm.graph.nodes]
    assert "exp_1" not in names and "mul_1" not in names
    assert {"add", "add_1", "mul_2", "mul_3", "dropout", "dropout_1"} <= set(names)
    assert "add_2 = mul + mul" in gm.code
    x = cl.randn(4)
    out = gm(x)
    close(out[:5], f(x)[:5])


def test_cse_leaves_graphs_with_mutation_alone():
    def f(x):
        a = x + 1
        b = x + 1
        a.add_(1)
        return b

    gm = fx.symbolic_trace(f)
    assert not common_subexpression_elimination(gm)
    x = cl.zeros(2)
    close(gm(x), cl.ones(2))


class Affine(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(cl.randn(3, 4))
        self.log_scale = nn.Parameter(cl.zeros(4))

    def forward(self, x):
        return (x @ self.w) * self.log_scale.exp() + (cl.ones(4) * 2).sum()


def test_constant_fold_with_and_without_freezing():
    cl.manual_seed(1)
    m = Affine()
    x = cl.randn(2, 3)
    gm = fx.symbolic_trace(m)
    assert "_tensor_constant0" in gm.code   # the eager constant: already a value
    assert not constant_fold(gm)             # parameters may change: nothing to fold
    assert constant_fold(gm, freeze=True)
    assert "_folded_constant0 = self._folded_constant0" in gm.code and "exp()" not in gm.code
    assert "log_scale" not in gm.code
    close(gm(x), m(x))

    # pure calls on constants, a Python result written into the code
    g = fx.Graph()
    xin = g.placeholder("x")
    k = g.call_function(operator.mul, (3, 4))
    o = g.call_function(cl.ones, (2,))
    s = g.call_method("sum", (o,))
    g.output(g.call_function(operator.add, (g.call_function(operator.mul, (xin, k)), s)))
    gm = fx.GraphModule(nn.Module(), g)
    assert constant_fold(gm)
    assert "mul_1 = x * 12" in gm.code and [n.op for n in gm.graph.nodes].count("get_attr") == 1
    close(gm(cl.ones(2)), cl.full((2,), 14.0))


def test_shape_prop_records_shapes_and_runs_on_meta_tensors():
    gm = fx.symbolic_trace(MLP())
    ShapeProp(gm).propagate(cl.randn(7, 4))
    metas = {n.name: n.meta["tensor_meta"] for n in gm.graph.nodes}
    assert metas["fc1"] == TensorMetadata((7, 8), cl.float32, True, (8, 1))
    assert metas["add"].shape == (7, 3) and gm.graph.find_nodes(op="output")[0].meta["type"] is cl.Tensor
    gm = fx.symbolic_trace(program)
    out = ShapeProp(gm).propagate(cl.empty(3, 4, device="meta"), cl.empty(4, device="meta"))
    assert out[0].device.type == "meta"
    metas = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}
    assert metas["sum_1"].shape == (1, 4) and metas["view"].stride == (4, 1) and metas["getattr_2"].shape == (4, 3)
    nodes = {n.name: n for n in gm.graph.nodes}
    assert metas["getattr_1"] is None and nodes["getattr_1"].meta["type"] is cl.Size


# ---------------------------------------------------------------------------
# random programs
# ---------------------------------------------------------------------------
UNARY = ["cl.abs({})", "-{}", "cl.relu({})", "cl.tanh({})", "cl.sin({})", "{}.exp().clamp(max=10.0)",
         "F.relu({})", "{}.sum(dim=0, keepdim=True)", "{}.mean()", "{}.t().t()", "{}.view(-1).view({}.shape)",
         "{}.clone().mul_(2)"]
BINARY = ["{} + {}", "{} * {}", "{} - {}", "cl.maximum({}, {})", "cl.add({}, {}, alpha=2)"]
SCALAR = ["{} + 1", "{} * 0.5", "2.0 - {}", "{} / 4", "{} ** 2"]


@st.composite
def programs(draw):
    """Python source of ``def f(x, y)``: a chain of ops on earlier values, some repeated, some unused."""
    lines, names = [], ["x", "y"]
    for i in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["unary", "binary", "scalar", "repeat"]))
        if kind == "repeat" and lines:
            expr = draw(st.sampled_from(lines)).split(" = ", 1)[1]
        elif kind == "binary":
            expr = draw(st.sampled_from(BINARY)).format(draw(st.sampled_from(names)), draw(st.sampled_from(names)))
        elif kind == "scalar":
            expr = draw(st.sampled_from(SCALAR)).format(draw(st.sampled_from(names)))
        else:
            v = draw(st.sampled_from(names))
            expr = draw(st.sampled_from(UNARY)).format(v, v)
        lines.append(f"v{i} = {expr}")
        names.append(f"v{i}")
    outs = draw(st.lists(st.sampled_from(names[2:]), min_size=1, max_size=3))
    body = "\n    ".join(lines)
    return f"def f(x, y):\n    {body}\n    return ({', '.join(outs)},)\n"


@SETTINGS
@given(src=programs(), seed=st.integers(0, 2**16))
def test_random_programs_traced_interpreted_and_optimised_equal_eager(src, seed):
    scope = {"cl": cl, "F": F}
    exec(src, scope)
    f = scope["f"]
    rng = np.random.default_rng(seed)
    x = cl.tensor(rng.standard_normal((3, 3)).astype(np.float32))
    y = cl.tensor(rng.standard_normal((3, 3)).astype(np.float32))
    expected = f(x, y)
    gm = fx.symbolic_trace(f)
    gm.graph.lint()
    close(gm(x, y), expected)
    close(fx.Interpreter(gm).run(x, y), expected)
    n_before = len(gm.graph.nodes)
    common_subexpression_elimination(gm)
    dead_code_elimination(gm)
    constant_fold(gm)
    gm.graph.lint()
    assert len(gm.graph.nodes) <= n_before
    close(gm(x, y), expected)
    # no two remaining call nodes compute the same expression, unless the graph mutates values
    keys = [(n.op, n.target, repr(n.args), repr(n.kwargs)) for n in gm.graph.nodes
            if n.op in ("call_function", "call_method")]
    assert len(keys) == len(set(keys)) or ".mul_(" in src
    # no dead nodes remain: a node nothing uses is an in-place op, kept for its effect
    assert all(n.users or n.target == "mul_" for n in gm.graph.nodes if n.op not in ("output", "placeholder"))
    # the generated code traces back to the same program (names may close up gaps left by the passes)
    again = fx.symbolic_trace(gm)
    assert [(n.op, n.target) for n in again.graph.nodes] == [(n.op, n.target) for n in gm.graph.nodes]
    close(again(x, y), expected)


@SETTINGS
@given(candidates=st.lists(st.sampled_from(["add", "add_1", "sum", "abs", "x", "x_2", "getitem", "if", "lambda",
                                            "l_a_", "add_10", "_", "max", "a.b", "0"]), max_size=25))
def test_namespace_names_are_unique_and_never_builtins(candidates):
    import builtins
    import keyword
    ns = _Namespace()
    names = [ns.create_name(c, None) for c in candidates]
    assert len(set(names)) == len(names)
    assert all(n.isidentifier() and not keyword.iskeyword(n) and not hasattr(builtins, n) for n in names)


# ---------------------------------------------------------------------------
# make_fx: graphs of registry ops, recorded by a dispatch mode
# ---------------------------------------------------------------------------
def test_make_fx_records_dispatched_ops():
    from course_lib.fx.experimental.proxy_tensor import make_fx
    cl.manual_seed(0)
    lin = nn.Linear(3, 2)

    def f(x, y):
        a, b = cl.chunk(y, 2)
        w = x.clone()
        w.add_(1)
        return (lin(x) * 2).relu().sum(dim=1) + a.sum(), w, b

    x, y = cl.randn(4, 3), cl.randn(4)
    gm = make_fx(f)(x, y)
    assert [n.name for n in gm.graph.nodes] == [
        "x_1", "y_1", "narrow", "narrow_1", "clone", "add_", "_param_constant0", "t", "_param_constant1",
        "addmm", "mul", "relu", "sum_1", "sum_2", "add", "output"]
    assert "add_ = aten.add_(clone, 1, 1);  clone = None" in gm.code
    assert "sum_1 = aten.sum(relu, 1, False, None);  relu = None" in gm.code
    assert gm._param_constant0 is lin.weight and gm._param_constant1 is lin.bias
    close(gm(x, y), f(x, y))
    close(fx.Interpreter(gm).run(x, y), f(x, y))
    table = tabular(gm.graph)
    assert re.search(r"^call_function  addmm +aten\.addmm +\(_param_constant1, x_1, t, 1, 1\) +\{\}$", table, re.M)
    # the in-place op stays through DCE and blocks CSE
    assert not dead_code_elimination(gm)
    assert not common_subexpression_elimination(gm)


def test_make_fx_on_meta_tensors_records_shapes_only():
    from course_lib.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(lambda x: (x @ x.t()).exp())(cl.empty(4, 3, device="meta"))
    assert [n.name for n in gm.graph.nodes] == ["x_1", "t", "mm", "exp", "output"]
    assert gm.graph.find_nodes(op="call_function", target=cl.OPS["mm"])[0].meta["tensor_meta"].shape == (4, 4)
    x = cl.randn(4, 3)
    close(gm(x), (x @ x.t()).exp())


def test_graphs_of_registry_ops_can_be_built_by_hand():
    g = fx.Graph()
    x = g.placeholder("x")
    m = g.call_function(cl.OPS["mul"], (x, x))
    m2 = g.call_function(cl.OPS["mul"], (x, x))
    g.output(g.call_function(cl.OPS["add"], (m, m2, 1)))
    gm = fx.GraphModule(nn.Module(), g)
    assert gm.code == ("\n\n\ndef forward(self, x):\n    mul = aten.mul(x, x)\n    mul_1 = aten.mul(x, x);  x = None\n"
                       "    add = aten.add(mul, mul_1, 1);  mul = mul_1 = None\n    return add\n    ")
    assert "call_function[target=aten.mul]" in str(gm.graph)
    assert common_subexpression_elimination(gm) and "add = aten.add(mul, mul, 1)" in gm.code
    x = cl.randn(3)
    close(gm(x), x * x * 2)


LAYERS = [lambda: nn.Linear(4, 4), lambda: nn.ReLU(), lambda: nn.Tanh(), lambda: nn.Sigmoid()]


class Residual(nn.Module):
    """A user module (traced through) around a leaf, reading a parameter and a plain attribute."""

    def __init__(self, inner: nn.Module, scale: float):
        super().__init__()
        self.inner = inner
        self.gain = nn.Parameter(cl.full((4,), scale))
        self.scale = scale

    def forward(self, x):
        return self.inner(x) * self.gain + x * self.scale


@SETTINGS
@given(layers=st.lists(st.tuples(st.integers(0, len(LAYERS) - 1), st.booleans(), st.floats(-2, 2)),
                       min_size=1, max_size=6),
       seed=st.integers(0, 2**16))
def test_random_models_traced_match_eager_values_and_gradients(layers, seed):
    cl.manual_seed(seed)
    mods = []
    for kind, wrap_it, scale in layers:
        layer = LAYERS[kind]()
        mods.append(Residual(layer, scale) if wrap_it else layer)
    model = nn.Sequential(*mods)
    gm = fx.symbolic_trace(model)
    # every node is a leaf call, a parameter read or an operator: nothing from inside the leaves
    assert {n.op for n in gm.graph.nodes} <= {"placeholder", "call_module", "get_attr", "call_function", "output"}
    assert all(n.target in (operator.mul, operator.add) for n in gm.graph.nodes if n.op == "call_function")
    x = cl.randn(3, 4, requires_grad=True)
    y_eager = model(x)
    y_eager.sum().backward()
    grads_eager = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    y_traced = gm(x)
    y_traced.sum().backward()
    grads_traced = [p.grad for p in model.parameters()] + [x.grad]
    close(y_traced, y_eager)
    close(grads_traced, grads_eager)
