"""The compiled loops (greatgramma/_native.c) against the numpy loops they stand in for: the same
lexer DFAs (subset construction, product construction and minimization), and on real vocabularies the same subtree
walks, the same suffix rows, the same masks.
(tests/test_transducer.py checks both against byte-by-byte lexing on small vocabularies.)"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from helpers import BENCH, GRAMMARS, program_paths

import greatgramma as gg
from greatgramma import lexer, native
from greatgramma.codes import DEAD, END_LA
from greatgramma.split import WALK_DEPTH
from greatgramma.stack import SEGMENT
from greatgramma.subtrees import SubtreeWalks
from greatgramma.transducer import TokenTransducer

pytestmark = pytest.mark.skipif(
    native.ext is None, reason="greatgramma._native is not built (no C compiler at install) or GG_NATIVE=0"
)

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 12},
        "n": {"type": "integer", "minimum": -5, "maximum": 300},
        "x": {"type": "number"},
        "tag": {"enum": ["a", "ab", "abc", "true"]},
    },
    "required": ["name"],
}


def _grammar(name: str) -> gg.Grammar:
    if name == "schema":
        return gg.Grammar.from_json_schema(SCHEMA)
    if name == "python":  # with the indenter: the walks carry columns
        return gg.Grammar.from_file(GRAMMARS / "python.lark", indenter=gg.Indenter.python())
    return gg.Grammar.from_file(BENCH / f"{name}.lark")


def _sorted(walk: tuple) -> dict[str, np.ndarray]:
    """A subtree's results by string; the fallback fields only where they mean something (END_LA)."""
    fields = dict(zip(walk._fields, walk))
    if "first" in fields:  # (the compiled loop may list strings that die, marked DEAD)
        alive = fields["first"] != DEAD
        fields = {k: v[alive] for k, v in fields.items()}
    order = np.argsort(fields["strings"], kind="stable")
    out = {k: v[order] for k, v in fields.items() if k != "origin"}
    if "la_off" in out:
        inside = out["kind"] == END_LA
        for k in ("la_off", "la_term", "la_where"):
            out[k] = np.where(inside, out[k], 0)
    return out


LEXER_SCHEMAS = [
    SCHEMA,
    {"type": "array", "items": {"type": "string", "format": "date-time"}, "maxItems": 3},
    {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-f0-9]{4,8}$"},
                                      "mail": {"type": "string", "format": "email"}}},
    {"anyOf": [{"type": "integer", "minimum": 10, "maximum": 12345}, {"type": "string", "maxLength": 5}]},
]


