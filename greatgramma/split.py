"""Paper section 3.3, Alg. 5: which outcome rows are viable from a parser stack, split into what
the top of the stack decides alone (computed once per top, shared) and what depends on the rest.

For each stack top p, walking the prefix tree of the rows' terminal sequences
(:class:`~greatgramma.sequences.SequenceTrie`) with only p known finds the rows p accepts
whatever lies below (always accepted), those it rejects, and the context-dependent rest,
whose terminals reduce below p: only these are fed on the live stack.

With the compiled loops (:mod:`greatgramma.native`) and the LALR parser, Go's semicolon
inserter or the indenter, the whole tree is walked on the live stack instead, in C without the
GIL: a stack takes ~100 of its nodes, ~30 us a Go stack at 128K where the split walk in Python
took ~0.15 ms (the splits are then not made). Other postlexers' stacks take the split walk, and
so do reductions that pop below the top ``WALK_DEPTH`` states.
"""

from __future__ import annotations

import numpy as np

from . import native
from .cache import BoundedCache, stack_entry_charge
from .codes import DEPENDS, REJECTED
from .parser import LalrParser
from .sequences import SequenceTrie
from .stack import Frame, Known

WALK_DEPTH = 64  # top states the compiled walk is given where the top segment is not enough

# Paper section 3.3 for one stack top p, as ``(accepted, frontier, open_checks)``: the row ids viable
# whatever lies below p (an array); (node, known stack at its parent) whose terminal reduces below
# p; and (known stack, ((terminal, rows), ...)) to feed live. A plain tuple of tuples, ints and
# arrays, so that the collector stops tracking it after its first look: thousands are cached,
# and as objects with lists they made each full collection of a serving process longer.
Checks = tuple[tuple[Known, tuple[tuple[int, np.ndarray], ...]], ...]
Split = tuple[np.ndarray, tuple[tuple[int, Known], ...], Checks]


