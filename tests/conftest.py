"""Fixtures: the small calculator grammar and vocabulary, and the real data (shipped tokenizers,
benchmark programs in eval/data/programs), each loaded once per session. The data is in the
repository: a missing file fails the test that needs it, naming the file. Markers are registered, with what they mean, in
pyproject.toml; helpers.py holds the paths and the loaders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import CALC, CALC_TOKENS, program_paths, require_tokenizer

import greatgramma as gg
from greatgramma import native
from greatgramma.tokenize import load_tokenizer


@pytest.fixture(scope="session")
def calc_vocab() -> gg.Vocabulary:
    return gg.Vocabulary.from_token_bytes(CALC_TOKENS, eos_token_ids=[0], vocab_size=len(CALC_TOKENS) + 7)


@pytest.fixture(scope="session")
def calc_compiled(calc_vocab) -> gg.CompiledGrammar:
    return gg.compile(gg.Grammar(CALC), calc_vocab)


def _loaded_once(load: Callable[[str], Any]) -> Callable[[str], Any]:
    cache: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in cache:
            cache[name] = load(name)
        return cache[name]

    return get


@pytest.fixture(params=["compiled", "numpy"])
def compiled_loops(request, monkeypatch) -> str:
    """Run the test with the compiled maximal-munch loops (greatgramma/_native.c) and again with the
    numpy loops that stand in where it is not built (``GG_NATIVE=0``)."""
    if request.param == "numpy":
        monkeypatch.setattr(native, "ext", None)
    elif native.ext is None:
        pytest.skip("greatgramma._native is not built (no C compiler when the package was installed) or GG_NATIVE=0")
    return request.param


@pytest.fixture(scope="session")
def vocabularies() -> Callable[[str], gg.Vocabulary]:
    """``vocabularies(name)``: the ``gg.Vocabulary`` of a shipped tokenizer (llama2, llama3, qwen3),
    read from its folder, once per session."""
    return _loaded_once(lambda name: gg.Vocabulary.from_file(require_tokenizer(name)))


@pytest.fixture(scope="session")
def hf_tokenizers() -> Callable[[str], Any]:
    """``hf_tokenizers(name)``: the ``tokenizers.Tokenizer`` of a shipped tokenizer, once per session."""
    pytest.importorskip("tokenizers", reason="encoding text needs the `tokenizers` package (pip install '.[test]')")
    return _loaded_once(lambda name: load_tokenizer(require_tokenizer(name)))


@pytest.fixture(scope="session")
def bench_programs() -> Callable[[str], list[Path]]:
    """``bench_programs(language)``: the benchmark programs in eval/data/programs/<language>."""
    return program_paths


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that take these fixtures carry their markers (for ``-m``): ``real_tokenizers`` for
    vocabularies/hf_tokenizers, ``bench_programs`` for bench_programs."""
    for item in items:
        used = getattr(item, "fixturenames", ())
        if "vocabularies" in used or "hf_tokenizers" in used:
            item.add_marker(pytest.mark.real_tokenizers)
        if "bench_programs" in used:
            item.add_marker(pytest.mark.bench_programs)
