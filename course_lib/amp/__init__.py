"""Mixed precision: ``autocast`` (ops in lower precision where it is safe) and ``GradScaler``.

In PyTorch: ``torch/amp/`` (``autocast_mode.py``, ``grad_scaler.py``) and the Autocast dispatch keys of
``aten/src/ATen/autocast_mode.cpp``.
"""
from __future__ import annotations

from .autocast_mode import autocast, get_autocast_dtype, is_autocast_available, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype", "is_autocast_available"]
