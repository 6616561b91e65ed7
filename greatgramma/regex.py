"""Python regexes (as Lark writes terminals) -> byte-level NFAs over UTF-8, with Python's Unicode semantics.

The pattern is parsed with Python's own regex parser (``re._parser``), so the syntax and the
character-class semantics (``\\w`` on non-ASCII letters, case folding under ``(?i)``) are exactly
the ones Lark's lexer uses. Character classes become sets of code points, and those become
UTF-8 byte sequences, so the automaton reads bytes and can stop inside a character.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from .errors import ResourceLimitError, UnsupportedRegexError

try:  # Python >= 3.11
    from re import _constants as C
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

MAX_CODEPOINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)
MAX_REPEAT_COPIES = 1000

Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, inclusive code point ranges


# ---------------------------------------------------------------- code point sets


def _normalize(ranges: list[tuple[int, int]]) -> Ranges:
    """Sort, merge, and drop surrogates (they have no UTF-8 encoding)."""
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    res: list[tuple[int, int]] = []
    for lo, hi in out:
        if lo <= _SURROGATES[1] and hi >= _SURROGATES[0]:
            if lo < _SURROGATES[0]:
                res.append((lo, _SURROGATES[0] - 1))
            if hi > _SURROGATES[1]:
                res.append((_SURROGATES[1] + 1, hi))
        else:
            res.append((lo, hi))
    return tuple(res)


def _complement(ranges: Ranges) -> Ranges:
    out = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODEPOINT:
        out.append((nxt, MAX_CODEPOINT))
    return _normalize(out)


@functools.lru_cache(maxsize=1)
def _all_chars() -> str:
    """Every encodable code point, in order (surrogates left out)."""
    return "".join(map(chr, range(_SURROGATES[0]))) + "".join(
        map(chr, range(_SURROGATES[1] + 1, MAX_CODEPOINT + 1))
    )


@functools.lru_cache(maxsize=512)
def _scan(class_source: str, flags: int) -> Ranges:
    """The code points a one-character class matches, found by running Python's ``re`` over all of them."""
    text = _all_chars()
    gap = _SURROGATES[1] - _SURROGATES[0] + 1
    out = []
    for m in re.finditer(f"(?:{class_source})+", text, flags):
        lo, hi = m.start(), m.end() - 1
        lo = lo if lo < _SURROGATES[0] else lo + gap
        hi = hi if hi < _SURROGATES[0] else hi + gap
        out.append((lo, hi))
    return _normalize(out)


_CATEGORY_SOURCE = {
    C.CATEGORY_DIGIT: r"\d",
    C.CATEGORY_NOT_DIGIT: r"\D",
    C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_WORD: r"\w",
    C.CATEGORY_NOT_WORD: r"\W",
}


def _class_source(items) -> str:
    """Rebuild ``[...]`` source for one parsed class, to hand to :func:`_scan`."""
    parts = []
    for op, av in items:
        if op is C.NEGATE:
            parts.insert(0, "^")
        elif op is C.LITERAL:
            parts.append(f"\\U{av:08x}")
        elif op is C.RANGE:
            parts.append(f"\\U{av[0]:08x}-\\U{av[1]:08x}")
        elif op is C.CATEGORY:
            parts.append(_CATEGORY_SOURCE[av])
        else:  # pragma: no cover - the parser produces nothing else inside []
            raise ValueError(op)
    return "[" + "".join(parts) + "]"


def _re_flags(flags: int) -> int:
    return flags & (re.IGNORECASE | re.ASCII | re.DOTALL)


def class_ranges(op, av, flags: int) -> Ranges:
    """Code points matched by a one-character node (LITERAL, NOT_LITERAL, ANY, IN)."""
    if op is C.ANY:
        return _complement(()) if flags & re.DOTALL else _complement(((10, 10),))
    if op is C.LITERAL:
        items = [(C.LITERAL, av)]
    elif op is C.NOT_LITERAL:
        items = [(C.NEGATE, None), (C.LITERAL, av)]
    else:
        items = list(av)
    simple = not (flags & re.IGNORECASE) and all(o in (C.LITERAL, C.RANGE, C.NEGATE) for o, _ in items)
    if not simple:
        return _scan(_class_source(items), _re_flags(flags))
    ranges = _normalize([(a, a) if o is C.LITERAL else a for o, a in items if o is not C.NEGATE])
    return _complement(ranges) if any(o is C.NEGATE for o, _ in items) else ranges


