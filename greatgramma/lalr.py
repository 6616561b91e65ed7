"""LALR(1) tables of our own: LR(0) item sets over integer items, DeRemer and Pennello's lookaheads.

The input is the BNF that Lark's loader makes of a grammar (rules by name, EBNF already expanded);
the output means what Lark's ``LALR_Analyzer`` computes from the same rules, state for state (up
to numbering): the LR(0) automaton of the rules plus a root rule ``$root_<start>: <start>``, the
lookahead sets as Lark derives them (``reads``/``includes``/``lookback`` relations, the includes
walk also starting at kernel items of the transition's nonterminal, as Lark's does), reduce/reduce
conflicts resolved by a strictly higher rule priority or reported, shift/reduce resolved as a shift.

One case is flagged rather than reproduced (``shared_reads``): where the *reads* relation has a
cycle through two transitions or more (nullable nonterminals that can follow one another around
a loop of states), Lark's digraph leaves one set object shared by the cycle's transitions and then
grows it while computing the follow sets, so its lookaheads there depend on the order it visits
transitions in (object ids and string hashes). The adapter takes Lark's own analysis for such
grammars; none of the shipped grammars or the JSON Schema front end's has one.

Everything is integers: symbols are numbered (nonterminals ``0..N-1``, terminals ``N..``), an item
is ``base[rule] + dot``, a kernel is a sorted tuple of items (interned), and terminal sets are
Python ints used as bit sets. Lark's own analysis is object-heavy (hashing ``RulePtr`` and symbol
objects) and is most of the time of compiling a big grammar; this one does the same in a fraction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["END", "LalrInputError", "LalrTables", "build"]

END = "$END"


class LalrInputError(ValueError):
    """Rules the analysis cannot take; the message is worded as Lark words it."""


class LalrTables(NamedTuple):
    """The LR(0) automaton with LALR(1) lookaheads, and its resolved actions.

    Symbols: ``names[s]`` and ``is_term(s) = s >= n_nonterms``; rules: ``lhs``, ``rhs``, ``priority``
    (the last rule is the root rule). States are numbered breadth first from ``start_state`` (0).
    """

    names: tuple[str, ...]
    n_nonterms: int
    lhs: tuple[int, ...]
    rhs: tuple[tuple[int, ...], ...]
    priority: tuple[int, ...]
    base: tuple[int, ...]  # item id of (rule, 0)
    item_rule: tuple[int, ...]
    kernels: list[tuple[int, ...]]  # per state: sorted item ids
    closure_nts: list[frozenset]  # per state: the nonterminals whose (rule, 0) items are in its closure
    transitions: list[dict[int, int]]  # per state: symbol -> state
    lookaheads: list[dict[int, int]]  # per state: complete rule -> terminal bit set (bit t: symbol n_nonterms + t)
    start_state: int
    end_state: int
    shared_reads: bool  # a cycle of reads through two transitions or more: see build()
    has_conflicts: bool  # some terminal with two rules to reduce, or a rule to reduce and a shift
    overlaps: list[int]  # the states where two rules to reduce share a lookahead (resolved by priority or not)
    collisions: list[tuple[int, int, tuple[int, ...]]]  # unresolved reduce/reduce: (state, terminal, rules)

    def is_term(self, sym: int) -> bool:
        return sym >= self.n_nonterms

    def actions(self, state: int) -> tuple[dict[int, int], dict[int, int]]:
        """``(shifts, reduces)`` of a state after resolution: terminal -> state, terminal -> rule.

        A terminal of an unresolved reduce/reduce collision has no reduce (Lark refuses the grammar).
        """
        n = self.n_nonterms
        shifts = {s: t for s, t in self.transitions[state].items() if s >= n}
        return shifts, _reduces(self, state, shifts)

    def item_text(self, item: int) -> str:
        """An item as Lark's ``RulePtr`` writes it: ``<origin : before * after>``."""
        r = self.item_rule[item]
        dot = item - self.base[r]
        names, rhs = self.names, self.rhs[r]
        before = " ".join(names[s] for s in rhs[:dot])
        after = " ".join(names[s] for s in rhs[dot:])
        return f"<{names[self.lhs[r]]} : {before} * {after}>"


