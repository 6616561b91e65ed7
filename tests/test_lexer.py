"""The byte-level lexer DFA against Python's ``re``: terminal languages, lexeme boundaries, tie-breaks, errors."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from helpers import BENCH, dfa_boundary, single_terminal_lexer
from hypothesis import given, settings
from hypothesis import strategies as st

import greatgramma as gg
from greatgramma.errors import UnsupportedRegexError
from greatgramma.lexer import DEAD, TerminalSpec, build_lexer
from greatgramma.lexing import LexingTransducer
from greatgramma.regex import utf8_sequences


def spec(name: str, pattern: str, *, is_string: bool = False, priority: int = 0) -> TerminalSpec:
    return TerminalSpec(name, pattern, is_string, priority, 100, len(pattern), False)


def dfa_match(lexer, data: bytes) -> int:
    """Winning terminal if the whole of ``data`` is one lexeme, else DEAD."""
    q = 0
    for b in data:
        q = int(lexer.delta[q, b])
        if q == DEAD:
            return DEAD
    return int(lexer.accept[q])


def lark_patterns() -> list[tuple[str, str]]:
    out = []
    for name in ("go", "java", "json", "python"):
        for t in gg.Grammar.from_file(BENCH / f"{name}.lark").terminals:
            out.append((f"{name}:{t.name}", t.pattern))
    return out


EXTRA = [
    ("word", r"\w+"),
    ("ci", r"(?i)select|k"),
    ("dotall", r"(?s)<.*>"),
    ("notquote", r'"[^"\\]*"'),
    ("counted", r"a{2,4}b?"),
    ("lazy_comment", r"/\*[\s\S]*?\*/"),
    ("lazy_string", r'".*?"'),
    ("digits", r"\d+(\.\d*)?"),
]
PATTERNS = lark_patterns() + EXTRA
ALPHABET = st.sampled_from(list('ab"\\*/ \n\t.xK0129eE+-_<>\'`;#rBéü€\u212a٣'))


def _is_lazy(pattern: str) -> bool:
    return bool(re.search(r"[*+?}]\?", pattern))


@pytest.mark.parametrize("label,pattern", PATTERNS, ids=[p[0] for p in PATTERNS])
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_dfa_language_equals_python_re(label: str, pattern: str, data) -> None:
    lexer = single_terminal_lexer(pattern)
    text = data.draw(st.one_of(st.from_regex(pattern, fullmatch=True), st.text(ALPHABET, max_size=8)))
    m = re.match(pattern, text)
    expected = bool(m) and m.end() == len(text) if _is_lazy(pattern) else bool(re.fullmatch(pattern, text))
    assert (dfa_match(lexer, text.encode()) == 0) == expected, (label, text)


def test_lazy_string_ends_at_first_quote() -> None:
    lexer = LexingTransducer(build_lexer([spec("S", r'".*?"'), spec("PLUS", r"\+", is_string=True), spec("WS", r" ")]))
    ran = lexer.feed(0, b'"a" + "b"')
    assert ran is not None
    terms, end = ran
    assert terms == [0, 2, 1, 2] and lexer.accept[end] == 0  # S WS PLUS WS, then S pending


def test_keyword_beats_identifier_and_munch_is_maximal() -> None:
    lexer = build_lexer([spec("NAME", r"[a-z]+"), spec("IF", "if", is_string=True)])
    assert dfa_match(lexer, b"if") == 1
    assert dfa_match(lexer, b"iff") == 0
    assert dfa_match(lexer, b"i") == 0


def test_terminal_ended_only_by_lookahead_is_producible() -> None:
    """Regression (grammars/java.lark): ``GT_ADJ: />/`` wins a ``>`` only when another ``>``
    follows (``GT: />(?!>)/`` takes the rest), so no state accepts it at the end of input; a
    pending ``>`` must still count as able to become GT_ADJ, or ``a <= b >`` (on its way to
    ``>> 1``) is masked out where only GT_ADJ can follow."""
    lexer = build_lexer([spec("GT", ">(?!>)"), spec("GT_ADJ", ">"), spec("GE", ">=", is_string=True)])
    q = int(lexer.delta[0, ord(">")])
    assert lexer.prod[q, 1] and not (lexer.accept == 1).any()
    masker = gg.Masker(gg.compile(gg.Grammar('start: "a" GT_ADJ GT "a" | GT\nGT: />(?!>)/\nGT_ADJ: />/'),
                                  gg.Vocabulary.from_token_bytes([None, b"a", b">"], eos_token_ids=[0])))
    state = masker.advance(masker.initial_state(), 1)  # "a": only GT_ADJ can follow
    for tok in (2, 2, 1):  # ">", ">", "a": each one allowed
        state = masker.advance(state, tok)
    assert masker.is_complete(state)


def test_lookahead_of_an_ascii_class_is_one_guard_per_byte() -> None:
    """``(?![0-9.eE])`` (the end of a JSON Schema grammar's numerals) builds the lexer that the
    same lookaheads written one literal each build; a class with non-ASCII characters is refused."""
    spelled = "".join(f"(?!{c})" for c in "0123456789") + r"(?!\.)(?!e)(?!E)"
    a = build_lexer([spec("N", r"-?[0-9]+(?![0-9.eE])"), spec("F", r"[0-9]+\.[0-9]+")])
    b = build_lexer([spec("N", r"-?[0-9]+" + spelled), spec("F", r"[0-9]+\.[0-9]+")])
    assert np.array_equal(a.delta, b.delta) and np.array_equal(a.accept, b.accept)
    assert np.array_equal(a.accept_next, b.accept_next)
    with pytest.raises(UnsupportedRegexError, match="negative lookahead"):
        build_lexer([spec("N", "[0-9]+(?![0-9\u00e9])")])


def test_priority_beats_string() -> None:
    lexer = build_lexer([spec("NAME", r"[a-z]+", priority=2), spec("IF", "if", is_string=True)])
    assert dfa_match(lexer, b"if") == 0


def test_partial_utf8_is_alive_and_never_accepting() -> None:
    lexer = build_lexer([spec("S", r'"[^"]*"')])
    q = 0
    for b in b'"\xe2\x82':
        q = int(lexer.delta[q, b])
        assert q != DEAD
    assert lexer.accept[q] == DEAD
    assert lexer.delta[q, ord("a")] == DEAD  # a continuation byte must follow
    assert lexer.delta[0, 0xFF] == DEAD


@pytest.mark.parametrize(
    "pattern,construct",
    [
        (r"a(?=b)", "lookahead"),
        (r"(?<!x)a", "lookbehind"),
        (r"^a", "anchor"),
        (r"(a)\1", "backreference"),
        (r"a(?:b?)*?c", "lazy quantifier"),  # a.*?b+ is supported now (an ordered NFA)
    ],
)
def test_unsupported_constructs_name_terminal(pattern: str, construct: str) -> None:
    with pytest.raises(gg.UnsupportedRegexError) as err:
        build_lexer([spec("MYTERM", pattern)])
    assert "MYTERM" in str(err.value) and construct in str(err.value)


def test_empty_terminal_is_refused() -> None:
    with pytest.raises(gg.GrammarError, match="EMPTYISH.*empty string"):
        build_lexer([spec("EMPTYISH", r"a*")])


def test_dfa_state_limit() -> None:
    with pytest.raises(gg.ResourceLimitError, match="max_dfa_states"):
        build_lexer([spec("BLOWUP", r"(a|b)*a(a|b){12}")], max_states=1000)


def test_nfa_state_limit_names_the_terminal() -> None:
    with pytest.raises(gg.ResourceLimitError, match="terminal HUGE: regex NFA exceeds"):
        build_lexer([spec("HUGE", r"(?:(?:ab|cd){900}){300}")])


def test_utf8_sequences_cover_exactly_the_range() -> None:
    for lo, hi in [(0, 0x7F), (0x80, 0x7FF), (0x7F, 0x900), (0xD000, 0xE100), (0x10000, 0x10400), (0xFFF0, 0x10010)]:
        got = []
        for seq in utf8_sequences(lo, hi):
            for bs in itertools.product(*[range(a, b + 1) for a, b in seq]):
                ch = bytes(bs).decode("utf-8")
                assert len(ch) == 1
                got.append(ord(ch))
        expected = [c for c in range(lo, hi + 1) if not 0xD800 <= c <= 0xDFFF]
        assert sorted(got) == expected


PYTHON_LOOKAROUND = [
    (label, pattern)
    for label, pattern in lark_patterns()
    if label in ("python:STRING", "python:LONG_STRING", "python:COMMENT", "python:_NL")
] + [p for p in EXTRA if p[0].startswith("lazy")]


@pytest.mark.parametrize("label,pattern", PYTHON_LOOKAROUND, ids=[p[0] for p in PYTHON_LOOKAROUND])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_dfa_lexeme_boundary_equals_re_match(label: str, pattern: str, data) -> None:
    """Lookahead, lookbehind and lazy repeats with (?i)/(?s): the lexeme ends where ``re.match`` ends it."""
    lexer = single_terminal_lexer(pattern)
    head = data.draw(st.one_of(st.from_regex(pattern, fullmatch=True), st.text(ALPHABET, max_size=6)))
    text = head + data.draw(st.text(ALPHABET, max_size=8))
    m = re.match(pattern, text)
    expected = len(text[: m.end()].encode()) if m and m.end() > 0 else None
    assert dfa_boundary(lexer, text.encode()) == expected, (label, text)


@pytest.mark.parametrize("name", ["json", "go", "java", "python"])
def test_inside_a_character_only_continuation_bytes_live(name: str) -> None:
    """What ``LexingTransducer.backup_options`` relies on: a DFA state inside a UTF-8 character
    accepts nothing and has live moves (transition or lookahead end) on continuation bytes only,
    so any other byte kills every lexeme that holds the character."""
    from greatgramma.lexer import utf8_valid

    grammar = gg.Grammar.from_file(BENCH / f"{name}.lark", indenter=gg.Indenter.python() if name == "python" else None)
    lexer = grammar.build_lexer()
    inside = ~utf8_valid(lexer.delta)[:, ord("a")]  # where ASCII cannot come next
    assert inside.any()
    live = (lexer.delta[inside] != DEAD) | (lexer.accept_next[inside] != DEAD)
    assert not live[:, list(range(0x80)) + list(range(0xC0, 0x100))].any()
    assert (lexer.accept[inside] == DEAD).all()
