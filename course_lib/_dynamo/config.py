"""Settings of graph capture, as ``torch._dynamo.config``.

``recompile_limit`` (torch 2.13's name; ``cache_size_limit`` is the same setting under its older
name): how many cache entries one function may collect before a failed guard makes the call run
eagerly, with a warning.
"""
from __future__ import annotations

__all__ = ["config"]


class _Config:
    """The settings object (``course_lib._dynamo.config``)."""

    def __init__(self) -> None:
        self.recompile_limit: int = 8
        self.verbose: bool = False

    @property
    def cache_size_limit(self) -> int:
        """The older name of ``recompile_limit`` (torch keeps both; they are one setting)."""
        return self.recompile_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value: int) -> None:
        self.recompile_limit = value

    def __repr__(self) -> str:
        return f"config(recompile_limit={self.recompile_limit}, verbose={self.verbose})"


config = _Config()
