"""Pins the semantics of the reference checker (tests/reference.py) with hand-derived outcomes.

Every expected value below was worked out by hand from DESIGN.md section 1 (maximal munch with
one byte of lookahead, Lark's tie-breaking, %ignore, viable/complete), not read back from the
checker. Where the outcome is a full sentence, Lark's own LALR parser with its basic lexer is
asked too.
"""

from __future__ import annotations

import re

import pytest
import reference
from helpers import grammar_text
from lark import Lark
from lark.exceptions import LarkError

ReferenceChecker = reference.ReferenceChecker

JSON_GRAMMAR = grammar_text("json")


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


# ---------------------------------------------------------------------------------------------
# Lexing with backtracking (true maximal munch): when the current lexeme dies, the longest
# prefix of it that is complete (given the character after it) is emitted and the rest re-lexed.

# The newline terminal also takes a raw docstring, so "\n    r" is alive (a prefix of
# "\n    r'''...'''") although "\n    return" must lex as _NL("\n    ") RETURN.
DOCSTRING_NL = r"""
start: (_NL | stmt)*
stmt: "return" NAME? _NL | NAME _NL
NAME: /[a-z]+/
_NL: (/(\r?\n[\t ]*)+/ | /r'''[^']*'''/)+
%ignore " "
"""


def test_backtracking_splits_a_newline_before_a_keyword():
    ref = ReferenceChecker(DOCSTRING_NL)
    assert ref.lex(b"x\n    r") == (["NAME"], b"\n    r")  # still a possible docstring
    assert ref.viable(b"x\n    r")
    assert ref.lex(b"x\n    r'") == (["NAME"], b"\n    r'")
    # "\n    re" is alive for nothing: back to "\n    " (complete), then "re" lexed again.
    assert ref.lex(b"x\n    re") == (["NAME", "_NL"], b"re")
    assert ref.lex(b"x\n    return y") == (["NAME", "_NL", "RETURN"], b"y")
    assert ref.lex(b"x\n    r y") == (["NAME", "_NL", "NAME"], b"y")  # "r" is a NAME
    assert ref.complete(b"x\n    return y\n")
    assert ref.complete(b"x\n    r'''doc'''\nreturn\n")
    assert not ref.complete(b"x\n    r'''doc")
    assert ref.allowed(b"x\n    r", [b"eturn\n", b"'''a'''\n", b"x\n", b" ", b"!"]) == [True, True, True, True, False]
    assert ref.complete(b"x\n    r\n") and not ref.complete(b"x\n    r y\n")
    for text in ["x\n    return y\n", "x\n    r'''doc'''\nreturn\n", "x\n    r\n"]:
        assert lark_parses(DOCSTRING_NL, text), text


QUANTITY = grammar_text("quantity")


def test_backtracking_two_bytes_in_an_exponent():
    ref = ReferenceChecker(QUANTITY)
    # "1e+" is alive (a prefix of "1e+2"); "x" kills it: "1e+" and "1e" are not numbers,
    # "1" is: emit it and lex "e+x" again -> NAME("e"), PLUS, then "x".
    assert ref.lex(b"1e+") == ([], b"1e+")
    assert ref.lex(b"1e+x") == (["NUMBER", "NAME", "PLUS"], b"x")
    assert ref.lex(b"1e+2") == ([], b"1e+2")
    assert ref.lex_complete(b"1e+2") == ["NUMBER"]
    assert ref.lex_complete(b"1e+x") == ["NUMBER", "NAME", "PLUS", "NAME"]
    assert ref.complete(b"1e+x") and ref.complete(b"1e+2") and ref.complete(b"1e")
    assert ref.viable(b"1e+") and not ref.complete(b"1e+")  # at the end: NUMBER NAME PLUS
    assert ref.allowed(b"1e", [b"+x", b"+2", b"+ ", b"++", b"x"]) == [True, True, True, False, True]
    for text in ["1e+x", "1e+2", "1e"]:
        assert lark_parses(QUANTITY, text), text
    tokens = [t.type for t in Lark(QUANTITY, parser="lalr", lexer="basic").lex("1e+x")]
    assert tokens == ["NUMBER", "NAME", "PLUS", "NAME"]


SHORT_LONG = grammar_text("short_long")


