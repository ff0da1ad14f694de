"""Oracle tests for the everyday API surface (issue 18): the names tutorials use beside the ops.

dtype information, the tensor predicates, cuda/backends of a CPU build, the nn modules composed of existing
ops (loaded from a torch state_dict, outputs and gradients compared), nn.utils, the optimizers and
schedulers (trajectories and lr sequences), and autograd.functional, each against torch 2.13.0.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl


@pytest.fixture(scope="module")
def torch():
    return require_torch()


def close(a, b, rtol=1e-7, atol=1e-9):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def outcome(fn):
    """What a call did: ('ok', value) or (exception type name, message with 'course_lib' spelt 'torch')."""
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001  (the type and message are what is compared)
        return (type(e).__name__, str(e).replace("course_lib", "torch"))


# ---------------------------------------------------------------------------
# dtype information, predicates, cuda and backends
# ---------------------------------------------------------------------------
def test_finfo_iinfo_promote_can_cast(torch):
    names = ["float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"]
    for n in names:
        dc, dt = getattr(cl, n), getattr(torch, n)
        for info in ("finfo", "iinfo"):
            got = outcome(lambda: repr(getattr(cl, info)(dc)))
            want = outcome(lambda: repr(getattr(torch, info)(dt)))
            assert got == want, (n, info)
        if dc.is_floating_point:
            fc, ft = cl.finfo(dc), torch.finfo(dt)
            assert [getattr(fc, k) for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                                            "dtype")] == \
                   [getattr(ft, k) for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                                            "dtype")]
        for m in names:
            assert cl.can_cast(dc, getattr(cl, m)) == torch.can_cast(dt, getattr(torch, m)), (n, m)
            assert cl.promote_types(dc, getattr(cl, m)).name == str(torch.promote_types(dt, getattr(torch, m)))[6:]
    assert repr(cl.finfo()) == repr(torch.finfo())
    for fn in ("finfo", "iinfo", "promote_types", "can_cast"):
        args = (3,) if fn in ("finfo", "iinfo") else (1, "float32")
        assert outcome(lambda: getattr(cl, fn)(*args)) == outcome(lambda: getattr(torch, fn)(*args)), fn


def test_tensor_predicates_and_comparisons(torch):
    def cases(m):
        nan = float("nan")
        return [
            lambda: m.is_tensor(m.ones(1)), lambda: m.is_tensor(m.nn.Parameter(m.ones(1))), lambda: m.is_tensor([1]),
            lambda: m.is_floating_point(m.ones(1)), lambda: m.is_floating_point(m.ones(1, dtype=m.int64)),
            lambda: m.is_floating_point(3), lambda: m.numel(m.ones(2, 3)), lambda: m.numel([1]),
            lambda: m.equal(m.ones(2), m.ones(2)), lambda: m.equal(m.ones(2), m.ones(2, dtype=m.int64)),
            lambda: m.equal(m.ones(2), m.ones(3)), lambda: m.equal(m.ones(2, 1), m.ones(1, 2)),
            lambda: m.equal(m.tensor([nan]), m.tensor([nan])), lambda: m.equal(m.ones(2), 3),
            lambda: m.allclose(m.ones(2), m.ones(2) + 1e-6), lambda: m.allclose(m.ones(2), m.ones(2) + 1e-3),
            lambda: m.allclose(m.ones(2), m.ones(1)), lambda: m.allclose(m.ones(2), m.ones(3)),
            lambda: m.allclose(m.ones(2), m.ones(2, dtype=m.float64)), lambda: m.allclose(m.ones(2), 1.0),
            lambda: m.allclose(m.tensor([nan]), m.tensor([nan])),
            lambda: m.allclose(m.tensor([nan]), m.tensor([nan]), equal_nan=True),
            lambda: m.allclose(m.tensor([1.0]), m.tensor([1.1]), rtol=0.2),
        ]
    for i, (c, t) in enumerate(zip(cases(cl), cases(torch))):
        assert outcome(c) == outcome(t), i


def test_cuda_and_backends_answer_as_a_cpu_build(torch):
    import subprocess
    import sys
    code = ("import course_lib as m; print(m.cuda.is_available(), m.cuda.device_count(),"
            " m.backends.cudnn.is_available(),"
            " m.backends.mps.is_available(), m.backends.mps.is_built(), m.utils.data.DataLoader.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(torch.cuda.is_available()), str(torch.cuda.device_count()),
                           str(torch.backends.cudnn.is_available()), str(torch.backends.mps.is_available()),
                           str(torch.backends.mps.is_built()), "DataLoader"]
    for fn in ("current_device", "get_device_name", "synchronize"):
        assert outcome(getattr(cl.cuda, fn)) == outcome(getattr(torch.cuda, fn)), fn
    cl.backends.cudnn.benchmark = True  # the tutorials' flags are accepted
    cl.backends.cudnn.benchmark = False
