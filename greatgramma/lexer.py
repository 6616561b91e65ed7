"""The grammar's terminals as one minimal byte-level DFA whose accepting states name the winning terminal.

Paper section 3.1: the lexing automaton. The lexing transducer that runs on it (maximal munch,
one byte of lookahead) is :meth:`LexerDFA.feed`: when a byte has no live transition, the
current lexeme ends (it must be accepting) and the byte starts the next one from ``start``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .errors import GrammarError, ResourceLimitError, UnsupportedRegexError
from .regex import ByteNFA, compile_regex

DEAD = -1


@dataclass(frozen=True)
class TerminalSpec:
    """One terminal as Lark resolved it."""

    name: str
    pattern: str  # Python regex source
    is_string: bool  # a string literal (wins ties against a regex of equal priority)
    priority: int
    max_width: int
    value_len: int
    ignored: bool

    @property
    def display(self) -> str:
        """How messages name the terminal: its literal text, its name, or an anonymous one's regex."""
        if self.is_string:
            return '"' + re.sub(r"\\(.)", r"\1", self.pattern) + '"'
        return f"/{self.pattern}/" if self.name.startswith("__") else self.name

    def tie_key(self) -> tuple:
        """Lark's basic lexer order: priority, then string over regex, then longest pattern, then name."""
        return (-self.priority, 0 if self.is_string else 1, -self.max_width, -self.value_len, self.name)


@dataclass(frozen=True, eq=False)
class LexerDFA:
    """Minimal DFA over bytes for the union of all terminals; state 0 is the start."""

    delta: np.ndarray  # int32[Q, 256], DEAD where no live transition
    accept: np.ndarray  # int32[Q], terminal the lexeme ends as at the end of input, or DEAD
    prod: np.ndarray  # bool[Q, T], terminals whose lexeme can still be completed from the state
    terminals: tuple[TerminalSpec, ...]
    accept_next: np.ndarray  # int32[Q, 256], terminal the lexeme ends as when byte b follows (lookahead)

    @property
    def num_states(self) -> int:
        return int(self.delta.shape[0])

    def feed(self, state: int, data: bytes) -> tuple[list[int], int] | None:
        """Run the lexing transducer: (terminals emitted, end state), or None at a dead end."""
        delta, accept_next = self.delta, self.accept_next
        out: list[int] = []
        for b in data:
            nxt = delta[state, b]
            if nxt == DEAD:
                term = accept_next[state, b]
                if term == DEAD:
                    return None
                out.append(int(term))
                nxt = delta[0, b]
                if nxt == DEAD:
                    return None
            state = int(nxt)
        return out, state


# ---------------------------------------------------------------- construction


def _byte_classes(nfas: list[ByteNFA]) -> tuple[np.ndarray, list[int]]:
    """Partition 0..255 so that every NFA edge accepts whole classes and every lookahead byte is alone."""
    masks = {m for nfa in nfas for edges in nfa.edges for m, _ in edges}
    masks |= {1 << b for nfa in nfas for g in nfa.guards for b in g}
    parts = [(1 << 256) - 1]
    for m in masks:
        nxt = []
        for p in parts:
            a, b = p & m, p & ~m
            nxt.extend(x for x in (a, b) if x)
        parts = nxt
    class_of_byte = np.zeros(256, dtype=np.int32)
    for c, p in enumerate(parts):
        for b in range(256):
            if p >> b & 1:
                class_of_byte[b] = c
    return class_of_byte, parts


Thread = tuple[int, frozenset]  # (NFA state, pending lookahead guards as (guard, bytes matched))


def _state_closure(nfa: ByteNFA, s: int, memo: dict) -> tuple[tuple[int, frozenset], ...]:
    """States reachable from s by epsilon moves, each with the lookahead guards started on the way."""
    got = memo.get(s)
    if got is None:
        seen = {(s, frozenset())}
        stack = [(s, frozenset())]
        while stack:
            u, added = stack.pop()
            nxt = [(t, added) for t in nfa.eps[u]]
            nxt += [(t, added | {(g, 0)}) for t, g in nfa.guard_eps.get(u, ())]
            for th in nxt:
                if th not in seen:
                    seen.add(th)
                    stack.append(th)
        got = memo[s] = tuple(seen)
    return got


