"""``torch.backends.cudnn`` of a CPU-only build: not available; its flags are plain attributes."""
from __future__ import annotations

enabled: bool = True
benchmark: bool = False
deterministic: bool = False
allow_tf32: bool = True


def is_available() -> bool:
    """False: no cuDNN."""
    return False


def version() -> None:
    """None: no cuDNN library is loaded."""
    return None
