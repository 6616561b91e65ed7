"""Shared fixtures: a small grammar and a small byte-level vocabulary built in the test."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import greatgramma as gg

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/reference.py, tests/tokenizer_utils.py

CALC = r"""
start: expr
?expr: expr "+" term | expr "-" term | term
?term: term "*" atom | atom
?atom: NUMBER | NAME | "(" expr ")"
NUMBER: /[0-9]+/
NAME: /[a-z]+/
%ignore " "
"""

CALC_TOKENS = [None, None] + [
    b"1", b"2", b"12", b"+", b"-", b"*", b"(", b")", b" ", b"x", b"y", b"xy", b"1+", b"+2", b") ", b" (",
    b"x*", b"\xc3", b"\xa9", b"let",
]  # id 0 = EOS, id 1 = another special token


@pytest.fixture(scope="session")
def calc_vocab() -> gg.Vocabulary:
    return gg.Vocabulary.from_token_bytes(CALC_TOKENS, eos_token_ids=[0], vocab_size=len(CALC_TOKENS) + 7)


@pytest.fixture(scope="session")
def calc_compiled(calc_vocab) -> gg.CompiledGrammar:
    return gg.compile(gg.Grammar(CALC), calc_vocab)
