"""The gg command end to end, through a subprocess, on a byte-level BPE tokenizer built in the test."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CALC, ROOT

import greatgramma.cli as cli

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


# -- diagnostics as a compiler gives them (gg's main run in-process) ----------------------------

BENCH_GRAMMARS = ROOT / "grammars" / "bench"  # the paper's benchmark grammars


def run_gg(capsys, *args: str) -> tuple[int, str, str]:
    """gg's main in this process: (exit status, stdout, stderr)."""
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def check(capsys, grammar: Path, tok: Path, folder: Path, text: str, *flags: str) -> tuple[int, str]:
    """``gg check`` on ``text`` written to a file: (exit status, stderr)."""
    path = folder / "input.txt"
    path.write_text(text)
    code, _, err = run_gg(capsys, "check", grammar, "--tokenizer", tok, path, *flags)
    return code, err.replace(str(path), "input.txt")


def test_check_points_at_the_first_byte_that_cannot_go_on(files, capsys) -> None:
    """Token " +" (one token) after "(x *": its space is fine, its "+" is not (column 11, not 10)."""
    code, err = check(capsys, files["grammar"], files["tok"], files["dir"], "12 + (x * + y)")
    assert code == 1
    assert err == (
        "input.txt:1:11: error: unexpected '+'\n"
        " 1 | 12 + (x * + y)\n"
        "   |           ^\n"
        '  expected one of: NUMBER, NAME, "("\n'
        "  in token #7 (id 257, b' +'), its byte 1\n"
    ), err


def test_check_at_end_of_input(files, capsys) -> None:
    code, err = check(capsys, files["grammar"], files["tok"], files["dir"], "12 + (x")
    assert code == 1 and "EOS" not in err, err
    assert err == (
        "input.txt:1:8: error: unexpected end of input\n"
        " 1 | 12 + (x\n"
        "   |        ^\n"
        '  expected one of: NAME, "+", "-", "*", ")"\n'
    ), err


@pytest.fixture(scope="module")
def python_artifact(tmp_path_factory) -> tuple[Path, Path]:
    """The benchmark python grammar compiled once for the test tokenizer: (artifact, tokenizer)."""
    folder = tmp_path_factory.mktemp("python")
    tok = make_tokenizer(folder)
    artifact = folder / "python.gg"
    r = gg("preprocess", str(BENCH_GRAMMARS / "python.lark"), "--indenter", "python", "--tokenizer", str(tok),
           "-o", str(artifact), "-q")
    assert r.returncode == 0, r.stderr
    return artifact, tok


@pytest.mark.parametrize(
    "text, where, message",
    [
        ("if a:\n    if b:\n        x = 1\n  y = 2\n", "4:3", "unindent does not match any outer indentation level"),
        ("x = 1\n    y = 2\n", "2:5", "unexpected indent"),
        ("if a:\nx = 2\n", "2:1", "expected an indented block"),
        ("while a:\n", "2:1", "expected an indented block"),
    ],
    ids=["unindent", "unexpected-indent", "no-block", "no-block-at-end"],
)
def test_check_indentation_errors_in_cpythons_words(python_artifact, tmp_path, capsys, text, where, message) -> None:
    artifact, tok = python_artifact
    code, err = check(capsys, artifact, tok, tmp_path, text)
    assert code == 1 and err.startswith(f"input.txt:{where}: error: {message}\n"), err
    assert "expected one of" not in err and "_NL" not in err, err


def test_check_names_terminals_for_people(python_artifact, tmp_path, capsys) -> None:
    """The indenter's newline is "newline", literals are quoted; no _NL, _INDENT, __ANON."""
    artifact, tok = python_artifact
    code, err = check(capsys, artifact, tok, tmp_path, "x = 1 $ 2\n")
    assert code == 1 and err.startswith("input.txt:1:7: error: unexpected '$'\n"), err
    expected = err.split("expected one of: ")[1].split("\n")[0].split(", ")
    assert "newline" in expected and '"if"' in expected and '"=="' in expected, expected
    assert not [name for name in expected if name.startswith("_")], expected


def test_check_gos_statement_end_is_not_the_models_eos(files, capsys) -> None:
    text = "package main\nfunc main() { x := 1 }"
    code, err = check(capsys, BENCH_GRAMMARS / "go.lark", files["tok"], files["dir"], text)
    assert code == 1 and err.startswith("input.txt:2:22: error: unexpected '}'\n"), err
    assert "expected one of: end of statement, " in err and "EOS" not in err, err


