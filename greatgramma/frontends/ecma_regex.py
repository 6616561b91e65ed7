"""Regexes as requests bring them -> Lark terminal regex text, in two spellings.

A pattern is read into a small tree of code point sets, sequences, alternatives and repeats
(:data:`Node`), which is then written out either *raw* (the text itself, for a REGEX request:
``re.fullmatch`` semantics) or *JSON-escaped* (the text as it appears between the quotes of a
JSON string, for a schema's ``pattern``, ``format`` and string lengths: every character may be
written as ``json.dumps(..., ensure_ascii=False)`` and serde_json write it: raw, but for ``"``,
``\\`` and control characters, escaped: the canonical spelling, one per string).

Two readers:

* :func:`parse_python` -- Python ``re`` syntax and semantics (``\\w`` on Unicode letters, ``.``
  without a newline), as Lark and vLLM's REGEX requests use them;
* :func:`parse_ecma` -- ECMA-262 syntax as JSON Schema's ``pattern`` uses it, on code points (as
  with the ``u`` flag, and as Python's ``jsonschema`` validator runs it): ``\\d`` is ``[0-9]``,
  ``\\w`` ``[A-Za-z0-9_]``, ``\\s`` ECMA's white space and line terminators, ``.`` anything but a
  line terminator, ``$`` only the end of the text. A pattern is a *search*: unless anchored
  with ``^``/``$``, any text may come before and after it.

Refused with :class:`RegexError` (naming the construct): lookarounds, backreferences, word
boundaries, anchors inside a repeat (and, in a Python regex, anchors other than at the ends of a
top-level alternative), possessive repeats, atomic groups, ECMA's ``u``-mode escapes
(``\\p{...}``, ``\\u{...}``). An ECMA ``pattern`` may hold ``^`` and ``$`` anywhere else
(``^$|^[a-z]+$``, ``(^a.+)|(^b)``, ``^([^,]|$)``): each way the pattern can match is kept apart by
whether it must start at the text's start and end at its end. ``\\S``, ``\\W`` and ``\\D`` inside
a class join it as their complements' ranges.
"""

from __future__ import annotations

import re
from typing import Union

from ..errors import GrammarError
from ..regex import C, Ranges, _complement, _normalize, class_ranges, sre_parse

# A node: ("chars", ranges) | ("seq", [nodes]) | ("alt", [nodes]) | ("rep", node, lo, hi or None)
Node = Union[tuple]
EMPTY: Node = ("seq", [])
ANY_CHAR: Node = ("chars", _complement(()))
ANY_STRING: Node = ("rep", ANY_CHAR, 0, None)


class RegexError(GrammarError):
    """A pattern that cannot be translated exactly (or is not a valid regex)."""


def chars(ranges) -> Node:
    return ("chars", _normalize(list(ranges)))


def literal(text: str) -> Node:
    return ("seq", [("chars", ((ord(c), ord(c)),)) for c in text])


# ---------------------------------------------------------------- readers


def parse_python(pattern: str) -> Node:
    """A Python regex, matched in full (``re.fullmatch``): the language of the text it matches."""
    try:
        parsed = sre_parse.parse(pattern, 0)
    except re.error as exc:
        raise RegexError(f"invalid regex {pattern!r}: {exc}", kind="regex") from None
    flags = parsed.state.flags
    if flags & re.MULTILINE:
        raise RegexError(f"regex {pattern!r}: the MULTILINE flag (anchors inside the text) is not supported", kind="regex")
    starts, ends, node = _anchored_alternatives(list(parsed), flags, pattern)
    return node  # a full match: anchors at the ends change nothing


def parse_ecma(pattern: str) -> Node:
    """An ECMA-262 ``pattern`` as JSON Schema applies it: the strings in which it finds a match."""
    source = ecma_to_python(pattern)
    try:
        parsed = sre_parse.parse(source, 0)
    except re.error as exc:
        raise RegexError(f"invalid regex {pattern!r}: {exc}", kind="regex") from None
    try:
        ways = [_anchored_alternatives(alt, 0, pattern) for alt in _top_alternatives(list(parsed))]
    except _AnchorInside:  # ^ or $ elsewhere than at the ends of a top-level alternative
        ways = [(starts, ends, node) for (starts, ends), node in _anchored_ways(list(parsed), 0, pattern).items()]
    out = [("seq", [EMPTY if starts else _ANY_RUN, node, EMPTY if ends else _ANY_RUN]) for starts, ends, node in ways]
    return out[0] if len(out) == 1 else ("alt", out)


_ANY_RUN: Node = ("rep", ANY_CHAR, 0, None)
_STARTS = (C.AT_BEGINNING, C.AT_BEGINNING_STRING)
_ENDS = (C.AT_END, C.AT_END_STRING)


