"""Per-first-byte blocks of status codes (paper section 3.2, the inverse token spanner table by lexer state).

From a lexer state, the token strings starting with byte b do what the subtree (b, DFA state
after b) does (:mod:`greatgramma.subtrees`). A *block* holds, for one such subtree, each
string's status code: which entry of the per-step status vector decides it (the viable-rows
block of its first terminal, offset by its outcome row; or the end state it stays in; or dead).
Blocks are shared by every lexer state that enters the subtree alike, so a lexer state's view
(:mod:`greatgramma.views`) is assembled from them cheaply.

Blocks are built when a lexer view first needs them (or, compiling eagerly, every block a DFA
state enters; the indenter's column states' on first use even then). Each block is a function
of its key.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import native
from .codes import DEAD, END, NO_TERM
from .subtrees import SubtreeWalks, is_held


MIN_LOOP = 64  # bytes a DFA state loops on, from which compiling builds the blocks it enters (fill_loops)


@dataclass(frozen=True)
class StatusLayout:
    """Where things are in the per-step status vector. Entry 0 is always false (``dead``); the
    entry of (first terminal f, outcome row r), viable after feeding f, is ``2 + 2 (r W + f -
    NO_TERM)`` with W the number of first kinds (NO_TERM, then the terminals); that of lexer
    state e (a token that stays inside the current lexeme and ends there) is ``2 e + 1``. Rows
    and extended lexer states are added as they are met without moving any entry."""

    width: int
    dead = 0

    @classmethod
    def of(cls, num_terminals: int) -> StatusLayout:
        return cls(num_terminals - NO_TERM)

    def row_codes(self, first, row):
        return 2 + 2 * (row * self.width + first - NO_TERM)

    def end_codes(self, state):
        return 2 * state + 1

    def rows_of(self, first: int, num_rows: int) -> slice:
        """The entries of rows 0..num_rows-1 after first terminal ``first``."""
        return slice(2 + 2 * (first - NO_TERM), 2 + 2 * num_rows * self.width, 2 * self.width)

    def size(self, num_rows: int, max_end: int) -> int:
        """Entries of a status vector for these rows and end states up to ``max_end``."""
        return max(2 + 2 * num_rows * self.width, 2 * max_end + 2)


class Block(NamedTuple):
    """Status codes of the strings that start with one byte, seen from lexer states that agree on it.

    ``code`` is None where the strings depend on the entering state's fallback
    (:meth:`SubtreeWalks.resolve`): such a block is resolved per lexer state instead. (A named
    tuple: views are assembled from hundreds of new blocks at a time.)
    """

    code: np.ndarray | None  # int32 per string of the byte's range
    firsts: frozenset
    end_states: frozenset


_HELD = Block(None, frozenset(), frozenset())  # a block left held (resolved per entering state)


class BlockTable:
    """Blocks keyed (byte, DFA state after it), or (byte, state, terminal accepted just before
    the byte) for held blocks resolved for DFA states. Thread-safe."""

    def __init__(self, subtrees: SubtreeWalks, layout: StatusLayout) -> None:
        self.subtrees, self._lexer, self.layout = subtrees, subtrees.lexer, layout
        self._blocks: dict[tuple, Block] = {}
        self._lock = threading.Lock()

    def fill(self) -> None:
        """Build the blocks every DFA state enters (eager preprocessing; otherwise each is built
        when a lexer view first needs it)."""
        self.new_blocks(self._entered_subtrees())
        if self._lexer.columns is None:  # with an indenter they cost ~0.2 s up front: built on first use
            self.resolved_blocks(self._entered_held_blocks())

    def fill_loops(self, min_loop: int = MIN_LOOP) -> None:
        """Build the blocks that DFA states looping on at least ``min_loop`` bytes enter (the inside
        of a string or a comment): nearly every output reaches them, and their blocks hold most of
        the vocabulary, so building them while compiling keeps the slowest first masks off the
        decoding path."""
        lexer = self._lexer
        delta = lexer.delta
        loops = (delta == np.arange(len(delta))[:, None]).sum(axis=1) >= min_loop
        if lexer.columns is not None:
            self.new_blocks(self._entered_subtrees(loops))
            return
        roots = self.subtrees.trie.root_children
        for q in np.flatnonzero(loops[1:]).tolist():  # held blocks resolved as each loop state sees them, in the same pass
            to = delta[q + 1].tolist()  # (the start state enters no subtrees: its strings run from it)
            items = [(b, lo, hi, to[b]) for b, lo, hi in roots if to[b] != DEAD and (b, to[b]) not in self._blocks]
            self.new_blocks(items, lexer.accept_next[q + 1].tolist())

    def __contains__(self, key: tuple) -> bool:
        return key in self._blocks

    def __getitem__(self, key: tuple) -> Block:
        return self._blocks[key]

    def lookup(self, keys: list[tuple]) -> list[Block | None]:
        """The block of each key, or None (one call for all of a lexer state's bytes)."""
        return list(map(self._blocks.get, keys))

    def _entered_subtrees(self, sources: np.ndarray | None = None) -> list[tuple[int, int, int, int]]:
        """(first byte, first string, end string, DFA state after the byte) for every subtree some
        lexer state (other than the start state; among ``sources``, bool per state, if given)
        enters. With an indenter, only states without a pending newline column: the column ones
        are few per program, and each would be its own block."""
        lexer, roots = self._lexer, self.subtrees.trie.root_children
        firsts = np.array([b for b, _, _ in roots], dtype=np.int64)
        entered = np.zeros((len(roots), lexer.num_states), dtype=bool)
        states = lexer.delta[1:, firsts].T
        if sources is not None:
            states = np.where(sources[1:], states, DEAD)
        rows = np.broadcast_to(np.arange(len(roots))[:, None], states.shape)
        alive = states != DEAD
        entered[rows[alive], states[alive]] = True
        cols = lexer.columns
        if cols is not None:
            entered[:, cols.state_column != cols.max_column] = False
        at, sts = np.nonzero(entered)
        return [(*roots[i], st) for i, st in zip(at.tolist(), sts.tolist())]

    def _entered_held_blocks(self) -> list[tuple[tuple[int, int, int, int], tuple[int, int, int]]]:
        """For every held block a DFA state enters: (its item, (byte, state, what the entering
        state accepts just before the byte)), the key of its resolved block."""
        held = {key for key, blk in self._blocks.items() if blk.code is None}
        lexer, out = self._lexer, []
        width = len(lexer.terminals) + 1
        for b, lo, hi in self.subtrees.trie.root_children:
            entered = lexer.delta[1:, b].astype(np.int64) * width + lexer.accept_next[1:, b] + 1
            for key in np.unique(entered).tolist():
                st, before = divmod(key, width)
                if (b, st) in held:
                    out.append(((b, lo, hi, st), (b, st, before - 1)))
        return out

    def new_blocks(self, items: list[tuple[int, int, int, int]], before: list[int] | None = None) -> None:
        """Blocks of (first byte, string range, DFA state after it) subtrees, in one batch. A block
        whose strings depend on the entering state's fallback is kept without codes (held).

        ``before``: the entering lexer state has no fallback of its own and accepts terminal
        ``before[b]`` (or DEAD) just before byte b; the held blocks are then also resolved for it
        in the same pass (as ``resolved_blocks``), without joining their walks a second time."""
        if not items:
            return
        pairs = [(b, st) for b, _, _, st in items]
        strings, first, rest, seg, held = self.subtrees.joined(pairs)
        if before is None or not held.any():
            self._store_blocks(items, pairs, strings, first, rest, seg)
            return
        ahead = [before[b] for b, _ in pairs]
        strings, first, rest, seg = self.subtrees.resolve_joined(strings, first.copy(), rest.copy(), seg, ahead, drop=False)
        keys = [(*pair, a) if h else pair for pair, a, h in zip(pairs, ahead, held.tolist())]
        self._store_blocks(items, keys, strings, first, rest, seg)
        with self._lock:
            for pair, h in zip(pairs, held.tolist()):
                if h:  # (other lexer states that enter it resolve it for themselves)
                    self._blocks.setdefault(pair, _HELD)

    def resolved_blocks(self, entries: list[tuple[tuple[int, int, int, int], tuple[int, int, int]]]) -> None:
        """Held blocks as entered by DFA states (no fallback of their own) that accept terminal
        ``before`` just before the byte, keyed (byte, DFA state after it, before)."""
        if entries:
            items = [item for item, _ in entries]
            td = self.subtrees
            walked = td.subtrees([(b, st) for b, _, _, st in items])
            strings, first, rest, seg = td.resolve_entered(walked, [key[2] for _, key in entries])
            self._store_blocks(items, [key for _, key in entries], strings, first, rest, seg)

    def _store_blocks(self, items, keys, strings, first, rest, seg) -> None:
        lo = np.array([it[1] for it in items], dtype=np.int64)
        spans = np.array([hi - lo_ for _, lo_, hi, _ in items], dtype=np.int64)
        start = np.cumsum(spans) - spans
        buf = np.full(int(spans.sum()), self.layout.dead, dtype=np.int32)
        firsts, ends, held = self.codes(first, rest, seg, strings, start - lo, buf)
        with self._lock:
            for i, key in enumerate(keys):
                blk = Block(None if held[i] else buf[start[i] : start[i] + spans[i]], frozenset(firsts[i]), frozenset(ends[i]))
                self._blocks.setdefault(key, blk)

    def codes(self, first: np.ndarray, rest: np.ndarray, seg: np.ndarray, strings: np.ndarray, base: np.ndarray,
              out: np.ndarray) -> tuple[list[set[int]], list[set[int]], np.ndarray]:
        """Status codes of walk results, written into ``out`` at ``base[seg] + strings``; per
        segment, the first terminals and end states among them, and whether any is held."""
        nseg, width = len(base), self.layout.width
        firsts: list[set[int]] = [set() for _ in range(nseg)]
        if native.ext is not None:
            seen, held, end_seg, end_state = native.block_codes(first, rest, seg, strings, base, width, out)
            for i, f in zip(*(a.tolist() for a in np.nonzero(seen))):
                firsts[i].add(f + NO_TERM)
            order = np.argsort(end_seg, kind="stable")  # (already in segment order where seg is)
            bounds = np.searchsorted(end_seg[order], np.arange(nseg + 1)).tolist()
            states = end_state[order].tolist()
            return firsts, [set(states[i:j]) for i, j in zip(bounds[:-1], bounds[1:])], held
        ends: list[set[int]] = [set() for _ in range(nseg)]
        is_end = first == END
        is_row = (first >= NO_TERM) & ~is_end & (first != DEAD)  # not dead, not backing up, not held
        lay = self.layout
        out[base[seg] + strings] = np.where(is_row, lay.row_codes(first, rest), np.where(is_end, lay.end_codes(rest), lay.dead))
        ends_width = int(rest.max(initial=0, where=is_end)) + 1
        for found, kind, value, w, shift in ((firsts, is_row, first - NO_TERM, width, NO_TERM), (ends, is_end, rest, ends_width, 0)):
            seen = np.zeros(nseg * w + 1, dtype=bool)  # the last slot takes the other kinds
            seen[np.where(kind, seg * w + value, nseg * w)] = True
            for key in np.flatnonzero(seen[:-1]).tolist():
                found[key // w].add(key % w + shift)
        return firsts, ends, np.bincount(seg[is_held(first)], minlength=nseg) > 0
