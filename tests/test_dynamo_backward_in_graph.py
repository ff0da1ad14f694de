"""The backward compiled into the graph (``config.compiled_autograd``, on for ``mode="reduce-overhead"``).

``loss.backward()`` on a scalar loss the graph computed ends the graph with one program returning the
loss and the gradients of its leaf inputs; the engine does not run.  It must look exactly like
eager: the same ``.grad`` values, the loss's ``grad_fn`` with its saved values freed, and every case
where the engine would do something the program cannot (hooks, a gradient to accumulate into,
another tensor that needs a ``grad_fn``, ``retain_graph``, a graph that saves nothing) left to the
engine.
"""
from __future__ import annotations

import numpy as np
import pytest

import course_lib as cl
import course_lib._dynamo as dynamo
import course_lib.nn.functional as F
from course_lib._dynamo import capture
from course_lib._dynamo.config import config


@pytest.fixture(autouse=True)
def backward_in_graph(monkeypatch):
    dynamo.reset()
    ran: list[bool] = []
    real = capture.Capture._materialise_joint

    def counting(self):
        done = real(self)
        ran.append(done)
        return done
    monkeypatch.setattr(capture.Capture, "_materialise_joint", counting)
    monkeypatch.setattr(config, "compiled_autograd", True)
    yield ran
    dynamo.reset()


def _params(seed: int = 0):
    rng = np.random.default_rng(seed)
    shapes = [(8, 6), (8,), (3, 8), (3,)]
    return [cl.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in shapes]


def _data(seed: int = 1):
    rng = np.random.default_rng(seed)
    return cl.tensor(rng.standard_normal((5, 6)).astype(np.float32)), cl.tensor(rng.integers(0, 3, 5))


def _loss(w1, b1, w2, b2, x, y):
    return F.cross_entropy(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2), y)


