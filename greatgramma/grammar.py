"""A Lark grammar, resolved by Lark into terminals (for the lexer) and an LALR table (for the parser).

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
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from functools import cached_property
from pathlib import Path

import lark
from lark.lexer import PatternStr

from .errors import GrammarError, GrammarWarning, ResourceLimitError, UnsupportedRegexError
from .indenter import Indenter
from .lexer import TerminalSpec
from .parse_table import ParseTable, parse_table_from_lark

_NO_PRECEDENCE = "Lark's LALR has no precedence declarations"
_PRECEDENCE_HINT = (
    "e.g. one rule per precedence level (sum: sum \"+\" product | product), since " + _NO_PRECEDENCE
)


class Grammar:
    """Lark grammar text plus the options that change its language (start rule, postlexer).

    ``strict=True`` also refuses shift/reduce conflicts, which Lark otherwise resolves as a
    shift (the language is then the one Lark's resolved table accepts), and terminals that can
    never win a lexeme (otherwise a :class:`GrammarWarning`).
    """

    def __init__(
        self,
        text: str,
        *,
        start: str = "start",
        indenter=None,
        source: str | None = None,
        strict: bool = False,
    ):
        if not isinstance(text, str):
            raise TypeError("Grammar text must be a str (use Grammar.from_file for a path)")
        if not isinstance(start, str):
            raise TypeError(f"start must be the name of one rule (a str), got {type(start).__name__}")
        if indenter is not None and not isinstance(indenter, Indenter):
            raise TypeError(f"indenter must be a gg.Indenter (e.g. gg.Indenter.python()), got {type(indenter).__name__}")
        self.text = text
        self.start = start
        self.indenter = indenter
        self.source = source or "<string>"
        self.strict = bool(strict)
        if not start:
            raise self._error("the start rule name is empty; pass start= the name of a rule", kind="start")
        self.lark  # noqa: B018 - compile now so errors surface at construction
        self._check_rules()

    @classmethod
    def _from_artifact(cls, text: str, *, start: str, source: str, indenter=None) -> "Grammar":
        """A grammar read back from a compiled artifact: Lark is only run if something asks for it."""
        self = cls.__new__(cls)
        self.text, self.start, self.indenter, self.source, self.strict = text, start, indenter, source, False
        return self

    @classmethod
    def from_file(cls, path: str | os.PathLike, **kwargs) -> "Grammar":
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

    @cached_property
    def lark(self) -> lark.Lark:
        """The grammar compiled by Lark with the LALR parser and basic lexer (the reference semantics)."""
        try:
            return lark.Lark(self.text, parser="lalr", lexer="basic", start=self.start)
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - Lark raises many kinds (LarkError, OSError, re.error...)
            raise _explain_lark_error(self, exc) from None

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
        """The LALR table; with a postlexer, the terminals it makes come after the lexer's."""
        ind = self.indenter
        names = [t.name for t in self.terminals]
        try:
            if ind is None:
                return parse_table_from_lark(self.lark, names, self.start)
            ind.check_terminals(names)
            return parse_table_from_lark(self.lark, names, self.start, postlexed=ind.made_terminals())
        except GrammarError as exc:
            if exc.source is not None:
                raise
            raise self._error(str(exc), symbol=exc.symbol, kind=exc.kind or "unsupported") from None

    def fingerprint(self) -> str:
        """Hash of everything that defines the language."""
        h = hashlib.sha256()
        h.update(self.text.encode("utf-8"))
        h.update(b"\0start=" + self.start.encode())
        h.update(b"\0indenter=" + repr(self.indenter).encode())  # a frozen dataclass: stable repr
        return h.hexdigest()

    # ------------------------------------------------------------------ checks

    def build_lexer(self, *, max_states: int = 50_000):
        """The lexer DFA of the terminals (``lexer.build_lexer``), with errors that name the file.

        Unsupported regex constructs, empty or impossible terminals and the DFA state limit are
        reported with the source and line, anonymous terminals by their pattern rather than
        Lark's ``__ANON_n``; then :meth:`check_lexer` refuses terminals that can never win.
        """
        from .lexer import build_lexer

        try:
            lexer = build_lexer(self.terminals, max_states=max_states, postlexer=self.indenter)
        except UnsupportedRegexError as exc:
            spec = self._spec(exc.terminal)
            line = self._terminal_line(exc.terminal)
            err = UnsupportedRegexError(_spec_display(spec) if spec else exc.terminal, exc.construct, exc.pattern)
            err.args = (f"{self._where(line)}: {err.args[0]}",)
            err.source, err.line = self.source, line
            raise err from None
        except ResourceLimitError as exc:
            msg = str(exc)
            m = re.match(r"terminal (\S+): (.*)", msg, re.S)
            if m and self._spec(m.group(1)) is not None:
                spec = self._spec(m.group(1))
                line = self._terminal_line(spec.name)
                msg = f"terminal {_spec_display(spec)}: {m.group(2)}"
            else:
                line = None
            raise ResourceLimitError(f"{self._where(line)}: {msg}") from None
        except GrammarError as exc:
            if exc.source is not None:
                raise
            msg = str(exc)
            spec = next((t for t in self.terminals if msg.startswith(f"terminal {t.display} ")), None)
            line = self._terminal_line(spec.name) if spec else None
            symbol = exc.symbol or (spec.name if spec else None)
            kind = exc.kind or ("empty-terminal" if "empty string" in msg else None)
            raise self._error(msg, line=line, symbol=symbol, kind=kind) from None
        self.check_lexer(lexer)
        return lexer

    def _spec(self, name: str) -> TerminalSpec | None:
        return next((t for t in self.terminals if t.name == name), None)

    def check_lexer(self, lexer) -> None:
        """Refuse terminals the lexer can never produce (meant for ``compile``, once the lexer DFA exists).

        A terminal is produced when it wins a lexeme: the longest match, ties going to the higher
        priority, then to a string literal over a regex. A parser-visible terminal that wins no
        lexeme at all (``"if"`` under ``NAME.2: /[a-z]+/``) can never appear in the output, so
        every rule alternative that needs it is dead, and an output that reaches it is a dead end.
        Ignored terminals are not checked (losing all their lexemes only means nothing is ignored).
        Refused with ``strict=True``; otherwise a :class:`GrammarWarning`, since Lark accepts it.
        """
        accept = lexer.accept
        terms = lexer.terminals
        won = {terms[t].name for t in accept[accept >= 0].tolist()}
        for i, spec in enumerate(terms):
            if spec.name in won or spec.ignored:
                continue
            winner = None
            td = self._lark_terminals().get(spec.name)
            if td is not None and isinstance(td.pattern, PatternStr):
                q = 0
                for b in td.pattern.value.encode("utf-8"):
                    q = int(lexer.delta[q, b])
                    if q < 0:
                        break
                if q >= 0 and int(accept[q]) >= 0:
                    winner = terms[int(accept[q])]
            shown = spec.name if _definition_lines(self.text, spec.name) else _spec_display(spec)
            if winner is not None:
                why = (
                    f"its lexeme {td.pattern.value!r} is won by {_spec_display(winner)}"
                    f" (priority {winner.priority} vs {spec.priority}"
                    + (", a string literal wins a tie with a regex" if winner.priority == spec.priority else "")
                    + ")"
                )
                prio = winner.priority + 1
                if _definition_lines(self.text, spec.name):
                    fix = f"raise its priority ({spec.name}.{prio}: ...) or lower {_spec_display(winner)}'s"
                else:
                    fix = f"name it with a higher priority ({spec.name}.{prio}: {spec.display}) and use the name"
            else:
                why = "every lexeme it matches is won by another terminal (higher priority, or a string literal)"
                fix = "raise its priority or change the terminals that shadow it"
            err = self._error(
                f"terminal {shown} can never be produced by the lexer: {why}; {fix}",
                line=self._terminal_line(spec.name),
                symbol=spec.name,
                kind="shadowed-terminal",
            )
            if self.strict:
                raise err
            # Lark accepts such grammars (the benchmark's python.lark: LONG_STRING loses to _NL)
            warnings.warn(GrammarWarning(str(err)), stacklevel=3)

    def _check_rules(self) -> None:
        """Empty language, dead rules, and (strict) shift/reduce conflicts."""
        rules = self.lark.rules
        shortest = _shortest_derivations(rules)
        origins = list(dict.fromkeys(r.origin.name for r in rules))
        dead = [n for n in origins if n not in shortest]
        if dead:
            shown = _names(dead)
            if self.start in dead:
                raise self._error(
                    f"the language is empty: start rule {self.start!r} derives no finite string of terminals "
                    f"(rules that never finish: {shown}); give one of them an alternative that does not recurse",
                    line=self._rule_line(self.start),
                    symbol=self.start,
                    kind="empty-language",
                )
            first = next((n for n in dead if not n.startswith("__")), dead[0])
            raise self._error(
                f"rule {_nice_rule(first)} derives no finite string of terminals (rules that never finish: "
                f"{shown}), so an output that enters it could never be completed; "
                "give it an alternative that does not recurse",
                line=self._rule_line(_user_rule(first)),
                symbol=first,
                kind="empty-language",
            )
        if self.strict:
            conflicts = _lalr_conflicts(rules, self.start, self._lark_terminals(), shortest)
            if conflicts:
                raise self._conflict_error(conflicts)

    # ------------------------------------------------------------------ messages

    def _lark_terminals(self) -> dict:
        return {t.name: t for t in self.lark.terminals}

    def _where(self, line: int | None = None, column: int | None = None) -> str:
        if line is None:
            return self.source
        if column is None:
            return f"{self.source}:{line}"
        return f"{self.source}:{line}:{column}"

    def _error(
        self, message: str, *, line: int | None = None, column: int | None = None, symbol=None, kind=None
    ) -> GrammarError:
        return GrammarError(
            f"{self._where(line, column)}: {message}",
            source=self.source,
            line=line,
            column=column,
            symbol=symbol,
            kind=kind,
        )

    def _rule_line(self, name: str) -> int | None:
        lines = _definition_lines(self.text, name)
        return lines[0] if lines else None

    def _terminal_line(self, name: str) -> int | None:
        lines = _definition_lines(self.text, name)
        if lines:
            return lines[0]
        td = self._lark_terminals().get(name) if "lark" in self.__dict__ else None
        if td is not None:
            needle = f'"{td.pattern.value}"' if isinstance(td.pattern, PatternStr) else f"/{td.pattern.value}/"
            return _line_of(self.text, needle)
        return None

    def _conflict_error(self, conflicts: list[dict]) -> GrammarError:
        c = conflicts[0]
        more = len(conflicts) - 1
        tail = f" ({more} more conflict{'s' if more > 1 else ''} after this one)" if more else ""
        on = c["terminal"]
        after = f" after {c['prefix']}" if c["prefix"] else " at the start of the input"
        if c["kind"] == "reduce/reduce":
            rules = " and ".join(c["rules"])
            names = " or ".join(dict.fromkeys(c["origins"]))
            msg = (
                f"LALR reduce/reduce conflict on {on}{after}: both {rules} apply, so the parser cannot tell "
                f"whether it has read {names}{tail}.\n"
                "Fix: merge the rules, make them differ in a terminal the parser sees first, or give one a "
                f"priority ({c['origins'][0]}.2: ...); {_NO_PRECEDENCE}."
            )
        else:
            msg = (
                f"LALR shift/reduce conflict on {on}{after}: reduce by {c['rules'][0]}, or shift {on} "
                f"to continue {' / '.join(c['shifts'])}; Lark resolves it as a shift{tail}.\n"
                f"Fix: restructure the rules so the next terminal decides, {_PRECEDENCE_HINT} "
                "(or drop strict=True to keep Lark's shift)."
            )
        symbol = c["origins"][0]
        return self._error(msg, line=self._rule_line(_user_rule(symbol)), symbol=symbol, kind="conflict")


# ---------------------------------------------------------------------- Lark's errors, explained


_LARK_EXPECTED = {
    "_RPAR": '")"', "_LPAR": '"("', "_RBRA": '"]"', "_LBRA": '"["', "_RBRACE": '"}"', "_LBRACE": '"{"',
    "_COLON": '":"', "_COMMA": '","', "_OR": '"|"', "_DOT": '"."', "_DOTDOT": '".."', "TILDE": '"~"',
    "_NL": "end of line", "_NL_OR": '"|" on a new line', "RULE": "a rule name", "TERMINAL": "a terminal name",
    "STRING": "a string literal", "REGEXP": "a regex", "NUMBER": "a number", "OP": "an operator (+ * ?)",
    "_TO": '"->"', "$END": "end of input",
}


def _explain_lark_error(g: Grammar, exc: Exception) -> GrammarError:
    """A one- or two-line GrammarError for whatever Lark raised on ``g``."""
    text = g.text
    msg = str(exc)
    first = msg.strip().splitlines()[0] if msg.strip() else type(exc).__name__

    def syntax(line: int, col: int, what: str) -> GrammarError:
        src_line = _source_line(text, line)
        shown = f"\n    {src_line.strip()}" if src_line.strip() else ""
        return g._error(f"grammar syntax error: {what}{shown}", line=line, column=col, kind="syntax")

    # -- syntax ------------------------------------------------------------------------------
    if isinstance(exc, lark.exceptions.UnexpectedInput):
        line, col = getattr(exc, "line", None), getattr(exc, "column", None)
        tok = getattr(exc, "token", None)
        if tok is not None and getattr(tok, "type", None) in ("_NL", "$END"):
            what = "unexpected end of line"
        elif tok is not None:
            what = f"unexpected {str(tok)!r}"
        else:
            what = "unexpected input"
        expected = sorted({_LARK_EXPECTED.get(e, e) for e in getattr(exc, "expected", ()) or ()})
        if expected:
            what += f"; expected {' or '.join(expected[:6])}"
        if isinstance(line, int) and line > 0:
            return syntax(line, col, what)
        return g._error(f"grammar syntax error: {what}", kind="syntax")
    m = re.match(r"(.*), at line (\d+) column (\d+)", first)
    if m:
        what = m.group(1)
        return syntax(int(m.group(2)), int(m.group(3)), what[:1].lower() + what[1:])
    m = re.match(r"Unexpected input at line (\d+) column (\d+)", first)
    if m:
        line, col = int(m.group(1)), int(m.group(2))
        rest = _source_line(text, line)[col - 1 : col + 19]
        return syntax(line, col, f"cannot read {rest!r}" if rest else "unexpected input")

    # -- undefined and duplicate symbols -----------------------------------------------------
    m = re.match(r"(Rule|Terminal|Template) '([^']+)' used but not defined \(in (rule|terminal) ([^)]+)\)", first)
    if m:
        name, user = m.group(2), m.group(4).strip()
        kind = "template" if m.group(1) == "Template" else _symbol_kind(name)
        return g._error(
            f"{kind} {name} is used in {m.group(3)} {user} but never defined{_import_hint(name)}",
            line=_usage_line(text, name, user),
            symbol=name,
            kind="undefined",
        )
    m = re.match(r"Terminal used but not defined: (\S+)", first)
    if m:
        name = m.group(1)
        return g._error(
            f"terminal {name} is used but never defined{_import_hint(name)}",
            line=_usage_line(text, name, None),
            symbol=name,
            kind="undefined",
        )
    m = re.match(r"Terminals \{(.*)\} were marked to ignore but were not defined", first)
    if m:
        names = re.findall(r"'([^']+)'", m.group(1))
        name = names[0] if names else m.group(1)
        return g._error(
            f"%ignore names terminal {name}, which is never defined{_import_hint(name)}",
            line=_line_of(text, "%ignore", name),
            symbol=name,
            kind="undefined",
        )
    m = re.match(r"Using an undefined rule: NonTerminal\('([^']+)'\)", first)
    if m:
        name = m.group(1)
        if name == g.start:
            rules = _defined_rules(text)
            known = f" (rules defined: {', '.join(rules[:8])}{', ...' if len(rules) > 8 else ''})" if rules else ""
            return g._error(
                f"start rule {name!r} is not defined{known}; define it or pass start= the name of a rule",
                symbol=name,
                kind="start",
            )
        return g._error(f"rule {name} is used but never defined", symbol=name, kind="undefined")
    m = re.match(r"(Rule|Terminal) '([^']+)' defined more than once", first)
    if m:
        name = m.group(2)
        lines = _definition_lines(text, name)
        where = f" (lines {', '.join(map(str, lines))})" if len(lines) > 1 else ""
        kind = m.group(1).lower()
        return g._error(
            f"{kind} {name} is defined more than once{where}; "
            + ("merge the alternatives into one definition with |" if kind == "rule" else "keep one definition"),
            line=lines[1] if len(lines) > 1 else None,
            symbol=name,
            kind="duplicate",
        )
    m = re.search(r"Rules defined twice:\s*(?:\*\s*)?<(\S+) : ([^>]*)>", msg)
    if m:
        name = m.group(1)
        known = _terminals_of_text(g)
        alt = " ".join(_terminal_display(t, known, text) for t in m.group(2).split()) or "<empty>"
        return g._error(
            f"rule {_nice_rule(name)} has the same alternative twice ({_nice_rule(name)}: {alt}), "
            "maybe from optional parts ([...] or ?) that expand to the same thing; remove one",
            line=g._rule_line(_user_rule(name)),
            symbol=name,
            kind="duplicate",
        )

    # -- LALR conflicts ----------------------------------------------------------------------
    if "Reduce/Reduce collision" in msg or "Shift/Reduce conflict" in msg:
        try:
            conflicts = _conflicts_of_text(g)
        except Exception:  # noqa: BLE001 - fall back to Lark's own words
            conflicts = []
        if conflicts:
            return g._conflict_error(conflicts)
        return g._error(
            "LALR conflict: " + " ".join(msg.split())[:300] + f"; make the rules unambiguous ({_NO_PRECEDENCE})",
            kind="conflict",
        )

    # -- terminals ---------------------------------------------------------------------------
    m = re.match(r"Lexer does not allow zero-width terminals\. \((\S+): '(.*)'\)$", first)
    if m:
        name, pattern = m.group(1), m.group(2)
        shown = f"/{pattern}/" if name.startswith("__") else f"{name} (/{pattern}/)"
        return g._error(
            f"terminal {shown} matches the empty string; a terminal must consume at least one character: "
            "make it non-empty and the place that uses it optional (X? or [X])",
            line=_definition_line_or_use(text, name, pattern),
            symbol=name,
            kind="empty-terminal",
        )
    m = re.match(r"Empty terminals are not allowed \((.*)\)$", first) or re.match(
        r"Terminals cannot be empty \((.*)\)$", first
    )
    if m:
        name = m.group(1)
        line = _definition_lines(text, name)
        return g._error(
            f"terminal {name} is the empty string; leave it out, or make the place that uses it optional",
            line=line[0] if line else _line_of(text, '""'),
            symbol=name,
            kind="empty-terminal",
        )
    m = re.match(r"Cannot compile token (\S+): '(.*)'$", first)
    if m:
        name, pattern = m.group(1), m.group(2)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                re.compile(pattern)
            reason = "Python's re refuses it"
        except re.error as err:
            reason = str(err)
        shown = f"/{pattern}/" if name.startswith("__") else f"{name} (/{pattern}/)"
        return g._error(
            f"terminal {shown} is not a valid regular expression: {reason}",
            line=_definition_line_or_use(text, name, pattern),
            symbol=name,
            kind="regex",
        )
    m = re.match(r"Recursion in terminal '([^']+)'", first)
    if m:
        name = m.group(1)
        return g._error(
            f"terminal {name} refers to itself; terminals must be regular (recursion is only allowed in rules)",
            line=g._rule_line(name),
            symbol=name,
            kind="syntax",
        )
    m = re.match(r"Rules aren't allowed inside terminals \(NonTerminal\('([^']+)'\) in (\S+)\)", first)
    if m:
        return g._error(
            f"terminal {m.group(2)} uses rule {m.group(1)}; terminals can only use terminals "
            f"(make {m.group(2)} a rule, or {m.group(1)} a terminal)",
            line=g._rule_line(m.group(2)),
            symbol=m.group(2),
            kind="syntax",
        )

    # -- everything else: Lark's first line, with the file -------------------------------------
    if isinstance(exc, OSError):
        name = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        return g._error(
            f"%import failed: {exc.strerror or exc}{name}", line=_line_of(text, "%import"), kind="import"
        )
    if len(exc.args) == 2 and isinstance(exc.args[1], SyntaxError):  # a bad escape in a literal
        return g._error(
            f"invalid string or regex literal {exc.args[0]}: {exc.args[1].msg}",
            line=_line_of(text, str(exc.args[0])),
            kind="syntax",
        )
    if isinstance(exc, RecursionError):
        return g._error("the grammar is nested too deeply for Lark (recursion limit)", kind="syntax")
    kind = "lark" if isinstance(exc, lark.exceptions.LarkError) else type(exc).__name__
    return g._error(_clean_lark_text(first)[:300], kind=kind)


def _clean_lark_text(msg: str) -> str:
    """Lark's reprs (``Terminal('A')``, ``Token('RULE', 'x')``) as plain names."""
    msg = re.sub(r"\b(?:Non)?Terminal\('([^']*)'\)", r"\1", msg)
    return re.sub(r"\bToken\('[^']*', '([^']*)'\)", r"'\1'", msg)


def _terminals_of_text(g: Grammar) -> dict:
    """Lark's terminal definitions for ``g`` by name, when its parser cannot be built ({} on failure)."""
    try:
        from lark.load_grammar import load_grammar

        grammar, _ = load_grammar(g.text, "<string>", [], False)
        terminals, _rules, _ignore = grammar.compile([g.start], set())
    except Exception:  # noqa: BLE001 - only used to show names nicely
        return {}
    return {t.name: t for t in terminals}


def _conflicts_of_text(g: Grammar) -> list[dict]:
    """Rebuild Lark's BNF rules for ``g`` (its parser failed) and list the LALR conflicts."""
    from lark.load_grammar import load_grammar

    grammar, _ = load_grammar(g.text, "<string>", [], False)
    terminals, rules, _ignore = grammar.compile([g.start], set())
    return _lalr_conflicts(rules, g.start, {t.name: t for t in terminals}, _shortest_derivations(rules))


# ---------------------------------------------------------------------- rule analysis


def _shortest_derivations(rules) -> dict[str, tuple[int, object]]:
    """Nonterminal name -> (length of its shortest terminal string, the rule giving it).

    Nonterminals missing from the result derive no finite terminal string (unproductive).
    """
    best: dict[str, tuple[int, object]] = {}
    changed = True
    while changed:
        changed = False
        for r in rules:
            total = 0
            for s in r.expansion:
                if s.is_term:
                    total += 1
                elif s.name in best:
                    total += best[s.name][0]
                else:
                    break
            else:
                name = r.origin.name
                if name not in best or total < best[name][0]:
                    best[name] = (total, r)
                    changed = True
    return best


def _expand_shortest(symbols, shortest, limit: int = 64) -> list[str]:
    """Terminal names of a shortest terminal string derived from ``symbols``."""
    out: list[str] = []
    stack = list(reversed(symbols))
    while stack and len(out) < limit:
        s = stack.pop()
        if s.is_term:
            out.append(s.name)
        else:
            got = shortest.get(s.name)
            if got is None:
                out.append(s.name)
            else:
                stack.extend(reversed(got[1].expansion))
    return out


def _lalr_conflicts(rules, start: str, terminals: dict, shortest) -> list[dict]:
    """Every LALR(1) conflict of the rules, as Lark's analysis sees them (rule priorities applied)."""
    from lark.common import ParserConf
    from lark.parsers.lalr_analysis import LALR_Analyzer

    an = LALR_Analyzer(ParserConf(rules, {}, [start]))
    an.compute_lr0_states()
    an.compute_reads_relations()
    an.compute_includes_lookback()
    an.compute_lookaheads()
    paths = _paths_to_states(an.lr0_start_states[start])
    rule_order = {r: i for i, r in enumerate(rules)}

    def term(name: str) -> str:
        return _terminal_display(name, terminals)

    def rule_text(r, dot: int | None = None) -> str:
        syms = [term(s.name) if s.is_term else _nice_rule(s.name) for s in r.expansion]
        if dot is not None:
            syms.insert(dot, "•")
        return f"{_nice_rule(r.origin.name)}: {' '.join(syms)}" if syms else f"{_nice_rule(r.origin.name)}: <empty>"

    def prefix_of(state) -> str:
        path = paths.get(state)
        if path is None:
            return ""
        names = _expand_shortest(path, shortest)
        shown = [term(n) for n in names]
        if len(shown) > 8:
            shown = ["…"] + shown[-8:]
        return " ".join(shown)

    out: list[dict] = []
    def order(s) -> tuple:
        path = paths.get(s)
        return (len(path) if path is not None else 1 << 30, sorted(str(rp) for rp in s.kernel))

    for itemset in sorted(an.lr0_itemsets, key=order):
        for la, rs in sorted(itemset.lookaheads.items(), key=lambda kv: kv[0].name):
            rs = sorted(rs, key=lambda r: rule_order.get(r, len(rule_order)))
            if len(rs) > 1:
                p = sorted(((r.options.priority or 0), i) for i, r in enumerate(rs))
                if p[-1][0] > p[-2][0]:
                    rs = [rs[p[-1][1]]]
                else:
                    out.append(
                        {
                            "kind": "reduce/reduce",
                            "terminal": term(la.name),
                            "rules": [rule_text(r) for r in rs],
                            "origins": [r.origin.name for r in rs],
                            "shifts": [],
                            "prefix": prefix_of(itemset),
                        }
                    )
                    continue
            if la in itemset.transitions:
                r = rs[0]
                shifts = sorted(
                    rule_text(rp.rule, rp.index) for rp in itemset.closure if not rp.is_satisfied and rp.next == la
                )
                out.append(
                    {
                        "kind": "shift/reduce",
                        "terminal": term(la.name),
                        "rules": [rule_text(r)],
                        "origins": [r.origin.name],
                        "shifts": shifts[:3],
                        "prefix": prefix_of(itemset),
                    }
                )
    out.sort(key=lambda c: c["kind"] != "reduce/reduce")  # reduce/reduce first: those Lark refuses
    return out


def _paths_to_states(start_state) -> dict:
    """LR(0) item set -> the symbols of a shortest path to it from the start (breadth first)."""
    paths = {start_state: ()}
    todo = [start_state]
    while todo:
        nxt = []
        for s in todo:
            for sym, t in sorted(s.transitions.items(), key=lambda kv: (not kv[0].is_term, kv[0].name)):
                if t not in paths:
                    paths[t] = paths[s] + (sym,)
                    nxt.append(t)
        todo = nxt
    return paths


# ---------------------------------------------------------------------- names and lines


def _terminal_display(name: str, terminals: dict, text: str | None = None) -> str:
    if name == "$END":
        return "end of input"
    td = terminals.get(name)
    if td is None:
        if text is not None and not _definition_lines(text, name):  # Lark's name for a punctuation literal
            from lark.load_grammar import _TERMINAL_NAMES

            literal = {v: k for k, v in _TERMINAL_NAMES.items()}.get(name)
            if literal is not None:
                return '"' + literal.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return name
    if isinstance(td.pattern, PatternStr):
        return '"' + td.pattern.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"/{td.pattern.value}/" if name.startswith("__") else name


def _spec_display(spec: TerminalSpec) -> str:
    if spec.is_string:
        return spec.display
    return spec.display if spec.name.startswith("__") else spec.name


_EBNF_RULE = re.compile(r"__(\w+?)_(star|plus)_\d+$")


def _user_rule(name: str) -> str:
    """The user's rule behind a Lark-generated one (``__expr_star_3`` -> ``expr``)."""
    m = _EBNF_RULE.match(name)
    return m.group(1) if m else name


def _nice_rule(name: str) -> str:
    m = _EBNF_RULE.match(name)
    if m:
        return f"({'*' if m.group(2) == 'star' else '+'} repetition in {m.group(1)})"
    return name


def _names(names: list[str], limit: int = 6) -> str:
    shown = list(dict.fromkeys(_nice_rule(n) for n in names))
    return ", ".join(shown[:limit]) + (", ..." if len(shown) > limit else "")


def _symbol_kind(name: str) -> str:
    return "terminal" if name.lstrip("_")[:1].isupper() else "rule"


def _source_line(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


def _definition_lines(text: str, name: str) -> list[int]:
    """1-based lines where ``name`` is defined (``name:``, ``?name:``, ``NAME.2:``, ``name{x}:``)."""
    pat = re.compile(r"^[ \t]*[?!]*" + re.escape(name) + r"(?:\{[^}]*\})?(?:[ \t]*\.[ \t]*-?\d+)?[ \t]*:", re.M)
    return [text.count("\n", 0, m.start()) + 1 for m in pat.finditer(text)]


def _defined_rules(text: str) -> list[str]:
    found = re.findall(r"^[ \t]*[?!]*(_?[a-z][_a-z0-9]*)(?:\{[^}]*\})?(?:[ \t]*\.[ \t]*-?\d+)?[ \t]*:", text, re.M)
    return list(dict.fromkeys(found))


_LITERALS = re.compile(r'"(?:\\.|[^"\\\n])*"i?|/(?!/)(?:\\.|[^/\\\n])+/[imslux]*|//[^\n]*')


def _mentions(line: str, name: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", _LITERALS.sub(" ", line)) is not None


def _usage_line(text: str, name: str, in_symbol: str | None) -> int | None:
    """Line of the first use of ``name`` (inside ``in_symbol``'s definition when given)."""
    lines = text.splitlines()
    begin = 0
    if in_symbol:
        defs = _definition_lines(text, in_symbol)
        if defs:
            begin = defs[0] - 1
    for i in range(begin, len(lines)):
        if _mentions(lines[i], name) and not _definition_lines(lines[i], name):
            return i + 1
    return None


def _line_of(text: str, needle: str, also: str | None = None) -> int | None:
    for i, line in enumerate(text.splitlines()):
        if needle in line and (also is None or also in line):
            return i + 1
    return None


def _definition_line_or_use(text: str, name: str, pattern: str) -> int | None:
    lines = _definition_lines(text, name)
    if lines:
        return lines[0]
    return _line_of(text, f"/{pattern}/") or _line_of(text, f'"{pattern}"')


_COMMON: set[str] | None = None


def _import_hint(name: str) -> str:
    """`` (did you mean %import common.NAME?)`` when Lark's common grammar defines the name."""
    global _COMMON
    if _COMMON is None:
        try:
            common = (Path(lark.__file__).parent / "grammars" / "common.lark").read_text(encoding="utf-8")
            _COMMON = set(re.findall(r"^([A-Z_][A-Z_0-9]*)(?:\.\d+)?\s*:", common, re.M))
        except OSError:  # pragma: no cover - a Lark without its grammars
            _COMMON = set()
    return f" (did you mean %import common.{name}?)" if name in _COMMON else ""
