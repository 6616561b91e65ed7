"""Indentation-sensitive grammars: Lark's ``Indenter`` postlexer, made exact for masking.

Lark's indenter turns each newline lexeme into ``_NL`` plus ``_INDENT``/``_DEDENT`` tokens by
comparing its indentation column (spaces + tab_len * tabs after its last ``\\n``) with a stack
of open levels, and drops newlines inside brackets. Here the lexer tells the column apart: the
newline terminal is split into one copy per column (:meth:`Indenter.refine_lexer`, a counter
folded into the DFA; :class:`ColumnMap` maps the split states back), and the parser runs as an
:class:`IndentedParser`, whose stacks also carry the bracket depth and the indentation levels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .codes import ANY_COLUMN, DEAD, DEPENDS, REJECTED
from .errors import GrammarError
from .lexer import LexerDFA, TerminalSpec, minimize_classes, risky_states
from .native import INDENTER_KINDS, LrTables
from .parser import LalrParser
from .postlexer import Postlexer
from .stack import Frame, Known, frames_bytes


@dataclass(frozen=True)
class Indenter(Postlexer):
    """Which terminals the indenter reads and makes (Lark's ``Indenter`` attributes).

    ``max_column``: indentation columns the engine tells apart. A newline at bracket depth 0
    whose column reaches it is refused (a stated limit, never a silent guess).
    ``line_start``: the text begins at the start of a line, so its first line's indentation is
    read as a newline's would be (as Python reads a file: an indented first line is refused).
    Lark's ``Indenter`` sees indentation only after a newline; with ``line_start`` the engine
    decides what Lark decides for ``"\n" + text``. ``python()`` sets it.
    """

    nl: str = "_NL"
    indent: str = "_INDENT"
    dedent: str = "_DEDENT"
    open: tuple[str, ...] = ("LPAR", "LSQB", "LBRACE")
    close: tuple[str, ...] = ("RPAR", "RSQB", "RBRACE")
    tab_len: int = 8
    max_column: int = 64
    line_start: bool = False

    @classmethod
    def python(cls, **overrides) -> "Indenter":
        """The preset for Python grammars (``grammars/python.lark`` and the benchmark's copy)."""
        return cls(**{"line_start": True, **overrides})

    def __post_init__(self) -> None:
        object.__setattr__(self, "open", tuple(self.open))
        object.__setattr__(self, "close", tuple(self.close))
        if not 1 <= self.max_column <= 1024:
            raise ValueError(f"Indenter.max_column must be in 1..1024, got {self.max_column}")
        if self.tab_len < 1:
            raise ValueError(f"Indenter.tab_len must be positive, got {self.tab_len}")
        if not isinstance(self.line_start, bool):
            raise TypeError(f"Indenter.line_start must be a bool, got {type(self.line_start).__name__}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def leading_bytes(self) -> bytes:
        return b"\n" if self.line_start else b""

    def made_terminals(self) -> tuple[str, ...]:
        return (self.indent, self.dedent)

    def check_terminals(self, names: list[str]) -> None:
        """GrammarError unless the grammar lexes the newline and bracket terminals the indenter reads."""
        for n in (self.nl, *self.open, *self.close):
            if n not in names:
                raise GrammarError(
                    f"the indenter needs terminal {n} but the grammar has no terminal of that name",
                    symbol=n,
                    kind="indenter",
                )

    def refine_lexer(self, delta, accept, accept_next, terminals):
        """Fold the column counter into the DFA (:func:`split_columns`); the newline terminal
        gets one copy per column, after the other terminals."""
        nl = next((i for i, t in enumerate(terminals) if t.name == self.nl), None)
        if nl is None or terminals[nl].ignored:
            raise GrammarError(
                f"the indenter's newline terminal {self.nl} is not a terminal of the grammar"
                + (" (it is %ignore'd)" if nl is not None else "")
            )
        delta, accept, accept_next = split_columns(delta, accept, accept_next, nl, len(terminals), self)
        return delta, accept, accept_next, tuple(terminals) + column_terminals(terminals, nl, self)

    def lexer_view(self, dfa: LexerDFA) -> ColumnMap:
        return ColumnMap.of(dfa, self.tab_len)

    def parser(self, lalr: LalrParser, terminal_names: list[str]) -> IndentedParser:
        return IndentedParser(lalr, self, terminal_names)


# ------------------------------------------------------------------ lexer side


def split_columns(delta, accept, accept_next, nl: int, num_terms: int, ind: Indenter):
    """Fold the column counter into the DFA; newline lexemes end as terminal ``num_terms + c``.

    c is the column (count of spaces and tab_len * tabs after the last ``\\n``), or
    ``max_column`` for "no ``\\n`` yet, or too deep". States where the count cannot matter
    merge again when the caller minimizes.
    """
    k = ind.max_column
    step = column_steps(k, ind.tab_len)
    # the counter only matters in states from which a newline lexeme can still end; elsewhere it
    # is held at k, so that e.g. the states inside a triple-quoted string are not copied per column
    counts = _newline_live(delta, accept, accept_next, nl)
    # all reachable (state, counter) pairs, breadth first from (start, no newline yet)
    index = {(0, k): 0}
    pairs = [(0, k)]
    fs, fc = np.array([0]), np.array([k])
    src_rows, src_bytes, dst_keys = [], [], []
    while len(fs):
        i, b = np.nonzero(delta[fs] != DEAD)
        ns = delta[fs[i], b].astype(np.int64)
        nc = np.where(counts[ns], step[b, fc[i]], k)
        src_rows.append(np.array([index[(s, c)] for s, c in zip(fs[i].tolist(), fc[i].tolist())], dtype=np.int64))
        src_bytes.append(b)
        keys = (ns * (k + 1) + nc).tolist()
        dst_keys.append(keys)
        fresh = []
        for key in dict.fromkeys(keys):
            pair = (key // (k + 1), key % (k + 1))
            if pair not in index:
                index[pair] = len(pairs)
                pairs.append(pair)
                fresh.append(pair)
        fs = np.array([s for s, _ in fresh], dtype=np.int64)
        fc = np.array([c for _, c in fresh], dtype=np.int64)
    rows = np.full((len(pairs), 256), DEAD, dtype=np.int32)
    for r, b, keys in zip(src_rows, src_bytes, dst_keys):
        rows[r, b] = [index[(key // (k + 1), key % (k + 1))] for key in keys]
    ps = np.array([s for s, _ in pairs], dtype=np.int64)
    pc = np.array([c for _, c in pairs], dtype=np.int64)
    acc = np.where(accept[ps] == nl, num_terms + pc, accept[ps])
    acc_next = np.where(accept_next[ps] == nl, (num_terms + pc)[:, None], accept_next[ps])
    return rows, acc.astype(np.int32), acc_next.astype(np.int32)


def _newline_live(delta, accept, accept_next, nl: int) -> np.ndarray:
    """bool[Q]: from q (q included) a state is reached where the lexeme ends as terminal ``nl``
    (at the end of input or before some byte)."""
    live = (accept == nl) | (accept_next == nl).any(axis=1)
    src, byte = np.nonzero(delta != DEAD)
    dst = delta[src, byte]
    while True:
        grown = live.copy()
        grown[src[live[dst]]] = True
        if (grown == live).all():
            return live
        live = grown


def column_terminals(terminals, nl: int, ind: Indenter) -> tuple[TerminalSpec, ...]:
    """The newline terminal's copies, one per column (the last: no newline yet, or too deep)."""
    return tuple(dataclasses.replace(terminals[nl], column=c) for c in range(ind.max_column + 1))


@dataclass(frozen=True, eq=False)
class ColumnMap:
    """For a lexer whose newline terminal is split by indentation column (an indenter).

    The same DFA with the counter forgotten (``base``), and how the column-split states map
    to (base state, column) and back: token walks run once on the base DFA and are then
    specialised to each column (``TokenTransducer``). Made by :meth:`Indenter.lexer_view`.
    """

    base_delta: np.ndarray  # int32[B, 256]
    base_accept_next: np.ndarray  # int32[B, 256], the newline as its base terminal
    base_risky: np.ndarray  # bool[B]
    state_base: np.ndarray  # int64[Q]: base state of each state
    state_column: np.ndarray  # int64[Q]: a column the state holds (any, where it does not matter)
    state_of: np.ndarray  # int64[B, K + 1]: state for (base state, column), -1 if unreachable
    nl: int  # base terminal id of the newline
    first: int  # terminal id of column 0; column K (= max_column) means none or too deep
    max_column: int
    tab_len: int

    @classmethod
    def of(cls, lexer: LexerDFA, tab: int) -> ColumnMap:
        terms = lexer.terminals
        first = next(i for i, t in enumerate(terms) if t.column is not None)
        k = len(terms) - 1 - first
        nl = next(i for i, t in enumerate(terms) if t.name == terms[first].name and t.column is None)
        copies = lambda a: np.where(a >= first, nl, a)  # noqa: E731
        delta, acc_next = lexer.delta, lexer.accept_next
        _, cols, inv = np.unique(np.concatenate([delta, acc_next]).T, axis=0, return_index=True, return_inverse=True)
        t, _, n, labels = minimize_classes(delta[:, cols], copies(lexer.accept), copies(acc_next)[:, cols])
        inv = inv.reshape(-1)
        base_delta, base_next = t[:, inv], n[:, inv]
        q = delta.shape[0]
        state_of = np.full((len(base_delta), k + 1), -1, dtype=np.int64)
        state_column = np.full(q, -1, dtype=np.int64)
        step = column_steps(k, tab)
        seen = np.zeros((q, k + 1), dtype=bool)
        seen[0, k] = True
        fs, fc = np.array([0]), np.array([k])
        while len(fs):
            state_of[labels[fs], fc] = fs
            unset = state_column[fs] < 0
            state_column[fs[unset]] = fc[unset]
            i, b = np.nonzero(delta[fs] != DEAD)
            ns, nc = delta[fs[i], b].astype(np.int64), step[b, fc[i]]
            new = ~seen[ns, nc]
            ns, nc = ns[new], nc[new]
            keys = np.unique(ns * (k + 1) + nc)
            fs, fc = keys // (k + 1), keys % (k + 1)
            seen[fs, fc] = True
        return cls(
            base_delta.astype(np.int32),
            base_next.astype(np.int32),
            risky_states(base_delta, base_next),
            labels.astype(np.int64),
            state_column,
            state_of,
            nl,
            first,
            k,
            tab,
        )



def column_steps(k: int, tab: int) -> np.ndarray:
    """int64[256, k + 1]: the indentation counter after a byte (k: no newline yet, or too deep)."""
    cols = np.arange(k + 1)
    step = np.tile(cols, (256, 1))
    step[ord("\n")] = 0
    step[ord(" ")] = np.where(cols < k, np.minimum(cols + 1, k), k)
    step[ord("\t")] = np.where(cols < k, np.minimum(cols + tab, k), k)
    return step




# ------------------------------------------------------------------ parser side


class IndentedStack(NamedTuple):
    """A stack of :class:`IndentedParser`: bracket depth, open indentation levels (ascending,
    0 first; fewer than ``max_column`` + 1 of them), and the LALR stack (shared frames)."""

    brackets: int
    levels: tuple[int, ...]
    lalr: Frame

    @property
    def depth(self) -> int:
        """How many LALR states the stack holds."""
        return self.lalr.depth


def _stack(brackets: int, levels: tuple[int, ...], lalr: Frame) -> IndentedStack:
    return tuple.__new__(IndentedStack, (brackets, levels, lalr))


class IndentedParser:
    """The LALR parser behind Lark's indenter: same interface as :class:`~greatgramma.parser.LalrParser`.

    A live stack is an :class:`IndentedStack`. A known segment (:meth:`feed_known`) is
    ``(~bracket depth, top LALR states...)``: the levels stay below, so a newline at a column
    depends on them, while brackets and newlines inside brackets are decided on the segment.
    """

    def __init__(self, table: LalrParser, ind: Indenter, names: list[str]):
        ind.check_terminals(names)
        index = {n: i for i, n in enumerate(names)}
        self.table = table
        self.indenter = ind
        self.nl = index[ind.nl]
        self.first_column = len(names)  # lexer terminal ids of the newline copies
        self.bad_column = len(names) + ind.max_column
        declared = table.table.declared
        self.indent, self.dedent = declared[ind.indent], declared[ind.dedent]
        self.opens = frozenset(index[n] for n in ind.open)
        self.closes = frozenset(index[n] for n in ind.close)
        self.special = self.opens | self.closes | set(range(self.first_column, self.bad_column + 1)) | {ANY_COLUMN}
        self.start_state, self.end_state = table.start_state, table.end_state
        self.num_states = table.num_states
        self.end = self.bad_column + 1
        self._initial = _stack(0, (0,), table.initial_stack())

    def initial_stack(self) -> IndentedStack:
        return self._initial

    def native_tables(self) -> LrTables:
        """:meth:`LalrParser.native_tables`, with each lexer terminal's kind and what a newline becomes."""
        kinds = np.zeros(self.bad_column + 1, dtype=np.uint8)
        kinds[list(self.opens)] = INDENTER_KINDS["open"]
        kinds[list(self.closes)] = INDENTER_KINDS["close"]
        kinds[self.first_column : self.bad_column] = INDENTER_KINDS["column"]
        kinds[self.bad_column] = INDENTER_KINDS["bad_column"]
        return self.table.native_tables()._replace(
            kinds=kinds, ind_nl=self.nl, indent=self.indent, dedent=self.dedent, first_column=self.first_column
        )

    def _bracket(self, depth: int, term: int) -> int | None:
        """Bracket depth after an open or close bracket; None for a close with none open."""
        if term in self.opens:
            return depth + 1
        return depth - 1 if depth > 0 else None

    def feed(self, stack: IndentedStack, term: int) -> IndentedStack | None:
        table = self.table
        if term not in self.special:
            lalr = table.feed(stack.lalr, term)
            return None if lalr is None else _stack(stack.brackets, stack.levels, lalr)
        depth = stack.brackets
        if term == ANY_COLUMN:  # the same column as the open block always fits when a newline does
            return stack if depth > 0 or table.feed(stack.lalr, self.nl) is not None else None
        if term in self.opens or term in self.closes:
            depth = self._bracket(depth, term)
            lalr = None if depth is None else table.feed(stack.lalr, term)
            return None if lalr is None else _stack(depth, stack.levels, lalr)
        if depth > 0:  # a newline inside brackets is dropped
            return stack
        if term == self.bad_column:
            return None
        return self._newline(stack, term - self.first_column)

    def _newline(self, stack: IndentedStack, column: int) -> IndentedStack | None:
        """A newline at ``column`` outside brackets: ``_NL``, then an indent or dedents."""
        table, levels = self.table, stack.levels
        lalr = table.feed(stack.lalr, self.nl)
        if lalr is None:
            return None
        if column > levels[-1]:
            levels += (column,)
            lalr = table.feed(lalr, self.indent)
        else:
            while column < levels[-1]:
                levels = levels[:-1]
                lalr = table.feed(lalr, self.dedent)
                if lalr is None:
                    return None
            if column != levels[-1]:
                return None
        return None if lalr is None else _stack(0, levels, lalr)

    def cut(self, stack: IndentedStack, depth: int) -> tuple[tuple, Known]:
        """(below, known) as :meth:`LalrParser.cut`; the known part keeps the bracket depth (so
        brackets and newlines inside brackets are decided there), the levels stay below."""
        below, known = self.table.cut(stack.lalr, depth)
        return (stack.levels, below), (~stack.brackets,) + known

    def join(self, below: tuple, known: Known) -> IndentedStack:
        levels, lalr = below
        return _stack(~known[0], levels, self.table.join(lalr, known[1:]))

    def recut(self, below: tuple, known: Known, depth: int) -> tuple[tuple, Known]:
        """:meth:`LalrParser.recut` with the bracket depth and levels carried along."""
        levels, lalr = below
        lalr, top = self.table.recut(lalr, known[1:], depth)
        return (levels, lalr), known[:1] + top

    def feed_on(self, below: tuple, known: Known, term: int) -> tuple[tuple, Known] | None:
        """:meth:`LalrParser.feed_on`; brackets and newlines go through :meth:`feed`."""
        if term not in self.special:
            got = self.table.feed_on(below[1], known[1:], term)
            return None if got is None else ((below[0], got[0]), known[:1] + got[1])
        stack = self.feed(self.join(below, known), term)
        return None if stack is None else ((stack.levels, stack.lalr), (~stack.brackets,))

    @staticmethod
    def cut_known(known: Known, depth: int) -> tuple[Known, Known]:
        """:meth:`cut` on a known segment (its first entry is the bracket depth)."""
        if len(known) - 1 <= depth:
            return (), known
        return known[1:-depth], known[:1] + known[-depth:]

    @staticmethod
    def join_known(below: Known, known: Known) -> Known:
        return known[:1] + below + known[1:]

    def feed_known(self, known: Known, term: int):
        """:meth:`LalrParser.feed_known` on ``(~bracket depth, top LALR states...)``.

        A newline at a given column needs the indentation levels, which lie below: DEPENDS,
        unless inside brackets (then it is dropped).
        """
        table = self.table
        if term not in self.special:
            r = table.feed_known(known[1:], term)
            return r if r is DEPENDS or r is REJECTED else known[:1] + r
        depth = ~known[0]
        if term in self.opens or term in self.closes:
            depth = self._bracket(depth, term)
            r = REJECTED if depth is None else table.feed_known(known[1:], term)
            return r if r is DEPENDS or r is REJECTED else (~depth,) + r
        if depth > 0:
            return known
        if term == ANY_COLUMN:
            r = table.feed_known(known[1:], self.nl)
            return r if r is DEPENDS or r is REJECTED else known
        return REJECTED if term == self.bad_column else DEPENDS

    def accepts_end(self, stack: IndentedStack) -> bool:
        lalr: Frame | None = stack.lalr
        for _ in range(len(stack.levels) - 1):  # one dedent per open level above column 0
            lalr = self.table.feed(lalr, self.dedent)
            if lalr is None:
                return False
        return self.table.accepts_end(lalr)

    def expected(self, stack: IndentedStack) -> list[int]:
        """Terminal ids (newline copies by column) the parser would accept next, and ``end``."""
        out = [t for t in range(self.bad_column + 1) if t != self.nl and self.feed(stack, t) is not None]
        return out + ([self.end] if self.accepts_end(stack) else [])

    @staticmethod
    def stack_bytes(stack: IndentedStack, held: dict | None = None) -> int:
        """What a cache entry keyed by ``stack`` is charged for it (see :meth:`LalrParser.stack_bytes`)."""
        return frames_bytes(stack.lalr, held) + 8 * len(stack.levels) + 200
