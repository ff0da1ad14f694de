"""course_lib._inductor: compiled graphs return what eager course_lib returns."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import course_lib as cl  # noqa: E402
from course_lib._functorch import aot_function  # noqa: E402
from course_lib._inductor import compile_fx  # noqa: E402
from course_lib.fx.experimental.proxy_tensor import make_fx  # noqa: E402


def _compile(f, *args):
    gm = make_fx(f)(*args)
    return compile_fx(gm, list(args))


def _check(f, *args, rtol=1e-5, atol=1e-6):
    compiled = _compile(f, *args)
    got, want = compiled(*args), f(*args)
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=atol)
    return compiled


def _chain(x):
    y = x * 1.5 + 0.5
    y = cl.sin(y) * y
    y = cl.exp(-cl.abs(y)) + y * y
    return cl.tanh(y) - 0.1 * y


def test_chain_is_one_kernel_and_equal_to_eager():
    x = cl.randn(1000)
    c = _check(_chain, x)
    assert c.n_kernels == 1 and c.n_externs == 0
    assert "for i in range(1000)" in c.source and "np.tanh" in c.source
    assert c.source.count("np.empty(") == 1   # only the result is written to memory


def test_float32_sin_cos_of_large_arguments_take_the_exact_loop():
    x = cl.tensor([0.5, 3e6, -1e30, 2.0**20, 1e7, float("inf")])
    c = _check(lambda x: (cl.sin(x * 1), cl.cos(x + 0), cl.exp(x * 0)), x)
    assert "sinf(" in c.source and "if big:" in c.source and "np.sin(" in c.source


def test_kernels_are_vectorised_16_wide_for_their_compilation_only_and_quietly():
    # LLVM's vectoriser is forced to 16 lanes while a kernel compiles: the remarks it prints then about
    # loops it cannot vectorise never reach stderr, and a numba function compiled afterwards is left to
    # LLVM's own choice (forced, numba's loops in np.zeros and max would print remarks)
    code = """if True:
        import os
        import numpy as np
        import numba
        import course_lib as cl
        from course_lib._inductor import compile_fx
        from course_lib.fx.experimental.proxy_tensor import make_fx
        from course_lib._inductor import codegen
        def chain(x):
            y = x * 1.5 + 0.5
            y = cl.sin(y) * y
            y = cl.exp(-cl.abs(y)) + y * y
            return cl.tanh(y) - 0.1 * y
        x = cl.randn(100_000)
        c = compile_fx(make_fx(chain)(x), [x])
        asm = "".join(c._namespace["kernel0"].inspect_asm().values())
        import llvmlite.binding as llvm
        wide = llvm.get_host_cpu_features().get("avx512f", False)
        print("zmm" in asm if wide else "no-avx512", flush=True)   # 16 float32 lanes: one 512-bit register
        os.write(2, b"kept\\n")
        numba.njit(lambda a: np.zeros(a.shape[0]).max())(np.ones(3))
        with codegen._wide_vectors(16):
            os.write(2, b"remark: dropped\\nwritten while compiling\\n")
        print("done", flush=True)
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() in (["True", "done"], ["no-avx512", "done"])
    assert out.stderr == "kept\nwritten while compiling\n"


@pytest.mark.parametrize("user_env", [{}, {"OMP_WAIT_POLICY": "active"}, {"GOMP_SPINCOUNT": "5"}])
def test_thread_pool_starts_with_short_spinning_unless_the_environment_says_otherwise(user_env):
    # in a fresh process: libgomp reads GOMP_SPINCOUNT once, when numba's thread pool loads it
    code = """if True:
        import os
        from numba.np.ufunc import parallel
        seen = []
        launch = parallel._launch_threads
        def spy():
            if not parallel._is_initialized:
                seen.append(os.environ.get("GOMP_SPINCOUNT"))
            launch()
        parallel._launch_threads = spy
        import course_lib as cl
        from course_lib._inductor import compile_fx
        from course_lib.fx.experimental.proxy_tensor import make_fx
        x = cl.randn(100_000)
        c = compile_fx(make_fx(lambda x: (x * 2).sin())(x), [x])
        c(x)
        print(seen[0], os.environ.get("GOMP_SPINCOUNT"))
    """
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**env, **user_env})
    assert out.returncode == 0, out.stderr
    mine = user_env.get("GOMP_SPINCOUNT", "None")
    # set while the pool starts, then gone again (other libraries read the environment as the user left it)
    assert out.stdout.split() == (["10000", "None"] if not user_env else [mine, mine])


