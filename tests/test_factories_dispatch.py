"""Factories and random ops go through the dispatcher: modes, make_fx and meta tensors see them.

PyTorch's dispatcher sees ``aten.zeros``, ``aten.rand``, ``aten.uniform_`` and, for ``torch.tensor(data)``,
``aten.lift_fresh`` of the new constant; course_lib's does the same, under the same names.
"""
from __future__ import annotations

import pytest

import course_lib as cl
from course_lib._ops.registry import OPS
from course_lib.fx.experimental.proxy_tensor import make_fx
from course_lib.utils import TorchDispatchMode


class Names(TorchDispatchMode):
    def __init__(self):
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name)
        return func(*args)


x = cl.ones(3)

# (what is called, the op names a mode sees) -- the names PyTorch 2.13's TorchDispatchMode prints
CASES = [
    ("tensor", lambda: cl.tensor([1., 2.]), ["lift_fresh"]),
    ("as_tensor", lambda: cl.as_tensor([1, 2]), ["lift_fresh"]),
    ("zeros", lambda: cl.zeros(3), ["zeros"]),
    ("ones", lambda: cl.ones(3), ["ones"]),
    ("empty", lambda: cl.empty(3), ["empty"]),
    ("full", lambda: cl.full((2,), 5.), ["full"]),
    ("arange", lambda: cl.arange(5), ["arange"]),
    ("linspace", lambda: cl.linspace(0, 1, 5), ["linspace"]),
    ("eye", lambda: cl.eye(2, 3), ["eye"]),
    ("empty_strided", lambda: cl.empty_strided((2, 3), (1, 2)), ["empty_strided"]),
    ("scalar_tensor", lambda: cl.scalar_tensor(2), ["scalar_tensor"]),
    ("rand", lambda: cl.rand(2), ["rand"]),
    ("randn", lambda: cl.randn(2), ["randn"]),
    ("randint", lambda: cl.randint(3, 10, (2,)), ["randint"]),
    ("randperm", lambda: cl.randperm(4), ["randperm"]),
    ("normal", lambda: cl.normal(0., 1., (2,)), ["normal"]),
    ("normal_tensor", lambda: cl.normal(x, 1.), ["normal"]),
    ("bernoulli", lambda: cl.bernoulli(x * 0), ["mul", "bernoulli"]),
    ("multinomial", lambda: cl.multinomial(x, 2), ["multinomial"]),
    ("poisson", lambda: cl.poisson(x), ["poisson"]),
    ("uniform_", lambda: x.clone().uniform_(), ["clone", "uniform_"]),
    ("normal_", lambda: x.clone().normal_(), ["clone", "normal_"]),
    ("random_", lambda: x.clone().random_(2, 5), ["clone", "random_"]),
    ("bernoulli_", lambda: x.clone().bernoulli_(), ["clone", "bernoulli_"]),
    ("exponential_", lambda: x.clone().exponential_(), ["clone", "exponential_"]),
    ("geometric_", lambda: x.clone().geometric_(.5), ["clone", "geometric_"]),
    ("log_normal_", lambda: x.clone().log_normal_(), ["clone", "log_normal_"]),
    ("cauchy_", lambda: x.clone().cauchy_(), ["clone", "cauchy_"]),
    ("fill_", lambda: x.clone().fill_(2), ["clone", "fill_"]),
    ("zero_", lambda: x.clone().zero_(), ["clone", "zero_"]),
    ("zeros_like", lambda: cl.zeros_like(x), ["zeros_like"]),
    ("ones_like", lambda: cl.ones_like(x), ["ones_like"]),
    ("empty_like", lambda: cl.empty_like(x), ["empty_like"]),
    ("full_like", lambda: cl.full_like(x, 2), ["full_like"]),
    ("rand_like", lambda: cl.rand_like(x), ["rand_like"]),
    ("randn_like", lambda: cl.randn_like(x), ["randn_like"]),
    ("randint_like", lambda: cl.randint_like(x, 5), ["randint_like"]),
]


