"""Writes the string terminals of grammars/python.lark (STRING, BYTES, FSTRING): their regexes
are long and regular in shape, one alternative per quote kind and rawness, so they are generated.

    python grammars/python_strings.py > /tmp/strings.lark   # then paste between the markers

Each terminal is one regex: Python 3.11's tokenizer decides a string token's extent (a
backslash takes the next character, a short string stops at a newline, a triple-quoted one at
the first unescaped triple quote). Escapes in non-raw literals are checked as the unicode
escape codec checks them (\\x two hex digits, \\u four, \\U eight up to 10FFFF, \\N{...} a
name-like word). Bytes hold ASCII only. F-strings follow 3.11's f-string scanner
(Parser/string_parser.c): ``{{``/``}}`` escapes, replacement fields whose expression part is
not blank, holds no backslash and no ``#``, nests (), [] and {} matched to ``DEPTH`` levels and
strings of the other quote, ends at a top-level ``!``, ``:``, ``=`` or ``}`` that is not part of
``!=``, ``==``, ``<=``, ``>=``; then an optional ``=`` (self-documenting), ``!r``/``!s``/``!a``
and a ``:`` format spec, which may hold replacement fields one level deep.
"""

from __future__ import annotations

DEPTH = 2  # bracket levels inside a replacement field's expression (short quotes): f"{f(a[1])}"
TRIPLE_DEPTH = 2  # the same in triple-quoted f-strings
NUL = r"\x00"
BS = "\\"
CRLF = r"\r\n"


def neg(chars: str) -> str:
    return f"[^{NUL}{chars}]"


HEX = "[0-9a-fA-F]"
UNI_ESC = rf"x{HEX}{{2}}|u{HEX}{{4}}|U(?:000{HEX}{{5}}|0010{HEX}{{4}})|N\{{[A-Za-z0-9 \-]+\}}"


def plain(q: str, triple: bool, raw: bool, kind: str) -> str:
    """The body of a non-f literal: a regex for one element (before the optional quotes of a triple)."""
    c = q[0]
    nl = "" if triple else r"\r\n"
    if kind == "bytes":
        char = ascii_class(c + "\\" + ("" if triple else "\r\n"))
        if raw:
            esc = r"\\(?:\r\n|" + ascii_class("") + ")"
        else:
            esc = rf"\\(?:\r\n|x{HEX}{{2}}|" + ascii_class("x") + ")"
    else:
        char = neg(c + r"\\" + nl)
        if raw:
            esc = rf"\\(?:\r\n|[^{NUL}])"
        else:
            esc = rf"\\(?:\r\n|{UNI_ESC}|[^{NUL}xuUN])"
    return f"(?:{char}|{esc})"


def ascii_class(exclude: str) -> str:
    """[\\x01-\\x7f] without the characters of exclude (which are ASCII), as one class."""
    keep = [chr(i) for i in range(1, 128) if chr(i) not in exclude]
    out, i = [], 0
    while i < len(keep):
        j = i
        while j + 1 < len(keep) and ord(keep[j + 1]) == ord(keep[j]) + 1:
            j += 1
        a, b = keep[i], keep[j]
        out.append(one(a) + ("-" + one(b) if j > i else ""))
        i = j + 1
    return "[" + "".join(out) + "]"


def one(ch: str) -> str:
    """A class endpoint: Lark turns \\xNN into the character itself, so ] \\ ^ - [ are escaped."""
    return "\\" + ch if ch in "]\\^-[" else f"\\x{ord(ch):02x}"


def quoted(q: str, elem: str) -> str:
    """q elem* q, where a triple quote's body holds runs of at most two quotes, each before an element."""
    c = q[0]
    if len(q) == 3:
        return f"{q}(?:{c}{{0,2}}{elem})*{q}"
    # an empty short string is not the start of a triple quote: with an unterminated triple
    # quote the lexer would otherwise back up to "" and read on (Python's tokenizer does not)
    return f"{q}(?!{c}{c}){elem}*{q}"