def _reduces(tables: LalrTables, state: int, shifts) -> dict[int, int]:
    out: dict[int, int] = {}
    collided: set[int] = set()
    n, priority = tables.n_nonterms, tables.priority
    for rule, bits in tables.lookaheads[state].items():
        while bits:
            low = bits & -bits
            bits ^= low
            t = n + low.bit_length() - 1
            if t in collided:
                continue
            other = out.get(t)
            if other is None:
                out[t] = rule
                continue
            collided.add(t)
            del out[t]
    if collided:  # resolve by priority, as Lark does: a strictly highest priority wins
        for t in collided:
            rules = sorted(
                (r for r, bits in tables.lookaheads[state].items() if bits >> (t - n) & 1),
                key=lambda r: -priority[r],
            )
            if priority[rules[0]] > priority[rules[1]]:
                out[t] = rules[0]
    for t in list(out):
        if t in shifts:  # shift/reduce: Lark shifts
            del out[t]
    return out


def build(rules: Sequence[tuple[str, Sequence[tuple[str, bool]], int]], start: str) -> LalrTables:
    """The LALR(1) tables of ``rules`` (``(origin, ((name, is_term), ...), priority)``) from ``start``.

    Raises :class:`LalrInputError` for rules defined twice or a nonterminal without rules,
    worded as Lark words them.
    """
    root = "$root_" + start
    all_rules = list(rules) + [(root, ((start, False),), 0)]
    _check(all_rules)

    # -- symbols and rules as integers
    nt_id: dict[str, int] = {}
    for origin, _exp, _p in all_rules:
        if origin not in nt_id:
            nt_id[origin] = len(nt_id)
    n = len(nt_id)
    names = list(nt_id)
    t_id: dict[str, int] = {}
    rhs_l: list[tuple[int, ...]] = []
    for _origin, exp, _p in all_rules:
        syms = []
        for name, is_term in exp:
            if is_term:
                s = t_id.get(name)
                if s is None:
                    s = t_id[name] = n + len(t_id)
                    names.append(name)
                syms.append(s)
            else:
                syms.append(nt_id[name])
        rhs_l.append(tuple(syms))
    if END not in t_id:
        t_id[END] = n + len(t_id)
        names.append(END)
    end_bit = 1 << (t_id[END] - n)
    lhs = tuple(nt_id[o] for o, _e, _p in all_rules)
    rhs = tuple(rhs_l)
    priority = tuple(p or 0 for _o, _e, p in all_rules)
    n_rules = len(lhs)
    root_rule = n_rules - 1

    base_l, item_rule_l, nxt_l = [], [], []
    for r, seq in enumerate(rhs):
        base_l.append(len(item_rule_l))
        item_rule_l.extend([r] * (len(seq) + 1))
        nxt_l.extend(seq)
        nxt_l.append(-1)
    base, nxt = base_l, nxt_l
    by_origin: list[list[int]] = [[] for _ in range(n)]
    for r, a in enumerate(lhs):
        by_origin[a].append(r)

    # nullable nonterminals (least fixpoint)
    nullable = [False] * n
    changed = True
    while changed:
        changed = False
        for r in range(n_rules):
            a = lhs[r]
            if not nullable[a] and all(s < n and nullable[s] for s in rhs[r]):
                nullable[a] = changed = True
    # tail[r]: the least j such that rhs[r][j:] is nullable
    tail = []
    for seq in rhs:
        j = len(seq)
        while j and seq[j - 1] < n and nullable[seq[j - 1]]:
            j -= 1
        tail.append(j)

    # leftmost reach: the nonterminals whose (rule, 0) items a closure of A holds
    firsts = [sorted({rhs[r][0] for r in by_origin[a] if rhs[r] and rhs[r][0] < n}) for a in range(n)]
    reach: list[frozenset | None] = [None] * n

    def reach_of(a: int) -> frozenset:
        got = reach[a]
        if got is None:
            seen = {a}
            todo = [a]
            while todo:
                for b in firsts[todo.pop()]:
                    if b not in seen:
                        seen.add(b)
                        todo.append(b)
            got = reach[a] = frozenset(seen)
        return got

    # per closure (set of kernel-next nonterminals): its nonterminals and its advanced dot-0 items
    closure_cache: dict[frozenset, tuple[frozenset, dict[int, list[int]]]] = {}

    def closure_of(key: frozenset) -> tuple[frozenset, dict[int, list[int]]]:
        got = closure_cache.get(key)
        if got is None:
            nts: set[int] = set()
            for a in key:
                nts |= reach_of(a)
            groups: dict[int, list[int]] = {}
            for a in sorted(nts):
                for r in by_origin[a]:
                    seq = rhs[r]
                    if seq:
                        g = groups.get(seq[0])
                        if g is None:
                            groups[seq[0]] = [base[r] + 1]
                        else:
                            g.append(base[r] + 1)
            got = closure_cache[key] = (frozenset(nts), groups)
        return got

    # -- LR(0) automaton, breadth first from the root item
    start_kernel = (base[root_rule],)
    index: dict[tuple[int, ...], int] = {start_kernel: 0}
    kernels: list[tuple[int, ...]] = [start_kernel]
    closure_nts: list[frozenset] = []
    transitions: list[dict[int, int]] = []
    q = 0
    while q < len(kernels):
        kernel = kernels[q]
        q += 1
        kpart: dict[int, list[int]] = {}
        key = set()
        for i in kernel:
            s = nxt[i]
            if s >= 0:
                g = kpart.get(s)
                if g is None:
                    kpart[s] = [i + 1]
                else:
                    g.append(i + 1)
                if s < n:
                    key.add(s)
        nts, groups = closure_of(frozenset(key))
        closure_nts.append(nts)
        trans: dict[int, int] = {}
        for s, its in groups.items():
            k = kpart.pop(s, None)
            target = tuple(sorted(its + k)) if k else tuple(its)
            t = index.get(target)
            if t is None:
                t = index[target] = len(kernels)
                kernels.append(target)
            trans[s] = t
        for s, k in kpart.items():
            target = tuple(k)
            t = index.get(target)
            if t is None:
                t = index[target] = len(kernels)
                kernels.append(target)
            trans[s] = t
        transitions.append(trans)
    n_states = len(kernels)

    # -- nonterminal transitions, direct reads and reads
    term_bits = []
    for trans in transitions:
        b = 0
        for s in trans:
            if s >= n:
                b |= 1 << (s - n)
        term_bits.append(b)
    nt_ids: list[dict[int, int]] = []
    nt_state: list[int] = []
    nt_sym: list[int] = []
    for p, trans in enumerate(transitions):
        ids = {}
        for s in trans:
            if s < n:
                ids[s] = len(nt_state)
                nt_state.append(p)
                nt_sym.append(s)
        nt_ids.append(ids)
    n_nt = len(nt_state)
    direct = [0] * n_nt
    reads: list[list[int]] = [[] for _ in range(n_nt)]
    any_nullable = any(nullable)
    for x in range(n_nt):
        r_state = transitions[nt_state[x]][nt_sym[x]]
        direct[x] = term_bits[r_state]
        if any_nullable:
            ids = nt_ids[r_state]
            reads[x] = [ids[c] for c in ids if nullable[c]]
    direct[nt_ids[0][nt_id[start]]] |= end_bit  # the root transition reads the end of input

    # -- includes and lookback: walk each rule of B from every state with a B transition
    # (the walk only gotos up to the rule's nullable tail; from there on a nonterminal is included)
    includes: list[list[int]] = [[] for _ in range(n_nt)]
    lookback: dict[int, list[int]] = {}
    item_rule = item_rule_l
    heads = [seq[: max(tj - 1, 0)] for seq, tj in zip(rhs, tail)]
    tails = [seq[max(tj - 1, 0):] for seq, tj in zip(rhs, tail)]
    for x in range(n_nt):
        p, b = nt_state[x], nt_sym[x]
        for r in by_origin[b]:
            st = p
            for s in heads[r]:
                st = transitions[st][s]
            for s in tails[r]:
                if s < n:
                    includes[nt_ids[st][s]].append(x)
                st = transitions[st][s]
            key = st * n_rules + r
            lb = lookback.get(key)
            if lb is None:
                lookback[key] = [x]
            else:
                lb.append(x)
        for i in kernels[p]:  # Lark also walks the kernel items of B (dot > 0), without a lookback
            r = item_rule[i]
            if lhs[r] == b and i != base[r]:
                seq, tj, st = rhs[r], tail[r], p
                for j in range(i - base[r], len(seq)):
                    s = seq[j]
                    if s < n and j + 1 >= tj:
                        includes[nt_ids[st][s]].append(x)
                    st = transitions[st][s]

    merged: list[int] = []
    read_sets = _digraph(reads, direct, merged) if any_nullable else direct
    follow = _digraph(includes, read_sets)

    lookaheads: list[dict[int, int]] = [{} for _ in range(n_states)]
    for key, xs in lookback.items():
        bits = 0
        for x in xs:
            bits |= follow[x]
        st, r = divmod(key, n_rules)
        lookaheads[st][r] = bits

    # -- conflicts
    has_conflicts = False
    collisions: list[tuple[int, int, tuple[int, ...]]] = []
    overlaps: list[int] = []
    for st in range(n_states):
        la = lookaheads[st]
        if not la:
            continue
        seen = term_bits[st]
        clash = 0
        for bits in la.values():
            clash |= seen & bits
            seen |= bits
        if not clash:
            continue
        has_conflicts = True
        if len(la) > 1:
            seen = clash = 0
            for bits in la.values():
                clash |= seen & bits
                seen |= bits
            if not clash:
                continue
            overlaps.append(st)
            for t_bit in _bits(clash):
                rules_t = [r for r, bits in la.items() if bits & t_bit]
                if len(rules_t) > 1:
                    ps = sorted((priority[r] for r in rules_t), reverse=True)
                    if ps[0] <= ps[1]:
                        collisions.append((st, n + t_bit.bit_length() - 1, tuple(sorted(rules_t))))

    end_state = transitions[0][nt_id[start]]
    return LalrTables(
        names=tuple(names),
        n_nonterms=n,
        lhs=lhs,
        rhs=rhs,
        priority=priority,
        base=tuple(base),
        item_rule=tuple(item_rule),
        kernels=kernels,
        closure_nts=closure_nts,
        transitions=transitions,
        lookaheads=lookaheads,
        start_state=0,
        end_state=end_state,
        shared_reads=bool(merged),
        has_conflicts=has_conflicts,
        overlaps=overlaps,
        collisions=collisions,
    )