def _train(compiled: bool, steps: int = 4, backend: str = "aot_eager"):
    params = _params()
    x, y = _data()
    opt = cl.optim.SGD(params, lr=0.1)

    def step():
        opt.zero_grad()
        loss = _loss(*params, x, y)
        loss.backward()
        opt.step()
        return loss
    fn = cl.compile(step, backend=backend) if compiled else step
    losses = [fn().item() for _ in range(steps)]
    return losses, [p.detach().numpy().copy() for p in params], [p.grad.numpy().copy() for p in params]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_training_step_matches_eager_with_one_program_for_forward_and_backward(backend, backward_in_graph):
    eager = _train(False)
    got = _train(True, backend=backend)
    np.testing.assert_allclose(got[0], eager[0], rtol=1e-6)
    for a, b in zip(got[1] + got[2], eager[1] + eager[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert backward_in_graph and all(backward_in_graph), backward_in_graph
    (cache,) = dynamo.eval_frame._CACHES.values()
    assert len(cache.graphs) == 1 and cache.entries == 1      # compiled once, then cache hits


def test_reduce_overhead_turns_it_on_and_the_inductor_program_matches_eager(monkeypatch, backward_in_graph):
    pytest.importorskip("numba")
    monkeypatch.setattr(config, "compiled_autograd", False)
    params = _params()
    x, y = _data()
    opt = cl.optim.SGD(params, lr=0.1)

    def step():
        opt.zero_grad()
        loss = _loss(*params, x, y)
        loss.backward()
        opt.step()
        return loss
    losses = [cl.compile(step, mode="reduce-overhead")().item() for _ in range(3)]
    eager = _train(False, steps=3)
    np.testing.assert_allclose(losses, eager[0], rtol=1e-5)
    for p, e in zip(params, eager[1]):
        np.testing.assert_allclose(p.detach().numpy(), e, rtol=1e-5, atol=1e-6)
    assert backward_in_graph == [True] * 3
    # the default mode keeps torch's behaviour: the graph ends at backward and the engine runs
    dynamo.reset()
    backward_in_graph.clear()
    cl.compile(step, backend="aot_eager")()
    assert backward_in_graph == []


def _outcome(fn, *args):
    try:
        out = fn(*args)
        return ("ok", None if out is None else np.asarray(out.detach().numpy()).copy())
    except Exception as e:   # noqa: BLE001
        return ("raise", type(e).__name__, str(e))


def test_the_loss_keeps_a_grad_fn_whose_saved_values_are_freed(backward_in_graph):
    def f(a, b):
        loss = (a.sin() * b).sum()
        loss.backward()
        return loss

    results = []
    for fn in (f, cl.compile(f, backend="aot_eager")):
        a = cl.tensor([0.5, -1.0, 2.0], requires_grad=True)
        b = cl.tensor([1.0, 2.0, 3.0], requires_grad=True)
        loss = fn(a, b)
        assert loss.requires_grad and not loss.is_leaf and loss.grad_fn is not None
        with pytest.raises(RuntimeError) as err:
            loss.backward()
        results.append((loss.item(), a.grad.numpy().tolist(), b.grad.numpy().tolist(), str(err.value)))
    assert results[0][3] == results[1][3]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-6)
    assert "backward through the graph a second time" in results[1][3]
    assert backward_in_graph == [True]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_two_leaves_given_the_same_gradient_get_their_own_tensors(backend, backward_in_graph):
    def f(a, b, k):
        ((a + b) * k).sum().backward()     # add's backward hands one tensor to both leaves

    got = []
    for fn in (f, cl.compile(f, backend=backend)):
        a = cl.tensor([1.0, 2.0], requires_grad=True)
        b = cl.tensor([0.0, 1.0], requires_grad=True)
        k = cl.tensor([3.0, 4.0])
        fn(a, b, k)
        got.append((a.grad.numpy().tolist(), b.grad.numpy().tolist()))
        a.grad.add_(1.0)        # a gradient is shared with nothing else: not b.grad, not k
        assert b.grad.numpy().tolist() == got[-1][1] and k.numpy().tolist() == [3.0, 4.0]
    assert got[0] == got[1] == ([3.0, 4.0], [3.0, 4.0])
    assert backward_in_graph == [True]


@pytest.mark.parametrize("case", ["accumulate", "hook", "post_accumulate_hook", "retain_graph", "live_output",
                                  "non_leaf_input", "saves_nothing", "gradient_given"])
def test_what_only_the_engine_can_do_is_left_to_it(case, backward_in_graph):
    calls = []

    def make(a, w):
        if case == "accumulate":
            a.grad = cl.ones(3)
        if case == "hook":
            a.register_hook(lambda g: calls.append(g.numpy().tolist()))
        if case == "post_accumulate_hook":
            a.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.numpy().tolist()))

    def f(a, w):
        # (only the live_output case keeps a value of the graph alive across backward: each case meets one rule)
        if case == "saves_nothing":
            loss = (a + w).sum()
        elif case == "live_output":
            h = (a * w).tanh()
            loss = (h * 2).sum()
        else:
            loss = ((a * w).tanh() * 2).sum()
        if case == "retain_graph":
            loss.backward(retain_graph=True)
        elif case == "gradient_given":
            loss.backward(cl.tensor(2.0))
        else:
            loss.backward()
        return h if case == "live_output" else loss

    outcomes = []
    for compiled in (False, True):
        dynamo.reset()
        calls.clear()
        a = cl.tensor([0.1, -0.4, 0.9], requires_grad=True)
        w = cl.tensor([1.5, 0.5, -2.0], requires_grad=True)
        make(a, w)
        fn = cl.compile(f, backend="aot_eager") if compiled else f
        if case == "non_leaf_input":
            a2 = a * 1.0
            out = _outcome(fn, a2, w)
        else:
            out = _outcome(fn, a, w)
        again = _outcome(lambda: (fn(a, w) if case == "saves_nothing" else None))
        outcomes.append((out[0], np.round(out[1], 6).tolist() if out[0] == "ok" and out[1] is not None else out,
                         np.round(a.grad.numpy(), 6).tolist() if a.grad is not None else None,
                         np.round(w.grad.numpy(), 6).tolist(), [np.round(c, 6).tolist() for c in calls], again[0]))
    assert outcomes[0] == outcomes[1]
    assert True not in backward_in_graph, case


