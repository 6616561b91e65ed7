"""The LALR(1) stack machine: runs terminals through a :class:`ParseTable` on live stacks and on known top segments.

A live stack is a chain of :class:`~greatgramma.stack.Frame` objects, so a step costs the same
at any depth. Besides the exact run on a live stack, :meth:`LalrParser.feed_known` runs on a
*known top segment* (a tuple of states) and reports when the answer depends on what lies below
it (paper section 3.3: always-accepted vs context-dependent). The parser owns its memos (unit
rule chains, outcomes per top segment); the table stays as compiled.
"""

from __future__ import annotations

import numpy as np

from .cache import BoundedCache
from .codes import DEPENDS, ERROR, REDUCE, REJECTED
from .native import LrTables
from .parse_table import ParseTable
from .stack import MEMO_ENTRIES, SEGMENT, Frame, Known, Stack, frames_bytes

UNIT_MEMO_BYTES = 8 << 20  # a parser's memo of unit-rule chains
SEGMENT_MEMO_BYTES = 16 << 20  # a parser's memo of feeds on top segments
_MISSING = object()


class LalrParser:
    """Runs a :class:`ParseTable`; one per masker, safe to share between threads."""

    def __init__(self, table: ParseTable) -> None:
        self.table = table
        self.start_state, self.end_state = table.start_state, table.end_state
        self.num_states, self.end = table.num_states, table.end
        # Python lists: indexing them is several times faster than numpy scalars in the hot loop.
        self._action = table.action.tolist()
        self._goto = table.goto.tolist()
        self._lhs = table.rule_lhs.tolist()
        self._len = table.rule_len.tolist()
        self._units = BoundedCache(UNIT_MEMO_BYTES)  # (below, top, term) -> top after unit rules
        self._segments = BoundedCache(SEGMENT_MEMO_BYTES)  # top segment -> term -> outcome
        self._root = Frame(table.start_state)  # shared by every initial stack
        self._width = table.action.shape[1]  # memo keys: state * width + terminal
        self._native: LrTables | None = None

    def native_tables(self) -> LrTables:
        """The tables as the compiled walk of viable rows reads them (``native.viable_rows``)."""
        if self._native is None:
            t, i32 = self.table, lambda a: np.ascontiguousarray(a, dtype=np.int32)  # noqa: E731
            self._native = LrTables(i32(t.action).ravel(), t.action.shape[1], i32(t.goto).ravel(), t.goto.shape[1],
                                    i32(t.rule_lhs), i32(t.rule_len), np.zeros(0, dtype=np.uint8))
        return self._native

    def initial_stack(self) -> Stack:
        return self._root

    @staticmethod
    def cut(stack: Stack, depth: int) -> tuple[Stack | None, Known]:
        """(below, known): the frame under the top ``depth`` states (None if there is none) and
        those states (see :meth:`feed_known`)."""
        states, f = [], stack
        while f is not None and len(states) < depth:
            states.append(f.state)
            f = f.parent
        states.reverse()
        return f, tuple(states)

    def join(self, below: Stack | None, known: Known) -> Stack:
        """Inverse of :meth:`cut`: the states of ``known`` pushed on ``below``."""
        for state in known:
            below = Frame(state, below)
        return below

    def recut(self, below: Stack | None, known: Known, depth: int) -> tuple[Stack | None, Known]:
        """:meth:`cut` of the stack ``below`` + ``known`` (made of frames only where ``known``
        is longer than ``depth``)."""
        if len(known) > depth:
            return self.join(below, known[:-depth]), known[-depth:]
        states, f = [], below
        while f is not None and len(states) + len(known) < depth:
            states.append(f.state)
            f = f.parent
        return f, tuple(reversed(states)) + known

    def feed_on(self, below: Stack | None, known: Known, term: int) -> tuple[Stack | None, Known] | None:
        """:meth:`feed` on the stack ``below`` + ``known``, the result in the same form; no
        frame is made unless the reductions pop below the segment memo (see :meth:`feed`)."""
        if below is None:
            seg = known[-SEGMENT:]
        else:
            seg = below.segment + known
            if len(seg) > SEGMENT:
                seg = seg[-SEGMENT:]
        got = self._segment_outcome(seg, term)
        if got is REJECTED:
            return None
        if got is DEPENDS:
            got = self._reduce(self.join(below, known), term)
            return None if got is REJECTED else got
        pops, states = got
        if pops <= len(known):
            return below, known[: len(known) - pops] + states
        for _ in range(pops - len(known)):
            below = below.parent
        return below, states

    @staticmethod
    def cut_known(known: Known, depth: int) -> tuple[Known, Known]:
        """:meth:`cut` on a known segment."""
        return (known[:-depth], known[-depth:]) if len(known) > depth else ((), known)

    @staticmethod
    def join_known(below: Known, known: Known) -> Known:
        """Inverse of :meth:`cut_known`."""
        return below + known

    def feed(self, stack: Stack, term: int) -> Stack | None:
        """Reduce as needed, then shift ``term``; None if the parser rejects it.

        Reductions are memoized on the top ``SEGMENT`` states (shared by every stack with that
        top); those that pop deeper run on the frames (:meth:`_reduce`).
        """
        a = self._action[stack.state][term]
        if a >= 0:
            return Frame(a, stack)
        if a == ERROR:
            return None
        got = self._segment_outcome(stack.segment, term)
        if got is DEPENDS:
            got = self._reduce(stack, term)
            if got is REJECTED:
                return None
            below, states = got
        elif got is REJECTED:
            return None
        else:
            pops, states = got
            below = stack
            for _ in range(pops):
                below = below.parent
        for state in states:
            below = Frame(state, below)
        return below

    def accepts_end(self, stack: Stack) -> bool:
        """Whether ``$END`` is accepted here (the input so far is a complete sentence)."""
        got = self._segment_outcome(stack.segment, self._width - 1)
        return self._reduce(stack, self._width - 1) is True if got is DEPENDS else got

    def _segment_outcome(self, known: Known, term: int):
        """What ``term`` does to a stack whose top segment is ``known``, memoized: (frames
        popped, states pushed), REJECTED, DEPENDS (it pops below the segment), or for
        ``$END`` whether it is accepted."""
        row = self._segments.get(known)
        if row is None:
            row = self._segments.put(known, {}, 240 + 8 * len(known))
        got = row.get(term, _MISSING)
        if got is _MISSING:
            got = row[term] = self._known_end(known) if term == self._width - 1 else self._known_step(known, term)
            self._segments.grew(120 + 8 * len(known))
        return got

    def _known_step(self, known: Known, term: int):
        """:meth:`feed_known` as (frames popped, states pushed): the frames it keeps are reused."""
        r = self.feed_known(known, term)
        if r is DEPENDS or r is REJECTED:
            return r
        keep = 0
        while keep < len(known) and keep < len(r) and known[keep] == r[keep]:
            keep += 1
        return len(known) - keep, r[keep:]

    def _known_end(self, known: Known):
        """Whether ``$END`` is accepted on a stack whose top segment is ``known`` (DEPENDS if
        its reductions pop below it)."""
        action, goto, lhs, rlen = self._action, self._goto, self._lhs, self._len
        end, end_state = self._width - 1, self.end_state
        k = list(known)
        while True:
            top = k[-1]
            if top == end_state:
                return True
            a = action[top][end]
            if a == ERROR or a >= 0:  # Lark never shifts $END
                return REJECTED
            r = REDUCE - a
            n = rlen[r]
            if n >= len(k):
                return DEPENDS
            if n:
                del k[-n:]
            k.append(goto[k[-1]][lhs[r]])

    def _reduce(self, stack: Stack, term: int):
        """The reductions ``term`` triggers on ``stack``, then its shift: the stack after it as
        (frame, states pushed on that frame); REJECTED if ``term`` is rejected, True if it is
        ``$END`` and accepted.

        Memoized on frames: whenever the stack is one state s over an existing frame P, the
        outcome from there goes in P's memo. A chain of reductions that pops into P again later
        (a right-recursive list closing, checked at every step) stops there, so a run costs the
        reductions above the first frame it finds decided, whatever the depth below.
        """
        action, goto, lhs, rlen, units = self._action, self._goto, self._lhs, self._len, self._units
        width = self._width
        accept = self.end_state if term == width - 1 else -1
        base, above = stack.parent, [stack.state]  # the stack is base + above
        seen: list[tuple[Frame, int]] = []  # (P, key) where the stack was P + one state
        while True:
            if len(above) == 1 and base is not None:
                key = above[0] * width + term
                memo = base.memo
                got = None if memo is None else memo.get(key)
                if got is not None:
                    out = got if got is True or got is REJECTED else (base if got[0] is None else got[0], got[1])
                    break
                seen.append((base, key))
            top = above[-1]
            if top == accept:
                out = True
                break
            a = action[top][term]
            if a >= 0:
                above.append(a)
                out = (base, tuple(above))
                break
            if a == ERROR:
                out = REJECTED
                break
            r = REDUCE - a
            n = rlen[r]
            if n == 1 and accept < 0:  # a chain of unit rules swaps the top state: memoized on (below, top, term)
                k = (above[-2] if len(above) > 1 else base.state, top, term)
                got = units.get(k)
                above[-1] = got if got is not None else self._unit_chain(k)
                continue
            if n < len(above):
                if n:
                    del above[-n:]
            else:
                for _ in range(n - len(above)):
                    base = base.parent
                above.clear()
            above.append(goto[above[-1] if above else base.state][lhs[r]])
        if seen:
            self._remember(seen, out)
        return out

    @staticmethod
    def _remember(seen: list[tuple[Frame, int]], out) -> None:
        """Store ``out`` in the memo of each frame the run passed over (relative to the frame
        when the run ended on it: a frame never refers to itself, nor to a frame above it)."""
        for frame, key in seen:
            memo = frame.memo
            if memo is None:
                memo = frame.memo = {}
            elif len(memo) >= MEMO_ENTRIES:
                memo.clear()
            memo[key] = (None, out[1]) if type(out) is tuple and out[0] is frame else out

    def feed_known(self, known: Known, term: int) -> Known | None | bool:  # DEPENDS / REJECTED
        """Like :meth:`feed` on a stack whose only known part is ``known`` (its top segment).

        Returns the new known segment, ``REJECTED`` if rejected whatever lies below, or
        ``DEPENDS`` if a reduction pops below the known part (see :mod:`greatgramma.codes`).
        """
        action, goto, lhs, rlen = self._action, self._goto, self._lhs, self._len
        a = action[known[-1]][term]
        if a >= 0:
            return known + (a,)
        if a == ERROR:
            return REJECTED
        k = list(known)
        units = self._units
        while True:
            r = REDUCE - a
            n = rlen[r]
            if n >= len(k):
                return DEPENDS
            if n == 1:  # a chain of unit rules only swaps the top state: memoized on (below, top, term)
                key = (k[-2], k[-1], term)
                top = units.get(key)
                k[-1] = top if top is not None else self._unit_chain(key)
            else:
                if n:
                    del k[-n:]
                k.append(goto[k[-1]][lhs[r]])
            a = action[k[-1]][term]
            if a >= 0:
                k.append(a)
                return tuple(k)
            if a == ERROR:
                return REJECTED

    def _unit_chain(self, key: tuple[int, int, int]) -> int:
        """The top state after reducing by unit rules while ``term`` asks for one, from ``top``
        above ``below`` (which such reductions never change)."""
        below, top, term = key
        action, goto, lhs, rlen = self._action, self._goto, self._lhs, self._len
        while True:
            a = action[top][term]
            if a >= ERROR or rlen[REDUCE - a] != 1:
                break
            top = goto[below][lhs[REDUCE - a]]
        self._units.put(key, top, 128)
        return top

    def expected(self, stack: Stack) -> list[int]:
        """Terminals (indices) the parser would accept next from this stack."""
        row = self._action[stack.state]
        return [
            t
            for t in range(len(row))
            if row[t] != ERROR and (self.accepts_end(stack) if t == self.end else self.feed(stack, t) is not None)
        ]

    @staticmethod
    def stack_bytes(stack: Stack, held: dict | None = None) -> int:
        """What a cache entry keyed by ``stack`` is charged for it: the frames it keeps alive (all
        of them; with ``held``, the cache's charged parts, those not charged yet:
        :func:`~greatgramma.stack.frames_bytes`)."""
        return frames_bytes(stack, held) + 100
