"""Grammar texts in the plain subset the front ends write, resolved without Lark's loader.

Lark's loader parses a grammar's text with an LALR parser of its own and rewrites the trees
in several passes: most of the time to first mask of a small JSON schema. The front ends
(``frontends``) write one line per definition in a small subset of Lark's syntax::

    r0: LBRACE L0 COLON r1 (COMMA str0 COLON r2)* RBRACE | "null" | [r3]
    L0.2: /"name"/
    COMMA: ","
    %ignore WS

:func:`resolve` reads such a text and resolves it as Lark does, to the same terminals (names,
patterns, priorities, order; string literals in rules named as Lark names them) and the same
BNF rules (EBNF groups expanded in Lark's order, ``*``/``+`` as Lark's ``__rule_star_n`` rules,
unused rules and terminals dropped). Anything else (another construct, an undefined name, a
duplicate, a pattern Lark would refuse) gives None, and the grammar goes through Lark, which
reports what is wrong. ``tests/test_plain_grammar.py`` compares the two on every front end.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from . import lalr, lark_adapter
from .lark_adapter import GrammarParts, Rule, Symbol
from .lexer import TerminalSpec

_RULE_LINE = re.compile(r"([a-z][a-z0-9_]*):(.*)")
_TERM_LINE = re.compile(r'([A-Z][A-Z0-9_]*)(?:\.(-?\d+))?: ("(?:[^"\\\n]|\\.)*"|/(?!/)(?:[^/\\\n]|\\.)*/[imslux]*)')
_IGNORE_LINE = re.compile(r"%ignore ([A-Z][A-Z0-9_]*)")
_ITEM = re.compile(r'\s*(?:([a-z][a-z0-9_]*)|([A-Z][A-Z0-9_]*)|("(?:[^"\\\n]|\\.)*")|(\)[*+?]?|[(\[\]|]))')

EMPTY = Symbol("<empty>", True)  # a ``[...]`` placeholder (Lark's _EMPTY): compared, then dropped


class Resolved(NamedTuple):
    """A grammar as Lark would resolve it: the lexer's terminals, the parts, the LALR tables."""

    terminals: list[TerminalSpec]
    parts: GrammarParts
    tables: lalr.LalrTables


class _Refused(Exception):
    """Outside the plain subset, or something Lark would report: Lark loads it instead."""


def resolve(text: str, start: str) -> Resolved | None:
    """The text resolved as Lark resolves it, or None when it is not in the plain subset."""
    try:
        return _Reader(text, start).resolve()
    except _Refused:
        return None


