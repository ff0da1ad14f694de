"""course_lib.utils: helpers beside the core (``torch.utils``).

Only ``_python_dispatch`` is imported eagerly; other subpackages (``utils.data``,
``utils.checkpoint``) are imported on demand, as in PyTorch.
"""
from ._python_dispatch import LoggingMode, TorchDispatchMode  # noqa: F401

__all__ = ["TorchDispatchMode", "LoggingMode"]
