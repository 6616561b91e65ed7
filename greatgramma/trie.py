"""The detokenizing side (paper section 3.2): the vocabulary's distinct token byte strings as a flat trie."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class TokenTrie:
    """The distinct non-empty token byte strings, sorted, as a padded byte matrix with trie levels."""

    strings: tuple[bytes, ...]
    matrix: np.ndarray  # uint8[n, L], zero padded
    lengths: np.ndarray  # int32[n]
    offsets: np.ndarray  # int64[n + 1]: flat index of (string, byte position)
    level_starts: tuple[np.ndarray, ...]  # [d]: sorted first strings of the trie nodes at depth d + 1
    token_of_string_ptr: np.ndarray  # CSR: token ids with the bytes of string i
    token_of_string: np.ndarray

    @classmethod
    def build(cls, token_bytes: list[bytes | None] | tuple[bytes | None, ...]) -> "TokenTrie":
        ids = [t for t, b in enumerate(token_bytes) if b]
        ids.sort(key=token_bytes.__getitem__)
        ordered = [token_bytes[t] for t in ids]
        first = np.array([True] + [a != b for a, b in zip(ordered[1:], ordered[:-1])], dtype=bool)[: len(ids)]
        strings = tuple(b for b, f in zip(ordered, first.tolist()) if f)
        n = len(strings)
        lengths = np.fromiter(map(len, strings), dtype=np.int32, count=n)
        width = int(lengths.max()) if n else 1
        flat = np.frombuffer(b"".join(strings), dtype=np.uint8)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        matrix = np.zeros((n, width), dtype=np.uint8)
        rows = np.repeat(np.arange(n), lengths)
        cols = np.arange(len(flat)) - np.repeat(offsets[:-1], lengths)
        matrix[rows, cols] = flat
        # longest common prefix with the previous string
        lcp = np.zeros(n, dtype=np.int32)
        if n > 1:
            minlen = np.minimum(lengths[1:], lengths[:-1])
            differ = (matrix[1:] != matrix[:-1]) | (np.arange(width)[None, :] >= minlen[:, None])
            lcp[1:] = np.argmax(differ, axis=1)
            lcp[1:] = np.where(differ.any(axis=1), lcp[1:], minlen)
        levels = tuple(np.nonzero((lcp < d) & (lengths >= d))[0].astype(np.int64) for d in range(1, width + 1))
        ptr = np.append(np.nonzero(first)[0], len(ids)).astype(np.int64)
        return cls(strings, matrix, lengths, offsets, levels, ptr, np.array(ids, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.strings)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of the trie (``strings`` are the rows of ``matrix``; levels are flattened)."""
        levels = self.level_starts
        return {
            "matrix": self.matrix,
            "lengths": self.lengths,
            "offsets": self.offsets,
            "levels": np.concatenate(levels) if levels else np.zeros(0, np.int64),
            "level_sizes": np.array([len(x) for x in levels], dtype=np.int64),
            "token_ptr": self.token_of_string_ptr,
            "tokens": self.token_of_string,
        }

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> TokenTrie:
        """Inverse of :meth:`to_arrays`."""
        strings = tuple(a["matrix"][i, :k].tobytes() for i, k in enumerate(a["lengths"].tolist()))
        levels = tuple(np.split(a["levels"], np.cumsum(a["level_sizes"])[:-1]))
        return cls(strings, a["matrix"], a["lengths"], a["offsets"], levels, a["token_ptr"], a["tokens"])

    @cached_property
    def root_children(self) -> list[tuple[int, int, int]]:
        """(first byte, first string, end string) of each child of the trie root (derived, computed once)."""
        starts = self.level_starts[0] if self.level_starts else np.zeros(0, dtype=np.int64)
        ends = np.append(starts[1:], len(self))
        return [(int(self.matrix[lo, 0]), int(lo), int(hi)) for lo, hi in zip(starts.tolist(), ends.tolist())]


_TRIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Vocabulary -> its TokenTrie
_TRIES_LOCK = threading.Lock()


def trie_of(vocab: Any) -> TokenTrie:
    """The token trie of a :class:`~greatgramma.vocab.Vocabulary`, built once and shared by every
    grammar compiled for it (it depends on the token bytes only; kept while the vocabulary lives)."""
    with _TRIES_LOCK:
        got = _TRIES.get(vocab)
    if got is None:
        got = TokenTrie.build(vocab.token_bytes)
        with _TRIES_LOCK:
            got = _TRIES.setdefault(vocab, got)
    return got
