"""Everything greatgramma reads from Lark, behind plain functions and small types of our own.

Lark builds the reference semantics (its grammar loader, its LALR analysis and table); this module
is the only one that imports ``lark``, and it reads some of Lark's internals (the LALR table of a
built parser, the phases of ``LALR_Analyzer``, ``load_grammar``'s names for punctuation). Those
were checked against the releases in :data:`SUPPORTED_LARK`, which pyproject pins; another
release is refused at import, with the versions to install.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import NamedTuple

import lark
import numpy as np
from lark.common import ParserConf
from lark.exceptions import LarkError, UnexpectedInput
from lark.grammar import NonTerminal as LarkNonTerminal
from lark.grammar import Rule as LarkRule
from lark.grammar import RuleOptions as LarkRuleOptions
from lark.grammar import Terminal as LarkTerminal
from lark.lexer import PatternStr
from lark.load_grammar import _TERMINAL_NAMES as LARK_PUNCTUATION_NAMES
from lark.load_grammar import load_grammar
from lark.parsers import lalr_parser as _lalr_parser
from lark.parsers.lalr_analysis import LALR_Analyzer, Shift

from .errors import INDENTER_HINT, GrammarError
from .lexer import TerminalSpec
from .codes import ERROR, REDUCE
from .parse_table import ParseTable

__all__ = [
    "SUPPORTED_LARK",
    "GrammarParts",
    "Item",
    "LR0State",
    "LalrStates",
    "Lark",
    "LarkError",
    "Rule",
    "Symbol",
    "TerminalDef",
    "UnexpectedInput",
    "build_lark",
    "check_lark_version",
    "common_terminal_names",
    "grammar_parts",
    "grammar_parts_of_text",
    "lalr_states",
    "lexer_terminals",
    "parse_table_from_lark",
    "punctuation_literal",
]

Lark = lark.Lark
SUPPORTED_LARK = ((1, 2), (1, 4))  # [lowest, first refused): the releases whose internals we read


def check_lark_version(version: str) -> None:
    """Refuse a Lark release outside :data:`SUPPORTED_LARK` (its internals may differ)."""
    (low_major, low_minor), (high_major, high_minor) = SUPPORTED_LARK
    wanted = f"lark>={low_major}.{low_minor},<{high_major}.{high_minor}"
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None or not SUPPORTED_LARK[0] <= (int(found[1]), int(found[2])) < SUPPORTED_LARK[1]:
        raise ImportError(
            f"greatgramma needs {wanted} (it reads Lark's LALR tables and grammar internals, checked "
            f"against those releases), but lark {version} is installed: pip install '{wanted}'"
        )


check_lark_version(lark.__version__)


class Symbol(NamedTuple):
    """A grammar symbol: a terminal or a rule (nonterminal), by name."""

    name: str
    is_term: bool


class Rule(NamedTuple):
    """One BNF alternative as Lark expanded it (EBNF operators become generated ``__x_star_n`` rules)."""

    index: int  # position in the grammar's rule list (the order Lark lists them)
    origin: str
    expansion: tuple[Symbol, ...]
    priority: int  # Lark's rule priority (0 when none was given)


class TerminalDef(NamedTuple):
    """How a terminal was written: a string literal or a regex, and its source text."""

    name: str
    value: str  # the literal's text, or the regex's source
    is_string: bool


class GrammarParts(NamedTuple):
    """A grammar as Lark resolved it: its terminals by name and its BNF rules."""

    terminals: dict[str, TerminalDef]
    rules: tuple[Rule, ...]


class Item(NamedTuple):
    """An LR(0) item: a rule with a dot before ``rule.expansion[dot]``."""

    rule: Rule
    dot: int


class LR0State(NamedTuple):
    """One LR(0) item set of Lark's LALR analysis, with its LALR(1) lookaheads."""

    kernel: tuple[str, ...]  # its kernel items as Lark writes them, sorted: a name that orders states
    closure: tuple[Item, ...]
    transitions: dict[Symbol, int]  # symbol -> index of the next state
    reductions: dict[str, tuple[Rule, ...]]  # lookahead terminal -> the rules reduced on it, in grammar order


class LalrStates(NamedTuple):
    """The LR(0) automaton of a grammar with LALR(1) lookaheads, states numbered by kernel."""

    states: tuple[LR0State, ...]
    start: int


class _KeptAnalyzer(LALR_Analyzer):
    """Lark's LALR analyzer, remembered (per thread) as Lark builds a grammar's parser, so that
    :func:`lalr_states` can read its lookaheads instead of running the analysis again."""

    def __init__(self, parser_conf: ParserConf, *args, **kwargs) -> None:
        super().__init__(parser_conf, *args, **kwargs)
        self.greatgramma_rules = parser_conf.rules
        _ANALYZED.last = self


