"""Everything greatgramma reads from Lark, behind plain functions and small types of our own.

Lark defines the reference semantics (its grammar loader, its LALR analysis and table). The table
is built by our own construction (:mod:`greatgramma.lalr`, the same table up to state numbering),
handed to Lark's parser through its ``LALR_Parser`` plugin hook; ``GG_LALR=lark`` (or
``construction="lark"``) builds it with Lark's analysis instead, as the tests do to compare. This
module is the only one that imports ``lark``, and it reads some of Lark's internals (the LALR table
of a built parser, the phases of ``LALR_Analyzer``, ``load_grammar``'s names for punctuation). Those
were checked against the releases in :data:`SUPPORTED_LARK`, which pyproject pins; another
release is refused at import, with the versions to install.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Sequence
from functools import cache, cached_property
from pathlib import Path
from typing import NamedTuple

import lark
import numpy as np
from lark.common import ParserConf
from lark.exceptions import GrammarError as LarkGrammarError
from lark.exceptions import LarkError, UnexpectedInput
from lark.grammar import NonTerminal as LarkNonTerminal
from lark.grammar import Rule as LarkRule
from lark.grammar import RuleOptions as LarkRuleOptions
from lark.grammar import Terminal as LarkTerminal
from lark.lexer import PatternStr
from lark.load_grammar import _TERMINAL_NAMES as LARK_PUNCTUATION_NAMES
from lark.load_grammar import _literal_to_pattern, load_grammar
from lark.lexer import Token as LarkToken
from lark.utils import is_id_continue, is_id_start
from lark.parsers import lalr_parser as _lalr_parser
from lark.parsers.lalr_analysis import LALR_Analyzer, IntParseTable, Reduce, Shift

from . import lalr
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


LALR_CONSTRUCTIONS = ("ours", "lark")
# whose LALR(1) construction builds the tables: ours (greatgramma.lalr, the default) or Lark's
# own analysis (GG_LALR=lark; the tests compare the two). Both mean the same table.
LALR_CONSTRUCTION = os.environ.get("GG_LALR", "ours")
PAUSE_GC = True  # the cyclic garbage collector paused while Lark builds a grammar
if LALR_CONSTRUCTION not in LALR_CONSTRUCTIONS:  # pragma: no cover - a typo in the environment
    raise ImportError(f"GG_LALR must be one of {', '.join(LALR_CONSTRUCTIONS)}, got {LALR_CONSTRUCTION!r}")


class _LarkLalrParser(_lalr_parser.LALR_Parser):
    """Lark's LALR parser built by Lark's own analysis, which it keeps (``greatgramma_analysis``)
    so that :func:`lalr_states` can read its lookaheads instead of running the analysis again."""

    def __init__(self, parser_conf: ParserConf, debug: bool = False, strict: bool = False) -> None:
        analysis = LALR_Analyzer(parser_conf, debug=debug, strict=strict)
        analysis.compute_lalr()
        self._parse_table = analysis.parse_table
        self.parser_conf = parser_conf
        self.parser = _lalr_parser._Parser(analysis.parse_table, parser_conf.callbacks, debug)
        analysis.greatgramma_rules = parser_conf.rules
        self.greatgramma_analysis = analysis


class _OurLalrParser(_lalr_parser.LALR_Parser):
    """Lark's LALR parser on tables of our construction (:mod:`greatgramma.lalr`), which it keeps
    (``greatgramma_lalr``); Lark's own form of the table is made only if Lark parses with it."""

    def __init__(self, parser_conf: ParserConf, debug: bool = False, strict: bool = False) -> None:
        (start,) = parser_conf.start
        lark_rules = list(parser_conf.rules)
        try:
            tables = lalr.build(
                [
                    (r.origin.name, tuple((s.name, s.is_term) for s in r.expansion), r.options.priority or 0)
                    for r in lark_rules
                ],
                start,
            )
        except lalr.LalrInputError as exc:
            raise LarkGrammarError(str(exc)) from None
        if tables.shared_reads:  # Lark's lookaheads depend on its visiting order here: take Lark's own
            _LarkLalrParser.__init__(self, parser_conf, debug, strict)
            return
        lark_rules.append(LarkRule(LarkNonTerminal("$root_" + start), [LarkNonTerminal(start)]))
        if tables.collisions:
            raise LarkGrammarError(
                "\n\n".join(
                    f"Reduce/Reduce collision in {LarkTerminal(tables.names[t])!r} between the following rules: "
                    + "".join("\n\t- " + str(lark_rules[r]) for r in rules)
                    for _state, t, rules in tables.collisions
                )
            )
        self._parse_table = _LazyLarkTable(tables, lark_rules, start)
        self.parser_conf = parser_conf
        self.parser = _lalr_parser._Parser(self._parse_table, parser_conf.callbacks, debug)
        self.greatgramma_lalr = tables


