"""The terminals of a generated JSON grammar, chosen so that the basic lexer's one-terminal-per-lexeme
choice never loses a valid instance.

* Strings whose value the schema fixes (property names, ``enum``/``const`` strings) are one
  terminal per value, matching every JSON spelling of it (raw or escaped), at the highest
  priority: no two values share a spelling, so these never collide with each other.
* Constrained strings (``pattern``, ``format``, lengths) are one terminal per distinct language;
  together with the generic ``STRING`` they must be laminar (:mod:`.relations`): nested ones get
  a higher priority, and a context that expects a language takes every terminal whose lexemes
  all lie in it. Overlapping ones are refused.
* Integers are split into disjoint intervals at every bound the schema uses, one terminal each;
  ``FRACTION`` holds the numbers written with a fraction or exponent, split the same way at the
  bounds of non-integer numbers (:mod:`.numbers`: one terminal per open interval between two
  bounds and one per bound). Number literals (``enum``/``const``) are terminals of their own,
  spelled as ``json.dumps`` writes them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal

from ..errors import GrammarError
from . import ecma_regex as rx
from .numbers import ODD_NEGATIVE, ODD_POSITIVE, Bound, contains, fraction_regex, integer_regex
from .relations import relation

STRING_RE = r'"(?:[^"\\\x00-\x1f]|\\(?:["\\bfnrt]|u00(?:0[0-7]|0b|0e|0f|1[0-9a-f])))*"'
FRACTION_RE = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)"
WS = "[ \\t\\n\\r]"
# After every number terminal: the numeral ends here. With it, Python's ``re`` (Lark's basic
# lexer, which takes the first terminal matching a prefix) can only match a whole numeral, as the
# maximal-munch lexer does: without it Lark lexed ``23`` as ``2`` then ``3`` wherever a terminal
# tried first holds ``2`` (a literal, a bounded interval, an alternative tried before a longer one).
NUMERAL_END = r"(?![0-9.eE])"
MAX_STRING_TERMINALS = 64  # constrained-string terminals, intersections included
_PROBES = ("", "a", " ", "\n", "\x00", "\u00e9", "-", "ab")  # strings any language of every string holds (a quick test first)
ANY_VALUE = rx.raw_regex(("rep", rx.ANY_CHAR, 0, None))  # every string value


class SchemaError(GrammarError):
    """A schema that cannot be compiled exactly, or is not a valid schema; names the keyword and its JSON pointer."""

    def __init__(self, pointer: str, keyword: str, message: str, empty: bool = False):
        super().__init__(f"{pointer}/{keyword}: {message}" if keyword else f"{pointer}: {message}", kind="schema")
        self.pointer, self.keyword = pointer, keyword
        self.empty = empty  # no instance is valid at the pointer (where the schema allows leaving it out, it is)


def empty_language(pointer: str) -> SchemaError:
    return SchemaError(pointer, "", "no instance is valid here (an empty language)", empty=True)


@dataclass
class Terminals:
    """Every terminal a generated grammar uses, and the rules that stand for a set of lexemes."""

    whitespace: str | int = "json"
    literals: dict[str, str] = field(default_factory=dict)  # canonical JSON text of a string or number -> name
    languages: dict[str, str] = field(default_factory=dict)  # string lexeme regex -> name
    pointers: dict[str, str] = field(default_factory=dict)  # terminal name -> where the schema asked for it
    # terminal name -> a regex of the decoded values: one spelling per character makes spelling a
    # bijection, so two languages relate as their spellings do, and these regexes are far smaller
    values: dict[str, str] = field(default_factory=dict)
    int_bounds: set = field(default_factory=set)
    int_requests: dict = field(default_factory=dict)  # (lo, hi) -> rule name
    string_requests: dict = field(default_factory=dict)  # (language name or None, excluded values, languages less) -> rule name
    num_bounds: set = field(default_factory=set)  # the bounds (Decimal) of non-integer numbers
    num_requests: dict = field(default_factory=dict)  # (lo, hi) -> (rule name, the rule of its integers or None)
    used: set = field(default_factory=set)
    everything: set = field(default_factory=set)  # lexeme regexes found to take every string
    nodes: dict = field(default_factory=dict)  # terminal name -> its node (ecma_regex.Node)
    shadowed: set = field(default_factory=set)  # terminals no lexeme goes to (see _shadowed)
    union_requests: dict = field(default_factory=dict)  # symbols -> rule name (see union)
    # requests whose rule has no member (a pattern region every key of which is declared): found
    # writing the rules, as (kind, key); the walk runs again knowing them (json_schema_to_lark)
    known_empty: frozenset = frozenset()
    found_empty: set = field(default_factory=set)
    # the regex derivatives taken relating this schema's languages (intersect.dfa)
    derivatives: dict = field(default_factory=dict, repr=False, compare=False)

    # -------------------------------------------------------------- requests while walking

    def literal(self, value) -> str:
        """The terminal of one string or number value (its canonical spelling)."""
        text = json.dumps(value, ensure_ascii=False)
        name = self.literals.get(text)
        if name is None:
            name = self.literals[text] = f"L{len(self.literals)}"
        return name

    def string_language(self, node: rx.Node, pointer: str) -> str | None:
        """The terminal of the strings whose values are in the node's language; None when that is
        every string (``STRING`` itself: a terminal beside it would shadow it)."""
        regex = rx.json_string_regex(node)
        name = self.languages.get(regex)
        if name is None:
            raw = rx.raw_regex(node)
            if regex in self.everything or (all(re.fullmatch(raw, w) for w in _PROBES) and relation(raw, ANY_VALUE) == "equal"):
                self.everything.add(regex)
                return None
            name = self.languages[regex] = f"S{len(self.languages)}"
            self.pointers[name] = pointer
            self.values[name] = rx.raw_regex(node)
            self.nodes[name] = node
        return name

    def _check(self, kind: str, key, ptr: str) -> None:
        if (kind, key) in self.known_empty:
            raise empty_language(ptr)

    def strings(self, language: str | None = None, exclude: frozenset = frozenset(), minus: frozenset = frozenset(),
                ptr: str = "#") -> str:
        """A rule taking every string lexeme of ``language`` (None: any string) but the excluded
        values and the lexemes of the languages in ``minus`` (names of :meth:`string_language`)."""
        key = (language, exclude, minus)
        self._check("str", key, ptr)
        name = self.string_requests.get(key)
        if name is None:
            name = self.string_requests[key] = f"str{len(self.string_requests)}"
        return name

    def is_lexeme_set(self, symbol: str) -> bool:
        """Whether the symbol stands for a set of lexemes: a literal or a rule of :meth:`strings`,
        :meth:`integers` or :meth:`numbers` (whose union :meth:`union` can take)."""
        return (symbol in self.literals.values() or symbol in self.string_requests.values() or symbol == "num"
                or symbol in self.int_requests.values() or any(symbol == r for r, _ in self.num_requests.values()))

    def union(self, symbols, ptr: str = "#") -> str:
        """One rule for the lexemes of all the symbols (each :meth:`is_lexeme_set`): alternatives of
        an anyOf that share terminals (an enum string and ``type: string``; overlapping integer
        ranges) are one set of terminals, so no two rules reduce the same terminal."""
        key = tuple(dict.fromkeys(symbols))
        self._check("any", key, ptr)
        name = self.union_requests.get(key)
        if name is None:
            name = self.union_requests[key] = f"any{len(self.union_requests)}"
        return name

    def integers(self, lo: int | None = None, hi: int | None = None, ptr: str = "#") -> str:
        key = (lo, hi)
        self._check("int", key, ptr)
        name = self.int_requests.get(key)
        if name is None:
            name = self.int_requests[key] = f"int{len(self.int_requests)}"
            self.int_bounds.update(b for b in (lo, None if hi is None else hi + 1) if b is not None)
        return name

    def numbers(self, lo: Bound = None, hi: Bound = None, ptr: str = "#") -> str:
        """A rule taking every number (integer or not) between the bounds: (Decimal, inclusive) or None."""
        self.used.add("FRACTION")
        if lo is None and hi is None:
            return "num"
        key = (lo, hi)
        self._check("num", key, ptr)
        if key not in self.num_requests:
            self.num_bounds.update(b[0] for b in key if b is not None)
            ilo = None if lo is None else int(lo[0].to_integral_value("ROUND_CEILING")) + (lo[0] == lo[0].to_integral_value() and not lo[1])
            ihi = None if hi is None else int(hi[0].to_integral_value("ROUND_FLOOR")) - (hi[0] == hi[0].to_integral_value() and not hi[1])
            some = (ilo is None or ihi is None or ilo <= ihi) and ("int", (ilo, ihi)) not in self.known_empty
            ints = self.integers(ilo, ihi) if some else None
            self.num_requests[key] = (f"num{len(self.num_requests)}", ints)
        return self.num_requests[key][0]

    # -------------------------------------------------------------- the grammar text

    def punct(self, name: str) -> str:
        self.used.add(name)
        return name

    def finish(self) -> tuple[list[str], list[str]]:
        """(rules, terminal definitions) for everything requested."""
        rules, terms = [], []
        lists: dict[str, list[str]] = {}  # rule -> its alternatives (symbols)

        def emit(rule: str, alts: list[str], request: tuple | None = None) -> None:
            lists[rule] = alts
            if alts:
                rules.append(f"{rule}: " + " | ".join(alts))
            else:  # (this walk's grammar is not used: the walk runs again without the request)
                self.found_empty.add(request)
        strings = {t: v for t, v in self.literals.items() if t.startswith('"')}
        numbers = {t: v for t, v in self.literals.items() if not t.startswith('"')}
        depth = self._string_depths()
        top = max(depth.values(), default=0) + 2
        for text, name in self.literals.items():
            value = json.loads(text)
            if isinstance(value, str):
                terms.append(f"{name}.{top}: /{rx.json_string_regex(rx.literal(value))}/")
            else:
                terms.append(f"{name}.{top}: /{re.escape(text)}{NUMERAL_END}/")
        for regex, name in self.languages.items():
            if name not in self.shadowed:
                terms.append(f"{name}.{depth[name]}: /{regex}/")
        if self.string_requests and "STRING" not in self.shadowed:
            terms.append(f"STRING: /{STRING_RE}/")
        for (language, exclude, minus), rule in self.string_requests.items():
            emit(rule, self._string_members(language, exclude, strings, minus), ("str", (language, exclude, minus)))
        atoms = self._int_atoms()
        if "FRACTION" in self.used or self.int_requests:
            for (lo, hi), name in atoms.items():
                terms.append(f"{name}: /{integer_regex(lo, hi)}{NUMERAL_END}/")
        if "FRACTION" in self.used:
            pieces = self._fraction_pieces()
            for name, regex in pieces.values():
                terms.append(f"{name}: /{regex}{NUMERAL_END}/")
            emit("num", [*(n for n, _ in pieces.values()), *atoms.values(), *numbers.values()])
            for (lo, hi), (rule, ints) in self.num_requests.items():
                alts = [n for (a, b), (n, _) in pieces.items() if _piece_within(a, b, lo, hi)]
                alts += [ints] if ints else []
                alts += [n for t, n in numbers.items() if not _int_in(t, None, None) and contains(lo, hi, Decimal(t))]
                emit(rule, alts, ("num", (lo, hi)))
        for (lo, hi), rule in self.int_requests.items():
            alts = [n for (a, b), n in atoms.items() if _within(a, b, lo, hi)]
            alts += [n for t, n in numbers.items() if _int_in(t, lo, hi)]
            emit(rule, alts, ("int", (lo, hi)))

        def expand(sym: str) -> list[str]:
            return [x for a in lists[sym] for x in expand(a)] if sym in lists else [sym]

        for names, rule in self.union_requests.items():  # one rule for the terminals of them all
            emit(rule, list(dict.fromkeys(x for n in names for x in expand(n))), ("any", names))
        terms += self._punctuation()
        return rules, terms

    def _fraction_pieces(self) -> dict:
        """The terminals of numerals with a fraction or exponent: (lo, hi) -> (name, regex), one per
        interval between two bounds and one per bound; ``FRACTION`` alone when there is no bound."""
        if not self.num_bounds:
            return {(None, None): ("FRACTION", FRACTION_RE)}
        bounds = sorted(self.num_bounds)
        spans: list = [(None, (bounds[0], False))]
        for k, b in enumerate(bounds):
            spans.append(((b, True), (b, True)))
            spans.append(((b, False), (bounds[k + 1], False) if k + 1 < len(bounds) else None))
        out = {}
        for lo, hi in spans:
            regex = fraction_regex(lo, hi)
            if regex:
                out[(lo, hi)] = (f"FRACTION{len(out)}", regex)
        out[("odd", "+")] = ("FRACTION_POS_EXP", ODD_POSITIVE)  # exponent forms decided by their sign only
        out[("odd", "-")] = ("FRACTION_NEG_EXP", ODD_NEGATIVE)
        return out

    def _string_depths(self) -> dict[str, int]:
        """Priority of each constrained-string terminal: 1 + the number of those containing it.

        The family is first closed under intersection (:meth:`_close`), so the terminals that hold
        a string always have a smallest one, the intersection of them all, which has more
        terminals around it than any other and so the highest priority: each lexeme goes to the
        smallest terminal holding it, and a context expecting a language takes the terminals
        inside it."""
        rel = self._close()
        names = list(self.languages.values())
        depth = {name: 1 for name in names}
        self.inside: dict[str, set[str]] = {name: set() for name in names}  # name -> terminals nested in it
        for i, na in enumerate(names):
            for nb in names[i + 1 :]:
                r = rel[(na, nb)]  # (two that overlap: their intersection is a terminal too)
                if r == "equal":
                    raise SchemaError(
                        self.pointers[nb], "",
                        f"its strings are those required at {self.pointers[na]}, written otherwise: "
                        "no lexer can tell them apart",
                    )
                if r == "subset":
                    depth[na] += 1
                    self.inside[nb].add(na)
                elif r == "superset":
                    depth[nb] += 1
                    self.inside[na].add(nb)
        self.shadowed = self._shadowed()
        return depth

    def _shadowed(self) -> set[str]:
        """The terminals whose every string goes to a terminal inside them or a literal: Lark's
        lexer would never produce them (and the grammar check refuses that), so they are left out."""
        from .intersect import is_covered

        texts = [t for t in self.literals if t.startswith('"')]  # the string literals, as JSON text
        values = [json.loads(t) for t in texts]
        literal_nodes = [rx.literal(v) for v in values]
        out = set()
        for name, node in self.nodes.items():
            if name not in self.inside:
                continue
            inner = [self.nodes[n] for n in self.inside[name]]
            if not inner and _infinite(node):
                continue  # finitely many literals cannot cover it
            others = inner + [ln for ln, v in zip(literal_nodes, values) if self._holds(name, v)]
            if others and is_covered(node, others, memo=self.derivatives):
                out.add(name)
        # the generic STRING too, where the constrained terminals and the literals hold every string
        # (``maxLength: 12`` beside ``minLength: 2``); a quick test on a few strings first
        if self.nodes and all(w in values or any(self._holds(n, w) for n in self.nodes) for w in _PROBES):
            if is_covered(("rep", rx.ANY_CHAR, 0, None), [*self.nodes.values(), *literal_nodes], memo=self.derivatives):
                out.add("STRING")
        return out

    def _close(self) -> dict:
        """Adds a terminal for the strings of each two overlapping terminals (until none is
        missing); the relation of every pair of terminals, by name."""
        from .intersect import intersect, signature

        rel: dict = {}
        names = list(self.languages.values())
        sig_of: dict = {}

        def sig(n):
            if n not in sig_of:
                sig_of[n] = signature([self.nodes[n]], self.derivatives)
            return sig_of[n]

        def relate(a, b):
            if (a, b) not in rel:
                sa, sb = sig(a), sig(b)
                sab = None if sa is None or sb is None else signature([self.nodes[a], self.nodes[b]], self.derivatives)
                if sab is None:
                    r = relation(self.values[a], self.values[b])
                else:  # from the minimal DFAs: a within b exactly when a and b is a
                    r = ("disjoint" if sab == () else "equal" if sa == sb else "subset" if sab == sa
                         else "superset" if sab == sb else "overlap")
                rel[(a, b)] = r
                rel[(b, a)] = {"subset": "superset", "superset": "subset"}.get(r, r)
            return rel[(a, b)]

        i = 0
        while i < len(names):
            for j in range(i):
                a, b = names[j], names[i]
                if relate(a, b) != "overlap":
                    continue
                node = intersect([self.nodes[a], self.nodes[b]], memo=self.derivatives)
                if node is None or len(names) >= MAX_STRING_TERMINALS:
                    raise SchemaError(self.pointers[b], "", f"its strings overlap those required at {self.pointers[a]} "
                                      "without either containing the other, and the terminal for the strings both take "
                                      "is too large to build")
                s_new = signature([node], self.derivatives)
                if (s_new is not None and any(sig(c) == s_new for c in names)) or (
                        s_new is None and any(relation(rx.raw_regex(node), self.values[c]) == "equal" for c in names)):
                    continue  # the intersection is a terminal already
                sig_of[f"S{len(self.languages)}"] = s_new
                regex = rx.json_string_regex(node)
                name = self.languages[regex] = f"S{len(self.languages)}"
                self.pointers[name] = f"{self.pointers[a]} & {self.pointers[b]}"
                self.values[name] = rx.raw_regex(node)
                self.nodes[name] = node
                names.append(name)
            i += 1
        for a in names:
            for b in names:
                if a != b:
                    relate(a, b)
        return rel

    def _string_members(self, language, exclude, strings, minus=frozenset()) -> list[str]:
        """The terminals whose lexemes are the strings of ``language`` but those in ``minus``.

        A lexeme goes to the deepest terminal of the laminar family whose language holds it (a
        literal above all), so the lexemes of a terminal T are T's strings less those of the
        terminals nested in T: every lexeme of T is in a language M exactly when T is M or lies
        inside M, and none is when T is neither (T disjoint from M, or T around M)."""
        if language is None:
            alts = ["STRING", *self.languages.values()]
            members = strings
        else:
            alts = [language, *sorted(self.inside[language])]
            members = {t: n for t, n in strings.items() if self._holds(language, json.loads(t))}
        if minus:
            gone = set(minus).union(*(self.inside[m] for m in minus))
            alts = [a for a in alts if a not in gone]
            members = {t: n for t, n in members.items() if not any(self._holds(m, json.loads(t)) for m in minus)}
        return [a for a in alts if a not in self.shadowed] + [n for t, n in members.items() if json.loads(t) not in exclude]

    def _holds(self, language: str, value: str) -> bool:
        """Whether the string ``value`` is in the language of the terminal named ``language``."""
        from .intersect import matches

        return matches(self.nodes[language], value, self.derivatives)

    def _int_atoms(self) -> dict:
        bounds = sorted(self.int_bounds)
        edges = [None, *bounds, None]
        return {(a, None if b is None else b - 1): f"I{k}" for k, (a, b) in enumerate(zip(edges, edges[1:]))}

    def _punctuation(self) -> list[str]:
        ws = self.whitespace
        chars = {"LBRACE": "{", "RBRACE": "}", "LSQB": "[", "RSQB": "]", "COMMA": ",", "COLON": ":"}
        out = []
        if ws in ("json", "compact"):
            out += [f'{n}: "{c}"' for n, c in chars.items() if n in self.used]
            if ws == "json":
                out += [f"WS: /{WS}+/", "%ignore WS"]
            return out
        w = f"{WS}{{0,{int(ws)}}}"
        shape = {"LBRACE": f"\\{{{w}", "LSQB": f"\\[{w}", "RBRACE": f"{w}\\}}", "RSQB": f"{w}\\]",
                 "COMMA": f"{w},{w}", "COLON": f"{w}:{w}", "EMPTY_OBJ": f"\\{{{w}\\}}", "EMPTY_ARR": f"\\[{w}\\]"}
        return [f"{n}: /{shape[n]}/" for n in shape if n in self.used]

    def empty(self, kind: str) -> str:
        """The lexemes of ``{}`` or ``[]``: one terminal when whitespace runs are bounded (so the
        run between the brackets is bounded too), else the two brackets."""
        if isinstance(self.whitespace, int) and not isinstance(self.whitespace, bool):
            return self.punct("EMPTY_OBJ" if kind == "object" else "EMPTY_ARR")
        return f"{self.punct('LBRACE')} {self.punct('RBRACE')}" if kind == "object" else f"{self.punct('LSQB')} {self.punct('RSQB')}"


def _infinite(node) -> bool:
    """Whether the node's language is infinite."""
    kind = node[0]
    if kind == "chars":
        return False
    if kind == "seq":
        return not any(rx.is_empty_language(n) for n in node[1]) and any(_infinite(n) for n in node[1])
    if kind == "alt":
        return any(_infinite(n) for n in node[1] if not rx.is_empty_language(n))
    _, body, lo, hi = node
    if hi == 0 or rx.is_empty_language(body):
        return False
    return _infinite(body) or (hi is None and not _only_empty(body))


