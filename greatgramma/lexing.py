"""The lexing transducer (paper section 3.1): maximal munch over the lexer DFA, with the backing-up states it meets.

When a byte has no live transition, the lexeme ends where it last could end (with one byte of
lookahead for guards such as ``(?!"")``) and the bytes after that point are lexed again from
the start, as Python's ``re`` does inside Lark. Backtracking is bounded: the last accepting
point (a *fallback*) is remembered only while the lexeme can still die on valid UTF-8 before
it can end again (``risky`` states), so the bytes since that point stay short. A lexer state is
then either a DFA state ``q < Q`` or an *extended* state ``Q + e``: DFA state, fallback
terminal and the pending bytes after it.

Extended states are interned here, numbered in the order they are met: compiling meets them in
a fixed order (the artifact keeps their keys and loading replays them), decoding may meet more.
"""

from __future__ import annotations

import threading

import numpy as np

from .codes import ANY_COLUMN, DEAD
from .lexer import MAX_BACKTRACK, LexerDFA

Path = tuple[tuple[int, ...], int]  # (parser-visible terminals emitted, lexer state after them)


class LexingTransducer:
    """Runs a :class:`LexerDFA` on bytes; owns the extended states. Thread-safe.

    ``columns``: with an indenter, how the column-split states map to the DFA without the
    counter (:class:`greatgramma.indenter.ColumnMap`), else None.
    """

    def __init__(self, dfa: LexerDFA, columns=None) -> None:
        self.dfa, self.columns = dfa, columns
        self.terminals = dfa.terminals
        self.num_states = dfa.num_states  # DFA states; extended ones come after
        self.delta, self.accept, self.accept_next, self.risky = dfa.delta, dfa.accept, dfa.accept_next, dfa.risky
        self._ext: list[tuple[int, int, bytes]] = []  # extended states: (DFA state, fallback terminal, pending bytes)
        self._ext_index: dict[tuple[int, int, bytes], int] = {}
        self._relex: dict[int, tuple[tuple[int, ...], int]] = {}
        self._ext_by_relex: dict[tuple, int] = {}
        self._lock = threading.Lock()
        self.ignored = [t.ignored for t in dfa.terminals]
        prod = [np.nonzero(row)[0].tolist() for row in dfa.prod]
        terms = dfa.terminals
        #: per DFA state: the parser-visible terminals its lexeme can still become (ANY_COLUMN
        #: standing for every column of the indenter's newline), and whether it can end ignored
        self.visible = [_group_columns([t for t in ts if not terms[t].ignored], terms) for ts in prod]
        self.can_end_ignored = [any(terms[t].ignored for t in ts) for ts in prod]
        self._reps_by_rows: dict[tuple[int, ...], tuple[bytes, ...]] = {}
        self._backups: dict[int, tuple[Path, ...]] = {}
        self._end_keys: dict[int, tuple] = {}

    def base(self, state: int) -> int:
        """The DFA state of a lexer state."""
        return state if state < self.num_states else self._ext[state - self.num_states][0]

    def fallback(self, state: int) -> tuple[int, bytes]:
        """(terminal the lexeme backs up to, bytes after that point), or (DEAD, b"")."""
        if state < self.num_states:
            return DEAD, b""
        _, term, pending = self._ext[state - self.num_states]
        return term, pending

    def extended(self, q: int, term: int, pending: bytes) -> int:
        """The lexer state for DFA state q with a fallback (q itself when it needs none).

        Extended states are numbered as they are met, one per (q, fallback terminal, what the
        pending bytes lex to from the start: parser-visible terminals and end state), since
        pending bytes that lex alike behave alike. A fallback more than MAX_BACKTRACK bytes back
        is forgotten (a stated limit).
        """
        if term == DEAD or not self.risky[q] or len(pending) > MAX_BACKTRACK:
            return q
        key = (q, term, pending)
        got = self._ext_index.get(key)
        if got is None:
            ran = self.feed(0, pending)  # outside the lock: it may make shorter extended states
            relex = (tuple(t for t in ran[0] if not self.ignored[t]), ran[1]) if ran else ((), DEAD)
            with self._lock:
                got = self._ext_index.get(key)
                if got is None:
                    got = self._ext_index[key] = self._intern(key, relex)
        return got

    def extended_many(self, q: np.ndarray, term: np.ndarray, relexed: np.ndarray, unpack, pending_of) -> np.ndarray:
        """:meth:`extended` for many (q[i], term[i], pending_i) at once, given what each pending
        lexes to from the start as an outcome row (``relexed[i]``; DEAD: it dies; ``unpack``
        reads a row) rather than the bytes, which ``pending_of(i)`` gives only for a new state.
        The caller has checked that q[i] is risky and the pending bytes are short enough."""
        out = np.empty(len(q), dtype=np.int64)
        if not len(q):
            return out
        q, term, relexed = (np.asarray(a, dtype=np.int64) for a in (q, term, relexed))
        if q.max() < 1 << 19 and term.max() < 1 << 12 and relexed.max() < (1 << 32) - 1:  # one int64 each
            keys = (q << 44) | (term << 32) | (relexed + 1)  # (rows are >= DEAD = -1)
            _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        else:
            _, first, inv = np.unique(np.stack([q, term, relexed]), axis=1, return_index=True, return_inverse=True)
        ids = []
        for qq, tt, row, i in zip(q[first].tolist(), term[first].tolist(), relexed[first].tolist(), first.tolist()):
            relex = unpack(row) if row != DEAD else ((), DEAD)
            got = self._ext_by_relex.get((qq, tt, relex))
            if got is None:
                with self._lock:
                    got = self._intern((qq, tt, pending_of(i)), relex)
            ids.append(got)
        out[:] = np.asarray(ids, dtype=np.int64)[inv.reshape(-1)]
        return out

    def _intern(self, key: tuple[int, int, bytes], relex: tuple) -> int:
        """The extended state of ``key`` whose pending bytes relex to ``relex`` (parser-visible
        terminals, end state): one per (DFA state, fallback terminal, relex). Under the lock."""
        canon = (key[0], key[1], relex)
        got = self._ext_by_relex.get(canon)
        if got is None:
            got = self._ext_by_relex[canon] = self.num_states + len(self._ext)
            self._ext.append(key)
            self._relex[got] = relex
        return got

    def extended_key(self, state: int) -> tuple[int, int, bytes]:
        """The (DFA state, fallback terminal, pending bytes) of an extended state: what
        :meth:`extended` makes it from, in another lexer with the same tables too."""
        return self._ext[state - self.num_states]

    def extended_keys(self) -> list[tuple[int, int, bytes]]:
        """The extended states met so far as (DFA state, fallback terminal, pending bytes), in id
        order: state ``num_states + i`` is key i. Tables that name extended states (a saved
        transducer) need these to mean the same thing elsewhere (:meth:`restore_extended`)."""
        with self._lock:
            return list(self._ext)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The extended states met so far (:meth:`extended_keys`) as arrays."""
        ext = self.extended_keys()
        return {
            "ext_state": np.array([q for q, _, _ in ext], dtype=np.int32),
            "ext_term": np.array([t for _, t, _ in ext], dtype=np.int32),
            "ext_pending": np.frombuffer(b"".join(p for _, _, p in ext), dtype=np.uint8),
            "ext_pending_lengths": np.array([len(p) for _, _, p in ext], dtype=np.int64),
        }

    @staticmethod
    def extended_keys_from_arrays(a: dict[str, np.ndarray]) -> list[tuple[int, int, bytes]]:
        """Inverse of :meth:`to_arrays`: the keys to :meth:`restore_extended`."""
        flat = a["ext_pending"].tobytes()
        ends = np.cumsum(a["ext_pending_lengths"]).tolist()
        starts = [0, *ends[:-1]]
        return [(q, t, flat[s:e]) for q, t, s, e in zip(a["ext_state"].tolist(), a["ext_term"].tolist(), starts, ends)]

    def restore_extended(self, keys: list[tuple[int, int, bytes]]) -> None:
        """Recreate the extended states of another lexer with the same tables, from its
        :meth:`extended_keys`: replaying :meth:`extended` in order must give key i the id
        ``num_states + i``. Raises ValueError naming the first key that is malformed or gets
        another id (the keys do not belong to these tables)."""
        for i, key in enumerate(keys):
            self._check_extended_key(i, key)
            got = self.extended(*key)
            if got != self.num_states + i:
                raise ValueError(
                    f"extended state {i} {key!r} replays as lexer state {got}, not {self.num_states + i}: "
                    "the extended states do not belong to this lexer"
                )

    def _check_extended_key(self, i: int, key: object) -> None:
        """ValueError unless ``key`` is a well-formed (DFA state, terminal, pending bytes) triple."""
        ok = (
            isinstance(key, tuple)
            and len(key) == 3
            and all(isinstance(x, int) and not isinstance(x, bool) for x in key[:2])
            and isinstance(key[2], bytes)
        )
        if not ok:
            raise ValueError(f"extended state {i}: (DFA state, terminal, pending bytes) expected, got {key!r}")
        q, term, pending = key
        if not (0 <= q < self.num_states and 0 <= term < len(self.terminals) and len(pending) <= MAX_BACKTRACK):
            raise ValueError(
                f"extended state {i} {key!r} is out of range ({self.num_states} DFA states, "
                f"{len(self.terminals)} terminals, at most {MAX_BACKTRACK} pending bytes)"
            )

    def relexed(self, state: int) -> tuple[tuple[int, ...], int]:
        """For an extended state: what backing up does (parser-visible terminals emitted after
        the fallback terminal when its pending bytes are lexed again, and the state they end
        in; DEAD if they die)."""
        return self._relex[state]

    def feed(self, state: int, data: bytes) -> tuple[list[int], int] | None:
        """Run the lexing transducer: (terminals emitted, end state), or None at a dead end."""
        delta, accept_next, risky = self.delta, self.accept_next, self.risky
        q = self.base(state)
        fb, pending = self.fallback(state)
        out: list[int] = []
        i = 0
        while i < len(data):
            b = data[i]
            nxt, here = int(delta[q, b]), int(accept_next[q, b])
            if nxt != DEAD:
                if here != DEAD:
                    fb, pending = here, b""
                if fb != DEAD:
                    if risky[nxt]:
                        pending += data[i : i + 1]
                    else:
                        fb, pending = DEAD, b""
                q = nxt
                i += 1
            elif here != DEAD:  # the lexeme ends before b; b starts the next one
                out.append(here)
                q, fb, pending = 0, DEAD, b""
                if delta[0, b] == DEAD:
                    return None
            elif fb != DEAD:  # back up to the last accepting point and lex the rest again
                out.append(fb)
                data, i = pending + data[i:], 0
                q, fb, pending = 0, DEAD, b""
            else:
                return None
        return out, self.extended(q, fb, pending)

    def finish(self, state: int) -> list[int] | None:
        """Terminals emitted at the end of input from ``state`` (backing up if needed), or None."""
        q = self.base(state)
        if q == 0:
            return []
        if self.accept[q] != DEAD:
            return [int(self.accept[q])]
        fb, pending = self.fallback(state)
        if fb == DEAD:
            return None
        ran = self.feed(0, pending)
        if ran is None:
            return None
        rest = self.finish(ran[1])
        return None if rest is None else [fb, *ran[0], *rest]

    @property
    def num_lexer_states(self) -> int:
        """DFA states plus the extended states met so far."""
        return self.num_states + len(self._ext)

    def end_key(self, end: int) -> tuple:
        """What decides whether a lexeme left unfinished in lexer state ``end`` can go on: whether
        it can end as an ignored terminal, the visible terminals it can still end as, and where
        backing up leads. End states with equal keys behave alike. Inside an unfinished UTF-8
        character the ways to back up take a search (:meth:`backup_options`): such a state is
        its own key, and the search waits until a mask needs it."""
        got = self._end_keys.get(end)
        if got is None:
            q = self.base(end)
            inside = end >= self.num_states and ends_inside_character(self.fallback(end)[1])
            backup = end if inside else self.backup_options(end)
            got = self._end_keys[end] = (self.can_end_ignored[q], tuple(self.visible[q]), backup)
        return got

    def backup_options(self, x: int) -> tuple[Path, ...]:
        """For an extended state: the ways its lexeme can die and back up, as (parser-visible
        terminals emitted, lexer state after them); () for a DFA state.

        A lexeme stopped inside a UTF-8 character backs up only on bytes that kill it, and the
        relexed bytes go on with those same bytes: after ``if`` + a lead byte, a letter keeps
        the lexeme a NAME, any other character backs up to ``if`` and then starts nothing. So
        while the character is unfinished its continuations are run one byte class at a time
        (continuation bytes only: the DFA matches valid UTF-8, so any other byte kills every
        lexeme that holds the character, and the relexed text with it);
        once it is whole, backing up is the fallback then the pending bytes lexed again
        (:meth:`fallback_path`), whatever follows.
        """
        got = self._backups.get(x)
        if got is not None:
            return got
        options: dict[Path, None] = {}
        seen, todo = {x}, [x]
        while todo:
            y = todo.pop()
            if y < self.num_states:
                continue  # the fallback is forgotten: what remains is the lexeme going on
            if not ends_inside_character(self.fallback(y)[1]):
                path = self.fallback_path(y)
                if path is not None:
                    options[path] = None
                continue
            for b in self._continuation_reps(y):
                ran = self._step(y, b)
                if ran is None:
                    continue
                terms, after = ran
                if terms:
                    options[(tuple(t for t in terms if not self.ignored[t]), after)] = None
                elif after not in seen:
                    seen.add(after)
                    todo.append(after)
        got = self._backups[x] = tuple(options)
        return got

    def _continuation_reps(self, y: int) -> tuple[bytes, ...]:
        """One continuation byte per class that stepping from y cannot tell apart: stepping reads
        a byte only in the DFA states of y, of what y's pending bytes relex to (and so on down
        that chain) and of the start state, so bytes alike in those rows step alike."""
        rows, s = {0}, y
        while s >= self.num_states:
            rows.add(self.base(s))
            s = self.relexed(s)[1]
        if s != DEAD:
            rows.add(s)
        key = tuple(sorted(rows))
        got = self._reps_by_rows.get(key)
        if got is None:
            columns = np.concatenate([self.delta[key, 0x80:0xC0], self.accept_next[key, 0x80:0xC0]]).T
            _, first = np.unique(columns, axis=0, return_index=True)
            got = self._reps_by_rows[key] = tuple(bytes((0x80 + int(b),)) for b in sorted(first.tolist()))
        return got

    def _step(self, y: int, byte: bytes) -> tuple[list[int], int] | None:
        """``feed(y, byte)`` for an extended state, with a byte that kills the lexeme run from the
        state its pending bytes lex to (:meth:`relexed`, computed once) instead of lexing them again."""
        q, b = self.base(y), byte[0]
        if self.delta[q, b] != DEAD or self.accept_next[q, b] != DEAD:
            return self.feed(y, byte)
        more, z = self.relexed(y)
        ran = None if z == DEAD else self.feed(z, byte)
        return None if ran is None else ([self.fallback(y)[0], *more, *ran[0]], ran[1])

    def fallback_path(self, x: int) -> Path | None:
        """For an extended state: the parser-visible terminals of backing up (the fallback, then
        what its pending bytes lex to) and the lexer state after them; None if it has none."""
        if x < self.num_states:
            return None
        t, _ = self.fallback(x)
        more, y = self.relexed(x)
        if y == DEAD:
            return None
        return tuple(u for u in (t, *more) if not self.ignored[u]), y


def ends_inside_character(data: bytes) -> bool:
    """The bytes end with an unfinished UTF-8 character (a lead byte and too few continuations)."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b < 0x80:
            return False
        if b >= 0xC0:  # the lead byte: how many bytes its character needs (none: not a lead byte)
            return back < (0 if b < 0xC2 or b > 0xF4 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4)
    return False


def _group_columns(visible: list[int], terms) -> list[int]:
    """Lexer states that can still end a newline at every column test them as one (``ANY_COLUMN``)."""
    copies = [t for t in visible if terms[t].column is not None]
    if not copies or len(copies) < sum(1 for t in terms if t.column is not None):
        return visible
    return [t for t in visible if terms[t].column is None] + [ANY_COLUMN]
