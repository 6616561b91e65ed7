"""The token-level lexing transducer (paper section 3.1-3.2), built with array operations over the vocabulary.

For a lexer state q and a token t, running t's bytes through the lexing transducer gives the
parser-visible terminals it completes and the lexer state it ends in. We call that pair an
*outcome* and intern it, so tokens with the same outcome share all later work (the outcomes
reached from the lexer states are the paper's realizable terminal sequences, and grouping tokens
by outcome is its inverse token spanner table).

Two facts make this cheap. After a lexeme ends, the transducer restarts from the start state,
so everything a token does after its first emission is independent of q: it is computed once
per (token, byte offset), for all offsets together. And the part before the first emission is
a walk of the token trie from q that stops at the first dead byte, sharing token prefixes.
A lexeme that dies backs up to where it could last end: inside the token, the rest is again a
suffix row; before the token (an extended lexer state), the walk reports FALLBACK and the
masker runs the token from the state the pending bytes lex to.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .errors import ResourceLimitError
from .lexer import DEAD, LexerDFA

END = -2  # outcome row kind: no further terminal, just the end state
NO_TERM = -3  # walk result: the first lexeme is ignored, nothing is emitted for it
FALLBACK = -4  # walk result from an extended state: the lexeme dies and backs up before the token
_END_HELD = -5  # subtree result: ends inside the lexeme, still holding the entry fallback
_END_LA = -6  # base subtree result: ends inside the lexeme, holding a fallback inside the string
_NEWLINE_SEEN = 1 << 40  # column flag in base walks: the count is since a newline in the string


@dataclass(frozen=True, eq=False)
class TokenTrie:
    """The distinct non-empty token byte strings, sorted, as a padded byte matrix with trie levels."""

    strings: tuple[bytes, ...]
    matrix: np.ndarray  # uint8[n, L], zero padded
    lengths: np.ndarray  # int32[n]
    offsets: np.ndarray  # int64[n + 1]: flat index of (string, byte position)
    level_starts: tuple[np.ndarray, ...]  # [d]: sorted first strings of the trie nodes at depth d + 1
    token_of_string_ptr: np.ndarray  # CSR: token ids with the bytes of string i
    token_of_string: np.ndarray

    @classmethod
    def build(cls, token_bytes: list[bytes | None] | tuple[bytes | None, ...]) -> "TokenTrie":
        ids = [t for t, b in enumerate(token_bytes) if b]
        ids.sort(key=token_bytes.__getitem__)
        ordered = [token_bytes[t] for t in ids]
        first = np.array([True] + [a != b for a, b in zip(ordered[1:], ordered[:-1])], dtype=bool)[: len(ids)]
        strings = tuple(b for b, f in zip(ordered, first.tolist()) if f)
        n = len(strings)
        lengths = np.fromiter(map(len, strings), dtype=np.int32, count=n)
        width = int(lengths.max()) if n else 1
        flat = np.frombuffer(b"".join(strings), dtype=np.uint8)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        matrix = np.zeros((n, width), dtype=np.uint8)
        rows = np.repeat(np.arange(n), lengths)
        cols = np.arange(len(flat)) - np.repeat(offsets[:-1], lengths)
        matrix[rows, cols] = flat
        # longest common prefix with the previous string
        lcp = np.zeros(n, dtype=np.int32)
        if n > 1:
            minlen = np.minimum(lengths[1:], lengths[:-1])
            differ = (matrix[1:] != matrix[:-1]) | (np.arange(width)[None, :] >= minlen[:, None])
            lcp[1:] = np.argmax(differ, axis=1)
            lcp[1:] = np.where(differ.any(axis=1), lcp[1:], minlen)
        levels = tuple(np.nonzero((lcp < d) & (lengths >= d))[0].astype(np.int64) for d in range(1, width + 1))
        ptr = np.append(np.nonzero(first)[0], len(ids)).astype(np.int64)
        return cls(strings, matrix, lengths, offsets, levels, ptr, np.array(ids, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.strings)


def is_held(first: np.ndarray) -> np.ndarray:
    """Subtree results that depend on the entering lexer state's fallback (see ``resolve``)."""
    return (first == FALLBACK) | (first == _END_HELD)