def test_large_kernel_is_parallel():
    c = _check(_chain, cl.randn(100_000))
    assert "prange(100000)" in c.source and "parallel=True" in c.source


@pytest.mark.parametrize("n", [1000, 100_000])
def test_long_float32_chain_is_split_into_loops_through_the_output(n):
    # sin -> exp in one loop, tanh in a second reading the first's value back from the result buffer
    x = cl.randn(n)
    c = _check(_chain, x)
    assert c.source.count("out0[i] = t8  # for a later loop") == 1 and "t8 = out0[i]" in c.source
    assert c.source.count("np.empty(") == 1
    assert "big0 += np.int32(abs(t1) >= TRIG_LIMIT)" in c.source   # the vectorised count
    # both loops run per block of 4096 elements (the last one shorter: 1000 and 100000 are not multiples)
    blocks = -(-n // 4096)
    assert f"prange({blocks})" in c.source or f"for b in range({blocks})" in c.source
    assert c.source.count("for i in range(lo, hi):") == 2


def test_one_thread_runs_the_kernel_without_prange():
    x = cl.randn(100_000)
    c = _compile(_chain, x)
    old = cl.get_num_threads()
    try:
        cl.set_num_threads(1)
        one, k1 = c(x), c._namespace["kernel0"]
        cl.set_num_threads(2)
        two, k2 = c(x), c._namespace["kernel0"]
    finally:
        cl.set_num_threads(old)
    assert not k1.targetoptions.get("parallel") and k2.targetoptions.get("parallel")
    np.testing.assert_allclose(one.numpy(), _chain(x).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(one.numpy(), two.numpy())


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("n", [6, 100_000])
def test_split_chain_with_large_sin_arguments_takes_the_exact_loop(n):
    big = cl.tensor([0.5, 3e6, -1e30, 1e7, float("inf"), float("nan")])
    x = big if n == 6 else cl.cat([cl.randn(n - 6), big])
    c = _check(_chain, x)
    assert "for a later loop" in c.source and "if big:" in c.source


def test_chain_whose_carried_value_has_no_buffer_stays_one_loop():
    def f(x):
        a = cl.sin(x)
        return cl.exp(a) * 2, cl.tanh(a).double()   # a (float32) is read after the split: no float32 buffer

    c = _check(f, cl.randn(1000))
    assert "for a later loop" not in c.source and c.source.count("for i in range(1000)") == 2  # fast, exact


def test_split_chain_with_several_outputs_and_carried_values():
    def f(x):
        a = cl.sin(x) * x
        b = cl.exp(-a.abs())
        t = cl.tanh(a + b)
        return t, cl.exp(t) + a, b * 2

    c = _check(f, cl.randn(1000))
    assert "for a later loop" in c.source


@pytest.mark.parametrize("dtype", [cl.float32, cl.float64])
def test_dtypes_and_broadcasting(dtype):
    a = cl.randn(4, 1, 5, dtype=dtype)
    b = cl.randn(3, 1, dtype=dtype)
    s = cl.tensor(2.0, dtype=dtype)

    def f(a, b, s):
        return cl.sigmoid(a * b + s).relu() / (b.abs() + 1), (a - b) * s

    _check(f, a, b, s)


@pytest.mark.parametrize("threads", [1, 2])
def test_large_broadcasting_kernel_in_both_loop_forms(threads):
    # 3 x 256 x 128 elements: a prange loop with 2 threads (its coordinates of i once failed numba's
    # parfor pass: "Overwrite of parallel loop index"), a plain loop with 1
    a, b, c = cl.randn(3, 256, 128), cl.randn(256, 1), cl.randn(128)
    old = cl.get_num_threads()
    try:
        cl.set_num_threads(threads)
        comp = _check(lambda a, b, c: (a * b + c).relu() - cl.exp(b * 0.5), a, b, c)
    finally:
        cl.set_num_threads(old)
    # (the source shown, a parallel loop over the 768 rows; one thread runs it without prange)
    assert "for o in prange(768):" in comp.source and "for c2 in range(128):" in comp.source
    kernels = [k for name, k in comp._namespace.items() if name.startswith("kernel")]
    assert any(k.targetoptions.get("parallel") for k in kernels) == (threads == 2)


def test_comparisons_where_clamp_and_bool_outputs():
    x, y = cl.randn(6, 7), cl.randn(7)

    def f(x, y):
        m = x > y
        return cl.where(m, x, y * 2).clamp(-0.5, 0.5), m, (x <= 0.25) & (y > 0)

    _check(f, x, y)


def test_mixed_float_dtypes_and_int_inputs():
    x, i = cl.randn(5, dtype=cl.float32), cl.arange(5)

    def f(x, i):
        return x * i + x.double(), i + 1

    _check(f, x, i)


def test_extern_ops_between_fused_groups_and_buffer_reuse():
    x, w = cl.randn(8, 16, dtype=cl.float64), cl.randn(16, 16, dtype=cl.float64)

    def f(x, w):
        h = cl.tanh(x * 2 + 1)
        h = (h @ w).relu() * 3
        h = cl.exp(-h) + h
        g = h @ w
        return (g.sin() + 1) * g

    c = _check(f, x, w)
    assert c.n_kernels == 3 and c.n_externs == 2
    assert "# reuse" in c.source   # the first kernel's buffer is dead after the first matmul


def test_extern_that_does_not_read_the_group_does_not_split_it():
    x, w = cl.randn(4, 4), cl.randn(4, 4)

    def f(x, w):
        a = x * 2
        m = w @ w
        return (a + 1) * m

    c = _check(f, x, w)
    assert c.n_kernels == 1


def test_views_of_buffers_stay_alive():
    x = cl.randn(4, 6)

    def f(x):
        a = (x * 2).t()
        b = cl.exp(x) * 0   # a buffer of the same size that must not overwrite a's
        return a + 0, b.sum()

    _check(f, x)


def test_outputs_include_inputs_and_intermediates():
    x = cl.randn(3)

    def f(x):
        y = x + 1
        return x, y, y * 2

    _check(f, x)


def test_special_values_propagate_like_eager():
    x = cl.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e30])
    _check(lambda x: (cl.maximum(x, x * 0), x.relu(), x.clamp(-1, 1), 1 / x, cl.tanh(x)), x)


