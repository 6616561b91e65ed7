"""Online token masking (paper section 4, Alg. 6): decoding states and exact per-step bitmasks.

For a lexer state q and the parser state p on top of the stack, the tokens of q (grouped by
outcome) split into always-accepted ones (a packed bitmask), always-rejected ones, and
context-dependent ones whose terminals reduce below p; only the last are checked against the
live stack (paper section 3.3, Alg. 5). These splits are computed on first use and cached.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .compiled import CompiledGrammar
from .errors import GreatGrammaError, TokenRejectedError
from .lexer import DEAD
from .parser import DEPENDS, Stack

ACCEPT, REJECT, DEPEND = 1, 0, 2


@dataclass(frozen=True)
class State:
    """A decoding state: lexer DFA state of the unfinished lexeme, LALR stack, and whether EOS was fed."""

    lexer: int
    stack: Stack
    finished: bool = False
    grammar_id: int = 0


@dataclass(frozen=True, eq=False)
class _LexerStateTokens:
    """The tokens that are not dead from one lexer state, grouped by outcome."""

    outcomes: np.ndarray  # distinct outcome ids
    tokens: np.ndarray  # token ids, sorted by outcome group
    bounds: np.ndarray  # tokens[bounds[i]:bounds[i+1]] have outcome outcomes[i]
    group_of_token: np.ndarray  # for each entry of tokens, its group index


class Masker:
    """Computes masks and advances states for one compiled grammar. Thread-safe; states are values."""

    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        self._transducer = compiled.transducer
        self._table = compiled.parse_table
        self._lexer = compiled.lexer
        self._vocab = compiled.vocab
        terms = self._lexer.terminals
        self._ignored = [t.ignored for t in terms]
        self._prod_visible = [
            [t for t in np.nonzero(row)[0].tolist() if not terms[t].ignored] for row in self._lexer.prod
        ]
        self._prod_ignored = [bool(any(terms[t].ignored for t in np.nonzero(row)[0])) for row in self._lexer.prod]
        self._nwords = (self._vocab.vocab_size + 31) // 32
        self._eos = np.array(sorted(set(self._vocab.eos_token_ids)), dtype=np.int64)
        self._by_lexer: dict[int, _LexerStateTokens] = {}
        self._by_pair: dict[tuple[int, int], tuple[np.ndarray, list[tuple[int, np.ndarray]]]] = {}
        self._known: dict[tuple[Stack, int], object] = {}
        self._lock = threading.Lock()
        self._id = id(compiled)

    # ------------------------------------------------------------ public API

    def initial_state(self) -> State:
        return State(0, (self._table.start_state,), False, self._id)

    def mask(self, state: State) -> np.ndarray:
        """int32 bitmask of shape (ceil(V/32),): bit t set iff token t is allowed next."""
        self._check(state)
        words = np.zeros(self._nwords, dtype=np.uint32)
        if state.finished:
            return words.view(np.int32)
        accepted, dependent = self._pair(state.lexer, state.stack[-1])
        words |= accepted
        memo: dict = {}
        for o, toks in dependent:
            if self._outcome_ok(o, state.stack, memo):
                _set_bits(words, toks)
        if len(self._eos) and self.is_complete(state):
            _set_bits(words, self._eos)
        return words.view(np.int32)

    def is_complete(self, state: State) -> bool:
        """Whether the output so far is a complete sentence (EOS allowed)."""
        self._check(state)
        if state.finished:
            return False
        table = self._table
        if state.lexer == 0:
            return table.accepts_end(state.stack)
        winner = int(self._lexer.accept[state.lexer])
        if winner == DEAD:
            return False
        stack = state.stack if self._ignored[winner] else table.feed(state.stack, winner)
        return stack is not None and table.accepts_end(stack)

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
            raise TokenRejectedError(token, data, self.expected(state), "special tokens are never allowed")
        ran = self._lexer.feed(state.lexer, data)
        if ran is not None:
            terms, end = ran
            stack = state.stack
            for t in terms:
                if not self._ignored[t]:
                    stack = self._table.feed(stack, t)
                    if stack is None:
                        break
            if stack is not None and self._end_ok(stack, end):
                return State(end, stack, False, self._id)
        raise TokenRejectedError(token, data, self.expected(state))

    def expected(self, state: State) -> list[str]:
        """Names of the terminals that could come next (for error messages)."""
        terms = self._lexer.terminals
        if state.lexer == 0:
            cand = [t for t in range(len(terms)) if not terms[t].ignored]
            return [terms[t].display for t in self._table.expected(state.stack) if t in cand]
        return [terms[t].display for t in self._prod_visible[state.lexer] if self._table.feed(state.stack, t)]

    # ------------------------------------------------------------ internals

    def _check(self, state: State) -> None:
        if not isinstance(state, State) or state.grammar_id != self._id:
            raise GreatGrammaError("this state does not belong to this Masker's compiled grammar")

    def _bytes(self, token: int) -> bytes | None:
        tb = self._vocab.token_bytes
        return tb[token] if token < len(tb) else None

    def _end_ok(self, stack: Stack, end: int) -> bool:
        """Some lexeme reachable from lexer state ``end`` keeps the parser alive."""
        if self._prod_ignored[end]:
            return True
        feed = self._table.feed
        return any(feed(stack, t) is not None for t in self._prod_visible[end])

    def _outcome_ok(self, o: int, stack: Stack, memo: dict) -> bool:
        """Exact check of one outcome against a full stack."""
        key = o
        got = memo.get(key)
        if got is None:
            terms, end = self._transducer.outcomes.unpack(o)
            feed = self._table.feed
            s: Stack | None = stack
            for t in terms:
                s = feed(s, t)
                if s is None:
                    break
            got = memo[key] = s is not None and self._end_ok(s, end)
        return got

    def _feed_known(self, known: Stack, term: int):
        key = (known, term)
        got = self._known.get(key, self)
        if got is self:
            got = self._known[key] = self._table.feed_known(known, term)
        return got

    def _status(self, o: int, p: int) -> int:
        """ACCEPT / REJECT / DEPEND for outcome o when the stack top is p (and nothing below is known)."""
        terms, end = self._transducer.outcomes.unpack(o)
        known: object = (p,)
        for t in terms:
            known = self._feed_known(known, t)  # type: ignore[arg-type]
            if known is False:
                return REJECT
            if known is DEPENDS:
                return DEPEND
        if self._prod_ignored[end]:
            return ACCEPT
        result = REJECT
        for t in self._prod_visible[end]:
            r = self._feed_known(known, t)  # type: ignore[arg-type]
            if r is DEPENDS:
                result = DEPEND
            elif r is not False:
                return ACCEPT
        return result

    def _lexer_tokens(self, q: int) -> _LexerStateTokens:
        got = self._by_lexer.get(q)
        if got is None:
            strings, outs = self._transducer.walk(q)
            toks, src = self._transducer.trie.tokens_of(strings)
            outs = outs[src]
            uniq, inv = np.unique(outs, return_inverse=True)
            order = np.argsort(inv, kind="stable")
            bounds = np.zeros(len(uniq) + 1, dtype=np.int64)
            np.cumsum(np.bincount(inv, minlength=len(uniq)), out=bounds[1:])
            got = _LexerStateTokens(uniq, toks[order], bounds, inv[order])
            with self._lock:
                got = self._by_lexer.setdefault(q, got)
        return got

    def _pair(self, q: int, p: int) -> tuple[np.ndarray, list[tuple[int, np.ndarray]]]:
        key = (q, p)
        got = self._by_pair.get(key)
        if got is None:
            lt = self._lexer_tokens(q)
            status = np.fromiter((self._status(int(o), p) for o in lt.outcomes), dtype=np.int8, count=len(lt.outcomes))
            words = np.zeros(self._nwords, dtype=np.uint32)
            _set_bits(words, lt.tokens[status[lt.group_of_token] == ACCEPT])
            dependent = [
                (int(lt.outcomes[i]), lt.tokens[lt.bounds[i] : lt.bounds[i + 1]]) for i in np.nonzero(status == DEPEND)[0]
            ]
            got = (words, dependent)
            with self._lock:
                got = self._by_pair.setdefault(key, got)
        return got


def _set_bits(words: np.ndarray, tokens: np.ndarray) -> None:
    """Set bit t of the uint32 word array for each token id t."""
    if len(tokens):
        tokens = np.asarray(tokens, dtype=np.int64)
        np.bitwise_or.at(words, tokens >> 5, (np.uint32(1) << (tokens & 31).astype(np.uint32)))
