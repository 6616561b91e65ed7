"""The SGLang grammar backend against the real SGLang package: selected through SGLang's own
plugin loading and ``create_grammar_backend``, each request kind compiled by it, and its masks
compared with ``gg.Matcher``'s on token walks with the shipped tokenizers. No model weights.

SGLang is not a test dependency of the core suite (it brings a CUDA torch and ~11 GB): these
tests skip unless it imports; the README's "SGLang" section says how to make its own venv.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the tokenizers are local files: never reach the hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from helpers import require_tokenizer  # noqa: E402

import greatgramma as gg  # noqa: E402

pytest.importorskip("sglang", reason="sglang not installed: its tests run in their own venv (README, section SGLang)")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from sglang.srt.constrained.base_grammar_backend import (  # noqa: E402
    GRAMMAR_BACKEND_REGISTRY,
    GrammarRow,
    InvalidGrammarObject,
    create_grammar_backend,
)
from sglang.srt.constrained.reasoner_grammar_backend import (  # noqa: E402
    ReasonerGrammarBackend,
    ReasonerGrammarObject,
)
from sglang.srt.runtime_context import create_context, use_context  # noqa: E402
from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES, ServerArgs  # noqa: E402

from greatgramma.integrations import sglang as adapter  # noqa: E402

pytestmark = pytest.mark.real_tokenizers

MODEL_VOCAB = {"llama3": 128256 + 64, "qwen3": 151936}  # logits widths past the tokenizers' ids

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
LARK = 'start: "(" NAME ("," NAME)* ")"\nNAME: /[a-z]+/\n'

# (SGLang key type, key string, the same grammar built directly, a text it accepts)
REQUESTS: dict[str, tuple[str, str, Callable[[], gg.Grammar], str]] = {
    "json_schema": ("json", json.dumps(SCHEMA), lambda: gg.Grammar.from_json_schema(SCHEMA), '{"name": "Ann", "age": 31}'),
    "json_any": ("json", adapter.ANY_JSON, lambda: gg.Grammar.any_json(object_only=False), '[1, {"a": null}]'),
    "json_object": ("json", '{"type": "object"}', lambda: gg.Grammar.from_json_schema({"type": "object"}), '{"k": [true]}'),
    "regex": ("regex", r"\d{3}-[a-z]+", lambda: gg.Grammar.from_regex(r"\d{3}-[a-z]+"), "123-abc"),
    "ebnf_lark": ("ebnf", LARK, lambda: gg.Grammar(LARK), "(ab,cd)"),
}


# ------------------------------------------------------------------ fixtures


def _model_dir(name: str, into: Path) -> Path:
    """A model folder SGLang can read without weights: the shipped tokenizer and a tiny Llama config."""
    d = into / name
    d.mkdir()
    src = require_tokenizer(name)
    (d / "tokenizer.json").write_bytes(gzip.decompress((src / "tokenizer.json.gz").read_bytes()))
    shutil.copy(src / "tokenizer_config.json", d / "tokenizer_config.json")
    config = {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": MODEL_VOCAB[name],
        "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
        "intermediate_size": 128, "max_position_embeddings": 256,
    }
    (d / "config.json").write_text(json.dumps(config))
    return d


class Served:
    """A backend made by SGLang's ``create_grammar_backend`` from a ServerArgs, with its tokenizer."""

    def __init__(self, name: str, root: Path, **server_options: Any) -> None:
        adapter.register()
        self.dir = _model_dir(name, root)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.dir)
        self.vocab_size = MODEL_VOCAB[name]
        self.eos = {self.tokenizer.eos_token_id}
        args = ServerArgs(model_path=str(self.dir), grammar_backend=adapter.BACKEND_NAME, device="cpu", **server_options)
        self.context = create_context(args, role="scheduler")
        with use_context(self.context):
            self.backend = create_grammar_backend(args, self.tokenizer, self.vocab_size, self.eos)
        inner = getattr(self.backend, "grammar_backend", self.backend)  # unwrapped from the reasoner
        self.reference_vocab = gg.Vocabulary.from_file(
            self.dir, vocab_size=self.vocab_size, eos_token_ids=sorted(self.eos)
        )
        assert inner.vocab == self.reference_vocab  # from_tokenizer(hf) reads the same vocabulary as from_file

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def request(self, key: tuple[str, str], reasoning: bool = False) -> Any:
        """A request's grammar object, the way SGLang's GrammarManager gets it (future, then cache copy)."""
        value, hit = self.backend.get_cached_or_future_value(key, reasoning)
        if hit:
            return value
        grammar = value.result(timeout=120)
        self.backend.set_cache(key, grammar.copy())
        return grammar

    def close(self) -> None:
        getattr(self.backend, "grammar_backend", self.backend).grammar_cache.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Callable[[str], Served]]:
    """``served(name)``: a plain (no reasoning parser) backend for a shipped tokenizer, once per module."""
    made: dict[str, Served] = {}

    def get(name: str) -> Served:
        if name not in made:
            made[name] = Served(name, tmp_path_factory.mktemp("sglang"))
        return made[name]

    yield get
    for s in made.values():
        s.close()