def test_as_aot_function_compilers_forward_and_gradients():
    def f(a, b):
        return (a / (a.abs() + 1) * b).sin().sum()

    a = cl.randn(10, 4, requires_grad=True)
    b = cl.randn(10, 4, requires_grad=True)
    compiled = aot_function(f, fw_compiler=compile_fx, bw_compiler=compile_fx)
    out = compiled(a, b)
    out.backward()
    ga, gb = a.grad.numpy().copy(), b.grad.numpy().copy()
    a.grad = b.grad = None
    want = f(a, b)
    want.backward()
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ga, a.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb, b.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_mlp_step_gradients_through_aot():
    x = cl.randn(8, 5)
    w1, w2 = cl.randn(5, 7, requires_grad=True), cl.randn(7, 3, requires_grad=True)

    def f(x, w1, w2):
        return ((x @ w1).relu() @ w2).tanh().pow(2).mean()

    compiled = aot_function(f, fw_compiler=compile_fx)
    compiled(x, w1, w2).backward()
    g1, g2 = w1.grad.numpy().copy(), w2.grad.numpy().copy()
    w1.grad = w2.grad = None
    f(x, w1, w2).backward()
    np.testing.assert_allclose(g1, w1.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g2, w2.grad.numpy(), rtol=1e-5, atol=1e-6)