# ---------------------------------------------------------------- UTF-8


_UTF8_BOUNDS = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, MAX_CODEPOINT))


def utf8_sequences(lo: int, hi: int) -> list[list[tuple[int, int]]]:
    """Split a code point range into byte-range sequences whose concatenations are its UTF-8 encodings."""
    out: list[list[tuple[int, int]]] = []

    def split(lo: int, hi: int) -> None:
        if lo <= _SURROGATES[1] and hi >= _SURROGATES[0]:
            if lo < _SURROGATES[0]:
                split(lo, _SURROGATES[0] - 1)
            if hi > _SURROGATES[1]:
                split(_SURROGATES[1] + 1, hi)
            return
        for blo, bhi in _UTF8_BOUNDS:
            if lo <= bhi and hi > bhi and lo >= blo:
                split(lo, bhi)
                split(bhi + 1, hi)
                return
        if hi < 0x80:
            out.append([(lo, hi)])
            return
        n = len(chr(lo).encode("utf-8"))
        for i in range(1, n):
            m = (1 << (6 * i)) - 1
            if lo & ~m != hi & ~m:
                if lo & m:
                    split(lo, lo | m)
                    split((lo | m) + 1, hi)
                    return
                if hi & m != m:
                    split(lo, (hi & ~m) - 1)
                    split(hi & ~m, hi)
                    return
        a, b = chr(lo).encode("utf-8"), chr(hi).encode("utf-8")
        out.append(list(zip(a, b)))

    split(lo, hi)
    return out


# ---------------------------------------------------------------- NFA


def _byte_mask(lo: int, hi: int) -> int:
    return ((1 << (hi - lo + 1)) - 1) << lo


@dataclass
class ByteNFA:
    """Thompson NFA over bytes: edges carry a 256-bit mask (Python int) of the bytes they accept."""

    eps: list[list[int]] = field(default_factory=list)
    edges: list[list[tuple[int, int]]] = field(default_factory=list)
    start: int = 0
    final: int = 0
    max_states: int = 200_000

    def new(self) -> int:
        if len(self.eps) >= self.max_states:
            raise ResourceLimitError(f"regex NFA exceeds {self.max_states} states")
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1


@dataclass
class RegexInfo:
    """What the lexer needs to know about one terminal's regex besides its NFA."""

    nfa: ByteNFA
    lazy: bool  # shortest-match semantics (a lazy quantifier in a supported position)


class _Builder:
    def __init__(self, terminal: str, pattern: str, max_states: int):
        self.terminal = terminal
        self.pattern = pattern
        self.nfa = ByteNFA(max_states=max_states)

    def unsupported(self, construct: str) -> UnsupportedRegexError:
        return UnsupportedRegexError(self.terminal, construct, self.pattern)

    def chars(self, ranges: Ranges) -> tuple[int, int]:
        nfa = self.nfa
        s, e = nfa.new(), nfa.new()
        ascii_mask = 0
        for lo, hi in ranges:
            if lo < 0x80:
                ascii_mask |= _byte_mask(lo, min(hi, 0x7F))
            if hi >= 0x80:
                for seq in utf8_sequences(max(lo, 0x80), hi):
                    cur = s
                    for i, (blo, bhi) in enumerate(seq):
                        nxt = e if i == len(seq) - 1 else nfa.new()
                        nfa.edges[cur].append((_byte_mask(blo, bhi), nxt))
                        cur = nxt
        if ascii_mask:
            nfa.edges[s].append((ascii_mask, e))
        return s, e

    def seq(self, items, flags: int) -> tuple[int, int]:
        nfa = self.nfa
        s = nfa.new()
        cur = s
        for op, av in items:
            a, b = self.node(op, av, flags)
            nfa.eps[cur].append(a)
            cur = b
        return s, cur

    def node(self, op, av, flags: int) -> tuple[int, int]:
        nfa = self.nfa
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            return self.chars(class_ranges(op, av, flags))
        if op is C.SUBPATTERN:
            _group, add, delete, p = av
            return self.seq(p, (flags | add) & ~delete)
        if op is C.BRANCH:
            s, e = nfa.new(), nfa.new()
            for alt in av[1]:
                a, b = self.seq(alt, flags)
                nfa.eps[s].append(a)
                nfa.eps[b].append(e)
            return s, e
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, p = av
            unbounded = hi == C.MAXREPEAT
            if lo > MAX_REPEAT_COPIES or (not unbounded and hi > MAX_REPEAT_COPIES):
                raise self.unsupported(f"a repeat count above {MAX_REPEAT_COPIES}")
            s = nfa.new()
            cur = s
            for _ in range(lo):
                a, b = self.seq(p, flags)
                nfa.eps[cur].append(a)
                cur = b
            if unbounded:
                a, b = self.seq(p, flags)
                nfa.eps[cur].append(a)
                nfa.eps[b].append(cur)
                return s, cur
            e = nfa.new()
            nfa.eps[cur].append(e)
            for _ in range(hi - lo):
                a, b = self.seq(p, flags)
                nfa.eps[cur].append(a)
                nfa.eps[b].append(e)
                cur = b
            return s, e
        names = {
            C.ASSERT: "lookahead/lookbehind (?=...)/(?<=...)",
            C.ASSERT_NOT: "negative lookahead/lookbehind (?!...)/(?<!...)",
            C.AT: "an anchor or word boundary (^, $, \\b, \\A, \\Z)",
            C.GROUPREF: "a backreference",
            C.GROUPREF_EXISTS: "a conditional group (?(id)...)",
        }
        extra = {getattr(C, n, None): d for n, d in (("POSSESSIVE_REPEAT", "a possessive repeat"), ("ATOMIC_GROUP", "an atomic group"))}
        raise self.unsupported(names.get(op) or extra.get(op) or str(op))


