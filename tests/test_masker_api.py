"""Masker behaviour at the edges: special and padding ids, EOS, rejected tokens, foreign states, threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from helpers import CALC, CALC_TOKENS, grammar_path

import greatgramma as gg


def allowed(words: np.ndarray) -> set[int]:
    return set(np.nonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))[0].tolist())


def ids(*pieces: bytes) -> list[int]:
    return [CALC_TOKENS.index(p) for p in pieces]


def walk(masker: gg.Masker, pieces: list[bytes]) -> gg.State:
    state = masker.initial_state()
    for t in ids(*pieces):
        state = masker.advance(state, t)
    return state


def test_mask_shape_and_padding(calc_compiled) -> None:
    masker = gg.Masker(calc_compiled)
    words = masker.mask(masker.initial_state())
    v = calc_compiled.vocab.vocab_size
    assert words.dtype == np.int32 and words.shape == ((v + 31) // 32,)
    got = allowed(words)
    assert max(got) < len(CALC_TOKENS)  # padding ids never allowed
    assert 0 not in got and 1 not in got  # EOS (incomplete) and special token
    assert got == set(ids(b"1", b"2", b"12", b"(", b"x", b"y", b"xy", b"1+", b" ", b" (", b"x*", b"let"))


def test_eos_exactly_when_complete(calc_compiled) -> None:
    masker = gg.Masker(calc_compiled)
    state = walk(masker, [b"1+"])
    assert not masker.is_complete(state) and 0 not in allowed(masker.mask(state))
    state = masker.advance(state, ids(b"xy")[0])
    assert masker.is_complete(state) and 0 in allowed(masker.mask(state))
    done = masker.advance(state, 0)
    assert done.finished and allowed(masker.mask(done)) == set()
    with pytest.raises(gg.TokenRejectedError, match="already ended"):
        masker.advance(done, ids(b"+")[0])


def test_rejections_name_the_token(calc_compiled) -> None:
    masker = gg.Masker(calc_compiled)
    state = walk(masker, [b"1"])
    paren = ids(b"(")[0]
    with pytest.raises(gg.TokenRejectedError, match=rf"token {paren} b'\(' is not allowed.*expected one of") as err:
        masker.advance(state, paren)
    assert err.value.token_id == paren and err.value.token_bytes == b"("
    assert set(err.value.expected) == {"NUMBER", '"+"', '"-"', '"*"', "end of input"}
    with pytest.raises(gg.TokenRejectedError, match="EOS before the output is complete"):
        masker.advance(masker.advance(state, ids(b"+")[0]), 0)
    with pytest.raises(gg.TokenRejectedError, match="special"):
        masker.advance(state, 1)
    with pytest.raises(gg.TokenRejectedError, match="out of range"):
        masker.advance(state, 10_000)
    with pytest.raises(gg.TokenRejectedError, match="out of range"):
        masker.advance(state, -1)


def test_partial_character_is_refused_where_no_terminal_takes_it(calc_compiled) -> None:
    masker = gg.Masker(calc_compiled)
    state = masker.initial_state()
    assert ids(b"\xc3")[0] not in allowed(masker.mask(state))


def test_state_from_another_grammar_is_refused(calc_compiled, calc_vocab) -> None:
    other = gg.Masker(gg.compile(gg.Grammar(CALC), calc_vocab))
    with pytest.raises(gg.GreatGrammaError, match="does not belong"):
        gg.Masker(calc_compiled).mask(other.initial_state())


def test_old_states_stay_valid(calc_compiled) -> None:
    masker = gg.Masker(calc_compiled)
    a = walk(masker, [b"1"])
    before = masker.mask(a).copy()
    masker.advance(a, ids(b"+")[0])
    assert (masker.mask(a) == before).all()


def test_threads_give_the_serial_masks(calc_compiled) -> None:
    sequences = [[b"1", b"+", b"x"], [b"(", b"1", b"*", b"2", b")"], [b"xy", b" ", b"-", b" (", b"12", b")"]] * 3

    def run(masker, seq):
        state, out = masker.initial_state(), []
        for t in ids(*seq):
            out.append(masker.mask(state).tobytes())
            state = masker.advance(state, t)
        return out

    serial = [run(gg.Masker(calc_compiled), s) for s in sequences]
    shared = gg.Masker(calc_compiled)
    with ThreadPoolExecutor(8) as pool:
        parallel = list(pool.map(lambda s: run(shared, s), sequences))
    assert parallel == serial


def test_python_grammar_is_refused_until_postlexers_exist() -> None:
    grammar = gg.Grammar.from_file(grammar_path("python"))
    vocab = gg.Vocabulary.from_token_bytes([None, b"x"], eos_token_ids=[0])
    with pytest.raises(gg.GrammarError, match="_DEDENT, _INDENT are declared.*postlexer"):
        gg.compile(grammar, vocab)


def test_token_table_limit_is_a_clear_error(calc_vocab) -> None:
    with pytest.raises(gg.ResourceLimitError, match="token-level tables would hold up to .* raise max_token_table_entries"):
        gg.compile(gg.Grammar(CALC), calc_vocab, max_token_table_entries=3)


def test_compile_time_budget_is_a_clear_error(calc_vocab) -> None:
    grammar = gg.Grammar(CALC)
    with pytest.raises(gg.ResourceLimitError, match=r"took .* over max_seconds=0.0 \(stopped after the lalr stage\)"):
        gg.compile(grammar, calc_vocab, max_seconds=0.0)
    # inside the lexer DFA's construction (a deadline already past)
    with pytest.raises(gg.ResourceLimitError, match="budget ran out while building the DFA of terminal"):
        grammar.build_lexer(deadline=0.0)
    assert gg.compile(grammar, calc_vocab, max_seconds=60.0).lexer.num_states > 1  # within budget: compiles


def test_state_of_a_freed_grammar_is_refused_by_a_new_one(calc_vocab) -> None:
    """Regression: states carried id(compiled), which CPython reuses once the grammar is freed."""
    import gc

    for _ in range(20):
        old = gg.Masker(gg.compile(gg.Grammar(CALC), calc_vocab))
        state = old.advance(old.initial_state(), ids(b"(")[0])
        del old
        gc.collect()
        new = gg.Masker(gg.compile(gg.Grammar('start: "x"'), calc_vocab))
        with pytest.raises(gg.GreatGrammaError, match="does not belong"):
            new.mask(state)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(split_depth=-3), ValueError, "split_depth must be >= 1"),
        (dict(split_depth=0), ValueError, "split_depth must be >= 1"),
        (dict(split_depth=2.0), TypeError, "split_depth must be an int"),
        (dict(cache_size=0), ValueError, "cache_size must be >= 1"),
        (dict(cache_size="big"), TypeError, "cache_size must be an int"),
        (dict(cache_size=True), TypeError, "cache_size must be an int"),
    ],
)
def test_masker_options_are_checked(calc_compiled, kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        gg.Masker(calc_compiled, **kwargs)


def test_masker_needs_a_compiled_grammar() -> None:
    with pytest.raises(TypeError, match="Masker needs a CompiledGrammar.*got str"):
        gg.Masker("x")


def test_grammars_compiled_for_one_vocabulary_share_its_token_trie(calc_compiled) -> None:
    """The trie depends on the tokenizer only: built once per Vocabulary (issue 14)."""
    vocab = calc_compiled.vocab
    other = gg.compile(gg.Grammar('start: "a" | "b"'), vocab)
    assert other.trie is calc_compiled.trie
    same = gg.Vocabulary(list(vocab.token_bytes), eos_token_ids=vocab.eos_token_ids, vocab_size=vocab.vocab_size)
    assert gg.compile(gg.Grammar('start: "a"'), same).trie is other.trie  # an equal vocabulary
