"""The grammar's terminals as one minimal byte-level DFA whose accepting states name the winning terminal.

Paper section 3.1: the lexing automaton (preprocessing). Each terminal's regex becomes a byte
NFA (:mod:`greatgramma.regex`), then a DFA over classes of alike bytes; their product, with
ties broken as Lark's basic lexer breaks them, is minimized. ``risky`` marks the states where
a lexeme can still die on valid UTF-8 before it can end again: there the lexing transducer
(:mod:`greatgramma.lexing`) has to remember where it could back up to.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import native
from .cache import BoundedCache
from .errors import GrammarError, ResourceLimitError, UnsupportedRegexError
from .codes import DEAD
from .postlexer import Postlexer
from .regex import ByteNFA, compile_regex, literal_bytes


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
    column: int | None = None  # indenter: this copy of the newline terminal ends at that column

    @property
    def display(self) -> str:
        """How messages name the terminal: its literal text, its name, or an anonymous one's regex."""
        if self.is_string:
            return '"' + re.sub(r"\\(.)", r"\1", self.pattern) + '"'
        return f"/{self.pattern}/" if self.name.startswith("__") else self.name

    def tie_key(self) -> tuple:
        """Lark's basic lexer order: priority, then string over regex, then longest pattern, then name."""
        return (-self.priority, 0 if self.is_string else 1, -self.max_width, -self.value_len, self.name)


MAX_BACKTRACK = 64  # bytes a lexeme may run past its last possible end and still back up to it

_UTF8_NEXT = np.full((8, 256), -1, dtype=np.int8)  # decoder state x byte -> decoder state (-1: invalid)
_UTF8_NEXT[0, 0x00:0x80] = 0
_UTF8_NEXT[0, 0xC2:0xE0] = 1
_UTF8_NEXT[0, 0xE0] = 4
_UTF8_NEXT[0, 0xE1:0xED] = 2
_UTF8_NEXT[0, 0xED] = 5
_UTF8_NEXT[0, 0xEE:0xF0] = 2
_UTF8_NEXT[0, 0xF0] = 6
_UTF8_NEXT[0, 0xF1:0xF4] = 3
_UTF8_NEXT[0, 0xF4] = 7
_UTF8_NEXT[1, 0x80:0xC0] = 0
_UTF8_NEXT[2, 0x80:0xC0] = 1
_UTF8_NEXT[3, 0x80:0xC0] = 2
_UTF8_NEXT[4, 0xA0:0xC0] = 1
_UTF8_NEXT[5, 0x80:0xA0] = 1
_UTF8_NEXT[6, 0x90:0xC0] = 2
_UTF8_NEXT[7, 0x80:0x90] = 2