_ANALYZED = threading.local()
_lalr_parser.LALR_Analyzer = _KeptAnalyzer  # the name Lark's LALR_Parser builds its analyzer through


def build_lark(text: str, start: str, keep: tuple[str, ...] = (), *, keep_analysis: bool = False) -> lark.Lark:
    """The grammar compiled by Lark with the LALR parser and basic lexer (the reference semantics).

    ``keep``: terminals the lexer makes although no rule uses them (a postlexer reads them).
    ``keep_analysis``: keep Lark's LALR analysis on the result, for :func:`lalr_states` (its
    conflicts) without a second analysis. Raises whatever Lark raises (``LarkError``
    subclasses, but also ``OSError``, ``re.error``...).
    """
    _ANALYZED.last = None
    postlex = _KeepTerminals(keep) if keep else None
    built = lark.Lark(text, parser="lalr", lexer="basic", start=start, postlex=postlex)
    analyzer, _ANALYZED.last = _ANALYZED.last, None  # the last one made: ours (Lark's own grammar comes first)
    if keep_analysis and analyzer is not None and analyzer.greatgramma_rules is built.rules:
        built.greatgramma_analysis = analyzer
    return built


class _KeepTerminals:
    """A pass-through Lark postlexer whose ``always_accept`` keeps unused terminals in the lexer."""

    def __init__(self, names: tuple[str, ...]):
        self.always_accept = tuple(names)

    def process(self, stream):
        return stream


def grammar_parts(lark_obj: lark.Lark) -> GrammarParts:
    """The terminals and rules of a grammar Lark compiled."""
    return _parts(lark_obj.terminals, lark_obj.rules)


def grammar_parts_of_text(text: str, start: str) -> GrammarParts:
    """The terminals and rules Lark resolves from ``text`` without building its parser or lexer.

    For explaining a grammar whose parser Lark refused (an LALR conflict); raises Lark's errors.
    """
    grammar, _used_files = load_grammar(text, "<string>", [], False)
    terminals, rules, _ignore = grammar.compile([start], set())
    return _parts(terminals, rules)


def _parts(terminals, rules) -> GrammarParts:
    return GrammarParts(
        terminals={
            t.name: TerminalDef(t.name, t.pattern.value, isinstance(t.pattern, PatternStr)) for t in terminals
        },
        rules=tuple(_rule(i, r) for i, r in enumerate(rules)),
    )


def _rule(index: int, rule) -> Rule:
    expansion = tuple(Symbol(str(s.name), s.is_term) for s in rule.expansion)
    return Rule(index, str(rule.origin.name), expansion, rule.options.priority or 0)


def lexer_terminals(lark_obj: lark.Lark) -> list[TerminalSpec]:
    """The lexer's terminals as Lark resolved them (used and ignored ones), in Lark's order."""
    conf = lark_obj.lexer_conf
    ignored = set(conf.ignore)
    return [
        TerminalSpec(
            name=td.name,
            pattern=td.pattern.to_regexp(),
            is_string=isinstance(td.pattern, PatternStr),
            priority=td.priority,
            max_width=td.pattern.max_width,
            value_len=len(td.pattern.value),
            ignored=td.name in ignored,
        )
        for td in conf.terminals
    ]


def lalr_states(rules: Sequence[Rule], start: str, lark_obj: lark.Lark | None = None) -> LalrStates:
    """Lark's LALR(1) analysis of ``rules`` (before it resolves any conflict), as plain data.

    Reads the analysis ``build_lark(..., keep_analysis=True)`` kept on ``lark_obj`` (whose rules
    ``rules`` are), or runs the phases of ``LALR_Analyzer`` up to the lookaheads (DeRemer and
    Pennello's LALR(1) lookahead sets, as Lark computes them), stopping before Lark builds its
    table, so that the conflicts Lark would resolve or refuse can all be seen.
    """
    analyzer = getattr(lark_obj, "greatgramma_analysis", None)
    if analyzer is not None:  # Lark's own lookaheads (building its table does not change them)
        ours = dict(zip(analyzer.greatgramma_rules, rules))
    else:
        ours = {}
        lark_rules = []
        for r in rules:
            expansion = [LarkTerminal(s.name) if s.is_term else LarkNonTerminal(s.name) for s in r.expansion]
            lark_rule = LarkRule(LarkNonTerminal(r.origin), expansion, options=LarkRuleOptions(priority=r.priority or None))
            ours[lark_rule] = r
            lark_rules.append(lark_rule)
        analyzer = LALR_Analyzer(ParserConf(lark_rules, {}, [start]))
        analyzer.compute_lr0_states()
        analyzer.compute_reads_relations()
        analyzer.compute_includes_lookback()
        analyzer.compute_lookaheads()

    def rule_of(lark_rule) -> Rule:  # Lark's added root rule ($root_start) comes after the grammar's
        return ours[lark_rule] if lark_rule in ours else _rule(len(rules), lark_rule)

    kernels = {s: tuple(sorted(repr(item) for item in s.kernel)) for s in analyzer.lr0_itemsets}
    itemsets = sorted(analyzer.lr0_itemsets, key=kernels.__getitem__)
    number = {s: i for i, s in enumerate(itemsets)}
    states = tuple(
        LR0State(
            kernel=kernels[s],
            closure=tuple(Item(rule_of(item.rule), item.index) for item in s.closure),
            transitions={Symbol(str(sym.name), sym.is_term): number[t] for sym, t in s.transitions.items()},
            reductions={
                str(la.name): tuple(sorted(map(rule_of, rs), key=lambda r: r.index)) for la, rs in s.lookaheads.items()
            },
        )
        for s in itemsets
    )
    return LalrStates(states, number[analyzer.lr0_start_states[start]])