_UNARY = ["sin", "cos", "tanh", "exp", "abs", "neg", "sigmoid", "relu", "square", "floor", "sign"]
_BINARY = ["add", "sub", "mul", "maximum", "minimum"]
_TRANSCENDENTAL = {"sin", "cos", "tanh", "exp", "sigmoid"}


@st.composite
def _programs(draw):
    """A random pointwise program: a list of (op, operand indices or scalars) over 1-3 inputs."""
    n_inputs = draw(st.integers(1, 3))
    steps = []
    # values computed from a transcendental function (directly or not): the kernels' float32 ones and numpy's
    # may differ by an ulp (numpy's tanh gives 0.99999994 up to x = 10, where tanh rounds to 1.0 from
    # 9.0109 on, as the kernels' tanhf and torch's do), which floor turns into a difference of 1; so
    # floor reads only values computed without them
    inexact = set()
    for k in range(draw(st.integers(1, 8))):
        n = n_inputs + k
        if draw(st.booleans()):
            op, a = draw(st.sampled_from(_UNARY)), draw(st.integers(0, n - 1))
            if op == "floor" and a in inexact:
                op = "neg"
            steps.append((op, a))
            if op in _TRANSCENDENTAL or a in inexact:
                inexact.add(n)
        else:
            other = draw(st.one_of(st.integers(0, n - 1), st.floats(-3, 3, allow_nan=False).map(lambda v: ("s", v))))
            a = draw(st.integers(0, n - 1))
            steps.append((draw(st.sampled_from(_BINARY)), a, other))
            if a in inexact or other in inexact:
                inexact.add(n)
    shapes = draw(st.lists(st.sampled_from([(3, 4), (4,), (1, 4), (3, 1), ()]), min_size=n_inputs,
                           max_size=n_inputs))
    dtype = draw(st.sampled_from([cl.float32, cl.float64]))
    n_out = draw(st.integers(1, 2))
    return n_inputs, steps, shapes, dtype, n_out


def _run_program(steps, n_out, *inputs):
    vals = list(inputs)
    for op, *operands in steps:
        args = [o[1] if isinstance(o, tuple) else vals[o] for o in operands]
        if op in _UNARY:
            vals.append(getattr(cl, op)(args[0]) if op != "relu" else args[0].relu())
        else:
            a, b = args
            if not isinstance(b, cl.Tensor):
                b = cl.full((), b, dtype=a.dtype)
            vals.append(getattr(cl, op)(a, b))
    return tuple(vals[-n_out:])


@settings(max_examples=40, deadline=None)
@given(_programs(), st.integers(0, 2**31 - 1))
def test_random_pointwise_programs_equal_eager(program, seed):
    n_inputs, steps, shapes, dtype, n_out = program
    g = cl.Generator().manual_seed(seed)
    inputs = [cl.randn(*s, generator=g, dtype=dtype) for s in shapes]
    _check(lambda *xs: _run_program(steps, n_out, *xs), *inputs, rtol=1e-4, atol=1e-5)


#: the programs' shapes scaled up, so that their kernels have prange loops (at least PARALLEL_THRESHOLD elements)
_LARGE = {(3, 4): (96, 1024), (4,): (1024,), (1, 4): (1, 1024), (3, 1): (96, 1), (): ()}


@settings(max_examples=25, deadline=None)
@given(_programs(), st.integers(0, 2**31 - 1))
def test_random_pointwise_programs_with_parallel_loops_equal_eager(program, seed):
    # (found this way: two sin in one prange loop, each counting its large arguments into one variable,
    # which numba's parfor pass refuses)
    n_inputs, steps, shapes, dtype, n_out = program
    shapes = [_LARGE[s] for s in shapes]
    shapes[0] = (96, 1024)
    g = cl.Generator().manual_seed(seed)
    inputs = [cl.randn(*s, generator=g, dtype=dtype) for s in shapes]
    old = cl.get_num_threads()
    try:
        cl.set_num_threads(2)
        c = _check(lambda *xs: _run_program(steps, n_out, *xs), *inputs, rtol=1e-4, atol=1e-5)
    finally:
        cl.set_num_threads(old)
    computed = [o for o in _run_program(steps, n_out, *inputs) if not any(o is x for x in inputs)]
    if any(o.numel() >= 96 * 1024 for o in computed):
        assert "prange(" in c.source


