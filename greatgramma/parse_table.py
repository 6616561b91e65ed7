"""The LALR(1) table (:mod:`greatgramma.lalr`, the same as Lark's) in integer form (preprocessing output; :mod:`parser` runs it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


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
