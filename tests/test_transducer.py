"""The token-level transducer against running each token's bytes through the lexer, for every lexer state."""

from __future__ import annotations

import random

import pytest
from helpers import GRAMMARS

import greatgramma as gg
from greatgramma.lexer import build_lexer
from greatgramma.transducer import END, NO_TERM, TokenTransducer, TokenTrie

ALPHABET = [b"{", b"}", b'"', b"a", b"1", b" ", b"\n", b",", b":", b".", b"e", b"\xc3", b"\xa9", b"-", b"t",
            b"r", b"u", b"/", b"*", b"x", b"i", b"f", b"0", b"(", b"\t", b"\\", b"'", b"`"]


@pytest.mark.parametrize("name", ["json", "go", "java"])
def test_walk_matches_byte_by_byte_lexing(name: str) -> None:
    grammar = gg.Grammar.from_file(GRAMMARS / f"{name}.lark")
    lexer = build_lexer(grammar.terminals)
    rng = random.Random(name)
    tokens = sorted({b"".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6))) for _ in range(500)})
    trie = TokenTrie.build([None, *tokens])
    transducer = TokenTransducer(lexer, trie)
    for q in rng.sample(range(lexer.num_states), min(lexer.num_states, 120)) + [0]:
        strings, first, rest = transducer.walk(q)
        got = {}
        for s, f, r in zip(strings.tolist(), first.tolist(), rest.tolist()):
            if f == END:
                got[trie.strings[s]] = ((), r)
            else:
                terms, end = transducer.outcomes.unpack(r)
                got[trie.strings[s]] = (((f,) if f != NO_TERM else ()) + terms, end)
        for tok in tokens:
            ran = lexer.feed(q, tok)
            expected = None
            if ran is not None:
                terms, end = ran
                expected = (tuple(t for t in terms if not grammar.terminals[t].ignored), end)
            assert got.get(tok) == expected, (q, tok)
