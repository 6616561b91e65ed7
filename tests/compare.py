"""Engine-vs-reference comparison helpers shared by the bit-for-bit tests."""

from __future__ import annotations

import numpy as np
import pytest

import greatgramma as gg

EOS_ID = 0  # the EOS token id of the small test vocabularies


def engine_bits(words: np.ndarray, vocab_size: int) -> np.ndarray:
    """Unpack an int32 bitmask (bit t & 31 of word t >> 5, low bit first) into bools."""
    assert words.dtype == np.int32, words.dtype
    assert words.shape == ((vocab_size + 31) // 32,), words.shape
    bits = np.unpackbits(words.astype("<i4").view(np.uint8), bitorder="little").astype(bool)
    assert not bits[vocab_size:].any(), "bits set past the vocabulary size"
    return bits[:vocab_size]


def allowed_ids(words: np.ndarray) -> np.ndarray:
    """Token ids a bitmask allows, ascending."""
    return np.nonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))[0]


def bit(words: np.ndarray, tok: int) -> bool:
    """Whether a bitmask allows token ``tok``."""
    return bool(words.view(np.uint32)[tok >> 5] >> (tok & 31) & 1)


def reference_bits(s, prefix: bytes) -> np.ndarray:
    """What the reference allows after ``prefix`` (``s``: a test setup with tokens, vocab_size, ref)."""
    expected = np.zeros(s.vocab_size, dtype=bool)
    expected[: len(s.tokens)] = s.ref.allowed(prefix, s.tokens)
    expected[EOS_ID] = s.ref.complete(prefix)
    return expected


def describe(s, t: int) -> str:
    if t == EOS_ID:
        return f"{t} <EOS>"
    if t >= len(s.tokens) or s.tokens[t] is None:
        return f"{t} <special>"
    return f"{t} {s.tokens[t]!r}"


def probe(masker, state, allowed: np.ndarray, tokens) -> None:
    """``advance`` accepts exactly the probed tokens the mask allows."""
    for t in sorted(tokens):
        if allowed[t]:
            masker.advance(state, t)
        else:
            with pytest.raises(gg.TokenRejectedError):
                masker.advance(state, t)