@pytest.mark.parametrize("name", ["json", "go", "python", "java", *(f"schema{i}" for i in range(len(LEXER_SCHEMAS)))])
def test_lexers_agree(name: str, monkeypatch) -> None:
    """The lexer DFA built with the compiled product construction and refinement equals the
    numpy/Python one, table for table (Go and Python: lookaheads, extended states, an indenter)."""
    if name.startswith("schema"):
        grammar = gg.Grammar.from_json_schema(LEXER_SCHEMAS[int(name[6:])])
    else:
        grammar = _grammar(name)
    built = []
    for loops in (None, native.ext):
        monkeypatch.setattr(native, "ext", loops)
        lexer.clear_pattern_cache()  # (each terminal's DFA built anew, in these loops)
        built.append(grammar.build_lexer())
    a, b = built
    for field in ("delta", "accept", "accept_next", "prod", "risky"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.terminals == b.terminals


@pytest.mark.parametrize("name", ["json", "go", "python", "java", *(f"schema{i}" for i in range(len(LEXER_SCHEMAS)))])
def test_terminal_dfas_agree(name: str, monkeypatch) -> None:
    """Each regex terminal's DFA (the subset construction, compiled for plain NFAs) equals the
    Python one, state for state, and both stop at the state budget alike."""
    from greatgramma.regex import compile_regex

    grammar = gg.Grammar.from_json_schema(LEXER_SCHEMAS[int(name[6:])]) if name.startswith("schema") else _grammar(name)
    plain = 0
    for t in grammar.terminals:
        if t.is_string:
            continue
        nfa = compile_regex(t.name, t.pattern)
        _, parts = lexer._byte_classes(lexer._nfa_masks(nfa))
        built = []
        for loops in (None, native.ext):
            monkeypatch.setattr(native, "ext", loops)
            built.append(lexer._terminal_dfa(nfa, parts, 50_000, t.name))
            if len(built[-1][0]) > 2:  # (made before trimming: at least as many states)
                with pytest.raises(gg.ResourceLimitError, match=f"terminal {t.name}: lexer DFA exceeds 2 states"):
                    lexer._terminal_dfa(nfa, parts, 2, t.name)
        (trans, acc, before, live), (trans2, acc2, before2, live2) = built
        assert (trans, acc, live) == (trans2, acc2, live2), t.pattern
        assert all(x is y is None or np.array_equal(x, y) for x, y in zip(before, before2)), t.pattern
        plain += not (nfa.ordered or nfa.guard_eps or nfa.gates or nfa.lookbehinds)
    assert plain  # (the compiled loop ran)


def test_lexer_state_limit_holds_in_both_loops(monkeypatch) -> None:
    """The DFA state budget stops the compiled product construction as it stops the Python one."""
    grammar = gg.Grammar(_WIDE)
    for loops in (None, native.ext):
        monkeypatch.setattr(native, "ext", loops)
        with pytest.raises(gg.ResourceLimitError, match="lexer DFA exceeds 40 states; simplify the terminals"):
            grammar.build_lexer(max_states=40)


def test_minimization_agrees_on_random_dfas(monkeypatch) -> None:
    """Hopcroft's refinement (C) and Moore's (numpy) give the same minimal DFA, numbered alike, on
    random DFAs with dead moves and states that differ only in what they accept before a byte."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        n, k = int(rng.integers(1, 40)), int(rng.integers(1, 6))
        trans = np.where(rng.random((n, k)) < 0.3, -1, rng.integers(0, n, (n, k))).astype(np.int32)
        accept = np.where(rng.random(n) < 0.5, -1, rng.integers(0, 3, n)).astype(np.int32)
        accept_next = np.full((n, 256), -1, dtype=np.int32)
        accept_next[rng.random(n) < 0.2, 7] = 1
        got = []
        for loops in (None, native.ext):
            monkeypatch.setattr(native, "ext", loops)
            got.append(lexer.minimize_classes(trans, accept, accept_next))
        for a, b in zip(*got):
            assert np.array_equal(a, b)


_WIDE = "start: A | B | C\nA: /[a-z]{1,12}x/\nB: /[a-m]{2,9}y/\nC: \"abcdefghijklmnop\"\n"


@pytest.mark.parametrize("name", ["schema", "json", "go", "python"])
def test_walks_and_suffix_rows_agree(name: str, vocabularies, monkeypatch) -> None:
    """Every subtree any lexer state enters, walked by both loops on one transducer (so rows and
    extended states carry the same ids; the compiled loop first, so it computes the suffix rows
    it needs), and the suffix rows at every token byte position (as
    the terminals and end state each names: the loops intern rows in different orders)."""
    compiled = gg.compile(_grammar(name), vocabularies("llama2"))
    tr = compiled.transducer
    compiled_loops = native.ext
    tables = []
    for loops in (compiled_loops, None):  # compiled first: it meets the suffix rows not computed yet
        monkeypatch.setattr(native, "ext", loops)
        walks = SubtreeWalks(tr)
        walks.walk_all()
        tables.append(walks._subtrees if compiled.lexer.columns is None else walks._base_subtrees)
    assert tables[0].keys() == tables[1].keys() and tables[0]
    for key, walk in tables[0].items():
        a, b = _sorted(walk), _sorted(tables[1][key])
        for field in a:
            assert np.array_equal(a[field], b[field]), (key, field)
    rows = []
    for loops in (None, compiled_loops):  # every suffix row, on transducers of their own
        monkeypatch.setattr(native, "ext", loops)
        fresh = TokenTransducer(compiled.lexer, tr.trie)
        fresh.fill()
        unpack = fresh.outcomes.unpack
        rows.append([None if r == DEAD else unpack(r) for r in fresh.suffix.tolist()])
    assert rows[0] == rows[1]


@pytest.mark.parametrize("name", ["schema", "json"])
def test_held_subtrees_agree(name: str, vocabularies, monkeypatch) -> None:
    """Which subtrees hold a result that depends on the entering state's fallback: the compiled
    walk flags them as it goes, numpy counts them from the joined results."""
    compiled = gg.compile(_grammar(name), vocabularies("llama2"))
    pairs = sorted({(b, st) for b, _, _, st in compiled.blocks._entered_subtrees()})
    held = []
    for loops in (native.ext, None):
        monkeypatch.setattr(native, "ext", loops)
        held.append(SubtreeWalks(compiled.transducer).joined(pairs)[-1])
    assert np.array_equal(*held) and held[0].any() and not held[0].all()


def test_masks_agree(vocabularies, hf_tokenizers, monkeypatch) -> None:
    """A schema compiled afresh under each loop gives the same masks along an instance."""
    from greatgramma.tokenize import encode_exact

    vocab = vocabularies("llama3")
    text = '{"name": "Ada Lovelace", "n": 299, "x": -1.5e3, "tag": "ab"}'
    ids = encode_exact(hf_tokenizers("llama3"), text, vocab.token_bytes)
    digests = []
    for loops in (None, native.ext):
        monkeypatch.setattr(native, "ext", loops)
        masker = gg.Masker(gg.compile(gg.Grammar.from_json_schema(SCHEMA), vocab))
        state, digest = masker.initial_state(), hashlib.sha256()
        for t in ids:
            digest.update(masker.mask(state).tobytes())
            state = masker.advance(state, t)
        assert masker.is_complete(state)
        digests.append(digest.hexdigest())
    assert digests[0] == digests[1]


def test_bad_arguments_are_refused() -> None:
    """Ranges outside the strings and arrays of the wrong item size raise, before any loop runs."""
    trie = gg.compile(gg.Grammar('start: "a"'), gg.Vocabulary([None, b"a", b"ab"], eos_token_ids=[0])).trie
    dfa = native.DFAArrays.of(np.full((2, 256), -1), np.full((2, 256), -1), np.zeros(2, bool))
    one = np.array([0])
    with pytest.raises(ValueError, match="outside"):
        native.walk(dfa, trie.flat_bytes, trie.offsets, trie.common_prefix, one, np.array([5]), one, one, 0)
    with pytest.raises(ValueError, match="outside"):
        native.suffix_lexemes(dfa, trie.flat_bytes, trie.position_end, np.zeros(len(trie.flat_bytes), np.int32),
                              np.array([99]), [])
    with pytest.raises(TypeError, match="lcp"):
        native.walk(dfa, trie.flat_bytes, trie.offsets, trie.offsets, one, one, one, one, 0)
    suffix, ignored = np.zeros(len(trie.flat_bytes), np.int32), np.zeros(1, bool)
    with pytest.raises(ValueError, match="outside"):
        native.walk_kept(dfa, trie.flat_bytes, trie.offsets, trie.common_prefix, one, np.array([5]), one, one, suffix, ignored)
    with pytest.raises(ValueError, match="disagree"):  # suffix rows for fewer positions than the strings hold
        native.walk_kept(dfa, trie.flat_bytes, trie.offsets, trie.common_prefix, one, one, one, one, suffix[:1], ignored)
    code = np.zeros(4, np.int32)
    with pytest.raises(ValueError, match="out of range"):  # string 9 past the 4 codes
        native.block_codes(one, one, np.array([0]), np.array([9]), np.array([0]), 3, code)
    with pytest.raises(ValueError, match="first kind"):  # terminal 5 with 3 first kinds
        native.block_codes(np.array([5]), one, np.array([0]), one, np.array([0]), 3, code)
    i64, i32 = (lambda *x: np.array(x, dtype=np.int64)), (lambda *x: np.array(x, dtype=np.int32))
    u8 = lambda *x: np.array(x, dtype=np.uint8)  # noqa: E731
    with pytest.raises(ValueError, match="inconsistent"):  # a move to a state past the last
        native.product(1, i64(0, 1), i64(0, 1), i32(0), i32(7), u8(0), i32(-1), u8(), i32(0), 10, -1.0)
    with pytest.raises(ValueError, match="inconsistent"):
        native.refine(i32(0, 5).reshape(2, 1), i64(0, 0))
    with pytest.raises(ValueError, match="inconsistent"):  # an epsilon edge to state 4 of 2
        native.subsets(1, i64(0, 1, 1), i32(4), i64(0, 0, 0), i32(), i64(0), i32(), 0, 1, 10, -1.0)
    with pytest.raises(ValueError, match="inconsistent"):  # class 3 of 1
        native.subsets(1, i64(0, 0, 0), i32(), i64(0, 1, 1), i32(1), i64(0, 1), i32(3), 0, 1, 10, -1.0)
    with pytest.raises(ValueError, match="out of range"):
        native.intern_rows(i32(3), i32(0), i32(0), i32(0), np.zeros(1, np.int32), u8(0), i64(), i64())


def test_block_codes_agree_and_read_dead_strings_as_dead(monkeypatch) -> None:
    """A block's status codes, first kinds, end states and held flags from both loops, on walk
    results of every kind, with strings a resolve left DEAD in place (code 0, not held)."""
    from types import SimpleNamespace

    from greatgramma.blocks import BlockTable, StatusLayout
    from greatgramma.codes import END, END_HELD, FALLBACK, NO_TERM

    rng = np.random.default_rng(3)
    n, nseg = 400, 5
    first = rng.choice([DEAD, END, NO_TERM, FALLBACK, END_HELD, 0, 1, 2], n).astype(np.int64)
    rest = rng.integers(0, 9, n).astype(np.int64)
    seg = np.sort(rng.integers(0, nseg, n)).astype(np.int64)
    strings = np.arange(n, dtype=np.int64)
    table = SimpleNamespace(layout=StatusLayout.of(3))
    got = []
    for loops in (None, native.ext):
        monkeypatch.setattr(native, "ext", loops)
        out = np.full(n, -9, dtype=np.int32)
        firsts, ends, held = BlockTable.codes(table, first, rest, seg, strings, np.zeros(nseg, dtype=np.int64), out)
        got.append((out, firsts, ends, np.asarray(held, dtype=bool)))
        dead = first == DEAD
        assert (out[dead] == 0).all() and (out[~dead & (first != FALLBACK) & (first != END_HELD)] > 0).all()
        assert list(held) == [bool(np.isin(first[seg == i], [FALLBACK, END_HELD]).any()) for i in range(nseg)]
    (a, fa, ea, ha), (b, fb, eb, hb) = got
    assert np.array_equal(a, b) and fa == fb and ea == eb and np.array_equal(ha, hb)


def test_gather_bits_packs_flags_as_numpy_does() -> None:
    """The mask words of a view's codes against a status vector: the compiled pass (its AVX2
    path where the CPU has one, and the plain loop) equals numpy's take-and-pack, for lengths
    around a word's boundary, status vectors of a few entries (the AVX2 path reads 4 bytes per
    lookup), and codes outside the flags (read as the last one)."""
    from greatgramma.views import pack

    rng = np.random.default_rng(5)
    for size in (1, 2, 3, 4, 5, 700):
        flags = rng.random(size) < 0.4
        for n in (0, 1, 31, 32, 33, 64, 1000, 128_257):
            code = rng.integers(0, size, n).astype(np.int32)
            assert np.array_equal(native.gather_bits(flags, code), pack(flags[code])), (size, n)
            code[::7] = rng.integers(-3, size + 3, len(code[::7]))
            want = pack(flags[np.minimum(code.view(np.uint32), size - 1)])
            for simd in (True, False):
                words = np.empty((n + 31) // 32, dtype=np.uint32)
                native.ext.gather_bits(flags.view(np.uint8), code, words, simd)
                assert np.array_equal(words, want), (size, n, simd)


def test_closure_reaches_the_fixpoint_as_numpy_does(monkeypatch) -> None:
    """Bits OR-ed backwards along edges (what a lexer state can still become or do): the compiled
    worklist equals numpy's rounds and a plain reachability check, on random graphs with cycles,
    duplicate edges and states without edges."""
    from greatgramma.lexer import _reach_back

    rng, compiled = np.random.default_rng(11), native.ext
    for states, edges, width in ((1, 0, 1), (5, 12, 1), (40, 90, 3), (300, 700, 2)):
        src, dst = rng.integers(0, states, edges), rng.integers(0, states, edges)
        bits = (rng.random((states, width)) < 0.1).astype(np.uint8) * rng.integers(1, 256, (states, width)).astype(np.uint8)
        got = []
        for loops in (compiled, None):
            monkeypatch.setattr(native, "ext", loops)
            got.append(_reach_back(src, dst, bits.copy()))
        monkeypatch.setattr(native, "ext", compiled)
        reach = np.eye(states, dtype=bool)  # reach[a, b]: b is reachable from a
        reach[src, dst] = True
        for k in range(states):
            reach |= reach[:, [k]] & reach[[k], :]
        want = np.array([np.bitwise_or.reduce(bits[reach[a]], axis=0) for a in range(states)], dtype=np.uint8)
        assert np.array_equal(got[0], want) and np.array_equal(got[1], want), states
    with pytest.raises(ValueError, match="outside"):
        native.closure(np.array([0]), np.array([3]), np.zeros((2, 1), np.uint8))


def test_utf8_positions_agree_on_random_dfas(monkeypatch) -> None:
    """The bytes that keep a DFA's text valid UTF-8 (``lexer.utf8_valid``): the compiled rounds
    equal numpy's on random DFAs whose states are met in several decoder states (mixed)."""
    rng, compiled = np.random.default_rng(13), native.ext
    for states, dense in ((1, 0.5), (6, 0.05), (30, 0.02), (200, 0.01), (200, 0.2)):
        delta = np.where(rng.random((states, 256)) < dense, rng.integers(0, states, (states, 256)), -1).astype(np.int32)
        got = []
        for loops in (compiled, None):
            monkeypatch.setattr(native, "ext", loops)
            got.append(lexer.utf8_valid(delta))
        monkeypatch.setattr(native, "ext", compiled)
        assert np.array_equal(got[0], got[1]), states