def _is_lazy(op) -> bool:
    return op is C.MIN_REPEAT


def _contains_lazy(items) -> bool:
    for op, av in items:
        if _is_lazy(op):
            return True
        if op is C.SUBPATTERN and _contains_lazy(av[3]):
            return True
        if op is C.BRANCH and any(_contains_lazy(alt) for alt in av[1]):
            return True
        if op in (C.MAX_REPEAT, C.MIN_REPEAT) and _contains_lazy(av[2]):
            return True
    return False


def _fixed_width(items) -> bool:
    lo, hi = sre_parse.SubPattern(sre_parse.State(), list(items)).getwidth()
    return lo == hi


def _top_sequence(parsed):
    """The top-level item list, looking through groups that wrap the whole pattern (Lark's ``(?i:...)``)."""
    items = list(parsed)
    flags = 0
    while len(items) == 1 and items[0][0] is C.SUBPATTERN:
        _g, add, delete, p = items[0][1]
        flags = (flags | add) & ~delete
        items = list(p)
    return items, flags


def _check_lazy_form(items, builder: _Builder) -> None:
    """Lazy quantifiers are exact as shortest-match only as ``P X*? S`` with P, X, S of fixed width."""
    lazy = [i for i, (op, _) in enumerate(items) if _is_lazy(op)]
    nested = any(_contains_lazy([it]) for i, it in enumerate(items) if i not in lazy)
    if nested or len(lazy) != 1:
        raise builder.unsupported("a lazy quantifier other than one top-level P X*? S with fixed-width P, X and S")
    i = lazy[0]
    _lo, _hi, body = items[i][1]
    if not (_fixed_width(items[:i]) and _fixed_width(body) and _fixed_width(items[i + 1 :])):
        raise builder.unsupported("a lazy quantifier other than one top-level P X*? S with fixed-width P, X and S")


def compile_regex(terminal: str, pattern: str, *, max_states: int = 200_000) -> RegexInfo:
    """Parse ``pattern`` (Python syntax) and build its byte-level NFA; raise on what cannot be exact."""
    builder = _Builder(terminal, pattern, max_states)
    try:
        parsed = sre_parse.parse(pattern, 0)
    except re.error as exc:
        raise UnsupportedRegexError(terminal, f"invalid regex ({exc})", pattern) from None
    flags = parsed.state.flags
    if flags & re.VERBOSE:
        flags &= ~re.VERBOSE
    lazy = _contains_lazy(parsed)
    if lazy:
        items, extra = _top_sequence(parsed)
        _check_lazy_form(items, builder)
    s, e = builder.seq(list(parsed), flags)
    nfa = builder.nfa
    nfa.start, nfa.final = s, e
    return RegexInfo(nfa=nfa, lazy=lazy)
