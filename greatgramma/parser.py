"""Lark's LALR(1) table in integer form, and the stack machine that runs terminals through it.

A live stack is a chain of :class:`Frame` objects (a persistent stack: pushing makes one frame
over the old stack, which stays valid and shared), so a step costs the same at any depth. Besides
the exact run on a live stack, :meth:`ParseTable.feed_known` runs on a *known top segment* (a
tuple of states) and reports when the answer depends on what lies below it (paper section 3.3:
always-accepted vs context-dependent).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from lark.parsers.lalr_analysis import Shift

from .errors import GrammarError

ERROR = -1
DEPENDS = None  # sentinel: the run popped below the known part of the stack
Known = tuple[int, ...]  # the top segment of a stack, bottom first
FRAME_BYTES = 256  # memory of one frame (object, hash and depth ints, top segment), for the caches' bounds
MEMO_ENTRIES = 32  # outcomes of deep reductions remembered per frame (then it starts over)
SEGMENT = 8  # top states a live feed is memoized on (deeper reductions: the frames' memos)
UNIT_MEMO_BYTES = 8 << 20  # a table's memo of unit-rule chains
SEGMENT_MEMO_BYTES = 16 << 20  # a table's memo of feeds on top segments
_MISSING = object()


class BoundedMemo(dict):
    """A dict bounded by bytes (and entries): each entry is charged an estimate as it goes in
    (or grows), and past ``budget`` the memo starts over. A hit is a plain dict lookup; races
    only blur the count (threads may add at once), never an answer."""

    __slots__ = ("budget", "max_entries", "nbytes")

    def __init__(self, budget: int, max_entries: int = 1 << 62) -> None:
        super().__init__()
        self.budget, self.max_entries, self.nbytes = budget, max_entries, 0

    def add(self, key, value, nbytes: int):
        """Store ``value`` (unless ``key`` is in: then keep that one) and return what is stored."""
        if self.nbytes + nbytes > self.budget or len(self) >= self.max_entries:
            self.clear()
        self.nbytes += nbytes
        return self.setdefault(key, value)

    def charge(self, nbytes: int) -> None:
        """An entry grew by about ``nbytes`` (a memo row got one more answer)."""
        self.nbytes += nbytes

    def clear(self) -> None:
        super().clear()
        self.nbytes = 0


class Frame:
    """A parser state over the stack below it (``parent``; None at the bottom): a persistent stack.

    ``hash`` is computed once, from the parent's. Two frames are equal when their stacks hold the
    same states: the same object, or the same hash and depth and the same states down to a frame
    both share. After such a walk the other stack's frames are re-linked onto this one's (an
    equal value, so invisible), and the same walk is never made twice. ``memo`` holds outcomes of
    reductions that pop into this frame (:meth:`ParseTable.feed`), at most ``MEMO_ENTRIES``;
    ``segment`` is the stack's top ``SEGMENT`` states, bottom first (what most feeds depend on).
    """

    __slots__ = ("state", "parent", "depth", "hash", "memo", "segment")

    def __init__(self, state: int, parent: Frame | None = None) -> None:
        self.state = state
        self.parent = parent
        self.memo: dict | None = None
        if parent is None:
            self.depth = 1
            self.hash = hash((state,))
            self.segment: Known = (state,)
        else:
            self.depth = parent.depth + 1
            self.hash = hash((state, parent.hash))
            seg = parent.segment
            self.segment = (seg[1:] if len(seg) == SEGMENT else seg) + (state,)

    def __hash__(self) -> int:
        return self.hash

    def __len__(self) -> int:
        return self.depth

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not Frame or other.hash != self.hash or other.depth != self.depth:
            return False
        a, b = self, other
        while a is not b:
            if a.state != b.state:
                return False
            a, b = a.parent, b.parent
        self._relink(other)
        return True

    def _relink(self, other: Frame) -> None:
        """Point each frame of ``other``'s chain (equal to this one) at this chain's parent."""
        a, b = self, other
        while a is not b:
            pa, pb = a.parent, b.parent
            b.parent = pa
            a, b = pa, pb

    def states(self) -> Known:
        """The stack's states, bottom first (walks the whole stack: for tests and messages)."""
        out, f = [], self
        while f is not None:
            out.append(f.state)
            f = f.parent
        return tuple(reversed(out))

    def __repr__(self) -> str:
        return f"Frame(top={self.state}, depth={self.depth})"

    def __reduce__(self):
        return _frames_of, (self.states(),)  # flat: pickling a deep chain would recurse


