"""Preprocessing (``compile``): grammar x vocabulary -> the tables the masker reads."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .grammar import Grammar
from .lexer import LexerDFA
from .parser import ParseTable
from .transducer import TokenTransducer, TokenTrie
from .vocab import Vocabulary


_IDENTITIES = itertools.count(1)


@dataclass(eq=False)
class CompiledGrammar:
    """Everything precomputed for one (grammar, vocabulary) pair. Share it between threads and maskers."""

    grammar: Grammar
    vocab: Vocabulary
    lexer: LexerDFA
    parse_table: ParseTable
    trie: TokenTrie
    transducer: TokenTransducer
    timings: dict[str, float] = field(default_factory=dict)
    # subtrees compile walked (a loaded grammar's transducer walks its own on demand; the file keeps this figure)
    preprocessed_subtrees: int = 0
    # which compiled grammar a decoding state belongs to: unlike id(), never reused in a process
    identity: int = field(default_factory=lambda: next(_IDENTITIES), init=False, repr=False)

    def summary(self) -> dict[str, object]:
        """Sizes and seconds of the preprocessing stages."""
        return {
            "grammar": self.grammar.source,
            "terminals": len(self.lexer.terminals),
            "lexer_states": self.lexer.num_states,
            "parser_states": self.parse_table.num_states,
            "vocab_size": self.vocab.vocab_size,
            "token_strings": len(self.trie),
            "start_state_outcomes": len(self.transducer.outcomes),
            "subtrees": self.preprocessed_subtrees,
            "seconds": dict(self.timings),
        }

    def save(self, path: str | os.PathLike) -> None:
        """Write the artifact (atomically: a failed save leaves any previous file at ``path`` intact)."""
        from .artifact import save

        save(self, path)


STAGES = ("lalr", "lexer", "trie", "transducer", "subtrees")


def compile(  # noqa: A001
    grammar: Grammar,
    vocab: Vocabulary,
    *,
    max_dfa_states: int = 50_000,
    max_token_table_entries: int = 20_000_000,
    progress: Callable[[str, float], None] | None = None,
) -> CompiledGrammar:
    """Preprocess ``grammar`` for ``vocab`` (lexer DFA, LALR table, token trie, token-level transducer).

    ``progress(stage, seconds)`` is called as each of :data:`STAGES` finishes.
    """
    timings: dict[str, float] = {}
    t = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        timings[name] = now - t
        t = now
        if progress is not None:
            progress(name, timings[name])

    table = grammar.parse_table
    lap("lalr")
    lexer = grammar.build_lexer(max_states=max_dfa_states)
    lap("lexer")
    trie = TokenTrie.build(vocab.token_bytes)
    lap("trie")
    transducer = TokenTransducer(lexer, trie)
    lap("transducer")
    subtrees = transducer.walk_all_subtrees(max_token_table_entries)
    lap("subtrees")
    return CompiledGrammar(grammar, vocab, lexer, table, trie, transducer, timings, subtrees)
