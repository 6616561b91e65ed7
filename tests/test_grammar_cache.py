"""GrammarCache: one compile per key shared by threads, the bound, the artifact directory, worker
processes, compile timeouts and cancellation, and errors for bad input."""

from __future__ import annotations

import pickle
import threading
import time
from concurrent.futures import CancelledError

import numpy as np
import pytest
from helpers import CALC, CALC_TOKENS

import greatgramma as gg
from greatgramma.serving import CompileTimeoutError, GrammarCache, GrammarSpec

SMALL = 'start: "a" "b"+\n'
# Lexer DFAs of 2^(n+1) states, slow to compile: the lookahead keeps their subset construction in
# the Python loop (3.7 s at n=14, 0.7 s at n=12 here; the compiled loop takes 0.5 s at n=14).
SLOW = 'start: A\nA: /(a|b)*a(a|b){14}(?!c)/\n'
SLOWISH = 'start: A\nA: /(a|b)*a(a|b){12}(?!c)/\n'
SLOWISH_TOO = 'start: A\nA: /(a|b)*b(a|b){12}(?!c)/\n'  # a pattern of its own: regex DFAs are kept by pattern


@pytest.fixture(scope="module")
def vocab() -> gg.Vocabulary:
    return gg.Vocabulary.from_token_bytes(CALC_TOKENS + [b"a", b"b", b"ab"], eos_token_ids=[0])


def masks_of(compiled: gg.CompiledGrammar, tokens: list[int]) -> list[np.ndarray]:
    masker = gg.Masker(compiled)
    state, out = masker.initial_state(), []
    for t in tokens:
        out.append(masker.mask(state))
        state = masker.advance(state, t)
    return out + [masker.mask(state)]


