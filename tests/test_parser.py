"""greatgramma/parser.py on its own, on terminal sequences (no lexer, no vocabulary).

- ``LalrParser.feed``/``accepts_end`` against Lark's own LALR parser (its interactive parser, fed
  the same terminals): at every step the same terminals are accepted next, ``$END`` included,
  and the stacks are as deep and hold the same states up to a renaming; along random walks that
  back up to earlier stacks (persistent stacks, memos shared between branches) and along
  walks over a hundred states deep (reductions that pop below the memoized top segment).
- ``feed_known`` on the top ``d`` states of each of those stacks, against ``feed`` on the whole
  stack and a textbook LALR step: a known result is the top of the live result, DEPENDS exactly
  when a reduction pops below the known part, False only where the live stack rejects too;
  ``feed_on`` is ``feed`` in cut form.
- ``Frame`` values: equality by states (not identity), hashing, pickling 100,000 deep.
"""

from __future__ import annotations

import pickle
import random
import sys

import lark
import pytest
from helpers import grammar_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark import Token
from lark.exceptions import UnexpectedInput

import greatgramma as gg
from greatgramma.codes import DEPENDS, ERROR, REDUCE
from greatgramma.parser import LalrParser
from greatgramma.stack import Frame

ITEMS = r"""
start: "[" items "]"
items: NUM "," items | NUM
NUM: /[0-9]+/
"""
NESTED = r"""
start: value
value: "[" [value ("," value)*] "]" | NUM | "{" pair* "}"
pair: KEY ":" value ";"?
NUM: /[0-9]+/
KEY: /[a-z]+/
"""
# empty rules (n = 0 reductions, "mods" before "let"), optional and repeated parts, a unit chain of length 3
EMPTIES = r"""
start: decl*
decl: mods "let" NAME [":" type] "=" expr ";" | ";"
mods: ("pub" | "mut")*
type: NAME ("." NAME)* | "(" [type ("," type)*] ")"
expr: term | expr "+" term
term: factor
factor: atom
atom: NAME | "(" expr? ")" | "-" atom
NAME: /[a-z]+/
"""
GRAMMARS = {
    "items": ITEMS,
    "nested": NESTED,
    "empties": EMPTIES,
    "arith": grammar_text("arith"),
    "json": grammar_text("json"),
}


class NoTree(lark.Transformer):
    """Every rule makes a childless tree: the value stack stays flat."""

    def __default__(self, data, children, meta) -> lark.Tree:
        return lark.Tree(data, [])


class Pair:
    """The engine's table and Lark's parser on the same grammar, stepped together."""

    _cache: dict[str, "Pair"] = {}

    def __init__(self, text: str) -> None:
        grammar = gg.Grammar(text)
        self.table = LalrParser(grammar.parse_table)
        # Lark's LALR parser on the same grammar, building no deep tree (copies of deep parsers stay cheap)
        self.lark = lark.Lark(text, parser="lalr", lexer="basic", transformer=NoTree())
        self.names = [t.name for t in grammar.terminals]
        self.ids = {n: i for i, n in enumerate(self.names)}
        self.renaming: dict[int, int] = {}  # Lark's state -> the engine's (one to one)
        self.renamed: dict[int, int] = {}

    @classmethod
    def of(cls, name: str) -> "Pair":
        if name not in cls._cache:
            cls._cache[name] = cls(GRAMMARS[name])
        return cls._cache[name]

    def accepted(self, stack: Frame) -> set[str]:
        """Terminal names ``feed`` accepts (and ``$END`` where ``accepts_end``), checked against ``expected``."""
        got = {self.names[t] for t in range(self.table.end) if self.table.feed(stack, t) is not None}
        if self.table.accepts_end(stack):
            got.add("$END")
        expected = {self.names[t] if t < self.table.end else "$END" for t in self.table.expected(stack)}
        assert got == expected, (got, expected)
        return got

    def check(self, stack: Frame, ip, where: list[str]) -> set[str]:
        """Same terminals accepted next; the same stack of states up to a renaming."""
        lark_states = ip.parser_state.state_stack
        assert stack.depth == len(stack) == len(lark_states), (where, stack.states(), lark_states)
        for ours, theirs in zip(stack.states(), lark_states):
            assert self.renaming.setdefault(theirs, ours) == ours, (where, stack.states(), lark_states)
            assert self.renamed.setdefault(ours, theirs) == theirs, (where, stack.states(), lark_states)
        got = self.accepted(stack)
        assert got == ip.accepts(), (where, got, ip.accepts())
        return got

    def feed(self, stack: Frame, ip, name: str) -> Frame | None:
        """Feed terminal ``name`` to both; None where both reject it (they must agree)."""
        after = self.table.feed(stack, self.ids[name])
        try:
            ip.feed_token(Token(name, name))
        except UnexpectedInput:
            assert after is None, f"Lark rejects {name}, the table accepts it"
            return None
        assert after is not None, f"Lark accepts {name}, the table rejects it"
        return after


