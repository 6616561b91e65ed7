"""The outcome rows as a prefix tree of their terminal sequences (paper section 3.3: the realizable sequences).

Rows are interned as the token walks meet them (:mod:`greatgramma.transducer`); :meth:`SequenceTrie.sync`
hangs the new ones. The context-independent split of each node is computed on demand
(:mod:`greatgramma.split`), for the rows hung so far.
"""

from __future__ import annotations

import threading

import numpy as np

from .native import TrieArrays
from .transducer import TokenTransducer


class SequenceTrie:
    """The outcome rows as a prefix tree of their terminal sequences. Grows; thread-safe.

    Node 0 is the empty sequence; a node's children extend it by one terminal. A row hangs under
    the node of its terminal sequence: it is viable when that node is and, after it, a lexeme
    reachable from the row's end state can follow. ``free[n]`` are rows whose end state can
    still become an ignored terminal (no condition); ``edges[n]`` lists, per terminal T to feed
    after node n, the child node for T and the rows whose end state can become T. ``num_rows``
    rows are hung; the lists and arrays of a node are replaced whole when rows are added, and
    ``version[n]`` changes whenever the subtree under node n does (what was computed from it is
    then stale).
    """

    def __init__(self, transducer: TokenTransducer):
        self._outcomes, self._lexer = transducer.outcomes, transducer.lexer
        self.term: list[int] = [-1]
        self.children: list[list[int]] = [[]]
        self.free: list[np.ndarray | None] = [None]
        # per node, one entry per terminal to feed: (terminal, child node or -1, rows ending with it or None)
        self.edges: list[list[tuple[int, int, np.ndarray | None]]] = [[]]
        self.version: list[int] = [0]
        self._parent: list[int] = [-1]
        self._free: list[list[int]] = [[]]
        self._by_term: list[dict[int, list[int]]] = [{}]
        self._index: dict[tuple[int, int], int] = {}
        self._lock = threading.Lock()
        self.num_rows = 0
        self._arrays: tuple[int, TrieArrays] | None = None  # (rows hung in them, the arrays)
        self.sync()

    def sync(self) -> int:
        """Hang the outcome rows interned since the last call; the number of rows hung (every row
        whose id the caller may have read, from the suffix table or a block, is among them)."""
        last = self._outcomes.settled_len()
        if last == self.num_rows:
            return self.num_rows
        with self._lock:
            first, last = self.num_rows, self._outcomes.settled_len()
            touched: set[int] = set()
            for row in range(first, last):
                terms, end = self._outcomes.unpack(row)
                self._hang(row, self._node(0, terms, touched), end, frozenset((end,)), touched)
            for n in sorted(touched):
                self._publish(n)
            tick = max(self.version) + 1
            for n in touched:  # after publishing: a version never names lists older than itself
                while n >= 0 and self.version[n] != tick:
                    self.version[n] = tick
                    n = self._parent[n]
            self.num_rows = max(self.num_rows, last)
        return self.num_rows

    def arrays(self) -> TrieArrays:
        """The tree as flat arrays for the compiled walk (``native.viable_rows``), with every row
        hung so far; made again after more rows are hung."""
        got = self._arrays
        if got is not None and got[0] == self.num_rows:
            return got[1]
        with self._lock:  # a snapshot: sync() changes nothing meanwhile
            edges, free = self.edges[: len(self.term)], self.free[: len(self.term)]
            flat = [e for es in edges for e in es]
            rows = [r for _, _, r in flat if r is not None]
            free_rows = [r for r in free if r is not None]
            ptr = lambda counts: np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])  # noqa: E731
            cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)  # noqa: E731
            got = self._arrays = (self.num_rows, TrieArrays(
                ptr([len(es) for es in edges]),
                np.array([t for t, _, _ in flat], dtype=np.int32),
                np.array([c for _, c, _ in flat], dtype=np.int32),
                ptr([0 if r is None else len(r) for _, _, r in flat]),
                cat(rows),
                ptr([0 if r is None else len(r) for r in free]),
                cat(free_rows),
            ))  # fmt: skip
        return got[1]

    def _node(self, n: int, terms, touched: set[int]) -> int:
        for t in terms:
            c = self._index.get((n, t))
            if c is None:
                c = self._index[(n, t)] = len(self.term)
                self.term.append(t)
                self.children.append([])
                self._free.append([])
                self._by_term.append({})
                self.free.append(None)
                self.edges.append([])
                self.version.append(0)
                self._parent.append(n)
                self.children[n].append(c)
                touched.add(n)
            n = c
        return n

    def _hang(self, row: int, n: int, end: int, branch: frozenset, touched: set[int]) -> None:
        """The row is viable at node n if its lexeme goes on, or backs up and goes on after that."""
        lexer = self._lexer
        q = lexer.base(end)
        touched.add(n)
        if lexer.can_end_ignored[q]:
            self._free[n].append(row)
            return
        for t in lexer.visible[q]:
            self._by_term[n].setdefault(t, []).append(row)
        for terms, after in lexer.backup_options(end):
            if after not in branch:  # a state met again on the branch adds no continuation
                self._hang(row, self._node(n, terms, touched), after, branch | {after}, touched)

    def _publish(self, n: int) -> None:
        """Replace node n's readable lists (readers see the old or the new ones, whole)."""
        free, d = self._free[n], self._by_term[n]
        self.free[n] = np.array(free, dtype=np.int64) if free else None
        kids = {self.term[c]: c for c in self.children[n]}
        self.edges[n] = [
            (t, kids.get(t, -1), np.array(d[t], dtype=np.int64) if t in d else None) for t in sorted(set(d) | set(kids))
        ]
