"""The gg command end to end, through a subprocess, on a byte-level BPE tokenizer built in the test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CALC

tokenizers = pytest.importorskip("tokenizers", reason="the CLI's check command encodes text with `tokenizers`")


def make_tokenizer(directory: Path) -> Path:
    """A byte-level BPE tokenizer: the 256 byte symbols, a few merges, and an EOS special token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    merges = [("1", "2"), ("Ġ", "+"), ("x", "y")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<eos>"])
    tok.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<eos>"}))
    return directory


def gg(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "greatgramma.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    grammar = tmp_path / "calc.lark"
    grammar.write_text(CALC)
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("12 + (x * y)")
    bad.write_text("12 + (x * * y)")
    return {"grammar": grammar, "tok": make_tokenizer(tmp_path), "good": good, "bad": bad, "dir": tmp_path}


def test_preprocess_inspect_check(files) -> None:
    out = files["dir"] / "calc.ggc"
    r = gg("preprocess", str(files["grammar"]), "--tokenizer", str(files["tok"]), "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["vocab_size"] == 260 and summary["terminals"] == 8 and out.exists()
    r = gg("inspect", str(out))
    assert r.returncode == 0 and "lexer_states" in r.stdout and "eos_token_ids" in r.stdout
    r = gg("check", str(files["grammar"]), "--tokenizer", str(files["tok"]), str(files["good"]))
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    r = gg("check", str(files["grammar"]), "--tokenizer", str(files["tok"]), str(files["bad"]))
    assert r.returncode == 1
    assert "bad.txt:1:11:" in r.stderr and "b'*'" in r.stderr and "expected one of" in r.stderr


def test_errors_are_one_line(files) -> None:
    r = gg("preprocess", str(files["dir"] / "missing.lark"), "--tokenizer", str(files["tok"]))
    assert r.returncode == 2 and "cannot read grammar file" in r.stderr and "Traceback" not in r.stderr
    bad = files["dir"] / "broken.lark"
    bad.write_text("start: foo\n")
    r = gg("preprocess", str(bad), "--tokenizer", str(files["tok"]))
    assert r.returncode == 2 and "foo" in r.stderr and "Traceback" not in r.stderr
    r = gg("preprocess", str(files["grammar"]), "--tokenizer", str(files["dir"] / "nope.json"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
