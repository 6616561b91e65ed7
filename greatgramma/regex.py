"""Python regexes (as Lark writes terminals) -> byte-level NFAs over UTF-8, with Python's Unicode semantics.

The pattern is parsed with Python's own regex parser (``re._parser``), so the syntax and the
character-class semantics (``\\w`` on non-ASCII letters, case folding under ``(?i)``) are exactly
the ones Lark's lexer uses. Character classes become sets of code points, and those become
UTF-8 byte sequences, so the automaton reads bytes and can stop inside a character.
Lazy quantifiers and lookbehinds get an NFA with lookbehind gates whose epsilon edges keep
``re``'s backtracking priority order (:class:`_GatedBuilder`), so that the lexer can end a
lexeme exactly where ``re.match`` ends it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np

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
    cps = np.arange(MAX_CODEPOINT + 1, dtype=np.uint32)
    cps = cps[(cps < _SURROGATES[0]) | (cps > _SURROGATES[1])]
    return cps.astype("<u4").tobytes().decode("utf-32-le")


@functools.lru_cache(maxsize=1)
def _folds_to_ascii() -> str:
    """The non-ASCII characters that ``(?i)`` can match with an ASCII pattern character (e.g. the Kelvin sign)."""
    return "".join(m.group() for m in re.finditer("(?i)[a-z]", _all_chars()) if ord(m.group()) >= 0x80)


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
    plain = all(o in (C.LITERAL, C.RANGE, C.NEGATE) for o, _ in items)
    if plain and flags & re.IGNORECASE and not any(o is C.NEGATE for o, _ in items):
        base = [(a, a) if o is C.LITERAL else a for o, a in items]
        if all(hi < 0x80 for _, hi in base):  # case folding of an ASCII set: test the few candidates
            pattern = re.compile(_class_source(items), _re_flags(flags))
            found = [ord(c) for c in map(chr, range(0x80)) if pattern.fullmatch(c)]
            found += [ord(c) for c in _folds_to_ascii() if pattern.fullmatch(c)]
            return _normalize([(c, c) for c in found])
    if not plain or flags & re.IGNORECASE:
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
    """Thompson NFA over bytes: edges carry a 256-bit mask (Python int) of the bytes they accept.

    A *guard* edge is an epsilon edge that starts a negative lookahead ``(?!L)`` for the literal
    bytes ``guards[g]``: the thread dies if the input from there on begins with them.

    A *gate* (:class:`_GatedBuilder`) is a lookbehind: passing state ``s`` with
    ``gates[s] = (k, negative)`` needs ``lookbehinds[k]`` (an NFA for "any text, then the
    lookbehind's body", run alongside on the lexeme) to be in its final state, or not to be.
    An *ordered* NFA lists each state's epsilon edges in Python's backtracking priority order
    and must be run as ordered thread lists (a Pike VM), which end the lexeme where
    ``re.match`` ends it.
    """

    eps: list[list[int]] = field(default_factory=list)
    edges: list[list[tuple[int, int]]] = field(default_factory=list)
    guard_eps: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # state -> [(target, guard)]
    guards: list[bytes] = field(default_factory=list)
    start: int = 0
    final: int = 0
    max_states: int = 200_000
    ordered: bool = False
    gates: dict[int, tuple[int, bool]] = field(default_factory=dict)  # state -> (lookbehind, negative)
    lookbehinds: list["ByteNFA"] = field(default_factory=list)

    def new(self) -> int:
        if len(self.eps) >= self.max_states:
            raise ResourceLimitError(f"regex NFA exceeds {self.max_states} states")
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1


_LAZY_SHAPE = "a lazy quantifier other than X*? followed by a literal S, with X one character class"


class _Builder:
    """Builds the NFA; ``tail`` says whether what follows a node (to the pattern's end) can be empty."""

    def __init__(self, terminal: str, pattern: str, max_states: int, state=None):
        self.terminal = terminal
        self.pattern = pattern
        self.nfa = ByteNFA(max_states=max_states)
        self.state = state  # the regex parser's state, for group widths

    def unsupported(self, construct: str) -> UnsupportedRegexError:
        return UnsupportedRegexError(self.terminal, construct, self.pattern)

    def chars(self, ranges: Ranges) -> tuple[int, int]:
        nfa = self.nfa
        s, e = nfa.new(), nfa.new()
        self._chars_between(ranges, s, e)
        return s, e

    def _chars_between(self, ranges: Ranges, s: int, e: int) -> None:
        nfa = self.nfa
        ascii_mask = 0
        suffix_state: dict[tuple[tuple[int, int], ...], int] = {}

        def state_for(rest: tuple[tuple[int, int], ...]) -> int:
            """One NFA state per distinct remaining byte-range sequence (shares UTF-8 tails)."""
            if not rest:
                return e
            got = suffix_state.get(rest)
            if got is None:
                got = suffix_state[rest] = nfa.new()
                nfa.edges[got].append((_byte_mask(*rest[0]), state_for(rest[1:])))
            return got

        for lo, hi in ranges:
            if lo < 0x80:
                ascii_mask |= _byte_mask(lo, min(hi, 0x7F))
            if hi >= 0x80:
                for seq in utf8_sequences(max(lo, 0x80), hi):
                    nfa.edges[s].append((_byte_mask(*seq[0]), state_for(tuple(seq[1:]))))
        if ascii_mask:
            nfa.edges[s].append((ascii_mask, e))

    def seq(self, items, flags: int, tail: bool) -> tuple[int, int]:
        nfa = self.nfa
        items = list(items)
        s = nfa.new()
        cur = s
        i = 0
        while i < len(items):
            op, av = items[i]
            rest_nullable = tail and _nullable(items[i + 1 :], self.state)
            if op is C.MIN_REPEAT:
                cur, i = self.lazy(items, i, flags, tail, cur)
                continue
            if op is C.ASSERT_NOT and av[0] == -1:  # negative lookbehind: decided by the literal before it
                self.lookbehind(items[:i], av[1], flags)
                i += 1
                continue
            if op is C.ASSERT_NOT and av[0] == 1 and not list(av[1]):  # (?!) fails everywhere: nothing goes on
                cur = nfa.new()
                i += 1
                continue
            if op is C.ASSERT_NOT and av[0] == 1:
                for literal in self.guard_literals(av[1], flags):  # the thread must pass every guard
                    nfa.guards.append(literal)
                    nxt = nfa.new()
                    nfa.guard_eps.setdefault(cur, []).append((nxt, len(nfa.guards) - 1))
                    cur = nxt
                i += 1
                continue
            a, b = self.node(op, av, flags, rest_nullable)
            nfa.eps[cur].append(a)
            cur = b
            i += 1
        return s, cur

    def literal_bytes(self, items, flags: int, construct: str) -> bytes:
        """The bytes of a run of case-insensitive-safe literal characters, or an error."""
        out = []
        for op, av in items:
            ch = chr(av) if op is C.LITERAL else None
            if ch is None or (flags & re.IGNORECASE and ch.lower() != ch.upper()):
                raise self.unsupported(construct)
            out.append(ch)
        return "".join(out).encode("utf-8")

    def guard_literals(self, body, flags: int) -> list[bytes]:
        """``(?!X)`` as literals none of which may follow: X itself, or each byte of X when X is
        one class of ASCII characters (``(?![0-9.])``)."""
        items = list(body)
        if len(items) == 1 and items[0][0] is C.IN and not flags & re.IGNORECASE:
            ranges = class_ranges(C.IN, items[0][1], flags)
            if ranges and ranges[-1][1] < 0x80:
                return [bytes([b]) for lo, hi in ranges for b in range(lo, hi + 1)]
        return [self.literal_bytes(items, flags, "a negative lookahead other than (?!literal) or (?![ASCII class])")]

    def lookbehind(self, before, body, flags: int) -> None:
        """(?<!X) right after literal characters that rule X out (or in) is decided statically."""
        behind = self.literal_bytes(body, flags, "a lookbehind other than (?<!literal)")
        j = len(before)
        known = []
        while j > 0 and before[j - 1][0] is C.LITERAL and len(known) < len(behind):
            j -= 1
            known.insert(0, chr(before[j][1]))
        known_bytes = "".join(known).encode("utf-8")
        if len(known_bytes) < len(behind):
            raise self.unsupported("a lookbehind whose text is not fixed by the literal before it")
        if known_bytes.endswith(behind):  # (?<!X) after X never matches
            raise self.unsupported("a negative lookbehind that can never succeed")

    def lazy(self, items, i: int, flags: int, tail: bool, cur: int) -> tuple[int, int]:
        """``X*? S``: characters of X up to the first occurrence of the literal S (as Python's ``re`` stops).

        Exact when X is one character class containing S's characters and what follows S can be
        empty (so ``re`` never has to extend the lazy part to finish the match).
        """
        lo, hi, body = items[i][1]
        j = i + 1
        while j < len(items) and items[j][0] is C.LITERAL:
            j += 1
        body = list(body)
        if lo != 0 or hi != C.MAXREPEAT or len(body) != 1 or body[0][0] not in (C.ANY, C.IN, C.LITERAL, C.NOT_LITERAL):
            raise self.unsupported(_LAZY_SHAPE)
        if j == i + 1 or not (tail and _nullable(items[j:], self.state)):
            raise self.unsupported(_LAZY_SHAPE + ", at the end of the pattern")
        stop = self.literal_bytes(items[i + 1 : j], flags, _LAZY_SHAPE)
        if max(stop) >= 0x80:
            raise self.unsupported(_LAZY_SHAPE + " (S must be ASCII)")
        x = class_ranges(body[0][0], body[0][1], flags)
        if any(not _in_ranges(c, x) for c in stop) and len(stop) > 1:
            raise self.unsupported(_LAZY_SHAPE + " (X must contain S's characters)")
        nfa = self.nfa
        # KMP automaton for the first occurrence of `stop`, over X's characters
        nodes = [cur] + [nfa.new() for _ in range(len(stop) - 1)]
        done = nfa.new()
        non_ascii = tuple((max(a, 0x80), b) for a, b in x if b >= 0x80)
        for k, node in enumerate(nodes):
            for byte in range(0x80):
                if byte == stop[k]:
                    target = done if k + 1 == len(stop) else nodes[k + 1]
                elif _in_ranges(byte, x):
                    target = nodes[_kmp_next(stop, k, byte)]
                else:
                    continue
                nfa.edges[node].append((1 << byte, target))
            if non_ascii:  # a multi-byte character is never part of the ASCII stop string
                self._chars_between(non_ascii, node, nodes[0])
        return done, j

    def copies(self, items, flags: int, tail: bool, n: int) -> list[tuple[int, int]]:
        """(start, end) of ``n`` unconnected NFAs of ``seq(items)``: built once and cloned (a
        bounded repeat such as a string's ``maxLength`` copies its body hundreds of times), or
        built anew each time where the body holds a lookahead guard."""
        if n == 0:
            return []
        nfa = self.nfa
        first = len(nfa.eps)
        body = self.seq(items, flags, tail)
        last = len(nfa.eps)
        out = [body]
        if any(first <= st < last for st in nfa.guard_eps):
            return out + [self.seq(items, flags, tail) for _ in range(n - 1)]
        eps, edges = nfa.eps[first:last], nfa.edges[first:last]
        for _ in range(n - 1):
            off = len(nfa.eps) - first
            if len(nfa.eps) + last - first > nfa.max_states:
                raise ResourceLimitError(f"regex NFA exceeds {nfa.max_states} states")
            nfa.eps.extend([t + off for t in ts] for ts in eps)
            nfa.edges.extend([(m, t + off) for m, t in es] for es in edges)
            out.append((body[0] + off, body[1] + off))
        return out

    def structure(self, op, av, flags: int, context) -> tuple[int, int] | None:
        """Characters, groups and alternatives, built alike by every builder (``context``: what
        the builder's ``seq`` carries along); None for any other construct."""
        nfa = self.nfa
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            return self.chars(class_ranges(op, av, flags))
        if op is C.SUBPATTERN:
            _group, add, delete, p = av
            return self.seq(p, (flags | add) & ~delete, context)
        if op is C.BRANCH:
            s, e = nfa.new(), nfa.new()
            for alt in av[1]:
                a, b = self.seq(alt, flags, context)
                nfa.eps[s].append(a)
                nfa.eps[b].append(e)
            return s, e
        return None

    def node(self, op, av, flags: int, tail: bool) -> tuple[int, int]:
        got = self.structure(op, av, flags, tail)
        if got is not None:
            return got
        nfa = self.nfa
        if op is C.MAX_REPEAT:
            lo, hi, p = av
            unbounded = hi == C.MAXREPEAT
            if lo > MAX_REPEAT_COPIES or (not unbounded and hi > MAX_REPEAT_COPIES):
                raise self.unsupported(f"a repeat count above {MAX_REPEAT_COPIES}")
            inner_tail = tail and (lo <= 1 or _nullable(p, self.state))
            s = nfa.new()
            cur = s
            copies = iter(self.copies(p, flags, inner_tail, lo + (1 if unbounded else hi - lo)))
            for _ in range(lo):
                a, b = next(copies)
                nfa.eps[cur].append(a)
                cur = b
            if unbounded:
                a, b = next(copies)
                nfa.eps[cur].append(a)
                nfa.eps[b].append(cur)
                return s, cur
            e = nfa.new()
            nfa.eps[cur].append(e)
            for a, b in copies:
                nfa.eps[cur].append(a)
                nfa.eps[b].append(e)
                cur = b
            return s, e
        raise self.refused(op)

    def refused(self, op) -> UnsupportedRegexError:
        """The error for a construct no builder supports (or this one does not, in this position)."""
        names = {
            C.MIN_REPEAT: _LAZY_SHAPE,
            C.ASSERT: "a positive lookahead/lookbehind (?=...)/(?<=...)",
            C.ASSERT_NOT: "a negative lookahead/lookbehind in this position",
            C.AT: "an anchor or word boundary (^, $, \\b, \\A, \\Z)",
            C.GROUPREF: "a backreference",
            C.GROUPREF_EXISTS: "a conditional group (?(id)...)",
        }
        extra = {getattr(C, n, None): d for n, d in (("POSSESSIVE_REPEAT", "a possessive repeat"), ("ATOMIC_GROUP", "an atomic group"))}
        return self.unsupported(names.get(op) or extra.get(op) or str(op))


_GATED = "in a pattern with a lazy quantifier or lookbehind"


class _GatedBuilder(_Builder):
    """Builds an NFA with lookbehind *gates* and epsilon edges in backtracking priority order.

    For patterns with a lazy quantifier or a lookbehind (Lark's ``ESCAPED_STRING`` is
    ``".*?(?<!\\\\)(\\\\\\\\)*?"``, its ``C_COMMENT`` ``/\\*(.|\\n)*?\\*/``). With a lazy
    quantifier the NFA is ``ordered``: the lexer runs it in that priority order, so the lexeme
    ends where ``re.match`` ends it; without one it is run as sets (the pattern's language).
    ``before`` is the fewest characters the lexeme holds before a node: a lookbehind must never
    look past the lexeme's start, where Lark's lexer would show it the previous lexeme.
    """

    def build(self, items, flags: int, ordered: bool) -> ByteNFA:
        nfa = self.nfa
        nfa.ordered = ordered
        s, e = self.seq(items, flags, 0)
        final = nfa.new()  # its own state, so that a loop ending the pattern keeps its priority order
        nfa.eps[e].append(final)
        nfa.start, nfa.final = s, final
        return nfa

    def seq(self, items, flags: int, before: int) -> tuple[int, int]:
        nfa = self.nfa
        items = list(items)
        s = cur = nfa.new()
        for i, (op, av) in enumerate(items):
            if op is C.ASSERT_NOT and av[0] == -1 and _literal_rules_out(items[:i], av[1]):
                continue  # e.g. the (?<!\\) right after a quote in python.lark's strings
            a, b = self.node(op, av, flags, before)
            nfa.eps[cur].append(a)
            cur = b
            before += _min_width([(op, av)], self.state)
        return s, cur

    def node(self, op, av, flags: int, before: int) -> tuple[int, int]:
        got = self.structure(op, av, flags, before)
        if got is not None:
            return got
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            return self.repeat(av, flags, before, greedy=op is C.MAX_REPEAT)
        if op in (C.ASSERT, C.ASSERT_NOT) and av[0] == -1:
            return self.gate(av[1], flags, before, negative=op is C.ASSERT_NOT)
        if op in (C.ASSERT, C.ASSERT_NOT):
            raise self.unsupported(f"a lookahead {_GATED}")
        raise self.refused(op)

    def repeat(self, av, flags: int, before: int, greedy: bool) -> tuple[int, int]:
        """Copies of the body; each optional one is tried before leaving (greedy) or after (lazy)."""
        lo, hi, body = av
        unbounded = hi == C.MAXREPEAT
        if lo > MAX_REPEAT_COPIES or (not unbounded and hi > MAX_REPEAT_COPIES):
            raise self.unsupported(f"a repeat count above {MAX_REPEAT_COPIES}")
        if self.nfa.ordered and (unbounded or hi > 1) and _nullable(body, self.state):
            raise self.unsupported(f"a repeat of something that can match empty, {_GATED}")  # re has rules of its own
        nfa = self.nfa
        width = _min_width(body, self.state)
        s = cur = nfa.new()
        for i in range(lo):
            a, b = self.seq(body, flags, before + i * width)
            nfa.eps[cur].append(a)
            cur = b
        leave = nfa.new()
        for i in range(1 if unbounded else hi - lo):
            a, b = self.seq(body, flags, before + (lo + i) * width)
            nfa.eps[cur].extend((a, leave) if greedy else (leave, a))
            if unbounded:
                nfa.eps[b].append(cur)
            cur = b
        if not unbounded:
            nfa.eps[cur].append(leave)
        return s, leave

    def gate(self, body, flags: int, before: int, negative: bool) -> tuple[int, int]:
        """A lookbehind: a state passed only when the lexeme so far ends (or does not) with the body."""
        if _min_width(body, self.state) > before:
            raise self.unsupported("a lookbehind that can look before the start of the lexeme")
        nfa = self.nfa
        nfa.lookbehinds.append(self.suffix_tracker(body, flags))
        s, e = nfa.new(), nfa.new()
        nfa.gates[s] = (len(nfa.lookbehinds) - 1, negative)
        nfa.eps[s].append(e)
        return s, e

    def suffix_tracker(self, body, flags: int) -> ByteNFA:
        """NFA for any text followed by ``body``: in its final state exactly where the text read so
        far ends with a match of the body (the lookbehind's question, asked of the lexeme)."""
        if any(op in (C.ASSERT, C.ASSERT_NOT, C.MIN_REPEAT) for op, _ in _nodes(body)):
            raise self.unsupported("a lookaround or lazy quantifier inside a lookbehind")
        sub = _Builder(self.terminal, self.pattern, self.nfa.max_states, self.state)
        loop = sub.nfa.new()
        a, b = sub.chars(_complement(()))
        s, e = sub.seq(list(body), flags, True)
        sub.nfa.eps[loop].extend((a, s))
        sub.nfa.eps[b].append(loop)
        sub.nfa.start, sub.nfa.final = loop, e
        return sub.nfa


def _literal_rules_out(before, body) -> bool:
    """Whether the literal characters right before a ``(?<!body)`` show that it always passes.

    True when the body is caseless literal characters and the same number of literal characters
    precede it, differing somewhere: a caseless character matches only itself, under any flags.
    """
    if not body or any(op is not C.LITERAL or chr(av).lower() != chr(av).upper() for op, av in body):
        return False
    known = before[len(before) - len(body) :] if len(before) >= len(body) else []
    if len(known) < len(body) or any(op is not C.LITERAL for op, _ in known):
        return False
    return any(k != b for (_, k), (_, b) in zip(known, body))


def _min_width(items, state=None) -> int:
    """The fewest characters the items can match."""
    return sre_parse.SubPattern(state or sre_parse.State(), list(items)).getwidth()[0]


def _nodes(items):
    """Every (opcode, argument) of a parsed pattern, nested ones included."""
    for op, av in items:
        yield op, av
        if op is C.BRANCH:
            for alt in av[1]:
                yield from _nodes(alt)
        elif op is C.SUBPATTERN:
            yield from _nodes(av[3])
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT) or op.name == "POSSESSIVE_REPEAT":
            yield from _nodes(av[2])
        elif op in (C.ASSERT, C.ASSERT_NOT):
            yield from _nodes(av[1])
        elif op.name == "ATOMIC_GROUP":
            yield from _nodes(av)
        elif op is C.GROUPREF_EXISTS:
            for branch in av[1:]:
                if branch is not None:
                    yield from _nodes(branch)


def _nullable(items, state=None) -> bool:
    """Whether the items can match the empty string (``state``: the parse's, for group widths)."""
    return not items or sre_parse.SubPattern(state or sre_parse.State(), list(items)).getwidth()[0] == 0


def _in_ranges(c: int, ranges: Ranges) -> bool:
    return any(lo <= c <= hi for lo, hi in ranges)


def _kmp_next(stop: bytes, k: int, byte: int) -> int:
    """Length of the longest prefix of ``stop`` that is a suffix of ``stop[:k] + byte``."""
    s = stop[:k] + bytes([byte])
    for n in range(min(len(s), len(stop) - 1), 0, -1):
        if s.endswith(stop[:n]):
            return n
    return 0


def literal_bytes(pattern: str) -> bytes | None:
    """The UTF-8 bytes of a pattern that is one plain string of characters (no flags, no
    operators), as Lark writes a string literal; None for any other pattern."""
    try:
        items = list(sre_parse.parse(pattern, 0))
    except re.error:
        return None
    if not items or any(op is not C.LITERAL for op, _ in items):
        return None
    try:
        return "".join(chr(code) for _, code in items).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: compile_regex says what is wrong with it
        return None


def compile_regex(terminal: str, pattern: str, *, max_states: int = 200_000) -> ByteNFA:
    """Parse ``pattern`` (Python syntax) and build its byte-level NFA; raise on what cannot be exact.

    A pattern with a lazy quantifier or a lookbehind gets a gated NFA (:class:`_GatedBuilder`),
    unless it also has a lookahead: then the plain builder may still take it (``X*? S`` after a
    ``(?!literal)``, python.lark's strings), or the gated builder's refusal stands.
    """
    try:
        parsed = sre_parse.parse(pattern, 0)
    except re.error as exc:
        raise UnsupportedRegexError(terminal, f"invalid regex ({exc})", pattern) from None
    try:
        return _built_nfa(terminal, pattern, max_states, parsed)
    except ResourceLimitError as exc:
        raise ResourceLimitError(f"terminal {terminal}: {exc}; simplify the pattern") from None


def _built_nfa(terminal: str, pattern: str, max_states: int, parsed) -> ByteNFA:
    flags = parsed.state.flags & ~re.VERBOSE
    ops = [(op, av[0] if op in (C.ASSERT, C.ASSERT_NOT) else None) for op, av in _nodes(parsed)]
    lazy = (C.MIN_REPEAT, None) in ops
    if not lazy and (C.ASSERT, -1) not in ops and (C.ASSERT_NOT, -1) not in ops:
        return _plain_nfa(_Builder(terminal, pattern, max_states, parsed.state), parsed, flags)
    try:
        return _GatedBuilder(terminal, pattern, max_states, parsed.state).build(list(parsed), flags, ordered=lazy)
    except UnsupportedRegexError as refusal:
        try:
            return _plain_nfa(_Builder(terminal, pattern, max_states, parsed.state), parsed, flags)
        except UnsupportedRegexError:
            raise refusal from None


def _plain_nfa(builder: _Builder, parsed, flags: int) -> ByteNFA:
    s, e = builder.seq(list(parsed), flags, True)
    builder.nfa.start, builder.nfa.final = s, e
    return builder.nfa
