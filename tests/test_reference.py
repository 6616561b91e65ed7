"""Pins the semantics of the reference checker (tests/reference.py) with hand-derived outcomes.

Every expected value below was worked out by hand from DESIGN.md section 1 (maximal munch with
one byte of lookahead, Lark's tie-breaking, %ignore, viable/complete), not read back from the
checker. Where the outcome is a full sentence, Lark's own LALR parser with its basic lexer is
asked too.
"""

from __future__ import annotations

import pathlib
import re

import pytest
from lark import Lark
from lark.exceptions import LarkError

try:
    import reference
except ImportError:  # tests/ imported as a package
    from tests import reference  # type: ignore[no-redef]

ReferenceChecker = reference.ReferenceChecker

ROOT = pathlib.Path(__file__).resolve().parent.parent
JSON_GRAMMAR = (ROOT / "grammars" / "json.lark").read_text(encoding="utf-8")


def lark_parses(grammar: str, text: str, start: str = "start") -> bool:
    try:
        Lark(grammar, parser="lalr", lexer="basic", start=start).parse(text)
    except LarkError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Maximal munch

OPS = r"""
start: item*
item: PLUS | PLUSPLUS | NAME
PLUS: "+"
PLUSPLUS: "++"
NAME: /[a-z]+/
%ignore " "
"""

PAIR = r"""
start: PLUS PLUS | PLUSPLUS NAME
PLUS: "+"
PLUSPLUS: "++"
NAME: /[a-z]+/
%ignore " "
"""


def test_maximal_munch_lexing():
    ref = ReferenceChecker(OPS)
    # "+++": "++" is alive, "+++" is not, so "++" is emitted and "+" stays current.
    assert ref.lex(b"+++") == (["PLUSPLUS"], b"+")
    assert ref.lex(b"++ +") == (["PLUSPLUS"], b"+")
    assert ref.lex(b"a++b") == (["NAME", "PLUSPLUS"], b"b")
    assert ref.lex(b"+ +") == (["PLUS"], b"+")
    assert ref.complete(b"+++")


def test_maximal_munch_decides_viability():
    ref = ReferenceChecker(PAIR)
    # "++" always lexes as PLUSPLUS, which needs a NAME after it.
    assert ref.viable(b"++")
    assert not ref.complete(b"++")
    assert ref.complete(b"++x")
    assert ref.complete(b"+ +")
    assert not ref.viable(b"+ ++")  # PLUS PLUSPLUS
    assert not ref.viable(b"+x")  # PLUS NAME
    assert ref.allowed(b"+", [b"+", b" +", b"x", b"+x", b"++"]) == [True, True, False, True, False]
    assert lark_parses(PAIR, "++x") and lark_parses(PAIR, "+ +")
    assert not lark_parses(PAIR, "++")


# ---------------------------------------------------------------------------------------------
# Keywords versus identifiers, priorities

KEYWORDS = r"""
start: stmt*
stmt: IF NAME ";" | NAME ";"
IF: "if"
NAME: /[a-z]+/
%ignore " "
"""


def test_keyword_string_literal_beats_identifier_regex():
    ref = ReferenceChecker(KEYWORDS)
    assert ref.lex(b"if x;") == (["IF", "NAME"], b";")
    assert ref.lex(b"iff;") == (["NAME"], b";")
    assert ref.lex(b"if;") == (["IF"], b";")  # same length, same priority: the literal wins
    assert ref.complete(b"iff;")
    assert ref.complete(b"if x;")
    assert not ref.viable(b"if;")  # IF ";"
    assert ref.viable(b"if")
    assert not ref.complete(b"if")  # flushed as IF, which needs a NAME
    # "if if" is viable: the second "if" may still grow into the identifier "iff" ...
    assert ref.viable(b"if if")
    assert ref.complete(b"if iff;")
    # ... but once flushed it is the keyword, and IF IF is no parser prefix.
    assert not ref.viable(b"if if ")
    assert not ref.viable(b"if if;")
    assert ref.allowed(b"if", [b";", b"f;", b" x;", b" if", b" if;"]) == [False, True, True, True, False]
    assert lark_parses(KEYWORDS, "if iff;") and lark_parses(KEYWORDS, "iff;")
    assert not lark_parses(KEYWORDS, "if if;")


