"""Write from_torch.pt, the small checkpoint chapter 07 loads to show files written by real PyTorch.

It is committed beside the chapter so that the chapter's interop demos and 07.7's check run without
PyTorch installed. Regenerate it (rarely: only if its contents should change) with torch 2.13.0::

    .venv/bin/python chapters/07_serialization/make_torch_file.py

Contents: a Linear(4, 2)'s state_dict (an OrderedDict with ``_metadata``), a 2x3 tensor ``w`` and its
transpose ``wt`` (one storage, two views), and a 0-d int64 ``step``. Seeded, so the values are fixed.
"""
from __future__ import annotations

from pathlib import Path

import torch

OUT = Path(__file__).resolve().with_name("from_torch.pt")
TORCH_VERSION = "2.13.0"


def main() -> None:
    if torch.__version__.split("+")[0] != TORCH_VERSION:
        raise SystemExit(f"this file is written with torch {TORCH_VERSION}, not {torch.__version__}")
    torch.manual_seed(0)
    w = torch.arange(6.0).view(2, 3)
    checkpoint = {"linear": torch.nn.Linear(4, 2).state_dict(), "w": w, "wt": w.t(), "step": torch.tensor(7)}
    torch.save(checkpoint, OUT)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
