"""Lark's LALR(1) table in integer form, and the stack machine that runs terminals through it.

Stacks are tuples of parser states (immutable, shareable). Besides the exact run on a full
stack, :meth:`ParseTable.feed_known` runs on a *known top segment* and reports when the answer
depends on what lies below it (paper section 3.3: always-accepted vs context-dependent).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from lark.parsers.lalr_analysis import Shift

from .errors import GrammarError

ERROR = -1
DEPENDS = None  # sentinel: the run popped below the known part of the stack
Stack = tuple[int, ...]


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
        object.__setattr__(self, "_units", {})  # (below, top, terminal) -> top after unit reductions

    def initial_stack(self) -> Stack:
        return (self.start_state,)

    def cut(self, stack: Stack, depth: int) -> tuple[Stack, Stack]:
        """(below, known): the stack split under its top ``depth`` states (see :meth:`feed_known`)."""
        return (stack[:-depth], stack[-depth:]) if len(stack) > depth else ((), stack)

    def join(self, below: Stack, known: Stack) -> Stack:
        """Inverse of :meth:`cut`."""
        return below + known

    @property
    def end(self) -> int:
        return self.action.shape[1] - 1

    @property
    def num_states(self) -> int:
        return self.action.shape[0]

    def feed(self, stack: Stack, term: int) -> Stack | None:
        """Reduce as needed, then shift ``term``; None if the parser rejects it."""
        got = self.feed_known(stack, term)  # a whole stack: reductions never pop its bottom
        return None if got is False else got

    def accepts_end(self, stack: Stack) -> bool:
        """Whether ``$END`` is accepted here (the input so far is a complete sentence)."""
        action, goto, lhs, rlen = self._action, self._goto, self._lhs, self._len
        end, end_state = self.end, self.end_state
        while True:
            top = stack[-1]
            if top == end_state:
                return True
            a = action[top][end]
            if a == ERROR:
                return False
            if a >= 0:  # pragma: no cover - Lark never shifts $END
                return False
            r = -2 - a
            n = rlen[r]
            if n:
                stack = stack[:-n]
            stack = stack + (goto[stack[-1]][lhs[r]],)

    def feed_known(self, known: Stack, term: int) -> Stack | None | bool:
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
        if len(self._units) >= 1 << 20:  # a memo, not a store
            self._units.clear()
        self._units[key] = top
        return top

    def expected(self, stack: Stack) -> list[int]:
        """Terminals (indices) the parser would accept next from this stack."""
        row = self._action[stack[-1]]
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