def _mask_row(grammar: Any, vocab_size: int, rows: int = 3, row: int = 1) -> np.ndarray:
    """Fill row ``row`` of a fresh SGLang-style mask; the other rows must stay all-allowed."""
    mask = grammar.allocate_vocab_mask(vocab_size=vocab_size, batch_size=rows, device="cpu")
    grammar.fill_vocab_mask(mask, row)
    others = [r for r in range(rows) if r != row]
    assert (mask[others] == -1).all()
    return mask[row].numpy().copy()


def _walk(grammar: Any, ref: gg.Matcher, tokens: list[int], vocab_size: int) -> None:
    """Accept ``tokens`` then EOS in both, comparing the filled mask with the Matcher's before each."""
    eos = ref.eos_token_ids[0]
    for tok in [*tokens, eos]:
        assert not grammar.is_terminated()
        np.testing.assert_array_equal(_mask_row(grammar, vocab_size), ref.next_token_mask())
        grammar.accept_token(tok)
        assert ref.accept_token(tok)
    assert grammar.is_terminated()


# ------------------------------------------------------------------ selection


def test_plugin_entry_point_registers_the_backend() -> None:
    """SGLang's ``load_plugins`` runs the ``sglang.srt.plugins`` entry points: ours adds the choice and the factory."""
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="sglang.srt.plugins") if e.name == adapter.BACKEND_NAME]
    assert ep.value == "greatgramma.integrations.sglang:register"
    ep.load()()
    ep.load()()  # idempotent
    assert GRAMMAR_BACKEND_CHOICES.count(adapter.BACKEND_NAME) == 1
    assert GRAMMAR_BACKEND_REGISTRY[adapter.BACKEND_NAME] is adapter.create_backend


def test_create_grammar_backend_selects_greatgramma(served) -> None:
    s = served("llama3")
    assert type(s.backend) is adapter.GreatgrammaGrammarBackend
    assert s.backend.vocab.vocab_size == s.vocab_size and s.backend.whitespace == "json"
    assert s.backend.is_support_token_filter


def test_server_whitespace_options(tmp_path) -> None:
    s = Served("llama3", tmp_path, constrained_json_disable_any_whitespace=True)
    try:
        assert s.backend.whitespace == "compact"
        grammar = s.request(("json", json.dumps(SCHEMA)))
        with pytest.raises(ValueError, match="not allowed"):
            for tok in s.encode('{"name": "A", "age": 1}'):
                grammar.accept_token(tok)
    finally:
        s.close()


# ------------------------------------------------------------------ request kinds against gg.Matcher


@pytest.mark.parametrize("tokenizer", ["llama3", "qwen3"])
@pytest.mark.parametrize("kind", list(REQUESTS))
def test_request_masks_match_matcher(served, tokenizer: str, kind: str) -> None:
    s = served(tokenizer)
    key_type, key_string, make, text = REQUESTS[kind]
    grammar = s.request((key_type, key_string))
    assert isinstance(grammar, adapter.GreatgrammaGrammar), getattr(grammar, "error_message", grammar)
    ref = gg.Matcher(gg.compile(make(), s.reference_vocab))
    _walk(grammar, ref, s.encode(text), s.vocab_size)
    again = s.request((key_type, key_string))  # a cache hit: a fresh copy
    assert again is not grammar and again.grammar_stats.is_cache_hit and not again.is_terminated()


def test_ids_past_the_tokenizer_are_never_allowed(served) -> None:
    s = served("llama3")
    row = _mask_row(s.request(("json", adapter.ANY_JSON)), s.vocab_size)
    allowed = gg.bitmask_to_bool(row, s.vocab_size)
    assert allowed[: len(s.tokenizer)].any() and not allowed[len(s.tokenizer) :].any()


