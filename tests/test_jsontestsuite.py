"""grammars/json.lark is RFC 8259: JSONTestSuite's parsing cases, byte by byte through the Masker and whole through Lark.

The grammar is compiled once for a byte-level vocabulary (256 one-byte tokens, then EOS) and each
file walked with ``gg.Masker``: at each byte, is its token in the mask? Every ``y_`` file is
accepted byte by byte with EOS allowed at the end; every ``n_`` file is refused at some byte or
left incomplete (EOS not allowed). What the ``i_`` files (either answer conforms) do is in
tests/data/jsontestsuite/i_outcomes.json, so a change shows; rewrite it with
``python tests/test_jsontestsuite.py --write``. Lark, with the same grammar, agrees on every
``y_``/``n_`` file that is valid UTF-8.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

import lark
import pytest
from helpers import GRAMMARS, TEST_DATA, bit

import greatgramma as gg

GRAMMAR = GRAMMARS / "json.lark"
SUITE = TEST_DATA / "jsontestsuite" / "test_parsing"
I_OUTCOMES = TEST_DATA / "jsontestsuite" / "i_outcomes.json"
EOS = 256  # the byte-level vocabulary: id b is the byte b, then EOS
COUNTS = {"y": 95, "n": 188, "i": 35}  # the vendored suite (a file lost in copying shows here)


def cases(kind: str) -> list[Path]:
    """The suite's files of a kind (``y``, ``n`` or ``i``), sorted by name."""
    return sorted(SUITE.glob(f"{kind}_*.json"))


def utf8_text(path: Path) -> str | None:
    """The file's text, or None when it is not valid UTF-8."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None


@lru_cache(maxsize=1)
def masker() -> gg.Masker:
    vocab = gg.Vocabulary([bytes([b]) for b in range(256)] + [None], eos_token_ids=[EOS])
    return gg.Masker(gg.compile(gg.Grammar.from_file(GRAMMAR, strict=True), vocab))


@lru_cache(maxsize=1)
def lark_parser() -> lark.Lark:
    return lark.Lark(GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="basic")


@lru_cache(maxsize=1)
def any_json() -> tuple[gg.Masker, lark.Lark]:
    """The generated grammar of any JSON value (what JSON_OBJECT requests and the JSON Schema
    front end build on), as a masker and as Lark."""
    grammar = gg.Grammar.any_json(object_only=False)
    vocab = gg.Vocabulary([bytes([b]) for b in range(256)] + [None], eos_token_ids=[EOS])
    return gg.Masker(gg.compile(grammar, vocab)), lark.Lark(grammar.text, parser="lalr", lexer="basic")


def outcome(data: bytes, m: gg.Masker | None = None) -> str:
    """``accepted`` (every byte in the mask, then EOS), ``refused at byte k`` (the first byte
    whose token the mask leaves out) or ``incomplete`` (every byte taken, EOS not allowed)."""
    m = m or masker()
    state = m.initial_state()
    for k, b in enumerate(data):
        if not bit(m.mask(state), b):
            return f"refused at byte {k}"
        state = m.advance(state, b)
    return "accepted" if bit(m.mask(state), EOS) else "incomplete"


def i_outcomes() -> dict[str, str]:
    return {p.name: outcome(p.read_bytes()) for p in cases("i")}


def test_the_suite_is_all_there() -> None:
    assert {kind: len(cases(kind)) for kind in COUNTS} == COUNTS, f"files in {SUITE}"


@pytest.mark.parametrize("path", cases("y"), ids=lambda p: p.name)
def test_y_is_accepted_byte_by_byte(path: Path) -> None:
    assert outcome(path.read_bytes()) == "accepted"


@pytest.mark.parametrize("path", cases("n"), ids=lambda p: p.name)
def test_n_is_refused_or_incomplete(path: Path) -> None:
    assert outcome(path.read_bytes()) != "accepted"


def test_i_outcomes_are_as_recorded() -> None:
    recorded = json.loads(I_OUTCOMES.read_text(encoding="utf-8"))
    now = i_outcomes()
    changed = {name: f"{recorded.get(name)} -> {now.get(name)}" for name in recorded.keys() | now.keys()
               if recorded.get(name) != now.get(name)}
    assert not changed, f"i_ outcomes differ from {I_OUTCOMES} (python {Path(__file__).name} --write): {changed}"


@pytest.mark.parametrize("path", [p for p in cases("y") + cases("n") if utf8_text(p) is not None], ids=lambda p: p.name)
def test_lark_agrees(path: Path) -> None:
    """Lark with the same grammar parses the ``y_`` files and refuses the ``n_`` ones."""
    text = utf8_text(path)
    if path.name.startswith("y_"):
        lark_parser().parse(text)
    else:
        with pytest.raises(lark.exceptions.UnexpectedInput):
            lark_parser().parse(text)


@pytest.mark.parametrize("path", [p for p in cases("y") + cases("n") if utf8_text(p) is not None], ids=lambda p: p.name)
def test_generated_any_json_agrees_with_lark(path: Path) -> None:
    """The generated grammar takes JSON in the canonical form (strings escape only what must be
    escaped), so some ``y_`` files are outside it; the masks accept a file exactly when Lark
    parses it with the same grammar, and no ``n_`` file."""
    m, parser = any_json()
    accepted = outcome(path.read_bytes(), m) == "accepted"
    try:
        parser.parse(utf8_text(path))
        parsed = True
    except lark.exceptions.UnexpectedInput:
        parsed = False
    assert accepted == parsed
    assert not (accepted and path.name.startswith("n_"))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: python {sys.argv[0]} --write   (rewrites {I_OUTCOMES})")
    I_OUTCOMES.write_text(json.dumps(i_outcomes(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {I_OUTCOMES}")