def walk(pair: Pair, choose, back, steps: int, prefix: list[str] = ()) -> list[Frame]:
    """A walk from where ``prefix`` leads, checked at every step: ``choose(accepted names)`` picks
    the next terminal, ``back(n)`` may pick one of the ``n`` stacks met so far to go on from instead
    (the engine's persistent stack and a copy of Lark's parser). Stops after ``steps`` or at a
    stack that only takes ``$END``. Returns the stacks met."""
    stack, ip, where = pair.table.initial_stack(), pair.lark.parse_interactive(), list(prefix)
    for name in prefix:
        stack = pair.table.feed(stack, pair.ids[name])
        ip.feed_token(Token(name, name))
    met = [(stack, ip.copy(), where)]
    for _ in range(steps):
        accepted = sorted(pair.check(stack, ip, where) - {"$END"})
        j = back(len(met))
        if j is not None:
            stack, ip, where = met[j][0], met[j][1].copy(), met[j][2]
            continue
        if not accepted:
            break
        name = choose(accepted)
        stack, where = pair.feed(stack, ip, name), where + [name]
        met.append((stack, ip.copy(), where))
    return [m[0] for m in met]


def follow(pair: Pair, path: list[str]) -> list[Frame]:
    """The stacks along a fixed walk, each checked; the walk must end in a sentence."""
    stack, ip = pair.table.initial_stack(), pair.lark.parse_interactive()
    stacks = [stack]
    for i, name in enumerate(path):
        assert name in pair.check(stack, ip, path[:i])
        stack = pair.feed(stack, ip, name)
        stacks.append(stack)
    assert "$END" in pair.check(stack, ip, path), "the walk is a sentence"
    return stacks