def test_refused_token_rollback_and_copy(served) -> None:
    """A refused token raises (SGLang aborts the request) and changes nothing; rollback returns
    to earlier masks; copy() starts over; tokens after EOS are ignored, as SGLang's xgrammar object does."""
    s = served("llama3")
    grammar = s.request(("regex", r"\d{3}-[a-z]+"))
    tokens = s.encode("123-abc")
    start = _mask_row(grammar, s.vocab_size)
    with pytest.raises(ValueError, match="not allowed by the regex grammar"):
        grammar.accept_token(s.encode("x")[0])
    np.testing.assert_array_equal(_mask_row(grammar, s.vocab_size), start)
    grammar.accept_token(tokens[0])
    after_first = _mask_row(grammar, s.vocab_size)
    for tok in tokens[1:]:
        grammar.accept_token(tok)
    grammar.rollback(len(tokens) - 1)
    np.testing.assert_array_equal(_mask_row(grammar, s.vocab_size), after_first)
    np.testing.assert_array_equal(_mask_row(grammar.copy(), s.vocab_size), start)
    for tok in [*tokens[1:], s.backend.vocab.eos_token_ids[0]]:
        grammar.accept_token(tok)
    assert grammar.is_terminated()
    grammar.accept_token(tokens[0])
    grammar.rollback(1)  # undoes the EOS
    assert not grammar.is_terminated()


def test_batched_fill_and_apply(served) -> None:
    s = served("llama3")
    a, b = s.request(("regex", r"\d{3}-[a-z]+")), s.request(("ebnf", LARK))
    mask = a.allocate_vocab_mask(vocab_size=s.vocab_size, batch_size=4, device="cpu")
    a.fill_vocab_mask_batched([GrammarRow(3, a), GrammarRow(1, b)], mask)
    np.testing.assert_array_equal(mask[3].numpy(), a.matcher.next_token_mask())
    np.testing.assert_array_equal(mask[1].numpy(), b.matcher.next_token_mask())
    assert (mask[[0, 2]] == -1).all()
    mask = a.move_vocab_mask(mask, "cpu")
    logits = torch.zeros(4, s.vocab_size)
    a.apply_vocab_mask(logits, mask)
    allowed = torch.from_numpy(gg.bitmask_to_bool(mask.numpy(), s.vocab_size))
    assert torch.equal(torch.isfinite(logits), allowed)
    a.reset_vocab_mask(mask)
    assert (mask == -1).all()


def test_batched_fill_through_mask_workers(tmp_path, monkeypatch) -> None:
    """GREATGRAMMA_MASK_WORKERS gives the backend worker processes; a batch filled through them
    equals each request's own mask, rows of other grammar objects and empty rows untouched."""
    monkeypatch.setenv("GREATGRAMMA_MASK_WORKERS", "1")
    s = Served("llama3", tmp_path)
    try:
        workers = s.backend.mask_workers
        assert workers is not None and workers.processes == 1
        workers.min_batch, workers.min_seconds = 1, 0.0  # through the worker however cheap the batch
        assert workers.wait(timeout=60)
        grammars = [s.request(("regex", r"\d{3}-[a-z]+")), s.request(("ebnf", LARK)), s.request(("json", json.dumps(SCHEMA)))]
        assert all(g.workers is workers for g in grammars)
        for g, text in zip(grammars, ["12", "", '{"name": "A'], strict=True):
            for tok in s.encode(text):
                g.accept_token(tok)
        rows = [GrammarRow(5, grammars[0]), GrammarRow(1, grammars[1]), GrammarRow(2, grammars[2]), GrammarRow(4, grammars[0].copy())]
        mask = grammars[0].allocate_vocab_mask(vocab_size=s.vocab_size, batch_size=6, device="cpu")
        grammars[0].fill_vocab_mask_batched(rows, mask)
        for row, g in rows:  # against a masker of its own: the matcher's keeps the worker's masks
            np.testing.assert_array_equal(mask[row].numpy(), gg.Masker(g.matcher.compiled).mask(g.matcher.state))
        assert (mask[[0, 3]] == -1).all()
        assert workers._workers[0]._grammars  # the worker was asked for rows
    finally:
        s.close()
        s.backend.mask_workers.close()


