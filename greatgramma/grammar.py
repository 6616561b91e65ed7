"""A Lark grammar, resolved by Lark into terminals (for the lexer) and an LALR table (for the parser).

Texts in the plain subset the front ends write are resolved the same way without Lark's loader
(:mod:`greatgramma.plain_grammar`); Lark itself is then built only when asked for (``Grammar.lark``).

Everything wrong with a grammar surfaces here as a :class:`GrammarError` whose message names
the file, the line where it can be found, and the rule or terminal at fault:

* Lark syntax errors (line and column, and the offending source line);
* undefined rules and terminals, duplicate definitions, a start rule that does not exist;
* LALR conflicts: reduce/reduce always (Lark refuses them too); shift/reduce only with
  ``strict=True``, because Lark resolves them as a shift and that resolved table is the
  reference semantics (the Go grammar alone has hundreds);
* an empty language, and more generally any rule that derives no finite string of terminals
  (an output that enters it could never be completed: a dead end for the masks);
* terminals that match the empty string, invalid regexes, and (:meth:`Grammar.check_lexer`,
  once the lexer exists) terminals that the lexer can never produce because other terminals
  win every lexeme they match.

The messages are composed in :mod:`greatgramma.diagnostics`; Lark is reached only through
:mod:`greatgramma.lark_adapter`.
"""

from __future__ import annotations

import hashlib
import os
from functools import cached_property
from pathlib import Path

import numpy as np

from . import diagnostics, lark_adapter, plain_grammar
from .diagnostics import GrammarSite
from .errors import START_HINT, GrammarError, ResourceLimitError
from .indenter import Indenter
from .lark_adapter import GrammarParts
from .lexer import LexerDFA, TerminalSpec, build_lexer
from .parse_table import ParseTable
from .postlexer import Postlexer


