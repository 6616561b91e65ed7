"""greatgramma/indenter.py on its own: the indenter's parser side on terminal streams, and its
lexer side on newline lexemes.

- ``IndentedParser`` against Lark's own ``Indenter`` postlexer feeding Lark's LALR parser, on short
  streams of terminals with newlines at chosen columns: after every prefix, each next terminal is
  accepted by one exactly when by the other (a column the engine does not tell apart, at bracket
  depth 0, excepted: refused), and ``accepts_end`` agrees with Lark at the end of the stream.
  Along the way ``feed_known``/``feed_on`` agree with ``feed`` on the top segments of the stacks,
  and the pseudo-terminal "a newline at some column" is accepted exactly when some column is.
- ``split_columns`` against Lark's rule for a newline's column (spaces + tab_len * tabs after the
  last ``\\n``, here capped at ``max_column``): the split DFA has the same language, each newline
  lexeme ends as the copy of its column, every other terminal stays as it was.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from helpers import grammar_text, masks_accept, single_byte_masker
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from lark import Token
from lark.exceptions import LarkError
from lark_indenter import lark_indenter

import greatgramma as gg
from greatgramma.codes import ANY_COLUMN, DEAD, DEPENDS
from greatgramma.indenter import split_columns
from greatgramma.lexer import LexerDFA, TerminalSpec, build_lexer
from greatgramma.parser import LalrParser

MAX_COLUMN = 6
IND = gg.Indenter(open=("LPAR",), close=("RPAR",), tab_len=4, max_column=MAX_COLUMN)
# brackets as free items: only the indenter keeps them balanced (Lark's asserts on a stray ")")
LOOSE = r"""
start: (stmt | _NL)*
stmt: item+ _NL | "if" NAME ":" _NL _INDENT stmt+ _DEDENT
item: NAME | "(" | ")"
NAME: /[a-z]+/
_NL: /(\r?\n[\t ]*)+/
%ignore " "
%declare _INDENT _DEDENT
"""
# a stream is a list of (terminal name, column): the column of a newline, None for the others
NEWLINES = [("_NL", c) for c in (0, 1, 2, 4, 5, MAX_COLUMN, MAX_COLUMN + 3)]


class Case:
    """A grammar with IND: its IndentedParser, and the symbols streams are made of."""

    def __init__(self, text: str, names: tuple[str, ...]) -> None:
        self.grammar = gg.Grammar(text, indenter=IND)
        self.names = [t.name for t in self.grammar.terminals]
        self.table = IND.parser(LalrParser(self.grammar.parse_table), self.names)
        self.symbols = [(n, None) for n in names] + NEWLINES

    def term(self, symbol: tuple[str, int | None]) -> int:
        name, column = symbol
        if column is None:
            return self.names.index(name)
        return self.table.first_column + min(column, MAX_COLUMN)  # past max_column: the last copy

    def lark_accepts(self, stream: list, *, whole: bool) -> bool:
        """Whether Lark's Indenter + LALR parser accept the stream: as a prefix, or (``whole``) as a sentence."""
        tokens = [Token(name, name if column is None else "\n" + " " * column) for name, column in stream]
        if not whole:
            tokens.append(Token("STOP", ""))  # the Indenter passes it on once it has handled all before it
        ip = self.grammar.lark.parse_interactive()
        try:
            for tok in lark_indenter("_NL", ["LPAR"], ["RPAR"], tab_len=IND.tab_len).process(iter(tokens)):
                if tok.type == "STOP":
                    return True
                ip.feed_token(tok)
            ip.feed_eof()
        except (LarkError, AssertionError):  # the Indenter asserts on a stray closing bracket
            return False
        return True


CASES = {
    "indented": Case(grammar_text("indented"), ("NAME", "IF", "COLON", "LPAR", "RPAR", "COMMA", "SLASH")),
    "loose": Case(LOOSE, ("NAME", "IF", "COLON", "LPAR", "RPAR")),
}
INDENTED = CASES["indented"]


