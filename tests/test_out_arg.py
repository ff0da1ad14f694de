"""``out=``: every function that accepts it writes into it, as PyTorch does, or refuses with PyTorch's error.

Before, the factories and random functions accepted ``out=`` and ignored it (the result was a new tensor
and ``out`` was left unchanged).  Each case is compared with torch 2.13 when it is installed.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import course_lib as cl
from course_lib.utils import TorchDispatchMode


def f32(*s):
    return cl.empty(*s)


def i64(*s):
    return cl.empty(*s, dtype=cl.int64)


# name -> (call with out, expected dtype, expected shape)
OUT_CASES = {
    "zeros": (lambda o: cl.zeros(3, out=o), (3,)),
    "ones": (lambda o: cl.ones(3, out=o), (3,)),
    "full": (lambda o: cl.full((3,), 2, out=o), (3,)),
    "arange": (lambda o: cl.arange(3, out=o), (3,)),
    "linspace": (lambda o: cl.linspace(0, 1, 3, out=o), (3,)),
    "logspace": (lambda o: cl.logspace(0, 1, 3, out=o), (3,)),
    "eye": (lambda o: cl.eye(3, out=o), (3, 3)),
    "rand": (lambda o: cl.rand(3, out=o), (3,)),
    "randn": (lambda o: cl.randn(3, out=o), (3,)),
    "randint": (lambda o: cl.randint(5, (3,), out=o), (3,)),
    "randperm": (lambda o: cl.randperm(3, out=o), (3,)),
    "normal": (lambda o: cl.normal(0., 1., (3,), out=o), (3,)),
    "normal_tt": (lambda o: cl.normal(cl.zeros(3), cl.ones(3), out=o), (3,)),
    "bernoulli": (lambda o: cl.bernoulli(cl.zeros(3), out=o), (3,)),
}


@pytest.mark.parametrize("name", sorted(OUT_CASES))
@pytest.mark.parametrize("start", [0, 3, 5])
def test_out_is_written_and_returned(name, start):
    call, shape = OUT_CASES[name]
    o = f32(start).fill_(-7.0) if start else f32(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = call(o)
    assert r is o
    assert o.shape == shape and o.dtype is cl.float32
    assert not (o._np() == -7.0).any()


def test_values_are_the_functions_values():
    assert cl.zeros(2, out=i64(0)).tolist() == [0, 0]
    assert cl.ones(2, out=i64(5)).tolist() == [1, 1]
    assert cl.full((2,), 3.5, out=i64(0)).tolist() == [3, 3]
    assert cl.full((2,), True, out=f32(0)).tolist() == [1.0, 1.0]
    assert cl.arange(5, out=f32(0)).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert cl.linspace(0, 10, 5, out=i64(0)).tolist() == [0, 2, 5, 7, 10]
    assert cl.eye(2, out=i64(7)).tolist() == [[1, 0], [0, 1]]
    assert cl.multinomial(cl.tensor([0., 1., 0.]), 2, True, out=i64(0)).tolist() == [1, 1]
    assert cl.bernoulli(cl.ones(3), out=i64(0)).tolist() == [1, 1, 1]
    # same stream as without out=
    cl.manual_seed(3)
    a = cl.rand(4)
    cl.manual_seed(3)
    assert cl.rand(4, out=f32(0)).tolist() == a.tolist()
    cl.manual_seed(3)
    b = cl.randn(4, dtype=cl.float64)
    cl.manual_seed(3)
    assert cl.randn(4, out=cl.empty(9, dtype=cl.float64)).tolist() == b.tolist()


def test_out_of_the_right_shape_keeps_its_strides_and_storage():
    o = f32(2, 2).t()
    data = o._storage
    cl.zeros(2, 2, out=o)
    assert o.stride() == (1, 2) and o._storage is data and o.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_out_view_is_resized_inside_its_storage():
    base = f32(4).fill_(1.0)
    o = base[:1]
    cl.zeros(3, out=o)
    assert o.shape == (3,) and base.tolist()[:3] == [0.0, 0.0, 0.0]


def test_empty_out_is_only_resized():
    o = f32(2).fill_(5.0)
    r = cl.empty(2, out=o)
    assert r is o and o.tolist() == [5.0, 5.0]
    cl.empty(3, 2, out=o)
    assert o.shape == (3, 2)


def test_version_counter_is_bumped():
    o = f32(3)
    v = o._version
    cl.zeros(3, out=o)
    assert o._version > v


def test_a_mode_sees_the_op_and_the_copy_into_out():
    seen = []

    class Names(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.name)
            return func(*args)

    o = f32(0)
    with Names():
        cl.rand(2, out=o)
    assert seen == ["rand", "copy_"]


def test_requires_grad_keyword_marks_out():
    o = f32(0)
    cl.zeros(3, out=o, requires_grad=True)
    assert o.requires_grad


# ---------------------------------------------------------------------------
# errors, with PyTorch's messages
# ---------------------------------------------------------------------------
ERRORS = [
    (lambda: cl.zeros(3, dtype=cl.float32, out=i64(0)), RuntimeError,
     "dtype Float does not match dtype of out parameter (Long)"),
    (lambda: cl.full((2,), 3, dtype=cl.float64, out=f32(0)), RuntimeError,
     "dtype Double does not match dtype of out parameter (Float)"),
    (lambda: cl.arange(3, dtype=cl.float64, out=i64(0)), RuntimeError,
     "dtype Double does not match dtype of out parameter (Long)"),
    (lambda: cl.zeros(3, device="meta", out=f32(0)), RuntimeError,
     "device type meta does not match device type of out parameter (cpu)"),
    (lambda: cl.zeros(3, device="cpu", out=cl.empty(0, device="meta")), RuntimeError,
     "device type cpu does not match device type of out parameter (meta)"),
    (lambda: cl.rand(2, out=i64(0)), NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda: cl.randn(2, out=i64(0)), NotImplementedError, "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda: cl.normal(cl.zeros(3), 1., out=i64(3)), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda: cl.randperm(3, out=cl.empty(0, dtype=cl.bool)), NotImplementedError,
     "\"randperm\" not implemented for 'Bool'"),
    (lambda: cl.arange(3, out=cl.empty(0, dtype=cl.bool)), NotImplementedError,
     "\"arange_cpu\" not implemented for 'Bool'"),
    (lambda: cl.multinomial(cl.ones(3), 2, out=f32(0)), RuntimeError,
     "multinomial expects Long tensor out, got: Float"),
    (lambda: cl.zeros(3, out=[1]), TypeError, "zeros(): argument 'out' must be Tensor, not list"),
    (lambda: cl.zeros(3, out=cl.zeros(3, requires_grad=True)), RuntimeError,
     "aten::zeros(): functions with out=... arguments don't support automatic differentiation, but one of the "
     "arguments requires grad."),
    (lambda: cl.rand(3, out=cl.zeros(3, requires_grad=True)), RuntimeError,
     "aten::rand(): functions with out=... arguments don't support automatic differentiation"),
    (lambda: cl.normal(0., 1., (2,), out=cl.empty(0, requires_grad=True)), RuntimeError,
     "aten::normal(): functions with out=... arguments don't support automatic differentiation"),
    (lambda: cl.normal(cl.zeros(3, requires_grad=True), 1., out=f32(0)), RuntimeError,
     "normal(): functions with out=... arguments don't support automatic differentiation"),
    (lambda: cl.bernoulli(cl.ones(3, requires_grad=True), out=f32(0)), RuntimeError,
     "bernoulli(): functions with out=... arguments don't support automatic differentiation"),
    (lambda: cl.normal(cl.zeros(3), 1., out=f32(2)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
    (lambda: cl.bernoulli(cl.zeros(3), .5, out=f32(0)), TypeError,
     "bernoulli() received an invalid combination of arguments - got (Tensor, float, out=Tensor)"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_out_errors(i):
    call, exc, msg = ERRORS[i]
    with pytest.raises(exc) as e:
        call()
    assert str(e.value).startswith(msg)


def test_no_grad_allows_an_out_that_requires_grad():
    o = cl.zeros(3, requires_grad=True)
    with cl.no_grad():
        cl.ones(3, out=o)
    assert o.tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------------------
# resizing and its warnings
# ---------------------------------------------------------------------------
def _warnings(call):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        call()
    return [str(x.message) for x in w]


def test_resize_warnings():
    assert _warnings(lambda: cl.zeros(3, out=f32(2))) == []          # factories resize silently
    assert _warnings(lambda: cl.rand(3, out=f32(2))) == []
    assert _warnings(lambda: cl.arange(3, out=f32(0))) == []
    assert _warnings(lambda: cl.arange(3, out=f32(2))) == [
        "The number of elements in the out tensor of shape [2] is 2 which does not match the computed number of "
        "elements 3. Note that this may occur as a result of rounding error. The out tensor will be resized to a "
        "tensor of shape (3,)."]
    w = _warnings(lambda: cl.normal(cl.zeros(3), cl.ones(3), out=f32(2)))
    assert len(w) == 1 and w[0].startswith(
        "An output with one or more elements was resized since it had shape [2], which does not match the "
        "required output shape [3]. This behavior is deprecated")
    assert _warnings(lambda: cl.normal(cl.zeros(3), cl.ones(3), out=f32(0))) == []
    o = f32(3)
    assert _warnings(lambda: cl.normal(cl.zeros(2, 3), 1., out=o)) and o.shape == (2, 3)
    o = f32(3)
    cl.normal(cl.zeros(1), 1., out=o)       # mean broadcast to out's shape
    assert o.shape == (3,)


def test_meta_out():
    o = cl.empty(0, device="meta")
    r = cl.zeros(2, 3, out=o)
    assert r is o and o.is_meta and o.shape == (2, 3)
    cl.rand(4, out=o)
    assert o.shape == (4,)


# ---------------------------------------------------------------------------
# against torch
# ---------------------------------------------------------------------------
def _torch_cases(torch):
    def t_f32(*s):
        return torch.empty(*s)

    def t_i64(*s):
        return torch.empty(*s, dtype=torch.int64)
    return t_f32, t_i64


@pytest.mark.oracle
def test_out_matches_torch():
    from oracle import require_torch
    torch = require_torch()
    t_f32, t_i64 = _torch_cases(torch)
    pairs = [
        (lambda: cl.zeros(3, out=i64(0)), lambda: torch.zeros(3, out=t_i64(0))),
        (lambda: cl.full((2,), 3.5, out=i64(0)), lambda: torch.full((2,), 3.5, out=t_i64(0))),
        (lambda: cl.arange(0.5, 3, out=i64(0)), lambda: torch.arange(0.5, 3, out=t_i64(0))),
        (lambda: cl.linspace(0, 10, 5, out=i64(0)), lambda: torch.linspace(0, 10, 5, out=t_i64(0))),
        (lambda: cl.logspace(0, 3, 4, out=i64(2)), lambda: torch.logspace(0, 3, 4, out=t_i64(2))),
        (lambda: cl.eye(2, 3, out=f32(9)), lambda: torch.eye(2, 3, out=t_f32(9))),
        (lambda: cl.randint(2, (3,), out=cl.empty(0, dtype=cl.bool)).shape,
         lambda: torch.randint(2, (3,), out=torch.empty(0, dtype=torch.bool)).shape),
        (lambda: cl.multinomial(cl.ones(2, 3), 2, out=i64(5)).shape,
         lambda: torch.multinomial(torch.ones(2, 3), 2, out=t_i64(5)).shape),
    ]
    for ours, theirs in pairs:
        a, b = ours(), theirs()
        if isinstance(b, torch.Tensor):
            assert a.tolist() == b.tolist() and a.dtype.name == str(b.dtype).split(".")[1]
        else:
            assert tuple(a) == tuple(b)
    for call, exc, msg in ERRORS:
        with pytest.raises(exc):
            call()
    # the messages are torch's
    for ours, theirs in [
            (lambda: cl.zeros(3, dtype=cl.float32, out=i64(0)),
             lambda: torch.zeros(3, dtype=torch.float32, out=t_i64(0))),
            (lambda: cl.zeros(3, out=cl.zeros(3, requires_grad=True)),
             lambda: torch.zeros(3, out=torch.zeros(3, requires_grad=True))),
            (lambda: cl.normal(cl.zeros(3, requires_grad=True), 1., out=f32(0)),
             lambda: torch.normal(torch.zeros(3, requires_grad=True), 1., out=t_f32(0))),
            (lambda: cl.multinomial(cl.ones(3), 2, out=f32(0)),
             lambda: torch.multinomial(torch.ones(3), 2, out=t_f32(0))),
            (lambda: cl.normal(cl.zeros(3), 1., out=f32(2)), lambda: torch.normal(torch.zeros(3), 1., out=t_f32(2))),
            (lambda: cl.zeros(3, out=[1]), lambda: torch.zeros(3, out=[1]))]:
        with pytest.raises(Exception) as e1:
            ours()
        with pytest.raises(Exception) as e2:
            theirs()
        assert type(e1.value) is type(e2.value) and str(e1.value) == str(e2.value).split(" (Triggered")[0]


@pytest.mark.oracle
def test_resize_warning_text_matches_torch():
    from oracle import require_torch
    torch = require_torch()
    ours = _warnings(lambda: cl.arange(3, out=f32(2)))
    theirs = _warnings(lambda: torch.arange(3, out=torch.empty(2)))
    assert ours == [w.split(" (Triggered")[0] for w in theirs]
    ours = _warnings(lambda: cl.normal(cl.zeros(3), cl.ones(3), out=f32(2)))
    theirs = _warnings(lambda: torch.normal(torch.zeros(3), torch.ones(3), out=torch.empty(2)))
    assert ours == [w.split(" (Triggered")[0] for w in theirs]


def test_no_public_function_ignores_out():
    """Every course_lib function with an ``out`` parameter changes ``out`` (or refuses): none drops it."""
    import inspect
    seen = []
    for name in dir(cl):
        fn = getattr(cl, name)
        if callable(fn) and not isinstance(fn, type):
            try:
                params = inspect.signature(fn).parameters
            except (TypeError, ValueError):
                continue
            if "out" in params:
                seen.append(fn.__name__)  # aliases (cl.multiply is cl.mul) count once
    from course_lib._ops.registry import OUT_OVERLOADS
    factories = ["zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "rand", "randn",
                 "randint", "randperm", "normal", "multinomial", "bernoulli"]
    assert sorted(set(seen)) == sorted(factories + sorted(OUT_OVERLOADS))
    # the ops' out= is compared with torch's by test_op_out_matches_torch, one call per op at least
    called = {c.split("(", 1)[0][2:] for c in OP_OUT_CALLS}
    assert sorted(set(OUT_OVERLOADS) - called) == sorted(OUT_OVERLOADS_NOT_CALLED)


# ---------------------------------------------------------------------------
# out= of the ops (registry.OUT_OVERLOADS): the generated function calls out_arg.call_with_out
# ---------------------------------------------------------------------------
OP_OUT_CALLS = [
    "L.add(x, y, out=o)", "L.add(i, i, out=o)", "L.mul(x, 2, out=o)", "L.div(x, y, out=o)",
    "L.sub(x, y, alpha=2, out=o)",
    "L.exp(x, out=o)", "L.square(x, out=o)", "L.abs(x, out=o)", "L.floor(x, out=o)", "L.sign(x, out=o)",
    "L.round(x, out=o)", "L.clamp(x, 0, 1, out=o)", "L.eq(x, y, out=o)", "L.lt(x, 0, out=o)",
    "L.logical_and(x, y, out=o)", "L.bitwise_and(i, i, out=o)", "L.bitwise_not(i, out=o)", "L.pow(x, 2, out=o)",
    "L.lerp(x, y, 0.5, out=o)", "L.where(x > 0, x, y, out=o)", "L.maximum(x, y, out=o)", "L.floor_divide(x, y, out=o)",
    "L.sum(x, 1, out=o)", "L.sum(x, (0, 1), out=o)", "L.sum(i, 1, out=o)", "L.mean(x, 1, out=o)", "L.prod(x, 1, out=o)",
    "L.amax(x, 1, out=o)", "L.argmax(x, 1, out=o)", "L.all(x, 1, out=o)", "L.cumsum(x, 1, out=o)",
    "L.logsumexp(x, 1, out=o)", "L.softmax(x, 1, out=o)", "L.log_softmax(x, 1, out=o)",
    "L.mm(x, m, out=o)", "L.matmul(x, m, out=o)", "L.matmul(x, m[:, 0], out=o)", "L.bmm(x[None], m[None], out=o)",
    "L.addmm(L.zeros(2, 4), x, m, out=o)", "L.dot(m[:, 0], m[:, 1], out=o)", "L.mv(x, m[:, 0], out=o)",
    "L.cat([x, y], out=o)", "L.stack([x, y], 1, out=o)", "L.hstack([x, y], out=o)", "L.vstack([x, y], out=o)",
    "L.outer(x[0], y[0], out=o)", "L.kron(x, y, out=o)", "L.gather(x, 1, i % 3, out=o)",
    "L.index_select(x, 1, i[0] % 3, out=o)", "L.scatter_add(x, 1, i % 3, y, out=o)",
    "L.scatter(x, 1, i % 3, 2.0, out=o)",
    "L.scatter_reduce(x, 1, i % 3, y, 'amax', out=o)", "L.index_add(x, 0, L.tensor([1]), y[:1], out=o)",
    "L.masked_select(x, x > 0, out=o)", "L.take_along_dim(x, i % 3, 1, out=o)", "L.nonzero(x > 0, out=o)",
    "L.tril(x, out=o)", "L.diagonal_copy(x, out=o)",
]
# covered by the pointwise family's calls above (same path, same check as a listed sibling)
OUT_OVERLOADS_NOT_CALLED = ["acos", "asin", "atan", "atan2", "bitwise_or", "bitwise_xor", "ceil", "cos", "cosh",
                            "erf", "exp2", "expm1", "fmod", "frac", "ge", "gt", "le", "log", "log10", "log1p",
                            "log2", "logical_not", "logical_or", "logical_xor", "minimum", "ne", "neg",
                            "reciprocal", "remainder", "rsqrt", "sigmoid", "sin", "sinh", "sqrt", "tan", "tanh",
                            "trunc", "triu", "amin", "any", "argmin", "dstack", "column_stack",
                            "max", "min"]  # max and min: test_max_min_out_matches_torch
OUT_KINDS = {
    "f32": "L.empty(0)", "i64": "L.empty(0, dtype=L.int64)", "f64": "L.empty(0, dtype=L.float64)",
    "bool": "L.empty(0, dtype=L.bool)", "wrong-shape": "L.empty(7).fill_(3)", "transposed": "L.zeros(3, 2).t()",
    "requires-grad": "L.zeros(0, requires_grad=True)",
}


def _out_env(L):
    x = L.tensor([[0.5, -1.25, 2.0], [3.5, -0.75, 1.0]])
    return {"L": L, "x": x, "y": x.flip(1) * 0.5 + 0.25, "i": L.tensor([[1, 2, 0], [4, 0, 5]]),
            "m": L.tensor([[1.0, 2.0, 0.5, -1.0], [0.0, 1.0, 1.5, 2.0], [2.0, -1.0, 0.0, 1.0]])}


def _run_out(L, call, kind):
    env = _out_env(L)
    env["o"] = o = eval(OUT_KINDS[kind], env)  # noqa: S307
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = eval(call, env)  # noqa: S307
        except Exception as e:  # noqa: BLE001
            return ("error", type(e).__name__, str(e).split("\n")[0].split(" (Triggered")[0])
    msgs = sorted({str(m.message).split(" (Triggered")[0] for m in w})
    return ("ok", r is o, tuple(o.shape), str(o.dtype).split(".")[-1], tuple(o.stride()), o.requires_grad, msgs,
            np.asarray(o.detach().tolist(), dtype=np.float64))


@pytest.mark.oracle
@pytest.mark.parametrize("call", OP_OUT_CALLS)
def test_op_out_matches_torch(call):
    from oracle import require_torch
    torch = require_torch()
    for kind in OUT_KINDS:
        ours, theirs = _run_out(cl, call, kind), _run_out(torch, call, kind)
        assert ours[:-1] == theirs[:-1], kind
        if ours[0] == "ok":  # float32 math may differ in the last bit (numpy's exp vs torch's)
            np.testing.assert_allclose(ours[-1], theirs[-1], rtol=1e-6, err_msg=kind)


MAX_MIN_OUT = [
    "L.max(x, 1, out=(L.empty(0), L.empty(0, dtype=L.int64)))",
    "L.min(x, 1, True, out=[L.empty(5), L.empty(5).long()])",
    "L.max(x, 1, out=(L.empty(0, dtype=L.float64), L.empty(0, dtype=L.int64)))",
    "L.max(x, 1, out=(L.empty(0), L.empty(0)))", "L.max(x, 1, out=(L.empty(0),))", "L.max(x, out=L.empty(3))",
    "L.max(x, out=L.empty(0, dtype=L.float64))", "L.max(x, out=L.empty(0, dtype=L.int64))",
    "L.min(x, y, out=L.empty(0, dtype=L.float64))", "L.max(x, y, out=L.empty(0, dtype=L.int64))",
    "L.max(i, 1, out=(L.empty(0), L.empty(0, dtype=L.int64)))",
    "L.max(x.requires_grad_(), 1, out=(L.empty(0), L.empty(0, dtype=L.int64)))",
]


@pytest.mark.oracle
@pytest.mark.parametrize("call", MAX_MIN_OUT)
def test_max_min_out_matches_torch(call):
    from oracle import require_torch
    torch = require_torch()

    def run(L):
        env = _out_env(L)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                r = eval(call, env)  # noqa: S307
            except Exception as e:  # noqa: BLE001
                return ("error", type(e).__name__, str(e).split(":")[0])
        outs = tuple(r) if isinstance(r, tuple) else (r,)
        return (type(r).__name__, [(tuple(t.shape), str(t.dtype).split(".")[-1], t.tolist())
                                                         for t in outs], len(w))
    assert run(cl) == run(torch)


def test_op_out_must_be_a_tensor():
    with pytest.raises(TypeError, match=r"^mm\(\): argument 'out' must be Tensor, not list$"):
        cl.mm(cl.ones(2, 2), cl.ones(2, 2), out=[1])


def test_op_out_is_written_through_the_dispatcher():
    seen = []

    class Names(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.name)
            return func(*args)

    o, a, b = f32(0), cl.ones(2, 3), cl.ones(3)
    with Names():
        r = cl.matmul(a, b, out=o)
    assert r is o and o.tolist() == [3.0, 3.0]
    assert seen == ["mv", "copy_"]


def test_op_out_may_be_an_input():
    x = cl.tensor([1.0, 2.0])
    assert cl.add(x, x, out=x) is x and x.tolist() == [2.0, 4.0]
    m = cl.tensor([[1.0, 2.0], [3.0, 4.0]])
    cl.mm(m, m, out=m)
    assert m.tolist() == [[7.0, 10.0], [15.0, 22.0]]


def test_methods_take_no_out():
    import inspect
    assert "out" not in inspect.signature(cl.Tensor.add).parameters
    assert "out" in inspect.signature(cl.add).parameters
