"""The compiled loops (``_native.c``): token strings run through the lexer DFA byte by byte,
which numpy can only do one trie level at a time (the subtree walks, the suffix rows' lexemes
and their interning), and the regex terminals' subset construction and the lexer DFA's product
construction and minimization, which Python does a state at a time; and the walk of the outcome
rows' prefix tree on a parser stack (the context-dependent half of every mask), which Python
did with cached splits at ~5x the cost. Every loop releases the GIL.

The extension is optional: where it is not built (no C compiler at install time) or
``GG_NATIVE=0`` is set, :data:`ext` is None and the callers run their numpy loops, which give
the same results (``tests/test_native.py`` compares them).
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

try:
    from . import _native as _extension
except ImportError:  # not built: the numpy loops run instead
    _extension = None

ext = None if os.environ.get("GG_NATIVE", "1") == "0" else _extension  # the loops in use: None for numpy


def loops() -> str:
    """Which loops run: "compiled" (``_native.c``), or "numpy" and why."""
    if ext is not None:
        return "compiled"
    return "numpy (GG_NATIVE=0)" if _extension is not None else "numpy (greatgramma._native was not built)"


# walk's outcome codes (as in _native.c)
ONE, DROP, BREAK, FALLBACK, END = 0, 1, 2, 3, 4


class DFAArrays(NamedTuple):
    """A DFA's tables as the extension reads them (contiguous, fixed item sizes)."""

    delta: np.ndarray  # int32[Q * 256]
    accept_next: np.ndarray  # int32[Q * 256]
    risky: np.ndarray  # uint8[Q]

    @classmethod
    def of(cls, delta: np.ndarray, accept_next: np.ndarray, risky: np.ndarray) -> DFAArrays:
        return cls(
            np.ascontiguousarray(delta, dtype=np.int32).ravel(),
            np.ascontiguousarray(accept_next, dtype=np.int32).ravel(),
            np.ascontiguousarray(risky, dtype=np.uint8),
        )


class StringWalk(NamedTuple):
    """Per string of the walked ranges, in order: the outcome code; the terminal (BREAK); the
    byte offset the rest starts at (BREAK) or the state it ends in (END); for END where the
    lexeme last could end (offset, terminal; -1: the entry fallback is held, -2: nowhere); the
    column where the first lexeme or the string ends and, for END, at that last possible end
    (``subtrees.BaseWalk.where``)."""

    code: np.ndarray
    term: np.ndarray
    at: np.ndarray
    la_off: np.ndarray
    la_term: np.ndarray
    where: np.ndarray
    la_where: np.ndarray


def walk(dfa: DFAArrays, flat: np.ndarray, offsets: np.ndarray, lcp: np.ndarray,
         lo: np.ndarray, hi: np.ndarray, state: np.ndarray, la_off: np.ndarray, tab: int) -> StringWalk:
    """Each string of each range [lo[i], hi[i]) (a trie subtree: strings sharing a first byte),
    read from DFA ``state[i]`` after that byte with ``la_off[i]`` (-1: holding the fallback it
    entered with, -2: none), until its first lexeme ends or the string does (``tab``: the
    columns a tab counts)."""
    i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)  # noqa: E731
    lo, hi = i64(lo), i64(hi)
    total = int((hi - lo).sum())
    out = StringWalk(np.empty(total, np.int8), *(np.empty(total, np.int64) for _ in range(6)))
    ext.walk(*dfa, flat, offsets, lcp, lo, hi, i64(state), i64(la_off), int(tab), *out)
    return out


class KeptWalk(NamedTuple):
    """``walk``'s outcomes as subtree results (``subtrees.Walk`` and each string's pair), the dead
    strings left out. For the caller to finish (index into the results): ``fix_*``, the ends
    that hold a fallback inside the string (offset, terminal), to make extended states;
    ``unknown``, the breaks whose suffix row was not computed (their rest is its flat position).
    ``held``: per pair, whether some result of it is held (FALLBACK or END_HELD)."""

    strings: np.ndarray
    first: np.ndarray
    rest: np.ndarray
    origin: np.ndarray
    fix_at: np.ndarray
    fix_off: np.ndarray
    fix_term: np.ndarray
    unknown: np.ndarray
    held: np.ndarray


