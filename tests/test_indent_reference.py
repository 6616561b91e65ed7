"""The engine against the reference checker on indentation and on lexing with backtracking.

``Masker.mask`` must equal ``tests/reference.py`` bit for bit (token ``t`` allowed exactly when
``prefix + bytes(t)`` is viable, EOS exactly when ``prefix`` is complete) at every step of
seeded random walks over:

* a small indentation grammar with ``gg.Indenter`` (``_NL``/``_INDENT``/``_DEDENT``, calls with
  parenthesised arguments that span lines, an ignored inline whitespace, a ``//`` comment inside
  the newline terminal, a small ``max_column`` so the limit is reached), and one whose
  newline terminal also takes a raw docstring (``"\\n  r"`` alive, ``"\\n  return"`` split), and
* grammars that need backtracking but no indenter (``"a"``, ``/ab+c/``, ``"b"``; a number with
  an exponent next to names), and strings whose completeness depends on the character after
  them (``/"(?!"").*?"/``, with and without a ``\"\"\"...\"\"\"`` string).

Each walk is compared at every step; ``advance`` agrees with the mask on a sample of tokens;
every output that ends with EOS parses with Lark (with Lark's own ``Indenter`` for the first).
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
from lark_indenter import lark_indenter
from reference import ReferenceChecker

import greatgramma as gg

MAX_COLUMN = 12

INDENTED = grammar_text("indented")

# The motivating case of backtracking: the newline terminal also takes a raw docstring, so
# "\n  r" is alive (a prefix of "\n  r'''...'''") but "\n  return" lexes as _NL("\n  ") RETURN.
DOCSTRING = r"""
start: (_NL | stmt)*
stmt: "return" NAME? _NL | NAME _NL | "if" NAME ":" suite
suite: _NL _INDENT stmt+ _DEDENT
NAME: /[a-z]+/
_NL: (/(\r?\n[\t ]*)+/ | /r'''[^']*'''/)+
%ignore " "
%declare _INDENT _DEDENT
"""

# Backtracking without an indenter: "abba" lexes as A B B + "a" (two bytes backtracked), "ab"
# may still end as A B although ABC is not accepted first.
SHORT_LONG = grammar_text("short_long")
# "1e+x" lexes as NUMBER("1") NAME("e") PLUS NAME("x").
QUANTITY = grammar_text("quantity")

# A negative lookahead decides completeness from the character after the lexeme: '""' is a
# STRING before "x" or the end, not before '"' (where LONG may take over, if present).
GUARDED_SHORT = grammar_text("guarded_short")
GUARDED = grammar_text("guarded")


# ----------------------------------------------------------------------------------------------
# Tokenizers: id 0 = EOS, id 1 = a special token, then byte pieces

_INDENT_PIECES = [
    # single bytes of the grammar's alphabet, and a few it never takes
    *[bytes([c]) for c in b"abcdefginotxyz"], b"(", b")", b",", b":", b"/", b" ", b"\t", b"\n", b"\r",
    b"!", b"#", b"A",
    # whitespace and newlines with indentation (columns 2, 4, 8, 10, 11, 12 and a tab)
    b"  ", b"    ", b"   ", b"\n  ", b"\n    ", b"\n      ", b"\n        ", b"\n          ",
    b"           ", b"\n\t", b"\n\t    ", b"\t ", b" \t", b"\n\n", b"\r\n", b"\r\n  ", b"\n \n",
    b"\n  \n  ", b"  \n",
    # keywords, names, punctuation, pieces spanning several terminals
    b"if", b"if ", b" if", b"iff", b"fi", b"ab", b"foo", b"bar", b"if a:", b"if x:\n", b":\n",
    b":\n  ", b":\n    ", b"\nif", b"f(", b"(a", b"a)", b"a,", b", ", b",\n", b",\n  ", b"()",
    b"):\n", b")\n", b"\n)", b"))", b"((", b"(\n", b"a/b", b"x/", b"/y", b" / ", b"a\n", b"b\n",
    b"\n  b", b"\n    c", b"\nd\n",
    # comments inside the newline terminal, and "/" that may or may not start one
    b"//", b"// c", b" //", b"//c\n", b"\n//", b"\n  //", b"// a b\n", b"\n /", b"/\n",
    # UTF-8: only comments take it
    "é".encode(), b"\xc3", b"\xa9", "// é\n".encode(), b"\xff",
]
_DOCSTRING_PIECES = [
    *[bytes([c]) for c in b"abcdeinortuxyz :'\n\t"], b"\n  ", b"\n    ", b"  ", b"return", b"ret", b"urn",
    b"r'", b"''", b"'" * 3, b"r" + b"'" * 3, b"\n  r", b"\n    re", b"if ", b":\n", b":\n  ", b"x\n",
    b"'" * 3 + b"\n", b"\n\t", b"\n        ", b" r", b"re", b"\nr", b"'" * 3 + b"\n  ", b"\n  return", b"rx",
]
_BACKTRACK_PIECES = [
    b"a", b"b", b"c", b"x", b"e", b"1", b"2", b"+", b"-", b" ", b"z", b"0",
    b"ab", b"bb", b"abb", b"bc", b"abc", b"bbc", b"xa", b"ba", b"aa", b"abba", b"xab",
    b"1e", b"e+", b"+x", b"1e+", b"+2", b"e-", b"1e-", b"12", b"e1", b" +", b"+ ", b"x+",
    b"1ex", b"ee", b"10e", b"2e+x", b"+1e", b"e+2",
]

_GUARD_PIECES = [
    b'"', b"a", b"b", b"x", b" ", b"\n", b'""', b'"""', b'"a', b'a"', b'"a"', b'""x', b'"" ',
    b' "', b'x"', b'""""', b'" "', b'"x""', b'ab', b' ""', b'"""a', b'a"""', "é".encode(), b"\xc3",
]


