"""The interface of finite-state postlexers (Lark's ``postlex``), made exact for masking: one module per postlexer.

A postlexer sits between the lexer and the parser. To keep masks exact it works on both sides:
on the lexer side it may refine the DFA so that the lexer state tells apart what it needs (the
indenter splits the newline terminal by indentation column); on the parser side it wraps the
LALR parser in a stack machine with :class:`~greatgramma.parser.LalrParser`'s interface whose
stacks also carry the postlexer's own state (bracket depth, open indentation levels), or
decides on the top LALR state alone (Go's semicolons: :mod:`greatgramma.semicolons`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np


class Postlexer(ABC):
    """What the compiler and the masker need of a postlexer."""

    @abstractmethod
    def made_terminals(self) -> tuple[str, ...]:
        """The terminals it makes (``%declare``'d in the grammar), given the parser's ids after the lexer's."""

    def lexed_terminals(self) -> tuple[str, ...]:
        """Terminals the lexer must make although no rule uses them (Lark's ``always_accept``)."""
        return ()

    def leading_bytes(self) -> bytes:
        """Bytes the text is read as if it followed (the indenter's ``line_start``: a newline).
        Default: none."""
        return b""

    def check_terminals(self, names: list[str]) -> None:
        """GrammarError unless the grammar's terminals (``names``) include those the postlexer reads."""

    def refine_lexer(
        self, delta: np.ndarray, accept: np.ndarray, accept_next: np.ndarray, terminals: tuple
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple]:
        """The lexer DFA's tables and terminals with what the postlexer must tell apart folded in
        (the caller minimizes again). Default: unchanged."""
        return delta, accept, accept_next, terminals

    def lexer_view(self, dfa: Any) -> Any:
        """What the token transducer needs to know of a refined DFA (the indenter: its column map), or None."""
        return None

    @abstractmethod
    def parser(self, lalr: Any, terminal_names: list[str]) -> Any:
        """The stack machine over ``lalr`` (a :class:`~greatgramma.parser.LalrParser`)."""

    @abstractmethod
    def to_dict(self) -> dict:
        """Its settings as JSON values (saved in artifacts and fingerprints)."""
