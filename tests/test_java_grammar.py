"""grammars/java.lark (Java 17 syntax) on the engine, against Lark and the reference checker.

- The own files (tests/data/java: each feature of the grammar; javac 17 compiles the classes and
  parses module-info.java) parse with Lark, and walk token by token on a small vocabulary
  (longest tokens, and byte by byte), EOS at the end only.
- Masks bit for bit against tests/reference.py at cut points of the own files and of
  hand-written prefixes around `>`, `>>`, `>>>`, casts, lambdas and contextual keywords.
- Mutated own files: the engine reaches the end and calls the output complete exactly when
  Lark parses it; seeded random walks whose outputs ended with EOS parse with Lark.
- Real tokenizers: the own files walk cleanly with llama2, llama3 and qwen3 (EOS at the end).
"""

from __future__ import annotations

import random
from pathlib import Path

import lark
import numpy as np
import pytest
from helpers import EOS_ID, GRAMMARS, TEST_DATA, TOKENIZER_NAMES, bit, engine_bits, reference_bits, split_ids
from reference import ReferenceChecker

import greatgramma as gg

GRAMMAR_PATH = GRAMMARS / "java.lark"
GRAMMAR_TEXT = GRAMMAR_PATH.read_text(encoding="utf-8")
OWN_FILES = sorted((TEST_DATA / "java").glob("*.java"))

KEYWORDS = [b"class", b"public", b"static", b"final", b"void", b"int", b"return", b"new", b"if", b"else", b"for",
            b"while", b"switch", b"case", b"default", b"yield", b"record", b"sealed", b"permits", b"var", b"this",
            b"import", b"extends", b"implements", b"interface", b"enum", b"instanceof", b"String", b"List"]
SMALL_TOKENS: list[bytes | None] = [None]  # id 0 = EOS
SMALL_TOKENS += [bytes([b]) for b in range(0x20, 0x7F)] + [b"\n", b"\t", b"\xc3", b"\xa9", b"\xbc", b"\xaf"]
SMALL_TOKENS += KEYWORDS + [b" " + k for k in KEYWORDS]
SMALL_TOKENS += [b">>", b">>>", b">>=", b">>>=", b"->", b"::", b"<>", b"()", b"{}", b"[]", b'"""', b'"""\n', b"    ",
                 b"\n    ", b"        ", b"//", b"/*", b"*/", b"++", b"--", b"&&", b"||", b"==", b"!=", b"<=", b">=",
                 b"non-", b"0x", b"1.", b"e-", b"\\n", b'")', b"();", b");\n", b"> ", b">>;", b"> x", b"<T>"]
SMALL_TOKENS = list(dict.fromkeys(SMALL_TOKENS))
SMALL_ID = {tb: i for i, tb in enumerate(SMALL_TOKENS) if tb is not None}

# Prefixes where the mask must match the reference (each viable: the reference says which bytes follow).
PREFIXES = [
    b"class A { int f() { return a >",
    b"class A { int f() { return a >>",
    b"class A { int f() { a >>",
    b"class A { List<List<B>",
    b"class A { Map<K, List<V>> m = (Map<K, List<V>",
    b"class A { X<Y<Z<W>",
    b"class A { Object o = (a < b",
    b"class A { Object o = (A<B",
    b"class A { Object o = (A<B>",
    b"class A { Object o = (a",
    b"class A { Object o = (a)",
    b"class A { Runnable r = (a, b",
    b"class A { void f() { record",
    b"class A { void f() { yield",
    b"class A { int x = switch (y) { case 1 -",
    b"class A { int x = non",
    b"non",
    b"public sealed",
    b"class A { public ",
    b'class A { String s = """',
    b'class A { String s = """\n  a"',
    b"class A { double d = 1.",
    b"class A { int x = 0x1",
    b"@A ",
]
CUTS_PER_FILE = 6
MUTANTS = 40
WALKS = 12


def java_grammar() -> gg.Grammar:
    return gg.Grammar.from_file(GRAMMAR_PATH)


@pytest.fixture(scope="module")
def small() -> gg.Masker:
    vocab = gg.Vocabulary.from_token_bytes(SMALL_TOKENS, eos_token_ids=[EOS_ID])
    return gg.Masker(gg.compile(java_grammar(), vocab))


@pytest.fixture(scope="module")
def lark_parser() -> lark.Lark:
    return lark.Lark(GRAMMAR_TEXT, parser="lalr", lexer="basic")


def lark_parses(parser: lark.Lark, data: bytes) -> bool:
    try:
        parser.parse(data.decode("utf-8"))
        return True
    except (lark.exceptions.LarkError, UnicodeDecodeError):
        return False


def small_ids(data: bytes, greedy: bool = True) -> list[int]:
    """Split data into small-vocabulary ids: longest token first (greedy) or byte by byte."""
    return split_ids(data, SMALL_ID, greedy)


def walk(masker: gg.Masker, ids: list[int], name: str) -> gg.State:
    """Feed ids one by one, each in the mask, EOS in the mask exactly when the output is complete."""
    tb = masker.compiled.vocab.token_bytes
    state, done = masker.initial_state(), b""
    for i, tok in enumerate(ids):
        words = masker.mask(state)
        assert bit(words, tok), f"{name}: token #{i} {tb[tok]!r} masked out after ...{done[-60:]!r}"
        assert bit(words, EOS_ID) == masker.is_complete(state), f"{name}: EOS bit after ...{done[-60:]!r}"
        state = masker.advance(state, tok)
        done += tb[tok]
    return state