@pytest.mark.parametrize("n", [6, 100_000])
def test_two_sin_in_one_loop_count_their_large_arguments_apart(n):
    x = cl.randn(n)
    x[0] = 3e7
    c = _check(lambda x: (cl.sin(x) * cl.sin(x * 2) + cl.cos(x), x * 3), x)
    assert "big0 +=" in c.source and "big2 +=" in c.source and "big = big0 + big1 + big2" in c.source


def test_import_error_names_the_extra_without_numba():
    code = ("import sys; sys.modules['numba'] = None\n"
            "import course_lib\n"
            "try:\n    import course_lib._inductor\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "numba" in out and "compile" in out and "extra" in out


@pytest.mark.parametrize("name", ["exp", "sin", "cos", "tanh"])
def test_vectorisable_float32_functions_within_an_ulp_of_the_float64_ones(name):
    from numba import njit

    from course_lib._inductor import libm
    fn = getattr(libm, name + "f")
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, 1e-30, -1e-8, 88.7, 89.0, -104.0, -120.0, np.inf, -np.inf, np.nan, 1e6, -3e5,
               0.0625, 0.06, 1e-3,
               # near zeros of sin or cos, where the range reduction needs pi/2 to better than float64's
               # precision (6e-17 off: 22 ulp at 252.898); the worst errors of an exhaustive check over
               # |x| < 2**20 are at 931878.125 for sin and 993335.5 for cos
               252.89820861816406, 505.7964172363281, 2238.384765625, 4476.76953125, 931878.125, -993335.5]
    x = np.concatenate([rng.standard_normal(200_000) * 5, special, np.linspace(-1000, 1000, 50_000),
                        np.linspace(-0.1, 0.1, 50_000)]).astype(np.float32)

    @njit("void(float32[::1], float32[::1])", error_model="numpy")
    def run(a, o):
        for i in range(a.size):
            o[i] = fn(a[i])
    got = np.empty_like(x)
    run(x, got)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2.4e-7, atol=1e-37)   # 2 ulp: rounded + 1 ulp off



def test_tanhf_with_its_own_exp_equals_tanhf_with_expf():
    # tanhf's exp skips expf's NaN and subnormal handling (its argument is in [0, 88]); the results are the
    # same bits (checked by hand at every float32; here at 2**20 random bit patterns and the special values)
    from numba import njit

    from course_lib._inductor import libm
    F = np.float32

    @njit(error_model="numpy", fastmath={"contract"})
    def with_expf(x):
        z = abs(x)
        zz = x * x
        small = ((((F(-5.70498872745e-3) * zz + F(2.06390887954e-2)) * zz - F(5.37397155531e-2)) * zz
                  + F(1.33314422036e-1)) * zz - F(3.33332819422e-1)) * zz * x + x
        s = libm.expf(F(2.0) * min(z, F(44.0)))
        t = F(1.0) - F(2.0) / (s + F(1.0))
        big = -t if x < 0 else t
        return x if x != x else (small if z < F(0.625) else big)

    @njit(error_model="numpy", fastmath={"contract"})
    def both(xs, a, b):
        for i in range(xs.size):
            a[i] = with_expf(xs[i])
            b[i] = libm.tanhf(xs[i])

    bits = np.random.default_rng(0).integers(-2**31, 2**31, 2**20, dtype=np.int64).astype(np.int32)
    special = np.array([0.0, -0.0, 0.625, -0.625, 9.0, 44.0, 45.0, 88.0, 1e30, np.inf, -np.inf, np.nan, 1e-45],
                       np.float32)
    xs = np.concatenate([bits.view(np.float32), special])
    a, b = np.empty_like(xs), np.empty_like(xs)
    both(xs, a, b)
    np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))