def _anchored_ways(items: list, flags: int, pattern: str) -> dict[tuple[bool, bool], Node]:
    """How ``items`` match in an ECMA search, by (the match must start where the text starts, it
    must end where the text ends): ``^`` and ``$`` are the empty match bound to one end; in a
    sequence, what comes before a ``^`` (after a ``$``) can only match the empty string."""
    ways: dict[tuple[bool, bool], Node] = {(False, False): EMPTY}
    for op, av in items:
        if op is C.AT and av in _STARTS:
            parts = {(True, False): EMPTY}
        elif op is C.AT and av in _ENDS:
            parts = {(False, True): EMPTY}
        elif op is C.SUBPATTERN:
            _group, add, delete, p = av
            parts = _anchored_ways(list(p), (flags | add) & ~delete, pattern)
        elif op is C.BRANCH:
            parts = {}
            for alt in av[1]:
                for key, node in _anchored_ways(list(alt), flags, pattern).items():
                    parts[key] = _either(parts.get(key), node)
        else:  # (anchors inside a repeat are refused here)
            parts = {(False, False): _seq([(op, av)], flags, pattern)}
        joined: dict[tuple[bool, bool], Node] = {}
        for (sa, ea), a in ways.items():
            for (sb, eb), b in parts.items():
                if (ea and not nullable(b)) or (sb and not nullable(a)):
                    continue  # past the text's end, or before its start: no match this way
                node = _then(EMPTY if sb else a, EMPTY if ea else b)
                joined[sa or sb, ea or eb] = _either(joined.get((sa or sb, ea or eb)), node)
        ways = joined
    return ways


def _then(a: Node, b: Node) -> Node:
    parts = [n for x in (a, b) for n in (x[1] if x[0] == "seq" else [x])]
    return parts[0] if len(parts) == 1 else ("seq", parts)


def _either(a: Node | None, b: Node) -> Node:
    return b if a is None else ("alt", [*(a[1] if a[0] == "alt" else [a]), b])


def _top_alternatives(items: list) -> list[list]:
    if len(items) == 1 and items[0][0] is C.BRANCH:
        return [list(a) for a in items[0][1][1]]
    return [items]


def _anchored_alternatives(items: list, flags: int, pattern: str) -> tuple[bool, bool, Node]:
    """``items`` without a leading ``^`` and a trailing ``$`` (reported), as a node."""
    starts = bool(items) and items[0][0] is C.AT and items[0][1] in (C.AT_BEGINNING, C.AT_BEGINNING_STRING)
    if starts:
        items = items[1:]
    ends = bool(items) and items[-1][0] is C.AT and items[-1][1] in (C.AT_END, C.AT_END_STRING)
    if ends:
        items = items[:-1]
    return starts, ends, _seq(items, flags, pattern)


class _AnchorInside(RegexError):
    """``^`` or ``$`` elsewhere than at the ends of a top-level alternative."""


_REFUSED = {
    C.ASSERT: "a lookahead or lookbehind",
    C.ASSERT_NOT: "a negative lookahead or lookbehind",
    C.AT: "an anchor or word boundary inside the pattern (only ^ at the start and $ at the end are supported)",
    C.GROUPREF: "a backreference",
    C.GROUPREF_EXISTS: "a conditional group",
}
for _name, _what in (("POSSESSIVE_REPEAT", "a possessive repeat"), ("ATOMIC_GROUP", "an atomic group")):
    if hasattr(C, _name):
        _REFUSED[getattr(C, _name)] = _what


def _seq(items, flags: int, pattern: str) -> Node:
    out = []
    for op, av in items:
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            out.append(("chars", class_ranges(op, av, flags)))
        elif op is C.SUBPATTERN:
            _group, add, delete, p = av
            out.append(_seq(list(p), (flags | add) & ~delete, pattern))
        elif op is C.BRANCH:
            out.append(("alt", [_seq(list(a), flags, pattern) for a in av[1]]))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):  # lazy or greedy: the same language
            lo, hi, p = av
            out.append(("rep", _seq(list(p), flags, pattern), lo, None if hi == C.MAXREPEAT else hi))
        else:
            error = _AnchorInside if op is C.AT and av in (*_STARTS, *_ENDS) else RegexError
            raise error(f"regex {pattern!r}: {_REFUSED.get(op, str(op))} is not supported", kind="regex")
    return out[0] if len(out) == 1 else ("seq", out)


# ECMA's \s: WhiteSpace and LineTerminator (ECMA-262 22.2.2.9)
_ECMA_SPACE = r"\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_ECMA_CLASS = {"d": "0-9", "w": "A-Za-z0-9_", "s": _ECMA_SPACE}
_ECMA_SIMPLE = {"t": r"\t", "n": r"\n", "r": r"\r", "f": r"\x0c", "v": r"\x0b", "0": r"\x00"}


