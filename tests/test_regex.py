"""greatgramma/regex.py and the terminal DFAs built from it, against Python's ``re``.

Direct tests of the regex front end (languages of plain patterns, refused constructs), then
lazy and lookbehind patterns (Lark's ``common.ESCAPED_STRING`` and ``common.C_COMMENT`` among
them): the lexeme a single-terminal lexer cuts from a text ends where ``re.match`` ends it (the
longest match for a pattern without a lazy part). Last, a grammar importing those terminals
masks like tests/reference.py.
"""

from __future__ import annotations

import functools
import random
import re
from types import SimpleNamespace

import numpy as np
import pytest
import reference
from helpers import EOS_ID, describe, engine_bits, grammar_path, reference_bits, single_terminal_lexer
from helpers import dfa_boundary as lexeme_end  # where maximal munch ends the first lexeme
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark

import greatgramma as gg
from greatgramma.regex import ByteNFA, class_ranges, compile_regex

try:  # Python >= 3.11
    from re import _constants as C
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as C  # type: ignore[no-redef]


def lark_common(name: str) -> str:
    """The regex Lark itself produces for ``%import common.<name>``."""
    parser = Lark(f"start: {name}\n%import common.{name}\n", parser="lalr", lexer="basic")
    (term,) = [t for t in parser.terminals if t.name == name]
    return term.pattern.to_regexp()


# ---------------------------------------------------------------------------------------------
# The regex front end on its own: byte-level languages of plain patterns


def nfa_fullmatch(nfa: ByteNFA, data: bytes) -> bool:
    """Set simulation of a plain NFA (no lookaround): does it accept exactly ``data``?"""

    def close(states: set[int]) -> set[int]:
        stack = list(states)
        while stack:
            for t in nfa.eps[stack.pop()]:
                if t not in states:
                    states.add(t)
                    stack.append(t)
        return states

    assert not nfa.ordered and not nfa.guards
    cur = close({nfa.start})
    for b in data:
        cur = close({t for s in cur for mask, t in nfa.edges[s] if mask >> b & 1})
    return nfa.final in cur


PLAIN = [
    r"\w+",
    r"\d\s\S",
    r"(?i)k[a-c]+",  # also the Kelvin sign K
    r"(?i)ß",  # and capital sharp s
    r"[^a-c\n]{2,3}",
    r"(?s).a",
    r".a",
    r"(ab|a)c?",
    r"[é-ü]+€?",
    r"(?a)\w+",
]
PLAIN_ALPHABET = list("abckK\u212a\u00df\u1e9e\u00e9\u00fc\u20ac1\u0663 \n\t_-")


@pytest.mark.parametrize("pattern", PLAIN)
@settings(max_examples=150, deadline=None)
@given(text=st.text(st.sampled_from(PLAIN_ALPHABET), max_size=5))
def test_plain_nfa_language_equals_re_fullmatch(pattern: str, text: str) -> None:
    """Classes, Unicode categories, case folding, (?s), repeats, alternation, over UTF-8 bytes."""
    nfa = compile_regex("T", pattern)
    data = text.encode()
    assert nfa_fullmatch(nfa, data) == bool(re.fullmatch(pattern, text)), (pattern, text)
    if data and ord(text[-1]) >= 0x80:  # a partial character is never a whole match
        assert not nfa_fullmatch(nfa, data[:-1])


@pytest.mark.parametrize("pattern", [r"[^a-c\n]{2,3}", r"(?:[^\"\\]|\\u[0-9a-f]{4}|é){0,40}", r"(a|bc){3,}", r"(?:x(?![0-9])){2,4}"])
def test_repeat_copies_are_the_body_built_again(monkeypatch, pattern: str) -> None:
    """A bounded repeat builds its body once and clones it: the NFA is the one that building
    every copy anew gives, state for state (a body holding a lookahead guard is built anew)."""
    from greatgramma import regex

    cloned = compile_regex("T", pattern)
    monkeypatch.setattr(regex._Builder, "copies", lambda self, items, flags, tail, n: [self.seq(items, flags, tail) for _ in range(n)])
    built = compile_regex("T", pattern)
    assert (cloned.eps, cloned.edges, cloned.guard_eps, cloned.guards, cloned.start, cloned.final) == \
        (built.eps, built.edges, built.guard_eps, built.guards, built.start, built.final)


@pytest.mark.parametrize("pattern", [r"a(?!)|b", r"(?:a(?!))*c", r"x(?!)"])
def test_an_empty_negative_lookahead_fails_everywhere(pattern: str) -> None:
    """``(?!)`` (what an empty language is written as) matches nowhere: its path goes nowhere."""
    nfa = compile_regex("T", pattern)
    for text in ["", "a", "b", "c", "ac", "x"]:
        assert nfa_fullmatch(nfa, text.encode()) == bool(re.fullmatch(pattern, text)), (pattern, text)


