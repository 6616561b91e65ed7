"""The gg command end to end, through a subprocess, on a byte-level BPE tokenizer built in the test."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CALC

tokenizers = pytest.importorskip("tokenizers", reason="the CLI's check command encodes text with `tokenizers`")


def make_tokenizer(directory: Path, normalizer=None) -> Path:
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
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.add_special_tokens(["<eos>"])
    tok.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<eos>"}))
    return directory


def gg(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "greatgramma.cli", *args], capture_output=True, input=stdin, timeout=120)
    r.stdout, r.stderr = r.stdout.decode(), r.stderr.decode()
    return r


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


def assert_one_error_line(r: subprocess.CompletedProcess, *parts: str) -> None:
    """Exit 2 and a single `gg: error:` line on stderr holding every part."""
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("gg: error: ") and r.stderr.count("\n") == 1, r.stderr
    for part in parts:
        assert part in r.stderr, (part, r.stderr)


def test_check_on_a_binary_file(files) -> None:
    binary = files["dir"] / "binary.txt"
    binary.write_bytes(b"12 +\n 3\xff\xfe")
    r = gg("check", str(files["grammar"]), "--tokenizer", str(files["tok"]), str(binary))
    assert_one_error_line(r, f"{binary}: not UTF-8 text", "byte 0xff at byte offset 7 (line 2, column 3)")


def test_check_on_garbage_from_stdin(files) -> None:
    r = gg("check", str(files["grammar"]), "--tokenizer", str(files["tok"]), "/dev/stdin", stdin=b"\x80garbage")
    assert_one_error_line(r, "/dev/stdin: not UTF-8 text", "byte 0x80 at byte offset 0")


def test_check_on_a_special_token(files) -> None:
    text = files["dir"] / "special.txt"
    text.write_text("12 + <eos>")
    r = gg("check", str(files["grammar"]), "--tokenizer", str(files["tok"]), str(text))
    assert_one_error_line(r, f"{text}: ", "special token '<eos>' (id 259) at byte offset 5 (line 1, column 6)")


def test_check_with_a_normalizer_that_changes_the_text(files) -> None:
    from tokenizers import normalizers

    folder = files["dir"] / "lowercasing"
    folder.mkdir()
    make_tokenizer(folder, normalizer=normalizers.Lowercase())
    text = files["dir"] / "upper.txt"
    text.write_text("12 + X")
    r = gg("check", str(files["grammar"]), "--tokenizer", str(folder), str(text))
    assert_one_error_line(
        r, f"{text}: ", "does not reproduce its bytes", "first differ at byte offset 5 (line 1, column 6)",
        "the text has b'X', the tokens spell b'x'",
    )


def test_ctrl_c_exits_130_with_one_line(files) -> None:
    """SIGINT while preprocessing (compile made slow here, so the signal lands inside it)."""
    script = (
        "import sys, time\n"
        "import greatgramma.cli as cli\n"
        "def slow_compile(*args, **kwargs):\n"
        "    print('compiling', file=sys.stderr, flush=True)\n"
        "    time.sleep(60)\n"
        "cli.compile = slow_compile\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    args = ["preprocess", str(files["grammar"]), "--tokenizer", str(files["tok"]), "-q"]
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr.readline() == "compiling\n"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err == "gg: interrupted\n", err
