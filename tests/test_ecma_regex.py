"""The regex front end: REGEX requests (Python syntax, full match) against ``re.fullmatch``, schema
``pattern``s (ECMA-262, a search) against ``re.search`` with ECMA's ASCII classes, CHOICE
requests, and the JSON-escaped spelling of character sets. Walked byte by byte through the masks."""

from __future__ import annotations

import json
import re
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_schema import accepts, byte_vocab

import greatgramma as gg
from greatgramma.frontends import ecma_regex as rx

REGEXES = [r"[a-c]+x?", r"(ab|a)*c", r"\d{2,4}", r"a.b", r"(?i)ab", r"[^a]b*", r"x*", r"\w+@\w+\.(com|org)", r"é+ß?"]
ALPHABET = "abcx0123 .@é\nßAB"


@lru_cache(maxsize=None)
def regex_masker(pattern: str) -> gg.Masker:
    return gg.Masker(gg.compile(gg.Grammar.from_regex(pattern), byte_vocab()))


@pytest.mark.parametrize("pattern", REGEXES)
@settings(max_examples=60, deadline=None)
@given(s=st.text(alphabet=ALPHABET, max_size=7))
def test_regex_request_is_fullmatch(pattern: str, s: str) -> None:
    assert accepts(regex_masker(pattern), s) == bool(re.fullmatch(pattern, s)), (pattern, s)


@pytest.mark.parametrize("pattern", ["a(?=b)", r"(a)\1", r"\bword", "a^b"])
def test_regex_refusals(pattern: str) -> None:
    with pytest.raises(gg.GrammarError):
        gg.Grammar.from_regex(pattern)


def test_choices() -> None:
    m = gg.Masker(gg.compile(gg.Grammar.from_choices(["yes", "no", "", "y\n"]), byte_vocab()))
    for s in ["yes", "no", "", "y\n"]:
        assert accepts(m, s)
    for s in ["ye", "yesno", "n", "y"]:
        assert not accepts(m, s)


@pytest.mark.parametrize("bad", ["yes", b"no", [], ["a", 1], [None]])
def test_choices_refuse_what_is_not_a_list_of_strings(bad) -> None:
    """A single string would otherwise be read as its characters."""
    with pytest.raises(TypeError, match="choices must be"):
        gg.Grammar.from_choices(bad)


PATTERNS = [r"^[a-z]+$", r"[0-9]", r"^\d{3}-\w+", r"ab|^c", r"x$", r"^\s*$", r"^(foo|ba+r)?\.$",
            # anchors inside: sre_parse moves a common ^ out of the alternatives; groups; never satisfied
            r"^$|^[a-c]+$", r"^([^,]|$)", r"(^a.+)|(^[bc0-9]+)", r"(a|^b)c$", r"(^|x)a", r"a($|-)", r"^$[ab]*$"]


@lru_cache(maxsize=None)
def pattern_masker(pattern: str) -> gg.Masker:
    schema = json.dumps({"type": "string", "pattern": pattern})
    return gg.Masker(gg.compile(gg.Grammar.from_json_schema(schema), byte_vocab()))


def ecma_search(pattern: str, s: str) -> bool:
    """ECMA semantics on these patterns: ASCII \\d \\w, and $ only at the very end."""
    return re.search(pattern.replace("$", r"\Z"), s, re.ASCII) is not None


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=60, deadline=None)
@given(s=st.text(alphabet="abcrfox09- .\t\n\u00e9\u0660", max_size=6))
def test_pattern_is_an_ecma_search(pattern: str, s: str) -> None:
    m = pattern_masker(pattern)
    text = json.dumps(s, ensure_ascii=False)
    assert accepts(m, text) == ecma_search(pattern, s), (pattern, text)


ANCHORED = [*PATTERNS[7:], r"/^[0-9]{2}$/", r"^(a|b$)c?", r"a|^b|c$", r"((^a)|b)(c|$)", r"x^", r"$x", r"^$|(^(?:\S+\s+){0,3}\S+$)",
            r"^[0-9a-f]{2}-([0-9a-f]-){1}[0-9a-f]{2}$|^[0-9a-f]{3}$"]


@pytest.mark.parametrize("pattern", ANCHORED)
@settings(max_examples=300, deadline=None)
@given(s=st.text(alphabet="abcx0129-, ./f\n", max_size=8))
def test_anchors_inside_a_pattern_keep_ecma_search_semantics(pattern: str, s: str) -> None:
    """^ and $ inside alternatives and groups: the pattern's language (the strings a search finds
    it in) is what Python's re.search finds with ECMA's $ (the very end only)."""
    assert (re.fullmatch(rx.raw_regex(rx.parse_ecma(pattern)), s, re.S) is not None) == ecma_search(pattern, s), (pattern, s)


def test_anchors_inside_a_repeat_are_refused_and_unmatchable_ones_match_nothing() -> None:
    with pytest.raises(rx.RegexError, match="anchor"):
        rx.parse_ecma(r"(^a)*b")
    assert rx.is_empty_language(rx.parse_ecma(r"/^[0-9]{2}$/"))  # ^ after a character: no text has it
    with pytest.raises(gg.GrammarError, match="no instance is valid"):
        gg.Grammar.from_json_schema({"type": "string", "pattern": "/^[0-9]{2}$/"})