# ---------------------------------------------------------------------------
# row kernels: reductions fused with what feeds them and what reads them
# ---------------------------------------------------------------------------
def test_softmax_is_one_row_kernel_with_inner_loops():
    x = cl.randn(6, 9) * 30   # large logits: the max subtraction matters
    c = _check(lambda x: cl.softmax(x, -1), x)
    assert c.n_kernels == 1 and c.n_externs == 0
    assert "for r in range(6):" in c.source and c.source.count("for j in range(9):") == 3
    assert c.source.count("np.empty(") == 1   # max and sum stay in registers


@pytest.mark.parametrize("dtype", [cl.float32, cl.float64])
@pytest.mark.parametrize("shape", [(3, 5, 7), (1, 1), (4, 1), (1, 6), (7,)])
def test_reductions_and_their_epilogues_equal_eager(dtype, shape):
    x = cl.randn(*shape, dtype=dtype)

    def f(x):
        return (cl.softmax(x, -1), cl.log_softmax(x * 2, -1), x.sum(-1), x.mean(-1, keepdim=True),
                x.amax(-1), x.amin(-1, keepdim=True), (x * x).sum(0), x.sum(), (x - x.mean(-1, keepdim=True)).exp())

    _check(f, x, rtol=1e-5 if dtype == cl.float32 else 1e-10, atol=1e-6 if dtype == cl.float32 else 1e-12)


def test_reductions_of_non_contiguous_and_broadcast_inputs():
    x = cl.randn(5, 8).t()          # (8, 5), not contiguous
    w = cl.randn(5)

    def f(x, w):
        y = x * w + 1
        return cl.softmax(y, -1), (y * w).sum(-1, keepdim=True), y.sum(0)

    c = _check(f, x, w)
    assert c.n_kernels == 1


def test_nan_and_inf_in_reductions_propagate_like_eager():
    x = cl.tensor([[1.0, float("nan"), 2.0], [float("inf"), 1.0, 0.0], [-float("inf")] * 3, [0.0, 1.0, 2.0]])
    _check(lambda x: (x.amax(-1), x.amin(-1), x.sum(-1), cl.softmax(x, -1)), x)


def test_size_zero_reductions_keep_course_libs_kernels():
    x = cl.randn(0, 3)
    _check(lambda x: (x.sum(-1), x.sum(0), x * 2), x)


