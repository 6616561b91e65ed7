"""Lark's LALR(1) table in integer form (preprocessing output; :mod:`parser` runs it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from lark.parsers.lalr_analysis import Shift

from .codes import ERROR, REDUCE
from .errors import GrammarError


@dataclass(frozen=True, eq=False)
class ParseTable:
    """``action[state][terminal]``: shift to a state (>= 0), ``codes.REDUCE - r`` (reduce by rule
    r) or ``codes.ERROR``; ``goto[state][nonterminal]``.

    Terminal indices are the lexer's, then the terminals a postlexer makes (``declared``: name ->
    column); the last column (``end``) is ``$END``.
    """

    action: np.ndarray  # int32[S, T + 1]
    goto: np.ndarray  # int32[S, N]
    rule_lhs: np.ndarray  # int32[R]
    rule_len: np.ndarray  # int32[R]
    start_state: int
    end_state: int
    nonterminals: tuple[str, ...]
    declared: dict[str, int] = field(default_factory=dict)  # postlexer terminals: name -> column

    @property
    def end(self) -> int:
        """The terminal index of ``$END``."""
        return self.action.shape[1] - 1

    @property
    def num_states(self) -> int:
        return self.action.shape[0]

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of the table (scalars: :meth:`to_header`)."""
        return {"action": self.action, "goto": self.goto, "rule_lhs": self.rule_lhs, "rule_len": self.rule_len}

    def to_header(self) -> dict:
        """The table's scalars, as JSON values."""
        return {
            "start_state": self.start_state,
            "end_state": self.end_state,
            "nonterminals": list(self.nonterminals),
            "declared": dict(self.declared),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], header: dict) -> ParseTable:
        """Inverse of :meth:`to_arrays` and :meth:`to_header`."""
        return cls(
            arrays["action"],
            arrays["goto"],
            arrays["rule_lhs"],
            arrays["rule_len"],
            header["start_state"],
            header["end_state"],
            tuple(header["nonterminals"]),
            dict(header["declared"]),
        )


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
            f"terminals {', '.join(missing)} are declared (%declare) but never lexed: they come from a "
            "postlexer; for an indenter pass Grammar(..., indenter=gg.Indenter(...)) "
            "(gg.Indenter.python() for Python grammars)"
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
