"""greatgramma.plain_grammar against Lark's loader: the same terminals, the same BNF rules and the
same parse table for every grammar the front ends write, and for hand-written texts that use each
construct of the subset; anything else is left to Lark (resolve gives None)."""

from __future__ import annotations

import numpy as np
import pytest
from test_schema import CASES, OVERLAPPING, PATTERN_SCHEMAS

import greatgramma as gg
from greatgramma import lark_adapter, plain_grammar
from greatgramma.frontends import any_json_lark, choices_to_lark, json_schema_to_lark, regex_to_lark


def assert_as_lark(text: str, start: str = "start") -> None:
    got = plain_grammar.resolve(text, start)
    assert got is not None, text
    lark_obj = lark_adapter.build_lark(text, start)
    assert got.terminals == lark_adapter.lexer_terminals(lark_obj)
    assert got.parts == lark_adapter.grammar_parts(lark_obj)
    names = [t.name for t in got.terminals]
    ours = lark_adapter.parse_table_from_tables(got.tables, names)
    theirs = lark_adapter.parse_table_from_lark(lark_obj, names, start)
    for field, value in vars(theirs).items():
        other = getattr(ours, field)
        assert np.array_equal(value, other) if isinstance(value, np.ndarray) else value == other, field


def _front_end_texts() -> list[tuple[str, str]]:
    out = []
    for name, case in sorted(CASES.items()):
        out += [(f"schema {name} {ws}", json_schema_to_lark(case[0], whitespace=ws)) for ws in ("json", "compact", 2)]
    out += [(f"pattern {i}", json_schema_to_lark(s)) for i, s in enumerate(PATTERN_SCHEMAS)]
    out += [(f"overlapping {i}", json_schema_to_lark(s)) for i, s in enumerate(OVERLAPPING)]
    out += [(f"any json {o} {ws}", any_json_lark(whitespace=ws, object_only=o)) for o in (True, False) for ws in ("json", 1)]
    out += [("regex", regex_to_lark(r"(ab|c)+\d{2,3}[x-z]?")), ("choices", choices_to_lark(["a", "b c", "null", ","]))]
    return out


FRONT_END = _front_end_texts()


@pytest.mark.parametrize("k", range(len(FRONT_END)), ids=[name for name, _ in FRONT_END])
def test_front_end_grammars_resolve_as_lark_does(k: int) -> None:
    assert_as_lark(FRONT_END[k][1])


