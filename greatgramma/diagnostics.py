"""Grammar error messages: Lark's errors explained, LALR conflicts and dead rules found and named.

Every message names the file, the line where it can be found, and the rule or terminal at
fault, shows anonymous terminals by their literal or regex rather than Lark's ``__ANON_n``, and
says how to fix it. Lark's own errors are recognised by their English text: :data:`LARK_MESSAGES`
is a table of (pattern, handler) rules, each tested against Lark's literal message
(tests/test_diagnostics.py), so that a Lark release that rewords one fails a named test.
"""

from __future__ import annotations

import inspect
import os
import re
import warnings
from collections.abc import Callable
from typing import NamedTuple

from . import lark_adapter
from .errors import UNDEFINED_START_HINT, GrammarError, GrammarWarning, Hint, ResourceLimitError, UnsupportedRegexError
from .lark_adapter import GrammarParts, LalrStates, Rule, Symbol, TerminalDef
from .lexer import TerminalSpec

_NO_PRECEDENCE = "Lark's LALR has no precedence declarations"
_PRECEDENCE_HINT = (
    "e.g. one rule per precedence level (sum: sum \"+\" product | product), since " + _NO_PRECEDENCE
)


class GrammarSite(NamedTuple):
    """A grammar's text, file name and start rule: what a message needs to point at the fault."""

    text: str
    source: str
    start: str

    def where(self, line: int | None = None, column: int | None = None) -> str:
        """``file``, ``file:line`` or ``file:line:column``: how a message begins."""
        if line is None:
            return self.source
        if column is None:
            return f"{self.source}:{line}"
        return f"{self.source}:{line}:{column}"

    def error(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        symbol: str | None = None,
        kind: str | None = None,
        hint: Hint | None = None,
    ) -> GrammarError:
        """A :class:`GrammarError` whose message starts with :meth:`where`."""
        return GrammarError(
            f"{self.where(line, column)}: {message}",
            source=self.source,
            line=line,
            column=column,
            symbol=symbol,
            kind=kind,
            hint=hint,
        )

    def rule_line(self, name: str) -> int | None:
        """The line that defines rule (or terminal) ``name``."""
        lines = definition_lines(self.text, name)
        return lines[0] if lines else None

    def terminal_line(self, name: str, terminals: dict[str, TerminalDef]) -> int | None:
        """The line that defines terminal ``name``, or for an anonymous one the first line using its text."""
        lines = definition_lines(self.text, name)
        if lines:
            return lines[0]
        td = terminals.get(name)
        if td is None:
            return None
        return _line_of(self.text, f'"{td.value}"' if td.is_string else f"/{td.value}/")


# ---------------------------------------------------------------------- Lark's errors, explained


class MessageRule(NamedTuple):
    """How to explain one of Lark's messages: the pattern that recognises it and the handler."""

    name: str
    pattern: re.Pattern[str]
    handler: Callable[[GrammarSite, re.Match[str]], GrammarError]
    whole_message: bool = False  # search the whole message; otherwise match its first line


def explain_lark_error(site: GrammarSite, exc: Exception) -> GrammarError:
    """A one- or two-line GrammarError for whatever Lark raised on the grammar."""
    if isinstance(exc, lark_adapter.UnexpectedInput):
        return _unexpected_input(site, exc)
    found = match_lark_message(str(exc), type(exc).__name__)
    if found is not None:
        rule, m = found
        return rule.handler(site, m)
    return _unrecognised(site, exc)


def match_lark_message(message: str, default: str = "") -> tuple[MessageRule, re.Match[str]] | None:
    """The first rule of :data:`LARK_MESSAGES` that recognises ``message``, with its match."""
    first = _first_line(message, default)
    for rule in LARK_MESSAGES:
        m = rule.pattern.search(message) if rule.whole_message else rule.pattern.match(first)
        if m:
            return rule, m
    return None


