"""Lexer views copied from a cached view whose DFA state agrees on most first bytes, then patched
on the others (``LexerViews._patched_view``), equal views assembled from the blocks alone: code
for code, and mask for mask."""

from __future__ import annotations

import json

import numpy as np
import pytest

import greatgramma as gg
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
