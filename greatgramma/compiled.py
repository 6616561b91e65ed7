"""Preprocessing (``compile``): grammar x vocabulary -> the tables the masker reads."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .blocks import BlockTable, StatusLayout
from .grammar import Grammar
from .lexing import LexingTransducer
from .parse_table import ParseTable
from .parser import LalrParser
from .sequences import SequenceTrie
from .subtrees import SubtreeWalks
from .transducer import TokenTransducer
from .trie import TokenTrie
from .vocab import Vocabulary

_IDENTITIES = itertools.count(1)


@dataclass(eq=False)
class CompiledGrammar:
    """Everything precomputed for one (grammar, vocabulary) pair. Share it between threads and maskers.

    ``lexer`` runs the lexer DFA and owns its backing-up states; ``subtrees`` and ``blocks``
    are filled lazily beyond what compiling walked (each entry a function of its key).
    """

    grammar: Grammar
    vocab: Vocabulary
    lexer: LexingTransducer
    parse_table: ParseTable
    trie: TokenTrie
    transducer: TokenTransducer
    subtrees: SubtreeWalks
    sequences: SequenceTrie
    blocks: BlockTable
    timings: dict[str, float] = field(default_factory=dict)
    # subtrees compile walked (a loaded grammar walks its own on demand; the file keeps this figure)
    preprocessed_subtrees: int = 0
    # which compiled grammar a decoding state belongs to: unlike id(), never reused in a process
    identity: int = field(default_factory=lambda: next(_IDENTITIES), init=False, repr=False)

    def new_parser(self):
        """A parser for decoding: the LALR stack machine, wrapped by the grammar's postlexer if any."""
        lalr = LalrParser(self.parse_table)
        post = self.grammar.indenter
        if post is None:
            return lalr
        return post.parser(lalr, [t.name for t in self.lexer.terminals if t.column is None])

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


STAGES = ("lalr", "lexer", "trie", "transducer", "subtrees", "blocks")


def compile(  # noqa: A001
    grammar: Grammar,
    vocab: Vocabulary,
    *,
    max_dfa_states: int = 50_000,
    max_token_table_entries: int = 20_000_000,
    progress: Callable[[str, float], None] | None = None,
) -> CompiledGrammar:
    """Preprocess ``grammar`` for ``vocab`` (lexer DFA, LALR table, token trie, token-level
    transducer, the subtree walks and per-byte blocks every DFA state enters).

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
    lexer = lexing_transducer(grammar, grammar.build_lexer(max_states=max_dfa_states))
    lap("lexer")
    trie = TokenTrie.build(vocab.token_bytes)
    lap("trie")
    transducer = TokenTransducer(lexer, trie)
    lap("transducer")
    subtrees = SubtreeWalks(transducer)
    walked = subtrees.walk_all(max_token_table_entries)
    lap("subtrees")
    sequences, blocks = masking_tables(transducer, subtrees)
    lap("blocks")
    return CompiledGrammar(grammar, vocab, lexer, table, trie, transducer, subtrees, sequences, blocks, timings, walked)


def lexing_transducer(grammar: Grammar, dfa) -> LexingTransducer:
    """The lexing transducer over ``dfa``, with the grammar's postlexer's view of it."""
    post = grammar.indenter
    return LexingTransducer(dfa, None if post is None else post.lexer_view(dfa))


def masking_tables(transducer: TokenTransducer, subtrees: SubtreeWalks) -> tuple[SequenceTrie, BlockTable]:
    """The outcome rows' sequence trie and the per-byte blocks (also built when an artifact is loaded)."""
    sequences = SequenceTrie.of(transducer)
    layout = StatusLayout.of(len(transducer.lexer.terminals), len(transducer.outcomes))
    return sequences, BlockTable(subtrees, layout)