def check_segments(case: Case, stack) -> None:
    """feed_known and feed_on on the top 1..4 LALR states agree with feed on the whole stack."""
    table = case.table
    terms = sorted({case.term(s) for s in case.symbols})
    for d in (1, 2, 4):
        below, known = table.cut(stack, d)
        assert table.join(below, known) == stack
        for t in terms + [ANY_COLUMN]:
            live = table.feed(stack, t)
            r = table.feed_known(known, t)
            if r is False:
                assert live is None, (stack, d, t)
            elif r is DEPENDS:  # only a newline's column at bracket depth 0 needs the levels below
                newline = table.first_column <= t < table.bad_column and ~known[0] == 0
                lalr_term = table.nl if t == ANY_COLUMN or t >= table.first_column else t
                assert newline or table.table.feed_known(known[1:], lalr_term) is DEPENDS, (stack, d, t)
            else:
                assert live is not None and table.join(below, r) == live, (stack, d, t)
            got = table.feed_on(below, known, t)
            assert (got is None) == (live is None) and (got is None or table.join(*got) == live), (stack, d, t)


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_indented_table_agrees_with_larks_indenter(name: str, data) -> None:
    case = CASES[name]
    table = case.table
    stack, stream, brackets = table.initial_stack(), [], 0
    for _ in range(data.draw(st.integers(0, 14), label="steps")):
        assert table.accepts_end(stack) == case.lark_accepts(stream, whole=True), stream
        check_segments(case, stack)
        accepted = []
        for symbol in case.symbols:
            ours = table.feed(stack, case.term(symbol)) is not None
            theirs = case.lark_accepts(stream + [symbol], whole=False)
            if symbol[1] is not None and symbol[1] >= MAX_COLUMN and brackets == 0:
                assert not ours, (stream, symbol)  # the engine refuses what it cannot tell apart
            else:
                assert ours == theirs, (stream, symbol, ours)
            if ours:
                accepted.append(symbol)
        columns = [c for c in range(MAX_COLUMN) if table.feed(stack, table.first_column + c) is not None]
        assert (table.feed(stack, ANY_COLUMN) is not None) == bool(columns), (stream, columns)
        if not accepted:
            break
        symbol = data.draw(st.sampled_from(accepted), label="symbol")
        before = len(stack.levels)
        stack, stream = table.feed(stack, case.term(symbol)), stream + [symbol]
        brackets += {"LPAR": 1, "RPAR": -1}.get(symbol[0], 0)
        assert stack.brackets == brackets
        event(f"levels {before} -> {len(stack.levels)}")
    assert table.accepts_end(stack) == case.lark_accepts(stream, whole=True), stream


@pytest.mark.parametrize(
    "stream,viable,complete",
    [
        ("if a : nl2 a nl2 a nl0 a nl0", True, True),
        ("if a : nl2 if a : nl4 a nl0", True, True),  # two dedents at once
        ("if a : nl2 if a : nl4 a nl1", False, False),  # a dedent to a column that is no level
        ("if a : nl2 if a : nl4 a nl2 a nl0", True, True),
        ("if a : nl0", True, False),  # the newline is fine; the block needs an indent
        ("if a : nl0 a", False, False),
        ("a nl2", False, False),  # an indent without a block opener
        ("a ( nl5 a , nl0 a ) nl0", True, True),  # inside brackets newlines are dropped
        ("a ( nl9 a ) nl0", True, True),  # even at columns past max_column
        ("if a : nl5 a nl5", True, True),
        ("a ) nl0", False, False),  # a closing bracket with none open
        ("if a : nl2 a ( nl0 ) nl2 a nl0", True, True),
        ("if a : nl2 a", True, False),  # a statement needs its newline
        ("if a : nl2 a nl2", True, True),  # the end closes the open block
    ],
)
def test_indentation_examples(stream: str, viable: bool, complete: bool) -> None:
    """Hand-picked streams (``nlC``: a newline at column C), each verdict Lark's too."""
    spelled = {"if": "IF", ":": "COLON", "a": "NAME", "(": "LPAR", ")": "RPAR", ",": "COMMA"}
    symbols = [("_NL", int(w[2:])) if w.startswith("nl") else (spelled[w], None) for w in stream.split()]
    table = INDENTED.table
    stack = table.initial_stack()
    for symbol in symbols:
        stack = None if stack is None else table.feed(stack, INDENTED.term(symbol))
    assert (stack is not None) == viable == INDENTED.lark_accepts(symbols, whole=False), stream
    assert (stack is not None and table.accepts_end(stack)) == complete == INDENTED.lark_accepts(symbols, whole=True), stream


def test_columns_past_max_column_are_refused_outside_brackets() -> None:
    """Lark indents to column 6; the engine tells columns 0..5 apart and refuses the rest (at depth 0)."""
    symbols = [("IF", None), ("NAME", None), ("COLON", None), ("_NL", MAX_COLUMN)]
    assert INDENTED.lark_accepts(symbols, whole=False)
    table = INDENTED.table
    stack = table.initial_stack()
    for symbol in symbols[:-1]:
        stack = table.feed(stack, INDENTED.term(symbol))
    assert table.feed(stack, INDENTED.term(symbols[-1])) is None
    assert table.feed(stack, table.first_column + MAX_COLUMN - 1) is not None


# ---------------------------------------------------------------------------------------------
# the lexer side: split_columns

NEWLINE = r"(?:(?:\r?\n[\t ]*)+|//[^\n]*)+"  # indented.lark's _NL: newlines and // comments


def lark_column(text: str, tab_len: int, max_column: int) -> int:
    """Lark's Indenter: spaces + tab_len * tabs after the last newline; max_column if there is none
    (or the engine cannot tell it apart)."""
    if "\n" not in text:
        return max_column
    rest = text.rsplit("\n", 1)[1]
    return min(rest.count(" ") + rest.count("\t") * tab_len, max_column)


