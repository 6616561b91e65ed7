"""Grammars with no terminals (``start:``, ``start: e`` / ``e:``): their only output is the empty string.

Such a grammar compiles; its mask allows only EOS at the start and nothing after EOS.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import CALC_TOKENS

import greatgramma as gg

EMPTY_LANGUAGES = ["start:\n", "start: e\ne:\n", "start: e\ne: f\nf:\n"]


def allowed(words: np.ndarray) -> list[int]:
    return np.nonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))[0].tolist()


@pytest.mark.parametrize("text", EMPTY_LANGUAGES)
def test_only_eos_is_allowed(text: str, calc_vocab, tmp_path) -> None:
    compiled = gg.compile(gg.Grammar(text), calc_vocab)
    assert compiled.summary()["terminals"] == 0
    path = tmp_path / "empty.ggc"
    compiled.save(path)
    for c in (compiled, gg.load(path)):
        masker = gg.Masker(c)
        start = masker.initial_state()
        assert allowed(masker.mask(start)) == [0], "only EOS (id 0) may follow the empty prefix"
        assert masker.is_complete(start)
        done = masker.advance(start, 0)
        assert allowed(masker.mask(done)) == [] and not masker.is_complete(done)
        for tok in range(1, len(CALC_TOKENS)):
            with pytest.raises(gg.TokenRejectedError):
                masker.advance(start, tok)


def test_matcher_on_the_empty_language(calc_vocab) -> None:
    matcher = gg.Matcher(gg.compile(gg.Grammar("start: e\ne:\n"), calc_vocab))
    assert not matcher.accept_token(CALC_TOKENS.index(b"1"))
    assert matcher.accept_token(0) and matcher.is_terminated()
