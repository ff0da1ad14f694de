"""Ops: the registry, the dispatcher and the kernels (CPU and meta)."""