def walk_kept(dfa: DFAArrays, flat: np.ndarray, offsets: np.ndarray, lcp: np.ndarray, lo: np.ndarray,
              hi: np.ndarray, state: np.ndarray, la_off: np.ndarray, suffix: np.ndarray, ignored: np.ndarray) -> KeptWalk:
    """As ``walk`` without columns, each break's rest read off the suffix rows (``suffix``, int32)
    and each first terminal ``ignored`` made NO_TERM."""
    i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)  # noqa: E731
    lo, hi = i64(lo), i64(hi)
    out = [np.empty(int((hi - lo).sum()), np.int64) for _ in range(8)]
    held = np.zeros(len(lo), np.uint8)
    kept, fixes, unknowns = ext.walk_kept(*dfa, flat, offsets, lcp, lo, hi, i64(state), i64(la_off), suffix,
                                          np.ascontiguousarray(ignored, dtype=np.uint8), *out, held)
    return KeptWalk(*(a[:kept] for a in out[:4]), *(a[:fixes] for a in out[4:7]), out[7][:unknowns], held.view(bool))


def resolve_held(strings: np.ndarray, first: np.ndarray, rest: np.ndarray, part: np.ndarray, before: np.ndarray,
                 own: bool, offsets: np.ndarray, suffix: np.ndarray, ignored: np.ndarray) -> tuple[np.ndarray, ...]:
    """Held subtree results resolved for an entering state, ``first`` and ``rest`` (int64) in place
    (``subtrees.SubtreeWalks.resolve_entered``: ``before[part]`` accepted just before the part's byte,
    ``own``: the state has a fallback of its own): returns (keep, the breaks whose suffix row is not
    computed yet (rest: its flat position), the ends that hold a fallback), as indices."""
    n = len(strings)
    keep, unknown, holding = np.empty(n, np.uint8), np.empty(n, np.int64), np.empty(n, np.int64)
    unknowns, holdings = ext.resolve_held(strings, first, rest, part, np.ascontiguousarray(before, dtype=np.int64),
                                          bool(own), offsets, suffix, np.ascontiguousarray(ignored, dtype=np.uint8),
                                          keep, unknown, holding)
    return keep.view(bool), unknown[:unknowns], holding[:holdings]


def block_codes(first: np.ndarray, rest: np.ndarray, seg: np.ndarray, strings: np.ndarray, base: np.ndarray,
                width: int, code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The status codes of subtree results (``blocks.StatusLayout`` of ``width``), written into
    ``code`` (int32) at ``base[seg] + strings``; returns per segment the first kinds met
    (bool[nseg, width], index first - NO_TERM) and whether some result is held, and the
    (segment, end state) pairs met, once each."""
    i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)  # noqa: E731
    nseg, n = len(base), len(first)
    firsts, held = np.empty((nseg, width), np.uint8), np.empty(nseg, np.uint8)
    ends_seg, ends_state = np.empty(n, np.int64), np.empty(n, np.int64)
    ends = ext.block_codes(i64(first), i64(rest), i64(seg), i64(strings), i64(base), int(width), code, firsts, held,
                           ends_seg, ends_state)
    return firsts.view(bool), held.view(bool), ends_seg[:ends], ends_state[:ends]


def suffix_lexemes(dfa: DFAArrays, flat: np.ndarray, stop: np.ndarray, memo: np.ndarray, todo: np.ndarray,
                   slots: list) -> tuple[np.ndarray, ...]:
    """The first lexemes from the start state at flat positions ``todo`` whose suffix row is not
    known (``memo`` UNKNOWN), and at each position a lexeme break there continues at, recursively
    (``stop``: per flat position, where its string ends). Per position met, int32: (the position;
    the break terminal, END or DEAD; the position the rest starts at, or the end state; for END,
    the flat position where the lexeme last could end, -1: none, and its terminal; the depth: 0
    where the rest is known, else 1 + that of the position the rest starts at). ``slots``: a pool
    of zeroed int32 arrays (one entry per flat position and one more) to borrow from, or add to."""
    todo = np.ascontiguousarray(todo, dtype=np.int64)
    out = [np.empty(len(flat), dtype=np.int32) for _ in range(6)]  # (each position is met once at most)
    try:
        slot = slots.pop()
    except IndexError:
        slot = np.zeros(len(flat) + 1, dtype=np.int32)
    try:
        count = ext.suffix_lexemes(*dfa, flat, stop, memo, todo, slot, *out)
    finally:
        slots.append(slot)  # (left all zero, or untouched where an argument was refused)
    return tuple(a[:count] for a in out)


def intern_rows(term: np.ndarray, nxt: np.ndarray, depth: np.ndarray, at: np.ndarray, memo: np.ndarray,
                ignored: np.ndarray, rows_term: np.ndarray, rows_next: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Write the suffix rows of ``suffix_lexemes``' positions ``at`` into ``memo`` (int32), shallowest
    first (``nxt``: for END the end state, else the position the rest starts at; ``ignored`` per
    terminal): rows interned among the existing ones (``rows_term``/``rows_next``) or new; returns
    the new rows' (terms, nexts), numbered on from the existing ones."""
    i32 = lambda x: np.ascontiguousarray(x, dtype=np.int32)  # noqa: E731
    i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)  # noqa: E731
    got = ext.intern_rows(i32(term), i32(nxt), i32(depth), i32(at), memo, np.ascontiguousarray(ignored, dtype=np.uint8),
                          i64(rows_term), i64(rows_next))
    return tuple(np.frombuffer(b, dtype=np.int64) for b in got)


