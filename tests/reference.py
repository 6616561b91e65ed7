"""Slow, independent reference checker: the oracle for greatgramma's masks (DESIGN.md section 1).

It derives everything straight from Lark's terminal patterns (matched with the ``regex`` module)
and from Lark's interactive LALR parser. It must never import ``greatgramma``: the engine is
compared against it bit for bit.

Semantics (bytes in, booleans out):

* Lexing is maximal munch with backtracking (what Lark's basic lexer gets from Python's ``re``
  when the longest match wins). The lexer keeps the current lexeme ``cur``. On the next byte
  ``b``: if some terminal is *alive* on ``cur + b`` then ``cur += b``. Otherwise let ``k`` be
  the largest in ``1..len(cur)`` such that ``cur[:k]`` is complete for some terminal *given the
  character that follows it* (that of ``cur[k:] + b``); none: the input is dead. Else the
  winner of ``cur[:k]`` is emitted and ``cur[k:] + b`` is lexed again from an empty lexeme (it
  may emit more, backtrack again, or die). With ``k = len(cur)`` this is plain maximal munch
  with one byte of lookahead: emit ``cur``, continue from ``b``.
  Example: with ``_NL: (/(\\n[\\t ]*)+/ | /r'[^']*'/)+``, ``"\\n  r"`` is alive (a prefix of
  ``"\\n  r'doc'"``) but ``"\\n  re"`` is not: ``_NL("\\n  ")`` is emitted, ``"re"`` re-lexed.
* At the end of input: ``cur`` complete (given the end) is emitted; else its longest complete
  prefix ``cur[:k]`` (given the rest ``cur[k:]``, then the end) is emitted and the rest is lexed
  again and flushed the same way, recursively. No complete prefix: not complete.
* ``alive(T, cur)``: ``cur`` is a prefix of (the UTF-8 encoding of) some lexeme of ``T``.
  ``complete(T, cur)``: ``cur`` is a lexeme of ``T``.
  - Pattern without lazy quantifiers: lexemes are the regex's language
    (``fullmatch(partial=True)`` / ``fullmatch``).
  - Pattern with a lazy quantifier (``*?``, ``+?``, ``??``, ``{m,n}?``): a lexeme is what
    Python's ``re.match`` returns, i.e. ``s`` is a lexeme iff ``match(s)`` ends at ``len(s)``;
    ``cur`` is alive iff some extension ``e`` has ``match(cur + e)`` ending at or after
    ``len(cur)``. That is decided by the *first path in backtracking priority order* that
    either succeeds inside ``cur`` or runs into the end of ``cur`` (see ``_Terminal``).
  - Complete *given the following text* ``f`` (``_Terminal.complete_given``): only a pattern
    with a lookahead or an end/boundary anchor can see past its lexeme; for the others it is
    ``complete``. Otherwise the regex is run on the real text ``cur + f`` (then the end of the
    string): a lazy pattern's ``match`` must end at ``len(cur)``, any other pattern must match
    ``(?:P)(?=<f>\\Z)``. ``f`` is one character when lexing goes on (so a lookahead reading more
    than one character past the lexeme sees a false end of text there), the whole rest when
    flushing at the end of input, "" at the end itself. E.g. ``STRING: /"(?!"").*?"/``: ``""``
    is complete before ``x`` or at the end, not before ``"``. A following character whose bytes
    have not all arrived is stood for by the smallest code point those bytes can begin.
* Text is bytes, patterns are str patterns (Unicode semantics). A trailing incomplete UTF-8
  character is alive iff some code point whose encoding starts with those bytes keeps the
  terminal alive; it is never complete. Bytes that cannot be UTF-8 are never alive. The code
  points are enumerated and tested with the regex; two sound shortcuts only skip candidates
  the regex would reject (a next-character bound from an over-approximating NFA, and "a lazy
  lexeme that just closed takes no further character", see ``_PatternAnalysis`` and
  ``_Terminal._closed_at_end``).
* Winner among terminals complete on ``cur``: higher priority, then a string literal over a
  regex, then Lark's order (larger max_width, longer pattern value, name).
* ``%ignore`` terminals are dropped before the parser sees the sequence.
* Optional indenter postlexer (``indenter=dict(nl=..., open=..., close=..., tab_len=...,
  max_column=...)``): Lark's ``lark.indenter.Indenter`` made exact, applied to the emitted
  terminals after ``%ignore``. It keeps the bracket depth (open +1, close -1; a close at depth 0
  rejects) and an indentation stack ``[0]``. A newline lexeme at depth > 0 is dropped. At depth
  0 it is passed on, and its column is ``s.count(" ") + tab_len * s.count("\\t")`` with ``s`` the
  text after its last ``\\n`` (spaces anywhere on that line count, as in Lark); no ``\\n`` at
  all, or a column >= max_column, rejects. A column above the top is pushed with an INDENT;
  else one DEDENT per level popped while the column is below the top, and a column then
  different from the top rejects. At the end of input: one DEDENT per level above 0.
* Viable: lexes without dying into ``T1..Tk`` + ``cur``, the postlexer passes ``T1..Tk`` and
  the parser accepts the result, and (a) ``cur`` is empty, or (b) some ``T`` alive on ``cur``
  is accepted next (dropped when ignored; the newline terminal: dropped at depth > 0, else
  accepted if *some* completion of ``cur`` into a newline lexeme has a column that the
  indenter and the parser accept, see ``ReferenceChecker._nl_columns``), or (c) the lexer may
  still backtrack into ``cur`` (``cur`` is not complete given some following character; when
  it is complete whatever follows, a dead end emits ``cur`` itself, which is (b)) and ``cur``
  has a complete proper prefix: with the longest one ``cur[:k]`` (given ``cur[k]``) emitted
  and ``cur[k:]`` lexed again from scratch, the state is viable (recursively). E.g. after
  ``if x`` in a grammar with keywords and NAME, ``thend`` is one NAME for good, never
  ``then`` + ``d``; with ``A: "a"``, ``B: "b"``, ``ABC: /ab+c/``, ``ab`` may still end up as
  ``A B``. When ``cur`` ends inside a UTF-8 character, (c) is decided on each byte that can
  continue the character instead: the lexer backs up only where the character kills ``cur``,
  so after ``if`` + a lead byte a letter keeps ``cur`` a NAME and any other character backs up
  to ``if`` and is then lexed again (starting nothing, or something the parser must take).
* Optional semicolon postlexer (``semicolons=dict(nl=..., semicolon=..., after=[...])``): Go's
  automatic semicolon insertion over the emitted terminals after ``%ignore``: a newline lexeme
  becomes ``semicolon`` when the last terminal passed on is one of ``after``, and is dropped
  otherwise; at the end of input the same rule adds a last ``semicolon``.
  Complete: the input flushes at its end (above), the postlexer passes the whole sequence
  (end-of-input dedents included) and the parser accepts it followed by end of input.
"""

from __future__ import annotations

import codecs
import re
from typing import NamedTuple, Optional, Sequence

import regex
from lark import Lark, Token
from lark.exceptions import UnexpectedInput
from lark.lexer import PatternStr

try:  # Python >= 3.11
    import re._parser as _sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]
_c = _sre_parse  # opcode constants (LITERAL, IN, ...) live in the parser module's namespace

__all__ = ["ReferenceChecker"]

MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)

# ----------------------------------------------------------------------------------------------
# UTF-8 helpers


