"""What the tokens do from one lexer state, as indices into the per-step status vector (paper section 4).

A view is assembled from the per-first-byte blocks (:mod:`greatgramma.blocks`); strings whose
first byte ends the lexeme at once run from the start state, and their code is their suffix
row. Views are cached per lexer state (runtime, bounded).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .blocks import Block, BlockTable
from .cache import BoundedCache, LruCache
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
        self._views = LruCache(budget, max_entries)  # a view costs ~1 ms to build: let go of the least used
        self._tokens_by_byte = trie.tokens_by_first_byte(vocab_size)
        # the views others can start from: their keys and, per first byte, what decides its strings
        self._near_keys: list[int] = []
        self._near_rows = np.empty((0, 256), dtype=np.int64)
        self._near_parts: list[list] = []
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
        where a cached view's DFA state agrees on all but a few first bytes, copied from it and
        patched there."""
        got = self._views.get(x)
        if got is not None:
            return got
        lexer = self._lexer
        shared = 0 < x < lexer.num_states  # no fallback of its own: each byte decided by what states share
        row = self._row_key(x) if shared else None
        near = self._nearest(row) if shared else None
        got, parts = self._patched_view(x, *near) if near is not None else (None, None)
        if got is None:
            got, parts = self._assembled_view(x)
        nbytes = got.code.nbytes + (0 if got.fallback is None else got.fallback.nbytes) + 512
        got = self._views.put(x, got, nbytes)
        if shared and parts is not None:
            self._remember(x, row, parts)
        return got

    def _row_key(self, x: int) -> np.ndarray:
        """Per first byte, what decides its strings from DFA state x: the state after the byte and
        the terminal accepted just before it (two states equal on a byte share its block, or its
        start code, or both find it dead)."""
        lexer = self._lexer
        return lexer.delta[x].astype(np.int64) * (len(lexer.terminals) + 2) + lexer.accept_next[x] + 1

    def _restarts(self, q: int, own: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(per first byte: whether its strings end the lexeme at once and run from the start
        state, or go on as from it, the start code they add to their row's part or ``_NONE``; the
        first terminal of each byte, NO_TERM where ignored or going on as from the start) from
        DFA state q (``own``: in a lexer state with a fallback of its own)."""
        lexer, layout = self._lexer, self._blocks.layout
        delta, accept_next = lexer.delta[q], lexer.accept_next[q]
        if q == 0:  # from the start state a string's outcome is its suffix row at offset 0
            restart = np.ones(256, dtype=bool)
            first_of_byte = np.full(256, NO_TERM, dtype=np.int64)
        else:  # strings whose first byte ends the lexeme: then they run from the start state
            restart = (delta == DEAD) & (accept_next != DEAD)
            first_of_byte = np.where(self._ignored_arr[accept_next], NO_TERM, accept_next).astype(np.int64)
            if lexer.columns is None:  # and those that go on as from the start state (whitespace after whitespace)
                same = self._as_from_start(delta, accept_next, own)
                restart |= same
                first_of_byte[same] = NO_TERM
        # strings that run from the start state: their first terminal's code plus their row's part
        # (negative, so dead, where either is none)
        starts = np.where(restart, layout.row_codes(first_of_byte, 0), _NONE).astype(np.int32)
        return restart, starts, first_of_byte

    def _as_from_start(self, delta: np.ndarray, accept_next: np.ndarray, own: bool) -> np.ndarray:
        """Per first byte, whether a DFA state with this row goes where the start state goes on it,
        and its strings cannot back up to before the byte (the state after it cannot die before
        it ends again, or nothing is accepted before the byte and the lexer state has no
        fallback of its own): its strings then do exactly what they do from the start state,
        whose outcomes are their suffix rows at offset 0 (no walk: the first masks of the
        whitespace and number states were the slowest)."""
        lexer = self._lexer
        safe = ~lexer.risky[delta] if own else ~lexer.risky[delta] | (accept_next == DEAD)
        return (delta == lexer.delta[0]) & (delta != DEAD) & safe

    def _found_blocks(self, x: int, live: list[tuple[int, int, int, int]]) -> list:
        """The block of each live (byte, first string, end string, DFA state after it) of lexer
        state x, built where missing; a held block as resolved for x's DFA state when x has no
        fallback of its own (else left held, codes None)."""
        lexer, blocks = self._lexer, self._blocks
        pairs = [(b, st) for b, _, _, st in live]
        own = x >= lexer.num_states  # a fallback of its own, else held blocks depend on accept_next only
        before = None if own else lexer.accept_next[lexer.base(x)].tolist()
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
        return found

    def _assembled_view(self, x: int) -> tuple[LexerView, list | None]:
        """The view of x from its blocks alone, and per first byte what decides it (its block, or
        its first terminal where its strings run from the start state, or None), unless some
        block is held for x alone (then None)."""
        td, lexer, layout = self._subtrees, self._lexer, self._blocks.layout
        q = lexer.base(x)
        delta, accept_next = lexer.delta[q], lexer.accept_next[q]
        restart, starts, first_of_byte = self._restarts(q, x >= lexer.num_states)
        rest0 = self._rows_from_start(restart)
        restarting = np.flatnonzero(restart & self._byte_has_rest0).tolist()
        parts: list = [None] * 256
        for b in restarting:
            parts[b] = int(first_of_byte[b])
        own_codes: dict[int, np.ndarray] = {}  # live byte -> its strings' codes
        held: list[tuple[int, int]] = []
        if q != 0:
            to = delta.tolist()  # (plain ints: numpy scalars cost more per byte)
            live = [(b, lo, hi, to[b]) for b, lo, hi in td.trie.root_children if to[b] != DEAD and not restart[b]]
            for (b, _, _, st), blk in zip(live, self._found_blocks(x, live)):
                if blk.code is None:
                    held.append((b, st))
                else:
                    own_codes[b] = blk.code
                    parts[b] = blk
        firsts, ends = _union(parts)
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
            (f,), (e,), _ = self._blocks.codes(first, rest, np.zeros(len(first), dtype=np.int64), strings, _ZERO, by_string)
            back[strings[first == FALLBACK]] = True
            firsts |= f
            ends |= e
        tokens = self._string_of_token
        code = np.take(by_string, tokens)
        fallback = pack(np.take(back, tokens)) if back.any() else None
        view = self._new_view(code, int(code.max(initial=0)) + 1, firsts, ends, fallback)
        return view, None if held else parts

    def _new_view(self, code: np.ndarray, limit: int, firsts: set, ends: set, fallback: np.ndarray | None) -> LexerView:
        groups: dict[tuple, list[int]] = {}
        for e in sorted(ends):
            groups.setdefault(self._lexer.end_key(e), []).append(e)
        return LexerView(code, tuple(sorted(firsts)), tuple(tuple(g) for g in groups.values()), fallback, limit)

    def _nearest(self, row: np.ndarray) -> tuple[LexerView, np.ndarray, list] | None:
        """A cached view whose DFA state differs from ``row`` (``_row_key``) on first bytes that
        start at most a quarter of the strings, those bytes, and what decides each byte of the
        cached view; None if there is none."""
        with self._lock:
            n = len(self._near_keys)
            if not n:
                return None
            differs = self._near_rows[:n] != row
            strings = differs.astype(np.int64) @ self._byte_counts
            for i in np.argsort(strings, kind="stable")[:4].tolist():
                if strings[i] > len(self._rest0_code) // 4:
                    return None
                base = self._views.get(self._near_keys[i])
                if base is not None:
                    return base, np.flatnonzero(differs[i] & (self._byte_counts > 0)), self._near_parts[i]
        return None

    def _remember(self, x: int, row: np.ndarray, parts: list) -> None:
        """Keep the DFA row of view x and what decides each of its bytes, for later views to
        start from (those of views the cache dropped are dropped when the list doubles)."""
        with self._lock:
            keys, rows = self._near_keys, self._near_rows
            if len(keys) == len(rows):
                alive = [i for i, k in enumerate(keys) if k in self._views]
                kept = rows[alive]
                self._near_keys = keys = [keys[i] for i in alive]
                self._near_parts = [self._near_parts[i] for i in alive]
                self._near_rows = rows = np.empty((max(16, 2 * len(alive)), 256), dtype=np.int64)
                rows[: len(alive)] = kept
            rows[len(keys)] = row
            keys.append(x)
            self._near_parts.append(parts)

    def _patched_view(self, x: int, base: LexerView, differ: np.ndarray, base_parts: list) -> tuple[LexerView | None, list]:
        """The view of x, a DFA state that agrees with ``base``'s on all first bytes but those in
        ``differ``: ``base``'s codes, those bytes' strings' recomputed (from their block, or from
        the start state, or dead); and what decides each byte. None where a block is held for x."""
        td, layout = self._subtrees, self._blocks.layout
        restart, starts, first_of_byte = self._restarts(x)
        todo = np.zeros(256, dtype=bool)
        todo[differ] = True
        rest0 = self._rows_from_start(restart & todo)
        to = self._lexer.delta[x]
        differ = differ.tolist()
        live = [(b, *td.trie.root_span[b], int(to[b])) for b in differ if to[b] != DEAD and not restart[b]]
        found = dict(zip((b for b, *_ in live), self._found_blocks(x, live)))
        if any(blk.code is None for blk in found.values()):
            return None, []
        parts = list(base_parts)
        code, limit = base.code.copy(), base.limit
        order, ptr = self._tokens_by_byte
        for b in differ:
            tokens = order[ptr[b] : ptr[b + 1]]
            blk = found.get(b)
            if blk is not None:
                values, parts[b] = blk.code[self._string_of_token[tokens] - td.trie.root_span[b][0]], blk
            elif restart[b] and self._byte_has_rest0[b]:
                values, parts[b] = np.maximum(rest0[self._string_of_token[tokens]] + starts[b], layout.dead), int(first_of_byte[b])
            else:
                values, parts[b] = layout.dead, None
            code[tokens] = values
            limit = max(limit, int(np.max(values, initial=layout.dead)) + 1)
        firsts, ends = _union(parts)
        return self._new_view(code, limit, firsts, ends, None), parts


def _union(parts: list) -> tuple[set[int], set[int]]:
    """The first terminals and end states that a view's first bytes (``parts``: a block, a first
    terminal, or None each) bring."""
    blks = [p for p in parts if isinstance(p, Block)]
    firsts = set().union(*(blk.firsts for blk in blks), (p for p in parts if type(p) is int))
    return firsts, set().union(*(blk.end_states for blk in blks))


def pack(allowed: np.ndarray) -> np.ndarray:
    """Bool per token id -> uint32 words, low bit first."""
    n = len(allowed)
    packed = np.packbits(allowed, bitorder="little")
    words = np.zeros((n + 31) // 32 * 4, dtype=np.uint8)
    words[: len(packed)] = packed
    return words.view(np.uint32)
