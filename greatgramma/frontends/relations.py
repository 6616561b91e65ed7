"""How two terminal regexes' languages relate: equal, subset, superset, disjoint or overlap.

A schema's string terminals (one per ``pattern``/``format``/length constraint) must form a
laminar family so that the basic lexer, which gives each lexeme to one terminal, can be
compensated in the grammar: a terminal nested in another gets the higher priority, and every
context that expects the outer language also takes the inner terminal. Two terminals that
overlap without one containing the other cannot be told apart by the lexer, and the schema is
refused. The check runs the two terminals' DFAs (:func:`greatgramma.lexer.regex_dfa`, kept per
pattern, so the lexer reuses them) side by side over classes of alike bytes.
"""

from __future__ import annotations

import numpy as np

from ..errors import ResourceLimitError
from ..lexer import _eps_closure as _closure  # the lexer's epsilon closure (no gates, no guards)
from ..lexer import regex_dfa  # a terminal's DFA, kept per pattern
from ..regex import ByteNFA, compile_regex

_MAX_DFA_STATES = 50_000  # compile's default: the DFAs are kept per pattern for the lexer to reuse


def _byte_classes(*nfas: ByteNFA) -> list[int]:
    """One representative byte per class of bytes that every edge treats alike."""
    masks = {m for nfa in nfas for edges in nfa.edges for m, _ in edges}
    reps: dict[tuple, int] = {}
    for b in range(256):
        reps.setdefault(tuple(m >> b & 1 for m in masks), b)
    return list(reps.values())


def _step(nfa: ByteNFA, states: frozenset[int], b: int, memo: dict) -> frozenset[int]:
    key = (states, b)
    got = memo.get(key)
    if got is None:
        got = _closure(nfa, [t for s in states for m, t in nfa.edges[s] if m >> b & 1])
        memo[key] = got
    return got


def relation(regex_a: str, regex_b: str, *, max_pairs: int = 20_000) -> str:
    """``"equal"``, ``"subset"`` (a within b), ``"superset"``, ``"disjoint"`` or ``"overlap"``."""
    try:
        a, b = regex_dfa("A", regex_a, _MAX_DFA_STATES), regex_dfa("B", regex_b, _MAX_DFA_STATES)
    except ResourceLimitError:
        return "overlap"  # too large to decide: treated as the case that is refused
    if any(x is not None for x in (*a.before, *b.before)):  # a lookahead at the end: run the NFAs
        return _relation_nfa(regex_a, regex_b, max_pairs)
    # the two DFAs side by side, a breadth-first round at a time; a pair is (state of a) * nb + state of b,
    # with each DFA's extra last state standing for dead
    ta, tb = (np.vstack([d.trans, np.full((1, d.trans.shape[1]), -1)]).astype(np.int64) for d in (a, b))
    na, nb = len(ta), len(tb)
    ta[ta < 0], tb[tb < 0] = na - 1, nb - 1
    acc_a, acc_b = np.append(np.array(a.accepting, dtype=bool), False), np.append(np.array(b.accepting, dtype=bool), False)
    joint = np.unique(a.class_of_byte.astype(np.int64) * tb.shape[1] + b.class_of_byte)
    ka, kb = np.divmod(joint, tb.shape[1])
    dead = na * nb - 1
    seen = frontier = np.zeros(1, dtype=np.int64)
    both = a_only = b_only = False
    while len(frontier):
        fa, fb = np.divmod(frontier, nb)
        in_a, in_b = acc_a[fa], acc_b[fb]
        both |= bool((in_a & in_b).any())
        a_only |= bool((in_a & ~in_b).any())
        b_only |= bool((in_b & ~in_a).any())
        if both and a_only and b_only:
            return "overlap"
        nxt = np.unique(ta[fa][:, ka] * nb + tb[fb][:, kb])
        frontier = nxt[(nxt != dead) & ~np.isin(nxt, seen)]
        seen = np.concatenate([seen, frontier])
        if len(seen) > max_pairs:
            return "overlap"  # too large to decide: treated as the case that is refused
    return _verdict(both, a_only, b_only)


def _verdict(both: bool, a_only: bool, b_only: bool) -> str:
    if not both:
        return "disjoint"
    if not a_only and not b_only:
        return "equal"
    return "subset" if not a_only else "superset" if not b_only else "overlap"


def _relation_nfa(regex_a: str, regex_b: str, max_pairs: int) -> str:
    """``relation`` on the byte NFAs, determinized on the fly (patterns with a lookahead at their end)."""
    a, b = compile_regex("A", regex_a), compile_regex("B", regex_b)
    classes = _byte_classes(a, b)
    start = (_closure(a, [a.start]), _closure(b, [b.start]))
    seen, stack = {start}, [start]
    both = a_only = b_only = False
    memo_a: dict = {}
    memo_b: dict = {}
    while stack:
        sa, sb = stack.pop()
        in_a, in_b = a.final in sa, b.final in sb
        both |= in_a and in_b
        a_only |= in_a and not in_b
        b_only |= in_b and not in_a
        if both and a_only and b_only:
            return "overlap"
        for byte in classes:
            pair = (_step(a, sa, byte, memo_a), _step(b, sb, byte, memo_b))
            if (pair[0] or pair[1]) and pair not in seen:
                if len(seen) >= max_pairs:
                    return "overlap"  # too large to decide: treated as the case that is refused
                seen.add(pair)
                stack.append(pair)
    return _verdict(both, a_only, b_only)