def test_backtracking_at_the_end_of_input_and_in_viability():
    ref = ReferenceChecker(SHORT_LONG)
    # "abb" is alive only as a prefix of ABC; at the end it backtracks to "a", then "b", "b".
    assert ref.lex(b"abb") == ([], b"abb")
    assert ref.lex_complete(b"abb") == ["A", "B", "B"]
    assert ref.complete(b"abb") and ref.complete(b"ab") and ref.complete(b"a")
    # Viable by (c): ABC is not accepted first, but "ab" may still end as A B.
    assert ref.viable(b"ab") and ref.viable(b"abbb")
    assert ref.lex(b"abba") == (["A", "B", "B"], b"a")  # backtrack of two bytes while lexing
    assert not ref.viable(b"abba")  # A after B
    assert not ref.viable(b"abbc")  # a complete ABC lexeme: never A B B C
    assert not ref.viable(b"abc")
    assert ref.complete(b"xabbc") and ref.lex_complete(b"xabbc") == ["X", "ABC"]
    assert ref.viable(b"xab") and not ref.complete(b"xab")  # at the end: X A B
    assert ref.allowed(b"", [b"a", b"ab", b"abc", b"xabc", b"abba", b"abbbb"]) == [True, True, False, True, False, True]
    for text in ["abb", "ab", "xabbc"]:
        assert lark_parses(SHORT_LONG, text), text
    assert not lark_parses(SHORT_LONG, "xab")


def test_no_backtracking_into_a_complete_lexeme():
    # "thend" is a complete NAME whatever follows: the lexer never splits it into THEN + "d".
    ref = ReferenceChecker(KEYWORDS.replace('stmt: IF NAME ";"', 'stmt: IF NAME THEN NAME ";"') + 'THEN: "then"\n')
    assert ref.viable(b"if x then")
    assert ref.viable(b"if x then d")
    assert not ref.viable(b"if x thend")
    assert ref.complete(b"if x then d;")


GUARDED = grammar_text("guarded")
GUARDED_SHORT = grammar_text("guarded_short")


def test_completeness_given_the_following_character():
    ref = ReferenceChecker(GUARDED_SHORT)
    (string,) = [t for t in ref.terminals if t.name == "STRING"]
    # '""' is a STRING before "x", a space or the end, not before '"' (the lookahead sees '""').
    assert string.complete(b'""')
    assert string.complete_given(b'""', "x") and string.complete_given(b'""', " ")
    assert not string.complete_given(b'""', '"')
    assert string.complete_given(b'"a"', '"')  # the lookahead is only after the first quote
    assert ref.lex(b'""x') == (["STRING"], b"x")
    assert ref.complete(b'""') and ref.complete(b'"" ""')
    # '"""': no STRING is alive on it, and '""' is no STRING before '"' either: dead.
    assert not ref.viable(b'"""')
    assert ref.viable(b'"" "') and ref.allowed(b'""', [b'"', b' "', b"x", b'a"']) == [False, True, True, True]
    assert ref.lex(b'"a"""') == (["STRING"], b'""')
    for text in ['""x', '""', '"a"""']:
        assert lark_parses(GUARDED_SHORT, text), text
    assert not lark_parses(GUARDED_SHORT, '"""')

    long = ReferenceChecker(GUARDED)
    assert long.viable(b'"""') and not long.complete(b'"""')  # a LONG string opens
    assert long.complete(b'"""a"""') and long.lex_complete(b'"""a"""') == ["LONG"]
    assert long.lex_complete(b'""x') == ["STRING", "NAME"]
    assert long.lex_complete(b'"""x""""') is None  # LONG '"""x"""', then '"' alone
    assert lark_parses(GUARDED, '"""a"""') and lark_parses(GUARDED, '""x')


# ---------------------------------------------------------------------------------------------
# The indenter postlexer (Lark's lark.indenter.Indenter, made exact, with a column limit)

INDENTED = grammar_text("indented")
INDENT_OPTIONS = dict(nl="_NL", open=("LPAR",), close=("RPAR",), tab_len=8, max_column=12)


def indented() -> ReferenceChecker:
    return ReferenceChecker(INDENTED, indenter=INDENT_OPTIONS)


def lark_indented():
    from lark.indenter import Indenter

    class TestIndenter(Indenter):
        NL_type = "_NL"
        OPEN_PAREN_types = ["LPAR"]
        CLOSE_PAREN_types = ["RPAR"]
        INDENT_type = "_INDENT"
        DEDENT_type = "_DEDENT"
        tab_len = 8

    return Lark(INDENTED, parser="lalr", lexer="basic", postlex=TestIndenter())


def lark_indented_parses(parser, text: str) -> bool:
    try:
        parser.parse(text)
    except Exception:  # noqa: BLE001 - the Indenter fails with IndexError/AssertionError too
        return False
    return True


NL, IND, DED = "_NL", "_INDENT", "_DEDENT"


