"""Artifacts of every shipped grammar x real tokenizer: save -> load masks exactly like the compiled
grammar, and a lazily compiled grammar masks exactly like an eagerly compiled one.

For each cell the benchmark programs and seeded random walks are walked by a Masker of the
grammar compiled lazily (its token tables filled as the walks reach them) and one of the
artifact of the eagerly compiled grammar, loaded, together; masks (np.array_equal) and
is_complete must agree at every step. Go and Python lexers make extended (backing-up) states
while compiling, which the saved outcome rows name: the case issue 11 item 1 found broken.

All cells run by default; the 128K/151K ones are marked ``slow_vocab``, so a quick local run
can leave them out with ``-m "not slow_vocab"``. A Llama-2 cell also saves the grammar again
after walking it (lexer states met while masking are then in the file too). The programs are
the benchmark's, in eval/data/programs.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
from helpers import BENCH_GRAMMARS as GRAMMARS
from helpers import TOKENIZER_NAMES, allowed_ids, compile_shipped

import greatgramma as gg
from greatgramma.tokenize import encode_exact

RANDOM_WALKS = 10
MAX_STEPS = 40

pytestmark = pytest.mark.real_tokenizers


def _cells() -> list:
    """(grammar, tokenizer) pairs; the large vocabularies marked slow_vocab."""
    out = []
    for tokenizer in TOKENIZER_NAMES:
        marks = [] if tokenizer == "llama2" else [pytest.mark.slow_vocab]
        out += [pytest.param(g, tokenizer, marks=marks, id=f"{g}-{tokenizer}") for g in GRAMMARS]
    return out


def program_tokens(programs: list[Path], hf, vocab: gg.Vocabulary) -> dict[str, list[int]]:
    return {p.name: encode_exact(hf, p.read_text(encoding="utf-8"), vocab.token_bytes) for p in programs}


class PairedWalk:
    """Walks two maskers in step and asserts that they agree after every token."""

    def __init__(self, live: gg.Masker, loaded: gg.Masker, what: str):
        self.live, self.loaded, self.what = live, loaded, what
        self.states = (live.initial_state(), loaded.initial_state())
        self.steps = 0

    def mask(self) -> np.ndarray:
        """The live mask, after checking that the loaded one is identical (and is_complete too)."""
        a, b = self.live.mask(self.states[0]), self.loaded.mask(self.states[1])
        where = f"{self.what}, step {self.steps}"
        assert np.array_equal(a, b), f"{where}: masks differ at {np.nonzero(a != b)[0][:5]} (words)"
        assert self.live.is_complete(self.states[0]) == self.loaded.is_complete(self.states[1]), where
        return a

    def advance(self, token: int) -> None:
        self.states = (self.live.advance(self.states[0], token), self.loaded.advance(self.states[1], token))
        self.steps += 1


def walk_program(live: gg.Masker, loaded: gg.Masker, what: str, tokens: list[int]) -> None:
    walk = PairedWalk(live, loaded, what)
    for tok in tokens:
        walk.mask()
        walk.advance(tok)
    assert allowed_ids(walk.mask()).size, f"{what}: nothing allowed at the end"


def random_walk(live: gg.Masker, loaded: gg.Masker, what: str, rng: np.random.Generator, eos: set[int]) -> None:
    """Random allowed tokens (EOS now and then, when allowed) until EOS or MAX_STEPS."""
    walk = PairedWalk(live, loaded, what)
    for _ in range(MAX_STEPS):
        ids = allowed_ids(walk.mask())
        assert ids.size, f"{what}: empty mask after {walk.steps} steps"
        ends = [t for t in ids.tolist() if t in eos]
        if ends and rng.random() < 0.1:
            walk.advance(ends[0])
            walk.mask()
            return
        others = ids[~np.isin(ids, list(eos))]
        walk.advance(int(rng.choice(others if others.size else ids)))
    walk.mask()


@pytest.mark.parametrize("grammar,tokenizer", _cells())
def test_loaded_artifact_masks_like_the_compiled_grammar(
    grammar: str, tokenizer: str, tmp_path: Path, vocabularies, hf_tokenizers, bench_programs
) -> None:
    paths = bench_programs(grammar)
    compiled = compile_shipped(grammar, vocabularies(tokenizer))  # lazy
    eager = compile_shipped(grammar, vocabularies(tokenizer), eager=True)
    path = tmp_path / f"{grammar}-{tokenizer}.gg"
    eager.save(path)
    loaded = gg.load(path)
    assert loaded.summary() == eager.summary()
    assert loaded.lexer.extended_keys() == eager.lexer.extended_keys()
    live, cold = gg.Masker(compiled), gg.Masker(loaded)
    programs = program_tokens(paths, hf_tokenizers(tokenizer), compiled.vocab)
    for name, tokens in programs.items():
        walk_program(live, cold, f"{grammar} x {tokenizer}, {name}", tokens)
    rng = np.random.default_rng(zlib.crc32(f"{grammar}-{tokenizer}".encode()))
    for i in range(RANDOM_WALKS):
        random_walk(live, cold, f"{grammar} x {tokenizer}, random walk {i}", rng, set(compiled.vocab.eos_token_ids))
    if tokenizer != "llama2":
        return
    # the lazy grammar saved after use (the tables its walks filled) and loaded again
    used = tmp_path / "used.gg"
    compiled.save(used)
    again = gg.Masker(gg.load(used, verify=True))
    name, tokens = next(iter(programs.items()))
    walk_program(gg.Masker(compiled), again, f"{grammar} x {tokenizer}, {name} (saved after use)", tokens)
