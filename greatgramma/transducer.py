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
masker runs the token from the state the pending bytes lex to. This module holds the suffix
rows and the outcomes; :mod:`greatgramma.subtrees` the walks.
"""

from __future__ import annotations

import threading
from functools import cached_property

import numpy as np

from . import native
from .codes import DEAD, END, UNKNOWN
from .lexing import LexingTransducer
from .trie import TokenTrie


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
        return len(self.next)  # appended after ``term``: rows below it are complete

    def settled_len(self) -> int:
        """The number of rows, once every row whose id another thread may already have read is
        complete: ``intern_rows`` writes the ids into the suffix table (read without a lock) before
        it appends the rows, both under the lock, so waiting for the lock settles them."""
        with self._lock:
            return len(self.next)

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

    def intern_rows(self, term: np.ndarray, nxt: np.ndarray, depth: np.ndarray, at: np.ndarray,
                    memo: np.ndarray, ignored: np.ndarray) -> None:
        """:func:`greatgramma.native.intern_rows` on these rows: ``memo[at]`` set, new rows added."""
        with self._lock:
            new_term, new_next = native.intern_rows(
                term, nxt, depth, at, memo, ignored, np.array(self.term, dtype=np.int64), np.array(self.next, dtype=np.int64))
            first = len(self.term)
            terms, nexts = new_term.tolist(), new_next.tolist()
            self._index.update(zip(zip(terms, nexts), range(first, first + len(terms))))
            self.term.extend(terms)
            self.next.extend(nexts)

    def unpack(self, o: int) -> tuple[tuple[int, ...], int]:
        """(terminals, end state) of row ``o``."""
        try:
            return self._unpack(o)
        except IndexError:  # a row read from the suffix table (or one after it) that another thread is interning
            self.settled_len()
            return self._unpack(o)

    def _unpack(self, o: int) -> tuple[tuple[int, ...], int]:
        terms = []
        term, nxt = self.term, self.next
        while term[o] != END:
            terms.append(term[o])
            o = nxt[o]
        return tuple(terms), nxt[o]


class TokenTransducer:
    """The suffix rows: the outcome of feeding ``string[j:]`` to the start state, for token string
    positions j (shared by all lexer states), with the interned outcome rows they name.

    Rows are computed on first use (:meth:`rows_at`), for the positions a request reaches, and
    memoized: each entry is a function of its position. :meth:`fill` computes them all. What a
    token does from a given lexer state before its first lexeme ends is walked per trie subtree
    (:class:`greatgramma.subtrees.SubtreeWalks`). Thread-safe.
    """

    def __init__(self, lexer: LexingTransducer, trie: TokenTrie, saved: dict[str, np.ndarray] | None = None) -> None:
        """Start with no rows computed, or take them from ``saved`` (:meth:`from_arrays`)."""
        self.lexer = lexer
        self.trie = trie
        self.outcomes = Outcomes()
        self.ignored = np.array(lexer.ignored + [False], dtype=bool)  # index DEAD (-1): not ignored
        self._lock = threading.Lock()
        if saved is None:
            self.suffix = np.full(int(trie.offsets[-1]), UNKNOWN, dtype=np.int32)
        else:
            self.suffix = saved["suffix"].astype(np.int32)
            self.outcomes.term, self.outcomes.next = saved["outcome_term"].tolist(), saved["outcome_next"].tolist()

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The suffix rows (UNKNOWN where not computed) and the outcome rows (which may name
        extended lexer states: save those too), as one snapshot while other threads fill rows."""
        with self._lock:  # rows are interned only under it (``_compute``)
            return {
                "suffix": self.suffix.copy(),
                "outcome_term": np.array(self.outcomes.term, dtype=np.int64),
                "outcome_next": np.array(self.outcomes.next, dtype=np.int64),
            }

    @classmethod
    def from_arrays(cls, lexer: LexingTransducer, trie: TokenTrie, arrays: dict[str, np.ndarray]) -> TokenTransducer:
        """Inverse of :meth:`to_arrays` (the lexer must have the extended states they name)."""
        return cls(lexer, trie, saved=arrays)

    def rows_at(self, flat: np.ndarray) -> np.ndarray:
        """The suffix rows at flat byte positions (``trie.offsets[s] + j``), as int64."""
        got = self.suffix[flat]
        missing = got == UNKNOWN
        if missing.any():
            with self._lock:
                todo = flat[missing]
                if native.ext is None:  # (the compiled loop takes each position once itself)
                    todo = self._distinct(todo)
                self._compute(todo[self.suffix[todo] == UNKNOWN])
            got = self.suffix[flat]
        elif len(got) and got.max() >= len(self.outcomes):  # rows another thread is interning
            self.outcomes.settled_len()
        return got.astype(np.int64)

    def fill(self) -> None:
        """Compute every suffix row (eager preprocessing)."""
        with self._lock:
            self._compute(np.flatnonzero(self.suffix == UNKNOWN))

    @property
    def num_computed(self) -> int:
        return int(np.count_nonzero(self.suffix != UNKNOWN))

    def _distinct(self, flat: np.ndarray) -> np.ndarray:
        """The positions sorted, once each."""
        if len(flat) * 64 < len(self.suffix):
            return np.unique(flat)
        mark = np.zeros(len(self.suffix), dtype=bool)
        mark[flat] = True
        return np.flatnonzero(mark)

    def emit(self, terms: np.ndarray, nexts: np.ndarray) -> np.ndarray:
        """Outcome of emitting ``terms[i]`` then continuing with outcome ``nexts[i]`` (ignored ones vanish)."""
        out = np.full(len(terms), DEAD, dtype=np.int64)
        dead = (terms == DEAD) | (nexts == DEAD)
        skip = ~dead & self.ignored[terms]
        out[skip] = nexts[skip]
        keep = ~dead & ~skip
        out[keep] = self.outcomes.intern_many(terms[keep], nexts[keep])
        return out

    def _compute(self, todo: np.ndarray) -> None:
        """Fill the suffix rows at positions ``todo`` (not yet computed) and at the positions their
        first lexemes break at, recursively; then resolve them from the last byte position back."""
        if native.ext is not None:
            return self._compute_native(todo)
        memo = self.suffix
        seen = np.zeros(len(memo), dtype=bool)
        walked = []
        while len(todo):
            seen[todo] = True
            term, nxt = self._first_lexemes(todo)
            walked.append((todo, term, nxt))
            cont = nxt[term >= 0]  # where the rest of the string starts after a break
            todo = self._distinct(cont[(memo[cont] == UNKNOWN) & ~seen[cont]])
        if not walked:
            return
        flat, term, nxt = (np.concatenate(x) for x in zip(*walked))
        dead = term == DEAD
        memo[flat[dead]] = DEAD
        flat, term, nxt = flat[~dead], term[~dead], nxt[~dead]
        pos = self.trie.position_offset[flat].astype(np.int64)
        order = np.argsort((self.trie.matrix.shape[1] - pos).astype(np.int16), kind="stable")  # radix sort
        levels = np.split(order, np.flatnonzero(np.diff(pos[order])) + 1) if len(order) else []
        for sel in levels:  # by position in the string, last first: continuations are further on
            t, n, at = term[sel], nxt[sel], flat[sel]
            is_end = t == END
            memo[at[is_end]] = self.outcomes.intern_many(t[is_end], n[is_end])
            brk = ~is_end
            memo[at[brk]] = self.emit(t[brk], memo[n[brk]].astype(np.int64))

    def _compute_native(self, todo: np.ndarray) -> None:
        """``_compute`` in the compiled loops: the first lexemes of every position met, then the
        rows interned by depth (how many lexemes on their rest is not known yet), shallowest first."""
        trie, memo = self.trie, self.suffix
        flat, term, nxt, la_at, la_term, depth = native.suffix_lexemes(
            self._dfa_arrays, trie.flat_bytes, trie.position_end, memo, todo, trie.slot_pool)
        end = np.flatnonzero(term == END)
        if len(end):
            string = trie.position_string[flat[end]].astype(np.int64)
            off = np.where(la_at[end] >= 0, la_at[end] - trie.offsets[string], -1)
            nxt[end] = self.end_states(nxt[end].astype(np.int64), la_term[end].astype(np.int64), string, off)
        self.outcomes.intern_rows(term, nxt, depth, flat, memo, self.ignored[:-1])

    def _first_lexemes(self, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """From the start state at each position: the break terminal and the position the rest
        starts at (maximal munch, backing up to the last possible end), or END and the lexer
        state the string ends in, or DEAD."""
        trie, lexer = self.trie, self.lexer
        delta, accept_next, risky = lexer.delta, lexer.accept_next, lexer.risky
        data = trie.flat_bytes
        res_term = np.full(len(flat), DEAD, dtype=np.int64)  # break terminal, END, or DEAD
        res_next = np.full(len(flat), DEAD, dtype=np.int64)  # flat position to continue at, or end state
        state = delta[0, data[flat]].astype(np.int64)
        idx = np.flatnonzero(state != DEAD)  # (most strings die at their first byte)
        at, state = flat[idx] + 1, state[idx]  # ``at``: flat position of the next byte
        string = trie.position_string[at - 1].astype(np.int64)
        stop = trie.offsets[string + 1]
        la_at = np.full(len(idx), -1, dtype=np.int64)  # flat position where the lexeme could last end (-1: none)
        la_term = np.full(len(idx), DEAD, dtype=np.int64)
        while len(idx):
            done = at == stop
            if done.any():
                res_term[idx[done]] = END
                off = np.where(la_at[done] >= 0, la_at[done] - trie.offsets[string[done]], -1)
                res_next[idx[done]] = self.end_states(state[done], la_term[done], string[done], off)
                go = ~done
                idx, string, at, stop, state, la_at, la_term = (x[go] for x in (idx, string, at, stop, state, la_at, la_term))
            byte = data[at]
            nxt = delta[state, byte].astype(np.int64)
            here = accept_next[state, byte].astype(np.int64)
            brk = nxt == DEAD
            back = brk & (here == DEAD) & (la_at >= 0)  # back up to the last possible end
            res_term[idx[brk]] = np.where(back[brk], la_term[brk], here[brk])
            res_next[idx[brk]] = np.where(back[brk], la_at[brk], at[brk])
            go = ~brk
            idx, string, at, stop, state = idx[go], string[go], at[go], stop[go], state[go]
            la_at, la_term, here, nxt = la_at[go], la_term[go], here[go], nxt[go]
            ends = here != DEAD
            la_at, la_term = np.where(ends, at, la_at), np.where(ends, here, la_term)
            la_at = np.where(risky[nxt], la_at, -1)
            at, state = at + 1, nxt
        return res_term, res_next

    @cached_property
    def _dfa_arrays(self) -> native.DFAArrays:
        return native.DFAArrays.of(self.lexer.delta, self.lexer.accept_next, self.lexer.risky)

    def end_states(self, state: np.ndarray, term: np.ndarray, string: np.ndarray, off: np.ndarray) -> np.ndarray:
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

