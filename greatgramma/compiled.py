"""Preprocessing (``compile``): grammar x vocabulary -> the tables the masker reads; saving and loading them."""

from __future__ import annotations

import itertools
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from . import artifact, native
from .blocks import BlockTable, StatusLayout
from .errors import ArtifactError, GrammarWarning, GreatGrammaError, ResourceLimitError
from .grammar import Grammar
from .lexer import LexerDFA
from .lexing import LexingTransducer
from .parse_table import ParseTable
from .parser import LalrParser
from .sequences import SequenceTrie
from .subtrees import WALK_BUDGET, SubtreeWalks
from .transducer import TokenTransducer
from .trie import TokenTrie, trie_of
from .version import __version__
from .vocab import Vocabulary

_IDENTITIES = itertools.count(1)


@dataclass(eq=False, repr=False)
class CompiledGrammar:
    """Everything precomputed for one (grammar, vocabulary) pair. Share it between threads and maskers.

    ``lexer`` runs the lexer DFA and owns its backing-up states; the token tables
    (``transducer``'s suffix rows, ``subtrees``, ``blocks``, ``sequences``) are filled as
    decoding reaches them, beyond what compiling filled (each entry a function of its key).
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
        post = self.grammar.postlexer
        if post is None:
            return lalr
        return post.parser(lalr, [t.name for t in self.lexer.terminals if t.column is None])

    def __repr__(self) -> str:  # (the dataclass repr printed every table: megabytes at 128K tokens)
        return (f"CompiledGrammar({self.grammar.source}, {self.vocab!r}, terminals={len(self.lexer.terminals)}, "
                f"lexer_states={self.lexer.num_states}, parser_states={self.parse_table.num_states})")

    def summary(self) -> dict[str, object]:
        """Sizes and seconds of the preprocessing stages."""
        return {
            "grammar": self.grammar.source,
            "terminals": len(self.lexer.terminals),
            "lexer_states": self.lexer.num_states,
            "parser_states": self.parse_table.num_states,
            "vocab_size": self.vocab.vocab_size,
            "token_strings": len(self.trie),
            "outcome_rows": len(self.transducer.outcomes),
            "suffix_rows": f"{self.transducer.num_computed:,} of {len(self.transducer.suffix):,}",
            "subtrees": self.preprocessed_subtrees,
            "compiled_loops": native.loops(),
            "seconds": dict(self.timings),
        }

    def save(self, path: str | os.PathLike) -> None:
        """Write the artifact (atomically: a failed save leaves any previous file at ``path`` intact)."""
        header = {"grammar": artifact.grammar_header(self.grammar), "vocab": artifact.vocab_header(self.vocab)}
        header.update(self.header_tables(), timings=dict(self.timings))
        artifact.write(path, header, self.to_arrays())

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every table's arrays, named as the artifact names them."""
        outcomes = self.transducer.to_arrays()  # before the extended states they name
        return {
            **artifact.vocab_arrays(self.vocab),
            **artifact.prefixed("lexer_", self.lexer.dfa.to_arrays()),
            **artifact.prefixed("lexer_", self.lexer.to_arrays()),
            **artifact.prefixed("lalr_", self.parse_table.to_arrays()),
            **outcomes,
        }

    def header_tables(self) -> dict:
        """The artifact header's fields that describe tables (what ``verify`` compares besides the arrays)."""
        lalr = self.parse_table.to_header()
        return {
            "terminals": [asdict(t) for t in self.lexer.terminals],
            "lalr": {**lalr, "start_state": int(lalr["start_state"]), "end_state": int(lalr["end_state"])},
            "preprocessed_subtrees": int(self.preprocessed_subtrees),
        }


STAGES = ("lalr", "lexer", "trie", "transducer", "subtrees", "blocks")


