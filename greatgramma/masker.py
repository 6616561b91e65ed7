"""Online token masking (paper section 4, Alg. 6): decoding states, exact per-step bitmasks, and advancing.

From lexer state q, each token either stays inside the current lexeme (it ends in some lexer
state), or ends the lexeme with a terminal T and then does what its remaining bytes do from
the start state: an *outcome row* of the transducer, shared by all lexer states. So a mask is
assembled from a per-step *status* vector: per first terminal the parser takes, which outcome
rows are viable after it (:mod:`greatgramma.split`), and which end states can go on; the
lexer state's view (:mod:`greatgramma.views`) maps every token to its entry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import native
from .cache import BoundedCache, stack_entry_charge
from .codes import ANY_COLUMN, DEAD, NO_TERM
from .compiled import CompiledGrammar
from .errors import GreatGrammaError, TokenRejectedError
from .explain import END_OF_INPUT, Diagnosis, diagnosis, terminal_name
from .split import ViableRows
from .stack import Stack
from .views import LexerViews, pack


@dataclass(frozen=True)
class State:
    """A decoding state: lexer state of the unfinished lexeme, parser stack, and whether EOS was fed."""

    lexer: int
    stack: Stack  # shared frames (an IndentedStack over them with an indenter)
    finished: bool = False
    grammar_id: int = 0  # CompiledGrammar.identity of the grammar the state belongs to


class Masker:
    """Computes masks and advances states for one compiled grammar. Thread-safe; states are values.

    ``cache_bytes`` bounds the memory of all caches together (default 256 MiB); ``cache_size``
    also caps the entries of each (masks by status and viable rows: ``cache_size``; masks by
    (lexer state, stack): ``4 * cache_size``; lexer views: ``cache_size // 16``, memos more).
    Shares of ``cache_bytes``: masks keyed by (lexer state, stack) 1/4 and by status 1/8 (each
    charged its words, 4 bytes per 32 tokens, once where many stacks share them), lexer views
    1/4 (4 bytes per token), and the viable-rows caches 3/8 (:class:`~greatgramma.split.ViableRows`).
    Stacks are shared frames, so a cache entry keyed by a stack is charged the frames it keeps
    alive, each frame once (stacks met one after another share all but their top frames). The
    parser's own memos (``parser.UNIT_MEMO_BYTES``, ``SEGMENT_MEMO_BYTES``) and the frames'
    memos (``MEMO_ENTRIES`` per frame, owned by the states) are bounded apart; the compiled
    grammar's lazily filled tables (subtrees, blocks) grow with the grammar only.
    ``split_depth`` is how many top parser states the shared context-independent part of a mask
    is computed for.
    """

    def __init__(
        self, compiled: CompiledGrammar, *, cache_size: int = 4096, split_depth: int = 2, cache_bytes: int = 256 << 20
    ):
        _check_options(compiled, cache_size=cache_size, split_depth=split_depth, cache_bytes=cache_bytes)
        self.compiled = compiled
        self._lexer, self._vocab = compiled.lexer, compiled.vocab
        self.parser = compiled.new_parser()  # the stack machine the masks are computed with (owns its memos)
        self._ignored = self._lexer.ignored
        self._nwords = (self._vocab.vocab_size + 31) // 32
        self._eos = np.array(sorted(set(self._vocab.eos_token_ids)), dtype=np.int64)
        self._layout = compiled.blocks.layout
        self._stack_bytes = self.parser.stack_bytes
        share = cache_bytes // 16
        self._masks = BoundedCache(4 * share, 4 * cache_size)  # (x, stack) -> words, EOS included
        self._by_status = BoundedCache(2 * share, cache_size)  # the same words, keyed by what decides them
        self._views = LexerViews(compiled.blocks, self._vocab.vocab_size, 4 * share, max(2, cache_size // 16))
        self._rows = ViableRows(compiled.sequences, self.parser, split_depth, 6 * share, cache_size)
        self._id = compiled.identity
        self._initial = self._start(compiled)

    def caches(self) -> dict[str, BoundedCache]:
        """The bounded caches by name (for measuring and tests)."""
        return {"masks": self._masks, "by_status": self._by_status, **self._views.caches(), **self._rows.caches()}

    # ------------------------------------------------------------ public API

    def initial_state(self) -> State:
        return self._initial

    def mask(self, state: State) -> np.ndarray:
        """int32 bitmask of shape (ceil(V/32),): bit t set iff token t is allowed next."""
        self._check(state)
        if state.finished:
            return np.zeros(self._nwords, dtype=np.int32)
        return self._mask_words(state).copy().view(np.int32)

    def _mask_words(self, state: State) -> np.ndarray:
        """:meth:`mask` of an unfinished state without the copy: the cache's own int32 words, to
        be read only (a batch fill copies them into its rows)."""
        return self._token_words(state.lexer, state.stack).view(np.int32)

    def _cached_mask(self, state: State) -> np.ndarray | None:
        """The mask of this unfinished state if the cache holds it (int32 words, the cache's own:
        read, never write), else None; nothing is computed."""
        got = self._masks.get((state.lexer, state.stack))
        return None if got is None else got.view(np.int32)

    def _keep_mask(self, state: State, mask: np.ndarray) -> None:
        """Cache ``mask``, the mask of this unfinished state computed by another Masker of the same
        grammar (a worker process's), so that this one finds it as if it had computed it."""
        words = np.array(mask, dtype=np.int32).view(np.uint32)
        if words.shape != (self._nwords,):
            raise ValueError(f"a mask of this grammar has {self._nwords} words, got shape {words.shape}")
        self._put_mask(state.lexer, state.stack, words)

    def is_complete(self, state: State) -> bool:
        """Whether the output so far is a complete sentence (EOS allowed)."""
        self._check(state)
        return not state.finished and self._complete(state.lexer, state.stack)

    def _complete(self, x: int, stack: Stack) -> bool:
        terms = self._lexer.finish(x)
        if terms is None:
            return False
        stack = self._feed_all(stack, terms)
        return stack is not None and self.parser.accepts_end(stack)

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
            why = self.diagnose(state, None)
            raise TokenRejectedError(token, None, why.expected, f"EOS before the output is complete: {why.message}")
        data = self._bytes(token)
        if not data:
            raise TokenRejectedError(token, data, self.expected(state), "tokens without bytes (special or empty) are never allowed")
        ran = self._lexer.feed(state.lexer, data)
        if ran is not None:
            terms, end = ran
            stack = self._feed_all(state.stack, terms)
            if stack is not None and self._end_ok(stack, end):
                return State(end, stack, False, self._id)
        why = self.diagnose(state, data)
        raise TokenRejectedError(token, data, why.expected, why.message, offset=why.offset)

    def viable_prefix(self, state: State, data: bytes) -> tuple[int, State]:
        """How many leading bytes of ``data`` keep the output viable from ``state``, and the
        state after them: the bytes fed one at a time, as :meth:`advance` feeds a token."""
        self._check(state)
        if state.finished:
            return 0, state
        for i in range(len(data)):
            ran = self._lexer.feed(state.lexer, data[i : i + 1])
            if ran is None:
                return i, state
            stack = self._feed_all(state.stack, ran[0])
            if stack is None or not self._end_ok(stack, ran[1]):
                return i, state
            state = State(ran[1], stack, False, self._id)
        return len(data), state

    def diagnose(self, state: State, data: bytes | None) -> Diagnosis:
        """Why ``data`` cannot follow ``state`` (None: why the output cannot end there): how
        many of its bytes keep the output viable, what is wrong at the next one, and what was
        expected there, in words for people (:mod:`greatgramma.explain`)."""
        count, at = (0, state) if data is None else self.viable_prefix(state, data)
        rest = None if data is None else data[count:]
        if rest is None:
            terms = self._lexer.finish(at.lexer)
        else:
            ran = self._lexer.feed(at.lexer, rest[:1]) if rest else None
            terms = None if ran is None else ran[0]
        stack, refused = at.stack, None
        for t in terms or ():
            if not self._ignored[t]:
                fed = self.parser.feed(stack, t)
                if fed is None:
                    refused = self._lexer.terminals[t]
                    break
                stack = fed
        return diagnosis(count, self.parser, refused, stack, rest, self.expected(at))

    def expected(self, state: State) -> list[str]:
        """The terminals that could come next, named for people (:func:`~greatgramma.explain.terminal_name`).

        Mid-lexeme, these are the ones the current lexeme can still become, followed by the ones
        the parser accepts once the lexeme ends as it stands.
        """
        terms, table = self._lexer.terminals, self.parser
        names: list[str] = []
        stack: Stack | None = state.stack
        q = self._lexer.base(state.lexer)
        if q != 0:
            names += [
                terminal_name(terms[t if t != ANY_COLUMN else -1]) for t in self._lexer.visible[q] if table.feed(state.stack, t)
            ]
            winner = int(self._lexer.accept[q])
            if winner == DEAD:
                return names
            if not self._ignored[winner]:
                stack = table.feed(state.stack, winner)
        if stack is not None:
            names += [terminal_name(terms[t]) if t < len(terms) else END_OF_INPUT for t in table.expected(stack)]
        return list(dict.fromkeys(names))

    # ------------------------------------------------------------ internals

    def _start(self, compiled: CompiledGrammar) -> State:
        """The state before any output: the postlexer's leading bytes (an indenter's line start) read."""
        post = compiled.grammar.postlexer
        lead = b"" if post is None else post.leading_bytes()
        ran = self._lexer.feed(0, lead) if lead else ([], 0)
        stack = None if ran is None else self._feed_all(self.parser.initial_stack(), ran[0])
        if stack is None or (lead and not self._end_ok(stack, ran[1])):
            raise GreatGrammaError(
                f"the grammar cannot begin after the postlexer's leading bytes {lead!r} "
                f"({post!r}: its start rule must take what they lex to, e.g. start: (_NL | stmt)*)"
            )
        return State(ran[1], stack, False, self._id)

    def _check(self, state: State) -> None:
        if not isinstance(state, State) or state.grammar_id != self._id:
            raise GreatGrammaError("this state does not belong to this Masker's compiled grammar")

    def _bytes(self, token: int) -> bytes | None:
        tb = self._vocab.token_bytes
        return tb[token] if token < len(tb) else None

    def _end_ok(self, stack: Stack, end: int, branch: frozenset = frozenset(), visible_ok: dict | None = None) -> bool:
        """Some continuation of the lexeme in lexer state ``end`` keeps the parser alive: the
        lexeme goes on into a terminal the parser takes, or dies and backs up to its fallback
        (``LexingTransducer.backup_options``, searched only when the rest fails) and what follows
        goes on. ``visible_ok``: answers for tuples of visible terminals on this stack so far."""
        ignored, visible, _ = self._lexer.end_key(end)
        if ignored:
            return True
        ok = None if visible_ok is None else visible_ok.get(visible)
        if ok is None:
            feed = self.parser.feed
            ok = any(feed(stack, t) is not None for t in visible)
            if visible_ok is not None:
                visible_ok[visible] = ok
        if ok:
            return True
        branch = branch | {end}
        for terms, after in self._lexer.backup_options(end):
            if after not in branch:  # a state met again on the branch adds no continuation
                fed = self._feed_all(stack, terms)
                if fed is not None and self._end_ok(fed, after, branch):
                    return True
        return False

    def _feed_all(self, stack: Stack, terms) -> Stack | None:
        """Feed lexer terminals in order (ignored ones dropped); None once the parser rejects."""
        for t in terms:
            if not self._ignored[t]:
                stack = self.parser.feed(stack, t)
                if stack is None:
                    return None
        return stack

    def _token_words(self, x: int, stack: Stack) -> np.ndarray:
        """uint32 words: tokens allowed from lexer state x and this stack, EOS included where the
        output can end there. Cached on the stack, and (EOS aside) on what the stack decides
        (different stacks often allow the same rows)."""
        key = (x, stack)
        got = self._masks.get(key)
        if got is None:
            status = self._status(x, stack)
            got = self._by_status.get(status)
            if got is None:
                got = self._words(status)
                got = self._by_status.put(status, got, got.nbytes + _status_bytes(status))
            if len(self._eos) and self._complete(x, stack):
                got = got.copy()
                _set_bits(got, self._eos)
            got = self._put_mask(x, stack, got)
        return got

    def _put_mask(self, x: int, stack: Stack, words: np.ndarray) -> np.ndarray:
        """Cache the words of (x, stack): stacks that decide the same status share its words, and
        stacks share frames, each charged once."""
        return self._masks.put_shared((x, stack), words, stack_entry_charge(words, words.nbytes, stack, self._stack_bytes))

    def _status(self, x: int, stack: Stack) -> tuple:
        """All that the words from lexer state x depend on, as a hashable value: per first
        terminal the parser takes, its viable rows; which end states can go on; and the same for
        the state that tokens backing up run from."""
        view = self._views.view(x)
        rows = []
        for first in view.firsts:
            after = stack if first == NO_TERM else self.parser.feed(stack, first)
            if after is not None:
                rows.append((first, self._rows.of(after)))
        visible_ok: dict = {}  # end groups often differ only in how they back up
        ends = tuple(self._end_ok(stack, group[0], visible_ok=visible_ok) for group in view.end_groups)
        behind = None
        if view.fallback is not None:
            path = self._lexer.fallback_path(x)
            after = None if path is None else self._feed_all(stack, path[0])
            if after is not None:
                behind = self._status(path[1], after)
        return x, tuple(rows), ends, behind

    def _words(self, status: tuple) -> np.ndarray:
        x, rows, ends, behind = status
        view, layout = self._views.view(x), self._layout
        num_rows = max((len(ok) for _, ok in rows), default=0)  # at least the rows the view names
        flags = np.zeros(max(view.limit, layout.size(num_rows, max((g[-1] for g in view.end_groups), default=0))), dtype=bool)
        for first, ok in rows:
            flags[layout.rows_of(first, len(ok))] = np.frombuffer(ok, dtype=bool)
        flags[[layout.end_codes(e) for group, ok in zip(view.end_groups, ends) if ok for e in group]] = True
        if native.ext is not None:
            words = native.gather_bits(flags, view.code)
        else:
            words = pack(np.take(flags, view.code, mode="clip"))  # codes are in range: skip the checks
        if behind is not None:  # tokens that back up: they run from the relexed state
            inner = self._by_status.get(behind)
            if inner is None:
                inner = self._words(behind)
            words |= view.fallback & inner
        return words


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


def _set_bits(words: np.ndarray, tokens: np.ndarray) -> None:
    """Set bit t of the uint32 word array for each token id t."""
    if len(tokens):
        tokens = np.asarray(tokens, dtype=np.int64)
        np.bitwise_or.at(words, tokens >> 5, (np.uint32(1) << (tokens & 31).astype(np.uint32)))
