"""How two terminal regexes' languages relate: equal, subset, superset, disjoint or overlap.

A schema's string terminals (one per ``pattern``/``format``/length constraint) must form a
laminar family so that the basic lexer, which gives each lexeme to one terminal, can be
compensated in the grammar: a terminal nested in another gets the higher priority, and every
context that expects the outer language also takes the inner terminal. Two terminals that
overlap without one containing the other cannot be told apart by the lexer, and the schema is
refused. The check runs the two byte NFAs (:mod:`greatgramma.regex`) side by side, determinized
on the fly over classes of alike bytes.
"""

from __future__ import annotations

from ..lexer import _eps_closure as _closure  # the lexer's epsilon closure (no gates, no guards)
from ..regex import ByteNFA, compile_regex


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
    if not both:
        return "disjoint"
    if not a_only and not b_only:
        return "equal"
    return "subset" if not a_only else "superset" if not b_only else "overlap"