def compile(  # noqa: A001
    grammar: Grammar,
    vocab: Vocabulary,
    *,
    max_dfa_states: int = 50_000,
    max_token_table_entries: int = 20_000_000,
    max_seconds: float | None = None,
    eager: bool = False,
    progress: Callable[[str, float], None] | None = None,
) -> CompiledGrammar:
    """Preprocess ``grammar`` for ``vocab``: the LALR table, the lexer DFA, and the token trie
    (built once per vocabulary and shared).

    The token-level tables (the suffix rows of the transducer, the subtree walks and the
    per-byte blocks) are filled as decoding reaches the lexer states that need them, except the
    blocks entered from DFA states that loop on many bytes (inside a string or a comment: most
    of the vocabulary, reached by nearly every output), built here; or all here with
    ``eager=True`` (seconds for a big grammar: then no mask has to walk the trie).
    The masks are the same either way. ``progress(stage, seconds)`` is called as each of
    :data:`STAGES` finishes.

    Budgets, each a :class:`ResourceLimitError` that names what ran over: ``max_dfa_states``
    (lexer DFA states), ``max_token_table_entries`` (the token tables, were they all filled) and
    ``max_seconds`` (checked between stages and while the lexer DFA is built; Lark's analysis
    of the grammar, if not done yet, runs to its end first).
    """
    timings: dict[str, float] = {}
    t = start = time.perf_counter()
    deadline = None if max_seconds is None else start + max_seconds

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        timings[name] = now - t
        t = now
        if progress is not None:
            progress(name, timings[name])
        if deadline is not None and now > deadline and name != STAGES[-1]:
            raise ResourceLimitError(
                f"compiling {grammar.source} took {now - start:.2f} s, over max_seconds={max_seconds} "
                f"(stopped after the {name} stage); raise max_seconds"
            )

    table = grammar.parse_table
    lap("lalr")
    lexer = lexing_transducer(grammar, grammar.build_lexer(max_states=max_dfa_states, deadline=deadline))
    lap("lexer")
    trie = trie_of(vocab)  # shared by the grammars compiled for this vocabulary
    lap("trie")
    transducer = TokenTransducer(lexer, trie)
    if eager:
        transducer.fill()
    lap("transducer")
    subtrees = SubtreeWalks(transducer, None if eager else WALK_BUDGET)  # (eager: every walk kept)
    subtrees.walk_all(max_token_table_entries, walk=eager)  # (the size check, in either case)
    lap("subtrees")
    sequences, blocks = masking_tables(transducer, subtrees)
    if eager:
        blocks.fill()
    else:
        blocks.fill_loops()
    lap("blocks")
    walked = subtrees.num_walked
    return CompiledGrammar(grammar, vocab, lexer, table, trie, transducer, subtrees, sequences, blocks, timings, walked)


def lexing_transducer(grammar: Grammar, dfa) -> LexingTransducer:
    """The lexing transducer over ``dfa``, with the grammar's postlexer's view of it."""
    post = grammar.postlexer
    return LexingTransducer(dfa, None if post is None else post.lexer_view(dfa))


def masking_tables(transducer: TokenTransducer, subtrees: SubtreeWalks) -> tuple[SequenceTrie, BlockTable]:
    """The outcome rows' sequence trie and the per-byte blocks (also built when an artifact is loaded)."""
    layout = StatusLayout.of(len(transducer.lexer.terminals))
    return SequenceTrie(transducer), BlockTable(subtrees, layout)


def load(
    path: str | os.PathLike,
    *,
    grammar: Grammar | None = None,
    vocab: Vocabulary | None = None,
    verify: bool = False,
) -> CompiledGrammar:
    """Read a compiled grammar (:mod:`greatgramma.artifact`); if ``grammar`` or ``vocab`` is
    given, refuse a file made for others.

    Everything the file claims is checked before use. ``verify=True`` also compiles the stored
    grammar for the stored vocabulary again (seconds) and compares every table, so that even an
    edit that keeps the tables well formed is refused.
    """
    stored = artifact.read(path, grammar=grammar, vocab=vocab)
    try:
        compiled = _assemble(stored, grammar if grammar is not None else stored.grammar)
    except artifact.Invalid as exc:
        raise artifact.malformed(stored.path, exc) from None
    if verify:
        _verify(stored, compiled)
    return compiled


def _assemble(stored: artifact.Stored, grammar: Grammar) -> CompiledGrammar:
    """The tables from a checked file (any error still reported as a malformed file)."""
    a, header = stored.arrays, stored.header
    with artifact.building("lexer"):
        lexer = lexing_transducer(stored.grammar, LexerDFA.from_arrays(artifact.unprefixed("lexer_", a), stored.terminals))
    try:
        lexer.restore_extended(LexingTransducer.extended_keys_from_arrays(artifact.unprefixed("lexer_", a)))
    except ValueError as exc:
        raise artifact.Invalid(str(exc)) from None
    with artifact.building("parse table"):
        table = ParseTable.from_arrays(artifact.unprefixed("lalr_", a), header["lalr"])
    with artifact.building("token trie and transducer"):
        transducer = TokenTransducer.from_arrays(lexer, stored.trie, a)
        subtrees = SubtreeWalks(transducer)
        sequences, blocks = masking_tables(transducer, subtrees)
    parts = (grammar, stored.vocab, lexer, table, stored.trie, transducer, subtrees, sequences, blocks)
    return CompiledGrammar(*parts, header["timings"], header["preprocessed_subtrees"])


def _verify(stored: artifact.Stored, compiled: CompiledGrammar) -> None:
    """Compile the stored grammar for the stored vocabulary and compare every table with the file's."""
    p = stored.path
    try:
        with warnings.catch_warnings():  # the grammar's warnings were given when it was preprocessed
            warnings.simplefilter("ignore", GrammarWarning)
            fresh = compile(compiled.grammar, compiled.vocab, eager=True)
    except GreatGrammaError as exc:
        raise ArtifactError(f"{str(p)!r} fails verification: its grammar does not compile here ({exc})") from None
    differ = artifact.differences(stored, fresh.to_arrays(), fresh.header_tables())
    if differ:
        raise ArtifactError(
            f"{str(p)!r} fails verification: {', '.join(differ)} differ from what its grammar and "
            f"vocabulary compile to with greatgramma {__version__}"
        )