def _class_of(body: str) -> Ranges:
    """The code points of a Python class body."""
    return class_ranges(C.IN, list(sre_parse.parse(f"[{body}]"))[0][1], 0)


def ecma_to_python(pattern: str) -> str:
    """ECMA-262 regex syntax -> Python syntax with the same meaning on code points."""
    out, i, in_class, n = [], 0, False, len(pattern)
    # inside a class: whether the last atom may start a range, and whether a range's '-' was just read
    may_start, in_range = False, False
    while i < n:
        c = pattern[i]
        if in_class and c not in "-]":  # an atom (an escape too): a range's end, or one that may start one
            may_start, in_range = not in_range, False
        if c == "\\":
            if i + 1 >= n:
                raise RegexError(f"pattern {pattern!r} ends with a lone backslash", kind="regex")
            e = pattern[i + 1]
            i += 2
            if e.lower() in _ECMA_CLASS:
                body = _ECMA_CLASS[e.lower()]
                if e.islower():
                    out.append(body if in_class else f"[{body}]")
                elif in_class:  # its complement, as ranges (the last one ends at U+10FFFF: a '-' after it is literal)
                    out.append(_class_body(_complement(_class_of(body))))
                else:
                    out.append(f"[^{body}]")
            elif e in _ECMA_SIMPLE:
                if e == "0" and i < n and pattern[i].isdigit():
                    raise RegexError(f"pattern {pattern!r}: octal escapes are not supported", kind="regex")
                out.append(_ECMA_SIMPLE[e])
            elif e == "b":
                out.append(r"\x08" if in_class else r"\b")  # \b outside a class: refused later, as Python's
            elif e == "B":
                out.append(r"\B")
            elif e == "c" and i < n and pattern[i].isalpha():
                out.append(f"\\x{ord(pattern[i]) % 32:02x}")
                i += 1
            elif e == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", pattern[i : i + 2]):
                out.append("\\x" + pattern[i : i + 2])
                i += 2
            elif e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", pattern[i : i + 4]):
                out.append("\\u" + pattern[i : i + 4])
                i += 4
            elif e.isdigit():
                raise RegexError(f"pattern {pattern!r}: backreferences are not supported", kind="regex")
            elif e.isalnum():
                raise RegexError(f"pattern {pattern!r}: the escape \\{e} is not supported", kind="regex")
            else:
                out.append("\\" + e)
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif c == "[":
                c = "\\["  # a literal [ inside a class (Python would warn about nested sets)
            elif c in "&~|":
                c = "\\" + c  # literal in both; doubled, Python would warn about set operations
            elif c == "-":
                if may_start and not in_range and pattern[i + 1 : i + 2] not in ("", "]"):
                    in_range = True  # a range's '-'
                else:  # a literal '-': escaped, as Python warns about '--' (set difference) there
                    c, may_start, in_range = "\\-", not in_range, False
        elif c == "[":
            if pattern.startswith(("[]", "[^]"), i):
                raise RegexError(f"pattern {pattern!r}: the empty class [] / [^] is not supported", kind="regex")
            in_class, may_start, in_range = True, False, False
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # ECMA: `[]...` cannot happen here; keep Python from reading ] as a literal
                raise RegexError(f"pattern {pattern!r}: an empty class is not supported", kind="regex")
            continue
        elif c == ".":
            c = r"[^\n\r\u2028\u2029]"
        elif c == "(" and pattern.startswith("(?", i):
            if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                c, i = "(?P<", i + 2
            elif not pattern.startswith(("(?:", "(?=", "(?!", "(?<=", "(?<!"), i):
                raise RegexError(f"pattern {pattern!r}: the group syntax at {i} is not ECMA-262", kind="regex")
        out.append(c)
        i += 1
    return "".join(out)


# ---------------------------------------------------------------- node algebra


def nullable(node: Node) -> bool:
    kind = node[0]
    if kind == "chars":
        return False
    if kind == "seq":
        return all(nullable(n) for n in node[1])
    if kind == "alt":
        return any(nullable(n) for n in node[1])
    return node[2] == 0 or nullable(node[1])


def non_empty(node: Node) -> Node:
    """The node's language without the empty string (a Lark terminal may not match it)."""
    kind = node[0]
    if not nullable(node):
        return node
    if kind == "seq":
        items = node[1]
        if not items:
            return ("alt", [])
        head, tail = items[0], ("seq", items[1:])
        return ("alt", [("seq", [non_empty(head), tail]), non_empty(tail)])
    if kind == "alt":
        return ("alt", [non_empty(n) for n in node[1]])
    _, body, lo, hi = node
    if hi == 0:
        return ("alt", [])
    return ("seq", [non_empty(body), ("rep", body, 0, None if hi is None else hi - 1)])