@pytest.mark.parametrize("name,call,expected", CASES, ids=[c[0] for c in CASES])
def test_a_mode_sees_the_factory(name, call, expected):
    with Names() as m:
        call()
    assert m.names == expected


def test_factories_have_kinds():
    for name in ("zeros", "ones", "empty", "full", "arange", "linspace", "eye", "empty_strided", "scalar_tensor",
                 "zeros_like", "ones_like", "empty_like", "full_like", "lift_fresh", "lift_fresh_copy"):
        assert OPS[name].kind == "factory", name
    for name in ("rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "poisson",
                 "rand_like", "randn_like", "randint_like", "uniform_", "normal_", "random_", "bernoulli_",
                 "exponential_", "geometric_", "log_normal_", "cauchy_"):
        assert OPS[name].kind == "random", name
    assert all(OPS[n].is_inplace for n in ("uniform_", "normal_", "random_", "bernoulli_"))


def test_a_mode_can_replace_a_factory_result():
    class Sevens(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args)
            return cl.full_like(out, 7) if func.name == "zeros" else out

    with Sevens():
        assert cl.zeros(2).tolist() == [7.0, 7.0]


def test_the_generator_and_dtype_reach_the_mode():
    seen = []

    class Args(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((func.name, args))
            return func(*args)

    g = cl.Generator().manual_seed(3)
    with Args():
        cl.rand(2, 3, generator=g, dtype=cl.float64, device="meta")
    assert seen == [("rand", ((2, 3), g, cl.float64, "meta"))]


def test_random_streams_are_the_same_as_before_through_the_dispatcher():
    """The kernels draw exactly what the functions drew: one call into the bit generator each."""
    import numpy as np
    cl.manual_seed(11)
    a = cl.rand(4)
    b = cl.randn(2, 2, dtype=cl.float64)
    c = cl.empty(5).uniform_(-1, 1)
    cl.manual_seed(11)
    rng = np.random.Generator(np.random.PCG64(11))
    assert a._np().tolist() == rng.random((4,), dtype=np.float32).tolist()
    assert b._np().tolist() == rng.standard_normal((2, 2), dtype=np.float64).tolist()
    u = rng.random((5,), dtype=np.float32)
    assert c._np().tolist() == (u * np.float32(2) + np.float32(-1)).tolist()


# ---------------------------------------------------------------------------
# make_fx records factories as nodes, in PyTorch's order and with its names
# ---------------------------------------------------------------------------
def _f(x):
    a = cl.zeros(3)
    b = cl.rand(3)
    c = cl.tensor([1., 2., 3.])
    d = cl.randn_like(x)
    e = cl.arange(3)
    x2 = x.clone().uniform_()
    return x + a + b + c + d + e + x2


# what torch.fx.experimental.proxy_tensor.make_fx records for the same function with torch's factories
TORCH_NODES = ["x_1", "zeros", "rand", "_tensor_constant0", "lift_fresh_copy", "randn_like", "arange", "clone",
               "uniform_", "add", "add_1", "add_2", "add_3", "add_4", "add_5", "output"]


def test_make_fx_records_factories():
    gm = make_fx(_f)(cl.ones(3))
    assert [n.name for n in gm.graph.nodes] == TORCH_NODES
    targets = [n.target.name for n in gm.graph.nodes if n.op == "call_function"]
    assert targets[:7] == ["zeros", "rand", "lift_fresh_copy", "randn_like", "arange", "clone", "uniform_"]
    # replaying the graph draws the same numbers as running the function
    cl.manual_seed(5)
    want = _f(cl.ones(3))
    cl.manual_seed(5)
    got = gm(cl.ones(3))
    assert got.tolist() == want.tolist()


def test_make_fx_graph_copies_its_constant():
    def f():
        t = cl.tensor([1., 2.])
        t.add_(1)
        return t
    gm = make_fx(f)()
    assert gm().tolist() == [2.0, 3.0]
    assert gm().tolist() == [2.0, 3.0]     # the constant in the graph was not changed by the first call


@pytest.mark.oracle
def test_make_fx_node_names_match_torch():
    from oracle import require_torch
    torch = require_torch()
    from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx

    def g(x):
        a = torch.zeros(3)
        b = torch.rand(3)
        c = torch.tensor([1., 2., 3.])
        d = torch.randn_like(x)
        e = torch.arange(3)
        x2 = x.clone().uniform_()
        return x + a + b + c + d + e + x2
    tgm = torch_make_fx(g)(torch.ones(3))
    assert [n.name for n in tgm.graph.nodes] == TORCH_NODES


# ---------------------------------------------------------------------------
# meta device: no data, the right shape and dtype
# ---------------------------------------------------------------------------
META = [
    (lambda: cl.zeros(3, device="meta"), (3,), cl.float32),
    (lambda: cl.ones(2, 3, device="meta", dtype=cl.int64), (2, 3), cl.int64),
    (lambda: cl.full((2,), 3, device="meta"), (2,), cl.int64),
    (lambda: cl.arange(0, 2, .5, device="meta"), (4,), cl.float32),
    (lambda: cl.linspace(0, 1, 7, device="meta"), (7,), cl.float32),
    (lambda: cl.eye(2, 4, device="meta"), (2, 4), cl.float32),
    (lambda: cl.rand(4, device="meta"), (4,), cl.float32),
    (lambda: cl.randn(1, 2, device="meta", dtype=cl.float64), (1, 2), cl.float64),
    (lambda: cl.randint(5, (3,), device="meta"), (3,), cl.int64),
    (lambda: cl.randperm(6, device="meta"), (6,), cl.int64),
    (lambda: cl.normal(0., 1., (2,), device="meta"), (2,), cl.float32),
    (lambda: cl.zeros_like(cl.ones(2, 2), device="meta"), (2, 2), cl.float32),
    (lambda: cl.randn_like(cl.ones(2, 2, device="meta")), (2, 2), cl.float32),
    (lambda: cl.ones(3, device="meta").uniform_(), (3,), cl.float32),
    (lambda: cl.bernoulli(cl.ones(3, device="meta")), (3,), cl.float32),
]


@pytest.mark.parametrize("i", range(len(META)))
def test_meta_factories(i):
    call, shape, dtype = META[i]
    with Names() as m:
        r = call()
    assert r.is_meta and r.shape == shape and r.dtype is dtype
    assert m.names   # seen by the mode too


def test_meta_factories_check_their_arguments():
    with pytest.raises(RuntimeError, match="zeros: Dimension size must be non-negative."):
        cl.zeros(-1, device="meta")
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        cl.rand(2, dtype=cl.int64, device="meta")
    with pytest.raises(RuntimeError, match="uniform_ expects to return a"):
        cl.ones(2, device="meta").uniform_(2, 1)


# ---------------------------------------------------------------------------
# autograd of the in-place random fills: PyTorch's nodes, zero gradients (before, a fill on a
# non-leaf kept the old history and passed the gradient through as if nothing had happened)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("fill,node", [
    (lambda y: y.uniform_(), "UniformBackward0"), (lambda y: y.normal_(), "NormalBackward0"),
    (lambda y: y.random_(), "RandomBackward2"), (lambda y: y.random_(5), "RandomBackward1"),
    (lambda y: y.random_(2, 5), "RandomBackward0"), (lambda y: y.bernoulli_(), "BernoulliBackward1"),
    (lambda y: y.bernoulli_(cl.full((3,), .5)), "BernoulliBackward2"),
    (lambda y: y.exponential_(), "ExponentialBackward0"), (lambda y: y.geometric_(.5), "GeometricBackward0"),
    (lambda y: y.log_normal_(), "LogNormalBackward0"), (lambda y: y.cauchy_(), "CauchyBackward0")])