def fstring_body(q: str, raw: bool) -> str:
    c = q[0]
    depth = TRIPLE_DEPTH if len(q) == 3 else DEPTH
    o = "'" if c == '"' else '"'
    triple = len(q) == 3
    nl = "" if triple else r"\r\n"
    ws = r"[ \t\f\v\r\n]" if triple else r"[ \t\f\v]"
    ws_chars = r" \t\f\v\r\n" if triple else r" \t\f\v"
    # expression parts and format specs hold ASCII only (non-ASCII there is rare; every class
    # that takes UTF-8 adds the states of its multi-byte sequences to each context)
    brackets = "{}()[]'" + '"' + BS + "#"
    excl_nl = "" if triple else "\r\n"
    excl_ws = " \t\f\v\r\n"  # whitespace in a triple-quoted one, impossible in a short one
    nested = o + ascii_class(o + BS + "\r\n") + "*" + o  # a string of the other quote, no backslash
    inner = "(?:" + ascii_class(brackets + excl_nl) + "|" + nested + ")"  # inside brackets
    top = ascii_class(brackets + "!:=<>" + excl_nl)
    top_nows = ascii_class(brackets + "!:=<>" + excl_ws)
    ops = r"[<>!=]=|[<>]"

    # brackets nest to `depth` levels; which closing bracket closes which opening one is not
    # checked (a DFA state per stack of bracket kinds would make the token tables too big)
    def groups(depth: int, braces: bool = True) -> str:
        body = inner
        for _ in range(depth - 1):
            body = rf"(?:{inner}|[(\[{{]{body}*[)\]}}])"
        return (r"[(\[{]" if braces else r"[(\[]") + f"{body}*" + r"[)\]}]"

    def expr(depth: int) -> str:
        elem = f"(?:{top}|{ops}|{nested}|{groups(depth)})"
        first_nobrace = f"(?:{top_nows}|{ops}|{nested}|{groups(depth, braces=False)})"
        first = f"(?:{top_nows}|{ops}|{nested}|{groups(depth)})"
        return f"(?:{first_nobrace}|{ws}+{first}){elem}*"

    spec_char = ascii_class("{}" + c + BS + excl_nl)
    spec_esc = ascii_class("{}" + excl_nl)
    spec2 = f"(?:{spec_char}|\\\\{spec_esc})*"
    tail2 = rf"(?:={ws}*)?(?:![rsa])?(?::{spec2})?\}}"
    nested_field = rf"\{{{expr(max(1, depth - 1))}{tail2}"
    spec = f"(?:{spec_char}|\\\\{spec_esc}|{nested_field})*"
    field = rf"\{{{expr(depth)}(?:={ws}*)?(?:![rsa])?(?::{spec})?\}}"
    lit = neg("{}" + c + r"\\" + nl)
    # one body for raw and non-raw f-strings (the escapes of non-raw ones are not checked: a smaller DFA)
    esc = rf"\\(?:\r\n|[^{NUL}{{}}])"
    braces = rf"\\?(?:\{{\{{|\}}\}}|{field})"
    return f"(?:{lit}|{esc}|{braces})"


QUOTES = ('"""', "'''", '"', "'")  # triple first: Lark's re alternation takes the first that matches


def terminal(kind: str) -> str:
    alts = []
    for raw in (False, True):
        if kind == "string":
            prefix = "[rR]" if raw else "[uU]?"
        elif kind == "bytes":
            prefix = "(?:[bB][rR]|[rR][bB])" if raw else "[bB]"
        else:
            if raw:
                continue
            prefix = "(?:[fF]|[fF][rR]|[rR][fF])"
        bodies = []
        for q in QUOTES:
            elem = fstring_body(q, raw) if kind == "fstring" else plain(q, len(q) == 3, raw, kind)
            bodies.append(quoted(q, elem))
        alts.append(f"{prefix}(?:{'|'.join(bodies)})")
    return "|".join(alts)


def lark_regex(rx: str) -> str:
    return "/" + rx.replace("/", "\\/") + "/"


def main() -> None:
    print("// ---- generated by grammars/python_strings.py (do not edit by hand) ----")
    for name, kind in (("STRING", "string"), ("BYTES", "bytes"), ("FSTRING", "fstring")):
        print(f"{name}.2: {lark_regex(terminal(kind))}")
    print("// ---- end of generated terminals ----")


if __name__ == "__main__":
    main()
