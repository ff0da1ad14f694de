"""The op registry, the generated bindings and the dispatcher (modes -> autograd -> backend)."""
from __future__ import annotations

import numpy as np
import pytest

import course_lib as cl
from course_lib._ops import bindings, dispatcher
from course_lib._ops.registry import OPS, parse_schema
from course_lib.utils import LoggingMode, TorchDispatchMode


class Recorder(TorchDispatchMode):
    """Records op names, then runs the op below itself."""

    def __init__(self, tag="", log=None):
        self.tag = tag
        self.log = [] if log is None else log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append(self.tag + func.name)
        return func(*args, **(kwargs or {}))


# ---------------------------------------------------------------------------
# registry and bindings
# ---------------------------------------------------------------------------
def test_schema_parsing():
    name, args, ret = parse_schema("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    assert name == "add" and ret == "Tensor"
    assert [(a.type, a.name, a.default, a.kwarg_only) for a in args] == [
        ("Tensor", "self", None, False), ("Tensor", "other", None, False), ("Scalar", "alpha", "1", True)]
    assert OPS["cat"].tensor_list_pos == (0,) and OPS["add"].tensor_pos == (0, 1)


def test_every_op_has_its_bindings():
    for op in OPS.values():
        if "function" in op.variants:
            assert callable(getattr(cl, op.name)), op.name
        if "method" in op.variants:
            assert callable(getattr(cl.Tensor, op.name)), op.name
        assert op.meta is not None and op.cpu is not None, op.name
        if op.is_inplace and op.functional is not None:
            assert op.name == op.functional.inplace


def test_generated_source_reads_like_the_schema():
    src = bindings.python_source(OPS["add"])
    assert src.startswith("def add(self, other, *, alpha=1):")
    assert "return _dispatch(_op, (self, other, alpha))" in src
    assert "Schema: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor" in src
    assert cl.add._op is OPS["add"] and cl.Tensor.sum._op is OPS["sum"]
    # x.view(2, 3) and x.view((2, 3)) both work (size varargs for methods)
    assert "def view(self, *size):" in bindings.python_source(OPS["view"], method=True)
    assert cl.zeros(6).view(2, 3).shape == cl.zeros(6).view((2, 3)).shape == (2, 3)


def test_function_and_method_take_the_same_path():
    seen = []
    with Recorder(log=seen):
        a = cl.ones(2)
        cl.add(a, a, alpha=2)
        a.add(a)
        a + a
        a.add_(1)
    assert seen == ["add", "add", "add", "add_"]


# ---------------------------------------------------------------------------
# modes
# ---------------------------------------------------------------------------
def test_mode_sees_ops_and_is_popped_while_it_runs():
    x = cl.ones(2, 3)
    with Recorder() as r:
        assert dispatcher.active_modes() == (r,)
        y = (x * 2).sum(0)
        assert y.tolist() == [4.0, 4.0, 4.0]
    assert r.log == ["mul", "sum"] and dispatcher.active_modes() == ()


def test_nested_modes_innermost_first():
    log = []
    x = cl.ones(2)
    with Recorder("outer:", log), Recorder("inner:", log):
        x + 1
    assert log == ["inner:add", "outer:add"]


def test_mode_stack_restored_after_an_error():
    class Boom(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        with Boom():
            cl.ones(2) + 1
    assert dispatcher.active_modes() == ()
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        with Recorder():
            cl.ones(2) + cl.ones(3)
    assert dispatcher.active_modes() == ()


def test_mode_can_replace_results_and_sees_types():
    class Zeros(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            assert types == (cl.Tensor,)
            out = func(*args)
            return cl.zeros_like(out) if func.name == "exp" else out

    with Zeros():
        assert cl.ones(2).exp().tolist() == [0.0, 0.0]
        assert cl.ones(2).neg().tolist() == [-1.0, -1.0]


def test_composite_ops_decompose():
    x, w = cl.ones(2, 3), cl.ones(3, 4)
    with Recorder() as r:
        x @ w
    assert r.log == ["mm"]
    with Recorder() as r:
        cl.ones(2, 2, 3) @ cl.ones(3)          # N-D @ 1-D: fold the batch into the rows
    assert r.log == ["view", "mv", "_unsafe_view"]
    with Recorder() as r:
        x.reshape(6)                           # viewable: a view
        x.t().reshape(6)                       # not viewable: clone + _unsafe_view
        x.flatten()
        x.contiguous()                         # already contiguous: nothing at all
        x.expand_as(cl.ones(4, 2, 3))
        x.split(1)
    assert r.log == ["view", "t", "clone", "_unsafe_view", "view", "expand", "narrow", "narrow"]
    assert not any(OPS[n].composite for n in r.log)


def test_modes_see_views_inplace_and_indexing():
    x = cl.zeros(3, 4)
    with Recorder() as r:
        x[0, 1:] = 1.0
        x[cl.tensor([0, 2])]
        x.t_() if hasattr(x, "t_") else None
    assert r.log[:4] == ["select", "slice", "fill_", "index"]


def test_mode_with_autograd_records_the_graph():
    w = cl.ones(3, requires_grad=True)
    with Recorder() as r:
        y = (w * 2).sum()
    assert r.log == ["mul", "sum"]
    assert y.grad_fn is not None and type(y.grad_fn).__name__ == "SumBackward0"
    with Recorder() as r:
        y.backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
    assert "mul" in r.log  # the backward formulas are ops too, and the mode sees them


def test_meta_tensors_dispatch_to_meta_kernels():
    m = cl.ones(2, 3, device="meta")
    r = (m @ cl.ones(3, 4, device="meta")).sum(0)
    assert r.is_meta and r.shape == (4,) and r.dtype is cl.float32
    with pytest.raises(RuntimeError, match="Tensor on device meta is not on the expected device cpu!"):
        cl.ones(2) + m[0, :2]
    assert (m + cl.tensor(1.)).is_meta  # a 0-d CPU tensor may join a meta op, as in PyTorch


def test_fast_path_does_not_touch_grad_mode(monkeypatch):
    """No input requires grad: the dispatcher must not even read the (thread-local) grad mode."""
    class Tripwire:
        @property
        def enabled(self):
            raise AssertionError("grad mode read on the fast path")

    a, b = cl.ones(3), cl.ones(3)
    monkeypatch.setattr(dispatcher, "grad_state", Tripwire())
    assert (a + b).tolist() == [2.0, 2.0, 2.0]
    assert a.sum().item() == 3.0


# ---------------------------------------------------------------------------
# LoggingMode
# ---------------------------------------------------------------------------
def test_logging_mode_lines(capsys):
    x = cl.ones(2, 3)
    with LoggingMode() as log:
        y = x + cl.ones(3)
        z = (y * 2).sum()
        x @ cl.ones(3, 4)
        x.sum(1, keepdim=True)
        x.max(1)
        cl.cat([x, x])
        x.to(cl.float64)
        x[0]
        x.view(-1)
        cl.ones(2, 3, device="meta") + 1
    expected = [
        "add(Tensor[2, 3] float32, Tensor[3] float32) -> Tensor[2, 3] float32",
        "mul(Tensor[2, 3] float32, 2) -> Tensor[2, 3] float32",
        "sum(Tensor[2, 3] float32) -> Tensor[] float32",
        "mm(Tensor[2, 3] float32, Tensor[3, 4] float32) -> Tensor[2, 4] float32",
        "sum(Tensor[2, 3] float32, 1, True) -> Tensor[2, 1] float32",
        "max(Tensor[2, 3] float32, 1) -> (Tensor[2] float32, Tensor[2] int64)",
        "cat([Tensor[2, 3] float32, Tensor[2, 3] float32]) -> Tensor[4, 3] float32",
        "_to_copy(Tensor[2, 3] float32, dtype=float64) -> Tensor[2, 3] float64",
        "select(Tensor[2, 3] float32, 0, 0) -> Tensor[3] float32",
        "view(Tensor[2, 3] float32, [-1]) -> Tensor[6] float32",
        "add(Tensor[2, 3] float32 meta, 1) -> Tensor[2, 3] float32 meta",
    ]
    assert log.lines == expected
    assert capsys.readouterr().out.splitlines() == expected
    assert z.item() == 24.0


def test_logging_mode_quiet_and_alpha():
    with LoggingMode(print_ops=False) as log:
        cl.ones(2).add(cl.ones(2), alpha=3)
    assert log.lines == ["add(Tensor[2] float32, Tensor[2] float32, alpha=3) -> Tensor[2] float32"]
    assert str(log) == log.lines[0]