def _frames_of(states: Known) -> Frame:
    """The stack of ``states`` (bottom first), as frames."""
    frame = None
    for state in states:
        frame = Frame(state, frame)
    return frame


Stack = Frame  # a live parser stack

def _reduce_code(rule: int) -> int:
    return -2 - rule


@dataclass(frozen=True, eq=False)
class ParseTable:
    """action[state][terminal]: next state (>= 0), reduce by rule r (-2 - r), or ERROR.

    Terminal indices are the lexer's; index ``end`` (= number of lexer terminals) is ``$END``.
    """

    action: np.ndarray  # int32[S, T + 1]
    goto: np.ndarray  # int32[S, N]
    rule_lhs: np.ndarray  # int32[R]
    rule_len: np.ndarray  # int32[R]
    start_state: int
    end_state: int
    nonterminals: tuple[str, ...]
    declared: dict[str, int] = field(default_factory=dict)  # postlexer terminals: name -> column

    def __post_init__(self) -> None:
        # Python lists: indexing them is several times faster than numpy scalars in the hot loop.
        object.__setattr__(self, "_action", self.action.tolist())
        object.__setattr__(self, "_goto", self.goto.tolist())
        object.__setattr__(self, "_lhs", self.rule_lhs.tolist())
        object.__setattr__(self, "_len", self.rule_len.tolist())
        object.__setattr__(self, "_units", BoundedMemo(UNIT_MEMO_BYTES))  # (below, top, term) -> top after unit rules
        object.__setattr__(self, "_segments", BoundedMemo(SEGMENT_MEMO_BYTES))  # top segment -> term -> outcome
        object.__setattr__(self, "_root", Frame(self.start_state))  # shared by every initial stack
        object.__setattr__(self, "_width", self.action.shape[1])  # memo keys: state * width + terminal

    def initial_stack(self) -> Stack:
        return self._root

    def cut(self, stack: Stack, depth: int) -> tuple[Stack | None, Known]:
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
        if got is False:
            return None
        if got is DEPENDS:
            got = self._reduce(self.join(below, known), term)
            return None if got is False else got
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

    @property
    def end(self) -> int:
        return self.action.shape[1] - 1

    @property
    def num_states(self) -> int:
        return self.action.shape[0]

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
            if got is False:
                return None
            below, states = got
        elif got is False:
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
        popped, states pushed), False (rejected), DEPENDS (it pops below the segment), or for
        ``$END`` whether it is accepted."""
        row = self._segments.get(known)
        if row is None:
            row = self._segments.add(known, {}, 240 + 8 * len(known))
        got = row.get(term, _MISSING)
        if got is _MISSING:
            got = row[term] = self._known_end(known) if term == self._width - 1 else self._known_step(known, term)
            self._segments.charge(120 + 8 * len(known))
        return got

    def _known_step(self, known: Known, term: int):
        """:meth:`feed_known` as (frames popped, states pushed): the frames it keeps are reused."""
        r = self.feed_known(known, term)
        if r is DEPENDS or r is False:
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
                return False
            r = -2 - a
            n = rlen[r]
            if n >= len(k):
                return DEPENDS
            if n:
                del k[-n:]
            k.append(goto[k[-1]][lhs[r]])

    def _reduce(self, stack: Stack, term: int):
        """The reductions ``term`` triggers on ``stack``, then its shift: the stack after it as
        (frame, states pushed on that frame); False if ``term`` is rejected, True if it is
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
                    out = got if got is True or got is False else (base if got[0] is None else got[0], got[1])
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
                out = False
                break
            r = -2 - a
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

    def feed_known(self, known: Known, term: int) -> Known | None | bool:
        """Like :meth:`feed` on a stack whose only known part is ``known`` (its top segment).

        Returns the new known segment, ``False`` if rejected whatever lies below, or ``DEPENDS``
        (None) if a reduction pops below the known part.
        """
        action, goto, lhs, rlen = self._action, self._goto, self._lhs, self._len
        a = action[known[-1]][term]
        if a >= 0:
            return known + (a,)
        if a == ERROR:
            return False
        k = list(known)
        units = self._units
        while True:
            r = -2 - a
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
                return False

    def _unit_chain(self, key: tuple[int, int, int]) -> int:
        """The top state after reducing by unit rules while ``term`` asks for one, from ``top``
        above ``below`` (which such reductions never change)."""
        below, top, term = key
        action, goto, lhs, rlen = self._action, self._goto, self._lhs, self._len
        while True:
            a = action[top][term]
            if a >= ERROR or rlen[-2 - a] != 1:
                break
            top = goto[below][lhs[-2 - a]]
        self._units.add(key, top, 128)
        return top

    def expected(self, stack: Stack) -> list[int]:
        """Terminals (indices) the parser would accept next from this stack."""
        row = self._action[stack.state]
        return [
            t
            for t in range(len(row))
            if row[t] != ERROR and (self.accepts_end(stack) if t == self.end else self.feed(stack, t) is not None)
        ]