def _closure(nfa: ByteNFA, threads, memo: dict) -> frozenset[Thread]:
    out = set()
    for s, guards in threads:
        for t, added in _state_closure(nfa, s, memo):
            out.add((t, guards | added if added else guards))
    return frozenset(out)


def _accepting(nfa: ByteNFA, threads: frozenset[Thread], name: str) -> tuple[bool, np.ndarray | None]:
    """(accepted at the end of input, bytes after which it is accepted — None when all of them)."""
    finals = [g for s, g in threads if s == nfa.final]
    if not finals:
        return False, None
    if any(not g for g in finals):
        return True, None
    ok = np.zeros(256, dtype=bool)
    for guards in finals:
        allowed = np.ones(256, dtype=bool)
        for g, k in guards:
            lit = nfa.guards[g]
            if len(lit) - k > 1:
                raise UnsupportedRegexError(name, "a negative lookahead that looks more than one byte past the lexeme")
            allowed[lit[k]] = False
        ok |= allowed
    return True, ok


def _terminal_dfa(nfa: ByteNFA, parts: list[int], max_states: int, name: str):
    """Subset construction for one terminal, over threads that carry their pending lookaheads.

    Returns (transition rows over byte classes, accepted-at-end flags, accepted-before-byte
    arrays or None, whether the start state is live), trimmed to live states.
    """
    reps = [(p & -p).bit_length() - 1 for p in parts]
    class_cache: dict[int, list[int]] = {}

    def classes(mask: int) -> list[int]:
        got = class_cache.get(mask)
        if got is None:
            got = class_cache[mask] = [c for c, r in enumerate(reps) if mask >> r & 1]
        return got

    memo: dict = {}
    start = _closure(nfa, [(nfa.start, frozenset())], memo)
    index = {start: 0}
    sets = [start]
    trans: list[list[int]] = []
    i = 0
    while i < len(sets):
        cur = sets[i]
        buckets: dict[int, set[Thread]] = {}
        for s, guards in cur:
            for mask, t in nfa.edges[s]:
                for c in classes(mask):
                    byte = reps[c]
                    kept = set()
                    dead = False
                    for g, k in guards:
                        lit = nfa.guards[g]
                        if lit[k] == byte:
                            if k + 1 == len(lit):
                                dead = True
                                break
                            kept.add((g, k + 1))
                    if not dead:
                        buckets.setdefault(c, set()).add((t, frozenset(kept)))
        row = [DEAD] * len(parts)
        for c, targets in buckets.items():
            nxt = _closure(nfa, targets, memo)
            j = index.get(nxt)
            if j is None:
                if len(sets) >= max_states:
                    raise ResourceLimitError(
                        f"terminal {name}: lexer DFA exceeds {max_states} states; "
                        "simplify the pattern or raise max_dfa_states"
                    )
                j = index[nxt] = len(sets)
                sets.append(nxt)
            row[c] = j
        trans.append(row)
        i += 1
    acc = [_accepting(nfa, x, name) for x in sets]
    accepting = [a for a, _ in acc]
    # trim: keep states from which an accepting state is reachable
    live = list(accepting)
    changed = True
    while changed:
        changed = False
        for q, row in enumerate(trans):
            if not live[q] and any(t != DEAD and live[t] for t in row):
                live[q] = changed = True
    for row in trans:
        for c, t in enumerate(row):
            if t != DEAD and not live[t]:
                row[c] = DEAD
    return trans, accepting, [n for _, n in acc], live[0]


