"""Acceptance test: ``Masker.mask`` agrees with the slow reference checker bit for bit.

DESIGN.md section 1: ``mask(state)`` allows token ``t`` exactly when ``prefix + bytes(t)`` is
viable, and EOS exactly when ``prefix`` is complete; special tokens and ids past the tokenizer
are never allowed. ``tests/reference.py`` decides the same questions independently (straight
from Lark's terminal patterns and its interactive parser), so at every step of seeded random
walks over three grammars the two must give the same bits.

Each grammar gets a small byte-level tokenizer built here: its keywords and punctuation,
fragments that span several terminals, multi-byte and *partial* UTF-8 pieces, whitespace runs,
digits, letters and random short strings over the grammar's alphabet. Id 0 is EOS, id 1 is a
special token (no bytes), and the model's vocabulary is a few ids wider than the tokenizer.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pytest
from helpers import EOS_ID, PAD_IDS, SPECIAL_ID, describe, engine_bits, grammar_text, probe, reference_bits, spell
from lark import Lark
from reference import ReferenceChecker

import greatgramma as gg


# ----------------------------------------------------------------------------------------------
# Tokenizers

# Pieces every tokenizer holds: whitespace runs, digits, letters, UTF-8 (whole and partial).
_WHITESPACE = [b" ", b"  ", b"    ", b"\n", b"\n  ", b" \n", b"\t", b"\r\n", b"\n\n"]
_DIGITS = [bytes([c]) for c in b"0123456789"] + [b"12", b"007", b"42", b"3.", b".5", b"1.25"]
_LETTERS = [bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyz"] + [
    b"A", b"E", b"X", b"Z", b"_", b"x1", b"foo", b"bar", b"_tmp",
]
_UTF8 = [
    "é".encode(), "€".encode(), "日本".encode(), "ü".encode(), "😀".encode(),
    b"\xe2\x82", b"\xac",  # "€" in two pieces
    b"\xc3", b"\xa9",  # "é" in two pieces
    b"\xe2", b"\x82\xac",  # "€" split the other way
    b"\xf0\x9f", b"\x98\x80",  # "😀" in two pieces
    b"\xff",  # never UTF-8
    b"\xc0",  # overlong lead: never UTF-8
]


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    specific: tuple[bytes, ...]  # keywords, punctuation, multi-terminal fragments
    alphabet: bytes  # for random short tokens
    seed: int


_JSON_SPECIFIC = [
    b"{", b"}", b"[", b"]", b",", b":", b'"', b"true", b"false", b"null", b"tr", b"ue", b"nul",
    b"-", b"+", b"e", b"E", b".", b"0.", b"e+", b"E-1",
    b'"a"', b'"a":', b'": ', b'"),', b'",', b'", "', b'"}', b'"]', b'""', b'"":', b'{"', b'["',
    b"[]", b"{}", b"},", b"],", b" }\n", b"}\n", b"]}", b"}]", b", ", b": ", b":[", b":{",
    b"1,", b"1]", b"0}", b"-1", b"1e5", b"2.5,", b"true,", b"null]", b'"\xc3', b'\xa9"',
    '"é'.encode(), 'é"'.encode(), '"€",'.encode(), b'\\"', b"\\", b"\xe2\x82\xac\"",
]
_ARITH_SPECIFIC = [
    b"+", b"-", b"*", b"/", b"(", b")", b".", b"1+", b"+1", b"*(", b")*", b"))", b"((",
    b"-(", b"--", b"- -", b"(-", b") ", b" + ", b" * ", b" - ", b" / ", b"x*", b"a+b",
    b"1.", b"0.5", b".0", b"2)", b"x)", b"(x", b"1.5*", b"a1", b"b_2", b")\n", b"/(",
    b"3-", b"-4", b"x-1", b"1/2",
]
_KEYWORD_SPECIFIC = [
    b"if", b"then", b"else", b"end", b"let", b"print", b"while", b"do", b"true", b"false",
    b"i", b"f", b"th", b"en", b"wh", b"ile", b"iffy", b"ends", b"lets", b"if ", b" then ",
    b" end", b"end\n", b"=", b"==", b";", b"<", b"+", b"/", b"(", b")", b'"', b'""', b'"a"',
    b"//", b"/*", b"*/", b"*", b"*/ ", b"// ", b"/**/", b"/* ", b" */", b"\n//", b"*/\n",
    b");\n", b"3;", b"; ", b";\n", b"x =", b" = ", b"= 3", b"let x = 3;", b'"),', b'";',
    b'"\xc3', b'\xa9"', '"é'.encode(), 'é"'.encode(), '"€";'.encode(), b"\\", b"\\\"",
    b"1+", b"x/", b"/y", b"a==b", b"if(", b"do\n", b"then\n", b"!", b"#",
]

CASES = [
    Case(
        "json",
        grammar_text("json"),
        tuple(_JSON_SPECIFIC),
        b'{}[],:"0123456789.-+eEtrunlfas \n\\',
        seed=1001,
    ),
    Case(
        "arith",
        grammar_text("arith"),
        tuple(_ARITH_SPECIFIC),
        b"0123456789.+-*/()xyab_ \n",
        seed=2002,
    ),
    Case(
        "keywords",
        grammar_text("keywords"),
        tuple(_KEYWORD_SPECIFIC),
        b'iftheneldowhpr=;<+/*()"xyz09 \n',
        seed=3003,
    ),
]
CASE_BY_NAME = {c.name: c for c in CASES}


def build_tokens(case: Case) -> list[Optional[bytes]]:
    """Token id -> bytes: EOS, a special token, then the pieces (deduplicated, in order)."""
    rng = random.Random(case.seed)
    randoms = [
        bytes(rng.choice(case.alphabet) for _ in range(rng.randint(2, 4))) for _ in range(40)
    ]
    pieces: list[bytes] = []
    seen: set[bytes] = set()
    for p in [*case.specific, *_WHITESPACE, *_DIGITS, *_LETTERS, *_UTF8, *randoms]:
        if p not in seen:
            seen.add(p)
            pieces.append(p)
    return [None, None, *pieces]


def is_multi_terminal(piece: bytes) -> bool:
    """Heuristic for the biased walks: a token that likely spans several terminals."""
    punct = set(b'{}[],:()+-*/=;<"')
    kinds = [b in punct for b in piece]
    return len(piece) > 1 and any(kinds) and (not all(kinds) or len(set(piece)) > 1)


# ----------------------------------------------------------------------------------------------
# Per-grammar setup (built once per session)


@dataclass
class Setup:
    case: Case
    tokens: list[Optional[bytes]]
    vocab_size: int
    masker: gg.Masker
    ref: ReferenceChecker
    lark: Lark
    favoured: frozenset[int]  # ids the biased walks prefer: grammar pieces, multi-terminal, partial UTF-8


@functools.lru_cache(maxsize=None)
def setup(name: str) -> Setup:
    case = CASE_BY_NAME[name]
    tokens = build_tokens(case)
    vocab_size = len(tokens) + PAD_IDS
    vocab = gg.Vocabulary.from_token_bytes(tokens, eos_token_ids=[EOS_ID], vocab_size=vocab_size)
    masker = gg.Masker(gg.compile(gg.Grammar(case.text), vocab))
    favoured = frozenset(
        i
        for i, t in enumerate(tokens)
        if t is not None
        and (t in case.specific or is_multi_terminal(t) or _has_partial_char(t))
    )
    return Setup(
        case, tokens, vocab_size, masker, ReferenceChecker(case.text),
        Lark(case.text, parser="lalr", lexer="basic"), favoured,
    )


def _has_partial_char(piece: bytes) -> bool:
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


# ----------------------------------------------------------------------------------------------
# Comparison


def check_step(s: Setup, state: gg.State, prefix: bytes, history: list[int]) -> np.ndarray:
    """Assert the engine's mask equals the reference's at ``prefix``; return the mask."""
    got = engine_bits(s.masker.mask(state), s.vocab_size)
    want = reference_bits(s, prefix)
    diff = np.nonzero(got != want)[0]
    if len(diff):
        lines = [
            f"  token {describe(s, int(t))}: engine={bool(got[t])} reference={bool(want[t])}"
            for t in diff[:12]
        ]
        pytest.fail(
            f"[{s.case.name}] mask differs from the reference after prefix {prefix!r}\n"
            f"  (token ids walked: {history})\n"
            f"  {len(diff)} differing token(s), first ones:\n" + "\n".join(lines)
        )
    assert s.masker.is_complete(state) == want[EOS_ID], f"is_complete disagrees at {prefix!r}"
    return got


# ----------------------------------------------------------------------------------------------
# Walks


def walk(
    s: Setup, rng: random.Random, max_steps: int, biased: bool, script: Sequence[int] = ()
) -> tuple[bytes, bool]:
    """Follow ``script``, then walk randomly up to ``max_steps`` tokens in all, comparing the
    mask with the reference at every step. Returns (output, whether it ended with EOS).

    EOS is taken with probability 0.3 when allowed, but only after ``min_steps`` (drawn per
    walk) so that walks also reach deep into grammars whose empty output is complete.
    """
    m = s.masker
    min_steps = rng.randint(len(script), max(len(script), max_steps // 2))
    state = m.initial_state()
    prefix = b""
    history: list[int] = []
    for step in range(max_steps):
        allowed = check_step(s, state, prefix, history)
        assert s.ref.viable(prefix), f"walk reached a non-viable prefix {prefix!r}"
        assert allowed.any(), f"[{s.case.name}] empty mask at viable prefix {prefix!r}"
        assert not allowed[SPECIAL_ID] and not allowed[len(s.tokens) :].any()

        # advance() agrees with the mask: disallowed tokens (always the special ones) raise,
        # allowed ones do not. Every token on some steps, a sample on the others.
        if step % ADVANCE_ALL_EVERY == 0:
            probes = set(range(s.vocab_size))
        else:
            probes = {SPECIAL_ID, len(s.tokens), *rng.sample(range(s.vocab_size), 6)}
            if not allowed[EOS_ID]:
                probes.add(EOS_ID)
        probe(m, state, allowed, probes)

        if step < len(script):
            tok = script[step]
            assert allowed[tok], (
                f"[{s.case.name}] token {describe(s, tok)} of a valid program blocked at {prefix!r}"
            )
        else:
            choices = [t for t in np.nonzero(allowed)[0].tolist() if t != EOS_ID]
            if allowed[EOS_ID] and (not choices or (step >= min_steps and rng.random() < 0.3)):
                finish(s, state, prefix, history)
                return prefix, True
            if biased:
                favoured = [t for t in choices if t in s.favoured]
                if favoured and rng.random() < 0.7:
                    choices = favoured
            tok = rng.choice(choices)
        state = m.advance(state, tok)
        prefix += s.tokens[tok]
        history.append(tok)
    allowed = check_step(s, state, prefix, history)  # the last prefix is compared too
    if len(script) == max_steps and allowed[EOS_ID]:
        finish(s, state, prefix, history)
        return prefix, True
    return prefix, False


def finish(s: Setup, state: gg.State, prefix: bytes, history: list[int]) -> None:
    m = s.masker
    done = m.advance(state, EOS_ID)
    assert not engine_bits(m.mask(done), s.vocab_size).any(), "mask after EOS must be empty"
    with pytest.raises(gg.TokenRejectedError):
        m.advance(done, EOS_ID)
    try:
        s.lark.parse(prefix.decode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - report any Lark failure with the prefix
        pytest.fail(
            f"[{s.case.name}] EOS taken after {prefix!r} (ids {history}) but Lark rejects it: {exc}"
        )


WALKS = 30
BIASED_WALKS = 15
MAX_STEPS = 60
ADVANCE_ALL_EVERY = 8

# Valid programs (they parse with Lark): replayed with random tokenizations, then cut at random
# points and continued randomly, so walks also start from deep parser and lexer states.
PROGRAMS = {
    "json": [
        '{"a": [1, -2.5e+3, true, null, "é€"], "b": {"c": "", "d": [[], {}]}}',
        '[{"x":{}}, [0.5, 12, -7E-1], "日本😀", false]',
        "[]",
    ],
    "arith": ["-(a + 1.5) * -b / c - 2", "((x1*(y - 3.25))/-(-_tmp))", "x"],
    "keywords": [
        'if x then let y = "é€"; // c\n print y + 1; else z end',
        'while a < 3 do /* é */ print "a\\"; let b = (a + 2) / 3; iffy end ends',
        "",
    ],
}


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_random_walks_match_reference(name: str) -> None:
    s = setup(name)
    rng = random.Random(s.case.seed)
    for _ in range(WALKS):
        walk(s, rng, rng.randint(MAX_STEPS // 2, MAX_STEPS), biased=False)


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_biased_walks_match_reference(name: str) -> None:
    """Walks that prefer keywords and punctuation, tokens spanning several terminals, and
    tokens ending inside a character."""
    s = setup(name)
    rng = random.Random(s.case.seed + 1)
    for _ in range(BIASED_WALKS):
        walk(s, rng, MAX_STEPS, biased=True)


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_program_walks_match_reference(name: str) -> None:
    """Valid programs, tokenized at random, are never blocked and end with EOS allowed;
    walks cut at a random point of them and continued at random match the reference too."""
    s = setup(name)
    rng = random.Random(s.case.seed + 2)
    for text in PROGRAMS[name]:
        s.lark.parse(text)  # the fixture itself is valid
        data = text.encode()
        for _ in range(2):
            ids = spell(s.tokens, data, rng)
            out, ended = walk(s, rng, len(ids), biased=False, script=ids)
            assert out == data and ended, f"[{name}] EOS not allowed after the valid program {data!r}"
            cut = rng.randint(0, len(ids))
            walk(s, rng, cut + rng.randint(5, 25), biased=rng.random() < 0.5, script=ids[:cut])