def spec(name: str, pattern: str) -> TerminalSpec:
    return TerminalSpec(name, pattern, False, 0, 100, len(pattern), False)


def walk(delta: np.ndarray, data: bytes) -> int:
    q = 0
    for b in data:
        q = int(delta[q, b])
        if q == DEAD:
            return DEAD
    return q


@functools.lru_cache(maxsize=1)
def name_and_newline() -> LexerDFA:
    return build_lexer([spec("NAME", "[a-z]+"), spec("_NL", NEWLINE)])


@functools.lru_cache(maxsize=None)
def split(tab_len: int, max_column: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """name_and_newline() with _NL (terminal 1 of 2) split by column."""
    base = name_and_newline()
    ind = gg.Indenter(tab_len=tab_len, max_column=max_column)
    return split_columns(base.delta, base.accept, base.accept_next, 1, 2, ind)


TEXT_HEADS = ["\n", "\n", "\r\n", "//", "a"]
TEXT_PIECES = [" ", " ", "\t", "\n", "\r\n", "// x\t ", "\n\t "]


@pytest.mark.parametrize("tab_len,max_column", [(8, 64), (4, 6), (1, 3)])
@settings(max_examples=150, deadline=None)
@given(head=st.sampled_from(TEXT_HEADS), pieces=st.lists(st.sampled_from(TEXT_PIECES), max_size=12))
def test_split_columns_ends_newlines_at_their_column(tab_len: int, max_column: int, head: str, pieces: list[str]) -> None:
    base = name_and_newline()
    nl, num_terms = 1, 2
    delta, accept, accept_next = split(tab_len, max_column)
    text = head + "".join(pieces)
    data = text.encode()
    q0, q = walk(base.delta, data), walk(delta, data)
    assert (q0 == DEAD) == (q == DEAD), text  # the same language
    if q == DEAD:
        return
    column = lark_column(text, tab_len, max_column)
    event("a newline lexeme" if base.accept[q0] == nl else "another lexeme, or none yet")
    want = num_terms + column if base.accept[q0] == nl else base.accept[q0]
    assert accept[q] == want, (text, accept[q], want)
    # a lexeme that ends before the next byte ends as the same copy
    want_next = np.where(base.accept_next[q0] == nl, num_terms + column, base.accept_next[q0])
    assert np.array_equal(accept_next[q], want_next), text


def test_split_columns_keeps_the_other_terminals() -> None:
    delta, accept, _ = split(8, 4)
    for word in (b"a", b"abc", b"zz"):
        assert accept[walk(delta, word)] == 0
    assert [int(accept[walk(delta, b"\n" + b" " * c)]) for c in range(7)] == [2, 3, 4, 5, 6, 6, 6]
    assert accept[walk(delta, b"// no newline yet")] == 2 + 4  # no column yet: the last copy


# ---------------------------------------------------------------------------------------------
# line_start: the text read as if it followed a newline (Indenter.python() sets it)

LINES = 'start: (_NL | stmt)*\nstmt: NAME _NL\nNAME: /[a-z]+/\n_NL: /(\\r?\\n[\\t ]*)+/\n%ignore " "\n%declare _INDENT _DEDENT\n'


def _accepts(indenter: gg.Indenter, text: bytes, grammar: str = LINES) -> bool:
    return masks_accept(single_byte_masker(gg.Grammar(grammar, indenter=indenter)), text)


@pytest.mark.parametrize(
    "text, lark_way, python_way",
    [
        (b"a\n", True, True),
        (b"  a\n", True, False),  # an indented first line: Lark's indenter never sees it; Python refuses it
        (b"\n  a\n", False, False),
        (b"  \na\n", True, True),  # a blank first line may hold spaces
        (b"", True, True),
    ],
)
def test_line_start_reads_the_first_line_indentation(text: bytes, lark_way: bool, python_way: bool) -> None:
    plain = gg.Indenter(open=(), close=())
    assert _accepts(plain, text) is lark_way
    assert _accepts(gg.Indenter(open=(), close=(), line_start=True), text) is python_way
    # the same as Lark's indenter on "\n" + text (tests/lark_indenter.py)
    from lark_indenter import lark_parses

    assert lark_parses(LINES, text, lark_indenter("_NL", [], [], line_start=True)) is python_way
    assert lark_parses(LINES, text, lark_indenter("_NL", [], [])) is lark_way


def test_line_start_needs_a_start_rule_that_takes_a_newline() -> None:
    grammar = LINES.replace("start: (_NL | stmt)*", "start: stmt*")
    assert _accepts(gg.Indenter(open=(), close=()), b"a\n")
    with pytest.raises(gg.GreatGrammaError, match=r"leading bytes b'\\n'.*start rule must take"):
        _accepts(gg.Indenter(open=(), close=(), line_start=True), b"a\n", grammar)
    with pytest.raises(TypeError, match="line_start must be a bool"):
        gg.Indenter(line_start=1)
    assert gg.Indenter.python().line_start and not gg.Indenter().line_start
