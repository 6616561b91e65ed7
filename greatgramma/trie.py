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
        ids = np.array([t for t, b in enumerate(token_bytes) if b], dtype=np.int64)
        pieces = [token_bytes[t] for t in ids.tolist()]
        size = np.fromiter(map(len, pieces), dtype=np.int32, count=len(pieces))
        width = int(size.max()) if len(size) else 1
        padded = np.zeros((len(pieces), width), dtype=np.uint8)  # every token's bytes, zero padded
        padded[np.repeat(np.arange(len(pieces)), size), _positions(size)] = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        # bytes order: by the padded bytes, then the shorter first (padding is 0, like a byte 0)
        order = np.lexsort((size, padded.view(np.dtype((np.void, width))).ravel()))
        ids, padded, size = ids[order], padded[order], size[order]
        first = np.ones(len(ids), dtype=bool)
        first[1:] = (size[1:] != size[:-1]) | (padded[1:] != padded[:-1]).any(axis=1)
        matrix, lengths = padded[first], size[first]
        strings = tuple(pieces[i] for i in order[first].tolist())
        n = len(strings)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        lcp = _common_prefixes(matrix, lengths)
        levels = tuple(np.nonzero((lcp < d) & (lengths >= d))[0].astype(np.int64) for d in range(1, width + 1))
        ptr = np.append(np.nonzero(first)[0], len(ids)).astype(np.int64)
        trie = cls(strings, matrix, lengths, offsets, levels, ptr, ids)
        trie.__dict__["common_prefix"] = lcp  # (the cached property's value, known already)
        return trie

    def __len__(self) -> int:
        return len(self.strings)

    @cached_property
    def flat_bytes(self) -> np.ndarray:
        """uint8 per flat byte position (``offsets[s] + j``): the strings' bytes end to end (derived, computed once)."""
        return np.frombuffer(b"".join(self.strings), dtype=np.uint8)

    @cached_property
    def first_bytes(self) -> np.ndarray:
        """uint8 per string: its first byte (strings are sorted: each first byte is one range of them)."""
        return np.ascontiguousarray(self.matrix[:, 0])

    @cached_property
    def first_byte_counts(self) -> np.ndarray:
        """int64[256]: how many strings start with each byte."""
        return np.bincount(self.first_bytes, minlength=256)

    def string_of_token(self, vocab_size: int) -> np.ndarray:
        """int64 per token id below ``vocab_size``: its string, or ``len(self)`` for a token without bytes (cached)."""
        got = self._string_of_token.get(vocab_size)
        if got is None:
            got = np.full(vocab_size, len(self), dtype=np.int64)
            got[self.token_of_string] = np.repeat(np.arange(len(self)), np.diff(self.token_of_string_ptr))
            got = self._string_of_token.setdefault(vocab_size, got)
        return got

    @cached_property
    def _string_of_token(self) -> dict[int, np.ndarray]:
        return {}

    def tokens_by_first_byte(self, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
        """(token ids below ``vocab_size`` that have a string, ordered by their string's first
        byte; int64[257]: where each byte's tokens start among them), cached."""
        got = self._tokens_by_first_byte.get(vocab_size)
        if got is None:
            sot = self.string_of_token(vocab_size)
            tokens = np.flatnonzero(sot < len(self))
            first = self.first_bytes[sot[tokens]]
            order = tokens[np.argsort(first, kind="stable")]
            ptr = np.concatenate(([0], np.cumsum(np.bincount(first, minlength=256))))
            got = self._tokens_by_first_byte.setdefault(vocab_size, (order, ptr))
        return got

    @cached_property
    def _tokens_by_first_byte(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        return {}

    @cached_property
    def position_offset(self) -> np.ndarray:
        """int32 per flat byte position: its offset j in its string (derived, computed once)."""
        return _positions(self.lengths).astype(np.int32)

    @cached_property
    def common_prefix(self) -> np.ndarray:
        """int32 per string: the length of its longest common prefix with the string before it (0 for the first)."""
        return _common_prefixes(self.matrix, self.lengths)

    @cached_property
    def slot_pool(self) -> list:
        """Zeroed int32 arrays of one entry per flat byte position and one more, lent to
        ``native.suffix_lexemes`` (which leaves them zero) by every grammar compiled for this
        vocabulary, so that none is cleared again per call."""
        return []

    @cached_property
    def position_end(self) -> np.ndarray:
        """int64 per flat byte position: the flat position where its string ends (derived, computed once)."""
        return np.repeat(self.offsets[1:], self.lengths)

    @cached_property
    def position_string(self) -> np.ndarray:
        """int32 per flat byte position (``offsets[s] + j``): the string s it belongs to (derived, computed once)."""
        return np.repeat(np.arange(len(self), dtype=np.int32), self.lengths)

    def level_links(self, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For the trie nodes at depth d + 1 (``level_starts[d]``): where each one's strings end,
        and for each node at depth d (none for d = 0) the range of its children among them
        (derived per depth on first use, so that walks index nodes instead of searching them)."""
        got = self._links.get(d)
        if got is None:
            starts = self.level_starts[d]
            ends = np.append(starts[1:], len(self))  # the next node at this depth, or the parent's end first
            if d == 0:
                first = last = np.zeros(0, dtype=np.int64)
            else:
                above, above_ends = self.level_starts[d - 1], self.level_links(d - 1)[0]
                np.minimum(ends, above_ends[np.searchsorted(above, starts, side="right") - 1], out=ends)
                first, last = np.searchsorted(starts, above), np.searchsorted(starts, above_ends)
            got = self._links.setdefault(d, (ends, first, last))
        return got

    @cached_property
    def _links(self) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        return {}

    @cached_property
    def root_children(self) -> list[tuple[int, int, int]]:
        """(first byte, first string, end string) of each child of the trie root (derived, computed once)."""
        starts = self.level_starts[0] if self.level_starts else np.zeros(0, dtype=np.int64)
        ends = np.append(starts[1:], len(self))
        return [(int(self.matrix[lo, 0]), int(lo), int(hi)) for lo, hi in zip(starts.tolist(), ends.tolist())]

    @cached_property
    def root_span(self) -> dict[int, tuple[int, int]]:
        """First byte -> (first string, end string) of its child of the root (derived, computed once)."""
        return {b: (lo, hi) for b, lo, hi in self.root_children}


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


def _common_prefixes(matrix: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per string, the length of its longest common prefix with the previous one (0 for the first)."""
    lcp = np.zeros(len(lengths), dtype=np.int32)
    same = np.arange(1, len(lengths))  # strings that agree with the previous one so far
    minlen = np.minimum(lengths[1:], lengths[:-1])
    for d in range(matrix.shape[1]):
        same = same[(minlen[same - 1] > d) & (matrix[same, d] == matrix[same - 1, d])]
        if not len(same):
            break
        lcp[same] += 1
    return lcp


def _positions(lengths: np.ndarray) -> np.ndarray:
    """0..k-1 for each length k, concatenated."""
    ends = np.cumsum(lengths, dtype=np.int64)
    return np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - lengths, lengths)
