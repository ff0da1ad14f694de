"""course_lib.compile against torch.compile (torch 2.13): toy_example's graphs, explain, break reasons, names."""
from __future__ import annotations

import pytest
from oracle import require_torch

import course_lib as cl
import course_lib._dynamo as dynamo

torch = require_torch()


@pytest.fixture(autouse=True)
def _fresh():
    dynamo.reset()
    torch._dynamo.reset()
    yield
    dynamo.reset()
    torch._dynamo.reset()


def _rows(gm) -> list[tuple]:
    out = []
    for n in gm.graph.nodes:
        t = n.target
        name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
        out.append((n.op, n.name, name, str(n.args)))
    return out


def _toy(lib):
    def toy_example(a, b):
        x = a / (lib.abs(a) + 1)
        if b.sum() < 0:
            b = b * -1
        return x * b
    return toy_example


def _graphs(lib, compile_fn, inputs) -> list[list[tuple]]:
    gms = []

    def my_compiler(gm, example_inputs):
        gms.append(gm)
        return gm.forward

    f = compile_fn(_toy(lib), backend=my_compiler)
    for a, b in inputs:
        f(a, b)
    return [_rows(g) for g in gms]


def test_toy_example_tables_match_torch():
    cl.manual_seed(0)
    torch.manual_seed(0)
    ours = _graphs(cl, cl.compile, [(cl.randn(10), cl.ones(10)), (cl.randn(10), -cl.ones(10))])
    theirs = _graphs(torch, torch.compile, [(torch.randn(10), torch.ones(10)), (torch.randn(10), -torch.ones(10))])
    assert len(ours) == len(theirs) == 3
    assert ours == theirs


@pytest.mark.parametrize("sign", [1, -1])
def test_explain_counts_and_reason_match_torch(sign):
    ours = dynamo.explain(_toy(cl))(cl.randn(10), sign * cl.ones(10))
    theirs = torch._dynamo.explain(_toy(torch))(torch.randn(10), sign * torch.ones(10))
    for field in ("graph_count", "graph_break_count", "op_count"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert [len(o) for o in ours.ops_per_graph] == [len(o) for o in theirs.ops_per_graph]
    assert [r.reason for r in ours.break_reasons] == [r.reason for r in theirs.break_reasons]
    assert ([(f.lineno, f.name) for r in ours.break_reasons for f in r.user_stack]
            == [(f.lineno, f.name) for r in theirs.break_reasons for f in r.user_stack])
    assert str(ours).split("Ops per Graph")[0].replace(__file__, "F") == \
        str(theirs).split("Ops per Graph")[0].replace(__file__, "F")


def _break_fns(lib):
    def item(x):
        y = x * 2
        v = y.item()
        return y + v

    def printing(x):
        y = x * 2
        print("y")
        return y + 1

    def tolist(x):
        y = x * 2
        y.tolist()
        return y + 1
    return item, printing, tolist


def test_break_reasons_are_the_first_line_of_torchs(capsys):
    for ours_fn, theirs_fn in zip(_break_fns(cl), _break_fns(torch)):
        ours = dynamo.explain(ours_fn)(cl.randn(1))
        theirs = torch._dynamo.explain(theirs_fn)(torch.randn(1))
        assert ours.graph_break_count == theirs.graph_break_count == 1, ours_fn.__name__
        assert ours.break_reasons[0].reason == theirs.break_reasons[0].reason.split("\n")[0]
        assert ours.break_reasons[0].user_stack[0].lineno == theirs.break_reasons[0].user_stack[0].lineno


def _print_fns(lib):
    def noisy(x):
        y = x.exp()
        print("mean so far:", y.mean().item())
        return y * 2

    def print_first(x):
        print("start")
        return x + 1

    def two_prints(x):
        y = x + 1
        print("a")
        print("b")
        return y * 2

    def item_then_print(x):
        y = x + 1
        v = y.sum().item()
        print(v)
        return y * 2

    def print_last(x):
        y = x + 1
        print("a")
        return y

    def print_only(x):
        print("a")
        return x
    return noisy, print_first, two_prints, item_then_print, print_last, print_only


def test_explain_counts_breaks_as_torch_does_around_prints_and_items(capsys):
    """torch counts graph_count - 1 breaks and gives a reason per graph that ended at a break: a print or
    .item() that would end an empty graph is no break."""
    for ours_fn, theirs_fn in zip(_print_fns(cl), _print_fns(torch)):
        ours = dynamo.explain(ours_fn)(cl.randn(4))
        theirs = torch._dynamo.explain(theirs_fn)(torch.randn(4))
        got = (ours.graph_count, ours.graph_break_count, [r.reason for r in ours.break_reasons],
               [f.lineno for r in ours.break_reasons for f in r.user_stack])
        want = (theirs.graph_count, theirs.graph_break_count,
                [r.reason.split("\n")[0] for r in theirs.break_reasons],
                [f.lineno for r in theirs.break_reasons for f in r.user_stack])
        assert got == want, ours_fn.__name__


def _module(lib, glob):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)
            self.register_buffer("buf", lib.ones(3))

        def forward(self, x):
            return x * self.lin.weight.sum() + self.buf + glob[0]
    return M()


def test_placeholder_names_of_parameters_and_buffers_match_torch():
    names = []
    for lib in (cl, torch):
        gms = []
        lib.compile(_module(lib, [lib.ones(3)]), backend=lambda gm, ex: gms.append(gm) or gm.forward)(lib.ones(2, 3))
        names.append([n.name for n in gms[0].graph.nodes if n.op == "placeholder"][:3])
    assert names[0] == names[1]


def test_state_dict_keys_of_a_compiled_module_match_torch():
    keys = [list(lib.compile(lib.nn.Linear(2, 2), backend="eager").state_dict()) for lib in (cl, torch)]
    assert keys[0] == keys[1]


def test_fullgraph_error_matches_torchs_type_and_first_line():
    errors = []
    for lib, mod in ((cl, dynamo), (torch, torch._dynamo)):
        f = lib.compile(_toy(lib), fullgraph=True, backend="eager")
        with pytest.raises(mod.exc.Unsupported) as e:
            f(lib.randn(3), lib.randn(3))
        errors.append((type(e.value).__name__, str(e.value).split("\n")[0], isinstance(e.value, RuntimeError)))
    assert errors[0] == errors[1]


def test_recompile_limit_has_torchs_names_and_default():
    assert dynamo.config.recompile_limit == torch._dynamo.config.recompile_limit
    assert dynamo.config.cache_size_limit == torch._dynamo.config.cache_size_limit
