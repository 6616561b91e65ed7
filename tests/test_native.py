"""The compiled maximal-munch loops (greatgramma/_native.c) against the numpy loops they stand in
for, on real vocabularies: the same subtree walks, the same suffix rows, the same masks.
(tests/test_transducer.py checks both against byte-by-byte lexing on small vocabularies.)"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from helpers import BENCH, GRAMMARS

import greatgramma as gg
from greatgramma import native
from greatgramma.codes import DEAD, END_LA
from greatgramma.subtrees import SubtreeWalks
from greatgramma.transducer import TokenTransducer

pytestmark = pytest.mark.skipif(
    native.ext is None, reason="greatgramma._native is not built (no C compiler at install) or GG_NATIVE=0"
)

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 12},
        "n": {"type": "integer", "minimum": -5, "maximum": 300},
        "x": {"type": "number"},
        "tag": {"enum": ["a", "ab", "abc", "true"]},
    },
    "required": ["name"],
}


def _grammar(name: str) -> gg.Grammar:
    if name == "schema":
        return gg.Grammar.from_json_schema(SCHEMA)
    if name == "python":  # with the indenter: the walks carry columns
        return gg.Grammar.from_file(GRAMMARS / "python.lark", indenter=gg.Indenter.python())
    return gg.Grammar.from_file(BENCH / f"{name}.lark")


def _sorted(walk: tuple) -> dict[str, np.ndarray]:
    """A subtree's results by string; the fallback fields only where they mean something (END_LA)."""
    fields = dict(zip(walk._fields, walk))
    order = np.argsort(fields["strings"], kind="stable")
    out = {k: v[order] for k, v in fields.items() if k != "origin"}
    if "la_off" in out:
        inside = out["kind"] == END_LA
        for k in ("la_off", "la_term", "la_where"):
            out[k] = np.where(inside, out[k], 0)
    return out


@pytest.mark.parametrize("name", ["schema", "json", "go", "python"])
def test_walks_and_suffix_rows_agree(name: str, vocabularies, monkeypatch) -> None:
    """Every subtree any lexer state enters, walked by both loops on one transducer (so rows and
    extended states carry the same ids), and the suffix rows at every token byte position (as
    the terminals and end state each names: the loops intern rows in different orders)."""
    compiled = gg.compile(_grammar(name), vocabularies("llama2"))
    tr = compiled.transducer
    compiled_loops = native.ext
    tables = []
    for loops in (None, compiled_loops):
        monkeypatch.setattr(native, "ext", loops)
        walks = SubtreeWalks(tr)
        walks.walk_all()
        tables.append(walks._subtrees if compiled.lexer.columns is None else walks._base_subtrees)
    assert tables[0].keys() == tables[1].keys() and tables[0]
    for key, walk in tables[0].items():
        a, b = _sorted(walk), _sorted(tables[1][key])
        for field in a:
            assert np.array_equal(a[field], b[field]), (key, field)
    rows = []
    for loops in (None, compiled_loops):  # every suffix row, on transducers of their own
        monkeypatch.setattr(native, "ext", loops)
        fresh = TokenTransducer(compiled.lexer, tr.trie)
        fresh.fill()
        unpack = fresh.outcomes.unpack
        rows.append([None if r == DEAD else unpack(r) for r in fresh.suffix.tolist()])
    assert rows[0] == rows[1]


def test_masks_agree(vocabularies, hf_tokenizers, monkeypatch) -> None:
    """A schema compiled afresh under each loop gives the same masks along an instance."""
    from greatgramma.tokenize import encode_exact

    vocab = vocabularies("llama3")
    text = '{"name": "Ada Lovelace", "n": 299, "x": -1.5e3, "tag": "ab"}'
    ids = encode_exact(hf_tokenizers("llama3"), text, vocab.token_bytes)
    digests = []
    for loops in (None, native.ext):
        monkeypatch.setattr(native, "ext", loops)
        masker = gg.Masker(gg.compile(gg.Grammar.from_json_schema(SCHEMA), vocab))
        state, digest = masker.initial_state(), hashlib.sha256()
        for t in ids:
            digest.update(masker.mask(state).tobytes())
            state = masker.advance(state, t)
        assert masker.is_complete(state)
        digests.append(digest.hexdigest())
    assert digests[0] == digests[1]


def test_bad_arguments_are_refused() -> None:
    """Ranges outside the strings and arrays of the wrong item size raise, before any loop runs."""
    trie = gg.compile(gg.Grammar('start: "a"'), gg.Vocabulary([None, b"a", b"ab"], eos_token_ids=[0])).trie
    dfa = native.DFAArrays.of(np.full((2, 256), -1), np.full((2, 256), -1), np.zeros(2, bool))
    one = np.array([0])
    with pytest.raises(ValueError, match="outside"):
        native.walk(dfa, trie.flat_bytes, trie.offsets, trie.common_prefix, one, np.array([5]), one, one, 0)
    with pytest.raises(ValueError, match="outside"):
        native.suffix_lexemes(dfa, trie.flat_bytes, trie.position_end, np.zeros(len(trie.flat_bytes), np.int32),
                              np.array([99]))
    with pytest.raises(TypeError, match="lcp"):
        native.walk(dfa, trie.flat_bytes, trie.offsets, trie.offsets, one, one, one, one, 0)
