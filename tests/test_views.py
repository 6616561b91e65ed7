"""Lexer views copied from a cached view whose DFA state agrees on most first bytes, then patched
on the others (``LexerViews._patched_view``), equal views assembled from the blocks alone: code
for code, and mask for mask."""

from __future__ import annotations

import json

import numpy as np
import pytest

import greatgramma as gg
from greatgramma.codes import DEAD
from greatgramma.tokenize import encode_exact
from greatgramma.views import LexerViews

pytestmark = pytest.mark.real_tokenizers

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "nickname": {"type": "string"},
        "note": {"type": "string", "maxLength": 40},
        "count": {"type": "integer"},
        "tags": {"type": "array", "items": {"enum": ["alpha", "beta", "gamma"]}},
    },
    "required": ["name"],
}
INSTANCES = [
    {"name": "Ada", "nickname": "the countess", "note": "first program", "count": 1815, "tags": ["alpha"]},
    {"name": "Grace Hopper", "note": "COBOL, and the \"bug\"", "tags": ["beta", "gamma", "alpha"]},
    {"name": "", "nickname": "nn", "count": -3},
]


def test_patched_views_give_the_masks_of_assembled_views(vocabularies, hf_tokenizers, monkeypatch) -> None:
    vocab, tok = vocabularies("llama3"), hf_tokenizers("llama3")
    compiled = gg.compile(gg.Grammar.from_json_schema(SCHEMA), vocab)
    walks = [encode_exact(tok, json.dumps(doc), vocab.token_bytes) for doc in INSTANCES]
    patched = []
    real = LexerViews._patched_view

    def counted(self, *args):
        patched.append(1)
        return real(self, *args)

    got, views = [], []
    for near in (True, False):
        monkeypatch.setattr(LexerViews, "_patched_view", counted)
        if not near:
            monkeypatch.setattr(LexerViews, "_nearest", lambda self, source: None)
        masker, masks = gg.Masker(compiled), []
        for ids in walks:
            state = masker.initial_state()
            for t in ids:
                masks.append(masker.mask(state))
                state = masker.advance(state, t)
            masks.append(masker.mask(state))
            assert masker.is_complete(state)
        got.append(masks)
        views.append({x: masker._views.view(x) for x in list(masker._views.caches()["views"])})
        if near:
            assert patched, "no view was patched from a nearby one: the test walks nothing it checks"
    assert len(got[0]) == len(got[1])
    for i, (a, b) in enumerate(zip(*got)):
        assert np.array_equal(a, b), i
    assert views[0].keys() == views[1].keys()
    for x, a in views[0].items():
        b = views[1][x]
        assert np.array_equal(a.code, b.code), x
        assert (a.firsts, a.end_groups) == (b.firsts, b.end_groups), x


def test_strings_that_go_on_as_from_the_start_state_need_no_walk(vocabularies, hf_tokenizers, monkeypatch) -> None:
    """Where a DFA state goes on a first byte where the start state goes (whitespace after
    whitespace, a digit after digits), and its strings cannot back up to before the byte, they are
    read off their suffix rows at offset 0, as from the start state: no block is walked for them,
    and the masks are those of the walked blocks (along instances written with indents, and
    random walks among the allowed tokens)."""
    import random

    vocab, tok = vocabularies("llama3"), hf_tokenizers("llama3")
    compiled = gg.compile(gg.Grammar.from_json_schema(SCHEMA), vocab)
    walks = [encode_exact(tok, json.dumps(doc, indent=2), vocab.token_bytes) for doc in INSTANCES]
    lexer = compiled.lexer
    ws = [q for q in range(1, lexer.num_states) if lexer.delta[q][ord(" ")] == q == lexer.delta[0][ord(" ")]]
    assert ws, "no whitespace state that the start state enters on a space: the test checks nothing"

    def masks_along(masker, rng):
        out = []
        for ids in walks + [None] * 4:
            state = masker.initial_state()
            for step in range(len(ids) if ids else 60):
                words = masker.mask(state)
                out.append(words)
                if ids:
                    t = ids[step]
                else:
                    allowed = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")[: vocab.vocab_size])
                    spaced = [t for t in allowed.tolist() if vocab.token_bytes[t][:1] in (b" ", b"\n")]
                    if not len(allowed):
                        break
                    t = rng.choice(spaced if spaced and rng.random() < 0.7 else allowed.tolist())
                    if t in masker.compiled.vocab.eos_token_ids:
                        break
                state = masker.advance(state, t)
            out.append(masker.mask(state))
        return out

    one = ord("1")
    digits = lexer.delta[0][one]  # inside an integer: it may die on "1.x", but nothing is accepted before a digit
    assert lexer.delta[digits][one] == digits and lexer.risky[digits] and lexer.accept_next[digits][one] == DEAD
    fast = gg.Masker(compiled)
    got = masks_along(fast, random.Random(0))
    assert not any((ord(" "), q) in fast._views._blocks for q in ws), "a whitespace block was walked"
    assert digits in fast._views.caches()["views"] and (one, digits) not in fast._views._blocks, "a digit block was walked"
    monkeypatch.setattr(LexerViews, "_as_from_start", lambda self, *row: np.zeros(256, dtype=bool))
    walked = gg.Masker(gg.compile(gg.Grammar.from_json_schema(SCHEMA), vocab))
    expected = masks_along(walked, random.Random(0))
    assert any((ord(" "), q) in walked._views._blocks for q in ws)
    assert len(got) == len(expected)
    for i, (a, b) in enumerate(zip(got, expected)):
        assert np.array_equal(a, b), i