def is_empty_language(node: Node) -> bool:
    kind = node[0]
    if kind == "chars":
        return not node[1]
    if kind == "seq":
        return any(is_empty_language(n) for n in node[1])
    if kind == "alt":
        return all(is_empty_language(n) for n in node[1])
    return node[2] > 0 and is_empty_language(node[1])


# ---------------------------------------------------------------- writers


def _cp(c: int) -> str:
    """One code point in regex text that survives Lark's unescaping of ``\\x``/``\\u`` escapes."""
    if c < 0x80 and chr(c).isalnum():
        return chr(c)
    if 0x20 <= c < 0x7F:
        return "\\" + chr(c)
    if c < 0x100:
        return f"\\x{c:02x}"
    return f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def class_text(ranges: Ranges) -> str:
    """A Python regex class for the code points (no ``/`` or newline written raw)."""
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _cp(ranges[0][0])
    return f"[{_class_body(ranges)}]"


def _class_body(ranges: Ranges) -> str:
    """The inside of a Python regex class for the code points."""
    return "".join(_cp(lo) if lo == hi else f"{_cp(lo)}-{_cp(hi)}" for lo, hi in ranges)


def write(node: Node, char_text) -> str:
    """The node as Python regex text; ``char_text(ranges)`` writes one character."""
    kind = node[0]
    if kind == "chars":
        return char_text(node[1]) if node[1] else "(?!)"
    if kind == "seq":
        return "".join(write(n, char_text) for n in node[1])
    if kind == "alt":
        alts = [write(n, char_text) for n in node[1] if not is_empty_language(n)]
        return "(?:" + "|".join(alts) + ")" if alts else "(?!)"
    _, body, lo, hi = node
    if hi == 0:
        return ""
    quant = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((lo, hi))
    if quant is None:
        quant = f"{{{lo},}}" if hi is None else (f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}")
    return f"(?:{write(body, char_text)}){quant}"


def raw_regex(node: Node) -> str:
    """The node as plain text (a full-match regex over the characters themselves)."""
    return write(node, class_text)


# "\\x22": Lark unescapes a regex literal, and would read \\" (backslash, quote) as one escaped quote
_SHORT = {0x22: "\\x22", 0x5C: "\\\\", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
_NOT_RAW = ((0, 0x1F), (0x22, 0x22), (0x5C, 0x5C))


def _clip(ranges: Ranges, lo: int, hi: int) -> list[tuple[int, int]]:
    return [(max(a, lo), min(b, hi)) for a, b in ranges if b >= lo and a <= hi]


def json_char(ranges: Ranges) -> str:
    """:func:`_json_char`, memoized for single characters (the literals of a schema: property names, enum strings)."""
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        c = ranges[0][0]
        got = _JSON_CHAR.get(c)
        if got is None:
            got = _JSON_CHAR[c] = _json_char(ranges)
        return got
    return _json_char(ranges)


_JSON_CHAR: dict[int, str] = {}


def _json_char(ranges: Ranges) -> str:
    """One character of the set as ``json.dumps(..., ensure_ascii=False)`` (and serde_json) writes
    it inside a string: raw, except ``"``, ``\\`` and the control characters, which are escaped
    (short escapes where JSON has one, else ``\\u00xx`` in lowercase). One spelling per character:
    the canonical form, in which a fixed string has exactly one lexeme."""
    raw = _subtract(_normalize(list(ranges)), _NOT_RAW)
    escaped = [esc for cp, esc in _SHORT.items() if any(a <= cp <= b for a, b in ranges)]
    controls = [c for a, b in _clip(ranges, 0, 0x1F) for c in range(a, b + 1) if c not in _SHORT]
    escaped += [f"u00{c:02x}" for c in controls]
    alts = ([class_text(raw)] if raw else []) + (["\\\\" + (escaped[0] if len(escaped) == 1 else "(?:" + "|".join(escaped) + ")")] if escaped else [])
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _subtract(ranges: Ranges, minus) -> Ranges:
    comp = _complement(_normalize(list(minus)))
    out = []
    for a, b in ranges:
        out += _clip(comp, a, b)
    return _normalize(out)


def json_regex(node: Node) -> str:
    """The node's strings as they may be written between the quotes of a JSON string."""
    return write(node, json_char)


def json_string_regex(node: Node) -> str:
    """A whole JSON string lexeme (quotes included) whose decoded value is in the node's language."""
    return '"' + json_regex(node) + '"'
