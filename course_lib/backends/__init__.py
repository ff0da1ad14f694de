"""``torch.backends``: which accelerated backends this build has (none: course_lib is numpy on the CPU).

``backends.cudnn`` and ``backends.mps`` answer as a CPU-only build of PyTorch does; the flags tutorials set
(``cudnn.benchmark = True``, ``cudnn.deterministic = True``) are accepted and change nothing.
"""
from . import cuda, cudnn, mps  # noqa: F401

__all__ = ["cuda", "cudnn", "mps"]