@dataclass(frozen=True, eq=False)
class LexerDFA:
    """Minimal DFA over bytes for the union of all terminals; state 0 is the start.

    A table, as compiled: the lexing transducer that runs it (and the backing-up states it
    meets) is :class:`greatgramma.lexing.LexingTransducer`.
    """

    delta: np.ndarray  # int32[Q, 256], DEAD where no live transition
    accept: np.ndarray  # int32[Q], terminal the lexeme ends as at the end of input, or DEAD
    prod: np.ndarray  # bool[Q, T], terminals whose lexeme can still be completed from the state
    terminals: tuple[TerminalSpec, ...]
    accept_next: np.ndarray  # int32[Q, 256], terminal the lexeme ends as when byte b follows (lookahead)
    risky: np.ndarray  # bool[Q], the lexeme can die on valid UTF-8 before it can end again (:func:`risky_states`)

    @property
    def num_states(self) -> int:
        return int(self.delta.shape[0])

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of the table (the terminals go in the header; ``risky`` is derived)."""
        return {"delta": self.delta, "accept": self.accept, "prod": self.prod, "accept_next": self.accept_next}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], terminals: tuple[TerminalSpec, ...]) -> LexerDFA:
        """Inverse of :meth:`to_arrays`."""
        delta, accept_next = arrays["delta"], arrays["accept_next"]
        return cls(delta, arrays["accept"], arrays["prod"], terminals, accept_next, risky_states(delta, accept_next))


def utf8_valid(delta: np.ndarray) -> np.ndarray:
    """bool[Q, 256]: bytes that keep the text a valid UTF-8 prefix (all bytes where unsure)."""
    n = delta.shape[0]
    pos = np.full(n, -2, dtype=np.int64)  # UTF-8 decoder state reached in; -2 unseen, -1 invalid
    pos[0] = 0
    mixed = np.zeros(n, dtype=bool)
    if native.ext is not None:
        native.utf8_positions(delta, _UTF8_NEXT, pos, mixed)
    else:
        _utf8_rounds(delta, _UTF8_NEXT, pos, mixed)
    valid = _UTF8_NEXT[np.maximum(pos, 0)] >= 0
    valid[mixed | (pos < 0)] = True
    return valid


def _utf8_rounds(delta: np.ndarray, table: np.ndarray, pos: np.ndarray, mixed: np.ndarray) -> None:
    """``utf8_valid``'s breadth-first rounds from state 0 in numpy (``native.utf8_positions``):
    each state's decoder state in ``pos``, ``mixed`` where arrivals disagree."""
    frontier = np.array([0])
    while len(frontier):
        i, b = np.nonzero(delta[frontier] != DEAD)
        src = frontier[i]
        t = delta[src, b].astype(np.int64)
        u = pos[src]
        nu = np.where(u >= 0, table[np.maximum(u, 0), b], -1)
        seen = pos[t] != -2
        mixed[t[seen & (pos[t] != nu)]] = True
        t, nu = t[~seen], nu[~seen]
        pos[t] = nu
        mixed[t[pos[t] != nu]] = True  # reached in two decoder states in the same round
        frontier = np.unique(t)


def risky_states(delta: np.ndarray, accept_next: np.ndarray) -> np.ndarray:
    """bool[Q]: a lexeme in this state can die on valid UTF-8 before it can end again."""
    go = utf8_valid(delta) & (accept_next == DEAD)
    dies = (go & (delta == DEAD)).any(axis=1)
    src, byte = np.nonzero(go & (delta != DEAD))
    return _reach_back(src, delta[src, byte], dies[:, None].astype(np.uint8))[:, 0].astype(bool)