def test_check_takes_gos_semicolon_postlexer(files, capsys) -> None:
    """grammars/go.lark needs --postlexer go: newlines end statements (without it they are refused)."""
    go = ROOT / "grammars" / "go.lark"
    text = "package main\n\nfunc main() {\n\tx := 1\n\tprintln(x)\n}\n"
    code, err = check(capsys, go, files["tok"], files["dir"], text, "--postlexer", "go")
    assert code == 0, err
    code, err = check(capsys, go, files["tok"], files["dir"], text.replace("x := 1", "x := )"), "--postlexer", "go")
    assert code == 1 and err.startswith("input.txt:4:7: error:"), err
    code, err = check(capsys, go, files["tok"], files["dir"], text)  # newlines reach the parser as they are
    assert code == 1 and err.startswith("input.txt:1:13: error: unexpected newline"), err
    code, err = check(capsys, go, files["tok"], files["dir"], text, "--postlexer", "go", "--indenter", "python")
    assert code == 2 and "not both" in err, err


def test_check_takes_a_compiled_artifact_without_compiling(files, capsys, monkeypatch) -> None:
    artifact = files["dir"] / "calc.gg"
    code, _, err = run_gg(capsys, "preprocess", files["grammar"], "--tokenizer", files["tok"], "-o", artifact, "-q")
    assert code == 0, err

    def no_compile(*args, **kwargs):
        raise AssertionError("check compiled the grammar again")

    monkeypatch.setattr(cli, "compile", no_compile)
    code, out, err = run_gg(capsys, "check", artifact, "--tokenizer", files["tok"], files["good"])
    assert code == 0 and out == f"{files['good']}: OK (10 tokens)\n", err
    code, err = check(capsys, artifact, files["tok"], files["dir"], "12 + (x * * y)")
    assert code == 1 and err.startswith("input.txt:1:11: error: unexpected '*'\n"), err
    code, _, err = run_gg(capsys, "check", artifact, "--tokenizer", files["tok"], files["good"], "--start", "expr")
    assert code == 2 and err == f"gg: error: {artifact} is a compiled artifact: it fixes --start; drop it\n"


def test_hints_name_the_command_line_options(files, capsys) -> None:
    """The CLI says --indenter and --start where the Python API says indenter= and start=."""
    declared = files["dir"] / "declared.lark"
    declared.write_text('start: _INDENT "a"\n%declare _INDENT\n')
    code, _, err = run_gg(capsys, "check", declared, "--tokenizer", files["tok"], files["good"])
    assert code == 2 and err.endswith("come from a postlexer; for Python's indentation pass --indenter python\n"), err
    code, _, err = run_gg(capsys, "check", files["grammar"], "--tokenizer", files["tok"], files["good"], "--start", "nope")
    assert code == 2 and err.endswith("define it or pass --start with the name of a rule\n"), err
    assert "Grammar(" not in err and "start=" not in err


def test_warnings_are_one_line_at_the_grammar(files, capsys) -> None:
    shadowed = files["dir"] / "shadowed.lark"
    shadowed.write_text('start: NAME | "if" NAME\nNAME.2: /[a-z]+/\n%ignore " "\n')
    code, _, err = run_gg(capsys, "preprocess", shadowed, "--tokenizer", files["tok"], "-q")
    assert code == 0
    assert err == (
        f"gg: warning: {shadowed}:1: terminal \"if\" can never be produced by the lexer: its lexeme 'if' is won "
        "by NAME (priority 2 vs 0); name it with a higher priority (IF.3: \"if\") and use the name\n"
    ), err


def test_generate_checks_the_grammar_before_the_model(files, capsys) -> None:
    pytest.importorskip("transformers", reason="generate needs transformers")
    broken = files["dir"] / "broken.lark"
    broken.write_text("start: foo\n")
    code, _, err = run_gg(capsys, "generate", broken, "--model", files["dir"] / "no-model")
    assert code == 2 and "foo" in err and "--model" not in err, err


def test_generate_install_hint_names_real_packages(files, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # import fails
    code, _, err = run_gg(capsys, "generate", files["grammar"], "--model", files["dir"])
    assert code == 2 and err == "gg: error: generate needs torch and transformers: pip install torch transformers\n"
