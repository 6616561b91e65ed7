"""Real tokenizers x benchmark grammars: every program token allowed, random walks never stuck, outputs parse.

The programs are the benchmark's, in eval/data/programs.
"""

from __future__ import annotations

import zlib

import lark
import numpy as np
import pytest
from helpers import TOKENIZER_NAMES as TOKENIZERS
from helpers import allowed_ids, compile_shipped, grammar_text

import greatgramma as gg
from greatgramma.tokenize import encode_exact

LANGUAGES = {"go": "go", "java": "java", "json": "json"}
WALKS = 50
MAX_STEPS = 120
CLOSERS = [b'"', b")", b"]", b"}", b";", b"\n", b"*/", b"'", b"`", b"0", b" 0", b"1"]

pytestmark = pytest.mark.real_tokenizers

_compiled: dict[tuple[str, gg.Vocabulary], gg.CompiledGrammar] = {}


def compiled_for(grammar: str, vocab: gg.Vocabulary) -> gg.CompiledGrammar:
    key = (grammar, vocab)
    if key not in _compiled:
        _compiled.clear()  # keep one cell in memory at a time
        _compiled[key] = compile_shipped(grammar, vocab)
    return _compiled[key]


CELLS = [(g, t) for g in LANGUAGES for t in TOKENIZERS]


@pytest.mark.parametrize("grammar,tokenizer", CELLS)
def test_programs_walk_cleanly(grammar: str, tokenizer: str, vocabularies, hf_tokenizers, bench_programs) -> None:
    programs = bench_programs(LANGUAGES[grammar])
    compiled = compiled_for(grammar, vocabularies(tokenizer))
    vocab = compiled.vocab
    masker = gg.Masker(compiled)
    hf = hf_tokenizers(tokenizer)
    for program in programs:
        ids = encode_exact(hf, program.read_text(encoding="utf-8"), vocab.token_bytes)
        state = masker.initial_state()
        for i, tok in enumerate(ids):
            words = masker.mask(state).view(np.uint32)
            assert words[tok >> 5] >> (tok & 31) & 1, f"{program.name}: token #{i} {vocab.token_bytes[tok]!r} blocked"
            state = masker.advance(state, tok)
        words = masker.mask(state).view(np.uint32)
        for eos in vocab.eos_token_ids:
            assert words[eos >> 5] >> (eos & 31) & 1, f"{program.name}: EOS blocked at the end"


@pytest.mark.parametrize("grammar,tokenizer", CELLS)
def test_random_walks(grammar: str, tokenizer: str, vocabularies) -> None:
    compiled = compiled_for(grammar, vocabularies(tokenizer))
    vocab = compiled.vocab
    eos = set(vocab.eos_token_ids)
    masker = gg.Masker(compiled)
    parser = lark.Lark(grammar_text(grammar), parser="lalr", lexer="basic")
    closers = np.array([i for i, tb in enumerate(vocab.token_bytes) if tb in CLOSERS], dtype=np.int64)
    eos_ids = np.array(sorted(eos), dtype=np.int64)
    rng = np.random.default_rng(zlib.crc32(f"{grammar}-{tokenizer}".encode()))
    finished = 0
    for walk in range(WALKS):
        state, out = masker.initial_state(), b""
        for step in range(MAX_STEPS):
            ids = allowed_ids(masker.mask(state))
            assert len(ids), f"walk {walk}: empty mask after {out!r}"
            ending = step > MAX_STEPS // 2
            if np.isin(eos_ids, ids).any() and (ending or rng.random() < 0.2):
                state = masker.advance(state, int(eos_ids[np.isin(eos_ids, ids)][0]))
                break
            options = ids[np.isin(ids, closers)] if ending else ids[:0]
            if not len(options):  # steer towards an end with closing tokens late in the walk
                options = ids[~np.isin(ids, eos_ids)]
            pick = int(rng.choice(options))
            state = masker.advance(state, pick)
            out += vocab.token_bytes[pick]
        if state.finished:
            finished += 1
            parser.parse(out.decode("utf-8"))  # raises if Lark rejects a completed output
    print(f"{grammar} x {tokenizer}: {finished}/{WALKS} walks ended with EOS")
    assert finished > 0, "no walk reached EOS"
