"""What the tokens do from a lexer state, as the masker reads it (lexer views over the token
transducer's blocks), against running each token's bytes through the lexing transducer."""

from __future__ import annotations

import random

import numpy as np
import pytest
from helpers import BENCH

import greatgramma as gg
from greatgramma.codes import DEAD, NO_TERM, UNKNOWN
from greatgramma.views import LexerViews

ALPHABET = [b"{", b"}", b'"', b"a", b"1", b" ", b"\n", b",", b":", b".", b"e", b"\xc3", b"\xa9", b"-", b"t",
            b"r", b"u", b"/", b"*", b"x", b"i", b"f", b"0", b"(", b"\t", b"\\", b"'", b"`"]


def decoded(views: LexerViews, compiled, x: int, token: int):
    """(parser-visible terminals, end state) that the view of lexer state x says ``token`` makes, or None."""
    lexer, outcomes, layout = compiled.lexer, compiled.transducer.outcomes, compiled.blocks.layout
    view = views.view(x)
    if view.fallback is not None and view.fallback[token >> 5] >> (token & 31) & 1:
        path = lexer.fallback_path(x)  # the token backs up to x's fallback, then runs from where that leads
        rest = None if path is None else decoded(views, compiled, path[1], token)
        return None if rest is None else (path[0] + rest[0], rest[1])
    code = int(view.code[token])
    if code == layout.dead:
        return None
    if code % 2:
        return (), (code - 1) // 2
    row, first = divmod((code - 2) // 2, layout.width)
    first += NO_TERM
    terms, end = outcomes.unpack(row)
    return ((first,) if first != NO_TERM else ()) + terms, end


def _setup(name: str, eager: bool = False):
    """A grammar (python: grammars/python.lark with its indenter) compiled for 500 random short
    tokens, and lexer states to read them from: DFA states, the start state, extended ones."""
    if name == "python":
        grammar = gg.Grammar.from_file(BENCH.parent / "python.lark", indenter=gg.Indenter.python())
    else:
        grammar = gg.Grammar.from_file(BENCH / f"{name}.lark")
    rng = random.Random(name)
    tokens = sorted({b"".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6))) for _ in range(500)})
    vocab = gg.Vocabulary([None, *tokens], eos_token_ids=[0])
    compiled = gg.compile(grammar, vocab, eager=eager)
    lexer = compiled.lexer
    states = rng.sample(range(lexer.num_states), min(lexer.num_states, 120)) + [0]
    states += list(range(lexer.num_states, lexer.num_lexer_states))[:60]  # extended (backing-up) states
    return compiled, vocab, tokens, states


@pytest.mark.parametrize("eager", [False, True], ids=["lazy", "eager"])
@pytest.mark.parametrize("name", ["json", "go", "java", "python"])
def test_views_match_byte_by_byte_lexing(name: str, eager: bool, compiled_loops: str) -> None:
    compiled, vocab, tokens, states = _setup(name, eager)
    lexer = compiled.lexer
    views = LexerViews(compiled.blocks, vocab.vocab_size, 64 << 20, 1 << 20)
    for x in states:
        for token, tok in enumerate(tokens, start=1):
            ran = lexer.feed(x, tok)
            expected = None
            if ran is not None:
                terms, end = ran
                expected = (tuple(t for t in terms if not lexer.ignored[t]), end)
            assert decoded(views, compiled, x, token) == expected, (x, tok)
    assert np.array_equal(views.view(0).code, LexerViews(compiled.blocks, vocab.vocab_size, 1 << 20, 2).view(0).code)


@pytest.mark.parametrize("name", ["json", "go", "python"])
def test_outcome_rows_match_byte_by_byte_lexing(name: str, compiled_loops: str) -> None:
    """SubtreeWalks.outcome_rows (what strings do from a lexer state, read off the suffix rows and
    the walks: how held fallbacks get their extended states in bulk) against LexingTransducer.feed,
    end states included: the extended states made in bulk are the ones feed makes."""
    compiled, _, _, states = _setup(name)
    lexer, walks, outcomes = compiled.lexer, compiled.blocks.subtrees, compiled.transducer.outcomes
    strings = walks.trie.strings
    for x in states + list(range(lexer.num_states, lexer.num_lexer_states))[:200]:
        rows = walks.outcome_rows(x, np.arange(len(strings)))
        for s, row in zip(strings, rows.tolist()):
            ran = lexer.feed(x, s)
            if row == UNKNOWN:  # backs up to x's own fallback: left to the caller
                assert x >= lexer.num_states, (x, s)
                continue
            expected = None if ran is None else (tuple(t for t in ran[0] if not lexer.ignored[t]), ran[1])
            assert (None if row == DEAD else outcomes.unpack(row)) == expected, (x, s)
    assert lexer.num_lexer_states > lexer.num_states  # extended states were met and read


@pytest.mark.parametrize("name", ["json", "go"])
def test_compile_builds_the_blocks_that_looping_states_enter(name: str, monkeypatch) -> None:
    """A lazy compile builds the blocks entered from DFA states that loop on MIN_LOOP or more bytes
    (inside a string or a comment): views from those states walk nothing more, and the blocks
    are the ones a view builds for itself, held ones resolved for it. (With an indenter, the subtrees that enter a pending
    newline column are left to the views, as in eager compiling; test_views_match_byte_by_byte_lexing
    checks those views.)"""
    from greatgramma.blocks import MIN_LOOP, BlockTable

    compiled, vocab, _, _ = _setup(name)
    delta = compiled.lexer.delta
    looping = [q for q in range(1, len(delta)) if (delta[q] == q).sum() >= MIN_LOOP]
    assert looping, "the grammar has a state that loops on many bytes (a string's inside)"
    built = dict(compiled.blocks._blocks)
    plain = BlockTable(compiled.subtrees, compiled.blocks.layout)  # the same subtrees, no blocks yet
    views = LexerViews(compiled.blocks, vocab.vocab_size, 64 << 20, 1 << 20)
    monkeypatch.setattr(BlockTable, "new_blocks", lambda *a, **k: pytest.fail("a looping state walked a new subtree"))
    for q in looping:
        views.view(q)
    monkeypatch.undo()
    plain.new_blocks([(b, lo, hi, st) for b, lo, hi in compiled.trie.root_children for st in [int(delta[looping[0], b])]
                      if st != DEAD], compiled.lexer.accept_next[looping[0]].tolist())  # as a view of looping[0] would
    for key, blk in plain._blocks.items():
        got = built[key]
        assert (got.code is None) == (blk.code is None) and got.firsts == blk.firsts and got.end_states == blk.end_states
        assert got.code is None or np.array_equal(got.code, blk.code)
