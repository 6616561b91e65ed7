"""What the tokens do from one lexer state, as indices into the per-step status vector (paper section 4).

A view is assembled from the per-first-byte blocks (:mod:`greatgramma.blocks`); strings whose
first byte ends the lexeme at once run from the start state, and their code is their suffix
row. Views are cached per lexer state (runtime, bounded).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .blocks import BlockTable
from .cache import BoundedCache
from .codes import DEAD, FALLBACK, NO_TERM


@dataclass(frozen=True, eq=False)
class LexerView:
    """What the tokens do from one lexer state: ``code[t]`` is the index of the entry of the
    status vector (:class:`~greatgramma.blocks.StatusLayout`) that decides token t."""

    code: np.ndarray  # int32[V]
    firsts: tuple[int, ...]  # first terminals that occur (NO_TERM: the lexeme ends as an ignored one)
    end_groups: tuple[tuple[int, ...], ...]  # lexer states of tokens that stay inside the current
    # lexeme (ascending), grouped by what decides whether they can go on
    fallback: np.ndarray | None  # packed words: tokens that back up to the state's fallback
    limit: int  # 1 + the largest code (a status vector has at least these entries)


_ZERO = np.zeros(1, dtype=np.int64)
_FEW_BYTES = 24  # first bytes that restart a lexeme, up to which a view fills their strings byte by byte
_NONE = -(1 << 29)  # a code part that keeps any sum with another part negative (dead); codes stay below 2**29


class LexerViews:
    """Views by lexer state, cached in ``budget`` bytes (4 bytes per token each) and ``max_entries``."""

    def __init__(self, blocks: BlockTable, vocab_size: int, budget: int, max_entries: int) -> None:
        self._blocks, self._subtrees = blocks, blocks.subtrees
        self._lexer, trie = blocks.subtrees.lexer, blocks.subtrees.trie
        self._string_of_token = trie.string_of_token(vocab_size)  # len(trie): no string
        self._first_byte = trie.first_bytes  # strings are sorted, so each first byte is one range of them
        self._byte_counts = trie.first_byte_counts
        # the suffix rows at offset 0 (what each string does from the start state), filled per first
        # byte, as the part of a status code the row makes (_NONE: the string is dead from the start)
        self._rest0_code = np.full(len(trie), _NONE, dtype=np.int32)
        self._rest0_known = np.zeros(256, dtype=bool)
        self._byte_has_rest0 = np.zeros(256, dtype=bool)  # some string starting with the byte is alive from start
        self._ignored_arr = self._subtrees.ignored  # index DEAD (-1): not ignored
        self._views = BoundedCache(budget, max_entries)
        self._tokens_by_byte = trie.tokens_by_first_byte(vocab_size)
        # the views others can start from: their keys and, per first byte, what decides its strings
        self._near_keys: list[int] = []
        self._near_sources = np.empty((0, 256), dtype=np.int64)
        self._lock = threading.Lock()

    def caches(self) -> dict[str, BoundedCache]:
        return {"views": self._views}

    def _rows_from_start(self, first_bytes: np.ndarray) -> np.ndarray:
        """Per string, the part of its status code that its suffix row at offset 0 makes (``_NONE``
        where it is dead from the start), known at least for the strings that start with the
        bytes marked in ``first_bytes`` (bool[256])."""
        todo = first_bytes & ~self._rest0_known
        if todo.any():
            live = todo & (self._lexer.delta[0] != DEAD)  # (strings whose first byte is dead from the start stay DEAD)
            strings = np.flatnonzero(live[self._first_byte])
            rows = self._subtrees.transducer.rows_at(self._subtrees.trie.offsets[strings])
            alive = rows != DEAD
            layout = self._blocks.layout
            self._rest0_code[strings[alive]] = layout.row_codes(NO_TERM, rows[alive]) - layout.row_codes(NO_TERM, 0)
            self._byte_has_rest0[self._first_byte[strings[alive]]] = True
            self._rest0_known |= todo
        return self._rest0_code

    def view(self, x: int) -> LexerView:
        """Assembled from per-first-byte blocks shared between lexer states (cheap on first use);
        where a cached view agrees on all but a few first bytes, copied from it and patched there."""
        got = self._views.get(x)
        if got is not None:
            return got
        td, lexer, blocks, layout = self._subtrees, self._lexer, self._blocks, self._blocks.layout
        q = lexer.base(x)
        delta, accept_next = lexer.delta[q], lexer.accept_next[q]
        if q == 0:  # from the start state a string's outcome is its suffix row at offset 0
            restart = np.ones(256, dtype=bool)
            first_of_byte = np.full(256, NO_TERM, dtype=np.int64)
        else:  # strings whose first byte ends the lexeme: then they run from the start state
            restart = (delta == DEAD) & (accept_next != DEAD)
            first_of_byte = np.where(self._ignored_arr[accept_next], NO_TERM, accept_next).astype(np.int64)
        rest0 = self._rows_from_start(restart)
        # strings that run from the start state: their first terminal's code plus their row's part
        # (negative, so dead, where either is none)
        starts = np.where(restart, layout.row_codes(first_of_byte, 0), _NONE).astype(np.int32)
        restarting = np.flatnonzero(restart & self._byte_has_rest0).tolist()
        firsts = set(first_of_byte[restarting].tolist())
        ends: set[int] = set()
        # what decides each first byte's strings: its block (by identity), its start code, or nothing (dead)
        source = np.where(restart, -2 - starts.astype(np.int64), -1)
        own_codes: dict[int, np.ndarray] = {}  # live byte -> its strings' codes
        held: list[tuple[int, int]] = []
        if q != 0:
            to = delta.tolist()  # (plain ints: numpy scalars cost more per byte)
            live = [(b, lo, hi, to[b]) for b, lo, hi in td.trie.root_children if to[b] != DEAD]
            pairs = [(b, st) for b, _, _, st in live]
            own = x >= lexer.num_states  # a fallback of its own, else held blocks depend on accept_next only
            before = None if own else accept_next.tolist()
            found = blocks.lookup(pairs)
            if None in found:
                blocks.new_blocks([item for item, blk in zip(live, found) if blk is None], before)
                found = blocks.lookup(pairs)
            if not own and any(blk.code is None for blk in found):  # held: as resolved for accept_next
                keys = [p if blk.code is not None else (*p, before[p[0]]) for p, blk in zip(pairs, found)]
                found = blocks.lookup(keys)
                if None in found:
                    blocks.resolved_blocks([(it, k) for it, k, blk in zip(live, keys, found) if blk is None])
                    found = blocks.lookup(keys)
            for (b, _, _, st), blk in zip(live, found):
                if blk.code is None:
                    held.append((b, st))
                else:
                    own_codes[b], source[b] = blk.code, id(blk)  # (blocks live as long as the table)
                    firsts |= blk.firsts
                    ends |= blk.end_states
        shared = x < lexer.num_states and not held  # every byte decided by what other states share
        near = self._nearest(source) if shared else None
        fallback = None
        if near is not None:
            code, limit = self._patched(near, source, own_codes, rest0, starts)
        else:
            span, counts = td.trie.root_span, self._byte_counts
            if len(restarting) > _FEW_BYTES:  # over the whole vocabulary at once
                by_string = np.empty(len(rest0) + 1, dtype=np.int32)
                np.add(np.repeat(starts, counts), rest0, out=by_string[:-1])
                np.maximum(by_string, layout.dead, out=by_string)
                by_string[-1] = layout.dead
            else:  # (the other strings are dead or overwritten below)
                by_string = np.full(len(rest0) + 1, layout.dead, dtype=np.int32)
                for b in restarting:
                    lo, hi = span[b]
                    np.maximum(rest0[lo:hi] + starts[b], layout.dead, out=by_string[lo:hi])
            for b, codes in own_codes.items():
                lo, hi = span[b]
                by_string[lo:hi] = codes
            back = np.zeros(len(rest0) + 1, dtype=bool)  # strings that back up to x's fallback
            if x >= lexer.num_states:  # a first byte that kills the lexeme backs up to x's fallback
                back[:-1] = np.repeat((delta == DEAD) & (accept_next == DEAD), counts)
            if held:  # resolved for x alone
                strings, first, rest = td.resolve(x, [(b, arrays) for (b, _), arrays in zip(held, td.subtrees(held))])
                (f,), (e,), _ = blocks.codes(first, rest, np.zeros(len(first), dtype=np.int64), strings, _ZERO, by_string)
                back[strings[first == FALLBACK]] = True
                firsts |= f
                ends |= e
            tokens = self._string_of_token
            code = np.take(by_string, tokens)
            limit = int(code.max(initial=0)) + 1
            if back.any():
                fallback = pack(np.take(back, tokens))
        groups: dict[tuple, list[int]] = {}
        for e in sorted(ends):
            groups.setdefault(lexer.end_key(e), []).append(e)
        got = LexerView(code, tuple(sorted(firsts)), tuple(tuple(g) for g in groups.values()), fallback, limit)
        nbytes = got.code.nbytes + (0 if got.fallback is None else got.fallback.nbytes) + 512
        got = self._views.put(x, got, nbytes)
        if shared:
            self._remember(x, source)
        return got

    def _nearest(self, source: np.ndarray) -> tuple[LexerView, np.ndarray] | None:
        """A cached view whose first bytes differ from ``source`` on at most a quarter of the
        strings, and those bytes; None if there is none."""
        with self._lock:
            n = len(self._near_keys)
            if not n:
                return None
            differs = self._near_sources[:n] != source
            strings = differs.astype(np.int64) @ self._byte_counts
            for i in np.argsort(strings, kind="stable")[:4].tolist():
                if strings[i] > len(self._rest0_code) // 4:
                    return None
                base = self._views.get(self._near_keys[i])
                if base is not None:
                    return base, np.flatnonzero(differs[i])
        return None

    def _remember(self, x: int, source: np.ndarray) -> None:
        """Keep the sources of view x for later views to start from (those of views the cache
        dropped are dropped when the list doubles)."""
        with self._lock:
            keys, rows = self._near_keys, self._near_sources
            if len(keys) == len(rows):
                alive = [i for i, k in enumerate(keys) if k in self._views]
                kept = rows[alive]
                self._near_keys = keys = [keys[i] for i in alive]
                self._near_sources = rows = np.empty((max(16, 2 * len(alive)), 256), dtype=np.int64)
                rows[: len(alive)] = kept
            rows[len(keys)] = source
            keys.append(x)

    def _patched(self, near: tuple[LexerView, np.ndarray], source: np.ndarray, own_codes: dict[int, np.ndarray],
                 rest0: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, int]:
        """The codes of a view that agrees with ``near``'s view except on its listed first bytes
        (their strings' codes from their block, or from the start state, or dead), and 1 + the
        largest code (at most)."""
        base, differ = near
        code, limit = base.code.copy(), base.limit
        order, ptr = self._tokens_by_byte
        dead = self._blocks.layout.dead
        for b in differ.tolist():
            tokens = order[ptr[b] : ptr[b + 1]]
            if b in own_codes:
                values = own_codes[b][self._string_of_token[tokens] - self._subtrees.trie.root_span[b][0]]
            elif source[b] != -1:
                values = np.maximum(rest0[self._string_of_token[tokens]] + starts[b], dead)
            else:
                values = dead
            code[tokens] = values
            limit = max(limit, int(np.max(values, initial=dead)) + 1)
        return code, limit


def pack(allowed: np.ndarray) -> np.ndarray:
    """Bool per token id -> uint32 words, low bit first."""
    n = len(allowed)
    packed = np.packbits(allowed, bitorder="little")
    words = np.zeros((n + 31) // 32 * 4, dtype=np.uint8)
    words[: len(packed)] = packed
    return words.view(np.uint32)