def test_own_files_parse_with_lark(lark_parser: lark.Lark) -> None:
    assert 5 <= len(OWN_FILES) <= 10
    for path in OWN_FILES:
        lark_parser.parse(path.read_text(encoding="utf-8"))  # raises with the position


@pytest.mark.parametrize("path", OWN_FILES, ids=lambda p: p.name)
def test_own_file_small_vocab(small: gg.Masker, path: Path) -> None:
    data = path.read_bytes()
    for greedy in (True, False):
        state = walk(small, small_ids(data, greedy), f"{path.name} ({'tokens' if greedy else 'bytes'})")
        assert small.is_complete(state) and bit(small.mask(state), EOS_ID), f"{path.name}: EOS refused at the end"


@pytest.fixture(scope="module")
def reference() -> ReferenceChecker:
    return ReferenceChecker(GRAMMAR_TEXT)


def test_masks_match_reference(small: gg.Masker, reference: ReferenceChecker) -> None:
    """The engine's mask is the reference's, bit for bit, at hand-written prefixes and file cuts."""
    rng = random.Random(17)
    prefixes = list(PREFIXES)
    for path in OWN_FILES:
        data = path.read_bytes()
        prefixes += [data[: rng.randrange(len(data))] for _ in range(CUTS_PER_FILE)]

    class Setup:
        tokens, vocab_size, ref = SMALL_TOKENS, small.compiled.vocab.vocab_size, reference

    for prefix in prefixes:
        assert reference.viable(prefix), prefix
        state = walk(small, small_ids(prefix, greedy=False), f"prefix {prefix[-40:]!r}")
        got = engine_bits(small.mask(state), Setup.vocab_size)
        want = reference_bits(Setup, prefix)
        diff = np.nonzero(got != want)[0]
        assert not len(diff), f"after ...{prefix[-50:]!r}: " + ", ".join(
            f"{SMALL_TOKENS[t]!r} engine={got[t]} reference={want[t]}" for t in diff[:8])


def test_mutants_agree_with_lark(small: gg.Masker, lark_parser: lark.Lark) -> None:
    """One edit of an own file (drop, repeat, swap or replace a token): the engine walks to the end and
    calls it complete exactly when Lark parses it, or refuses a token and Lark rejects it too."""
    rng = random.Random(5)
    agreed = {True: 0, False: 0}
    for _ in range(MUTANTS):
        text = rng.choice(OWN_FILES).read_text(encoding="utf-8")
        toks = [(t.start_pos, t.end_pos) for t in lark_parser.lex(text)]
        i = rng.randrange(len(toks) - 1)
        (a, b), (c, d) = toks[i], toks[i + 1]
        e, f = toks[rng.randrange(len(toks))]
        mutant = rng.choice([text[:a] + text[b:], text[:b] + " " + text[a:b] + text[b:],
                             text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:], text[:a] + text[e:f] + text[b:]])
        data = mutant.encode("utf-8")
        state = small.initial_state()
        try:
            for tok in small_ids(data):
                state = small.advance(state, tok)
            ours = small.is_complete(state)
        except gg.TokenRejectedError:
            ours = False
        assert ours == lark_parses(lark_parser, data), mutant[max(0, a - 60) : b + 60]
        agreed[ours] += 1
    assert agreed[True] and agreed[False], agreed  # both outcomes were seen


def test_random_walks_parse_with_lark(small: gg.Masker, lark_parser: lark.Lark) -> None:
    """Seeded walks: never an empty mask; every output ended with EOS parses with Lark."""
    rng = np.random.default_rng(3)
    tb = SMALL_TOKENS
    closers = [SMALL_ID[c] for c in (b"}", b";", b")", b" ", b"\n", b">")]
    finished = 0
    for _ in range(WALKS):
        state, out = small.initial_state(), b""
        for step in range(400):
            ids = np.nonzero(engine_bits(small.mask(state), small.compiled.vocab.vocab_size))[0]
            assert len(ids), f"empty mask after {out!r}"
            if step > 0 and small.is_complete(state) and (step >= 150 or rng.random() < 0.1):
                assert lark_parses(lark_parser, out), out
                finished += 1
                break
            ids = ids[ids != EOS_ID]
            pool = ids[np.isin(ids, closers)] if step >= 150 else ids
            pick = int(rng.choice(pool if len(pool) else ids))
            state = small.advance(state, pick)
            out += tb[pick]
    assert finished, "no walk ended with EOS"


@pytest.mark.parametrize("name", TOKENIZER_NAMES)
def test_own_files_real_tokenizer(name: str, vocabularies, hf_tokenizers) -> None:
    from greatgramma.tokenize import encode_exact

    vocab = vocabularies(name)
    masker = gg.Masker(gg.compile(java_grammar(), vocab))
    hf = hf_tokenizers(name)
    for path in OWN_FILES:
        ids = encode_exact(hf, path.read_text(encoding="utf-8"), vocab.token_bytes, source=str(path))
        state, done = masker.initial_state(), b""
        for i, tok in enumerate(ids):
            assert bit(masker.mask(state), tok), f"{path.name}: token #{i} {vocab.token_bytes[tok]!r} after ...{done[-60:]!r}"
            state = masker.advance(state, tok)
            done += vocab.token_bytes[tok]
        words = masker.mask(state)
        assert all(bit(words, eos) for eos in vocab.eos_token_ids), f"{path.name}: EOS refused at the end"
