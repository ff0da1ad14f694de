"""Property tests: a compiled course_lib program behaves as the eager one, call by call.

Thousands of small random programs (tests/random_programs.py: branches on tensor values, loops,
``.item()``, prints, appends to an outer list, attribute and global writes, closures, module
attributes, a nested compiled helper, ops that raise) run eagerly and through ``course_lib.compile``
on 3-5 input sets each (new values taking other branches, new shapes, changed globals, no_grad,
dtype and requires_grad changes). Every call compares the result or the exception (type and
message), stdout, the outer list, the attributes, the globals and the ``.grad`` after backward():
exactly with the "eager" backend, within float tolerance with "aot_eager" and "inductor".

A failure prints the seed, the call and the program; ``python -c "import tests.random_programs as r;
print(r.generate_program(SEED).source)"`` prints it again.
"""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

import course_lib as cl

sys.path.insert(0, str(Path(__file__).parent))
import random_programs as rp  # noqa: E402

# Seeds: disjoint ranges per backend, split in chunks so `-n 2` can share them out.
EAGER_SEEDS = range(0, 2400)
AOT_SEEDS = range(100_000, 100_300)
INDUCTOR_SEEDS = range(200_000, 200_030)
COUNTER_SEEDS = range(300_000, 300_200)
CHUNK = 100


def _chunks(seeds: range, size: int) -> list[range]:
    return [range(s, min(s + size, seeds.stop)) for s in range(seeds.start, seeds.stop, size)]


def _compile(fn, **kwargs):
    return cl.compile(fn, **kwargs)


@pytest.fixture
def fresh_dynamo():
    """Empty compile caches before and after the test."""
    import course_lib._dynamo as dynamo

    dynamo.reset()
    yield dynamo
    dynamo.reset()


def _ids(chunks: list[range]) -> list[str]:
    return [f"seeds{c.start}-{c.stop - 1}" for c in chunks]


# ---------------------------------------------------------------------------------------------
# the generator and the harness
# ---------------------------------------------------------------------------------------------


def test_generator_is_deterministic_per_seed():
    for seed in (0, 7, 12345):
        a, b = rp._Generator(seed).program(), rp._Generator(seed).program()
        assert a.source == b.source and a.calls == b.calls
    assert rp._Generator(1).program().source != rp._Generator(2).program().source


def test_generator_covers_every_feature_the_properties_need():
    features: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    for seed in EAGER_SEEDS:
        program = rp.generate_program(seed)
        features.update(program.features)
        notes.update(c.note for c in program.calls)
    wanted = {
        "abs", "exp", "sin", "tanh", "relu", "sigmoid", "clamp", "where", "pow", "binary", "broadcast",
        "scalar_arith", "reduction", "reduction_dim", "reshape", "transpose", "slice", "select",
        "unsqueeze", "matmul", "factory", "if_tensor", "if_python", "loop", "loop_item_count", "item",
        "item_int", "tolist", "print", "print_tensor", "append", "attr_write", "module",
        "module_attr_write", "module_attr_read", "parameter", "closure_const", "closure_tensor",
        "global_const", "global_tensor", "global_write", "nonlocal_write", "nested_compiled", "error",
        "return_tuple", "return_float", "return_none",
    }
    rare = {f: features[f] for f in wanted if features[f] < 20}
    assert not rare, f"features drawn fewer than 20 times in {len(EAGER_SEEDS)} programs: {rare}"
    for note in ("new values", "new shapes", "changed global", "no_grad", "dtype change",
                 "requires_grad change", "same inputs again"):
        assert notes[note] >= 200, (note, notes[note])


def test_the_programs_raise_sometimes_and_need_backward_often():
    """Some calls raise (so error paths are compared) and many results require grad."""
    raised = total = 0
    for seed in range(200):
        program = rp.generate_program(seed)
        _, obj = rp._instantiate(program, lambda fn: fn)
        for call in program.calls:
            args = [cl.tensor(a, requires_grad=g) for a, g in zip(rp._make_args(program, call), call.requires_grad)]
            outcome, _ = rp._invoke(obj, args, call.no_grad)
            raised += outcome.kind == "raise"
            total += 1
    assert 0.02 * total < raised < 0.2 * total, (raised, total)


def _drops_prints(fn, **kw):
    def run(*args):
        with contextlib.redirect_stdout(io.StringIO()):
            return fn(*args)
    return run


