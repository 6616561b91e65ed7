"""GreatGrammaBackend and GreatGrammaGrammar: vLLM's StructuredOutputBackend/StructuredOutputGrammar over gg.Matcher.

The backend turns each request kind into a Lark grammar (JSON Schema, any JSON object, regex,
choices, Lark text), compiles it once per engine through a :class:`GrammarCache` keyed by the
grammar and the model's vocabulary, and gives each request a :class:`Matcher`. The masks are
the int32 words vLLM and xgrammar use (bit ``t & 31`` of word ``t >> 5``).

Imports vLLM: load it through :func:`greatgramma.integrations.vllm.install`, which checks the version.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field

import numpy as np
import torch
from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)
from vllm.v1.structured_output.utils import grammar_is_likely_lark

from ...errors import GreatGrammaError
from ...grammar import Grammar
from ...matcher import Matcher
from ...serving import GrammarCache
from ...vocab import Vocabulary

__all__ = ["GreatGrammaBackend", "GreatGrammaGrammar", "UnsupportedRequestError", "grammar_for_request"]

logger = logging.getLogger(__name__)

CACHE_DIR_ENV = "GREATGRAMMA_VLLM_CACHE_DIR"
"""A folder for compiled grammars shared across processes and restarts (unset: memory only)."""
WORKERS_ENV = "GREATGRAMMA_VLLM_COMPILE_WORKERS"
"""Compile in this many worker processes instead of on vLLM's compile thread (default 0)."""


class UnsupportedRequestError(GreatGrammaError, ValueError):
    """A structured-output request kind greatgramma does not handle (the message names it)."""


def grammar_for_request(
    kind: StructuredOutputOptions, spec: str, *, whitespace: str = "json", additional_properties: bool = True
) -> Grammar:
    """The Lark grammar of one vLLM request: ``(kind, spec)`` is the request's ``structured_output_key``.

    JSON: ``spec`` is the schema as JSON text; JSON_OBJECT: any JSON object (``spec`` unused);
    REGEX: a full match of the pattern; CHOICE: ``spec`` is a JSON list of strings; GRAMMAR: Lark
    text. STRUCTURAL_TAG and EBNF/GBNF grammars raise :class:`UnsupportedRequestError`.
    """
    if kind == StructuredOutputOptions.JSON:
        return Grammar.from_json_schema(spec, whitespace=whitespace, additional_properties=additional_properties)
    if kind == StructuredOutputOptions.JSON_OBJECT:
        return Grammar.any_json(whitespace=whitespace)
    if kind == StructuredOutputOptions.REGEX:
        return Grammar.from_regex(spec)
    if kind == StructuredOutputOptions.CHOICE:
        return Grammar.from_choices(json.loads(spec))
    if kind == StructuredOutputOptions.GRAMMAR:
        if not grammar_is_likely_lark(spec):
            raise UnsupportedRequestError(
                "the greatgramma backend reads Lark grammars only; this GRAMMAR request is EBNF/GBNF "
                "(it has '::=' rules): write it in Lark syntax (rule: ...)"
            )
        return Grammar(spec, source="<vllm grammar>")
    raise UnsupportedRequestError(
        f"the greatgramma backend does not support {kind.name} requests "
        "(supported: JSON, JSON_OBJECT, REGEX, CHOICE, GRAMMAR in Lark syntax)"
    )