def _split_utf8(data: bytes) -> Optional[tuple[str, bytes]]:
    """Split ``data`` into (decoded complete characters, incomplete trailing bytes).

    Returns None when ``data`` can never be a prefix of valid UTF-8.
    """
    for k in range(0, min(3, len(data)) + 1):
        try:
            head = data[: len(data) - k].decode("utf-8")
        except UnicodeDecodeError:
            continue
        tail = data[len(data) - k :]
        if k == 0:
            return head, b""
        return (head, tail) if _tail_ranges(tail) else None
    return None


def _tail_ranges(tail: bytes) -> tuple[tuple[int, int], ...]:
    """Inclusive code point ranges whose UTF-8 encoding starts with ``tail`` (a proper prefix).

    UTF-8 preserves code point order, so the set is one contiguous range, minus surrogates.
    Empty for bytes that no valid encoding starts with (0xFF, stray continuation, overlong...).
    """
    lead = tail[0]
    if 0xC0 <= lead < 0xE0:
        n, lo_min, hi_max = 2, 0x80, 0x7FF
    elif 0xE0 <= lead < 0xF0:
        n, lo_min, hi_max = 3, 0x800, 0xFFFF
    elif 0xF0 <= lead < 0xF8:
        n, lo_min, hi_max = 4, 0x10000, MAX_CODE_POINT
    else:
        return ()
    if len(tail) >= n or any(not 0x80 <= b < 0xC0 for b in tail[1:]):
        return ()

    def bits(seq: bytes) -> int:
        value = seq[0] & (0x7F >> n)
        for b in seq[1:]:
            value = (value << 6) | (b & 0x3F)
        return value

    pad = n - len(tail)
    lo = max(bits(tail + b"\x80" * pad), lo_min)
    hi = min(bits(tail + b"\xbf" * pad), hi_max)
    ranges = []
    if lo <= min(hi, _SURROGATES[0] - 1):
        ranges.append((lo, min(hi, _SURROGATES[0] - 1)))
    if max(lo, _SURROGATES[1] + 1) <= hi:
        ranges.append((max(lo, _SURROGATES[1] + 1), hi))
    return tuple(ranges)


# ----------------------------------------------------------------------------------------------
# Facts read off a pattern's parse tree (Python's own regex parser): lazy quantifiers, and a
# sound upper bound on the code point of the next character, used only to skip candidates when
# a trailing partial UTF-8 character is enumerated. The bound never decides anything by itself:
# every candidate under it is still tested with the regex.

def _python_set(escape: str, negate: bool) -> str:
    """The code points Python's ``re`` matches with ``escape`` (``\\w`` or ``\\d``), as set
    ranges. Lark's patterns are Python regexes, and the ``regex`` module's Unicode ``\\w``
    and ``\\d`` differ from ``re``'s (``regex`` takes combining marks as word characters,
    ``re`` only what ``str.isalnum()`` takes, and ``_``)."""
    one = re.compile(escape)
    inside = [one.match(chr(c)) is not None for c in range(MAX_CODE_POINT + 1)]
    ranges, start = [], None
    for c in range(MAX_CODE_POINT + 2):
        hit = c <= MAX_CODE_POINT and inside[c] != negate
        if hit and start is None:
            start = c
        elif not hit and start is not None:
            ranges.append("\\U%08x-\\U%08x" % (start, c - 1))
            start = None
    return "".join(ranges)


class _PythonClasses(dict):
    """Category -> the text of a one-character class inside a set, as Python's ``re`` reads it
    (``\\s`` needs no rewrite: both modules agree on it), computed on first use."""

    _ESCAPES = {
        _c.CATEGORY_DIGIT: (r"\d", False),
        _c.CATEGORY_NOT_DIGIT: (r"\d", True),
        _c.CATEGORY_WORD: (r"\w", False),
        _c.CATEGORY_NOT_WORD: (r"\w", True),
    }

    def __missing__(self, key):
        if key in (_c.CATEGORY_SPACE, _c.CATEGORY_NOT_SPACE):
            return r"\s" if key is _c.CATEGORY_SPACE else r"\S"
        escape, negate = self._ESCAPES[key]
        got = self[key] = _python_set(escape, negate)
        return got

    def __contains__(self, key) -> bool:
        return key in self._ESCAPES or key in (_c.CATEGORY_SPACE, _c.CATEGORY_NOT_SPACE)


_CATEGORY_CLASS = _PythonClasses()
_ALL_CHARS: Optional[str] = None
_CLASS_MAX_CACHE: dict[str, int] = {}


def _class_max(char_class: str) -> int:
    """Largest code point matched by a one-character regex (scans every code point once)."""
    global _ALL_CHARS
    if char_class not in _CLASS_MAX_CACHE:
        if _ALL_CHARS is None:
            _ALL_CHARS = "".join(
                chr(c) for c in range(MAX_CODE_POINT, -1, -1) if not _SURROGATES[0] <= c <= _SURROGATES[1]
            )
        m = regex.search(char_class, _ALL_CHARS)  # descending order: the first hit is the max
        _CLASS_MAX_CACHE[char_class] = ord(m.group()) if m else -1
    return _CLASS_MAX_CACHE[char_class]


class _NoAutomaton(Exception):
    """The pattern uses a construct the over-approximating automaton does not model."""


class _Atom:
    """One character-consuming node: a one-character regex and the largest code point it takes."""

    __slots__ = ("text", "max_char", "_compiled", "_seen")

    def __init__(self, op, av, ignorecase: bool, dotall: bool, ascii_only: bool) -> None:
        flags = ("i" if ignorecase else "") + ("s" if dotall else "") + ("a" if ascii_only else "")
        body, plain_max = self._body(op, av)
        self.text = ("(?%s)" % flags if flags else "") + body
        if plain_max is not None and not ignorecase:
            self.max_char = plain_max
        elif body.startswith(("[^", ".", "\\D", "\\S", "\\W")):
            self.max_char = MAX_CODE_POINT  # negated: sound without a scan
        else:
            self.max_char = _class_max(self.text)
        self._compiled = regex.compile(self.text)
        self._seen: dict[str, bool] = {}

    @staticmethod
    def _body(op, av) -> tuple[str, Optional[int]]:
        """(one-character regex, its max code point when known without scanning)."""
        if op is _c.LITERAL:
            return "\\U%08x" % av, av
        if op is _c.NOT_LITERAL:
            return "[^\\U%08x]" % av, None
        if op is _c.ANY:
            return ".", None
        if op is _c.CATEGORY:
            if av not in _CATEGORY_CLASS:
                raise _NoAutomaton(av)
            return "[" + _CATEGORY_CLASS[av] + "]", None
        if op is _c.IN:
            parts, negate, plain_max = [], False, -1
            for item_op, item_av in av:
                if item_op is _c.NEGATE:
                    negate = True
                elif item_op is _c.LITERAL:
                    parts.append("\\U%08x" % item_av)
                    plain_max = max(plain_max, item_av)
                elif item_op is _c.RANGE:
                    parts.append("\\U%08x-\\U%08x" % item_av)
                    plain_max = max(plain_max, item_av[1])
                elif item_op is _c.CATEGORY and item_av in _CATEGORY_CLASS:
                    parts.append(_CATEGORY_CLASS[item_av])
                    plain_max = MAX_CODE_POINT + 1  # not known without a scan
                else:
                    raise _NoAutomaton(item_op)
            body = "[" + ("^" if negate else "") + "".join(parts) + "]"
            return body, (None if negate or plain_max > MAX_CODE_POINT else plain_max)
        raise _NoAutomaton(op)

    def matches(self, ch: str) -> bool:
        hit = self._seen.get(ch)
        if hit is None:
            hit = self._seen[ch] = self._compiled.fullmatch(ch) is not None
        return hit