class _LazyLarkTable(IntParseTable):
    """Our tables in Lark's form (state -> symbol name -> (Shift, state) or (Reduce, rule)), made
    on first use: only a Lark parse reads them (tests, references), never greatgramma."""

    def __init__(self, tables: lalr.LalrTables, lark_rules: list, start: str) -> None:
        self._tables, self._lark_rules = tables, lark_rules
        self.start_states = {start: tables.start_state}
        self.end_states = {start: tables.end_state}

    @cached_property
    def states(self) -> dict:  # noqa: D102
        t, rules, names = self._tables, self._lark_rules, self._tables.names
        out = {}
        for st, trans in enumerate(t.transitions):
            acts = {names[s]: (Shift, target) for s, target in trans.items()}
            _shifts, reduces = t.actions(st)
            for term, r in reduces.items():
                acts[names[term]] = (Reduce, rules[r])
            out[st] = acts
        return out


def build_lark(
    text: str, start: str, keep: tuple[str, ...] = (), *, keep_analysis: bool = False, construction: str | None = None
) -> lark.Lark:
    """The grammar compiled by Lark with the LALR parser and basic lexer (the reference semantics).

    ``keep``: terminals the lexer makes although no rule uses them (a postlexer reads them).
    ``construction``: whose LALR(1) construction makes the table, ``"ours"`` (:mod:`greatgramma.lalr`)
    or ``"lark"`` (default :data:`LALR_CONSTRUCTION`); the tables mean the same. ``keep_analysis``:
    with Lark's construction, keep its analysis for :func:`lalr_states` (ours is always kept).
    Raises whatever Lark raises (``LarkError`` subclasses, but also ``OSError``, ``re.error``...).
    """
    construction = construction or LALR_CONSTRUCTION
    if construction not in LALR_CONSTRUCTIONS:
        raise ValueError(f"construction must be one of {', '.join(LALR_CONSTRUCTIONS)}, got {construction!r}")
    postlex = _KeepTerminals(keep) if keep else None
    parser_cls = _OurLalrParser if construction == "ours" else _LarkLalrParser
    collecting = gc.isenabled() and PAUSE_GC
    if collecting:  # Lark's loader and the tables make many small objects and no garbage cycles to speak of
        gc.disable()
    try:
        built = lark.Lark(
            text, parser="lalr", lexer="basic", start=start, postlex=postlex, _plugins={"LALR_Parser": parser_cls}
        )
    finally:
        if collecting:
            gc.enable()
    frontend = built.parser.parser
    analysis = frontend.__dict__.pop("greatgramma_analysis", None)
    if keep_analysis and analysis is not None:
        built.greatgramma_analysis = analysis
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
        terminals={t.name: terminal_def(t.name, t.pattern) for t in terminals},
        rules=tuple(_rule(i, r) for i, r in enumerate(rules)),
    )


def _rule(index: int, rule) -> Rule:
    expansion = tuple(Symbol(str(s.name), s.is_term) for s in rule.expansion)
    return Rule(index, str(rule.origin.name), expansion, rule.options.priority or 0)