# right recursion: ")" after "c" reduces the whole chain of x, far below any stack's top segment
_DEEP = 'start: item+\nitem: "(" x ")"\nx: "a" x | "b" ";" x | "c"\n%ignore " "\n'


def _viable_rows_texts(name: str) -> tuple[gg.Grammar, list[str]]:
    if name == "deep":
        return gg.Grammar(_DEEP), ["(" + "a " * 30 + "c)(c)", "(" + "a b; " * 40 + "c)", "(b;a b;  a a c)(a c)"]
    if name == "go":  # the shipped grammar with Go's semicolon inserter (the parser's newlines)
        grammar = gg.Grammar.from_file(GRAMMARS / "go.lark", postlexer=gg.Semicolons.go())
    elif name == "python":  # the indenter: brackets, newlines by column, indents and dedents
        grammar = gg.Grammar.from_file(GRAMMARS / "python.lark", indenter=gg.Indenter.python())
        return grammar, [p.read_text(encoding="utf-8")[:1200] for p in program_paths(name)[:2]] + [_NESTED]
    else:
        grammar = gg.Grammar.from_file(GRAMMARS / "json.lark")
    return grammar, [p.read_text(encoding="utf-8")[:1500] for p in program_paths(name)[:2]]


# blocks nested deeper than WALK_DEPTH states; newlines inside brackets; dedents
_NESTED = "".join(f"{' ' * k}if x{k}:\n" for k in range(20)) + " " * 20 + "y = [1,\n  2] + (\n3)\nz = 1\n"


