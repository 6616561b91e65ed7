"""The intersection of two string languages as a regex node (:data:`.ecma_regex.Node`).

A schema's string terminals must be a family the basic lexer can serve exactly (see
:mod:`.terminals`): closed under intersection, each lexeme going to the smallest terminal that
holds it. Two constraints that overlap (``^[a-z0-9]+$`` and ``[a-z]+$``; a format and a length
bound) get a third terminal for the strings both take. A regex has no intersection operator, so it
is computed: Brzozowski derivatives on code points (over the classes of code points that every
character set in the two nodes treats alike) give a DFA of the intersection, and state
elimination turns it back into a node. Both steps are bounded (:data:`MAX_STATES`,
:data:`MAX_SIZE`); past the bounds :func:`intersect` returns None and the caller refuses the schema.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import lru_cache

from .ecma_regex import Node

MAX_STATES = 400
MAX_SIZE = 40_000  # nodes in the regex written back

# Internal terms (hashable, normalized so that the derivatives of a term are finitely many):
# ("none",) | ("eps",) | ("chars", ranges) | ("cat", a, b) | ("or", frozenset) | ("and", frozenset) | ("rep", a, lo, hi)
# | ("not", a), as _T.


class _T(tuple):
    """A term: a tuple that keeps its hash. Terms nest deep and every derivative looked up in
    the memo hashes its term (a plain tuple's hash walks all of it, each time)."""

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            self._hash = h = tuple.__hash__(self)
            return h


NONE = _T(("none",))
EPS = _T(("eps",))


def _cat(a, b):
    if a is NONE or b is NONE or a == NONE or b == NONE:
        return NONE
    if a == EPS:
        return b
    if b == EPS:
        return a
    if a[0] == "cat":
        return _cat(a[1], _cat(a[2], b))
    return _T(("cat", a, b))


def _or(items):
    out = set()
    chars = []
    for x in items:
        if x == NONE:
            continue
        if x[0] == "or":
            for y in x[1]:
                (chars.append(y) if y[0] == "chars" else out.add(y))
        elif x[0] == "chars":
            chars.append(x)
        else:
            out.add(x)
    if chars:
        out.add(_T(("chars", _union([r for c in chars for r in c[1]]))))
    if not out:
        return NONE
    if len(out) == 1:
        return next(iter(out))
    return _T(("or", frozenset(out)))


def _and(items):
    out = set()
    for x in items:
        if x == NONE:
            return NONE
        if x[0] == "and":
            out |= x[1]
        else:
            out.add(x)
    if len(out) == 1:
        return next(iter(out))
    if EPS in out:
        return EPS if all(_nullable(x) for x in out) else NONE
    return _T(("and", frozenset(out)))


def _rep(a, lo, hi):
    if hi == 0 or a == EPS:
        return EPS
    if a == NONE:
        return EPS if lo == 0 else NONE
    if lo == 1 and hi == 1:
        return a
    return _T(("rep", a, lo, hi))


def _union(ranges) -> tuple:
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


@lru_cache(maxsize=1 << 16)  # (bounded: a serving process meets the terms of every schema it compiles)
def _nullable(t) -> bool:
    k = t[0]
    if k == "eps":
        return True
    if k in ("none", "chars"):
        return False
    if k == "cat":
        return _nullable(t[1]) and _nullable(t[2])
    if k == "or":
        return any(_nullable(x) for x in t[1])
    if k == "and":
        return all(_nullable(x) for x in t[1])
    if k == "not":
        return not _nullable(t[1])
    return t[2] == 0 or _nullable(t[1])


def _contains(ranges, c: int) -> bool:
    i = bisect_right(ranges, (c, 0x7FFFFFFF)) - 1
    return i >= 0 and ranges[i][0] <= c <= ranges[i][1]


def _deriv(t, c: int, memo: dict):
    key = (t, c)
    got = memo.get(key)
    if got is not None:
        return got
    k = t[0]
    if k in ("none", "eps"):
        got = NONE
    elif k == "chars":
        got = EPS if _contains(t[1], c) else NONE
    elif k == "cat":
        got = _cat(_deriv(t[1], c, memo), t[2])
        if _nullable(t[1]):
            got = _or([got, _deriv(t[2], c, memo)])
    elif k == "or":
        got = _or([_deriv(x, c, memo) for x in t[1]])
    elif k == "and":
        got = _and([_deriv(x, c, memo) for x in t[1]])
    elif k == "not":
        got = _T(("not", _deriv(t[1], c, memo)))
    else:
        _, a, lo, hi = t
        got = _cat(_deriv(a, c, memo), _rep(a, max(lo - 1, 0), None if hi is None else hi - 1))
    got = memo.setdefault(got, got)  # one object per term met: later lookups find it by identity
    memo[key] = got
    return got


def _canonical(t, memo: dict):
    """The memo's own object for a term equal to ``t`` (and so for each term inside it): a term
    built afresh from a node is looked up in the memo by identity from then on, not compared
    deep at every lookup."""
    got = memo.get(t)
    if got is not None:
        return got
    k = t[0]
    if k == "cat":
        t = _T(("cat", _canonical(t[1], memo), _canonical(t[2], memo)))
    elif k in ("or", "and"):
        t = _T((k, frozenset(_canonical(x, memo) for x in t[1])))
    elif k in ("rep", "not"):
        t = _T((k, _canonical(t[1], memo), *t[2:]))
    return memo.setdefault(t, t)


def _term_of(node: Node, memo: dict):
    """``_term(node)``, canonical in ``memo``; kept there by the node's identity (a schema relates
    each of its languages to many others: its nodes come back)."""
    key = ("node", id(node))
    got = memo.get(key)
    if got is None or got[0] is not node:
        got = memo[key] = (node, _canonical(_term(node), memo))
    return got[1]


def _term(node: Node):
    kind = node[0]
    if kind == "chars":
        return _T(("chars", _union(node[1]))) if node[1] else NONE
    if kind == "seq":
        out = EPS
        for n in reversed(node[1]):
            out = _cat(_term(n), out)
        return out
    if kind == "alt":
        return _or([_term(n) for n in node[1]])
    _, body, lo, hi = node
    return _rep(_term(body), lo, hi)


def _boundaries(node: Node, out: set) -> None:
    kind = node[0]
    if kind == "chars":
        for lo, hi in node[1]:
            out.add(lo)
            out.add(hi + 1)
    elif kind in ("seq", "alt"):
        for n in node[1]:
            _boundaries(n, out)
    else:
        _boundaries(node[1], out)


def dfa(nodes: list[Node], max_states: int = MAX_STATES, minus: list[Node] = (), memo: dict | None = None):
    """The DFA of the intersection of the nodes' languages: (transitions, accepting), state 0 the
    start; transitions[s] maps an atom (lo, hi) of code points to the next state (dead ones left
    out). None past ``max_states``. ``memo``: derivatives already taken (a pure function of the
    term and the code point: the calls for one schema share one, as its languages recur)."""
    cuts: set = {0, 0x110000}
    for n in [*nodes, *minus]:
        _boundaries(n, cuts)
    cuts = sorted(c for c in cuts if 0 <= c <= 0x110000)
    atoms = [(a, b - 1) for a, b in zip(cuts, cuts[1:])]
    memo = {} if memo is None else memo
    parts = [_term_of(n, memo) for n in nodes]
    if minus:
        parts.append(_T(("not", _or([_term_of(n, memo) for n in minus]))))
    start = _canonical(_and(parts), memo)
    index, states, trans = {start: 0}, [start], []
    i = 0
    while i < len(states):
        t = states[i]
        row = {}
        for atom in atoms:
            d = _deriv(t, atom[0], memo)
            if d == NONE:
                continue
            j = index.get(d)
            if j is None:
                if len(states) >= max_states:
                    return None
                j = index[d] = len(states)
                states.append(d)
            row[atom] = j
        trans.append(row)
        i += 1
    accepting = [_nullable(t) for t in states]
    # prune states from which no accepting state is reachable (their terms are empty languages
    # the normalization did not see, e.g. an intersection of disjoint sets)
    live = {s for s, a in enumerate(accepting) if a}
    changed = True
    while changed:
        changed = False
        for s, row in enumerate(trans):
            if s not in live and any(j in live for j in row.values()):
                live.add(s)
                changed = True
    trans = [{a: j for a, j in row.items() if j in live} if s in live else {} for s, row in enumerate(trans)]
    return _minimize(trans, accepting, live)


def _minimize(trans, accepting, live):
    """Moore's partition refinement on the live states (fewer states: a smaller regex written back)."""
    states = sorted(live)
    rows = {s: sorted(trans[s].items()) for s in states}
    targets = {s: [j for _, j in rows[s]] for s in states}
    ids: dict = {}  # first blocks: acceptance and the atoms that lead somewhere (a round of refinement tells these apart)
    block = {s: ids.setdefault((accepting[s], tuple(a for a, _ in rows[s])), len(ids)) for s in states}
    count = len(ids)
    while True:
        ids = {}
        get = block.__getitem__
        new = {s: ids.setdefault((block[s], tuple(map(get, targets[s]))), len(ids)) for s in states}
        if len(ids) == count:
            break
        block, count = new, len(ids)
    if 0 not in block:
        return trans, accepting, live
    renum: dict[int, int] = {block[0]: 0}
    for s in states:
        renum.setdefault(block[s], len(renum))
    out_trans = [dict() for _ in renum]
    out_acc = [False] * len(renum)
    for s in states:
        b = renum[block[s]]
        out_acc[b] = accepting[s]
        out_trans[b] = {a: renum[block[j]] for a, j in trans[s].items()}
    return out_trans, out_acc, set(range(len(renum)))


# ---------------------------------------------------------------- back to a node (state elimination)

_EMPTY_SEQ: Node = ("seq", [])


def _size(n: Node) -> int:
    if n[0] == "chars":
        return 1
    if n[0] in ("seq", "alt"):
        return 1 + sum(_size(x) for x in n[1])
    return 1 + _size(n[1])


def _alt(a: Node | None, b: Node | None) -> Node | None:
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == "chars" and b[0] == "chars":
        return ("chars", _union(list(a[1]) + list(b[1])))
    items = (a[1] if a[0] == "alt" else [a]) + (b[1] if b[0] == "alt" else [b])
    return ("alt", items)


def _seq(*parts: Node) -> Node:
    items = []
    for p in parts:
        if p[0] == "seq":
            items += p[1]
        else:
            items.append(p)
    return items[0] if len(items) == 1 else ("seq", items)  # (no items: the empty string)


def intersect(nodes: list[Node], minus: list[Node] = (), memo: dict | None = None) -> Node | None:
    """A node for the strings in every node's language and in none of ``minus``'s (None when too
    large to compute); the empty language is ``("alt", [])``. ``memo``: as for :func:`dfa`."""
    got = dfa(nodes, minus=minus, memo=memo)
    if got is None:
        return None
    trans, accepting, live = got
    if 0 not in live:
        return ("alt", [])
    n = len(trans)
    START, FINAL = n, n + 1
    edges: dict[tuple[int, int], Node] = {}
    for s in live:
        by_target: dict[int, list] = {}
        for atom, j in trans[s].items():
            by_target.setdefault(j, []).append(atom)
        for j, atoms in by_target.items():
            edges[(s, j)] = ("chars", _union(atoms))
        if accepting[s]:
            edges[(s, FINAL)] = _EMPTY_SEQ
    edges[(START, 0)] = _EMPTY_SEQ
    remaining = set(live)
    size = 0
    while remaining:
        ins: dict[int, list[int]] = {}
        outs: dict[int, list[int]] = {}
        for (p, q) in edges:
            if p != q:
                outs.setdefault(p, []).append(q)
                ins.setdefault(q, []).append(p)
        k = min(remaining, key=lambda s: len(ins.get(s, ())) * len(outs.get(s, ())))
        remaining.discard(k)
        loop = edges.pop((k, k), None)
        star = ("rep", loop, 0, None) if loop is not None else None
        preds = [p for p in ins.get(k, ()) if p != k]
        succs = [q for q in outs.get(k, ()) if q != k]
        for p in preds:
            for q in succs:
                path = _seq(edges[(p, k)], star, edges[(k, q)]) if star is not None else _seq(edges[(p, k)], edges[(k, q)])
                edges[(p, q)] = _alt(edges.get((p, q)), path)
                size = max(size, _size(edges[(p, q)]))
                if size > MAX_SIZE:
                    return None
        for p in preds:
            edges.pop((p, k), None)
        for q in succs:
            edges.pop((k, q), None)
    return edges.get((START, FINAL), ("alt", []))


def signature(nodes: list[Node], memo: dict | None = None):
    """A canonical form of the intersection's minimal DFA (two languages are equal exactly when
    their signatures are): states numbered in breadth-first order, each row as ranges of code
    points to states. None when the DFA is too large. ``memo``: as for :func:`dfa`."""
    got = dfa(nodes, memo=memo)
    if got is None:
        return None
    trans, accepting, live = got
    if 0 not in live:
        return ()
    rows = []
    for row in trans:
        merged: list = []
        for (lo, hi), j in sorted(row.items()):
            if merged and merged[-1][1] + 1 == lo and merged[-1][2] == j:
                merged[-1] = (merged[-1][0], hi, j)
            else:
                merged.append((lo, hi, j))
        rows.append(merged)
    order, queue = {0: 0}, [0]
    for s in queue:
        for _, _, j in rows[s]:
            if j not in order:
                order[j] = len(order)
                queue.append(j)
    return tuple((accepting[s], tuple((lo, hi, order[j]) for lo, hi, j in rows[s])) for s in queue)


def matches(node: Node, text: str, memo: dict | None = None) -> bool:
    """Whether ``text`` is in the node's language (its derivatives, code point by code point;
    ``memo``: as for :func:`dfa`). No regex is compiled: a schema's string languages can be
    regexes that take Python's ``re`` a tenth of a second each to compile."""
    memo = {} if memo is None else memo
    t = _term_of(node, memo)
    for ch in text:
        t = _deriv(t, ord(ch), memo)
        if t == NONE:
            return False
    return _nullable(t)


def is_covered(node: Node, others: list[Node], max_states: int = 20 * MAX_STATES, memo: dict | None = None) -> bool | None:
    """Whether every string of ``node`` is in some of ``others`` (None: too large to tell): a
    breadth-first search for a string of node outside them, which stops at the first. ``memo``: as
    for :func:`dfa`."""
    cuts: set = {0, 0x110000}
    for n in [node, *others]:
        _boundaries(n, cuts)
    cuts = sorted(c for c in cuts if 0 <= c <= 0x110000)
    reps = cuts[:-1]  # one code point per class
    memo = {} if memo is None else memo
    start = _canonical(_and([_term_of(node, memo), _T(("not", _or([_term_of(n, memo) for n in others])))]), memo)
    seen, queue = {start}, [start]
    for t in queue:
        if _nullable(t):
            return False
        for c in reps:
            d = _deriv(t, c, memo)
            if d != NONE and d not in seen:
                if len(seen) >= max_states:
                    return None
                seen.add(d)
                queue.append(d)
    return True