def _bits(x: int):
    while x:
        low = x & -x
        x ^= low
        yield low


def _check(all_rules) -> None:
    """Lark's checks on the rules before its analysis, with its words."""
    counts: dict[tuple, int] = {}
    for origin, exp, _p in all_rules:
        key = (origin, tuple((name, bool(is_term)) for name, is_term in exp))
        counts[key] = counts.get(key, 0) + 1
    dup = [k for k, c in counts.items() if c > 1]
    if dup:
        shown = ", ".join(f"<{o} : {' '.join(name for name, _t in e)}>" for o, e in dup)
        raise LalrInputError(f"Rules defined twice: {shown}")
    defined = {origin for origin, _e, _p in all_rules}
    for _origin, exp, _p in all_rules:
        for name, is_term in exp:
            if not is_term and name not in defined:
                raise LalrInputError(f"Using an undefined rule: NonTerminal({name!r})")


def _digraph(edges: list[list[int]], base: list[int], merged: list[int] | None = None) -> list[int]:
    """F(x) = base(x) | F(y) for every edge x -> y, the least solution (Tarjan's SCCs, iterative).

    ``merged``: gets the nodes of every strongly connected component of two nodes or more."""
    n = len(base)
    f = list(base)
    depth = [0] * n
    done = n + 1
    stack: list[int] = []
    for x0 in range(n):
        if depth[x0] or not edges[x0]:
            continue
        stack.append(x0)
        depth[x0] = d0 = len(stack)
        work = [(x0, 0, d0)]
        while work:
            x, i, d = work[-1]
            ex = edges[x]
            if i < len(ex):
                y = ex[i]
                work[-1] = (x, i + 1, d)
                dy = depth[y]
                if dy == 0:
                    stack.append(y)
                    depth[y] = len(stack)
                    work.append((y, 0, len(stack)))
                    continue
                if dy < depth[x]:
                    depth[x] = dy
                f[x] |= f[y]
                continue
            work.pop()
            if depth[x] == d:
                fx = f[x]
                if merged is not None and stack[-1] != x:
                    merged.extend(stack[stack.index(x):])
                while True:
                    top = stack.pop()
                    depth[top] = done
                    f[top] = fx
                    if top == x:
                        break
            if work:
                parent = work[-1][0]
                if depth[x] < depth[parent]:
                    depth[parent] = depth[x]
                f[parent] |= f[x]
    return f
