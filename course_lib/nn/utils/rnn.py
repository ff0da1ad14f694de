"""``torch.nn.utils.rnn``: ``pad_sequence`` and ``unpad_sequence`` (no PackedSequence in course_lib)."""
from __future__ import annotations

from typing import Iterable

from ..._tensor import Tensor

__all__ = ["pad_sequence", "unpad_sequence"]


def pad_sequence(sequences: Iterable[Tensor] | Tensor, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of different lengths (dim 0), padded with ``padding_value`` to the longest:
    (T, B, *) or, with ``batch_first``, (B, T, *)."""
    from ... import stack
    from .. import functional as F
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = max_len - s.shape[0]
        pads = [0, 0] * (s.dim() - 1) + ([0, extra] if padding_side == "right" else [extra, 0])
        padded.append(F.pad(s, pads, value=padding_value) if extra else s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> list[Tensor]:
    """The inverse of ``pad_sequence``: each sequence cut back to its length.  (PyTorch's transposes a time-first
    ``padded_sequences`` in place with ``transpose_``, which course_lib does not have: the caller's tensor is left
    as it is here.)"""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(length)] for seq, length in zip(padded_sequences.unbind(0), lengths.tolist())]