class _Reader:
    def __init__(self, text: str, start: str):
        self.start = start
        self.rule_text: dict[str, str] = {}
        self.term_defs: list[tuple[str, str, int]] = []  # (name, literal text, priority)
        self.ignore: list[str] = []
        for line in text.splitlines():
            if not line:
                continue
            if m := _RULE_LINE.fullmatch(line):
                if m[1] in self.rule_text:
                    raise _Refused
                self.rule_text[m[1]] = m[2]
            elif m := _TERM_LINE.fullmatch(line):
                self.term_defs.append((m[1], m[3], int(m[2] or 0)))
            elif m := _IGNORE_LINE.fullmatch(line):
                self.ignore.append(m[1])
            else:
                raise _Refused
        names = [n for n, _, _ in self.term_defs]
        if len(set(names)) != len(names) or start not in self.rule_text:
            raise _Refused

    def resolve(self) -> Resolved:
        # terminals as defined, then the rules' string literals as Lark names them
        self.patterns = {}  # name -> lark pattern
        self.by_pattern = {}  # lark pattern -> name (the last definition, as Lark's dict keeps it)
        self.priority = {}
        for name, literal, priority in self.term_defs:
            pattern = lark_adapter.literal_pattern(literal)
            if pattern is None:
                raise _Refused
            self.patterns[name], self.by_pattern[pattern], self.priority[name] = pattern, name, priority
        if any(n not in self.patterns for n in self.ignore):
            raise _Refused
        self.anonymous = 0
        self.helpers: list[tuple[str, list[tuple[Symbol, ...]]]] = []  # EBNF rules made, in order
        self.helper_of: dict = {}
        self.counter = 0
        alts: list[tuple[str, list[tuple[Symbol, ...]]]] = []
        for name, body in self.rule_text.items():
            self.prefix = name
            alts.append((name, self._alternatives(self._parse(body))))
        alts += self.helpers
        rules = self._compile(alts)
        used_terms = {s.name for r in rules for s in r.expansion if s.is_term}
        keep = [n for n in self.patterns if n in used_terms or n in self.ignore]
        if not all(lark_adapter.lark_would_lex(self.patterns[n]) for n in keep):
            raise _Refused
        ignored = set(self.ignore)
        terminals = [
            lark_adapter.terminal_spec(n, self.patterns[n], self.priority.get(n, 0), n in ignored) for n in keep
        ]
        parts = GrammarParts(
            terminals={n: lark_adapter.terminal_def(n, self.patterns[n]) for n in keep},
            rules=tuple(rules),
        )
        tables = lark_adapter.our_tables(rules, self.start)
        if tables is None:
            raise _Refused
        return Resolved(terminals, parts, tables)

    # -------------------------------------------------------------- one rule's body

    def _parse(self, body: str):
        """The body as a tree: ("alts", [seq, ...]) of seqs [item, ...]; items are Symbols,
        ("group", alts, op) or ("maybe", alts)."""
        tokens = []
        pos = 0
        while pos < len(body):
            m = _ITEM.match(body, pos)
            if m is None or m.end() == pos:
                if body[pos:].strip():
                    raise _Refused
                break
            pos = m.end()
            if m[1]:
                if m[1] not in self.rule_text:
                    raise _Refused
                tokens.append(Symbol(m[1], False))
            elif m[2]:
                if m[2] not in self.patterns:
                    raise _Refused
                tokens.append(Symbol(m[2], True))
            elif m[3]:
                tokens.append(("lit", m[3]))
            else:
                tokens.append(m[4])
        tree, at = self._alts(tokens, 0, 0)
        if at != len(tokens):
            raise _Refused
        return tree

    def _alts(self, tokens: list, at: int, depth: int):
        """Alternatives from ``tokens[at]`` on, ``depth`` groups deep. String literals and ``*``/``+``
        groups only outside groups: Lark names the terminals and rules they make in the order
        its tree passes visit them (the deepest first), which is the text's order only there."""
        seqs = []
        while True:
            seq = []
            while at < len(tokens) and not (isinstance(tokens[at], str) and tokens[at][0] in "|)]"):
                tok = tokens[at]
                if tok == "(":
                    inner, at = self._alts(tokens, at + 1, depth + 1)
                    if at >= len(tokens) or not tokens[at].startswith(")"):
                        raise _Refused
                    if depth and tokens[at][1:] in ("*", "+"):
                        raise _Refused
                    seq.append(("group", inner, tokens[at][1:]))
                elif tok == "[":
                    inner, at = self._alts(tokens, at + 1, depth + 1)
                    if at >= len(tokens) or tokens[at] != "]":
                        raise _Refused
                    seq.append(("maybe", inner))
                elif type(tok) is tuple:  # ("lit", text): a string literal (Symbols are their own type)
                    if depth:
                        raise _Refused
                    seq.append(("lit", self._literal(tok[1])))
                else:
                    seq.append(tok)
                at += 1
            seqs.append(seq)
            if at < len(tokens) and tokens[at] == "|":
                at += 1
                continue
            return ("alts", seqs), at

    def _literal(self, literal: str) -> Symbol:
        """A string literal in a rule: a defined terminal of that pattern, or a new one (Lark's names)."""
        if literal.endswith("i"):
            raise _Refused
        pattern = lark_adapter.literal_pattern(literal)
        if pattern is None:
            raise _Refused
        name = self.by_pattern.get(pattern)
        if name is None:
            name = lark_adapter.anonymous_name(pattern.value, set(self.patterns))
            if name is None:
                name = f"__ANON_{self.anonymous}"
                self.anonymous += 1
            if name in self.patterns:
                raise _Refused
            self.patterns[name], self.by_pattern[pattern] = pattern, name
        return Symbol(name, True)

    # -------------------------------------------------------------- EBNF to BNF, as Lark does it

    def _alternatives(self, tree) -> list[tuple[Symbol, ...]]:
        """The alternatives of ("alts", seqs): each seq's items expanded left to right, the leftmost
        outermost, duplicates dropped (first kept)."""
        out: list[tuple[Symbol, ...]] = []
        for seq in tree[1]:
            combos: list[tuple[Symbol, ...]] = [()]
            for item in seq:
                options = self._item_options(item)
                combos = [c + o for c in combos for o in options]
            out.extend(combos)
        return list(dict.fromkeys(out))

    def _item_options(self, item) -> list[tuple[Symbol, ...]]:
        if isinstance(item, Symbol):
            return [(item,)]
        if item[0] == "lit":
            return [(item[1],)]
        if item[0] == "maybe":
            inner = self._alternatives(item[1])
            return list(dict.fromkeys(inner + [(EMPTY,) * self._size(item[1])]))
        _, inner_tree, op = item
        inner = self._alternatives(inner_tree)
        if op == "":
            return inner
        if op == "?":
            return list(dict.fromkeys(inner + [()]))
        helper = self._helper(inner_tree, inner, "plus" if op == "+" else "star")
        return [(helper,)] if op == "+" else [(helper,), ()]

    def _helper(self, key_tree, inner: list[tuple[Symbol, ...]], kind: str) -> Symbol:
        """Lark's recursive rule for ``(x)*`` / ``(x)+``: ``__<rule>_<kind>_<n>: x | __<rule>_<kind>_<n> x``,
        one per distinct ``x`` in the whole grammar (the first name made)."""
        key = self._key(key_tree)
        got = self.helper_of.get(key)
        if got is None:
            name = f"__{self.prefix}_{kind}_{self.counter}"
            self.counter += 1
            if name in self.rule_text:
                raise _Refused
            got = self.helper_of[key] = Symbol(name, False)
            self.helpers.append((name, list(dict.fromkeys(inner + [(got,) + a for a in inner]))))
        return got

    def _key(self, tree):
        """The group's tree as Lark compares it (after the groups inside it became rules)."""
        out = []
        for seq in tree[1]:
            items = []
            for item in seq:
                if isinstance(item, Symbol):
                    items.append(item)
                elif item[0] == "lit":  # Lark's symbols compare by name: a literal is its terminal
                    items.append(item[1])
                elif item[0] == "maybe":  # [x] is (x)? where it stands for no children
                    items.append(("?", self._key(item[1]), self._size(item[1])))
                elif item[2] in ("+", "*"):
                    items.append(("rule", self._helper(item[1], self._alternatives(item[1]), "plus" if item[2] == "+" else "star"), item[2]))
                else:
                    items.append((item[2] or "()", self._key(item[1]), 0))
            out.append(tuple(items))
        return tuple(out)

    def _size(self, tree) -> int:
        """Lark's FindRuleSize: how many children a ``[...]`` stands for in the tree (named rules
        and named terminals count, string literals and generated rules do not)."""
        def item_size(item) -> int:
            if isinstance(item, Symbol):
                return 1
            if item[0] == "lit":
                return 0
            if item[0] == "maybe":
                return self._size(item[1])
            if item[2] in ("+", "*"):
                return 0  # a generated __rule (its name starts with an underscore)
            return self._size(item[1])
        return max(sum(item_size(i) for i in seq) for seq in tree[1])

    # -------------------------------------------------------------- rules

    def _compile(self, alts: list[tuple[str, list[tuple[Symbol, ...]]]]) -> list[Rule]:
        seen: dict[tuple[str, tuple[Symbol, ...]], bool] = {}
        out: list[tuple[str, tuple[Symbol, ...]]] = []
        for name, expansions in alts:
            for expansion in expansions:
                stripped = tuple(s for s in expansion if s != EMPTY)
                if (name, stripped) in seen:
                    if stripped:
                        raise _Refused  # Lark: "Rules defined twice"
                    continue
                seen[(name, stripped)] = True
                out.append((name, stripped))
        while True:  # Lark drops rules no other rule (nor the start) uses, until none is left
            used = {s.name for origin, exp in out for s in exp if not s.is_term and s.name != origin} | {self.start}
            kept = [r for r in out if r[0] in used]
            if len(kept) == len(out):
                break
            out = kept
        return [Rule(i, origin, exp, 0) for i, (origin, exp) in enumerate(out)]
