"""The token trie's derived tables, against the strings themselves."""

from __future__ import annotations

import random

import pytest

from greatgramma.trie import TokenTrie


@pytest.mark.parametrize("seed", range(4))
def test_level_links_match_the_strings(seed: int) -> None:
    """Each node's range ends where its prefix stops, and each node's children are the next
    depth's nodes inside that range (what the subtree walks index instead of searching)."""
    rng = random.Random(seed)
    pieces = list({bytes(rng.choice(b"abc\xc3") for _ in range(rng.randint(1, 7))) for _ in range(400)})
    trie = TokenTrie.build([None, *pieces])
    levels = trie.level_starts
    for d, starts in enumerate(levels):
        ends, first, last = trie.level_links(d)
        for i, s in enumerate(starts.tolist()):
            prefix, e = trie.strings[s][: d + 1], s
            while e < len(trie) and trie.strings[e][: d + 1] == prefix:
                e += 1
            assert ends[i] == e, (d, i)
        if d:
            above_ends = trie.level_links(d - 1)[0]
            for i, s in enumerate(levels[d - 1].tolist()):
                kids = [j for j, c in enumerate(starts.tolist()) if s <= c < above_ends[i]]
                assert list(range(first[i], last[i])) == kids, (d, i)