PRIORITY = r"""
start: A "!" | B "?"
A.2: /a+/
B: /[ab]+/
"""


def test_priority_breaks_ties():
    ref = ReferenceChecker(PRIORITY)
    assert ref.complete(b"aa!")
    assert not ref.viable(b"aa?")  # "aa" is complete for A and B; A has the higher priority
    assert ref.viable(b"aa")  # still alive for both
    assert ref.viable(b"aab")  # only B is alive now
    assert ref.complete(b"aab?")
    assert ref.complete(b"ab?")
    assert lark_parses(PRIORITY, "aa!")
    assert not lark_parses(PRIORITY, "aa?")
    # Known divergence, kept on purpose: Lark's basic lexer is not maximal munch across
    # terminals. It tries terminals in priority order and A (priority 2) takes "a" out of "ab",
    # so Lark rejects "ab?", which the contract's maximal-munch lexer accepts as B "?".
    assert not lark_parses(PRIORITY, "ab?")


def test_priority_beats_string_literal():
    default = ReferenceChecker('start: (KW | NAME)+\nKW: "ab"\nNAME: /[a-z]+/\n%ignore " "\n')
    raised = ReferenceChecker('start: (KW | NAME)+\nKW: "ab"\nNAME.2: /[a-z]+/\n%ignore " "\n')
    assert default.lex(b"ab abc ")[0] == ["KW", "NAME"]
    assert raised.lex(b"ab abc ")[0] == ["NAME", "NAME"]


# ---------------------------------------------------------------------------------------------
# %ignore: whitespace and comments

IGNORED = r"""
start: "(" NAME* ")"
NAME: /[a-z]+/
COMMENT: /#[^\n]*/
%ignore COMMENT
%ignore /[ \t\n]+/
"""


def test_ignored_whitespace_and_comments():
    ref = ReferenceChecker(IGNORED)
    assert ref.lex(b"(a # c") == (["LPAR", "NAME"], b"# c")
    assert ref.complete(b"(a # c\n b)")
    assert ref.complete(b"  (a)  \n")
    assert ref.complete(b"(a)# trailing comment")  # the comment is flushed at EOS, then dropped
    assert ref.viable(b"(a # )")  # the ")" is comment text
    assert not ref.complete(b"(a # )")
    assert ref.complete(b"(a # )\n)")
    assert ref.viable(b"# only a comment\n")
    assert not ref.complete(b"# only a comment\n")
    assert not ref.viable(b"(a))")
    for text in ["(a # c\n b)", "  (a)  \n", "(a)# trailing comment", "(a # )\n)"]:
        assert lark_parses(IGNORED, text), text


# ---------------------------------------------------------------------------------------------
# Lazy quantifiers: the lexeme is what Python's re.match returns

LAZY_STRINGS = r"""
start: expr
expr: STRING ("+" STRING)*
STRING: /".*?"/
%ignore " "
"""
GREEDY_STRINGS = LAZY_STRINGS.replace('/".*?"/', '/".*"/')


def test_lazy_string_ends_at_first_quote():
    ref = ReferenceChecker(LAZY_STRINGS)
    assert ref.lex(b'"a" + "b"') == (["STRING", "PLUS"], b'"b"')
    assert ref.complete(b'"a" + "b"')
    assert ref.complete(b'"a"')
    assert ref.viable(b'"a')
    assert not ref.complete(b'"a')
    assert not ref.viable(b'"a"b')  # the lexeme closed at the second quote; "b" lexes as nothing
    assert ref.viable(b'"a" +')
    assert ref.allowed(b'"a', [b'"', b'"+"b"', b'"b', b'b"', b'"b"']) == [True, True, False, True, False]
    tree = Lark(LAZY_STRINGS, parser="lalr", lexer="basic").parse('"a" + "b"')
    assert [str(tok) for tok in tree.scan_values(lambda v: getattr(v, "type", "") == "STRING")] == ['"a"', '"b"']