def test_indent_and_dedent_several_levels_at_once():
    ref = indented()
    text = b"if a:\n  if b:\n    if c:\n      d\ne\n"
    assert ref.lex_complete(text) == [
        "IF", "NAME", "COLON", NL, IND,
        "IF", "NAME", "COLON", NL, IND,
        "IF", "NAME", "COLON", NL, IND,
        "NAME", NL, DED, DED, DED,
        "NAME", NL,
    ]  # fmt: skip
    assert ref.complete(text)
    assert ref.lex(b"if a:\n  b\n  c") == (["IF", "NAME", "COLON", NL, IND, "NAME", NL], b"c")
    # Two levels back at once, to the middle one.
    assert ref.complete(b"if a:\n  if b:\n    if c:\n      d\n  e\n")


def test_bad_dedent_is_rejected():
    ref = indented()
    prefix = b"if a:\n  if b:\n    c\n "  # column 1 so far: may still grow or break again
    assert ref.viable(prefix)
    # "d" at column 1 matches no level; column 2 and 4 do; a new line may start over.
    assert ref.allowed(prefix, [b"d", b" d", b"   d", b"\nd", b"  \n    d"]) == [False, True, True, True, True]
    assert not ref.viable(b"if a:\n  if b:\n    c\n d")
    assert not ref.complete(b"if a:\n  if b:\n    c\n d\n")
    assert not ref.viable(b"if a:\n  b\n    c")  # an indent where no block opens


def test_brackets_span_lines_and_hide_newlines():
    ref = indented()
    assert ref.lex_complete(b"f(a,\n   b)\n") == ["NAME", "LPAR", "NAME", "COMMA", "NAME", "RPAR", NL]
    assert ref.complete(b"f(a,\n" + b" " * 20 + b"b)\n")  # no column inside brackets, no limit
    assert ref.complete(b"f(a // comment\n , g(b\n))\n")
    assert ref.complete(b"if a:\n  f(\nb)\n  c\n")  # the "\n" at depth 1 sets no column
    assert ref.viable(b"f(a,\n")
    assert ref.viable(b"f(a\n /")  # "\n /" may still become a comment: dropped anyway
    assert ref.lex(b"f(a\n /b") == (["NAME", "LPAR", "NAME", "SLASH"], b"b")  # backtracked
    assert ref.complete(b"f(a\n /b)\n")
    # At depth 0 "\n/" may still be a comment, but "\n/b" is NL then "/", which no statement takes.
    assert ref.viable(b"a\n/")
    assert not ref.viable(b"a\n/b")
    assert not ref.viable(b")") and not ref.viable(b"f(a))")  # a close at depth 0


def test_dedents_at_the_end_of_input():
    ref = indented()
    assert ref.lex_complete(b"if a:\n  if b:\n    c\n") == [
        "IF", "NAME", "COLON", NL, IND, "IF", "NAME", "COLON", NL, IND, "NAME", NL, DED, DED,
    ]  # fmt: skip
    assert ref.complete(b"if a:\n  if b:\n    c\n")
    assert ref.complete(b"if a:\n  b\n")
    assert not ref.complete(b"if a:\n  b")  # the statement needs its newline
    assert not ref.complete(b"if a:\n")
    assert ref.complete(b"if a:\n  b\n\n\n")


def test_column_limit_and_tabs():
    ref = indented()  # max_column = 12, tab = 8 columns
    assert ref.complete(b"if a:\n" + b" " * 11 + b"b\n")
    assert not ref.complete(b"if a:\n" + b" " * 12 + b"b\n")
    assert ref.complete(b"if a:\n\t   b\n")  # 8 + 3 = 11
    assert not ref.complete(b"if a:\n\t    b\n")  # 8 + 4 = 12
    assert ref.complete(b"if a:\n  \tb\n")  # spaces before a tab count too: 10
    assert ref.allowed(b"if a:\n" + b" " * 11, [b"b", b" b", b"\n b"]) == [True, False, True]
    # At column 12 the newline lexeme can still go on to another line.
    assert ref.allowed(b"if a:\n  b\n\t    ", [b"c", b"\n  c", b"\nc\n"]) == [False, True, True]
    parser = lark_indented()  # Lark's Indenter has no limit
    assert lark_indented_parses(parser, "if a:\n" + " " * 12 + "b\n")


