"""Compiled artifacts: round trip, and clear errors for damaged or mismatched files."""

from __future__ import annotations

import hashlib
import json
import os
import re

import numpy as np
import pytest
from helpers import CALC, CALC_TOKENS

import greatgramma as gg


def masks_along(compiled, tokens):
    masker = gg.Masker(compiled)
    state, out = masker.initial_state(), []
    for t in tokens:
        out.append(masker.mask(state))
        state = masker.advance(state, t)
    return out


def test_round_trip(tmp_path, calc_compiled, calc_vocab) -> None:
    path = tmp_path / "calc.ggc"
    calc_compiled.save(path)
    loaded = gg.load(path, grammar=gg.Grammar(CALC), vocab=calc_vocab)
    plain = gg.load(path)
    assert plain.vocab == calc_vocab
    seq = [CALC_TOKENS.index(b) for b in (b"(", b"1+", b"x", b")", b"*", b"12")]
    for a, b, c in zip(masks_along(calc_compiled, seq), masks_along(loaded, seq), masks_along(plain, seq)):
        assert np.array_equal(a, b) and np.array_equal(a, c)


def test_corruption_and_truncation(tmp_path, calc_compiled) -> None:
    path = tmp_path / "calc.ggc"
    calc_compiled.save(path)
    raw = bytearray(path.read_bytes())
    raw[-100] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(gg.ArtifactError, match="corrupted"):
        gg.load(path)
    calc_compiled.save(path)
    path.write_bytes(path.read_bytes()[:-500])
    with pytest.raises(gg.ArtifactError, match="corrupted"):
        gg.load(path)
    path.write_bytes(b"not an artifact")
    with pytest.raises(gg.ArtifactError, match="not a greatgramma compiled grammar"):
        gg.load(path)
    with pytest.raises(gg.ArtifactError, match="cannot read"):
        gg.load(tmp_path / "missing.ggc")


def test_other_format_version(tmp_path, calc_compiled) -> None:
    path = tmp_path / "calc.ggc"
    calc_compiled.save(path)
    header, _, payload = path.read_bytes().partition(b"\n")
    meta = json.loads(header)
    meta["format"] = 999
    path.write_bytes(json.dumps(meta).encode() + b"\n" + payload)
    with pytest.raises(gg.ArtifactError, match="format 999"):
        gg.load(path)


def test_mismatched_inputs(tmp_path, calc_compiled, calc_vocab) -> None:
    path = tmp_path / "calc.ggc"
    calc_compiled.save(path)
    with pytest.raises(gg.ArtifactError, match="another grammar"):
        gg.load(path, grammar=gg.Grammar(CALC + "\n%ignore /\\t/\n"))
    other = gg.Vocabulary.from_token_bytes(CALC_TOKENS, eos_token_ids=[0], vocab_size=calc_vocab.vocab_size + 32)
    with pytest.raises(gg.ArtifactError, match="another tokenizer"):
        gg.load(path, vocab=other)


def test_header_keeps_library_version_and_grammar_hash(tmp_path, calc_compiled) -> None:
    path = tmp_path / "calc.ggc"
    calc_compiled.save(path)
    header = gg.artifact.read_header(path)
    assert header["library_version"] == gg.__version__
    assert header["grammar"]["text_sha256"] == hashlib.sha256(CALC.encode()).hexdigest()


# ------------------------------------------------------------------ atomic save


def _leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != "calc.ggc")


def _fail(*args, **kwargs):
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize("where", ["np.savez_compressed", "os.fsync", "os.replace"])
def test_failed_save_keeps_the_previous_artifact(tmp_path, calc_compiled, monkeypatch, where) -> None:
    """A save that fails before, during (the flush of the new bytes) or at the rename leaves the old file."""
    path = tmp_path / "calc.ggc"
    calc_compiled.save(path)
    before = path.read_bytes()
    module, name = where.split(".")
    monkeypatch.setattr(np if module == "np" else os, name, _fail)
    with pytest.raises(OSError, match="No space left"):
        calc_compiled.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _leftovers(tmp_path) == [], "a temporary file was left behind"
    gg.load(path)


def test_save_replaces_the_file_and_leaves_nothing_else(tmp_path, calc_compiled) -> None:
    path = tmp_path / "calc.ggc"
    path.write_bytes(b"an older file")
    calc_compiled.save(path)
    assert _leftovers(tmp_path) == []
    assert gg.load(path).summary() == calc_compiled.summary()


# ------------------------------------------------------------------ gg inspect


def test_inspect_reports_file_size_and_preprocessed_subtrees(tmp_path, calc_compiled, capsys) -> None:
    from greatgramma.cli import main

    path = tmp_path / "calc.ggc"
    calc_compiled = gg.compile(calc_compiled.grammar, calc_compiled.vocab, eager=True)
    calc_compiled.save(path)
    subtrees = calc_compiled.summary()["subtrees"]
    assert subtrees > 0 and calc_compiled.preprocessed_subtrees == subtrees
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"file_bytes\s+{path.stat().st_size}\n", out), out
    assert re.search(rf"subtrees\s+{subtrees} \(walked when preprocessed", out), out


def test_compiled_grammar_repr_is_a_short_line(vocabularies) -> None:
    """Printing a compiled grammar (a REPL, a log line) names it and its sizes, not its tables."""
    compiled = gg.compile(gg.Grammar.from_regex("[a-z]+"), vocabularies("llama3"))
    text = repr(compiled)
    assert text.startswith("CompiledGrammar(<regex>, Vocabulary(vocab_size=128256") and len(text) < 300, text[:300]