def wait_until(check, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_threads_share_one_compile(vocab) -> None:
    with GrammarCache(vocab) as cache:
        futures: list = []
        threads = [threading.Thread(target=lambda: futures.append(cache.get_async(CALC))) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = {id(f.result(timeout=30)) for f in futures}
        assert len(got) == 1 and cache.stats["compiled"] == 1 and cache.stats["misses"] == 1
        assert cache.get(gg.Grammar(CALC)) is futures[0].result()  # a Grammar has the same key as its text
        assert CALC in cache and len(cache) == 1


def test_a_grammar_given_is_compiled_as_it_is(vocab) -> None:
    """Lark ran when the Grammar was made: a thread compile uses it; a worker gets the text only."""
    grammar = gg.Grammar(CALC, source="calc.lark")
    with GrammarCache(vocab) as cache:
        assert cache.get(grammar).grammar is grammar
    spec = GrammarSpec.of(grammar)
    sent = pickle.loads(pickle.dumps(spec))
    assert sent == spec and sent.built is None and sent.grammar() is not grammar and sent.grammar().text == CALC


def test_key_covers_grammar_vocab_and_options(vocab) -> None:
    other = gg.Vocabulary.from_token_bytes(CALC_TOKENS, eos_token_ids=[0])
    with GrammarCache(vocab) as a, GrammarCache(other) as b, GrammarCache(vocab, compile_options={"max_dfa_states": 999}) as c:
        assert a.key(CALC) == a.key(gg.Grammar(CALC)) == a.key(GrammarSpec(CALC))
        assert len({a.key(CALC), a.key(CALC, start="expr"), a.key(CALC + " "), b.key(CALC), c.key(CALC)}) == 5
        assert a.key(CALC, indenter=gg.Indenter.python()) != a.key(CALC)


def test_bounded_least_recently_used_first_out(vocab) -> None:
    grammars = [f'start: "{c}"\n' for c in "abc"]
    with GrammarCache(vocab, max_entries=2) as cache:
        cache.get(grammars[0])
        cache.get(grammars[1])
        cache.get(grammars[0])  # now the most recent
        cache.get(grammars[2])
        assert grammars[0] in cache and grammars[2] in cache and grammars[1] not in cache
        assert len(cache) == 2


def test_directory_of_artifacts(vocab, tmp_path) -> None:
    with GrammarCache(vocab, directory=tmp_path) as cache:
        first = cache.get(CALC)
    files = list(tmp_path.glob("*.gg"))
    assert len(files) == 1
    with GrammarCache(vocab, directory=tmp_path) as cache:
        again = cache.get(CALC)
        assert cache.stats == {**cache.stats, "loaded": 1, "compiled": 0}
    walk = [CALC_TOKENS.index(p) for p in (b"(", b"1", b"+", b"xy", b")")]
    assert all((x == y).all() for x, y in zip(masks_of(first, walk), masks_of(again, walk)))
    files[0].write_bytes(b"damaged")
    with GrammarCache(vocab, directory=tmp_path) as cache:
        cache.get(CALC)
        assert cache.stats["compiled"] == 1  # a file that does not load is compiled again


def test_bad_grammar_fails_the_future_and_is_not_cached(vocab) -> None:
    with GrammarCache(vocab) as cache:
        future = cache.get_async("start: undefined_rule\n")
        with pytest.raises(gg.GrammarError):
            future.result(timeout=30)
        assert "start: undefined_rule\n" not in cache and cache.stats["failed"] == 1


def test_bad_arguments(vocab) -> None:
    with pytest.raises(TypeError, match="Vocabulary"):
        GrammarCache("vocab")  # type: ignore[arg-type]
    for bad in ({"max_entries": 0}, {"workers": -1}, {"compile_timeout": 0}):
        with pytest.raises(ValueError):
            GrammarCache(vocab, **bad)
    with pytest.raises(TypeError, match="unknown compile option"):
        GrammarCache(vocab, compile_options={"fast": True})
    with GrammarCache(vocab) as cache:
        with pytest.raises(TypeError, match="given twice"):
            cache.get_async(gg.Grammar(CALC), start="expr")
        with pytest.raises(TypeError, match="a grammar is"):
            cache.get_async(42)  # type: ignore[arg-type]
    with pytest.raises(gg.GreatGrammaError, match="closed"):
        cache.get_async(CALC)


def test_thread_compile_timeout_names_the_grammar(vocab) -> None:
    with GrammarCache(vocab, compile_timeout=0.2) as cache:
        with pytest.raises(CompileTimeoutError, match=r"A: /\(a\|b\)") as err:
            cache.get(SLOWISH, timeout=30)
        assert isinstance(err.value, TimeoutError) and cache.stats["timeouts"] == 1


def test_get_timeout_withdraws_the_caller(vocab) -> None:
    with GrammarCache(vocab) as cache:
        with pytest.raises(CompileTimeoutError, match="not ready within 0.05 s"):
            cache.get(SLOWISH_TOO, timeout=0.05)
        assert wait_until(lambda: cache.stats["cancelled"] == 1)  # no one else waited: dropped


def test_worker_process_compile_timeout_and_cancel(vocab, tmp_path) -> None:
    """One worker: a compile in it gives the same masks; a compile past its timeout kills the
    process; cancelling the last waiter kills it too; a new compile starts a fresh one."""
    with GrammarCache(vocab, workers=1, compile_timeout=2.0) as cache:
        walk = [CALC_TOKENS.index(p) for p in (b"(", b"1", b"+", b"xy", b")")]
        here = gg.compile(gg.Grammar(CALC), vocab)
        there = cache.get(CALC, timeout=60)
        assert all((x == y).all() for x, y in zip(masks_of(here, walk), masks_of(there, walk)))
        slot = cache._all_slots[0]
        first_pid = slot._proc.pid

        with pytest.raises(CompileTimeoutError, match="did not compile within 2.0 s"):
            cache.get(SLOW, timeout=60)
        assert slot._proc is None  # killed

        keep, drop = cache.get_async(SLOW), cache.get_async(SLOW)
        assert wait_until(lambda: slot._proc is not None and slot._proc.is_alive())
        drop.cancel()
        time.sleep(0.3)
        assert not keep.done() and slot._proc is not None  # another caller still waits
        keep.cancel()
        assert wait_until(lambda: slot._proc is None)
        assert wait_until(lambda: cache.stats["cancelled"] == 1)
        with pytest.raises(CancelledError):
            keep.result()

        assert cache.get(SMALL, timeout=60) is not None  # a fresh worker
        assert slot._proc.pid != first_pid