def _only_empty(node) -> bool:
    """Whether the node's language holds no string but the empty one (given it is not empty)."""
    kind = node[0]
    if kind == "chars":
        return False
    if kind in ("seq", "alt"):
        return all(_only_empty(n) or (kind == "alt" and rx.is_empty_language(n)) for n in node[1])
    return node[3] == 0 or _only_empty(node[1])


def _piece_within(a, b, lo, hi) -> bool:
    """Whether the numbers of a piece (see ``_fraction_pieces``) all lie between the bounds."""
    if a == "odd":  # every positive (or every negative) number must lie within
        if b == "+":
            return (lo is None or lo[0] <= 0) and hi is None
        return lo is None and (hi is None or hi[0] >= 0)
    inside_lo = lo is None or (a is not None and (a[0] > lo[0] or (a[0] == lo[0] and (lo[1] or not a[1]))))
    inside_hi = hi is None or (b is not None and (b[0] < hi[0] or (b[0] == hi[0] and (hi[1] or not b[1]))))
    return inside_lo and inside_hi


def _within(a, b, lo, hi) -> bool:
    return (lo is None or (a is not None and a >= lo)) and (hi is None or (b is not None and b <= hi))


def _int_in(text: str, lo, hi) -> bool:
    if not re.fullmatch(r"-?(?:0|[1-9][0-9]*)", text):
        return False
    v = int(text)
    return (lo is None or v >= lo) and (hi is None or v <= hi)
