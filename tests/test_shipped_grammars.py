"""The shipped grammars (grammars/, grammars/bench/) load without a warning, and python.lark's one edit keeps its language."""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import lark
import pytest
from helpers import BENCH, GRAMMARS, PROGRAMS, ROOT, TEST_DATA
from lark_indenter import lark_parser, python_indenter

import greatgramma as gg

SHIPPED = sorted(GRAMMARS.glob("*.lark")) + sorted(BENCH.glob("*.lark"))
EDIT = ("string: STRING\n", "string: STRING | LONG_STRING\n")  # (ours, SynCode's): grammars/bench/README.md
FUZZ = 300
PIECES = ['"""', "'''", '"', "'", "\\", "\n", "    ", "x", "=", "#", " ", "(", ")", ":", "def f():", "r", "b", "1", "\t"]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(GRAMMARS)))
def test_no_warning(path: Path) -> None:
    """Terminals, lexer and LALR table built with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grammar = gg.Grammar.from_file(path, indenter=gg.Indenter.python() if path.stem == "python" else None)
        grammar.build_lexer()
        grammar.parse_table  # noqa: B018 - built on first use


def outcome(parser: lark.Lark, text: str) -> tuple:
    """The tree, or the error's type and place (Lark's Indenter also raises DedentError, IndexError)."""
    try:
        return ("parsed", parser.parse(text))
    except (lark.exceptions.LarkError, IndexError) as e:
        return (type(e).__name__, getattr(e, "line", None), getattr(e, "column", None))


def test_python_edit_keeps_the_language() -> None:
    """Lark with SynCode's python.lark and with ours: same tree or same error, on every Python file
    here and on programs with quotes inserted and on random strings of the pieces strings are made of."""
    ours = (BENCH / "python.lark").read_text(encoding="utf-8")
    assert ours.count(EDIT[0]) == 1
    parsers = [lark_parser(text, python_indenter()) for text in (ours, ours.replace(*EDIT))]
    files = sorted({*PROGRAMS.glob("python/*.py"), *TEST_DATA.glob("python/*.py"), *ROOT.glob("greatgramma/*.py")})
    texts = [f.read_text(encoding="utf-8") for f in files]
    rng = random.Random(12)
    inputs = list(texts)
    for i in range(FUZZ):
        if i % 2:
            inputs.append("".join(rng.choice(PIECES) for _ in range(rng.randint(1, 20))))
        else:
            src = rng.choice(texts[:8])
            k = rng.randrange(len(src) + 1)
            inputs.append(src[:k] + rng.choice(PIECES[:5]) + src[k:])
    differ = [text[:80] for text in inputs if outcome(parsers[0], text) != outcome(parsers[1], text)]
    assert not differ, differ
    assert sum(outcome(parsers[0], t)[0] == "parsed" for t in texts) >= 10  # the comparison saw real parses
