"""Token tables filled on first use (``gg.compile``'s default) by threads sharing one compiled
grammar give the masks of the eagerly compiled grammar, bit for bit; saving meanwhile gives
well-formed artifacts."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from helpers import compile_shipped

import greatgramma as gg
from greatgramma import native
from greatgramma.codes import UNKNOWN
from greatgramma.tokenize import encode_exact

pytestmark = pytest.mark.real_tokenizers


def masks_along(masker: gg.Masker, tokens: list[int]) -> list[np.ndarray]:
    state, out = masker.initial_state(), []
    for tok in tokens:
        out.append(masker.mask(state))
        state = masker.advance(state, tok)
    out.append(masker.mask(state))
    return out


@pytest.mark.parametrize("grammar", ["json", "go", "python"])
def test_threads_filling_one_lazy_grammar_get_the_eager_masks(grammar, vocabularies, hf_tokenizers, bench_programs, tmp_path) -> None:
    vocab = vocabularies("llama2")
    hf = hf_tokenizers("llama2")
    walks = [encode_exact(hf, p.read_text(encoding="utf-8"), vocab.token_bytes)[:400] for p in bench_programs(grammar)]
    lazy = compile_shipped(grammar, vocab)
    at_compile = lazy.subtrees.num_walked  # only the subtrees that looping states enter (blocks.fill_loops)
    assert at_compile < lazy.subtrees.walk_all(walk=False) and lazy.transducer.num_computed < len(lazy.transducer.suffix)
    shared, own = gg.Masker(lazy), [gg.Masker(lazy) for _ in walks]
    jobs = [(shared, w) for w in walks] + list(zip(own, walks))  # one masker per thread, and one for all
    saved = []

    def save_meanwhile() -> None:  # a save takes one consistent snapshot while the rows grow
        for k in range(4):
            saved.append(tmp_path / f"{grammar}-{k}.gg")
            lazy.save(saved[-1])

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: interleave the fills
    try:
        with ThreadPoolExecutor(len(jobs) + 1) as pool:
            saving = pool.submit(save_meanwhile)
            got = list(pool.map(lambda job: masks_along(*job), jobs))
            saving.result()
    finally:
        sys.setswitchinterval(interval)
    for path in saved:  # each snapshot is a well-formed artifact whose rows mean what the grammar's do
        gg.load(path, vocab=vocab, verify=True)
    eager = gg.Masker(compile_shipped(grammar, vocab, eager=True))
    for (_, walk), masks in zip(jobs, got):
        for step, (a, b) in enumerate(zip(masks, masks_along(eager, walk))):
            assert np.array_equal(a, b), f"{grammar}: step {step}: lazy and eager masks differ"
    assert 0 < lazy.transducer.num_computed < len(lazy.transducer.suffix)  # filled, but only in part
    assert lazy.subtrees.num_walked > at_compile  # the threads walked the rest they met


def test_compiling_resolves_the_held_blocks_that_looping_states_enter(vocabularies) -> None:
    """Inside a JSON string every subtree is held (a control character kills the lexeme, which
    could back up where a fallback was held): compiling resolves them for the looping state that
    enters them, so no first mask inside a string resolves the whole vocabulary's walks again."""
    from greatgramma.blocks import MIN_LOOP

    compiled = gg.compile(gg.Grammar.from_json_schema({"type": "object", "additionalProperties": {"type": "string"}}),
                          vocabularies("llama2"))
    lexer, blocks = compiled.lexer, compiled.blocks
    loops = [q for q in range(1, lexer.num_states) if (lexer.delta[q] == q).sum() >= MIN_LOOP]
    assert loops
    held = resolved = 0
    for q in loops:
        for b in np.flatnonzero(lexer.delta[q] != -1).tolist():
            key = (b, int(lexer.delta[q, b]))
            if key in blocks and blocks[key].code is None:
                held += 1
                resolved += (*key, int(lexer.accept_next[q, b])) in blocks
    assert held and resolved == held


@pytest.mark.parametrize("grammar", ["json", "python"])
def test_walks_dropped_past_their_budget_are_walked_again(grammar, vocabularies, hf_tokenizers, bench_programs, monkeypatch) -> None:
    """A lazily filled grammar keeps a bounded share of its subtree walks (each a function of its
    key): with room for none, every walk is dropped as the next goes in, and the masks are still
    the eager grammar's, bit for bit (with the indenter, the walks specialised per column)."""
    import greatgramma.compiled

    vocab, hf = vocabularies("llama2"), hf_tokenizers("llama2")
    walks = [encode_exact(hf, p.read_text(encoding="utf-8"), vocab.token_bytes)[:300] for p in bench_programs(grammar)[:2]]
    monkeypatch.setattr(greatgramma.compiled, "WALK_BUDGET", 1)
    lazy = compile_shipped(grammar, vocab)
    eager = gg.Masker(compile_shipped(grammar, vocab, eager=True))
    for walk in walks:
        for step, (a, b) in enumerate(zip(masks_along(gg.Masker(lazy), walk), masks_along(eager, walk))):
            assert np.array_equal(a, b), f"{grammar}: step {step}: masks differ with the walks dropped"
    assert len(lazy.subtrees._subtrees) <= 1  # (none kept but the last)


@pytest.mark.skipif(native.ext is None, reason="the race is between the compiled intern loop and its readers")
def test_rows_read_while_another_thread_interns_them_are_settled_before_use(monkeypatch) -> None:
    """Interning writes the new row ids into the suffix table (read without a lock) before it
    appends the rows: a reader that meets such an id must not use the rows hung without it (a
    mask would block its tokens) nor unpack it half-appended. Here the interning thread is held
    in that window, deterministically."""
    import threading

    vocab = gg.Vocabulary([None, b"ab", b"a b", b'"x', b'"a b" ', b"12", b"1 2"], eos_token_ids=[0])
    compiled = gg.compile(gg.Grammar('start: (WORD | STR | NUM)+\nWORD: /[a-z]+/\nSTR: /"[a-z ]*"/\nNUM: /[0-9]+/\n%ignore " "'), vocab)
    tr, trie = compiled.transducer, compiled.trie
    flat = np.flatnonzero(tr.suffix == UNKNOWN)
    assert len(flat), "the tables are filled lazily: some suffix rows are left to compute"
    written, release = threading.Event(), threading.Event()
    intern = native.intern_rows

    def held_in_the_window(*args):
        out = intern(*args)
        written.set()
        assert release.wait(10)
        return out

    monkeypatch.setattr(native, "intern_rows", held_in_the_window)
    interning = threading.Thread(target=tr.rows_at, args=(flat,))
    interning.start()
    assert written.wait(10)
    ids = tr.suffix[flat]
    assert ids.max() >= len(tr.outcomes), "the window is real: ids written, rows not appended yet"
    seen: list = []
    reader = threading.Thread(target=lambda: seen.append((tr.rows_at(flat), compiled.sequences.sync())))
    reader.start()
    reader.join(0.2)
    assert reader.is_alive(), "the reader waits for the rows it read to be appended"
    release.set()
    interning.join()
    reader.join()
    rows, hung = seen[0]
    assert hung > rows.max() and all(tr.outcomes.unpack(int(r)) for r in rows[rows >= 0])