HAND_WRITTEN = {
    # groups inside groups, a star group used in two rules (one rule made, named after the first)
    "nested": 'start: a (B (C | D) [E])* [F G] | b\na: H (C | D)* F | \nb: (B (C | D) [E])* H\nB: "b"\nC: "c"\nD: "d"\nE: "e"\nF: "f"\nG: "g"\nH: "h"\n',
    # string literals: a defined terminal's pattern, a punctuation name, an upper-case name, __ANON_n
    "literals": 'start: "x" X "," "if" "+=" "x y" | "if" Y\nX: "x"\nY: /y+/\n',
    # [..] and (..)? around named symbols, beside literals
    "maybe": 'start: a [ A ] ( B )? (A | B)+ | [A B A] "!"\na: ( [ B ] )* "]"\nA.2: /a/\nB: "b"\n',
    # duplicate alternatives, empty ones, unused rules (a chain) and unused terminals
    "unused": "start: A | A | [A] | \nlost: gone\ngone: A lost\nA: /a/\nB: /b/\nWS: / /\n%ignore WS\n",
    # plain and optional groups inside a starred group and inside [..]
    "groups": 'start: (A (B | C) (D)? E)* [(A | B) C] F | (A)+ (B (C)) F\nA: "a"\nB: "b"\nC: "c"\nD: "d"\nE: "e"\nF: "f"\n',
    "priorities": 'start: K | N\nK.3: "key"\nN.-1: /[a-z]+/\n',
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_texts_resolve_as_lark_does(name: str) -> None:
    assert_as_lark(HAND_WRITTEN[name])


@pytest.mark.parametrize(
    "text",
    [
        "?start: a\na: /x/\n",  # an inlined rule
        "start: _a\n_a: /x/\n",
        'start: "x"i\n',  # a flag on a string
        "start: a\na: A\n%import common.WORD -> A\n",
        "start: A\nA: B B\nB: /b/\n",  # a terminal made of terminals
        "start: A*\nA: /a/\n",  # an operator on a symbol
        "start: A ~ 3\nA: /a/\n",
        "start: a\n",  # an undefined rule
        "start: A\n",  # an undefined terminal
        "start: A\nA: /a/\nA: /b/\n",  # a terminal defined twice
        "start: A\nstart: A\nA: /a/\n",
        "start: [A] B | A B | B\nA: /a/\nB: /b/\n",  # a rule twice once [..] is dropped (Lark refuses it)
        "start: A\nA: /a*/\n",  # a terminal that matches the empty string
        "start: A\nA: /a(/\n",
        'start: A ("x" | B)\nA: /a/\nB: /b/\n',  # a literal inside a group (Lark names it in its own order)
        "start: (A (B)* C)*\nA: /a/\nB: /b/\nC: /c/\n",  # a starred group inside a group (the same)
    ],
)
def test_other_texts_are_left_to_lark(text: str) -> None:
    assert plain_grammar.resolve(text, "start") is None


@pytest.mark.parametrize(
    "text,match",
    [("start: a\n", "a"), ("start: A\n", "A"), ("start: A\nA: /a*/\n", "A"), ("start: [A] B | A B | B\nA: /a/\nB: /b/\n", "twice")],
)
def test_what_lark_refuses_is_still_refused(text: str, match: str) -> None:
    """Left to Lark, a faulty text gets the error it got before the plain reader existed."""
    with pytest.raises(gg.GrammarError, match=match):
        gg.Grammar(text)


def test_the_start_rule_must_exist() -> None:
    assert plain_grammar.resolve("begin: A\nA: /a/\n", "start") is None
    with pytest.raises(gg.GrammarError, match="start"):
        gg.Grammar("begin: A\nA: /a/\n")


@pytest.mark.parametrize(
    "text",
    [
        'start: a\na: a PLUS a | N\nPLUS: "+"\nN: /[0-9]+/\n',  # shift/reduce
        "start: x | y\nx: A\ny: A\nA: /a/\n",  # reduce/reduce
        "start: (A)* (A)*\nA: /a/\n",  # in generated rules
    ],
)
def test_conflicts_are_reported_as_through_lark(text: str, monkeypatch) -> None:
    """strict=True names a plain text's conflicts exactly as it does when Lark loads the text."""
    messages = []
    for plain in (True, False):
        if not plain:
            monkeypatch.setattr(plain_grammar, "resolve", lambda *args: None)
        with pytest.raises(gg.GrammarError) as info:
            gg.Grammar(text, strict=True)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "conflict" in messages[0]


def _random_text(rng) -> str:
    """A random grammar in the plain subset: nested groups, every operator, literals, empty
    alternatives, rules that refer to each other (some unused)."""
    terms = ["A", "B", "C"]
    rules = [f"r{i}" for i in range(rng.integers(1, 4))]

    keywords = iter(range(10**6))

    def alts(depth: int) -> str:  # a rule's alternatives start with keywords of their own (fewer conflicts)
        head = (lambda: f'"k{next(keywords)}" ') if depth == 0 else (lambda: "")
        return " | ".join(head() + seq(depth) for _ in range(rng.integers(1, 4)))

    def seq(depth: int) -> str:  # (literals and */+ groups outside groups only: the subset)
        items = []
        for _ in range(rng.integers(0 if depth == 0 else 1, 4)):  # (empty groups: duplicate rules)
            k = rng.integers(0, 9 if depth < 2 else 4)
            if k < 2 or (k == 3 and depth):
                items.append(terms[rng.integers(len(terms))])
            elif k == 2:
                items.append(rules[rng.integers(len(rules))])
            elif k == 3:
                items.append(['"a"', '","', '"x"', '"if"'][rng.integers(4)])
            elif k < 8:
                op = ["", "*", "+", "?"][k - 4]
                items.append(f"({alts(depth + 1)}){op if not depth or op in ('', '?') else ''}")
            else:
                items.append(f"[{alts(depth + 1)}]")
        return " ".join(items)

    lines = ["start: " + alts(0)] + [f"{r}: {alts(0)}" for r in rules]
    lines += ['A: "a"', "B: /b+/", 'C.2: "c"', "WS: / /", "%ignore WS"]
    return "\n".join(lines) + "\n"


def test_random_plain_texts_resolve_as_lark_does() -> None:
    """Random texts of the subset: what resolve reads, it reads as Lark does (the same terminals,
    rules and table); what Lark refuses (a rule twice, a reduce/reduce collision), it leaves to
    Lark. (It may leave more to Lark, such as empty groups: only slower.)"""
    rng = np.random.default_rng(7)
    read = 0
    for _ in range(300):
        text = _random_text(rng)
        try:
            lark_adapter.build_lark(text, "start")
        except Exception:  # noqa: BLE001 - Lark's refusal, whatever its kind
            assert plain_grammar.resolve(text, "start") is None, text
            continue
        if plain_grammar.resolve(text, "start") is not None:
            assert_as_lark(text)
            read += 1
    assert read > 100, read