def test_inplace_random_fill_backward_is_zero(fill, node):
    w = cl.ones(3, requires_grad=True)
    y = w * 2
    fill(y)
    assert type(y.grad_fn).__name__ == node
    (y * 3).sum().backward()
    assert w.grad.tolist() == [0.0, 0.0, 0.0]


def test_inplace_random_fill_on_a_leaf_or_its_view_is_refused():
    w = cl.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.uniform_()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w[:2].normal_()
    with cl.no_grad():
        w.uniform_()          # allowed without grad mode, as nn.init does
    assert w.grad_fn is None


# ---------------------------------------------------------------------------
# memory_format of the *_like factories (accepted and ignored before)
# ---------------------------------------------------------------------------
def test_like_memory_format():
    t = cl.ones(2, 3, 4, 5).transpose(1, 3)
    assert cl.empty_like(t).stride() == t.stride()                                   # preserve
    assert cl.zeros_like(t, memory_format="contiguous_format").stride() == (60, 12, 3, 1)
    c = cl.ones(1, 2, 2, 2)
    assert cl.ones_like(c, memory_format="channels_last").stride() == (8, 1, 4, 2)
    assert cl.randn_like(cl.ones(1, 2, 2, 2, 2), memory_format="channels_last_3d").stride() == (16, 1, 8, 4, 2)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        cl.zeros_like(cl.ones(2, 2), memory_format="channels_last")
    with pytest.raises(ValueError, match="memory_format must be one of"):
        cl.zeros_like(cl.ones(2), memory_format="sparse")