class _PatternAnalysis:
    """Lazy quantifiers and next-character bounds for one pattern.

    The automaton is a Thompson NFA over the parse tree that accepts a superset of the
    pattern's language: lookarounds and anchors are treated as empty, counted repeats as
    ``?``, ``*`` or ``+``, atomic/possessive as ordinary. The states it reaches after some text
    are therefore a superset of the real ones, and the largest code point its next atoms take
    is a sound bound on the character that can follow that text.
    """

    def __init__(self, pattern: str) -> None:
        parsed = _sre_parse.parse(pattern)
        self.lazy = False  # has a lazy quantifier
        # An anchor other than the start (``$``, ``\Z``, ``\b``...) can test the end of the text
        # without the regex module reporting a partial match; a lookahead that reaches the end
        # does make the match partial, so lookaheads need no flag.
        self.reads_ahead = False
        # A lookahead or an end/boundary anchor can read past the end of a lexeme: whether a
        # text is a lexeme may then depend on the text that follows it (``complete_given``).
        self.looks_past = False
        self._scan(list(parsed))
        self.looks_past = self.looks_past or self.reads_ahead
        self.atoms: list[_Atom] = []
        self.eps: list[list[int]] = [[]]
        self.edges: list[list[tuple[int, int]]] = [[]]
        flags = parsed.state.flags
        self.final = -1  # the accepting node
        try:
            self.final = self._build(
                list(parsed),
                0,
                bool(flags & re.IGNORECASE),
                bool(flags & re.DOTALL),
                bool(flags & re.ASCII),
            )
            self.automaton = True
        except _NoAutomaton:
            self.automaton = False
        self._start = self._closure({0})
        self._steps: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    # -- construction ------------------------------------------------------------------------------
    def _node(self) -> int:
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def _build(self, items, start: int, ic: bool, dotall: bool, ascii_only: bool) -> int:
        cur = start
        for op, av in items:
            if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN, _c.CATEGORY):
                self.atoms.append(_Atom(op, av, ic, dotall, ascii_only))
                nxt = self._node()
                self.edges[cur].append((len(self.atoms) - 1, nxt))
                cur = nxt
            elif op is _c.SUBPATTERN:
                _group, add, delete, sub = av
                cur = self._build(
                    sub,
                    cur,
                    (ic or bool(add & re.IGNORECASE)) and not delete & re.IGNORECASE,
                    (dotall or bool(add & re.DOTALL)) and not delete & re.DOTALL,
                    (ascii_only or bool(add & re.ASCII)) and not delete & re.ASCII,
                )
            elif op is _c.BRANCH:
                end = self._node()
                for alt in av[1]:
                    entry = self._node()
                    self.eps[cur].append(entry)
                    self.eps[self._build(alt, entry, ic, dotall, ascii_only)].append(end)
                cur = end
            elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or op.name == "POSSESSIVE_REPEAT":
                lo, hi, sub = av
                if hi == 0:
                    continue
                entry = self._node()
                self.eps[cur].append(entry)
                body_end = self._build(sub, entry, ic, dotall, ascii_only)
                if hi > 1:
                    self.eps[body_end].append(entry)
                end = self._node()
                self.eps[body_end].append(end)
                if lo == 0:
                    self.eps[cur].append(end)
                cur = end
            elif op.name == "ATOMIC_GROUP":
                cur = self._build(av, cur, ic, dotall, ascii_only)
            elif op in (_c.ASSERT, _c.ASSERT_NOT, _c.AT):
                pass
            else:  # back-references and anything unknown
                raise _NoAutomaton(op)
        return cur

    def _scan(self, items) -> None:
        """Set ``lazy``, ``reads_ahead`` and ``looks_past`` from the whole parse tree."""
        for op, av in items:
            if op is _c.MIN_REPEAT:
                self.lazy = True
            elif op in (_c.ASSERT, _c.ASSERT_NOT) and av[0] == 1:  # a lookahead
                self.looks_past = True
            elif op is _c.AT and av not in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING):
                self.reads_ahead = True
            if op is _c.BRANCH:
                for alt in av[1]:
                    self._scan(list(alt))
            elif isinstance(av, _sre_parse.SubPattern):
                self._scan(list(av))
            elif isinstance(av, tuple):
                for x in av:
                    if isinstance(x, _sre_parse.SubPattern):
                        self._scan(list(x))

    # -- queries -------------------------------------------------------------------------------------
    def _closure(self, nodes: set[int]) -> frozenset[int]:
        todo, seen = list(nodes), set(nodes)
        while todo:
            for m in self.eps[todo.pop()]:
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return frozenset(seen)

    def states_after(self, text: str) -> frozenset[int]:
        """Automaton nodes reached after ``text`` (a superset of the real ones); empty if none."""
        states = self._start
        for ch in text:
            states = self.step(states, ch)
            if not states:
                break
        return states

    def step(self, states: frozenset[int], ch: str) -> frozenset[int]:
        key = (states, ch)
        found = self._steps.get(key)
        if found is None:
            found = self._steps[key] = self._closure(
                {dst for n in states for atom, dst in self.edges[n] if self.atoms[atom].matches(ch)}
            )
        return found

    def next_char_bound(self, text: str) -> int:
        """Upper bound on the code point of a character that may follow ``text`` in a lexeme."""
        if not self.automaton:
            return MAX_CODE_POINT
        states = self._start
        for ch in text:
            states = self._closure(
                {dst for n in states for atom, dst in self.edges[n] if self.atoms[atom].matches(ch)}
            )
            if not states:
                return -1
        return max((self.atoms[a].max_char for n in states for a, _ in self.edges[n]), default=-1)


# ----------------------------------------------------------------------------------------------
# A lazy pattern rewritten around a bug of the ``regex`` module's partial matching.
#
# When a lazy repeat of a one-character item is followed by a literal (``".*?"``), ``regex``
# looks ahead for the literal; with ``partial=True``, reaching the end of the text that way is
# reported as a partial match without checking that the repeat can take the characters skipped:
# ``regex.match('".*?"', '"\\n', partial=True)`` and ``regex.match('"[a-z]*?"', '"A',
# partial=True)`` both report a partial match (regex 2026.5.9). Wrapping the repeated item in an
# atomic group turns the look-ahead off. That changes nothing when the item has a fixed width:
# every way it matches ends at the same position, so only captures could differ, and the
# checker never reads them. The rewritten pattern is rebuilt from Python's own parse tree.

_AT_TEXT = {
    _c.AT_BEGINNING: "^",
    _c.AT_BEGINNING_STRING: r"\A",
    _c.AT_END: "$",
    _c.AT_END_STRING: r"\Z",
    _c.AT_BOUNDARY: r"\b",
    _c.AT_NON_BOUNDARY: r"\B",
}
_GLOBAL_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.ASCII, "a"))


def _flag_letters(flags: int) -> str:
    return "".join(letter for flag, letter in _GLOBAL_FLAG_LETTERS if flags & flag)


