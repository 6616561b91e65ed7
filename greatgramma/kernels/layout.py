"""The token bitmask layout every array backend shares: one int32 word per 32 token ids, one row per sequence."""

from __future__ import annotations

__all__ = ["get_bitmask_shape"]


def get_bitmask_shape(batch_size: int, vocab_size: int) -> tuple[int, int]:
    """``(batch_size, ceil(vocab_size / 32))``: one int32 word per 32 token ids, one row per sequence."""
    if batch_size < 0 or vocab_size < 0:
        raise ValueError(f"batch_size and vocab_size must be >= 0, got {batch_size}, {vocab_size}")
    return (int(batch_size), (int(vocab_size) + 31) // 32)