class Grammar:
    """Lark grammar text plus the options that change its language (start rule, postlexer).

    ``postlexer``: a :class:`~greatgramma.postlexer.Postlexer` (``gg.Semicolons.go()`` for Go);
    ``indenter`` is the same option for a :class:`~greatgramma.indenter.Indenter` (at most one).

    ``strict=True`` also refuses shift/reduce conflicts, which Lark otherwise resolves as a
    shift (the language is then the one Lark's resolved table accepts), and terminals that can
    never win a lexeme (otherwise a :class:`GrammarWarning`).
    """

    def __init__(
        self,
        text: str,
        *,
        start: str = "start",
        indenter: Indenter | None = None,
        postlexer: Postlexer | None = None,
        source: str | None = None,
        strict: bool = False,
    ):
        if not isinstance(text, str):
            raise TypeError("Grammar text must be a str (use Grammar.from_file for a path)")
        if not isinstance(start, str):
            raise TypeError(f"start must be the name of one rule (a str), got {type(start).__name__}")
        if indenter is not None and not isinstance(indenter, Indenter):
            raise TypeError(f"indenter must be a gg.Indenter (e.g. gg.Indenter.python()), got {type(indenter).__name__}")
        if postlexer is not None and not isinstance(postlexer, Postlexer):
            raise TypeError(
                f"postlexer must be a gg.Postlexer (e.g. gg.Semicolons.go()), got {type(postlexer).__name__}"
            )
        if indenter is not None and postlexer is not None:
            raise TypeError("pass either indenter= or postlexer=, not both")
        self.text = text
        self.start = start
        self.postlexer = indenter if indenter is not None else postlexer
        self.source = source or "<string>"
        self.strict = bool(strict)
        if not start:
            raise self._site.error("the start rule name is empty", kind="start", hint=START_HINT)
        if self._plain is None:
            self.lark  # noqa: B018 - compile now so errors surface at construction
        self._check_rules()

    @classmethod
    def from_saved(
        cls, text: str, *, start: str, source: str, indenter: Indenter | None = None, postlexer: Postlexer | None = None
    ) -> Grammar:
        """A grammar read back from a compiled artifact: checked when saved, so Lark only runs if asked."""
        self = cls.__new__(cls)
        self.text, self.start, self.source, self.strict = text, start, source, False
        self.postlexer = indenter if indenter is not None else postlexer
        return self

    @property
    def indenter(self) -> Indenter | None:
        """The postlexer if it is an :class:`~greatgramma.indenter.Indenter`."""
        return self.postlexer if isinstance(self.postlexer, Indenter) else None


    @classmethod
    def from_file(cls, path: str | os.PathLike, **kwargs) -> Grammar:
        """The grammar in a UTF-8 file; messages name the file (``source``)."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise GrammarError(
                f"{p}: not UTF-8 text (byte {exc.start}: {exc.reason})", source=str(p), kind="syntax"
            ) from None
        except OSError as exc:
            raise GrammarError(
                f"cannot read grammar file {str(p)!r}: {exc.strerror or exc}", source=str(p), kind="io"
            ) from None
        return cls(text, source=str(p), **kwargs)

    @classmethod
    def from_json_schema(
        cls, schema: dict | bool | str, *, whitespace: str | int = "json", additional_properties: bool = True,
        max_repeat: int = 128,
    ) -> Grammar:
        """The schema's valid instances in the canonical form (:mod:`greatgramma.frontends.json_schema`).

        ``whitespace``: ``"json"`` (any, as RFC 8259), ``"compact"`` (none) or an int bounding each
        run; ``additional_properties=False`` forbids members the schema does not name where it
        says nothing; ``max_repeat`` bounds how far lengths and item counts are unrolled. Checked
        with ``strict=True``: a conflict Lark would resolve silently is refused instead. Objects
        of at most five named members take them in any order, and of up to 24 the required ones
        first (in the order of ``required``) and a merged part's members first (``allOf``, a
        ``oneOf`` branch) as well as in ``properties`` order. Where that leaves the grammar outside
        LALR(1) (objects of a union told apart by a member's value: the parser would have to see
        that member first), the objects of each ``oneOf``/``anyOf`` become one object rule that
        tracks which branches the members' values leave (where each member's values split by
        branch); where the grammar is still not LALR(1), every object keeps the order of
        ``properties``.
        """
        from .frontends.json_schema import ANY_ORDER, json_schema_to_lark

        def build(any_order: int, object_unions: bool) -> Grammar:
            text = json_schema_to_lark(
                schema, whitespace=whitespace, additional_properties=additional_properties, max_repeat=max_repeat,
                any_order=any_order, object_unions=object_unions,
            )
            return cls(text, source="<json schema>", strict=True)

        error = None
        for any_order in (ANY_ORDER, 0):
            for object_unions in (False, True):  # (the second only where the first's rules conflict)
                try:
                    return build(any_order, object_unions)
                except GrammarError as exc:
                    if not object_unions:  # (the plain form's refusal is the one reported)
                        if exc.kind != "conflict":
                            raise
                        error = exc
        raise error

    @classmethod
    def from_regex(cls, pattern: str) -> Grammar:
        """The strings ``re.fullmatch(pattern, s)`` accepts (a REGEX request)."""
        from .frontends import regex_to_lark

        return cls(regex_to_lark(pattern), source="<regex>", strict=True)

    @classmethod
    def from_choices(cls, choices) -> Grammar:
        """Exactly the given strings (a CHOICE request)."""
        from .frontends import choices_to_lark

        return cls(choices_to_lark(choices), source="<choices>", strict=True)

    @classmethod
    def any_json(cls, *, whitespace: str | int = "json", object_only: bool = True) -> Grammar:
        """Any JSON object (a JSON_OBJECT request), or any JSON value with ``object_only=False``."""
        from .frontends import any_json_lark

        return cls(any_json_lark(whitespace=whitespace, object_only=object_only), source="<json>", strict=True)

    @cached_property
    def lark(self) -> lark_adapter.Lark:
        """The grammar compiled by Lark with the LALR parser and basic lexer (the reference semantics)."""
        try:
            keep = () if self.postlexer is None else self.postlexer.lexed_terminals()
            return lark_adapter.build_lark(self.text, self.start, keep=keep, keep_analysis=self.strict)
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - Lark raises many kinds (LarkError, OSError, re.error...)
            raise diagnostics.explain_lark_error(self._site, exc) from None

    @cached_property
    def _plain(self) -> plain_grammar.Resolved | None:
        """The text resolved without Lark's loader, where it is in the plain subset the front
        ends write (:mod:`greatgramma.plain_grammar`); None: Lark resolves it."""
        return plain_grammar.resolve(self.text, self.start) if self.postlexer is None else None

    @cached_property
    def terminals(self) -> list[TerminalSpec]:
        """The lexer's terminals as Lark resolved them (used and ignored ones)."""
        if self._plain is not None:
            return self._plain.terminals
        return lark_adapter.lexer_terminals(self.lark)

    @cached_property
    def parse_table(self) -> ParseTable:
        """The LALR table; with a postlexer, the terminals it makes come after the lexer's."""
        ind = self.postlexer
        names = [t.name for t in self.terminals]
        if self._plain is not None:
            return lark_adapter.parse_table_from_tables(self._plain.tables, names)
        try:
            if ind is None:
                return lark_adapter.parse_table_from_lark(self.lark, names, self.start)
            ind.check_terminals(names)
            return lark_adapter.parse_table_from_lark(self.lark, names, self.start, postlexed=ind.made_terminals())
        except GrammarError as exc:
            if exc.source is not None:
                raise
            located = self._site.error(str(exc), symbol=exc.symbol, kind=exc.kind or "unsupported")
            located.hint = exc.hint  # its API wording already ends the message
            raise located from None

    def fingerprint(self) -> str:
        """Hash of everything that defines the language."""
        h = hashlib.sha256()
        h.update(self.text.encode("utf-8"))
        h.update(b"\0start=" + self.start.encode())
        h.update(b"\0indenter=" + repr(self.indenter).encode())  # a frozen dataclass: stable repr
        if self.postlexer is not None and self.indenter is None:
            h.update(b"\0postlexer=" + repr(self.postlexer).encode())
        return h.hexdigest()

    @property
    def _site(self) -> GrammarSite:
        return GrammarSite(self.text, self.source, self.start)

    @cached_property
    def _parts(self) -> GrammarParts:
        if self._plain is not None:
            return self._plain.parts
        return lark_adapter.grammar_parts(self.lark)

    # ------------------------------------------------------------------ checks

    def build_lexer(self, *, max_states: int = 50_000, deadline: float | None = None) -> LexerDFA:
        """The lexer DFA of the terminals (``lexer.build_lexer``), with errors that name the file.

        Unsupported regex constructs, empty or impossible terminals and the DFA state limit are
        reported with the source and line, anonymous terminals by their pattern rather than
        Lark's ``__ANON_n``; then :meth:`check_lexer` refuses terminals that can never win.
        """
        try:
            lexer = build_lexer(self.terminals, max_states=max_states, postlexer=self.postlexer, deadline=deadline)
        except (GrammarError, ResourceLimitError) as exc:  # UnsupportedRegexError is a GrammarError
            located = diagnostics.locate_lexer_error(self._site, exc, self.terminals, self._parts.terminals)
            if located is exc:
                raise
            raise located from None
        self.check_lexer(lexer)
        return lexer

    def check_lexer(self, lexer: LexerDFA) -> None:
        """Refuse terminals the lexer can never produce (meant for ``compile``, once the lexer DFA exists).

        A terminal is produced when it wins a lexeme: the longest match, ties going to the higher
        priority, then to a string literal over a regex. A parser-visible terminal that wins no
        lexeme at all (``"if"`` under ``NAME.2: /[a-z]+/``) can never appear in the output, so
        every rule alternative that needs it is dead, and an output that reaches it is a dead end.
        Ignored terminals are not checked (losing all their lexemes only means nothing is ignored).
        Refused with ``strict=True``; otherwise a :class:`GrammarWarning`, since Lark accepts it.
        """
        terms = lexer.terminals
        won = set()
        for accept in (lexer.accept, lexer.accept_next):  # accept_next: lexemes a lookahead decides (`>(?!>)`)
            won.update(terms[t].name for t in np.unique(accept[accept >= 0]).tolist())
        for spec in terms:
            if spec.name in won or spec.ignored:
                continue
            err = diagnostics.shadowed_terminal_error(
                self._site, spec, self._literal_winner(lexer, spec.name), self._parts.terminals
            )
            if self.strict:
                raise err
            # Lark accepts such grammars (SynCode's original python.lark: LONG_STRING loses to _NL)
            diagnostics.warn(err)

    def _literal_winner(self, lexer: LexerDFA, name: str) -> TerminalSpec | None:
        """The terminal the lexer produces for the text of string literal ``name`` (None for a regex)."""
        td = self._parts.terminals.get(name)
        if td is None or not td.is_string:
            return None
        q = 0
        for b in td.value.encode("utf-8"):
            q = int(lexer.delta[q, b])
            if q < 0:
                return None
        return lexer.terminals[int(lexer.accept[q])] if int(lexer.accept[q]) >= 0 else None

    def _check_rules(self) -> None:
        """Empty language, dead rules, and (strict) shift/reduce conflicts."""
        rules = self._parts.rules
        shortest = diagnostics.shortest_derivations(rules)
        dead_end = diagnostics.unproductive_rule_error(self._site, rules, shortest)
        if dead_end is not None:
            raise dead_end
        if self.strict:
            if self._plain is not None:
                conflicts = diagnostics.lalr_conflicts(self._parts, self.start, shortest, tables=self._plain.tables)
            else:
                conflicts = diagnostics.lalr_conflicts(self._parts, self.start, shortest, self.lark)
                self.lark.__dict__.pop("greatgramma_analysis", None)  # read once: let it go
            if conflicts:
                raise diagnostics.conflict_error(self._site, conflicts)