def _lazy_safe_pattern(pattern: str) -> str:
    """``pattern`` with every fixed-width item under a lazy quantifier inside ``(?>...)``.

    Raises _NoAutomaton for a construct it cannot rebuild (the caller keeps the original).
    """
    parsed = _sre_parse.parse(pattern)
    flags = _flag_letters(parsed.state.flags)
    return ("(?%s)" % flags if flags else "") + _unparse(list(parsed))


def _unparse(items) -> str:
    out = []
    for op, av in items:
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN, _c.CATEGORY):
            out.append(_Atom._body(op, av)[0])
        elif op is _c.AT:
            if av not in _AT_TEXT:
                raise _NoAutomaton(av)
            out.append(_AT_TEXT[av])
        elif op is _c.SUBPATTERN:
            group, add, delete, sub = av
            on, off = _flag_letters(add), _flag_letters(delete)
            inner = _unparse(sub)
            if on or off:
                inner = "(?%s%s:%s)" % (on, "-" + off if off else "", inner)
            out.append("(%s)" % inner if group is not None else "(?:%s)" % inner)
        elif op is _c.BRANCH:
            out.append("(?:%s)" % "|".join(_unparse(alt) for alt in av[1]))
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or op.name == "POSSESSIVE_REPEAT":
            lo, hi, sub = av
            body = "(?:%s)" % _unparse(sub)
            if op is _c.MIN_REPEAT:
                width_lo, width_hi = sub.getwidth()
                if width_lo == width_hi:
                    body = "(?>%s)" % body
            count = "{%d,%s}" % (lo, "" if hi == _c.MAXREPEAT else hi)
            suffix = "?" if op is _c.MIN_REPEAT else ("+" if op.name == "POSSESSIVE_REPEAT" else "")
            out.append(body + count + suffix)
        elif op.name == "ATOMIC_GROUP":
            out.append("(?>%s)" % _unparse(av))
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            direction, sub = av
            kind = ("=" if op is _c.ASSERT else "!") if direction == 1 else "<" + ("=" if op is _c.ASSERT else "!")
            out.append("(?%s%s)" % (kind, _unparse(sub)))
        elif op is _c.GROUPREF:
            out.append("(?:\\%d)" % av)
        elif op is _c.GROUPREF_EXISTS:
            group, yes, no = av
            out.append("(?(%d)%s%s)" % (group, _unparse(yes), "|" + _unparse(no) if no else ""))
        else:
            raise _NoAutomaton(op)
    return "".join(out)


# ----------------------------------------------------------------------------------------------
# One terminal: alive / complete on byte strings


_LEADING_GLOBAL_FLAGS = re.compile(r"^\(\?[aiLmsux]+\)")


def _python_classes(pattern: str) -> str:
    """``pattern`` with ``\\w \\W \\d \\D`` spelt out as Python's ``re`` reads them (see
    ``_python_set``); unchanged if it has none or is ASCII-only (there the modules agree)."""
    parsed = _sre_parse.parse(pattern)
    if parsed.state.flags & re.ASCII or not _has_unicode_category(list(parsed)):
        return pattern
    flags = _flag_letters(parsed.state.flags)
    return ("(?%s)" % flags if flags else "") + _unparse(list(parsed))


def _has_unicode_category(items) -> bool:
    for op, av in items:
        if op is _c.CATEGORY and av not in (_c.CATEGORY_SPACE, _c.CATEGORY_NOT_SPACE):
            return True
        if op is _c.IN and any(o is _c.CATEGORY and a not in (_c.CATEGORY_SPACE, _c.CATEGORY_NOT_SPACE) for o, a in av):
            return True
        subs: list = []
        if op is _c.SUBPATTERN:
            subs = [av[3]]
        elif op is _c.BRANCH:
            subs = list(av[1])
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT) or op.name == "POSSESSIVE_REPEAT":
            subs = [av[2]]
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            subs = [av[1]]
        elif op.name == "ATOMIC_GROUP":
            subs = [av]
        if any(_has_unicode_category(list(sub)) for sub in subs):
            return True
    return False


class _Terminal:
    """A Lark terminal with byte-level alive/complete tests (cached per lexeme prefix)."""

    def __init__(self, index: int, term_def) -> None:
        self.index = index
        self.name: str = term_def.name
        self.priority: int = term_def.priority
        self.is_string: bool = isinstance(term_def.pattern, PatternStr)
        self.max_width: int = term_def.pattern.max_width
        self.value_len: int = len(term_def.pattern.value)
        self.regexp: str = _python_classes(term_def.pattern.to_regexp())
        self.analysis = _PatternAnalysis(self.regexp)
        self.lazy = self.analysis.lazy
        self._full = regex.compile(self.regexp)
        if self.lazy:
            # First path in priority order that either succeeds or reaches the end of the text:
            # a success that ends before the end hits \Z, fails, and backtracks into (*PRUNE),
            # which fails the whole match without trying lower-priority paths. A success at the
            # end, or a path that runs into the end, gives a partial match. (The plain
            # partial=True match prefers any complete match over an earlier partial path.)
            try:
                safe = _lazy_safe_pattern(self.regexp)
            except _NoAutomaton:  # pragma: no cover - a construct the rebuild does not know
                safe = self.regexp
            m = _LEADING_GLOBAL_FLAGS.match(safe)
            flags, body = (m.group(), safe[m.end() :]) if m else ("", safe)
            # The empty group after (*PRUNE) is set only when the event was a success at the end.
            self._prefix = regex.compile(flags + r"(?:" + body + r")(*PRUNE)()(?:\Z[\s\S])")
            self._end_group = self._prefix.groups
        self._alive_cache: dict[bytes, bool] = {}
        self._complete_cache: dict[bytes, bool] = {}
        self._given_cache: dict[tuple[bytes, str], bool] = {}

    # -- on text --------------------------------------------------------------------------------
    def _alive_text(self, text: str) -> bool:
        if self.lazy:
            return self._prefix.match(text, partial=True) is not None
        return self._full.fullmatch(text, partial=True) is not None

    def _closed_at_end(self, text: str) -> bool:
        """Lazy pattern: is the first event on ``text`` a match that ends exactly at its end?

        Then every path before it in priority order failed inside ``text`` without touching
        its end (a lookahead that reaches the end makes the match partial instead), so it stays
        so after one more character, while the match now ends before the end: no extension is
        alive. End anchors test the end silently, so patterns with them are excluded.
        """
        if not self.lazy or self.analysis.reads_ahead:
            return False
        m = self._prefix.match(text, partial=True)
        return m is not None and m.start(self._end_group) >= 0

    def _complete_text(self, text: str) -> bool:
        if self.lazy:
            m = self._full.match(text)
            return m is not None and m.end() == len(text)
        return self._full.fullmatch(text) is not None

    # -- on bytes -------------------------------------------------------------------------------
    def alive(self, data: bytes) -> bool:
        """Is ``data`` a prefix of the UTF-8 encoding of some lexeme?"""
        cached = self._alive_cache.get(data)
        if cached is None:
            cached = self._alive_cache[data] = self._compute_alive(data)
        return cached

    def _compute_alive(self, data: bytes) -> bool:
        split = _split_utf8(data)
        if split is None:
            return False
        text, tail = split
        if not self._alive_text(text):
            return False
        if not tail:
            return True
        if self._closed_at_end(text):
            return False
        bound = self.analysis.next_char_bound(text)
        for lo, hi in _tail_ranges(tail):
            for cp in range(lo, min(hi, bound) + 1):
                if self._alive_text(text + chr(cp)):
                    return True
        return False

    def complete(self, data: bytes) -> bool:
        """Is ``data`` the UTF-8 encoding of a lexeme?"""
        cached = self._complete_cache.get(data)
        if cached is None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                cached = False
            else:
                cached = self._complete_text(text)
            self._complete_cache[data] = cached
        return cached

    def complete_given(self, data: bytes, follow: str) -> bool:
        """Is ``data`` a lexeme when the text ``follow`` (then the end of the text) comes after it?

        Only a lookahead or an end/boundary anchor can see past the lexeme; for every other
        pattern this is ``complete(data)``. Otherwise Python's matching is run on the real text
        ``lexeme + follow``: a lazy pattern's ``match`` must end exactly at the lexeme's end; any
        other pattern must match the lexeme exactly, i.e. ``(?:P)(?=<follow>\\Z)`` matches.
        """
        if not follow or not self.analysis.looks_past:
            return self.complete(data)
        key = (data, follow)
        cached = self._given_cache.get(key)
        if cached is None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                cached = False
            else:
                if self.lazy:
                    m = self._full.match(text + follow)
                    cached = m is not None and m.end() == len(text)
                else:
                    m = _LEADING_GLOBAL_FLAGS.match(self.regexp)
                    flags, body = (m.group(), self.regexp[m.end() :]) if m else ("", self.regexp)
                    pattern = flags + "(?:" + body + ")(?=" + regex.escape(follow) + r"\Z)"
                    cached = regex.match(pattern, text + follow) is not None
            self._given_cache[key] = cached
        return cached

    def sort_key(self) -> tuple:
        """Smaller wins: priority, string literal over regex, then Lark's own terminal order."""
        return (-self.priority, not self.is_string, -self.max_width, -self.value_len, self.name)

    def __repr__(self) -> str:
        return f"_Terminal({self.name}, {self.regexp!r}, lazy={self.lazy})"


