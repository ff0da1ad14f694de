"""Activation checkpointing: trade compute for memory.

In PyTorch: ``torch/utils/checkpoint.py``.  Normally every op in the forward pass
keeps what its backward will need (inputs, outputs): the *activations*.  For a deep
network they dominate memory.  ``checkpoint(fn, *args)`` runs ``fn`` so that its ops
record the graph as usual but keep none of their saved tensors; when backward
first needs one of them, ``fn`` is run again on the same inputs (with the same
random numbers) and the saved tensors are taken from that second run.

This is the ``use_reentrant=False`` flavour of PyTorch, built the same way: on
``saved_tensors_hooks`` (``course_lib.autograd.graph``).  The pack hook keeps only
a number; the unpack hook recomputes the segment once and hands out its tensors.

>>> def block(x):
...     return (x @ w1).tanh() @ w2
>>> y = checkpoint(block, x, use_reentrant=False)   # activations of block are not kept
>>> y.sum().backward()                              # block runs a second time here
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from .. import _random
from ..autograd.grad_mode import enable_grad
from ..autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential"]


class _Frame:
    """One checkpointed call: its function and inputs, and the tensors the recomputation saved."""

    def __init__(self, fn, args, kwargs, rng_state):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.rng_state = rng_state
        self.count = 0            # how many tensors the forward pass saved
        self.recomputed: dict = {}

    def pack(self, t) -> int:
        # keep a number instead of the tensor: its memory can be freed after forward
        k = self.count
        self.count += 1
        return k

    def unpack(self, k: int):
        if k not in self.recomputed:
            self.recompute()
        return self.recomputed.pop(k)

    def recompute(self) -> None:
        got = []

        def keep(t):
            got.append(t.detach())
            return len(got) - 1

        def nothing(k):  # pragma: no cover - the recomputed graph is never run backwards
            raise RuntimeError("checkpoint: the recomputed graph cannot be used for backward")

        state = _random.get_rng_state() if self.rng_state is not None else None
        if self.rng_state is not None:
            _random.set_rng_state(self.rng_state)
        try:
            with enable_grad(), saved_tensors_hooks(keep, nothing):
                self.fn(*self.args, **self.kwargs)
        finally:
            if state is not None:
                _random.set_rng_state(state)
        if len(got) != self.count:
            raise RuntimeError(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {self.count}\n"
                f"Number of tensors saved during recomputation: {len(got)}.")
        self.recomputed = dict(enumerate(got))


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None, preserve_rng_state: bool = True,
               **kwargs: Any):
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute them in backward.

    The result is the same as calling ``function`` directly, and so are the gradients;
    what changes is memory (its saved tensors are dropped) and time (``function`` runs
    twice).  ``function`` must be deterministic apart from random numbers, which are
    replayed when ``preserve_rng_state`` (the default).

    Only ``use_reentrant=False`` is implemented (PyTorch's recommended mode); course_lib
    also accepts ``None`` and means the same.
    """
    if use_reentrant:
        raise NotImplementedError("course_lib implements only checkpoint(..., use_reentrant=False)")
    rng_state = _random.get_rng_state() if preserve_rng_state else None
    frame = _Frame(function, args, kwargs, rng_state)
    with saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


def checkpoint_sequential(functions: Iterable[Callable], segments: int, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Split ``functions`` (a list or an ``nn.Sequential``) into ``segments`` pieces and checkpoint
    each piece but the last (its activations are needed at once by backward anyway)."""
    if hasattr(functions, "children"):
        functions = list(functions.children())
    functions = list(functions)
    n = len(functions)
    if segments < 1:
        raise ValueError("segments must be at least 1")
    size = max(n // segments, 1)

    def run(start, end):
        def forward(x):
            for f in functions[start:end]:
                x = f(x)
            return x
        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end + 1), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, n)(input)
