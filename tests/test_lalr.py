"""Our LALR(1) construction (greatgramma/lalr.py) against Lark's own, grammar by grammar.

For every grammar: the shipped and benchmark grammars, the tests' own grammar files, the Lark
grammar literals of the test modules, JSON Schema grammars (hand-written schemas and the schema
literals of the test modules) and seeded random grammars (nullable rules, recursion, priorities,
conflicts of both kinds), the two tables must be the same up to state numbering: a simultaneous
walk of both automata from the start state meets the same actions on every symbol, reduces by
the same rule and shifts/gotos in step (Lark's form of the table and our integer ParseTable
both), and the analyses before resolution (lalr_states: kernels, closures, transitions,
lookaheads) are equal once both are numbered by kernel. Where Lark refuses a grammar (a
reduce/reduce collision, a rule defined twice), ours refuses it with the same words, and
gg.Grammar's diagnostics are the same strings under both constructions.
"""

from __future__ import annotations

import ast
import json
import random
import re
from functools import cache

import numpy as np
import pytest

import greatgramma as gg
from greatgramma import lark_adapter
from greatgramma.codes import ERROR, REDUCE
from greatgramma.frontends import json_schema_to_lark
from greatgramma.lark_adapter import build_lark, grammar_parts, lalr_states, lexer_terminals, parse_table_from_lark
from lark.parsers.lalr_analysis import Shift

from helpers import BENCH, GRAMMARS, TEST_GRAMMARS, TESTS

# -- the grammars -----------------------------------------------------------------------------

POSTLEXED = {"go.lark": "go", "python.lark": "python"}  # grammars/go.lark, grammars/bench/python.lark


def _file_cases():
    out = []
    for path in sorted(GRAMMARS.glob("*.lark")) + sorted(BENCH.glob("*.lark")) + sorted(TEST_GRAMMARS.rglob("*.lark")):
        post = POSTLEXED.get(path.name) if path.parent in (GRAMMARS, BENCH) else None
        if path.parent == BENCH and path.name == "go.lark":
            post = None  # the benchmark Go grammar takes no postlexer
        out.append(pytest.param(path.read_text(encoding="utf-8"), "start", post, id=str(path.relative_to(TESTS.parent))))
    return out


