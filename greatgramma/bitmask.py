"""Token bitmask helpers in numpy: allocation, and conversion to and from bool arrays (the shape is `kernels.layout`'s)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernels.layout import get_bitmask_shape

__all__ = [
    "allocate_token_bitmask",
    "bitmask_to_bool",
    "bool_to_bitmask",
    "get_bitmask_shape",
]


def allocate_token_bitmask(batch_size: int, vocab_size: int, *, torch: bool = False) -> Any:
    """A bitmask of shape ``get_bitmask_shape(batch_size, vocab_size)`` with every token allowed (-1).

    numpy int32 by default; ``torch=True`` returns a CPU torch int32 tensor instead (the same as
    ``greatgramma.kernels.torch.allocate_token_bitmask``), which imports torch only then.
    """
    if torch:
        from .kernels.torch import allocate_token_bitmask as allocate_torch

        return allocate_torch(batch_size, vocab_size)
    return np.full(get_bitmask_shape(batch_size, vocab_size), -1, dtype=np.int32)


def bitmask_to_bool(words: np.ndarray, vocab_size: int) -> np.ndarray:
    """Unpack int32 words (shape ``(..., W)``) into bool ``(..., vocab_size)``: bit ``t & 31`` of word ``t >> 5``.

    Bits past ``32 * W`` read as False (not allowed); bits past ``vocab_size`` are dropped.
    """
    words = np.ascontiguousarray(words)
    if words.dtype not in (np.int32, np.uint32):
        raise TypeError(f"bitmask must be int32 (or uint32), got {words.dtype}")
    if words.ndim == 0:
        raise ValueError("bitmask must have at least one dimension")
    w = words.shape[-1]
    # Little-endian byte order so that the low byte of each word comes first.
    raw = words.astype("<u4", copy=False).view(np.uint8).reshape(*words.shape[:-1], 4 * w)
    bits = np.unpackbits(raw, axis=-1, bitorder="little").astype(bool)
    if vocab_size <= 32 * w:
        return bits[..., :vocab_size]
    pad = np.zeros((*words.shape[:-1], vocab_size - 32 * w), dtype=bool)
    return np.concatenate([bits, pad], axis=-1)


def bool_to_bitmask(allowed: np.ndarray, num_words: int | None = None) -> np.ndarray:
    """Pack a bool array ``(..., V)`` into int32 words ``(..., num_words)`` (default ``ceil(V/32)``).

    Extra words past ``ceil(V/32)`` are zero (nothing allowed there).
    """
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.ndim == 0:
        raise ValueError("allowed must have at least one dimension")
    v = allowed.shape[-1]
    need = (v + 31) // 32
    if num_words is None:
        num_words = need
    if num_words < need:
        raise ValueError(f"{v} tokens need {need} words, got num_words={num_words}")
    packed = np.packbits(allowed, axis=-1, bitorder="little")
    raw = np.zeros((*allowed.shape[:-1], 4 * num_words), dtype=np.uint8)
    raw[..., : packed.shape[-1]] = packed
    return raw.view("<i4").astype(np.int32, copy=False)