def product(nclass: int, base: np.ndarray, move_ptr: np.ndarray, move_class: np.ndarray, move_to: np.ndarray,
            accepting: np.ndarray, before_id: np.ndarray, before: np.ndarray, rank: np.ndarray, max_states: int,
            seconds: float) -> tuple:
    """The product of the terminals' DFAs, as ``lexer._product`` makes it (global states: terminal
    t's state s is ``base[t] + s``; ``move_*``: their moves by class, CSR; ``before_id``: -1, or the
    row of ``before`` (bool[256] per row, flat) of bytes a state accepts before; ``rank``: each
    terminal's tie rank): (code, states, rows, accept, accept_next), code 1 past ``max_states``,
    2 past ``seconds`` (< 0: none), else 0 with the tables as int32 bytes."""
    return ext.product(nclass, base, move_ptr, move_class, move_to, accepting, before_id, before, rank,
                       max_states, seconds)


def subsets(nclass: int, eps_ptr: np.ndarray, eps_to: np.ndarray, edge_ptr: np.ndarray, edge_to: np.ndarray,
            cls_ptr: np.ndarray, cls: np.ndarray, start: int, final: int, max_states: int, seconds: float) -> tuple:
    """The subset construction of a plain NFA, as ``lexer._terminal_dfa`` makes it (epsilon edges
    and byte edges as CSR, int64 pointers and int32 targets; each byte edge's classes, CSR):
    (code, states, rows, accepting), code 1 past ``max_states``, 2 past ``seconds`` (< 0: none),
    else 0 with the rows (int32 per class) and whether each state holds ``final`` (uint8) as bytes."""
    return ext.subsets(nclass, eps_ptr, eps_to, edge_ptr, edge_to, cls_ptr, cls, start, final, max_states, seconds)


def refine(trans: np.ndarray, labels: np.ndarray) -> int:
    """The coarsest partition of the states of DFA ``trans`` (int32[n, k], -1 dead) that refines
    ``labels`` and that its moves respect (Hopcroft's algorithm; Moore's in numpy gives the same),
    written into ``labels`` (int64) as blocks numbered in order of first appearance; returns the
    number of blocks."""
    return ext.refine(np.ascontiguousarray(trans, dtype=np.int32), trans.shape[1], labels)


def utf8_positions(delta: np.ndarray, table: np.ndarray, pos: np.ndarray, mixed: np.ndarray) -> None:
    """``lexer.utf8_valid``'s breadth-first rounds: the UTF-8 decoder state (``table``: int8
    [decoder state, byte]) each state of ``delta`` is reached in, into ``pos`` (int64; set for the
    start, -2 elsewhere) and whether arrivals disagree, into ``mixed`` (bool), in place."""
    ext.utf8_positions(np.ascontiguousarray(delta, dtype=np.int32), np.ascontiguousarray(table, dtype=np.int8),
                       pos, mixed.view(np.uint8))