def test_greedy_string_for_contrast():
    ref = ReferenceChecker(GREEDY_STRINGS)
    assert ref.lex(b'"a" + "b"') == ([], b'"a" + "b"')  # one STRING lexeme, still growing
    assert ref.complete(b'"a" + "b"')
    assert ref.viable(b'"a"b')  # '"a"b"' is a lexeme of /".*"/


LAZY_COMMENT = r"""
start: NAME*
NAME: /[a-z]+/
COMMENT: /\/\*[\s\S]*?\*\//
%ignore COMMENT
%ignore " "
"""


def test_lazy_block_comment():
    ref = ReferenceChecker(LAZY_COMMENT)
    assert ref.lex(b"/* x */") == ([], b"/* x */")
    assert ref.lex(b"/* x */y") == ([], b"y")  # the comment ended at the first "*/"
    assert ref.lex(b"/* x *") == ([], b"/* x *")
    assert ref.complete(b"a /* x\n y */ b")
    assert ref.complete(b"/* x */y")
    assert not ref.viable(b"/* a */ b */")  # "*" after b starts no terminal
    assert not ref.complete(b"/* x *")
    assert lark_parses(LAZY_COMMENT, "a /* x\n y */ b")
    assert not lark_parses(LAZY_COMMENT, "/* a */ b */")


# _NL mixes a greedy outer + with a lazy inner part, like the Python grammar's _NL.
NEWLINES = r"""
start: (NAME _NL)*
NAME: /[a-z]+/
_NL: /(\n[\t ]*|#.*?\n)+/
"""


def test_lazy_terminal_follows_backtracking_priority():
    ref = ReferenceChecker(NEWLINES)
    # re.match(_NL, "\n# c\nb") == "\n# c\n": the greedy + tries the comment before stopping,
    # so "\n#" is alive even though "\n" alone is already a complete match of it.
    assert ref.viable(b"a\n#")
    assert ref.lex(b"a\n# c") == (["NAME"], b"\n# c")
    assert not ref.complete(b"a\n# c")  # re.match on "\n# c" stops after "\n"
    assert ref.complete(b"a\n# c\nb\n")
    assert ref.complete(b"a\n  \n\tb\n")
    assert not ref.viable(b"a\n  !")
    assert lark_parses(NEWLINES, "a\n# c\nb\n")


def _alive_by_definition(pattern: str, text: str, alphabet: str, max_ext: int) -> bool:
    """Some extension e (over ``alphabet``, up to ``max_ext`` long) has re.match(text + e)
    ending at or after len(text): the contract's definition, searched by brute force."""
    exts = [""]
    for _ in range(max_ext):
        exts += [e + a for e in exts if len(e) == _ for a in alphabet]
    for e in exts:
        m = re.match(pattern, text + e)
        if m is not None and m.end() >= len(text):
            return True
    return False


@pytest.mark.parametrize(
    "pattern, alphabet",
    [
        (r"(?:x;ab|x).*?;", "xab;"),  # the earlier alternative may still run past the text
        (r"(?:x|x;ab).*?;", "xab;"),  # ... or the later one is never reached
        (r"(?:;|a.*?;)+", "ab;"),
        (r'"(?:\\.|[^"])*?"', 'a"\\'),
        (r"a(?!b).*?;", "ab;"),
        # regex's partial matching skips the characters of a lazy one-character repeat when it
        # looks ahead for the literal after it (see reference._lazy_safe_pattern):
        (r'".*?"', 'a"\n'),
        (r'"[a-z]*?"', 'aA"'),
        (r'".*[^a\n]{1,2}?"', 'ab"\n'),
        (r'"(?:.)*?x"', 'ax"\n'),
    ],
)
def test_lazy_alive_equals_brute_force_over_extensions(pattern, alphabet):
    ref = ReferenceChecker("start: T\nT: /%s/\n" % pattern)
    (term,) = [t for t in ref.terminals if t.name == "T"]
    texts = [""]
    for _ in range(4):
        texts += [t + a for t in texts if len(t) == _ for a in alphabet]
    for text in texts[1:]:
        expected = _alive_by_definition(pattern, text, alphabet, 3)
        assert term.alive(text.encode()) == expected, (pattern, text)
        m = re.match(pattern, text)
        assert term.complete(text.encode()) == (m is not None and m.end() == len(text)), (pattern, text)