def test_newline_lexeme_without_a_newline_is_rejected():
    ref = indented()
    # "// c" at the end is a _NL lexeme with no "\n": Lark's Indenter fails on it (IndexError).
    assert ref.viable(b"a // c")
    assert not ref.complete(b"a // c")
    assert ref.complete(b"a // c\n")
    assert ref.complete(b"a\n// c\nb\n")  # the comment line is inside one _NL lexeme
    parser = lark_indented()
    assert not lark_indented_parses(parser, "a // c")
    assert lark_indented_parses(parser, "a // c\n")


def test_spaces_anywhere_on_the_last_line_count():
    ref = indented()
    # The last line of "\n  // c" is "  // c": three spaces, so column 3 (Lark counts them all).
    assert ref.lex_complete(b"if a:\n  b\n  // c") == [
        "IF", "NAME", "COLON", NL, IND, "NAME", NL, IND, DED, DED,
    ]  # fmt: skip
    assert not ref.complete(b"if a:\n  b\n  // c")
    assert ref.complete(b"if a:\n  b\n  //c")  # column 2
    parser = lark_indented()
    assert not lark_indented_parses(parser, "if a:\n  b\n  // c")
    assert lark_indented_parses(parser, "if a:\n  b\n  //c")


def test_partial_newline_lexeme_viability():
    ref = indented()
    assert ref.viable(b"if a:\n")  # some column above 0 will open the block
    assert not ref.viable(b"if\n")  # no newline is accepted after "if"
    assert ref.viable(b"a\n  ")  # "\n  " alone would indent, "\n  \n" would not
    assert not ref.viable(b"a\n  b")
    assert ref.viable(b"f(\n  ")  # dropped inside brackets
    assert ref.viable(b"a //")
    # A comment ending in a partial character still completes into a newline lexeme.
    assert ref.viable(b"a //\xc3") and ref.viable(b"a //\xf0\x9f")
    assert not ref.viable(b"a //\xc3\n")  # "\n" cannot continue that character
    assert ref.complete("a //é\n".encode()) and not ref.complete(b"a //\xc3")


# Hand-written inputs for the cross-check with Lark (columns below 12: Lark has no limit).
INDENTED_INPUTS = [
    "", "\n", "a\n", "a", "a\nb\n", "\n\na\n\n", "  a\n", "a\n  b\n",
    "if a:\n  b\n", "if a:\n  b\n  c\nd\n", "if a:\nb\n", "if a:\n  b\n c\n", "if a:\n  b\n    c\n",
    "if a:\n  if b:\n    c\nd\n", "if a:\n  if b:\n    c\n  d\n", "if a:\n  if b:\n    c\n   d\n",
    "if a:\n\tb\n", "if a:\n\tb\n        c\n", "if a:\n\tb\n       c\n", "if a:\n \tb\n",
    "f()\n", "f(a)\n", "f(a, b)\n", "f(a,\n b)\n", "f(\na\n,\nb\n)\n", "f(a\n", "f(a))\n", ")\n",
    "f(g(a), h(b / c))\n", "f(a / b /\n c)\n", "if a:\n  f(b,\nc)\n  d\n", "if a:\n  f(b,\nc)\nd\n",
    "a // c\n", "a // c", "// c\n", "// c", "a\n// c\n", "if a:\n  b\n  // c\n  d\n",
    "if a:\n  b\n// c\nd\n", "if a:\n  b\n  //c", "if a:\n  b\n  // c", "f(a // c\n)\n",
    "a\r\n", "if a:\r\n  b\r\n", "iff\n", "if if:\n  a\n", "if a: b\n", "if a:\n  b\n\n  c\n",
    "a\n  \nb\n", "a  \nb\n", "if a :\n  b\n", "f (a)\n", "a\n/b\n", "f(a\n/b)\n", "f(a\n//b\n)\n",
]


def test_complete_agrees_with_lark_and_its_indenter():
    ref = indented()
    parser = lark_indented()
    for text in INDENTED_INPUTS:
        data = text.encode()
        assert ref.complete(data) == lark_indented_parses(parser, text), text
        if ref.complete(data):  # the same terminals, INDENT/DEDENT included
            assert ref.lex_complete(data) == [t.type for t in parser.lex(text)], text
    # Both outcomes occur.
    outcomes = {ref.complete(t.encode()) for t in INDENTED_INPUTS}
    assert outcomes == {True, False}


def test_indenter_options_are_checked():
    with pytest.raises(TypeError):
        ReferenceChecker(INDENTED, indenter=dict(INDENT_OPTIONS, colour="red"))
    with pytest.raises(ValueError):
        ReferenceChecker(INDENTED, indenter=dict(INDENT_OPTIONS, nl="_NEWLINE"))
    with pytest.raises(KeyError):
        ReferenceChecker(INDENTED, indenter=dict(nl="_NL"))