def parse_table_from_lark(
    lark_obj, terminal_names: list[str], start: str, postlexed: tuple[str, ...] = ()
) -> ParseTable:
    """Convert Lark's LALR table to integer arrays indexed by the lexer's terminal order.

    ``postlexed``: %declare'd terminals a postlexer makes (the indenter's); they get the
    columns after the lexer's terminals, then comes ``$END``.
    """
    table = lark_obj.parser.parser.parser.parse_table
    term_index = {name: i for i, name in enumerate(terminal_names)}
    declared = sorted({s.name for r in lark_obj.rules for s in r.expansion if s.is_term} - set(term_index))
    missing = [n for n in declared if n not in postlexed]
    if missing:
        raise GrammarError(
            f"terminals {', '.join(missing)} are declared (%declare) but never lexed: they come from a "
            "postlexer; for an indenter pass Grammar(..., indenter=gg.Indenter(...)) "
            "(gg.Indenter.python() for Python grammars)"
        )
    extra = {n: len(terminal_names) + i for i, n in enumerate(postlexed)}
    term_index.update(extra)
    n_terms = len(terminal_names) + len(postlexed)
    term_index["$END"] = n_terms
    states = table.states
    nonterms: dict[str, int] = {}
    rules: dict[object, int] = {}
    rule_list = []
    for acts in states.values():
        for sym, (act, arg) in acts.items():
            if sym not in term_index:
                nonterms.setdefault(sym, len(nonterms))
            elif act is not Shift and arg not in rules:
                rules[arg] = len(rule_list)
                rule_list.append(arg)
    for rule in rule_list:
        nonterms.setdefault(rule.origin.name, len(nonterms))
    n_states = max(states) + 1
    action = np.full((n_states, n_terms + 1), ERROR, dtype=np.int32)
    goto = np.full((n_states, max(len(nonterms), 1)), ERROR, dtype=np.int32)
    for s, acts in states.items():
        for sym, (act, arg) in acts.items():
            if sym in term_index:
                action[s, term_index[sym]] = arg if act is Shift else _reduce_code(rules[arg])
            else:
                goto[s, nonterms[sym]] = arg
    rule_lhs = np.array([nonterms[r.origin.name] for r in rule_list], dtype=np.int32)
    rule_len = np.array([len(r.expansion) for r in rule_list], dtype=np.int32)
    return ParseTable(
        action=action,
        goto=goto,
        rule_lhs=rule_lhs,
        rule_len=rule_len,
        start_state=table.start_states[start],
        end_state=table.end_states[start],
        nonterminals=tuple(sorted(nonterms, key=nonterms.__getitem__)),
        declared=extra,
    )