def test_lazy_string_does_not_take_a_newline():
    # /".*?"/: "." takes no newline, so a string with one in it is dead (regex reports a
    # partial match for '"\n' with the plain pattern; the reference must not).
    ref = ReferenceChecker(LAZY_STRINGS)
    assert not ref.viable(b'"\n')
    assert not ref.viable(b'"a\nb')
    assert ref.allowed(b'"a', [b"\n", b'\n"', b"b", b'"']) == [False, False, True, True]


def test_partial_character_after_a_closed_lazy_lexeme():
    # After a closed lazy string no character continues it, whatever its first byte.
    ref = ReferenceChecker(LAZY_STRINGS)
    for lead in [b"\xc3", b"\xe2", b"\xf0", b"\xf1", b"\xf4"]:
        assert not ref.viable(b'"a"' + lead)
        assert ref.viable(b'"a' + lead)
    # A lookahead at the end keeps the text open: "a" is a lexeme, and so is "aé" (c3 a9).
    look = ReferenceChecker("start: T\nT: /x*?a(?!\u00e9)|x*?a\u00e9/\n")
    assert look.complete(b"a")
    assert look.viable(b"a\xc3")
    assert look.complete("a\u00e9".encode())
    assert not look.viable(b"a\xc2")
    # So does an end anchor, which the regex module tests without reporting a partial match.
    anchored = ReferenceChecker("start: T\nT: /x*?a(?:\\Z|\u00e9)/\n")
    assert anchored.complete(b"a")
    assert anchored.viable(b"a\xc3")
    assert anchored.complete("a\u00e9".encode())


# ---------------------------------------------------------------------------------------------
# UTF-8: multi-byte characters, partial characters, invalid bytes


def test_utf8_in_json_strings():
    ref = ReferenceChecker(JSON_GRAMMAR)
    euro = "€".encode()  # e2 82 ac
    assert ref.viable(b'{"' + euro[:1])
    assert ref.viable(b'{"' + euro[:2])
    assert not ref.complete(b'{"' + euro[:2])
    assert ref.complete(b'{"' + euro + b'": 1}')
    assert ref.viable(b'{"\xf0\x9f\x98')  # first three bytes of an emoji
    assert not ref.viable(b'{"\xff')  # never UTF-8
    assert not ref.viable(b'{"\x82')  # continuation byte where a lead byte belongs
    assert not ref.viable(b'{"\xe2\x82a')  # incomplete character followed by ASCII
    assert not ref.viable(b'{"\xc0\x80')  # overlong encoding
    assert not ref.viable(b'{"\xed\xa0')  # surrogate range
    assert not ref.viable(b'{"\xf4\x90')  # beyond U+10FFFF
    assert not ref.viable(b'{"a": 1\xe2')  # a number cannot continue with a non-ASCII character
    assert lark_parses(JSON_GRAMMAR, '{"€": 1}')