def test_class_ranges_follow_python_semantics() -> None:
    def has(ranges, ch: str) -> bool:
        return any(lo <= ord(ch) <= hi for lo, hi in ranges)

    word = class_ranges(C.IN, [(C.CATEGORY, C.CATEGORY_WORD)], 0)
    assert has(word, "é") and has(word, "\u0663") and not has(word, "-")
    kelvin = class_ranges(C.LITERAL, ord("k"), re.IGNORECASE)
    assert has(kelvin, "K") and has(kelvin, "\u212a")
    assert not has(class_ranges(C.ANY, None, 0), "\n")
    assert has(class_ranges(C.ANY, None, re.DOTALL), "\n")
    assert not has(class_ranges(C.NOT_LITERAL, ord("a"), 0), "\ud800")  # surrogates have no UTF-8


def test_which_patterns_run_in_priority_order() -> None:
    """Lazy patterns run as ordered thread lists; lookbehinds become gates unless the literal
    before them decides them; python.lark's STRING (a lookahead) keeps the guarded plain NFA."""
    assert "(?<!" in lark_common("ESCAPED_STRING")  # what this file is about
    escaped = compile_regex("ESCAPED_STRING", lark_common("ESCAPED_STRING"))
    assert escaped.ordered and len(escaped.lookbehinds) == 1
    assert compile_regex("C_COMMENT", lark_common("C_COMMENT")).ordered
    behind_only = compile_regex("B", r'[ab"]+(?<!")')
    assert not behind_only.ordered and len(behind_only.lookbehinds) == 1
    python = {t.name: t.pattern for t in gg.Grammar.from_file(grammar_path("python")).terminals}
    long_string = compile_regex("COMMENT", python["COMMENT"])  # its LONG_STRING alternative
    assert long_string.ordered and not long_string.lookbehinds  # (?<!\\) right after a quote
    string = compile_regex("STRING", python["STRING"])
    assert not string.ordered and string.guards  # (?!"") then X*? S


_ATOMIC = "atomic group" if hasattr(C, "ATOMIC_GROUP") else "invalid regex"
_POSSESSIVE = "possessive repeat" if hasattr(C, "POSSESSIVE_REPEAT") else "invalid regex"


@pytest.mark.parametrize(
    "pattern,construct",
    [
        (r"a(?=b)", "lookahead"),
        (r"a.*?(?=b)", "a lookahead in a pattern with a lazy quantifier or lookbehind"),
        (r"(?<!x)a", "lookbehind that can look before the start of the lexeme"),
        (r"a(?<!xa)b", "lookbehind that can look before the start of the lexeme"),
        (r"ab+(?<!(?=b)b)", "a lookaround or lazy quantifier inside a lookbehind"),
        (r"a(?:b?)*?c", "a repeat of something that can match empty"),
        (r"a(?:b|)+?c", "a repeat of something that can match empty"),
        (r"^a", "anchor"),
        (r"a\b", "word boundary"),
        (r"(a)\1", "backreference"),
        (r"(a)?(?(1)b|c)", "conditional group"),
        (r"a{1001}", "repeat count above 1000"),
        (r"a.*?b{1001}", "repeat count above 1000"),
        (r"(?>ab)c", _ATOMIC),
        (r"a*+b", _POSSESSIVE),
        (r"a(", "invalid regex"),
    ],
)
def test_refused_constructs_name_the_terminal(pattern: str, construct: str) -> None:
    with pytest.raises(gg.UnsupportedRegexError) as err:
        compile_regex("MYTERM", pattern)
    assert err.value.terminal == "MYTERM"
    assert "MYTERM" in str(err.value) and construct in str(err.value), str(err.value)


def test_grammar_with_refused_terminal_names_it() -> None:
    vocab = gg.Vocabulary.from_token_bytes([None, b"a", b"b"], eos_token_ids=[0])
    with pytest.raises(gg.UnsupportedRegexError, match="terminal LOOKS: .*lookahead"):
        gg.compile(gg.Grammar('start: LOOKS\nLOOKS: /a.*?(?=b)/\n'), vocab)


# ---------------------------------------------------------------------------------------------
# Lazy repeats and lookbehinds: the lexeme ends where re.match ends it