@cache
def _test_literals() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """String literals of the test modules that look like Lark grammars, and JSON Schema dict literals."""
    texts, schemas = set(), {}
    for path in sorted(TESTS.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.search(r"^\??[a-z_][a-z_0-9]*(\.-?\d+)?\s*:", node.value, re.M):
                    texts.add(node.value)
            elif isinstance(node, ast.Dict):
                try:
                    value = ast.literal_eval(node)
                except (ValueError, SyntaxError, TypeError):
                    continue
                if isinstance(value, dict) and {"type", "properties", "anyOf", "oneOf", "enum", "$ref"} & set(value):
                    schemas.setdefault(json.dumps(value, sort_keys=True), None)
    return tuple(sorted(texts)), tuple(schemas)


def _schema(n: int, seed: int) -> dict:
    rnd = random.Random(seed)
    kinds = [
        {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
        {"type": "string", "maxLength": 5}, {"type": "integer", "minimum": 0, "maximum": 999},
        {"enum": ["red", "green", "blue"]}, {"type": "array", "items": {"type": "integer"}},
        {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]}, {"type": ["string", "null"]},
        {"type": "string", "format": "date"}, {"const": "fixed"}, {"type": "string", "pattern": "^[a-z]+$"},
    ]
    props = {f"p{i}_{rnd.randrange(100)}": rnd.choice(kinds) for i in range(n)}
    names = list(props)
    schema = {"type": "object", "properties": props, "required": rnd.sample(names, rnd.randrange(len(names) + 1))}
    if rnd.random() < 0.4:
        schema["additionalProperties"] = False
    return schema


HAND_SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]},
    {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}},
    {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                             "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}}},
     "$ref": "#/$defs/node"},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 4}},
     "additionalProperties": False},
    {"enum": [1, "two", None, True, {"a": 1}]},
    {"type": "object"},
    {"type": "string", "minLength": 2, "maxLength": 8},
    {"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
               {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind"]}]},
] + [_schema(n, seed) for seed, n in enumerate((8, 8, 12, 16, 20, 24, 30, 40, 50, 64, 80, 100))]


def _random_grammar(seed: int) -> str:
    """A small random BNF grammar: nullable rules, recursion, shared prefixes, some priorities."""
    rnd = random.Random(seed)
    n_rules = rnd.randint(2, 7)
    rules = [f"r{i}" for i in range(n_rules)]
    terms = ['"a"', '"b"', '"c"', '"d"', '"e"']
    lines = []
    for i, name in enumerate(["start"] + rules):
        alts = set()
        for _ in range(rnd.randint(1, 4)):
            length = rnd.choice([0, 1, 1, 2, 2, 3, 4]) if name != "start" else rnd.randint(1, 3)
            syms = []
            for _ in range(length):
                if rnd.random() < 0.45:
                    syms.append(rnd.choice(rules[max(0, i - 1):] if rnd.random() < 0.7 else rules))
                else:
                    syms.append(rnd.choice(terms))
            alts.add(" ".join(syms))
        prio = f".{rnd.randint(-1, 3)}" if name != "start" and rnd.random() < 0.2 else ""
        lines.append(f"{name}{prio}: " + " | ".join(a or "" for a in sorted(alts)))
    return "\n".join(lines) + "\n"


# -- the comparisons ---------------------------------------------------------------------------


def _build(text: str, start: str, construction: str):
    try:
        return build_lark(text, start, construction=construction), None
    except Exception as exc:  # noqa: BLE001 - compared below
        return None, exc


def _same_refusal(ours: Exception | None, theirs: Exception | None) -> None:
    assert (ours is None) == (theirs is None), f"ours: {ours!r}, Lark's: {theirs!r}"
    if ours is None:
        return
    assert type(ours) is type(theirs)
    if "Reduce/Reduce collision" in str(theirs):  # Lark lists a collision's rules in set order
        def lines(e):
            return sorted(x.strip() for x in str(e).splitlines() if x.strip())
        assert lines(ours) == lines(theirs)
    else:
        assert str(ours) == str(theirs)


def _walk_lark_tables(ours, theirs, start: str) -> int:
    """Both Lark-form tables walked in step from the start; returns the number of states met."""
    a, b = ours.parser.parser.parser.parse_table, theirs.parser.parser.parser.parse_table
    pairs = {a.start_states[start]: b.start_states[start]}
    back = {b.start_states[start]: a.start_states[start]}
    todo = [a.start_states[start]]
    while todo:
        sa = todo.pop()
        sb = pairs[sa]
        acts_a, acts_b = a.states[sa], b.states[sb]
        assert acts_a.keys() == acts_b.keys(), (sa, sb, sorted(acts_a.keys() ^ acts_b.keys()))
        for sym, (kind, arg) in acts_a.items():
            kind_b, arg_b = acts_b[sym]
            assert kind is kind_b, (sa, sym)
            if kind is Shift:
                if arg in pairs:
                    assert pairs[arg] == arg_b, (sa, sym)
                else:
                    assert arg_b not in back, (sa, sym)
                    pairs[arg], back[arg_b] = arg_b, arg
                    todo.append(arg)
            else:
                assert arg == arg_b and arg.options.priority == arg_b.options.priority, (sa, sym, arg, arg_b)
    assert len(pairs) == len(a.states) == len(b.states)
    assert pairs[a.end_states[start]] == b.end_states[start]
    return len(pairs)


def _walk_parse_tables(ta, tb) -> None:
    """Our integer ParseTable and the one converted from Lark's, walked in step."""
    assert ta.action.shape[1] == tb.action.shape[1] and ta.declared == tb.declared
    assert ta.num_states == tb.num_states

    def rule(t, code):
        r = REDUCE - code
        return t.nonterminals[t.rule_lhs[r]], int(t.rule_len[r])

    col_b = {name: i for i, name in enumerate(tb.nonterminals)}
    pairs = {ta.start_state: tb.start_state}
    todo = [ta.start_state]
    while todo:
        sa = todo.pop()
        sb = pairs[sa]
        ra, rb = ta.action[sa], tb.action[sb]
        assert np.array_equal(ra >= 0, rb >= 0) and np.array_equal(ra == ERROR, rb == ERROR), sa
        steps = [(int(x), int(y)) for x, y in zip(ra[ra >= 0], rb[rb >= 0])]
        for c in np.flatnonzero(ra < ERROR):
            assert rule(ta, int(ra[c])) == rule(tb, int(rb[c])), (sa, c)
        for k, name in enumerate(ta.nonterminals):
            ga = int(ta.goto[sa, k])
            gb = int(tb.goto[sb, col_b[name]]) if name in col_b else ERROR
            assert (ga == ERROR) == (gb == ERROR), (sa, name)
            if ga != ERROR:
                steps.append((ga, gb))
        for x, y in steps:
            if x in pairs:
                assert pairs[x] == y, sa
            else:
                pairs[x] = y
                todo.append(x)
    assert len(pairs) == ta.num_states and len(set(pairs.values())) == tb.num_states
    assert pairs[ta.end_state] == tb.end_state


def _same_analysis(text: str, start: str, ours) -> None:
    parts = grammar_parts(ours)
    mine = lalr_states(parts.rules, start, construction="ours")
    lark = lalr_states(parts.rules, start, construction="lark")
    assert mine.start == lark.start and len(mine.states) == len(lark.states)
    for x, y in zip(mine.states, lark.states):
        assert x.kernel == y.kernel
        assert set(x.closure) == set(y.closure)
        assert x.transitions == y.transitions
        assert x.reductions == y.reductions


def check_same(text: str, start: str = "start", post: str | None = None, *, analysis: bool = True) -> int:
    """Compare the two constructions on a grammar; the number of states (0 if both refuse it)."""
    ours, err_ours = _build(text, start, "ours")
    theirs, err_theirs = _build(text, start, "lark")
    _same_refusal(err_ours, err_theirs)
    if ours is None:
        return 0
    n = _walk_lark_tables(ours, theirs, start)
    names = [t.name for t in lexer_terminals(ours)]
    assert names == [t.name for t in lexer_terminals(theirs)]
    postlexed = {"go": (), "python": gg.Indenter.python().made_terminals()}.get(post, ())
    try:
        tb = parse_table_from_lark(theirs, names, start, postlexed)
    except gg.GrammarError as exc:
        with pytest.raises(gg.GrammarError, match=re.escape(str(exc))):
            parse_table_from_lark(ours, names, start, postlexed)
    else:
        _walk_parse_tables(parse_table_from_lark(ours, names, start, postlexed), tb)
    if analysis:
        _same_analysis(text, start, ours)
    return n


def _grammar_outcome(construction: str, monkeypatch, make):
    monkeypatch.setattr(lark_adapter, "LALR_CONSTRUCTION", construction)
    try:
        g = make()
    except gg.GrammarError as exc:
        return "error", str(exc), exc.kind, exc.symbol, exc.line
    return "ok", g.parse_table.num_states, g.fingerprint()


# -- the tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "start", "post"), _file_cases())
def test_grammar_files(text, start, post):
    assert check_same(text, start, post) > 0


def test_test_suite_grammars():
    texts, _schemas = _test_literals()
    built = sum(check_same(t) > 0 for t in texts)
    assert built >= 50, f"only {built} of {len(texts)} literals built"


def test_schema_grammars():
    _texts, schemas = _test_literals()
    n = 0
    for schema in HAND_SCHEMAS + [json.loads(s) for s in schemas]:
        for ws in ("json", "compact"):
            try:
                text = json_schema_to_lark(schema, whitespace=ws)
            except gg.GrammarError:
                continue
            n += check_same(text) > 0
    assert n >= 60


def test_random_grammars():
    refused = built = 0
    for seed in range(400):
        got = check_same(_random_grammar(seed))
        built += got > 0
        refused += got == 0
    assert built > 100 and refused > 10  # both paths exercised


def test_diagnostics_same_under_both(monkeypatch):
    """gg.Grammar's messages (strict shift/reduce, reduce/reduce, duplicates) and its tables, both ways."""
    cases = [
        ("start: a | b\na: \"x\"\nb: \"x\"\n", {}),  # reduce/reduce
        ("start: a \"x\" | \"x\" \"y\"\na: \"x\"?\n", {"strict": True}),
        ("start: e\ne: e \"+\" e | \"n\"\n", {"strict": True}),  # shift/reduce
        ("start: e\ne: e \"+\" e | \"n\"\n", {}),  # resolved as a shift
        ("start: a | a\na: \"x\"\n", {}),  # an alternative twice
        ("start: s\ns: \"if\" s | \"if\" s \"else\" s | \"x\"\n", {"strict": True}),
        ("start: a | b\na.2: \"x\"\nb: \"x\"\n", {"strict": True}),  # resolved by priority
        ((GRAMMARS / "go.lark").read_text(encoding="utf-8"), {"strict": True, "postlexer": gg.Semicolons.go()}),
    ] + [(_random_grammar(seed), {"strict": True}) for seed in range(60)]
    for text, kw in cases:
        def make(text=text, kw=kw):
            return gg.Grammar(text, **kw)
        assert _grammar_outcome("ours", monkeypatch, make) == _grammar_outcome("lark", monkeypatch, make), text[:200]
    for schema in HAND_SCHEMAS[:10]:
        def make(schema=schema):
            return gg.Grammar.from_json_schema(schema)
        assert _grammar_outcome("ours", monkeypatch, make) == _grammar_outcome("lark", monkeypatch, make)


def test_lark_parses_with_our_table():
    """Lark's own parser runs on our table (grammar.lark is still a working Lark)."""
    g = gg.Grammar((GRAMMARS / "json.lark").read_text(encoding="utf-8"))
    assert lark_adapter.LALR_CONSTRUCTION != "ours" or hasattr(g.lark.parser.parser, "greatgramma_lalr")
    tree = g.lark.parse('{"a": [1, 2.5, {"b": null}], "c": "d"}')
    assert tree.data == "start"
