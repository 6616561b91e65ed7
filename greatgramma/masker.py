"""Online token masking (paper section 4, Alg. 6): decoding states and exact per-step bitmasks.

From lexer state q, each token either stays inside the current lexeme (it ends in some lexer
state), or ends the lexeme with a terminal T and then does what its remaining bytes do from
the start state: an *outcome row* of the transducer, shared by all lexer states. So a mask is
assembled from one vector per stack: which outcome rows are viable from that stack.

That vector is computed over the prefix tree of the rows' terminal sequences. For each stack
top p, the rows that p alone decides are found once and cached (always accepted / always
rejected, paper section 3.3, Alg. 5); only the context-dependent rest, whose terminals reduce
below p, is checked against the live stack.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .compiled import CompiledGrammar
from .errors import GreatGrammaError, TokenRejectedError
from .indenter import ANY_COLUMN, IndentedTable
from .lexer import DEAD
from .parser import DEPENDS, FRAME_BYTES, BoundedMemo, Known, Stack
from .transducer import END, FALLBACK, NO_TERM, is_held


@dataclass(frozen=True)
class State:
    """A decoding state: lexer state of the unfinished lexeme, parser stack, and whether EOS was fed."""

    lexer: int
    stack: Stack  # shared frames (an IndentedStack over them with an indenter)
    finished: bool = False
    grammar_id: int = 0  # CompiledGrammar.identity of the grammar the state belongs to


class _SequenceTrie:
    """All outcome rows as a prefix tree of their terminal sequences.

    Node 0 is the empty sequence; a node's children extend it by one terminal. A row hangs under
    the node of its terminal sequence: it is viable when that node is and, after it, a lexeme
    reachable from the row's end state can follow. ``free[n]`` are rows whose end state can
    still become an ignored terminal (no condition); ``edges[n]`` lists, per terminal T to feed
    after node n, the child node for T and the rows whose end state can become T.
    """

    def __init__(self, rows: list[tuple[tuple[int, ...], int]], masker: "Masker"):
        self.term: list[int] = [-1]
        self.children: list[list[int]] = [[]]
        free: list[list[int]] = [[]]
        by_term: list[dict[int, list[int]]] = [{}]
        index: dict[tuple[int, int], int] = {}

        def node(n: int, terms) -> int:
            for t in terms:
                c = index.get((n, t))
                if c is None:
                    c = index[(n, t)] = len(self.term)
                    self.term.append(t)
                    self.children.append([])
                    free.append([])
                    by_term.append({})
                    self.children[n].append(c)
                n = c
            return n

        def hang(row: int, n: int, end: int, branch: frozenset) -> None:
            """The row is viable at node n if its lexeme goes on, or backs up and goes on after that."""
            q = masker._lexer.base(end)
            if masker._prod_ignored[q]:
                free[n].append(row)
                return
            for t in masker._prod_visible[q]:
                by_term[n].setdefault(t, []).append(row)
            for terms, after in masker._backup_options(end):
                if after not in branch:  # a state met again on the branch adds no continuation
                    hang(row, node(n, terms), after, branch | {after})

        for row, (terms, end) in enumerate(rows):
            hang(row, node(0, terms), end, frozenset((end,)))
        self.free = [np.array(r, dtype=np.int64) if r else None for r in free]
        # per node, one entry per terminal to feed: (terminal, child node or -1, rows ending with it or None)
        self.edges: list[list[tuple[int, int, np.ndarray | None]]] = []
        for n, d in enumerate(by_term):
            kids = {self.term[c]: c for c in self.children[n]}
            self.edges.append(
                [(t, kids.get(t, -1), np.array(d[t], dtype=np.int64) if t in d else None) for t in sorted(set(d) | set(kids))]
            )


@dataclass(frozen=True, eq=False)
class _Split:
    """Paper section 3.3 for one stack top p: which rows p alone accepts, and what it leaves open."""

    accepted: np.ndarray  # row ids viable whatever lies below p
    frontier: list[tuple[int, Known]]  # (node, known stack at its parent): the node's terminal reduces below p
    open_checks: list[tuple[Known, list[tuple[int, np.ndarray]]]]  # known stack -> [(terminal, rows)] to feed live


@dataclass(frozen=True, eq=False)
class _LexerView:
    """What the tokens do from one lexer state, as indices into the per-step status vector.

    Status layout: for each possible first terminal f (NO_TERM, then terminals), a block of
    outcome rows (viable after feeding f); then one always-false entry (dead); then one entry
    per lexer state (a token that stays inside the current lexeme and ends there).
    """

    code: np.ndarray  # int32[V]
    firsts: tuple[int, ...]  # first terminals that occur (NO_TERM: the lexeme ends as an ignored one)
    end_groups: tuple[tuple[int, ...], ...]  # lexer states of tokens that stay inside the current
    # lexeme (ascending), grouped by what decides whether they can go on
    fallback: np.ndarray | None  # packed words: tokens that back up to the state's fallback


@dataclass(frozen=True, eq=False)
class _Block:
    """Status codes of the strings that start with one byte, seen from lexer states that agree on it.

    ``code`` is None where the strings depend on the entering state's fallback
    (``TokenTransducer.resolve``): such a block is resolved per lexer state instead.
    """

    code: np.ndarray | None  # int32 per string of the byte's range
    firsts: frozenset
    end_states: frozenset


class Masker:
    """Computes masks and advances states for one compiled grammar. Thread-safe; states are values.

    ``cache_bytes`` bounds the memory of all caches together (default 256 MiB; see
    :meth:`_init_caches` for how it is shared out); ``cache_size`` also caps the entries of each
    (masks and viable rows: ``cache_size``; lexer views: ``cache_size // 16``, memos more). Stacks are shared
    frames, so a cache entry keyed by a stack is charged the frames it keeps alive. The caches
    that grow with the grammar only (per-byte blocks, per-lexer-state keys) are not counted.
    ``split_depth`` is how many top parser states the shared context-independent part of a mask
    is computed for.
    """

    def __init__(
        self, compiled: CompiledGrammar, *, cache_size: int = 4096, split_depth: int = 2, cache_bytes: int = 256 << 20
    ):
        _check_options(compiled, cache_size=cache_size, split_depth=split_depth, cache_bytes=cache_bytes)
        self.compiled = compiled
        self._transducer = compiled.transducer
        self._table = compiled.parse_table
        self._lexer = compiled.lexer
        self._vocab = compiled.vocab
        terms = self._lexer.terminals
        self._ignored = [t.ignored for t in terms]
        self._backups: dict[int, tuple] = {}  # lexer state -> _backup_options
        self._byte_reps = _byte_class_representatives(self._lexer)
        prod = [np.nonzero(row)[0].tolist() for row in self._lexer.prod]
        self._prod_visible = [_group_columns([t for t in ts if not terms[t].ignored], terms) for ts in prod]
        self._prod_ignored = [any(terms[t].ignored for t in ts) for ts in prod]
        self._nwords = (self._vocab.vocab_size + 31) // 32
        self._eos = np.array(sorted(set(self._vocab.eos_token_ids)), dtype=np.int64)
        outcomes = self._transducer.outcomes
        self._num_rows = len(outcomes)
        self._trie = _SequenceTrie([outcomes.unpack(r) for r in range(self._num_rows)], self)
        trie = self._transducer.trie
        self._string_of_token = np.full(self._vocab.vocab_size, len(trie), dtype=np.int64)  # len(trie): no string
        self._string_of_token[trie.token_of_string] = np.repeat(
            np.arange(len(trie)), np.diff(trie.token_of_string_ptr)
        )
        self._blocks: dict[tuple[int, int], _Block] = {}
        first_byte = trie.matrix[:, 0]  # strings are sorted, so each first byte is one range of them
        self._byte_counts = np.bincount(first_byte, minlength=256)
        self._rest0 = self._transducer.suffix[trie.offsets[:-1]].astype(np.int32)
        self._rest0_dead = np.nonzero(self._rest0 == DEAD)[0]
        self._byte_has_rest0 = np.zeros(256, dtype=bool)  # some string starting with the byte is alive from start
        self._byte_has_rest0[first_byte[self._rest0 != DEAD]] = True
        self._ignored_arr = np.array(self._ignored + [False], dtype=bool)  # index -1 (DEAD): not ignored
        self._dead_code = (len(terms) - NO_TERM) * self._num_rows
        self._end_base = self._dead_code + 1  # status index of "ends in lexer state 0"
        self._split_depth = split_depth
        self._cut, self._recut, self._feed_on = self._table.cut, self._table.recut, self._table.feed_on  # live stacks
        self._cut_known, self._join_known = self._table.cut_known, self._table.join_known  # known segments
        self._end_info: dict[int, tuple] = {}  # lexer state -> _end_key
        self._init_caches(cache_size, cache_bytes)
        self._lock = threading.Lock()
        self._id = compiled.identity
        self._new_blocks(self._entered_subtrees())
        if self._lexer.columns is None:  # with an indenter they cost ~0.2 s up front: built on first use
            self._resolved_blocks(self._entered_held_blocks())

    def _init_caches(self, cache_size: int, cache_bytes: int) -> None:
        """The caches, each bounded by its share of ``cache_bytes`` and by entries.

        Shares: words of masks keyed by (lexer state, stack) 1/4 and by status 1/8 (each charged
        its words: 4 bytes per 32 tokens), lexer views 1/4 (4 bytes per token), viable rows by
        stack 1/8 (these four drop their oldest entries), and three memos that start over when
        full: known-segment feeds 1/8, splits and distinct rows 1/16 each. The parse table's
        own memos (``parser.UNIT_MEMO_BYTES``, ``SEGMENT_MEMO_BYTES``) and the frames' memos
        (``MEMO_ENTRIES`` per frame, owned by the states) are bounded apart.
        """
        share = cache_bytes // 16
        self._masks = _ByteCache(4 * share, cache_size)  # (x, stack) -> words, without EOS
        self._by_status = _ByteCache(2 * share, cache_size)  # the same words, keyed by what decides them
        self._views = _ByteCache(4 * share, max(2, cache_size // 16))  # lexer state -> _LexerView
        self._rows = _ByteCache(2 * share, cache_size)  # stack -> bool[rows] as bytes
        self._known = BoundedMemo(2 * share, 4 * cache_size)  # known segment -> terminal -> feed_known
        self._splits = BoundedMemo(share, 64 * cache_size)  # (node, known top) -> _Split
        self._distinct_rows = BoundedMemo(share, cache_size)  # equal rows share one object
        self._stack_bytes = _stack_bytes_of(self._table)

    # ------------------------------------------------------------ public API

    def initial_state(self) -> State:
        return State(0, self._table.initial_stack(), False, self._id)

    def mask(self, state: State) -> np.ndarray:
        """int32 bitmask of shape (ceil(V/32),): bit t set iff token t is allowed next."""
        self._check(state)
        if state.finished:
            return np.zeros(self._nwords, dtype=np.int32)
        words = self._token_words(state.lexer, state.stack).copy()
        if len(self._eos) and self.is_complete(state):
            _set_bits(words, self._eos)
        return words.view(np.int32)

    def is_complete(self, state: State) -> bool:
        """Whether the output so far is a complete sentence (EOS allowed)."""
        self._check(state)
        if state.finished:
            return False
        terms = self._lexer.finish(state.lexer)
        if terms is None:
            return False
        stack = self._feed_all(state.stack, terms)
        return stack is not None and self._table.accepts_end(stack)

    def advance(self, state: State, token: int) -> State:
        """The state after ``token``; raises TokenRejectedError if the mask does not allow it."""
        self._check(state)
        vocab = self._vocab
        if not isinstance(token, (int, np.integer)) or not 0 <= token < vocab.vocab_size:
            raise TokenRejectedError(int(token), None, [], f"token id out of range 0..{vocab.vocab_size - 1}")
        token = int(token)
        if state.finished:
            raise TokenRejectedError(token, self._bytes(token), [], "the output already ended with EOS")
        if token in vocab.eos_token_ids:
            if self.is_complete(state):
                return State(state.lexer, state.stack, True, self._id)
            raise TokenRejectedError(token, None, self.expected(state), "EOS before the output is complete")
        data = self._bytes(token)
        if not data:
            raise TokenRejectedError(token, data, self.expected(state), "tokens without bytes (special or empty) are never allowed")
        ran = self._lexer.feed(state.lexer, data)
        if ran is not None:
            terms, end = ran
            stack = self._feed_all(state.stack, terms)
            if stack is not None and self._end_ok(stack, end):
                return State(end, stack, False, self._id)
        raise TokenRejectedError(token, data, self.expected(state))

    def expected(self, state: State) -> list[str]:
        """The terminals that could come next, by name (for error messages).

        Mid-lexeme, these are the ones the current lexeme can still become, followed by the ones
        the parser accepts once the lexeme ends as it stands.
        """
        terms, table = self._lexer.terminals, self._table
        names: list[str] = []
        stack: Stack | None = state.stack
        q = self._lexer.base(state.lexer)
        if q != 0:
            names += [
                terms[t if t != ANY_COLUMN else -1].display for t in self._prod_visible[q] if table.feed(state.stack, t)
            ]
            winner = int(self._lexer.accept[q])
            if winner == DEAD:
                return names
            if not self._ignored[winner]:
                stack = table.feed(state.stack, winner)
        if stack is not None:
            names += [terms[t].display if t < len(terms) else "end of input" for t in table.expected(stack)]
        return list(dict.fromkeys(names))

    # ------------------------------------------------------------ internals

    def _check(self, state: State) -> None:
        if not isinstance(state, State) or state.grammar_id != self._id:
            raise GreatGrammaError("this state does not belong to this Masker's compiled grammar")

    def _bytes(self, token: int) -> bytes | None:
        tb = self._vocab.token_bytes
        return tb[token] if token < len(tb) else None

    def _end_ok(self, stack: Stack, end: int, branch: frozenset = frozenset()) -> bool:
        """Some continuation of the lexeme in lexer state ``end`` keeps the parser alive: the
        lexeme goes on into a terminal the parser takes, or dies and backs up to its fallback
        (``_backup_options``) and what follows goes on."""
        ignored, visible, options = self._end_key(end)
        if ignored:
            return True
        feed = self._feed
        for t in visible:
            if feed(stack, t) is not None:
                return True
        branch = branch | {end}
        for terms, after in options:
            if after not in branch:  # a state met again on the branch adds no continuation
                fed = self._feed_all(stack, terms)
                if fed is not None and self._end_ok(fed, after, branch):
                    return True
        return False

    def _end_key(self, end: int) -> tuple:
        """All that ``_end_ok`` needs of an end state: can it end ignored, the visible terminals
        it can still end as, and where backing up can lead."""
        key = self._end_info.get(end)
        if key is None:
            q = self._lexer.base(end)
            key = (self._prod_ignored[q], tuple(self._prod_visible[q]), self._backup_options(end))
            self._end_info[end] = key
        return key

    def _backup_options(self, x: int) -> tuple[tuple[tuple[int, ...], int], ...]:
        """For an extended state: the ways its lexeme can die and back up, as (parser-visible
        terminals emitted, lexer state after them); () for a DFA state.

        A lexeme stopped inside a UTF-8 character backs up only on bytes that kill it, and the
        relexed bytes go on with those same bytes: after ``if`` + a lead byte, a letter keeps
        the lexeme a NAME, any other character backs up to ``if`` and then starts nothing. So
        while the character is unfinished its continuations are run one byte class at a time;
        once it is whole, backing up is the fallback then the pending bytes lexed again
        (``_fallback_path``), whatever follows.
        """
        got = self._backups.get(x)
        if got is not None:
            return got
        lexer, options = self._lexer, {}
        seen, todo = {x}, [x]
        while todo:
            y = todo.pop()
            if y < lexer.num_states:
                continue  # the fallback is forgotten: what remains is the lexeme going on
            if not _ends_inside_character(lexer.fallback(y)[1]):
                path = self._fallback_path(y)
                if path is not None:
                    options[path] = None
                continue
            for b in self._byte_reps:
                ran = lexer.feed(y, b)
                if ran is None:
                    continue
                terms, after = ran
                if terms:
                    options[(tuple(t for t in terms if not self._ignored[t]), after)] = None
                elif after not in seen:
                    seen.add(after)
                    todo.append(after)
        got = self._backups[x] = tuple(options)
        return got

    def _fallback_path(self, x: int) -> tuple[tuple[int, ...], int] | None:
        """For an extended state: the parser-visible terminals of backing up (the fallback, then
        what its pending bytes lex to) and the lexer state after them; None if it has none."""
        lexer = self._lexer
        if x < lexer.num_states:
            return None
        t, _ = lexer.fallback(x)
        more, y = lexer.relexed(x)
        if y == DEAD:
            return None
        return tuple(u for u in (t, *more) if not self._ignored[u]), y

    def _feed_all(self, stack: Stack, terms) -> Stack | None:
        """Feed lexer terminals in order (ignored ones dropped); None once the parser rejects."""
        for t in terms:
            if not self._ignored[t]:
                stack = self._feed(stack, t)
                if stack is None:
                    return None
        return stack

    def _feed(self, stack: Stack, term: int) -> Stack | None:
        """``ParseTable.feed``: one frame per shift, deep reductions memoized on the frames."""
        return self._table.feed(stack, term)

    def _feed_known(self, known: Known, term: int, row: dict | None = None):
        """``ParseTable.feed_known``, memoized per known segment (``row``: its memo, if at hand)."""
        if row is None:
            row = self._known_row(known)
        got = row.get(term, self)
        if got is self:
            got = row[term] = self._table.feed_known(known, term)
            self._known.charge(112 + 8 * len(known))
        return got

    def _known_row(self, known: Known) -> dict:
        row = self._known.get(known)
        if row is None:
            row = self._known.add(known, {}, 288 + 8 * len(known))
        return row

    def _view(self, x: int) -> _LexerView:
        """Assembled from per-first-byte blocks shared between lexer states (cheap on first use)."""
        got = self._views.get(x)
        if got is not None:
            return got
        td, lexer = self._transducer, self._lexer
        n, rest0, counts = self._num_rows, self._rest0, self._byte_counts
        q = lexer.base(x)
        delta, accept_next = lexer.delta[q], lexer.accept_next[q]
        if q == 0:  # from the start state a string's outcome is its suffix row at offset 0
            restart = np.ones(256, dtype=bool)
            first_of_byte = np.full(256, NO_TERM, dtype=np.int64)
        else:  # strings whose first byte ends the lexeme: then they run from the start state
            restart = (delta == DEAD) & (accept_next != DEAD)
            first_of_byte = np.where(self._ignored_arr[accept_next], NO_TERM, accept_next).astype(np.int64)
        by_string = np.empty(len(rest0) + 1, dtype=np.int32)
        by_string[:-1] = np.repeat(np.where(restart, (first_of_byte - NO_TERM) * n, self._dead_code), counts)
        np.add(by_string[:-1], rest0, out=by_string[:-1], where=np.repeat(restart, counts))
        by_string[self._rest0_dead] = self._dead_code  # overwritten below where the byte continues the lexeme
        by_string[-1] = self._dead_code
        firsts = set(first_of_byte[restart & self._byte_has_rest0].tolist())
        ends: set[int] = set()
        fallback = np.zeros(len(rest0) + 1, dtype=bool)
        if x >= lexer.num_states:  # a first byte that kills the lexeme backs up to x's fallback
            fallback[:-1] = np.repeat((delta == DEAD) & (accept_next == DEAD), counts)
        if q != 0:
            live = [(b, lo, hi, int(delta[b])) for b, lo, hi in td.root_children if delta[b] != DEAD]
            self._new_blocks([item for item in live if (item[0], item[3]) not in self._blocks])
            keys = [(b, st) for b, _, _, st in live]
            if x < lexer.num_states:  # no fallback of its own: held blocks depend on accept_next only
                keys = [k if self._blocks[k].code is not None else (*k, int(accept_next[k[0]])) for k in keys]
                self._resolved_blocks([(it, k) for it, k in zip(live, keys) if k not in self._blocks])
            held = []
            for (b, lo, hi, st), key in zip(live, keys):
                blk = self._blocks[key]
                if blk.code is None:
                    held.append((b, st))
                    continue
                by_string[lo:hi] = blk.code
                firsts |= blk.firsts
                ends |= blk.end_states
            if held:
                strings, first, rest = td.resolve(x, [(b, arrays) for (b, _), arrays in zip(held, td.subtrees(held))])
                code, (f,), (e,) = self._codes(first, rest, np.zeros(len(first), dtype=np.int64), 1)
                by_string[strings] = code
                fallback[strings[first == FALLBACK]] = True
                firsts |= f
                ends |= e
        tokens = self._string_of_token
        groups: dict[tuple, list[int]] = {}
        for e in sorted(ends):
            groups.setdefault(self._end_key(e), []).append(e)
        got = _LexerView(
            np.take(by_string, tokens),
            tuple(sorted(firsts)),
            tuple(tuple(g) for g in groups.values()),
            _pack(np.take(fallback, tokens)) if fallback.any() else None,
        )
        nbytes = got.code.nbytes + (0 if got.fallback is None else got.fallback.nbytes) + 512
        return self._views.put(x, got, nbytes)

    def _entered_subtrees(self) -> list[tuple[int, int, int, int]]:
        """(first byte, first string, end string, DFA state after the byte) for every subtree some
        lexer state enters. With an indenter, only states without a pending newline column: the
        column ones are few per program, and each would be its own block."""
        lexer, roots = self._lexer, self._transducer.root_children
        firsts = np.array([b for b, _, _ in roots], dtype=np.int64)
        entered = np.zeros((len(roots), lexer.num_states), dtype=bool)
        states = lexer.delta[1:, firsts].T
        rows = np.broadcast_to(np.arange(len(roots))[:, None], states.shape)
        alive = states != DEAD
        entered[rows[alive], states[alive]] = True
        cols = lexer.columns
        if cols is not None:
            entered[:, cols.state_column != cols.max_column] = False
        return [(b, lo, hi, st) for (b, lo, hi), sts in zip(roots, entered) for st in np.flatnonzero(sts).tolist()]

    def _entered_held_blocks(self) -> list[tuple[tuple[int, int, int, int], tuple[int, int, int]]]:
        """For every held block a DFA state enters: (its item, (byte, state, what the entering
        state accepts just before the byte)), the key of its resolved block."""
        held = {key for key, blk in self._blocks.items() if blk.code is None}
        lexer, out = self._lexer, []
        width = len(lexer.terminals) + 1
        for b, lo, hi in self._transducer.root_children:
            entered = lexer.delta[1:, b].astype(np.int64) * width + lexer.accept_next[1:, b] + 1
            for key in np.unique(entered).tolist():
                st, before = divmod(key, width)
                if (b, st) in held:
                    out.append(((b, lo, hi, st), (b, st, before - 1)))
        return out

    def _new_blocks(self, items: list[tuple[int, int, int, int]]) -> None:
        """Blocks of (first byte, string range, DFA state after it) subtrees, in one batch. A block
        whose strings depend on the entering state's fallback is kept without codes (held)."""
        if items:
            walked = self._transducer.subtrees([(b, st) for b, _, _, st in items])
            strings, first, rest = (np.concatenate(a) for a in zip(*walked))
            seg = np.repeat(np.arange(len(items)), [len(a[0]) for a in walked])
            self._store_blocks(items, [(b, st) for b, _, _, st in items], strings, first, rest, seg)

    def _resolved_blocks(self, entries: list[tuple[tuple[int, int, int, int], tuple[int, int, int]]]) -> None:
        """Held blocks as entered by DFA states (no fallback of their own) that accept terminal
        ``before`` just before the byte, keyed (byte, DFA state after it, before)."""
        if entries:
            items = [item for item, _ in entries]
            td = self._transducer
            walked = td.subtrees([(b, st) for b, _, _, st in items])
            strings, first, rest, seg = td.resolve_entered(walked, [key[2] for _, key in entries])
            self._store_blocks(items, [key for _, key in entries], strings, first, rest, seg)

    def _store_blocks(self, items, keys, strings, first, rest, seg) -> None:
        held = np.bincount(seg[is_held(first)], minlength=len(items)) > 0
        code, firsts, ends = self._codes(first, rest, seg, len(items))
        lo = np.array([it[1] for it in items], dtype=np.int64)
        spans = np.array([hi - lo_ for _, lo_, hi, _ in items], dtype=np.int64)
        start = np.cumsum(spans) - spans
        buf = np.full(int(spans.sum()), self._dead_code, dtype=np.int32)
        buf[start[seg] + strings - lo[seg]] = code
        with self._lock:
            for i, key in enumerate(keys):
                blk = _Block(None if held[i] else buf[start[i] : start[i] + spans[i]], frozenset(firsts[i]), frozenset(ends[i]))
                self._blocks.setdefault(key, blk)

    def _codes(self, first: np.ndarray, rest: np.ndarray, seg: np.ndarray, nseg: int):
        """Status codes of walk results, and per segment the first terminals and end states among them."""
        is_end = first == END
        is_row = (first >= NO_TERM) & ~is_end  # not dead, not backing up, not held
        as_row = (first - NO_TERM) * self._num_rows + rest
        code = np.where(is_row, as_row, np.where(is_end, self._end_base + rest, self._dead_code)).astype(np.int32)
        firsts: list[set[int]] = [set() for _ in range(nseg)]
        ends: list[set[int]] = [set() for _ in range(nseg)]
        ends_width = int(rest.max(initial=0, where=is_end)) + 1
        for out, kind, value, width in ((firsts, is_row, first - NO_TERM, len(self._ignored) - NO_TERM),
                                        (ends, is_end, rest, ends_width)):
            seen = np.zeros(nseg * width + 1, dtype=bool)  # the last slot takes the other kinds
            seen[np.where(kind, seg * width + value, nseg * width)] = True
            for key in np.flatnonzero(seen[:-1]).tolist():
                out[key // width].add(key % width)
        firsts = [{f + NO_TERM for f in fs} for fs in firsts]
        return code, firsts, ends

    def _split(self, node: int, top: Known) -> _Split:
        """Walk the outcome trie below ``node`` with only the top of the stack known (paper Alg. 5).

        Cached per (node, top). Below a terminal the parser takes, the walk goes on from the
        split of the child under the new top: after a shift the same few top states recur in
        many contexts, so most subtrees are decided once, and each split is a few merges.
        """
        key = (node, top)
        got = self._splits.get(key)
        if got is not None:
            return got
        trie = self._trie
        hits: list[np.ndarray] = []
        frontier: list[tuple[int, Known]] = []
        checks: dict[Known, dict[int, list[np.ndarray]]] = {}
        if trie.free[node] is not None:
            hits.append(trie.free[node])
        row = self._known_row(top)
        for t, child, rows in trie.edges[node]:
            self._edge(top, t, child, rows, hits, frontier, checks, row)
        accepted = np.concatenate(hits) if hits else np.zeros(0, dtype=np.int64)
        open_checks = [(k, [(t, np.concatenate(rs)) for t, rs in d.items()]) for k, d in checks.items()]
        got = _Split(accepted, frontier, open_checks)
        nbytes = accepted.nbytes + sum(rs.nbytes + 160 for _, cks in open_checks for _, rs in cks)
        return self._splits.add(key, got, nbytes + 160 * (len(frontier) + len(open_checks)) + 480)

    def _edge(self, known: Known, t: int, child: int, rows, hits: list, frontier: list, checks: dict, row=None) -> None:
        """Feed terminal ``t`` on the known stack at a trie node: the edge's rows (ending with t)
        are accepted, rejected or left open, and the walk goes on below ``child`` (-1: none)."""
        r = self._feed_known(known, t, row)
        if r is False:
            return
        if r is DEPENDS:
            if rows is not None:
                checks.setdefault(known, {}).setdefault(t, []).append(rows)
            if child >= 0:
                frontier.append((child, known))
            return
        if rows is not None:
            hits.append(rows)
        if child < 0:
            return
        below, top = self._cut_known(r, self._split_depth)
        sub = self._split(child, top)
        hits.append(sub.accepted)
        if not below:  # r is its own top: what the child left open stays open here
            frontier.extend(sub.frontier)
            for k, cks in sub.open_checks:
                d = checks.setdefault(k, {})
                for t2, rows2 in cks:
                    d.setdefault(t2, []).append(rows2)
            return
        join, term = self._join_known, self._trie.term
        for k, cks in sub.open_checks:  # what the child left open, with more of the stack known
            full = join(below, k)
            for t2, rows2 in cks:
                self._edge(full, t2, -1, rows2, hits, frontier, checks)
        for c, k in sub.frontier:
            self._edge(join(below, k), term[c], c, None, hits, frontier, checks)

    def _rows_ok(self, stack: Stack) -> bytes:
        """bool[rows] as bytes: which outcome rows are viable from ``stack``. Many stacks give the
        same rows; as bytes (hash cached) the rows can key the words they lead to."""
        got = self._rows.get(stack)
        if got is not None:
            return got
        hits: list[np.ndarray] = []
        self._collect(0, *self._cut(stack, self._split_depth), hits)
        ok = np.zeros(self._num_rows, dtype=bool)
        if hits:
            ok[np.concatenate(hits)] = True
        got = ok.tobytes()
        got = self._distinct_rows.add(got, got, len(got) + 96)
        return self._rows.put(stack, got, len(got) + self._stack_bytes(stack))

    def _collect(self, node: int, below, known: Known, hits: list[np.ndarray]) -> None:
        """Rows below ``node`` viable from the live stack ``below`` + ``known`` (as ``cut`` gives
        them): the cached split of its top, then what that left open, fed on the live stack."""
        below, top = self._recut(below, known, self._split_depth)
        split = self._split(node, top)
        hits.append(split.accepted)
        feed_on = self._feed_on
        for k, checks in split.open_checks:
            for t, rows in checks:
                if feed_on(below, k, t) is not None:
                    hits.append(rows)
        term = self._trie.term
        for c, k in split.frontier:
            r = feed_on(below, k, term[c])
            if r is not None:
                self._collect(c, r[0], r[1], hits)

    def _token_words(self, x: int, stack: Stack) -> np.ndarray:
        """uint32 words: tokens allowed from lexer state x and this stack (EOS aside). Cached on
        the stack, and on what the stack decides (different stacks often allow the same rows)."""
        key = (x, stack)
        got = self._masks.get(key)
        if got is None:
            status = self._status(x, stack)
            got = self._by_status.get(status)
            if got is None:
                got = self._words(status)
                got = self._by_status.put(status, got, got.nbytes + _status_bytes(status))
            got = self._masks.put(key, got, got.nbytes + self._stack_bytes(stack))
        return got

    def _status(self, x: int, stack: Stack) -> tuple:
        """All that the words from lexer state x depend on, as a hashable value: per first
        terminal the parser takes, its viable rows; which end states can go on; and the same for
        the state that tokens backing up run from."""
        view = self._view(x)
        rows = []
        for first in view.firsts:
            after = stack if first == NO_TERM else self._feed(stack, first)
            if after is not None:
                rows.append((first, self._rows_ok(after)))
        ends = tuple(self._end_ok(stack, group[0]) for group in view.end_groups)
        behind = None
        if view.fallback is not None:
            path = self._fallback_path(x)
            after = None if path is None else self._feed_all(stack, path[0])
            if after is not None:
                behind = self._status(path[1], after)
        return x, tuple(rows), ends, behind

    def _words(self, status: tuple) -> np.ndarray:
        x, rows, ends, behind = status
        view = self._view(x)
        n = self._num_rows
        flags = np.zeros(self._end_base + max((g[-1] for g in view.end_groups), default=-1) + 1, dtype=bool)
        for first, ok in rows:
            k = first - NO_TERM
            flags[k * n : (k + 1) * n] = np.frombuffer(ok, dtype=bool)
        flags[[self._end_base + e for group, ok in zip(view.end_groups, ends) if ok for e in group]] = True
        words = _pack(np.take(flags, view.code, mode="clip"))  # codes are in range: skip the checks
        if behind is not None:  # tokens that back up: they run from the relexed state
            inner = self._by_status.get(behind)
            if inner is None:
                inner = self._words(behind)
            words |= view.fallback & inner
        return words


def _ends_inside_character(data: bytes) -> bool:
    """The bytes end with an unfinished UTF-8 character (a lead byte and too few continuations)."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b < 0x80:
            return False
        if b >= 0xC0:  # the lead byte: how many bytes its character needs (none: not a lead byte)
            return back < (0 if b < 0xC2 or b > 0xF4 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4)
    return False


def _byte_class_representatives(lexer) -> tuple[bytes, ...]:
    """One byte of each class of bytes that every lexer state treats alike (transition and
    lookahead), lowest first: the lexer cannot tell the bytes of a class apart."""
    columns = np.concatenate([lexer.delta, lexer.accept_next]).T
    _, first = np.unique(columns, axis=0, return_index=True)
    return tuple(bytes((int(b),)) for b in sorted(first.tolist()))


class _ByteCache(dict):
    """A dict bounded by bytes (and entries): each entry is charged what it holds, estimated when
    it goes in; the oldest go first. A hit is one dict lookup."""

    def __init__(self, budget: int, max_entries: int) -> None:
        super().__init__()
        self.budget, self.max_entries, self.nbytes = budget, max_entries, 0
        self._charged: OrderedDict = OrderedDict()  # key -> bytes charged, oldest first
        self._lock = threading.Lock()

    def put(self, key, value, nbytes: int):
        """Store ``value`` unless ``key`` is already in (then keep that one); returns the stored
        value. The oldest entries go until the cache fits (one oversized entry may stay)."""
        with self._lock:
            got = dict.get(self, key)
            if got is not None:
                return got
            self[key] = value
            self._charged[key] = nbytes
            self.nbytes += nbytes
            while (self.nbytes > self.budget or len(self._charged) > self.max_entries) and len(self._charged) > 1:
                old, n = self._charged.popitem(last=False)
                del self[old]
                self.nbytes -= n
        return value

    def clear(self) -> None:
        with self._lock:
            super().clear()
            self._charged.clear()
            self.nbytes = 0


def _stack_bytes_of(table) -> Callable[[Stack], int]:
    """What a cache entry keyed by a stack of ``table`` is charged for it: the frames it keeps
    alive (all of them, as if no other state shared them), and the indentation levels."""
    if isinstance(table, IndentedTable):
        return lambda stack: FRAME_BYTES * stack.lalr.depth + 8 * len(stack.levels) + 200
    return lambda stack: FRAME_BYTES * stack.depth + 100


def _status_bytes(status: tuple) -> int:
    """Bytes a status holds beyond its words: the rows (charged even where shared) and what
    backing-up tokens see."""
    _, rows, ends, behind = status
    own = 200 + 64 * len(rows) + 8 * len(ends) + sum(len(ok) for _, ok in rows)
    return own + (0 if behind is None else _status_bytes(behind))


_OPTION_MINIMUM = {"cache_size": (1, "1"), "split_depth": (1, "1"), "cache_bytes": (1 << 20, "1 MiB (1048576)")}


def _check_options(compiled: object, **options: object) -> None:
    """Masker's arguments, checked before use (TypeError / ValueError naming the argument)."""
    if not isinstance(compiled, CompiledGrammar):
        raise TypeError(f"Masker needs a CompiledGrammar (from gg.compile or gg.load), got {type(compiled).__name__}")
    for name, value in options.items():
        low, shown = _OPTION_MINIMUM[name]
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < low:
            raise ValueError(f"{name} must be >= {shown}, got {value}")


def _group_columns(visible: list[int], terms) -> list[int]:
    """Lexer states that can still end a newline at every column test them as one (``ANY_COLUMN``)."""
    copies = [t for t in visible if terms[t].column is not None]
    if not copies or len(copies) < sum(1 for t in terms if t.column is not None):
        return visible
    return [t for t in visible if terms[t].column is None] + [ANY_COLUMN]


def _pack(allowed: np.ndarray) -> np.ndarray:
    """Bool per token id -> uint32 words, low bit first."""
    n = len(allowed)
    packed = np.packbits(allowed, bitorder="little")
    words = np.zeros((n + 31) // 32 * 4, dtype=np.uint8)
    words[: len(packed)] = packed
    return words.view(np.uint32)


def _set_bits(words: np.ndarray, tokens: np.ndarray) -> None:
    """Set bit t of the uint32 word array for each token id t."""
    if len(tokens):
        tokens = np.asarray(tokens, dtype=np.int64)
        np.bitwise_or.at(words, tokens >> 5, (np.uint32(1) << (tokens & 31).astype(np.uint32)))