def token_table(pieces: Sequence[bytes]) -> list[Optional[bytes]]:
    seen: set[bytes] = set()
    out: list[Optional[bytes]] = [None, None]
    for p in pieces:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


# ----------------------------------------------------------------------------------------------
# Setups


@dataclass
class Setup:
    name: str
    tokens: list[Optional[bytes]]
    vocab_size: int
    masker: gg.Masker
    ref: ReferenceChecker
    lark: Lark


def _masker(grammar: gg.Grammar, tokens: list[Optional[bytes]]) -> tuple[gg.Masker, int]:
    vocab_size = len(tokens) + PAD_IDS
    vocab = gg.Vocabulary.from_token_bytes(tokens, eos_token_ids=[EOS_ID], vocab_size=vocab_size)
    return gg.Masker(gg.compile(grammar, vocab)), vocab_size


@functools.lru_cache(maxsize=None)
def setup(name: str) -> Setup:
    if name in ("indent", "docstring"):
        if not hasattr(gg, "Indenter"):
            pytest.skip("gg.Indenter is not available in this build of greatgramma")
        text, brackets, pieces = {
            "indent": (INDENTED, ("LPAR", "RPAR"), _INDENT_PIECES),
            "docstring": (DOCSTRING, (), _DOCSTRING_PIECES),
        }[name]
        opens, closes = brackets[:1], brackets[1:]
        indenter = gg.Indenter(
            nl="_NL", indent="_INDENT", dedent="_DEDENT", open=opens, close=closes,
            tab_len=8, max_column=MAX_COLUMN,
        )  # fmt: skip
        tokens = token_table(pieces)
        masker, vocab_size = _masker(gg.Grammar(text, indenter=indenter), tokens)
        ref = ReferenceChecker(
            text, indenter=dict(nl="_NL", open=opens, close=closes, tab_len=8, max_column=MAX_COLUMN)
        )
        lark = Lark(text, parser="lalr", lexer="basic", postlex=lark_indenter("_NL", opens, closes, tab_len=8))
        return Setup(name, tokens, vocab_size, masker, ref, lark)
    text = {"short_long": SHORT_LONG, "quantity": QUANTITY, "guarded": GUARDED, "guarded_short": GUARDED_SHORT}[name]
    tokens = token_table(_GUARD_PIECES if name.startswith("guarded") else _BACKTRACK_PIECES)
    masker, vocab_size = _masker(gg.Grammar(text), tokens)
    return Setup(name, tokens, vocab_size, masker, ReferenceChecker(text), Lark(text, parser="lalr", lexer="basic"))


