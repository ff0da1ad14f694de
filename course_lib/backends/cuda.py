"""``torch.backends.cuda`` of a CPU-only build: not built; ``matmul.allow_tf32`` is a plain flag."""
from __future__ import annotations

from types import SimpleNamespace

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                         allow_bf16_reduced_precision_reduction=True)


def is_built() -> bool:
    return False