ESCAPED_STRING = lark_common("ESCAPED_STRING")
C_COMMENT = lark_common("C_COMMENT")
# Texts are runs of a few pieces that matter to the pattern (so that, e.g., a backslash right
# before a quote is common), with a newline and a two-byte character among them.
QUOTED = ['"', "\\", "\\\\", "a", "\n", "é"]
COMMENTED = ["*", "/", "*/", "/*", "a", "\n", "é"]
LETTERS = ["a", "b", '"', "*", "\n", "é"]
LOOKBEHIND_AND_LAZY = [  # (label, pattern, how its lexemes begin, pieces of texts)
    ("ESCAPED_STRING", ESCAPED_STRING, '"', QUOTED),
    ("C_COMMENT", C_COMMENT, "/*", COMMENTED),
    ("single_quoted", r"'.*?(?<!\\)(\\\\)*?'", "'", [*QUOTED, "'"]),
    ("escaped_is", r'(?is)a?".*?(?<!\\)(\\\\)*?"', 'a"', QUOTED),
    ("escape_alternation", r'"(?:\\.|[^"\\])*?"', '"', QUOTED),
    ("lazy_then_greedy", r"a.*?b+", "a", LETTERS),
    ("lazy_then_optional", r"\*+?/?", "*", COMMENTED),
    ("lazy_counted", r"/\*{1,3}?(.|\n)*?\*/", "/**", COMMENTED),
    ("positive_lookbehind", r"<.+?(?<=\*)>", "<", ["<", ">", "*", "*>", "a", "\n", "é"]),
    ("greedy_then_lookbehind", r'[ab"]+(?<!")', "a", LETTERS),
    ("non_ascii_lookbehind", r"\*.*?(?<!é)/", "*", ["é", "/", "é/", "a", "*", "\n"]),
    ("two_char_lookbehind", r"a.+?(?<!\*/)b", "a", [*COMMENTED, "b"]),
    ("prefix_alternation_then_lazy", r"(?:x|x;ab).*?;", "x;", ["x", ";", "ab;", "a", "b", "é"]),  # re takes "x" first
    ("alternation_then_lookbehind", r"(?:a|ab)(?<!\*)", "a", LETTERS),  # no lazy part: the longest lexeme
]


def contract_end(pattern: str, text: str) -> int | None:
    """Where the first lexeme of ``text`` ends, in bytes, as tests/reference.py defines it: where
    ``re.match`` ends it for a lazy pattern, else the longest prefix in the pattern's language."""
    if reference._PatternAnalysis(pattern).lazy:
        m = re.match(pattern, text)
        return len(text[: m.end()].encode()) if m else None
    ends = [k for k in range(len(text), 0, -1) if re.fullmatch(pattern, text[:k])]
    return len(text[: ends[0]].encode()) if ends else None


@pytest.mark.parametrize("label,pattern,opener,pieces", LOOKBEHIND_AND_LAZY, ids=[p[0] for p in LOOKBEHIND_AND_LAZY])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_lexeme_end_equals_re_match(label: str, pattern: str, opener: str, pieces: list[str], data) -> None:
    """The DFA's language and the lexeme boundary are re.match's ("no match" included) for lazy
    patterns; without a lazy part the lexeme is the longest match, which re.match agrees with
    unless alternatives overlap (``(?:a|ab)``, the contract of tests/reference.py)."""
    head = data.draw(st.sampled_from([opener, opener, opener, *pieces]))
    text = head + "".join(data.draw(st.lists(st.sampled_from(pieces), max_size=10)))
    lexer = single_terminal_lexer(pattern)
    raw = text.encode()
    expected = contract_end(pattern, text)
    assert lexeme_end(lexer, raw) == expected, (label, text)
    whole = lexer.feed(0, raw)
    assert (whole is not None and lexer.finish(whole[1]) == [0] and not whole[0]) == (expected == len(raw))
    if expected is not None:  # the engine's own transducer takes that lexeme as one terminal
        ran = lexer.feed(0, raw[:expected])
        assert ran is not None and ran[0] == [] and lexer.finish(ran[1]) == [0], (label, text)


@pytest.mark.parametrize(
    "pattern,text,end",
    [
        (ESCAPED_STRING, '"a\\"b" x"', 6),
        (ESCAPED_STRING, '"\\\\" x"', 4),
        (ESCAPED_STRING, '"\\\\\\"" x"', 6),
        (ESCAPED_STRING, '"\\"', None),
        (ESCAPED_STRING, '"a\nb"', None),
        (ESCAPED_STRING, '"é" "', 4),
        (ESCAPED_STRING, '""', 2),
        (C_COMMENT, "/* a\n * b **/ c */", 13),
        (C_COMMENT, "/*/ x", None),
        (C_COMMENT, "/**/", 4),
        (r"(?:x|x;ab).*?;", "x;ab;", 2),  # the first alternative wins in re, though the second runs longer
        (r"(?:a|ab)(?<!\*)", "ab", 2),  # no lazy part: the longest lexeme (re.match stops at 1)
    ],
)
def test_lexeme_end_examples(pattern: str, text: str, end: int | None) -> None:
    assert lexeme_end(single_terminal_lexer(pattern), text.encode()) == end