# ----------------------------------------------------------------------------------------------
# Comparison


def check_step(s: Setup, state: gg.State, prefix: bytes) -> np.ndarray:
    got = engine_bits(s.masker.mask(state), s.vocab_size)
    want = reference_bits(s, prefix)
    diff = np.nonzero(got != want)[0]
    if len(diff):
        lines = [f"  token {describe(s, int(t))}: engine={bool(got[t])} reference={bool(want[t])}" for t in diff[:12]]
        pytest.fail(
            f"[{s.name}] mask differs from the reference after prefix {prefix!r}\n"
            f"  {len(diff)} differing token(s), first ones:\n" + "\n".join(lines)
        )
    assert s.masker.is_complete(state) == want[EOS_ID], f"[{s.name}] is_complete disagrees at {prefix!r}"
    return got


def lark_parses(s: Setup, text: bytes) -> bool:
    try:
        s.lark.parse(text.decode("utf-8"))
    except Exception:  # noqa: BLE001 - Lark's Indenter fails with IndexError/AssertionError too
        return False
    return True


def walk(s: Setup, rng: random.Random, max_steps: int, favoured: frozenset[int], script: Sequence[int] = ()) -> bytes:
    """Follow ``script``, then pick allowed tokens at random (``favoured`` ones more often),
    comparing the mask with the reference at every step. Returns the output."""
    m = s.masker
    state, prefix = m.initial_state(), b""
    min_steps = rng.randint(len(script), max(len(script), max_steps // 2))
    for step in range(max_steps):
        allowed = check_step(s, state, prefix)
        assert not allowed[SPECIAL_ID] and not allowed[len(s.tokens) :].any()
        probe(m, state, allowed, {SPECIAL_ID, *rng.sample(range(s.vocab_size), 4)})
        if step < len(script):
            tok = script[step]
            assert allowed[tok], f"[{s.name}] token {describe(s, tok)} of a valid text blocked at {prefix!r}"
        else:
            choices = [t for t in np.nonzero(allowed)[0].tolist() if t != EOS_ID]
            if allowed[EOS_ID] and (not choices or (step >= min_steps and rng.random() < 0.3)):
                done = m.advance(state, EOS_ID)
                assert not engine_bits(m.mask(done), s.vocab_size).any(), "mask after EOS must be empty"
                assert lark_parses(s, prefix), f"[{s.name}] EOS taken after {prefix!r} but Lark rejects it"
                return prefix
            if not choices:
                return prefix  # a dead end (one lexeme of lookahead): both sides agree on it
            preferred = [t for t in choices if t in favoured]
            if preferred and rng.random() < 0.6:
                choices = preferred
            tok = rng.choice(choices)
        state = m.advance(state, tok)
        prefix += s.tokens[tok]  # type: ignore[operator]
    check_step(s, state, prefix)
    return prefix


def favoured_ids(s: Setup, pred) -> frozenset[int]:
    return frozenset(i for i, t in enumerate(s.tokens) if t is not None and pred(t))


# ----------------------------------------------------------------------------------------------
# Indentation

INDENT_PROGRAMS = [
    b"if a:\n  b\n  if c:\n    f(a,\n b)\n  d\ne\n",
    b"if a:\n\tif b:\n\t   c\nf(g(a / b), c) // done\n",
    b"a\n\nif x:\n  // note\n  y\n",
    b"f(a // c\n   , b\n)\nif a:\r\n    b\n",
    b"if a:\n  if b:\n    if c:\n      d\nfoo\n",
]


def test_indent_programs_walk_and_match_the_reference() -> None:
    s = setup("indent")
    rng = random.Random(41)
    shapes = favoured_ids(s, lambda t: b"\n" in t or b":" in t or t in (b"if", b"if ", b"(", b")"))
    for text in INDENT_PROGRAMS:
        assert s.ref.complete(text) and lark_parses(s, text), text
        ids = spell(s.tokens, text, rng)
        out = walk(s, rng, len(ids), shapes, script=ids)  # ends with the EOS check
        assert out == text, (out, text)
        cut = rng.randint(0, len(ids))
        walk(s, rng, cut + 20, shapes, script=ids[:cut])


def test_indent_random_walks_match_the_reference() -> None:
    s = setup("indent")
    rng = random.Random(42)
    # Walks that like newlines, indentation, block openers and brackets reach deep blocks.
    shapes = favoured_ids(
        s, lambda t: (b"\n" in t or b":" in t or b"(" in t or b")" in t or t.startswith(b"if")) and b"//" not in t
    )
    for _ in range(14):
        walk(s, rng, rng.randint(20, 40), shapes)
    for _ in range(6):
        walk(s, rng, rng.randint(15, 30), frozenset())


def test_indent_column_limit_and_edges() -> None:
    """Prefixes that exercise the column limit, bad dedents, brackets and comments, each
    compared in full (the walk starts from the scripted text and goes on a few steps)."""
    s = setup("indent")
    rng = random.Random(43)
    for text in [
        b"if a:\n          ",  # column 10
        b"if a:\n           ",  # column 11, the last allowed
        b"if a:\n\t",
        b"if a:\n\t    ",  # column 12: only a further newline keeps it
        b"if a:\n  if b:\n    c\n ",  # a dedent in progress
        b"if a:\n  b\n  // c",
        b"f(a,\n            ",  # inside brackets: no column at all
        b"a //",
        b"a\n /",
        b"f(a\n /",
        b"if a:\n  b\n  c\n\n",
    ]:
        ids = spell(s.tokens, text, rng)
        walk(s, rng, len(ids) + 6, frozenset(), script=ids)


# ----------------------------------------------------------------------------------------------
# Backtracking without an indenter

BACKTRACK_TEXTS = {
    "short_long": [b"ab", b"abb", b"xabbc", b"xab", b"abbbb", b"abbb"],  # at "abb": "a" is refused
    "quantity": [b"1e+x", b"1e+2", b"1e-", b"12e+x+2e", b"1ex", b"e+1e+2"],
    "guarded": [b'""x', b'"""a"""', b'"" ""', b'"a"""', b'""', b'""""'],
    "guarded_short": [b'""x', b'"" "', b'"a"""', b'""', b'"a" ""'],  # at '""': '"' is refused
}
BACKTRACK_GRAMMARS = list(BACKTRACK_TEXTS)


@pytest.mark.parametrize("name", BACKTRACK_GRAMMARS)
def test_backtracking_grammar_matches_the_reference(name: str) -> None:
    s = setup(name)
    rng = random.Random(7 + BACKTRACK_GRAMMARS.index(name))
    for text in BACKTRACK_TEXTS[name]:  # scripted prefixes, then random continuations
        ids = spell(s.tokens, text, rng)
        walk(s, rng, len(ids) + 8, frozenset(), script=ids)
    for _ in range(16):
        walk(s, rng, rng.randint(8, 25), frozenset())


# ----------------------------------------------------------------------------------------------
# Backtracking inside the newline terminal, with the indenter

DOCSTRING_PROGRAMS = [
    b"if x:\n  return y\n  r'''doc'''\n  return\nz\n",
    b"if x:\n\tr\n\trx\n        re\n",  # "\n\tr" backtracks before a NAME; a tab is 8 spaces
    b"r'''a\n  b'''\nx\n",
]


def test_docstring_newlines_match_the_reference() -> None:
    s = setup("docstring")
    rng = random.Random(44)
    assert s.ref.lex(b"if x:\n  return") == (["IF", "NAME", "COLON", "_NL", "_INDENT"], b"return")
    assert s.ref.viable(b"if x:\n  r")
    for text in DOCSTRING_PROGRAMS:
        assert s.ref.complete(text) and lark_parses(s, text), text
        ids = spell(s.tokens, text, rng)
        assert walk(s, rng, len(ids), frozenset(), script=ids) == text
        cut = rng.randint(0, len(ids))
        walk(s, rng, cut + 12, frozenset(), script=ids[:cut])
    shapes = favoured_ids(s, lambda t: b"\n" in t or b"r" in t or b"'" in t)
    for _ in range(8):
        walk(s, rng, rng.randint(10, 30), shapes)