def parse_table_from_lark(
    lark_obj, terminal_names: list[str], start: str, postlexed: tuple[str, ...] = ()
) -> ParseTable:
    """Convert Lark's LALR table to integer arrays indexed by the lexer's terminal order.

    ``postlexed``: %declare'd terminals a postlexer makes (the indenter's); they get the
    columns after the lexer's terminals, then comes ``$END``.
    """
    table = lark_obj.parser.parser.parser.parse_table
    term_index = {name: i for i, name in enumerate(terminal_names)}
    declared = sorted({s.name for r in lark_obj.rules for s in r.expansion if s.is_term} - set(term_index))
    missing = [n for n in declared if n not in postlexed]
    if missing:
        raise GrammarError(
            f"terminals {', '.join(missing)} are declared (%declare) but never lexed: they come from a postlexer",
            hint=INDENTER_HINT,
        )
    extra = {n: len(terminal_names) + i for i, n in enumerate(postlexed)}
    term_index.update(extra)
    n_terms = len(terminal_names) + len(postlexed)
    term_index["$END"] = n_terms
    states = table.states
    nonterms: dict[str, int] = {}
    rules: dict[object, int] = {}
    rule_list = []
    for acts in states.values():
        for sym, (act, arg) in acts.items():
            if sym not in term_index:
                nonterms.setdefault(sym, len(nonterms))
            elif act is not Shift and arg not in rules:
                rules[arg] = len(rule_list)
                rule_list.append(arg)
    for rule in rule_list:
        nonterms.setdefault(rule.origin.name, len(nonterms))
    n_states = max(states) + 1
    action = np.full((n_states, n_terms + 1), ERROR, dtype=np.int32)
    goto = np.full((n_states, max(len(nonterms), 1)), ERROR, dtype=np.int32)
    for s, acts in states.items():
        for sym, (act, arg) in acts.items():
            if sym in term_index:
                action[s, term_index[sym]] = arg if act is Shift else REDUCE - rules[arg]
            else:
                goto[s, nonterms[sym]] = arg
    rule_lhs = np.array([nonterms[r.origin.name] for r in rule_list], dtype=np.int32)
    rule_len = np.array([len(r.expansion) for r in rule_list], dtype=np.int32)
    return ParseTable(
        action=action,
        goto=goto,
        rule_lhs=rule_lhs,
        rule_len=rule_len,
        start_state=table.start_states[start],
        end_state=table.end_states[start],
        nonterminals=tuple(sorted(nonterms, key=nonterms.__getitem__)),
        declared=extra,
    )


def punctuation_literal(name: str) -> str | None:
    """The literal behind Lark's name for an anonymous punctuation terminal (``LSQB`` -> ``[``)."""
    return _punctuation_by_name().get(name)


@cache
def _punctuation_by_name() -> dict[str, str]:
    return {name: literal for literal, name in LARK_PUNCTUATION_NAMES.items()}


@cache
def common_terminal_names() -> frozenset[str]:
    """Terminals that Lark's ``common.lark`` defines (for "did you mean %import common.X?")."""
    try:
        common = (Path(lark.__file__).parent / "grammars" / "common.lark").read_text(encoding="utf-8")
    except OSError:  # pragma: no cover - a Lark without its grammars
        return frozenset()
    return frozenset(re.findall(r"^([A-Z_][A-Z_0-9]*)(?:\.\d+)?\s*:", common, re.M))
