"""A Lark grammar, resolved by Lark into terminals (for the lexer) and an LALR table (for the parser)."""

from __future__ import annotations

import hashlib
import os
from functools import cached_property
from pathlib import Path

import lark
from lark.lexer import PatternStr

from .errors import GrammarError
from .lexer import TerminalSpec
from .parser import ParseTable, parse_table_from_lark


class Grammar:
    """Lark grammar text plus the options that change its language (start rule, postlexer)."""

    def __init__(self, text: str, *, start: str = "start", indenter=None, source: str | None = None):
        if not isinstance(text, str):
            raise TypeError("Grammar text must be a str (use Grammar.from_file for a path)")
        self.text = text
        self.start = start
        self.indenter = indenter
        self.source = source or "<string>"
        self.lark  # noqa: B018 - compile now so errors surface at construction

    @classmethod
    def _from_artifact(cls, text: str, *, start: str, source: str) -> "Grammar":
        """A grammar read back from a compiled artifact: Lark is only run if something asks for it."""
        self = cls.__new__(cls)
        self.text, self.start, self.indenter, self.source = text, start, None, source
        return self

    @classmethod
    def from_file(cls, path: str | os.PathLike, **kwargs) -> "Grammar":
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise GrammarError(f"cannot read grammar file {str(p)!r}: {exc.strerror or exc}") from None
        return cls(text, source=str(p), **kwargs)

    @cached_property
    def lark(self) -> lark.Lark:
        """The grammar compiled by Lark with the LALR parser and basic lexer (the reference semantics)."""
        try:
            return lark.Lark(self.text, parser="lalr", lexer="basic", start=self.start)
        except lark.exceptions.GrammarError as exc:
            raise GrammarError(f"{self.source}: {exc}".strip()) from None
        except lark.exceptions.UnexpectedInput as exc:
            where = f"line {getattr(exc, 'line', '?')}, column {getattr(exc, 'column', '?')}"
            raise GrammarError(f"{self.source}: Lark syntax error at {where}: {exc}".strip()) from None
        except lark.exceptions.LarkError as exc:
            raise GrammarError(f"{self.source}: {exc}".strip()) from None

    @cached_property
    def terminals(self) -> list[TerminalSpec]:
        """The lexer's terminals as Lark resolved them (used and ignored ones)."""
        conf = self.lark.lexer_conf
        ignored = set(conf.ignore)
        out = []
        for td in conf.terminals:
            pat = td.pattern
            out.append(
                TerminalSpec(
                    name=td.name,
                    pattern=pat.to_regexp(),
                    is_string=isinstance(pat, PatternStr),
                    priority=td.priority,
                    max_width=pat.max_width,
                    value_len=len(pat.value),
                    ignored=td.name in ignored,
                )
            )
        return out

    @cached_property
    def parse_table(self) -> ParseTable:
        return parse_table_from_lark(self.lark, [t.name for t in self.terminals], self.start)

    def fingerprint(self) -> str:
        """Hash of everything that defines the language."""
        h = hashlib.sha256()
        h.update(self.text.encode("utf-8"))
        h.update(b"\0start=" + self.start.encode())
        h.update(b"\0indenter=" + repr(self.indenter).encode())
        return h.hexdigest()
