"""Go's automatic semicolon insertion as a postlexer, made exact for masking.

Go's lexer turns a newline into ";" when the line's last token is an identifier, a literal,
``break``/``continue``/``fallthrough``/``return``, ``++``/``--`` or a closing ``)``/``]``/``}``,
and drops it otherwise; at the end of the input it does the same (go.dev/ref/spec#Semicolons).
The rule reads only the last token the parser took, and in an LR automaton that token is the
*accessing symbol* of the top state (every state but the start one is entered by shifting or
going to one symbol). So the wrapper needs no state of its own: its stacks are the LALR
parser's, and a newline is decided on the top state alone (known segments included).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .errors import GrammarError
from .native import LrTables
from .parser import LalrParser
from .postlexer import Postlexer
from .stack import Frame, Known

GO_INSERT_AFTER = (
    "NAME", "BASIC_LIT", "STRING", "IMPORT_PATH", "BREAK", "CONTINUE", "FALLTHROUGH", "RETURN", "INC", "DEC",
    "RPAR", "RSQB", "RBRACE",
)  # fmt: skip


@dataclass(frozen=True)
class Semicolons(Postlexer):
    """Which terminals the semicolon inserter reads: the newline terminal ``nl`` (lexed, never
    seen by the parser), the grammar's ``semicolon`` terminal, and the terminals ``after`` which a
    newline (or the end of input) becomes a ``semicolon``."""

    nl: str = "NEWLINE"
    semicolon: str = "SEMICOLON"
    after: tuple[str, ...] = GO_INSERT_AFTER

    @classmethod
    def go(cls, **overrides) -> "Semicolons":
        """The preset for ``grammars/go.lark``."""
        return cls(**overrides)

    def __post_init__(self) -> None:
        object.__setattr__(self, "after", tuple(self.after))

    def to_dict(self) -> dict:
        return {"kind": "semicolons", **dataclasses.asdict(self)}

    def made_terminals(self) -> tuple[str, ...]:
        return ()

    def lexed_terminals(self) -> tuple[str, ...]:
        return (self.nl,)

    def check_terminals(self, names: list[str]) -> None:
        """GrammarError unless the grammar lexes the newline, the semicolon and the ``after`` terminals."""
        for n in (self.nl, self.semicolon, *self.after):
            if n not in names:
                raise GrammarError(
                    f"the semicolon inserter needs terminal {n} but the grammar has no terminal of that name",
                    symbol=n,
                    kind="postlexer",
                )

    def parser(self, lalr: LalrParser, terminal_names: list[str]) -> SemicolonParser:
        return SemicolonParser(lalr, self, terminal_names)


def inserting_states(lalr: LalrParser, after: list[int]) -> list[bool]:
    """Per LALR state: whether it is entered by shifting one of the ``after`` terminals."""
    action = lalr.table.action
    entered = np.zeros(lalr.num_states, dtype=bool)
    cols = action[:, after]
    entered[cols[cols >= 0]] = True
    return entered.tolist()


class SemicolonParser:
    """The LALR parser behind Go's semicolon insertion: same interface and same stacks as
    :class:`~greatgramma.parser.LalrParser`; only the newline terminal and the end differ."""

    def __init__(self, table: LalrParser, post: Semicolons, names: list[str]):
        post.check_terminals(names)
        index = {n: i for i, n in enumerate(names)}
        self.table = table
        self.postlexer = post
        self.nl, self.semicolon = index[post.nl], index[post.semicolon]
        self._inserts = inserting_states(table, [index[n] for n in post.after])
        self.start_state, self.end_state = table.start_state, table.end_state
        self.num_states, self.end = table.num_states, table.end
        self.initial_stack, self.cut, self.join, self.recut = table.initial_stack, table.cut, table.join, table.recut
        self.cut_known, self.join_known, self.stack_bytes = table.cut_known, table.join_known, table.stack_bytes

    def native_tables(self) -> LrTables:
        """:meth:`LalrParser.native_tables`, with the newline and the states that insert a semicolon."""
        inserts = np.array(self._inserts, dtype=np.uint8)
        return self.table.native_tables()._replace(inserts=inserts, nl=self.nl, semicolon=self.semicolon)

    def feed(self, stack: Frame, term: int) -> Frame | None:
        if term != self.nl:
            return self.table.feed(stack, term)
        return self.table.feed(stack, self.semicolon) if self._inserts[stack.state] else stack

    def feed_on(self, below: Frame | None, known: Known, term: int) -> tuple[Frame | None, Known] | None:
        """:meth:`LalrParser.feed_on`; a newline is a semicolon or nothing, by the top state."""
        if term == self.nl:
            top = known[-1] if known else below.state
            if not self._inserts[top]:
                return below, known
            term = self.semicolon
        return self.table.feed_on(below, known, term)

    def feed_known(self, known: Known, term: int):
        """:meth:`LalrParser.feed_known`: a newline is decided on the top state, which is known."""
        if term == self.nl:
            if not self._inserts[known[-1]]:
                return known
            term = self.semicolon
        return self.table.feed_known(known, term)

    def accepts_end(self, stack: Frame) -> bool:
        """The end of input, after the semicolon it may insert."""
        if self._inserts[stack.state]:
            stack = self.table.feed(stack, self.semicolon)
        return stack is not None and self.table.accepts_end(stack)

    def expected(self, stack: Frame) -> list[int]:
        """Terminal ids the parser would accept next (the newline among them), and ``end``."""
        out = [t for t in self.table.expected(stack) if t != self.end]
        out += [self.nl] if self.feed(stack, self.nl) is not None else []
        return out + ([self.end] if self.accepts_end(stack) else [])