@pytest.mark.parametrize("name", ["json", "go", "python", "deep"])
def test_viable_rows_agree_with_the_split_walk(name: str, vocabularies, hf_tokenizers, monkeypatch) -> None:
    """The compiled walk of the rows' prefix tree (``native.viable_rows``) finds the rows the split
    walk (paper Alg. 5 in Python) finds, from every stack along texts and after each terminal the
    parser takes there (the texts' first 1,500 characters; Python's with blocks nested past
    ``WALK_DEPTH`` states). On the right-recursive grammar reductions pop below the stacks' top
    segments, then below their top ``WALK_DEPTH`` states, where the split walk takes over."""
    from greatgramma.tokenize import encode_exact

    vocab = vocabularies("llama3")
    grammar, texts = _viable_rows_texts(name)
    masker = gg.Masker(gg.compile(grammar, vocab))
    rows, parser, trie = masker._rows, masker.parser, masker.compiled.sequences
    assert rows._tables is not None
    asked: list[tuple[int, bool]] = []  # (states given, more asked for)
    walk = native.viable_rows
    monkeypatch.setattr(native, "viable_rows", lambda *args: asked.append((len(args[2]), walk(*args))) or asked[-1][1])
    compared = 0
    for text in texts:
        state = masker.initial_state()
        for t in encode_exact(hf_tokenizers("llama3"), text, vocab.token_bytes):
            masker.mask(state)  # (builds the lexer view, which hangs the rows it needs)
            hung = trie.sync()
            stacks = [state.stack] + [parser.feed(state.stack, k) for k in range(parser.end)]
            for stack in filter(None, stacks):
                assert rows._walked(stack, hung) == rows._split_walked(stack, hung), (text, t)
                compared += 1
            state = masker.advance(state, t)
    assert compared > 100 and len(asked) >= compared
    if name == "deep":
        assert {(SEGMENT, True), (WALK_DEPTH, False), (WALK_DEPTH, True)} <= set(asked)
    if name == "python":  # (a row's dedents pop a block or two: never below WALK_DEPTH states)
        assert (SEGMENT, True) in asked and any(n > SEGMENT for n, _ in asked)