def test_dynamic_shapes_keep_the_engine(backward_in_graph):
    """dynamic=True replays one path for many sizes; the joint program is traced for one, so it is not used."""
    def f(w, x):
        loss = (x @ w).tanh().sum()
        loss.backward()
        return loss

    fn = cl.compile(f, backend="aot_eager", dynamic=True)
    for n in (3, 5, 4):
        got, want = [], []
        for g, out in ((fn, got), (f, want)):
            w = cl.tensor(np.linspace(-1, 1, n * 2, dtype=np.float32).reshape(n, 2), requires_grad=True)
            x = cl.tensor(np.linspace(0, 1, 3 * n, dtype=np.float32).reshape(3, n))
            out.extend([g(w, x).item(), w.grad.numpy().copy()])
        assert got[0] == pytest.approx(want[0], rel=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    assert True not in backward_in_graph


class _Twice(cl.autograd.Function):
    """A custom backward that is not the derivative of the forward: only the engine can run it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x


@pytest.mark.parametrize("compiled_autograd", [True, False])
@pytest.mark.parametrize("case", ["custom_function", "module_full_backward_hook", "identity_function"])
def test_custom_functions_and_module_backward_hooks_on_graph_values(case, compiled_autograd, monkeypatch,
                                                                    backward_in_graph):
    """A custom autograd.Function (or the one behind a module's full backward hook) applied to a value the graph
    has not computed yet ends the graph first, so its node's edges lead to real autograd nodes; the backward
    then runs its own formula and calls the hook, as in eager."""
    from course_lib import nn

    monkeypatch.setattr(config, "compiled_autograd", compiled_autograd)
    calls = []
    lin = nn.Linear(2, 1)
    with cl.no_grad():
        lin.weight.copy_(cl.tensor([[0.5, -1.5]]))
        lin.bias.fill_(0.25)
    lin.register_full_backward_hook(lambda mod, gi, go: calls.append(round(go[0].sum().item(), 6)))

    class Identity(cl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            calls.append("identity backward")
            return g * 3

    def f(w, x):
        h = (x * w).tanh()
        if case == "custom_function":
            loss = _Twice.apply(h * 3).sum()
        elif case == "identity_function":
            loss = (Identity.apply(h) * 2).sum()
        else:
            loss = lin(h.reshape(1, 2)).sum()
        loss.backward()
        return loss

    outcomes = []
    for fn in (f, cl.compile(f, backend="aot_eager")):
        dynamo.reset()
        calls.clear()
        lin.zero_grad()
        w = cl.tensor([0.3, -0.7], requires_grad=True)
        loss = fn(w, cl.tensor([1.0, 2.0]))
        outcomes.append((round(loss.item(), 6), np.round(w.grad.numpy(), 6).tolist(), list(calls)))
    assert outcomes[0] == outcomes[1]
    assert case == "custom_function" or outcomes[0][2], "the hook or the custom backward ran"
    assert True not in backward_in_graph


@pytest.mark.parametrize("compiled_autograd", [True, False])
def test_a_hook_registered_on_a_graph_value_runs_as_in_eager(compiled_autograd, monkeypatch, backward_in_graph):
    """register_hook on a value the graph has not computed yet ends the graph and stores the hook on its real
    node (it failed on the placeholder node before)."""
    monkeypatch.setattr(config, "compiled_autograd", compiled_autograd)
    log = []

    def f(w):
        h = (w * 2).tanh()
        h.register_hook(lambda g: log.append(np.round(g.numpy(), 6).tolist()))
        loss = (h * h).sum()
        loss.backward()
        return loss

    outcomes = []
    for fn in (f, cl.compile(f, backend="aot_eager")):
        log.clear()
        w = cl.tensor([0.1, -0.3], requires_grad=True)
        loss = fn(w)
        outcomes.append((round(loss.item(), 6), np.round(w.grad.numpy(), 6).tolist(), list(log)))
    assert outcomes[0] == outcomes[1] and outcomes[0][2]
    assert True not in backward_in_graph
