"""diagnostics.LARK_MESSAGES, rule by rule, against the messages Lark really raises (issue 13).

Each rule recognises one of Lark's English messages by a pattern. For every rule a small bad
grammar makes Lark raise; the test checks Lark's literal first line, that this rule (and no rule
before it) recognises the message, and the message the user gets. A Lark release that rewords a
message fails the test named after the rule.
"""

from __future__ import annotations

import pytest

import greatgramma as gg
from greatgramma import diagnostics, lark_adapter

# rule name -> (grammar, start rule, Lark's first line, our message)
CASES = {
    "syntax error at": (
        'start: "a" |* "b"\n',
        "start",
        "Misplaced operator, at line 1 column 13",
        '<string>:1:13: grammar syntax error: misplaced operator\n    start: "a" |* "b"',
    ),
    "unreadable input": (
        'start: "a" "b" %\n',
        "start",
        "Unexpected input at line 1 column 16 in <string>:",
        "<string>:1:16: grammar syntax error: cannot read '%'\n    start: \"a\" \"b\" %",
    ),
    "undefined symbol": (
        'start: "a" b\n',
        "start",
        "Rule 'b' used but not defined (in rule start)",
        "<string>:1: rule b is used in rule start but never defined",
    ),
    "undefined terminal": (
        'start: A\nA: B "x"\n',
        "start",
        "Terminal used but not defined: B",
        "<string>:2: terminal B is used but never defined",
    ),
    "undefined ignored terminal": (
        'start: "a"\n%ignore WS\n',
        "start",
        "Terminals {'WS'} were marked to ignore but were not defined!",
        "<string>:2: %ignore names terminal WS, which is never defined (did you mean %import common.WS?)",
    ),
    "undefined rule": (
        'expr: "a"\nterm: "b"\n',
        "nope",
        "Using an undefined rule: NonTerminal('nope')",
        "<string>: start rule 'nope' is not defined (rules defined: expr, term); "
        "define it or pass start= the name of a rule",
    ),
    "duplicate definition": (
        'start: "a"\nstart: "b"\n',
        "start",
        "Rule 'start' defined more than once",
        "<string>:2: rule start is defined more than once (lines 1, 2); "
        "merge the alternatives into one definition with |",
    ),
    "duplicate alternative": (
        'start: value\nvalue: "a" | "[" [value |("," value)*] "]"\n',
        "start",
        "Rules defined twice:",
        '<string>:2: rule value has the same alternative twice (value: "[" "]"), maybe from optional parts '
        "([...] or ?) that expand to the same thing; remove one",
    ),
    "reduce/reduce collision": (
        'start: x "a" | y "a" "b"\nx: "c" "d"\ny: "c" "d"\n',
        "start",
        "Reduce/Reduce collision in Terminal('A') between the following rules:",
        '<string>:2: LALR reduce/reduce conflict on "a" after "c" "d": both x: "c" "d" and y: "c" "d" apply, '
        "so the parser cannot tell whether it has read x or y.\n"
        "Fix: merge the rules, make them differ in a terminal the parser sees first, or give one a priority "
        "(x.2: ...); Lark's LALR has no precedence declarations.",
    ),
    "zero-width terminal": (
        "start: A\nA: /a*/\n",
        "start",
        "Lexer does not allow zero-width terminals. (A: 'a*')",
        "<string>:2: terminal A (/a*/) matches the empty string; a terminal must consume at least one "
        "character: make it non-empty and the place that uses it optional (X? or [X])",
    ),
    "empty literal": (
        'start: "x" ""\n',
        "start",
        'Empty terminals are not allowed ("")',
        '<string>:1: terminal "" is the empty string; leave it out, or make the place that uses it optional',
    ),
    "empty terminal": (
        "start: A\nA:\n",
        "start",
        "Terminals cannot be empty (A)",
        "<string>:2: terminal A is the empty string; leave it out, or make the place that uses it optional",
    ),
    "invalid regex": (
        "start: A\nA: /(/\n",
        "start",
        "Cannot compile token A: '('",
        "<string>:2: terminal A (/(/) is not a valid regular expression: missing ), unterminated subpattern "
        "at position 0",
    ),
    "recursive terminal": (
        'start: A\nA: "a" A\n',
        "start",
        "Recursion in terminal 'A' (recursion is only allowed in rules, not terminals)",
        "<string>:2: terminal A refers to itself; terminals must be regular (recursion is only allowed in rules)",
    ),
    "rule in terminal": (
        'start: A\nA: "a" b\nb: "c"\n',
        "start",
        "Rules aren't allowed inside terminals (NonTerminal('b') in A)",
        "<string>:2: terminal A uses rule b; terminals can only use terminals (make A a rule, or b a terminal)",
    ),
}


def lark_error(text: str, start: str) -> Exception:
    """What Lark itself raises for the grammar."""
    with pytest.raises(Exception) as info:
        lark_adapter.build_lark(text, start)
    return info.value


def our_message(text: str, start: str) -> str:
    with pytest.raises(gg.GrammarError) as info:
        gg.Grammar(text, start=start)
    return str(info.value)


def test_every_rule_has_a_case() -> None:
    assert [rule.name for rule in diagnostics.LARK_MESSAGES] == list(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_rule_recognises_lark_message(name: str) -> None:
    text, start, lark_first_line, ours = CASES[name]
    exc = lark_error(text, start)
    assert str(exc).splitlines()[0].rstrip() == lark_first_line
    found = diagnostics.match_lark_message(str(exc))
    assert found is not None and found[0].name == name, str(exc)
    assert our_message(text, start) == ours


@pytest.mark.parametrize(
    "text,lark_type,ours",
    [
        # Lark's parser of grammar files: raised as UnexpectedInput, explained from its fields
        ('start: "a"\nfoo: ( "b"\n', lark_adapter.UnexpectedInput,
         '<string>:2:11: grammar syntax error: unexpected end of line; expected ")"\n    foo: ( "b"'),
        # an %import Lark cannot find: its OSError
        ("%import nofile.X\nstart: X\n", OSError, "<string>:1: %import failed: No such file or directory: nofile.lark"),
        # a bad escape: Lark's GrammarError carries Python's SyntaxError
        ('start: "\\xZZ"\n', lark_adapter.LarkError, "<string>:1: invalid string or regex literal"),
        # no rule recognises it: Lark's first line, with the file
        ('start: "a"~5..2\n', lark_adapter.LarkError, "<string>: Bad Range for "),
    ],
)
def test_lark_errors_recognised_by_type(text: str, lark_type: type, ours: str) -> None:
    exc = lark_error(text, "start")
    assert isinstance(exc, lark_type) and diagnostics.match_lark_message(str(exc)) is None
    assert our_message(text, "start").startswith(ours)


def test_lark_version_outside_the_pin_is_refused_at_import() -> None:
    lark_adapter.check_lark_version(lark_adapter.lark.__version__)
    for version in ("1.1.9", "1.4.0", "2.0", "nightly"):
        with pytest.raises(ImportError, match=r"greatgramma needs lark>=1\.2,<1\.4 .* pip install"):
            lark_adapter.check_lark_version(version)