class ViableRows:
    """``of(stack)``: which outcome rows are viable from a live stack, as ``bool[rows]`` bytes.

    ``parser`` is the masker's stack machine (:class:`~greatgramma.parser.LalrParser` or a
    postlexer's; the compiled walk where it has ``native_tables``); ``split_depth`` how many top
    states the shared split is computed for. The caches share ``budget`` bytes: viable rows by
    stack 1/3, known-segment feeds 1/3, splits 1/6, distinct rows 1/6 (``max_entries`` bounds
    their entries).
    """

    def __init__(self, trie: SequenceTrie, parser, split_depth: int, budget: int, max_entries: int):
        self._trie, self._split_depth = trie, split_depth
        self._hung = trie.num_rows  # rows hung when the caches were last cleared
        self._parser = parser
        self._cut, self._recut, self._feed_on = parser.cut, parser.recut, parser.feed_on  # live stacks
        self._cut_known, self._join_known = parser.cut_known, parser.join_known  # known segments
        self._stack_bytes = parser.stack_bytes
        share = budget // 6
        self._rows = BoundedCache(2 * share, max_entries)  # stack -> bool[rows] as bytes
        self._known = BoundedCache(2 * share, 4 * max_entries)  # known segment -> terminal -> feed_known
        self._splits = BoundedCache(share, 64 * max_entries)  # (node, known top) -> Split
        self._distinct_rows = BoundedCache(share, max_entries)  # equal rows share one object
        tables = getattr(parser, "native_tables", None)  # the LALR parser's and the postlexers' parsers'
        self._tables = tables() if tables is not None and native.ext is not None else None

    def caches(self) -> dict[str, BoundedCache]:
        return {"rows": self._rows, "known": self._known, "splits": self._splits, "distinct_rows": self._distinct_rows}

    def _split(self, node: int, top: Known) -> Split:
        """Walk the outcome trie below ``node`` with only the top of the stack known (paper Alg. 5).

        Cached per (node, top) while the subtree under the node stays as it is (its version).
        Below a terminal the parser takes, the walk goes on from the split of the child under the
        new top: after a shift the same few top states recur in many contexts, so most subtrees
        are decided once, and each split is a few merges.
        """
        key = (node, top, self._trie.version[node])
        got = self._splits.get(key)
        if got is not None:
            return got
        trie = self._trie
        hits: list[np.ndarray] = []
        frontier: list[tuple[int, Known]] = []
        checks: dict[Known, dict[int, list[np.ndarray]]] = {}
        if trie.free[node] is not None:
            hits.append(trie.free[node])
        row = self._known_row(top)
        for t, child, rows in trie.edges[node]:
            self._edge(top, t, child, rows, hits, frontier, checks, row)
        accepted = np.concatenate(hits) if hits else np.zeros(0, dtype=np.int64)
        open_checks = tuple((k, tuple((t, np.concatenate(rs)) for t, rs in d.items())) for k, d in checks.items())
        got = (accepted, tuple(frontier), open_checks)
        nbytes = accepted.nbytes + sum(rs.nbytes + 160 for _, cks in open_checks for _, rs in cks)
        return self._splits.put(key, got, nbytes + 160 * (len(frontier) + len(open_checks)) + 480)

    def _edge(self, known: Known, t: int, child: int, rows, hits: list, frontier: list, checks: dict, row=None) -> None:
        """Feed terminal ``t`` on the known stack at a trie node: the edge's rows (ending with t)
        are accepted, rejected or left open, and the walk goes on below ``child`` (-1: none)."""
        r = self._feed_known(known, t, row)
        if r is REJECTED:
            return
        if r is DEPENDS:
            if rows is not None:
                checks.setdefault(known, {}).setdefault(t, []).append(rows)
            if child >= 0:
                frontier.append((child, known))
            return
        if rows is not None:
            hits.append(rows)
        if child < 0:
            return
        below, top = self._cut_known(r, self._split_depth)
        accepted, sub_frontier, sub_checks = self._split(child, top)
        hits.append(accepted)
        if not below:  # r is its own top: what the child left open stays open here
            frontier.extend(sub_frontier)
            for k, cks in sub_checks:
                d = checks.setdefault(k, {})
                for t2, rows2 in cks:
                    d.setdefault(t2, []).append(rows2)
            return
        join, term = self._join_known, self._trie.term
        for k, cks in sub_checks:  # what the child left open, with more of the stack known
            full = join(below, k)
            for t2, rows2 in cks:
                self._edge(full, t2, -1, rows2, hits, frontier, checks)
        for c, k in sub_frontier:
            self._edge(join(below, k), term[c], c, None, hits, frontier, checks)

    def of(self, stack) -> bytes:
        """bool[rows] as bytes: which outcome rows are viable from ``stack``. Many stacks give the
        same rows; as bytes (hash cached) the rows can key the words they lead to.

        Covers the rows hung when it is called: call it after the lexer view that needs the
        rows is built (building a view may intern rows). Answers cached before more rows were
        hung are not used again."""
        hung = self._trie.sync()
        if hung != self._hung:  # the cached answers lack the new rows (stale splits go by version)
            self._hung = hung
            for cache in (self._rows, self._distinct_rows):
                cache.clear()
        key = (stack, hung)
        got = self._rows.get(key)
        if got is not None:
            return got
        got = self._split_walked(stack, hung) if self._tables is None else self._walked(stack, hung)
        got = self._distinct_rows.put(got, got, len(got) + 96)
        # many stacks give the same rows, and stacks share frames: each charged once
        return self._rows.put_shared(key, got, stack_entry_charge(got, len(got), stack, self._stack_bytes))

    def _split_walked(self, stack, hung: int) -> bytes:
        """:meth:`of` by the split walk: the cached splits of the stack's top, then what they left
        open fed on the live stack (for any parser; where the compiled walk is not built)."""
        hits: list[np.ndarray] = []
        self._collect(0, *self._cut(stack, self._split_depth), hits)
        ok = np.zeros(hung, dtype=bool)
        if hits:
            found = np.concatenate(hits)
            ok[found[found < hung]] = True  # (rows hung meanwhile by another thread: not asked for)
        return ok.tobytes()

    def _walked(self, stack, hung: int) -> bytes:
        """:meth:`of` by the compiled walk of the whole tree on the stack (no split, no memo: it
        visits the ~100 nodes a stack takes in microseconds, without the GIL): on the stack's top
        segment, where a reduction pops below it on the top ``WALK_DEPTH`` states, and where one
        pops deeper still by the split walk, whose frames remember deep reductions (a step costs
        the same at any depth)."""
        arrays = self._trie.arrays()  # (every row hung so far, maybe more: not asked for)
        ok = np.zeros(hung, dtype=np.uint8)
        frames, rest = stack, ()  # an indenter's stack: its LALR frames, bracket depth and levels
        if type(stack) is not Frame:
            frames, rest = stack.lalr, (stack.brackets, np.array(stack.levels, dtype=np.int32))
        top = frames.segment
        if not native.viable_rows(self._tables, arrays, np.array(top, dtype=np.int32), frames.depth > len(top), ok, *rest):
            return ok.tobytes()
        ok[:] = 0
        below, top = LalrParser.cut(frames, WALK_DEPTH)
        if not native.viable_rows(self._tables, arrays, np.array(top, dtype=np.int32), below is not None, ok, *rest):
            return ok.tobytes()
        return self._split_walked(stack, hung)

    def _collect(self, node: int, below, known: Known, hits: list[np.ndarray]) -> None:
        """Rows below ``node`` viable from the live stack ``below`` + ``known`` (as ``cut`` gives
        them): the cached split of its top, then what that left open, fed on the live stack."""
        below, top = self._recut(below, known, self._split_depth)
        accepted, frontier, open_checks = self._split(node, top)
        hits.append(accepted)
        feed_on = self._feed_on
        for k, checks in open_checks:
            for t, rows in checks:
                if feed_on(below, k, t) is not None:
                    hits.append(rows)
        term = self._trie.term
        for c, k in frontier:
            r = feed_on(below, k, term[c])
            if r is not None:
                self._collect(c, r[0], r[1], hits)

    def _feed_known(self, known: Known, term: int, row: dict | None = None):
        """``feed_known``, memoized per known segment (``row``: its memo, if at hand)."""
        if row is None:
            row = self._known_row(known)
        got = row.get(term, self)
        if got is self:
            got = row[term] = self._parser.feed_known(known, term)
            self._known.grew(112 + 8 * len(known))
        return got

    def _known_row(self, known: Known) -> dict:
        row = self._known.get(known)
        if row is None:
            row = self._known.put(known, {}, 288 + 8 * len(known))
        return row