def _first_line(message: str, default: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else default


_LARK_EXPECTED = {  # Lark's names for the terminals of its own grammar syntax
    "_RPAR": '")"', "_LPAR": '"("', "_RBRA": '"]"', "_LBRA": '"["', "_RBRACE": '"}"', "_LBRACE": '"{"',
    "_COLON": '":"', "_COMMA": '","', "_OR": '"|"', "_DOT": '"."', "_DOTDOT": '".."', "TILDE": '"~"',
    "_NL": "end of line", "_NL_OR": '"|" on a new line', "RULE": "a rule name", "TERMINAL": "a terminal name",
    "STRING": "a string literal", "REGEXP": "a regex", "NUMBER": "a number", "OP": "an operator (+ * ?)",
    "_TO": '"->"', "$END": "end of input",
}


def _syntax_error(site: GrammarSite, line: int, column: int, what: str) -> GrammarError:
    src_line = _source_line(site.text, line)
    shown = f"\n    {src_line.strip()}" if src_line.strip() else ""
    return site.error(f"grammar syntax error: {what}{shown}", line=line, column=column, kind="syntax")


def _unexpected_input(site: GrammarSite, exc: Exception) -> GrammarError:
    """Lark's parser of grammar files stopped at a token or character (raised as is, not reworded)."""
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
        return _syntax_error(site, line, col, what)
    return site.error(f"grammar syntax error: {what}", kind="syntax")


def _unrecognised(site: GrammarSite, exc: Exception) -> GrammarError:
    """Errors no rule recognises: by their type, else Lark's first line with the file."""
    if isinstance(exc, OSError):
        name = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        return site.error(
            f"%import failed: {exc.strerror or exc}{name}", line=_line_of(site.text, "%import"), kind="import"
        )
    if len(exc.args) == 2 and isinstance(exc.args[1], SyntaxError):  # a bad escape in a literal
        return site.error(
            f"invalid string or regex literal {exc.args[0]}: {exc.args[1].msg}",
            line=_line_of(site.text, str(exc.args[0])),
            kind="syntax",
        )
    if isinstance(exc, RecursionError):
        return site.error("the grammar is nested too deeply for Lark (recursion limit)", kind="syntax")
    kind = "lark" if isinstance(exc, lark_adapter.LarkError) else type(exc).__name__
    return site.error(_clean_lark_text(_first_line(str(exc), type(exc).__name__))[:300], kind=kind)


def _clean_lark_text(msg: str) -> str:
    """Lark's reprs (``Terminal('A')``, ``Token('RULE', 'x')``) as plain names."""
    msg = re.sub(r"\b(?:Non)?Terminal\('([^']*)'\)", r"\1", msg)
    return re.sub(r"\bToken\('[^']*', '([^']*)'\)", r"'\1'", msg)


# -- syntax: Lark rewords its parser's errors ----------------------------------------------------


def _syntax_error_at(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    what = m.group(1)
    return _syntax_error(site, int(m.group(2)), int(m.group(3)), what[:1].lower() + what[1:])


def _unreadable_input(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    line, col = int(m.group(1)), int(m.group(2))
    rest = _source_line(site.text, line)[col - 1 : col + 19]
    return _syntax_error(site, line, col, f"cannot read {rest!r}" if rest else "unexpected input")


# -- undefined and duplicate symbols --------------------------------------------------------------


def _undefined_symbol(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    name, user = m.group(2), m.group(4).strip()
    kind = "template" if m.group(1) == "Template" else _symbol_kind(name)
    return site.error(
        f"{kind} {name} is used in {m.group(3)} {user} but never defined{_import_hint(name)}",
        line=_usage_line(site.text, name, user),
        symbol=name,
        kind="undefined",
    )


def _undefined_terminal(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    name = m.group(1)
    return site.error(
        f"terminal {name} is used but never defined{_import_hint(name)}",
        line=_usage_line(site.text, name, None),
        symbol=name,
        kind="undefined",
    )


def _undefined_ignored(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    names = re.findall(r"'([^']+)'", m.group(1))
    name = names[0] if names else m.group(1)
    return site.error(
        f"%ignore names terminal {name}, which is never defined{_import_hint(name)}",
        line=_line_of(site.text, "%ignore", name),
        symbol=name,
        kind="undefined",
    )


def _undefined_rule(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    name = m.group(1)
    if name == site.start:
        rules = _defined_rules(site.text)
        known = f" (rules defined: {', '.join(rules[:8])}{', ...' if len(rules) > 8 else ''})" if rules else ""
        return site.error(
            f"start rule {name!r} is not defined{known}",
            symbol=name,
            kind="start",
            hint=UNDEFINED_START_HINT,
        )
    return site.error(f"rule {name} is used but never defined", symbol=name, kind="undefined")


def _duplicate_definition(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    name = m.group(2)
    lines = definition_lines(site.text, name)
    where = f" (lines {', '.join(map(str, lines))})" if len(lines) > 1 else ""
    kind = m.group(1).lower()
    return site.error(
        f"{kind} {name} is defined more than once{where}; "
        + ("merge the alternatives into one definition with |" if kind == "rule" else "keep one definition"),
        line=lines[1] if len(lines) > 1 else None,
        symbol=name,
        kind="duplicate",
    )


def _duplicate_alternative(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    name = m.group(1)
    try:
        known = lark_adapter.grammar_parts_of_text(site.text, site.start).terminals
    except Exception:  # noqa: BLE001 - only used to show names nicely
        known = {}
    alt = " ".join(terminal_display(t, known, site.text) for t in m.group(2).split()) or "<empty>"
    return site.error(
        f"rule {_nice_rule(name)} has the same alternative twice ({_nice_rule(name)}: {alt}), "
        "maybe from optional parts ([...] or ?) that expand to the same thing; remove one",
        line=site.rule_line(_user_rule(name)),
        symbol=name,
        kind="duplicate",
    )


# -- LALR conflicts -------------------------------------------------------------------------------


def _lalr_conflict(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    """Lark names one conflict in its own terms; redo the analysis to explain it in the user's."""
    try:
        parts = lark_adapter.grammar_parts_of_text(site.text, site.start)
        conflicts = lalr_conflicts(parts, site.start, shortest_derivations(parts.rules))
    except Exception:  # noqa: BLE001 - fall back to Lark's own words
        conflicts = []
    if conflicts:
        return conflict_error(site, conflicts)
    return site.error(
        "LALR conflict: " + " ".join(m.string.split())[:300] + f"; make the rules unambiguous ({_NO_PRECEDENCE})",
        kind="conflict",
    )


# -- terminals ------------------------------------------------------------------------------------


def _zero_width_terminal(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    name, pattern = m.group(1), m.group(2)
    shown = f"/{pattern}/" if name.startswith("__") else f"{name} (/{pattern}/)"
    return site.error(
        f"terminal {shown} matches the empty string; a terminal must consume at least one character: "
        "make it non-empty and the place that uses it optional (X? or [X])",
        line=_definition_line_or_use(site.text, name, pattern),
        symbol=name,
        kind="empty-terminal",
    )


def _empty_terminal(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    name = m.group(1)
    line = definition_lines(site.text, name)
    return site.error(
        f"terminal {name} is the empty string; leave it out, or make the place that uses it optional",
        line=line[0] if line else _line_of(site.text, '""'),
        symbol=name,
        kind="empty-terminal",
    )


def _invalid_regex(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    name, pattern = m.group(1), m.group(2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(pattern)
        reason = "Python's re refuses it"
    except re.error as err:
        reason = str(err)
    shown = f"/{pattern}/" if name.startswith("__") else f"{name} (/{pattern}/)"
    return site.error(
        f"terminal {shown} is not a valid regular expression: {reason}",
        line=_definition_line_or_use(site.text, name, pattern),
        symbol=name,
        kind="regex",
    )


def _recursive_terminal(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    name = m.group(1)
    return site.error(
        f"terminal {name} refers to itself; terminals must be regular (recursion is only allowed in rules)",
        line=site.rule_line(name),
        symbol=name,
        kind="syntax",
    )


def _rule_in_terminal(site: GrammarSite, m: re.Match[str]) -> GrammarError:
    return site.error(
        f"terminal {m.group(2)} uses rule {m.group(1)}; terminals can only use terminals "
        f"(make {m.group(2)} a rule, or {m.group(1)} a terminal)",
        line=site.rule_line(m.group(2)),
        symbol=m.group(2),
        kind="syntax",
    )


LARK_MESSAGES: tuple[MessageRule, ...] = (
    MessageRule("syntax error at", re.compile(r"(.*), at line (\d+) column (\d+)"), _syntax_error_at),
    MessageRule("unreadable input", re.compile(r"Unexpected input at line (\d+) column (\d+)"), _unreadable_input),
    MessageRule(
        "undefined symbol",
        re.compile(r"(Rule|Terminal|Template) '([^']+)' used but not defined \(in (rule|terminal) ([^)]+)\)"),
        _undefined_symbol,
    ),
    MessageRule("undefined terminal", re.compile(r"Terminal used but not defined: (\S+)"), _undefined_terminal),
    MessageRule(
        "undefined ignored terminal",
        re.compile(r"Terminals \{(.*)\} were marked to ignore but were not defined"),
        _undefined_ignored,
    ),
    MessageRule("undefined rule", re.compile(r"Using an undefined rule: NonTerminal\('([^']+)'\)"), _undefined_rule),
    MessageRule(
        "duplicate definition", re.compile(r"(Rule|Terminal) '([^']+)' defined more than once"), _duplicate_definition
    ),
    MessageRule(
        "duplicate alternative",
        re.compile(r"Rules defined twice:\s*(?:\*\s*)?<(\S+) : ([^>]*)>"),
        _duplicate_alternative,
        whole_message=True,
    ),
    MessageRule("reduce/reduce collision", re.compile(r"Reduce/Reduce collision"), _lalr_conflict, whole_message=True),
    MessageRule(
        "zero-width terminal",
        re.compile(r"Lexer does not allow zero-width terminals\. \((\S+): '(.*)'\)$"),
        _zero_width_terminal,
    ),
    MessageRule("empty literal", re.compile(r"Empty terminals are not allowed \((.*)\)$"), _empty_terminal),
    MessageRule("empty terminal", re.compile(r"Terminals cannot be empty \((.*)\)$"), _empty_terminal),
    MessageRule("invalid regex", re.compile(r"Cannot compile token (\S+): '(.*)'$"), _invalid_regex),
    MessageRule("recursive terminal", re.compile(r"Recursion in terminal '([^']+)'"), _recursive_terminal),
    MessageRule(
        "rule in terminal",
        re.compile(r"Rules aren't allowed inside terminals \(NonTerminal\('([^']+)'\) in (\S+)\)"),
        _rule_in_terminal,
    ),
)


# ---------------------------------------------------------------------- the lexer's errors, located


def locate_lexer_error(
    site: GrammarSite, exc: GrammarError | ResourceLimitError, terminals: list[TerminalSpec], defs: dict[str, TerminalDef]
) -> Exception:
    """The lexer's error with the file and line, anonymous terminals shown by their text.

    ``exc`` itself when it already names its source (raise it as is).
    """
    if isinstance(exc, UnsupportedRegexError):
        spec = _spec_named(terminals, exc.terminal)
        line = site.terminal_line(exc.terminal, defs)
        err = UnsupportedRegexError(spec_display(spec) if spec else exc.terminal, exc.construct, exc.pattern)
        err.args = (f"{site.where(line)}: {err.args[0]}",)
        err.source, err.line = site.source, line
        return err
    if isinstance(exc, ResourceLimitError):
        msg = str(exc)
        m = re.match(r"terminal (\S+): (.*)", msg, re.S)
        spec = _spec_named(terminals, m.group(1)) if m else None
        line = None
        if spec is not None:
            line = site.terminal_line(spec.name, defs)
            msg = f"terminal {spec_display(spec)}: {m.group(2)}"
        return ResourceLimitError(f"{site.where(line)}: {msg}")
    if exc.source is not None:
        return exc
    msg = str(exc)
    spec = next((t for t in terminals if msg.startswith(f"terminal {t.display} ")), None)
    line = site.terminal_line(spec.name, defs) if spec else None
    symbol = exc.symbol or (spec.name if spec else None)
    kind = exc.kind or ("empty-terminal" if "empty string" in msg else None)
    return site.error(msg, line=line, symbol=symbol, kind=kind)


def _spec_named(terminals: list[TerminalSpec], name: str) -> TerminalSpec | None:
    return next((t for t in terminals if t.name == name), None)


def shadowed_terminal_error(
    site: GrammarSite, spec: TerminalSpec, winner: TerminalSpec | None, defs: dict[str, TerminalDef]
) -> GrammarError:
    """Terminal ``spec`` wins no lexeme; ``winner`` takes its literal text, when it is a literal."""
    named = bool(definition_lines(site.text, spec.name))
    if winner is not None:
        why = (
            f"its lexeme {defs[spec.name].value!r} is won by {spec_display(winner)}"
            f" (priority {winner.priority} vs {spec.priority}"
            + (", a string literal wins a tie with a regex" if winner.priority == spec.priority else "")
            + ")"
        )
        prio = winner.priority + 1
        if named:
            fix = f"raise its priority ({spec.name}.{prio}: ...) or lower {spec_display(winner)}'s"
        else:
            fix = f"name it with a higher priority ({spec.name}.{prio}: {spec.display}) and use the name"
    else:
        why = "every lexeme it matches is won by another terminal (higher priority, or a string literal)"
        fix = "raise its priority or change the terminals that shadow it"
    shown = spec.name if named else spec_display(spec)
    return site.error(
        f"terminal {shown} can never be produced by the lexer: {why}; {fix}",
        line=site.terminal_line(spec.name, defs),
        symbol=spec.name,
        kind="shadowed-terminal",
    )


def warn(err: GrammarError) -> None:
    """Give ``err`` as a :class:`GrammarWarning` that points at the grammar's file and line
    (the message without them), or, for a grammar without a file, at the caller outside greatgramma."""
    where = f"{err.source}:{err.line}: "
    if err.line is not None and err.source and os.path.isfile(err.source) and str(err).startswith(where):
        warnings.warn_explicit(GrammarWarning(str(err)[len(where) :]), GrammarWarning, err.source, err.line)
        return
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = inspect.currentframe(), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(GrammarWarning(str(err)), stacklevel=level)


# ---------------------------------------------------------------------- rule analysis


def shortest_derivations(rules: tuple[Rule, ...]) -> dict[str, tuple[int, Rule]]:
    """Nonterminal name -> (length of its shortest terminal string, the rule giving it).

    Nonterminals missing from the result derive no finite terminal string (unproductive).
    """
    best: dict[str, tuple[int, Rule]] = {}
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
                if r.origin not in best or total < best[r.origin][0]:
                    best[r.origin] = (total, r)
                    changed = True
    return best


def unproductive_rule_error(
    site: GrammarSite, rules: tuple[Rule, ...], shortest: dict[str, tuple[int, Rule]]
) -> GrammarError | None:
    """An empty language, or a rule an output could enter but never complete (None if neither)."""
    origins = list(dict.fromkeys(r.origin for r in rules))
    dead = [n for n in origins if n not in shortest]
    if not dead:
        return None
    shown = _names(dead)
    if site.start in dead:
        return site.error(
            f"the language is empty: start rule {site.start!r} derives no finite string of terminals "
            f"(rules that never finish: {shown}); give one of them an alternative that does not recurse",
            line=site.rule_line(site.start),
            symbol=site.start,
            kind="empty-language",
        )
    first = next((n for n in dead if not n.startswith("__")), dead[0])
    return site.error(
        f"rule {_nice_rule(first)} derives no finite string of terminals (rules that never finish: "
        f"{shown}), so an output that enters it could never be completed; "
        "give it an alternative that does not recurse",
        line=site.rule_line(_user_rule(first)),
        symbol=first,
        kind="empty-language",
    )


class Conflict(NamedTuple):
    """One LALR(1) conflict, in the user's terms."""

    kind: str  # "reduce/reduce" or "shift/reduce"
    terminal: str  # the lookahead, as displayed
    rules: list[str]  # the rules that could be reduced, as displayed
    origins: list[str]  # their rule names
    shifts: list[str]  # items that shift the lookahead, with a dot (at most 3)
    prefix: str  # a shortest input (terminals) that leads to the conflict


def lalr_conflicts(
    parts: GrammarParts, start: str, shortest: dict[str, tuple[int, Rule]], lark_obj=None, *, tables=None
) -> list[Conflict]:
    """Every LALR(1) conflict of the rules, as Lark's analysis sees them (rule priorities applied).

    Reduce/reduce conflicts come first (Lark refuses them), then shift/reduce (Lark shifts);
    each kind in the order of the states' shortest paths from the start. ``lark_obj``: the
    grammar as Lark built it, whose kept analysis is read instead of analysing again, or
    ``tables``: our tables of these rules.
    """
    lalr = lark_adapter.lalr_states(parts.rules, start, lark_obj, conflicts_only=True, tables=tables)
    if lalr is None:  # our tables saw no conflict
        return []
    paths = _paths_to_states(lalr)

    def prefix_of(state: int) -> str:
        path = paths.get(state)
        if path is None:
            return ""
        shown = [terminal_display(n, parts.terminals) for n in _expand_shortest(path, shortest)]
        if len(shown) > 8:
            shown = ["…"] + shown[-8:]
        return " ".join(shown)

    def order(state: int) -> tuple:
        path = paths.get(state)
        return (len(path) if path is not None else 1 << 30, lalr.states[state].kernel)

    out: list[Conflict] = []
    for i in sorted(range(len(lalr.states)), key=order):
        state = lalr.states[i]
        for la, rs in sorted(state.reductions.items()):
            if len(rs) > 1:
                p = sorted((r.priority, k) for k, r in enumerate(rs))
                if p[-1][0] <= p[-2][0]:
                    out.append(_conflict("reduce/reduce", la, rs, [], prefix_of(i), parts.terminals))
                    continue
                rs = (rs[p[-1][1]],)
            lookahead = Symbol(la, True)
            if lookahead in state.transitions:
                shifts = sorted(
                    _rule_text(item.rule, parts.terminals, item.dot)
                    for item in state.closure
                    if item.dot < len(item.rule.expansion) and item.rule.expansion[item.dot] == lookahead
                )
                out.append(_conflict("shift/reduce", la, rs[:1], shifts[:3], prefix_of(i), parts.terminals))
    out.sort(key=lambda c: c.kind != "reduce/reduce")  # reduce/reduce first: those Lark refuses
    return out


def _conflict(
    kind: str, la: str, rules: tuple[Rule, ...], shifts: list[str], prefix: str, terminals: dict[str, TerminalDef]
) -> Conflict:
    return Conflict(
        kind=kind,
        terminal=terminal_display(la, terminals),
        rules=[_rule_text(r, terminals) for r in rules],
        origins=[r.origin for r in rules],
        shifts=shifts,
        prefix=prefix,
    )


def _rule_text(rule: Rule, terminals: dict[str, TerminalDef], dot: int | None = None) -> str:
    syms = [terminal_display(s.name, terminals) if s.is_term else _nice_rule(s.name) for s in rule.expansion]
    if dot is not None:
        syms.insert(dot, "•")
    return f"{_nice_rule(rule.origin)}: {' '.join(syms)}" if syms else f"{_nice_rule(rule.origin)}: <empty>"


def _paths_to_states(lalr: LalrStates) -> dict[int, tuple[Symbol, ...]]:
    """State -> the symbols of a shortest path to it from the start (breadth first, terminals first)."""
    paths: dict[int, tuple[Symbol, ...]] = {lalr.start: ()}
    todo = [lalr.start]
    while todo:
        nxt = []
        for s in todo:
            for sym, t in sorted(lalr.states[s].transitions.items(), key=lambda kv: (not kv[0].is_term, kv[0].name)):
                if t not in paths:
                    paths[t] = paths[s] + (sym,)
                    nxt.append(t)
        todo = nxt
    return paths


def _expand_shortest(symbols: tuple[Symbol, ...], shortest: dict[str, tuple[int, Rule]], limit: int = 64) -> list[str]:
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


def conflict_error(site: GrammarSite, conflicts: list[Conflict]) -> GrammarError:
    """The first conflict explained, with a fix and the count of the others."""
    c = conflicts[0]
    more = len(conflicts) - 1
    tail = f" ({more} more conflict{'s' if more > 1 else ''} after this one)" if more else ""
    on = c.terminal
    after = f" after {c.prefix}" if c.prefix else " at the start of the input"
    if c.kind == "reduce/reduce":
        rules = " and ".join(c.rules)
        names = " or ".join(dict.fromkeys(c.origins))
        msg = (
            f"LALR reduce/reduce conflict on {on}{after}: both {rules} apply, so the parser cannot tell "
            f"whether it has read {names}{tail}.\n"
            "Fix: merge the rules, make them differ in a terminal the parser sees first, or give one a "
            f"priority ({c.origins[0]}.2: ...); {_NO_PRECEDENCE}."
        )
    else:
        msg = (
            f"LALR shift/reduce conflict on {on}{after}: reduce by {c.rules[0]}, or shift {on} "
            f"to continue {' / '.join(c.shifts)}; Lark resolves it as a shift{tail}.\n"
            f"Fix: restructure the rules so the next terminal decides, {_PRECEDENCE_HINT} "
            "(or drop strict=True to keep Lark's shift)."
        )
    symbol = c.origins[0]
    return site.error(msg, line=site.rule_line(_user_rule(symbol)), symbol=symbol, kind="conflict")


# ---------------------------------------------------------------------- names and lines


def _quoted(literal: str) -> str:
    return '"' + literal.replace("\\", "\\\\").replace('"', '\\"') + '"'


def terminal_display(name: str, terminals: dict[str, TerminalDef], text: str | None = None) -> str:
    """How messages show a terminal Lark named: its literal, its regex if anonymous, else its name.

    With the grammar ``text``, a name Lark made up for punctuation (``LSQB``) that the text does
    not define shows as its literal even when ``terminals`` is unknown.
    """
    if name == "$END":
        return "end of input"
    td = terminals.get(name)
    if td is None:
        if text is not None and not definition_lines(text, name):
            literal = lark_adapter.punctuation_literal(name)
            if literal is not None:
                return _quoted(literal)
        return name
    if td.is_string:
        return _quoted(td.value)
    return f"/{td.value}/" if name.startswith("__") else name


def spec_display(spec: TerminalSpec) -> str:
    """How messages show a lexer terminal: a literal or an anonymous regex by its text, else its name."""
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


def definition_lines(text: str, name: str) -> list[int]:
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
        defs = definition_lines(text, in_symbol)
        if defs:
            begin = defs[0] - 1
    for i in range(begin, len(lines)):
        if _mentions(lines[i], name) and not definition_lines(lines[i], name):
            return i + 1
    return None


def _line_of(text: str, needle: str, also: str | None = None) -> int | None:
    for i, line in enumerate(text.splitlines()):
        if needle in line and (also is None or also in line):
            return i + 1
    return None


def _definition_line_or_use(text: str, name: str, pattern: str) -> int | None:
    lines = definition_lines(text, name)
    if lines:
        return lines[0]
    return _line_of(text, f"/{pattern}/") or _line_of(text, f'"{pattern}"')


def _import_hint(name: str) -> str:
    """`` (did you mean %import common.NAME?)`` when Lark's common grammar defines the name."""
    return f" (did you mean %import common.{name}?)" if name in lark_adapter.common_terminal_names() else ""
