"""Settings of graph capture, as ``torch._dynamo.config``.

``recompile_limit`` (torch 2.13's name; ``cache_size_limit`` is the same setting under its older
name): how many cache entries one function may collect before a failed guard makes the call run
eagerly, with a warning.

``compiled_autograd`` (torch's name; there it turns on the Compiled Autograd engine, which traces the
backward into a graph of its own): ``loss.backward()`` on a loss computed in the graph compiles the
backward into the forward's graph (one program computes the loss and the gradients) instead of ending
the graph and running the autograd engine, when the engine would do nothing else (see
``capture.Capture.backward_into_graph``).  ``mode="reduce-overhead"`` turns it on for the functions it
compiles.
"""
from __future__ import annotations

__all__ = ["config"]


class _Config:
    """The settings object (``course_lib._dynamo.config``)."""

    def __init__(self) -> None:
        self.recompile_limit: int = 8
        self.verbose: bool = False
        self.compiled_autograd: bool = False

    @property
    def cache_size_limit(self) -> int:
        """The older name of ``recompile_limit`` (torch keeps both; they are one setting)."""
        return self.recompile_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value: int) -> None:
        self.recompile_limit = value

    def __repr__(self) -> str:
        return (f"config(recompile_limit={self.recompile_limit}, verbose={self.verbose}, "
                f"compiled_autograd={self.compiled_autograd})")


config = _Config()