def test_unicode_classes_over_partial_characters():
    word = ReferenceChecker('start: NAME+\nNAME: /\\w+/\n%ignore " "\n')
    assert word.complete("café".encode())
    assert word.viable(b"caf\xc3")
    assert not word.complete(b"caf\xc3")
    assert word.lex("café x".encode()) == (["NAME"], b"x")
    assert not word.viable(b"a\xff")

    accent = ReferenceChecker('start: NAME+\nNAME: /[a-z\u00e9]+/\n%ignore " "\n')
    assert accent.viable(b"caf\xc3")  # could be é (c3 a9)
    assert not accent.viable(b"caf\xc2")  # c2 xx is U+0080..U+00BF: none is in [a-zé]
    assert not accent.viable(b"caf\xc3\xa8")  # è
    assert accent.complete(b"caf\xc3\xa9")

    digits = ReferenceChecker("start: NUM\nNUM: /\\d+/\n")
    assert digits.complete("1\u0663".encode())  # ARABIC-INDIC DIGIT THREE is a \d
    assert digits.viable(b"1\xd9")  # d9 xx is U+0640..U+067F, holding U+0660..U+0669
    assert not digits.viable(b"1\xd8")  # U+0600..U+063F: no digit
    assert digits.viable(b"1\xf0")  # e.g. U+104A0 OSMANYA DIGIT ZERO
    ascii_digits = ReferenceChecker("start: NUM\nNUM: /[0-9]+/\n")
    assert not ascii_digits.viable(b"1\xd9")
    assert not ascii_digits.viable(b"1\xf0")

    folded = ReferenceChecker('start: K\nK: /k+/i\n')
    assert folded.complete("k\u212a".encode())  # KELVIN SIGN folds to k
    assert folded.viable(b"k\xe2\x84")


@pytest.mark.parametrize(
    "pattern, text",
    [
        ("[a-z\u00e9]+", "caf"),
        (r"\d+", "1"),
        (r"(?i:0x[\da-f]*)", "0x"),
        (r"(?i:k+)", "k"),
        (r"\s+", " "),
        (r'"[^"]+"', '"ab"'),
        (r'"[^"]+"', '"ab'),
        (r"[^\W\d]\w*", "x"),
        (r'".*?"', '"a"'),
        (r'"(?!"").*?"', '"a"'),
    ],
)
def test_candidate_pruning_is_sound(pattern, text):
    """The next-character bound and the closed-lazy-lexeme shortcut only skip code points that
    the regex itself rejects: compare with testing every code point of each partial character."""
    ref = ReferenceChecker("start: T\nT: /%s/\n" % pattern)
    (term,) = [t for t in ref.terminals if t.name == "T"]
    for tail in [b"\xc3", b"\xd9", b"\xe2\x84", b"\xef\xbc", b"\xe3"]:
        ranges = reference._tail_ranges(tail)
        brute = any(term._alive_text(text + chr(cp)) for lo, hi in ranges for cp in range(lo, hi + 1))
        assert term.alive(text.encode() + tail) == brute, (pattern, text, tail)


# ---------------------------------------------------------------------------------------------
# JSON: tokens spanning several terminals, the end of input


def test_json_tokens_spanning_terminals():
    ref = ReferenceChecker(JSON_GRAMMAR)
    toks = [b'"a": 1}', b'"a":', b"}", b"]", b'"a"', b'"a" 1', b'"": 1', None, b""]
    assert ref.allowed(b"{", toks) == [True, True, True, False, True, False, False, False, False]
    assert ref.allowed(b'{"a": 1', [b"}", b"2}", b", ", b"]", b"e5}", b"}}"]) == [
        True,
        True,
        True,
        False,
        True,
        False,
    ]


def test_json_complete_versus_viable():
    ref = ReferenceChecker(JSON_GRAMMAR)
    assert ref.viable(b'{"a": 1') and not ref.complete(b'{"a": 1')
    assert ref.complete(b'{"a": 1}')
    assert ref.complete(b'{"a": 1}\n')  # WS is ignored
    assert ref.complete(b'  {"a": [1, 2.5, -3e2, true, null, ""]}')
    assert ref.complete(b"[]")
    assert not ref.viable(b'{"a": 1}}')
    assert not ref.viable(b'{"a":1,}')
    assert not ref.viable(b'{"":')  # keys are NONEMPTY_STRING
    assert not ref.viable(b'""')  # the top level is an object or an array
    assert ref.viable(b'{"a": 1e') and not ref.complete(b'{"a": 1e')
    assert ref.viable(b'{"a": -') and not ref.complete(b'{"a": -')
    assert ref.lex(b'{"a": 1') == (["LBRACE", "NONEMPTY_STRING", "COLON"], b"1")
    assert ref.lex(b'{"a": 1}\n') == (["LBRACE", "NONEMPTY_STRING", "COLON", "SIGNED_NUMBER", "RBRACE"], b"\n")
    assert ref.lex(b'{"a": @') is None
    for text in ['{"a": 1}', '{"a": 1}\n', '  {"a": [1, 2.5, -3e2, true, null, ""]}', "[]"]:
        assert lark_parses(JSON_GRAMMAR, text), text
    for text in ['{"a": 1', '{"a":1,}', '{"": 1}']:
        assert not lark_parses(JSON_GRAMMAR, text), text


