"""Go's semicolon insertion as a Lark postlexer: the language reference for grammars/go.lark.

A newline token becomes ";" after an identifier, a literal, break/continue/fallthrough/return,
++/-- or a closing bracket, and is dropped otherwise; the end of input does the same. The rule
reads the token stream only (Go's scanner does too), independently of greatgramma's parser wrapper.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator, Sequence

import lark
from lark import Token

GO_AFTER = (
    "NAME", "BASIC_LIT", "STRING", "IMPORT_PATH", "BREAK", "CONTINUE", "FALLTHROUGH", "RETURN", "INC", "DEC",
    "RPAR", "RSQB", "RBRACE",
)  # fmt: skip


class LarkSemicolons(lark.lark.PostLex):
    """Lark postlexer: ``nl`` tokens become ``semicolon`` tokens after the ``after`` ones, or vanish."""

    def __init__(self, nl: str = "NEWLINE", semicolon: str = "SEMICOLON", after: Sequence[str] = GO_AFTER):
        self.nl, self.semicolon, self.after = nl, semicolon, frozenset(after)
        self.always_accept = (nl,)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        last = None
        for tok in stream:
            if tok.type == self.nl:
                if last is not None and last.type in self.after:
                    last = Token.new_borrow_pos(self.semicolon, "\n", tok)
                    yield last
                continue
            last = tok
            yield tok
        if last is not None and last.type in self.after:
            yield Token(self.semicolon, "")


@lru_cache(maxsize=4)
def lark_go_parser(grammar_text: str) -> lark.Lark:
    """A Lark LALR parser (basic lexer) with Go's semicolon insertion, built once per grammar."""
    return lark.Lark(grammar_text, parser="lalr", lexer="basic", postlex=LarkSemicolons())


def lark_go_parses(grammar_text: str, data: bytes) -> bool:
    """Whether Lark with :class:`LarkSemicolons` accepts ``data`` (UTF-8)."""
    try:
        lark_go_parser(grammar_text).parse(data.decode("utf-8"))
    except (lark.exceptions.LarkError, UnicodeDecodeError):
        return False
    return True