def lexer_terminals(lark_obj: lark.Lark) -> list[TerminalSpec]:
    """The lexer's terminals as Lark resolved them (used and ignored ones), in Lark's order."""
    conf = lark_obj.lexer_conf
    ignored = set(conf.ignore)
    return [terminal_spec(td.name, td.pattern, td.priority, td.name in ignored) for td in conf.terminals]


def terminal_def(name: str, pattern) -> TerminalDef:
    """How a terminal of Lark's (its ``Pattern``) was written."""
    return TerminalDef(name, pattern.value, isinstance(pattern, PatternStr))


def terminal_spec(name: str, pattern, priority: int, ignored: bool) -> TerminalSpec:
    """A terminal of Lark's (its ``Pattern``) as the lexer builder takes it."""
    return TerminalSpec(
        name=name,
        pattern=pattern.to_regexp(),
        is_string=isinstance(pattern, PatternStr),
        priority=priority,
        max_width=pattern.max_width,
        value_len=len(pattern.value),
        ignored=ignored,
    )


# ---------------------------------------------------------------- for plain_grammar: Lark's rules, not its loader


def literal_pattern(literal: str):
    """Lark's ``Pattern`` of a ``"string"`` or ``/regex/flags`` as written in a grammar (its
    escapes), or None where Lark refuses it (an empty string, a bad escape)."""
    try:
        return _literal_to_pattern(LarkToken("STRING" if literal[0] == '"' else "REGEXP", literal))
    except LarkError:
        return None


def lark_would_lex(pattern) -> bool:
    """Whether Lark's basic lexer takes the pattern: a valid regex that matches no empty string."""
    try:
        return pattern.min_width > 0 and (isinstance(pattern, PatternStr) or re.compile(pattern.to_regexp()) is not None)
    except Exception:  # noqa: BLE001 - re's, regex's or Lark's error: Lark reports it
        return False


def anonymous_name(value: str, taken: set[str]) -> str | None:
    """The name Lark gives a string literal used in a rule with no terminal of its own (None:
    Lark numbers it ``__ANON_n``)."""
    name = LARK_PUNCTUATION_NAMES.get(value)
    if name is None and value and is_id_continue(value) and is_id_start(value[0]) and value.upper() not in taken:
        name = value.upper()
    return None if name in taken else name


def our_tables(rules: Sequence[Rule], start: str) -> lalr.LalrTables | None:
    """Our LALR(1) tables of the rules, as :class:`_OurLalrParser` makes them for Lark; None where
    Lark's construction is needed (lookaheads that depend on its order) or Lark would refuse the
    grammar (a reduce/reduce collision), so that Lark itself builds or reports it."""
    if LALR_CONSTRUCTION != "ours":
        return None
    try:
        tables = lalr.build([(r.origin, tuple(r.expansion), r.priority) for r in rules], start)
    except lalr.LalrInputError:
        return None
    return None if tables.shared_reads or tables.collisions else tables


def lalr_states(
    rules: Sequence[Rule],
    start: str,
    lark_obj: lark.Lark | None = None,
    *,
    construction: str | None = None,
    conflicts_only: bool = False,
    tables: lalr.LalrTables | None = None,
) -> LalrStates | None:
    """The LALR(1) analysis of ``rules`` (before any conflict is resolved), as plain data.

    Reads the tables ``lark_obj`` (built by :func:`build_lark` from ``rules``) carries: ours, or
    the analysis Lark kept with ``keep_analysis=True``; otherwise runs the construction
    (``construction``: ``"ours"`` or ``"lark"``; for Lark's, the phases of ``LALR_Analyzer`` up to
    DeRemer and Pennello's lookaheads, stopping before Lark builds its table), so that the
    conflicts Lark would resolve or refuse can all be seen. ``conflicts_only``: None when our
    tables show no conflict at all (nothing to explain; Lark's analysis is always converted).
    """
    if tables is None:
        tables = getattr(getattr(getattr(lark_obj, "parser", None), "parser", None), "greatgramma_lalr", None)
    analyzer = getattr(lark_obj, "greatgramma_analysis", None)
    if tables is None and analyzer is None:
        if (construction or LALR_CONSTRUCTION) == "ours":
            tables = lalr.build([(r.origin, tuple(r.expansion), r.priority) for r in rules], start)
        if tables is None or tables.shared_reads:  # Lark's visiting order matters there (lalr.build)
            tables, analyzer = None, _lark_analysis(rules, start)
    if tables is not None:
        if conflicts_only and not tables.has_conflicts:
            return None
        return _states_of_tables(tables, list(rules) + [_root_rule(len(rules), start)])
    return _states_of_analyzer(analyzer, rules, start)