def _minimize(trans: np.ndarray, accept: np.ndarray, accept_next: np.ndarray):
    """Moore partition refinement, keeping state 0 as the start."""
    _, labels = np.unique(np.concatenate([accept[:, None], accept_next], axis=1), axis=0, return_inverse=True)
    labels = labels.reshape(-1)
    labels = labels.astype(np.int64)
    n = labels.max() + 1
    while True:
        succ = np.where(trans >= 0, labels[np.maximum(trans, 0)], -1)
        sig = np.concatenate([labels[:, None], succ], axis=1)
        _, new = np.unique(sig, axis=0, return_inverse=True)
        new = new.reshape(-1).astype(np.int64)
        m = new.max() + 1
        labels = new
        if m == n:
            break
        n = m
    # renumber so the start's block is 0, in order of first appearance
    order = {}
    for q in range(len(labels)):
        order.setdefault(int(labels[q]), len(order))
    remap = np.array([order[int(x)] for x in range(n)], dtype=np.int64)
    labels = remap[labels]
    reps = np.zeros(n, dtype=np.int64)
    reps[labels[::-1]] = np.arange(len(labels))[::-1]
    new_trans = np.where(trans[reps] >= 0, labels[np.maximum(trans[reps], 0)], DEAD).astype(np.int32)
    return new_trans, accept[reps].astype(np.int32), accept_next[reps].astype(np.int32)


def _producible(delta: np.ndarray, accept: np.ndarray, num_terminals: int) -> np.ndarray:
    """prod[q, T]: some accepting state for T is reachable from q (q itself included)."""
    q = delta.shape[0]
    prod = np.zeros((q, num_terminals), dtype=bool)
    acc = accept >= 0
    prod[np.nonzero(acc)[0], accept[acc]] = True
    src, dst = np.nonzero(delta >= 0)
    pairs = np.unique(np.stack([src, delta[src, dst]], axis=1), axis=0)
    src, dst = pairs[:, 0], pairs[:, 1]
    while True:
        new = prod.copy()
        np.logical_or.at(new, src, prod[dst])
        if np.array_equal(new, prod):
            return prod
        prod = new


def build_lexer(terminals: list[TerminalSpec], *, max_states: int = 50_000) -> LexerDFA:
    """Compile all terminals into one minimal byte DFA (ties broken as Lark's basic lexer breaks them)."""
    nfas = [compile_regex(t.name, t.pattern) for t in terminals]
    class_of_byte, parts = _byte_classes(nfas)
    per_term = []
    for t, nfa in zip(terminals, nfas):
        trans, accepting, before, nonempty = _terminal_dfa(nfa, parts, max_states, t.name)
        if accepting[0]:
            raise GrammarError(f"terminal {t.display} matches the empty string; give it at least one character")
        if not nonempty:
            raise GrammarError(f"terminal {t.display} matches nothing")
        per_term.append((trans, accepting, before))
    rank = sorted(range(len(terminals)), key=lambda i: terminals[i].tie_key())
    rank_of = {term: r for r, term in enumerate(rank)}

    # product construction over sparse tuples of live (terminal, state) components
    start = tuple((i, 0) for i in range(len(terminals)))
    index = {start: 0}
    tuples = [start]
    rows: list[list[int]] = []
    accept: list[int] = []
    accept_next: list[np.ndarray] = []
    nclass = len(parts)
    i = 0
    while i < len(tuples):
        tup = tuples[i]
        winners = sorted((t for t, s in tup if per_term[t][1][s]), key=rank_of.__getitem__)
        accept.append(winners[0] if winners else DEAD)
        nxt_row = np.full(256, DEAD, dtype=np.int32)
        for t in reversed(winners):  # best rank written last
            before = per_term[t][2][dict(tup)[t]]
            nxt_row[before if before is not None else slice(None)] = t
        accept_next.append(nxt_row)
        row = [DEAD] * nclass
        for c in range(nclass):
            nxt = tuple((t, n) for t, s in tup if (n := per_term[t][0][s][c]) != DEAD)
            if not nxt:
                continue
            j = index.get(nxt)
            if j is None:
                if len(tuples) >= max_states:
                    raise ResourceLimitError(
                        f"lexer DFA exceeds {max_states} states; simplify the terminals or raise max_dfa_states"
                    )
                j = index[nxt] = len(tuples)
                tuples.append(nxt)
            row[c] = j
        rows.append(row)
        i += 1
    trans, acc, acc_next = _minimize(
        np.array(rows, dtype=np.int32), np.array(accept, dtype=np.int32), np.array(accept_next, dtype=np.int32)
    )
    delta = trans[:, class_of_byte]
    prod = _producible(delta, acc, len(terminals))
    return LexerDFA(np.ascontiguousarray(delta), acc, prod, tuple(terminals), acc_next)
