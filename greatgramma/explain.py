"""Rejections said for people: terminal names, what was unexpected, indentation errors in CPython's words.

The one place where messages name terminals (:func:`terminal_name`): :class:`~greatgramma.masker.Masker`
(``expected``, ``diagnose``, :class:`~greatgramma.errors.TokenRejectedError`) and ``gg check`` use it.
"""

from __future__ import annotations

from typing import NamedTuple

from .indenter import IndentedParser
from .lexer import TerminalSpec

END_OF_INPUT = "end of input"

# Conventional terminal names (leading underscores dropped) and what people call them. EOS is a
# statement end in grammars (Go's), not the model's end-of-sequence token.
PLAIN_NAMES = {
    "NL": "newline",
    "NEWLINE": "newline",
    "INDENT": "indent",
    "DEDENT": "dedent",
    "EOS": "end of statement",
    "WS": "whitespace",
}

_BYTE_NAMES = {9: "tab", 10: "newline", 13: "carriage return", 32: "space"}


class Diagnosis(NamedTuple):
    """Why some bytes cannot follow a state (:meth:`Masker.diagnose`).

    ``offset``: how many of the bytes keep the output viable (the fault is at the next one, or
    at the end of input); ``message``: what is wrong there; ``expected``: what could come
    instead, named for people (empty where the message says it all, as for indentation).
    """

    offset: int
    message: str
    expected: list[str]


def terminal_name(spec: TerminalSpec) -> str:
    """A terminal as messages name it: a literal's text in quotes, an anonymous regex as
    ``/regex/``, ``newline``/``indent``/``dedent`` for the indenter's, else its name."""
    if spec.column is not None:  # the indenter's newline, split by column
        return "newline"
    if spec.is_string or spec.name.startswith("__"):
        return spec.display
    bare = spec.name.lstrip("_")
    plain = PLAIN_NAMES.get(bare.upper())
    if plain is not None:
        return plain
    return bare.lower().replace("_", " ") if spec.name.startswith("_") else spec.name


def text_at(rest: bytes) -> str:
    """The character (or byte) that ``rest`` starts with, for "unexpected ..."."""
    for n in range(1, min(4, len(rest)) + 1):
        try:
            ch = rest[:n].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return _BYTE_NAMES.get(ord(ch)) or (repr(ch) if ch.isprintable() else f"character U+{ord(ch):04X}")
    return f"byte 0x{rest[0]:02x}"


def diagnosis(
    offset: int, parser: object, refused: TerminalSpec | None, stack: object, rest: bytes | None, expected: list[str]
) -> Diagnosis:
    """What is wrong where the output stops being viable, ``offset`` bytes in.

    ``rest``: the input from the failing byte (None: the end of input); ``refused``: the
    terminal the parser refused there (None when the lexer is why, or a lexeme cannot go on);
    ``stack``: the parser's stack it was refused on, or else the stack after the byte;
    ``expected``: what the state before the byte expects.
    """
    why = None
    if refused is not None and refused.column is not None:
        why = indentation_error(parser, stack, refused.column)
    elif refused is None and indent_only(parser, stack):
        why = "expected an indented block"
    if why is not None:
        return Diagnosis(offset, why, [])
    if rest is None:
        return Diagnosis(offset, f"unexpected {END_OF_INPUT}", expected)
    return Diagnosis(offset, f"unexpected {text_at(rest) if refused is None else terminal_name(refused)}", expected)


def indent_only(parser: object, stack: object) -> bool:
    """An indented parser whose only way on is an indent (a block's first line)."""
    if not isinstance(parser, IndentedParser) or stack.brackets:
        return False
    return parser.table.expected(stack.lalr) == [parser.indent]


def indentation_error(parser: object, stack: object, column: int) -> str | None:
    """Why an indented parser refuses a newline at ``column``, as CPython says it; None when
    the newline itself is unexpected."""
    if not isinstance(parser, IndentedParser):
        return None
    ind = parser.indenter
    if column >= ind.max_column:
        return f"indentation of {ind.max_column} columns or more is not supported"
    if parser.table.feed(stack.lalr, parser.nl) is None:
        return None
    levels = stack.levels
    if column > levels[-1]:
        return "unexpected indent"
    if column not in levels:
        return "unindent does not match any outer indentation level"
    deeper = range(parser.first_column + levels[-1] + 1, parser.bad_column)
    if any(parser.feed(stack, t) is not None for t in deeper):
        return "expected an indented block"
    return None