def _root_rule(index: int, start: str) -> Rule:
    return Rule(index, "$root_" + start, (Symbol(start, False),), 0)


def _states_of_tables(t: lalr.LalrTables, rule_of: list[Rule]) -> LalrStates:
    n, names = t.n_nonterms, t.names
    by_origin: list[list[int]] = [[] for _ in range(n)]
    for r, a in enumerate(t.lhs):
        by_origin[a].append(r)
    kernels = [tuple(sorted(t.item_text(i) for i in k)) for k in t.kernels]
    order = sorted(range(len(kernels)), key=kernels.__getitem__)
    number = {s: i for i, s in enumerate(order)}
    states = []
    for s in order:
        closure = [Item(rule_of[t.item_rule[i]], i - t.base[t.item_rule[i]]) for i in t.kernels[s]]
        closure += [Item(rule_of[r], 0) for a in sorted(t.closure_nts[s]) for r in by_origin[a]]
        reductions: dict[str, list[Rule]] = {}
        for r, bits in t.lookaheads[s].items():
            while bits:
                low = bits & -bits
                bits ^= low
                reductions.setdefault(names[n + low.bit_length() - 1], []).append(rule_of[r])
        states.append(
            LR0State(
                kernel=kernels[s],
                closure=tuple(dict.fromkeys(closure)),
                transitions={Symbol(names[sym], sym >= n): number[q] for sym, q in t.transitions[s].items()},
                reductions={la: tuple(sorted(rs, key=lambda r: r.index)) for la, rs in reductions.items()},
            )
        )
    return LalrStates(tuple(states), number[t.start_state])


def _lark_analysis(rules: Sequence[Rule], start: str) -> LALR_Analyzer:
    """Lark's analysis of ``rules`` up to the lookaheads (its table not built: no conflict is raised)."""
    lark_rules = []
    for r in rules:
        expansion = [LarkTerminal(s.name) if s.is_term else LarkNonTerminal(s.name) for s in r.expansion]
        lark_rules.append(LarkRule(LarkNonTerminal(r.origin), expansion, options=LarkRuleOptions(priority=r.priority or None)))
    analyzer = LALR_Analyzer(ParserConf(lark_rules, {}, [start]))
    analyzer.compute_lr0_states()
    analyzer.compute_reads_relations()
    analyzer.compute_includes_lookback()
    analyzer.compute_lookaheads()
    analyzer.greatgramma_rules = lark_rules
    return analyzer


def _states_of_analyzer(analyzer: LALR_Analyzer, rules: Sequence[Rule], start: str) -> LalrStates:
    ours = dict(zip(analyzer.greatgramma_rules, rules))

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
    """Convert the LALR table of ``lark_obj`` to integer arrays indexed by the lexer's terminal order.

    ``postlexed``: %declare'd terminals a postlexer makes (the indenter's); they get the
    columns after the lexer's terminals, then comes ``$END``. Reads our tables where
    :func:`build_lark` made them, else Lark's.
    """
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
    tables = getattr(lark_obj.parser.parser, "greatgramma_lalr", None)
    if tables is not None:
        return _parse_table_of_tables(tables, term_index, n_terms, extra)
    table = lark_obj.parser.parser.parser.parse_table
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


def parse_table_from_tables(tables: lalr.LalrTables, terminal_names: list[str]) -> ParseTable:
    """:func:`parse_table_from_lark` of our tables of a grammar without a postlexer."""
    term_index = {name: i for i, name in enumerate(terminal_names)}
    term_index["$END"] = len(terminal_names)
    return _parse_table_of_tables(tables, term_index, len(terminal_names), {})