# ---------------------------------------------------------------------------------------------
# A grammar importing them: masks equal the reference checker's

LARK_JSON = r"""
?start: value
?value: object
      | array
      | string
      | SIGNED_NUMBER      -> number
      | "true"             -> true
      | "false"            -> false
      | "null"             -> null
array  : "[" [value ("," value)*] "]"
object : "{" [pair ("," pair)*] "}"
pair   : string ":" value
string : ESCAPED_STRING

%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%import common.C_COMMENT
%ignore WS
%ignore C_COMMENT
"""

_SINGLE = [bytes([b]) for b in b'{}[],:"\\ \n\t-+.eE0123456789abcknrtulfsxy/*\xc3\xa9\xe2\x82\xac']
_PIECES = [
    b'"a"', b'\\"', b"\\\\", b'": ', b'", "', b'"\\', b'\\"}', b'"]', b"null", b"true", b"false",
    b"-1.5e", b"e+3", b"1,", "é".encode(), "€".encode(), b"\xe2\x82", b'\\\\"', b'\\\\\\"', b'"\n', b"\xff",
    b"/*", b"*/", b" /* ", b"**/", b"*/\n",
]
DOCUMENTS = [
    r'{"a\"b": [1, -2.5e3, "c\\", "\\\"x"], "k": null}',
    r'["\\\\", "\"", "", "a\\\"", true]',
    '{"é": "€\\"é\\\\", "x": {"y": [false, "\\\\\\\\\\""]}}',
    '[1 /* a "b\\" */, "c/*"/**/, -2 /* * / **/]',
]


@functools.lru_cache(maxsize=None)
def json_setup() -> SimpleNamespace:
    tokens = [None, *dict.fromkeys(_SINGLE + _PIECES)]  # id 0 = EOS
    vocab = gg.Vocabulary.from_token_bytes(tokens, eos_token_ids=[EOS_ID])
    masker = gg.Masker(gg.compile(gg.Grammar(LARK_JSON), vocab))
    ref = reference.ReferenceChecker(LARK_JSON)
    return SimpleNamespace(tokens=tokens, vocab_size=len(tokens), masker=masker, ref=ref, name="lark-json")


def assert_mask_matches(s, state, prefix: bytes) -> np.ndarray:
    got = engine_bits(s.masker.mask(state), s.vocab_size)
    want = reference_bits(s, prefix)
    diff = np.nonzero(got != want)[0]
    assert not len(diff), f"mask differs after {prefix!r}: " + ", ".join(
        f"{describe(s, int(t))} engine={bool(got[t])}" for t in diff[:8]
    )
    return got


@pytest.mark.parametrize("document", DOCUMENTS)
def test_lark_json_masks_match_reference_along_a_document(document: str) -> None:
    """Byte by byte through strings with escaped quotes and backslash runs, and comments: same mask as the reference."""
    s = json_setup()
    data = document.encode()
    Lark(LARK_JSON, parser="lalr", lexer="basic").parse(document)  # the document is valid JSON for Lark
    state, index = s.masker.initial_state(), {t: i for i, t in enumerate(s.tokens)}
    for i in range(len(data)):
        assert_mask_matches(s, state, data[:i])
        state = s.masker.advance(state, index[data[i : i + 1]])
    assert assert_mask_matches(s, state, data)[EOS_ID]


def test_lark_json_masks_match_reference_on_random_walks() -> None:
    """Seeded walks that prefer quotes, backslashes and comment delimiters; EOS ends a walk once allowed (sometimes)."""
    s = json_setup()
    favoured = {i for i, t in enumerate(s.tokens) if t and (b'"' in t or b"\\" in t or b"*" in t)}
    rng = random.Random(11)
    for _ in range(6):
        state, prefix = s.masker.initial_state(), b""
        for _ in range(25):
            allowed = assert_mask_matches(s, state, prefix)
            choices = [t for t in np.nonzero(allowed)[0].tolist() if t != EOS_ID]
            if not choices or (allowed[EOS_ID] and rng.random() < 0.2):
                assert allowed[EOS_ID]
                break
            preferred = [t for t in choices if t in favoured]
            tok = rng.choice(preferred if preferred and rng.random() < 0.6 else choices)
            state, prefix = s.masker.advance(state, tok), prefix + s.tokens[tok]