def test_empty_prefix_and_empty_tokens():
    ref = ReferenceChecker(JSON_GRAMMAR)
    assert ref.viable(b"")
    assert not ref.complete(b"")
    assert ref.lex(b"") == ([], b"")
    assert ref.allowed(b"", [b"", None, b"{", b"[", b"1", b" "]) == [False, False, True, True, False, True]
    assert ref.allowed(b"]", [b"[", b"{"]) == [False, False]  # a dead prefix allows nothing


# ---------------------------------------------------------------------------------------------
# A walk over a byte-level vocabulary: allowed() agrees with viable() and admits the text's tokens

WALK_DOC = (
    '{"name": "caf\u00e9 \u20ac", "list": [1, -2.5e3, true, false, null], "nested": {"k": []},\n'
    ' "more": [{"x": 0.5, "y": "\\u00fc\\n"}, "\U0001f600", 12e-1]}\n'
)


def _vocabulary() -> list[bytes | None]:
    vocab: list[bytes | None] = [bytes([b]) for b in range(256)]
    vocab += [None]  # a special token: no bytes
    vocab += [s.encode() for s in ['{"', '": ', '", "', '"', ", ", "true", "false", "null", "]}", "}}", "na", "me"]]
    vocab += ["é".encode(), "€".encode(), "€".encode()[:2], "€".encode()[2:], b" [", b"[1", b"e3", b"-2", b".5"]
    vocab += [s.encode() for s in ['":', ' "', '",', "list", "nested", "caf", '"k', "1,", " -", "3e", " 1"]]
    vocab += [s.encode() for s in ["tr", "ue", "fa", "lse", "nu", "ll", '{"k', '"]', ", -", "2.", "5e", "[]"]]
    vocab += [rb"\n", rb"\\", rb'\"', rb"\u00", b" \n", b"\t"]
    return vocab


def _tokenize(data: bytes, vocab: list[bytes | None]) -> list[int]:
    ids, i = [], 0
    while i < len(data):
        best = max(
            (j for j, t in enumerate(vocab) if t and data.startswith(t, i)),
            key=lambda j: len(vocab[j]),  # type: ignore[arg-type]
        )
        ids.append(best)
        i += len(vocab[best])  # type: ignore[arg-type]
    return ids


def test_walk_allowed_matches_viable_and_admits_the_document():
    ref = ReferenceChecker(JSON_GRAMMAR)
    vocab = _vocabulary()
    assert len(vocab) >= 300
    doc = WALK_DOC.encode()
    ids = _tokenize(doc, vocab)
    prefix = b""
    for step, tok in enumerate(ids):
        allowed = ref.allowed(prefix, vocab)
        assert allowed[tok], (prefix, vocab[tok])
        assert not allowed[256]  # the special token
        if step % 6 == 0:  # the shortcut through the lexer state agrees with the definition
            assert allowed == [bool(t) and ref.viable(prefix + t) for t in vocab], prefix
        assert ref.complete(prefix) == (prefix == doc.rstrip(b"\n"))
        prefix += vocab[tok]  # type: ignore[operator]
    assert prefix == doc
    assert ref.complete(prefix)
    assert lark_parses(JSON_GRAMMAR, WALK_DOC)