@pytest.mark.oracle
def test_like_memory_format_strides_match_torch():
    from oracle import require_torch
    torch = require_torch()
    for shape, fmt in (((1, 2, 2, 2), "channels_last"), ((2, 3, 4, 5), "channels_last"),
                       ((2, 3, 1, 4, 5), "channels_last_3d"), ((2, 3, 4), "contiguous_format")):
        want = torch.zeros_like(torch.ones(shape), memory_format=getattr(torch, fmt)).stride()
        assert cl.zeros_like(cl.ones(shape), memory_format=fmt).stride() == want, (shape, fmt)


# ---------------------------------------------------------------------------
# pin_memory: accepted, and refused when True (no accelerator, as on a CPU-only PyTorch)
# ---------------------------------------------------------------------------
PIN = "pin_memory=True requires a CUDA or other accelerator backend; no pinned memory allocator"


@pytest.mark.parametrize("call", [
    lambda: cl.tensor([1.], pin_memory=True), lambda: cl.zeros(2, pin_memory=True),
    lambda: cl.rand(2, pin_memory=True), lambda: cl.empty_like(cl.ones(2), pin_memory=True),
    lambda: cl.arange(3, pin_memory=True)])
def test_pin_memory_true_is_refused(call):
    with pytest.raises(RuntimeError, match=PIN):
        call()


def test_pin_memory_false_is_the_default():
    assert cl.zeros(2, pin_memory=False).tolist() == [0.0, 0.0]
    assert cl.tensor([1.], pin_memory=False).tolist() == [1.0]


@pytest.mark.oracle
def test_pin_memory_message_matches_torch():
    from oracle import require_torch
    torch = require_torch()
    if torch.cuda.is_available():
        pytest.skip("torch has an accelerator here")
    with pytest.raises(RuntimeError) as e:
        torch.zeros(2, pin_memory=True)
    assert str(e.value).startswith(PIN)


def test_normal_with_tensors_refuses_the_numbers_forms_options():
    """normal(Tensor, float) takes no dtype, device, size or requires_grad: PyTorch's TypeError (they were ignored)."""
    with pytest.raises(TypeError, match=r"normal\(\) received an invalid combination of arguments - got "
                                        r"\(Tensor, float, dtype=torch.dtype\)"):
        cl.normal(cl.zeros(2), 1., dtype=cl.float64)
    with pytest.raises(TypeError, match=r"got \(Tensor, float, tuple\)"):
        cl.normal(cl.zeros(2), 1., (2,))
