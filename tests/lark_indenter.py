"""Lark's Indenter postlexer as a test helper: the reference for grammars with indentation (python.lark).

`python_indenter()` is what grammars/python.lark and grammars/bench/python.lark need: `_NL`
newlines, `(`/`[`/`{` suspend indentation, `_INDENT`/`_DEDENT` declared terminals, tabs count 8
columns, and the text begins at a line start (gg.Indenter's `line_start`, which Lark's Indenter
lacks: the parser from `lark_parser` parses "\n" + text then, so an indented first line counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import lark
from lark.indenter import Indenter


def lark_indenter(
    nl: str,
    open_paren: Sequence[str],
    close_paren: Sequence[str],
    tab_len: int = 8,
    indent: str = "_INDENT",
    dedent: str = "_DEDENT",
    line_start: bool = False,
) -> Indenter:
    """A fresh `lark.indenter.Indenter` with these terminal names (``line_start``: read by `lark_parser`)."""
    columns = tab_len  # a class body cannot read a closure variable it also assigns

    class _Indenter(Indenter):
        NL_type = nl
        OPEN_PAREN_types = list(open_paren)
        CLOSE_PAREN_types = list(close_paren)
        INDENT_type = indent
        DEDENT_type = dedent
        tab_len = columns

    made = _Indenter()
    made.line_start = line_start
    return made


def python_indenter() -> Indenter:
    """A fresh indenter for grammars/python.lark and grammars/bench/python.lark (with ``line_start``)."""
    return lark_indenter("_NL", ["LPAR", "LSQB", "LBRACE"], ["RPAR", "RSQB", "RBRACE"], tab_len=8, line_start=True)


class _LineStartLark:
    """A Lark parser that reads its text as if it followed a newline."""

    def __init__(self, parser: lark.Lark) -> None:
        self.lark = parser

    def parse(self, text: str):
        return self.lark.parse("\n" + text)


@lru_cache(maxsize=8)
def _parser(grammar_text: str, indenter_key: tuple) -> lark.Lark | _LineStartLark:
    *names, line_start = indenter_key
    parser = lark.Lark(grammar_text, parser="lalr", lexer="basic", postlex=lark_indenter(*names))
    return _LineStartLark(parser) if line_start else parser


def _key(indenter: Indenter) -> tuple:
    return (
        indenter.NL_type,
        tuple(indenter.OPEN_PAREN_types),
        tuple(indenter.CLOSE_PAREN_types),
        indenter.tab_len,
        indenter.INDENT_type,
        indenter.DEDENT_type,
        getattr(indenter, "line_start", False),
    )


def lark_parser(grammar_text: str, indenter: Indenter) -> lark.Lark | _LineStartLark:
    """A Lark LALR parser (basic lexer) with this indenter as postlexer, built once per grammar and indenter."""
    return _parser(grammar_text, _key(indenter))


def lark_parses(grammar_text: str, data: bytes, indenter: Indenter) -> bool:
    """Whether Lark (LALR, basic lexer, `indenter` as postlexer) accepts `data` (UTF-8)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    try:
        lark_parser(grammar_text, indenter).parse(text)
    except (lark.exceptions.LarkError, AssertionError):  # the Indenter asserts on a stray closing bracket
        return False
    return True
