"""What tokens do from a lexer state until their first lexeme ends: walks of token trie subtrees (paper section 3.2).

A string starting with byte b, read from lexer state q, first goes to ``delta[q, b]``; from
there on it does not depend on q, except through q's fallback (where the lexeme could last
end before the string). So the walk is shared per *subtree* (first byte b, DFA state after b)
by every lexer state that enters it, and walked for many subtrees at once, one trie level at a
time. Results that depend on the entering state's fallback are *held* (``FALLBACK``,
``END_HELD``) and resolved per entering state (:meth:`SubtreeWalks.resolve`). With an indenter
the walks run once on the DFA without the column counter and are specialised per column.

The table is filled on first use (compiling eagerly walks every subtree a DFA state enters;
column states' subtrees on first use even then); each entry is a function of its key, so a
lazily filled table keeps at most ``budget`` bytes of walks and walks again what it dropped (a
walk is read once to build its block, and again only where its results are held: a bounded
string's positions would otherwise keep ~3 MB each at 128K tokens, for as long as the grammar).
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import NamedTuple

import numpy as np

from . import native
from .cache import BoundedCache
from .codes import DEAD, END, END_HELD, END_LA, FALLBACK, NEWLINE_SEEN, NO_TERM, UNKNOWN
from .errors import ResourceLimitError
from .lexer import MAX_BACKTRACK
from .transducer import TokenTransducer


class Walk(NamedTuple):
    """The strings of a subtree (or several) that are not dead, and what each does: its first
    lexeme ends as terminal ``first`` (NO_TERM: an ignored one) and then ``rest`` is the suffix
    row of the remaining bytes; or ``first`` is END and ``rest`` is the state the string ends in
    (inside the lexeme); or ``first`` is FALLBACK / END_HELD (held, see :meth:`SubtreeWalks.resolve`).
    Strings whose rest turned out dead may stay listed, with ``first`` DEAD."""

    strings: np.ndarray
    first: np.ndarray
    rest: np.ndarray


class BaseWalk(NamedTuple):
    """Walk results on the base DFA, before specialising to the entering state's column.

    ``kind`` is ``Walk.first`` or END_LA (ends holding a fallback inside the string at byte
    ``la_off`` as ``la_term``, resolved on specialising); ``origin`` the subtree it belongs to;
    ``where`` / ``la_where`` the column where the first lexeme (or the string) / that fallback
    ends (``NEWLINE_SEEN`` | spaces and tabs since a newline in the string, or since its start).
    """

    strings: np.ndarray
    kind: np.ndarray
    rest: np.ndarray
    origin: np.ndarray
    where: np.ndarray
    la_off: np.ndarray
    la_term: np.ndarray
    la_where: np.ndarray


WALK_BUDGET = 32 << 20  # bytes of walks a lazily filled grammar keeps (beyond them it walks again)


class SubtreeWalks:
    """Walks of (first byte, DFA state after it) subtrees, filled lazily and shared by the lexer
    states that enter them; at most ``budget`` bytes of them kept (None: all). Thread-safe."""

    def __init__(self, transducer: TokenTransducer, budget: int | None = WALK_BUDGET) -> None:
        self.transducer = transducer
        self.lexer, self.trie = transducer.lexer, transducer.trie
        self.ignored = transducer.ignored
        self._subtrees: BoundedCache = BoundedCache(1 << 62 if budget is None else budget)
        self._walked = 0  # subtrees walked so far, those dropped since included
        self._base_subtrees: dict[tuple[int, int], BaseWalk] = {}
        self._lock = threading.Lock()
        self._leaves: dict[bytes, np.ndarray] = {}  # bytes that leave a state -> per string, the last of them

    def walk_all(self, max_entries: int = 20_000_000, *, walk: bool = True) -> int:
        """Walk every (first byte, lexer state) subtree that any lexer state can enter (eager
        preprocessing; ``walk=False`` only checks the size). Returns how many subtrees there are.

        Cheap because subtrees are shared between lexer states and walked in one batch; after it,
        no mask has to walk the trie. Refuses tables over ``max_entries`` (ResourceLimitError).
        """
        roots, cols = self.trie.root_children, self.lexer.columns
        firsts = np.array([b for b, _, _ in roots], dtype=np.int64)
        states = self.lexer.delta[1:, firsts].astype(np.int64)
        if cols is not None:  # walked once per base state (then specialised per column on use)
            states = np.where(states != DEAD, cols.state_base[states], DEAD)
        entered = np.zeros((len(firsts), int(states.max(initial=0)) + 2), dtype=bool)  # [byte, state + 1]
        entered[np.broadcast_to(np.arange(len(firsts)), states.shape), states + 1] = True
        byte_at, state_at = np.nonzero(entered[:, 1:])
        pairs = list(zip(firsts[byte_at].tolist(), state_at.tolist()))
        bound = int(np.array([hi - lo for _, lo, hi in roots], dtype=np.int64)[byte_at].sum())
        if bound > max_entries:
            raise ResourceLimitError(
                f"token-level tables would hold up to {bound:,} entries (limit {max_entries:,}); "
                "simplify the terminals or raise max_token_table_entries"
            )
        if walk:
            done = self._subtrees if cols is None else self._base_subtrees
            self._fill_base_subtrees([p for p in pairs if p not in done])
        return len(pairs)

    @property
    def num_walked(self) -> int:
        """Subtrees walked so far (base ones with an indenter)."""
        return self._walked if self.lexer.columns is None else len(self._base_subtrees)

    def subtrees(self, pairs: list[tuple[int, int]]) -> list[Walk]:
        """The walks of the strings that start with byte b, entered in DFA state s after b, per (b, s).

        A subtree is shared by every lexer state whose transition on b leads to s; new ones
        are walked together in one batch.
        """
        got = {p: self._subtrees.get(p) for p in pairs}  # (read once: the cache may drop entries meanwhile)
        todo = [p for p, walk in got.items() if walk is None]
        cols = self.lexer.columns
        if cols is None:
            got.update(self._fill_base_subtrees(todo)[0])
        elif todo:
            base = [(b, int(cols.state_base[st])) for b, st in todo]
            self._fill_base_subtrees([p for p in dict.fromkeys(base) if p not in self._base_subtrees])
            syms = [self._base_subtrees[key] for key in base]
            sizes = np.array([len(sym[0]) for sym in syms], dtype=np.int64)
            joined = BaseWalk(*(np.concatenate(arrays) for arrays in zip(*syms)))
            column = np.repeat(cols.state_column[[st for _, st in todo]], sizes)
            ends = np.cumsum(sizes).tolist()
            spans = list(zip([0] + ends[:-1], ends))
            strings, first, rest = self._specialise(joined, column)
            for pair, (i, j) in zip(todo, spans):
                got[pair] = self._keep(pair, Walk(strings[i:j], first[i:j], rest[i:j]))
        return [got[p] for p in pairs]

    def _keep(self, pair: tuple[int, int], walk: Walk) -> Walk:
        return self._subtrees.put(pair, walk, sum(a.nbytes for a in walk) + 200)

    def staying(self, lo: np.ndarray, hi: np.ndarray, state: np.ndarray, d: int) -> np.ndarray:
        """Which trie nodes [lo, hi) at depth d (bytes 0..d read, now in DFA ``state``) have every
        string stay in that state to its end on bytes that change nothing else (no place where the
        lexeme could end, where that is tracked): their strings all end there as the node stands,
        with nothing more to walk. Inside a string, a comment or a name most strings do (the bulk of
        a walk, done here in a few passes over the vocabulary)."""
        out = np.zeros(len(lo), dtype=bool)
        ask = self._loops[state] & (hi - lo >= 8)
        for q in np.unique(state[ask]).tolist():
            sel = np.flatnonzero(ask & (state == q))
            strings, _ = _expand_ranges(lo[sel], hi[sel])
            sizes = hi[sel] - lo[sel]
            out[sel] = np.maximum.reduceat(self._last_leave(q)[strings], np.cumsum(sizes) - sizes) <= d
        return out

    def _last_leave(self, q: int) -> np.ndarray:
        """Per string, the last byte position whose byte leaves DFA state q (-1: none), cached."""
        leaves = ~self._loop_bytes[q]
        key = np.packbits(leaves).tobytes()  # states that loop on the same bytes share it
        got = self._leaves.get(key)
        if got is None:
            trie = self.trie
            at = np.where(leaves[trie.flat_bytes], trie.position_offset, -1)
            got = self._leaves.setdefault(key, np.maximum.reduceat(at, trie.offsets[:-1]) if len(trie) else at)
        return got

    def column_at_end(self, strings: np.ndarray, d: int, column: np.ndarray) -> np.ndarray:
        """The walk's column (see ``BaseWalk.where``) at the end of each string, given ``column``
        after its byte d: the spaces and tabs after that, counted from its last newline if one follows."""
        cum, last_newline = self._blank_counts
        offsets = self.trie.offsets
        start, end = offsets[strings] + d + 1, offsets[strings + 1]
        newline = last_newline[strings] >= start
        count = cum[end] - cum[np.where(newline, last_newline[strings] + 1, start)]
        return np.where(newline, NEWLINE_SEEN + count, column + count)

    @cached_property
    def _blank_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(running count of columns that spaces and tabs add, over the flat bytes, from 0; per string,
        the flat position of its last newline or -1)."""
        flat, tab = self.trie.flat_bytes, self.base_dfa()[3]
        cum = np.zeros(len(flat) + 1, dtype=np.int64)
        np.cumsum((flat == 32) + tab * (flat == 9), out=cum[1:])
        at = np.where(flat == 10, np.arange(len(flat)), -1)
        last = np.maximum.reduceat(at, self.trie.offsets[:-1]) if len(self.trie) else at
        return cum, last

    @cached_property
    def _loop_bytes(self) -> np.ndarray:
        """bool[Q, 256]: byte b keeps base DFA state q where it is, and (if q tracks where the
        lexeme could end) is no such place."""
        delta, accept_next, risky, _ = self.base_dfa()
        return (delta == np.arange(len(delta))[:, None]) & ((accept_next == DEAD) | ~risky[:, None])

    @cached_property
    def _loops(self) -> np.ndarray:
        """bool[Q]: some byte keeps the base DFA state where it is (see ``_loop_bytes``)."""
        return self._loop_bytes.any(axis=1)

    # Walks run on the base DFA: the lexer's own, or with an indenter the DFA without the column
    # counter (ColumnMap); ``_specialise`` then fills in the column of the state that enters.

    def base_dfa(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(delta, accept_next, risky, tab length) of the DFA the walks run on."""
        cols, lexer = self.lexer.columns, self.lexer
        if cols is None:
            return lexer.delta, lexer.accept_next, lexer.risky, 0
        return cols.base_delta, cols.base_accept_next, cols.base_risky, cols.tab_len

    def joined(self, pairs: list[tuple[int, int]]) -> tuple[np.ndarray, ...]:
        """The walks of ``pairs`` concatenated, with each string's index into ``pairs``, and per pair
        whether some result is held (``is_held``): straight from one compiled walk where none of
        them was walked yet (no copies), else joined."""
        if self.lexer.columns is None and native.ext is not None and len(set(pairs)) == len(pairs) and \
                not any(p in self._subtrees for p in pairs):
            return self._fill_base_subtrees(pairs)[1]
        walked = self.subtrees(pairs)
        strings, first, rest = (np.concatenate(a) for a in zip(*walked))
        seg = np.repeat(np.arange(len(pairs)), [len(a[0]) for a in walked])
        return strings, first, rest, seg, np.bincount(seg[is_held(first)], minlength=len(pairs)) > 0

    def _fill_base_subtrees(self, pairs: list[tuple[int, int]]) -> tuple[dict, tuple[np.ndarray, ...] | None]:
        """Walks the pairs (base ones with an indenter) and keeps them; returns them by pair and, for
        a lexer without columns, in the compiled loop, the results joined as ``joined`` gives them."""
        if not pairs:
            return {}, None
        span = self.trie.root_span
        lo = np.array([span[b][0] for b, _ in pairs], dtype=np.int64)
        state = np.array([q for _, q in pairs], dtype=np.int64)
        held = self.base_dfa()[2][state]  # the lexeme keeps whatever fallback it entered with
        plain = self.lexer.columns is None  # then the base DFA is the lexer's: store the results as they are
        hi = np.array([span[b][1] for b, _ in pairs], dtype=np.int64)
        kept = None
        if native.ext is not None and plain:  # the compiled loop gives the results themselves
            kept = self._walk_kept(lo, hi, state, held)
            origin, done = kept.origin, Walk(*kept[:3])
        else:
            walked = self._walk_native(lo, hi, state, held) if native.ext is not None else self._walk_numpy(lo, state, held)
            origin, done = walked.origin, self._specialise(walked, None) if plain else walked
        bounds = np.searchsorted(origin, np.arange(len(pairs) + 1)).tolist()
        if plain:
            strings, first, rest = done
            put, size = self._subtrees.put, strings.itemsize + first.itemsize + rest.itemsize
            walks = {pair: put(pair, Walk(strings[i:j], first[i:j], rest[i:j]), size * (j - i) + 200)
                     for pair, i, j in zip(pairs, bounds[:-1], bounds[1:])}
            with self._lock:
                self._walked += len(pairs)
        else:
            walks = {pair: type(done)(*(a[i:j] for a in done)) for pair, i, j in zip(pairs, bounds[:-1], bounds[1:])}
            with self._lock:
                walks = {pair: self._base_subtrees.setdefault(pair, walk) for pair, walk in walks.items()}
        return walks, None if kept is None else (*done, origin, kept.held)

    def _walk_numpy(self, lo: np.ndarray, state: np.ndarray, held: np.ndarray) -> BaseWalk:
        """The subtrees whose strings begin at ``lo``, entered in ``state`` (``held``: holding the
        entry fallback), walked a trie level at a time; by subtree."""
        n = len(lo)
        origin = np.arange(n)
        one = self.trie.lengths[lo] == 1  # a one-byte string: it ends right here, inside the lexeme
        k = int(one.sum())
        z, none, dead = np.zeros(k, np.int64), np.full(k, -1, np.int64), np.full(k, DEAD, np.int64)
        kind = np.where(held[one], END_HELD, END).astype(np.int64)
        parts = [BaseWalk(lo[one], kind, state[one], origin[one], z, none, dead, z)]
        la_off = np.where(held, -1, -2).astype(np.int64)
        parts += _walk_base(self, lo, state, origin, la_off, np.full(n, DEAD, dtype=np.int64))
        walked = BaseWalk(*(np.concatenate(x) for x in zip(*parts)))
        order = np.argsort(walked.origin, kind="stable")
        return BaseWalk(*(a[order] for a in walked))

    def _walk_native(self, lo: np.ndarray, hi: np.ndarray, state: np.ndarray, held: np.ndarray) -> BaseWalk:
        """As ``_walk_numpy``, for the subtrees' strings [lo, hi), in the compiled loop (``native``)."""
        trie = self.trie
        got = native.walk(self._dfa_arrays, trie.flat_bytes, trie.offsets, trie.common_prefix,
                         lo, hi, state, np.where(held, -1, -2), self.base_dfa()[3])
        strings, origin = _expand_ranges(lo, hi)
        one, fallback, brk = got.code == native.ONE, got.code == native.FALLBACK, got.code == native.BREAK
        rest, la_off = got.at, got.la_off
        rest[one], la_off[one] = state[origin[one]], np.where(held[origin[one]], -1, -2)
        rest[fallback] = 0
        at = np.flatnonzero(brk)
        rest[at] = self.transducer.rows_at(trie.offsets[strings[at]] + rest[at])
        ends = one | (got.code == native.END)
        kind = np.where(la_off == -1, END_HELD, np.where(la_off >= 0, END_LA, END))
        kind = np.where(ends, kind, np.where(fallback, FALLBACK, np.where(self.ignored[got.term], NO_TERM, got.term)))
        keep = np.flatnonzero(ends | fallback | (brk & (rest != DEAD)))
        ends = ends[keep]
        return BaseWalk(strings[keep], kind[keep], rest[keep], origin[keep], got.where[keep],
                        np.where(ends, la_off[keep], -1), np.where(ends, got.la_term[keep], DEAD),
                        np.where(ends, got.la_where[keep], 0))

    def _walk_kept(self, lo: np.ndarray, hi: np.ndarray, state: np.ndarray, held: np.ndarray) -> native.KeptWalk:
        """The subtrees' results (``Walk``, with each string's subtree), for a lexer without columns,
        in the compiled loop: as ``_walk_native`` then ``_specialise``."""
        trie, tr = self.trie, self.transducer
        got = native.walk_kept(self._dfa_arrays, trie.flat_bytes, trie.offsets, trie.common_prefix, lo, hi, state,
                               np.where(held, -1, -2), tr.suffix, self.ignored)
        if len(got.fix_at):  # ends holding a fallback inside the string: extended states
            at = got.fix_at
            got.rest[at] = tr.end_states(got.rest[at], got.fix_term, got.strings[at], got.fix_off)
        if len(got.unknown):  # suffix rows computed now; the strings whose row is dead stay, marked DEAD
            at = got.unknown
            got.rest[at] = rows = tr.rows_at(got.rest[at])
            got.first[at[rows == DEAD]] = DEAD  # (compacting four arrays of the vocabulary's size cost more)
        return got

    @cached_property
    def _dfa_arrays(self) -> native.DFAArrays:
        return native.DFAArrays.of(*self.base_dfa()[:3])

    def _specialise(self, sym: BaseWalk, column: np.ndarray | None) -> Walk:
        """Base subtree results for the states that enter them (with the column each holds, per entry)."""
        cols = self.lexer.columns
        strings, kind, rest, _, where, la_off, la_term, la_where = sym
        k = cols.max_column if cols is not None else 0

        def col(w, at=slice(None)):
            c, n = column[at], w & (NEWLINE_SEEN - 1)
            return np.where(w >= NEWLINE_SEEN, np.minimum(n, k), np.where(c == k, k, np.minimum(c + n, k)))

        def term(t, w, at=slice(None)):
            return t if cols is None else np.where(t == cols.nl, cols.first + col(w, at), t)

        first = np.where(kind >= 0, term(kind, where), kind)
        first[kind == END_LA] = END
        rest = rest.copy()
        e = np.flatnonzero((kind == END) | (kind == END_HELD) | (kind == END_LA))  # (np.isin sorts: slower)
        if len(e) and cols is not None:
            rest[e] = cols.state_of[rest[e], col(where[e], e)]
        inside = np.nonzero(kind == END_LA)[0]
        if len(inside):
            t = term(la_term[inside], la_where[inside], inside)
            rest[inside] = self.transducer.end_states(rest[inside], np.asarray(t), strings[inside], la_off[inside])
        return Walk(strings, first, rest)

    def resolve(self, x: int, parts: list[tuple[int, Walk]]) -> Walk:
        """Subtrees ``(byte b, subtree)`` as seen from lexer state x, concatenated: fill in x's
        fallback on entering each with its byte b (see :meth:`resolve_entered`)."""
        lexer = self.lexer
        before = lexer.accept_next[lexer.base(x), [b for b, _ in parts]].tolist()
        own = lexer.fallback(x) if x >= lexer.num_states else (DEAD, b"")
        return Walk(*self.resolve_entered([arrays for _, arrays in parts], before, own)[:3])

    def resolve_entered(
        self, subtrees: list[tuple], before: list[int], own: tuple[int, bytes] = (DEAD, b"")
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Subtrees as entered by a lexer state that accepts terminal ``before[i]`` (or DEAD) just
        before subtree i's byte and whose own fallback is ``own`` (terminal, pending bytes):
        ``(strings, first, rest, i)`` concatenated. The fallback is where the lexeme could last end
        before the string: just before the byte, or the state's own fallback. Only these two
        depend on the entering state.
        """
        if not subtrees:
            return (np.zeros(0, dtype=np.int64),) * 4
        sizes = [len(a[0]) for a in subtrees]
        strings, first, rest = (np.concatenate(a) for a in zip(*subtrees))
        part = np.repeat(np.arange(len(subtrees)), sizes)
        return self.resolve_joined(strings, first, rest, part, before, own)

    def resolve_joined(self, strings: np.ndarray, first: np.ndarray, rest: np.ndarray, part: np.ndarray,
                       before: list[int], own: tuple[int, bytes] = (DEAD, b""), drop: bool = True) -> tuple[np.ndarray, ...]:
        """``resolve_entered`` of subtrees already joined (``part``: each string's subtree);
        ``first`` and ``rest`` are changed in place. ``drop=False``: the strings that die stay,
        with ``first`` DEAD (block codes read them as dead; no copies)."""
        resolve = self._resolve_native if native.ext is not None else self._resolve_numpy
        keep = resolve(strings, first, rest, part, before, own)
        if keep is None or keep.all():
            return strings, first, rest, part
        if not drop:
            first[~keep] = DEAD
            return strings, first, rest, part
        keep = np.flatnonzero(keep)
        return strings.take(keep), first.take(keep), rest.take(keep), part.take(keep)

    def _resolve_numpy(self, strings, first, rest, part, before, own) -> np.ndarray | None:
        """``resolve_joined`` in numpy: ``first`` and ``rest`` resolved in place; which strings stay
        (None: all)."""
        held_death, held_end = first == FALLBACK, first == END_HELD
        if not (held_death.any() or held_end.any()):
            return None
        lexer = self.lexer
        before = np.asarray(before, dtype=np.int64)[part]
        back = held_death & (before != DEAD)  # back up to just before the string
        rest0 = self.transducer.rows_at(self.trie.offsets[strings[back]])
        first[back] = np.where(self.ignored[before[back]], NO_TERM, before[back])
        rest[back] = rest0
        keep = np.ones(len(strings), dtype=bool)
        keep[back] = rest0 != DEAD
        own, pending = own
        if own == DEAD:  # no fallback of its own: a lexeme that dies is an error
            keep &= ~(held_death & ~back)
        first[held_end] = END
        ends = np.flatnonzero(held_end & ((before != DEAD) | (own != DEAD)))  # those that hold a fallback
        if len(ends):
            rest[ends] = self._holding(strings[ends], rest[ends], before[ends], (own, pending))
        return keep

    def _resolve_native(self, strings, first, rest, part, before, own) -> np.ndarray:
        """``_resolve_numpy`` in the compiled loop (``native.resolve_held``), then the rows not
        computed yet and the fallbacks held, in numpy."""
        tr, before = self.transducer, np.asarray(before, dtype=np.int64)
        keep, unknown, holding = native.resolve_held(strings, first, rest, part, before, own[0] != DEAD,
                                                     self.trie.offsets, tr.suffix, self.ignored)
        if len(unknown):
            rest[unknown] = rows = tr.rows_at(rest[unknown])
            keep[unknown[rows == DEAD]] = False
        if len(holding):
            rest[holding] = self._holding(strings[holding], rest[holding], before[part[holding]], own)
        return keep

    def _holding(self, strings: np.ndarray, state: np.ndarray, before: np.ndarray, own: tuple[int, bytes]) -> np.ndarray:
        """The lexer states of strings that end inside the lexeme in DFA ``state`` holding a
        fallback: ``before`` (just before the string; the pending bytes are the string) or else
        the entering state's own (its pending bytes, then the string). What the pending bytes lex
        to is read off the suffix rows and the walks (:meth:`outcome_rows`), not run byte by byte."""
        lexer, trie, tr = self.lexer, self.trie, self.transducer
        term, pending = own
        by_before = before != DEAD
        size = trie.lengths[strings].astype(np.int64) + np.where(by_before, 0, len(pending))
        go = lexer.risky[state] & (size <= MAX_BACKTRACK)  # else the fallback is forgotten (``extended``)
        rows = np.full(len(strings), DEAD, dtype=np.int64)
        mine = go & by_before
        rows[mine] = tr.rows_at(trie.offsets[strings[mine]])
        theirs = np.flatnonzero(go & ~by_before)
        if len(theirs):  # the entering state's pending bytes, then the string: from where they end
            ran = lexer.feed(0, pending)
            if ran is not None:
                got = self.outcome_rows(ran[1], strings[theirs])
                for t in reversed([t for t in ran[0] if not lexer.ignored[t]]):
                    known = got != UNKNOWN
                    got[known] = tr.outcomes.intern_many(np.full(int(known.sum()), t, dtype=np.int64), got[known])
                rows[theirs] = got
        out, fallback, tstrings = state.copy(), np.where(by_before, before, term), trie.strings

        def pending_of(i: int) -> bytes:
            return tstrings[int(strings[i])] if by_before[i] else pending + tstrings[int(strings[i])]

        slow = np.flatnonzero(go & (rows == UNKNOWN))  # those that back up to a fallback: byte by byte
        out[slow] = [lexer.extended(int(state[i]), int(fallback[i]), pending_of(i)) for i in slow.tolist()]
        fast = np.flatnonzero(go & (rows != UNKNOWN))
        out[fast] = lexer.extended_many(
            state[fast], fallback[fast], rows[fast], tr.outcomes.unpack, lambda i: pending_of(int(fast[i]))
        )
        return out

    def outcome_rows(self, x: int, strings: np.ndarray) -> np.ndarray:
        """The outcome rows of the strings read from lexer state x (DEAD where they die; UNKNOWN
        where one backs up to x's own fallback), from the suffix rows and the subtree walks."""
        lexer, trie, tr = self.lexer, self.trie, self.transducer
        out = np.full(len(strings), DEAD, dtype=np.int64)
        if x == DEAD or not len(strings):
            return out
        q = lexer.base(x)
        first = trie.first_bytes[strings].astype(np.int64)
        nxt, here = lexer.delta[q, first].astype(np.int64), lexer.accept_next[q, first].astype(np.int64)
        if q == 0:
            nxt[:] = DEAD  # from the start state a string's outcome is its suffix row at offset 0
        restart = (nxt == DEAD) & ((here != DEAD) | (q == 0))
        rows0 = tr.rows_at(trie.offsets[strings[restart]])
        out[restart] = rows0 if q == 0 else tr.emit(here[restart], rows0)
        if x >= lexer.num_states:
            out[(nxt == DEAD) & (here == DEAD)] = UNKNOWN  # the lexeme dies at the first byte: backs up
        live = np.flatnonzero(nxt != DEAD)
        if len(live):
            firsts = np.unique(first[live]).tolist()
            walk = self.resolve(x, list(zip(firsts, self.subtrees([(b, int(lexer.delta[q, b])) for b in firsts]))))
            where = np.full(len(trie), -1, dtype=np.int64)
            where[walk.strings] = np.arange(len(walk.strings))
            at = where[strings[live]]
            found = at >= 0  # the others die
            f, r = walk.first[at[found]], walk.rest[at[found]]
            row = np.where(f == DEAD, DEAD, UNKNOWN)  # UNKNOWN where FALLBACK: backs up to x's own fallback
            end = f == END
            row[end] = tr.outcomes.intern_many(f[end], r[end])
            row[f == NO_TERM] = r[f == NO_TERM]
            emits = f >= 0
            row[emits] = tr.emit(f[emits], r[emits])
            out[live[found]] = row
        return out


def is_held(first: np.ndarray) -> np.ndarray:
    """Subtree results that depend on the entering lexer state's fallback (see ``resolve``)."""
    return (first == FALLBACK) | (first == END_HELD)


def _expand_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate ``arange(lo[i], hi[i])`` for all i; also return i for each element."""
    counts = hi - lo
    src = np.repeat(np.arange(len(lo)), counts)
    vals = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    return vals, src


def _walk_base(walker: SubtreeWalks, lo, state, origin, la_off, la_term) -> list[BaseWalk]:
    """Walk the trie nodes at depth 1 whose strings begin at ``lo`` (entered in base DFA ``state``)
    down to their strings.

    ``la_off``/``la_term``: where the lexeme could last end inside the string (offset,
    terminal), or -1: the fallback it entered with is still held, -2: none. With an
    indenter, each result also carries the column (``NEWLINE_SEEN`` | count of spaces and
    tabs since the string's last newline, or since its start) where its first lexeme ends
    or where the string ends, and for strings that end holding a fallback inside themselves,
    that fallback's offset, terminal and column.
    """
    trie, rows_at, ignored = walker.trie, walker.transducer.rows_at, walker.ignored
    delta, accept_next, risky, tab = walker.base_dfa()
    track = walker.lexer.columns is not None
    lengths, matrix, levels = trie.lengths, trie.matrix, trie.level_starts
    column = la_col = np.zeros(len(lo), dtype=np.int64)  # (carried only with an indenter)
    node = np.searchsorted(levels[0], lo)  # the nodes at depth d, as indices into level_starts[d - 1]
    parts = []
    for d in range(1, len(levels)):
        if not len(node):
            break
        starts = levels[d]
        ends_at, first_child, last_child = trie.level_links(d)
        child, parent = _expand_ranges(first_child[node], last_child[node])
        c_lo, c_hi = starts[child], ends_at[child]
        p_state, c_org = state[parent], origin[parent]
        c_off, c_term = la_off[parent], la_term[parent]
        c_col, c_lacol = (column[parent], la_col[parent]) if track else (None, None)
        byte = matrix[c_lo, d]
        nxt = delta[p_state, byte].astype(np.int64)
        here = accept_next[p_state, byte].astype(np.int64)
        dies = nxt == DEAD
        # the lexeme ends before this byte, or backs up to where it last could end
        back = dies & (here == DEAD) & (c_off >= 0)
        brk = dies & ((here != DEAD) | back)
        if brk.any():
            s_ids, seg = _expand_ranges(c_lo[brk], c_hi[brk])
            bk = back[brk]
            first = np.where(bk, c_term[brk], here[brk])[seg]
            rest = rows_at(trie.offsets[s_ids] + np.where(bk, c_off[brk], d)[seg])
            ok = rest != DEAD
            first = np.where(ignored[first], NO_TERM, first)
            m = int(ok.sum())
            none, dead, zero = np.full(m, -1, np.int64), np.full(m, DEAD, np.int64), np.zeros(m, np.int64)
            f_col = np.where(bk, c_lacol[brk], c_col[brk])[seg][ok] if track else zero
            parts.append(BaseWalk(s_ids[ok], first[ok], rest[ok], c_org[brk][seg][ok], f_col, none, dead, zero))
        held = dies & (here == DEAD) & (c_off == -1)  # dies holding the entry fallback
        if held.any():
            s_ids, seg = _expand_ranges(c_lo[held], c_hi[held])
            m = len(s_ids)
            z = np.zeros(m, dtype=np.int64)
            none, dead = np.full(m, -1, np.int64), np.full(m, DEAD, np.int64)
            parts.append(BaseWalk(s_ids, np.full(m, FALLBACK, np.int64), z, c_org[held][seg], z, none, dead, z))
        alive = ~dies
        child, c_lo, c_hi, nxt, c_org, byte = child[alive], c_lo[alive], c_hi[alive], nxt[alive], c_org[alive], byte[alive]
        ends_lexeme = here[alive] != DEAD
        c_off = np.where(ends_lexeme, d, c_off[alive])
        c_term = np.where(ends_lexeme, here[alive], c_term[alive])
        if track:
            c_col, c_lacol = c_col[alive], c_lacol[alive]
            c_lacol = np.where(ends_lexeme, c_col, c_lacol)
            c_col = np.where(byte == 10, NEWLINE_SEEN, c_col + (byte == 32) + tab * (byte == 9))
        c_off = np.where(risky[nxt], c_off, -2)
        pure = walker.staying(c_lo, c_hi, nxt, d)  # nodes whose strings all stay in their state to the end
        if pure.any():
            s_ids, seg = _expand_ranges(c_lo[pure], c_hi[pure])
            off = c_off[pure]
            kind = np.where(off == -1, END_HELD, np.where(off >= 0, END_LA, END)).astype(np.int64)
            z = np.zeros(len(s_ids), np.int64)
            where, la_where = (walker.column_at_end(s_ids, d, c_col[pure][seg]), c_lacol[pure][seg]) if track else (z, z)
            parts.append(BaseWalk(s_ids, kind[seg], nxt[pure][seg], c_org[pure][seg], where, off[seg], c_term[pure][seg], la_where))
            keep = ~pure
            child, c_lo, c_hi, nxt, c_org, c_off, c_term = (x[keep] for x in (child, c_lo, c_hi, nxt, c_org, c_off, c_term))
            if track:
                c_col, c_lacol = c_col[keep], c_lacol[keep]
        ends = lengths[c_lo] == d + 1
        if ends.any():
            off = c_off[ends]
            kind = np.where(off == -1, END_HELD, np.where(off >= 0, END_LA, END)).astype(np.int64)
            z = np.zeros(len(off), np.int64)
            at, la_at = (c_col[ends], c_lacol[ends]) if track else (z, z)
            parts.append(BaseWalk(c_lo[ends], kind, nxt[ends], c_org[ends], at, off, c_term[ends], la_at))
        more = (c_hi - c_lo > 1) | ~ends
        node, state, origin, la_off, la_term = child[more], nxt[more], c_org[more], c_off[more], c_term[more]
        if track:
            column, la_col = c_col[more], c_lacol[more]
    return parts