# ----------------------------------------------------------------------------------------------
# The checker


def _first_char(data: bytes) -> str:
    """The first character of ``data``, as the text that follows a lexeme (one character).

    A character whose bytes have not all arrived is stood for by the smallest code point its
    bytes can begin; bytes that begin no character give "" (the input dies on them anyway).
    """
    for n in range(1, min(4, len(data)) + 1):
        try:
            return data[:n].decode("utf-8")
        except UnicodeDecodeError:
            continue
    ranges = _tail_ranges(data) if 0 < len(data) < 4 else ()
    return chr(ranges[0][0]) if ranges else ""


def _last_character_start(data: bytes) -> Optional[int]:
    """Where the last of ``data``'s (at most 4) final bytes that is not a continuation byte stands: the
    start of the last character; None if there is none."""
    return max((i for i in range(max(0, len(data) - 4), len(data)) if not 0x80 <= data[i] < 0xC0), default=None)


def _unfinished_character(data: bytes) -> bool:
    """``data`` ends inside a UTF-8 character: its bytes are not all there yet."""
    start = _last_character_start(data)
    if start is None:
        return False
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    decoder.decode(data[start:])
    return bool(decoder.getstate()[0])  # bytes held back, waiting for the rest of a character


def _follow_text(data: bytes) -> str:
    """All of ``data`` as text (the rest of the input at its end), a trailing partial character
    stood for as in ``_first_char``."""
    split = _split_utf8(data)
    if split is None:
        return ""
    head, tail = split
    return head + (_first_char(tail) if tail else "")


class LexState(NamedTuple):
    """Lexer state after some bytes: emitted (terminal name, lexeme) pairs, current lexeme,
    and the indices of the terminals alive on the current lexeme (all of them when empty)."""

    lexemes: tuple[tuple[str, bytes], ...]
    cur: bytes
    alive: tuple[int, ...]


class PostState(NamedTuple):
    """After the postlexer: terminal names for the parser, bracket depth, indentation stack."""

    seq: tuple[str, ...]
    depth: int
    stack: tuple[int, ...]


class SemicolonConfig(NamedTuple):
    nl: str
    semicolon: str
    after: frozenset


class _Keep:
    """A pass-through Lark postlexer: keeps the newline terminal in Lark's lexer although no rule uses it."""

    def __init__(self, name: str) -> None:
        self.always_accept = (name,)

    def process(self, stream):
        return stream


class IndenterConfig(NamedTuple):
    nl: str
    indent: str
    dedent: str
    open: frozenset
    close: frozenset
    tab_len: int
    max_column: int
    line_start: bool


# Text put between the current lexeme and trailing spaces/tabs when the completions of a
# partial newline lexeme are enumerated (``ReferenceChecker._nl_columns``).
_NL_BRIDGES = (b"", b"\n", b"\r\n", b"/\n", b"*/\n", b'"""\n', b"'''\n", b'"\n', b"'\n")

_START = PostState((), 0, (0,))
# Every character that can follow a lexeme, as ``_first_char`` sees the byte after it.
_FOLLOW_CHARS = tuple(sorted({_first_char(bytes((b,))) for b in range(256)}))