def _parse_table_of_tables(t: lalr.LalrTables, term_index: dict[str, int], n_terms: int, extra) -> ParseTable:
    """Our tables as a :class:`ParseTable`, filled with whole-array operations.

    Rules and nonterminals are numbered in grammar order (those the table uses): a shift wins
    over a reduce (Lark's resolution); where two rules to reduce share a lookahead (resolved by
    priority), the state is resolved by :meth:`LalrTables.actions`.
    """
    n, names = t.n_nonterms, t.names
    n_t = len(names) - n
    column = np.array([term_index.get(names[n + j], -1) for j in range(n_t)], dtype=np.intp)
    n_states = len(t.transitions)
    rows, syms, targets = [], [], []
    for st, trans in enumerate(t.transitions):
        rows.extend([st] * len(trans))
        syms.extend(trans)
        targets.extend(trans.values())
    rows_a = np.array(rows, dtype=np.intp)
    syms_a = np.array(syms, dtype=np.intp)
    targets_a = np.array(targets, dtype=np.int32)
    is_t = syms_a >= n
    shift_rows, shift_terms = rows_a[is_t], syms_a[is_t] - n
    action = np.full((n_states, n_terms + 1), ERROR, dtype=np.int32)
    action[shift_rows, column[shift_terms]] = targets_a[is_t]

    # reduces: every (state, rule) lookahead set as a row of bits, less the state's shifts
    overlaps = set(t.overlaps)
    e_state, e_rule, e_bits = [], [], []
    special: list[tuple[int, int, int]] = []  # (state, terminal, rule) of the states with overlaps
    for st, la in enumerate(t.lookaheads):
        if not la:
            continue
        if st in overlaps:
            for term, r in t.actions(st)[1].items():
                special.append((st, term - n, r))
            continue
        e_state.extend([st] * len(la))
        e_rule.extend(la)
        e_bits.extend(la.values())
    width = (n_t + 7) // 8
    packed = np.frombuffer(b"".join(bits.to_bytes(width, "little") for bits in e_bits), dtype=np.uint8)
    bits = np.unpackbits(packed.reshape(len(e_bits), width), axis=1, bitorder="little")[:, :n_t].view(bool)
    e_state_a = np.array(e_state, dtype=np.intp)
    shifts = np.zeros((n_states, n_t), dtype=bool)
    shifts[shift_rows, shift_terms] = True
    bits &= ~shifts[e_state_a]
    hit_e, hit_t = np.nonzero(bits)
    red_state = e_state_a[hit_e]
    red_rule = np.array(e_rule, dtype=np.intp)[hit_e]
    if special:
        sp = np.array(special, dtype=np.intp)
        red_state = np.concatenate([red_state, sp[:, 0]])
        hit_t = np.concatenate([hit_t, sp[:, 1]])
        red_rule = np.concatenate([red_rule, sp[:, 2]])
    used_rules, rule_no = np.unique(red_rule, return_inverse=True)
    action[red_state, column[hit_t]] = REDUCE - rule_no.astype(np.int32)

    lhs = np.array(t.lhs, dtype=np.intp)
    used_nts = np.unique(np.concatenate([syms_a[~is_t], lhs[used_rules]]))
    nt_col = np.full(max(n, 1), -1, dtype=np.intp)
    nt_col[used_nts] = np.arange(len(used_nts))
    goto = np.full((n_states, max(len(used_nts), 1)), ERROR, dtype=np.int32)
    goto[rows_a[~is_t], nt_col[syms_a[~is_t]]] = targets_a[~is_t]
    rhs_len = np.array([len(seq) for seq in t.rhs], dtype=np.int32)
    return ParseTable(
        action=action,
        goto=goto,
        rule_lhs=nt_col[lhs[used_rules]].astype(np.int32),
        rule_len=rhs_len[used_rules],
        start_state=t.start_state,
        end_state=t.end_state,
        nonterminals=tuple(names[a] for a in used_nts.tolist()),
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