def _expand_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate ``arange(lo[i], hi[i])`` for all i; also return i for each element."""
    counts = hi - lo
    src = np.repeat(np.arange(len(lo)), counts)
    vals = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    return vals, src


class Outcomes:
    """Interned (parser-visible terminals, end lexer state) values, as linked rows sharing tails.

    Row o is either ``(END, state)`` or ``(terminal, next row)``. Thread-safe to grow.
    """

    def __init__(self) -> None:
        self.term: list[int] = []
        self.next: list[int] = []  # next row, or the end state for END rows
        self._index: dict[tuple[int, int], int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.term)

    def intern_many(self, terms: np.ndarray, nexts: np.ndarray) -> np.ndarray:
        """Row ids for pairs (terms[i], nexts[i]); a DEAD ``next`` (for non-END rows) gives DEAD."""
        out = np.full(len(terms), DEAD, dtype=np.int64)
        ok = (terms == END) | (nexts != DEAD)
        if not ok.any():
            return out
        keys = (terms[ok].astype(np.int64) << 32) + nexts[ok].astype(np.int64)
        uniq, inv = np.unique(keys, return_inverse=True)
        ids = np.empty(len(uniq), dtype=np.int64)
        with self._lock:
            index, term, nxt = self._index, self.term, self.next
            for k, packed in enumerate(uniq.tolist()):
                key = (a, b) = (packed >> 32, packed & 0xFFFFFFFF)  # nexts are >= 0 here
                got = index.get(key)
                if got is None:
                    got = index[key] = len(term)
                    term.append(a)
                    nxt.append(b)
                ids[k] = got
        out[ok] = ids[inv.reshape(-1)]
        return out

    def unpack(self, o: int) -> tuple[tuple[int, ...], int]:
        """(terminals, end state) of row ``o``."""
        terms = []
        term, nxt = self.term, self.next
        while term[o] != END:
            terms.append(term[o])
            o = nxt[o]
        return tuple(terms), nxt[o]


class TokenTransducer:
    """(lexer state, token) -> outcome, computed for all tokens of a lexer state at once and cached."""

    def __init__(self, lexer: LexerDFA, trie: TokenTrie, *, saved: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
        self.lexer = lexer
        self.trie = trie
        self.outcomes = Outcomes()
        self._ignored = np.array([t.ignored for t in lexer.terminals] + [False], dtype=bool)
        if saved is None:
            self.suffix = self._suffix_outcomes()
        else:  # from an artifact: (suffix rows, outcome terms, outcome nexts)
            self.suffix = saved[0].astype(np.int64)
            self.outcomes.term, self.outcomes.next = saved[1].tolist(), saved[2].tolist()
        self._cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._subtrees: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._base_subtrees: dict[tuple[int, int], tuple[np.ndarray, ...]] = {}
        self._lock = threading.Lock()

    def _emit(self, terms: np.ndarray, nexts: np.ndarray) -> np.ndarray:
        """Outcome of emitting ``terms[i]`` then continuing with outcome ``nexts[i]`` (ignored ones vanish)."""
        out = np.full(len(terms), DEAD, dtype=np.int64)
        dead = (terms == DEAD) | (nexts == DEAD)
        skip = ~dead & self._ignored[terms]
        out[skip] = nexts[skip]
        keep = ~dead & ~skip
        out[keep] = self.outcomes.intern_many(terms[keep], nexts[keep])
        return out

    def _suffix_outcomes(self) -> np.ndarray:
        """Outcome of feeding string[j:] to the start state, for every (string, j), as a flat array."""
        trie, lexer = self.trie, self.lexer
        delta, accept_next, risky = lexer.delta, lexer.accept_next, lexer.risky
        lengths, offsets, matrix = trie.lengths, trie.offsets, trie.matrix
        total = int(offsets[-1])
        res_term = np.full(total, DEAD, dtype=np.int64)  # break terminal, END, or DEAD
        res_next = np.full(total, DEAD, dtype=np.int64)  # flat index to continue at, or end state
        flat = np.arange(total, dtype=np.int64)
        string = np.repeat(np.arange(len(trie), dtype=np.int64), lengths)
        pos = flat - offsets[string]
        state = delta[0, matrix[string, pos]].astype(np.int64)
        alive = state != DEAD
        idx, string, pos, state = flat[alive], string[alive], pos[alive] + 1, state[alive]
        la_off = np.full(len(idx), -1, dtype=np.int64)  # last point the lexeme could end (-1: none)
        la_term = np.full(len(idx), DEAD, dtype=np.int64)
        while len(idx):
            done = pos == lengths[string]
            res_term[idx[done]] = END
            res_next[idx[done]] = self._end_states(state[done], la_term[done], string[done], la_off[done])
            go = ~done
            idx, string, pos, state, la_off, la_term = idx[go], string[go], pos[go], state[go], la_off[go], la_term[go]
            byte = matrix[string, pos]
            nxt = delta[state, byte].astype(np.int64)
            here = accept_next[state, byte].astype(np.int64)
            brk = nxt == DEAD
            back = brk & (here == DEAD) & (la_off >= 0)  # back up to the last possible end
            res_term[idx[brk]] = np.where(back[brk], la_term[brk], here[brk])
            res_next[idx[brk]] = offsets[string[brk]] + np.where(back[brk], la_off[brk], pos[brk])
            go = ~brk
            idx, string, pos, state = idx[go], string[go], pos[go], state[go]
            la_off, la_term, here, nxt = la_off[go], la_term[go], here[go], nxt[go]
            ends = here != DEAD
            la_off, la_term = np.where(ends, pos, la_off), np.where(ends, here, la_term)
            la_off = np.where(risky[nxt], la_off, -1)
            pos, state = pos + 1, nxt
        # resolve the chains from the last byte position backwards
        out = np.full(total, DEAD, dtype=np.int64)
        pos_all = flat - np.repeat(offsets[:-1], lengths)
        order = np.argsort(-pos_all, kind="stable")
        counts = np.bincount(pos_all, minlength=1)[::-1]
        for sel in np.split(order, np.cumsum(counts)[:-1]):
            t, n = res_term[sel], res_next[sel]
            is_end = t == END
            out[sel[is_end]] = self.outcomes.intern_many(t[is_end], n[is_end])
            brk = ~is_end & (t != DEAD)
            out[sel[brk]] = self._emit(t[brk], out[n[brk]])
        return out

    def _end_states(self, state: np.ndarray, term: np.ndarray, string: np.ndarray, off: np.ndarray) -> np.ndarray:
        """Lexer states of lexemes left unfinished in DFA ``state`` whose last possible end was
        at byte ``off`` of ``string`` as ``term`` (off < 0: none): extended states where needed."""
        out = state.copy()
        held = np.nonzero((off >= 0) & self.lexer.risky[state])[0]
        if len(held):
            strings, extended = self.trie.strings, self.lexer.extended
            for i, q, t, s, o in zip(
                held.tolist(), state[held].tolist(), term[held].tolist(), string[held].tolist(), off[held].tolist()
            ):
                out[i] = extended(q, t, strings[s][o:])
        return out

    def walk(self, x: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For lexer state x, the strings not dead from x and what each does: ``(strings, first, rest)``.

        ``first`` is the terminal the string's first lexeme ends with, then ``rest`` is the outcome
        row of the remaining bytes from the start state; ``first`` is NO_TERM when that lexeme is
        ignored, END when the string never leaves the lexeme (``rest`` is then the end state),
        and FALLBACK when, from an extended state, the lexeme dies before it could end again:
        it backs up to x's fallback, and the string runs from ``lexer.relexed(x)``.
        """
        got = self._cache.get(x)
        if got is None:
            parts = [(s, f, r) for _, s, f, r in self.blocks(x)]
            got = tuple(np.concatenate(p) for p in zip(*parts)) if parts else (np.zeros(0, np.int64),) * 3
            with self._lock:
                got = self._cache.setdefault(x, got)
        return got

    def blocks(self, x: int) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """``walk(x)`` per first byte: ``(byte, strings, first, rest)``."""
        lexer, trie = self.lexer, self.trie
        q = lexer.base(x)
        delta, accept_next = lexer.delta[q], lexer.accept_next[q]
        rest0 = self.suffix[trie.offsets[:-1]]
        if q == 0:  # from the start state a string's outcome is its suffix row at offset 0
            return [
                (b, np.arange(lo, hi, dtype=np.int64)[ok], np.full(int(ok.sum()), NO_TERM, dtype=np.int64), rest0[lo:hi][ok])
                for b, lo, hi in self.root_children
                for ok in [rest0[lo:hi] != DEAD]
            ]
        out = []
        live = []
        for b, lo, hi in self.root_children:
            if delta[b] != DEAD:
                live.append((b, lo, hi))
                continue
            ids = np.arange(lo, hi, dtype=np.int64)
            t = int(accept_next[b])
            if t != DEAD:  # the lexeme ends before b: the string runs from the start state
                first = np.full(hi - lo, NO_TERM if self._ignored[t] else t, dtype=np.int64)
            elif x >= lexer.num_states:
                out.append((b, ids, np.full(hi - lo, FALLBACK, dtype=np.int64), np.zeros(hi - lo, dtype=np.int64)))
                continue
            else:
                continue
            ok = rest0[lo:hi] != DEAD
            out.append((b, ids[ok], first[ok], rest0[lo:hi][ok]))
        walked = self.subtrees([(b, int(delta[b])) for b, _, _ in live])
        for (b, _, _), arrays in zip(live, walked):
            out.append((b, *self.resolve(x, [(b, arrays)])))
        return out

    def resolve(self, x: int, parts: list[tuple[int, tuple]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Subtrees ``(byte b, subtree)`` as seen from lexer state x, concatenated: fill in x's
        fallback on entering each with its byte b (see :meth:`resolve_entered`)."""
        lexer = self.lexer
        before = lexer.accept_next[lexer.base(x), [b for b, _ in parts]].tolist()
        own = lexer.fallback(x) if x >= lexer.num_states else (DEAD, b"")
        return self.resolve_entered([arrays for _, arrays in parts], before, own)[:3]

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
        held_death, held_end = first == FALLBACK, first == _END_HELD
        if not (held_death.any() or held_end.any()):
            return strings, first, rest, part
        lexer = self.lexer
        before = np.asarray(before, dtype=np.int64)[part]
        back = held_death & (before != DEAD)  # back up to just before the string
        rest0 = self.suffix[self.trie.offsets[strings[back]]]
        first[back] = np.where(self._ignored[before[back]], NO_TERM, before[back])
        rest[back] = rest0
        keep = np.ones(len(strings), dtype=bool)
        keep[back] = rest0 != DEAD
        own, pending = own
        if own == DEAD:  # no fallback of its own: a lexeme that dies is an error
            keep &= ~(held_death & ~back)
        first[held_end] = END
        ends = np.flatnonzero(held_end & ((before != DEAD) | (own != DEAD)))  # those that hold a fallback
        if len(ends):
            tstrings, extended = self.trie.strings, lexer.extended
            rest[ends] = [
                extended(r, t, tstrings[s]) if t != DEAD else extended(r, own, pending + tstrings[s])
                for s, r, t in zip(strings[ends].tolist(), rest[ends].tolist(), before[ends].tolist())
            ]
        return strings[keep], first[keep], rest[keep], part[keep]

    @property
    def root_children(self) -> list[tuple[int, int, int]]:
        """(first byte, first string, end string) of each child of the trie root."""
        got = self.__dict__.get("_root")
        if got is None:
            starts = self.trie.level_starts[0] if self.trie.level_starts else np.zeros(0, dtype=np.int64)
            ends = np.append(starts[1:], len(self.trie))
            got = self.__dict__["_root"] = [
                (int(self.trie.matrix[lo, 0]), int(lo), int(hi)) for lo, hi in zip(starts.tolist(), ends.tolist())
            ]
        return got

    def walk_all_subtrees(self, max_entries: int = 20_000_000) -> int:
        """Walk every (first byte, lexer state) subtree that any lexer state can enter (preprocessing).

        Cheap because subtrees are shared between lexer states and walked in one batch; after it,
        no mask has to walk the trie. Returns how many subtrees there are.
        """
        delta = self.lexer.delta
        firsts = np.array([b for b, _, _ in self.root_children], dtype=np.int64)
        states = delta[1:, firsts] if len(firsts) else np.zeros((0, 0), dtype=delta.dtype)
        found = np.unique(np.stack([np.broadcast_to(firsts, states.shape), states], axis=-1).reshape(-1, 2), axis=0)
        pairs = [(int(b), int(s)) for b, s in found.tolist() if s != DEAD]
        span = {b: hi - lo for b, lo, hi in self.root_children}
        cols = self.lexer.columns
        if cols is not None:  # walked once per base state (then specialised per column on use)
            pairs = sorted({(b, int(cols.state_base[s])) for b, s in pairs})
        bound = sum(span[b] for b, _ in pairs)
        if bound > max_entries:
            raise ResourceLimitError(
                f"token-level tables would hold up to {bound:,} entries (limit {max_entries:,}); "
                "simplify the terminals or raise max_token_table_entries"
            )
        done = self._subtrees if cols is None else self._base_subtrees
        self._fill_base_subtrees([p for p in pairs if p not in done])
        return len(pairs)

    @property
    def num_subtrees(self) -> int:
        return len(self._subtrees) if self.lexer.columns is None else len(self._base_subtrees)

    def subtrees(self, pairs: list[tuple[int, int]]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``walk``'s result restricted to the strings that start with byte b, entered in state s after b.

        A subtree is shared by every lexer state whose transition on b leads to s; new ones
        are walked together in one batch.
        """
        todo = [p for p in pairs if p not in self._subtrees]
        cols = self.lexer.columns
        if cols is None:
            self._fill_base_subtrees(todo)
        elif todo:
            base = [(b, int(cols.state_base[st])) for b, st in todo]
            self._fill_base_subtrees([p for p in dict.fromkeys(base) if p not in self._base_subtrees])
            syms = [self._base_subtrees[key] for key in base]
            sizes = np.array([len(sym[0]) for sym in syms], dtype=np.int64)
            joined = tuple(np.concatenate(arrays) for arrays in zip(*syms))
            column = np.repeat(cols.state_column[[st for _, st in todo]], sizes)
            ends = np.cumsum(sizes).tolist()
            spans = list(zip([0] + ends[:-1], ends))
            strings, first, rest = self._specialise(joined, column)
            with self._lock:
                for pair, (i, j) in zip(todo, spans):
                    self._subtrees.setdefault(pair, (strings[i:j], first[i:j], rest[i:j]))
        return [self._subtrees[p] for p in pairs]

    # Walks run on the base DFA: the lexer's own, or with an indenter the DFA without the column
    # counter (ColumnMap); ``_specialise`` then fills in the column of the state that enters.

    def _base_dfa(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        cols, lexer = self.lexer.columns, self.lexer
        if cols is None:
            return lexer.delta, lexer.accept_next, lexer.risky, lexer.tab_len
        return cols.base_delta, cols.base_accept_next, cols.base_risky, cols.tab_len

    def _fill_base_subtrees(self, pairs: list[tuple[int, int]]) -> None:
        if not pairs:
            return
        span = {b: (lo, hi) for b, lo, hi in self.root_children}
        lo = np.array([span[b][0] for b, _ in pairs], dtype=np.int64)
        hi = np.array([span[b][1] for b, _ in pairs], dtype=np.int64)
        state = np.array([q for _, q in pairs], dtype=np.int64)
        origin = np.arange(len(pairs))
        n = len(pairs)
        one = self.trie.lengths[lo] == 1  # a one-byte string: it ends right here, inside the lexeme
        held = self._base_dfa()[2][state]  # the lexeme keeps whatever fallback it entered with
        k = int(one.sum())
        z = np.zeros(k, dtype=np.int64)
        parts = [
            (lo[one], np.where(held[one], _END_HELD, END).astype(np.int64), state[one], origin[one], z)
            + (np.full(k, -1, dtype=np.int64), np.full(k, DEAD, dtype=np.int64), z)
        ]
        la_off = np.where(held, -1, -2).astype(np.int64)
        parts += self._walk_base(lo, hi, state, origin, la_off, np.full(n, DEAD, dtype=np.int64))
        arrays = [np.concatenate(x) for x in zip(*parts)]
        org = arrays.pop(3)
        order = np.argsort(org, kind="stable")
        bounds = np.searchsorted(org[order], np.arange(n + 1))
        plain = self.lexer.columns is None  # then the base DFA is the lexer's: store the results as they are
        for i, pair in enumerate(pairs):
            sel = order[bounds[i] : bounds[i + 1]]
            sym = tuple(a[sel] for a in arrays)
            got = self._specialise(sym, None) if plain else sym
            with self._lock:
                (self._subtrees if plain else self._base_subtrees).setdefault(pair, got)

    def _walk_base(self, lo, hi, state, origin, la_off, la_term):
        """Walk trie nodes [lo, hi) at depth 1 (entered in base DFA ``state``) down to their strings.

        ``la_off``/``la_term``: where the lexeme could last end inside the string (offset,
        terminal), or -1: the fallback it entered with is still held, -2: none. With an
        indenter, each result also carries the column (``_NEWLINE_SEEN`` | count of spaces and
        tabs since the string's last newline, or since its start) where its first lexeme ends
        or where the string ends, and for strings that end holding a fallback inside themselves,
        that fallback's offset, terminal and column.
        """
        trie = self.trie
        delta, accept_next, risky, tab = self._base_dfa()
        track = self.lexer.columns is not None
        lengths, matrix, levels = trie.lengths, trie.matrix, trie.level_starts
        column = np.zeros(len(lo), dtype=np.int64)
        la_col = column.copy()
        parts = []
        for d in range(1, len(levels)):
            if not len(lo):
                break
            starts = levels[d]
            a, b = np.searchsorted(starts, lo), np.searchsorted(starts, hi)
            child, parent = _expand_ranges(a, b)
            c_lo = starts[child]
            c_hi = np.where(child + 1 < b[parent], starts[np.minimum(child + 1, len(starts) - 1)], hi[parent])
            p_state, c_org = state[parent], origin[parent]
            c_off, c_term, c_col, c_lacol = la_off[parent], la_term[parent], column[parent], la_col[parent]
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
                rest = self.suffix[trie.offsets[s_ids] + np.where(bk, c_off[brk], d)[seg]]
                f_col = np.where(bk, c_lacol[brk], c_col[brk])[seg]
                ok = rest != DEAD
                first = np.where(self._ignored[first], NO_TERM, first)
                m = int(ok.sum())
                parts.append(
                    (s_ids[ok], first[ok], rest[ok], c_org[brk][seg][ok], f_col[ok])
                    + (np.full(m, -1, dtype=np.int64), np.full(m, DEAD, dtype=np.int64), np.zeros(m, np.int64))
                )
            held = dies & (here == DEAD) & (c_off == -1)  # dies holding the entry fallback
            if held.any():
                s_ids, seg = _expand_ranges(c_lo[held], c_hi[held])
                m = len(s_ids)
                z = np.zeros(m, dtype=np.int64)
                parts.append(
                    (s_ids, np.full(m, FALLBACK, dtype=np.int64), z, c_org[held][seg], z)
                    + (np.full(m, -1, dtype=np.int64), np.full(m, DEAD, dtype=np.int64), z)
                )
            alive = ~dies
            c_lo, c_hi, nxt, c_org, byte = c_lo[alive], c_hi[alive], nxt[alive], c_org[alive], byte[alive]
            c_col, c_lacol = c_col[alive], c_lacol[alive]
            ends_lexeme = here[alive] != DEAD
            c_off = np.where(ends_lexeme, d, c_off[alive])
            c_term = np.where(ends_lexeme, here[alive], c_term[alive])
            if track:
                c_lacol = np.where(ends_lexeme, c_col, c_lacol)
                c_col = np.where(byte == 10, _NEWLINE_SEEN, c_col + (byte == 32) + tab * (byte == 9))
            c_off = np.where(risky[nxt], c_off, -2)
            ends = lengths[c_lo] == d + 1
            if ends.any():
                off = c_off[ends]
                kind = np.where(off == -1, _END_HELD, np.where(off >= 0, _END_LA, END)).astype(np.int64)
                parts.append((c_lo[ends], kind, nxt[ends], c_org[ends], c_col[ends], off, c_term[ends], c_lacol[ends]))
            more = (c_hi - c_lo > 1) | ~ends
            lo, hi, state, origin = c_lo[more], c_hi[more], nxt[more], c_org[more]
            la_off, la_term, column, la_col = c_off[more], c_term[more], c_col[more], c_lacol[more]
        return parts

    def _specialise(self, sym, column: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Base subtree results for the states that enter them (with the column each holds, per entry)."""
        cols = self.lexer.columns
        strings, kind, rest, where, la_off, la_term, la_where = sym
        k = cols.max_column if cols is not None else 0

        def col(w, at=slice(None)):
            c, n = column[at], w & (_NEWLINE_SEEN - 1)
            return np.where(w >= _NEWLINE_SEEN, np.minimum(n, k), np.where(c == k, k, np.minimum(c + n, k)))

        def term(t, w, at=slice(None)):
            return t if cols is None else np.where(t == cols.nl, cols.first + col(w, at), t)

        first = np.where(kind >= 0, term(kind, where), kind)
        first[kind == _END_LA] = END
        rest = rest.copy()
        e = np.nonzero(np.isin(kind, (END, _END_HELD, _END_LA)))[0]
        if len(e) and cols is not None:
            rest[e] = cols.state_of[rest[e], col(where[e], e)]
        inside = np.nonzero(kind == _END_LA)[0]
        if len(inside):
            t = term(la_term[inside], la_where[inside], inside)
            rest[inside] = self._end_states(rest[inside], np.asarray(t), strings[inside], la_off[inside])
        return strings, first, rest