def test_layernorm_forward_backward_through_aot_min_cut_is_two_row_kernels():
    from course_lib._functorch import aot_module
    from course_lib._functorch.partitioners import min_cut_rematerialization_partition
    compiled: list = []

    def cfx(gm, example_inputs):
        compiled.append(compile_fx(gm, example_inputs))
        return compiled[-1]

    m = cl.nn.LayerNorm(7)
    with cl.no_grad():
        m.weight.normal_()
        m.bias.normal_()
    x = cl.randn(3, 5, 7).transpose(0, 1).requires_grad_()   # (5, 3, 7), not contiguous
    gy = cl.randn(5, 3, 7)
    cm = aot_module(m, cfx, cfx, partition_fn=min_cut_rematerialization_partition)
    out = cm(x)
    out.backward(gy)
    got = [out.detach().numpy(), x.grad.numpy().copy(), m.weight.grad.numpy().copy(), m.bias.grad.numpy().copy()]
    x.grad = m.weight.grad = m.bias.grad = None
    want = m(x)
    want.backward(gy)
    for g, w in zip(got, [want.detach().numpy(), x.grad.numpy(), m.weight.grad.numpy(), m.bias.grad.numpy()]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    fw, bw = compiled
    assert fw.n_kernels == 1 and fw.n_externs == 0 and bw.n_kernels == 1 and bw.n_externs == 0
    assert "_part" in bw.source   # dweight and dbias: column sums in the same kernel


def test_large_row_kernel_is_parallel_and_matches_numpy():
    x = cl.randn(300, 256)
    c = _check(lambda x: (cl.softmax(x, -1), (x * 2).sum(0)), x, atol=1e-4)   # sums of 300 terms ~2
    assert "prange(" in c.source and "parallel=True" in c.source
    xn = x.numpy().astype(np.float64)
    e = np.exp(xn - xn.max(1, keepdims=True))
    got = c(x)
    np.testing.assert_allclose(got[0].numpy(), e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-8)
    np.testing.assert_allclose(got[1].numpy(), (xn * 2).sum(0), rtol=2e-6, atol=2e-5)   # float64 sums


def test_constant_arguments_that_are_not_literals():
    x = cl.randn(4)
    _check(lambda x: x + cl.full((), 2.0, dtype=x.dtype), x)


# ---------------------------------------------------------------------------
# mode="reduce-overhead"
# ---------------------------------------------------------------------------
def _ro_program():
    x, w, b = cl.randn(8, 16), cl.randn(16, 4), cl.randn(4)

    def f(x, w, b):
        h = cl.addmm(b, x, w).relu()
        return (h.t() @ h).sum(0), h * 2

    return compile_fx(make_fx(f)(x, w, b), [x, w, b], mode="reduce-overhead"), f, (x, w, b)


def test_reduce_overhead_calls_numpy_directly_and_equals_eager():
    c, f, args = _ro_program()
    assert "np.dot(" in c.source and "_call_extern" not in c.source
    for g, w in zip(c(*args), f(*args)):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_bias_of_addmm_joins_the_kernel_of_its_pointwise_readers(mode):
    x, w, b = cl.randn(8, 16), cl.randn(4, 16), cl.randn(4)

    def f(x, w, b):
        return cl.nn.functional.linear(x, w, b).relu() * 2

    c = compile_fx(make_fx(f)(x, w, b), [x, w, b], mode=mode)
    assert "addmm" not in c.wrapper_source and c.n_kernels == 1
    assert "add -> maximum -> mul" in c.source
    # the same values as eager's addmm, which also rounds the product before adding the bias
    np.testing.assert_array_equal(c(x, w, b).numpy(), f(x, w, b).numpy())


def test_addmm_stays_whole_when_its_result_is_returned_or_read_by_an_extern():
    x, w, b = cl.randn(8, 16), cl.randn(4, 16), cl.randn(4)

    def returned(x, w, b):
        h = cl.addmm(b, x, w.t())
        return h, h.relu()

    def extern_reader(x, w, b):
        return cl.addmm(b, x, w.t()) @ w

    for f in (returned, extern_reader):
        c = _check(f, x, w, b)
        assert "addmm" in c.wrapper_source


def test_reduce_overhead_reuses_its_buffers_and_the_second_call_equals_the_first():
    c, f, args = _ro_program()
    first = [t.numpy().copy() for t in c(*args)]
    buffers = [id(a) for a in c.buffers]
    assert buffers
    second = [t.numpy().copy() for t in c(*args)]
    assert [id(a) for a in c.buffers] == buffers     # no result was alive: same memory
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_reduce_overhead_never_overwrites_a_result_the_caller_still_holds():
    c, f, (x, w, b) = _ro_program()
    kept = c(x, w, b)
    values = [t.numpy().copy() for t in kept]
    view = kept[1][1:]   # a view keeps the memory alive too
    c(x * 3, w, b)
    c(x * 5, w, b)
    for t, v in zip(kept, values):
        np.testing.assert_array_equal(t.numpy(), v)
    np.testing.assert_array_equal(view.numpy(), values[1][1:])


def test_in_place_update_of_inputs_writes_into_them():
    def sgd(p, q, g):
        p.sub_(g * 0.1)
        q.mul_(0.5)

    p, g = cl.randn(5, 3), cl.randn(5, 3)
    q = cl.randn(3, 5).t()   # not contiguous: computed aside, then copied back
    p0, q0 = p.numpy().copy(), q.numpy().copy()
    c = compile_fx(make_fx(sgd)(p.clone(), q.clone(), g), [p, q, g], mode="reduce-overhead")
    assert c(p, q, g) is None
    # (atol: the kernel may fuse the multiply and the subtraction, one rounding fewer than eager's two)
    np.testing.assert_allclose(p.numpy(), p0 - g.numpy() * np.float32(0.1), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(q.numpy(), q0 * 0.5)


def test_unknown_mode_is_refused_with_torchs_message():
    x = cl.randn(3)
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast, should be one of: default, reduce-overhead"):
        compile_fx(make_fx(lambda x: x + 1)(x), [x], mode="fast")


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_reduce_overhead_joint_graph_of_a_cross_entropy_step_equals_autograd(reduction):
    from course_lib._functorch.aot_autograd import trace_joint
    F = cl.nn.functional

    def loss_fn(w, b, x, y):
        return F.cross_entropy(F.linear(x, w, b).relu() * 3, y, ignore_index=1, reduction=reduction)

    cl.manual_seed(0)
    w, b = cl.randn(5, 4, requires_grad=True), cl.randn(5, requires_grad=True)
    x, y = cl.randn(6, 4), cl.tensor([0, 1, 4, 2, 1, 3])
    one = cl.ones(())
    c = compile_fx(trace_joint(loss_fn, w, b, x, y).module, [w, b, x, y, one], mode="reduce-overhead")
    assert "_call_extern" not in c.source   # log_softmax and its backward are kernels, nll_loss numpy
    loss, gw, gb, *_ = c(w, b, x, y, one)
    want = loss_fn(w, b, x, y)
    want.backward()
    np.testing.assert_allclose(loss.numpy(), want.detach().numpy(), rtol=1e-5)
    # (float32 sums of terms that cancel, in another order than eager's: in 7 of 400 seeded runs a gradient
    # was 3e-6 away with reduction="sum")
    np.testing.assert_allclose(gw.numpy(), w.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gb.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        c(w, b, x, cl.tensor([0, 1, 7, 2, 1, 3]), one)


def test_reshape_of_a_permuted_tensor_fuses_its_clone():
    """reshape of a non-contiguous tensor records clone(x, contiguous_format): a row-major copy, fused like
    any pointwise op (the memory-format argument is not a second operand); channels_last stays an extern."""
    x = cl.randn(2, 3, 4)

    def f(x):
        return x.reshape(6, 4).permute(1, 0).reshape(-1) * 2

    c = compile_fx(make_fx(f)(x), [x])
    out = c(x)
    np.testing.assert_allclose((out[0] if isinstance(out, (list, tuple)) else out).numpy(), f(x).numpy(), rtol=1e-6)
    assert c.n_kernels == 2     # the copy (a kernel, not an extern) and the multiplication

    def g(x):
        return x.unsqueeze(0).contiguous(memory_format="channels_last") * 3
    c = compile_fx(make_fx(g)(x), [x])
    out = c(x)
    np.testing.assert_allclose((out[0] if isinstance(out, (list, tuple)) else out).numpy(), g(x).numpy(), rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("target", [[0, 1, 2, 3, -100, 1], [-100] * 6, [0, 1, 2, 3, 4, 1], [0, -3, 2, 3, 4, 1]])
def test_nll_loss_forward_and_backward_kernels_match_eager_values_and_errors(reduction, target):
    """The joint graph of nll_loss(log_softmax(x)): ignored targets, all ignored (mean: nan), and an
    out-of-range target (eager's IndexError, from forward and backward alike)."""
    import warnings

    import course_lib.nn.functional as F
    from course_lib._functorch.aot_autograd import trace_joint

    x = cl.tensor(np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32), requires_grad=True)
    y = cl.tensor(target)

    def f(x, y):
        return F.nll_loss(x.log_softmax(1), y, reduction=reduction)
    program = compile_fx(trace_joint(f, x, y).module, [x, y, cl.ones(())])

    def outcome(run):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                loss, grad = run()[:2]   # (the joint graph gives y None)
            return ("ok", loss.item(), grad.numpy().tolist())
        except IndexError as e:
            return ("raise", str(e))

    def eager():
        loss = f(x, y)
        loss.backward()
        grad, x.grad = x.grad, None
        return loss, grad

    def compiled():
        with cl.no_grad():
            return program(x, y, cl.ones(()))
    want, got = outcome(eager), outcome(compiled)
    assert want[0] == got[0]
    if want[0] == "raise":
        assert got == want
    else:
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, equal_nan=True)
        np.testing.assert_allclose(got[2], want[2], rtol=1e-6, atol=1e-7, equal_nan=True)