@pytest.mark.parametrize("name", list(GRAMMARS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_feed_agrees_with_lark_along_random_walks(name: str, data) -> None:
    def back(n: int) -> int | None:
        if n > 1 and data.draw(st.integers(0, 7), label="go back?") == 0:
            return data.draw(st.integers(0, n - 1), label="to stack")
        return None

    choose = lambda accepted: data.draw(st.sampled_from(accepted), label="terminal")  # noqa: E731
    walk(Pair.of(name), choose, back, data.draw(st.integers(1, 60), label="steps"))


def open_close(name: str, depth: int) -> list[str]:
    """Terminals of a sentence whose stack gets deeper than ``depth`` before it closes."""
    return {
        "items": ["LSQB"] + ["NUM", "COMMA"] * depth + ["NUM", "RSQB"],  # right recursion: closes in one step
        "nested": ["LSQB"] * depth + ["NUM"] + ["RSQB"] * depth,
        "empties": ["LET", "NAME", "EQUAL"] + ["LPAR"] * depth + ["NAME"] + ["RPAR", "PLUS", "NAME"] * depth + ["SEMICOLON"],
        "arith": ["NUMBER", "STAR", "LPAR", "MINUS", "NUMBER", "PLUS"] * depth + ["NUMBER"] + ["RPAR"] * depth,
        "json": ["LSQB", "LBRACE", "NONEMPTY_STRING", "COLON"] * depth + ["SIGNED_NUMBER"] + ["RBRACE", "RSQB"] * depth,
    }[name]


@pytest.mark.parametrize("name", list(GRAMMARS))
def test_deep_stacks_agree_with_lark(name: str) -> None:
    """Over a hundred states deep (far below the memoized top segment), closing to a sentence; then
    random walks from every tenth stack of the way in (the frames' memos met again)."""
    pair = Pair.of(name)
    path = open_close(name, 120)
    stacks = follow(pair, path)
    assert max(len(s) for s in stacks) > 120
    rng = random.Random(name)
    for i in range(0, len(path), 10):
        again = walk(pair, rng.choice, lambda n: None, 30, prefix=path[:i])
        assert again[0] == stacks[i]


# ---------------------------------------------------------------------------------------------
# feed_known against feed


def textbook_step(pair: Pair, states: tuple[int, ...], term: int, known: int) -> tuple[tuple | None, bool]:
    """The LALR step by the book on a list of states: reduce while the action says so, then shift.

    Returns the states after it (None if rejected) and whether a reduction popped below the top
    ``known`` states (its goto read a state under them). Actions as ``ParseTable`` documents them:
    a next state (>= 0), ERROR, or reduce by rule r (REDUCE - r).
    """
    table, stack, floor, dipped = pair.table.table, list(states), len(states) - known, False
    while True:
        a = int(table.action[stack[-1], term])
        if a >= 0:
            return tuple(stack) + (a,), dipped
        if a == ERROR:
            return None, dipped
        rule = REDUCE - a
        n = int(table.rule_len[rule])
        del stack[len(stack) - n :]
        dipped = dipped or len(stack) <= floor
        stack.append(int(table.goto[stack[-1], table.rule_lhs[rule]]))


def stacks_of(name: str, seed: int, walks: int = 12, steps: int = 40) -> list[Frame]:
    pair, rng = Pair.of(name), random.Random(seed)
    out = []
    for _ in range(walks):
        out += walk(pair, rng.choice, lambda n: rng.randrange(n) if rng.random() < 0.05 else None, rng.randint(1, steps))
    return out + follow(pair, open_close(name, 12))


@pytest.mark.parametrize("name", list(GRAMMARS))
def test_feed_known_is_feed_on_the_top_segment(name: str) -> None:
    pair = Pair.of(name)
    table = pair.table
    outcomes = {"known": 0, "depends": 0, "rejected": 0}
    for stack in stacks_of(name, seed=len(name)):
        states = stack.states()
        for d in sorted({1, 2, 3, 5, len(states)}):
            if d > len(states):
                continue
            below, known = table.cut(stack, d)
            assert known == states[-d:] and (below is None) == (d == len(states))
            assert table.join(below, known) == stack
            for term in range(table.end):
                live = table.feed(stack, term)
                book, dipped = textbook_step(pair, states, term, d)
                assert (live is None) == (book is None) and (live is None or live.states() == book), (states, term)
                r = table.feed_known(known, term)
                where = (name, states, d, pair.names[term])
                if r is DEPENDS:
                    assert dipped, where  # DEPENDS only when a reduction pops below the known part
                    outcomes["depends"] += 1
                elif r is False:
                    assert live is None and not dipped, where  # False only when the stack rejects
                    outcomes["rejected"] += 1
                else:
                    assert live is not None and not dipped, where
                    assert live.states() == states[:-d] + r, where  # the top of the live result
                    outcomes["known"] += 1
                got = table.feed_on(below, known, term)  # feed in cut form
                assert (got is None) == (live is None), where
                assert got is None or table.join(*got) == live, where
    assert min(outcomes.values()) > 0, outcomes  # each outcome met


# ---------------------------------------------------------------------------------------------
# Frame values


def chain(states, base: Frame | None = None) -> Frame | None:
    for s in states:
        base = Frame(s, base)
    return base


def test_frames_equal_by_states_not_identity() -> None:
    a, b = chain([3, 1, 4, 1, 5] * 40), chain([3, 1, 4, 1, 5] * 40)
    assert a is not b and a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a.states() == b.states() == (3, 1, 4, 1, 5) * 40
    bottom = chain([9, 1, 4, 1, 5] + [3, 1, 4, 1, 5] * 39)  # differs at the bottom only
    assert bottom != a and a != chain([3, 1, 4, 1, 5] * 40 + [2]) and a != chain([3, 1, 4, 1, 5] * 39)
    assert Frame(7) == Frame(7) and Frame(7) != Frame(8) and Frame(7) != (7,) and Frame(7) != 7


def test_frame_equality_walks_the_states_when_hashes_collide() -> None:
    """Equal hash and depth do not make frames equal: the states are compared down to the bottom."""
    a, b = chain(range(300)), chain([1000] + list(range(1, 300)))
    b.hash = a.hash  # a forced collision
    assert a != b and b != a
    assert a.states() == tuple(range(300)) and b.states() == (1000, *range(1, 300))  # no re-linking after a miss


def test_equal_frames_share_their_chain_afterwards() -> None:
    root = chain(range(10))
    a, b = chain(range(10, 60), root), chain(range(10, 60), chain(range(10)))
    assert a == b
    assert a.states() == b.states() == tuple(range(60))
    f, g = a, b
    while f is not None:  # b's frames now sit on a's chain (an equal value, so invisible)
        assert g.parent is f.parent
        f, g = f.parent, g.parent
        if g is f:
            break


def test_deep_frames_pickle_flat() -> None:
    deep = chain(i % 251 for i in range(100_000))
    assert sys.getrecursionlimit() < deep.depth
    back = pickle.loads(pickle.dumps(deep))
    assert back == deep and hash(back) == hash(deep) and back.depth == 100_000
    assert back.states() == deep.states()
    assert pickle.loads(pickle.dumps(Frame(5))) == Frame(5)


def test_pickled_stacks_parse_on_like_the_originals() -> None:
    pair = Pair.of("nested")
    table = pair.table
    stack = table.initial_stack()
    for name in ["LSQB"] * 50 + ["NUM", "COMMA", "LBRACE", "KEY", "COLON"]:
        stack = table.feed(stack, pair.ids[name])
    back = pickle.loads(pickle.dumps(stack))
    assert back == stack and back is not stack
    for term in range(table.end):
        assert table.feed(back, term) == table.feed(stack, term), pair.names[term]
    assert table.accepts_end(back) == table.accepts_end(stack)