def test_viable_rows_refuses_what_is_out_of_range(vocabularies) -> None:
    """A stack state or a trie pointer outside its table raises, not a read past an array."""
    masker = gg.Masker(gg.compile(gg.Grammar(_DEEP), vocabularies("llama2")))
    masker.mask(masker.initial_state())  # (hangs rows in the tree)
    sequences = masker.compiled.sequences
    tables, hung, trie = masker._rows._tables, sequences.sync(), sequences.arrays()
    ok = np.zeros(hung, np.uint8)
    with pytest.raises(ValueError, match="out of its array's range"):
        native.viable_rows(tables, trie, np.array([0, 10**6], np.int32), False, ok)
    with pytest.raises(ValueError, match="pass its arrays"):
        native.viable_rows(tables, trie._replace(rows=trie.rows[:0]), np.array([0], np.int32), False, ok)
    with pytest.raises(ValueError, match="empty stack"):
        native.viable_rows(tables, trie, np.zeros(0, np.int32), False, ok)


def test_viable_rows_refuses_a_bad_indented_stack(vocabularies) -> None:
    """With an indenter's tables: a negative bracket depth, no levels or a terminal past the
    kinds raise, not a read past an array."""
    text = 'start: (stmt | _NL)*\nstmt: NAME _NL | "(" NAME ")" _NL\nNAME: /[a-z]+/\n_NL: /(\\r?\\n[\\t ]*)+/\n%declare _INDENT _DEDENT\n'
    grammar = gg.Grammar(text, indenter=gg.Indenter(open=("LPAR",), close=("RPAR",)))
    masker = gg.Masker(gg.compile(grammar, vocabularies("llama2")))
    masker.mask(masker.initial_state())  # (hangs rows in the tree)
    sequences = masker.compiled.sequences
    tables, hung, trie = masker._rows._tables, sequences.sync(), sequences.arrays()
    assert len(tables.kinds) and len(trie.edge_term)
    stack, ok, levels = np.array([masker.parser.start_state], np.int32), np.zeros(hung, np.uint8), np.zeros(1, np.int32)
    native.viable_rows(tables, trie, stack, False, ok, 0, levels)  # (as given, it runs)
    for brackets, bad_levels in ((-1, levels), (0, levels[:0])):
        with pytest.raises(ValueError, match="indenter's terminals, bracket depth or levels"):
            native.viable_rows(tables, trie, stack, False, ok, brackets, bad_levels)
    with pytest.raises(ValueError, match="out of its array's range"):
        native.viable_rows(tables._replace(kinds=tables.kinds[:1]), trie, stack, False, ok, 0, levels)
