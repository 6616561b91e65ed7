"""grammars/go.lark with Go's semicolon insertion (``gg.Semicolons``): real files, mutants, masks.

* Real files (tests/data/go/, from Go 1.19's source tree, BSD license beside them) and generic
  snippets: Lark with the equivalent postlexer (``tests/lark_semicolons.py``) accepts them, and
  the engine allows every byte-level token of them and EOS at the end.
* Mutated files: the engine's verdict (every token taken, then EOS) equals Lark's.
* Masks bit for bit against the reference checker (``tests/reference.py`` with its own
  re-implementation of the insertion rule) on a small Go-ish vocabulary, along seeded walks.
* One walk with a real tokenizer (Llama-3) over a real file.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

import pytest
from helpers import EOS_ID, PAD_IDS, compare_walk, masks_accept, single_byte_masker, spell
from lark_semicolons import GO_AFTER, lark_go_parses
from reference import ReferenceChecker

import greatgramma as gg

ROOT = Path(__file__).resolve().parents[1]
GO = (ROOT / "grammars" / "go.lark").read_text(encoding="utf-8")
FILES = sorted((ROOT / "tests" / "data" / "go").glob("*.go"))

SNIPPETS = [
    b"package p",  # the end inserts the last semicolon
    b"/* a\n */ package p; import \"fmt\"\nfunc main() { fmt.Println(1) }",
    b"package p\n\nimport (\n\t\"a/b\"\n\tc \"d\"\n)\n\nfunc f(t *testing.T) { t.Fatal() }\n",
    b"package p\ntype List[T any] struct{ next *List[T]; v T }\nfunc Map[K comparable, V any](m map[K]V) []K {\n"
    b"\tvar ks []K\n\tfor k := range m {\n\t\tks = append(ks, k)\n\t}\n\treturn ks\n}\n",
    b"package p\ntype Number interface {\n\t~int | ~float64\n}\nvar x = Sum[int]([]int{1, 2})\n",
    b"package p\nfunc f() {\n\tif x == (T{}) {\n\t}\n\tswitch y := v.(type) {\n\tcase []int, *T:\n\t\tbreak\n\t}\n\t"
    b"select {\n\tcase v := <-ch:\n\t\t_ = v\n\tdefault:\n\t}\n}\n",
    b"package p\nvar a = [...]int{1, 2,\n}\nconst (\n\tA = iota // c\n\tB\n)\nfunc g() (int, error) { return 0, nil }\n",
]
INVALID = [  # gofmt -e refuses each
    b"package p\nfunc f() {\n\tx := []int{1,\n\t2\n\t}\n}\n",  # a newline after 2 ends the line
    b"package p\nfunc f() {\n\tif x == T{} {\n\t}\n}\n",  # T{} in an if header
    b"package p\nvar x = []int\n",  # a type where an expression must be
    b"package p\nimport \"a b\"\n",  # not an import path
    b"package p\nconst x\n",  # missing constant value
    b"package p\nfunc f() {\n\tswitch x := 1 {\n\t}\n}\n",
    b"package p\nfunc f()\n{\n}\n",  # ";" after the signature
]


@functools.lru_cache(maxsize=None)
def grammar() -> gg.Grammar:
    return gg.Grammar(GO, postlexer=gg.Semicolons.go(), source="grammars/go.lark")


@functools.lru_cache(maxsize=None)
def byte_masker() -> gg.Masker:
    return single_byte_masker(grammar())


def engine_accepts(data: bytes) -> bool:
    return masks_accept(byte_masker(), data)


def test_postlexer_reads_the_grammar_terminals() -> None:
    assert set(gg.Semicolons.go().after) == set(GO_AFTER)
    names = [t.name for t in grammar().terminals]
    gg.Semicolons.go().check_terminals(names)
    with pytest.raises(gg.GrammarError, match="NEWLINE"):
        gg.Grammar('start: "a" ";"\n', postlexer=gg.Semicolons(after=("A",))).parse_table


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_real_files_are_accepted(path: Path) -> None:
    data = path.read_bytes()
    assert lark_go_parses(GO, data)
    assert engine_accepts(data)


def test_snippets_and_invalid_programs() -> None:
    for text in SNIPPETS:
        assert lark_go_parses(GO, text) and engine_accepts(text), text
    for text in INVALID:
        assert not lark_go_parses(GO, text) and not engine_accepts(text), text


def test_mutants_agree_with_lark() -> None:
    rng = random.Random(5)
    sources = [p.read_bytes() for p in FILES]
    for _ in range(24):
        data = bytearray(rng.choice(sources)[:1500])
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(data))
            if rng.random() < 0.5:
                del data[pos]
            else:
                data.insert(pos, rng.choice(b"\n{}();,*[]=:\"/ "))
        assert engine_accepts(bytes(data)) == lark_go_parses(GO, bytes(data)), bytes(data)


# ---------------------------------------------------------------- against the reference

PIECES = [
    *[bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyzT01_ (){}[];,.:=*+<-!/\"'`\n\t"],
    b"package", b"package p", b"package p\n", b"func", b"func ", b"func f(", b"var", b"var x", b"const",
    b"type", b"type T", b"struct{", b"interface{", b"map[", b"chan", b"if", b"if ", b"for", b"range", b"return",
    b"break", b"switch", b"case", b"default", b"go", b"import", b":=", b"==", b"++", b"--", b"<-", b"...",
    b"//", b"/*", b"*/", b"/* \n */", b"// c\n", b"\n}", b") {", b"){\n", b"}\n", b"x.y", b"T{", b"[]int{",
    b"\"s\"", b"\"a/b\"", b"`r`", b"'c'", b"0x1", b"1.5", b"2i", b"[T any]", b"int", b"x, y", b"\n\n", b" \n",
]


@functools.lru_cache(maxsize=None)
def setup():
    tokens = [None, None] + list(dict.fromkeys(PIECES))
    vocab_size = len(tokens) + PAD_IDS
    vocab = gg.Vocabulary.from_token_bytes(tokens, eos_token_ids=[EOS_ID], vocab_size=vocab_size)
    masker = gg.Masker(gg.compile(grammar(), vocab))
    ref = ReferenceChecker(GO, semicolons=dict(nl="NEWLINE", semicolon="SEMICOLON", after=GO_AFTER))

    class S:
        pass

    s = S()
    s.name, s.tokens, s.vocab_size, s.masker, s.ref = "go", tokens, vocab_size, masker, ref
    return s


@pytest.mark.parametrize(
    "text",
    [
        b"package p\nfunc f() {\n\treturn\n}\n",
        b"package p /* \n */ var x = y\n",
        b"package p\nvar x = T{\n",
        b"package p\nfunc f() {\n\tfor x := range y {\n\t\tx++\n\t\tbreak\n\t}\n}",
        b"package p\ntype T[T any] struct{ x int }\n// c\n",
    ],
)
def test_masks_match_the_reference(text: bytes) -> None:
    s = setup()
    rng = random.Random(len(text))
    ids = spell(s.tokens, text, rng)
    compare_walk(s, ids, 4, rng)


def test_random_walks_match_the_reference() -> None:
    s = setup()
    rng = random.Random(9)
    for _ in range(8):
        compare_walk(s, [], 24, rng)


# ---------------------------------------------------------------- a real tokenizer


def test_llama3_walks_a_real_file() -> None:
    path = ROOT / "tokenizers" / "llama3" / "tokenizer.json.gz"
    if not path.is_file():
        pytest.skip("tokenizers/llama3 is not in this checkout")
    pytest.importorskip("tokenizers")
    from greatgramma.tokenize import encode_exact, load_tokenizer

    vocab = gg.Vocabulary.from_file(path)
    masker = gg.Masker(gg.compile(grammar(), vocab))
    text = FILES[0].read_text(encoding="utf-8")
    state = masker.initial_state()
    for tok in encode_exact(load_tokenizer(path), text, vocab.token_bytes):
        assert gg.bitmask_to_bool(masker.mask(state), vocab.vocab_size)[tok]
        state = masker.advance(state, tok)
    assert gg.bitmask_to_bool(masker.mask(state), vocab.vocab_size)[vocab.eos_token_ids[0]]


def test_artifact_round_trip(tmp_path: Path) -> None:
    m = byte_masker()
    path = tmp_path / "go.gg"
    m.compiled.save(path)
    loaded = gg.Masker(gg.load(path))
    assert isinstance(loaded.compiled.grammar.postlexer, gg.Semicolons)
    a, b = m.initial_state(), loaded.initial_state()
    for byte in b"package p\nvar x = 1 /* \n */\n":
        assert (m.mask(a) == loaded.mask(b)).all()
        a, b = m.advance(a, byte + 1), loaded.advance(b, byte + 1)
    assert loaded.is_complete(b)