def closure(src: np.ndarray, dst: np.ndarray, bits: np.ndarray) -> None:
    """Each state's row of ``bits`` (uint8[Q, W], changed in place) OR-ed with the rows of the
    states its edges ``src -> dst`` reach, to the fixpoint."""
    i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)  # noqa: E731
    ext.closure(i64(src), i64(dst), bits)


def gather_bits(flags: np.ndarray, code: np.ndarray) -> np.ndarray:
    """uint32 words, bit t (low bit first) set iff ``flags[code[t]]`` (``flags`` bool, ``code``
    int32 within it): ``views.pack(flags[code])`` in one pass."""
    words = np.empty((len(code) + 31) // 32, dtype=np.uint32)
    ext.gather_bits(flags.view(np.uint8), code, words)
    return words


class LrTables(NamedTuple):
    """A parser's tables as ``viable_rows`` reads them: LALR actions (``width`` columns) and gotos
    (``ngoto`` columns) flat, each rule's left side and length; a semicolon inserter's terminals
    (``nl`` -1: none) with, per state, whether it makes the newline a ``semicolon``; an
    indenter's kind of each lexer terminal (``INDENTER_KINDS``; empty: none) and the LALR
    terminals a newline outside brackets becomes."""

    action: np.ndarray  # int32[S * width]
    width: int
    goto: np.ndarray  # int32[S * ngoto]
    ngoto: int
    lhs: np.ndarray  # int32[R]
    rlen: np.ndarray  # int32[R]
    inserts: np.ndarray  # uint8[S], or empty without an inserter
    nl: int = -1
    semicolon: int = -1
    kinds: np.ndarray = np.zeros(0, dtype=np.uint8)  # uint8[lexer terminals], or empty without an indenter
    ind_nl: int = -1
    indent: int = -1
    dedent: int = -1
    first_column: int = -1  # the lexer terminal of a newline at column 0 (column c: first_column + c)


# an indenter's lexer terminals, as LrTables.kinds gives them
INDENTER_KINDS = {"plain": 0, "open": 1, "close": 2, "column": 3, "bad_column": 4}
_NO_LEVELS = np.zeros(0, dtype=np.int32)


class TrieArrays(NamedTuple):
    """The outcome rows' prefix tree (``sequences.SequenceTrie``) flat: per node its edges
    ``edge_ptr[n]:edge_ptr[n + 1]`` (terminal, child or -1, rows ``rows[rows_ptr[e]:rows_ptr[e + 1]]``)
    and its free rows ``free_rows[free_ptr[n]:free_ptr[n + 1]]``."""

    edge_ptr: np.ndarray  # int64[nodes + 1]
    edge_term: np.ndarray  # int32[E]
    edge_child: np.ndarray  # int32[E]
    rows_ptr: np.ndarray  # int64[E + 1]
    rows: np.ndarray  # int64
    free_ptr: np.ndarray  # int64[nodes + 1]
    free_rows: np.ndarray  # int64


def viable_rows(tables: LrTables, trie: TrieArrays, stack: np.ndarray, partial: bool, ok: np.ndarray,
                brackets: int = 0, levels: np.ndarray = _NO_LEVELS) -> bool:  # fmt: skip
    """Mark in ``ok`` (uint8[rows asked for]) the outcome rows viable from the parser stack
    ``stack`` (int32 states, bottom first): ``split.ViableRows.of``. With ``partial`` the stack
    is only its top part; True means a reduction popped below it (call again with the whole).
    With an indenter's tables, ``brackets`` and ``levels`` (int32) are the rest of the stack."""
    t = tables
    return bool(ext.viable_rows(t.action, t.width, t.goto, t.ngoto, t.lhs, t.rlen, t.inserts, t.nl, t.semicolon,
                                t.kinds, t.ind_nl, t.indent, t.dedent, t.first_column,
                                *trie, stack, bool(partial), ok, brackets, levels))