def _reach_back(src: np.ndarray, dst: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """``bits`` (uint8[Q, W]) with each state's row OR-ed with the rows of every state its edges
    ``src -> dst`` reach, to the fixpoint (in place): what a state can still become or do."""
    if native.ext is not None:
        native.closure(src, dst, bits)
        return bits
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    if not len(src):
        return bits
    starts = np.flatnonzero(np.r_[True, src[1:] != src[:-1]])
    owners = src[starts]
    now = bits
    while True:  # one step of every edge per round: as many rounds as the longest path without a cycle
        new = now.copy()
        new[owners] |= np.bitwise_or.reduceat(now[dst], starts, axis=0)
        if np.array_equal(new, now):
            bits[...] = now
            return bits
        now = new


# ---------------------------------------------------------------- construction


def _edge_masks(nfa: ByteNFA) -> set[int]:
    """The byte masks of an NFA's edges, its lookbehind trackers' included."""
    masks = {m for edges in nfa.edges for m, _ in edges}
    for tracker in nfa.lookbehinds:
        masks |= _edge_masks(tracker)
    return masks


def _nfa_masks(nfa: ByteNFA) -> frozenset[int]:
    """The byte masks a partition must respect for ``nfa``: its edges' and each lookahead byte alone."""
    return frozenset(_edge_masks(nfa) | {1 << b for g in nfa.guards for b in g})


def _byte_classes(masks: set[int]) -> tuple[np.ndarray, list[int]]:
    """Partition 0..255 so that every mask takes whole classes (bytes that every mask takes or
    leaves alike); classes numbered by their smallest byte."""
    if not masks:
        return np.zeros(256, dtype=np.int32), [(1 << 256) - 1]
    raw = b"".join(m.to_bytes(32, "little") for m in masks)
    member = np.unpackbits(np.frombuffer(raw, dtype=np.uint8).reshape(-1, 32), axis=1, bitorder="little")  # [mask, byte]
    columns = np.packbits(member, axis=0).T  # [byte, the masks that take it, packed]
    classes: dict[bytes, int] = {}
    flat, w = np.ascontiguousarray(columns).tobytes(), columns.shape[1]
    class_of_byte = np.array([classes.setdefault(flat[i : i + w], len(classes)) for i in range(0, 256 * w, w)], dtype=np.int32)
    raw = np.packbits(class_of_byte == np.arange(len(classes))[:, None], axis=1, bitorder="little").tobytes()
    return class_of_byte, [int.from_bytes(raw[i : i + 32], "little") for i in range(0, len(raw), 32)]


class _RegexDFA(NamedTuple):
    """A regex terminal's DFA over its own byte classes (``_terminal_dfa``), and the masks a
    grammar's classes must respect for it: the same for every grammar the pattern is in."""

    masks: frozenset[int]
    class_of_byte: np.ndarray  # (256,) its own class of each byte
    trans: np.ndarray  # (states, own classes)
    accepting: list[bool]
    before: list[np.ndarray | None]
    nonempty: bool


# pattern -> its DFA, shared by every grammar built in the process (schemas repeat their string,
# number and whitespace terminals); successes only: errors name the terminal they were met in
_REGEX_DFAS = BoundedCache(64 << 20, 4096)


def clear_pattern_cache() -> None:
    """Forget the regex terminals' DFAs kept for later grammars (to time a first build)."""
    _REGEX_DFAS.clear()


def regex_dfa(name: str, pattern: str, max_states: int, deadline: float | None = None) -> _RegexDFA:
    """The DFA of one regex terminal, over its own byte classes (kept per pattern)."""
    key = (pattern, max_states)
    got = _REGEX_DFAS.get(key)
    if got is None:
        nfa = compile_regex(name, pattern)
        masks = _nfa_masks(nfa)
        class_of_byte, parts = _byte_classes(masks)
        trans, accepting, before, nonempty = _terminal_dfa(nfa, parts, max_states, name, deadline)
        table = np.array(trans, dtype=np.int32).reshape(len(trans), len(parts))
        got = _RegexDFA(masks, class_of_byte, table, accepting, before, nonempty)
        _REGEX_DFAS.put(key, got, table.nbytes + 4096 + 8 * len(masks))
    return got


Thread = tuple[int, frozenset]  # (NFA state, pending lookahead guards as (guard, bytes matched))
Trackers = tuple[frozenset, ...]  # the states of each lookbehind's tracker NFA on the lexeme so far


def _gate_shut(nfa: ByteNFA, s: int, behind: tuple[bool, ...]) -> bool:
    """Whether s is a lookbehind gate that the text so far does not let through."""
    gate = nfa.gates.get(s)
    return gate is not None and behind[gate[0]] == gate[1]


def _state_closure(nfa: ByteNFA, s: int, memo: dict, behind: tuple[bool, ...] = ()) -> tuple[Thread, ...]:
    """States reachable from s by epsilon moves through open gates, each with the lookahead guards
    started on the way (``behind[k]``: the text so far ends with lookbehind k's body)."""
    key = (s, behind)
    got = memo.get(key)
    if got is None:
        seen = {(s, frozenset())}
        stack = [(s, frozenset())]
        while stack:
            u, added = stack.pop()
            if _gate_shut(nfa, u, behind):
                continue
            nxt = [(t, added) for t in nfa.eps[u]]
            nxt += [(t, added | {(g, 0)}) for t, g in nfa.guard_eps.get(u, ())]
            for th in nxt:
                if th not in seen:
                    seen.add(th)
                    stack.append(th)
        got = memo[key] = tuple(seen)
    return got


def _closure(nfa: ByteNFA, threads, memo: dict, behind: tuple[bool, ...] = ()) -> frozenset[Thread]:
    out = set()
    for s, guards in threads:
        for t, added in _state_closure(nfa, s, memo, behind):
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


def _eps_closure(nfa: ByteNFA, states) -> frozenset[int]:
    """States reachable by epsilon moves (for lookbehind trackers: no gates, no guards)."""
    seen = set(states)
    stack = list(seen)
    while stack:
        for t in nfa.eps[stack.pop()]:
            if t not in seen:
                seen.add(t)
                stack.append(t)
    return frozenset(seen)


def _trackers_start(nfa: ByteNFA) -> Trackers:
    return tuple(_eps_closure(tr, [tr.start]) for tr in nfa.lookbehinds)


def _trackers_step(nfa: ByteNFA, trackers: Trackers, byte: int) -> Trackers:
    if not trackers:
        return trackers
    return tuple(
        _eps_closure(tr, [t for u in states for m, t in tr.edges[u] if m >> byte & 1])
        for tr, states in zip(nfa.lookbehinds, trackers)
    )


def _behind(nfa: ByteNFA, trackers: Trackers) -> tuple[bool, ...]:
    """For each lookbehind: does the text so far end with its body?"""
    if not trackers:
        return ()
    return tuple(tr.final in states for tr, states in zip(nfa.lookbehinds, trackers))


def _guarded_start(nfa: ByteNFA, memo: dict) -> tuple[frozenset[Thread], Trackers]:
    trackers = _trackers_start(nfa)
    return _closure(nfa, [(nfa.start, frozenset())], memo, _behind(nfa, trackers)), trackers


def _guarded_successors(nfa: ByteNFA, cur, classes, reps: list[int], memo: dict) -> dict:
    """Byte class -> next (thread set, trackers) for a set-run NFA (lookahead guards die on their literal)."""
    threads, trackers = cur
    buckets: dict[int, set[Thread]] = {}
    for s, guards in threads:
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
    out = {}
    for c, targets in buckets.items():
        moved = _trackers_step(nfa, trackers, reps[c])
        out[c] = (_closure(nfa, targets, memo, _behind(nfa, moved)), moved)
    return out


def _ordered_state_closure(nfa: ByteNFA, s: int, behind: tuple[bool, ...], memo: dict) -> tuple[int, ...]:
    """States with byte edges (and the final one) reached from s by epsilon moves, in priority order.

    Depth first, each state once: a Pike VM's add-thread, with shut lookbehind gates cut off.
    """
    key = (s, behind)
    got = memo.get(key)
    if got is None:
        out, seen, stack = [], set(), [s]
        while stack:
            u = stack.pop()
            if u in seen:
                continue
            seen.add(u)
            if _gate_shut(nfa, u, behind):
                continue
            if nfa.edges[u] or u == nfa.final:
                out.append(u)
            stack.extend(reversed(nfa.eps[u]))
        got = memo[key] = tuple(out)
    return got


def _ordered_closure(nfa: ByteNFA, targets, behind: tuple[bool, ...], memo: dict) -> tuple[int, ...]:
    """The next thread list: the targets' closures in order, each state once, cut after the final
    state (a match ends every lower-priority way of going on, as in Python's backtracking)."""
    out: list[int] = []
    seen: set[int] = set()
    for t in targets:
        for u in _ordered_state_closure(nfa, t, behind, memo):
            if u not in seen:
                seen.add(u)
                out.append(u)
                if u == nfa.final:
                    return tuple(out)
    return tuple(out)


def _ordered_start(nfa: ByteNFA, memo: dict) -> tuple[tuple[int, ...], Trackers]:
    trackers = _trackers_start(nfa)
    return _ordered_closure(nfa, [nfa.start], _behind(nfa, trackers), memo), trackers


def _ordered_successors(nfa: ByteNFA, cur, classes, reps: list[int], memo: dict) -> dict:
    """Byte class -> next (thread list, trackers) for an ordered NFA; classes where every thread dies are left out."""
    threads, trackers = cur
    targets: dict[int, list[int]] = {}
    for s in threads:
        for mask, t in nfa.edges[s]:
            for c in classes(mask):
                targets.setdefault(c, []).append(t)
    out = {}
    for c, ts in targets.items():
        moved = _trackers_step(nfa, trackers, reps[c])
        nxt = _ordered_closure(nfa, ts, _behind(nfa, moved), memo)
        if nxt:
            out[c] = (nxt, moved)
    return out


def _literal_dfa(data: bytes, class_of_byte: np.ndarray, num_classes: int):
    """``_terminal_dfa`` of a plain string: state i has read ``data[:i]``, only the last accepts."""
    trans = [[DEAD] * num_classes for _ in range(len(data) + 1)]
    for i, b in enumerate(data):
        trans[i][int(class_of_byte[b])] = i + 1
    return trans, [False] * len(data) + [True], [None] * (len(data) + 1), True


def _terminal_dfa(nfa: ByteNFA, parts: list[int], max_states: int, name: str, deadline: float | None = None):
    """Subset construction for one terminal, over its threads and its lookbehinds' trackers.

    Threads are sets that carry their pending lookaheads, or, for an ordered NFA, lists in
    priority order, accepting where a match cuts the list: each accepting point is one that
    Python's ``re`` passes, the last the one it returns. States are numbered as met, each
    state's moves in class order; a plain NFA (no lookaround, not ordered) is run in the
    compiled loop (``native.subsets``), which numbers them alike.
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

    plain = not (nfa.ordered or nfa.guard_eps or nfa.gates or nfa.lookbehinds)
    if plain and native.ext is not None:
        table, accepting = _subsets_native(nfa, classes, len(parts), max_states, name, deadline)
        return _trimmed(table, accepting, [None] * len(accepting))
    memo: dict = {}
    start = (_ordered_start if nfa.ordered else _guarded_start)(nfa, memo)
    successors = _ordered_successors if nfa.ordered else _guarded_successors
    index = {start: 0}
    sets = [start]
    trans: list[list[int]] = []
    i = 0
    while i < len(sets):
        row = [DEAD] * len(parts)
        for c, nxt in sorted(successors(nfa, sets[i], classes, reps, memo).items(), key=lambda kv: kv[0]):
            j = index.get(nxt)
            if j is None:
                if len(sets) >= max_states:
                    raise _terminal_too_big(name, max_states)
                j = index[nxt] = len(sets)
                sets.append(nxt)
            row[c] = j
        trans.append(row)
        i += 1
    if nfa.ordered:
        acc = [(bool(threads) and threads[-1] == nfa.final, None) for threads, _ in sets]
    else:
        acc = [_accepting(nfa, threads, name) for threads, _ in sets]
    return _trimmed(np.array(trans, dtype=np.int64).reshape(len(trans), len(parts)), [a for a, _ in acc], [n for _, n in acc])


def _terminal_too_big(name: str, max_states: int) -> ResourceLimitError:
    return ResourceLimitError(f"terminal {name}: lexer DFA exceeds {max_states} states; simplify the pattern or raise max_dfa_states")


def _subsets_native(nfa: ByteNFA, classes, nclass: int, max_states: int, name: str, deadline: float | None):
    """The subset construction of a plain NFA in the compiled loop: (table int64[states, classes], accepting)."""
    eps_ptr = np.cumsum([0, *map(len, nfa.eps)], dtype=np.int64)
    eps_to = np.fromiter((t for ts in nfa.eps for t in ts), dtype=np.int32, count=int(eps_ptr[-1]))
    edge_ptr = np.cumsum([0, *map(len, nfa.edges)], dtype=np.int64)
    edge_classes = [classes(mask) for es in nfa.edges for mask, _ in es]
    edge_to = np.fromiter((t for es in nfa.edges for _, t in es), dtype=np.int32, count=int(edge_ptr[-1]))
    cls_ptr = np.cumsum([0, *map(len, edge_classes)], dtype=np.int64)
    cls = np.fromiter((c for cs in edge_classes for c in cs), dtype=np.int32, count=int(cls_ptr[-1]))
    seconds = -1.0 if deadline is None else max(0.0, deadline - time.perf_counter())
    code, states, rows, accepting = native.subsets(nclass, eps_ptr, eps_to, edge_ptr, edge_to, cls_ptr, cls,
                                                   nfa.start, nfa.final, max_states, seconds)
    if code == 1:
        raise _terminal_too_big(name, max_states)
    if code == 2:
        raise _out_of_time(f"the DFA of terminal {name} ({states} states so far)")
    table = np.frombuffer(rows, dtype=np.int32).reshape(states, nclass).astype(np.int64)
    return table, np.frombuffer(accepting, dtype=np.uint8).astype(bool).tolist()


def _trimmed(table: np.ndarray, accepting: list[bool], before: list):
    """``_terminal_dfa``'s result with the states from which no accepting state is reachable dead."""
    src, cls = np.nonzero(table >= 0)
    live = _reach_back(src, table[src, cls], np.array(accepting, dtype=np.uint8)[:, None])[:, 0].astype(bool)
    table[(table >= 0) & ~live[np.maximum(table, 0)]] = DEAD
    return table.tolist(), accepting, before, bool(live[0])


def _minimize(trans: np.ndarray, accept: np.ndarray, accept_next: np.ndarray):
    """The minimal DFA by partition refinement, keeping state 0 as the start (over classes of alike columns)."""
    if trans.shape[1] != accept_next.shape[1]:
        return minimize_classes(trans, accept, accept_next)[:3]
    _, cols, inv = np.unique(np.concatenate([trans, accept_next]).T, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    t, a, n, _ = minimize_classes(trans[:, cols], accept, accept_next[:, cols])
    return t[:, inv], a, n[:, inv]


_ROW_HASH = np.random.default_rng(0).integers(1, 2**63, size=4096, dtype=np.uint64) | np.uint64(1)


def _row_labels(mat: np.ndarray) -> np.ndarray:
    """Equal rows get equal labels (0..k-1): hashed, then checked exactly (np.unique on a collision)."""
    h = (mat.astype(np.uint64) * _ROW_HASH[: mat.shape[1]]).sum(axis=1, dtype=np.uint64)
    _, first, labels = np.unique(h, return_index=True, return_inverse=True)
    labels = labels.reshape(-1).astype(np.int64)
    if mat.shape[1] > len(_ROW_HASH) or not (mat == mat[first[labels]]).all():
        labels = np.unique(mat, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return labels


def minimize_classes(trans: np.ndarray, accept: np.ndarray, accept_next: np.ndarray):
    labels = _row_labels(np.concatenate([accept[:, None], accept_next], axis=1))
    if native.ext is not None:
        n = native.refine(trans, labels)
    else:
        n = labels.max() + 1
        while True:
            succ = np.where(trans >= 0, labels[np.maximum(trans, 0)], -1)
            sig = np.concatenate([labels[:, None], succ], axis=1)
            new = _row_labels(sig)
            m = new.max() + 1
            labels = new
            if m == n:
                break
            n = m
        # renumber so the start's block is 0, in order of first appearance
        _, first = np.unique(labels, return_index=True)
        remap = np.empty(n, dtype=np.int64)
        remap[np.argsort(first, kind="stable")] = np.arange(n)
        labels = remap[labels]
    reps = np.zeros(n, dtype=np.int64)
    reps[labels[::-1]] = np.arange(len(labels))[::-1]
    new_trans = np.where(trans[reps] >= 0, labels[np.maximum(trans[reps], 0)], DEAD).astype(np.int32)
    return new_trans, accept[reps].astype(np.int32), accept_next[reps].astype(np.int32), labels




def _producible(delta: np.ndarray, accept: np.ndarray, num_terminals: int, accept_next: np.ndarray) -> np.ndarray:
    """prod[q, T]: from q (q itself included) some state is reached where the lexeme ends as T, at
    the end of input or before a byte that its lookahead asks for (``GT_ADJ: />/`` beside
    ``GT: />(?!>)/`` ends as GT_ADJ only before a ``>``)."""
    q = delta.shape[0]
    prod = np.zeros((q, num_terminals), dtype=bool)
    acc = accept >= 0
    prod[np.nonzero(acc)[0], accept[acc]] = True
    rows, cols = np.nonzero(accept_next >= 0)
    prod[rows, accept_next[rows, cols]] = True
    src, byte = np.nonzero(delta >= 0)
    bits = _reach_back(src, delta[src, byte], np.packbits(prod, axis=1))  # terminals as bits: 8x less data
    return np.unpackbits(bits, axis=1, count=num_terminals).astype(bool)


def build_lexer(
    terminals: list[TerminalSpec],
    *,
    max_states: int = 50_000,
    postlexer: Postlexer | None = None,
    deadline: float | None = None,
) -> LexerDFA:
    """Compile all terminals into one minimal byte DFA (ties broken as Lark's basic lexer breaks them).

    A ``postlexer`` may refine the DFA for what it needs to tell apart (the indenter splits the
    newline terminal by indentation column: :meth:`greatgramma.indenter.Indenter.refine_lexer`).
    Past ``deadline`` (``time.perf_counter()``) it stops with a ResourceLimitError.
    """
    literals = [literal_bytes(t.pattern) if t.is_string else None for t in terminals]
    regexes = []
    for t, lit in zip(terminals, literals):
        if lit is None:
            _check_deadline(deadline, f"the DFA of terminal {t.display}")
        regexes.append(regex_dfa(t.name, t.pattern, max_states, deadline) if lit is None else None)
    alone = {1 << b for lit in literals if lit for b in lit}  # a string literal's bytes each make a class
    class_of_byte, parts = _byte_classes(alone.union(*(r.masks for r in regexes if r is not None)))
    reps = np.array([(p & -p).bit_length() - 1 for p in parts])
    per_term = []
    for t, regex, lit in zip(terminals, regexes, literals):
        if lit is not None:  # a chain of states, one per byte (what the subset construction would give)
            trans, accepting, before, nonempty = _literal_dfa(lit, class_of_byte, len(parts))
        else:  # the grammar's classes refine the terminal's own: each class reads its own class's column
            trans, accepting, before, nonempty = regex.trans[:, regex.class_of_byte[reps]], *regex[3:]
        if accepting[0]:
            raise GrammarError(f"terminal {t.display} matches the empty string; give it at least one character")
        if not nonempty:
            raise GrammarError(f"terminal {t.display} matches nothing")
        per_term.append((trans, accepting, before))
    rank = sorted(range(len(terminals)), key=lambda i: terminals[i].tie_key())
    if native.ext is not None and per_term:  # (no terminals: the one state the Python loop makes)
        rows, accept, accept_next = _product_native(per_term, rank, len(parts), max_states, deadline)
    else:
        rows, accept, accept_next = _product(per_term, rank, len(parts), max_states, deadline)
    trans, acc, acc_next = _minimize(rows, accept, accept_next)
    delta = trans[:, class_of_byte]
    terminals = tuple(terminals)
    if postlexer is not None:
        delta, acc, acc_next, terminals = postlexer.refine_lexer(delta, acc, acc_next, terminals)
        delta, acc, acc_next = _minimize(delta, acc, acc_next)
    prod = _producible(delta, acc, len(terminals), acc_next)
    delta = np.ascontiguousarray(delta)
    return LexerDFA(delta, acc, prod, terminals, acc_next, risky_states(delta, acc_next))


def _product(per_term: list, rank: list[int], nclass: int, max_states: int, deadline: float | None):
    """The lexer DFA as the product of the terminals' DFAs (``per_term``: rows over classes,
    accepting flags, accepted-before-byte masks), before minimization: (rows, accept, accept_next)."""
    rank_of = {term: r for r, term in enumerate(rank)}
    # product construction over sparse tuples of live (terminal, state) components; each
    # component's live moves listed once, so a state costs its live moves, not classes x components
    moves = [[[(c, n) for c, n in enumerate(row) if n != DEAD] for row in np.asarray(trans).tolist()] for trans, _, _ in per_term]
    start = tuple((i, 0) for i in range(len(per_term)))
    index = {start: 0}
    tuples = [start]
    rows: list[list[int]] = []
    accept: list[int] = []
    accept_next: list[np.ndarray] = []
    i = 0
    while i < len(tuples):
        if i % 256 == 0:
            _check_deadline(deadline, f"the lexer DFA ({len(tuples)} states so far)")
        tup = tuples[i]
        winners = sorted((t for t, s in tup if per_term[t][1][s]), key=rank_of.__getitem__)
        accept.append(winners[0] if winners else DEAD)
        nxt_row = np.full(256, DEAD, dtype=np.int32)
        for t in reversed(winners):  # best rank written last
            before = per_term[t][2][dict(tup)[t]]
            nxt_row[before if before is not None else slice(None)] = t
        accept_next.append(nxt_row)
        targets: dict[int, list[tuple[int, int]]] = {}
        for t, s in tup:  # components in terminal order, so each target tuple is too
            for c, n in moves[t][s]:
                got = targets.get(c)
                if got is None:
                    targets[c] = [(t, n)]
                else:
                    got.append((t, n))
        row = [DEAD] * nclass
        for c in sorted(targets):  # new states numbered in class order
            nxt = tuple(targets[c])
            j = index.get(nxt)
            if j is None:
                if len(tuples) >= max_states:
                    raise _too_many_states(max_states)
                j = index[nxt] = len(tuples)
                tuples.append(nxt)
            row[c] = j
        rows.append(row)
        i += 1
    return np.array(rows, dtype=np.int32), np.array(accept, dtype=np.int32), np.array(accept_next, dtype=np.int32)


def _product_native(per_term: list, rank: list[int], nclass: int, max_states: int, deadline: float | None):
    """:func:`_product` in the compiled loop (``native.product``)."""
    tables = [np.asarray(trans, dtype=np.int32).reshape(len(accepting), nclass) for trans, accepting, _ in per_term]
    sizes = np.array([len(t) for t in tables], dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    table = np.concatenate(tables)
    table = np.where(table >= 0, table + np.repeat(base[:-1], sizes)[:, None].astype(np.int32), DEAD)
    src, cls = np.nonzero(table >= 0)
    move_ptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=len(table)))]).astype(np.int64)
    accepting = np.concatenate([np.asarray(a, dtype=np.uint8) for _, a, _ in per_term])
    masks, before_id = [], np.full(len(table), -1, dtype=np.int32)
    q = 0
    for _, _, before in per_term:
        for b in before:
            if b is not None:
                before_id[q] = len(masks)
                masks.append(np.asarray(b, dtype=np.uint8))
            q += 1
    rank_of = np.empty(len(per_term), dtype=np.int32)
    rank_of[np.asarray(rank, dtype=np.int64)] = np.arange(len(rank), dtype=np.int32)
    seconds = -1.0 if deadline is None else max(0.0, deadline - time.perf_counter())
    code, states, rows, accept, accept_next = native.product(
        nclass, base, move_ptr, cls.astype(np.int32), table[src, cls].astype(np.int32), accepting, before_id,
        np.concatenate(masks) if masks else np.zeros(0, dtype=np.uint8), rank_of, max_states, seconds,
    )
    if code == 1:
        raise _too_many_states(max_states)
    if code == 2:
        raise _out_of_time(f"the lexer DFA ({states} states so far)")
    return (
        np.frombuffer(rows, dtype=np.int32).reshape(states, nclass),
        np.frombuffer(accept, dtype=np.int32),
        np.frombuffer(accept_next, dtype=np.int32).reshape(states, 256),
    )


def _too_many_states(max_states: int) -> ResourceLimitError:
    return ResourceLimitError(f"lexer DFA exceeds {max_states} states; simplify the terminals or raise max_dfa_states")


def _out_of_time(building: str) -> ResourceLimitError:
    return ResourceLimitError(f"the compile time budget ran out while building {building}; raise max_seconds")


def _check_deadline(deadline: float | None, building: str) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise _out_of_time(building)