class ReferenceChecker:
    """Decide viability and completeness of byte prefixes for a Lark LALR grammar.

    ``viable(p)``: some terminal sequence consistent with lexing ``p`` is a parser prefix.
    ``complete(p)``: ``p`` lexes (flushing the last lexeme) into a sentence of the grammar.
    ``allowed(p, toks)``: ``[t is not None and t != b"" and viable(p + t) for t in toks]``.

    ``indenter``: None, or a dict configuring an indentation postlexer (Lark's
    ``lark.indenter.Indenter`` made exact, see the module docstring) with keys ``nl`` (newline
    terminal name), ``indent`` / ``dedent`` (default ``"_INDENT"`` / ``"_DEDENT"``, declared in
    the grammar with ``%declare``), ``open`` / ``close`` (bracket terminal names), ``tab_len``
    (default 8), ``max_column`` (required: columns >= max_column are rejected) and ``line_start``
    (default False: the text is read as if it followed a newline, so the first line's
    indentation counts, as Python reads a file).
    """

    def __init__(
        self, grammar_text: str, start: str = "start", indenter: Optional[dict] = None, semicolons: Optional[dict] = None
    ) -> None:
        self.semicolons = None if semicolons is None else SemicolonConfig(
            semicolons.get("nl", "NEWLINE"), semicolons.get("semicolon", "SEMICOLON"), frozenset(semicolons["after"])
        )  # fmt: skip
        postlex = None if self.semicolons is None else _Keep(self.semicolons.nl)
        self.lark = Lark(grammar_text, parser="lalr", lexer="basic", start=start, postlex=postlex)
        conf = self.lark.lexer_conf
        self.terminals = [_Terminal(i, td) for i, td in enumerate(conf.terminals)]
        self.ignore = frozenset(conf.ignore)
        self._all = tuple(range(len(self.terminals)))
        self._alive_sets: dict[bytes, tuple[int, ...]] = {b"": self._all}
        self._winners: dict[tuple[bytes, str], Optional[str]] = {}
        root = self.lark.parse_interactive("")
        self._parsers: dict[tuple[str, ...], Optional[object]] = {(): root}
        self._eof: dict[tuple[str, ...], bool] = {}
        self._backtracks: dict[bytes, bool] = {}
        self.indenter: Optional[IndenterConfig] = None
        if indenter is not None:
            extra = set(indenter) - {"nl", "indent", "dedent", "open", "close", "tab_len", "max_column", "line_start"}
            if extra:
                raise TypeError(f"unknown indenter option(s) {sorted(extra)}")
            ind = self.indenter = IndenterConfig(
                nl=indenter["nl"],
                indent=indenter.get("indent", "_INDENT"),
                dedent=indenter.get("dedent", "_DEDENT"),
                open=frozenset(indenter.get("open", ())),
                close=frozenset(indenter.get("close", ())),
                tab_len=int(indenter.get("tab_len", 8)),
                max_column=int(indenter["max_column"]),
                line_start=bool(indenter.get("line_start", False)),
            )
            by_name = {t.name: t for t in self.terminals}
            if ind.nl not in by_name:
                raise ValueError(f"newline terminal {ind.nl!r} is not a terminal of the grammar")
            self._nl_term = by_name[ind.nl]
            self._nl_cols: dict[bytes, frozenset[int]] = {}
            self._nl_bfs: dict[tuple, tuple] = {}
            k, tl = ind.max_column, ind.tab_len
            runs = [(s, t) for t in range(max(0, k - 1) // tl + 1) for s in range(max(0, k - t * tl))]
            ws = {b" " * s + b"\t" * t for s, t in runs} | {b"\t" * t + b" " * s for s, t in runs}
            self._ws_runs = sorted(ws, key=lambda w: (len(w), w))

    # -- lexer ------------------------------------------------------------------------------------
    def _alive_set(self, candidates: tuple[int, ...], cur: bytes) -> tuple[int, ...]:
        """Terminals alive on ``cur``; ``candidates`` must contain those alive on ``cur[:-1]``
        (alive is prefix-closed)."""
        found = self._alive_sets.get(cur)
        if found is None:
            terms = self.terminals
            found = self._alive_sets[cur] = tuple(i for i in candidates if terms[i].alive(cur))
        return found

    def winner(self, cur: bytes, follow: str = "") -> Optional[str]:
        """Name of the terminal emitted for lexeme ``cur`` when the text ``follow`` comes after
        it ("" = the end of the input), or None if no terminal is complete on it there."""
        key = (cur, follow)
        if key not in self._winners:
            done = [t for t in self.terminals if t.complete_given(cur, follow)]
            self._winners[key] = min(done, key=_Terminal.sort_key).name if done else None
        return self._winners[key]

    def _longest_complete(self, cur: bytes, follow_of, top: int) -> tuple[int, Optional[str]]:
        """Largest k in 1..top with ``cur[:k]`` complete given ``follow_of(k)``, and its winner."""
        for k in range(top, 0, -1):
            name = self.winner(cur[:k], follow_of(k))
            if name is not None:
                return k, name
        return 0, None

    def initial_state(self) -> LexState:
        """Before any output; with the indenter's ``line_start``, after a virtual newline."""
        empty = LexState((), b"", self._all)
        return self.feed(empty, b"\n") if self.indenter is not None and self.indenter.line_start else empty

    def feed(self, state: Optional[LexState], data: bytes) -> Optional[LexState]:
        """Continue lexing ``data`` from ``state``; None once the input is dead.

        Maximal munch with backtracking: when no terminal is alive on ``cur + b``, the longest
        prefix ``cur[:k]`` complete given the character after it (that of ``cur[k:] + b``) is
        emitted and ``cur[k:] + b`` is lexed again from an empty lexeme.
        """
        if state is None:
            return None
        lexemes, cur, alive = state
        emitted: list[tuple[str, bytes]] = []
        todo, i = bytes(data), 0
        while i < len(todo):
            byte = todo[i : i + 1]
            nxt = cur + byte
            nxt_alive = self._alive_set(alive, nxt)
            if nxt_alive:
                cur, alive = nxt, nxt_alive
                i += 1
                continue
            if not cur:
                return None
            k, name = self._longest_complete(cur, lambda k: _first_char(cur[k:] + byte), len(cur))
            if name is None:
                return None
            emitted.append((name, cur[:k]))
            todo, i = cur[k:] + todo[i:], 0
            cur, alive = b"", self._all
        if emitted:
            lexemes = lexemes + tuple(emitted)
        return LexState(lexemes, cur, alive)

    def flush(self, state: Optional[LexState]) -> Optional[tuple[tuple[str, bytes], ...]]:
        """All lexemes at the end of the input, or None if the current lexeme cannot be
        emitted: it is emitted if complete, else its longest complete prefix (given the rest of
        it, then the end) is, and the rest is lexed again and flushed, recursively."""
        if state is None:
            return None
        lexemes, cur = state.lexemes, state.cur
        while cur:
            text = cur
            k, name = self._longest_complete(text, lambda k: _follow_text(text[k:]), len(text))
            if name is None:
                return None
            lexemes = lexemes + ((name, text[:k]),)
            if k == len(text):
                break
            nxt = self.feed(LexState(lexemes, b"", self._all), text[k:])
            if nxt is None:
                return None
            lexemes, cur = nxt.lexemes, nxt.cur
        return lexemes

    def lex_state(self, data: bytes) -> Optional[LexState]:
        return self.feed(self.initial_state(), data)

    def lex(self, data: bytes) -> Optional[tuple[list[str], bytes]]:
        """Terminals the parser sees for ``data`` (ignored ones dropped, the indenter applied)
        and the current lexeme; None if the lexer dies or the indenter rejects. The current
        lexeme is not flushed."""
        state = self.lex_state(data)
        if state is None:
            return None
        seq = self.parser_terminals(state.lexemes)
        return None if seq is None else (list(seq), state.cur)

    def lex_complete(self, data: bytes) -> Optional[list[str]]:
        """Terminals the parser sees for the whole input ``data``, the end-of-input dedents
        included; None if it does not lex or the indenter rejects it."""
        lexemes = self.flush(self.lex_state(data))
        post = None if lexemes is None else self._post(lexemes)
        return None if post is None else list(self._end_seq(post))

    # -- between lexer and parser: %ignore and the indenter ------------------------------------
    def parser_terminals(self, lexemes: Sequence[tuple[str, bytes]]) -> Optional[tuple[str, ...]]:
        """Terminal names the parser sees for emitted ``(name, lexeme)`` pairs (not the end of
        input): ``%ignore`` terminals dropped, the indenter applied. None if the indenter rejects."""
        post = self._post(tuple(lexemes))
        return None if post is None else post.seq

    def _post(self, lexemes: tuple, base: Optional[tuple[int, PostState]] = None) -> Optional[PostState]:
        """Postlexer state after ``lexemes``, continuing from ``base`` = (n, state after
        ``lexemes[:n]``) when given."""
        n, post = base if base is not None else (0, _START)
        for name, text in lexemes[n:]:
            post = self._post_step(post, name, text)
            if post is None:
                return None
        return post

    def _post_step(self, post: PostState, name: str, text: bytes) -> Optional[PostState]:
        if name in self.ignore:
            return post
        semi = self.semicolons
        if semi is not None and name == semi.nl:
            return PostState(post.seq + (semi.semicolon,), 0, post.stack) if self._inserts(post.seq) else post
        ind = self.indenter
        if ind is None:
            return PostState(post.seq + (name,), 0, post.stack)
        if name == ind.nl:
            if post.depth > 0:
                return post  # inside brackets: dropped
            column = self._column(text)
            return None if column is None else self._newline(post, column)
        depth = post.depth
        if name in ind.open:
            depth += 1
        elif name in ind.close:
            if depth == 0:
                return None
            depth -= 1
        return PostState(post.seq + (name,), depth, post.stack)

    def _column(self, text: bytes) -> Optional[int]:
        """Column of a newline lexeme: spaces plus tab_len * tabs after its last newline;
        None (rejected) without a newline, or at max_column and beyond."""
        ind = self.indenter
        assert ind is not None
        if b"\n" not in text:
            return None
        last = text.rsplit(b"\n", 1)[1]
        column = last.count(b" ") + ind.tab_len * last.count(b"\t")
        return column if column < ind.max_column else None

    def _newline(self, post: PostState, column: int) -> Optional[PostState]:
        """A newline at depth 0 with ``column``: NL, then INDENT or DEDENTs; None on a bad dedent."""
        ind = self.indenter
        assert ind is not None
        seq, stack = post.seq + (ind.nl,), post.stack
        if column > stack[-1]:
            return PostState(seq + (ind.indent,), 0, stack + (column,))
        while column < stack[-1]:
            stack = stack[:-1]
            seq = seq + (ind.dedent,)
        if column != stack[-1]:
            return None
        return PostState(seq, 0, stack)

    def _inserts(self, seq: tuple[str, ...]) -> bool:
        """Does a newline (or the end) after ``seq`` become a semicolon?"""
        return bool(seq) and seq[-1] in self.semicolons.after

    def _end_seq(self, post: PostState) -> tuple[str, ...]:
        """The parser's terminals at the end of input: one DEDENT per open indentation level, or
        the semicolon the end inserts."""
        if self.semicolons is not None:
            return post.seq + (self.semicolons.semicolon,) * self._inserts(post.seq)
        if self.indenter is None:
            return post.seq
        return post.seq + (self.indenter.dedent,) * (len(post.stack) - 1)

    def _nl_columns(self, cur: bytes) -> frozenset[int]:
        """Columns (< max_column) of the newline lexemes (holding a newline) that complete ``cur``.

        A column only depends on the spaces and tabs after the lexeme's last newline, and the
        indenter and parser only on the column, so it is enough to find, for every column, one
        completion reaching it. Two searches, each completion checked with the regex itself
        (so a column is never reported without a real completion):

        * ``_nl_search``: breadth-first over the terminal's automaton; it misses nothing when the
          automaton is exact (no lookaround, lazy or counted repeat in the pattern), as for the
          test grammars' newline terminals (``\\r?\\n[\\t ]*`` runs, ``//`` comments, raw
          docstrings).
        * ``cur + bridge + ws`` for each bridge in ``_NL_BRIDGES`` ("", a newline, or a closer of
          a comment or string then a newline) and each run ``ws`` of spaces and tabs of column
          < max_column: enough for newline terminals made of ``\\r?\\n[\\t ]*`` runs and
          one-line or closed comments, whatever their automaton.

        A trailing partial UTF-8 character is first completed with the first few code points
        that keep the terminal alive (inside a comment every character is as good as another).
        A newline terminal that defeats both searches only makes this checker stricter.
        """
        found = self._nl_cols.get(cur)
        if found is None and (_split_utf8(cur) or ("", b""))[1]:
            # A trailing partial character: complete it first, with the first few code points
            # that keep the terminal alive (comments take any character, so one would do).
            tail = _split_utf8(cur)[1]  # type: ignore[index]
            term, cols, tried = self._nl_term, set(), 0
            for lo, hi in _tail_ranges(tail):
                for cp in range(lo, hi + 1):
                    full = cur[: len(cur) - len(tail)] + chr(cp).encode()
                    if term.alive(full):
                        cols |= self._nl_columns(full)
                        tried += 1
                        if tried >= 4:
                            break
                if tried >= 4:
                    break
            found = self._nl_cols[cur] = frozenset(cols)
        if found is None:
            term, cols = self._nl_term, set(self._nl_search(cur))
            for bridge in _NL_BRIDGES:
                head = cur + bridge
                if bridge and not term.alive(head):
                    continue
                for ws in self._ws_runs:
                    text = head + ws
                    column = self._column(text)
                    if column is not None and column not in cols and term.complete(text):
                        cols.add(column)
            found = self._nl_cols[cur] = frozenset(cols)
        return found

    def _nl_search(self, cur: bytes) -> dict[int, bytes]:
        """Columns reached by completions of ``cur`` (complete characters) into a newline
        lexeme, with a witness each: a breadth-first search over the newline terminal's
        automaton (``_PatternAnalysis``), its state being (automaton nodes, column of the line
        so far capped at max_column, whether a newline was seen). Characters: space, tab,
        newline and one representative of every other class of ASCII (and a few non-ASCII)
        characters that the automaton's atoms tell apart. Every witness is checked with the
        regex itself, so a column is only reported with a real completion; the search misses
        none when the automaton is exact (no lookaround, lazy or counted repeat in the
        pattern), else the bridges of ``_nl_columns`` help."""
        an, term = self._nl_term.analysis, self._nl_term
        ind = self.indenter
        assert ind is not None
        if not an.automaton:
            return {}
        try:
            text = cur.decode("utf-8")
        except UnicodeDecodeError:
            return {}
        states = an.states_after(text)
        if not states:
            return {}
        k, tl = ind.max_column, ind.tab_len
        last = text.rsplit("\n", 1)[-1]
        start = (states, min(last.count(" ") + tl * last.count("\t"), k), "\n" in text)
        found: dict[int, bytes] = {}
        for column, extensions in self._nl_candidates(start):
            for extension in extensions:
                witness = cur + extension.encode("utf-8")
                if term.complete(witness):
                    found[column] = witness
                    break
        return found

    def _nl_candidates(self, start: tuple) -> tuple[tuple[int, tuple[str, ...]], ...]:
        """The search of ``_nl_search`` from automaton state ``start``: for each column, the
        first few (shortest) extensions that end in an accepting node with that column."""
        cached = self._nl_bfs.get(start)
        if cached is not None:
            return cached
        an = self._nl_term.analysis
        ind = self.indenter
        assert ind is not None
        k, tl, per_column = ind.max_column, ind.tab_len, 3
        seen: dict[tuple, str] = {start: ""}
        todo = [start]
        candidates: dict[int, list[str]] = {}
        alphabet = self._nl_alphabet()
        while todo:
            nxt_todo = []
            for key in todo:
                nodes, column, has_nl = key
                extension = seen[key]
                if has_nl and column < k and an.final in nodes:
                    found = candidates.setdefault(column, [])
                    if len(found) < per_column:
                        found.append(extension)
                for ch in alphabet:
                    after = an.step(nodes, ch)
                    if not after:
                        continue
                    if ch == "\n":
                        key2 = (after, 0, True)
                    elif ch == " ":
                        key2 = (after, min(column + 1, k), has_nl)
                    elif ch == "\t":
                        key2 = (after, min(column + tl, k), has_nl)
                    else:
                        key2 = (after, column, has_nl)
                    if key2 not in seen:
                        seen[key2] = extension + ch
                        nxt_todo.append(key2)
            todo = nxt_todo
        result = self._nl_bfs[start] = tuple((c, tuple(e)) for c, e in sorted(candidates.items()))
        return result

    def _nl_alphabet(self) -> tuple[str, ...]:
        alphabet = getattr(self, "_nl_chars", None)
        if alphabet is None:
            atoms = self._nl_term.analysis.atoms
            reps: dict[tuple[bool, ...], str] = {}
            for ch in [chr(c) for c in range(128)] + ["\u00e9", "\u00a0", "\u0085", "\u2028", "\u4e2d", "\U0001f600"]:
                if ch not in " \t\n":
                    reps.setdefault(tuple(atom.matches(ch) for atom in atoms), ch)
            alphabet = self._nl_chars = (" ", "\t", "\n", *reps.values())
        return alphabet

    # -- parser -----------------------------------------------------------------------------------
    def _parser_after(self, seq: tuple[str, ...]):
        """Lark interactive parser after feeding ``seq``, or None if it rejects ``seq``."""
        parsers = self._parsers
        if seq in parsers:
            return parsers[seq]
        n = len(seq)
        while seq[:n] not in parsers:
            n -= 1
        ip = parsers[seq[:n]]
        for k in range(n, len(seq)):
            if ip is not None:
                ip = _copy(ip)
                try:
                    ip.feed_token(Token(seq[k], ""))
                except UnexpectedInput:
                    ip = None
            parsers[seq[: k + 1]] = ip
        return ip

    def parser_accepts_prefix(self, seq: Sequence[str]) -> bool:
        return self._parser_after(tuple(seq)) is not None

    def parser_accepts(self, seq: Sequence[str]) -> bool:
        """Does the parser accept ``seq`` followed by the end of input?"""
        seq = tuple(seq)
        if seq not in self._eof:
            ip = self._parser_after(seq)
            ok = False
            if ip is not None:
                try:
                    _copy(ip).feed_eof()
                    ok = True
                except UnexpectedInput:
                    ok = False
            self._eof[seq] = ok
        return self._eof[seq]

    # -- decisions on lexer states -------------------------------------------------------------
    def _accepted_next(self, post: PostState, name: str, cur: bytes) -> bool:
        """Is a lexeme of terminal ``name`` growing out of ``cur`` accepted next (or dropped)?"""
        if name in self.ignore:
            return True
        if self.semicolons is not None and name == self.semicolons.nl:
            return self._parser_after(self._post_step(post, name, cur).seq) is not None
        ind = self.indenter
        if ind is not None:
            if name == ind.nl:
                if post.depth > 0:
                    return True  # dropped inside brackets
                for column in self._nl_columns(cur):
                    nxt = self._newline(post, column)
                    if nxt is not None and self._parser_after(nxt.seq) is not None:
                        return True
                return False
            if name in ind.close and post.depth == 0:
                return False
        return self._parser_after(post.seq + (name,)) is not None

    def state_viable(self, state: Optional[LexState], base: Optional[tuple[int, PostState]] = None) -> bool:
        """The emitted terminals are a parser prefix and (a) ``cur`` is empty, or (b) some
        terminal alive on ``cur`` is accepted next, or (c) the lexer may backtrack into ``cur``
        and, with ``cur``'s longest complete proper prefix (given the character after it)
        emitted and the rest lexed again from scratch, the state is viable. ``base`` = (n, postlexer state after
        ``state.lexemes[:n]``) only saves recomputing it."""
        if state is None:
            return False
        post = self._post(state.lexemes, base)
        if post is None or self._parser_after(post.seq) is None:
            return False
        cur = state.cur
        if not cur:
            return True
        for i in state.alive:
            if self._accepted_next(post, self.terminals[i].name, cur):
                return True
        if not self._may_backtrack(cur):
            return False
        if _unfinished_character(cur):
            # (c) backs up only on the bytes that kill cur, and the relexed bytes go on with
            # them: run the bytes that continue the character (any other byte leaves invalid
            # UTF-8 behind, which no terminal ever matches) and look at each state they give.
            if self._no_finish_viable(state, post):
                return False
            return any(self.state_viable(self.feed(state, bytes((b,))), base or (len(state.lexemes), post))
                       for b in range(0x80, 0xC0))
        k, name = self._longest_complete(cur, lambda k: _first_char(cur[k:]), len(cur) - 1)
        if name is None:
            return False
        n = len(state.lexemes)
        nxt = self.feed(LexState(state.lexemes + ((name, cur[:k]),), b"", self._all), cur[k:])
        return self.state_viable(nxt, (n, post))

    def _no_finish_viable(self, state: LexState, post: PostState) -> bool:
        """No way of finishing ``cur``'s unfinished character can be viable, seen without trying
        them (up to 2^18 for a 4-byte one): the terminals alive after any of them are among those
        alive now, and the parser takes none of these next (a newline terminal's answer depends
        on its text: then try them); and backing up emits a prefix of ``cur`` before the
        character as a terminal the parser refuses there, or none is complete (the prefix that
        ends before the character: whatever character follows)."""
        cur, lexemes = state.cur, state.lexemes
        texted = {c.nl for c in (self.indenter, self.semicolons) if c is not None}
        for i in state.alive:
            name = self.terminals[i].name
            if name in texted or self._accepted_next(post, name, cur):
                return False
        start = _last_character_start(cur)  # the unfinished character's lead byte
        for k in range(1, start + 1):
            follows = (_first_char(cur[k:]),) if k < start else (*_FOLLOW_CHARS, "")
            for name in {self.winner(cur[:k], f) for f in follows} - {None}:
                after = self._post(lexemes + ((name, cur[:k]),), (len(lexemes), post))
                if after is not None and self._parser_after(after.seq) is not None:
                    return False
        return True

    def _may_backtrack(self, cur: bytes) -> bool:
        """Can the lexer ever backtrack into ``cur``, i.e. is ``cur`` not complete given some
        following character? (If it is complete whatever follows, a dead end after it emits
        ``cur`` itself, never a proper prefix: that case is (b).) Without lookaheads: ``cur`` is
        not complete."""
        found = self._backtracks.get(cur)
        if found is None:
            if not any(self.terminals[i].analysis.looks_past for i in self._alive_set(self._all, cur)):
                found = self.winner(cur) is None
            else:
                found = any(self.winner(cur, f) is None for f in _FOLLOW_CHARS)
            self._backtracks[cur] = found
        return found

    def state_complete(self, state: Optional[LexState]) -> bool:
        lexemes = self.flush(state)
        if lexemes is None:
            return False
        post = self._post(lexemes)
        return post is not None and self.parser_accepts(self._end_seq(post))

    # -- public API -------------------------------------------------------------------------------
    def viable(self, prefix: bytes) -> bool:
        """Is ``prefix`` viable (lexes without dying and its terminals are a parser prefix)?"""
        return self.state_viable(self.lex_state(prefix))

    def complete(self, prefix: bytes) -> bool:
        """Is ``prefix`` a complete sentence (EOS allowed here)?"""
        return self.state_complete(self.lex_state(prefix))

    def allowed(self, prefix: bytes, token_bytes: Sequence[Optional[bytes]]) -> list[bool]:
        """``[t is not None and t != b"" and viable(prefix + t) for t in token_bytes]``,
        lexing ``prefix`` once."""
        state = self.lex_state(prefix)
        post = None if state is None else self._post(state.lexemes)
        if state is None or post is None:
            return [False] * len(token_bytes)
        base = (len(state.lexemes), post)
        if not self.state_viable(state, base):
            return [False] * len(token_bytes)  # viability is prefix-closed
        return [bool(tok) and self.state_viable(self.feed(state, tok), base) for tok in token_bytes]


def _copy(ip):
    try:
        return ip.copy(deepcopy_values=False)
    except TypeError:  # pragma: no cover - older Lark
        return ip.copy()