_ECMA_SPACE = set("\t\n\x0b\x0c\r \xa0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff") | {chr(c) for c in range(0x2000, 0x200B)}
_ECMA_ESCAPES = {"\\S": lambda c: c not in _ECMA_SPACE, "\\W": lambda c: not (c.isascii() and (c.isalnum() or c == "_")),
                 "\\D": lambda c: c not in "0123456789", "\\s": lambda c: c in _ECMA_SPACE}


@pytest.mark.parametrize("body", ["\\S", "a\\S", "^\\S", "\\S-x", "\\Wa", "^\\D\\W", "\\D", "\\s\\S"])
def test_negated_class_escapes_inside_a_class(body: str) -> None:
    """``[\\S]``, ``[a\\W]``, ``[^\\D\\W]``: the escape's complement joins the class (ECMA's \\s, ASCII \\w and \\d)."""
    negated = body.startswith("^")
    atoms = re.findall(r"\\[SWDs]|.", body[1:] if negated else body)
    translated = re.compile(rx.ecma_to_python(f"[{body}]"))
    for c in ["a", "x", "-", "5", " ", "\t", "\u2003", "\u00e9", "_", "\ufeff", "Z", "\U0001F600", "\u0660"]:
        member = any(_ECMA_ESCAPES[t](c) if t in _ECMA_ESCAPES else c == t for t in atoms) != negated
        assert bool(translated.fullmatch(c)) == member, (body, c)


def test_ecma_translation() -> None:
    assert rx.ecma_to_python(r"\d\w\/(?<n>x)") == r"[0-9][A-Za-z0-9_]\/(?P<n>x)"
    with pytest.raises(rx.RegexError):
        rx.ecma_to_python(r"\p{L}")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 0x10FFFF).filter(lambda c: not 0xD800 <= c <= 0xDFFF), st.integers(0, 0x10FFFF), st.integers(0, 0x400))
def test_json_char_spells_every_member(c: int, lo: int, width: int) -> None:
    ranges = ((lo, min(lo + width, 0x10FFFF)),)
    inside = lo <= c <= lo + width
    pattern = re.compile(rx.json_char(rx.chars(ranges)[1]) if rx.chars(ranges)[1] else "(?!)")
    text = json.dumps(chr(c), ensure_ascii=False)[1:-1]  # the one canonical spelling
    assert bool(pattern.fullmatch(text)) == inside, (hex(c), ranges, text)
    assert chr(c) == "/" or not pattern.fullmatch(json.dumps(chr(c))[1:-1]) or json.dumps(chr(c)) == json.dumps(chr(c), ensure_ascii=False)


@pytest.mark.parametrize("pattern", ["[--x]", "[a-z--]", "[!--]", "[a&&b]", "[a~~b||c]", "[x-]", "[-x]", "[a-c-e]",
                                     "^[[a-z]*[-]?[a-z]*]*$", "[^--a]", "[+--]", "[a-z0-9_-]{7,}"])
def test_class_operators_of_python_are_literals(pattern: str) -> None:
    """'--', '&&', '~~', '||' in a class are literal in ECMA-262 (as Python reads them today, with a
    FutureWarning): the translation escapes them, so no warning, and the same characters match."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        translated = re.compile(rx.ecma_to_python(pattern))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        plain = re.compile(pattern)
    for c in range(0x80):
        assert bool(translated.search(chr(c))) == bool(plain.search(chr(c))), (pattern, chr(c))


LANGUAGES = [r"^[a-c]+$", r"b", r"^a.{0,3}$", r"^(ab|c)*x?$", r"[0-9]{2}", r"^\S+$", r"^.{2,4}$", r"^(a|b)c?$"]
_SHARED: dict = {}  # one memo for every call, as a schema's languages share one: terms built afresh meet their old selves


@settings(max_examples=200, deadline=None)
@given(a=st.sampled_from(LANGUAGES), b=st.sampled_from(LANGUAGES), words=st.lists(st.text(alphabet="abcx09 -", max_size=6), max_size=8))
def test_intersections_and_membership_agree_with_re(a: str, b: str, words: list[str]) -> None:
    """The derivative engine (``intersect``: membership, intersection, coverage, the DFA
    signature) against Python's re on the same languages, through one shared memo."""
    from greatgramma.frontends.intersect import intersect, is_covered, matches, signature

    na, nb = rx.parse_ecma(a), rx.parse_ecma(b)
    both = intersect([na, nb], memo=_SHARED)
    for w in words:
        in_a = re.fullmatch(rx.raw_regex(na), w, re.S) is not None
        in_b = re.fullmatch(rx.raw_regex(nb), w, re.S) is not None
        assert matches(na, w, _SHARED) == in_a and matches(both, w, _SHARED) == (in_a and in_b), (a, b, w)
        if in_a and not in_b:
            assert not is_covered(na, [nb], memo=_SHARED), (a, b, w)
    assert (signature([na], _SHARED) == signature([na, nb], _SHARED)) == bool(is_covered(na, [nb], memo=_SHARED)), (a, b)
