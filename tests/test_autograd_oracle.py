"""Oracle tests: course_lib's autograd against real torch (float64, tight tolerances).

Random programs (hypothesis draws the ops, shapes and values) run in both
libraries; values, gradients of every leaf and the ``grad_fn`` name of every
intermediate must agree.  Fixed cases pin the graph structure of the seed
example, the node names of the fact sheet, error messages and the in-place/view
(CopySlices) behaviour.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import require_torch

import course_lib as cl

pytestmark = pytest.mark.oracle

torch = require_torch()
torch.set_default_dtype(torch.float32)


def name(fn):
    return None if fn is None else type(fn).__name__


def both(arrays, requires_grad=True):
    a = [cl.tensor(x, dtype=cl.float64, requires_grad=requires_grad) for x in arrays]
    b = [torch.tensor(x, dtype=torch.float64, requires_grad=requires_grad) for x in arrays]
    return a, b


def close(x, y, rtol=1e-10, atol=1e-12):
    xa = x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)
    ya = y.detach().numpy(force=True)
    assert xa.shape == ya.shape, (xa.shape, ya.shape)
    np.testing.assert_allclose(xa, ya, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# random programs
# ---------------------------------------------------------------------------
def _bounded(v):
    return v.tanh()


UNARY = {
    "exp": lambda L, a: _bounded(a).exp(),
    "tanh": lambda L, a: a.tanh(),
    "sigmoid": lambda L, a: a.sigmoid(),
    "sin": lambda L, a: a.sin(),
    "cos": lambda L, a: a.cos(),
    "square": lambda L, a: a * a,
    "pow3": lambda L, a: _bounded(a) ** 3,
    "log": lambda L, a: (a * a + 1).log(),
    "sqrt": lambda L, a: (a * a + 0.5).sqrt(),
    "neg": lambda L, a: -a,
    "rsub": lambda L, a: 1 - a,
    "rdiv": lambda L, a: 1 / (a * a + 1),
    "scale": lambda L, a: a * 0.5 + 0.25,
    "t": lambda L, a: a.t() if a.dim() == 2 else a,
    "unsqueeze": lambda L, a: a.unsqueeze(0) if a.dim() < 3 else a,
    "sum_dim": lambda L, a: a.sum(-1) if a.dim() >= 1 else a,
    "sum_keep": lambda L, a: a.sum(0, keepdim=True) if a.dim() >= 1 else a,
    "mean_dim": lambda L, a: a.mean(0) if a.dim() >= 1 else a,
    "softmax": lambda L, a: L.softmax(a, -1) if a.dim() >= 1 else a,
    "log_softmax": lambda L, a: L.log_softmax(a, 0) if a.dim() >= 1 else a,
    "select": lambda L, a: a[0] if a.dim() >= 1 and a.shape[0] > 0 else a,
    "slice": lambda L, a: a[1:] if a.dim() >= 1 and a.shape[0] > 1 else a,
    "reshape": lambda L, a: a.reshape(-1),
    "clone": lambda L, a: a.clone(),
    "clamp": lambda L, a: a.clamp(-0.5, 0.5),
    "abs": lambda L, a: a.abs(),
    "relu": lambda L, a: a.relu(),
    "amax": lambda L, a: a.amax(-1) if a.dim() >= 1 else a,
    "expand": lambda L, a: a.unsqueeze(0).expand(2, *a.shape),
}
BINARY = {
    "add": lambda L, a, b: a + b,
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / (b * b + 1),
    "maximum": lambda L, a, b: L.maximum(a, b),
    "where": lambda L, a, b: L.where(a > b, a, b * 2),
    "atan2": lambda L, a, b: L.atan2(a, b * b + 1),
}


def _broadcastable(sa, sb):
    for x, y in zip(reversed(sa), reversed(sb)):
        if x != y and x != 1 and y != 1:
            return False
    return True


@st.composite
def programs(draw):
    n_leaves = draw(st.integers(1, 3))
    shapes = draw(st.lists(st.sampled_from([(3, 4), (4,), (3, 1), (), (1, 4)]), min_size=n_leaves,
                           max_size=n_leaves))
    seed = draw(st.integers(0, 2**31 - 1))
    steps = draw(st.lists(st.tuples(st.sampled_from(sorted(UNARY) + sorted(BINARY) + ["matmul"]),
                                    st.integers(0, 100), st.integers(0, 100)), min_size=1, max_size=10))
    return shapes, seed, steps


def run_program(L, leaves, steps):
    pool = list(leaves)
    trace = []
    for opname, i, j in steps:
        a = pool[i % len(pool)]
        if opname in UNARY:
            r = UNARY[opname](L, a)
        elif opname == "matmul":
            b = pool[j % len(pool)]
            if a.dim() == 2 and b.dim() == 1 and a.shape[1] == b.shape[0]:
                r = a @ b
            elif a.dim() == 2 and b.dim() >= 2 and a.shape[1] == b.shape[-2]:
                r = a @ b
            elif a.dim() >= 3 and b.dim() == 2 and a.shape[-1] == b.shape[0]:
                r = a @ b  # (1-D @ 2-D is named SqueezeBackward4 in torch: an in-place squeeze_)
            else:
                continue
        else:
            b = pool[j % len(pool)]
            if not _broadcastable(tuple(a.shape), tuple(b.shape)):
                continue
            r = BINARY[opname](L, a, b)
        pool.append(r)
        trace.append(r)
    loss = sum((p * (k + 1)).sum() for k, p in enumerate(pool[len(leaves):])) if trace else None
    return trace, loss


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_match_torch(prog):
    shapes, seed, steps = prog
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1.5, 1.5, size=s) for s in shapes]
    ca, ta = both(arrays)
    ctrace, closs = run_program(cl, ca, steps)
    ttrace, tloss = run_program(torch, ta, steps)
    assert len(ctrace) == len(ttrace)
    for c, t in zip(ctrace, ttrace):
        close(c, t)
        assert name(c.grad_fn) == name(t.grad_fn)
    if closs is None:
        return
    close(closs, tloss)
    closs.backward()
    tloss.backward()
    for c, t in zip(ca, ta):
        if t.grad is None:
            assert c.grad is None
        else:
            close(c.grad, t.grad, rtol=1e-9, atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_programs_second_order_match_torch(prog):
    shapes, seed, steps = prog
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1.5, 1.5, size=s) for s in shapes]
    ca, ta = both(arrays)
    _, closs = run_program(cl, ca, steps)
    _, tloss = run_program(torch, ta, steps)
    if closs is None:
        return
    cg = cl.autograd.grad(closs, ca, create_graph=True, allow_unused=True)
    tg = torch.autograd.grad(tloss, ta, create_graph=True, allow_unused=True)
    cs = sum(((g * g).sum() for g in cg if g is not None), cl.tensor(0.0, dtype=cl.float64))
    ts = sum(((g * g).sum() for g in tg if g is not None), torch.tensor(0.0, dtype=torch.float64))
    close(cs, ts, rtol=1e-9)
    if not ts.requires_grad:
        return
    tg2 = torch.autograd.grad(ts, ta, allow_unused=True)
    if not cs.requires_grad:
        # torch records e.g. ReluBackward0's threshold_backward as depending on the output (with a zero
        # derivative); course_lib's mask formula does not, so its second derivative is absent, not zero
        for t in tg2:
            assert t is None or np.all(t.detach().numpy(force=True) == 0)
        return
    cg2 = cl.autograd.grad(cs, ca, allow_unused=True)
    for c, t in zip(cg2, tg2):
        if t is None:
            assert c is None or np.all(c.numpy() == 0)
        else:
            close(c if c is not None else cl.zeros(tuple(t.shape), dtype=cl.float64), t, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------------------
# the seed example, node for node
# ---------------------------------------------------------------------------
def seed_graph(L, dtype):
    x1 = L.tensor(2.0, requires_grad=True, dtype=dtype)
    x2 = L.tensor(3.0, requires_grad=True, dtype=dtype)
    a = x1 * x2
    y1 = L.log(a)
    y2 = L.sin(x2)
    w = y1 * y2
    return x1, x2, a, y1, y2, w


def structure(fn, depth=0, seen=None):
    """A hashable picture of the graph below ``fn``: names, output numbers, leaf identities."""
    if fn is None:
        return None
    if name(fn) == "AccumulateGrad":
        return ("AccumulateGrad", tuple(fn.variable.shape))
    return (name(fn), tuple((structure(n, depth + 1), nr) for n, nr in fn.next_functions))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_seed_example_matches_torch(dt):
    c = seed_graph(cl, getattr(cl, dt))
    t = seed_graph(torch, getattr(torch, dt))
    for cv, tv in zip(c[2:], t[2:]):
        assert cv.item() == tv.item()
        assert name(cv.grad_fn) == name(tv.grad_fn)
    assert structure(c[-1].grad_fn) == structure(t[-1].grad_fn)
    cw, tw = c[-1], t[-1]
    acc_c = cw.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0]
    acc_t = tw.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0]
    assert acc_c.variable is c[0] and acc_t.variable is t[0]
    mul_c, mul_t = c[2].grad_fn, t[2].grad_fn
    assert mul_c._saved_self.item() == mul_t._saved_self.item()
    assert mul_c._saved_other.item() == mul_t._saved_other.item()
    cw.backward()
    tw.backward()
    assert c[0].grad.item() == t[0].grad.item()
    assert c[1].grad.item() == t[1].grad.item()


# ---------------------------------------------------------------------------
# node names of the fact sheet
# ---------------------------------------------------------------------------
NAMED = [
    ("add", lambda L, x, y: x + y), ("sub", lambda L, x, y: x - y), ("div", lambda L, x, y: x / y),
    ("mul", lambda L, x, y: x * y), ("neg", lambda L, x, y: -x), ("exp", lambda L, x, y: x.exp()),
    ("tanh", lambda L, x, y: x.tanh()), ("sigmoid", lambda L, x, y: x.sigmoid()),
    ("relu", lambda L, x, y: x.relu()), ("clone", lambda L, x, y: x.clone()),
    ("expand", lambda L, x, y: x[0:1].expand(3, 3)), ("cat", lambda L, x, y: L.cat([x, y])),
    ("stack", lambda L, x, y: L.stack([x, y])), ("where", lambda L, x, y: L.where(x > 0, x, y)),
    ("softmax", lambda L, x, y: L.softmax(x, 0)), ("log_softmax", lambda L, x, y: L.log_softmax(x, 0)),
    ("rsub", lambda L, x, y: 1 - x), ("rdiv", lambda L, x, y: 1 / x), ("matmul", lambda L, x, y: x @ y.t()),
    ("mm", lambda L, x, y: L.mm(x, y)), ("sum", lambda L, x, y: x.sum()), ("sum_dim", lambda L, x, y: x.sum(0)),
    ("pow_scalar", lambda L, x, y: x ** 2), ("pow_tensor", lambda L, x, y: x.abs() ** x),
    ("view", lambda L, x, y: x.view(9)), ("reshape", lambda L, x, y: x.reshape(9)), ("t", lambda L, x, y: x.t()),
    ("select", lambda L, x, y: x[0]), ("index", lambda L, x, y: x[[0]]), ("max", lambda L, x, y: x.max()),
    ("max_dim", lambda L, x, y: x.max(0)[0]), ("mean", lambda L, x, y: x.mean()),
    ("transpose", lambda L, x, y: x.transpose(0, 1)), ("permute", lambda L, x, y: x.permute(1, 0)),
    ("unsqueeze", lambda L, x, y: x.unsqueeze(0)), ("squeeze", lambda L, x, y: x[0:1].squeeze(0)),
    ("slice", lambda L, x, y: x[1:]), ("narrow", lambda L, x, y: x.narrow(0, 1, 2)),
    ("log", lambda L, x, y: x.abs().log()), ("sin", lambda L, x, y: x.sin()), ("sqrt", lambda L, x, y: x.abs().sqrt()),
    ("abs", lambda L, x, y: x.abs()), ("clamp", lambda L, x, y: x.clamp(-1, 1)), ("gather", lambda L, x, y:
     x.gather(1, L.tensor([[0], [1], [2]]))), ("diagonal", lambda L, x, y: x.diagonal()),
    ("flip", lambda L, x, y: x.flip(0)), ("cumsum", lambda L, x, y: x.cumsum(0)),
    ("prod", lambda L, x, y: x.prod()), ("amax", lambda L, x, y: x.amax(0)),
    ("logsumexp", lambda L, x, y: x.logsumexp(0)), ("to_float", lambda L, x, y: x.float()),
    ("masked_fill", lambda L, x, y: x.masked_fill(x > 0, 0.0)), ("tril", lambda L, x, y: x.tril()),
    ("unbind", lambda L, x, y: x.unbind(0)[1]), ("split", lambda L, x, y: x.split(2)[1]),
    ("chunk", lambda L, x, y: x.chunk(3)[2]), ("flatten", lambda L, x, y: x.flatten()),
    ("index_select", lambda L, x, y: x.index_select(0, L.tensor([2, 0]))),
    ("square", lambda L, x, y: x.square()), ("dot", lambda L, x, y: x[0].dot(y[0])),
    ("mv", lambda L, x, y: x.mv(y[0])), ("var", lambda L, x, y: x.var()), ("std", lambda L, x, y: x.std(0)),
]


@pytest.mark.parametrize("label, f", NAMED, ids=[n for n, _ in NAMED])
def test_grad_fn_names_match_torch(label, f):
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-1, 1, size=(3, 3)) for _ in range(2)]
    (cx, cy), (tx, ty) = both(arrays)
    cr, tr = f(cl, cx, cy), f(torch, tx, ty)
    assert name(cr.grad_fn) == name(tr.grad_fn)
    assert [name(n) for n, _ in cr.grad_fn.next_functions] == [name(n) for n, _ in tr.grad_fn.next_functions]
    close(cr, tr)
    cr.sum().backward()
    tr.sum().backward()
    for c, t in ((cx, tx), (cy, ty)):
        if t.grad is None:
            assert c.grad is None
        else:
            close(c.grad, t.grad)


def test_linear_names():
    rng = np.random.default_rng(1)
    (cx, cw, cb), (tx, tw, tb) = both([rng.standard_normal((2, 3)), rng.standard_normal((4, 3)),
                                       rng.standard_normal(4)])
    if not hasattr(cl, "nn"):
        pytest.skip("course_lib.nn not available")
    import torch.nn.functional as TF

    import course_lib.nn.functional as CF
    assert name(CF.linear(cx, cw, cb).grad_fn) == name(TF.linear(tx, tw, tb).grad_fn) == "AddmmBackward0"
    assert name(CF.linear(cx, cw).grad_fn) == name(TF.linear(tx, tw).grad_fn) == "MmBackward0"


# ---------------------------------------------------------------------------
# behaviour cases: accumulate, hooks, in-place on views, higher order
# ---------------------------------------------------------------------------
def _run_both(fn):
    out = []
    for L in (cl, torch):
        out.append(fn(L))
    return out


def test_retain_graph_accumulates_like_torch():
    def f(L):
        x1, x2, a, y1, y2, w = seed_graph(L, L.float32)
        w.backward(retain_graph=True)
        w.backward()
        return x1.grad.item(), x2.grad.item()
    c, t = _run_both(f)
    assert c == t
    assert c[0] == 0.14112000167369843


def test_hook_replaces_gradient_like_torch():
    def f(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.register_hook(lambda g: g * 10)
        y.sum().backward()
        return x.grad.tolist()
    c, t = _run_both(f)
    assert c == t == [30.0, 30.0]


def test_create_graph_like_torch():
    def f(L):
        x = L.tensor(3.0, requires_grad=True)
        (g,) = L.autograd.grad(x ** 3, x, create_graph=True)
        (g2,) = L.autograd.grad(g, x)
        return g.item(), name(g.grad_fn), g2.item()
    c, t = _run_both(f)
    assert c == t == (27.0, "MulBackward0", 18.0)


INPLACE_PROGRAMS = {
    "view_mul_": lambda L, x: _p(L, x, lambda y: y[0].mul_(2)),
    "setitem_col_zero": lambda L, x: _p(L, x, lambda y: y.__setitem__((slice(None), 1), 0)),
    "view_exp_": lambda L, x: _p(L, x, lambda y: y[1].exp_()),
    "transpose_view_zero_": lambda L, x: _p(L, x, lambda y: y.t()[0].zero_()),
    "base_mul_then_view": lambda L, x: _p(L, x, lambda y: y.mul_(2), view_first=True),
    "nonleaf_pow_": lambda L, x: _p(L, x, lambda y: y.pow_(2)),
    "nonleaf_add_tensor": lambda L, x: _p(L, x, lambda y: y.add_(x * x)),
    "view_add_tensor": lambda L, x: _p(L, x, lambda y: y[:, 0].add_(x[0] * 3)),
    "copy_into_slice": lambda L, x: _p(L, x, lambda y: y[1:].copy_(x[:1].exp())),
    "two_views": lambda L, x: _p(L, x, lambda y: (y[0].mul_(3), y[:, 1].add_(1))),
    "iadd_view": lambda L, x: _p(L, x, lambda y: y[0].__iadd__(x[1])),
}


def _p(L, x, mutate, view_first=False):
    y = x * 1.5
    v = y[0] if view_first else None
    mutate(y)
    out = (y * y).sum()
    if v is not None:
        out = out + (v * 4).sum()
    names = [name(y.grad_fn), [name(n) for n, _ in y.grad_fn.next_functions]]
    if v is not None:
        names.append(name(v.grad_fn))
    out.backward()
    return y.detach().numpy().copy(), x.grad.numpy().copy(), names


@pytest.mark.parametrize("label", sorted(INPLACE_PROGRAMS))
def test_inplace_programs_match_torch(label):
    rng = np.random.default_rng(3)
    arr = rng.uniform(-1, 1, size=(3, 3))
    (cx,), (tx,) = both([arr])
    cy, cg, cn = INPLACE_PROGRAMS[label](cl, cx)
    ty, tg, tn = INPLACE_PROGRAMS[label](torch, tx)
    np.testing.assert_allclose(cy, ty, rtol=1e-12)
    np.testing.assert_allclose(cg, tg, rtol=1e-10, atol=1e-12)
    assert cn[0] == tn[0]
    assert cn[1][0] == tn[1][0]
    if len(cn) > 2:
        assert cn[2] == tn[2]


def test_inplace_on_view_names_match_torch():
    def f(L):
        x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * 1
        v = y[0]
        v.mul_(2)
        return (name(y.grad_fn), [name(n) for n, _ in y.grad_fn.next_functions], name(v.grad_fn),
                [name(n) for n, _ in v.grad_fn.next_functions], v._version, y._version)
    c, t = _run_both(f)
    assert c == t


def test_setitem_on_plain_tensor_makes_it_require_grad_like_torch():
    def f(L):
        w = L.ones(2, requires_grad=True)
        z = L.zeros(3)
        z[1:] = w * 2
        r = (name(z.grad_fn), z.requires_grad, [name(n) for n, _ in z.grad_fn.next_functions])
        (z * L.tensor([1.0, 2.0, 3.0])).sum().backward()
        return r, w.grad.tolist()
    c, t = _run_both(f)
    assert c == t


ERRORS = {
    "second_backward": lambda L: _second(L),
    "non_scalar": lambda L: (L.tensor([1.0, 2.0], requires_grad=True) * 2).backward(),
    "no_grad": lambda L: L.tensor([1.0]).sum().backward(),
    "version": lambda L: _version(L),
    "leaf_inplace": lambda L: L.tensor([1.0], requires_grad=True).add_(1),
    "view_of_leaf": lambda L: L.tensor([1.0, 2.0], requires_grad=True)[0].add_(1),
    "shape": lambda L: (L.tensor([1.0, 2.0, 3.0], requires_grad=True) * 2).backward(L.tensor([1.0, 1.0])),
    "hook": lambda L: L.tensor([1.0]).register_hook(lambda g: g),
    "unused": lambda L: L.autograd.grad((L.tensor([1.0], requires_grad=True) * 2).sum(),
                                        [L.tensor([1.0], requires_grad=True)]),
    "requires_grad_int": lambda L: L.tensor([1, 2]).requires_grad_(),
}


def _second(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _version(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    y.sum().backward()


@pytest.mark.parametrize("label", sorted(ERRORS))
def test_error_messages_match_torch(label):
    msgs = []
    for L in (cl, torch):
        with pytest.raises(RuntimeError) as info:
            ERRORS[label](L)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_non_leaf_grad_warning_matches_torch():
    msgs = []
    for L in (cl, torch):
        x = L.tensor([1.0], requires_grad=True)
        y = x * 2
        with pytest.warns(UserWarning) as rec:
            y.grad
        msgs.append(str(rec[0].message).split(" (Triggered internally at ")[0])  # torch adds its C++ source line
    assert msgs[0] == msgs[1]


def test_autograd_grad_allow_unused_and_inputs_like_torch():
    def f(L):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = L.tensor([3.0, 4.0], requires_grad=True)
        m = a * b
        out = (m * m).sum()
        ga, gb, gc = L.autograd.grad(out, [a, b, L.tensor([0.0], requires_grad=True)], allow_unused=True,
                                     retain_graph=True)
        out.backward(inputs=[b])
        return ga.tolist(), gb.tolist(), gc, a.grad, b.grad.tolist()
    c, t = _run_both(f)
    assert c == t


def test_inplace_on_views_of_non_contiguous_base_like_torch():
    a = np.arange(12.0).reshape(3, 4) / 10

    def f(L):
        x = L.tensor(a, requires_grad=True)
        y = x.t().clone()          # preserve_format: strides (1, 4)
        y[1:, 0].mul_(3)
        y[:, 2] = x[0, :4] * 2
        y[0].exp_()
        (y * y).sum().backward()
        return tuple(y.stride()), type(y.grad_fn).__name__, x.grad.numpy().tolist(), y.detach().numpy().tolist()
    c, t = _run_both(f)
    assert c[:2] == t[:2]
    np.testing.assert_allclose(c[2], t[2], rtol=1e-12)
    np.testing.assert_allclose(c[3], t[3], rtol=1e-12)


def test_gradgrad_through_copy_slices_like_torch():
    def f(L):
        x = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = x * x
        y[1:].mul_(x[:2])
        (g,) = L.autograd.grad(y.sum(), x, create_graph=True)
        (g2,) = L.autograd.grad((g * g).sum(), x)
        return g.detach().numpy().tolist(), g2.numpy().tolist()
    c, t = _run_both(f)
    np.testing.assert_allclose(c[0], t[0], rtol=1e-12)
    np.testing.assert_allclose(c[1], t[1], rtol=1e-12)
