"""The outcome rows as a prefix tree of their terminal sequences (paper section 3.3: the realizable sequences).

Built once per compiled grammar; the context-independent split of each node is computed on
demand (:mod:`greatgramma.split`).
"""

from __future__ import annotations

import numpy as np

from .lexing import LexingTransducer
from .transducer import TokenTransducer


class SequenceTrie:
    """All outcome rows as a prefix tree of their terminal sequences.

    Node 0 is the empty sequence; a node's children extend it by one terminal. A row hangs under
    the node of its terminal sequence: it is viable when that node is and, after it, a lexeme
    reachable from the row's end state can follow. ``free[n]`` are rows whose end state can
    still become an ignored terminal (no condition); ``edges[n]`` lists, per terminal T to feed
    after node n, the child node for T and the rows whose end state can become T.
    """

    def __init__(self, rows: list[tuple[tuple[int, ...], int]], lexer: LexingTransducer):
        self.term: list[int] = [-1]
        self.children: list[list[int]] = [[]]
        free: list[list[int]] = [[]]
        by_term: list[dict[int, list[int]]] = [{}]
        index: dict[tuple[int, int], int] = {}

        def node(n: int, terms) -> int:
            for t in terms:
                c = index.get((n, t))
                if c is None:
                    c = index[(n, t)] = len(self.term)
                    self.term.append(t)
                    self.children.append([])
                    free.append([])
                    by_term.append({})
                    self.children[n].append(c)
                n = c
            return n

        def hang(row: int, n: int, end: int, branch: frozenset) -> None:
            """The row is viable at node n if its lexeme goes on, or backs up and goes on after that."""
            q = lexer.base(end)
            if lexer.can_end_ignored[q]:
                free[n].append(row)
                return
            for t in lexer.visible[q]:
                by_term[n].setdefault(t, []).append(row)
            for terms, after in lexer.backup_options(end):
                if after not in branch:  # a state met again on the branch adds no continuation
                    hang(row, node(n, terms), after, branch | {after})

        for row, (terms, end) in enumerate(rows):
            hang(row, node(0, terms), end, frozenset((end,)))
        self.free = [np.array(r, dtype=np.int64) if r else None for r in free]
        # per node, one entry per terminal to feed: (terminal, child node or -1, rows ending with it or None)
        self.edges: list[list[tuple[int, int, np.ndarray | None]]] = []
        for n, d in enumerate(by_term):
            kids = {self.term[c]: c for c in self.children[n]}
            self.edges.append(
                [(t, kids.get(t, -1), np.array(d[t], dtype=np.int64) if t in d else None) for t in sorted(set(d) | set(kids))]
            )

    @classmethod
    def of(cls, transducer: TokenTransducer) -> SequenceTrie:
        """The trie of all the transducer's outcome rows."""
        outcomes = transducer.outcomes
        return cls([outcomes.unpack(r) for r in range(len(outcomes))], transducer.lexer)