def test_set_token_filter(served) -> None:
    s = served("llama3")
    mask = s.backend.allocate_vocab_mask(s.vocab_size, 2, "cpu")
    s.backend.set_token_filter(mask, [7, 100], 1, is_allowed=True)
    assert gg.bitmask_to_bool(mask[1].numpy(), s.vocab_size).nonzero()[0].tolist() == [7, 100]
    assert (mask[0] == -1).all()


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (("json", "{not json"), "greatgramma: "),
        (("json", json.dumps({"type": "string", "not": {"const": "a"}})), "not"),
        (("regex", "a(?=b)"), "greatgramma: "),
        (("ebnf", 'root ::= "a" | "b"'), "Lark"),
        (("ebnf", "start: undefined_rule"), "greatgramma: "),
        (("structural_tag", json.dumps({"type": "structural_tag", "format": {}})), "structural_tag"),
    ],
    ids=["bad-json", "unsupported-keyword", "lookahead", "gbnf", "bad-lark", "structural-tag"],
)
def test_refused_requests_say_why(served, key: tuple[str, str], message: str) -> None:
    grammar = served("llama3").request(key)
    assert isinstance(grammar, InvalidGrammarObject)
    assert message in grammar.error_message


# ------------------------------------------------------------------ jump-forward (SGLang's string API)


def test_jump_forward_and_retokenize(served) -> None:
    s = served("llama3")
    pattern = r'\{"name": "(Ann|Bob)"\}'
    grammar = s.request(("regex", pattern))
    helper = grammar.try_jump_forward(s.tokenizer)
    assert helper == ([], '{"name": "')
    text, state = grammar.jump_forward_str_state(helper)
    assert (text, state) == ('{"name": "', -1)
    first = s.encode('{"')  # the engine had sampled these, then retokenizes the text with the forced part
    for tok in first:
        grammar.accept_token(tok)
    new = s.encode(text)
    grammar.jump_and_retokenize(first, new, state)
    ref = gg.Matcher(gg.compile(gg.Grammar.from_regex(pattern), s.reference_vocab))
    assert ref.accept_tokens(new) == len(new)
    np.testing.assert_array_equal(_mask_row(grammar, s.vocab_size), ref.next_token_mask())
    assert grammar.try_jump_forward(s.tokenizer) is None  # Ann or Bob: a choice


def test_jump_forward_stops_before_a_partial_character(served) -> None:
    grammar = served("llama3").request(("regex", "x(é|è)"))
    assert grammar.matcher.find_jump_forward_bytes() == b"x\xc3"
    assert grammar.try_jump_forward(None) == ([], "x")


# ------------------------------------------------------------------ reasoning models


@pytest.fixture(scope="module")
def qwen3_reasoning(tmp_path_factory) -> Iterator[Served]:
    s = Served("qwen3", tmp_path_factory.mktemp("sglang-reasoning"), reasoning_parser="qwen3")
    yield s
    s.close()


def test_reasoning_parser_constrains_after_think_end(qwen3_reasoning: Served) -> None:
    s = qwen3_reasoning
    assert isinstance(s.backend, ReasonerGrammarBackend)
    assert isinstance(s.backend.grammar_backend, adapter.GreatgrammaGrammarBackend)
    grammar = s.request(("regex", r"\d{3}-[a-z]+"), reasoning=True)
    assert isinstance(grammar, ReasonerGrammarObject) and isinstance(grammar.grammar, adapter.GreatgrammaGrammar)
    mask = grammar.allocate_vocab_mask(s.vocab_size, 2, "cpu")
    for tok in s.encode("Let me think: {not a number}"):  # free text while thinking: no constraint
        grammar.fill_vocab_mask(mask, 0)
        assert (mask == -1).all()
        grammar.accept_token(tok)
    (think_end,) = s.encode("</think>")
    grammar.accept_token(think_end)
    ref = gg.Matcher(gg.compile(gg.Grammar.from_regex(r"\d{3}-[a-z]+"), s.reference_vocab))
    for tok in s.encode("123-abc"):
        grammar.fill_vocab_mask(mask, 0)
        np.testing.assert_array_equal(mask[0].numpy(), ref.next_token_mask())
        grammar.accept_token(tok)
        ref.accept_token(tok)
    grammar.accept_token(ref.eos_token_ids[0])
    assert grammar.is_terminated()