def _reuses_results_per_shape(fn, **kw):
    """A 'compiler' with a guard on shapes only: returns the first result for a shape again."""
    cache: dict = {}

    def run(*args):
        key = tuple((tuple(a.shape), a.dtype, a.requires_grad) for a in args) + (cl.is_grad_enabled(),)
        if key not in cache:
            cache[key] = fn(*args)
        return cache[key]
    return run


def _detaches(fn, **kw):
    def run(*args):
        out = fn(*args)
        return out.detach() if isinstance(out, cl.Tensor) else out
    return run


def _swallows_errors(fn, **kw):
    def run(*args):
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001
            return None
    return run


def _runs_twice(fn, **kw):
    def run(*args):
        fn(*args)
        return fn(*args)
    return run


def _rounds_values(fn, **kw):
    def run(*args):
        out = fn(*args)
        if isinstance(out, cl.Tensor) and out.numel():
            return out * (1 + 2**-20)
        return out
    return run


@pytest.mark.parametrize("broken", [_drops_prints, _reuses_results_per_shape, _detaches, _swallows_errors,
                                    _runs_twice, _rounds_values])
def test_the_harness_catches_a_broken_compiler(broken):
    """Each wrong 'compiler' is caught within the first 60 programs (the comparison can fail)."""
    with pytest.raises(rp.Divergence, match="random program seed"):
        rp.check_seeds(range(60), broken, "eager")


def test_the_harness_passes_the_identity_compiler():
    rp.check_seeds(range(100), lambda fn, **kw: fn, "eager")


# ---------------------------------------------------------------------------------------------
# compiled == eager over random programs
# ---------------------------------------------------------------------------------------------

pytestmark_compiled = pytest.mark.usefixtures("fresh_dynamo")


@pytest.mark.parametrize("seeds", _chunks(EAGER_SEEDS, CHUNK), ids=_ids(_chunks(EAGER_SEEDS, CHUNK)))
@pytestmark_compiled
def test_random_programs_backend_eager(seeds):
    rp.check_seeds(seeds, _compile, "eager")


@pytest.mark.parametrize("seeds", _chunks(AOT_SEEDS, 50), ids=_ids(_chunks(AOT_SEEDS, 50)))
@pytestmark_compiled
def test_random_programs_backend_aot_eager(seeds):
    rp.check_seeds(seeds, _compile, "aot_eager")


@pytest.mark.parametrize("seeds", _chunks(INDUCTOR_SEEDS, 10), ids=_ids(_chunks(INDUCTOR_SEEDS, 10)))
@pytestmark_compiled
def test_random_programs_backend_inductor(seeds):
    pytest.importorskip("numba")
    rp.check_seeds(seeds, _compile, "inductor")


@pytest.mark.parametrize("seeds", _chunks(COUNTER_SEEDS, CHUNK), ids=_ids(_chunks(COUNTER_SEEDS, CHUNK)))
@pytestmark_compiled
def test_random_programs_custom_backend_sees_the_graphs(seeds):
    """A callable backend (CompileCounter) gets the graphs: the compiled side really is compiled."""
    from course_lib._dynamo.testing import CompileCounter

    counters = []

    def compile_with_counter(fn, backend):
        counters.append(CompileCounter())
        return cl.compile(fn, backend=counters[-1])

    rp.check_seeds(seeds, compile_with_counter, "counter", exact=True)
    frames = [c.frame_count for c in counters]
    ops = sum(c.op_count for c in counters)
    assert sum(f > 0 for f in frames) >= 0.9 * len(frames), frames
    assert ops > 5 * len(seeds)


# ---------------------------------------------------------------------------------------------
# guards, the cache limit, nested compiled functions
# ---------------------------------------------------------------------------------------------


def _call(note, sizes, dtypes=("float32", "float32"), grads=(False, False), globals_=None, no_grad=False,
          seed=0):
    return rp.CallSpec(note, sizes, dtypes, grads, globals_ or {}, no_grad, seed)


GUARD_SOURCE = '''
def build():
    def f(x, y):
        z = x * K + y
        LOG.append(tuple(z.shape))
        print("positive", z.sum().item() > 0)
        STATE.n += 1
        return z.tanh(), z.sum()
    return f
'''