@dataclass
class GreatGrammaBackend(StructuredOutputBackend):
    """Engine-level backend: one vocabulary (vLLM's tokenizer, ``vocab_size`` logits wide) and one grammar cache.

    Reads ``structured_outputs_config.disable_any_whitespace`` (compact JSON) and
    ``disable_additional_properties`` (objects hold only the members the schema names), and keeps
    ``num_speculative_tokens`` tokens of history per request for vLLM's rollback.
    """

    def __post_init__(self) -> None:
        config = self.vllm_config.structured_outputs_config
        self.whitespace = "compact" if config.disable_any_whitespace else "json"
        self.additional_properties = not config.disable_additional_properties
        self.max_rollback_tokens = self.vllm_config.num_speculative_tokens
        self.vocab = Vocabulary.from_tokenizer(self.tokenizer, vocab_size=self.vocab_size)
        self.cache = GrammarCache(
            self.vocab, directory=os.environ.get(CACHE_DIR_ENV) or None, workers=int(os.environ.get(WORKERS_ENV, "0"))
        )

    def compile_grammar(
        self, request_type: StructuredOutputOptions, grammar_spec: str, stop_token_ids: set[int] | None = None
    ) -> GreatGrammaGrammar:
        grammar = grammar_for_request(
            request_type, grammar_spec, whitespace=self.whitespace, additional_properties=self.additional_properties
        )
        matcher = Matcher(self.cache.get(grammar), max_rollback_tokens=self.max_rollback_tokens)
        return GreatGrammaGrammar(matcher, frozenset(stop_token_ids or ()))

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        """``(max_num_seqs, ceil(vocab_size / 32))`` int32 on the CPU, every token allowed."""
        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def destroy(self) -> None:
        self.cache.close()


@dataclass
class GreatGrammaGrammar(StructuredOutputGrammar):
    """One request's matcher.

    ``stop_token_ids`` (the request's EOS and stop ids; empty: the vocabulary's EOS ids) end the
    output: each is allowed exactly where EOS is, whatever text it would otherwise spell, and
    accepting one terminates the grammar, as xgrammar's ``override_stop_tokens``.
    """

    matcher: Matcher
    stop_token_ids: frozenset[int] = frozenset()
    _translation: dict[int, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        eos = self.matcher.eos_token_ids
        stops = self.stop_token_ids or frozenset(eos)
        # Each stop id is fed to the matcher as its first EOS id; an EOS id that is not a stop, as an id it refuses.
        self._translation = {t: -1 for t in eos if t not in stops}
        if eos:
            self._translation.update({t: eos[0] for t in stops if t not in eos})
        size = self.matcher.vocab_size
        self._eos_bits = np.array([t for t in eos if t not in stops], dtype=np.int64)
        self._stop_bits = np.array(sorted(t for t in stops if 0 <= t < size), dtype=np.int64)

    def _ids(self, tokens: list[int]) -> list[int]:
        return [self._translation.get(t, t) for t in tokens] if self._translation else tokens

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        """Advance by ``tokens``; True if each was accepted. Tokens after a stop token are ignored."""
        for token in self._ids(tokens):
            if self.matcher.is_terminated():
                break
            if not self.matcher.accept_token(token):
                logger.error("greatgramma: request %s: the grammar refused token %s", request_id, token)
                return False
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        """The longest prefix of ``tokens`` accepted in a row (up to a stop token); the state is unchanged."""
        return tokens[: self.matcher.validate_tokens(self._ids(tokens))]

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)

    def fill_bitmask(self, bitmask: torch.Tensor, batch_index: int) -> None:
        """Row ``batch_index`` of vLLM's CPU int32 bitmask: the grammar's mask, with the stop ids where EOS is."""
        self.matcher.fill_next_token_bitmask(bitmask, batch_index)
        if not self._translation:
            return
        row = bitmask[batch_index]
        row = (row if isinstance(row, np.ndarray) else row.numpy()).view(np.uint32)
        stop_allowed = self.matcher.is_terminated() or self.matcher.is_complete()
        _set_bits(row, self._eos_bits, False)
        _set_bits(row, self._stop_bits, stop_allowed)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def reset(self) -> None:
        self.matcher.reset()


def _set_bits(row: np.ndarray, ids: np.ndarray, value: bool) -> None:
    """Set (or clear) the bits of ``ids`` in one uint32 row."""
    if not len(ids):
        return
    bits = np.uint32(1) << (ids & 31).astype(np.uint32)
    if value:
        np.bitwise_or.at(row, ids >> 5, bits)
    else:
        np.bitwise_and.at(row, ids >> 5, ~bits)