def test_a_guard_failure_mid_sequence_recompiles_and_a_seen_input_hits_the_cache(fresh_dynamo):
    """Shape, dtype, requires_grad and global-constant guards fail in the middle of a sequence of
    calls: each failure recompiles (the backend sees new graphs), an input set seen before does not,
    and every call matches eager."""
    from course_lib._dynamo.testing import CompileCounter

    args = (rp.ArgSpec("x", ("n", "m"), "float32", False), rp.ArgSpec("y", ("m",), "float32", False))
    small, big = {"n": 3, "m": 4}, {"n": 5, "m": 2}
    steps = [
        (_call("first call", small, seed=1), True),
        (_call("new values", small, seed=2), False),
        (_call("new shapes", big, seed=3), True),
        (_call("first shapes again", small, seed=4), False),
        (_call("float64 x", small, dtypes=("float64", "float32"), seed=5), True),
        (_call("x requires grad", small, grads=(True, False), seed=6), True),
        (_call("K changed", small, globals_={"K": -3.0}, seed=7), True),
        (_call("K back", small, globals_={"K": 0.5}, seed=8), False),
        (_call("float64 x again", small, dtypes=("float64", "float32"), seed=9), False),
    ]
    program = rp.handmade_program(GUARD_SOURCE, args, [c for c, _ in steps])
    counter = CompileCounter()
    frames = [0]

    def after(i, call):
        recompiled = counter.frame_count > frames[-1]
        frames.append(counter.frame_count)
        assert recompiled == steps[i][1], (i, call.note, frames)

    rp.check_program(program, lambda fn, backend: cl.compile(fn, backend=counter), "counter", exact=True,
                     after_call=after)


LIMIT_SOURCE = '''
def build():
    def f(x):
        print("K is", K)
        y = x * K + 1
        if y.sum() > 0:
            LOG.append(y.sum())
            return y.exp()
        return y
    return f
'''


def _limit_messages(caught, caplog) -> list[str]:
    texts = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    return [t for t in texts if "limit" in t]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_past_the_cache_limit_a_function_runs_eagerly_with_a_warning_and_stays_correct(fresh_dynamo, caplog,
                                                                                       backend):
    """Every call reads a new global constant: 8 entries are compiled (torch's default limit), the
    later calls run eagerly after a warning, and all of them match eager."""
    import logging

    from course_lib._dynamo.testing import CompileCounterWithBackend

    limit = 8
    assert fresh_dynamo.config.recompile_limit == fresh_dynamo.config.cache_size_limit == limit
    args = (rp.ArgSpec("x", (4,), "float32", True),)
    calls = [_call(f"K = {k - 2.5}", {}, ("float32",), (True,), {"K": k - 2.5}, seed=k) for k in range(limit + 4)]
    program = rp.handmade_program(LIMIT_SOURCE, args, calls)
    counter = CompileCounterWithBackend(backend)
    frames: list[int] = []

    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        rp.check_program(program, lambda fn, backend: cl.compile(fn, backend=counter), backend,
                         after_call=lambda i, call: frames.append(counter.frame_count))
    grew = [frames[i] > (frames[i - 1] if i else 0) for i in range(len(frames))]
    assert grew[:limit] == [True] * limit, frames
    assert grew[limit:] == [False] * 4, frames
    assert _limit_messages(caught, caplog), "no warning about the recompile limit"


NESTED_SOURCE = '''
@COMPILE
def inner(x):
    LOG.append("inner")
    if x.sum() > 0:
        print("inner positive", x.shape)
        return x * 2
    return x - K

def build():
    def outer(a, b):
        c = inner(a) + b
        print("outer", c.shape)
        d = inner(c.tanh())
        if d.mean() > 0.1:
            d = d.exp()
        LOG.append(d)
        STATE.n += 1
        return inner(d) * c
    return outer
'''


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_compiled_function_called_from_a_compiled_function_stays_correct(fresh_dynamo, backend):
    args = (rp.ArgSpec("a", ("n", "m"), "float32", True), rp.ArgSpec("b", ("m",), "float64", False))
    calls = [_call(f"call {i}", {"n": 2 + i % 2, "m": 3}, ("float32", "float64"), (i != 2, i == 3),
                   {"K": 0.5 + i} if i == 4 else {}, no_grad=i == 5, seed=10 + i) for i in range(7)]
    program = rp.handmade_program(NESTED_SOURCE, args, calls)
    rp.check_program(program, _compile, backend)
